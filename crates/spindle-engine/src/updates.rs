//! Every other session update: tool calls, plans, terminals, compaction,
//! state, usage, commands, modes, config, session info, notices, unknowns.

use serde_json::{Map, Value};

use crate::compact::MemberChange;
use crate::engine::{Domain, MsgKind, TranscriptEngine};
use crate::messages::{BlockIn, block_in_from_value};
use crate::model::{Boundary, EntryBody, EntryKind, Message, Terminal, ToolCall};
use crate::ops::RenderOp;
use spindle_wire::meta::META_KEY;
use spindle_wire::tags::{COMPACTION_UPDATE, MessageKind, TOOL_CALL, UpdateTag};

/// Updates that exist only in protocol v2 (seeing one infers v2 under `Auto`).
fn is_v2_only(tag: UpdateTag) -> bool {
    matches!(
        tag,
        UpdateTag::UserMessage
            | UpdateTag::AgentMessage
            | UpdateTag::AgentThought
            | UpdateTag::StateUpdate
            | UpdateTag::ToolCallContentChunk
            | UpdateTag::TerminalUpdate
            | UpdateTag::TerminalOutputChunk
            | UpdateTag::PlanUpdate
    )
}

impl TranscriptEngine {
    /// `params` of a `session/update`: `{sessionId, update}`.
    pub(crate) fn update_params(&mut self, params: &mut Map<String, Value>) {
        let session_id = params
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match params.remove("update") {
            Some(update) => self.update_value(session_id.as_deref(), update),
            None => self.diag(
                "malformed_update",
                "session/update params.update must be an object",
            ),
        }
    }

    /// One `update` object (with its `sessionUpdate` tag).
    pub(crate) fn update_value(&mut self, session_id: Option<&str>, update: Value) {
        if !self.note_session(session_id) {
            return;
        }
        let Value::Object(update) = update else {
            return self.diag(
                "malformed_update",
                "session/update params.update must be an object",
            );
        };
        let tag = match update.get("sessionUpdate") {
            Some(Value::String(s)) => s.clone(),
            _ => return self.diag("malformed_update", "update without a sessionUpdate string"),
        };
        self.apply_update_map(&tag, update);
    }

    pub(crate) fn apply_update_map(&mut self, tag: &str, u: Map<String, Value>) {
        let Some(known) = UpdateTag::parse(tag) else {
            return self.unknown_update(u);
        };
        let diagnostics_before = self.out.diagnostics.len();
        self.dispatch_update(known, u);
        // Only a well-formed v2-only update is evidence of v2.
        if is_v2_only(known) && self.out.diagnostics.len() == diagnostics_before {
            self.note_v2();
        }
    }

    fn dispatch_update(&mut self, tag: UpdateTag, u: Map<String, Value>) {
        use UpdateTag as T;
        let name = tag.as_str();
        match tag {
            T::UserMessageChunk | T::AgentMessageChunk | T::AgentThoughtChunk => {
                self.chunk_from_value(name, u)
            }
            T::UserMessage | T::AgentMessage | T::AgentThought => {
                if let Some(kind) = MessageKind::of_upsert(tag) {
                    self.message_upsert(name, MsgKind::from(kind), u);
                }
            }
            T::AgentMessageClear => self.message_clear(name, MsgKind::Agent, &u),
            T::AgentThoughtClear => self.message_clear(name, MsgKind::Thought, &u),
            T::SessionCleared => self.clear_boundary(name),
            T::ToolCall | T::ToolCallUpdate => {
                self.tool_upsert(name, u);
            }
            T::ToolCallContentChunk => self.tool_content_chunk(u),
            T::Plan => self.plan_v1(u),
            T::PlanUpdate => self.plan_update(u),
            T::PlanRemoved => self.plan_removed(u),
            T::TerminalUpdate => self.terminal_update(u),
            T::TerminalOutputChunk => self.terminal_output_chunk(u),
            T::CompactionUpdate => self.compaction_update(u),
            T::CompactionSummaryChunk => self.compaction_summary_chunk(u),
            T::StateUpdate => self.state_update(u),
            T::UsageUpdate => self.usage_update(u),
            T::AvailableCommandsUpdate => match u.get("availableCommands") {
                Some(Value::Array(_)) => {
                    let commands = u.get("availableCommands").cloned().unwrap_or(Value::Null);
                    if self.ops_on {
                        let commands = commands.clone();
                        self.emit(RenderOp::SetCommands { commands });
                    }
                    self.t.commands = Some(commands);
                }
                _ => self.diag(
                    "malformed_update",
                    "available_commands_update: availableCommands must be an array",
                ),
            },
            T::CurrentModeUpdate => match u.get("currentModeId") {
                Some(Value::String(m)) => {
                    self.t.session_info.current_mode_id = Some(m.clone());
                    self.emit_session_info();
                }
                _ => self.diag(
                    "malformed_update",
                    "current_mode_update: currentModeId must be a string",
                ),
            },
            T::ConfigOptionUpdate => match u.get("configOptions") {
                Some(v @ Value::Array(_)) => {
                    self.t.session_info.config_options = Some(v.clone());
                    self.emit_session_info();
                }
                _ => self.diag(
                    "malformed_update",
                    "config_option_update: configOptions must be an array",
                ),
            },
            T::SessionInfoUpdate => self.session_info_update(u),
            T::Notice => self.notice(u),
        }
    }

