#!/usr/bin/env python3
"""Runs every production agent x model script through `spindle chat --prompt --record` and
through `spindle serve`'s HTTP API (`serve-<script>`, see serve_runner.py), checks the outcome, and
prints one line per check and `N passed, M failed` (xfails apart).

A chat run: fresh HOME and work directory, the emulator on a free loopback port with the script,
the agent set up by `agents.py`, `spindle chat` in the work directory, then `spindle replay` of the
recording. Checks (checks.py, the same for both front ends) read the exit code, the transcript, the
files on disk and the emulator's request log. Known failures are in `XFAIL` (printed, counted
apart). Two agents run at a time (`--jobs`); each agent's lines are printed together.
The `client-<script>` runs repeat a script with Spindle's fs and terminals advertised
(client_checks.py); `modes-history`, `auth`, `prompt-content` and their `serve-` forms are
feature runs (feature_runs.py, serve_features.py); `undo` drives checkpoints with the agent's own
file changes through an interactive chat (undo_runs.py).

Usage: runner.py [--spindle PATH] [--agents a,b] [--scripts s,t] [--jobs N] [--keep DIR] [--save-recordings]
                 [--update-compatibility]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import compat_pins
import model_scripts as ms
from agents import AGENTS, QUIET_ENV
from checks import check_run, xfail_reason
from goldens import golden_results
from mcp_runs import MCP_SCRIPTS, write_mcp_config
from feature_runs import FEATURES, SERVE_FEATURES, feature_run
from serve_runner import serve_run
from undo_runs import UNDO_SCRIPTS, undo_run

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# `mcp` and `elicit` run with the run's own MCP server (mcp_runs.py, `--mcp-config`); `ask` has
# the agent ask its own question (a form elicitation where the adapter makes it one).
SCRIPTS = ["plain", "usage-partial", "thinking", "read", "write", "edit", "shell", "reject", "cancel", "long", "api-429", "api-500-mid"] + MCP_SCRIPTS + ["ask"]
SERVE_PREFIX = "serve-"
# The client-services variant: these scripts again with Spindle's fs and terminals advertised
# (`--fs allow --terminals on`); the plain runs pin `--fs off --terminals off` (the agent's own
# tools). `client-outside` writes next to the work directory (refused). Each agent runs only the
# ones its adapter routes through the client (agents.py).
CLIENT_PREFIX = "client-"
CLIENT_SCRIPTS = ["client-read", "client-write", "client-edit", "client-shell", "client-outside"]
CLIENT_BASE = {"client-outside": "write-outside"}
# The same scripts through `spindle serve` (and the client variant's edit and shell).
SERVE_SCRIPTS = [SERVE_PREFIX + s for s in SCRIPTS] + ["serve-client-write", "serve-client-edit", "serve-client-shell"]
# Modes and models (/mode, /model, POST .../mode|config), auth, history (--list, --resume;
# GET /api/agent-sessions): feature_runs.py.
FEATURE_SCRIPTS = FEATURES + [SERVE_PREFIX + f for f in SERVE_FEATURES]
# Checkpoints with the agent's own file changes: an interactive chat, /undo twice (undo_runs.py).
ALL_SCRIPTS = SCRIPTS + CLIENT_SCRIPTS + SERVE_SCRIPTS + FEATURE_SCRIPTS + UNDO_SCRIPTS
RUN_TIMEOUT = 120  # seconds for `spindle chat --timeout` (a run that hangs fails with 124)
# --timeout for the cancel script: startup (slower with two agents at a time) + part of the slow
# answer, which streams for at least 30 s.
CANCEL_AFTER = {"default": 18, "opencode": 28, "fast-agent-anthropic": 28}


def start_emulator(script, work, log):
    proc = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "emulator.py"), "--script", script, "--workdir", work, "--log", log],
        stdout=subprocess.PIPE,
        stderr=open(log + ".stderr", "w"),
        text=True,
    )
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"emulator did not start: {line!r}")
    return proc, int(line.split()[1])


def seed_work(work):
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write(ms.NOTES_CONTENT)
    with open(os.path.join(work, "edit.txt"), "w") as f:
        f.write(ms.EDIT_BEFORE)


def prompt_for(script):
    return {
        "plain": "Say hello.",
        "usage-partial": "Say hello.",
        "thinking": "Think, then answer.",
        "read": "Read notes.txt and tell me the secret word.",
        "write": "Create new.txt.",
        "write-outside": "Create outside.txt next to the workspace.",
        "reject": "Create new.txt.",
        "edit": "In edit.txt replace beta.",
        "shell": "Run the shell command.",
        "cancel": "Write a very long answer.",
        "long": "Write a long answer.",
        "api-429": "Say hello.",
        "api-500-mid": "Say hello.",
        "mcp": "Call the probe tool.",
        "elicit": "Ask me through the probe tool.",
        "ask": "Ask me which colour to use.",
    }[script]


def agent_env(agent, home, work, run_dir, base_url, script=None):
    """The agent's command and the whole environment of a run (fresh HOME, XDG dirs, TMPDIR);
    `script` is the model script of the run (an agent may set itself up for it)."""
    command, agent_vars = agent.setup(home, work, base_url, script)
    return command, {**run_env(home, run_dir), **agent_vars}


def run_env(home, run_dir):
    """The environment of a run without an agent's own variables: fresh HOME and XDG dirs,
    TMPDIR under the run (created), quiet telemetry and update checks."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
        "TMPDIR": os.path.join(run_dir, "tmp"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        **QUIET_ENV,
    }
    os.makedirs(env["TMPDIR"], exist_ok=True)
    return env


