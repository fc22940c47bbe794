//! `/acp`: the remote ACP endpoint (RFD "Streamable HTTP & WebSocket transport"), with Spindle
//! as the agent toward remote clients and the sessions of `spindle serve` behind it.
//!
//! - `POST` carries client messages: `initialize` creates a connection and is answered `200`
//!   with the result and `Acp-Connection-Id`; everything else is answered `202` and its
//!   response comes on a stream.
//! - `GET` with `Accept: text/event-stream` opens the connection stream, or with
//!   `Acp-Session-Id` the session stream; for a peer that opted into `event_ids`, every event
//!   has an `id:` and `Last-Event-ID` resumes.
//! - `GET` with `Upgrade: websocket` carries both directions on one socket.
//! - `DELETE` ends the connection.
//!
//! The page's access checks (`security.rs`: Host, Origin, token) run in front of every request
//! (`routes.rs`); this module adds the RFD's header and content checks and the limits.

mod sse;
mod ws;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::stream::{self, StreamExt};
use serde_json::{Value, json};
use spindle_runtime::Gateway;
use spindle_runtime::gateway::conn::{Conn, ConnUser};
use spindle_runtime::gateway::streams::{self, Out};
use sse::SseEvent;

use crate::access::Principal;
use spindle_runtime::gateway::{conn, dispatch};
use spindle_runtime::hub::EventId;
use spindle_wire::remote::{
    ACP_PATH, EVENT_STREAM_MIME, HEADER_CONNECTION_ID, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID,
    JSON_MIME, MAX_POST_BODY,
};

/// The `/acp` router: the one route of the remote transport.
pub(crate) fn router(gateway: Gateway) -> Router {
    Router::new()
        .route(
            ACP_PATH,
            get(get_acp)
                .post(post)
                .delete(delete)
                .layer(DefaultBodyLimit::max(MAX_POST_BODY)),
        )
        .route_layer(axum::middleware::from_fn(crate::roles::require))
        .with_state(gateway)
}

/// The user a request was made by, as a connection records it (`None` outside the access
/// check, which only unit tests do).
fn conn_user(request: &Request) -> Option<ConnUser> {
    request
        .extensions()
        .get::<Principal>()
        .map(|Principal(user)| ConnUser {
            name: user.name.clone(),
            may_control: user.role.allows(crate::users::Role::Controller),
        })
}

/// Connection `id`, if it is `user`'s: another user's connection id is answered as unknown,
/// so a leaked id lets no one else read or steer it.
fn own_conn(state: &Gateway, id: &str, user: Option<&ConnUser>) -> Option<Arc<Conn>> {
    state
        .conns
        .get(id)
        .filter(|conn| user.is_none_or(|user| conn.user().is_none_or(|owner| owner == user)))
}

fn refuse(status: StatusCode, reason: &'static str) -> Response {
    (status, reason).into_response()
}

fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn json_rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body =
        json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } });
    (
        status,
        [(header::CONTENT_TYPE, JSON_MIME)],
        body.to_string(),
    )
        .into_response()
}

