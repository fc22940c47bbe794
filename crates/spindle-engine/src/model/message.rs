//! A message's content: its joined text and its content blocks (plain text
//! runs, text blocks with extra fields, other blocks verbatim), and the reply
//! text a persisted reply takes from it.

use serde_json::{Map, Value};

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
    /// Who sent this prompt, when the client knows (`spindle serve --users`).
    pub author: Option<String>,
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

    /// The content blocks to serialize ([`Self::content_json`]'s array without building it).
    pub(crate) fn content(&self) -> Content<'_> {
        Content(self)
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

/// A message's content blocks, serialized as [`Message::content_json`] gives them: a plain text
/// block as `{"type":"text","text":...}` without building its value.
pub(crate) struct Content<'a>(&'a Message);

impl serde::Serialize for Content<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let message = self.0;
        let mut seq = serializer.serialize_seq(None)?;
        for block in message.blocks() {
            match block {
                BlockRef::Text {
                    start,
                    end,
                    extra: None,
                } => seq.serialize_element(&PlainText(&message.text[start..end]))?,
                // A block's own fields are inserted after `type` and `text` (one of them may
                // replace either): as `block_json` builds it.
                BlockRef::Text { .. } => seq.serialize_element(&message.block_json(block))?,
                BlockRef::Other(value) => seq.serialize_element(value)?,
            }
        }
        seq.end()
    }
}

/// A plain text block: `{"type":"text","text":...}`.
struct PlainText<'a>(&'a str);

impl serde::Serialize for PlainText<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "text")?;
        map.serialize_entry("text", self.0)?;
        map.end()
    }
}
