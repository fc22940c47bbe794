//! The lexer both scanner views share: a cursor over one JSON text with
//! whitespace, literals, strings (strict: validated and unescaped; or
//! skipped: only their end is found), skipped values and the walk over an
//! object's members. Every method returns `None` on anything it does not
//! expect, and the caller then leaves the line to serde.

use std::borrow::Cow;

/// A position in a JSON text.
pub(crate) struct Cursor<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `s`.
    pub(crate) fn new(s: &'a str) -> Self {
        Cursor { s, i: 0 }
    }

    /// The text scanned.
    pub(crate) fn text(&self) -> &'a str {
        self.s
    }

    /// The byte offset of the cursor.
    pub(crate) fn pos(&self) -> usize {
        self.i
    }

    /// Skips JSON whitespace.
    pub(crate) fn ws(&mut self) {
        let b = self.s.as_bytes();
        while self.i < b.len() && matches!(b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.as_bytes().get(self.i).copied()
    }

    /// Consumes `c` after whitespace.
    pub(crate) fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> Option<()> {
        self.ws();
        (self.i == self.s.len()).then_some(())
    }

    /// The bytes `lit`, exactly (no whitespace skipped). Inlined, so a
    /// short literal is compared with a few loads instead of a `memcmp` call.
    #[inline(always)]
    pub(crate) fn lit(&mut self, lit: &[u8]) -> Option<()> {
        if self.s.as_bytes()[self.i..].starts_with(lit) {
            self.i += lit.len();
            Some(())
        } else {
            None
        }
    }

    /// Consumes `null` when it comes next.
    pub(crate) fn null(&mut self) -> bool {
        self.ws();
        self.lit(b"null").is_some()
    }

    /// Walks the object that comes next: for each member reads its key
    /// (without escapes) and colon, then calls `each(self, key)` with the
    /// cursor at the value, which `each` must consume. Ends after the `}`.
    pub(crate) fn members(
        &mut self,
        mut each: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.ws();
            each(self, key)?;
            if self.next_member()? {
                return Some(());
            }
        }
    }

    /// After a member: `true` at the closing `}`, `false` after a `,`.
    pub(crate) fn next_member(&mut self) -> Option<bool> {
        match self.peek()? {
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
    pub(crate) fn key(&mut self) -> Option<&'a str> {
        let Cow::Borrowed(key) = self.string()? else {
            return None;
        };
        self.eat(b':')?;
        Some(key)
    }

    /// A JSON string, validated: borrowed when it has no escapes.
    #[inline]
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        self.string_rest()
    }

    /// [`Self::string`] after its opening quote (which a literal consumed).
    #[inline]
    pub(crate) fn string_rest(&mut self) -> Option<Cow<'a, str>> {
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
    /// byte; `self.i` is at its first backslash). Read twice: once to check
    /// it and measure its unescaped length, then into a `String` of exactly
    /// that length (so keeping it as a `Box<str>` does not reallocate).
    fn unescape(&mut self, start: usize) -> Option<String> {
        let b = self.s.as_bytes();
        let mut len = self.i - start;
        let mut i = self.i;
        let end = loop {
            let run = i;
            i = find_special(b, i);
            if i == b.len() || b[i] < 0x20 {
                return None;
            }
            len += i - run;
            if b[i] == b'"' {
                break i;
            }
            let (c, next) = escape_at(b, i)?;
            len += c.len_utf8();
            i = next;
        };
        let mut out = String::with_capacity(len);
        out.push_str(&self.s[start..self.i]);
        let mut i = self.i;
        while i < end {
            let run = i;
            // Checked above: the next special byte is an escape or the end.
            i = find_special(b, i);
            // Runs end at ASCII bytes: always char boundaries.
            out.push_str(&self.s[run..i]);
            if i < end {
                let (c, next) = escape_at(b, i)?;
                out.push(c);
                i = next;
            }
        }
        self.i = end + 1;
        Some(out)
    }

    /// The value that comes next, skipped without validating it (strings
    /// to their closing quote, containers to their matching bracket,
    /// scalars to the next delimiter); returns its text.
    pub(crate) fn skip_value(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        self.i = skip_value(self.s.as_bytes(), start)?;
        Some(&self.s[start..self.i])
    }
}

