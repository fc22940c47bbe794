"""Every model script through `spindle serve`'s HTTP API: create a session, prompt, answer each
permission with `POST /permission` (approve, or reject for the `reject` script), cancel the slow
answer with `POST /cancel` and prompt again (the `cancel` script), and read the transcript from
`GET /api/sessions/{id}/transcript` (the JSON `spindle replay` prints).

`serve_run(spindle, agent, script, root)` returns the same run record as `runner.run_one`, so
`checks.check_run` reads it unchanged: the transcript is the API's, the recording is the server's
wire log (SQLite `wire_batches`, see docs/src/storage.md) written out as a `--record` file, and `exit` is the code `spindle chat`
gives for the same turn. `run["api"]` holds the checks of the API calls themselves, among them
`transcript-is-replay`: `spindle replay` of the exported wire log builds the API's transcript
(`replay-has-session-controls`: the session's mode and config options included).
"""

import json
import os
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request

import model_scripts as ms
from checks import prompt_turn
from mcp_runs import ELICIT_ANSWER, MCP_SCRIPTS, write_mcp_config

# The serve run of the `cancel` script uses the emulator script that answers the prompt after
# the cancelled one (`serve-cancel`); the others use the script of the same name.
EMULATOR_SCRIPT = {"cancel": "serve-cancel"}
TURN_TIMEOUT = 120  # seconds for one turn, like `spindle chat --timeout` in runner.py
SETTLE = 1.5  # seconds to wait after the turn ends, for updates an agent sends after its response


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode("utf-8", "replace")

    def transcript(self, sid):
        return self.call("GET", f"/api/sessions/{sid}/transcript")[1]


def turn_of(t, k):
    """The turn of the k-th prompt, None until its user message is in the transcript."""
    n = prompt_turn(t, k)
    return next((x for x in (t or {}).get("turns") or [] if x.get("turn") == n), None) if n else None


def pending_permission(t):
    for e in (t or {}).get("entries") or []:
        p = e.get("permission")
        if p and not p.get("outcome"):
            return e
    return None


def chat_exit(t, k):
    """The exit code `spindle chat --prompt` gives for the turn of the k-th prompt (chat/mod.rs
    exit_code_for_turn); None while the turn is open."""
    turn = turn_of(t, k)
    if not turn or not turn.get("finished"):
        return None
    stop = turn.get("stopReason")
    if stop is None:
        return 1 if (t.get("state") or {}).get("error") else 0
    return {"end_turn": 0, "max_tokens": 3, "max_turn_requests": 3, "refusal": 4, "cancelled": 130}.get(stop, 1)


def choose(permission, approve):
    """The option the harness picks: allow_once (else any allow_*) to approve, reject_once (else
    any reject_*) to reject; None (dismissed, "cancelled") when no such option is offered."""
    options = permission.get("options") or []
    prefix = "allow" if approve else "reject"
    for wanted in (prefix + "_once", prefix):
        for o in options:
            if str(o.get("kind", "")).startswith(wanted):
                return o.get("optionId")
    return None


def pending_writes(t):
    """The client file writes waiting for a review (`--fs ask`): the engine's diffs with
    `write.status` "pending"."""
    return [d["write"] for e in (t or {}).get("entries") or [] for d in e.get("diffs") or [] if (d.get("write") or {}).get("status") == "pending"]


def open_elicitations(api, sid):
    """The elicitations the session shows (`web_elicitation` ops of the page's snapshot)."""
    status, snapshot = api.call("GET", f"/api/sessions/{sid}/snapshot")
    ops = (snapshot or {}).get("ops") if status == 200 and isinstance(snapshot, dict) else None
    return [op for op in ops or [] if op.get("op") == "web_elicitation"]


def elicitation_content(op):
    """The harness's answer to a form: `answer` (the MCP server's field) gets ELICIT_ANSWER, a
    choice offering ASK_CHOICE gets it."""
    content = {}
    for field in ((op.get("elicitation") or {}).get("form") or {}).get("fields") or []:
        values = [o.get("value") for o in field.get("options") or []]
        if field.get("name") == "answer":
            content["answer"] = ELICIT_ANSWER
        elif ms.ASK_CHOICE in values:
            content[field["name"]] = [ms.ASK_CHOICE] if field.get("kind") == "multi_choice" else ms.ASK_CHOICE
    return content


