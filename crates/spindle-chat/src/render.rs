//! How a transcript entry looks in the terminal: styled plain-text lines built
//! from the engine's entry views. No I/O and no escapes here; the screen adds
//! the styling. Agent text is sanitised so it cannot move the cursor.

use serde_json::Value;
use spindle_engine::{EntryKind, EntryView};

/// How a line is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// An error's sentence (bold red).
    Error,
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
            Style::Error => Some("1;31"),
        }
    }
}

/// One logical line: sanitised text (no control characters), its style, and
/// what starts its continuation rows when the screen wraps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// What the line says.
    pub text: String,
    /// How it is shown.
    pub style: Style,
    /// Starts each continuation row of the wrapped line (empty: the line's
    /// own indentation, see [`crate::wrap::word_wrap`]).
    pub hang: String,
}

impl Line {
    /// A line of sanitised `text`.
    pub fn new(text: &str, style: Style) -> Line {
        Line {
            text: sanitize(text),
            style,
            hang: String::new(),
        }
    }

    /// A line whose continuation rows start with `hang` (a label, an indent).
    pub fn hanging(text: &str, style: Style, hang: &str) -> Line {
        Line {
            hang: sanitize(hang),
            ..Line::new(text, style)
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
/// Tool output and terminal lines beyond this many are elided.
const DETAIL_LINES: usize = 12;
/// Diff lines of one tool call beyond this many are elided.
pub const DIFF_LINES: usize = 60;

/// Which piece of an entry's drawing a [`Part`] is. Pieces change on their
/// own (a tool call's status, one plan item, a diff's outcome), so a piece
/// already in the scrollback is not drawn again when another one changes
/// (`printed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PartKey {
    /// The first line: `[tool] ... - status`, `[plan]`, `[terminal] cmd`, a divider.
    Head,
    /// A tool call's permission line.
    Permission,
    /// A tool call's text content (it grows: only its new lines are drawn again).
    Content,
    /// The header line of diff `n` (path and the write's outcome).
    DiffHead(usize),
    /// The hunks of diff `n`.
    DiffBody(usize),
    /// Plan item `n`.
    PlanItem(usize),
    /// The entry's text: a message, a thought, a terminal's output. Drawn
    /// from a byte offset: what precedes it is in the scrollback already.
    Text,
    /// How a terminal exited.
    Exit,
}

/// How many of a part's lines are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elide {
    /// All of them.
    None,
    /// The last `DETAIL_LINES`, after a line counting the others.
    KeepLast,
    /// Within the tool call's budget of `DIFF_LINES` diff lines.
    DiffBudget,
}

/// One piece of an entry's drawing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Which piece.
    pub key: PartKey,
    /// Its lines, before elision.
    pub lines: Vec<Line>,
    /// How many are shown.
    pub elide: Elide,
    /// The head drawn instead when the entry is drawn again with this head
    /// unchanged (`[plan updated]`).
    pub again: Option<Line>,
}

impl Part {
    fn new(key: PartKey, lines: Vec<Line>, elide: Elide) -> Part {
        Part {
            key,
            lines,
            elide,
            again: None,
        }
    }

    /// The part's lines from `from` on, elided as the part says;
    /// `diff_budget` is what the tool call's diffs may still show.
    pub fn shown_from(&self, from: usize, diff_budget: &mut usize, out: &mut Vec<Line>) {
        let lines = &self.lines[from.min(self.lines.len())..];
        match self.elide {
            Elide::None => out.extend_from_slice(lines),
            Elide::KeepLast => {
                let skip = lines.len().saturating_sub(DETAIL_LINES);
                if skip > 0 {
                    out.push(Line::new(&format!("    ... {skip} more lines"), Style::Dim));
                }
                out.extend_from_slice(&lines[skip..]);
            }
            Elide::DiffBudget => {
                let shown = lines.len().min(*diff_budget);
                out.extend_from_slice(&lines[..shown]);
                *diff_budget -= shown;
                if shown < lines.len() {
                    out.push(Line::new(
                        &format!("    ... {} more diff lines", lines.len() - shown),
                        Style::Dim,
                    ));
                }
            }
        }
    }
}

/// `context used/size` (or `context used used`) of an engine usage value;
/// `None` when it has no `used`. Both front ends' status says it this way.
pub fn usage_text(usage: &Value) -> Option<String> {
    let used = usage.get("used")?;
    match usage.get("size") {
        Some(size) => Some(format!("context {used}/{size}")),
        None => Some(format!("context {used} used")),
    }
}

/// The lines of one entry, whole, appended to `out` (the full screen draws
/// these; the line view draws through `printed::draw_parts`, which leaves
/// out what is printed already).
pub fn entry_lines(entry: &EntryView, options: RenderOptions, out: &mut Vec<Line>) {
    let mut budget = DIFF_LINES;
    for part in entry_parts(entry, options, 0) {
        part.shown_from(0, &mut budget, out);
    }
}

