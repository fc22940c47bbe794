//! The full-screen `spindle chat` (a terminal on both ends, no `--plain`)
//! on a real terminal: tmux runs it against the reference agent in a 120x40
//! pane, the test types with `send-keys` and reads the screen with
//! `capture-pane -p` at each step. Waits poll the screen until a generous
//! deadline; nothing asserts on timing. The screens read at the main steps
//! are written to `test-output/chat-tui/*.txt`.
//!
//! Each test uses its own tmux server socket; without tmux each test prints
//! `SKIPPED` (and fails under `CI=true`).

use crate::harness::{self, TempDir};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use spindle_agent::scenarios;

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");
const PATIENCE: Duration = Duration::from_secs(60);

fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// `spindle chat` in a detached 120x40 tmux pane on a private server.
struct Pane {
    socket: PathBuf,
}

impl Pane {
    /// Runs `command` (words) in `cwd` with `env`; the pane stays after it
    /// exits, with `[chat exited N]` under its last words.
    fn start(name: &str, cwd: &Path, env: &[(&str, &str)], command: &[&str]) -> Pane {
        let socket =
            std::env::temp_dir().join(format!("spindle-chat-tui-{}-{name}", std::process::id()));
        let words: Vec<String> = command.iter().map(|a| shell_quote(a)).collect();
        let exports: Vec<String> = env
            .iter()
            .map(|(k, v)| format!("export {k}={};", shell_quote(v)))
            .collect();
        let shell = format!(
            "cd {}; {} {}; echo \"[chat exited $?]\"; sleep 600",
            shell_quote(&cwd.display().to_string()),
            exports.join(" "),
            words.join(" ")
        );
        let pane = Pane { socket };
        let output = pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "chat",
            "-x",
            "120",
            "-y",
            "40",
            &shell,
        ]);
        assert!(output.status.success(), "tmux new-session: {output:?}");
        pane
    }

    /// The chat with the reference agent (`spindle agent --delay-ms 20`).
    fn reference(name: &str, cwd: &Path, chat_args: &[&str]) -> Pane {
        let mut command = vec![SPINDLE, "chat"];
        command.extend_from_slice(chat_args);
        command.extend_from_slice(&["--", SPINDLE, "agent", "--delay-ms", "20"]);
        Pane::start(name, cwd, &[], &command)
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .expect("run tmux")
    }

    fn type_text(&self, text: &str) {
        let sent = self.tmux(&["send-keys", "-t", "chat", "-l", text]);
        assert!(sent.status.success());
    }

    fn keys(&self, keys: &[&str]) {
        for key in keys {
            assert!(
                self.tmux(&["send-keys", "-t", "chat", key])
                    .status
                    .success()
            );
        }
    }

    /// Types `text` and Enter.
    fn send(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    /// The visible screen, trailing spaces and blank rows dropped.
    fn screen(&self) -> String {
        // `-J`: a line the normal screen wrapped (after the chat) comes whole.
        let output = self.tmux(&["capture-pane", "-p", "-J", "-t", "chat"]);
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let rows: Vec<&str> = text.lines().map(str::trim_end).collect();
        rows.join("\n").trim_end().to_owned()
    }

    fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "gave up waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the `n`th turn end (`└ ` rows) and the composer back.
    fn wait_for_turns(&self, n: usize) -> String {
        self.wait_until(&format!("{n} turn ends"), |s| {
            s.matches("\n└ ").count() >= n && s.contains("› message the agent")
        })
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Keeps a screen in `test-output/chat-tui/NAME.txt` to read as a user.
fn save(name: &str, screen: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-output/chat-tui");
    std::fs::create_dir_all(&dir).expect("create test-output/chat-tui");
    std::fs::write(dir.join(format!("{name}.txt")), format!("{screen}\n"))
        .expect("write the screen");
}

/// The composer's first row: the one under the rule.
fn composer_line(screen: &str) -> &str {
    let rows: Vec<&str> = screen.lines().collect();
    rows.iter()
        .rposition(|r| !r.is_empty() && r.chars().all(|c| c == '─'))
        .and_then(|at| rows.get(at + 1))
        .copied()
        .unwrap_or("")
}

/// The last row: the status line.
fn status_line(screen: &str) -> &str {
    screen.lines().last().unwrap_or("")
}

#[test]
fn chat_tui_start_screen_a_reply_the_mode_picker_and_ctrl_c_asking_before_quitting() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-start");
    std::fs::write(dir.join("notes.txt"), "hello\n").unwrap();
    let pane = Pane::reference("start", &dir.path, &[]);
    // The first screen says who, where and how: agent, folder, mode, model.
    let start = pane.wait_until("the first screen", |s| {
        s.contains("› message the agent") && s.contains("mode Default")
    });
    save("start", &start);
    let top: Vec<&str> = start.lines().take(4).collect();
    assert_eq!(
        top[0], "spindle chat · Spindle reference agent 0.1.0",
        "{start}"
    );
    assert!(top[1].starts_with("folder   "), "{start}");
    assert_eq!(top[2], "mode     Default   model   Spindle Fast", "{start}");
    assert!(top[3].starts_with("new session "), "{start}");
    assert!(
        status_line(&start)
            .starts_with("Spindle reference agent 0.1.0 · mode Default · model Spindle Fast · "),
        "{start}"
    );

    // A `/` lists the commands it may become, above the composer.
    pane.type_text("/scen");
    pane.wait_until("the command hint", |s| {
        s.contains("  /scenario  Run a scripted")
    });
    pane.type_text("ario thoughts");
    pane.keys(&["Enter"]);
    let reply = pane.wait_for_turns(1);
    save("reply", &reply);
    assert!(reply.contains("› /scenario thoughts"), "{reply}");
    // The reply, word-wrapped; the thought collapsed to one dimmed line.
    assert!(
        reply.contains(&format!("● {}", scenarios::THOUGHTS_REPLY)),
        "{reply}"
    );
    // Each thought is one line.
    assert!(
        reply.contains("\n▸ thinking: The user wants to see thoughts.")
            && reply.contains("\n▸ thinking: (checking that metadata routes this aside)\n"),
        "{reply}"
    );
    assert!(reply.contains("└ done · context "), "{reply}");

    // ↑ on the empty composer brings the last prompt back; Ctrl-U clears it.
    pane.keys(&["Up"]);
    pane.wait_until("the last prompt again", |s| {
        composer_line(s) == "› /scenario thoughts"
    });
    pane.keys(&["C-u"]);
    pane.wait_until("the composer empty", |s| s.contains("› message the agent"));
    // Tab completes an `@` mention from the folder's files.
    pane.type_text("read @no");
    pane.keys(&["Tab"]);
    pane.wait_until("the completed mention", |s| {
        composer_line(s) == "› read @notes.txt"
    });
    pane.keys(&["C-u"]);
    pane.wait_until("the composer empty", |s| s.contains("› message the agent"));

    // `/mode` without an argument opens a menu; ↓ and Enter switch.
    pane.send("/mode");
    let picker = pane.wait_until("the mode menu", |s| s.contains("┌ Choose the mode"));
    assert!(
        picker.contains("│› 1. Default (default) · current"),
        "{picker}"
    );
    pane.keys(&["Down"]);
    pane.wait_until("the second choice", |s| {
        s.contains("│› 2. Plan only (plan)")
    });
    pane.keys(&["Enter"]);
    // The status line and the transcript's notice can reach the screen in different frames.
    pane.wait_until("the new mode and its notice", |s| {
        status_line(s).contains("mode Plan only") && s.contains("· done: mode plan")
    });

    // Ctrl-C on an idle chat asks; another key stays; Ctrl-C twice quits.
    pane.keys(&["C-c"]);
    let asked = pane.wait_until("the question", |s| s.contains("Quit the chat?"));
    save("quit-asked", &asked);
    pane.keys(&["n"]);
    pane.wait_until("the composer back", |s| {
        s.contains("› message the agent") && !s.contains("Quit the chat?")
    });
    pane.keys(&["C-c"]);
    pane.wait_until("the question again", |s| s.contains("Quit the chat?"));
    pane.keys(&["C-c"]);
    let gone = pane.wait_until("the chat's exit", |s| s.contains("[chat exited"));
    assert!(gone.contains("[chat exited 0]"), "{gone}");
    assert!(
        gone.contains(&format!(
            "Resume this session with: spindle chat --resume sess_1 -- {SPINDLE} agent --delay-ms 20"
        )),
        "{gone}"
    );
}

#[test]
fn chat_tui_permission_menu_diff_in_place_and_quit_with_the_resume_command() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-permission");
    let pane = Pane::reference("permission", &dir.path, &[]);
    pane.wait_until("the composer", |s| s.contains("› message the agent"));
    pane.send("/scenario tools");
    // The whole menu: a capture may land while the frame is being drawn.
    let menu = pane.wait_until("the permission menu", |s| {
        s.contains("┌ Allow Edit src/main.rs?") && s.contains("│↑/↓ Enter · 1-4")
    });
    save("permission", &menu);
    // The edit's diff is on screen, in place, while the question waits.
    for row in [
        "▾ edit Edit src/main.rs · waiting for permission",
        "    -    println!(\"hello\");",
        "    +    println!(\"hello, spindle\");",
        "│› 1. Allow",
        "│  2. Reject",
        "│↑/↓ Enter · 1-4",
    ] {
        assert!(menu.lines().any(|l| l.starts_with(row)), "{row}\n{menu}");
    }
    assert!(menu.contains("▸ read Read src/main.rs · done"), "{menu}");
    // The spinner and the elapsed time while the turn runs.
    assert!(status_line(&menu).contains(" working "), "{menu}");
    pane.keys(&["Down"]);
    pane.wait_until("Reject selected", |s| s.contains("│› 2. Reject"));
    pane.keys(&["Up"]);
    pane.wait_until("Allow selected", |s| s.contains("│› 1. Allow"));
    pane.keys(&["Enter"]);
    let done = pane.wait_for_turns(1);
    save("diff", &done);
    assert!(
        done.contains(&format!("● {}", scenarios::TOOLS_REPLY_ALLOWED)),
        "{done}"
    );
    assert!(
        done.contains("▾ edit Edit src/main.rs · done\n    permission: answered Allow"),
        "{done}"
    );
    assert_eq!(
        done.matches("+    println!(\"hello, spindle\");").count(),
        1,
        "{done}"
    );
    assert!(!done.contains("┌ Allow"), "{done}");

    pane.send("/quit");
    let gone = pane.wait_until("the chat's exit", |s| s.contains("[chat exited"));
    save("quit", &gone);
    assert!(gone.contains("[chat exited 0]"), "{gone}");
    assert!(
        gone.contains("Resume this session with: spindle chat --resume sess_1 -- "),
        "{gone}"
    );
}

