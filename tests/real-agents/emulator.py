#!/usr/bin/env python3
"""A scripted model API on loopback for offline tests of production ACP agents.

Speaks four wire formats, all streaming (and plain JSON when a request does not stream):
Anthropic Messages (`/v1/messages`), OpenAI Chat Completions (`/chat/completions`), the OpenAI
Responses API (`/responses`, Codex) and Gemini (`:streamGenerateContent?alt=sse`,
`:generateContent`). What the model says comes from `model_scripts.SCRIPTS[--script]`.

Every request is logged as one JSON line in `--log` (method, path, headers with secrets
redacted, body, which API and step answered, the status); unknown paths get a 404 that is logged
too. Usage: `emulator.py --script NAME --workdir DIR --log FILE` prints `PORT <n>` once listening
on 127.0.0.1 (port 0 = a free one). Python 3 standard library only; no network beyond loopback.
"""

import argparse
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import model_scripts as ms

SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie"}
MODEL_IDS = ["emulated-model", "claude-sonnet-4-5", "gpt-5.5", "gemini-2.5-pro", "qwen3-coder-plus"]


MAX_MAIN_REQUESTS = 40


class Clientgone(Exception):
    """The agent closed the connection (a cancelled turn): stop streaming."""


class State:
    def __init__(self, script, workdir, log_path):
        self.script = ms.SCRIPTS[script]
        self.script_name = script
        self.workdir = workdir
        self.log = open(log_path, "a", encoding="utf-8")
        self.lock = threading.Lock()
        self.counter = itertools.count(1)
        self.failed_steps = set()
        self.main_requests = 0

    def write_log(self, record):
        with self.lock:
            self.log.write(json.dumps(record) + "\n")
            self.log.flush()

    def step(self, index):
        """The step for this point of the conversation, after failures already served."""
        index = min(index, len(self.script) - 1)
        with self.lock:
            self.main_requests += 1
            if self.main_requests > MAX_MAIN_REQUESTS:
                return {"text": f"EMULATOR: more than {MAX_MAIN_REQUESTS} model calls in one run; stopping a loop"}, index
            step = self.script[index]
            once = "fail" in step or step.get("once")
            if once and index in self.failed_steps:
                # The failure was served; the retry gets the next step.
                return self.script[min(index + 1, len(self.script) - 1)], index
            if once:
                self.failed_steps.add(index)
            return step, index


# ---- reading a request: where the turn stands and which tools the agent offers ----------------


# Claude Code defers an MCP server's tools: their names are listed in the system prompt, and the
# model loads one with its ToolSearch tool (`select:NAME`) before calling it. That load is not a
# step of the script: its result is not counted (anthropic_position), and the call the step asks
# for is made once the tool is loaded (deferred_mcp_call).
TOOL_SEARCH = "ToolSearch"


def anthropic_tool_uses(body, name):
    """The ids of the tool_use blocks calling `name` in the conversation."""
    return {
        block.get("id")
        for message in body.get("messages", [])
        if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == name
    }


def anthropic_position(body):
    searches = anthropic_tool_uses(body, TOOL_SEARCH)
    return sum(
        1
        for message in body.get("messages", [])
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") not in searches
    )


def deferred_mcp_call(op, tools, body):
    """For an MCP tool the agent deferred (named in the prompt, not among `tools`, ToolSearch
    offered): ToolSearch `select:NAME` first, then NAME itself once a search was made; None when
    the tool is not deferred."""
    if body is None or TOOL_SEARCH not in [n for n, _ in tools]:
        return None
    text = json.dumps(body)
    for pattern in ms.MCP_TOOL_NAMES:
        name = pattern.format(server=ms.MCP_SERVER_NAME, tool=op["tool"])
        if name in text:
            if anthropic_tool_uses(body, TOOL_SEARCH):
                return name, dict(op["arguments"])
            return TOOL_SEARCH, {"query": f"select:{name}", "max_results": 5}
    return None


def openai_tool_calls(body, name):
    """The ids of the assistant's tool calls of `name` in a Chat Completions conversation."""
    return {
        call.get("id")
        for message in body.get("messages", [])
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
        if (call.get("function") or {}).get("name") == name
    }


