//! `spindle-bridge`: a sans-I/O, stateful translator between ACP protocol v1
//! and v2, so a v2 client can drive a v1 agent and a v1 client a v2 agent.
//!
//! Feed it every line the client writes ([`Bridge::from_client`]) and every
//! line the agent writes ([`Bridge::from_agent`]); each call returns the lines
//! to send on ([`Translated`]) and what could not be translated faithfully
//! ([`BridgeDiagnostic`]). When both sides speak the same version the lines
//! are relayed verbatim.
//!
//! ```
//! use spindle_bridge::{Bridge, BridgeConfig, Policy};
//!
//! // A v2 client in front of a v1 agent.
//! let mut bridge = Bridge::new(BridgeConfig {
//!     client_protocol: None, // learnt from the client's initialize
//!     agent_protocol: Some(1),
//!     policy: Policy::Strict,
//! });
//! let out = bridge.from_client(
//!     r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ed","version":"1"}}}"#,
//! );
//! assert!(out.to_agent[0].contains(r#""protocolVersion":1"#));
//! let out = bridge.from_agent(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#);
//! assert!(out.to_client[0].contains(r#""protocolVersion":2"#));
//!
//! // A v1 chunk without messageId reaches the v2 client with a minted one.
//! let out = bridge.from_agent(
//!     r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
//! );
//! assert!(out.to_client[0].contains(r#""messageId":"#));
//! assert!(out.diagnostics.is_empty());
//! ```
//!
//! The translation table (lossless / lossy / rejected, each pinned by a
//! test) is `BRIDGE.md` at the repository root.
#![deny(missing_docs)]

mod down;
mod shapes;
mod up;
mod wire;

use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Value};
use spindle_wire::extensions::Extension;
use spindle_wire::hash::{FxHashMap, FxHashSet};
use spindle_wire::meta::META_KEY;
use spindle_wire::scan::ChunkScanner;
use spindle_wire::tags::{self, MessageKind};

pub use spindle_wire::extensions::Extensions;

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

/// The stateful v1<->v2 translator. One per client connection.
#[derive(Debug)]
pub struct Bridge {
    config: BridgeConfig,
    client_version: Option<u16>,
    agent_version: Option<u16>,
    init_id: Option<String>,
    /// Extensions the client opted into.
    client_ext: Extensions,
    /// v1 client capabilities that gate update kinds.
    client_notices: bool,
    client_compaction: bool,
    client_plan_ops: bool,
    requests: HashMap<String, ClientRequest>,
    /// The version asked of the agent, until it answers.
    provisional_agent: u16,
    up: up::UpState,
    down: down::DownState,
    /// The shape of the last chunk line, for the hot path.
    chunks: ChunkScanner,
    /// Client lines that arrived after `initialize` and before the agent
    /// answered it: they wait until the versions, and so the translation,
    /// are known (a client may pipeline `session/new` behind `initialize`).
    held_client: Vec<String>,
    held_bytes: usize,
}

/// At most this many bytes of client lines wait for the agent's `initialize`
/// answer; past it they are relayed untranslated, with a warning.
pub const MAX_HELD_CLIENT_BYTES: usize = 16 << 20;

impl Bridge {
    /// The client request that the agent's response to `id` answers, taken out of the pending
    /// set. `None`, with a warning, when nothing waits for `id` (F9): an answer nobody asked for
    /// (a duplicate, or one to an id the bridge minted and already answered) never reaches the
    /// client.
    fn take_pending_request(&mut self, id: &str, out: &mut Translated) -> Option<ClientRequest> {
        let request = self.requests.remove(id);
        if request.is_none() {
            out.diag(
                Severity::Warning,
                "unknown_response_id",
                format!(
                    "dropped the agent's response to id {id}: no request with that id is pending"
                ),
            );
        }
        request
    }

    /// A bridge with no state.
    pub fn new(config: BridgeConfig) -> Self {
        let norm = |v: Option<u16>| v.map(|v| v.clamp(1, 2));
        Bridge {
            config,
            client_version: norm(config.client_protocol),
            // Both configured: the route is known before any handshake.
            agent_version: norm(config.client_protocol).and(norm(config.agent_protocol)),
            init_id: None,
            client_ext: Extensions::NONE,
            client_notices: false,
            client_compaction: false,
            client_plan_ops: false,
            requests: HashMap::new(),
            provisional_agent: 1,
            up: up::UpState::default(),
            down: down::DownState::default(),
            chunks: ChunkScanner::default(),
            held_client: Vec::new(),
            held_bytes: 0,
        }
    }