    fn turn_if_open(&self) -> Option<u32> {
        Some(self.t.state.turns).filter(|_| self.t.state.turn_open)
    }

    /// Unknown and `_`-prefixed updates (and removed/unstable tags the engine
    /// does not model): kept verbatim as an `unknown` entry.
    fn unknown_update(&mut self, u: Map<String, Value>) {
        let id = self.mint_id("x");
        let turn = self.turn_if_open();
        let idx = self.push_entry(
            &id,
            EntryKind::Unknown,
            EntryBody::Raw(Box::new(Value::Object(u))),
            turn,
        );
        self.emit_insert(idx);
    }

    fn notice(&mut self, u: Map<String, Value>) {
        match (u.get("severity"), u.get("title")) {
            (Some(Value::String(severity)), Some(Value::String(title))) => {
                let description = match u.get("description") {
                    Some(Value::String(d)) => Some(d.clone()),
                    _ => None,
                };
                self.emit(RenderOp::Notice {
                    severity: severity.clone(),
                    title: title.clone(),
                    description,
                });
            }
            _ => self.diag(
                "malformed_update",
                "notice: severity and title must be strings",
            ),
        }
    }

    fn usage_update(&mut self, mut u: Map<String, Value>) {
        let numbers = u.get("used").is_some_and(Value::is_number)
            && u.get("size").is_some_and(Value::is_number);
        if !numbers {
            return self.diag(
                "malformed_update",
                "usage_update: used and size must be numbers",
            );
        }
        u.shift_remove("sessionUpdate");
        let usage = Value::Object(u);
        if self.ops_on {
            let usage = usage.clone();
            self.emit(RenderOp::SetUsage { usage });
        }
        self.t.usage = Some(usage);
    }

    fn session_info_update(&mut self, u: Map<String, Value>) {
        for key in ["title", "updatedAt"] {
            match u.get(key) {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(_) => {
                    return self.diag(
                        "malformed_update",
                        format!("session_info_update: {key} must be a string or null"),
                    );
                }
            }
        }
        let info = &mut self.t.session_info;
        let string = |v: &Value| v.as_str().map(str::to_owned);
        if let Some(v) = u.get("title") {
            info.title = string(v);
        }
        if let Some(v) = u.get("updatedAt") {
            info.updated_at = string(v);
        }
        if let Some(v) = u.get(META_KEY) {
            info.meta = (!v.is_null()).then(|| v.clone());
        }
        self.emit_session_info();
    }

    fn state_update(&mut self, u: Map<String, Value>) {
        let Some(Value::String(state)) = u.get("state") else {
            return self.diag("malformed_update", "state_update: state must be a string");
        };
        let state = state.clone();
        if let Some(bg) = u.get("background") {
            self.t.state.background = (!bg.is_null()).then(|| bg.clone());
        }
        match state.as_str() {
            "idle" => {
                // Omitted, null or malformed stopReason: "not reported".
                let stop = u
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let error = u.get("error").filter(|e| !e.is_null()).cloned();
                self.explicit_idle = true;
                if self.t.state.turn_open {
                    self.end_turn(stop, error);
                } else {
                    // A repeated idle snapshot is idempotent: no new completion.
                    let s = &mut self.t.state;
                    let changed = s.status != "idle" || (stop.is_some() && s.stop_reason != stop);
                    s.status = "idle".into();
                    if stop.is_some() {
                        s.stop_reason = stop;
                        s.error = error;
                    }
                    if changed {
                        self.emit_state();
                    }
                }
            }
            "running" => {
                if !self.t.state.turn_open {
                    self.begin_turn();
                } else if self.t.state.status != "running" {
                    self.t.state.status = "running".into();
                    self.emit_state();
                }
            }
            other => {
                // requires_action, or an unknown state: busy, never idle.
                if !self.t.state.turn_open {
                    self.begin_turn();
                }
                self.t.state.status = other.to_owned();
                self.emit_state();
            }
        }
    }

