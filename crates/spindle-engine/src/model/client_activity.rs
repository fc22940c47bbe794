//! What the client did for the agent during a tool call, as far as the wire
//! and the client's local lines show it: files the agent wrote through the
//! client (`fs/write_text_file`, each shown as a diff with its outcome) and
//! files it read (`fs/read_text_file`).

use serde_json::{Map, Value, json};

use super::diff::{FileDiff, diffs_of_content};

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

    /// The `write` member of the write's diff in the entry view:
    /// `requestId` (the JSON-RPC id, parsed), `status`, `error`, and
    /// `oldTextKnown: false` while the text before is unknown.
    pub(crate) fn view_json(&self) -> Value {
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
        Value::Object(map)
    }
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
