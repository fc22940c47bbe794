//! The entry points: each `apply_*` call decodes its input (a line, params,
//! a prompt or a response) and dispatches it by [`UpdateTag`] to the
//! handler modules.

use serde_json::{Map, Value};

use crate::canonical::{ScannedUpdate, canonical_value, scan_update_params};
use crate::core::TranscriptEngine;
use crate::ids::MsgKind;
use crate::model::{EntryBody, EntryKind};
use crate::ops::Applied;
use crate::requests::request_key;
use crate::wire::{EnvelopeProbe, LineProbe, ParamsProbe, ValueParamsProbe, looks_like_chunk};
use spindle_wire::client_methods::{
    FS_READ_TEXT_FILE, FS_WRITE_TEXT_FILE, SESSION_REQUEST_PERMISSION, SESSION_UPDATE,
};
use spindle_wire::host::LOCAL_KEY;
use spindle_wire::scan;
use spindle_wire::tags::{MessageKind, UpdateTag};

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
            | UpdateTag::ReplayComplete
    )
}

impl TranscriptEngine {
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
    /// the client sent; `{"local": ..}` is a local line (see
    /// [`Self::apply_local_line`]).
    pub fn apply_recorded_line(&mut self, line: &str) -> Applied {
        self.begin_line();
        self.received_line(line, true);
        self.finish()
    }

    /// One local line: what the client's own services did that the wire does
    /// not show (`spindle_wire::host::LocalLine`): a client terminal's output
    /// (appended to the display terminal of the tool call that embeds the
    /// terminal, held until one does), its exit, and the text a file write
    /// replaces (the old side of the write's diff). A malformed one is a
    /// `malformed_local` diagnostic.
    pub fn apply_local_line(&mut self, line: &str) -> Applied {
        self.begin_line();
        self.local_line(line);
        self.finish()
    }

    /// Who sent the prompt of client request `request_id` (the request's `id` as JSON text,
    /// e.g. `7` or `"a"`): the prompt entry gets `author`. A request that was no prompt is a
    /// `unknown_author_target` diagnostic.
    pub fn apply_prompt_author(&mut self, request_id: &str, author: &str) -> Applied {
        let key = request_id_key(request_id);
        if !self.set_prompt_author(&key, author) {
            self.diag(
                "unknown_author_target",
                format!("no prompt was sent as request {request_id}"),
            );
        }
        self.finish()
    }

    /// Who answers the open permission request `request_id` (the agent's request id as JSON
    /// text): its permission record gets `answeredBy`. Apply it before the answer line.
    pub fn apply_permission_author(&mut self, request_id: &str, author: &str) -> Applied {
        let key = request_id_key(request_id);
        if !self.set_permission_author(&key, author) {
            self.diag(
                "unknown_author_target",
                format!("no open permission request {request_id}"),
            );
        }
        self.finish()
    }

    /// The `params` object of one `session/update` notification (with
    /// `sessionId` and `update`), as JSON text.
    pub fn apply_session_update(&mut self, params_json: &str) -> Applied {
        self.session_update_params(params_json);
        self.finish()
    }

    /// [`Self::apply_session_update`] for params a runtime already scanned:
    /// `chunk` is what [`scan::plain_chunk_params`] reads from `params_json`
    /// (for a plain text chunk; `None` otherwise), so the text is not read
    /// again. Same result as `apply_session_update(params_json)`.
    pub fn apply_scanned_session_update(
        &mut self,
        params_json: &str,
        chunk: Option<scan::PlainChunk<'_>>,
    ) -> Applied {
        if !chunk.is_some_and(|chunk| self.try_plain_chunk(chunk)) {
            self.session_update_params(params_json);
        }
        self.finish()
    }