def openai_position(body):
    # Qwen Code's tool_search (loading a deferred tool, see openai_deferred_mcp_call) is not a step.
    searches = openai_tool_calls(body, QWEN_TOOL_SEARCH)
    return sum(1 for message in body.get("messages", []) if message.get("role") == "tool" and message.get("tool_call_id") not in searches)


# Qwen Code defers MCP tools: `tool_search` shows a deferred tool's declaration, `tool_call`
# invokes it by name (its descriptions in the request say so).
QWEN_TOOL_SEARCH, QWEN_TOOL_CALL = "tool_search", "tool_call"


def openai_deferred_mcp_call(op, tools, body):
    """A deferred MCP tool through Qwen Code's tool_search / tool_call: search by the server's and
    the tool's names first (the model knows no more), then tool_call with the name the search
    returned; None when the agent offers no such pair of tools or the search found nothing."""
    names = [n for n, _ in tools]
    if body is None or QWEN_TOOL_SEARCH not in names or QWEN_TOOL_CALL not in names:
        return None
    searches = openai_tool_calls(body, QWEN_TOOL_SEARCH)
    if not searches:
        return QWEN_TOOL_SEARCH, {"query": f"{ms.MCP_SERVER_NAME} {op['tool']}"}
    found = " ".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool" and m.get("tool_call_id") in searches)
    for pattern in ms.MCP_TOOL_NAMES:
        name = pattern.format(server=ms.MCP_SERVER_NAME, tool=op["tool"])
        if name in found:
            return QWEN_TOOL_CALL, {"name": name, "arguments": dict(op["arguments"])}
    return None


def responses_position(body):
    items = body.get("input")
    items = items if isinstance(items, list) else []
    return sum(
        1
        for item in items
        if isinstance(item, dict) and item.get("type", "").endswith("_call_output")
    )


def gemini_position(body):
    return sum(
        1
        for content in body.get("contents", [])
        for part in content.get("parts") or []
        if "functionResponse" in part
    )


def anthropic_tools(body):
    return [(t.get("name"), t.get("input_schema")) for t in body.get("tools") or []]


def openai_tools(body):
    out = []
    for t in body.get("tools") or []:
        fn = t.get("function") or t
        out.append((fn.get("name"), fn.get("parameters")))
    return out


def gemini_tools(body):
    out = []
    for group in body.get("tools") or []:
        for fn in group.get("functionDeclarations") or []:
            out.append((fn.get("name"), fn.get("parametersJsonSchema") or fn.get("parameters")))
    return out


APPLY_PATCH_NAMES = ("apply_patch",)

# Claude Code's auto permission mode asks the API itself to classify each tool call: its request
# carries `safeguards: [{"type": "dangerous_tool_use", "classifier_context": ...}]` (and the beta
# header dangerous-tool-use-2026-09-03), and it reads the verdicts from the `message_delta` of the
# answer, `delta.safeguard_results` (parser next to "server_no_result" in the bundled claude
# binary of @anthropic-ai/claude-agent-sdk-linux-x64 0.3.318). A response without them makes it
# print a notice about the gateway into the reply and classify locally from then on.
TOOL_USE_SAFEGUARD = "dangerous_tool_use"


def asks_tool_use_verdict(body):
    return any(isinstance(s, dict) and s.get("type") == TOOL_USE_SAFEGUARD for s in body.get("safeguards") or [])


def tool_use_verdicts(verdicts):
    """The `safeguard_results` item: one evaluated outcome per tool_use of the answer (the scripts
    call only harmless tools: `not_flagged`; a run that needs a user's "no" runs Claude in its
    Manual mode, see agents.py)."""
    tool_uses = {tool_id: {"type": "evaluated", "outcome": outcome} for tool_id, outcome in verdicts.items()}
    return {"type": TOOL_USE_SAFEGUARD, "status": {"type": "available", "tool_uses": tool_uses}}


