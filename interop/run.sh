#!/usr/bin/env bash
# Interop checks against peers written on the official ACP SDKs.
#
#   interop/run.sh            # builds, installs the pinned npm/pip deps, runs every check
#
# (a) Spindle's client (`spindle chat --prompt`) against `sdk-test-agent`, an agent on the
#     official Rust crate `agent-client-protocol`, v1 and v2.
# (b) Spindle's reference agent (`spindle agent`) driven by clients on the official
#     TypeScript SDK (v1 and experimental v2) and Python SDK (v1), and by the Rust SDK client.
# (c) The same peers through `spindle bridge`, each side speaking the other version.
# (e) The official SDK clients (the Rust `agent-client-protocol-http` client, the npm SDK's
#     experimental http-client and ws-client) drive the reference agent through Spindle's `/acp`
#     (`spindle serve` and `spindle bridge --listen`).
# (d) Spindle's remote client (`spindle chat --connect`, WebSocket and HTTP+SSE) against
#     `sdk-http-agent`, the SDK test agent behind the official `agent-client-protocol-http` server.
# Prints one line per check and "N passed, M failed"; exits 1 if any check failed.
# Env: SPINDLE_BIN / SDK_TEST_AGENT / SDK_BENCH_CLIENT / SCHEMA_CHECK to use prebuilt binaries,
#      INTEROP_VENV (default interop/python/.venv), PYTHON (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok   $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $*"; }

