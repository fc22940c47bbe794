//! Test rig for the bridge: every line it emits is validated against the
//! official JSON Schema of the side it goes to (copies in `tests/schema/`).

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::Validator;
use serde_json::{Value, json};
use spindle_bridge::{Bridge, BridgeConfig, Policy, Severity, Translated};

struct Schemas {
    json: Value,
    root: Validator,
    defs: Mutex<HashMap<&'static str, Arc<Validator>>>,
}

impl Schemas {
    fn def(&self, name: &'static str) -> Arc<Validator> {
        let mut defs = self.defs.lock().unwrap();
        defs.entry(name)
            .or_insert_with(|| {
                assert!(
                    self.json["$defs"].get(name).is_some(),
                    "no definition {name}"
                );
                let schema = json!({
                    "$schema": self.json["$schema"],
                    "$defs": self.json["$defs"],
                    "$ref": format!("#/$defs/{name}"),
                });
                Arc::new(jsonschema::validator_for(&schema).expect("def compiles"))
            })
            .clone()
    }
}

fn load(version: u16) -> Schemas {
    let path = format!(
        "{}/tests/schema/v{version}/schema.unstable.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let root: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&root).expect("schema compiles");
    Schemas {
        json: root,
        root: validator,
        defs: Mutex::new(HashMap::new()),
    }
}

fn schemas(version: u16) -> &'static Schemas {
    static V1: OnceLock<Schemas> = OnceLock::new();
    static V2: OnceLock<Schemas> = OnceLock::new();
    match version {
        1 => V1.get_or_init(|| load(1)),
        _ => V2.get_or_init(|| load(2)),
    }
}

fn check(v: &Validator, what: &str, instance: &Value, line: &Value) {
    let errs: Vec<String> = v
        .iter_errors(instance)
        .take(3)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(
        errs.is_empty(),
        "{what} failed schema validation: {errs:?}\nline: {line}"
    );
}

/// Seed extensions the official schema lacks (sent only to opted-in peers).
fn extension_update(line: &Value) -> bool {
    matches!(
        line["params"]["update"]["sessionUpdate"].as_str(),
        Some("agent_message_clear" | "agent_thought_clear" | "session_cleared")
    )
}

/// Validates a line for a peer speaking `version`. `answered` is the method
/// of the request a response answers, when known.
pub fn validate(version: u16, line: &Value, answered: Option<&str>) {
    if extension_update(line) {
        return;
    }
    let s = schemas(version);
    check(&s.root, "message", line, line);
    let params = &line["params"];
    let def: Option<&'static str> = match line["method"].as_str() {
        Some("session/update") => Some(if version == 1 {
            "SessionNotification"
        } else {
            "UpdateSessionNotification"
        }),
        Some("session/request_permission") => Some("RequestPermissionRequest"),
        Some("initialize") => Some("InitializeRequest"),
        Some("session/new") => Some("NewSessionRequest"),
        Some("session/load") => Some("LoadSessionRequest"),
        Some("session/resume") => Some("ResumeSessionRequest"),
        Some("session/prompt") => Some("PromptRequest"),
        Some("session/set_mode") => Some("SetSessionModeRequest"),
        Some("session/set_config_option") => Some("SetSessionConfigOptionRequest"),
        Some("session/cancel") => Some(if version == 1 {
            "CancelNotification"
        } else {
            "CancelSessionNotification"
        }),
        Some(_) => None,
        None => None,
    };
    if let Some(def) = def {
        check(&s.def(def), def, params, line);
        return;
    }
    if line.get("method").is_some() {
        return;
    }
    if let Some(error) = line.get("error") {
        check(&s.def("Error"), "Error", error, line);
        return;
    }
    let def = match answered {
        Some("initialize") => "InitializeResponse",
        Some("session/new") => "NewSessionResponse",
        Some("session/prompt") => "PromptResponse",
        Some("session/load") if version == 1 => "LoadSessionResponse",
        Some("session/load") | Some("session/resume") => "ResumeSessionResponse",
        Some("session/set_mode") => "SetSessionModeResponse",
        Some("session/set_config_option") => "SetSessionConfigOptionResponse",
        Some("session/request_permission") => "RequestPermissionResponse",
        _ => return,
    };
    check(&s.def(def), def, &line["result"], line);
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
            validate(self.agent_version, &v, answered.as_deref());
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

    pub fn errors(&self) -> Vec<&'static str> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.code)
            .collect()
    }

    pub fn warnings(&self) -> Vec<&'static str> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .map(|d| d.code)
            .collect()
    }

    /// The `update` objects the client received since index `from`.
    pub fn client_updates(&self, from: usize) -> Vec<Value> {
        self.client_log[from..]
            .iter()
            .filter(|l| l["method"] == "session/update")
            .map(|l| l["params"]["update"].clone())
            .collect()
    }
}

pub fn text(t: &str) -> Value {
    json!({"type":"text","text":t})
}
