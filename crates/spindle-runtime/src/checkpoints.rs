//! Checkpoints of a served session as its log notes them, and the names the API gives them.
//!
//! The files themselves are kept by [`spindle_host::checkpoints`] on the disk of the replica
//! that ran the turn (in Spindle's data directory, never inside a root); the session task takes
//! them (`task/checkpoint.rs`). The log holds a server note per checkpoint taken and per
//! restore, so every replica, and the same server after a restart, knows which turns have a
//! checkpoint, where it was taken and what was restored, without reading that disk:
//!
//! ```text
//! {"spindle":"checkpoint","turn":2,"at":MS,"files":14,"skipped":[{"path":..,"why":..}],"skippedCount":1,"replica":ID}
//! {"spindle":"checkpoint_restored","checkpoint":"2","turn":2,"undo":"restore-1","written":3,"deleted":1,"at":MS,"afterTurn":4,"replica":ID}
//! ```
//!
//! A checkpoint is named in a path by its id: `N` (taken before turn N, the Nth turn as the
//! transcript counts it) or `restore-K` (taken before the Kth restore: restoring it undoes that
//! restore).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use spindle_host::checkpoints::{Checkpoint, CheckpointId};

use crate::page_ops::PageOp;
use crate::store::NOTE_KIND_KEY;

/// The kind of the note logged when a checkpoint was taken before a turn.
pub(crate) const CHECKPOINT_TAKEN: &str = "checkpoint";

/// The kind of the note logged when the files were restored to a checkpoint.
pub(crate) const CHECKPOINT_RESTORED: &str = "checkpoint_restored";

/// The most skipped files a note names (the count says how many there were).
const SKIPPED_NAMED: usize = 20;

/// Where a session's checkpoints are kept under the server's checkpoint directory: named by the
/// session's id and creation time, so a session of another database with the same id never
/// finds them.
pub(crate) fn session_dir(base: &Path, session: i64, created_at: i64) -> PathBuf {
    base.join(format!("serve-{session}-{created_at}"))
}

/// A checkpoint's id as a path segment: `N` or `restore-K`.
pub(crate) fn checkpoint_segment(id: CheckpointId) -> String {
    match id {
        CheckpointId::Turn(n) => n.to_string(),
        CheckpointId::Restore(n) => format!("restore-{n}"),
    }
}

/// The checkpoint a path segment names (`N` or `restore-K`), or `None`.
pub(crate) fn parse_checkpoint_segment(segment: &str) -> Option<CheckpointId> {
    let number = |text: &str| {
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u64>().ok())
            .flatten()
            .filter(|n| *n > 0)
    };
    match segment.strip_prefix("restore-") {
        Some(rest) => number(rest).map(CheckpointId::Restore),
        None => number(segment).map(CheckpointId::Turn),
    }
}

/// A checkpoint as the API and the page show it: `{id, turn|restore, at, files, skipped,
/// skippedCount}`.
pub(crate) fn checkpoint_json(checkpoint: &Checkpoint) -> Value {
    let mut value = json!({
        "id": checkpoint_segment(checkpoint.id),
        "at": checkpoint.at_ms,
        "files": checkpoint.files,
        "skipped": checkpoint.skipped.iter().take(SKIPPED_NAMED)
            .map(|s| json!({"path": s.path, "why": s.why}))
            .collect::<Vec<_>>(),
        "skippedCount": checkpoint.skipped.len(),
    });
    match checkpoint.id {
        CheckpointId::Turn(n) => value["turn"] = json!(n),
        CheckpointId::Restore(n) => value["restore"] = json!(n),
    }
    value
}

/// The note of a checkpoint taken before turn `turn` on replica `replica`.
pub(crate) fn taken_note(checkpoint: &Checkpoint, turn: u64, replica: &str) -> String {
    let mut note = checkpoint_json(checkpoint);
    note["turn"] = json!(turn);
    note["id"] = json!(turn.to_string());
    note["replica"] = json!(replica);
    note[NOTE_KIND_KEY] = json!(CHECKPOINT_TAKEN);
    note.to_string()
}

/// The note of a restore: `restore` is the reply the API gave (see `task/checkpoint.rs`).
pub(crate) fn restored_note(restore: &Value) -> String {
    let mut note = restore.clone();
    note[NOTE_KIND_KEY] = json!(CHECKPOINT_RESTORED);
    note.to_string()
}

