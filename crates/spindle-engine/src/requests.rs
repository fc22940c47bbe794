//! The JSON-RPC exchange around the updates: the client's requests
//! (prompts, cancel, initialize, load, new session, set mode, set config
//! option), the agent's responses to them (the prompt response ends a v1
//! turn or accepts a v2 prompt; session results and set answers carry modes
//! and config options, see `session_results`) and permission requests with
//! their answers.

use serde_json::{Map, Value};

use crate::config::ProtocolHint;
use crate::content::block_in_from_value;
use crate::core::{ClientRequest, TranscriptEngine};
use crate::ids::MsgKind;
use crate::model::{EntryBody, EntryKind, Message};
use crate::session_results::requested_mode;
use spindle_wire::client_methods::{
    INITIALIZE, SESSION_CANCEL, SESSION_FORK, SESSION_LOAD, SESSION_NEW, SESSION_PROMPT,
    SESSION_REQUEST_PERMISSION, SESSION_RESUME, SESSION_SET_CONFIG_OPTION, SESSION_SET_MODE,
};
use spindle_wire::tags::TOOL_CALL;

impl TranscriptEngine {
    pub(crate) fn agent_response(&mut self, id: String, mut msg: Map<String, Value>) {
        let request = self.client_requests.remove(&id);
        let result = msg.remove("result");
        let error = msg.remove("error");
        match request {
            Some(ClientRequest::Prompt(entry)) => match (result, error) {
                (_, Some(err)) => self.prompt_error(entry, err),
                (Some(res), None) => self.prompt_result(entry, res),
                (None, None) => self.diag(
                    "malformed_response",
                    "prompt response without result or error",
                ),
            },
            Some(ClientRequest::Initialize) => {
                if let Some(version) = result
                    .as_ref()
                    .and_then(|r| r.get("protocolVersion"))
                    .and_then(Value::as_u64)
                    && self.config.protocol == ProtocolHint::Auto
                {
                    self.t.protocol = if version >= 2 { 2 } else { 1 };
                }
            }
            Some(ClientRequest::Load(method)) => {
                // The replayed history is complete: its last turn is over.
                if self.t.state.turn_open {
                    self.close_turn(None, None);
                }
                if let (Some(result), None) = (&result, &error) {
                    self.session_result(method, result);
                    self.v2_session_starts_idle();
                }
            }
            Some(ClientRequest::NewSession) => {
                if let (Some(result), None) = (&result, &error) {
                    self.adopt_session(result.get("sessionId"));
                    self.session_result(SESSION_NEW, result);
                    self.v2_session_starts_idle();
                }
            }
            Some(ClientRequest::SetMode(mode)) => {
                if result.is_some() && error.is_none() {
                    self.set_mode_result(mode);
                }
            }
            Some(ClientRequest::SetConfigOption) => {
                if let (Some(result), None) = (&result, &error) {
                    self.set_config_option_result(result);
                }
            }
            Some(ClientRequest::Other) => {}
            // The client's requests are known: a response to none of the pending ones (an id
            // never sent, or a second answer to one already answered) ends no turn (F2).
            None if self.client_lines_seen => self.diag(
                "unknown_response",
                format!("response to id {id}, which matches no pending request: ignored"),
            ),
            None => {
                // Recordings of the agent side only: a response carrying a
                // stopReason can only answer a v1 prompt.
                if let Some(res) = result.filter(|r| r.get("stopReason").is_some()) {
                    self.prompt_result(self.last_prompt, res);
                }
            }
        }
    }

    pub(crate) fn client_line(&mut self, line: &str) {
        match serde_json::from_str::<Value>(line) {
            Ok(v) => self.client_value(v),
            Err(e) => self.diag("invalid_json", format!("sent line is not JSON: {e}")),
        }
    }

    pub(crate) fn client_value(&mut self, v: Value) {
        let Value::Object(mut msg) = v else {
            return self.diag("not_jsonrpc", "a sent JSON-RPC message must be an object");
        };
        self.client_lines_seen = true;
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg.get("id").filter(|v| !v.is_null()).map(request_key);
        match method.as_deref() {
            Some(SESSION_PROMPT) => {
                let params = msg.remove("params");
                self.adopt_session(params.as_ref().and_then(|p| p.get("sessionId")));
                let prompt = params.and_then(|mut p| p.get_mut("prompt").map(Value::take));
                match prompt {
                    Some(Value::Array(blocks)) => {
                        let idx = self.local_prompt(blocks);
                        self.last_prompt = Some(idx);
                        if let Some(id) = id {
                            self.prompt_entries.insert(id.clone(), idx);
                            self.client_requests
                                .insert(id, ClientRequest::Prompt(Some(idx)));
                        }
                    }
                    _ => {
                        self.diag("malformed_prompt", "session/prompt without a prompt array");
                        if let Some(id) = id {
                            self.client_requests.insert(id, ClientRequest::Prompt(None));
                        }
                    }
                }
            }
            Some(SESSION_CANCEL) => {
                if self.t.state.turn_open && !self.t.state.cancel_requested {
                    self.t.state.cancel_requested = true;
                    self.emit_state();
                }
            }
            Some(INITIALIZE) => {
                if let Some(id) = id {
                    self.client_requests.insert(id, ClientRequest::Initialize);
                }
            }
            Some(m @ (SESSION_LOAD | SESSION_RESUME)) => {
                let method = if m == SESSION_LOAD {
                    SESSION_LOAD
                } else {
                    SESSION_RESUME
                };
                self.adopt_session(msg.get("params").and_then(|p| p.get("sessionId")));
                if let Some(id) = id {
                    self.client_requests.insert(id, ClientRequest::Load(method));
                }
            }
            // A fork is a new session: the transcript moves to it once answered.
            Some(SESSION_NEW | SESSION_FORK) => {
                if let Some(id) = id {
                    self.client_requests.insert(id, ClientRequest::NewSession);
                }
            }
            Some(SESSION_SET_MODE) => {
                if let Some(id) = id {
                    let mode = requested_mode(msg.get("params"));
                    self.client_requests
                        .insert(id, ClientRequest::SetMode(mode));
                }
            }
            Some(SESSION_SET_CONFIG_OPTION) => {
                if let Some(id) = id {
                    self.client_requests
                        .insert(id, ClientRequest::SetConfigOption);
                }
            }
            Some(_) => {
                if let Some(id) = id {
                    self.client_requests.insert(id, ClientRequest::Other);
                }
            }
            None => {
                if let Some(id) = id
                    && !self.fs_write_response(&id, &msg)
                {
                    self.permission_response(&id, msg);
                }
            }
        }
    }

