//! The WebSocket profile: one socket per connection, JSON-RPC text frames both ways. The
//! connection id is in the `101` answer; `initialize` must still be the first message. Every
//! attached session's stream and the connection's own messages are merged onto the socket; a
//! peer that opted into event ids gets `_spindle/event_id` before each session message (or, with
//! `event_id_runs`, before each run of them in one write, with their `count`) and resumes with
//! `resumeFrom` in `session/attach`.
//!
//! A socket that does not keep up stops being read from the session hubs; the hub drops it,
//! the peer is told (`_spindle/stream_dropped`) and the socket is closed.

use std::pin::Pin;
use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use futures_util::SinkExt;
use futures_util::stream::{SelectAll, Stream, StreamExt};
use serde_json::{Value, json};
use spindle_wire::remote::{HEADER_CONNECTION_ID, MAX_POST_BODY};

use spindle_runtime::Gateway;
use spindle_runtime::gateway::conn::{Conn, ConnUser, OptIns};
use spindle_runtime::gateway::dispatch;
use spindle_runtime::gateway::streams::{self, EventIdNotices, Out};

/// A session's stream with its event id notices (the session id is not copied per message).
type SessionOut = Pin<Box<dyn Stream<Item = (Arc<EventIdNotices>, Out)> + Send>>;

pub(crate) fn upgrade(
    state: Gateway,
    upgrade: WebSocketUpgrade,
    user: Option<ConnUser>,
) -> Response {
    let Some(conn) = state.conns.create_for(user) else {
        return (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "too many /acp connections",
        )
            .into_response();
    };
    let id = conn.id.clone();
    // The connection's user (`--users`) is the author of what it asks.
    let author = spindle_runtime::acting::current_author();
    let mut response = upgrade
        .max_message_size(MAX_POST_BODY)
        .on_upgrade(move |socket| {
            spindle_runtime::acting_as_owned(author, run(state, conn, socket))
        })
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER_CONNECTION_ID, value);
    }
    response
}

async fn send(socket: &mut WebSocket, text: &str) -> bool {
    socket
        .send(Message::Text(text.to_string().into()))
        .await
        .is_ok()
}

/// Queues a text frame without writing it out yet ([`flush`] writes what is queued).
async fn feed(socket: &mut WebSocket, text: &str) -> bool {
    feed_owned(socket, text.to_string()).await
}

/// [`feed`] of a text the caller built for it (no copy).
async fn feed_owned(socket: &mut WebSocket, text: String) -> bool {
    socket.feed(Message::Text(text.into())).await.is_ok()
}

async fn flush(socket: &mut WebSocket) -> bool {
    socket.flush().await.is_ok()
}

/// At most this many messages are queued on the socket before it is written out.
const FRAMES_PER_WRITE: usize = 256;

/// Queues one item of a session stream (a peer that opted in gets `_spindle/event_id` before
/// each message that has an id); `false` when the socket is done.
async fn feed_session_out(
    socket: &mut WebSocket,
    conn: &Conn,
    opted: OptIns,
    notices: &EventIdNotices,
    out: Out,
) -> bool {
    match out {
        Out::Message { id, text } => {
            conn.record_received(&text);
            if let Some(id) = id.filter(|_| opted.event_ids)
                && !feed_owned(socket, notices.notice(id)).await
            {
                return false;
            }
            feed(socket, &text).await
        }
        Out::Mark(id) => !opted.event_ids || feed_owned(socket, notices.notice(id)).await,
        Out::Comment(_) => {
            // Only "dropped" ends a live stream with a comment: the socket is behind, so it
            // is closed (the peer reconnects and resumes).
            let _ = socket
                .send(Message::Close(Some(CloseFrame {
                    code: 1013,
                    reason: "this client fell behind".into(),
                })))
                .await;
            false
        }
    }
}

/// Queues the items of one write. A peer that opted into `event_id_runs` gets one
/// `_spindle/event_id` (with `count`) before each run of a session's messages whose ids go on by
/// one; any other item is queued as [`feed_session_out`] does.
async fn feed_session_items(
    socket: &mut WebSocket,
    conn: &Conn,
    items: Vec<(Arc<EventIdNotices>, Out)>,
) -> bool {
    let opted = conn.opt_ins();
    let mut items = items.into_iter().peekable();
    while let Some((notices, out)) = items.next() {
        let (id, text) = match out {
            Out::Message { id: Some(id), text } if opted.event_ids && opted.event_id_runs => {
                (id, text)
            }
            other => {
                if !feed_session_out(socket, conn, opted, &notices, other).await {
                    return false;
                }
                continue;
            }
        };
        let mut run = vec![text];
        while let Some((next_notices, Out::Message { id: Some(next), .. })) = items.peek()
            && Arc::ptr_eq(next_notices, &notices)
            && next.generation == id.generation
            && next.counter == id.counter + run.len() as u64
        {
            if let Some((_, Out::Message { text, .. })) = items.next() {
                run.push(text);
            }
        }
        if !feed_owned(socket, notices.run_notice(id, run.len())).await {
            return false;
        }
        for text in run {
            conn.record_received(&text);
            if !feed(socket, &text).await {
                return false;
            }
        }
    }
    true
}

