#!/usr/bin/env python3
"""Spindle's client over the remote transports against stdio, in one run.

Throughput: `spindle chat --prompt "/stream N mixed"` (N updates in one turn) against the
reference agent, over
stdio (the agent as a child), and over HTTP+SSE and WebSocket through a gateway serving the
same agent command (`spindle bridge --listen`, or `spindle serve`'s `/acp` when asked). Every
run's reply is compared with the stdio run's before its time counts. Reported per N: the
median time, the updates per second it makes, the ratio to stdio and the time added to
stdio's (for small N mostly the connection's set-up).

Latency: one piped `spindle chat` session per transport sends TURNS short prompts one after
the other; the time from writing a prompt to reading the end of its turn is one sample. The
added latency is a transport's percentile minus stdio's.

Standard library only. See bench/remote.sh.
"""

import argparse
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def start_gateway(spindle, kind, tmp):
    """Starts the gateway serving the reference agent; returns (process, /acp URL)."""
    agent = [spindle, "agent", "--delay-ms", "0", "--protocol", "1"]
    if kind == "bridge":
        cmd = [spindle, "bridge", "--listen", "127.0.0.1:0", "--agent-protocol", "1", "--"] + agent
    else:
        db = os.path.join(tmp, "serve.db")
        cmd = [spindle, "serve", "--no-checkpoints", "--protocol", "1", "--bind", "127.0.0.1:0", "--db", db,
               "--"] + agent
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        match = re.search(r"(https?|wss?)://(\d+\.\d+\.\d+\.\d+:\d+)", line)
        if match:
            return proc, "http://%s/acp" % match.group(2)
    proc.kill()
    sys.exit("the %s gateway printed no address" % kind)


def transport_flags(spindle, transport, url):
    if transport == "stdio":
        return [], ["--", spindle, "agent", "--delay-ms", "0", "--protocol", "1"]
    return ["--connect", url, "--transport", transport], []


def throughput(spindle, transport, url, n, reps):
    """Median seconds of `chat --prompt /stream N mixed`, and its reply."""
    before, after = transport_flags(spindle, transport, url)
    times, reply = [], None
    for _ in range(reps):
        cmd = [spindle, "chat"] + before + ["--prompt", "/stream %d mixed" % n] + after
        start = time.perf_counter()
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        elapsed = time.perf_counter() - start
        if out.returncode != 0:
            sys.exit("%s: exit %d: %s" % (transport, out.returncode, out.stderr.decode()[-500:]))
        if reply is not None and out.stdout != reply:
            sys.exit("%s: the reply changed between runs" % transport)
        reply = out.stdout
        times.append(elapsed)
    return statistics.median(times), reply


def latency(spindle, transport, url, turns):
    """Seconds per turn of a piped chat session: prompt written -> end of turn read."""
    before, after = transport_flags(spindle, transport, url)
    cmd = [spindle, "chat"] + before + after
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=0)
    samples = []
    buf = b""
    try:
        for i in range(turns + 1):
            start = time.perf_counter()
            proc.stdin.write(b"turn %d\n" % i)
            proc.stdin.flush()
            while b"\n[end_turn" not in buf:
                ready, _, _ = select.select([proc.stdout], [], [], 60)
                if not ready:
                    sys.exit("%s: turn %d did not end" % (transport, i))
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    sys.exit("%s: the chat ended early" % transport)
                buf += chunk
            elapsed = time.perf_counter() - start
            buf = buf.split(b"\n[end_turn", 1)[1].split(b"\n", 1)[-1]
            if i > 0:  # the first turn also opens the streams
                samples.append(elapsed)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return samples


