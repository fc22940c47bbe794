//! The transcript model the engine maintains.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::compact::{CompactObject, MemberChange};

use crate::ops::{Diagnostic, EntryView};
use spindle_wire::meta::META_KEY;
use spindle_wire::tags;

/// What a timeline entry is. Serialized snake_case (`agent_message`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A user message (the client's prompt, or one the agent reported).
    UserMessage,
    /// An agent reply message: the only kind that counts toward the persisted reply.
    AgentMessage,
    /// Agent reasoning: `agent_thought*`, or agent text routed here by metadata
    /// (think/thought/thinking/segment/intent).
    AgentThought,
    /// Agent text routed to the plan channel by metadata (`plan`).
    PlanText,
    /// A tool call (`tool_call`, `tool_call_update`, `tool_call_content_chunk`).
    ToolCall,
    /// A structured plan (v1 `plan` as planId `main`, v2 `plan_update`).
    Plan,
    /// A v2 agent-owned terminal (`terminal_update`, `terminal_output_chunk`).
    Terminal,
    /// A boundary: `reason` `clear` (session cleared) or `compaction`.
    Boundary,
    /// A permission request whose subject is not a tool call.
    Permission,
    /// An update the engine does not know; the raw JSON is kept verbatim.
    Unknown,
}

impl EntryKind {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            // Entry kinds named after an update are spelled like its tag.
            EntryKind::UserMessage => tags::USER_MESSAGE,
            EntryKind::AgentMessage => tags::AGENT_MESSAGE,
            EntryKind::AgentThought => tags::AGENT_THOUGHT,
            EntryKind::PlanText => "plan_text",
            EntryKind::ToolCall => tags::TOOL_CALL,
            EntryKind::Plan => tags::PLAN,
            EntryKind::Terminal => "terminal",
            EntryKind::Boundary => "boundary",
            EntryKind::Permission => "permission",
            EntryKind::Unknown => "unknown",
        }
    }

    /// True for the four message kinds (they carry content and text).
    pub fn is_message(self) -> bool {
        matches!(
            self,
            EntryKind::UserMessage
                | EntryKind::AgentMessage
                | EntryKind::AgentThought
                | EntryKind::PlanText
        )
    }
}

/// Content blocks of a message. Text is stored once, in the message's joined
/// text; a text block only records its byte range and any extra fields.
/// Adjacent plain text blocks (no fields besides `type` and `text`, reply
/// text), the bulk of any stream, share one [`Block::Plain`] run with four
/// bytes per block: the observable content (one block per chunk) is unchanged.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    Text {
        start: usize,
        end: usize,
        extra: Option<Box<Map<String, Value>>>,
        /// The block's own metadata marks it thought/plan: not reply text.
        hidden: bool,
    },
    /// A run of adjacent plain text blocks: the first starts at `start`,
    /// block `i` ends at `start + ends[i]` (and the next one starts there).
    /// A run never holds an empty `ends`.
    Plain {
        start: usize,
        ends: Vec<u32>,
    },
    Other(Box<Value>),
}

/// One content block, as the blocks iterator yields it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum BlockRef<'a> {
    Text {
        start: usize,
        end: usize,
        extra: Option<&'a Map<String, Value>>,
    },
    Other(&'a Value),
}

/// Iterates a message's blocks one content block at a time.
pub(crate) struct Blocks<'a> {
    blocks: std::slice::Iter<'a, Block>,
    /// The run being walked: its start, its ends, and the next index.
    run: Option<(usize, &'a [u32], usize)>,
}

impl<'a> Iterator for Blocks<'a> {
    type Item = BlockRef<'a>;

    fn next(&mut self) -> Option<BlockRef<'a>> {
        loop {
            if let Some((start, ends, i)) = &mut self.run {
                if let Some(&end) = ends.get(*i) {
                    let from = if *i == 0 {
                        *start
                    } else {
                        *start + ends[*i - 1] as usize
                    };
                    *i += 1;
                    return Some(BlockRef::Text {
                        start: from,
                        end: *start + end as usize,
                        extra: None,
                    });
                }
                self.run = None;
            }
            match self.blocks.next()? {
                Block::Text {
                    start, end, extra, ..
                } => {
                    return Some(BlockRef::Text {
                        start: *start,
                        end: *end,
                        extra: extra.as_deref(),
                    });
                }
                Block::Plain { start, ends } => self.run = Some((*start, ends, 0)),
                Block::Other(v) => return Some(BlockRef::Other(v)),
            }
        }
    }
}

