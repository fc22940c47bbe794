//! v2 diff content (`{changes, patch}`) as v1 diff items (`{path, oldText?,
//! newText}`), value-level and stateless: each text hunk of an added or
//! modified file becomes one v1 diff item (its old and new side); what v1
//! cannot say (a deletion, a move or copy, a binary or text-less change, a
//! diff without git patch text) is returned as [`DiffPart::NoV1Form`] with
//! the section of the patch it came from, for the caller's policy.

use serde_json::{Map, Value, json};
use spindle_wire::meta::{META_KEY, SPINDLE_META_KEY};

/// One change of a v2 diff, as v1 sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DiffPart {
    /// v1 diff items, one per hunk, in patch order.
    Items(Vec<Value>),
    /// No v1 diff form: why, and the text the degrade fallback shows.
    NoV1Form { reason: String, text: String },
}

/// Whether a tool-content item is already a v1 diff (`path` + `newText`, no
/// `changes`): v2 does not define it, v1 does, so it passes as is.
pub(crate) fn is_v1_diff(item: &Map<String, Value>) -> bool {
    item.get("path").is_some_and(Value::is_string)
        && item.get("newText").is_some_and(Value::is_string)
        && !item.contains_key("changes")
}

/// The v1 form of each change of the v2 diff `item`, in `changes` order.
pub(crate) fn diff_v2_to_v1(item: &Map<String, Value>) -> Vec<DiffPart> {
    let changes: Vec<&Map<String, Value>> = item
        .get("changes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect();
    let patch = item.get("patch").and_then(Value::as_object);
    let format = patch.and_then(|p| p.get("format")).and_then(Value::as_str);
    let text = patch.and_then(|p| p.get("text")).and_then(Value::as_str);
    let meta = item.get(META_KEY).filter(|m| m.is_object());
    if changes.is_empty() {
        return vec![DiffPart::NoV1Form {
            reason: "a diff without changes".into(),
            text: text.unwrap_or("").to_owned(),
        }];
    }
    let sections = match (format, text) {
        (Some("git_patch"), Some(t)) => parse_git_patch(t),
        _ => Vec::new(),
    };
    let one_change = changes.len() == 1;
    changes
        .into_iter()
        .map(|change| change_to_v1(change, one_change, (format, text), &sections, meta))
        .collect()
}

fn change_to_v1(
    change: &Map<String, Value>,
    one_change: bool,
    (format, patch_text): (Option<&str>, Option<&str>),
    sections: &[Section],
    meta: Option<&Value>,
) -> DiffPart {
    let path = change.get("path").and_then(Value::as_str).unwrap_or("");
    let operation = change
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or("");
    // A bare hunk list (no file headers) belongs to the diff's one change.
    let section = sections
        .iter()
        .find(|s| s.path == path)
        .or_else(|| relative_section(sections, path))
        .or(match sections {
            [only] if only.path.is_empty() && one_change => Some(only),
            _ => None,
        });
    let no_form = |reason: String| DiffPart::NoV1Form {
        text: section
            .map(|s| s.text.clone())
            .or_else(|| patch_text.map(str::to_owned))
            .unwrap_or_else(|| format!("{operation} {path}")),
        reason: format!("v2 diff of {path} ({operation}): {reason}"),
    };
    if !matches!(operation, "add" | "modify") {
        return no_form("v1 diffs only add or modify one file".into());
    }
    match format {
        Some("git_patch") => {}
        Some(other) => return no_form(format!("patch format {other:?}")),
        None => return no_form("no patch text".into()),
    }
    let Some(section) = section else {
        return no_form("no patch section for this path".into());
    };
    if section.binary {
        return no_form("binary patch".into());
    }
    if section.malformed {
        return no_form("a hunk shorter than its header says".into());
    }
    if section.hunks.is_empty() {
        return no_form("no text hunks".into());
    }
    let add = operation == "add";
    let whole = section.hunks.len() == 1 && (add || section.hunks[0].old_start <= 1);
    let items = section
        .hunks
        .iter()
        .map(|h| {
            let mut d = Map::new();
            d.insert("type".into(), "diff".into());
            d.insert("path".into(), path.into());
            if !add {
                d.insert("oldText".into(), h.old_text.clone().into());
            }
            d.insert("newText".into(), h.new_text.clone().into());
            let mut m = meta.cloned().unwrap_or_else(|| json!({}));
            if !whole {
                // Where the hunk sits: v1 has no field for it.
                m[SPINDLE_META_KEY]["hunk"] = h.header.clone().into();
            }
            if m.as_object().is_some_and(|o| !o.is_empty()) {
                d.insert(META_KEY.into(), m);
            }
            Value::Object(d)
        })
        .collect();
    DiffPart::Items(items)
}

/// The one section whose relative path (git's `a/` / `b/` prefix or not)
/// ends the absolute `path`: agents that write repository-relative patches
/// although v2 asks for absolute paths.
fn relative_section<'a>(sections: &'a [Section], path: &str) -> Option<&'a Section> {
    let mut found = sections.iter().filter(|s| {
        let p = s.path.as_str();
        let bare = p.strip_prefix("a/").or(p.strip_prefix("b/")).unwrap_or(p);
        !p.is_empty()
            && !p.starts_with('/')
            && [p, bare].iter().any(|rel| {
                path.strip_suffix(rel)
                    .is_some_and(|head| head.ends_with('/'))
            })
    });
    let one = found.next()?;
    found.next().is_none().then_some(one)
}

