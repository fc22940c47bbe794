//! v1 client in front of a v2 agent: the v1 prompt is held open until idle
//! with a stopReason, message upserts fan out into chunks only where seed 002
//! allows it, tool-call upserts become `tool_call` + `tool_call_update`, and
//! the client's v1 requests are lifted to v2.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use spindle_wire::extensions::Extension;
use spindle_wire::meta::{META_KEY, SPINDLE_META_KEY};
use spindle_wire::scan::UpdateView;
use spindle_wire::tags::{self, MessageKind, UpdateTag};

use crate::wire::{self, Frame, UpdateHead, UpdateParams};
use crate::{
    Bridge, ClientRequest, IdMap, IdSet, Policy, Severity, Translated, chunk_kind, clear_extension,
    session_of, shapes,
};

const V1_BLOCKS: [&str; 5] = ["text", "image", "audio", "resource_link", "resource"];
const V1_TOOL_STATUS: [&str; 4] = ["pending", "in_progress", "completed", "failed"];
const V1_PLAN_STATUS: [&str; 3] = ["pending", "in_progress", "completed"];
const V1_STOP: [&str; 5] = [
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];
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

/// The separator of a marked re-push (seed 000's "separator & re-push"
/// workaround), flagged in `_meta` so tools can tell it from agent text.
pub(crate) const REPUSH_SEPARATOR: &str = "\n\n---\n\n";

#[derive(Debug)]
struct DownPrompt {
    client_id: String,
    /// messageId of the agent's acceptance.
    accepted: Option<String>,
    running_seen: bool,
    /// The user message id taken as the echo of this prompt.
    echo: Option<String>,
    /// Strict policy: what this turn could not show.
    rejected: Vec<String>,
}

#[derive(Debug, Default)]
struct DownSession {
    /// Messages the v1 client holds content for, by kind.
    shown: [IdSet; 3],
    /// Tool calls announced to the client, with their accumulated v1 content.
    tools: HashMap<String, Vec<Value>>,
    /// v2 plans by planId, in first-seen order (v1 has one plan).
    plans: Vec<(String, Vec<Value>)>,
    prompt: Option<DownPrompt>,
    /// (configId, currentValue) of the `mode` config option.
    mode: Option<(String, String)>,
}

#[derive(Debug, Default)]
pub(crate) struct DownState {
    sessions: IdMap<DownSession>,
    /// Prompt request ids -> session.
    prompt_sessions: HashMap<String, String>,
    /// (session, kind index, messageId) of the last chunk relayed: known to
    /// be in that session's `shown` set, so the next chunk of the same
    /// message skips the lookups. Cleared wherever an id leaves `shown`.
    last_shown: Option<(String, usize, String)>,
    next_id: u64,
}

fn kind_index(kind: MessageKind) -> usize {
    match kind {
        MessageKind::User => 0,
        MessageKind::Agent => 1,
        MessageKind::Thought => 2,
    }
}

impl DownState {
    fn session(&mut self, id: &str) -> &mut DownSession {
        if !self.sessions.contains_key(id) {
            self.sessions.insert(id.to_owned(), DownSession::default());
        }
        self.sessions.get_mut(id).expect("inserted above")
    }

    pub(crate) fn pending_prompt_ids(&self) -> Vec<String> {
        self.sessions
            .values()
            .filter_map(|s| s.prompt.as_ref().map(|p| p.client_id.clone()))
            .collect()
    }

    pub(crate) fn clear_prompts(&mut self) {
        for s in self.sessions.values_mut() {
            s.prompt = None;
        }
        self.prompt_sessions.clear();
    }
}

impl Bridge {
    /// Reports something v1 cannot show: strict rejects it (and fails the
    /// pending prompt), degrade reports the fallback it used.
    fn down_unrepresentable(
        &mut self,
        session: &str,
        code: &'static str,
        what: String,
        out: &mut Translated,
    ) {
        match self.config.policy {
            Policy::Strict => {
                if let Some(p) = self.down.session(session).prompt.as_mut() {
                    p.rejected.push(format!("{code}: {what}"));
                }
                out.diag(Severity::Error, code, format!("rejected: {what}"));
            }
            Policy::Degrade => out.diag(Severity::Warning, code, format!("degraded: {what}")),
        }
    }

