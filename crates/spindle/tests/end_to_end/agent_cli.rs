//! `spindle agent` as a real process over stdio.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use spindle_agent::{StreamMix, Version};

fn spindle() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spindle"))
}

struct Agent {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Agent {
    fn start(extra: &[&str]) -> Agent {
        let mut child = spindle()
            .arg("agent")
            .args(["--delay-ms", "0"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn spindle agent");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Agent {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, msg: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line).unwrap() == 0 {
            return None;
        }
        Some(serde_json::from_str(&line).expect("agent stdout is JSON lines"))
    }

    /// Lines up to and including the response to `id`.
    fn until_response(&mut self, id: u64) -> Vec<Value> {
        let mut lines = Vec::new();
        loop {
            let msg = self.recv().expect("agent ended early");
            let done = msg["id"] == json!(id) && msg.get("method").is_none();
            lines.push(msg);
            if done {
                return lines;
            }
        }
    }

    fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        while self.recv().is_some() {}
        self.child.wait().unwrap().code().unwrap()
    }
}

fn reply_text(lines: &[Value]) -> String {
    let mut text = String::new();
    for l in lines {
        let u = &l["params"]["update"];
        match u["sessionUpdate"].as_str() {
            Some("agent_message_chunk") => text.push_str(u["content"]["text"].as_str().unwrap()),
            Some("agent_message_clear") => text.clear(),
            _ => {}
        }
    }
    text
}

#[test]
fn v1_session_over_stdio() {
    let mut agent = Agent::start(&[]);
    agent.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "_meta": {"spindle": {"extensions": ["agent_message_clear"]}}}}));
    let init = agent.until_response(0);
    assert_eq!(init[0]["result"]["protocolVersion"], 1);
    agent.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}));
    let new = agent.until_response(1);
    let sid = new.last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    agent.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/scenario refine"}]}}),
    );
    let turn = agent.until_response(2);
    assert_eq!(turn.last().unwrap()["result"]["stopReason"], "end_turn");
    assert_eq!(reply_text(&turn), spindle_agent::scenarios::REFINE_REPLY);
    agent.send(json!({"jsonrpc": "2.0", "id": 3, "method": "bogus"}));
    let err = agent.until_response(3);
    assert_eq!(err.last().unwrap()["error"]["code"], -32601);
    assert_eq!(agent.finish(), 0);
}

#[test]
fn v2_session_and_crash_exit_code() {
    let mut agent = Agent::start(&["--protocol", "2"]);
    agent.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 2, "info": {"name": "cli-test", "version": "0"}}}));
    assert_eq!(agent.until_response(0)[0]["result"]["protocolVersion"], 2);
    agent.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}}));
    let sid = agent.until_response(1).last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    agent.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/scenario crash"}]}}),
    );
    let mut saw_running = false;
    while let Some(msg) = agent.recv() {
        saw_running |= msg["params"]["update"]["state"] == "running";
        assert_ne!(msg["params"]["update"]["state"], "idle");
    }
    assert!(saw_running);
    let status = agent.child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(spindle_agent::scenarios::CRASH_EXIT_CODE)
    );
}

#[test]
fn emit_stream_and_expect() {
    for (protocol, version) in [("1", Version::V1), ("2", Version::V2)] {
        for mix in ["mixed", "refine", "snapshot", "chunks"] {
            let args = [
                "agent",
                "--emit-stream",
                "5000",
                "--mix",
                mix,
                "--protocol",
                protocol,
            ];
            let out = spindle().args(args).output().unwrap();
            assert!(out.status.success());
            let lines: Vec<&[u8]> = out
                .stdout
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .collect();
            assert_eq!(lines.len(), 5000);
            for l in lines.iter().step_by(97) {
                let v: Value = serde_json::from_slice(l).unwrap();
                assert_eq!(v["method"], "session/update");
            }
            let out = spindle().args(args).arg("--expect").output().unwrap();
            let expect: Value = serde_json::from_slice(&out.stdout).unwrap();
            let lib = spindle_agent::expected_reply(version, StreamMix::parse(mix).unwrap(), 5000);
            assert_eq!(expect["replyBytes"], lib.bytes);
            assert_eq!(expect["replyFnv1a64"], format!("{:016x}", lib.fnv1a64));
        }
    }
    let bad = spindle()
        .args(["agent", "--emit-stream", "1", "--mix", "nope"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

#[test]
fn script_file_over_stdio() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/scripts/tools-v1.jsonl"
    );
    let mut agent = Agent::start(&["--script", script, "--no-script-sleep"]);
    agent.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}));
    agent.until_response(0);
    agent.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}));
    agent.until_response(1);
    for (id, stop) in [(2, "end_turn"), (3, "refusal")] {
        agent.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "go"}]}}),
        );
        let turn = agent.until_response(id);
        assert_eq!(turn.last().unwrap()["result"]["stopReason"], stop);
    }
    assert_eq!(agent.finish(), 0);
    // A missing script is reported before the handshake.
    let out = spindle()
        .args(["agent", "--script", "/nonexistent/script.jsonl"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// `--require-auth` and `--state-dir`: a session made by one agent process, after
/// authenticating, is listed and loaded with its history by the next one.
#[test]
fn require_auth_and_state_dir_carry_sessions_across_processes() {
    let dir = crate::harness::TempDir::new("agent-state");
    let state = dir.join("state");
    let state = state.to_str().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1}});
    let mut agent = Agent::start(&["--require-auth", "--state-dir", state]);
    agent.send(init.clone());
    let methods = agent.until_response(0)[0]["result"]["authMethods"].clone();
    assert_eq!(methods[0]["id"], "spindle-token");
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": "/w", "mcpServers": []}});
    agent.send(new.clone());
    assert_eq!(
        agent.until_response(1).last().unwrap()["error"]["code"],
        -32000
    );
    agent.send(json!({"jsonrpc": "2.0", "id": 2, "method": "authenticate",
        "params": {"methodId": "spindle-token"}}));
    assert!(
        agent
            .until_response(2)
            .last()
            .unwrap()
            .get("result")
            .is_some()
    );
    agent.send(new);
    let sid = agent.until_response(1).last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    agent.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "note the green lamp"}]}}),
    );
    let reply = reply_text(&agent.until_response(3));
    assert_eq!(agent.finish(), 0);

    let mut agent = Agent::start(&["--state-dir", state]);
    agent.send(init);
    agent.until_response(0);
    agent.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}));
    let list = agent.until_response(1);
    let sessions = list.last().unwrap()["result"]["sessions"].clone();
    assert_eq!(sessions[0]["sessionId"], sid.as_str());
    assert_eq!(sessions[0]["title"], "note the green lamp");
    agent.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/load",
        "params": {"sessionId": sid, "cwd": "/w", "mcpServers": []}}));
    let loaded = agent.until_response(2);
    assert!(loaded.last().unwrap().get("result").is_some());
    assert_eq!(reply_text(&loaded), reply);
    assert_eq!(agent.finish(), 0);
}
