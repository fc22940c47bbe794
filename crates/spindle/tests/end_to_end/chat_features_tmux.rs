//! The daily-client features of interactive `spindle chat` on a real
//! terminal (tmux, a private server per test): Tab completion with the
//! command's input hint, `/mode`, the review of a write under `--fs ask`, a
//! live client terminal, Ctrl-C killing a command that never exits, and a
//! standing "always" permission. Waits poll the screen until a generous
//! deadline; nothing asserts on timing. Without tmux each test prints
//! `SKIPPED`, and under `CI=true` it fails instead.

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

/// `spindle chat ARGS -- AGENT...` in a detached 110x45 tmux pane, in `cwd`.
struct Pane {
    socket: PathBuf,
}

impl Pane {
    fn start(name: &str, cwd: &Path, chat_args: &[&str], agent: &[&str]) -> Pane {
        let socket = std::env::temp_dir().join(format!(
            "spindle-chat-features-{}-{name}",
            std::process::id()
        ));
        let mut command = vec![SPINDLE, "chat", "--plain"];
        command.extend_from_slice(chat_args);
        command.push("--");
        command.extend_from_slice(agent);
        let line: Vec<String> = command.iter().map(|a| shell_quote(a)).collect();
        let shell = format!("{}; echo \"[chat exited $?]\"; sleep 600", line.join(" "));
        let pane = Pane { socket };
        let output = pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "chat",
            "-x",
            "110",
            "-y",
            "45",
            "-c",
            cwd.to_str().expect("UTF-8 path"),
            &shell,
        ]);
        assert!(output.status.success(), "tmux new-session: {output:?}");
        pane
    }

    fn reference(name: &str, cwd: &Path, chat_args: &[&str]) -> Pane {
        Pane::start(
            name,
            cwd,
            chat_args,
            &[SPINDLE, "agent", "--protocol", "1", "--delay-ms", "0"],
        )
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
        assert!(
            self.tmux(&["send-keys", "-t", "chat", "-l", text])
                .status
                .success()
        );
    }

    fn key(&self, key: &str) {
        assert!(
            self.tmux(&["send-keys", "-t", "chat", key])
                .status
                .success()
        );
    }

    fn type_line(&self, text: &str) {
        self.type_text(text);
        self.key("Enter");
    }

    fn screen(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "chat"]);
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned()
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

    /// Waits for the input prompt at the bottom after `n` finished turns.
    fn wait_for_turns(&self, n: usize) -> String {
        self.wait_until(&format!("{n} finished turns"), |s| {
            s.matches("\n[end_turn").count() + s.matches("\n[cancelled").count() >= n
                && s.lines().last().is_some_and(|l| l.trim_end() == ">")
        })
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
        let _ = std::fs::remove_file(&self.socket);
    }
}

#[test]
fn tab_completes_commands_and_shows_their_hint() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("tmux-tab");
    std::fs::write(dir.join("notes.txt"), "n\n").unwrap();
    let pane = Pane::reference("tab", &dir.path, &[]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_text("/scen");
    pane.key("Tab");
    // Completed, with the agent's input hint under the line being typed.
    let screen = pane.wait_until("the completed command and its hint", |s| {
        s.lines()
            .last()
            .is_some_and(|l| l.trim_end() == "> /scenario")
            && s.contains("/scenario plain | thoughts")
    });
    assert!(screen.contains("Run a scripted behaviour"), "{screen}");
    // Two candidates: both listed, the line unchanged.
    pane.key("C-u");
    pane.type_text("/mo");
    pane.key("Tab");
    pane.wait_until("the own command completed", |s| {
        s.lines().last().is_some_and(|l| l.trim_end() == "> /mode")
    });
    // A mention: files under the working directory.
    pane.key("C-u");
    pane.type_text("/scenario echo-content @no");
    pane.key("Tab");
    pane.wait_until("the completed path", |s| {
        s.lines()
            .last()
            .is_some_and(|l| l.trim_end() == "> /scenario echo-content @notes.txt")
    });
    pane.key("Enter");
    let screen = pane.wait_for_turns(1);
    assert!(
        screen.contains("> /scenario echo-content @notes.txt"),
        "{screen}"
    );
    assert!(screen.contains("I received 2 content blocks"), "{screen}");
    // Up brings the last line back; Ctrl-C on a typed line drops it and the
    // chat goes on.
    pane.key("Up");
    pane.wait_until("the line from the history", |s| {
        s.lines()
            .last()
            .is_some_and(|l| l.trim_end() == "> /scenario echo-content @notes.txt")
    });
    pane.key("C-c");
    pane.wait_until("the line dropped", |s| {
        s.lines().last().is_some_and(|l| l.trim_end() == ">")
    });
    pane.type_line("/scenario plain");
    let screen = pane.wait_for_turns(2);
    assert!(!screen.contains("[chat exited"), "{screen}");
}