async fn run(state: Gateway, conn: Arc<Conn>, mut socket: WebSocket) {
    let guard = conn.stream_opened();
    let Some(mut outbox) = conn.subscribe_outbox(None) else {
        return;
    };
    let mut sessions: SelectAll<SessionOut> = SelectAll::new();
    let mut closed = conn.closed.subscribe();
    let mut initialized = false;
    // Keepalive: a ping when nothing else was sent for a while (intermediaries close idle
    // sockets; a dead peer shows up as a failed send).
    let mut keepalive = tokio::time::interval(spindle_runtime::gateway::KEEPALIVE);
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    keepalive.tick().await;
    loop {
        tokio::select! {
            _ = keepalive.tick() => {
                if socket.send(Message::Ping(Vec::new().into())).await.is_err() { break }
            }
            incoming = socket.recv() => {
                let text = match incoming {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    // Binary frames are ignored (RFD); pings are answered by axum.
                    Some(Ok(_)) => continue,
                };
                let message: Value = match serde_json::from_str::<Value>(text.as_str()) {
                    Ok(value) if value.is_object() => value,
                    Ok(_) => {
                        let error = json!({"jsonrpc": "2.0", "id": null, "error": {
                            "code": -32600, "message": "batches are not supported" }});
                        if !send(&mut socket, &error.to_string()).await { break }
                        continue;
                    }
                    Err(_) => {
                        let error = json!({"jsonrpc": "2.0", "id": null, "error": {
                            "code": -32700, "message": "the message is not JSON" }});
                        if !send(&mut socket, &error.to_string()).await { break }
                        continue;
                    }
                };
                conn.record_sent(&message);
                let method = message.get("method").and_then(Value::as_str);
                if method == Some(spindle_wire::client_methods::INITIALIZE) {
                    let params = message.get("params").cloned().unwrap_or(Value::Null);
                    let result = dispatch::initialize_result(state.protocol, &conn, &params);
                    initialized = true;
                    let answer = json!({"jsonrpc": "2.0", "id": message.get("id"), "result": result});
                    conn.record_received(&answer.to_string());
                    if !send(&mut socket, &answer.to_string()).await { break }
                    continue;
                }
                if !initialized {
                    let answer = json!({"jsonrpc": "2.0", "id": message.get("id"), "error": {
                        "code": -32600, "message": "initialize must come first" }});
                    if !send(&mut socket, &answer.to_string()).await { break }
                    continue;
                }
                for session in dispatch::dispatch(&state, &conn, message).await {
                    open_session(&state, &conn, &session, &mut sessions);
                }
            }
            entry = outbox.recv() => {
                let Some((_, text)) = entry else { break };
                let mut sent = feed(&mut socket, &text).await;
                // What else is waiting goes out in the same write.
                let mut queued = 1;
                while sent && queued < FRAMES_PER_WRITE
                    && let Ok((_, text)) = outbox.try_recv()
                {
                    sent = feed(&mut socket, &text).await;
                    queued += 1;
                }
                if !sent || !flush(&mut socket).await { break }
            }
            Some(first) = sessions.next(), if !sessions.is_empty() => {
                // Connection messages queued first go first: a `session/new` answer is queued
                // before its session's stream may send.
                let mut sent = true;
                while sent && let Ok((_, text)) = outbox.try_recv() {
                    sent = feed(&mut socket, &text).await;
                }
                if !sent { break }
                // What the sessions have ready goes out in the same write.
                let mut items = vec![first];
                while items.len() < FRAMES_PER_WRITE
                    && let Some(Some(item)) = sessions.next().now_or_never()
                {
                    items.push(item);
                }
                if !feed_session_items(&mut socket, &conn, items).await
                    || !flush(&mut socket).await
                {
                    break;
                }
            }
            _ = closed.changed() => break,
        }
    }
    drop(guard);
    // The socket is the connection: it ends with it.
    state.conns.remove(&conn.id);
}

fn open_session(
    state: &Gateway,
    conn: &Arc<Conn>,
    session: &str,
    sessions: &mut SelectAll<SessionOut>,
) {
    let Some(live) = session
        .parse::<i64>()
        .ok()
        .and_then(|n| state.manager.get_now(n))
    else {
        return;
    };
    let guard = conn.stream_opened();
    if let Some(stream) = streams::session_stream(conn, session, &live, None, guard) {
        let notices = Arc::new(EventIdNotices::new(session));
        sessions.push(Box::pin(stream.map(move |out| (notices.clone(), out))));
    }
}
