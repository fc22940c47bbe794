//! `spindle bridge` end to end: the test is the client (writing JSON lines to
//! the bridge's stdin), the reference agent (`spindle agent`) the child. The
//! transcript the client sees is rebuilt with the transcript engine.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use spindle_agent::scenarios;
use spindle_engine::{EngineConfig, ProtocolHint, TranscriptEngine};

/// Guards against a hung test only; nothing asserts on timing.
const SILENCE_LIMIT: Duration = Duration::from_secs(60);

struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Option<String>>,
    version: u16,
    next_id: u64,
    engine: TranscriptEngine,
    log: Vec<Value>,
}

impl Client {
    /// `spindle bridge BRIDGE_ARGS -- spindle agent --protocol AGENT_VERSION`.
    fn start(
        version: u16,
        agent_version: u16,
        bridge_args: &[&str],
        agent_args: &[&str],
    ) -> Client {
        let v = agent_version.to_string();
        let mut args = vec!["--agent-protocol", v.as_str()];
        args.extend_from_slice(bridge_args);
        Client::spawn(version, agent_version, &args, agent_args)
    }

    /// Without `--agent-protocol`: the bridge learns it from the agent.
    fn start_learning(version: u16, agent_version: u16) -> Client {
        Client::spawn(version, agent_version, &[], &[])
    }

    fn spawn(
        version: u16,
        agent_version: u16,
        bridge_args: &[&str],
        agent_args: &[&str],
    ) -> Client {
        let exe = env!("CARGO_BIN_EXE_spindle");
        let mut child = Command::new(exe)
            .arg("bridge")
            .args(bridge_args)
            .arg("--")
            .arg(exe)
            .args(["agent", "--delay-ms", "0", "--protocol"])
            .arg(agent_version.to_string())
            .args(agent_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn spindle bridge");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(Some(line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(None);
        });
        let protocol = if version == 2 {
            ProtocolHint::V2
        } else {
            ProtocolHint::V1
        };
        Client {
            child,
            stdin,
            rx,
            version,
            next_id: 0,
            engine: TranscriptEngine::new(EngineConfig {
                protocol,
                ..EngineConfig::default()
            }),
            log: Vec::new(),
        }
    }

    fn send(&mut self, msg: Value) {
        let line = msg.to_string();
        self.engine.apply_client_line(&line);
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        id
    }

    /// The next line; None when the bridge closed its stdout.
    fn recv(&mut self) -> Option<Value> {
        let line = match self.rx.recv_timeout(SILENCE_LIMIT) {
            Ok(line) => line?,
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the bridge went silent"),
        };
        self.engine.apply_agent_line(&line);
        let v: Value = serde_json::from_str(&line).expect("bridge output is JSON");
        if v["method"] == "session/request_permission" {
            let options = v["params"]["options"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let allow = options
                .iter()
                .find(|o| o["kind"] == "allow_once")
                .or(options.first())
                .map(|o| o["optionId"].clone())
                .unwrap_or(Value::Null);
            self.send(json!({"jsonrpc":"2.0","id":v["id"],"result":{"outcome":{"outcome":"selected","optionId":allow}}}));
        }
        self.log.push(v.clone());
        Some(v)
    }

    fn until(&mut self, mut done: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let v = self.recv().expect("the bridge closed early");
            let stop = done(&v);
            seen.push(v);
            if stop {
                return seen;
            }
        }
    }

    fn response(&mut self, id: u64) -> Value {
        self.until(|v| v["id"] == id && v.get("method").is_none())
            .pop()
            .unwrap()
    }

    /// initialize + session/new; returns the session id.
    fn handshake(&mut self, extensions: &[&str]) -> String {
        let meta = json!({"spindle":{"extensions":extensions}});
        let params = if self.version == 2 {
            json!({"protocolVersion":2,"info":{"name":"e2e","version":"1"},"capabilities":{},"_meta":meta})
        } else {
            json!({"protocolVersion":1,"clientInfo":{"name":"e2e","version":"1"},
                   "clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false},"_meta":meta})
        };
        let id = self.request("initialize", params);
        let init = self.response(id);
        assert_eq!(init["result"]["protocolVersion"], self.version, "{init}");
        let id = self.request("session/new", json!({"cwd":"/tmp","mcpServers":[]}));
        let new = self.response(id);
        new["result"]["sessionId"]
            .as_str()
            .expect("session id")
            .to_owned()
    }

    /// One prompt turn; returns the stop reason (v1: or the error message).
    fn turn(&mut self, session: &str, text: &str) -> Result<String, Value> {
        let id = self.request(
            "session/prompt",
            json!({"sessionId":session,"prompt":[{"type":"text","text":text}]}),
        );
        if self.version == 2 {
            let accepted = self.response(id);
            assert!(accepted["result"]["messageId"].is_string(), "{accepted}");
            let end = self
                .until(|v| {
                    let u = &v["params"]["update"];
                    u["sessionUpdate"] == "state_update"
                        && u["state"] == "idle"
                        && u.get("stopReason").is_some()
                })
                .pop()
                .unwrap();
            let u = &end["params"]["update"];
            if u["stopReason"] == "error" {
                return Err(u["error"].clone());
            }
            Ok(u["stopReason"].as_str().unwrap().to_owned())
        } else {
            let r = self.response(id);
            match r.get("error") {
                Some(e) => Err(e.clone()),
                None => Ok(r["result"]["stopReason"].as_str().unwrap().to_owned()),
            }
        }
    }

    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        while self.recv().is_some() {}
        self.child.wait().unwrap()
    }
}

