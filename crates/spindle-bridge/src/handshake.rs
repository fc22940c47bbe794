//! The `initialize` handshake (BRIDGE.md "Handshake and session setup"):
//! the client's request fixes its version and extensions and is sent on in
//! the agent's shape (or both shapes while the agent's version is unknown);
//! the agent's answer fixes the route and is brought back to the client's
//! version.

use serde_json::Value;
use spindle_wire::client_methods::INITIALIZE;
use spindle_wire::extensions::{Extension, Extensions};
use spindle_wire::meta::META_KEY;

use crate::shapes;
use crate::state::Bridge;
use crate::types::{ClientRequest, Severity, Translated};
use crate::wire;

impl Bridge {
    pub(crate) fn client_initialize(
        &mut self,
        line: &str,
        frame: &wire::Frame<'_>,
        out: &mut Translated,
    ) {
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
        let caps_key = if client == 2 {
            "capabilities"
        } else {
            "clientCapabilities"
        };
        if let Some(caps) = params.get(caps_key) {
            for what in shapes::unbridged_client_caps(caps, client) {
                out.diag(
                    Severity::Info,
                    "capability_not_bridged",
                    format!("client capability {what}: not advertised to the agent"),
                );
            }
        }
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
            wire::request(&id, INITIALIZE, Value::Object(p))
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
            wire::request(&id, INITIALIZE, Value::Object(params))
        };
        self.provisional_agent = agent;
        out.to_agent.push(forwarded);
    }

    /// Extensions advertised to a v1 agent behind a v2 client: the client's,
    /// plus the clears, which the bridge turns into v2 upserts for any client.
    pub(crate) fn bridge_agent_ext(&self) -> Extensions {
        let mut ext = self.client_ext;
        ext.insert(Extension::AgentMessageClear);
        ext.insert(Extension::AgentThoughtClear);
        ext
    }

    /// The agent answered `initialize`: translates the answer and returns
    /// the client lines held meanwhile, which the caller translates next,
    /// in order.
    pub(crate) fn agent_initialized(
        &mut self,
        id: &str,
        frame: &wire::Frame<'_>,
        out: &mut Translated,
    ) -> Vec<String> {
        self.translate_initialized(id, frame, out);
        self.held_bytes = 0;
        std::mem::take(&mut self.held_client)
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
        self.agent_logout = result
            .get("agentCapabilities")
            .and_then(|c| c.get("auth"))
            .and_then(|a| a.get("logout"))
            .is_some_and(|l| l.is_object());
        let (translated, dropped) = match (agent, client) {
            (1, 2) => shapes::init_response_v1_to_v2(result),
            (2, 1) => shapes::init_response_v2_to_v1(result),
            _ => {
                let mut r = result;
                r.insert("protocolVersion".into(), client.into());
                (r, Vec::new())
            }
        };
        for what in dropped {
            out.diag(
                Severity::Info,
                "capability_not_bridged",
                format!("agent capability {what}: not advertised to the client"),
            );
        }
        out.to_client
            .push(wire::response(id, &Value::Object(translated)));
    }
}
