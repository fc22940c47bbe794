//! [`SessionError`]: why the session runtime refused or failed a call. It names what went wrong,
//! never how a front end reports it: `spindle-web` maps it to HTTP statuses for the page and to
//! JSON-RPC errors for `/acp` clients (`gateway::dispatch`), each in one place.

use std::fmt;

use spindle_protocol::AuthMethod;

/// Why a call into the session runtime was refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionError {
    /// No session, entry or request has this id.
    NotFound(String),
    /// The call itself is malformed: a missing or wrong parameter.
    InvalidParams(String),
    /// The session cannot do this now (a session exists already, the agent exited, the agent
    /// session is not open yet, a request was answered already).
    Conflict(String),
    /// The agent waits for the user to sign in with one of these methods.
    AuthRequired {
        /// The agent's sign-in methods, as its `initialize` answer gave them.
        methods: Vec<AuthMethod>,
    },
    /// The agent answered with an error (its code, when it gave one) or could not be reached.
    Agent {
        /// The agent's JSON-RPC error code, if it answered one.
        code: Option<i64>,
        /// What went wrong.
        message: String,
    },
    /// The agent did not answer in time.
    Timeout(String),
    /// The content was understood and refused (e.g. a file write the host cannot carry out).
    Refused(String),
    /// The database failed.
    Storage(String),
    /// The database does not accept writes and the in-memory backlog is full.
    StorageFull,
    /// This replica cannot serve the call now (another replica holds the session, draining).
    Unavailable(String),
    /// The session's task stopped.
    Gone,
    /// A bug: something the runtime relies on did not hold.
    Internal(String),
}

impl SessionError {
    /// The message a user reads.
    pub fn message(&self) -> String {
        match self {
            SessionError::NotFound(message)
            | SessionError::InvalidParams(message)
            | SessionError::Conflict(message)
            | SessionError::Timeout(message)
            | SessionError::Refused(message)
            | SessionError::Storage(message)
            | SessionError::Unavailable(message)
            | SessionError::Internal(message)
            | SessionError::Agent { message, .. } => message.clone(),
            SessionError::AuthRequired { .. } => "the agent needs authentication first: pick one \
                 of its sign-in methods, then send the prompt again"
                .to_string(),
            SessionError::StorageFull => "the database does not accept writes and as many lines \
                 as the server keeps in memory wait for it: prompts are refused until storage \
                 recovers"
                .to_string(),
            SessionError::Gone => "the session task stopped; restart the server".to_string(),
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> SessionError {
        SessionError::InvalidParams(message.into())
    }

    pub(crate) fn unavailable(message: impl Into<String>) -> SessionError {
        SessionError::Unavailable(message.into())
    }

    pub(crate) fn storage(error: crate::store::StoreError) -> SessionError {
        SessionError::Storage(error.to_string())
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for SessionError {}