#[test]
fn sign_in_is_asked_on_a_terminal_when_the_agent_requires_it() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("tmux-auth");
    let pane = Pane::start(
        "auth",
        &dir.path,
        &[],
        &[
            SPINDLE,
            "agent",
            "--protocol",
            "1",
            "--delay-ms",
            "0",
            "--require-auth",
        ],
    );
    let screen = pane.wait_until("the sign-in question", |s| {
        s.ends_with("sign in with (number or id, empty to give up):")
    });
    assert!(screen.contains("1) spindle-token  Token"), "{screen}");
    pane.type_line("1");
    pane.wait_until("the input prompt", |s| {
        s.lines().last().is_some_and(|l| l.trim_end() == ">")
    });
    pane.type_line("/scenario plain");
    let screen = pane.wait_for_turns(1);
    assert!(screen.contains("signed in with spindle-token"), "{screen}");
}

#[test]
fn mode_command_lists_and_switches_on_a_terminal() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("tmux-mode");
    let pane = Pane::reference("mode", &dir.path, &[]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_line("/mode");
    pane.wait_until("the mode list", |s| s.contains("* default  Default"));
    pane.type_text("/mode p");
    pane.key("Tab");
    pane.wait_until("the completed mode", |s| {
        s.lines()
            .last()
            .is_some_and(|l| l.trim_end() == "> /mode plan")
    });
    pane.key("Enter");
    pane.wait_until("the switch", |s| s.contains("done: mode plan"));
    pane.type_line("/mode");
    pane.wait_until("plan marked current", |s| s.contains("* plan  Plan only"));
}

#[test]
fn a_write_is_reviewed_as_a_diff_before_it_is_applied() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("tmux-review");
    std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let pane = Pane::reference("review", &dir.path, &[]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_line("/scenario client-fs notes.txt");
    let screen = pane.wait_until("the review question", |s| {
        s.lines()
            .last()
            .is_some_and(|l| l.trim_end() == "apply? [y/N]")
    });
    assert!(
        screen.contains("The agent wants to change notes.txt"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("+{}", scenarios::CLIENT_FS_APPENDED_LINE)),
        "{screen}"
    );
    // Nothing is written before the answer.
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    pane.type_line("y");
    let screen = pane.wait_for_turns(1);
    // The edit's tool call shows the diff with the write's outcome; the diff itself once
    // (on the tool call, not again in the question nor when the write's outcome came).
    assert!(screen.contains("notes.txt (written)"), "{screen}");
    assert_eq!(
        screen
            .matches(&format!("+{}", scenarios::CLIENT_FS_APPENDED_LINE))
            .count(),
        1,
        "{screen}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        scenarios::client_fs_changed("alpha\nbeta\n")
    );
    // A second change, rejected: the file stays as it is.
    pane.type_line("/scenario client-fs notes.txt");
    pane.wait_until("the second review", |s| {
        s.lines()
            .last()
            .is_some_and(|l| l.trim_end() == "apply? [y/N]")
    });
    pane.type_line("n");
    let screen = pane.wait_for_turns(2);
    assert!(screen.contains("not written: notes.txt"), "{screen}");
    assert!(screen.contains("notes.txt (rejected"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        scenarios::client_fs_changed("alpha\nbeta\n")
    );
}

#[test]
fn a_client_terminal_shows_its_output_in_the_tool_call() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("tmux-terminal");
    let pane = Pane::reference("terminal", &dir.path, &[]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_line("/scenario client-terminal");
    let screen = pane.wait_for_turns(1);
    // The output shows under the tool call (indented), apart from the reply
    // that quotes it.
    assert!(
        screen
            .lines()
            .any(|l| l.starts_with(' ') && l.contains("spindle terminal: ok")),
        "{screen}"
    );
}

/// Processes running `sleep 1000` whose working directory is `dir`.
fn sleepers_in(dir: &Path) -> Vec<u32> {
    let dir = std::fs::canonicalize(dir).unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cwd = std::fs::read_link(e.path().join("cwd")).ok()?;
            (cmdline == b"sleep\x001000\x00" && cwd == dir).then_some(pid)
        })
        .collect()
}

