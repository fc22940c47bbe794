//! The ACP client runtime: version negotiation, sessions, prompts, and one
//! stream of [`ClientEvent`]s for the application's main loop.
//!
//! The runtime decodes only what it needs for routing (session ids, the v2
//! `state_update` state and stop reason); every update reaches the
//! application as the verbatim `session/update` params.

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::extensions::{SPINDLE_EXTENSIONS, spindle_extensions_in, spindle_meta};
use crate::jsonrpc::{
    INVALID_PARAMS, METHOD_NOT_FOUND, Message, REQUEST_CANCELLED, RequestId, ResponseError, to_raw,
};
use crate::req_queue::{CANCEL_REQUEST_METHOD, ReqQueue, ResponseMismatch};
use crate::transport::{
    ChildExit, ChildHandle, Connection, Incoming, MessageReceiver, MessageSender, SpawnOptions,
    spawn_child,
};

/// Which protocol version to ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// ACP v1 only.
    #[default]
    V1,
    /// Ask for the v2 draft; fall back to v1 when the agent answers 1 or
    /// rejects the v2 `initialize`.
    V2Preferred,
}

/// Name and version the client reports in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientInfo {
    /// Programmatic name.
    pub name: String,
    /// Human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Version string.
    pub version: String,
}

impl Default for ClientInfo {
    fn default() -> Self {
        ClientInfo {
            name: "spindle".into(),
            title: Some("Spindle".into()),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// How the client presents itself and what it handles.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Version to negotiate.
    pub protocol: ProtocolChoice,
    /// Reported client identity.
    pub client_info: ClientInfo,
    /// v1 `fs.readTextFile` capability. When set, `fs/read_text_file`
    /// requests reach the application as [`ClientEvent::AgentRequest`].
    pub fs_read_text_file: bool,
    /// v1 `fs.writeTextFile` capability (same routing as above).
    pub fs_write_text_file: bool,
    /// v1 `terminal` capability (`terminal/*` requests routed as above).
    pub terminal: bool,
    /// Advertise the Spindle streaming extensions in `initialize` `_meta`
    /// (see [`crate::extensions`]). Extensions are accepted either way.
    pub spindle_extensions: bool,
}

/// What `initialize` established.
#[derive(Debug, Clone)]
pub struct InitializeOutcome {
    /// The negotiated protocol version (1 or 2).
    pub protocol_version: u16,
    /// `agentCapabilities` (v1) or `capabilities` (v2), raw (`{}` if absent).
    pub agent_capabilities: Box<RawValue>,
    /// `agentInfo` (v1) or `info` (v2), raw.
    pub agent_info: Option<Box<RawValue>>,
    /// `authMethods`, raw.
    pub auth_methods: Option<Box<RawValue>>,
    /// Spindle extensions the agent says it emits (from its `_meta`).
    pub agent_spindle_extensions: Vec<String>,
    /// The whole result, verbatim.
    pub raw: Box<RawValue>,
}

/// What the agent said about an accepted prompt.
#[derive(Debug, Clone)]
pub struct PromptOutcome {
    /// v1: the stop reason (the turn is over). v2: `None`.
    pub stop_reason: Option<String>,
    /// v2: the `messageId` of the inserted user message, if returned.
    pub message_id: Option<String>,
    /// The whole result, verbatim.
    pub raw: Box<RawValue>,
}

/// Errors of client calls.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientError {
    /// The agent answered with a JSON-RPC error.
    Rpc(ResponseError),
    /// The connection is closed.
    Disconnected,
    /// The agent did not advertise what this call needs.
    Unsupported(String),
    /// `initialize` has not completed.
    NotInitialized,
    /// The agent's answer does not have the expected shape.
    Protocol(String),
    /// No pending agent request has this id.
    UnknownRequest(RequestId),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Rpc(e) => write!(f, "agent error: {e}"),
            ClientError::Disconnected => f.write_str("agent connection closed"),
            ClientError::Unsupported(what) => write!(f, "agent does not support {what}"),
            ClientError::NotInitialized => f.write_str("initialize has not completed"),
            ClientError::Protocol(m) => write!(f, "protocol error: {m}"),
            ClientError::UnknownRequest(id) => write!(f, "no pending agent request with id {id}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Everything the client runtime reports; the application's main loop reads
/// these from one receiver.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientEvent {
    /// A `session/update` notification, params verbatim (unknown update
    /// kinds included). Accepted at any time.
    SessionUpdate {
        /// The `sessionId`.
        session_id: String,
        /// The notification params.
        params: Box<RawValue>,
    },
    /// The response to a `session/prompt` (v1: end of turn; v2: accepted).
    PromptResponse {
        /// The session prompted.
        session_id: String,
        /// The result, or the error object, verbatim.
        result: Result<Box<RawValue>, Box<RawValue>>,
    },
    /// A turn ended: the v1 prompt response, or the v2 `state_update` idle
    /// that ends foreground work. Reported once per turn; repeated idle
    /// snapshots do not repeat it.
    TurnFinished {
        /// The session.
        session_id: String,
        /// The stop reason, when the agent reported one.
        stop_reason: Option<String>,
        /// The error object (v1 error response, or v2 idle with
        /// `stopReason: "error"`), verbatim.
        error: Option<Box<RawValue>>,
    },
    /// `session/request_permission`: answer with
    /// [`AcpClient::respond_permission`]. Never answered automatically,
    /// except with `cancelled` when the application cancels the session.
    PermissionRequest {
        /// Id to answer.
        request_id: RequestId,
        /// The session.
        session_id: String,
        /// The request params, verbatim.
        params: Box<RawValue>,
    },
    /// A pending agent request (usually a permission request) was
    /// withdrawn: the application cancelled the session, or the agent sent
    /// `$/cancel_request`. It has been answered already; the UI should drop
    /// it.
    RequestCancelled {
        /// The request's id.
        request_id: RequestId,
    },
    /// Another agent-to-client request the application enabled (fs/*,
    /// terminal/*). Answer with [`AcpClient::respond`].
    AgentRequest {
        /// Id to answer.
        request_id: RequestId,
        /// The method.
        method: String,
        /// The params, verbatim.
        params: Option<Box<RawValue>>,
    },
    /// A notification other than `session/update` / `$/cancel_request`.
    AgentNotification {
        /// The method.
        method: String,
        /// The params, verbatim.
        params: Option<Box<RawValue>>,
    },
    /// Something was wrong but the connection goes on (malformed line,
    /// unknown response id, update for an unknown session, ...).
    Diagnostic {
        /// For humans.
        message: String,
    },
    /// The connection ended. For spawned agents, `status` is the exit.
    AgentExited {
        /// Exit of the agent process (`None` for non-process connections).
        status: Option<ChildExit>,
        /// Last lines of the agent's stderr (empty for non-process
        /// connections).
        stderr_tail: String,
    },
}

#[derive(Debug)]
enum Purpose {
    Initialize,
    NewSession,
    Prompt { session_id: String },
    Other,
}

type Waiter = Option<oneshot::Sender<Result<Box<RawValue>, ClientError>>>;

#[derive(Debug)]
struct OutgoingData {
    purpose: Purpose,
    waiter: Waiter,
}

#[derive(Debug)]
struct IncomingData {
    method: String,
    session_id: Option<String>,
}

#[derive(Debug, Default)]
struct SessionTrack {
    /// Foreground work is under way (v2): a prompt was sent, or a non-idle
    /// state was reported, since the last reported turn end.
    active: bool,
    /// A `running`/`requires_action`/unknown state was seen since the last
    /// prompt was sent; a rejected prompt then does not end the activity.
    saw_busy_state: bool,
}

#[derive(Debug, Default)]
struct State {
    queue: ReqQueue<OutgoingData, IncomingData>,
    init: Option<InitializeOutcome>,
    sessions: HashMap<String, SessionTrack>,
    pending_new_sessions: usize,
    closed: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    options: ClientOptions,
    events: mpsc::UnboundedSender<Vec<ClientEvent>>,
}

/// Most events handed over at once.
const EVENT_BATCH: usize = 256;

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn emit(&self, event: ClientEvent) {
        // The application may have dropped its receiver; nothing to do then.
        let _ = self.events.send(vec![event]);
    }

    fn emit_all(&self, events: &mut Vec<ClientEvent>) {
        if !events.is_empty() {
            let _ = self.events.send(std::mem::take(events));
        }
    }
}

/// An ACP client over a [`Connection`]. Cheap to clone; all clones share the
/// connection and the event stream.
#[derive(Debug, Clone)]
pub struct AcpClient {
    shared: Arc<Shared>,
    sender: MessageSender,
}

/// The receiving end of a client's events. Unbounded so that a caller
/// awaiting a v1 prompt never deadlocks against unread updates.
#[derive(Debug)]
pub struct ClientEvents {
    rx: mpsc::UnboundedReceiver<Vec<ClientEvent>>,
    buffered: std::collections::VecDeque<ClientEvent>,
}

impl ClientEvents {
    /// The next event; `None` after [`ClientEvent::AgentExited`] once every
    /// client handle is dropped.
    pub async fn recv(&mut self) -> Option<ClientEvent> {
        loop {
            if let Some(e) = self.buffered.pop_front() {
                return Some(e);
            }
            let batch = self.rx.recv().await?;
            self.buffered.extend(batch);
        }
    }

