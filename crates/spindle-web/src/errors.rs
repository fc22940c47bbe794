//! [`WebError`]: what an HTTP handler answers when a call fails, and the one mapping of the
//! runtime's [`SessionError`] to HTTP statuses.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use spindle_runtime::SessionError;

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
}

/// The HTTP status of each runtime error (the page shows the message).
pub(crate) fn status_of(error: &SessionError) -> StatusCode {
    match error {
        SessionError::NotFound(_) => StatusCode::NOT_FOUND,
        SessionError::InvalidParams(_) => StatusCode::BAD_REQUEST,
        SessionError::Conflict(_) | SessionError::AuthRequired { .. } => StatusCode::CONFLICT,
        SessionError::Agent { .. } => StatusCode::BAD_GATEWAY,
        SessionError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
        SessionError::Refused(_) => StatusCode::UNPROCESSABLE_ENTITY,
        SessionError::StorageFull => StatusCode::INSUFFICIENT_STORAGE,
        SessionError::Storage(_) | SessionError::Unavailable(_) | SessionError::Gone => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<SessionError> for WebError {
    fn from(error: SessionError) -> WebError {
        WebError::new(status_of(&error), error.message())
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(json!({ "error": self.message }))).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_session_error_has_its_http_status() {
        let cases = [
            (SessionError::NotFound(String::new()), 404),
            (SessionError::InvalidParams(String::new()), 400),
            (SessionError::Conflict(String::new()), 409),
            (SessionError::AuthRequired { methods: vec![] }, 409),
            (
                SessionError::Agent {
                    code: None,
                    message: String::new(),
                },
                502,
            ),
            (SessionError::Timeout(String::new()), 504),
            (SessionError::Refused(String::new()), 422),
            (SessionError::Storage(String::new()), 503),
            (SessionError::StorageFull, 507),
            (SessionError::Unavailable(String::new()), 503),
            (SessionError::Gone, 503),
            (SessionError::Internal(String::new()), 500),
        ];
        for (failure, status) in cases {
            let message = failure.message();
            let answered = WebError::from(failure);
            assert_eq!(answered.status.as_u16(), status, "{message}");
            assert_eq!(answered.message, message);
        }
    }
}
