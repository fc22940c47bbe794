//! The client's dispatch task and the state it shares with `AcpClient`:
//! routing of responses, agent requests and session updates, and the turn
//! tracking behind `TurnFinished`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use super::{
    ClientError, ClientEvent, ClientOptions, InitializeOutcome, WireDirection, WireRecord,
};
use crate::jsonrpc::{
    DecodeError, INVALID_PARAMS, METHOD_NOT_FOUND, Message, REQUEST_CANCELLED, RequestId,
    ResponseError,
};
use crate::req_queue::{CANCEL_REQUEST_METHOD, ReqQueue, ResponseMismatch};
use spindle_wire::tags::STATE_UPDATE;

use crate::transport::{ChildHandle, Incoming, MessageReceiver, WeakMessageSender};

#[derive(Debug)]
pub(super) enum Purpose {
    Initialize,
    NewSession,
    Prompt { session_id: String },
    Other,
}

pub(super) type Waiter = Option<oneshot::Sender<Result<Box<RawValue>, ClientError>>>;

#[derive(Debug)]
pub(super) struct OutgoingData {
    pub(super) purpose: Purpose,
    pub(super) waiter: Waiter,
}

#[derive(Debug)]
pub(super) struct IncomingData {
    pub(super) method: String,
    pub(super) session_id: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct SessionTrack {
    /// Foreground work is under way (v2): a prompt was sent, or a non-idle
    /// state was reported, since the last reported turn end.
    pub(super) active: bool,
    /// Since the last prompt was sent, the stream showed work under way: a
    /// `running`/`requires_action`/unknown state, or the prompt's acceptance.
    /// A rejected prompt then does not end the activity.
    pub(super) saw_busy_state: bool,
    /// The stop reason of the last state snapshot if that was `idle`; a
    /// repeat of it is the same snapshot again, never a new turn end.
    pub(super) last_idle: Option<Option<String>>,
}

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) queue: ReqQueue<OutgoingData, IncomingData>,
    pub(super) init: Option<InitializeOutcome>,
    pub(super) sessions: HashMap<String, SessionTrack>,
    pub(super) pending_new_sessions: usize,
    pub(super) closed: bool,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) options: ClientOptions,
    pub(super) events: mpsc::UnboundedSender<Vec<ClientEvent>>,
}

/// Most events handed over at once.
pub(super) const EVENT_BATCH: usize = 256;

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn emit(&self, event: ClientEvent) {
        // The application may have dropped its receiver; nothing to do then.
        let _ = self.events.send(vec![event]);
    }

    pub(super) fn tap(&self, direction: WireDirection, message: &Message) {
        if let Some(tap) = &self.options.wire_tap {
            let _ = tap.send(WireRecord {
                direction,
                json: message.to_json(),
            });
        }
    }

    pub(super) fn emit_all(&self, events: &mut Vec<ClientEvent>) {
        if !events.is_empty() {
            let _ = self.events.send(std::mem::take(events));
        }
    }
}

pub(super) async fn dispatch_loop(
    shared: Arc<Shared>,
    sender: WeakMessageSender,
    mut receiver: MessageReceiver,
    child: Option<ChildHandle>,
) {
    // Events are handed over in batches while input is queued: one channel
    // operation per batch instead of per update.
    let mut out: Vec<ClientEvent> = Vec::new();
    while let Some(incoming) = receiver.recv().await {
        match incoming {
            Incoming::Message(msg) => {
                shared.tap(WireDirection::Received, &msg);
                handle_message(&shared, &mut out, &sender, msg).await;
            }
            Incoming::Malformed { line_number, error } => {
                out.push(ClientEvent::Diagnostic {
                    message: format!("malformed line {line_number} from agent: {error}"),
                });
                if let Some(reply) = handle_malformed_with_id(&shared, &mut out, error) {
                    send_reply(&shared, &sender, reply).await;
                }
            }
            Incoming::Closed { reason } => {
                tracing::debug!("agent connection closed: {reason}");
                break;
            }
        }
        if !receiver.has_ready() || out.len() >= EVENT_BATCH {
            shared.emit_all(&mut out);
        }
    }
    shared.emit_all(&mut out);
    let pending = {
        let mut st = shared.lock();
        st.closed = true;
        st.queue.drain_outgoing()
    };
    for (_, p) in pending {
        if let Some(w) = p.data.waiter {
            let _ = w.send(Err(ClientError::Disconnected));
        }
    }
    let (status, stderr_tail) = match child {
        Some(c) => (Some(c.wait().await), c.stderr_tail()),
        None => (None, String::new()),
    };
    shared.emit(ClientEvent::AgentExited {
        status,
        stderr_tail,
    });
}

