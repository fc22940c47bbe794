//! The WebSocket profile: `GET` with `Upgrade: websocket` through the same
//! reqwest client as HTTP (cookies, proxies, TLS roots shared), framing by
//! tungstenite, one text frame per message both ways.
//!
//! When the socket drops, a new one is opened and the client's
//! `initialize` is sent again (its answer kept from the client). Each open
//! session is then attached again from its last event id when the server
//! sent event ids (`_spindle/event_id`, Spindle's extension: nothing lost or
//! doubled), else resumed or loaded like after a server restart.

use futures_util::{SinkExt, StreamExt};
use spindle_wire::hash::{FxHashMap, FxHashSet};
use spindle_wire::remote::{
    EVENT_ID, EVENT_ID_COUNT, EVENT_ID_NOTIFICATION, HEADER_CONNECTION_ID, OPT_IN_ATTACH,
    OPT_IN_EVENT_ID_RUNS, OPT_IN_EVENT_IDS, STREAM_DROPPED,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::book::{Book, IncomingAction, one_line, with_remote_opt_in};
use super::link::{Pipes, RemoteError, RemoteNotice, RemoteOptions, backoff};
use super::sse::{error_chain, short};

/// An open WebSocket to the endpoint.
pub(crate) type Socket = WebSocketStream<reqwest::Upgraded>;

/// How long the upgrade may wait for the server's answer: a listener that
/// accepts and never answers (a stale process, a proxy) must not hold a
/// reconnection forever.
const UPGRADE_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// An open socket and the connection id the server gave it (the `101`
/// answer's `Acp-Connection-Id`, named by `previousConnectionId` after a
/// reconnect).
pub(crate) struct Opened {
    pub socket: Socket,
    pub connection_id: Option<String>,
}

/// Opens the WebSocket (the HTTP/1.1 upgrade, checked as RFC 6455 says).
pub(crate) async fn open(
    http: &reqwest::Client,
    url: &reqwest::Url,
) -> Result<Opened, RemoteError> {
    use tokio_tungstenite::tungstenite::handshake::client::generate_key;
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    let key = generate_key();
    let request = http
        .get(url.clone())
        .version(reqwest::Version::HTTP_11)
        .header(reqwest::header::CONNECTION, "Upgrade")
        .header(reqwest::header::UPGRADE, "websocket")
        .header(reqwest::header::SEC_WEBSOCKET_VERSION, "13")
        .header(reqwest::header::SEC_WEBSOCKET_KEY, &key)
        .send();
    let response = tokio::time::timeout(UPGRADE_WITHIN, request)
        .await
        .map_err(|_| RemoteError::Connect(format!("no answer within {UPGRADE_WITHIN:?}")))?
        .map_err(|e| RemoteError::Connect(error_chain(&e)))?;
    let status = response.status();
    if status != reqwest::StatusCode::SWITCHING_PROTOCOLS {
        let body = response.text().await.unwrap_or_default();
        return Err(RemoteError::Connect(format!(
            "the WebSocket upgrade was answered HTTP {status} {}",
            short(&body)
        )));
    }
    let expected = derive_accept_key(key.as_bytes());
    let accept = response
        .headers()
        .get(reqwest::header::SEC_WEBSOCKET_ACCEPT)
        .and_then(|v| v.to_str().ok());
    if accept != Some(expected.as_str()) {
        return Err(RemoteError::Connect(
            "the WebSocket upgrade answer has a wrong Sec-WebSocket-Accept".to_owned(),
        ));
    }
    let connection_id = response
        .headers()
        .get(HEADER_CONNECTION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if connection_id.is_none() {
        tracing::debug!("the WebSocket upgrade carried no {HEADER_CONNECTION_ID}");
    }
    let upgraded = response
        .upgrade()
        .await
        .map_err(|e| RemoteError::Connect(error_chain(&e)))?;
    Ok(Opened {
        socket: WebSocketStream::from_raw_socket(upgraded, Role::Client, None).await,
        connection_id,
    })
}

/// What the socket loop ended with.
enum Ended {
    /// The client closed its side: the socket was closed.
    ClientDone,
    /// The client is gone (its reader closed).
    ClientGone,
    /// The socket dropped.
    Dropped(String),
}

struct Driver {
    book: Book,
    options: RemoteOptions,
    to_client: tokio::io::DuplexStream,
    notices: tokio::sync::mpsc::UnboundedSender<RemoteNotice>,
    /// The last event id per session (Spindle's event ids) of a message
    /// that arrived.
    last_event_ids: FxHashMap<String, String>,
    /// How many of the next messages the last announcement still covers
    /// (`_spindle/event_id` comes before a message, or before a run of
    /// `count` of them): the announced id counts once its message arrived,
    /// or once the next announcement shows it stood alone (a position
    /// mark); then the next message of a run has the next id. Their session
    /// and the current id are in `announced_buffers`.
    announced: u64,
    /// The session and id of the last announcement (kept to reuse their allocations).
    announced_buffers: Option<(String, String)>,
    /// After a reconnection: the id of the transport's own `initialize`,
    /// whose answer is kept from the client.
    own_initialize_id: Option<String>,
    /// The server's id of the open socket's connection.
    connection_id: Option<String>,
    /// After a reconnection: the transport's `session/attach` that asked to
    /// take over the closed connection's answers (`previousConnectionId`),
    /// until it is answered.
    takeover: Option<Takeover>,
    /// Lines to send on the socket once the frame being read is handled.
    resend: Vec<String>,
    out: Vec<u8>,
}

/// A `session/attach` with `previousConnectionId` waiting for its answer.
struct Takeover {
    /// Its id (JSON text).
    id: String,
    /// The same request without `previousConnectionId`: sent when the
    /// server refuses the takeover, so the session is attached anyway.
    plain_line: String,
    /// The client's requests that were waiting when the socket dropped:
    /// their answers come on the new socket once the server takes the old
    /// connection over; they fail if it refuses.
    waiting: Vec<String>,
}

pub(crate) async fn run(
    http: reqwest::Client,
    url: reqwest::Url,
    options: RemoteOptions,
    opened: Opened,
    pipes: Pipes,
) {
    let Pipes {
        to_client,
        from_client,
        notices,
    } = pipes;
    let mut lines = BufReader::new(from_client).lines();
    let mut driver = Driver::new(options, to_client, notices, opened.connection_id);
    let mut socket = opened.socket;
    loop {
        match driver.pump(&mut socket, &mut lines).await {
            Ended::ClientDone => {
                let _ = socket.close(None).await;
                break;
            }
            Ended::ClientGone => break,
            Ended::Dropped(reason) => {
                driver.notice(RemoteNotice::Reconnecting {
                    reason: format!("the WebSocket dropped: {reason}"),
                });
                match driver.reconnect(&http, &url).await {
                    Some(s) => socket = s,
                    None => break,
                }
            }
        }
    }
    let _ = driver.flush().await;
    let _ = driver.to_client.shutdown().await;
}

impl Driver {
    /// A driver that has seen nothing yet, on the connection `connection_id`.
    fn new(
        options: RemoteOptions,
        to_client: tokio::io::DuplexStream,
        notices: tokio::sync::mpsc::UnboundedSender<RemoteNotice>,
        connection_id: Option<String>,
    ) -> Driver {
        Driver {
            book: Book::default(),
            options,
            to_client,
            notices,
            last_event_ids: FxHashMap::default(),
            announced: 0,
            announced_buffers: None,
            own_initialize_id: None,
            connection_id,
            takeover: None,
            resend: Vec::new(),
            out: Vec::new(),
        }
    }

    fn notice(&self, notice: RemoteNotice) {
        let _ = self.notices.send(notice);
    }

    fn opt_ins(&self) -> Vec<&'static str> {
        let mut names = vec![
            OPT_IN_EVENT_IDS,
            OPT_IN_EVENT_ID_RUNS,
            spindle_wire::remote::OPT_IN_SESSION_CWD,
        ];
        if self.options.attach {
            names.push(OPT_IN_ATTACH);
        }
        names
    }

    async fn flush(&mut self) -> bool {
        if self.out.is_empty() {
            return true;
        }
        let ok = self.to_client.write_all(&self.out).await.is_ok();
        self.out.clear();
        ok
    }

    /// Carries messages both ways until one side ends.
    async fn pump<R>(
        &mut self,
        socket: &mut Socket,
        lines: &mut tokio::io::Lines<BufReader<R>>,
    ) -> Ended
    where
        R: tokio::io::AsyncRead + Unpin,
    {
        loop {
            tokio::select! {
                // While the takeover attach waits for its answer the
                // client's lines wait too: if it is refused, the session is
                // attached only by the plain attach sent then, and a prompt
                // for a session the connection has not attached is answered
                // where this client does not listen.
                line = lines.next_line(), if self.takeover.is_none() => {
                    let Ok(Some(line)) = line else { return Ended::ClientDone };
                    if line.trim().is_empty() {
                        continue;
                    }
                    let out = self.book.outgoing(line);
                    let text = if out.is_initialize() {
                        with_remote_opt_in(&out.line, &self.opt_ins())
                    } else {
                        out.line
                    };
                    if let Err(e) = socket.send(WsMessage::text(text)).await {
                        return Ended::Dropped(error_chain(&e));
                    }
                }
                frame = socket.next() => {
                    match frame {
                        None => return Ended::Dropped("closed by the server".to_owned()),
                        Some(Err(e)) => return Ended::Dropped(error_chain(&e)),
                        Some(Ok(WsMessage::Text(text))) => {
                            if self.incoming(text.as_str()) {
                                return Ended::Dropped("the server dropped this client (it fell behind)".to_owned());
                            }
                            // Deliver what else is ready in one write.
                            while let Some(Some(Ok(WsMessage::Text(text)))) =
                                futures_util::FutureExt::now_or_never(socket.next())
                            {
                                if self.incoming(text.as_str()) {
                                    return Ended::Dropped("the server dropped this client (it fell behind)".to_owned());
                                }
                            }
                            if !self.flush().await {
                                return Ended::ClientGone;
                            }
                            for line in std::mem::take(&mut self.resend) {
                                if let Err(e) = socket.send(WsMessage::text(line)).await {
                                    return Ended::Dropped(error_chain(&e));
                                }
                            }
                        }
                        Some(Ok(WsMessage::Close(frame))) => {
                            let why = frame.map(|f| f.reason.to_string()).unwrap_or_default();
                            return Ended::Dropped(format!("closed by the server {why}").trim().to_owned());
                        }
                        // Binary frames are ignored (the RFD); pings are
                        // answered by tungstenite.
                        Some(Ok(_)) => {}
                    }
                }
            }
        }
    }

    /// One text frame from the server; `true` when the server says it
    /// dropped this client.
    fn incoming(&mut self, text: &str) -> bool {
        tracing::trace!(target: "spindle_protocol::remote", "ws <- {text}");
        if let Some((session, id, count)) = spindle_event_id_notice(text) {
            self.event_id_announced(session, id, count);
            return false;
        }
        if text.contains("_spindle/") {
            #[derive(serde::Deserialize)]
            struct Probe {
                method: Option<String>,
                params: Option<serde_json::Value>,
            }
            if let Ok(Probe {
                method: Some(method),
                params,
            }) = serde_json::from_str::<Probe>(text)
            {
                if method == EVENT_ID_NOTIFICATION {
                    let params = params.unwrap_or_default();
                    let session = params
                        .get(spindle_wire::client_methods::fields::SESSION_ID)
                        .and_then(|v| v.as_str());
                    let id = params.get(EVENT_ID).map(|v| match v {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    });
                    let count = params
                        .get(EVENT_ID_COUNT)
                        .map_or(Some(1), serde_json::Value::as_u64)
                        .filter(|&n| n >= 1);
                    match (session, id, count) {
                        (Some(session), Some(id), Some(count)) => {
                            self.event_id_announced(session, &id, count)
                        }
                        _ => self.commit_announced(),
                    }
                    return false;
                }
                if method == STREAM_DROPPED {
                    return true;
                }
            }
        }
        if self
            .takeover
            .as_ref()
            .is_some_and(|t| is_response_to(text, &t.id))
        {
            self.takeover_answered(text);
            return false;
        }
        if let Some(own) = &self.own_initialize_id
            && is_response_to(text, own)
        {
            self.book.initialize_answered(text);
            self.own_initialize_id = None;
            return false;
        }
        match self.book.incoming(text) {
            IncomingAction::Deliver => one_line(text, &mut self.out),
            IncomingAction::Replace(line) => one_line(&line, &mut self.out),
            IncomingAction::Swallow => {}
        }
        // The announced id was this message's (the last of a snapshot, if
        // one is being sent, is still kept from the client above).
        self.commit_announced();
        false
    }

    /// The answer to the `session/attach` that named the closed connection.
    /// Taken over: the waiting requests' answers come on this socket.
    /// Refused (a server that does not keep closed connections, or one that
    /// restarted): they fail, and the session is attached without it.
    fn takeover_answered(&mut self, text: &str) {
        let Some(takeover) = self.takeover.take() else {
            return;
        };
        if !text.contains("\"error\"") {
            // The book still routes the answer of its own request.
            if self.book.incoming(text) != IncomingAction::Swallow {
                tracing::debug!("an unexpected answer to the takeover attach: {text}");
            }
            return;
        }
        tracing::debug!("the server refused previousConnectionId: {text}");
        let mut failed = 0;
        for id in &takeover.waiting {
            if let Some(line) = self.book.fail_request(id, TAKEOVER_REFUSED) {
                one_line(&line, &mut self.out);
                failed += 1;
            }
        }
        if failed > 0 {
            self.notice(RemoteNotice::Reconnecting {
                reason: format!(
                    "the server could not hand this connection the old socket's answers: \
                     {failed} request(s) in flight failed"
                ),
            });
        }
        self.resend.push(takeover.plain_line);
    }

    /// A `_spindle/event_id` notice: `id` belongs to the next message of `session`, and the
    /// `count - 1` messages after it have the next ids (an earlier announced id whose message
    /// never came is committed first, as before).
    fn event_id_announced(&mut self, session: &str, id: &str, count: u64) {
        self.commit_announced();
        let other_generation = self
            .last_event_ids
            .get(session)
            .is_some_and(|last| generation(last) != generation(id));
        self.book.event_id_announced(session, other_generation);
        // The strings of the last announcement are reused: one notice comes before every
        // message of a session stream.
        let (announced_session, announced_id) = self.announced_buffers.get_or_insert_default();
        announced_session.clear();
        announced_session.push_str(session);
        announced_id.clear();
        announced_id.push_str(id);
        self.announced = count;
    }

    fn commit_announced(&mut self) {
        if self.announced == 0 {
            return;
        }
        self.announced -= 1;
        let Some((session, id)) = self.announced_buffers.as_ref() else {
            return;
        };
        if self.book.event_id_seen(session) {
            self.notice(RemoteNotice::ResumedFromSnapshot {
                session_id: session.clone(),
            });
        }
        match self.last_event_ids.get_mut(session.as_str()) {
            Some(last) => {
                last.clear();
                last.push_str(id);
            }
            None => {
                self.last_event_ids.insert(session.clone(), id.clone());
            }
        }
        if self.announced > 0
            && let Some((_, id)) = self.announced_buffers.as_mut()
            && !next_event_id(id)
        {
            // Not a `G-N` id: the run cannot go on (Spindle's server sends only those).
            self.announced = 0;
        }
    }

    /// Opens a new socket (retrying for `reconnect_for`), sends
    /// `initialize` again and opens the sessions again.
    async fn reconnect(&mut self, http: &reqwest::Client, url: &reqwest::Url) -> Option<Socket> {
        let started = Instant::now();
        let mut attempt = 0;
        let opened = loop {
            match open(http, url).await {
                Ok(opened) => break opened,
                Err(e) if started.elapsed() < self.options.reconnect_for => {
                    tracing::debug!("WebSocket reconnect failed: {e}");
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                Err(e) => {
                    self.fatal(&format!("could not reconnect: {e}")).await;
                    return None;
                }
            }
        };
        let mut socket = opened.socket;
        let previous_connection_id =
            std::mem::replace(&mut self.connection_id, opened.connection_id);
        self.takeover = None;
        let Some(init) = self.book.initialize_line().map(str::to_owned) else {
            // Nothing was said yet: a fresh socket is all it takes.
            return Some(socket);
        };
        self.announced = 0;
        let resumable = !self.last_event_ids.is_empty();
        // Requests in flight were asked on the old socket, which was the
        // connection: their answers are addressed to it. A server with
        // Spindle's event ids hands them to this one when the first attach
        // names the old connection (`previousConnectionId`); they wait for
        // that. Without event ids (or a connection id) they are gone.
        let takeover_from = previous_connection_id.filter(|_| resumable);
        let failed = if takeover_from.is_some() {
            Vec::new()
        } else {
            self.book.fail_pending(
                "the WebSocket dropped and the server cannot resume (no event ids): the \
                 request was not answered",
                &FxHashSet::default(),
            )
        };
        let failed_requests = failed.len();
        for line in failed {
            one_line(&line, &mut self.out);
        }
        self.own_initialize_id = json_id(&init);
        let init = with_remote_opt_in(&init, &self.opt_ins());
        if socket.send(WsMessage::text(init)).await.is_err() {
            self.fatal("the new WebSocket dropped at once").await;
            return None;
        }
        let (reopen, lost) = if resumable {
            let (reopen, lost) = self
                .book
                .reattach_sessions(&self.last_event_ids, takeover_from.as_deref());
            if let Some(first) = reopen.first()
                && let Some(previous) = &takeover_from
                && let Some(id) = json_id(&first.line)
            {
                self.takeover = Some(Takeover {
                    id,
                    plain_line: without_previous_connection_id(&first.line),
                    waiting: self.book.pending_ids(),
                });
                tracing::debug!("reattaching; taking over connection {previous}");
            } else if takeover_from.is_some() {
                // No session to attach: nothing can carry the takeover.
                for line in self
                    .book
                    .fail_pending(TAKEOVER_REFUSED, &FxHashSet::default())
                {
                    one_line(&line, &mut self.out);
                }
            }
            (reopen, lost)
        } else {
            self.book.reopen_sessions()
        };
        let reopened: Vec<String> = reopen.iter().map(|r| r.session_id.clone()).collect();
        for session in &reopened {
            if self.last_event_ids.contains_key(session) {
                self.book.await_event_id(session);
            }
        }
        for r in reopen {
            if socket.send(WsMessage::text(r.line)).await.is_err() {
                self.fatal("the new WebSocket dropped at once").await;
                return None;
            }
        }
        if resumable {
            // Requests that failed say why in their own error.
            self.notice(RemoteNotice::Resumed);
        } else {
            self.notice(RemoteNotice::NewConnection {
                reopened,
                lost,
                failed_requests,
            });
        }
        Some(socket)
    }

    async fn fatal(&mut self, reason: &str) {
        for line in self.book.fail_pending(reason, &FxHashSet::default()) {
            one_line(&line, &mut self.out);
        }
        let _ = self.flush().await;
        self.notice(RemoteNotice::Closed {
            reason: reason.to_owned(),
        });
    }
}

/// Why a request waiting on a dropped socket fails when the new connection
/// could not take over the old one's answers.
const TAKEOVER_REFUSED: &str = "the WebSocket dropped while this request was waiting and the \
     server could not hand its answer to the new connection (previousConnectionId refused)";

/// A `session/attach` line without `params.previousConnectionId`.
/// The session, event id and count of a `_spindle/event_id` notice exactly as Spindle's server
/// writes it (one comes before every session message of a peer that opted into event ids, or
/// before every run of them with `count`), read without a JSON parse. `None` for any other text, including a notice written otherwise
/// (escapes, other member order or spacing): the general path reads those.
fn spindle_event_id_notice(text: &str) -> Option<(&str, &str, u64)> {
    let rest = text.strip_prefix(r#"{"jsonrpc":"2.0","method":""#)?;
    let rest = rest.strip_prefix(EVENT_ID_NOTIFICATION)?;
    let rest = rest.strip_prefix(r#"","params":{"sessionId":""#)?;
    let (session, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(r#",""#)?;
    let rest = rest.strip_prefix(EVENT_ID)?;
    let rest = rest.strip_prefix(r#"":""#)?;
    let (id, rest) = rest.split_once('"')?;
    if session.contains('\\') || id.contains('\\') {
        return None;
    }
    if rest == "}}" {
        return Some((session, id, 1));
    }
    // A run: `,"count":K}}` with K a plain number of at least 2.
    let count = rest
        .strip_prefix(r#",""#)?
        .strip_prefix(EVENT_ID_COUNT)?
        .strip_prefix(r#"":"#)?
        .strip_suffix("}}")?;
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) || count.starts_with('0') {
        return None;
    }
    Some((session, id, count.parse().ok().filter(|&n| n >= 2)?))
}

fn without_previous_connection_id(line: &str) -> String {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(line) else {
        return line.to_owned();
    };
    if let Some(params) = value.get_mut("params").and_then(|p| p.as_object_mut()) {
        params.remove(spindle_wire::remote::PREVIOUS_CONNECTION_ID);
    }
    value.to_string()
}

/// Moves a Spindle event id (`GENERATION-N`) on to `GENERATION-(N+1)`, in place; `false` (and
/// unchanged) for any other text.
fn next_event_id(id: &mut String) -> bool {
    let Some((generation, counter)) = id.split_once('-') else {
        return false;
    };
    let Some(next) = counter.parse::<u64>().ok().and_then(|n| n.checked_add(1)) else {
        return false;
    };
    let keep = generation.len() + 1;
    id.truncate(keep);
    use std::fmt::Write as _;
    let _ = write!(id, "{next}");
    true
}

/// The generation part of a Spindle event id (`GENERATION-N`; a plain
/// number is its own generation).
fn generation(event_id: &str) -> &str {
    event_id.split_once('-').map_or(event_id, |(g, _)| g)
}

fn json_id(line: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_str::<Probe<'_>>(line)
        .ok()?
        .id
        .map(|id| id.get().to_owned())
}

fn is_response_to(text: &str, id: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_str::<Probe<'_>>(text)
        .is_ok_and(|p| p.method.is_none() && p.id.is_some_and(|i| i.get() == id))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the general path reads from a notice: its session, id and count.
    fn by_json(text: &str) -> Option<(String, String, u64)> {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        if value["method"] != EVENT_ID_NOTIFICATION {
            return None;
        }
        let params = &value["params"];
        Some((
            params["sessionId"].as_str()?.to_owned(),
            params[EVENT_ID].as_str()?.to_owned(),
            params.get(EVENT_ID_COUNT).map_or(Some(1), |c| c.as_u64())?,
        ))
    }

    #[test]
    fn the_notice_fast_path_reads_what_json_reads_or_leaves_it_to_the_general_path() {
        let cases: &[(&str, bool)] = &[
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"sessionId":"12","eventId":"4-99"}}"#,
                true,
            ),
            // An escaped session id, another member order, spacing, a trailing member,
            // another method, a cut line: all left to the general path.
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"sessionId":"a\"b","eventId":"4-99"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"eventId":"4-99","sessionId":"12"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc": "2.0","method":"_spindle/event_id","params":{"sessionId":"12","eventId":"4-99"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"sessionId":"12","eventId":"4-99","x":1}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_idx","params":{"sessionId":"12","eventId":"4-99"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"sessionId":"12","eventId":"4-9"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"12"}}"#,
                false,
            ),
            // Runs: a count of 2 or more as the server writes it; anything else about the
            // count is left to the general path.
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"sessionId":"12","eventId":"4-99","count":256}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"sessionId":"12","eventId":"4-99","count":1}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"sessionId":"12","eventId":"4-99","count":02}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"sessionId":"12","eventId":"4-99","count":-3}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"_spindle/event_id","params":{"sessionId":"12","eventId":"4-99","count":3.0}}"#,
                false,
            ),
        ];
        for (text, fast) in cases {
            let read = spindle_event_id_notice(text);
            assert_eq!(read.is_some(), *fast, "{text}");
            if let Some((session, id, count)) = read {
                assert_eq!(
                    Some((session.to_owned(), id.to_owned(), count)),
                    by_json(text),
                    "{text}"
                );
            }
        }
    }

    fn driver() -> Driver {
        let (to_client, _reader) = tokio::io::duplex(1 << 20);
        let (notices, _) = tokio::sync::mpsc::unbounded_channel();
        let options = RemoteOptions {
            url: "ws://127.0.0.1:1/acp".into(),
            profile: super::super::link::RemoteProfile::WebSocket,
            headers: Vec::new(),
            reconnect_for: std::time::Duration::ZERO,
            attach: false,
        };
        Driver::new(options, to_client, notices, None)
    }

    fn notice(id: &str, count: Option<u64>) -> String {
        let count = count
            .map(|c| format!(r#","count":{c}"#))
            .unwrap_or_default();
        format!(
            r#"{{"jsonrpc":"2.0","method":"_spindle/event_id","params":{{"sessionId":"s","eventId":"{id}"{count}}}}}"#
        )
    }

    /// Each case: the frames the server sends (`N`: a notice of `N`'s id; `N*K`: of a run of
    /// `K` from it, `N*K~` the same written otherwise (the general path); `m`: a session
    /// message), and the last event id after each frame.
    #[tokio::test]
    async fn a_run_gives_each_of_its_messages_the_next_id() {
        let message = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#;
        let cases: &[(&str, &[&str])] = &[
            // One notice per message, as before runs.
            ("7-1 m 7-2 m", &["", "7-1", "7-1", "7-2"]),
            // A run of three, then a plain notice.
            (
                "7-10*3 m m m 7-13 m",
                &["", "7-10", "7-11", "7-12", "7-12", "7-13"],
            ),
            // The general path reads the count too.
            ("7-10*3~ m m m", &["", "7-10", "7-11", "7-12"]),
            // A run cut short by the next notice: its next id stands alone, as a mark did.
            ("7-10*3 m 7-20 m", &["", "7-10", "7-11", "7-20"]),
            // A mark (a notice with no message) before a run.
            ("7-5 7-6*2 m m", &["", "7-5", "7-6", "7-7"]),
            // The counter's digits grow within a run.
            ("3-99*2 m m", &["", "3-99", "3-100"]),
        ];
        for (frames, expected) in cases {
            let mut d = driver();
            let mut seen = Vec::new();
            for frame in frames.split(' ') {
                let text = if frame == "m" {
                    message.to_owned()
                } else if let Some(general) = frame.strip_suffix('~') {
                    let (id, count) = general.split_once('*').unwrap();
                    format!(
                        r#"{{"params":{{"count":{count},"eventId":"{id}","sessionId":"s"}},"method":"_spindle/event_id","jsonrpc":"2.0"}}"#
                    )
                } else if let Some((id, count)) = frame.split_once('*') {
                    notice(id, Some(count.parse().unwrap()))
                } else {
                    notice(frame, None)
                };
                assert!(!d.incoming(&text), "{frames}");
                seen.push(d.last_event_ids.get("s").cloned().unwrap_or_default());
            }
            assert_eq!(&seen, expected, "{frames}");
        }
    }

    #[test]
    fn an_event_id_moves_on_by_one_or_not_at_all() {
        for (id, next) in [
            ("4-9", Some("4-10")),
            ("12-0", Some("12-1")),
            ("4", None),
            ("4-x", None),
            ("4-18446744073709551615", None),
        ] {
            let mut text = id.to_owned();
            assert_eq!(next_event_id(&mut text), next.is_some(), "{id}");
            assert_eq!(text, next.unwrap_or(id), "{id}");
        }
    }
}
