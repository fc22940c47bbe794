//! Tool calls: `tool_call` (v1 create), `tool_call_update` (v1 patch, v2
//! upsert) and `tool_call_content_chunk`; the display data agents put in a
//! tool call's `_meta` (tool name, display-only terminal) is read here.

use serde_json::{Map, Value};
use spindle_wire::host::TERMINAL_CONTENT_TYPE;
use spindle_wire::meta::{
    CLAUDE_CODE_META_KEY, META_KEY, TERMINAL_EXIT_META_KEY, TERMINAL_INFO_META_KEY,
    TERMINAL_OUTPUT_META_KEY, TOOL_NAME_META_KEY,
};

use crate::canonical::{ScannedUpdate, plain_string};
use crate::compact::{Canonical, CompactObject, MemberChange};
use crate::core::TranscriptEngine;
use crate::ids::Domain;
use crate::model::{EntryBody, EntryKind, ToolCall, ToolTerminal};
use crate::ops::RenderOp;

/// What one tool-call update says for display besides its wire fields.
#[derive(Default)]
struct DisplayExtras {
    /// `Some(None)`: v2 `name: null` clears the name.
    tool_name: Option<Option<String>>,
    terminal_info: Option<Map<String, Value>>,
    terminal_output: Option<String>,
    terminal_exit: Option<Map<String, Value>>,
    /// A `terminal_*` member had the wrong shape (named for the diagnostic).
    malformed: Vec<&'static str>,
}

impl DisplayExtras {
    /// Reads the tool name and lifts `_meta.terminal_*` out of `u` (they are
    /// kept in the tool call's terminal, not in its `_meta`; a `_meta` left
    /// empty by that is dropped, so an output-only update does not wipe the
    /// stored `_meta`). Other `_meta` members stay verbatim.
    fn take(u: &mut Map<String, Value>) -> DisplayExtras {
        let mut extras = DisplayExtras::default();
        match u.get("name") {
            Some(Value::String(name)) => extras.tool_name = Some(Some(name.clone())),
            Some(Value::Null) => extras.tool_name = Some(None),
            _ => {}
        }
        let Some(Value::Object(meta)) = u.get_mut(META_KEY) else {
            return extras;
        };
        if extras.tool_name.is_none() {
            let named = meta
                .get(CLAUDE_CODE_META_KEY)
                .and_then(|c| c.get(TOOL_NAME_META_KEY))
                .or_else(|| meta.get(TOOL_NAME_META_KEY))
                .and_then(Value::as_str);
            extras.tool_name = named.map(|n| Some(n.to_owned()));
        }
        let mut lifted = false;
        if let Some(info) = meta.shift_remove(TERMINAL_INFO_META_KEY) {
            lifted = true;
            match info {
                Value::Object(info) => extras.terminal_info = Some(camel_keys(info)),
                _ => extras.malformed.push(TERMINAL_INFO_META_KEY),
            }
        }
        if let Some(output) = meta.shift_remove(TERMINAL_OUTPUT_META_KEY) {
            lifted = true;
            match output.get("data") {
                Some(Value::String(data)) => extras.terminal_output = Some(data.clone()),
                _ => extras.malformed.push(TERMINAL_OUTPUT_META_KEY),
            }
        }
        if let Some(exit) = meta.shift_remove(TERMINAL_EXIT_META_KEY) {
            lifted = true;
            match exit {
                Value::Object(exit) => extras.terminal_exit = Some(camel_keys(exit)),
                _ => extras.malformed.push(TERMINAL_EXIT_META_KEY),
            }
        }
        if lifted && meta.is_empty() {
            u.shift_remove(META_KEY);
        }
        extras
    }