    pub(crate) fn down_from_client(&mut self, line: &str, frame: &Frame<'_>, out: &mut Translated) {
        let (Some(method), Some(id)) = (frame.method.as_deref(), frame.id_key()) else {
            out.to_agent.push(line.to_owned());
            return;
        };
        let mut params = wire::object_of(frame.params).unwrap_or_default();
        let session = session_of(&params);
        let convert_mcp = |params: &mut Map<String, Value>, out: &mut Translated| {
            if let Some(servers) = params.get_mut("mcpServers") {
                let dropped = shapes::mcp_servers_v1_to_v2(servers);
                if dropped > 0 {
                    out.diag(
                        Severity::Warning,
                        "sse_mcp_server",
                        format!(
                            "{dropped} SSE MCP server(s) not forwarded: v2 has no SSE transport"
                        ),
                    );
                }
            }
        };
        match method {
            "session/prompt" => {
                let s = self.down.session(&session);
                if let Some(old) = s.prompt.take() {
                    out.diag(
                        Severity::Warning,
                        "overlapping_prompt",
                        format!("prompt {} still open when a new one arrived", old.client_id),
                    );
                    out.to_client.push(wire::error_response(
                        &old.client_id,
                        -32603,
                        "superseded by a newer prompt",
                        None,
                    ));
                }
                self.down.session(&session).prompt = Some(DownPrompt {
                    client_id: id.clone(),
                    accepted: None,
                    running_seen: false,
                    echo: None,
                    rejected: Vec::new(),
                });
                self.down.prompt_sessions.insert(id.clone(), session);
                self.requests.insert(id, ClientRequest::Prompt);
                out.to_agent.push(line.to_owned());
            }
            "session/new" => {
                convert_mcp(&mut params, out);
                self.requests.insert(id.clone(), ClientRequest::NewSession);
                out.to_agent
                    .push(wire::request(&id, method, Value::Object(params)));
            }
            "session/load" => {
                convert_mcp(&mut params, out);
                params.insert("replayFrom".into(), json!({"type": "start"}));
                self.requests
                    .insert(id.clone(), ClientRequest::Load(session));
                out.to_agent
                    .push(wire::request(&id, "session/resume", Value::Object(params)));
            }
            "session/resume" => {
                convert_mcp(&mut params, out);
                self.requests
                    .insert(id.clone(), ClientRequest::Resume(session));
                out.to_agent
                    .push(wire::request(&id, method, Value::Object(params)));
            }
            "session/set_mode" => {
                let mode = self.down.session(&session).mode.clone();
                let value = params
                    .get("modeId")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                match mode {
                    Some((config_id, _)) => {
                        let p = json!({
                            "sessionId": session,
                            "configId": config_id,
                            "type": "id",
                            "value": value,
                        });
                        self.requests
                            .insert(id.clone(), ClientRequest::SetMode(session, value));
                        out.to_agent
                            .push(wire::request(&id, "session/set_config_option", p));
                    }
                    None => {
                        out.diag(
                            Severity::Warning,
                            "no_mode_option",
                            "session/set_mode: the v2 agent reported no mode config option".into(),
                        );
                        out.to_client.push(wire::error_response(
                            &id,
                            -32601,
                            "this agent has no modes",
                            None,
                        ));
                    }
                }
            }
            "session/set_config_option" => {
                if !params.contains_key("type") && params.get("value").is_some_and(Value::is_string)
                {
                    params.insert("type".into(), "id".into());
                }
                self.requests
                    .insert(id.clone(), ClientRequest::SetConfig(session));
                out.to_agent
                    .push(wire::request(&id, method, Value::Object(params)));
            }
            "authenticate" => {
                if let Some(m) = params.remove("methodId") {
                    params.insert("methodId".into(), m);
                }
                self.requests.insert(id.clone(), ClientRequest::Other);
                out.to_agent
                    .push(wire::request(&id, "auth/login", Value::Object(params)));
            }
            "logout" => {
                self.requests.insert(id.clone(), ClientRequest::Other);
                out.to_agent
                    .push(wire::request(&id, "auth/logout", Value::Object(params)));
            }
            _ => {
                self.requests.insert(id, ClientRequest::Other);
                out.to_agent.push(line.to_owned());
            }
        }
    }

    pub(crate) fn down_from_agent(&mut self, line: &str, frame: &Frame<'_>, out: &mut Translated) {
        match (frame.method.as_deref(), frame.id_key()) {
            (Some("session/update"), None) => self.down_update_malformed(frame, out),
            (Some("session/request_permission"), Some(id)) => self.down_permission(&id, frame, out),
            (Some(_), _) => out.to_client.push(line.to_owned()),
            (None, Some(id)) => self.down_response(line, &id, frame, out),
            (None, None) => {
                out.diag(
                    Severity::Warning,
                    "malformed_agent_line",
                    "neither request, response nor notification".into(),
                );
                out.to_client.push(line.to_owned());
            }
        }
    }

