# A small ACP v1 agent for serve_checkpoints.rs that changes files ITSELF (never through the
# client's fs/* methods), in the cwd its session was opened with. A prompt is a list of
# commands separated by ";":
#   write PATH TEXT   - the file becomes TEXT (and a newline); directories are made
#   append PATH TEXT  - TEXT and a newline added at the end
#   delete PATH       - the file removed
#   big PATH BYTES    - a file of BYTES bytes
#   hold              - the turn stays open until session/cancel (answered "cancelled")
# Each prompt is answered with what was done ("did: ...").
import json, os, sys

cwds = {}
held = None  # (request id, session) of a turn kept open by "hold"


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def say(session, text):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session,
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})


def run(cwd, command):
    words = command.strip().split(" ", 2)
    verb = words[0]
    path = os.path.join(cwd, words[1]) if len(words) > 1 else None
    if verb == "write":
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(words[2] + "\n")
    elif verb == "append":
        with open(path, "a") as f:
            f.write(words[2] + "\n")
    elif verb == "delete":
        os.remove(path)
    elif verb == "big":
        with open(path, "wb") as f:
            f.write(b"x" * int(words[2]))
    else:
        return "unknown " + verb
    return command.strip()


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    rid = message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}}})
    elif method == "session/new":
        session = "c%d" % (len(cwds) + 1)
        cwds[session] = params["cwd"]
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": session}})
    elif method == "session/prompt":
        session = params["sessionId"]
        text = "".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
        if text.strip() == "hold":
            held = (rid, session)
            say(session, "holding")
            continue
        done = [run(cwds[session], c) for c in text.split(";") if c.strip()]
        say(session, "did: " + ", ".join(done))
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif method == "session/cancel":
        if held is not None:
            send({"jsonrpc": "2.0", "id": held[0], "result": {"stopReason": "cancelled"}})
            held = None
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
