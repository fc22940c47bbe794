#!/usr/bin/env python3
"""Remote ACP side by side, in one run: Spindle's `/acp` server against the official one.

Servers, each serving the same agent command (`spindle agent --delay-ms 0 --protocol 1`, one
process per session):
- Spindle's gateway: `spindle bridge --listen` (or `spindle serve`'s `/acp` with --gateway serve);
  with --before BIN, the same gateway of another build too (main's, for before/after tables);
- the official one: `sdk-http-stdio-server` (interop/rust-sdk-peers), the crate
  `agent-client-protocol-http`'s server with the SDK's `AcpAgent` behind it;
- the floor: bench/acp_replay_server.py, which answers each prompt with a recording of the
  agent's turn, pre-encoded, in one write (no agent runs, nothing is parsed or relayed). A client
  is at least as slow with any server: its time against the floor is the client's own;
- the live floor: the same with `--live`, which writes the recording at the pace the agent wrote
  it (each read of the agent's stdout at the time it arrived): a relay that costs nothing, so a
  client's time against it is its own for a turn streamed live, as a real server streams it.
Clients, each over HTTP+SSE and WebSocket against every server, and over stdio for the reference:
- `spindle chat --connect URL --transport http|ws --prompt "/stream N mixed"` (and --before's);
- the official Rust client: `sdk-bench-client --connect URL PROMPT` (the crate's `HttpClient`),
  on a current-thread tokio runtime like every peer; with --sdk-multi-thread also on the
  multi-thread runtime (`sdk-bench-client --multi-thread`, what `#[tokio::main]` gives).

Throughput: N updates in one turn; the runs of one size go round-robin (every configuration once,
then again, every other round in the reverse order) so that load from the shared machine and a
long-lived server's growing number of sessions fall on all of them alike; the median of --reps
runs. Every run's output is compared with the same client's stdio output before its time counts
(`spindle chat`: its whole stdout; the official client: the reply's length and FNV-1a hash).
"x official" is the official server's time with the same client and transport divided by this
row's (above 1: faster than the official server); "floor / s" is the floor's time with the same
client and transport divided by this row's (1: the client's own time, no server could do better),
"live / s" the live floor's. "client MB": the client's peak resident memory (`wait4`'s
ru_maxrss; over stdio the agent it spawned counts too), median and largest of the runs.

Latency: one piped `spindle chat` session per server and transport sends TURNS short prompts one
after the other; the time from writing a prompt to reading the end of its turn is one sample. The
added latency is the percentile minus stdio's with the same binary; the median of the first and of
the last fifth of the turns shows whether a turn costs more as the session grows.

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
import threading
import time


class Server:
    """A running `/acp` server."""

    def __init__(self, label, cmd):
        self.label, self.cmd = label, cmd
        self.proc, self.url = None, None

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            match = re.search(r"(https?|wss?)://(\d+\.\d+\.\d+\.\d+:\d+)", line)
            if match:
                self.url = "http://%s/acp" % match.group(2)
                return self
        self.stop()
        sys.exit("%s printed no address" % self.label)

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def agent_cmd(spindle):
    return [spindle, "agent", "--delay-ms", "0", "--protocol", "1"]


def spindle_gateway(spindle, agent, kind, tmp, label):
    if kind == "bridge":
        return Server(label, [spindle, "bridge", "--listen", "127.0.0.1:0", "--agent-protocol", "1",
                              "--"] + agent)
    db = os.path.join(tmp, "serve-%d.db" % len(os.listdir(tmp)))
    return Server(label, [spindle, "serve", "--no-checkpoints", "--protocol", "1", "--bind",
                          "127.0.0.1:0", "--db", db, "--"] + agent)


def client_cmd(client, transport, server, prompt, agent):
    """The command of one throughput run: client = ("chat", BIN), ("sdk", BIN) or ("sdk-mt", BIN)
    (the official client on tokio's multi-thread runtime; over stdio it runs as "sdk")."""
    kind, binary = client
    if kind == "chat":
        if transport == "stdio":
            return [binary, "chat", "--prompt", prompt, "--"] + agent
        return [binary, "chat", "--connect", server.url, "--transport", transport, "--prompt", prompt]
    runtime = ["--multi-thread"] if kind == "sdk-mt" else []
    if transport == "stdio":
        return [binary] + runtime + [prompt, "--"] + agent
    url = server.url if transport == "http" else "ws" + server.url[len("http"):]
    return [binary] + runtime + ["--connect", url, prompt]


def run_once(cmd, what):
    """(seconds, stdout, peak resident KiB) of one client run."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        # wait4 for the client's own rusage; a run that outlives 600 s is killed, as
        # subprocess.run's timeout did.
        killer = threading.Timer(600, proc.kill)
        killer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        killer.cancel()
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit("%s: exit %d: %s" % (what, proc.returncode, err.read().decode()[-500:]))
        return elapsed, out.read(), usage.ru_maxrss


def latency(cmd, what, turns, first=None):
    """Seconds per turn of a piped chat session: prompt written -> end of turn read. The first
    turn (`first`, else a short one) is not counted: it also opens the streams."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=0)
    samples = []
    buf = b""
    try:
        for i in range(turns + 1):
            start = time.perf_counter()
            prompt = first.encode() if first and i == 0 else b"turn %d" % i
            proc.stdin.write(prompt + b"\n")
            proc.stdin.flush()
            while b"\n[end_turn" not in buf:
                ready, _, _ = select.select([proc.stdout], [], [], 60)
                if not ready:
                    sys.exit("%s: turn %d did not end" % (what, i))
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    sys.exit("%s: the chat ended early" % what)
                buf += chunk
            elapsed = time.perf_counter() - start
            buf = buf.split(b"\n[end_turn", 1)[1].split(b"\n", 1)[-1]
            if i > 0:
                samples.append(elapsed)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return samples


def pct(samples, p):
    ordered = sorted(samples)
    k = min(len(ordered) - 1, max(0, int(round(p / 100.0 * (len(ordered) - 1)))))
    return ordered[k]


TRANSPORT_NAMES = {"stdio": "stdio", "http": "HTTP+SSE", "ws": "WebSocket"}


def load():
    try:
        return "%.2f" % os.getloadavg()[0]
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spindle", required=True, help="the build measured")
    ap.add_argument("--before", help="another build (main's) measured beside it: its gateway and "
                                     "its chat")
    ap.add_argument("--sdk-server", required=True, help="interop's sdk-http-stdio-server")
    ap.add_argument("--sdk-client", required=True, help="interop's sdk-bench-client")
    ap.add_argument("--floor-server", default=os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "acp_replay_server.py"), help="the floor (bench/acp_replay_server.py)")
    ap.add_argument("--gateway", choices=["bridge", "serve"], default="bridge")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--after-big", type=int, default=100000,
                    help="also the latency of short turns in a session whose first turn was "
                         "`/stream N mixed` (a session's size must not slow its next turns); "
                         "0: not measured")
    ap.add_argument("--used-gateway", action="store_true",
                    help="also measure the turn latency on Spindle's gateway that served the "
                         "throughput runs, before the fresh gateway's (WebSocket first)")
    ap.add_argument("--sdk-multi-thread", action="store_true",
                    help="also the official client on tokio's multi-thread runtime (what "
                         "`#[tokio::main]` gives an application)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="spindle-remote-bench-")
    agent = agent_cmd(args.spindle)
    builds = [("this build", args.spindle)] + ([("main", args.before)] if args.before else [])
    gateway_name = "bridge --listen" if args.gateway == "bridge" else "serve`'s `/acp"
    servers = {"official": Server("official server", [args.sdk_server, "--"] + agent),
               "floor": Server("floor server", [sys.executable, args.floor_server, "--"] + agent),
               "live": Server("live floor server",
                              [sys.executable, args.floor_server, "--live", "--"] + agent)}
    for build, binary in builds:
        servers[build] = spindle_gateway(binary, agent, args.gateway, tmp, "Spindle (%s)" % build)
    server_label = {"official": "official (`agent-client-protocol-http`)",
                    "floor": "floor (`bench/acp_replay_server.py`)",
                    "live": "live floor (`bench/acp_replay_server.py --live`)"}
    for build, _ in builds:
        server_label[build] = "Spindle `%s` (%s)" % (gateway_name, build)
    clients = {"chat:" + b: ("chat", binary) for b, binary in builds}
    clients["sdk"] = ("sdk", args.sdk_client)
    client_label = {"sdk": "official Rust client"}
    if args.sdk_multi_thread:
        clients["sdk-mt"] = ("sdk-mt", args.sdk_client)
        client_label["sdk-mt"] = "official Rust client, multi-thread runtime"
    for b, _ in builds:
        client_label["chat:" + b] = "`spindle chat` (%s)" % b
    # (client, server, transport): each chat against its own build's gateway and the official
    # server; the official client against every server.
    configs = [(c, None, "stdio") for c in clients]
    for c in clients:
        targets = [b for b, _ in builds] if c.startswith("sdk") else [c.split(":", 1)[1]]
        for s in targets + ["official", "floor", "live"]:
            for t in ("http", "ws"):
                configs.append((c, s, t))
    lines = []
    load_before = load()
    try:
        for server in servers.values():
            server.start()
        lines.append("Servers, each serving `spindle agent --delay-ms 0 --protocol 1` (this build's "
                     "agent, one process per session): Spindle's `spindle %s`%s, and the official "
                     "crate `agent-client-protocol-http` 5.0.0's server (`sdk-http-stdio-server`, "
                     "interop/rust-sdk-peers); the floor and the live floor "
                     "(`bench/acp_replay_server.py`: the agent's recorded turn in one write, and "
                     "at the pace the agent wrote it). "
                     "Clients: `spindle chat --connect` and the official "
                     "Rust client (`sdk-bench-client --connect`, the same crate's `HttpClient`, on "
                     "a current-thread tokio runtime%s). "
                     "All on one machine (loopback), release builds, in one run; load average "
                     "%s at the start.\n" % (
                         gateway_name,
                         " of this build and of main (`--before`)" if args.before else "",
                         "; and with `--multi-thread` on the multi-thread one, what "
                         "`#[tokio::main]` gives" if args.sdk_multi_thread else "",
                         load_before))
        lines.append("#### Throughput (`/stream N mixed`: N updates in one turn; median of %d "
                     "round-robin runs, every other round in the reverse order; every output equal to the same client's over stdio)\n"
                     % args.reps)
        lines.append("| N | client | server | transport | s | updates/s | x official | floor / s "
                     "| live / s | client MB |")
        lines.append("|---:|---|---|---|---:|---:|---:|---:|---:|---:|")
        for n in [int(s) for s in args.sizes.split(",") if s]:
            prompt = "/stream %d mixed" % n
            times = {cfg: [] for cfg in configs}
            peaks = {cfg: [] for cfg in configs}
            outputs = {}
            # The floors record the agent's turn the first time they see the prompt: not timed.
            for floor in ("floor", "live"):
                run_once(client_cmd(clients["sdk"], "ws", servers[floor], prompt, agent),
                         "recording %s on the %s server" % (prompt, floor))
            for rep in range(args.reps):
                # Every other round in the reverse order: a long-lived server serves more sessions
                # with each run, so a fixed order would favour the configurations measured first.
                for cfg in (configs if rep % 2 == 0 else configs[::-1]):
                    c, s, t = cfg
                    what = "%s over %s to %s (N=%d)" % (client_label[c], t, s or "agent", n)
                    cmd = client_cmd(clients[c], t, servers.get(s), prompt, agent)
                    elapsed, out, peak = run_once(cmd, what)
                    if cfg in outputs and outputs[cfg] != out:
                        sys.exit("%s: the output changed between runs" % what)
                    outputs[cfg] = out
                    if t != "stdio" and out != outputs[(c, None, "stdio")]:
                        sys.exit("%s: the output differs from stdio's" % what)
                    times[cfg].append(elapsed)
                    peaks[cfg].append(peak)
            for cfg in configs:
                c, s, t = cfg
                med = statistics.median(times[cfg])
                ratio, floor, live = "-", "-", "-"
                if s is not None and s not in ("official", "floor", "live"):
                    ratio = "%.2f" % (statistics.median(times[(c, "official", t)]) / med)
                if s is not None and s != "floor":
                    floor = "%.2f" % (statistics.median(times[(c, "floor", t)]) / med)
                if s is not None and s not in ("floor", "live"):
                    live = "%.2f" % (statistics.median(times[(c, "live", t)]) / med)
                memory = "%.0f / %.0f" % (statistics.median(peaks[cfg]) / 1024,
                                          max(peaks[cfg]) / 1024)
                lines.append("| %s | %s | %s | %s | %.3f | %s | %s | %s | %s | %s |" % (
                    "{:,}".format(n), client_label[c], server_label[s] if s else "- (the agent "
                    "as a child)", TRANSPORT_NAMES[t], med, "{:,.0f}".format(n / med), ratio,
                    floor, live, memory))
                print(lines[-1], flush=True)
        lines.append("")
        lines.append("#### Turn latency (`spindle chat`, %d short turns in one piped session; "
                     "prompt written -> end of turn read; fresh servers)\n" % args.turns)
        lines.append("| chat | server | transport | p50 ms | p99 ms | added p50 ms | added p99 ms "
                     "| p50 first / last fifth ms |")
        lines.append("|---|---|---|---:|---:|---:|---:|---:|")
        used = {}
        if args.used_gateway:
            # WebSocket first: the first session made after the big ones takes the hit,
            # whatever its transport (the store's reply rows, see BENCHMARKS.md).
            for b, binary in builds:
                for t in ("ws", "http"):
                    cmd = client_cmd(("chat", binary), t, servers[b], None, agent)
                    cmd = cmd[:cmd.index("--prompt")]
                    used[(b, t)] = latency(cmd, "latency %s %s (used)" % (b, t), args.turns)
        for server in servers.values():
            server.stop()
            server.start()
        for b, binary in builds:
            # No checkpoints, as a remote session has none (one before each prompt would copy
            # the working directory).
            stdio = latency([binary, "chat", "--no-checkpoints", "--"] + agent,
                            "latency %s stdio" % b, args.turns)
            b50, b99 = pct(stdio, 50) * 1e3, pct(stdio, 99) * 1e3
            rows = [("-", "stdio", stdio)]
            for s in (b, "official"):
                for t in ("http", "ws"):
                    cmd = client_cmd(("chat", binary), t, servers[s], None, agent)
                    cmd = cmd[:cmd.index("--prompt")]
                    rows.append((server_label[s], TRANSPORT_NAMES[t],
                                 latency(cmd, "latency %s %s %s" % (b, s, t), args.turns)))
            if args.after_big:
                # A session that holds a long turn: what each short turn after it costs.
                first = "/stream %d mixed" % args.after_big
                for s in (b, "official"):
                    for t in ("http", "ws"):
                        cmd = client_cmd(("chat", binary), t, servers[s], None, agent)
                        cmd = cmd[:cmd.index("--prompt")]
                        rows.append((server_label[s] + ", after a {:,}-update turn".format(
                            args.after_big), TRANSPORT_NAMES[t],
                            latency(cmd, "latency %s %s %s after %s" % (b, s, t, first),
                                    min(args.turns, 50), first)))
            for t in ("ws", "http"):
                if (b, t) in used:
                    rows.append((server_label[b] + ", used (%s)" % (
                        "first" if t == "ws" else "second"), TRANSPORT_NAMES[t], used[(b, t)]))
            for server, transport, samples in rows:
                p50, p99 = pct(samples, 50) * 1e3, pct(samples, 99) * 1e3
                stdio_row = transport == "stdio"
                fifth = max(1, len(samples) // 5)
                lines.append("| %s | %s | %s | %.2f | %.2f | %s | %s | %.2f / %.2f |" % (
                    client_label["chat:" + b], server, transport, p50, p99,
                    "-" if stdio_row else "%+.2f" % (p50 - b50),
                    "-" if stdio_row else "%+.2f" % (p99 - b99),
                    pct(samples[:fifth], 50) * 1e3, pct(samples[-fifth:], 50) * 1e3))
                print(lines[-1], flush=True)
        if used:
            lines.append("")
            lines.append("Used: Spindle's gateway that served the throughput runs above (their "
                         "sessions still open), measured before the fresh servers, WebSocket "
                         "first.")
        lines.append("")
        lines.append("Load average at the end: %s." % load())
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
