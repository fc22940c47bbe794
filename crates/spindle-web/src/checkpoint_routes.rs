//! The checkpoint routes of a session (`spindle_runtime`'s `task/checkpoint.rs` does the work):
//! `GET /api/sessions/{id}/checkpoints`, `GET .../checkpoints/{checkpoint}/diff` and
//! `POST .../checkpoints/{checkpoint}/restore`, where `{checkpoint}` is a turn number (the
//! checkpoint taken before that turn) or `restore-K` (the one taken before the Kth restore:
//! restoring it undoes that restore). The restore is a state-changing request, so the guard's
//! cross-site checks apply to it like to every POST (`security.rs`); its body is ignored.

use axum::extract::RawPathParams;
use axum::response::{IntoResponse, Response};
use spindle_runtime::CheckpointRequest;

use crate::errors::WebError;
use crate::extract::SessionRoute;

/// The `{checkpoint}` segment of the path (checked by the runtime).
fn segment(params: &RawPathParams) -> String {
    params
        .iter()
        .find(|(name, _)| *name == "checkpoint")
        .map(|(_, value)| value.to_owned())
        .unwrap_or_default()
}

pub(crate) async fn list(SessionRoute(session): SessionRoute) -> Result<Response, WebError> {
    let answer = session.checkpoints(CheckpointRequest::List).await?;
    Ok(axum::Json(answer).into_response())
}

pub(crate) async fn diff(
    SessionRoute(session): SessionRoute,
    params: RawPathParams,
) -> Result<Response, WebError> {
    let answer = session
        .checkpoints(CheckpointRequest::Diff(segment(&params)))
        .await?;
    Ok(axum::Json(answer).into_response())
}

pub(crate) async fn restore(
    SessionRoute(session): SessionRoute,
    params: RawPathParams,
) -> Result<Response, WebError> {
    let answer = session
        .checkpoints(CheckpointRequest::Restore(segment(&params)))
        .await?;
    Ok(axum::Json(answer).into_response())
}
