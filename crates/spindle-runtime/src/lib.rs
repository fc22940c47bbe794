//! spindle-runtime: the session runtime behind `spindle serve`, without HTTP.
//!
//! One [`spindle_engine::TranscriptEngine`] per session runs here; front ends receive its render
//! ops through a hub and only paint them. Every line exchanged with an agent is committed to the
//! store before the ops it causes are published, and sessions are rebuilt after a restart by
//! replaying that log. Replicas on one PostgreSQL database share the sessions: the replica holding
//! a session's lease runs its agent, the others follow the log, forward commands to the owner and
//! take a session over when its owner dies.
//!
//! Each session's agent gets the client side of ACP from a [`spindle_host::Host`] rooted at the
//! session's working directory, as far as the policy allows (`--fs`, `--terminals`). Commands are
//! only ever run at the agent's request.
//!
//! Layering: `spindle-web` serves the page and `/acp` over HTTP on top of this crate; this crate
//! never imports an HTTP type, and its errors are [`SessionError`]s, which each front end maps in
//! one place.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use spindle_runtime::{AgentChoice, AgentSettings, Runtime, RuntimeConfig};
//! let runtime = Runtime::start(RuntimeConfig {
//!     db: "/tmp/spindle-demo.db".into(),
//!     agent: AgentSettings {
//!         agents: vec![AgentChoice {
//!             id: "spindle".into(),
//!             name: "Spindle reference agent".into(),
//!             version: "0.1.0".into(),
//!             command: vec!["spindle".into(), "agent".into()],
//!             env: Vec::new(),
//!         }],
//!         default_agent: "spindle".into(),
//!         protocol_version: 1,
//!         cwd: std::env::current_dir()?,
//!         startup_timeout: std::time::Duration::from_secs(30),
//!         idle_stop: None,
//!         fs: spindle_runtime::FsPolicy::Ask,
//!         terminals: true,
//!         remote: None,
//!         mcp_servers: Vec::new(),
//!         checkpoints: None,
//!     },
//!     limits: Default::default(),
//!     replica: Default::default(),
//!     replica_port: 0,
//!     page: true,
//! })?;
//! println!("{} sessions", runtime.manager.list()?.len());
//! runtime.manager.shutdown().await;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod acp_feed;
pub mod acting;
mod agent_link;
mod checkpoints;
mod core;
mod error;
mod facts;
mod feed;
pub mod files;
mod handshake;
mod history;
pub mod hub;
mod log_writer;
pub mod page_ops;
mod pipeline;
mod prompt_queue;
pub mod registry;
pub mod replica;
pub mod snapshot;
pub mod store;
mod sync;
mod task;
pub mod wire_mask;
pub mod wire_view;

pub mod gateway;

use std::path::PathBuf;
use std::sync::Arc;

pub use acting::{acting_as, acting_as_owned};
pub use agent_link::{
    AgentConnector, Connecting, MAX_LINE_BYTES, RemoteAgent, RemoteNotice, RemoteStreams,
};
pub use error::SessionError;
pub use gateway::{AcpLimits, Gateway};
pub use handshake::{AgentChoice, AgentSettings, OpenMode};
pub use hub::HubLimits;
pub use registry::{LiveSession, MAX_TITLE_CHARS, NewSession, SessionManager};
pub use replica::ReplicaConfig;
pub use spindle_host::FsPolicy;
pub use task::{CheckpointRequest, PromptImage, PromptOutcome, RemoteTarget};

/// What the runtime is started with.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// The database: a SQLite file (created if missing) or a `postgres://` URL.
    pub db: PathBuf,
    /// The agents sessions run, fixed at start.
    pub agent: AgentSettings,
    /// Per-session hub limits.
    pub limits: HubLimits,
    /// This runtime's place among replicas sharing the database.
    pub replica: ReplicaConfig,
    /// The port the front end serves on: part of the default replica id (`HOST:PORT`).
    pub replica_port: u16,
    /// Whether a page shows the sessions. Without one (`spindle bridge --listen`: `/acp` only)
    /// the engines make no render ops and nothing is serialized for a page no one opens.
    pub page: bool,
}

/// A started runtime: the sessions, rebuilt from the store, and their replica.
#[derive(Debug)]
pub struct Runtime {
    /// Every session of the store.
    pub manager: Arc<SessionManager>,
}

impl Runtime {
    /// Opens the store, rebuilds every stored session and starts following other replicas'
    /// commits. Needs a tokio runtime.
    pub fn start(config: RuntimeConfig) -> Result<Runtime, store::StoreError> {
        let store = store::Store::open(&config.db)?;
        let replica_id = config
            .replica
            .id
            .clone()
            .filter(|id| !id.trim().is_empty())
            .unwrap_or_else(|| replica::default_id(config.replica_port));
        let replica = Arc::new(replica::Replica::new(
            replica_id,
            config.replica.lease_ttl,
            store.clone(),
        ));
        if matches!(
            store::Location::from_path(&config.db),
            store::Location::Sqlite(_)
        ) {
            // One server per SQLite file: its leases are this server's from an earlier run.
            replica.clear_stale_leases()?;
        }
        // Listening starts before the rebuild: nothing committed in between is missed.
        let changes = store.changes();
        let manager = registry::SessionManager::restore(
            store,
            config.agent,
            config.limits,
            replica,
            config.page,
        )?;
        let manager = Arc::new(manager);
        if let Some(changes) = changes {
            replica::follow::spawn(manager.clone(), changes);
        }
        Ok(Runtime { manager })
    }
}
