//! `spindle replay` end to end: the real binary against the golden fixtures.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn spindle() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spindle"))
}

#[test]
fn json_output_matches_every_golden_expectation() {
    let dir = fixture("");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let args = std::fs::read_to_string(path.with_extension("args")).unwrap_or_default();
        let out = spindle()
            .arg("replay")
            .args(args.split_whitespace())
            .arg(&path)
            .output()
            .unwrap();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let expected = std::fs::read_to_string(dir.join(format!("{stem}.expected.json"))).unwrap();
        let actual: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let expected: serde_json::Value = serde_json::from_str(&expected).unwrap();
        assert_eq!(actual, expected, "{stem}");
        let has_diagnostics = !expected["diagnostics"].as_array().unwrap().is_empty();
        assert_eq!(
            out.status.code(),
            Some(if has_diagnostics { 1 } else { 0 }),
            "{stem}"
        );
        checked += 1;
    }
    assert!(checked >= 20);
}

#[test]
fn reads_stdin_and_renders_text() {
    let input = std::fs::read(fixture("03_message_clear.jsonl")).unwrap();
    let mut child = spindle()
        .args(["replay", "--format", "text", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("[agent] Final, polished haiku.\n"), "{text}");
    assert!(
        !text.contains("Drafting"),
        "cleared draft must be gone: {text}"
    );
    assert!(text.ends_with("state: idle (end_turn)\n"), "{text}");
}

#[test]
fn protocol_flag_overrides_inference() {
    // A v2-shaped prompt response under --protocol 1 ends the turn (with a
    // diagnostic, since it has no stopReason).
    let dir = std::env::temp_dir().join(format!("spindle-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("v2.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"sent":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":1,"result":{"messageId":"u1"}}"#,
            "\n"
        ),
    )
    .unwrap();
    let run = |protocol: &str| {
        let out = spindle()
            .args(["replay", "--protocol", protocol])
            .arg(&file)
            .output()
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let v1 = run("1");
    assert_eq!(v1["protocol"], 1);
    assert_eq!(v1["state"]["turnOpen"], false);
    assert_eq!(v1["diagnostics"][0]["code"], "malformed_response");
    assert_eq!(v1["diagnostics"][0]["line"], 2);
    let auto = run("auto");
    assert_eq!(auto["protocol"], 2);
    assert_eq!(
        auto["state"]["turnOpen"], true,
        "v2 acceptance does not end the turn"
    );
    assert_eq!(auto["entries"][0]["messageId"], "u1");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn missing_file_is_an_error_with_exit_code_2() {
    let out = spindle()
        .args(["replay", "/nonexistent/spindle.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));
}
