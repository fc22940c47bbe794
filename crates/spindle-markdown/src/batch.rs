//! One batch of rendered entries as the page asks for them: which entries of a transcript are
//! messages ([`message_sources`]), and the JSON answer ([`batch_json`], [`rendered_item`]). Each
//! tree comes with `length`: the UTF-16 length of the text it was made from, so the page can tell
//! it matches the text it holds.

use std::collections::HashMap;

use spindle_engine::{EntryKind, TranscriptEngine};

use crate::cache::RenderCache;

/// Most entries one batch may name (a window of the transcript, with room to spare).
pub const MAX_BATCH: usize = 200;

/// What an entry named by the page holds, read under the session's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A message: its text.
    Message(String),
    /// Another kind of entry (its kind), which has no markdown.
    NotMessage(&'static str),
    /// No entry has this id.
    Missing,
}

/// The sources of the entries `ids` names, in one pass over the transcript.
pub fn message_sources(engine: &TranscriptEngine, ids: &[String]) -> Vec<Source> {
    let mut wanted: HashMap<&str, usize> = HashMap::with_capacity(ids.len());
    for (n, id) in ids.iter().enumerate() {
        wanted.entry(id.as_str()).or_insert(n);
    }
    let mut sources = vec![Source::Missing; ids.len()];
    for entry in &engine.transcript().entries {
        let Some(&n) = wanted.get(entry.id.as_str()) else {
            continue;
        };
        sources[n] = match entry.kind {
            EntryKind::AgentMessage | EntryKind::UserMessage => {
                Source::Message(entry.text().to_string())
            }
            other => Source::NotMessage(other.as_str()),
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

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string())
}

/// One rendered entry: `{"id", "length", "tree"}`.
pub fn rendered_item(id: &str, text: &str, cache: &RenderCache) -> String {
    let tree = cache.tree_json(text);
    let length = text.encode_utf16().count();
    format!(
        r#"{{"id":{},"length":{length},"tree":{tree}}}"#,
        json_string(id)
    )
}

/// The batch answer: `{"rendered": [...], "refused": [{"id", "reason"}]}`.
pub fn batch_json(ids: &[String], sources: &[Source], cache: &RenderCache) -> String {
    let mut rendered = Vec::new();
    let mut refused = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (id, source) in ids.iter().zip(sources) {
        if !seen.insert(id.as_str()) {
            continue;
        }
        match source {
            Source::Message(text) => rendered.push(rendered_item(id, text, cache)),
            other => refused.push(format!(
                r#"{{"id":{},"reason":{}}}"#,
                json_string(id),
                json_string(&refusal(other))
            )),
        }
    }
    format!(
        r#"{{"rendered":[{}],"refused":[{}]}}"#,
        rendered.join(","),
        refused.join(",")
    )
}

/// Why an entry has no tree.
pub fn refusal(source: &Source) -> String {
    match source {
        Source::Message(_) => String::new(),
        Source::NotMessage(kind) => format!("a {kind} entry has no markdown"),
        Source::Missing => "no entry has this id".to_string(),
    }
}
