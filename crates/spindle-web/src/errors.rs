//! [`WebError`]: what an HTTP handler answers when a session call fails, and the refusals the
//! session task gives most often.

use axum::http::StatusCode;

/// An error answered to an HTTP client.
#[derive(Debug, Clone)]
pub struct WebError {
    /// HTTP status.
    pub status: StatusCode,
    /// Plain-text message, shown in the page.
    pub message: String,
}

impl WebError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> WebError {
        WebError {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> WebError {
        WebError::new(StatusCode::BAD_REQUEST, message)
    }

    pub(crate) fn storage(error: crate::store::StoreError) -> WebError {
        WebError::new(StatusCode::SERVICE_UNAVAILABLE, error.to_string())
    }

    pub(crate) fn gone() -> WebError {
        WebError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the session task stopped; restart the server",
        )
    }

    /// Prompts are refused while the unsaved backlog is full.
    pub(crate) fn storage_full() -> WebError {
        WebError::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "the database does not accept writes and as many lines as the server keeps in memory \
             wait for it: prompts are refused until storage recovers",
        )
    }

    /// A v1 agent takes one prompt at a time.
    pub(crate) fn v1_busy() -> WebError {
        WebError::new(
            StatusCode::CONFLICT,
            "a turn is running and this agent speaks ACP v1 (one prompt at a time): wait for it to \
             end or cancel it",
        )
    }

    /// The agent waits for the user to authenticate.
    pub(crate) fn needs_auth() -> WebError {
        WebError::new(
            StatusCode::CONFLICT,
            "the agent needs authentication first: pick one of its sign-in methods, then send \
             the prompt again",
        )
    }

    pub(crate) fn unavailable(message: impl Into<String>) -> WebError {
        WebError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }
}