    fn down_response(&mut self, line: &str, id: &str, frame: &Frame<'_>, out: &mut Translated) {
        // F9, this direction: a second answer to a prompt (its first, the v2 acceptance, was
        // consumed) would end the held v1 prompt early with a v2-shaped result.
        let Some(request) = self.take_pending_request(id, out) else {
            return;
        };
        if let ClientRequest::Prompt = request {
            let session = self.down.prompt_sessions.remove(id).unwrap_or_default();
            let s = self.down.session(&session);
            if frame.error.is_some() {
                // Not inserted: the v1 prompt fails the same way.
                s.prompt = None;
                out.to_client.push(line.to_owned());
                return;
            }
            let result = wire::object_of(frame.result).unwrap_or_default();
            let message_id = result
                .get("messageId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Some(p) = s.prompt.as_mut().filter(|p| p.client_id == id) {
                p.accepted = Some(message_id.unwrap_or_default());
                // The echo may already have come with another id; keep it.
            }
            return;
        }
        if frame.error.is_some() {
            out.to_client.push(line.to_owned());
            return;
        }
        let mut result = wire::object_of(frame.result).unwrap_or_default();
        match request {
            ClientRequest::NewSession | ClientRequest::Load(_) | ClientRequest::Resume(_) => {
                let session = match &request {
                    ClientRequest::Load(s) | ClientRequest::Resume(s) => s.clone(),
                    _ => result
                        .get("sessionId")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                };
                if let Some(Value::Array(options)) = result.remove("configOptions") {
                    self.down_options(&session, &options, &mut result);
                }
                out.to_client
                    .push(wire::response(id, &Value::Object(result)));
            }
            ClientRequest::SetMode(session, value) => {
                if let Some(mode) = self.down.session(&session).mode.as_mut() {
                    mode.1 = value;
                }
                let mut r = Map::new();
                if let Some(meta) = result.remove(META_KEY) {
                    r.insert(META_KEY.into(), meta);
                }
                out.to_client.push(wire::response(id, &Value::Object(r)));
            }
            ClientRequest::SetConfig(session) => {
                if let Some(Value::Array(options)) = result.remove("configOptions") {
                    self.down_options(&session, &options, &mut result);
                    result.remove("modes");
                }
                out.to_client
                    .push(wire::response(id, &Value::Object(result)));
            }
            _ => out.to_client.push(line.to_owned()),
        }
    }

    /// v2 config options into a v1 result: `configOptions` plus `modes`.
    fn down_options(&mut self, session: &str, options: &[Value], result: &mut Map<String, Value>) {
        let modes = shapes::modes_from_options(options);
        let s = self.down.session(session);
        s.mode = modes.as_ref().map(|(m, id)| {
            (
                id.clone(),
                m["currentModeId"].as_str().unwrap_or("").to_owned(),
            )
        });
        if let Some((modes, _)) = modes {
            result.insert("modes".into(), modes);
        }
        result.insert(
            "configOptions".into(),
            Value::Array(shapes::config_options_v2_to_v1(options)),
        );
    }

