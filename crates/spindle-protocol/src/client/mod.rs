//! The ACP client runtime: version negotiation, sessions, prompts, and one
//! stream of [`ClientEvent`]s for the application's main loop.
//!
//! The runtime decodes only what it needs for routing (session ids, the v2
//! `state_update` state and stop reason); every update reaches the
//! application as the verbatim `session/update` params.

mod dispatch;
mod types;

use std::ffi::OsString;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::extensions::{Extensions, listed_extension_names};
use crate::jsonrpc::{Message, RequestId, ResponseError, to_raw};
use crate::transport::{ChildHandle, Connection, MessageSender, SpawnOptions, spawn_child};
use dispatch::{OutgoingData, Purpose, Shared, State, dispatch_loop};
pub use types::{
    ClientError, ClientEvent, ClientEvents, ClientInfo, ClientOptions, InitializeOutcome,
    PromptOutcome, ProtocolChoice, WireDirection, WireRecord,
};

/// An ACP client over a [`Connection`]. Cheap to clone; all clones share the
/// connection and the event stream.
#[derive(Debug, Clone)]
pub struct AcpClient {
    shared: Arc<Shared>,
    sender: MessageSender,
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
        // The dispatch task holds only a weak sender: dropping every
        // `AcpClient` closes the agent's input, so the agent can exit.
        tokio::spawn(dispatch_loop(
            shared.clone(),
            sender.downgrade(),
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

    async fn send_message(&self, msg: Message) -> Result<(), crate::transport::Disconnected> {
        self.shared.tap(WireDirection::Sent, &msg);
        self.sender.send(msg).await
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
        if self.send_message(msg).await.is_err() {
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
            params["_meta"] = Extensions::all().to_meta();
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
    ///
    /// Returns the request id, for [`AcpClient::cancel_request`].
    pub async fn send_prompt(
        &self,
        session_id: &str,
        blocks: &impl Serialize,
    ) -> Result<RequestId, ClientError> {
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
        self.send_message(Message::Request {
            id: id.clone(),
            method: "session/prompt".into(),
            params: Some(params),
        })
        .await
        .map_err(|_| ClientError::Disconnected)?;
        Ok(id)
    }

    /// Sends `$/cancel_request` for an outstanding request of ours (e.g. a
    /// prompt from [`AcpClient::send_prompt`] that the agent holds but has
    /// not inserted). The request stays pending until the agent answers it
    /// (usually with error -32800). Returns `false` when it is no longer
    /// pending or was already cancelled.
    pub async fn cancel_request(&self, id: &RequestId) -> Result<bool, ClientError> {
        let notification = self.shared.lock().queue.cancel_outgoing(id);
        match notification {
            Some(msg) => {
                self.send_message(msg)
                    .await
                    .map_err(|_| ClientError::Disconnected)?;
                Ok(true)
            }
            None => Ok(false),
        }
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
        self.send_message(
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
            self.send_message(Message::response_ok(id.clone(), result))
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
        self.send_message(Message::Response {
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
        self.send_message(Message::Notification {
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
            .map(listed_extension_names)
            .unwrap_or_default(),
        raw,
    })
}
