//! Shared helpers of the end-to-end tests (and of `tests/fault_client.rs`,
//! which includes this file by path): temp dirs, child guards, waits, peak-RSS
//! measurement, the fake python agent, and the missing-tool policy
//! ([`require_tool`]: a test whose tool is missing fails under `CI=true`).
#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The real `spindle` binary.
pub fn spindle() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spindle"))
}

/// The reference agent (`spindle agent`) speaking protocol v1 with no delay
/// between the pieces of a reply.
pub fn reference_agent_v1() -> Vec<OsString> {
    vec![
        env!("CARGO_BIN_EXE_spindle").into(),
        "agent".into(),
        "--protocol".into(),
        "1".into(),
        "--delay-ms".into(),
        "0".into(),
    ]
}

/// A scratch directory removed on drop (made writable first, since some
/// tests make it read-only).
#[derive(Debug)]
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "spindle-hardening-{label}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir { path }
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = Command::new("chmod")
            .args(["-R", "u+rwX"])
            .arg(&self.path)
            .status();
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A child process killed and reaped on drop, so a failing assertion never
/// leaves a process behind.
#[derive(Debug)]
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    pub fn new(child: Child) -> ChildGuard {
        ChildGuard(Some(child))
    }

    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("child still owned")
    }

    pub fn pid(&self) -> u32 {
        self.0.as_ref().expect("child still owned").id()
    }

    /// Waits up to `limit` for the child to exit by itself.
    pub fn wait_timeout(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child().try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Takes the child out (the caller then owns its cleanup).
    pub fn take(mut self) -> Child {
        self.0.take().expect("child still owned")
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls `check` every 20 ms until it returns `Some`, or panics with `what`
/// after `limit` (generous limits: the tests never assert on timing).
pub fn wait_for<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `program args...` under a small python3 wrapper that reaps it with
/// `wait4` and reports its peak resident set size (KiB, the largest of the
/// process and the children it waited for). Returns `None` for the RSS when
/// python3 is missing (see [`require_python`]: under `CI=true` that fails).
/// stdin comes from `stdin_file` (or /dev/null).
pub fn run_measured(
    program: &Path,
    args: &[&OsStr],
    stdin_file: Option<&Path>,
    env: &[(&str, &str)],
) -> (Output, Option<u64>) {
    const WRAPPER: &str = r#"
import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(p.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"#;
    if !require_python() {
        let mut cmd = Command::new(program);
        cmd.args(args).envs(env.iter().copied());
        if let Some(f) = stdin_file {
            cmd.stdin(std::fs::File::open(f).expect("open stdin file"));
        }
        return (cmd.output().expect("run program"), None);
    }
    let dir = TempDir::new("rss");
    let report = dir.join("maxrss");
    let stdin = match stdin_file {
        Some(f) => Stdio::from(std::fs::File::open(f).expect("open stdin file")),
        None => Stdio::null(),
    };
    let out = Command::new("python3")
        .arg("-c")
        .arg(WRAPPER)
        .arg(&report)
        .arg(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run python3 (it started a moment ago)");
    let rss = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| {
            panic!(
                "the RSS wrapper wrote no report ({e}); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .trim()
        .parse()
        .expect("the RSS report is a number");
    (out, Some(rss))
}

/// Writes an executable script (e.g. a fake agent in python or sh).
pub fn write_script(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write script");
    let mut perms = std::fs::metadata(&path).expect("stat script").permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(&path, perms).expect("chmod script");
    path
}

/// True under `CI=true` (or `CI=1`): there a test whose tool is missing
/// fails instead of skipping itself green.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Reports that the running test cannot run because `tool` is missing:
/// under `CI=true` it panics (the test fails); otherwise it prints a
/// `SKIPPED` line naming the test, and the caller returns early.
pub fn skip_for_missing(tool: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("this test");
    assert!(
        !under_ci(),
        "{test} needs {tool}, which is not available; under CI=true a missing tool fails the test"
    );
    eprintln!("SKIPPED {test}: {tool} is not available (under CI=true this test fails instead)");
}

/// Whether `tool probe_args...` runs and exits 0. When it does not, see
/// [`skip_for_missing`]: under `CI=true` this panics.
pub fn require_tool(tool: &str, probe_args: &[&str]) -> bool {
    let found = Command::new(tool)
        .args(probe_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        skip_for_missing(tool);
    }
    found
}

/// Whether python3 can be started (the fake agents are written in it); see
/// [`require_tool`].
pub fn require_python() -> bool {
    require_tool("python3", &["-c", "pass"])
}

/// A fake ACP v1 agent in python, for what the reference agent will not do:
/// `garbage` (invalid JSON, binary noise, invalid UTF-8, a cut frame, unknown
/// and duplicate response ids, an update for an unknown session, between two
/// good chunks of the first turn), `bigline` (one line of
/// `FAKE_AGENT_BIG_MB` MiB, default 100, written in 1 MiB pieces so the agent
/// itself stays small), `permission` (asks permission for a tool call on
/// every prompt and reports the outcome it got as reply text), `v2-host` (speaks
/// protocol v2 and, on every prompt, sends `fs/read_text_file` and `terminal/create`,
/// which v2 does not have, and reports the error codes it got as reply text). Every line it
/// receives is appended to `FAKE_AGENT_LOG` when set. Other turns answer
/// `Turn N reply.`.
pub const FAKE_AGENT_PY: &str = r##"import json, os, sys
MODE = sys.argv[1] if len(sys.argv) > 1 else "garbage"
LOG = os.environ.get("FAKE_AGENT_LOG")
BIG_MB = int(os.environ.get("FAKE_AGENT_BIG_MB", "100"))
out = sys.stdout.buffer
SID = "sess_fake"

def raw(b):
    out.write(b)
    out.flush()

def send(obj):
    raw(json.dumps(obj).encode() + b"\n")

def update(u, session=SID):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": u}})

def chunk(text, mid, session=SID):
    update({"sessionUpdate": "agent_message_chunk", "messageId": mid, "content": {"type": "text", "text": text}}, session)

def noise(n, seed):
    b = bytearray()
    x = seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        c = (x >> 33) & 0xFF
        b.append(63 if c == 10 else c)
    return bytes(b)

turn = 0
for line in sys.stdin.buffer:
    if LOG:
        with open(LOG, "ab") as f:
            f.write(line)
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize" and MODE == "v2-host":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "capabilities": {}, "authMethods": []}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": False}, "authMethods": []}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": SID}})
    elif method == "session/prompt":
        turn += 1
        if MODE == "garbage" and turn == 1:
            chunk("Before garbage. ", "m1")
            raw(b"this is not json\n")
            raw(noise(4096, 7) + b"\n")
            raw(b"\xff\xfe\x80 invalid utf-8\n")
            raw(b'{"jsonrpc":"2.0","method":"session/update","params":\n')
            send({"jsonrpc": "2.0", "id": 9999, "result": {"stopReason": "refusal"}})
            send({"jsonrpc": "2.0", "id": "who", "error": {"code": -1, "message": "unknown id"}})
            chunk("INTRUDER", "m_other", "sess_unknown")
            update({"sessionUpdate": "_vendor_thing", "x": 1})
            chunk("After garbage.", "m1")
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "refusal"}})
        elif MODE == "bigline" and turn == 1:
            chunk("Before the big line. ", "m1")
            head = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SID, "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "@@"}}}}).encode()
            pre, post = head.split(b"@@")
            raw(pre)
            piece = b"x" * (1 << 20)
            for _ in range(BIG_MB):
                raw(piece)
            raw(post + b"\n")
            chunk("After the big line.", "m1")
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        elif MODE == "v2-host":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
            codes = []
            for n, (m, p) in enumerate([("fs/read_text_file", {"path": "/etc/hostname"}), ("terminal/create", {"command": "true"})]):
                p["sessionId"] = SID
                send({"jsonrpc": "2.0", "id": 700 + n, "method": m, "params": p})
                for answer in sys.stdin.buffer:
                    a = json.loads(answer)
                    if a.get("id") == 700 + n and "method" not in a:
                        codes.append("%s %s" % (m, a.get("error", {}).get("code", "served")))
                        break
            chunk("answers: " + ", ".join(codes), "m%d" % turn)
            update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
        elif MODE == "permission":
            update({"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "rm -rf /tmp/x", "kind": "execute", "status": "pending"})
            send({"jsonrpc": "2.0", "id": 500 + turn, "method": "session/request_permission", "params": {"sessionId": SID, "toolCall": {"toolCallId": "call_1", "title": "rm -rf /tmp/x"}, "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}, {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}})
            for answer in sys.stdin.buffer:
                if LOG:
                    with open(LOG, "ab") as f:
                        f.write(answer)
                a = json.loads(answer)
                if a.get("id") == 500 + turn and "method" not in a:
                    outcome = a.get("result", {}).get("outcome", {})
                    chunk("outcome: " + json.dumps(outcome, sort_keys=True), "m%d" % turn)
                    break
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        else:
            chunk("Turn %d reply." % turn, "m%d" % turn)
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})
"##;

/// Writes [`FAKE_AGENT_PY`] into `dir`; returns the command line for `mode`.
pub fn fake_agent_command(dir: &TempDir, mode: &str) -> Vec<std::ffi::OsString> {
    let path = dir.join("fake_agent.py");
    std::fs::write(&path, FAKE_AGENT_PY).expect("write fake agent");
    vec!["python3".into(), path.into_os_string(), mode.into()]
}
