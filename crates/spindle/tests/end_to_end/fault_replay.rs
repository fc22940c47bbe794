//! Bad input through the real `spindle replay`: every garbage line becomes one
//! diagnostic carrying its line number, and the updates after it still apply.

use crate::harness;

use harness::{TempDir, run_measured, spindle};
use serde_json::{Value, json};

const SESSION: &str = "sess_fault";

fn prompt_line(id: u64, text: &str) -> String {
    json!({"sent": {"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": SESSION, "prompt": [{"type": "text", "text": text}]}}})
    .to_string()
}

fn chunk_line(message_id: &str, text: &str) -> String {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION,
        "update": {"sessionUpdate": "agent_message_chunk", "messageId": message_id,
            "content": {"type": "text", "text": text}}}})
    .to_string()
}

fn stop_line(id: u64, reason: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": reason}}).to_string()
}

/// Deterministic noise (xorshift), newlines removed so it stays one line.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            match (seed >> 24) as u8 {
                b'\n' => b'?',
                b => b,
            }
        })
        .collect()
}

fn replay_bytes(dir: &TempDir, bytes: &[u8]) -> (Value, i32) {
    let file = dir.join("recording.jsonl");
    std::fs::write(&file, bytes).unwrap();
    let out = spindle().arg("replay").arg(&file).output().unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "replay printed no JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (json, out.status.code().unwrap_or(-1))
}

