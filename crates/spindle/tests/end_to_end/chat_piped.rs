//! Interactive `spindle chat` with piped stdin and stdout (no terminal):
//! prompts are read line by line, each turn is printed once it is over,
//! without escape sequences, and EOF ends the session with the status of
//! the last turn.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use spindle_agent::scenarios;

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

fn chat_piped(flags: &[&str], input: &str) -> Output {
    chat_piped_with_agent(flags, input, &[])
}

fn chat_piped_with_agent(flags: &[&str], input: &str, agent_flags: &[&str]) -> Output {
    let mut child = Command::new(SPINDLE)
        .arg("chat")
        .args(flags)
        .args(["--", SPINDLE, "agent", "--delay-ms", "0"])
        .args(agent_flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle chat");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write prompts");
    drop(stdin);
    child.wait_with_output().expect("wait for spindle chat")
}

fn position(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} missing:\n{text}"))
}

#[test]
fn piped_session_prints_each_turn_once_without_escapes() {
    for protocol in ["1", "2"] {
        let output = chat_piped(
            &["--protocol", protocol],
            "/scenario refine\n/clear\n/scenario thoughts\n",
        );
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        assert_eq!(output.status.code(), Some(0), "v{protocol}\n{text}");
        assert!(
            !text.contains('\x1b'),
            "no escapes off a terminal: {text:?}"
        );
        assert_eq!(text.matches(scenarios::REFINE_REPLY).count(), 1, "{text}");
        assert!(
            !text.contains("Draft:") && !text.contains("Sydney"),
            "{text}"
        );
        let refine = position(&text, "you> /scenario refine");
        let divider = position(&text, "context cleared");
        let thoughts = position(&text, "you> /scenario thoughts");
        assert!(refine < position(&text, scenarios::REFINE_REPLY));
        assert!(position(&text, scenarios::REFINE_REPLY) < divider);
        assert!(divider < position(&text, scenarios::CLEAR_REPLY));
        // v2 sends each piped line at once: a prompt may show where the agent inserted it,
        // before the reply it follows, but the replies keep their order.
        let thoughts_reply = position(&text, scenarios::THOUGHTS_REPLY);
        assert!(
            position(&text, scenarios::CLEAR_REPLY) < thoughts_reply && thoughts < thoughts_reply
        );
        if protocol == "1" {
            assert!(position(&text, scenarios::CLEAR_REPLY) < thoughts);
        }
        assert!(
            text.lines().any(
                |l| l.starts_with("thought | ") && l.contains("The user wants to see thoughts")
            ),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l == scenarios::THOUGHTS_REPLY),
            "{text}"
        );
        if protocol == "2" {
            // The greeting arrives before the first prompt and is shown first.
            assert!(position(&text, "Hello! I am the Spindle reference agent") < refine);
        }
    }
}

#[test]
fn piped_session_exits_with_the_last_turn_status() {
    let output = chat_piped(&[], "hello\n/scenario error\n");
    assert_eq!(output.status.code(), Some(1));
    // The error reads as a sentence, its code on the next line; no JSON.
    let text = String::from_utf8_lossy(&output.stdout);
    let sentence = format!(
        "The agent ended the turn with an error: {}.\n  code -32603 (internal error)\n",
        scenarios::ERROR_MESSAGE
    );
    assert!(text.contains(&sentence), "{text}");
    assert!(!text.contains("{\"code\""), "{text}");
    let output = chat_piped(&[], "/scenario error\nhello\n");
    assert_eq!(output.status.code(), Some(0));
    let output = chat_piped(&[], "hello\n/scenario crash\nnever sent\n");
    assert_eq!(output.status.code(), Some(5));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("never sent"), "{text}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("exit status: 3"));
}

#[test]
fn notices_are_shown_with_the_turn_that_sent_them() {
    let output = chat_piped(&["--protocol", "2"], "/scenario notice\n");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    assert_eq!(output.status.code(), Some(0), "{text}");
    let reply = position(&text, scenarios::NOTICE_REPLY);
    let end = position(&text, "[end_turn");
    for (severity, title, _) in scenarios::NOTICES {
        let notice = position(&text, &format!("[{severity}] {title}"));
        assert!(reply < notice && notice < end, "{text}");
    }
}

