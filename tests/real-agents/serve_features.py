"""`serve-modes-history`: modes, models and history through `spindle serve`'s HTTP API (see
feature_runs.py for the chat side).

A session is created, its mode set with `POST /api/sessions/{id}/mode` (or, for an agent whose
modes are a config option, `POST .../config`), its model with `POST .../config`, then prompted.
The transcript's `sessionInfo` must show both; `GET /api/agent-sessions` must list the agent's
session; after a server restart on the same database the pickers must still be there (rebuilt
from the wire log); `POST /api/sessions` with `agentSessionId` must open the agent's session
again and take a prompt.
"""

import json
import os
import subprocess
import time
import urllib.error

import model_scripts as ms
from client_checks import exchanges_sent, wire_lines
from serve_runner import SETTLE, Api, drive_turn, export_recording, free_port, replay_checks, turn_of

STARTUP = 100  # seconds for the server to answer (the agent starts with the first session)


def start_server(spindle, run_dir, work, env, command, flags, db, name):
    bind = f"127.0.0.1:{free_port()}"
    server = subprocess.Popen(
        [spindle, "serve", "--bind", bind, "--db", db, "--agent-startup-timeout", "90", *flags, "--"] + command,
        cwd=work, env=env, stdin=subprocess.DEVNULL,
        stdout=open(os.path.join(run_dir, name + ".stdout"), "w"), stderr=open(os.path.join(run_dir, name + ".stderr"), "w"),
    )
    return server, Api(f"http://{bind}")


def stop_server(server):
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def call_when_up(server, api, method, path, body=None):
    """The call once the server listens; (None, why) when it exited or never listened."""
    deadline = time.monotonic() + STARTUP
    while server.poll() is None and time.monotonic() < deadline:
        try:
            return api.call(method, path, body)
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    return None, f"the server exited ({server.poll()}) or did not listen in {STARTUP}s"


def shown(t, kind):
    from feature_runs import info_mode, info_option

    return info_mode(t) if kind == "mode" else info_option(t, "model")


def wait_for(api, sid, test, seconds=20):
    """Polls the transcript until `test(t)` holds; returns the last transcript."""
    deadline = time.monotonic() + seconds
    t = api.transcript(sid)
    while time.monotonic() < deadline and not (isinstance(t, dict) and test(t)):
        time.sleep(0.3)
        t = api.transcript(sid)
    return t


def prompt_and_wait(api, sid, k, checks, name):
    status, body = api.call("POST", f"/api/sessions/{sid}/prompt", {"text": "Say hello."})
    if status != 202:
        checks.append((name, False, f"POST prompt: {status} {body}"))
        return None
    t, ended = drive_turn(api, sid, k, True, checks)
    time.sleep(SETTLE)
    t = api.transcript(sid)
    reply = ((turn_of(t, k) or {}).get("reply") or "").strip()
    checks.append((name, ended and reply == ms.PLAIN_TEXT, f"turn {k} reply {reply[:120]!r}"))
    return t


