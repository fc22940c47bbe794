//! What both bridge round-trip targets share besides the bridge chain: the fuzz-byte reader, the
//! v1 value sets the generated streams keep to, and the projection of a replay that both client
//! views (through the bridges and direct) must agree on.

use serde_json::{Value, json};
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

/// The parts of a replay both views must agree on.
pub fn projection(engine: &TranscriptEngine) -> Value {
    let replay = engine.replay_json();
    let entries: Vec<Value> = replay["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
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
