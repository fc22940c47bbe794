//! How a transcript entry looks in the terminal: styled plain-text lines built
//! from the engine's entry views. No I/O and no escapes here; the screen adds
//! the styling. Agent text is sanitised so it cannot move the cursor.

use serde_json::Value;
use spindle_engine::{EntryKind, EntryView};

/// How a line is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// As is.
    Plain,
    /// ANSI dim (thoughts, tool output, notes).
    Dim,
    /// ANSI bold (headers, questions, dividers).
    Bold,
}

/// One logical line: sanitised text (no control characters) and its style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// What the line says.
    pub text: String,
    /// How it is shown.
    pub style: Style,
}

impl Line {
    /// A line of sanitised `text`.
    pub fn new(text: &str, style: Style) -> Line {
        Line {
            text: sanitize(text),
            style,
        }
    }
}

/// What to show besides the reply.
#[derive(Debug, Clone, Copy)]
pub struct RenderOptions {
    /// Show thought entries (dimmed, labelled).
    pub thoughts: bool,
    /// Show user messages (when the terminal does not echo the typing).
    pub user_messages: bool,
}

/// The label that starts every thought line: what separates thoughts from
/// the reply on screen (and what the tmux test looks for).
pub const THOUGHT_LABEL: &str = "thought | ";
/// Tool output and plan details beyond this many lines are elided.
const DETAIL_LINES: usize = 12;

/// The lines of one entry, appended to `out`.
pub fn entry_lines(entry: &EntryView, options: RenderOptions, out: &mut Vec<Line>) {
    match entry.kind {
        EntryKind::UserMessage => {
            if options.user_messages {
                prefixed(&entry.text, "you> ", "     ", Style::Bold, out);
            }
        }
        EntryKind::AgentMessage => {
            for line in entry.text.lines() {
                out.push(Line::new(line, Style::Plain));
            }
        }
        EntryKind::AgentThought => {
            if options.thoughts && !entry.text.is_empty() {
                prefixed(&entry.text, THOUGHT_LABEL, THOUGHT_LABEL, Style::Dim, out);
            }
        }
        EntryKind::PlanText => {
            if !entry.text.is_empty() {
                prefixed(&entry.text, "plan | ", "plan | ", Style::Dim, out);
            }
        }
        EntryKind::ToolCall => tool_call_lines(entry, out),
        EntryKind::Plan => plan_lines(entry, out),
        EntryKind::Terminal => terminal_lines(entry, out),
        EntryKind::Boundary => boundary_lines(entry, out),
        EntryKind::Permission => {
            out.push(Line::new("[permission request]", Style::Dim));
        }
        EntryKind::Unknown => {
            let kind = entry
                .fields
                .get("raw")
                .and_then(|raw| raw.get("sessionUpdate"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            out.push(Line::new(&format!("[unknown update: {kind}]"), Style::Dim));
        }
    }
}

/// A diff in either shape: v1 `{path, oldText?, newText}`, v2 `{changes: [{operation, path,
/// oldPath?}], patch?: {text}}` (ACP-SEMANTICS.md: no mechanical mapping between the two, so each
/// is shown as it came).
fn diff_lines(item: &Value, detail: &mut Vec<String>) {
    if let Some(changes) = item.get("changes").and_then(Value::as_array) {
        for change in changes {
            let operation = str_field(Some(change), "operation").unwrap_or("change");
            let path = str_field(Some(change), "path").unwrap_or("?");
            match str_field(Some(change), "oldPath") {
                Some(old) => detail.push(format!("{operation} {old} -> {path}")),
                None => detail.push(format!("{operation} {path}")),
            }
        }
        if let Some(patch) = item
            .get("patch")
            .and_then(|p| p.get("text"))
            .and_then(Value::as_str)
        {
            detail.extend(patch.lines().map(str::to_owned));
        }
        return;
    }
    let path = str_field(Some(item), "path").unwrap_or("?");
    detail.push(format!("edit {path}"));
    if let Some(new_text) = str_field(Some(item), "newText") {
        detail.extend(new_text.lines().map(|l| format!("+ {l}")));
    }
}

fn prefixed(text: &str, first: &str, rest: &str, style: Style, out: &mut Vec<Line>) {
    for (i, line) in text.lines().enumerate() {
        let prefix = if i == 0 { first } else { rest };
        out.push(Line::new(&format!("{prefix}{line}"), style));
    }
}

fn str_field<'a>(object: Option<&'a Value>, key: &str) -> Option<&'a str> {
    object.and_then(|o| o.get(key)).and_then(Value::as_str)
}