/// `POST /acp`.
async fn post(State(state): State<Gateway>, request: Request) -> Response {
    let headers = request.headers().clone();
    let user = conn_user(&request);
    let is_json = header_text(&headers, header::CONTENT_TYPE.as_str())
        .is_some_and(|v| v.split(';').next().is_some_and(|m| m.trim() == JSON_MIME));
    if !is_json {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    let declared = header_text(&headers, header::CONTENT_LENGTH.as_str())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_POST_BODY) {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is larger than 16 MiB",
        );
    }
    let body = match axum::body::to_bytes(request.into_body(), MAX_POST_BODY).await {
        Ok(body) => body,
        Err(_) => {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the body is larger than 16 MiB",
            );
        }
    };
    let message: Value = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(_) => return json_rpc_error(StatusCode::BAD_REQUEST, -32700, "the body is not JSON"),
    };
    if message.is_array() {
        return json_rpc_error(
            StatusCode::NOT_IMPLEMENTED,
            -32600,
            "JSON-RPC batches are not supported",
        );
    }
    if !message.is_object() {
        return json_rpc_error(StatusCode::BAD_REQUEST, -32600, "not a JSON-RPC message");
    }
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    let method = method.as_deref();
    let connection = header_text(&headers, HEADER_CONNECTION_ID);
    if method == Some(spindle_wire::client_methods::INITIALIZE) && connection.is_none() {
        return initialize(&state, &message, user);
    }
    let Some(connection) = connection else {
        return refuse(StatusCode::BAD_REQUEST, "Acp-Connection-Id header required");
    };
    let Some(conn) = own_conn(&state, connection, user.as_ref()) else {
        return refuse(StatusCode::NOT_FOUND, "unknown Acp-Connection-Id");
    };
    let mut message = message;
    if let Some(method) = method {
        let header_session = header_text(&headers, HEADER_SESSION_ID);
        let params = message.get("params").cloned().unwrap_or(json!({}));
        let param_session = params.get("sessionId").and_then(Value::as_str);
        match (header_session, param_session) {
            (Some(h), Some(p)) if h != p => {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "Acp-Session-Id does not match params.sessionId",
                );
            }
            (Some(h), None) if params.is_object() => {
                message["params"] = params;
                message["params"]["sessionId"] = Value::String(h.to_string());
            }
            (None, None) if dispatch::is_session_scoped(method) => {
                return refuse(StatusCode::BAD_REQUEST, "Acp-Session-Id header required");
            }
            _ => {}
        }
        let session = message.pointer("/params/sessionId").and_then(Value::as_str);
        if let Some(session) = session
            && dispatch::is_session_scoped(method)
        {
            let known = conn.attachment(session).is_some();
            let exists = session
                .parse::<i64>()
                .ok()
                .and_then(|n| state.manager.get_now(n))
                .is_some();
            if !exists || (!known && !dispatch::joins_session(method)) {
                return refuse(
                    StatusCode::NOT_FOUND,
                    "unknown Acp-Session-Id for this connection",
                );
            }
        }
    }
    conn.record_sent(&message);
    // The request's author (`--users`) reaches the spawned dispatch too.
    let author = spindle_runtime::acting::current_author();
    tokio::spawn(spindle_runtime::acting_as_owned(author, async move {
        dispatch::dispatch(&state, &conn, message).await;
    }));
    StatusCode::ACCEPTED.into_response()
}

fn initialize(state: &Gateway, message: &Value, user: Option<ConnUser>) -> Response {
    let Some(id) = message.get("id") else {
        return json_rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "initialize must be a request",
        );
    };
    let Some(conn) = state.conns.create_for(user) else {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, "too many /acp connections");
    };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let result = dispatch::initialize_result(state.protocol, &conn, &params);
    let body = json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string();
    conn.record_sent(message);
    conn.record_received(&body);
    let mut response = (StatusCode::OK, [(header::CONTENT_TYPE, JSON_MIME)], body).into_response();
    if let Ok(value) = HeaderValue::from_str(&conn.id) {
        response.headers_mut().insert(HEADER_CONNECTION_ID, value);
    }
    response
}

