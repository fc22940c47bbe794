//! The chat view: a copy of the transcript kept up to date from the engine's
//! render ops, split into committed entries (scrollback) and live ones (the
//! region redrawn in place). It holds no protocol logic: what changed, and
//! how, is whatever the engine's ops say.

use std::collections::HashMap;

use serde_json::Value;
use spindle_engine::{EntryView, RenderOp, SessionState, text::utf16_to_byte_offset};

use super::outcome::AgentErrorText;
use super::printed::{Printed, draw_parts};
use super::render::{Line, RenderOptions, Style, entry_parts};
use super::screen::Screen;

/// What the bottom of the live region shows.
#[derive(Debug, Clone, Default)]
pub enum Footer {
    /// Nothing.
    #[default]
    None,
    /// A status line (turn running).
    Status,
    /// Waiting for a line of input: question lines, then the prompt.
    Input {
        /// Lines above the prompt.
        question: Vec<Line>,
        /// The prompt the cursor waits after.
        prompt: String,
    },
}

/// The prompt before a line typed while a turn runs.
const TYPE_AHEAD_PROMPT: &str = "> ";

/// Transcript copy, live set and screen.
#[derive(Debug)]
pub struct View {
    entries: Vec<EntryView>,
    index: HashMap<String, usize>,
    /// Entries shown in the live region, in timeline order.
    live: Vec<usize>,
    /// What of each entry the scrollback holds: an entry updated after it
    /// was printed draws only what changed.
    printed: HashMap<usize, Printed>,
    options: RenderOptions,
    screen: Screen,
    state: SessionState,
    usage: Option<Value>,
    footer: Footer,
    dirty: bool,
    /// Notices and diagnostics waiting to be printed above the live region.
    pending_notes: Vec<Line>,
    /// The line being typed and the hints under it, when this program
    /// draws the input line itself (raw terminal input).
    edit: Option<EditLine>,
}

/// The line being typed, drawn at the bottom of the live region.
#[derive(Debug, Clone, Default)]
pub struct EditLine {
    /// What was typed.
    pub text: String,
    /// Hints shown above the input line (completions, the command's hint).
    pub hints: Vec<String>,
}

impl View {
    /// An empty view on `screen`.
    pub fn new(screen: Screen, options: RenderOptions) -> View {
        View {
            entries: Vec::new(),
            index: HashMap::new(),
            live: Vec::new(),
            printed: HashMap::new(),
            options,
            screen,
            state: SessionState::default(),
            usage: None,
            footer: Footer::None,
            dirty: false,
            pending_notes: Vec::new(),
            edit: None,
        }
    }

    /// Changes what is shown besides the reply (from the next redraw on).
    pub fn set_options(&mut self, options: RenderOptions) {
        self.options = options;
        self.dirty = true;
    }

    /// Draws the input line from `edit` (raw terminal input); `None` when
    /// the terminal echoes what is typed.
    pub fn set_edit(&mut self, edit: Option<EditLine>) {
        self.edit = edit;
        self.dirty = true;
    }

    /// Whether stdout is a terminal (the live region is redrawn in place).
    pub fn is_terminal(&self) -> bool {
        self.screen.is_tty()
    }

    /// Something changed since the last redraw.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// The terminal was resized.
    pub fn resize(&mut self) {
        self.screen.resize();
        self.dirty = true;
    }

    fn touch(&mut self, index: usize) {
        if let Err(at) = self.live.binary_search(&index) {
            self.live.insert(at, index);
        }
        self.dirty = true;
    }

