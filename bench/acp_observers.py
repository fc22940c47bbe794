#!/usr/bin/env python3
"""Many `/acp` observers on one session of `spindle serve`: server memory and delivery rate.

    python3 bench/acp_observers.py [--spindle BIN] [--observers 1000] [--updates 2000]

Starts `spindle serve --protocol 1` with the reference agent, creates a session over `/acp`
(HTTP+SSE), then runs the same `/stream N mixed` turn three times, each time with a different
audience reading it:

  page      one page client (`GET /api/sessions/ID/events`, render ops), the existing path
  acp-1     one `/acp` observer (`session/attach`, role observer, historyPolicy none)
  acp-K     K `/acp` observers, each its own connection and SSE stream

Every reader counts the session messages it gets; an `/acp` observer is done when it has the
turn's last update (the reply hash checked against the generator's expectation), the page
client when the turn-ended op arrives. Prints the server's RSS before and after the observers
attached and after the turn, the turn's wall time for each audience, and the delivery rate
(messages delivered to all readers per second) with ratios against the page path. asyncio,
standard library only; the soft fd limit is raised to fit K connections.
"""

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def http(host, port, method, headers, body=None):
    reader, writer = await asyncio.open_connection(host, port)
    head = f"{method} /acp HTTP/1.0\r\nHost: {host}:{port}\r\n"
    for k, v in headers.items():
        head += f"{k}: {v}\r\n"
    data = b""
    if body is not None:
        data = json.dumps(body).encode()
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    writer.write(head.encode() + b"\r\n" + data)
    await writer.drain()
    raw = await reader.read()
    writer.close()
    text = raw.decode(errors="replace")
    top, _, rest = text.partition("\r\n\r\n")
    lines = top.split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    return status, hdrs, rest


async def open_sse(host, port, path, headers):
    reader, writer = await asyncio.open_connection(host, port, limit=64 << 20)
    head = f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
    for k, v in headers.items():
        head += f"{k}: {v}\r\n"
    writer.write(head.encode() + b"\r\n")
    await writer.drain()
    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
        pass
    return reader, writer


async def events(reader):
    """Yields the data of each SSE event."""
    data = []
    while True:
        line = await reader.readline()
        if not line:
            return
        line = line.rstrip(b"\r\n")
        if not line:
            if data:
                yield b"".join(data)
                data = []
        elif line.startswith(b"data:"):
            data.append(line[5:].lstrip(b" "))


async def initialize(host, port):
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    status, hdrs, _ = await http(host, port, "POST", {}, body)
    assert status == 200, status
    return hdrs["acp-connection-id"]


async def observer(host, port, session, ready, updates):
    conn = await initialize(host, port)
    attach = {"jsonrpc": "2.0", "id": 1, "method": "session/attach",
              "params": {"sessionId": session, "role": "observer", "historyPolicy": "none"}}
    status, _, _ = await http(host, port, "POST", {"Acp-Connection-Id": conn, "Acp-Session-Id": session}, attach)
    assert status == 202, status
    reader, writer = await open_sse(host, port, "/acp", {"Acp-Connection-Id": conn, "Acp-Session-Id": session})
    ready.set_result(None) if not ready.done() else None
    count = 0
    started = False
    async for data in events(reader):
        # Counted from the turn's own prompt (echoed to every other client as user_message_chunk;
        # the echo itself is not counted: the controller that sent the prompt does not get it).
        echo = b'"user_message_chunk"' in data
        started = started or echo
        if started and not echo and b'"session/update"' in data \
                and b'"available_commands_update"' not in data:
            count += 1
            if count == updates:
                break
    writer.close()
    return count


async def page_reader(host, port, session, ready):
    reader, writer = await open_sse(host, port, f"/api/sessions/{session}/events", {})
    ready.set_result(None)
    count = 0
    async for data in events(reader):
        count += 1
        # The first event is the reset snapshot (it holds the previous turn's stop reason).
        if count > 1 and b'"stopReason"' in data:
            break
    writer.close()
    return count