    // ----- tool calls -----------------------------------------------------

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

    fn tool_content_chunk(&mut self, u: Map<String, Value>) {
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

    /// `session/request_permission` from the agent: the tool call subject is
    /// applied like a `tool_call_update`, and the request is recorded on it.
    pub(crate) fn permission_request(&mut self, request_id: String, params: Value) {
        let Value::Object(p) = params else {
            return self.diag(
                "malformed_request",
                "session/request_permission params must be an object",
            );
        };
        let tool = p.get("toolCall").cloned().or_else(|| {
            p.get("subject")
                .filter(|s| s.get("type").and_then(Value::as_str) == Some(TOOL_CALL))
                .and_then(|s| s.get("toolCall"))
                .cloned()
        });
        let mut record = Map::new();
        record.insert(
            "requestId".into(),
            serde_json::from_str(&request_id).unwrap_or(Value::Null),
        );
        for key in ["title", "description", "options"] {
            if let Some(v) = p.get(key) {
                record.insert(key.into(), v.clone());
            }
        }
        record.insert("outcome".into(), Value::Null);
        let idx = match tool {
            Some(Value::Object(tc)) => {
                let Some(idx) = self.tool_upsert("session/request_permission", tc) else {
                    return;
                };
                if let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body {
                    tc.permission = Some(Box::new(Value::Object(record)));
                }
                self.emit_update(idx);
                idx
            }
            _ => {
                let id = format!("permission:{}", self.mint_id("p"));
                let mut raw = p.clone();
                raw.insert("permission".into(), Value::Object(record));
                let turn = self.turn_if_open();
                let idx = self.push_entry(
                    &id,
                    EntryKind::Permission,
                    EntryBody::Raw(Box::new(Value::Object(raw))),
                    turn,
                );
                self.emit_insert(idx);
                idx
            }
        };
        self.permission_requests.insert(request_id, idx);
        if self.t.protocol == 1
            && self.t.state.turn_open
            && self.t.state.status != "requires_action"
        {
            self.t.state.status = "requires_action".into();
            self.emit_state();
        }
    }

    /// The client's answer to a permission request.
    pub(crate) fn permission_response(&mut self, request_id: &str, msg: Map<String, Value>) {
        let Some(idx) = self.permission_requests.remove(request_id) else {
            return;
        };
        let outcome = match (msg.get("result"), msg.get("error")) {
            (Some(r), _) => r.get("outcome").cloned().unwrap_or(Value::Null),
            (None, Some(e)) => serde_json::json!({"outcome": "error", "error": e}),
            (None, None) => Value::Null,
        };
        let record = match &mut self.t.entries[idx].body {
            EntryBody::ToolCall(tc) => tc.permission.as_deref_mut(),
            EntryBody::Raw(raw) => raw.get_mut("permission"),
            _ => None,
        };
        if let Some(Value::Object(record)) = record {
            record.insert("outcome".into(), outcome);
        }
        self.emit_update(idx);
        if self.t.protocol == 1
            && self.t.state.turn_open
            && self.t.state.status == "requires_action"
            && self.permission_requests.is_empty()
        {
            self.t.state.status = "running".into();
            self.emit_state();
        }
    }

    // ----- plans ----------------------------------------------------------

    fn plan_entry(&mut self, plan_id: &str, plan: Value) {
        if let Some(idx) = self.keys.get(Domain::Plan, plan_id) {
            if let EntryBody::Plan { plan: p, removed } = &mut self.t.entries[idx].body {
                **p = plan;
                *removed = false;
            }
            self.emit_update(idx);
        } else {
            let turn = self.output_turn();
            let id = format!("plan:{plan_id}");
            let idx = self.push_entry(
                &id,
                EntryKind::Plan,
                EntryBody::Plan {
                    plan: Box::new(plan),
                    removed: false,
                },
                turn,
            );
            self.keys.insert(Domain::Plan, plan_id, idx);
            self.emit_insert(idx);
        }
    }

    fn plan_v1(&mut self, mut u: Map<String, Value>) {
        if !u.get("entries").is_some_and(Value::is_array) {
            return self.diag("malformed_update", "plan: entries must be an array");
        }
        u.shift_remove("sessionUpdate");
        self.plan_entry("main", Value::Object(u));
    }

    fn plan_update(&mut self, u: Map<String, Value>) {
        let plan_id = u
            .get("plan")
            .and_then(|p| p.get("planId"))
            .and_then(Value::as_str);
        match (plan_id, u.get("plan")) {
            (Some(id), Some(plan @ Value::Object(_))) => {
                let id = id.to_owned();
                self.plan_entry(&id, plan.clone());
            }
            _ => self.diag(
                "malformed_update",
                "plan_update: plan object with a planId string required",
            ),
        }
    }

    fn plan_removed(&mut self, u: Map<String, Value>) {
        let Some(Value::String(id)) = u.get("planId") else {
            return self.diag("malformed_update", "plan_removed: planId must be a string");
        };
        if let Some(idx) = self.keys.get(Domain::Plan, id) {
            if let EntryBody::Plan { removed, .. } = &mut self.t.entries[idx].body {
                *removed = true;
            }
            self.emit_update(idx);
        }
    }

    // ----- terminals ------------------------------------------------------

    fn terminal_entry(&mut self, id: &str) -> (usize, bool) {
        if let Some(idx) = self.keys.get(Domain::Terminal, id) {
            return (idx, false);
        }
        let mut fields = Map::new();
        fields.insert("terminalId".into(), Value::from(id));
        let turn = self.output_turn();
        let body = EntryBody::Terminal(Box::new(Terminal {
            fields,
            ..Terminal::default()
        }));
        let idx = self.push_entry(id, EntryKind::Terminal, body, turn);
        self.keys.insert(Domain::Terminal, id, idx);
        (idx, true)
    }

    fn terminal_update(&mut self, mut u: Map<String, Value>) {
        let Some(Value::String(id)) = u.shift_remove("terminalId") else {
            return self.diag(
                "malformed_update",
                "terminal_update: terminalId must be a string",
            );
        };
        let output = match u.shift_remove("output") {
            None => None,
            Some(Value::Null) => Some(Vec::new()),
            Some(o) => match o
                .get("data")
                .and_then(Value::as_str)
                .map(crate::base64::decode)
            {
                Some(Some(bytes)) => Some(bytes),
                _ => {
                    return self.diag(
                        "malformed_update",
                        "terminal_update: output.data must be base64",
                    );
                }
            },
        };
        u.shift_remove("sessionUpdate");
        self.open = None;
        let (idx, is_new) = self.terminal_entry(&id);
        if let EntryBody::Terminal(term) = &mut self.t.entries[idx].body {
            for (k, v) in u {
                if v.is_null() {
                    term.fields.shift_remove(&k);
                } else {
                    term.fields.insert(k, v);
                }
            }
        }
        if let Some(bytes) = output {
            self.terminal_replace(idx, bytes, !is_new);
        }
        if is_new {
            self.emit_insert(idx);
        } else {
            self.emit_update(idx);
        }
    }

    fn terminal_output_chunk(&mut self, u: Map<String, Value>) {
        let (Some(Value::String(id)), Some(data)) =
            (u.get("terminalId"), u.get("data").and_then(Value::as_str))
        else {
            return self.diag(
                "malformed_update",
                "terminal_output_chunk: terminalId and data strings required",
            );
        };
        let Some(bytes) = crate::base64::decode(data) else {
            return self.diag(
                "malformed_update",
                "terminal_output_chunk: data must be base64",
            );
        };
        let id = id.clone();
        self.open = None;
        let (idx, is_new) = self.terminal_entry(&id);
        let entry = &mut self.t.entries[idx];
        if let EntryBody::Terminal(term) = &mut entry.body {
            term.output.extend_from_slice(&bytes);
            let before = term.text.len();
            decode_utf8_into(&term.output, &mut term.decoded, &mut term.text);
            if !is_new && self.ops_on && term.text.len() > before {
                let text = term.text[before..].to_owned();
                self.out.ops.push(RenderOp::AppendText {
                    id: entry.id.clone(),
                    text,
                });
            }
        }
        if is_new {
            self.emit_insert(idx);
        }
    }

    fn terminal_replace(&mut self, idx: usize, bytes: Vec<u8>, emit: bool) {
        let emit = emit && self.ops_on;
        let entry = &mut self.t.entries[idx];
        let EntryBody::Terminal(term) = &mut entry.body else {
            return;
        };
        let mut decoded = 0;
        let mut text = String::new();
        decode_utf8_into(&bytes, &mut decoded, &mut text);
        let keep = crate::text::common_prefix_len(&term.text, &text);
        if emit && keep < term.text.len() {
            self.out.ops.push(RenderOp::TruncateText {
                id: entry.id.clone(),
                len: crate::text::utf16_len(&term.text[..keep]),
            });
        }
        if emit && keep < text.len() {
            self.out.ops.push(RenderOp::AppendText {
                id: entry.id.clone(),
                text: text[keep..].to_owned(),
            });
        }
        term.text = text;
        term.decoded = decoded;
        term.output = bytes;
    }

    // ----- compaction -----------------------------------------------------

    fn compaction_entry(&mut self, id: &str, status: &str) -> (usize, bool) {
        if let Some(idx) = self.keys.get(Domain::Compaction, id) {
            return (idx, false);
        }
        self.open = None;
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

    fn compaction_update(&mut self, mut u: Map<String, Value>) {
        let (Some(Value::String(id)), Some(Value::String(status))) =
            (u.remove("compactionId"), u.remove("status"))
        else {
            return self.diag(
                "malformed_update",
                "compaction_update: compactionId and status strings required",
            );
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
        let (idx, is_new) = self.compaction_entry(&id, &status);
        if let EntryBody::Boundary(b) = &mut self.t.entries[idx].body {
            b.fields.insert("status".into(), Value::from(status));
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

    fn compaction_summary_chunk(&mut self, mut u: Map<String, Value>) {
        let (Some(Value::String(id)), Some(content @ Value::Object(_))) =
            (u.remove("compactionId"), u.remove("content"))
        else {
            return self.diag(
                "malformed_update",
                "compaction_summary_chunk: compactionId and one content object required",
            );
        };
        let (idx, is_new) = self.compaction_entry(&id, "in_progress");
        self.append_summary(idx, block_in_from_value(content), !is_new);
        if is_new {
            self.emit_insert(idx);
        }
    }

    fn append_summary(&mut self, idx: usize, block: BlockIn<'_>, emit: bool) {
        let emit = emit && self.ops_on;
        let entry = &mut self.t.entries[idx];
        let EntryBody::Boundary(b) = &mut entry.body else {
            return;
        };
        let msg = &mut b.summary;
        match block {
            BlockIn::Text(text, extra, hidden) => {
                msg.push_text_block(&text, extra, hidden);
                if emit && !text.is_empty() {
                    self.out.ops.push(RenderOp::AppendText {
                        id: entry.id.clone(),
                        text: text.into_owned(),
                    });
                }
            }
            BlockIn::Other(v) => {
                msg.blocks.push(crate::model::Block::Other(Box::new(v)));
                if emit {
                    self.emit_update(idx);
                }
            }
        }
    }
}

/// Decodes `bytes[*decoded..]` into `text`, replacing invalid sequences with
/// U+FFFD and leaving an incomplete trailing sequence for the next chunk.
pub(crate) fn decode_utf8_into(bytes: &[u8], decoded: &mut usize, text: &mut String) {
    let mut rest = &bytes[*decoded..];
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                text.push_str(s);
                *decoded = bytes.len();
                return;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                // The prefix is valid UTF-8 by construction.
                text.push_str(&String::from_utf8_lossy(&rest[..valid]));
                match e.error_len() {
                    None => {
                        *decoded = bytes.len() - (rest.len() - valid);
                        return;
                    }
                    Some(n) => {
                        text.push('\u{FFFD}');
                        rest = &rest[valid + n..];
                    }
                }
            }
        }
    }
}
