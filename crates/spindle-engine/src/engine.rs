//! The engine: input dispatch, entry bookkeeping, turns and state.

use serde_json::{Map, Value};

use crate::keys::EntryKeys;
use crate::model::{Entry, EntryBody, EntryKind, Message, SessionState, Transcript};
use crate::ops::{Applied, Diagnostic, RenderOp};
use crate::wire::{EnvelopeProbe, LineProbe, ParamsProbe, RawParamsProbe, looks_like_chunk};
use crate::{EngineConfig, ProtocolHint};
use spindle_wire::hash::{FxHashMap, FxHashSet};
use spindle_wire::scan;
use spindle_wire::tags::MessageKind;

/// The four message identity spaces (ACP gives each message type its own ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MsgKind {
    User = 0,
    Agent = 1,
    Thought = 2,
    PlanText = 3,
}

impl From<MessageKind> for MsgKind {
    fn from(kind: MessageKind) -> MsgKind {
        match kind {
            MessageKind::User => MsgKind::User,
            MessageKind::Agent => MsgKind::Agent,
            MessageKind::Thought => MsgKind::Thought,
        }
    }
}

impl MsgKind {
    pub(crate) fn entry_kind(self) -> EntryKind {
        match self {
            MsgKind::User => EntryKind::UserMessage,
            MsgKind::Agent => EntryKind::AgentMessage,
            MsgKind::Thought => EntryKind::AgentThought,
            MsgKind::PlanText => EntryKind::PlanText,
        }
    }
}

/// Id spaces of addressable entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Domain {
    Msg(MsgKind),
    Tool,
    Terminal,
    Compaction,
    Plan,
}

/// What a request the client sent was, so its response can be recognised.
#[derive(Debug, Clone, Copy)]
enum ClientRequest {
    Prompt(Option<usize>),
    Initialize,
    /// `session/load` / `session/resume`: its response ends the history replay.
    Load,
    /// `session/new`: its result names the session updates must belong to.
    NewSession,
    Other,
}

/// The sans-I/O transcript engine. See the crate docs.
///
/// `Clone` gives an independent copy (for example to fork a view for a new
/// observer); `Default` is `new(EngineConfig::default())`.
#[derive(Debug, Clone)]
pub struct TranscriptEngine {
    pub(crate) config: EngineConfig,
    pub(crate) t: Transcript,
    pub(crate) keys: EntryKeys,
    /// Fingerprints of every entry id given out (see `alloc_id`).
    ids: FxHashSet<u64>,
    /// Last (messageId, index) hit per message kind: chunks repeat the same id.
    pub(crate) last_hit: [Option<(String, usize)>; 4],
    /// The message id-less chunks of its kind append to (v1 boundaries).
    pub(crate) open: Option<(MsgKind, usize)>,
    /// Prompts the client sent that no user-message update has acknowledged
    /// yet, oldest first (acknowledgements arrive in send order).
    pub(crate) awaiting_ack: std::collections::VecDeque<usize>,
    /// The most recent prompt the client sent (for `apply_prompt_response`).
    last_prompt: Option<usize>,
    client_requests: FxHashMap<String, ClientRequest>,
    /// The client's own lines are part of the input (not an agent-only recording): a response
    /// is then matched to its request by id only.
    client_lines_seen: bool,
    /// Agent request id -> entry index of the permission it asked about.
    pub(crate) permission_requests: FxHashMap<String, usize>,
    pub(crate) minted: u64,
    /// The last idle came from a v2 `state_update`: output now is background work.
    pub(crate) explicit_idle: bool,
    /// Line number for diagnostics of the current input.
    line: Option<u64>,
    lines_seen: u64,
    next_line: Option<u64>,
    pub(crate) out: Applied,
    /// Build render ops (off in batch replay, where nobody renders).
    pub(crate) ops_on: bool,
    /// One record per turn started, in order.
    pub(crate) turn_log: Vec<TurnRecord>,
}

/// How a turn ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnRecord {
    pub finished: bool,
    pub stop_reason: Option<String>,
}

impl Default for TranscriptEngine {
    fn default() -> Self {
        TranscriptEngine::new(EngineConfig::default())
    }
}

