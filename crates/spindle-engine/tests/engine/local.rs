//! Local lines (client terminals, file writes) and the client's own
//! services on display: live and replay agree, answers update the diff,
//! an agent cannot pass a local line off as its own.

use serde_json::{Value, json};
use spindle_engine::{EngineConfig, EntryBody, ToolCall, TranscriptEngine, WriteStatus};

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn tool<'a>(engine: &'a TranscriptEngine, id: &str) -> &'a ToolCall {
    match &engine.transcript().entry(id).unwrap().body {
        EntryBody::ToolCall(tc) => tc,
        other => panic!("{id} is not a tool call: {other:?}"),
    }
}

#[test]
fn live_feeding_and_replay_build_the_same_transcript() {
    for name in [
        "24_client_terminal_output_ops.jsonl",
        "24_client_fs_write_accepted_ops.jsonl",
        "24_client_fs_write_rejected_ops.jsonl",
        "25_client_write_repeats_shown_diff_ops.jsonl",
        "25_client_write_differs_from_shown_diff_ops.jsonl",
    ] {
        let input = fixture(name);
        let mut replayed = TranscriptEngine::new(EngineConfig::default());
        let mut live = TranscriptEngine::new(EngineConfig::default());
        for line in input.lines() {
            replayed.apply_recorded_line(line);
            let value: Value = serde_json::from_str(line).unwrap();
            if let Some(sent) = value.get("sent") {
                live.apply_client_line(&sent.to_string());
            } else if value.get("local").is_some() {
                live.apply_local_line(line);
            } else {
                live.apply_agent_line(line);
            }
        }
        assert_eq!(live.transcript(), replayed.transcript(), "{name}");
        assert!(!live.transcript().entries.is_empty());
    }
}

fn started() -> TranscriptEngine {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    e.apply_client_line(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}})
        .to_string(),
    );
    e
}

fn update(e: &mut TranscriptEngine, u: Value) {
    e.apply_agent_line(
        &json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}})
            .to_string(),
    );
}

fn write_request(e: &mut TranscriptEngine, id: u64, path: &str, content: &str) {
    e.apply_agent_line(
        &json!({"jsonrpc": "2.0", "id": id, "method": "fs/write_text_file",
            "params": {"sessionId": "s", "path": path, "content": content}})
        .to_string(),
    );
}

#[test]
fn the_text_before_may_come_after_the_answer() {
    let mut e = started();
    update(
        &mut e,
        json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Edit", "status": "pending"}),
    );
    write_request(&mut e, 5, "/w/a.txt", "new\n");
    let w = &tool(&e, "c").client_writes()[0];
    assert_eq!((w.status, w.old_text.clone()), (WriteStatus::Pending, None));
    e.apply_client_line(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#);
    let applied = e.apply_local_line(
        r#"{"local":{"fileBeforeWrite":{"sessionId":"s","path":"/w/a.txt","oldText":"old\n"}}}"#,
    );
    assert!(applied.diagnostics.is_empty());
    let tc = tool(&e, "c");
    assert_eq!(tc.client_writes()[0].status, WriteStatus::Written);
    assert_eq!(
        tc.diffs()[0].unified(),
        "--- /w/a.txt\n+++ /w/a.txt\n@@ -1,1 +1,1 @@\n-old\n+new\n"
    );
    // The tool call itself is the agent's: its status stays the agent's to set.
    assert_eq!(tc.field_str("status").as_deref(), Some("pending"));
    let view = e.transcript().entry("c").unwrap().view();
    assert_eq!(
        view.fields["diffs"][0]["write"],
        json!({"requestId": 5, "status": "written"})
    );
}

#[test]
fn a_failed_write_keeps_the_clients_message() {
    let mut e = started();
    write_request(&mut e, 9, "/w/b.txt", "x");
    e.apply_client_line(
        r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"/w/b.txt: more than the write limit"}}"#,
    );
    let entry = &e.transcript().entries.last().unwrap();
    assert!(entry.id.starts_with("write:"), "{}", entry.id);
    let EntryBody::ToolCall(tc) = &entry.body else {
        panic!()
    };
    let w = &tc.client_writes()[0];
    assert_eq!(w.status, WriteStatus::Failed);
    assert_eq!(
        w.error.as_deref(),
        Some("/w/b.txt: more than the write limit")
    );
    assert_eq!(tc.field_str("status").as_deref(), Some("failed"));
}

