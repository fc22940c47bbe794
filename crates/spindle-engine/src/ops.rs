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

/// The same changes in fewer ops, for a view that applies a batch of ops at once (the web page
/// gets each batch as one SSE frame): within a stretch of `AppendText` and `SetUsage` ops, the
/// appends to one entry become one (at the first one's place) and only the last usage is kept (at
/// the first one's place). Any other op ends the stretch, so no append moves past an op that could
/// depend on the entry's text. Applying the result to a view gives what applying `ops` gives; only
/// states inside the stretch are skipped. A fast stream's batch is mostly chunks of one message
/// interleaved with thought chunks and usage: about three ops in four go.
pub fn coalesce_render_ops(ops: Vec<RenderOp>) -> Vec<RenderOp> {
    // Entries with an open append in the stretch are looked up linearly: a stretch rarely touches
    // more than two or three. Past this many, later entries start appends of their own.
    const TRACKED: usize = 16;
    let mut out: Vec<RenderOp> = Vec::with_capacity(ops.len());
    let mut appends: Vec<usize> = Vec::new(); // positions in `out` of the stretch's appends
    let mut usage: Option<usize> = None; // position in `out` of the stretch's usage op
    for op in ops {
        match op {
            RenderOp::AppendText { id, text } => {
                let open = appends.iter().copied().find(
                    |&at| matches!(&out[at], RenderOp::AppendText { id: open, .. } if *open == id),
                );
                if let Some(at) = open {
                    if let RenderOp::AppendText { text: so_far, .. } = &mut out[at] {
                        so_far.push_str(&text);
                    }
                    continue;
                }
                if appends.len() < TRACKED {
                    appends.push(out.len());
                }
                out.push(RenderOp::AppendText { id, text });
            }
            RenderOp::SetUsage { usage: value } => match usage {
                Some(at) => out[at] = RenderOp::SetUsage { usage: value },
                None => {
                    usage = Some(out.len());
                    out.push(RenderOp::SetUsage { usage: value });
                }
            },
            other => {
                appends.clear();
                usage = None;
                out.push(other);
            }
        }
    }
    out
}

impl Applied {
    /// True when the input changed nothing and raised no diagnostic.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty() && self.diagnostics.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn append(id: &str, text: &str) -> RenderOp {
        RenderOp::AppendText {
            id: id.into(),
            text: text.into(),
        }
    }

    fn usage(used: u64) -> RenderOp {
        RenderOp::SetUsage {
            usage: json!({ "used": used }),
        }
    }

    #[test]
    fn coalescing_merges_appends_and_usage_within_a_stretch_only() {
        let truncate = RenderOp::TruncateText {
            id: "m".into(),
            len: 1,
        };
        // (ops in, ops out)
        let cases = [
            (vec![], vec![]),
            (vec![append("m", "a")], vec![append("m", "a")]),
            (
                vec![append("m", "a"), append("m", "b"), append("m", "c")],
                vec![append("m", "abc")],
            ),
            // Interleaved entries and usage: one append per entry, the last usage, at first places.
            (
                vec![
                    append("m", "a"),
                    append("t", "x"),
                    usage(1),
                    append("m", "b"),
                    usage(2),
                    append("t", "y"),
                ],
                vec![append("m", "ab"), append("t", "xy"), usage(2)],
            ),
            // Another op ends the stretch: nothing moves past it.
            (
                vec![
                    append("m", "a"),
                    usage(1),
                    truncate.clone(),
                    append("m", "b"),
                    usage(2),
                ],
                vec![
                    append("m", "a"),
                    usage(1),
                    truncate,
                    append("m", "b"),
                    usage(2),
                ],
            ),
        ];
        for (ops, expected) in cases {
            assert_eq!(coalesce_render_ops(ops.clone()), expected, "{ops:?}");
        }
    }
}
