#!/usr/bin/env python3
"""Spindle vs the official ACP SDKs: one side-by-side run, spliced into BENCHMARKS.md by bench/run.sh.

Called by bench/run.sh, which builds the binaries and installs the peers' dependencies.
Every consumer reads the same generated stream over a real pipe from `spindle agent`
(prompt `/stream N MIX`) and rebuilds the reply; its length + FNV-1a 64 must equal what
`spindle agent --emit-stream N --mix MIX --expect` says, or the row is marked wrong.

Measured per run: wall time; CPU (user+sys) of the whole process tree (consumer + the
agent it spawned, from wait4); the consumer's own CPU and peak RSS (VmHWM), sampled
from /proc every 5 ms until it exits.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def run_measured(cmd, stdout_path=None, timeout=900):
    """Runs cmd; returns dict(wall, cpu_tree, cpu_self, rss_mb, rc, stdout)."""
    out = open(stdout_path, "wb") if stdout_path else subprocess.PIPE
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    peak = {"hwm": 0, "cpu": 0.0}
    done = threading.Event()

    def sample():
        status, stat = f"/proc/{proc.pid}/status", f"/proc/{proc.pid}/stat"
        while not done.is_set():
            try:
                with open(status) as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            peak["hwm"] = max(peak["hwm"], int(line.split()[1]))
                with open(stat) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                    peak["cpu"] = (int(fields[11]) + int(fields[12])) / TICK
            except (OSError, ValueError, IndexError):
                pass
            done.wait(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout = b""
    if out is subprocess.PIPE:
        stdout = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if stdout_path:
        out.close()
    return {
        "wall": wall,
        "cpu_tree": usage.ru_utime + usage.ru_stime,
        "cpu_self": peak["cpu"],
        "rss_mb": peak["hwm"] / 1024,
        "rc": proc.returncode,
        "stdout": stdout,
    }


class Bench:
    def __init__(self, args):
        self.a = args
        self.agent = [args.spindle, "agent", "--delay-ms", "0"]
        self.tmp = args.tmp
        self.rows = []
        self._bytes = {}

    def expectation(self, n, mix, proto):
        out = subprocess.run(
            [self.a.spindle, "agent", "--emit-stream", str(n), "--mix", mix, "--protocol", str(proto), "--expect"],
            check=True, capture_output=True,
        ).stdout
        return json.loads(out)

    def stream_bytes(self, n, mix, proto):
        key = (n, mix, proto)
        if key not in self._bytes:
            p = subprocess.Popen(
                [self.a.spindle, "agent", "--emit-stream", str(n), "--mix", mix, "--protocol", str(proto)],
                stdout=subprocess.PIPE,
            )
            total = 0
            while chunk := p.stdout.read(1 << 20):
                total += len(chunk)
            p.wait()
            self._bytes[key] = total
        return self._bytes[key]

    def consumers(self, n, mix, proto):
        prompt = f"/stream {n} {mix}"
        c = {
            "floor": [self.a.spindle, "agent", "--emit-stream", str(n), "--mix", mix, "--protocol", str(proto)],
            # The generator into a pipe read by `cat` (discarding): the cost of moving
            # the bytes through a pipe at all, which every consumer pays.
            "floor-pipe": ["sh", "-c", 'exec "$0" "$@" | cat > /dev/null', self.a.spindle, "agent", "--emit-stream",
                           str(n), "--mix", mix, "--protocol", str(proto)],
            "spindle": ([self.a.spindle, "chat", "--protocol", str(proto), "--prompt", prompt, "--", *self.agent]
                        if self.a.have_chat else
                        [self.a.spindle_lib, "--protocol", str(proto), prompt, "--", *self.agent]),
            # The same, pipelined: the client's reader on a second thread while the engine applies.
            "spindle-2threads": [self.a.spindle_lib, "--multi-thread", "--protocol", str(proto), prompt, "--", *self.agent],
            # Spindle's runtime alone (framing, decoding, events; no engine): where the time goes.
            "spindle-runtime": [self.a.spindle_lib, "--runtime-only", "--protocol", str(proto), prompt, "--", *self.agent],
            "rust-sdk": [self.a.sdk_bench_client, "--protocol", str(proto), prompt, "--", *self.agent],
            "ts-sdk": ["node", self.a.ts_client, "bench", "--protocol", str(proto), prompt, "--", *self.agent],
        }
        if proto == 1:
            c["python-sdk"] = [self.a.python, self.a.py_client, "bench", prompt, "--", *self.agent]
        return c

    def hash_file(self, path):
        with open(path, "rb") as f:
            out = subprocess.run([self.a.fnv, "--strip-newline"], stdin=f, capture_output=True, check=True).stdout
        return json.loads(out)

    def measure(self, n, mix, proto, only=None, table="main"):
        expect = self.expectation(n, mix, proto)
        nbytes = self.stream_bytes(n, mix, proto)
        for name, cmd in self.consumers(n, mix, proto).items():
            if only and name not in only:
                continue
            if self.a.consumers and name not in self.a.consumers:
                continue
            if name in ("spindle-runtime", "spindle-2threads") and table != "main":
                continue
            best, got = None, {}
            path = os.path.join(self.tmp, "reply.txt")
            for _ in range(self.a.reps):
                if name.startswith("floor"):
                    r = run_floor(cmd)
                else:
                    chat = name == "spindle" and self.a.have_chat
                    r = run_measured(cmd, stdout_path=path if chat else None)
                if best is not None and r["wall"] >= best["wall"]:
                    continue
                best = r
                if name == "spindle" and self.a.have_chat:
                    got = self.hash_file(path)
                elif name.startswith("floor") or name == "spindle-runtime":
                    got = expect  # nothing rebuilt: a cost split, not a consumer
                else:
                    try:
                        got = json.loads(r["stdout"].decode().strip().splitlines()[-1])
                    except (ValueError, IndexError):
                        got = {}
            ok = best["rc"] == 0 and got.get("replyBytes") == expect["replyBytes"] and got.get("replyFnv1a64") == expect["replyFnv1a64"]
            status = "ok" if ok else f"WRONG reply (exit {best['rc']}, {got.get('replyBytes')} B vs {expect['replyBytes']} B)"
            row = dict(table=table, consumer=name, n=n, mix=mix, proto=proto, status=status, bytes=nbytes,
                       reply_bytes=expect["replyBytes"],
                       text_bytes=expect.get("transcriptTextBytes", expect["replyBytes"]), **{k: v for k, v in best.items() if k != "stdout"})
            self.rows.append(row)
            print(f"  {table:7} {name:11} N={n:<8} {mix:8} v{proto} {best['wall']:8.3f}s cpu {best['cpu_tree']:7.2f}s "
                  f"rss {best['rss_mb']:7.1f} MB  {status}", flush=True)


def run_floor(cmd):
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, stdout=devnull, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return {"wall": wall, "cpu_tree": usage.ru_utime + usage.ru_stime, "cpu_self": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024, "rc": os.waitstatus_to_exitcode(status), "stdout": b""}


# ------------------------------------------------------------------ report

def fmt_ratio(x):
    return "-" if x is None else (f"{x:.1f}x" if x < 100 else f"{x:.0f}x")


def write_report(bench, path, svg_dir, meta):
    rows = [r for r in bench.rows]
    by = {}
    for r in rows:
        by[(r["table"], r["n"], r["mix"], r["proto"], r["consumer"])] = r
    lines = []
    lines.append("<!-- generated by bench/run.sh; do not edit by hand -->")
    lines.append("## Spindle vs the official ACP SDKs")
    lines.append("")
    lines.append(meta)
    lines.append("")
    lines.append("Each consumer reads the same `session/update` stream from `spindle agent` (prompt `/stream N MIX`) "
                 "over a real pipe and rebuilds the reply; `ok` means its length and FNV-1a 64 equal the generator's "
                 "expectation. *floor*: the generator writing into `/dev/null`; *floor-pipe*: the generator writing into a pipe read and discarded by `cat`; *spindle-2threads*: `spindle-lib-bench-client --multi-thread` (the client's reader and dispatch on a second thread while the engine applies updates; not the default, see below); *spindle-runtime*: Spindle's `AcpClient` alone (framing, decoding, events; no transcript engine, reply not rebuilt), to show where Spindle's time goes. Throughput = N / wall time. "
                 "CPU = user+sys of the consumer and the agent it spawned. RSS = the consumer's own peak. "
                 "Ratios: Spindle's throughput / the consumer's (higher = Spindle faster); for the floor, Spindle's wall / floor wall.")
    for table, title in (("main", "Throughput against N (v1, `mixed`: 80% message chunks)"),
                         ("v2", "v2 (`mixed`)"), ("mixes", "Other mixes"),
                         ("length", "Single message length (`chunks` mix: one message of N chunks of ~31 B; 1 KB .. 10 MB)"),
                         ("refine", "Refinement-heavy streams (`refine` mix; v1 SDKs cannot represent the clears, v2 shown)")):
        trs = [r for r in rows if r["table"] == table]
        if not trs:
            continue
        lines.append("")
        lines.append(f"### {title}")
        lines.append("")
        lines.append("| N | mix | v | consumer | stream MB | wall s | notif/s | MB/s | CPU s | RSS MB | vs Spindle | reply |")
        lines.append("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in trs:
            if "wall" not in r:
                lines.append(f"| {r['n']:,} | {r['mix']} | {r['proto']} | {r['consumer']} | | | | | | | | {r['status']} |")
                continue
            sp = by.get((table, r["n"], r["mix"], r["proto"], "spindle"))
            ratio = None
            if sp and "wall" in sp and r["consumer"] != "spindle":
                ratio = (sp["wall"] / r["wall"]) if r["consumer"].startswith("floor") else (r["wall"] / sp["wall"])
            mb = r["bytes"] / 1e6
            lines.append(
                f"| {r['n']:,} | {r['mix']} | {r['proto']} | {r['consumer']} | {mb:.1f} | {r['wall']:.3f} | "
                f"{r['n'] / r['wall']:,.0f} | {mb / r['wall']:.1f} | {r['cpu_tree']:.2f} | {r['rss_mb']:.1f} | "
                f"{fmt_ratio(ratio) if r['consumer'] != 'spindle' else '1.0x'} | {r['status']} |")
    lines.append("")
    lines.append(targets(by))
    lines.append("")
    lines.append(f"Plots: [throughput vs N]({svg_dir}/throughput.svg), [cost vs message length]({svg_dir}/length.svg).")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def targets(by):
    n = max((k[1] for k in by if k[0] == "main"), default=None)
    if n is None:
        return ""
    sp = by.get(("main", n, "mixed", 1, "spindle"))
    out = [f"### Targets at N = {n:,} (v1 mixed)", ""]
    if not sp or "wall" not in sp:
        out.append("Spindle's client was not measured (`spindle chat --prompt` missing): targets not evaluated.")
        return "\n".join(out)
    for name, want in (("rust-sdk", 6), ("ts-sdk", 8), ("python-sdk", 20)):
        r = by.get(("main", n, "mixed", 1, name))
        if r and "wall" in r:
            x = r["wall"] / sp["wall"]
            verdict = "met" if x >= want else f"MISSED by {want / x:.2f}x"
            out.append(f"- Spindle >= {want}x {name}: **{x:.1f}x**, {verdict}")
    for floor, what in (("floor", "the generator into /dev/null"), ("floor-pipe", "the generator through a pipe into `cat`")):
        fl = by.get(("main", n, "mixed", 1, floor))
        if fl and "wall" in fl:
            x = sp["wall"] / fl["wall"]
            verdict = "met" if x <= 4 else f"MISSED by {x / 4:.1f}x"
            out.append(f"- Spindle <= 4x the floor ({what}, {fl['wall']:.3f} s): **{x:.1f}x**, {verdict}")
    text_mb = sp.get("text_bytes", sp["reply_bytes"]) / 1e6
    limit = 2 * text_mb + 20
    rss = sp["rss_mb"]
    verdict = "met" if rss < limit else f"MISSED by {rss - limit:.0f} MB"
    strict = 2 * sp["reply_bytes"] / 1e6 + 20
    strict_verdict = "met" if rss < strict else f"missed by {rss - strict:.0f} MB"
    out.append(f"- Peak RSS < 2x the transcript's text ({text_mb:.1f} MB: reply, thoughts, tool output) + 20 MB"
               f" = {limit:.0f} MB: **{rss:.0f} MB**, {verdict}. Counting the final reply's text only"
               f" ({sp['reply_bytes'] / 1e6:.1f} MB) the bound is {strict:.0f} MB: {strict_verdict}.")
    return "\n".join(out)


# ------------------------------------------------------------------ svg

COLORS = {"floor": "#888888", "floor-pipe": "#bbbbbb", "spindle-runtime": "#ff7f0e", "spindle": "#d62728", "spindle-2threads": "#8c564b", "rust-sdk": "#1f77b4", "ts-sdk": "#2ca02c", "python-sdk": "#9467bd",
          "spindle refine": "#ff9896", "rust-sdk refine": "#aec7e8", "ts-sdk refine": "#98df8a"}


def svg_plot(path, title, xlabel, ylabel, series, logy=True):
    """series: {name: [(x, y), ...]}; log-log axes."""
    import math
    W, H, L, R, T, B = 720, 440, 80, 170, 40, 60
    pts = [p for s in series.values() for p in s if p[0] > 0 and p[1] > 0]
    if not pts:
        return
    lx = [math.log10(p[0]) for p in pts]
    ly = [math.log10(p[1]) if logy else p[1] for p in pts]
    x0, x1 = math.floor(min(lx)), math.ceil(max(lx))
    y0, y1 = (math.floor(min(ly)), math.ceil(max(ly))) if logy else (0, max(ly) * 1.1)
    x1 = max(x1, x0 + 1)
    y1 = max(y1, y0 + 1) if logy else y1
    sx = lambda v: L + (math.log10(v) - x0) / (x1 - x0) * (W - L - R)
    sy = lambda v: T + (1 - ((math.log10(v) if logy else v) - y0) / (y1 - y0)) * (H - T - B)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    for e in range(x0, x1 + 1):
        x = L + (e - x0) / (x1 - x0) * (W - L - R)
        o.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H - B}" stroke="#eee"/>')
        o.append(f'<text x="{x:.1f}" y="{H - B + 18}" text-anchor="middle">1e{e}</text>')
    if logy:
        for e in range(y0, y1 + 1):
            y = T + (1 - (e - y0) / (y1 - y0)) * (H - T - B)
            o.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#eee"/>')
            o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">1e{e}</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#333"/>')
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 15}" text-anchor="middle">{xlabel}</text>')
    o.append(f'<text transform="translate(18,{(T + H - B) / 2}) rotate(-90)" text-anchor="middle">{ylabel}</text>')
    for i, (name, s) in enumerate(series.items()):
        s = sorted(p for p in s if p[0] > 0 and p[1] > 0)
        if not s:
            continue
        c = COLORS.get(name, "#000")
        dash = ' stroke-dasharray="5,3"' if "refine" in name else ""
        o.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="' +
                 " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s) + '"/>')
        for x, y in s:
            o.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{c}"/>')
        ly_ = T + 10 + i * 18
        o.append(f'<line x1="{W - R + 12}" y1="{ly_}" x2="{W - R + 36}" y2="{ly_}" stroke="{c}" stroke-width="2"{dash}/>')
        o.append(f'<text x="{W - R + 42}" y="{ly_ + 4}">{name}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def plots(bench, svg_dir):
    thr = {}
    for r in bench.rows:
        if r["table"] == "main" and "wall" in r and r["status"] == "ok":
            thr.setdefault(r["consumer"], []).append((r["n"], r["n"] / r["wall"]))
    svg_plot(os.path.join(svg_dir, "throughput.svg"), "Throughput vs N (v1 mixed stream, real pipe)",
             "N notifications", "notifications / s", thr)
    cost = {}
    for r in bench.rows:
        if r["table"] in ("length", "refine") and "wall" in r and r["status"] == "ok":
            name = r["consumer"] + (" refine" if r["table"] == "refine" else "")
            # Cost per MB received: flat = linear in bytes.
            cost.setdefault(name, []).append((r["bytes"], r["cpu_tree"] / (r["bytes"] / 1e6)))
    svg_plot(os.path.join(svg_dir, "length.svg"), "CPU per MB received vs bytes received (flat = linear)",
             "bytes received (chunks: one message of that size; dashed: refine mix)", "CPU seconds / MB", cost)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--spindle", required=True)
    p.add_argument("--sdk-bench-client", required=True)
    p.add_argument("--fnv", required=True)
    p.add_argument("--spindle-lib", required=True, help="spindle-lib-bench-client, used when spindle chat is missing")
    p.add_argument("--ts-client", required=True)
    p.add_argument("--py-client", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--svg-dir", required=True)
    p.add_argument("--tmp", required=True)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--sizes", default=None, help="comma-separated N for the main table")
    p.add_argument("--consumers", default=None, help="comma-separated consumers to run (default: all)")
    p.add_argument("--main-only", action="store_true", help="only the main table (v1 mixed), no v2/mixes/length")
    p.add_argument("--v2-sizes", default=None,
                   help="comma-separated N for the v2 table (kept with --main-only when given)")
    a = p.parse_args()
    a.consumers = set(a.consumers.split(",")) if a.consumers else None
    # The honest consumer is the CLI itself; the library client stands in until `spindle chat` exists.
    chat_help = subprocess.run([a.spindle, "chat", "--help"], capture_output=True, text=True)
    a.have_chat = chat_help.returncode == 0 and "--prompt" in chat_help.stdout
    print("spindle consumer: " + ("`spindle chat --prompt`" if a.have_chat else
                                  "`spindle-lib-bench-client` (`spindle chat --prompt` not built)"), flush=True)
    b = Bench(a)
    if a.quick:
        sizes, v2_sizes, others, lengths = [1000], [1000], [("snapshot", 1), ("refine", 2)], [1_000, 100_000]
    else:
        sizes = [int(x) for x in a.sizes.split(",")] if a.sizes else [10_000, 100_000, 1_000_000]
        v2_sizes = [100_000, 1_000_000]
        others = [("snapshot", 1), ("snapshot", 2), ("chunks", 1)]
        lengths = [1_000, 10_000, 100_000, 1_000_000, 10_000_000]
    for n in sizes:
        b.measure(n, "mixed", 1, table="main")
    if a.main_only:
        v2_sizes, others, lengths = [], [], []
    if a.v2_sizes:
        v2_sizes = [int(x) for x in a.v2_sizes.split(",")]
    for n in v2_sizes:
        b.measure(n, "mixed", 2, table="v2")
    for mix, proto in others:
        b.measure(100_000 if not a.quick else 1000, mix, proto, table="mixes")
    # Chunks average ~31 B of reply: pick N so the one message is `length` bytes.
    chunk_bytes = max(1, b.expectation(1000, "chunks", 1)["replyBytes"] / 1000)
    for length in lengths:
        n = max(1, int(length / chunk_bytes))
        b.measure(n, "chunks", 1, only=("floor-pipe", "spindle", "rust-sdk", "ts-sdk"), table="length")
        b.measure(n, "refine", 2, only=("floor-pipe", "spindle", "rust-sdk", "ts-sdk"), table="refine")
    os.makedirs(a.svg_dir, exist_ok=True)
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    meta = (f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} CPUs ({cpu}); "
            f"{'--quick (correctness only, timings meaningless)' if a.quick else 'full run'}; best of {a.reps}. "
            "Peers: Rust `agent-client-protocol` 5.0.0, npm `@agentclientprotocol/sdk` 2.4.0, "
            "PyPI `agent-client-protocol` 0.12.1. "
            + ("*spindle* = `spindle chat --prompt` (runtime + engine + CLI)." if a.have_chat else
               "*spindle* = `spindle-lib-bench-client` (Spindle's `AcpClient` + `TranscriptEngine`, as `spindle chat` "
               "would use them; `spindle chat --prompt` was not built yet)."))
    write_report(b, a.out, os.path.relpath(a.svg_dir, os.path.dirname(os.path.abspath(a.out))), meta)
    plots(b, a.svg_dir)
    wrong = [r for r in b.rows if not (r["status"] == "ok" or r["status"].startswith("n/a"))]
    missing = [r for r in b.rows if r["status"].startswith("n/a")]
    print(f"{len(b.rows) - len(wrong) - len(missing)} ok, {len(wrong)} wrong, {len(missing)} not measured; report: {a.out}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
