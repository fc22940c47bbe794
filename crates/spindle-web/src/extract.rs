//! What every page route shares: the state, and reading a request's parts into the runtime's
//! terms. Refusals never echo request content: axum's own rejection texts quote the path segment
//! or the JSON that failed, so they are replaced by fixed messages.

use std::sync::Arc;

use axum::extract::Path;
use axum::extract::rejection::{JsonRejection, PathRejection};
use spindle_runtime::SessionManager;

use crate::errors::WebError;

#[derive(Debug, Clone)]
pub(crate) struct AppState {
    pub(crate) manager: Arc<SessionManager>,
    /// Rendered markdown trees, shared by every session (see [`spindle_markdown`]).
    pub(crate) markdown: Arc<spindle_markdown::RenderCache>,
}

pub(crate) fn session_id(path: Result<Path<i64>, PathRejection>) -> Result<i64, WebError> {
    match path {
        Ok(Path(id)) => Ok(id),
        Err(_) => Err(WebError::bad_request("the session id must be a number")),
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
