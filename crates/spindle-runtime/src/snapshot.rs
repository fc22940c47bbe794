//! What a page receives of a long session: the tail first, the rest on demand, and live
//! batches coalesced when the stream is fast.
//!
//! - [`tail_json`]: the `reset` payload. The session info, commands, usage, the last
//!   [`TAIL_ENTRIES`] entries (with their real timeline indexes), the state and the server's
//!   view facts. When older entries exist, a `web_window` op says how many (`first`: the index of
//!   the first entry sent; `total`: the timeline's length), and the newest plan among them is sent
//!   too (the plan pane shows the latest plan whatever its age).
//! - [`entries_page_json`]: older entries, a page at a time, for
//!   `GET /api/sessions/{id}/entries?before=INDEX&limit=N`, with the id of the last batch the
//!   page includes (`event`), so that the page knows which live ops it already holds.
//! - [`merge_batches`]: several published batches as one SSE frame: their ops joined in order,
//!   and `batches` saying which ops came from which batch (`[counter, op count]`).

use std::fmt::Write as _;

use serde_json::Value;
use spindle_engine::{EntryKind, RenderOp, TranscriptEngine};

use crate::hub::EventId;

/// How many entries a reset snapshot carries: more than a screenful on a tall screen.
pub const TAIL_ENTRIES: usize = 60;

/// The largest page of older entries one request gets.
pub const MAX_PAGE: usize = 500;

/// Appends `op` to the JSON array being written in `out` (an op that does not serialize is left
/// out, as the full snapshot does).
fn push_op(out: &mut Vec<u8>, first: &mut bool, op: &impl serde::Serialize) {
    let at = out.len();
    if !*first {
        out.push(b',');
    }
    match serde_json::to_writer(&mut *out, op) {
        Ok(()) => *first = false,
        Err(_) => out.truncate(at),
    }
}

