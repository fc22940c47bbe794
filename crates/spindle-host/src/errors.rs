//! Errors of the file services and the JSON-RPC errors the agent gets.

use std::fmt;

use spindle_protocol::ResponseError;
use spindle_wire::client_methods::{RESOURCE_NOT_FOUND_CODE, RESOURCE_NOT_FOUND_MESSAGE};
use spindle_wire::host::{REFUSAL_REASON_KEY, REFUSAL_REJECTED};

/// JSON-RPC "invalid params": a malformed request, or a path or size the
/// client does not accept.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC "method not found": the method, or the service (file access,
/// terminals), is off.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "internal error": the operation failed (I/O, not text, too many
/// terminals, the user rejected a write: see the message).
pub const INTERNAL_ERROR: i64 = -32603;

/// What kind of file-service failure an [`FsError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FsErrorKind {
    /// The path is malformed (empty, `..`, NUL).
    InvalidPath,
    /// The path lies outside the workspace root, or reaches out of it through
    /// a symbolic link, or names a system file (`/proc`, `/sys`, `/dev`).
    OutsideRoot,
    /// No such file or directory.
    NotFound,
    /// A directory (or other non-regular file) where a file was needed, or
    /// the reverse.
    NotAFile,
    /// The file is not UTF-8 text.
    NotText,
    /// Over a size limit.
    TooLarge,
    /// The policy does not allow it.
    Disabled,
    /// The operating system refused (permissions, disk full, ...).
    Io,
}

/// A file-service failure, with a message fit to show the user and the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsError {
    kind: FsErrorKind,
    message: String,
    /// The path as the agent named it, when the error is about one (`data.uri` of a `-32002`).
    path: Option<String>,
}

impl FsError {
    /// An error of this kind.
    pub fn new(kind: FsErrorKind, message: impl Into<String>) -> FsError {
        FsError {
            kind,
            message: message.into(),
            path: None,
        }
    }

    /// [`FsError::new`] about the path `path` (as the agent named it).
    pub fn about(kind: FsErrorKind, path: &str, message: impl Into<String>) -> FsError {
        FsError {
            path: Some(path.to_owned()),
            ..FsError::new(kind, message)
        }
    }

    /// The kind.
    pub fn kind(&self) -> FsErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON-RPC error for the agent: `-32602` for bad paths and sizes,
    /// `-32002` (resource not found, with ACP's message) for a missing file,
    /// `-32601` when the policy is off, `-32603` otherwise.
    pub fn to_response_error(&self) -> ResponseError {
        if self.kind == FsErrorKind::NotFound {
            // ACP's own SDKs put the missing resource in `data.uri`; the reason goes beside it.
            let extra = match &self.path {
                Some(path) => serde_json::json!({ "uri": path }),
                None => serde_json::json!({}),
            };
            return resource_not_found_with(&self.message, extra);
        }
        let code = match self.kind {
            FsErrorKind::InvalidPath | FsErrorKind::OutsideRoot | FsErrorKind::TooLarge => {
                INVALID_PARAMS
            }
            FsErrorKind::NotFound => RESOURCE_NOT_FOUND_CODE,
            FsErrorKind::Disabled => METHOD_NOT_FOUND,
            FsErrorKind::NotAFile | FsErrorKind::NotText | FsErrorKind::Io => INTERNAL_ERROR,
        };
        ResponseError::new(code, self.message.clone())
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FsError {}

impl From<FsError> for ResponseError {
    fn from(e: FsError) -> Self {
        e.to_response_error()
    }
}

/// `-32002` with ACP's message for it, "Resource not found", then what is missing. Agents
/// recognise a missing file by that message (Gemini CLI's adapter looks for it, or for
/// "ENOENT", "does not exist", "No such file", before it creates a file), so the words are
/// ACP's, not ours.
pub(crate) fn resource_not_found(detail: &str) -> ResponseError {
    ResponseError::new(
        RESOURCE_NOT_FOUND_CODE,
        format!("{RESOURCE_NOT_FOUND_MESSAGE}: {detail}"),
    )
}

/// [`resource_not_found`] with `data` (`{"details": detail, ...extra}`).
pub(crate) fn resource_not_found_with(detail: &str, extra: serde_json::Value) -> ResponseError {
    let mut error = resource_not_found(detail);
    let mut data = serde_json::json!({ "details": detail });
    if let (Some(data), serde_json::Value::Object(extra)) = (data.as_object_mut(), extra) {
        data.extend(extra);
    }
    error.data = serde_json::value::to_raw_value(&data).ok();
    error
}

/// `-32602` with this message.
pub(crate) fn invalid_params(message: impl Into<String>) -> ResponseError {
    ResponseError::new(INVALID_PARAMS, message)
}

/// The error a write the user rejected gets: `-32603` with
/// `data: {"reason": "rejected"}`.
pub(crate) fn rejected(display_path: &str) -> ResponseError {
    let mut e = ResponseError::new(
        INTERNAL_ERROR,
        format!("the user rejected the write to {display_path}"),
    );
    let data = serde_json::json!({ REFUSAL_REASON_KEY: REFUSAL_REJECTED });
    e.data = serde_json::value::to_raw_value(&data).ok();
    e
}
