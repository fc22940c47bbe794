#!/usr/bin/env bash
# The page benchmark of issue #15: `spindle serve` in headless Chromium (playwright-core, no browser
# download), `/stream N mixed` turns in a fresh session, one tab and many tabs, then a reopen.
# Usage: bench/browser/run.sh [--quick] [--save NAME] [bench.js options] PATH/TO/spindle
#   --quick      N = 2,000, 2 tabs, debug build is fine (CI): checks every page ends with the
#                server's transcript and reopens to its last screen; exit 1 if not. No timing asserted.
#   --save NAME  keep the JSON as bench/browser/results/NAME.json and regenerate the "Page" section
#                of BENCHMARKS.md from results/before.json and results/after.json (whichever exist)
#   other options go to bench.js: --sizes 20000,100000 --tabs 10 --label NAME --json FILE
#                --assets DIR (page files from DIR) --timeout SECS
# Needs node and Chromium at $CHROMIUM (default /usr/bin/chromium); installs the pinned
# playwright-core (npm ci) on first use. Builds nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
save=""
args=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --save) save="${2:?--save needs a name}"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ "${#args[@]}" -lt 1 ]; then
  sed -n '2,13p' "$0" >&2
  exit 2
fi
binary="${args[${#args[@]}-1]}"
if [ ! -x "$binary" ]; then
  echo "not an executable: $binary" >&2
  exit 2
fi
args[${#args[@]}-1]="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
if [ ! -d "$here/node_modules/playwright-core" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
if [ -z "${SPINDLE_COMMIT:-}" ] && git -C "$root" rev-parse HEAD >/dev/null 2>&1; then
  SPINDLE_COMMIT="$(git -C "$root" rev-parse --short=12 HEAD)"
  # Uncommitted edits to what the binary serves make the commit only approximate.
  if [ -n "$(git -C "$root" status --porcelain -- crates/spindle-web crates/spindle 2>/dev/null)" ]; then
    SPINDLE_COMMIT="$SPINDLE_COMMIT (with uncommitted changes in crates/spindle-web or crates/spindle)"
  fi
  export SPINDLE_COMMIT
fi
if [ -n "$save" ]; then
  mkdir -p "$here/results"
  status=0
  node "$here/bench.js" --label "$save" --json "$here/results/$save.json" "${args[@]}" || status=$?
  results=()
  for name in before after; do
    [ -f "$here/results/$name.json" ] && results+=("$here/results/$name.json")
  done
  node "$here/report.js" --write "$root/BENCHMARKS.md" "${results[@]}"
  exit $status
else
  exec node "$here/bench.js" "${args[@]}"
fi