def serve_modes_history(spindle, agent, run_dir, work, env, command, flags, checks):
    controls = agent.controls
    db = os.path.join(run_dir, "serve.db")
    record = os.path.join(run_dir, "record.jsonl")
    server, api = start_server(spindle, run_dir, work, env, command, flags, db, "serve")
    sid, t = None, None
    try:
        status, created = call_when_up(server, api, "POST", "/api/sessions", {})
        checks.append(("session-created", status == 201, f"POST /api/sessions: {status} {created}"))
        if status != 201:
            return None, None
        sid = created["id"]
        # The agent's session opens in the background: wait for its id before switching.
        t = wait_for(api, sid, lambda t: bool(t.get("sessionId")), STARTUP)
        for kind in ("mode", "model"):
            target = controls.get(kind)
            if not target:
                continue
            # Protocol 2 has no session/set_mode (modes are the config option of category
            # "mode"): the server refuses POST .../mode for such an agent and names the option.
            if kind == "mode" and controls.get("mode_via") != "config" and (t or {}).get("protocol") != 2:
                status, body = api.call("POST", f"/api/sessions/{sid}/mode", {"modeId": target})
            else:
                status, body = api.call("POST", f"/api/sessions/{sid}/config", {"configId": controls.get(kind + "_config", kind), "value": target})
            checks.append((f"{kind}-set", 200 <= status < 300, f"POST {kind}: {status} {body}"))
            t = wait_for(api, sid, lambda t, kind=kind, target=target: shown(t, kind) == target)
            checks.append((f"{kind}-shown", shown(t, kind) == target, f"the transcript's {kind} is {shown(t, kind)!r}, want {target!r}"))
        t = prompt_and_wait(api, sid, 1, checks, "reply")
        agent_sid = (t or {}).get("sessionId")
        if agent.history == "list":
            # The server starts a short-lived agent process for the list (up to its startup timeout).
            status, listed = api.call("GET", "/api/agent-sessions", timeout=STARTUP)
            ids = [s.get("sessionId") for s in (listed or {}).get("sessions") or []] if isinstance(listed, dict) else []
            checks.append(("listed", status == 200 and agent_sid in ids, f"GET /api/agent-sessions: {status}; {agent_sid!r} among {ids[:5]}"))
    finally:
        stop_server(server)
    if sid is None:
        return None, None
    export_recording(db, sid, record)
    # The API's transcript (before the restart) against the replay of the exported wire log.
    replayed = subprocess.run([spindle, "replay", "--format", "json", record], capture_output=True, text=True)
    checks += replay_checks(t, json.loads(replayed.stdout) if replayed.stdout.strip() else None, "serve-modes-history")
    # The same database, a new server: the session's pickers come back from the wire log.
    server, api = start_server(spindle, run_dir, work, env, command, flags, db, "restarted")
    reopened, how = None, None
    try:
        status, again = call_when_up(server, api, "GET", f"/api/sessions/{sid}/transcript")
        for kind in ("mode", "model"):
            if controls.get(kind):
                checks.append((f"{kind}-survives-restart", status == 200 and shown(again, kind) == controls[kind], f"after the restart: {status}; {kind} {shown(again, kind) if isinstance(again, dict) else again!r}"))
        if agent_sid:
            how = "resume" if agent.history == "list" else "load"
            status, opened = api.call("POST", "/api/sessions", {"agentSessionId": agent_sid, "open": how})
            checks.append(("reopened", status == 201, f"POST /api/sessions agentSessionId={agent_sid} open={how}: {status} {opened}"))
            if status == 201:
                # A load's replayed prompts are not `prompt:` messages: the new prompt is the first.
                wait_for(api, opened["id"], lambda t: bool(t.get("sessionId")), STARTUP)
                prompt_and_wait(api, opened["id"], 1, checks, "reopened-reply")
                reopened = opened["id"]
    finally:
        stop_server(server)
    if reopened is not None:
        # The agent's own session, not a new one the server opened instead: its wire log.
        path = os.path.join(run_dir, "reopened.jsonl")
        export_recording(db, reopened, path)
        lines = wire_lines(path)
        answers = [a for m in ("session/resume", "session/load") for p, a in exchanges_sent(lines, m) if p.get("sessionId") == agent_sid]
        fresh = exchanges_sent(lines, "session/new")
        checks.append(("reopened-same-session", any(a and "result" in a for a in answers) and not fresh, f"{how} of {agent_sid!r} answered {json.dumps(answers)[:200]}; session/new sent {len(fresh)} times"))
    return t, record


def serve_auth(spindle, agent, run_dir, work, env, command, flags, checks):
    """Without credentials through the server: the session waits in needs_auth with the agent's
    methods (GET .../agent); POST .../authenticate either signs in (the session then answers a
    prompt) or is refused with a message while the session keeps waiting."""
    from feature_runs import strip_credentials

    plan = agent.auth
    bare = strip_credentials(env, plan)
    db = os.path.join(run_dir, "serve.db")
    record = os.path.join(run_dir, "record.jsonl")
    server, api = start_server(spindle, run_dir, work, bare, command, flags, db, "serve")
    sid, t = None, None
    try:
        status, created = call_when_up(server, api, "POST", "/api/sessions", {})
        checks.append(("session-created", status == 201, f"POST /api/sessions: {status} {created}"))
        if status != 201:
            return None, None
        sid = created["id"]
        deadline, info = time.monotonic() + STARTUP, {}
        while time.monotonic() < deadline:
            status, info = api.call("GET", f"/api/sessions/{sid}/agent")
            if isinstance(info, dict) and (info.get("needsAuth") or info.get("status") == "ready"):
                break
            time.sleep(0.3)
        ids = [m.get("id") for m in (info or {}).get("authMethods") or []] if isinstance(info, dict) else []
        checks.append(("needs-auth-shown", isinstance(info, dict) and info.get("needsAuth") is True and all(m in ids for m in plan.get("methods", [])), f"GET .../agent: {json.dumps(info)[:300]}"))
        status, body = api.call("POST", f"/api/sessions/{sid}/authenticate", {"methodId": plan["sign_in"]})
        if status == 200:
            # Signed in: the session must go on and answer.
            prompt_and_wait(api, sid, 1, checks, "reply-after-auth")
        else:
            _, after = api.call("GET", f"/api/sessions/{sid}/agent")
            checks.append(("auth-refusal-clear", "error" in str(body) and isinstance(after, dict) and after.get("needsAuth") is True, f"POST authenticate: {status} {body}; then needsAuth {(after or {}).get('needsAuth') if isinstance(after, dict) else after}"))
        t = api.transcript(sid)
    finally:
        stop_server(server)
    export_recording(db, sid, record)
    return (t if isinstance(t, dict) else None), record

