//! The terminal: committed scrollback above, one live region below that is
//! redrawn in place.
//!
//! Invariant: `cursor_rows` is the number of terminal rows between the top
//! of the live region and the cursor. Redrawing erases that many rows above
//! the cursor (and its own) and prints the region again,
//! so text that the agent cleared or replaced disappears instead of being
//! printed twice. The region is cut to its last rows when it would not fit
//! on the screen (the cursor cannot move into the scrollback); the full text
//! is printed when it is committed.

use std::fmt::Write as _;
use std::io::Write;

use super::render::{Line, Style, display_width, rows_for};

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
    cursor_rows: usize,
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
            cursor_rows: 0,
        }
    }

    /// Whether the live region is redrawn in place.
    pub fn is_tty(&self) -> bool {
        self.tty
    }

    /// Re-reads the terminal size (after SIGWINCH).
    pub fn resize(&mut self) {
        if self.tty {
            self.size = TermSize::probe();
        }
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
        for _ in 0..self.cursor_rows {
            buf.push_str("\x1b[1A\x1b[2K");
        }
        self.cursor_rows = 0;
    }

    fn push_line(&self, line: &Line, buf: &mut String) {
        if self.tty {
            match line.style {
                Style::Plain => buf.push_str(&line.text),
                Style::Dim => {
                    let _ = write!(buf, "\x1b[2m{}\x1b[0m", line.text);
                }
                Style::Bold => {
                    let _ = write!(buf, "\x1b[1m{}\x1b[0m", line.text);
                }
            }
        } else {
            buf.push_str(&line.text);
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
        rows_for(&line.text, self.cols())
    }

    /// Replaces the live region with `lines` followed by `input_prompt` (no
    /// newline: the cursor waits after it). Only on a terminal. When the
    /// lines do not fit, their last rows are shown under a one-row note.
    pub fn draw_live(&mut self, lines: &[Line], input_prompt: Option<&str>) -> std::io::Result<()> {
        if !self.tty {
            return Ok(());
        }
        let mut buf = String::new();
        self.clear_region(&mut buf);
        let budget = self.line_budget(input_prompt);
        let heights: Vec<usize> = lines.iter().map(|l| self.line_rows(l)).collect();
        let total: usize = heights.iter().sum();
        let mut rows = 0;
        let mut start = 0;
        if total > budget {
            let room = budget.saturating_sub(1);
            let mut used = 0;
            start = lines.len();
            while start > 0 && used + heights[start - 1] <= room {
                start -= 1;
                used += heights[start];
            }
            let note = Line::new(
                "... (the rest is above; all of it shows when the turn ends)",
                Style::Dim,
            );
            self.push_line(&note, &mut buf);
            rows += 1;
            if start > 0 && used < room {
                let partial = clip_to_last_rows(&lines[start - 1], room - used, self.cols());
                rows += self.line_rows(&partial);
                self.push_line(&partial, &mut buf);
            }
        }
        for line in &lines[start..] {
            rows += self.line_rows(line);
            self.push_line(line, &mut buf);
        }
        if let Some(prompt) = input_prompt {
            let _ = write!(buf, "\x1b[1m{prompt}\x1b[0m");
            rows += self.rows_of(display_width(prompt) + 1) - 1;
        }
        self.cursor_rows = rows;
        write_out(&buf)
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
        self.cursor_rows = 0;
    }

    /// The user typed `typed` + Enter while no input was asked for: the echo
    /// moved the cursor down; count those rows so the next redraw starts at
    /// the top of the region again.
    pub fn note_stray_echo(&mut self, typed: &str) {
        if self.tty {
            self.cursor_rows += self.rows_of(display_width(typed));
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

/// The end of `line` that fits in `rows` rows of `cols` columns.
fn clip_to_last_rows(line: &Line, rows: usize, cols: usize) -> Line {
    // One column of slack per row: a wide character that does not fit at
    // the end of a row wraps early.
    let limit = rows * cols.saturating_sub(1).max(1);
    let mut width = 0;
    let mut cut = line.text.len();
    for (i, c) in line.text.char_indices().rev() {
        width += display_width(c.encode_utf8(&mut [0; 4]));
        if width > limit {
            break;
        }
        cut = i;
    }
    Line {
        text: line.text[cut..].to_owned(),
        style: line.style,
    }
}

fn write_out(buf: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(buf.as_bytes())?;
    out.flush()
}