    /// Applies the extras to `tc`: whether a non-text part of the view
    /// changed, and the output text appended.
    fn apply(self, tc: &mut ToolCall) -> (bool, Option<String>) {
        let mut changed = false;
        if let Some(name) = self.tool_name {
            let name = name.map(String::into_boxed_str);
            changed |= tc.tool_name != name;
            tc.tool_name = name;
        }
        let touches_terminal = self.terminal_info.is_some()
            || self.terminal_output.is_some()
            || self.terminal_exit.is_some();
        if !touches_terminal {
            return (changed, None);
        }
        let terminal = tc
            .terminal
            .get_or_insert_with(|| Box::new(ToolTerminal::default()));
        if terminal.fields.is_empty() && terminal.output.is_empty() {
            changed = true;
        }
        for (key, value) in self.terminal_info.into_iter().flatten() {
            if terminal.fields.get(&key) != Some(&value) {
                terminal.fields.insert(key, value);
                changed = true;
            }
        }
        if let Some(mut exit) = self.terminal_exit {
            if let Some(id) = exit.shift_remove("terminalId")
                && !terminal.fields.contains_key("terminalId")
            {
                terminal.fields.insert("terminalId".into(), id);
            }
            terminal
                .fields
                .insert("exitStatus".into(), Value::Object(exit));
            changed = true;
        }
        if let Some(output) = &self.terminal_output {
            terminal.output.push_str(output);
        }
        (changed, self.terminal_output)
    }
}

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
        let touches_content = u.contains_key("content");
        let extras = DisplayExtras::take(&mut u);
        for key in &extras.malformed {
            self.diag(
                "malformed_field",
                format!("{tag}: _meta.{key} has the wrong shape and was ignored"),
            );
        }
        self.set_open(None);
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
            let idx = self.new_tool_entry(&id, CompactObject::from_map(&u));
            if let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body {
                extras.apply(tc);
            }
            if touches_content {
                self.link_client_terminals(idx);
            }
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
        }
        let (extras_changed, appended) = extras.apply(tc);
        let linked = touches_content && self.link_client_terminals(idx);
        if !changes.is_empty() || extras_changed || linked {
            // The whole view, the terminal output included.
            self.emit_update(idx);
        } else if let Some(text) = appended.filter(|t| !t.is_empty())
            && self.ops_on
        {
            let id = self.t.entries[idx].id.clone();
            self.emit(RenderOp::AppendText { id, text });
        }
        Some(idx)
    }

    /// [`Self::tool_upsert`] of an update the canonical scanner read, for the
    /// shape agents send most: a plain `toolCallId`, no `null` member, no
    /// empty `content` or `locations`, no `name` or `_meta` (display extras),
    /// fields of the right types. Its members' texts are stored and patched
    /// as they came (they are what serde would write), with the same result
    /// as the `Value` path. `false`, with nothing changed, for any other
    /// shape: the caller then takes the `Value` path.
    pub(crate) fn tool_upsert_scanned(&mut self, u: &ScannedUpdate<'_>) -> bool {
        let Some(id) = u.get("toolCallId").and_then(plain_string) else {
            return false;
        };
        let plain = u.members.iter().all(|&(key, raw)| match key {
            "sessionUpdate" | "toolCallId" => true,
            "name" | META_KEY => false,
            "title" | "kind" | "status" => raw.starts_with('"'),
            "content" | "locations" => raw.starts_with('[') && raw != "[]",
            _ => raw != "null",
        });
        if !plain {
            return false;
        }
        if !self.note_session(u.session_id) {
            return true;
        }
        self.set_open(None);
        let touches_content = u.get("content").is_some();
        let fields = u
            .members
            .iter()
            .copied()
            .filter(|(k, _)| *k != "sessionUpdate");
        let Some(idx) = self.keys.get(Domain::Tool, id) else {
            let defaults = [("kind", "\"other\""), ("status", "\"pending\"")]
                .into_iter()
                .filter(|(key, _)| u.get(key).is_none());
            let fields = CompactObject::from_canonical_members(fields.chain(defaults));
            let idx = self.new_tool_entry(id, fields);
            if touches_content {
                self.link_client_terminals(idx);
            }
            self.emit_insert(idx);
            return true;
        };
        let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body else {
            return true;
        };
        let changes: Vec<(&str, Option<Canonical<'_>>)> = fields
            .filter(|(k, _)| *k != "toolCallId")
            .map(|(k, raw)| (k, Some(Canonical(raw))))
            .collect();
        if !changes.is_empty() {
            tc.patch(&changes);
        }
        let linked = touches_content && self.link_client_terminals(idx);
        if !changes.is_empty() || linked {
            self.emit_update(idx);
        }
        true
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
        (
            self.new_tool_entry(id, CompactObject::from_map(&fields)),
            true,
        )
    }

    fn new_tool_entry(&mut self, id: &str, fields: CompactObject) -> usize {
        let turn = self.output_turn();
        let body = EntryBody::ToolCall(Box::new(ToolCall::from_fields(fields)));
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
        self.set_open(None);
        let (idx, is_new) = self.tool_entry(&id.clone());
        let embeds_terminal =
            item.get("type").and_then(Value::as_str) == Some(TERMINAL_CONTENT_TYPE);
        if let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body {
            tc.push_content(item);
        }
        if embeds_terminal {
            self.link_client_terminals(idx);
        }
        if is_new {
            self.emit_insert(idx);
        } else {
            self.emit_update(idx);
        }
    }
}

