//! One client's view of a session's fan-out: the frames of the session's ACP hub turned into
//! what this connection may see. Updates pass through as they are; a permission question
//! becomes a `session/request_permission` request for controllers only (its id names the
//! session and the agent's request, so a resumed stream repeats the same id); a resolution
//! becomes `_spindle/permission_resolved` for peers that opted in; an answer reaches only the
//! connection that asked. The same stream feeds an SSE response and a WebSocket.

use std::collections::VecDeque;
use std::sync::Arc;

use futures_util::stream::{self, Stream};
use serde_json::{Value, json};
use spindle_wire::client_methods::{
    CANCEL_REQUEST, ELICITATION_CREATE, SESSION_REQUEST_PERMISSION,
};
use spindle_wire::remote::{
    CHOSEN_OPTION_ID, EVENT_ID, EVENT_ID_COUNT, EVENT_ID_NOTIFICATION, OUTCOME,
    PERMISSION_RESOLVED, REASON, REQUEST_ID, SNAPSHOT_NOTIFICATION, STREAM_DROPPED, TOOL_CALL_ID,
};
use tokio::sync::{oneshot, watch};

use crate::acp_feed::feed::{ENVELOPE, version_key};
use crate::acp_feed::history::HistoryPolicy;
use crate::acp_feed::item::AcpItem;
use crate::acp_feed::subscription::Subscription;
use crate::gateway::conn::{Conn, Role, StreamGuard, StreamStart};
use crate::hub::{EventId, Frame};
use crate::registry::LiveSession;

/// The prefix of the ids of permission requests sent to clients.
const PERMISSION_ID_PREFIX: &str = "spindle-permission-";
const ELICITATION_ID_PREFIX: &str = "spindle-elicitation-";

/// The id of an elicitation Spindle forwards to a controller: its session and key.
pub fn elicitation_request_id(session_id: &str, key: &str) -> String {
    format!("{ELICITATION_ID_PREFIX}{session_id}-{key}")
}

/// The session id and key of an elicitation request id.
pub fn parse_elicitation_request_id(id: &Value) -> Option<(String, String)> {
    let rest = id.as_str()?.strip_prefix(ELICITATION_ID_PREFIX)?;
    let (session, key) = rest.split_once('-')?;
    Some((session.to_string(), key.to_string()))
}

/// One item of a client stream.
#[derive(Debug, Clone)]
pub enum Out {
    /// A JSON-RPC message; `id` is its event id (absent for history sent before the live part).
    Message {
        /// The event id, if the message is part of the live stream.
        id: Option<EventId>,
        /// The message.
        text: Arc<str>,
    },
    /// Only moves the client's event id on (a snapshot with nothing to show).
    Mark(EventId),
    /// An SSE comment (WebSocket: nothing).
    Comment(&'static str),
}

/// The id of the permission request a client gets for the agent's request `key`.
pub fn permission_request_id(session_id: &str, key: &str) -> String {
    format!("{PERMISSION_ID_PREFIX}{session_id}-{key}")
}

/// The session id and key of a permission request id.
pub fn parse_permission_request_id(id: &Value) -> Option<(String, String)> {
    let rest = id.as_str()?.strip_prefix(PERMISSION_ID_PREFIX)?;
    let (session, key) = rest.split_once('-')?;
    Some((session.to_string(), key.to_string()))
}

struct StreamState {
    conn: Arc<Conn>,
    session_id: String,
    receiver: Subscription,
    stopped: oneshot::Receiver<()>,
    /// The attaching request's answer still to come: nothing goes out before it.
    answered: Option<oneshot::Receiver<()>>,
    closed: watch::Receiver<bool>,
    buffer: VecDeque<Out>,
    done: bool,
    resumed: bool,
    _guard: StreamGuard,
}

/// The stream of an attached session for `conn`, continuing after `last_seen` when given (a
/// reconnect) or where the previous stream stopped. `None` when the session is not attached.
pub fn session_stream(
    conn: &Arc<Conn>,
    session_id: &str,
    live: &LiveSession,
    last_seen: Option<EventId>,
    guard: StreamGuard,
) -> Option<impl Stream<Item = Out> + Send + use<>> {
    let StreamStart {
        history,
        resume,
        stopped,
        answered,
    } = conn.start_session_stream(session_id)?;
    let mut buffer = VecDeque::new();
    let resumed = history.is_none() && last_seen.is_some();
    let from = match &history {
        Some(_) => resume,
        None => last_seen.unwrap_or(resume),
    };
    let mut state = StreamState {
        conn: conn.clone(),
        session_id: session_id.to_string(),
        receiver: live.acp_subscribe(Some(from), HistoryPolicy::Full, conn.protocol()),
        stopped,
        answered,
        closed: conn.closed.subscribe(),
        buffer: VecDeque::new(),
        done: false,
        resumed,
        _guard: guard,
    };
    if let Some(history) = history {
        for line in history.split('\n').filter(|l| !l.is_empty()) {
            if let Some(text) = state.render_one(line) {
                buffer.push_back(Out::Message { id: None, text });
            }
        }
    }
    state.buffer = buffer;
    Some(stream::unfold(state, |mut state| async move {
        if let Some(answered) = state.answered.take() {
            // A dropped sender (the answer given up) opens the stream too.
            tokio::select! {
                _ = answered => {}
                _ = &mut state.stopped => state.done = true,
                _ = state.closed.changed() => state.done = true,
            }
            if state.done {
                return None;
            }
        }
        loop {
            if let Some(out) = state.buffer.pop_front() {
                return Some((out, state));
            }
            if state.done {
                return None;
            }
            tokio::select! {
                frame = state.receiver.recv() => match frame {
                    Some(frame) => {
                        state.take(frame);
                        // Whatever else is waiting goes out with it (fewer wake-ups).
                        while state.buffer.len() < 256
                            && let Some(frame) = state.receiver.try_recv()
                        {
                            state.take(frame);
                        }
                    }
                    None => {
                        state.done = true;
                        if !*state.closed.borrow() {
                            state.dropped();
                        }
                    }
                },
                _ = &mut state.stopped => state.done = true,
                _ = state.closed.changed() => state.done = true,
            }
        }
    }))
}

impl StreamState {
    fn role(&self) -> Option<Role> {
        self.conn.attachment(&self.session_id)
    }

