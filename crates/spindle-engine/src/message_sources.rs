//! What the entries a front end names hold, for the front end's own rendering (the page's
//! markdown): a message's text, another kind of entry, or nothing.

use std::collections::HashMap;

use crate::core::TranscriptEngine;
use crate::model::EntryKind;

/// What an entry named by the page holds, read under the session's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageSource {
    /// A message: its text.
    Message(String),
    /// Another kind of entry (its kind), which has no markdown.
    NotMessage(&'static str),
    /// No entry has this id.
    Missing,
}

impl TranscriptEngine {
    /// What the entries `ids` hold, in one pass over the transcript (a repeated id gets the
    /// answer of its first mention).
    pub fn message_sources(&self, ids: &[String]) -> Vec<MessageSource> {
        let mut wanted: HashMap<&str, usize> = HashMap::with_capacity(ids.len());
        for (n, id) in ids.iter().enumerate() {
            wanted.entry(id.as_str()).or_insert(n);
        }
        let mut sources = vec![MessageSource::Missing; ids.len()];
        for entry in &self.transcript().entries {
            let Some(&n) = wanted.get(entry.id.as_str()) else {
                continue;
            };
            sources[n] = match entry.kind {
                EntryKind::AgentMessage | EntryKind::UserMessage => {
                    MessageSource::Message(entry.text().to_string())
                }
                other => MessageSource::NotMessage(other.as_str()),
            };
        }
        // A repeated id gets the answer of its first mention.
        for (n, id) in ids.iter().enumerate() {
            let first = wanted[id.as_str()];
            if first != n {
                sources[n] = sources[first].clone();
            }
        }
        sources
    }
}
