//! The HTTP surface: a fixed route table (no file-system paths, so no traversal), the access
//! checks of [`crate::security`] in front of every route, and the security headers on every answer.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, patch, post};
use futures_util::stream::{self, Stream, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api;
use crate::errors::WebError;
use crate::extract::{AppState, SessionId, SessionRoute, body_refusal};
use spindle_runtime::hub::{EventId, Frame};
use spindle_wire::remote::ROLE;

/// Every route of the page, in one table: what a browser can reach is exactly this and `/acp`
/// (`crate::acp`). No route takes a command to run: terminals are created only by the agent's
/// `terminal/create`.
fn routes() -> Vec<(&'static str, MethodRouter<AppState>)> {
    vec![
        ("/", get(index)),
        ("/favicon.svg", get(favicon)),
        ("/favicon.ico", get(favicon)),
        ("/theme.js", get(theme_js)),
        ("/shortcuts.js", get(shortcuts_js)),
        ("/app.js", get(app_js)),
        ("/markdown.js", get(markdown_js)),
        ("/composer.js", get(composer_js)),
        ("/queue.js", get(queue_js)),
        ("/panels.js", get(panels_js)),
        ("/newsession.js", get(newsession_js)),
        ("/lifecycle.js", get(lifecycle_js)),
        ("/checkpoints.js", get(checkpoints_js)),
        ("/people.js", get(people_js)),
        ("/cards.js", get(cards_js)),
        ("/entries.js", get(entries_js)),
        ("/window.js", get(window_js)),
        ("/range.js", get(range_js)),
        ("/model.js", get(model_js)),
        ("/search.js", get(search_js)),
        ("/feed.js", get(feed_js)),
        ("/worker.js", get(worker_js)),
        ("/dom.js", get(dom_js)),
        ("/ops.js", get(ops_js)),
        ("/trees.js", get(trees_js)),
        ("/inspector.js", get(inspector_js)),
        ("/inspector.css", get(inspector_css)),
        ("/app.css", get(app_css)),
        ("/transcript.css", get(transcript_css)),
        ("/api/me", get(me)),
        (
            "/api/sessions",
            get(list_sessions).post(api::create_session),
        ),
        ("/api/agents", get(api::agents)),
        ("/api/mcp-servers", get(api::mcp_servers)),
        ("/api/agent-sessions", get(api::agent_sessions)),
        (
            "/api/sessions/{id}",
            patch(api::rename_session).delete(api::delete_session),
        ),
        ("/api/sessions/{id}/events", get(events)),
        ("/api/sessions/{id}/fork", post(api::fork_session)),
        ("/api/sessions/{id}/logout", post(api::logout)),
        (
            "/api/sessions/{id}/checkpoints",
            get(crate::checkpoint_routes::list),
        ),
        (
            "/api/sessions/{id}/checkpoints/{checkpoint}/diff",
            get(crate::checkpoint_routes::diff),
        ),
        (
            "/api/sessions/{id}/checkpoints/{checkpoint}/restore",
            post(crate::checkpoint_routes::restore),
        ),
        (
            "/api/sessions/{id}/prompt",
            post(api::prompt).layer(DefaultBodyLimit::max(api::MAX_PROMPT_BODY)),
        ),
        ("/api/sessions/{id}/cancel", post(cancel)),
        ("/api/sessions/{id}/queue", get(crate::queue_routes::list)),
        (
            "/api/sessions/{id}/queue/{item}",
            patch(crate::queue_routes::edit).delete(crate::queue_routes::remove),
        ),
        (
            "/api/sessions/{id}/queue/{item}/send-now",
            post(crate::queue_routes::send_now),
        ),
        ("/api/sessions/{id}/permission", post(permission)),
        ("/api/sessions/{id}/elicitation", post(elicitation)),
        (
            "/api/sessions/{id}/permission/forget",
            post(api::forget_permission),
        ),
        ("/api/sessions/{id}/agent", get(api::agent)),
        ("/api/sessions/{id}/authenticate", post(api::authenticate)),
        ("/api/sessions/{id}/mode", post(api::mode)),
        ("/api/sessions/{id}/config", post(api::config)),
        ("/api/sessions/{id}/files", get(api::files)),
        ("/api/sessions/{id}/review", post(api::review)),
        ("/api/sessions/{id}/replies", get(replies)),
        ("/api/sessions/{id}/transcript", get(transcript)),
        ("/api/sessions/{id}/entries", get(entries)),
        ("/api/sessions/{id}/snapshot", get(snapshot)),
        ("/api/sessions/{id}/stats", get(stats)),
        (
            "/api/sessions/{id}/wire",
            get(crate::wire_routes::wire_page),
        ),
        (
            "/api/sessions/{id}/wire/events",
            get(crate::wire_routes::wire_events),
        ),
        (
            "/api/sessions/{id}/wire/{seq}",
            get(crate::wire_routes::wire_line),
        ),
        (
            "/api/sessions/{id}/rendered",
            post(crate::markdown_routes::rendered_batch),
        ),
        (
            "/api/sessions/{id}/entries/{entry}/rendered",
            get(crate::markdown_routes::rendered_entry),
        ),
    ]
}

/// The page's router (the access check and the fallback are added by the server, around every
/// router: [`crate::Server`]).
pub(crate) fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for (path, handler) in routes() {
        router = router.route(path, handler);
    }
    router
        .route_layer(axum::middleware::from_fn(crate::roles::require))
        .with_state(state)
}

