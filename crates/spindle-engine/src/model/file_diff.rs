//! The diff of one file as the transcript keeps it: [`FileDiff`], its hunks
//! and line kinds. Built by `diff` (from a tool call's content items) and
//! `git_patch` (from a v2 patch text); both depend on this module, not on each
//! other's.

use serde_json::{Map, Value, json};

/// What happened to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffChangeKind {
    /// A new file (v1 `oldText` null, absent or empty; v2 `add`).
    Added,
    /// The file was deleted (v1: `newText` empty while `oldText` was not; v2 `delete`).
    Deleted,
    /// Changed in place.
    Modified,
    /// Moved or renamed (v2 `move`; `old_path` says from where).
    Moved,
    /// Copied (v2 `copy`; `old_path` says from where).
    Copied,
    /// Another v2 operation, verbatim.
    Other(String),
}

impl DiffChangeKind {
    /// The v2 operation name: `add`, `delete`, `modify`, `move`, `copy`, or the
    /// unknown value.
    pub fn as_str(&self) -> &str {
        match self {
            DiffChangeKind::Added => "add",
            DiffChangeKind::Deleted => "delete",
            DiffChangeKind::Modified => "modify",
            DiffChangeKind::Moved => "move",
            DiffChangeKind::Copied => "copy",
            DiffChangeKind::Other(other) => other,
        }
    }

    pub(crate) fn from_operation(operation: &str) -> DiffChangeKind {
        match operation {
            "add" => DiffChangeKind::Added,
            "delete" => DiffChangeKind::Deleted,
            "modify" => DiffChangeKind::Modified,
            "move" => DiffChangeKind::Moved,
            "copy" => DiffChangeKind::Copied,
            other => DiffChangeKind::Other(other.to_owned()),
        }
    }
}

/// What one diff line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffLineKind {
    /// Unchanged (` `).
    Context,
    /// Only in the new text (`+`).
    Added,
    /// Only in the old text (`-`).
    Removed,
}

impl DiffLineKind {
    /// The unified-diff marker: ` `, `+` or `-`.
    pub fn marker(self) -> char {
        match self {
            DiffLineKind::Context => ' ',
            DiffLineKind::Added => '+',
            DiffLineKind::Removed => '-',
        }
    }
}

/// One line of a hunk, without its line break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    /// Context, added or removed.
    pub kind: DiffLineKind,
    /// The line's text (no marker, no trailing newline).
    pub text: String,
}

/// One hunk: where it applies and its lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiffHunk {
    /// First old line (1-based; the line before the hunk when `old_lines` is 0).
    pub old_start: usize,
    /// Old lines the hunk covers.
    pub old_lines: usize,
    /// First new line (1-based; the line before the hunk when `new_lines` is 0).
    pub new_start: usize,
    /// New lines the hunk covers.
    pub new_lines: usize,
    /// The lines, in order.
    pub lines: Vec<DiffLine>,
}

impl DiffHunk {
    /// `@@ -old_start,old_lines +new_start,new_lines @@`.
    pub fn header(&self) -> String {
        format!(
            "@@ -{},{} +{},{} @@",
            self.old_start, self.old_lines, self.new_start, self.new_lines
        )
    }
}

/// The change to one file, as a unified diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// The file's path (after the change, for moves and copies).
    pub path: String,
    /// Where a moved or copied file came from.
    pub old_path: Option<String>,
    /// What happened to the file.
    pub change: DiffChangeKind,
    /// Hunks in file order (none when only the operation is known, or for
    /// binary files).
    pub hunks: Vec<DiffHunk>,
    /// A git patch said the file is binary.
    pub binary: bool,
}

impl FileDiff {
    pub(super) fn new(path: &str, change: DiffChangeKind) -> FileDiff {
        FileDiff {
            path: path.to_owned(),
            old_path: None,
            change,
            hunks: Vec::new(),
            binary: false,
        }
    }

    /// The diff as unified-diff text: `--- old` / `+++ new` (`/dev/null` for
    /// an added or deleted file), then each hunk's header and lines.
    pub fn unified(&self) -> String {
        let old = match self.change {
            DiffChangeKind::Added => "/dev/null",
            _ => self.old_path.as_deref().unwrap_or(&self.path),
        };
        let new = match self.change {
            DiffChangeKind::Deleted => "/dev/null",
            _ => self.path.as_str(),
        };
        let mut out = format!("--- {old}\n+++ {new}\n");
        for hunk in &self.hunks {
            out.push_str(&hunk.header());
            out.push('\n');
            for line in &hunk.lines {
                out.push(line.kind.marker());
                out.push_str(&line.text);
                out.push('\n');
            }
        }
        out
    }

    /// The diff as the entry view carries it: `path`, `oldPath`, `change`
    /// (the v2 operation name), `binary`, `hunks` (`header`, `lines`: each
    /// line its marker then its text).
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("path".into(), Value::from(self.path.as_str()));
        if let Some(old) = &self.old_path {
            map.insert("oldPath".into(), Value::from(old.as_str()));
        }
        map.insert("change".into(), Value::from(self.change.as_str()));
        if self.binary {
            map.insert("binary".into(), Value::Bool(true));
        }
        let hunks: Vec<Value> = self
            .hunks
            .iter()
            .map(|hunk| {
                let lines: Vec<Value> = hunk
                    .lines
                    .iter()
                    .map(|l| Value::from(format!("{}{}", l.kind.marker(), l.text)))
                    .collect();
                json!({ "header": hunk.header(), "lines": lines })
            })
            .collect();
        map.insert("hunks".into(), Value::Array(hunks));
        Value::Object(map)
    }
}
