//! The embedded store: one SQLite file.
//!
//! Durability: the database runs in WAL mode with `synchronous=NORMAL`. Every committed
//! transaction reaches the operating system before the call returns, so it survives the server
//! being killed (kill -9); the last transactions since the previous WAL checkpoint may be lost on
//! power failure. Two connections: one writes, one reads (WAL lets reads run beside a write).
//!
//! WAL checkpoints: when a caller has nothing to write ([`Store::checkpoint_idle`], the session's
//! log writer when its queue stays empty) a thread of its own (`checkpointer.rs`, its own
//! connection) copies the WAL into the database, so neither a commit nor the writing
//! connection's lock waits for that copy. A commit checkpoints by itself only past
//! [`WAL_CHECKPOINT_BYTES`] (512 MiB of WAL), the bound for a burst with no idle moment. The WAL
//! file is cut back to [`WAL_KEEP_BYTES`] after a checkpoint.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

mod checkpointer;
mod convert;
mod leases;
mod transcripts;
mod wire_batches;

use checkpointer::Checkpointer;
use convert::{read_error, write_error};

use crate::migrations::{self, Migration};
use crate::replay_save::ReplaySave;
use crate::store::Store;
use crate::types::{
    Direction, Lease, LeaseSurvey, LoggedLine, SessionAgent, SessionSetup, StoreError, StoredReply,
    StoredSession, TakenCommand, TitleSource, WirePage, WireWindow,
};
use crate::types::{display_text, now_ms};

/// A SQLite database file.
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    writer: Mutex<Connection>,
    reader: Mutex<Connection>,
    /// `None` for a read-only store.
    checkpointer: Option<Checkpointer>,
}

/// The WAL's size at which a commit checkpoints by itself (in pages of the file's size). Below
/// it the WAL is copied into the database when its sessions have nothing to write: a burst of
/// up to this much is logged without a commit waiting for that copy (at 128 MiB, a 10^6-update
/// turn waited for one: BENCHMARKS.md, "SQLite pages and checkpoints").
const WAL_CHECKPOINT_BYTES: u32 = 512 << 20;

/// The page size of a new database file (an existing file keeps its own until `VACUUM`). 16 KiB
/// rather than SQLite's 4 KiB: a streamed line is a few hundred bytes to a few KiB, and with
/// fewer, fuller pages a 10^6-update turn of `spindle serve` reached the page ~5% sooner at the
/// same WAL checkpoints (BENCHMARKS.md, "SQLite pages and checkpoints"); 64 KiB was no faster.
const PAGE_SIZE: u32 = 16 << 10;

/// The WAL file's size kept after a checkpoint.
const WAL_KEEP_BYTES: u64 = 16 << 20;

