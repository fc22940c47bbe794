//! The public API, entry point by entry point, with exact ops where they matter.

use serde_json::json;
use spindle_engine::{EngineConfig, EntryKind, ProtocolHint, RenderOp, TranscriptEngine};

fn params(update: serde_json::Value) -> String {
    json!({"sessionId": "s1", "update": update}).to_string()
}

fn line(update: serde_json::Value) -> String {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}}).to_string()
}

#[test]
fn v1_turn_through_params_and_prompt_response() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    e.apply_user_prompt(r#"[{"type":"text","text":"hi"}]"#);
    e.apply_session_update(&params(
        json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
    ));
    e.apply_session_update(&params(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello"}})));
    let applied = e.apply_prompt_response(Ok(r#"{"stopReason":"end_turn"}"#));
    assert!(applied.ops.iter().any(|op| matches!(op, RenderOp::SetState { state } if state.stop_reason.as_deref() == Some("end_turn"))));
    assert_eq!(e.final_reply().as_deref(), Some("Hello"));
    let turns = e.turn_replies();
    assert_eq!(turns.len(), 1);
    assert!(turns[0].finished);
    assert_eq!(turns[0].reply, "Hello");
    assert_eq!(
        e.transcript().session_info.session_id.as_deref(),
        Some("s1")
    );
    let kinds: Vec<EntryKind> = e.transcript().entries.iter().map(|x| x.kind).collect();
    assert_eq!(
        kinds,
        [
            EntryKind::UserMessage,
            EntryKind::AgentThought,
            EntryKind::AgentMessage,
            EntryKind::TurnEnd
        ]
    );
    let end = e.transcript().entries[3].view();
    assert_eq!(end.fields["outcome"], "done");
    assert_eq!(end.fields["stopReason"], "end_turn");
}

#[test]
fn every_turn_keeps_its_own_reply_messages_joined_by_a_blank_line_without_thoughts() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    let chunk = |kind: &str, id: &str, text: &str| {
        params(json!({"sessionUpdate": kind, "messageId": id,
                      "content": {"type": "text", "text": text}}))
    };
    // (prompt, updates of the turn, its reply)
    let turns: [(&str, Vec<String>, &str); 4] = [
        (
            "one",
            vec![
                chunk("agent_message_chunk", "m1", "A"),
                chunk("agent_thought_chunk", "t1", "thinking"),
                chunk("agent_message_chunk", "m1", "1"),
                chunk("agent_message_chunk", "m2", "B1"),
            ],
            "A1\n\nB1",
        ),
        (
            "two",
            vec![chunk("agent_thought_chunk", "t2", "only a thought")],
            "",
        ),
        (
            "three",
            vec![chunk("agent_message_chunk", "m3", "C3")],
            "C3",
        ),
        ("four", vec![], ""),
    ];
    for (prompt, updates, _) in &turns {
        e.apply_user_prompt(&json!([{"type": "text", "text": prompt}]).to_string());
        for update in updates {
            e.apply_session_update(update);
        }
        e.apply_prompt_response(Ok(r#"{"stopReason":"end_turn"}"#));
    }
    let replies: Vec<(u32, String, bool)> = e
        .turn_replies()
        .into_iter()
        .map(|r| (r.turn, r.reply, r.finished))
        .collect();
    let expected: Vec<(u32, String, bool)> = turns
        .iter()
        .zip(1..)
        .map(|((_, _, reply), turn)| (turn, reply.to_string(), true))
        .collect();
    assert_eq!(replies, expected);
    assert_eq!(e.final_reply(), None, "the last turn has no reply");
}

#[test]
fn v2_acknowledgement_adopts_the_local_prompt_without_duplicating_it() {
    let mut e = TranscriptEngine::new(EngineConfig {
        protocol: ProtocolHint::V2,
        ..EngineConfig::default()
    });
    e.apply_user_prompt(r#"[{"type":"text","text":"Deploy it"}]"#);
    let applied = e.apply_prompt_response(Ok(r#"{"messageId":"u-7"}"#));
    assert!(
        e.transcript().state.turn_open,
        "v2 acceptance does not end the turn"
    );
    assert!(!applied.ops.is_empty());
    let applied = e.apply_session_update(&params(json!({"sessionUpdate": "user_message", "messageId": "u-7", "content": [{"type": "text", "text": "Deploy it"}]})));
    // Same content: no text ops, only the acknowledgement (pending -> false).
    assert!(
        applied
            .ops
            .iter()
            .all(|op| matches!(op, RenderOp::UpdateEntry { .. })),
        "{:?}",
        applied.ops
    );
    let users: Vec<_> = e
        .transcript()
        .entries
        .iter()
        .filter(|x| x.kind == EntryKind::UserMessage)
        .collect();
    assert_eq!(users.len(), 1);
    assert_eq!(
        users[0].message().unwrap().message_id.as_deref(),
        Some("u-7")
    );
    e.apply_session_update(&params(json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "Done"}})));
    e.apply_session_update(&params(
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ));
    assert_eq!(e.transcript().state.status, "idle");
    assert_eq!(e.final_reply().as_deref(), Some("Done"));
    // A repeated idle snapshot is not a new completion.
    let applied = e.apply_session_update(&params(
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ));
    assert!(applied.ops.is_empty());
    assert_eq!(e.turn_replies().len(), 1);
}

#[test]
fn notices_are_ops_only() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    let applied = e.apply_agent_line(&line(json!({"sessionUpdate": "notice", "severity": "warning", "title": "Slow", "description": "retrying"})));
    assert_eq!(
        applied.ops,
        vec![RenderOp::Notice {
            severity: "warning".into(),
            title: "Slow".into(),
            description: Some("retrying".into())
        }]
    );
    assert!(e.transcript().entries.is_empty());
    assert!(
        !e.render_snapshot()
            .iter()
            .any(|op| matches!(op, RenderOp::Notice { .. }))
    );
}

#[test]
fn snapshot_refinement_sends_only_the_changed_suffix() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    let snap = |text: &str| {
        line(
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "_meta": {"spindle": {"snapshot": true}}, "content": {"type": "text", "text": text}}),
        )
    };
    e.apply_agent_line(&snap("Hello wor"));
    let applied = e.apply_agent_line(&snap("Hello world"));
    assert_eq!(
        applied.ops,
        vec![RenderOp::AppendText {
            id: "m".into(),
            text: "ld".into()
        }]
    );
    let applied = e.apply_agent_line(&snap("Hello, world"));
    assert_eq!(
        applied.ops,
        vec![
            RenderOp::TruncateText {
                id: "m".into(),
                len: 5
            },
            RenderOp::AppendText {
                id: "m".into(),
                text: ", world".into()
            },
        ]
    );
    let applied = e.apply_agent_line(&snap("Hello, world"));
    assert!(
        applied.ops.is_empty(),
        "an identical snapshot changes nothing"
    );
    // A clear keeps nothing; later chunks append from empty.
    let applied = e.apply_agent_line(&line(
        json!({"sessionUpdate": "agent_message_clear", "messageId": "m"}),
    ));
    assert_eq!(
        applied.ops,
        vec![RenderOp::TruncateText {
            id: "m".into(),
            len: 0
        }]
    );
    e.apply_agent_line(&line(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "New"}})));
    assert_eq!(e.transcript().entries[0].text(), "New");
}