#[test]
fn chat_tui_ctrl_c_cancels_a_running_turn_and_the_chat_goes_on() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-cancel");
    let pane = Pane::reference("cancel", &dir.path, &[]);
    pane.wait_until("the composer", |s| s.contains("› message the agent"));
    pane.send("/scenario slow");
    pane.wait_until("the slow reply under way", |s| {
        s.contains("● Slow streaming:") && status_line(s).contains(" working ")
    });
    pane.keys(&["C-c"]);
    let cancelled = pane.wait_for_turns(1);
    save("cancel", &cancelled);
    assert!(cancelled.contains("└ cancelled"), "{cancelled}");
    assert!(!cancelled.contains(scenarios::SLOW_REPLY), "{cancelled}");
    assert!(
        !status_line(&cancelled).contains(" working "),
        "{cancelled}"
    );

    // A resize lays the screen out again at the new width.
    let resized = pane.tmux(&["resize-window", "-t", "chat", "-x", "80", "-y", "30"]);
    assert!(resized.status.success(), "{resized:?}");
    let narrow = pane.wait_until("the narrower screen", |s| {
        s.lines().any(|l| l == "─".repeat(80))
    });
    assert_eq!(narrow.lines().count(), 30, "{narrow}");

    // A failed turn ends with its error as a sentence, and the chat goes on.
    pane.send("/scenario error");
    let failed = pane.wait_for_turns(2);
    save("error", &failed);
    // The sentence wraps at 80 columns; its words are all there, the code on the line after.
    let words: Vec<&str> = failed.split_whitespace().collect();
    let sentence = format!(
        "└ The agent ended the turn with an error: {}.",
        scenarios::ERROR_MESSAGE
    );
    let wanted: Vec<&str> = sentence.split_whitespace().collect();
    assert!(
        words.windows(wanted.len()).any(|w| w == wanted.as_slice()),
        "{failed}"
    );
    assert!(
        failed.contains("  code -32603 (internal error)"),
        "{failed}"
    );
    pane.send("/scenario thoughts");
    pane.wait_for_turns(3);
    // Ctrl-D on the empty composer quits.
    pane.keys(&["C-d"]);
    let gone = pane.wait_until("the chat's exit", |s| s.contains("[chat exited"));
    assert!(gone.contains("Resume this session with: "), "{gone}");
}

