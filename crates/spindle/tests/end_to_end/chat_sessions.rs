//! `spindle chat`'s session commands against the reference agent (real processes), v1 and v2:
//! `/fork` moves the chat to a new session that `--list` shows with its title, `/delete` asks
//! y/N and removes the agent's copy, `/logout`, and `--add-dir` (sent as
//! `additionalDirectories`, listed by the agent, and widening the client file system). Against
//! an agent without these capabilities each command names what is missing. Every recorded
//! message is validated against the ACP schema of the negotiated version.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use spindle_protocol::schema_check::{Direction, SchemaConversation};

use crate::harness::{TempDir, fake_agent_command, require_python};

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

/// Validates every message of a `--record` recording; returns the messages the client sent.
fn check_recording(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the recording");
    let mut conversation = SchemaConversation::new();
    let mut sent = Vec::new();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).expect("a JSON line");
        if value.get("local").is_some() {
            continue;
        }
        let (direction, message) = match value.get("sent") {
            Some(message) => {
                sent.push(message.clone());
                (Direction::ClientToAgent, message.clone())
            }
            None => (Direction::AgentToClient, value),
        };
        conversation
            .check(direction, &message.to_string())
            .unwrap_or_else(|e| panic!("{message}: {e:?}"));
    }
    sent
}

/// `spindle chat FLAGS -- AGENT` in `cwd` with `input` piped; (status, stdout + stderr).
fn piped_chat(cwd: &Path, flags: &[&str], agent: &[&str], input: &str) -> (Option<i32>, String) {
    let mut child = Command::new(SPINDLE)
        .current_dir(cwd)
        .arg("chat")
        .args(flags)
        .arg("--")
        .args(agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle chat");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write the input");
    drop(stdin);
    let output = child.wait_with_output().expect("wait for spindle chat");
    (output.status.code(), both(&output))
}

