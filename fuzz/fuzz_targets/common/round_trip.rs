//! What both bridge round-trip targets share besides the bridge chain: the fuzz-byte reader and
//! the policy it picks, the v1 value sets the generated streams keep to, the lines both scripted
//! peers write, and the check at the end: the projection of a replay that both client views
//! (through the bridges and direct) must agree on.

use serde_json::{Value, json};
use spindle_bridge::Policy;
use spindle_engine::TranscriptEngine;

/// Reads fuzz bytes as small numbers and short strings.
pub struct Input<'a>(pub &'a [u8]);

impl Input<'_> {
    pub fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    pub fn text(&mut self) -> String {
        let len = usize::from(self.byte().unwrap_or(0) % 24);
        let take = len.min(self.0.len());
        let (head, rest) = self.0.split_at(take);
        self.0 = rest;
        String::from_utf8_lossy(head).into_owned()
    }
}

/// The bridges' policy, from the first input byte.
pub fn policy(input: &mut Input<'_>) -> Policy {
    if input.byte().unwrap_or(0) & 1 == 0 {
        Policy::Strict
    } else {
        Policy::Degrade
    }
}

/// A `session/update` line of `session`.
pub fn update_line(session: &str, update: Value) -> String {
    json!({"jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": session, "update": update}})
    .to_string()
}

/// The params of a one-text-block `session/prompt`.
pub fn prompt_params(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

/// Tool-call statuses v1 knows.
pub const TOOL_STATUSES: [&str; 4] = ["pending", "in_progress", "completed", "failed"];
/// Stop reasons v1 knows.
pub const STOP_REASONS: [&str; 5] = [
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];

/// The parts of a replay both views must agree on. A message with no text
/// shows nothing and is left out: an empty chunk opens no message by design
/// (production agents send them), so an empty v2 upsert that a bridge
/// relays as an empty v1 chunk has no entry on the bridged side.
pub fn projection(engine: &TranscriptEngine) -> Value {
    let replay = engine.replay_json();
    let entries: Vec<Value> = replay["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .filter(|e| !(e["text"] == "" && e["toolCall"].is_null()))
                .map(|e| {
                    json!({
                        "kind": e["kind"],
                        "turn": e["turn"],
                        "text": e["text"],
                        "toolCallId": e["toolCall"]["toolCallId"],
                        "status": e["toolCall"]["status"],
                        "title": e["toolCall"]["title"],
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "entries": entries,
        "state": replay["state"],
        "usage": replay["usage"],
        "finalReply": replay["finalReply"],
        "turns": replay["turns"],
    })
}

/// The end of a run of `target`: reports what kind of run it was when `BRIDGE_ROUNDTRIP_STATS`
/// is set and, unless a bridge was lossy or a raw line was played, asserts that the `route` (e.g.
/// `v1 -> v2 -> v1`) left the client's transcript as it was without the bridges.
pub fn check_views(
    target: &str,
    route: &str,
    lossy: bool,
    raw_played: bool,
    direct: &TranscriptEngine,
    bridged: &TranscriptEngine,
) {
    if std::env::var_os("BRIDGE_ROUNDTRIP_STATS").is_some() {
        let kind = if raw_played {
            "raw"
        } else if lossy {
            "lossy"
        } else {
            "compared"
        };
        eprintln!("{target}: {kind}");
    }
    if !lossy && !raw_played {
        let direct = projection(direct);
        let bridged = projection(bridged);
        assert_eq!(
            direct, bridged,
            "{route} changed the client's transcript\ndirect:  {direct}\nbridged: {bridged}"
        );
    }
}
