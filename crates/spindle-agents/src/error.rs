//! What can go wrong with agents, each with a message a user can act on.

use std::path::PathBuf;

/// An error of the agent catalog.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// Not a registry id.
    #[error("{0:?} is not an agent id (lowercase letters, digits and '-', starting with a letter)")]
    InvalidId(String),
    /// No install record for this id.
    #[error(
        "agent {0:?} is not installed (see `spindle agents list`, then `spindle agents install {0}`)"
    )]
    NotInstalled(String),
    /// An install record that cannot be read.
    #[error(
        "the install record {path} is damaged: {reason} (reinstall with `spindle agents install {id}`)"
    )]
    DamagedRecord {
        /// The id.
        id: String,
        /// The record file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Another process installs, updates or removes this agent.
    #[error("agent {id:?} is being installed, updated or removed by another process{}; try again when it is done", holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default())]
    Busy {
        /// The id.
        id: String,
        /// The pid in the lock file, when readable.
        holder: Option<u32>,
    },
    /// The user's settings file cannot be read.
    #[error("{path}: {reason}")]
    Settings {
        /// `agents.toml`.
        path: PathBuf,
        /// The parser's message.
        reason: String,
    },
    /// A file operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// To which file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl AgentsError {
    pub(crate) fn io(
        what: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| AgentsError::Io { what, path, source }
    }
}
