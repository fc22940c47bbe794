//! The web server's storage: a handle on a [`spindle_store::Store`] (a SQLite file, the default,
//! or a PostgreSQL database for `--db postgres://...`). SQL lives in `spindle-store`; this module
//! only picks the store from `--db` and shares it.
//!
//! What is kept and when (see `spindle-store` for each store's durability): every agent line is
//! committed to the wire log before it is decoded or any render op derived from it is sent
//! (`SessionCore::record` waits for the commit); the materialized transcript and the replies
//! (without thoughts) are saved when a turn starts or ends. While the database fails, the session
//! keeps its lines in a bounded in-memory backlog and retries (`core.rs`).

use std::path::Path;
use std::sync::Arc;

/// The member of a server note ([`Direction::Server`]) that names its kind:
/// `{"spindle": KIND, ...}`.
pub(crate) const NOTE_KIND_KEY: &str = "spindle";

pub use spindle_store::{
    Direction, Location, LoggedLine, SessionAgent, StoreError, StoredReply, StoredSession,
};

/// The server's store, shared by every session (a clone is another handle on the same store).
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<dyn spindle_store::Store>,
}

impl Store {
    /// Opens what `--db` names: a `postgres://` or `postgresql://` URL, else a SQLite file
    /// (created when missing). Migrations the database lacks are applied first.
    pub fn open(db: &Path) -> Result<Store, StoreError> {
        spindle_store::open(&Location::from_path(db)).map(Store::from_store)
    }

    /// A handle on a store opened elsewhere.
    pub fn from_store(inner: Arc<dyn spindle_store::Store>) -> Store {
        Store { inner }
    }

    /// Runs `work`, which calls this store, from async code. When the store's calls wait on a
    /// database server (PostgreSQL) and this is a worker of a multi-thread runtime, the worker's
    /// queued tasks are handed to another thread first (`block_in_place`): the SSE writers a
    /// session's batch just woke then run during its next commit instead of after the session
    /// task pauses (which a streaming agent, whose next lines are always ready, rarely lets it
    /// do), and tasks `work` wakes are queued where any worker takes them. A SQLite call (tens of
    /// microseconds) runs in place: handing the worker over would cost more than it waits.
    pub(crate) fn off_worker<T>(&self, work: impl FnOnce() -> T) -> T {
        let multi_thread = || {
            tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
        };
        if self.inner.waits_on_server() && multi_thread() {
            tokio::task::block_in_place(work)
        } else {
            work()
        }
    }

    /// A SQLite database opened read-only: every write fails (tests of storage failures).
    #[cfg(test)]
    pub(crate) fn open_read_only(path: &Path) -> Store {
        Store::from_store(Arc::new(
            spindle_store::SqliteStore::open_read_only(path).expect("open read-only"),
        ))
    }
}

/// Every method of [`spindle_store::Store`] (each one transaction; writes return once committed).
impl std::ops::Deref for Store {
    type Target = dyn spindle_store::Store;

    fn deref(&self) -> &Self::Target {
        self.inner.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use spindle_engine::{EngineConfig, TranscriptEngine};
    use spindle_store::test_server::{self, Relay};

    use super::*;
    use crate::core::SessionCore;
    use crate::feed::EngineFeed;
    use crate::hub::{Frame, Hub, HubLimits};

    const PROMPT: &str = r#"{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#;

    fn chunk(text: &str) -> String {
        serde_json::json!({
            "jsonrpc": "2.0", "method": "session/update",
            "params": { "sessionId": "s", "update": {
                "sessionUpdate": "agent_message_chunk", "messageId": "a1",
                "content": { "type": "text", "text": text } } },
        })
        .to_string()
    }

    fn shown(rx: &mut tokio::sync::mpsc::Receiver<Frame>) -> String {
        let mut text = String::new();
        while let Ok(frame) = rx.try_recv() {
            if let Frame::Ops { data, .. } = frame {
                text.push_str(&data);
            }
        }
        text
    }

    /// The backlog of `core.rs` on PostgreSQL: a network partition between the server and its
    /// database neither stops the session nor loses or doubles a line.
    #[test]
    fn a_postgres_partition_keeps_the_session_live_and_the_log_complete_once_it_heals() {
        let Some(server) = test_server::server() else {
            return;
        };
        let database = server.create_database("web_partition");
        let relay = Relay::start(server.port());
        let url = format!("postgres://postgres@127.0.0.1:{}/{database}", relay.port);
        let store = Store::open(Path::new(&url)).unwrap();
        let session = store.create_session("s", None).unwrap();
        let engine = TranscriptEngine::new(EngineConfig::default());
        let hub = Hub::new(1, HubLimits::default());
        let mut core = SessionCore::new(
            session,
            (engine, EngineFeed::default()),
            hub,
            store.clone(),
            1,
        );
        let mut rx = core.subscribe(None);
        core.record(vec![(Direction::Client, PROMPT.to_string())]);
        relay.cut();
        core.record(vec![(Direction::Agent, chunk("Hel"))]);
        core.record(vec![(Direction::Agent, chunk("lo"))]);
        let text = shown(&mut rx);
        assert!(text.contains("Hel") && text.contains("lo"), "{text}");
        assert!(text.contains("Not saved"), "{text}");
        assert_eq!(core.stats()["unsavedLines"], 2);

        relay.heal();
        // The session task retries on a timer; here, by hand (bounded).
        for _ in 0..100 {
            core.retry_unsaved();
            if !core.has_backlog() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(!core.has_backlog(), "{}", core.stats());
        assert!(shown(&mut rx).contains("Storage recovered"));

        // A restarted server (straight to the database) reads the whole log, in order, once.
        let reopened = Store::open(Path::new(&server.url(&database))).unwrap();
        let (lines, _) = reopened.lines(session).unwrap();
        let logged: Vec<(i64, String)> = lines.iter().map(|l| (l.seq, l.line.clone())).collect();
        assert_eq!(
            logged,
            vec![(1, PROMPT.to_string()), (2, chunk("Hel")), (3, chunk("lo"))]
        );
        let mut replayed = TranscriptEngine::new(EngineConfig::default());
        let mut feed = EngineFeed::default();
        for line in &lines {
            feed.apply(&mut replayed, line.direction, &line.line);
        }
        assert_eq!(replayed.replay_json(), core.engine.replay_json());
    }
}
