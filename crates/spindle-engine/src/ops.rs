//! What the engine hands to views and callers: render ops, and the
//! [`Applied`] result of one input (ops plus diagnostics).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Diagnostic, EntryView, SessionInfo, SessionState};
use crate::text::utf16_to_byte_offset;

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
    /// status, metadata). Carries the whole entry view, text included (in a
    /// batch [`coalesce_render_ops`] merged, also the text changes after it).
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
/// gets each batch as one SSE frame). Ops on different entries are independent of each other, so
/// the ops of each entry are merged across the whole batch, whatever came between them:
///
/// - `AppendText` joins the entry's previous op when that is an append, and is folded into the
///   entry's text when that is an `InsertEntry` or `UpdateEntry`.
/// - `TruncateText` is folded into the text of the entry's previous `InsertEntry` or
///   `UpdateEntry`; after a truncation with only appends since, it cuts the appended text (or
///   lowers that truncation's `len`, dropping the appended text). `len` is in UTF-16 code units,
///   so a fold happens only where `len` is a `char` boundary of the text it cuts.
/// - `UpdateEntry` carries the whole entry, so the entry's earlier ops in the batch go: an
///   `InsertEntry` takes the new entry (and keeps its index), anything else gives way to the
///   update at the place of the entry's first op.
/// - `InsertEntry` ops keep their places, so their order and indices hold; one for an entry the
///   batch already touched (which the engine never sends) starts that entry's merging over.
/// - `SetUsage`, `SetCommands` and `SetSessionInfo` each carry a whole value: the last of each
///   kind is kept, at the place of the first of that kind.
/// - `SetState` and `Notice` ops are kept, in order.
///
/// Merged ops stay at the place of the entry's earlier op, so an entry's later changes may move
/// ahead of other entries' ops and of `SetState` and `Notice` ops (inserts and notices keep their
/// order among themselves). A view that applies an entry's ops to that entry alone (the web page,
/// `spindle chat`'s views) ends the batch where applying `ops` leaves it; only states inside the
/// batch are skipped. A fast stream's batch goes out as about one op per entry it touched, plus
/// one usage op. Linear in the number of ops: an entry's ops are found by id.
pub fn coalesce_render_ops(ops: Vec<RenderOp>) -> Vec<RenderOp> {
    let mut batch = Coalesced::default();
    batch.out.reserve(ops.len());
    for op in ops {
        batch.push(op);
    }
    let mut kept = Vec::with_capacity(batch.out.iter().flatten().count());
    kept.extend(batch.out.into_iter().flatten());
    kept
}

/// [`coalesce_render_ops`]'s state: the ops kept so far (`None` where a later op superseded one)
/// and, per entry, where its kept ops are.
#[derive(Default)]
struct Coalesced {
    out: Vec<Option<RenderOp>>,
    /// Entry id -> positions in `out` of the entry's kept ops, in order.
    entries: HashMap<String, Vec<usize>>,
    usage: Option<usize>,
    commands: Option<usize>,
    info: Option<usize>,
}

impl Coalesced {
    fn push(&mut self, op: RenderOp) {
        match op {
            RenderOp::InsertEntry { index, entry } => {
                let id = entry.id.clone();
                let at = self.keep(RenderOp::InsertEntry { index, entry });
                self.entries.insert(id, vec![at]);
            }
            RenderOp::UpdateEntry { id, entry } => self.update(id, entry),
            RenderOp::AppendText { id, text } => self.append(id, text),
            RenderOp::TruncateText { id, len } => self.truncate(id, len),
            RenderOp::SetUsage { .. } => Self::last_wins(&mut self.out, &mut self.usage, op),
            RenderOp::SetCommands { .. } => Self::last_wins(&mut self.out, &mut self.commands, op),
            RenderOp::SetSessionInfo { .. } => Self::last_wins(&mut self.out, &mut self.info, op),
            RenderOp::SetState { .. } | RenderOp::Notice { .. } => {
                self.keep(op);
            }
        }
    }

    /// Keeps `op` at the end; returns its position.
    fn keep(&mut self, op: RenderOp) -> usize {
        self.out.push(Some(op));
        self.out.len() - 1
    }

    /// Keeps the op `make` builds from `id` as the entry's newest op.
    fn keep_for(&mut self, id: String, make: impl FnOnce(String) -> RenderOp) {
        let at = self.out.len();
        match self.entries.get_mut(id.as_str()) {
            Some(kept) => kept.push(at),
            None => {
                self.entries.insert(id.clone(), vec![at]);
            }
        }
        self.out.push(Some(make(id)));
    }

