#!/usr/bin/env python3
"""Installs the pinned real agents the way a user does: `spindle agents install ID` from an ACP
registry file, here one this script writes and serves on loopback.

The registry (`registry.json`, FORMAT.md of agentclientprotocol/registry) holds an `npx` entry per
npm pin of package.json (package@version, with the arguments that start the agent's ACP mode), a
`uvx` entry for fast-agent (requirements.txt's pin of fast-agent-acp, its `fast-agent` program),
and a `binary` entry for this platform whose `.tar.gz` archive is built here from the `spindle`
binary (`cmd` `./spindle`, `args` `["agent"]`: the built-in reference agent), with its SHA-256.
Spindle's data directory is `DATA_HOME/spindle` (`XDG_DATA_HOME=DATA_HOME`, default
`tests/real-agents/agents-data`); agents.py reads each agent's command from the install records
there (`agents/<id>/install.json`: `program`, `args`). Python >= 3.13 is put first on PATH for the
uvx install (fast-agent needs it). After the installs, `spindle agents doctor spindle-agent`
checks the binary one.

Usage: registry_install.py [--spindle PATH] [--data-home DIR] [--only id,id]
Prints one line per agent; exits non-zero when an install fails.
"""

import argparse
import functools
import glob
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_DATA_HOME = os.path.join(HERE, "agents-data")
BINARY_ID = "spindle-agent"

# Registry id -> (npm package of package.json, arguments of its ACP mode). The ids are agents.py's
# names (install ids), so each spec finds its record.
NPX = {
    "claude": ("@agentclientprotocol/claude-agent-acp", []),
    "codex": ("@agentclientprotocol/codex-acp", []),
    "gemini": ("@google/gemini-cli", ["--acp"]),
    "qwen": ("@qwen-code/qwen-code", ["--acp", "--approval-mode", "default"]),
    "opencode": ("opencode-ai", ["acp"]),
}
UVX = {"fast-agent": ("fast-agent-acp", "fast-agent", ["--no-update-check", "acp"])}


def npm_pins():
    with open(os.path.join(HERE, "package.json")) as f:
        return json.load(f)["dependencies"]


def pypi_pins():
    pins = {}
    with open(os.path.join(HERE, "requirements.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                name, version = (p.strip() for p in line.split("==", 1))
                pins[name] = version
    return pins


def entry(agent_id, version, description, distribution):
    return {
        "id": agent_id,
        "name": agent_id,
        "version": version,
        "description": description,
        "authors": ["Spindle real-agent tests"],
        "license": "see the package",
        "distribution": distribution,
    }


def build_archive(spindle, out_dir):
    """`spindle-agent.tar.gz` holding the spindle binary as `./spindle`; returns (name, sha256)."""
    name = "spindle-agent.tar.gz"
    path = os.path.join(out_dir, name)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(spindle, arcname="spindle")
    with open(path, "rb") as f:
        return name, hashlib.sha256(f.read()).hexdigest()


def spindle_version(spindle):
    out = subprocess.run([spindle, "--version"], capture_output=True, text=True)
    return out.stdout.split()[-1] if out.returncode == 0 and out.stdout.split() else "0.0.0"


def build_registry(spindle, out_dir, base_url):
    npm, pypi = npm_pins(), pypi_pins()
    agents = []
    for agent_id, (package, args) in NPX.items():
        if package not in npm:
            raise SystemExit(f"registry_install.py: {package} is not pinned in package.json")
        version = npm[package]
        agents.append(entry(agent_id, version, f"{package} (npm)", {"npx": {"package": f"{package}@{version}", **({"args": args} if args else {})}}))
    for agent_id, (package, cmd, args) in UVX.items():
        if package not in pypi:
            raise SystemExit(f"registry_install.py: {package} is not pinned in requirements.txt")
        version = pypi[package]
        agents.append(entry(agent_id, version, f"{package} (PyPI)", {"uvx": {"package": f"{package}=={version}", "cmd": cmd, "args": args}}))
    archive, digest = build_archive(spindle, out_dir)
    binary = {"linux-x86_64": {"archive": f"{base_url}/{archive}", "cmd": "./spindle", "args": ["agent"], "sha256": digest}}
    agents.append(entry(BINARY_ID, spindle_version(spindle), "Spindle's built-in reference agent (binary archive)", {"binary": binary}))
    registry = {"version": "1.0.0", "agents": agents}
    with open(os.path.join(out_dir, "registry.json"), "w") as f:
        json.dump(registry, f, indent=2)
    return registry


def python313_dir():
    """A directory whose `python3` is >= 3.13 (fast-agent needs it), or None."""
    for candidate in ["python3.13", "python3.14"] + sorted(glob.glob("/root/.pyenv/versions/3.1[3-9]*/bin/python3")):
        path = shutil.which(candidate) or (candidate if os.path.isfile(candidate) else None)
        if not path:
            continue
        ok = subprocess.run([path, "-c", "import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)"], capture_output=True)
        if ok.returncode == 0:
            # A directory holding `python3` for this interpreter (pyenv's bin has one; else a link).
            directory = os.path.dirname(os.path.realpath(path))
            if os.path.basename(os.path.realpath(os.path.join(directory, "python3"))).startswith("python3"):
                return directory
    return None


def serve(directory):
    handler = functools.partial(QuietHandler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spindle", default=os.environ.get("SPINDLE") or os.path.join(REPO, "target", "debug", "spindle"))
    parser.add_argument("--data-home", default=DEFAULT_DATA_HOME, help="XDG_DATA_HOME for spindle (its data dir is DIR/spindle)")
    parser.add_argument("--only", help="install only these ids (comma-separated)")
    args = parser.parse_args()
    spindle = os.path.abspath(args.spindle)
    if not os.access(spindle, os.X_OK):
        raise SystemExit(f"registry_install.py: no spindle binary at {spindle} (cargo build -p spindle)")
    os.makedirs(args.data_home, exist_ok=True)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="spindle-registry-") as served:
        server = serve(served)
        base_url = f"http://127.0.0.1:{server.server_address[1]}"
        registry = build_registry(spindle, served, base_url)
        env = {**os.environ, "XDG_DATA_HOME": os.path.abspath(args.data_home), "npm_config_update_notifier": "false"}
        python_dir = python313_dir()
        if python_dir:
            env["PATH"] = python_dir + os.pathsep + env.get("PATH", "")
        else:
            print("registry_install.py: no Python >= 3.13 found: the fast-agent install will fail", file=sys.stderr)
        wanted = args.only.split(",") if args.only else [a["id"] for a in registry["agents"]]
        for agent in registry["agents"]:
            if agent["id"] not in wanted:
                continue
            command = [spindle, "agents", "--registry", f"{base_url}/registry.json", "install", agent["id"]]
            out = subprocess.run(command, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            said = " ".join((out.stderr + out.stdout).split())
            if out.returncode == 0:
                print(f"installed {agent['id']} {agent['version']}: {said[:200]}", flush=True)
            else:
                failed += 1
                print(f"FAILED {agent['id']} {agent['version']} (exit {out.returncode}): {said[-1500:]}", flush=True)
        server.shutdown()
    if BINARY_ID in wanted:
        doctor = subprocess.run([spindle, "agents", "doctor", BINARY_ID], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        print(f"spindle agents doctor {BINARY_ID}: exit {doctor.returncode}")
        print(doctor.stdout.rstrip())
        failed += doctor.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
