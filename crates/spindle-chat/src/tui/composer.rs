//! The full-screen chat's composer: a multi-line text with a cursor and the
//! history of sent prompts. Pure state: keys come in as edits, nothing is
//! drawn here (`draw` lays the text out).

/// The text being written and the prompts sent before.
#[derive(Debug, Default)]
pub(crate) struct Composer {
    text: String,
    /// Byte offset of the cursor in `text` (always on a char boundary).
    cursor: usize,
    history: Vec<String>,
    /// Position in `history` while browsing it (`None`: the draft).
    browsing: Option<usize>,
    /// What was typed before browsing started.
    draft: String,
}

impl Composer {
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text; the cursor goes to its end.
    pub(crate) fn set_text(&mut self, text: String) {
        self.cursor = text.len();
        self.text = text;
        self.browsing = None;
    }

    /// Takes the text out (sent), remembering it in the history.
    pub(crate) fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    pub(crate) fn insert(&mut self, s: &str) {
        // Pasted carriage returns are line breaks.
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &s);
        self.cursor += s.len();
    }

    pub(crate) fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    pub(crate) fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    pub(crate) fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    pub(crate) fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    pub(crate) fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub(crate) fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Ctrl-U: erases from the start of the line to the cursor.
    pub(crate) fn erase_to_line_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Ctrl-W: erases the word before the cursor.
    pub(crate) fn erase_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(' ');
        let start = trimmed.rfind([' ', '\n']).map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Up: the line above, or the previous prompt on the first line.
    pub(crate) fn up(&mut self) {
        let start = self.line_start();
        if start == 0 {
            self.history_back();
            return;
        }
        let column = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = column_offset(&self.text, prev_start, start - 1, column);
    }

    /// Down: the line below, or the next prompt on the last line.
    pub(crate) fn down(&mut self) {
        let end = self.line_end();
        if end == self.text.len() {
            self.history_forward();
            return;
        }
        let column = self.text[self.line_start()..self.cursor].chars().count();
        let next_start = end + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        self.cursor = column_offset(&self.text, next_start, next_end, column);
    }

    fn history_back(&mut self) {
        let at = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.browsing = Some(at);
        self.text = self.history[at].clone();
        self.cursor = self.text.len();
    }

    fn history_forward(&mut self) {
        let Some(at) = self.browsing else {
            return;
        };
        if at + 1 < self.history.len() {
            self.browsing = Some(at + 1);
            self.text = self.history[at + 1].clone();
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
    }
}

/// The offset `column` characters into `text[start..end]` (its end when the
/// line is shorter).
fn column_offset(text: &str, start: usize, end: usize, column: usize) -> usize {
    text[start..end]
        .char_indices()
        .nth(column)
        .map_or(end, |(i, _)| start + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case: the edits, then the text with `|` at the cursor.
    #[test]
    fn edits_move_the_cursor_and_browse_the_history() {
        #[derive(Clone, Copy)]
        enum E {
            Type(&'static str),
            Back,
            Left,
            Up,
            Down,
            Home,
            Word,
            Send,
        }
        use E::*;
        let cases: &[(&[E], &str)] = &[
            (&[Type("héllo"), Back, Left, Type("X")], "hélX|l"),
            (&[Type("ab\ncd"), Up, Type("!")], "ab!|\ncd"),
            (&[Type("abc\nd"), Up, Down], "abc\nd|"),
            (&[Type("one two"), Word], "one |"),
            (&[Type("first"), Send, Type("draft"), Up], "first|"),
            (&[Type("first"), Send, Type("draft"), Up, Down], "draft|"),
            (&[Type("a"), Send, Type("b"), Send, Up, Up, Up], "a|"),
            (&[Type("x\ny"), Home, Type(">")], "x\n>|y"),
        ];
        for (edits, expected) in cases {
            let mut c = Composer::default();
            for e in *edits {
                match e {
                    Type(s) => c.insert(s),
                    Back => c.backspace(),
                    Left => c.left(),
                    Up => c.up(),
                    Down => c.down(),
                    Home => c.home(),
                    Word => c.erase_word(),
                    Send => {
                        c.take();
                    }
                }
            }
            let mut shown = c.text().to_owned();
            shown.insert(c.cursor(), '|');
            assert_eq!(&shown, expected);
        }
    }
}
