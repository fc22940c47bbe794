//! Validation of emitted JSON-RPC messages against the official ACP JSON
//! Schemas (v1 and v2 `schema.unstable.json`, embedded from `tests/schema/`
//! at the workspace root, the repository's only copy). The one schema
//! validator of the workspace: the protocol's, the agent's and the bridge's
//! tests and `spindle-schema-check` all use it. For tests: enable the
//! `schema-check` feature in `[dev-dependencies]`.
//!
//! Which definition applies is decided by method, using the schemas' own
//! `x-method` / `x-side` annotations:
//! - requests and notifications: the params definition of that method for
//!   the sending side (unknown non-`_` methods are errors; `_`-prefixed
//!   extension methods only get the envelope checked);
//! - responses: the result definition of the answered method when known
//!   (use [`SchemaConversation`] to track requests), otherwise the schema's
//!   union of all responses for that side; errors against `Error`.
//!
//! Documented exemptions (Spindle extensions, see [`crate::extensions`]): in
//! v1, whose update union is closed, a `session/update` whose
//! `update.sessionUpdate` is `agent_message_clear`, `agent_thought_clear` or
//! `session_cleared` only gets its envelope (`sessionId` string, `update`
//! object) checked; v2's open union validates them in full. `clearBoundary`
//! travels in `_meta` and needs no exemption.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use spindle_wire::client_methods::{INITIALIZE, SESSION_UPDATE};

use crate::extensions::{AGENT_MESSAGE_CLEAR, AGENT_THOUGHT_CLEAR, SESSION_CLEARED};
use crate::jsonrpc::RequestId;

const SCHEMA_V1: &str = include_str!("../../../tests/schema/v1/schema.unstable.json");
const SCHEMA_V2: &str = include_str!("../../../tests/schema/v2/schema.unstable.json");

/// Who sends the message being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Sent by the client, handled by the agent.
    ClientToAgent,
    /// Sent by the agent, handled by the client.
    AgentToClient,
}

impl Direction {
    fn opposite(self) -> Direction {
        match self {
            Direction::ClientToAgent => Direction::AgentToClient,
            Direction::AgentToClient => Direction::ClientToAgent,
        }
    }

    /// The `x-side` that handles messages sent this way.
    fn handler_side(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "agent",
            Direction::AgentToClient => "client",
        }
    }
}

#[derive(Debug, Default)]
struct MethodDefs {
    request: Option<String>,
    response: Option<String>,
    notification: Option<String>,
}

#[derive(Debug)]
struct Schema {
    root: Value,
    /// (handler side, method) -> definitions.
    methods: HashMap<(String, String), MethodDefs>,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
    /// v1's session-update union is closed, so the extension updates need
    /// the exemption; v2's is open and validates them in full.
    closed_update_union: bool,
}

impl Schema {
    fn load(text: &str, closed_update_union: bool) -> Schema {
        let root: Value = serde_json::from_str(text).expect("embedded schema is valid JSON");
        let mut methods: HashMap<(String, String), MethodDefs> = HashMap::new();
        if let Some(defs) = root.get("$defs").and_then(Value::as_object) {
            for (name, def) in defs {
                let (Some(side), Some(method)) = (
                    def.get("x-side").and_then(Value::as_str),
                    def.get("x-method").and_then(Value::as_str),
                ) else {
                    continue;
                };
                let sides: &[&str] = match side {
                    "both" | "protocol" => &["agent", "client"],
                    s => std::slice::from_ref(match s {
                        "agent" => &"agent",
                        _ => &"client",
                    }),
                };
                for s in sides {
                    let entry = methods
                        .entry(((*s).to_owned(), method.to_owned()))
                        .or_default();
                    if name.ends_with("Request") {
                        entry.request = Some(name.clone());
                    } else if name.ends_with("Response") {
                        entry.response = Some(name.clone());
                    } else if name.ends_with("Notification") {
                        entry.notification = Some(name.clone());
                    }
                }
            }
        }
        Schema {
            root,
            methods,
            validators: Mutex::new(HashMap::new()),
            closed_update_union,
        }
    }

    fn validator(&self, def: &str) -> Result<Arc<jsonschema::Validator>, String> {
        let mut cache = self.validators.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = cache.get(def) {
            return Ok(v.clone());
        }
        if self.root["$defs"].get(def).is_none() {
            return Err(format!("schema has no definition {def}"));
        }
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": self.root["$defs"],
            "$ref": format!("#/$defs/{def}"),
        });
        let v = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .map_err(|e| format!("schema definition {def} does not compile: {e}"))?;
        let v = Arc::new(v);
        cache.insert(def.to_owned(), v.clone());
        Ok(v)
    }

    fn check(&self, def: &str, instance: &Value, what: &str, errors: &mut Vec<String>) {
        match self.validator(def) {
            Ok(v) => {
                for e in v.iter_errors(instance) {
                    errors.push(format!("{what} ({def}) at {}: {e}", e.instance_path));
                }
            }
            Err(e) => errors.push(e),
        }
    }
}

