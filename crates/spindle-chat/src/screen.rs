//! The terminal: committed scrollback above, one live region below that is
//! redrawn in place.
//!
//! Invariant: `shown` is what the live region holds on the screen, so the
//! rows between its top and the cursor are counted from it, at the width the
//! terminal has now (terminals rewrap on resize). Redrawing erases that many
//! rows above the cursor (and its own) and prints the region again,
//! so text that the agent cleared or replaced disappears instead of being
//! printed twice. The region is cut to its last rows when it would not fit
//! on the screen (the cursor cannot move into the scrollback); the full text
//! is printed when it is committed.
//!
//! On a terminal every line is word-wrapped here, at the terminal's width
//! (`crate::wrap::word_wrap`): rows break between words, continuation rows
//! start with the line's hang. Without a terminal (a pipe, a file) lines
//! are written whole, unwrapped: whatever reads them wraps as it likes, and
//! a line stays one line for `grep`.

use std::fmt::Write as _;
use std::io::Write;

use super::render::{Line, Style};
use super::wrap::{display_width, rows_for, word_wrap};

/// Terminal size in columns and rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSize {
    /// Columns.
    pub cols: usize,
    /// Rows.
    pub rows: usize,
}

impl TermSize {
    /// The controlling terminal's size (`stty size`), else `$COLUMNS` /
    /// `$LINES`, else 80x24.
    pub fn probe() -> TermSize {
        let from_stty = std::fs::File::open("/dev/tty").ok().and_then(|tty| {
            let output = std::process::Command::new("stty")
                .arg("size")
                .stdin(tty)
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            let text = String::from_utf8(output.stdout).ok()?;
            let mut parts = text.split_whitespace().map(str::parse::<usize>);
            match (parts.next(), parts.next()) {
                (Some(Ok(rows)), Some(Ok(cols))) if rows > 0 && cols > 0 => {
                    Some(TermSize { cols, rows })
                }
                _ => None,
            }
        });
        from_stty.unwrap_or_else(|| {
            let env = |name: &str, default: usize| {
                std::env::var(name)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n: &usize| n > 0)
                    .unwrap_or(default)
            };
            TermSize {
                cols: env("COLUMNS", 80),
                rows: env("LINES", 24),
            }
        })
    }
}

/// The live region on a terminal (or plain appends when stdout is not one).
#[derive(Debug)]
pub struct Screen {
    tty: bool,
    size: TermSize,
    /// What the live region holds on the screen now: its rows are counted
    /// from it (at the current width) when it is erased.
    shown: Shown,
}

/// The text printed into the live region since it was last cleared.
#[derive(Debug, Default)]
struct Shown {
    /// Lines printed with a newline after each.
    lines: Vec<String>,
    /// The input prompt the cursor waits after.
    prompt: Option<String>,
    /// Lines the user typed (and the terminal echoed) with no input asked for.
    echoes: Vec<String>,
}

impl Screen {
    /// A screen on stdout; `tty` enables cursor movement and styling.
    pub fn new(tty: bool) -> Screen {
        Screen {
            tty,
            size: if tty {
                TermSize::probe()
            } else {
                TermSize { cols: 80, rows: 24 }
            },
            shown: Shown::default(),
        }
    }

    /// Whether the live region is redrawn in place.
    pub fn is_tty(&self) -> bool {
        self.tty
    }

    /// Re-reads the terminal size (after SIGWINCH).
    pub fn resize(&mut self) {
        if self.tty {
            self.set_size(TermSize::probe());
        }
    }

    /// Takes `size` as the terminal's size. The live region's rows are counted
    /// at the new width from then on: terminals that reflow on resize (tmux,
    /// VTE, kitty, iTerm2, Windows Terminal, alacritty, ...) rewrap its lines,
    /// so the next redraw erases exactly the region, not the committed text
    /// above it or only part of the region.
    pub fn set_size(&mut self, size: TermSize) {
        self.size = size;
    }

    /// Rows between the top of the live region and the cursor, at the current width.
    fn shown_rows(&self) -> usize {
        let cols = self.cols();
        let lines: usize = self.shown.lines.iter().map(|l| rows_for(l, cols)).sum();
        let prompt = self
            .shown
            .prompt
            .as_ref()
            .map_or(0, |p| self.rows_of(display_width(p) + 1) - 1);
        let echoes: usize = self
            .shown
            .echoes
            .iter()
            .map(|t| self.rows_of(display_width(t)))
            .sum();
        lines + prompt + echoes
    }

    /// Rows a line of `width` columns occupies.
    fn rows_of(&self, width: usize) -> usize {
        width.div_ceil(self.size.cols.max(1)).max(1)
    }

    /// Erases the region row by row, bottom up, leaving the cursor at its
    /// top-left. Line erases rather than one erase-below: some terminals
    /// (tmux's `scroll-on-clear`) copy the whole screen into the scrollback
    /// when an erase-below starts at the top-left corner, which would leave
    /// every superseded draft in the history.
    fn clear_region(&mut self, buf: &mut String) {
        buf.push_str("\r\x1b[2K");
        for _ in 0..self.shown_rows() {
            buf.push_str("\x1b[1A\x1b[2K");
        }
        self.shown = Shown::default();
    }

