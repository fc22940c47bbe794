#!/usr/bin/env bash
# Spindle vs the official ACP SDKs, side by side in one run.
#
#   bench/run.sh            # N = 10^4, 10^5, 10^6 + mixes + message-length sweep; writes
#                           # BENCHMARKS-sdk.md and bench/plots/*.svg (about 10 min on 2 cores)
#   bench/run.sh --quick    # N = 10^3, debug build: every consumer must rebuild the same reply (CI); writes
#                           # to $TMPDIR unless --out is given; exits 1 on any wrong reply
# Extra options go to bench/bench.py (--reps K, --sizes 10000,100000, --out FILE).
# Env: PYTHON (default python3), INTEROP_VENV (default interop/python/.venv).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
QUICK=0
for arg in "$@"; do [[ "$arg" == "--quick" ]] && QUICK=1; done

# --quick checks correctness only: the debug build (already there after `cargo test`) will do.
PROFILE=release
[[ $QUICK -eq 1 ]] && PROFILE=debug
if [[ $PROFILE == release ]]; then
  cargo build --release --locked -q -p spindle -p spindle-interop-rust-sdk
else
  cargo build --locked -q -p spindle -p spindle-interop-rust-sdk
fi
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps | "${PYTHON:-python3}" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BIN=$TARGET_DIR/$PROFILE

(cd interop/ts && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
VENV=${INTEROP_VENV:-$ROOT/interop/python/.venv}
[[ -x "$VENV/bin/python" ]] || "${PYTHON:-python3}" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r interop/python/requirements.txt

status=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if [[ $QUICK -eq 1 ]]; then OUT=$TMP/BENCHMARKS-quick.md; SVG=$TMP/plots; else OUT=$ROOT/BENCHMARKS-sdk.md; SVG=$ROOT/bench/plots; fi

"${PYTHON:-python3}" bench/bench.py \
  --spindle "$BIN/spindle" --sdk-bench-client "$BIN/sdk-bench-client" --fnv "$BIN/fnv1a64-stdin" \
  --spindle-lib "$BIN/spindle-lib-bench-client" \
  --ts-client interop/ts/client.mjs --py-client interop/python/client.py --python "$VENV/bin/python" \
  --out "$OUT" --svg-dir "$SVG" --tmp "$TMP" "$@" || status=$?
[[ $QUICK -eq 1 ]] && cat "$OUT"
exit $status
