//! `spindle serve`'s rendered markdown over real HTTP: a finished reply's tree (highlighted code,
//! raw HTML and a `javascript:` link as text), the batch and single routes, and their refusals.

use serde_json::{Value, json};

use crate::harness::TempDir;
use crate::serve_support::{Served, reference_agent_with, start_serve, temp_dir};

const REPLY: &str = "Look:\n\n```rust\nfn main() { let x = 1; }\n```\n\n<script>alert(1)</script>\n\n[go](javascript:alert(2)) and [docs](https://example.com)\n";

/// A script whose one turn streams `REPLY` (in two chunks) as the message `id`, after a tool call.
fn script(dir: &TempDir, id: &str) -> String {
    let (first, second) = REPLY.split_at(20);
    let lines = [
        json!({"wait_for_prompt": true}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "look", "status": "completed"}),
        json!({"sessionUpdate": "agent_message_chunk", "messageId": id, "content": {"type": "text", "text": first}}),
        json!({"sessionUpdate": "agent_message_chunk", "messageId": id, "content": {"type": "text", "text": second}}),
        json!({"end_turn": "end_turn"}),
    ];
    let path = dir.join("markdown.script.jsonl");
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path.to_string_lossy().into_owned()
}

fn served_with_reply(name: &str, message_id: &str) -> (TempDir, Served, i64) {
    let dir = temp_dir(name);
    let script = script(&dir, message_id);
    let served = start_serve(
        &dir.join("db.sqlite"),
        &[],
        &reference_agent_with(2, &["--script", &script]),
        None,
        &[],
    );
    let session = served.create_session();
    served.prompt(session, "show me");
    served.wait_finished_turns(session, 1);
    (dir, served, session)
}

/// Every string of a tree, joined (text nodes, tag names and attribute values alike).
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[test]
fn a_finished_reply_is_rendered_safely_by_the_batch_and_single_routes() {
    // A message id that needs escaping in a path segment.
    let message_id = "md reply/1";
    let (_dir, served, session) = served_with_reply("markdown", message_id);
    let body = json!({"entries": [message_id, "call_1", "nope", message_id]}).to_string();
    let response = served.post_json(&format!("/api/sessions/{session}/rendered"), &body);
    assert_eq!(response.status, 200, "{}", response.body);
    let answer: Value = serde_json::from_str(&response.body).unwrap();
    let rendered = answer["rendered"].as_array().unwrap();
    assert_eq!(
        rendered.len(),
        1,
        "a repeated id is answered once: {answer}"
    );
    assert_eq!(rendered[0]["id"], message_id);
    assert_eq!(rendered[0]["length"], REPLY.encode_utf16().count());
    assert_eq!(
        answer["refused"],
        json!([
            {"id": "call_1", "reason": "a tool_call entry has no markdown"},
            {"id": "nope", "reason": "no entry has this id"},
        ])
    );
    let tree = &rendered[0]["tree"];
    let tree_text = tree.to_string();
    assert!(
        tree_text.contains(r#"["span",{"class":"hl-keyword"},"fn"]"#),
        "{tree_text}"
    );
    assert!(
        tree_text.contains(r#"["p",{},"<script>alert(1)</script>"]"#),
        "{tree_text}"
    );
    assert!(
        tree_text.contains(r#""go (javascript:alert(2)) and ""#),
        "{tree_text}"
    );
    assert!(
        tree_text.contains(r#"["a",{"href":"https://example.com"},"docs"]"#),
        "{tree_text}"
    );
    let mut all = Vec::new();
    strings(tree, &mut all);
    assert!(
        !all.iter()
            .any(|s| s == "script" || s.starts_with("javascript"))
    );

    // The single route gives the same tree; the id is one percent-encoded path segment.
    let single = served.get_json(&format!(
        "/api/sessions/{session}/entries/md%20reply%2F1/rendered"
    ));
    assert_eq!(single["tree"], *tree);
    assert_eq!(single["length"], rendered[0]["length"]);
}

#[test]
fn the_rendered_routes_refuse_bad_requests_with_a_reason() {
    let (_dir, served, session) = served_with_reply("markdown-refusals", "m1");
    let batch = format!("/api/sessions/{session}/rendered");
    let too_many: Vec<String> = (0..201).map(|n| format!("e{n}")).collect();
    let cases = [
        (
            served.post_json(&batch, &json!({"entries": too_many}).to_string()),
            400,
            "at most 200 entries",
        ),
        (served.post_json(&batch, "{\"entries\": 5}"), 422, "must be"),
        (served.post_json(&batch, "not json"), 400, "not valid JSON"),
        (
            served.post_json("/api/sessions/x/rendered", "{\"entries\": []}"),
            400,
            "must be a number",
        ),
        (
            served.post_json("/api/sessions/999/rendered", "{\"entries\": []}"),
            404,
            "",
        ),
        (
            served.request(
                "GET",
                &format!("/api/sessions/{session}/entries/call_1/rendered"),
                None,
            ),
            400,
            "has no markdown",
        ),
        (
            served.request(
                "GET",
                &format!("/api/sessions/{session}/entries/nope/rendered"),
                None,
            ),
            404,
            "no entry has this id",
        ),
    ];
    for (n, (response, status, reason)) in cases.into_iter().enumerate() {
        assert_eq!(response.status, status, "case {n}: {}", response.body);
        assert!(
            response.body.contains(reason),
            "case {n}: {}",
            response.body
        );
    }
    // The session goes on: an empty batch is answered.
    let empty = served.post_json(&batch, "{\"entries\": []}");
    assert_eq!(empty.status, 200);
    assert_eq!(empty.body, r#"{"rendered":[],"refused":[]}"#);
}