    pub(crate) fn local_prompt(&mut self, blocks: Vec<Value>) -> usize {
        self.begin_turn();
        self.minted += 1;
        let preferred = format!("prompt:{}", self.minted);
        let message = Message {
            pending: true,
            ..Message::default()
        };
        let turn = Some(self.t.state.turns);
        let idx = self.push_entry(
            &preferred,
            EntryKind::UserMessage,
            EntryBody::Message(Box::new(message)),
            turn,
        );
        self.set_content(
            idx,
            blocks.into_iter().map(block_in_from_value).collect(),
            false,
        );
        self.emit_insert(idx);
        self.awaiting_ack.push_back(idx);
        self.set_open(Some((MsgKind::User, idx)));
        idx
    }

    pub(crate) fn prompt_result(&mut self, entry: Option<usize>, result: Value) {
        if let Some(idx) = entry {
            self.set_pending(idx, false);
        }
        let stop = result.get("stopReason");
        let v1_shaped = stop.is_some();
        let v2 = match self.config.protocol {
            ProtocolHint::V1 => false,
            ProtocolHint::V2 => true,
            ProtocolHint::Auto => !v1_shaped,
        };
        if v2 {
            self.note_v2();
            // Acceptance: the prompt was inserted; the turn goes on.
            if let (Some(idx), Some(Value::String(mid))) = (entry, result.get("messageId")) {
                self.alias_user_message(idx, mid);
            }
            return;
        }
        // v1: the prompt is answered; no acknowledgement will follow.
        self.awaiting_ack.clear();
        let stop_reason = match stop {
            Some(Value::String(s)) => Some(s.clone()),
            _ => {
                self.diag(
                    "malformed_response",
                    "v1 prompt response without a stopReason string",
                );
                None
            }
        };
        self.end_turn(stop_reason, None);
    }

    pub(crate) fn prompt_error(&mut self, entry: Option<usize>, error: Value) {
        if let Some(idx) = entry {
            self.awaiting_ack.retain(|&p| p != idx);
            self.set_pending(idx, false);
            if self.t.protocol == 2 {
                if let EntryBody::Message(m) = &mut self.t.entries[idx].body {
                    m.rejected = true;
                }
                self.emit_update(idx);
            }
        }
        self.end_turn(None, Some(error));
    }

    fn set_pending(&mut self, idx: usize, pending: bool) {
        if let EntryBody::Message(m) = &mut self.t.entries[idx].body
            && m.pending != pending
        {
            m.pending = pending;
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
                let Some(idx) = self.tool_upsert(SESSION_REQUEST_PERMISSION, tc) else {
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
    fn permission_response(&mut self, request_id: &str, msg: Map<String, Value>) {
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
}

impl TranscriptEngine {
    /// Names who sent the prompt of client request `request` (its key, [`request_key`]).
    /// `false` when no prompt went out under that id.
    pub(crate) fn set_prompt_author(&mut self, request: &str, author: &str) -> bool {
        let Some(&idx) = self.prompt_entries.get(request) else {
            return false;
        };
        if let EntryBody::Message(m) = &mut self.t.entries[idx].body {
            m.author = Some(author.to_owned());
        }
        self.emit_update(idx);
        true
    }

    /// Names who answers the open permission request `request` (`answeredBy` on its
    /// record); noted before the answer goes out. `false` when no such request is open.
    pub(crate) fn set_permission_author(&mut self, request: &str, author: &str) -> bool {
        let Some(&idx) = self.permission_requests.get(request) else {
            return false;
        };
        let record = match &mut self.t.entries[idx].body {
            EntryBody::ToolCall(tc) => tc.permission.as_deref_mut(),
            EntryBody::Raw(raw) => raw.get_mut("permission"),
            _ => None,
        };
        if let Some(Value::Object(record)) = record {
            record.insert("answeredBy".into(), Value::from(author));
        }
        self.emit_update(idx);
        true
    }
}

/// Request ids compare by their JSON text (`1` and `"1"` differ, as in JSON-RPC).
pub(crate) fn request_key(id: &Value) -> String {
    id.to_string()
}