/// `GET /acp`: an SSE stream, or the WebSocket upgrade.
async fn get_acp(State(state): State<Gateway>, request: Request) -> Response {
    let upgrade = request
        .headers()
        .get(header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    let user = conn_user(&request);
    if upgrade {
        let (mut parts, _) = request.into_parts();
        return match axum::extract::ws::WebSocketUpgrade::from_request_parts(&mut parts, &state)
            .await
        {
            Ok(upgrade) => ws::upgrade(state, upgrade, user),
            Err(rejection) => rejection.into_response(),
        };
    }
    let headers = request.headers();
    let accepts = header_text(headers, header::ACCEPT.as_str())
        .is_some_and(|v| v.contains(EVENT_STREAM_MIME));
    if !accepts {
        return refuse(
            StatusCode::NOT_ACCEPTABLE,
            "GET must accept text/event-stream",
        );
    }
    let Some(connection) = header_text(headers, HEADER_CONNECTION_ID) else {
        return refuse(StatusCode::BAD_REQUEST, "Acp-Connection-Id header required");
    };
    let Some(conn) = own_conn(&state, connection, user.as_ref()) else {
        return refuse(StatusCode::NOT_FOUND, "unknown Acp-Connection-Id");
    };
    let last_event = header_text(headers, HEADER_LAST_EVENT_ID).map(str::to_string);
    let session = header_text(headers, HEADER_SESSION_ID).map(str::to_string);
    let mut response = match session {
        None => connection_stream(&conn, last_event.as_deref()),
        Some(session) => session_sse(&state, &conn, &session, last_event.as_deref()).await,
    };
    if let Ok(value) = HeaderValue::from_str(&conn.id) {
        response.headers_mut().insert(HEADER_CONNECTION_ID, value);
    }
    response
}

fn connection_stream(conn: &Arc<conn::Conn>, last_event: Option<&str>) -> Response {
    let last_seen = match last_event {
        None => None,
        Some(text) => match text.trim().parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => return refuse(StatusCode::BAD_REQUEST, "malformed Last-Event-ID"),
        },
    };
    let Some(receiver) = conn.subscribe_outbox(last_seen) else {
        return refuse(
            StatusCode::GONE,
            "the connection stream no longer holds the events after Last-Event-ID",
        );
    };
    let guard = conn.stream_opened();
    let closed = conn.closed.subscribe();
    let events = stream::unfold(
        (receiver, closed, guard),
        |(mut receiver, mut closed, guard)| async move {
            tokio::select! {
                entry = receiver.recv() => {
                    let (n, text) = entry?;
                    Some((SseEvent::Connection(n, text), (receiver, closed, guard)))
                }
                _ = closed.changed() => None,
            }
        },
    );
    sse::response(events, conn.opted_event_ids())
}

async fn session_sse(
    state: &Gateway,
    conn: &Arc<conn::Conn>,
    session: &str,
    last_event: Option<&str>,
) -> Response {
    let last_seen = match last_event {
        None => None,
        Some(text) => match EventId::parse(text) {
            Some(id) => Some(id),
            None => return refuse(StatusCode::BAD_REQUEST, "malformed Last-Event-ID"),
        },
    };
    let Some(live) = session
        .parse::<i64>()
        .ok()
        .and_then(|n| state.manager.get_now(n))
    else {
        return refuse(StatusCode::NOT_FOUND, "unknown Acp-Session-Id");
    };
    let mut guard = if conn.attachment(session).is_some() {
        conn.stream_opened()
    } else {
        // Opened before the `session/load` (or attach) that joins it: wait for that.
        let Some(guard) = conn.pending_stream(state.conns.limits.max_pending_streams) else {
            return refuse(
                StatusCode::NOT_FOUND,
                "unknown Acp-Session-Id for this connection",
            );
        };
        guard
    };
    let ids = conn.opted_event_ids();
    let conn = conn.clone();
    let recorder = conn.clone();
    let session = session.to_string();
    let waited = async move {
        let mut attached = conn.attached.subscribe();
        let mut closed = conn.closed.subscribe();
        loop {
            if conn.attachment(&session).is_some() {
                guard.confirm();
                break;
            }
            tokio::select! {
                changed = attached.changed() => if changed.is_err() { return None },
                _ = closed.changed() => return None,
                () = tokio::time::sleep(Duration::from_secs(60)) => return None,
            }
        }
        streams::session_stream(&conn, &session, &live, last_seen, guard)
    };
    let events = stream::once(waited)
        .filter_map(|s| async move { s })
        .flatten()
        .map(move |out| {
            if let Out::Message { text, .. } = &out {
                recorder.record_received(text);
            }
            SseEvent::Session(out)
        });
    sse::response(events, ids)
}

/// `DELETE /acp`.
async fn delete(State(state): State<Gateway>, request: Request) -> Response {
    let user = conn_user(&request);
    let Some(connection) = header_text(request.headers(), HEADER_CONNECTION_ID) else {
        return refuse(StatusCode::BAD_REQUEST, "Acp-Connection-Id header required");
    };
    if own_conn(&state, connection, user.as_ref()).is_none() {
        return refuse(StatusCode::NOT_FOUND, "unknown Acp-Connection-Id");
    }
    match state.conns.remove(connection) {
        Some(_) => StatusCode::ACCEPTED.into_response(),
        None => refuse(StatusCode::NOT_FOUND, "unknown Acp-Connection-Id"),
    }
}