/// A user, agent, thought or plan-text message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message {
    /// The agent-owned messageId, if any (v1 streams may have none).
    pub message_id: Option<String>,
    pub(crate) text: String,
    pub(crate) blocks: Vec<Block>,
    /// The message-level `_meta` (three-state patched by upserts; boxed: rare,
    /// and a `Value` is as large as the rest of the message).
    pub meta: Option<Box<Value>>,
    /// A prompt the client sent that the agent has not acknowledged yet.
    pub pending: bool,
    /// The agent rejected the prompt (error response to `session/prompt`).
    pub rejected: bool,
}

impl Message {
    /// The text blocks joined, maintained incrementally.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Number of content blocks.
    pub fn block_count(&self) -> usize {
        self.blocks
            .iter()
            .map(|b| match b {
                Block::Plain { ends, .. } => ends.len(),
                Block::Text { .. } | Block::Other(_) => 1,
            })
            .sum()
    }

    /// The content blocks in order, one per block received.
    pub(crate) fn blocks(&self) -> Blocks<'_> {
        Blocks {
            blocks: self.blocks.iter(),
            run: None,
        }
    }

    /// Appends a text block to the text and the blocks.
    pub(crate) fn push_text_block(
        &mut self,
        text: &str,
        extra: Option<Box<Map<String, Value>>>,
        hidden: bool,
    ) {
        let start = self.text.len();
        self.text.push_str(text);
        self.push_text_range(start, self.text.len(), extra, hidden);
    }

    /// Records a text block covering `text[start..end]`, which must directly
    /// follow the previous text block. A plain block joins the run before it
    /// (or starts one), so equal content always has one representation.
    pub(crate) fn push_text_range(
        &mut self,
        start: usize,
        end: usize,
        extra: Option<Box<Map<String, Value>>>,
        hidden: bool,
    ) {
        if extra.is_none() && !hidden {
            if let Some(Block::Plain { start: run, ends }) = self.blocks.last_mut()
                && let Some(&last) = ends.last()
                && *run + last as usize == start
                && let Ok(rel) = u32::try_from(end - *run)
            {
                ends.push(rel);
                return;
            }
            if let Ok(rel) = u32::try_from(end - start) {
                self.blocks.push(Block::Plain {
                    start,
                    ends: vec![rel],
                });
                return;
            }
        }
        self.blocks.push(Block::Text {
            start,
            end,
            extra,
            hidden,
        });
    }

    /// The content blocks as JSON, reconstructed verbatim.
    pub fn content_json(&self) -> Vec<Value> {
        self.blocks().map(|b| self.block_json(b)).collect()
    }

    pub(crate) fn block_json(&self, block: BlockRef<'_>) -> Value {
        match block {
            BlockRef::Text { start, end, extra } => {
                let mut map = Map::new();
                map.insert("type".into(), Value::from("text"));
                map.insert("text".into(), Value::from(&self.text[start..end]));
                if let Some(extra) = extra {
                    for (k, v) in extra.iter() {
                        map.insert(k.clone(), v.clone());
                    }
                }
                Value::Object(map)
            }
            BlockRef::Other(v) => v.clone(),
        }
    }

    /// Non-text content blocks (images, resources, unknown `_x` blocks), verbatim.
    pub fn attachments(&self) -> Vec<Value> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Other(v) => Some((**v).clone()),
                Block::Text { .. } | Block::Plain { .. } => None,
            })
            .collect()
    }

    /// Text of the blocks that belong in a persisted reply: text blocks whose
    /// own metadata does not route them to thoughts or the plan.
    pub fn reply_text(&self) -> String {
        let mut out = String::with_capacity(self.reply_len());
        out.extend(self.reply_pieces());
        out
    }

    /// The byte length of [`Self::reply_text`], without building it.
    pub(crate) fn reply_len(&self) -> usize {
        self.reply_ranges().map(|(start, end)| end - start).sum()
    }

    /// [`Self::reply_text`] as borrowed pieces, in order.
    pub(crate) fn reply_pieces(&self) -> impl Iterator<Item = &str> + '_ {
        self.reply_ranges()
            .map(|(start, end)| &self.text[start..end])
    }

    /// Byte ranges of `text` that belong in the reply, in order.
    fn reply_ranges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.blocks.iter().filter_map(|block| match block {
            Block::Text {
                start,
                end,
                hidden: false,
                ..
            } => Some((*start, *end)),
            Block::Plain { start, ends } => {
                Some((*start, *start + ends.last().copied().unwrap_or(0) as usize))
            }
            Block::Text { .. } | Block::Other(_) => None,
        })
    }
}

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

