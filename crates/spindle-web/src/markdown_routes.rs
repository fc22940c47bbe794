//! The routes that hand rendered trees to the page: the entries it shows, asked for in one batch
//! (`POST /api/sessions/{id}/rendered`, body `{"entries": [ids]}`) or one at a time (`GET
//! /api/sessions/{id}/entries/{entry}/rendered`). Each tree comes with `length`: the UTF-16
//! length of the text it was made from, so the page can tell it matches the text it holds.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::errors::WebError;
use crate::extract::{AppState, SessionRoute, body_refusal};
use spindle_markdown::{MAX_BATCH, RenderCache, Source, batch_json, refusal, rendered_item};

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
    SessionRoute(session): SessionRoute,
    body: Result<Json<BatchBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let Json(body) = body.map_err(|e| body_refusal(&e, r#"{"entries": ["<entry id>", ...]}"#))?;
    if body.entries.len() > MAX_BATCH {
        return Err(WebError::bad_request(format!(
            "at most {MAX_BATCH} entries per request"
        )));
    }
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
