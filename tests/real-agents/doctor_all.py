#!/usr/bin/env python3
"""`spindle agents doctor` on every production agent, set up as the runs set it up.

Each agent gets a fresh HOME with its config files (agents.py's setup(), pointed at the scripted
model API, emulator.py, on loopback) and is started from its install record, so the report says
what a user of that agent would see: protocol version, auth methods, capabilities, the outcome of
`session/new` (modes, config options, models, commands) and the Spindle extensions it uses.

Usage: doctor_all.py [--spindle PATH] [--agents a,b] [--json]
Prints one report per agent; exits 1 when an agent cannot be started or initialized (an
auth_required answer to session/new is a finding, not a failure).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import agents as agent_specs
import runner

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spindle", default=os.environ.get("SPINDLE") or os.path.join(ROOT, "target", "debug", "spindle"))
    parser.add_argument("--agents", default="", help="comma-separated names from agents.py (default: every installed one)")
    parser.add_argument("--json", action="store_true", help="doctor's JSON report instead of text")
    args = parser.parse_args()
    wanted = {a for a in args.agents.split(",") if a}
    spindle = os.path.abspath(args.spindle)
    failures = 0
    root = tempfile.mkdtemp(prefix="spindle-doctor-")
    try:
        for agent in agent_specs.AGENTS:
            if (wanted and agent.name not in wanted) or not agent.installed():
                continue
            run_dir = os.path.join(root, agent.name)
            home, work = os.path.join(run_dir, "home"), os.path.join(run_dir, "work")
            os.makedirs(home)
            runner.seed_work(work)
            log = os.path.join(run_dir, "emulator.jsonl")
            emulator, port = runner.start_emulator("plain", work, log)
            try:
                command, env = runner.agent_env(agent, home, work, run_dir, f"http://127.0.0.1:{port}", "plain")
                doctor = [spindle, "agents", "doctor", "--timeout", "60"] + (["--json"] if args.json else []) + ["--"] + command
                out = subprocess.run(doctor, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
            finally:
                emulator.terminate()
                emulator.wait(timeout=10)
            print(f"### {agent.name} {agent.version()}")
            sys.stdout.write(out.stdout)
            # Exit 1 with a session/new answer is a finding (auth_required, say); anything else
            # (no initialize, a crash) is a failure.
            if out.returncode != 0 and "session/new:" not in out.stdout and '"sessionNew"' not in out.stdout:
                failures += 1
                sys.stdout.write(out.stderr)
                print(f"(doctor exited {out.returncode})")
            print()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
