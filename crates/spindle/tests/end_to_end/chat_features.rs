//! The daily-client features of `spindle chat` through the real binary and
//! the reference agent, without a terminal (`--prompt`, or piped stdin):
//! the client file system and its policies, client terminals (and their end
//! on cancel), sign-in, modes and config options, `@path` mentions,
//! `--attach`, history (`--list`, `--resume`). The terminal-only parts (Tab
//! completion, the write review, standing permissions) are in
//! `chat_features_tmux`.

use crate::harness::{self, ChildGuard, TempDir};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use spindle_agent::scenarios;

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

/// `spindle chat FLAGS -- spindle agent --delay-ms 0 AGENT_FLAGS` in `cwd`.
fn chat_command(cwd: &Path, flags: &[&str], agent_flags: &[&str]) -> Command {
    let mut command = Command::new(SPINDLE);
    command
        .current_dir(cwd)
        .arg("chat")
        .args(flags)
        .args(["--", SPINDLE, "agent", "--delay-ms", "0"])
        .args(agent_flags);
    command
}

/// `--prompt PROMPT` with stdin closed.
fn prompt(cwd: &Path, flags: &[&str], text: &str, agent_flags: &[&str]) -> Output {
    let mut all = flags.to_vec();
    all.extend(["--prompt", text]);
    chat_command(cwd, &all, agent_flags)
        .stdin(Stdio::null())
        .output()
        .expect("run spindle chat")
}

/// An interactive session with `input` piped in.
fn piped(cwd: &Path, flags: &[&str], input: &str, agent_flags: &[&str]) -> Output {
    let mut child = chat_command(cwd, flags, agent_flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle chat");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write input");
    drop(stdin);
    child.wait_with_output().expect("wait for spindle chat")
}

