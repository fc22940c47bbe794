//! The prompts a session holds while a v1 agent's turn runs (issue 27): the queue as the log
//! tells it. Every change is a server note in the session's log (`{"spindle":"queue",...}`), so
//! the log stays the one source of truth: the replica that runs the session writes the notes, a
//! replica that follows the log and a restart rebuild the same queue from them, and every page
//! is shown it by one server fact (`web_queue`).
//!
//! The changes: `add` (an item at the end), `edit` (its text), `remove` (`why`: `removed` by the
//! user, `sent` to the agent; a `sent` note is logged in the batch of the prompt request it
//! became, so a crash never both sends and keeps an item) and `front` (moved to the head: "send
//! now"). A note naming an item the queue does not hold changes nothing.
//!
//! Only the task's rules decide when an item is sent (`task/queue.rs`); this module holds no
//! rule beyond the order.

use serde_json::{Value, json};

use crate::page_ops::PageOp;

/// The kind of the queue's server notes.
pub(crate) const QUEUE_NOTE: &str = "queue";

/// The longest item id accepted.
const MAX_ID_CHARS: usize = 64;

/// One prompt waiting in the queue.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueuedItem {
    /// Unique in the session (letters, digits, `-`: a URL path segment as is).
    pub(crate) id: String,
    /// The prompt's text (for an `/acp` prompt: the text of its first text block).
    pub(crate) text: String,
    /// The page's images, as sent (`[{mimeType, data}]`).
    pub(crate) images: Value,
    /// An `/acp` client's prompt: its blocks as sent (the text is then only shown).
    pub(crate) blocks: Option<Value>,
    /// The forwarded command the item came from, for an `/acp` prompt another replica
    /// forwarded (its sender answers its client from the log, see `task/forward.rs`).
    pub(crate) command: Option<String>,
    /// Who queued it (`spindle serve --users`): the prompt's author once it is sent.
    pub(crate) author: Option<String>,
}

impl QueuedItem {
    /// The item as the page and the API show it (`position` counts from 1).
    pub(crate) fn view(&self, position: usize) -> Value {
        let mut view = json!({
            "id": self.id,
            "text": self.text,
            "position": position,
            "images": self.images.as_array().map_or(0, Vec::len),
            "acp": self.blocks.is_some(),
        });
        // Who queued it, with `--users`.
        if let (Some(author), Value::Object(map)) = (&self.author, &mut view) {
            map.insert("author".into(), Value::from(author.as_str()));
        }
        view
    }

    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "text": self.text,
            "images": self.images,
            "blocks": self.blocks,
            "command": self.command,
            "author": self.author,
        })
    }

    fn from_json(item: &Value) -> Option<QueuedItem> {
        let id = item.get("id")?.as_str()?;
        if !valid_id(id) {
            return None;
        }
        Some(QueuedItem {
            id: id.to_owned(),
            text: item.get("text")?.as_str()?.to_owned(),
            images: item.get("images").cloned().unwrap_or_else(|| json!([])),
            blocks: item.get("blocks").filter(|b| !b.is_null()).cloned(),
            command: item
                .get("command")
                .and_then(Value::as_str)
                .map(str::to_owned),
            author: item
                .get("author")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }
}

/// Whether `id` can name an item (what the task generates, and the API accepts).
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Why an item left the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    /// The user removed it.
    Removed,
    /// It was sent to the agent.
    Sent,
}

impl Removal {
    fn as_str(self) -> &'static str {
        match self {
            Removal::Removed => "removed",
            Removal::Sent => "sent",
        }
    }
}

/// `{"spindle":"queue","change":"add","item":{...}}`.
pub(crate) fn add_note(item: &QueuedItem) -> String {
    json!({ "spindle": QUEUE_NOTE, "change": "add", "item": item.to_json() }).to_string()
}

/// `{"spindle":"queue","change":"edit","id":..,"text":..}`.
pub(crate) fn edit_note(id: &str, text: &str) -> String {
    json!({ "spindle": QUEUE_NOTE, "change": "edit", "id": id, "text": text }).to_string()
}

/// `{"spindle":"queue","change":"remove","id":..,"why":..}`, with the item's forwarded command
/// when it has one (its sender answers its `/acp` client when the item is removed).
pub(crate) fn remove_note(item: &QueuedItem, why: Removal) -> String {
    let mut note = json!({ "spindle": QUEUE_NOTE, "change": "remove", "id": item.id,
                           "why": why.as_str() });
    if let Some(command) = &item.command {
        note["command"] = json!(command);
    }
    note.to_string()
}

/// `{"spindle":"queue","change":"front","id":..}`.
pub(crate) fn front_note(id: &str) -> String {
    json!({ "spindle": QUEUE_NOTE, "change": "front", "id": id }).to_string()
}

/// The queue as the log's notes built it.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct PromptQueue {
    items: Vec<QueuedItem>,
}