    fn down_permission(&mut self, id: &str, frame: &Frame<'_>, out: &mut Translated) {
        let mut params = wire::object_of(frame.params).unwrap_or_default();
        let session = session_of(&params);
        let title = params
            .remove("title")
            .and_then(|t| t.as_str().map(str::to_owned))
            .unwrap_or_default();
        let description = params.remove("description");
        let subject = params.remove("subject").unwrap_or(Value::Null);
        let tool = match subject.get("type").and_then(Value::as_str) {
            Some("tool_call") => match subject.get("toolCall") {
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
        out.to_client.push(wire::request(
            id,
            "session/request_permission",
            Value::Object(params),
        ));
    }

    /// A session/update whose params did not parse as `{sessionId, update}`.
    fn down_update_malformed(&mut self, frame: &Frame<'_>, out: &mut Translated) {
        let detail = match frame.params {
            None => "session/update without params".to_owned(),
            Some(p) => match serde_json::from_str::<UpdateParams<'_>>(p.get()) {
                Err(e) => format!("session/update params: {e}"),
                Ok(_) => "session/update could not be read".to_owned(),
            },
        };
        out.diag(Severity::Warning, "malformed_update", detail);
    }

    pub(crate) fn down_update(
        &mut self,
        line: &str,
        params: UpdateParams<'_>,
        out: &mut Translated,
    ) {
        // Hot path: agent/thought chunks with v1 content blocks pass verbatim.
        if let Ok(head) = serde_json::from_str::<UpdateHead<'_>>(params.update.get())
            && let Some(kind) = chunk_kind(&head.tag)
            && kind != MessageKind::User
            && head
                .content
                .as_ref()
                .is_some_and(|c| V1_BLOCKS.contains(&c.kind.as_ref()))
        {
            self.down_chunk(
                line,
                &params.session_id,
                kind,
                head.message_id.as_deref(),
                out,
            );
            return;
        }
        let session = params.session_id.into_owned();
        let update = match serde_json::from_str::<Value>(params.update.get()) {
            Ok(Value::Object(u)) => u,
            _ => {
                out.diag(
                    Severity::Warning,
                    "malformed_update",
                    "session/update update is not an object".into(),
                );
                return;
            }
        };
        self.down_update_slow(&session, update, out);
    }

    /// The hot path from the scanner. False when the line needs the general
    /// path.
    pub(crate) fn down_fast(
        &mut self,
        line: &str,
        f: &UpdateView<'_>,
        out: &mut Translated,
    ) -> bool {
        match chunk_kind(f.tag) {
            Some(kind)
                if kind != MessageKind::User
                    && f.content_type.is_some_and(|t| V1_BLOCKS.contains(&t)) =>
            {
                self.down_chunk(line, f.session_id, kind, f.message_id, out);
                true
            }
            _ => false,
        }
    }

    /// An agent/thought chunk with a v1 content block: relayed verbatim.
    fn down_chunk(
        &mut self,
        line: &str,
        session_id: &str,
        kind: MessageKind,
        message_id: Option<&str>,
        out: &mut Translated,
    ) {
        match message_id {
            Some(id) => {
                let k = kind_index(kind);
                let known = matches!(&self.down.last_shown,
                    Some((s, lk, m)) if *lk == k && m == id && s == session_id);
                if !known {
                    let shown = &mut self.down.session(session_id).shown[k];
                    if !shown.contains(id) {
                        shown.insert(id.to_owned());
                    }
                    self.down.last_shown = Some((session_id.to_owned(), k, id.to_owned()));
                }
            }
            None => out.diag(
                Severity::Warning,
                "missing_message_id",
                "v2 chunk without messageId relayed as an id-less v1 chunk".into(),
            ),
        }
        out.to_client.push(line.to_owned());
    }

    fn emit_v1(&self, session: &str, u: Map<String, Value>, out: &mut Translated) {
        out.to_client
            .push(wire::update_line(session, Value::Object(u)));
    }

    /// Checks one content block for v1; None when it has no v1 form and was
    /// rejected or dropped.
    fn down_block(&mut self, session: &str, block: Value, out: &mut Translated) -> Option<Value> {
        let ty = block.get("type").and_then(Value::as_str).unwrap_or("");
        if V1_BLOCKS.contains(&ty) {
            return Some(block);
        }
        let ty = ty.to_owned();
        self.down_unrepresentable(
            session,
            "unknown_content_block",
            format!("content block of type {ty:?}"),
            out,
        );
        match self.config.policy {
            Policy::Strict => None,
            Policy::Degrade => Some(json!({
                "type": "text",
                "text": format!("[{ty} content not representable in ACP v1]"),
                META_KEY: {SPINDLE_META_KEY: {"bridgePlaceholder": true}},
            })),
        }
    }

    fn is_echo(&mut self, session: &str, id: &str) -> bool {
        let Some(p) = self.down.session(session).prompt.as_mut() else {
            return false;
        };
        if p.echo.as_deref() == Some(id) {
            return true;
        }
        if p.echo.is_none() {
            let matches = match &p.accepted {
                Some(acc) => acc == id || acc.is_empty(),
                None => true,
            };
            if matches {
                p.echo = Some(id.to_owned());
                return true;
            }
        }
        false
    }

    /// Chunks for `blocks`, the first carrying `meta`.
    fn fan_out(
        &mut self,
        session: &str,
        kind: MessageKind,
        id: &str,
        blocks: Vec<Value>,
        meta: Option<Value>,
        out: &mut Translated,
    ) {
        let mut meta = meta;
        for block in blocks {
            let Some(block) = self.down_block(session, block, out) else {
                continue;
            };
            let mut c = Map::new();
            c.insert("sessionUpdate".into(), kind.chunk_tag().as_str().into());
            c.insert("messageId".into(), id.into());
            c.insert("content".into(), block);
            if let Some(m) = meta.take() {
                c.insert(META_KEY.into(), m);
            }
            self.emit_v1(session, c, out);
            self.down.session(session).shown[kind_index(kind)].insert(id.to_owned());
        }
    }

    /// Degrade fallback for content the client already shows: the clear
    /// extension when negotiated, else a marked re-push separator.
    fn clear_or_separator(
        &mut self,
        session: &str,
        kind: MessageKind,
        id: &str,
        out: &mut Translated,
    ) {
        // An extension's name is the update tag it adds.
        let ext = clear_extension(kind)
            .filter(|e| self.client_ext.contains(*e))
            .map(Extension::name);
        let mut c = Map::new();
        match ext {
            Some(tag) => {
                c.insert("sessionUpdate".into(), tag.into());
                c.insert("messageId".into(), id.into());
                self.down.session(session).shown[kind_index(kind)].remove(id);
                self.down.last_shown = None;
            }
            None => {
                c.insert("sessionUpdate".into(), kind.chunk_tag().as_str().into());
                c.insert("messageId".into(), id.into());
                c.insert(
                    "content".into(),
                    json!({"type": "text", "text": REPUSH_SEPARATOR}),
                );
                c.insert(META_KEY.into(), json!({SPINDLE_META_KEY: {"repush": true}}));
            }
        }
        self.emit_v1(session, c, out);
    }

    fn down_upsert(
        &mut self,
        session: &str,
        kind: MessageKind,
        u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let Some(id) = u
            .get("messageId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            out.diag(
                Severity::Warning,
                "missing_message_id",
                format!("{} without messageId ignored", kind.upsert_tag()),
            );
            return;
        };
        if kind == MessageKind::User && self.is_echo(session, &id) {
            // The v1 client already shows the prompt it sent.
            self.down.session(session).shown[0].insert(id);
            return;
        }
        let mut meta = u.get(META_KEY).cloned();
        if meta == Some(Value::Null) {
            self.down_unrepresentable(
                session,
                "meta_null",
                format!("{} {id} clears _meta", kind.upsert_tag()),
                out,
            );
            meta = None;
        }
        let shown = self.down.session(session).shown[kind_index(kind)].contains(&id);
        // With the clear extension negotiated a replacement is exact: clear,
        // then the new content as chunks.
        let can_clear = clear_extension(kind).is_some_and(|e| self.client_ext.contains(e));
        match u.get("content") {
            None => {
                if meta.is_some() {
                    self.down_unrepresentable(
                        session,
                        "patch_only_update",
                        format!("{} {id} patches _meta only", kind.upsert_tag()),
                        out,
                    );
                }
            }
            Some(Value::Array(blocks)) if !blocks.is_empty() => {
                if shown && can_clear {
                    self.clear_or_separator(session, kind, &id, out);
                } else if shown {
                    self.down_unrepresentable(
                        session,
                        "replacement_after_chunks",
                        format!(
                            "{} {id} replaces content already streamed",
                            kind.upsert_tag()
                        ),
                        out,
                    );
                    if self.config.policy == Policy::Strict {
                        return;
                    }
                    self.clear_or_separator(session, kind, &id, out);
                }
                self.fan_out(session, kind, &id, blocks.clone(), meta, out);
            }
            Some(Value::Array(_)) | Some(Value::Null) if can_clear => {
                self.clear_or_separator(session, kind, &id, out);
            }
            Some(Value::Array(_)) | Some(Value::Null) => {
                self.down_unrepresentable(
                    session,
                    "content_cleared",
                    format!("{} {id} clears its content", kind.upsert_tag()),
                    out,
                );
                if self.config.policy == Policy::Degrade && shown {
                    self.clear_or_separator(session, kind, &id, out);
                }
            }
            Some(other) => out.diag(
                Severity::Warning,
                "malformed_update",
                format!(
                    "{} {id} content is not an array: {other}",
                    kind.upsert_tag()
                ),
            ),
        }
    }

