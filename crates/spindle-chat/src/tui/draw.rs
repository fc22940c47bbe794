//! Draws a [`TuiState`] on a ratatui frame: the transcript (word-wrapped,
//! scrolled), the hints, the open menu, the composer and the status line.
//! Entries are drawn from the engine's entry views; tool call, plan and
//! terminal bodies reuse `render`'s lines.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line as Row, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use serde_json::Value;
use spindle_engine::{EntryKind, EntryView};

use super::state::{CachedRows, Item, Menu, TuiState};
use crate::render::{self, Line, RenderOptions, sanitize};
use crate::wrap::{char_width, display_width, word_wrap};

/// Spinner frames, one per 100 ms.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Composer rows shown at most (it scrolls beyond).
const COMPOSER_ROWS: usize = 8;
/// Hint rows shown at most.
const HINT_ROWS: usize = 8;
/// The most queued lines shown above the composer.
const QUEUE_ROWS: usize = 4;
/// The composer's prompt.
const PROMPT: &str = "› ";

fn style_of(style: render::Style) -> Style {
    match style {
        render::Style::Plain => Style::default(),
        render::Style::Dim => Style::default().fg(Color::DarkGray),
        render::Style::Bold => Style::default().add_modifier(Modifier::BOLD),
        render::Style::Added => Style::default().fg(Color::Green),
        render::Style::Removed => Style::default().fg(Color::Red),
        render::Style::Hunk => Style::default().fg(Color::Cyan),
        render::Style::Error => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
    }
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// Word-wraps one line of sanitised text to `width` columns: breaks at
/// spaces, a word longer than a row is split; continuation rows keep the
/// line's indentation.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    word_wrap(text, width, None)
}

/// Rows of `text` (several lines), wrapped, the first with `first` before
/// it and the rest with as many spaces.
fn push_text(rows: &mut Vec<Row<'static>>, first: &str, text: &str, style: Style, width: usize) {
    let pad = " ".repeat(display_width(first));
    let mut lead = first.to_owned();
    for line in text.lines() {
        for piece in wrap(&sanitize(line), width.saturating_sub(pad.len())) {
            rows.push(Row::from(vec![
                Span::styled(std::mem::replace(&mut lead, pad.clone()), style),
                Span::styled(piece, style),
            ]));
        }
    }
}

/// A reply, word-wrapped after `● `, with a little of its Markdown made
/// visible: fenced code in a colour of its own (the fences dimmed),
/// headings bold. The text itself is shown as sent.
fn push_reply(rows: &mut Vec<Row<'static>>, text: &str, width: usize) {
    let mut lead = "● ".to_owned();
    let mut in_code = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let style = if trimmed.starts_with("```") {
            in_code = !in_code;
            dim()
        } else if in_code {
            Style::default().fg(Color::Cyan)
        } else if trimmed.starts_with('#') {
            Style::default().add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        for piece in wrap(&sanitize(line), width.saturating_sub(2)) {
            rows.push(Row::from(vec![
                Span::raw(std::mem::replace(&mut lead, "  ".to_owned())),
                Span::styled(piece, style),
            ]));
        }
    }
}

fn push_lines(rows: &mut Vec<Row<'static>>, lines: &[Line], width: usize) {
    for line in lines {
        for piece in wrap(&line.text, width) {
            rows.push(Row::styled(piece, style_of(line.style)));
        }
    }
}

fn str_field<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a str> {
    v.and_then(|v| v.get(key)).and_then(Value::as_str)
}