#[test]
fn a_flood_of_garbage_is_shown_up_to_a_limit_and_the_session_goes_on() {
    let path =
        std::env::temp_dir().join(format!("spindle-chat-flood-{}.jsonl", std::process::id()));
    let mut script = String::from("{\"wait_for_prompt\":true}\n");
    for _ in 0..50 {
        script.push_str("{\"sessionUpdate\":\"agent_message_chunk\",\"content\":\"garbage\"}\n");
    }
    script.push_str(
        "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"Still here.\"}}\n",
    );
    std::fs::write(&path, script).expect("write script");
    let output = chat_piped_with_agent(&[], "go\nhello\n", &["--script", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert_eq!(text.matches("diagnostic: ").count(), 20, "{text}");
    assert_eq!(
        text.matches("more diagnostics follow; not shown").count(),
        1,
        "{text}"
    );
    assert!(text.lines().any(|l| l == "Still here."), "{text}");
    // The next prompt is answered by the built-in commands.
    assert!(text.contains("You said: \"hello\""), "{text}");
}

/// Lines read while a v1 agent's turn runs wait in the chat's queue (issue 27): `/queue` lists
/// them, `/queue edit N TEXT` and `/queue drop N` change them while the turn runs, and they are
/// sent one per turn, in order. The agent streams `/scenario slow` with 50 ms pauses: the piped
/// lines are all read long before it ends. (A v2 agent gets them at once: below.)
#[test]
fn piped_lines_typed_during_a_v1_turn_are_queued_listed_edited_dropped_and_sent_in_order() {
    for protocol in ["1"] {
        let mut child = Command::new(SPINDLE)
            .args([
                "chat",
                "--protocol",
                protocol,
                "--",
                SPINDLE,
                "agent",
                "--delay-ms",
                "50",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn spindle chat");
        let input = "/scenario slow\nfirst\nsecond\nthird\n/queue drop 2\n\
                     /queue edit 2 third, edited\n/queue\n/queue edit 9 x\n";
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("write prompts");
        drop(stdin);
        let output = child.wait_with_output().expect("wait for spindle chat");
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        assert_eq!(output.status.code(), Some(0), "v{protocol}\n{text}");
        for expected in [
            "dropped queued line 2: second",
            "queued line 2 is now: third, edited",
            "  1. first\n  2. third, edited\n",
            "no queued line 9: /queue lists 1 to 2",
        ] {
            assert!(
                text.contains(expected),
                "v{protocol}: {expected:?} missing:\n{text}"
            );
        }
        let slow = position(&text, scenarios::SLOW_REPLY);
        let first = position(&text, "you> first");
        let third = position(&text, "you> third, edited");
        assert!(
            slow < first && first < third,
            "v{protocol}: in order:\n{text}"
        );
        assert!(
            !text.contains("you> second"),
            "v{protocol}: dropped:\n{text}"
        );
        assert!(
            !text.contains("you> /queue"),
            "v{protocol}: never queued:\n{text}"
        );
    }
}

/// `spindle chat --record FILE` with piped lines, in an empty folder (a checkpoint per prompt
/// is quick there); returns stdout and the recorded lines as `(sent, message)`.
fn chat_piped_recorded(protocol: &str, input: &str) -> (String, Vec<(bool, serde_json::Value)>) {
    let dir = crate::harness::TempDir::new("chat-piped-record");
    let rec = dir.join("wire.jsonl");
    let mut child = Command::new(SPINDLE)
        .args(["chat", "--protocol", protocol, "--record"])
        .arg(&rec)
        .args(["--", SPINDLE, "agent", "--delay-ms", "50"])
        .current_dir(&dir.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle chat");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write prompts");
    drop(stdin);
    let output = child.wait_with_output().expect("wait for spindle chat");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    assert_eq!(output.status.code(), Some(0), "v{protocol}\n{text}");
    let recorded = std::fs::read_to_string(&rec).expect("read the record");
    let lines = recorded
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            match value.get("sent") {
                Some(sent) => (true, sent.clone()),
                None => (false, value),
            }
        })
        .collect();
    (text, lines)
}

/// Where the `session/prompt` saying `text` was sent, and where the agent answered it.
fn prompt_sent_and_answered(lines: &[(bool, serde_json::Value)], text: &str) -> (usize, usize) {
    let sent = lines
        .iter()
        .position(|(sent, m)| {
            *sent && m["method"] == "session/prompt" && m["params"]["prompt"][0]["text"] == text
        })
        .unwrap_or_else(|| panic!("no prompt {text:?} sent: {lines:?}"));
    let id = &lines[sent].1["id"];
    let answered = lines
        .iter()
        .position(|(sent, m)| !*sent && m["id"] == *id && m.get("method").is_none())
        .unwrap_or_else(|| panic!("prompt {text:?} never answered"));
    (sent, answered)
}

/// Where the agent's v2 work ended (`idle` with a stop reason), after line `after`.
fn work_end_after(lines: &[(bool, serde_json::Value)], after: usize) -> usize {
    lines
        .iter()
        .enumerate()
        .skip(after)
        .find(|(_, (sent, m))| {
            let update = &m["params"]["update"];
            !*sent
                && update["sessionUpdate"] == "state_update"
                && update["state"] == "idle"
                && update["stopReason"].is_string()
        })
        .map(|(at, _)| at)
        .expect("the work's end")
}

/// Issue 27: a protocol-2 agent is sent a line read during a turn at once, as its own prompt.
/// `/scenario wait-next` ends only once another prompt was inserted, so no timing decides it:
/// the record has the second prompt, and the agent's answer inserting it, before the first
/// turn's end; both replies are shown, the work ends once, and `/queue` has nothing. A
/// protocol-1 agent gets the same line only after the first turn's answer.
#[test]
fn piped_lines_read_during_a_turn_go_to_a_v2_agent_at_once_and_to_a_v1_agent_after_it() {
    let (text, lines) = chat_piped_recorded("2", "/scenario wait-next\nmeanwhile\n/queue\n");
    let (first_sent, first_answered) = prompt_sent_and_answered(&lines, "/scenario wait-next");
    let (meanwhile_sent, meanwhile_answered) = prompt_sent_and_answered(&lines, "meanwhile");
    let end = work_end_after(&lines, first_sent);
    assert!(first_answered < meanwhile_sent, "{lines:?}");
    assert!(
        meanwhile_sent < end,
        "sent before the first turn ended: {lines:?}"
    );
    assert!(meanwhile_answered < end, "inserted at once: {lines:?}");
    // Both replies, each after its prompt; the work ended once, after both.
    let first = position(&text, "you> /scenario wait-next");
    let meanwhile = position(&text, "you> meanwhile");
    let first_reply = position(&text, scenarios::WAIT_NEXT_TEXT);
    let meanwhile_reply = position(&text, "You said: \"meanwhile\"");
    assert!(first < first_reply && meanwhile < meanwhile_reply, "{text}");
    assert_eq!(text.matches("[end_turn").count(), 1, "{text}");
    assert!(meanwhile_reply < position(&text, "[end_turn"), "{text}");
    assert!(
        text.contains("nothing is queued: the agent speaks protocol 2"),
        "{text}"
    );
    assert!(!text.contains("queued until the turn ends"), "{text}");

    // v1: whenever the line is read, it goes out after the running turn's answer.
    let (text, lines) = chat_piped_recorded("1", "/scenario slow\nmeanwhile\n");
    let (_, slow_answered) = prompt_sent_and_answered(&lines, "/scenario slow");
    let (meanwhile_sent, _) = prompt_sent_and_answered(&lines, "meanwhile");
    assert!(slow_answered < meanwhile_sent, "v1 queues: {lines:?}");
    assert_eq!(text.matches("[end_turn").count(), 2, "{text}");
    assert!(
        position(&text, scenarios::SLOW_REPLY) < position(&text, "You said: \"meanwhile\""),
        "{text}"
    );
}

/// v2: Spindle's own commands read during a turn wait for its end, and a prompt read after one
/// waits behind it (lines keep their order): `/checkpoints` then `after` go out once the slow
/// turn is over.
#[test]
fn piped_own_commands_during_a_v2_turn_wait_for_its_end_and_the_prompts_behind_them_too() {
    let input = "/scenario slow\n/checkpoints\nafter\n";
    let (text, lines) = chat_piped_recorded("2", input);
    let (slow_sent, _) = prompt_sent_and_answered(&lines, "/scenario slow");
    let (after_sent, _) = prompt_sent_and_answered(&lines, "after");
    let end = work_end_after(&lines, slow_sent);
    assert!(end < after_sent, "{lines:?}");
    let checkpoints = position(&text, "you> /checkpoints");
    assert!(
        position(&text, scenarios::SLOW_REPLY) < checkpoints,
        "{text}"
    );
    assert!(checkpoints < position(&text, "you> after"), "{text}");
    assert_eq!(text.matches("[end_turn").count(), 2, "{text}");
}
