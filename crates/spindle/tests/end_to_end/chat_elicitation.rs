//! `elicitation/create` through `spindle chat` against the reference agent's `elicit-form` and
//! `elicit-url` and `elicit-tool` scenarios: declined with the message shown when nobody can answer (piped stdin,
//! `--prompt`), answered field by field in the line chat on a terminal (tmux). Every recorded
//! message is validated against the ACP schema of the negotiated version.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use spindle_agent::scenarios;
use spindle_protocol::schema_check::{Direction, SchemaConversation};

use crate::chat_tmux::{ChatPane, tmux_available};
use crate::harness::TempDir;

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

/// Validates every message of a `--record` recording; returns the elicitation answers sent.
fn check_recording(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the recording");
    let mut conversation = SchemaConversation::new();
    let mut creates = Vec::new();
    let mut answers = Vec::new();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).expect("a JSON line");
        if value.get("local").is_some() {
            continue;
        }
        let (direction, message) = match value.get("sent") {
            Some(sent) => (Direction::ClientToAgent, sent.clone()),
            None => (Direction::AgentToClient, value),
        };
        conversation
            .check(direction, &message.to_string())
            .unwrap_or_else(|e| panic!("{message}: {e:?}"));
        if message["method"] == "elicitation/create" {
            creates.push(message["id"].clone());
        } else if direction == Direction::ClientToAgent && creates.contains(&message["id"]) {
            answers.push(message["result"].clone());
        }
    }
    answers
}

#[test]
fn piped_chat_shows_the_question_and_declines_in_both_versions() {
    for protocol in ["1", "2"] {
        let dir = TempDir::new(&format!("chat-elicit-piped-v{protocol}"));
        let record = dir.join("rec.jsonl");
        let mut child = Command::new(SPINDLE)
            .args(["chat", "--protocol", protocol, "--record"])
            .arg(&record)
            .args(["--", SPINDLE, "agent", "--delay-ms", "0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn spindle chat");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(b"/scenario elicit-form\n/scenario elicit-url\n/scenario elicit-tool\n")
            .expect("write prompts");
        drop(stdin);
        let output = child.wait_with_output().expect("wait for spindle chat");
        let out = String::from_utf8_lossy(&output.stdout).into_owned();
        let err = String::from_utf8_lossy(&output.stderr).into_owned();
        let all = format!("{out}\n{err}");
        assert_eq!(output.status.code(), Some(0), "v{protocol}: {all}");
        assert!(
            all.contains(&format!(
                "The agent asks: {}",
                scenarios::ELICIT_FORM_MESSAGE
            )),
            "{all}"
        );
        assert!(all.contains("It leads to the host: 127.0.0.1"), "{all}");
        assert_eq!(
            all.matches("declined: no terminal to answer").count(),
            3,
            "{all}"
        );
        // The question asked from inside a tool call: the call is shown, and ends failed with
        // the answer as its content (the fourth "You declined.").
        assert!(
            out.contains(&format!(
                "[tool] {} (other) - failed",
                scenarios::ELICIT_TOOL_TITLE
            )),
            "{all}"
        );
        assert_eq!(out.matches("You declined.").count(), 4, "{all}");
        let answers = check_recording(&record);
        assert_eq!(
            answers,
            vec![serde_json::json!({"action": "decline"}); 3],
            "v{protocol}"
        );
    }
}

#[test]
fn prompt_mode_shows_the_message_and_declines() {
    let output = Command::new(SPINDLE)
        .args([
            "chat",
            "--prompt",
            "/scenario elicit-form",
            "--",
            SPINDLE,
            "agent",
            "--delay-ms",
            "0",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run spindle chat --prompt");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{out}\n{err}");
    assert!(
        err.contains(&format!(
            "the agent asks: {}",
            scenarios::ELICIT_FORM_MESSAGE
        )),
        "{err}"
    );
    assert!(err.contains("declined (--prompt does not answer"), "{err}");
    assert!(out.contains("You declined."), "{out}");
}

#[test]
fn a_form_is_answered_field_by_field_in_the_line_chat() {
    if !tmux_available() {
        return;
    }
    let dir = TempDir::new("chat-elicit-tmux");
    let record = dir.join("rec.jsonl");
    let pane = ChatPane::start("elicit-form", &["--record", record.to_str().unwrap()]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_line("/scenario elicit-form");
    pane.wait_until("the first question", |s| {
        s.contains("answer? [a]nswer / [d]ecline / [c]ancel:")
    });
    pane.type_line("a");
    // Each field in the schema's order; a wrong answer is asked again with the reason.
    let answers = [
        ("Project name:", "x"),
        ("not taken: at least 2 characters", "demo"),
        ("Contact email:", "not-an-email"),
        ("not taken: not an email address", "dev@example.org"),
        ("Budget (hours):", "12.5"),
        ("Workers:", ""),
        ("Write tests:", "n"),
        ("License:", "2"),
        ("Targets:", "linux, 3"),
    ];
    for (shown, typed) in answers {
        pane.wait_until(shown, |s| s.contains(shown));
        pane.type_line(typed);
    }
    let screen = pane.wait_for_turns(1);
    let words = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(r#"You accepted: budget=12.5, email="dev@example.org", license="apache-2.0", name="demo", targets=["linux","windows"], tests=false, workers=2."#),
        "{screen}"
    );
    let answers = check_recording(&record);
    assert_eq!(answers[0]["action"], "accept", "{answers:?}");
}

#[test]
fn ctrl_c_during_a_form_cancels_the_turn_and_withdraws_the_question() {
    if !tmux_available() {
        return;
    }
    let dir = TempDir::new("chat-elicit-cancel");
    let record = dir.join("rec.jsonl");
    let pane = ChatPane::start("elicit-cancel", &["--record", record.to_str().unwrap()]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_line("/scenario elicit-form");
    pane.wait_until("the first question", |s| {
        s.contains("answer? [a]nswer / [d]ecline / [c]ancel:")
    });
    pane.send_key("C-c");
    let screen = pane.wait_for_turns(1);
    assert!(
        screen.contains("the turn was cancelled: the question is withdrawn"),
        "{screen}"
    );
    // The agent heard `cancel` (not left waiting for an answer nobody will give).
    let answers = check_recording(&record);
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["action"], "cancel", "{answers:?}");
}