#[test]
fn bridge_v2_client_drives_v1_reference_agent() {
    let mut c = Client::start(2, 1, &[], &[]);
    let s = c.handshake(&[]);
    assert_eq!(c.turn(&s, "hello there").unwrap(), "end_turn");
    assert_eq!(
        c.engine.final_reply().as_deref(),
        Some(scenarios::plain_reply("hello there").as_str())
    );
    // The v1 agent's clear extension arrives as v2 `content: []` upserts.
    assert_eq!(c.turn(&s, "/scenario refine").unwrap(), "end_turn");
    assert_eq!(
        c.engine.final_reply().as_deref(),
        Some(scenarios::REFINE_REPLY)
    );
    assert!(c.log.iter().any(
        |v| v["params"]["update"]["sessionUpdate"] == "agent_message"
            && v["params"]["update"]["content"] == json!([])
    ));
    assert_eq!(c.turn(&s, "/scenario tools").unwrap(), "end_turn");
    assert_eq!(
        c.engine.final_reply().as_deref(),
        Some(scenarios::TOOLS_REPLY_ALLOWED)
    );
    // No v1-only tags reach the v2 client; every chunk has a messageId.
    for v in &c.log {
        let u = &v["params"]["update"];
        let tag = u["sessionUpdate"].as_str().unwrap_or("");
        assert!(
            !matches!(tag, "tool_call" | "plan" | "current_mode_update"),
            "{v}"
        );
        if tag.ends_with("_chunk") && tag != "tool_call_content_chunk" {
            assert!(u["messageId"].is_string(), "{v}");
        }
    }
    assert!(c.finish().success());
}

#[test]
fn bridge_v2_client_sees_v1_turn_error_as_idle_error() {
    let mut c = Client::start(2, 1, &[], &[]);
    let s = c.handshake(&[]);
    let err = c.turn(&s, "/scenario error").unwrap_err();
    assert_eq!(err["message"], scenarios::ERROR_MESSAGE);
    assert_eq!(
        c.engine.transcript().state.stop_reason.as_deref(),
        Some("error")
    );
    assert!(c.finish().success());
}

