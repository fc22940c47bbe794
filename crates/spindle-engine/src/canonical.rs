//! A strict scanner for `session/update` params whose update the engine can
//! apply without a `serde_json::Value`: [`scan_update_params`].
//!
//! It accepts only *canonical* member values: the exact text serde_json
//! writes for the value it parses (compact; strings escaped only as serde
//! escapes them; integers that fit 64 bits, no floats; objects without
//! repeated keys). So a member's text can be stored as it came, and it is the
//! text the `Value` path would have stored. Everything else (whitespace inside
//! a value, `\/` or `\u00e9`, `1.0`, a repeated key, malformed JSON, ...)
//! returns `None` and the caller takes the `Value` path, which decides it.
//! The scanner changes no state, so a `None` costs only the scan.

use serde_json::{Map, Value};
use spindle_wire::scan::find_special;

/// Nesting depth beyond which a value is left to serde (its own limit is
/// 128).
const MAX_DEPTH: u32 = 64;
/// Members of one nested object checked for repeats without allocating;
/// a larger object is left to serde.
const MAX_OBJECT_KEYS: usize = 32;

/// `session/update` params read by [`scan_update_params`].
#[derive(Debug)]
pub(crate) struct ScannedUpdate<'a> {
    /// `params.sessionId` (a string without escapes), when present.
    pub session_id: Option<&'a str>,
    /// `update.sessionUpdate` (a string without escapes).
    pub tag: &'a str,
    /// The update's members in wire order, `sessionUpdate` included: the key
    /// (without escapes) and the value's canonical text.
    pub members: Vec<(&'a str, &'a str)>,
}

impl<'a> ScannedUpdate<'a> {
    /// The canonical text of member `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&'a str> {
        self.members
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, raw)| *raw)
    }
}

/// Reads `{"sessionId": .., "update": {..}, ..}`: whitespace is allowed
/// between the tokens of the params and update objects, every value must be
/// canonical, keys of the two objects must be plain (no escapes) and not
/// repeated. `None` for anything else.
pub(crate) fn scan_update_params(params: &str) -> Option<ScannedUpdate<'_>> {
    let b = params.as_bytes();
    let mut session_id = None;
    let mut members = None;
    let mut seen: Vec<&str> = Vec::with_capacity(2);
    let end = loose_members(params, ws(b, 0), |key, i| {
        if seen.contains(&key) {
            return None;
        }
        seen.push(key);
        if key == "update" {
            let mut update = Vec::with_capacity(8);
            let end = loose_members(params, i, |key, i| {
                let end = value(b, i, 1)?;
                if update.iter().any(|(k, _)| *k == key) {
                    return None;
                }
                update.push((key, &params[i..end]));
                Some(end)
            })?;
            members = Some(update);
            return Some(end);
        }
        let end = value(b, i, 1)?;
        if key == "sessionId" {
            session_id = Some(plain_string(&params[i..end])?);
        }
        Some(end)
    })?;
    if ws(b, end) != b.len() {
        return None;
    }
    let members = members?;
    let tag = members
        .iter()
        .find(|(k, _)| *k == "sessionUpdate")
        .and_then(|(_, v)| plain_string(v))?;
    Some(ScannedUpdate {
        session_id,
        tag,
        members,
    })
}

/// The members of an object whose keys are plain and whose values are
/// canonical (the text of a `CompactObject`, unless it holds a float or an
/// escaped key), in order: key and value text. `None` for any other text.
pub(crate) fn members(object: &str) -> Option<Vec<(&str, &str)>> {
    let b = object.as_bytes();
    let mut members = Vec::with_capacity(8);
    let end = loose_members(object, 0, |key, i| {
        let end = value(b, i, 1)?;
        members.push((key, &object[i..end]));
        Some(end)
    })?;
    (end == b.len()).then_some(members)
}

