//! The ACP client runtime: version negotiation, sessions, prompts, and one
//! stream of [`ClientEvent`]s for the application's main loop.
//!
//! The runtime decodes only what it needs for routing (session ids, the v2
//! `state_update` state and stop reason); every update reaches the
//! application as the verbatim `session/update` params.

mod calls;
mod capabilities;
mod core;
mod dispatch;
mod handshake;
mod legacy_caps;
mod lifecycle;
mod sessions;
mod types;

use std::ffi::OsString;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc::{RequestId, ResponseError};
use crate::transport::{ChildHandle, Connection, MessageSender, SpawnOptions, spawn_child};
pub use calls::{AgentSessionInfo, AttachRole, HistoryPolicy, SessionList};
pub use capabilities::{AGENT_AUTH_KIND, AuthMethod, PromptCapabilities, SessionFeatures};
pub use core::{ClientCore, Completion, HandshakePhase};
use dispatch::{Shared, Step, Waiter, complete, dispatch_loop};
pub use types::{
    ClientError, ClientEvent, ClientEvents, ClientInfo, ClientOptions, InitializeOutcome,
    PromptOutcome, ProtocolChoice, WireDirection, WireRecord,
};

/// The `sessionId` of a session/new or session/fork result.
fn session_id_of(raw: &RawValue, method: &str) -> Result<String, ClientError> {
    #[derive(Deserialize)]
    struct NewSession {
        #[serde(rename = "sessionId")]
        session_id: String,
    }
    serde_json::from_str::<NewSession>(raw.get())
        .map(|parsed| parsed.session_id)
        .map_err(|e| ClientError::Protocol(format!("{method} result without sessionId: {e}")))
}

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

    /// Spawns the agent `command` and starts a client over its stdio (plain
    /// text chunks scanned once by the framer:
    /// [`ConnectionOptions::scan_chunk_updates`](crate::ConnectionOptions)).
    pub fn spawn(
        command: &[OsString],
        mut spawn_options: SpawnOptions,
        options: ClientOptions,
    ) -> std::io::Result<(AcpClient, ClientEvents, ChildHandle)> {
        spawn_options.connection.scan_chunk_updates = true;
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
        let mut options = options;
        let wire_tap = options.wire_tap.take();
        let shared = Arc::new(Shared {
            core: Mutex::new(ClientCore::new(options)),
            wire_tap,
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

    /// Sends what one step of the core produced, then resolves waiters and
    /// hands over events.
    async fn send_step(&self, step: Step) -> Result<(), ClientError> {
        let mut sent = Ok(());
        for message in step.outgoing {
            self.shared.tap(WireDirection::Sent, &message);
            if sent.is_ok() && self.sender.send(message).await.is_err() {
                sent = Err(ClientError::Disconnected);
            }
        }
        complete(step.completions);
        self.shared.emit_all(&mut { step.events });
        sent
    }

    /// Runs `f` on the core and sends what it produced.
    async fn with_core<R>(
        &self,
        f: impl FnOnce(&mut ClientCore<Waiter>) -> Result<R, ClientError>,
    ) -> Result<R, ClientError> {
        let (r, step) = self.shared.step(f);
        let r = r?;
        self.send_step(step).await?;
        Ok(r)
    }

    /// Registers a request through `f` and waits for its answer.
    async fn request_with(
        &self,
        f: impl FnOnce(&mut ClientCore<Waiter>, Waiter) -> Result<RequestId, ClientError>,
    ) -> Result<Box<RawValue>, ClientError> {
        let (tx, rx) = oneshot::channel();
        let (id, step) = self.shared.step(|core| f(core, Some(tx)));
        let id = id?;
        if self.send_step(step).await.is_err() {
            self.shared.lock().forget_request(&id);
            return Err(ClientError::Disconnected);
        }
        rx.await.unwrap_or(Err(ClientError::Disconnected))
    }

    /// The negotiated protocol version, once `initialize` has completed.
    pub fn protocol_version(&self) -> Option<u16> {
        self.shared.lock().protocol_version()
    }

    /// The `initialize` outcome, once available.
    pub fn initialize_outcome(&self) -> Option<InitializeOutcome> {
        self.shared.lock().initialize_outcome().cloned()
    }

    /// Sends `initialize` and negotiates the protocol version (v2 preferred
    /// falls back to v1 when the agent answers 1 or rejects v2).
    pub async fn initialize(&self) -> Result<InitializeOutcome, ClientError> {
        self.request_with(|core, waiter| core.initialize(waiter))
            .await?;
        self.initialize_outcome()
            .ok_or_else(|| ClientError::Protocol("initialize completed without an outcome".into()))
    }

    /// `session/new`. Returns the new session id and the raw result.
    pub async fn new_session(
        &self,
        cwd: &str,
        mcp_servers: &Value,
    ) -> Result<(String, Box<RawValue>), ClientError> {
        self.new_session_with_directories(cwd, mcp_servers, &[])
            .await
    }

    /// `session/new` with `additional_directories` (absolute workspace roots
    /// besides `cwd`; sent only when the agent accepts them: show
    /// [`InitializeOutcome::additional_directories_note`] otherwise).
    /// Returns the new session id and the raw result.
    pub async fn new_session_with_directories(
        &self,
        cwd: &str,
        mcp_servers: &Value,
        additional_directories: &[String],
    ) -> Result<(String, Box<RawValue>), ClientError> {
        let raw = self
            .request_with(|core, waiter| {
                core.new_session_with_directories(cwd, mcp_servers, additional_directories, waiter)
            })
            .await?;
        Ok((session_id_of(&raw, "session/new")?, raw))
    }

    /// `session/fork` (unstable; v1 `sessionCapabilities.fork`, v2
    /// `session.fork`): a new session whose context is a copy of
    /// `session_id`'s; see [`ClientCore::fork_session`]. Returns the new
    /// session id and the raw result.
    pub async fn fork_session(
        &self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
        additional_directories: &[String],
    ) -> Result<(String, Box<RawValue>), ClientError> {
        let raw = self
            .request_with(|core, waiter| {
                core.fork_session(session_id, cwd, mcp_servers, additional_directories, waiter)
            })
            .await?;
        Ok((session_id_of(&raw, "session/fork")?, raw))
    }

    /// `session/delete` (v1 `sessionCapabilities.delete`, v2
    /// `session.delete`): the agent forgets `session_id`.
    pub async fn delete_session(&self, session_id: &str) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| core.delete_session(session_id, waiter))
            .await
    }

    /// Logs out: v1 `logout` (needs `auth.logout`), v2 `auth/logout` (needs a
    /// non-empty `authMethods`); see [`ClientCore::logout`].
    pub async fn logout(&self) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| core.logout(waiter)).await
    }

    /// [`AcpClient::load_session`] with `additional_directories` (sent only
    /// when the agent accepts them).
    pub async fn load_session_with_directories(
        &self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
        additional_directories: &[String],
    ) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| {
            core.load_session_with_directories(
                session_id,
                cwd,
                mcp_servers,
                additional_directories,
                waiter,
            )
        })
        .await
    }

    /// [`AcpClient::resume_session`] with `additional_directories` (sent
    /// only when the agent accepts them).
    pub async fn resume_session_with_directories(
        &self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
        additional_directories: &[String],
        replay_from: Option<&Value>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| {
            core.resume_session_with_directories(
                session_id,
                cwd,
                mcp_servers,
                additional_directories,
                replay_from,
                waiter,
            )
        })
        .await
    }

    /// Opens an earlier session with its history replayed as updates before
    /// the answer: v1 `session/load` (only when the agent advertised
    /// `loadSession`), v2 `session/resume` with `replayFrom: {"type":"start"}`.
    /// Returns the raw result (v1: `modes`, `configOptions`).
    pub async fn load_session(
        &self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
    ) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| core.load_session(session_id, cwd, mcp_servers, waiter))
            .await
    }

    /// Joins the running session `session_id` of a remote endpoint
    /// (`session/attach`, Spindle's multi-client extension) as `role`, with
    /// `history` sent first; see [`ClientCore::attach_session`]. The
    /// history's updates come as events of the session before this returns.
    pub async fn attach_session(
        &self,
        session_id: &str,
        role: AttachRole,
        history: HistoryPolicy,
    ) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| core.attach_session(session_id, role, history, waiter))
            .await
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
        self.request_with(|core, waiter| {
            core.resume_session(session_id, cwd, mcp_servers, replay_from, waiter)
        })
        .await
    }

    /// Authenticates with an advertised method of type `agent` (v1
    /// `authenticate`, v2 `auth/login`); see [`ClientCore::authenticate`].
    pub async fn authenticate(&self, method_id: &str) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| core.authenticate(method_id, waiter))
            .await
    }

    /// v1 `session/set_mode` (v2: [`ClientError::Unsupported`]; modes are
    /// config options there).
    pub async fn set_mode(
        &self,
        session_id: &str,
        mode_id: &str,
    ) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| core.set_mode(session_id, mode_id, waiter))
            .await
    }

    /// `session/set_config_option` with a value id (string) or a boolean.
    /// Returns the raw result, whose `configOptions` is the session's
    /// complete set of options after the change.
    pub async fn set_config_option(
        &self,
        session_id: &str,
        config_id: &str,
        value: Value,
    ) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| {
            core.set_config_option(session_id, config_id, &value, waiter)
        })
        .await
    }

    /// `session/close` (v1 needs `sessionCapabilities.close`; v2 baseline).
    pub async fn close_session(&self, session_id: &str) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| core.close_session(session_id, waiter))
            .await
    }

    /// `session/list`, optionally filtered by `cwd` and from a page `cursor`.
    pub async fn list_sessions(
        &self,
        cwd: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<SessionList, ClientError> {
        let raw = self
            .request_with(|core, waiter| core.list_sessions(cwd, cursor, waiter))
            .await?;
        SessionList::from_result(&raw)
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
        let raw = self
            .request_with(|core, waiter| core.prompt(session_id, blocks, waiter))
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
        self.with_core(|core| core.prompt(session_id, blocks, None))
            .await
    }

    /// Sends `$/cancel_request` for an outstanding request of ours (e.g. a
    /// prompt from [`AcpClient::send_prompt`] that the agent holds but has
    /// not inserted). The request stays pending until the agent answers it
    /// (usually with error -32800). Returns `false` when it is no longer
    /// pending or was already cancelled.
    pub async fn cancel_request(&self, id: &RequestId) -> Result<bool, ClientError> {
        self.with_core(|core| Ok(core.cancel_request(id))).await
    }

    /// `session/cancel`. Also answers every pending permission request of
    /// the session with `cancelled` (reported as
    /// [`ClientEvent::RequestCancelled`]), as ACP requires.
    pub async fn cancel(&self, session_id: &str) -> Result<(), ClientError> {
        self.with_core(|core| core.cancel(session_id)).await
    }

    /// Answers a permission request. `outcome` is the outcome object, e.g.
    /// `{"outcome":"selected","optionId":"allow"}` or
    /// `{"outcome":"cancelled"}`; it is sent as `{"outcome": outcome}`.
    pub async fn respond_permission(
        &self,
        request_id: &RequestId,
        outcome: &Value,
    ) -> Result<(), ClientError> {
        self.with_core(|core| core.respond_permission(request_id, outcome))
            .await
    }

    /// Answers any pending agent request.
    pub async fn respond(
        &self,
        request_id: &RequestId,
        result: Result<Box<RawValue>, ResponseError>,
    ) -> Result<(), ClientError> {
        self.with_core(|core| core.respond(request_id, result))
            .await
    }

    /// Sends an arbitrary request (extension methods) and awaits its result.
    pub async fn call(
        &self,
        method: &str,
        params: Box<RawValue>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.request_with(|core, waiter| core.request(method, params, waiter))
            .await
    }

    /// Sends an arbitrary notification.
    pub async fn notify(&self, method: &str, params: Box<RawValue>) -> Result<(), ClientError> {
        self.with_core(|core| {
            core.notify(method, params);
            Ok(())
        })
        .await
    }
}