/// What the log said about the session's checkpoints (see the module docs).
#[derive(Debug, Default, Clone)]
pub(crate) struct CheckpointFacts {
    /// The checkpoint taken before each turn (the last note of a turn wins).
    turns: BTreeMap<u64, Value>,
    /// The restores, in order.
    restores: Vec<Value>,
    /// Set by a note, cleared by [`Self::take_changed`].
    changed: bool,
}

impl CheckpointFacts {
    /// A server note of kind [`CHECKPOINT_TAKEN`] or [`CHECKPOINT_RESTORED`].
    pub(crate) fn note(&mut self, kind: &str, note: &Value) {
        let mut fact = note.clone();
        if let Some(object) = fact.as_object_mut() {
            object.remove(NOTE_KIND_KEY);
        }
        match kind {
            CHECKPOINT_TAKEN => {
                let Some(turn) = note.get("turn").and_then(Value::as_u64) else {
                    return;
                };
                self.turns.insert(turn, fact);
            }
            CHECKPOINT_RESTORED => self.restores.push(fact),
            _ => return,
        }
        self.changed = true;
    }

    /// Whether a note changed the facts since the last call.
    pub(crate) fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// The note of the checkpoint taken before `turn`, if the log has one.
    pub(crate) fn turn(&self, turn: u64) -> Option<&Value> {
        self.turns.get(&turn)
    }

    /// The checkpoints, oldest turn first.
    pub(crate) fn checkpoints_json(&self) -> Value {
        Value::Array(self.turns.values().cloned().collect())
    }

    /// The restores, in order.
    pub(crate) fn restores_json(&self) -> Value {
        Value::Array(self.restores.clone())
    }

    /// The page's op for them.
    pub(crate) fn page_op(&self) -> PageOp {
        PageOp::WebCheckpoints {
            checkpoints: self.checkpoints_json(),
            restores: self.restores_json(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_host::checkpoints::Skipped;

    #[test]
    fn segments_name_turn_and_restore_checkpoints_and_nothing_else() {
        for (segment, id) in [
            ("1", Some(CheckpointId::Turn(1))),
            ("42", Some(CheckpointId::Turn(42))),
            ("restore-3", Some(CheckpointId::Restore(3))),
            ("0", None),
            ("restore-0", None),
            ("-1", None),
            ("+1", None),
            ("1.5", None),
            ("restore-", None),
            ("restore-x", None),
            ("turn-1", None),
            ("", None),
            ("99999999999999999999999", None),
        ] {
            assert_eq!(parse_checkpoint_segment(segment), id, "{segment:?}");
            if let Some(id) = id {
                assert_eq!(checkpoint_segment(id), segment);
            }
        }
    }

    #[test]
    fn notes_become_facts_and_the_last_note_of_a_turn_wins() {
        let checkpoint = Checkpoint {
            id: CheckpointId::Turn(1),
            at_ms: 5,
            files: 2,
            skipped: vec![Skipped {
                path: "big.bin".into(),
                why: "too big".into(),
                root: 0,
                relative: "big.bin".into(),
            }],
        };
        let mut facts = CheckpointFacts::default();
        assert_eq!(facts.checkpoints_json(), json!([]));
        for (turn, files) in [(1, 2), (2, 3), (1, 4)] {
            let mut taken = checkpoint.clone();
            taken.files = files;
            let note: Value = serde_json::from_str(&taken_note(&taken, turn, "r1")).unwrap();
            assert_eq!(note[NOTE_KIND_KEY], CHECKPOINT_TAKEN);
            facts.note(CHECKPOINT_TAKEN, &note);
        }
        assert!(facts.take_changed());
        assert!(!facts.take_changed());
        assert_eq!(
            facts.checkpoints_json(),
            json!([
                {"id": "1", "turn": 1, "at": 5, "files": 4, "replica": "r1",
                 "skipped": [{"path": "big.bin", "why": "too big"}], "skippedCount": 1},
                {"id": "2", "turn": 2, "at": 5, "files": 3, "replica": "r1",
                 "skipped": [{"path": "big.bin", "why": "too big"}], "skippedCount": 1},
            ])
        );
        let restore = json!({"checkpoint": "1", "turn": 1, "undo": "restore-1"});
        let note: Value = serde_json::from_str(&restored_note(&restore)).unwrap();
        facts.note(CHECKPOINT_RESTORED, &note);
        assert_eq!(facts.restores_json(), json!([restore]));
        assert!(facts.take_changed());
        // A note without a turn changes nothing.
        facts.note(CHECKPOINT_TAKEN, &json!({"spindle": "checkpoint"}));
        assert!(!facts.take_changed());
    }
}