    /// The translation in force.
    pub fn route(&self) -> Route {
        match (self.client_version, self.agent_version) {
            (Some(c), Some(a)) if c == a => Route::Passthrough,
            (Some(2), Some(1)) => Route::V2ClientV1Agent,
            (Some(1), Some(2)) => Route::V1ClientV2Agent,
            _ => Route::Unknown,
        }
    }

    /// The client's protocol version, once known.
    pub fn client_protocol(&self) -> Option<u16> {
        self.client_version
    }

    /// The agent's protocol version, once known.
    pub fn agent_protocol(&self) -> Option<u16> {
        self.agent_version
    }

    /// Client lines wait for the agent's `initialize` answer (see
    /// [`MAX_HELD_CLIENT_BYTES`]): a proxy must keep the agent's stdin open
    /// until they are released, even after the client closed its side.
    pub fn holds_client_lines(&self) -> bool {
        !self.held_client.is_empty()
    }

    /// Requests the client sent that still await an answer (by JSON id text),
    /// so a proxy can fail them when the agent dies.
    pub fn pending_client_requests(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.requests.keys().cloned().collect();
        ids.extend(self.held_client.iter().filter_map(|line| {
            let frame = wire::parse_frame(line).ok()?;
            frame.method.as_ref()?;
            frame.id_key()
        }));
        ids.extend(self.down.pending_prompt_ids());
        ids.extend(self.up.pending_prompt_client_ids());
        ids.sort();
        ids.dedup();
        ids
    }

    /// Error responses for every pending client request (and, for a v2
    /// client, idle with stopReason `error` for running turns), e.g. after
    /// the agent process exited; clears them.
    pub fn fail_pending(&mut self, message: &str) -> Vec<String> {
        let ids = self.pending_client_requests();
        let running = self.up.running_sessions();
        self.requests.clear();
        self.held_client.clear();
        self.held_bytes = 0;
        self.down.clear_prompts();
        self.up.clear_prompts();
        let mut lines: Vec<String> = ids
            .iter()
            .map(|id| wire::error_response(id, -32603, message, None))
            .collect();
        // v2 prompts were answered on acceptance: their turns end in error.
        for session in running {
            lines.push(wire::update_line(
                &session,
                serde_json::json!({
                    "sessionUpdate": tags::STATE_UPDATE,
                    "state": "idle",
                    "stopReason": "error",
                    "error": {"code": -32603, "message": message},
                }),
            ));
        }
        lines
    }

    /// Translates one line the client wrote.
    pub fn from_client(&mut self, line: &str) -> Translated {
        let mut out = Translated::default();
        if self.route() == Route::Passthrough {
            // Remember open requests (cheap, client lines are few) so a dead
            // agent can be reported; the line itself goes out unchanged.
            if let Ok(frame) = wire::parse_frame(line)
                && frame.method.is_some()
                && let Some(id) = frame.id_key()
            {
                self.requests.insert(id, ClientRequest::Other);
            }
            out.to_agent.push(line.to_owned());
            return out;
        }
        if line.trim().is_empty() {
            return out;
        }
        let frame = match wire::parse_frame(line) {
            Ok(f) => f,
            Err(e) => {
                out.diag(Severity::Warning, "malformed_client_line", e);
                out.to_agent.push(line.to_owned());
                return out;
            }
        };
        if frame.method.as_deref() == Some("initialize") {
            self.client_initialize(line, &frame, &mut out);
            return out;
        }
        if self.route() == Route::Unknown && self.init_id.is_some() {
            if self.held_bytes + line.len() <= MAX_HELD_CLIENT_BYTES {
                self.held_bytes += line.len();
                self.held_client.push(line.to_owned());
                return out;
            }
            out.diag(
                Severity::Warning,
                "held_limit",
                format!(
                    "more than {MAX_HELD_CLIENT_BYTES} bytes of client lines arrived before the \
                     agent answered initialize: relayed untranslated"
                ),
            );
        }
        match self.route() {
            Route::V2ClientV1Agent => self.up_from_client(line, &frame, &mut out),
            Route::V1ClientV2Agent => self.down_from_client(line, &frame, &mut out),
            // Before the handshake nothing is known: relay as is, but
            // remember requests, since only answers to pending ids pass later.
            _ => {
                if frame.method.is_some()
                    && let Some(id) = frame.id_key()
                {
                    self.requests.insert(id, ClientRequest::Other);
                }
                out.to_agent.push(line.to_owned());
            }
        }
        out
    }