    fn down_update_slow(&mut self, session: &str, mut u: Map<String, Value>, out: &mut Translated) {
        let tag = u
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let Some(known) = UpdateTag::parse(&tag) else {
            self.down_unrepresentable(
                session,
                "no_v1_form",
                format!("update {tag:?} has no ACP v1 form for this client"),
                out,
            );
            return;
        };
        if let Some(kind) = MessageKind::of_upsert(known) {
            self.down_upsert(session, kind, u, out);
            return;
        }
        if let Some(kind) = MessageKind::of_chunk(known) {
            self.down_chunk_slow(session, kind, u, out);
            return;
        }
        match known {
            UpdateTag::StateUpdate => self.down_state(session, &u, out),
            UpdateTag::ToolCallUpdate => self.down_tool_call_update(session, u, out),
            UpdateTag::ToolCallContentChunk => self.down_tool_content_chunk(session, u, out),
            UpdateTag::PlanUpdate | UpdateTag::PlanRemoved if self.client_plan_ops => {
                self.emit_v1(session, u, out)
            }
            UpdateTag::PlanUpdate => self.down_plan_update(session, &u, out),
            UpdateTag::PlanRemoved => {
                let id = u.get("planId").and_then(Value::as_str).unwrap_or("");
                let s = self.down.session(session);
                s.plans.retain(|(p, _)| p != id);
                self.emit_plan(session, out);
            }
            UpdateTag::ConfigOptionUpdate => self.down_config_option_update(session, u, out),
            UpdateTag::AvailableCommandsUpdate => {
                if let Some(commands) = u.get_mut("availableCommands") {
                    let rejected = shapes::commands_v2_to_v1(commands);
                    for r in rejected {
                        self.down_unrepresentable(session, "unknown_command_type", r, out);
                    }
                }
                self.emit_v1(session, u, out);
            }
            UpdateTag::UsageUpdate => {
                if u.get("cost") == Some(&Value::Null) {
                    u.remove("cost");
                    self.down_unrepresentable(
                        session,
                        "cost_cleared",
                        format!("{tag} clears cost (v1: omitted = unchanged)"),
                        out,
                    );
                }
                self.emit_v1(session, u, out);
            }
            UpdateTag::SessionInfoUpdate => self.emit_v1(session, u, out),
            UpdateTag::Notice if self.client_notices => self.emit_v1(session, u, out),
            UpdateTag::CompactionUpdate | UpdateTag::CompactionSummaryChunk
                if self.client_compaction =>
            {
                self.emit_v1(session, u, out)
            }
            UpdateTag::AgentMessageClear => self.down_clear(session, MessageKind::Agent, u, out),
            UpdateTag::AgentThoughtClear => self.down_clear(session, MessageKind::Thought, u, out),
            UpdateTag::SessionCleared => {
                if self.client_ext.contains(Extension::SessionCleared) {
                    self.emit_v1(session, u, out);
                } else {
                    out.diag(
                        Severity::Info,
                        "extension_not_negotiated",
                        format!("{tag} not sent: the client did not opt into it"),
                    );
                }
            }
            UpdateTag::Plan | UpdateTag::ToolCall | UpdateTag::CurrentModeUpdate => {
                out.diag(
                    Severity::Warning,
                    "removed_v1_update",
                    format!("the v2 agent sent the v1-only update {tag:?}; relayed as is"),
                );
                self.emit_v1(session, u, out);
            }
            _ => self.down_unrepresentable(
                session,
                "no_v1_form",
                format!("update {tag:?} has no ACP v1 form for this client"),
                out,
            ),
        }
    }

