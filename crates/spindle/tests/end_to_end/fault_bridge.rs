//! Faults through the real `spindle bridge` (the one client-side runtime
//! shipped as a binary while `spindle chat` is being written): a v2 client
//! (this test) drives a v1 agent that crashes mid-turn, writes garbage, or
//! writes a 100 MiB line.

use crate::harness;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use harness::{
    ChildGuard, TempDir, fake_agent_command, reference_agent_v1, require_python, run_measured,
    spindle,
};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(60);

struct BridgeClient {
    child: ChildGuard,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: std::path::PathBuf,
    next_id: u64,
    /// Lines from the bridge that were not JSON (relayed agent garbage).
    garbage: Vec<String>,
    /// The id of every response the bridge sent to this client.
    response_ids: Vec<Value>,
}

impl BridgeClient {
    /// `spindle bridge --agent-protocol 1 -- AGENT...` with this test as a v2 client.
    fn start(dir: &TempDir, agent: &[OsString]) -> BridgeClient {
        let stderr = dir.join("bridge.stderr");
        let mut child = spindle()
            .args(["bridge", "--agent-protocol", "1", "--"])
            .args(agent)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("spawn spindle bridge");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut client = BridgeClient {
            child: ChildGuard::new(child),
            stdin,
            lines,
            stderr,
            next_id: 0,
            garbage: Vec::new(),
            response_ids: Vec::new(),
        };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": 2, "info": {"name": "fault-test", "version": "1"}}),
        );
        client.until_response(init);
        client
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        id
    }

    /// The next line from the bridge, or `None` at end of output.
    fn recv(&mut self) -> Option<String> {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(line) => Some(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the bridge went silent"),
        }
    }

    /// The next JSON message; non-JSON lines are set aside in `garbage`.
    fn recv_message(&mut self, what: &str) -> Value {
        loop {
            let line = self
                .recv()
                .unwrap_or_else(|| panic!("bridge output ended before {what}"));
            match serde_json::from_str::<Value>(&line) {
                Ok(msg) => {
                    if msg.get("method").is_none()
                        && let Some(id) = msg.get("id")
                    {
                        self.response_ids.push(id.clone());
                    }
                    return msg;
                }
                Err(_) => self.garbage.push(line),
            }
        }
    }

    /// Messages up to and including the response to `id`.
    fn until_response(&mut self, id: u64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let msg = self.recv_message("a response");
            let done = msg["id"] == id && msg.get("method").is_none();
            seen.push(msg);
            if done {
                return seen;
            }
        }
    }

    /// Messages up to and including the turn's final idle state.
    fn until_idle(&mut self) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let msg = self.recv_message("idle");
            let update = &msg["params"]["update"];
            let idle = update["sessionUpdate"] == "state_update" && update["state"] == "idle";
            seen.push(msg);
            if idle {
                return seen;
            }
        }
    }

    fn new_session(&mut self) -> String {
        let id = self.request("session/new", json!({"cwd": "/", "mcpServers": []}));
        let seen = self.until_response(id);
        seen.last().unwrap()["result"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string()
    }

    fn prompt(&mut self, session: &str, text: &str) -> Vec<Value> {
        let id = self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        );
        let mut seen = self.until_response(id);
        seen.extend(self.until_idle());
        seen
    }

    /// Closes the client's side and waits for the bridge to exit.
    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let status = self
            .child
            .wait_timeout(PATIENCE)
            .expect("the bridge exits once its client is gone");
        (
            status.code(),
            std::fs::read_to_string(&self.stderr).unwrap(),
        )
    }
}