fn both(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The reference agent keeping its sessions in `state`.
fn agent(state: &Path) -> Vec<String> {
    vec![
        SPINDLE.to_owned(),
        "agent".to_owned(),
        "--delay-ms".to_owned(),
        "0".to_owned(),
        "--state-dir".to_owned(),
        state.to_string_lossy().into_owned(),
    ]
}

/// `spindle chat --list` of the agent's sessions: (id, title) per row.
fn list(cwd: &Path, protocol: &str, state: &Path) -> Vec<(String, String)> {
    let agent = agent(state);
    let output = Command::new(SPINDLE)
        .current_dir(cwd)
        .args(["chat", "--protocol", protocol, "--list", "--"])
        .args(&agent)
        .stdin(Stdio::null())
        .output()
        .expect("run spindle chat --list");
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .skip(1)
        .map(|row| {
            let cells: Vec<&str> = row.split('\t').collect();
            (cells[0].to_owned(), cells[2].to_owned())
        })
        .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn fork_moves_the_chat_to_a_listed_session_with_its_own_history() {
    for protocol in ["1", "2"] {
        let dir = TempDir::new(&format!("chat-fork-v{protocol}"));
        let state = dir.join("state");
        let record = dir.join("rec.jsonl");
        let record_arg = record.to_string_lossy().into_owned();
        let flags = ["--protocol", protocol, "--record", &record_arg];
        let agent = agent(&state);
        let (code, all) = piped_chat(
            &dir.path,
            &flags,
            &strs(&agent),
            "remember the blue door\n/fork\nonly in the fork\n",
        );
        assert_eq!(code, Some(0), "v{protocol}: {all}");
        let sent = check_recording(&record);
        let fork = sent
            .iter()
            .find(|m| m["method"] == "session/fork")
            .expect("a session/fork was sent");
        let old = fork["params"]["sessionId"].as_str().unwrap().to_owned();
        let prompts: Vec<&str> = sent
            .iter()
            .filter(|m| m["method"] == "session/prompt")
            .map(|m| m["params"]["sessionId"].as_str().unwrap())
            .collect();
        assert_eq!(prompts.len(), 2, "{sent:?}");
        assert_eq!(prompts[0], old);
        let new = prompts[1].to_owned();
        assert_ne!(new, old);
        assert!(
            all.contains(&format!(
                "forked session {old} into {new}; this chat goes on in {new}"
            )),
            "{all}"
        );
        for (what, id) in [("the original", &old), ("the fork", &new)] {
            assert!(
                all.contains(&format!("resume {what} with: spindle chat"))
                    && all.contains(id.as_str()),
                "{all}"
            );
        }
        assert!(!all.contains("diagnostic"), "{all}");
        // The agent's list names the fork with the title it announced.
        let rows = list(&dir.path, protocol, &state);
        let title_of = |id: &str| rows.iter().find(|(s, _)| s == id).map(|(_, t)| t.clone());
        assert_eq!(title_of(&old).as_deref(), Some("remember the blue door"));
        assert_eq!(
            title_of(&new).as_deref(),
            Some("remember the blue door (fork)")
        );
    }
}

#[test]
fn delete_asks_first_and_removes_the_agents_copy() {
    for protocol in ["1", "2"] {
        let dir = TempDir::new(&format!("chat-delete-v{protocol}"));
        let state = dir.join("state");
        let agent = agent(&state);
        let cwd = dir.path.clone();
        let flags = ["--protocol", protocol];
        // No answer (the input ends) and "n": nothing deleted.
        let (code, all) = piped_chat(&cwd, &flags, &strs(&agent), "keep me\n/delete\n");
        assert_eq!(code, Some(0), "{all}");
        assert!(all.contains("[y/N]"), "{all}");
        assert!(
            all.contains("not deleted: the input ended before a y/N answer"),
            "{all}"
        );
        let (_, all) = piped_chat(&cwd, &flags, &strs(&agent), "keep me too\n/delete\nn\n");
        assert!(all.contains("not deleted"), "{all}");
        assert_eq!(list(&cwd, protocol, &state).len(), 2);

        let record = dir.join("rec.jsonl");
        let record_arg = record.to_string_lossy().into_owned();
        let flags = ["--protocol", protocol, "--record", &record_arg];
        let (code, all) = piped_chat(
            &cwd,
            &flags,
            &strs(&agent),
            "drop me\n/delete\ny\nnot sent\n",
        );
        assert_eq!(code, Some(0), "{all}");
        let sent = check_recording(&record);
        let deleted = sent
            .iter()
            .find(|m| m["method"] == "session/delete")
            .expect("a session/delete was sent");
        let id = deleted["params"]["sessionId"].as_str().unwrap();
        assert!(all.contains(&format!("deleted session {id}")), "{all}");
        assert!(all.contains("is kept"), "the recording is named: {all}");
        assert!(all.contains(&format!("Session {id} was deleted.")), "{all}");
        // The chat ended: the line after the answer never became a prompt.
        assert_eq!(
            sent.iter()
                .filter(|m| m["method"] == "session/prompt")
                .count(),
            1
        );
        let rows = list(&cwd, protocol, &state);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(rows.iter().all(|(s, _)| s != id), "{rows:?}");
    }
}

#[test]
fn add_dir_is_sent_listed_and_widens_the_file_scope() {
    let dir = TempDir::new("chat-add-dir");
    let ws = dir.join("ws");
    let extra = dir.join("extra");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(extra.join("notes.txt"), "one\ntwo\n").unwrap();
    let state = dir.join("state");
    let agent = agent(&state);
    let target = extra.join("notes.txt").to_string_lossy().into_owned();
    let prompt = format!("/scenario client-fs {target}");
    let extra_arg = "../extra";
    for protocol in ["1", "2"] {
        let record = dir.join(&format!("rec-v{protocol}.jsonl"));
        let record_arg = record.to_string_lossy().into_owned();
        let flags = [
            "--protocol",
            protocol,
            "--fs",
            "allow",
            "--add-dir",
            extra_arg,
            "--record",
            &record_arg,
        ];
        let (code, all) = piped_chat(&ws, &flags, &strs(&agent), &format!("{prompt}\n"));
        assert_eq!(code, Some(0), "v{protocol}: {all}");
        let sent = check_recording(&record);
        let new = sent.iter().find(|m| m["method"] == "session/new").unwrap();
        let canonical = std::fs::canonicalize(&extra).unwrap();
        assert_eq!(
            new["params"]["additionalDirectories"],
            serde_json::json!([canonical.to_string_lossy()]),
            "v{protocol}"
        );
    }
    // v1 has the client file system: the file in the additional directory was edited.
    let edited = std::fs::read_to_string(extra.join("notes.txt")).unwrap();
    assert!(
        edited.starts_with("one\ntwo\n")
            && edited.contains("Edited by the Spindle reference agent."),
        "{edited}"
    );
    // Without --add-dir the same file is outside the workspace.
    let (code, all) = piped_chat(
        &ws,
        &["--fs", "allow"],
        &strs(&agent),
        &format!("{prompt}\n"),
    );
    assert_eq!(code, Some(0), "{all}");
    assert!(all.contains("outside the workspace"), "{all}");
    // A directory that does not exist is refused before the agent starts.
    let output = Command::new(SPINDLE)
        .current_dir(&ws)
        .args(["chat", "--add-dir", "no-such-dir", "--prompt", "hi", "--"])
        .args(&agent)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        both(&output).contains("spindle chat: --add-dir no-such-dir: no such directory"),
        "{}",
        both(&output)
    );
}

#[test]
fn logout_is_sent_per_version() {
    for (protocol, method) in [("1", "logout"), ("2", "auth/logout")] {
        let dir = TempDir::new(&format!("chat-logout-v{protocol}"));
        let record = dir.join("rec.jsonl");
        let record_arg = record.to_string_lossy().into_owned();
        let agent = agent(&dir.join("state"));
        let flags = ["--protocol", protocol, "--record", &record_arg];
        let (code, all) = piped_chat(&dir.path, &flags, &strs(&agent), "/logout\n");
        assert_eq!(code, Some(0), "{all}");
        assert!(all.contains("logged out"), "{all}");
        let sent = check_recording(&record);
        assert!(sent.iter().any(|m| m["method"] == method), "{sent:?}");
    }
}

#[test]
fn an_agent_without_the_capabilities_gets_a_sentence_naming_each() {
    if !require_python() {
        return;
    }
    let dir = TempDir::new("chat-sessions-unsupported");
    let agent: Vec<String> = fake_agent_command(&dir, "plain")
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let extra = dir.join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    let extra_arg = extra.to_string_lossy().into_owned();
    let (code, all) = piped_chat(
        &dir.path,
        &["--add-dir", &extra_arg],
        &strs(&agent),
        "/fork\n/delete\n/logout\n",
    );
    assert_eq!(code, Some(0), "{all}");
    for needle in [
        "the agent does not accept additional directories (it does not advertise agentCapabilities.sessionCapabilities.additionalDirectories)",
        "cannot fork: the agent does not offer session/fork (agentCapabilities.sessionCapabilities.fork)",
        "cannot delete: the agent does not offer session/delete (agentCapabilities.sessionCapabilities.delete)",
        "cannot logout: the agent does not offer logout (agentCapabilities.auth.logout)",
    ] {
        assert!(all.contains(needle), "{needle:?} missing from:\n{all}");
    }
}