    /// Applies the engine's ops to the copy.
    pub fn apply(&mut self, ops: Vec<RenderOp>) {
        for op in ops {
            match op {
                RenderOp::InsertEntry { entry, .. } => {
                    let index = self.entries.len();
                    self.index.insert(entry.id.clone(), index);
                    self.entries.push(entry);
                    self.touch(index);
                }
                RenderOp::UpdateEntry { id, entry } => {
                    if let Some(&index) = self.index.get(&id) {
                        if let Some(printed) = self.printed.get_mut(&index) {
                            printed.text_replaced(&self.entries[index].text, &entry.text);
                        }
                        self.entries[index] = entry;
                        self.touch(index);
                    }
                }
                RenderOp::TruncateText { id, len } => {
                    if let Some(&index) = self.index.get(&id) {
                        let text = &mut self.entries[index].text;
                        let cut = utf16_to_byte_offset(text, len).unwrap_or(text.len());
                        text.truncate(cut);
                        if let Some(printed) = self.printed.get_mut(&index) {
                            printed.text_cut(cut);
                        }
                        self.touch(index);
                    }
                }
                RenderOp::AppendText { id, text } => {
                    if let Some(&index) = self.index.get(&id) {
                        self.entries[index].text.push_str(&text);
                        self.touch(index);
                    }
                }
                RenderOp::SetState { state } => {
                    self.state = state;
                    self.dirty = true;
                }
                RenderOp::SetUsage { usage } => {
                    self.usage = Some(usage);
                    self.dirty = true;
                }
                RenderOp::Notice {
                    severity,
                    title,
                    description,
                } => {
                    let mut text = format!("[{severity}] {title}");
                    if let Some(d) = description {
                        text.push_str(&format!(": {d}"));
                    }
                    self.note(&text);
                }
                RenderOp::SetCommands { .. } | RenderOp::SetSessionInfo { .. } => {}
            }
        }
    }

    /// A dimmed note printed above the live region (diagnostics, notices).
    pub fn note(&mut self, text: &str) {
        self.pending_notes.push(Line::new(text, Style::Dim));
        self.dirty = true;
    }

    /// An agent's error above the live region: its sentence, then its code
    /// and data on a dimmed line.
    pub fn error(&mut self, error: &AgentErrorText) {
        self.pending_notes
            .push(Line::new(&error.sentence, Style::Error));
        if let Some(detail) = &error.detail {
            self.pending_notes
                .push(Line::new(&format!("  {detail}"), Style::Dim));
        }
        self.dirty = true;
    }

    /// Sets what the bottom of the live region shows.
    pub fn set_footer(&mut self, footer: Footer) {
        self.footer = footer;
        self.dirty = true;
    }

    /// `used/size` of the context window, when the agent reported it.
    pub fn usage_text(&self) -> Option<String> {
        crate::render::usage_text(self.usage.as_ref()?)
    }

    fn status_line(&self) -> Line {
        let mut parts = vec![self.state.status.clone()];
        if self.state.cancel_requested {
            parts.push("cancelling".into());
        }
        if let Some(usage) = self.usage_text() {
            parts.push(usage);
        }
        parts.push("Ctrl-C cancels".into());
        Line::new(&format!("[{}]", parts.join(" | ")), Style::Dim)
    }

    /// Appends what entry `index` draws now: all of it, or what changed
    /// since it was printed; its text from `text_from` at the earliest.
    fn entry_lines(&self, index: usize, text_from: usize, out: &mut Vec<Line>) {
        let printed = self.printed.get(&index);
        let from = printed.map_or(0, Printed::text_from).max(text_from);
        let parts = entry_parts(&self.entries[index], self.options, from);
        draw_parts(&parts, printed, out);
    }

    fn live_lines(&self) -> Vec<Line> {
        let mut lines = Vec::new();
        for &index in &self.live {
            self.entry_lines(index, 0, &mut lines);
        }
        lines
    }

    /// The live entries are in the scrollback now, as they stand.
    fn mark_live_printed(&mut self) {
        for index in std::mem::take(&mut self.live) {
            let entry = &self.entries[index];
            let parts = entry_parts(entry, self.options, entry.text.len());
            self.printed
                .insert(index, Printed::of(entry.text.len(), &parts));
        }
    }

    fn flush_notes(&mut self) -> std::io::Result<()> {
        if !self.pending_notes.is_empty() {
            let notes = std::mem::take(&mut self.pending_notes);
            self.screen.commit(&notes)?;
        }
        Ok(())
    }

