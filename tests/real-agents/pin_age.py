#!/usr/bin/env python3
"""How far each pinned real agent is behind its newest published version.

Reads the pins of package.json (npm) and requirements.txt (PyPI), asks each registry through its
own client (`npm view PKG time --json`, `pip index versions PKG`) and prints one line per pin: the
pinned version, the newest, how many versions were published after the pin and, when the registry
dates its releases (npm), how many days lie between the two. Packages that moved to a new name
are named with their successor (`RENAMED`). Always exits 0: it informs, it does not gate.

Usage: pin_age.py [--dir DIR] [--python PYTHON]   (DIR holds the package.json and
requirements.txt to read, default this directory; PYTHON runs `pip index versions`, default a
Python >= 3.13 when one is found, else python3: a package whose releases need a newer Python is
listed by that Python only)
"""

import argparse
import json
import os
import re
import subprocess
from datetime import datetime

from registry_install import python313_dir

HERE = os.path.dirname(os.path.abspath(__file__))

# Abandoned npm names -> the name their publisher moved to (the old names stopped in March 2026).
RENAMED = {
    "@zed-industries/claude-agent-acp": "@agentclientprotocol/claude-agent-acp",
    "@zed-industries/codex-acp": "@agentclientprotocol/codex-acp",
}


def version_key(version):
    """Sorts release versions numerically (pre-releases before their release)."""
    main, _, pre = version.partition("-")
    numbers = [int(n) if n.isdigit() else 0 for n in re.split(r"[.+]", main)]
    return (numbers, pre == "", pre)


def npm_facts(package):
    """(newest, [versions], {version: date}) from `npm view`, or an error text."""
    out = subprocess.run(["npm", "view", package, "time", "dist-tags", "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        said = [line for line in out.stderr.splitlines() if line.strip() and "complete log" not in line]
        return f"npm view failed: {' / '.join(said[:2]) if said else out.returncode}"
    facts = json.loads(out.stdout)
    times = {v: t for v, t in facts["time"].items() if v not in ("created", "modified")}
    return facts["dist-tags"]["latest"], sorted(times, key=version_key), times


def pip_facts(python, package):
    out = subprocess.run([python, "-m", "pip", "index", "versions", package], capture_output=True, text=True)
    if out.returncode != 0:
        return f"pip index versions failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"
    for line in out.stdout.splitlines():
        if line.startswith("Available versions:"):
            versions = [v.strip() for v in line.split(":", 1)[1].split(",")]
            return versions[0], sorted(versions, key=version_key), {}
    return f"pip index versions printed no versions: {out.stdout.strip()[:80]!r}"


def days_between(times, pin, newest):
    if pin not in times or newest not in times:
        return None
    parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
    return (parse(times[newest]) - parse(times[pin])).days


def describe(registry, package, pin, facts):
    if isinstance(facts, str):
        return f"{registry:4} {package}: pinned {pin}; {facts}"
    newest, versions, times = facts
    if pin not in versions:
        behind = f"the pin is not a published version (newest {newest})"
    elif pin == newest:
        behind = "the last release under this name" if package in RENAMED else "up to date"
    else:
        later = len([v for v in versions if version_key(v) > version_key(pin) and "-" not in v])
        days = days_between(times, pin, newest)
        behind = f"{later} releases behind" + (f", {days} days" if days is not None else "")
    date = f" ({times[pin][:10]})" if pin in times else ""
    line = f"{registry:4} {package}: pinned {pin}{date}, newest {newest}: {behind}"
    if package in RENAMED:
        line += f"; RENAMED: this name is abandoned, {renamed_behind(RENAMED[package], times.get(pin))}"
    return line


def renamed_behind(successor, pin_time):
    """How far the successor name's newest release is from the pin (its own releases and days)."""
    facts = npm_facts(successor)
    if isinstance(facts, str):
        return f"successor {successor}: {facts}"
    newest, versions, times = facts
    days = ""
    if pin_time and newest in times:
        parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
        days = f", {(parse(times[newest]) - parse(pin_time)).days} days after the pin"
    stable = [v for v in versions if "-" not in v]
    return f"its successor {successor} is at {newest} ({times.get(newest, '?')[:10]}{days}; {len(stable)} releases under the new name)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    newer = python313_dir()  # fast-agent's releases need Python >= 3.13: pip lists them to such a Python only
    parser.add_argument("--python", default=os.path.join(newer, "python3") if newer else "python3")
    parser.add_argument("--dir", default=HERE, help="where package.json and requirements.txt are")
    args = parser.parse_args()
    with open(os.path.join(args.dir, "package.json")) as f:
        for package, pin in json.load(f)["dependencies"].items():
            print(describe("npm", package, pin, npm_facts(package)), flush=True)
    with open(os.path.join(args.dir, "requirements.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if "==" not in line:
                print(f"pypi {line}: not pinned with ==")
                continue
            package, pin = (part.strip() for part in line.split("==", 1))
            print(describe("pypi", package, pin, pip_facts(args.python, package)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
