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
//! With the feature `proxy`, [`proxy::run_stdio`] drives a bridge between this
//! process's stdio and an agent child process (tokio); without it the crate
//! does no I/O.
//!
//! The translation table (lossless / lossy / rejected, each pinned by a
//! test) is `BRIDGE.md` at the repository root.
#![deny(missing_docs)]

mod down;
mod elicitation;
mod handshake;
#[cfg(feature = "proxy")]
pub mod proxy;
mod shapes;
mod state;
mod types;
mod unbridged;
mod up;
mod wire;

pub use spindle_wire::DEFAULT_MAX_LINE_BYTES;
pub use spindle_wire::extensions::Extensions;
pub use state::{Bridge, MAX_HELD_CLIENT_BYTES};
pub use types::{BridgeConfig, BridgeDiagnostic, Policy, Route, Severity, Translated};

use spindle_wire::client_methods::INITIALIZE;
use types::ClientRequest;

/// The two entry points: every line of either side goes through one of
/// them, which picks the route's translation.
impl Bridge {
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
        if frame.method.as_deref() == Some(INITIALIZE) {
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
        if matches!(
            self.route(),
            Route::V2ClientV1Agent | Route::V1ClientV2Agent
        ) && self.refuse_untranslated(&frame, &mut out)
        {
            return out;
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

    /// The agent's result of a `session/new`, `session/load` or `session/resume` for `session`
    /// that reached the agent without this bridge (a gateway that opens the agent session
    /// itself and joins clients of the other version later): its `modes` and `configOptions`
    /// as the client's version has them. The bridge keeps them as if it had relayed the result,
    /// so later mode and option changes of that session translate against them. Other fields
    /// pass unchanged; before the route is known nothing is translated.
    pub fn adopt_session_result(
        &mut self,
        session: &str,
        mut result: serde_json::Map<String, serde_json::Value>,
    ) -> (
        serde_json::Map<String, serde_json::Value>,
        Vec<BridgeDiagnostic>,
    ) {
        let mut out = Translated::default();
        match self.route() {
            Route::V2ClientV1Agent => self.up_session_result(session, &mut result),
            Route::V1ClientV2Agent => {
                if let Some(serde_json::Value::Array(options)) = result.remove("configOptions") {
                    self.down_options(session, &options, &mut result, &mut out);
                }
            }
            Route::Passthrough | Route::Unknown => {}
        }
        (result, out.diagnostics)
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
            for line in self.agent_initialized(&id, &frame, &mut out) {
                let more = self.from_client(&line);
                out.to_agent.extend(more.to_agent);
                out.to_client.extend(more.to_client);
                out.diagnostics.extend(more.diagnostics);
            }
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
}
