"""The user's MCP servers and elicitation against production agents: the `mcp`, `elicit` and `ask`
scripts (`ask`: the agent's own question tool, which an adapter may send as a form elicitation;
`ask_checks`).

Each run writes its own `mcp.json` (`write_mcp_config`) in the shape users keep for other clients:
one stdio server `probe` (mcp_server.py, `python3` found on PATH, its log file given as an
argument) with one environment variable, `SECRET_TOKEN`, whose value is fresh per run. The run
goes through `spindle chat --mcp-config FILE` (runner.run_one) or `spindle serve --mcp-config
FILE` (serve_runner.serve_run, which answers the elicitation with `POST .../elicitation`).

- `mcp`: the scripted model calls the server's `spindle_probe` tool under the agent's name for
  it (model_scripts.MCP_TOOL_NAMES); the server's log must show the call with the script's
  arguments, the transcript the tool call completed, the next model request the tool's result.
- `elicit`: the model calls `spindle_ask`, for which the server asks the user through its MCP
  client (`elicitation/create`); an agent that forwards MCP elicitations sends ACP
  `elicitation/create` to Spindle. `spindle chat --prompt` declines it, `spindle serve` is
  answered `accept` with `{"answer": ELICIT_ANSWER}`; the server's log must hold that answer.

Both check that the configured entry was sent to the agent (`session/new`'s `mcpServers`) and that
the secret value appears in none of Spindle's outputs: the recording or wire log (and for serve
the whole database file), the transcript, the server's views, Spindle's stdout and stderr.
`mcp_checks(run)` yields (name, ok, detail); check_run turns them into outcomes.
"""

import hashlib
import json
import os
import uuid

import model_scripts as ms
from client_checks import wire_lines

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "mcp_server.py")
MCP_SCRIPTS = ["mcp", "elicit"]
SECRET_ENV = "SECRET_TOKEN"
PROBE_MARKER = "spindle-mcp-probe-result"
ASK_MARKER = "spindle-mcp-ask-result"
ELICIT_ANSWER = "periwinkle-blue"


def write_mcp_config(run_dir):
    """The run's mcp.json; returns {"config", "secret", "log"}."""
    secret = f"spindle-mcp-secret-{uuid.uuid4().hex}"
    log = os.path.join(run_dir, "probe.jsonl")
    config = os.path.join(run_dir, "mcp.json")
    entry = {"command": "python3", "args": [SERVER, "--log", log], "env": {SECRET_ENV: secret}}
    with open(config, "w") as f:
        json.dump({"mcpServers": {ms.MCP_SERVER_NAME: entry}}, f, indent=2)
    return {"config": config, "secret": secret, "log": log}