    /// The next event if one is ready now.
    pub fn try_recv(&mut self) -> Option<ClientEvent> {
        loop {
            if let Some(e) = self.buffered.pop_front() {
                return Some(e);
            }
            let batch = self.rx.try_recv().ok()?;
            self.buffered.extend(batch);
        }
    }
}

impl AcpClient {
    /// Starts a client over `connection` (spawns one dispatch task on the
    /// current tokio runtime).
    pub fn new(connection: Connection, options: ClientOptions) -> (AcpClient, ClientEvents) {
        Self::start(connection, options, None)
    }

    /// Spawns the agent `command` and starts a client over its stdio.
    pub fn spawn(
        command: &[OsString],
        spawn_options: SpawnOptions,
        options: ClientOptions,
    ) -> std::io::Result<(AcpClient, ClientEvents, ChildHandle)> {
        let (connection, child) = spawn_child(command, spawn_options)?;
        let (client, events) = Self::start(connection, options, Some(child.clone()));
        Ok((client, events, child))
    }

    /// Starts a client over `connection`, reporting `child`'s exit in
    /// [`ClientEvent::AgentExited`].
    pub fn start(
        connection: Connection,
        options: ClientOptions,
        child: Option<ChildHandle>,
    ) -> (AcpClient, ClientEvents) {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            options,
            events: events_tx,
        });
        let Connection { sender, receiver } = connection;
        tokio::spawn(dispatch_loop(
            shared.clone(),
            sender.clone(),
            receiver,
            child,
        ));
        (
            AcpClient { shared, sender },
            ClientEvents {
                rx: events_rx,
                buffered: Default::default(),
            },
        )
    }

    /// The negotiated protocol version, once `initialize` has completed.
    pub fn protocol_version(&self) -> Option<u16> {
        self.shared.lock().init.as_ref().map(|i| i.protocol_version)
    }

    /// The `initialize` outcome, once available.
    pub fn initialize_outcome(&self) -> Option<InitializeOutcome> {
        self.shared.lock().init.clone()
    }

    async fn request(
        &self,
        method: &str,
        params: Box<RawValue>,
        purpose: Purpose,
    ) -> Result<Box<RawValue>, ClientError> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut st = self.shared.lock();
            if st.closed {
                return Err(ClientError::Disconnected);
            }
            if matches!(purpose, Purpose::NewSession) {
                st.pending_new_sessions += 1;
            }
            st.queue.register_outgoing(
                method,
                OutgoingData {
                    purpose,
                    waiter: Some(tx),
                },
            )
        };
        let msg = Message::Request {
            id: id.clone(),
            method: method.to_owned(),
            params: Some(params),
        };
        if self.sender.send(msg).await.is_err() {
            let mut st = self.shared.lock();
            if let Ok(p) = st.queue.complete_outgoing(&id)
                && matches!(p.data.purpose, Purpose::NewSession)
            {
                st.pending_new_sessions = st.pending_new_sessions.saturating_sub(1);
            }
            return Err(ClientError::Disconnected);
        }
        rx.await.unwrap_or(Err(ClientError::Disconnected))
    }

    fn build_initialize(&self, version: u16) -> Box<RawValue> {
        let o = &self.shared.options;
        let v1_caps = json!({
            "fs": { "readTextFile": o.fs_read_text_file, "writeTextFile": o.fs_write_text_file },
            "terminal": o.terminal,
        });
        let mut params = if version >= 2 {
            // v1 fields ride along so that a v1-only agent answering `1`
            // still sees the client's identity and capabilities.
            json!({
                "protocolVersion": 2,
                "info": o.client_info,
                "capabilities": {},
                "clientInfo": o.client_info,
                "clientCapabilities": v1_caps,
            })
        } else {
            json!({
                "protocolVersion": 1,
                "clientInfo": o.client_info,
                "clientCapabilities": v1_caps,
            })
        };
        if o.spindle_extensions {
            params["_meta"] = spindle_meta(SPINDLE_EXTENSIONS);
        }
        to_raw(&params).unwrap_or_else(|_| crate::jsonrpc::raw_null())
    }

    /// Sends `initialize` and negotiates the protocol version.
    pub async fn initialize(&self) -> Result<InitializeOutcome, ClientError> {
        let first = match self.shared.options.protocol {
            ProtocolChoice::V1 => 1,
            ProtocolChoice::V2Preferred => 2,
        };
        let result = match self
            .request(
                "initialize",
                self.build_initialize(first),
                Purpose::Initialize,
            )
            .await
        {
            Ok(r) => r,
            Err(ClientError::Rpc(e)) if first == 2 => {
                self.shared.emit(ClientEvent::Diagnostic {
                    message: format!("agent rejected protocol v2 ({e}); retrying with v1"),
                });
                self.request("initialize", self.build_initialize(1), Purpose::Initialize)
                    .await?
            }
            Err(e) => return Err(e),
        };
        let outcome = parse_initialize(result, first)?;
        self.shared.lock().init = Some(outcome.clone());
        Ok(outcome)
    }

    fn require_init(&self) -> Result<InitializeOutcome, ClientError> {
        self.shared
            .lock()
            .init
            .clone()
            .ok_or(ClientError::NotInitialized)
    }

    /// `session/new`. Returns the new session id and the raw result.
    pub async fn new_session(
        &self,
        cwd: &str,
        mcp_servers: &Value,
    ) -> Result<(String, Box<RawValue>), ClientError> {
        self.require_init()?;
        let params = to_raw(&json!({ "cwd": cwd, "mcpServers": mcp_servers }))
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        let raw = self
            .request("session/new", params, Purpose::NewSession)
            .await?;
        #[derive(Deserialize)]
        struct NewSession {
            #[serde(rename = "sessionId")]
            session_id: String,
        }
        let parsed: NewSession = serde_json::from_str(raw.get()).map_err(|e| {
            ClientError::Protocol(format!("session/new result without sessionId: {e}"))
        })?;
        self.shared
            .lock()
            .sessions
            .entry(parsed.session_id.clone())
            .or_default();
        Ok((parsed.session_id, raw))
    }

    /// v1 `session/load` (replays history as updates before the response).
    /// Only when the agent advertised `loadSession`.
    pub async fn load_session(
        &self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
    ) -> Result<Box<RawValue>, ClientError> {
        let init = self.require_init()?;
        let caps: Value = serde_json::from_str(init.agent_capabilities.get()).unwrap_or_default();
        if init.protocol_version != 1 || caps.get("loadSession") != Some(&Value::Bool(true)) {
            return Err(ClientError::Unsupported(
                "session/load (needs v1 agentCapabilities.loadSession; in v2 use resume_session with replay)"
                    .into(),
            ));
        }
        self.shared
            .lock()
            .sessions
            .entry(session_id.to_owned())
            .or_default();
        let params =
            to_raw(&json!({ "sessionId": session_id, "cwd": cwd, "mcpServers": mcp_servers }))
                .map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.request("session/load", params, Purpose::Other).await
    }

    /// `session/resume`. v1: needs `sessionCapabilities.resume`, no replay.
    /// v2: baseline when the agent advertised `session`; `replay_from`
    /// (e.g. `{"type":"start"}`) asks the agent to replay history as updates
    /// before it answers, followed by a state snapshot.
    pub async fn resume_session(
        &self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
        replay_from: Option<&Value>,
    ) -> Result<Box<RawValue>, ClientError> {
        let init = self.require_init()?;
        let caps: Value = serde_json::from_str(init.agent_capabilities.get()).unwrap_or_default();
        let mut params = json!({ "sessionId": session_id, "cwd": cwd, "mcpServers": mcp_servers });
        if init.protocol_version == 1 {
            let offered = caps
                .get("sessionCapabilities")
                .and_then(|s| s.get("resume"))
                .is_some_and(|r| !r.is_null());
            if !offered {
                return Err(ClientError::Unsupported(
                    "session/resume (needs agentCapabilities.sessionCapabilities.resume)".into(),
                ));
            }
            if replay_from.is_some() {
                return Err(ClientError::Unsupported(
                    "replay on v1 session/resume (use load_session)".into(),
                ));
            }
        } else {
            if caps.get("session").is_none_or(Value::is_null) {
                return Err(ClientError::Unsupported(
                    "session/resume (the agent did not advertise capabilities.session)".into(),
                ));
            }
            if let Some(r) = replay_from {
                params["replayFrom"] = r.clone();
            }
        }
        self.shared
            .lock()
            .sessions
            .entry(session_id.to_owned())
            .or_default();
        let params = to_raw(&params).map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.request("session/resume", params, Purpose::Other).await
    }

    fn prompt_params(
        &self,
        session_id: &str,
        blocks: &impl Serialize,
    ) -> Result<Box<RawValue>, ClientError> {
        #[derive(Serialize)]
        struct PromptParams<'a, B> {
            #[serde(rename = "sessionId")]
            session_id: &'a str,
            prompt: &'a B,
        }
        to_raw(&PromptParams {
            session_id,
            prompt: blocks,
        })
        .map_err(|e| ClientError::Protocol(format!("prompt blocks do not serialize: {e}")))
    }

    fn mark_prompt_sent(&self, session_id: &str) {
        let mut st = self.shared.lock();
        let s = st.sessions.entry(session_id.to_owned()).or_default();
        s.active = true;
        s.saw_busy_state = false;
    }

    /// `session/prompt`, awaiting the response: in v1 that is the end of the
    /// turn, in v2 the acceptance. Both versions also report
    /// [`ClientEvent::PromptResponse`] and, when the turn ends,
    /// [`ClientEvent::TurnFinished`].
    pub async fn prompt(
        &self,
        session_id: &str,
        blocks: &impl Serialize,
    ) -> Result<PromptOutcome, ClientError> {
        self.require_init()?;
        let params = self.prompt_params(session_id, blocks)?;
        self.mark_prompt_sent(session_id);
        let raw = self
            .request(
                "session/prompt",
                params,
                Purpose::Prompt {
                    session_id: session_id.to_owned(),
                },
            )
            .await?;
        #[derive(Deserialize)]
        struct PromptResult {
            #[serde(rename = "stopReason", default)]
            stop_reason: Option<Value>,
            #[serde(rename = "messageId", default)]
            message_id: Option<Value>,
        }
        let parsed: PromptResult = serde_json::from_str(raw.get()).unwrap_or(PromptResult {
            stop_reason: None,
            message_id: None,
        });
        Ok(PromptOutcome {
            stop_reason: parsed
                .stop_reason
                .and_then(|v| v.as_str().map(str::to_owned)),
            message_id: parsed
                .message_id
                .and_then(|v| v.as_str().map(str::to_owned)),
            raw,
        })
    }

    /// `session/prompt` without waiting: the outcome arrives as
    /// [`ClientEvent::PromptResponse`] (and [`ClientEvent::TurnFinished`]).
    pub async fn send_prompt(
        &self,
        session_id: &str,
        blocks: &impl Serialize,
    ) -> Result<(), ClientError> {
        self.require_init()?;
        let params = self.prompt_params(session_id, blocks)?;
        self.mark_prompt_sent(session_id);
        let id = {
            let mut st = self.shared.lock();
            if st.closed {
                return Err(ClientError::Disconnected);
            }
            st.queue.register_outgoing(
                "session/prompt",
                OutgoingData {
                    purpose: Purpose::Prompt {
                        session_id: session_id.to_owned(),
                    },
                    waiter: None,
                },
            )
        };
        self.sender
            .send(Message::Request {
                id,
                method: "session/prompt".into(),
                params: Some(params),
            })
            .await
            .map_err(|_| ClientError::Disconnected)
    }

    /// `session/cancel`. Also answers every pending permission request of
    /// the session with `cancelled` (reported as
    /// [`ClientEvent::RequestCancelled`]), as ACP requires.
    pub async fn cancel(&self, session_id: &str) -> Result<(), ClientError> {
        let pending = {
            let st = self.shared.lock();
            st.queue.incoming_matching(|d| {
                d.method == "session/request_permission"
                    && d.session_id.as_deref() == Some(session_id)
            })
        };
        self.sender
            .send(
                Message::notification("session/cancel", &json!({ "sessionId": session_id }))
                    .map_err(|e| ClientError::Protocol(e.to_string()))?,
            )
            .await
            .map_err(|_| ClientError::Disconnected)?;
        for id in pending {
            if self.shared.lock().queue.complete_incoming(&id).is_none() {
                continue; // answered meanwhile
            }
            let result = to_raw(&json!({ "outcome": { "outcome": "cancelled" } }))
                .map_err(|e| ClientError::Protocol(e.to_string()))?;
            self.sender
                .send(Message::response_ok(id.clone(), result))
                .await
                .map_err(|_| ClientError::Disconnected)?;
            self.shared
                .emit(ClientEvent::RequestCancelled { request_id: id });
        }
        Ok(())
    }

    /// Answers a permission request. `outcome` is the outcome object, e.g.
    /// `{"outcome":"selected","optionId":"allow"}` or
    /// `{"outcome":"cancelled"}`; it is sent as `{"outcome": outcome}`.
    pub async fn respond_permission(
        &self,
        request_id: &RequestId,
        outcome: &Value,
    ) -> Result<(), ClientError> {
        let result = to_raw(&json!({ "outcome": outcome }))
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.respond(request_id, Ok(result)).await
    }

    /// Answers any pending agent request.
    pub async fn respond(
        &self,
        request_id: &RequestId,
        result: Result<Box<RawValue>, ResponseError>,
    ) -> Result<(), ClientError> {
        if self
            .shared
            .lock()
            .queue
            .complete_incoming(request_id)
            .is_none()
        {
            return Err(ClientError::UnknownRequest(request_id.clone()));
        }
        self.sender
            .send(Message::Response {
                id: request_id.clone(),
                result,
            })
            .await
            .map_err(|_| ClientError::Disconnected)
    }

    /// Sends an arbitrary request (extension methods) and awaits its result.
    pub async fn call(
        &self,
        method: &str,
        params: Box<RawValue>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.request(method, params, Purpose::Other).await
    }

    /// Sends an arbitrary notification.
    pub async fn notify(&self, method: &str, params: Box<RawValue>) -> Result<(), ClientError> {
        self.sender
            .send(Message::Notification {
                method: method.to_owned(),
                params: Some(params),
            })
            .await
            .map_err(|_| ClientError::Disconnected)
    }
}