    /// A message chunk the hot path left: the prompt's echo is dropped, an
    /// unknown content block rejected or replaced.
    fn down_chunk_slow(
        &mut self,
        session: &str,
        kind: MessageKind,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let id = u
            .get("messageId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if kind == MessageKind::User
            && let Some(id) = &id
            && self.is_echo(session, id)
        {
            self.down.session(session).shown[0].insert(id.clone());
            return;
        }
        let block = u.remove("content").unwrap_or(Value::Null);
        let Some(block) = self.down_block(session, block, out) else {
            return;
        };
        u.insert("content".into(), block);
        if let Some(id) = id {
            self.down.session(session).shown[kind_index(kind)].insert(id);
        }
        self.emit_v1(session, u, out);
    }

    /// v2 `tool_call_update` (an upsert): `tool_call` the first time an id
    /// is seen (with a title), `tool_call_update` after.
    fn down_tool_call_update(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let id = u
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
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
        self.emit_v1(session, u, out);
    }

    /// v2 `tool_call_content_chunk`: the tool call with its whole content so
    /// far (v1 replaces tool content, it never appends).
    fn down_tool_content_chunk(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let id = u
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let item = u.remove("content").unwrap_or(Value::Null);
        let Some(item) = self.down_tool_item(session, item, out) else {
            return;
        };
        let s = self.down.session(session);
        let first = !s.tools.contains_key(&id);
        let acc = s.tools.entry(id.clone()).or_default();
        acc.push(item);
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
        self.emit_v1(session, t, out);
    }

    /// v2 `config_option_update`: v1 options, plus `current_mode_update`
    /// when the mode option changed value.
    fn down_config_option_update(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let options = match u.remove("configOptions") {
            Some(Value::Array(o)) => o,
            _ => Vec::new(),
        };
        let before = self.down.session(session).mode.clone();
        let mut r = Map::new();
        self.down_options(session, &options, &mut r);
        let mut c = Map::new();
        c.insert("sessionUpdate".into(), tags::CONFIG_OPTION_UPDATE.into());
        c.insert(
            "configOptions".into(),
            r.remove("configOptions").unwrap_or_else(|| json!([])),
        );
        self.emit_v1(session, c, out);
        let after = self.down.session(session).mode.clone();
        if let Some((_, current)) = after
            && before.map(|b| b.1) != Some(current.clone())
        {
            out.to_client.push(wire::update_line(
                session,
                json!({"sessionUpdate": tags::CURRENT_MODE_UPDATE, "currentModeId": current}),
            ));
        }
    }

    /// The agent's `agent_message_clear` / `agent_thought_clear`: relayed
    /// when the client opted in, else rejected (degrade: the fallback of
    /// [`Bridge::clear_or_separator`]).
    fn down_clear(
        &mut self,
        session: &str,
        kind: MessageKind,
        u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let Some(ext) = clear_extension(kind) else {
            return;
        };
        let tag = ext.name();
        if self.client_ext.contains(ext) {
            if let Some(id) = u.get("messageId").and_then(Value::as_str) {
                self.down.session(session).shown[kind_index(kind)].remove(id);
                self.down.last_shown = None;
            }
            self.emit_v1(session, u, out);
        } else if let Some(id) = u.get("messageId").and_then(Value::as_str) {
            let id = id.to_owned();
            self.down_unrepresentable(
                session,
                "clear_not_negotiated",
                format!("{tag} for {id}: the client did not opt into it"),
                out,
            );
            if self.config.policy == Policy::Degrade {
                self.clear_or_separator(session, kind, &id, out);
            }
        } else {
            self.down_unrepresentable(
                session,
                "clear_not_negotiated",
                format!("{tag} without messageId: the client did not opt into it"),
                out,
            );
        }
    }

    fn down_state(&mut self, session: &str, u: &Map<String, Value>, out: &mut Translated) {
        let state = u.get("state").and_then(Value::as_str).unwrap_or("");
        let s = self.down.session(session);
        match state {
            "running" => {
                if let Some(p) = s.prompt.as_mut() {
                    p.running_seen = true;
                }
            }
            "idle" => {
                let Some(stop) = u.get("stopReason").and_then(Value::as_str) else {
                    return;
                };
                let ready = s
                    .prompt
                    .as_ref()
                    .is_some_and(|p| p.accepted.is_some() || p.running_seen);
                if !ready {
                    // A repeated snapshot, background work ending, or an
                    // agent-initiated turn: v1 has no frame for any of them.
                    return;
                }
                let p = s.prompt.take().expect("ready implies a prompt");
                self.down.prompt_sessions.remove(&p.client_id);
                let usage = u.get("usage").filter(|v| !v.is_null()).cloned();
                self.answer_prompt(p, stop, u.get("error"), usage, out);
            }
            // requires_action, unknown states: no v1 frame; the prompt stays open.
            _ => {}
        }
    }

    fn answer_prompt(
        &mut self,
        p: DownPrompt,
        stop: &str,
        error: Option<&Value>,
        usage: Option<Value>,
        out: &mut Translated,
    ) {
        if !p.rejected.is_empty() {
            out.to_client.push(wire::error_response(
                &p.client_id,
                -32603,
                &format!(
                    "spindle bridge (strict): {} update(s) of this turn have no ACP v1 form",
                    p.rejected.len()
                ),
                Some(json!({"stopReason": stop, "rejected": p.rejected})),
            ));
            return;
        }
        if V1_STOP.contains(&stop) {
            let mut r = Map::new();
            r.insert("stopReason".into(), stop.into());
            if let Some(usage) = usage {
                r.insert("usage".into(), usage);
            }
            out.to_client
                .push(wire::response(&p.client_id, &Value::Object(r)));
            return;
        }
        if stop == "error" {
            // v1's form of a failed turn is a JSON-RPC error.
            let sev = match self.config.policy {
                Policy::Strict => Severity::Error,
                Policy::Degrade => Severity::Warning,
            };
            out.diag(
                sev,
                "stop_reason_error",
                "stop reason error sent as a JSON-RPC error response".into(),
            );
            let code = error
                .and_then(|e| e.get("code"))
                .and_then(Value::as_i64)
                .unwrap_or(-32603);
            let message = error
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("the agent's turn failed");
            let data = error.and_then(|e| e.get("data")).cloned();
            out.to_client
                .push(wire::error_response(&p.client_id, code, message, data));
            return;
        }
        match self.config.policy {
            Policy::Strict => {
                out.diag(
                    Severity::Error,
                    "unknown_stop_reason",
                    format!("rejected: stop reason {stop:?} has no v1 form"),
                );
                out.to_client.push(wire::error_response(
                    &p.client_id,
                    -32603,
                    &format!("spindle bridge (strict): stop reason {stop:?} has no ACP v1 form"),
                    Some(json!({"stopReason": stop})),
                ));
            }
            Policy::Degrade => {
                out.diag(
                    Severity::Warning,
                    "unknown_stop_reason",
                    format!("degraded: stop reason {stop:?} sent as end_turn"),
                );
                out.to_client.push(wire::response(
                    &p.client_id,
                    &json!({"stopReason": "end_turn", META_KEY: {SPINDLE_META_KEY: {"stopReason": stop}}}),
                ));
            }
        }
    }

    /// One v2 tool-call content item as v1, or None when rejected/dropped.
    fn down_tool_item(
        &mut self,
        session: &str,
        item: Value,
        out: &mut Translated,
    ) -> Option<Value> {
        let ty = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        match ty.as_str() {
            "content" => {
                let block = item.get("content").cloned().unwrap_or(Value::Null);
                let block = self.down_block(session, block, out)?;
                let mut item = item;
                item["content"] = block;
                Some(item)
            }
            "diff" => {
                let paths: Vec<String> = item["changes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("path").and_then(Value::as_str).map(str::to_owned))
                    .collect();
                self.down_unrepresentable(
                    session,
                    "v2_diff",
                    format!("v2 diff of {paths:?} (no oldText/newText form)"),
                    out,
                );
                if self.config.policy == Policy::Strict {
                    return None;
                }
                let text = item["patch"]["text"]
                    .as_str()
                    .map_or_else(|| format!("changed: {}", paths.join(", ")), str::to_owned);
                Some(json!({"type": "content", "content": {"type": "text", "text": text}}))
            }
            "terminal" => {
                let id = item["terminalId"].as_str().unwrap_or("").to_owned();
                self.down_unrepresentable(
                    session,
                    "v2_terminal",
                    format!("v2 terminal {id} (agent-owned; never mapped onto a v1 terminal)"),
                    out,
                );
                if self.config.policy == Policy::Strict {
                    return None;
                }
                Some(
                    json!({"type": "content", "content": {"type": "text", "text": format!("[terminal {id}]")}}),
                )
            }
            other => {
                let other = other.to_owned();
                self.down_unrepresentable(
                    session,
                    "unknown_tool_content",
                    format!("tool content of type {other:?}"),
                    out,
                );
                None
            }
        }
    }

    /// v2 tool-call fields -> v1: null clears, open enums, content items.
    fn down_tool_fields(
        &mut self,
        session: &str,
        u: &mut Map<String, Value>,
        first: bool,
        out: &mut Translated,
    ) {
        let id = u
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
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
        if let Some(status) = u.get("status").and_then(Value::as_str).map(str::to_owned)
            && !V1_TOOL_STATUS.contains(&status.as_str())
        {
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
                if let Some(item) = self.down_tool_item(session, item, out) {
                    converted.push(item);
                }
            }
            u.insert("content".into(), Value::Array(converted));
        }
    }

    fn down_plan_update(&mut self, session: &str, u: &Map<String, Value>, out: &mut Translated) {
        let plan = u.get("plan").cloned().unwrap_or(Value::Null);
        let ty = plan.get("type").and_then(Value::as_str).unwrap_or("");
        let plan_id = plan
            .get("planId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if ty != "items" {
            let ty = ty.to_owned();
            self.down_unrepresentable(
                session,
                "plan_type",
                format!("plan {plan_id} of type {ty:?} (v1 plans are entry lists)"),
                out,
            );
            return;
        }
        let mut entries = Vec::new();
        for mut e in plan["entries"].as_array().cloned().unwrap_or_default() {
            let status = e
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            if !V1_PLAN_STATUS.contains(&status.as_str()) {
                self.down_unrepresentable(
                    session,
                    "plan_status",
                    format!("plan {plan_id} entry status {status:?}"),
                    out,
                );
                if self.config.policy == Policy::Strict {
                    continue;
                }
                let content = e.get("content").and_then(Value::as_str).unwrap_or("");
                e["content"] = format!("({status}) {content}").into();
                e["status"] = if status == "cancelled" {
                    "completed"
                } else {
                    "pending"
                }
                .into();
            }
            entries.push(e);
        }
        let s = self.down.session(session);
        match s.plans.iter_mut().find(|(p, _)| *p == plan_id) {
            Some((_, e)) => *e = entries,
            None => s.plans.push((plan_id, entries)),
        }
        self.emit_plan(session, out);
    }

    /// The v1 plan: all v2 plans' entries in first-seen order.
    fn emit_plan(&mut self, session: &str, out: &mut Translated) {
        let s = self.down.session(session);
        if s.plans.len() > 1 {
            out.diag(
                Severity::Info,
                "plans_collapsed",
                format!("{} plans shown as one v1 plan", s.plans.len()),
            );
        }
        let entries: Vec<Value> = s.plans.iter().flat_map(|(_, e)| e.clone()).collect();
        out.to_client.push(wire::update_line(
            session,
            json!({"sessionUpdate": tags::PLAN, "entries": entries}),
        ));
    }
}
