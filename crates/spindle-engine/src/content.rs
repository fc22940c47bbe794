//! Content blocks on their way into a message (or a compaction summary):
//! appending one block, replacing all of them with minimal text ops.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::classify::block_is_non_reply;
use crate::core::TranscriptEngine;
use crate::model::{Block, EntryBody, Message};
use crate::ops::RenderOp;
use crate::text::{common_prefix_len, utf16_len};

/// One content block on its way in; text may borrow from the input line.
#[derive(Debug)]
pub(crate) enum BlockIn<'a> {
    /// Text, extra block fields, and whether the block's own metadata keeps it
    /// out of the persisted reply.
    Text(Cow<'a, str>, Option<Box<Map<String, Value>>>, bool),
    Other(Value),
}

/// A text block is `{"type":"text","text":<string>, ...}`; anything else
/// (images, resources, `_x` blocks, malformed text blocks) is kept verbatim.
pub(crate) fn block_in_from_value(v: Value) -> BlockIn<'static> {
    match v {
        Value::Object(mut m)
            if m.get("type").and_then(Value::as_str) == Some("text")
                && m.get("text").is_some_and(Value::is_string) =>
        {
            let text = match m.shift_remove("text") {
                Some(Value::String(s)) => s,
                _ => String::new(),
            };
            m.shift_remove("type");
            let extra = (!m.is_empty()).then(|| Box::new(m));
            let hidden = extra.as_deref().is_some_and(block_is_non_reply);
            BlockIn::Text(Cow::Owned(text), extra, hidden)
        }
        other => BlockIn::Other(other),
    }
}

/// The content blocks of an entry that holds text: a message's, or a
/// compaction boundary's summary.
fn text_content(body: &mut EntryBody) -> Option<&mut Message> {
    match body {
        EntryBody::Message(m) => Some(m),
        EntryBody::Boundary(b) => Some(&mut b.summary),
        _ => None,
    }
}

impl TranscriptEngine {
    pub(crate) fn append_block(&mut self, idx: usize, block: BlockIn<'_>, emit: bool) {
        let emit = emit && self.ops_on;
        let entry = &mut self.t.entries[idx];
        let Some(msg) = text_content(&mut entry.body) else {
            return;
        };
        match block {
            BlockIn::Text(text, extra, hidden) => {
                msg.push_text_block(&text, extra, hidden);
                if emit && !text.is_empty() {
                    let id = entry.id.clone();
                    self.out.ops.push(RenderOp::AppendText {
                        id,
                        text: text.into_owned(),
                    });
                }
            }
            BlockIn::Other(v) => {
                msg.blocks.push(Block::Other(Box::new(v)));
                if emit {
                    self.emit_update(idx);
                }
            }
        }
    }

    /// Replaces a message's whole content. Text changes become a truncate to
    /// the shared prefix plus an append of the new suffix (requirement 9);
    /// attachment changes become one `update_entry`.
    pub(crate) fn set_content(&mut self, idx: usize, blocks: Vec<BlockIn<'_>>, emit: bool) {
        let emit = emit && self.ops_on;
        let entry = &mut self.t.entries[idx];
        let Some(msg) = text_content(&mut entry.body) else {
            return;
        };
        let old_attachments = if emit { msg.attachments() } else { Vec::new() };
        let text_blocks = blocks
            .iter()
            .filter(|b| matches!(b, BlockIn::Text(..)))
            .count();
        let joined: Cow<'_, str> = if text_blocks == 1 {
            match blocks.iter().find_map(|b| match b {
                BlockIn::Text(t, _, _) => Some(t),
                BlockIn::Other(_) => None,
            }) {
                Some(t) => Cow::Borrowed(t.as_ref()),
                None => Cow::Borrowed(""),
            }
        } else {
            let mut s = String::new();
            for b in &blocks {
                if let BlockIn::Text(t, _, _) = b {
                    s.push_str(t);
                }
            }
            Cow::Owned(s)
        };
        let keep = common_prefix_len(&msg.text, &joined);
        if emit && keep < msg.text.len() {
            self.out.ops.push(RenderOp::TruncateText {
                id: entry.id.clone(),
                len: utf16_len(&msg.text[..keep]),
            });
        }
        msg.text.truncate(keep);
        msg.text.push_str(&joined[keep..]);
        if emit && keep < joined.len() {
            self.out.ops.push(RenderOp::AppendText {
                id: entry.id.clone(),
                text: joined[keep..].to_owned(),
            });
        }
        drop(joined);
        msg.blocks.clear();
        let mut offset = 0;
        for b in blocks {
            match b {
                BlockIn::Text(t, extra, hidden) => {
                    msg.push_text_range(offset, offset + t.len(), extra, hidden);
                    offset += t.len();
                }
                BlockIn::Other(v) => msg.blocks.push(Block::Other(Box::new(v))),
            }
        }
        if emit && msg.attachments() != old_attachments {
            self.emit_update(idx);
        }
    }
}