def probe_events(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def main_bodies(run):
    """The bodies of the conversation requests, in order (each request logged once with a body)."""
    seen, out = set(), []
    for r in run["requests"]:
        if r.get("role") == "main" and isinstance(r.get("body"), (dict, str)) and r["n"] not in seen:
            seen.add(r["n"])
            out.append(json.dumps(r["body"]))
    return out


def request_tools(body):
    """The tool names a model request declares (Anthropic, OpenAI Chat and Responses, Gemini)."""
    names = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            names.append(t.get("name") or (t.get("function") or {}).get("name"))
            names += [fn.get("name") for fn in t.get("functionDeclarations") or []]
    return [(n, None) for n in names if n]


def offered_name(run, tool):
    """How the agent offered the model the MCP tool: (name, how) or (None, why not). An agent may
    declare it in its requests' tools, or defer it behind a search tool (the emulator's
    deferred_mcp_call, openai_deferred_mcp_call, codex_deferred_mcp_call): Claude Code lists its
    name in the prompt for ToolSearch, Qwen Code's tool_search returns it for tool_call, Codex's
    Responses `tool_search` returns a `namespace` holding it."""
    bodies = [r["body"] for r in run["requests"] if r.get("role") == "main" and isinstance(r.get("body"), dict)]
    if not bodies:
        return None, "no conversation request reached the model API"
    why = ""
    first = bodies[0]
    searches = {n for n, _ in request_tools(first)} & {"ToolSearch", "tool_search"}
    for index, body in enumerate(bodies):
        name, why = ms.resolve_mcp_tool({"tool": tool, "arguments": {}}, request_tools(body))
        if name:
            later = f", declared after a search ({', '.join(sorted(searches))})" if index and searches else ""
            return name, f"as {name}{later}"
    if any(t.get("type") == "tool_search" for t in first.get("tools") or [] if isinstance(t, dict)):
        for body in bodies:
            for item in body.get("input") or []:
                for group in (item.get("tools") or []) if isinstance(item, dict) and item.get("type") == "tool_search_output" else []:
                    if any(fn.get("name") == tool for fn in group.get("tools") or []):
                        return tool, f"as {tool} in namespace {group.get('name')}, deferred (the Responses API's tool_search)"
    for pattern in ms.MCP_TOOL_NAMES:
        name = pattern.format(server=ms.MCP_SERVER_NAME, tool=tool)
        if searches and any(name in json.dumps(body) for body in bodies):
            via = "ToolSearch" if "ToolSearch" in searches else "tool_search, then tool_call"
            return name, f"as {name}, deferred ({via})"
    return None, why


def secret_places(run):
    """Where Spindle's outputs of the run hold the secret value: [place]."""
    secret = run["mcp"]["secret"]
    places = []
    texts = {
        "transcript": json.dumps(run["transcript"]),
        "stdout": run.get("stdout") or "",
        "stderr": run.get("stderr") or "",
    }
    for name, view in (run.get("views") or {}).items():
        texts[f"GET {name}"] = json.dumps(view)
    for name, text in texts.items():
        if secret in text:
            places.append(name)
    for path in [run.get("record")] + list(run.get("stored_files") or []):
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                if secret.encode() in f.read():
                    places.append(os.path.basename(path))
    return places


def sent_entry(run):
    """The `probe` entry of the first session/new's mcpServers, as sent to the agent (or None)."""
    for kind, msg in wire_lines(run.get("record")):
        if kind == "sent" and msg.get("method") == "session/new":
            for server in (msg.get("params") or {}).get("mcpServers") or []:
                if server.get("name") == ms.MCP_SERVER_NAME:
                    return server
            return {}
    return None


def elicitation_exchanges(run):
    """The agent's elicitation/create requests with the client's answers: [(params, answer)]."""
    pending, out = {}, []
    for kind, msg in wire_lines(run.get("record")):
        if kind == "agent" and msg.get("method") == "elicitation/create" and "id" in msg:
            pending[json.dumps(msg["id"])] = len(out)
            out.append([msg.get("params") or {}, None])
        elif kind == "sent" and "method" not in msg and "id" in msg:
            index = pending.pop(json.dumps(msg["id"]), None)
            if index is not None:
                out[index][1] = {k: msg[k] for k in ("result", "error") if k in msg}
    return [tuple(x) for x in out]


def mcp_checks(run):
    """The checks of an `mcp` or `elicit` run (chat or serve): [(name, ok, detail)]."""
    serve = run.get("mode") == "serve"
    info = run["mcp"]
    events = probe_events(info["log"])
    out = []
    entry = sent_entry(run)
    env_names = [e.get("name") for e in (entry or {}).get("env") or []]
    # The file says `python3`; ACP asks for an absolute path, so Spindle sends the one on its PATH.
    command = (entry or {}).get("command") or ""
    sent_absolute = os.path.isabs(command) and os.path.basename(command) == "python3"
    out.append(("mcp-server-sent", bool(entry) and sent_absolute and env_names == [SECRET_ENV],
                f"session/new's probe entry: command {(entry or {}).get('command')!r}, env names {env_names}" if entry is not None else "no session/new in the recording"))
    if serve:
        passed = [s.get("name") for s in (((run.get("views") or {}).get("agent") or {}).get("mcpServers") or {}).get("passed") or []]
        out.append(("mcp-server-listed", ms.MCP_SERVER_NAME in passed, f"GET .../agent mcpServers.passed: {passed}"))
    places = secret_places(run)
    out.append(("secret-not-recorded", not places, f"the secret value is in {places}"))
    started = [e for e in events if e["event"] == "started"]
    out.append(("mcp-server-started", bool(started), f"the MCP server never started (no {info['log']}); the agent did not start it"))
    if not started:
        return out
    want_digest = hashlib.sha256(info["secret"].encode()).hexdigest()
    out.append(("mcp-env-passed", started[0].get("secret_sha256") == want_digest, f"{SECRET_ENV} in the server's environment: {'unset' if started[0].get('secret_sha256') is None else 'a different value'}"))
    tool = "spindle_probe" if run["script"] == "mcp" else "spindle_ask"
    name, how = offered_name(run, tool)
    out.append(("mcp-tool-offered", name is not None, how))
    calls = [e for e in events if e["event"] == "call" and e.get("tool") == tool]
    want_args = {"text": ms.MCP_PROBE_TEXT} if tool == "spindle_probe" else {"question": ms.ELICIT_QUESTION}
    out.append(("mcp-call-reached-server", any(c.get("arguments") == want_args for c in calls), f"calls logged by the server: {[(c.get('tool'), c.get('arguments')) for c in calls]}"))
    said = next(iter(want_args.values()))
    # The call itself carries the script's argument text (a search that loaded the tool does not).
    calls_shown = [c for c in (run["transcript"] or {}).get("entries") or [] if c.get("toolCall") and said in json.dumps(c)]
    statuses = [c["toolCall"].get("status") for c in calls_shown]
    out.append(("mcp-tool-completed", "completed" in statuses, f"statuses of the tool calls with the argument {said!r}: {statuses}"))
    bodies = main_bodies(run)
    marker = PROBE_MARKER if tool == "spindle_probe" else ASK_MARKER
    out.append(("mcp-result-to-model", any(marker in b for b in bodies[1:]), f"no later model request holds {marker!r}"))
    if run["script"] == "elicit":
        out += elicit_checks(run, events, bodies, serve)
    return out


def elicit_checks(run, events, bodies, serve):
    out = []
    asked = elicitation_exchanges(run)
    questions = [p.get("message") for p, _ in asked]
    out.append(("elicitation-asked", any(ms.ELICIT_QUESTION in (q or "") for q in questions), f"elicitation/create messages from the agent: {questions}"))
    answers = [a for _, a in asked]
    want = "accept" if serve else "decline"
    actions = [((a or {}).get("result") or {}).get("action") for a in answers]
    out.append(("elicitation-accepted" if serve else "elicitation-declined", want in actions, f"Spindle's answers: {answers}"))
    got = [e.get("answer") for e in events if e["event"] == "elicitation"]
    if serve:
        ok = any((g or {}).get("action") == "accept" and ((g or {}).get("content") or {}).get("answer") == ELICIT_ANSWER for g in got)
        told = f"action=accept answer={ELICIT_ANSWER}"
    else:
        ok = any((g or {}).get("action") == "decline" for g in got)
        told = "action=decline"
    out.append(("answer-reached-server", ok, f"answers the MCP server received: {got} ({[e.get('note') for e in events if e['event'] == 'elicitation' and e.get('note')]})"))
    out.append(("answer-to-model", any(told in b for b in bodies[1:]), f"no later model request holds {told!r}"))
    return out


def tool_results_to_model(run):
    """The text of every tool result the agent sent the model (Anthropic `tool_result` blocks)."""
    out = []
    for body in main_bodies(run):
        for message in json.loads(body).get("messages") or [] if body.startswith("{") else []:
            for block in message.get("content") or [] if isinstance(message.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append(json.dumps(block.get("content")))
    return out


def ask_checks(run):
    """The checks of an `ask` run: the agent's own question (Claude's AskUserQuestion) as a form
    elicitation, declined by chat, answered ASK_CHOICE through serve, and what the model is told."""
    serve = run.get("mode") == "serve"
    asked = elicitation_exchanges(run)
    questions = [p.get("message") for p, _ in asked]
    out = [("elicitation-asked", ms.ASK_QUESTION in questions, f"elicitation/create messages from the agent: {questions}")]
    actions = [((a or {}).get("result") or {}).get("action") for _, a in asked]
    want = "accept" if serve else "decline"
    out.append(("elicitation-accepted" if serve else "elicitation-declined", want in actions, f"Spindle's answers: {[a for _, a in asked]}"))
    calls = [c for c in (run["transcript"] or {}).get("entries") or [] if c.get("toolCall") and ms.ASK_QUESTION in json.dumps(c)]
    statuses = [c["toolCall"].get("status") for c in calls]
    # Declined or answered, the question tool completes (Claude tells the model "The user did not
    # answer the questions." for a decline).
    out.append(("question-tool-ended", "completed" in statuses, f"statuses of the question's tool calls: {statuses}"))
    results = [r for r in tool_results_to_model(run) if r]
    chose = any(ms.ASK_CHOICE in r for r in results)
    out.append(("answer-to-model", chose if serve else bool(results) and not chose, f"tool results sent to the model: {[r[:160] for r in results]}"))
    return out