/// A malformed frame whose id could be read: if it answers one of our
/// requests, that request fails (instead of waiting forever); if it was
/// meant as a request, the agent gets the JSON-RPC error response.
fn handle_malformed_with_id(
    shared: &Shared,
    out: &mut Vec<ClientEvent>,
    error: DecodeError,
) -> Option<Message> {
    let id = error.id.clone()?;
    if error.request {
        return Some(error.to_response());
    }
    let ours = shared.lock().queue.outgoing(&id).is_some();
    if ours {
        handle_response(
            shared,
            out,
            id,
            Err(ResponseError::new(
                error.code,
                format!("malformed response: {}", error.message),
            )),
        );
    }
    None
}

async fn send_reply(shared: &Shared, sender: &WeakMessageSender, reply: Message) {
    if let Some(sender) = sender.upgrade() {
        shared.tap(WireDirection::Sent, &reply);
        let _ = sender.send(reply).await;
    }
}

async fn handle_message(
    shared: &Shared,
    out: &mut Vec<ClientEvent>,
    sender: &WeakMessageSender,
    msg: Message,
) {
    let reply = match msg {
        Message::Response { id, result } => {
            handle_response(shared, out, id, result);
            None
        }
        Message::Notification { method, params } => {
            handle_notification(shared, out, method, params)
        }
        Message::Request { id, method, params } => handle_request(shared, out, id, method, params),
    };
    if let Some(reply) = reply {
        send_reply(shared, sender, reply).await;
    }
}

fn handle_response(
    shared: &Shared,
    out: &mut Vec<ClientEvent>,
    id: RequestId,
    result: Result<Box<RawValue>, ResponseError>,
) {
    let (pending, version) = {
        let mut st = shared.lock();
        let version = st.init.as_ref().map(|i| i.protocol_version);
        let pending = st.queue.complete_outgoing(&id);
        if let Ok(p) = &pending
            && matches!(p.data.purpose, Purpose::NewSession)
        {
            st.pending_new_sessions = st.pending_new_sessions.saturating_sub(1);
            // Register before the waiter resumes so no update is diagnosed.
            if let Ok(r) = &result
                && let Some(sid) = session_id_of(r.get())
            {
                st.sessions.entry(sid).or_default();
            }
        }
        (pending, version)
    };
    let pending = match pending {
        Ok(p) => p,
        Err(m) => {
            let message = match m {
                ResponseMismatch::Unknown(_) | ResponseMismatch::Duplicate(_) => m.to_string(),
            };
            out.push(ClientEvent::Diagnostic { message });
            return;
        }
    };
    let OutgoingData { purpose, waiter } = pending.data;
    if let Purpose::Prompt { session_id } = &purpose {
        out.push(ClientEvent::PromptResponse {
            session_id: session_id.clone(),
            result: match &result {
                Ok(r) => Ok(r.clone()),
                Err(e) => Err(e.to_raw()),
            },
        });
        if version == Some(1) {
            let stop_reason = result.as_ref().ok().and_then(|r| stop_reason_of(r.get()));
            {
                let mut st = shared.lock();
                if let Some(s) = st.sessions.get_mut(session_id) {
                    s.active = false;
                }
            }
            out.push(ClientEvent::TurnFinished {
                session_id: session_id.clone(),
                stop_reason,
                error: result.as_ref().err().map(ResponseError::to_raw),
            });
        } else {
            let mut st = shared.lock();
            if let Some(s) = st.sessions.get_mut(session_id)
                && s.active
            {
                if result.is_ok() {
                    // Inserted: whatever follows belongs to this work.
                    s.saw_busy_state = true;
                } else if !s.saw_busy_state {
                    // A rejected prompt was never inserted; no turn started.
                    s.active = false;
                }
            }
        }
    }
    if let Some(w) = waiter {
        let _ = w.send(result.map_err(ClientError::Rpc));
    }
}

fn session_id_of(json: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct S {
        #[serde(rename = "sessionId")]
        session_id: String,
    }
    serde_json::from_str::<S>(json).ok().map(|s| s.session_id)
}

