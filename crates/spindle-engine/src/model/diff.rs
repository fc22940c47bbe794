//! File diffs of a tool call: [`FileDiff`]s built from a v1 `diff` content
//! item (`path`, `oldText`, `newText`; the unified diff is computed here) or a
//! v2 one (`changes` plus an optional `git_patch`, parsed by `git_patch`).

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::file_diff::{DiffChangeKind, DiffHunk, DiffLine, DiffLineKind, FileDiff};
use super::git_patch;

/// Lines of context around each change in a computed hunk (as `diff -u`).
const CONTEXT_LINES: usize = 3;
/// Above this many lines (old plus new) a v1 diff is not searched for a
/// minimal edit: it becomes one hunk that removes every old line and adds
/// every new one. Myers' algorithm costs (lines x differences), and the
/// engine has no clock to stop a search that runs long.
const MINIMAL_DIFF_MAX_LINES: usize = 40_000;

/// The diffs of a tool call's `content` items, in order (several per item
/// for a v2 diff touching several files). Items of other types are skipped.
pub(crate) fn diffs_of_content(content: &[Value]) -> Vec<FileDiff> {
    let mut out = Vec::new();
    for item in content {
        if item.get("type").and_then(Value::as_str) != Some("diff") {
            continue;
        }
        if item.get("changes").is_some() || item.get("patch").is_some() {
            v2_diff(item, &mut out);
        } else {
            out.push(v1_diff(item));
        }
    }
    out
}

/// The change a v1 `diff` item shows, as the agent spelled it: what a client
/// write is compared with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShownChange<'a> {
    /// `path`.
    pub(crate) path: &'a str,
    /// `oldText` (`None` when null or absent).
    pub(crate) old: Option<&'a str>,
    /// `newText`.
    pub(crate) new: &'a str,
}

/// The change of a v1 `diff` item (`path` and `newText` strings); `None` for
/// other items, v2 diffs included.
pub(crate) fn shown_change(item: &Value) -> Option<ShownChange<'_>> {
    if item.get("type").and_then(Value::as_str) != Some("diff")
        || item.get("changes").is_some()
        || item.get("patch").is_some()
    {
        return None;
    }
    Some(ShownChange {
        path: item.get("path")?.as_str()?,
        old: item.get("oldText").and_then(Value::as_str),
        new: item.get("newText")?.as_str()?,
    })
}

/// `{path, oldText?, newText}`: the hunks computed line by line.
fn v1_diff(item: &Value) -> FileDiff {
    let path = item.get("path").and_then(Value::as_str).unwrap_or("");
    let old = item.get("oldText").and_then(Value::as_str);
    let new = item.get("newText").and_then(Value::as_str).unwrap_or("");
    // Gemini CLI names the operation in the item's `_meta.kind`.
    let hinted = item
        .get("_meta")
        .and_then(|m| m.get("kind"))
        .and_then(Value::as_str)
        .map(DiffChangeKind::from_operation)
        .filter(|k| {
            matches!(
                k,
                DiffChangeKind::Added | DiffChangeKind::Deleted | DiffChangeKind::Modified
            )
        });
    // Qwen Code and Gemini CLI send `oldText: ""` for a new file: an empty
    // old text counts as no file (emptying a file reads as a deletion).
    let change = hinted.unwrap_or(match old {
        None | Some("") => DiffChangeKind::Added,
        Some(_) if new.is_empty() => DiffChangeKind::Deleted,
        Some(_) => DiffChangeKind::Modified,
    });
    let mut diff = FileDiff::new(path, change);
    diff.hunks = text_hunks(old.unwrap_or(""), new);
    diff
}

/// `{changes: [{operation, path, oldPath?}], patch?: {format, text}}`: files
/// from the `git_patch` text, with the operation and paths of `changes` (which
/// are authoritative); a change the patch does not cover has no hunks.
fn v2_diff(item: &Value, out: &mut Vec<FileDiff>) {
    let patch = item.get("patch").filter(|p| {
        p.get("format").and_then(Value::as_str) == Some("git_patch")
            && p.get("text").is_some_and(Value::is_string)
    });
    let mut from_patch = patch
        .and_then(|p| p.get("text"))
        .and_then(Value::as_str)
        .map(git_patch::parse)
        .unwrap_or_default();
    let changes = item.get("changes").and_then(Value::as_array);
    for change in changes.into_iter().flatten() {
        let path = change.get("path").and_then(Value::as_str).unwrap_or("");
        let old_path = change.get("oldPath").and_then(Value::as_str);
        let kind = DiffChangeKind::from_operation(
            change
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or("modify"),
        );
        // The same path first; else the patch's path relative to the change's (a git patch names
        // files from its root, `changes` absolutely): one diff per file, never two headers.
        let found = from_patch
            .iter()
            .position(|f| {
                f.path == path || (old_path.is_some() && f.old_path.as_deref() == old_path)
            })
            .or_else(|| {
                from_patch
                    .iter()
                    .position(|f| same_file_relative(path, &f.path))
            });
        let mut diff = match found {
            Some(i) => from_patch.remove(i),
            None => FileDiff::new(path, kind.clone()),
        };
        diff.path = path.to_owned();
        diff.old_path = old_path.map(str::to_owned).or(diff.old_path);
        diff.change = kind;
        out.push(diff);
    }
    out.extend(from_patch);
}

