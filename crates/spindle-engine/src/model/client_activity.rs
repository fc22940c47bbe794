//! What the client did for the agent during a tool call, as far as the wire
//! and the client's local lines show it: files the agent wrote through the
//! client (`fs/write_text_file`, each shown as a diff with its outcome) and
//! files it read (`fs/read_text_file`).

use serde_json::{Map, Value, json};

use super::diff::{ShownChange, diffs_of_content};
use super::file_diff::FileDiff;

/// Where an `fs/write_text_file` request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStatus {
    /// Asked; the client has not answered yet (under an `ask` policy the user
    /// is reviewing it).
    Pending,
    /// The client answered with a result: the file was written.
    Written,
    /// The client answered with an error whose `data.reason` is `rejected`:
    /// the user rejected it.
    Rejected,
    /// The client answered with another error.
    Failed,
}

impl WriteStatus {
    /// `pending`, `written`, `rejected` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteStatus::Pending => "pending",
            WriteStatus::Written => "written",
            WriteStatus::Rejected => "rejected",
            WriteStatus::Failed => "failed",
        }
    }
}

/// One `fs/write_text_file` the agent asked the client for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientWrite {
    /// The request's JSON-RPC id, as JSON text (`3`, `"w-1"`).
    pub request_id: String,
    /// The path as the agent spelled it.
    pub path: String,
    /// The text the file had before (`Some(None)`: it did not exist), once a
    /// local `fileBeforeWrite` line said so; `None` while unknown (the diff
    /// then shows every line as added).
    pub old_text: Option<Option<String>>,
    /// The text the agent asked to write.
    pub new_text: String,
    /// Where it stands.
    pub status: WriteStatus,
    /// The client's error message, for `rejected` and `failed`.
    pub error: Option<String>,
}

impl ClientWrite {
    /// The write as a file diff (old text -> new text).
    pub fn diff(&self) -> FileDiff {
        let old = self.old_text.clone().flatten();
        let item =
            json!({"type": "diff", "path": self.path, "oldText": old, "newText": self.new_text});
        diffs_of_content(std::slice::from_ref(&item))
            .pop()
            .expect("a diff item gives one diff")
    }

    /// The write makes exactly the change the agent showed: the same path
    /// and new text, and (once known) the text before is the one shown (no
    /// text and an empty text both mean no file).
    pub(crate) fn repeats(&self, shown: &ShownChange<'_>) -> bool {
        shown.path == self.path
            && shown.new == self.new_text
            && self
                .old_text
                .as_ref()
                .is_none_or(|before| before.as_deref().unwrap_or("") == shown.old.unwrap_or(""))
    }

    /// The write carries out the shown change: it repeats it, or it writes
    /// the whole file with the shown part replaced (agents that show the
    /// edited snippet alone write the file whole). While the text before is
    /// unknown, a write whose text holds the shown new text is given the
    /// benefit of the doubt.
    pub(crate) fn carries_out(&self, shown: &ShownChange<'_>) -> bool {
        if shown.path != self.path {
            return false;
        }
        if self.repeats(shown) {
            return true;
        }
        match (&self.old_text, shown.old) {
            (None, _) => self.new_text.contains(shown.new),
            (Some(Some(before)), Some(old)) if !old.is_empty() => {
                replaces_once(before, old, shown.new, &self.new_text)
            }
            _ => false,
        }
    }

    /// The `write` member of the write's diff in the entry view:
    /// `requestId` (the JSON-RPC id, parsed), `status`, `error`,
    /// `oldTextKnown: false` while the text before is unknown, and
    /// `differsFromShown: true` when the agent showed a different change to
    /// the same file (`differs_from_shown`).
    pub(crate) fn view_json(&self, differs_from_shown: bool) -> Value {
        let mut map = Map::new();
        map.insert(
            "requestId".into(),
            serde_json::from_str(&self.request_id).unwrap_or(Value::Null),
        );
        map.insert("status".into(), Value::from(self.status.as_str()));
        if let Some(error) = &self.error {
            map.insert("error".into(), Value::from(error.as_str()));
        }
        if self.old_text.is_none() {
            map.insert("oldTextKnown".into(), Value::Bool(false));
        }
        if differs_from_shown {
            map.insert("differsFromShown".into(), Value::Bool(true));
        }
        Value::Object(map)
    }
}

/// `after` is `before` with one occurrence of `old` replaced by `new`.
/// Linear: the occurrence must lie within the common prefix and suffix of
/// `before` and `after`, which are measured once.
fn replaces_once(before: &str, old: &str, new: &str, after: &str) -> bool {
    if before.len() + new.len() != after.len() + old.len() {
        return false;
    }
    let (b, a) = (before.as_bytes(), after.as_bytes());
    let prefix = b.iter().zip(a).take_while(|(x, y)| x == y).count();
    let suffix = b
        .iter()
        .rev()
        .zip(a.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    before
        .match_indices(old)
        .take_while(|(at, _)| *at <= prefix)
        .any(|(at, _)| {
            before.len() - (at + old.len()) <= suffix && after.get(at..at + new.len()) == Some(new)
        })
}

/// The client-side activity of one tool call (boxed in [`super::ToolCall`]:
/// most tool calls have none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientActivity {
    /// Writes, in request order.
    pub writes: Vec<ClientWrite>,
    /// Paths the agent read through the client, in request order (as spelled).
    pub reads: Vec<String>,
}
