#!/usr/bin/env bash
# Installs the pinned production ACP agents for the real-agent tests, from the registries only:
# the npm agents at the versions of the committed package-lock.json (tests/real-agents/node_modules),
# fast-agent-acp from PyPI into tests/real-agents/venv (it needs Python >= 3.13).
# Install scripts stay off (npm's default here): every agent runs without them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
start=$(date +%s)
# npm ci refuses this lock (npm 11 leaves out other platforms' optional packages, then calls the
# lock out of sync), so install from the lock without rewriting it: every version stays as locked.
npm install --no-save --no-audit --no-fund --loglevel=error
# Codex runs its shell commands in a bubblewrap sandbox: without bwrap every command fails.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get install -y -qq bubblewrap || { apt-get update -qq && apt-get install -y -qq bubblewrap; }) >/dev/null
  else
    echo "install.sh: bwrap (Debian package bubblewrap) is missing: Codex's shell checks will fail" >&2
  fi
fi
python=""
for candidate in python3.13 python3.14 /root/.pyenv/versions/3.13*/bin/python3 python3; do
  if command -v "$candidate" >/dev/null 2>&1 &&
     "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)' 2>/dev/null; then
    python="$candidate"; break
  fi
done
if [ -n "$python" ]; then
  [ -x venv/bin/python ] || "$python" -m venv venv
  venv/bin/pip install --quiet -r requirements.txt
else
  echo "install.sh: no Python >= 3.13 found: fast-agent-acp is not installed (its checks will fail)" >&2
fi
echo "install.sh: agents installed in $(( $(date +%s) - start ))s ($(du -sh node_modules | cut -f1) node_modules)"
