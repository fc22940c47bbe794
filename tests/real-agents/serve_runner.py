"""The same agents through `spindle serve`'s HTTP API: create a session, prompt, answer a
permission, cancel a running turn and prompt again, reading the transcript from
`GET /api/sessions/{id}/transcript` (the JSON `spindle replay` prints).

`serve_checks(spindle, agent, root)` yields (name, ok, detail) for the scripts "serve-plain",
"serve-write" (the permission answered through the API) and "serve-cancel" (cancel, then the
agent takes the next prompt).
"""

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

import model_scripts as ms
from agents import QUIET_ENV


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode("utf-8", "replace")

    def transcript(self, sid):
        return self.call("GET", f"/api/sessions/{sid}/transcript")[1]

    def wait(self, sid, predicate, timeout):
        deadline = time.monotonic() + timeout
        t = None
        while time.monotonic() < deadline:
            t = self.transcript(sid)
            if isinstance(t, dict) and predicate(t):
                return t, True
            time.sleep(0.2)
        return t, False


def turn_done(n):
    return lambda t: any(x.get("turn") == n and x.get("finished") for x in t.get("turns") or [])


def pending_permission(t):
    for e in t.get("entries") or []:
        p = e.get("permission")
        if p and not p.get("outcome"):
            return e
    return None


def serve_run(spindle, agent, script, root, steps):
    """Start the emulator and `spindle serve`, run `steps(api, sid)`, always stop both."""
    from runner import seed_work, start_emulator

    run_dir = os.path.join(root, agent.name, script)
    home, work = os.path.join(run_dir, "home"), os.path.join(run_dir, "work")
    os.makedirs(home, exist_ok=True)
    seed_work(work)
    emulator, port = start_emulator(script, work, os.path.join(run_dir, "emulator.jsonl"))
    server = None
    try:
        command, agent_env = agent.setup(home, work, f"http://127.0.0.1:{port}")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "LANG": "C.UTF-8", "XDG_CONFIG_HOME": os.path.join(home, ".config"), **QUIET_ENV, **agent_env}
        bind = f"127.0.0.1:{free_port()}"
        server = subprocess.Popen(
            [spindle, "serve", "--bind", bind, "--db", os.path.join(run_dir, "serve.db"), "--"] + command,
            cwd=work, env=env, stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(run_dir, "serve.stdout"), "w"), stderr=open(os.path.join(run_dir, "serve.stderr"), "w"),
        )
        api = Api(f"http://{bind}")
        deadline = time.monotonic() + 20
        status, created = None, None
        while time.monotonic() < deadline:
            try:
                status, created = api.call("POST", "/api/sessions", {})
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        if status != 201:
            return [("session-created", False, f"POST /api/sessions: {status} {created}")]
        return [("session-created", True, "")] + steps(api, created["id"], work)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
        emulator.terminate()
        emulator.wait(timeout=10)


def plain_steps(api, sid, work):
    status, _ = api.call("POST", f"/api/sessions/{sid}/prompt", {"text": "Say hello."})
    t, done = api.wait(sid, turn_done(1), 90)
    reply = ((t or {}).get("finalReply") or "").strip()
    return [
        ("prompt-accepted", status == 202, f"POST prompt: {status}"),
        ("turn-ends", done and (t.get("state") or {}).get("stopReason") == "end_turn", f"state {(t or {}).get('state')}"),
        ("reply", reply == ms.PLAIN_TEXT, f"reply {reply[:120]!r}"),
    ]


def write_steps(api, sid, work):
    api.call("POST", f"/api/sessions/{sid}/prompt", {"text": "Create new.txt."})
    t, asked = api.wait(sid, pending_permission, 90)
    out = [("permission-shown", asked, "no pending permission in the transcript")]
    if asked:
        entry = pending_permission(t)
        options = entry["permission"].get("options") or []
        allow = next((o for o in options if o.get("kind") == "allow_once"), options[0] if options else {})
        status, body = api.call("POST", f"/api/sessions/{sid}/permission", {"key": json.dumps(entry["permission"].get("requestId")), "optionId": allow.get("optionId")})
        out.append(("permission-answered", status == 200, f"POST permission (request {entry['permission'].get('requestId')!r}): {status} {body}"))
    t, done = api.wait(sid, turn_done(1), 90)
    try:
        with open(os.path.join(work, "new.txt")) as f:
            now = f.read()
    except OSError:
        now = None
    out.append(("turn-ends", done, f"state {(t or {}).get('state')}"))
    out.append(("file", now == ms.WRITE_CONTENT, f"new.txt is {now!r}"))
    return out


def cancel_steps(api, sid, work):
    api.call("POST", f"/api/sessions/{sid}/prompt", {"text": "Write a very long answer."})
    t, streaming = api.wait(sid, lambda t: "slow1" in json.dumps(t.get("entries") or []), 60)
    status, _ = api.call("POST", f"/api/sessions/{sid}/cancel", {})
    t, done = api.wait(sid, turn_done(1), 30)
    stop = ((t or {}).get("turns") or [{}])[0].get("stopReason")
    out = [
        ("streaming-before-cancel", streaming, "no slow text before the cancel"),
        ("cancel-accepted", status == 200, f"POST cancel: {status}"),
        ("cancelled", done and stop == "cancelled", f"turn 1 stopReason {stop!r}"),
    ]
    api.call("POST", f"/api/sessions/{sid}/prompt", {"text": "Say hello."})
    t, done = api.wait(sid, turn_done(2), 90)
    time.sleep(3)  # updates an agent sends after the turn's response still count
    t = api.transcript(sid)
    reply = next((x.get("reply") for x in (t or {}).get("turns") or [] if x.get("turn") == 2), None)
    late = [e.get("text") for e in (t or {}).get("entries") or [] if e.get("kind") == "agent_message" and e.get("turn") == 2]
    out.append(("next-prompt-taken", done and (reply or "").strip() == ms.PLAIN_TEXT, f"turn 2 reply {reply!r}; turn-2 agent messages {late}"))
    return out


SERVE_SCRIPTS = {"serve-plain": ("plain", plain_steps), "serve-write": ("write", write_steps), "serve-cancel": ("serve-cancel", cancel_steps)}


def serve_checks(spindle, agent, name, root):
    script, steps = SERVE_SCRIPTS[name]
    return serve_run(spindle, agent, script, os.path.join(root, "serve"), steps)