/// The one-line form of a tool call: `▸ kind title · status`.
fn tool_header(entry: &EntryView, open: bool, width: usize) -> Row<'static> {
    let tool = entry.fields.get("toolCall");
    let title = sanitize(str_field(tool, "title").unwrap_or("tool call"));
    let kind = str_field(tool, "kind").unwrap_or("tool");
    let status = str_field(tool, "status").unwrap_or("pending");
    let waiting = entry
        .fields
        .get("permission")
        .is_some_and(|p| p.get("outcome").is_none_or(Value::is_null));
    let (status, colour) = match status {
        "completed" => ("done", Color::Green),
        "failed" => ("failed", Color::Red),
        "in_progress" => ("running", Color::Yellow),
        _ if waiting => ("waiting for permission", Color::Yellow),
        other => (other, Color::Yellow),
    };
    // The title gives way: kind and status stay on the line.
    let fixed = 2 + display_width(kind) + 1 + 3 + display_width(status);
    let title = truncate(&title, width.saturating_sub(fixed).max(8));
    Row::from(vec![
        Span::styled(if open { "▾ " } else { "▸ " }, dim()),
        Span::styled(format!("{kind} "), Style::default().fg(Color::Cyan)),
        Span::styled(title, Style::default().add_modifier(Modifier::BOLD)),
        Span::styled(" · ", dim()),
        Span::styled(status.to_owned(), Style::default().fg(colour)),
    ])
}

/// The rows of one entry.
fn entry_rows(state: &TuiState, entry: &EntryView, width: usize, rows: &mut Vec<Row<'static>>) {
    let options = RenderOptions {
        thoughts: true,
        user_messages: true,
    };
    match entry.kind {
        EntryKind::UserMessage => {
            let style = Style::default().add_modifier(Modifier::BOLD);
            push_text(rows, PROMPT, &entry.text, style, width);
        }
        EntryKind::AgentMessage => push_reply(rows, &entry.text, width),
        EntryKind::AgentThought => {
            let style = dim().add_modifier(Modifier::ITALIC);
            if state.is_expanded(entry) {
                rows.push(Row::styled("▾ thinking", style));
                push_text(rows, "  ", &entry.text, style, width);
            } else {
                let first = entry.text.lines().find(|l| !l.trim().is_empty());
                let more = entry.text.lines().count().saturating_sub(1);
                let mut line = format!("▸ thinking: {}", sanitize(first.unwrap_or("")));
                if more > 0 {
                    line.push_str(&format!(" (+{more} lines)"));
                }
                let cut: String = truncate(&line, width);
                rows.push(Row::styled(cut, style));
            }
        }
        EntryKind::ToolCall => {
            let open = state.is_expanded(entry);
            rows.push(tool_header(entry, open, width));
            if open {
                let mut lines = Vec::new();
                render::entry_lines(entry, options, &mut lines);
                push_lines(rows, lines.get(1..).unwrap_or_default(), width);
            }
        }
        // The menu asks; the tool call says it waits.
        EntryKind::Permission => {}
        _ => {
            let mut lines = Vec::new();
            render::entry_lines(entry, options, &mut lines);
            push_lines(rows, &lines, width);
        }
    }
}

