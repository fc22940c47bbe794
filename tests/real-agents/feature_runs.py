"""Runs of the session features against production agents: modes and models, history, auth.

- `modes-history` (through `spindle chat`): an interactive chat fed on stdin sets the agent's
  mode (`/mode ID`) and model (`/model VALUE`), then prompts; `spindle chat --list` must list that
  session and `spindle chat --resume ID --prompt ...` must open it again (session/resume, or
  session/load whose replay becomes the transcript) and be answered.
- `serve-modes-history` (through `spindle serve`): `POST /api/sessions/{id}/mode` and `.../config`,
  a prompt, `GET /api/agent-sessions`, a server restart (the pickers are rebuilt from the wire
  log), then `POST /api/sessions` with `agentSessionId` to open the agent's session again.
- `prompt-content`: a prompt mentioning `@notes.txt` with `--attach pixel.png`: the blocks sent
  (an embedded `resource` or a `resource_link`, an `image`) and whether the agent passed the
  file's text and the image on to the model API.
- `auth`: the agent started without credentials (what `spindle chat` reports), then, where the
  agent has a method that signs in from the environment, `--auth METHOD` with the key restored.
  `serve-auth`: the same without credentials through the server (`needsAuth` and the methods in
  `GET .../agent`, then `POST .../authenticate`).

What each agent is asked (mode, model, auth method) is in `agents.py` (`controls`, `auth`), taken
from the agents' own `session/new` answers (see probe.py). `feature_run` returns a run record whose
`checks` are (name, ok, detail); the runner applies the known failures (checks.XFAIL).
"""

import json
import os
import subprocess
import time

import model_scripts as ms
from checks import xfail_reason
from client_checks import exchanges_sent, wire_lines

FEATURES = ["modes-history", "auth", "prompt-content"]
SERVE_FEATURES = ["modes-history", "auth"]
CHAT_TIMEOUT = 120


def replay(spindle, record):
    out = subprocess.run([spindle, "replay", "--format", "json", record], capture_output=True, text=True)
    return json.loads(out.stdout) if out.stdout.strip() else None


def info_mode(t):
    """The current mode the transcript shows (v1 currentModeId, else the `mode` config option)."""
    info = (t or {}).get("sessionInfo") or {}
    mode = info.get("currentModeId") or ((info.get("modes") or {}).get("currentModeId"))
    return mode or info_option(t, "mode")


def info_option(t, category):
    info = (t or {}).get("sessionInfo") or {}
    for option in info.get("configOptions") or []:
        if option.get("category") == category or option.get("id") == category:
            return option.get("currentValue")
    return None


def session_id_of(lines):
    """The session id the agent gave in its session/new answer."""
    for params, answer in exchanges_sent(lines, "session/new"):
        result = (answer or {}).get("result") or {}
        if result.get("sessionId"):
            return result["sessionId"]
    return None


def control_requests(lines, target, kind):
    """The client's requests that set the mode (kind "mode") or the model to `target`, with answers."""
    out = []
    if kind == "mode":
        out += [(p, a) for p, a in exchanges_sent(lines, "session/set_mode") if p.get("modeId") == target]
    for p, a in exchanges_sent(lines, "session/set_config_option"):
        if p.get("value") == target and (p.get("configId") == kind or kind in str(p.get("configId"))):
            out.append((p, a))
    return out


def run_chat(spindle, args, run_dir, name, env, work, command, stdin_text=None):
    """`spindle chat FLAGS ARGS -- COMMAND` in the work directory (FLAGS: `--fs off --terminals
    off` when this spindle has them, as for the plain scripts); returns (exit, stdout, stderr)."""
    from runner import host_flags

    args = host_flags(spindle, "chat", False) + list(args)
    with open(os.path.join(run_dir, name + ".stdout"), "w") as out, open(os.path.join(run_dir, name + ".stderr"), "w") as err:
        proc = subprocess.run(
            [spindle, "chat", *args, "--", *command], cwd=work, env=env, input=stdin_text,
            stdin=subprocess.DEVNULL if stdin_text is None else None,
            stdout=out, stderr=err, text=True, timeout=CHAT_TIMEOUT + 60,
        )
    read = lambda suffix: open(os.path.join(run_dir, name + suffix)).read()
    return proc.returncode, read(".stdout"), read(".stderr")


