# A small ACP v1 agent for serve_sessions_lifecycle.rs: sessions kept in a state file (so a
# second process loads a fork the first made), every received line appended to $LOG, and the
# session lifecycle of schema 1.20.0 advertised or not by its first argument:
#   full  - fork, delete, close, logout, additionalDirectories, load, resume
#   bare  - load only
#   stuck-delete - as full, but session/delete fails
# A prompt "read PATH" asks the client for fs/read_text_file PATH and says what came back;
# any other prompt is echoed. After logout every session call answers auth_required until
# authenticate.
import contextlib, fcntl, json, os, sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "full"
LOG = os.environ["SESSIONS_AGENT_LOG"]
STATE = os.environ["SESSIONS_AGENT_STATE"]
FULL = MODE != "bare"


def load_state():
    try:
        with open(STATE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"next": 1, "sessions": {}}


def save_state(state):
    # Each process its own temporary file: two agents (one per session) start side by side.
    tmp = "%s.%d.tmp" % (STATE, os.getpid())
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, STATE)


@contextlib.contextmanager
def changing_state():
    # Read, change and write the state as one step against the other agent processes.
    with open(STATE + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = load_state()
        yield state
        save_state(state)


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def update(session, kind, text):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session, "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}})


signed_out = False
waiting = {}  # our request id -> (prompt request id, session)


def read_line():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    with open(LOG, "a") as f:
        f.write(line if line.endswith("\n") else line + "\n")
    return json.loads(line)


def finish(request_id, session, text):
    with changing_state() as state:
        state["sessions"].setdefault(session, []).append(text)
    update(session, "agent_message_chunk", text)
    send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})


while True:
    message = read_line()
    method = message.get("method")
    rid = message.get("id")
    params = message.get("params") or {}
    if method is None and rid in waiting:
        prompt_id, session = waiting.pop(rid)
        if "result" in message:
            finish(prompt_id, session, "read: " + message["result"].get("content", ""))
        else:
            finish(prompt_id, session, "read failed: " + message.get("error", {}).get("message", "?"))
        continue
    if method == "initialize":
        caps = {"loadSession": True}
        if FULL:
            caps["sessionCapabilities"] = {"resume": {}, "fork": {}, "delete": {}, "close": {},
                                           "additionalDirectories": {}}
            caps["auth"] = {"logout": {}}
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": 1, "agentCapabilities": caps,
            "authMethods": [{"id": "token", "name": "Token", "description": "a test sign-in"}]}})
    elif method == "authenticate":
        signed_out = False
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "logout":
        signed_out = True
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method in ("session/new", "session/load", "session/resume", "session/fork") and signed_out:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "Authentication required"}})
    elif method in ("session/new", "session/fork"):
        with changing_state() as state:
            prefix = "s" if method == "session/new" else "f"
            session = "%s%d" % (prefix, state["next"])
            state["next"] += 1
            history = list(state["sessions"].get(params.get("sessionId"), [])) if method == "session/fork" else []
            state["sessions"][session] = history
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": session}})
    elif method == "session/load":
        session = params.get("sessionId")
        history = load_state()["sessions"].get(session)
        if history is None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32002, "message": "no session " + str(session)}})
            continue
        for text in history:
            update(session, "agent_message_chunk", text)
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "session/resume":
        known = params.get("sessionId") in load_state()["sessions"]
        send({"jsonrpc": "2.0", "id": rid, "result": {}} if known else
             {"jsonrpc": "2.0", "id": rid, "error": {"code": -32002, "message": "no such session"}})
    elif method == "session/delete":
        if MODE == "stuck-delete":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "the archive is read-only"}})
            continue
        with changing_state() as state:
            state["sessions"].pop(params.get("sessionId"), None)
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "session/close":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "session/prompt":
        session = params.get("sessionId")
        text = "".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
        if text.startswith("read "):
            waiting["read-1"] = (rid, session)
            send({"jsonrpc": "2.0", "id": "read-1", "method": "fs/read_text_file",
                  "params": {"sessionId": session, "path": text[5:].strip()}})
        else:
            finish(rid, session, "echo: " + text)
    elif method == "session/cancel":
        pass
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
