//! `spindle chat`'s checkpoints against the reference agent (real processes): a checkpoint is
//! taken before each prompt in the data directory (never in the folder), `/undo` shows the diff
//! and asks y/N, puts the file back, and `/undo` again undoes that restore; `--no-checkpoints`
//! keeps none. The agent writes through Spindle's file system here; files an agent writes by
//! itself are covered by `spindle-host`'s checkpoint tests (the snapshot does not care who wrote).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use spindle_agent::scenarios::client_fs_changed;

use crate::harness::TempDir;

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

/// `spindle chat --fs allow FLAGS` with the reference agent in `work`, `input` piped, the data
/// directory under `data`; stdout + stderr.
fn chat(work: &Path, data: &Path, flags: &[&str], input: &str) -> String {
    let mut child = Command::new(SPINDLE)
        .current_dir(work)
        .env("XDG_DATA_HOME", data)
        .args(["chat", "--fs", "allow"])
        .args(flags)
        .args(["--", SPINDLE, "agent", "--delay-ms", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle chat");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write the input");
    drop(stdin);
    let output = child.wait_with_output().expect("wait for spindle chat");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{text}");
    text
}

#[test]
fn undo_puts_the_file_back_and_a_second_undo_undoes_the_restore() {
    let dir = TempDir::new("chat-checkpoints");
    let work = dir.join("work");
    let data = dir.join("data");
    std::fs::create_dir_all(&work).unwrap();
    let notes = work.join("notes.txt");
    let original = "hello\n";
    let edited = client_fs_changed(original);

    std::fs::write(&notes, original).unwrap();
    let out = chat(
        &work,
        &data,
        &[],
        "/scenario client-fs notes.txt\n/checkpoints\n/undo\ny\n/checkpoints\n",
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), original, "{out}");
    assert!(out.contains("before turn 1 · "), "{out}");
    // The diff is shown before the question: the agent's line goes away.
    let diff_line = format!("-{}", edited.lines().last().unwrap());
    let asked = out
        .find("put the files back as they were before turn 1?")
        .expect(&out);
    assert!(out[..asked].contains(&diff_line), "{out}");
    assert!(
        out.contains("restored the files as they were before turn 1: 1 written, 0 deleted"),
        "{out}"
    );
    assert!(out.contains("before restore 1 · "), "{out}");
    // Nothing of Spindle's in the folder: the checkpoints are in the data directory.
    let names: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["notes.txt"], "{out}");
    assert!(data.join("spindle/checkpoints").is_dir(), "{out}");

    // A new chat: the agent edits, /undo restores, /undo again undoes the restore.
    std::fs::write(&notes, original).unwrap();
    let out = chat(
        &work,
        &data,
        &[],
        "/scenario client-fs notes.txt\n/undo\ny\n/undo\ny\n",
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), edited, "{out}");
    // (The reference agent numbers its sessions from 1 in each process: this chat's session has
    // the first one's id, so its checkpoints follow the first one's.)
    assert!(
        out.contains("put the files back as they were before restore 2?"),
        "{out}"
    );
    // Answered no, nothing changes.
    let out = chat(
        &work,
        &data,
        &[],
        "/scenario client-fs notes.txt\n/undo\nn\n",
    );
    assert!(out.contains("nothing restored"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        client_fs_changed(&edited),
        "{out}"
    );
}

#[test]
fn no_checkpoints_keeps_none_and_says_so() {
    let dir = TempDir::new("chat-no-checkpoints");
    let work = dir.join("work");
    let data = dir.join("data");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "x\n").unwrap();
    let out = chat(
        &work,
        &data,
        &["--no-checkpoints"],
        "/scenario client-fs notes.txt\n/undo\n",
    );
    assert!(
        out.contains("no checkpoints: checkpoints are off (--no-checkpoints)"),
        "{out}"
    );
    assert!(!data.join("spindle/checkpoints").exists(), "{out}");
}

/// The reference agent numbers its sessions from 1 in each process: chats in two folders have
/// sessions with one id. Each folder keeps its own checkpoints (a chat in the other folder
/// used to start the store again, losing the first folder's).
#[test]
fn sessions_with_one_id_in_two_folders_keep_their_own_checkpoints() {
    let dir = TempDir::new("chat-checkpoints-two-folders");
    let data = dir.join("data");
    let (first, second) = (dir.join("first"), dir.join("second"));
    for work in [&first, &second] {
        std::fs::create_dir_all(work).unwrap();
        std::fs::write(work.join("notes.txt"), "hello\n").unwrap();
    }
    let turn = "/scenario client-fs notes.txt\n";
    chat(&first, &data, &[], turn);
    let out = chat(&second, &data, &[], &format!("{turn}/checkpoints\n"));
    assert!(out.contains("before turn 1 · "), "{out}");
    assert!(!out.contains("before turn 2"), "{out}");
    let out = chat(&first, &data, &[], &format!("{turn}/checkpoints\n"));
    assert!(
        out.contains("before turn 1 · ") && out.contains("before turn 2 · "),
        "{out}"
    );
}
