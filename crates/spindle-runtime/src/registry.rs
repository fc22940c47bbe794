//! The registry of web sessions: [`SessionManager`] rebuilds every stored session at start and
//! creates new ones; [`LiveSession`] is one session as the HTTP handlers see it, a handle on the
//! session's [`SessionCore`] and on the task that drives its agent (`task.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use spindle_engine::{EngineConfig, TranscriptEngine};
use tokio::sync::{mpsc, oneshot};

use crate::acp_feed::HistoryPolicy;
use crate::core::{Banner, SessionCore};
use crate::error::SessionError;
use crate::feed::{EngineFeed, session_cwd_note};
use crate::handshake::{AgentSettings, OpenMode};
use crate::hub::{EventId, Frame, Hub, HubLimits};
use crate::page_ops::PageOp;
use crate::replica::Replica;
use crate::store::{Direction, Store, StoredReply};
use crate::sync::lock;
use crate::task::{CheckpointRequest, Command, SessionTask, TaskStart, ValueReply};
use spindle_store::LogChange;

mod edit;
mod lifecycle;
mod listing;
mod prompts;
mod setup;
mod summary;

pub use summary::SessionSummary;

/// What `POST /api/sessions` may ask for.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// The working directory (inside the server's); the server's when `None`.
    pub cwd: Option<String>,
    /// An earlier agent session to open (from `GET /api/agent-sessions`).
    pub agent_session_id: Option<String>,
    /// How to open it: load (its history becomes the transcript) or resume.
    pub open: Option<OpenMode>,
    /// The id of the agent to run (one of the server's); the default agent when `None`.
    pub agent: Option<String>,
    /// The names of the configured MCP servers it gets (`None`: every one; `[]`: none).
    pub mcp_servers: Option<Vec<String>>,
    /// Absolute, existing directories the agent may use beside the working directory.
    pub additional_directories: Vec<String>,
}

/// The longest title [`SessionManager::rename`] takes, in characters.
pub const MAX_TITLE_CHARS: usize = 200;

/// All sessions of the server.
#[derive(Debug)]
pub struct SessionManager {
    store: Store,
    settings: Arc<AgentSettings>,
    generation: u64,
    limits: HubLimits,
    sessions: Mutex<BTreeMap<i64, Arc<LiveSession>>>,
    /// Held from a session's creation in the database until its task is started here, and
    /// while a session is rebuilt from the log: the follower, hearing of a session this
    /// replica is creating, then finds it started instead of starting it from the log.
    starting: Mutex<()>,
    /// This replica (its id, lease time, lease counters).
    pub replica: Arc<Replica>,
    /// Sessions deleted while this replica ran: never served again (the follower may hear of
    /// their last lines after the delete; ids are never given out twice).
    deleted: Mutex<std::collections::BTreeSet<i64>>,
    /// Whether a page may show the sessions: without one, live engines make no render ops.
    page: bool,
}

impl SessionManager {
    /// Opens the manager and rebuilds every stored session by replaying its wire log. Agents are
    /// not started until a session is used. Without a `page` ([`crate::RuntimeConfig::page`]),
    /// the sessions make no render ops.
    pub fn restore(
        store: Store,
        settings: AgentSettings,
        limits: HubLimits,
        replica: Arc<Replica>,
        page: bool,
    ) -> Result<SessionManager, crate::store::StoreError> {
        let generation = store.next_generation()?;
        let stored = store.sessions()?;
        let mut rebuilt = Vec::new();
        for session in &stored {
            let (engine, next_seq) = rebuild(&store, session.id)?;
            rebuilt.push((session.clone(), engine, next_seq));
        }
        let manager = SessionManager {
            store,
            settings: Arc::new(settings),
            generation,
            limits,
            sessions: Mutex::new(BTreeMap::new()),
            starting: Mutex::new(()),
            replica,
            deleted: Mutex::new(std::collections::BTreeSet::new()),
            page,
        };
        for (session, engine, next_seq) in rebuilt {
            manager.start_rebuilt(&session, engine, next_seq);
        }
        Ok(manager)
    }