impl TranscriptEngine {
    /// A new engine with an empty transcript.
    pub fn new(config: EngineConfig) -> Self {
        let protocol = match config.protocol {
            ProtocolHint::V2 => 2,
            ProtocolHint::Auto | ProtocolHint::V1 => 1,
        };
        TranscriptEngine {
            config,
            t: Transcript {
                protocol,
                ..Transcript::default()
            },
            keys: EntryKeys::default(),
            ids: FxHashSet::default(),
            last_hit: [None, None, None, None],
            open: None,
            awaiting_ack: std::collections::VecDeque::new(),
            last_prompt: None,
            client_requests: FxHashMap::default(),
            client_lines_seen: false,
            permission_requests: FxHashMap::default(),
            minted: 0,
            explicit_idle: false,
            line: None,
            lines_seen: 0,
            next_line: None,
            out: Applied::default(),
            ops_on: true,
            turn_log: Vec::new(),
        }
    }

    /// Sets the 1-based line number that diagnostics of the next `apply_*_line`
    /// call report (replay uses the file's line numbers, blank lines included).
    /// Without it, lines are numbered by counting `apply_*_line` calls.
    pub fn set_next_line_number(&mut self, line: u64) {
        self.next_line = Some(line);
    }

    fn begin_line(&mut self) {
        self.lines_seen += 1;
        let n = self.next_line.take().unwrap_or(self.lines_seen);
        self.lines_seen = n;
        self.line = Some(n);
    }

    fn finish(&mut self) -> Applied {
        self.line = None;
        std::mem::take(&mut self.out)
    }

    /// Turns render ops on (the default) or off. With ops off, every `apply_*`
    /// returns an empty `ops` list (diagnostics still come back) and the engine
    /// skips building entry views: batch replay (`spindle replay`) uses this.
    /// [`Self::render_snapshot`] works either way.
    pub fn set_render_ops(&mut self, enabled: bool) {
        self.ops_on = enabled;
    }

    /// The transcript as it stands.
    pub fn transcript(&self) -> &Transcript {
        &self.t
    }

    /// The configuration the engine was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    // ----- inputs -------------------------------------------------------

    /// One JSON-RPC message (one wire line) the client received from the agent:
    /// `session/update` notifications, the response to `session/prompt` (v1: ends
    /// the turn with its stopReason; v2: acceptance), `session/request_permission`
    /// (recorded on the tool call; v1: `requires_action`); anything else is ignored.
    pub fn apply_agent_line(&mut self, line: &str) -> Applied {
        self.begin_line();
        self.agent_line(line);
        self.finish()
    }

    /// One JSON-RPC message the client sent: `session/prompt` becomes a user
    /// message entry and starts a turn (its request id is tracked so the
    /// matching response is recognised), `session/cancel` is noted, a response
    /// to `session/request_permission` records the outcome.
    pub fn apply_client_line(&mut self, line: &str) -> Applied {
        self.begin_line();
        self.client_line(line);
        self.finish()
    }

    /// One line of a recording (the `spindle replay` input format): a bare
    /// JSON-RPC message is one the client received; `{"sent": <message>}` is one
    /// the client sent.
    pub fn apply_recorded_line(&mut self, line: &str) -> Applied {
        self.begin_line();
        self.received_line(line, true);
        self.finish()
    }

    /// The `params` object of one `session/update` notification (with
    /// `sessionId` and `update`), as JSON text.
    pub fn apply_session_update(&mut self, params_json: &str) -> Applied {
        self.session_update_params(params_json);
        self.finish()
    }

    /// Decodes `session/update` params the way [`Self::received_line`] decodes
    /// whole lines: plain text chunks in one borrowed pass, other updates by
    /// decoding only the update into a `Value`, anything the probes cannot
    /// represent exactly as a whole `Value` (same result, more work).
    fn session_update_params(&mut self, params_json: &str) {
        if let Some(chunk) = scan::plain_chunk_params(params_json)
            && self.try_plain_chunk(chunk)
        {
            return;
        }
        if looks_like_chunk(params_json)
            && let Ok(params) = serde_json::from_str::<ParamsProbe<'_>>(params_json)
            && let Some(update) = params.update
            && self.try_fast_chunk(params.session_id.as_deref(), update)
        {
            return;
        }
        if let Ok(params) = serde_json::from_str::<RawParamsProbe<'_>>(params_json)
            && let Some(update) = params.update
        {
            // A raw value is valid JSON: this parse cannot fail.
            if let Ok(v) = serde_json::from_str::<Value>(update.get()) {
                return self.update_value(params.session_id.as_deref(), v);
            }
        }
        match serde_json::from_str::<Value>(params_json) {
            Ok(Value::Object(mut params)) => self.update_params(&mut params),
            Ok(_) => self.diag(
                "malformed_update",
                "session/update params must be an object",
            ),
            Err(e) => self.diag("invalid_json", format!("params are not JSON: {e}")),
        }
    }