/// `terminal_id` -> `terminalId`, `exit_code` -> `exitCode`: the spelling of
/// v2 terminals, so one view shape serves both.
fn camel_keys(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .map(|(key, value)| {
            let mut camel = String::with_capacity(key.len());
            let mut upper = false;
            for c in key.chars() {
                if c == '_' && !camel.is_empty() {
                    upper = true;
                } else if upper {
                    camel.extend(c.to_uppercase());
                    upper = false;
                } else {
                    camel.push(c);
                }
            }
            (camel, value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::{EngineConfig, EntryBody, RenderOp, TerminalExit, TranscriptEngine};

    fn update(u: Value) -> String {
        json!({"sessionId": "s", "update": u}).to_string()
    }

    fn tool(e: &TranscriptEngine) -> &crate::ToolCall {
        match &e.transcript().entries.last().unwrap().body {
            EntryBody::ToolCall(tc) => tc,
            other => panic!("not a tool call: {other:?}"),
        }
    }

    #[test]
    fn meta_terminal_output_appends_in_order_and_survives_meta_replacement() {
        let mut e = TranscriptEngine::new(EngineConfig::default());
        e.apply_session_update(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "t1",
            "title": "ls", "kind": "execute",
            "_meta": {"claudeCode": {"toolName": "Bash"}, "terminal_info": {"terminal_id": "t1", "cwd": "/w"}}})));
        assert_eq!(tool(&e).tool_name(), Some("Bash"));
        assert_eq!(tool(&e).terminal_output(), Some(""));
        let applied = e.apply_session_update(&update(json!({"sessionUpdate": "tool_call_update",
            "toolCallId": "t1", "_meta": {"terminal_output": {"terminal_id": "t1", "data": "a\n"}}})));
        // Output only: one append, no whole-entry update, and the stored _meta is untouched.
        assert_eq!(
            applied.ops,
            [RenderOp::AppendText {
                id: "t1".into(),
                text: "a\n".into()
            }]
        );
        assert_eq!(
            tool(&e).field("_meta"),
            Some(json!({"claudeCode": {"toolName": "Bash"}}))
        );
        // A later update replacing _meta (without the tool name) and patching other fields.
        e.apply_session_update(&update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
            "status": "in_progress", "_meta": {"other": 1, "terminal_output": {"terminal_id": "t1", "data": "b\x1b[31m\n"}}})));
        let applied = e.apply_session_update(&update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
            "status": "completed", "_meta": {"terminal_exit": {"terminal_id": "t1", "exit_code": 2, "signal": null}}})));
        let tc = tool(&e);
        assert_eq!(tc.terminal_output(), Some("a\nb\x1b[31m\n"));
        assert_eq!(
            tc.tool_name(),
            Some("Bash"),
            "sticks when _meta no longer names it"
        );
        assert_eq!(
            tc.field("_meta"),
            Some(json!({"other": 1})),
            "unknown _meta kept verbatim"
        );
        assert_eq!(
            tc.terminal_exit(),
            Some(TerminalExit {
                exit_code: Some(2),
                signal: None
            })
        );
        assert_eq!(tc.terminal().unwrap().fields["cwd"], "/w");
        let RenderOp::UpdateEntry { entry, .. } = &applied.ops[0] else {
            panic!("{applied:?}")
        };
        assert_eq!(entry.text, "a\nb\x1b[31m\n");
        assert_eq!(entry.fields["terminal"]["exitStatus"]["exitCode"], 2);
        assert_eq!(entry.fields["toolName"], "Bash");
        let replay = e.transcript().entries[0].replay_json();
        assert_eq!(replay["text"], "a\nb\x1b[31m\n");
        assert!(e.transcript().diagnostics.is_empty());
    }

    #[test]
    fn a_malformed_terminal_member_is_ignored_with_a_diagnostic_and_qwen_names_tools() {
        let mut e = TranscriptEngine::new(EngineConfig::default());
        let applied = e.apply_session_update(&update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "q",
            "title": "Write", "_meta": {"toolName": "write_file", "terminal_output": "oops"}}),
        ));
        assert_eq!(applied.diagnostics[0].code, "malformed_field");
        assert_eq!(tool(&e).tool_name(), Some("write_file"));
        assert_eq!(
            tool(&e).field("_meta"),
            Some(json!({"toolName": "write_file"}))
        );
    }

    #[test]
    fn diffs_follow_content_changes() {
        let mut e = TranscriptEngine::new(EngineConfig::default());
        e.apply_session_update(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "d",
            "title": "Edit", "content": [{"type": "diff", "path": "/w/a", "oldText": "x\n", "newText": "y\n"}]})));
        assert_eq!(tool(&e).diffs().len(), 1);
        e.apply_session_update(&update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "d",
            "content": [{"type": "diff", "path": "/w/a", "oldText": "x\n", "newText": "y\n"},
                        {"type": "diff", "path": "/w/b", "newText": "new\n"}]}),
        ));
        let diffs = tool(&e).diffs();
        assert_eq!(diffs.len(), 2);
        assert_eq!(
            diffs[1].unified(),
            "--- /dev/null\n+++ /w/b\n@@ -0,0 +1,1 @@\n+new\n"
        );
        e.apply_session_update(&update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "d", "content": []}),
        ));
        assert!(tool(&e).diffs().is_empty());
    }
}
