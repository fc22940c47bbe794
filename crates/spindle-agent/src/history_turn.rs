//! What a turn leaves in the session's history besides the messages: each
//! tool call as it ended (title, kind, status, text content, file diffs) and
//! the plan as it ended, in the order they first appeared among the turn's
//! messages. Recorded version-neutral, read from the updates the agent sent
//! in either version, so `session/load` and v2 `session/resume` replay a turn
//! as the client saw it live: the replay of a v1 session as v2 and the other
//! way round holds the same calls, diffs and plan.

use serde_json::{Value, json};
use spindle_wire::tags::UpdateTag;

use crate::updates;
use crate::wire::Version;

/// One file diff of a tool call: the path, and the text before and after
/// (the whole file, or the changed region with its context, as sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedDiff {
    /// The file.
    pub path: String,
    /// The text before (empty for a new file).
    pub old_text: String,
    /// The text after.
    pub new_text: String,
}

/// A tool call as it ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordedTool {
    /// `title`.
    pub title: String,
    /// `kind`.
    pub kind: String,
    /// `status`.
    pub status: String,
    /// The text content items, in order.
    pub texts: Vec<String>,
    /// The diff content items, in order.
    pub diffs: Vec<RecordedDiff>,
}

/// One thing a turn showed, in the order it first appeared.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnItem {
    /// An agent message: its id and text.
    Reply(String, String),
    /// A tool call: its id and state.
    Tool(String, RecordedTool),
    /// The plan's items (content, status).
    Plan(Vec<(String, String)>),
}

/// Follows one update the agent sent during the turn.
pub fn track_update(items: &mut Vec<TurnItem>, update: &Value) {
    let Some(tag) = update["sessionUpdate"].as_str().and_then(UpdateTag::parse) else {
        return;
    };
    match tag {
        UpdateTag::ToolCall | UpdateTag::ToolCallUpdate | UpdateTag::ToolCallContentChunk => {
            let Some(id) = update["toolCallId"].as_str() else {
                return;
            };
            let at = items
                .iter()
                .position(|i| matches!(i, TurnItem::Tool(t, _) if t == id));
            let at = at.unwrap_or_else(|| {
                items.push(TurnItem::Tool(id.to_owned(), RecordedTool::default()));
                items.len() - 1
            });
            if let TurnItem::Tool(_, tool) = &mut items[at] {
                tool.apply(tag, update);
            }
        }
        UpdateTag::Plan | UpdateTag::PlanUpdate => {
            let entries = update
                .get("entries")
                .or_else(|| update.pointer("/plan/entries"))
                .and_then(Value::as_array);
            let entries: Vec<(String, String)> = entries
                .into_iter()
                .flatten()
                .map(|e| {
                    let text = |k: &str| e[k].as_str().unwrap_or("").to_owned();
                    (text("content"), text("status"))
                })
                .collect();
            match items.iter_mut().find(|i| matches!(i, TurnItem::Plan(_))) {
                Some(plan) => *plan = TurnItem::Plan(entries),
                None => items.push(TurnItem::Plan(entries)),
            }
        }
        _ => {}
    }
}

impl RecordedTool {
    fn apply(&mut self, tag: UpdateTag, update: &Value) {
        let text = |k: &str| update.get(k).and_then(Value::as_str).map(str::to_owned);
        if let Some(title) = text("title") {
            self.title = title;
        }
        if let Some(kind) = text("kind") {
            self.kind = kind;
        }
        if let Some(status) = text("status") {
            self.status = status;
        }
        if tag == UpdateTag::ToolCallContentChunk {
            self.add_item(&update["content"]);
        } else if let Some(content) = update.get("content").and_then(Value::as_array) {
            self.texts.clear();
            self.diffs.clear();
            for item in content {
                self.add_item(item);
            }
        }
    }

    /// A content item: text and diffs are kept; terminals are not (they do
    /// not outlive the process).
    fn add_item(&mut self, item: &Value) {
        match item["type"].as_str() {
            Some("content") => {
                if let Some(text) = item.pointer("/content/text").and_then(Value::as_str) {
                    self.texts.push(text.to_owned());
                }
            }
            Some("diff") => {
                if let Some(path) = item["path"].as_str() {
                    self.diffs.push(RecordedDiff {
                        path: path.to_owned(),
                        old_text: item["oldText"].as_str().unwrap_or("").to_owned(),
                        new_text: item["newText"].as_str().unwrap_or("").to_owned(),
                    });
                } else if let Some(path) = item.pointer("/changes/0/path").and_then(Value::as_str) {
                    let patch = item.pointer("/patch/text").and_then(Value::as_str);
                    let (old_text, new_text) = patch.map(texts_of_patch).unwrap_or_default();
                    self.diffs.push(RecordedDiff {
                        path: path.to_owned(),
                        old_text,
                        new_text,
                    });
                }
            }
            _ => {}
        }
    }

    /// The record on disk: `{"title","kind","status","texts","diffs":[{"path","oldText","newText"}]}`.
    pub fn to_json(&self) -> Value {
        let diffs: Vec<Value> = self
            .diffs
            .iter()
            .map(|d| json!({"path": d.path, "oldText": d.old_text, "newText": d.new_text}))
            .collect();
        json!({"title": self.title, "kind": self.kind, "status": self.status,
               "texts": self.texts, "diffs": diffs})
    }