#[test]
fn bad_input_is_a_diagnostic_with_its_line_and_later_updates_apply() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    let applied = e.apply_agent_line("{not json");
    assert_eq!(applied.diagnostics[0].code, "invalid_json");
    assert_eq!(applied.diagnostics[0].line, Some(1));
    let applied = e.apply_agent_line(&line(
        json!({"sessionUpdate": "tool_call_update", "title": "no id"}),
    ));
    assert_eq!(applied.diagnostics[0].code, "malformed_update");
    assert_eq!(applied.diagnostics[0].line, Some(2));
    e.set_next_line_number(10);
    let applied = e.apply_agent_line(&line(
        json!({"sessionUpdate": "agent_message_chunk", "content": "oops"}),
    ));
    assert_eq!(applied.diagnostics[0].line, Some(10));
    e.apply_agent_line(&line(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "fine"}})));
    assert_eq!(e.final_reply().as_deref(), Some("fine"));
    assert_eq!(e.transcript().diagnostics.len(), 3);
}

#[test]
fn ids_from_different_spaces_never_collide() {
    let mut e = TranscriptEngine::new(EngineConfig {
        protocol: ProtocolHint::V2,
        ..EngineConfig::default()
    });
    e.apply_agent_line(&line(
        json!({"sessionUpdate": "agent_message", "messageId": "x", "content": [{"type": "text", "text": "m"}]}),
    ));
    e.apply_agent_line(&line(
        json!({"sessionUpdate": "agent_thought", "messageId": "x", "content": [{"type": "text", "text": "t"}]}),
    ));
    e.apply_agent_line(&line(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "x", "title": "t"}),
    ));
    let ids: Vec<&str> = e
        .transcript()
        .entries
        .iter()
        .map(|x| x.id.as_str())
        .collect();
    assert_eq!(ids, ["x", "agent_thought:x", "tool_call:x"]);
}