    fn take(&mut self, frame: Frame<AcpItem>) {
        match frame {
            Frame::Ops { id, data } => {
                let rendered = self.render(&data);
                let count = rendered.len();
                for (n, text) in rendered.into_iter().enumerate() {
                    let id = (n + 1 == count).then_some(id);
                    self.buffer.push_back(Out::Message { id, text });
                }
                if count == 0 {
                    self.buffer.push_back(Out::Mark(id));
                }
                self.conn.delivered(&self.session_id, id);
            }
            Frame::Reset { id, data } => {
                // Only a resume the ring no longer covers ends here: say it is a snapshot.
                if self.resumed && (self.conn.opted_event_ids() || self.conn.opted_attach()) {
                    let notice = notification(
                        SNAPSHOT_NOTIFICATION,
                        json!({ "sessionId": self.session_id }),
                    );
                    self.buffer.push_back(Out::Message {
                        id: None,
                        text: notice,
                    });
                }
                let rendered: Vec<Arc<str>> = data
                    .split('\n')
                    .filter(|l| !l.is_empty())
                    .filter_map(|l| self.render_one(l))
                    .collect();
                let count = rendered.len();
                for (n, text) in rendered.into_iter().enumerate() {
                    let id = (n + 1 == count).then_some(id);
                    self.buffer.push_back(Out::Message { id, text });
                }
                if count == 0 {
                    self.buffer.push_back(Out::Mark(id));
                }
                self.conn.delivered(&self.session_id, id);
            }
        }
    }

    /// Tells the client it fell behind and was dropped (it may reconnect with its last id).
    fn dropped(&mut self) {
        self.buffer
            .push_back(Out::Comment("dropped: this client fell behind"));
        if self.conn.opted_event_ids() || self.conn.opted_attach() {
            let notice = notification(
                STREAM_DROPPED,
                json!({
                    "sessionId": self.session_id,
                    REASON: "the client did not keep up; reconnect with the last event id",
                }),
            );
            self.buffer.push_back(Out::Message {
                id: None,
                text: notice,
            });
        }
    }

    /// What this client sees of one hub item (its version's part; maybe nothing).
    fn render(&self, item: &AcpItem) -> Vec<Arc<str>> {
        match item {
            AcpItem::Message(text) => self.render_one(text).into_iter().collect(),
            AcpItem::Versions(parts) => parts
                .part_for(self.conn.protocol(), &self.conn.id)
                .iter()
                .map(|line| Arc::from(line.as_str()))
                .collect(),
        }
    }

