//! Remote transports (feature `remote`): an agent behind the ACP endpoint of
//! the RFD "Streamable HTTP & WebSocket transport" (`/acp`), reached over
//! HTTP+SSE or WebSocket.
//!
//! [`connect_remote`] gives a [`RemoteLink`]: a pair of byte streams
//! carrying newline-delimited JSON-RPC, exactly what a child's stdio gives.
//! [`RemoteLink::into_connection`] puts the same [`Connection`] on them as
//! [`spawn_child`](super::spawn_child) does, so the client core, the
//! engine, diagnostics and recordings see no difference; a front end that
//! stores raw lines (the web server's agent link) reads the streams itself.
//!
//! - HTTP+SSE: every message is a `POST`; `initialize` is answered `200`
//!   with `Acp-Connection-Id`, the rest `202` with the answer on a stream.
//!   The connection stream and one stream per session are `GET`s with
//!   `Accept: text/event-stream`; `DELETE` ends the connection.
//! - WebSocket: one text frame per message both ways.
//!
//! When a stream drops, the transport reconnects. A server with Spindle's
//! event ids (SSE `id:`) is asked to resume with `Last-Event-ID`, so nothing
//! is lost or doubled. A server that no longer knows the connection (it
//! restarted) gets the client's `initialize` again and each open session is
//! resumed (`session/resume`) or loaded (`session/load`, the replay kept
//! from the client); requests that were waiting fail with a clear error.
//! Each such event is a [`RemoteNotice`].

mod book;
mod sse;
mod websocket;

use std::time::Duration;

use tokio::io::DuplexStream;
use tokio::sync::mpsc;

use super::connection::{Connection, ConnectionOptions};

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
    rx: mpsc::UnboundedReceiver<RemoteNotice>,
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

/// Bytes buffered in each direction between the transport and its reader.
const PIPE_BYTES: usize = 256 * 1024;

/// The endpoint URL: `/acp` added to a URL with no path; for `profile`,
/// the scheme the request goes out with (ws -> http, wss -> https).
pub(crate) fn endpoint_url(url: &str) -> Result<reqwest::Url, RemoteError> {
    let mut parsed =
        reqwest::Url::parse(url).map_err(|e| RemoteError::BadUrl(format!("{url}: {e}")))?;
    let scheme = match parsed.scheme() {
        "http" | "ws" => "http",
        "https" | "wss" => "https",
        other => {
            return Err(RemoteError::BadUrl(format!(
                "{url}: scheme {other:?} (http, https, ws or wss)"
            )));
        }
    };
    parsed
        .set_scheme(scheme)
        .map_err(|()| RemoteError::BadUrl(url.to_owned()))?;
    if parsed.path().is_empty() || parsed.path() == "/" {
        parsed.set_path(spindle_wire::remote::ACP_PATH);
    }
    Ok(parsed)
}

fn http_client(options: &RemoteOptions) -> Result<reqwest::Client, RemoteError> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &options.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| RemoteError::Client(format!("header {name:?}: {e}")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| RemoteError::Client(format!("header {name}: {e}")))?;
        headers.insert(name, value);
    }
    reqwest::Client::builder()
        .cookie_store(true)
        .default_headers(headers)
        .http1_only()
        // Small messages (a prompt POST, a WebSocket frame) go out at once,
        // not held by Nagle's algorithm until the peer's delayed ACK (tens
        // of ms per turn). reqwest's default today; said here so it stays.
        // The WebSocket runs on the same connector's socket (the upgrade).
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| RemoteError::Client(e.to_string()))
}

/// Connects to a remote agent. For WebSocket the upgrade happens here (so an
/// unreachable server is an error now); for HTTP the first request is the
/// client's `initialize`.
pub async fn connect_remote(options: RemoteOptions) -> Result<RemoteLink, RemoteError> {
    let url = endpoint_url(&options.url)?;
    let http = http_client(&options)?;
    let (reader, transport_in) = tokio::io::duplex(PIPE_BYTES);
    let (transport_out, writer) = tokio::io::duplex(PIPE_BYTES);
    let (notice_tx, rx) = mpsc::unbounded_channel();
    let pipes = Pipes {
        to_client: transport_in,
        from_client: transport_out,
        notices: notice_tx,
    };
    match options.profile {
        RemoteProfile::WebSocket => {
            let opened = websocket::open(&http, &url).await?;
            tokio::spawn(websocket::run(http, url, options, opened, pipes));
        }
        RemoteProfile::Http => {
            tokio::spawn(sse::run(http, url, options, pipes));
        }
    }
    Ok(RemoteLink {
        reader,
        writer,
        notices: RemoteNotices { rx },
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_get_acp_and_http_schemes() {
        let cases = [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/acp"),
            ("ws://127.0.0.1:8080/", "http://127.0.0.1:8080/acp"),
            ("wss://h/agent", "https://h/agent"),
            ("https://h/acp?token=x", "https://h/acp?token=x"),
        ];
        for (given, expected) in cases {
            assert_eq!(endpoint_url(given).unwrap().as_str(), expected);
        }
        assert!(matches!(
            endpoint_url("ftp://h/acp"),
            Err(RemoteError::BadUrl(_))
        ));
        assert!(matches!(
            endpoint_url("not a url"),
            Err(RemoteError::BadUrl(_))
        ));
        assert_eq!("ws".parse(), Ok(RemoteProfile::WebSocket));
        assert_eq!("http".parse(), Ok(RemoteProfile::Http));
        assert!("tcp".parse::<RemoteProfile>().is_err());
    }
}
