//! Prompts typed on a terminal while a turn runs (issue 27): a protocol-2
//! agent is sent each at once, as its own prompt, and the chat follows them
//! all (a permission question meanwhile, Ctrl-C, one end for the work); a
//! protocol-1 agent gets them when the turn ends. The wire record
//! (`--record`) says when each prompt went out. tmux as in `chat_tmux.rs`.

use crate::chat_tmux::{ChatPane, tmux_available};
use crate::harness::TempDir;

use serde_json::Value;
use spindle_agent::scenarios;

/// The recorded lines: `(sent, message)`.
fn record(path: &std::path::Path) -> Vec<(bool, Value)> {
    let text = std::fs::read_to_string(path).expect("read the record");
    text.lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).expect("a JSON line");
            match value.get("sent") {
                Some(sent) => (true, sent.clone()),
                None => (false, value),
            }
        })
        .collect()
}

/// Where the `session/prompt` whose first block says `text` was sent, and its id.
fn prompt_sent(lines: &[(bool, Value)], text: &str) -> (usize, Value) {
    lines
        .iter()
        .position(|(sent, m)| {
            *sent && m["method"] == "session/prompt" && m["params"]["prompt"][0]["text"] == text
        })
        .map(|at| (at, lines[at].1["id"].clone()))
        .unwrap_or_else(|| panic!("no prompt {text:?} sent: {lines:?}"))
}

/// Where the agent answered request `id`.
fn answered(lines: &[(bool, Value)], id: &Value) -> usize {
    lines
        .iter()
        .position(|(sent, m)| !*sent && m["id"] == *id && m.get("method").is_none())
        .unwrap_or_else(|| panic!("request {id} never answered"))
}

/// The v2 `idle` updates with a stop reason: where the agent's work ended.
fn work_ends(lines: &[(bool, Value)]) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, (sent, m))| {
            let update = &m["params"]["update"];
            !*sent
                && update["sessionUpdate"] == "state_update"
                && update["state"] == "idle"
                && update["stopReason"].is_string()
        })
        .map(|(at, _)| at)
        .collect()
}

/// v2: a prompt typed during a turn goes out at once and is inserted before the turn ends
/// (`/scenario wait-next` ends only once another prompt was inserted: no timing decides it);
/// the agent's permission question that comes while both prompts are in flight is answered on
/// the terminal; both replies are shown, and the work ends once.
#[test]
fn v2_a_prompt_typed_during_a_turn_is_sent_at_once_and_both_replies_are_shown() {
    if !tmux_available() {
        return;
    }
    let dir = TempDir::new("chat-v2-at-once");
    let rec = dir.join("wire.jsonl");
    let pane = ChatPane::start(
        "v2-at-once",
        // (No checkpoint of the test's folder before each prompt: not the subject here.)
        &[
            "--protocol",
            "2",
            "--no-checkpoints",
            "--record",
            rec.to_str().unwrap(),
        ],
    );
    pane.wait_until("the greeting", |s| {
        s.contains("Hello! I am the Spindle reference agent") && s.ends_with('>')
    });
    pane.type_line("/scenario wait-next");
    pane.wait_until("the first turn waiting", |s| {
        s.contains(scenarios::WAIT_NEXT_TEXT)
    });
    pane.type_line("/scenario tools");
    let sent = pane.wait_until("the line sent", |s| {
        s.contains("sent while the agent works: /scenario tools")
    });
    assert!(!sent.contains("queued until the turn ends"), "{sent}");
    // The tools prompt's work follows the first one's, in the same work: its permission
    // question comes while both prompts are in flight.
    pane.wait_until("the permission question", |s| s.ends_with("choose 1-4:"));
    pane.type_line("1");
    let screen = pane.wait_for_turns(1);
    let (_, allowed) = scenarios::TOOLS_REPLY_ALLOWED.split_once(". ").unwrap();
    assert!(screen.contains(allowed), "{screen}");
    assert!(
        screen.contains("[tool] Edit src/main.rs (edit) - completed"),
        "{screen}"
    );
    // One end for the work both prompts asked for, after both replies.
    assert_eq!(screen.matches("\n[end_turn").count(), 1, "{screen}");
    let end = screen.find("\n[end_turn").unwrap();
    assert!(
        screen.find(scenarios::WAIT_NEXT_TEXT).unwrap() < end,
        "{screen}"
    );
    assert!(screen.find(allowed).unwrap() < end, "{screen}");
    // `/queue` has nothing: v2 sends at once.
    pane.type_line("/queue");
    pane.wait_until("the /queue answer", |s| {
        s.contains("nothing is queued: the agent speaks protocol 2")
    });

    let lines = record(&rec);
    let (first_at, first_id) = prompt_sent(&lines, "/scenario wait-next");
    let (tools_at, tools_id) = prompt_sent(&lines, "/scenario tools");
    let ends = work_ends(&lines);
    // (The greeting's own work ended before the first prompt.)
    let first_end = *ends
        .iter()
        .find(|&&at| at > first_at)
        .expect("the work's end");
    assert!(first_at < tools_at, "in the order typed");
    assert!(
        tools_at < first_end,
        "the second prompt went out before the first turn ended"
    );
    assert!(answered(&lines, &first_id) < tools_at);
    assert!(
        answered(&lines, &tools_id) < first_end,
        "the agent inserted it at once"
    );
}