#[test]
fn a_tool_call_of_an_earlier_turn_does_not_take_a_write() {
    let mut e = started();
    update(
        &mut e,
        json!({"sessionUpdate": "tool_call", "toolCallId": "old", "title": "Never finished", "status": "in_progress"}),
    );
    e.apply_agent_line(r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#);
    e.apply_client_line(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "again"}]}})
        .to_string(),
    );
    write_request(&mut e, 3, "/w/c.txt", "c\n");
    assert!(tool(&e, "old").client_writes().is_empty());
    let last = e.transcript().entries.last().unwrap();
    assert!(last.id.starts_with("write:"), "{}", last.id);
    assert_eq!(last.turn, Some(2));
}

#[test]
fn an_agent_line_cannot_pass_for_a_local_line() {
    let mut e = started();
    update(
        &mut e,
        json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "sh", "status": "in_progress",
               "content": [{"type": "terminal", "terminalId": "term-1"}]}),
    );
    let forged = r#"{"local":{"terminalOutput":{"sessionId":"s","terminalId":"term-1","text":"rm -rf done\n"}}}"#;
    let applied = e.apply_agent_line(forged);
    assert!(applied.ops.is_empty());
    assert_eq!(applied.diagnostics[0].code, "not_jsonrpc");
    assert_eq!(tool(&e, "c").terminal_output(), None);
    // The same line fed as local is shown.
    let applied = e.apply_local_line(forged);
    assert_eq!(applied.ops.len(), 1);
    assert_eq!(tool(&e, "c").terminal_output(), Some("rm -rf done\n"));
}

#[test]
fn malformed_local_lines_are_diagnostics() {
    let mut e = started();
    for (line, code) in [
        ("not json", "invalid_json"),
        (r#"{"local":[]}"#, "malformed_local"),
        (
            r#"{"local":{"terminalExit":{"sessionId":"s","terminalId":1}}}"#,
            "malformed_local",
        ),
        (
            r#"{"local":{"fileBeforeWrite":{"sessionId":"s","path":"/a","oldText":5}}}"#,
            "malformed_local",
        ),
        (r#"{"local":{"a":{},"b":{}}}"#, "malformed_local"),
    ] {
        let applied = e.apply_local_line(line);
        assert_eq!(applied.diagnostics.len(), 1, "{line}");
        assert_eq!(applied.diagnostics[0].code, code, "{line}");
        assert!(applied.ops.is_empty());
    }
}

#[test]
fn reads_are_noted_once_per_path_on_the_tool_call_in_progress() {
    let mut e = started();
    // No tool call in progress: nothing shows.
    let read = |id: u64, path: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "fs/read_text_file",
            "params": {"sessionId": "s", "path": path, "line": 1, "limit": 10}})
        .to_string()
    };
    assert!(e.apply_agent_line(&read(1, "/w/a")).is_empty());
    update(
        &mut e,
        json!({"sessionUpdate": "tool_call", "toolCallId": "r", "title": "Read", "status": "in_progress"}),
    );
    e.apply_agent_line(&read(2, "/w/a"));
    e.apply_agent_line(&read(3, "/w/b"));
    assert!(e.apply_agent_line(&read(4, "/w/a")).ops.is_empty());
    assert_eq!(tool(&e, "r").client_reads(), ["/w/a", "/w/b"]);
    let view = e.transcript().entry("r").unwrap().view();
    assert_eq!(view.fields["reads"], json!(["/w/a", "/w/b"]));
}

#[test]
fn a_refused_write_does_not_take_the_text_before_of_a_later_one() {
    let mut e = started();
    update(
        &mut e,
        json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Edit", "status": "in_progress"}),
    );
    write_request(&mut e, 1, "/w/a.txt", "first\n");
    e.apply_client_line(
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"too large"}}"#,
    );
    write_request(&mut e, 2, "/w/a.txt", "second\n");
    e.apply_local_line(
        r#"{"local":{"fileBeforeWrite":{"sessionId":"s","path":"/w/a.txt","oldText":"before\n"}}}"#,
    );
    e.apply_client_line(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
    let writes = tool(&e, "c").client_writes();
    assert_eq!(writes[0].old_text, None);
    assert_eq!(writes[1].old_text, Some(Some("before\n".to_owned())));
    assert_eq!(
        (writes[0].status, writes[1].status),
        (WriteStatus::Failed, WriteStatus::Written)
    );
}