fn parse_initialize(raw: Box<RawValue>, asked: u16) -> Result<InitializeOutcome, ClientError> {
    #[derive(Deserialize)]
    struct Init<'a> {
        #[serde(rename = "protocolVersion")]
        protocol_version: Value,
        #[serde(rename = "agentCapabilities", borrow, default)]
        agent_capabilities: Option<&'a RawValue>,
        #[serde(borrow, default)]
        capabilities: Option<&'a RawValue>,
        #[serde(rename = "agentInfo", borrow, default)]
        agent_info: Option<&'a RawValue>,
        #[serde(borrow, default)]
        info: Option<&'a RawValue>,
        #[serde(rename = "authMethods", borrow, default)]
        auth_methods: Option<&'a RawValue>,
        #[serde(rename = "_meta", default)]
        meta: Option<Value>,
    }
    let init: Init<'_> = serde_json::from_str(raw.get())
        .map_err(|e| ClientError::Protocol(format!("malformed initialize result: {e}")))?;
    let version = match init.protocol_version.as_u64() {
        Some(1) => 1,
        Some(2) if asked >= 2 => 2,
        _ => {
            return Err(ClientError::Protocol(format!(
                "agent chose protocol version {} which this client did not offer",
                init.protocol_version
            )));
        }
    };
    let (caps, info) = if version == 2 {
        (init.capabilities, init.info)
    } else {
        (init.agent_capabilities, init.agent_info)
    };
    let empty =
        || RawValue::from_string("{}".into()).unwrap_or_else(|_| crate::jsonrpc::raw_null());
    Ok(InitializeOutcome {
        protocol_version: version,
        agent_capabilities: caps.map(|c| c.to_owned()).unwrap_or_else(empty),
        agent_info: info.map(|c| c.to_owned()),
        auth_methods: init.auth_methods.map(|c| c.to_owned()),
        agent_spindle_extensions: init
            .meta
            .as_ref()
            .map(spindle_extensions_in)
            .unwrap_or_default(),
        raw,
    })
}

