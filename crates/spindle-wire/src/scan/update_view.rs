//! The routing view of the shared scanner (the bridge's hot path): where the
//! routing facts of a `session/update` notification lie in its line, found
//! in one pass without building anything, so a chunk line is routed and
//! then relayed (or spliced) as it is. Values are skipped, not validated:
//! the line goes on unchanged, and anything unusual (escaped keys or
//! routing strings, a non-string id, a routing field, broken structure)
//! returns `None`, leaving the line to the serde path, which reports
//! malformed input.

use std::ops::Range;

use super::lexer::{Cursor, offset_in, skip_string};
use crate::meta::META_KEY;
use crate::routing::is_routing_field;

/// The routing facts of a `session/update` notification line, borrowed
/// from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateView<'a> {
    /// `params.sessionId`.
    pub session_id: &'a str,
    /// The update object's text, a sub-slice of the line.
    pub update: &'a str,
    /// `update.sessionUpdate`.
    pub tag: &'a str,
    /// `update.messageId`; None = absent (present but not a plain string
    /// -> no view).
    pub message_id: Option<&'a str>,
    /// `content.type` when content is an object.
    pub content_type: Option<&'a str>,
    /// The update's `_meta` value text.
    pub meta: Option<&'a str>,
}

/// Reads `line` as a `session/update` notification, or None. One pass:
/// `params`, `update` and `content` are descended into, not skipped first.
pub fn update_view(line: &str) -> Option<UpdateView<'_>> {
    update_view_with_text(line).map(|(f, _)| f)
}

/// The text of a JSON string value without escapes, else None.
fn plain_string(v: &str) -> Option<&str> {
    let inner = v.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.as_bytes().contains(&b'\\')).then_some(inner)
}

/// The value texts the walk collects.
#[derive(Default)]
struct Found<'a> {
    method: Option<&'a str>,
    has_id: bool,
    session: Option<&'a str>,
    update: Option<&'a str>,
    tag: Option<&'a str>,
    message_id: Option<&'a str>,
    message_id_bad: bool,
    content_type: Option<&'a str>,
    meta: Option<&'a str>,
    /// A routing field (`crate::routing`) on the update or its content:
    /// the view never weighs one, so the line goes to the general path.
    routed: bool,
    /// Where the string value of `content.text` lies.
    text: Option<Range<usize>>,
}

/// [`update_view`], plus where the string value of `content.text` lies (the
/// part of a chunk line that changes from one line to the next).
fn update_view_with_text(line: &str) -> Option<(UpdateView<'_>, Option<Range<usize>>)> {
    let mut found = Found::default();
    let mut c = Cursor::new(line);
    c.members(|c, k| {
        match k {
            "params" => params(c, &mut found)?,
            "method" => found.method = Some(c.skip_value()?),
            "id" => {
                found.has_id = true;
                c.skip_value()?;
            }
            _ => {
                c.skip_value()?;
            }
        }
        Some(())
    })?;
    c.end()?;
    let f = found;
    if f.has_id || f.message_id_bad || f.routed {
        return None;
    }
    if plain_string(f.method?)? != crate::client_methods::SESSION_UPDATE {
        return None;
    }
    let view = UpdateView {
        session_id: plain_string(f.session?)?,
        update: f.update?,
        tag: plain_string(f.tag?)?,
        message_id: f.message_id,
        content_type: match f.content_type {
            Some(t) => Some(plain_string(t)?),
            None => None,
        },
        meta: f.meta,
    };
    Some((view, f.text))
}

fn params<'a>(c: &mut Cursor<'a>, found: &mut Found<'a>) -> Option<()> {
    c.members(|c, k| {
        match k {
            "sessionId" => found.session = Some(c.skip_value()?),
            "update" => {
                let start = c.pos();
                update(c, found)?;
                found.update = Some(&c.text()[start..c.pos()]);
            }
            _ => {
                c.skip_value()?;
            }
        }
        Some(())
    })
}

fn update<'a>(c: &mut Cursor<'a>, found: &mut Found<'a>) -> Option<()> {
    c.members(|c, k| {
        found.routed |= is_routing_field(k);
        match k {
            "content" if c.peek() == Some(b'{') => content(c, found)?,
            "sessionUpdate" => found.tag = Some(c.skip_value()?),
            "messageId" => match plain_string(c.skip_value()?) {
                Some(id) => found.message_id = Some(id),
                None => found.message_id_bad = true,
            },
            META_KEY => found.meta = Some(c.skip_value()?),
            _ => {
                c.skip_value()?;
            }
        }
        Some(())
    })
}