    /// Translates one line the agent wrote.
    pub fn from_agent(&mut self, line: &str) -> Translated {
        let mut out = Translated::default();
        if self.route() == Route::Passthrough {
            // Only responses can close a request; notifications are relayed
            // without parsing unless one is open and the line may answer it.
            if !self.requests.is_empty()
                && (line.contains("\"result\"") || line.contains("\"error\""))
                && let Ok(frame) = wire::parse_frame(line)
                && frame.method.is_none()
                && let Some(id) = frame.id_key()
            {
                self.requests.remove(&id);
            }
            out.to_client.push(line.to_owned());
            return out;
        }
        if line.trim().is_empty() {
            return out;
        }
        // Hot path: message chunks, routed by a scan of the line.
        if let Some(f) = self.chunks.scan(line) {
            let handled = match self.route() {
                Route::V2ClientV1Agent => self.up_fast(line, &f, &mut out),
                Route::V1ClientV2Agent => self.down_fast(line, &f, &mut out),
                _ => false,
            };
            if handled {
                return out;
            }
        }
        // Other session/update notifications, parsed once.
        if let Some(update) = wire::parse_update_frame(line) {
            match self.route() {
                Route::V2ClientV1Agent => {
                    self.up_update(line, update.params, &mut out);
                    return out;
                }
                Route::V1ClientV2Agent => {
                    self.down_update(line, update.params, &mut out);
                    return out;
                }
                _ => {}
            }
        }
        let frame = match wire::parse_frame(line) {
            Ok(f) => f,
            Err(e) => {
                out.diag(Severity::Warning, "malformed_agent_line", e);
                out.to_client.push(line.to_owned());
                return out;
            }
        };
        if frame.method.is_none()
            && let Some(id) = frame.id_key()
            && self.init_id.as_deref() == Some(id.as_str())
        {
            self.agent_initialized(&id, &frame, &mut out);
            return out;
        }
        match self.route() {
            Route::V2ClientV1Agent => self.up_from_agent(line, &frame, &mut out),
            Route::V1ClientV2Agent => self.down_from_agent(line, &frame, &mut out),
            _ => {
                if frame.method.is_none()
                    && let Some(id) = frame.id_key()
                {
                    self.requests.remove(&id);
                }
                out.to_client.push(line.to_owned());
            }
        }
        out
    }