#[test]
fn bridge_v1_client_drives_v2_reference_agent_degrading_with_clear_extension() {
    let mut c = Client::start(1, 2, &["--policy", "degrade"], &[]);
    let s = c.handshake(&["agent_message_clear", "agent_thought_clear"]);
    assert_eq!(c.turn(&s, "hello there").unwrap(), "end_turn");
    // The v2 agent's greeting upsert (fanned out) precedes the first reply.
    let reply = c.engine.final_reply().unwrap();
    assert!(
        reply.ends_with(&scenarios::plain_reply("hello there")),
        "{reply}"
    );
    assert!(
        reply.starts_with("Hello! I am the Spindle reference agent."),
        "{reply}"
    );
    assert_eq!(c.turn(&s, "/scenario refine").unwrap(), "end_turn");
    assert_eq!(
        c.engine.final_reply().as_deref(),
        Some(scenarios::REFINE_REPLY)
    );
    assert_eq!(c.turn(&s, "/scenario tools").unwrap(), "end_turn");
    assert_eq!(
        c.engine.final_reply().as_deref(),
        Some(scenarios::TOOLS_REPLY_ALLOWED)
    );
    // The prompt echo is not shown twice: one user message per turn.
    let users = c
        .engine
        .transcript()
        .entries
        .iter()
        .filter(|e| e.kind.as_str() == "user_message")
        .count();
    assert_eq!(users, 3);
    for v in &c.log {
        let tag = v["params"]["update"]["sessionUpdate"]
            .as_str()
            .unwrap_or("");
        assert!(
            !matches!(
                tag,
                "state_update" | "agent_message" | "user_message" | "tool_call_content_chunk"
            ),
            "{v}"
        );
    }
    assert!(c.finish().success());
}

#[test]
fn bridge_v1_client_strict_fails_turns_v1_cannot_show() {
    let mut c = Client::start(1, 2, &["--policy", "strict"], &[]);
    let s = c.handshake(&[]);
    assert_eq!(c.turn(&s, "hello there").unwrap(), "end_turn");
    let err = c.turn(&s, "/scenario refine").unwrap_err();
    assert_eq!(err["code"], -32603);
    let rejected = err["data"]["rejected"].as_array().unwrap();
    assert!(
        rejected
            .iter()
            .any(|r| r.as_str().unwrap().starts_with("replacement_after_chunks"))
    );
    assert!(c.finish().success());
}

#[test]
fn bridge_reports_agent_crash_to_the_client() {
    for (client, agent) in [(1, 2), (2, 1), (1, 1)] {
        let mut c = Client::start(client, agent, &[], &[]);
        let s = c.handshake(&[]);
        let err = c.turn(&s, "/scenario crash").unwrap_err();
        assert!(err["message"].as_str().unwrap().contains("exited"), "{err}");
        // The bridge exits on its own although the client's stdin is open.
        while c.recv().is_some() {}
        assert_eq!(c.child.wait().unwrap().code(), Some(2));
        assert_eq!(c.finish().code(), Some(2));
    }
}

#[test]
fn bridge_learns_the_agent_version_without_agent_protocol() {
    let mut c = Client::start_learning(2, 1);
    let s = c.handshake(&[]);
    // turn() checks the v2 acceptance (messageId) and the idle end, which
    // only exist because the bridge learnt it is talking to a v1 agent.
    assert_eq!(c.turn(&s, "hello there").unwrap(), "end_turn");
    assert_eq!(
        c.engine.final_reply().as_deref(),
        Some(scenarios::plain_reply("hello there").as_str())
    );
    assert!(c.finish().success());
}

#[test]
fn bridge_same_version_is_a_verbatim_relay() {
    let mut c = Client::start(2, 2, &[], &[]);
    let s = c.handshake(&[]);
    assert_eq!(c.turn(&s, "hello there").unwrap(), "end_turn");
    assert_eq!(c.turn(&s, "/scenario refine").unwrap(), "end_turn");
    assert_eq!(
        c.engine.final_reply().as_deref(),
        Some(scenarios::REFINE_REPLY)
    );
    assert!(c.finish().success());
}