    fn render_one(&self, data: &str) -> Option<Arc<str>> {
        if !data.starts_with("{\"spindle\"") {
            return Some(Arc::from(data));
        }
        let envelope: Value = serde_json::from_str(data).ok()?;
        let inner = envelope.get(ENVELOPE)?;
        if let Some(permission) = inner.get("permission") {
            if self.role()? != Role::Controller {
                return None;
            }
            let key = permission.get("key")?.as_str()?;
            let request = json!({
                "jsonrpc": "2.0",
                "id": permission_request_id(&self.session_id, key),
                "method": SESSION_REQUEST_PERMISSION,
                "params": permission.get(version_key(self.conn.protocol()))?,
            });
            return Some(Arc::from(request.to_string()));
        }
        if let Some(elicitation) = inner.get("elicitation") {
            if self.role()? != Role::Controller {
                return None;
            }
            let key = elicitation.get("key")?.as_str()?;
            let request = json!({
                "jsonrpc": "2.0",
                "id": elicitation_request_id(&self.session_id, key),
                "method": ELICITATION_CREATE,
                "params": elicitation.get("params")?,
            });
            return Some(Arc::from(request.to_string()));
        }
        if let Some(closed) = inner.get("elicitation_closed") {
            if self.role()? != Role::Controller {
                return None;
            }
            let key = closed.get("key")?.as_str()?;
            let id = elicitation_request_id(&self.session_id, key);
            return Some(notification(CANCEL_REQUEST, json!({ REQUEST_ID: id })));
        }
        if let Some(resolved) = inner.get("resolved") {
            if !self.conn.opted_attach() {
                return None;
            }
            let key = resolved.get("key")?.as_str()?;
            let outcome = resolved.get("outcome")?;
            let mut params = json!({
                "sessionId": self.session_id,
                REQUEST_ID: permission_request_id(&self.session_id, key),
                OUTCOME: outcome,
            });
            // The proposal's fields ("Multi-Client Session Attach"), where known.
            if let Some(tool) = resolved.get(TOOL_CALL_ID).filter(|t| t.is_string()) {
                params[TOOL_CALL_ID] = tool.clone();
            }
            if let Some(option) = outcome.get("optionId") {
                params[CHOSEN_OPTION_ID] = option.clone();
            }
            return Some(notification(PERMISSION_RESOLVED, params));
        }
        if let Some(response) = inner.get("response") {
            if !self.conn.answers_for(response.get("connection")?.as_str()?) {
                return None;
            }
            if let Some(only) = response.get("protocol").and_then(Value::as_u64)
                && only != u64::from(self.conn.protocol())
            {
                return None;
            }
            let mut message = json!({ "jsonrpc": "2.0", "id": response.get("id")? });
            match response.get("error") {
                Some(error) => message["error"] = error.clone(),
                None => message["result"] = response.get("result")?.clone(),
            }
            return Some(Arc::from(message.to_string()));
        }
        None
    }
}

/// A JSON-RPC notification's text.
pub fn notification(method: &str, params: Value) -> Arc<str> {
    Arc::from(json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string())
}

/// The WebSocket form of an event id (opt-in): a `_spindle/event_id` notification sent before each
/// message of a session's stream. The text up to the id is the same for every message, so it is
/// written once and each notice is that prefix and the id.
#[derive(Debug)]
pub struct EventIdNotices {
    prefix: String,
}

impl EventIdNotices {
    /// The notices of `session_id`'s stream.
    pub fn new(session_id: &str) -> EventIdNotices {
        let mut prefix = String::with_capacity(96 + session_id.len());
        prefix.push_str(r#"{"jsonrpc":"2.0","method":""#);
        prefix.push_str(EVENT_ID_NOTIFICATION);
        prefix.push_str(r#"","params":{"sessionId":"#);
        spindle_wire::json_text::push_json_string(&mut prefix, session_id);
        prefix.push_str(r#",""#);
        prefix.push_str(EVENT_ID);
        prefix.push_str(r#"":""#);
        EventIdNotices { prefix }
    }

    /// The notice of the message with event id `id`.
    pub fn notice(&self, id: EventId) -> String {
        self.run_notice(id, 1)
    }

    /// The notice of `count` messages in a row, the first with event id `id` and each next one
    /// with the next counter (`count` > 1 only to peers that opted into `event_id_runs`).
    pub fn run_notice(&self, id: EventId, count: usize) -> String {
        use std::fmt::Write as _;
        let mut text = String::with_capacity(self.prefix.len() + 64);
        text.push_str(&self.prefix);
        let _ = write!(text, "{}-{}", id.generation, id.counter);
        if count == 1 {
            text.push_str("\"}}");
        } else {
            let _ = write!(text, "\",\"{EVENT_ID_COUNT}\":{count}}}}}");
        }
        text
    }
}

#[cfg(test)]
mod event_id_tests {
    use super::*;

    #[test]
    fn the_event_id_notice_is_the_notification_it_was() {
        let id = EventId {
            generation: 4,
            counter: 99,
        };
        for session in ["12", "a\"b"] {
            let fast: Value =
                serde_json::from_str(&EventIdNotices::new(session).notice(id)).expect("JSON");
            let reference: Value = serde_json::from_str(&notification(
                EVENT_ID_NOTIFICATION,
                json!({ "sessionId": session, EVENT_ID: id.to_string() }),
            ))
            .expect("JSON");
            assert_eq!(fast, reference);
            let run: Value = serde_json::from_str(&EventIdNotices::new(session).run_notice(id, 3))
                .expect("JSON");
            let reference: Value = serde_json::from_str(&notification(
                EVENT_ID_NOTIFICATION,
                json!({ "sessionId": session, EVENT_ID: id.to_string(), EVENT_ID_COUNT: 3 }),
            ))
            .expect("JSON");
            assert_eq!(run, reference);
        }
        // A run of one is the plain notice.
        assert_eq!(
            EventIdNotices::new("12").run_notice(id, 1),
            EventIdNotices::new("12").notice(id)
        );
        // The exact text: the WebSocket client reads this form without a JSON parse
        // (spindle-protocol's `spindle_event_id_notice`), any other form with one.
        assert_eq!(
            EventIdNotices::new("12").notice(id),
            format!(
                r#"{{"jsonrpc":"2.0","method":"{EVENT_ID_NOTIFICATION}","params":{{"sessionId":"12","{EVENT_ID}":"4-99"}}}}"#
            )
        );
    }
}