/// Whether `patch_path`, as a git patch names a file (relative to its root), is the file at the
/// absolute or longer `change_path`: `src/a.rs` is `/w/src/a.rs`, not `/w/xsrc/a.rs`.
fn same_file_relative(change_path: &str, patch_path: &str) -> bool {
    let relative = patch_path.trim_start_matches('/');
    !relative.is_empty()
        && change_path
            .strip_suffix(relative)
            .is_some_and(|head| head.is_empty() || head.ends_with('/'))
}

/// The hunks turning `old` into `new` as unified-diff text (headers and marked lines), the body
/// of a patch: what an agent sends as a v2 diff's `patch` after its file headers.
pub fn unified_hunks(old: &str, new: &str) -> String {
    let mut text = String::new();
    for hunk in text_hunks(old, new) {
        text.push_str(&hunk.header());
        text.push('\n');
        for line in &hunk.lines {
            text.push(line.kind.marker());
            text.push_str(&line.text);
            text.push('\n');
        }
    }
    text
}

/// The unified hunks turning `old` into `new`.
pub(crate) fn text_hunks(old: &str, new: &str) -> Vec<DiffHunk> {
    if old == new {
        return Vec::new();
    }
    let line_count = |s: &str| s.lines().count();
    if line_count(old) + line_count(new) > MINIMAL_DIFF_MAX_LINES {
        return vec![replace_all_hunk(old, new)];
    }
    let diff = TextDiff::from_lines(old, new);
    let mut hunks = Vec::new();
    for group in diff.grouped_ops(CONTEXT_LINES) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let mut hunk = DiffHunk {
            old_start: unified_start(old_range.start, old_range.len()),
            old_lines: old_range.len(),
            new_start: unified_start(new_range.start, new_range.len()),
            new_lines: new_range.len(),
            lines: Vec::new(),
        };
        for op in &group {
            for change in diff.iter_changes(op) {
                let kind = match change.tag() {
                    ChangeTag::Equal => DiffLineKind::Context,
                    ChangeTag::Insert => DiffLineKind::Added,
                    ChangeTag::Delete => DiffLineKind::Removed,
                };
                let text = change.value();
                let text = text.strip_suffix('\n').unwrap_or(text);
                hunk.lines.push(DiffLine {
                    kind,
                    text: text.to_owned(),
                });
            }
        }
        hunks.push(hunk);
    }
    hunks
}

fn replace_all_hunk(old: &str, new: &str) -> DiffHunk {
    let removed = old.lines().map(|l| DiffLine {
        kind: DiffLineKind::Removed,
        text: l.to_owned(),
    });
    let added = new.lines().map(|l| DiffLine {
        kind: DiffLineKind::Added,
        text: l.to_owned(),
    });
    let (old_lines, new_lines) = (old.lines().count(), new.lines().count());
    DiffHunk {
        old_start: unified_start(0, old_lines),
        old_lines,
        new_start: unified_start(0, new_lines),
        new_lines,
        lines: removed.chain(added).collect(),
    }
}

