//! The client's public vocabulary: options, outcomes, errors and events.

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use spindle_wire::client_methods::AUTH_REQUIRED_CODE;

use crate::jsonrpc::{RequestId, ResponseError};
use crate::transport::ChildExit;
use crate::update_params::UpdateParams;

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

impl std::str::FromStr for ProtocolChoice {
    type Err = String;

    /// `1`/`v1` or `2`/`v2` (v2 meaning "preferred, with fallback"), for
    /// command-line flags and configuration files.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "1" | "v1" => Ok(ProtocolChoice::V1),
            "2" | "v2" => Ok(ProtocolChoice::V2Preferred),
            other => Err(format!(
                "unknown ACP protocol version {other:?} (use 1 or 2)"
            )),
        }
    }
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
    /// Ask for `notice` session updates: v1 `clientCapabilities.session.notices`,
    /// v2 `capabilities.session.notices`.
    pub session_notices: bool,
    /// Ask for compaction updates: v1 `clientCapabilities.session.compaction`
    /// (v2 agents send them to every client).
    pub session_compaction: bool,
    /// Advertise `elicitation: {form: {}, url: {}}` (v1 `clientCapabilities`, v2 `capabilities`)
    /// and route `elicitation/create` to the application as
    /// [`ClientEvent::AgentRequest`] (without it: method not found).
    /// `elicitation/complete` arrives as [`ClientEvent::AgentNotification`] either way.
    pub elicitation: bool,
    /// Advertise the Spindle streaming extensions in `initialize` `_meta`
    /// (see [`crate::extensions`]). Extensions are accepted either way.
    pub spindle_extensions: bool,
    /// Ask for display-only terminal output on tool calls: v1
    /// `clientCapabilities._meta.terminal_output: true`, the convention
    /// Claude Code's and Codex's adapters follow (`_meta.terminal_info`,
    /// `terminal_output`, `terminal_exit` on tool calls; the engine shows
    /// them with the tool call).
    pub display_terminal_output: bool,
    /// Receives every well-formed message sent and received, in the order
    /// the client handles them (for recordings; see [`WireRecord`]).
    pub wire_tap: Option<mpsc::UnboundedSender<WireRecord>>,
}

/// Which way a recorded message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireDirection {
    /// Client to agent.
    Sent,
    /// Agent to client.
    Received,
}

/// One message seen by the client, as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireRecord {
    /// Which way it went.
    pub direction: WireDirection,
    /// The message (payloads verbatim).
    pub json: String,
}

impl WireRecord {
    /// The line for a `spindle replay` recording: a received message as is,
    /// a sent one wrapped as `{"sent": <message>}`.
    pub fn recording_line(&self) -> String {
        match self.direction {
            WireDirection::Received => self.json.clone(),
            WireDirection::Sent => format!("{{\"sent\":{}}}", self.json),
        }
    }
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
    /// What the handshake had to read leniently, for the user: an agent that agreed to
    /// protocol 2 and advertised its capabilities in v1's shape (`agentCapabilities`), read
    /// as their v2 equivalents instead of as nothing.
    pub compatibility_notes: Vec<String>,
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

impl ClientError {
    /// Whether the agent refused the call until the client authenticates:
    /// a JSON-RPC error with code -32000 (`auth_required`). Then offer the
    /// agent's [`InitializeOutcome::auth_methods`] and call `authenticate`.
    pub fn is_auth_required(&self) -> bool {
        matches!(self, ClientError::Rpc(e) if e.code == AUTH_REQUIRED_CODE)
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
        /// The `sessionId`: for a session the client knows, one shared copy
        /// for all of its updates (no allocation per update).
        session_id: std::sync::Arc<str>,
        /// The notification params: their JSON text (`params.get()`) and,
        /// for a plain text chunk, the fields the runtime scanned.
        params: UpdateParams,
    },
    /// The response to a `session/prompt` (v1: end of turn; v2: accepted).
    PromptResponse {
        /// The session prompted.
        session_id: String,
        /// The prompt request's id (what `send_prompt` returned): a v2
        /// client may have several prompts outstanding.
        request_id: RequestId,
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
    /// [`AcpClient::respond_permission`](crate::AcpClient::respond_permission). Never answered automatically,
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
    /// terminal/*). Answer with [`AcpClient::respond`](crate::AcpClient::respond).
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

/// The receiving end of a client's events. Unbounded so that a caller
/// awaiting a v1 prompt never deadlocks against unread updates.
#[derive(Debug)]
pub struct ClientEvents {
    pub(super) rx: mpsc::UnboundedReceiver<Vec<ClientEvent>>,
    /// The rest of the batch being handed out: events leave the batch's
    /// own buffer, never copied into another queue first.
    pub(super) buffered: std::vec::IntoIter<ClientEvent>,
}

impl ClientEvents {
    /// The next event; `None` after [`ClientEvent::AgentExited`] once every
    /// client handle is dropped.
    pub async fn recv(&mut self) -> Option<ClientEvent> {
        loop {
            if let Some(e) = self.buffered.next() {
                return Some(e);
            }
            self.buffered = self.rx.recv().await?.into_iter();
        }
    }

    /// The next event if one is ready now.
    pub fn try_recv(&mut self) -> Option<ClientEvent> {
        loop {
            if let Some(e) = self.buffered.next() {
                return Some(e);
            }
            self.buffered = self.rx.try_recv().ok()?.into_iter();
        }
    }
}