/// `GET /api/me`: who the page is signed in as (`{"name", "role"}`), so it can offer only what
/// the role may do.
async fn me(principal: Option<axum::Extension<crate::access::Principal>>) -> Response {
    match principal {
        Some(axum::Extension(crate::access::Principal(user))) => {
            axum::Json(json!({ "name": user.name, ROLE: user.role.as_str() })).into_response()
        }
        None => axum::Json(json!({ "name": "local", ROLE: "admin" })).into_response(),
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn index() -> Response {
    asset(
        "text/html; charset=utf-8",
        include_str!("../assets/index.html"),
    )
}

/// The page's icon; `/favicon.ico` too (a browser asks for it unless the page names an icon).
async fn favicon() -> Response {
    asset("image/svg+xml", include_str!("../assets/favicon.svg"))
}

async fn theme_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/theme.js"),
    )
}

async fn shortcuts_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/shortcuts.js"),
    )
}

async fn app_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/app.js"),
    )
}

async fn markdown_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/markdown.js"),
    )
}

async fn composer_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/composer.js"),
    )
}

async fn queue_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/queue.js"),
    )
}

async fn panels_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/panels.js"),
    )
}

async fn lifecycle_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/lifecycle.js"),
    )
}

async fn newsession_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/newsession.js"),
    )
}

async fn people_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/people.js"),
    )
}

async fn checkpoints_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/checkpoints.js"),
    )
}

async fn cards_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/cards.js"),
    )
}

async fn entries_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/entries.js"),
    )
}

async fn window_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/window.js"),
    )
}

async fn range_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/range.js"),
    )
}

async fn model_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/model.js"),
    )
}

async fn search_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/search.js"),
    )
}

async fn feed_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/feed.js"),
    )
}

async fn worker_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/worker.js"),
    )
}

async fn dom_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/dom.js"),
    )
}

async fn ops_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/ops.js"),
    )
}

async fn trees_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/trees.js"),
    )
}

async fn inspector_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/inspector.js"),
    )
}

async fn inspector_css() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("../assets/inspector.css"),
    )
}

async fn app_css() -> Response {
    asset("text/css; charset=utf-8", include_str!("../assets/app.css"))
}

async fn transcript_css() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("../assets/transcript.css"),
    )
}

async fn list_sessions(State(state): State<AppState>) -> Result<Response, WebError> {
    let sessions = state.manager.list()?;
    Ok(axum::Json(json!({ "sessions": sessions })).into_response())
}