fn lock(connection: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // A panic between statements leaves no transaction open (a dropped one rolls back).
    connection.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` in WAL mode, applies the migrations it
    /// lacks, and checks that it is writable, so that a read-only file fails at start rather than
    /// at the first prompt.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let open_error = |e: rusqlite::Error| StoreError::Open(format!("{}: {e}", path.display()));
        let mut writer = Connection::open(path).map_err(open_error)?;
        configure(&writer).map_err(open_error)?;
        // Before WAL mode and the first table: it sets the page size of a new file only.
        writer
            .execute_batch(&format!("PRAGMA page_size={PAGE_SIZE};"))
            .map_err(open_error)?;
        let mode: String = writer
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .map_err(open_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Open(format!(
                "{}: WAL journal mode unavailable (got {mode})",
                path.display()
            )));
        }
        let page_size: u32 = writer
            .query_row("PRAGMA page_size", [], |row| row.get(0))
            .map_err(open_error)?;
        let checkpoint_pages = WAL_CHECKPOINT_BYTES / page_size.max(512);
        writer
            .execute_batch(&format!(
                "PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint={checkpoint_pages}; \
                 PRAGMA journal_size_limit={WAL_KEEP_BYTES};"
            ))
            .map_err(open_error)?;
        migrate(&mut writer, migrations::SQLITE).map_err(|e| match e {
            StoreError::Open(message) => StoreError::Open(format!("{}: {message}", path.display())),
            other => other,
        })?;
        // A write probe: opening a read-only database succeeds, writing to it does not.
        writer
            .execute(
                "INSERT INTO meta(key, value) VALUES('opened_at', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![now_ms().to_string()],
            )
            .map_err(open_error)?;
        let reader = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_error)?;
        configure(&reader).map_err(open_error)?;
        let checkpointer = Checkpointer::start(path, WAL_KEEP_BYTES).map_err(open_error)?;
        Ok(SqliteStore {
            path: path.to_path_buf(),
            writer: Mutex::new(writer),
            reader: Mutex::new(reader),
            checkpointer: Some(checkpointer),
        })
    }

    /// Opens an existing database for reading only: every write fails with
    /// [`StoreError::Write`]. For tools that only read, and to test write failures without
    /// relying on file permissions (tests may run as root). No migration runs.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore, StoreError> {
        let open = || {
            let connection = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| StoreError::Open(format!("{}: {e}", path.display())))?;
            configure(&connection)
                .map_err(|e| StoreError::Open(format!("{}: {e}", path.display())))?;
            Ok::<_, StoreError>(connection)
        };
        let store = SqliteStore {
            path: path.to_path_buf(),
            writer: Mutex::new(open()?),
            reader: Mutex::new(open()?),
            checkpointer: None,
        };
        migrations::check(store.schema_version()?)?;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the writing connection (tests of this crate: SQLite's own failure modes).
    #[cfg(test)]
    pub(crate) fn with_writer<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        f(&lock(&self.writer))
    }
}

fn configure(connection: &Connection) -> rusqlite::Result<()> {
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    connection.execute_batch("PRAGMA foreign_keys=ON;")
}

/// Applies the pending migrations in one immediate transaction (a second server opening the
/// same file waits for it).
fn migrate(connection: &mut Connection, all: &'static [Migration]) -> Result<(), StoreError> {
    let open = |e: rusqlite::Error| StoreError::Open(format!("migration: {e}"));
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(open)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_version(
             version INTEGER PRIMARY KEY,
             applied_at INTEGER NOT NULL
         );",
    )
    .map_err(open)?;
    let current: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_version",
            [],
            |row| row.get(0),
        )
        .map_err(open)?;
    for migration in migrations::pending(all, current)? {
        tx.execute_batch(migration.sql).map_err(|e| {
            StoreError::Open(format!(
                "migration {} ({}): {e}",
                migration.version, migration.summary
            ))
        })?;
        tx.execute(
            "INSERT INTO schema_version(version, applied_at) VALUES(?1, ?2)",
            params![migration.version, now_ms()],
        )
        .map_err(open)?;
    }
    tx.commit().map_err(open)
}

impl Store for SqliteStore {
    fn describe(&self) -> String {
        format!("SQLite file {}", self.path.display())
    }

    fn schema_version(&self) -> Result<i64, StoreError> {
        let reader = lock(&self.reader);
        let exists: Option<i64> = reader
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
                [],
                |row| row.get(0),
            )
            .optional()
            .map_err(read_error)?;
        if exists.is_none() {
            return Ok(0);
        }
        reader
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                [],
                |row| row.get(0),
            )
            .map_err(read_error)
    }

    fn next_generation(&self) -> Result<u64, StoreError> {
        let mut writer = lock(&self.writer);
        let tx = writer.transaction().map_err(write_error)?;
        let current: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(write_error)?;
        let next = current.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) + 1;
        tx.execute(
            "INSERT INTO meta(key, value) VALUES('generation', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![next.to_string()],
        )
        .map_err(write_error)?;
        tx.commit().map_err(write_error)?;
        Ok(next)
    }

    fn create_session_with(
        &self,
        title: &str,
        agent: Option<&SessionAgent>,
        setup: &SessionSetup,
    ) -> Result<i64, StoreError> {
        let now = now_ms();
        let writer = lock(&self.writer);
        writer
            .execute(
                // Ids only grow, past deleted sessions too (see `delete_session`).
                "INSERT INTO sessions(id, title, created_at, updated_at, agent_id, agent_version,
                                      mcp_servers, additional_directories, parent_id)
                 VALUES(MAX(COALESCE((SELECT MAX(id) FROM sessions), 0),
                            COALESCE((SELECT CAST(value AS INTEGER) FROM meta
                                      WHERE key = 'highest_deleted_session'), 0)) + 1,
                        ?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    display_text(title),
                    now,
                    agent.map(|a| display_text(&a.id).into_owned()),
                    agent.map(|a| display_text(&a.version).into_owned()),
                    setup
                        .mcp_servers_column()
                        .map(|c| display_text(&c).into_owned()),
                    setup
                        .directories_column()
                        .map(|c| display_text(&c).into_owned()),
                    setup.parent,
                ],
            )
            .map_err(write_error)?;
        Ok(writer.last_insert_rowid())
    }

    fn set_session_agent(&self, session: i64, agent: &SessionAgent) -> Result<(), StoreError> {
        lock(&self.writer)
            .execute(
                "UPDATE sessions SET agent_id = ?2, agent_version = ?3 WHERE id = ?1",
                params![
                    session,
                    display_text(&agent.id),
                    display_text(&agent.version)
                ],
            )
            .map_err(write_error)?;
        Ok(())
    }

    fn set_agent_session_id(&self, session: i64, agent_session_id: &str) -> Result<(), StoreError> {
        lock(&self.writer)
            .execute(
                "UPDATE sessions SET agent_session_id = ?2 WHERE id = ?1",
                params![session, display_text(agent_session_id)],
            )
            .map_err(write_error)?;
        Ok(())
    }

    fn set_title(&self, session: i64, title: &str) -> Result<bool, StoreError> {
        let changed = lock(&self.writer)
            .execute(
                "UPDATE sessions SET title = ?2, title_source = 'user' WHERE id = ?1",
                params![session, display_text(title)],
            )
            .map_err(write_error)?;
        Ok(changed > 0)
    }

    fn set_derived_title(
        &self,
        session: i64,
        title: &str,
        source: TitleSource,
    ) -> Result<bool, StoreError> {
        let changed = lock(&self.writer)
            .execute(
                "UPDATE sessions SET title = ?2, title_source = ?3
                 WHERE id = ?1 AND title_source IN (SELECT value FROM json_each(?4))",
                params![
                    session,
                    display_text(title),
                    source.as_str(),
                    crate::types::replaceable_sources(source),
                ],
            )
            .map_err(write_error)?;
        Ok(changed > 0)
    }

    fn delete_session(&self, session: i64) -> Result<bool, StoreError> {
        let mut writer = lock(&self.writer);
        let tx = writer.transaction().map_err(write_error)?;
        // The rows that reference the session first (foreign keys are on).
        for table in crate::store::SESSION_TABLES {
            tx.execute(
                &format!("DELETE FROM {table} WHERE session_id = ?1"),
                params![session],
            )
            .map_err(write_error)?;
        }
        let deleted = tx
            .execute("DELETE FROM sessions WHERE id = ?1", params![session])
            .map_err(write_error)?;
        if deleted > 0 {
            // SQLite would give the highest id out again: the next session must not take the id
            // a page may still name in its address.
            tx.execute(
                "INSERT INTO meta(key, value) VALUES('highest_deleted_session', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value
                 WHERE CAST(meta.value AS INTEGER) < CAST(excluded.value AS INTEGER)",
                params![session.to_string()],
            )
            .map_err(write_error)?;
        }
        tx.commit().map_err(write_error)?;
        Ok(deleted > 0)
    }

    fn sessions(&self) -> Result<Vec<StoredSession>, StoreError> {
        let reader = lock(&self.reader);
        let mut statement = reader
            .prepare_cached(
                "SELECT id, title, agent_session_id, created_at, updated_at, agent_id, agent_version,
                        title_source, mcp_servers, additional_directories, parent_id
                 FROM sessions ORDER BY id",
            )
            .map_err(read_error)?;
        let rows = statement
            .query_map([], |row| {
                let agent_id: Option<String> = row.get(5)?;
                let agent_version: Option<String> = row.get(6)?;
                Ok(StoredSession {
                    id: row.get(0)?,
                    title: row.get(1)?,
                    agent_session_id: row.get(2)?,
                    created_at: row.get(3)?,
                    updated_at: row.get(4)?,
                    agent: agent_id.map(|id| SessionAgent {
                        id,
                        version: agent_version.unwrap_or_default(),
                    }),
                    title_source: TitleSource::parse(&row.get::<_, String>(7)?),
                    setup: SessionSetup::from_columns(row.get(8)?, row.get(9)?, row.get(10)?),
                })
            })
            .map_err(read_error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(read_error)
    }

    fn last_seq(&self, session: i64) -> Result<i64, StoreError> {
        lock(&self.reader)
            .query_row(
                &format!("SELECT {}", wire_batches::LAST_SEQ),
                params![session],
                |row| row.get(0),
            )
            .map_err(read_error)
    }

    fn checkpoint_idle(&self) -> Result<(), StoreError> {
        // The checkpointing thread's PASSIVE checkpoint copies what no reader still needs and
        // never waits for one; nothing to copy is a look at the WAL's header. A failure of the
        // previous one is this call's error (the log writer reports it).
        let Some(checkpointer) = &self.checkpointer else {
            return Ok(());
        };
        let failed = checkpointer.take_error();
        checkpointer.request();
        match failed {
            Some(error) => Err(StoreError::Write(format!("WAL checkpoint: {error}"))),
            None => Ok(()),
        }
    }

    fn append_lines(
        &self,
        session: i64,
        first_seq: i64,
        lines: &[(Direction, &str)],
    ) -> Result<(), StoreError> {
        if lines.is_empty() {
            return Ok(());
        }
        let batch = crate::batch::EncodedBatch::encode(lines)?;
        let mut writer = lock(&self.writer);
        let tx = writer.transaction().map_err(write_error)?;
        // Dropping `tx` on an error rolls the whole batch back.
        wire_batches::append(&tx, session, first_seq, &batch, now_ms())?;
        tx.commit().map_err(write_error)
    }

    fn lines_after(
        &self,
        session: i64,
        after: i64,
    ) -> Result<(Vec<LoggedLine>, usize), StoreError> {
        wire_batches::lines_after(&lock(&self.reader), session, after).map_err(read_error)
    }

    fn wire_page(
        &self,
        session: i64,
        window: WireWindow,
        limit: usize,
    ) -> Result<WirePage, StoreError> {
        wire_batches::page(&lock(&self.reader), session, window, limit).map_err(read_error)
    }

    fn save_materialized(
        &self,
        session: i64,
        upto_seq: i64,
        replay: &ReplaySave,
        replies: &[StoredReply],
        turns: i64,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let mut writer = lock(&self.writer);
        let tx = writer.transaction().map_err(write_error)?;
        transcripts::save(&tx, session, upto_seq, replay, now)?;
        // Only the turns given are written, and of them only those that changed: a reply saved
        // before and unchanged is neither rewritten nor moved (its row and its index entry stay).
        tx.prepare_cached("DELETE FROM replies WHERE session_id = ?1 AND turn > ?2")
            .and_then(|mut delete| delete.execute(params![session, turns]))
            .map_err(write_error)?;
        {
            // `finished` and `stop_reason` are compared first: they sit before `text` in the row,
            // so a changed flag is found without reading a long text.
            let mut upsert = tx
                .prepare_cached(
                    "INSERT INTO replies(session_id, turn, finished, stop_reason, text)
                     VALUES(?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT(session_id, turn) DO UPDATE SET finished = excluded.finished,
                         stop_reason = excluded.stop_reason, text = excluded.text
                     WHERE finished IS NOT excluded.finished
                         OR stop_reason IS NOT excluded.stop_reason
                         OR text IS NOT excluded.text",
                )
                .map_err(write_error)?;
            for reply in replies {
                upsert
                    .execute(params![
                        session,
                        reply.turn,
                        reply.finished,
                        reply.stop_reason.as_deref().map(display_text),
                        display_text(&reply.text)
                    ])
                    .map_err(write_error)?;
            }
        }
        tx.commit().map_err(write_error)
    }

    fn replies(&self, session: i64) -> Result<Vec<StoredReply>, StoreError> {
        let reader = lock(&self.reader);
        let mut statement = reader
            .prepare_cached(
                "SELECT turn, text, finished, stop_reason FROM replies
                 WHERE session_id = ?1 ORDER BY turn",
            )
            .map_err(read_error)?;
        let rows = statement
            .query_map(params![session], |row| {
                Ok(StoredReply {
                    turn: row.get(0)?,
                    text: row.get(1)?,
                    finished: row.get(2)?,
                    stop_reason: row.get(3)?,
                })
            })
            .map_err(read_error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(read_error)
    }

    fn transcript(&self, session: i64) -> Result<Option<String>, StoreError> {
        transcripts::read(&lock(&self.reader), session)
    }

    fn claim_lease(
        &self,
        session: i64,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<Lease, StoreError> {
        self.claim(session, owner, millis(ttl))
    }

    fn renew_lease(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
        ttl: std::time::Duration,
    ) -> Result<Option<Lease>, StoreError> {
        self.renew(session, owner, epoch, millis(ttl))
    }

    fn release_lease(&self, session: i64, owner: &str) -> Result<bool, StoreError> {
        self.release(session, owner)
    }

    fn leases(&self) -> Result<Vec<Lease>, StoreError> {
        self.all_leases()
    }

    fn lease_survey(&self) -> Result<LeaseSurvey, StoreError> {
        self.survey()
    }

    fn submit_command(&self, id: &str, session: i64, body: &str) -> Result<(), StoreError> {
        self.submit(id, session, body)
    }

    fn take_commands(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
    ) -> Result<Vec<TakenCommand>, StoreError> {
        self.take(session, owner, epoch)
    }

    fn unfinished_commands(&self, session: i64) -> Result<Vec<TakenCommand>, StoreError> {
        self.unfinished(session)
    }

    fn retake_commands(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
        ids: &[String],
    ) -> Result<Vec<TakenCommand>, StoreError> {
        self.retake(session, owner, epoch, ids)
    }

    fn finish_commands(&self, session: i64, ids: &[String]) -> Result<(), StoreError> {
        self.finish(session, ids)
    }

    fn server_notes_after(&self, session: i64, after: i64) -> Result<Vec<LoggedLine>, StoreError> {
        wire_batches::server_notes(&lock(&self.reader), session, after).map_err(read_error)
    }
}

/// Milliseconds of a lease time, as the tables keep them.
fn millis(ttl: std::time::Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_db(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "spindle-store-sqlite-{}-{name}-{}",
            std::process::id(),
            now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("test.db")
    }

    /// A page of a long log costs what the page holds: a search on the log's key, never a scan
    /// of the session's rows or a sort of them.
    #[test]
    fn batches_of_any_size_are_stored_once_and_in_order() {
        let store = SqliteStore::open(&temp_db("batches")).unwrap();
        let id = store.create_session("s", None).unwrap();
        let mut seq = 1;
        let mut expected = Vec::new();
        for size in [1, 15, 16, 17, 255, 256, 257, 300, 529] {
            let texts: Vec<String> = (0..size).map(|i| format!("{seq}.{i}")).collect();
            let batch: Vec<(Direction, &str)> = texts
                .iter()
                .map(|t| (Direction::Agent, t.as_str()))
                .collect();
            store.append_lines(id, seq, &batch).unwrap();
            store.append_lines(id, seq, &batch).unwrap();
            let mut changed = batch.clone();
            changed[size - 1].1 = "changed";
            let error = store.append_lines(id, seq, &changed).unwrap_err();
            assert!(error.to_string().contains("different line"), "{error}");
            expected.extend(texts);
            seq += i64::try_from(size).unwrap();
        }
        let stored: Vec<String> = store
            .lines(id)
            .unwrap()
            .0
            .into_iter()
            .map(|l| l.line)
            .collect();
        assert_eq!(stored, expected);
        assert_eq!(store.last_seq(id).unwrap(), seq - 1);
    }

    #[test]
    fn a_new_file_gets_the_page_size_and_an_existing_one_keeps_its_own() {
        let pragma = |store: &SqliteStore, name: &str| -> u32 {
            store.with_writer(|c| {
                c.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                    .unwrap()
            })
        };
        let page_size = |store: &SqliteStore| pragma(store, "page_size");
        // The WAL is checkpointed at the same size whatever the pages.
        let checkpoint_bytes =
            |store: &SqliteStore| pragma(store, "wal_autocheckpoint") * pragma(store, "page_size");
        let fresh = SqliteStore::open(&temp_db("page-new")).unwrap();
        assert_eq!(page_size(&fresh), PAGE_SIZE);
        assert_eq!(checkpoint_bytes(&fresh), WAL_CHECKPOINT_BYTES);
        let path = temp_db("page-old");
        Connection::open(&path)
            .unwrap()
            .execute_batch("PRAGMA page_size=4096; CREATE TABLE t(x);")
            .unwrap();
        let old = SqliteStore::open(&path).unwrap();
        assert_eq!(page_size(&old), 4096);
        assert_eq!(checkpoint_bytes(&old), WAL_CHECKPOINT_BYTES);
        let id = old.create_session("s", None).unwrap();
        old.append_lines(id, 1, &[(Direction::Agent, "kept")])
            .unwrap();
        assert_eq!(old.lines(id).unwrap().0[0].line, "kept");
    }

    #[test]
    fn a_full_disk_fails_the_batch_and_leaves_the_database_intact() {
        let path = temp_db("full");
        let store = SqliteStore::open(&path).unwrap();
        let id = store.create_session("s", None).unwrap();
        store
            .append_lines(id, 1, &[(Direction::Agent, "kept")])
            .unwrap();
        // SQLite's own "disk full": the file may not grow past its current size.
        store.with_writer(|c| {
            let pages: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
            c.execute_batch(&format!("PRAGMA max_page_count = {pages}"))
                .unwrap();
        });
        let big = "x".repeat(1 << 20);
        let error = store
            .append_lines(id, 2, &[(Direction::Agent, &big), (Direction::Agent, &big)])
            .unwrap_err();
        assert!(matches!(error, StoreError::Write(_)));
        assert!(error.to_string().contains("full"), "{error}");
        drop(store);
        let store = SqliteStore::open(&path).unwrap();
        let ok: String = store.with_writer(|c| {
            c.query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap()
        });
        assert_eq!(ok, "ok");
        let (lines, _) = store.lines(id).unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].line, "kept");
    }

    #[test]
    fn writes_to_a_read_only_database_fail_cleanly_and_reads_still_work() {
        let path = temp_db("readonly");
        let writable = SqliteStore::open(&path).unwrap();
        let id = writable.create_session("x", None).unwrap();
        drop(writable);
        let store = SqliteStore::open_read_only(&path).unwrap();
        let error = store.create_session("x", None).unwrap_err();
        assert!(matches!(error, StoreError::Write(_)), "{error:?}");
        let error = store
            .append_lines(id, 1, &[(Direction::Agent, "x")])
            .unwrap_err();
        assert!(matches!(error, StoreError::Write(_)), "{error:?}");
        assert_eq!(store.sessions().unwrap().len(), 1);
    }

    #[test]
    fn a_database_from_before_versioning_is_adopted_with_its_rows() {
        let path = temp_db("legacy");
        {
            // The schema as the server wrote it before migrations existed.
            let c = Connection::open(&path).unwrap();
            c.execute_batch(migrations::SQLITE[0].sql).unwrap();
            c.execute(
                "INSERT INTO sessions(title, created_at, updated_at) VALUES('old', 1, 1)",
                [],
            )
            .unwrap();
            c.execute(
                "INSERT INTO wire_log(session_id, seq, direction, line, at)
                 VALUES(1, 1, 'agent', '{}', 1)",
                [],
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), migrations::LATEST);
        assert_eq!(store.sessions().unwrap()[0].title, "old");
        assert_eq!(store.lines(1).unwrap().0.len(), 1);
    }
}
