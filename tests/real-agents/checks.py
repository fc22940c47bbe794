"""The checks of one real-agent run: exit code and stop reason, the replayed transcript against what
the script made the model say, the files on disk, and what the agent sent to the model API.

`check_run(run)` yields (name, outcome, detail) with outcome "pass", "fail" or "xfail". An xfail is
a check that fails because of a known Spindle quirk listed in `XFAIL`; it is reported apart and
never counted as a pass (when such a check passes, it is an ordinary pass and the entry is stale).
"""

import json
import os

import model_scripts as ms
from client_checks import client_checks
from mcp_runs import ask_checks, mcp_checks

# (agent, script, check) -> (who, why it fails today). who is "spindle" (a Spindle quirk waiting
# for a fix) or "agent" (the agent's own bug: Spindle shows faithfully what the agent sent).
XFAIL = {
    # (claude/api-500-mid/recovered-reply passes with claude-agent-acp 0.101.0: its entry went.)
    ("opencode", "write", "diff"): (
        "agent",
        "opencode reports a new file's write as text only ({\"type\":\"content\",...\"Wrote file "
        "successfully.\"}), with no diff block; its edit tool does send a diff",
    ),
    ("gemini", "shell", "terminal-output"): (
        "agent",
        "Gemini CLI ends a shell tool call with {\"status\":\"completed\",\"content\":[]}: the command's "
        "output is sent to the model only, never to the client (with terminals advertised it runs the command itself all the same: probe.py)",
    ),
    ("fast-agent-anthropic", "write", "diff"): ("agent", "fast-agent's edit_file tool call carries no diff block"),
    ("fast-agent-anthropic", "edit", "diff"): ("agent", "fast-agent's edit_file tool call carries no diff block"),
    ("fast-agent-anthropic", "shell", "tool-completed"): (
        "agent",
        "fast-agent sends the bash tool call once, {\"status\":\"pending\",\"content\":[]}, and never a "
        "tool_call_update: the call stays pending in every client",
    ),
    ("fast-agent-anthropic", "shell", "terminal-output"): ("agent", "see fast-agent-anthropic/shell/tool-completed: no update carries the output"),
    ("fast-agent-anthropic", "shell", "file"): (
        "agent",
        "fast-agent's local shell does not run in the session's cwd (the model saw `cat: notes.txt: No "
        "such file or directory` for a file in the cwd), so a relative path lands elsewhere",
    ),
    ("fast-agent-anthropic", "undo", "agent-changed-files"): (
        "agent",
        "see fast-agent-anthropic/shell/file: its local shell does not run in the session's cwd, so the "
        "turn's `rm notes.txt` deletes nothing there (the new and the appended file are made, and undone)",
    ),
    ("fast-agent", "serve-*", "replay-clean"): (
        "agent",
        "fast-agent answers initialize with protocolVersion 2 (when asked for 2: spindle serve --protocol 2; "
        "both serve and chat ask for 1 by default since issue 25, so without the flag this entry goes stale) and then sends v1 chunks: agent_message_chunk with no messageId; the text is shown "
        "(it continues the streaming message) with a missing_message_id diagnostic",
    ),
    ("fast-agent-anthropic", "serve-*", "replay-clean"): ("agent", "same as fast-agent/serve-*/replay-clean: v2 agreed, chunks without messageId"),
    # modes-history: what the agents keep when a session is opened again.
    # (claude-agent-acp 0.101.0 keeps both: its entries went with the 0.23.1 pin.)
    ("qwen", "modes-history", "resumed-keeps-mode"): (
        "agent",
        "Qwen Code answers session/load (and session/resume) with its default mode, not the one set "
        "before (the session's history is kept, its mode is not)",
    ),
    **{
        ("codex", "modes-history", f"resumed-keeps-{kind}"): (
            "agent",
            f"codex-acp 2.6.0 answers session/load (and session/resume) with its default {kind}, not the one "
            "set before: both build the session's state with AgentMode.getInitialAgentMode(...) (the "
            "INITIAL_AGENT_MODE variable, else \"agent\"; agents-data/spindle/agents/codex/2.6.0/"
            "node_modules/@agentclientprotocol/codex-acp/dist/index.js lines 51573 and 53438), and the model in its answer is the configured "
            "default (gpt-5.5), not gpt-5.6-sol",
        )
        for kind in ("mode", "model")
    },
    ("codex", "modes-history", "resumed"): (
        "agent",
        "the session is loaded and the new prompt answered, but the reply starts with Codex's own "
        "warning, sent as an agent_message_chunk: \"Warning: This session was recorded with model "
        "`gpt-5.6-sol` but is resuming with `gpt-5.5`...\" (the text is in the codex binary the "
        "adapter runs, agents-data/spindle/agents/codex/2.6.0/node_modules/@openai/codex-linux-x64/"
        "vendor/x86_64-unknown-linux-musl/bin/codex; the model it resumes with is the default, see resumed-keeps-model)",
    ),
    **{
        ("gemini", "modes-history", check): (
            "agent",
            "Gemini CLI answers session/load of the session just run (same HOME and cwd; its "
            "~/.gemini/tmp/work/chats/session-*.jsonl holds the exchange) with -32603 \"No previous "
            "sessions found for this project.\"",
        )
        for check in ("resumed", "load-replayed", "resumed-keeps-mode", "resumed-mode-shown")
    },
    ("gemini", "serve-modes-history", "reopened-same-session"): (
        "agent",
        "Gemini CLI answers the server's session/load with -32603 \"No previous sessions found for this "
        "project.\" (as through chat); the server then opens a new agent session in the web session",
    ),
    ("qwen", "prompt-content", "image-reached-model"): (
        "agent",
        "Qwen Code advertises image and receives the image block, but sends its configured model "
        "(qwen3-coder-plus, text-only in its own model table) the text \"[image: image/png]\" instead",
    ),
    ("gemini", "prompt-content", "image-reached-model"): (
        "agent",
        "Gemini CLI advertises image and receives the image block, but its model request carries no "
        "inlineData for it: only the text and the mentioned file's text reach the model",
    ),
    # The client-services variant (client_checks.py). (opencode's serve-client-edit and
    # serve-client-write entries went: it writes the file itself while the review waits, and
    # Spindle now accepts a reviewed write whose file already holds the accepted text.)
    ("opencode", "client-outside", "outside-untouched"): (
        "agent",
        "opencode sends fs/write_text_file for ../outside.txt, Spindle refuses it (-32602, `..` not "
        "accepted), and opencode writes the file itself anyway (it does not wait for the client's "
        "answer, see serve-client-edit) and reports \"Wrote file successfully.\": a client cannot keep "
        "it inside the workspace",
    ),
    ("fast-agent-anthropic", "client-shell", "terminal-in-tool-call"): (
        "agent",
        "fast-agent runs the command in a client terminal (terminal/create, wait_for_exit, output, "
        "release) but its tool call never embeds {\"type\":\"terminal\",\"terminalId\":...}: the output "
        "reaches the tool call only as text once the command ended",
    ),
    # (claude/serve-cancel/next-prompt-taken passes with claude-agent-acp 0.101.0, which ends a
    # prompt received before a cancel as cancelled and drops the cancelled turn's late result
    # (`cancelledThrough`, dist/acp-agent.js); 0.23.1 let the next prompt take that result.)
}


