//! A strict single-pass scanner for the one update shape that dominates
//! every stream: a plain text chunk,
//! `{"sessionId":..,"update":{"sessionUpdate":"agent_message_chunk","messageId":..,"content":{"type":"text","text":..}}}`
//! (keys in any order, optionally inside the JSON-RPC envelope).
//!
//! It accepts only that exact shape, with no other keys anywhere and no
//! duplicate keys, and validates every byte it consumes; on anything else it
//! returns `None` and the line takes the serde probes, which are the
//! reference. So the scanner can only make the common case cheaper: it never
//! decides what an unusual line means.

use std::borrow::Cow;

/// The fields of a plain text chunk.
#[derive(Debug, PartialEq)]
pub struct PlainChunk<'a> {
    pub session_id: Option<Cow<'a, str>>,
    pub tag: Cow<'a, str>,
    pub message_id: Option<Cow<'a, str>>,
    pub text: Cow<'a, str>,
}

/// Scans `session/update` params holding a plain text chunk.
pub fn plain_chunk_params(params: &str) -> Option<PlainChunk<'_>> {
    let mut s = Scanner { s: params, i: 0 };
    if let Some(chunk) = s.compact_params()
        && s.end().is_some()
    {
        return Some(chunk);
    }
    let mut s = Scanner { s: params, i: 0 };
    let chunk = s.params()?;
    s.end()?;
    Some(chunk)
}

/// Scans a whole `session/update` notification line holding a plain text chunk.
pub fn plain_chunk_line(line: &str) -> Option<PlainChunk<'_>> {
    let mut s = Scanner { s: line, i: 0 };
    if s.lit(br#"{"jsonrpc":"2.0","method":"session/update","params":"#)
        .is_some()
        && let Some(chunk) = s.compact_params()
        && s.lit(b"}").is_some()
        && s.end().is_some()
    {
        return Some(chunk);
    }
    let mut s = Scanner { s: line, i: 0 };
    s.eat(b'{')?;
    let (mut version, mut method, mut chunk) = (false, false, None);
    loop {
        let key = s.key()?;
        match key {
            "jsonrpc" if !version => {
                version = true;
                s.string()?;
            }
            "method" if !method => {
                method = true;
                if s.string()? != "session/update" {
                    return None;
                }
            }
            "params" if chunk.is_none() => chunk = Some(s.params()?),
            _ => return None,
        }
        if s.next_member()? {
            break;
        }
    }
    s.end()?;
    if !method {
        return None;
    }
    chunk
}

