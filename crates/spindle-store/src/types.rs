//! The values both stores read and write, and their errors.

use std::time::{SystemTime, UNIX_EPOCH};

/// Which side wrote a logged line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// A line the agent wrote (its stdout).
    Agent,
    /// A line the client wrote to the agent (its stdin).
    Client,
    /// A line the agent wrote while replaying history for `session/load`. Logged for the record,
    /// never fed to the engine again (the engine already holds that history).
    AgentReplay,
    /// A note of the server itself, not a wire line: `{"spindle":"agent_exited",...}` when the
    /// agent process exits. Older servers skip these rows.
    Server,
    /// A line of the client's own services, not on the wire: a client terminal's output or exit,
    /// `{"local":{...}}`. Older servers skip these rows.
    Local,
}

impl Direction {
    /// The spelling stored in the `direction` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Agent => "agent",
            Direction::Client => "client",
            Direction::AgentReplay => "agent_replay",
            Direction::Server => "server",
            Direction::Local => "local",
        }
    }

    /// Reads a stored spelling; `None` for one this version does not know.
    pub fn parse(text: &str) -> Option<Direction> {
        match text {
            "agent" => Some(Direction::Agent),
            "client" => Some(Direction::Client),
            "agent_replay" => Some(Direction::AgentReplay),
            "server" => Some(Direction::Server),
            "local" => Some(Direction::Local),
            _ => None,
        }
    }
}

/// One row of the wire log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedLine {
    /// Position in the session's log, from 1, without gaps.
    pub seq: i64,
    /// Which side wrote it.
    pub direction: Direction,
    /// The raw JSON-RPC line, without its newline, exactly as written.
    pub line: String,
}

/// A web session as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredSession {
    /// The server's own id for the session (stable across restarts and agent sessions).
    pub id: i64,
    /// Display title.
    pub title: String,
    /// The ACP `sessionId` of the most recent agent session, if one was created.
    pub agent_session_id: Option<String>,
    /// The agent the session runs; `None` for a session created before schema version 6
    /// (the server's default agent runs it).
    pub agent: Option<SessionAgent>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Milliseconds since the Unix epoch of the last logged line.
    pub updated_at: i64,
}

/// The agent a session runs, as recorded: its id among the server's agents and the version it
/// ran when last started.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionAgent {
    /// The agent's id (`spindle`, an installed agent's registry id, or the id `serve` gave its
    /// `-- AGENT_CMD`).
    pub id: String,
    /// Its version (empty when unknown, e.g. a plain command).
    pub version: String,
}

/// Who runs a session and until when: a row of `session_leases`. A replica runs a session only
/// while it holds its lease; it renews it well before `expires_at`, and once the lease has
/// expired any replica may take it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Lease {
    /// The web session.
    pub session: i64,
    /// The replica id of the holder (`spindle serve --replica-id`).
    pub owner: String,
    /// Milliseconds since the Unix epoch, on the database's clock (PostgreSQL's for that store,
    /// so replicas with skewed clocks agree), after which the lease may be taken.
    pub expires_at: i64,
    /// Which claim this is: every claim that grants the lease gives it a new, higher number
    /// (renewals keep it), so a replica that held the session before and holds it again is told
    /// apart from itself, and commands taken under a lease that ended can be found.
    pub epoch: i64,
}

/// Where the leases stand, on the database's clock, for replicas looking for sessions to take
/// over ([`crate::Store::lease_survey`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LeaseSurvey {
    /// Leases still running: their holders run the sessions.
    pub live: Vec<Lease>,
    /// Leases whose time passed without a release: their holders stopped renewing them (died,
    /// or lost the database). A release deletes the row, so a clean hand-over is not here.
    pub expired: Vec<Lease>,
    /// Sessions with unfinished commands ([`crate::Store::submit_command`]) that no live lease
    /// answers for: not taken yet, or taken under a lease (owner and epoch) that is no longer
    /// live, so perhaps never logged.
    pub commands_waiting: Vec<i64>,
}

/// A command taken by the replica that runs its session ([`crate::Store::take_commands`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TakenCommand {
    /// The sender's unique id.
    pub id: String,
    /// What the sender queued (JSON).
    pub body: String,
    /// The replica that took it last.
    pub taken_by: String,
    /// The epoch of the lease it was taken under.
    pub epoch: i64,
    /// The session's last logged `seq` when it was taken: whatever the taker logged for it
    /// comes after.
    pub after_seq: i64,
}

/// A persisted final reply of one turn.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredReply {
    /// Turn number, from 1.
    pub turn: i64,
    /// The reply text: agent message text only, without thoughts, plan or intent content.
    pub text: String,
    /// The turn has ended.
    pub finished: bool,
    /// The stop reason, when reported.
    pub stop_reason: Option<String>,
}

/// Errors of a store. Each carries the database's own message; nothing is left half-written
/// because every write is one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be opened, reached or migrated (missing directory, permissions,
    /// not a database, read-only file, server unreachable, wrong credentials, a schema newer than
    /// this build).
    Open(String),
    /// A write failed (disk full, read-only database, connection lost, conflicting line). Nothing
    /// of it was committed.
    Write(String),
    /// A read failed.
    Read(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Open(message) => write!(f, "cannot open the database: {message}"),
            StoreError::Write(message) => write!(f, "cannot write to the database: {message}"),
            StoreError::Read(message) => write!(f, "cannot read the database: {message}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A display text as both stores keep it: PostgreSQL's `text` cannot hold U+0000, so both stores
/// write it as U+FFFD in titles, ids and replies (the wire log keeps every line byte for byte).
pub(crate) fn display_text(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// `first_seq + offset` for the `offset`-th line of a batch.
pub(crate) fn seq_at(first_seq: i64, offset: usize) -> i64 {
    first_seq.saturating_add(i64::try_from(offset).unwrap_or(i64::MAX))
}
