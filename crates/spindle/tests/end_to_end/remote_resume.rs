//! Resumption and slow clients on `/acp`: a session stream cut mid-turn and reopened with
//! `Last-Event-ID` loses and doubles nothing; an id the buffer no longer covers gets a
//! snapshot; a stalled subscriber is dropped and told while another keeps up; a WebSocket peer
//! resumes with `resumeFrom`.

use std::time::Instant;

use serde_json::{Value, json};

use crate::remote_support::{AcpEvent, AcpHttp, AcpWs, agent_text};
use crate::serve_support::{PATIENCE, Served, temp_dir};

fn counter(id: &str) -> u64 {
    id.split_once('-')
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or_else(|| panic!("not a G-N id: {id:?}"))
}

fn is_answer(id: u64) -> impl Fn(&Value) -> bool {
    move |m: &Value| m["id"] == json!(id) && m.get("method").is_none()
}

#[test]
fn remote_resume_a_stream_cut_mid_turn_resumes_with_nothing_lost_or_doubled() {
    let dir = temp_dir("remote-resume");
    let served = Served::start(&dir.join("db.sqlite"), &["--protocol", "1"], 2);
    let mut a = AcpHttp::connect(&served, &["event_ids"]);
    let mut connection = a.connection_stream(None);
    let session = a.new_session(&mut connection);
    // An observer that reads the same turn without interruption: the reference.
    let mut b = AcpHttp::connect(&served, &[]);
    let attach = json!({ "sessionId": session, "role": "observer", "historyPolicy": "none" });
    let (b_attach, _) = b.request("session/attach", attach, Some(&session));
    let mut b_stream = b.session_stream(&session, None);
    b_stream.response(b_attach);

    let mut first = a.session_stream(&session, None);
    let prompt = json!({ "sessionId": session,
                         "prompt": [{ "type": "text", "text": "/scenario refine" }] });
    let (turn, _) = a.request("session/prompt", prompt, Some(&session));
    let mut seen: Vec<AcpEvent> = Vec::new();
    while seen.len() < 6 {
        seen.push(first.next().expect("the turn streams"));
    }
    let last = first.last_id.clone();
    let first_ids = first.ids.clone();
    drop(first); // the TCP connection is cut mid-turn
    let mut second = a.session_stream(&session, Some(&last));
    assert_eq!(second.status, 200);
    let rest = second.collect_until(is_answer(turn));
    assert!(!rest.is_empty());
    seen.extend(rest);

    // Every id, also of events with no data (the client's own prompt is not echoed to it).
    let ids: Vec<u64> = first_ids
        .iter()
        .chain(second.ids.iter())
        .map(|id| counter(id))
        .collect();
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "one id each, none missing: {ids:?}"
    );
    let messages: Vec<Value> = seen.iter().map(|e| e.message.clone()).collect();
    assert_eq!(messages.last().unwrap()["result"]["stopReason"], "end_turn");
    // The turn's own updates (B, another client, also sees A's prompt, which A is not sent).
    let is_turn = |m: &Value| {
        let kind = &m["params"]["update"]["sessionUpdate"];
        m["method"] == "session/update"
            && kind != "user_message_chunk"
            && kind != "available_commands_update"
    };
    let updates =
        |all: &[Value]| -> Vec<Value> { all.iter().filter(|m| is_turn(m)).cloned().collect() };
    // B read the same turn without interruption (it never gets A's answer: count updates).
    let wanted = updates(&messages).len();
    let mut reference = Vec::new();
    while reference.len() < wanted {
        let event = b_stream.next().expect("B streams the turn");
        if is_turn(&event.message) {
            reference.push(event.message);
        }
    }
    assert_eq!(
        updates(&messages),
        reference,
        "the resumed stream has exactly the turn's updates"
    );
}