struct Scanner<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        let b = self.s.as_bytes();
        while self.i < b.len() && matches!(b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        if self.s.as_bytes().get(self.i) == Some(&c) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    fn end(&mut self) -> Option<()> {
        self.ws();
        (self.i == self.s.len()).then_some(())
    }

    /// After a member: `true` at the closing `}`, `false` after a `,`.
    fn next_member(&mut self) -> Option<bool> {
        self.ws();
        match self.s.as_bytes().get(self.i)? {
            b'}' => {
                self.i += 1;
                Some(true)
            }
            b',' => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// An object key without escapes, and its colon.
    fn key(&mut self) -> Option<&'a str> {
        let Cow::Borrowed(key) = self.string()? else {
            return None;
        };
        self.eat(b':')?;
        Some(key)
    }

    fn null(&mut self) -> bool {
        self.ws();
        if self.s.as_bytes()[self.i..].starts_with(b"null") {
            self.i += 4;
            true
        } else {
            false
        }
    }

    /// A JSON string: borrowed when it has no escapes.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let b = self.s.as_bytes();
        let start = self.i;
        let end = find_special(b, start);
        if end == b.len() || b[end] < 0x20 {
            return None;
        }
        if b[end] == b'"' {
            self.i = end + 1;
            return Some(Cow::Borrowed(&self.s[start..end]));
        }
        self.i = end;
        self.unescape(start).map(Cow::Owned)
    }

    /// The rest of a string with escapes, from `start` (the string's first
    /// byte; `self.i` is at its first backslash).
    fn unescape(&mut self, start: usize) -> Option<String> {
        let b = self.s.as_bytes();
        let mut out = String::with_capacity(self.i - start + 16);
        out.push_str(&self.s[start..self.i]);
        let mut i = self.i;
        loop {
            let run = i;
            i = find_special(b, i);
            if i == b.len() || b[i] < 0x20 {
                return None;
            }
            // Runs end at ASCII bytes: always char boundaries.
            out.push_str(&self.s[run..i]);
            match b[i] {
                b'"' => {
                    self.i = i + 1;
                    return Some(out);
                }
                b'\\' => {
                    let escaped = *b.get(i + 1)?;
                    i += 2;
                    let c = match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = hex4(b, i)?;
                            i += 4;
                            if (0xD800..0xDC00).contains(&hi) {
                                // A surrogate pair; anything less is left to serde.
                                if b.get(i..i + 2)? != b"\\u" {
                                    return None;
                                }
                                let lo = hex4(b, i + 2)?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return None;
                                }
                                i += 6;
                                char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                            } else {
                                char::from_u32(hi)?
                            }
                        }
                        _ => return None,
                    };
                    out.push(c);
                }
                _ => return None,
            }
        }
    }

    /// The bytes `lit`, exactly (no whitespace skipped).
    fn lit(&mut self, lit: &[u8]) -> Option<()> {
        if self.s.as_bytes()[self.i..].starts_with(lit) {
            self.i += lit.len();
            Some(())
        } else {
            None
        }
    }

    /// Params in the compact key order every known agent writes
    /// (`sessionId`, `update` with `sessionUpdate`, `messageId`, `content`
    /// with `type` then `text`, no whitespace): literal comparisons instead
    /// of a key-by-key walk. `None` sends the params to [`Self::params`].
    fn compact_params(&mut self) -> Option<PlainChunk<'a>> {
        self.lit(br#"{"sessionId":"#)?;
        let session_id = self.string()?;
        self.lit(br#","update":{"sessionUpdate":"#)?;
        let tag = self.string()?;
        let message_id = if self.lit(br#","messageId":"#).is_some() {
            Some(self.string()?)
        } else {
            None
        };
        self.lit(br#","content":{"type":"text","text":"#)?;
        let text = self.string()?;
        self.lit(b"}}}")?;
        Some(PlainChunk {
            session_id: Some(session_id),
            tag,
            message_id,
            text,
        })
    }

    /// `{"sessionId": .., "update": {..}}`.
    fn params(&mut self) -> Option<PlainChunk<'a>> {
        self.eat(b'{')?;
        let (mut session_id, mut update, mut seen_session) = (None, None, false);
        loop {
            match self.key()? {
                "sessionId" if !seen_session => {
                    seen_session = true;
                    session_id = Some(self.string()?);
                }
                "update" if update.is_none() => update = Some(self.update()?),
                _ => return None,
            }
            if self.next_member()? {
                break;
            }
        }
        let (tag, message_id, text) = update?;
        Some(PlainChunk {
            session_id,
            tag,
            message_id,
            text,
        })
    }

    /// The update object: its tag, messageId and text.
    #[allow(clippy::type_complexity)]
    fn update(&mut self) -> Option<(Cow<'a, str>, Option<Cow<'a, str>>, Cow<'a, str>)> {
        self.eat(b'{')?;
        let (mut tag, mut message_id, mut seen_id, mut text) = (None, None, false, None);
        loop {
            match self.key()? {
                "sessionUpdate" if tag.is_none() => tag = Some(self.string()?),
                "messageId" if !seen_id => {
                    seen_id = true;
                    if !self.null() {
                        message_id = Some(self.string()?);
                    }
                }
                "content" if text.is_none() => text = Some(self.text_block()?),
                _ => return None,
            }
            if self.next_member()? {
                break;
            }
        }
        Some((tag?, message_id, text?))
    }

    /// `{"type": "text", "text": ..}` with no other keys.
    fn text_block(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'{')?;
        let (mut is_text, mut text) = (None, None);
        loop {
            match self.key()? {
                "type" if is_text.is_none() => is_text = Some(self.string()? == "text"),
                "text" if text.is_none() => text = Some(self.string()?),
                _ => return None,
            }
            if self.next_member()? {
                break;
            }
        }
        if is_text? { text } else { None }
    }
}

