#!/usr/bin/env python3
"""`spindle serve` replicas on one PostgreSQL database (issue #17): delivery to observers on another
replica against the owner's own observers, memory of 3 replicas x K observers, failover time.

    python3 bench/replicas.py [--spindle BIN] [--quick] [--only throughput,latency,memory,failover]

Starts its own PostgreSQL (initdb in a temporary directory, a free loopback port, fsync on; stopped
and removed at the end) and release `spindle serve --db postgres://... --replica-id X --lease-ttl T`
replicas on loopback. Observers are page clients: `GET /api/sessions/ID/events` (render ops), read
by asyncio sockets in this process. Four parts, each on a database of its own:

  throughput  replicas A and B, the reference agent (`spindle agent --delay-ms 0`); a session on A,
              one observer on A (the single-node path) and one on B (cross-replica: B reads the
              lines A committed from the wire log on a NOTIFY and renders them itself); turns of
              `/stream N mixed`. Per observer: render ops and updates per second (prompt POST to the
              turn's end seen); and for every event A's observer got, how much later B's observer
              held the same agent text (the added delay of the cross-replica path, p50/p99).
  latency     replicas A and B with bench/replicas_agent.py, whose chunks carry their write time
              (ns); one turn of N chunks paced at PACE us: agent write -> observer receipt, p50/p99,
              on A and on B.
  memory      replicas A, B, C (reference agent), a session on A; RSS of each after a `/stream M
              mixed` turn with no observer; then K light observers per replica (one connection
              each, nothing parsed), RSS attached, the same turn again, RSS and peak after.
  failover    replicas A (agent pacing 2 ms), B, C; a `/stream` turn on A observed on B and C; kill
              -9 of A mid-stream; the lease's expiry is read from `session_leases`; the failover time
              is lease expiry -> the first op an observer on B or C gets after it. The first
              `--failover-trials` wait for automatic takeover (without it, detected as no op within
              TTL + `--auto-margin` after expiry, a prompt sent to B then triggers the takeover and
              the report says so); `--prompt-trials` more send a prompt to B right after the kill
              (B takes the session as soon as the lease has expired).

Correctness is checked in every mode (the exit status is 1 otherwise): every full observer ends
with exactly the agent text of the transcript API, every light observer sees the turn end, and
after a failover the transcript still holds every agent line an observer had seen before the kill.
`--quick` (CI, bench/run.sh --quick) runs every part at a small size in under 20 s; its timings
mean nothing. Standard library only.
"""

import argparse
import asyncio
import bisect
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replicas_lib import (  # noqa: E402
    LightObserver, Observer, Postgres, Replica, create_session, entry_texts, get_json,
    percentile, prompt, raise_fd_limit, wait_listed)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print(f"FAILED: {what}", flush=True)


def ms(ns):
    return ns / 1e6


