//! WAL checkpoints off the writing connection: a thread with a connection of its own copies the
//! WAL into the database (`PRAGMA wal_checkpoint(PASSIVE)`) when asked (a session's log writer
//! found nothing to write), so the writing connection's lock, which the sessions of one server
//! share, is never held for that copy and its `fsync`s: another session's commit goes on.
//!
//! A PASSIVE checkpoint runs beside the writer and readers (SQLite's WAL allows one checkpoint
//! at a time, next to them); what a commit appends while it runs is copied by the next one.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use rusqlite::Connection;

/// The checkpointing thread of one database file; dropping it stops and joins the thread (its
/// connection closes with it).
#[derive(Debug)]
pub(super) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// A checkpoint was asked for since the last one began.
    requested: bool,
    stop: bool,
    /// Checkpoints finished (tests wait on it).
    done: u64,
    /// The last checkpoint's failure, until it is reported (`take_error`).
    last_error: Option<String>,
}

impl Checkpointer {
    /// Opens a connection to `path` (already in WAL mode) and starts the thread;
    /// `journal_size_limit` is the WAL size kept after a checkpoint that emptied it.
    pub(super) fn start(path: &Path, journal_size_limit: u64) -> rusqlite::Result<Checkpointer> {
        let connection = Connection::open(path)?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        connection.execute_batch(&format!(
            "PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit={journal_size_limit};"
        ))?;
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("spindle-sqlite-checkpoint".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&connection, &shared)
            })
            .map_err(|e| {
                rusqlite::Error::ToSqlConversionFailure(format!("checkpoint thread: {e}").into())
            })?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }

    /// Asks for a checkpoint; returns at once. Requests made while one runs are one more.
    pub(super) fn request(&self) {
        self.shared.lock().requested = true;
        self.shared.wake.notify_one();
    }

    /// The failure of the last checkpoint, once (the caller reports it; the next checkpoint
    /// copies what this one could not).
    pub(super) fn take_error(&self) -> Option<String> {
        self.shared.lock().last_error.take()
    }

    /// Checkpoints finished so far, and the last one's failure.
    #[cfg(test)]
    pub(super) fn progress(&self) -> (u64, Option<String>) {
        let state = self.shared.lock();
        (state.done, state.last_error.clone())
    }

    /// Waits until more than `after` checkpoints finished (tests; panics after 10 s).
    #[cfg(test)]
    pub(super) fn wait_past(&self, after: u64) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut state = self.shared.lock();
        while state.done <= after {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "no checkpoint after {after} within 10 s");
            state = self
                .shared
                .wake
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn run(connection: &Connection, shared: &Shared) {
    loop {
        {
            let mut state = shared.lock();
            while !state.requested && !state.stop {
                state = shared
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.stop {
                return;
            }
            state.requested = false;
        }
        // PASSIVE never waits for a reader or the writer; a checkpoint already running
        // elsewhere (the writer's own, at the bound) makes this one a no-op.
        let outcome = connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        let mut state = shared.lock();
        state.done += 1;
        state.last_error = outcome.err().map(|e| e.to_string());
        shared.wake.notify_all();
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::SqliteStore;
    use crate::store::Store;
    use crate::types::Direction;

    fn store(name: &str) -> SqliteStore {
        let dir = std::env::temp_dir().join(format!(
            "spindle-store-checkpoint-{}-{name}-{}",
            std::process::id(),
            crate::types::now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        SqliteStore::open(&dir.join("test.db")).unwrap()
    }

    /// The database file's size: what checkpoints copied out of the WAL.
    fn db_bytes(store: &SqliteStore) -> u64 {
        std::fs::metadata(store.path()).unwrap().len()
    }

    fn checkpointer(store: &SqliteStore) -> &super::Checkpointer {
        store
            .checkpointer
            .as_ref()
            .expect("a writable store checkpoints")
    }

    #[test]
    fn an_idle_checkpoint_is_done_by_the_thread_and_copies_every_frame() {
        let store = store("idle");
        let id = store.create_session("s", None).unwrap();
        let line = "x".repeat(4096);
        let batch: Vec<(Direction, &str)> = (0..50).map(|_| (Direction::Agent, &*line)).collect();
        store.append_lines(id, 1, &batch).unwrap();
        // The 200 KB are in the WAL only, until the thread copies them.
        assert!(db_bytes(&store) < 100_000, "{}", db_bytes(&store));
        let (done, _) = checkpointer(&store).progress();
        store.checkpoint_idle().unwrap();
        checkpointer(&store).wait_past(done);
        assert_eq!(checkpointer(&store).progress().1, None);
        assert!(db_bytes(&store) > 200_000, "{}", db_bytes(&store));
        assert_eq!(store.lines(id).unwrap().0.len(), 50);
    }

    #[test]
    fn a_failed_checkpoint_is_the_next_idle_calls_error_once() {
        let store = store("failed");
        let (done, _) = checkpointer(&store).progress();
        store.checkpoint_idle().unwrap();
        checkpointer(&store).wait_past(done);
        // What the thread keeps when SQLite refuses a checkpoint (a full disk, an I/O error).
        checkpointer(&store).shared.lock().last_error = Some("disk I/O error".into());
        let error = store.checkpoint_idle().unwrap_err();
        assert!(
            error.to_string().contains("WAL checkpoint: disk I/O error"),
            "{error}"
        );
        assert!(checkpointer(&store).take_error().is_none());
    }

    #[test]
    fn a_read_only_store_has_no_checkpointing_thread() {
        let writable = store("ro");
        let path = writable.path().to_path_buf();
        drop(writable);
        let store = SqliteStore::open_read_only(&path).unwrap();
        assert!(store.checkpointer.is_none());
        store.checkpoint_idle().unwrap();
    }
}
