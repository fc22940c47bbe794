//! The ACP side of one session's fan-out: what `/acp` clients attached to the session receive.
//!
//! It is a second [`Hub`] of the session, fed from the same logged lines as the render pipeline
//! ([`crate::core::SessionCore::record`]): the agent's `session/update` notifications are passed
//! on as they were logged, with only `sessionId` replaced by the id `/acp` clients know, and the
//! prompts the agent receives (from the page or from any client) become `user_message_chunk`
//! updates, so every client sees every prompt. Permission questions, their resolution and the
//! answers to session-scoped requests travel as control envelopes (`{"spindle":{...}}`) that
//! each client's stream turns into what that client may see (see `streams.rs`). What differs by
//! protocol version is one [`AcpItem::Versions`] item (see `versions.rs`).
//!
//! Every message gets the hub's event id, so a client that reconnects within the ring resumes
//! without loss or duplicate, and one that comes back too late gets a snapshot (the session's
//! history from the wire log, `history.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use spindle_wire::client_methods::{SESSION_PROMPT, SESSION_REQUEST_PERMISSION, SESSION_UPDATE};

use crate::acp_feed::client_lines::{
    Probe, client_line, client_params, client_prompt, scanned_update_session_id, user_chunks,
    with_session_id,
};
use crate::acp_feed::history::{History, HistoryPolicy};
use crate::acp_feed::item::{AcpItem, VersionParts};
use crate::acp_feed::subscription::{SUBSCRIBER_BYTES, SUBSCRIBER_MESSAGES, Subscription};
use crate::acp_feed::versions::{PromptTargets, Translated, Translation};
use crate::hub::{EventId, Hub, HubLimits};
use crate::store::Direction;

/// The member of a control envelope.
pub(crate) const ENVELOPE: &str = "spindle";

/// The ACP fan-out state of one session (kept under the session's lock, like the render hub).
#[derive(Debug)]
pub struct AcpFeed {
    /// The session id `/acp` clients use.
    session_id: Arc<str>,
    pub(crate) hub: Hub<AcpItem>,
    /// The protocol version of the session's agent (as its `initialize` answer said).
    protocol: u16,
    /// The id of the `initialize` request in flight, to read the agent's version from its answer.
    initialize_id: Option<Value>,
    /// Params (with the client-facing session id) of the agent's permission requests not yet
    /// answered, by key (the JSON text of the request id).
    permission_params: BTreeMap<String, Value>,
    /// The open permission questions shown to clients, by key, as their envelopes.
    open_permissions: BTreeMap<String, Arc<str>>,
    /// The translation's form of permission requests not yet opened, by key.
    translated_permissions: BTreeMap<String, Value>,
    /// Prompts seen (for v1 agents, whose prompts Spindle shows as user chunks).
    prompts: u64,
    /// Whether a client of each protocol version (index 1, 2) ever attached.
    versions: [bool; 3],
    /// The session's lines in the other version, while a client of it is attached.
    translation: Option<Translation>,
    /// `/acp` prompts the task sent, not yet seen in the log.
    sent_prompts: PromptTargets,
    /// `/acp` prompts logged: their answers from the agent (the session's version).
    logged_prompts: PromptTargets,
    /// `/acp` prompts logged while a translation ran: their answers in the other version.
    translated_prompts: PromptTargets,
    /// Whether an `/acp` client ever attached: until then updates are counted, not rewritten.
    used: bool,
    /// The recent answers to clients' requests with their ids: a resume that gets a snapshot
    /// still gets the answers it missed (a snapshot holds the session, not the answers).
    recent_answers: std::collections::VecDeque<(EventId, Arc<str>)>,
}

/// How many recent answers are kept for snapshots.
const RECENT_ANSWERS: usize = 1024;

/// The key of a version's params in a permission envelope.
pub(crate) fn version_key(version: u16) -> &'static str {
    if version >= 2 { "v2" } else { "v1" }
}

/// What a Server line ending the agent looks like (`feed.rs` of the page: `agent_exited`).
const AGENT_EXITED: &str = "\"agent_exited\"";

