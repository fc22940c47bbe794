"""The scripted model behind the emulator: what the "model" answers at each step of a turn.

A script is a list of steps. The step served for a request is the number of tool results in that
request (0 for the first call, 1 once one tool result came back, ...), so the model decides tool
use from what it sees, like a real one: a turn answers with a tool call first and with text once
the tool result is in the request. (Counting tool results rather than model turns is robust to the
reminder messages and fake opening exchanges agents add to the history; each test is one prompt.)

A step is a dict with any of: `thinking` (text), `text` (text), `tool` (an abstract operation:
read / write / edit / shell, with arguments; `mcp`: a tool of the run's MCP server,
mcp_server.py, by its own name, with the arguments as given; `ask`: the agent's own tool that asks
the user a question with options), `deltas` (how many stream pieces the text is cut
into), `delay` (seconds between pieces), `fail` (an HTTP status for the whole answer, or
`"mid"` for a stream cut after a few pieces; served once per emulator run, then the next step),
`once` (served once per emulator run, then the next step, like a failure).
Tool operations are mapped onto the tools the agent declared in its request (names and argument
names differ per agent), see `resolve_tool`.
"""

import json

PLAIN_TEXT = "Hello from the scripted model. This is the plain answer."
THOUGHT_TEXT = "The user wants a short answer; I will think first and then reply."
THINKING_REPLY = "Answer given after thinking."
NOTES_CONTENT = "spindle notes: the secret word is periwinkle\n"
READ_REPLY = "I read notes.txt: the secret word is periwinkle."
WRITE_CONTENT = "written by the scripted model\nsecond line\n"
WRITE_REPLY = "I wrote new.txt."
REJECT_REPLY = "The write was not allowed."
EDIT_BEFORE = "alpha\nbeta\ngamma\n"
EDIT_OLD = "beta"
EDIT_NEW = "BETA-EDITED"
EDIT_REPLY = "I edited edit.txt."
# No $(...) nor $((...)): Gemini CLI blocks command substitution. The output differs from the
# command text, so finding it in the transcript shows the command's output, not its echo.
SHELL_COMMAND = "printf 'spindle-shell-%d\\n' 42 > shell.txt && cat shell.txt"
SHELL_OUTPUT = "spindle-shell-42"
SHELL_REPLY = "The command printed spindle-shell-42."
LONG_DELTAS = 10000
LONG_TEXT = "".join(f"w{i} " for i in range(LONG_DELTAS)).rstrip()
SLOW_TEXT = "".join(f"slow{i} " for i in range(6000))
RECOVERED_REPLY = "Recovered after the API failure."
# A write outside the session's working directory (the client must refuse it).
OUTSIDE_PATH = "../outside.txt"
OUTSIDE_REPLY = "I tried to write outside the workspace."
PARTIAL_TEXT = "This answer is cut by the API failure"
# The user's MCP server (mcp_server.py, named `probe` in the run's mcp.json): its tools reach the
# model under each agent's own name for them (MCP_TOOL_NAMES).
MCP_SERVER_NAME = "probe"
MCP_PROBE_TEXT = "hello from the scripted model"
MCP_REPLY = "The probe tool answered."
ELICIT_QUESTION = "Which colour should the probe report?"
ELICIT_REPLY = "The probe tool asked you and told me your answer."
# The agent's own question tool, which an adapter may turn into a form elicitation (Claude's
# AskUserQuestion): the user is offered ASK_OPTIONS; serve answers ASK_CHOICE (not the first).
ASK_QUESTION = "Which colour should the scripted model use?"
ASK_OPTIONS = ["Periwinkle", "Teal"]
ASK_CHOICE = "Teal"
ASK_REPLY = "I asked you which colour to use."
# `undo`: in one turn the agent creates a file, appends a line to another and deletes a third with
# its own tools; the chat's /undo must put the work directory back as it was before the turn.
UNDO_NEW_PATH = "made.txt"
UNDO_NEW_CONTENT = "made by the scripted model\n"
UNDO_APPENDED = "delta appended by the scripted model"
UNDO_DELETE_COMMAND = "rm notes.txt"
UNDO_REPLY = "I created made.txt, appended to edit.txt and deleted notes.txt."

