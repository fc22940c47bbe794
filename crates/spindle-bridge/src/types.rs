//! The bridge's plain types: its configuration and policy, diagnostics,
//! the translated output of one line, the route, the client requests it
//! waits on, and small helpers every direction uses.

use std::fmt;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use spindle_wire::extensions::Extension;
use spindle_wire::hash::{FxHashMap, FxHashSet};
use spindle_wire::tags::MessageKind;

use crate::wire::{self, Frame, UpdateParams};

/// What the bridge does with something the target version cannot represent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Policy {
    /// Refuse it visibly: an error diagnostic, and (v1 client) the pending
    /// prompt is answered with a JSON-RPC error naming what was rejected.
    #[default]
    Strict,
    /// Use the documented best fallback (BRIDGE.md) and report a warning.
    Degrade,
}

/// How the bridge is set up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BridgeConfig {
    /// The client's protocol version; None = learnt from its initialize.
    pub client_protocol: Option<u16>,
    /// The agent's protocol version; None = the client's, corrected by the
    /// agent's initialize response.
    pub agent_protocol: Option<u16>,
    /// Strict or degrading treatment of unrepresentable input.
    pub policy: Policy,
}

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// A documented lossy step that loses nothing the user sees.
    Info,
    /// Something was degraded or dropped (policy `degrade`), or the input was
    /// malformed.
    Warning,
    /// Something was rejected (policy `strict`) or could not be handled.
    Error,
}

/// One thing the bridge could not translate faithfully.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeDiagnostic {
    /// Severity.
    pub severity: Severity,
    /// Stable machine-readable code, e.g. `replacement_after_chunks`.
    pub code: &'static str,
    /// Human-readable detail.
    pub message: String,
}

impl fmt::Display for BridgeDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{sev}[{}]: {}", self.code, self.message)
    }
}

/// The result of one input line: lines for each side, in order, and
/// diagnostics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Translated {
    /// Lines to write to the agent.
    pub to_agent: Vec<String>,
    /// Lines to write to the client.
    pub to_client: Vec<String>,
    /// What could not be translated faithfully.
    pub diagnostics: Vec<BridgeDiagnostic>,
}

impl Translated {
    pub(crate) fn diag(&mut self, severity: Severity, code: &'static str, message: String) {
        self.diagnostics.push(BridgeDiagnostic {
            severity,
            code,
            message,
        });
    }

    /// Sends the client a `session/update` of `session` carrying `update`.
    pub(crate) fn update_to_client(&mut self, session: &str, update: Map<String, Value>) {
        self.to_client
            .push(wire::update_line(session, Value::Object(update)));
    }

    /// Passes on an agent line that is neither request, response nor
    /// notification, with a warning.
    pub(crate) fn malformed_agent_line(&mut self, line: &str) {
        self.diag(
            Severity::Warning,
            "malformed_agent_line",
            "neither request, response nor notification".into(),
        );
        self.to_client.push(line.to_owned());
    }

    /// Warns of a session/update whose params did not parse as
    /// `{sessionId, update}`.
    pub(crate) fn malformed_update_params(&mut self, frame: &Frame<'_>) {
        let detail = match frame.params {
            None => "session/update without params".to_owned(),
            Some(p) => match serde_json::from_str::<UpdateParams<'_>>(p.get()) {
                Err(e) => format!("session/update params: {e}"),
                Ok(_) => "session/update could not be read".to_owned(),
            },
        };
        self.diag(Severity::Warning, "malformed_update", detail);
    }

    /// The update of a session/update as an object; `None`, with a warning,
    /// when it is not one.
    pub(crate) fn update_object(&mut self, update: &RawValue) -> Option<Map<String, Value>> {
        match serde_json::from_str::<Value>(update.get()) {
            Ok(Value::Object(u)) => Some(u),
            _ => {
                self.diag(
                    Severity::Warning,
                    "malformed_update",
                    "session/update update is not an object".into(),
                );
                None
            }
        }
    }
}

/// Which translation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Versions not known yet (before initialize).
    Unknown,
    /// Same version both sides: verbatim relay.
    Passthrough,
    /// v2 client, v1 agent.
    V2ClientV1Agent,
    /// v1 client, v2 agent.
    V1ClientV2Agent,
}

/// The v2 permission subject type that carries a tool call
/// (`subject: {type: "tool_call", toolCall}`); v1 has only that kind.
pub(crate) const TOOL_CALL_SUBJECT: &str = "tool_call";

/// Client requests whose response needs translating.
#[derive(Debug, Clone)]
pub(crate) enum ClientRequest {
    Initialize,
    NewSession,
    /// v1 `session/load` sent as v2 `session/resume` (or the reverse).
    Load(String),
    Resume(String),
    SetMode(String, String),
    SetConfig(String),
    Prompt,
    Other,
}

/// Maps keyed by the peer's short ids (sessions, messages), looked up on
/// every streamed chunk: the shared fast hasher instead of SipHash. The keys
/// come from the agent, which can at worst slow down its own bridge.
pub(crate) type IdMap<V> = FxHashMap<String, V>;
/// A set of peer ids; see [`IdMap`].
pub(crate) type IdSet = FxHashSet<String>;

/// The message kind a chunk tag (`agent_message_chunk`, ...) carries. On
/// every streamed line: three comparisons, most frequent first, instead of
/// [`spindle_wire::tags::UpdateTag::parse`].
#[inline]
pub(crate) fn chunk_kind(tag: &str) -> Option<MessageKind> {
    [MessageKind::Agent, MessageKind::Thought, MessageKind::User]
        .into_iter()
        .find(|k| k.chunk_tag().as_str() == tag)
}

/// The Spindle extension that clears a streamed message of `kind` (none
/// clears a user message).
pub(crate) fn clear_extension(kind: MessageKind) -> Option<Extension> {
    match kind {
        MessageKind::Agent => Some(Extension::AgentMessageClear),
        MessageKind::Thought => Some(Extension::AgentThoughtClear),
        MessageKind::User => None,
    }
}

/// The string `value` holds, owned; empty when it is absent or not a string.
pub(crate) fn owned_str(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or("").to_owned()
}

/// Reads `"sessionId"` of a params object.
pub(crate) fn session_of(params: &Map<String, Value>) -> String {
    owned_str(params.get("sessionId"))
}