/// v2: Ctrl-C cancels the session's work, the prompt sent meanwhile with
/// it; the chat then takes the next prompt as usual.
#[test]
fn v2_ctrl_c_cancels_the_running_prompt_and_the_one_sent_meanwhile() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("v2-cancel", &["--protocol", "2", "--no-checkpoints"]);
    pane.wait_until("the greeting", |s| {
        s.contains("Hello! I am the Spindle reference agent") && s.ends_with('>')
    });
    pane.type_line("/scenario stall");
    pane.wait_until("the stalled turn", |s| s.contains(scenarios::STALL_TEXT));
    pane.type_line("behind the stall");
    pane.wait_until("the line sent", |s| {
        s.contains("sent while the agent works: behind the stall")
    });
    pane.send_key("C-c");
    let screen = pane.wait_for_turns(1);
    assert_eq!(screen.matches("\n[cancelled").count(), 1, "{screen}");
    assert!(
        !screen.contains("You said: \"behind the stall\""),
        "{screen}"
    );
    pane.type_line("are you still there");
    let screen = pane.wait_for_turns(2);
    assert!(
        screen.contains("You said: \"are you still there\""),
        "{screen}"
    );
}

/// v1: the same line waits for the turn's end (the turn stalls until Ctrl-C: no timing decides
/// whether the line came during it), and only then goes out.
#[test]
fn v1_a_prompt_typed_during_a_turn_waits_for_its_end() {
    if !tmux_available() {
        return;
    }
    let dir = TempDir::new("chat-v1-queued");
    let rec = dir.join("wire.jsonl");
    let pane = ChatPane::start(
        "v1-queued",
        &["--no-checkpoints", "--record", rec.to_str().unwrap()],
    );
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_line("/scenario stall");
    pane.wait_until("the stalled turn", |s| s.contains(scenarios::STALL_TEXT));
    pane.type_line("meanwhile");
    pane.wait_until("the line queued", |s| {
        s.contains("queued until the turn ends: meanwhile")
    });
    pane.type_line("/queue");
    pane.wait_until("the queue listed", |s| s.contains("  1. meanwhile"));
    // Ctrl-C ends the stalled turn; the queued line is then sent.
    pane.send_key("C-c");
    let screen = pane.wait_until("the queued line's reply", |s| {
        s.contains("You said: \"meanwhile\"") && s.matches("\n[end_turn").count() == 1
    });
    assert_eq!(screen.matches("\n[cancelled").count(), 1, "{screen}");
    let lines = record(&rec);
    let (_, stall_id) = prompt_sent(&lines, "/scenario stall");
    let (meanwhile_at, _) = prompt_sent(&lines, "meanwhile");
    assert!(
        answered(&lines, &stall_id) < meanwhile_at,
        "v1: sent after the first turn's answer"
    );
}
