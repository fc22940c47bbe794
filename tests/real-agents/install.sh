#!/usr/bin/env bash
# Installs the pinned production ACP agents for the real-agent tests the way a user does: with
# `spindle agents install ID` from a registry file served on loopback (registry_install.py: npx
# entries for package.json's npm pins, a uvx entry for requirements.txt's fast-agent pin, a binary
# entry built from the spindle binary), into Spindle's data directory under agents-data/.
# Needs a built spindle (SPINDLE, default target/debug/spindle: cargo build -p spindle), node and
# npm, and Python >= 3.13 for fast-agent. Install scripts stay off (npm's default here): every
# agent runs without them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
spindle="${SPINDLE:-$here/../../target/debug/spindle}"
[ -x "$spindle" ] || { echo "install.sh: no spindle binary at $spindle (cargo build -p spindle)" >&2; exit 2; }
start=$(date +%s)
# Codex runs its shell commands in a bubblewrap sandbox: without bwrap every command fails.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get install -y -qq bubblewrap || { apt-get update -qq && apt-get install -y -qq bubblewrap; }) >/dev/null
  else
    echo "install.sh: bwrap (Debian package bubblewrap) is missing: Codex's shell checks will fail" >&2
  fi
fi
python3 "$here/registry_install.py" --spindle "$spindle" --data-home "$here/agents-data"
echo "install.sh: agents installed in $(( $(date +%s) - start ))s ($(du -sh "$here/agents-data" | cut -f1) in agents-data)"