fn stop_reason_of(result: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct R {
        #[serde(rename = "stopReason", default)]
        stop_reason: Option<Value>,
    }
    serde_json::from_str::<R>(result)
        .ok()?
        .stop_reason?
        .as_str()
        .map(str::to_owned)
}

/// The fields of `session/update` params the runtime routes on.
#[derive(Deserialize)]
struct UpdateHead<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    update: Option<UpdateKind<'a>>,
}

#[derive(Deserialize)]
struct UpdateKind<'a> {
    #[serde(rename = "sessionUpdate", borrow, default)]
    session_update: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    state: Option<&'a RawValue>,
    #[serde(rename = "stopReason", borrow, default)]
    stop_reason: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// The routing fields of the common case without a second full parse:
/// params (already validated JSON) that open with a plain `sessionId`
/// string and never mention `"state_update"`. Anything else returns `None`
/// and goes through the full parse.
fn quick_update_head(params: &str) -> Option<UpdateHead<'_>> {
    const PREFIX: &str = "{\"sessionId\":\"";
    let rest = params.strip_prefix(PREFIX)?;
    let end = memchr::memchr2(b'"', b'\\', rest.as_bytes())?;
    // One searcher for the process: building it costs more than the search.
    static QUOTED_STATE_UPDATE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| {
            memchr::memmem::Finder::new(format!("\"{STATE_UPDATE}\"").as_bytes()).into_owned()
        });
    if rest.as_bytes()[end] != b'"' || QUOTED_STATE_UPDATE.find(params.as_bytes()).is_some() {
        return None;
    }
    Some(UpdateHead {
        session_id: std::borrow::Cow::Borrowed(&rest[..end]),
        update: None,
    })
}

fn handle_notification(
    shared: &Shared,
    out: &mut Vec<ClientEvent>,
    method: String,
    params: Option<Box<RawValue>>,
) -> Option<Message> {
    match method.as_str() {
        "session/update" => {
            let Some(params) = params else {
                out.push(ClientEvent::Diagnostic {
                    message: "session/update without params".into(),
                });
                return None;
            };
            let head: UpdateHead<'_> = match quick_update_head(params.get()) {
                Some(h) => h,
                None => match serde_json::from_str(params.get()) {
                    Ok(h) => h,
                    Err(e) => {
                        out.push(ClientEvent::Diagnostic {
                            message: format!("session/update without a usable sessionId: {e}"),
                        });
                        return None;
                    }
                },
            };
            let session_id = head.session_id.into_owned();
            let mut finished = None;
            {
                let mut st = shared.lock();
                let v2 = st.init.as_ref().is_some_and(|i| i.protocol_version == 2);
                // Agents may stream updates (e.g. available commands) before
                // answering session/new, for a session not known yet.
                let new_session_pending = st.pending_new_sessions > 0;
                let known = st.sessions.contains_key(&session_id);
                if !known && !new_session_pending {
                    out.push(ClientEvent::Diagnostic {
                        message: format!("session/update for unknown session {session_id}"),
                    });
                }
                if v2
                    && let Some(kind) = &head.update
                    && kind.session_update.as_deref() == Some(STATE_UPDATE)
                {
                    let track = st.sessions.entry(session_id.clone()).or_default();
                    let state = kind
                        .state
                        .and_then(|s| serde_json::from_str::<String>(s.get()).ok());
                    match state.as_deref() {
                        Some("idle") => {
                            let stop_reason = kind
                                .stop_reason
                                .and_then(|s| serde_json::from_str::<String>(s.get()).ok())
                                .filter(|s| !s.is_empty());
                            // An idle without stopReason "ends nothing" (a
                            // snapshot, possibly older than a prompt just
                            // sent) unless a busy state was seen: then the
                            // agent ended work without saying why.
                            let repeat = track.last_idle.as_ref() == Some(&stop_reason);
                            track.last_idle = Some(stop_reason.clone());
                            if track.active
                                && (track.saw_busy_state || (stop_reason.is_some() && !repeat))
                            {
                                track.active = false;
                                track.saw_busy_state = false;
                                let error = if stop_reason.as_deref() == Some("error") {
                                    kind.error.map(|e| e.to_owned())
                                } else {
                                    None
                                };
                                finished = Some((stop_reason, error));
                            }
                        }
                        // running, requires_action, and unknown states are
                        // all "busy"; an unknown state is never idle.
                        _ => {
                            track.active = true;
                            track.saw_busy_state = true;
                            track.last_idle = None;
                        }
                    }
                }
            }
            out.push(ClientEvent::SessionUpdate {
                session_id: session_id.clone(),
                params,
            });
            if let Some((stop_reason, error)) = finished {
                out.push(ClientEvent::TurnFinished {
                    session_id,
                    stop_reason,
                    error,
                });
            }
            None
        }
        CANCEL_REQUEST_METHOD => {
            // The agent withdrew one of its requests: answer it with
            // "request cancelled" and tell the application to drop it.
            #[derive(Deserialize)]
            struct CancelParams {
                #[serde(rename = "requestId")]
                request_id: RequestId,
            }
            let parsed = params
                .as_ref()
                .and_then(|p| serde_json::from_str::<CancelParams>(p.get()).ok());
            match parsed {
                Some(c) => {
                    let was_pending = shared.lock().queue.complete_incoming(&c.request_id);
                    // Unknown or already answered: nothing to withdraw.
                    was_pending.map(|_| {
                        out.push(ClientEvent::RequestCancelled {
                            request_id: c.request_id.clone(),
                        });
                        Message::response_err(
                            c.request_id,
                            ResponseError::new(REQUEST_CANCELLED, "request cancelled"),
                        )
                    })
                }
                None => {
                    out.push(ClientEvent::Diagnostic {
                        message: "$/cancel_request without a valid requestId".into(),
                    });
                    None
                }
            }
        }
        _ => {
            out.push(ClientEvent::AgentNotification { method, params });
            None
        }
    }
}

