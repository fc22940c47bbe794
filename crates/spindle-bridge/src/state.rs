//! The [`Bridge`] value: configuration, negotiated versions and extensions,
//! pending client requests, lines held behind `initialize`, and the state
//! of each direction; with its constructor and the accessors of the public
//! API.

use std::collections::HashMap;

use spindle_wire::extensions::Extensions;
use spindle_wire::scan::ChunkScanner;
use spindle_wire::tags;

use crate::down::state::DownState;
use crate::types::{BridgeConfig, ClientRequest, Route, Severity, Translated};
use crate::up::state::UpState;
use crate::wire;

/// The stateful v1<->v2 translator. One per client connection.
#[derive(Debug)]
pub struct Bridge {
    pub(crate) config: BridgeConfig,
    pub(crate) client_version: Option<u16>,
    pub(crate) agent_version: Option<u16>,
    pub(crate) init_id: Option<String>,
    /// Extensions the client opted into.
    pub(crate) client_ext: Extensions,
    /// v1 client capabilities that gate update kinds.
    pub(crate) client_notices: bool,
    pub(crate) client_compaction: bool,
    pub(crate) client_plan_ops: bool,
    /// A v1 agent advertised `agentCapabilities.auth.logout`.
    pub(crate) agent_logout: bool,
    pub(crate) requests: HashMap<String, ClientRequest>,
    /// The version asked of the agent, until it answers.
    pub(crate) provisional_agent: u16,
    pub(crate) up: UpState,
    pub(crate) down: DownState,
    /// The shape of the last chunk line, for the hot path.
    pub(crate) chunks: ChunkScanner,
    /// Client lines that arrived after `initialize` and before the agent
    /// answered it: they wait until the versions, and so the translation,
    /// are known (a client may pipeline `session/new` behind `initialize`).
    pub(crate) held_client: Vec<String>,
    pub(crate) held_bytes: usize,
}

/// At most this many bytes of client lines wait for the agent's `initialize`
/// answer; past it they are relayed untranslated, with a warning.
pub const MAX_HELD_CLIENT_BYTES: usize = 16 << 20;

impl Bridge {
    /// The client request that the agent's response to `id` answers, taken out of the pending
    /// set. `None`, with a warning, when nothing waits for `id` (F9): an answer nobody asked for
    /// (a duplicate, or one to an id the bridge minted and already answered) never reaches the
    /// client.
    pub(crate) fn take_pending_request(
        &mut self,
        id: &str,
        out: &mut Translated,
    ) -> Option<ClientRequest> {
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
            agent_logout: false,
            requests: HashMap::new(),
            provisional_agent: 1,
            up: UpState::default(),
            down: DownState::default(),
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
}
