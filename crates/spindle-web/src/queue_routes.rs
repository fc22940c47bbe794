//! The prompt queue's routes (issue 27): a prompt sent while a v1 agent's turn runs is queued
//! (`POST .../prompt` answers `202` with the item), and until it is sent it can be listed, edited,
//! removed or sent at once. The rules are the runtime's (`spindle-runtime`'s `task/queue.rs`);
//! these handlers only read requests and shape answers.

use axum::extract::RawPathParams;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use spindle_runtime::PromptOutcome;

use crate::errors::WebError;
use crate::extract::{SessionRoute, body_refusal};

/// The body of `POST .../prompt`'s `202`: `{"accepted": true, "queued": ITEM | null}`, with
/// `"forwarded": true` when another replica runs the session (it queues the prompt there if a
/// turn runs; the page sees the item come in its queue).
pub(crate) fn prompt_answer(outcome: &PromptOutcome) -> Value {
    match outcome {
        PromptOutcome::Queued(item) => json!({ "accepted": true, "queued": item }),
        PromptOutcome::Forwarded => json!({ "accepted": true, "queued": null, "forwarded": true }),
        _ => json!({ "accepted": true, "queued": null }),
    }
}

/// `GET /api/sessions/{id}/queue`: `{"queue": [{id, text, position, images, acp}]}`.
pub(crate) async fn list(SessionRoute(session): SessionRoute) -> Response {
    axum::Json(json!({ "queue": session.queue() })).into_response()
}

#[derive(Debug, Deserialize)]
pub(crate) struct EditBody {
    text: String,
}

/// `PATCH /api/sessions/{id}/queue/{item}` with `{"text": ...}`: `{"item": ITEM}`.
pub(crate) async fn edit(
    SessionRoute(session): SessionRoute,
    params: RawPathParams,
    body: Result<axum::Json<EditBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) = body.map_err(|e| body_refusal(&e, r#"{"text": "..."}"#))?;
    let answer = session.edit_queued(item_param(&params), body.text).await?;
    Ok(axum::Json(answer).into_response())
}

/// `DELETE /api/sessions/{id}/queue/{item}`: `{"removed": ID}`.
pub(crate) async fn remove(
    SessionRoute(session): SessionRoute,
    params: RawPathParams,
) -> Result<Response, WebError> {
    let answer = session.remove_queued(item_param(&params)).await?;
    Ok(axum::Json(answer).into_response())
}

/// `POST /api/sessions/{id}/queue/{item}/send-now`: cancels the running turn and sends the item
/// next; `202` with `{"sending": ID, "cancelledTurn": bool}`.
pub(crate) async fn send_now(
    SessionRoute(session): SessionRoute,
    params: RawPathParams,
) -> Result<Response, WebError> {
    let answer = session.send_queued_now(item_param(&params)).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(answer)).into_response())
}

/// The `{item}` of the route (the runtime refuses an id it could not have made, without
/// echoing it at length).
fn item_param(params: &RawPathParams) -> &str {
    params
        .iter()
        .find(|(name, _)| *name == "item")
        .map_or("", |(_, value)| value)
}
