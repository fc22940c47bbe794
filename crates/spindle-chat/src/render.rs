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
    /// A diff line only in the new text (green).
    Added,
    /// A diff line only in the old text (red).
    Removed,
    /// A diff hunk header (cyan).
    Hunk,
}

impl Style {
    /// The SGR parameters that turn the style on (`None`: as is). The line's
    /// text carries its meaning without them (`+`/`-` markers, `@@` headers),
    /// so nothing is lost when the screen is not a terminal.
    pub fn sgr(self) -> Option<&'static str> {
        match self {
            Style::Plain => None,
            Style::Dim => Some("2"),
            Style::Bold => Some("1"),
            Style::Added => Some("32"),
            Style::Removed => Some("31"),
            Style::Hunk => Some("36"),
        }
    }
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
/// Diff lines of one tool call beyond this many are elided.
const DIFF_LINES: usize = 60;

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
        // The chat says how a turn ended itself, when the turn finishes (interactive.rs).
        EntryKind::TurnEnd => {}
    }
}

/// The engine's `diffs` of a tool call: one header per file (new and deleted
/// files named so), then each hunk's header and lines, coloured by kind; at
/// most `DIFF_LINES` lines in all.
fn diff_lines(diffs: &[Value], out: &mut Vec<Line>) {
    let mut budget = DIFF_LINES;
    let mut elided = 0usize;
    for diff in diffs {
        let path = str_field(Some(diff), "path").unwrap_or("?");
        let header = match str_field(Some(diff), "change") {
            Some("add") => format!("new file {path}"),
            Some("delete") => format!("deleted {path}"),
            Some("move") | Some("copy") => {
                let verb = if str_field(Some(diff), "change") == Some("move") {
                    "moved"
                } else {
                    "copied"
                };
                let from = str_field(Some(diff), "oldPath").unwrap_or("?");
                format!("{verb} {from} -> {path}")
            }
            Some("modify") | None => format!("edit {path}"),
            Some(other) => format!("{other} {path}"),
        };
        // A write the agent asked this client for: where it stands (the
        // engine puts a write that repeats a shown diff on that diff, and
        // marks one that differs from what the agent showed for the file).
        let outcome = diff.get("write").map(|write| {
            let status = str_field(Some(write), "status").unwrap_or("pending");
            let mut outcome = match (status, str_field(Some(write), "error")) {
                ("pending", _) => "write waiting for the answer".to_owned(),
                (status, Some(error)) => format!("{status}: {error}"),
                (status, None) => status.to_owned(),
            };
            if write.get("differsFromShown") == Some(&Value::Bool(true)) {
                outcome.push_str("; not the change the agent showed");
            }
            format!(" ({outcome})")
        });
        out.push(Line::new(
            &format!("    {header}{}", outcome.unwrap_or_default()),
            Style::Bold,
        ));
        if diff.get("binary") == Some(&Value::Bool(true)) {
            out.push(Line::new("    (binary)", Style::Dim));
        }
        let hunks = diff.get("hunks").and_then(Value::as_array);
        for hunk in hunks.into_iter().flatten() {
            let lines = hunk.get("lines").and_then(Value::as_array);
            let header = std::iter::once(str_field(Some(hunk), "header").unwrap_or("@@"));
            let body = lines.into_iter().flatten().filter_map(Value::as_str);
            for (i, line) in header.chain(body).enumerate() {
                if budget == 0 {
                    elided += 1;
                    continue;
                }
                budget -= 1;
                let style = match (i, line.as_bytes().first()) {
                    (0, _) => Style::Hunk,
                    (_, Some(b'+')) => Style::Added,
                    (_, Some(b'-')) => Style::Removed,
                    _ => Style::Dim,
                };
                out.push(Line::new(&format!("    {line}"), style));
            }
        }
    }
    if elided > 0 {
        out.push(Line::new(
            &format!("    ... {elided} more diff lines"),
            Style::Dim,
        ));
    }
}

/// A display-only terminal on a tool call (the entry's text is its output):
/// the last lines of output, then how it exited once it did.
fn tool_terminal_lines(entry: &EntryView, terminal: &Value, out: &mut Vec<Line>) {
    let detail: Vec<String> = entry.text.lines().map(str::to_owned).collect();
    detail_lines(&detail, out);
    if let Some(status) = terminal.get("exitStatus") {
        out.push(Line::new(&format!("    {}", exit_text(status)), Style::Dim));
    }
}

