//! Tool calls, plans and permissions, v1 client in front of a v2 agent
//! (BRIDGE.md "Tool calls, plans, commands, permissions, usage"): tool-call
//! upserts become `tool_call` + `tool_call_update` with accumulated content,
//! v2 plans collapse into the one v1 plan, permission subjects become a
//! `toolCall`.

use serde_json::{Map, Value, json};
use spindle_wire::client_methods::SESSION_REQUEST_PERMISSION;
use spindle_wire::meta::{META_KEY, SPINDLE_META_KEY};
use spindle_wire::tags;

use super::diffs::{self, DiffPart};
use crate::state::Bridge;
use crate::types::{Policy, Severity, TOOL_CALL_SUBJECT, Translated, owned_str, session_of};
use crate::wire::{self, Frame};

const V1_TOOL_STATUS: [&str; 4] = ["pending", "in_progress", "completed", "failed"];
const V1_PERMISSION_KINDS: [&str; 4] =
    ["allow_once", "allow_always", "reject_once", "reject_always"];
const V1_TOOL_KINDS: [&str; 10] = [
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];

impl Bridge {
    pub(crate) fn down_permission(&mut self, id: &str, frame: &Frame<'_>, out: &mut Translated) {
        let mut params = wire::object_of(frame.params).unwrap_or_default();
        let session = session_of(&params);
        let title = params
            .remove("title")
            .and_then(|t| t.as_str().map(str::to_owned))
            .unwrap_or_default();
        let description = params.remove("description");
        let subject = params.remove("subject").unwrap_or(Value::Null);
        let tool = match subject.get("type").and_then(Value::as_str) {
            Some(TOOL_CALL_SUBJECT) => match subject.get("toolCall") {
                Some(Value::Object(t)) => {
                    let mut t = t.clone();
                    self.down_tool_fields(&session, &mut t, true, out);
                    if !t.contains_key("title") && !title.is_empty() {
                        t.insert("title".into(), title.clone().into());
                    }
                    Some(t)
                }
                _ => None,
            },
            _ => None,
        };
        let tool = match tool {
            Some(t) => t,
            None => {
                let kind = subject
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("none")
                    .to_owned();
                self.down_unrepresentable(
                    &session,
                    "permission_subject",
                    format!("permission request {title:?} with subject {kind}"),
                    out,
                );
                if self.config.policy == Policy::Strict {
                    out.to_agent.push(wire::error_response(
                        id,
                        -32603,
                        "the v1 client cannot show this permission request (no tool-call subject)",
                        None,
                    ));
                    return;
                }
                self.down.next_id += 1;
                let mut t = Map::new();
                t.insert(
                    "toolCallId".into(),
                    format!("spindle-permission-{}", self.down.next_id).into(),
                );
                t.insert("title".into(), title.clone().into());
                if kind == "command" {
                    t.insert("kind".into(), "execute".into());
                    t.insert(
                        "rawInput".into(),
                        json!({"command": subject.get("command"), "cwd": subject.get("cwd")}),
                    );
                }
                if let Some(d) = description.filter(Value::is_string) {
                    t.insert(
                        "content".into(),
                        json!([{"type": "content", "content": {"type": "text", "text": d}}]),
                    );
                }
                t
            }
        };
        params.insert("toolCall".into(), Value::Object(tool));
        if let Some(Value::Array(options)) = params.get_mut("options") {
            let options = std::mem::take(options);
            let kept = self.down_permission_options(&session, options, out);
            if kept.is_empty() {
                out.to_agent.push(wire::error_response(
                    id,
                    -32603,
                    "the v1 client cannot show any option of this permission request",
                    None,
                ));
                return;
            }
            params.insert("options".into(), Value::Array(kept));
        }
        out.to_client.push(wire::request(
            id,
            SESSION_REQUEST_PERMISSION,
            Value::Object(params),
        ));
    }

    /// Permission options whose `kind` v1 lacks (v2 kinds are open): strict
    /// leaves the option out; degrade keeps it as `allow_once` (a kind
    /// starting `allow`) or `reject_once`, the original under
    /// `_meta.spindle.kind`. The option id the client answers with is the
    /// agent's own.
    fn down_permission_options(
        &mut self,
        session: &str,
        options: Vec<Value>,
        out: &mut Translated,
    ) -> Vec<Value> {
        let mut kept = Vec::with_capacity(options.len());
        for mut option in options {
            let kind = owned_str(option.get("kind"));
            if V1_PERMISSION_KINDS.contains(&kind.as_str()) || !option.is_object() {
                kept.push(option);
                continue;
            }
            let option_id = owned_str(option.get("optionId"));
            self.down_unrepresentable(
                session,
                "permission_option_kind",
                format!("permission option {option_id} of kind {kind:?}"),
                out,
            );
            if self.config.policy == Policy::Strict {
                continue;
            }
            let v1 = if kind.starts_with("allow") || kind.starts_with("_allow") {
                "allow_once"
            } else {
                "reject_once"
            };
            option["kind"] = v1.into();
            if !option.get(META_KEY).is_some_and(Value::is_object) {
                option[META_KEY] = json!({});
            }
            if !option[META_KEY]
                .get(SPINDLE_META_KEY)
                .is_some_and(Value::is_object)
            {
                option[META_KEY][SPINDLE_META_KEY] = json!({});
            }
            option[META_KEY][SPINDLE_META_KEY]["kind"] = kind.into();
            kept.push(option);
        }
        kept
    }

