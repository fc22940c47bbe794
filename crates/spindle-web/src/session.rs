//! Web sessions: the registry, and one task per session that drives its agent.
//!
//! Each web session owns one agent child process (started on creation, or on the first prompt
//! after a server restart), speaks ACP to it through [`AgentLink`], and records every line both
//! ways through [`SessionCore::record`]. The task reads one closed enum of inputs: commands from
//! HTTP handlers and events from the agent.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use spindle_engine::{EngineConfig, TranscriptEngine};
use spindle_wire::extensions::Extensions;
use tokio::sync::{mpsc, oneshot};

use crate::agent_link::{AgentLink, LinkEvent};
use crate::core::{Banner, SessionCore, lock};
use crate::feed::{EngineFeed, agent_exited_note};
use crate::hub::{EventId, Frame, Hub, HubLimits};
use crate::store::{Direction, Store, StoredReply};

/// An error answered to an HTTP client.
#[derive(Debug, Clone)]
pub struct WebError {
    /// HTTP status.
    pub status: StatusCode,
    /// Plain-text message, shown in the page.
    pub message: String,
}

impl WebError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> WebError {
        WebError {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> WebError {
        WebError::new(StatusCode::BAD_REQUEST, message)
    }

    fn storage(error: crate::store::StoreError) -> WebError {
        WebError::new(StatusCode::SERVICE_UNAVAILABLE, error.to_string())
    }

    fn gone() -> WebError {
        WebError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the session task stopped; restart the server",
        )
    }
}

/// How sessions start their agents.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    /// The agent command line, fixed at server start.
    pub command: Vec<OsString>,
    /// The ACP protocol version to request in `initialize` (1 or 2; the agent may answer lower).
    pub protocol_version: u64,
    /// Working directory sent in `session/new`.
    pub cwd: PathBuf,
    /// How long the agent may take to answer `initialize` and open its session before the
    /// waiting prompts fail and the agent is stopped.
    pub startup_timeout: std::time::Duration,
}

/// A session as listed by `GET /api/sessions`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    id: i64,
    title: String,
    agent_session_id: Option<String>,
    created_at: i64,
    updated_at: i64,
}

/// All sessions of the server.
#[derive(Debug)]
pub struct SessionManager {
    store: Arc<Mutex<Store>>,
    settings: Arc<AgentSettings>,
    generation: u64,
    limits: HubLimits,
    sessions: Mutex<BTreeMap<i64, Arc<LiveSession>>>,
}

impl SessionManager {
    /// Opens the manager and rebuilds every stored session by replaying its wire log. Agents are
    /// not started until a session is used.
    pub fn restore(
        mut store: Store,
        settings: AgentSettings,
        limits: HubLimits,
    ) -> Result<SessionManager, crate::store::StoreError> {
        let generation = store.next_generation()?;
        let stored = store.sessions()?;
        let mut rebuilt = Vec::new();
        for session in &stored {
            let (lines, skipped) = store.lines(session.id)?;
            if skipped > 0 {
                tracing::warn!(
                    session = session.id,
                    skipped,
                    "log rows with unknown direction skipped"
                );
            }
            let mut engine = TranscriptEngine::new(EngineConfig::default());
            let mut feed = EngineFeed::default();
            for line in &lines {
                feed.apply(&mut engine, line.direction, &line.line);
            }
            let next_seq = lines.last().map_or(1, |l| l.seq + 1);
            rebuilt.push((session.clone(), (engine, feed), next_seq));
        }
        let manager = SessionManager {
            store: Arc::new(Mutex::new(store)),
            settings: Arc::new(settings),
            generation,
            limits,
            sessions: Mutex::new(BTreeMap::new()),
        };
        for (session, engine, next_seq) in rebuilt {
            let was_running = engine.0.transcript().state.turn_open;
            let live =
                manager.start_session(session.id, engine, next_seq, session.agent_session_id);
            if was_running {
                let mut core = lock(&live.core);
                core.set_banner(Some(Banner {
                    level: "warning",
                    text:
                        "The server restarted during this turn; the transcript is kept up to the \
                           last saved line. The next prompt starts the agent again."
                            .into(),
                }));
            }
        }
        Ok(manager)
    }

