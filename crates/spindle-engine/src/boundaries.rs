//! Boundaries in the timeline, both kinds: clear boundaries (the
//! `session_cleared` extension and `_meta.claudeCode.clearBoundary` on a
//! chunk) and compaction boundaries (`compaction_update`,
//! `compaction_summary_chunk`, whose summary is kept like message content).

use serde_json::{Map, Value};

use crate::content::{BlockIn, block_in_from_value};
use crate::core::TranscriptEngine;
use crate::ids::Domain;
use crate::model::{Boundary, EntryBody, EntryKind, Message};
use spindle_wire::meta::META_KEY;
use spindle_wire::tags::COMPACTION_UPDATE;

/// The status a compaction starts with, and the one `status: null` resets to.
const IN_PROGRESS: &str = "in_progress";

impl TranscriptEngine {
    /// A clear boundary entry (docs/src/extensions.md), from `session_cleared` or a chunk's
    /// `_meta.claudeCode.clearBoundary: true`. Both signals for one clear (with
    /// nothing in between) give one boundary.
    pub(crate) fn clear_boundary(&mut self, source: &'static str) {
        if let Some(last) = self.t.entries.last()
            && let EntryBody::Boundary(b) = &last.body
            && b.reason == "clear"
        {
            return;
        }
        self.set_open(None);
        let id = self.mint_id("clear");
        let turn = Some(self.t.state.turns).filter(|_| self.t.state.turn_open);
        let body = EntryBody::Boundary(Box::new(Boundary {
            reason: "clear",
            source,
            fields: Map::new(),
            summary: Message::default(),
        }));
        let idx = self.push_entry(&id, EntryKind::Boundary, body, turn);
        self.emit_insert(idx);
    }

    fn compaction_entry(&mut self, id: &str, status: &str) -> (usize, bool) {
        if let Some(idx) = self.keys.get(Domain::Compaction, id) {
            return (idx, false);
        }
        self.set_open(None);
        let mut fields = Map::new();
        fields.insert("compactionId".into(), Value::from(id));
        fields.insert("status".into(), Value::from(status));
        let turn = self.turn_if_open();
        let body = EntryBody::Boundary(Box::new(Boundary {
            reason: "compaction",
            source: COMPACTION_UPDATE,
            fields,
            summary: Message::default(),
        }));
        let idx = self.push_entry(id, EntryKind::Boundary, body, turn);
        self.keys.insert(Domain::Compaction, id, idx);
        (idx, true)
    }

    pub(crate) fn compaction_update(&mut self, mut u: Map<String, Value>) {
        let Some(Value::String(id)) = u.remove("compactionId") else {
            return self.diag(
                "malformed_update",
                "compaction_update: a compactionId string is required",
            );
        };
        // Since schema 1.20 (v2) `status` is a patch field: omitted keeps it
        // (a new compaction starts `in_progress`), `null` resets it to
        // `in_progress`. Accepted the same way from v1 agents.
        let status = match u.remove("status") {
            None => None,
            Some(Value::Null) => Some(IN_PROGRESS.to_owned()),
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.diag(
                    "malformed_field",
                    format!(
                        "compaction_update: status must be a string or null, got {other}; ignored"
                    ),
                );
                None
            }
        };
        let summary = match u.remove("summary") {
            None => None,
            Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(a)) => Some(a),
            Some(_) => {
                return self.diag(
                    "malformed_update",
                    "compaction_update: summary must be an array or null",
                );
            }
        };
        let (idx, is_new) = self.compaction_entry(&id, status.as_deref().unwrap_or(IN_PROGRESS));
        if let EntryBody::Boundary(b) = &mut self.t.entries[idx].body {
            if let Some(status) = status {
                b.fields.insert("status".into(), Value::from(status));
            }
            for key in ["error", META_KEY] {
                match u.remove(key) {
                    None => {}
                    Some(Value::Null) => {
                        b.fields.shift_remove(key);
                    }
                    Some(v) => {
                        b.fields.insert(key.into(), v);
                    }
                }
            }
        }
        if let Some(blocks) = summary {
            let blocks: Vec<BlockIn<'_>> = blocks.into_iter().map(block_in_from_value).collect();
            self.set_content(idx, blocks, !is_new);
        }
        if is_new {
            self.emit_insert(idx);
        } else {
            self.emit_update(idx);
        }
    }

    pub(crate) fn compaction_summary_chunk(&mut self, mut u: Map<String, Value>) {
        let (Some(Value::String(id)), Some(content @ Value::Object(_))) =
            (u.remove("compactionId"), u.remove("content"))
        else {
            return self.diag(
                "malformed_update",
                "compaction_summary_chunk: compactionId and one content object required",
            );
        };
        let (idx, is_new) = self.compaction_entry(&id, "in_progress");
        self.append_block(idx, block_in_from_value(content), !is_new);
        if is_new {
            self.emit_insert(idx);
        }
    }
}
