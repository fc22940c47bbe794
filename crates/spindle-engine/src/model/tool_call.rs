//! A tool call's wire fields (kept as compact JSON), its permission record,
//! and what Spindle reads out of them for display: the tool's name, the
//! display-only terminal of `_meta.terminal_*`, and the file diffs.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::client_activity::{ClientActivity, ClientWrite};
use super::diff::{ShownChange, diffs_of_content, shown_change};
use super::file_diff::FileDiff;
use super::terminal::TerminalExit;
use crate::compact::{CompactObject, MemberValue};

/// The display-only terminal production agents attach to a tool call when the
/// client sets `clientCapabilities._meta.terminal_output`: `_meta.terminal_info`
/// (`terminal_id`, `cwd`, ...), `_meta.terminal_output` (`data`, appended) and
/// `_meta.terminal_exit` (`exit_code`, `signal`). Its fields are spelled as v2
/// `terminal_update` spells them (`terminalId`, `cwd`, `exitStatus` with
/// `exitCode` and `signal`), so views draw both kinds of terminal alike.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolTerminal {
    /// `terminalId`, `cwd` and the other `terminal_info` members (snake_case
    /// keys in camelCase), and `exitStatus` once `terminal_exit` came.
    pub fields: Map<String, Value>,
    /// Every `terminal_output.data`, appended in arrival order.
    pub output: String,
}

impl ToolTerminal {
    /// The exit status, once `terminal_exit` came.
    pub fn exit(&self) -> Option<TerminalExit> {
        self.fields
            .get("exitStatus")
            .and_then(TerminalExit::from_status)
    }
}

/// The client write a diff of [`ToolCall::diffs`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffWrite<'a> {
    /// The write.
    pub write: &'a ClientWrite,
    /// The write's own diff, of a file the agent showed a different change
    /// for in the call's content: it wrote something other than it showed.
    pub differs_from_shown: bool,
}

/// Which write a diff stands for: an index into the writes, and the mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WriteLink {
    write: usize,
    differs_from_shown: bool,
}

/// [`ToolCall::diffs`] and, beside each, the write it stands for.
#[derive(Debug, Clone, Default)]
struct ShownDiffs {
    files: Vec<FileDiff>,
    writes: Vec<Option<WriteLink>>,
}

/// A tool call: its wire fields, patched three-state, plus local state.
///
/// The wire fields are kept as compact JSON text (a long session holds tens of
/// thousands of tool calls; as maps they took 15 times their size) and parsed
/// when read.
#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    pub(crate) fields: CompactObject,
    /// Items `tool_call_content_chunk` appended to an existing `content` since
    /// the fields were last patched: their JSON texts joined by commas, so a
    /// streamed tool output costs its own size, not a rewrite per chunk.
    pub(crate) appended_content: String,
    /// The latest permission request about this call, with its outcome once
    /// answered (boxed: most tool calls have none).
    pub permission: Option<Box<Value>>,
    /// The tool's programmatic name, once any update named it (v2 `name`,
    /// `_meta.claudeCode.toolName`, `_meta.toolName`); kept when a later
    /// `_meta` replacement leaves it out.
    pub(crate) tool_name: Option<Box<str>>,
    /// The display-only terminal, when `_meta.terminal_*` came (or the
    /// client terminal the call embeds, fed by local lines).
    pub(crate) terminal: Option<Box<ToolTerminal>>,
    /// Files the agent wrote and read through the client during this call.
    pub(crate) client: Option<Box<ClientActivity>>,
    /// [`Self::diffs`], computed on first read after `content` or the
    /// writes changed.
    diffs: OnceLock<ShownDiffs>,
}

impl ToolCall {
    /// A tool call with these wire fields and no permission request.
    pub fn new(fields: &Map<String, Value>) -> ToolCall {
        ToolCall::from_fields(CompactObject::from_map(fields))
    }

    /// A tool call with these wire fields (already compact) and no
    /// permission request.
    pub(crate) fn from_fields(fields: CompactObject) -> ToolCall {
        ToolCall {
            fields,
            appended_content: String::new(),
            permission: None,
            tool_name: None,
            terminal: None,
            client: None,
            diffs: OnceLock::new(),
        }
    }

