//! A minimal scanner for the hot path: finds the top-level members of a JSON
//! object without building anything, so a chunk line is routed after one
//! pass over its bytes. Anything unusual (escaped keys or routing strings,
//! non-string ids, broken structure) returns None and the caller takes the
//! serde path, which reports malformed input.

use std::ops::Range;

use spindle_wire::meta::META_KEY;
use spindle_wire::routing::is_routing_field;

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `i` at an opening quote; returns the index after the closing quote.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    // Keys and ids are short: a plain loop beats memchr's setup for them.
    let short_end = b.len().min(i + 16);
    while i < short_end {
        match b[i] {
            b'"' => return Some(i + 1),
            b'\\' => {
                i += 2;
                if i > b.len() {
                    return None;
                }
                return skip_string_rest(b, i);
            }
            _ => i += 1,
        }
    }
    skip_string_rest(b, i)
}

/// [`skip_string`] from inside the string.
fn skip_string_rest(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let rel = memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
        i += rel;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
        if i > b.len() {
            return None;
        }
    }
}

/// `i` at the start of a value; returns the index after it.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// Walks the object starting at `b[i]`: for each member calls
/// `value(key, value_start)`, which consumes the value and returns the index
/// after it. Returns the index after the object. None on anything unexpected.
fn object<'a>(
    text: &'a str,
    i: usize,
    value: &mut dyn FnMut(&'a str, usize) -> Option<usize>,
) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, i);
    if *b.get(i)? != b'{' {
        return None;
    }
    i = skip_ws(b, i + 1);
    if *b.get(i)? == b'}' {
        return Some(i + 1);
    }
    loop {
        if *b.get(i)? != b'"' {
            return None;
        }
        let end = skip_string(b, i)?;
        let key = &text[i + 1..end - 1];
        if key.as_bytes().contains(&b'\\') {
            return None;
        }
        i = skip_ws(b, end);
        if *b.get(i)? != b':' {
            return None;
        }
        i = skip_ws(b, i + 1);
        let vend = value(key, i)?;
        i = skip_ws(b, vend);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Calls `each(key, value_range)` for every top-level member of the object
/// text `obj` (ranges index `obj`). None on anything unexpected.
#[cfg(test)]
pub(crate) fn members<'a>(obj: &'a str, mut each: impl FnMut(&'a str, Range<usize>)) -> Option<()> {
    let end = object(obj, 0, &mut |k, i| {
        let e = skip_value(obj.as_bytes(), i)?;
        each(k, i..e);
        Some(e)
    })?;
    (skip_ws(obj.as_bytes(), end) == obj.len()).then_some(())
}

/// The text of a JSON string value without escapes, else None.
fn plain_string(v: &str) -> Option<&str> {
    let inner = v.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.as_bytes().contains(&b'\\')).then_some(inner)
}

/// The routing facts of a `session/update` notification line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FastUpdate<'a> {
    pub session_id: &'a str,
    /// The update object's text, a sub-slice of the line.
    pub update: &'a str,
    pub tag: &'a str,
    /// None = absent (present but not a plain string -> no FastUpdate).
    pub message_id: Option<&'a str>,
    /// `content.type` when content is an object.
    pub content_type: Option<&'a str>,
    /// The `_meta` value text.
    pub meta: Option<&'a str>,
}

/// Reads `line` as a `session/update` notification, or None. One pass:
/// `params`, `update` and `content` are descended into, not skipped first.
pub(crate) fn fast_update(line: &str) -> Option<FastUpdate<'_>> {
    fast_update_with_text(line).map(|(f, _)| f)
}

