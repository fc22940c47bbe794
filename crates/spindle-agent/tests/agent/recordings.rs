//! Golden recordings: every scenario's exact traffic, in the `spindle replay`
//! input format (a bare line was received by the client, `{"sent": ...}` was
//! sent by it), under `tests/fixtures/recordings/`. They pin the agent's
//! bytes and serve as fixtures for anyone testing a client or the engine.
//!
//! `UPDATE_EXPECT=1 cargo test -p spindle-agent --test agent recordings::`
//! rewrites them; review the diff.

use serde_json::{Value, json};
use spindle_agent::scenarios;
use spindle_agent::{AgentConfig, AgentCore, Next};
use spindle_engine::{EngineConfig, replay_recording};

const ALL_EXTS: [&str; 4] = [
    "agent_message_clear",
    "agent_thought_clear",
    "session_cleared",
    "clear_boundary",
];

struct Recorder {
    core: AgentCore,
    text: String,
    next_id: u64,
}

impl Recorder {
    fn new() -> Self {
        Recorder {
            core: AgentCore::new(AgentConfig::default()),
            text: String::new(),
            next_id: 0,
        }
    }

    fn send(&mut self, msg: Value) {
        self.text.push_str(&json!({"sent": msg}).to_string());
        self.text.push('\n');
        self.core.handle_line(&msg.to_string());
        self.drain();
    }

    fn request(&mut self, method: &str, params: Value) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// Runs the agent until it waits; answers permission requests with allow.
    fn drain(&mut self) {
        loop {
            let next = self.core.advance(0);
            let out = self.core.take_output();
            let mut answers = Vec::new();
            for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let line = std::str::from_utf8(line).unwrap();
                self.text.push_str(line);
                self.text.push('\n');
                let msg: Value = serde_json::from_str(line).unwrap();
                if msg["method"] == "session/request_permission" {
                    answers.push(json!({"jsonrpc": "2.0", "id": msg["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}));
                }
            }
            for answer in answers {
                self.send(answer);
            }
            if next != Next::Ready {
                return;
            }
        }
    }
}

/// Records one session: handshake, then each prompt; a prompt of `!cancel`
/// sends `session/cancel` instead.
fn record(version: u64, exts: &[&str], prompts: &[&str]) -> String {
    let mut r = Recorder::new();
    let mut init = json!({"protocolVersion": version});
    if version == 2 {
        init["info"] = json!({"name": "recorder", "version": "0"});
    }
    if !exts.is_empty() {
        init["_meta"] = json!({"spindle": {"extensions": exts}});
    }
    r.request("initialize", init);
    let mut new = json!({"cwd": "/workspace"});
    if version == 1 {
        new["mcpServers"] = json!([]);
    }
    r.request("session/new", new);
    for prompt in prompts {
        if *prompt == "!cancel" {
            r.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "sess_1"}}));
        } else {
            r.request(
                "session/prompt",
                json!({"sessionId": "sess_1", "prompt": [{"type": "text", "text": prompt}]}),
            );
        }
    }
    r.core.handle_eof();
    r.drain();
    r.text
}

/// One recorded session.
struct Case {
    /// File stem under `tests/fixtures/recordings/`.
    name: String,
    version: u64,
    exts: &'static [&'static str],
    prompts: Vec<&'static str>,
    /// Expected engine reply of the last turn, when worth pinning.
    reply: Option<String>,
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (tag, version, exts) in [
        ("v1", 1, &ALL_EXTS[..]),
        ("v1-plain", 1, &[][..]),
        ("v2", 2, &[][..]),
    ] {
        let mut add = |name: &str, prompts: Vec<&'static str>, reply: Option<String>| {
            cases.push(Case {
                name: format!("{tag}/{name}"),
                version,
                exts,
                prompts,
                reply,
            });
        };
        add(
            "plain",
            vec!["hello"],
            Some(scenarios::plain_reply("hello")),
        );
        add(
            "thoughts",
            vec!["/scenario thoughts"],
            Some(scenarios::THOUGHTS_REPLY.into()),
        );
        add("refine", vec!["/scenario refine"], None);
        add(
            "denoise",
            vec!["/scenario denoise"],
            Some(scenarios::DENOISE_REPLY.into()),
        );
        add("speculative", vec!["/scenario speculative"], None);
        add(
            "snapshot",
            vec!["/scenario snapshot"],
            Some(scenarios::SNAPSHOT_REPLY.into()),
        );
        add(
            "tools",
            vec!["/scenario tools"],
            Some(scenarios::TOOLS_REPLY_ALLOWED.into()),
        );
        add(
            "terminal",
            vec!["/scenario terminal"],
            Some(spindle_agent::terminal::TERMINAL_REPLY.into()),
        );
        add("background", vec!["/scenario background"], None);
        add("notice", vec!["/scenario notice"], None);
        add("error", vec!["/scenario error"], None);
        add("stall-cancel", vec!["/scenario stall", "!cancel"], None);
        add(
            "clear",
            vec!["hello", "/clear"],
            Some(scenarios::CLEAR_REPLY.into()),
        );
        add("compact", vec!["hello", "/compact"], None);
        add(
            "queued",
            vec!["/scenario stall", "queued prompt", "!cancel", "after"],
            Some(scenarios::plain_reply("after")),
        );
        add("stream-mixed-100", vec!["/stream 100 mixed"], None);
    }
    cases
}

#[test]
fn recordings_match_and_replay() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recordings");
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut stale = Vec::new();
    for Case {
        name,
        version,
        exts,
        prompts,
        reply,
    } in cases()
    {
        let text = record(version, exts, &prompts);
        let path = format!("{dir}/{name}.jsonl");
        if update {
            std::fs::create_dir_all(std::path::Path::new(&path).parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else {
            let expected = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{path}: {e} (run with UPDATE_EXPECT=1)"));
            if expected != text {
                stale.push(name.clone());
            }
        }
        // Deterministic.
        assert_eq!(record(version, exts, &prompts), text, "{name}");
        // The recording replays through the engine without complaint.
        let engine = replay_recording(&text, EngineConfig::default());
        let diags = &engine.transcript().diagnostics;
        assert!(diags.is_empty(), "{name}: {diags:?}");
        if let Some(reply) = reply {
            assert_eq!(engine.final_reply().unwrap_or_default(), reply, "{name}");
        }
    }
    assert!(
        stale.is_empty(),
        "recordings differ (UPDATE_EXPECT=1 to rewrite): {stale:?}"
    );
}