    fn client_initialize(&mut self, line: &str, frame: &wire::Frame<'_>, out: &mut Translated) {
        let params = wire::object_of(frame.params).unwrap_or_default();
        let asked = params
            .get("protocolVersion")
            .and_then(Value::as_u64)
            .unwrap_or(1);
        let client = self
            .config
            .client_protocol
            .map(|v| v.clamp(1, 2))
            .unwrap_or(if asked >= 2 { 2 } else { 1 });
        self.client_version = Some(client);
        self.client_ext = params
            .get(META_KEY)
            .map_or(Extensions::NONE, Extensions::from_meta);
        let session_caps = &params
            .get("clientCapabilities")
            .cloned()
            .unwrap_or(Value::Null)["session"];
        self.client_notices = session_caps.get("notices").is_some_and(|v| !v.is_null());
        self.client_compaction = session_caps.get("compaction").is_some_and(|v| !v.is_null());
        self.client_plan_ops = params
            .get("clientCapabilities")
            .and_then(|c| c.get("plan"))
            .is_some_and(|v| !v.is_null());
        let agent = self
            .config
            .agent_protocol
            .map(|v| v.clamp(1, 2))
            .unwrap_or(client);
        let Some(id) = frame.id_key() else {
            out.diag(
                Severity::Warning,
                "initialize_without_id",
                "initialize is a request but has no id".into(),
            );
            out.to_agent.push(line.to_owned());
            return;
        };
        self.init_id = Some(id.clone());
        self.requests.insert(id.clone(), ClientRequest::Initialize);
        // The agent version is provisional until the agent answers, so the
        // answer is not relayed verbatim by the passthrough route.
        self.agent_version = None;
        let learning = self.config.agent_protocol.is_none();
        let forwarded = if learning {
            // The agent's version is unknown: send the client's shape plus
            // the other version's fields (both schemas allow extra fields),
            // so an agent of either version reads what it needs.
            let mut p = params;
            p.insert("protocolVersion".into(), client.into());
            let other = match client {
                2 => shapes::init_request_v2_to_v1(p.clone(), self.bridge_agent_ext()),
                _ => shapes::init_request_v1_to_v2(p.clone()),
            };
            for (k, v) in other {
                if k != "protocolVersion" {
                    p.entry(k).or_insert(v);
                }
            }
            wire::request(&id, "initialize", Value::Object(p))
        } else if agent == client && asked == u64::from(client) {
            line.to_owned()
        } else {
            let params = match (client, agent) {
                (2, 1) => shapes::init_request_v2_to_v1(params, self.bridge_agent_ext()),
                (1, 2) => shapes::init_request_v1_to_v2(params),
                _ => {
                    let mut p = params;
                    p.insert("protocolVersion".into(), agent.into());
                    p
                }
            };
            wire::request(&id, "initialize", Value::Object(params))
        };
        self.provisional_agent = agent;
        out.to_agent.push(forwarded);
    }

    /// Extensions advertised to a v1 agent behind a v2 client: the client's,
    /// plus the clears, which the bridge turns into v2 upserts for any client.
    fn bridge_agent_ext(&self) -> Extensions {
        let mut ext = self.client_ext;
        ext.insert(Extension::AgentMessageClear);
        ext.insert(Extension::AgentThoughtClear);
        ext
    }

    /// The agent answered `initialize`: translates the answer, then the client
    /// lines held meanwhile, in order.
    fn agent_initialized(&mut self, id: &str, frame: &wire::Frame<'_>, out: &mut Translated) {
        self.translate_initialized(id, frame, out);
        self.held_bytes = 0;
        for line in std::mem::take(&mut self.held_client) {
            let more = self.from_client(&line);
            out.to_agent.extend(more.to_agent);
            out.to_client.extend(more.to_client);
            out.diagnostics.extend(more.diagnostics);
        }
    }

    fn translate_initialized(&mut self, id: &str, frame: &wire::Frame<'_>, out: &mut Translated) {
        self.init_id = None;
        self.requests.remove(id);
        let client = self.client_version.unwrap_or(1);
        if let Some(error) = frame.error {
            self.agent_version = Some(self.provisional_agent);
            out.to_client
                .push(wire::error_response_raw(id, error.get()));
            return;
        }
        let result = wire::object_of(frame.result).unwrap_or_default();
        let reported = result
            .get("protocolVersion")
            .and_then(Value::as_u64)
            .unwrap_or(u64::from(self.provisional_agent));
        let agent: u16 = if reported >= 2 { 2 } else { 1 };
        if let Some(wanted) = self.config.agent_protocol
            && wanted != agent
        {
            out.diag(
                Severity::Warning,
                "agent_version_differs",
                format!("asked the agent for protocol v{wanted}, it answered v{reported}; bridging from v{agent}"),
            );
        }
        self.agent_version = Some(agent);
        let translated = match (agent, client) {
            (1, 2) => shapes::init_response_v1_to_v2(result),
            (2, 1) => shapes::init_response_v2_to_v1(result),
            _ => {
                let mut r = result;
                r.insert("protocolVersion".into(), client.into());
                r
            }
        };
        out.to_client
            .push(wire::response(id, &Value::Object(translated)));
    }
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

/// Reads `"sessionId"` of a params object.
pub(crate) fn session_of(params: &Map<String, Value>) -> String {
    params
        .get("sessionId")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}
