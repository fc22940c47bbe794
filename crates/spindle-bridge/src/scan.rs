//! A minimal scanner for the hot path: finds the top-level members of a JSON
//! object without building anything, so a chunk line is routed after one
//! pass over its bytes. Anything unusual (escaped keys or routing strings,
//! non-string ids, broken structure) returns None and the caller takes the
//! serde path, which reports malformed input.

use std::ops::Range;

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `i` at an opening quote; returns the index after the closing quote.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
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
    let b = line.as_bytes();
    let value_text = |r: Range<usize>| &line[r];
    let (mut method, mut has_id, mut session, mut update) = (None, false, None, None);
    let (mut tag, mut message_id, mut content_type, mut meta) = (None, None, None, None);
    let mut message_id_bad = false;
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
                            let e = skip_value(b, i)?;
                            if k == "type" {
                                content_type = Some(value_text(i..e));
                            }
                            Some(e)
                        })?,
                        _ => skip_value(b, i)?,
                    };
                    match k {
                        "sessionUpdate" => tag = Some(value_text(i..e)),
                        "messageId" => match plain_string(value_text(i..e)) {
                            Some(id) => message_id = Some(id),
                            None => message_id_bad = true,
                        },
                        "_meta" => meta = Some(value_text(i..e)),
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
    if skip_ws(b, end) != b.len() || has_id || message_id_bad {
        return None;
    }
    if plain_string(method?)? != "session/update" {
        return None;
    }
    Some(FastUpdate {
        session_id: plain_string(session?)?,
        update: update?,
        tag: plain_string(tag?)?,
        message_id,
        content_type: match content_type {
            Some(t) => Some(plain_string(t)?),
            None => None,
        },
        meta,
    })
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
            "",
            "{",
            r#"{"a":"\"#,
        ] {
            assert!(fast_update(line).is_none(), "{line}");
        }
    }
}