/// `text` cut to `width` columns, with `…` when cut.
fn truncate(text: &str, width: usize) -> String {
    if display_width(text) <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Entries with nothing to show (empty text, hidden thoughts; permission
/// entries, which the menu and the tool call show; the engine's turn ends,
/// which the driver's own end line shows with the turn's duration).
fn is_hidden(state: &TuiState, entry: &EntryView) -> bool {
    (entry.kind == EntryKind::AgentThought && !state.show_thoughts)
        || matches!(entry.kind, EntryKind::Permission | EntryKind::TurnEnd)
        || (entry.text.is_empty()
            && matches!(
                entry.kind,
                EntryKind::AgentMessage | EntryKind::AgentThought | EntryKind::PlanText
            ))
}

/// The rows of one item (after a blank separator row when `separator`),
/// and the entry a click on them opens or closes.
fn item_rows(state: &TuiState, item: &Item, width: usize, separator: bool) -> CachedRows {
    let mut rows: Vec<Row<'static>> = Vec::new();
    if separator {
        rows.push(Row::default());
    }
    let mut owner = None;
    match item {
        Item::Entry(index) => {
            let entry = &state.entries[*index];
            if matches!(entry.kind, EntryKind::ToolCall | EntryKind::AgentThought) {
                owner = Some(*index);
            }
            entry_rows(state, entry, width, &mut rows);
        }
        Item::Note(text) => {
            let style = if text.starts_with("diagnostic") {
                Style::default().fg(Color::Yellow)
            } else {
                dim()
            };
            push_text(&mut rows, "· ", text, style, width);
        }
        Item::TurnEnd(end) => {
            let style = if end.ok {
                dim()
            } else {
                Style::default().fg(Color::Red)
            };
            push_text(&mut rows, "└ ", &end.sentence, style, width);
            if let Some(detail) = &end.detail {
                push_text(&mut rows, "  ", detail, dim(), width);
            }
        }
    }
    CachedRows {
        width,
        expanded: false,
        separator,
        rows,
        owner,
    }
}

/// Brings every item's cached rows up to date for `width`: only items
/// whose entry changed (the cache entry was dropped), or whose width or
/// open state differ, are laid out again.
fn refresh_rows(state: &mut TuiState, width: usize) {
    let mut previous_note = false;
    for i in 0..state.items.len() {
        let (hidden, expanded) = match &state.items[i] {
            Item::Entry(index) => {
                let entry = &state.entries[*index];
                (is_hidden(state, entry), state.is_expanded(entry))
            }
            _ => (false, false),
        };
        if hidden {
            state.row_cache.remove(&i);
            continue;
        }
        let is_note = matches!(state.items[i], Item::Note(_));
        let separator = !(is_note && previous_note);
        previous_note = is_note;
        let fresh = state.row_cache.get(&i).is_some_and(|c| {
            c.width == width && c.expanded == expanded && c.separator == separator
        });
        if !fresh {
            let mut cached = item_rows(state, &state.items[i], width, separator);
            cached.expanded = expanded;
            state.row_cache.insert(i, cached);
        }
    }
}

/// Draws the transcript rows `top..top + height` (of `total`) in `area`.
fn draw_transcript(state: &mut TuiState, frame: &mut Frame, area: Rect, width: usize) {
    refresh_rows(state, width);
    let header: Vec<Row<'static>> = state
        .header
        .iter()
        .enumerate()
        .flat_map(|(i, line)| {
            let style = if i == 0 {
                Style::default().add_modifier(Modifier::BOLD)
            } else {
                dim()
            };
            wrap(line, width)
                .into_iter()
                .map(move |piece| Row::styled(piece, style))
        })
        .collect();
    let blocks: Vec<&CachedRows> = (0..state.items.len())
        .filter_map(|i| state.row_cache.get(&i))
        .collect();
    let total = header.len() + blocks.iter().map(|b| b.rows.len()).sum::<usize>();
    let height = usize::from(area.height);
    let bottom = total.saturating_sub(height);
    let top = match state.scroll_top {
        Some(top) if top < bottom => Some(top),
        _ => None,
    };
    let first = top.unwrap_or(bottom);
    let mut shown = Vec::with_capacity(height);
    let mut owners = Vec::new();
    let all = header
        .iter()
        .map(|r| (r, None))
        .chain(blocks.iter().flat_map(|b| {
            b.rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r, b.owner.filter(|_| i > 0 || !b.separator)))
        }));
    for (row_number, (row, owner)) in all.skip(first).take(height).enumerate() {
        shown.push(row.clone());
        if let Some(index) = owner {
            owners.push((area.y + row_number as u16, index));
        }
    }
    frame.render_widget(Paragraph::new(shown), area);
    state.scroll_top = top;
    state.page_rows = height;
    state.total_rows = total;
    state.row_entries = owners;
}

/// The composer's rows (char-wrapped) and the cursor's row and column.
fn composer_rows(state: &TuiState, width: usize) -> (Vec<String>, (usize, usize)) {
    let text = state.composer.text();
    let cursor = state.composer.cursor();
    let inner = width.saturating_sub(PROMPT.chars().count()).max(1);
    let mut rows = vec![String::new()];
    let mut column = 0;
    let mut at = (0, 0);
    for (offset, c) in text.char_indices() {
        if offset == cursor {
            at = (rows.len() - 1, column);
        }
        if c == '\n' {
            rows.push(String::new());
            column = 0;
            continue;
        }
        let c = sanitize(c.encode_utf8(&mut [0; 4]));
        let w = display_width(&c);
        if column + w > inner {
            rows.push(String::new());
            column = 0;
        }
        if let Some(last) = rows.last_mut() {
            last.push_str(&c);
        }
        column += w;
    }
    if cursor >= text.len() {
        if column >= inner {
            rows.push(String::new());
            column = 0;
        }
        at = (rows.len() - 1, column);
    }
    (rows, at)
}

