#!/usr/bin/env python3
"""One `spindle serve`, three agents side by side, checked in a browser (three_agents.mjs).

The agents: the built-in reference agent, Gemini CLI against the scripted model API
(emulator.py, script `plain`) and fast-agent with its `passthrough` model (it echoes the prompt,
no model API). The two production agents are installed the way `spindle agents install` leaves
them: an install record (`agents/<id>/install.json` in Spindle's data directory) naming the
command and the environment agents.py's setup() gives, which `spindle serve` applies when it
starts each one. Everything runs in a fresh HOME; nothing but loopback.

Usage: three_agents.py --spindle PATH [--out DIR] [--keep DIR]
Prints the browser checks and "N passed, M failed"; exits non-zero on a failure.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import agents as agent_specs
import runner
from model_scripts import PLAIN_TEXT

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PLAYWRIGHT = os.path.join(ROOT, "tests", "browser", "node_modules", "playwright-core")

# The production agents, by their name in agents.py: (install id, display name, prompt, answer).
PRODUCTION = [
    ("gemini", "gemini", "Gemini CLI", "Say hello to the emulator", PLAIN_TEXT[:30]),
    ("fast-agent", "fast-agent", "fast-agent", "echo from the passthrough model", "echo from the passthrough model"),
]


def install_record(data_dir, agent_id, name, version, command, env):
    """Writes agents/<id>/install.json as `spindle agents install` does (spindle-agents' InstallRecord)."""
    program = shutil.which(command[0]) or command[0]
    if not os.path.isabs(program) or not os.access(program, os.X_OK):
        raise SystemExit(f"three_agents.py: {agent_id}: no executable {command[0]!r} (tests/real-agents/install.sh)")
    install_dir = os.path.join(data_dir, "agents", agent_id, version)
    os.makedirs(install_dir, exist_ok=True)
    record = {
        "id": agent_id,
        "name": name,
        "version": version,
        "distribution": "npx" if "node_modules" in program else "uvx",
        "source": "tests/real-agents",
        "path": install_dir,
        "program": program,
        "args": command[1:],
        "env": env,
        "installedAt": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "registry": "tests/real-agents/three_agents.py",
    }
    with open(os.path.join(data_dir, "agents", agent_id, "install.json"), "w") as f:
        json.dump(record, f, indent=2)


def start(command, env, log, pattern):
    """Starts a process and waits for the first stdout line matching `pattern`."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
    line = proc.stdout.readline()
    match = re.search(pattern, line)
    if not match:
        proc.kill()
        with open(log) as f:
            raise SystemExit(f"three_agents.py: {command[0]} did not start: {line!r} {f.read()[-2000:]}")
    return proc, match.group(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spindle", required=True)
    parser.add_argument("--out", default=os.path.join(ROOT, "test-output", "real-agents", "three-agents"))
    parser.add_argument("--keep", help="run in this directory and keep it (logs, database)")
    args = parser.parse_args()
    spindle = os.path.abspath(args.spindle)
    if not os.path.isdir(PLAYWRIGHT):
        raise SystemExit("three_agents.py: playwright-core missing: run 'npm ci' in tests/browser")
    specs = {spec.name: spec for spec in agent_specs.AGENTS}
    missing = [name for name, *_ in PRODUCTION if name not in specs or not specs[name].installed()]
    if missing:
        raise SystemExit(f"three_agents.py: not installed: {', '.join(missing)} (tests/real-agents/install.sh)")

    run_dir = args.keep or tempfile.mkdtemp(prefix="spindle-three-agents-")
    os.makedirs(run_dir, exist_ok=True)
    home = os.path.join(run_dir, "home")
    work = os.path.join(run_dir, "work")
    os.makedirs(work, exist_ok=True)
    env = runner.run_env(home, run_dir)
    emulator, port = start(
        [sys.executable, os.path.join(HERE, "emulator.py"), "--script", "plain", "--workdir", work,
         "--log", os.path.join(run_dir, "emulator.jsonl")],
        None, os.path.join(run_dir, "emulator.stderr"), r"^PORT (\d+)")
    server = None
    try:
        base_url = f"http://127.0.0.1:{port}"
        data_dir = os.path.join(env["XDG_DATA_HOME"], "spindle")
        expected = [{
            "id": "spindle",
            "label": "Spindle reference agent " + spindle_version(spindle),
            "prompt": "hello reference agent",
            "answer": "hello reference agent",
        }]
        for name, agent_id, display, prompt, answer in PRODUCTION:
            spec = specs[name]
            command, agent_env = spec.setup(home, work, base_url)
            version = spec.version()
            install_record(data_dir, agent_id, display, version, command, agent_env)
            expected.append({"id": agent_id, "label": f"{display} {version}", "prompt": prompt, "answer": answer})
        server, url = start(
            [spindle, "serve", "--bind", "127.0.0.1:0", "--db", os.path.join(run_dir, "serve.db"),
             "--cwd", work, "--fs", "off", "--terminals", "off"],
            env, os.path.join(run_dir, "serve.stderr"), r"listening on (http://\S+)")
        done = subprocess.run(["node", os.path.join(HERE, "three_agents.mjs"), url.rstrip("/"), args.out,
                               json.dumps(expected)])
        if done.returncode != 0:
            print(f"three_agents.py: logs in {run_dir}" + ("" if args.keep else " (kept)"))
            args.keep = run_dir
        return done.returncode
    finally:
        for proc in (server, emulator):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        if not args.keep:
            shutil.rmtree(run_dir, ignore_errors=True)


def spindle_version(spindle):
    """`spindle --version` prints `spindle X.Y.Z`: the reference agent's version."""
    out = subprocess.run([spindle, "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[-1]


if __name__ == "__main__":
    sys.exit(main())