fn schema(version: u16) -> &'static Schema {
    static V1: OnceLock<Schema> = OnceLock::new();
    static V2: OnceLock<Schema> = OnceLock::new();
    if version >= 2 {
        V2.get_or_init(|| Schema::load(SCHEMA_V2, false))
    } else {
        V1.get_or_init(|| Schema::load(SCHEMA_V1, true))
    }
}

fn is_exempt_update(params: &Value) -> bool {
    let kind = params
        .get("update")
        .and_then(|u| u.get("sessionUpdate"))
        .and_then(Value::as_str);
    matches!(kind, Some(k) if [AGENT_MESSAGE_CLEAR, AGENT_THOUGHT_CLEAR, SESSION_CLEARED].contains(&k))
}

/// Validates one message `direction` sends under `protocol_version` (1 or
/// 2). Responses are checked against the union of all responses of that
/// side; use [`SchemaConversation`] for method-specific response checks.
pub fn validate_outgoing(
    protocol_version: u16,
    direction: Direction,
    message_json: &str,
) -> Result<(), Vec<String>> {
    validate_with_method(protocol_version, direction, message_json, None)
}

/// Validates a response to a request of `method`, or any other message as
/// [`validate_outgoing`] does.
pub fn validate_with_method(
    protocol_version: u16,
    direction: Direction,
    message_json: &str,
    answered_method: Option<&str>,
) -> Result<(), Vec<String>> {
    let value: Value =
        serde_json::from_str(message_json).map_err(|e| vec![format!("not JSON: {e}")])?;
    let mut errors = Vec::new();
    check_value(
        schema(protocol_version),
        direction,
        &value,
        answered_method,
        &mut errors,
    );
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn check_value(
    s: &Schema,
    direction: Direction,
    v: &Value,
    answered_method: Option<&str>,
    errors: &mut Vec<String>,
) {
    let Some(obj) = v.as_object() else {
        errors.push("a message must be a JSON object".into());
        return;
    };
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        errors.push("\"jsonrpc\" must be \"2.0\"".into());
    }
    if let Some(id) = obj.get("id") {
        s.check("RequestId", id, "id", errors);
    }
    let side = direction.handler_side();
    if let Some(method) = obj.get("method") {
        let Some(method) = method.as_str() else {
            errors.push("\"method\" must be a string".into());
            return;
        };
        let is_request = obj.contains_key("id");
        if is_request && obj.get("id") == Some(&Value::Null) {
            errors.push("a request id must not be null".into());
        }
        let params = obj.get("params").cloned().unwrap_or_else(|| json!({}));
        if method.starts_with('_') {
            if !params.is_object() && !params.is_array() {
                errors.push("params must be an object or an array".into());
            }
            return;
        }
        if method == SESSION_UPDATE && s.closed_update_union && is_exempt_update(&params) {
            if !params.get("sessionId").is_some_and(Value::is_string) {
                errors.push("session/update needs a string sessionId".into());
            }
            return;
        }
        let defs = s.methods.get(&(side.to_owned(), method.to_owned()));
        let def = defs.and_then(|d| {
            if is_request {
                d.request.as_deref()
            } else {
                d.notification.as_deref()
            }
        });
        match def {
            Some(def) => s.check(def, &params, &format!("{method} params"), errors),
            None => errors.push(format!(
                "{} {method:?} is not defined for the {side} side in this schema version",
                if is_request {
                    "request"
                } else {
                    "notification"
                }
            )),
        }
        return;
    }
    if !obj.contains_key("id") {
        errors.push("a response needs an id".into());
    }
    match (obj.get("result"), obj.get("error")) {
        (Some(result), None) => {
            let def = answered_method
                .and_then(|m| {
                    s.methods
                        .get(&(direction.opposite().handler_side().to_owned(), m.to_owned()))
                })
                .and_then(|d| d.response.as_deref());
            match (def, answered_method) {
                (Some(def), Some(m)) => s.check(def, result, &format!("{m} result"), errors),
                (None, Some(m)) if m.starts_with('_') => {}
                (None, Some(m)) => errors.push(format!("no response definition for method {m:?}")),
                (_, None) => {
                    let union = match direction {
                        Direction::ClientToAgent => "ClientResponse",
                        Direction::AgentToClient => "AgentResponse",
                    };
                    s.check(union, v, "response", errors);
                }
            }
        }
        (None, Some(error)) => s.check("Error", error, "error", errors),
        _ => errors.push("a response needs exactly one of \"result\" and \"error\"".into()),
    }
}

/// Validates a whole exchange, learning the protocol version from
/// `initialize` and which method each response answers.
#[derive(Debug, Default)]
pub struct SchemaConversation {
    version: Option<u16>,
    asked_version: Option<u16>,
    pending: HashMap<(Direction, RequestId), String>,
}

