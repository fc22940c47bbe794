//! The transcript model the engine maintains: entries (`entry`, each with a revision in
//! `entries`), message
//! content (`message`), terminals (`terminal`), tool calls (`tool_call`) with
//! their file diffs (`file_diff`, built by `diff` and `git_patch`), and the
//! session-level state and diagnostics kept beside them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod client_activity;
mod diff;
mod entries;
mod entry;
mod file_diff;
mod git_patch;
mod message;
mod terminal;
mod tool_call;

pub use client_activity::{ClientActivity, ClientWrite, WriteStatus};
pub use diff::unified_hunks;
pub use entries::{Entries, Revision};
pub use entry::{Boundary, Entry, EntryBody, EntryKind, EntryView, TurnEnd};
pub use file_diff::{DiffChangeKind, DiffHunk, DiffLine, DiffLineKind, FileDiff};
pub(crate) use message::Block;
pub use message::Message;
pub use terminal::{Terminal, TerminalExit};
pub use tool_call::{DiffWrite, ToolCall, ToolTerminal};

/// The session's foreground state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    /// `idle`, `running`, `requires_action`, or an unknown value verbatim
    /// (which views must show as busy, never idle).
    pub status: String,
    /// The stop reason of the last finished turn, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Error object of a failed turn (v1 error response, v2 `stopReason: "error"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Number of turns started so far.
    pub turns: u32,
    /// A turn is in progress.
    pub turn_open: bool,
    /// The client sent `session/cancel` during the current turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel_requested: bool,
    /// v2 `background` as last reported (absent = not reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<Value>,
}

impl Default for SessionState {
    fn default() -> Self {
        SessionState {
            status: "idle".into(),
            stop_reason: None,
            error: None,
            turns: 0,
            turn_open: false,
            cancel_requested: false,
            background: None,
        }
    }
}

/// Session-level facts: title, modes and config options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session id seen on updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `session_info_update.title`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `session_info_update.updatedAt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// `session_info_update._meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// The current mode: v1 `current_mode_update.currentModeId`, `modes.currentModeId` of a
    /// `session/new`, `session/load` or `session/resume` result, or the mode a successful
    /// `session/set_mode` asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_mode_id: Option<String>,
    /// `modes.availableModes` of a `session/new`, `session/load` or `session/resume` result
    /// (`[{id, name, description?}]`), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_modes: Option<Value>,
    /// `configOptions` of `config_option_update`, of a `session/new`, `session/load` or
    /// `session/resume` result, or of a `session/set_config_option` result, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<Value>,
}

/// The transcript: timeline entries plus session-level state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    /// 1 or 2: the protocol version given or inferred.
    pub protocol: u8,
    /// Entries in timeline order (first sighting fixes the position).
    pub entries: Entries,
    /// Foreground state.
    pub state: SessionState,
    /// The usage meter (latest `usage_update`, without its tag).
    pub usage: Option<Value>,
    /// Available commands (latest `available_commands_update`).
    pub commands: Option<Value>,
    /// Title, mode, config options.
    pub session_info: SessionInfo,
    /// Every diagnostic so far, in input order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Transcript {
    /// The entry with this id.
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }
}

/// A problem with the input. The engine reports it and keeps going.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Stable machine-readable code, e.g. `malformed_update`, `invalid_json`.
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: String,
    /// 1-based input line number, when the input came line by line.
    pub line: Option<u64>,
}