fn status_row(state: &TuiState, now: Instant, width: usize) -> Row<'static> {
    let mut spans = Vec::new();
    if let Some(since) = state.running_since {
        let elapsed = now.saturating_duration_since(since);
        let frame = SPINNER[(elapsed.as_millis() / 100) as usize % SPINNER.len()];
        let what = if state.cancelling {
            "cancelling"
        } else {
            "working"
        };
        spans.push(Span::styled(
            format!("{frame} {what} {}s", elapsed.as_secs()),
            Style::default().fg(Color::Yellow),
        ));
        spans.push(Span::styled(" · ", dim()));
    }
    let s = &state.status;
    // Most telling first: the folder, the longest, is what gets cut.
    let mut facts = Vec::new();
    if let Some(top) = state.scroll_top {
        let below = state.total_rows.saturating_sub(top + state.page_rows);
        facts.push(format!("{below} rows below (PgDn)"));
    }
    facts.push(s.agent.clone());
    if let Some(mode) = &s.mode {
        facts.push(format!("mode {mode}"));
    }
    if let Some(model) = &s.model {
        facts.push(format!("model {model}"));
    }
    if let Some(context) = state.usage_text() {
        facts.push(context);
    }
    facts.push(s.folder.clone());
    let used: usize = spans.iter().map(|s| display_width(&s.content)).sum();
    facts.retain(|f| !f.is_empty());
    let text = truncate(&facts.join(" · "), width.saturating_sub(used));
    spans.push(Span::styled(text, dim()));
    Row::from(spans)
}

fn menu_rows(menu: &Menu, width: usize, max_detail: usize) -> Vec<Row<'static>> {
    let mut rows = Vec::new();
    let mut detail = Vec::new();
    push_lines(&mut detail, &menu.detail, width);
    if detail.len() > max_detail {
        let skipped = detail.len() - max_detail;
        detail.truncate(max_detail);
        detail.push(Row::styled(format!("… {skipped} more lines"), dim()));
    }
    rows.extend(detail);
    for (i, choice) in menu.choices.iter().enumerate() {
        let label = truncate(&format!("{}. {}", i + 1, choice.label), width - 2);
        if i == menu.selected {
            rows.push(Row::styled(
                format!("› {label}"),
                Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD),
            ));
        } else {
            rows.push(Row::raw(format!("  {label}")));
        }
    }
    let close = if menu.dismissable {
        " · Esc closes"
    } else {
        ""
    };
    rows.push(Row::styled(
        format!("↑/↓ Enter · 1-{}{close}", menu.choices.len()),
        dim(),
    ));
    rows
}

