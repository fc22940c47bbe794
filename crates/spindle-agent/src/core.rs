//! The sans-I/O agent: JSON lines in, JSON lines out, no clock of its own.
//!
//! The driver feeds client lines with [`AgentCore::handle_line`], asks the
//! core to make progress with [`AgentCore::advance`] (passing the current
//! time in milliseconds since start), and writes whatever
//! [`AgentCore::output`] holds. `advance` says what to wait for next.
//!
//! This module holds the state and the JSON-RPC dispatch; the methods live
//! by concern in `handshake` (initialize, session/new), `turns` (prompt,
//! end, fail, cancel, permission answers), `runner` (executing programs) and
//! `session_methods` (modes, config, list, resume, close). The core asks the
//! scenarios for programs through a [`TurnCtx`](crate::turn_context::TurnCtx);
//! the scenarios never see the core.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::program::{PermissionStep, Step};
use crate::script::Script;
use crate::turn_context::{Connection, SessionState};
use crate::wire::{self, ProtocolChoice, Version, codes};

mod handshake;
mod runner;
mod session_methods;
mod turns;

/// Output budget for one `advance` call: big streams yield to the driver so it
/// can write and look at incoming lines (a cancel) in between.
const OUTPUT_BUDGET: usize = 256 * 1024;

/// Agent settings.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Which protocol versions to accept.
    pub protocol: ProtocolChoice,
    /// Pause between streamed pieces, in milliseconds (0 = no pauses).
    pub delay_ms: u64,
    /// Context window size reported in `usage_update`.
    pub context_size: u64,
    /// A JSONL script to play instead of the built-in scenarios.
    pub script: Option<Arc<Script>>,
    /// Honour the script's `sleep_ms` lines (tests switch them off).
    pub script_sleeps: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            protocol: ProtocolChoice::Auto,
            delay_ms: 0,
            context_size: 200_000,
            script: None,
            script_sleeps: true,
        }
    }
}

/// What the driver should do after [`AgentCore::advance`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Output is waiting or more work is runnable: write, then call `advance` again.
    Ready,
    /// Nothing runnable before this time (ms since start) unless a line arrives.
    WakeAt(u64),
    /// Nothing to do until the client sends a line.
    WaitForInput,
    /// Stop: write the remaining output and exit with this code.
    Exit(i32),
}

#[derive(Debug, Default)]
struct Runner {
    steps: VecDeque<Step>,
    wake_at: Option<u64>,
}

#[derive(Debug)]
enum Waiting {
    Nothing,
    Permission {
        request_id: u64,
        step: Box<PermissionStep>,
    },
    Stall,
}

#[derive(Debug)]
struct Turn {
    /// v1: the prompt request, answered when the turn ends. v2: `None`, the
    /// prompt was answered on acceptance.
    prompt_id: Option<Value>,
    runner: Runner,
    waiting: Waiting,
    /// Tool calls reported but not finished; cancelled if the turn is.
    open_tools: Vec<String>,
}

#[derive(Debug)]
struct Session {
    id: String,
    cwd: String,
    state: SessionState,
    turn: Option<Turn>,
    /// Work that continues after a turn ended (v2: while idle).
    background: Runner,
    /// Prompts received while a turn ran: run, in order, after it.
    queued: VecDeque<(Value, Vec<Value>)>,
}

/// The reference agent's state machine.
#[derive(Debug)]
pub struct AgentCore {
    config: AgentConfig,
    conn: Option<Connection>,
    sessions: Vec<Session>,
    out: Vec<u8>,
    next_request_id: u64,
    /// Our outstanding requests to the client: request id -> session index.
    pending: HashMap<u64, usize>,
    exit: Option<i32>,
    eof: bool,
    /// While handling a JSON-RPC batch: the responses, sent as one array.
    batch: Option<Vec<Value>>,
}

impl AgentCore {
    /// A fresh agent waiting for `initialize`.
    pub fn new(config: AgentConfig) -> Self {
        AgentCore {
            config,
            conn: None,
            sessions: Vec::new(),
            out: Vec::with_capacity(OUTPUT_BUDGET + 4096),
            next_request_id: 0,
            pending: HashMap::new(),
            exit: None,
            eof: false,
            batch: None,
        }
    }

    /// The negotiated version, once `initialize` was answered.
    pub fn version(&self) -> Option<Version> {
        self.conn.map(|c| c.version)
    }

    /// Bytes waiting to be written: zero or more complete `\n`-terminated lines.
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// Forgets the output after the driver wrote it.
    pub fn clear_output(&mut self) {
        self.out.clear();
    }

    /// Takes the pending output.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// The client closed its side: finish what can finish, then exit.
    pub fn handle_eof(&mut self) {
        self.eof = true;
    }

