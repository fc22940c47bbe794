//! What the full-screen chat shows and how keys change it: the transcript
//! (a copy kept from the engine's render ops, with notes and turn ends
//! between entries), the composer, the open menu, scrolling and the status.
//! No terminal here: `draw` renders this state, `event` turns keys into
//! [`Action`]s the chat's driver carries out.

use std::collections::HashMap;
use std::time::Instant;

use ratatui::crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind,
};
use serde_json::Value;
use spindle_engine::{EntryKind, EntryView, RenderOp, text::utf16_to_byte_offset};

use super::composer::Composer;
use crate::render::Line;

/// What the driver should do after an input event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Nothing beyond redrawing.
    None,
    /// The composer changed: hints for what is typed may change.
    Edited,
    /// Tab: complete the composer's text.
    Complete,
    /// A line for the chat (a prompt, a command or a picked `/mode ID`).
    Submit(String),
    /// The answer to the question shown (`1`.. for a permission, `y`/`n`
    /// for a write).
    Answer(String),
    /// Cancel the running turn.
    Cancel,
    /// Leave the chat.
    Quit,
}

/// A menu over the composer: a question of the agent or a picker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Menu {
    /// What it is about (a request id, `mode`, `model`): the selection is
    /// kept while the same menu stays open.
    pub key: String,
    /// The question.
    pub title: String,
    /// Lines shown above the choices (a write's diff).
    pub detail: Vec<Line>,
    /// The choices: what is shown and what choosing it does.
    pub choices: Vec<Choice>,
    /// The highlighted choice.
    pub selected: usize,
    /// Whether Esc closes it (pickers: yes; the agent's questions: no).
    pub dismissable: bool,
    /// Whether the answer may be typed in the composer (an elicitation's text field): keys other
    /// than ↑/↓ edit the composer, and Enter sends what it holds (or, empty, picks the choice).
    pub typed: bool,
}

/// One line of a menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    /// What the line says.
    pub label: String,
    /// What choosing it sends.
    pub action: Action,
}

/// How a turn ended, as the transcript shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TurnEnd {
    /// `done`, `cancelled`, `refused ...`, `error: ...`.
    pub sentence: String,
    /// A second line (an error's code and data).
    pub detail: Option<String>,
    /// Whether it ended well.
    pub ok: bool,
}

/// One block of the transcript.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    /// An engine entry (index into the entries).
    Entry(usize),
    /// A note of the chat (diagnostics, answers to own commands).
    Note(String),
    /// The end of a turn.
    TurnEnd(TurnEnd),
}

/// An item's rows as last laid out, and for what.
#[derive(Debug, Clone)]
pub(crate) struct CachedRows {
    pub width: usize,
    pub expanded: bool,
    pub separator: bool,
    pub rows: Vec<ratatui::text::Line<'static>>,
    /// The tool call or thought a click on these rows opens or closes.
    pub owner: Option<usize>,
}

/// The status line's facts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Status {
    pub agent: String,
    pub folder: String,
    pub mode: Option<String>,
    pub model: Option<String>,
}