/// One `diff --git` section of a git patch.
#[derive(Debug, Default)]
struct Section {
    path: String,
    text: String,
    binary: bool,
    malformed: bool,
    hunks: Vec<Hunk>,
}

#[derive(Debug)]
struct Hunk {
    header: String,
    old_start: u64,
    old_text: String,
    new_text: String,
}

/// The sections of a git patch; a patch without `diff --git` lines (a bare
/// unified diff) is read as one section.
fn parse_git_patch(text: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let body = line.trim_end_matches(['\n', '\r']);
        if body.starts_with("diff --git ") || sections.is_empty() {
            let mut s = Section::default();
            if let Some(rest) = body.strip_prefix("diff --git ") {
                s.path = git_header_path(rest);
            }
            sections.push(s);
        }
        let s = sections.last_mut().expect("a section was just pushed");
        s.text.push_str(line);
        if let Some(p) = body.strip_prefix("+++ ") {
            if let Some(p) = side_path(p) {
                s.path = p;
            }
        } else if let Some(p) = body.strip_prefix("--- ") {
            if let Some(p) = side_path(p)
                && s.path.is_empty()
            {
                s.path = p;
            }
        } else if body.starts_with("Binary files ") || body == "GIT binary patch" {
            s.binary = true;
        } else if body.starts_with("@@ ") {
            let (old_start, mut old_left, mut new_left) = hunk_counts(body);
            let mut h = Hunk {
                header: body.to_owned(),
                old_start,
                old_text: String::new(),
                new_text: String::new(),
            };
            while old_left + new_left > 0 {
                let Some(next) = lines.peek() else { break };
                let l = next.trim_end_matches(['\n', '\r']);
                let (mark, content) = l.split_at(l.len().min(1));
                let to_old = matches!(mark, " " | "" | "-");
                let to_new = matches!(mark, " " | "" | "+");
                if !to_old && !to_new {
                    break;
                }
                s.text.push_str(next);
                lines.next();
                if to_old {
                    push_line(&mut h.old_text, content);
                    old_left = old_left.saturating_sub(1);
                }
                if to_new {
                    push_line(&mut h.new_text, content);
                    new_left = new_left.saturating_sub(1);
                }
                // "\ No newline at end of file" ends the side just written.
                if let Some(marker) = lines.peek()
                    && marker.starts_with('\\')
                {
                    s.text.push_str(marker);
                    lines.next();
                    if to_old && !to_new {
                        h.old_text.pop();
                    } else if to_new && !to_old {
                        h.new_text.pop();
                    } else {
                        h.old_text.pop();
                        h.new_text.pop();
                    }
                }
            }
            s.malformed |= old_left + new_left > 0;
            s.hunks.push(h);
        }
    }
    sections
}