impl AcpFeed {
    pub(crate) fn new(session: i64, generation: u64, limits: HubLimits, protocol: u16) -> AcpFeed {
        let limits = HubLimits {
            observer_queue: SUBSCRIBER_MESSAGES,
            ..limits
        };
        AcpFeed {
            session_id: Arc::from(session.to_string()),
            hub: Hub::with_items(generation, limits),
            protocol,
            initialize_id: None,
            permission_params: BTreeMap::new(),
            open_permissions: BTreeMap::new(),
            translated_permissions: BTreeMap::new(),
            prompts: 0,
            versions: [false; 3],
            translation: None,
            sent_prompts: PromptTargets::default(),
            logged_prompts: PromptTargets::default(),
            translated_prompts: PromptTargets::default(),
            used: false,
            recent_answers: std::collections::VecDeque::new(),
        }
    }

    /// Sets the protocol version the session's agent speaks (until its `initialize` answer says).
    pub(crate) fn set_protocol(&mut self, protocol: u16) {
        if self.protocol != protocol {
            self.protocol = protocol;
            self.start_translation();
        }
    }

    /// The session's task sent an `/acp` client's prompt to the agent under `request` (the
    /// agent request id as JSON text): its answer goes to `connection`'s request `id`, and the
    /// prompt is not echoed back to that connection (v1).
    pub(crate) fn remote_prompt_sent(&mut self, request: String, connection: Arc<str>, id: Value) {
        self.sent_prompts.insert(request, connection, id);
    }

    /// A client of protocol `version` attaches: the translation into it starts if the agent
    /// speaks the other one.
    fn client_version(&mut self, version: u16) {
        let version = version.clamp(1, 2);
        if !self.versions[usize::from(version)] {
            self.versions[usize::from(version)] = true;
            self.start_translation();
        }
    }

    /// The translation into `version` when the session's agent speaks the other one (started
    /// now if no client of that version attached yet); `None` for the agent's own version.
    pub(crate) fn translation_into(&mut self, version: u16) -> Option<&mut Translation> {
        self.client_version(version);
        let version = version.clamp(1, 2);
        self.translation.as_mut().filter(|t| t.version == version)
    }

    /// The protocol version the session's agent speaks.
    pub(crate) fn protocol(&self) -> u16 {
        self.protocol
    }

    /// The session id `/acp` clients use.
    pub(crate) fn session_id(&self) -> &str {
        &self.session_id
    }

    fn start_translation(&mut self) {
        let other = if self.protocol >= 2 { 1 } else { 2 };
        if !self.versions[other] {
            self.translation = None;
            return;
        }
        if self
            .translation
            .as_ref()
            .is_some_and(|t| usize::from(t.version) == other)
        {
            return;
        }
        self.translation = Some(Translation::new(self.protocol, self.hub.last_id().counter));
    }

    /// Publishes an item for clients of both versions: as is when both get the same.
    fn publish_versions(&mut self, skip: Option<Arc<str>>, v1: Vec<String>, v2: Vec<String>) {
        if let Some(item) = AcpItem::for_versions(VersionParts { skip, v1, v2 }) {
            self.hub.publish(item);
        }
    }

    /// Publishes one message for every client.
    fn publish_message(&mut self, text: Arc<str>) -> EventId {
        self.hub.publish(AcpItem::Message(text))
    }