fn content<'a>(c: &mut Cursor<'a>, found: &mut Found<'a>) -> Option<()> {
    c.members(|c, k| {
        found.routed |= is_routing_field(k);
        let start = c.pos();
        let v = c.skip_value()?;
        if k == "type" {
            found.content_type = Some(v);
        } else if k == "text" && v.starts_with('"') {
            found.text = Some(start..c.pos());
        }
        Some(())
    })
}

/// Where a field of an [`UpdateView`] lies in a line that has the cached
/// prefix and suffix: before the text (from the start) or after it (from
/// the end).
#[derive(Debug, Clone, Copy)]
enum At {
    Start(usize, usize),
    End(usize, usize),
}

#[derive(Debug, Clone)]
struct Layout {
    session_id: At,
    /// Start from the line's start, end from the line's end.
    update: (usize, usize),
    tag: At,
    message_id: Option<At>,
    content_type: Option<At>,
    meta: Option<At>,
}

/// [`update_view`] with a memory of the last chunk line's shape. A stream
/// of chunks repeats one line with a different text, so a line that equals
/// the last one outside its `content.text` string routes the same way: the
/// check is two comparisons and a scan of the text, not a walk of the line.
#[derive(Debug, Default)]
pub struct ChunkScanner {
    /// The line up to the opening quote of the text, and after its closing
    /// quote.
    prefix: String,
    suffix: String,
    layout: Option<Layout>,
}

