//! The envelope view of the shared scanner (a client runtime's reader): a
//! `session/update` notification line in the compact envelope agents write,
//! `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"..",..}}`,
//! checked in one pass as serde checks a `RawValue` (the JSON grammar, no
//! more), so a runtime can hand the params text on without decoding the
//! envelope. Anything else (another envelope order, whitespace around the
//! envelope's tokens, an escaped or missing leading `sessionId`, nesting
//! deeper than [`MAX_DEPTH`], invalid JSON) returns `None` and the line
//! takes the serde path, which decides it and reports malformed input.

use super::lexer::find_special;

/// Nesting depth beyond which the line is left to serde.
const MAX_DEPTH: u32 = 64;

/// A `session/update` notification line read by [`update_notification`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateNotification<'a> {
    /// The params object's text, exactly as in the line (what a serde
    /// `RawValue` of the params holds).
    pub params: &'a str,
    /// `params.sessionId`, the params' first member (a string without
    /// escapes), a sub-slice of `params`.
    pub session_id: &'a str,
}

/// Reads `line` (without its newline) as a `session/update` notification in
/// the compact envelope whose params open with a plain `sessionId`; `None`
/// for any other line, or one that is not JSON.
pub fn update_notification(line: &str) -> Option<UpdateNotification<'_>> {
    const ENVELOPE: &[u8] = br#"{"jsonrpc":"2.0","method":"session/update","params":"#;
    const SESSION_ID: &[u8] = br#"{"sessionId":""#;
    let b = line.as_bytes();
    let start = ENVELOPE.len();
    if !b.starts_with(ENVELOPE) || !b[start..].starts_with(SESSION_ID) {
        return None;
    }
    let id_start = start + SESSION_ID.len();
    let id_end = find_special(b, id_start);
    if b.get(id_end) != Some(&b'"') {
        return None;
    }
    let end = object(b, start, 1)?;
    if b.get(end) != Some(&b'}') || end + 1 != b.len() {
        return None;
    }
    Some(UpdateNotification {
        params: &line[start..end],
        session_id: &line[id_start..id_end],
    })
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The JSON value at `i` (no whitespace before it); the index after it.
fn value(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string(b, i),
        b'{' => object(b, i, depth + 1),
        b'[' => array(b, i, depth + 1),
        b't' => literal(b, i, b"true"),
        b'f' => literal(b, i, b"false"),
        b'n' => literal(b, i, b"null"),
        b'-' | b'0'..=b'9' => number(b, i),
        _ => None,
    }
}

fn literal(b: &[u8], i: usize, lit: &[u8]) -> Option<usize> {
    b[i..].starts_with(lit).then_some(i + lit.len())
}

fn digits(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
fn number(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + usize::from(b[i] == b'-');
    match *b.get(j)? {
        b'0' => j += 1,
        b'1'..=b'9' => j = digits(b, j + 1),
        _ => return None,
    }
    if b.get(j) == Some(&b'.') {
        let end = digits(b, j + 1);
        if end == j + 1 {
            return None;
        }
        j = end;
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let end = digits(b, j);
        if end == j {
            return None;
        }
        j = end;
    }
    Some(j)
}

/// A string at `i` (its opening quote): no raw control characters, escapes
/// as JSON has them (`\u` with any four hex digits, as serde accepts).
fn string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j = find_special(b, j);
        match *b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => {
                j += match *b.get(j + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                    b'u' if b.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                    _ => return None,
                };
            }
            _ => return None,
        }
    }
}

fn array(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut j = ws(b, i + 1);
    if b.get(j) == Some(&b']') {
        return Some(j + 1);
    }
    loop {
        j = ws(b, value(b, j, depth)?);
        match *b.get(j)? {
            b',' => j = ws(b, j + 1),
            b']' => return Some(j + 1),
            _ => return None,
        }
    }
}