SCRIPTS = {
    "plain": [{"text": PLAIN_TEXT, "deltas": 6}],
    # The plain answer with usage that lacks the cache counts, as some Anthropic-compatible
    # gateways send it (Claude's adapter then sums to NaN and sends `"used": null`).
    "usage-partial": [{"text": PLAIN_TEXT, "deltas": 6, "usage": "no-cache"}],
    "thinking": [{"thinking": THOUGHT_TEXT, "text": THINKING_REPLY, "deltas": 4}],
    "read": [
        {"tool": {"op": "read", "path": "notes.txt"}},
        {"text": READ_REPLY, "deltas": 3},
    ],
    "write": [
        {"tool": {"op": "write", "path": "new.txt", "content": WRITE_CONTENT}},
        {"text": WRITE_REPLY, "deltas": 3},
    ],
    # Read first: Claude Code refuses to edit a file it has not read (a real model reads first).
    "edit": [
        {"tool": {"op": "read", "path": "edit.txt"}},
        {"tool": {"op": "edit", "path": "edit.txt", "old": EDIT_OLD, "new": EDIT_NEW}},
        {"text": EDIT_REPLY, "deltas": 3},
    ],
    "shell": [
        {"tool": {"op": "shell", "command": SHELL_COMMAND}},
        {"text": SHELL_REPLY, "deltas": 3},
    ],
    # The same model as "write"; the harness runs it without --yes, so Spindle rejects.
    "reject": [
        {"tool": {"op": "write", "path": "new.txt", "content": WRITE_CONTENT}},
        {"text": REJECT_REPLY, "deltas": 2},
    ],
    "write-outside": [
        {"tool": {"op": "write", "path": OUTSIDE_PATH, "content": WRITE_CONTENT}},
        {"text": OUTSIDE_REPLY, "deltas": 2},
    ],
    "cancel": [{"text": SLOW_TEXT, "deltas": 6000, "delay": 0.005}],
    "long": [{"text": LONG_TEXT, "deltas": LONG_DELTAS, "exact_pieces": True}],
    # For `spindle serve`: the first prompt streams slowly and is cancelled, the next is answered.
    "serve-cancel": [
        {"once": True, "text": SLOW_TEXT, "deltas": 6000, "delay": 0.005},
        {"text": PLAIN_TEXT, "deltas": 6},
    ],
    "api-429": [
        {"fail": 429},
        {"text": RECOVERED_REPLY, "deltas": 3},
    ],
    "api-500-mid": [
        {"fail": "mid", "text": PARTIAL_TEXT, "deltas": 4},
        {"text": RECOVERED_REPLY, "deltas": 3},
    ],
    # The MCP server's tools: a plain call, and one that asks the user (elicitation) first.
    "mcp": [
        {"tool": {"op": "mcp", "tool": "spindle_probe", "arguments": {"text": MCP_PROBE_TEXT}}},
        {"text": MCP_REPLY, "deltas": 2},
    ],
    # Read before the edit: Claude Code refuses to edit a file it has not read.
    "undo": [
        {"tool": {"op": "write", "path": UNDO_NEW_PATH, "content": UNDO_NEW_CONTENT}},
        {"tool": {"op": "read", "path": "edit.txt"}},
        {"tool": {"op": "edit", "path": "edit.txt", "old": "gamma", "new": "gamma\n" + UNDO_APPENDED}},
        {"tool": {"op": "shell", "command": UNDO_DELETE_COMMAND}},
        {"text": UNDO_REPLY, "deltas": 3},
    ],
    "elicit": [
        {"tool": {"op": "mcp", "tool": "spindle_ask", "arguments": {"question": ELICIT_QUESTION}}},
        {"text": ELICIT_REPLY, "deltas": 2},
    ],
    "ask": [
        {"tool": {"op": "ask", "question": ASK_QUESTION, "options": ASK_OPTIONS}},
        {"text": ASK_REPLY, "deltas": 2},
    ],
}

# Failure steps are served once per emulator run (a retry then gets the following step);
# the step index of the conversation does not move because the failed answer never reached it.