fn handle_request(
    shared: &Shared,
    out: &mut Vec<ClientEvent>,
    id: RequestId,
    method: String,
    params: Option<Box<RawValue>>,
) -> Option<Message> {
    let o = &shared.options;
    let enabled = match method.as_str() {
        "session/request_permission" => true,
        "fs/read_text_file" => o.fs_read_text_file,
        "fs/write_text_file" => o.fs_write_text_file,
        m if m.starts_with("terminal/") => o.terminal,
        _ => false,
    };
    if !enabled {
        return Some(Message::response_err(
            id,
            ResponseError::new(METHOD_NOT_FOUND, format!("method not found: {method}")),
        ));
    }
    let session_id = params.as_ref().and_then(|p| {
        #[derive(Deserialize)]
        struct S {
            #[serde(rename = "sessionId")]
            session_id: String,
        }
        serde_json::from_str::<S>(p.get())
            .ok()
            .map(|s| s.session_id)
    });
    if method == "session/request_permission" && (session_id.is_none() || params.is_none()) {
        return Some(Message::response_err(
            id,
            ResponseError::new(INVALID_PARAMS, "session/request_permission needs sessionId"),
        ));
    }
    let registered = shared.lock().queue.register_incoming(
        id.clone(),
        IncomingData {
            method: method.clone(),
            session_id: session_id.clone(),
        },
    );
    if !registered {
        out.push(ClientEvent::Diagnostic {
            message: format!("agent reused request id {id} of a request already seen; ignored"),
        });
        return None;
    }
    match (method.as_str(), session_id, params) {
        ("session/request_permission", Some(session_id), Some(params)) => {
            out.push(ClientEvent::PermissionRequest {
                request_id: id,
                session_id,
                params,
            });
        }
        (_, _, params) => out.push(ClientEvent::AgentRequest {
            request_id: id,
            method,
            params,
        }),
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_update_head_takes_only_the_plain_common_case() {
        let plain = r#"{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk"}}"#;
        assert_eq!(quick_update_head(plain).unwrap().session_id, "s-1");
        for slow in [
            // An escape in the id, another key order, a state update, spaces.
            r#"{"sessionId":"a\"b","update":{}}"#,
            r#"{"update":{},"sessionId":"s"}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle"}}"#,
            r#"{ "sessionId":"s","update":{}}"#,
            r#"{"sessionId":"unterminated"#,
        ] {
            assert!(quick_update_head(slow).is_none(), "{slow}");
        }
        // The slow path reads the escaped id correctly.
        let head: UpdateHead<'_> =
            serde_json::from_str(r#"{"sessionId":"a\"b","update":{}}"#).unwrap();
        assert_eq!(head.session_id, "a\"b");
    }
}