/// The contents of a canonical string value without escapes.
pub(crate) fn plain_string(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

/// The value of a member text [`scan_update_params`] checked (canonical),
/// as serde_json parses it, built directly: no parser is needed. Text that
/// was not checked may give `None` or a value serde would not.
pub(crate) fn canonical_value(raw: &str) -> Option<Value> {
    let (value, end) = build(raw, 0)?;
    (end == raw.len()).then_some(value)
}

/// The canonical value at `i` (already checked by [`value`]) and the index
/// after it.
fn build(s: &str, i: usize) -> Option<(Value, usize)> {
    let b = s.as_bytes();
    Some(match *b.get(i)? {
        b'"' => {
            let (text, end) = unescaped(s, i)?;
            (Value::String(text), end)
        }
        b't' => (Value::Bool(true), literal(b, i, b"true")?),
        b'f' => (Value::Bool(false), literal(b, i, b"false")?),
        b'n' => (Value::Null, literal(b, i, b"null")?),
        b'-' => {
            let end = integer(b, i)?;
            (Value::from(s[i..end].parse::<i64>().ok()?), end)
        }
        b'0'..=b'9' => {
            let end = integer(b, i)?;
            (Value::from(s[i..end].parse::<u64>().ok()?), end)
        }
        b'[' => {
            let mut items = Vec::new();
            let mut j = i + 1;
            if b.get(j) == Some(&b']') {
                return Some((Value::Array(items), j + 1));
            }
            loop {
                let (item, end) = build(s, j)?;
                items.push(item);
                match *b.get(end)? {
                    b',' => j = end + 1,
                    b']' => return Some((Value::Array(items), end + 1)),
                    _ => return None,
                }
            }
        }
        b'{' => {
            let mut map = Map::new();
            let mut j = i + 1;
            if b.get(j) == Some(&b'}') {
                return Some((Value::Object(map), j + 1));
            }
            loop {
                let (key, key_end) = unescaped(s, j)?;
                if b.get(key_end) != Some(&b':') {
                    return None;
                }
                let (value, end) = build(s, key_end + 1)?;
                map.insert(key, value);
                match *b.get(end)? {
                    b',' => j = end + 1,
                    b'}' => return Some((Value::Object(map), end + 1)),
                    _ => return None,
                }
            }
        }
        _ => return None,
    })
}

/// The canonical string at `i`, unescaped, and the index after it.
fn unescaped(s: &str, i: usize) -> Option<(String, usize)> {
    let b = s.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut out = String::new();
    let mut j = i + 1;
    loop {
        let run = j;
        j = find_special(b, j);
        // Runs end at ASCII bytes: always char boundaries.
        out.push_str(&s[run..j]);
        match *b.get(j)? {
            b'"' => return Some((out, j + 1)),
            b'\\' => {
                let (c, end) = escape(b, j)?;
                out.push(c);
                j = end;
            }
            _ => return None,
        }
    }
}

/// Walks the object at `i` (whitespace allowed between its tokens): for
/// each member reads its key (without escapes) and colon, then calls
/// `each(key, index of the value)`, which reads the value and returns the
/// index after it. Returns the index after the object's `}`.
fn loose_members<'a>(
    s: &'a str,
    i: usize,
    mut each: impl FnMut(&'a str, usize) -> Option<usize>,
) -> Option<usize> {
    let b = s.as_bytes();
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        let key_end = string(b, i)?;
        let key = plain_string(&s[i..key_end])?;
        i = ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, each(key, ws(b, i + 1))?);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Whether `raw` is, as a whole, one canonical value.
#[cfg(test)]
pub(crate) fn is_canonical(raw: &str) -> bool {
    value(raw.as_bytes(), 0, 0) == Some(raw.len())
}

/// The canonical value at `i`; returns the index after it.
fn value(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string(b, i),
        b'{' => object(b, i, depth + 1),
        b'[' => array(b, i, depth + 1),
        b't' => literal(b, i, b"true"),
        b'f' => literal(b, i, b"false"),
        b'n' => literal(b, i, b"null"),
        b'-' | b'0'..=b'9' => integer(b, i),
        _ => None,
    }
}

fn literal(b: &[u8], i: usize, lit: &[u8]) -> Option<usize> {
    b[i..].starts_with(lit).then_some(i + lit.len())
}

/// An integer serde_json keeps as one (`u64`/`i64`) and writes back the
/// same: no leading zeros, no `-0`, no fraction or exponent, at most 19
/// digits (18 when negative).
fn integer(b: &[u8], i: usize) -> Option<usize> {
    let negative = b[i] == b'-';
    let start = i + usize::from(negative);
    let mut j = start;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
    }
    let digits = j - start;
    let max = if negative { 18 } else { 19 };
    if digits == 0 || digits > max || (b[start] == b'0' && (digits > 1 || negative)) {
        return None;
    }
    if matches!(b.get(j), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    Some(j)
}

/// A string as serde_json writes it: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
/// `\t`, and `\u00xx` (lowercase) for the other control characters; every
/// other character as itself.
fn string(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        j = find_special(b, j);
        match *b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => j = escape(b, j)?.1,
            _ => return None,
        }
    }
}

/// The canonical escape at `j` (a backslash): the character it stands for
/// and the index after it.
fn escape(b: &[u8], j: usize) -> Option<(char, usize)> {
    let c = match *b.get(j + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hex = b.get(j + 2..j + 6)?;
            let digit = |d: u8| match d {
                b'0'..=b'9' => Some(d - b'0'),
                b'a'..=b'f' => Some(d - b'a' + 10),
                _ => None,
            };
            if hex[..2] != *b"00" {
                return None;
            }
            let code = digit(hex[2])? * 16 + digit(hex[3])?;
            if code >= 0x20 || matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                return None;
            }
            return Some((char::from(code), j + 6));
        }
        _ => return None,
    };
    Some((c, j + 2))
}

fn array(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut j = i + 1;
    if b.get(j) == Some(&b']') {
        return Some(j + 1);
    }
    loop {
        j = value(b, j, depth)?;
        match *b.get(j)? {
            b',' => j += 1,
            b']' => return Some(j + 1),
            _ => return None,
        }
    }
}

