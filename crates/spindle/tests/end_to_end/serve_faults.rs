//! `spindle serve` with agents that crash, stall or ask for permission.

use crate::serve_support;

use std::ffi::OsString;

use serde_json::Value;
use serve_support::{
    Served, SseEvent, SseReader, entry_texts, start_serve, temp_dir, transcript, wait_transcript,
};

/// Reads events until one has an op for which `matches` holds; returns that op.
fn wait_op(reader: &mut SseReader, matches: impl Fn(&Value) -> bool) -> Value {
    loop {
        let event: SseEvent = reader.next_event().expect("stream ended early");
        if let Some(op) = event.ops().into_iter().find(|op| matches(op)) {
            return op;
        }
    }
}

#[test]
fn an_agent_crash_mid_turn_is_reported_the_transcript_kept_and_a_new_agent_starts() {
    let dir = temp_dir("crash");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let session = served.create_session();
    let mut reader = served.sse(session, None);
    served.prompt(session, "/scenario crash");
    let banner = wait_op(&mut reader, |op| {
        op["op"] == "web_banner"
            && op["text"]
                .as_str()
                .is_some_and(|t| t.contains("agent exited"))
    });
    assert_eq!(banner["level"], "warning");
    let text = transcript(&served, session).to_string();
    assert!(
        text.contains("This turn will stop abruptly"),
        "partial reply kept: {text}"
    );
    served.prompt(session, "are you back?");
    served.wait_reply_containing(session, "are you back?");
    served.stop();
}

#[test]
fn cancel_ends_a_stalled_turn() {
    let dir = temp_dir("stall");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let session = served.create_session();
    let mut reader = served.sse(session, None);
    served.prompt(session, "/scenario stall");
    wait_op(&mut reader, |op| {
        op["op"] == "insert_entry"
            && op["entry"]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Working"))
    });
    let response = served.post_json(&format!("/api/sessions/{session}/cancel"), "{}");
    assert_eq!(response.status, 200, "{}", response.body);
    let state = wait_op(&mut reader, |op| {
        op["op"] == "set_state" && op["state"]["stopReason"] == "cancelled"
    });
    assert_eq!(state["state"]["status"], "idle");
    served.stop();
}

#[test]
fn a_permission_is_answered_only_with_an_offered_option_and_only_once() {
    let dir = temp_dir("permission");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let session = served.create_session();
    let mut reader = served.sse(session, None);
    served.prompt(session, "/scenario tools");
    let question = wait_op(&mut reader, |op| op["op"] == "web_permission");
    let key = question["key"].as_str().unwrap().to_string();
    let options: Vec<&str> = question["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["optionId"].as_str())
        .collect();
    assert_eq!(
        options,
        vec!["allow", "reject", "allow_always", "reject_always"]
    );
    let path = format!("/api/sessions/{session}/permission");
    let invented = serde_json::json!({ "key": key, "optionId": "allow_always_everything" });
    assert_eq!(served.post_json(&path, &invented.to_string()).status, 400);
    let reject = serde_json::json!({ "key": key, "optionId": "reject" });
    assert_eq!(served.post_json(&path, &reject.to_string()).status, 200);
    assert_eq!(served.post_json(&path, &reject.to_string()).status, 409);
    let replies = served.wait_reply_containing(session, "unchanged");
    assert!(
        !replies.last().unwrap()["text"]
            .as_str()
            .unwrap()
            .contains("I changed the greeting")
    );
    served.stop();
}

#[cfg(unix)]
#[test]
fn an_agent_that_never_answers_initialize_fails_the_prompt_with_a_clear_error() {
    let dir = temp_dir("silent");
    let agent: Vec<OsString> = vec!["sh".into(), "-c".into(), "cat > /dev/null".into()];
    let served = start_serve(
        &dir.join("db.sqlite"),
        &["--agent-startup-timeout", "1"],
        &agent,
        None,
        &[],
    );
    assert_eq!(served.post_json("/api/sessions", "{}").status, 201);
    let response = served.post_json("/api/sessions/1/prompt", "{\"text\":\"anyone?\"}");
    assert_eq!(response.status, 503, "{}", response.body);
    assert!(
        response.body.contains("did not answer initialize"),
        "{}",
        response.body
    );
    served.sigkill();
}

/// A v1 agent in shell that offers `session/load` and replays its (fixed) history on load.
#[cfg(unix)]
const LOADING_AGENT: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\).*/\1/p')
  update() {
    printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"%s","content":{"type":"text","text":"%s"}}}}\n' "$1" "$2"
  }
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}\n' "$id" ;;
    *'"method":"session/new"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
    *'"method":"session/load"'*)
      update user_message_chunk "hi"
      update agent_message_chunk "pong"
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
    *'"method":"session/prompt"'*)
      update agent_message_chunk "pong"
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id" ;;
  esac
done
"#;

#[cfg(unix)]
#[test]
fn after_a_restart_session_load_continues_the_session_without_duplicating_history() {
    let dir = temp_dir("load");
    let script = dir.join("agent.sh");
    std::fs::write(&script, LOADING_AGENT).unwrap();
    let db = dir.join("db.sqlite");
    let agent: Vec<OsString> = vec!["sh".into(), script.into()];
    let start = || start_serve(&db, &["--protocol", "1"], &agent, None, &[]);
    let users_and_replies = |served: &Served| {
        let transcript = transcript(served, 1);
        (
            entry_texts(&transcript, "user_message"),
            entry_texts(&transcript, "agent_message"),
        )
    };
    let wait_replies = |served: &Served, n: usize| {
        wait_transcript(served, 1, "no reply", |t| {
            entry_texts(t, "agent_message").len() >= n
        });
    };

    let first = start();
    assert_eq!(first.post_json("/api/sessions", "{}").status, 201);
    let sent = first.post_json("/api/sessions/1/prompt", "{\"text\":\"hi\"}");
    assert_eq!(sent.status, 202, "{}", sent.body);
    wait_replies(&first, 1);
    first.sigkill();

    let second = start();
    let sent = second.post_json("/api/sessions/1/prompt", "{\"text\":\"again\"}");
    assert_eq!(sent.status, 202, "{}", sent.body);
    wait_replies(&second, 2);
    let (users, replies) = users_and_replies(&second);
    assert_eq!(
        users,
        vec!["hi", "again"],
        "the replayed history is not applied twice"
    );
    assert_eq!(replies, vec!["pong", "pong"]);
    second.sigkill();
}