_HELP = {}


def has_flag(spindle, command, flag):
    """Whether `spindle COMMAND --help` lists FLAG (the client services came later)."""
    if command not in _HELP:
        _HELP[command] = subprocess.run([spindle, command, "--help"], capture_output=True, text=True).stdout
    return flag in _HELP[command]


def host_flags(spindle, command, client):
    """The client variant: `--fs allow --terminals on` through chat; through serve `--fs ask`
    (its default: each write waits for a review, which serve_runner accepts with POST .../review).
    Otherwise `--fs off --terminals off` (when this spindle has the flags: the agent's own tools,
    as before they existed). Serve asks for its default protocol (1) unless
    SPINDLE_TEST_SERVE_PROTOCOL names one (`2`: the draft, which has no client files or
    terminals, so the client variant's checks of them fail there by design)."""
    protocol = os.environ.get("SPINDLE_TEST_SERVE_PROTOCOL", "") if command == "serve" else ""
    if protocol not in ("", "1", "2"):
        raise RuntimeError(f"SPINDLE_TEST_SERVE_PROTOCOL must be 1 or 2, not {protocol!r}")
    chosen = ["--protocol", protocol] if protocol else []
    if client:
        if not has_flag(spindle, command, "--terminals"):
            raise RuntimeError(f"spindle {command} has no --fs/--terminals flags (the client services are not built)")
        return ["--fs", "allow" if command == "chat" else "ask", "--terminals", "on", *chosen]
    return (["--fs", "off", "--terminals", "off"] if has_flag(spindle, command, "--terminals") else []) + chosen


def base_script(label):
    """The model script and the variant of a run label: client-edit -> (edit, client)."""
    name = label[len(SERVE_PREFIX):] if label.startswith(SERVE_PREFIX) else label
    if name.startswith(CLIENT_PREFIX):
        return CLIENT_BASE.get(name, name[len(CLIENT_PREFIX):]), "client"
    return name, None


def run_one(spindle, agent, label, root):
    script, variant = base_script(label)
    run_dir = os.path.join(root, agent.name, label)
    home, work = os.path.join(run_dir, "home"), os.path.join(run_dir, "work")
    os.makedirs(home, exist_ok=True)
    seed_work(work)
    log = os.path.join(run_dir, "emulator.jsonl")
    emulator, port = start_emulator(script, work, log)
    mcp = write_mcp_config(run_dir) if script in MCP_SCRIPTS else None
    try:
        command, env = agent_env(agent, home, work, run_dir, f"http://127.0.0.1:{port}", script)
        record = os.path.join(run_dir, "record.jsonl")
        timeout = CANCEL_AFTER.get(agent.name, CANCEL_AFTER["default"]) if script == "cancel" else RUN_TIMEOUT
        args = [spindle, "chat"] + host_flags(spindle, "chat", variant == "client")
        if script != "reject":
            args.append("--yes")
        if mcp:
            args += ["--mcp-config", mcp["config"]]
        args += ["--prompt", prompt_for(script), "--record", record, "--timeout", str(timeout), "--"]
        args += command
        started = time.monotonic()
        with open(os.path.join(run_dir, "stdout"), "w") as out, open(os.path.join(run_dir, "stderr"), "w") as err:
            proc = subprocess.run(args, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=timeout + 60)
        elapsed = time.monotonic() - started
        replay = subprocess.run([spindle, "replay", "--format", "json", record], capture_output=True, text=True)
        transcript = json.loads(replay.stdout) if replay.stdout.strip() else None
    finally:
        emulator.terminate()
        emulator.wait(timeout=10)
    requests = []
    if os.path.exists(log):
        with open(log) as f:
            requests = [json.loads(line) for line in f if line.strip()]
    return {
        "agent": agent,
        "script": script,
        "label": label,
        "variant": variant,
        "dir": run_dir,
        "work": work,
        "exit": proc.returncode,
        "elapsed": elapsed,
        "replay_exit": replay.returncode,
        "transcript": transcript,
        "requests": requests,
        "stderr": open(os.path.join(run_dir, "stderr")).read(),
        "stdout": open(os.path.join(run_dir, "stdout")).read(),
        "record": record,
        "prompt": prompt_for(script),
        "mcp": mcp,
    }


