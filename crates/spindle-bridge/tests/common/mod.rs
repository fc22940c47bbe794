//! Test rig for the bridge: every line it emits is validated against the
//! official JSON Schema of the side it goes to (the workspace's one copy, in
//! `tests/schema/` at the root, through `spindle_protocol::schema_check`).

#![allow(dead_code)]

use std::collections::HashMap;

use serde_json::{Value, json};
use spindle_bridge::{Bridge, BridgeConfig, Policy, Severity, Translated};
use spindle_protocol::schema_check::{Direction, validate_with_method};

/// Validates a line sent in `direction` to a peer speaking `version`, with
/// the workspace's one validator (`spindle_protocol::schema_check`, which
/// exempts the Spindle extension updates). `answered` is the method of the
/// request a response answers, when known.
pub fn validate_sent(direction: Direction, version: u16, line: &Value, answered: Option<&str>) {
    if let Err(errors) = validate_with_method(version, direction, &line.to_string(), answered) {
        panic!(
            "failed schema validation: {:?}\nline: {line}",
            &errors[..errors.len().min(3)]
        );
    }
}

/// Validates a line the bridge sends to a client speaking `version`.
pub fn validate(version: u16, line: &Value, answered: Option<&str>) {
    validate_sent(Direction::AgentToClient, version, line, answered);
}

/// A bridge between a scripted client and a scripted agent.
pub struct Rig {
    pub bridge: Bridge,
    pub client_version: u16,
    pub agent_version: u16,
    /// Client request id -> method, to validate the responses it gets.
    client_methods: HashMap<String, String>,
    /// Agent request id -> method.
    agent_methods: HashMap<String, String>,
    /// Every line the client received.
    pub client_log: Vec<Value>,
    /// Every line the agent received.
    pub agent_log: Vec<Value>,
    pub diagnostics: Vec<spindle_bridge::BridgeDiagnostic>,
}

pub fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("bridge emitted invalid JSON {e}: {line}"))
}

impl Rig {
    pub fn new(client_version: u16, agent_version: u16, policy: Policy) -> Self {
        Rig {
            bridge: Bridge::new(BridgeConfig {
                client_protocol: None,
                agent_protocol: Some(agent_version),
                policy,
            }),
            client_version,
            agent_version,
            client_methods: HashMap::new(),
            agent_methods: HashMap::new(),
            client_log: Vec::new(),
            agent_log: Vec::new(),
            diagnostics: Vec::new(),
        }
    }

    fn record(&mut self, t: &Translated) {
        for l in &t.to_agent {
            let v = parse(l);
            if let (Some(m), Some(id)) = (v["method"].as_str(), v.get("id")) {
                self.agent_methods.insert(id.to_string(), m.to_owned());
            }
            let answered = v.get("id").and_then(|id| {
                v.get("method")
                    .is_none()
                    .then(|| self.client_side_request(id))
                    .flatten()
            });
            validate_sent(
                Direction::ClientToAgent,
                self.agent_version,
                &v,
                answered.as_deref(),
            );
            self.agent_log.push(v);
        }
        for l in &t.to_client {
            let v = parse(l);
            let answered = if v.get("method").is_none() {
                v.get("id")
                    .and_then(|id| self.client_methods.get(&id.to_string()).cloned())
            } else {
                None
            };
            validate(self.client_version, &v, answered.as_deref());
            self.client_log.push(v);
        }
        self.diagnostics.extend(t.diagnostics.iter().cloned());
    }

    /// Responses the bridge forwards to the agent answer agent requests.
    fn client_side_request(&self, id: &Value) -> Option<String> {
        self.agent_methods.get(&id.to_string()).cloned()
    }

    pub fn client(&mut self, msg: Value) -> Translated {
        if let (Some(m), Some(id)) = (msg["method"].as_str(), msg.get("id")) {
            self.client_methods.insert(id.to_string(), m.to_owned());
        }
        let t = self.bridge.from_client(&msg.to_string());
        self.record(&t);
        t
    }

    pub fn agent(&mut self, msg: Value) -> Translated {
        if let (Some(m), Some(id)) = (msg["method"].as_str(), msg.get("id")) {
            self.agent_methods.insert(id.to_string(), m.to_owned());
        }
        let t = self.bridge.from_agent(&msg.to_string());
        self.record(&t);
        t
    }

    /// Sends an update from the agent.
    pub fn agent_update(&mut self, update: Value) -> Translated {
        self.agent(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":update}}))
    }

    /// Initialize + session/new with session id `s1`.
    pub fn handshake(&mut self, client_meta: Option<Value>) {
        let mut params = if self.client_version == 2 {
            json!({"protocolVersion":2,"info":{"name":"test-client","version":"1.0"},"capabilities":{}})
        } else {
            json!({"protocolVersion":1,"clientInfo":{"name":"test-client","version":"1.0"},
                   "clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false}})
        };
        if let Some(meta) = client_meta {
            params["_meta"] = meta;
        }
        self.client(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":params}));
        let result = if self.agent_version == 2 {
            json!({"protocolVersion":2,"info":{"name":"test-agent","version":"1.0"},
                   "capabilities":{"session":{"prompt":{"image":{}},"mcp":{"stdio":{},"http":{}}}}})
        } else {
            json!({"protocolVersion":1,"agentInfo":{"name":"test-agent","version":"1.0"},
                   "agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true}}})
        };
        self.agent(json!({"jsonrpc":"2.0","id":0,"result":result}));
        let mcp = if self.client_version == 2 {
            json!([{"type":"stdio","name":"m","command":"/bin/m","args":[],"env":[]}])
        } else {
            json!([{"name":"m","command":"/bin/m","args":[],"env":[]}])
        };
        self.client(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":mcp}}));
        self.agent(json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}));
    }

    /// The codes of the diagnostics of one severity, in order.
    pub fn codes(&self, severity: Severity) -> Vec<&'static str> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .map(|d| d.code)
            .collect()
    }

    pub fn errors(&self) -> Vec<&'static str> {
        self.codes(Severity::Error)
    }

    pub fn warnings(&self) -> Vec<&'static str> {
        self.codes(Severity::Warning)
    }

    /// The `update` objects the client received since index `from`.
    pub fn client_updates(&self, from: usize) -> Vec<Value> {
        self.client_log[from..]
            .iter()
            .filter(|l| l["method"] == "session/update")
            .map(|l| l["params"]["update"].clone())
            .collect()
    }

    /// Sends the agent updates `input` and checks every update the client received from them,
    /// and the error and warning codes, naming the case `name` in a failure.
    pub fn check_updates(
        &mut self,
        name: &str,
        input: &[Value],
        output: &[Value],
        errors: &[&str],
        warnings: &[&str],
    ) {
        let from = self.client_log.len();
        for update in input {
            self.agent_update(update.clone());
        }
        assert_eq!(self.client_updates(from), output, "{name}");
        assert_eq!(self.errors(), errors, "{name}");
        assert_eq!(self.warnings(), warnings, "{name}");
    }
}

pub fn text(t: &str) -> Value {
    json!({"type":"text","text":t})
}
