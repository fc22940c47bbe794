#!/usr/bin/env python3
"""A minimal ACP v1 agent for bench/replicas.py's latency part: each agent_message_chunk's text is
the wall-clock time (nanoseconds since the epoch) at which the chunk was written, then ';'.

A prompt "N PACE_US" writes N chunks, one every PACE_US microseconds (flushed one by one), then
ends the turn. Every replica runs on the same machine, so an observer compares the stamps with
its own `time.time_ns()` at receipt: that is the agent-write -> observer delivery latency,
whatever the path (the owner's engine, or another replica's engine fed from PostgreSQL).
Standard library only.
"""

import json
import sys
import time


def main():
    out = sys.stdout.buffer
    sessions = 0
    turn = 0
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        method = message.get("method")
        if "id" not in message or method is None:
            continue  # notifications and answers to requests this agent never sends
        result = None
        if method == "initialize":
            result = {"protocolVersion": 1, "agentCapabilities": {}}
        elif method == "session/new":
            sessions += 1
            result = {"sessionId": f"stamp-{sessions}"}
        elif method == "session/prompt":
            turn += 1
            session = message["params"]["sessionId"]
            blocks = message["params"].get("prompt") or [{}]
            words = (blocks[0].get("text") or "1 0").split()
            count = int(words[0]) if words and words[0].isdigit() else 1
            pace = int(words[1]) if len(words) > 1 and words[1].isdigit() else 0
            start = time.monotonic()
            for n in range(count):
                if pace:
                    due = start + n * pace / 1e6
                    wait = due - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                chunk = {"jsonrpc": "2.0", "method": "session/update", "params": {
                    "sessionId": session, "update": {
                        "sessionUpdate": "agent_message_chunk", "messageId": f"m{turn}",
                        "content": {"type": "text", "text": f"{time.time_ns()};"}}}}
                out.write(json.dumps(chunk, separators=(",", ":")).encode() + b"\n")
                if pace:
                    out.flush()
            result = {"stopReason": "end_turn"}
        if result is None:
            answer = {"jsonrpc": "2.0", "id": message["id"],
                      "error": {"code": -32601, "message": f"{method} is not offered"}}
        else:
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        out.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
