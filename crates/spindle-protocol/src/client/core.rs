//! [`ClientCore`]: the ACP client without I/O. It allocates request ids,
//! runs the `initialize` handshake (v2 preferred with fallback to v1),
//! checks the agent's capabilities before session calls, matches responses
//! to requests, answers what JSON-RPC and ACP require it to answer, and turns
//! everything the agent sends into [`ClientEvent`]s.
//!
//! It is fed what the agent sent ([`ClientCore::receive`],
//! [`ClientCore::receive_line`]) and hands back what to send
//! ([`ClientCore::take_outgoing`]), what happened
//! ([`ClientCore::take_events`]) and which requests were answered
//! ([`ClientCore::take_completions`]). It never blocks, spawns or reads a
//! clock: [`AcpClient`](super::AcpClient) drives it with tokio over a
//! [`Connection`](crate::Connection), and `spindle serve` drives it over its
//! own raw-line link, which logs every line before the core sees it.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::handshake::{first_version, initialize_params, parse_initialize};
use super::sessions::SessionTracks;
use super::types::{ClientError, ClientEvent, ClientOptions, InitializeOutcome};
use crate::jsonrpc::{DecodeError, Message, RequestId, ResponseError, to_raw};
use crate::req_queue::ReqQueue;
use crate::transport::{Incoming, decode_str_into, unreported_update_session};
use spindle_wire::client_methods::{
    CANCEL_REQUEST, ELICITATION_CREATE, FS_READ_TEXT_FILE, FS_WRITE_TEXT_FILE, INITIALIZE,
    RESOURCE_NOT_FOUND_CODE, SESSION_CANCEL, SESSION_PROMPT, SESSION_REQUEST_PERMISSION,
    SESSION_UPDATE, TERMINAL_PREFIX, fields,
};

/// Why the client sent a request; decides what its response does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Purpose {
    /// The handshake, asking for this version.
    Initialize {
        asked: u16,
    },
    NewSession,
    Prompt {
        session_id: String,
    },
    Other,
}

#[derive(Debug)]
struct Outgoing<T> {
    purpose: Purpose,
    data: T,
}

#[derive(Debug)]
struct IncomingData {
    method: String,
    session_id: Option<String>,
}

/// A request of ours that was answered (or failed for good: the agent left).
#[derive(Debug)]
pub struct Completion<T> {
    /// The request's id.
    pub id: RequestId,
    /// The request's method.
    pub method: String,
    /// What the caller attached to the request.
    pub data: T,
    /// The result; for `initialize`, the raw result once it was read into
    /// [`ClientCore::initialize_outcome`].
    pub result: Result<Box<RawValue>, ClientError>,
}

/// Where the `initialize` handshake stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakePhase {
    /// `initialize` was not sent yet.
    NotStarted,
    /// `initialize` was sent and is not answered yet.
    Initializing,
    /// The version is negotiated; session calls are possible.
    Initialized,
    /// The agent refused or answered nonsense; see the completion's error.
    Failed,
}

/// The ACP client state machine, without I/O (see the module docs). `T` is
/// what the driver attaches to each of its requests (a waiter, a tag) and
/// gets back in the request's [`Completion`].
#[derive(Debug)]
pub struct ClientCore<T> {
    options: ClientOptions,
    queue: ReqQueue<Outgoing<T>, IncomingData>,
    init: Option<InitializeOutcome>,
    phase: HandshakePhase,
    sessions: SessionTracks,
    closed: bool,
    line_number: u64,
    /// `false`: session updates the runtime routes unparsed are not reported as
    /// [`ClientEvent::SessionUpdate`] ([`Self::leave_updates_unreported`]).
    report_updates: bool,
    outgoing: Vec<Message>,
    events: Vec<ClientEvent>,
    completions: Vec<Completion<T>>,
}

