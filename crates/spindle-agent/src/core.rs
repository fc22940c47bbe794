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
//! `session_methods` (modes, config, list, resume, close), `lifecycle_methods`
//! (fork, delete). The core asks the
//! scenarios for programs through a [`TurnCtx`](crate::turn_context::TurnCtx);
//! the scenarios never see the core.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::history::{HistoryEntry, PersistedLine, StoredSession, TurnItem};
use crate::program::{ClientFlow, PermissionStep, Step};
use crate::script::Script;
use crate::turn_context::{Connection, SessionState};
use crate::wire::{self, ProtocolChoice, Version, codes};
use spindle_wire::client_methods::{
    AUTH_LOGIN, AUTH_LOGOUT, AUTHENTICATE, INITIALIZE, LOGOUT, SESSION_CANCEL, SESSION_CLOSE,
    SESSION_DELETE, SESSION_FORK, SESSION_LIST, SESSION_LOAD, SESSION_NEW, SESSION_PROMPT,
    SESSION_RESUME, SESSION_SET_CONFIG_OPTION, SESSION_SET_MODE,
};

mod handshake;
mod history_methods;
mod lifecycle_methods;
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
    /// Answer `session/new`, `session/load` and `session/resume` with the
    /// `auth_required` error (-32000) until the client authenticates with
    /// an advertised method (`--require-auth`).
    pub require_auth: bool,
    /// Sessions of earlier agent processes (`--state-dir`), listed by
    /// `session/list` and opened by `session/load` / `session/resume`.
    pub stored_sessions: Vec<StoredSession>,
    /// Keep every session's history in this directory (`--state-dir`), one
    /// `<sessionId>.jsonl` file each, and list/open the sessions found there.
    /// Only the driver touches the directory: the core hands it history
    /// records ([`AgentCore::take_persisted`]) and is given the stored
    /// sessions ([`AgentConfig::stored_sessions`]).
    pub state_dir: Option<std::path::PathBuf>,
    /// Wall-clock time (ms since the Unix epoch) at the driver's time 0, for
    /// `updatedAt`; `None`: no times are reported (deterministic output).
    pub clock_origin_unix_ms: Option<u64>,
    /// Session ids are `{prefix}{n}`; default `sess_`. Agents that share a
    /// state directory need a prefix unique to the process.
    pub session_id_prefix: Option<String>,
    /// Agent-owned ids (messages, tool calls, plans) are `{kind}{n}`
    /// (`msg_a3`), counted per session from 1; with a tag `{kind}{tag}{n}`.
    /// `--state-dir` sets a tag unique to the process: a session opened
    /// again by a later agent process must not reuse the ids of its earlier
    /// messages (a transcript merges updates of the same message id).
    pub owned_id_tag: Option<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            protocol: ProtocolChoice::Auto,
            delay_ms: 0,
            context_size: 200_000,
            script: None,
            script_sleeps: true,
            require_auth: false,
            stored_sessions: Vec::new(),
            state_dir: None,
            clock_origin_unix_ms: None,
            session_id_prefix: None,
            owned_id_tag: None,
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
    /// `Step::WaitForNextPrompt`: the next inserted prompt lifts it.
    NextPrompt,
    /// A client-method call (`fs/*`, `terminal/*`) of a flow.
    Client {
        request_id: u64,
        method: &'static str,
        flow: Box<dyn ClientFlow>,
    },
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
    /// The agent messages, tool calls and plan of the turn so far, in the
    /// order they appeared, for the session's history.
    items: Vec<TurnItem>,
}

#[derive(Debug)]
struct Session {
    id: String,
    cwd: String,
    state: SessionState,
    turn: Option<Turn>,
    /// Work that continues after a turn ended (v2: while idle).
    background: Runner,
    /// v1: prompts received while a turn ran, unanswered: each runs, in
    /// order, as its own turn after it.
    queued: VecDeque<(Value, Vec<Value>)>,
    /// v2: prompts inserted (answered, their `user_message` sent) while a
    /// turn ran: their work runs, in order, after the running prompt's, in
    /// the same foreground work (no `idle` between them).
    inserted: VecDeque<Vec<Value>>,
    /// The conversation, for load/resume replay.
    history: Vec<HistoryEntry>,
    /// The first prompt's start.
    title: Option<String>,
    /// Last activity (ISO 8601), when the agent has a wall clock.
    updated_at: Option<String>,
    /// Deleted (`session/delete`): kept in the list so the indices of
    /// outstanding requests stay valid, but found by no lookup.
    deleted: bool,
    /// Closed (`session/close`): its work was cancelled; prompts are
    /// refused until the client loads or resumes it again.
    closed: bool,
}