def drive_turn(api, sid, k, approve, checks, until=None, elicit=False):
    """Waits for the turn of the k-th prompt to end, answering every permission asked meanwhile
    (and accepting, or with approve False rejecting, every file write waiting for review; with
    `elicit`, accepting every elicitation with `elicitation_content`); with `until`,
    returns as soon as `until(transcript)` holds (used to cancel mid-answer).
    Returns (transcript, ended)."""
    deadline = time.monotonic() + TURN_TIMEOUT
    answered = set()
    t = None
    while time.monotonic() < deadline:
        t = api.transcript(sid)
        if not isinstance(t, dict):
            time.sleep(0.2)
            continue
        if until is not None and until(t):
            return t, False
        turn = turn_of(t, k)
        if turn and turn.get("finished"):
            # A write can still wait for its review after the turn ended: opencode writes the
            # file itself and does not wait for the client's answer, so its turn can end first.
            # A user accepts it on the page then; the harness does the same below.
            waiting = pending_writes(t)
            if not waiting:
                return t, True
            if all("review:" + json.dumps(w.get("requestId")) in answered for w in waiting):
                time.sleep(0.2)
                continue
        for write in pending_writes(t):
            key = "review:" + json.dumps(write.get("requestId"))
            if key not in answered:
                answered.add(key)
                decision = "accept" if approve else "reject"
                status, body = api.call("POST", f"/api/sessions/{sid}/review", {"requestId": write.get("requestId"), "decision": decision})
                checks.append(("review-answered", status == 200, f"POST review {write.get('requestId')!r} {decision}: {status} {body}"))
        for op in open_elicitations(api, sid) if elicit else []:
            key = "elicitation:" + str(op.get("key"))
            if key not in answered:
                answered.add(key)
                message = (op.get("elicitation") or {}).get("message")
                checks.append(("elicitation-shown", message in (ms.ELICIT_QUESTION, ms.ASK_QUESTION), f"the web_elicitation op's message {message!r}"))
                body = {"key": op.get("key"), "action": "accept", "content": elicitation_content(op)}
                status, answer = api.call("POST", f"/api/sessions/{sid}/elicitation", body)
                checks.append(("elicitation-answered", status == 200, f"POST elicitation {op.get('key')!r} accept: {status} {answer}"))
        entry = pending_permission(t)
        if entry is not None:
            permission = entry["permission"]
            key = json.dumps(permission.get("requestId"))
            if key not in answered:
                answered.add(key)
                option = choose(permission, approve)
                status, body = api.call("POST", f"/api/sessions/{sid}/permission", {"key": key, "optionId": option})
                checks.append(("permission-answered", status == 200, f"POST permission {key} -> {option!r}: {status} {body}"))
        time.sleep(0.2)
    return t, False


LETTERS = {"a": "agent", "c": "client", "r": "agent_replay", "s": "server", "l": "local"}


def logged_lines(db, sid):
    """The session's wire log in `seq` order as (direction, line): the batches of `wire_batches`
    (docs/src/storage.md: the lines back to back, their lengths as 4-byte little-endian integers,
    a letter per line) merged with the rows an older version wrote to `wire_log`."""
    con = sqlite3.connect(db)
    try:
        rows = [(seq, direction, line) for seq, direction, line in con.execute(
            "SELECT seq, direction, line FROM wire_log WHERE session_id = ?", (sid,))]
        for first_seq, directions, lengths, lines in con.execute(
                "SELECT first_seq, directions, lengths, lines FROM wire_batches WHERE session_id = ?", (sid,)):
            offset = 0
            for index, letter in enumerate(directions):
                length = int.from_bytes(lengths[4 * index:4 * index + 4], "little")
                line = bytes(lines[offset:offset + length]).decode()
                offset += length
                rows.append((first_seq + index, LETTERS.get(letter, letter), line))
    finally:
        con.close()
    rows.sort()
    return [(direction, line) for _, direction, line in rows]


