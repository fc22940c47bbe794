//! The requests of the HTTP+SSE profile, each done by a small task of its
//! own (reading the client's lines, one `POST`, one event stream), and the
//! [`Event`]s they report to the driver.

use futures_util::StreamExt;
use spindle_wire::remote::HEADER_CONNECTION_ID;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use super::super::book::Outgoing;
use super::parse::SseParser;

/// Which stream.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum StreamKey {
    Connection,
    Session(String),
}

impl std::fmt::Display for StreamKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamKey::Connection => f.write_str("the connection stream"),
            StreamKey::Session(id) => write!(f, "the stream of session {id}"),
        }
    }
}

/// How an event stream ended.
#[derive(Debug)]
pub(super) enum SseEnd {
    NotFound,
    Status(u16, String),
    Failed(String),
    Eof,
}

/// A queued POST: the client's message, or one of the transport's own.
#[derive(Debug)]
pub(super) enum Item {
    Client(Outgoing),
    /// `initialize` sent again to a server that lost the connection.
    Reinitialize(String),
    /// `session/resume` or `session/load` of a session on a new connection.
    Reopen {
        session_id: String,
        line: String,
    },
}

impl Item {
    pub(super) fn session_id(&self) -> Option<&str> {
        match self {
            Item::Client(o) => o.session_id.as_deref(),
            Item::Reinitialize(_) => None,
            Item::Reopen { session_id, .. } => Some(session_id),
        }
    }
}

/// What one `POST` got.
#[derive(Debug)]
pub(super) enum PostOutcome {
    /// 2xx, with the body and the connection id header (for `initialize`).
    Ok {
        body: String,
        connection_id: Option<String>,
    },
    Status(u16, String),
    Unreachable(String),
}

/// What the driver reacts to: the client's lines, the streams' events,
/// finished `POST`s and retry timers.
#[derive(Debug)]
pub(super) enum Event {
    Out(Option<String>),
    SseOpened(StreamKey, u64),
    Sse {
        key: StreamKey,
        generation: u64,
        id: String,
        data: String,
    },
    SseEnded(StreamKey, u64, SseEnd),
    RetryStream(StreamKey, u64),
    Posted {
        responses: bool,
        /// The connection generation the POST went out on.
        generation: u64,
        item: Item,
        outcome: PostOutcome,
    },
    RetryPosts,
}

/// Reads the client's lines until it closes them, reporting each line.
pub(super) async fn read_client_lines<R>(from_client: R, events: mpsc::Sender<Event>)
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut lines = BufReader::new(from_client).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        if events.send(Event::Out(Some(line))).await.is_err() {
            return;
        }
    }
    let _ = events.send(Event::Out(None)).await;
}

/// How long a request may wait for the server's answer (the headers; a
/// stream's body may last forever).
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Sends one `POST` and reads its answer.
pub(super) async fn post(request: reqwest::RequestBuilder) -> PostOutcome {
    let response = match tokio::time::timeout(ANSWER_WITHIN, request.send()).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return PostOutcome::Unreachable(error_chain(&e)),
        Err(_) => {
            return PostOutcome::Unreachable(format!("no answer within {ANSWER_WITHIN:?}"));
        }
    };
    let status = response.status();
    let connection_id = response
        .headers()
        .get(HEADER_CONNECTION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.text().await.unwrap_or_default();
    if status.is_success() {
        PostOutcome::Ok {
            body,
            connection_id,
        }
    } else {
        PostOutcome::Status(status.as_u16(), short(&body))
    }
}

/// Reads one event stream until it ends, reporting each event.
pub(super) async fn read_stream(
    request: reqwest::RequestBuilder,
    key: StreamKey,
    generation: u64,
    events: mpsc::Sender<Event>,
) {
    // A server that accepts the connection but never answers (a stale
    // listener, a proxy) must not hold the stream forever.
    let sent = tokio::time::timeout(ANSWER_WITHIN, request.send()).await;
    let end = match sent {
        Err(_) => SseEnd::Failed(format!("no answer within {ANSWER_WITHIN:?}")),
        Ok(Err(e)) => SseEnd::Failed(error_chain(&e)),
        Ok(Ok(response)) if response.status() == reqwest::StatusCode::NOT_FOUND => SseEnd::NotFound,
        Ok(Ok(response)) if !response.status().is_success() => {
            let status = response.status().as_u16();
            SseEnd::Status(status, short(&response.text().await.unwrap_or_default()))
        }
        Ok(Ok(response)) => {
            let _ = events.send(Event::SseOpened(key.clone(), generation)).await;
            let mut body = response.bytes_stream();
            let mut parser = SseParser::default();
            let mut ready = Vec::new();
            loop {
                match body.next().await {
                    None => break SseEnd::Eof,
                    Some(Err(e)) => break SseEnd::Failed(error_chain(&e)),
                    Some(Ok(bytes)) => {
                        if let Err(e) = parser.feed(&bytes, &mut ready) {
                            break SseEnd::Failed(e);
                        }
                        for message in ready.drain(..) {
                            if message.data.is_empty() {
                                continue;
                            }
                            let sent = events
                                .send(Event::Sse {
                                    key: key.clone(),
                                    generation,
                                    id: message.id,
                                    data: message.data,
                                })
                                .await;
                            if sent.is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        }
    };
    let _ = events.send(Event::SseEnded(key, generation, end)).await;
}

/// An error with its causes (reqwest's own message says little).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// At most 200 characters of a body, for a message.
pub(crate) fn short(body: &str) -> String {
    let body = body.trim();
    match body.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &body[..i]),
        None => body.to_owned(),
    }
}