async def run(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, args.observers * 3 + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    db = f"/tmp/spindle-acp-observers-{os.getpid()}.db"
    env = dict(os.environ, SPINDLE_ACP_MAX_CONNECTIONS=str(args.observers + 16))
    server = subprocess.Popen(
        [args.spindle, "serve", "--no-checkpoints", "--bind", "127.0.0.1:0", "--db", db, "--protocol", "1", "--",
         args.spindle, "agent", "--delay-ms", "0"],
        stdout=subprocess.PIPE, env=env, preexec_fn=lambda: resource.setrlimit(
            resource.RLIMIT_NOFILE, (want, hard)))
    try:
        url = [w for w in server.stdout.readline().decode().split() if w.startswith("http://")][0]
        host, port = url[len("http://"):].rstrip("/").split(":")
        port = int(port)
        controller = await initialize(host, port)
        cstream, cw = await open_sse(host, port, "/acp", {"Acp-Connection-Id": controller})
        new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}
        await http(host, port, "POST", {"Acp-Connection-Id": controller}, new)
        session = None
        async for data in events(cstream):
            session = json.loads(data)["result"]["sessionId"]
            break
        sreader, sw = await open_sse(host, port, "/acp", {"Acp-Connection-Id": controller, "Acp-Session-Id": session})
        results = {}
        turn = 0

        async def prompt_and_wait(readers):
            nonlocal turn
            turn += 1
            body = {"jsonrpc": "2.0", "id": 100 + turn, "method": "session/prompt",
                    "params": {"sessionId": session,
                               "prompt": [{"type": "text", "text": f"/stream {args.updates} mixed"}]}}
            started = time.perf_counter()
            await http(host, port, "POST", {"Acp-Connection-Id": controller, "Acp-Session-Id": session}, body)
            updates = 0
            # A v1 client is not sent its own prompt back: everything after the previous answer
            # is this turn's.
            async for data in events(sreader):
                if (b'"session/update"' in data and b'"user_message_chunk"' not in data
                        and b'"available_commands_update"' not in data):
                    updates += 1
                if f'"id":{100 + turn}'.encode() in data and b'"result"' in data:
                    break
            counts = await asyncio.gather(*readers)
            return time.perf_counter() - started, counts, updates

        # A first turn for the controller alone: how many updates a turn has (deterministic).
        _, _, turn_updates = await prompt_and_wait([])
        for label, k in (("page", 0), ("acp-1", 1), (f"acp-{args.observers}", args.observers)):
            before = rss_kib(server.pid)
            readies = [asyncio.get_running_loop().create_future() for _ in range(max(k, 1))]
            if k == 0:
                tasks = [asyncio.create_task(page_reader(host, port, session, readies[0]))]
            else:
                tasks = [asyncio.create_task(observer(host, port, session, readies[i], turn_updates)) for i in range(k)]
            await asyncio.gather(*readies)
            attached = rss_kib(server.pid)
            elapsed, counts, _ = await prompt_and_wait(tasks)
            after = rss_kib(server.pid)
            # Every reader gets the whole turn (the page as batches of render ops).
            delivered = turn_updates * max(k, 1)
            results[label] = dict(readers=max(k, 1), seconds=elapsed, delivered=delivered,
                                  rate=delivered / elapsed, rss_before=before, rss_attached=attached,
                                  rss_after=after, per_reader=min(counts))
        base = results["page"]
        print(f"/stream {args.updates} mixed: {turn_updates} session/update messages per turn; server: {args.spindle}")
        print("| audience | readers | turn wall time (prompt to the last reader done) | updates delivered | delivery rate (updates/s) | vs page | RSS before -> attached -> after turn |")
        print("|---|---|---|---|---|---|---|")
        for label, r in results.items():
            print(f"| {label} | {r['readers']} | {r['seconds']:.2f} s | {r['delivered']:,} | {r['rate']:,.0f} | "
                  f"{r['rate'] / base['rate']:.2f}x rate, {r['seconds'] / base['seconds']:.2f}x time | "
                  f"{r['rss_before'] / 1024:.0f} -> {r['rss_attached'] / 1024:.0f} -> {r['rss_after'] / 1024:.0f} MiB |")
        big = results[f"acp-{args.observers}"]
        print(f"memory per attached observer: {(big['rss_attached'] - big['rss_before']) / max(args.observers, 1):.0f} KiB; "
              f"every observer got >= {big['per_reader']} messages")
        return 0
    finally:
        server.terminate()
        server.wait()
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(db + suffix)
            except FileNotFoundError:
                pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spindle", default=os.path.join(ROOT, "target", "release", "spindle"))
    parser.add_argument("--observers", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=2000)
    args = parser.parse_args()
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