def xfail_reason(agent, script, check):
    """The known failure of a check; a `serve-X` run (X through `spindle serve`) falls back to
    `serve-*` and X's entries, a `client-X` run (the client's fs and terminals advertised) to
    `client-*` and X's, since what an agent sends does not depend on the front end."""
    names = [script]
    base = script
    if base.startswith("serve-"):
        base = base[len("serve-"):]
        names += ["serve-*", base]
    if base.startswith("client-"):
        names += ["client-*", base[len("client-"):]]
    names.append("*")
    for who in (agent, "*"):
        for name in names:
            if XFAIL.get((who, name, check)):
                return XFAIL[(who, name, check)]
    return None


def entries(transcript, kind=None):
    out = (transcript or {}).get("entries") or []
    return [e for e in out if kind is None or e.get("kind") == kind]


def prompt_turn(transcript, k):
    """The turn number of the k-th prompt (the k-th user message the engine made for a sent
    session/prompt: its id starts with `prompt:`). An agent that speaks before the first prompt
    opens a turn of its own, so this is not always k."""
    prompts = [e for e in entries(transcript, "user_message") if str(e.get("id", "")).startswith("prompt:")]
    return prompts[k - 1].get("turn") if len(prompts) >= k else None


def tool_calls(transcript):
    return [e for e in entries(transcript) if e.get("toolCall")]