fn diagnostic_lines(replay: &Value) -> Vec<u64> {
    replay["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["line"].as_u64().unwrap())
        .collect()
}

#[test]
fn fault_replay_garbage_lines_are_numbered_and_later_updates_still_apply() {
    let dir = TempDir::new("replay-garbage");
    let mut input: Vec<Vec<u8>> = vec![
        prompt_line(1, "hi").into_bytes(),           // 1
        chunk_line("m1", "Hello").into_bytes(),      // 2
        b"\x00\x01\x02 nul and control".to_vec(),    // 3
        b"\xff\xfe\x80 invalid utf-8 \xc3".to_vec(), // 4
        noise(4096, 0x9e37_79b9_7f4a_7c15),          // 5
        b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":".to_vec(), // 6
        "[".repeat(100_000).into_bytes(),            // 7: deep nesting
        b"42".to_vec(),                              // 8
        b"\"just a string\"".to_vec(),               // 9
        b"{\"sent\": 12}".to_vec(),                  // 10
        chunk_line("m1", ", world").into_bytes(),    // 11
        stop_line(1, "end_turn").into_bytes(),       // 12
    ];
    // CRLF line endings are accepted, not diagnosed.
    input.push(format!("{}\r", prompt_line(2, "again")).into_bytes()); // 13
    input.push(chunk_line("m2", "Second reply").into_bytes()); // 14
    input.push(stop_line(2, "end_turn").into_bytes()); // 15
    let bytes = input.join(&b'\n');

    let (replay, code) = replay_bytes(&dir, &bytes);
    assert_eq!(code, 1, "diagnostics mean exit code 1");
    assert_eq!(
        diagnostic_lines(&replay),
        vec![3, 4, 5, 6, 7, 8, 9, 10],
        "one diagnostic per garbage line, in order: {:#}",
        replay["diagnostics"]
    );
    for d in replay["diagnostics"].as_array().unwrap() {
        let message = d["message"].as_str().unwrap();
        assert!(!message.is_empty() && message.len() < 1000, "{d}");
    }
    let turns = replay["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{:#}", replay["turns"]);
    assert_eq!(turns[0]["reply"], "Hello, world");
    assert_eq!(turns[1]["reply"], "Second reply");
    assert_eq!(replay["state"]["status"], "idle");
    assert_eq!(replay["finalReply"], "Second reply");
}

#[test]
fn fault_replay_binary_noise_only_never_panics() {
    let dir = TempDir::new("replay-noise");
    let mut bytes = Vec::new();
    for seed in 1..=64u64 {
        bytes.extend(noise(
            512 + seed as usize * 37,
            seed.wrapping_mul(0x2545_f491_4f6c_dd1d),
        ));
        bytes.push(b'\n');
    }
    let (replay, code) = replay_bytes(&dir, &bytes);
    assert_eq!(code, 1);
    assert_eq!(diagnostic_lines(&replay), (1..=64).collect::<Vec<u64>>());
    assert_eq!(replay["entries"], json!([]));
}

#[test]
fn fault_replay_recording_cut_mid_line_keeps_everything_before_the_cut() {
    // What a crash (of the agent or of the recorder) leaves behind: the last
    // line is cut in the middle and has no newline.
    let dir = TempDir::new("replay-cut");
    let full = chunk_line("m1", " and this part was being written");
    let text = format!(
        "{}\n{}\n{}",
        prompt_line(1, "tell me"),
        chunk_line("m1", "The reply so far"),
        &full[..full.len() / 2]
    );
    let (replay, code) = replay_bytes(&dir, text.as_bytes());
    assert_eq!(code, 1);
    assert_eq!(diagnostic_lines(&replay), vec![3]);
    assert_eq!(replay["diagnostics"][0]["code"], "invalid_json");
    assert_eq!(replay["turns"][0]["reply"], "The reply so far");
    assert_eq!(
        replay["state"]["turnOpen"], true,
        "a turn without a stop reason stays open, it is not invented"
    );
}

/// The text of every entry of a replay, in order.
fn entry_texts(replay: &Value) -> Vec<&str> {
    replay["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["text"].as_str())
        .collect()
}

/// The line numbers of a replay's diagnostics with this code.
fn coded_diagnostic_lines(replay: &Value, code: &str) -> Vec<u64> {
    replay["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == code)
        .filter_map(|d| d["line"].as_u64())
        .collect()
}

#[test]
fn fault_replay_stale_and_unknown_response_ids_lose_no_reply_text() {
    // A duplicate response to an earlier prompt, and a response to an id that
    // was never sent: no reply text is lost or reordered, and neither ends a
    // turn (F2): each is a diagnostic with its line number.
    let dir = TempDir::new("replay-ids");
    let text = [
        prompt_line(1, "one"),
        chunk_line("m1", "First"),
        stop_line(1, "end_turn"),
        prompt_line(2, "two"),
        stop_line(1, "refusal"),
        json!({"jsonrpc": "2.0", "id": 999, "error": {"code": -1, "message": "who?"}}).to_string(),
        chunk_line("m2", "Second"),
        stop_line(2, "end_turn"),
    ]
    .join("\n");
    let (replay, _) = replay_bytes(&dir, text.as_bytes());
    let texts = entry_texts(&replay);
    assert_eq!(texts, vec!["one", "First", "two", "Second"], "{replay:#}");
    assert_eq!(replay["finalReply"], "Second");
    assert_eq!(replay["state"]["status"], "idle");
    assert_eq!(replay["state"]["turns"], 2, "{replay:#}");
    assert_eq!(replay["state"]["stopReason"], "end_turn", "{replay:#}");
    let stale = coded_diagnostic_lines(&replay, "unknown_response");
    assert_eq!(stale, vec![5, 6], "{replay:#}");
}

#[test]
fn fault_replay_huge_lines_are_applied_or_diagnosed_with_bounded_memory() {
    // A 16 MiB text chunk followed by a 16 MiB garbage line: the chunk is
    // kept, the garbage is one diagnostic, and peak memory stays a small
    // multiple of the longest line (replay holds one line at a time).
    const BIG: usize = 16 << 20;
    let dir = TempDir::new("replay-huge");
    let file = dir.join("huge.jsonl");
    let mut bytes = Vec::with_capacity(2 * BIG + 4096);
    bytes.extend(prompt_line(1, "big").bytes());
    bytes.push(b'\n');
    bytes.extend(chunk_line("m1", &"y".repeat(BIG)).bytes());
    bytes.push(b'\n');
    bytes.extend(std::iter::repeat_n(b'#', BIG));
    bytes.push(b'\n');
    bytes.extend(chunk_line("m1", "tail").bytes());
    bytes.push(b'\n');
    bytes.extend(stop_line(1, "end_turn").bytes());
    bytes.push(b'\n');
    std::fs::write(&file, &bytes).unwrap();
    drop(bytes);

    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_spindle"));
    let (out, peak_kib) = run_measured(
        &exe,
        &[
            "replay".as_ref(),
            "--format".as_ref(),
            "text".as_ref(),
            file.as_os_str(),
        ],
        None,
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the garbage line is a diagnostic"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&"y".repeat(1000)), "the big chunk is kept");
    assert!(text.contains("tail"), "updates after the huge lines apply");
    assert!(text.contains("line 3"), "the diagnostic names line 3");
    if let Some(kib) = peak_kib {
        eprintln!("replay of two 16 MiB lines: peak RSS {kib} KiB");
        assert!(kib < 160 * 1024, "peak RSS {kib} KiB for 16 MiB lines");
    }
}

#[test]
fn fault_replay_f3_an_update_for_another_session_is_diagnosed_and_not_applied() {
    let dir = TempDir::new("replay-f3");
    let other = json!({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "OTHER", "update": {"sessionUpdate": "agent_message_chunk",
            "messageId": "m9", "content": {"type": "text", "text": "INTRUDER"}}}})
    .to_string();
    let text = [
        prompt_line(1, "one"),
        chunk_line("m1", "Hel"),
        other,
        chunk_line("m1", "lo"),
        stop_line(1, "end_turn"),
    ]
    .join("\n");
    let (replay, code) = replay_bytes(&dir, text.as_bytes());
    let texts = entry_texts(&replay);
    assert_eq!(texts, vec!["one", "Hello"], "{replay:#}");
    let foreign = coded_diagnostic_lines(&replay, "foreign_session");
    assert_eq!(foreign, vec![3], "{replay:#}");
    assert_eq!(code, 1, "a diagnostic makes the exit code 1");
}