def label_results(agent, script, results, run_dir):
    """(kind, line) per check: kind "pass", "fail" or "xfail"."""
    out = []
    for name, outcome, detail in results:
        label = f"{agent.name}/{script}/{name}"
        if outcome == "pass":
            out.append(("pass", f"ok   {label} {detail}".rstrip()))
        elif outcome == "xfail":
            out.append(("xfail", f"XFAIL {label}: {detail}", (label, detail)))
        else:
            out.append(("fail", f"FAIL {label}: {detail} [{run_dir}]"))
    return out


def run_agent(spindle, agent, wanted_scripts, root, save_recordings):
    """Runs every wanted script of one agent; returns its lines, in order, as (kind, line[, xfail])."""
    lines = [("info", f"== {agent.name} {agent.version()} ({agent.api} API)")]
    agent_started = time.monotonic()
    for script in wanted_scripts:
        base = script[len(SERVE_PREFIX):] if script.startswith(SERVE_PREFIX) else script
        if script in agent.unsupported or base in agent.unsupported:
            lines.append(("info", f"   n/a  {agent.name}/{script}: {agent.unsupported.get(script) or agent.unsupported[base]}"))
            continue
        if not agent.installed():
            lines.append(("fail", f"FAIL {agent.name}/{script}/run: agent not installed (run tests/real-agents/install.sh)"))
            continue
        try:
            if script in UNDO_SCRIPTS:
                run = undo_run(spindle, agent, script, root)
            elif base in FEATURES or base in SERVE_FEATURES:
                run = feature_run(spindle, agent, script, root)
            elif script.startswith(SERVE_PREFIX):
                model, variant = base_script(script)
                flags = host_flags(spindle, "serve", variant == "client")
                run = serve_run(spindle, agent, model, os.path.join(root, "serve"), prompt_for(model), label=script, flags=flags)
            else:
                run = run_one(spindle, agent, script, root)
        except Exception as err:  # a harness-level failure is a failed check, never a skip
            lines.append(("fail", f"FAIL {agent.name}/{script}/run: {type(err).__name__}: {err}"))
            continue
        # long and cancel recordings are large and timing-dependent: not kept as goldens.
        if save_recordings and run.get("mode") is None and run.get("variant") is None and run["transcript"] is not None and script not in ("long", "cancel"):
            dest = os.path.join(HERE, "recordings", agent.name)
            os.makedirs(dest, exist_ok=True)
            with open(run["record"]) as src, open(os.path.join(dest, f"{script}.jsonl"), "w") as out:
                # The run's temporary paths become <run> so recordings compare across runs.
                out.write(src.read().replace(run["dir"], "<run>"))
        if run.get("mode") == "feature":
            results = run["results"]
        else:
            results = [(name, "pass" if ok else "fail", detail) for name, ok, detail in run.get("api", [])]
            results = [(n, o, d) if o == "pass" else xfail_or_fail(agent.name, script, n, d) for n, o, d in results]
            try:
                results += check_run(run)
            except Exception as err:  # a check that cannot read the run is a failed check, never a crash
                results.append(("checks", "fail", f"{type(err).__name__}: {err}"))
        lines += label_results(agent, script, results, run["dir"])
        lines.append(("info", f"     ({agent.name}/{script}: {run['elapsed']:.1f}s, exit {run['exit']})"))
    lines.append(("info", f"   ({agent.name}: {time.monotonic() - agent_started:.0f}s)"))
    return lines


def xfail_or_fail(agent, script, name, detail):
    known = xfail_reason(agent, script, name)
    return (name, "xfail", f"[{known[0]}] {known[1]}") if known else (name, "fail", detail)


