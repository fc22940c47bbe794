//! The registry of web sessions: [`SessionManager`] rebuilds every stored session at start and
//! creates new ones; [`LiveSession`] is one session as the HTTP handlers see it, a handle on the
//! session's [`SessionCore`] and on the task that drives its agent (`task.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::Value;
use spindle_engine::{EngineConfig, TranscriptEngine};
use tokio::sync::{mpsc, oneshot};

use crate::core::{Banner, SessionCore, lock};
use crate::errors::WebError;
use crate::feed::EngineFeed;
use crate::handshake::AgentSettings;
use crate::hub::{EventId, Frame, Hub, HubLimits};
use crate::store::{Store, StoredReply};
use crate::task::{Command, SessionTask};

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
        let task = SessionTask::new(
            id,
            core,
            self.store.clone(),
            self.settings.clone(),
            self.generation,
            agent_session_id,
        );
        tokio::spawn(task.run(receiver));
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
