//! What every page route shares: the state, and reading a request's parts into the runtime's
//! terms. Refusals never echo request content: axum's own rejection texts quote the path segment
//! or the JSON that failed, so they are replaced by fixed messages.

use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;
use spindle_runtime::{LiveSession, SessionManager};

use crate::errors::WebError;

#[derive(Debug, Clone)]
pub(crate) struct AppState {
    pub(crate) manager: Arc<SessionManager>,
    /// Rendered markdown trees, shared by every session (see [`spindle_markdown`]).
    pub(crate) markdown: Arc<spindle_markdown::RenderCache>,
}

/// The `{id}` of a `/api/sessions/{id}/...` route (the routes that read the store only).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionId(pub(crate) i64);

impl FromRequestParts<AppState> for SessionId {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, WebError> {
        let refused = || WebError::bad_request("the session id must be a number");
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| refused())?;
        let id = params
            .iter()
            .find(|(name, _)| *name == "id")
            .and_then(|(_, value)| value.parse().ok())
            .ok_or_else(refused)?;
        Ok(SessionId(id))
    }
}

/// The session a `/api/sessions/{id}/...` route names, served here or rebuilt from the store;
/// an unknown id is refused before the handler runs.
#[derive(Debug, Clone)]
pub(crate) struct SessionRoute(pub(crate) Arc<LiveSession>);

impl FromRequestParts<AppState> for SessionRoute {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, WebError> {
        let SessionId(id) = SessionId::from_request_parts(parts, state).await?;
        Ok(SessionRoute(state.manager.get(id).await?))
    }
}

pub(crate) fn body_refusal(rejection: &JsonRejection, expected: &str) -> WebError {
    let message = match rejection {
        JsonRejection::JsonSyntaxError(_) => "the request body is not valid JSON".to_string(),
        JsonRejection::JsonDataError(_) => format!("the request body must be {expected}"),
        JsonRejection::MissingJsonContentType(_) => {
            "the request body must be application/json".to_string()
        }
        _ => "the request body could not be read (too large, or cut short)".to_string(),
    };
    WebError::new(rejection.status(), message)
}