/// The index of the first byte at or after `i` that ends a run of plain
/// string content (`"`, `\\` or a control character), or `b.len()`.
/// Eight bytes at a time: for each predicate, the lowest flagged byte of a
/// word is exact (borrows only flag bytes above a true match), so the lowest
/// flag over all three is the first special byte.
pub fn find_special(b: &[u8], mut i: usize) -> usize {
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

/// The escape at `i` (a backslash): the character it stands for and the
/// index after it. `None` for anything serde would refuse or read otherwise
/// (an unknown escape; a surrogate that is not half of a pair, which is left
/// to serde).
fn escape_at(b: &[u8], i: usize) -> Option<(char, usize)> {
    let c = match *b.get(i + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hi = hex4(b, i + 2)?;
            if (0xD800..0xDC00).contains(&hi) {
                if b.get(i + 6..i + 8)? != b"\\u" {
                    return None;
                }
                let lo = hex4(b, i + 8)?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return None;
                }
                let c = char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?;
                return Some((c, i + 12));
            }
            return Some((char::from_u32(hi)?, i + 6));
        }
        _ => return None,
    };
    Some((c, i + 2))
}

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    let mut v = 0u32;
    for &d in digits {
        v = v * 16 + (d as char).to_digit(16)?;
    }
    Some(v)
}

/// `i` at an opening quote; returns the index after the closing quote.
/// Escapes are stepped over, not checked.
pub(crate) fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
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

/// Byte offset of `inner` (a sub-slice of `outer`, as the scanner's and
/// serde's borrowed values are) within `outer`.
pub fn offset_in(outer: &str, inner: &str) -> Option<usize> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (start + inner.len() <= outer.len()).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn members_walks_top_level_keys_and_skips_nested_values() {
        let mut keys = Vec::new();
        let mut c = Cursor::new(r#" {"a": [1, {"b": "}"}], "c" : null, "d":{}} "#);
        c.members(|c, k| {
            keys.push((k, c.skip_value()?));
            Some(())
        })
        .expect("an object");
        assert!(c.end().is_some());
        assert_eq!(
            keys,
            [("a", r#"[1, {"b": "}"}]"#), ("c", "null"), ("d", "{}")]
        );
        assert!(Cursor::new("[1]").members(|_, _| Some(())).is_none());
        assert!(Cursor::new("{}").members(|_, _| None).is_some());
        assert!(
            Cursor::new(r#"{"a":1,}"#)
                .members(|c, _| c.skip_value().map(drop))
                .is_none()
        );
        assert!(
            Cursor::new(r#"{"\u0061":1}"#)
                .members(|c, _| c.skip_value().map(drop))
                .is_none()
        );
    }

    /// An escaped string is unescaped as serde reads it, into a `String` of
    /// exactly its length; an escape serde would refuse or read otherwise
    /// leaves the string unread.
    #[test]
    fn escaped_strings_are_unescaped_at_their_exact_length() {
        for raw in [
            r#""a\nb""#,
            r#""\"quoted\" \\ \/ \b\f\r\t""#,
            r#""caf\u00e9 \u2192 \ud83d\ude00 end""#,
            r#""\u0000 long run before the escape: abcdefghijklmnop\n""#,
            "\"raw é → 😀 then \\n\"",
        ] {
            let mut c = Cursor::new(raw);
            let Some(Cow::Owned(text)) = c.string() else {
                panic!("{raw}: not unescaped");
            };
            let expected: String = serde_json::from_str(raw).expect("valid JSON");
            assert_eq!(text, expected, "{raw}");
            assert_eq!(text.capacity(), text.len(), "{raw}");
            assert_eq!(c.pos(), raw.len(), "{raw}");
        }
        for raw in [
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83d\u0041""#,
            r#""\x""#,
            r#""a\u12""#,
            "\"a\\n\tb\"",
            r#""a\n"#,
        ] {
            assert!(Cursor::new(raw).string().is_none(), "{raw}");
        }
    }

    #[test]
    fn skip_string_steps_over_escapes() {
        for (s, end) in [
            (r#""""#, 2),
            (r#""a\"b""#, 6),
            (r#""\\""#, 4),
            (r#""a very long string past sixteen bytes \" x""#, 44),
        ] {
            assert_eq!(skip_string(s.as_bytes(), 0), Some(end), "{s}");
        }
        assert_eq!(skip_string(br#""abc"#, 0), None);
        assert_eq!(skip_string(br#""abc\"#, 0), None);
    }
}