async fn dispatch_loop(
    shared: Arc<Shared>,
    sender: MessageSender,
    mut receiver: MessageReceiver,
    child: Option<ChildHandle>,
) {
    // Events are handed over in batches while input is queued: one channel
    // operation per batch instead of per update.
    let mut out: Vec<ClientEvent> = Vec::new();
    while let Some(incoming) = receiver.recv().await {
        match incoming {
            Incoming::Message(msg) => handle_message(&shared, &mut out, &sender, msg).await,
            Incoming::Malformed { line_number, error } => {
                out.push(ClientEvent::Diagnostic {
                    message: format!("malformed line {line_number} from agent: {error}"),
                });
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

async fn handle_message(
    shared: &Shared,
    out: &mut Vec<ClientEvent>,
    sender: &MessageSender,
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
        let _ = sender.send(reply).await;
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
        } else if result.is_err() {
            // v2: a rejected prompt was never inserted; it started no turn.
            let mut st = shared.lock();
            if let Some(s) = st.sessions.get_mut(session_id)
                && !s.saw_busy_state
            {
                s.active = false;
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
            let head: UpdateHead<'_> = match serde_json::from_str(params.get()) {
                Ok(h) => h,
                Err(e) => {
                    out.push(ClientEvent::Diagnostic {
                        message: format!("session/update without a usable sessionId: {e}"),
                    });
                    return None;
                }
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
                    && kind.session_update.as_deref() == Some("state_update")
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
                            if track.active && (stop_reason.is_some() || track.saw_busy_state) {
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