fn reply_text(messages: &[Value]) -> String {
    messages
        .iter()
        .map(|m| &m["params"]["update"])
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn final_state(messages: &[Value]) -> Value {
    messages.last().unwrap()["params"]["update"].clone()
}

#[test]
fn fault_bridge_agent_crash_mid_turn_ends_the_turn_in_error_and_keeps_the_partial_reply() {
    let dir = TempDir::new("bridge-crash");
    let mut client = BridgeClient::start(&dir, &reference_agent_v1());
    let session = client.new_session();
    let seen = client.prompt(&session, "/scenario crash");
    assert_eq!(
        reply_text(&seen),
        "This turn will stop abruptly in the middle of a",
        "every chunk before the crash reaches the client"
    );
    let idle = final_state(&seen);
    assert_eq!(idle["stopReason"], "error", "{idle}");
    assert!(
        idle["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("exit status: 3")),
        "{idle}"
    );
    let (code, stderr) = client.finish();
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("the agent exited"), "{stderr}");
}

/// F8 (RELIABILITY.md): the bridge stayed alive after its agent died until
/// the client closed stdin, so a client waiting for it to exit hung.
#[test]
fn fault_bridge_exits_after_the_agent_dies_while_the_client_keeps_stdin_open() {
    let dir = TempDir::new("bridge-crash-stdin-open");
    let mut client = BridgeClient::start(&dir, &reference_agent_v1());
    let session = client.new_session();
    let seen = client.prompt(&session, "/scenario crash");
    assert_eq!(final_state(&seen)["stopReason"], "error");
    assert!(client.stdin.is_some(), "the client's stdin stays open");
    let status = client
        .child
        .wait_timeout(PATIENCE)
        .expect("the bridge exits by itself once its agent is gone");
    assert_eq!(status.code(), Some(2));
    let stderr = std::fs::read_to_string(&client.stderr).unwrap();
    assert!(stderr.contains("the agent exited"), "{stderr}");
}

#[test]
fn fault_bridge_stalled_agent_turn_is_cancelled() {
    let dir = TempDir::new("bridge-stall");
    let mut client = BridgeClient::start(&dir, &reference_agent_v1());
    let session = client.new_session();
    let id = client.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "/scenario stall"}]}),
    );
    client.until_response(id);
    // Wait until the stall text is through, then cancel.
    let mut text = String::new();
    while !text.contains("stalls until you cancel it.") {
        let msg = client.recv_message("the stall text");
        let update = &msg["params"]["update"];
        if update["sessionUpdate"] == "agent_message_chunk" {
            text.push_str(update["content"]["text"].as_str().unwrap_or_default());
        }
    }
    let line =
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}});
    let stdin = client.stdin.as_mut().unwrap();
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
    let seen = client.until_idle();
    assert_eq!(final_state(&seen)["stopReason"], "cancelled");
    let seen = client.prompt(&session, "still there?");
    assert!(reply_text(&seen).contains("still there?"));
    let (code, stderr) = client.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn fault_bridge_garbage_from_the_agent_is_reported_and_the_session_goes_on() {
    if !require_python() {
        return;
    }
    let dir = TempDir::new("bridge-garbage");
    let mut client = BridgeClient::start(&dir, &fake_agent_command(&dir, "garbage"));
    let session = client.new_session();
    let first = client.prompt(&session, "first");
    let text = reply_text(&first);
    assert!(
        text.starts_with("Before garbage. ") && text.contains("After garbage."),
        "{text:?}"
    );
    // The responses to ids nobody sent (9999, "who") did not end the turn.
    assert_eq!(final_state(&first)["stopReason"], "end_turn");
    let second = client.prompt(&session, "second");
    assert_eq!(final_state(&second)["stopReason"], "end_turn");
    // The non-JSON lines are relayed as they are (a proxy), and reported.
    assert_eq!(client.garbage.len(), 4, "{:?}", client.garbage);
    assert!(reply_text(&second).contains("Turn 2 reply."), "{second:#?}");
    // F9: the duplicate prompt answer and the answers to ids nobody sent are
    // dropped; every response names a request of this client, once.
    let sent: Vec<Value> = (0..client.next_id).map(Value::from).collect();
    assert_eq!(client.response_ids, sent, "{second:#?}");
    let (code, stderr) = client.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("malformed_agent_line"), "{stderr}");
    assert!(stderr.contains("unknown_response_id"), "{stderr}");
}