fn object(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut j = i + 1;
    if b.get(j) == Some(&b'}') {
        return Some(j + 1);
    }
    // Canonical keys have one spelling, so equal texts are equal keys.
    let mut keys: [&[u8]; MAX_OBJECT_KEYS] = [&[]; MAX_OBJECT_KEYS];
    let mut n = 0;
    loop {
        let key_end = string(b, j)?;
        let key = &b[j..key_end];
        if n == MAX_OBJECT_KEYS || keys[..n].contains(&key) {
            return None;
        }
        keys[n] = key;
        n += 1;
        if b.get(key_end) != Some(&b':') {
            return None;
        }
        j = value(b, key_end + 1, depth)?;
        match *b.get(j)? {
            b',' => j += 1,
            b'}' => return Some(j + 1),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the `Value` path stores for `raw`: serde's compact text.
    fn reencoded(raw: &str) -> Option<String> {
        serde_json::from_str::<Value>(raw)
            .ok()
            .map(|v| v.to_string())
    }

    #[test]
    fn canonical_values_are_exactly_serdes_compact_text() {
        let canonical = [
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
            r#""plain café → 😀 \"quoted\" back\\slash \n\r\t\b\f \u0001 \u001f del""#,
            "0",
            "-1",
            "9999999999999999999",
            "-922337203685477580",
            "[]",
            "{}",
            r#"[{"x":[{"y":{}}]}]"#,
            r#"{"same\nkey":1,"same\\nkey":2}"#,
        ];
        for raw in canonical {
            assert!(is_canonical(raw), "{raw}");
            assert_eq!(reencoded(raw).as_deref(), Some(raw), "{raw}");
            let built = canonical_value(raw).expect(raw);
            assert_eq!(
                Some(&built),
                serde_json::from_str::<Value>(raw).ok().as_ref()
            );
            assert_eq!(built.to_string(), raw, "members in order");
        }
        // Valid JSON serde writes differently, and invalid JSON: never canonical.
        let other = [
            r#"{"a": 1}"#,
            r#"[1, 2]"#,
            r#""\/""#,
            r#""\u00e9""#,
            r#""\u000A""#,
            r#""\u000a""#,
            r#""\ud83d\ude00""#,
            "1e3",
            "-0",
            "01",
            "99999999999999999999",
            r#"{"a":1,"a":2}"#,
            r#"{"a":1,"b":{"c":1,"c":1}}"#,
            "\"tab\there\"",
            r#"{"a":1"#,
            r#"[1,]"#,
            r#"{"a":1,}"#,
            "tru",
            "nul",
            r#""open"#,
            r#"{"a"1}"#,
        ];
        for raw in other {
            assert!(!is_canonical(raw), "{raw}");
            assert_ne!(reencoded(raw).as_deref(), Some(raw), "{raw}");
        }
        // Canonical, but left to serde all the same (floats, the largest
        // integers): only the cost of the Value path.
        for raw in ["1.0", "0.5", "18446744073709551615", "-9223372036854775808"] {
            assert!(!is_canonical(raw), "{raw}");
            assert_eq!(reencoded(raw).as_deref(), Some(raw), "{raw}");
        }
        let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
        assert!(!is_canonical(&deep));
    }

    #[test]
    fn params_are_read_loosely_and_members_strictly() {
        let params = r#" { "sessionId" : "s" , "x" : [1,2] , "update" : { "sessionUpdate" : "tool_call" , "toolCallId": "t", "rawInput":{"path":"a b"} } } "#;
        let u = scan_update_params(params).expect("scans");
        assert_eq!(u.session_id, Some("s"));
        assert_eq!(u.tag, "tool_call");
        assert_eq!(
            u.members,
            [
                ("sessionUpdate", r#""tool_call""#),
                ("toolCallId", r#""t""#),
                ("rawInput", r#"{"path":"a b"}"#),
            ]
        );
        assert_eq!(u.get("toolCallId"), Some(r#""t""#));
        let no_session = r#"{"update":{"sessionUpdate":"plan","entries":[]}}"#;
        assert_eq!(scan_update_params(no_session).unwrap().session_id, None);
        for params in [
            // A member value serde would write differently.
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","rawInput":{"a": 1}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":1.5}}"#,
            // Escaped keys, tags and session ids; repeated keys.
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","t\u0069tle":"x"}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool\u005fcall"}}"#,
            r#"{"sessionId":"s\n","update":{"sessionUpdate":"plan"}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"plan","sessionUpdate":"plan"}}"#,
            r#"{"sessionId":"s","sessionId":"t","update":{"sessionUpdate":"plan"}}"#,
            // Not a string session id, no update object, no tag, trailing text.
            r#"{"sessionId":1,"update":{"sessionUpdate":"plan"}}"#,
            r#"{"sessionId":"s","update":null}"#,
            r#"{"sessionId":"s"}"#,
            r#"{"sessionId":"s","update":{"kind":"x"}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"plan"}} x"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"plan"}"#,
            r#"[]"#,
            "",
        ] {
            assert!(scan_update_params(params).is_none(), "{params}");
        }
    }
}
