//! v2 client in front of a v1 agent: the agent's v1 output is lifted to v2
//! (minted messageIds, prompt lifecycle, tool-call and plan upserts, modes as
//! a config option) and the client's v2 requests are lowered to v1.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use spindle_wire::extensions::Extension;
use spindle_wire::meta::{CLEAR_BOUNDARY_FLAG, META_KEY};
use spindle_wire::scan::UpdateView;
use spindle_wire::tags::{self, MessageKind, UpdateTag};

use crate::wire::{self, Frame, UpdateHead, UpdateParams};
use crate::{Bridge, ClientRequest, IdMap, Severity, Translated, chunk_kind, session_of, shapes};

#[derive(Debug, Default)]
struct UpSession {
    /// The message id-less v1 chunks of this kind continue (the transcript
    /// engine's rule: a type change, tool call, compaction, clear boundary,
    /// prompt or prompt end starts a new message).
    open: Option<(MessageKind, String)>,
    /// Config options as reported by the agent, v2-shaped.
    options: Vec<Value>,
    /// v1 modes, shown to the client as a `mode` config option.
    modes: Option<Value>,
    mode_config_id: Option<String>,
}

#[derive(Debug)]
struct UpPrompt {
    session: String,
}

#[derive(Debug, Default)]
pub(crate) struct UpState {
    sessions: IdMap<UpSession>,
    /// Prompts forwarded to the agent, by the bridge's agent-side id.
    prompts: HashMap<String, UpPrompt>,
    next_id: u64,
    /// (session, kind, messageId) of the last chunk with a messageId: that
    /// session's `open` message. Every other way to a session goes through
    /// [`UpState::session`], which forgets it.
    last_chunk: Option<(String, MessageKind, String)>,
}

impl UpState {
    fn mint(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("spindle-{prefix}-{}", self.next_id)
    }

    fn session(&mut self, id: &str) -> &mut UpSession {
        self.last_chunk = None;
        if !self.sessions.contains_key(id) {
            self.sessions.insert(id.to_owned(), UpSession::default());
        }
        self.sessions.get_mut(id).expect("inserted above")
    }

    pub(crate) fn pending_prompt_client_ids(&self) -> Vec<String> {
        // v2 prompts are answered on forwarding: nothing of the client waits.
        Vec::new()
    }

    pub(crate) fn clear_prompts(&mut self) {
        self.prompts.clear();
    }

    /// The ids of prompts still running, with their sessions (for idle on
    /// agent exit).
    pub(crate) fn running_sessions(&self) -> Vec<String> {
        self.prompts.values().map(|p| p.session.clone()).collect()
    }

    /// The full v2 option set of a session: the agent's options plus the
    /// synthesized mode option.
    fn all_options(&self, session: &str) -> Vec<Value> {
        let Some(s) = self.sessions.get(session) else {
            return Vec::new();
        };
        let mut all = s.options.clone();
        if let (Some(modes), Some(id)) = (&s.modes, &s.mode_config_id)
            && let Some(o) = shapes::mode_option(modes, id)
        {
            all.push(o);
        }
        all
    }
}

/// v1 patch semantics: `null` = unchanged; v2: `null` = clear. Drop nulls.
fn strip_nulls(obj: &mut Map<String, Value>) {
    obj.retain(|_, v| !v.is_null());
}

fn tool_content_v1_to_v2(content: &mut Value) {
    for item in content.as_array_mut().into_iter().flatten() {
        if item["type"] == "diff"
            && let Some(obj) = item.as_object()
            && obj.contains_key("newText")
        {
            *item = shapes::diff_v1_to_v2(obj);
        }
    }
}

/// A v1 `tool_call` / `tool_call_update` / permission `toolCall` as a v2
/// `tool_call_update` body.
fn tool_v1_to_v2(obj: &mut Map<String, Value>) {
    strip_nulls(obj);
    if let Some(content) = obj.get_mut("content") {
        tool_content_v1_to_v2(content);
    }
}

