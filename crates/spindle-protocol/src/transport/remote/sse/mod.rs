//! The HTTP+SSE profile: one task owning the state (the [`Book`], the
//! queues of POSTs, the streams), fed [`Event`]s by small tasks that each
//! do one request.
//!
//! Order: the client's requests and notifications are POSTed one at a time,
//! in order, and a message naming a session waits until that session's
//! stream is open (so nothing the server sends for it can be missed); the
//! client's answers to the server's requests go on a queue of their own, so
//! an answer never waits behind the request that is waiting for it.
//!
//! This file is the driver (its state and how it reacts to each event);
//! the requests themselves and the events they report are in `requests.rs`.

mod parse;
mod requests;

use std::collections::VecDeque;
use std::time::Instant;

use spindle_wire::hash::{FxHashMap, FxHashSet};
use spindle_wire::remote::{
    EVENT_STREAM_MIME, HEADER_CONNECTION_ID, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME,
    OPT_IN_EVENT_IDS, STREAM_DROPPED,
};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::book::{Book, IncomingAction, error_response, one_line, with_remote_opt_in};
use super::link::{Pipes, RemoteNotice, RemoteOptions, backoff};
use requests::{Event, Item, PostOutcome, SseEnd, StreamKey, post, read_client_lines, read_stream};
pub(crate) use requests::{error_chain, short};

#[derive(Debug)]
enum StreamState {
    Opening,
    Open,
    /// Waiting to open again (after a drop).
    Retrying,
    /// The server does not know it (a session that failed to open).
    Refused,
}

#[derive(Debug)]
struct Stream {
    state: StreamState,
    /// The last SSE `id:` (Spindle's event ids); sent back as
    /// `Last-Event-ID` when the stream is opened again.
    last_event_id: Option<String>,
    dropped_at: Option<Instant>,
    attempt: u32,
}

struct Driver {
    http: reqwest::Client,
    url: reqwest::Url,
    options: RemoteOptions,
    to_client: tokio::io::DuplexStream,
    notices: mpsc::UnboundedSender<RemoteNotice>,
    events: mpsc::Sender<Event>,
    book: Book,
    connection_id: Option<String>,
    /// Bumped with every new connection; events of older ones are ignored.
    generation: u64,
    streams: FxHashMap<StreamKey, Stream>,
    ordered: VecDeque<Item>,
    responses: VecDeque<Item>,
    ordered_busy: bool,
    responses_busy: bool,
    /// Ids of the client's requests being POSTed now: whether the server
    /// took one is known only once its POST is answered, so a new
    /// connection neither fails nor resends them before that.
    in_flight: FxHashSet<String>,
    /// POSTs wait for the server to come back (since when, and how many
    /// retries so far: the wait between them grows).
    unreachable_since: Option<Instant>,
    post_attempt: u32,
    posts_retry_scheduled: bool,
    client_done: bool,
    /// Opening a new connection: the notice is sent once the sessions are
    /// queued again.
    failed_requests: usize,
    out: Vec<u8>,
}

pub(crate) async fn run(
    http: reqwest::Client,
    url: reqwest::Url,
    options: RemoteOptions,
    pipes: Pipes,
) {
    let (tx, mut rx) = mpsc::channel(EVENT_QUEUE);
    let Pipes {
        to_client,
        from_client,
        notices,
    } = pipes;
    tokio::spawn(read_client_lines(from_client, tx.clone()));
    let mut driver = Driver {
        http,
        url,
        options,
        to_client,
        notices,
        events: tx,
        book: Book::default(),
        connection_id: None,
        generation: 0,
        streams: FxHashMap::default(),
        ordered: VecDeque::new(),
        responses: VecDeque::new(),
        ordered_busy: false,
        responses_busy: false,
        in_flight: FxHashSet::default(),
        unreachable_since: None,
        post_attempt: 0,
        posts_retry_scheduled: false,
        client_done: false,
        failed_requests: 0,
        out: Vec::new(),
    };
    while let Some(event) = rx.recv().await {
        let mut keep_going = driver.handle(event).await;
        // Deliver what else is ready in one write.
        while keep_going && let Ok(event) = rx.try_recv() {
            keep_going = driver.handle(event).await;
        }
        if keep_going {
            keep_going = driver.flush().await;
        }
        if !keep_going {
            break;
        }
        if driver.client_done
            && driver.ordered.is_empty()
            && driver.responses.is_empty()
            && !driver.ordered_busy
            && !driver.responses_busy
        {
            break;
        }
    }
    driver.close().await;
}