class Bench:
    def __init__(self, args, pg, tmp):
        self.args, self.pg, self.tmp = args, pg, tmp
        self.replicas = []
        self.databases = 0
        self.report = []

    def database(self, label):
        self.databases += 1
        return self.pg.create_database(f"bench{self.databases}_{label}")

    def start(self, url, replica_id, agent, ttl=None, extra=()):
        replica = Replica(self.args.spindle, url, replica_id, ttl or self.args.ttl, agent, self.tmp, extra)
        self.replicas.append(replica)
        return replica

    def reference_agent(self, delay_ms=0):
        return [self.args.spindle, "agent", "--delay-ms", str(delay_ms)]

    def stop_all(self):
        for replica in self.replicas:
            replica.stop()
        self.replicas = []

    def out(self, line=""):
        print(line, flush=True)
        self.report.append(line)

    async def transcript_agent_text(self, replica, session, from_turn=0):
        transcript = await get_json(replica, f"/api/sessions/{session}/transcript")
        return "".join(entry_texts(transcript, "agent_message", from_turn))

    async def warm_session(self, owner, followers):
        """A session on `owner` whose agent has started and answered one prompt, listed everywhere."""
        session = await create_session(owner)
        for replica in followers:
            await wait_listed(replica, session)
        probe = Observer(owner, session)
        await prompt(owner, session, "hello")
        await probe.wait_turns(1)  # the answer (the greeting before it is no turn)
        probe.close()
        return session

    async def check_views(self, observers, session, what, from_turn=0):
        truth = await self.transcript_agent_text(observers[0].replica, session, from_turn)
        check(truth != "", f"{what}: no agent text in the transcript")
        for observer in observers:
            seen = observer.agent_text(from_turn)
            check(seen == truth, f"{what}: the observer on {observer.replica.id} holds {len(seen)} chars of agent "
                  f"text, the transcript API {len(truth)}")
        return truth

    # ---- throughput: owner's observer vs another replica's -------------------------------------

    def sqlite_url(self, label):
        """A SQLite database file of its own: the embedded default, one server, no replicas."""
        self.databases += 1
        return os.path.join(self.tmp, f"bench{self.databases}_{label}.sqlite")

    async def stream_turns(self, owner, observers, session, text, turns):
        """`turns` turns of `text` prompted on `owner`; per turn and observer: seconds from the
        prompt's POST to the turn's end seen, ops, frames; and the events of each turn."""
        rows, spans = [], []
        for turn in range(turns):
            done = observers[0].turns_done()
            marks = [len(o.events) for o in observers]
            started = time.time_ns()
            await prompt(owner, session, text)
            await asyncio.gather(*(o.wait_turns(done + 1) for o in observers))
            rows.append([dict(ops=sum(e[1] for e in o.events[m:]), frames=len(o.events[m:]),
                              seconds=(o.events[-1][0] - started) / 1e9) for o, m in zip(observers, marks)])
            spans.append([o.events[m:] for o, m in zip(observers, marks)])
            await self.check_views(observers, session, f"{text!r} turn {turn + 1} on {owner.id}")
        return rows, spans

    # ---- throughput: owner's observer vs another replica's -------------------------------------

    async def throughput(self):
        args = self.args
        text = f"/stream {args.updates} mixed"
        url = self.database("throughput")
        a = self.start(url, "a", self.reference_agent(0))
        b = self.start(url, "b", self.reference_agent(0))
        session = await self.warm_session(a, [b])
        on_a, on_b = Observer(a, session), Observer(b, session)
        await asyncio.gather(on_a.connected, on_b.connected)
        rows, spans = await self.stream_turns(a, [on_a, on_b], session, text, args.turns)
        lags = [lag for span in spans for lag in cross_lags(span[0], span[1])]
        on_a.close(), on_b.close()
        self.stop_all()
        # The peer: one server on SQLite (the default), same agent, same turns.
        single = self.start(self.sqlite_url("throughput"), "single", self.reference_agent(0))
        session = await self.warm_session(single, [])
        alone = Observer(single, session)
        await alone.connected
        single_rows, _ = await self.stream_turns(single, [alone], session, text, args.turns)
        alone.close()
        self.stop_all()
        median = lambda rows, key, i: statistics.median(r[i][key] for r in rows)  # noqa: E731
        self.out(f"#### Delivery rate: `{text}` prompted on A, one observer on A and one on B "
                 f"(median of {args.turns} turn{'s' if args.turns > 1 else ''})")
        self.out()
        self.out("| observer | path | prompt -> turn end seen | updates/s | render ops/s | SSE frames | time vs A |")
        self.out("|---|---|---:|---:|---:|---:|---:|")
        base = median(rows, "seconds", 0)
        for name, path, table, i in (("A", "owner (single-node path on PostgreSQL)", rows, 0),
                                     ("B", "other replica (fed from PostgreSQL)", rows, 1),
                                     ("single", "one server on SQLite, no replicas (the default)", single_rows, 0)):
            seconds = median(table, "seconds", i)
            self.out(f"| {name} | {path} | {seconds:.3f} s | {args.updates / seconds:,.0f} | "
                     f"{median(table, 'ops', i) / seconds:,.0f} | {median(table, 'frames', i):,.0f} | "
                     f"{seconds / base:.2f}x |")
        self.out()
        ahead = sum(1 for lag in lags if lag < 0)
        self.out(f"B's receipt of the same agent text minus A's, for every event of A's observer ({len(lags):,} samples; "
                 f"negative: B first): p1 {ms(percentile(lags, 1)):.2f} ms, p50 {ms(percentile(lags, 50)):.2f} ms, "
                 f"p99 {ms(percentile(lags, 99)):.2f} ms; B first in {ahead:,} of them.")
        self.out()

    # ---- latency: agent write -> observer, on the owner and on another replica ------------------

    async def stamped_turn(self, owner, observers, session):
        """The stamping agent's paced turn, after a first one that starts the agent."""
        args = self.args
        await asyncio.gather(*(o.connected for o in observers))
        await prompt(owner, session, "1 0")
        await asyncio.gather(*(o.wait_turns(1) for o in observers))
        for observer in observers:
            observer.latencies.clear()
        await prompt(owner, session, f"{args.chunks} {args.pace_us}")
        await asyncio.gather(*(o.wait_turns(2) for o in observers))
        await self.check_views(observers, session, f"latency turn on {owner.id}")
        for observer in observers:
            check(len(observer.latencies) == args.chunks,
                  f"latency: the observer on {observer.replica.id} got {len(observer.latencies)} of {args.chunks} stamps")
            observer.close()

    async def latency(self):
        args = self.args
        agent = [sys.executable, os.path.join(ROOT, "bench", "replicas_agent.py")]
        url = self.database("latency")
        a = self.start(url, "a", agent, extra=("--protocol", "1"))
        b = self.start(url, "b", agent, extra=("--protocol", "1"))
        session = await create_session(a)
        await wait_listed(b, session)
        on_a, on_b = Observer(a, session, stamps=True), Observer(b, session, stamps=True)
        await self.stamped_turn(a, [on_a, on_b], session)
        self.stop_all()
        single = self.start(self.sqlite_url("latency"), "single", agent, extra=("--protocol", "1"))
        session = await create_session(single)
        alone = Observer(single, session, stamps=True)
        await self.stamped_turn(single, [alone], session)
        self.stop_all()
        self.out(f"#### Latency: agent write -> observer receipt ({args.chunks:,} chunks, one every "
                 f"{args.pace_us} us, stamped by the agent)")
        self.out()
        self.out("| observer | path | p50 | p99 | max | p99 vs A |")
        self.out("|---|---|---:|---:|---:|---:|")
        p99_a = percentile(on_a.latencies, 99)
        for name, path, observer in (("A", "owner (single-node path on PostgreSQL)", on_a),
                                     ("B", "other replica (fed from PostgreSQL)", on_b),
                                     ("single", "one server on SQLite, no replicas (the default)", alone)):
            values = observer.latencies
            self.out(f"| {name} | {path} | {ms(percentile(values, 50)):.2f} ms | {ms(percentile(values, 99)):.2f} ms | "
                     f"{ms(max(values)):.2f} ms | {percentile(values, 99) / p99_a:.3g}x |")
        self.out()
        self.out(f"B minus A: p50 {ms(percentile(on_b.latencies, 50) - percentile(on_a.latencies, 50)):+.2f} ms, "
                 f"p99 {ms(percentile(on_b.latencies, 99) - p99_a):+.2f} ms.")
        self.out()

    # ---- memory: 3 replicas x K observers -----------------------------------------------------

    async def memory(self):
        args = self.args
        url = self.database("memory")
        replicas = [self.start(url, name, self.reference_agent(0)) for name in ("a", "b", "c")]
        a = replicas[0]
        session = await self.warm_session(a, replicas[1:])

        async def turn_without_observers():
            target = (await get_json(a, f"/api/sessions/{session}/transcript"))["state"]["turns"] + 1
            await prompt(a, session, f"/stream {args.memory_updates} mixed")
            deadline = time.time() + 120
            for replica in replicas:
                while True:
                    state = (await get_json(replica, f"/api/sessions/{session}/transcript"))["state"]
                    if state["turns"] >= target and not state["turnOpen"]:
                        break
                    check(time.time() < deadline, f"memory: {replica.id} never showed the turn end")
                    if time.time() > deadline:
                        return
                    await asyncio.sleep(0.05)

        # One full observer per replica checks the text; it connects while the session is short, so
        # that its view holds every entry (a reset sends the last entries only, and every
        # `/stream` turn of the reference agent appends to the same message id).
        full = [Observer(r, session) for r in replicas]
        await asyncio.gather(*(o.connected for o in full))
        await turn_without_observers()
        await asyncio.sleep(args.settle)
        idle = [r.rss_kib() for r in replicas]
        light = [LightObserver(r, session) for r in replicas for _ in range(args.observers)]
        started = time.time()
        await asyncio.wait_for(asyncio.gather(*(o.connected for o in light)), 120)
        connect_seconds = time.time() - started
        await asyncio.sleep(args.settle)
        attached = [r.rss_kib() for r in replicas]
        done = full[0].turns_done()
        for observer in light:
            observer.arm()
        began = time.time_ns()
        await prompt(a, session, f"/stream {args.memory_updates} mixed")
        await asyncio.gather(*(o.wait_turns(done + 1) for o in full))
        try:
            await asyncio.wait_for(asyncio.gather(*(o.ended for o in light)), 120)
        except asyncio.TimeoutError:
            pass
        ended = [o for o in light if o.ended.done()]
        check(len(ended) == len(light), f"memory: {len(light) - len(ended)} of {len(light)} light observers never saw the turn end "
              f"({sum(o.dropped for o in light)} streams ended early)")
        last = max([o.ended_at for o in ended] + [o.events[-1][0] for o in full])
        after = [r.rss_kib() for r in replicas]
        peak = [r.hwm_kib() for r in replicas]
        await self.check_views(full, session, "memory turns")
        for observer in full + light:
            observer.close()
        self.stop_all()
        k = args.observers
        self.out(f"#### Memory: 3 replicas x {k:,} observers of one session run by A "
                 f"(`/stream {args.memory_updates:,} mixed` turns)")
        self.out()
        self.out(f"| replica | RSS, no light observer (after a turn) | RSS, {k:,} observers attached | per observer | "
                 f"RSS after a turn to all | peak (VmHWM) | attached / none |")
        self.out("|---|---:|---:|---:|---:|---:|---:|")
        for i, replica in enumerate(replicas):
            role = "A (owner)" if i == 0 else f"{replica.id.upper()} (follower)"
            self.out(f"| {role} | {idle[i] / 1024:.1f} MiB | {attached[i] / 1024:.1f} MiB | "
                     f"{(attached[i] - idle[i]) / k:.1f} KiB | {after[i] / 1024:.1f} MiB | "
                     f"{peak[i] / 1024:.1f} MiB | {attached[i] / idle[i]:.2f}x |")
        self.out()
        total = len(light) + len(full)
        seconds = (last - began) / 1e9
        self.out(f"Each replica also has one full observer (it applies every op; the text check), connected before the "
                 f"first turn and counted in every column. {len(light):,} light observers connected in "
                 f"{connect_seconds:.2f} s; the turn "
                 f"reached all of them {seconds:.2f} s after the prompt ({total * args.memory_updates / seconds:,.0f} "
                 f"update deliveries/s); {sum(o.dropped for o in light)} streams dropped.")
        self.out()

    # ---- failover ------------------------------------------------------------------------------

    async def failover(self):
        args = self.args
        url = self.database("failover")
        db = url.rsplit("/", 1)[1]
        b = self.start(url, "b", self.reference_agent(0))
        c = self.start(url, "c", self.reference_agent(0))
        mode = args.failover_mode  # None: detect (automatic takeover if an op comes without a prompt)
        trials = []
        for trial in range(args.failover_trials + args.prompt_trials):
            if trial == args.failover_trials:
                mode = "prompt"  # then trials with a prompt to B at once: B claims at expiry
            a = self.start(url, "a", self.reference_agent(2))
            session = await self.warm_session(a, [b, c])
            on_b, on_c = Observer(b, session), Observer(c, session)
            await asyncio.gather(on_b.connected, on_c.connected)
            await prompt(a, session, f"/stream {args.failover_updates} chunks")
            base = on_b.agent_length()
            deadline = time.time() + 60
            while on_b.agent_length() < base + 2000 and time.time() < deadline:
                await asyncio.sleep(0.005)
            killed = time.time_ns()
            a.kill9()
            self.replicas.remove(a)
            seen_b, seen_c = on_b.agent_text(), on_c.agent_text()
            row = self.pg.psql(db, f"SELECT owner, expires_at FROM session_leases WHERE session_id = {session}")
            owner, expires_ms = row.split("|")
            check(owner == "a", f"failover: the lease was held by {owner!r}, not a, at the kill")
            expiry = int(expires_ms) * 1_000_000
            marks = {o: len(o.events) for o in (on_b, on_c)}
            prompted = None
            if mode == "prompt":
                prompted = time.time_ns()  # before the expiry: B holds the prompt until it can take the lease
                await prompt(b, session, "after the failover")
            else:
                wait_until = expiry + int((args.ttl + args.auto_margin) * 1e9)
                while time.time_ns() < wait_until and not after_expiry(on_b, on_c, marks, expiry):
                    await asyncio.sleep(0.005)
                if after_expiry(on_b, on_c, marks, expiry):
                    mode = "auto"
                else:
                    check(mode is None, "failover: no automatic takeover")
                    mode = "prompt"  # no automatic takeover in this build: from now on a prompt triggers it
                    prompted = time.time_ns()
                    await prompt(b, session, "after the failover")
            deadline = time.time() + 60
            while not after_expiry(on_b, on_c, marks, expiry) and time.time() < deadline:
                await asyncio.sleep(0.002)
            first = after_expiry(on_b, on_c, marks, expiry)
            check(first is not None, "failover: no op reached an observer after the lease expired")
            # The session goes on: one more prompt (to C) is answered and followed everywhere.
            await prompt(c, session, "after the takeover")
            await asyncio.gather(on_b.wait_prompt_answered("after the takeover"),
                                 on_c.wait_prompt_answered("after the takeover"))
            truth = await self.check_views([on_b, on_c], session, f"failover trial {trial + 1}")
            for name, seen in (("b", seen_b), ("c", seen_c)):
                check(truth.startswith(seen), f"failover: agent text observer {name} had seen before the kill is gone")
            owner_after = self.pg.psql(db, f"SELECT owner FROM session_leases WHERE session_id = {session}")
            entry = after_expiry(on_b, on_c, marks, expiry, "insert_entry")
            trials.append(dict(kill_to_expiry=expiry - killed, first=first, entry=entry, expiry=expiry, prompted=prompted,
                               prompted_before_expiry=prompted is not None and prompted < expiry,
                               owner=owner_after, acked=len(seen_b)))
            on_b.close(), on_c.close()
        self.stop_all()
        how = {"auto": "automatic takeover (no prompt)", "prompt": "takeover triggered by a prompt sent to B"}
        self.out(f"#### Failover: kill -9 of the owner mid-stream (`/stream {args.failover_updates:,} chunks`, agent pacing "
                 f"2 ms), lease TTL {args.ttl:g} s")
        self.out()
        self.out("| trial | how the session moved | kill -> lease expiry | lease expiry -> first op on B or C "
                 "| lease expiry -> first new entry | prompt sent -> first op | new owner | agent chars seen before the kill, kept |")
        self.out("|---:|---|---:|---:|---:|---:|---|---:|")
        for i, t in enumerate(trials):
            first_time, first_replica, first_ops = t["first"] or (0, "-", "-")
            if t["prompted"] is None:
                how_row, prompt_cell = how["auto"], "-"
            else:
                when = "before the lease expired" if t["prompted_before_expiry"] else "after the lease expired"
                how_row = f"prompt to B {when}"
                prompt_cell = f"{ms(first_time - t['prompted']):.0f} ms"
            entry_cell = f"{ms(t['entry'][0] - t['expiry']):.0f} ms" if t["entry"] else "-"
            self.out(f"| {i + 1} | {how_row} | {ms(t['kill_to_expiry']):.0f} ms | "
                     f"{ms(first_time - t['expiry']):.0f} ms (on {first_replica}: {first_ops}) | "
                     f"{entry_cell} | {prompt_cell} | {t['owner']} | {t['acked']:,} |")
        self.out()


