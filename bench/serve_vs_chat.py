#!/usr/bin/env python3
"""`spindle serve` against `spindle chat` on the same turn (issue 29): the time one page client
needs to see a `/stream N mixed` turn of the built-in agent end, against the time `spindle chat
--prompt` needs for the same turn, measured side by side in one run.

    python3 bench/serve_vs_chat.py [--spindle BIN] [--baseline BIN] [--updates N] [--reps K]
                                   [--postgres] [--out FILE] [--quick]

Per repetition and binary (`--baseline` first when given, so a before and an after binary are
measured alternately in the same run):

  chat      `spindle chat --prompt "/stream N mixed"` against the built-in agent (protocol 1, the
            default), fresh XDG directories: wall time from spawn to exit (agent start included),
            CPU of chat and its agent.
  serve     `spindle serve --bind 127.0.0.1:0 --cwd DIR` with a fresh data directory and every
            default (the SQLite store, protocol 1, checkpoints on, the built-in agent); a session,
            one page client reading `GET /api/sessions/ID/events` (asyncio socket in this process,
            applying every render op as bench/replicas_lib.py's Observer does), then the prompt:
            POST of the prompt -> the turn's end seen by that client (the agent's start included,
            as in chat's time), and the server's CPU during it, also split by thread: tokio's
            workers (the session task, HTTP, the agent's pipes) and the session's log writer.
  postgres  (with --postgres) the same as serve on a PostgreSQL database of its own (a throwaway
            server as in bench/replicas.py, fsync on).

Correctness, checked in every mode (exit status 1 otherwise): chat's reply and every page client's
agent text equal the generator's expected reply (length and FNV-1a 64 of `spindle agent
--emit-stream N --mix mixed --expect`), so the reader's text equals chat's. `--quick` is N = 2,000,
one repetition, for a check that it runs. Standard library only.
"""

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replicas_lib import Postgres, create_session, open_events, prompt, raise_fd_limit  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print(f"FAILED: {what}", flush=True)


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def matches(text, expect):
    """Whether `text` is the expected reply (length first: hashing 40 MB in Python takes a while)."""
    data = text.encode()
    return len(data) == expect["replyBytes"] and fnv1a64(data) == int(expect["replyFnv1a64"], 16)


class Reader:
    """One page client of `GET /api/sessions/ID/events`: applies every render op as the page does,
    keeping each entry's text as a list of pieces (a 40 MB reply rebuilt by string concatenation
    would make the reader, not the server, the slow part). Frames are (receipt ns, op count)."""

    def __init__(self, server, session):
        self.server, self.session = server, session
        self.order, self.kinds, self.turns, self.pieces, self.state = [], {}, {}, {}, {}
        self.frames = []
        self.bytes = 0  # of the frames' JSON
        self.ended = None  # why the stream ended early
        loop = asyncio.get_running_loop()
        self.connected = loop.create_future()
        self.task = asyncio.create_task(self.run())

    async def run(self):
        reader, writer = await open_events(self.server, self.session)
        data = []
        try:
            while True:
                line = await reader.readline()
                if not line:
                    self.ended = "the server closed the stream (a dropped slow reader?)"
                    return
                if line.startswith(b"data:"):
                    data.append(line[5:].strip())
                elif line in (b"\n", b"\r\n") and data:
                    payload = b"".join(data)
                    self.bytes += len(payload)
                    self.apply(json.loads(payload))
                    data = []
        except asyncio.CancelledError:
            return
        finally:
            writer.close()

    def apply(self, payload):
        ops = payload.get("ops", [])
        for op in ops:
            kind = op.get("op")
            if kind == "insert_entry":
                entry = op["entry"]
                key = entry["id"]
                if key not in self.kinds:
                    self.order.insert(min(op.get("index", len(self.order)), len(self.order)), key)
                self.kinds[key], self.turns[key] = entry.get("kind"), entry.get("turn", 0)
                self.pieces[key] = [entry.get("text") or ""]
            elif kind == "update_entry":
                self.pieces[op["id"]] = [op.get("entry", {}).get("text") or ""]
            elif kind == "append_text":
                self.pieces.setdefault(op["id"], []).append(op.get("text", ""))
            elif kind == "truncate_text":
                units = "".join(self.pieces.get(op["id"], [])).encode("utf-16-le")[: 2 * op.get("len", 0)]
                self.pieces[op["id"]] = [units.decode("utf-16-le", errors="ignore")]
            elif kind == "remove_entry" and op.get("id") in self.kinds:
                self.order.remove(op["id"])
                del self.kinds[op["id"]]
            elif kind == "set_state":
                self.state = op.get("state", {})
        self.frames.append((time.time_ns(), len(ops)))
        if not self.connected.done():
            self.connected.set_result(None)

    def turns_done(self):
        return self.state.get("turns", 0) - (1 if self.state.get("turnOpen") else 0)

    async def wait_turns(self, n, patience):
        deadline = time.time() + patience
        while self.turns_done() < n or self.state.get("turnOpen"):
            if self.ended or self.task.done():
                raise RuntimeError(f"the reader saw {self.turns_done()} of {n} turns end: {self.ended}")
            if time.time() > deadline:
                raise RuntimeError(f"the reader saw {self.turns_done()} of {n} turns end in {patience} s")
            await asyncio.sleep(0.005)

    def agent_text(self, from_turn):
        return "".join("".join(self.pieces.get(k, [])) for k in self.order
                       if self.kinds.get(k) == "agent_message" and self.turns.get(k, 0) >= from_turn)

    def close(self):
        self.task.cancel()


