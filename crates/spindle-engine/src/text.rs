//! Text offsets for views.
//!
//! Render ops measure text in UTF-16 code units because that is how browser
//! JavaScript strings index (`String.prototype.slice`). Rust consumers work in
//! bytes; the helpers here convert between the two. Every offset the engine
//! emits lies on a `char` boundary, so a truncation never splits a surrogate pair.

/// Number of UTF-16 code units needed to encode `text`.
pub fn utf16_len(text: &str) -> usize {
    // ASCII-heavy text is the common case: count bytes that start a char,
    // plus one extra unit for each 4-byte (supplementary plane) char.
    text.chars().map(char::len_utf16).sum()
}

/// Converts a UTF-16 offset into `text` to a byte offset.
///
/// Returns `None` when `units` is past the end of `text` or falls inside a
/// surrogate pair (that is, inside one `char`).
pub fn utf16_to_byte_offset(text: &str, units: usize) -> Option<usize> {
    let mut seen = 0usize;
    for (byte, ch) in text.char_indices() {
        if seen == units {
            return Some(byte);
        }
        seen += ch.len_utf16();
        if seen > units {
            return None;
        }
    }
    (seen == units).then_some(text.len())
}

/// Converts a byte offset into `text` to a UTF-16 offset.
///
/// Returns `None` when `byte` is past the end or not on a `char` boundary.
pub fn byte_to_utf16_offset(text: &str, byte: usize) -> Option<usize> {
    if !text.is_char_boundary(byte) {
        return None;
    }
    Some(utf16_len(&text[..byte]))
}

/// Converts a UTF-16 offset into a `char` offset (for consumers that index by
/// Unicode scalar values). `None` under the same conditions as
/// [`utf16_to_byte_offset`].
pub fn utf16_to_char_offset(text: &str, units: usize) -> Option<usize> {
    let byte = utf16_to_byte_offset(text, units)?;
    Some(text[..byte].chars().count())
}

/// Length in bytes of the longest common prefix of `a` and `b` that ends on a
/// `char` boundary of both strings.
pub(crate) fn common_prefix_len(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let limit = a.len().min(b.len());
    // Compare in blocks first: the common case is a long shared prefix.
    let mut i = 0;
    while i + 16 <= limit && a[i..i + 16] == b[i..i + 16] {
        i += 16;
    }
    while i < limit && a[i] == b[i] {
        i += 1;
    }
    // Equal bytes up to `i`, so a boundary in one string is a boundary in the
    // other; back off to the start of a partially shared char.
    while i > 0 && i < a.len() && (a[i] & 0xC0) == 0x80 {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_offsets_round_trip() {
        let s = "a\u{e9}\u{1F600}b";
        assert_eq!(utf16_len(s), 5);
        assert_eq!(utf16_to_byte_offset(s, 0), Some(0));
        assert_eq!(utf16_to_byte_offset(s, 2), Some(3));
        assert_eq!(
            utf16_to_byte_offset(s, 3),
            None,
            "inside the surrogate pair"
        );
        assert_eq!(utf16_to_byte_offset(s, 4), Some(7));
        assert_eq!(utf16_to_byte_offset(s, 5), Some(8));
        assert_eq!(utf16_to_byte_offset(s, 6), None);
        assert_eq!(byte_to_utf16_offset(s, 7), Some(4));
        assert_eq!(byte_to_utf16_offset(s, 4), None);
        assert_eq!(utf16_to_char_offset(s, 4), Some(3));
    }

    #[test]
    fn common_prefix_never_splits_a_char() {
        assert_eq!(common_prefix_len("h\u{e9}llo", "h\u{e8}llo"), 1);
        assert_eq!(common_prefix_len("abc", "abd"), 2);
        assert_eq!(common_prefix_len("abc", "abc"), 3);
        assert_eq!(common_prefix_len("", "abc"), 0);
        let long_a = "x".repeat(40) + "\u{1F600}";
        let long_b = "x".repeat(40) + "\u{1F601}";
        assert_eq!(common_prefix_len(&long_a, &long_b), 40);
    }
}
