"""A client on the official ACP Python SDK (PyPI `agent-client-protocol`, v1).

    python client.py conversation -- AGENT_CMD...   # scripted conversation with assertions
    python client.py bench PROMPT -- AGENT_CMD...   # one prompt; prints replyBytes + FNV-1a 64

The conversation drives Spindle's reference agent: a plain prompt, `/scenario tools`
(answering the permission request with allow-once), `/scenario refine`, `/clear`.
The bench mode rebuilds the reply from typed `session/update` notifications:
message chunks append per messageId; a chunk with `_meta.spindle.snapshot: true`
replaces its message. The SDK's v1 update union is closed, so Spindle's
`agent_message_clear` extension cannot be observed through it.
"""

import asyncio
import json
import os
import sys

import acp
from acp import schema

# What Spindle's reference agent replies (crates/spindle-agent/README.md).
PLAIN_REPLY = (
    'You said: "hello from the python sdk" (5 words). Streaming text arrives in small pieces, '
    "and a good client joins them without flicker."
)
REFINE_FINAL = "The capital of Australia is Canberra. It has been the capital since 1913."

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


def fnv1a64(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


class Recorder:
    """The acp.Client implementation: records one turn's updates and texts."""

    def __init__(self, permission_choice="allow_once"):
        self.permission_choice = permission_choice
        self.reset()

    def reset(self):
        self.kinds = []
        self.messages = {}  # messageId (or running index) -> list of text pieces
        self.order = []
        self.thoughts = []
        self.tool_status = {}
        self.permission_requests = 0
        self.usage = []
        self.commands_updates = 0
        self.notifications = 0
        self._anon = 0

    def reply(self):
        return "".join(self.messages[self.order[-1]]) if self.order else ""

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permission_requests += 1
        chosen = next((o for o in options if o.kind == self.permission_choice), None)
        if chosen is None:
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    async def session_update(self, session_id, update, **kwargs):
        self.notifications += 1
        kind = update.session_update
        self.kinds.append(kind)
        if kind == "agent_message_chunk":
            key = getattr(update, "message_id", None)
            if key is None:
                key = self.order[-1] if self.order else "anon"
            if key not in self.messages:
                self.messages[key] = []
                self.order.append(key)
            meta = update.field_meta or {}
            if isinstance(meta.get("spindle"), dict) and meta["spindle"].get("snapshot"):
                self.messages[key].clear()
            if getattr(update.content, "type", None) == "text":
                self.messages[key].append(update.content.text)
        elif kind == "agent_thought_chunk":
            if getattr(update.content, "type", None) == "text":
                self.thoughts.append(update.content.text)
        elif kind in ("tool_call", "tool_call_update"):
            if update.status is not None:
                self.tool_status[update.tool_call_id] = update.status
            else:
                self.tool_status.setdefault(update.tool_call_id, "pending")
        elif kind == "usage_update":
            self.usage.append(update.used)
        elif kind == "available_commands_update":
            self.commands_updates += 1


def split_command(argv):
    if "--" not in argv:
        sys.exit("usage: client.py conversation|bench [PROMPT] -- AGENT_CMD...")
    i = argv.index("--")
    return argv[:i], argv[i + 1 :]


async def open_session(recorder, command):
    ctx = acp.spawn_agent_process(
        recorder,
        command[0],
        *command[1:],
        # Benchmark streams carry lines far above asyncio's 64 KiB default.
        transport_kwargs={"limit": 64 * 1024 * 1024},
    )
    conn, _process = await ctx.__aenter__()
    init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
    return ctx, conn, init, session.session_id


async def prompt(conn, recorder, session_id, text):
    recorder.reset()
    response = await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
    return response.stop_reason


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   python v1 {name}")
        else:
            self.failed += 1
            print(f"FAIL python v1 {name} {detail}")


async def conversation(command):
    rec = Recorder()
    checks = Checks()
    ctx, conn, init, sid = await open_session(rec, command)
    try:
        checks.check("initialize: protocol 1", init.protocol_version == 1, init.protocol_version)

        stop = await prompt(conn, rec, sid, "hello from the python sdk")
        checks.check("plain: end_turn", stop == "end_turn", stop)
        checks.check("plain: reply streamed in chunks", len(rec.messages.get(rec.order[-1], [])) > 1 if rec.order else False)
        checks.check("plain: usage_update", len(rec.usage) > 0)
        checks.check("plain: exact reply", rec.reply() == PLAIN_REPLY, repr(rec.reply()))

        stop = await prompt(conn, rec, sid, "/scenario tools")
        checks.check("tools: one permission request answered", rec.permission_requests == 1, rec.permission_requests)
        checks.check("tools: every tool call completed", rec.tool_status and all(s == "completed" for s in rec.tool_status.values()), rec.tool_status)
        checks.check("tools: plan sent", "plan" in rec.kinds, rec.kinds)
        checks.check("tools: end_turn", stop == "end_turn", stop)

        stop = await prompt(conn, rec, sid, "/scenario refine")
        # A plain v1 client gets the degraded form: the corrected text as a new message.
        checks.check("refine: end_turn", stop == "end_turn", stop)
        if os.environ.get("SPINDLE_INTEROP_REFINE") == "repush":
            # Through `spindle bridge --policy degrade` to a v2 agent: BRIDGE.md's marked re-push,
            # one message whose last section after the separator is the correction.
            sections = rec.reply().split("\n\n---\n\n")
            checks.check("refine: marked re-push ends with the correction", len(sections) > 1 and sections[-1] == REFINE_FINAL, repr(rec.reply()))
            checks.check("refine: re-pushed in one message", len(rec.order) == 1, rec.order)
        else:
            checks.check("refine: draft and correction are two messages", len(rec.order) == 2, rec.order)
            checks.check("refine: final message is the correction", rec.reply() == REFINE_FINAL, repr(rec.reply()))

        stop = await prompt(conn, rec, sid, "/clear")
        checks.check("clear: usage reset to 0", 0 in rec.usage, rec.usage)
        checks.check("clear: available commands refreshed", rec.commands_updates >= 1, rec.kinds)
        checks.check("clear: end_turn", stop == "end_turn", stop)

        stop = await prompt(conn, rec, sid, "/stream 2000 mixed")
        checks.check("stream: 2000 notifications", rec.notifications >= 2000, rec.notifications)
    finally:
        await ctx.__aexit__(None, None, None)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


async def bench(prompt_text, command):
    rec = Recorder()
    ctx, conn, _init, sid = await open_session(rec, command)
    try:
        stop = await prompt(conn, rec, sid, prompt_text)
    finally:
        await ctx.__aexit__(None, None, None)
    text = rec.reply().encode()
    print(json.dumps({"replyBytes": len(text), "replyFnv1a64": f"{fnv1a64(text):016x}", "notifications": rec.notifications, "stopReason": stop}))
    return 0


def main():
    head, command = split_command(sys.argv[1:])
    if not head or not command:
        sys.exit("usage: client.py conversation|bench [PROMPT] -- AGENT_CMD...")
    if head[0] == "conversation":
        return asyncio.run(conversation(command))
    if head[0] == "bench":
        return asyncio.run(bench(" ".join(head[1:]), command))
    sys.exit(f"unknown mode {head[0]!r}")


if __name__ == "__main__":
    sys.exit(main())
