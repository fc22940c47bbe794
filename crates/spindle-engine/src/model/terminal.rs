//! A v2 terminal as the transcript keeps it ([`Terminal`]) and how a
//! terminal's command ended ([`TerminalExit`]), which tool calls report too.

use serde_json::{Map, Value};

/// A v2 terminal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Terminal {
    /// Wire fields other than output (`terminalId`, `command`, `cwd`, `exitStatus`, `size`, ...).
    pub fields: Map<String, Value>,
    /// All output bytes received (decoded from base64).
    pub output: Vec<u8>,
    /// `output` decoded as UTF-8; an incomplete trailing sequence waits in `output`.
    pub(crate) text: String,
    /// Bytes of `output` already reflected in `text`.
    pub(crate) decoded: usize,
}

impl Terminal {
    /// The output decoded as UTF-8 (an incomplete trailing sequence waits).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The exit status, once `exitStatus` came.
    pub fn exit(&self) -> Option<TerminalExit> {
        self.fields
            .get("exitStatus")
            .and_then(TerminalExit::from_status)
    }
}

/// How a terminal's command ended: v2 `exitStatus` or the tool-call
/// `_meta.terminal_exit` convention (both may leave either part unknown).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalExit {
    /// The exit code, when known.
    pub exit_code: Option<i64>,
    /// The signal that ended the process (`SIGTERM`, ...), when known.
    pub signal: Option<String>,
}

impl TerminalExit {
    /// From an `exitStatus` object (`exitCode`, `signal`); `None` unless an object.
    pub(crate) fn from_status(status: &Value) -> Option<TerminalExit> {
        let status = status.as_object()?;
        Some(TerminalExit {
            exit_code: status.get("exitCode").and_then(Value::as_i64),
            signal: status
                .get("signal")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }
}
