"""`undo`: checkpoints with an agent that changes files with its own tools (not the client's).

One interactive `spindle chat` (checkpoints on, the default; `--fs off --terminals off`, so the
agent writes, edits and runs commands itself) is fed on stdin one line at a time, each once the
chat has answered the one before:

0. `/checkpoints` (none yet): the session is up; the work directory then is "before the turn";
1. the prompt: the scripted model (model_scripts.py `undo`) creates made.txt, appends a line to
   edit.txt and deletes notes.txt (`rm`), then answers; the chat prints `[end_turn ...]`;
2. `/undo`, then `y` once the diff and the y/N question are shown: the work directory must be
   exactly as before the turn (every file's bytes, no file more or less);
3. `/undo` and `y` again: the restore is undone, the directory is as the turn left it.

The checkpoints live in the data directory (XDG_DATA_HOME of the run's HOME), never in the work
directory: `no-spindle-files` checks that. What the chat printed is kept as `chat.out`.
"""

import json
import os
import subprocess
import threading
import time

import model_scripts as ms
from checks import xfail_reason

UNDO_SCRIPTS = ["undo"]
# Seconds to wait for each answer of the chat (the turn: startup and five model calls).
TURN_WAIT = 150
STEP_WAIT = 60
QUESTION = "[y/N]"
RESTORED = "restored the files as they were"
NO_CHECKPOINTS = "no checkpoints yet"


def tree(root):
    """{relative path: bytes} of every file under root (symbolic links as their target text)."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                files[rel] = ("link:" + os.readlink(path)).encode()
            else:
                with open(path, "rb") as f:
                    files[rel] = f.read()
    return files


def tree_diff(want, got):
    """What differs between two trees, for a check's detail ('' when equal)."""
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    changed = sorted(p for p in set(want) & set(got) if want[p] != got[p])
    parts = []
    if missing:
        parts.append(f"missing {missing}")
    if extra:
        parts.append(f"extra {extra}")
    if changed:
        parts.append("changed " + ", ".join(f"{p}: {got[p][:80]!r} (want {want[p][:80]!r})" for p in changed))
    return "; ".join(parts)