fn out(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn err(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn both(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        out(output),
        err(output)
    )
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

/// The replayed entries that are not messages (tool calls and the like), as JSON text.
fn non_message_entries(replayed: &Value) -> String {
    replayed["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| {
            !e.to_string().contains("\"agent_message\"")
                && !e.to_string().contains("\"user_message\"")
        })
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn client_fs_with_yes_reads_and_writes_the_file_and_the_recording_keeps_the_diff() {
    let dir = TempDir::new("chat-fs-yes");
    std::fs::write(dir.join("notes.txt"), "one\ntwo\n").unwrap();
    let record = dir.join("rec.jsonl");
    let output = prompt(
        &dir.path,
        &["--yes", "--record", record.to_str().unwrap()],
        "/scenario client-fs notes.txt",
        &["--protocol", "1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        scenarios::client_fs_changed("one\ntwo\n")
    );
    let reply = out(&output);
    assert!(reply.contains("I read notes.txt"), "{reply}");
    assert!(
        reply.contains("Line 2 alone (line 2, limit 1): \"two\""),
        "{reply}"
    );
    // The recording replays to the same change, shown on the edit's tool call.
    let replayed = replay(&record);
    let tools = non_message_entries(&replayed);
    assert!(
        tools.contains(scenarios::CLIENT_FS_APPENDED_LINE),
        "{tools}"
    );
}

#[test]
fn client_fs_ask_without_a_terminal_refuses_the_write_and_says_why() {
    let dir = TempDir::new("chat-fs-ask");
    std::fs::write(dir.join("notes.txt"), "keep me\n").unwrap();
    let output = prompt(
        &dir.path,
        &[],
        "/scenario client-fs notes.txt",
        &["--protocol", "1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "keep me\n"
    );
    assert!(
        err(&output).contains("write to notes.txt refused: --fs ask and no terminal to ask"),
        "{}",
        both(&output)
    );
    assert!(out(&output).contains("notes.txt"), "{}", both(&output));
    assert!(
        !out(&output).contains("I changed notes.txt"),
        "{}",
        both(&output)
    );
}

#[test]
fn client_fs_read_only_reads_and_off_offers_nothing() {
    let dir = TempDir::new("chat-fs-policies");
    std::fs::write(dir.join("notes.txt"), "a\nb\n").unwrap();
    let read_only = prompt(
        &dir.path,
        &["--fs", "read-only", "--yes"],
        "/scenario client-fs notes.txt",
        &["--protocol", "1"],
    );
    assert_eq!(read_only.status.code(), Some(0), "{}", both(&read_only));
    assert!(
        out(&read_only).contains("I read notes.txt"),
        "{}",
        both(&read_only)
    );
    assert!(
        out(&read_only).contains("fs.writeTextFile is false"),
        "{}",
        both(&read_only)
    );
    let off = prompt(
        &dir.path,
        &["--fs", "off", "--yes"],
        "/scenario client-fs notes.txt",
        &["--protocol", "1"],
    );
    assert_eq!(off.status.code(), Some(0), "{}", both(&off));
    assert!(!out(&off).contains("I read notes.txt"), "{}", both(&off));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "a\nb\n"
    );
    // What each setting advertises in `initialize`.
    for (flags, read, write, terminal) in [
        (
            &["--fs", "off", "--terminals", "off"][..],
            false,
            false,
            false,
        ),
        (&["--fs", "read-only"][..], true, false, true),
        (&["--fs", "ask"][..], true, true, true),
        (
            &["--fs", "allow", "--terminals", "off"][..],
            true,
            true,
            false,
        ),
    ] {
        let record = dir.join("caps.jsonl");
        let mut all = flags.to_vec();
        all.extend(["--record", record.to_str().unwrap()]);
        let output = prompt(&dir.path, &all, "/scenario plain", &["--protocol", "1"]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{flags:?}: {}",
            both(&output)
        );
        let first = std::fs::read_to_string(&record).unwrap();
        let sent: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
        let caps = &sent["sent"]["params"]["clientCapabilities"];
        assert_eq!(caps["fs"]["readTextFile"], read, "{flags:?}: {caps}");
        assert_eq!(caps["fs"]["writeTextFile"], write, "{flags:?}: {caps}");
        assert_eq!(caps["terminal"], terminal, "{flags:?}: {caps}");
    }
}

#[test]
fn client_fs_refuses_writes_outside_the_working_directory() {
    let dir = TempDir::new("chat-fs-escape");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let outside = dir.join("outside.txt");
    std::os::unix::fs::symlink(&dir.path, work.join("up")).unwrap();
    for target in [
        outside.to_str().unwrap().to_owned(),
        "../outside.txt".to_owned(),
        "up/outside.txt".to_owned(),
        "/proc/self/environ".to_owned(),
    ] {
        let output = prompt(
            &work,
            &["--fs", "allow"],
            &format!("/scenario client-fs {target}"),
            &["--protocol", "1"],
        );
        assert_eq!(output.status.code(), Some(0), "{target}: {}", both(&output));
        assert!(!outside.exists(), "{target} escaped the working directory");
        assert!(
            out(&output).contains("The client refused"),
            "{target}: {}",
            both(&output)
        );
    }
}

/// Processes running `sleep 1000` whose working directory is `dir`.
fn sleepers_in(dir: &Path) -> Vec<u32> {
    let dir = std::fs::canonicalize(dir).unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if cmdline != b"sleep\x001000\x00" {
            continue;
        }
        if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == dir) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn client_terminal_output_comes_back_and_is_recorded_for_replay() {
    let dir = TempDir::new("chat-terminal");
    let record = dir.join("rec.jsonl");
    let output = prompt(
        &dir.path,
        &["--record", record.to_str().unwrap()],
        "/scenario client-terminal",
        &["--protocol", "1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(
        out(&output).contains("spindle terminal: ok"),
        "{}",
        both(&output)
    );
    let recording = std::fs::read_to_string(&record).unwrap();
    assert!(
        recording.contains("{\"local\":{\"terminalOutput\""),
        "{recording}"
    );
    assert!(
        recording.contains("{\"local\":{\"terminalExit\""),
        "{recording}"
    );
    let tools = non_message_entries(&replay(&record));
    assert!(tools.contains("spindle terminal: ok"), "{tools}");
    let off = prompt(
        &dir.path,
        &["--terminals", "off"],
        "/scenario client-terminal",
        &["--protocol", "1"],
    );
    assert_eq!(off.status.code(), Some(0), "{}", both(&off));
    assert!(
        out(&off).contains(scenarios::CLIENT_TERMINAL_NONE_REPLY),
        "{}",
        both(&off)
    );
}

#[test]
fn ctrl_c_kills_a_terminal_that_never_exits() {
    let dir = TempDir::new("chat-terminal-forever");
    let mut chat = ChildGuard::new(
        chat_command(
            &dir.path,
            &["--prompt", "/scenario client-terminal-forever"],
            &["--protocol", "1"],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle chat"),
    );
    let sleeper = harness::wait_for(Duration::from_secs(60), "the terminal's command", || {
        sleepers_in(&dir.path).first().copied()
    });
    let status = Command::new("kill")
        .args(["-INT", &chat.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = chat
        .wait_timeout(Duration::from_secs(60))
        .expect("chat exits after Ctrl-C");
    assert_eq!(exit.code(), Some(130));
    harness::wait_for(
        Duration::from_secs(30),
        "the terminal's command to be gone",
        || {
            (!Path::new(&format!("/proc/{sleeper}")).exists()
                || std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")))
            .then_some(())
        },
    );
    assert!(sleepers_in(&dir.path).is_empty());
}

#[test]
fn auth_required_shows_the_methods_and_auth_signs_in() {
    let dir = TempDir::new("chat-auth");
    let refused = prompt(&dir.path, &[], "hello", &["--require-auth"]);
    assert_eq!(refused.status.code(), Some(1), "{}", both(&refused));
    let text = err(&refused);
    assert!(text.contains("requires authentication"), "{text}");
    assert!(text.contains("spindle-token"), "{text}");
    assert!(text.contains("--auth METHOD_ID"), "{text}");
    for protocol in ["1", "2"] {
        let signed_in = prompt(
            &dir.path,
            &["--protocol", protocol, "--auth", "spindle-token"],
            "/scenario plain",
            &["--require-auth"],
        );
        assert_eq!(
            signed_in.status.code(),
            Some(0),
            "v{protocol}: {}",
            both(&signed_in)
        );
        assert!(
            err(&signed_in).contains("signed in with spindle-token"),
            "{}",
            both(&signed_in)
        );
    }
    let unknown = prompt(&dir.path, &["--auth", "nope"], "hello", &["--require-auth"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", both(&unknown));
    assert!(
        err(&unknown).contains("spindle-token"),
        "{}",
        both(&unknown)
    );
}

#[test]
fn mode_and_config_commands_list_and_switch() {
    let dir = TempDir::new("chat-modes");
    for protocol in ["1", "2"] {
        let output = piped(
            &dir.path,
            &["--protocol", protocol],
            "/mode\n/mode plan\n/mode\n/config\n/mode nope\n/model\n/model spindle-deep\n/model\n/config effort high\n/config\n",
            &[],
        );
        let text = out(&output);
        assert_eq!(
            output.status.code(),
            Some(0),
            "v{protocol}: {}",
            both(&output)
        );
        let first = text
            .find("* default")
            .unwrap_or_else(|| panic!("v{protocol}: {text}"));
        let done = text
            .find("done: mode")
            .unwrap_or_else(|| panic!("v{protocol}: {text}"));
        let after = text
            .rfind("* plan")
            .unwrap_or_else(|| panic!("v{protocol}: {text}"));
        assert!(first < done && done < after, "v{protocol}: {text}");
        assert!(text.contains("config options"), "v{protocol}: {text}");
        assert!(
            text.contains("no mode \"nope\"") || text.contains("\"nope\" is not a value"),
            "v{protocol}: {text}"
        );
        // The model: the config option of category model.
        let fast = text
            .find("* spindle-fast")
            .unwrap_or_else(|| panic!("v{protocol}: {text}"));
        let picked = text
            .find("done: model spindle-deep")
            .unwrap_or_else(|| panic!("v{protocol}: {text}"));
        let deep = text
            .find("* spindle-deep")
            .unwrap_or_else(|| panic!("v{protocol}: {text}"));
        assert!(fast < picked && picked < deep, "v{protocol}: {text}");
        assert!(text.contains("effort = high"), "v{protocol}: {text}");
    }
}

#[test]
fn mentions_reach_the_agent_and_escapes_are_refused() {
    let dir = TempDir::new("chat-mentions");
    std::fs::write(dir.join("notes.txt"), "some notes\n").unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/read me.md"), "# title\n").unwrap();
    let output = prompt(
        &dir.path,
        &[],
        "/scenario echo-content explain @notes.txt and @\"src/read me.md\"",
        &["--protocol", "1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let reply = out(&output);
    assert!(reply.contains("I received 3 content blocks"), "{reply}");
    assert!(reply.contains("notes.txt"), "{reply}");
    assert!(reply.contains("text 11 bytes"), "{reply}");
    assert!(reply.contains("read%20me.md"), "{reply}");
    let outside = prompt(
        &dir.path,
        &[],
        "look at @../secret.txt",
        &["--protocol", "1"],
    );
    assert_eq!(outside.status.code(), Some(2), "{}", both(&outside));
    assert!(
        err(&outside).contains("not sent: @../secret.txt"),
        "{}",
        both(&outside)
    );
    let missing = prompt(
        &dir.path,
        &[],
        "look at @nothing-here.txt",
        &["--protocol", "1"],
    );
    assert_eq!(missing.status.code(), Some(2), "{}", both(&missing));
}

#[test]
fn attach_sends_an_image_and_is_refused_when_the_agent_takes_none() {
    let dir = TempDir::new("chat-attach");
    let png = dir.join("dot.png");
    std::fs::write(&png, [0x89, b'P', b'N', b'G', 13, 10, 26, 10, 0, 0]).unwrap();
    let output = prompt(
        &dir.path,
        &["--attach", png.to_str().unwrap()],
        "/scenario echo-content what is this",
        &["--protocol", "1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(
        out(&output).contains("image: mimeType=image/png"),
        "{}",
        both(&output)
    );
    assert!(out(&output).contains("(10 bytes)"), "{}", both(&output));
    if !harness::require_python() {
        return;
    }
    let mut fake = harness::fake_agent_command(&dir, "plain");
    let mut command = Command::new(SPINDLE);
    command
        .current_dir(&dir.path)
        .args([
            "chat",
            "--attach",
            png.to_str().unwrap(),
            "--prompt",
            "hi",
            "--",
        ])
        .args(fake.drain(..));
    let refused = command.stdin(Stdio::null()).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", both(&refused));
    assert!(
        err(&refused).contains("the agent does not accept images"),
        "{}",
        both(&refused)
    );
}

/// The session ids of `spindle chat --list` output.
fn listed_ids(output: &Output) -> Vec<String> {
    out(output)
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next().map(str::to_owned))
        .collect()
}

#[test]
fn sessions_are_listed_and_resumed_from_the_agent_history() {
    let dir = TempDir::new("chat-history");
    let state = dir.join("state");
    let state_flag: PathBuf = state.clone();
    let agent = [
        "--protocol",
        "1",
        "--state-dir",
        state_flag.to_str().unwrap(),
    ];
    let first = prompt(&dir.path, &[], "remember the lighthouse", &agent);
    assert_eq!(first.status.code(), Some(0), "{}", both(&first));
    let list = chat_command(&dir.path, &["--list"], &agent)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(list.status.code(), Some(0), "{}", both(&list));
    assert!(
        out(&list).starts_with("SESSION\tUPDATED\tTITLE\tCWD\n"),
        "{}",
        both(&list)
    );
    let ids = listed_ids(&list);
    assert_eq!(ids.len(), 1, "{}", both(&list));
    // v1 session/load and v2 session/resume from the start replay: the
    // earlier turn is the transcript, shown first.
    let v2_agent = ["--state-dir", state_flag.to_str().unwrap()];
    for (flags, agent) in [
        (&["--resume", &ids[0]][..], &agent[..]),
        (&["--protocol", "2", "--resume", &ids[0]][..], &v2_agent[..]),
    ] {
        let loaded = piped(&dir.path, flags, "/scenario plain\n", agent);
        assert_eq!(loaded.status.code(), Some(0), "{}", both(&loaded));
        let text = out(&loaded);
        let history = text
            .find("remember the lighthouse")
            .unwrap_or_else(|| panic!("{flags:?}: {text}"));
        let marker = text
            .find(&format!("[session {} loaded]", ids[0]))
            .unwrap_or_else(|| panic!("{flags:?}: {text}"));
        let new_turn = text
            .rfind("you> /scenario plain")
            .unwrap_or_else(|| panic!("{flags:?}: {text}"));
        assert!(history < marker && marker < new_turn, "{flags:?}: {text}");
    }
    // And with --prompt.
    let again = prompt(&dir.path, &["--resume", &ids[0]], "/scenario plain", &agent);
    assert_eq!(again.status.code(), Some(0), "{}", both(&again));
    let unknown = prompt(&dir.path, &["--resume", "no-such-session"], "hi", &agent);
    assert_eq!(unknown.status.code(), Some(1), "{}", both(&unknown));
    assert!(
        err(&unknown).contains("could not open session no-such-session"),
        "{}",
        both(&unknown)
    );
}

#[test]
fn a_resumed_session_shows_its_tool_calls_diffs_and_plan_as_they_were_shown_live() {
    let dir = TempDir::new("chat-history-tools");
    for recorded in ["1", "2"] {
        let state = dir.join(&format!("state-v{recorded}"));
        // The agent speaks v1 when told to, else v2 (as the test above runs it).
        let agent = |version: &str| {
            let mut flags = vec!["--state-dir".to_owned(), state.to_str().unwrap().to_owned()];
            if version == "1" {
                flags.extend(["--protocol".to_owned(), "1".to_owned()]);
            }
            flags
        };
        let live_agent = agent(recorded);
        let live_agent: Vec<&str> = live_agent.iter().map(String::as_str).collect();
        let flags = ["--protocol", recorded, "--yes"];
        let live = piped(&dir.path, &flags, "/scenario tools\n", &live_agent);
        assert_eq!(live.status.code(), Some(0), "{}", both(&live));
        // What the turn showed, but its permission answer (a request, which no replay repeats).
        let live_text = out(&live);
        // (From the prompt on: v2's greeting is no part of the history.)
        let live_turn: Vec<&str> = live_text
            .lines()
            .skip_while(|l| !l.starts_with("you> "))
            .take_while(|l| !l.starts_with("[end_turn"))
            .filter(|l| !l.starts_with("    permission:"))
            .collect();
        assert!(live_turn.contains(&"[plan]"), "{live_text}");
        assert!(
            live_turn.contains(&"    +    println!(\"hello, spindle\");"),
            "{live_text}"
        );
        let list = chat_command(&dir.path, &["--list"], &live_agent)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let ids = listed_ids(&list);
        assert_eq!(ids.len(), 1, "{}", both(&list));
        // Replayed in the version it was recorded in and in the other one.
        for version in ["1", "2"] {
            let resume_agent = agent(version);
            let resume_agent: Vec<&str> = resume_agent.iter().map(String::as_str).collect();
            let flags = ["--protocol", version, "--resume", &ids[0]];
            let loaded = piped(&dir.path, &flags, "", &resume_agent);
            assert_eq!(loaded.status.code(), Some(0), "{}", both(&loaded));
            let text = out(&loaded);
            let replayed: Vec<&str> = text
                .lines()
                .take_while(|l| !l.starts_with("[session "))
                .collect();
            assert_eq!(
                replayed, live_turn,
                "v{recorded} replayed in v{version}:\n{text}"
            );
        }
    }
}

#[test]
fn a_v2_agent_gets_no_client_files_or_terminals_and_the_chat_says_why() {
    if !harness::require_python() {
        return;
    }
    let dir = TempDir::new("chat-v2-host");
    let agent = harness::fake_agent_command(&dir, "v2-host");
    // Files and terminals on (the defaults): still refused once v2 is negotiated.
    let output = Command::new(SPINDLE)
        .current_dir(&dir.path)
        .args([
            "chat",
            "--protocol",
            "2",
            "--fs",
            "allow",
            "--prompt",
            "hi",
            "--",
        ])
        .args(&agent)
        .stdin(Stdio::null())
        .output()
        .expect("run spindle chat");
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert_eq!(
        out(&output),
        "answers: fs/read_text_file -32601, terminal/create -32601\n",
        "{}",
        both(&output)
    );
    let err = err(&output);
    for method in ["fs/read_text_file", "terminal/create"] {
        assert!(
            err.contains(&format!(
                "the agent sent {method}, which protocol v2 does not have"
            )),
            "{err}"
        );
    }
}

#[test]
fn history_flags_say_so_when_the_agent_offers_none() {
    if !harness::require_python() {
        return;
    }
    let dir = TempDir::new("chat-history-none");
    for flags in [&["--list"][..], &["--resume", "x", "--prompt", "hi"][..]] {
        let output = Command::new(SPINDLE)
            .current_dir(&dir.path)
            .arg("chat")
            .args(flags)
            .arg("--")
            .args(harness::fake_agent_command(&dir, "plain"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{flags:?}: {}",
            both(&output)
        );
        assert!(
            err(&output).contains("the agent offers neither session/resume nor session/load")
                || err(&output).contains("the agent does not offer session/list"),
            "{flags:?}: {}",
            both(&output)
        );
    }
}

#[test]
fn auth_command_lists_and_signs_in_during_a_session() {
    let dir = TempDir::new("chat-auth-command");
    let output = piped(
        &dir.path,
        &["--auth", "spindle-token"],
        "/auth\n/auth spindle-token\n/auth nope\n",
        &["--require-auth"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let text = out(&output);
    assert!(text.contains("1) spindle-token  Token"), "{text}");
    assert!(text.contains("done: sign-in with spindle-token"), "{text}");
    // The failure is a sentence, not raw JSON.
    assert!(
        text.contains("Sign-in with nope failed: agent does not support"),
        "{text}"
    );
    assert!(!text.contains("{\"code\""), "{text}");
}

#[test]
fn piped_prompts_send_mentions_too() {
    let dir = TempDir::new("chat-mentions-piped");
    std::fs::write(dir.join("notes.txt"), "some notes\n").unwrap();
    let output = piped(
        &dir.path,
        &[],
        "/scenario echo-content @notes.txt\nsee @../escape.txt\n/scenario plain\n",
        &["--protocol", "1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let text = out(&output);
    assert!(text.contains("I received 2 content blocks"), "{text}");
    assert!(text.contains("not sent: @../escape.txt"), "{text}");
    // The session went on after the refused prompt.
    assert!(text.contains("Plain streaming demo"), "{text}");
}

/// A v1 agent that starts `sleep 1000` in a client terminal on the first
/// prompt and then exits without ending the turn (if the client refuses the
/// terminal, it ends the turn instead, and the test fails on the status).
const TERMINAL_THEN_EXIT_PY: &str = r#"import json, sys
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        prompt_id = rid
        send({"jsonrpc": "2.0", "id": 77, "method": "terminal/create", "params": {"sessionId": "s1", "command": "sleep", "args": ["1000"]}})
    elif rid == 77 and "result" in msg:
        sys.exit(3)
    elif rid == 77:
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "no terminal"}}}})
        send({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "end_turn"}})
"#;

#[test]
fn terminals_die_with_the_session_when_the_agent_exits() {
    if !harness::require_python() {
        return;
    }
    let dir = TempDir::new("chat-terminal-agent-exit");
    let agent = harness::write_script(&dir, "agent.py", TERMINAL_THEN_EXIT_PY);
    let mut chat = ChildGuard::new(
        Command::new(SPINDLE)
            .current_dir(&dir.path)
            .args(["chat", "--prompt", "go", "--", "python3"])
            .arg(&agent)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let exit = chat
        .wait_timeout(Duration::from_secs(60))
        .expect("chat exits when the agent does");
    assert_eq!(exit.code(), Some(5));
    harness::wait_for(
        Duration::from_secs(30),
        "the terminal's command to be gone",
        || sleepers_in(&dir.path).is_empty().then_some(()),
    );
}

#[test]
fn resuming_a_session_signs_in_first_when_the_agent_requires_it() {
    let dir = TempDir::new("chat-history-auth");
    let state = dir.join("state");
    let agent = [
        "--protocol",
        "1",
        "--require-auth",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let first = prompt(
        &dir.path,
        &["--auth", "spindle-token"],
        "a first turn",
        &agent,
    );
    assert_eq!(first.status.code(), Some(0), "{}", both(&first));
    let list = chat_command(&dir.path, &["--list"], &agent)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let ids = listed_ids(&list);
    assert_eq!(ids.len(), 1, "{}", both(&list));
    let refused = prompt(&dir.path, &["--resume", &ids[0]], "again", &agent);
    assert_eq!(refused.status.code(), Some(1), "{}", both(&refused));
    assert!(
        err(&refused).contains("--auth METHOD_ID"),
        "{}",
        both(&refused)
    );
    let resumed = prompt(
        &dir.path,
        &["--resume", &ids[0], "--auth", "spindle-token"],
        "/scenario plain",
        &agent,
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
}