    /// Reads [`Self::to_json`]'s record (missing parts are empty).
    pub fn from_json(value: &Value) -> RecordedTool {
        let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_owned();
        RecordedTool {
            title: text(value, "title"),
            kind: text(value, "kind"),
            status: text(value, "status"),
            texts: value["texts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
            diffs: value["diffs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| RecordedDiff {
                    path: text(d, "path"),
                    old_text: text(d, "oldText"),
                    new_text: text(d, "newText"),
                })
                .collect(),
        }
    }

    /// The one update that shows the call as it ended, in `version`.
    pub fn replay_update(&self, version: Version, tool_call_id: &str) -> Value {
        let mut update =
            updates::tool_call_start(version, tool_call_id, &self.title, &self.kind, Value::Null);
        if let Some(fields) = update.as_object_mut() {
            fields.remove("rawInput");
        }
        update["status"] = json!(self.status);
        let mut content: Vec<Value> = self.texts.iter().map(|t| updates::tool_text(t)).collect();
        content.extend(
            self.diffs
                .iter()
                .map(|d| updates::tool_diff(version, &d.path, &d.old_text, &d.new_text)),
        );
        update["content"] = Value::Array(content);
        update
    }
}

/// The text before and after a one-file git patch, from its hunks: context
/// and removed lines before, context and added lines after (the changed
/// regions with their context, which is what a v1 diff of them shows).
fn texts_of_patch(patch: &str) -> (String, String) {
    let (mut old, mut new) = (String::new(), String::new());
    let mut in_hunk = false;
    for line in patch.lines() {
        if line.starts_with("@@") {
            in_hunk = true;
            continue;
        }
        if !in_hunk {
            continue;
        }
        match line.as_bytes().first() {
            Some(b' ') => {
                old.push_str(&line[1..]);
                old.push('\n');
                new.push_str(&line[1..]);
                new.push('\n');
            }
            Some(b'-') => {
                old.push_str(&line[1..]);
                old.push('\n');
            }
            Some(b'+') => {
                new.push_str(&line[1..]);
                new.push('\n');
            }
            _ => in_hunk = line.starts_with('\\'),
        }
    }
    (old, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "fn main() {\n    println!(\"hello\");\n}\n";
    const NEW: &str = "fn main() {\n    println!(\"hello, spindle\");\n}\n";

    /// The updates of an edit as `version` sends them, as the tools scenario does.
    fn edit_updates(version: Version) -> Vec<Value> {
        vec![
            updates::plan(version, "p", &[("Edit", "in_progress")]),
            updates::tool_call_start(version, "c1", "Edit a.rs", "edit", json!({})),
            updates::tool_call_status(
                "c1",
                "completed",
                Some(vec![
                    updates::tool_text("done"),
                    updates::tool_diff(version, "/w/a.rs", OLD, NEW),
                ]),
            ),
            updates::plan(version, "p", &[("Edit", "completed")]),
        ]
    }

    #[test]
    fn a_turn_is_recorded_the_same_from_either_version_and_replays_in_both() {
        for sent in [Version::V1, Version::V2] {
            let mut items = Vec::new();
            for update in edit_updates(sent) {
                track_update(&mut items, &update);
            }
            let expected_tool = RecordedTool {
                title: "Edit a.rs".into(),
                kind: "edit".into(),
                status: "completed".into(),
                texts: vec!["done".into()],
                diffs: vec![RecordedDiff {
                    path: "/w/a.rs".into(),
                    old_text: OLD.into(),
                    new_text: NEW.into(),
                }],
            };
            assert_eq!(
                items,
                vec![
                    TurnItem::Plan(vec![("Edit".into(), "completed".into())]),
                    TurnItem::Tool("c1".into(), expected_tool.clone()),
                ],
                "{sent:?}"
            );
            assert_eq!(
                RecordedTool::from_json(&expected_tool.to_json()),
                expected_tool
            );
            for replay in [Version::V1, Version::V2] {
                let update = expected_tool.replay_update(replay, "r1");
                assert_eq!(update["status"], "completed");
                assert_eq!(update["title"], "Edit a.rs");
                assert!(update.get("rawInput").is_none());
                let diff = &update["content"][1];
                assert_eq!(diff, &updates::tool_diff(replay, "/w/a.rs", OLD, NEW));
            }
        }
    }

    #[test]
    fn a_v2_content_chunk_adds_to_the_call_and_terminals_are_left_out() {
        let mut items = Vec::new();
        track_update(
            &mut items,
            &updates::tool_call_start(Version::V2, "c", "Read", "read", json!({})),
        );
        track_update(
            &mut items,
            &updates::tool_content_chunk("c", updates::tool_text("one")),
        );
        track_update(
            &mut items,
            &updates::tool_content_chunk("c", json!({"type": "terminal", "terminalId": "t"})),
        );
        track_update(
            &mut items,
            &updates::tool_content_chunk("c", updates::tool_text("two")),
        );
        let TurnItem::Tool(_, tool) = &items[0] else {
            panic!("{items:?}")
        };
        assert_eq!(tool.texts, ["one", "two"]);
        assert_eq!(tool.status, "pending");
    }
}
