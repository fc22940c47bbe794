//! Test client for the reference agent: runs `run_agent` over an in-memory
//! duplex, validates every line the agent sends against the official JSON
//! Schema of the negotiated version, and rebuilds the transcript.

#![allow(dead_code)]

pub mod model;
pub mod schema;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use spindle_agent::{AgentConfig, Version, run_agent};
use spindle_engine::{EngineConfig, TranscriptEngine};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

pub use model::Model;

/// Upper bound on waiting for one line; only guards against a hung test.
const SILENCE_LIMIT: Duration = Duration::from_secs(60);

/// How the test client answers `session/request_permission`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionAnswer {
    Allow,
    Reject,
    Cancelled,
    /// Do not answer; the test handles the request itself.
    Hold,
}

pub struct Peer {
    writer: WriteHalf<DuplexStream>,
    reader: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    task: Option<JoinHandle<std::io::Result<i32>>>,
    next_id: u64,
    /// Methods of our requests by id, to validate their responses.
    methods: HashMap<u64, String>,
    pub version: Version,
    /// Every line received, parsed.
    pub log: Vec<Value>,
    pub permission: PermissionAnswer,
    /// Permission requests seen.
    pub permission_requests: Vec<Value>,
    /// The project's transcript engine, fed every line both ways.
    pub engine: TranscriptEngine,
}

/// A turn's outcome as seen by the client.
#[derive(Debug)]
pub struct TurnResult {
    /// Every message received from the prompt until the end of the turn.
    pub lines: Vec<Value>,
    /// The `update` objects among them.
    pub updates: Vec<Value>,
    pub stop_reason: String,
    /// v2: the `messageId` of the prompt response.
    pub user_message_id: Option<String>,
}

impl TurnResult {
    pub fn kinds(&self) -> Vec<String> {
        self.updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap_or("").to_owned())
            .collect()
    }

    pub fn model(&self) -> Model {
        let mut m = Model::default();
        for u in &self.updates {
            m.apply(u);
        }
        m
    }

    pub fn reply(&self) -> String {
        self.model().final_reply()
    }
}

impl Peer {
    pub fn start(config: AgentConfig) -> Peer {
        Peer::start_with(config, spindle_agent::DEFAULT_MAX_LINE_BYTES)
    }

