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

pub use spindle_store::{Direction, Location, LoggedLine, StoreError, StoredReply, StoredSession};

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