    /// The tool's programmatic name for display (`Bash`, `Edit`,
    /// `run_shell_command`, ...), when the agent gave one: v2 `name`, or the
    /// `_meta.claudeCode.toolName` (Claude Code) / `_meta.toolName` (Qwen Code)
    /// conventions.
    pub fn tool_name(&self) -> Option<&str> {
        self.tool_name.as_deref()
    }

    /// The display-only terminal of `_meta.terminal_*`, if any came.
    pub fn terminal(&self) -> Option<&ToolTerminal> {
        self.terminal.as_deref()
    }

    /// The display-only terminal's output so far.
    pub fn terminal_output(&self) -> Option<&str> {
        self.terminal.as_deref().map(|t| t.output.as_str())
    }

    /// The display-only terminal's exit status, once it exited.
    pub fn terminal_exit(&self) -> Option<TerminalExit> {
        self.terminal.as_deref().and_then(ToolTerminal::exit)
    }

    /// One [`FileDiff`] per file of every `diff` content item, in content
    /// order, then one per [`Self::client_writes`] item that does not repeat
    /// one of those, in request order. A write that makes exactly the change
    /// a content item shows (same path and new text, and the text before as
    /// shown once the client said what it was) is not drawn twice: that
    /// item's diff stands for it ([`Self::diff_write`]); nor is a write of the
    /// whole file around a shown snippet: it takes that item's place. Computed on the
    /// first read after `content` or the writes changed, so streaming updates
    /// cost nothing here.
    pub fn diffs(&self) -> &[FileDiff] {
        &self.shown_diffs().files
    }