    /// Decodes `session/update` params the way [`Self::received_line`] decodes
    /// whole lines: plain text chunks in one borrowed pass, other updates by
    /// decoding only the update into a `Value`, anything the probes cannot
    /// represent exactly as a whole `Value` (same result, more work).
    fn session_update_params(&mut self, params_json: &str) {
        // A chunk's tag is spelled `..._chunk"` (one with escapes takes the
        // Value path, to the same result): other params skip the chunk
        // scanner.
        let chunk_like = looks_like_chunk(params_json);
        if chunk_like
            && let Some(chunk) = scan::plain_chunk_params(params_json)
            && self.try_plain_chunk(chunk)
        {
            return;
        }
        if !chunk_like
            && let Some(update) = scan_update_params(params_json)
            && self.apply_canonical_update(&update)
        {
            return;
        }
        if chunk_like
            && let Ok(params) = serde_json::from_str::<ParamsProbe<'_>>(params_json)
            && let Some(update) = params.update
            && self.try_fast_chunk(params.session_id.as_deref(), update)
        {
            return;
        }
        if let Ok(params) = serde_json::from_str::<ValueParamsProbe<'_>>(params_json)
            && let Some(update) = params.update
        {
            return self.update_value(params.session_id.as_deref(), update);
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

    /// An update the canonical scanner read: tool calls from their members'
    /// text ([`Self::tool_upsert_scanned`]), any other update as the `Value`
    /// its members make (each member parsed on its own: no parse of the
    /// envelope). `false`, with nothing changed, leaves it to the `Value`
    /// path.
    fn apply_canonical_update(&mut self, update: &ScannedUpdate<'_>) -> bool {
        if matches!(
            UpdateTag::parse(update.tag),
            Some(UpdateTag::ToolCall | UpdateTag::ToolCallUpdate)
        ) && self.tool_upsert_scanned(update)
        {
            return true;
        }
        let mut map = Map::with_capacity(update.members.len());
        for &(key, raw) in &update.members {
            let Some(value) = canonical_value(raw) else {
                return false;
            };
            map.insert(key.to_owned(), value);
        }
        self.update_value(update.session_id, Value::Object(map));
        true
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
        // The compact envelope agents write: its params take the params path, where a tool
        // call is read by the canonical scanner rather than decoded into a `Value`.
        if let Some(notification) = scan::update_notification(line) {
            return self.session_update_params(notification.params);
        }
        if looks_like_chunk(line)
            && let Ok(probe) = serde_json::from_str::<LineProbe<'_>>(line)
            && probe.sent.is_none()
            && probe.method.as_deref() == Some(SESSION_UPDATE)
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
            } else if probe.method.as_deref() == Some(SESSION_UPDATE)
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
            Ok(v) if recorded && v.get(LOCAL_KEY).is_some() => self.local_value(&v),
            Ok(v) => self.agent_value(v),
            Err(e) => self.diag("invalid_json", format!("line is not JSON: {e}")),
        }
    }

    fn agent_value(&mut self, v: Value) {
        let Value::Object(mut msg) = v else {
            return self.diag("not_jsonrpc", "a JSON-RPC message must be an object");
        };
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg.get("id").filter(|v| !v.is_null()).map(request_key);
        match (method.as_deref(), id) {
            (Some(SESSION_UPDATE), _) => match msg.remove("params") {
                Some(Value::Object(mut params)) => self.update_params(&mut params),
                _ => self.diag("malformed_update", "session/update without params object"),
            },
            (Some(SESSION_REQUEST_PERMISSION), Some(id)) => {
                let params = msg.remove("params").unwrap_or(Value::Null);
                self.permission_request(id, params);
            }
            (Some(FS_WRITE_TEXT_FILE), Some(id)) => {
                let params = msg.remove("params").unwrap_or(Value::Null);
                self.fs_write_request(id, params);
            }
            (Some(FS_READ_TEXT_FILE), Some(_)) => {
                let params = msg.remove("params").unwrap_or(Value::Null);
                self.fs_read_request(params);
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

    /// `params` of a `session/update`: `{sessionId, update}`.
    fn update_params(&mut self, params: &mut Map<String, Value>) {
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
    fn update_value(&mut self, session_id: Option<&str>, update: Value) {
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

    fn apply_update_map(&mut self, tag: &str, u: Map<String, Value>) {
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
            T::AvailableCommandsUpdate => self.commands_update(u),
            T::CurrentModeUpdate => self.current_mode_update(u),
            T::ConfigOptionUpdate => self.config_option_update(u),
            T::SessionInfoUpdate => self.session_info_update(u),
            T::Notice => self.notice(u),
            // A marker (schema 1.20): what came before it was replayed history,
            // what follows is live. Nothing to show; no entry.
            T::ReplayComplete => {}
        }
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
}

/// A request id given as JSON text, in the form ids are keyed by (`request_key`): the text is
/// parsed and printed again, so `"a"` and `7` match however they were spaced.
fn request_id_key(request_id: &str) -> String {
    serde_json::from_str::<Value>(request_id)
        .map(|id| request_key(&id))
        .unwrap_or_else(|_| request_id.to_owned())
}
