//! A session of many entries through the real `spindle serve`: the reference agent plays a
//! script of `entries` entries in one turn (agent messages and tool calls alternating, each
//! with its own id); an SSE observer must see every entry with its exact text; the transcript
//! endpoint must list them all; after a restart the server must rebuild the same transcript
//! from its wire log, and a new observer must get all of it again (its tail in the reset
//! snapshot, the older entries page by page from `GET /api/sessions/{id}/entries`). Figures (time, server peak
//! RSS) are printed, never asserted.
//!
//! The small size runs in every `cargo test`; the full size is `#[ignore]`d:
//!
//! ```text
//! cargo test -p spindle --release --test end_to_end load_web_large_session -- --ignored --nocapture
//! ```

use crate::harness;
use crate::serve_support;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use harness::{TempDir, reference_agent_v1, wait_for};
use serve_support::{SseReader, TextView, proc_status_kib, start_serve, transcript};

const PATIENCE: Duration = Duration::from_secs(600);

fn message_text(i: usize) -> String {
    format!("reply {i}: every entry keeps its own text")
}

fn tool_title(i: usize) -> String {
    format!("step {i}")
}

/// A script of one turn with `entries` entries (even: half agent messages, half tool calls).
fn write_script(path: &std::path::Path, entries: usize) {
    let mut script = String::from("{\"wait_for_prompt\":true}\n");
    for i in 0..entries / 2 {
        writeln!(
            script,
            r#"{{"sessionUpdate":"agent_message_chunk","messageId":"m{i}","content":{{"type":"text","text":"{}"}}}}"#,
            message_text(i)
        )
        .unwrap();
        writeln!(
            script,
            r#"{{"sessionUpdate":"tool_call","toolCallId":"c{i}","title":"{}","kind":"read","status":"completed"}}"#,
            tool_title(i)
        )
        .unwrap();
    }
    script.push_str("{\"end_turn\":\"end_turn\"}\n{\"wait_for_prompt\":true}\n");
    std::fs::write(path, script).expect("write script");
}

fn agent(script: &std::path::Path) -> Vec<OsString> {
    let mut command = reference_agent_v1();
    command.extend(["--no-script-sleep".into(), "--script".into(), script.into()]);
    command
}

/// Reads SSE events until the view holds `entries / 2` agent messages and as many tool calls,
/// the last message with its exact text. Returns the view.
fn observe_all(reader: &mut SseReader, entries: usize) -> TextView {
    let mut view = TextView::default();
    let last = message_text(entries / 2 - 1);
    loop {
        let event = reader.next_event().expect("the SSE stream ended early");
        view.apply_event(&event);
        // Collecting texts is O(entries): only once the view can be complete.
        if view.order.len() < entries {
            continue;
        }
        let messages = view.texts_of("agent_message");
        if messages.len() == entries / 2
            && messages.last() == Some(&last)
            && view.texts_of("tool_call").len() == entries / 2
        {
            return view;
        }
    }
}

/// The agent messages a new observer gets: the reset snapshot's tail (with `web_window` saying
/// how many entries come before it), then `GET /entries` pages back to the first entry.
fn observe_tail_then_pages(
    served: &serve_support::Served,
    session: i64,
    reader: &mut SseReader,
    entries: usize,
) -> Vec<String> {
    let reset = reader.next_event().expect("a reset snapshot");
    assert_eq!(reset.event, "reset");
    let window = reset
        .ops()
        .into_iter()
        .find(|op| op["op"] == "web_window")
        .expect("a long session's snapshot says how many entries come before its tail");
    // The entries of the script, the prompt that started it and the turn's end.
    assert_eq!(window["total"], entries + 2);
    let mut tail = TextView::default();
    tail.apply_event(&reset);
    let mut messages = tail.texts_of("agent_message");
    let mut first = window["first"].as_u64().expect("first") as usize;
    assert!(first > 0 && first < entries, "{window}");
    while first > 0 {
        let page = served.get_json(&format!(
            "/api/sessions/{session}/entries?before={first}&limit=500"
        ));
        let older: Vec<String> = page["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter(|item| item["entry"]["kind"] == "agent_message")
            .map(|item| item["entry"]["text"].as_str().unwrap_or("").to_string())
            .collect();
        messages.splice(0..0, older);
        first = page["first"].as_u64().expect("first") as usize;
    }
    messages
}

fn check_transcript(value: &serde_json::Value, entries: usize) {
    let list = value["entries"].as_array().expect("entries");
    let messages: Vec<&str> = list
        .iter()
        .filter(|e| e["kind"] == "agent_message")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(messages.len(), entries / 2);
    for (i, text) in messages.iter().enumerate() {
        assert_eq!(*text, message_text(i), "message {i}");
    }
    let tools: Vec<&serde_json::Value> = list.iter().filter(|e| e["kind"] == "tool_call").collect();
    assert_eq!(tools.len(), entries / 2);
    assert_eq!(
        tools.last().unwrap()["toolCall"]["title"],
        tool_title(entries / 2 - 1)
    );
}

fn session_of(entries: usize) {
    let dir = TempDir::new("load-web-large");
    let script = dir.join("script.jsonl");
    write_script(&script, entries);
    let db = dir.join("db.sqlite");
    let served = start_serve(&db, &[], &agent(&script), None, &[]);
    let session = served.create_session();
    let mut reader = served.sse(session, None);
    let started = Instant::now();
    served.prompt(session, "go");
    let observer = std::thread::spawn(move || observe_all(&mut reader, entries));
    let view = observer.join().expect("observer");
    let streamed = started.elapsed();
    served.wait_finished_turns(session, 1);
    let before = transcript(&served, session);
    check_transcript(&before, entries);
    let peak_kib = proc_status_kib(served.child.id(), "VmHWM").unwrap_or(0);
    served.stop();

    // Restart on the same database: the transcript is rebuilt from the wire log.
    let restarted = Instant::now();
    let served = start_serve(&db, &[], &agent(&script), None, &[]);
    let after = wait_for(PATIENCE, "the session after the restart", || {
        let value = transcript(&served, session);
        value["entries"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
            .then_some(value)
    });
    let rebuilt = restarted.elapsed();
    check_transcript(&after, entries);
    assert_eq!(
        after["entries"], before["entries"],
        "the restart changed the transcript"
    );
    // A new observer gets the tail first and pages back through the older entries.
    let mut reader = served.sse(session, None);
    let again = observe_tail_then_pages(&served, session, &mut reader, entries);
    assert_eq!(again, view.texts_of("agent_message"));
    let restart_peak_kib = proc_status_kib(served.child.id(), "VmHWM").unwrap_or(0);
    served.stop();
    eprintln!(
        "session of {entries} entries: streamed to an SSE observer in {:.2} s, server peak RSS \
         {} MiB; restart and rebuild from the wire log {:.2} s, peak RSS after the restart and a \
         new observer {} MiB",
        streamed.as_secs_f64(),
        peak_kib / 1024,
        rebuilt.as_secs_f64(),
        restart_peak_kib / 1024
    );
}

#[test]
fn load_web_session_of_2000_entries() {
    session_of(2_000);
}

#[test]
#[ignore = "load: run with --ignored (see the module docs)"]
fn load_web_session_of_100000_entries() {
    session_of(100_000);
}