async fn cancel(SessionRoute(session): SessionRoute) -> Result<Response, WebError> {
    session.cancel().await?;
    Ok(axum::Json(json!({ "cancelled": true })).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionBody {
    key: String,
    /// The chosen option; absent means "cancelled" (dismissed without choosing).
    option_id: Option<String>,
}

async fn permission(
    SessionRoute(session): SessionRoute,
    body: Result<axum::Json<PermissionBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) =
        body.map_err(|e| body_refusal(&e, r#"{"key": "...", "optionId": "..."}"#))?;
    session.answer_permission(&body.key, body.option_id).await?;
    Ok(axum::Json(json!({ "answered": true })).into_response())
}

#[derive(Debug, Deserialize)]
struct ElicitationBody {
    key: String,
    /// `accept`, `decline` or `cancel`.
    action: String,
    /// A form's values by field name (`accept` of a form).
    content: Option<Value>,
}

async fn elicitation(
    SessionRoute(session): SessionRoute,
    body: Result<axum::Json<ElicitationBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) = body.map_err(|e| {
        body_refusal(
            &e,
            r#"{"key": "...", "action": "accept", "content": {...}}"#,
        )
    })?;
    session
        .answer_elicitation(&body.key, &body.action, body.content)
        .await?;
    Ok(axum::Json(json!({ "answered": true })).into_response())
}

async fn replies(
    State(state): State<AppState>,
    SessionId(id): SessionId,
) -> Result<Response, WebError> {
    let replies = state.manager.replies(id)?;
    Ok(axum::Json(json!({ "replies": replies })).into_response())
}

async fn transcript(SessionRoute(session): SessionRoute) -> Result<Response, WebError> {
    let body = session.transcript_json();
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// `GET /api/sessions/{id}/entries?before=INDEX&limit=N`: older entries for a page that got the
/// tail first (see [`spindle_runtime::snapshot::entries_page_json`]).
async fn entries(
    SessionRoute(session): SessionRoute,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, WebError> {
    let Ok(Query(query)) = query else {
        return Err(WebError::bad_request("the query string could not be read"));
    };
    let number = |name: &str| -> Result<Option<usize>, WebError> {
        match query.get(name) {
            None => Ok(None),
            Some(text) => text.parse().map(Some).map_err(|_| {
                WebError::bad_request(format!("{name} must be a non-negative integer"))
            }),
        }
    };
    let before = number("before")?;
    let limit = number("limit")?.unwrap_or(100);
    let body = session.entries_page(before, limit);
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// `GET /api/sessions/{id}/snapshot`: what a `reset` frame would carry now, with the id of the
/// last batch it includes (a tab that shares another tab's event stream starts from it).
async fn snapshot(SessionRoute(session): SessionRoute) -> Result<Response, WebError> {
    let body = session.snapshot();
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

async fn stats(SessionRoute(session): SessionRoute) -> Result<Response, WebError> {
    Ok(axum::Json(session.stats()).into_response())
}

async fn events(
    SessionRoute(session): SessionRoute,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, WebError> {
    let last_seen = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(EventId::parse);
    let receiver = session.subscribe(last_seen);
    // The first frame only sets the reconnect delay: a dropped slow observer comes back quickly.
    let retry = stream::once(async { Ok(Event::default().retry(Duration::from_millis(500))) });
    let frames = stream::unfold((receiver, None), |(mut receiver, held)| async move {
        let (events, held) = next_events(&mut receiver, held).await?;
        Some((stream::iter(events.into_iter().map(Ok)), (receiver, held)))
    })
    .flatten();
    Ok(
        Sse::new(retry.chain(frames))
            .keep_alive(KeepAlive::new().interval(Duration::from_secs(15))),
    )
}

/// How long a fast stream's batches are collected into one SSE frame at most.
const COALESCE_WINDOW: Duration = Duration::from_millis(4);
/// How many batches one SSE frame holds at most.
const COALESCE_BATCHES: usize = 512;
/// How many payload bytes one SSE frame holds at most (a frame is parsed in one go by the page).
const COALESCE_BYTES: usize = 256 << 10;

/// The next SSE events of an observer, and a frame received but not sent yet. A batch that
/// arrives alone goes out at once; when more are already queued (the stream is fast), they are
/// collected for up to [`COALESCE_WINDOW`] into one `ops` frame (see
/// [`spindle_runtime::snapshot::merge_batches`]), whose id is its last batch's, so that `Last-Event-ID`
/// resumes exactly after it. `None` once the observer's stream ended.
async fn next_events(
    receiver: &mut tokio::sync::mpsc::Receiver<Frame>,
    held: Option<Frame>,
) -> Option<(Vec<Event>, Option<Frame>)> {
    let first = match held {
        Some(frame) => frame,
        None => receiver.recv().await?,
    };
    let (first_id, first_data) = match first {
        Frame::Reset { id, data } => {
            let event = Event::default()
                .event("reset")
                .id(id.to_string())
                .data(&*data);
            return Some((vec![event], None));
        }
        Frame::Ops { id, data } => (id, data),
    };
    let mut batches = vec![(first_id, first_data)];
    let mut bytes = batches[0].1.len();
    let deadline = tokio::time::Instant::now() + COALESCE_WINDOW;
    let mut held = None;
    while batches.len() < COALESCE_BATCHES && bytes < COALESCE_BYTES {
        let next = match receiver.try_recv() {
            Ok(frame) => frame,
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => break,
            // A quiet stream: what came alone goes at once.
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) if batches.len() == 1 => break,
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                match tokio::time::timeout_at(deadline, receiver.recv()).await {
                    Ok(Some(frame)) => frame,
                    Ok(None) | Err(_) => break,
                }
            }
        };
        match next {
            Frame::Ops { id, data } => {
                bytes += data.len();
                batches.push((id, data));
            }
            reset @ Frame::Reset { .. } => {
                held = Some(reset);
                break;
            }
        }
    }
    let ops = |id: EventId, data: &str| Event::default().event("ops").id(id.to_string()).data(data);
    let last = batches[batches.len() - 1].0;
    let events = if batches.len() == 1 {
        vec![ops(last, &batches[0].1)]
    } else {
        let parts: Vec<(u64, &str)> = batches
            .iter()
            .map(|(id, data)| (id.counter, &**data))
            .collect();
        match spindle_runtime::snapshot::merge_batches(&parts) {
            Some(merged) => vec![ops(last, &merged)],
            None => batches.iter().map(|(id, data)| ops(*id, data)).collect(),
        }
    };
    Some((events, held))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_an_access_rule_and_every_rule_a_route() {
        let paths: Vec<&str> = routes().iter().map(|(path, _)| *path).collect();
        for path in &paths {
            assert!(
                crate::roles::RULES
                    .iter()
                    .any(|(_, route, _)| route == path),
                "{path} has no rule in roles.rs"
            );
        }
        for (method, route, _) in crate::roles::RULES {
            assert!(
                paths.contains(route) || *route == spindle_wire::remote::ACP_PATH,
                "the rule {method} {route} names no route"
            );
        }
    }

    #[test]
    fn the_route_table_is_fixed_and_no_route_runs_a_command() {
        let paths: Vec<&str> = routes().iter().map(|(path, _)| *path).collect();
        // A new route is a conscious change of this list.
        assert_eq!(
            paths,
            [
                "/",
                "/favicon.svg",
                "/favicon.ico",
                "/theme.js",
                "/shortcuts.js",
                "/app.js",
                "/markdown.js",
                "/composer.js",
                "/queue.js",
                "/panels.js",
                "/newsession.js",
                "/lifecycle.js",
                "/checkpoints.js",
                "/people.js",
                "/cards.js",
                "/entries.js",
                "/window.js",
                "/range.js",
                "/model.js",
                "/search.js",
                "/feed.js",
                "/worker.js",
                "/dom.js",
                "/ops.js",
                "/trees.js",
                "/inspector.js",
                "/inspector.css",
                "/app.css",
                "/transcript.css",
                "/api/me",
                "/api/sessions",
                "/api/agents",
                "/api/mcp-servers",
                "/api/agent-sessions",
                "/api/sessions/{id}",
                "/api/sessions/{id}/events",
                "/api/sessions/{id}/fork",
                "/api/sessions/{id}/logout",
                "/api/sessions/{id}/checkpoints",
                "/api/sessions/{id}/checkpoints/{checkpoint}/diff",
                "/api/sessions/{id}/checkpoints/{checkpoint}/restore",
                "/api/sessions/{id}/prompt",
                "/api/sessions/{id}/cancel",
                "/api/sessions/{id}/queue",
                "/api/sessions/{id}/queue/{item}",
                "/api/sessions/{id}/queue/{item}/send-now",
                "/api/sessions/{id}/permission",
                "/api/sessions/{id}/elicitation",
                "/api/sessions/{id}/permission/forget",
                "/api/sessions/{id}/agent",
                "/api/sessions/{id}/authenticate",
                "/api/sessions/{id}/mode",
                "/api/sessions/{id}/config",
                "/api/sessions/{id}/files",
                "/api/sessions/{id}/review",
                "/api/sessions/{id}/replies",
                "/api/sessions/{id}/transcript",
                "/api/sessions/{id}/entries",
                "/api/sessions/{id}/snapshot",
                "/api/sessions/{id}/stats",
                "/api/sessions/{id}/wire",
                "/api/sessions/{id}/wire/events",
                "/api/sessions/{id}/wire/{seq}",
                "/api/sessions/{id}/rendered",
                "/api/sessions/{id}/entries/{entry}/rendered",
            ]
        );
        for path in paths {
            for word in [
                "terminal", "exec", "run", "command", "shell", "spawn", "write", "fs",
            ] {
                assert!(
                    !path.split('/').any(|segment| segment.contains(word)),
                    "{path} looks like it runs or writes something"
                );
            }
        }
    }
}
