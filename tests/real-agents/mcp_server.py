#!/usr/bin/env python3
"""A tiny stdio MCP server for the real-agent tests: what a user's MCP server is to an agent.

MCP over stdio is newline-delimited JSON-RPC 2.0. This server answers `initialize` (the protocol
version the client asked for when it is one of `PROTOCOL_VERSIONS`, else the newest of them;
capabilities `{"tools": {}}`), `ping`, `tools/list` and `tools/call`; takes the notifications
(`notifications/initialized`, ...) silently; answers an unknown method -32601 and a line that is
not JSON -32700. Two tools:

- `spindle_probe` `{"text": string}`: returns `PROBE_MARKER` and the text.
- `spindle_ask` `{"question": string}`: asks the user through the client (`elicitation/create`,
  a form with one required string field `answer`) when the client declared the `elicitation`
  capability, waits for the answer (serving pings meanwhile) and returns
  `ASK_MARKER action=ACTION answer=ANSWER`; without the capability it returns
  `ASK_MARKER action=none (the client offers no elicitation)`.

Every exchange is appended to the log file (`--log FILE`, else the `PROBE_LOG` variable) as one
JSON line with `event` and `time`: `started` (pid, and `secret_sha256`: the SHA-256 of the
`SECRET_TOKEN` variable, null when unset: whether the client passed the configured environment,
without writing the secret), `initialize` (the client's protocol version, capabilities, info),
`tools/list`, `call` (tool name and arguments), `elicitation` (the request sent and the answer
received), `unknown` (a method it does not serve). Python 3 standard library only.
"""

import argparse
import hashlib
import json
import os
import sys
import time

PROTOCOL_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
SERVER_INFO = {"name": "spindle-probe", "version": "1.0.0"}
PROBE_MARKER = "spindle-mcp-probe-result"
ASK_MARKER = "spindle-mcp-ask-result"
ASK_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "title": "Answer", "description": "Any word"}},
    "required": ["answer"],
}
TOOLS = [
    {
        "name": "spindle_probe",
        "description": "Records that it was called and returns a marker with the text.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "Any text"}},
            "required": ["text"],
        },
    },
    {
        "name": "spindle_ask",
        "description": "Asks the user a question through the client and returns the answer.",
        "inputSchema": {
            "type": "object",
            "properties": {"question": {"type": "string", "description": "The question"}},
            "required": ["question"],
        },
    },
]


class Server:
    def __init__(self, log_path, reader=sys.stdin, writer=sys.stdout):
        self.log_path = log_path
        self.reader = reader
        self.writer = writer
        self.protocol = PROTOCOL_VERSIONS[-1]
        self.client_capabilities = {}
        self.next_request = 0

    def log(self, event, **fields):
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"event": event, "time": time.time(), **fields}) + "\n")

    def send(self, message):
        self.writer.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.writer.flush()

    def read(self):
        """The next message: a dict, or None at the end of input. A line that is not a JSON object
        is answered -32700 and skipped."""
        for line in self.reader:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as err:
                self.send({"id": None, "error": {"code": -32700, "message": f"parse error: {err}"}})
                continue
            if isinstance(message, dict):
                return message
            self.send({"id": None, "error": {"code": -32600, "message": "expected a JSON object"}})
        return None

    def serve(self):
        secret = os.environ.get("SECRET_TOKEN")
        digest = hashlib.sha256(secret.encode()).hexdigest() if secret is not None else None
        self.log("started", pid=os.getpid(), secret_sha256=digest)
        while True:
            message = self.read()
            if message is None:
                return
            self.handle(message)

    def handle(self, message):
        method = message.get("method")
        if "id" not in message:
            return  # a notification (initialized, cancelled, ...) or a stray response: nothing to answer
        if not isinstance(method, str):
            return
        params = message.get("params") or {}
        reply = {"id": message["id"]}
        if method == "initialize":
            asked = params.get("protocolVersion")
            self.protocol = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
            self.client_capabilities = params.get("capabilities") or {}
            self.log("initialize", protocolVersion=asked, answered=self.protocol, capabilities=self.client_capabilities, clientInfo=params.get("clientInfo"))
            reply["result"] = {"protocolVersion": self.protocol, "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO}
        elif method == "ping":
            reply["result"] = {}
        elif method == "tools/list":
            self.log("tools/list")
            reply["result"] = {"tools": TOOLS}
        elif method == "tools/call":
            reply.update(self.call(params))
        else:
            self.log("unknown", method=method)
            reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
        self.send(reply)

    def call(self, params):
        name, arguments = params.get("name"), params.get("arguments") or {}
        self.log("call", tool=name, arguments=arguments)
        if name == "spindle_probe":
            if not isinstance(arguments.get("text"), str):
                return {"error": {"code": -32602, "message": "spindle_probe: `text` must be a string"}}
            return {"result": text_result(f"{PROBE_MARKER}: {arguments['text']}")}
        if name == "spindle_ask":
            if not isinstance(arguments.get("question"), str):
                return {"error": {"code": -32602, "message": "spindle_ask: `question` must be a string"}}
            return {"result": text_result(self.ask(arguments["question"]))}
        return {"error": {"code": -32602, "message": f"unknown tool: {name}"}}

    def ask(self, question):
        """Asks through the client's elicitation; returns the tool's text."""
        if "elicitation" not in self.client_capabilities:
            self.log("elicitation", request=None, answer=None, note="the client declared no elicitation capability")
            return f"{ASK_MARKER} action=none (the client offers no elicitation)"
        self.next_request += 1
        request_id = f"probe-elicit-{self.next_request}"
        params = {"message": question, "requestedSchema": ASK_SCHEMA}
        if self.protocol >= "2025-11-25":
            params["mode"] = "form"
        self.send({"id": request_id, "method": "elicitation/create", "params": params})
        while True:
            message = self.read()
            if message is None:
                self.log("elicitation", request=params, answer=None, note="input ended before the answer")
                return f"{ASK_MARKER} action=none (no answer)"
            if message.get("id") == request_id and "method" not in message:
                break
            self.handle(message)  # pings and notifications while the user answers
        answer = message.get("result") if "result" in message else {"error": message.get("error")}
        self.log("elicitation", request=params, answer=answer)
        if "error" in answer:
            return f"{ASK_MARKER} action=error ({json.dumps(answer['error'])})"
        content = answer.get("content") or {}
        return f"{ASK_MARKER} action={answer.get('action')} answer={content.get('answer', '')}"


def text_result(text):
    return {"content": [{"type": "text", "text": text}], "isError": False}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", default=os.environ.get("PROBE_LOG"), help="the JSON-lines log (default: $PROBE_LOG)")
    args = parser.parse_args()
    if not args.log:
        print("mcp_server.py: no log file (--log FILE or PROBE_LOG)", file=sys.stderr)
        return 2
    Server(args.log).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