/// [`fast_update`], plus where the string value of `content.text` lies (the
/// part of a chunk line that changes from one line to the next).
fn fast_update_with_text(line: &str) -> Option<(FastUpdate<'_>, Option<Range<usize>>)> {
    let b = line.as_bytes();
    let mut text = None;
    let value_text = |r: Range<usize>| &line[r];
    let (mut method, mut has_id, mut session, mut update) = (None, false, None, None);
    let (mut tag, mut message_id, mut content_type, mut meta) = (None, None, None, None);
    let mut message_id_bad = false;
    // A routing field (spindle_wire::routing) on the update or its content
    // sends the line to the general path: the fast path never weighs one.
    let mut routed = false;
    let end = object(line, 0, &mut |k, i| match k {
        "params" => object(line, i, &mut |k, i| match k {
            "sessionId" => {
                let e = skip_value(b, i)?;
                session = Some(value_text(i..e));
                Some(e)
            }
            "update" => {
                let e = object(line, i, &mut |k, i| {
                    let e = match k {
                        "content" if b.get(i) == Some(&b'{') => object(line, i, &mut |k, i| {
                            routed |= is_routing_field(k);
                            let e = skip_value(b, i)?;
                            if k == "type" {
                                content_type = Some(value_text(i..e));
                            } else if k == "text" && b[i] == b'"' {
                                text = Some(i..e);
                            }
                            Some(e)
                        })?,
                        _ => skip_value(b, i)?,
                    };
                    routed |= is_routing_field(k);
                    match k {
                        "sessionUpdate" => tag = Some(value_text(i..e)),
                        "messageId" => match plain_string(value_text(i..e)) {
                            Some(id) => message_id = Some(id),
                            None => message_id_bad = true,
                        },
                        META_KEY => meta = Some(value_text(i..e)),
                        _ => {}
                    }
                    Some(e)
                })?;
                update = Some(value_text(i..e));
                Some(e)
            }
            _ => skip_value(b, i),
        }),
        "method" => {
            let e = skip_value(b, i)?;
            method = Some(value_text(i..e));
            Some(e)
        }
        "id" => {
            has_id = true;
            skip_value(b, i)
        }
        _ => skip_value(b, i),
    })?;
    if skip_ws(b, end) != b.len() || has_id || message_id_bad || routed {
        return None;
    }
    if plain_string(method?)? != "session/update" {
        return None;
    }
    let f = FastUpdate {
        session_id: plain_string(session?)?,
        update: update?,
        tag: plain_string(tag?)?,
        message_id,
        content_type: match content_type {
            Some(t) => Some(plain_string(t)?),
            None => None,
        },
        meta,
    };
    Some((f, text))
}

/// Where a field of a [`FastUpdate`] lies in a line that has the cached
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

/// [`fast_update`] with a memory of the last chunk line's shape. A stream
/// of chunks repeats one line with a different text, so a line that equals
/// the last one outside its `content.text` string routes the same way: the
/// check is two comparisons and a scan of the text, not a walk of the line.
#[derive(Debug, Default)]
pub(crate) struct ChunkScanner {
    /// The line up to the opening quote of the text, and after its closing
    /// quote.
    prefix: String,
    suffix: String,
    layout: Option<Layout>,
}

impl ChunkScanner {
    pub(crate) fn scan<'a>(&mut self, line: &'a str) -> Option<FastUpdate<'a>> {
        if let Some(f) = self.scan_cached(line) {
            debug_assert_eq!(Some(f), fast_update(line));
            return Some(f);
        }
        let (f, text) = fast_update_with_text(line)?;
        self.layout = None;
        if let Some(text) = text {
            self.remember(line, &f, text);
        }
        Some(f)
    }

    fn scan_cached<'a>(&self, line: &'a str) -> Option<FastUpdate<'a>> {
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
        Some(FastUpdate {
            session_id: get(layout.session_id),
            update: &line[layout.update.0..n - layout.update.1],
            tag: get(layout.tag),
            message_id: layout.message_id.map(get),
            content_type: layout.content_type.map(get),
            meta: layout.meta.map(get),
        })
    }

    fn remember(&mut self, line: &str, f: &FastUpdate<'_>, text: Range<usize>) {
        let n = line.len();
        let at = |field: &str| -> Option<At> {
            let start = crate::wire::offset_in(line, field)?;
            let end = start + field.len();
            if end <= text.start {
                Some(At::Start(start, field.len()))
            } else if start >= text.end {
                Some(At::End(n - start, field.len()))
            } else {
                None
            }
        };
        let Some(update_start) = crate::wire::offset_in(line, f.update) else {
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
        let f = fast_update(line).unwrap();
        assert_eq!(f.session_id, "s");
        assert_eq!(f.tag, "agent_message_chunk");
        assert_eq!(f.message_id, Some("m"));
        assert_eq!(f.content_type, Some("text"));
        assert!(f.update.starts_with('{') && f.update.ends_with('}'));
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
        ];
        for l in &lines {
            assert_eq!(scanner.scan(l), fast_update(l), "{l}");
        }
        for i in [0, 1, 2, 3, 4, 5, 9] {
            assert!(fast_update(&lines[i]).is_some(), "{}", lines[i]);
        }
    }

    #[test]
    fn members_lists_top_level_keys() {
        let mut keys = Vec::new();
        members(r#" {"a": [1, {"b": "}"}], "c" : null} "#, |k, _| {
            keys.push(k)
        })
        .unwrap();
        assert_eq!(keys, ["a", "c"]);
        assert!(members("[1]", |_, _| {}).is_none());
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
            assert!(fast_update(line).is_none(), "{line}");
        }
    }
}