    fn last_wins(out: &mut Vec<Option<RenderOp>>, first: &mut Option<usize>, op: RenderOp) {
        match *first {
            Some(at) => out[at] = Some(op),
            None => {
                *first = Some(out.len());
                out.push(Some(op));
            }
        }
    }

    fn update(&mut self, id: String, entry: EntryView) {
        let Some(kept) = self.entries.get_mut(id.as_str()) else {
            let at = self.keep(RenderOp::UpdateEntry {
                id: id.clone(),
                entry,
            });
            self.entries.insert(id, vec![at]);
            return;
        };
        for &at in &kept[1..] {
            self.out[at] = None;
        }
        kept.truncate(1);
        match &mut self.out[kept[0]] {
            Some(RenderOp::InsertEntry {
                entry: inserted, ..
            }) => *inserted = entry,
            slot => *slot = Some(RenderOp::UpdateEntry { id, entry }),
        }
    }

    fn append(&mut self, id: String, text: String) {
        if let Some(&last) = self.entries.get(id.as_str()).and_then(|kept| kept.last()) {
            match &mut self.out[last] {
                Some(RenderOp::InsertEntry { entry, .. } | RenderOp::UpdateEntry { entry, .. }) => {
                    return entry.text.push_str(&text);
                }
                Some(RenderOp::AppendText { text: so_far, .. }) => return so_far.push_str(&text),
                _ => {}
            }
        }
        self.keep_for(id, |id| RenderOp::AppendText { id, text });
    }

    fn truncate(&mut self, id: String, len: usize) {
        if self.fold_truncate(&id, len) {
            return;
        }
        self.keep_for(id, |id| RenderOp::TruncateText { id, len });
    }