def is_codex_guardian(body):
    """Codex's automatic approval review (its "Auto review" mode, the default of codex-acp 2.x): a
    sub-agent request, tools included, that asks for a JSON verdict (`text.format` schema with
    `outcome` allow/deny; `client_metadata["x-openai-subagent"] == "guardian"`). Answered from the
    schema (side_answer: `allow` for outcome, the first value of other enums); not a turn of the
    script, so the script's steps are not spent on it."""
    return (body.get("client_metadata") or {}).get("x-openai-subagent") == "guardian"


def is_codex_turn(body):
    """Codex names what each request is for (`client_metadata["x-codex-turn-metadata"]`, a JSON
    text with `request_kind`: `turn`, `compaction`, ...). A turn is the conversation even with no
    `tools` (Codex 0.166 sends none to gpt-5.6-sol, the model modes-history switches to)."""
    try:
        meta = json.loads((body.get("client_metadata") or {}).get("x-codex-turn-metadata") or "{}")
    except ValueError:
        return False
    return isinstance(meta, dict) and meta.get("request_kind") == "turn"


def is_claude_suggestion(body):
    """Claude Code's prompt suggestion: a copy of the conversation (tools included, for the cache)
    whose last user message asks what the user might type next. Not a turn of the script."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content")
    texts = [content] if isinstance(content, str) else [b.get("text") or "" for b in content or [] if isinstance(b, dict)]
    return last.get("role") == "user" and any("[SUGGESTION MODE:" in t for t in texts)


def codex_deferred_mcp_call(op, body):
    """Codex defers MCP tools behind the Responses API's client-run `tool_search` tool (its
    description names the servers): the model searches first (a `tool_search_call` item), Codex
    answers with a `tool_search_output` input item whose `tools` hold a `namespace` with the
    server's functions, and the model then calls the function with that `namespace`. Returns the
    part to answer with (("tool_search", arguments) or ("tool", name, arguments, namespace)), or
    None when the tool is not deferred that way. Like Claude's ToolSearch, the search is not a step
    of the script (responses_position does not count its output)."""
    if body is None or not any(t.get("type") == "tool_search" and t.get("execution") == "client" for t in body.get("tools") or []):
        return None
    items = body.get("input") if isinstance(body.get("input"), list) else []
    outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "tool_search_output"]
    groups = [t for out in outputs for t in out.get("tools") or []] + list(body.get("tools") or [])
    for group in groups:
        if isinstance(group, dict) and group.get("type") == "namespace" and ms.MCP_SERVER_NAME in str(group.get("name")):
            for fn in group.get("tools") or []:
                if fn.get("name") == op["tool"]:
                    return ("tool", fn["name"], dict(op["arguments"]), group["name"])
    if outputs:
        return None  # searched, and the tool is not among the results
    return ("tool_search", {"query": f"{ms.MCP_SERVER_NAME} {op['tool']}", "limit": 8})


def plan_reply(state, step, tools, api, body=None):
    """The parts of the answer: [("thinking", t), ("text", t)] or a tool call, or a failure."""
    parts = []
    if step.get("thinking"):
        parts.append(("thinking", step["thinking"]))
    op = step.get("tool")
    if op:
        name, args = ms.resolve_tool(op, tools, state.workdir)
        if name is None and op["op"] == "mcp" and api == "anthropic":
            name, args = deferred_mcp_call(op, tools, body) or (name, args)
        if name is None and op["op"] == "mcp" and api == "openai":
            name, args = openai_deferred_mcp_call(op, tools, body) or (name, args)
        if name is None and op["op"] == "mcp" and api == "responses":
            part = codex_deferred_mcp_call(op, body)
            if part is not None:
                parts.append(part)
                return parts
        names = [n for n, _ in tools]
        if name is None and op["op"] in ("edit", "write") and "apply_patch" in names:
            name, args = "apply_patch", {"input": codex_patch(op, state.workdir)}
        if name is None and op["op"] == "edit":
            # Only a whole-file write tool (fast-agent with the client's fs): write the edited text.
            edited = edited_text(op, state.workdir)
            if edited is not None:
                name, args = ms.resolve_tool({"op": "write", "path": op["path"], "content": edited}, tools, state.workdir)
        if name is None and op["op"] == "read":
            name, args = ms.resolve_tool({"op": "shell", "command": f"cat {op['path']}"}, tools, state.workdir)
        if name is None:
            parts.append(("text", f"EMULATOR ERROR: {args}"))
        else:
            parts.append(("tool", name, args))
    if step.get("text"):
        parts.append(("text", step["text"]))
    return parts


def edited_text(op, workdir):
    """The file's text after the edit (None when the file cannot be read)."""
    try:
        with open(f"{workdir}/{op['path']}", encoding="utf-8") as f:
            return f.read().replace(op["old"], op["new"], 1)
    except OSError:
        return None