# --- build -------------------------------------------------------------------
if [[ -z "${SPINDLE_BIN:-}" || -z "${SDK_TEST_AGENT:-}" || -z "${SDK_BENCH_CLIENT:-}" || -z "${SCHEMA_CHECK:-}" ]]; then
  TARGET_DIR=$(cargo metadata --format-version 1 --no-deps | "${PYTHON:-python3}" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  cargo build --locked -q -p spindle || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
  # The SDK peers are a workspace of their own (see interop/rust-sdk-peers/Cargo.toml), built into ours.
  cargo build --locked -q --manifest-path interop/rust-sdk-peers/Cargo.toml --target-dir "$TARGET_DIR" \
    || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
  # Built on its own: its `schema-check` feature must not reach the `spindle` binary.
  cargo build --locked -q -p spindle-schema-check || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
  SPINDLE_BIN=${SPINDLE_BIN:-$TARGET_DIR/debug/spindle}
  SDK_TEST_AGENT=${SDK_TEST_AGENT:-$TARGET_DIR/debug/sdk-test-agent}
  SDK_BENCH_CLIENT=${SDK_BENCH_CLIENT:-$TARGET_DIR/debug/sdk-bench-client}
  SCHEMA_CHECK=${SCHEMA_CHECK:-$TARGET_DIR/debug/spindle-schema-check}
  # Outside the main workspace, so `cargo test --workspace` does not run the peers' own tests.
  if out=$(cargo test --locked -q --manifest-path interop/rust-sdk-peers/Cargo.toml --target-dir "$TARGET_DIR" 2>&1); then
    pass "rust-sdk-peers: cargo test (the SDK peers against each other)"
  else
    fail "rust-sdk-peers: cargo test"; echo "$out" | tail -20 | sed 's/^/    /'
  fi
fi
# Every conversation below is recorded (the agent's `--record`, `spindle chat --record`); at the
# end, every message Spindle sent in them is validated against the official JSON Schemas.
REC=$(mktemp -d)
trap 'rm -rf "$REC"' EXIT

# --- dependencies (pinned: interop/ts/package-lock.json, interop/python/requirements.txt)
(cd interop/ts && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || fail "npm ci in interop/ts"
VENV=${INTEROP_VENV:-$ROOT/interop/python/.venv}
if [[ ! -x "$VENV/bin/python" ]]; then
  "${PYTHON:-python3}" -m venv "$VENV" || fail "python venv"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check -r interop/python/requirements.txt || fail "pip install"
PY="$VENV/bin/python"

AGENT=("$SPINDLE_BIN" agent --delay-ms 0)
# The reference agent, recording its traffic to $REC/agent-LABEL.jsonl.
recorded_agent() { AGENT_REC=("$SPINDLE_BIN" agent --delay-ms 0 --record "$REC/agent-$1.jsonl"); }

# Runs a conversation client and folds its "N passed, M failed" line into the totals.
conversation() {
  local label=$1; shift
  local out
  out=$(timeout 120 "$@" 2>&1)
  local rc=$?
  echo "$out" | grep -E '^(ok|FAIL) ' | sed 's/^/  /'
  local line p f
  line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [[ -z "$line" ]]; then
    fail "$label: no summary (exit $rc)"; echo "$out" | tail -20 | sed 's/^/    /'; return
  fi
  p=${line%% passed*}; f=${line#*, }; f=${f%% failed}
  PASSED=$((PASSED + p)); FAILED=$((FAILED + f))
  [[ $rc -eq 0 ]] || fail "$label: exit $rc"
}

# Compares a bench consumer's {"replyBytes","replyFnv1a64"} with the generator's expectation.
same_reply() {
  local label=$1 protocol=$2 mix=$3 n=$4; shift 4
  local expect got
  expect=$("$SPINDLE_BIN" agent --emit-stream "$n" --mix "$mix" --protocol "$protocol" --expect)
  got=$(timeout 120 "$@" 2>/dev/null | tail -1)
  if [[ "$(jq_hash "$expect")" == "$(jq_hash "$got")" && -n "$(jq_hash "$got")" ]]; then
    pass "$label: /stream $n $mix v$protocol rebuilds the expected reply"
  else
    fail "$label: /stream $n $mix v$protocol: expected $expect, got ${got:-nothing}"
  fi
}
jq_hash() { "$PY" -c 'import json,sys
try: d=json.loads(sys.argv[1]); print(d["replyBytes"], d["replyFnv1a64"])
except Exception: print("")' "$1"; }

# --- (b) official-SDK clients drive the reference agent -----------------------
echo "# TypeScript SDK client -> spindle agent"
recorded_agent ts-v1; conversation "ts v1" node interop/ts/client.mjs conversation --protocol 1 -- "${AGENT_REC[@]}"
recorded_agent ts-v2; conversation "ts v2" node interop/ts/client.mjs conversation --protocol 2 -- "${AGENT_REC[@]}"
echo "# Python SDK client -> spindle agent"
recorded_agent python-v1; conversation "python v1" "$PY" interop/python/client.py conversation -- "${AGENT_REC[@]}"
echo "# bench consumers rebuild the generator's reply"
for v in 1 2; do
  for mix in mixed snapshot; do
    recorded_agent "rust-sdk-v$v-$mix"
    same_reply "rust-sdk client" $v $mix 2000 "$SDK_BENCH_CLIENT" --protocol $v "/stream 2000 $mix" -- "${AGENT_REC[@]}"
    same_reply "ts client" $v $mix 2000 node interop/ts/client.mjs bench --protocol $v "/stream 2000 $mix" -- "${AGENT[@]}"
  done
done
same_reply "rust-sdk client" 2 refine 2000 "$SDK_BENCH_CLIENT" --protocol 2 "/stream 2000 refine" -- "${AGENT[@]}"
same_reply "ts client" 2 refine 2000 node interop/ts/client.mjs bench --protocol 2 "/stream 2000 refine" -- "${AGENT[@]}"
same_reply "python client" 1 mixed 2000 "$PY" interop/python/client.py bench "/stream 2000 mixed" -- "${AGENT[@]}"
same_reply "python client" 1 snapshot 2000 "$PY" interop/python/client.py bench "/stream 2000 snapshot" -- "${AGENT[@]}"

# --- (a) Spindle's client against the Rust SDK test agent ----------------------
echo "# spindle chat -> sdk-test-agent (official Rust SDK)"
PLAIN_REPLY="Hello from the official Rust SDK test agent. This reply arrives in four chunks."
TOOL_REPLY="Permission granted: read notes.txt (3 lines)."
# The SDK agent itself, through the SDK client (sanity of the peer).
for v in 1 2; do
  got=$(timeout 60 "$SDK_BENCH_CLIENT" --protocol $v hello -- "$SDK_TEST_AGENT" --protocol $v 2>&1 | tail -1)
  want=$("$PY" -c 'import sys
h=0xcbf29ce484222325
for b in sys.argv[1].encode(): h=((h^b)*0x100000001b3)&(2**64-1)
print(len(sys.argv[1].encode()), "%016x"%h)' "$PLAIN_REPLY")
  [[ "$(jq_hash "$got")" == "$want" ]] && pass "sdk-bench-client v$v -> sdk-test-agent: plain reply" \
    || fail "sdk-bench-client v$v -> sdk-test-agent: got $got"
done
if "$SPINDLE_BIN" chat --help 2>/dev/null | grep -q -- '--prompt'; then
  for v in 1 2; do
    out=$(timeout 60 "$SPINDLE_BIN" chat --protocol $v --record "$REC/client-plain-v$v.jsonl" --prompt "hello" -- "$SDK_TEST_AGENT" --protocol $v 2>/dev/null); rc=$?
    [[ $rc -eq 0 && "$out" == "$PLAIN_REPLY" ]] && pass "spindle chat v$v -> sdk-test-agent: plain reply, exit 0" \
      || fail "spindle chat v$v -> sdk-test-agent: plain (exit $rc): ${out:0:200}"
    out=$(timeout 60 "$SPINDLE_BIN" chat --protocol $v --yes --record "$REC/client-tool-v$v.jsonl" --prompt "use the tool" -- "$SDK_TEST_AGENT" --protocol $v 2>/dev/null); rc=$?
    [[ $rc -eq 0 && "$out" == "$TOOL_REPLY" ]] && pass "spindle chat v$v -> sdk-test-agent: permission approved with --yes" \
      || fail "spindle chat v$v -> sdk-test-agent: tool (exit $rc): ${out:0:200}"
  done
else
  fail "spindle chat --prompt is not available in $SPINDLE_BIN (client interop not run)"
fi

# --- (c) the same peers through `spindle bridge` (the other protocol version on each side) --
echo "# official-SDK peers through spindle bridge"
BRIDGE_UP=("$SPINDLE_BIN" bridge --client-protocol 2 --agent-protocol 1 --)
BRIDGE_DOWN=("$SPINDLE_BIN" bridge --policy degrade --client-protocol 1 --agent-protocol 2 --)
recorded_agent bridge-ts-v2
conversation "ts v2 -> bridge -> v1 agent" node interop/ts/client.mjs conversation --protocol 2 -- \
  "${BRIDGE_UP[@]}" "${AGENT_REC[@]}" --protocol 1
recorded_agent bridge-ts-v1
SPINDLE_INTEROP_REFINE=repush conversation "ts v1 -> bridge -> v2 agent" node interop/ts/client.mjs conversation --protocol 1 -- \
  "${BRIDGE_DOWN[@]}" "${AGENT_REC[@]}" --protocol 2
recorded_agent bridge-python-v1
SPINDLE_INTEROP_REFINE=repush conversation "python v1 -> bridge -> v2 agent" "$PY" interop/python/client.py conversation -- \
  "${BRIDGE_DOWN[@]}" "${AGENT_REC[@]}" --protocol 2
# The bench consumers read the agent's stream through the bridge; the expectation is the agent's own.
same_reply "rust-sdk v2 -> bridge -> v1 agent" 1 mixed 2000 "$SDK_BENCH_CLIENT" --protocol 2 "/stream 2000 mixed" -- \
  "$SPINDLE_BIN" bridge --client-protocol 2 --agent-protocol 1 -- "${AGENT[@]}" --protocol 1
same_reply "rust-sdk v1 -> bridge -> v2 agent" 2 mixed 2000 "$SDK_BENCH_CLIENT" --protocol 1 "/stream 2000 mixed" -- \
  "$SPINDLE_BIN" bridge --client-protocol 1 --agent-protocol 2 -- "${AGENT[@]}" --protocol 2
for pair in "2 1" "1 2"; do
  set -- $pair
  got=$(timeout 60 "$SDK_BENCH_CLIENT" --protocol "$1" hello -- "$SPINDLE_BIN" bridge --client-protocol "$1" --agent-protocol "$2" -- "$SDK_TEST_AGENT" --protocol "$2" 2>&1 | tail -1)
  [[ "$(jq_hash "$got")" == "$want" ]] && pass "sdk-bench-client v$1 -> bridge -> sdk-test-agent v$2: plain reply" \
    || fail "sdk-bench-client v$1 -> bridge -> sdk-test-agent v$2: got $got"
  if "$SPINDLE_BIN" chat --help 2>/dev/null | grep -q -- '--prompt'; then
    out=$(timeout 60 "$SPINDLE_BIN" chat --protocol "$1" --yes --prompt "use the tool" -- "$SPINDLE_BIN" bridge --client-protocol "$1" --agent-protocol "$2" -- "$SDK_TEST_AGENT" --protocol "$2" 2>/dev/null); rc=$?
    [[ $rc -eq 0 && "$out" == "$TOOL_REPLY" ]] && pass "spindle chat v$1 -> bridge -> sdk-test-agent v$2: permission approved with --yes" \
      || fail "spindle chat v$1 -> bridge -> sdk-test-agent v$2: tool (exit $rc): ${out:0:200}"
  fi
done

# --- (d) Spindle's remote client against the official HTTP/WebSocket server ------------
# `sdk-http-agent`: the SDK test agent behind `agent-client-protocol-http`'s server (/acp).
echo "# spindle chat --connect -> sdk-http-agent (agent-client-protocol-http server)"
SDK_HTTP_AGENT=${SDK_HTTP_AGENT:-$(dirname "$SDK_TEST_AGENT")/sdk-http-agent}
HTTP_AGENT_OUT=$(mktemp)
"$SDK_HTTP_AGENT" --listen 127.0.0.1:0 >"$HTTP_AGENT_OUT" 2>/dev/null &
HTTP_AGENT_PID=$!
ACP_URL=""
for _ in $(seq 1 100); do
  ACP_URL=$(grep -o 'http://[0-9.:]*/acp' "$HTTP_AGENT_OUT" | head -1)
  [[ -n "$ACP_URL" ]] && break
  sleep 0.1
done
if [[ -z "$ACP_URL" ]]; then
  fail "sdk-http-agent did not start"
else
  for transport in ws http; do
    out=$(timeout 60 "$SPINDLE_BIN" chat --connect "$ACP_URL" --transport $transport --record "$REC/client-remote-plain-$transport.jsonl" --prompt "hello" 2>/dev/null); rc=$?
    [[ $rc -eq 0 && "$out" == "$PLAIN_REPLY" ]] && pass "spindle chat --connect ($transport) -> sdk-http-agent: plain reply, exit 0" \
      || fail "spindle chat --connect ($transport) -> sdk-http-agent: plain (exit $rc): ${out:0:200}"
    out=$(timeout 60 "$SPINDLE_BIN" chat --connect "$ACP_URL" --transport $transport --yes --record "$REC/client-remote-tool-$transport.jsonl" --prompt "use the tool" 2>/dev/null); rc=$?
    [[ $rc -eq 0 && "$out" == "$TOOL_REPLY" ]] && pass "spindle chat --connect ($transport) -> sdk-http-agent: permission approved with --yes" \
      || fail "spindle chat --connect ($transport) -> sdk-http-agent: tool (exit $rc): ${out:0:200}"
  done
fi
kill "$HTTP_AGENT_PID" 2>/dev/null; wait "$HTTP_AGENT_PID" 2>/dev/null; rm -f "$HTTP_AGENT_OUT"

# --- (e) the official SDK clients drive agents through Spindle's /acp -------------------
# `spindle serve --protocol 2` (a v2 agent, translated for these v1 clients per connection) and
# `spindle bridge --listen --agent-protocol 1` (a v1 agent: passed on as is) serve the reference
# agent over the RFD transport; the official Rust client (`sdk-http-client`,
# agent-client-protocol-http) and the npm SDK's experimental http-client and ws-client (all v1)
# drive it over HTTP+SSE and WebSocket.
# Every message Spindle's /acp sends is recorded (SPINDLE_ACP_RECORD_DIR) for the schema check.
echo "# official SDK clients -> spindle serve /acp and spindle bridge --listen"
SDK_HTTP_CLIENT=${SDK_HTTP_CLIENT:-$(dirname "$SDK_TEST_AGENT")/sdk-http-client}
# Starts a server command printing its URL on stdout; sets ACP_BASE (http://HOST:PORT/acp).
start_acp() {
  local out=$1; shift
  SPINDLE_ACP_RECORD_DIR="$REC" "$@" >"$out" 2>/dev/null &
  ACP_PID=$!
  ACP_BASE=""
  for _ in $(seq 1 100); do
    ACP_BASE=$(grep -o 'http://[0-9.:]*/' "$out" | head -1)
    [[ -n "$ACP_BASE" ]] && ACP_BASE="${ACP_BASE}acp" && break
    sleep 0.1
  done
}
ACP_OUT=$(mktemp)
ACP_DB=$(mktemp -d)
start_acp "$ACP_OUT" "$SPINDLE_BIN" serve --bind 127.0.0.1:0 --db "$ACP_DB/serve.db" --protocol 2 -- "${AGENT[@]}"
if [[ -z "$ACP_BASE" ]]; then
  fail "spindle serve did not start"
else
  conversation "rust-sdk http -> spindle serve /acp" "$SDK_HTTP_CLIENT" "$ACP_BASE"
  conversation "rust-sdk ws -> spindle serve /acp" "$SDK_HTTP_CLIENT" "ws://${ACP_BASE#http://}"
  conversation "ts http -> spindle serve /acp" node --experimental-websocket interop/ts/remote.mjs http "$ACP_BASE"
  conversation "ts ws -> spindle serve /acp" node --experimental-websocket interop/ts/remote.mjs ws "ws://${ACP_BASE#http://}"
fi
kill "$ACP_PID" 2>/dev/null; wait "$ACP_PID" 2>/dev/null
start_acp "$ACP_OUT" "$SPINDLE_BIN" bridge --listen 127.0.0.1:0 --agent-protocol 1 --db "$ACP_DB/bridge.db" -- "${AGENT[@]}"
if [[ -z "$ACP_BASE" ]]; then
  fail "spindle bridge --listen did not start"
else
  conversation "rust-sdk ws -> spindle bridge --listen" "$SDK_HTTP_CLIENT" "ws://${ACP_BASE#http://}"
  conversation "ts http -> spindle bridge --listen" node --experimental-websocket interop/ts/remote.mjs http "$ACP_BASE"
fi
kill "$ACP_PID" 2>/dev/null; wait "$ACP_PID" 2>/dev/null; rm -rf "$ACP_OUT" "$ACP_DB"

# --- every message Spindle sent above, against the official schemas ------------
echo "# schema: what spindle agent and spindle chat sent (v1/v2 schema.unstable.json; extensions: envelope only)"
schema_check() {
  local emitter=$1; shift
  [[ $# -gt 0 && -e "$1" ]] || { fail "schema ($emitter): no recording"; return; }
  local out line p f
  out=$("$SCHEMA_CHECK" --emitter "$emitter" "$@" 2>&1)
  echo "$out" | grep -vE '^[0-9]+ passed, [0-9]+ failed$' | sed 's/^/  /'
  line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
  [[ -n "$line" ]] || { fail "schema ($emitter): no summary"; return; }
  p=${line%% passed*}; f=${line#*, }; f=${f%% failed}
  PASSED=$((PASSED + p)); FAILED=$((FAILED + f))
}
shopt -s nullglob
schema_check agent "$REC"/agent-*.jsonl
schema_check client "$REC"/client-*.jsonl
shopt -u nullglob

echo "$PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
