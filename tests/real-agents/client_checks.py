"""The checks of the "client services" variant: the read/write/edit/shell scripts run again with
Spindle's own file system and terminals advertised (`spindle chat --fs allow --terminals on`,
`spindle serve` with the same flags), and `write-outside` (the model writes next to the working
directory, which the client must refuse).

They read the recording: the agent's `fs/*` and `terminal/*` requests, the client's answers to
them (`{"sent": ...}` lines), and the local lines of the client's own terminals
(`{"local":{"terminalOutput"|"terminalExit":...}}`, see crates/spindle-wire/src/host.rs); the
files on disk; and the transcript. `client_checks(run)` yields (name, ok, detail); `check_run`
(checks.py) turns them into outcomes with the known failures applied.
"""

import json
import os

import model_scripts as ms

CLIENT_PREFIX = "client-"


def wire_lines(record):
    """The recording as [(kind, message)], kind "agent", "sent" or "local"."""
    out = []
    if not record or not os.path.exists(record):
        return out
    with open(record) as f:
        for line in f:
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "sent" in msg:
                out.append(("sent", msg["sent"] or {}))
            elif "local" in msg:
                out.append(("local", msg["local"] or {}))
            else:
                out.append(("agent", msg))
    return out


def exchanges(lines, method):
    """The agent's requests of `method`, each with the client's answer: [(params, answer)], the
    answer a {"result": ...} or {"error": ...} dict, None when the client never answered."""
    pending, out = {}, []
    for kind, msg in lines:
        if kind == "agent" and msg.get("method") == method and "id" in msg:
            pending[json.dumps(msg["id"])] = len(out)
            out.append([msg.get("params") or {}, None])
        elif kind == "sent" and "method" not in msg and "id" in msg:
            index = pending.pop(json.dumps(msg["id"]), None)
            if index is not None:
                out[index][1] = {k: msg[k] for k in ("result", "error") if k in msg}
    return [tuple(x) for x in out]


def exchanges_sent(lines, method):
    """The client's requests of `method` with the agent's answers: [(params, answer)]."""
    pending, out = {}, []
    for kind, msg in lines:
        if kind == "sent" and msg.get("method") == method and "id" in msg:
            pending[json.dumps(msg["id"])] = len(out)
            out.append([msg.get("params") or {}, None])
        elif kind == "agent" and "method" not in msg and "id" in msg:
            index = pending.pop(json.dumps(msg["id"]), None)
            if index is not None:
                out[index][1] = {k: msg[k] for k in ("result", "error") if k in msg}
    return [tuple(x) for x in out]


def client_methods_used(lines):
    """The fs/* and terminal/* methods the agent called, in first-use order."""
    seen = []
    for kind, msg in lines:
        method = msg.get("method") if kind == "agent" else None
        if method and method.split("/")[0] in ("fs", "terminal") and method not in seen:
            seen.append(method)
    return seen


def advertised(lines):
    """The clientCapabilities of the recorded initialize request."""
    for kind, msg in lines:
        if kind == "sent" and msg.get("method") == "initialize":
            return (msg.get("params") or {}).get("clientCapabilities") or {}
    return {}


def inside(work, path):
    real_work = os.path.realpath(work)
    real = os.path.realpath(path if os.path.isabs(path) else os.path.join(work, path))
    return real == real_work or real.startswith(real_work + os.sep)


def ok(answer):
    return isinstance(answer, dict) and "result" in answer


def short(value, limit=240):
    return json.dumps(value)[:limit]


def terminal_texts(lines):
    """terminalId -> (output text, [exit records]) from the local lines."""
    out = {}
    for kind, msg in lines:
        if kind != "local":
            continue
        for name, body in msg.items():
            tid = (body or {}).get("terminalId")
            text, exits = out.setdefault(tid, ["", []])
            if name == "terminalOutput":
                out[tid][0] = text + ((body or {}).get("text") or "")
            elif name == "terminalExit":
                exits.append(body)
    return out


