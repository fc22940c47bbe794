//! What of each entry is in the scrollback already. The line mode cannot
//! change what it printed, so an entry updated after it was printed (a tool
//! call answered after its permission question, a plan ticked off, a
//! message that goes on after the question) draws only what changed: the
//! parts that differ from what was printed, a growing part's new lines, the
//! text from where the printed text ends, under the entry's head for
//! context. Nothing already on screen is printed twice.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::render::{DIFF_LINES, Line, Part, PartKey};

/// A part's lines as printed: how many, and a hash of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    lines: usize,
    hash: u64,
}

impl Fingerprint {
    fn of(lines: &[Line]) -> Fingerprint {
        let mut hasher = DefaultHasher::new();
        for line in lines {
            line.text.hash(&mut hasher);
            line.style.hash(&mut hasher);
        }
        Fingerprint {
            lines: lines.len(),
            hash: hasher.finish(),
        }
    }
}

/// What one entry left in the scrollback.
#[derive(Debug, Clone, Default)]
pub struct Printed {
    /// Bytes of the entry's text printed that are still the start of its text.
    text_len: usize,
    /// Every other part printed, as it was.
    parts: HashMap<PartKey, Fingerprint>,
}

impl Printed {
    /// The scrollback after an entry whose text is `text_len` bytes was drawn
    /// as `parts` (its text part aside).
    pub fn of(text_len: usize, parts: &[Part]) -> Printed {
        Printed {
            text_len,
            parts: parts
                .iter()
                .filter(|p| p.key != PartKey::Text)
                .map(|p| (p.key, Fingerprint::of(&p.lines)))
                .collect(),
        }
    }

    /// Where the entry's text is to be drawn from: the end of what was printed.
    pub fn text_from(&self) -> usize {
        self.text_len
    }

    /// The entry's text was cut to `len` bytes (the agent rewrote it): when
    /// that cuts into what was printed, the text is drawn whole again.
    pub fn text_cut(&mut self, len: usize) {
        if len < self.text_len {
            self.text_len = 0;
        }
    }

    /// The entry's text was replaced by `new`: unless the printed text is
    /// still its start, it is drawn whole again.
    pub fn text_replaced(&mut self, old: &str, new: &str) {
        let printed = old.as_bytes().get(..self.text_len);
        if printed.is_none() || new.as_bytes().get(..self.text_len) != printed {
            self.text_len = 0;
        }
    }
}