impl PromptQueue {
    /// Applies one queue note (already parsed); a note naming no item held changes nothing.
    pub(crate) fn apply(&mut self, note: &Value) {
        let id = note.get("id").and_then(Value::as_str).unwrap_or_default();
        let index = self.items.iter().position(|item| item.id == id);
        match (note.get("change").and_then(Value::as_str), index) {
            (Some("add"), _) => {
                let item = note.get("item").and_then(QueuedItem::from_json);
                if let Some(item) = item
                    && self.get(&item.id).is_none()
                {
                    self.items.push(item);
                }
            }
            (Some("edit"), Some(index)) => {
                if let Some(text) = note.get("text").and_then(Value::as_str) {
                    text.clone_into(&mut self.items[index].text);
                }
            }
            (Some("remove"), Some(index)) => {
                self.items.remove(index);
            }
            (Some("front"), Some(index)) => {
                let item = self.items.remove(index);
                self.items.insert(0, item);
            }
            // A newer server's change, or one naming an item that is gone.
            _ => {}
        }
    }

    /// The items, first to be sent first.
    pub(crate) fn items(&self) -> &[QueuedItem] {
        &self.items
    }

    /// The item `id`, if the queue holds it.
    pub(crate) fn get(&self, id: &str) -> Option<&QueuedItem> {
        self.items.iter().find(|item| item.id == id)
    }

    /// The item `id` with its position (from 1), as the API shows it.
    pub(crate) fn view_of(&self, id: &str) -> Option<Value> {
        let index = self.items.iter().position(|item| item.id == id)?;
        Some(self.items[index].view(index + 1))
    }

    /// The items as the API lists them.
    pub(crate) fn views(&self) -> Vec<Value> {
        self.items
            .iter()
            .enumerate()
            .map(|(index, item)| item.view(index + 1))
            .collect()
    }

    /// The page's op for the queue (`web_queue`).
    pub(crate) fn page_op(&self) -> PageOp {
        PageOp::WebQueue {
            items: Value::Array(self.views()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, text: &str) -> QueuedItem {
        QueuedItem {
            id: id.into(),
            text: text.into(),
            images: json!([]),
            blocks: None,
            command: None,
            author: None,
        }
    }

    fn apply(queue: &mut PromptQueue, note: &str) {
        queue.apply(&serde_json::from_str(note).unwrap());
    }

    fn texts(queue: &PromptQueue) -> Vec<&str> {
        queue.items().iter().map(|i| i.text.as_str()).collect()
    }

    #[test]
    fn notes_add_edit_move_and_remove_items_in_order() {
        let mut queue = PromptQueue::default();
        for (id, text) in [("a", "one"), ("b", "two"), ("c", "three")] {
            apply(&mut queue, &add_note(&item(id, text)));
        }
        assert_eq!(texts(&queue), ["one", "two", "three"]);
        apply(&mut queue, &edit_note("b", "two, edited"));
        apply(&mut queue, &front_note("c"));
        assert_eq!(texts(&queue), ["three", "one", "two, edited"]);
        apply(&mut queue, &remove_note(&item("a", ""), Removal::Removed));
        assert_eq!(texts(&queue), ["three", "two, edited"]);
        assert_eq!(
            queue.view_of("b"),
            Some(
                json!({"id": "b", "text": "two, edited", "position": 2, "images": 0,
                        "acp": false})
            )
        );
    }

    #[test]
    fn notes_naming_no_item_or_of_unknown_changes_change_nothing() {
        let mut queue = PromptQueue::default();
        apply(&mut queue, &add_note(&item("a", "one")));
        let before = queue.clone();
        apply(&mut queue, &edit_note("zz", "x"));
        apply(&mut queue, &front_note("zz"));
        apply(&mut queue, &remove_note(&item("zz", ""), Removal::Sent));
        apply(
            &mut queue,
            r#"{"spindle":"queue","change":"shuffle","id":"a"}"#,
        );
        // The same id twice (a note logged again) is one item; a bad id is no item.
        apply(&mut queue, &add_note(&item("a", "again")));
        apply(&mut queue, &add_note(&item("a/b", "slash")));
        assert_eq!(queue, before);
    }

    #[test]
    fn an_acp_item_keeps_its_blocks_and_command_through_its_note() {
        let mut queue = PromptQueue::default();
        let acp = QueuedItem {
            blocks: Some(json!([{"type": "text", "text": "hi"}])),
            command: Some("r1/5/2".into()),
            author: Some("alice".into()),
            ..item("q-1", "hi")
        };
        apply(&mut queue, &add_note(&acp));
        assert_eq!(queue.items(), std::slice::from_ref(&acp));
        let removed: Value = serde_json::from_str(&remove_note(&acp, Removal::Removed)).unwrap();
        assert_eq!(removed["command"], "r1/5/2");
        assert_eq!(removed["why"], "removed");
        assert_eq!(queue.views()[0]["acp"], true);
        assert_eq!(queue.views()[0]["author"], "alice");
    }

    #[test]
    fn ids_are_url_segments() {
        assert!(valid_id("q-18c2-3"));
        for bad in ["", "a/b", "a b", "é", &"x".repeat(65)] {
            assert!(!valid_id(bad), "{bad:?}");
        }
    }
}
