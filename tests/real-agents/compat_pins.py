"""Writes the "Pinned versions" section of COMPATIBILITY.md from a run of runner.py
(`run.sh --update-compatibility`): per agent set-up the package, the version that ran (read from
node_modules or the venv, as the run's `== agent VERSION` line), the command, the model API, the
date of the run and that agent's counts. The rest of the file is written by hand from the checks'
output; only the text between the section's heading and the next `## ` heading is replaced.
"""

import os
import tempfile

from agents import DATA_HOME

HEADING = "## Pinned versions"
API_NAMES = {
    "anthropic": "Anthropic Messages",
    "openai": "OpenAI Chat Completions",
    "responses": "OpenAI Responses",
    "gemini": "Gemini `streamGenerateContent`",
    "none": "none (passthrough echoes the prompt)",
}


def shown_command(agent):
    """The agent's command line as agents.py builds it (the install record's program, from
    `<id>/` of Spindle's agents directory)."""
    with tempfile.TemporaryDirectory(prefix="compat-pins-") as home:  # setup writes config files there
        command, _ = agent.setup(home, os.path.join(home, "work"), "http://127.0.0.1:PORT")
        command = [part.replace(home, "HOME") for part in command]
    shown = []
    for part in command:
        part = part.replace(os.path.join(DATA_HOME, "spindle", "agents") + os.sep, "")
        shown.append(part)
    return " ".join(shown)


def registry(agent):
    return f"`{agent.package[5:]}` (PyPI)" if agent.package.startswith("pypi:") else f"`{agent.package}` (npm)"


def section(agents, per_agent, run_date, summary, xfails):
    lines = [
        HEADING,
        "",
        f"Written by `tests/real-agents/run.sh --update-compatibility` (compat_pins.py) after the run of {run_date}:",
        f"`{summary}`, {xfails} expected failures (the run's own list). The versions are the installed ones",
        "(`install.sh`: `spindle agents install` of package.json's and requirements.txt's pins from a loopback",
        "registry); the command is the install record's (`<id>/` under `agents-data/spindle/agents/`) with what",
        "the run adds. `tests/real-agents/pin_age.py` says how far each pin is behind its registry.",
        "",
        "| agent set-up | package (registry) | version | ACP command | model API | run | passed / failed / xfail |",
        "|---|---|---|---|---|---|---|",
    ]
    for agent in agents:
        counts = per_agent.get(agent.name, {"pass": 0, "fail": 0, "xfail": 0})
        lines.append(
            f"| {agent.name} | {registry(agent)} | {agent.version()} | `{shown_command(agent)}` | {API_NAMES.get(agent.api, agent.api)} "
            f"| {run_date} | {counts['pass']} / {counts['fail']} / {counts['xfail']} |"
        )
    return "\n".join(lines) + "\n\n"


def update(path, agents, per_agent, run_date, summary, xfails):
    """Replaces the section in the file at `path` (which must have the heading)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index(HEADING + "\n")
    end = text.find("\n## ", start + len(HEADING))
    end = len(text) if end < 0 else end + 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:start] + section(agents, per_agent, run_date, summary, xfails) + text[end:])