def texts(transcript, kind):
    return [e.get("text") or "" for e in entries(transcript, kind)]


def main_requests(run):
    """The conversation requests, once each (a request is logged when it starts and when it ends)."""
    seen, out = set(), []
    for r in run["requests"]:
        if r.get("role") == "main" and r["n"] not in seen:
            seen.add(r["n"])
            out.append(r)
    return out


def shown_added_text(entry):
    """The lines the entry's shown diffs add (`diffs`, what the engine draws from either wire shape
    of a diff: v1 `oldText`/`newText` or the `changes` + `patch` of newer adapters), joined, with
    the final newline a file of them ends with."""
    added = [line[1:] for d in entry.get("diffs") or [] for h in d.get("hunks") or [] for line in h.get("lines") or [] if line.startswith("+")]
    return "\n".join(added) + "\n" if added else ""


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def embedded_terminals(transcript, entry):
    """The v2 agent-owned terminals (`terminal_update`; entries of kind `terminal`) that a tool
    call's content embeds (`{"type": "terminal", "terminalId": ...}`): a protocol 2 adapter reports
    its command's output there, not in the v1 `_meta.terminal_*` the engine lifts onto the call."""
    ids = {b.get("terminalId") for b in entry["toolCall"].get("content") or [] if b.get("type") == "terminal"}
    return [e for e in entries(transcript, "terminal") if (e.get("terminal") or {}).get("terminalId") in ids]


def terminal_exit_codes(transcript, entry):
    """The exit codes shown for a tool call: its display-only terminal's (v1 `_meta.terminal_exit`)
    and those of the v2 terminals it embeds."""
    own = [((entry.get("terminal") or {}).get("exitStatus") or {}).get("exitCode")]
    return own + [((t.get("terminal") or {}).get("exitStatus") or {}).get("exitCode") for t in embedded_terminals(transcript, entry)]


def tool_output_text(entry, transcript=None):
    """All the text a tool-call entry carries: its content blocks, raw output and `_meta`, the
    display-only terminal output the engine lifts out of `_meta` (the entry's text), and the output
    of the v2 terminals it embeds (with the transcript)."""
    call = entry["toolCall"]
    parts = [entry.get("text") or ""]
    if transcript is not None:
        parts += [t.get("text") or "" for t in embedded_terminals(transcript, entry)]
    for block in call.get("content") or []:
        inner = block.get("content") if isinstance(block.get("content"), dict) else block
        if isinstance(inner, dict) and inner.get("text"):
            parts.append(inner["text"])
        if block.get("newText"):
            parts.append(block["newText"])
    parts.append(json.dumps(call.get("rawOutput")) if call.get("rawOutput") is not None else "")
    parts.append(json.dumps(call.get("_meta")) if call.get("_meta") else "")
    return "\n".join(parts)


