//! Persistence of `spindle serve`: the only crate that knows SQL.
//!
//! One interface, [`Store`], with two implementations:
//! - [`SqliteStore`]: an embedded SQLite file (the default), WAL mode;
//! - [`PostgresStore`]: a PostgreSQL database (`--db postgres://...`) through `tokio-postgres` and a
//!   `deadpool-postgres` connection pool.
//!
//! Both keep the same data with the same meaning:
//! - the **wire log**: every JSON-RPC line exchanged with an agent, both directions, in order, per
//!   web session. It is the source of truth: a session is rebuilt after a restart by replaying it.
//!   [`Store::append_lines`] returns only once its lines are committed, so a caller that shows
//!   anything derived from them after that call never shows what a crash could lose;
//! - the **materialized transcript** (the engine's replay JSON, refreshed at turn end), for readers
//!   of the database; never read back to rebuild state;
//! - the **replies**: the final reply of every finished turn, without thoughts.
//!
//! Both apply versioned, forward-only migrations ([`migrations`]) when opened; a database written
//! by a newer build (a higher schema version) is refused rather than misread.
//!
//! The interface is synchronous on purpose: the web server commits a batch of lines while it holds
//! the session's lock, so that a snapshot and the batches after it are cut at the same point. The
//! PostgreSQL store runs its async driver on a small runtime of its own and waits for the answer,
//! so it can be called from any thread, inside or outside a tokio runtime.
#![deny(missing_docs)]

mod batch;
mod listen;
mod location;
pub mod migrations;
mod postgres;
mod replay_save;
mod sqlite;
mod store;
#[cfg(feature = "test-server")]
pub mod test_server;
mod types;

use std::sync::Arc;

pub use listen::LogChange;
pub use location::Location;
pub use postgres::PostgresStore;
pub use replay_save::{ListSave, ReplaySave};
pub use sqlite::SqliteStore;
pub use store::Store;
pub use types::{
    Direction, Lease, LeaseSurvey, LoggedLine, SessionAgent, SessionSetup, StoreError, StoredReply,
    StoredSession, TakenCommand, TitleSource, WirePage, WireWindow,
};

/// Opens the store `location` names, applying the migrations it lacks: a SQLite file (created
/// when missing) or a PostgreSQL database (which must exist).
pub fn open(location: &Location) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match location {
        Location::Sqlite(path) => Arc::new(SqliteStore::open(path)?),
        Location::Postgres(url) => Arc::new(PostgresStore::open(url)?),
    })
}
