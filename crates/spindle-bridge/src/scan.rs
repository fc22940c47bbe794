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
        let rel = b[i..].iter().position(|&c| c == b'"' || c == b'\\')?;
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

/// Calls `each(key, value_range)` for every top-level member of the object
/// text `obj` (ranges index `obj`). None on anything unexpected.
pub(crate) fn members<'a>(obj: &'a str, mut each: impl FnMut(&'a str, Range<usize>)) -> Option<()> {
    let b = obj.as_bytes();
    let mut i = skip_ws(b, 0);
    if *b.get(i)? != b'{' {
        return None;
    }
    i = skip_ws(b, i + 1);
    if *b.get(i)? == b'}' {
        return (skip_ws(b, i + 1) == b.len()).then_some(());
    }
    loop {
        if *b.get(i)? != b'"' {
            return None;
        }
        let end = skip_string(b, i)?;
        let key = &obj[i + 1..end - 1];
        if key.contains('\\') {
            return None;
        }
        i = skip_ws(b, end);
        if *b.get(i)? != b':' {
            return None;
        }
        i = skip_ws(b, i + 1);
        let vend = skip_value(b, i)?;
        each(key, i..vend);
        i = skip_ws(b, vend);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return (skip_ws(b, i + 1) == b.len()).then_some(()),
            _ => return None,
        }
    }
}

/// The text of a JSON string value without escapes, else None.
fn plain_string(v: &str) -> Option<&str> {
    let inner = v.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
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

/// Reads `line` as a `session/update` notification, or None.
pub(crate) fn fast_update(line: &str) -> Option<FastUpdate<'_>> {
    let (mut method, mut params, mut has_id, mut bad) = (None, None, false, false);
    members(line, |k, r| match k {
        "method" => method = Some(&line[r]),
        "params" => params = Some(&line[r]),
        "id" => has_id = true,
        "jsonrpc" => {}
        _ => bad = bad || k.is_empty(),
    })?;
    if has_id || bad || plain_string(method?)? != "session/update" {
        return None;
    }
    let params = params?;
    let (mut session, mut update) = (None, None);
    members(params, |k, r| match k {
        "sessionId" => session = Some(&params[r]),
        "update" => update = Some(&params[r]),
        _ => {}
    })?;
    let session_id = plain_string(session?)?;
    let update = update?;
    let (mut tag, mut message_id, mut content, mut meta) = (None, None, None, None);
    members(update, |k, r| match k {
        "sessionUpdate" => tag = Some(&update[r]),
        "messageId" => message_id = Some(&update[r]),
        "content" => content = Some(&update[r]),
        "_meta" => meta = Some(&update[r]),
        _ => {}
    })?;
    let tag = plain_string(tag?)?;
    let message_id = match message_id {
        None => None,
        Some(v) => Some(plain_string(v)?),
    };
    let content_type = match content {
        Some(c) if c.starts_with('{') => {
            let mut ty = None;
            members(c, |k, r| {
                if k == "type" {
                    ty = Some(&c[r]);
                }
            })?;
            Some(plain_string(ty?)?)
        }
        _ => None,
    };
    Some(FastUpdate {
        session_id,
        update,
        tag,
        message_id,
        content_type,
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
