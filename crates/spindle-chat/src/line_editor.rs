//! Line editing on a terminal, drawn by the chat itself.
//!
//! Why not a line-editing crate: the chat redraws a live region (streaming
//! entries, the status line) while the user types, and the input line is the
//! last row of that region. Editors such as rustyline or reedline own the
//! cursor while they read a line, so every redraw of the region would fight
//! them. Here the terminal only stops echoing and stops buffering lines
//! (`ICANON` and `ECHO` off; `ISIG` stays on, so Ctrl-C is still SIGINT); the
//! keys arrive as [`Key`]s, [`LineEditor`] keeps the line, and the view draws
//! it as part of the region. Piped stdin keeps reading whole lines.

use std::io::Read;

use rustix::termios::{
    LocalModes, OptionalActions, SpecialCodeIndex, Termios, tcgetattr, tcsetattr,
};
use tokio::sync::mpsc;

/// One key press, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A printable character.
    Char(char),
    /// Enter (CR or LF).
    Enter,
    /// Backspace / DEL.
    Backspace,
    /// Tab: complete.
    Tab,
    /// Ctrl-U: erase the line.
    EraseLine,
    /// Ctrl-W: erase the last word.
    EraseWord,
    /// Ctrl-D: end of input on an empty line.
    EndOfInput,
    /// Arrow up: the previous line of the history.
    Up,
    /// Arrow down: the next line of the history.
    Down,
    /// Anything else (ignored).
    Other,
}

/// Turns terminal bytes into keys (escape sequences and UTF-8 across reads).
#[derive(Debug, Default)]
pub struct KeyDecoder {
    pending: Vec<u8>,
}

impl KeyDecoder {
    /// The keys `bytes` complete; an unfinished sequence waits for more.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Key> {
        self.pending.extend_from_slice(bytes);
        let mut keys = Vec::new();
        let mut at = 0;
        while at < self.pending.len() {
            match decode_one(&self.pending[at..]) {
                Some((key, used)) => {
                    keys.push(key);
                    at += used;
                }
                None => break,
            }
        }
        self.pending.drain(..at);
        keys
    }
}

/// The first key of `bytes` and how many bytes it took; `None` when more are needed.
fn decode_one(bytes: &[u8]) -> Option<(Key, usize)> {
    let first = *bytes.first()?;
    let key = match first {
        b'\r' | b'\n' => Key::Enter,
        0x7f | 0x08 => Key::Backspace,
        b'\t' => Key::Tab,
        0x15 => Key::EraseLine,
        0x17 => Key::EraseWord,
        0x04 => Key::EndOfInput,
        0x1b => return decode_escape(bytes),
        0x00..=0x1f => Key::Other,
        0x20..=0x7e => Key::Char(first as char),
        _ => {
            let len = match first {
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf7 => 4,
                _ => return Some((Key::Other, 1)),
            };
            if bytes.len() < len {
                return None;
            }
            return Some(match std::str::from_utf8(&bytes[..len]) {
                Ok(s) => (s.chars().next().map_or(Key::Other, Key::Char), len),
                Err(_) => (Key::Other, 1),
            });
        }
    };
    Some((key, 1))
}

/// `ESC [ ... final` and `ESC O x`; a lone ESC followed by another byte is
/// taken alone.
fn decode_escape(bytes: &[u8]) -> Option<(Key, usize)> {
    match bytes.get(1)? {
        b'[' => {
            // Parameters, then one final byte in 0x40..=0x7e.
            let end = bytes[2..].iter().position(|b| (0x40..=0x7e).contains(b))?;
            let key = match bytes[2 + end] {
                b'A' if end == 0 => Key::Up,
                b'B' if end == 0 => Key::Down,
                _ => Key::Other,
            };
            Some((key, 3 + end))
        }
        b'O' => {
            let key = match bytes.get(2)? {
                b'A' => Key::Up,
                b'B' => Key::Down,
                _ => Key::Other,
            };
            Some((key, 3))
        }
        _ => Some((Key::Other, 1)),
    }
}

/// What a key did to the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// The line changed (or not); redraw it.
    Changed,
    /// Tab: the caller completes [`LineEditor::text`].
    Complete,
    /// Enter: this line was submitted (the editor is empty again).
    Submit(String),
    /// Ctrl-D on an empty line.
    EndOfInput,
}

/// The line being typed, and the lines typed before.
#[derive(Debug, Default)]
pub struct LineEditor {
    text: String,
    history: Vec<String>,
    /// Where Up/Down are in the history (`None`: the line being typed).
    browsing: Option<usize>,
    /// What was being typed before browsing started.
    draft: String,
}

/// History entries kept.
const HISTORY_LIMIT: usize = 500;

impl LineEditor {
    /// The line as typed so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Replaces the line (a completion).
    pub fn set_text(&mut self, text: String) {
        self.text = text;
        self.browsing = None;
    }