/// Everything the full-screen chat shows.
#[derive(Debug, Default)]
pub(crate) struct TuiState {
    /// The first screen's lines (agent, folder, mode, model, keys).
    pub header: Vec<String>,
    pub entries: Vec<EntryView>,
    pub index: HashMap<String, usize>,
    pub items: Vec<Item>,
    /// The item of each entry (entries are appended with their item).
    pub entry_items: Vec<usize>,
    /// Laid-out rows per item; dropped when the item's entry changes.
    pub row_cache: HashMap<usize, CachedRows>,
    /// Tool calls and thoughts opened or closed by hand (entry id).
    pub toggled: HashMap<String, bool>,
    /// Ctrl-O: every tool call and thought open.
    pub expand_all: bool,
    pub show_thoughts: bool,
    /// First transcript row shown; `None` follows the bottom.
    pub scroll_top: Option<usize>,
    pub composer: Composer,
    /// Lines above the composer (completions, the command's hint).
    pub hints: Vec<String>,
    /// The lines queued while a turn runs, first to be sent first (shown above the hints).
    pub queued: Vec<String>,
    /// A prompt sent while a turn runs goes to the agent at once (protocol 2),
    /// instead of waiting for the turn's end.
    pub prompts_go_at_once: bool,
    /// Attached as an observer: the session's controllers prompt, not this chat.
    pub observer: bool,
    /// The agent's question (from the driver) or a picker (opened here).
    pub question: Option<Menu>,
    pub picker: Option<Menu>,
    /// When the running turn started.
    pub running_since: Option<Instant>,
    pub cancelling: bool,
    /// Ctrl-C on an idle chat: the next Ctrl-C or `y` quits.
    pub confirm_quit: bool,
    pub status: Status,
    pub usage: Option<Value>,
    /// Set by `draw`: the transcript's height and total rows, and the entry
    /// shown on each screen row (for clicks).
    pub page_rows: usize,
    pub total_rows: usize,
    pub row_entries: Vec<(u16, usize)>,
    pub dirty: bool,
}

impl TuiState {
    /// Applies the engine's ops to the transcript copy.
    pub(crate) fn apply(&mut self, ops: Vec<RenderOp>) {
        for op in ops {
            match op {
                RenderOp::InsertEntry { entry, .. } => {
                    let index = self.entries.len();
                    self.index.insert(entry.id.clone(), index);
                    self.entries.push(entry);
                    self.entry_items.push(self.items.len());
                    self.items.push(Item::Entry(index));
                }
                RenderOp::UpdateEntry { id, entry } => {
                    if let Some(&index) = self.index.get(&id) {
                        self.entries[index] = entry;
                        self.row_cache.remove(&self.entry_items[index]);
                    }
                }
                RenderOp::TruncateText { id, len } => {
                    if let Some(&index) = self.index.get(&id) {
                        let text = &mut self.entries[index].text;
                        let cut = utf16_to_byte_offset(text, len).unwrap_or(text.len());
                        text.truncate(cut);
                        self.row_cache.remove(&self.entry_items[index]);
                    }
                }
                RenderOp::AppendText { id, text } => {
                    if let Some(&index) = self.index.get(&id) {
                        self.entries[index].text.push_str(&text);
                        self.row_cache.remove(&self.entry_items[index]);
                    }
                }
                RenderOp::SetUsage { usage } => self.usage = Some(usage),
                RenderOp::Notice {
                    severity,
                    title,
                    description,
                } => {
                    let mut text = format!("{severity}: {title}");
                    if let Some(d) = description {
                        text.push_str(&format!(": {d}"));
                    }
                    self.note(&text);
                }
                RenderOp::SetState { .. }
                | RenderOp::SetCommands { .. }
                | RenderOp::SetSessionInfo { .. } => {}
            }
        }
        self.dirty = true;
    }

    pub(crate) fn note(&mut self, text: &str) {
        self.items.push(Item::Note(text.to_owned()));
        self.dirty = true;
    }

    pub(crate) fn turn_end(&mut self, end: TurnEnd) {
        self.items.push(Item::TurnEnd(end));
        self.dirty = true;
    }

    /// `used/size` of the context window, when the agent reported it.
    pub(crate) fn usage_text(&self) -> Option<String> {
        crate::render::usage_text(self.usage.as_ref()?)
    }

    /// Whether a tool call or thought shows its body.
    pub(crate) fn is_expanded(&self, entry: &EntryView) -> bool {
        if let Some(&open) = self.toggled.get(&entry.id) {
            return open;
        }
        if self.expand_all {
            return true;
        }
        // Diffs show in place, and so does a call waiting for permission.
        entry.kind == EntryKind::ToolCall
            && (entry
                .fields
                .get("diffs")
                .and_then(Value::as_array)
                .is_some_and(|d| !d.is_empty())
                || entry
                    .fields
                    .get("permission")
                    .is_some_and(|p| p.get("outcome").is_none_or(Value::is_null)))
    }