    /// Redraws the live region (terminal only; elsewhere only notes print).
    pub fn redraw(&mut self) -> std::io::Result<()> {
        self.dirty = false;
        if !self.screen.is_tty() {
            // Without a terminal the turn is printed when it ends; notes
            // wait for it, so they follow the text they came with.
            if self.live.is_empty() {
                self.flush_notes()?;
            }
            return Ok(());
        }
        self.flush_notes()?;
        let (mut footer, mut prompt) = match &self.footer {
            Footer::None => (Vec::new(), None),
            Footer::Status => (vec![self.status_line()], None),
            Footer::Input { question, prompt } => (question.clone(), Some(prompt.clone())),
        };
        let mut typed = "";
        if let Some(edit) = &self.edit {
            // While a turn runs, a line typed ahead shows under the status.
            if prompt.is_some() || !edit.text.is_empty() || !edit.hints.is_empty() {
                footer.extend(edit.hints.iter().map(|h| Line::new(h, Style::Dim)));
                prompt.get_or_insert_with(|| TYPE_AHEAD_PROMPT.to_owned());
                typed = &edit.text;
            }
        }
        let whole_input = prompt.as_ref().map(|p| format!("{p}{typed}"));
        let budget = self.screen.line_budget(whole_input.as_deref());
        let mut lines = self.visible_tail(budget);
        lines.extend(footer);
        self.screen.draw_live(&lines, prompt.as_deref(), typed)
    }

    /// The lines of the live entries, newest last, from the end back to at
    /// least `budget` rows: a long turn costs a screenful per redraw, not
    /// its whole text.
    fn visible_tail(&self, budget: usize) -> Vec<Line> {
        // Enough text to fill the screen however it wraps.
        let text_limit = budget.saturating_mul(self.screen.cols()).saturating_mul(4) + 256;
        let mut blocks = Vec::new();
        let mut rows = 0;
        for &index in self.live.iter().rev() {
            let entry = &self.entries[index];
            let mut lines = Vec::new();
            let mut cut = entry.text.len().saturating_sub(text_limit);
            while !entry.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.entry_lines(index, cut, &mut lines);
            rows += lines
                .iter()
                .map(|l| self.screen.line_rows(l))
                .sum::<usize>();
            blocks.push(lines);
            if rows > budget {
                break;
            }
        }
        blocks.into_iter().rev().flatten().collect()
    }

    /// Prints the live entries in full as scrollback and empties the live
    /// region; `footer_note` (e.g. the stop reason) follows them, dimmed.
    pub fn commit(&mut self, footer_note: Option<&str>) -> std::io::Result<()> {
        if self.screen.is_tty() {
            self.flush_notes()?;
        }
        let mut lines = self.live_lines();
        lines.append(&mut self.pending_notes);
        if let Some(note) = footer_note {
            lines.push(Line::new(note, Style::Dim));
        }
        self.mark_live_printed();
        self.screen.commit(&lines)?;
        self.dirty = true;
        Ok(())
    }

    /// The user answered the input footer: what is on screen stays as it is.
    pub fn accept_input(&mut self) -> std::io::Result<()> {
        if self.screen.is_tty() {
            if self.edit.is_some() {
                // The line was drawn here, not echoed: draw it whole (the
                // last keys may not have been redrawn yet), then move on.
                if let Some(edit) = &mut self.edit {
                    edit.hints.clear();
                }
                self.redraw()?;
                self.screen.end_typed_line()?;
            } else {
                self.screen.accept_echo();
            }
            // What the region showed stays on the screen as scrollback.
            self.mark_live_printed();
        }
        self.footer = Footer::None;
        self.dirty = true;
        Ok(())
    }

    /// The user typed a line nobody asked for (it is queued as a prompt).
    pub fn stray_input(&mut self, typed: &str) {
        if self.edit.is_some() {
            return;
        }
        self.screen.note_stray_echo(typed);
        self.dirty = true;
    }

    /// Clears the live region so something else can write to the terminal;
    /// the next redraw brings it back.
    pub fn clear_live(&mut self) -> std::io::Result<()> {
        self.dirty = true;
        self.screen.clear_live()
    }
}
