//! Tool calls: `tool_call` (v1 create), `tool_call_update` (v1 patch, v2
//! upsert) and `tool_call_content_chunk`.

use serde_json::{Map, Value};

use crate::compact::MemberChange;
use crate::core::TranscriptEngine;
use crate::ids::Domain;
use crate::model::{EntryBody, EntryKind, ToolCall};

impl TranscriptEngine {
    /// `tool_call` (v1 create) and `tool_call_update` (v1 patch / v2 upsert).
    /// v1: `null` = unchanged. v2: `null` clears (`kind` -> `other`, `status` ->
    /// `pending`); `content`/`locations` `[]` clear too.
    pub(crate) fn tool_upsert(&mut self, tag: &str, mut u: Map<String, Value>) -> Option<usize> {
        let Some(Value::String(id)) = u.get("toolCallId") else {
            self.diag(
                "malformed_update",
                format!("{tag}: toolCallId must be a string"),
            );
            return None;
        };
        let id = id.clone();
        let typed_ok =
            |key: &str, ok: fn(&Value) -> bool| u.get(key).is_none_or(|v| v.is_null() || ok(v));
        for (key, ok) in [
            ("title", typed_ok("title", Value::is_string)),
            ("kind", typed_ok("kind", Value::is_string)),
            ("status", typed_ok("status", Value::is_string)),
            ("content", typed_ok("content", Value::is_array)),
            ("locations", typed_ok("locations", Value::is_array)),
        ] {
            if !ok {
                self.diag(
                    "malformed_update",
                    format!("{tag}: {key} has the wrong type"),
                );
                return None;
            }
        }
        u.shift_remove("sessionUpdate");
        self.open = None;
        let v1 = self.t.protocol == 1;
        let Some(idx) = self.keys.get(Domain::Tool, &id) else {
            // First sighting: the update itself, normalised, becomes the
            // stored fields (wire order kept, no second map built).
            u.retain(|k, v| {
                if v.is_null() {
                    !v1 && (k == "kind" || k == "status")
                } else {
                    !((k == "content" || k == "locations")
                        && v.as_array().is_some_and(Vec::is_empty))
                }
            });
            for (key, default) in [("kind", "other"), ("status", "pending")] {
                match u.get_mut(key) {
                    Some(v) if v.is_null() => *v = Value::from(default),
                    Some(_) => {}
                    None => {
                        u.insert(key.into(), Value::from(default));
                    }
                }
            }
            let idx = self.new_tool_entry(&id, u);
            self.emit_insert(idx);
            return Some(idx);
        };
        u.shift_remove("toolCallId");
        let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body else {
            return None;
        };
        let mut changes: Vec<(String, Option<Value>)> = Vec::with_capacity(u.len());
        for (k, v) in u {
            if v.is_null() {
                if v1 {
                    continue;
                }
                let default = match k.as_str() {
                    "kind" => Some(Value::from("other")),
                    "status" => Some(Value::from("pending")),
                    _ => None,
                };
                changes.push((k, default));
            } else if (k == "content" || k == "locations")
                && v.as_array().is_some_and(Vec::is_empty)
            {
                changes.push((k, None));
            } else {
                changes.push((k, Some(v)));
            }
        }
        if !changes.is_empty() {
            let changes: Vec<MemberChange<'_>> = changes
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_ref()))
                .collect();
            tc.patch(&changes);
            self.emit_update(idx);
        }
        Some(idx)
    }

    /// The tool call with this id, created with defaults on first sighting.
    fn tool_entry(&mut self, id: &str) -> (usize, bool) {
        if let Some(idx) = self.keys.get(Domain::Tool, id) {
            return (idx, false);
        }
        let mut fields = Map::new();
        fields.insert("toolCallId".into(), Value::from(id));
        fields.insert("kind".into(), Value::from("other"));
        fields.insert("status".into(), Value::from("pending"));
        (self.new_tool_entry(id, fields), true)
    }

    fn new_tool_entry(&mut self, id: &str, fields: Map<String, Value>) -> usize {
        let turn = self.output_turn();
        let body = EntryBody::ToolCall(Box::new(ToolCall::new(&fields)));
        let idx = self.push_entry(id, EntryKind::ToolCall, body, turn);
        self.keys.insert(Domain::Tool, id, idx);
        idx
    }

    pub(crate) fn tool_content_chunk(&mut self, u: Map<String, Value>) {
        let (Some(Value::String(id)), Some(item @ Value::Object(_))) =
            (u.get("toolCallId"), u.get("content"))
        else {
            return self.diag(
                "malformed_update",
                "tool_call_content_chunk: toolCallId and one content object required",
            );
        };
        self.open = None;
        let (idx, is_new) = self.tool_entry(&id.clone());
        if let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body {
            tc.push_content(item);
        }
        if is_new {
            self.emit_insert(idx);
        } else {
            self.emit_update(idx);
        }
    }
}