def modes_history_chat(spindle, agent, run_dir, work, env, command, requests_of, checks):
    controls = agent.controls
    record1 = os.path.join(run_dir, "record.jsonl")
    lines_in = []
    if controls.get("mode"):
        lines_in.append(f"/mode {controls['mode']}")
    if controls.get("model"):
        lines_in.append(f"/model {controls['model']}")
    lines_in.append("Say hello.")
    code, _, err = run_chat(spindle, ["--yes", "--record", record1], run_dir, "chat", env, work, command, "\n".join(lines_in) + "\n")
    t1 = replay(spindle, record1)
    wire = wire_lines(record1)
    tail = " | ".join(err.strip().splitlines()[-3:])
    checks.append(("exit", code == 0, f"exit {code}; stderr: {tail}"))
    reply = ((t1 or {}).get("finalReply") or "").strip()
    checks.append(("reply", reply == ms.PLAIN_TEXT, f"reply {reply[:120]!r} after the switches"))
    for kind, shown in (("mode", info_mode), ("model", lambda t: info_option(t, "model"))):
        target = controls.get(kind)
        if not target:
            continue
        asked = control_requests(wire, target, kind)
        checks.append((f"{kind}-request", any(a and "result" in a for _, a in asked), f"requests setting {kind} {target!r}: {json.dumps(asked)[:300]}"))
        checks.append((f"{kind}-shown", shown(t1) == target, f"the transcript's {kind} is {shown(t1)!r}, want {target!r} (sessionInfo {json.dumps((t1 or {}).get('sessionInfo'))[:300]})"))
    if controls.get("model_api"):
        # A request is logged when it starts (no body yet for a stream) and when it ends.
        bodies = {r["n"]: r["body"] for r in requests_of() if r.get("role") == "main" and isinstance(r.get("body"), dict)}
        used = [str(bodies[n].get("model")) for n in sorted(bodies)]
        checks.append(("model-used", bool(used) and controls["model_api"] in used[-1], f"models the agent asked the API for: {used}"))
    sid = session_id_of(wire)
    if agent.history == "list":
        code, out, err = run_chat(spindle, ["--list"], run_dir, "list", env, work, command)
        checks.append(("listed", code == 0 and bool(sid) and sid in out, f"exit {code}; session {sid!r}; --list printed {out[:300]!r}; stderr {err.strip()[-200:]!r}"))
    if not sid:
        checks.append(("resumed", False, "no session id in the first run's recording"))
        return t1, record1
    record2 = os.path.join(run_dir, "resumed.jsonl")
    code, _, err = run_chat(spindle, ["--yes", "--resume", sid, "--prompt", "Say hello.", "--record", record2, "--timeout", str(CHAT_TIMEOUT)], run_dir, "resume", env, work, command)
    t2 = replay(spindle, record2)
    wire2 = wire_lines(record2)
    opened = [(m, a) for m in ("session/resume", "session/load") for p, a in exchanges_sent(wire2, m) if p.get("sessionId") == sid]
    reply2 = ((t2 or {}).get("finalReply") or "").strip()
    checks.append(("resumed", code == 0 and any(a and "result" in a for _, a in opened) and reply2 == ms.PLAIN_TEXT, f"exit {code}; opened with {[(m, list(a or {})) for m, a in opened]}; reply {reply2[:100]!r}; stderr {err.strip()[-200:]!r}"))
    if any(m == "session/load" for m, _ in opened):
        said = [e.get("text") for e in (t2 or {}).get("entries") or [] if e.get("kind") == "agent_message" and ms.PLAIN_TEXT in (e.get("text") or "")]
        checks.append(("load-replayed", len(said) >= 2, f"agent messages with the answer after the load: {len(said)} (the replayed one and the new one)"))
    # What the agent's answer to the resume/load (and its updates after) says, and whether the
    # transcript shows that: the first is the agent's, the second Spindle's.
    for kind, shown in (("mode", info_mode), ("model", lambda t: info_option(t, "model"))):
        target = controls.get(kind)
        if not target or not opened:
            continue
        said = said_after_open(wire2, kind)
        checks.append((f"resumed-keeps-{kind}", said == target, f"the agent's {opened[0][0]} answer and updates say {kind} {said!r}, want {target!r}"))
        checks.append((f"resumed-{kind}-shown", said is not None and shown(t2) == said, f"the resumed transcript's {kind} is {shown(t2)!r}; the agent said {said!r}"))
    return t1, record1


