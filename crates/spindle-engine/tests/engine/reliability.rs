//! Regression tests for the engine findings of `RELIABILITY.md` (F2, F3), each
//! named after its finding. Input is the `spindle replay` recording format.

use serde_json::{Value, json};
use spindle_engine::{EngineConfig, TranscriptEngine};

fn sent(message: Value) -> String {
    json!({ "sent": message }).to_string()
}

fn prompt(id: u64, text: &str) -> String {
    sent(
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": text}]}}),
    )
}

fn chunk_in(session: &str, message_id: &str, text: &str) -> String {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session,
        "update": {"sessionUpdate": "agent_message_chunk", "messageId": message_id,
            "content": {"type": "text", "text": text}}}})
    .to_string()
}

fn chunk(message_id: &str, text: &str) -> String {
    chunk_in("s1", message_id, text)
}

fn stop(id: Value, reason: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": reason}}).to_string()
}

fn replay(lines: &[String]) -> TranscriptEngine {
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    for line in lines {
        engine.apply_recorded_line(line);
    }
    engine
}

/// (turn, reply, finished, stop reason) per turn.
fn turns(engine: &TranscriptEngine) -> Vec<(u32, String, bool, Option<String>)> {
    engine
        .turn_replies()
        .into_iter()
        .map(|t| (t.turn, t.reply, t.finished, t.stop_reason))
        .collect()
}

fn diagnostics(engine: &TranscriptEngine) -> Vec<(&'static str, Option<u64>)> {
    engine
        .transcript()
        .diagnostics
        .iter()
        .map(|d| (d.code, d.line))
        .collect()
}

#[test]
fn engine_f2_a_response_to_an_unknown_id_does_not_end_the_turn() {
    let engine = replay(&[
        prompt(1, "one"),
        chunk("m1", "Hel"),
        stop(json!(77), "refusal"),
        chunk("m1", "lo"),
        stop(json!(1), "end_turn"),
    ]);
    assert_eq!(
        turns(&engine),
        vec![(1, "Hello".to_string(), true, Some("end_turn".to_string()))]
    );
    assert_eq!(diagnostics(&engine), vec![("unknown_response", Some(3))]);
}

#[test]
fn engine_f2_a_stale_second_answer_does_not_end_the_next_turn() {
    let engine = replay(&[
        prompt(1, "one"),
        chunk("m1", "First"),
        stop(json!(1), "end_turn"),
        prompt(2, "two"),
        chunk("m2", "Sec"),
        stop(json!(1), "refusal"),
        json!({"jsonrpc": "2.0", "id": 999, "error": {"code": -1, "message": "who?"}}).to_string(),
        chunk("m2", "ond"),
        stop(json!(2), "end_turn"),
    ]);
    assert_eq!(
        turns(&engine),
        vec![
            (1, "First".to_string(), true, Some("end_turn".to_string())),
            (2, "Second".to_string(), true, Some("end_turn".to_string())),
        ]
    );
    assert_eq!(
        diagnostics(&engine),
        vec![("unknown_response", Some(6)), ("unknown_response", Some(7))]
    );
    assert!(engine.transcript().state.error.is_none());
}

#[test]
fn engine_f2_agent_only_recordings_still_end_turns_on_a_stop_reason() {
    // No sent lines at all: the response can only answer the (unseen) prompt.
    let engine = replay(&[chunk("m1", "Hi"), stop(json!(1), "end_turn")]);
    assert_eq!(
        turns(&engine),
        vec![(1, "Hi".to_string(), true, Some("end_turn".to_string()))]
    );
    assert!(diagnostics(&engine).is_empty());
}

fn new_session(id: u64) -> String {
    sent(json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
        "params": {"cwd": "/", "mcpServers": []}}))
}

fn opened(id: u64, session: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": session}}).to_string()
}

fn prompt_in(id: u64, session: &str, text: &str) -> String {
    sent(
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}),
    )
}