/// A v1 agent that can load `sess_old`: its replay is a prompt, a plan, an
/// edit with its diff and a reply; then it answers a prompt with a line that
/// is not JSON and a reply.
const LOADING_AGENT_PY: &str = r#"import json, sys
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
def update(u):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess_old", "update": u}})
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}, "agentInfo": {"name": "loader", "version": "2.0"}, "authMethods": []}})
    elif method == "session/load" and msg["params"]["sessionId"] == "sess_old":
        update({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "fix the greeting"}})
        update({"sessionUpdate": "plan", "entries": [{"content": "Edit the greeting", "priority": "high", "status": "completed"}]})
        update({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit greet.txt", "kind": "edit", "status": "completed",
                "content": [{"type": "diff", "path": "/w/greet.txt", "oldText": "hello\n", "newText": "hello, world\n"}]})
        update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "The greeting is fixed."}})
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "session/prompt":
        sys.stdout.write("this line is not JSON\n"); sys.stdout.flush()
        update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "still here"}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
"#;

#[test]
fn chat_tui_resume_shows_the_replayed_tool_calls_diffs_and_plans() {
    if !harness::require_tool("tmux", &["-V"]) || !harness::require_python() {
        return;
    }
    let dir = TempDir::new("chat-tui-resume");
    let agent = harness::write_script(&dir, "loader.py", LOADING_AGENT_PY);
    let agent = agent.display().to_string();
    let pane = Pane::start(
        "resume",
        &dir.path,
        &[],
        &[
            SPINDLE, "chat", "--resume", "sess_old", "--", "python3", &agent,
        ],
    );
    let screen = pane.wait_until("the replayed session", |s| {
        s.contains("· session sess_old loaded") && s.contains("› message the agent")
    });
    save("resume", &screen);
    let expected = [
        "spindle chat · loader 2.0",
        "resumed session sess_old",
        "› fix the greeting",
        "[plan]",
        "  [x] Edit the greeting",
        "▾ edit Edit greet.txt · done",
        "    -hello",
        "    +hello, world",
        "● The greeting is fixed.",
    ];
    let mut rest = screen.as_str();
    for row in expected {
        let at = rest
            .find(row)
            .unwrap_or_else(|| panic!("{row:?} in order\n{screen}"));
        rest = &rest[at + row.len()..];
    }
    pane.send("hello");
    // Bad agent output is a diagnostic line; the turn goes on.
    let after = pane.wait_for_turns(1);
    save("diagnostic", &after);
    assert!(after.contains("· diagnostic: "), "{after}");
    assert!(after.contains("● still here"), "{after}");
    pane.send("/exit");
    let gone = pane.wait_until("the chat's exit", |s| s.contains("[chat exited"));
    assert!(
        gone.contains(&format!(
            "Resume this session with: spindle chat --resume sess_old -- python3 {agent}"
        )),
        "{gone}"
    );
}