    /// Folds a truncation of entry `id` to `len` UTF-16 code units into its kept ops, when they
    /// tell the text there (see [`coalesce_render_ops`]); false when they do not.
    fn fold_truncate(&mut self, id: &str, len: usize) -> bool {
        let Some(kept) = self.entries.get_mut(id) else {
            return false;
        };
        let last = kept[kept.len() - 1];
        // The length an earlier truncation of the entry left, when only appends followed it.
        let cut = match kept.len().checked_sub(2).map(|at| &self.out[kept[at]]) {
            Some(Some(RenderOp::TruncateText { len, .. })) => Some(*len),
            _ => None,
        };
        match (&mut self.out[last], cut) {
            (
                Some(RenderOp::InsertEntry { entry, .. } | RenderOp::UpdateEntry { entry, .. }),
                _,
            ) => match utf16_to_byte_offset(&entry.text, len) {
                Some(byte) => {
                    entry.text.truncate(byte);
                    true
                }
                None => false,
            },
            (Some(RenderOp::TruncateText { len: cut, .. }), _) if len < *cut => {
                *cut = len;
                true
            }
            (Some(RenderOp::AppendText { .. }), Some(cut)) if len <= cut => {
                // The appended text goes; the earlier truncation cuts further.
                self.out[last] = None;
                kept.pop();
                if let Some(RenderOp::TruncateText { len: earlier, .. }) =
                    &mut self.out[kept[kept.len() - 1]]
                {
                    *earlier = len;
                }
                true
            }
            (Some(RenderOp::AppendText { text, .. }), Some(cut)) => {
                match utf16_to_byte_offset(text, len - cut) {
                    // (`len > cut`: the appended text keeps some.)
                    Some(byte) => {
                        text.truncate(byte);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }
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

    fn entry(id: &str, text: &str, status: &str) -> EntryView {
        serde_json::from_value(json!({
            "id": id, "kind": "tool_call", "text": text, "status": status,
        }))
        .unwrap()
    }

    fn insert(index: usize, id: &str, text: &str) -> RenderOp {
        RenderOp::InsertEntry {
            index,
            entry: entry(id, text, "pending"),
        }
    }

    fn insert_done(index: usize, id: &str, text: &str) -> RenderOp {
        RenderOp::InsertEntry {
            index,
            entry: entry(id, text, "completed"),
        }
    }

    fn update(id: &str, text: &str) -> RenderOp {
        RenderOp::UpdateEntry {
            id: id.into(),
            entry: entry(id, text, "completed"),
        }
    }

    fn append(id: &str, text: &str) -> RenderOp {
        RenderOp::AppendText {
            id: id.into(),
            text: text.into(),
        }
    }

    fn truncate(id: &str, len: usize) -> RenderOp {
        RenderOp::TruncateText { id: id.into(), len }
    }

    fn usage(used: u64) -> RenderOp {
        RenderOp::SetUsage {
            usage: json!({ "used": used }),
        }
    }

    fn commands(n: u64) -> RenderOp {
        RenderOp::SetCommands {
            commands: json!([{ "name": n.to_string() }]),
        }
    }

    fn info(title: &str) -> RenderOp {
        RenderOp::SetSessionInfo {
            info: SessionInfo {
                title: Some(title.into()),
                ..SessionInfo::default()
            },
        }
    }

    fn state(status: &str) -> RenderOp {
        RenderOp::SetState {
            state: SessionState {
                status: status.into(),
                ..SessionState::default()
            },
        }
    }

    fn notice(title: &str) -> RenderOp {
        RenderOp::Notice {
            severity: "info".into(),
            title: title.into(),
            description: None,
        }
    }

    /// What a view that applies ops one by one holds: the entries in order with their last whole
    /// view and their text in UTF-16 code units, and the session values. Entries present before
    /// the batch are `m` ("0123"), `t` ("ab😀") and `u` (""), so that ops need no insert.
    #[derive(Debug, PartialEq)]
    struct Model {
        order: Vec<String>,
        entries: HashMap<String, (Option<EntryView>, Vec<u16>)>,
        usage: Option<Value>,
        commands: Option<Value>,
        info: Option<SessionInfo>,
        events: Vec<RenderOp>, // states and notices, in order
    }

    impl Model {
        fn new() -> Self {
            let mut model = Model {
                order: Vec::new(),
                entries: HashMap::new(),
                usage: None,
                commands: None,
                info: None,
                events: Vec::new(),
            };
            for (id, text) in [("m", "0123"), ("t", "ab\u{1F600}"), ("u", "")] {
                model.order.push(id.into());
                model
                    .entries
                    .insert(id.into(), (None, text.encode_utf16().collect()));
            }
            model
        }

        fn apply(mut self, ops: &[RenderOp]) -> Self {
            for op in ops {
                match op.clone() {
                    RenderOp::InsertEntry { index, mut entry } => {
                        assert_eq!(index, self.order.len(), "insert index");
                        let text = std::mem::take(&mut entry.text).encode_utf16().collect();
                        self.order.push(entry.id.clone());
                        self.entries.insert(entry.id.clone(), (Some(entry), text));
                    }
                    RenderOp::UpdateEntry { id, mut entry } => {
                        let text = std::mem::take(&mut entry.text).encode_utf16().collect();
                        *self.entries.get_mut(&id).unwrap() = (Some(entry), text);
                    }
                    RenderOp::AppendText { id, text } => {
                        assert!(!text.is_empty(), "empty append");
                        self.entries
                            .get_mut(&id)
                            .unwrap()
                            .1
                            .extend(text.encode_utf16());
                    }
                    RenderOp::TruncateText { id, len } => {
                        let text = &mut self.entries.get_mut(&id).unwrap().1;
                        // (Cut where told, even inside a surrogate pair: one case sends that.)
                        assert!(len < text.len(), "truncate does not shorten");
                        text.truncate(len);
                    }
                    RenderOp::SetUsage { usage } => self.usage = Some(usage),
                    RenderOp::SetCommands { commands } => self.commands = Some(commands),
                    RenderOp::SetSessionInfo { info } => self.info = Some(info),
                    op @ (RenderOp::SetState { .. } | RenderOp::Notice { .. }) => {
                        self.events.push(op)
                    }
                }
            }
            self
        }
    }

    #[test]
    fn coalescing_keeps_one_op_per_entry_and_what_a_view_ends_with() {
        // (what the case shows, ops in, ops out)
        let cases: Vec<(&str, Vec<RenderOp>, Vec<RenderOp>)> = vec![
            ("nothing", vec![], vec![]),
            ("one op", vec![append("m", "a")], vec![append("m", "a")]),
            (
                "appends to one entry",
                vec![append("m", "a"), append("m", "b"), append("m", "c")],
                vec![append("m", "abc")],
            ),
            (
                "appends merge across other entries' ops, states and notices",
                vec![
                    append("m", "a"),
                    insert(3, "x", "1"),
                    append("t", "x"),
                    state("running"),
                    update("u", "new"),
                    append("m", "b"),
                    notice("n"),
                    truncate("t", 2),
                    append("m", "c"),
                ],
                vec![
                    append("m", "abc"),
                    insert(3, "x", "1"),
                    append("t", "x"),
                    state("running"),
                    update("u", "new"),
                    notice("n"),
                    truncate("t", 2),
                ],
            ),
            (
                "an update supersedes the entry's earlier ops, at the first one's place",
                vec![
                    append("m", "a"),
                    append("t", "x"),
                    truncate("m", 2),
                    append("m", "b"),
                    update("m", "whole"),
                    append("t", "y"),
                    update("m", "again"),
                ],
                vec![update("m", "again"), append("t", "xy")],
            ),
            (
                "an insert takes a later update, and keeps its index",
                vec![
                    insert(3, "x", "1"),
                    append("m", "a"),
                    append("x", "2"),
                    update("x", "done"),
                    append("x", "!"),
                ],
                vec![insert_done(3, "x", "done!"), append("m", "a")],
            ),
            (
                "appends and truncations fold into an inserted entry's text",
                vec![
                    insert(3, "x", "ab\u{1F600}"),
                    append("x", "cd"),
                    truncate("x", 4),
                    append("x", "e"),
                    truncate("x", 2),
                    append("x", "f"),
                ],
                vec![insert(3, "x", "abf")],
            ),
            (
                "a truncation inside a surrogate pair (which the engine never sends) is not folded",
                vec![insert(3, "x", "a\u{1F600}"), truncate("x", 2)],
                vec![insert(3, "x", "a\u{1F600}"), truncate("x", 2)],
            ),
            (
                "an updated entry's text is cut after a surrogate pair",
                vec![update("t", "\u{1F600}\u{1F601}z"), truncate("t", 2)],
                vec![update("t", "\u{1F600}")],
            ),
            (
                "a truncation then appends: one truncation, one append",
                vec![
                    append("u", "0"),
                    truncate("m", 2),
                    append("u", "1"),
                    append("m", "x"),
                    append("m", "y"),
                ],
                vec![append("u", "01"), truncate("m", 2), append("m", "xy")],
            ),
            (
                "a second truncation cuts what was appended since the first",
                vec![
                    truncate("m", 2),
                    append("m", "x\u{1F600}y"),
                    truncate("m", 5),
                    append("m", "z"),
                ],
                vec![truncate("m", 2), append("m", "x\u{1F600}z")],
            ),
            (
                "a second truncation shorter than the first drops what was appended",
                vec![
                    truncate("m", 3),
                    append("m", "xy"),
                    truncate("m", 1),
                    truncate("m", 0),
                ],
                vec![truncate("m", 0)],
            ),
            (
                "a truncation cutting all that was appended since the first",
                vec![
                    truncate("t", 2),
                    append("t", "xy"),
                    truncate("t", 2),
                    append("t", "z"),
                ],
                vec![truncate("t", 2), append("t", "z")],
            ),
            (
                "a truncation after an append to a text of unknown length stays",
                vec![append("m", "x"), truncate("m", 3), append("m", "y")],
                vec![append("m", "x"), truncate("m", 3), append("m", "y")],
            ),
            (
                "usage, commands and session info: the last of each, at the first one's place",
                vec![
                    usage(1),
                    info("a"),
                    append("m", "a"),
                    commands(1),
                    usage(2),
                    state("running"),
                    info("b"),
                    commands(2),
                    usage(3),
                ],
                vec![
                    usage(3),
                    info("b"),
                    append("m", "a"),
                    commands(2),
                    state("running"),
                ],
            ),
            (
                "inserts keep their order and indices; states and notices keep theirs",
                vec![
                    insert(3, "x", ""),
                    notice("1"),
                    insert(4, "y", ""),
                    append("x", "a"),
                    state("idle"),
                    insert(5, "z", ""),
                    append("y", "b"),
                    notice("2"),
                    append("x", "c"),
                ],
                vec![
                    insert(3, "x", "ac"),
                    notice("1"),
                    insert(4, "y", "b"),
                    state("idle"),
                    insert(5, "z", ""),
                    notice("2"),
                ],
            ),
        ];
        for (what, ops, expected) in cases {
            let coalesced = coalesce_render_ops(ops.clone());
            assert_eq!(coalesced, expected, "{what}");
            assert_eq!(
                Model::new().apply(&coalesced),
                Model::new().apply(&ops),
                "{what}: not what the ops give"
            );
        }
    }
}
