//! Errors of the file services and the JSON-RPC errors the agent gets.

use std::fmt;

use spindle_protocol::ResponseError;
use spindle_wire::client_methods::RESOURCE_NOT_FOUND_CODE;
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

    /// The same error about `path` (as the agent named it), unless it already names one.
    pub fn with_path(mut self, path: &str) -> FsError {
        self.path.get_or_insert_with(|| path.to_owned());
        self
    }

    /// The JSON-RPC error for the agent, in ACP's shape (see
    /// [`spindle_protocol::error_answers`]): `-32602` for bad paths and sizes, `-32002` for a
    /// missing file (`data.uri`, as ACP's SDKs put it), `-32601` when the policy is off,
    /// `-32603` otherwise; `data.path` names the file of the others, `data.details` says what
    /// happened.
    pub fn to_response_error(&self) -> ResponseError {
        let code = match self.kind {
            FsErrorKind::InvalidPath | FsErrorKind::OutsideRoot | FsErrorKind::TooLarge => {
                INVALID_PARAMS
            }
            FsErrorKind::NotFound => RESOURCE_NOT_FOUND_CODE,
            FsErrorKind::Disabled => METHOD_NOT_FOUND,
            FsErrorKind::NotAFile | FsErrorKind::NotText | FsErrorKind::Io => INTERNAL_ERROR,
        };
        let key = if code == RESOURCE_NOT_FOUND_CODE {
            "uri"
        } else {
            "path"
        };
        match &self.path {
            Some(path) => ResponseError::acp(code, &self.message, &[(key, path)]),
            None => ResponseError::acp(code, &self.message, &[]),
        }
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

/// The error a write the user rejected gets: `-32603` with
/// `data: {"reason": "rejected", "path": ..., "details": ...}`.
pub(crate) fn rejected(path: &str, display_path: &str) -> ResponseError {
    ResponseError::acp(
        INTERNAL_ERROR,
        &format!("the user rejected the write to {display_path}"),
        &[(REFUSAL_REASON_KEY, REFUSAL_REJECTED), ("path", path)],
    )
}

/// `-32602` "Invalid params" with what is wrong (see [`ResponseError::invalid_params`]).
pub(crate) fn invalid_params(details: impl AsRef<str>) -> ResponseError {
    ResponseError::invalid_params(details.as_ref())
}