def mcp_server_results():
    """The unit tests of mcp_server.py (test_mcp_server.py): [(label, outcome, detail)]."""
    import unittest

    import test_mcp_server

    def flat(suite):
        for item in suite:
            yield from flat(item) if isinstance(item, unittest.TestSuite) else [item]

    tests = list(flat(unittest.defaultTestLoader.loadTestsFromModule(test_mcp_server)))
    result = unittest.TestResult()
    unittest.TestSuite(tests).run(result)
    failed = {test.id(): text.strip().splitlines()[-1] for test, text in result.failures + result.errors}
    return [(f"mcp-server/{t.id().rsplit('.', 1)[-1]}", "fail" if t.id() in failed else "pass", failed.get(t.id(), "")) for t in tests]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spindle", default=os.path.join(REPO, "target", "debug", "spindle"))
    parser.add_argument("--agents", default=",".join(a.name for a in AGENTS))
    parser.add_argument("--scripts", default=",".join(ALL_SCRIPTS))
    parser.add_argument("--jobs", type=int, default=2, help="agents run at the same time (default 2)")
    parser.add_argument("--keep", help="keep the run directories here (default: a temp dir, removed)")
    parser.add_argument("--save-recordings", action="store_true", help="copy each recording to recordings/")
    parser.add_argument("--no-goldens", action="store_true", help="skip replaying the golden recordings")
    parser.add_argument("--update-compatibility", action="store_true", help="rewrite COMPATIBILITY.md's pinned versions with this run's versions, date and counts (compat_pins.py)")
    args = parser.parse_args()
    root = args.keep or tempfile.mkdtemp(prefix="spindle-real-agents-")
    wanted_agents = args.agents.split(",")
    wanted_scripts = args.scripts.split(",")
    passed, failed, xfailed = 0, 0, []
    per_agent = {}  # agent name -> {"pass": n, "fail": n, "xfail": n}
    started = time.monotonic()
    run_date = time.strftime("%Y-%m-%d", time.gmtime())

    def tally(kind, line, xfail=None, agent=None):
        nonlocal passed, failed
        if agent is not None and kind in ("pass", "fail", "xfail"):
            counts = per_agent.setdefault(agent, {"pass": 0, "fail": 0, "xfail": 0})
            counts[kind] += 1
        if kind == "pass":
            passed += 1
        elif kind == "fail":
            failed += 1
        elif kind == "xfail":
            xfailed.append(xfail)
        print(line, flush=True)

    if any(s in wanted_scripts or SERVE_PREFIX + s in wanted_scripts for s in MCP_SCRIPTS):
        print("== the MCP server of the mcp scripts (test_mcp_server.py, no agent)", flush=True)
        for label, outcome, detail in mcp_server_results():
            tally(outcome, f"ok   {label}" if outcome == "pass" else f"FAIL {label}: {detail}")
    if not args.no_goldens:
        print("== golden recordings (spindle replay, no agent)", flush=True)
        for label, outcome, detail in golden_results(args.spindle):
            if outcome == "pass":
                tally("pass", f"ok   {label}")
            elif outcome == "xfail":
                tally("xfail", f"XFAIL {label}: {detail}", (label, detail))
            else:
                tally("fail", f"FAIL {label}: {detail}")
    # Agents run side by side (each run has its own HOME, work dir and ports); each agent's lines
    # are printed together, in AGENTS order, once it is done.
    agents = [a for a in AGENTS if a.name in wanted_agents]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_agent, args.spindle, a, wanted_scripts, root, args.save_recordings) for a in agents]
        for agent, future in zip(agents, futures):
            for item in future.result():
                tally(*item, agent=agent.name)
    if xfailed:
        print(f"\n{len(xfailed)} expected failures, not counted ([spindle]: a Spindle quirk awaiting its fix; [agent]: the agent's own):")
        for label, detail in xfailed:
            print(f"  xfail {label}: {detail}")
    print(f"\nreal agents: {time.monotonic() - started:.0f}s ({args.jobs} agents at a time); run directories in {root}")
    if not args.keep and failed == 0:
        shutil.rmtree(root, ignore_errors=True)
    summary = f"{passed} passed, {failed} failed"
    if args.update_compatibility:
        compat_pins.update(os.path.join(REPO, "COMPATIBILITY.md"), agents, per_agent, run_date, summary, len(xfailed))
        print(f"COMPATIBILITY.md: pinned versions of {len(agents)} agent set-ups, run of {run_date}")
    print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