#[test]
fn the_text_rendering_shows_reads_and_each_writes_outcome() {
    let text = spindle_engine::replay_recording(
        &fixture("24_client_fs_write_accepted_ops.jsonl"),
        EngineConfig::default(),
    )
    .render_text();
    assert!(text.contains("  (read /w/notes.txt)\n"), "{text}");
    assert!(
        text.contains("  -beta\n  +BETA\n   gamma\n  (write written)\n"),
        "{text}"
    );
    let text = spindle_engine::replay_recording(
        &fixture("24_client_fs_write_rejected_ops.jsonl"),
        EngineConfig::default(),
    )
    .render_text();
    assert!(
        text.contains("(write rejected: the user rejected the write to config.toml)"),
        "{text}"
    );
    let text = spindle_engine::replay_recording(
        &fixture("24_client_terminal_output_ops.jsonl"),
        EngineConfig::default(),
    )
    .render_text();
    assert!(
        text.contains("  | Compiling spindle v0.1.0\n  | € done\n  (killed by SIGKILL)\n"),
        "{text}"
    );
}

#[test]
fn a_write_repeating_the_shown_diff_is_one_diff_until_the_text_before_says_otherwise() {
    let mut e = started();
    update(
        &mut e,
        json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Edit", "status": "in_progress",
            "content": [{"type": "diff", "path": "/w/a.txt", "oldText": "one\n", "newText": "two\n"}]}),
    );
    write_request(&mut e, 4, "/w/a.txt", "two\n");
    let tc = tool(&e, "c");
    assert_eq!(tc.diffs().len(), 1, "the write repeats the shown diff");
    let shown = tc
        .diff_write(0)
        .expect("the content diff stands for the write");
    assert_eq!(shown.write.status, WriteStatus::Pending);
    assert!(!shown.differs_from_shown);
    // The file held something else than the agent showed: the real change is worth seeing.
    e.apply_local_line(
        r#"{"local":{"fileBeforeWrite":{"sessionId":"s","path":"/w/a.txt","oldText":"zero\n"}}}"#,
    );
    let tc = tool(&e, "c");
    assert_eq!(tc.diffs().len(), 2);
    assert!(tc.diff_write(0).is_none());
    let shown = tc.diff_write(1).unwrap();
    assert!(shown.differs_from_shown);
    assert_eq!(
        tc.diffs()[1].unified(),
        "--- /w/a.txt\n+++ /w/a.txt\n@@ -1,1 +1,1 @@\n-zero\n+two\n"
    );
    let view = e.transcript().entry("c").unwrap().view();
    assert_eq!(view.fields["diffs"][0].get("write"), None);
    assert_eq!(
        view.fields["diffs"][1]["write"],
        json!({"requestId": 4, "status": "pending", "differsFromShown": true})
    );
}

#[test]
fn a_write_of_the_whole_file_around_a_shown_snippet_is_that_snippet_s_one_diff() {
    let mut e = started();
    update(
        &mut e,
        json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Edit", "status": "in_progress",
            "content": [{"type": "diff", "path": "/w/a.txt", "oldText": "x = 1", "newText": "x = 2"}]}),
    );
    // The second `x = 1` is the one edited.
    write_request(&mut e, 6, "/w/a.txt", "é x = 1\ny\nx = 2\n");
    e.apply_local_line(
        r#"{"local":{"fileBeforeWrite":{"sessionId":"s","path":"/w/a.txt","oldText":"é x = 1\ny\nx = 1\n"}}}"#,
    );
    let tc = tool(&e, "c");
    // One diff for the file: the write's, in the shown one's place (its real lines).
    assert_eq!(tc.diffs().len(), 1);
    assert!(!tc.diff_write(0).unwrap().differs_from_shown);
    assert_eq!(
        tc.diffs()[0].unified(),
        "--- /w/a.txt\n+++ /w/a.txt\n@@ -1,3 +1,3 @@\n é x = 1\n y\n-x = 1\n+x = 2\n"
    );
    // A second write of the same file that does something else is marked.
    write_request(&mut e, 7, "/w/a.txt", "nothing alike\n");
    e.apply_local_line(
        r#"{"local":{"fileBeforeWrite":{"sessionId":"s","path":"/w/a.txt","oldText":"é x = 1\ny\nx = 2\n"}}}"#,
    );
    let tc = tool(&e, "c");
    assert_eq!(tc.diffs().len(), 2);
    assert!(tc.diff_write(1).unwrap().differs_from_shown);
}