impl Bridge {
    pub(crate) fn up_from_client(&mut self, line: &str, frame: &Frame<'_>, out: &mut Translated) {
        let (Some(method), Some(id)) = (frame.method.as_deref(), frame.id_key()) else {
            // Notifications (session/cancel) and answers to agent requests
            // have the same shape in both versions.
            out.to_agent.push(line.to_owned());
            return;
        };
        let mut params = wire::object_of(frame.params).unwrap_or_default();
        let session = session_of(&params);
        match method {
            "session/prompt" => {
                let agent_id = wire::json_string(&self.up.mint("prompt"));
                let message_id = self.up.mint("user");
                let raw = frame.params.map_or("{}", |p| p.get());
                out.to_agent.push(format!(
                    r#"{{"jsonrpc":"2.0","id":{agent_id},"method":"session/prompt","params":{raw}}}"#
                ));
                out.to_client
                    .push(wire::response(&id, &json!({ "messageId": message_id })));
                let prompt = params.remove("prompt").unwrap_or_else(|| json!([]));
                out.to_client.push(wire::update_line(
                    &session,
                    json!({"sessionUpdate": tags::USER_MESSAGE, "messageId": message_id, "content": prompt}),
                ));
                out.to_client.push(wire::update_line(
                    &session,
                    json!({"sessionUpdate": tags::STATE_UPDATE, "state": "running"}),
                ));
                self.up.session(&session).open = None;
                self.up.prompts.insert(agent_id, UpPrompt { session });
            }
            "session/new" => {
                if let Some(servers) = params.get_mut("mcpServers") {
                    shapes::mcp_servers_v2_to_v1(servers);
                } else {
                    params.insert("mcpServers".into(), json!([]));
                }
                self.requests.insert(id.clone(), ClientRequest::NewSession);
                out.to_agent
                    .push(wire::request(&id, method, Value::Object(params)));
            }
            "session/resume" => {
                let replay = params.remove("replayFrom").unwrap_or(Value::Null);
                match replay.get("type").and_then(Value::as_str) {
                    None if replay.is_null() => {
                        if let Some(servers) = params.get_mut("mcpServers") {
                            shapes::mcp_servers_v2_to_v1(servers);
                        }
                        self.requests
                            .insert(id.clone(), ClientRequest::Resume(session));
                        out.to_agent
                            .push(wire::request(&id, method, Value::Object(params)));
                    }
                    Some("start") => {
                        match params.get_mut("mcpServers") {
                            Some(servers) => shapes::mcp_servers_v2_to_v1(servers),
                            None => {
                                params.insert("mcpServers".into(), json!([]));
                            }
                        }
                        self.up.session(&session).open = None;
                        self.requests
                            .insert(id.clone(), ClientRequest::Load(session));
                        out.to_agent.push(wire::request(
                            &id,
                            "session/load",
                            Value::Object(params),
                        ));
                    }
                    other => {
                        let what = other.map_or_else(|| replay.to_string(), str::to_owned);
                        out.diag(
                            Severity::Error,
                            "unknown_replay_cursor",
                            format!("session/resume replayFrom {what} has no v1 form"),
                        );
                        out.to_client.push(wire::error_response(
                            &id,
                            -32602,
                            &format!("replayFrom {what} is not supported by this (v1) agent"),
                            None,
                        ));
                    }
                }
            }
            "session/set_config_option" => {
                let mode_id = self
                    .up
                    .sessions
                    .get(&session)
                    .and_then(|s| s.mode_config_id.clone());
                let config_id = params.get("configId").and_then(Value::as_str);
                if mode_id.is_some() && config_id == mode_id.as_deref() {
                    let value = params
                        .get("value")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let mut p = Map::new();
                    p.insert("sessionId".into(), session.clone().into());
                    p.insert("modeId".into(), value.clone().into());
                    self.requests
                        .insert(id.clone(), ClientRequest::SetMode(session, value));
                    out.to_agent
                        .push(wire::request(&id, "session/set_mode", Value::Object(p)));
                } else {
                    if params.get("type").and_then(Value::as_str) == Some("id") {
                        params.remove("type");
                    }
                    self.requests
                        .insert(id.clone(), ClientRequest::SetConfig(session));
                    out.to_agent
                        .push(wire::request(&id, method, Value::Object(params)));
                }
            }
            _ => {
                self.requests.insert(id, ClientRequest::Other);
                out.to_agent.push(line.to_owned());
            }
        }
    }