    fn start_session(
        &self,
        id: i64,
        engine: (TranscriptEngine, EngineFeed),
        next_seq: i64,
        agent_session_id: Option<String>,
    ) -> Arc<LiveSession> {
        let core = SessionCore::new(
            id,
            engine,
            Hub::new(self.generation, self.limits),
            self.store.clone(),
            next_seq,
        );
        let core = Arc::new(Mutex::new(core));
        let (commands, receiver) = mpsc::channel(64);
        let live = Arc::new(LiveSession {
            core: core.clone(),
            commands,
        });
        let actor = SessionTask {
            id,
            core,
            store: self.store.clone(),
            settings: self.settings.clone(),
            generation: self.generation,
            link: None,
            phase: Phase::NoAgent,
            protocol: 1,
            previous_agent_session: agent_session_id,
            agent_session: None,
            can_resume: false,
            can_load: false,
            pending: HashMap::new(),
            queued: VecDeque::new(),
            v1_turn_running: false,
            agent_requests: HashMap::new(),
            counter: 0,
            titled: false,
            startup_deadline: None,
        };
        tokio::spawn(actor.run(receiver));
        lock(&self.sessions).insert(id, live.clone());
        live
    }

    /// Every session, oldest first.
    pub fn list(&self) -> Result<Vec<SessionSummary>, WebError> {
        let stored = lock(&self.store).sessions().map_err(WebError::storage)?;
        Ok(stored
            .into_iter()
            .map(|s| SessionSummary {
                id: s.id,
                title: s.title,
                agent_session_id: s.agent_session_id,
                created_at: s.created_at,
                updated_at: s.updated_at,
            })
            .collect())
    }

    /// Creates a session and starts its agent.
    pub async fn create(&self) -> Result<SessionSummary, WebError> {
        let id = lock(&self.store)
            .create_session("")
            .map_err(WebError::storage)?;
        let engine = TranscriptEngine::new(EngineConfig::default());
        let live = self.start_session(id, (engine, EngineFeed::default()), 1, None);
        let _ = live.commands.send(Command::StartAgent).await;
        self.list()?
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| WebError::new(StatusCode::INTERNAL_SERVER_ERROR, "session vanished"))
    }

    /// A live session by id.
    pub async fn get(&self, id: i64) -> Result<Arc<LiveSession>, WebError> {
        lock(&self.sessions)
            .get(&id)
            .cloned()
            .ok_or_else(|| WebError::new(StatusCode::NOT_FOUND, format!("no session {id}")))
    }

    /// The persisted replies of a session (no thoughts).
    pub fn replies(&self, id: i64) -> Result<Vec<StoredReply>, WebError> {
        lock(&self.store).replies(id).map_err(WebError::storage)
    }

    /// Stops every agent (used at shutdown so that children do not outlive the server).
    pub async fn shutdown(&self) {
        let sessions: Vec<_> = lock(&self.sessions).values().cloned().collect();
        for session in sessions {
            lock(&session.core).hub.close_all();
            let (reply, done) = oneshot::channel();
            if session.commands.send(Command::Stop(reply)).await.is_ok() {
                let _ = done.await;
            }
        }
    }
}

/// One session as the HTTP handlers see it.
#[derive(Debug)]
pub struct LiveSession {
    core: Arc<Mutex<SessionCore>>,
    commands: mpsc::Sender<Command>,
}

impl LiveSession {
    /// Attaches an SSE observer.
    pub fn subscribe(&self, last_seen: Option<EventId>) -> mpsc::Receiver<Frame> {
        lock(&self.core).subscribe(last_seen)
    }