    /// Handles one line from the client (without its newline).
    pub fn handle_line(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                let msg = format!("parse error: {e}");
                self.send_error(&Value::Null, codes::PARSE_ERROR, &msg);
                return;
            }
        };
        match value {
            Value::Array(items) if items.is_empty() => {
                self.send_error(&Value::Null, codes::INVALID_REQUEST, "empty batch");
            }
            Value::Array(items) => {
                let mark = self.out.len();
                self.batch = Some(Vec::new());
                for item in items {
                    self.handle_message(item);
                }
                let responses = self.batch.take().unwrap_or_default();
                if !responses.is_empty() {
                    // JSON-RPC: the batch's responses travel together, ahead of
                    // the notifications the batch caused.
                    let mut line = Vec::new();
                    wire::push_line(&mut line, &Value::Array(responses));
                    self.out.splice(mark..mark, line);
                }
            }
            other => self.handle_message(other),
        }
    }

    /// A line that exceeded the driver's maximum line size.
    pub fn handle_oversized_line(&mut self, len: usize) {
        let msg = format!("line of {len} bytes exceeds the maximum line size");
        self.send_error(&Value::Null, codes::INVALID_REQUEST, &msg);
    }

    /// A line that could not be decoded as text.
    pub fn handle_unreadable_line(&mut self, reason: &str) {
        self.send_error(&Value::Null, codes::PARSE_ERROR, reason);
    }

    fn handle_message(&mut self, msg: Value) {
        let Value::Object(obj) = &msg else {
            self.send_error(&Value::Null, codes::INVALID_REQUEST, "not a JSON object");
            return;
        };
        let id = obj.get("id").cloned();
        let method = obj.get("method").and_then(Value::as_str);
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            let id = id.unwrap_or(Value::Null);
            self.send_error(&id, codes::INVALID_REQUEST, "jsonrpc must be \"2.0\"");
            return;
        }
        match (method, id) {
            (Some(method), Some(id)) => {
                let params = obj.get("params").cloned().unwrap_or(Value::Null);
                self.handle_request(id, method, params);
            }
            (Some(method), None) => {
                let params = obj.get("params").cloned().unwrap_or(Value::Null);
                self.handle_notification(method, &params);
            }
            (None, Some(id)) if obj.contains_key("result") || obj.contains_key("error") => {
                self.handle_response(&id, obj.get("result"), obj.get("error"));
            }
            (None, id) => {
                let id = id.unwrap_or(Value::Null);
                self.send_error(&id, codes::INVALID_REQUEST, "missing method");
            }
        }
    }

    fn handle_request(&mut self, id: Value, method: &str, params: Value) {
        if method == "initialize" {
            self.initialize(&id, &params);
            return;
        }
        if self.conn.is_none() {
            self.send_error(&id, codes::NOT_INITIALIZED, "send initialize first");
            return;
        }
        match method {
            "session/new" => self.new_session(&id, &params),
            "session/prompt" => self.prompt(id, &params),
            "session/close" => self.close_session(&id, &params),
            "session/set_mode" if self.conn().version == Version::V1 => {
                self.set_mode(&id, &params);
            }
            "session/set_config_option" => self.set_config_option(&id, &params),
            "session/list" if self.conn().version == Version::V2 => self.list_sessions(&id),
            "session/resume" if self.conn().version == Version::V2 => {
                self.resume_session(&id, &params);
            }
            "authenticate" => self.send_response(&id, json!({})),
            _ => {
                let msg = format!("method not found: {method}");
                self.send_error(&id, codes::METHOD_NOT_FOUND, &msg);
            }
        }
    }

    fn handle_notification(&mut self, method: &str, params: &Value) {
        if method == "session/cancel"
            && let Some(s) = self.session_index(params)
        {
            self.cancel_turn(s);
        }
        // Other notifications (`$/cancel_request`, unknown extensions) need no
        // answer; the agent never has a request of the client's in flight for
        // long enough to cancel it.
    }

    fn conn(&self) -> Connection {
        // Every caller runs after the `initialize` check in `handle_request`.
        self.conn.expect("initialized")
    }

    fn session_index(&self, params: &Value) -> Option<usize> {
        let sid = params.get("sessionId").and_then(Value::as_str)?;
        self.sessions.iter().position(|s| s.id == sid)
    }

    fn lookup_session(&mut self, id: &Value, params: &Value) -> Option<usize> {
        let found = self.session_index(params);
        if found.is_none() {
            self.send_error(id, codes::INVALID_PARAMS, "unknown or missing sessionId");
        }
        found
    }

    fn send_update(&mut self, session_id: &str, update: Value) {
        wire::push_line(&mut self.out, &wire::session_update(session_id, update));
    }

    fn send_response(&mut self, id: &Value, result: Value) {
        self.send(wire::response(id, result));
    }

    fn send_error(&mut self, id: &Value, code: i64, message: &str) {
        self.send(wire::error_response(id, code, message));
    }

    fn send(&mut self, message: Value) {
        match &mut self.batch {
            Some(responses) => responses.push(message),
            None => wire::push_line(&mut self.out, &message),
        }
    }
}