    /// One v2 tool-call content item as v1 items: none when rejected or
    /// dropped, several when a v2 diff holds several hunks or files.
    pub(crate) fn down_tool_item(
        &mut self,
        session: &str,
        item: Value,
        out: &mut Translated,
    ) -> Vec<Value> {
        let ty = owned_str(item.get("type"));
        match ty.as_str() {
            "content" => {
                let block = item.get("content").cloned().unwrap_or(Value::Null);
                let Some(block) = self.down_block(session, block, out) else {
                    return Vec::new();
                };
                let mut item = item;
                item["content"] = block;
                vec![item]
            }
            "diff" => self.down_diff(session, item, out),
            "terminal" => {
                let id = item["terminalId"].as_str().unwrap_or("").to_owned();
                self.down_unrepresentable(
                    session,
                    "v2_terminal",
                    format!("v2 terminal {id} (agent-owned; never mapped onto a v1 terminal)"),
                    out,
                );
                if self.config.policy == Policy::Strict {
                    return Vec::new();
                }
                vec![
                    json!({"type": "content", "content": {"type": "text", "text": format!("[terminal {id}]")}}),
                ]
            }
            other => {
                let other = other.to_owned();
                self.down_unrepresentable(
                    session,
                    "unknown_tool_content",
                    format!("tool content of type {other:?}"),
                    out,
                );
                if self.config.policy == Policy::Strict {
                    return Vec::new();
                }
                vec![json!({"type": "content", "content": {
                    "type": "text",
                    "text": format!("[{other} tool content not representable in ACP v1]"),
                    META_KEY: {SPINDLE_META_KEY: {"bridgePlaceholder": true}},
                }})]
            }
        }
    }

    /// A v2 diff as v1 diff items, one per hunk of each added or modified
    /// file; each change v1 cannot show is rejected on its own (degrade: its
    /// patch section as a text item). A v1-shaped diff passes as is.
    fn down_diff(&mut self, session: &str, item: Value, out: &mut Translated) -> Vec<Value> {
        let Value::Object(obj) = item else {
            return Vec::new();
        };
        if diffs::is_v1_diff(&obj) {
            out.diag(
                Severity::Warning,
                "v1_diff_from_v2_agent",
                "a v1-shaped diff (path/oldText/newText) from the v2 agent passed as is".into(),
            );
            return vec![Value::Object(obj)];
        }
        let mut items = Vec::new();
        for part in diffs::diff_v2_to_v1(&obj) {
            match part {
                DiffPart::Items(hunks) => {
                    if hunks
                        .iter()
                        .any(|h| h[META_KEY][SPINDLE_META_KEY].get("hunk").is_some())
                    {
                        out.diag(
                            Severity::Info,
                            "diff_hunks",
                            format!(
                                "v2 diff of {} shown as {} v1 diff item(s), one per hunk (line numbers in _meta.spindle.hunk)",
                                hunks[0]["path"],
                                hunks.len()
                            ),
                        );
                    }
                    items.extend(hunks);
                }
                DiffPart::NoV1Form { reason, text } => {
                    self.down_unrepresentable(session, "v2_diff", reason, out);
                    if self.config.policy == Policy::Degrade {
                        items.push(
                            json!({"type": "content", "content": {"type": "text", "text": text}}),
                        );
                    }
                }
            }
        }
        items
    }

    /// v2 tool-call fields -> v1: null clears, open enums, content items.
    pub(crate) fn down_tool_fields(
        &mut self,
        session: &str,
        u: &mut Map<String, Value>,
        first: bool,
        out: &mut Translated,
    ) {
        let id = owned_str(u.get("toolCallId"));
        for key in [
            "title",
            "name",
            "kind",
            "status",
            "rawInput",
            "rawOutput",
            META_KEY,
        ] {
            if u.get(key) == Some(&Value::Null) {
                u.remove(key);
                if !first {
                    self.down_unrepresentable(
                        session,
                        "scalar_clear",
                        format!("tool call {id} clears {key}"),
                        out,
                    );
                }
            }
        }
        self.down_tool_status(session, &id, u, out);
        if let Some(kind) = u.get("kind").and_then(Value::as_str)
            && !V1_TOOL_KINDS.contains(&kind)
        {
            out.diag(
                Severity::Info,
                "tool_kind_other",
                format!("tool call {id} kind {kind:?} shown as other"),
            );
            u.insert("kind".into(), "other".into());
        }
        if let Some(caps) = u.remove("capabilities")
            && !caps.is_null()
        {
            out.diag(
                Severity::Info,
                "tool_capabilities",
                format!("tool call {id} capabilities (tool_call/cancel) have no v1 form"),
            );
        }
        for key in ["content", "locations"] {
            if u.get(key) == Some(&Value::Null) {
                u.insert(key.into(), json!([]));
            }
        }
        if let Some(Value::Array(items)) = u.remove("content") {
            let mut converted = Vec::with_capacity(items.len());
            for item in items {
                converted.extend(self.down_tool_item(session, item, out));
            }
            u.insert("content".into(), Value::Array(converted));
        }
    }

