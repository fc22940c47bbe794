//! Shared helpers for the `spindle serve` tests (`serve_*`, `security_web`, `fault_web`,
//! `load_web*`): start the real binary (via CARGO_BIN_EXE_spindle) on a free loopback port with
//! any agent command, talk HTTP/1.0 and SSE to it over plain TCP (HTTP/1.0 keeps bodies unchunked
//! and close-delimited), fetch transcripts and replies, read `/proc` memory figures.
//!
//! `SPINDLE_TEST_DB=postgres` runs every server these helpers start on PostgreSQL instead of
//! SQLite: a throwaway server (`spindle_store::test_server`, started once per test binary) with
//! one database per database path a test names, so a restart on the same path finds its data.
#![allow(dead_code)]

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{TempDir, fake_agent_command};

/// Generous bound so a broken server fails the test instead of hanging it; never a timing
/// assertion.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A scratch directory for one test, removed when dropped.
pub fn temp_dir(name: &str) -> TempDir {
    TempDir::new(&format!("serve-{name}"))
}

pub struct Served {
    pub child: Child,
    pub addr: SocketAddr,
    pub url: String,
}

impl Served {
    /// Starts `spindle serve` with the reference agent streaming with `delay_ms` between pieces,
    /// asking it for protocol 2 unless `serve_args` name a protocol: the tests using this were
    /// written against v2 (the agent's greeting opens each session, prompts queue while a turn
    /// runs). Serve's own default (1) is tested with [`start_serve`] (serve_defaults.rs).
    pub fn start(db: &Path, serve_args: &[&str], delay_ms: u32) -> Served {
        let mut args = serve_args.to_vec();
        if !args.contains(&"--protocol") {
            args.splice(0..0, ["--protocol", "2"]);
        }
        start_serve(db, &args, &reference_agent(delay_ms), None, &[])
    }

    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> Response {
        let host = self.host();
        let mut headers = vec![("Host", host.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        http(self.addr, method, path, &headers, body)
    }

    pub fn get_json(&self, path: &str) -> Value {
        let response = self.request("GET", path, None);
        assert_eq!(response.status, 200, "GET {path}: {}", response.body);
        serde_json::from_str(&response.body).unwrap()
    }

    pub fn post_json(&self, path: &str, body: &str) -> Response {
        self.request("POST", path, Some(body))
    }

    pub fn create_session(&self) -> i64 {
        let response = self.post_json("/api/sessions", "{}");
        assert_eq!(response.status, 201, "{}", response.body);
        let value: Value = serde_json::from_str(&response.body).unwrap();
        value["id"].as_i64().unwrap()
    }

    pub fn prompt(&self, session: i64, text: &str) {
        let body = serde_json::json!({ "text": text }).to_string();
        let response = self.post_json(&format!("/api/sessions/{session}/prompt"), &body);
        assert_eq!(response.status, 202, "{}", response.body);
    }

    /// Waits until `n` turns of the session have finished.
    pub fn wait_finished_turns(&self, session: i64, n: usize) -> Vec<Value> {
        self.wait_replies(session, "turns never finished", |list| {
            list.iter()
                .filter(|r| r["finished"] == Value::Bool(true))
                .count()
                >= n
        })
    }

    /// Waits until a finished turn's reply contains `needle`; returns all replies.
    pub fn wait_reply_containing(&self, session: i64, needle: &str) -> Vec<Value> {
        self.wait_replies(session, &format!("no reply with {needle:?}"), |list| {
            list.iter().any(|r| {
                r["finished"] == Value::Bool(true)
                    && r["text"].as_str().is_some_and(|t| t.contains(needle))
            })
        })
    }

    /// The session's replies (`/api/sessions/N/replies`).
    pub fn replies(&self, session: i64) -> Vec<Value> {
        self.get_json(&format!("/api/sessions/{session}/replies"))["replies"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Polls the session's replies until `check` accepts them; returns them.
    fn wait_replies(
        &self,
        session: i64,
        what: &str,
        check: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let list = self.replies(session);
            if check(&list) {
                return list;
            }
            assert!(Instant::now() < deadline, "{what}: {list:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn sse(&self, session: i64, last_event_id: Option<&str>) -> SseReader {
        SseReader::open(self.addr, &self.host(), session, last_event_id)
    }

    pub fn stop(mut self) {
        #[cfg(unix)]
        {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(self.child.id().to_string())
                .status();
        }
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("spindle serve did not stop on SIGTERM");
    }

    pub fn sigkill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut request = format!("{method} {path} HTTP/1.0\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    if let Some(body) = body {
        request.push_str(body);
    }
    // A server refusing a huge body (413) answers and closes before the body is all sent: the
    // write then fails (broken pipe, reset) although the answer is there to read.
    let written = stream.write_all(request.as_bytes());
    let mut raw = Vec::new();
    let read = stream.read_to_end(&mut raw);
    if raw.is_empty() {
        written.unwrap();
        read.unwrap();
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut head_lines = head.lines();
    let status = head_lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers = head_lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_string(),
    }
}

/// One SSE event.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub event: String,
    pub id: String,
    pub data: Value,
}

impl SseEvent {
    pub fn ops(&self) -> Vec<Value> {
        self.data["ops"].as_array().cloned().unwrap_or_default()
    }
}

pub struct SseReader {
    reader: BufReader<TcpStream>,
    /// After this, `next_event` reports the end of the stream: the server's keep-alive comments
    /// would otherwise keep a reader waiting for an event that never comes forever.
    deadline: Instant,
}

/// How long one SSE connection is read at most (no test reads one stream for this long).
pub const SSE_READ_LIMIT: Duration = Duration::from_secs(180);

impl SseReader {
    pub fn open(addr: SocketAddr, host: &str, session: i64, last_event_id: Option<&str>) -> Self {
        SseReader::open_as(addr, host, session, last_event_id, None)
    }

    /// [`SseReader::open`] with a user's token (`spindle serve --users`).
    pub fn open_as(
        addr: SocketAddr,
        host: &str,
        session: i64,
        last_event_id: Option<&str>,
        token: Option<&str>,
    ) -> Self {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut request = format!(
            "GET /api/sessions/{session}/events HTTP/1.0\r\nHost: {host}\r\nAccept: text/event-stream\r\n"
        );
        if let Some(id) = last_event_id {
            request.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        if let Some(token) = token {
            request.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.contains(" 200 "), "SSE status: {status}");
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line == "\n" || line.is_empty() {
                break;
            }
        }
        SseReader {
            reader,
            deadline: Instant::now() + SSE_READ_LIMIT,
        }
    }

    /// The next event with data (comments and retry-only frames skipped); `None` at end of stream.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        let mut event = String::new();
        let mut id = String::new();
        let mut data = String::new();
        loop {
            if Instant::now() >= self.deadline {
                eprintln!("SSE reader: gave up after {SSE_READ_LIMIT:?} without the awaited event");
                return None;
            }
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).ok()?;
            if n == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    return Some(SseEvent {
                        event: std::mem::take(&mut event),
                        id: std::mem::take(&mut id),
                        data: serde_json::from_str(&data).expect("SSE data is JSON"),
                    });
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("event:") {
                event = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
    }
}

/// A minimal view that applies render ops the way the page does: entry texts by id.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TextView {
    pub order: Vec<String>,
    pub kinds: std::collections::HashMap<String, String>,
    pub texts: std::collections::HashMap<String, Vec<u16>>,
    pub state: Value,
}

impl TextView {
    pub fn apply_event(&mut self, event: &SseEvent) {
        if event.event == "reset" {
            *self = TextView::default();
        }
        for op in event.ops() {
            self.apply(&op);
        }
    }

    pub fn apply(&mut self, op: &Value) {
        let id = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let utf16 = |v: &Value| {
            v.as_str()
                .unwrap_or("")
                .encode_utf16()
                .collect::<Vec<u16>>()
        };
        match op["op"].as_str().unwrap_or_default() {
            "insert_entry" => {
                let entry = &op["entry"];
                let key = id(&entry["id"]);
                let index = op["index"].as_u64().unwrap_or(0) as usize;
                self.order.insert(index.min(self.order.len()), key.clone());
                self.kinds.insert(key.clone(), id(&entry["kind"]));
                self.texts.insert(key, utf16(&entry["text"]));
            }
            "update_entry" => {
                self.texts
                    .insert(id(&op["id"]), utf16(&op["entry"]["text"]));
            }
            "append_text" => {
                let text = self.texts.entry(id(&op["id"])).or_default();
                text.extend(utf16(&op["text"]));
            }
            "truncate_text" => {
                let text = self.texts.entry(id(&op["id"])).or_default();
                text.truncate(op["len"].as_u64().unwrap_or(0) as usize);
            }
            "set_state" => self.state = op["state"].clone(),
            _ => {}
        }
    }

    pub fn text(&self, id: &str) -> String {
        String::from_utf16_lossy(self.texts.get(id).map(Vec::as_slice).unwrap_or(&[]))
    }

    /// Texts of the entries of one kind, in timeline order.
    pub fn texts_of(&self, kind: &str) -> Vec<String> {
        self.order
            .iter()
            .filter(|id| self.kinds.get(*id).map(String::as_str) == Some(kind))
            .map(|id| self.text(id))
            .collect()
    }
}

/// The `--db` value for a test's database `path`: the path, or under `SPINDLE_TEST_DB=postgres`
/// the URL of a PostgreSQL database named after the path (created on first use). Any other value
/// of `SPINDLE_TEST_DB` than `sqlite` or `postgres` fails the test.
pub fn db_arg(path: &Path) -> OsString {
    match std::env::var("SPINDLE_TEST_DB").as_deref() {
        Err(_) | Ok("") | Ok("sqlite") => path.as_os_str().to_owned(),
        Ok("postgres") => {
            use std::hash::{Hash, Hasher};
            let server = spindle_store::test_server::required_server();
            // `DefaultHasher::new()` has fixed keys: the same path, the same database.
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            path.hash(&mut hasher);
            let database = server.ensure_database(&format!("e2e_{:016x}", hasher.finish()));
            server.url(&database).into()
        }
        Ok(other) => panic!("SPINDLE_TEST_DB={other}: expected sqlite or postgres"),
    }
}

/// The data directory of a server whose database is `db`: `data` beside a database file, else
/// (a database URL, or none given) one per test process in the temporary directory.
pub fn test_data_dir(db: &Path) -> std::path::PathBuf {
    match db.parent() {
        Some(dir) if db.is_absolute() => dir.join("data"),
        _ => std::env::temp_dir().join(format!("spindle-e2e-data-{}", std::process::id())),
    }
}

/// `spindle serve --bind 127.0.0.1:0 --db DB ARGS -- AGENT...` (`DB` as [`db_arg`] maps it, the
/// data directory `data` beside it), with the server's stderr written to `stderr` (when given) and `env` added.
pub fn start_serve(
    db: &Path,
    serve_args: &[&str],
    agent: &[OsString],
    stderr: Option<&Path>,
    env: &[(&str, &str)],
) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spindle"));
    command
        .arg("serve")
        .args(["--bind", "127.0.0.1:0", "--db"])
        .arg(db_arg(db))
        .args(serve_args)
        .arg("--")
        .args(agent)
        // The data directory (checkpoints) beside the database file (a database URL: in the
        // temporary directory), never the user's, unless `env` names one.
        .env("XDG_DATA_HOME", test_data_dir(db))
        .envs(env.iter().copied());
    match stderr {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("open stderr file");
            command.stderr(file);
        }
        None => {
            command.stderr(Stdio::inherit());
        }
    }
    serve_from(command)
}

/// `spindle serve --protocol 1` with its database at `dir/db.sqlite` and the fake python agent
/// (written into `dir`) in `mode`; see [`start_serve`] for `stderr` and `env`.
pub fn serve_fake_agent(
    dir: &TempDir,
    mode: &str,
    stderr: Option<&Path>,
    env: &[(&str, &str)],
) -> Served {
    let agent = fake_agent_command(dir, mode);
    start_serve(
        &dir.join("db.sqlite"),
        &["--protocol", "1"],
        &agent,
        stderr,
        env,
    )
}

/// The reference agent (this binary) streaming with `delay_ms` between pieces.
pub fn reference_agent(delay_ms: u32) -> Vec<OsString> {
    vec![
        env!("CARGO_BIN_EXE_spindle").into(),
        "agent".into(),
        "--delay-ms".into(),
        delay_ms.to_string().into(),
    ]
}

/// A field of `/proc/PID/status` in KiB (`VmHWM` is the peak RSS so far).
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// The session's transcript (`/api/sessions/N/transcript`).
pub fn transcript(served: &Served, session: i64) -> Value {
    served.get_json(&format!("/api/sessions/{session}/transcript"))
}

/// The session's replies; see [`Served::replies`].
pub fn replies(served: &Served, session: i64) -> Vec<Value> {
    served.replies(session)
}

/// Polls the transcript until `check` accepts it (60 s patience).
pub fn wait_transcript(
    served: &Served,
    session: i64,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let t = transcript(served, session);
        if check(&t) {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {t:#}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The texts of the transcript's entries of one kind, in order.
pub fn entry_texts(transcript: &Value, kind: &str) -> Vec<String> {
    transcript["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .filter(|e| e["kind"] == kind)
                .map(|e| e["text"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Starts a prepared `spindle serve` command (its stdout is piped here) and
/// reads the URL it prints.
pub fn serve_from(mut command: Command) -> Served {
    // A server's data directory (checkpoints) is never the user's.
    if !command.get_envs().any(|(name, _)| name == "XDG_DATA_HOME") {
        command.env("XDG_DATA_HOME", test_data_dir(Path::new("")));
    }
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    let mut child = command.spawn().expect("spawn spindle serve");
    let stdout = child.stdout.take().expect("stdout piped");
    let mut lines = BufReader::new(stdout).lines();
    let line = match lines.next() {
        Some(Ok(line)) => line,
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("spindle serve printed no URL: {other:?}");
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority")
        .to_string();
    Served {
        child,
        addr: authority.parse().expect("socket address"),
        url,
    }
}

/// The reference agent speaking ACP v1 (client files and terminals exist only in v1), no
/// delay, with `extra` arguments (`--require-auth`, `--state-dir DIR`, ...).
pub fn reference_agent_v1_with(extra: &[&str]) -> Vec<OsString> {
    reference_agent_with(1, extra)
}

/// The reference agent speaking ACP `protocol` (1 or 2), no delay, with `extra` arguments.
pub fn reference_agent_with(protocol: u8, extra: &[&str]) -> Vec<OsString> {
    let mut command = reference_agent(0);
    command.extend(["--protocol".into(), protocol.to_string().into()]);
    command.extend(extra.iter().map(OsString::from));
    command
}

/// `spindle serve --protocol 1 --cwd CWD ARGS -- AGENT` with its database in `dir`.
pub fn serve_in(dir: &TempDir, cwd: &Path, serve_args: &[&str], agent: &[OsString]) -> Served {
    serve_version(dir, cwd, 1, serve_args, agent)
}

/// [`serve_in`] asking the agent for `protocol` (1 or 2).
pub fn serve_version(
    dir: &TempDir,
    cwd: &Path,
    protocol: u8,
    serve_args: &[&str],
    agent: &[OsString],
) -> Served {
    let cwd = cwd.to_str().expect("UTF-8 path");
    let protocol = protocol.to_string();
    let mut args = vec!["--protocol", protocol.as_str(), "--cwd", cwd];
    args.extend_from_slice(serve_args);
    start_serve(&dir.join("db.sqlite"), &args, agent, None, &[])
}

impl Served {
    /// POSTs `body` (JSON) and returns the status and the parsed answer (`null` if not JSON).
    pub fn post_value(&self, path: &str, body: &Value) -> (u16, Value) {
        let response = self.post_json(path, &body.to_string());
        let value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
        (response.status, value)
    }

    /// `POST /api/sessions` with `body`; the new session's id.
    pub fn create_session_with(&self, body: &Value) -> i64 {
        let (status, value) = self.post_value("/api/sessions", body);
        assert_eq!(status, 201, "{value}");
        value["id"].as_i64().unwrap()
    }

    /// `GET /api/sessions/N/agent`.
    pub fn agent_info(&self, session: i64) -> Value {
        self.get_json(&format!("/api/sessions/{session}/agent"))
    }

    /// Polls the session's agent description until `check` accepts it.
    pub fn wait_agent_info(
        &self,
        session: i64,
        what: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let info = self.agent_info(session);
            if check(&info) {
                return info;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {info:#}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The text of the last finished reply that contains `needle`.
    pub fn reply_with(&self, session: i64, needle: &str) -> String {
        self.wait_reply_containing(session, needle)
            .iter()
            .rev()
            .filter_map(|r| r["text"].as_str())
            .find(|t| t.contains(needle))
            .unwrap_or_default()
            .to_string()
    }
}

impl SseReader {
    /// Reads events until an op satisfies `check`; returns that op (`None`: the stream ended).
    pub fn wait_op(&mut self, check: impl Fn(&Value) -> bool) -> Option<Value> {
        while let Some(event) = self.next_event() {
            if let Some(op) = event.ops().into_iter().find(|op| check(op)) {
                return Some(op);
            }
        }
        None
    }
}

/// The processes descended from `pid` (children, grandchildren, ...), from `/proc`.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // The command name may contain spaces: the fields after its closing parenthesis.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parents.push((child, ppid));
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// The command line of a process (arguments joined by spaces), if it still runs.
pub fn cmdline(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Whether a process is gone (no `/proc` entry, or a zombie waiting for its parent).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits until a descendant of `pid` runs a command line containing `needle`; its pid.
pub fn wait_descendant(pid: u32, needle: &str) -> u32 {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(found) = descendants(pid)
            .into_iter()
            .find(|p| cmdline(*p).is_some_and(|c| c.contains(needle)))
        {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "no process running {needle:?} under {pid}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Waits until `pid` is gone.
pub fn wait_gone(pid: u32, what: &str) {
    let deadline = Instant::now() + PATIENCE;
    while !process_gone(pid) {
        assert!(
            Instant::now() < deadline,
            "{what}: process {pid} still runs"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}
