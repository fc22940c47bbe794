//! How wide text is on a terminal and where its lines break: display widths
//! (East Asian wide characters and emoji take two columns, combining marks
//! none), the rows a line takes when the terminal wraps it, and the word
//! wrap the chat applies itself: lines break between words, a word wider
//! than the row alone is cut, continuation rows start with a hanging indent.

/// Display columns of sanitised text (East Asian wide and emoji count 2,
/// combining marks 0; an approximation of `wcwidth`).
pub fn display_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// Rows sanitised `text` occupies on a terminal `cols` wide (at least 1)
/// when the terminal wraps it: a character that does not fit on the current
/// row starts the next, and a row filled exactly does not wrap by itself.
pub fn rows_for(text: &str, cols: usize) -> usize {
    let cols = cols.max(1);
    let mut rows = 1;
    let mut column = 0;
    for c in text.chars() {
        let w = char_width(c);
        if column + w > cols {
            rows += 1;
            column = 0;
        }
        column += w;
    }
    rows
}

/// `text` broken into rows of at most `cols` columns, between words: a row
/// ends before the word that would not fit, the spaces there are dropped,
/// and the next row starts with `hang` (`None`: the text's own leading
/// spaces). Only a word wider than a whole row is cut inside. A hang that
/// would leave less than half the row is not used.
pub fn word_wrap(text: &str, cols: usize, hang: Option<&str>) -> Vec<String> {
    let cols = cols.max(1);
    if display_width(text) <= cols {
        return vec![text.to_owned()];
    }
    let indent_len = text.len() - text.trim_start_matches(' ').len();
    let hang = hang.unwrap_or(&text[..indent_len]);
    let hang = if display_width(hang) * 2 > cols {
        ""
    } else {
        hang
    };
    let mut wrapper = Wrapper {
        cols,
        hang,
        rows: Vec::new(),
        row: String::new(),
        width: 0,
    };
    // The leading spaces are the first row's indentation, not a break.
    wrapper.push_str(&text[..indent_len]);
    let mut rest = &text[indent_len..];
    while !rest.is_empty() {
        let spaces = rest.len() - rest.trim_start_matches(' ').len();
        let (gap, after) = rest.split_at(spaces);
        let word_len = after.find(' ').unwrap_or(after.len());
        let (word, after) = after.split_at(word_len);
        rest = after;
        if word.is_empty() {
            // Trailing spaces: nothing follows them on this row.
            break;
        }
        let needed = display_width(gap) + display_width(word);
        if wrapper.width + needed <= cols || wrapper.at_row_start() {
            if !wrapper.at_row_start() {
                wrapper.push_str(gap);
            }
        } else {
            wrapper.break_row();
        }
        wrapper.push_word(word);
    }
    wrapper.finish()
}

/// The rows built so far and the one being filled.
struct Wrapper<'a> {
    cols: usize,
    hang: &'a str,
    rows: Vec<String>,
    row: String,
    width: usize,
}

impl Wrapper<'_> {
    /// Nothing but the row's indentation so far.
    fn at_row_start(&self) -> bool {
        self.row.trim_start_matches(' ').is_empty()
            || (!self.rows.is_empty() && self.row == self.hang)
    }

    fn push_str(&mut self, text: &str) {
        self.row.push_str(text);
        self.width += display_width(text);
    }

    fn break_row(&mut self) {
        let row = std::mem::take(&mut self.row);
        self.rows.push(row.trim_end_matches(' ').to_owned());
        self.row.push_str(self.hang);
        self.width = display_width(self.hang);
    }

    /// A word where the row has room for it, cut when no row could hold it.
    fn push_word(&mut self, word: &str) {
        if self.width + display_width(word) <= self.cols {
            self.push_str(word);
            return;
        }
        for c in word.chars() {
            let w = char_width(c);
            if self.width + w > self.cols && !self.at_row_start() {
                self.break_row();
            }
            self.row.push(c);
            self.width += w;
        }
    }

    fn finish(mut self) -> Vec<String> {
        if !self.at_row_start() || self.rows.is_empty() {
            self.rows.push(self.row.trim_end_matches(' ').to_owned());
        }
        self.rows
    }
}

