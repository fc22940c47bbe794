//! Handshake and session setup, v1 client in front of a v2 agent (BRIDGE.md
//! "Handshake and session setup"): the client's v1 requests lifted to v2,
//! the agent's answers and requests brought back to v1, v2 config options
//! shown as v1 modes.

use serde_json::{Map, Value, json};
use spindle_wire::client_methods::{
    AUTH_LOGIN, AUTH_LOGOUT, AUTHENTICATE, ELICITATION_CREATE, LOGOUT, SESSION_FORK, SESSION_LOAD,
    SESSION_NEW, SESSION_PROMPT, SESSION_REQUEST_PERMISSION, SESSION_RESUME,
    SESSION_SET_CONFIG_OPTION, SESSION_SET_MODE, SESSION_UPDATE,
};
use spindle_wire::meta::META_KEY;

use crate::shapes;
use crate::state::Bridge;
use crate::types::{ClientRequest, Severity, Translated, owned_str, session_of};
use crate::wire::{self, Frame};

impl Bridge {
    pub(crate) fn down_from_client(&mut self, line: &str, frame: &Frame<'_>, out: &mut Translated) {
        let (Some(method), Some(id)) = (frame.method.as_deref(), frame.id_key()) else {
            out.to_agent.push(line.to_owned());
            return;
        };
        let mut params = wire::object_of(frame.params).unwrap_or_default();
        let session = session_of(&params);
        match method {
            SESSION_PROMPT => self.down_prompt_request(line, id, session, out),
            // A fork answers like session/new: a new session, its options.
            SESSION_NEW | SESSION_FORK => {
                convert_mcp(&mut params, out);
                self.requests.insert(id.clone(), ClientRequest::NewSession);
                out.to_agent
                    .push(wire::request(&id, method, Value::Object(params)));
            }
            SESSION_LOAD => {
                convert_mcp(&mut params, out);
                params.insert("replayFrom".into(), json!({"type": "start"}));
                self.requests
                    .insert(id.clone(), ClientRequest::Load(session));
                out.to_agent
                    .push(wire::request(&id, SESSION_RESUME, Value::Object(params)));
            }
            SESSION_RESUME => {
                convert_mcp(&mut params, out);
                self.requests
                    .insert(id.clone(), ClientRequest::Resume(session));
                out.to_agent
                    .push(wire::request(&id, method, Value::Object(params)));
            }
            SESSION_SET_MODE => self.down_set_mode(&id, session, &params, out),
            SESSION_SET_CONFIG_OPTION => {
                if !params.contains_key("type") && params.get("value").is_some_and(Value::is_string)
                {
                    params.insert("type".into(), "id".into());
                }
                self.requests
                    .insert(id.clone(), ClientRequest::SetConfig(session));
                out.to_agent
                    .push(wire::request(&id, method, Value::Object(params)));
            }
            AUTHENTICATE => {
                if let Some(m) = params.remove("methodId") {
                    params.insert("methodId".into(), m);
                }
                self.requests.insert(id.clone(), ClientRequest::Other);
                out.to_agent
                    .push(wire::request(&id, AUTH_LOGIN, Value::Object(params)));
            }
            LOGOUT => {
                self.requests.insert(id.clone(), ClientRequest::Other);
                out.to_agent
                    .push(wire::request(&id, AUTH_LOGOUT, Value::Object(params)));
            }
            _ => {
                self.requests.insert(id, ClientRequest::Other);
                out.to_agent.push(line.to_owned());
            }
        }
    }

    /// v1 `session/set_mode` -> v2 `session/set_config_option` on the mode
    /// option (a `-32601` error when the agent reported none).
    pub(crate) fn down_set_mode(
        &mut self,
        id: &str,
        session: String,
        params: &Map<String, Value>,
        out: &mut Translated,
    ) {
        let mode = self.down.session(&session).mode.clone();
        let value = owned_str(params.get("modeId"));
        match mode {
            Some((config_id, _)) => {
                let p = json!({
                    "sessionId": session,
                    "configId": config_id,
                    "type": "id",
                    "value": value,
                });
                self.requests
                    .insert(id.to_owned(), ClientRequest::SetMode(session, value));
                out.to_agent
                    .push(wire::request(id, SESSION_SET_CONFIG_OPTION, p));
            }
            None => {
                out.diag(
                    Severity::Warning,
                    "no_mode_option",
                    "session/set_mode: the v2 agent reported no mode config option".into(),
                );
                out.to_client.push(wire::error_response(
                    id,
                    -32601,
                    "this agent has no modes",
                    None,
                ));
            }
        }
    }

    pub(crate) fn down_from_agent(&mut self, line: &str, frame: &Frame<'_>, out: &mut Translated) {
        match (frame.method.as_deref(), frame.id_key()) {
            (Some(SESSION_UPDATE), None) => out.malformed_update_params(frame),
            (Some(SESSION_REQUEST_PERMISSION), Some(id)) => self.down_permission(&id, frame, out),
            (Some(ELICITATION_CREATE), Some(id)) => self.down_elicitation(line, &id, frame, out),
            (Some(_), _) => out.to_client.push(line.to_owned()),
            (None, Some(id)) => self.down_response(line, &id, frame, out),
            (None, None) => out.malformed_agent_line(line),
        }
    }

    pub(crate) fn down_response(
        &mut self,
        line: &str,
        id: &str,
        frame: &Frame<'_>,
        out: &mut Translated,
    ) {
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
                    _ => owned_str(result.get("sessionId")),
                };
                if let Some(Value::Array(options)) = result.remove("configOptions") {
                    self.down_options(&session, &options, &mut result, out);
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
                    self.down_options(&session, &options, &mut result, out);
                    result.remove("modes");
                }
                out.to_client
                    .push(wire::response(id, &Value::Object(result)));
            }
            _ => out.to_client.push(line.to_owned()),
        }
    }
}

/// v1 MCP servers -> v2 (SSE servers have no v2 form and are dropped).
fn convert_mcp(params: &mut Map<String, Value>, out: &mut Translated) {
    if let Some(servers) = params.get_mut("mcpServers") {
        let dropped = shapes::mcp_servers_v1_to_v2(servers);
        if dropped > 0 {
            out.diag(
                Severity::Warning,
                "sse_mcp_server",
                format!("{dropped} SSE MCP server(s) not forwarded: v2 has no SSE transport"),
            );
        }
    }
}