def late_updates(record_lines):
    """The session updates an agent sent after the turn before them had ended: [(line number,
    update)]. A protocol 1 turn ends with the response to its session/prompt (`stopReason`); a
    protocol 2 response only accepts the prompt (`messageId`) and the turn ends with the
    `state_update` to `idle`. `record_lines` are the recording's lines."""
    prompts, ended, accepted, late = set(), False, False, []
    for number, line in enumerate(record_lines, 1):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue  # not JSON-RPC (an agent that prints on its ACP stdout): no update
        if not isinstance(msg, dict):
            continue
        if "sent" in msg:
            sent = msg["sent"] or {}
            if sent.get("method") == "session/prompt":
                prompts.add(json.dumps(sent.get("id")))
                ended = accepted = False
            continue
        update = (msg.get("params") or {}).get("update") or {} if msg.get("method") == "session/update" else {}
        if "id" in msg and "method" not in msg and json.dumps(msg["id"]) in prompts:
            result = msg.get("result") or {}
            accepted = "stopReason" not in result and "messageId" in result
            ended = not accepted
        elif accepted and update.get("sessionUpdate") == "state_update" and update.get("state") == "idle":
            ended, accepted = True, False
        elif ended and msg.get("method") == "session/update":
            late.append((number, (msg.get("params") or {}).get("update") or {}))
    return late


def late_update_problems(transcript, record_lines):
    """Whether the updates sent after a turn ended are in the transcript on the right entries: the
    last usage_update is the transcript's usage, a tool_call_update's status is on the tool call of
    its toolCallId, the last available_commands_update is the transcript's command list, late
    text is in a message of its kind. Returns
    (number of late updates, [problem])."""
    late = late_updates(record_lines)
    problems = []
    calls = {(e.get("toolCall") or {}).get("toolCallId"): e["toolCall"] for e in entries(transcript) if e.get("toolCall")}
    last_usage, last_commands, statuses = None, None, {}
    for number, update in late:
        tag = update.get("sessionUpdate")
        if tag == "usage_update":
            last_usage = (number, update)
        elif tag == "available_commands_update":
            last_commands = (number, update)
        elif tag in ("tool_call", "tool_call_update"):
            call = calls.get(update.get("toolCallId"))
            if call is None:
                problems.append(f"line {number}: tool call {update.get('toolCallId')!r} is not in the transcript")
            elif update.get("status"):
                statuses[update.get("toolCallId")] = (number, update["status"])
        elif tag in ("agent_message_chunk", "agent_thought_chunk"):
            text = ((update.get("content") or {}).get("text")) or ""
            kind = "agent_message" if tag == "agent_message_chunk" else "agent_thought"
            if text and not any(text in (e.get("text") or "") for e in entries(transcript, kind)):
                problems.append(f"line {number}: late {tag} {text[:60]!r} is in no {kind} entry")
    for tool_call_id, (number, status) in statuses.items():
        if calls[tool_call_id].get("status") != status:
            problems.append(f"line {number}: tool call {tool_call_id!r} has status {calls[tool_call_id].get('status')!r}, the late update said {status!r}")
    if last_usage:
        number, update = last_usage
        usage = (transcript or {}).get("usage") or {}
        for field in ("used", "size"):
            if update.get(field) is not None and usage.get(field) != update[field]:
                problems.append(f"line {number}: usage {field} is {usage.get(field)!r}, the late usage_update said {update[field]!r}")
    if last_commands:
        number, update = last_commands
        want = [c.get("name") for c in update.get("availableCommands") or []]
        have = [c.get("name") for c in (transcript or {}).get("commands") or []]
        if want != have:
            problems.append(f"line {number}: commands {have[:5]}..., the late update listed {want[:5]}...")
    return len(late), problems