    /// Applies one key.
    pub fn key(&mut self, key: Key) -> Edit {
        match key {
            Key::Char(c) => {
                self.text.push(c);
                self.browsing = None;
            }
            Key::Backspace => {
                self.text.pop();
            }
            Key::EraseLine => self.text.clear(),
            Key::EraseWord => {
                let trimmed = self.text.trim_end_matches(' ').len();
                let start = self.text[..trimmed].rfind(' ').map_or(0, |i| i + 1);
                self.text.truncate(start);
            }
            Key::Tab => return Edit::Complete,
            Key::EndOfInput if self.text.is_empty() => return Edit::EndOfInput,
            Key::EndOfInput | Key::Other => {}
            Key::Enter => {
                let line = std::mem::take(&mut self.text);
                self.browsing = None;
                if !line.trim().is_empty() && self.history.last() != Some(&line) {
                    self.history.push(line.clone());
                    if self.history.len() > HISTORY_LIMIT {
                        self.history.remove(0);
                    }
                }
                return Edit::Submit(line);
            }
            Key::Up => {
                let next = match self.browsing {
                    None if !self.history.is_empty() => {
                        self.draft = self.text.clone();
                        Some(self.history.len() - 1)
                    }
                    Some(i) if i > 0 => Some(i - 1),
                    other => other,
                };
                if let Some(i) = next {
                    self.browsing = Some(i);
                    self.text = self.history[i].clone();
                }
            }
            Key::Down => match self.browsing {
                Some(i) if i + 1 < self.history.len() => {
                    self.browsing = Some(i + 1);
                    self.text = self.history[i + 1].clone();
                }
                Some(_) => {
                    self.browsing = None;
                    self.text = std::mem::take(&mut self.draft);
                }
                None => {}
            },
        }
        Edit::Changed
    }
}

/// The terminal in "keys, no echo" mode until dropped (then as it was).
#[derive(Debug)]
pub struct RawInput {
    saved: Termios,
}

impl RawInput {
    /// Turns off line buffering and echo on stdin (a terminal).
    pub fn enable() -> std::io::Result<RawInput> {
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin)?;
        let mut raw = saved.clone();
        raw.local_modes
            .remove(LocalModes::ICANON | LocalModes::ECHO);
        raw.special_codes[SpecialCodeIndex::VMIN] = 1;
        raw.special_codes[SpecialCodeIndex::VTIME] = 0;
        tcsetattr(&stdin, OptionalActions::Now, &raw)?;
        Ok(RawInput { saved })
    }
}

impl Drop for RawInput {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.saved);
    }
}

/// Keys from stdin on a thread of their own; the channel closes when stdin does.
pub fn spawn_key_reader() -> mpsc::UnboundedReceiver<Key> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut decoder = KeyDecoder::default();
        let mut buf = [0u8; 1024];
        loop {
            let n = match std::io::stdin().lock().read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            for key in decoder.feed(&buf[..n]) {
                if tx.send(key).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_keys_sequences_and_utf8_split_across_reads() {
        let mut d = KeyDecoder::default();
        assert_eq!(
            d.feed(b"/mo\t\x7f\r"),
            [
                Key::Char('/'),
                Key::Char('m'),
                Key::Char('o'),
                Key::Tab,
                Key::Backspace,
                Key::Enter
            ]
        );
        assert_eq!(
            d.feed(b"\x1b[A\x1b[B\x1b[1;5C\x1bOA"),
            [Key::Up, Key::Down, Key::Other, Key::Up]
        );
        let e_acute = "é".as_bytes();
        assert_eq!(d.feed(&e_acute[..1]), []);
        assert_eq!(d.feed(&e_acute[1..]), [Key::Char('é')]);
        assert_eq!(d.feed(b"\x1b["), []);
        assert_eq!(d.feed(b"A"), [Key::Up]);
    }

    #[test]
    fn edits_submits_and_walks_the_history() {
        let mut e = LineEditor::default();
        for c in "hello big world".chars() {
            e.key(Key::Char(c));
        }
        e.key(Key::EraseWord);
        assert_eq!(e.text(), "hello big ");
        e.key(Key::Backspace);
        assert_eq!(e.key(Key::Enter), Edit::Submit("hello big".into()));
        assert_eq!(e.text(), "");
        e.key(Key::Char('x'));
        assert_eq!(e.key(Key::Enter), Edit::Submit("x".into()));
        e.key(Key::Char('d'));
        e.key(Key::Up);
        assert_eq!(e.text(), "x");
        e.key(Key::Up);
        assert_eq!(e.text(), "hello big");
        e.key(Key::Up);
        assert_eq!(e.text(), "hello big");
        e.key(Key::Down);
        e.key(Key::Down);
        assert_eq!(e.text(), "d");
        assert_eq!(e.key(Key::EndOfInput), Edit::Changed);
        e.key(Key::EraseLine);
        assert_eq!(e.key(Key::EndOfInput), Edit::EndOfInput);
        assert_eq!(e.key(Key::Tab), Edit::Complete);
    }
}
