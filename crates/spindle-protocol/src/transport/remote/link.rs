//! What a remote link is made of: the options, errors and notices callers
//! see, and the pipes and reconnection pacing the transports share.

use std::time::Duration;

use tokio::io::DuplexStream;
use tokio::sync::mpsc;

use crate::transport::connection::{Connection, ConnectionOptions};

/// Which profile of the RFD to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RemoteProfile {
    /// `GET` with `Upgrade: websocket`: one text frame per message.
    #[default]
    WebSocket,
    /// `POST` per message, answers on `GET` event streams.
    Http,
}

impl std::str::FromStr for RemoteProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ws" | "websocket" => Ok(RemoteProfile::WebSocket),
            "http" | "sse" => Ok(RemoteProfile::Http),
            other => Err(format!("unknown transport {other:?} (ws or http)")),
        }
    }
}

/// How to reach the remote agent.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// The endpoint: `http(s)://host:port/acp` or `ws(s)://...`; a URL with
    /// no path gets `/acp`.
    pub url: String,
    /// The profile.
    pub profile: RemoteProfile,
    /// Extra headers on every request (e.g. `Authorization`).
    pub headers: Vec<(String, String)>,
    /// How long to keep trying to reach a server that went away before
    /// giving up (the connection then closes).
    pub reconnect_for: Duration,
    /// Opt into Spindle's multi-client extension (`session/attach`, roles,
    /// `_spindle/permission_resolved`) besides event ids.
    pub attach: bool,
}

impl RemoteOptions {
    /// Options for `url` with `profile` and the defaults.
    pub fn new(url: impl Into<String>, profile: RemoteProfile) -> RemoteOptions {
        RemoteOptions {
            url: url.into(),
            profile,
            headers: Vec::new(),
            reconnect_for: Duration::from_secs(30),
            attach: false,
        }
    }
}

/// Why a remote connection could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum RemoteError {
    /// The URL is not an http(s) or ws(s) URL.
    BadUrl(String),
    /// The HTTP client could not be built.
    Client(String),
    /// The server could not be reached or refused the connection.
    Connect(String),
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteError::BadUrl(e) => write!(f, "bad URL: {e}"),
            RemoteError::Client(e) => write!(f, "HTTP client: {e}"),
            RemoteError::Connect(e) => write!(f, "could not connect: {e}"),
        }
    }
}

impl std::error::Error for RemoteError {}

/// What happened to a remote connection, as it happens (for the user).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteNotice {
    /// A stream dropped; reconnecting.
    Reconnecting {
        /// What dropped and why.
        reason: String,
    },
    /// Reconnected and resumed where the stream left off (event ids).
    Resumed,
    /// Resumed past the server's buffer: it sent the session's history
    /// again (a snapshot), which was kept from the client.
    ResumedFromSnapshot {
        /// The session.
        session_id: String,
    },
    /// Reconnected without resumption: the server has no event ids, so
    /// messages sent meanwhile may be missing.
    ReconnectedWithoutResume,
    /// The server no longer knew the connection (it restarted): a new
    /// connection was opened and the sessions resumed or loaded.
    NewConnection {
        /// Sessions opened again.
        reopened: Vec<String>,
        /// Sessions the agent can neither resume nor load.
        lost: Vec<String>,
        /// Requests that were waiting and failed.
        failed_requests: usize,
    },
    /// Gave up: the connection is closed.
    Closed {
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for RemoteNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteNotice::Reconnecting { reason } => write!(f, "{reason}; reconnecting"),
            RemoteNotice::Resumed => f.write_str("reconnected; resumed where the stream left off"),
            RemoteNotice::ResumedFromSnapshot { session_id } => write!(
                f,
                "session {session_id}: the server no longer held what was missed and sent the \
                 session's history again (not shown twice); updates of the gap may be missing"
            ),
            RemoteNotice::ReconnectedWithoutResume => f.write_str(
                "reconnected, but the server cannot resume streams (no event ids): \
                 messages sent while disconnected may be missing",
            ),
            RemoteNotice::NewConnection {
                reopened,
                lost,
                failed_requests,
            } => {
                write!(f, "the server no longer knew the connection; reconnected")?;
                if !reopened.is_empty() {
                    write!(f, ", session {} opened again", reopened.join(", "))?;
                }
                if !lost.is_empty() {
                    write!(
                        f,
                        ", session {} lost (the agent can neither resume nor load it)",
                        lost.join(", ")
                    )?;
                }
                if *failed_requests > 0 {
                    write!(f, ", {failed_requests} request(s) in flight failed")?;
                }
                Ok(())
            }
            RemoteNotice::Closed { reason } => write!(f, "remote connection closed: {reason}"),
        }
    }
}

/// Notices of a remote connection (see [`RemoteNotice`]).
#[derive(Debug)]
pub struct RemoteNotices {
    pub(super) rx: mpsc::UnboundedReceiver<RemoteNotice>,
}

impl RemoteNotices {
    /// The next notice; `None` once the transport is gone.
    pub async fn recv(&mut self) -> Option<RemoteNotice> {
        self.rx.recv().await
    }

    /// A notice if one is ready.
    pub fn try_recv(&mut self) -> Option<RemoteNotice> {
        self.rx.try_recv().ok()
    }
}

/// A remote agent as a pair of byte streams (see the module docs).
#[derive(Debug)]
pub struct RemoteLink {
    /// Lines from the agent, one JSON-RPC message each.
    pub reader: DuplexStream,
    /// Lines to the agent; closing it ends the connection (`DELETE` /
    /// WebSocket close).
    pub writer: DuplexStream,
    /// What happens to the connection.
    pub notices: RemoteNotices,
}

impl RemoteLink {
    /// The [`Connection`] stdio would give, over this link.
    pub fn into_connection(self, options: ConnectionOptions) -> (Connection, RemoteNotices) {
        (
            Connection::from_io_with(self.reader, self.writer, options),
            self.notices,
        )
    }
}

/// The transport's ends of the link.
#[derive(Debug)]
pub(crate) struct Pipes {
    /// Lines for the client.
    pub to_client: DuplexStream,
    /// Lines from the client.
    pub from_client: DuplexStream,
    pub notices: mpsc::UnboundedSender<RemoteNotice>,
}

/// Waits before the `attempt`th reconnection (0-based): 50 ms doubling to 1 s.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis((50u64 << attempt.min(5)).min(1000))
}
