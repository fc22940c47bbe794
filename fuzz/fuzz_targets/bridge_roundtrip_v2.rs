//! Fuzz target: v2 -> v1 -> v2 through two spindle-bridge instances (the
//! other direction of `bridge_roundtrip`).
//!
//! A v2 client talks to bridge A (v2 client, v1 agent), whose agent side is
//! bridge B (v1 client, v2 agent), whose agent is a scripted v2 agent. The
//! input bytes pick what the agent streams, kept to what ACP v1 can carry
//! (with the clear extension, which A advertises to its v1 agent): message
//! and thought chunks with messageIds, whole-message upserts (fresh ids and
//! replacements), user message chunks, tool-call upserts (titled on first
//! sighting, v1 statuses) and tool content chunks, single plans with v1
//! statuses, usage, typed commands, session info, turn ends (idle with a v1
//! stop reason, sometimes repeated) and raw lines.
//!
//! Invariants besides "no panic" and "no endless ping-pong":
//! - every line either bridge emits is one line of JSON when its input was;
//! - every response the v2 client gets answers a request it sent, once
//!   (the F9 class: no bridge-internal or duplicate ids leak);
//! - when neither bridge reported a warning or error (and no raw line was
//!   played), the v2 client's transcript after the round trip is the one it
//!   would have had talking to the agent directly: same entries (kind, turn,
//!   text, tool call id/status/title), state, usage, final reply and turns.

#![no_main]

#[path = "common/bridge_chain.rs"]
mod bridge_chain;
#[path = "common/round_trip.rs"]
mod round_trip;

use std::collections::HashSet;

use bridge_chain::Chain;
use libfuzzer_sys::fuzz_target;
use round_trip::{
    Input, STOP_REASONS, TOOL_STATUSES, check_views, policy, prompt_params, update_line,
};
use serde_json::{Value, json};
use spindle_bridge::Policy;
use spindle_engine::{EngineConfig, ProtocolHint, TranscriptEngine};

const SESSION: &str = "sess_rt2";

/// The scripted v2 agent plus the two client views: `direct` (the agent's
/// lines as they are) and `bridged` (what reached the client through both
/// bridges).
struct World {
    chain: Chain,
    direct: TranscriptEngine,
    bridged: TranscriptEngine,
    /// The agent-side id of the prompt being served, and the client-side one.
    prompt: Option<(Value, u64)>,
    /// Prompts served so far (message ids are per turn).
    turn: u32,
    next_client_id: u64,
    /// Ids of the client's requests, and those already answered.
    sent: HashSet<u64>,
    answered: HashSet<u64>,
    raw_played: bool,
}

impl World {
    fn new(policy: Policy) -> World {
        let config = EngineConfig {
            protocol: ProtocolHint::V2,
            ..EngineConfig::default()
        };
        World {
            chain: Chain::new(2, 1, policy),
            direct: TranscriptEngine::new(config.clone()),
            bridged: TranscriptEngine::new(config),
            prompt: None,
            turn: 0,
            next_client_id: 0,
            sent: HashSet::new(),
            answered: HashSet::new(),
            raw_played: false,
        }
    }

    fn client_sends(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_client_id;
        self.next_client_id += 1;
        self.sent.insert(id);
        let line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.direct.apply_client_line(&line);
        self.bridged.apply_client_line(&line);
        self.chain.run_from_client(line);
        self.settle();
        id
    }

    /// The bridged view gets what reached the client (each response checked
    /// against the client's requests); the agent answers what reached it;
    /// until both are quiet.
    fn settle(&mut self) {
        loop {
            for line in std::mem::take(&mut self.chain.to_client) {
                if let Ok(msg) = serde_json::from_str::<Value>(&line)
                    && msg.get("method").is_none()
                    && let Some(id) = msg.get("id")
                {
                    let known = id.as_u64().filter(|id| self.sent.contains(id));
                    let id = known.unwrap_or_else(|| {
                        panic!("the client got a response to an id it never sent: {line}")
                    });
                    assert!(self.answered.insert(id), "answered twice: {line}");
                }
                self.bridged.apply_agent_line(&line);
            }
            let inbox = std::mem::take(&mut self.chain.to_agent);
            if inbox.is_empty() {
                return;
            }
            for line in inbox {
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let id = msg.get("id").cloned().unwrap_or(Value::Null);
                let result = match msg["method"].as_str() {
                    Some("initialize") => json!({"protocolVersion": 2,
                        "info": {"name": "fuzz-agent", "version": "1"},
                        "capabilities": {"session": {}}}),
                    Some("session/new") => json!({"sessionId": SESSION}),
                    Some("session/prompt") => {
                        self.accept_prompt(id, &msg["params"]["prompt"]);
                        continue;
                    }
                    Some(_) if !id.is_null() => json!({}),
                    _ => continue,
                };
                // Both bridges pass the ids of these requests through.
                let response = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                self.direct.apply_agent_line(&response);
                self.chain.run_from_agent(response);
            }
        }
    }

    /// A v2 agent accepts a prompt at once: the response with the user
    /// message id, the echo of the prompt, `running`.
    fn accept_prompt(&mut self, agent_id: Value, prompt: &Value) {
        let client_id = self.next_client_id - 1;
        self.turn += 1;
        let user = format!("u{}", self.turn);
        let result = json!({"messageId": user});
        let line = json!({"jsonrpc": "2.0", "id": agent_id, "result": result}).to_string();
        let direct = json!({"jsonrpc": "2.0", "id": client_id, "result": result}).to_string();
        self.direct.apply_agent_line(&direct);
        self.chain.run_from_agent(line);
        self.prompt = Some((agent_id, client_id));
        self.update(json!({"sessionUpdate": "user_message", "messageId": user, "content": prompt}));
        self.update(json!({"sessionUpdate": "state_update", "state": "running"}));
    }