#[test]
fn ctrl_c_kills_a_terminal_command_that_never_exits() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("tmux-forever");
    let pane = Pane::reference("forever", &dir.path, &[]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_line("/scenario client-terminal-forever");
    pane.wait_until("the command's first line", |s| {
        s.contains("waiting until cancelled")
    });
    let sleeper = harness::wait_for(PATIENCE, "the terminal's process", || {
        sleepers_in(&dir.path).first().copied()
    });
    pane.key("C-c");
    pane.wait_for_turns(1);
    harness::wait_for(PATIENCE, "the terminal's process to be gone", || {
        let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat"));
        (stat.is_err() || stat.is_ok_and(|s| s.contains(") Z "))).then_some(())
    });
    assert!(sleepers_in(&dir.path).is_empty());
}

#[test]
fn an_always_answer_stands_for_the_same_tool_and_is_shown() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("tmux-always");
    // The reference agent offers Allow, Reject, Always allow, Always reject, and asks again
    // every time: only the chat's remembered answer keeps the question away.
    let pane = Pane::reference("always", &dir.path, &[]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_line("/scenario tools");
    let screen = pane.wait_until("the permission question", |s| s.contains("choose 1-4:"));
    assert!(
        screen.contains("3) Always allow [allow_always]"),
        "{screen}"
    );
    pane.type_line("3");
    let screen = pane.wait_for_turns(1);
    // The reply goes on below the question (its start printed once, above it).
    let (first, rest) = scenarios::TOOLS_REPLY_ALLOWED.split_once(". ").unwrap();
    assert_eq!(screen.matches(first).count(), 1, "{screen}");
    assert_eq!(screen.matches(rest).count(), 1, "{screen}");
    assert!(
        screen.contains("standing: allow always edit: Edit"),
        "{screen}"
    );
    pane.type_line("/scenario tools");
    let screen = pane.wait_for_turns(2);
    // Answered without asking: the reply is whole.
    assert_eq!(
        screen.matches(scenarios::TOOLS_REPLY_ALLOWED).count(),
        1,
        "{screen}"
    );
    assert_eq!(screen.matches(rest).count(), 2, "{screen}");
    assert!(screen.contains("(answered without asking)"), "{screen}");
    assert_eq!(screen.matches("choose 1-4:").count(), 1, "{screen}");
    // Listed, then forgotten: the next request is asked again.
    pane.type_line("/permissions");
    pane.wait_until("the standing answers", |s| {
        s.contains("1) standing: allow always edit: Edit")
    });
    pane.type_line("/permissions forget 1");
    pane.wait_until("the answer forgotten", |s| {
        s.contains("forgot: standing: allow always edit: Edit")
    });
    pane.type_line("/scenario tools");
    pane.wait_until("the question again", |s| {
        s.matches("choose 1-4:").count() == 2
    });
    // "Always reject" stands too.
    pane.type_line("4");
    let screen = pane.wait_for_turns(3);
    let (_, rejected) = scenarios::TOOLS_REPLY_REJECTED.split_once(". ").unwrap();
    assert_eq!(screen.matches(rejected).count(), 1, "{screen}");
    assert!(
        screen.contains("standing: reject always edit: Edit"),
        "{screen}"
    );
    pane.type_line("/scenario tools");
    let screen = pane.wait_for_turns(4);
    assert_eq!(
        screen.matches(scenarios::TOOLS_REPLY_REJECTED).count(),
        1,
        "{screen}"
    );
    assert_eq!(screen.matches(rejected).count(), 2, "{screen}");
    assert_eq!(screen.matches("choose 1-4:").count(), 2, "{screen}");
}

#[test]
fn prompt_mode_reviews_a_write_when_stdin_is_a_terminal() {
    if !harness::require_tool("tmux", &["-V"]) {
        return;
    }
    let dir = TempDir::new("tmux-prompt-review");
    std::fs::write(dir.join("notes.txt"), "alpha\n").unwrap();
    let pane = Pane::reference(
        "prompt-review",
        &dir.path,
        &["--prompt", "/scenario client-fs notes.txt"],
    );
    let screen = pane.wait_until("the review question", |s| s.ends_with("apply? [y/N]"));
    assert!(
        screen.contains("The agent wants to change notes.txt"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("+{}", scenarios::CLIENT_FS_APPENDED_LINE)),
        "{screen}"
    );
    pane.type_line("y");
    let screen = pane.wait_until("the chat to exit", |s| s.contains("[chat exited"));
    assert!(screen.contains("[chat exited 0]"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        scenarios::client_fs_changed("alpha\n")
    );
}