    /// Publishes one session line as the session's version has it, and its translation.
    fn publish_translated(&mut self, own: Vec<String>, translated: Translated) {
        let version = self.translation.as_ref().map_or(0, |t| t.version);
        for (key, params) in translated.permissions {
            self.translated_permissions.insert(key, params);
        }
        let (v1, v2) = if version == 1 {
            (translated.updates, own)
        } else {
            (own, translated.updates)
        };
        if self.translation.is_some() {
            self.publish_versions(None, v1, v2);
        } else {
            for line in if self.protocol >= 2 { v2 } else { v1 } {
                self.publish_message(Arc::from(line));
            }
        }
        for (key, answer) in translated.answers {
            if let Some((connection, id)) = self.translated_prompts.take(&key) {
                let result = match answer.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
                };
                self.publish_answer(&connection, &id, result, Some(version));
            }
        }
    }

    /// Takes a batch of logged lines (after they were committed).
    pub(crate) fn on_lines(&mut self, lines: &[(Direction, String)]) {
        for (direction, line) in lines {
            if self.counts_without_reading(*direction, line) {
                self.hub.skip();
                continue;
            }
            // Most lines are the agent's updates: read by the scanner, not parsed (twice).
            if *direction == Direction::Agent
                && let Some(span) = scanned_update_session_id(line)
            {
                if self.used {
                    self.agent_update(with_session_id(line, span, &self.session_id));
                } else {
                    // No client ever attached: no rewrite, and no resume may skip this gap.
                    self.hub.skip();
                }
                continue;
            }
            let Ok(probe) = serde_json::from_str::<Probe<'_>>(line) else {
                continue;
            };
            match (direction, probe.method.as_deref()) {
                (Direction::Agent, Some(SESSION_UPDATE)) => {
                    if !self.used {
                        // No client ever attached: no rewrite, and no resume may skip this gap.
                        self.hub.skip();
                    } else if let Some(line) = self.client_line(line) {
                        self.agent_update(line);
                    }
                }
                (Direction::Agent, Some(SESSION_REQUEST_PERMISSION)) => {
                    if let (Some(id), Some(params)) = (probe.id, self.client_params(line)) {
                        if let Some(t) = &mut self.translation {
                            let request = json!({ "jsonrpc": "2.0", "id": id,
                                "method": SESSION_REQUEST_PERMISSION, "params": params });
                            let translated = t.agent_line(&request.to_string(), None);
                            self.publish_translated(Vec::new(), translated);
                        }
                        self.permission_params.insert(id.to_string(), params);
                    }
                }
                (Direction::Agent, None) => {
                    let key = probe.id.as_ref().map(Value::to_string);
                    if let (Some(key), Some(t)) = (&key, &mut self.translation)
                        && self.translated_prompts.get(key).is_some()
                    {
                        let translated = t.agent_line(line, Some(key));
                        self.publish_translated(Vec::new(), translated);
                    }
                    self.maybe_initialize_answer(probe.id.as_ref(), line);
                }
                (Direction::Client, Some(spindle_wire::client_methods::INITIALIZE)) => {
                    self.initialize_id = probe.id
                }
                (Direction::Client, Some(SESSION_PROMPT)) => {
                    let key = probe.id.as_ref().map(Value::to_string).unwrap_or_default();
                    self.prompt_logged(&key, line);
                }
                (Direction::Server, _) if line.contains(AGENT_EXITED) => {
                    if let Some(t) = &mut self.translation {
                        let translated = t.agent_gone("the agent exited");
                        self.publish_translated(Vec::new(), translated);
                    }
                }
                (Direction::Client, None) => {
                    // The client answered an agent request: no longer a question to forward.
                    if let Some(id) = probe.id {
                        self.permission_params.remove(&id.to_string());
                    }
                }
                _ => {}
            }
        }
    }

    /// Whether `line` is an agent line that, while no `/acp` client ever attached, is only
    /// counted: an update, and nothing a later attach needs (a permission question, the answer
    /// to `initialize`). Decided by substring, without parsing, because every agent line of
    /// every session passes here; a line that merely mentions a method is parsed as before.
    fn counts_without_reading(&self, direction: Direction, line: &str) -> bool {
        !self.used
            && direction == Direction::Agent
            && self.initialize_id.is_none()
            && line.contains(SESSION_UPDATE)
            && !line.contains(SESSION_REQUEST_PERMISSION)
    }

    /// A prompt the agent was sent: shown to every client (v1 agent: as user chunks; v2 agent:
    /// its own `user_message` does), except to a v1 connection that sent it; translated.
    fn prompt_logged(&mut self, key: &str, line: &str) {
        let origin = self.sent_prompts.take(key);
        if let Some((connection, id)) = &origin {
            self.logged_prompts
                .insert(key.to_string(), connection.clone(), id.clone());
            if self.translation.is_some() {
                self.translated_prompts
                    .insert(key.to_string(), connection.clone(), id.clone());
            }
        }
        let skip = origin.map(|(connection, _)| connection);
        if self.translation.is_none() {
            let chunks = self.user_chunks(line);
            if skip.is_none() {
                for chunk in chunks {
                    self.publish_message(Arc::from(chunk));
                }
            } else {
                self.publish_versions(skip, chunks, Vec::new());
            }
            return;
        }
        let Some(prompt) = client_prompt(&self.session_id, key, line) else {
            return;
        };
        // v1 clients get the prompt as user chunks (a v2 agent's echo is dropped by the
        // translation); v2 clients get a v2 agent's own echo, or the translation's.
        let v1_chunks = user_chunks(&self.session_id, 1, &mut self.prompts, line);
        let translated = match &mut self.translation {
            Some(t) => t.prompt(&prompt, key),
            None => Translated::default(),
        };
        let (v2, answers) = (
            translated.updates,
            Translated {
                answers: translated.answers,
                ..Translated::default()
            },
        );
        self.publish_versions(skip, v1_chunks, v2);
        self.publish_translated(Vec::new(), answers);
    }

    fn maybe_initialize_answer(&mut self, id: Option<&Value>, line: &str) {
        if id.is_none() || id != self.initialize_id.as_ref() {
            return;
        }
        self.initialize_id = None;
        let version = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v.pointer("/result/protocolVersion").and_then(Value::as_u64));
        if let Some(version) = version.and_then(|v| u16::try_from(v).ok()) {
            self.set_protocol(version.clamp(1, 2));
        }
    }

    /// Publishes an agent's update as clients receive it (`line`, with their session id).
    fn agent_update(&mut self, line: String) {
        let translated = match &mut self.translation {
            Some(t) => t.agent_line(&line, None),
            None => Translated::default(),
        };
        self.publish_translated(vec![line], translated);
    }

    fn client_line(&self, line: &str) -> Option<String> {
        client_line(&self.session_id, line)
    }

    fn client_params(&self, line: &str) -> Option<Value> {
        client_params(&self.session_id, line)
    }

    /// The v1 user chunks of a prompt line (a v1 agent's prompts; a v2 agent echoes its own).
    fn user_chunks(&mut self, line: &str) -> Vec<String> {
        if self.protocol >= 2 {
            return Vec::new();
        }
        user_chunks(&self.session_id, 1, &mut self.prompts, line)
    }

    /// What builds this session's history for a snapshot (see [`History::lines`]) for a client
    /// of protocol `version`; with `after`, the answers published after it follow the history.
    pub(crate) fn history(
        &mut self,
        policy: HistoryPolicy,
        after: Option<EventId>,
        version: u16,
    ) -> History {
        self.used = true;
        self.client_version(version);
        let answers = match after {
            Some(after) => self
                .recent_answers
                .iter()
                .filter(|(id, _)| id.generation == after.generation && id.counter > after.counter)
                .map(|(_, envelope)| envelope.clone())
                .collect(),
            None => Vec::new(),
        };
        History {
            session_id: self.session_id.clone(),
            protocol: self.protocol,
            version: version.clamp(1, 2),
            policy,
            open: self.open_permission_envelopes(),
            answers,
        }
    }

    /// The agent's permission requests the log has not answered yet, by key, with their params:
    /// what a replica that does not run the session shows (`task::show_followed_permissions`).
    pub(crate) fn unanswered_permissions(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.permission_params.iter()
    }

    /// A permission question is now open (shown in the page and to controllers).
    pub(crate) fn permission_opened(&mut self, key: &str) {
        let Some(params) = self.permission_params.get(key) else {
            return;
        };
        let mut permission = json!({ "key": key });
        permission[version_key(self.protocol)] = params.clone();
        if let (Some(t), Some(other)) = (&self.translation, self.translated_permissions.remove(key))
        {
            permission[version_key(t.version)] = other;
        }
        let envelope: Arc<str> =
            Arc::from(json!({ ENVELOPE: { "permission": permission } }).to_string());
        self.open_permissions
            .insert(key.to_string(), envelope.clone());
        self.publish_message(envelope);
    }

    /// An elicitation to ask the controllers (the same shape in v1 and v2); replayed to a
    /// controller that attaches while it is open, like a permission question.
    pub(crate) fn elicitation_opened(&mut self, key: &str, params: &Value) {
        let envelope: Arc<str> = Arc::from(
            json!({ ENVELOPE: { "elicitation": { "key": key, "params": params } } }).to_string(),
        );
        self.open_permissions
            .insert(key.to_string(), envelope.clone());
        self.publish_message(envelope);
    }

    /// An elicitation was settled: controllers still asked are told to drop it.
    pub(crate) fn elicitation_closed(&mut self, key: &str) {
        if self.open_permissions.remove(key).is_some() {
            let envelope = json!({ ENVELOPE: { "elicitation_closed": { "key": key } } });
            self.publish_message(Arc::from(envelope.to_string()));
        }
    }

    /// A permission question was settled (by any controller, the page, a cancel or the agent).
    pub(crate) fn permission_closed(&mut self, key: &str, outcome: &str) {
        let params = self.permission_params.remove(key);
        self.translated_permissions.remove(key);
        // v1: `toolCall.toolCallId`; v2: `subject.toolCall.toolCallId`.
        let tool = params.as_ref().and_then(|p| {
            p.pointer("/toolCall/toolCallId")
                .or_else(|| p.pointer("/subject/toolCall/toolCallId"))
                .cloned()
        });
        if self.open_permissions.remove(key).is_some() {
            // The page's labels ("cancelled", "closed", "agent exited") or the chosen option.
            let outcome = match outcome {
                "cancelled" | "closed" | "agent exited" => json!({ "outcome": "cancelled" }),
                option => json!({ "outcome": "selected", "optionId": option }),
            };
            let envelope = json!({ ENVELOPE: { "resolved": {
                "key": key, "outcome": outcome, "toolCallId": tool } } });
            self.publish_message(Arc::from(envelope.to_string()));
        }
    }

    /// The answer to a session-scoped request of one connection, in order with the updates. The
    /// agent's answer to a logged prompt is for a connection of the agent's version only (one
    /// of the other version gets the translation's answer).
    pub(crate) fn respond(&mut self, connection: &str, id: &Value, result: Result<Value, Value>) {
        let only = self
            .logged_prompts
            .take_target(connection, id)
            .then_some(self.protocol);
        self.publish_answer(connection, id, result, only);
    }

    fn publish_answer(
        &mut self,
        connection: &str,
        id: &Value,
        result: Result<Value, Value>,
        only: Option<u16>,
    ) {
        let mut answer = match result {
            Ok(result) => json!({ "connection": connection, "id": id, "result": result }),
            Err(error) => json!({ "connection": connection, "id": id, "error": error }),
        };
        if let Some(version) = only {
            answer["protocol"] = json!(version);
        }
        let envelope: Arc<str> = Arc::from(json!({ ENVELOPE: { "response": answer } }).to_string());
        let id = self.publish_message(envelope.clone());
        self.recent_answers.push_back((id, envelope));
        while self.recent_answers.len() > RECENT_ANSWERS {
            self.recent_answers.pop_front();
        }
    }

    /// The open permission envelopes (for `pending_only` and after the history).
    pub(crate) fn open_permission_envelopes(&self) -> Vec<Arc<str>> {
        self.open_permissions.values().cloned().collect()
    }

    /// Subscribes a client stream: after `last_seen` when the ring still has it, else a reset
    /// whose payload is `snapshot` (newline-separated messages).
    /// A client of protocol `version` resuming from before the translation into its version
    /// started gets a snapshot too. The queue is bounded by bytes and count (see
    /// [`SUBSCRIBER_BYTES`]); the receiver gives back the bytes of what it takes.
    pub(crate) fn subscribe(
        &mut self,
        last_seen: Option<EventId>,
        snapshot: impl FnOnce() -> String,
        version: u16,
    ) -> Subscription {
        let translated_since = self
            .translation
            .as_ref()
            .filter(|t| t.version == version.clamp(1, 2))
            .map(|t| t.since);
        let last_seen = last_seen.filter(|seen| translated_since.is_none_or(|s| seen.counter >= s));
        let (receiver, queued, start) =
            self.hub
                .subscribe_bounded(last_seen, snapshot, SUBSCRIBER_BYTES);
        Subscription {
            receiver,
            queued,
            start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::Frame;

    const UPDATE: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"agent-7","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#;
    const PROMPT: &str = r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"agent-7","prompt":[{"type":"text","text":"go"}]}}"#;
    const ASK: &str = r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"agent-7","toolCall":{"toolCallId":"t"},"options":[]}}"#;

    fn feed() -> AcpFeed {
        AcpFeed::new(12, 1, HubLimits::default(), 1)
    }

    fn ops(rx: &mut tokio::sync::mpsc::Receiver<Frame<AcpItem>>) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(frame) = rx.try_recv() {
            if let Frame::Ops { data, .. } = frame {
                match data {
                    AcpItem::Versions(parts) => out.extend(
                        parts
                            .part_for(1, "c")
                            .iter()
                            .map(|l| serde_json::from_str::<Value>(l).unwrap()),
                    ),
                    AcpItem::Message(text) => out.push(serde_json::from_str(&text).unwrap()),
                }
            }
        }
        out
    }

    #[test]
    fn updates_pass_with_the_client_session_id_once_a_client_attached() {
        let mut feed = feed();
        feed.on_lines(&[(Direction::Agent, UPDATE.into())]);
        assert_eq!(feed.hub.last_id().counter, 1, "counted");
        let (_, start) = (
            feed.history(HistoryPolicy::None, None, 1),
            feed.hub.last_id(),
        );
        let mut rx = feed.subscribe(Some(start), String::new, 1).receiver;
        feed.on_lines(&[
            (Direction::Agent, UPDATE.into()),
            (Direction::Client, PROMPT.into()),
        ]);
        let got = ops(&mut rx);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0]["params"]["sessionId"], "12");
        assert_eq!(got[0]["params"]["update"]["content"]["text"], "hi");
        assert_eq!(
            got[1]["params"]["update"]["sessionUpdate"],
            spindle_wire::tags::USER_MESSAGE_CHUNK
        );
        assert_eq!(got[1]["params"]["update"]["content"]["text"], "go");
        assert!(
            got[1]["params"]["update"].get("messageId").is_none(),
            "v1 has none"
        );
        // The gap before the first attach cannot be resumed over: a reset.
        let mut old = feed
            .subscribe(
                Some(EventId {
                    generation: 1,
                    counter: 0,
                }),
                || "snap".into(),
                1,
            )
            .receiver;
        assert!(matches!(old.try_recv(), Ok(Frame::Reset { .. })));
    }

    #[test]
    fn permission_questions_travel_as_envelopes_and_resolutions_say_the_outcome() {
        let mut feed = feed();
        let _ = feed.history(HistoryPolicy::None, None, 1);
        let mut rx = feed
            .subscribe(Some(feed.hub.last_id()), String::new, 1)
            .receiver;
        feed.on_lines(&[(Direction::Agent, ASK.into())]);
        feed.permission_opened("\"p1\"");
        feed.permission_closed("\"p1\"", "allow");
        feed.permission_closed("\"p1\"", "allow");
        let got = ops(&mut rx);
        assert_eq!(got.len(), 2, "closed once: {got:?}");
        assert_eq!(got[0]["spindle"]["permission"]["v1"]["sessionId"], "12");
        assert_eq!(
            got[1]["spindle"]["resolved"]["outcome"],
            json!({ "outcome": "selected", "optionId": "allow" })
        );
        feed.on_lines(&[(Direction::Agent, ASK.into())]);
        feed.permission_opened("\"p1\"");
        feed.permission_closed("\"p1\"", "cancelled");
        let got = ops(&mut rx);
        assert_eq!(
            got[1]["spindle"]["resolved"]["outcome"]["outcome"],
            "cancelled"
        );
    }
}