#[test]
fn v1_prompt_error_ends_the_turn_with_the_error() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    e.apply_client_line(r#"{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#);
    e.apply_agent_line(r#"{"jsonrpc":"2.0","id":"p1","error":{"code":-32603,"message":"boom"}}"#);
    let s = &e.transcript().state;
    assert!(!s.turn_open);
    assert_eq!(s.error.as_ref().unwrap()["message"], "boom");
    assert_eq!(s.stop_reason, None);
}

#[test]
fn utf16_helpers_map_offsets_for_rust_consumers() {
    use spindle_engine::text::{byte_to_utf16_offset, utf16_to_byte_offset};
    let s = "x😀y";
    assert_eq!(utf16_to_byte_offset(s, 3), Some(5));
    assert_eq!(byte_to_utf16_offset(s, 5), Some(3));
}

#[test]
fn a_clear_prompt_is_never_text_matched() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    e.apply_user_prompt(r#"[{"type":"text","text":"/clear"}]"#);
    e.apply_agent_line(&line(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "/clear"}})));
    e.apply_prompt_response(Ok(r#"{"stopReason":"end_turn"}"#));
    assert!(
        e.transcript()
            .entries
            .iter()
            .all(|x| x.kind != EntryKind::Boundary)
    );
    // Only a structured signal makes a boundary.
    e.apply_agent_line(&line(json!({"sessionUpdate": "session_cleared"})));
    assert_eq!(
        e.transcript().entries.last().unwrap().kind,
        EntryKind::Boundary
    );
}

#[test]
fn engine_clones_are_independent() {
    let mut a = TranscriptEngine::default();
    a.apply_agent_line(&line(
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}),
    ));
    let mut b = a.clone();
    b.apply_agent_line(&line(
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "b"}}),
    ));
    assert_eq!(a.final_reply().as_deref(), Some("a"));
    assert_eq!(b.final_reply().as_deref(), Some("ab"));
}

#[test]
fn queued_prompts_are_acknowledged_in_send_order() {
    let mut e = TranscriptEngine::new(EngineConfig {
        protocol: ProtocolHint::V2,
        ..EngineConfig::default()
    });
    let prompt = |id: u32, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": text}]}}).to_string()
    };
    e.apply_client_line(&prompt(1, "first"));
    e.apply_client_line(&prompt(2, "second"));
    // Acknowledgements before the responses: adopted oldest first.
    e.apply_agent_line(&line(json!({"sessionUpdate": "user_message", "messageId": "ua", "content": [{"type": "text", "text": "first"}]})));
    e.apply_agent_line(&line(json!({"sessionUpdate": "user_message", "messageId": "ub", "content": [{"type": "text", "text": "second"}]})));
    e.apply_agent_line(r#"{"jsonrpc":"2.0","id":1,"result":{"messageId":"ua"}}"#);
    e.apply_agent_line(r#"{"jsonrpc":"2.0","id":2,"result":{"messageId":"ub"}}"#);
    let users: Vec<(Option<String>, String)> = e
        .transcript()
        .entries
        .iter()
        .filter(|x| x.kind == EntryKind::UserMessage)
        .map(|x| (x.message().unwrap().message_id.clone(), x.text().to_owned()))
        .collect();
    assert_eq!(
        users,
        [
            (Some("ua".into()), "first".into()),
            (Some("ub".into()), "second".into())
        ]
    );
}

#[test]
fn a_cancelled_turn_marks_its_unfinished_tool_calls_cancelled() {
    let mut e = TranscriptEngine::new(EngineConfig {
        protocol: ProtocolHint::V2,
        ..EngineConfig::default()
    });
    e.apply_user_prompt(r#"[{"type":"text","text":"go"}]"#);
    e.apply_agent_line(&line(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "a", "status": "in_progress"}),
    ));
    e.apply_agent_line(&line(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "b", "status": "completed"}),
    ));
    e.apply_client_line(
        r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#,
    );
    assert!(e.transcript().state.cancel_requested);
    let applied = e.apply_agent_line(&line(
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}),
    ));
    assert!(
        applied
            .ops
            .iter()
            .any(|op| matches!(op, RenderOp::UpdateEntry { id, .. } if id == "a"))
    );
    let status = |id: &str| match &e.transcript().entry(id).unwrap().body {
        spindle_engine::EntryBody::ToolCall(tc) => tc.field("status").unwrap_or_default(),
        _ => unreachable!(),
    };
    assert_eq!(status("a"), "cancelled");
    assert_eq!(status("b"), "completed");
}

