#!/usr/bin/env python3
"""How a remote client's time depends on the way a server writes a turn, in one run.

The official Rust client (`sdk-bench-client --connect`) reads `/stream N mixed` over WebSocket (or
HTTP+SSE) from the floor (bench/acp_replay_server.py) written in several pacings, and from
Spindle's `spindle bridge --listen` and the official `agent-client-protocol-http` server, in
alternated rounds:
- `one`: the recorded turn in one write (the floor);
- `live`: at the pace the agent wrote it (the live floor, `--live`);
- `BYTES:SECONDS`: in pieces of BYTES, SECONDS apart (`--pieces BYTES --gap SECONDS`).
Each row: the median time, its ratio to the official server's, the client's peak resident memory
(median / largest) and how many runs the client's reader ran ahead of its handler (a peak of more
than twice the one-write floor's median: the reader queued what the handler had not taken).

    python3 bench/client_pacing.py --spindle target/release/spindle \\
        --sdk-client target/release/sdk-bench-client --sdk-server target/release/sdk-http-stdio-server

Standard library only; uses bench/remote_bench.py's runners.
"""

import argparse
import os
import statistics
import sys

import remote_bench as rb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spindle", required=True, help="the agent and the bridge")
    ap.add_argument("--sdk-client", required=True, help="interop's sdk-bench-client")
    ap.add_argument("--sdk-server", help="interop's sdk-http-stdio-server (the official server)")
    ap.add_argument("--floor-server", default=os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "acp_replay_server.py"))
    ap.add_argument("--transport", choices=["ws", "http"], default="ws")
    ap.add_argument("--multi-thread", action="store_true",
                    help="the client on tokio's multi-thread runtime")
    ap.add_argument("--size", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--pacings", default="one,live,16384:0.0001,131072:0.0005,262144:0.0005")
    args = ap.parse_args()
    agent = rb.agent_cmd(args.spindle)
    prompt = "/stream %d mixed" % args.size
    servers = {}
    for pacing in args.pacings.split(","):
        if pacing == "one":
            options = []
        elif pacing == "live":
            options = ["--live"]
        else:
            size, _, gap = pacing.partition(":")
            options = ["--pieces", size, "--gap", gap]
        servers["floor " + pacing] = rb.Server(
            "floor (%s)" % pacing, [sys.executable, args.floor_server] + options + ["--"] + agent)
    servers["Spindle bridge"] = rb.spindle_gateway(args.spindle, agent, "bridge", None,
                                                   "Spindle bridge")
    if args.sdk_server:
        servers["official"] = rb.Server("official", [args.sdk_server, "--"] + agent)
    client = ("sdk-mt" if args.multi_thread else "sdk", args.sdk_client)
    times = {name: [] for name in servers}
    peaks = {name: [] for name in servers}
    try:
        for server in servers.values():
            server.start()
        # The floors record the turn the first time they see the prompt; the others warm up.
        for name, server in servers.items():
            rb.run_once(rb.client_cmd(client, args.transport, server, prompt, agent),
                        "first run on %s" % name)
        reference = None
        for rep in range(args.reps):
            names = list(servers) if rep % 2 == 0 else list(servers)[::-1]
            for name in names:
                cmd = rb.client_cmd(client, args.transport, servers[name], prompt, agent)
                elapsed, out, peak = rb.run_once(cmd, "%s (run %d)" % (name, rep + 1))
                if reference is None:
                    reference = out
                elif out != reference:
                    sys.exit("%s: the reply differs from the first run's" % name)
                times[name].append(elapsed)
                peaks[name].append(peak)
    finally:
        for server in servers.values():
            server.stop()
    one = "floor one"
    base = statistics.median(peaks[one]) if one in peaks else min(min(p) for p in peaks.values())
    official = statistics.median(times["official"]) if "official" in times else None
    print("The official Rust client (%s runtime) over %s, `%s`, %d alternated runs; load average "
          "%s at the end.\n" % ("multi-thread" if args.multi_thread else "current-thread",
                                rb.TRANSPORT_NAMES[args.transport], prompt, args.reps, rb.load()))
    print("| server | s | x official | client MB | runs with the reader ahead |")
    print("|---|---:|---:|---:|---:|")
    for name in servers:
        med = statistics.median(times[name])
        ahead = sum(1 for p in peaks[name] if p > 2 * base)
        print("| %s | %.3f | %s | %.0f / %.0f | %d of %d |" % (
            name, med, "%.2f" % (official / med) if official and name != "official" else "-",
            statistics.median(peaks[name]) / 1024, max(peaks[name]) / 1024, ahead,
            len(peaks[name])))


if __name__ == "__main__":
    main()
