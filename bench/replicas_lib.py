"""Helpers of bench/replicas.py: a throwaway PostgreSQL server, `spindle serve` replicas, HTTP/1.0
requests and page event-stream (SSE) readers over asyncio sockets. Standard library only.
"""

import asyncio
import glob
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raise_fd_limit():
    """The soft open-file limit up to the hard one (1,000 observers need more than 1,024 fds)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def proc_status_kib(pid, field):
    """A field of /proc/PID/status in KiB (VmRSS, VmHWM); 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


class Postgres:
    """initdb in a temporary directory, `postgres` on a free loopback port (as the `postgres` user
    when run as root: PostgreSQL refuses root), stopped by `stop()` (immediate shutdown), directory
    removed. Like spindle-store's test_server, with fsync on (what a deployment runs)."""

    def __init__(self):
        self.bin = self.find_bin()
        if self.bin is None:
            raise FileNotFoundError("no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)")
        self.root = os.getuid() == 0
        self.dir = tempfile.mkdtemp(prefix="spindle-replicas-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = None
        self.process = None

    @staticmethod
    def find_bin():
        if os.environ.get("SPINDLE_PG_BIN"):
            return os.environ["SPINDLE_PG_BIN"]
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                       key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
        return os.path.dirname(found[-1]) if found else None

    def as_server_user(self, argv):
        return ["runuser", "-u", "postgres", "--"] + argv if self.root else argv

    def start(self):
        if self.root:
            subprocess.run(["chown", "postgres:", self.dir], check=True)
        subprocess.run(self.as_server_user(
            [os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "postgres", "-A", "trust",
             "-E", "UTF8", "--no-locale", "--no-sync"]),
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(5):
            self.port = free_port()
            log = open(os.path.join(self.dir, "server.log"), "w")
            if self.root:
                os.chown(log.name, *self.postgres_ids())
            self.process = subprocess.Popen(self.as_server_user(
                [os.path.join(self.bin, "postgres"), "-D", self.data, "-p", str(self.port),
                 "-k", self.dir, "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300"]),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
            deadline = time.time() + 30
            while time.time() < deadline and self.process.poll() is None:
                if self.psql("postgres", "SELECT 1", check=False) == "1":
                    return self
                time.sleep(0.1)
            self.stop_server()
        raise RuntimeError("postgres never answered: " + open(os.path.join(self.dir, "server.log")).read())

    @staticmethod
    def postgres_ids():
        import pwd
        entry = pwd.getpwnam("postgres")
        return entry.pw_uid, entry.pw_gid

    def psql(self, database, sql, check=True):
        result = subprocess.run(
            [os.path.join(self.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-c", sql],
            capture_output=True, text=True)
        if result.returncode != 0:
            if check:
                raise RuntimeError(f"psql {sql!r}: {result.stderr}")
            return None
        return result.stdout.strip()

    def create_database(self, name):
        self.psql("postgres", f"CREATE DATABASE {name}")
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def stop_server(self):
        if self.process is None:
            return
        pid_file = os.path.join(self.data, "postmaster.pid")
        try:
            with open(pid_file) as f:
                os.kill(int(f.readline()), signal.SIGQUIT)  # immediate shutdown: the data is thrown away
        except (FileNotFoundError, ValueError, ProcessLookupError):
            self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def stop(self):
        self.stop_server()
        shutil.rmtree(self.dir, ignore_errors=True)


class Replica:
    """`spindle serve --bind 127.0.0.1:0 --db URL --replica-id ID --lease-ttl TTL -- AGENT...`."""

    def __init__(self, spindle, url, replica_id, ttl, agent, log_dir, extra=(), env=None):
        self.id = replica_id
        self.log = os.path.join(log_dir, f"replica-{replica_id}-{time.time_ns()}.log")
        # Protocol 2 unless `extra` names one: the benches wait for the reference agent's greeting
        # (sent in v2 only; no turn) and queue prompts during a turn, which v1 refuses.
        protocol = () if "--protocol" in extra else ("--protocol", "2")
        argv = [spindle, "serve", "--no-checkpoints", *protocol, "--bind", "127.0.0.1:0", "--db", url, "--replica-id", replica_id,
                "--lease-ttl", str(ttl), *extra, "--", *agent]
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log,
                                            stdin=subprocess.DEVNULL, env=env,
                                            preexec_fn=raise_fd_limit)
        line = self.process.stdout.readline().decode()
        urls = [w for w in line.split() if w.startswith("http://")]
        if not urls:
            raise RuntimeError(f"replica {replica_id} printed no address: {line!r}; log {self.log}")
        self.host, port = urls[0][len("http://"):].rstrip("/").split(":")
        self.port = int(port)
        self.pid = self.process.pid

    def rss_kib(self):
        return proc_status_kib(self.pid, "VmRSS")

    def hwm_kib(self):
        return proc_status_kib(self.pid, "VmHWM")

    def kill9(self):
        self.process.kill()
        self.process.wait()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


async def request(replica, method, path, body=None):
    """One HTTP/1.0 request; (status, body text)."""
    reader, writer = await asyncio.open_connection(replica.host, replica.port)
    head = f"{method} {path} HTTP/1.0\r\nHost: {replica.host}:{replica.port}\r\n"
    data = b""
    if body is not None:
        data = json.dumps(body).encode()
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    writer.write(head.encode() + b"\r\n" + data)
    await writer.drain()
    raw = await reader.read()
    writer.close()
    top, _, rest = raw.decode(errors="replace").partition("\r\n\r\n")
    return int(top.split()[1]), rest


async def get_json(replica, path):
    status, body = await request(replica, "GET", path)
    if status != 200:
        raise RuntimeError(f"GET {path} on {replica.id}: {status} {body}")
    return json.loads(body)


async def create_session(replica):
    status, body = await request(replica, "POST", "/api/sessions", {})
    if status != 201:
        raise RuntimeError(f"create session on {replica.id}: {status} {body}")
    return json.loads(body)["id"]


async def prompt(replica, session, text):
    status, body = await request(replica, "POST", f"/api/sessions/{session}/prompt", {"text": text})
    if status != 202:
        raise RuntimeError(f"prompt on {replica.id}: {status} {body}")


async def wait_listed(replica, session, patience=60):
    """Waits until `replica` lists `session`, and checks that it serves it at once (a session
    created elsewhere and listed from the database is rebuilt on demand; a 404 fails the run)."""
    deadline = time.time() + patience
    while time.time() < deadline:
        listed = await get_json(replica, "/api/sessions")
        if any(s.get("id") == session for s in listed.get("sessions", [])):
            await get_json(replica, f"/api/sessions/{session}/transcript")
            return
        await asyncio.sleep(0.02)
    raise RuntimeError(f"session {session} never listed on {replica.id}")


def entry_texts(transcript, kind, from_turn=0):
    return [e.get("text", "") for e in transcript.get("entries", [])
            if e.get("kind") == kind and e.get("turn", 0) >= from_turn]


async def open_events(replica, session, limit=1 << 26):
    """GET /api/sessions/ID/events; the reader positioned after the response head."""
    reader, writer = await asyncio.open_connection(replica.host, replica.port, limit=limit)
    writer.write((f"GET /api/sessions/{session}/events HTTP/1.0\r\nHost: {replica.host}:{replica.port}\r\n"
                  "Accept: text/event-stream\r\n\r\n").encode())
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"events on {replica.id}: {status!r}")
    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
        pass
    return reader, writer


class TextView:
    """Applies render ops the way the page does: entry texts by id (UTF-16 lengths for truncate)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.order, self.kinds, self.texts, self.turns, self.state = [], {}, {}, {}, {}

    def apply(self, op):
        kind = op.get("op")
        if kind == "insert_entry":
            entry = op["entry"]
            key = entry["id"]
            self.order.insert(min(op.get("index", 0), len(self.order)), key)
            self.kinds[key] = entry.get("kind")
            self.turns[key] = entry.get("turn", 0)
            self.texts[key] = entry.get("text") or ""
        elif kind == "update_entry":
            self.texts[op["id"]] = op.get("entry", {}).get("text") or ""
        elif kind == "append_text":
            self.texts[op["id"]] = self.texts.get(op["id"], "") + op.get("text", "")
        elif kind == "truncate_text":
            units = self.texts.get(op["id"], "").encode("utf-16-le")[: 2 * op.get("len", 0)]
            self.texts[op["id"]] = units.decode("utf-16-le", errors="ignore")
        elif kind == "remove_entry" and op.get("id") in self.kinds:
            self.order.remove(op["id"])
        elif kind == "set_state":
            self.state = op.get("state", {})

    def texts_of(self, kind, from_turn=0):
        return [self.texts.get(k, "") for k in self.order
                if self.kinds.get(k) == kind and self.turns.get(k, 0) >= from_turn]


class Observer:
    """One page client of a session on one replica: applies every event to a TextView and keeps,
    per event, (receipt time in ns, ops in it, agent-text length so far); with `stamps`, the
    latency of every agent-written stamp (bench/replicas_agent.py) in ns."""

    def __init__(self, replica, session, stamps=False):
        self.replica, self.session, self.stamps = replica, session, stamps
        self.view = TextView()
        self.events = []  # (time_ns, op count, agent text length, op names)
        self.latencies = []
        self.connected = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self.run())

    async def run(self):
        try:
            reader, writer = await open_events(self.replica, self.session)
        except Exception as error:  # noqa: BLE001 - the waiter on `connected` gets it
            if not self.connected.done():
                self.connected.set_exception(error)
            return
        event, data = "", []
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                line = line.rstrip(b"\r\n")
                if line.startswith(b"data:"):
                    data.append(line[5:].lstrip(b" "))
                elif line.startswith(b"event:"):
                    event = line[6:].strip().decode()
                elif not line and data:
                    self.apply(event, b"".join(data), time.time_ns())
                    event, data = "", []
        except (asyncio.CancelledError, ConnectionError):
            return
        finally:
            writer.close()

    def apply(self, event, raw, now):
        payload = json.loads(raw)
        if event == "reset":
            self.view.reset()
        ops = payload.get("ops", [])
        for op in ops:
            self.view.apply(op)
            if self.stamps and event != "reset":
                self.stamp(op, now)
        kinds = ",".join(sorted({op.get("op", "?") for op in ops}))
        self.events.append((now, len(ops), self.agent_length(), kinds))
        if not self.connected.done():
            self.connected.set_result(None)

    def stamp(self, op, now):
        text = ""
        if op.get("op") == "append_text":
            text = op.get("text", "")
        elif op.get("op") == "insert_entry" and op["entry"].get("kind") == "agent_message":
            text = op["entry"].get("text") or ""
        for token in text.split(";"):
            if token.isdigit():
                self.latencies.append(now - int(token))

    def agent_length(self):
        return sum(len(t) for t in self.view.texts_of("agent_message"))

    def agent_text(self, from_turn=0):
        """The agent text the view holds (of turns from `from_turn` on: a reset snapshot holds
        the session's last entries only, older ones the page fetches on demand)."""
        return "".join(self.view.texts_of("agent_message", from_turn))

    def turns_done(self):
        """Turns the session has finished, as this observer's view shows it."""
        state = self.view.state
        return state.get("turns", 0) - (1 if state.get("turnOpen") else 0)

    async def wait_turns(self, n, patience=120):
        """Waits until the view shows `n` finished turns and none open."""
        deadline = time.time() + patience
        while self.turns_done() < n or self.view.state.get("turnOpen"):
            if time.time() > deadline or self.task.done():
                raise RuntimeError(f"observer on {self.replica.id} saw {self.turns_done()} of {n} turns end")
            await asyncio.sleep(0.005)

    async def wait_prompt_answered(self, text, patience=120):
        """Waits until the view's last user message is `text` and no turn is open."""
        deadline = time.time() + patience
        while (self.view.texts_of("user_message")[-1:] != [text]) or self.view.state.get("turnOpen"):
            if time.time() > deadline or self.task.done():
                raise RuntimeError(f"observer on {self.replica.id} never saw {text!r} answered")
            await asyncio.sleep(0.005)

    def close(self):
        self.task.cancel()


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class LightObserver:
    """A page client that parses nothing: it counts bytes and follows the `"turnOpen":` values in
    the stream, so that thousands of them fit in one Python process. `connected` resolves once the
    reset snapshot arrived; `ended` once a turn opened after `arm()` was seen closed."""

    MARK = b'"turnOpen":'

    def __init__(self, replica, session):
        self.replica, self.session = replica, session
        self.bytes = 0
        self.armed = False
        self.seen_open = False
        self.last_open = None
        self.ended_at = None
        self.dropped = False
        self.reset_seen = False
        loop = asyncio.get_running_loop()
        self.connected = loop.create_future()
        self.ended = loop.create_future()
        self.task = asyncio.create_task(self.run())

    def arm(self):
        self.armed, self.seen_open = True, False

    async def run(self):
        try:
            reader, writer = await open_events(self.replica, self.session, limit=1 << 16)
        except Exception as error:  # noqa: BLE001 - reported as a failed connection
            if not self.connected.done():
                self.connected.set_exception(error)
            return
        tail = b""
        try:
            while True:
                chunk = await reader.read(1 << 16)
                if not chunk:
                    self.dropped = not self.ended.done()
                    return
                self.bytes += len(chunk)
                data = tail + chunk
                if not self.connected.done():
                    # The reset snapshot may span many reads: connected at the blank line ending it.
                    at = data.find(b"event: reset")
                    if at >= 0:
                        self.reset_seen = True
                        data_after = data[at:]
                    else:
                        data_after = data
                    if self.reset_seen and b"\n\n" in data_after:
                        self.connected.set_result(None)
                start = 0
                while True:
                    at = data.find(self.MARK, start)
                    if at < 0 or at + len(self.MARK) >= len(data):
                        break
                    value = data[at + len(self.MARK):at + len(self.MARK) + 1] == b"t"
                    if at + len(self.MARK) >= len(tail):  # its value was not in the previous chunk
                        self.last_open = value
                        if self.armed and value:
                            self.seen_open = True
                    start = at + 1
                if self.armed and self.seen_open and self.last_open is False and not self.ended.done():
                    self.ended_at = time.time_ns()
                    self.ended.set_result(None)
                tail = data[-32:]
        except (asyncio.CancelledError, ConnectionError):
            return
        finally:
            writer.close()

    def close(self):
        self.task.cancel()