def split_text(text, pieces, exact=False):
    """Cut text into about `pieces` stream deltas (whole words when `exact`, one per word)."""
    if not text:
        return []
    if exact:
        words = text.split(" ")
        return [w + (" " if i + 1 < len(words) else "") for i, w in enumerate(words)]
    pieces = max(1, min(pieces, len(text)))
    size = -(-len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


TOOL_NAMES = {
    "read": ["Read", "read_file", "read", "view", "ReadFile", "read_text_file"],
    # fast-agent has no write tool: its edit_file creates a file when old_string is empty.
    # write_text_file and execute: fast-agent's tools when the client offers fs and terminals.
    "write": ["Write", "write_file", "write", "WriteFile", "create_file", "edit_file", "write_text_file"],
    "edit": ["Edit", "replace", "edit", "edit_file", "str_replace"],
    "shell": ["Bash", "run_shell_command", "bash", "shell", "shell_command", "exec_command", "execute"],
}
PATH_KEYS = ["file_path", "absolute_path", "filePath", "path", "filename"]
OLD_KEYS = ["old_string", "oldString", "old_str"]
NEW_KEYS = ["new_string", "newString", "new_str"]
COMMAND_KEYS = ["command", "cmd"]


# How each agent names an MCP server's tool to the model (SERVER, TOOL), read in each adapter:
# Claude Code and Qwen Code `mcp__SERVER__TOOL`; Gemini CLI `mcp_SERVER_TOOL` (generateValidName
# in its bundle); opencode `SERVER_TOOL`; fast-agent `SERVER__TOOL`. Codex: see resolve_mcp_tool.
MCP_TOOL_NAMES = ["mcp__{server}__{tool}", "mcp_{server}_{tool}", "{server}_{tool}", "{server}__{tool}", "{server}-{tool}"]


def resolve_mcp_tool(op, tools):
    """The agent's name for the MCP tool `op["tool"]` of server MCP_SERVER_NAME, with the
    arguments of the script; (None, reason) when the agent offers the model no such tool."""
    names = [name for name, _ in tools]
    for pattern in MCP_TOOL_NAMES:
        name = pattern.format(server=MCP_SERVER_NAME, tool=op["tool"])
        if name in names:
            return name, dict(op["arguments"])
    # A scheme not listed above: the one offered name that ends with the tool's own name.
    ending = [n for n in names if n and n.endswith(op["tool"])]
    if len(ending) == 1:
        return ending[0], dict(op["arguments"])
    return None, f"no MCP tool {op['tool']!r} of server {MCP_SERVER_NAME!r} among {sorted(n for n in names if n)}"


def resolve_tool(op, tools, workdir):
    """Map an abstract operation onto one of the agent's tools.

    `tools` is a list of (name, json_schema). Returns (name, arguments) or (None, reason).
    """
    if op["op"] == "mcp":
        return resolve_mcp_tool(op, tools)
    if op["op"] == "ask":
        # Claude Code's AskUserQuestion; Codex's request_user_input.
        names = [n for n, _ in tools]
        options = [{"label": o, "description": f"The colour {o}"} for o in op["options"]]
        if "AskUserQuestion" in names:
            return "AskUserQuestion", {"questions": [{"question": op["question"], "header": "Colour", "options": options, "multiSelect": False}]}
        if "request_user_input" in names:
            return "request_user_input", {"questions": [{"id": "colour", "header": "Colour", "question": op["question"], "options": options}]}
        return None, f"no question tool among {sorted(n for n in names if n)}"
    by_name = {name: schema for name, schema in tools}
    name = next((n for n in TOOL_NAMES[op["op"]] if n in by_name), None)
    if name is None and op["op"] == "edit":
        # Codex-style agents edit with apply_patch, handled by the caller.
        return None, f"no tool for {op['op']} among {sorted(by_name)}"
    if name is None:
        return None, f"no tool for {op['op']} among {sorted(by_name)}"
    schema = by_name[name] or {}
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    args = {}

    def first_key(keys):
        return next((k for k in keys if k in props), None)

    if "path" in op:
        key = first_key(PATH_KEYS) or "file_path"
        args[key] = f"{workdir}/{op['path']}"
    if op["op"] == "write" and "content" not in props and first_key(NEW_KEYS):
        args[first_key(OLD_KEYS) or "old_string"] = ""
        args[first_key(NEW_KEYS)] = op["content"]
    elif op["op"] == "write":
        args["content"] = op["content"]
    if op["op"] == "edit":
        args[first_key(OLD_KEYS) or "old_string"] = op["old"]
        args[first_key(NEW_KEYS) or "new_string"] = op["new"]
    if op["op"] == "shell":
        key = first_key(COMMAND_KEYS) or "command"
        if (props.get(key) or {}).get("type") == "array":
            args[key] = ["bash", "-lc", op["command"]]
        else:
            args[key] = op["command"]
        if "sandbox_permissions" in props:
            # Codex in a read-only sandbox: the model asks to run unsandboxed, which asks the user.
            args["sandbox_permissions"] = "require_escalated"
            args["justification"] = "The scripted test writes shell.txt."
        for extra in ("workdir", "directory", "cwd"):
            if extra in props and extra in required:
                args[extra] = workdir
    if "description" in props:
        args["description"] = f"scripted {op['op']}"
    for key in required:
        if key not in args:
            prop = props.get(key) or {}
            kind = prop.get("type")
            args[key] = (
                False
                if kind == "boolean"
                else 0 if kind in ("integer", "number") else [] if kind == "array" else f"scripted {op['op']}"
            )
    return name, args


def json_for_schema(schema):
    """A JSON value that fits a side request's response schema (next-speaker check, router...)."""
    schema = schema or {}
    kind = schema.get("type")
    if isinstance(kind, str):
        kind = kind.lower()
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if kind == "object" or "properties" in schema:
        out = {}
        for key, prop in (schema.get("properties") or {}).items():
            if key == "next_speaker":
                out[key] = "user"
            elif key == "outcome" and "allow" in (prop.get("enum") or []):
                out[key] = "allow"  # Codex's approval review: the scripts' tool calls are harmless
            else:
                out[key] = json_for_schema(prop)
        return out
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return "emulated"


def side_answer(body_text, schema=None):
    """The answer to a request that is not the conversation itself (titles, checks, routing)."""
    if "[SUGGESTION MODE:" in body_text:
        return ""  # Claude Code's suggestion of the user's next prompt: stay silent
    if schema:
        return json.dumps(json_for_schema(schema))
    if "next_speaker" in body_text:
        return json.dumps({"reasoning": "The model finished.", "next_speaker": "user"})
    if "model_choice" in body_text:
        return json.dumps({"reasoning": "simple", "model_choice": "flash"})
    return "Emulated title"
