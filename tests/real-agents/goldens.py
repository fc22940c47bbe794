#!/usr/bin/env python3
"""Replays the golden recordings in recordings/ with `spindle replay` (no agent, no emulator) and
checks that each still builds the transcript the script made: the stop reason, the final reply and,
per script, the thought, the tool call with its diff, the permission outcome.

Prints one line per check and `N passed, M failed`. Known quirks (checks.XFAIL) count apart.
Usage: goldens.py [--spindle PATH]
"""

import argparse
import json
import os
import subprocess
import sys

import model_scripts as ms
from checks import late_update_problems, shown_added_text, xfail_reason

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

REPLIES = {
    "plain": ms.PLAIN_TEXT,
    "usage-partial": ms.PLAIN_TEXT,
    "thinking": ms.THINKING_REPLY,
    "read": ms.READ_REPLY,
    "write": ms.WRITE_REPLY,
    "edit": ms.EDIT_REPLY,
    "shell": ms.SHELL_REPLY,
    "api-429": ms.RECOVERED_REPLY,
}


def checks_for(agent, script, t, record_lines):
    count, problems = late_update_problems(t, record_lines)
    if count:
        yield "late-updates-applied", not problems, f"{count} updates after the turn ended: {problems}"
    state = t.get("state") or {}
    reply = (t.get("finalReply") or "").strip()
    entries = t.get("entries") or []
    diagnostics = t.get("diagnostics") or []
    if script == "usage-partial" and diagnostics:
        yield "diagnostic-names-used", any("used" in d.get("message", "") for d in diagnostics), f"diagnostics {diagnostics}"
    else:
        yield "replay-clean", not diagnostics, f"diagnostics {diagnostics}"
    if script == "usage-partial" and agent == "claude":
        # The last usage_update's size is kept, and its used unless null (claude-agent-acp 0.23.1
        # sent used: null when the model's usage lacked the cache counts; 0.101.0 sends a number).
        updates = [json.loads(line).get("params", {}).get("update", {}) for line in record_lines if '"usage_update"' in line]
        last = updates[-1] if updates else {}
        usage = t.get("usage") or {}
        want_used = last.get("used") if last.get("used") is not None else usage.get("used")
        yield "usage", bool(last) and usage.get("size") == last.get("size") and usage.get("used") == want_used, f"usage {usage} (the last usage_update had used {last.get('used')!r}, size {last.get('size')!r})"
    yield "turn-finished", not state.get("turnOpen"), f"state {state}"
    recovered = script != "api-429" or state.get("stopReason") == "end_turn"  # Codex reports the 429
    if script in REPLIES and agent != "fast-agent" and recovered:
        yield "reply", REPLIES[script] in reply, f"reply {reply[:100]!r}"
    if script == "thinking":
        thoughts = "".join(e.get("text") or "" for e in entries if e.get("kind") == "agent_thought")
        yield "thought", ms.THOUGHT_TEXT in thoughts, f"thoughts {thoughts[:100]!r}"
    if script in ("write", "edit"):
        shown = [shown_added_text(e) for e in entries]
        want = ms.WRITE_CONTENT if script == "write" else ms.EDIT_NEW
        yield "diff", any(want in s for s in shown), f"added lines of the shown diffs {[s for s in shown if s]}"
    if script == "reject":
        perms = [e["permission"] for e in entries if e.get("permission")]
        yield "permission-outcome", all(p.get("outcome") for p in perms), f"permissions {perms}"


def golden_results(spindle):
    """(label, outcome, detail) for every check of every golden recording."""
    root = os.path.join(HERE, "recordings")
    for agent in sorted(os.listdir(root)):
        for name in sorted(os.listdir(os.path.join(root, agent))):
            script = name[: -len(".jsonl")]
            out = subprocess.run([spindle, "replay", os.path.join(root, agent, name)], capture_output=True, text=True)
            try:
                t = json.loads(out.stdout)
            except ValueError:
                yield f"golden {agent}/{script}/replay", "fail", f"exit {out.returncode}: {out.stderr.strip()[:200]}"
                continue
            with open(os.path.join(root, agent, name)) as f:
                record_lines = f.readlines()
            for check, ok, detail in checks_for(agent, script, t, record_lines):
                known = None if ok else xfail_reason(agent, script, check)
                if ok:
                    yield f"golden {agent}/{script}/{check}", "pass", ""
                elif known:
                    yield f"golden {agent}/{script}/{check}", "xfail", f"[{known[0]}] {known[1]}"
                else:
                    yield f"golden {agent}/{script}/{check}", "fail", detail


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spindle", default=os.path.join(REPO, "target", "debug", "spindle"))
    args = parser.parse_args()
    passed = failed = xfailed = 0
    for label, outcome, detail in golden_results(args.spindle):
        if outcome == "pass":
            passed += 1
            print(f"ok   {label}")
        elif outcome == "xfail":
            xfailed += 1
            print(f"XFAIL {label}: {detail[:160]}")
        else:
            failed += 1
            print(f"FAIL {label}: {detail}")
    if xfailed:
        print(f"{xfailed} expected failures (not counted)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
