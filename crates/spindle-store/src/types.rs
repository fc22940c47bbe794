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
    /// When it was committed: milliseconds since the Unix epoch on the writing server's clock
    /// (the lines of one batch share it).
    pub at: i64,
    /// The raw JSON-RPC line, without its newline, exactly as written.
    pub line: String,
}

/// Which part of a session's log [`crate::Store::wire_page`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireWindow {
    /// The newest lines with a `seq` below this one (`i64::MAX`: the newest of the log).
    Before(i64),
    /// The oldest lines with a `seq` above this one (`0`: from the start).
    After(i64),
}

/// A bounded page of a session's log, oldest line first ([`crate::Store::wire_page`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WirePage {
    /// The lines, in `seq` order.
    pub lines: Vec<LoggedLine>,
    /// Rows of the page with an unknown direction (written by a newer version), left out.
    pub skipped: usize,
    /// Whether the log holds lines beyond the page in the window's direction: older ones for
    /// [`WireWindow::Before`], newer ones for [`WireWindow::After`].
    pub more: bool,
    /// Where the next page in the same direction starts: the lowest `seq` read for `Before`, the
    /// highest for `After` (skipped rows included); `None` when the page read no row.
    pub edge: Option<i64>,
}

/// A page's row as [`WirePage::from_rows`] takes it: seq, direction, at, line.
pub(crate) type PageRow = (i64, String, i64, String);

impl WirePage {
    /// The page of `limit` rows read in the window's order (newest first for `Before`), plus at
    /// most one more row that only tells whether there are more. `rows`: seq, direction, at,
    /// line.
    pub(crate) fn from_rows(
        window: WireWindow,
        limit: usize,
        rows: impl Iterator<Item = (i64, String, i64, String)>,
    ) -> WirePage {
        let mut page = WirePage::default();
        for (count, (seq, direction, at, line)) in rows.enumerate() {
            if count == limit {
                page.more = true;
                break;
            }
            page.edge = Some(seq);
            match Direction::parse(&direction) {
                Some(direction) => page.lines.push(LoggedLine {
                    seq,
                    direction,
                    at,
                    line,
                }),
                None => page.skipped += 1,
            }
        }
        if matches!(window, WireWindow::Before(_)) {
            page.lines.reverse();
        }
        page
    }

    /// A page from the lines of both log tables (`crate::batch`): `batched` from the batches and
    /// `legacy` from `wire_log`, each in the window's order (newest first for `Before`), merged
    /// by `seq`.
    pub(crate) fn merged(
        window: WireWindow,
        limit: usize,
        mut rows: Vec<PageRow>,
        legacy: Vec<PageRow>,
    ) -> WirePage {
        if !legacy.is_empty() {
            rows.extend(legacy);
            match window {
                WireWindow::Before(_) => rows.sort_by_key(|row| std::cmp::Reverse(row.0)),
                WireWindow::After(_) => rows.sort_by_key(|row| row.0),
            }
        }
        WirePage::from_rows(window, limit, rows.into_iter())
    }

    /// The number of rows to ask the database for: `limit` and one more.
    pub(crate) fn rows_to_read(limit: usize) -> i64 {
        i64::try_from(limit)
            .unwrap_or(i64::MAX - 1)
            .saturating_add(1)
    }
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
    /// Where the title came from (a user's rename is never replaced by a derived one).
    pub title_source: TitleSource,
    /// How the session was set up when created (schema version 7; older rows: the defaults).
    pub setup: SessionSetup,
}

/// Where a session's title came from, in the order a title may replace another: a prompt's title
/// only replaces none, the agent's (`session_info_update`) replaces a prompt's and its own
/// earlier one, and a user's rename replaces anything and is never replaced by a derived title.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TitleSource {
    /// None yet, or set when the session was created (`Agent session ID`).
    #[default]
    Unset,
    /// The first prompt's text.
    Prompt,
    /// The agent's latest `session_info_update` title.
    Agent,
    /// The user renamed the session.
    User,
}

impl TitleSource {
    /// The spelling stored in the `title_source` column.
    pub fn as_str(self) -> &'static str {
        match self {
            TitleSource::Unset => "",
            TitleSource::Prompt => "prompt",
            TitleSource::Agent => "agent",
            TitleSource::User => "user",
        }
    }

    /// Reads a stored spelling; an unknown one (a newer build's) reads as [`TitleSource::User`],
    /// the one nothing replaces.
    pub fn parse(text: &str) -> TitleSource {
        match text {
            "" => TitleSource::Unset,
            "prompt" => TitleSource::Prompt,
            "agent" => TitleSource::Agent,
            _ => TitleSource::User,
        }
    }
}

/// The sources a derived title from `source` may replace, as the JSON array both stores' update
/// reads (`[]` for a source that is not derived).
pub(crate) fn replaceable_sources(source: TitleSource) -> String {
    let replaceable: &[TitleSource] = match source {
        TitleSource::Prompt => &[TitleSource::Unset],
        TitleSource::Agent => &[TitleSource::Unset, TitleSource::Prompt, TitleSource::Agent],
        TitleSource::Unset | TitleSource::User => &[],
    };
    let names: Vec<&str> = replaceable.iter().map(|s| s.as_str()).collect();
    serde_json::to_string(&names).unwrap_or_else(|_| "[]".into())
}

/// What a session was created with beyond its agent: the MCP servers chosen for it, the extra
/// directories its agent may use and the session it was forked from. Written with the session
/// (one statement), so every replica and every restart starts it the same way.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSetup {
    /// The names of the configured MCP servers the session gets; `None`: every configured one
    /// (also what a session from before schema version 7 gets).
    pub mcp_servers: Option<Vec<String>>,
    /// Absolute directories the agent may use beside the working directory
    /// (ACP `additionalDirectories`).
    pub additional_directories: Vec<String>,
    /// The session this one was forked from (`session/fork`); it may have been deleted since.
    pub parent: Option<i64>,
}

impl SessionSetup {
    /// The `mcp_servers` column: a JSON array, or `NULL` for every configured server.
    pub(crate) fn mcp_servers_column(&self) -> Option<String> {
        self.mcp_servers
            .as_ref()
            .map(|names| serde_json::to_string(names).unwrap_or_else(|_| "[]".into()))
    }

    /// The `additional_directories` column: a JSON array, `NULL` when empty.
    pub(crate) fn directories_column(&self) -> Option<String> {
        (!self.additional_directories.is_empty()).then(|| {
            serde_json::to_string(&self.additional_directories).unwrap_or_else(|_| "[]".into())
        })
    }

    /// Reads the three columns back; a column that does not hold a JSON array of strings (written
    /// by hand) reads as its default.
    pub(crate) fn from_columns(
        mcp_servers: Option<String>,
        directories: Option<String>,
        parent: Option<i64>,
    ) -> SessionSetup {
        let list = |text: Option<String>| -> Option<Vec<String>> {
            serde_json::from_str(text.as_deref()?).ok()
        };
        SessionSetup {
            mcp_servers: list(mcp_servers),
            additional_directories: list(directories).unwrap_or_default(),
            parent,
        }
    }
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