impl ChunkScanner {
    /// [`update_view`] of `line`, from the cached shape when it fits.
    pub fn scan<'a>(&mut self, line: &'a str) -> Option<UpdateView<'a>> {
        if let Some(f) = self.scan_cached(line) {
            debug_assert_eq!(Some(f), update_view(line));
            return Some(f);
        }
        let (f, text) = update_view_with_text(line)?;
        self.layout = None;
        if let Some(text) = text {
            self.remember(line, &f, text);
        }
        Some(f)
    }

    fn scan_cached<'a>(&self, line: &'a str) -> Option<UpdateView<'a>> {
        let layout = self.layout.as_ref()?;
        let (p, s) = (self.prefix.len(), self.suffix.len());
        if line.len() < p + 2 + s
            || !line.starts_with(&self.prefix)
            || !line.ends_with(&self.suffix)
        {
            return None;
        }
        // The middle must be exactly one string token.
        if skip_string(line.as_bytes(), p)? != line.len() - s {
            return None;
        }
        let n = line.len();
        let get = |at: At| match at {
            At::Start(start, len) => &line[start..start + len],
            At::End(from_end, len) => &line[n - from_end..n - from_end + len],
        };
        Some(UpdateView {
            session_id: get(layout.session_id),
            update: &line[layout.update.0..n - layout.update.1],
            tag: get(layout.tag),
            message_id: layout.message_id.map(get),
            content_type: layout.content_type.map(get),
            meta: layout.meta.map(get),
        })
    }

    fn remember(&mut self, line: &str, f: &UpdateView<'_>, text: Range<usize>) {
        let n = line.len();
        let at = |field: &str| -> Option<At> {
            let start = offset_in(line, field)?;
            let end = start + field.len();
            if end <= text.start {
                Some(At::Start(start, field.len()))
            } else if start >= text.end {
                Some(At::End(n - start, field.len()))
            } else {
                None
            }
        };
        let Some(update_start) = offset_in(line, f.update) else {
            return;
        };
        let update_end = update_start + f.update.len();
        if update_start >= text.start || update_end <= text.end {
            return;
        }
        let opt = |field: Option<&str>| -> Option<Option<At>> {
            match field {
                None => Some(None),
                Some(v) => at(v).map(Some),
            }
        };
        let layout = (|| {
            Some(Layout {
                session_id: at(f.session_id)?,
                update: (update_start, n - update_end),
                tag: at(f.tag)?,
                message_id: opt(f.message_id)?,
                content_type: opt(f.content_type)?,
                meta: opt(f.meta)?,
            })
        })();
        if layout.is_some() {
            self.prefix.clear();
            self.prefix.push_str(&line[..text.start]);
            self.suffix.clear();
            self.suffix.push_str(&line[text.end..]);
        }
        self.layout = layout;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_chunk_line() {
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a \"}{\\ b"},"messageId":"m"}}}"#;
        let f = update_view(line).unwrap();
        assert_eq!(f.session_id, "s");
        assert_eq!(f.tag, "agent_message_chunk");
        assert_eq!(f.message_id, Some("m"));
        assert_eq!(f.content_type, Some("text"));
        assert!(f.update.starts_with('{') && f.update.ends_with('}'));
        let spaced = " { \"method\" : \"session/update\" , \"params\" : { \"update\" : { \"sessionUpdate\" : \"x\" , \"_meta\" : { } } , \"sessionId\" : \"s\" } } ";
        let f = update_view(spaced).expect("whitespace anywhere");
        assert_eq!(
            (f.tag, f.update, f.meta),
            (
                "x",
                "{ \"sessionUpdate\" : \"x\" , \"_meta\" : { } }",
                Some("{ }")
            )
        );
    }

    #[test]
    fn the_chunk_scanner_agrees_with_a_full_scan() {
        let mut scanner = ChunkScanner::default();
        let line = |mid: &str, text: &str, tail: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","messageId":"{mid}","content":{{"type":"text","text":{text}}}{tail}}}}}}}"#
            )
        };
        let lines = [
            line("m1", r#""a""#, ""),
            line("m1", r#""bb \"}{ \\""#, ""),
            line("m1", r#""""#, ""),
            line("m2", r#""c""#, ""),
            line("m2", r#""d""#, r#","_meta":{"x":1}"#),
            line("m2", r#""e""#, r#","_meta":{"x":1}"#),
            // Not one string token in the middle: the full scan decides.
            line("m2", r#""e","x":"y""#, r#","_meta":{"x":1}"#),
            line("m2", r#""e" "#, r#","_meta":{"x":1}"#),
            line("m2", r#"5"#, r#","_meta":{"x":1}"#),
            line("m2", r#""f""#, r#","_meta":{"x":1}"#),
            line("m2", r#""unterminated"#, r#","_meta":{"x":1}"#),
            // A routing field in the middle: never cached, never viewed.
            line("m2", r#""g","role":"x""#, r#","_meta":{"x":1}"#),
        ];
        for l in &lines {
            assert_eq!(scanner.scan(l), update_view(l), "{l}");
        }
        for i in [0, 1, 2, 3, 4, 5, 9] {
            assert!(update_view(&lines[i]).is_some(), "{}", lines[i]);
        }
        assert!(update_view(&lines[11]).is_none());
    }

    #[test]
    fn declines_what_it_cannot_route() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x","messageId":5}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x","messageId":null}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"a\u0062"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s","update":{"sessionUpdate":"x"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x"}}} trailing"#,
            // Routing fields go to the general path.
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","segment":"thinking","content":{"type":"text","text":"x"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":{}}}}}"#,
            "",
            "{",
            r#"{"a":"\"#,
        ] {
            assert!(update_view(line).is_none(), "{line}");
        }
    }

    proptest::proptest! {
        // Any chunk line serde_json writes is viewed as serde reads it, and
        // the cached shape agrees with a full scan line after line.
        #[test]
        fn the_view_agrees_with_serde(
            texts in proptest::collection::vec("\\PC*|[\\x00-\\x20\"\\\\/{}\u{e9}]*", 1..6),
            id in proptest::option::of("[a-z0-9_]{1,12}"),
            meta in proptest::option::of(proptest::bool::ANY),
        ) {
            let mut scanner = ChunkScanner::default();
            for text in &texts {
                let mut update = serde_json::json!({
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                });
                if let Some(id) = &id {
                    update["messageId"] = id.as_str().into();
                }
                if let Some(flag) = meta {
                    update["_meta"] = serde_json::json!({"claudeCode": {"clearBoundary": flag}});
                }
                let line = serde_json::json!({
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": "s", "update": update},
                })
                .to_string();
                let view = update_view(&line).expect("a plain chunk line");
                proptest::prop_assert_eq!(scanner.scan(&line), Some(view));
                let parsed: serde_json::Value =
                    serde_json::from_str(view.update).expect("the update's text is JSON");
                proptest::prop_assert_eq!(&parsed, &update);
                proptest::prop_assert_eq!(view.message_id, id.as_deref());
                proptest::prop_assert_eq!(view.content_type, Some("text"));
                proptest::prop_assert_eq!(
                    view.meta.map(|m| serde_json::from_str::<serde_json::Value>(m).expect("JSON")),
                    update.get("_meta").cloned()
                );
            }
        }
    }
}
