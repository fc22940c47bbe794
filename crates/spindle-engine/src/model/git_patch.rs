//! A reader for v2's `git_patch` text (one or more `diff --git` sections, or
//! bare `---`/`+++` unified diffs) into [`FileDiff`]s. Lenient: lines it does
//! not understand are skipped, never an error.

use super::file_diff::{DiffChangeKind, DiffHunk, DiffLine, DiffLineKind, FileDiff};

impl FileDiff {
    /// The files of a `git diff` (or bare unified diff) text, in order; lines it does not
    /// understand are skipped.
    pub fn from_git_patch(text: &str) -> Vec<FileDiff> {
        parse(text)
    }
}

/// The files of a patch, in order.
pub(crate) fn parse(text: &str) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    let mut current: Option<FileDiff> = None;
    // Old and new lines the open hunk still expects (its header's counts).
    let mut remaining = (0usize, 0usize);
    for line in text.lines() {
        if remaining != (0, 0)
            && let Some(hunk) = current.as_mut().and_then(|f| f.hunks.last_mut())
        {
            let (kind, body) = match line.as_bytes().first() {
                Some(b'+') => (DiffLineKind::Added, &line[1..]),
                Some(b'-') => (DiffLineKind::Removed, &line[1..]),
                Some(b' ') => (DiffLineKind::Context, &line[1..]),
                Some(b'\\') => continue,
                // Some tools drop the space of an empty context line.
                None => (DiffLineKind::Context, ""),
                Some(_) => {
                    remaining = (0, 0);
                    (DiffLineKind::Context, "")
                }
            };
            if remaining != (0, 0) {
                if kind != DiffLineKind::Added {
                    remaining.0 = remaining.0.saturating_sub(1);
                }
                if kind != DiffLineKind::Removed {
                    remaining.1 = remaining.1.saturating_sub(1);
                }
                hunk.lines.push(DiffLine {
                    kind,
                    text: body.to_owned(),
                });
                continue;
            }
        }
        if let Some(rest) = line.strip_prefix("diff --git ") {
            files.extend(current.take());
            current = Some(blank(git_header_path(rest)));
            continue;
        }
        if let Some(header) = line.strip_prefix("@@ ") {
            let file = current.get_or_insert_with(|| blank(String::new()));
            let hunk = hunk_header(header);
            remaining = (hunk.old_lines, hunk.new_lines);
            file.hunks.push(hunk);
            continue;
        }
        if let Some(old) = line.strip_prefix("--- ") {
            // A bare unified diff: each `---` after hunks starts the next file.
            if current.as_ref().is_some_and(|f| !f.hunks.is_empty()) {
                files.extend(current.take());
            }
            let file = current.get_or_insert_with(|| blank(String::new()));
            match patch_path(old) {
                None => file.change = DiffChangeKind::Added,
                Some(path) => {
                    if file.path.is_empty() {
                        file.path = path;
                    }
                }
            }
            continue;
        }
        let Some(file) = current.as_mut() else {
            continue;
        };
        if let Some(new) = line.strip_prefix("+++ ") {
            match patch_path(new) {
                None => file.change = DiffChangeKind::Deleted,
                Some(path) => file.path = path,
            }
        } else if line.starts_with("new file mode") {
            file.change = DiffChangeKind::Added;
        } else if line.starts_with("deleted file mode") {
            file.change = DiffChangeKind::Deleted;
        } else if let Some(from) = line.strip_prefix("rename from ") {
            file.old_path = Some(from.to_owned());
            file.change = DiffChangeKind::Moved;
        } else if let Some(to) = line.strip_prefix("rename to ") {
            file.path = to.to_owned();
        } else if let Some(from) = line.strip_prefix("copy from ") {
            file.old_path = Some(from.to_owned());
            file.change = DiffChangeKind::Copied;
        } else if let Some(to) = line.strip_prefix("copy to ") {
            file.path = to.to_owned();
        } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
            file.binary = true;
        }
    }
    files.extend(current);
    files
}

fn blank(path: String) -> FileDiff {
    FileDiff {
        path,
        old_path: None,
        change: DiffChangeKind::Modified,
        hunks: Vec::new(),
        binary: false,
    }
}

/// The path of a `diff --git A B` line: git writes the same path twice
/// when the file kept its name, so the first half is it; otherwise the part
/// after the last ` b/` or, failing that, the last word.
fn git_header_path(rest: &str) -> String {
    let half = rest.len() / 2;
    if rest.len() % 2 == 1
        && rest.is_char_boundary(half)
        && rest.as_bytes()[half] == b' '
        && rest[..half] == rest[half + 1..]
    {
        return strip_side_prefix(&rest[..half]).to_owned();
    }
    if let Some(i) = rest.rfind(" b/") {
        return rest[i + 3..].to_owned();
    }
    rest.rsplit(' ').next().unwrap_or(rest).to_owned()
}

/// A `---`/`+++` path: `None` for `/dev/null`; `a/`, `b/` prefixes and a
/// trailing tab-separated timestamp removed.
fn patch_path(raw: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or(raw);
    if raw == "/dev/null" {
        return None;
    }
    Some(strip_side_prefix(raw).to_owned())
}

fn strip_side_prefix(path: &str) -> &str {
    path.strip_prefix("a/")
        .or_else(|| path.strip_prefix("b/"))
        .unwrap_or(path)
}

/// `-a,b +c,d @@ section` (counts default to 1).
fn hunk_header(header: &str) -> DiffHunk {
    let mut hunk = DiffHunk::default();
    for part in header.split(' ') {
        let (target, nums) = match part.as_bytes().first() {
            Some(b'-') => (0, &part[1..]),
            Some(b'+') => (1, &part[1..]),
            _ => break,
        };
        let mut it = nums.splitn(2, ',');
        let start = it.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let count = it.next().map_or(Some(1), |n| n.parse().ok()).unwrap_or(0);
        if target == 0 {
            (hunk.old_start, hunk.old_lines) = (start, count);
        } else {
            (hunk.new_start, hunk.new_lines) = (start, count);
        }
    }
    hunk
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_git_sections_renames_binaries_and_bare_diffs() {
        let text = "diff --git a/x y b/x y\n--- a/x y\n+++ b/x y\n@@ -3 +3,2 @@ fn main\n-old\n+new\n+more\n\\ No newline at end of file\n\
diff --git a/old.txt b/new.txt\nsimilarity index 90%\nrename from old.txt\nrename to new.txt\n\
diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n\
diff --git a/gone b/gone\ndeleted file mode 100644\n--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
        let files = parse(text);
        assert_eq!(files.len(), 4);
        assert_eq!(files[0].path, "x y");
        assert_eq!(files[0].hunks[0].header(), "@@ -3,1 +3,2 @@");
        assert_eq!(files[0].hunks[0].lines.len(), 3);
        assert_eq!(files[1].change, DiffChangeKind::Moved);
        assert_eq!(
            (files[1].old_path.as_deref(), files[1].path.as_str()),
            (Some("old.txt"), "new.txt")
        );
        assert!(files[2].binary);
        assert_eq!(files[3].change, DiffChangeKind::Deleted);
        assert_eq!(files[3].path, "gone");

        let bare = parse(
            "--- /w/a\n+++ /w/a\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ /w/c\n@@ -0,0 +1 @@\n+c\n",
        );
        assert_eq!(bare.len(), 2);
        assert_eq!(bare[1].change, DiffChangeKind::Added);
        assert_eq!(bare[1].path, "/w/c");
        assert!(parse("garbage\n@@ nonsense\n+x").len() == 1);
    }
}