/// `exit 0`, `exit 2`, `killed by SIGTERM`, or `exited` when neither is known.
fn exit_text(status: &Value) -> String {
    match (
        status.get("exitCode").and_then(Value::as_i64),
        str_field(Some(status), "signal"),
    ) {
        (_, Some(signal)) => format!("killed by {signal}"),
        (Some(code), None) => format!("exit {code}"),
        (None, None) => "exited".to_owned(),
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
    if let Some(name) = entry.fields.get("toolName").and_then(Value::as_str)
        && name != title
    {
        header.push_str(&format!(" [{name}]"));
    }
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
    let display_terminal = entry.fields.get("terminal");
    let display_id = str_field(display_terminal, "terminalId");
    let mut detail = Vec::new();
    for item in content.into_iter().flatten() {
        match item.get("type").and_then(Value::as_str) {
            Some("content") => {
                if let Some(text) = str_field(item.get("content"), "text") {
                    detail.extend(text.lines().map(str::to_owned));
                }
            }
            Some("terminal") => {
                let id = str_field(Some(item), "terminalId");
                // The display-only terminal is drawn below; a v2 terminal is its own entry.
                if display_terminal.is_none() || (id != display_id && display_id.is_some()) {
                    detail.push(format!("terminal {}", id.unwrap_or("?")));
                }
            }
            _ => {}
        }
    }
    detail_lines(&detail, out);
    if let Some(diffs) = entry.fields.get("diffs").and_then(Value::as_array) {
        diff_lines(diffs, out);
    }
    if let Some(terminal) = display_terminal {
        tool_terminal_lines(entry, terminal, out);
    }
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
        out.push(Line::new(&format!("    {}", exit_text(status)), Style::Dim));
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

    fn tool_entry(fields: Value, text: &str) -> EntryView {
        let Value::Object(fields) = fields else {
            unreachable!()
        };
        EntryView {
            id: "t".into(),
            kind: EntryKind::ToolCall,
            message_id: None,
            turn: Some(1),
            text: text.into(),
            fields,
        }
    }

    fn drawn(entry: &EntryView) -> Vec<(String, Style)> {
        let mut out = Vec::new();
        let options = RenderOptions {
            thoughts: false,
            user_messages: false,
        };
        entry_lines(entry, options, &mut out);
        out.into_iter().map(|l| (l.text, l.style)).collect()
    }

    #[test]
    fn diffs_are_coloured_per_line_kind_and_name_new_and_deleted_files() {
        let entry = tool_entry(
            serde_json::json!({
                "toolCall": {"title": "Edit", "kind": "edit", "status": "completed"},
                "toolName": "Edit",
                "diffs": [
                    {"path": "/w/a.rs", "change": "modify", "hunks": [
                        {"header": "@@ -1,2 +1,2 @@", "lines": [" x", "-y", "+z"]}]},
                    {"path": "/w/new.rs", "change": "add", "hunks": []},
                    {"path": "/w/old.rs", "change": "delete", "hunks": []},
                    {"path": "/w/b.rs", "oldPath": "/w/c.rs", "change": "move", "hunks": []},
                    {"path": "/w/d.rs", "change": "modify", "hunks": [],
                     "write": {"requestId": 3, "status": "rejected", "error": "the user rejected the write"}},
                    {"path": "/w/e.rs", "change": "modify", "hunks": []},
                    {"path": "/w/e.rs", "change": "modify", "hunks": [],
                     "write": {"requestId": 4, "status": "written", "differsFromShown": true}}
                ]
            }),
            "",
        );
        let lines = drawn(&entry);
        let expected = [
            ("[tool] Edit (edit) - completed", Style::Bold),
            ("    edit /w/a.rs", Style::Bold),
            ("    @@ -1,2 +1,2 @@", Style::Hunk),
            ("     x", Style::Dim),
            ("    -y", Style::Removed),
            ("    +z", Style::Added),
            ("    new file /w/new.rs", Style::Bold),
            ("    deleted /w/old.rs", Style::Bold),
            ("    moved /w/c.rs -> /w/b.rs", Style::Bold),
            (
                "    edit /w/d.rs (rejected: the user rejected the write)",
                Style::Bold,
            ),
            ("    edit /w/e.rs", Style::Bold),
            (
                "    edit /w/e.rs (written; not the change the agent showed)",
                Style::Bold,
            ),
        ];
        let expected: Vec<(String, Style)> =
            expected.iter().map(|(t, s)| (t.to_string(), *s)).collect();
        assert_eq!(lines, expected);
    }

    #[test]
    fn a_display_terminal_shows_its_last_lines_sanitised_and_its_exit() {
        let output: String =
            (1..=20).map(|i| format!("line {i}\n")).collect::<String>() + "red \x1b[31mX";
        let entry = tool_entry(
            serde_json::json!({
                "toolCall": {"title": "make", "kind": "execute", "status": "completed",
                             "content": [{"type": "terminal", "terminalId": "t"}]},
                "toolName": "Bash",
                "terminal": {"terminalId": "t", "exitStatus": {"exitCode": 2, "signal": null}}
            }),
            &output,
        );
        let lines = drawn(&entry);
        assert_eq!(lines[0].0, "[tool] make (execute) - completed [Bash]");
        assert_eq!(lines[1].0, "    ... 9 more lines");
        assert_eq!(lines[2].0, "    line 10");
        assert_eq!(lines[13].0, "    red \u{241b}[31mX");
        assert_eq!(lines[14].0, "    exit 2");
        assert!(!lines.iter().any(|(t, _)| t.starts_with("    terminal ")));
    }

    #[test]
    fn wide_characters_count_two_columns() {
        assert_eq!(display_width("ab"), 2);
        assert_eq!(display_width("日本"), 4);
        assert_eq!(display_width("e\u{301}"), 1);
    }
}