def check_run(run):
    """The checks of a run of `spindle chat` or (run["mode"] == "serve") of `spindle serve`."""
    agent, script = run["agent"].name, run["script"]
    serve = run.get("mode") == "serve"
    t = run["transcript"]
    results = []

    def add(name, ok, detail=""):
        if ok:
            results.append((name, "pass", ""))
            return
        known = xfail_reason(agent, run.get("label") or (("serve-" + script) if serve else script), name)
        results.append((name, "xfail", f"[{known[0]}] {known[1]}") if known else (name, "fail", detail))

    if t is None:
        tail = run["stderr"].strip().splitlines()[-3:]
        add("transcript", False, f"no recording to replay (exit {run['exit']}; stderr: {' | '.join(tail)})")
        return results
    state = t.get("state") or {}
    stop = state.get("stopReason")
    reply = (t.get("finalReply") or "").strip()
    stderr_tail = " | ".join(run["stderr"].strip().splitlines()[-3:])
    api_paths = sorted({r["path"] for r in run["requests"]})
    unknown = sorted({r["path"] for r in run["requests"] if r.get("status") == 404})
    offline_detail = f"model API requests: {len(run['requests'])} ({', '.join(api_paths)[:200]})"

    # A tool call the agent names (`name`: protocol 2's field, which claude-agent-acp 0.101.0 sends
    # in protocol 1 too) is shown under that name: the entry's `toolName`, which chat prints beside
    # the title and the page in its tool-name span.
    named = [c for c in tool_calls(t) if isinstance(c["toolCall"].get("name"), str)]
    if named:
        wrong = [(c["toolCall"]["name"], c.get("toolName")) for c in named if c.get("toolName") != c["toolCall"]["name"]]
        add("tool-name-shown", not wrong, f"(wire name, shown name) {wrong}")

    # Every scripted model turn must have reached the emulator (fast-agent calls no model).
    if run["agent"].api != "none":
        add("model-api-reached", bool(main_requests(run)), f"the agent never called the emulator; {offline_detail}; 404s: {unknown}; stderr: {stderr_tail}")

    if script == "cancel":
        # Through serve the cancelled turn is turn 1 and a second prompt follows (serve_runner).
        if serve:
            first = prompt_turn(t, 1)
            stop = next((x.get("stopReason") for x in t.get("turns") or [] if x.get("turn") == first), None)
        else:
            add("exit", run["exit"] == 124, f"exit {run['exit']}, want 124 (--timeout cancels the turn); stderr: {stderr_tail}")
        add("stop-reason", stop == "cancelled", f"stopReason {stop!r}, want 'cancelled'")
        partial = " ".join(e.get("text") or "" for e in entries(t, "agent_message") if not serve or e.get("turn") == prompt_turn(t, 1))
        add("partial-text", partial.startswith("slow0") and len(partial) < len(ms.SLOW_TEXT), f"{len(partial)} chars of the slow answer")
    elif script in ("api-429", "api-500-mid"):
        ended = run["exit"] in (0, 1)
        add("turn-ends", ended, f"exit {run['exit']}, want 0 (recovered) or 1 (error reported); stderr: {stderr_tail}")
        if run["exit"] == 0:
            add("recovered-reply", ms.RECOVERED_REPLY in reply, f"reply {reply[:120]!r}")
        elif run["exit"] == 1:
            add("error-reported", bool(state.get("error")) or "error" in run["stderr"].lower(), f"state {state}")
        if script == "api-500-mid" and run["exit"] == 0:
            shown = " ".join(texts(t, "agent_message"))
            add("no-duplicated-partial", shown.count("This answer") <= 1, f"agent text {shown[:160]!r}")
    elif script == "reject":
        # Some agents end the whole turn `cancelled` when a permission is rejected (Codex's
        # "abort"), others carry on and let the model answer: both are faithful outcomes.
        add("exit", (run["exit"], stop) in ((0, "end_turn"), (130, "cancelled")), f"exit {run['exit']} / stopReason {stop!r}, want 0/end_turn or 130/cancelled; stderr: {stderr_tail}")
    else:
        add("exit", run["exit"] == 0, f"exit {run['exit']}, want 0; stderr: {stderr_tail}")
        add("stop-reason", stop == "end_turn", f"stopReason {stop!r}")

    diagnostics = t.get("diagnostics") or []
    if script == "usage-partial" and run["record"] and any('"used":null' in line.replace(" ", "") for line in open(run["record"])):
        # A partly malformed update: the diagnostic must say what was ignored (the `used` field).
        add("diagnostic-names-used", any("used" in d.get("message", "") for d in diagnostics), f"diagnostics {diagnostics}")
    elif run["replay_exit"] == 0 or not diagnostics:
        add("replay-clean", True)
    else:
        add("replay-clean", False, f"spindle replay diagnostics: {json.dumps(diagnostics)[:400]}")

    empty = [e["id"] for e in entries(t) if e.get("kind") in ("agent_message", "agent_thought") and not (e.get("text") or "").strip()]
    add("no-empty-message", not empty, f"empty message entries {empty}")

    if script in ("plain", "usage-partial"):
        # usage: when the agent sent usage_update, the transcript's usage holds what it said.
        sent = []
        with open(run["record"] or os.devnull) as f:
            for line in f:
                if '"usage_update"' in line:
                    msg = json.loads(line)
                    update = ((msg.get("params") or {}).get("update")) or {}
                    if update.get("sessionUpdate") == "usage_update":
                        sent.append(update)
        if sent:
            usage = t.get("usage") or {}
            last = sent[-1]
            add("usage", usage.get("size") == last.get("size") and (last.get("used") is None or usage.get("used") == last.get("used")), f"usage {usage} after usage_update {json.dumps(last)}")

    # Updates that arrive after the turn ended (seen through `spindle serve`, which keeps the
    # session; `spindle chat --prompt` exits at the response) land on the right entries.
    if run["record"]:
        with open(run["record"]) as f:
            count, problems = late_update_problems(t, f.readlines())
        if count:
            add("late-updates-applied", not problems, f"{count} updates after the turn ended: {'; '.join(problems)[:400]}")

    calls = tool_calls(t)
    if script == "plain" and run["agent"].api == "none":
        add("reply", reply == run["prompt"], f"reply {reply[:120]!r}, want the prompt echoed")
    elif script in ("plain", "usage-partial"):
        add("reply", reply == ms.PLAIN_TEXT, f"reply {reply[:120]!r}")
    elif script == "thinking":
        thoughts = "".join(texts(t, "agent_thought")).strip()
        add("thought", ms.THOUGHT_TEXT in thoughts, f"thoughts {thoughts[:120]!r}")
        add("reply", reply == ms.THINKING_REPLY, f"reply {reply[:120]!r}")
        add("thought-not-in-reply", ms.THOUGHT_TEXT not in reply, "the thought leaked into the reply")
    elif script == "long":
        add("reply", reply == ms.LONG_TEXT, f"reply of {len(reply)} chars, want {len(ms.LONG_TEXT)}; starts {reply[:60]!r}")
    elif script == "read":
        saw = any(ms.NOTES_CONTENT.strip() in json.dumps(r.get("body")) for r in run["requests"] if r.get("role") == "main" and r.get("body"))
        add("tool-result-sent", saw, "the file content never reached the model in a later request")
        add("tool-call", any(c["toolCall"].get("status") == "completed" for c in calls), f"tool calls {[c['toolCall'].get('status') for c in calls]}")
        add("reply", reply == ms.READ_REPLY, f"reply {reply[:120]!r}")
    elif script in ("write", "edit", "reject"):
        path = os.path.join(run["work"], "new.txt" if script != "edit" else "edit.txt")
        now = read(path)
        if script == "write":
            add("file", now == ms.WRITE_CONTENT, f"new.txt is {now!r}")
        elif script == "edit":
            want = ms.EDIT_BEFORE.replace(ms.EDIT_OLD, ms.EDIT_NEW)
            add("file", now == want, f"edit.txt is {now!r}")
        else:
            add("file-untouched", now is None, f"new.txt exists after the rejection: {now!r}")
        shown = [shown_added_text(c) for c in calls]
        if script == "write":
            add("diff", ms.WRITE_CONTENT in shown, f"added lines of the shown diffs {shown}")
        elif script == "edit":
            add("diff", any(ms.EDIT_NEW in s for s in shown), f"added lines of the shown diffs {shown}")
        statuses = [c["toolCall"].get("status") for c in calls]
        perms = [c.get("permission") for c in calls if c.get("permission")]
        outcomes = [((p or {}).get("outcome") or {}) for p in perms]
        kinds = {o.get("optionId"): o.get("kind") for p in perms for o in p.get("options") or []}
        if script == "reject":
            add("permission-asked", bool(perms), "the agent asked no permission before writing")
            add("permission-rejected", any(o.get("outcome") == "cancelled" or str(kinds.get(o.get("optionId"))).startswith("reject") for o in outcomes), f"outcomes {outcomes}")
            add("tool-not-completed", "completed" not in statuses, f"tool call statuses {statuses}")
        else:
            add("tool-completed", "completed" in statuses, f"tool call statuses {statuses}")
            if perms:
                once = [o for p in perms for o in p.get("options") or [] if o.get("kind") == "allow_once"]
                if once:
                    chosen = [kinds.get(o.get("optionId")) for o in outcomes]
                    add("yes-allows-once", all(k == "allow_once" for k in chosen), f"--yes chose {chosen} while allow_once was offered")
                add("permission-approved", any(o.get("outcome") == "selected" and str(kinds.get(o.get("optionId"))).startswith("allow") for o in outcomes), f"outcomes {outcomes}")
        want_reply = {"write": ms.WRITE_REPLY, "edit": ms.EDIT_REPLY, "reject": ms.REJECT_REPLY}[script]
        if script == "reject" and (len(main_requests(run)) == 1 or stop == "cancelled"):
            # The agent ended the turn on the rejection without asking the model again.
            add("reply", reply == "", f"reply {reply[:120]!r} but the model was never asked again")
        else:
            add("reply", reply == want_reply, f"reply {reply[:120]!r}")
    elif script == "shell":
        add("file", read(os.path.join(run["work"], "shell.txt")) == ms.SHELL_OUTPUT + "\n", "shell.txt was not written by the command")
        add("tool-completed", any(c["toolCall"].get("status") == "completed" for c in calls), f"tool calls {[c['toolCall'].get('status') for c in calls]}")
        add("terminal-output", any(ms.SHELL_OUTPUT in tool_output_text(c, t) for c in calls), "the command output is in no tool call of the transcript")
        if agent in ("claude", "codex"):
            # Both follow the display-only terminal convention Spindle asks for with
            # clientCapabilities._meta.terminal_output: the engine lifts it into the entry's terminal.
            exits = [code for c in calls for code in terminal_exit_codes(t, c)]
            add("terminal-exit-shown", 0 in exits, f"terminal exit codes on the tool calls: {exits}")
        add("reply", reply == ms.SHELL_REPLY, f"reply {reply[:120]!r}")
    elif script == "write-outside":
        add("reply", reply == ms.OUTSIDE_REPLY, f"reply {reply[:120]!r}")
    elif script in ("mcp", "elicit", "ask"):
        want_reply = {"mcp": ms.MCP_REPLY, "elicit": ms.ELICIT_REPLY, "ask": ms.ASK_REPLY}[script]
        add("reply", reply == want_reply, f"reply {reply[:120]!r}")
        if script == "ask":
            for name, passed, detail in ask_checks(run):
                add(name, passed, detail)
    if run.get("mcp"):
        for name, passed, detail in mcp_checks(run):
            if passed and name == "mcp-tool-offered":
                results.append((name, "pass", detail))  # the agent's name for the tool, printed
            else:
                add(name, passed, detail)
    if run.get("variant") == "client":
        for name, passed, detail in client_checks(run, script):
            add(name, passed, detail)
    return results