#[test]
fn recording_lines_round_trip_through_replay() {
    let sent = spindle_engine::recording_line_sent(
        "{\n \"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"session/prompt\",\n \"params\": {\"sessionId\": \"s\", \"prompt\": [{\"type\": \"text\", \"text\": \"hi\"}]}}",
    )
    .unwrap();
    assert!(!sent.contains('\n') && sent.starts_with(r#"{"sent":"#));
    let received = spindle_engine::recording_line_received(
        r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#,
    )
    .unwrap();
    let engine =
        spindle_engine::replay_recording(&format!("{sent}\n{received}\n"), EngineConfig::default());
    assert_eq!(engine.transcript().entries[0].text(), "hi");
    assert_eq!(
        engine.transcript().state.stop_reason.as_deref(),
        Some("end_turn")
    );
    assert!(spindle_engine::recording_line_sent("not json").is_none());
}

/// The message's content, as `spindle replay --format json` prints it.
fn content_of(e: &TranscriptEngine, id: &str) -> serde_json::Value {
    let entry = e.transcript().entry(id).expect("entry");
    json!(entry.message().expect("a message").content_json())
}

fn text_block(text: &str) -> serde_json::Value {
    json!({"type": "text", "text": text})
}

// Plain text chunks are stored as one compact run; the content must still
// show one block per chunk, in order, around other blocks and after every
// way a message's text can shrink.
#[test]
fn plain_text_chunks_stay_one_block_each_across_attachments_clears_and_snapshots() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    let chunk = |content: serde_json::Value| {
        params(
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": content}),
        )
    };
    for text in ["Hé", "", "llo 😀", " w"] {
        e.apply_session_update(&chunk(text_block(text)));
    }
    let image = json!({"type": "image", "data": "AA==", "mimeType": "image/png"});
    e.apply_session_update(&chunk(image.clone()));
    e.apply_session_update(&chunk(text_block("or")));
    let annotated = json!({"type": "text", "text": "ld", "annotations": {"priority": 1}});
    e.apply_session_update(&chunk(annotated.clone()));
    e.apply_session_update(&chunk(text_block("!")));
    e.apply_session_update(&chunk(text_block("?")));
    let id = e.transcript().entries[0].id.clone();
    assert_eq!(
        content_of(&e, &id),
        json!([
            text_block("Hé"),
            text_block(""),
            text_block("llo 😀"),
            text_block(" w"),
            image,
            text_block("or"),
            annotated,
            text_block("!"),
            text_block("?")
        ])
    );
    let message = e.transcript().entries[0].message().expect("message");
    assert_eq!(message.block_count(), 9);
    assert_eq!(message.text(), "Héllo 😀 world!?");
    assert_eq!(message.reply_text(), "Héllo 😀 world!?");

    // A clear empties the run; chunks after it start a new one.
    e.apply_session_update(&params(
        json!({"sessionUpdate": "agent_message_clear", "messageId": "a"}),
    ));
    assert_eq!(content_of(&e, &id), json!([]));
    e.apply_session_update(&chunk(text_block("new")));
    e.apply_session_update(&chunk(text_block(" start")));
    assert_eq!(
        content_of(&e, &id),
        json!([text_block("new"), text_block(" start")])
    );

    // A snapshot replaces the content with its one block; chunks append after it.
    let applied = e.apply_session_update(&params(json!({
        "sessionUpdate": "agent_message_chunk", "messageId": "a",
        "content": text_block("new 😀"), "_meta": {"spindle": {"snapshot": true}}
    })));
    assert_eq!(
        applied.ops,
        vec![
            RenderOp::TruncateText {
                id: id.clone(),
                len: 4
            },
            RenderOp::AppendText {
                id: id.clone(),
                text: "😀".into()
            }
        ]
    );
    e.apply_session_update(&chunk(text_block("!")));
    assert_eq!(
        content_of(&e, &id),
        json!([text_block("new 😀"), text_block("!")])
    );
    let applied = e.apply_session_update(&params(json!({
        "sessionUpdate": "agent_message_chunk", "messageId": "a",
        "content": text_block("ne"), "_meta": {"spindle": {"snapshot": true}}
    })));
    // UTF-16: "ne" is 2 units; the truncation is measured in them.
    assert_eq!(
        applied.ops,
        vec![RenderOp::TruncateText {
            id: id.clone(),
            len: 2
        }]
    );
    assert_eq!(content_of(&e, &id), json!([text_block("ne")]));
    assert_eq!(e.transcript().entries[0].text(), "ne");
}

#[test]
fn v2_upserts_rebuild_plain_runs_exactly() {
    let mut e = TranscriptEngine::new(EngineConfig {
        protocol: ProtocolHint::V2,
        ..EngineConfig::default()
    });
    let upsert = |content: serde_json::Value| {
        params(json!({"sessionUpdate": "agent_message", "messageId": "m", "content": content}))
    };
    let blocks = json!([text_block("a"), text_block("bc"), {"type": "text", "text": "d", "_meta": {"x": 1}}, text_block("e")]);
    e.apply_session_update(&upsert(blocks.clone()));
    assert_eq!(content_of(&e, "m"), blocks);
    e.apply_session_update(&params(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text_block("f")})));
    let mut expected = blocks.as_array().cloned().unwrap_or_default();
    expected.push(text_block("f"));
    assert_eq!(content_of(&e, "m"), json!(expected));
    assert_eq!(e.transcript().entries[0].text(), "abcdef");
    // The same content built chunk by chunk compares equal to the upserted one.
    let mut chunked = TranscriptEngine::new(EngineConfig {
        protocol: ProtocolHint::V2,
        ..EngineConfig::default()
    });
    for block in expected {
        chunked.apply_session_update(&params(
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": block}),
        ));
    }
    assert_eq!(
        chunked.transcript().entries[0].message(),
        e.transcript().entries[0].message()
    );
}