def fresh_env(tmp):
    env = dict(os.environ)
    for name in ("data", "config", "state", "cache"):
        os.makedirs(os.path.join(tmp, name), exist_ok=True)
    env.update(XDG_DATA_HOME=os.path.join(tmp, "data"), XDG_CONFIG_HOME=os.path.join(tmp, "config"),
               XDG_STATE_HOME=os.path.join(tmp, "state"), XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    env.pop("SPINDLE_DB", None)
    return env


def cpu_seconds(pid):
    """utime + stime of a live process, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid):
    """utime + stime of a live process's threads, summed by role: `log writer` (the session's
    `spindle-log-N` thread), `runtime` (tokio's workers: the session task, HTTP, the agent's pipes)
    and `other`."""
    roles = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                text = stat.read()
        except OSError:
            continue  # the thread ended meanwhile
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        role = ("log writer" if name.startswith("spindle-log-") else
                "runtime" if name.startswith("tokio-rt-worker") else "other")
        roles[role] = roles.get(role, 0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return roles


def postgres_cpu_seconds():
    """CPU of every `postgres` process (this machine runs only the benchmark's cluster): the live
    ones' own and, through the postmaster, that of the backends it has reaped."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        if "(postgres)" not in text:
            continue
        fields = text.rsplit(")", 1)[1].split()
        total += sum(int(f) for f in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def run_chat(spindle, text, tmp):
    os.makedirs(os.path.join(tmp, "cwd"), exist_ok=True)
    out_path = os.path.join(tmp, "reply.txt")
    started = time.perf_counter()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([spindle, "chat", "--prompt", text], stdout=out, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, cwd=os.path.join(tmp, "cwd"), env=fresh_env(tmp))
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    with open(out_path, encoding="utf-8") as f:
        reply = f.read()
    if reply.endswith("\n"):
        reply = reply[:-1]
    rc = os.waitstatus_to_exitcode(status)
    check(rc == 0, f"chat exited {rc}: {stderr[-400:]}")
    return dict(seconds=wall, cpu=usage.ru_utime + usage.ru_stime, text=reply)


async def run_serve(spindle, text, tmp, db=None, perf=None):
    cwd = os.path.join(tmp, "cwd")
    os.makedirs(cwd, exist_ok=True)
    argv = [spindle, "serve", "--bind", "127.0.0.1:0", "--cwd", cwd]
    if db:
        argv += ["--db", db]
    with open(os.path.join(tmp, "serve.log"), "w") as log:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                                   env=fresh_env(tmp))
    try:
        line = process.stdout.readline().decode()
        urls = [w for w in line.split() if w.startswith("http://")]
        if not urls:
            raise RuntimeError(f"serve printed no address: {line!r}; log {tmp}/serve.log")
        host, port = urls[0][len("http://"):].rstrip("/").split(":")
        server = SimpleNamespace(id="serve", host=host, port=int(port))
        session = await create_session(server)
        reader = Reader(server, session)
        await reader.connected
        done = reader.turns_done()
        recorder = None
        if perf:
            # The server's profile during the turn (`perf report -i FILE --no-children`).
            recorder = subprocess.Popen(["perf", "record", *os.environ.get("PERF_CALL_GRAPH", "-g").split(), "-o", perf, "-p", str(process.pid)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        cpu_before = cpu_seconds(process.pid)
        threads_before = thread_cpu_seconds(process.pid)
        pg_cpu_before = postgres_cpu_seconds() if db else 0
        reader_cpu_before = time.process_time()
        started = time.time_ns()
        await prompt(server, session, text)
        await reader.wait_turns(done + 1, patience=1200)
        if recorder:
            recorder.send_signal(signal.SIGINT)
            recorder.wait()
        seconds = (reader.frames[-1][0] - started) / 1e9
        cpu = cpu_seconds(process.pid) - cpu_before
        threads = {role: seconds - threads_before.get(role, 0)
                   for role, seconds in thread_cpu_seconds(process.pid).items()}
        pg_cpu = postgres_cpu_seconds() - pg_cpu_before if db else 0
        # The page client runs in this process: its CPU competes with the server's on 2 cores.
        reader_cpu = time.process_time() - reader_cpu_before
        frames = len(reader.frames)
        ops = sum(count for _, count in reader.frames)
        payload = reader.bytes
        agent_text = reader.agent_text(1)
        reader.close()
        return dict(seconds=seconds, cpu=cpu, pg_cpu=pg_cpu, reader_cpu=reader_cpu, text=agent_text, frames=frames,
                    ops=ops, payload=payload, threads=threads)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def run(args):
    raise_fd_limit()
    text = f"/stream {args.updates} mixed"
    binaries = [("before", args.baseline)] if args.baseline else []
    binaries.append(("after" if args.baseline else "spindle", args.spindle))
    expect = json.loads(subprocess.run(
        [args.spindle, "agent", "--emit-stream", str(args.updates), "--mix", "mixed", "--protocol", "1", "--expect"],
        check=True, capture_output=True).stdout)
    pg = None
    if args.postgres:
        try:
            pg = Postgres()
        except FileNotFoundError as missing:
            if os.environ.get("CI") == "true":
                sys.exit(f"serve vs chat: PostgreSQL is required under CI: {missing}")
            print(f"serve vs chat: the PostgreSQL part skipped: {missing}")
        if pg:
            pg.start()
    modes = ["chat", "serve"] + (["postgres"] if pg else [])
    results = {(name, mode): [] for name, _ in binaries for mode in modes}
    loads = [os.getloadavg()[0]]
    databases = 0
    try:
        for rep in range(args.reps):
            for name, binary in binaries:
                for mode in modes:
                    tmp = tempfile.mkdtemp(prefix="spindle-serve-vs-chat-")
                    try:
                        if mode == "chat":
                            result = run_chat(binary, text, tmp)
                        else:
                            db = None
                            if mode == "postgres":
                                databases += 1
                                db = pg.create_database(f"serve_vs_chat_{databases}")
                            perf = None
                            if args.perf and rep == 0:
                                perf = f"{args.perf}.{name}.{mode}.data"
                            result = await asyncio.wait_for(run_serve(binary, text, tmp, db, perf), args.timeout)
                    finally:
                        shutil.rmtree(tmp, ignore_errors=True)
                    ok = matches(result["text"], expect)
                    check(ok, f"{name} {mode} rep {rep + 1}: {len(result['text'].encode()):,} bytes of agent text, "
                              f"expected {expect['replyBytes']:,} (or a different hash)")
                    results[(name, mode)].append(result)
                    loads.append(os.getloadavg()[0])
                    frames = (f"  frames {result['frames']:,} ops {result['ops']:,} {result['payload'] / 1e6:.1f} MB  reader cpu {result['reader_cpu']:.2f} s"
                              if "frames" in result else "")
                    if "threads" in result:
                        frames += "  (" + ", ".join(f"{role} {seconds:.2f}" for role, seconds
                                                    in sorted(result["threads"].items())) + ")"
                    if mode == "postgres":
                        frames += f"  postgres cpu {result['pg_cpu']:.2f} s"
                    print(f"rep {rep + 1} {name:7} {mode:8} {result['seconds']:8.3f} s  cpu {result['cpu']:7.2f} s"
                          f"{frames}  load {loads[-1]:.2f}  {'ok' if ok else 'WRONG'}", flush=True)
    finally:
        if pg:
            pg.stop()
    report = []
    out = report.append
    out(f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} CPUs "
        f"({platform.processor() or platform.machine()}); load average {loads[0]:.2f} before, "
        f"{statistics.median(loads):.2f} median over the run, {loads[-1]:.2f} after; `{text}` (protocol 1), "
        f"{args.reps} repetition{'s' if args.reps > 1 else ''} per cell, binaries alternated; medians.")
    out("")
    head = "| binary | chat (wall) | serve, SQLite (prompt -> turn end seen) | serve / chat |"
    rule = "|---|---:|---:|---:|"
    if pg:
        head += (" serve, PostgreSQL | PostgreSQL / SQLite time | PostgreSQL delivery vs SQLite |"
                 " serve CPU on PostgreSQL (server) | PostgreSQL's CPU |")
        rule += "---:|---:|---:|---:|---:|"
    head += (" chat CPU (chat + agent) | serve CPU (server) | of which tokio workers / log writer |"
             " page client CPU (Python) |")
    rule += "---:|---:|---:|---:|"
    out(head)
    out(rule)
    for name, binary in binaries:
        med = {mode: statistics.median(r["seconds"] for r in results[(name, mode)]) for mode in modes}
        cpu = {mode: statistics.median(r["cpu"] for r in results[(name, mode)]) for mode in modes}
        row = (f"| {name} (`{os.path.relpath(binary, ROOT) if binary.startswith(ROOT) else binary}`) | "
               f"{med['chat']:.2f} s | {med['serve']:.2f} s | {med['serve'] / med['chat']:.2f}x |")
        if pg:
            row += (f" {med['postgres']:.2f} s | {med['postgres'] / med['serve']:.2f}x | "
                    f"{med['serve'] / med['postgres']:.2f}x | {cpu['postgres']:.2f} s | "
                    f"{statistics.median(r['pg_cpu'] for r in results[(name, 'postgres')]):.2f} s |")
        reader = statistics.median(r["reader_cpu"] for r in results[(name, "serve")])
        role = {r: statistics.median(run["threads"].get(r, 0) for run in results[(name, "serve")])
                for r in ("runtime", "log writer")}
        row += (f" {cpu['chat']:.2f} s | {cpu['serve']:.2f} s | {role['runtime']:.2f} s / "
                f"{role['log writer']:.2f} s | {reader:.2f} s |")
        out(row)
    out("")
    out("Every run: " + ", ".join(
        f"{name} {mode} " + "/".join(f"{r['seconds']:.2f}" for r in results[(name, mode)])
        for name, _ in binaries for mode in modes) + " s.")
    print("\n".join(report))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(report) + "\n")
    if FAILURES:
        print(f"serve vs chat: {len(FAILURES)} check(s) failed")
        return 1
    print("serve vs chat: chat's reply and every page client's text are the expected reply")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spindle", default=os.path.join(ROOT, "target", "release", "spindle"))
    parser.add_argument("--baseline", help="a second binary (before a change), measured alternately")
    parser.add_argument("--updates", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--postgres", action="store_true", help="also serve on PostgreSQL (own server)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds one serve run may take")
    parser.add_argument("--perf", metavar="PREFIX",
                        help="perf record -g the server during the first repetition's turns: PREFIX.BINARY.MODE.data")
    parser.add_argument("--quick", action="store_true", help="N = 2,000, one repetition (a check that it runs)")
    parser.add_argument("--out", help="also write the report (markdown) here")
    args = parser.parse_args()
    if args.quick:
        args.updates, args.reps = 2000, 1
    args.spindle = os.path.abspath(args.spindle)
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