/// Draws the whole screen.
pub(crate) fn draw(state: &mut TuiState, frame: &mut Frame, now: Instant) {
    let area = frame.area();
    let width = usize::from(area.width).max(8);
    let (composer, cursor) = composer_rows(state, width);
    let composer_height = composer.len().min(COMPOSER_ROWS);
    let menu = state.question.as_ref().or(state.picker.as_ref());
    let menu_rows = menu.map(|m| {
        let max_detail = usize::from(area.height / 2).saturating_sub(m.choices.len() + 4);
        menu_rows(m, width.saturating_sub(2), max_detail.max(3))
    });
    let menu_title = menu.map(|m| m.title.clone());
    let menu_height = menu_rows.as_ref().map_or(0, |r| r.len() + 2);
    let hints_height = state.hints.len().min(HINT_ROWS);
    let queue = queue_rows(&state.queued, width);
    let [
        transcript_area,
        queue_area,
        hints_area,
        menu_area,
        rule_area,
        composer_area,
        status_area,
    ] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(queue.len() as u16),
        Constraint::Length(hints_height as u16),
        Constraint::Length(menu_height as u16),
        Constraint::Length(1),
        Constraint::Length(composer_height as u16),
        Constraint::Length(1),
    ])
    .areas(area);

    // The transcript, scrolled.
    draw_transcript(state, frame, transcript_area, width);

    let hints: Vec<Row> = state
        .hints
        .iter()
        .take(HINT_ROWS)
        .map(|h| Row::styled(truncate(&sanitize(h), width), dim()))
        .collect();
    frame.render_widget(Paragraph::new(hints), hints_area);
    frame.render_widget(Paragraph::new(queue), queue_area);

    if let (Some(title), Some(rows)) = (menu_title, menu_rows) {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(Color::Cyan))
            .title(Span::styled(
                format!(" {} ", truncate(&title, width.saturating_sub(4))),
                Style::default().add_modifier(Modifier::BOLD),
            ));
        frame.render_widget(Paragraph::new(rows).block(block), menu_area);
    }

    frame.render_widget(
        Paragraph::new(Row::styled("─".repeat(width), dim())),
        rule_area,
    );
    draw_composer(state, frame, composer_area, &composer, cursor);
    frame.render_widget(Paragraph::new(status_row(state, now, width)), status_area);
}

/// The queued lines above the composer: the first [`QUEUE_ROWS`], then how many more.
fn queue_rows(queued: &[String], width: usize) -> Vec<Row<'static>> {
    let mut rows: Vec<Row> = queued
        .iter()
        .take(QUEUE_ROWS)
        .enumerate()
        .map(|(i, line)| {
            let line = sanitize(line).replace('\n', " ");
            Row::styled(truncate(&format!("queued {}: {line}", i + 1), width), dim())
        })
        .collect();
    if queued.len() > QUEUE_ROWS {
        let more = format!("… {} more (/queue lists them)", queued.len() - QUEUE_ROWS);
        rows.push(Row::styled(truncate(&more, width), dim()));
    }
    rows
}

fn draw_composer(
    state: &TuiState,
    frame: &mut Frame,
    area: Rect,
    rows: &[String],
    cursor: (usize, usize),
) {
    if state.confirm_quit {
        frame.render_widget(
            Paragraph::new(Row::styled(
                "Quit the chat? y or Ctrl-C again quits; any other key stays",
                Style::default().fg(Color::Yellow),
            )),
            area,
        );
        return;
    }
    let height = usize::from(area.height).max(1);
    let first = (cursor.0 + 1).saturating_sub(height);
    let mut shown: Vec<Row> = Vec::new();
    for (i, row) in rows.iter().enumerate().skip(first).take(height) {
        let lead = if i == 0 { PROMPT } else { "  " };
        shown.push(Row::from(vec![
            Span::styled(lead, Style::default().fg(Color::Cyan)),
            Span::raw(row.clone()),
        ]));
    }
    if state.composer.is_empty() {
        let placeholder = if state.question.as_ref().is_some_and(|q| q.typed) {
            "type the answer · Enter sends it · or ↑/↓ and Enter on a choice"
        } else if state.question.is_some() {
            "answer the question above (↑/↓ and Enter)"
        } else if state.observer {
            "observing · the session's controllers prompt · / commands · /quit leaves"
        } else if state.running_since.is_some() && state.prompts_go_at_once {
            "the agent is working · Esc cancels · what you send now goes to it at once"
        } else if state.running_since.is_some() {
            "the agent is working · Esc cancels · what you send now waits for the turn's end"
        } else {
            "message the agent · / commands · @ files · Alt+Enter new line"
        };
        shown = vec![Row::from(vec![
            Span::styled(PROMPT, Style::default().fg(Color::Cyan)),
            Span::styled(placeholder, dim()),
        ])];
    }
    frame.render_widget(Paragraph::new(shown), area);
    if state.question.as_ref().is_none_or(|q| q.typed) && state.picker.is_none() {
        let x = area.x + (PROMPT.chars().count() + cursor.1) as u16;
        let y = area.y + (cursor.0 - first) as u16;
        frame.set_cursor_position(Position::new(x.min(area.right() - 1), y));
    }
}