// apply_session_update decodes text chunks in a borrowed pass and other
// updates through a Value; every shape must give what a whole line gives.
#[test]
fn session_update_params_give_the_same_transcript_as_whole_lines() {
    let updates = [
        json!({"sessionUpdate": "agent_message_chunk", "content": text_block("a\"b\\n")}),
        json!({"sessionUpdate": "agent_message_chunk", "content": text_block("c"), "segment": "think"}),
        json!({"sessionUpdate": "agent_thought_chunk", "messageId": "t", "content": text_block("t")}),
        json!({"sessionUpdate": "agent_message_chunk", "messageId": null, "content": {"type": "text", "text": "x", "extra": 1}}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read", "status": "pending"}),
        json!({"sessionUpdate": "usage_update", "used": 1, "size": 2}),
        json!({"sessionUpdate": "agent_message_chunk", "content": text_block("y"), "_meta": {"claudeCode": {"clearBoundary": true}}}),
        json!({"sessionUpdate": "_custom", "x": [1, 2]}),
        json!({"sessionUpdate": "agent_message_chunk", "content": 5}),
        json!(null),
    ];
    let mut by_params = TranscriptEngine::new(EngineConfig::default());
    let mut by_lines = TranscriptEngine::new(EngineConfig::default());
    for u in &updates {
        let a = by_params.apply_session_update(&params(u.clone()));
        let b = by_lines.apply_agent_line(&line(u.clone()));
        assert_eq!(a.ops, b.ops, "{u}");
        assert_eq!(a.diagnostics.len(), b.diagnostics.len(), "{u}");
    }
    // Session ids that are not strings, and params that are not objects.
    for odd in [
        r#"{"sessionId":7,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"z"}}}"#,
        r#"{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"z"}},"update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"w"}}}"#,
    ] {
        by_params.apply_session_update(odd);
        by_lines.apply_agent_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{odd}}}"#
        ));
    }
    assert_eq!(
        by_params.transcript().entries,
        by_lines.transcript().entries
    );
    assert_eq!(
        by_params.transcript().session_info,
        by_lines.transcript().session_info
    );
    assert!(!by_params.apply_session_update("[1]").diagnostics.is_empty());
    assert!(!by_params.apply_session_update("{").diagnostics.is_empty());
}

