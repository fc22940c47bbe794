//! Durability of `spindle serve` under kill -9.
//!
//! The documented guarantee: every line from the agent is committed to the SQLite log before
//! any op derived from it is sent to a browser, so everything a browser has shown survives a
//! kill -9 of the server; the restarted server rebuilds the same transcript from the log.

use crate::serve_support;

use serve_support::{Served, TextView, temp_dir};

const SLOW_REPLY: &str = "Slow streaming: every word arrives after a pause, so you can watch the reply grow and cancel it halfway through if you like.";

#[test]
fn what_a_browser_saw_before_kill_9_is_intact_after_restart() {
    let dir = temp_dir("kill9");
    let db = dir.join("db.sqlite");
    let served = Served::start(&db, &[], 20);
    let session = served.create_session();
    served.prompt(session, "hello before the crash");
    served.wait_reply_containing(session, "hello before the crash");
    let mut reader = served.sse(session, None);
    let mut seen = TextView::default();
    served.prompt(session, "/scenario slow");
    // Watch the reply stream until several words are on screen, then kill the server.
    let reply_id = loop {
        let event = reader.next_event().expect("stream ended early");
        seen.apply_event(&event);
        let streaming = seen
            .order
            .iter()
            .rev()
            .find(|id| seen.kinds.get(*id).map(String::as_str) == Some("agent_message"))
            .filter(|id| seen.text(id).starts_with("Slow"))
            .cloned();
        if let Some(id) = streaming
            && seen.text(&id).split(' ').count() >= 4
        {
            break id;
        }
    };
    let shown = seen.text(&reply_id);
    assert!(shown.len() < SLOW_REPLY.len(), "killed mid-stream");
    served.sigkill();

    let served = Served::start(&db, &[], 20);
    let mut reader = served.sse(session, None);
    let event = reader.next_event().unwrap();
    assert_eq!(event.event, "reset");
    let mut restored = TextView::default();
    restored.apply_event(&event);
    // Everything shown before the kill is there (the log may hold a few lines more: those
    // committed but not yet sent when the process died).
    let after = restored.text(&reply_id);
    assert!(
        after.starts_with(&shown),
        "shown before the kill: {shown:?}, restored: {after:?}"
    );
    assert!(SLOW_REPLY.starts_with(&after), "{after:?}");
    assert_eq!(
        restored.texts_of("user_message"),
        vec![
            "hello before the crash".to_string(),
            "/scenario slow".to_string()
        ]
    );
    // The earlier, finished turn was persisted with its reply.
    let replies = served.get_json(&format!("/api/sessions/{session}/replies"));
    let texts: Vec<&str> = replies["replies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["text"].as_str())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("hello before the crash")),
        "{replies}"
    );
    // The page says the turn was interrupted, and the session accepts a new prompt.
    let banner = event
        .ops()
        .into_iter()
        .find(|op| op["op"] == "web_banner")
        .expect("a banner about the interrupted turn");
    assert!(banner["text"].as_str().unwrap().contains("restarted"));
    served.prompt(session, "after the crash");
    served.wait_reply_containing(session, "after the crash");
    // A second restart replays the same log into the same transcript.
    let before = served.get_json(&format!("/api/sessions/{session}/transcript"));
    served.stop();
    let served = Served::start(&db, &[], 20);
    let again = served.get_json(&format!("/api/sessions/{session}/transcript"));
    assert_eq!(again["entries"], before["entries"]);
    served.stop();
}