#[test]
fn chat_tui_a_write_to_review_is_a_menu_under_its_diff() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-write");
    std::fs::write(dir.join("notes.txt"), "hello\n").unwrap();
    let pane = Pane::reference("write", &dir.path, &[]);
    pane.wait_until("the composer", |s| s.contains("› message the agent"));
    pane.send("/scenario client-fs notes.txt");
    let asked = pane.wait_until("the write menu", |s| s.contains("┌ Write notes.txt?"));
    save("write", &asked);
    // The diff once, on the edit above the menu; the menu asks.
    assert_eq!(
        asked
            .matches("+Edited by the Spindle reference agent.")
            .count(),
        1,
        "{asked}"
    );
    assert!(asked.contains("(write waiting for the answer)"), "{asked}");
    assert!(asked.contains("│› 1. Write it"), "{asked}");
    pane.keys(&["2"]);
    let done = pane.wait_for_turns(1);
    assert!(done.contains("(rejected: "), "{done}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
fn chat_tui_shows_the_mcp_servers_left_out_on_its_screen() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-mcp");
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        r#"{"mcpServers": {"web": {"type": "http", "url": "https://mcp.example/x"}}}"#,
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();
    let pane = Pane::reference("mcp", &dir.path, &["--mcp-config", &config]);
    // Written on stderr before the screen opened, it would be hidden behind it.
    let start = pane.wait_until("the note on the first screen", |s| {
        s.contains("› message the agent") && s.contains("MCP server \"web\" (http) not passed")
    });
    assert!(start.contains("the agent does not advertise"), "{start}");
}