/// A hunk range's start as unified diffs write it: 1-based, or the line
/// before the hunk when the range is empty.
fn unified_start(start: usize, len: usize) -> usize {
    if len == 0 { start } else { start + 1 }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn lines(diff: &FileDiff) -> Vec<String> {
        diff.to_json()["hunks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|h| {
                std::iter::once(h["header"].as_str().unwrap().to_owned()).chain(
                    h["lines"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|l| l.as_str().unwrap().to_owned()),
                )
            })
            .collect()
    }

    #[test]
    fn a_modification_gets_context_and_minimal_hunks() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n";
        let diffs = diffs_of_content(&[
            json!({"type": "diff", "path": "/w/x", "oldText": old, "newText": new}),
        ]);
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].change, DiffChangeKind::Modified);
        assert_eq!(
            lines(&diffs[0]),
            [
                "@@ -2,9 +2,10 @@",
                " b",
                " c",
                " d",
                "-e",
                "+E",
                " f",
                " g",
                " h",
                " i",
                " j",
                "+k"
            ]
        );
        assert!(
            diffs[0]
                .unified()
                .starts_with("--- /w/x\n+++ /w/x\n@@ -2,9 +2,10 @@\n b\n")
        );
    }

    #[test]
    fn new_and_deleted_files_are_marked() {
        let diffs = diffs_of_content(&[
            json!({"type": "diff", "path": "/w/new", "oldText": null, "newText": "one\ntwo"}),
            json!({"type": "diff", "path": "/w/also-new", "newText": "x\n"}),
            json!({"type": "diff", "path": "/w/gone", "oldText": "bye\n", "newText": ""}),
            json!({"type": "content", "content": {"type": "text", "text": "not a diff"}}),
            json!({"type": "diff", "path": "/w/g", "oldText": "x", "newText": "y", "_meta": {"kind": "add"}}),
            json!({"type": "diff", "path": "/w/q", "oldText": "", "newText": "y"}),
        ]);
        let kinds: Vec<&str> = diffs.iter().map(|d| d.change.as_str()).collect();
        assert_eq!(kinds, ["add", "add", "delete", "add", "add"]);
        assert_eq!(lines(&diffs[0]), ["@@ -0,0 +1,2 @@", "+one", "+two"]);
        assert_eq!(lines(&diffs[2]), ["@@ -1,1 +0,0 @@", "-bye"]);
        assert!(
            diffs[0]
                .unified()
                .starts_with("--- /dev/null\n+++ /w/new\n")
        );
        assert!(
            diffs[2]
                .unified()
                .starts_with("--- /w/gone\n+++ /dev/null\n")
        );
    }

    #[test]
    fn huge_texts_become_one_replace_hunk() {
        let old: String = (0..MINIMAL_DIFF_MAX_LINES)
            .map(|i| format!("{i}\n"))
            .collect();
        let new = "x\n";
        let hunks = text_hunks(&old, new);
        assert_eq!(hunks.len(), 1);
        assert_eq!(hunks[0].old_lines, MINIMAL_DIFF_MAX_LINES);
        assert_eq!(hunks[0].lines.last().unwrap().kind, DiffLineKind::Added);
        assert!(text_hunks("same\n", "same\n").is_empty());
    }

    #[test]
    fn v2_changes_take_hunks_from_the_git_patch() {
        let patch = "diff --git /w/a.rs /w/a.rs\nindex 1..2 100644\n--- /w/a.rs\n+++ /w/a.rs\n@@ -1,2 +1,2 @@\n x\n-y\n+z\ndiff --git /w/new.rs /w/new.rs\nnew file mode 100644\n--- /dev/null\n+++ /w/new.rs\n@@ -0,0 +1 @@\n+hello\n";
        let diffs = diffs_of_content(&[json!({"type": "diff", "changes": [
            {"operation": "modify", "path": "/w/a.rs"},
            {"operation": "add", "path": "/w/new.rs"},
            {"operation": "move", "oldPath": "/w/c.rs", "path": "/w/d.rs"}
        ], "patch": {"format": "git_patch", "text": patch}})]);
        assert_eq!(diffs.len(), 3);
        assert_eq!(lines(&diffs[0]), ["@@ -1,2 +1,2 @@", " x", "-y", "+z"]);
        assert_eq!(diffs[1].change, DiffChangeKind::Added);
        assert_eq!(lines(&diffs[1]), ["@@ -0,0 +1,1 @@", "+hello"]);
        assert_eq!(diffs[2].change, DiffChangeKind::Moved);
        assert_eq!(diffs[2].old_path.as_deref(), Some("/w/c.rs"));
        assert!(diffs[2].hunks.is_empty());
        // A patch naming files from its root matches the absolute path of its change.
        let diffs = diffs_of_content(&[json!({"type": "diff", "changes": [
            {"operation": "modify", "path": "/workspace/src/main.rs"},
            {"operation": "add", "path": "/workspace/xsrc/main.rs"},
        ], "patch": {"format": "git_patch", "text": "diff --git a/workspace/src/main.rs b/workspace/src/main.rs\n--- a/workspace/src/main.rs\n+++ b/workspace/src/main.rs\n@@ -1 +1 @@\n-a\n+b\n"}})]);
        assert_eq!(diffs.len(), 2, "{diffs:?}");
        assert_eq!(diffs[0].path, "/workspace/src/main.rs");
        assert_eq!(lines(&diffs[0]), ["@@ -1,1 +1,1 @@", "-a", "+b"]);
        assert_eq!(diffs[1].path, "/workspace/xsrc/main.rs");
        assert!(diffs[1].hunks.is_empty());
        assert!(same_file_relative("/w/src/a.rs", "src/a.rs"));
        assert!(!same_file_relative("/w/xsrc/a.rs", "src/a.rs"));
        assert!(!same_file_relative("/w/a.rs", ""));
        // Without a patch, the changes alone.
        let bare = diffs_of_content(&[
            json!({"type": "diff", "changes": [{"operation": "delete", "path": "/w/z"}]}),
        ]);
        assert_eq!(bare[0].change, DiffChangeKind::Deleted);
    }
}
