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
        id: String,
        path: PathBuf,
        reason: String,
    },
    /// The user's settings file cannot be read.
    #[error("{path}: {reason}")]
    Settings { path: PathBuf, reason: String },
    /// A file operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
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
