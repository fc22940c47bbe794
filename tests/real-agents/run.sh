#!/usr/bin/env bash
# The "real agents" stage: every pinned production agent x every model script through
# `spindle chat --prompt --record`, checked against the scripted model (see runner.py).
# Needs tests/real-agents/install.sh first and a built `spindle` (target/debug by default).
# Prints one line per check and ends with `N passed, M failed`; exits non-zero when M > 0.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
spindle="${SPINDLE:-$here/../../target/debug/spindle}"
[ -x "$spindle" ] || { echo "run.sh: no spindle binary at $spindle (cargo build -p spindle)" >&2; exit 2; }
exec python3 "$here/runner.py" --spindle "$spindle" "$@"
