#!/usr/bin/env python3
"""The floor of a remote ACP client: an `/acp` server that costs (almost) nothing.

`acp_replay_server.py -- AGENT_CMD...` listens on 127.0.0.1 (a free port; prints
`listening on http://ADDR/acp`) and answers the RFD transport's WebSocket and HTTP+SSE profiles
(`docs/rfds/streamable-http-websocket-transport.mdx`) from recordings: the first time a prompt's
text is seen (`warm` it up before timing), it runs AGENT_CMD over stdio once (initialize,
session/new, session/prompt) and keeps every line of that turn; from then on, each
`session/prompt` with that text gets the recorded notifications and response as one
pre-encoded write (WebSocket text frames, or SSE events in body chunks of about 16 KiB), with
the request's id. initialize and session/new are answered from the recording as well.

What a client needs with this server is its own time to read a turn: no agent runs, no gateway
parses, logs or relays anything. A server measured against the same client is at most as fast;
its time divided by this one's says how far from the floor it is.

`acp_replay_server.py --live -- AGENT_CMD...` is the live floor: the same recording, written
at the pace the agent wrote it. Each read of the agent's stdout while recording (at most a pipe's
64 KiB) is kept with the time it arrived after the prompt; a replay writes each read's
notifications as one write at that time after the prompt (or as soon as the client has taken
the writes before it). This is what a relay that costs nothing would send; what a client takes
against it is its own time for a turn streamed live, as every real server streams it.
`--pieces BYTES --gap SECONDS` writes the recording in pieces of BYTES, SECONDS apart (how a
client's time depends on the size of a server's writes; see bench/client_pacing.py). A paced
turn holds the server (it sleeps between writes): one client at a time.

Only turns made of notifications can be replayed (an agent request, such as a permission,
would need the client's answer): recording one stops the server with a diagnostic. HTTP/1.1
only (the official Rust client uses it on cleartext). Standard library only; see
bench/remote_bench.py.
"""

import asyncio
import base64
import hashlib
import itertools
import json
import os
import subprocess
import sys
import time

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
SSE_CHUNK = 16 * 1024


class AgentOutput:
    """The agent's stdout read raw: each read's complete lines, and when the read returned."""

    def __init__(self, fd):
        self.fd, self.rest = fd, b""
        # Lines of a read after the response that ended a call: the next call's first.
        self.unread = []

    def read(self):
        if self.unread:
            lines, self.unread = self.unread, []
            return time.perf_counter(), lines
        data = os.read(self.fd, 1 << 20)
        if not data:
            return None
        at = time.perf_counter()
        *lines, self.rest = (self.rest + data).split(b"\n")
        return at, [line for line in lines if line.strip()]


class Recording:
    """One prompt's turn, as the agent answered it over stdio."""

    def __init__(self, agent, prompt):
        proc = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        out = AgentOutput(proc.stdout.fileno())
        self.initialize, _ = self._call(proc, out, 0, "initialize", {"protocolVersion": 1})
        self.new_session, _ = self._call(proc, out, 1, "session/new",
                                         {"cwd": "/", "mcpServers": []})
        session = self.new_session["sessionId"]
        result, reads = self._call(proc, out, 2, "session/prompt",
                                   {"sessionId": session,
                                    "prompt": [{"type": "text", "text": prompt}]})
        proc.stdin.close()
        proc.wait(timeout=30)
        self.session = session
        # (seconds after the prompt, notification lines) per read of the agent's stdout
        self.reads = reads
        self.notifications = [line for _, lines in reads for line in lines]
        self.result = result
        self._encoded = {}

    @staticmethod
    def _call(proc, out, id_, method, params):
        """The result of one request, and the notifications before it, per read of the agent's
        stdout. Only a line without "method" can be the response, so only those are parsed
        while reading: parsing every line would slow the reads and the pace they record."""
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                                     "params": params}).encode() + b"\n")
        proc.stdin.flush()
        start = time.perf_counter()
        reads = []
        while True:
            got = out.read()
            if got is None:
                sys.exit("acp_replay_server: the agent exited during %s" % method)
            at, lines = got
            notifications = []
            for index, line in enumerate(lines):
                response = None
                if b'"method"' not in line:
                    response = json.loads(line)
                    if response.get("id") != id_:
                        response = None
                if response is None:
                    notifications.append(line.decode())
                    continue
                if "result" not in response:
                    sys.exit("acp_replay_server: %s failed: %s" % (method, line.decode()))
                reads.append((at - start, notifications))
                out.unread = lines[index + 1:]
                for _, before in reads:
                    for text in before:
                        message = json.loads(text)
                        if "method" in message and "id" in message:
                            sys.exit("acp_replay_server: the agent sent a request (%s); only "
                                     "turns made of notifications can be replayed"
                                     % message["method"])
                return response["result"], reads
            reads.append((at - start, notifications))

    def encoded(self, kind, id_):
        """The turn pre-encoded for one transport (cached without the response)."""
        if kind not in self._encoded:
            encode = ws_frame if kind == "ws" else sse_event
            self._encoded[kind] = [encode(line) for line in self.notifications]
        response = json.dumps({"jsonrpc": "2.0", "id": id_, "result": self.result})
        if kind == "ws":
            return b"".join(self._encoded[kind]) + ws_frame(response)
        return chunked(self._encoded[kind] + [sse_event(response)])

    def paced(self, kind, id_):
        """The turn as the agent wrote it: (seconds after the prompt, bytes) per read of its
        stdout, then the response."""
        key = kind + " paced"
        if key not in self._encoded:
            encode = ws_frame if kind == "ws" else sse_event
            pieces = []
            for at, lines in self.reads:
                frames = [encode(line) for line in lines]
                if frames:
                    pieces.append((at, b"".join(frames) if kind == "ws" else chunked(frames)))
            self._encoded[key] = pieces
        response = json.dumps({"jsonrpc": "2.0", "id": id_, "result": self.result})
        last = self.reads[-1][0]
        end = ws_frame(response) if kind == "ws" else chunked([sse_event(response)])
        return Paced(self._encoded[key] + [(last, end)])


