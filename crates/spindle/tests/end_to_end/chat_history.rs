//! The agent's session history through `spindle chat` across processes: the default agent (the
//! built-in reference agent) keeps its sessions in the data directory
//! (`$XDG_DATA_HOME/spindle/agent-sessions`), so `--list` and `--resume` reach the sessions of
//! earlier chats, and `spindle serve`'s page lists them too; an agent that can resume but not
//! load a session is resumed without a replay.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::harness::{self, TempDir};
use crate::serve_support::start_serve;

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

/// `spindle chat FLAGS` with the default agent, in `cwd`, with `data` as `XDG_DATA_HOME`, and
/// `input` piped in (`None`: stdin closed).
fn default_chat(cwd: &Path, data: &Path, flags: &[&str], input: Option<&str>) -> Output {
    let mut child = Command::new(SPINDLE)
        .current_dir(cwd)
        .env("XDG_DATA_HOME", data)
        .arg("chat")
        .args(flags)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle chat");
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(input.as_bytes()).expect("write input");
    }
    child.wait_with_output().expect("wait for spindle chat")
}

fn both(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn out(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn chat_history_the_default_agent_keeps_its_sessions_in_the_data_directory() {
    let dir = TempDir::new("chat-default-history");
    let (work, data) = (dir.join("work"), dir.join("data"));
    std::fs::create_dir_all(&work).unwrap();
    for prompt in ["remember the lighthouse", "and the harbour"] {
        let run = default_chat(&work, &data, &["--prompt", prompt], None);
        assert_eq!(run.status.code(), Some(0), "{}", both(&run));
    }
    let stored = std::fs::read_dir(data.join("spindle/agent-sessions"))
        .expect("the agent's sessions are in the data directory")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        })
        .count();
    assert_eq!(stored, 2);

    // A third process lists both sessions (SESSION, UPDATED, TITLE, CWD).
    let list = default_chat(&work, &data, &["--list"], None);
    assert_eq!(list.status.code(), Some(0), "{}", both(&list));
    let rows: Vec<Vec<String>> = out(&list)
        .lines()
        .skip(1)
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{}", both(&list));
    let first = rows
        .iter()
        .find(|row| {
            row.get(2)
                .is_some_and(|t| t.contains("remember the lighthouse"))
        })
        .unwrap_or_else(|| panic!("the first session is listed: {}", both(&list)));
    let id = first[0].clone();

    // A fourth resumes it: its history is the transcript, then the new turn.
    let resumed = default_chat(&work, &data, &["--resume", &id], Some("/scenario plain\n"));
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let text = out(&resumed);
    let history = text
        .find("remember the lighthouse")
        .unwrap_or_else(|| panic!("{text}"));
    let marker = text
        .find(&format!("[session {id} loaded]"))
        .unwrap_or_else(|| panic!("{text}"));
    let new_turn = text
        .rfind("you> /scenario plain")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(history < marker && marker < new_turn, "{text}");
    assert!(
        !text.contains("and the harbour"),
        "only that session: {text}"
    );

    // `spindle serve` with its default agent finds the same history for the page.
    let served = start_serve(
        &dir.join("db.sqlite"),
        &["--cwd", work.to_str().unwrap()],
        &[],
        None,
        &[("XDG_DATA_HOME", data.to_str().unwrap())],
    );
    let listed = served.get_json("/api/agent-sessions");
    assert_eq!(listed["supported"], true, "{listed}");
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert!(ids.contains(&id.as_str()), "{listed}");
    assert_eq!(ids.len(), 2, "{listed}");
    served.stop();
}

/// A v1 agent that offers `session/resume` but not `session/load`; it answers a resume of
/// `sess_old` and one prompt.
const RESUME_ONLY_AGENT_PY: &str = r#"import json, sys
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": False, "sessionCapabilities": {"resume": {}}}, "authMethods": []}})
    elif method == "session/resume" and msg["params"]["sessionId"] == "sess_old":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess_old", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "still here"}}}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
"#;

#[test]
fn chat_history_an_agent_that_cannot_load_is_resumed_without_a_replay() {
    if !harness::require_python() {
        return;
    }
    let dir = TempDir::new("chat-resume-only");
    let agent = harness::write_script(&dir, "resume_only.py", RESUME_ONLY_AGENT_PY);
    let mut child = Command::new(SPINDLE)
        .current_dir(&dir.path)
        .args(["chat", "--resume", "sess_old", "--", "python3"])
        .arg(&agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle chat");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").unwrap();
    drop(stdin);
    let resumed = child.wait_with_output().unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let text = out(&resumed);
    assert!(
        text.contains("resumed session sess_old (the agent replays no history)"),
        "{text}"
    );
    assert!(text.contains("still here"), "{text}");
}
