//! The sans-I/O agent: JSON lines in, JSON lines out, no clock of its own.
//!
//! The driver feeds client lines with [`AgentCore::handle_line`], asks the
//! core to make progress with [`AgentCore::advance`] (passing the current
//! time in milliseconds since start), and writes whatever
//! [`AgentCore::output`] holds. `advance` says what to wait for next.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::program::{PermissionStep, Step};
use crate::scenarios::{self, SessionState, TurnCtx};
use crate::script::Script;
use crate::updates;
use crate::wire::{self, ProtocolChoice, Version, codes};
use spindle_wire::extensions::Extensions;
use spindle_wire::meta::META_KEY;
use spindle_wire::tags::{self, MessageKind};

mod session_methods;

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

/// Facts fixed by `initialize`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Connection {
    pub version: Version,
    pub ext: Extensions,
    /// v1 clients must advertise `session.compaction` to get compaction updates.
    pub compaction: bool,
    /// v1 clients must advertise `session.notices` to get `notice` updates.
    pub notices: bool,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Turn,
    Background,
}

enum RunOutcome {
    /// The runner is blocked (waiting for input) or empty.
    Idle,
    WakeAt(u64),
    Yield,
    Exit(i32),
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

    fn initialize(&mut self, id: &Value, params: &Value) {
        if self.conn.is_some() {
            self.send_error(id, codes::INVALID_REQUEST, "already initialized");
            return;
        }
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_u64) else {
            self.send_error(
                id,
                codes::INVALID_PARAMS,
                "initialize needs an integer protocolVersion",
            );
            return;
        };
        let version = self.config.protocol.negotiate(requested);
        let ext = Extensions::from_initialize(params);
        let compaction = params
            .pointer("/clientCapabilities/session/compaction")
            .is_some_and(Value::is_object);
        let notices = params
            .pointer("/clientCapabilities/session/notices")
            .is_some_and(Value::is_object);
        self.conn = Some(Connection {
            version,
            ext,
            compaction,
            notices,
        });
        let meta = ext.to_meta();
        let info = json!({
            "name": "spindle-agent",
            "title": "Spindle reference agent",
            "version": env!("CARGO_PKG_VERSION"),
        });
        let result = match version {
            Version::V1 => json!({
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": false,
                    "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                    "sessionCapabilities": {"close": {}},
                },
                "authMethods": [],
                "agentInfo": info,
                META_KEY: meta,
            }),
            Version::V2 => json!({
                "protocolVersion": 2,
                "info": info,
                "capabilities": {
                    "session": {"prompt": {"embeddedContext": {}}},
                },
                "authMethods": [],
                META_KEY: meta,
            }),
        };
        self.send_response(id, result);
    }

    fn conn(&self) -> Connection {
        // Every caller runs after the `initialize` check in `handle_request`.
        self.conn.expect("initialized")
    }

    fn new_session(&mut self, id: &Value, params: &Value) {
        if !params.is_object() {
            self.send_error(id, codes::INVALID_PARAMS, "session/new needs params");
            return;
        }
        let conn = self.conn();
        let session_id = format!("sess_{}", self.sessions.len() + 1);
        let cwd = params
            .get("cwd")
            .and_then(Value::as_str)
            .filter(|c| c.starts_with('/'))
            .unwrap_or("/")
            .to_owned();
        let mut result = json!({
            "sessionId": session_id,
            "configOptions": scenarios::config_options(conn.version, "default"),
        });
        if conn.version == Version::V1 {
            result["modes"] = scenarios::modes_state("default");
        }
        self.send_response(id, result);
        let mut session = Session {
            id: session_id,
            cwd,
            state: SessionState::new(),
            turn: None,
            background: Runner::default(),
            queued: VecDeque::new(),
        };
        let mut ctx = TurnCtx {
            conn,
            state: &mut session.state,
            delay_ms: self.config.delay_ms,
            context_size: self.config.context_size,
        };
        let program = match &self.config.script {
            Some(script) => {
                script.opening(&mut session.state.script_pos, self.config.script_sleeps)
            }
            None => scenarios::session_start(&mut ctx),
        };
        session.background.steps.extend(program.steps);
        self.sessions.push(session);
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

    fn prompt(&mut self, id: Value, params: &Value) {
        let Some(s) = self.lookup_session(&id, params) else {
            return;
        };
        let Some(blocks) = params.get("prompt").and_then(Value::as_array) else {
            self.send_error(&id, codes::INVALID_PARAMS, "prompt must be an array");
            return;
        };
        let blocks = blocks.clone();
        if self.sessions[s].turn.is_some() {
            // Policy: a prompt that arrives while a turn runs is queued and
            // runs after it. v2: it is not inserted (no response, no
            // `user_message`) until then.
            self.sessions[s].queued.push_back((id, blocks));
            return;
        }
        self.start_turn(s, id, blocks);
    }

    fn start_turn(&mut self, s: usize, id: Value, blocks: Vec<Value>) {
        let conn = self.conn();
        let text = scenarios::prompt_text(&blocks);
        let session = &mut self.sessions[s];
        let prompt_id = match conn.version {
            Version::V1 => Some(id),
            Version::V2 => {
                let user_id = session.state.next_id("msg_u");
                let sid = session.id.clone();
                self.send_response(&id, json!({"messageId": user_id}));
                self.send_update(
                    &sid,
                    updates::whole_message(MessageKind::User, &user_id, &blocks),
                );
                self.send_update(&sid, updates::state("running", None));
                None
            }
        };
        let session = &mut self.sessions[s];
        let program = match self.config.script.as_ref().and_then(|script| {
            script.turn(&mut session.state.script_pos, self.config.script_sleeps)
        }) {
            Some(program) => program,
            None => {
                let mut ctx = TurnCtx {
                    conn,
                    state: &mut session.state,
                    delay_ms: self.config.delay_ms,
                    context_size: self.config.context_size,
                };
                scenarios::build_turn(&mut ctx, &session.id, &text)
            }
        };
        session.turn = Some(Turn {
            prompt_id,
            runner: Runner {
                steps: program.into_queue(),
                wake_at: None,
            },
            waiting: Waiting::Nothing,
            open_tools: Vec::new(),
        });
    }

    /// Ends the current turn, moving its remaining steps to background work.
    fn finish_turn(&mut self, s: usize, stop_reason: &str) {
        let conn = self.conn();
        let Some(mut turn) = self.sessions[s].turn.take() else {
            return;
        };
        let sid = self.sessions[s].id.clone();
        self.sessions[s]
            .background
            .steps
            .extend(turn.runner.steps.drain(..));
        match (conn.version, turn.prompt_id) {
            (Version::V1, Some(id)) => {
                self.send_response(&id, json!({"stopReason": stop_reason}));
            }
            _ => self.send_update(&sid, updates::state("idle", Some(stop_reason))),
        }
    }

    /// Ends the current turn as failed (see [`Step::Fail`]).
    fn fail_turn(&mut self, s: usize, message: &str) {
        let conn = self.conn();
        let Some(mut turn) = self.sessions[s].turn.take() else {
            return;
        };
        let sid = self.sessions[s].id.clone();
        self.sessions[s]
            .background
            .steps
            .extend(turn.runner.steps.drain(..));
        let error = json!({"code": codes::INTERNAL_ERROR, "message": message});
        match (conn.version, turn.prompt_id) {
            (Version::V1, Some(id)) => self.send_error(&id, codes::INTERNAL_ERROR, message),
            _ => {
                let mut idle = updates::state("idle", Some("error"));
                idle["error"] = error;
                self.send_update(&sid, idle);
            }
        }
    }

    fn cancel_turn(&mut self, s: usize) {
        let conn = self.conn();
        let sid = self.sessions[s].id.clone();
        let Some(turn) = self.sessions[s].turn.as_mut() else {
            return;
        };
        if let Waiting::Permission { request_id, .. } = turn.waiting {
            // A late answer to this request is ignored.
            self.pending.remove(&request_id);
        }
        turn.waiting = Waiting::Nothing;
        turn.runner.steps.clear();
        turn.runner.wake_at = None;
        let open = std::mem::take(&mut turn.open_tools);
        let status = updates::cancelled_tool_status(conn.version);
        for tool in open {
            self.send_update(&sid, updates::tool_call_status(&tool, status, None));
        }
        self.finish_turn(s, "cancelled");
        // Held prompts are dropped with the turn: they were never inserted.
        let queued = std::mem::take(&mut self.sessions[s].queued);
        for (id, _) in queued {
            match conn.version {
                Version::V1 => self.send_response(&id, json!({"stopReason": "cancelled"})),
                Version::V2 => self.send_error(
                    &id,
                    codes::REQUEST_CANCELLED,
                    "prompt dropped: the session was cancelled before it was inserted",
                ),
            }
        }
    }

    fn handle_response(&mut self, id: &Value, result: Option<&Value>, error: Option<&Value>) {
        let Some(request_id) = id.as_u64() else {
            return;
        };
        let Some(s) = self.pending.remove(&request_id) else {
            return;
        };
        let conn = self.conn();
        let sid = self.sessions[s].id.clone();
        let Some(turn) = self.sessions[s].turn.as_mut() else {
            return;
        };
        let step = match std::mem::replace(&mut turn.waiting, Waiting::Nothing) {
            Waiting::Permission {
                request_id: waited,
                step,
            } if waited == request_id => step,
            other => {
                turn.waiting = other;
                return;
            }
        };
        let outcome = result
            .and_then(|r| r.pointer("/outcome/outcome"))
            .and_then(Value::as_str);
        let option = result
            .and_then(|r| r.pointer("/outcome/optionId"))
            .and_then(Value::as_str);
        if error.is_none() && outcome == Some("cancelled") {
            // The client answers `cancelled` when it cancels the turn.
            turn.open_tools.retain(|t| *t != step.tool_call_id);
            let status = updates::cancelled_tool_status(conn.version);
            self.send_update(
                &sid,
                updates::tool_call_status(&step.tool_call_id, status, None),
            );
            self.cancel_turn(s);
            return;
        }
        let allowed = error.is_none() && outcome == Some("selected") && option == Some("allow");
        let branch = if allowed {
            step.on_allow
        } else {
            step.on_reject
        };
        for next in branch.into_iter().rev() {
            turn.runner.steps.push_front(next);
        }
        if conn.version == Version::V2 {
            self.send_update(&sid, updates::state("running", None));
        }
    }

    /// Runs every runnable step until output reaches the budget or all work
    /// is blocked; `now_ms` is the driver's clock.
    pub fn advance(&mut self, now_ms: u64) -> Next {
        if let Some(code) = self.exit {
            return Next::Exit(code);
        }
        let mut wake: Option<u64> = None;
        for s in 0..self.sessions.len() {
            for which in [Which::Turn, Which::Background] {
                match self.run(s, which, now_ms) {
                    RunOutcome::Idle => {}
                    RunOutcome::WakeAt(t) => wake = Some(wake.map_or(t, |w| w.min(t))),
                    RunOutcome::Yield => return Next::Ready,
                    RunOutcome::Exit(code) => {
                        self.exit = Some(code);
                        return Next::Exit(code);
                    }
                }
            }
        }
        if !self.out.is_empty() {
            return Next::Ready;
        }
        if let Some(t) = wake {
            return Next::WakeAt(t);
        }
        if self.eof {
            return Next::Exit(0);
        }
        Next::WaitForInput
    }

    fn runner_mut(sessions: &mut [Session], s: usize, which: Which) -> Option<&mut Runner> {
        let session = &mut sessions[s];
        match which {
            Which::Background => Some(&mut session.background),
            Which::Turn => match &mut session.turn {
                Some(turn) if matches!(turn.waiting, Waiting::Nothing) => Some(&mut turn.runner),
                _ => None,
            },
        }
    }

    fn run(&mut self, s: usize, which: Which, now_ms: u64) -> RunOutcome {
        loop {
            if self.out.len() >= OUTPUT_BUDGET {
                return RunOutcome::Yield;
            }
            let Some(runner) = Self::runner_mut(&mut self.sessions, s, which) else {
                return RunOutcome::Idle;
            };
            match runner.steps.front_mut() {
                None => return RunOutcome::Idle,
                Some(Step::Delay(ms)) => match runner.wake_at {
                    None if *ms > 0 => {
                        let t = now_ms + *ms;
                        runner.wake_at = Some(t);
                        return RunOutcome::WakeAt(t);
                    }
                    Some(t) if now_ms < t => return RunOutcome::WakeAt(t),
                    _ => {
                        runner.wake_at = None;
                        runner.steps.pop_front();
                        continue;
                    }
                },
                Some(Step::Stream(generator)) => {
                    let done = generator.write_until(&mut self.out, OUTPUT_BUDGET);
                    if done {
                        runner.steps.pop_front();
                    }
                    continue;
                }
                Some(_) => {}
            }
            let Some(step) = runner.steps.pop_front() else {
                return RunOutcome::Idle;
            };
            if let Some(code) = self.execute(s, which, step) {
                return RunOutcome::Exit(code);
            }
        }
    }

    /// Executes one step; returns an exit code when the step ends the process.
    fn execute(&mut self, s: usize, which: Which, step: Step) -> Option<i32> {
        let conn = self.conn();
        let sid = self.sessions[s].id.clone();
        match step {
            Step::Update(update) => {
                if which == Which::Turn {
                    self.track_tool(s, &update);
                }
                self.send_update(&sid, update);
            }
            Step::Raw(message) => wire::push_line(&mut self.out, &message),
            Step::End(reason) => match which {
                Which::Turn => {
                    self.finish_turn(s, &reason);
                    if let Some((id, blocks)) = self.sessions[s].queued.pop_front() {
                        self.start_turn(s, id, blocks);
                    }
                }
                // Agent-initiated work (scripts) ends with idle in v2; v1 has
                // no frame for it.
                Which::Background if conn.version == Version::V2 => {
                    self.send_update(&sid, updates::state("idle", Some(&reason)));
                }
                Which::Background => {}
            },
            Step::Fail(message) => {
                if which == Which::Turn {
                    self.fail_turn(s, &message);
                    if let Some((id, blocks)) = self.sessions[s].queued.pop_front() {
                        self.start_turn(s, id, blocks);
                    }
                }
            }
            Step::Exit(code) => return Some(code),
            Step::Stall => {
                if let Some(turn) = self.sessions[s].turn.as_mut()
                    && which == Which::Turn
                {
                    turn.waiting = Waiting::Stall;
                }
            }
            Step::Permission(step) => {
                if which != Which::Turn {
                    return None;
                }
                let request_id = self.next_request_id;
                self.next_request_id += 1;
                if conn.version == Version::V2 {
                    self.send_update(&sid, updates::state("requires_action", None));
                }
                let params = updates::permission_params(
                    conn.version,
                    &sid,
                    &step.tool_call_id,
                    &step.title,
                    &step.kind,
                );
                let request = json!({
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "session/request_permission",
                    "params": params,
                });
                wire::push_line(&mut self.out, &request);
                self.pending.insert(request_id, s);
                if let Some(turn) = self.sessions[s].turn.as_mut() {
                    turn.waiting = Waiting::Permission { request_id, step };
                }
            }
            Step::Delay(_) | Step::Stream(_) => {}
        }
        None
    }

    fn track_tool(&mut self, s: usize, update: &Value) {
        let Some(turn) = self.sessions[s].turn.as_mut() else {
            return;
        };
        let tag = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .and_then(tags::UpdateTag::parse);
        if !matches!(
            tag,
            Some(tags::UpdateTag::ToolCall | tags::UpdateTag::ToolCallUpdate)
        ) {
            return;
        }
        let (Some(id), Some(status)) = (
            update.get("toolCallId").and_then(Value::as_str),
            update.get("status").and_then(Value::as_str),
        ) else {
            return;
        };
        turn.open_tools.retain(|t| t != id);
        if matches!(status, "pending" | "in_progress") {
            turn.open_tools.push(id.to_owned());
        }
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