    /// Prints a row into the live region (and remembers it as shown).
    fn push_live_row(&mut self, row: &Line, buf: &mut String) {
        self.push_row(row, buf);
        self.shown.lines.push(row.text.clone());
    }

    /// The rows `line` is printed as: word-wrapped at the terminal's width,
    /// or the line whole when the output is not a terminal.
    fn rows(&self, line: &Line) -> Vec<Line> {
        if !self.tty {
            return vec![line.clone()];
        }
        let hang = (!line.hang.is_empty()).then_some(line.hang.as_str());
        word_wrap(&line.text, self.cols(), hang)
            .into_iter()
            .map(|text| Line {
                text,
                style: line.style,
                hang: String::new(),
            })
            .collect()
    }

    fn push_line(&self, line: &Line, buf: &mut String) {
        for row in self.rows(line) {
            self.push_row(&row, buf);
        }
    }

    fn push_row(&self, row: &Line, buf: &mut String) {
        if self.tty {
            match row.style.sgr() {
                None => buf.push_str(&row.text),
                Some(sgr) => {
                    let _ = write!(buf, "\x1b[{sgr}m{}\x1b[0m", row.text);
                }
            }
        } else {
            buf.push_str(&row.text);
        }
        buf.push('\n');
    }

    /// Rows the live region may use for lines when `input_prompt` follows
    /// them: the region must fit on the screen, with one row to spare, or
    /// the cursor could not get back to its top.
    pub fn line_budget(&self, input_prompt: Option<&str>) -> usize {
        let prompt_rows = input_prompt.map_or(0, |p| self.rows_of(display_width(p) + 1));
        self.size.rows.saturating_sub(1 + prompt_rows).max(1)
    }

    /// Terminal columns.
    pub fn cols(&self) -> usize {
        self.size.cols.max(1)
    }

    /// Rows `line` occupies.
    pub fn line_rows(&self, line: &Line) -> usize {
        self.rows(line).len()
    }

    /// Replaces the live region with `lines` followed by `input_prompt` (no
    /// newline: the cursor waits after it). Only on a terminal. When the
    /// lines do not fit, their last rows are shown under a one-row note.
    /// `typed` (the line being edited, when this program draws it) follows
    /// the prompt, unstyled; the cursor waits after it.
    pub fn draw_live(
        &mut self,
        lines: &[Line],
        input_prompt: Option<&str>,
        typed: &str,
    ) -> std::io::Result<()> {
        if !self.tty {
            return Ok(());
        }
        let mut buf = self.live_bytes(lines, input_prompt);
        if input_prompt.is_some() && !typed.is_empty() {
            let typed = super::render::sanitize(typed);
            buf.push_str(&typed);
            if let Some(prompt) = &mut self.shown.prompt {
                prompt.push_str(&typed);
            }
        }
        write_out(&buf)
    }

    /// Enter was pressed on a line this program draws (no terminal echo):
    /// the cursor goes to the next row and the region as shown becomes
    /// scrollback.
    pub fn end_typed_line(&mut self) -> std::io::Result<()> {
        self.shown = Shown::default();
        if self.tty { write_out("\r\n") } else { Ok(()) }
    }

    /// What [`Self::draw_live`] writes: the erase of the old region, then the new one.
    fn live_bytes(&mut self, lines: &[Line], input_prompt: Option<&str>) -> String {
        let mut buf = String::new();
        self.clear_region(&mut buf);
        let budget = self.line_budget(input_prompt);
        let rows: Vec<Line> = lines.iter().flat_map(|l| self.rows(l)).collect();
        let mut start = 0;
        if rows.len() > budget {
            let note = Line::new(
                "... (the rest is above; all of it shows when the turn ends)",
                Style::Dim,
            );
            // The note wraps on a narrow terminal: what is left beside it, at this width.
            let note = self.rows(&note);
            start = rows.len() - budget.saturating_sub(note.len());
            for row in &note {
                self.push_live_row(row, &mut buf);
            }
        }
        for row in &rows[start..] {
            self.push_live_row(row, &mut buf);
        }
        if let Some(prompt) = input_prompt {
            let _ = write!(buf, "\x1b[1m{prompt}\x1b[0m");
            self.shown.prompt = Some(prompt.to_owned());
        }
        buf
    }

    /// Prints `lines` for good: on a terminal it replaces the live region
    /// (which is then empty); otherwise it is appended.
    pub fn commit(&mut self, lines: &[Line]) -> std::io::Result<()> {
        let mut buf = String::new();
        if self.tty {
            self.clear_region(&mut buf);
        }
        for line in lines {
            self.push_line(line, &mut buf);
        }
        write_out(&buf)
    }

