//! `spindle-schema-check --emitter agent|client FILE...`
//!
//! Reads recordings in the `spindle replay` format (`{"sent": <message>}` for what the client
//! sent, a bare message or `{"received": <message>}` for what the agent sent), follows each
//! conversation (the version from `initialize`, which method a response answers) and validates
//! every message of the emitting side against the official ACP JSON Schemas of the negotiated
//! version. Spindle's documented extension updates only get their envelope checked.
//!
//! Prints one `ok`/`FAIL` line per file and `N passed, M failed`; exits 1 when a message of
//! the emitter is invalid or a file holds none of them.

use std::process::ExitCode;

use serde_json::Value;
use spindle_protocol::schema_check::{Direction, SchemaConversation};

/// How many invalid messages of one file are printed in full.
const SHOWN_PER_FILE: usize = 5;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (emitter, files) = match args.as_slice() {
        [flag, side, files @ ..] if flag == "--emitter" && !files.is_empty() => {
            match side.as_str() {
                "agent" => (Direction::AgentToClient, files),
                "client" => (Direction::ClientToAgent, files),
                _ => return usage(),
            }
        }
        _ => return usage(),
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in files {
        match check_file(file, emitter) {
            Ok(count) => {
                passed += 1;
                println!("ok   {file}: {count} messages valid");
            }
            Err(problems) => {
                failed += 1;
                println!("FAIL {file}");
                for problem in problems.iter().take(SHOWN_PER_FILE) {
                    println!("     {problem}");
                }
                if problems.len() > SHOWN_PER_FILE {
                    println!("     ... and {} more", problems.len() - SHOWN_PER_FILE);
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: spindle-schema-check --emitter agent|client RECORDING.jsonl...");
    ExitCode::from(2)
}

/// Checks one recording; returns how many messages of `emitter` were valid, or every problem.
fn check_file(path: &str, emitter: Direction) -> Result<usize, Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| vec![format!("cannot read: {e}")])?;
    let mut conversation = SchemaConversation::new();
    let mut problems = Vec::new();
    let mut checked = 0usize;
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            problems.push(format!("line {}: not JSON", index + 1));
            continue;
        };
        let (direction, message) = match (value.get("sent"), value.get("received")) {
            (Some(sent), _) => (Direction::ClientToAgent, sent.to_string()),
            (None, Some(received)) => (Direction::AgentToClient, received.to_string()),
            (None, None) => (Direction::AgentToClient, line.to_string()),
        };
        // The peer's messages are followed too (they carry the version and the methods that
        // responses answer), but only the emitter's are judged.
        let result = conversation.check(direction, &message);
        if direction != emitter {
            continue;
        }
        checked += 1;
        if let Err(errors) = result {
            let shown: String = message.chars().take(300).collect();
            problems.push(format!(
                "line {} (v{}): {} in {shown}",
                index + 1,
                conversation.protocol_version(),
                errors.join("; ")
            ));
        }
    }
    if checked == 0 {
        problems.push("no message of the emitting side".into());
    }
    if problems.is_empty() {
        Ok(checked)
    } else {
        Err(problems)
    }
}