#[test]
fn chat_tui_a_form_question_is_a_menu_per_field_and_its_answer_reaches_the_agent() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-elicit");
    let pane = Pane::reference("elicit", &dir.path, &[]);
    pane.wait_until("the composer", |s| s.contains("› message the agent"));
    pane.send("/scenario elicit-form");
    let asked = pane.wait_until("the question", |s| s.contains("┌ The agent asks"));
    save("elicitation-start", &asked);
    assert!(
        asked.contains(&format!(
            "The agent asks: {}",
            scenarios::ELICIT_FORM_MESSAGE
        )),
        "{asked}"
    );
    assert!(asked.contains("│› 1. Answer"), "{asked}");
    pane.keys(&["1"]);
    // A text field is typed in the composer; a wrong value is asked again with the reason.
    pane.wait_until("the first field", |s| {
        s.contains("Project name: (type it below")
    });
    pane.send("x");
    pane.wait_until("the reason", |s| {
        s.contains("not taken: at least 2 characters")
    });
    pane.send("demo");
    pane.wait_until("the email field", |s| s.contains("Contact email: (type it"));
    pane.keys(&["Enter"]); // optional: skipped
    pane.wait_until("the budget field", |s| {
        s.contains("Budget (hours): (type it")
    });
    pane.keys(&["Enter"]);
    pane.wait_until("the workers field", |s| s.contains("Workers: (type it"));
    pane.keys(&["Enter"]); // its default, 2
    let boolean = pane.wait_until("the tests field", |s| s.contains("Write tests: (type it"));
    assert!(boolean.contains("│› 1. Yes"), "{boolean}");
    pane.keys(&["Down", "Enter"]); // No
    // Each field is a new menu: its selection starts at the first choice again.
    let license = pane.wait_until("the license field", |s| s.contains("License: (type it"));
    save("elicitation-choice", &license);
    assert!(license.contains("│› 1. MIT"), "{license}");
    pane.keys(&["Down", "Enter"]); // Apache 2.0
    let targets = pane.wait_until("the targets field", |s| s.contains("Targets: (type it"));
    assert!(targets.contains("│› 1. Skip (default)"), "{targets}");
    pane.send("linux, windows");
    let done = pane.wait_for_turns(1);
    save("elicitation-answered", &done);
    assert!(
        done.contains(
            "You accepted: license=\"apache-2.0\", name=\"demo\", targets=[\"linux\",\"windows\"], \
             tests=false, workers=2."
        ),
        "{done}"
    );
    assert!(done.contains("the agent's question: answered"), "{done}");
}