#[test]
fn final_reply_pieces_concatenate_to_the_final_reply() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    assert!(e.final_reply_pieces().is_empty());
    e.apply_user_prompt(r#"[{"type":"text","text":"hi"}]"#);
    assert_eq!(e.final_reply(), None);
    assert!(e.final_reply_pieces().is_empty());
    let chunk = |id: &str, content: serde_json::Value| {
        params(json!({"sessionUpdate": "agent_message_chunk", "messageId": id, "content": content}))
    };
    e.apply_session_update(&chunk("a", json!({"type": "text", "text": "One "})));
    e.apply_session_update(&chunk("a", json!({"type": "text", "text": "two"})));
    // The block's own routing field makes it thought text: never reply text.
    // (`_meta.segment` would not: `_meta` is not a routing field.)
    e.apply_session_update(&chunk(
        "a",
        json!({"type": "text", "text": "hidden", "segment": "think"}),
    ));
    e.apply_session_update(&params(
        json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
    ));
    e.apply_session_update(&chunk("b", json!({"type": "text", "text": ""})));
    e.apply_session_update(&chunk("c", json!({"type": "text", "text": "Three 😀"})));
    e.apply_prompt_response(Ok(r#"{"stopReason":"end_turn"}"#));
    let reply = e.final_reply().expect("a reply");
    assert_eq!(e.final_reply_pieces().concat(), reply);
    assert!(reply.starts_with("One two"));
    assert!(reply.ends_with("\n\nThree 😀"));
    assert!(!reply.contains("hmm"));
    assert!(!reply.contains("hidden"), "{reply:?}");
    assert_eq!(reply, "One two\n\nThree 😀");
    assert_eq!(e.turn_replies()[0].reply, reply);
}

/// Every routing field spindle-wire lists keeps a "thought" label out of the
/// reply on every entry point (the fast paths included): a field added to
/// `spindle_wire::routing` is covered here without editing the test.
#[test]
fn every_routing_field_keeps_thoughts_out_of_the_reply_on_every_entry_point() {
    use spindle_wire::routing::{ANNOTATIONS_FIELD, CONTENT_FIELDS, UPDATE_FIELDS};
    let mut updates = Vec::new();
    for field in UPDATE_FIELDS {
        updates.push(
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1",
            field: "thought", "content": {"type": "text", "text": "secret"}}),
        );
    }
    for field in CONTENT_FIELDS {
        updates.push(
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1",
            "content": {"type": "text", "text": "secret", field: "thought"}}),
        );
    }
    updates.push(
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1",
        "content": {"type": "text", "text": "secret", ANNOTATIONS_FIELD: {"segment": "thought"}}}),
    );
    for update in updates {
        for entry_point in ["params", "agent_line", "recorded_line"] {
            let mut e = TranscriptEngine::new(EngineConfig::default());
            e.apply_user_prompt(r#"[{"type":"text","text":"hi"}]"#);
            let reply = json!({"sessionUpdate": "agent_message_chunk", "messageId": "m2",
                "content": {"type": "text", "text": "visible"}});
            for u in [update.clone(), reply] {
                match entry_point {
                    "params" => e.apply_session_update(&params(u)),
                    "agent_line" => e.apply_agent_line(&line(u)),
                    _ => e.apply_recorded_line(&line(u)),
                };
            }
            assert_eq!(
                e.final_reply().as_deref(),
                Some("visible"),
                "{entry_point}: {update}"
            );
        }
    }
}