    pub fn start_with(config: AgentConfig, max_line_bytes: usize) -> Peer {
        let (client, agent) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent);
        let task = tokio::spawn(run_agent(
            config,
            max_line_bytes,
            BufReader::new(agent_read),
            agent_write,
        ));
        let (client_read, client_write) = tokio::io::split(client);
        Peer {
            writer: client_write,
            reader: BufReader::new(client_read).lines(),
            task: Some(task),
            next_id: 100,
            methods: HashMap::new(),
            version: Version::V1,
            log: Vec::new(),
            permission: PermissionAnswer::Allow,
            permission_requests: Vec::new(),
            engine: TranscriptEngine::new(EngineConfig::default()),
        }
    }

    pub fn fast() -> Peer {
        Peer::start(AgentConfig::default())
    }

    pub async fn send_raw(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    /// Our request ids and their methods.
    pub fn request_methods(&self) -> HashMap<u64, String> {
        self.methods.clone()
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
    }

    pub async fn send(&mut self, message: &Value) {
        let line = message.to_string();
        self.engine.apply_client_line(&line);
        self.send_raw(&line).await;
    }

    /// The engine's reply for the last turn.
    pub fn engine_reply(&self) -> String {
        self.engine.final_reply().unwrap_or_default()
    }

    /// Asserts the engine had nothing to complain about.
    pub fn assert_no_engine_diagnostics(&self) {
        let diags = &self.engine.transcript().diagnostics;
        assert!(diags.is_empty(), "engine diagnostics: {diags:?}");
    }

    pub async fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.methods.insert(id, method.to_owned());
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&msg).await;
        id
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send(&msg).await;
    }

    /// The next line from the agent, schema-checked. `None` at end of stream.
    pub async fn try_recv(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(SILENCE_LIMIT, self.reader.next_line())
            .await
            .expect("the agent went silent")
            .expect("reading from the agent")?;
        let value: Value = serde_json::from_str(&line).expect("agent lines are JSON");
        let method = value["id"]
            .as_u64()
            .and_then(|id| self.methods.get(&id))
            .cloned();
        // An initialize response is valid in the version it answers with.
        let version = match (method.as_deref(), value.pointer("/result/protocolVersion")) {
            (Some("initialize"), Some(v)) if v == 1 => Version::V1,
            (Some("initialize"), Some(v)) if v == 2 => Version::V2,
            _ => self.version,
        };
        schema::check_agent_line(version, &value, method.as_deref());
        self.engine.apply_agent_line(&line);
        self.log.push(value.clone());
        Some(value)
    }

    pub async fn recv(&mut self) -> Value {
        self.try_recv().await.expect("agent closed its output")
    }

    /// Reads until a response to `id` arrives; returns (response, lines before it).
    pub async fn response_to(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let msg = self.recv().await;
            if msg["id"] == json!(id) && msg.get("method").is_none() {
                return (msg, before);
            }
            before.push(msg);
        }
    }

    /// Sends a request and reads until its response; returns (response,
    /// lines before it).
    pub async fn call(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.request(method, params).await;
        self.response_to(id).await
    }

    /// The params of a `session/new` in `/tmp` (v1 also needs `mcpServers`).
    pub fn new_session_params(&self) -> Value {
        let mut params = json!({"cwd": "/tmp"});
        if self.version == Version::V1 {
            params["mcpServers"] = json!([]);
        }
        params
    }

    pub async fn initialize(&mut self, version: u64, extensions: &[&str]) -> Value {
        let mut params = json!({"protocolVersion": version});
        if version >= 2 {
            params["info"] = json!({"name": "spindle-tests", "version": "0.0.0"});
        } else {
            params["clientCapabilities"] =
                json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false});
        }
        if !extensions.is_empty() {
            params["_meta"] = json!({"spindle": {"extensions": extensions}});
        }
        self.initialize_with(params).await
    }

    pub async fn initialize_with(&mut self, params: Value) -> Value {
        let asked = params["protocolVersion"].as_u64().unwrap_or(1);
        // Validate the response against the version we asked for; the
        // negotiated version is known once it arrives.
        self.version = if asked >= 2 { Version::V2 } else { Version::V1 };
        let (resp, _) = self.call("initialize", params).await;
        let negotiated = resp["result"]["protocolVersion"].as_u64().unwrap();
        self.version = if negotiated == 2 {
            Version::V2
        } else {
            Version::V1
        };
        resp["result"].clone()
    }

    /// Creates a session; returns its id and the updates sent with it.
    pub async fn new_session(&mut self) -> (String, Vec<Value>) {
        let (resp, _) = self.call("session/new", self.new_session_params()).await;
        let sid = resp["result"]["sessionId"].as_str().unwrap().to_owned();
        // The session-start updates follow the response immediately; the
        // last one is the commands list (v1) or the greeting (v2).
        let expected = if self.version == Version::V2 { 2 } else { 1 };
        let mut updates = Vec::new();
        for _ in 0..expected {
            let msg = self.recv().await;
            updates.push(msg["params"]["update"].clone());
        }
        (sid, updates)
    }

    /// A v1 or v2 session ready for prompts.
    pub async fn ready(version: u64, extensions: &[&str]) -> (Peer, String) {
        let mut peer = Peer::fast();
        peer.initialize(version, extensions).await;
        let (sid, _) = peer.new_session().await;
        (peer, sid)
    }

    pub async fn send_prompt(&mut self, sid: &str, text: &str) -> u64 {
        self.request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    /// Sends a prompt and reads until its turn ends.
    pub async fn prompt(&mut self, sid: &str, text: &str) -> TurnResult {
        let id = self.send_prompt(sid, text).await;
        self.finish_turn(id).await
    }

    /// Reads the turn started by prompt `id` until it ends (v1: the prompt
    /// response; v2: `idle` with a stop reason), answering permission
    /// requests per `self.permission`.
    pub async fn finish_turn(&mut self, id: u64) -> TurnResult {
        let mut lines = Vec::new();
        let mut updates = Vec::new();
        let mut user_message_id = None;
        loop {
            let msg = self.recv().await;
            lines.push(msg.clone());
            if msg["method"] == "session/request_permission" {
                self.permission_requests.push(msg.clone());
                self.answer_permission(&msg).await;
                continue;
            }
            if msg["id"] == json!(id) && msg.get("method").is_none() {
                match self.version {
                    Version::V1 => {
                        // A JSON-RPC error ends a v1 turn as failed.
                        let stop = match msg["result"]["stopReason"].as_str() {
                            Some(stop) => stop.to_owned(),
                            None if msg.get("error").is_some() => "error".to_owned(),
                            None => panic!("prompt response without stopReason: {msg}"),
                        };
                        return TurnResult {
                            lines,
                            updates,
                            stop_reason: stop,
                            user_message_id,
                        };
                    }
                    Version::V2 => {
                        user_message_id = msg["result"]["messageId"].as_str().map(str::to_owned);
                        continue;
                    }
                }
            }
            if msg["method"] == "session/update" {
                let update = msg["params"]["update"].clone();
                let idle_stop = (update["sessionUpdate"] == "state_update"
                    && update["state"] == "idle")
                    .then(|| update["stopReason"].as_str().map(str::to_owned))
                    .flatten();
                updates.push(update);
                if self.version == Version::V2
                    && let Some(stop) = idle_stop
                {
                    return TurnResult {
                        lines,
                        updates,
                        stop_reason: stop,
                        user_message_id,
                    };
                }
            }
        }
    }

    pub async fn answer_permission(&mut self, request: &Value) {
        let outcome = match self.permission {
            PermissionAnswer::Allow => json!({"outcome": "selected", "optionId": "allow"}),
            PermissionAnswer::Reject => json!({"outcome": "selected", "optionId": "reject"}),
            PermissionAnswer::Cancelled => json!({"outcome": "cancelled"}),
            PermissionAnswer::Hold => return,
        };
        let msg = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": outcome}});
        self.send(&msg).await;
    }

    /// Closes the client's output and waits for the agent's exit code.
    pub async fn shutdown(mut self) -> i32 {
        self.writer.shutdown().await.unwrap();
        while self.try_recv().await.is_some() {}
        self.exit_code().await
    }

    /// Waits for the agent task to end (after it exited by itself).
    pub async fn exit_code(&mut self) -> i32 {
        let task = self.task.take().expect("agent task");
        tokio::time::timeout(SILENCE_LIMIT, task)
            .await
            .expect("agent did not exit")
            .expect("agent task panicked")
            .expect("agent I/O error")
    }
}

/// Both versions, for tests that run the same scenario under each.
pub const VERSIONS: [u64; 2] = [1, 2];