    /// The agent writes one line, seen the same way by the direct view.
    fn agent_writes(&mut self, line: String) {
        self.direct.apply_agent_line(&line);
        self.chain.run_from_agent(line);
        self.settle();
    }

    fn update(&mut self, update: Value) {
        let line = update_line(SESSION, update);
        self.agent_writes(line);
    }

    fn end_turn(&mut self, reason: &str, repeat: bool) {
        if self.prompt.take().is_some() {
            let idle =
                json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": reason});
            self.update(idle.clone());
            if repeat {
                self.update(idle);
            }
        }
    }

    fn prompt(&mut self, text: &str) {
        self.client_sends("session/prompt", prompt_params(SESSION, text));
    }
}

const PLAN_STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];

fn text_block(text: String) -> Value {
    json!({"type": "text", "text": text})
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mut world = World::new(policy(&mut input));
    world.client_sends(
        "initialize",
        json!({"protocolVersion": 2, "info": {"name": "fuzz-client", "version": "1"}}),
    );
    world.client_sends("session/new", json!({"cwd": "/", "mcpServers": []}));
    world.prompt("first");
    // Tool calls announced (by slot): the first sighting carries a title.
    let mut tools: Vec<bool> = vec![false; 4];
    let mut ops = 0;
    while let Some(op) = input.byte() {
        ops += 1;
        if ops > 64 {
            break;
        }
        let arg = input.byte().unwrap_or(0);
        let turn = world.turn;
        let message = |thought: bool, slot: u8| {
            format!("t{turn}{}{}", if thought { "th" } else { "m" }, slot % 3)
        };
        match op % 12 {
            0 | 1 => {
                let thought = op % 12 == 1;
                let id = message(thought, arg);
                let tag = if thought {
                    "agent_thought_chunk"
                } else {
                    "agent_message_chunk"
                };
                let text = input.text();
                world.update(json!({"sessionUpdate": tag, "messageId": id,
                    "content": text_block(text)}));
            }
            // A whole message: fresh, or replacing what was streamed.
            2 => {
                let thought = arg & 0x80 != 0;
                let id = message(thought, arg);
                let tag = if thought {
                    "agent_thought"
                } else {
                    "agent_message"
                };
                let blocks: Vec<Value> =
                    (0..1 + arg % 2).map(|_| text_block(input.text())).collect();
                world.update(json!({"sessionUpdate": tag, "messageId": id, "content": blocks}));
            }
            3 => {
                let text = input.text();
                world.update(json!({"sessionUpdate": "user_message_chunk",
                    "messageId": format!("t{turn}x{}", arg % 2), "content": text_block(text)}));
            }
            // A tool call: titled when first seen, patched after.
            4 => {
                let slot = usize::from(arg) % tools.len();
                let mut u = json!({"sessionUpdate": "tool_call_update",
                    "toolCallId": format!("c{slot}"),
                    "status": TOOL_STATUSES[usize::from(arg / 16) % 4]});
                if !tools[slot] {
                    u["title"] = json!(input.text());
                    u["kind"] = json!("read");
                    tools[slot] = true;
                }
                if arg & 0x40 != 0 {
                    u["content"] =
                        json!([{"type": "content", "content": text_block(input.text())}]);
                }
                world.update(u);
            }
            5 => {
                let slot = usize::from(arg) % tools.len();
                if tools[slot] {
                    let text = input.text();
                    world.update(json!({"sessionUpdate": "tool_call_content_chunk",
                        "toolCallId": format!("c{slot}"),
                        "content": {"type": "content", "content": text_block(text)}}));
                }
            }
            6 => {
                let content = input.text();
                world.update(
                    json!({"sessionUpdate": "plan_update", "plan": {"type": "items",
                    "planId": "main", "entries": [
                        {"content": content, "priority": "high",
                         "status": PLAN_STATUSES[usize::from(arg) % 3]},
                        {"content": "then", "priority": "low", "status": "pending"}]}}),
                );
            }
            7 => world.update(json!({"sessionUpdate": "usage_update",
                "used": u64::from(arg) * 100, "size": 200_000})),
            8 => world.update(json!({"sessionUpdate": "available_commands_update",
                "availableCommands": [
                    {"name": "help", "description": "Help", "type": "command"},
                    {"name": "run", "description": "Run", "type": "command",
                     "input": {"type": "text", "hint": "what"}}]})),
            9 => {
                let title = input.text();
                world.update(json!({"sessionUpdate": "session_info_update", "title": title}));
            }
            10 => {
                world.end_turn(
                    STOP_REASONS[usize::from(arg) % STOP_REASONS.len()],
                    arg & 0x80 != 0,
                );
                let text = input.text();
                world.prompt(if text.is_empty() { "next" } else { &text });
            }
            _ => {
                // The transport splits lines: a raw line holds no newline.
                let raw = input.text().replace('\n', " ");
                world.raw_played = true;
                world.agent_writes(raw);
            }
        }
    }
    world.end_turn("end_turn", false);
    check_views(
        "bridge_roundtrip_v2",
        "v2 -> v1 -> v2",
        world.chain.lossy,
        world.raw_played,
        &world.direct,
        &world.bridged,
    );
});
