//! The host's events, as local lines, shown by the engine: a real terminal's
//! output and exit in the tool call that embeds it, and a reviewed write's
//! diff with its outcome.

use serde_json::{Value, json};
use spindle_engine::{EngineConfig, EntryBody, TranscriptEngine, WriteStatus};
use spindle_host::{FsPolicy, HostReply};

use crate::support::Fixture;

fn agent_update(engine: &mut TranscriptEngine, update: Value) {
    engine.apply_agent_line(
        &json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": update}})
        .to_string(),
    );
}

fn tool_call<'a>(engine: &'a TranscriptEngine, id: &str) -> &'a spindle_engine::ToolCall {
    match &engine.transcript().entry(id).unwrap().body {
        EntryBody::ToolCall(tc) => tc,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_terminal_shows_live_in_its_tool_call() {
    let mut f = Fixture::new(FsPolicy::Ask);
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    engine.apply_client_line(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
    );
    let created = f
        .ok(
            "terminal/create",
            json!({"sessionId": "s", "command": "sh", "args": ["-c", "printf 'one\\n'; printf 'twö\\n' >&2; exit 4"]}),
        )
        .await;
    let id = created["terminalId"].as_str().unwrap().to_owned();
    f.ok(
        "terminal/wait_for_exit",
        json!({"sessionId": "s", "terminalId": id}),
    )
    .await;
    // The first event is applied before the tool call names the terminal.
    let first = f.events.recv().await.unwrap();
    engine.apply_local_line(&first.to_local_line());
    agent_update(
        &mut engine,
        json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "sh", "kind": "execute",
            "status": "in_progress", "content": [{"type": "terminal", "terminalId": id}]}),
    );
    while let Ok(event) = f.events.try_recv() {
        let applied = engine.apply_local_line(&event.to_local_line());
        assert!(applied.diagnostics.is_empty(), "{applied:?}");
    }
    let tc = tool_call(&engine, "c");
    assert_eq!(tc.terminal_output(), Some("one\ntwö\n"));
    let exit = tc.terminal_exit().unwrap();
    assert_eq!((exit.exit_code, exit.signal), (Some(4), None));
    assert_eq!(tc.terminal().unwrap().fields["terminalId"], id.as_str());
}

#[tokio::test]
async fn a_reviewed_write_shows_as_a_diff_with_its_outcome() {
    let mut f = Fixture::new(FsPolicy::Ask);
    f.outer.write("ws/a.txt", "alpha\nbeta\n");
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    engine.apply_client_line(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
    );
    agent_update(
        &mut engine,
        json!({"sessionUpdate": "tool_call", "toolCallId": "e", "title": "Edit", "status": "in_progress"}),
    );
    let params = json!({"sessionId": "s", "path": f.ws("a.txt"), "content": "alpha\nBETA\n"});
    engine.apply_agent_line(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "fs/write_text_file", "params": params})
            .to_string(),
    );
    let HostReply::NeedsApproval(write) = f.call("fs/write_text_file", params).await else {
        panic!("no approval asked")
    };
    let event = f.events.try_recv().unwrap();
    engine.apply_local_line(&event.to_local_line());
    let tc = tool_call(&engine, "e");
    assert_eq!(tc.client_writes()[0].status, WriteStatus::Pending);
    assert_eq!(
        tc.diffs()[0].unified(),
        format!(
            "--- {p}\n+++ {p}\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+BETA\n",
            p = f.ws("a.txt")
        )
    );
    let error = f.host.reject(&write);
    let response = json!({"jsonrpc": "2.0", "id": 7, "error": error});
    engine.apply_client_line(&response.to_string());
    let w = &tool_call(&engine, "e").client_writes()[0];
    assert_eq!(w.status, WriteStatus::Rejected);
    assert_eq!(
        w.error.as_deref(),
        Some("the user rejected the write to a.txt")
    );
}