/// The index of the first byte at or after `i` that ends a run of plain
/// string content (`"`, `\\` or a control character), or `b.len()`.
/// Eight bytes at a time: for each predicate, the lowest flagged byte of a
/// word is exact (borrows only flag bytes above a true match), so the lowest
/// flag over all three is the first special byte.
fn find_special(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = b.get(i..i + 8) {
        let Ok(word) = <[u8; 8]>::try_from(word) else {
            break;
        };
        let w = u64::from_le_bytes(word);
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        let flags = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (w.wrapping_sub(ONES * 0x20) & !w))
            & HIGHS;
        if flags != 0 {
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && b[i] != b'"' && b[i] != b'\\' && b[i] >= 0x20 {
        i += 1;
    }
    i
}

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    let mut v = 0u32;
    for &d in digits {
        v = v * 16 + (d as char).to_digit(16)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str) -> String {
        format!(
            r#"{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{{"type":"text","text":{text}}}}}}}"#
        )
    }

    #[test]
    fn plain_chunks_scan_with_borrowed_or_unescaped_text() {
        let hello = chunk(r#""Hello""#);
        let p = plain_chunk_params(&hello).expect("plain");
        assert_eq!(p.session_id.as_deref(), Some("s"));
        assert_eq!(p.tag, "agent_message_chunk");
        assert_eq!(p.message_id.as_deref(), Some("m"));
        assert!(matches!(p.text, Cow::Borrowed("Hello")));
        for raw in [
            r#""a\"b\\c\/d\n\t\r\b\f""#,
            r#""\u00e9\u20ac\ud83d\ude00 x""#,
            r#""caf\u00E9 ok""#,
            r#""é😀 raw""#,
        ] {
            let params = chunk(raw);
            let p = plain_chunk_params(&params).expect(raw);
            let expected: String = serde_json::from_str(raw).expect("valid JSON string");
            assert_eq!(p.text, expected, "{raw}");
        }
        // Longer than one 8-byte word: escapes and the end found word by word.
        let long = format!(r#""{}\n{}""#, "a".repeat(40), "b".repeat(40));
        let params = chunk(&long);
        let p = plain_chunk_params(&params).expect("long string");
        assert_eq!(p.text, format!("{}\n{}", "a".repeat(40), "b".repeat(40)));
        let raw_tab = format!("\"{}\t\"", "a".repeat(40));
        assert!(plain_chunk_params(&chunk(&raw_tab)).is_none());
        let spaced = " { \"update\" : { \"content\" : { \"text\" : \"x\" , \"type\" : \"text\" } , \"messageId\" : null , \"sessionUpdate\" : \"agent_thought_chunk\" } } \n";
        let p = plain_chunk_params(spaced).expect("whitespace and key order");
        assert_eq!(
            (p.session_id, p.message_id, p.text),
            (None, None, Cow::Borrowed("x"))
        );
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{}}}"#,
            chunk(r#""hi""#)
        );
        assert_eq!(plain_chunk_line(&line).expect("line").text, "hi");
    }

    #[test]
    fn find_special_finds_the_first_special_byte_at_every_offset() {
        for special in [b'"', b'\\', 0x00, 0x1f] {
            for len in 0..20 {
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    // Bytes that look close to special ones must not match.
                    if at + 1 < len {
                        bytes[at + 1] = b'"';
                    }
                    if at > 0 {
                        bytes[at - 1] = 0x20;
                    }
                    for start in 0..=at {
                        assert_eq!(
                            find_special(&bytes, start),
                            at,
                            "{special} {len} {at} {start}"
                        );
                    }
                }
                let plain: Vec<u8> = (0..len)
                    .map(|k| [b'!', b'#', 0x7f, 0x80, 0xff, b' '][k % 6])
                    .collect();
                assert_eq!(find_special(&plain, 0), len);
            }
        }
    }

    proptest::proptest! {
        // Any string serde_json writes (escapes included) scans back exactly.
        #[test]
        fn scanned_text_equals_serde_text(text in "\\PC*|[\\x00-\\x20\"\\\\/\u{e9}\u{1F600}]*") {
            let params = chunk(&serde_json::to_string(&text).expect("a string serializes"));
            let scanned = plain_chunk_params(&params).expect("plain");
            proptest::prop_assert_eq!(scanned.text, text);
        }
    }

    // Everything outside the exact shape goes to the serde probes.
    #[test]
    fn anything_else_is_left_to_the_serde_path() {
        for raw in [
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83d\u0041""#,
            r#""\x""#,
            r#""\u12g4""#,
            "\"tab\there\"",
            r#""unterminated"#,
            "5",
            "null",
        ] {
            assert!(plain_chunk_params(&chunk(raw)).is_none(), "{raw}");
        }
        for odd in [
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":{}}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","text":"x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","_meta":{},"content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},"update":{}}"#,
            r#"{"sessionId":"s","sessionId":"t","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":7,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":3,"content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}} x"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},}}"#,
            r#"{"sessionId":"s","upd\u0061te":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s""#,
            "",
        ] {
            assert!(plain_chunk_params(odd).is_none(), "{odd}");
        }
        let params = chunk(r#""x""#);
        for line in [
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"session/other","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","params":{params}}}"#),
            format!(r#"{{"sent":{{}},"method":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":2,"method":"session/update","params":{params}}}"#),
        ] {
            assert!(plain_chunk_line(&line).is_none(), "{line}");
        }
    }
}