fn tool_call_lines(entry: &EntryView, out: &mut Vec<Line>) {
    let tool = entry.fields.get("toolCall");
    let title = str_field(tool, "title").unwrap_or("tool call");
    let mut header = format!("[tool] {title}");
    if let Some(kind) = str_field(tool, "kind") {
        header.push_str(&format!(" ({kind})"));
    }
    header.push_str(&format!(
        " - {}",
        str_field(tool, "status").unwrap_or("pending")
    ));
    out.push(Line::new(&header, Style::Bold));
    if let Some(permission) = entry.fields.get("permission") {
        out.push(Line::new(
            &format!("    permission: {}", permission_state(permission)),
            Style::Dim,
        ));
    }
    let content = tool
        .and_then(|t| t.get("content"))
        .and_then(Value::as_array);
    let mut detail = Vec::new();
    for item in content.into_iter().flatten() {
        match item.get("type").and_then(Value::as_str) {
            Some("content") => {
                if let Some(text) = str_field(item.get("content"), "text") {
                    detail.extend(text.lines().map(str::to_owned));
                }
            }
            Some("diff") => diff_lines(item, &mut detail),
            Some("terminal") => {
                let id = str_field(Some(item), "terminalId").unwrap_or("?");
                detail.push(format!("terminal {id}"));
            }
            _ => {}
        }
    }
    detail_lines(&detail, out);
}

/// What became of a permission request recorded by the engine
/// (`outcome`: null while waiting, then the client's outcome object).
fn permission_state(permission: &Value) -> String {
    let outcome = permission.get("outcome").unwrap_or(&Value::Null);
    match str_field(Some(outcome), "outcome") {
        None => "waiting for an answer".to_owned(),
        Some("selected") => {
            let id = str_field(Some(outcome), "optionId").unwrap_or("?");
            let name = permission
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|o| str_field(Some(o), "optionId") == Some(id))
                .and_then(|o| str_field(Some(o), "name"))
                .unwrap_or(id);
            format!("answered {name}")
        }
        Some(other) => other.to_owned(),
    }
}

/// Indented, dimmed detail lines, the last `DETAIL_LINES` of them.
fn detail_lines(detail: &[String], out: &mut Vec<Line>) {
    let skip = detail.len().saturating_sub(DETAIL_LINES);
    if skip > 0 {
        out.push(Line::new(&format!("    ... {skip} more lines"), Style::Dim));
    }
    for line in &detail[skip..] {
        out.push(Line::new(&format!("    {line}"), Style::Dim));
    }
}

fn plan_lines(entry: &EntryView, out: &mut Vec<Line>) {
    if entry.fields.get("removed") == Some(&Value::Bool(true)) {
        out.push(Line::new("[plan removed]", Style::Dim));
        return;
    }
    out.push(Line::new("[plan]", Style::Bold));
    let entries = entry
        .fields
        .get("plan")
        .and_then(|p| p.get("entries"))
        .and_then(Value::as_array);
    for item in entries.into_iter().flatten() {
        let mark = match str_field(Some(item), "status") {
            Some("completed") => "[x]",
            Some("in_progress") => "[~]",
            _ => "[ ]",
        };
        let content = str_field(Some(item), "content").unwrap_or("");
        out.push(Line::new(&format!("  {mark} {content}"), Style::Plain));
    }
}