    /// What the driver knows: whether a turn runs (and is being
    /// cancelled) and the question waiting for the user.
    pub(crate) fn set_phase(&mut self, running: bool, cancelling: bool, question: Option<Menu>) {
        match (running, self.running_since) {
            (true, None) => self.running_since = Some(Instant::now()),
            (false, Some(_)) => self.running_since = None,
            _ => {}
        }
        self.cancelling = running && cancelling;
        let selected = match (&self.question, &question) {
            (Some(old), Some(new)) if old.key == new.key => old.selected,
            // A new question: back to the bottom, where what it asks about is.
            (_, Some(_)) => {
                self.scroll_top = None;
                0
            }
            _ => 0,
        };
        self.question = question.map(|mut q| {
            q.selected = selected.min(q.choices.len().saturating_sub(1));
            q
        });
        if self.question.is_some() {
            self.confirm_quit = false;
        }
        self.dirty = true;
    }

    /// Opens a picker (`/mode`, `/model` without an argument).
    pub(crate) fn open_picker(&mut self, picker: Menu) {
        self.picker = Some(picker);
        self.dirty = true;
    }

    /// The menu keys go to: the agent's question first.
    fn menu_mut(&mut self) -> Option<&mut Menu> {
        match self.question {
            Some(ref mut q) => Some(q),
            None => self.picker.as_mut(),
        }
    }