class Paced:
    """Writes at given times after the first one starts (a live turn)."""

    def __init__(self, pieces):
        self.pieces = pieces

    async def write(self, writer):
        start = time.perf_counter()
        for at, data in self.pieces:
            wait = at - (time.perf_counter() - start)
            if wait > 0:
                # asyncio's timers wake at millisecond steps; the agent's reads are closer.
                time.sleep(wait)
            writer.write(data)
            await writer.drain()


async def send(writer, data):
    """One answer: bytes in one write, or a live turn's paced writes."""
    if isinstance(data, Paced):
        await data.write(writer)
    else:
        writer.write(data)
        await writer.drain()


def ws_frame(text):
    payload = text.encode()
    n = len(payload)
    if n < 126:
        header = bytes([0x81, n])
    elif n < 65536:
        header = bytes([0x81, 126]) + n.to_bytes(2, "big")
    else:
        header = bytes([0x81, 127]) + n.to_bytes(8, "big")
    return header + payload


def sse_event(text):
    return b"data: " + text.encode() + b"\n\n"


def chunked(events):
    """HTTP/1.1 chunks of about SSE_CHUNK bytes, never splitting an event."""
    out, chunk = [], []
    size = 0
    for event in events:
        chunk.append(event)
        size += len(event)
        if size >= SSE_CHUNK:
            body = b"".join(chunk)
            out.append(b"%x\r\n%s\r\n" % (len(body), body))
            chunk, size = [], 0
    if chunk:
        body = b"".join(chunk)
        out.append(b"%x\r\n%s\r\n" % (len(body), body))
    return b"".join(out)