impl SchemaConversation {
    /// A conversation whose version is learned from `initialize` (v1 until
    /// then).
    pub fn new() -> Self {
        Self::default()
    }

    /// The version in force.
    pub fn protocol_version(&self) -> u16 {
        self.version.unwrap_or(1)
    }

    /// Records and validates one message sent in `direction`.
    pub fn check(&mut self, direction: Direction, message_json: &str) -> Result<(), Vec<String>> {
        let value: Value =
            serde_json::from_str(message_json).map_err(|e| vec![format!("not JSON: {e}")])?;
        let id = value
            .get("id")
            .and_then(|i| serde_json::from_value::<RequestId>(i.clone()).ok());
        let method = value.get("method").and_then(Value::as_str);
        let mut version = self.protocol_version();
        let mut answered = None;
        match (method, &id) {
            (Some(m), Some(id)) => {
                if m == INITIALIZE {
                    let asked = value["params"]["protocolVersion"].as_u64() == Some(2);
                    let asked = if asked { 2 } else { 1 };
                    self.asked_version = Some(asked);
                    version = asked;
                }
                self.pending.insert((direction, id.clone()), m.to_owned());
            }
            (None, Some(id)) => {
                answered = self.pending.remove(&(direction.opposite(), id.clone()));
                if answered.as_deref() == Some(INITIALIZE) {
                    let chosen = value["result"]["protocolVersion"].as_u64();
                    if let Some(v @ (1 | 2)) = chosen {
                        self.version = Some(v as u16);
                    }
                    version = self.version.or(self.asked_version).unwrap_or(1);
                }
            }
            _ => {}
        }
        let mut errors = Vec::new();
        check_value(
            schema(version),
            direction,
            &value,
            answered.as_deref(),
            &mut errors,
        );
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    fn ok(v: u16, d: Direction, j: Value) {
        if let Err(e) = validate_outgoing(v, d, &j.to_string()) {
            panic!("expected valid v{v} {j}: {e:?}");
        }
    }

    fn bad(v: u16, d: Direction, j: Value) -> Vec<String> {
        validate_outgoing(v, d, &j.to_string()).expect_err(&format!("expected invalid: {j}"))
    }

    #[test]
    fn v1_good_and_bad() {
        ok(
            1,
            ClientToAgent,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize",
            "params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false}}}),
        );
        ok(
            1,
            ClientToAgent,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt",
            "params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}),
        );
        ok(
            1,
            AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update",
            "params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}),
        );
        bad(
            1,
            ClientToAgent,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}),
        );
        // v1's update union is closed: v2 upserts are not v1.
        bad(
            1,
            AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update",
            "params":{"sessionId":"s","update":{"sessionUpdate":"agent_message","messageId":"m","content":[]}}}),
        );
        // Direction matters: an agent does not send session/prompt.
        bad(
            1,
            AgentToClient,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt",
            "params":{"sessionId":"s","prompt":[]}}),
        );
    }

    #[test]
    fn v2_good_and_bad() {
        ok(
            2,
            ClientToAgent,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize",
            "params":{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{}}}),
        );
        bad(
            2,
            ClientToAgent,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize",
            "params":{"protocolVersion":2}}),
        );
        ok(
            2,
            AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update",
            "params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}),
        );
        bad(
            2,
            AgentToClient,
            json!({"jsonrpc":"2.0","method":"session/update",
            "params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}),
        );
    }

    #[test]
    fn extensions_are_exempt_but_envelope_checked() {
        for v in [1, 2] {
            ok(
                v,
                AgentToClient,
                json!({"jsonrpc":"2.0","method":"session/update",
                "params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_clear"}}}),
            );
            bad(
                v,
                AgentToClient,
                json!({"jsonrpc":"2.0","method":"session/update",
                "params":{"update":{"sessionUpdate":"session_cleared"}}}),
            );
        }
    }

    #[test]
    fn conversation_checks_results_by_method() {
        let mut c = SchemaConversation::new();
        c.check(
            ClientToAgent,
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize",
            "params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}})
            .to_string(),
        )
        .unwrap();
        c.check(
            AgentToClient,
            &json!({"jsonrpc":"2.0","id":0,
            "result":{"protocolVersion":2,"info":{"name":"a","version":"1"}}})
            .to_string(),
        )
        .unwrap();
        assert_eq!(c.protocol_version(), 2);
        c.check(AgentToClient, &json!({"jsonrpc":"2.0","id":"p","method":"session/request_permission",
            "params":{"sessionId":"s","title":"Run ls?","options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}})
            .to_string()).unwrap();
        let errs = c.check(
            ClientToAgent,
            &json!({"jsonrpc":"2.0","id":"p",
            "result":{"outcome":{"optionId":"ok"}}})
            .to_string(),
        );
        assert!(errs.is_err());
        c.check(
            ClientToAgent,
            &json!({"jsonrpc":"2.0","id":5,
            "error":{"code":-32601,"message":"no"}})
            .to_string(),
        )
        .unwrap();
    }
}
