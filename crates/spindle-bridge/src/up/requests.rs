//! Handshake and session setup, v2 client in front of a v1 agent (BRIDGE.md
//! "Handshake and session setup", permissions): the client's v2 requests
//! lowered to v1, the agent's answers and requests lifted to v2, v1 modes
//! shown as a `mode` config option.

use serde_json::{Map, Value, json};
use spindle_wire::client_methods::{
    AUTH_LOGIN, AUTH_LOGOUT, AUTHENTICATE, ELICITATION_CREATE, LOGOUT, SESSION_FORK, SESSION_LOAD,
    SESSION_NEW, SESSION_PROMPT, SESSION_REQUEST_PERMISSION, SESSION_RESUME,
    SESSION_SET_CONFIG_OPTION, SESSION_SET_MODE, SESSION_UPDATE,
};
use spindle_wire::tags;

use crate::shapes;
use crate::state::Bridge;
use crate::types::{ClientRequest, Severity, TOOL_CALL_SUBJECT, Translated, owned_str, session_of};
use crate::wire::{self, Frame};

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
            SESSION_PROMPT => self.up_prompt_request(&id, frame, session, params, out),
            // A fork answers like session/new: a new session, its modes.
            SESSION_NEW | SESSION_FORK => {
                lower_mcp(&mut params, out);
                self.requests.insert(id.clone(), ClientRequest::NewSession);
                out.to_agent
                    .push(wire::request(&id, method, Value::Object(params)));
            }
            AUTH_LOGIN => {
                self.requests.insert(id.clone(), ClientRequest::Other);
                out.to_agent
                    .push(wire::request(&id, AUTHENTICATE, Value::Object(params)));
            }
            AUTH_LOGOUT if !self.agent_logout => {
                out.diag(
                    Severity::Warning,
                    "logout_not_advertised",
                    "answered auth/logout with -32601: the v1 agent does not advertise \
                     agentCapabilities.auth.logout"
                        .into(),
                );
                out.to_client.push(wire::error_response(
                    &id,
                    -32601,
                    "logout is not available: the (v1) agent does not advertise agentCapabilities.auth.logout",
                    None,
                ));
            }
            AUTH_LOGOUT => {
                self.requests.insert(id.clone(), ClientRequest::Other);
                out.to_agent
                    .push(wire::request(&id, LOGOUT, Value::Object(params)));
            }
            SESSION_RESUME => self.up_resume(id, method, session, params, out),
            SESSION_SET_CONFIG_OPTION => {
                let mode_id = self
                    .up
                    .sessions
                    .get(&session)
                    .and_then(|s| s.mode_config_id.clone());
                let config_id = params.get("configId").and_then(Value::as_str);
                if mode_id.is_some() && config_id == mode_id.as_deref() {
                    let value = owned_str(params.get("value"));
                    let mut p = Map::new();
                    p.insert("sessionId".into(), session.clone().into());
                    p.insert("modeId".into(), value.clone().into());
                    self.requests
                        .insert(id.clone(), ClientRequest::SetMode(session, value));
                    out.to_agent
                        .push(wire::request(&id, SESSION_SET_MODE, Value::Object(p)));
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

    /// v2 `session/resume`: plain, or with `replayFrom: start` as v1
    /// `session/load`; any other cursor is refused with `-32602`.
    pub(crate) fn up_resume(
        &mut self,
        id: String,
        method: &str,
        session: String,
        mut params: Map<String, Value>,
        out: &mut Translated,
    ) {
        let replay = params.remove("replayFrom").unwrap_or(Value::Null);
        match replay.get("type").and_then(Value::as_str) {
            None if replay.is_null() => {
                if params.contains_key("mcpServers") {
                    lower_mcp(&mut params, out);
                }
                self.requests
                    .insert(id.clone(), ClientRequest::Resume(session));
                out.to_agent
                    .push(wire::request(&id, method, Value::Object(params)));
            }
            Some("start") => {
                lower_mcp(&mut params, out);
                self.up.session(&session).open = None;
                self.requests
                    .insert(id.clone(), ClientRequest::Load(session));
                out.to_agent
                    .push(wire::request(&id, SESSION_LOAD, Value::Object(params)));
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

    pub(crate) fn up_from_agent(&mut self, line: &str, frame: &Frame<'_>, out: &mut Translated) {
        match (frame.method.as_deref(), frame.id_key()) {
            (Some(SESSION_UPDATE), None) => out.malformed_update_params(frame),
            (Some(method), Some(id)) => self.up_agent_request(line, method, &id, frame, out),
            (Some(_), None) => out.to_client.push(line.to_owned()),
            (None, Some(id)) => self.up_response(line, &id, frame, out),
            (None, None) => out.malformed_agent_line(line),
        }
    }

    pub(crate) fn up_agent_request(
        &mut self,
        line: &str,
        method: &str,
        id: &str,
        frame: &Frame<'_>,
        out: &mut Translated,
    ) {
        if method == ELICITATION_CREATE {
            self.up_elicitation(line, id, frame, out);
        } else if method == SESSION_REQUEST_PERMISSION {
            let mut params = wire::object_of(frame.params).unwrap_or_default();
            let mut tool = match params.remove("toolCall") {
                Some(Value::Object(t)) => t,
                _ => Map::new(),
            };
            shapes::tool_v1_to_v2(&mut tool);
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
                json!({"type": TOOL_CALL_SUBJECT, "toolCall": tool}),
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

    pub(crate) fn up_response(
        &mut self,
        line: &str,
        id: &str,
        frame: &Frame<'_>,
        out: &mut Translated,
    ) {
        if let Some(prompt) = self.up.prompts.remove(id) {
            self.up_prompt_answered(prompt, frame, out);
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
                let session = owned_str(result.get("sessionId"));
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
    pub(crate) fn up_session_result(&mut self, session: &str, result: &mut Map<String, Value>) {
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
}

/// v2 MCP servers -> v1 (`mcpServers` is required in v1: `[]` when absent);
/// a server of a type v1 lacks is not forwarded, with a warning.
fn lower_mcp(params: &mut Map<String, Value>, out: &mut Translated) {
    let servers = params.entry("mcpServers").or_insert_with(|| json!([]));
    let removed = shapes::mcp_servers_v2_to_v1(servers);
    if !removed.is_empty() {
        out.diag(
            Severity::Warning,
            "mcp_server_type",
            format!(
                "MCP server(s) not forwarded, v1 has no such transport: {}",
                removed.join(", ")
            ),
        );
    }
}
