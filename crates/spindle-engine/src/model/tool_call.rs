//! A tool call's wire fields (kept as compact JSON) and its permission record.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::compact::{CompactObject, MemberChange};

/// A tool call: its wire fields, patched three-state, plus local state.
///
/// The wire fields are kept as compact JSON text (a long session holds tens of
/// thousands of tool calls; as maps they took 15 times their size) and parsed
/// when read.
#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    pub(crate) fields: CompactObject,
    /// Items `tool_call_content_chunk` appended to an existing `content` since
    /// the fields were last patched: their JSON texts joined by commas, so a
    /// streamed tool output costs its own size, not a rewrite per chunk.
    pub(crate) appended_content: String,
    /// The latest permission request about this call, with its outcome once
    /// answered (boxed: most tool calls have none).
    pub permission: Option<Box<Value>>,
}

impl ToolCall {
    /// A tool call with these wire fields and no permission request.
    pub fn new(fields: &Map<String, Value>) -> ToolCall {
        ToolCall {
            fields: CompactObject::from_map(fields),
            appended_content: String::new(),
            permission: None,
        }
    }

    /// Wire fields in camelCase, in wire order (`toolCallId`, `title`, `kind`,
    /// `status`, `content`, `locations`, `rawInput`, `rawOutput`, `_meta`, ...),
    /// parsed.
    pub fn fields(&self) -> Map<String, Value> {
        self.folded().to_map()
    }

    /// One wire field, parsed.
    pub fn field(&self, key: &str) -> Option<Value> {
        if key == "content" && !self.appended_content.is_empty() {
            return self.folded().get(key);
        }
        self.fields.get(key)
    }

    /// One wire field when it is a string (`title`, `kind`, `status`, ...),
    /// without parsing the others.
    pub fn field_str(&self, key: &str) -> Option<Cow<'_, str>> {
        if key == "content" {
            return None;
        }
        self.fields.get_str(key)
    }

    /// The wire fields as one compact JSON object.
    pub fn fields_json(&self) -> Cow<'_, str> {
        match self.folded() {
            Cow::Borrowed(fields) => Cow::Borrowed(fields.as_json()),
            Cow::Owned(fields) => Cow::Owned(fields.as_json().to_owned()),
        }
    }

    /// The fields with the appended content items in place.
    fn folded(&self) -> Cow<'_, CompactObject> {
        if self.appended_content.is_empty() {
            Cow::Borrowed(&self.fields)
        } else {
            Cow::Owned(
                self.fields
                    .with_array_items("content", &self.appended_content),
            )
        }
    }

    /// Applies member changes (see [`CompactObject::patched`]) after folding
    /// the appended content in.
    pub(crate) fn patch(&mut self, changes: &[MemberChange<'_>]) {
        self.fold();
        self.fields = self.fields.patched(changes);
    }

    /// Appends one item to `content`.
    pub(crate) fn push_content(&mut self, item: &Value) {
        // Items already waiting mean `content` is an array (checked when the first one came):
        // no walk of the fields per chunk.
        if self.appended_content.is_empty()
            && self
                .fields
                .get_raw("content")
                .is_none_or(|raw| !raw.starts_with('['))
        {
            self.fields = self
                .fields
                .patched(&[("content", Some(&Value::Array(vec![item.clone()])))]);
            return;
        }
        if !self.appended_content.is_empty() {
            self.appended_content.push(',');
        }
        let mut bytes = std::mem::take(&mut self.appended_content).into_bytes();
        serde_json::to_writer(&mut bytes, item).expect("a Value serializes");
        self.appended_content = String::from_utf8(bytes).expect("serde_json writes UTF-8");
    }

    fn fold(&mut self) {
        if !self.appended_content.is_empty() {
            self.fields = self
                .fields
                .with_array_items("content", &self.appended_content);
            self.appended_content = String::new();
        }
    }
}

impl PartialEq for ToolCall {
    /// Equal wire fields (as JSON objects) and permission records.
    fn eq(&self, other: &Self) -> bool {
        self.permission == other.permission && *self.folded() == *other.folded()
    }
}