def export_recording(db, sid, path):
    """Writes the session's wire log as a `--record` file: agent lines as they came, client lines
    as `{"sent": ...}`; history replays and the server's own notes are left out."""
    rows = logged_lines(db, sid)
    with open(path, "w") as out:
        for direction, line in rows:
            if direction == "agent":
                out.write(line + "\n")
            elif direction == "client":
                out.write(json.dumps({"sent": json.loads(line)}, separators=(",", ":")) + "\n")
            elif direction == "local":
                # The client's own terminals and file writes: already a `{"local": ...}` line.
                out.write(line + "\n")


def cancel_steps(api, sid, prompt, checks):
    """The first prompt's slow answer is cancelled; the second prompt must be answered."""
    status, body = api.call("POST", f"/api/sessions/{sid}/prompt", {"text": prompt})
    checks.append(("prompt-accepted", status == 202, f"POST prompt: {status} {body}"))
    t, _ = drive_turn(api, sid, 1, True, checks, until=lambda t: "slow1" in json.dumps(t.get("entries") or []))
    checks.append(("streaming-before-cancel", "slow1" in json.dumps((t or {}).get("entries") or []), "no slow text before the cancel"))
    status, _ = api.call("POST", f"/api/sessions/{sid}/cancel", {})
    checks.append(("cancel-accepted", status == 200, f"POST cancel: {status}"))
    t, ended = drive_turn(api, sid, 1, True, checks)
    checks.append(("cancel-ends-turn", ended, f"turn 1 still open: {(t or {}).get('state')}"))
    status, _ = api.call("POST", f"/api/sessions/{sid}/prompt", {"text": "Say hello."})
    t, ended = drive_turn(api, sid, 2, True, checks)
    time.sleep(SETTLE)
    t = api.transcript(sid)
    reply = (turn_of(t, 2) or {}).get("reply")
    said = [e.get("text") for e in (t or {}).get("entries") or [] if e.get("kind") == "agent_message" and e.get("turn") == prompt_turn(t, 2)]
    checks.append(("next-prompt-taken", ended and (reply or "").strip() == ms.PLAIN_TEXT, f"turn 2 reply {reply!r}; turn-2 agent messages {said}"))
    return t


def serve_run(spindle, agent, script, root, prompt, label=None, flags=()):
    """Runs `script` through `spindle serve` (with the extra serve `flags`, e.g. `--fs allow
    --terminals on` for the client variant `label` serve-client-X); returns the run record (see
    the module doc)."""
    from runner import agent_env, seed_work, start_emulator

    label = label or "serve-" + script
    run_dir = os.path.join(root, agent.name, label)
    home, work = os.path.join(run_dir, "home"), os.path.join(run_dir, "work")
    os.makedirs(home, exist_ok=True)
    seed_work(work)
    log = os.path.join(run_dir, "emulator.jsonl")
    db = os.path.join(run_dir, "serve.db")
    record = os.path.join(run_dir, "record.jsonl")
    emulator, port = start_emulator(EMULATOR_SCRIPT.get(script, script), work, log)
    server, sid, t = None, None, None
    checks = []
    views = {}
    mcp = write_mcp_config(run_dir) if script in MCP_SCRIPTS else None
    if mcp:
        flags = [*flags, "--mcp-config", mcp["config"]]
    started = time.monotonic()
    try:
        command, env = agent_env(agent, home, work, run_dir, f"http://127.0.0.1:{port}", script)
        bind = f"127.0.0.1:{free_port()}"
        server = subprocess.Popen(
            [spindle, "serve", "--bind", bind, "--db", db, "--agent-startup-timeout", "90", *flags, "--"] + command,
            cwd=work, env=env, stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(run_dir, "stdout"), "w"), stderr=open(os.path.join(run_dir, "stderr"), "w"),
        )
        api = Api(f"http://{bind}")
        deadline = time.monotonic() + 100
        status, created = None, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                status, created = api.call("POST", "/api/sessions", {})
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        checks.append(("session-created", status == 201, f"POST /api/sessions: {status} {created}"))
        if status == 201:
            sid = created["id"]
            if script == "cancel":
                t = cancel_steps(api, sid, prompt, checks)
            else:
                status, body = api.call("POST", f"/api/sessions/{sid}/prompt", {"text": prompt})
                checks.append(("prompt-accepted", status == 202, f"POST prompt: {status} {body}"))
                t, _ = drive_turn(api, sid, 1, script != "reject", checks, elicit=script in ("elicit", "ask"))
                time.sleep(SETTLE)
                t = api.transcript(sid)
            if mcp:
                # What the page is given: none of it may hold the secret value (mcp_runs).
                for view in ("agent", "snapshot", "replies"):
                    views[view] = api.call("GET", f"/api/sessions/{sid}/{view}")[1]
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        emulator.terminate()
        emulator.wait(timeout=10)
    elapsed = time.monotonic() - started
    replay_exit, replayed = None, None
    if sid is not None:
        export_recording(db, sid, record)
        out = subprocess.run([spindle, "replay", "--format", "json", record], capture_output=True, text=True)
        replay_exit = out.returncode
        replayed = json.loads(out.stdout) if out.stdout.strip() else None
        checks += replay_checks(t, replayed, label)
    requests = []
    if os.path.exists(log):
        with open(log) as f:
            requests = [json.loads(line) for line in f if line.strip()]
    transcript = t if isinstance(t, dict) else None
    return {
        "agent": agent,
        "script": script,
        "label": label,
        "variant": "client" if label.startswith("serve-client-") else None,
        "mode": "serve",
        "dir": run_dir,
        "work": work,
        "exit": chat_exit(transcript, 1) if transcript else None,
        "elapsed": elapsed,
        "replay_exit": replay_exit,
        "transcript": transcript,
        "requests": requests,
        "stderr": open(os.path.join(run_dir, "stderr")).read() if os.path.exists(os.path.join(run_dir, "stderr")) else "",
        "stdout": "",
        "record": record if os.path.exists(record) else None,
        "prompt": prompt,
        "api": checks,
        "mcp": mcp,
        "views": views,
        # The server's own files, searched for the secret value (mcp_runs.secret_places).
        "stored_files": [db, db + "-wal", db + "-shm", os.path.join(run_dir, "stdout"), os.path.join(run_dir, "stderr")],
    }