class Server:
    def __init__(self, agent, pacing=None):
        """pacing: None (one write), "live", or (bytes, seconds) per piece."""
        self.agent, self.pacing = agent, pacing
        self.recordings = {}
        self.ids = itertools.count(1)
        # connection id -> {None: connection stream, session id: session stream} queues
        self.streams = {}

    def recording(self, prompt):
        if prompt not in self.recordings:
            self.recordings[prompt] = Recording(self.agent, prompt)
        return self.recordings[prompt]

    def any_recording(self):
        return next(iter(self.recordings.values()), None) or self.recording("hello")

    def answer(self, message, kind):
        """(bytes for the stream, stream key) answering one client message, or None."""
        method, id_ = message.get("method"), message.get("id")
        if method is None or id_ is None:
            return None  # a response or a notification (session/cancel): nothing to send
        if method == "initialize":
            result = self.any_recording().initialize
        elif method == "session/new":
            result = self.any_recording().new_session
        elif method == "session/prompt":
            params = message.get("params") or {}
            text = "".join(b.get("text", "") for b in params.get("prompt", []))
            recording = self.recording(text)
            if self.pacing == "live":
                turn = recording.paced(kind, id_)
            elif self.pacing is not None:
                size, gap = self.pacing
                data = recording.encoded(kind, id_)
                turn = Paced([(i // size * gap, data[i:i + size])
                              for i in range(0, len(data), size)])
            else:
                turn = recording.encoded(kind, id_)
            return turn, params.get("sessionId")
        else:
            error = {"code": -32601, "message": "the replay server answers initialize, "
                                                "session/new and session/prompt only"}
            line = json.dumps({"jsonrpc": "2.0", "id": id_, "error": error})
            return self.encode_one(line, kind), (message.get("params") or {}).get("sessionId")
        line = json.dumps({"jsonrpc": "2.0", "id": id_, "result": result})
        return self.encode_one(line, kind), None

    @staticmethod
    def encode_one(line, kind):
        return ws_frame(line) if kind == "ws" else chunked([sse_event(line)])

    async def handle(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method = request_line.split(" ", 1)[0]
                headers = {}
                for h in header_lines:
                    if ":" in h:
                        k, v = h.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = b""
                if "content-length" in headers:
                    body = await reader.readexactly(int(headers["content-length"]))
                if method == "GET" and headers.get("upgrade", "").lower() == "websocket":
                    await self.websocket(reader, writer, headers)
                    return
                if method == "GET":
                    await self.sse(writer, headers)
                    return
                if method == "POST":
                    self.post(writer, headers, body)
                elif method == "DELETE":
                    self.streams.pop(headers.get("acp-connection-id"), None)
                    writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                else:
                    writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def post(self, writer, headers, body):
        message = json.loads(body)
        if message.get("method") == "initialize":
            connection = "c%d" % next(self.ids)
            self.streams[connection] = {}
            result = self.any_recording().initialize
            out = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"acp-connection-id: %s\r\ncontent-length: %d\r\n\r\n%s"
                         % (connection.encode(), len(out), out))
            return
        writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
        answer = self.answer(message, "sse")
        if answer is None:
            return
        data, session = answer
        streams = self.streams.setdefault(headers.get("acp-connection-id"), {})
        streams.setdefault(session, asyncio.Queue()).put_nowait(data)

    async def sse(self, writer, headers):
        streams = self.streams.setdefault(headers.get("acp-connection-id"), {})
        queue = streams.setdefault(headers.get("acp-session-id"), asyncio.Queue())
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n")
        while True:
            await send(writer, await queue.get())

    async def websocket(self, reader, writer, headers):
        accept = base64.b64encode(hashlib.sha1(
            (headers["sec-websocket-key"] + WS_GUID).encode()).digest())
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n"
                     b"connection: Upgrade\r\nsec-websocket-accept: %s\r\n\r\n" % accept)
        await writer.drain()
        while True:
            text = await read_ws_text(reader, writer)
            if text is None:
                return
            answer = self.answer(json.loads(text), "ws")
            if answer is not None:
                await send(writer, answer[0])


async def read_ws_text(reader, writer):
    """The next text message from a (masking) client; None at close."""
    parts = []
    while True:
        b0, b1 = await reader.readexactly(2)
        opcode, n = b0 & 0x0F, b1 & 0x7F
        if n == 126:
            n = int.from_bytes(await reader.readexactly(2), "big")
        elif n == 127:
            n = int.from_bytes(await reader.readexactly(8), "big")
        mask = await reader.readexactly(4) if b1 & 0x80 else b"\0\0\0\0"
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(await reader.readexactly(n)))
        if opcode == 0x8:
            writer.write(b"\x88\x00")
            return None
        if opcode == 0x9:
            writer.write(bytes([0x8A, len(payload)]) + payload)
            continue
        if opcode in (0x1, 0x0):
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode()


async def main():
    usage = "usage: acp_replay_server.py [--live | --pieces BYTES --gap SECONDS] -- AGENT_CMD..."
    if "--" not in sys.argv:
        sys.exit(usage)
    options = sys.argv[1:sys.argv.index("--")]
    pacing = None
    if options == ["--live"]:
        pacing = "live"
    elif len(options) == 4 and options[0] == "--pieces" and options[2] == "--gap":
        try:
            pacing = (int(options[1]), float(options[3]))
        except ValueError:
            sys.exit("acp_replay_server: --pieces takes bytes and --gap seconds (%s)" % usage)
        if pacing[0] <= 0 or pacing[1] < 0:
            sys.exit("acp_replay_server: --pieces must be positive and --gap not negative")
    elif options:
        sys.exit("acp_replay_server: unknown options %s (%s)" % (" ".join(options), usage))
    server = Server(sys.argv[sys.argv.index("--") + 1:], pacing)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    host, port = listener.sockets[0].getsockname()[:2]
    print("listening on http://%s:%d/acp" % (host, port), flush=True)
    async with listener:
        await listener.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