def codex_patch(op, workdir):
    path = f"{workdir}/{op['path']}"
    if op["op"] == "write":
        lines = "".join(f"+{line}\n" for line in op["content"].splitlines())
        return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch"
    removed = "".join(f"-{line}\n" for line in op["old"].split("\n"))
    added = "".join(f"+{line}\n" for line in op["new"].split("\n"))
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{removed}{added}*** End Patch"


# ---- the HTTP handler ----------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "SpindleModelEmulator/1"

    def log_message(self, fmt, *args):  # quiet: the JSON log holds everything
        pass

    @property
    def state(self):
        return self.server.state

    def read_body(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return raw, json.loads(raw) if raw else {}
        except ValueError:
            return raw, None

    def headers_for_log(self):
        return {
            k: ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()
        }

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_HEAD(self):
        self.handle_any("HEAD")

    def handle_any(self, method):
        raw, body = self.read_body()
        self.record_n = next(self.state.counter)
        record = {
            "n": self.record_n,
            "time": time.time(),
            "method": method,
            "path": self.path,
            "headers": self.headers_for_log(),
            "body": body if body is not None else raw.decode("utf-8", "replace")[:4000],
        }
        try:
            status, api, role, step = self.route(method, self.path.split("?")[0], body or {})
            record.update(status=status, api=api, role=role, step=step)
        except (Clientgone, BrokenPipeError, ConnectionResetError):
            api, role, step = getattr(self, "serving", (None, None, None))
            record.update(status="client-gone", api=api, role=role, step=step)
        self.state.write_log(record)

    def route(self, method, path, body):
        if method == "GET" and path.rstrip("/").endswith("/models"):
            data = [{"id": m, "object": "model", "type": "model", "display_name": m} for m in MODEL_IDS]
            self.send_json(200, {"object": "list", "data": data, "models": [{"name": f"models/{m}"} for m in MODEL_IDS]})
            return 200, "models", "side", None
        if method != "POST":
            return self.not_found(path)
        if path.endswith("/messages/count_tokens"):
            self.send_json(200, {"input_tokens": 42})
            return 200, "anthropic", "count_tokens", None
        if path.endswith("/messages"):
            return self.anthropic(body)
        if path.endswith("/chat/completions"):
            return self.openai_chat(body)
        if path.endswith("/responses"):
            return self.openai_responses(body)
        if ":countTokens" in path:
            self.send_json(200, {"totalTokens": 42})
            return 200, "gemini", "count_tokens", None
        if ":streamGenerateContent" in path or ":generateContent" in path:
            return self.gemini(body, stream=":streamGenerateContent" in path)
        return self.not_found(path)

    def not_found(self, path):
        self.send_json(404, {"error": {"type": "not_found", "message": f"emulator: no route for {path}"}})
        return 404, None, "unknown", None

    # ---- plumbing ----

    def send_json(self, status, obj, extra_headers=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, data, event=None):
        chunk = (f"event: {event}\n" if event else "") + f"data: {json.dumps(data) if not isinstance(data, str) else data}\n\n"
        try:
            self.wfile.write(chunk.encode())
        except (BrokenPipeError, ConnectionResetError) as err:
            raise Clientgone() from err

    def flush(self):
        try:
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError) as err:
            raise Clientgone() from err

    def pieces(self, step, text):
        return ms.split_text(text, step.get("deltas", 1), step.get("exact_pieces", False))

    def pause(self, step):
        if step.get("delay"):
            self.flush()
            time.sleep(step["delay"])

    def fail_status(self, step):
        """For a step failing with an HTTP status: answer it and say so."""
        status = step["fail"]
        self.send_json(
            status,
            {
                "type": "error",
                "error": {
                    "type": "rate_limit_error" if status == 429 else "api_error",
                    "message": f"emulated HTTP {status}",
                    "code": status,
                    "status": "RESOURCE_EXHAUSTED" if status == 429 else "INTERNAL",
                },
            },
            {"retry-after": "0"} if status == 429 else None,
        )
        return status

    def mark_serving(self, api, index):
        """Log a main request as it starts streaming (a cancelled run may never finish it)."""
        self.serving = (api, "main", index)
        self.state.write_log({"n": self.record_n, "time": time.time(), "method": "POST", "path": self.path, "status": "streaming", "api": api, "role": "main", "step": index})

    # ---- Anthropic Messages ----

    def anthropic(self, body):
        tools = anthropic_tools(body)
        if not tools or is_claude_suggestion(body):
            text = ms.side_answer(json.dumps(body), ((body.get("output_config") or {}).get("format") or {}).get("schema"))
            return self.anthropic_answer(body, {"deltas": 1}, [("text", text)]), "anthropic", "side", None
        step, index = self.state.step(anthropic_position(body))
        self.mark_serving("anthropic", index)
        if isinstance(step.get("fail"), int):
            return self.fail_status(step), "anthropic", "main", index
        parts = plan_reply(self.state, step, tools, "anthropic", body)
        return self.anthropic_answer(body, step, parts), "anthropic", "main", index

    def anthropic_answer(self, body, step, parts):
        model = body.get("model", "emulated-model")
        stop = "tool_use" if any(p[0] == "tool" for p in parts) else "end_turn"
        usage = {"input_tokens": 100, "output_tokens": 20}
        if step.get("usage") != "no-cache":
            usage.update(cache_creation_input_tokens=0, cache_read_input_tokens=0)
        # A fresh id per answer, as the API gives: the Claude adapter makes it the ACP messageId, and
        # a reused one would merge a resumed session's new reply into the message its load replayed.
        message_id = f"msg_emulated_{next(self.state.counter)}"
        if not body.get("stream"):
            content = []
            for part in parts:
                if part[0] == "thinking":
                    content.append({"type": "thinking", "thinking": part[1], "signature": "emulated"})
                elif part[0] == "text":
                    content.append({"type": "text", "text": part[1]})
                else:
                    content.append({"type": "tool_use", "id": f"toolu_{self.state.counter.__next__()}", "name": part[1], "input": part[2]})
            self.send_json(200, {"id": message_id, "type": "message", "role": "assistant", "model": model, "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage})
            return 200
        verdicts = {}  # tool_use id -> the classifier's outcome, when the request asks for one
        self.start_sse()
        self.sse({"type": "message_start", "message": {"id": message_id, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}}, "message_start")
        for index, part in enumerate(parts):
            if part[0] == "thinking":
                self.sse({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}, "content_block_start")
                for piece in self.pieces(step, part[1]):
                    self.sse({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}}, "content_block_delta")
                self.sse({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "emulated-signature"}}, "content_block_delta")
            elif part[0] == "text":
                self.sse({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}, "content_block_start")
                for n, piece in enumerate(self.pieces(step, part[1])):
                    self.sse({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
                    self.pause(step)
                    if step.get("fail") == "mid" and n >= 1:
                        self.sse({"type": "error", "error": {"type": "api_error", "message": "emulated failure mid-answer"}}, "error")
                        self.flush()
                        return 500
            else:
                tool_id = f"toolu_emulated_{next(self.state.counter)}"
                verdicts[tool_id] = "not_flagged"
                self.sse({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": tool_id, "name": part[1], "input": {}}}, "content_block_start")
                args = json.dumps(part[2])
                for piece in ms.split_text(args, 3):
                    self.sse({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}, "content_block_delta")
            self.sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        delta = {"stop_reason": stop, "stop_sequence": None}
        if asks_tool_use_verdict(body):
            delta["safeguard_results"] = [tool_use_verdicts(verdicts)]
        self.sse({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 20}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")
        self.flush()
        return 200

    # ---- OpenAI Chat Completions ----

    def openai_chat(self, body):
        tools = openai_tools(body)
        if not tools:
            schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
            text = ms.side_answer(json.dumps(body), schema)
            return self.openai_answer(body, {"deltas": 1}, [("text", text)]), "openai", "side", None
        step, index = self.state.step(openai_position(body))
        self.mark_serving("openai", index)
        if isinstance(step.get("fail"), int):
            return self.fail_status(step), "openai", "main", index
        parts = plan_reply(self.state, step, tools, "openai", body)
        return self.openai_answer(body, step, parts), "openai", "main", index

    def openai_answer(self, body, step, parts):
        model = body.get("model", "emulated-model")
        finish = "tool_calls" if any(p[0] == "tool" for p in parts) else "stop"
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        if not body.get("stream"):
            message = {"role": "assistant", "content": None}
            for part in parts:
                if part[0] == "thinking":
                    message["reasoning_content"] = part[1]
                elif part[0] == "text":
                    message["content"] = part[1]
                else:
                    message["tool_calls"] = [{"id": f"call_{next(self.state.counter)}", "type": "function", "function": {"name": part[1], "arguments": json.dumps(part[2])}}]
            self.send_json(200, {"id": "chatcmpl-emulated", "object": "chat.completion", "created": int(time.time()), "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})
            return 200
        self.start_sse()
        base = {"id": "chatcmpl-emulated", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

        def chunk(delta, finish_reason=None):
            self.sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})

        chunk({"role": "assistant", "content": ""})
        for part in parts:
            if part[0] == "thinking":
                for piece in self.pieces(step, part[1]):
                    chunk({"reasoning_content": piece})
            elif part[0] == "text":
                for n, piece in enumerate(self.pieces(step, part[1])):
                    chunk({"content": piece})
                    self.pause(step)
                    if step.get("fail") == "mid" and n >= 1:
                        self.flush()
                        return 500  # connection closed without finish_reason nor [DONE]
            else:
                call_id = f"call_emulated_{next(self.state.counter)}"
                chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": {"name": part[1], "arguments": ""}}]})
                for piece in ms.split_text(json.dumps(part[2]), 3):
                    chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            self.sse({**base, "choices": [], "usage": usage})
        self.sse("[DONE]")
        self.flush()
        return 200

    # ---- OpenAI Responses (Codex) ----

    def openai_responses(self, body):
        tools = [(t.get("name"), t.get("parameters")) for t in body.get("tools") or [] if t.get("name")]
        if is_codex_guardian(body) or not (tools or is_codex_turn(body)):
            text = ms.side_answer(json.dumps(body), ((body.get("text") or {}).get("format") or {}).get("schema"))
            return self.responses_answer(body, {"deltas": 1}, [("text", text)]), "responses", "side", None
        step, index = self.state.step(responses_position(body))
        self.mark_serving("responses", index)
        if isinstance(step.get("fail"), int):
            return self.fail_status(step), "responses", "main", index
        parts = plan_reply(self.state, step, tools, "responses", body)
        custom = {t.get("name") for t in body.get("tools") or [] if t.get("type") == "custom"}
        return self.responses_answer(body, step, parts, custom), "responses", "main", index

    def responses_answer(self, body, step, parts, custom=frozenset()):
        model = body.get("model", "emulated-model")
        rid = f"resp_emulated_{next(self.state.counter)}"
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120}
        self.start_sse()

        def event(kind, **fields):
            self.sse({"type": kind, **fields}, kind)

        event("response.created", response={"id": rid, "object": "response", "model": model, "status": "in_progress", "output": []})
        for out_index, part in enumerate(parts):
            item_id = f"item_{next(self.state.counter)}"
            if part[0] == "thinking":
                event("response.output_item.added", output_index=out_index, item={"type": "reasoning", "id": item_id, "summary": []})
                event("response.reasoning_summary_part.added", item_id=item_id, output_index=out_index, summary_index=0, part={"type": "summary_text", "text": ""})
                for piece in self.pieces(step, part[1]):
                    event("response.reasoning_summary_text.delta", item_id=item_id, output_index=out_index, summary_index=0, delta=piece)
                event("response.output_item.done", output_index=out_index, item={"type": "reasoning", "id": item_id, "summary": [{"type": "summary_text", "text": part[1]}]})
            elif part[0] == "text":
                event("response.output_item.added", output_index=out_index, item={"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []})
                event("response.content_part.added", item_id=item_id, output_index=out_index, content_index=0, part={"type": "output_text", "text": "", "annotations": []})
                for n, piece in enumerate(self.pieces(step, part[1])):
                    event("response.output_text.delta", item_id=item_id, output_index=out_index, content_index=0, delta=piece)
                    self.pause(step)
                    if step.get("fail") == "mid" and n >= 1:
                        event("response.failed", response={"id": rid, "status": "failed", "error": {"code": "server_error", "message": "emulated failure mid-answer"}})
                        self.flush()
                        return 500
                event("response.output_item.done", output_index=out_index, item={"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": part[1], "annotations": []}]})
            elif part[0] == "tool_search":
                call_id = f"call_emulated_{next(self.state.counter)}"
                item = {"type": "tool_search_call", "id": item_id, "call_id": call_id, "execution": "client", "arguments": part[1], "status": "completed"}
                event("response.output_item.added", output_index=out_index, item=item)
                event("response.output_item.done", output_index=out_index, item=item)
            else:
                call_id = f"call_emulated_{next(self.state.counter)}"
                if part[1] in custom:
                    item = {"type": "custom_tool_call", "id": item_id, "call_id": call_id, "name": part[1], "input": part[2].get("input", "")}
                else:
                    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": part[1], "arguments": json.dumps(part[2]), "status": "completed"}
                    if len(part) > 3:
                        item["namespace"] = part[3]
                event("response.output_item.added", output_index=out_index, item=item)
                event("response.output_item.done", output_index=out_index, item=item)
        event("response.completed", response={"id": rid, "object": "response", "model": model, "status": "completed", "usage": usage, "output": []})
        self.flush()
        return 200

    # ---- Gemini ----

    def gemini(self, body, stream):
        tools = gemini_tools(body)
        config = body.get("generationConfig") or {}
        if not tools:
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            text = ms.side_answer(json.dumps(body), schema)
            return self.gemini_answer({"deltas": 1}, [("text", text)], stream), "gemini", "side", None
        step, index = self.state.step(gemini_position(body))
        self.mark_serving("gemini", index)
        if isinstance(step.get("fail"), int):
            return self.fail_status(step), "gemini", "main", index
        parts = plan_reply(self.state, step, tools, "gemini")
        return self.gemini_answer(step, parts, stream), "gemini", "main", index

    def gemini_answer(self, step, parts, stream):
        usage = {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}

        def chunk(parts_out, finish=None):
            candidate = {"content": {"role": "model", "parts": parts_out}, "index": 0}
            if finish:
                candidate["finishReason"] = finish
            return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-2.5-pro"}

        if not stream:
            out = []
            for part in parts:
                if part[0] == "thinking":
                    out.append({"text": part[1], "thought": True})
                elif part[0] == "text":
                    out.append({"text": part[1]})
                else:
                    out.append({"functionCall": {"name": part[1], "args": part[2]}})
            self.send_json(200, chunk(out, "STOP"))
            return 200
        self.start_sse()
        for part in parts:
            if part[0] == "thinking":
                # Gemini streams a thought as whole parts (the CLI reads a **subject** per part).
                self.sse(chunk([{"text": part[1], "thought": True}]))
            elif part[0] == "text":
                for n, piece in enumerate(self.pieces(step, part[1])):
                    self.sse(chunk([{"text": piece}]))
                    self.pause(step)
                    if step.get("fail") == "mid" and n >= 1:
                        self.flush()
                        return 500
            else:
                self.sse(chunk([{"functionCall": {"name": part[1], "args": part[2]}}]))
        self.sse(chunk([{"text": ""}], "STOP"))
        self.flush()
        return 200


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True, choices=sorted(ms.SCRIPTS))
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.state = State(args.script, args.workdir, args.log)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