    /// The user pressed Enter after typing `typed` behind `prompt`: the
    /// terminal echoed it, so the region as shown becomes scrollback.
    pub fn accept_echo(&mut self) {
        self.shown = Shown::default();
    }

    /// The user typed `typed` + Enter while no input was asked for: the echo
    /// moved the cursor down; count those rows so the next redraw starts at
    /// the top of the region again.
    pub fn note_stray_echo(&mut self, typed: &str) {
        if self.tty {
            self.shown.echoes.push(typed.to_owned());
        }
    }

    /// Clears the live region (before writing to stderr, say).
    pub fn clear_live(&mut self) -> std::io::Result<()> {
        if !self.tty {
            return Ok(());
        }
        let mut buf = String::new();
        self.clear_region(&mut buf);
        write_out(&buf)
    }
}

fn write_out(buf: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(buf.as_bytes())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(cols: usize, rows: usize) -> Screen {
        Screen {
            tty: true,
            size: TermSize { cols, rows },
            shown: Shown::default(),
        }
    }

    fn erased_rows(bytes: &str) -> usize {
        bytes.matches("\x1b[1A").count()
    }

    #[test]
    fn a_redraw_erases_the_rows_the_region_took_at_the_width_it_was_drawn() {
        let mut s = screen(20, 24);
        let lines = [
            Line::new(&"x".repeat(45), Style::Plain),
            Line::new("short", Style::Dim),
        ];
        s.live_bytes(&lines, Some(">"));
        // 45 columns at 20: 3 rows, then 1; the cursor waits on the prompt's row below them.
        assert_eq!(s.shown_rows(), 4);
        assert_eq!(erased_rows(&s.live_bytes(&[], None)), 4);
    }

    #[test]
    fn after_a_width_change_the_region_is_counted_as_the_terminal_rewraps_it() {
        let mut s = screen(20, 24);
        let lines = [
            Line::new(&"y".repeat(45), Style::Plain),
            Line::new(&"z".repeat(10), Style::Plain),
        ];
        s.live_bytes(&lines, Some(">"));
        assert_eq!(s.shown_rows(), 4);
        // Narrower: 45 -> 5 rows, 10 -> 1 row at 10 columns.
        s.set_size(TermSize { cols: 10, rows: 24 });
        assert_eq!(s.shown_rows(), 6);
        // Wider: the rows this program broke stay rows (20, 20, 5 and 10 columns).
        s.set_size(TermSize {
            cols: 100,
            rows: 24,
        });
        assert_eq!(s.shown_rows(), 4);
        assert_eq!(erased_rows(&s.live_bytes(&[], None)), 4);
        // A height change alone keeps the count.
        s.live_bytes(&lines, None);
        let before = s.shown_rows();
        s.set_size(TermSize {
            cols: 100,
            rows: 10,
        });
        assert_eq!(s.shown_rows(), before);
    }

    #[test]
    fn lines_are_word_wrapped_at_the_width_and_counted_by_their_rows() {
        let mut s = screen(24, 24);
        let lines = [
            Line::new("the reply breaks between words here", Style::Plain),
            Line::hanging("thought | a thought long enough", Style::Dim, "thought | "),
        ];
        s.live_bytes(&lines, None);
        assert_eq!(
            s.shown.lines,
            [
                "the reply breaks between",
                "words here",
                "thought | a thought long",
                "thought | enough"
            ]
        );
        assert_eq!(erased_rows(&s.live_bytes(&[], None)), 4);
        // Without a terminal, lines are written whole.
        let mut piped = screen(24, 24);
        piped.tty = false;
        assert_eq!(piped.line_rows(&lines[0]), 1);
        let mut buf = String::new();
        piped.push_line(&lines[0], &mut buf);
        assert_eq!(buf, "the reply breaks between words here\n");
    }

    #[test]
    fn the_overflow_note_leaves_room_for_its_own_rows_and_echoes_are_counted_at_any_width() {
        let mut s = screen(30, 6);
        let lines: Vec<Line> = (0..20)
            .map(|i| Line::new(&format!("line {i}"), Style::Plain))
            .collect();
        // Too tall: a note (two rows at 30 columns) and the last lines.
        s.live_bytes(&lines, None);
        assert!(s.shown.lines[0].starts_with("..."));
        // The region fits the budget (5 rows of 6): the note (60 columns, broken between words
        // into two rows of 30 and 28) and the last three lines.
        assert_eq!(s.shown_rows(), 5);
        assert_eq!(s.shown.lines.last().unwrap(), "line 19");
        assert_eq!(s.shown.lines.len(), 5);
        s.note_stray_echo(&"t".repeat(35));
        assert_eq!(s.shown_rows(), 7);
        // At 12 columns: the note's rows 3 each, the lines 1 each, the echo 3.
        s.set_size(TermSize { cols: 12, rows: 6 });
        assert_eq!(erased_rows(&s.live_bytes(&[], None)), 12);
        s.note_stray_echo("x");
        s.accept_echo();
        assert_eq!(s.shown_rows(), 0);
    }
}
