#!/usr/bin/env bash
# Browser tests of `spindle serve` in headless Chromium (playwright-core, no browser download).
# Usage: tests/browser/run.sh PATH/TO/spindle
# Needs: node, `npm ci` run in this directory, Chromium at $CHROMIUM (default /usr/bin/chromium).
# Builds nothing. Starts its own `spindle serve` on a free loopback port with a temporary
# database, prints "N passed, M failed", exits non-zero on failure. Screenshots go to
# test-output/browser/ at the repository root.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$#" -lt 1 ]; then
  echo "usage: $0 PATH/TO/spindle" >&2
  exit 2
fi
spindle="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
if [ ! -x "$spindle" ]; then
  echo "not an executable: $1" >&2
  exit 2
fi
if [ ! -d "$here/node_modules/playwright-core" ]; then
  echo "playwright-core missing: run 'npm ci' in $here" >&2
  exit 2
fi
out="${SPINDLE_TEST_OUTPUT:-$here/../../test-output/browser}"
mkdir -p "$out"
exec node "$here/scenarios.js" "$spindle" "$(cd "$out" && pwd)"