    /// Starts the task of a session rebuilt from its log; `None` when this replica serves the
    /// session already (another caller rebuilt it first; `engine` is dropped).
    fn start_rebuilt(
        &self,
        session: &crate::store::StoredSession,
        engine: (TranscriptEngine, EngineFeed),
        next_seq: i64,
    ) -> Option<Arc<LiveSession>> {
        let manager = self;
        {
            let was_running = engine.0.transcript().state.turn_open;
            let root = engine
                .1
                .facts
                .cwd
                .as_ref()
                .map_or_else(|| manager.settings.cwd.clone(), PathBuf::from);
            let start = TaskStart {
                id: session.id,
                generation: manager.generation,
                agent_session_id: session.agent_session_id.clone(),
                open: OpenMode::Continue,
                root,
                agent: session.agent.clone(),
                setup: session.setup.clone(),
            };
            let live = manager.start_session(start, engine, next_seq)?;
            if was_running {
                let mut core = lock(&live.core);
                core.set_banner(Some(Banner {
                    lasting: false,
                    level: "warning",
                    text:
                        "The server restarted during this turn; the transcript is kept up to the \
                           last saved line. The next prompt starts the agent again."
                            .into(),
                }));
            }
            Some(live)
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Every session this replica serves now.
    pub fn live_sessions(&self) -> Vec<(i64, Arc<LiveSession>)> {
        lock(&self.sessions)
            .iter()
            .map(|(id, live)| (*id, live.clone()))
            .collect()
    }

    /// Follows a change another replica committed: a session this replica has not seen yet is
    /// rebuilt from the log; one it has gets the new lines through its engine, their ops
    /// published to its observers ([`SessionCore::follow`]). [`LogChange::RESYNC`] reads every
    /// session again. Blocking (database reads): called off the async threads.
    pub fn follow(&self, change: LogChange) -> Result<(), crate::store::StoreError> {
        if change == LogChange::RESYNC {
            // Deleted while this replica was not listening: served here before the read and not
            // in the database. Listed in that order: a session created after the read (it is in
            // the database before it is served) is not taken for a deleted one.
            let served_before: Vec<i64> =
                self.live_sessions().into_iter().map(|(id, _)| id).collect();
            let stored = self.store.sessions()?;
            let gone: Vec<i64> = served_before
                .into_iter()
                .filter(|id| !stored.iter().any(|s| s.id == *id))
                .collect();
            for id in gone {
                self.forget_deleted(id);
            }
            for stored in stored {
                if !self.is_deleted(stored.id) {
                    self.follow_one(&stored)?;
                }
            }
            self.sessions_changed();
            for (_, live) in self.live_sessions() {
                let _ = live.commands.blocking_send(Command::TakeForwarded);
            }
            return Ok(());
        }
        if self.is_deleted(change.session) {
            return Ok(());
        }
        if change.is_delete() {
            self.forget_deleted(change.session);
            self.sessions_changed();
            return Ok(());
        }
        if change.is_rename() {
            if let Some(live) = self.get_now(change.session) {
                let _ = live.commands.blocking_send(Command::Renamed);
            }
            self.sessions_changed();
            return Ok(());
        }
        if change.is_command() {
            // The session's task takes them if it runs the session here.
            if let Some(live) = self.get_now(change.session) {
                let _ = live.commands.blocking_send(Command::TakeForwarded);
            }
            return Ok(());
        }
        if let Some(live) = self.get_now(change.session) {
            // The owner's own lines are applied already: nothing is read.
            let mut core = lock(&live.core);
            if core.follow_to(change.seq)? > 0 {
                crate::task::show_followed_permissions(&mut core);
            }
            drop(core);
            live.tell_followed();
            return Ok(());
        }
        if let Some(session) = self.store.session(change.session)? {
            self.follow_one(&session)?;
        }
        Ok(())
    }

    fn follow_one(
        &self,
        session: &crate::store::StoredSession,
    ) -> Result<(), crate::store::StoreError> {
        self.serve_from_log(session).map(|_| ())
    }

    /// A session of the log, served here: rebuilt from the log and started when this replica
    /// does not serve it yet (created on another replica), else caught up with the log. The
    /// follower and a request may both get here first; the first task started stays, and the
    /// other caller catches it up (its notice is not lost). One rebuild at a time (see
    /// `starting`).
    fn serve_from_log(
        &self,
        session: &crate::store::StoredSession,
    ) -> Result<Arc<LiveSession>, crate::store::StoreError> {
        let starting = lock(&self.starting);
        let live = match self.get_now(session.id) {
            Some(live) => live,
            None => {
                let (engine, next_seq) = rebuild(&self.store, session.id)?;
                match self.start_rebuilt(session, engine, next_seq) {
                    Some(started) => return Ok(started),
                    None => self.get_now(session.id).ok_or_else(|| {
                        crate::store::StoreError::Read(format!("session {} vanished", session.id))
                    })?,
                }
            }
        };
        drop(starting);
        let mut core = lock(&live.core);
        if core.follow()? > 0 {
            crate::task::show_followed_permissions(&mut core);
        }
        drop(core);
        live.tell_followed();
        Ok(live)
    }

    /// Starts a session's task; `None` when the session has one already (checked and inserted
    /// under the sessions' lock, so a session never gets two).
    fn start_session(
        &self,
        start: TaskStart,
        engine: (TranscriptEngine, EngineFeed),
        next_seq: i64,
    ) -> Option<Arc<LiveSession>> {
        let mut sessions = lock(&self.sessions);
        if sessions.contains_key(&start.id) {
            return None;
        }
        let id = start.id;
        let cwd = start.root.clone();
        let (mut engine, feed) = engine;
        engine.set_render_ops(self.page);
        let core = SessionCore::new(
            id,
            (engine, feed),
            Hub::new(self.generation, self.limits),
            self.store.clone(),
            next_seq,
        );
        let core = Arc::new(Mutex::new(core));
        let (commands, receiver) = mpsc::channel(64);
        {
            let mut core = lock(&core);
            let protocol = u16::try_from(self.settings.protocol_version).unwrap_or(2);
            core.acp.set_protocol(protocol);
            let rules = core.session_facts().standing_json();
            if rules.as_array().is_some_and(|r| !r.is_empty()) {
                core.set_fact(PageOp::WebStandingPermissions { permissions: rules });
            }
            if !core.session_facts().queue.items().is_empty() {
                let op = core.session_facts().queue.page_op();
                core.set_fact(op);
            }
        }
        let awaits_log = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let live = Arc::new(LiveSession {
            core: core.clone(),
            commands,
            cwd,
            awaits_log: awaits_log.clone(),
        });
        let task = SessionTask::new(
            start,
            core,
            self.store.clone(),
            self.settings.clone(),
            self.replica.clone(),
            awaits_log,
        );
        tokio::spawn(task.run(receiver));
        sessions.insert(id, live.clone());
        Some(live)
    }

    /// A working directory asked for by the page: an existing directory inside the server's.
    fn session_cwd(&self, asked: &str) -> Result<PathBuf, SessionError> {
        let refuse = |why: &str| SessionError::invalid_params(format!("cwd {asked:?}: {why}"));
        let base = self
            .settings
            .cwd
            .canonicalize()
            .map_err(|e| refuse(&format!("the server's directory is unusable ({e})")))?;
        let joined = base.join(asked);
        let dir = joined
            .canonicalize()
            .map_err(|_| refuse("no such directory"))?;
        if !dir.is_dir() {
            return Err(refuse("not a directory"));
        }
        if !dir.starts_with(&base) {
            return Err(refuse(&format!(
                "outside the server's directory {}",
                base.display()
            )));
        }
        Ok(dir)
    }

    /// Creates a session and starts its agent.
    pub async fn create(&self, new: NewSession) -> Result<SessionSummary, SessionError> {
        let agent = self.settings.choose(new.agent.as_deref())?.recorded();
        let setup = spindle_store::SessionSetup {
            mcp_servers: self.settings.check_mcp_choice(new.mcp_servers.clone())?,
            additional_directories: crate::handshake::check_directories(
                &new.additional_directories,
            )?,
            parent: None,
        };
        let root = match &new.cwd {
            Some(cwd) => self.session_cwd(cwd)?,
            None => self.settings.cwd.clone(),
        };
        let open = match (&new.agent_session_id, new.open) {
            (Some(_), Some(open)) => open,
            (Some(_), None) => OpenMode::Load,
            (None, Some(_)) => {
                return Err(SessionError::invalid_params(
                    "\"open\" needs the \"agentSessionId\" of the session to open",
                ));
            }
            (None, None) => OpenMode::Continue,
        };
        let title = match &new.agent_session_id {
            Some(agent_session) => format!("Agent session {agent_session}"),
            None => String::new(),
        };
        self.start_new(
            &title,
            agent,
            setup,
            new.agent_session_id,
            open,
            new.cwd.is_some().then_some(root),
        )
        .await
    }

    /// Writes a new session and starts its task and agent; `own_cwd`: its directory when it
    /// is not the server's (logged, so that a restart gives the session the same one).
    async fn start_new(
        &self,
        title: &str,
        agent: spindle_store::SessionAgent,
        setup: spindle_store::SessionSetup,
        agent_session_id: Option<String>,
        open: OpenMode,
        own_cwd: Option<PathBuf>,
    ) -> Result<SessionSummary, SessionError> {
        let root = own_cwd.clone().unwrap_or_else(|| self.settings.cwd.clone());
        let starting = lock(&self.starting);
        let id = self
            .store
            .create_session_with(title, Some(&agent), &setup)
            .map_err(SessionError::storage)?;
        if let Some(agent_session) = &agent_session_id {
            // Listed with the agent session it opens from the start: the history the agent
            // replays is shown before the agent answers the load that names it again.
            self.store
                .set_agent_session_id(id, agent_session)
                .map_err(SessionError::storage)?;
        }
        let engine = TranscriptEngine::new(EngineConfig::default());
        let start = TaskStart {
            id,
            generation: self.generation,
            agent_session_id,
            open,
            root: root.clone(),
            agent: Some(agent),
            setup,
        };
        let live = self.start_session(start, (engine, EngineFeed::default()), 1);
        drop(starting);
        let live =
            live.ok_or_else(|| SessionError::Conflict(format!("session {id} exists already")))?;
        if own_cwd.is_some() {
            // Logged, so that a restart gives the session the same directory.
            lock(&live.core).record(vec![(
                Direction::Server,
                session_cwd_note(&root.display().to_string()),
            )]);
        }
        let _ = live.commands.send(Command::StartAgent).await;
        self.list()?
            .into_iter()
            .find(|s| s.id() == id)
            .ok_or_else(|| SessionError::Internal("session vanished".into()))
    }

    /// One page of the earlier sessions of the agent `agent` (the default one when `None`; see
    /// `history.rs`).
    pub async fn agent_sessions(
        &self,
        agent: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<Value, SessionError> {
        let choice = self.settings.choose(agent)?;
        let mut list = crate::history::list_agent_sessions(&self.settings, choice, cursor).await?;
        let stored = self
            .store
            .off_worker(|| self.store.sessions())
            .map_err(SessionError::storage)?;
        crate::history::with_spindle_titles(&mut list, &choice.id, &stored);
        Ok(list)
    }

    /// A live session by id. One the database holds and this replica does not serve yet (just
    /// created on another replica, listed here before the follower rebuilt it) is rebuilt from
    /// its log now: every listed session is served.
    pub async fn get(&self, id: i64) -> Result<Arc<LiveSession>, SessionError> {
        if let Some(live) = self.get_now(id) {
            return Ok(live);
        }
        let not_found = || SessionError::NotFound(format!("no session {id}"));
        if self.is_deleted(id) {
            return Err(not_found());
        }
        self.store.off_worker(|| {
            let stored = self.store.session(id).map_err(SessionError::storage)?;
            let stored = stored.ok_or_else(not_found)?;
            self.serve_from_log(&stored).map_err(SessionError::storage)
        })
    }

    /// A live session by id, if there is one.
    pub fn get_now(&self, id: i64) -> Option<Arc<LiveSession>> {
        lock(&self.sessions).get(&id).cloned()
    }

    /// Whether `cwd` names a directory a session may use (inside the server's).
    pub fn is_usable_cwd(&self, cwd: &str) -> bool {
        self.session_cwd(cwd).is_ok()
    }

    /// The server's working directory (sessions without their own).
    pub fn default_cwd(&self) -> &Path {
        &self.settings.cwd
    }

    /// The protocol version the agents are asked for.
    pub fn protocol_version(&self) -> u16 {
        u16::try_from(self.settings.protocol_version).unwrap_or(2)
    }

    /// The persisted replies of a session (no thoughts).
    pub fn replies(&self, id: i64) -> Result<Vec<StoredReply>, SessionError> {
        self.store.replies(id).map_err(SessionError::storage)
    }

    /// Stops every agent (used at shutdown so that children do not outlive the server). The
    /// sessions stop side by side: each may wait a little for its agent to close its session
    /// (`task/lifecycle.rs`), and those waits do not add up.
    pub async fn shutdown(&self) {
        let sessions: Vec<_> = lock(&self.sessions).values().cloned().collect();
        let mut stopping = Vec::new();
        for session in sessions {
            {
                let mut core = lock(&session.core);
                core.close_observers();
            }
            let (reply, done) = oneshot::channel();
            if session.commands.send(Command::Stop(reply)).await.is_ok() {
                stopping.push(done);
            }
        }
        for done in stopping {
            let _ = done.await;
        }
    }
}

/// A session's engine rebuilt by replaying its log, and the seq of its next line.
fn rebuild(
    store: &Store,
    session: i64,
) -> Result<((TranscriptEngine, EngineFeed), i64), crate::store::StoreError> {
    let (lines, skipped) = store.lines(session)?;
    if skipped > 0 {
        tracing::warn!(session, skipped, "log rows with unknown direction skipped");
    }
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    // No page sees the replay (a page is sent a snapshot when it subscribes): no render ops.
    engine.set_render_ops(false);
    let mut feed = EngineFeed::default();
    for line in &lines {
        feed.apply(&mut engine, line.direction, &line.line);
    }
    let next_seq = lines.last().map_or(1, |l| l.seq + 1);
    Ok(((engine, feed), next_seq))
}

/// One session as the HTTP handlers see it.
#[derive(Debug)]
pub struct LiveSession {
    core: Arc<Mutex<SessionCore>>,
    commands: mpsc::Sender<Command>,
    /// The session's working directory.
    cwd: PathBuf,
    /// Set while the task waits for lines logged elsewhere (answers to `/acp` prompts it
    /// forwarded to the replica that runs the session).
    awaits_log: Arc<std::sync::atomic::AtomicBool>,
}

impl LiveSession {
    /// Attaches an SSE observer.
    pub fn subscribe(&self, last_seen: Option<EventId>) -> mpsc::Receiver<Frame> {
        lock(&self.core).subscribe(last_seen)
    }

    /// Sends a command (on behalf of the acting user, if any) and waits for its answer.
    pub(super) async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, SessionError>>) -> Command,
    ) -> Result<T, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(crate::acting::authored(make(reply)))
            .await
            .map_err(|_| SessionError::Gone)?;
        answer.await.map_err(|_| SessionError::Gone)?
    }

