//! `spindle chat --prompt` against the reference agent (real processes):
//! stdout is exactly the final reply, the exit status follows the stop
//! reason, `--record` replays to the same reply, permissions need `--yes`.

use crate::harness;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use spindle_agent::scenarios;

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

/// A scratch directory of this test process, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("spindle-chat-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        Scratch(dir)
    }

    fn join(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `spindle chat [flags] --prompt PROMPT -- spindle agent --delay-ms 0 [agent_flags]`,
/// stdin closed.
fn chat(flags: &[&str], prompt: &str, agent_flags: &[&str]) -> Output {
    Command::new(SPINDLE)
        .arg("chat")
        .args(flags)
        .args([
            "--prompt",
            prompt,
            "--",
            SPINDLE,
            "agent",
            "--delay-ms",
            "0",
        ])
        .args(agent_flags)
        .stdin(Stdio::null())
        .output()
        .expect("run spindle chat")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `spindle replay --format json FILE`.
fn replay(path: &Path) -> Value {
    let output = Command::new(SPINDLE)
        .args(["replay", "--format", "json"])
        .arg(path)
        .output()
        .expect("run spindle replay");
    serde_json::from_slice(&output.stdout).expect("replay prints JSON")
}

/// Runs `prompt` in v1 and v2 with `--record`; checks stdout is `reply` plus
/// one newline, exit 0, and that the recording replays to the same reply.
fn check_reply(prompt: &str, reply: &str) {
    let dir = Scratch::new(&prompt.replace(['/', ' '], "_"));
    for protocol in ["1", "2"] {
        let record = dir.join(&format!("v{protocol}.jsonl"));
        let output = chat(
            &["--protocol", protocol, "--record", record.to_str().unwrap()],
            prompt,
            &[],
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{prompt} v{protocol}: {}",
            stderr(&output)
        );
        assert_eq!(
            stdout(&output),
            format!("{reply}\n"),
            "{prompt} v{protocol}"
        );
        let replayed = replay(&record);
        assert_eq!(
            replayed["protocol"],
            Value::from(protocol.parse::<u8>().unwrap())
        );
        assert_eq!(
            replayed["finalReply"],
            Value::from(reply),
            "{prompt} v{protocol} replay"
        );
    }
}

#[test]
fn plain_prompt_prints_the_reply() {
    let output = chat(&[], "hello there", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("You said: \"hello there\""), "{text:?}");
    assert!(text.ends_with(".\n") && !text.ends_with("\n\n"), "{text:?}");
    check_reply("hello there", text.trim_end_matches('\n'));
}

#[test]
fn refine_prints_only_the_corrected_reply() {
    check_reply("/scenario refine", scenarios::REFINE_REPLY);
}

#[test]
fn denoise_prints_only_the_clean_paragraph() {
    check_reply("/scenario denoise", scenarios::DENOISE_REPLY);
}

#[test]
fn snapshot_chunks_are_not_concatenated() {
    check_reply("/scenario snapshot", scenarios::SNAPSHOT_REPLY);
}

#[test]
fn thoughts_stay_out_of_stdout() {
    check_reply("/scenario thoughts", scenarios::THOUGHTS_REPLY);
    for protocol in ["1", "2"] {
        let text = stdout(&chat(&["--protocol", protocol], "/scenario thoughts", &[]));
        assert!(!text.contains("The user wants to see thoughts"), "{text:?}");
        assert!(!text.contains("checking that metadata"), "{text:?}");
        assert!(!text.contains("Plan: answer"), "{text:?}");
    }
}

#[test]
fn v2_falls_back_to_v1_with_a_v1_agent() {
    let output = chat(
        &["--protocol", "2"],
        "/scenario refine",
        &["--protocol", "1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{}\n", scenarios::REFINE_REPLY));
}

#[test]
fn failed_turn_exits_1_with_the_error_on_stderr() {
    for protocol in ["1", "2"] {
        let output = chat(&["--protocol", protocol], "/scenario error", &[]);
        assert_eq!(output.status.code(), Some(1), "v{protocol}");
        // A sentence, then the code on a detail line: never the error's JSON.
        let err = stderr(&output);
        let sentence = format!(
            "spindle chat: the agent ended the turn with an error: {}.\n  code -32603 (internal error)\n",
            scenarios::ERROR_MESSAGE
        );
        assert!(err.contains(&sentence), "v{protocol}: {err}");
        assert!(!err.contains('{'), "v{protocol}: {err}");
    }
}

#[test]
fn agent_crash_exits_5_and_the_recording_keeps_the_partial_reply() {
    let dir = Scratch::new("crash");
    for protocol in ["1", "2"] {
        let record = dir.join(&format!("crash-v{protocol}.jsonl"));
        let output = chat(
            &["--protocol", protocol, "--record", record.to_str().unwrap()],
            "/scenario crash",
            &[],
        );
        assert_eq!(output.status.code(), Some(5), "v{protocol}");
        let err = stderr(&output);
        assert!(
            err.contains(&format!("exit status: {}", scenarios::CRASH_EXIT_CODE)),
            "v{protocol}: {err}"
        );
        let partial = stdout(&output);
        assert!(
            partial.len() > 1,
            "the partial reply is printed: {partial:?}"
        );
        let replayed = replay(&record);
        assert_eq!(
            replayed["finalReply"].as_str().map(|r| format!("{r}\n")),
            Some(partial),
            "v{protocol}"
        );
        assert_eq!(replayed["state"]["turnOpen"], Value::Bool(true));
    }
}

/// A reference-agent script: `lines` after one `wait_for_prompt`, in
/// `dir`.
fn script(dir: &Scratch, name: &str, lines: &[&str]) -> PathBuf {
    let path = dir.join(&format!("{name}.jsonl"));
    let mut text = String::from("{\"wait_for_prompt\":true}\n");
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write script");
    path
}

#[test]
fn exit_status_follows_the_stop_reason() {
    let dir = Scratch::new("stop-reasons");
    let chunk =
        r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Partial."}}"#;
    for (stop, code) in [
        ("end_turn", 0),
        ("max_tokens", 3),
        ("max_turn_requests", 3),
        ("refusal", 4),
        ("cancelled", 130),
        ("something_new", 1),
    ] {
        let end = format!("{{\"end_turn\":\"{stop}\"}}");
        let path = script(&dir, stop, &[chunk, &end]);
        let output = chat(&[], "go", &["--script", path.to_str().unwrap()]);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{stop}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "Partial.\n", "{stop}");
    }
}

#[test]
fn timeout_cancels_a_stalled_turn() {
    let output = chat(&["--timeout", "0.5"], "/scenario stall", &[]);
    assert_eq!(output.status.code(), Some(124), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{}\n", scenarios::STALL_TEXT));
}

#[test]
fn permission_is_approved_only_with_yes() {
    for protocol in ["1", "2"] {
        let approved = chat(&["--protocol", protocol, "--yes"], "/scenario tools", &[]);
        assert_eq!(approved.status.code(), Some(0), "v{protocol}");
        assert!(stdout(&approved).contains(scenarios::TOOLS_REPLY_ALLOWED));
        assert!(
            stderr(&approved).contains("--yes: approving"),
            "{}",
            stderr(&approved)
        );

        let refused = chat(&["--protocol", protocol], "/scenario tools", &[]);
        assert_eq!(refused.status.code(), Some(0), "v{protocol}");
        let text = stdout(&refused);
        assert!(text.contains(scenarios::TOOLS_REPLY_REJECTED), "{text:?}");
        assert!(!text.contains(scenarios::TOOLS_REPLY_ALLOWED), "{text:?}");
        assert!(
            stderr(&refused).contains("no --yes"),
            "{}",
            stderr(&refused)
        );
    }
}

#[test]
fn garbage_from_the_agent_is_reported_and_the_turn_goes_on() {
    let dir = Scratch::new("garbage");
    let path = script(
        &dir,
        "garbage",
        &[
            r#"{"raw":{"jsonrpc":"2.0","id":4242,"result":{}}}"#,
            r#"{"sessionUpdate":"agent_message_chunk","content":"not a content block"}"#,
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Still here."}}"#,
            r#"{"end_turn":"end_turn"}"#,
        ],
    );
    let output = chat(&[], "go", &["--script", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Still here.\n");
    let err = stderr(&output);
    assert!(err.contains("unknown request id 4242"), "{err}");
    assert!(err.contains("content must be"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    let output = chat(&["--timeout", "0"], "hi", &[]);
    assert_eq!(output.status.code(), Some(2));
    let output = chat(&["--protocol", "3"], "hi", &[]);
    assert_eq!(output.status.code(), Some(2));
    let output = Command::new(SPINDLE)
        .args(["chat", "--prompt", "hi", "--", "/nonexistent/agent"])
        .output()
        .expect("run spindle chat");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("starting the agent"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn stream_generator_reply_is_rebuilt_exactly() {
    use spindle_agent::{StreamMix, Version, stream_gen::expected_reply_text};
    for (protocol, version) in [("1", Version::V1), ("2", Version::V2)] {
        for (name, mix) in [
            ("mixed", StreamMix::Mixed),
            ("refine", StreamMix::Refine),
            ("snapshot", StreamMix::Snapshot),
        ] {
            let output = chat(
                &["--protocol", protocol],
                &format!("/stream 3000 {name}"),
                &[],
            );
            assert_eq!(output.status.code(), Some(0), "{name} v{protocol}");
            let expected = expected_reply_text(version, mix, 3000);
            assert_eq!(
                stdout(&output),
                format!("{expected}\n"),
                "{name} v{protocol}"
            );
        }
    }
}

/// Kills the child if the test fails before it is waited for.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn sigint_cancels_the_prompt_turn_with_130() {
    let dir = Scratch::new("sigint");
    let record = dir.join("stall.jsonl");
    let child = Command::new(SPINDLE)
        .args(["chat", "--record", record.to_str().unwrap()])
        .args([
            "--prompt",
            "/scenario stall",
            "--",
            SPINDLE,
            "agent",
            "--delay-ms",
            "0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle chat");
    let mut guard = KillOnDrop(Some(child));
    // The recording is flushed batch by batch: once it holds the last chunk
    // of the stalled text, the turn is running and the chat listens for
    // Ctrl-C.
    let last_chunk = format!(
        "\"text\":\"{}\"",
        scenarios::STALL_TEXT.rsplit(' ').next().unwrap()
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(&record)
        .unwrap_or_default()
        .contains(&last_chunk)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the turn never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = guard.0.as_ref().expect("child").id().to_string();
    let Ok(killed) = Command::new("kill").args(["-INT", &pid]).status() else {
        harness::skip_for_missing("a `kill` command to send SIGINT with");
        return;
    };
    assert!(killed.success());
    let child = guard.0.take().expect("child");
    let output = child.wait_with_output().expect("wait for spindle chat");
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{}\n", scenarios::STALL_TEXT));
    // The agent heard about it: the recording has the cancel and the
    // cancelled end of the turn.
    let replayed = replay(&record);
    assert_eq!(replayed["state"]["stopReason"], "cancelled", "{replayed}");
    assert_eq!(replayed["state"]["cancelRequested"], Value::Bool(true));
}
