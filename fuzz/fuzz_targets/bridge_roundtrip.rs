//! Fuzz target: v1 -> v2 -> v1 through two spindle-bridge instances.
//!
//! A v1 client talks to bridge B (v1 client, v2 agent), whose agent side is
//! bridge A (v2 client, v1 agent), whose agent is a scripted v1 agent. The
//! input bytes pick what the agent streams: message, thought and user chunks
//! (with or without messageId), tool calls and patches, plans, usage,
//! commands, mode and session info updates, turn ends, and raw lines.
//!
//! Invariants besides "no panic" and "no endless ping-pong between the two
//! bridges":
//! - every line either bridge emits is one line of JSON when its input was;
//! - when neither bridge reported a warning or error (and no raw line was
//!   played), the v1 client's transcript after the round trip is the one it
//!   would have had talking to the agent directly: same entries (kind, turn,
//!   text, tool call id/status/title), state, usage and final reply.

#![no_main]

#[path = "common/bridge_chain.rs"]
mod bridge_chain;
#[path = "common/round_trip.rs"]
mod round_trip;

use bridge_chain::Chain;
use libfuzzer_sys::fuzz_target;
use round_trip::{
    Input, STOP_REASONS, TOOL_STATUSES, check_views, policy, prompt_params, update_line,
};
use serde_json::{Value, json};
use spindle_bridge::Policy;
use spindle_engine::{EngineConfig, ProtocolHint, StreamingPolicy, TranscriptEngine};

const SESSION: &str = "sess_rt";

/// The scripted v1 agent plus the two client views: `direct` (the agent's
/// lines as they are) and `bridged` (what reached the client through both
/// bridges).
struct World {
    chain: Chain,
    direct: TranscriptEngine,
    bridged: TranscriptEngine,
    /// The agent-side id of the prompt being served, and the client-side one.
    prompt: Option<(Value, u64)>,
    next_client_id: u64,
    raw_played: bool,
}

impl World {
    fn new(policy: Policy) -> World {
        let config = EngineConfig {
            protocol: ProtocolHint::V1,
            streaming: StreamingPolicy::Delta,
        };
        World {
            chain: Chain::new(1, 2, policy),
            direct: TranscriptEngine::new(config.clone()),
            bridged: TranscriptEngine::new(config),
            prompt: None,
            next_client_id: 0,
            raw_played: false,
        }
    }

    fn client_sends(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_client_id;
        self.next_client_id += 1;
        let line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.direct.apply_client_line(&line);
        self.bridged.apply_client_line(&line);
        self.chain.run_from_client(line);
        self.settle();
        id
    }

    /// Answers what reached the agent, and hands what reached the client to
    /// the bridged view, until both are quiet.
    fn settle(&mut self) {
        loop {
            for line in std::mem::take(&mut self.chain.to_client) {
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
                    Some("initialize") => {
                        json!({"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []})
                    }
                    Some("session/new") => json!({"sessionId": SESSION}),
                    Some("session/prompt") => {
                        let client_id = self.next_client_id - 1;
                        self.prompt = Some((id, client_id));
                        continue;
                    }
                    Some(_) if !id.is_null() => json!({}),
                    _ => continue,
                };
                let response = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                self.direct.apply_agent_line(&response);
                self.chain.run_from_agent(response);
            }
        }
    }

    /// The agent writes one line: the direct view gets `direct_line`, the
    /// chain gets `line` (they differ only in a prompt response's id).
    fn agent_writes(&mut self, line: String, direct_line: String) {
        self.direct.apply_agent_line(&direct_line);
        self.chain.run_from_agent(line);
        self.settle();
    }

    fn update(&mut self, update: Value) {
        let line = update_line(SESSION, update);
        self.agent_writes(line.clone(), line);
    }

    fn end_turn(&mut self, reason: &str) {
        if let Some((agent_id, client_id)) = self.prompt.take() {
            let result = json!({"stopReason": reason});
            let line = json!({"jsonrpc": "2.0", "id": agent_id, "result": result}).to_string();
            let direct = json!({"jsonrpc": "2.0", "id": client_id, "result": result}).to_string();
            self.agent_writes(line, direct);
        }
    }

    fn prompt(&mut self, text: &str) {
        self.client_sends("session/prompt", prompt_params(SESSION, text));
    }
}

fn message_id(n: u8) -> Option<String> {
    match n % 5 {
        0 | 1 => None,
        k => Some(format!("m{k}")),
    }
}

fn chunk(kind: &str, id: Option<String>, text: String) -> Value {
    let mut update = json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
    if let Some(id) = id {
        update["messageId"] = json!(id);
    }
    update
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mut world = World::new(policy(&mut input));
    world.client_sends(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    world.client_sends("session/new", json!({"cwd": "/", "mcpServers": []}));
    world.prompt("first");
    let mut ops = 0;
    let mut tool_calls = 0u32;
    while let Some(op) = input.byte() {
        ops += 1;
        if ops > 64 {
            break;
        }
        let arg = input.byte().unwrap_or(0);
        match op % 12 {
            0 => {
                let text = input.text();
                world.update(chunk("agent_message_chunk", message_id(arg), text));
            }
            1 => {
                let text = input.text();
                world.update(chunk("agent_thought_chunk", message_id(arg), text));
            }
            2 => {
                let text = input.text();
                world.update(chunk("user_message_chunk", message_id(arg), text));
            }
            // A well-formed v1 agent creates each tool call once, then patches it.
            3 => {
                let title = input.text();
                world.update(json!({"sessionUpdate": "tool_call",
                    "toolCallId": format!("c{tool_calls}"), "title": title,
                    "kind": "read", "status": TOOL_STATUSES[usize::from(arg) % 4]}));
                tool_calls += 1;
            }
            4 if tool_calls > 0 => world.update(json!({"sessionUpdate": "tool_call_update",
                "toolCallId": format!("c{}", u32::from(arg) % tool_calls),
                "status": TOOL_STATUSES[usize::from(arg / 16) % 4]})),
            4 => {}
            5 => {
                let content = input.text();
                world.update(json!({"sessionUpdate": "plan", "entries": [
                    {"content": content, "priority": "high", "status": "in_progress"},
                    {"content": "then", "priority": "low", "status": "pending"}]}));
            }
            6 => world.update(json!({"sessionUpdate": "usage_update",
                "used": u64::from(arg) * 100, "size": 200_000})),
            7 => world.update(json!({"sessionUpdate": "available_commands_update",
                "availableCommands": [{"name": "help", "description": "Help"},
                    {"name": "run", "description": "Run", "input": {"hint": "what"}}]})),
            8 => world.update(json!({"sessionUpdate": "current_mode_update",
                "currentModeId": if arg & 1 == 0 { "default" } else { "plan" }})),
            9 => {
                let title = input.text();
                world.update(json!({"sessionUpdate": "session_info_update", "title": title}));
            }
            10 => {
                world.end_turn(STOP_REASONS[usize::from(arg) % STOP_REASONS.len()]);
                let text = input.text();
                world.prompt(if text.is_empty() { "next" } else { &text });
            }
            _ => {
                // The transport splits lines: a raw line holds no newline.
                let raw = input.text().replace('\n', " ");
                world.raw_played = true;
                world.agent_writes(raw.clone(), raw);
            }
        }
    }
    world.end_turn("end_turn");
    check_views(
        "bridge_roundtrip",
        "v1 -> v2 -> v1",
        world.chain.lossy,
        world.raw_played,
        &world.direct,
        &world.bridged,
    );
});