impl Session {
    fn new(id: String, cwd: String, owned_id_tag: Option<&str>) -> Session {
        let mut state = SessionState::new();
        if let Some(tag) = owned_id_tag {
            state.set_id_tag(tag);
        }
        Session {
            id,
            cwd,
            state,
            turn: None,
            background: Runner::default(),
            queued: VecDeque::new(),
            inserted: VecDeque::new(),
            history: Vec::new(),
            title: None,
            updated_at: None,
            deleted: false,
            closed: false,
        }
    }
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
    /// `terminal/create` requests of cancelled turns, by request id, with
    /// their session id: the terminal they create is killed and released.
    orphan_terminals: HashMap<u64, String>,
    exit: Option<i32>,
    eof: bool,
    /// While handling a JSON-RPC batch: the responses, sent as one array.
    batch: Option<Vec<Value>>,
    /// The client authenticated (or no authentication is required).
    authenticated: bool,
    /// Sessions of earlier processes not opened yet.
    stored: Vec<StoredSession>,
    /// History records for the driver to store.
    persisted: Vec<PersistedLine>,
    /// The driver's time at the last `advance`, ms since its start.
    now_ms: u64,
    /// Sessions created so far (for ids).
    created: u64,
    /// Sessions deleted whose state-directory file the driver removes.
    deleted: Vec<String>,
}

impl AgentCore {
    /// A fresh agent waiting for `initialize`.
    pub fn new(mut config: AgentConfig) -> Self {
        let stored = std::mem::take(&mut config.stored_sessions);
        AgentCore {
            authenticated: !config.require_auth,
            stored,
            persisted: Vec::new(),
            now_ms: 0,
            created: 0,
            deleted: Vec::new(),
            config,
            conn: None,
            sessions: Vec::new(),
            out: Vec::with_capacity(OUTPUT_BUDGET + 4096),
            next_request_id: 0,
            pending: HashMap::new(),
            orphan_terminals: HashMap::new(),
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

    /// History records to append to the sessions' files (only with
    /// [`AgentConfig::persist`]).
    pub fn take_persisted(&mut self) -> Vec<PersistedLine> {
        std::mem::take(&mut self.persisted)
    }

    /// Sessions deleted (`session/delete`) whose `<sessionId>.jsonl` the
    /// driver removes from the state directory (only with one).
    pub fn take_deleted(&mut self) -> Vec<String> {
        std::mem::take(&mut self.deleted)
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
        if method == INITIALIZE {
            self.initialize(&id, &params);
            return;
        }
        if self.conn.is_none() {
            self.send_error(&id, codes::NOT_INITIALIZED, "send initialize first");
            return;
        }
        let version = self.conn().version;
        match (method, version) {
            (SESSION_NEW, _) => self.new_session(&id, &params),
            (SESSION_PROMPT, _) => self.prompt(id, &params),
            (SESSION_CLOSE, _) => self.close_session(&id, &params),
            (SESSION_SET_MODE, Version::V1) => self.set_mode(&id, &params),
            (SESSION_SET_CONFIG_OPTION, _) => self.set_config_option(&id, &params),
            (SESSION_LIST, _) => self.list_sessions(&id, &params),
            (SESSION_LOAD, Version::V1) => self.load_session(&id, &params),
            (SESSION_RESUME, _) => self.resume_session(&id, &params),
            (SESSION_FORK, _) => self.fork_session(&id, &params),
            (SESSION_DELETE, _) => self.delete_session(&id, &params),
            (AUTHENTICATE, Version::V1) | (AUTH_LOGIN, Version::V2) => {
                self.authenticate(&id, &params);
            }
            (LOGOUT, Version::V1) | (AUTH_LOGOUT, Version::V2) => self.logout(&id),
            _ => {
                let msg = format!("method not found: {method}");
                self.send_error(&id, codes::METHOD_NOT_FOUND, &msg);
            }
        }
    }

    fn handle_notification(&mut self, method: &str, params: &Value) {
        if method == SESSION_CANCEL
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
        self.sessions.iter().position(|s| s.id == sid && !s.deleted)
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
