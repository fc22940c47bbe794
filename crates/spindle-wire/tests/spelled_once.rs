//! Each string of the wire vocabulary is spelled once in non-test code: in
//! spindle-wire. This walks every other crate's `src/` (the code before its
//! first `#[cfg(test)]`) and fails on a string literal equal to a vocabulary
//! string, so a copy that could drift from the vocabulary cannot come back.
//!
//! Words that are also ordinary field names or values with another meaning
//! (`"type"`, `"kind"`, `"plan"` as a field, `"tool_call"` as a permission
//! subject, `"notice"` and `"snapshot"` as scenario names, ...) are not
//! checked; every tag, extension name, routing field and distinctive `_meta`
//! key is.

use std::path::{Path, PathBuf};

use spindle_wire::extensions::Extension;
use spindle_wire::routing::{ANNOTATIONS_FIELD, CONTENT_FIELDS, THOUGHT_LABELS, UPDATE_FIELDS};
use spindle_wire::tags::UpdateTag;

/// Vocabulary words that are also ordinary JSON field names or values.
const ALSO_ORDINARY_WORDS: &[&str] = &[
    "plan",
    "tool_call",
    "notice",
    "kind",
    "segment",
    "think",
    "thought",
    "type",
];

fn vocabulary() -> Vec<&'static str> {
    let mut words: Vec<&'static str> = UpdateTag::ALL.iter().map(|t| t.as_str()).collect();
    words.extend(Extension::ALL.iter().map(|e| e.name()));
    words.extend(UPDATE_FIELDS);
    words.extend(CONTENT_FIELDS);
    words.extend(THOUGHT_LABELS);
    words.push(ANNOTATIONS_FIELD);
    words.push(spindle_wire::meta::CLAUDE_CODE_META_KEY);
    words.push(spindle_wire::meta::CLEAR_BOUNDARY_FLAG);
    words.retain(|w| !ALSO_ORDINARY_WORDS.contains(w));
    words.sort_unstable();
    words.dedup();
    words
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            // A `tests.rs` is a unit-test module (`#[cfg(test)] mod tests;`): test code.
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

#[test]
fn every_vocabulary_string_is_spelled_only_in_spindle_wire() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("crates/").flatten() {
        if entry.file_name() != "spindle-wire" {
            rust_files(&entry.path().join("src"), &mut files);
        }
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let words = vocabulary();
    assert!(words.contains(&"agent_message_chunk") && words.contains(&"clearBoundary"));
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for word in &words {
                if line.contains(&format!("\"{word}\"")) {
                    found.push(format!("{}:{}: {word}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "vocabulary strings spelled outside spindle-wire (use its constants):\n{}",
        found.join("\n")
    );
}