    /// The response to the client's latest `session/prompt`: `Ok(result JSON)` or
    /// `Err(error object JSON)`.
    pub fn apply_prompt_response(&mut self, response: Result<&str, &str>) -> Applied {
        let entry = self.last_prompt;
        match response {
            Ok(text) => match serde_json::from_str::<Value>(text) {
                Ok(v) => self.prompt_result(entry, v),
                Err(e) => self.diag("invalid_json", format!("prompt result is not JSON: {e}")),
            },
            Err(text) => match serde_json::from_str::<Value>(text) {
                Ok(v) => self.prompt_error(entry, v),
                Err(e) => self.diag("invalid_json", format!("prompt error is not JSON: {e}")),
            },
        }
        self.finish()
    }

    /// The client's own prompt (a JSON array of content blocks), for callers
    /// that do not go through [`Self::apply_client_line`].
    pub fn apply_user_prompt(&mut self, prompt_blocks_json: &str) -> Applied {
        match serde_json::from_str::<Value>(prompt_blocks_json) {
            Ok(Value::Array(blocks)) => {
                let idx = self.local_prompt(blocks);
                self.last_prompt = Some(idx);
            }
            Ok(_) => self.diag(
                "malformed_prompt",
                "a prompt must be an array of content blocks",
            ),
            Err(e) => self.diag("invalid_json", format!("prompt is not JSON: {e}")),
        }
        self.finish()
    }

    // ----- line dispatch --------------------------------------------------

    fn agent_line(&mut self, line: &str) {
        self.received_line(line, false);
    }

