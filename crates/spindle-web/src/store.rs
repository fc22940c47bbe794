//! The SQLite store: the only module that knows about SQL.
//!
//! Three kinds of data live here:
//! - `wire_log`: every JSON-RPC line exchanged with an agent, both directions, in order, per web
//!   session. It is the source of truth: the engine is rebuilt after a restart by replaying it.
//! - `transcripts`: the engine's materialized transcript (`replay_json`), refreshed at turn end.
//!   A convenience for readers of the database; never read back to rebuild state.
//! - `replies`: the final reply of every finished turn, without thoughts (the engine's `turn_replies`).
//!
//! Durability: the database runs in WAL mode with `synchronous=NORMAL`. Every committed transaction
//! reaches the operating system before `commit` returns, so it survives the server being killed
//! (kill -9); the last transactions since the previous WAL checkpoint may be lost on power failure.
//! The session loop commits each batch of agent lines *before* the resulting render ops are sent
//! to any browser, so nothing a browser has shown is lost by a kill -9.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};

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
    /// A line of the client's own services, not on the wire (contract C): a client terminal's
    /// output or exit, `{"local":{...}}`. Older servers skip these rows.
    Local,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Agent => "agent",
            Direction::Client => "client",
            Direction::AgentReplay => "agent_replay",
            Direction::Server => "server",
            Direction::Local => "local",
        }
    }

    fn parse(text: &str) -> Option<Direction> {
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
    /// The raw JSON-RPC line, without its newline.
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
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Milliseconds since the Unix epoch of the last logged line.
    pub updated_at: i64,
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

/// Errors of the store. Each carries the SQLite message; the database is never left half-written
/// because every write is one transaction.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be opened or its schema created (missing directory, permissions,
    /// not a database, read-only file).
    Open(String),
    /// A write failed (disk full, read-only database, I/O error). Nothing of it was committed.
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

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions(
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    agent_session_id TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS wire_log(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    direction TEXT NOT NULL,
    line TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY(session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transcripts(
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id),
    upto_seq INTEGER NOT NULL,
    replay_json TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS replies(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    turn INTEGER NOT NULL,
    text TEXT NOT NULL,
    finished INTEGER NOT NULL,
    stop_reason TEXT,
    PRIMARY KEY(session_id, turn)
) WITHOUT ROWID;
";

/// One connection to the store. Cheap to open; the server opens one per writer.
#[derive(Debug)]
pub struct Store {
    connection: Connection,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, in WAL mode, and checks that it is
    /// writable, so that a read-only file fails at start rather than at the first prompt.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let open_error = |e: rusqlite::Error| StoreError::Open(format!("{}: {e}", path.display()));
        let connection = Connection::open(path).map_err(open_error)?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(open_error)?;
        let mode: String = connection
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .map_err(open_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Open(format!(
                "{}: WAL journal mode unavailable (got {mode})",
                path.display()
            )));
        }
        connection
            .execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
            .map_err(open_error)?;
        connection.execute_batch(SCHEMA).map_err(open_error)?;
        // A write probe: opening a read-only database succeeds, writing to it does not.
        connection
            .execute(
                "INSERT INTO meta(key, value) VALUES('opened_at', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![now_ms().to_string()],
            )
            .map_err(open_error)?;
        Ok(Store { connection })
    }

    /// A read-only connection to an existing database, to test write failures without relying
    /// on file permissions (tests may run as root).
    #[cfg(test)]
    pub(crate) fn open_read_only(path: &Path) -> Store {
        let connection = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .expect("open read-only");
        Store { connection }
    }

    /// Increments and returns the server generation: a number that changes at every start, so
    /// that SSE event ids from a previous run are recognised as stale.
    pub fn next_generation(&mut self) -> Result<u64, StoreError> {
        let write = |e: rusqlite::Error| StoreError::Write(e.to_string());
        let tx = self.connection.transaction().map_err(write)?;
        let current: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(write)?;
        let next = current.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) + 1;
        tx.execute(
            "INSERT INTO meta(key, value) VALUES('generation', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![next.to_string()],
        )
        .map_err(write)?;
        tx.commit().map_err(write)?;
        Ok(next)
    }

    /// Creates a web session and returns its id.
    pub fn create_session(&mut self, title: &str) -> Result<i64, StoreError> {
        let now = now_ms();
        self.connection
            .execute(
                "INSERT INTO sessions(title, created_at, updated_at) VALUES(?1, ?2, ?2)",
                params![title, now],
            )
            .map_err(|e| StoreError::Write(e.to_string()))?;
        Ok(self.connection.last_insert_rowid())
    }

    /// Records the ACP session id the agent gave the web session.
    pub fn set_agent_session_id(
        &mut self,
        session: i64,
        agent_session_id: &str,
    ) -> Result<(), StoreError> {
        self.connection
            .execute(
                "UPDATE sessions SET agent_session_id = ?2 WHERE id = ?1",
                params![session, agent_session_id],
            )
            .map_err(|e| StoreError::Write(e.to_string()))?;
        Ok(())
    }

    /// Sets the display title.
    pub fn set_title(&mut self, session: i64, title: &str) -> Result<(), StoreError> {
        self.connection
            .execute(
                "UPDATE sessions SET title = ?2 WHERE id = ?1",
                params![session, title],
            )
            .map_err(|e| StoreError::Write(e.to_string()))?;
        Ok(())
    }

    /// All sessions, oldest first.
    pub fn sessions(&self) -> Result<Vec<StoredSession>, StoreError> {
        let read = |e: rusqlite::Error| StoreError::Read(e.to_string());
        let mut statement = self
            .connection
            .prepare(
                "SELECT id, title, agent_session_id, created_at, updated_at
                 FROM sessions ORDER BY id",
            )
            .map_err(read)?;
        let rows = statement
            .query_map([], |row| {
                Ok(StoredSession {
                    id: row.get(0)?,
                    title: row.get(1)?,
                    agent_session_id: row.get(2)?,
                    created_at: row.get(3)?,
                    updated_at: row.get(4)?,
                })
            })
            .map_err(read)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(read)
    }

    /// The highest `seq` logged for a session (0 when none).
    pub fn last_seq(&self, session: i64) -> Result<i64, StoreError> {
        self.connection
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM wire_log WHERE session_id = ?1",
                params![session],
                |row| row.get(0),
            )
            .map_err(|e| StoreError::Read(e.to_string()))
    }

    /// Appends lines to a session's log in one transaction, numbering them from `first_seq`.
    /// Either all of them are committed or none.
    pub fn append_lines(
        &mut self,
        session: i64,
        first_seq: i64,
        lines: &[(Direction, &str)],
    ) -> Result<(), StoreError> {
        let write = |e: rusqlite::Error| StoreError::Write(e.to_string());
        let now = now_ms();
        let tx = self.connection.transaction().map_err(write)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO wire_log(session_id, seq, direction, line, at)
                     VALUES(?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(write)?;
            for (offset, (direction, line)) in lines.iter().enumerate() {
                let seq = first_seq + i64::try_from(offset).unwrap_or(i64::MAX);
                insert
                    .execute(params![session, seq, direction.as_str(), line, now])
                    .map_err(write)?;
            }
            tx.execute(
                "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
                params![session, now],
            )
            .map_err(write)?;
        }
        tx.commit().map_err(write)
    }

    /// A session's log in order. Rows with an unknown direction (written by a newer version) are
    /// skipped and counted in the second value.
    pub fn lines(&self, session: i64) -> Result<(Vec<LoggedLine>, usize), StoreError> {
        let read = |e: rusqlite::Error| StoreError::Read(e.to_string());
        let mut statement = self
            .connection
            .prepare("SELECT seq, direction, line FROM wire_log WHERE session_id = ?1 ORDER BY seq")
            .map_err(read)?;
        let mut rows = statement.query(params![session]).map_err(read)?;
        let mut lines = Vec::new();
        let mut skipped = 0;
        while let Some(row) = rows.next().map_err(read)? {
            let seq: i64 = row.get(0).map_err(read)?;
            let direction: String = row.get(1).map_err(read)?;
            let line: String = row.get(2).map_err(read)?;
            match Direction::parse(&direction) {
                Some(direction) => lines.push(LoggedLine {
                    seq,
                    direction,
                    line,
                }),
                None => skipped += 1,
            }
        }
        Ok((lines, skipped))
    }

    /// Stores the materialized transcript and the replies of finished turns in one transaction.
    pub fn save_materialized(
        &mut self,
        session: i64,
        upto_seq: i64,
        replay_json: &str,
        replies: &[StoredReply],
    ) -> Result<(), StoreError> {
        let write = |e: rusqlite::Error| StoreError::Write(e.to_string());
        let now = now_ms();
        let tx = self.connection.transaction().map_err(write)?;
        tx.execute(
            "INSERT INTO transcripts(session_id, upto_seq, replay_json, updated_at)
             VALUES(?1, ?2, ?3, ?4)
             ON CONFLICT(session_id) DO UPDATE SET upto_seq = excluded.upto_seq,
                 replay_json = excluded.replay_json, updated_at = excluded.updated_at",
            params![session, upto_seq, replay_json, now],
        )
        .map_err(write)?;
        tx.execute(
            "DELETE FROM replies WHERE session_id = ?1",
            params![session],
        )
        .map_err(write)?;
        for reply in replies {
            tx.execute(
                "INSERT INTO replies(session_id, turn, text, finished, stop_reason)
                 VALUES(?1, ?2, ?3, ?4, ?5)",
                params![
                    session,
                    reply.turn,
                    reply.text,
                    reply.finished,
                    reply.stop_reason
                ],
            )
            .map_err(write)?;
        }
        tx.commit().map_err(write)
    }

    /// The persisted replies of a session, by turn.
    pub fn replies(&self, session: i64) -> Result<Vec<StoredReply>, StoreError> {
        let read = |e: rusqlite::Error| StoreError::Read(e.to_string());
        let mut statement = self
            .connection
            .prepare(
                "SELECT turn, text, finished, stop_reason FROM replies
                 WHERE session_id = ?1 ORDER BY turn",
            )
            .map_err(read)?;
        let rows = statement
            .query_map(params![session], |row| {
                Ok(StoredReply {
                    turn: row.get(0)?,
                    text: row.get(1)?,
                    finished: row.get(2)?,
                    stop_reason: row.get(3)?,
                })
            })
            .map_err(read)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(read)
    }

    /// The materialized transcript of a session, if one was saved.
    pub fn transcript(&self, session: i64) -> Result<Option<String>, StoreError> {
        self.connection
            .query_row(
                "SELECT replay_json FROM transcripts WHERE session_id = ?1",
                params![session],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| StoreError::Read(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_db(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "spindle-web-store-{}-{name}-{}",
            std::process::id(),
            now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("test.db")
    }

    #[test]
    fn log_round_trips_in_order_across_reopen() {
        let path = temp_db("roundtrip");
        {
            let mut store = Store::open(&path).unwrap();
            let id = store.create_session("first").unwrap();
            store
                .append_lines(id, 1, &[(Direction::Client, "{\"a\":1}")])
                .unwrap();
            store
                .append_lines(
                    id,
                    2,
                    &[
                        (Direction::Agent, "{\"b\":2}"),
                        (Direction::AgentReplay, "{\"c\":3}"),
                        (Direction::Local, "{\"local\":{}}"),
                    ],
                )
                .unwrap();
            store.set_agent_session_id(id, "sess-1").unwrap();
        }
        let store = Store::open(&path).unwrap();
        let sessions = store.sessions().unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].agent_session_id.as_deref(), Some("sess-1"));
        let (lines, skipped) = store.lines(sessions[0].id).unwrap();
        assert_eq!(skipped, 0);
        let got: Vec<_> = lines
            .iter()
            .map(|l| (l.seq, l.direction, l.line.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, Direction::Client, "{\"a\":1}"),
                (2, Direction::Agent, "{\"b\":2}"),
                (3, Direction::AgentReplay, "{\"c\":3}"),
                (4, Direction::Local, "{\"local\":{}}"),
            ]
        );
        assert_eq!(store.last_seq(sessions[0].id).unwrap(), 4);
    }

    #[test]
    fn a_failed_batch_commits_nothing() {
        let path = temp_db("atomic");
        let mut store = Store::open(&path).unwrap();
        let id = store.create_session("s").unwrap();
        store
            .append_lines(id, 1, &[(Direction::Agent, "one")])
            .unwrap();
        // The batch's second row (seq 1) collides with the committed row: the first row
        // (seq 0) must be rolled back with it.
        let error = store.append_lines(
            id,
            0,
            &[(Direction::Agent, "zero"), (Direction::Agent, "dup")],
        );
        assert!(matches!(error, Err(StoreError::Write(_))));
        let (lines, _) = store.lines(id).unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].line, "one");
    }

    #[test]
    fn replies_and_transcript_are_replaced_whole() {
        let path = temp_db("replies");
        let mut store = Store::open(&path).unwrap();
        let id = store.create_session("s").unwrap();
        let reply = |turn, text: &str| StoredReply {
            turn,
            text: text.into(),
            finished: true,
            stop_reason: Some("end_turn".into()),
        };
        store
            .save_materialized(id, 5, "{\"v\":1}", &[reply(1, "a"), reply(2, "b")])
            .unwrap();
        store
            .save_materialized(id, 9, "{\"v\":2}", &[reply(1, "a")])
            .unwrap();
        assert_eq!(store.replies(id).unwrap(), vec![reply(1, "a")]);
        assert_eq!(store.transcript(id).unwrap().as_deref(), Some("{\"v\":2}"));
    }

    #[test]
    fn a_full_disk_fails_the_batch_and_leaves_the_database_intact() {
        let path = temp_db("full");
        let mut store = Store::open(&path).unwrap();
        let id = store.create_session("s").unwrap();
        store
            .append_lines(id, 1, &[(Direction::Agent, "kept")])
            .unwrap();
        // SQLite's own "disk full": the file may not grow past its current size.
        let pages: i64 = store
            .connection
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        store
            .connection
            .execute_batch(&format!("PRAGMA max_page_count = {pages}"))
            .unwrap();
        let big = "x".repeat(1 << 20);
        let error = store
            .append_lines(id, 2, &[(Direction::Agent, &big), (Direction::Agent, &big)])
            .unwrap_err();
        assert!(matches!(error, StoreError::Write(_)));
        assert!(error.to_string().contains("full"), "{error}");
        drop(store);
        let store = Store::open(&path).unwrap();
        let ok: String = store
            .connection
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let (lines, _) = store.lines(id).unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].line, "kept");
    }

    #[test]
    fn generation_increases_at_every_start() {
        let path = temp_db("generation");
        let first = Store::open(&path).unwrap().next_generation().unwrap();
        let second = Store::open(&path).unwrap().next_generation().unwrap();
        assert_eq!(second, first + 1);
    }

    #[test]
    fn a_directory_that_does_not_exist_is_a_clear_open_error() {
        let error = Store::open(Path::new("/nonexistent-spindle-dir/x/y.db")).unwrap_err();
        assert!(matches!(error, StoreError::Open(_)));
        assert!(error.to_string().contains("/nonexistent-spindle-dir"));
    }

    #[test]
    fn writes_to_a_read_only_database_fail_cleanly() {
        let path = temp_db("readonly");
        Store::open(&path).unwrap();
        let mut store = Store::open_read_only(&path);
        let error = store.create_session("x").unwrap_err();
        assert!(matches!(error, StoreError::Write(_)), "{error:?}");
    }
}
