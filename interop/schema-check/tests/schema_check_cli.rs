//! The validator judges only the emitter's messages, follows the negotiated version, and fails
//! on a message the official schema refuses.

use std::process::Command;

const INIT_V1: &str = r#"{"sent":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}}"#;
const INIT_V1_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}}"#;
const GOOD_CHUNK: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#;
// `content` must be a content block: a bare string is not one.
const BAD_CHUNK: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":"hi"}}}"#;
// A Spindle extension: only its envelope is checked.
const CLEAR: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_clear"}}}"#;
// A client message with a missing required field (`sessionId`): not the agent's fault.
const BAD_CLIENT: &str =
    r#"{"sent":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":[]}}}"#;

fn run(emitter: &str, lines: &[&str]) -> (bool, String) {
    let dir = std::env::temp_dir().join(format!("schema-check-{}-{emitter}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}.jsonl", lines.len()));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_spindle-schema-check"))
        .args(["--emitter", emitter])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn schema_check_accepts_valid_agent_traffic_and_extensions() {
    let (ok, out) = run(
        "agent",
        &[INIT_V1, INIT_V1_RESULT, GOOD_CHUNK, CLEAR, BAD_CLIENT],
    );
    assert!(ok, "{out}");
    assert!(out.contains("3 messages valid"), "{out}");
}

#[test]
fn schema_check_fails_on_an_invalid_agent_message() {
    let (ok, out) = run("agent", &[INIT_V1, INIT_V1_RESULT, GOOD_CHUNK, BAD_CHUNK]);
    assert!(!ok, "{out}");
    assert!(out.contains("line 4"), "{out}");
    assert!(out.contains("0 passed, 1 failed"), "{out}");
}

#[test]
fn schema_check_judges_the_client_side_when_asked() {
    let (ok, out) = run("client", &[INIT_V1, INIT_V1_RESULT, BAD_CLIENT]);
    assert!(!ok, "{out}");
    assert!(out.contains("line 3"), "{out}");
}

#[test]
fn schema_check_fails_when_the_emitter_sent_nothing() {
    let (ok, out) = run("client", &[INIT_V1_RESULT, GOOD_CHUNK]);
    assert!(!ok, "{out}");
    assert!(out.contains("no message of the emitting side"), "{out}");
}