class ChatSession:
    """A `spindle chat` whose stdin is written line by line; stdout and stderr read together."""

    def __init__(self, args, cwd, env, log_path):
        self.proc = subprocess.Popen(
            args, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        self.log = open(log_path, "w")
        self.text = ""
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.log.write(line)
            self.log.flush()
            with self.cond:
                self.text += line
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait_for(self, marker, start, seconds):
        """The output from `start` up to and including the first `marker` after it, or None when
        it did not come within `seconds` (or the chat exited)."""
        deadline = time.monotonic() + seconds
        with self.cond:
            while True:
                at = self.text.find(marker, start)
                if at >= 0:
                    return self.text[start : at + len(marker)]
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self.reader.is_alive()):
                    return None
                self.cond.wait(min(left, 1.0))

    def finish(self):
        """Closes stdin and waits for the exit: the exit code."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout=STEP_WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.reader.join(timeout=10)
        self.log.close()
        return code


def undo_checks(spindle, work, env, command, run_dir, host_flags):
    """Drives the chat (see the module doc); returns [(name, ok, detail)]."""
    checks = []
    chat = ChatSession(
        [spindle, "chat", *host_flags, "--yes", "--", *command], work, env, os.path.join(run_dir, "chat.out")
    )
    try:
        # Answered once the session is up: what the agent wrote at its start (fast-agent's
        # .fast-agent/ lock files) is in the checkpoint, so "before" is taken after it.
        chat.send("/checkpoints")
        listed = chat.wait_for(NO_CHECKPOINTS, 0, TURN_WAIT)
        checks.append(("no-checkpoint-yet", listed is not None, f"/checkpoints said: {chat.text[-400:]!r}"))
        if listed is None:
            return checks
        before = tree(work)
        chat.send("Create made.txt, append to edit.txt and delete notes.txt.")
        turn = chat.wait_for("[end_turn", 0, TURN_WAIT)
        checks.append(("turn-ended", turn is not None, f"no [end_turn] within {TURN_WAIT}s; chat said: {chat.text[-600:]!r}"))
        if turn is None:
            return checks
        after_turn = tree(work)
        want_edit = ms.EDIT_BEFORE.replace("gamma", "gamma\n" + ms.UNDO_APPENDED, 1).encode()
        changed = (
            after_turn.get(ms.UNDO_NEW_PATH) == ms.UNDO_NEW_CONTENT.encode()
            and after_turn.get("edit.txt") == want_edit
            and "notes.txt" not in after_turn
        )
        checks.append(("agent-changed-files", changed, f"after the turn: {tree_diff(before, after_turn) or 'nothing changed'}"))
        checks.append(("no-spindle-files", not any(p.startswith(".spindle") or "/.git/" in "/" + p for p in after_turn), f"files after the turn: {sorted(after_turn)}"))

        mark = len(chat.text)
        chat.send("/undo")
        shown = chat.wait_for(QUESTION, mark, STEP_WAIT)
        diff_ok = shown is not None and all(s in shown for s in (ms.UNDO_NEW_PATH, "edit.txt", "notes.txt", "before turn 1"))
        checks.append(("undo-diff-shown", diff_ok, f"before the question the chat said: {(shown or chat.text[mark:])[-600:]!r}"))
        if shown is None:
            return checks
        mark = len(chat.text)
        chat.send("y")
        restored = chat.wait_for(RESTORED, mark, STEP_WAIT)
        checks.append(("undo-restored", restored is not None, f"after y the chat said: {chat.text[mark:][-400:]!r}"))
        # The note's line is whole once its newline came.
        chat.wait_for("\n", mark + len(restored or ""), STEP_WAIT)
        after_undo = tree(work)
        diff = tree_diff(before, after_undo)
        checks.append(("undo-exact", not diff, f"after /undo, against before the turn: {diff}"))

        mark = len(chat.text)
        chat.send("/undo")
        shown = chat.wait_for(QUESTION, mark, STEP_WAIT)
        checks.append(("redo-asked", shown is not None and "before restore 1" in shown, f"the second /undo said: {(shown or chat.text[mark:])[-400:]!r}"))
        if shown is None:
            return checks
        mark = len(chat.text)
        chat.send("y")
        restored = chat.wait_for(RESTORED, mark, STEP_WAIT)
        chat.wait_for("\n", mark + len(restored or ""), STEP_WAIT)
        after_redo = tree(work)
        diff = tree_diff(after_turn, after_redo)
        checks.append(("undo-of-restore", restored is not None and not diff, f"after the second /undo, against after the turn: {diff or 'no restore note: ' + repr(chat.text[mark:][-300:])}"))
    finally:
        code = chat.finish()
        checks.append(("exit", code == 0, f"exit {code}; chat said: {chat.text[-300:]!r}"))
    return checks


def undo_run(spindle, agent, label, root):
    """Runs the `undo` script for an agent; a run record like feature_runs.feature_run's."""
    from runner import agent_env, host_flags, seed_work, start_emulator

    run_dir = os.path.join(root, agent.name, label)
    home, work = os.path.join(run_dir, "home"), os.path.join(run_dir, "work")
    os.makedirs(home, exist_ok=True)
    seed_work(work)
    log = os.path.join(run_dir, "emulator.jsonl")
    emulator, port = start_emulator("undo", work, log)
    started = time.monotonic()
    try:
        command, env = agent_env(agent, home, work, run_dir, f"http://127.0.0.1:{port}", "undo")
        checks = undo_checks(spindle, work, env, command, run_dir, host_flags(spindle, "chat", False))
    finally:
        emulator.terminate()
        emulator.wait(timeout=10)
    results = []
    for name, passed, detail in checks:
        if passed:
            results.append((name, "pass", ""))
            continue
        known = xfail_reason(agent.name, label, name)
        results.append((name, "xfail", f"[{known[0]}] {known[1]}") if known else (name, "fail", detail))
    with open(os.path.join(run_dir, "checks.json"), "w") as f:
        json.dump(checks, f, indent=1)
    return {"agent": agent, "script": label, "label": label, "mode": "feature", "dir": run_dir, "work": work, "exit": None,
            "elapsed": time.monotonic() - started, "transcript": None, "record": None, "results": results}