/// The diffs a tool call entry shows (headers and hunks), e.g. under a
/// permission question that has no live region to show its tool call in.
pub fn diff_lines(entry: &EntryView) -> Vec<Line> {
    let mut parts = Vec::new();
    if let Some(diffs) = entry.fields.get("diffs").and_then(Value::as_array) {
        diff_parts(diffs, &mut parts);
    }
    let mut budget = DIFF_LINES;
    let mut out = Vec::new();
    for part in &parts {
        part.shown_from(0, &mut budget, &mut out);
    }
    out
}

/// The parts of one entry, in drawing order. `text_from` is the byte offset
/// (a char boundary) of the entry's text to draw from: the text before it
/// is in the scrollback already, so the [`PartKey::Text`] part continues it.
pub fn entry_parts(entry: &EntryView, options: RenderOptions, text_from: usize) -> Vec<Part> {
    let mut parts = Vec::new();
    let text = |first: &str, rest: &str, style: Style| {
        Part::new(
            PartKey::Text,
            text_lines(&entry.text, text_from, first, rest, style),
            Elide::None,
        )
    };
    let head = |text: &str, style: Style| {
        Part::new(PartKey::Head, vec![Line::new(text, style)], Elide::None)
    };
    match entry.kind {
        EntryKind::UserMessage => {
            if options.user_messages {
                parts.push(text("you> ", "     ", Style::Bold));
            }
        }
        EntryKind::AgentMessage => parts.push(text("", "", Style::Plain)),
        EntryKind::AgentThought => {
            if options.thoughts {
                parts.push(text(THOUGHT_LABEL, THOUGHT_LABEL, Style::Dim));
            }
        }
        EntryKind::PlanText => parts.push(text("plan | ", "plan | ", Style::Dim)),
        EntryKind::ToolCall => tool_call_parts(entry, text_from, &mut parts),
        EntryKind::Plan => plan_parts(entry, &mut parts),
        EntryKind::Terminal => terminal_parts(entry, text_from, &mut parts),
        EntryKind::Boundary => {
            parts.push(head(&divider(&boundary_label(entry)), Style::Bold));
            parts.push(text("summary | ", "summary | ", Style::Dim));
        }
        EntryKind::Permission => parts.push(head("[permission request]", Style::Dim)),
        EntryKind::Unknown => {
            let kind = entry
                .fields
                .get("raw")
                .and_then(|raw| raw.get("sessionUpdate"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            parts.push(head(&format!("[unknown update: {kind}]"), Style::Dim));
        }
        // The chat says how a turn ended itself, when the turn finishes (interactive.rs).
        EntryKind::TurnEnd => {}
    }
    parts
}

/// `text` from byte `from` on, one line per line, the first after `first`
/// and the others after `rest` (a label or an indent). Continuing a line
/// already printed, the rest starts on a new line after `rest`, with `…`
/// when the cut fell inside a word.
fn text_lines(text: &str, from: usize, first: &str, rest: &str, style: Style) -> Vec<Line> {
    let mut out = Vec::new();
    // Continuation rows of a wrapped line start as its later lines do.
    let labelled =
        |prefix: &str, line: &str| Line::hanging(&format!("{prefix}{line}"), style, rest);
    let from = from.min(text.len());
    if from == 0 {
        for (i, line) in text.lines().enumerate() {
            out.push(labelled(if i == 0 { first } else { rest }, line));
        }
        return out;
    }
    let (before, after) = text.split_at(from);
    let mut lines = after.split('\n');
    if !before.ends_with('\n')
        && let Some(tail) = lines.next()
    {
        // The rest of a line whose start is in the scrollback.
        let in_word =
            !before.ends_with(char::is_whitespace) && !tail.starts_with(char::is_whitespace);
        let tail = tail.trim_start();
        if !tail.is_empty() {
            let mark = if in_word { "\u{2026}" } else { "" };
            out.push(labelled(rest, &format!("{mark}{tail}")));
        }
    }
    let mut lines: Vec<&str> = lines.collect();
    if after.ends_with('\n') {
        lines.pop();
    }
    for line in lines {
        out.push(labelled(rest, line.strip_suffix('\r').unwrap_or(line)));
    }
    out
}

/// The engine's `diffs` of a tool call: per file a header (new and deleted
/// files named so, a client write's outcome), then each hunk's header and
/// lines, coloured by kind.
fn diff_parts(diffs: &[Value], parts: &mut Vec<Part>) {
    for (index, diff) in diffs.iter().enumerate() {
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
        let mut head = vec![Line::new(
            &format!("    {header}{}", outcome.unwrap_or_default()),
            Style::Bold,
        )];
        if diff.get("binary") == Some(&Value::Bool(true)) {
            head.push(Line::new("    (binary)", Style::Dim));
        }
        parts.push(Part::new(PartKey::DiffHead(index), head, Elide::None));
        let mut body = Vec::new();
        let hunks = diff.get("hunks").and_then(Value::as_array);
        for hunk in hunks.into_iter().flatten() {
            let lines = hunk.get("lines").and_then(Value::as_array);
            let header = std::iter::once(str_field(Some(hunk), "header").unwrap_or("@@"));
            let lines = lines.into_iter().flatten().filter_map(Value::as_str);
            for (i, line) in header.chain(lines).enumerate() {
                let style = match (i, line.as_bytes().first()) {
                    (0, _) => Style::Hunk,
                    (_, Some(b'+')) => Style::Added,
                    (_, Some(b'-')) => Style::Removed,
                    _ => Style::Dim,
                };
                body.push(Line::new(&format!("    {line}"), style));
            }
        }
        parts.push(Part::new(PartKey::DiffBody(index), body, Elide::DiffBudget));
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

fn str_field<'a>(object: Option<&'a Value>, key: &str) -> Option<&'a str> {
    object.and_then(|o| o.get(key)).and_then(Value::as_str)
}

/// A terminal's output (the entry's text, from `text_from`: its last lines)
/// and, once it exited, how.
fn output_parts(
    entry: &EntryView,
    text_from: usize,
    terminal: Option<&Value>,
    parts: &mut Vec<Part>,
) {
    let mut output = text_lines(&entry.text, text_from, "    ", "    ", Style::Dim);
    for line in &mut output {
        line.hang = "    ".to_owned();
    }
    parts.push(Part::new(PartKey::Text, output, Elide::KeepLast));
    if let Some(status) = terminal.and_then(|t| t.get("exitStatus")) {
        let exit = Line::new(&format!("    {}", exit_text(status)), Style::Dim);
        parts.push(Part::new(PartKey::Exit, vec![exit], Elide::None));
    }
}

fn tool_call_parts(entry: &EntryView, text_from: usize, parts: &mut Vec<Part>) {
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
    let head = Line::new(&header, Style::Bold);
    parts.push(Part::new(PartKey::Head, vec![head], Elide::None));
    if let Some(permission) = entry.fields.get("permission") {
        let line = Line::new(
            &format!("    permission: {}", permission_state(permission)),
            Style::Dim,
        );
        parts.push(Part::new(PartKey::Permission, vec![line], Elide::None));
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
                    detail.extend(
                        text.lines()
                            .map(|l| Line::new(&format!("    {l}"), Style::Dim)),
                    );
                }
            }
            Some("terminal") => {
                let id = str_field(Some(item), "terminalId");
                // The display-only terminal is drawn below; a v2 terminal is its own entry.
                if display_terminal.is_none() || (id != display_id && display_id.is_some()) {
                    let line = format!("    terminal {}", id.unwrap_or("?"));
                    detail.push(Line::new(&line, Style::Dim));
                }
            }
            _ => {}
        }
    }
    parts.push(Part::new(PartKey::Content, detail, Elide::KeepLast));
    if let Some(diffs) = entry.fields.get("diffs").and_then(Value::as_array) {
        diff_parts(diffs, parts);
    }
    if display_terminal.is_some() {
        output_parts(entry, text_from, display_terminal, parts);
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

fn plan_parts(entry: &EntryView, parts: &mut Vec<Part>) {
    if entry.fields.get("removed") == Some(&Value::Bool(true)) {
        let head = Line::new("[plan removed]", Style::Dim);
        parts.push(Part::new(PartKey::Head, vec![head], Elide::None));
        return;
    }
    let mut head = Part::new(
        PartKey::Head,
        vec![Line::new("[plan]", Style::Bold)],
        Elide::None,
    );
    head.again = Some(Line::new("[plan updated]", Style::Bold));
    parts.push(head);
    let entries = entry
        .fields
        .get("plan")
        .and_then(|p| p.get("entries"))
        .and_then(Value::as_array);
    for (index, item) in entries.into_iter().flatten().enumerate() {
        let mark = match str_field(Some(item), "status") {
            Some("completed") => "[x]",
            Some("in_progress") => "[~]",
            _ => "[ ]",
        };
        let content = str_field(Some(item), "content").unwrap_or("");
        let line = Line::hanging(&format!("  {mark} {content}"), Style::Plain, "      ");
        parts.push(Part::new(PartKey::PlanItem(index), vec![line], Elide::None));
    }
}

fn terminal_parts(entry: &EntryView, text_from: usize, parts: &mut Vec<Part>) {
    let terminal = entry.fields.get("terminal");
    let command = str_field(terminal, "command").unwrap_or("");
    let head = Line::new(&format!("[terminal] {command}"), Style::Bold);
    parts.push(Part::new(PartKey::Head, vec![head], Elide::None));
    output_parts(entry, text_from, terminal, parts);
}

/// `context cleared`, `context compacted (status)`.
fn boundary_label(entry: &EntryView) -> String {
    let reason = entry.fields.get("reason").and_then(Value::as_str);
    match reason {
        Some("compaction") => match entry.fields.get("status").and_then(Value::as_str) {
            Some(status) => format!("context compacted ({status})"),
            None => "context compacted".to_owned(),
        },
        _ => "context cleared".to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_makes_escapes_visible_and_expands_tabs() {
        assert_eq!(sanitize("a\x1b[2Jb"), "a\u{241b}[2Jb");
        assert_eq!(sanitize("a\tb"), "a   b");
        assert_eq!(sanitize("x\u{202e}y\r"), "x\u{FFFD}y\u{240d}");
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

    /// The chat's drawing of tool call `id` after the engine applied `lines`
    /// (agent lines, `{"sent": ..}` client lines, `{"local": ..}` lines).
    fn drawn_from_engine(v2: bool, lines: &[serde_json::Value], id: &str) -> Vec<String> {
        use spindle_engine::{EngineConfig, ProtocolHint, TranscriptEngine};
        let protocol = if v2 {
            ProtocolHint::V2
        } else {
            ProtocolHint::V1
        };
        let mut engine = TranscriptEngine::new(EngineConfig {
            protocol,
            ..EngineConfig::default()
        });
        for line in lines {
            if let Some(sent) = line.get("sent") {
                engine.apply_client_line(&sent.to_string());
            } else if line.get("local").is_some() {
                engine.apply_local_line(&line.to_string());
            } else {
                engine.apply_agent_line(&line.to_string());
            }
        }
        let view = engine.transcript().entry(id).expect("the tool call").view();
        drawn(&view).into_iter().map(|(t, _)| t).collect()
    }

    fn update(u: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": u}})
    }

    #[test]
    fn one_diff_per_file_per_tool_call_whatever_the_version() {
        use serde_json::json;
        let prompt = json!({"sent": {"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}}});
        let old = "alpha\nbeta\ngamma\n";
        let new = "alpha\nBETA\ngamma\n";
        // (protocol v2?, the lines the engine applies)
        let cases = [
            // v1: a snippet shown, the whole file written through the client, answered.
            (
                false,
                vec![
                    prompt.clone(),
                    update(
                        json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Edit",
                        "kind": "edit", "status": "in_progress", "content": [
                        {"type": "diff", "path": "/w/n.txt", "oldText": "beta", "newText": "BETA"}]}),
                    ),
                    json!({"jsonrpc": "2.0", "id": 7, "method": "fs/write_text_file",
                        "params": {"sessionId": "s", "path": "/w/n.txt", "content": new}}),
                    json!({"local": {"fileBeforeWrite": {"sessionId": "s", "path": "/w/n.txt", "oldText": old}}}),
                    json!({"sent": {"jsonrpc": "2.0", "id": 7, "result": {}}}),
                ],
            ),
            // v1: the write repeats the shown diff exactly.
            (
                false,
                vec![
                    prompt.clone(),
                    update(
                        json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Edit",
                        "kind": "edit", "status": "in_progress", "content": [
                        {"type": "diff", "path": "/w/n.txt", "oldText": old, "newText": new}]}),
                    ),
                    json!({"jsonrpc": "2.0", "id": 7, "method": "fs/write_text_file",
                        "params": {"sessionId": "s", "path": "/w/n.txt", "content": new}}),
                    json!({"local": {"fileBeforeWrite": {"sessionId": "s", "path": "/w/n.txt", "oldText": old}}}),
                    json!({"sent": {"jsonrpc": "2.0", "id": 7, "result": {}}}),
                ],
            ),
            // v2: `changes` name the file absolutely, the patch from its root.
            (
                true,
                vec![
                    prompt,
                    update(
                        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c",
                        "title": "Edit", "kind": "edit", "status": "completed", "content": [
                        {"type": "diff", "changes": [{"operation": "modify", "path": "/w/n.txt"}],
                         "patch": {"format": "git_patch", "text": "diff --git a/n.txt b/n.txt\n--- a/n.txt\n+++ b/n.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"}}]}),
                    ),
                ],
            ),
        ];
        for (v2, lines) in &cases {
            let drawn = drawn_from_engine(*v2, lines, "c");
            let headers: Vec<&String> = drawn
                .iter()
                .filter(|l| l.starts_with("    edit ") || l.starts_with("    new file "))
                .collect();
            assert_eq!(headers.len(), 1, "{drawn:#?}");
            assert_eq!(
                drawn.iter().filter(|l| *l == "    +BETA").count(),
                1,
                "{drawn:#?}"
            );
        }
    }
}
