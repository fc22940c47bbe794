//! The errors a client answers an agent's requests with, in ACP's shape: one of ACP's codes
//! (its schema's `ErrorCode`), the message that code's canonical message, then `: ` and what
//! happened, and `data` with that detail as `details` beside what the error is about (`uri` of a
//! missing file, as ACP's SDKs put it; `path`, `terminalId`, `method`).
//!
//! The message starts with the canonical text because agents match on it (Gemini CLI creates a
//! file only when a read's error message contains "Resource not found"); the detail follows the
//! way ACP's TypeScript SDK appends it, since agents hand the message on to their model, which
//! then knows why (a user's refusal, a path outside the workspace).
//!
//! ```
//! use spindle_protocol::ResponseError;
//! let e = ResponseError::resource_not_found("/w/a.txt: no such file", &[("uri", "/w/a.txt")]);
//! assert_eq!(e.code, -32002);
//! assert_eq!(e.message, "Resource not found: /w/a.txt: no such file");
//! assert_eq!(
//!     e.data.unwrap().get(),
//!     r#"{"details":"/w/a.txt: no such file","uri":"/w/a.txt"}"#
//! );
//! ```

use serde_json::{Map, Value};
use spindle_wire::client_methods::{
    AUTH_REQUIRED_CODE, RESOURCE_NOT_FOUND_CODE, RESOURCE_NOT_FOUND_MESSAGE,
};
use spindle_wire::host::ERROR_DETAILS_KEY;

use crate::jsonrpc::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR,
    REQUEST_CANCELLED, ResponseError,
};

/// ACP's canonical message for one of its error codes (the titles of its schema's `ErrorCode`);
/// `None` for any other code.
pub fn canonical_message(code: i64) -> Option<&'static str> {
    Some(match code {
        PARSE_ERROR => "Parse error",
        INVALID_REQUEST => "Invalid request",
        METHOD_NOT_FOUND => "Method not found",
        INVALID_PARAMS => "Invalid params",
        INTERNAL_ERROR => "Internal error",
        REQUEST_CANCELLED => "Request cancelled",
        AUTH_REQUIRED_CODE => "Authentication required",
        RESOURCE_NOT_FOUND_CODE => RESOURCE_NOT_FOUND_MESSAGE,
        _ => return None,
    })
}

impl ResponseError {
    /// The error of ACP's `code`: its canonical message, `: details` after it (when `details` is
    /// not empty), and `data` `{"details": details, ...about}`. A code ACP does not name keeps
    /// `details` alone as its message.
    pub fn acp(code: i64, details: &str, about: &[(&str, &str)]) -> ResponseError {
        let message = match (canonical_message(code), details.is_empty()) {
            (Some(canonical), true) => canonical.to_owned(),
            (Some(canonical), false) => format!("{canonical}: {details}"),
            (None, _) => details.to_owned(),
        };
        let mut data = Map::new();
        if !details.is_empty() {
            data.insert(ERROR_DETAILS_KEY.into(), Value::String(details.to_owned()));
        }
        for (key, value) in about {
            data.insert((*key).to_owned(), Value::String((*value).to_owned()));
        }
        let mut error = ResponseError::new(code, message);
        if !data.is_empty() {
            error.data = serde_json::value::to_raw_value(&Value::Object(data)).ok();
        }
        error
    }

    /// `-32601` "Method not found" for `method` (`data.method`), with why.
    pub fn method_not_found(method: &str, details: &str) -> ResponseError {
        ResponseError::acp(METHOD_NOT_FOUND, details, &[("method", method)])
    }

    /// `-32602` "Invalid params", with what is wrong with them.
    pub fn invalid_params(details: &str) -> ResponseError {
        ResponseError::acp(INVALID_PARAMS, details, &[])
    }

    /// `-32603` "Internal error", with what failed.
    pub fn internal_error(details: &str) -> ResponseError {
        ResponseError::acp(INTERNAL_ERROR, details, &[])
    }

    /// `-32002` "Resource not found", with what is missing (`about`: `uri`, `terminalId`).
    pub fn resource_not_found(details: &str, about: &[(&str, &str)]) -> ResponseError {
        ResponseError::acp(RESOURCE_NOT_FOUND_CODE, details, about)
    }

    /// `-32800` "Request cancelled", with by whom or why.
    pub fn request_cancelled(details: &str) -> ResponseError {
        ResponseError::acp(REQUEST_CANCELLED, details, &[])
    }

    /// `data.details`, when the error has one (the human detail of [`ResponseError::acp`]).
    pub fn details(&self) -> Option<String> {
        let data: Value = serde_json::from_str(self.data.as_ref()?.get()).ok()?;
        data.get(ERROR_DETAILS_KEY)?.as_str().map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_acp_code_has_its_schema_title() {
        // The titles of ACP's schema (`ErrorCode` in schema.json, v1 and v2 alike).
        for (code, title) in [
            (-32700, "Parse error"),
            (-32600, "Invalid request"),
            (-32601, "Method not found"),
            (-32602, "Invalid params"),
            (-32603, "Internal error"),
            (-32800, "Request cancelled"),
            (-32000, "Authentication required"),
            (-32002, "Resource not found"),
        ] {
            assert_eq!(canonical_message(code), Some(title), "{code}");
        }
        assert_eq!(canonical_message(-32001), None);
    }

    #[test]
    fn details_go_after_the_canonical_message_and_into_data() {
        let e = ResponseError::method_not_found("x/y", "this client does not offer x/y");
        assert_eq!(
            e.message,
            "Method not found: this client does not offer x/y"
        );
        assert_eq!(
            e.data.as_ref().map(|d| d.get()),
            Some(r#"{"details":"this client does not offer x/y","method":"x/y"}"#)
        );
        assert_eq!(
            e.details().as_deref(),
            Some("this client does not offer x/y")
        );
        let bare = ResponseError::acp(INTERNAL_ERROR, "", &[]);
        assert_eq!(bare.message, "Internal error");
        assert!(bare.data.is_none());
        let other = ResponseError::acp(-32099, "ours", &[]);
        assert_eq!(other.message, "ours");
    }
}
