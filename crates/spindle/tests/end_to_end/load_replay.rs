//! A long session through the real `spindle replay`: one recording whose
//! transcript has N entries (messages, thoughts and tool calls over many
//! turns). The small size runs in every `cargo test`; the 100,000-entry size
//! is `#[ignore]`d and run explicitly:
//!
//! ```text
//! cargo test -p spindle --release --test end_to_end load_replay -- --ignored --nocapture
//! ```

use crate::harness;

use std::io::Write;
use std::time::Instant;

use harness::{TempDir, run_measured};
use serde_json::{Value, json};

const SESSION: &str = "sess_load";
/// Entries per turn: one user prompt plus this many agent-side entries.
const AGENT_ENTRIES_PER_TURN: usize = 9;

/// Writes a recording whose transcript has exactly `entries` entries (a
/// multiple of 10): per turn one prompt, 3 messages, 3 thoughts, 3 tool
/// calls (each created, then completed), and the v1 response.
fn write_recording(path: &std::path::Path, entries: usize) -> usize {
    assert_eq!(entries % (AGENT_ENTRIES_PER_TURN + 1), 0);
    let turns = entries / (AGENT_ENTRIES_PER_TURN + 1);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let update = |u: Value| {
        json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": SESSION, "update": u}})
    };
    let mut lines = 0;
    for turn in 1..=turns {
        let mut emit = |v: Value| {
            serde_json::to_writer(&mut out, &v).unwrap();
            out.write_all(b"\n").unwrap();
            lines += 1;
        };
        emit(
            json!({"sent": {"jsonrpc": "2.0", "id": turn, "method": "session/prompt",
            "params": {"sessionId": SESSION,
                "prompt": [{"type": "text", "text": format!("question {turn}")}]}}}),
        );
        for k in 0..3 {
            emit(update(json!({"sessionUpdate": "agent_thought_chunk",
                "messageId": format!("t{turn}_{k}"),
                "content": {"type": "text", "text": format!("thinking {turn}.{k}")}})));
            emit(update(json!({"sessionUpdate": "tool_call",
                "toolCallId": format!("c{turn}_{k}"), "title": format!("step {k}"),
                "kind": "read", "status": "in_progress"})));
            emit(update(json!({"sessionUpdate": "tool_call_update",
                "toolCallId": format!("c{turn}_{k}"), "status": "completed"})));
            for piece in ["answer ", "part ", "done."] {
                emit(update(json!({"sessionUpdate": "agent_message_chunk",
                    "messageId": format!("a{turn}_{k}"),
                    "content": {"type": "text", "text": piece}})));
            }
        }
        emit(json!({"jsonrpc": "2.0", "id": turn, "result": {"stopReason": "end_turn"}}));
    }
    out.flush().unwrap();
    lines
}

/// Replays a generated session of `entries` entries; returns (lines, bytes,
/// seconds, peak RSS KiB).
fn replay_session(entries: usize) -> (usize, u64, f64, Option<u64>) {
    let dir = TempDir::new("load-replay");
    let file = dir.join("session.jsonl");
    let lines = write_recording(&file, entries);
    let bytes = std::fs::metadata(&file).unwrap().len();
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_spindle"));
    let started = Instant::now();
    let (out, peak) = run_measured(&exe, &["replay".as_ref(), file.as_os_str()], None, &[]);
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replay: Value = serde_json::from_slice(&out.stdout).unwrap();
    let turns = entries / (AGENT_ENTRIES_PER_TURN + 1);
    // The recording's entries, and the engine's `turn_end` after each turn.
    assert_eq!(replay["entries"].as_array().unwrap().len(), entries + turns);
    assert_eq!(replay["state"]["turns"], turns);
    assert_eq!(replay["turns"].as_array().unwrap().len(), turns);
    assert!(
        replay["finalReply"]
            .as_str()
            .unwrap()
            .starts_with("answer part done."),
        "{}",
        replay["finalReply"]
    );
    let last_tool = replay["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e["kind"] == "tool_call")
        .unwrap();
    assert_eq!(last_tool["toolCall"]["status"], "completed");
    (lines, bytes, seconds, peak)
}

#[test]
fn load_replay_session_of_5000_entries() {
    let (lines, bytes, seconds, peak) = replay_session(5_000);
    eprintln!(
        "replay 5,000 entries: {lines} lines, {bytes} bytes, {seconds:.2} s, peak RSS {peak:?} KiB"
    );
    if let Some(kib) = peak {
        assert!(kib < 512 * 1024, "peak RSS {kib} KiB");
    }
}

#[test]
#[ignore = "load: run with --ignored (see the module docs)"]
fn load_replay_session_of_100000_entries() {
    let (lines, bytes, seconds, peak) = replay_session(100_000);
    eprintln!(
        "replay 100,000 entries: {lines} lines, {bytes} bytes, {seconds:.2} s, peak RSS {peak:?} KiB"
    );
    if let Some(kib) = peak {
        assert!(kib < 2 * 1024 * 1024, "peak RSS {kib} KiB");
    }
}