#[test]
fn remote_resume_an_id_the_buffer_no_longer_holds_gets_a_snapshot_notice() {
    let dir = temp_dir("remote-snapshot");
    let served = Served::start(&dir.join("db.sqlite"), &["--protocol", "1"], 0);
    let mut a = AcpHttp::connect(&served, &["event_ids"]);
    let mut connection = a.connection_stream(None);
    let session = a.new_session(&mut connection);
    let mut stream = a.session_stream(&session, None);
    let prompt =
        json!({ "sessionId": session, "prompt": [{ "type": "text", "text": "remember me" }] });
    let (turn, _) = a.request("session/prompt", prompt, Some(&session));
    stream.response(turn);
    drop(stream);
    // An id of another server run: not in the buffer.
    let mut resumed = a.session_stream(&session, Some("0-3"));
    let first = resumed.next().expect("a snapshot");
    assert_eq!(
        first.message["method"], "_spindle/snapshot",
        "{}",
        first.message
    );
    let history = resumed.collect_until(|m| {
        m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            && agent_text([m]).ends_with('.')
    });
    let messages: Vec<Value> = history.iter().map(|e| e.message.clone()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m["params"]["update"]["content"]["text"] == "remember me")
    );
    assert!(agent_text(&messages).starts_with("You said: \"remember me\""));
    // A malformed id is refused, not guessed at.
    assert_eq!(a.session_stream(&session, Some("yesterday")).status, 400);
}

#[test]
fn remote_resume_a_stalled_subscriber_is_dropped_and_told_while_another_keeps_up() {
    let dir = temp_dir("remote-stall");
    let served = Served::start(&dir.join("db.sqlite"), &["--protocol", "1"], 0);
    let mut a = AcpHttp::connect(&served, &["event_ids"]);
    let mut connection = a.connection_stream(None);
    let session = a.new_session(&mut connection);
    let mut live = a.session_stream(&session, None);
    // A second connection attaches and opens its stream, then never reads it.
    let mut stalled = AcpHttp::connect(&served, &["event_ids"]);
    let attach = json!({ "sessionId": session, "role": "observer", "historyPolicy": "none" });
    stalled.request("session/attach", attach, Some(&session));
    let mut stalled_stream = stalled.session_stream(&session, None);

    // A 200,000-update turn: more than a subscriber may leave queued (131,072 messages), so
    // the stalled one is dropped; the reader that keeps reading is never dropped.
    let prompt = json!({ "sessionId": session,
                         "prompt": [{ "type": "text", "text": "/stream 200000 mixed" }] });
    let (turn, _) = a.request("session/prompt", prompt, Some(&session));
    let mut chunks = 0usize;
    let answer = loop {
        let event = live
            .next()
            .expect("the reader that keeps reading is never dropped");
        assert_ne!(event.message["method"], "_spindle/stream_dropped");
        if event.message["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            chunks += 1;
        }
        if is_answer(turn)(&event.message) {
            break event.message;
        }
    };
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(chunks > 0);
    let ids: Vec<u64> = live.ids.iter().map(|id| counter(id)).collect();
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "nothing lost or doubled"
    );
    assert!(!live.comments.iter().any(|c| c.starts_with("dropped")));
    let stats = served.get_json(&format!("/api/sessions/{session}/stats"));
    assert!(stats["acpDroppedSlow"].as_u64().unwrap() >= 1, "{stats}");
    // The stalled client, reading at last, finds the end of its stream and why.
    let told = stalled_stream.until(|m| m["method"] == "_spindle/stream_dropped");
    assert!(told.is_some(), "the dropped client is told");
    assert!(
        stalled_stream
            .comments
            .iter()
            .any(|c| c.starts_with("dropped"))
    );
    assert!(stalled_stream.next().is_none(), "its stream ended");
}

/// The next message of a WebSocket peer, failing after [`PATIENCE`] (the server's pings keep
/// a plain read waiting forever).
fn next_within(ws: &mut AcpWs, deadline: Instant, what: &str) -> Value {
    loop {
        assert!(Instant::now() < deadline, "waited too long for {what}");
        match ws.socket.read() {
            Ok(tungstenite::Message::Text(text)) => {
                return serde_json::from_str(text.as_str()).expect("JSON frame");
            }
            Ok(tungstenite::Message::Close(_)) | Err(_) => panic!("the socket closed: {what}"),
            Ok(_) => {}
        }
    }
}

/// Reads a WebSocket peer's messages until one satisfies `check`, within `deadline`.
fn next_until(ws: &mut AcpWs, deadline: Instant, what: &str, check: impl Fn(&Value) -> bool) {
    while !check(&next_within(ws, deadline, what)) {}
}

/// A session update of the turn itself (not the prompt's echo, which the sender is not sent).
fn is_turn_update(m: &Value) -> bool {
    let kind = &m["params"]["update"]["sessionUpdate"];
    m["method"] == "session/update"
        && kind != "user_message_chunk"
        && kind != "available_commands_update"
}