    /// v2 `tool_call_update` (an upsert): `tool_call` the first time an id
    /// is seen (with a title), `tool_call_update` after.
    pub(crate) fn down_tool_call_update(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let id = owned_str(u.get("toolCallId"));
        let first = !self.down.session(session).tools.contains_key(&id);
        self.down_tool_fields(session, &mut u, first, out);
        let content: Vec<Value> = match u.get("content") {
            Some(Value::Array(c)) => c.clone(),
            _ => Vec::new(),
        };
        let s = self.down.session(session);
        let acc = s.tools.entry(id.clone()).or_default();
        if u.contains_key("content") {
            *acc = content;
        }
        if first {
            u.insert("sessionUpdate".into(), tags::TOOL_CALL.into());
            if !u.contains_key("title") {
                let title = u
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("Tool call {id}"), str::to_owned);
                out.diag(
                    Severity::Info,
                    "title_synthesized",
                    format!("tool call {id} had no title; v1 requires one: {title:?}"),
                );
                u.insert("title".into(), title.into());
            }
        }
        out.update_to_client(session, u);
    }

    /// A `tool_call` from the v2 agent (a v1-only tag v2 removed): still a
    /// v1 `tool_call`, but its fields and inline content are translated as a
    /// first `tool_call_update` would be, so no v2 shape reaches the client.
    pub(crate) fn down_removed_tool_call(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let id = owned_str(u.get("toolCallId"));
        out.diag(
            Severity::Warning,
            "removed_v1_update",
            format!(
                "the v2 agent sent the v1-only update \"tool_call\" ({id}); its fields translated"
            ),
        );
        self.down_tool_fields(session, &mut u, true, out);
        let content = match u.get("content") {
            Some(Value::Array(c)) => c.clone(),
            _ => Vec::new(),
        };
        self.down.session(session).tools.insert(id.clone(), content);
        if !u.contains_key("title") {
            out.diag(
                Severity::Info,
                "title_synthesized",
                format!("tool call {id} had no title; v1 requires one"),
            );
            u.insert("title".into(), format!("Tool call {id}").into());
        }
        out.update_to_client(session, u);
    }

    /// v2 `tool_call_content_chunk`: the tool call with its whole content so
    /// far (v1 replaces tool content, it never appends).
    pub(crate) fn down_tool_content_chunk(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let id = owned_str(u.get("toolCallId"));
        let item = u.remove("content").unwrap_or(Value::Null);
        let items = self.down_tool_item(session, item, out);
        if items.is_empty() {
            return;
        }
        let s = self.down.session(session);
        let first = !s.tools.contains_key(&id);
        let acc = s.tools.entry(id.clone()).or_default();
        acc.extend(items);
        let content = Value::Array(acc.clone());
        let mut t = Map::new();
        let tag = if first {
            tags::TOOL_CALL
        } else {
            tags::TOOL_CALL_UPDATE
        };
        t.insert("sessionUpdate".into(), tag.into());
        t.insert("toolCallId".into(), id.clone().into());
        if first {
            t.insert("title".into(), format!("Tool call {id}").into());
            out.diag(
                Severity::Info,
                "title_synthesized",
                format!("tool call {id} first seen in a content chunk"),
            );
        }
        t.insert("content".into(), content);
        out.update_to_client(session, t);
    }

    /// A v2 tool status v1 lacks (`cancelled`, `paused`, `_x`): rejected, or
    /// degraded to `failed` (cancelled) / `in_progress`.
    fn down_tool_status(
        &mut self,
        session: &str,
        id: &str,
        u: &mut Map<String, Value>,
        out: &mut Translated,
    ) {
        let Some(status) = u.get("status").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        if V1_TOOL_STATUS.contains(&status.as_str()) {
            return;
        }
        self.down_unrepresentable(
            session,
            "tool_status",
            format!("tool call {id} status {status:?}"),
            out,
        );
        match self.config.policy {
            Policy::Strict => {
                u.remove("status");
            }
            Policy::Degrade => {
                let v1 = if status == "cancelled" {
                    "failed"
                } else {
                    "in_progress"
                };
                u.insert("status".into(), v1.into());
            }
        }
    }
}