    async fn call(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<(), SessionError>>) -> Command,
    ) -> Result<(), SessionError> {
        self.ask(make).await
    }

    async fn call_value(
        &self,
        make: impl FnOnce(ValueReply) -> Command,
    ) -> Result<Value, SessionError> {
        self.ask(make).await
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Subscribes an `/acp` client stream to this session (see `SessionCore::acp_subscribe`).
    pub fn acp_subscribe(
        &self,
        last_seen: Option<EventId>,
        policy: HistoryPolicy,
        version: u16,
    ) -> crate::acp_feed::Subscription {
        lock(&self.core).acp_subscribe(last_seen, policy, version)
    }

    /// Where an `/acp` client of protocol `version` attaching now starts (see
    /// `SessionCore::acp_attach_point`).
    pub fn acp_attach_point(
        &self,
        policy: HistoryPolicy,
        version: u16,
    ) -> (Option<String>, EventId) {
        lock(&self.core).acp_attach_point(policy, version)
    }

    /// The id of the last message of this session's `/acp` fan-out.
    pub fn acp_last_id(&self) -> EventId {
        lock(&self.core).acp.hub.last_id()
    }

    /// Tells the task that lines logged elsewhere were applied, when it waits for some.
    /// Blocking: called by the follower, off the async threads.
    fn tell_followed(&self) {
        if self.awaits_log.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = self.commands.blocking_send(Command::Followed);
        }
    }

    /// Whether the session's log, as this replica has applied it, ends inside a turn.
    pub fn turn_open(&self) -> bool {
        lock(&self.core).engine.transcript().state.turn_open
    }

    /// Asks the session's task to take the session over (see [`crate::replica::takeover`]);
    /// `expired` is the lease its last owner let expire.
    pub async fn take_over(&self, expired: Option<spindle_store::Lease>) {
        let _ = self.commands.send(Command::TakeOver(expired)).await;
    }

    /// Answers a session-scoped request of an `/acp` client on its session stream.
    pub fn acp_respond(&self, connection: &str, id: &Value, result: Result<Value, Value>) {
        lock(&self.core).acp.respond(connection, id, result);
    }

    /// Accepts or rejects a pending file write, named by any of `keys`.
    pub async fn review(&self, keys: Vec<String>, accept: bool) -> Result<(), SessionError> {
        self.call(|reply| Command::Review {
            keys,
            accept,
            reply,
        })
        .await
    }

    /// Forgets a standing permission rule.
    pub async fn forget_permission(&self, key: String) -> Result<(), SessionError> {
        self.call(|reply| Command::ForgetPermission { key, reply })
            .await
    }

    /// `authenticate` with one of the agent's methods; answered when the agent answers.
    pub async fn authenticate(&self, method_id: String) -> Result<Value, SessionError> {
        self.call_value(|reply| Command::Authenticate { method_id, reply })
            .await
    }

    /// `session/set_mode`.
    pub async fn set_mode(&self, mode_id: String) -> Result<Value, SessionError> {
        self.call_value(|reply| Command::SetMode { mode_id, reply })
            .await
    }

    /// `session/set_config_option`.
    pub async fn set_config(&self, config_id: String, value: Value) -> Result<Value, SessionError> {
        self.call_value(|reply| Command::SetConfig {
            config_id,
            value,
            reply,
        })
        .await
    }

    /// What the agent offers and how the session is set up.
    pub async fn agent_info(&self) -> Result<Value, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::AgentInfo(reply))
            .await
            .map_err(|_| SessionError::Gone)?;
        answer.await.map_err(|_| SessionError::Gone)
    }

    /// The session's checkpoints: the list, the diff from now to one, or a restore (the
    /// shapes: `task/checkpoint.rs` and `docs/src/api.md`).
    pub async fn checkpoints(&self, request: CheckpointRequest) -> Result<Value, SessionError> {
        self.call_value(|reply| Command::Checkpoints { request, reply })
            .await
    }

    /// Cancels the running turn and answers open permission questions with `cancelled`.
    pub async fn cancel(&self) -> Result<(), SessionError> {
        self.call(Command::Cancel).await
    }

    /// Answers a permission question; `None` answers `cancelled`.
    pub async fn answer_permission(
        &self,
        key: &str,
        option_id: Option<String>,
    ) -> Result<(), SessionError> {
        let key = key.to_string();
        self.call(|reply| Command::Permission {
            key,
            option_id,
            reply,
        })
        .await
    }

    /// Answers an elicitation: `accept` (with `content` for a form, checked against the form),
    /// `decline` or `cancel`.
    pub async fn answer_elicitation(
        &self,
        key: &str,
        action: &str,
        content: Option<Value>,
    ) -> Result<(), SessionError> {
        let key = key.to_string();
        let action = action.to_string();
        self.call(|reply| Command::Elicitation {
            key,
            action,
            content,
            reply,
        })
        .await
    }

    /// The engine's transcript as replay JSON.
    pub fn transcript_json(&self) -> String {
        // Written entry by entry (same bytes as `replay_json().to_string()`).
        lock(&self.core).settled_engine().replay_json_text()
    }

    /// The page's reset snapshot as of now, with the id of the last batch it includes, as the JSON
    /// of `GET /api/sessions/{id}/snapshot`: `{"event": "G-N", "ops": [...]}`.
    pub fn snapshot(&self) -> String {
        let (id, ops) = lock(&self.core).snapshot_now();
        // `ops` is `{"ops":[...]}`: the event id goes in front of its fields.
        format!("{{\"event\":\"{id}\",{}", &ops[1..])
    }

    /// Up to `limit` entries before the index `before` (default: the end), as the JSON of
    /// `GET /api/sessions/{id}/entries`.
    pub fn entries_page(&self, before: Option<usize>, limit: usize) -> String {
        lock(&self.core).entries_page(before, limit)
    }

    /// What the entries `ids` hold, for the page's markdown.
    pub fn message_sources(&self, ids: &[String]) -> Vec<spindle_engine::MessageSource> {
        lock(&self.core).settled_engine().message_sources(ids)
    }

    /// Where the wire inspector reads this session's log (see [`crate::wire_view`]).
    pub fn wire(&self) -> crate::wire_view::WireSource {
        lock(&self.core).wire_source()
    }

    /// Counters for tests and the benchmark.
    pub fn stats(&self) -> Value {
        lock(&self.core).stats()
    }
}