#[test]
fn fault_bridge_a_100_mib_agent_line_does_not_stop_the_session() {
    if !require_python() {
        return;
    }
    let dir = TempDir::new("bridge-bigline");
    let mut agent = vec![
        OsString::from("env"),
        OsString::from("FAKE_AGENT_BIG_MB=100"),
    ];
    agent.extend(fake_agent_command(&dir, "bigline"));
    let mut client = BridgeClient::start(&dir, &agent);
    let session = client.new_session();
    let id = client.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "big"}]}),
    );
    client.until_response(id);
    // Read line by line without keeping the big one.
    let mut text = String::new();
    let mut longest = 0;
    loop {
        let line = client.recv().expect("output");
        longest = longest.max(line.len());
        if line.len() > 1 << 20 {
            continue;
        }
        let msg: Value = serde_json::from_str(&line).unwrap();
        let update = &msg["params"]["update"];
        if update["sessionUpdate"] == "agent_message_chunk" {
            text.push_str(update["content"]["text"].as_str().unwrap_or_default());
        }
        if update["sessionUpdate"] == "state_update" && update["state"] == "idle" {
            assert_eq!(update["stopReason"], "end_turn");
            break;
        }
    }
    assert!(text.starts_with("Before the big line. ") && text.ends_with("After the big line."));
    let peak = std::fs::read_to_string(format!("/proc/{}/status", client.child.pid()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().to_string()))
        });
    eprintln!("bridge relayed a {longest}-byte line; bridge peak RSS {peak:?}");
    let (code, stderr) = client.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

/// F10 (RELIABILITY.md): the bridge buffered a line whole (a 100 MiB agent
/// line took it to 213 MiB). Now a line over `--max-line-bytes` (64 MiB by
/// default) is dropped in pieces with a warning and the turn goes on; memory
/// follows the limit, not the line. The client is a file on stdin: after its
/// EOF the bridge relays what the agent still writes until the agent exits.
/// v1 on both sides: the line limit sits below the translation. The client
/// does not wait for the initialize answer: its other requests are held until
/// the answer comes, and the agent's stdin stays open until they are written.
#[test]
fn fault_bridge_a_100_mib_agent_line_is_dropped_with_bounded_memory() {
    if !require_python() {
        return;
    }
    let dir = TempDir::new("bridge-bigline-measured");
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
               "params": {"cwd": "/", "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
               "params": {"sessionId": "sess_fake", "prompt": [{"type": "text", "text": "big"}]}}),
    ];
    let input = dir.join("client.jsonl");
    let text: String = requests.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let agent = fake_agent_command(&dir, "bigline");
    // (extra bridge arguments, loose peak-RSS bound in MiB: the 100 MiB line
    // must not be held; the default limit may be filled once)
    let limit_8m = (8 << 20).to_string();
    for (extra, bound_mib) in [
        (vec![], 96),
        (vec!["--max-line-bytes", limit_8m.as_str()], 40),
    ] {
        let mut args: Vec<OsString> = vec!["bridge".into(), "--agent-protocol".into(), "1".into()];
        args.extend(extra.iter().map(OsString::from));
        args.extend(["--", "env", "FAKE_AGENT_BIG_MB=100"].map(OsString::from));
        args.extend(agent.iter().cloned());
        let args: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
        let program = std::path::Path::new(env!("CARGO_BIN_EXE_spindle"));
        let (out, peak_kib) = run_measured(program, &args, Some(&input), &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stdout.lines().all(|l| l.len() < 1 << 20),
            "the big line was not relayed"
        );
        let messages: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .collect();
        let updates: Vec<Value> = messages
            .iter()
            .map(|m| m["params"]["update"].clone())
            .collect();
        assert_eq!(
            reply_text_of_updates(&updates),
            "Before the big line. After the big line."
        );
        let last = messages.last().unwrap();
        assert_eq!(last["id"], 2, "{stdout}");
        assert_eq!(last["result"]["stopReason"], "end_turn", "{stdout}");
        assert!(stderr.contains("line_too_long"), "{stderr}");
        assert!(stderr.contains("from the agent"), "{stderr}");
        let warning = stderr.lines().find(|l| l.contains("line_too_long"));
        eprintln!(
            "{extra:?}: {warning:?}; peak RSS (bridge or its agent, the larger) {peak_kib:?} KiB"
        );
        if let Some(kib) = peak_kib {
            assert!(kib < bound_mib * 1024, "{extra:?}: peak RSS {kib} KiB");
        }
    }
}

fn reply_text_of_updates(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}