#[test]
fn chat_tui_forks_then_deletes_after_asking() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-fork-delete");
    let pane = Pane::reference("fork-delete", &dir.path, &[]);
    pane.wait_until("the composer", |s| s.contains("› message the agent"));
    pane.send("remember the blue door");
    pane.wait_for_turns(1);
    // The session commands are listed with the others as they are typed.
    pane.type_text("/fo");
    pane.wait_until("the /fork hint", |s| {
        s.contains("  /fork  continue in a new session")
    });
    pane.type_text("rk");
    pane.keys(&["Enter"]);
    let forked = pane.wait_until("the fork's note", |s| {
        s.contains("forked session sess_1 into sess_2; this chat goes on in sess_2")
    });
    save("fork", &forked);
    assert!(
        forked.contains("resume the original with: spindle chat --resume sess_1"),
        "{forked}"
    );
    assert!(
        forked.contains("resume the fork with: spindle chat --resume sess_2"),
        "{forked}"
    );
    assert!(!forked.contains("diagnostic"), "{forked}");
    pane.send("/delete");
    let asked = pane.wait_until("the question", |s| {
        s.contains(
            "delete session sess_2 from the agent (session/delete)? this cannot be undone [y/N]",
        )
    });
    save("delete-asked", &asked);
    pane.send("y");
    let gone = pane.wait_until("the chat's exit", |s| s.contains("[chat exited"));
    save("deleted", &gone);
    assert!(gone.contains("[chat exited 0]"), "{gone}");
    assert!(gone.contains("Session sess_2 was deleted."), "{gone}");
    assert!(!gone.contains("Resume this session with"), "{gone}");
}

#[test]
fn chat_tui_shows_the_queued_lines_above_the_composer_until_they_are_sent() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-queue");
    let pane = Pane::reference("queue", &dir.path, &[]);
    pane.wait_until("the composer", |s| s.contains("› message the agent"));
    pane.send("/scenario stall");
    pane.wait_until("the stalled turn", |s| status_line(s).contains(" working "));
    pane.send("first queued");
    pane.send("second queued");
    pane.wait_until("both queued lines", |s| {
        s.contains("queued 1: first queued") && s.contains("queued 2: second queued")
    });
    pane.send("/queue edit 2 second, edited");
    pane.send("/queue drop 1");
    let queued = pane.wait_until("the queue changed", |s| {
        s.contains("queued 1: second, edited") && !s.contains("queued 2:")
    });
    save("queue", &queued);
    // Ctrl-C ends the stalled turn; the queued line is sent, and the list is gone.
    pane.keys(&["C-c"]);
    let sent = pane.wait_until("the queued line's reply", |s| {
        s.contains("You said: \"second, edited\"") && s.matches("\n└ ").count() >= 2
    });
    assert!(!sent.contains("queued 1:"), "{sent}");
    assert!(!sent.contains("› first queued"), "{sent}");
}