    /// Decodes one received (or, with `recorded`, possibly `{"sent": ..}`)
    /// line: plain text chunks in one borrowed pass, other updates by decoding
    /// only the update into a `Value`, anything else as a whole `Value`.
    fn received_line(&mut self, line: &str, recorded: bool) {
        if let Some(chunk) = scan::plain_chunk_line(line)
            && self.try_plain_chunk(chunk)
        {
            return;
        }
        if looks_like_chunk(line)
            && let Ok(probe) = serde_json::from_str::<LineProbe<'_>>(line)
            && probe.sent.is_none()
            && probe.method.as_deref() == Some("session/update")
            && let Some(params) = probe.params
            && let Some(update) = params.update
            && self.try_fast_chunk(params.session_id.as_deref(), update)
        {
            return;
        }
        if let Ok(probe) = serde_json::from_str::<EnvelopeProbe<'_>>(line) {
            if let Some(sent) = probe.sent {
                if recorded {
                    return self.client_line(sent.get());
                }
            } else if probe.method.as_deref() == Some("session/update")
                && let Some(params) = probe.params
                && let Some(update) = params.update
            {
                return match serde_json::from_str::<Value>(update.get()) {
                    Ok(v) => self.update_value(params.session_id.as_deref(), v),
                    Err(e) => self.diag("invalid_json", format!("update is not JSON: {e}")),
                };
            }
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(mut map)) if recorded && map.contains_key("sent") => {
                let sent = map.remove("sent").unwrap_or(Value::Null);
                self.client_value(sent);
            }
            Ok(v) => self.agent_value(v),
            Err(e) => self.diag("invalid_json", format!("line is not JSON: {e}")),
        }
    }

    pub(crate) fn agent_value(&mut self, v: Value) {
        let Value::Object(mut msg) = v else {
            return self.diag("not_jsonrpc", "a JSON-RPC message must be an object");
        };
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg.get("id").filter(|v| !v.is_null()).map(request_key);
        match (method.as_deref(), id) {
            (Some("session/update"), _) => match msg.remove("params") {
                Some(Value::Object(mut params)) => self.update_params(&mut params),
                _ => self.diag("malformed_update", "session/update without params object"),
            },
            (Some("session/request_permission"), Some(id)) => {
                let params = msg.remove("params").unwrap_or(Value::Null);
                self.permission_request(id, params);
            }
            (Some(_), _) => {}
            (None, Some(id)) => self.agent_response(id, msg),
            (None, None) => {
                if !msg.contains_key("result") && !msg.contains_key("error") {
                    self.diag(
                        "not_jsonrpc",
                        "object is neither a request, notification nor response",
                    );
                }
            }
        }
    }

    fn agent_response(&mut self, id: String, mut msg: Map<String, Value>) {
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
            Some(ClientRequest::Load) => {
                // The replayed history is complete: its last turn is over.
                if self.t.state.turn_open {
                    self.end_turn(None, None);
                }
            }
            Some(ClientRequest::NewSession) => {
                self.adopt_session(result.as_ref().and_then(|r| r.get("sessionId")));
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

    fn client_line(&mut self, line: &str) {
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
            Some("session/prompt") => {
                let params = msg.remove("params");
                self.adopt_session(params.as_ref().and_then(|p| p.get("sessionId")));
                let prompt = params.and_then(|mut p| p.get_mut("prompt").map(Value::take));
                match prompt {
                    Some(Value::Array(blocks)) => {
                        let idx = self.local_prompt(blocks);
                        self.last_prompt = Some(idx);
                        if let Some(id) = id {
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
            Some("session/cancel") => {
                if self.t.state.turn_open && !self.t.state.cancel_requested {
                    self.t.state.cancel_requested = true;
                    self.emit_state();
                }
            }
            Some("initialize") => {
                if let Some(id) = id {
                    self.client_requests.insert(id, ClientRequest::Initialize);
                }
            }
            Some("session/load" | "session/resume") => {
                self.adopt_session(msg.get("params").and_then(|p| p.get("sessionId")));
                if let Some(id) = id {
                    self.client_requests.insert(id, ClientRequest::Load);
                }
            }
            Some("session/new") => {
                if let Some(id) = id {
                    self.client_requests.insert(id, ClientRequest::NewSession);
                }
            }
            Some(_) => {
                if let Some(id) = id {
                    self.client_requests.insert(id, ClientRequest::Other);
                }
            }
            None => {
                if let Some(id) = id {
                    self.permission_response(&id, msg);
                }
            }
        }
    }

    // ----- prompts and turns ----------------------------------------------

    fn local_prompt(&mut self, blocks: Vec<Value>) -> usize {
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
            blocks
                .into_iter()
                .map(crate::messages::block_in_from_value)
                .collect(),
            false,
        );
        self.emit_insert(idx);
        self.awaiting_ack.push_back(idx);
        self.open = Some((MsgKind::User, idx));
        idx
    }

    fn prompt_result(&mut self, entry: Option<usize>, result: Value) {
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

    fn prompt_error(&mut self, entry: Option<usize>, error: Value) {
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

    /// Gives the client's prompt entry the agent-owned messageId.
    pub(crate) fn alias_user_message(&mut self, idx: usize, message_id: &str) {
        if self.keys.contains(Domain::Msg(MsgKind::User), message_id) {
            return;
        }
        if let EntryBody::Message(m) = &mut self.t.entries[idx].body {
            if m.message_id.is_some() {
                return;
            }
            m.message_id = Some(message_id.to_owned());
        }
        self.keys
            .insert(Domain::Msg(MsgKind::User), message_id, idx);
        self.emit_update(idx);
    }

    pub(crate) fn begin_turn(&mut self) {
        if self.t.state.turn_open {
            // A new turn implicitly finishes the previous one.
            if let Some(last) = self.turn_log.last_mut() {
                last.finished = true;
            }
        }
        self.turn_log.push(TurnRecord::default());
        let s = &mut self.t.state;
        s.turns += 1;
        s.turn_open = true;
        s.status = "running".into();
        s.stop_reason = None;
        s.error = None;
        s.cancel_requested = false;
        self.explicit_idle = false;
        self.open = None;
        self.emit_state();
    }

    pub(crate) fn end_turn(&mut self, stop_reason: Option<String>, error: Option<Value>) {
        if self.t.state.turn_open && stop_reason.as_deref() == Some("cancelled") {
            self.cancel_unfinished_tool_calls();
        }
        if self.t.state.turn_open
            && let Some(last) = self.turn_log.last_mut()
        {
            last.finished = true;
            last.stop_reason = stop_reason.clone();
        }
        let s = &mut self.t.state;
        s.turn_open = false;
        s.status = "idle".into();
        s.stop_reason = stop_reason;
        s.error = error;
        self.open = None;
        self.emit_state();
    }

    /// A cancelled turn leaves no tool call spinning: the client marks the
    /// turn's unfinished calls `cancelled` (ACP cancellation; a later update
    /// from the agent still applies on top).
    fn cancel_unfinished_tool_calls(&mut self) {
        let turn = Some(self.t.state.turns);
        for idx in 0..self.t.entries.len() {
            let entry = &mut self.t.entries[idx];
            if entry.turn != turn {
                continue;
            }
            if let EntryBody::ToolCall(tc) = &mut entry.body
                && matches!(
                    tc.field_str("status").as_deref(),
                    Some("pending" | "in_progress")
                )
            {
                tc.patch(&[("status", Some(&Value::from("cancelled")))]);
                self.emit_update(idx);
            }
        }
    }

    /// The turn new agent output belongs to. Output outside a turn starts an
    /// implicit one, unless a v2 idle said the agent is idle (then it is
    /// background work and belongs to no turn).
    pub(crate) fn output_turn(&mut self) -> Option<u32> {
        if !self.t.state.turn_open {
            if self.explicit_idle {
                return None;
            }
            self.begin_turn();
        }
        Some(self.t.state.turns)
    }

    pub(crate) fn note_v2(&mut self) {
        if self.config.protocol == ProtocolHint::Auto {
            self.t.protocol = 2;
        }
    }

    // ----- entries, ids, ops ----------------------------------------------

    /// Adds an entry at the end of the timeline without emitting an op.
    pub(crate) fn push_entry(
        &mut self,
        preferred_id: &str,
        kind: EntryKind,
        body: EntryBody,
        turn: Option<u32>,
    ) -> usize {
        let id = self.alloc_id(preferred_id, kind);
        self.t.entries.push(Entry {
            id,
            kind,
            turn,
            body,
        });
        self.t.entries.len() - 1
    }

    /// A unique entry id: `preferred`, or `kind:preferred`, `kind:preferred#2`, ...
    /// when taken. Ids are remembered by fingerprint (8 bytes, not a copy of
    /// the id): two ids with one fingerprint only make the second one take the
    /// renamed form, so ids stay unique.
    fn alloc_id(&mut self, preferred: &str, kind: EntryKind) -> String {
        if self.ids.insert(id_fingerprint(preferred)) {
            return preferred.to_owned();
        }
        let base = format!("{}:{}", kind.as_str(), preferred);
        let mut candidate = base.clone();
        let mut n = 2u64;
        while !self.ids.insert(id_fingerprint(&candidate)) {
            candidate = format!("{base}#{n}");
            n += 1;
        }
        candidate
    }

    pub(crate) fn mint_id(&mut self, prefix: &str) -> String {
        self.minted += 1;
        format!("{prefix}:{}", self.minted)
    }

    pub(crate) fn emit(&mut self, op: RenderOp) {
        if self.ops_on {
            self.out.ops.push(op);
        }
    }

    pub(crate) fn emit_insert(&mut self, idx: usize) {
        if !self.ops_on {
            return;
        }
        let entry = self.t.entries[idx].view();
        self.emit(RenderOp::InsertEntry { index: idx, entry });
    }

    pub(crate) fn emit_update(&mut self, idx: usize) {
        if !self.ops_on {
            return;
        }
        let entry = self.t.entries[idx].view();
        self.emit(RenderOp::UpdateEntry {
            id: entry.id.clone(),
            entry,
        });
    }

    pub(crate) fn emit_state(&mut self) {
        if !self.ops_on {
            return;
        }
        let state: SessionState = self.t.state.clone();
        self.emit(RenderOp::SetState { state });
    }

    pub(crate) fn emit_session_info(&mut self) {
        if !self.ops_on {
            return;
        }
        let info = self.t.session_info.clone();
        self.emit(RenderOp::SetSessionInfo { info });
    }

    pub(crate) fn diag(&mut self, code: &'static str, message: impl Into<String>) {
        let d = Diagnostic {
            code,
            message: message.into(),
            line: self.line,
        };
        self.t.diagnostics.push(d.clone());
        self.out.diagnostics.push(d);
    }
}

/// Request ids compare by their JSON text (`1` and `"1"` differ, as in JSON-RPC).
pub(crate) fn request_key(id: &Value) -> String {
    id.to_string()
}

/// A 64-bit fingerprint of an entry id: the Fx hash with a final avalanche
/// (murmur3's fmix64), so ids differing in one byte spread over all bits.
fn id_fingerprint(id: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = spindle_wire::hash::FxHasher::default();
    hasher.write(id.as_bytes());
    hasher.write_usize(id.len());
    crate::keys::fmix64(hasher.finish())
}