def cross_lags(events_a, events_b):
    """For each event of A's observer, how much later B's observer held at least as much agent text
    (negative: B had it first)."""
    times_b, lengths_b = [], []
    best = -1
    for when, _, length, _ in events_b:
        best = max(best, length)
        times_b.append(when)
        lengths_b.append(best)
    lags = []
    for when, ops, length, _ in events_a:
        if ops == 0:
            continue
        at = bisect.bisect_left(lengths_b, length)
        if at < len(lengths_b):
            lags.append(times_b[at] - when)  # negative when B had it first
    return lags


def after_expiry(on_b, on_c, marks, expiry, op=""):
    """The first event with ops (with an `op` op, when given) either observer got after the lease's
    expiry: (time, replica, op kinds)."""
    found = None
    for observer in (on_b, on_c):
        for when, ops, _, kinds in observer.events[marks[observer]:]:
            if when >= expiry and ops and op in kinds and (found is None or when < found[0]):
                found = (when, observer.replica.id, f"{ops} op{'s' if ops > 1 else ''}: {kinds}")
                break
    return found


async def run(args):
    raise_fd_limit()
    try:
        pg = Postgres()
    except FileNotFoundError as missing:
        if os.environ.get("CI") == "true":
            sys.exit(f"replicas bench: PostgreSQL is required under CI: {missing}")
        print(f"replicas bench skipped: {missing}")
        return 0
    tmp = tempfile.mkdtemp(prefix="spindle-replicas-bench-")
    bench = Bench(args, pg, tmp)
    try:
        pg.start()
        version = pg.psql("postgres", "SHOW server_version")
        load = os.getloadavg()[0]
        bench.out(f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} CPUs "
                  f"({platform.processor() or platform.machine()}), load average {load:.2f} before; PostgreSQL "
                  f"{version.split()[0]} on loopback (fsync on); `{os.path.relpath(args.spindle, ROOT)}`"
                  f"{' (--quick: sizes too small for the timings to mean anything)' if args.quick else ''}.")
        bench.out()
        parts = args.only.split(",")
        for part in ("throughput", "latency", "memory", "failover"):
            if part in parts:
                started = time.time()
                try:
                    await asyncio.wait_for(getattr(bench, part)(), args.part_timeout)
                except Exception as error:  # noqa: BLE001 - a failed part is reported, the others run
                    check(False, f"{part}: {type(error).__name__}: {error}")
                bench.stop_all()
                print(f"({part}: {time.time() - started:.1f} s)", flush=True)
        bench.out(f"Load average after: {os.getloadavg()[0]:.2f}.")
    finally:
        bench.stop_all()
        pg.stop()
        if not FAILURES:
            subprocess.run(["rm", "-rf", tmp])
        else:
            print(f"replica logs kept in {tmp}")
    if args.out:
        with open(args.out, "w") as out:
            out.write("\n".join(bench.report) + "\n")
    if FAILURES:
        print(f"replicas bench: {len(FAILURES)} check(s) failed")
        return 1
    print("replicas bench: every observer matched the transcript API")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spindle", default=os.path.join(ROOT, "target", "release", "spindle"))
    parser.add_argument("--quick", action="store_true", help="small sizes, correctness only (CI)")
    parser.add_argument("--only", default="throughput,latency,memory,failover")
    parser.add_argument("--updates", type=int, default=20000, help="updates per throughput turn")
    parser.add_argument("--turns", type=int, default=3, help="throughput turns (median)")
    parser.add_argument("--chunks", type=int, default=2000, help="stamped chunks of the latency turn")
    parser.add_argument("--pace-us", type=int, default=1000, help="pacing of the latency turn")
    parser.add_argument("--observers", type=int, default=1000, help="light observers per replica")
    parser.add_argument("--memory-updates", type=int, default=2000)
    parser.add_argument("--failover-updates", type=int, default=5000)
    parser.add_argument("--failover-trials", type=int, default=3)
    parser.add_argument("--prompt-trials", type=int, default=2,
                        help="failover trials more, each with a prompt sent to B right after the kill")
    parser.add_argument("--failover-mode", choices=["auto", "prompt"], default=None,
                        help="default: wait for automatic takeover, else fall back to a prompt")
    parser.add_argument("--auto-margin", type=float, default=5.0,
                        help="seconds past expiry + TTL to wait for an automatic takeover")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds before reading RSS")
    parser.add_argument("--ttl", type=float, default=4.0, help="--lease-ttl of every replica (s)")
    parser.add_argument("--part-timeout", type=float, default=600, help="seconds each part may take")
    parser.add_argument("--out", help="also write the report (markdown) here")
    args = parser.parse_args()
    if args.quick:
        args.updates, args.turns, args.chunks, args.observers = 1000, 1, 200, 20
        args.memory_updates, args.failover_updates, args.failover_trials, args.prompt_trials = 500, 3000, 1, 0
        args.ttl, args.auto_margin, args.part_timeout, args.settle = 1.5, 1.0, 60, 0.1
    args.spindle = os.path.abspath(args.spindle)
    # SIGTERM as Ctrl-C: the replicas and PostgreSQL (a session of its own) are stopped on the way out.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