/// Issue 27 on the full screen with a v2 agent: the composer says a line sent while the agent
/// works goes at once; a prompt sent during `/scenario wait-next` (which ends only once another
/// prompt was inserted) is sent, not queued; the permission question its work asks while both
/// prompts are in flight is answered from the menu; the status line says "working" until the
/// last prompt's work ended.
#[test]
fn chat_tui_v2_sends_a_prompt_at_once_and_works_until_the_last_prompt_ended() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-v2-at-once");
    let pane = Pane::reference("v2-at-once", &dir.path, &["--protocol", "2"]);
    pane.wait_until("the composer", |s| s.contains("› message the agent"));
    pane.send("/scenario wait-next");
    pane.wait_until("the first turn waiting, and the composer's note", |s| {
        s.contains(scenarios::WAIT_NEXT_TEXT)
            && status_line(s).contains(" working ")
            && s.contains("what you send now goes to it at once")
    });
    pane.send("/scenario tools");
    let menu = pane.wait_until("the permission menu", |s| {
        s.contains("┌ Allow Edit src/main.rs?") && s.contains("│↑/↓ Enter · 1-4")
    });
    save("v2-at-once", &menu);
    assert!(
        menu.contains("sent while the agent works: /scenario tools"),
        "{menu}"
    );
    assert!(!menu.contains("queued 1:"), "{menu}");
    assert!(status_line(&menu).contains(" working "), "{menu}");
    pane.keys(&["Enter"]);
    let done = pane.wait_until("the work's end", |s| {
        s.contains(&format!("● {}", scenarios::TOOLS_REPLY_ALLOWED))
            && s.contains("› message the agent")
            && !status_line(s).contains(" working ")
    });
    save("v2-at-once-done", &done);
    assert!(
        done.contains("▾ edit Edit src/main.rs · done\n    permission: answered Allow"),
        "{done}"
    );
}

/// A remote session runs where the server says: chat's own folder outside the server's, the
/// first screen names the server's (`_meta.spindle.cwd`, opted into) instead; a second chat
/// attached as an observer says so, with the session's mode and model.
#[test]
fn chat_tui_a_remote_session_shows_the_servers_folder_and_an_observer_says_it_observes() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("chat-tui-remote");
    let served_dir = dir.join("served");
    let elsewhere = dir.join("elsewhere");
    for d in [&served_dir, &elsewhere] {
        std::fs::create_dir_all(d).unwrap();
    }
    let served_dir = served_dir.canonicalize().unwrap();
    let served = crate::serve_support::start_serve(
        &dir.join("db.sqlite"),
        &[
            "--protocol",
            "1",
            "--cwd",
            &served_dir.display().to_string(),
        ],
        &crate::serve_support::reference_agent_with(1, &[]),
        None,
        &[],
    );
    let url = format!("http://{}/acp", served.addr);
    let pane = Pane::start(
        "remote",
        &elsewhere,
        &[],
        &[SPINDLE, "chat", "--connect", &url],
    );
    let start = pane.wait_until("the first screen", |s| {
        s.contains("› message the agent") && s.contains("new session ")
    });
    save("remote-start", &start);
    let top: Vec<&str> = start.lines().take(4).collect();
    assert_eq!(
        top[1],
        format!("folder   {} (on the server)", served_dir.display()),
        "{start}"
    );
    assert_eq!(top[2], "mode     Default   model   Spindle Fast", "{start}");
    let session = top[3].trim_start_matches("new session ").to_owned();
    pane.send("/mode plan");
    pane.wait_until("the mode changed", |s| s.contains("mode Plan only"));

    let observer = Pane::start(
        "observer",
        &served_dir,
        &[],
        &[
            SPINDLE, "chat", "--attach", &url, &session, "--role", "observer",
        ],
    );
    let screen = observer.wait_until("the observer's first screen", |s| {
        s.contains(&format!("observing session {session}"))
    });
    save("remote-observer", &screen);
    let top: Vec<&str> = screen.lines().take(4).collect();
    assert_eq!(
        top[1],
        format!("folder   {}", served_dir.display()),
        "{screen}"
    );
    assert_eq!(
        top[2], "mode     Plan only   model   Spindle Fast",
        "{screen}"
    );
    assert!(
        composer_line(&screen).contains("observing · the session's controllers prompt"),
        "{screen}"
    );
    served.stop();
}