/// The `reset` payload of a page: see the module documentation. Written op by op.
pub fn tail_json(engine: &TranscriptEngine, extra: &[Value], tail: usize) -> String {
    let t = engine.transcript();
    let total = t.entries.len();
    let first = total.saturating_sub(tail);
    let mut out = b"{\"ops\":[".to_vec();
    let mut started = true;
    push_op(
        &mut out,
        &mut started,
        &RenderOp::SetSessionInfo {
            info: t.session_info.clone(),
        },
    );
    if let Some(commands) = &t.commands {
        let op = RenderOp::SetCommands {
            commands: commands.clone(),
        };
        push_op(&mut out, &mut started, &op);
    }
    if let Some(usage) = &t.usage {
        let op = RenderOp::SetUsage {
            usage: usage.clone(),
        };
        push_op(&mut out, &mut started, &op);
    }
    if first > 0 {
        let window = crate::page_ops::PageOp::WebWindow { first, total }.to_value();
        push_op(&mut out, &mut started, &window);
        let plan = t.entries[..first]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, entry)| entry.kind == EntryKind::Plan);
        if let Some((index, entry)) = plan {
            let op = RenderOp::InsertEntry {
                index,
                entry: entry.view(),
            };
            push_op(&mut out, &mut started, &op);
        }
    }
    for (index, entry) in t.entries.iter().enumerate().skip(first) {
        let op = RenderOp::InsertEntry {
            index,
            entry: entry.view(),
        };
        push_op(&mut out, &mut started, &op);
    }
    push_op(
        &mut out,
        &mut started,
        &RenderOp::SetState {
            state: t.state.clone(),
        },
    );
    for op in extra {
        push_op(&mut out, &mut started, op);
    }
    out.extend_from_slice(b"]}");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Up to `limit` entries (at most [`MAX_PAGE`], at least 1) ending before `before` (default: the
/// end): `{"total", "first", "event", "entries": [{"index", "entry"}]}`. `event` is the id of the
/// last batch published when the page was cut (`last`).
pub fn entries_page_json(
    engine: &TranscriptEngine,
    last: EventId,
    before: Option<usize>,
    limit: usize,
) -> String {
    let entries = &engine.transcript().entries;
    let total = entries.len();
    let end = before.unwrap_or(total).min(total);
    let first = end.saturating_sub(limit.clamp(1, MAX_PAGE));
    let mut out = Vec::new();
    let _ = write!(
        Writer(&mut out),
        "{{\"total\":{total},\"first\":{first},\"event\":\"{last}\",\"entries\":["
    );
    let mut started = true;
    for (index, entry) in entries.iter().enumerate().take(end).skip(first) {
        let item = serde_json::json!({ "index": index, "entry": entry.view() });
        push_op(&mut out, &mut started, &item);
    }
    out.extend_from_slice(b"]}");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// `fmt::Write` into a byte buffer.
struct Writer<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

const OPS_PREFIX: &str = "{\"ops\":[";
const OPS_SUFFIX: &str = "]}";

/// How many elements the body of a JSON array (the text between its brackets) holds: commas at
/// the top level, outside strings, plus one unless it is empty. A string's plain runs are skipped
/// eight bytes at a time (most of a batch is the text its ops carry).
fn array_len(body: &str) -> usize {
    let b = body.as_bytes();
    let mut depth = 0usize;
    let mut commas = 0;
    let mut any = false;
    let mut i = 0;
    while i < b.len() {
        let byte = b[i];
        match byte {
            b'"' => {
                i += 1;
                loop {
                    i = spindle_wire::scan::find_special(b, i);
                    match b.get(i) {
                        Some(b'"') | None => break,
                        // An escape and the byte it escapes.
                        Some(b'\\') => i += 2,
                        // A control byte (not JSON): content all the same.
                        Some(_) => i += 1,
                    }
                }
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => commas += 1,
            _ => {}
        }
        if !byte.is_ascii_whitespace() {
            any = true;
        }
        i += 1;
    }
    if any { commas + 1 } else { 0 }
}

/// Several batches (`{"ops":[...]}` payloads with their counters, in order) as one payload:
/// `{"ops":[all of them],"batches":[[counter, op count], ...]}`. `None` when a payload is not of
/// that shape (it is then sent on its own).
pub fn merge_batches(batches: &[(u64, &str)]) -> Option<String> {
    let mut ops = String::from(OPS_PREFIX);
    let mut marks = String::new();
    let mut first = true;
    for (counter, data) in batches {
        let body = data.strip_prefix(OPS_PREFIX)?.strip_suffix(OPS_SUFFIX)?;
        let count = array_len(body);
        if count > 0 {
            if !first {
                ops.push(',');
            }
            ops.push_str(body);
            first = false;
        }
        if !marks.is_empty() {
            marks.push(',');
        }
        let _ = write!(marks, "[{counter},{count}]");
    }
    let _ = write!(ops, "],\"batches\":[{marks}]}}");
    Some(ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_engine::EngineConfig;

    fn engine_with(messages: usize) -> TranscriptEngine {
        let mut engine = TranscriptEngine::new(EngineConfig::default());
        for n in 0..messages {
            let line = serde_json::json!({
                "jsonrpc": "2.0", "method": "session/update",
                "params": { "sessionId": "s", "update": {
                    "sessionUpdate": "agent_message_chunk", "messageId": format!("m{n}"),
                    "content": { "type": "text", "text": format!("message {n}") } } },
            });
            engine.apply_agent_line(&line.to_string());
        }
        engine
    }

    fn ops(json: &str) -> Vec<Value> {
        let value: Value = serde_json::from_str(json).unwrap();
        value["ops"].as_array().unwrap().clone()
    }

    #[test]
    fn a_short_session_is_sent_whole_without_a_window() {
        let engine = engine_with(3);
        let extra = [serde_json::json!({"op": "web_banner", "text": "x"})];
        let written = ops(&tail_json(&engine, &extra, 10));
        let mut expected: Vec<Value> = engine
            .render_snapshot()
            .iter()
            .map(|op| serde_json::to_value(op).unwrap())
            .collect();
        expected.extend(extra);
        assert_eq!(written, expected);
    }

    #[test]
    fn a_long_session_sends_its_tail_with_real_indexes_and_the_count() {
        let engine = engine_with(50);
        let written = ops(&tail_json(&engine, &[], 10));
        let window = written.iter().find(|op| op["op"] == "web_window").unwrap();
        assert_eq!(window["first"], 40);
        assert_eq!(window["total"], 50);
        let inserted: Vec<(u64, String)> = written
            .iter()
            .filter(|op| op["op"] == "insert_entry")
            .map(|op| {
                let text = op["entry"]["text"].as_str().unwrap().to_string();
                (op["index"].as_u64().unwrap(), text)
            })
            .collect();
        assert_eq!(inserted.len(), 10);
        assert_eq!(inserted[0], (40, "message 40".to_string()));
        assert_eq!(inserted[9], (49, "message 49".to_string()));
        assert_eq!(written.last().unwrap()["op"], "set_state");
    }

    #[test]
    fn pages_of_older_entries_end_before_the_index_asked() {
        let engine = engine_with(30);
        let last = EventId {
            generation: 4,
            counter: 9,
        };
        let page: Value =
            serde_json::from_str(&entries_page_json(&engine, last, Some(20), 5)).unwrap();
        assert_eq!(page["total"], 30);
        assert_eq!(page["first"], 15);
        assert_eq!(page["event"], "4-9");
        let entries = page["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 5);
        assert_eq!(entries[0]["index"], 15);
        assert_eq!(entries[4]["entry"]["text"], "message 19");
        // Past the end, a zero limit, a huge limit: clamped, never an error.
        let page: Value =
            serde_json::from_str(&entries_page_json(&engine, last, Some(99), 0)).unwrap();
        assert_eq!(page["first"], 29);
        let page: Value =
            serde_json::from_str(&entries_page_json(&engine, last, None, usize::MAX)).unwrap();
        assert_eq!(page["entries"].as_array().unwrap().len(), 30);
        let page: Value =
            serde_json::from_str(&entries_page_json(&engine, last, Some(0), 10)).unwrap();
        assert_eq!(page["entries"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn merged_batches_keep_every_op_in_order_and_say_where_each_batch_ends() {
        let a = r#"{"ops":[{"op":"append_text","id":"x","text":"a,]}\"["},{"op":"set_state","state":{}}]}"#;
        let b = r#"{"ops":[]}"#;
        let c = r#"{"ops":[{"op":"notice","title":"{[,"}]}"#;
        let merged = merge_batches(&[(3, a), (4, b), (5, c)]).unwrap();
        let value: Value = serde_json::from_str(&merged).unwrap();
        let ops = value["ops"].as_array().unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[0]["text"], "a,]}\"[");
        assert_eq!(ops[2]["title"], "{[,");
        assert_eq!(
            value["batches"],
            serde_json::json!([[3, 2], [4, 0], [5, 1]])
        );
        assert_eq!(merge_batches(&[(1, "not ops")]), None);
    }

    #[test]
    fn an_array_body_counts_its_top_level_elements_whatever_its_strings_hold() {
        let bodies = [
            "",
            "  ",
            "1",
            r#"{"op":"append_text","id":"e1","text":"a, b [c] {d}"}"#,
            r#"{"text":"escaped \" quote, and \\"},{"text":"\\\""}"#,
            r#"[1,[2,3]],{"a":{"b":[4,5]}},"x,y""#,
            r#"{"text":"long plain text without specials, long enough for words"},2,3"#,
            r#" 1 , 2 "#,
        ];
        for body in bodies {
            let expected = serde_json::from_str::<Vec<Value>>(&format!("[{body}]"))
                .unwrap()
                .len();
            assert_eq!(array_len(body), expected, "{body}");
        }
    }
}