pub(crate) fn char_width(c: char) -> usize {
    match c as u32 {
        0x0300..=0x036f | 0x200b..=0x200d | 0xfe00..=0xfe0f | 0x20d0..=0x20ff => 0,
        0x1100..=0x115f
        | 0x2e80..=0x303e
        | 0x3041..=0x33ff
        | 0x3400..=0x4dbf
        | 0x4e00..=0x9fff
        | 0xa000..=0xa4cf
        | 0xac00..=0xd7a3
        | 0xf900..=0xfaff
        | 0xfe30..=0xfe4f
        | 0xff00..=0xff60
        | 0xffe0..=0xffe6
        | 0x1f300..=0x1f64f
        | 0x1f900..=0x1f9ff
        | 0x20000..=0x3fffd => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_wrap_like_a_terminal() {
        assert_eq!(rows_for("", 10), 1);
        assert_eq!(rows_for("0123456789", 10), 1);
        assert_eq!(rows_for("0123456789a", 10), 2);
        // A wide character that would straddle the edge starts a new row.
        assert_eq!(rows_for("012345678日", 10), 2);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        assert_eq!(display_width("ab"), 2);
        assert_eq!(display_width("日本"), 4);
        assert_eq!(display_width("e\u{301}"), 1);
        assert_eq!(display_width("🎉"), 2);
    }

    /// (text, columns, hang, rows).
    const WRAPS: &[(&str, usize, Option<&str>, &[&str])] = &[
        // Fits: as is, trailing spaces included.
        ("short line", 20, None, &["short line"]),
        // Breaks between words, never inside one; the spaces at a break go.
        (
            "the quick brown fox jumps over the lazy dog",
            16,
            None,
            &["the quick brown", "fox jumps over", "the lazy dog"],
        ),
        // A row may end exactly at the edge.
        ("aaaa bbbb cccc", 9, None, &["aaaa bbbb", "cccc"]),
        // Only a word wider than the row is cut.
        (
            "see https://example.com/a/very/long/path now",
            12,
            None,
            &["see", "https://exam", "ple.com/a/ve", "ry/long/path", "now"],
        ),
        // The line's indentation hangs under it.
        (
            "    indented detail text here",
            14,
            None,
            &["    indented", "    detail", "    text here"],
        ),
        // A label hangs when asked to.
        (
            "thought | one two three four five",
            20,
            Some("thought | "),
            &[
                "thought | one two",
                "thought | three four",
                "thought | five",
            ],
        ),
        // A hang wider than half the row is dropped.
        (
            "thought | one two three",
            12,
            Some("thought | "),
            &["thought |", "one two", "three"],
        ),
        // Wide characters count two columns: 日本語 is 6.
        (
            "日本語 日本語 日本語",
            13,
            None,
            &["日本語 日本語", "日本語"],
        ),
        // A wide word is cut where the next character would not fit.
        ("日本語日本語", 5, None, &["日本", "語日", "本語"]),
        // Emoji are two columns too.
        ("🎉🎉 🎉🎉 ok", 5, None, &["🎉🎉", "🎉🎉", "ok"]),
        // Many spaces between words stay within a row, go at a break.
        ("a    b", 3, None, &["a", "b"]),
    ];

    #[test]
    fn word_wrap_breaks_between_words_at_the_width() {
        for (text, cols, hang, rows) in WRAPS {
            let got = word_wrap(text, *cols, *hang);
            assert_eq!(got, *rows, "{text:?} at {cols}");
            for row in &got {
                assert!(display_width(row) <= *cols, "{row:?} wider than {cols}");
            }
        }
    }
}