    pub(crate) fn up_from_agent(&mut self, line: &str, frame: &Frame<'_>, out: &mut Translated) {
        match (frame.method.as_deref(), frame.id_key()) {
            (Some("session/update"), None) => self.up_update_malformed(frame, out),
            (Some(method), Some(id)) => self.up_agent_request(line, method, &id, frame, out),
            (Some(_), None) => out.to_client.push(line.to_owned()),
            (None, Some(id)) => self.up_response(line, &id, frame, out),
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

    fn up_agent_request(
        &mut self,
        line: &str,
        method: &str,
        id: &str,
        frame: &Frame<'_>,
        out: &mut Translated,
    ) {
        if method == "session/request_permission" {
            let mut params = wire::object_of(frame.params).unwrap_or_default();
            let mut tool = match params.remove("toolCall") {
                Some(Value::Object(t)) => t,
                _ => Map::new(),
            };
            tool_v1_to_v2(&mut tool);
            let title = match tool.get("title").and_then(Value::as_str) {
                Some(t) if !t.is_empty() => t.to_owned(),
                _ => format!(
                    "Allow tool call {}?",
                    tool.get("toolCallId").and_then(Value::as_str).unwrap_or("")
                ),
            };
            params.insert("title".into(), title.into());
            params.insert(
                "subject".into(),
                json!({"type": "tool_call", "toolCall": tool}),
            );
            out.to_client
                .push(wire::request(id, method, Value::Object(params)));
        } else if method.starts_with("fs/") || method.starts_with("terminal/") {
            out.diag(
                Severity::Warning,
                "client_method_unavailable",
                format!("the v1 agent called {method}, which v2 clients do not offer"),
            );
            out.to_agent.push(wire::error_response(
                id,
                -32601,
                &format!("{method} is not available: the client speaks ACP v2"),
                None,
            ));
        } else {
            out.to_client.push(line.to_owned());
        }
    }

    fn up_response(&mut self, line: &str, id: &str, frame: &Frame<'_>, out: &mut Translated) {
        if let Some(prompt) = self.up.prompts.remove(id) {
            let mut idle = Map::new();
            idle.insert("sessionUpdate".into(), tags::STATE_UPDATE.into());
            idle.insert("state".into(), "idle".into());
            if let Some(error) = frame.error {
                // The v1 turn failed after the v2 prompt was accepted: v2 says
                // an accepted prompt ends with idle + stopReason `error`.
                idle.insert("stopReason".into(), "error".into());
                idle.insert("error".into(), wire::value_of(Some(error)));
            } else {
                let result = wire::object_of(frame.result).unwrap_or_default();
                let stop = result
                    .get("stopReason")
                    .cloned()
                    .unwrap_or_else(|| "end_turn".into());
                idle.insert("stopReason".into(), stop);
                if let Some(usage) = result.get("usage").filter(|u| !u.is_null()) {
                    idle.insert("usage".into(), usage.clone());
                }
            }
            self.up.session(&prompt.session).open = None;
            out.to_client
                .push(wire::update_line(&prompt.session, Value::Object(idle)));
            return;
        }
        let Some(request) = self.take_pending_request(id, out) else {
            return;
        };
        if frame.error.is_some() {
            out.to_client.push(line.to_owned());
            return;
        }
        let mut result = wire::object_of(frame.result).unwrap_or_default();
        match request {
            ClientRequest::NewSession => {
                let session = result
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                self.up_session_result(&session, &mut result);
                out.to_client
                    .push(wire::response(id, &Value::Object(result)));
            }
            ClientRequest::Load(session) | ClientRequest::Resume(session) => {
                self.up_session_result(&session, &mut result);
                self.up.session(&session).open = None;
                // v2: resume reports the current state before its response.
                out.to_client.push(wire::update_line(
                    &session,
                    json!({"sessionUpdate": tags::STATE_UPDATE, "state": "idle"}),
                ));
                out.to_client
                    .push(wire::response(id, &Value::Object(result)));
            }
            ClientRequest::SetMode(session, value) => {
                if let Some(modes) = self.up.session(&session).modes.as_mut() {
                    modes["currentModeId"] = value.into();
                }
                let options = self.up.all_options(&session);
                out.to_client
                    .push(wire::response(id, &json!({ "configOptions": options })));
            }
            ClientRequest::SetConfig(session) => {
                if let Some(Value::Array(options)) = result.remove("configOptions") {
                    self.up.session(&session).options = shapes::config_options_v1_to_v2(&options);
                }
                let options = self.up.all_options(&session);
                result.insert("configOptions".into(), Value::Array(options));
                out.to_client
                    .push(wire::response(id, &Value::Object(result)));
            }
            _ => out.to_client.push(line.to_owned()),
        }
    }

    /// session/new|load|resume result: modes become a config option.
    fn up_session_result(&mut self, session: &str, result: &mut Map<String, Value>) {
        let modes = result.remove("modes").filter(|m| !m.is_null());
        let options = match result.remove("configOptions") {
            Some(Value::Array(o)) => shapes::config_options_v1_to_v2(&o),
            _ => Vec::new(),
        };
        let s = self.up.session(session);
        let taken = |id: &str| options.iter().any(|o| o["configId"] == id);
        s.mode_config_id = modes.as_ref().map(|_| {
            if taken("mode") {
                "_spindle_mode".to_owned()
            } else {
                "mode".to_owned()
            }
        });
        s.modes = modes;
        s.options = options;
        let all = self.up.all_options(session);
        if !all.is_empty() {
            result.insert("configOptions".into(), Value::Array(all));
        }
    }

    /// The hot path from the scanner: message chunks. False when the line
    /// needs the general path.
    pub(crate) fn up_fast(&mut self, line: &str, f: &UpdateView<'_>, out: &mut Translated) -> bool {
        let Some(kind) = chunk_kind(f.tag) else {
            return false;
        };
        let boundary = f.meta.is_some_and(|m| m.contains(CLEAR_BOUNDARY_FLAG));
        self.up_chunk(
            line,
            f.session_id,
            f.update,
            kind,
            f.message_id,
            boundary,
            out,
        );
        true
    }

    /// A v1 chunk: relayed verbatim, or with a spliced minted messageId.
    #[allow(clippy::too_many_arguments)]
    fn up_chunk(
        &mut self,
        line: &str,
        session_id: &str,
        update: &str,
        kind: MessageKind,
        message_id: Option<&str>,
        boundary: bool,
        out: &mut Translated,
    ) {
        let up = &mut self.up;
        if !boundary
            && let (Some(id), Some((s, k, m))) = (message_id, &up.last_chunk)
            && *k == kind
            && m == id
            && s == session_id
        {
            // The same message goes on: `open` already names it.
            out.to_client.push(line.to_owned());
            return;
        }
        up.last_chunk = None;
        if !up.sessions.contains_key(session_id) {
            up.sessions
                .insert(session_id.to_owned(), UpSession::default());
        }
        let Some(session) = up.sessions.get_mut(session_id) else {
            return;
        };
        if boundary {
            session.open = None;
        }
        match message_id {
            Some(id) => {
                let same = matches!(&session.open, Some((k, o)) if *k == kind && o == id);
                if !same {
                    session.open = Some((kind, id.to_owned()));
                }
                up.last_chunk = Some((session_id.to_owned(), kind, id.to_owned()));
                out.to_client.push(line.to_owned());
            }
            None => {
                if !matches!(&session.open, Some((k, _)) if *k == kind) {
                    up.next_id += 1;
                    session.open = Some((kind, format!("spindle-msg-{}", up.next_id)));
                }
                let id = match &session.open {
                    Some((_, id)) => id.as_str(),
                    None => "",
                };
                // Minted ids need no escaping: quoted in place, no allocation.
                match wire::splice_first_field(line, update, "messageId", id) {
                    Some(l) => out.to_client.push(l),
                    None => out.diag(
                        Severity::Error,
                        "splice_failed",
                        "could not add a messageId to a chunk".into(),
                    ),
                }
            }
        }
    }

    /// The serde path: message chunks are relayed with at most a spliced
    /// messageId; everything else goes through [`Bridge::up_update_slow`].
    /// A session/update whose params did not parse as `{sessionId, update}`.
    fn up_update_malformed(&mut self, frame: &Frame<'_>, out: &mut Translated) {
        let detail = match frame.params {
            None => "session/update without params".to_owned(),
            Some(p) => match serde_json::from_str::<UpdateParams<'_>>(p.get()) {
                Err(e) => format!("session/update params: {e}"),
                Ok(_) => "session/update could not be read".to_owned(),
            },
        };
        out.diag(Severity::Warning, "malformed_update", detail);
    }

    pub(crate) fn up_update(&mut self, line: &str, params: UpdateParams<'_>, out: &mut Translated) {
        let head: Option<UpdateHead<'_>> = serde_json::from_str(params.update.get()).ok();
        if let Some(head) = head
            && let Some(kind) = chunk_kind(&head.tag)
            // `messageId: null` must be replaced, not shadowed by a splice.
            && (head.message_id.is_some() || !params.update.get().contains("\"messageId\""))
        {
            let boundary = head
                .meta
                .is_some_and(|m| m.get().contains(CLEAR_BOUNDARY_FLAG));
            let id = head.message_id.as_deref();
            self.up_chunk(
                line,
                &params.session_id,
                params.update.get(),
                kind,
                id,
                boundary,
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
        self.up_update_slow(&session, update, out);
    }

    fn up_update_slow(&mut self, session: &str, mut u: Map<String, Value>, out: &mut Translated) {
        let tag = u
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let emit = |out: &mut Translated, u: Map<String, Value>| {
            out.to_client
                .push(wire::update_line(session, Value::Object(u)));
        };
        let Some(known) = UpdateTag::parse(&tag) else {
            out.diag(
                Severity::Info,
                "unknown_update",
                format!("update {tag:?} forwarded as an unknown v2 update"),
            );
            emit(out, u);
            return;
        };
        if let Some(kind) = MessageKind::of_chunk(known) {
            // A chunk whose messageId is not a string: v1 reads it as none.
            let s = self.up.session(session);
            let id = match &s.open {
                Some((k, id)) if *k == kind => id.clone(),
                _ => {
                    let id = self.up.mint("msg");
                    self.up.session(session).open = Some((kind, id.clone()));
                    id
                }
            };
            u.insert("messageId".into(), id.into());
            emit(out, u);
            return;
        }
        match known {
            UpdateTag::ToolCall | UpdateTag::ToolCallUpdate => {
                self.up.session(session).open = None;
                u.insert("sessionUpdate".into(), tags::TOOL_CALL_UPDATE.into());
                tool_v1_to_v2(&mut u);
                emit(out, u);
            }
            UpdateTag::Plan => emit(out, plan_v1_to_v2(u)),
            UpdateTag::CurrentModeUpdate => self.up_current_mode(session, &u, out),
            UpdateTag::ConfigOptionUpdate => {
                if let Some(Value::Array(options)) = u.remove("configOptions") {
                    self.up.session(session).options = shapes::config_options_v1_to_v2(&options);
                }
                u.insert(
                    "configOptions".into(),
                    Value::Array(self.up.all_options(session)),
                );
                emit(out, u);
            }
            UpdateTag::AvailableCommandsUpdate => {
                if let Some(commands) = u.get_mut("availableCommands") {
                    shapes::commands_v1_to_v2(commands);
                }
                emit(out, u);
            }
            UpdateTag::AgentMessageClear | UpdateTag::AgentThoughtClear => {
                self.up_clear(session, known, &u, out)
            }
            UpdateTag::SessionCleared => {
                self.up.session(session).open = None;
                if self.client_ext.contains(Extension::SessionCleared) {
                    emit(out, u);
                } else {
                    out.diag(
                        Severity::Info,
                        "extension_not_negotiated",
                        format!("{tag} not sent: the client did not opt into it"),
                    );
                }
            }
            UpdateTag::CompactionUpdate | UpdateTag::CompactionSummaryChunk => {
                self.up.session(session).open = None;
                emit(out, u);
            }
            UpdateTag::UsageUpdate
            | UpdateTag::SessionInfoUpdate
            | UpdateTag::Notice
            | UpdateTag::PlanUpdate
            | UpdateTag::PlanRemoved => emit(out, u),
            _ => {
                out.diag(
                    Severity::Info,
                    "unknown_update",
                    format!("update {tag:?} forwarded as an unknown v2 update"),
                );
                emit(out, u);
            }
        }
    }

    /// v1 `current_mode_update`: the mode config option changes value.
    fn up_current_mode(&mut self, session: &str, u: &Map<String, Value>, out: &mut Translated) {
        let mode = u.get("currentModeId").cloned().unwrap_or(Value::Null);
        let s = self.up.session(session);
        match s.modes.as_mut() {
            Some(modes) => {
                modes["currentModeId"] = mode;
                let options = self.up.all_options(session);
                out.to_client.push(wire::update_line(
                    session,
                    json!({"sessionUpdate": tags::CONFIG_OPTION_UPDATE, "configOptions": options}),
                ));
            }
            None => out.diag(
                Severity::Warning,
                "mode_without_modes",
                format!(
                    "{} to {mode} for a session that reported no modes; not shown",
                    tags::CURRENT_MODE_UPDATE
                ),
            ),
        }
    }

    /// A v1 `agent_message_clear` / `agent_thought_clear`: the v2 upsert of
    /// the named (or open) message with empty content.
    fn up_clear(
        &mut self,
        session: &str,
        tag: UpdateTag,
        u: &Map<String, Value>,
        out: &mut Translated,
    ) {
        let kind = if tag == UpdateTag::AgentMessageClear {
            MessageKind::Agent
        } else {
            MessageKind::Thought
        };
        let s = self.up.session(session);
        let id = match u.get("messageId").and_then(Value::as_str) {
            Some(id) => Some(id.to_owned()),
            None => match &s.open {
                Some((k, id)) if *k == kind => Some(id.clone()),
                _ => None,
            },
        };
        match id {
            Some(id) => out.to_client.push(wire::update_line(
                session,
                json!({"sessionUpdate": kind.upsert_tag().as_str(), "messageId": id, "content": []}),
            )),
            None => out.diag(
                Severity::Info,
                "clear_without_message",
                format!("{tag} with no message streaming: nothing to clear"),
            ),
        }
    }
}

/// A v1 `plan` as the v2 `plan_update` of the plan `main`.
fn plan_v1_to_v2(mut u: Map<String, Value>) -> Map<String, Value> {
    let entries = u.remove("entries").unwrap_or_else(|| json!([]));
    let mut p = Map::new();
    p.insert("sessionUpdate".into(), tags::PLAN_UPDATE.into());
    p.insert(
        "plan".into(),
        json!({"type": "items", "planId": "main", "entries": entries}),
    );
    if let Some(meta) = u.remove(META_KEY) {
        p.insert(META_KEY.into(), meta);
    }
    p
}