    async fn call(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<(), WebError>>) -> Command,
    ) -> Result<(), WebError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(make(reply))
            .await
            .map_err(|_| WebError::gone())?;
        answer.await.map_err(|_| WebError::gone())?
    }

    /// Sends a prompt (starting the agent first if needed). Returns once it was written.
    pub async fn prompt(&self, text: String) -> Result<(), WebError> {
        self.call(|reply| Command::Prompt { text, reply }).await
    }

    /// Cancels the running turn and answers open permission questions with `cancelled`.
    pub async fn cancel(&self) -> Result<(), WebError> {
        self.call(Command::Cancel).await
    }

    /// Answers a permission question; `None` answers `cancelled`.
    pub async fn answer_permission(
        &self,
        key: &str,
        option_id: Option<String>,
    ) -> Result<(), WebError> {
        let key = key.to_string();
        self.call(|reply| Command::Permission {
            key,
            option_id,
            reply,
        })
        .await
    }

    /// The engine's transcript as replay JSON.
    pub fn transcript_json(&self) -> String {
        // Written entry by entry (same bytes as `replay_json().to_string()`).
        lock(&self.core).engine.replay_json_text()
    }

    /// Counters for tests and the benchmark.
    pub fn stats(&self) -> Value {
        lock(&self.core).stats()
    }
}

#[derive(Debug)]
enum Command {
    StartAgent,
    Prompt {
        text: String,
        reply: oneshot::Sender<Result<(), WebError>>,
    },
    Cancel(oneshot::Sender<Result<(), WebError>>),
    Permission {
        key: String,
        option_id: Option<String>,
        reply: oneshot::Sender<Result<(), WebError>>,
    },
    Stop(oneshot::Sender<()>),
}

/// Everything the session task reacts to.
#[derive(Debug)]
enum Input {
    Command(Command),
    Agent(Vec<LinkEvent>),
    /// The agent did not finish `initialize` + opening the session in time.
    StartupTimeout,
    /// Time to try writing the unsaved backlog again.
    RetryStorage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    NoAgent,
    Initializing,
    Opening,
    Ready,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Initialize,
    NewSession,
    Resume,
    Load,
    Prompt,
}

/// The fields of a JSON-RPC message the task needs; the engine reads the rest.
#[derive(Debug, Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// The most agent lines recorded in one transaction / one SSE batch.
const MAX_BATCH: usize = 256;

struct SessionTask {
    id: i64,
    core: Arc<Mutex<SessionCore>>,
    store: Arc<Mutex<Store>>,
    settings: Arc<AgentSettings>,
    generation: u64,
    link: Option<AgentLink>,
    phase: Phase,
    protocol: u64,
    previous_agent_session: Option<String>,
    agent_session: Option<String>,
    can_resume: bool,
    can_load: bool,
    /// Requests this task sent, by JSON id text.
    pending: HashMap<String, Pending>,
    /// Prompts waiting for the agent to be ready.
    queued: VecDeque<(String, oneshot::Sender<Result<(), WebError>>)>,
    v1_turn_running: bool,
    /// Open agent requests (permission questions) by key: the raw JSON id.
    agent_requests: HashMap<String, Box<RawValue>>,
    counter: u64,
    titled: bool,
    startup_deadline: Option<tokio::time::Instant>,
}