def said_after_open(lines, kind):
    """The mode (or model) the agent's session/resume|load answer gives, updates after it applied."""
    value, opened_ids, seen = None, set(), False
    for source, msg in lines:
        if source == "sent" and msg.get("method") in ("session/resume", "session/load"):
            opened_ids.add(json.dumps(msg.get("id")))
        elif source == "agent" and "method" not in msg and json.dumps(msg.get("id")) in opened_ids:
            result = msg.get("result") or {}
            seen = "result" in msg
            if kind == "mode" and (result.get("modes") or {}).get("currentModeId"):
                value = result["modes"]["currentModeId"]
            for option in result.get("configOptions") or []:
                if option.get("category") == kind or option.get("id") == kind:
                    value = option.get("currentValue") if kind == "model" or value is None else value
        elif seen and source == "agent" and msg.get("method") == "session/update":
            update = (msg.get("params") or {}).get("update") or {}
            if kind == "mode" and update.get("sessionUpdate") == "current_mode_update":
                value = update.get("currentModeId")
            elif update.get("sessionUpdate") == "config_option_update":
                for option in update.get("configOptions") or []:
                    if option.get("category") == kind or option.get("id") == kind:
                        value = option.get("currentValue")
    return value


def strip_credentials(env, plan):
    """The environment without the plan's keys; the auth settings files lose their `security`."""
    bare = {k: v for k, v in env.items() if k not in plan.get("drop_env", [])}
    for path in plan.get("drop_settings", []):
        full = os.path.join(env["HOME"], path)
        with open(full) as f:
            settings = json.load(f)
        settings.pop("security", None)
        with open(full, "w") as f:
            json.dump(settings, f)
    return bare


def auth_chat(spindle, agent, run_dir, work, env, command, checks):
    """Without credentials, then (where the agent signs in from the environment) with --auth."""
    plan = agent.auth
    bare = strip_credentials(env, plan)
    record = os.path.join(run_dir, "record.jsonl")
    code, _, err = run_chat(spindle, ["--yes", "--prompt", "Say hello.", "--record", record, "--timeout", str(CHAT_TIMEOUT)], run_dir, "no-credentials", bare, work, command)
    wire = wire_lines(record)
    required = [a for m in ("session/new", "session/prompt") for _, a in exchanges_sent(wire, m) if a and (a.get("error") or {}).get("code") == -32000]
    checks.append(("auth-required-seen", bool(required), f"no -32000 auth_required answer in the recording (exit {code})"))
    methods = plan.get("methods", [])
    shown = code == 1 and "authenticat" in err.lower() and all(m in err for m in methods)
    checks.append(("auth-reported", shown, f"exit {code}, want 1 with the methods {methods} named; stderr {err.strip()[-400:]!r}"))
    if plan.get("sign_in"):
        record2 = os.path.join(run_dir, "signed-in.jsonl")
        env2 = dict(bare)
        env2.update(plan.get("sign_in_env", {}))
        code, _, err = run_chat(spindle, ["--yes", "--auth", plan["sign_in"], "--prompt", "Say hello.", "--record", record2, "--timeout", str(CHAT_TIMEOUT)], run_dir, "signed-in", env2, work, command)
        wire2 = wire_lines(record2)
        auth = [a for p, a in exchanges_sent(wire2, "authenticate") if p.get("methodId") == plan["sign_in"]]
        checks.append(("authenticated", any(a and "result" in a for a in auth), f"authenticate {plan['sign_in']!r} answers {json.dumps(auth)[:200]}; exit {code}; stderr {err.strip()[-200:]!r}"))
        t = replay(spindle, record2)
        reply = ((t or {}).get("finalReply") or "").strip()
        checks.append(("reply-after-auth", code == 0 and reply == ms.PLAIN_TEXT, f"exit {code}; reply {reply[:120]!r}"))
        return t, record2
    return replay(spindle, record), record