fn push_line(side: &mut String, content: &str) {
    side.push_str(content);
    side.push('\n');
}

/// `@@ -a[,b] +c[,d] @@` -> (a, b, d); a missing count is 1.
fn hunk_counts(header: &str) -> (u64, u64, u64) {
    let mut parts = header.split_whitespace().skip(1);
    let side = |p: Option<&str>, sign: char| -> (u64, u64) {
        let Some(range) = p.and_then(|p| p.strip_prefix(sign)) else {
            return (0, 0);
        };
        let mut it = range.splitn(2, ',');
        let start = it.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let count = it.next().map_or(Some(1), |n| n.parse().ok()).unwrap_or(0);
        (start, count)
    };
    let (old_start, old_count) = side(parts.next(), '-');
    let (_, new_count) = side(parts.next(), '+');
    (old_start, old_count, new_count)
}

/// The path of a `---` / `+++` line; None for `/dev/null`. Git's `a/` / `b/`
/// prefixes are dropped when an absolute path follows them.
fn side_path(raw: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or(raw).trim_end();
    if raw == "/dev/null" {
        return None;
    }
    Some(strip_side_prefix(raw).to_owned())
}

fn strip_side_prefix(path: &str) -> &str {
    match path.get(..2) {
        Some("a/" | "b/") if path[2..].starts_with('/') => &path[2..],
        _ => path,
    }
}

/// The new path of `diff --git OLD NEW` (paths without spaces, or the same
/// path twice).
fn git_header_path(rest: &str) -> String {
    let half = rest.len() / 2;
    if rest.len() % 2 == 1 && rest.as_bytes()[half] == b' ' && rest[..half] == rest[half + 1..] {
        return strip_side_prefix(&rest[half + 1..]).to_owned();
    }
    rest.rsplit(' ')
        .next()
        .map_or_else(String::new, |p| strip_side_prefix(p).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(item: Value) -> Vec<DiffPart> {
        diff_v2_to_v1(item.as_object().unwrap())
    }

    #[test]
    fn a_hunk_becomes_old_and_new_text_and_no_newline_markers_are_kept() {
        let patch = "diff --git /w/a /w/a\n--- /w/a\n+++ /w/a\n@@ -1,2 +1,2 @@\n keep\n-old\n\\ No newline at end of file\n+new\n\\ No newline at end of file\n";
        let got = parts(
            json!({"type":"diff","changes":[{"operation":"modify","path":"/w/a"}],
            "patch":{"format":"git_patch","text":patch}}),
        );
        assert_eq!(
            got,
            vec![DiffPart::Items(vec![
                json!({"type":"diff","path":"/w/a","oldText":"keep\nold","newText":"keep\nnew"})
            ])]
        );
    }

    #[test]
    fn an_empty_context_line_and_a_blank_line_stay_in_the_hunk() {
        let patch = "--- a//w/a\n+++ b//w/a\n@@ -4,3 +4,3 @@ fn x\n a\n\n-b\n+c\n";
        let got = parts(
            json!({"type":"diff","changes":[{"operation":"modify","path":"/w/a"}],
            "patch":{"format":"git_patch","text":patch}}),
        );
        let DiffPart::Items(items) = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!(items[0]["oldText"], "a\n\nb\n");
        assert_eq!(items[0]["newText"], "a\n\nc\n");
        assert_eq!(items[0]["_meta"]["spindle"]["hunk"], "@@ -4,3 +4,3 @@ fn x");
    }

    #[test]
    fn a_repository_relative_patch_matches_the_absolute_change_path() {
        let patch = "diff --git a/src/m.rs b/src/m.rs\n--- a/src/m.rs\n+++ b/src/m.rs\n@@ -1 +1 @@\n-a\n+b\n";
        let got = parts(
            json!({"type":"diff","changes":[{"operation":"modify","path":"/w/src/m.rs"}],
            "patch":{"format":"git_patch","text":patch}}),
        );
        assert_eq!(
            got,
            vec![DiffPart::Items(vec![
                json!({"type":"diff","path":"/w/src/m.rs","oldText":"a\n","newText":"b\n"})
            ])]
        );
    }
}