async fn startup_timer(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// How often a session with unsaved lines tries to write them again.
const STORAGE_RETRY: std::time::Duration = std::time::Duration::from_millis(500);

async fn storage_retry_timer(backlog: bool) {
    if backlog {
        tokio::time::sleep(STORAGE_RETRY).await;
    } else {
        std::future::pending::<()>().await;
    }
}

impl SessionTask {
    async fn run(mut self, mut commands: mpsc::Receiver<Command>) {
        loop {
            let (backlog, paused) = {
                let core = lock(&self.core);
                (core.has_backlog(), core.backlog_full())
            };
            let input = match &mut self.link {
                Some(link) => tokio::select! {
                    command = commands.recv() => match command {
                        Some(c) => Input::Command(c),
                        None => break,
                    },
                    () = startup_timer(self.startup_deadline) => Input::StartupTimeout,
                    () = storage_retry_timer(backlog) => Input::RetryStorage,
                    // A full backlog pauses the agent's output: its pipe fills and it blocks.
                    event = link.events.recv(), if !paused => match event {
                        None => Input::Agent(vec![LinkEvent::Closed("the agent link closed".into())]),
                        Some(first) => {
                            let mut batch = vec![first];
                            while batch.len() < MAX_BATCH {
                                match link.events.try_recv() {
                                    Ok(event) => batch.push(event),
                                    Err(_) => break,
                                }
                            }
                            Input::Agent(batch)
                        }
                    }
                },
                None => tokio::select! {
                    command = commands.recv() => match command {
                        Some(c) => Input::Command(c),
                        None => break,
                    },
                    () = storage_retry_timer(backlog) => Input::RetryStorage,
                },
            };
            match input {
                Input::Command(Command::Stop(done)) => {
                    self.stop_agent().await;
                    let _ = done.send(());
                    break;
                }
                Input::Command(command) => self.command(command),
                Input::Agent(events) => self.agent_events(events).await,
                Input::RetryStorage => lock(&self.core).retry_unsaved(),
                Input::StartupTimeout => {
                    let timeout = self.settings.startup_timeout;
                    self.startup_failed(&format!(
                        "the agent did not answer initialize and open a session within {timeout:?}",
                    ));
                }
            }
        }
        self.stop_agent().await;
    }

    fn next_id(&mut self) -> String {
        self.counter += 1;
        // Unique across server runs (the generation changes at every start), so the engine
        // never mistakes a response for one of an earlier run's requests during replay.
        format!("\"w{}-{}\"", self.generation, self.counter)
    }

    /// Records and writes one line to the agent.
    fn send_line(&mut self, line: String) -> bool {
        lock(&self.core).record(vec![(Direction::Client, line.clone())]);
        self.link.as_ref().is_some_and(|link| link.send(line))
    }

    fn request(&mut self, method: &str, params: Value, kind: Pending) -> bool {
        let id = self.next_id();
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":{},\"params\":{}}}",
            Value::from(method),
            params
        );
        self.pending.insert(id, kind);
        self.send_line(line)
    }

    fn banner(&self, level: &'static str, text: impl Into<String>) {
        lock(&self.core).set_banner(Some(Banner {
            level,
            text: text.into(),
        }));
    }

    fn start_agent(&mut self) {
        if self.link.is_some() {
            return;
        }
        match AgentLink::spawn(&self.settings.command, 1024) {
            Ok(link) => self.link = Some(link),
            Err(error) => {
                let text = format!("Cannot start the agent: {error}");
                self.banner("error", text.clone());
                self.fail_queued(&text);
                return;
            }
        }
        self.phase = Phase::Initializing;
        self.startup_deadline = Some(tokio::time::Instant::now() + self.settings.startup_timeout);
        let params = json!({
            "protocolVersion": self.settings.protocol_version,
            // v1 field names, and their v2 forms: the agent answers with the version it speaks
            // and reads the fields of that version.
            "clientCapabilities": {
                "fs": { "readTextFile": false, "writeTextFile": false },
                "terminal": false,
                "session": { "compaction": {}, "notices": {} },
            },
            "clientInfo": { "name": "spindle-web", "version": env!("CARGO_PKG_VERSION") },
            "capabilities": { "session": { "notices": {} } },
            "info": { "name": "spindle-web", "version": env!("CARGO_PKG_VERSION") },
            "_meta": Extensions::all().to_meta(),
        });
        self.request("initialize", params, Pending::Initialize);
    }

    fn open_session(&mut self) {
        self.phase = Phase::Opening;
        let cwd = self.settings.cwd.display().to_string();
        match self.previous_agent_session.clone() {
            Some(previous) if self.can_resume => {
                let params = json!({ "sessionId": previous, "cwd": cwd, "mcpServers": [] });
                self.request("session/resume", params, Pending::Resume);
            }
            Some(previous) if self.can_load => {
                let params = json!({ "sessionId": previous, "cwd": cwd, "mcpServers": [] });
                self.request("session/load", params, Pending::Load);
            }
            Some(_) => {
                self.banner(
                    "warning",
                    "This agent cannot resume or load sessions: a new agent session was started. \
                     The transcript above is kept, but the agent does not remember it.",
                );
                self.new_session();
            }
            None => self.new_session(),
        }
    }

    fn new_session(&mut self) {
        let params = json!({ "cwd": self.settings.cwd.display().to_string(), "mcpServers": [] });
        self.request("session/new", params, Pending::NewSession);
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::StartAgent => self.start_agent(),
            Command::Prompt { text, reply } => {
                if lock(&self.core).backlog_full() {
                    let _ = reply.send(Err(storage_full()));
                    return;
                }
                // The version is known once `initialize` is answered; until then prompts wait
                // in the queue and `flush_queued` applies the v1 rule to them.
                if self.phase == Phase::Ready && self.protocol < 2 && self.v1_turn_running {
                    let _ = reply.send(Err(v1_busy()));
                    return;
                }
                self.queued.push_back((text, reply));
                match self.phase {
                    Phase::Ready => self.flush_queued(),
                    Phase::NoAgent => self.start_agent(),
                    Phase::Initializing | Phase::Opening => {}
                }
            }
            Command::Cancel(reply) => {
                let open = lock(&self.core).open_permission_keys();
                for key in open {
                    self.answer_permission_raw(&key, None);
                }
                if let (Some(session), Phase::Ready) = (self.agent_session.clone(), self.phase) {
                    let line = json!({
                        "jsonrpc": "2.0", "method": "session/cancel",
                        "params": { "sessionId": session },
                    })
                    .to_string();
                    self.send_line(line);
                }
                self.fail_queued("cancelled before the agent was ready");
                let _ = reply.send(Ok(()));
            }
            Command::Permission {
                key,
                option_id,
                reply,
            } => {
                let result = self.answer_permission(&key, option_id);
                let _ = reply.send(result);
            }
            Command::Stop(done) => {
                let _ = done.send(());
            }
        }
    }

    fn answer_permission(&mut self, key: &str, option_id: Option<String>) -> Result<(), WebError> {
        let offered = {
            let core = lock(&self.core);
            let Some(op) = core.permission(key) else {
                return Err(WebError::new(
                    StatusCode::CONFLICT,
                    "this permission question is no longer open",
                ));
            };
            op.get("options")
                .and_then(Value::as_array)
                .map(|options| {
                    options
                        .iter()
                        .filter_map(|o| o.get("optionId").and_then(Value::as_str))
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        if let Some(option) = &option_id
            && !offered.iter().any(|o| o == option)
        {
            return Err(WebError::bad_request("that option was not offered"));
        }
        self.answer_permission_raw(key, option_id);
        Ok(())
    }

    fn answer_permission_raw(&mut self, key: &str, option_id: Option<String>) {
        let Some(id) = self.agent_requests.remove(key) else {
            lock(&self.core).close_permission(key, "closed");
            return;
        };
        let outcome = match &option_id {
            Some(option) => json!({ "outcome": "selected", "optionId": option }),
            None => json!({ "outcome": "cancelled" }),
        };
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{}}}",
            id.get(),
            json!({ "outcome": outcome })
        );
        self.send_line(line);
        let label = option_id.unwrap_or_else(|| "cancelled".into());
        lock(&self.core).close_permission(key, &label);
    }

    fn flush_queued(&mut self) {
        while let Some((text, reply)) = self.queued.pop_front() {
            if lock(&self.core).backlog_full() {
                let _ = reply.send(Err(storage_full()));
                continue;
            }
            if self.protocol < 2 && self.v1_turn_running {
                let _ = reply.send(Err(v1_busy()));
                continue;
            }
            let Some(session) = self.agent_session.clone() else {
                let _ = reply.send(Err(WebError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "no agent session",
                )));
                continue;
            };
            if !self.titled {
                self.titled = true;
                let title: String = text.chars().take(60).collect();
                let _ = lock(&self.store).set_title(self.id, title.trim());
            }
            let params = json!({
                "sessionId": session,
                "prompt": [ { "type": "text", "text": text } ],
            });
            let sent = self.request("session/prompt", params, Pending::Prompt);
            if self.protocol < 2 {
                self.v1_turn_running = sent;
            }
            let _ = reply.send(if sent {
                Ok(())
            } else {
                Err(WebError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the agent is gone",
                ))
            });
        }
    }

    fn fail_queued(&mut self, why: &str) {
        for (_, reply) in self.queued.drain(..) {
            let _ = reply.send(Err(WebError::new(StatusCode::SERVICE_UNAVAILABLE, why)));
        }
    }

    async fn agent_events(&mut self, events: Vec<LinkEvent>) {
        let mut lines = Vec::new();
        let mut closed = None;
        // Held until the batch is processed, so the link's byte budget covers it.
        let mut shares = Vec::new();
        for event in events {
            match event {
                LinkEvent::Line(line, share) => {
                    shares.push(share);
                    let direction = if self.is_load_replay(&line) {
                        Direction::AgentReplay
                    } else {
                        Direction::Agent
                    };
                    lines.push((direction, line));
                }
                LinkEvent::Dropped(why) => {
                    tracing::warn!(session = self.id, "{why}");
                    self.banner("warning", format!("Agent output dropped: {why}"));
                }
                LinkEvent::Closed(why) => closed = Some(why),
            }
        }
        // Durability first: the batch is committed before anything reacts to it.
        lock(&self.core).record(lines.clone());
        for (_, line) in &lines {
            self.react(line);
        }
        drop(shares);
        if let Some(why) = closed {
            self.agent_gone(&why).await;
        }
    }

    fn is_load_replay(&self, line: &str) -> bool {
        self.pending.values().any(|p| *p == Pending::Load)
            && serde_json::from_str::<Probe<'_>>(line)
                .is_ok_and(|p| p.method.as_deref() == Some("session/update"))
    }

    /// The task's own bookkeeping for one agent line (the engine already applied it).
    fn react(&mut self, line: &str) {
        let Ok(probe) = serde_json::from_str::<Probe<'_>>(line) else {
            return;
        };
        match (&probe.method, probe.id) {
            (Some(method), Some(id)) => self.agent_request(method, id, probe.params),
            (None, Some(id)) => {
                let Some(kind) = self.pending.remove(id.get()) else {
                    return;
                };
                let result: Result<Value, Value> = match (probe.result, probe.error) {
                    (_, Some(error)) => {
                        Err(serde_json::from_str(error.get()).unwrap_or(Value::Null))
                    }
                    (Some(result), None) => {
                        Ok(serde_json::from_str(result.get()).unwrap_or(Value::Null))
                    }
                    (None, None) => Err(json!({ "message": "response without result" })),
                };
                self.response(kind, result);
            }
            _ => {}
        }
    }

    fn response(&mut self, kind: Pending, result: Result<Value, Value>) {
        match (kind, result) {
            (Pending::Initialize, Ok(result)) => {
                self.protocol = result
                    .get("protocolVersion")
                    .and_then(Value::as_u64)
                    .unwrap_or(1);
                if self.protocol >= 2 {
                    // v2: `session/resume` is baseline when the `session` capability is present.
                    self.can_resume = result.pointer("/capabilities/session").is_some();
                    self.can_load = false;
                } else {
                    let caps = result.get("agentCapabilities");
                    self.can_load = caps
                        .and_then(|c| c.get("loadSession"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    self.can_resume = caps
                        .and_then(|c| c.pointer("/sessionCapabilities/resume"))
                        .is_some_and(Value::is_object);
                }
                self.open_session();
            }
            (Pending::NewSession, Ok(result)) => {
                match result.get("sessionId").and_then(Value::as_str) {
                    Some(session) => self.session_opened(session.to_string()),
                    None => self.startup_failed("session/new answered without a sessionId"),
                }
            }
            (Pending::Resume | Pending::Load, Ok(_)) => {
                if let Some(previous) = self.previous_agent_session.clone() {
                    self.session_opened(previous);
                }
            }
            (Pending::Resume | Pending::Load, Err(error)) => {
                self.banner(
                    "warning",
                    format!(
                        "The agent could not continue its earlier session ({}); a new agent \
                         session was started. The transcript above is kept, but the agent does \
                         not remember it.",
                        error_message(&error)
                    ),
                );
                self.new_session();
            }
            (Pending::Initialize | Pending::NewSession, Err(error)) => {
                self.startup_failed(&format!(
                    "the agent refused to start: {}",
                    error_message(&error)
                ));
            }
            (Pending::Prompt, outcome) => {
                if self.protocol < 2 {
                    self.v1_turn_running = false;
                }
                if let Err(error) = outcome {
                    self.banner(
                        "error",
                        format!("The agent rejected the prompt: {}", error_message(&error)),
                    );
                }
            }
        }
    }

    fn session_opened(&mut self, session: String) {
        if let Err(error) = lock(&self.store).set_agent_session_id(self.id, &session) {
            self.banner("error", error.to_string());
        }
        self.previous_agent_session = Some(session.clone());
        self.agent_session = Some(session);
        self.phase = Phase::Ready;
        self.startup_deadline = None;
        self.flush_queued();
    }

    fn startup_failed(&mut self, why: &str) {
        self.startup_deadline = None;
        self.banner("error", why.to_string());
        self.fail_queued(why);
        self.pending.clear();
        // Dropping the link kills the child; the next prompt tries again.
        self.link = None;
        self.phase = Phase::NoAgent;
    }

    fn agent_request(&mut self, method: &str, id: &RawValue, params: Option<&RawValue>) {
        let params: Value = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        if method == "session/request_permission" {
            let key = id.get().to_string();
            let title = params
                .get("title")
                .and_then(Value::as_str)
                .or_else(|| params.pointer("/toolCall/title").and_then(Value::as_str))
                .unwrap_or("The agent asks for permission")
                .to_string();
            let options = params.get("options").cloned().unwrap_or(json!([]));
            let tool_call_id = params
                .pointer("/toolCall/toolCallId")
                .or_else(|| params.pointer("/subject/toolCall/toolCallId"))
                .cloned()
                .unwrap_or(Value::Null);
            self.agent_requests.insert(key.clone(), id.to_owned());
            let op = json!({
                "op": "web_permission", "key": key, "title": title,
                "options": options, "toolCallId": tool_call_id,
            });
            lock(&self.core).open_permission(key, op);
            return;
        }
        // Files and terminals stay on the server's side of the trust boundary: not offered in
        // `initialize`, refused if asked anyway.
        let line = json!({
            "jsonrpc": "2.0",
            "id": serde_json::from_str::<Value>(id.get()).unwrap_or(Value::Null),
            "error": { "code": -32601, "message": format!("{method} is not supported by spindle serve") },
        })
        .to_string();
        self.send_line(line);
    }

    async fn agent_gone(&mut self, why: &str) {
        let status = match self.link.as_mut() {
            Some(link) => Some(link.exit_report().await),
            None => None,
        };
        self.link = None;
        self.phase = Phase::NoAgent;
        self.startup_deadline = None;
        self.v1_turn_running = false;
        self.pending.clear();
        self.agent_session = None;
        let keys: Vec<String> = self.agent_requests.drain().map(|(k, _)| k).collect();
        let exit = format!(
            "{why}{}",
            status.map(|s| format!(", {s}")).unwrap_or_default()
        );
        let mut core = lock(&self.core);
        for key in keys {
            core.close_permission(&key, "agent exited");
        }
        // Logged, so that a rebuild ends the interrupted turn at the same place (F1).
        let note = agent_exited_note(&format!(
            "The agent exited ({exit}) before this turn finished."
        ));
        core.record(vec![(Direction::Server, note)]);
        core.save_now();
        core.set_banner(Some(Banner {
            level: "warning",
            text: format!("The agent exited ({exit}). The next prompt starts it again."),
        }));
        drop(core);
        self.fail_queued("the agent exited");
    }

    async fn stop_agent(&mut self) {
        if let Some(mut link) = self.link.take() {
            link.kill().await;
        }
        lock(&self.core).save_now();
    }
}

fn storage_full() -> WebError {
    WebError::new(
        StatusCode::INSUFFICIENT_STORAGE,
        "the database does not accept writes and as many lines as the server keeps in memory \
         wait for it: prompts are refused until storage recovers",
    )
}

fn v1_busy() -> WebError {
    WebError::new(
        StatusCode::CONFLICT,
        "a turn is running and this agent speaks ACP v1 (one prompt at a time): wait for it to \
         end or cancel it",
    )
}

fn error_message(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string())
}