/// Events waiting for the driver; a full queue holds the streams back (the
/// server's TCP window then holds the agent's output back).
const EVENT_QUEUE: usize = 1024;

impl Driver {
    /// Handles one event; `false` ends the transport.
    async fn handle(&mut self, event: Event) -> bool {
        match event {
            Event::Out(Some(line)) => {
                let out = self.book.outgoing(line);
                if out.is_response {
                    self.responses.push_back(Item::Client(out));
                } else {
                    self.ordered.push_back(Item::Client(out));
                }
            }
            Event::Out(None) => self.client_done = true,
            Event::SseOpened(key, generation) if generation == self.generation => {
                if let Some(stream) = self.streams.get_mut(&key) {
                    if stream.dropped_at.take().is_some() {
                        let notice = if stream.last_event_id.is_some() {
                            RemoteNotice::Resumed
                        } else {
                            RemoteNotice::ReconnectedWithoutResume
                        };
                        let _ = self.notices.send(notice);
                    }
                    stream.state = StreamState::Open;
                    stream.attempt = 0;
                }
            }
            Event::Sse {
                key,
                generation,
                id,
                data,
            } if generation == self.generation => {
                // The last id is kept on events without one (as EventSource
                // does, `parse.rs`): an id-carrying event is one whose id
                // changed.
                let mut new_id = false;
                if !id.is_empty()
                    && let Some(stream) = self.streams.get_mut(&key)
                    && stream.last_event_id.as_deref() != Some(id.as_str())
                {
                    stream.last_event_id = Some(id);
                    new_id = true;
                }
                if data.contains(STREAM_DROPPED) && is_notification(&data, STREAM_DROPPED) {
                    // The server dropped this stream (we fell behind): it
                    // ends, and is opened again from the last event id.
                    return true;
                }
                match self.book.incoming(&data) {
                    IncomingAction::Deliver => one_line(&data, &mut self.out),
                    IncomingAction::Replace(line) => one_line(&line, &mut self.out),
                    IncomingAction::Swallow => {}
                }
                if new_id
                    && let StreamKey::Session(session_id) = &key
                    && self.book.event_id_seen(session_id)
                {
                    self.notice(RemoteNotice::ResumedFromSnapshot {
                        session_id: session_id.clone(),
                    });
                }
                for session_id in self.book.take_opened_sessions() {
                    self.open_stream(StreamKey::Session(session_id));
                }
            }
            Event::SseEnded(key, generation, end) if generation == self.generation => {
                // No early return on success: a stream that ended may have
                // queued a new `initialize` (the server lost the connection),
                // and only `start_posts` below sends it. Returning here left
                // it queued until the client happened to send a line.
                if !self.stream_ended(key, end).await {
                    return false;
                }
            }
            Event::RetryStream(key, generation) if generation == self.generation => {
                if matches!(
                    self.streams.get(&key).map(|s| &s.state),
                    Some(StreamState::Retrying)
                ) {
                    self.start_stream(key);
                }
            }
            Event::Posted {
                responses,
                generation,
                item,
                outcome,
            } => {
                if responses {
                    self.responses_busy = false;
                } else {
                    self.ordered_busy = false;
                }
                if let Item::Client(o) = &item
                    && let Some(id) = &o.id
                {
                    self.in_flight.remove(id);
                }
                if generation != self.generation {
                    self.posted_to_a_lost_connection(responses, item, outcome);
                } else if !self.posted(responses, item, outcome).await {
                    return false;
                }
            }
            Event::RetryPosts => self.posts_retry_scheduled = false,
            // Events of an older connection.
            Event::SseOpened(..)
            | Event::Sse { .. }
            | Event::SseEnded(..)
            | Event::RetryStream(..) => {}
        }
        self.start_posts();
        true
    }

    /// Writes what was collected for the client.
    async fn flush(&mut self) -> bool {
        if self.out.is_empty() {
            return true;
        }
        let ok = self.to_client.write_all(&self.out).await.is_ok();
        self.out.clear();
        ok
    }

    fn notice(&self, notice: RemoteNotice) {
        let _ = self.notices.send(notice);
    }

