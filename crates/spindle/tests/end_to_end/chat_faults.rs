//! `spindle chat --prompt` against agents that misbehave before the session
//! opens, and many chats at once. Real processes; no timing assertions
//! (`--timeout` expiring is the behaviour under test, not a measurement).

use std::process::{Command, Output, Stdio};

use spindle_agent::{StreamMix, Version, stream_gen::expected_reply_text};

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

fn chat(flags: &[&str], agent: &[&str]) -> Output {
    Command::new(SPINDLE)
        .arg("chat")
        .args(flags)
        .arg("--")
        .args(agent)
        .stdin(Stdio::null())
        .output()
        .expect("run spindle chat")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn agent_that_never_answers_initialize_times_out_with_124() {
    let output = chat(&["--timeout", "0.5", "--prompt", "hi"], &["sleep", "30"]);
    assert_eq!(output.status.code(), Some(124), "{}", stderr(&output));
    assert!(stderr(&output).contains("--timeout expired while starting the agent"));
    assert!(output.stdout.is_empty());
}

#[test]
fn garbage_before_initialize_is_reported() {
    let output = chat(
        &["--timeout", "1", "--prompt", "hi"],
        &["sh", "-c", "echo garbage; echo '{bad'; exec sleep 30"],
    );
    assert_eq!(output.status.code(), Some(124), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("malformed line 1 from agent"), "{err}");
    assert!(err.contains("malformed line 2 from agent"), "{err}");
}

#[test]
fn agent_that_exits_at_once_is_reported_with_its_status_and_stderr() {
    let output = chat(
        &["--prompt", "hi"],
        &["sh", "-c", "echo 'no API key configured' >&2; exit 7"],
    );
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("exit status: 7"), "{err}");
    assert!(err.contains("no API key configured"), "{err}");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_hundred_concurrent_chats_each_rebuild_their_own_reply() {
    let expected = expected_reply_text(Version::V1, StreamMix::Mixed, 1000);
    let children: Vec<_> = (0..100)
        .map(|_| {
            Command::new(SPINDLE)
                .args(["chat", "--prompt", "/stream 1000 mixed", "--"])
                .args([SPINDLE, "agent", "--delay-ms", "0"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn spindle chat")
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().expect("wait for spindle chat");
        assert_eq!(
            output.status.code(),
            Some(0),
            "chat {i}: {}",
            stderr(&output)
        );
        assert!(
            output.stdout == format!("{expected}\n").as_bytes(),
            "chat {i}: wrong reply ({} bytes)",
            output.stdout.len()
        );
    }
}