    /// The client write that diff `index` of [`Self::diffs`] stands for, if
    /// any: the write's own diff, or the content diff it repeats.
    pub fn diff_write(&self, index: usize) -> Option<DiffWrite<'_>> {
        let link = (*self.shown_diffs().writes.get(index)?)?;
        Some(DiffWrite {
            write: self.client_writes().get(link.write)?,
            differs_from_shown: link.differs_from_shown,
        })
    }

    fn shown_diffs(&self) -> &ShownDiffs {
        self.diffs.get_or_init(|| {
            // The stored JSON is compact, so a diff item spells its type exactly
            // so: no parse for the many tool calls without one.
            const DIFF_TYPE: &str = r#""type":"diff""#;
            let raw = self.fields.get_raw("content").unwrap_or("");
            let items = if !raw.contains(DIFF_TYPE) && !self.appended_content.contains(DIFF_TYPE) {
                Vec::new()
            } else {
                match self.field("content") {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                }
            };
            let mut files = Vec::new();
            // The v1 items' changes, with the index of the diff each gave.
            let mut shown: Vec<(usize, ShownChange<'_>)> = Vec::new();
            for item in &items {
                if let Some(change) = shown_change(item) {
                    shown.push((files.len(), change));
                }
                files.extend(diffs_of_content(std::slice::from_ref(item)));
            }
            let mut writes: Vec<Option<WriteLink>> = vec![None; files.len()];
            for (index, write) in self.client_writes().iter().enumerate() {
                let repeated = shown
                    .iter()
                    .find(|(at, change)| writes[*at].is_none() && write.repeats(change));
                if let Some((at, _)) = repeated {
                    writes[*at] = Some(WriteLink {
                        write: index,
                        differs_from_shown: false,
                    });
                    continue;
                }
                // A write that carries out a shown change around it (the whole file written
                // around a shown snippet) is that change: one diff per file, the write's own
                // once the text before is known (it holds the real lines and numbers).
                let carried = shown
                    .iter()
                    .find(|(at, change)| writes[*at].is_none() && write.carries_out(change));
                if let Some(&(at, _)) = carried {
                    if write.old_text.is_some() {
                        files[at] = write.diff();
                    }
                    writes[at] = Some(WriteLink {
                        write: index,
                        differs_from_shown: false,
                    });
                    continue;
                }
                let mut same_file = shown
                    .iter()
                    .filter(|(_, change)| change.path == write.path)
                    .peekable();
                let differs_from_shown = same_file.peek().is_some()
                    && !same_file.any(|(_, change)| write.carries_out(change));
                files.push(write.diff());
                writes.push(Some(WriteLink {
                    write: index,
                    differs_from_shown,
                }));
            }
            ShownDiffs { files, writes }
        })
    }

    /// The `fs/write_text_file` requests made during this call (each shown
    /// by a diff of [`Self::diffs`]: see [`Self::diff_write`]).
    pub fn client_writes(&self) -> &[ClientWrite] {
        self.client.as_deref().map_or(&[], |c| c.writes.as_slice())
    }

    /// The paths the agent read through the client during this call.
    pub fn client_reads(&self) -> &[String] {
        self.client.as_deref().map_or(&[], |c| c.reads.as_slice())
    }

    /// The client activity, for changing it (the diffs are recomputed).
    pub(crate) fn client_mut(&mut self) -> &mut ClientActivity {
        self.forget_diffs();
        self.client.get_or_insert_with(Box::default)
    }

    /// `diffs` is out of date (content changed).
    fn forget_diffs(&mut self) {
        if self.diffs.get().is_some() {
            self.diffs = OnceLock::new();
        }
    }

    /// Wire fields in camelCase, in wire order (`toolCallId`, `title`, `kind`,
    /// `status`, `content`, `locations`, `rawInput`, `rawOutput`, `_meta`, ...),
    /// parsed.
    pub fn fields(&self) -> Map<String, Value> {
        self.folded().to_map()
    }

    /// One wire field, parsed.
    pub fn field(&self, key: &str) -> Option<Value> {
        if key == "content" && !self.appended_content.is_empty() {
            return self.folded().get(key);
        }
        self.fields.get(key)
    }

    /// One wire field when it is a string (`title`, `kind`, `status`, ...),
    /// without parsing the others.
    pub fn field_str(&self, key: &str) -> Option<Cow<'_, str>> {
        if key == "content" {
            return None;
        }
        self.fields.get_str(key)
    }

    /// The wire fields as one compact JSON object.
    pub fn fields_json(&self) -> Cow<'_, str> {
        match self.folded() {
            Cow::Borrowed(fields) => Cow::Borrowed(fields.as_json()),
            Cow::Owned(fields) => Cow::Owned(fields.as_json().to_owned()),
        }
    }

    /// The fields with the appended content items in place.
    fn folded(&self) -> Cow<'_, CompactObject> {
        if self.appended_content.is_empty() {
            Cow::Borrowed(&self.fields)
        } else {
            Cow::Owned(
                self.fields
                    .with_array_items("content", &self.appended_content),
            )
        }
    }

    /// Applies member changes (see [`CompactObject::patched`]) after folding
    /// the appended content in.
    pub(crate) fn patch<V: MemberValue>(&mut self, changes: &[(&str, Option<V>)]) {
        if changes.iter().any(|(key, _)| *key == "content") {
            self.forget_diffs();
        }
        self.fold();
        self.fields = self.fields.patched(changes);
    }

    /// Appends one item to `content`.
    pub(crate) fn push_content(&mut self, item: &Value) {
        self.forget_diffs();
        // Items already waiting mean `content` is an array (checked when the first one came):
        // no walk of the fields per chunk.
        if self.appended_content.is_empty()
            && self
                .fields
                .get_raw("content")
                .is_none_or(|raw| !raw.starts_with('['))
        {
            self.fields = self
                .fields
                .patched(&[("content", Some(&Value::Array(vec![item.clone()])))]);
            return;
        }
        if !self.appended_content.is_empty() {
            self.appended_content.push(',');
        }
        let mut bytes = std::mem::take(&mut self.appended_content).into_bytes();
        serde_json::to_writer(&mut bytes, item).expect("a Value serializes");
        self.appended_content = String::from_utf8(bytes).expect("serde_json writes UTF-8");
    }

    fn fold(&mut self) {
        if !self.appended_content.is_empty() {
            self.fields = self
                .fields
                .with_array_items("content", &self.appended_content);
            self.appended_content = String::new();
        }
    }
}

impl PartialEq for ToolCall {
    /// Equal wire fields (as JSON objects), permission records, tool names,
    /// terminals and client activity.
    fn eq(&self, other: &Self) -> bool {
        self.permission == other.permission
            && self.tool_name == other.tool_name
            && self.terminal == other.terminal
            && self.client == other.client
            && *self.folded() == *other.folded()
    }
}
