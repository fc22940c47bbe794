"""Unit tests of mcp_server.py, the stdio MCP server the real-agent `mcp` scripts give the agents:
each test starts it as a process and speaks newline-delimited JSON-RPC to it, as an MCP client.
runner.py runs them first (`mcp-server/<test>` lines); alone: `python3 -m unittest
tests/real-agents/test_mcp_server.py`.
"""

import hashlib
import json
import os
import selectors
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "mcp_server.py")
GUARD = 30  # seconds a read may wait before the test fails as hung (not a timing assertion)


class Peer:
    """The server process and its log."""

    def __init__(self, env_extra=None, args=None):
        self.dir = tempfile.TemporaryDirectory(prefix="mcp-server-test-")
        self.log_path = os.path.join(self.dir.name, "probe.jsonl")
        env = {k: v for k, v in os.environ.items() if k not in ("SECRET_TOKEN", "PROBE_LOG")}
        env.update(env_extra or {})
        command = [sys.executable, SERVER] + (args if args is not None else ["--log", self.log_path])
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)

    def send(self, message):
        self.proc.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        self.proc.stdin.flush()

    def request(self, id, method, params=None):
        self.send({"jsonrpc": "2.0", "id": id, "method": method, **({"params": params} if params is not None else {})})

    def receive(self):
        if not self.selector.select(GUARD):
            raise AssertionError(f"no line from the server within {GUARD} s")
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the server closed its output; stderr: {self.proc.stderr.read()}")
        return json.loads(line)

    def initialize(self, capabilities=None, version="2025-06-18"):
        self.request(1, "initialize", {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": {"name": "test", "version": "0"}})
        answer = self.receive()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def events(self):
        with open(self.log_path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def close(self):
        self.proc.stdin.close()
        code = self.proc.wait(timeout=GUARD)
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.dir.cleanup()
        return code


class McpServerTest(unittest.TestCase):
    def peer(self, **kwargs):
        peer = Peer(**kwargs)
        self.addCleanup(peer.close)
        return peer

    def test_initialize_answers_the_version_asked_for_when_supported(self):
        peer = self.peer()
        answer = peer.initialize(version="2025-03-26")
        self.assertEqual(answer["id"], 1)
        self.assertEqual(answer["result"]["protocolVersion"], "2025-03-26")
        self.assertEqual(answer["result"]["capabilities"], {"tools": {}})
        self.assertEqual(answer["result"]["serverInfo"]["name"], "spindle-probe")

    def test_initialize_answers_its_newest_version_for_an_unknown_one(self):
        peer = self.peer()
        self.assertEqual(peer.initialize(version="1999-01-01")["result"]["protocolVersion"], "2025-11-25")

    def test_tools_list_names_both_tools_with_schemas(self):
        peer = self.peer()
        peer.initialize()
        peer.request(2, "tools/list", {})
        tools = {t["name"]: t for t in peer.receive()["result"]["tools"]}
        self.assertEqual(sorted(tools), ["spindle_ask", "spindle_probe"])
        self.assertEqual(tools["spindle_probe"]["inputSchema"]["required"], ["text"])

    def test_a_probe_call_is_answered_with_the_marker_and_logged_with_its_arguments(self):
        peer = self.peer(env_extra={"SECRET_TOKEN": "s3cret"})
        peer.initialize()
        peer.request(3, "tools/call", {"name": "spindle_probe", "arguments": {"text": "hello probe"}})
        answer = peer.receive()
        self.assertEqual(answer["id"], 3)
        self.assertEqual(answer["result"]["content"], [{"type": "text", "text": "spindle-mcp-probe-result: hello probe"}])
        events = peer.events()
        started = events[0]
        self.assertEqual(started["event"], "started")
        self.assertEqual(started["secret_sha256"], hashlib.sha256(b"s3cret").hexdigest())
        self.assertNotIn("s3cret", json.dumps(events))
        calls = [e for e in events if e["event"] == "call"]
        self.assertEqual([(c["tool"], c["arguments"]) for c in calls], [("spindle_probe", {"text": "hello probe"})])
        self.assertIsInstance(calls[0]["time"], float)

    def test_without_the_secret_variable_its_digest_is_null(self):
        peer = self.peer()
        peer.initialize()
        peer.request(2, "ping")
        self.assertEqual(peer.receive(), {"jsonrpc": "2.0", "id": 2, "result": {}})
        self.assertIsNone(peer.events()[0]["secret_sha256"])

    def test_bad_arguments_and_unknown_tools_are_refused(self):
        peer = self.peer()
        peer.initialize()
        peer.request(2, "tools/call", {"name": "spindle_probe", "arguments": {"text": 7}})
        self.assertEqual(peer.receive()["error"]["code"], -32602)
        peer.request(3, "tools/call", {"name": "nope", "arguments": {}})
        self.assertIn("unknown tool", peer.receive()["error"]["message"])

    def test_unknown_methods_get_method_not_found_and_notifications_no_answer(self):
        peer = self.peer()
        peer.initialize()
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}})
        peer.request(4, "resources/list", {})
        answer = peer.receive()  # the first line after the notification is this answer
        self.assertEqual(answer["id"], 4)
        self.assertEqual(answer["error"]["code"], -32601)
        self.assertIn({"event": "unknown", "method": "resources/list"}, [{k: e[k] for k in ("event", "method") if k in e} for e in peer.events()])

    def test_a_line_that_is_not_json_is_a_parse_error(self):
        peer = self.peer()
        peer.send("{not json")
        self.assertEqual(peer.receive()["error"]["code"], -32700)

    def test_ask_elicits_through_the_client_and_returns_the_answer(self):
        peer = self.peer()
        peer.initialize(capabilities={"elicitation": {}}, version="2025-11-25")
        peer.request(5, "tools/call", {"name": "spindle_ask", "arguments": {"question": "Your colour?"}})
        asked = peer.receive()
        self.assertEqual(asked["method"], "elicitation/create")
        self.assertEqual(asked["params"]["message"], "Your colour?")
        self.assertEqual(asked["params"]["mode"], "form")
        self.assertEqual(asked["params"]["requestedSchema"]["required"], ["answer"])
        peer.request(6, "ping")  # served while the question is open
        self.assertEqual(peer.receive()["id"], 6)
        peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"answer": "blue"}}})
        answer = peer.receive()
        self.assertEqual(answer["id"], 5)
        self.assertEqual(answer["result"]["content"][0]["text"], "spindle-mcp-ask-result action=accept answer=blue")
        logged = [e for e in peer.events() if e["event"] == "elicitation"]
        self.assertEqual(logged[0]["answer"], {"action": "accept", "content": {"answer": "blue"}})

    def test_ask_before_2025_11_25_sends_no_mode_and_reports_a_decline(self):
        peer = self.peer()
        peer.initialize(capabilities={"elicitation": {}}, version="2025-06-18")
        peer.request(5, "tools/call", {"name": "spindle_ask", "arguments": {"question": "Q?"}})
        asked = peer.receive()
        self.assertNotIn("mode", asked["params"])
        peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}})
        self.assertEqual(peer.receive()["result"]["content"][0]["text"], "spindle-mcp-ask-result action=decline answer=")

    def test_ask_without_the_capability_does_not_elicit(self):
        peer = self.peer()
        peer.initialize()
        peer.request(5, "tools/call", {"name": "spindle_ask", "arguments": {"question": "Q?"}})
        answer = peer.receive()
        self.assertEqual(answer["id"], 5)
        self.assertIn("action=none", answer["result"]["content"][0]["text"])

    def test_without_a_log_file_it_exits_2(self):
        peer = Peer(args=[])
        self.assertEqual(peer.close(), 2)


if __name__ == "__main__":
    unittest.main()