#[test]
fn author_notes_name_who_sent_a_prompt_and_who_answered_a_question() {
    let mut e = TranscriptEngine::new(EngineConfig::default());
    let prompt = |id: serde_json::Value, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": text}]}})
        .to_string()
    };
    e.apply_client_line(&prompt(json!(3), "first"));
    e.apply_agent_line(r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
    // Noted after the answer too: the request still names its prompt.
    let applied = e.apply_prompt_author("3", "alice");
    let updated = applied.ops.iter().find_map(|op| match op {
        RenderOp::UpdateEntry { entry, .. } => Some(entry.clone()),
        _ => None,
    });
    assert_eq!(updated.unwrap().fields["author"], "alice");
    e.apply_client_line(&prompt(json!("p-2"), "second"));
    e.apply_prompt_author(r#" "p-2" "#, "bob");
    // The replay JSON written field by field carries the author (and `pending`) as the value does.
    assert_eq!(e.replay_json_text(), e.replay_json().to_string());
    assert!(
        e.replay_json_text()
            .contains(r#""pending":true,"author":"bob""#)
    );
    // A tool call asks; carol's answer is noted before it goes out.
    e.apply_agent_line(&line(
        json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit"}),
    ));
    e.apply_agent_line(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission",
                "params": {"sessionId": "s1", "toolCall": {"toolCallId": "c1"},
                           "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}})
        .to_string(),
    );
    assert!(
        e.apply_permission_author("9", "carol")
            .diagnostics
            .is_empty()
    );
    e.apply_client_line(
        r#"{"jsonrpc":"2.0","id":9,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}"#,
    );

    let views: Vec<_> = e.transcript().entries.iter().map(|x| x.view()).collect();
    let users: Vec<(&str, &serde_json::Value)> = views
        .iter()
        .filter(|v| v.kind == EntryKind::UserMessage)
        .map(|v| (v.text.as_str(), &v.fields["author"]))
        .collect();
    assert_eq!(
        users,
        [("first", &json!("alice")), ("second", &json!("bob"))]
    );
    let call = views
        .iter()
        .find(|v| v.kind == EntryKind::ToolCall)
        .unwrap();
    assert_eq!(call.fields["permission"]["answeredBy"], "carol");
    assert_eq!(call.fields["permission"]["outcome"]["optionId"], "ok");
    let replay = e.transcript().entries[0].replay_json();
    assert_eq!(replay["author"], "alice");

    // Nothing to name: a diagnostic, no change.
    for applied in [
        e.apply_prompt_author("77", "mallory"),
        e.apply_permission_author("9", "mallory"),
    ] {
        assert_eq!(applied.diagnostics.len(), 1, "{applied:?}");
        assert_eq!(applied.diagnostics[0].code, "unknown_author_target");
        assert!(applied.ops.is_empty());
    }
}

#[test]
fn a_new_v2_session_is_idle_and_a_greeting_is_no_turn_while_a_v1_greeting_opens_one() {
    // v2 prompt lifecycle: a new session defaults to idle, and updates while idle do not change
    // the state. The reference agent greets after `session/new` (no `running`, no prompt).
    let greet = |protocol: u64| {
        let mut e = TranscriptEngine::new(EngineConfig::default());
        e.apply_client_line(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": protocol}})
            .to_string(),
        );
        e.apply_agent_line(
            &json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": protocol}})
                .to_string(),
        );
        e.apply_client_line(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                    "params": {"cwd": "/w", "mcpServers": []}})
            .to_string(),
        );
        e.apply_agent_line(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}).to_string(),
        );
        let greeting = if protocol >= 2 {
            json!({"sessionUpdate": "agent_message", "messageId": "m1",
                   "content": [{"type": "text", "text": "Hello"}]})
        } else {
            json!({"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": "Hello"}})
        };
        e.apply_agent_line(&line(greeting));
        e
    };
    let v2 = greet(2);
    let state = &v2.transcript().state;
    assert_eq!(
        (state.status.as_str(), state.turn_open, state.turns),
        ("idle", false, 0)
    );
    let entry = &v2.transcript().entries[0];
    assert_eq!((entry.kind, entry.turn), (EntryKind::AgentMessage, None));
    // The first prompt is turn 1, and `running` still opens agent-initiated work.
    let mut v2 = v2;
    v2.apply_agent_line(&line(
        json!({"sessionUpdate": "state_update", "state": "running"}),
    ));
    assert_eq!(
        (v2.transcript().state.turn_open, v2.transcript().state.turns),
        (true, 1)
    );
    // A v1 agent has no idle: its output outside a prompt is an implicit turn.
    let v1 = greet(1);
    let state = &v1.transcript().state;
    assert_eq!(
        (state.status.as_str(), state.turn_open, state.turns),
        ("running", true, 1)
    );
}