/// A v1 peer cut mid-turn reconnects with `resumeFrom` and `previousConnectionId`: the rest of
/// the turn and the prompt's answer (under its original id) come on the new socket.
fn websocket_peer_resumes(serve_args: &[&str], prompt_text: &str, greets: bool) {
    let dir = temp_dir("remote-ws-resume");
    let served = Served::start(&dir.join("db.sqlite"), serve_args, 2);
    let deadline = Instant::now() + PATIENCE;
    let (mut ws, init) = AcpWs::connect(&served, &["event_ids", "attach"]);
    assert_eq!(init["result"]["protocolVersion"], 1);
    let new = ws.send_request("session/new", json!({ "cwd": "/", "mcpServers": [] }));
    let session = ws.response(new)["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    if greets {
        // A v2 agent greets its new session (background work, no turn) right after answering
        // it, which `session/new` waited for: the peer takes the greeting before the turn.
        next_until(&mut ws, deadline, "the greeting", |m| {
            m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        });
    }
    // An observer reads the same turn without interruption: the reference.
    let (mut observer, _) = AcpWs::connect(&served, &[]);
    let attach = json!({ "sessionId": session, "role": "observer", "historyPolicy": "none" });
    let observed = observer.send_request("session/attach", attach);
    observer.response(observed);
    let prompt = json!({ "sessionId": session,
                         "prompt": [{ "type": "text", "text": prompt_text }] });
    let turn = ws.send_request("session/prompt", prompt);
    let old_connection = ws.connection.clone();
    // Read a few updates, noting the event id announced before each.
    let mut last_id = String::new();
    let mut before = Vec::new();
    while before.len() < 5 {
        let message = next_within(&mut ws, deadline, "the turn's first updates");
        assert!(!is_answer(turn)(&message), "cut before the turn ends");
        if message["method"] == "_spindle/event_id" {
            last_id = message["params"]["eventId"].as_str().unwrap().to_string();
        } else if message["method"] == "session/update" {
            assert!(
                !last_id.is_empty(),
                "an event id precedes each session message"
            );
            before.push(message);
        }
    }
    drop(ws); // the socket is cut mid-turn
    let (mut again, _) = AcpWs::connect(&served, &["event_ids", "attach"]);
    // The new connection takes over the old one's answers: the prompt sent on the old socket
    // is answered here, under its original id, when its turn ends.
    let attach = json!({ "sessionId": session, "role": "controller", "historyPolicy": "none",
                         "resumeFrom": last_id, "previousConnectionId": old_connection });
    let attached = again.send_request("session/attach", attach);
    assert_ne!(attached, turn);
    let mut after = Vec::new();
    let answer = loop {
        let message = next_within(&mut again, deadline, "the old prompt's answer");
        if is_answer(turn)(&message) {
            break message;
        }
        if message["method"] == "session/update" {
            after.push(message);
        }
    };
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // A closed connection is taken over once; an unknown one is refused.
    let (mut third, _) = AcpWs::connect(&served, &["event_ids", "attach"]);
    for previous in [old_connection.as_str(), "00000000000000000000000000000000"] {
        let attach = json!({ "sessionId": session, "previousConnectionId": previous });
        let id = third.send_request("session/attach", attach);
        assert_eq!(third.response(id)["error"]["code"], -32602);
    }
    // Nothing lost or doubled: the same updates as the observer's, in the same order.
    let all: Vec<Value> = before.into_iter().chain(after).collect();
    let turn_updates: Vec<Value> = all.iter().filter(|m| is_turn_update(m)).cloned().collect();
    let mut reference = Vec::new();
    while reference.len() < turn_updates.len() {
        let message = next_within(&mut observer, deadline, "the observer's updates");
        if is_turn_update(&message) {
            reference.push(message);
        }
    }
    assert_eq!(
        turn_updates, reference,
        "the resumed peer saw the turn as the observer did"
    );
    // And the same reply as the page's transcript.
    let replies = crate::serve_support::replies(&served, session.parse().unwrap());
    let reply = replies.last().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string();
    let streamed = agent_text(&all);
    assert!(
        !reply.is_empty() && streamed.ends_with(&reply),
        "streamed {streamed:?} vs transcript {reply:?}"
    );
}

#[test]
fn remote_resume_a_websocket_peer_resumes_with_resume_from() {
    // The agent speaks v1, as the peer does.
    websocket_peer_resumes(&["--protocol", "1"], "/scenario refine", false);
}

#[test]
fn remote_resume_a_v1_websocket_peer_of_a_v2_agent_resumes_with_resume_from() {
    // The default serve: the peer gets the v2 session translated, and the v1 answer at the end.
    websocket_peer_resumes(&[], "/scenario plain", true);
}