fn object(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut j = ws(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return Some(j + 1);
    }
    loop {
        if b.get(j) != Some(&b'"') {
            return None;
        }
        j = ws(b, string(b, j)?);
        if b.get(j) != Some(&b':') {
            return None;
        }
        j = ws(b, value(b, ws(b, j + 1), depth)?);
        match *b.get(j)? {
            b',' => j = ws(b, j + 1),
            b'}' => return Some(j + 1),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(params: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}}"#)
    }

    /// Every accepted line is one serde accepts, with the same params text.
    #[test]
    fn accepted_params_are_serdes_raw_params() {
        let accepted = [
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t"}}"#,
            r#"{"sessionId":"","update":{}}"#,
            r#"{"sessionId":"sess 1","update":{"sessionUpdate":"plan","entries":[{"content":"a \"q\" \\ \/ \b\f\n\r\t \u00e9 \uD83D\ude00 \udead","priority":"high"}]}}"#,
            r#"{"sessionId":"s" , "update" : { "sessionUpdate" : "usage_update" , "used" : -0.5e+10 , "size" : 0 , "x" : [ 1 , 2E3 , true , false , null , { } , [ ] ] } }"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"x","a":1,"a":2},"unknown":{"nested":[[[]]]}}"#,
            "{\"sessionId\":\"café → 😀\",\"update\":{\"sessionUpdate\":\"plan\",\"text\":\"ünï\u{7f}\"}}",
            r#"{"sessionId":"s"}"#,
        ];
        for params in accepted {
            let text = line(params);
            let n = update_notification(&text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(n.params, params);
            // serde's envelope decode: each member a `RawValue`.
            let envelope: std::collections::BTreeMap<&str, &serde_json::value::RawValue> =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(envelope["params"].get(), n.params);
            let id_text = format!("\"{}\"", n.session_id);
            assert!(n.params[13..].starts_with(&id_text), "{text}");
        }
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        let deep = format!(
            r#"{{"sessionId":"s","update":{}1{}}}"#,
            "[".repeat(70),
            "]".repeat(70)
        );
        let invalid_params = [
            r#"{"sessionId":"s","update":{"a":01}}"#,
            r#"{"sessionId":"s","update":{"a":1.}}"#,
            r#"{"sessionId":"s","update":{"a":.5}}"#,
            r#"{"sessionId":"s","update":{"a":1e}}"#,
            r#"{"sessionId":"s","update":{"a":-}}"#,
            r#"{"sessionId":"s","update":{"a":+1}}"#,
            r#"{"sessionId":"s","update":{"a":tru}}"#,
            r#"{"sessionId":"s","update":{"a":nul}}"#,
            r#"{"sessionId":"s","update":{"a":"\x"}}"#,
            r#"{"sessionId":"s","update":{"a":"\u12"}}"#,
            r#"{"sessionId":"s","update":{"a":"\u12g4"}}"#,
            "{\"sessionId\":\"s\",\"update\":{\"a\":\"tab\there\"}}",
            r#"{"sessionId":"s","update":{"a":1,}}"#,
            r#"{"sessionId":"s","update":[1,]}"#,
            r#"{"sessionId":"s","update":{"a" 1}}"#,
            r#"{"sessionId":"s","update":{1:1}}"#,
            r#"{"sessionId":"s","update":{"a":1}"#,
            r#"{"sessionId":"s","update":{"a":1}}}"#,
            r#"{"sessionId":"s","update":{"a":"open}}"#,
        ];
        for params in invalid_params {
            let text = line(params);
            assert!(update_notification(&text).is_none(), "{text}");
            assert!(
                serde_json::from_str::<serde_json::Value>(&text).is_err(),
                "{text}"
            );
        }
        let declined_params = [
            deep.as_str(),
            // A session id that is escaped, not a string, or not first.
            r#"{"sessionId":"s\n","update":{}}"#,
            r#"{"sessionId":1,"update":{}}"#,
            r#"{"update":{},"sessionId":"s"}"#,
            r#"{ "sessionId":"s","update":{}}"#,
        ];
        for params in declined_params {
            let text = line(params);
            assert!(update_notification(&text).is_none(), "{text}");
        }
        let ok = r#"{"sessionId":"s","update":{}}"#;
        let rejected_lines = [
            // Another envelope: order, whitespace, method, version, an id, trailing text.
            format!(r#"{{"method":"session/update","jsonrpc":"2.0","params":{ok}}}"#),
            format!(r#"{{"jsonrpc":"2.0", "method":"session/update","params":{ok}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"session/updated","params":{ok}}}"#),
            format!(r#"{{"jsonrpc":"1.0","method":"session/update","params":{ok}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{ok},"id":1}}"#),
            format!("{} ", line(ok)),
            format!("{}x", line(ok)),
            line(ok).trim_end_matches('}').to_owned(),
            String::new(),
        ];
        for text in rejected_lines {
            assert!(update_notification(&text).is_none(), "{text}");
        }
    }

    proptest::proptest! {
        /// A line mangled anywhere is accepted only when serde accepts it,
        /// with the same params text.
        #[test]
        fn never_accepts_what_serde_refuses(
            at in 0usize..200,
            byte in proptest::sample::select(b"{}[]:,\"\\ 0-.eEu1tfnx\n\t".to_vec()),
            cut in proptest::bool::ANY,
        ) {
            let base = line(r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","n":[-1.5e3,0,true,null],"t":"\u00e9\n"}}"#);
            let mut bytes = base.into_bytes();
            let at = at % bytes.len();
            if cut {
                bytes.remove(at);
            } else {
                bytes.insert(at, byte);
            }
            let Ok(text) = String::from_utf8(bytes) else { return Ok(()) };
            if let Some(n) = update_notification(&text) {
                let envelope: std::collections::BTreeMap<&str, &serde_json::value::RawValue> =
                    serde_json::from_str(&text).expect("serde accepts it too");
                proptest::prop_assert_eq!(envelope["params"].get(), n.params);
            }
        }
    }
}