def pct(samples, p):
    ordered = sorted(samples)
    k = min(len(ordered) - 1, max(0, int(round(p / 100.0 * (len(ordered) - 1)))))
    return ordered[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spindle", required=True)
    ap.add_argument("--gateway", choices=["bridge", "serve"], default="bridge")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--used-gateway", action="store_true",
                    help="also measure the turn latency on the gateway that served the "
                         "throughput runs, before the fresh gateway's (a row per transport)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="spindle-remote-bench-")
    gateway, url = start_gateway(args.spindle, args.gateway, tmp)
    transports = ["stdio", "http", "ws"]
    lines = []
    try:
        lines.append("Gateway: `spindle %s` serving `spindle agent --delay-ms 0 --protocol 1`; "
                     "client: `spindle chat` (release build), all on one machine (loopback), "
                     "in one run.\n" % ("bridge --listen" if args.gateway == "bridge" else "serve`'s `/acp"))
        lines.append("#### Throughput (`chat --prompt \"/stream N mixed\"`, median of %d runs; "
                     "every reply equal to stdio's)\n" % args.reps)
        lines.append("| N | stdio s | HTTP+SSE s | WebSocket s | stdio updates/s | HTTP+SSE updates/s "
                     "| WebSocket updates/s | HTTP+SSE / stdio | WebSocket / stdio "
                     "| HTTP+SSE added s | WebSocket added s |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in [int(s) for s in args.sizes.split(",") if s]:
            results = {}
            for t in transports:
                results[t] = throughput(args.spindle, t, url, n, args.reps)
            base_time, base_reply = results["stdio"]
            for t in ("http", "ws"):
                if results[t][1] != base_reply:
                    sys.exit("%s: the reply differs from stdio's at N=%d" % (t, n))
            h, w = results["http"][0], results["ws"][0]
            lines.append("| %s | %.3f | %.3f | %.3f | %s | %s | %s | %.2f | %.2f | %+.3f | %+.3f |" % (
                "{:,}".format(n), base_time, h, w,
                "{:,.0f}".format(n / base_time), "{:,.0f}".format(n / h), "{:,.0f}".format(n / w),
                h / base_time, w / base_time, h - base_time, w - base_time))
            print(lines[-1], flush=True)
        lines.append("")
        lines.append("#### Turn latency (%d short turns in one piped session; prompt written -> "
                     "end of turn read)\n" % args.turns)
        lines.append("| transport | p50 ms | p99 ms | added p50 ms | added p99 ms |")
        lines.append("|---|---|---|---|---|")
        # The turn latency is measured on a fresh gateway; with --used-gateway also on the one
        # that has just served the throughput runs (its sessions still open), first.
        used = None
        if args.used_gateway:
            # WebSocket first: the first session made after the big ones takes the hit,
            # whatever its transport (the store's reply rows, see BENCHMARKS.md).
            used = {t: latency(args.spindle, t, url, args.turns) for t in ("ws", "http")}
        gateway.send_signal(signal.SIGTERM)
        gateway.wait(timeout=10)
        gateway, url = start_gateway(args.spindle, args.gateway, tmp)
        lat = {t: latency(args.spindle, t, url, args.turns) for t in transports}
        b50, b99 = pct(lat["stdio"], 50) * 1e3, pct(lat["stdio"], 99) * 1e3
        rows = [("stdio", "stdio", lat), ("http", "HTTP+SSE", lat), ("ws", "WebSocket", lat)]
        if used is not None:
            rows += [("ws", "WebSocket, used gateway (first)", used),
                     ("http", "HTTP+SSE, used gateway (second)", used)]
        for t, label, source in rows:
            p50, p99 = pct(source[t], 50) * 1e3, pct(source[t], 99) * 1e3
            lines.append("| %s | %.2f | %.2f | %s | %s |" % (
                label, p50, p99,
                "-" if t == "stdio" else "%+.2f" % (p50 - b50),
                "-" if t == "stdio" else "%+.2f" % (p99 - b99)))
            print(lines[-1], flush=True)
        if used is not None:
            lines.append("")
            lines.append("Used gateway: the one that served the throughput runs above (their "
                         "sessions still open), measured before the fresh one, WebSocket first.")
    finally:
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(timeout=10)
        except subprocess.TimeoutExpired:
            gateway.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