impl<T> ClientCore<T> {
    /// A core presenting itself with `options` (its `wire_tap` is the
    /// driver's business and is not kept).
    pub fn new(mut options: ClientOptions) -> Self {
        options.wire_tap = None;
        ClientCore {
            options,
            queue: ReqQueue::default(),
            init: None,
            phase: HandshakePhase::NotStarted,
            sessions: SessionTracks::default(),
            closed: false,
            line_number: 0,
            report_updates: true,
            outgoing: Vec::new(),
            events: Vec::new(),
            completions: Vec::new(),
        }
    }

    /// A core whose request ids are the strings `{prefix}0`, `{prefix}1`, ...
    /// (see [`ReqQueue::with_id_prefix`]).
    pub fn with_id_prefix(options: ClientOptions, prefix: impl Into<String>) -> Self {
        let mut core = Self::new(options);
        core.queue = ReqQueue::with_id_prefix(prefix);
        core
    }

    /// The options the core presents itself with.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Messages to send to the agent, in order.
    pub fn take_outgoing(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.outgoing)
    }

    /// Events for the application, in order.
    pub fn take_events(&mut self) -> Vec<ClientEvent> {
        std::mem::take(&mut self.events)
    }

    /// Moves the events for the application to the end of `out` (the core
    /// keeps its buffer: no allocation per message on a hot path).
    pub fn drain_events_into(&mut self, out: &mut Vec<ClientEvent>) {
        out.append(&mut self.events);
    }

    /// Whether messages to send or answered requests are waiting to be
    /// taken ([`Self::take_outgoing`], [`Self::take_completions`]).
    pub fn has_output(&self) -> bool {
        !self.outgoing.is_empty() || !self.completions.is_empty()
    }

    /// Requests answered since the last call.
    pub fn take_completions(&mut self) -> Vec<Completion<T>> {
        std::mem::take(&mut self.completions)
    }

    /// Where the handshake stands.
    pub fn handshake_phase(&self) -> HandshakePhase {
        self.phase
    }

    /// The negotiated protocol version, once `initialize` has completed.
    pub fn protocol_version(&self) -> Option<u16> {
        self.init.as_ref().map(|i| i.protocol_version)
    }

    /// The `initialize` outcome, once available.
    pub fn initialize_outcome(&self) -> Option<&InitializeOutcome> {
        self.init.as_ref()
    }

    /// Whether the connection is closed ([`ClientCore::close`]).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The pending requests of ours: id, method and the caller's data.
    pub fn pending_requests(&self) -> impl Iterator<Item = (&RequestId, &str, &T)> {
        self.queue
            .outgoing_iter()
            .map(|(id, p)| (id, p.method.as_str(), &p.data.data))
    }

    pub(super) fn register(
        &mut self,
        method: &str,
        params: Box<RawValue>,
        purpose: Purpose,
        data: T,
    ) -> Result<RequestId, ClientError> {
        if self.closed {
            return Err(ClientError::Disconnected);
        }
        if purpose == Purpose::NewSession {
            self.sessions.new_session_sent();
        }
        let id = self
            .queue
            .register_outgoing(method, Outgoing { purpose, data });
        self.outgoing.push(Message::Request {
            id: id.clone(),
            method: method.to_owned(),
            params: Some(params),
        });
        Ok(id)
    }

    /// Makes `session_id` known before it is opened (load, resume): its
    /// replayed updates are expected.
    pub(super) fn register_session(&mut self, session_id: &str) {
        self.sessions.register(session_id);
    }

    /// Forgets a request the driver could not send; returns its data.
    pub fn forget_request(&mut self, id: &RequestId) -> Option<T> {
        let pending = self.queue.complete_outgoing(id).ok()?;
        if pending.data.purpose == Purpose::NewSession {
            self.sessions.new_session_answered(None);
        }
        Some(pending.data.data)
    }

    /// Starts the handshake: `initialize` with the preferred version. Its
    /// completion (carrying `data`) comes once a version is agreed, after a
    /// fallback to v1 if the agent rejects v2.
    pub fn initialize(&mut self, data: T) -> Result<RequestId, ClientError> {
        let asked = first_version(&self.options);
        let params = initialize_params(&self.options, asked);
        let id = self.register(INITIALIZE, params, Purpose::Initialize { asked }, data)?;
        self.phase = HandshakePhase::Initializing;
        Ok(id)
    }

    pub(super) fn require_init(&self) -> Result<&InitializeOutcome, ClientError> {
        self.init.as_ref().ok_or(ClientError::NotInitialized)
    }

    /// `session/new` (without additional directories: see
    /// [`ClientCore::new_session_with_directories`]).
    pub fn new_session(
        &mut self,
        cwd: &str,
        mcp_servers: &Value,
        data: T,
    ) -> Result<RequestId, ClientError> {
        self.new_session_with_directories(cwd, mcp_servers, &[], data)
    }

    /// `session/prompt` with `blocks` as the prompt.
    pub fn prompt(
        &mut self,
        session_id: &str,
        blocks: &impl Serialize,
        data: T,
    ) -> Result<RequestId, ClientError> {
        self.require_init()?;
        #[derive(Serialize)]
        struct PromptParams<'a, B> {
            #[serde(rename = "sessionId")]
            session_id: &'a str,
            prompt: &'a B,
        }
        let params = to_raw(&PromptParams {
            session_id,
            prompt: blocks,
        })
        .map_err(|e| ClientError::Protocol(format!("prompt blocks do not serialize: {e}")))?;
        self.sessions.prompt_sent(session_id);
        let purpose = Purpose::Prompt {
            session_id: session_id.to_owned(),
        };
        self.register(SESSION_PROMPT, params, purpose, data)
    }

    /// Any other request (extension methods).
    pub fn request(
        &mut self,
        method: &str,
        params: Box<RawValue>,
        data: T,
    ) -> Result<RequestId, ClientError> {
        self.register(method, params, Purpose::Other, data)
    }

    /// Any notification.
    pub fn notify(&mut self, method: &str, params: Box<RawValue>) {
        self.outgoing.push(Message::Notification {
            method: method.to_owned(),
            params: Some(params),
        });
    }

    /// `$/cancel_request` for a pending request of ours; `false` when it is
    /// no longer pending or was already cancelled.
    pub fn cancel_request(&mut self, id: &RequestId) -> bool {
        match self.queue.cancel_outgoing(id) {
            Some(message) => {
                self.outgoing.push(message);
                true
            }
            None => false,
        }
    }

    /// `session/cancel`, then every pending permission request of the session
    /// answered `cancelled` (each reported as [`ClientEvent::RequestCancelled`]),
    /// as ACP requires.
    pub fn cancel(&mut self, session_id: &str) -> Result<(), ClientError> {
        let pending = self.queue.incoming_matching(|d| {
            d.method == SESSION_REQUEST_PERMISSION && d.session_id.as_deref() == Some(session_id)
        });
        let notification =
            Message::notification(SESSION_CANCEL, &json!({ fields::SESSION_ID: session_id }))
                .map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.outgoing.push(notification);
        for id in pending {
            self.respond_permission(&id, &json!({ "outcome": "cancelled" }))?;
            self.events
                .push(ClientEvent::RequestCancelled { request_id: id });
        }
        Ok(())
    }

    /// Answers a permission request with `{"outcome": outcome}`.
    pub fn respond_permission(
        &mut self,
        request_id: &RequestId,
        outcome: &Value,
    ) -> Result<(), ClientError> {
        let result = to_raw(&json!({ "outcome": outcome }))
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.respond(request_id, Ok(result))
    }

    /// Answers a pending agent request.
    pub fn respond(
        &mut self,
        request_id: &RequestId,
        result: Result<Box<RawValue>, ResponseError>,
    ) -> Result<(), ClientError> {
        let Some(asked) = self.queue.complete_incoming(request_id) else {
            return Err(ClientError::UnknownRequest(request_id.clone()));
        };
        let result = match result {
            Err(error)
                if asked.method == FS_READ_TEXT_FILE
                    && error.code == RESOURCE_NOT_FOUND_CODE
                    && self
                        .init
                        .as_ref()
                        .is_some_and(InitializeOutcome::reads_missing_files_as_empty) =>
            {
                self.events.push(ClientEvent::Diagnostic {
                    message: format!(
                        "{} (answered as an empty file: this agent cannot tell a missing file \
                         from a failed read, and creates a file only after reading it as empty)",
                        error.message
                    ),
                });
                to_raw(&json!({ "content": "" }))
                    .map_err(|e| ResponseError::internal_error(&e.to_string()))
            }
            other => other,
        };
        self.outgoing.push(Message::Response {
            id: request_id.clone(),
            result,
        });
        Ok(())
    }

    /// The connection ended: every pending request of ours fails with
    /// [`ClientError::Disconnected`], and new ones are refused.
    pub fn close(&mut self) {
        self.closed = true;
        for (id, pending) in self.queue.drain_outgoing() {
            self.completions.push(Completion {
                id,
                method: pending.method,
                data: pending.data.data,
                result: Err(ClientError::Disconnected),
            });
        }
    }

    /// One item from a [`Connection`](crate::Connection).
    pub fn receive(&mut self, incoming: Incoming) {
        match incoming {
            Incoming::Message(message) => self.receive_message(message),
            Incoming::ScannedUpdate(params) => {
                self.sessions.update_scanned(params, &mut self.events)
            }
            Incoming::Malformed { line_number, error } => {
                self.receive_malformed(line_number, error);
            }
            Incoming::Closed { .. } => self.close(),
        }
    }

    /// One raw line the agent wrote (without its newline), decoded here the
    /// way a [`Connection`](crate::Connection) decodes its lines. Lines are
    /// numbered in the order they are given.
    pub fn receive_line(&mut self, line: &str) {
        self.line_number += 1;
        if !self.report_updates
            && let Some(session_id) = unreported_update_session(line)
        {
            return self.sessions.diagnose_unknown(session_id, &mut self.events);
        }
        decode_str_into(line, self.line_number, true, &mut |item| {
            self.receive(item);
        });
    }

    /// For an application that renders updates from the lines themselves (`spindle serve`'s
    /// engine reads the logged lines): a `session/update` the core would report unparsed
    /// ([`ClientEvent::SessionUpdate`] with its params as they came: the compact envelope, no
    /// `state_update`) is only checked for its session (the unknown-session diagnostic), not
    /// copied into an event. Updates the core acts on (a `state_update` ends a v2 turn) and
    /// any other line are handled as before.
    pub fn leave_updates_unreported(&mut self) {
        self.report_updates = false;
    }

    /// A frame that could not be decoded. If its id could be read: when it
    /// answers one of our requests, that request fails (instead of waiting
    /// forever); when it was meant as a request, the agent gets the JSON-RPC
    /// error response.
    pub fn receive_malformed(&mut self, line_number: u64, error: DecodeError) {
        self.events.push(ClientEvent::Diagnostic {
            message: format!("malformed line {line_number} from agent: {error}"),
        });
        let Some(id) = error.id.clone() else {
            return;
        };
        if error.request {
            self.outgoing.push(error.to_response());
        } else if self.queue.outgoing(&id).is_some() {
            let failure =
                ResponseError::new(error.code, format!("malformed response: {}", error.message));
            self.receive_response(id, Err(failure));
        }
    }

    /// One decoded message from the agent.
    pub fn receive_message(&mut self, message: Message) {
        match message {
            Message::Response { id, result } => self.receive_response(id, result),
            Message::Notification { method, params } => self.receive_notification(method, params),
            Message::Request { id, method, params } => self.receive_request(id, method, params),
        }
    }

    fn receive_response(&mut self, id: RequestId, result: Result<Box<RawValue>, ResponseError>) {
        let pending = match self.queue.complete_outgoing(&id) {
            Ok(p) => p,
            Err(mismatch) => {
                self.events.push(ClientEvent::Diagnostic {
                    message: mismatch.to_string(),
                });
                return;
            }
        };
        let method = pending.method;
        let Outgoing { purpose, data } = pending.data;
        let result = match purpose {
            Purpose::Initialize { asked } => match self.initialized(asked, result, data) {
                Some((data, result)) => (data, result),
                None => return, // retried with v1
            },
            Purpose::NewSession => {
                self.sessions.new_session_answered(result.as_deref().ok());
                (data, result.map_err(ClientError::Rpc))
            }
            Purpose::Prompt { session_id } => {
                self.prompt_answered(session_id, id.clone(), &result);
                (data, result.map_err(ClientError::Rpc))
            }
            Purpose::Other => (data, result.map_err(ClientError::Rpc)),
        };
        let (data, result) = result;
        self.completions.push(Completion {
            id,
            method,
            data,
            result,
        });
    }

    /// The answer to `initialize`: the negotiated outcome, or a retry with v1
    /// when the agent rejected v2 (then `None`: the request goes on).
    fn initialized(
        &mut self,
        asked: u16,
        result: Result<Box<RawValue>, ResponseError>,
        data: T,
    ) -> Option<(T, Result<Box<RawValue>, ClientError>)> {
        let raw = match result {
            Ok(raw) => raw,
            Err(e) if asked >= 2 && !self.closed => {
                self.events.push(ClientEvent::Diagnostic {
                    message: format!("agent rejected protocol v2 ({e}); retrying with v1"),
                });
                let params = initialize_params(&self.options, 1);
                // Cannot fail: the core is not closed.
                let _ = self.register(INITIALIZE, params, Purpose::Initialize { asked: 1 }, data);
                return None;
            }
            Err(e) => {
                self.phase = HandshakePhase::Failed;
                return Some((data, Err(ClientError::Rpc(e))));
            }
        };
        match parse_initialize(raw.clone(), asked) {
            Ok(outcome) => {
                self.init = Some(outcome);
                self.phase = HandshakePhase::Initialized;
                Some((data, Ok(raw)))
            }
            Err(e) => {
                self.phase = HandshakePhase::Failed;
                Some((data, Err(e)))
            }
        }
    }

    fn prompt_answered(
        &mut self,
        session_id: String,
        request_id: RequestId,
        result: &Result<Box<RawValue>, ResponseError>,
    ) {
        self.events.push(ClientEvent::PromptResponse {
            session_id: session_id.clone(),
            request_id,
            result: match result {
                Ok(r) => Ok(r.clone()),
                Err(e) => Err(e.to_raw()),
            },
        });
        if self.protocol_version() == Some(1) {
            let stop_reason = result.as_ref().ok().and_then(|r| stop_reason_of(r.get()));
            self.sessions.v1_turn_ended(&session_id);
            self.events.push(ClientEvent::TurnFinished {
                session_id,
                stop_reason,
                error: result.as_ref().err().map(ResponseError::to_raw),
            });
        } else {
            self.sessions
                .v2_prompt_answered(&session_id, result.is_ok());
        }
    }

    fn receive_notification(&mut self, method: String, params: Option<Box<RawValue>>) {
        match method.as_str() {
            SESSION_UPDATE => {
                let v2 = self.protocol_version() == Some(2);
                self.sessions.update(params, v2, &mut self.events);
            }
            CANCEL_REQUEST => self.agent_cancelled_request(params.as_deref()),
            _ => self
                .events
                .push(ClientEvent::AgentNotification { method, params }),
        }
    }

    /// The agent withdrew one of its requests: answer it with "request
    /// cancelled" and tell the application to drop it.
    fn agent_cancelled_request(&mut self, params: Option<&RawValue>) {
        #[derive(serde::Deserialize)]
        struct CancelParams {
            #[serde(rename = "requestId")]
            request_id: RequestId,
        }
        let parsed = params.and_then(|p| serde_json::from_str::<CancelParams>(p.get()).ok());
        let Some(CancelParams { request_id }) = parsed else {
            self.events.push(ClientEvent::Diagnostic {
                message: "$/cancel_request without a valid requestId".into(),
            });
            return;
        };
        // Unknown or already answered: nothing to withdraw.
        if self.queue.complete_incoming(&request_id).is_some() {
            self.events.push(ClientEvent::RequestCancelled {
                request_id: request_id.clone(),
            });
            self.outgoing.push(Message::response_err(
                request_id,
                ResponseError::request_cancelled(
                    "the agent withdrew the request ($/cancel_request)",
                ),
            ));
        }
    }

    fn receive_request(&mut self, id: RequestId, method: String, params: Option<Box<RawValue>>) {
        let host_method = matches!(method.as_str(), FS_READ_TEXT_FILE | FS_WRITE_TEXT_FILE)
            || method.starts_with(TERMINAL_PREFIX);
        if host_method && self.protocol_version() == Some(2) {
            // v2 has no client file system or terminals: never served, whatever was offered
            // for a v1 fallback.
            self.events.push(ClientEvent::Diagnostic {
                message: format!(
                    "the agent sent {method}, which protocol v2 does not have (no client files or terminals); answered method not found"
                ),
            });
            self.outgoing.push(Message::response_err(
                id,
                ResponseError::method_not_found(
                    &method,
                    &format!("{method}: protocol v2 has no client files or terminals"),
                ),
            ));
            return;
        }
        let o = &self.options;
        let enabled = match method.as_str() {
            SESSION_REQUEST_PERMISSION => true,
            ELICITATION_CREATE => o.elicitation,
            FS_READ_TEXT_FILE => o.fs_read_text_file,
            FS_WRITE_TEXT_FILE => o.fs_write_text_file,
            m if m.starts_with(TERMINAL_PREFIX) => o.terminal,
            _ => false,
        };
        if !enabled {
            self.outgoing.push(Message::response_err(
                id,
                ResponseError::method_not_found(&method, &not_offered(&method)),
            ));
            return;
        }
        let session_id = params.as_ref().and_then(|p| {
            #[derive(serde::Deserialize)]
            struct S {
                #[serde(rename = "sessionId")]
                session_id: String,
            }
            serde_json::from_str::<S>(p.get())
                .ok()
                .map(|s| s.session_id)
        });
        if method == SESSION_REQUEST_PERMISSION && (session_id.is_none() || params.is_none()) {
            self.outgoing.push(Message::response_err(
                id,
                ResponseError::invalid_params("session/request_permission needs sessionId"),
            ));
            return;
        }
        let registered = self.queue.register_incoming(
            id.clone(),
            IncomingData {
                method: method.clone(),
                session_id: session_id.clone(),
            },
        );
        if !registered {
            self.events.push(ClientEvent::Diagnostic {
                message: format!("agent reused request id {id} of a request already seen; ignored"),
            });
            return;
        }
        self.events
            .push(match (method.as_str(), session_id, params) {
                (SESSION_REQUEST_PERMISSION, Some(session_id), Some(params)) => {
                    ClientEvent::PermissionRequest {
                        request_id: id,
                        session_id,
                        params,
                    }
                }
                (_, _, params) => ClientEvent::AgentRequest {
                    request_id: id,
                    method,
                    params,
                },
            });
    }
}

/// Why a request of the agent's is answered "Method not found" (`data.details`).
fn not_offered(method: &str) -> String {
    match method {
        ELICITATION_CREATE => format!("{method}: this client did not advertise elicitation"),
        FS_READ_TEXT_FILE | FS_WRITE_TEXT_FILE => {
            format!("{method}: this client did not advertise this file access")
        }
        m if m.starts_with(TERMINAL_PREFIX) => {
            format!("{method}: this client did not advertise terminals")
        }
        _ => format!("{method}: not a method this client answers"),
    }
}

fn stop_reason_of(result: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
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