    fn open_stream(&mut self, key: StreamKey) {
        if self.streams.contains_key(&key) {
            return;
        }
        self.streams.insert(
            key.clone(),
            Stream {
                state: StreamState::Opening,
                last_event_id: None,
                dropped_at: None,
                attempt: 0,
            },
        );
        self.start_stream(key);
    }

    fn start_stream(&mut self, key: StreamKey) {
        let Some(connection_id) = self.connection_id.clone() else {
            return;
        };
        let Some(stream) = self.streams.get_mut(&key) else {
            return;
        };
        stream.state = StreamState::Opening;
        let mut request = self
            .http
            .get(self.url.clone())
            .header(reqwest::header::ACCEPT, EVENT_STREAM_MIME)
            .header(HEADER_CONNECTION_ID, connection_id);
        if let StreamKey::Session(id) = &key {
            request = request.header(HEADER_SESSION_ID, id.as_str());
        }
        if let Some(last) = &stream.last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last.as_str());
        }
        tokio::spawn(read_stream(
            request,
            key,
            self.generation,
            self.events.clone(),
        ));
    }

    async fn stream_ended(&mut self, key: StreamKey, end: SseEnd) -> bool {
        if self.client_done {
            return true;
        }
        let reason = match end {
            SseEnd::NotFound if key == StreamKey::Connection => {
                return self.new_connection().await;
            }
            SseEnd::NotFound => {
                if let Some(stream) = self.streams.get_mut(&key) {
                    stream.state = StreamState::Refused;
                }
                return true;
            }
            SseEnd::Status(410, _) => {
                // Past the server's buffer: open it again from now.
                if let Some(stream) = self.streams.get_mut(&key) {
                    stream.last_event_id = None;
                }
                format!("{key} could not be resumed (past the server's buffer)")
            }
            SseEnd::Status(status, body) if (400..500).contains(&status) => {
                self.fatal(&format!("{key} was refused: HTTP {status} {body}"))
                    .await;
                return false;
            }
            SseEnd::Status(status, body) => format!("{key} failed: HTTP {status} {body}"),
            SseEnd::Failed(error) => format!("{key} dropped: {error}"),
            SseEnd::Eof => format!("{key} ended"),
        };
        let Some(stream) = self.streams.get_mut(&key) else {
            return true;
        };
        let since = *stream.dropped_at.get_or_insert_with(Instant::now);
        if since.elapsed() > self.options.reconnect_for {
            self.fatal(&format!("{reason}; gave up reconnecting")).await;
            return false;
        }
        let first = stream.attempt == 0;
        stream.state = StreamState::Retrying;
        let wait = backoff(stream.attempt);
        stream.attempt += 1;
        if first {
            self.notice(RemoteNotice::Reconnecting { reason });
        }
        let events = self.events.clone();
        let generation = self.generation;
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let _ = events.send(Event::RetryStream(key, generation)).await;
        });
        true
    }

    /// Starts the next POST of each queue when it may go.
    fn start_posts(&mut self) {
        if self.posts_retry_scheduled {
            return;
        }
        if !self.responses_busy
            && self.connection_id.is_some()
            && let Some(item) = self.responses.pop_front()
        {
            self.responses_busy = true;
            self.spawn_post(true, item);
        }
        if self.ordered_busy {
            return;
        }
        let Some(front) = self.ordered.front() else {
            return;
        };
        let initializing = matches!(front, Item::Reinitialize(_))
            || matches!(front, Item::Client(o) if o.is_initialize());
        if !initializing {
            if self.connection_id.is_none() {
                return;
            }
            // Answers to requests come on the connection stream, a
            // session's on its own: open before asking.
            if !self.stream_ready(&StreamKey::Connection) {
                return;
            }
            if let Some(session_id) = front.session_id().map(str::to_owned) {
                // A message for a session being opened again waits for the
                // answer, not just the 202: the server joins the session
                // when it handles the request, and a prompt POSTed before
                // that is refused 404, which read as a lost connection (a
                // second new connection, the restart test's 4th initialize).
                if matches!(front, Item::Client(_)) && self.book.reopening(&session_id) {
                    return;
                }
                let key = StreamKey::Session(session_id);
                if !self.streams.contains_key(&key) {
                    self.open_stream(key.clone());
                }
                if !self.stream_ready(&key) {
                    return;
                }
            }
        }
        let item = self.ordered.pop_front().expect("front exists");
        self.ordered_busy = true;
        self.spawn_post(false, item);
    }

    fn stream_ready(&self, key: &StreamKey) -> bool {
        matches!(
            self.streams.get(key).map(|s| &s.state),
            Some(StreamState::Open | StreamState::Refused)
        )
    }

    fn spawn_post(&mut self, responses: bool, item: Item) {
        if let Item::Client(o) = &item
            && let Some(id) = &o.id
        {
            self.in_flight.insert(id.clone());
        }
        let (line, session_id) = match &item {
            Item::Client(o) if o.is_initialize() => {
                (with_remote_opt_in(&o.line, &self.opt_ins()), None)
            }
            Item::Client(o) => (o.line.clone(), o.session_id.clone()),
            Item::Reinitialize(line) => (with_remote_opt_in(line, &self.opt_ins()), None),
            Item::Reopen { session_id, line } => (line.clone(), Some(session_id.clone())),
        };
        let mut request = self
            .http
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, JSON_MIME)
            .header(
                reqwest::header::ACCEPT,
                format!("{JSON_MIME}, {EVENT_STREAM_MIME}"),
            )
            .body(line);
        if let Some(id) = &self.connection_id {
            request = request.header(HEADER_CONNECTION_ID, id.as_str());
        }
        if let Some(session_id) = session_id {
            request = request.header(HEADER_SESSION_ID, session_id);
        }
        let events = self.events.clone();
        let generation = self.generation;
        tokio::spawn(async move {
            let outcome = post(request).await;
            let _ = events
                .send(Event::Posted {
                    responses,
                    generation,
                    item,
                    outcome,
                })
                .await;
        });
    }

    fn opt_ins(&self) -> Vec<&'static str> {
        let mut names = vec![OPT_IN_EVENT_IDS, spindle_wire::remote::OPT_IN_SESSION_CWD];
        if self.options.attach {
            names.push(spindle_wire::remote::OPT_IN_ATTACH);
        }
        names
    }

    async fn posted(&mut self, responses: bool, item: Item, outcome: PostOutcome) -> bool {
        let queue = if responses {
            &mut self.responses
        } else {
            &mut self.ordered
        };
        match outcome {
            PostOutcome::Ok {
                body,
                connection_id,
            } => {
                self.unreachable_since = None;
                self.post_attempt = 0;
                match item {
                    Item::Client(o) if o.is_initialize() => {
                        return self.initialized(body, connection_id, true).await;
                    }
                    Item::Reinitialize(_) => {
                        return self.initialized(body, connection_id, false).await;
                    }
                    _ => {}
                }
            }
            PostOutcome::Status(404, _) if self.connection_id.is_some() => {
                queue.push_front(item);
                return self.new_connection().await;
            }
            PostOutcome::Status(status, body) => {
                let message = format!("the server answered HTTP {status} {body}");
                match item {
                    Item::Client(o) if o.is_initialize() => {
                        self.fatal(&format!("initialize failed: {message}")).await;
                        return false;
                    }
                    Item::Client(o) => {
                        if let Some(id) = &o.id {
                            // The request will not be answered: say why.
                            let line = error_response(id, &message);
                            self.book.incoming(&line);
                            one_line(&line, &mut self.out);
                        }
                    }
                    Item::Reinitialize(_) => {
                        self.fatal(&format!("reconnecting failed: {message}")).await;
                        return false;
                    }
                    Item::Reopen { session_id, .. } => {
                        self.notice(RemoteNotice::Closed {
                            reason: format!(
                                "session {session_id} could not be opened again: {message}"
                            ),
                        });
                    }
                }
            }
            PostOutcome::Unreachable(error) => {
                let since = *self.unreachable_since.get_or_insert_with(Instant::now);
                if since.elapsed() > self.options.reconnect_for {
                    self.fatal(&format!("the server is unreachable: {error}"))
                        .await;
                    return false;
                }
                queue.push_front(item);
                self.posts_retry_scheduled = true;
                let wait = backoff(self.post_attempt);
                self.post_attempt += 1;
                let events = self.events.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    let _ = events.send(Event::RetryPosts).await;
                });
            }
        }
        true
    }

    /// The answer to `initialize` (the client's, delivered; or the
    /// transport's own after a restart, kept).
    async fn initialized(
        &mut self,
        body: String,
        connection_id: Option<String>,
        deliver: bool,
    ) -> bool {
        if deliver {
            self.book.incoming(&body);
            one_line(&body, &mut self.out);
        }
        let Some(connection_id) = connection_id else {
            if deliver && body.contains("\"error\"") {
                // Refused: the client reads why; nothing more to do.
                return true;
            }
            self.fatal(&format!("the server did not return {HEADER_CONNECTION_ID}"))
                .await;
            return false;
        };
        self.connection_id = Some(connection_id);
        self.open_stream(StreamKey::Connection);
        if !deliver {
            let (reopen, lost) = self.book.reopen_sessions();
            let reopened: Vec<String> = reopen.iter().map(|r| r.session_id.clone()).collect();
            for r in reopen.into_iter().rev() {
                self.ordered.push_front(Item::Reopen {
                    session_id: r.session_id,
                    line: r.line,
                });
            }
            let failed_requests = std::mem::take(&mut self.failed_requests);
            self.notice(RemoteNotice::NewConnection {
                reopened,
                lost,
                failed_requests,
            });
        }
        true
    }

    /// The server no longer knows the connection: requests in flight fail,
    /// `initialize` goes again, then the sessions are opened again.
    async fn new_connection(&mut self) -> bool {
        if self.book.initialize_line().is_none() {
            self.fatal("the server does not know the connection").await;
            return false;
        }
        self.generation += 1;
        self.connection_id = None;
        self.streams.clear();
        let queued: FxHashSet<String> = self
            .ordered
            .iter()
            .chain(self.responses.iter())
            .filter_map(|item| match item {
                Item::Client(o) => o.id.clone(),
                _ => None,
            })
            .chain(self.in_flight.iter().cloned())
            .collect();
        self.ordered
            .retain(|item| !matches!(item, Item::Reinitialize(_) | Item::Reopen { .. }));
        let failed = self.book.fail_pending(LOST_CONNECTION, &queued);
        self.failed_requests += failed.len();
        for line in failed {
            one_line(&line, &mut self.out);
        }
        let line = self.book.initialize_line().unwrap_or_default().to_owned();
        self.ordered.push_front(Item::Reinitialize(line));
        true
    }

    /// A POST that went out on a connection the server has since lost (a
    /// new one is open or on its way: no other one is started, which used
    /// to send `initialize` a second time). Refused or never delivered: the
    /// server did not take it, so a message of the client goes to the new
    /// connection, after the transport's own `initialize` and reopenings;
    /// an answer to a request of the old connection is dropped with it.
    /// Taken: the request's answer went to the lost connection, so it fails.
    fn posted_to_a_lost_connection(&mut self, responses: bool, item: Item, outcome: PostOutcome) {
        let Item::Client(o) = item else {
            // The transport's own items of the old connection: the new
            // connection sends its own.
            return;
        };
        match outcome {
            PostOutcome::Ok { .. } => {
                if let Some(id) = &o.id
                    && let Some(line) = self.book.fail_request(id, LOST_CONNECTION)
                {
                    self.failed_requests += 1;
                    one_line(&line, &mut self.out);
                }
            }
            _ if responses => {}
            _ => {
                let at = self
                    .ordered
                    .iter()
                    .position(|i| matches!(i, Item::Client(_)))
                    .unwrap_or(self.ordered.len());
                self.ordered.insert(at, Item::Client(o));
            }
        }
    }

    async fn fatal(&mut self, reason: &str) {
        let failed = self.book.fail_pending(reason, &FxHashSet::default());
        for line in failed {
            one_line(&line, &mut self.out);
        }
        let _ = self.flush().await;
        self.notice(RemoteNotice::Closed {
            reason: reason.to_owned(),
        });
    }

    /// Ends the connection (`DELETE`); the client's reader then sees the end.
    async fn close(mut self) {
        let _ = self.flush().await;
        if let Some(id) = self.connection_id.take() {
            let request = self
                .http
                .delete(self.url.clone())
                .header(HEADER_CONNECTION_ID, id);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), request.send()).await;
        }
        let _ = self.to_client.shutdown().await;
    }
}

/// Why a request waiting when the server lost the connection fails.
const LOST_CONNECTION: &str =
    "the remote server lost the connection (did it restart?): the request was not answered";

fn is_notification(data: &str, method: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    serde_json::from_str::<Probe<'_>>(data).is_ok_and(|p| p.method == Some(method))
}
