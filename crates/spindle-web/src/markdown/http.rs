//! The routes that hand rendered trees to the page: the entries it shows, asked for in one batch
//! (`POST /api/sessions/{id}/rendered`, body `{"entries": [ids]}`) or one at a time (`GET
//! /api/sessions/{id}/entries/{entry}/rendered`). Each tree comes with `length`: the UTF-16
//! length of the text it was made from, so the page can tell it matches the text it holds.

use std::collections::HashMap;

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use spindle_engine::{EntryKind, TranscriptEngine};

use super::RenderCache;
use crate::errors::WebError;
use crate::routes::{AppState, body_refusal, session_id};

/// Most entries one batch may name (a window of the transcript, with room to spare).
pub(crate) const MAX_BATCH: usize = 200;

/// What an entry named by the page holds, read under the session's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A message: its text.
    Message(String),
    /// Another kind of entry (its kind), which has no markdown.
    NotMessage(&'static str),
    /// No entry has this id.
    Missing,
}

/// The sources of the entries `ids` names, in one pass over the transcript.
pub(crate) fn message_sources(engine: &TranscriptEngine, ids: &[String]) -> Vec<Source> {
    let mut wanted: HashMap<&str, usize> = HashMap::with_capacity(ids.len());
    for (n, id) in ids.iter().enumerate() {
        wanted.entry(id.as_str()).or_insert(n);
    }
    let mut sources = vec![Source::Missing; ids.len()];
    for entry in &engine.transcript().entries {
        let Some(&n) = wanted.get(entry.id.as_str()) else {
            continue;
        };
        sources[n] = match entry.kind {
            EntryKind::AgentMessage | EntryKind::UserMessage => {
                Source::Message(entry.text().to_string())
            }
            other => Source::NotMessage(other.as_str()),
        };
    }
    // A repeated id gets the answer of its first mention.
    for (n, id) in ids.iter().enumerate() {
        let first = wanted[id.as_str()];
        if first != n {
            sources[n] = sources[first].clone();
        }
    }
    sources
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string())
}

/// One rendered entry: `{"id", "length", "tree"}`.
fn rendered_item(id: &str, text: &str, cache: &RenderCache) -> String {
    let tree = cache.tree_json(text);
    let length = text.encode_utf16().count();
    format!(
        r#"{{"id":{},"length":{length},"tree":{tree}}}"#,
        json_string(id)
    )
}

/// The batch answer: `{"rendered": [...], "refused": [{"id", "reason"}]}`.
pub(crate) fn batch_json(ids: &[String], sources: &[Source], cache: &RenderCache) -> String {
    let mut rendered = Vec::new();
    let mut refused = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (id, source) in ids.iter().zip(sources) {
        if !seen.insert(id.as_str()) {
            continue;
        }
        match source {
            Source::Message(text) => rendered.push(rendered_item(id, text, cache)),
            other => refused.push(format!(
                r#"{{"id":{},"reason":{}}}"#,
                json_string(id),
                json_string(&refusal(other))
            )),
        }
    }
    format!(
        r#"{{"rendered":[{}],"refused":[{}]}}"#,
        rendered.join(","),
        refused.join(",")
    )
}

fn refusal(source: &Source) -> String {
    match source {
        Source::Message(_) => String::new(),
        Source::NotMessage(kind) => format!("a {kind} entry has no markdown"),
        Source::Missing => "no entry has this id".to_string(),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct BatchBody {
    entries: Vec<String>,
}

fn json_response(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn render_blocking(
    state: &AppState,
    work: impl FnOnce(&RenderCache) -> String + Send + 'static,
) -> Result<String, WebError> {
    let cache = state.markdown.clone();
    // Rendering a long message takes CPU time: off the async workers.
    tokio::task::spawn_blocking(move || work(&cache))
        .await
        .map_err(|_| WebError::new(StatusCode::INTERNAL_SERVER_ERROR, "rendering failed"))
}

/// `POST /api/sessions/{id}/rendered`.
pub(crate) async fn rendered_batch(
    State(state): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    body: Result<Json<BatchBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let id = session_id(id)?;
    let Json(body) = body.map_err(|e| body_refusal(&e, r#"{"entries": ["<entry id>", ...]}"#))?;
    if body.entries.len() > MAX_BATCH {
        return Err(WebError::bad_request(format!(
            "at most {MAX_BATCH} entries per request"
        )));
    }
    let session = state.manager.get(id).await?;
    let sources = session.message_sources(&body.entries);
    let ids = body.entries;
    let json = render_blocking(&state, move |cache| batch_json(&ids, &sources, cache)).await?;
    Ok(json_response(json))
}

/// `GET /api/sessions/{id}/entries/{entry}/rendered`.
pub(crate) async fn rendered_entry(
    State(state): State<AppState>,
    path: Result<Path<(i64, String)>, PathRejection>,
) -> Result<Response, WebError> {
    let Ok(Path((id, entry))) = path else {
        return Err(WebError::bad_request(
            "the session id must be a number and the entry id a path segment",
        ));
    };
    let session = state.manager.get(id).await?;
    let ids = [entry];
    let source = session.message_sources(&ids).pop();
    let [entry] = ids;
    let text = match source {
        Some(Source::Message(text)) => text,
        Some(Source::NotMessage(kind)) => {
            return Err(WebError::bad_request(refusal(&Source::NotMessage(kind))));
        }
        _ => {
            return Err(WebError::new(StatusCode::NOT_FOUND, "no entry has this id"));
        }
    };
    let json = render_blocking(&state, move |cache| rendered_item(&entry, &text, cache)).await?;
    Ok(json_response(json))
}