    /// One terminal event.
    pub(crate) fn event(&mut self, event: Event) -> Action {
        self.dirty = true;
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.key(key),
            Event::Mouse(mouse) => {
                self.mouse(mouse);
                Action::None
            }
            Event::Paste(text) => {
                self.confirm_quit = false;
                self.composer.insert(&text);
                Action::Edited
            }
            _ => Action::None,
        }
    }

    fn key(&mut self, key: KeyEvent) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        if self.confirm_quit {
            self.confirm_quit = false;
            if matches!(key.code, KeyCode::Char('y' | 'Y')) {
                return Action::Quit;
            }
            return Action::None;
        }
        if let Some(action) = self.scroll_key(key) {
            return action;
        }
        if ctrl && key.code == KeyCode::Char('o') {
            self.expand_all = !self.expand_all;
            self.toggled.clear();
            return Action::None;
        }
        if let Some(menu) = self.menu_mut() {
            if !menu.typed {
                return self.menu_key(key);
            }
            let plain_enter = key.code == KeyCode::Enter
                && !key
                    .modifiers
                    .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
            return match key.code {
                KeyCode::Up | KeyCode::Down => self.menu_key(key),
                _ if plain_enter && self.composer.text().trim().is_empty() => self.menu_key(key),
                _ if plain_enter => {
                    let typed = self.composer.text().to_owned();
                    self.composer.set_text(String::new());
                    Action::Answer(typed)
                }
                _ => self.composer_key(key),
            };
        }
        if key.code == KeyCode::Esc && self.running_since.is_some() {
            return Action::Cancel;
        }
        self.composer_key(key)
    }

    fn ctrl_c(&mut self) -> Action {
        if self.running_since.is_some() {
            return Action::Cancel;
        }
        if self.picker.take().is_some() {
            return Action::None;
        }
        if !self.composer.is_empty() {
            self.composer.set_text(String::new());
            self.hints.clear();
            return Action::Edited;
        }
        if self.confirm_quit {
            return Action::Quit;
        }
        self.confirm_quit = true;
        Action::None
    }

    fn scroll_key(&mut self, key: KeyEvent) -> Option<Action> {
        let page = self.page_rows.max(2) - 1;
        match key.code {
            KeyCode::PageUp => self.scroll_up(page),
            KeyCode::PageDown => self.scroll_down(page),
            KeyCode::End if key.modifiers.contains(KeyModifiers::CONTROL) => self.scroll_top = None,
            KeyCode::Home if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.scroll_top = Some(0)
            }
            _ => return None,
        }
        Some(Action::None)
    }

    fn bottom_top(&self) -> usize {
        self.total_rows.saturating_sub(self.page_rows)
    }

    pub(crate) fn scroll_up(&mut self, rows: usize) {
        let top = self.scroll_top.unwrap_or_else(|| self.bottom_top());
        self.scroll_top = Some(top.saturating_sub(rows));
    }

    pub(crate) fn scroll_down(&mut self, rows: usize) {
        if let Some(top) = self.scroll_top {
            let top = top + rows;
            self.scroll_top = (top < self.bottom_top()).then_some(top);
        }
    }

    fn mouse(&mut self, mouse: MouseEvent) {
        match mouse.kind {
            MouseEventKind::ScrollUp => self.scroll_up(3),
            MouseEventKind::ScrollDown => self.scroll_down(3),
            MouseEventKind::Down(_) => {
                let hit = self
                    .row_entries
                    .iter()
                    .find(|(row, _)| *row == mouse.row)
                    .map(|&(_, index)| index);
                if let Some(index) = hit {
                    let entry = &self.entries[index];
                    let open = !self.is_expanded(entry);
                    self.toggled.insert(entry.id.clone(), open);
                }
            }
            _ => {}
        }
    }

    fn menu_key(&mut self, key: KeyEvent) -> Action {
        let Some(menu) = self.menu_mut() else {
            return Action::None;
        };
        let count = menu.choices.len();
        let chosen = match key.code {
            KeyCode::Up => {
                menu.selected = (menu.selected + count - 1) % count.max(1);
                None
            }
            KeyCode::Down | KeyCode::Tab => {
                menu.selected = (menu.selected + 1) % count.max(1);
                None
            }
            KeyCode::Enter => Some(menu.selected),
            KeyCode::Char(c) if c.is_ascii_digit() => {
                let n = c.to_digit(10).unwrap_or(0) as usize;
                (1..=count).contains(&n).then(|| n - 1)
            }
            KeyCode::Esc if menu.dismissable => {
                self.picker = None;
                return Action::None;
            }
            _ => None,
        };
        let Some(chosen) = chosen else {
            return Action::None;
        };
        let action = menu.choices[chosen].action.clone();
        if self.question.is_none() {
            self.picker = None;
        }
        action
    }

    fn composer_key(&mut self, key: KeyEvent) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let c = &mut self.composer;
        match key.code {
            KeyCode::Enter if alt || shift => c.insert("\n"),
            KeyCode::Char('j') if ctrl => c.insert("\n"),
            KeyCode::Enter => {
                if c.text().trim().is_empty() {
                    return Action::None;
                }
                self.hints.clear();
                self.scroll_top = None;
                return Action::Submit(c.take());
            }
            KeyCode::Char('d') if ctrl => {
                if c.is_empty() {
                    return Action::Quit;
                }
                c.delete();
            }
            KeyCode::Char('u') if ctrl => c.erase_to_line_start(),
            KeyCode::Char('w') if ctrl => c.erase_word(),
            KeyCode::Char('a') if ctrl => c.home(),
            KeyCode::Char('e') if ctrl => c.end(),
            KeyCode::Char(ch) if !ctrl => c.insert(ch.encode_utf8(&mut [0; 4])),
            KeyCode::Backspace => c.backspace(),
            KeyCode::Delete => c.delete(),
            KeyCode::Left => c.left(),
            KeyCode::Right => c.right(),
            KeyCode::Home => c.home(),
            KeyCode::End => c.end(),
            KeyCode::Up => c.up(),
            KeyCode::Down => c.down(),
            KeyCode::Tab => return Action::Complete,
            KeyCode::Esc => {
                self.hints.clear();
                return Action::None;
            }
            _ => return Action::None,
        }
        Action::Edited
    }
}