# The session's pickers in `sessionInfo`: the engine takes them from the updates and from the
# session/new (load, resume), set_mode and set_config_option answers, the same in the server and in
# `spindle replay` of its wire log (checked apart: replay-has-session-controls).
CONTROL_KEYS = ("currentModeId", "availableModes", "configOptions", "modes")


def without_controls(t):
    if not isinstance(t, dict):
        return t
    info = {k: v for k, v in (t.get("sessionInfo") or {}).items() if k not in CONTROL_KEYS}
    return {**t, "sessionInfo": info}


# Where replay-has-session-controls is checked: the same gap in every run otherwise.
CONTROLS_CHECKED = ("serve-plain", "serve-modes-history")


def replay_checks(api, replayed, label):
    """`transcript-is-replay`: the replay of the wire log is the API's transcript, the session's
    mode and config options apart; `replay-has-session-controls` (in CONTROLS_CHECKED): those too."""
    same = isinstance(api, dict) and without_controls(replayed) == without_controls(api)
    out = [("transcript-is-replay", same, transcript_difference(without_controls(api), without_controls(replayed)))]
    if same and label in CONTROLS_CHECKED:
        pick = lambda t: {k: (t.get("sessionInfo") or {}).get(k) for k in CONTROL_KEYS}
        out.append(("replay-has-session-controls", pick(api) == pick(replayed), f"API {json.dumps(pick(api))[:200]} / replay {json.dumps(pick(replayed))[:200]}"))
    return out


def transcript_difference(api, replayed):
    """Where the API's transcript and the replay of the wire log first differ (for a failure)."""
    if not isinstance(api, dict) or not isinstance(replayed, dict):
        return f"API transcript {type(api).__name__}, replay {type(replayed).__name__}"
    for key in sorted(set(api) | set(replayed)):
        if api.get(key) != replayed.get(key):
            a, r = api.get(key), replayed.get(key)
            if isinstance(a, list) and isinstance(r, list):
                for i, (x, y) in enumerate(zip(a, r)):
                    if x != y:
                        return f"{key}[{i}]: API {json.dumps(x)[:200]} / replay {json.dumps(y)[:200]}"
                return f"{key}: API has {len(a)}, replay {len(r)}"
            return f"{key}: API {json.dumps(a)[:200]} / replay {json.dumps(r)[:200]}"
    return ""