/// Appends the lines to draw for an entry's `parts`: all of them for an
/// entry never printed; else what changed since `printed`, under the head
/// (nothing when nothing changed).
pub fn draw_parts(parts: &[Part], printed: Option<&Printed>, out: &mut Vec<Line>) {
    let mut budget = DIFF_LINES;
    let Some(printed) = printed else {
        for part in parts {
            part.shown_from(0, &mut budget, out);
        }
        return;
    };
    let mut chosen = Vec::new();
    let mut head = None;
    for part in parts {
        let before = printed.parts.get(&part.key);
        let from = match (part.key, before) {
            (PartKey::Text, _) | (_, None) => 0,
            (PartKey::Content, Some(before))
                if before.lines <= part.lines.len()
                    && Fingerprint::of(&part.lines[..before.lines]) == *before =>
            {
                before.lines
            }
            (_, Some(before)) if Fingerprint::of(&part.lines) == *before => part.lines.len(),
            _ => 0,
        };
        if part.key == PartKey::Head {
            head = Some((part, from < part.lines.len()));
        } else if from < part.lines.len() {
            chosen.push((part, from));
        }
    }
    match head {
        Some((part, true)) => part.shown_from(0, &mut budget, out),
        Some((part, false)) if !chosen.is_empty() => match &part.again {
            Some(again) => out.push(again.clone()),
            None => part.shown_from(0, &mut budget, out),
        },
        _ => {}
    }
    for (part, from) in chosen {
        part.shown_from(from, &mut budget, out);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use spindle_engine::{EntryKind, EntryView};

    use super::*;
    use crate::render::{RenderOptions, entry_parts};

    const OPTIONS: RenderOptions = RenderOptions {
        thoughts: true,
        user_messages: true,
    };

    fn entry(kind: EntryKind, text: &str, fields: Value) -> EntryView {
        let Value::Object(fields) = fields else {
            unreachable!()
        };
        EntryView {
            id: "e".into(),
            kind,
            message_id: None,
            turn: Some(1),
            text: text.into(),
            fields,
        }
    }

    /// What the screen shows for `entry` as it is now, after `before` was printed.
    fn drawn_after(before: Option<&EntryView>, now: &EntryView) -> Vec<String> {
        let printed = before.map(|b| {
            let mut p = Printed::of(b.text.len(), &entry_parts(b, OPTIONS, b.text.len()));
            p.text_replaced(&b.text, &now.text);
            p
        });
        let from = printed.as_ref().map_or(0, Printed::text_from);
        let mut out = Vec::new();
        draw_parts(&entry_parts(now, OPTIONS, from), printed.as_ref(), &mut out);
        out.into_iter().map(|l| l.text).collect()
    }

    fn edit_call(status: &str, permission: Value, write: Option<&str>) -> EntryView {
        let mut diff = json!({"path": "/w/a.rs", "change": "modify", "hunks": [
            {"header": "@@ -1 +1 @@", "lines": ["-old", "+new"]}]});
        if let Some(status) = write {
            diff["write"] = json!({"requestId": 3, "status": status});
        }
        entry(
            EntryKind::ToolCall,
            "",
            json!({
                "toolCall": {"title": "Edit a.rs", "kind": "edit", "status": status},
                "permission": permission,
                "diffs": [diff],
            }),
        )
    }

    fn plan(statuses: [&str; 3]) -> EntryView {
        let items: Vec<Value> = ["Read", "Edit", "Sum up"]
            .iter()
            .zip(statuses)
            .map(|(c, s)| json!({"content": c, "status": s}))
            .collect();
        entry(EntryKind::Plan, "", json!({"plan": {"entries": items}}))
    }

    #[test]
    fn an_entry_updated_after_it_was_printed_shows_only_what_changed() {
        let waiting = json!({"outcome": null, "options": [{"optionId": "allow", "name": "Allow"}]});
        let answered = json!({"outcome": {"outcome": "selected", "optionId": "allow"},
                              "options": [{"optionId": "allow", "name": "Allow"}]});
        let message = |text: &str| entry(EntryKind::AgentMessage, text, json!({}));
        let thought = |text: &str| entry(EntryKind::AgentThought, text, json!({}));
        // (printed, now, drawn now).
        let cases: Vec<(Option<EntryView>, EntryView, Vec<&str>)> = vec![
            // Never printed: all of it.
            (
                None,
                edit_call("pending", waiting.clone(), None),
                vec![
                    "[tool] Edit a.rs (edit) - pending",
                    "    permission: waiting for an answer",
                    "    edit /w/a.rs",
                    "    @@ -1 +1 @@",
                    "    -old",
                    "    +new",
                ],
            ),
            // Answered and completed: the new head and permission, not the diff again.
            (
                Some(edit_call("pending", waiting.clone(), None)),
                edit_call("completed", answered.clone(), None),
                vec![
                    "[tool] Edit a.rs (edit) - completed",
                    "    permission: answered Allow",
                ],
            ),
            // A client write: its outcome, not its diff again.
            (
                Some(edit_call("in_progress", waiting.clone(), Some("pending"))),
                edit_call("in_progress", waiting.clone(), Some("written")),
                vec![
                    "[tool] Edit a.rs (edit) - in_progress",
                    "    edit /w/a.rs (written)",
                ],
            ),
            // Nothing visible changed: nothing.
            (
                Some(edit_call("completed", answered.clone(), None)),
                edit_call("completed", answered, None),
                vec![],
            ),
            // A plan ticked off: the items that changed, under "[plan updated]".
            (
                Some(plan(["completed", "in_progress", "pending"])),
                plan(["completed", "completed", "completed"]),
                vec!["[plan updated]", "  [x] Edit", "  [x] Sum up"],
            ),
            // A message that goes on: only the new text.
            (
                Some(message("I will edit it. ")),
                message("I will edit it. Done: the greeting changed.\nBye."),
                vec!["Done: the greeting changed.", "Bye."],
            ),
            // Cut inside a word: marked.
            (
                Some(message("Reading the fi")),
                message("Reading the file now."),
                vec!["\u{2026}le now."],
            ),
            // After a finished line: the next lines.
            (
                Some(thought("first\n")),
                thought("first\nsecond"),
                vec!["thought | second"],
            ),
            // Rewritten under what was printed: all of it again.
            (
                Some(message("Draft answer.")),
                message("Final answer."),
                vec!["Final answer."],
            ),
        ];
        for (before, now, expected) in cases {
            assert_eq!(drawn_after(before.as_ref(), &now), expected, "{now:?}");
        }
    }

    #[test]
    fn tool_output_that_grows_shows_its_new_lines_under_the_head() {
        let call = |output: &str| {
            entry(
                EntryKind::ToolCall,
                "",
                json!({"toolCall": {"title": "ls", "status": "in_progress", "content": [
                    {"type": "content", "content": {"type": "text", "text": output}}]}}),
            )
        };
        assert_eq!(
            drawn_after(Some(&call("a\nb")), &call("a\nb\nc")),
            vec!["[tool] ls - in_progress", "    c"]
        );
        // Replaced rather than grown: all of it.
        assert_eq!(
            drawn_after(Some(&call("a\nb")), &call("x\ny")),
            vec!["[tool] ls - in_progress", "    x", "    y"]
        );
        let mut cut = Printed::of(10, &[]);
        cut.text_cut(4);
        assert_eq!(cut.text_from(), 0);
    }
}