def client_checks(run, base):
    """Checks of a client-services run of the base script `base` (read, write, edit, shell,
    write-outside)."""
    lines = wire_lines(run["record"])
    caps = advertised(lines)
    fs_caps = caps.get("fs") or {}
    yield (
        "client-services-advertised",
        fs_caps.get("readTextFile") is True and fs_caps.get("writeTextFile") is True and caps.get("terminal") is True,
        f"initialize clientCapabilities {short(caps)}",
    )
    used = client_methods_used(lines)
    reads, writes = exchanges(lines, "fs/read_text_file"), exchanges(lines, "fs/write_text_file")
    work = run["work"]

    def about(pairs, name):
        return [(p, a) for p, a in pairs if os.path.basename(str(p.get("path", ""))) == name]

    entries = (run["transcript"] or {}).get("entries") or []
    # How the transcript shows the client's file service (the engine's view of the requests).
    shown_writes = [d for e in entries for d in e.get("diffs") or [] if d.get("write")]
    shown_reads = [path for e in entries for path in e.get("reads") or []]

    def write_shown(name, statuses):
        return [d for d in shown_writes if os.path.basename(str(d.get("path"))) == name and d["write"].get("status") in statuses]

    if base == "read":
        hits = about(reads, "notes.txt")
        yield "fs-read-request", bool(hits), f"client methods used: {used}"
        yield "fs-read-answered", any(ok(a) and ms.NOTES_CONTENT.strip() in str((a["result"] or {}).get("content")) for _, a in hits), f"answers {short([a for _, a in hits])}"
        yield "read-shown", any(os.path.basename(p) == "notes.txt" for p in shown_reads), f"reads on the transcript's tool calls: {shown_reads}"
    elif base == "edit":
        hits_read, hits_write = about(reads, "edit.txt"), about(writes, "edit.txt")
        want = ms.EDIT_BEFORE.replace(ms.EDIT_OLD, ms.EDIT_NEW)
        if "read" in run["agent"].client_fs:
            yield "fs-read-request", any(ok(a) and ms.EDIT_OLD in str((a["result"] or {}).get("content")) for _, a in hits_read), f"client methods used: {used}; read answers {short([a for _, a in hits_read])}"
        yield "fs-write-request", any(p.get("content") == want for p, _ in hits_write), f"writes of edit.txt: {short([p.get('content') for p, _ in hits_write])}"
        yield "fs-write-done", any(ok(a) for p, a in hits_write if p.get("content") == want), f"answers {short([a for _, a in hits_write])}"
        yield "write-shown", bool(write_shown("edit.txt", ("written",))), f"client writes on the transcript's tool calls: {short(shown_writes, 400)}"
    elif base == "write":
        hits = about(writes, "new.txt")
        yield "fs-write-request", any(p.get("content") == ms.WRITE_CONTENT for p, _ in hits), f"client methods used: {used}; writes of new.txt: {short([p.get('content') for p, _ in hits])}"
        yield "fs-write-done", any(ok(a) for p, a in hits if p.get("content") == ms.WRITE_CONTENT), f"answers {short([a for _, a in hits])}"
        yield "write-shown", bool(write_shown("new.txt", ("written",))), f"client writes on the transcript's tool calls: {short(shown_writes, 400)}"
    elif base == "write-outside":
        outside = [(p, a) for p, a in writes if not inside(work, str(p.get("path", "")))]
        target = os.path.join(os.path.dirname(work), "outside.txt")
        yield "outside-request", bool(outside), f"client methods used: {used}; no fs/write_text_file outside {work}"
        yield "outside-refused", bool(outside) and all(a is not None and "error" in a for _, a in outside), f"answers {short([a for _, a in outside])}"
        if outside:
            refused = write_shown("outside.txt", ("failed", "rejected"))
            yield "refusal-shown", bool(refused) and all(d["write"].get("error") for d in refused), f"client writes on the transcript's tool calls: {short(shown_writes, 400)}"
        exists = os.path.exists(target)
        yield "outside-untouched", not exists, f"{target} was written" + (" by the agent itself (no request reached the client)" if not outside else "")
    elif base == "shell":
        created = exchanges(lines, "terminal/create")
        ids = [(a["result"] or {}).get("terminalId") for _, a in created if ok(a)]
        yield "terminal-created", bool(ids), f"client methods used: {used}; terminal/create answers {short([a for _, a in created])}"
        texts = terminal_texts(lines)
        output = "".join(texts.get(tid, ["", []])[0] for tid in ids)
        yield "terminal-output-recorded", ms.SHELL_OUTPUT in output, f"local terminalOutput text {output[:160]!r}"
        exits = [e for tid in ids for e in texts.get(tid, ["", []])[1]]
        yield "terminal-exit-recorded", any(e.get("exitCode") == 0 for e in exits), f"local terminalExit records {short(exits)}"
        shown = []
        for entry in (run["transcript"] or {}).get("entries") or []:
            call = entry.get("toolCall") or {}
            embeds = [b.get("terminalId") for b in call.get("content") or [] if b.get("type") == "terminal"]
            if set(embeds) & set(ids):
                shown.append(json.dumps(entry.get("terminal")) + (entry.get("text") or ""))
        yield "terminal-in-tool-call", any(ms.SHELL_OUTPUT in s for s in shown), f"tool calls embedding the client terminal: {len(shown)}; shown {short(shown)}"
