//! What the engine hands to views and callers: render ops, and the
//! [`Applied`] result of one input (ops plus diagnostics).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Diagnostic, EntryView, SessionInfo, SessionState};

/// One minimal change to a view of the transcript.
///
/// Applying the ops of every [`Applied`] in order to an empty view (or the ops
/// of [`crate::TranscriptEngine::render_snapshot`] followed by later ones)
/// yields the engine's transcript. Text offsets are UTF-16 code units (see
/// [`crate::text`]); they always fall on a `char` boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum RenderOp {
    /// A new timeline entry at `index` (always the current end of the timeline:
    /// the first sighting of an entry fixes its position).
    InsertEntry {
        /// Position in the timeline, 0-based.
        index: usize,
        /// The whole entry as it stands now.
        entry: EntryView,
    },
    /// A non-text change to an existing entry (tool-call fields, attachments,
    /// status, metadata). Carries the whole entry view, text included.
    UpdateEntry {
        /// The entry's stable id.
        id: String,
        /// The whole entry as it stands now.
        entry: EntryView,
    },
    /// Cut the entry's `text` down to its first `len` UTF-16 code units.
    /// Emitted only for replacements and clears; a shared prefix is kept.
    TruncateText {
        /// The entry's stable id.
        id: String,
        /// New length in UTF-16 code units (never inside a surrogate pair).
        len: usize,
    },
    /// Append to the entry's `text`.
    AppendText {
        /// The entry's stable id.
        id: String,
        /// The text to append.
        text: String,
    },
    /// The session's foreground state changed.
    SetState {
        /// The new state.
        state: SessionState,
    },
    /// The usage meter was replaced (`usage_update`: latest wins).
    SetUsage {
        /// The usage fields as sent (`used`, `size`, `cost`, ...).
        usage: Value,
    },
    /// The available slash commands were replaced.
    SetCommands {
        /// The `availableCommands` array as sent.
        commands: Value,
    },
    /// Session title, mode or config options changed.
    SetSessionInfo {
        /// The whole session info as it stands now.
        info: SessionInfo,
    },
    /// A live notice (toast/banner). Not part of the transcript: it is never
    /// stored and does not appear in snapshots or replays.
    Notice {
        /// `info`, `warning`, `error` or an extension value, verbatim.
        severity: String,
        /// Plain-text title.
        title: String,
        /// Optional plain-text description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}

/// The result of applying one input: the render ops it caused and any
/// diagnostics (also recorded in [`crate::Transcript::diagnostics`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// Render ops, in order.
    pub ops: Vec<RenderOp>,
    /// Diagnostics about this input.
    pub diagnostics: Vec<Diagnostic>,
}

impl Applied {
    /// True when the input changed nothing and raised no diagnostic.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty() && self.diagnostics.is_empty()
    }
}