/// A boundary in the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Boundary {
    /// `clear` or `compaction`.
    pub reason: &'static str,
    /// What signalled it: `session_cleared`, `clear_boundary_meta` or `compaction_update`.
    pub source: &'static str,
    /// Compaction fields (`compactionId`, `status`, `error`, `_meta`), verbatim.
    pub fields: Map<String, Value>,
    /// The compaction summary as a message (summary blocks + chunks).
    pub summary: Message,
}

/// A v2 terminal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Terminal {
    /// Wire fields other than output (`terminalId`, `command`, `cwd`, `exitStatus`, `size`, ...).
    pub fields: Map<String, Value>,
    /// All output bytes received (decoded from base64).
    pub output: Vec<u8>,
    /// `output` decoded as UTF-8; an incomplete trailing sequence waits in `output`.
    pub(crate) text: String,
    /// Bytes of `output` already reflected in `text`.
    pub(crate) decoded: usize,
}

/// The kind-specific part of an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryBody {
    /// Message kinds (boxed like every variant, so an entry is 56 bytes: a
    /// session holds one per message and tool call).
    Message(Box<Message>),
    /// [`EntryKind::ToolCall`] (boxed: rarer than messages, keeps entries small).
    ToolCall(Box<ToolCall>),
    /// [`EntryKind::Plan`]: the plan object as sent (`entries`, and for v2 `type`, `planId`).
    Plan {
        /// The plan, verbatim.
        plan: Box<Value>,
        /// Removed by `plan_removed`.
        removed: bool,
    },
    /// [`EntryKind::Boundary`].
    Boundary(Box<Boundary>),
    /// [`EntryKind::Terminal`].
    Terminal(Box<Terminal>),
    /// [`EntryKind::Permission`] and [`EntryKind::Unknown`]: raw JSON verbatim.
    Raw(Box<Value>),
}

/// One timeline entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Stable id (see [`EntryView::id`]).
    pub id: String,
    /// What the entry is.
    pub kind: EntryKind,
    /// The turn it belongs to; `None` for background output outside any turn.
    pub turn: Option<u32>,
    /// Kind-specific data.
    pub body: EntryBody,
}

impl Entry {
    /// The message, for message kinds.
    pub fn message(&self) -> Option<&Message> {
        match &self.body {
            EntryBody::Message(m) => Some(m),
            _ => None,
        }
    }

    /// The text a view shows for this entry (see [`EntryView::text`]).
    pub fn text(&self) -> &str {
        match &self.body {
            EntryBody::Message(m) => &m.text,
            EntryBody::Boundary(b) => &b.summary.text,
            EntryBody::Terminal(t) => &t.text,
            _ => "",
        }
    }