fn terminal_lines(entry: &EntryView, out: &mut Vec<Line>) {
    let terminal = entry.fields.get("terminal");
    let command = str_field(terminal, "command").unwrap_or("");
    out.push(Line::new(&format!("[terminal] {command}"), Style::Bold));
    let detail: Vec<String> = entry.text.lines().map(str::to_owned).collect();
    detail_lines(&detail, out);
    if let Some(status) = terminal.and_then(|t| t.get("exitStatus")) {
        out.push(Line::new(&format!("    exit: {status}"), Style::Dim));
    }
}

/// The divider at clear and compaction boundaries.
fn boundary_lines(entry: &EntryView, out: &mut Vec<Line>) {
    let reason = entry.fields.get("reason").and_then(Value::as_str);
    let label = match reason {
        Some("compaction") => match entry.fields.get("status").and_then(Value::as_str) {
            Some(status) => format!("context compacted ({status})"),
            None => "context compacted".to_owned(),
        },
        _ => "context cleared".to_owned(),
    };
    out.push(Line::new(&divider(&label), Style::Bold));
    if !entry.text.is_empty() {
        prefixed(&entry.text, "summary | ", "summary | ", Style::Dim, out);
    }
}

/// `──── label ────`: the divider line.
pub fn divider(label: &str) -> String {
    let bar = "\u{2500}".repeat(12);
    format!("{bar} {label} {bar}")
}

/// The text with every character that could move the cursor or reorder
/// text made visible (control pictures, U+FFFD) and tabs expanded.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut column = 0usize;
    for c in text.chars() {
        match c {
            '\t' => {
                let spaces = 4 - column % 4;
                out.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
                continue;
            }
            '\0'..='\x1f' => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{FFFD}'));
            }
            '\x7f' => out.push('\u{2421}'),
            '\u{80}'..='\u{9f}'
            | '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}' => out.push('\u{FFFD}'),
            _ => out.push(c),
        }
        column += 1;
    }
    out
}

/// Display columns of sanitised text (East Asian wide and emoji count 2,
/// combining marks 0; an approximation of `wcwidth`).
pub fn display_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// Rows sanitised `text` occupies on a terminal `cols` wide (at least 1):
/// a character that does not fit on the current row starts the next, and
/// a row filled exactly does not wrap by itself.
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

fn char_width(c: char) -> usize {
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
    fn sanitize_makes_escapes_visible_and_expands_tabs() {
        assert_eq!(sanitize("a\x1b[2Jb"), "a\u{241b}[2Jb");
        assert_eq!(sanitize("a\tb"), "a   b");
        assert_eq!(sanitize("x\u{202e}y\r"), "x\u{FFFD}y\u{240d}");
    }

    #[test]
    fn rows_wrap_like_a_terminal() {
        assert_eq!(rows_for("", 10), 1);
        assert_eq!(rows_for("0123456789", 10), 1);
        assert_eq!(rows_for("0123456789a", 10), 2);
        // A wide character that would straddle the edge starts a new row.
        assert_eq!(rows_for("012345678日", 10), 2);
    }

    #[test]
    fn diffs_show_in_both_protocol_shapes() {
        let mut detail = Vec::new();
        diff_lines(
            &serde_json::json!({"type": "diff", "path": "/w/a.rs", "oldText": "x", "newText": "y\nz"}),
            &mut detail,
        );
        assert_eq!(detail, ["edit /w/a.rs", "+ y", "+ z"]);
        detail.clear();
        diff_lines(
            &serde_json::json!({"type": "diff", "changes": [
                {"operation": "modify", "path": "/w/a.rs"},
                {"operation": "move", "path": "/w/b.rs", "oldPath": "/w/c.rs"}
            ], "patch": {"format": "git_patch", "text": "@@ -1 +1 @@\n-x\n+y"}}),
            &mut detail,
        );
        assert_eq!(
            detail,
            [
                "modify /w/a.rs",
                "move /w/c.rs -> /w/b.rs",
                "@@ -1 +1 @@",
                "-x",
                "+y"
            ]
        );
    }

    #[test]
    fn wide_characters_count_two_columns() {
        assert_eq!(display_width("ab"), 2);
        assert_eq!(display_width("日本"), 4);
        assert_eq!(display_width("e\u{301}"), 1);
    }
}
