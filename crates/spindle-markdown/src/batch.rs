//! One batch of rendered entries as the page asks for them: the JSON answer ([`batch_json`],
//! [`rendered_item`]) for what the entries hold (a [`Source`] each, read from the transcript by
//! [`spindle_engine::TranscriptEngine::message_sources`]). Each tree comes with `length`: the
//! UTF-16 length of the text it was made from, so the page can tell it matches the text it holds.

pub use spindle_engine::MessageSource as Source;

use crate::cache::RenderCache;

/// Most entries one batch may name (a window of the transcript, with room to spare).
pub const MAX_BATCH: usize = 200;

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