def png_pixel():
    """A valid 1x1 PNG (red), built here: no binary file in the repository."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")


def prompt_content_chat(spindle, agent, run_dir, work, env, command, requests_of, checks):
    """`@notes.txt` and `--attach pixel.png` in one prompt: what was sent, what reached the model."""
    import base64

    png = png_pixel()
    with open(os.path.join(work, "pixel.png"), "wb") as f:
        f.write(png)
    data = base64.b64encode(png).decode()
    record = os.path.join(run_dir, "record.jsonl")
    code, _, err = run_chat(spindle, ["--yes", "--attach", "pixel.png", "--prompt", "Say hello about @notes.txt and the picture.", "--record", record, "--timeout", str(CHAT_TIMEOUT)], run_dir, "chat", env, work, command)
    wire = wire_lines(record)
    blocks = [b for p, _ in exchanges_sent(wire, "session/prompt") for b in p.get("prompt") or []]
    kinds = [b.get("type") for b in blocks]
    mentioned = [b for b in blocks if b.get("type") in ("resource", "resource_link")]
    resource_text = [((b.get("resource") or {}).get("text")) for b in mentioned if b.get("type") == "resource"]
    checks.append(("mention-sent", any(str((b.get("resource") or b).get("uri", "")).endswith("/notes.txt") for b in mentioned) and (not resource_text or resource_text[0] == ms.NOTES_CONTENT), f"blocks sent: {kinds}; {json.dumps(mentioned)[:300]}; stderr {err.strip()[-200:]!r}"))
    checks.append(("image-sent", any(b.get("type") == "image" and b.get("mimeType") == "image/png" and b.get("data") == data for b in blocks), f"blocks sent: {kinds}"))
    bodies = [json.dumps(r.get("body")) for r in requests_of() if r.get("role") == "main" and r.get("body")]
    checks.append(("mention-reached-model", any("periwinkle" in b for b in bodies), f"the file's text is in none of the {len(bodies)} model requests"))
    checks.append(("image-reached-model", any(data in b for b in bodies), f"the image's base64 is in none of the {len(bodies)} model requests"))
    t = replay(spindle, record)
    reply = ((t or {}).get("finalReply") or "").strip()
    checks.append(("reply", code == 0 and reply == ms.PLAIN_TEXT, f"exit {code}; reply {reply[:120]!r}"))
    return t, record


def feature_run(spindle, agent, label, root):
    """Runs one feature script (`modes-history`, `auth`, `serve-modes-history`) for an agent."""
    from runner import agent_env, host_flags, seed_work, start_emulator
    from serve_features import serve_auth, serve_modes_history

    run_dir = os.path.join(root, agent.name, label)
    home, work = os.path.join(run_dir, "home"), os.path.join(run_dir, "work")
    os.makedirs(home, exist_ok=True)
    seed_work(work)
    log = os.path.join(run_dir, "emulator.jsonl")
    emulator, port = start_emulator("plain", work, log)
    checks, t, record = [], None, None

    def requests_of():
        with open(log) as f:
            return [json.loads(line) for line in f if line.strip()]

    started = time.monotonic()
    try:
        command, env = agent_env(agent, home, work, run_dir, f"http://127.0.0.1:{port}")
        if label == "serve-modes-history":
            t, record = serve_modes_history(spindle, agent, run_dir, work, env, command, host_flags(spindle, "serve", False), checks)
        elif label == "serve-auth":
            t, record = serve_auth(spindle, agent, run_dir, work, env, command, host_flags(spindle, "serve", False), checks)
        elif label == "modes-history":
            t, record = modes_history_chat(spindle, agent, run_dir, work, env, command, requests_of, checks)
        elif label == "prompt-content":
            t, record = prompt_content_chat(spindle, agent, run_dir, work, env, command, requests_of, checks)
        elif label == "auth":
            t, record = auth_chat(spindle, agent, run_dir, work, env, command, checks)
        else:
            raise ValueError(f"unknown feature script {label}")
    finally:
        emulator.terminate()
        emulator.wait(timeout=10)
    results = []
    for name, passed, detail in checks:
        if passed:
            results.append((name, "pass", ""))
            continue
        known = xfail_reason(agent.name, label, name)
        results.append((name, "xfail", f"[{known[0]}] {known[1]}") if known else (name, "fail", detail))
    return {"agent": agent, "script": label, "label": label, "mode": "feature", "dir": run_dir, "work": work, "exit": None,
            "elapsed": time.monotonic() - started, "transcript": t, "record": record, "results": results}