    /// The view carried by render ops.
    pub fn view(&self) -> EntryView {
        let mut fields = Map::new();
        match &self.body {
            EntryBody::Message(m) => {
                let attachments = m.attachments();
                if !attachments.is_empty() {
                    fields.insert("attachments".into(), Value::Array(attachments));
                }
                if let Some(meta) = &m.meta {
                    fields.insert(META_KEY.into(), (**meta).clone());
                }
                if m.pending {
                    fields.insert("pending".into(), Value::Bool(true));
                }
                if m.rejected {
                    fields.insert("rejected".into(), Value::Bool(true));
                }
            }
            EntryBody::ToolCall(tc) => {
                // Nested: the wire field `kind` (tool kind) would collide with the entry kind.
                fields.insert("toolCall".into(), Value::Object(tc.fields()));
                if let Some(p) = &tc.permission {
                    fields.insert("permission".into(), (**p).clone());
                }
            }
            EntryBody::Plan { plan, removed } => {
                fields.insert("plan".into(), (**plan).clone());
                if *removed {
                    fields.insert("removed".into(), Value::Bool(true));
                }
            }
            EntryBody::Boundary(b) => {
                fields = b.fields.clone();
                fields.insert("reason".into(), Value::from(b.reason));
                fields.insert("source".into(), Value::from(b.source));
                let attachments = b.summary.attachments();
                if !attachments.is_empty() {
                    fields.insert("attachments".into(), Value::Array(attachments));
                }
            }
            EntryBody::Terminal(t) => {
                fields.insert("terminal".into(), Value::Object(t.fields.clone()));
            }
            EntryBody::Raw(raw) => {
                fields.insert("raw".into(), (**raw).clone());
            }
        }
        EntryView {
            id: self.id.clone(),
            kind: self.kind,
            message_id: self.message().and_then(|m| m.message_id.clone()),
            turn: self.turn,
            text: self.text().to_owned(),
            fields,
        }
    }

    /// The entry as it appears in `spindle replay --format json`.
    pub fn replay_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("id".into(), Value::from(self.id.as_str()));
        map.insert("kind".into(), Value::from(self.kind.as_str()));
        if let Some(turn) = self.turn {
            map.insert("turn".into(), Value::from(turn));
        }
        match &self.body {
            EntryBody::Message(m) => {
                map.insert(
                    "messageId".into(),
                    m.message_id.clone().map_or(Value::Null, Value::from),
                );
                map.insert("content".into(), Value::Array(m.content_json()));
                map.insert("text".into(), Value::from(m.text.as_str()));
                if let Some(meta) = &m.meta {
                    map.insert(META_KEY.into(), (**meta).clone());
                }
                if m.pending {
                    map.insert("pending".into(), Value::Bool(true));
                }
                if m.rejected {
                    map.insert("rejected".into(), Value::Bool(true));
                }
            }
            EntryBody::Boundary(b) => {
                map.insert("reason".into(), Value::from(b.reason));
                map.insert("source".into(), Value::from(b.source));
                for (k, v) in &b.fields {
                    map.insert(k.clone(), v.clone());
                }
                if b.reason == "compaction" {
                    map.insert("summary".into(), Value::Array(b.summary.content_json()));
                    map.insert("text".into(), Value::from(b.summary.text.as_str()));
                }
            }
            EntryBody::Terminal(t) => {
                map.insert("terminal".into(), Value::Object(t.fields.clone()));
                map.insert("outputBytes".into(), Value::from(t.output.len()));
                map.insert(
                    "text".into(),
                    Value::from(String::from_utf8_lossy(&t.output).into_owned()),
                );
            }
            _ => {
                let view = self.view();
                for (k, v) in view.fields {
                    map.insert(k, v);
                }
            }
        }
        Value::Object(map)
    }
}

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

/// Session-level facts: title, mode and config options.
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
    /// v1 `current_mode_update.currentModeId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_mode_id: Option<String>,
    /// `config_option_update.configOptions`, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<Value>,
}

/// The transcript: timeline entries plus session-level state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    /// 1 or 2: the protocol version given or inferred.
    pub protocol: u8,
    /// Entries in timeline order (first sighting fixes the position).
    pub entries: Vec<Entry>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_kind_names_match_their_serde_names() {
        for kind in [
            EntryKind::UserMessage,
            EntryKind::AgentMessage,
            EntryKind::AgentThought,
            EntryKind::PlanText,
            EntryKind::ToolCall,
            EntryKind::Plan,
            EntryKind::Terminal,
            EntryKind::Boundary,
            EntryKind::Permission,
            EntryKind::Unknown,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