fn messages(engine: &TranscriptEngine) -> Vec<String> {
    engine
        .transcript()
        .entries
        .iter()
        .filter(|e| e.kind == spindle_engine::EntryKind::AgentMessage)
        .map(|e| e.text().to_string())
        .collect()
}

#[test]
fn engine_f3_an_update_for_another_session_is_a_diagnostic_and_not_applied() {
    let tool_call = json!({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "OTHER", "update": {"sessionUpdate": "tool_call", "toolCallId": "c1",
            "title": "intruder", "status": "pending"}}})
    .to_string();
    let engine = replay(&[
        new_session(1),
        opened(1, "s1"),
        prompt(2, "one"),
        chunk("m1", "Hel"),
        chunk_in("OTHER", "m1", "INTRUDER"),
        tool_call,
        chunk("m1", "lo"),
        stop(json!(2), "end_turn"),
    ]);
    assert_eq!(messages(&engine), vec!["Hello"]);
    assert_eq!(
        engine.transcript().entries.len(),
        3,
        "prompt, reply and the turn's end only"
    );
    assert_eq!(
        diagnostics(&engine),
        vec![("foreign_session", Some(5)), ("foreign_session", Some(6))]
    );
    assert_eq!(
        engine.transcript().session_info.session_id.as_deref(),
        Some("s1")
    );
}

#[test]
fn engine_f3_agent_only_recordings_take_the_first_session_seen() {
    let engine = replay(&[
        chunk("m1", "Hel"),
        chunk_in("OTHER", "m9", "INTRUDER"),
        chunk("m1", "lo"),
        stop(json!(1), "end_turn"),
    ]);
    assert_eq!(messages(&engine), vec!["Hello"]);
    assert_eq!(diagnostics(&engine), vec![("foreign_session", Some(2))]);
}

#[test]
fn engine_f3_a_new_agent_session_opened_by_the_client_moves_the_transcript_to_it() {
    let engine = replay(&[
        new_session(1),
        opened(1, "s1"),
        prompt_in(2, "s1", "one"),
        chunk_in("s1", "m1", "First"),
        stop(json!(2), "end_turn"),
        new_session(3),
        opened(3, "s2"),
        prompt_in(4, "s2", "two"),
        chunk_in("s2", "m2", "Second"),
        chunk_in("s1", "m3", "stale"),
        stop(json!(4), "end_turn"),
    ]);
    assert_eq!(messages(&engine), vec!["First", "Second"]);
    assert_eq!(diagnostics(&engine), vec![("foreign_session", Some(10))]);
}

/// The same rule on the engine's fastest path: chunks in the exact compact shape agents write
/// (what the single-pass scanner reads) for another session are diagnosed and not applied,
/// through whole lines and through `apply_session_update` params alike. A merge once left this
/// path applying them.
#[test]
fn engine_f3_plain_chunks_of_another_session_are_not_applied_on_the_fast_path() {
    let plain = |session: &str, text: &str| {
        format!(
            r#"{{"sessionId":"{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}"#
        )
    };
    let line = |session: &str, text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{}}}"#,
            plain(session, text)
        )
    };
    let mut by_line = TranscriptEngine::new(EngineConfig::default());
    by_line.apply_agent_line(&line("s1", "Hel"));
    by_line.apply_agent_line(&line("OTHER", "INTRUDER"));
    by_line.apply_agent_line(&line("s1", "lo"));
    let mut by_params = TranscriptEngine::new(EngineConfig::default());
    by_params.apply_session_update(&plain("s1", "Hel"));
    by_params.apply_session_update(&plain("OTHER", "INTRUDER"));
    by_params.apply_session_update(&plain("s1", "lo"));
    for engine in [&by_line, &by_params] {
        assert_eq!(messages(engine), vec!["Hello"]);
        let codes: Vec<&str> = diagnostics(engine)
            .into_iter()
            .map(|(code, _)| code)
            .collect();
        assert_eq!(codes, vec!["foreign_session"]);
    }
}
