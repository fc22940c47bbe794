//! `spindle chat` on a real terminal: tmux runs it against the reference
//! agent, the test types prompts with `send-keys` and reads the screen (and
//! its scrollback) with `capture-pane`. Waits poll the screen until a
//! generous deadline; nothing asserts on timing.
//!
//! Each test uses its own tmux server socket (`tmux -S`, in the temp
//! directory, removed afterwards), so it never touches another tmux server. When tmux is not installed each test prints
//! `SKIPPED`, and under `CI=true` it fails instead.

use crate::harness;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use spindle_agent::scenarios;

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");
const PATIENCE: Duration = Duration::from_secs(60);

pub(crate) fn tmux_available() -> bool {
    harness::require_tool("tmux", &["-V"])
}

fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// `spindle chat` in a detached tmux session on a private server.
pub(crate) struct ChatPane {
    socket: std::path::PathBuf,
}

impl ChatPane {
    /// Starts `spindle chat CHAT_ARGS -- spindle agent --delay-ms 20` in a
    /// 100x40 pane.
    pub(crate) fn start(name: &str, chat_args: &[&str]) -> ChatPane {
        Self::start_sized(name, chat_args, (100, 40))
    }

    fn start_sized(name: &str, chat_args: &[&str], (cols, rows): (u16, u16)) -> ChatPane {
        let socket =
            std::env::temp_dir().join(format!("spindle-chat-tmux-{}-{name}", std::process::id()));
        let mut command = vec![SPINDLE, "chat", "--plain"];
        command.extend_from_slice(chat_args);
        command.extend_from_slice(&["--", SPINDLE, "agent", "--delay-ms", "20"]);
        let line: Vec<String> = command.iter().map(|a| shell_quote(a)).collect();
        // The pane stays after the chat exits, so its last words can be read.
        let shell = format!("{}; echo \"[chat exited $?]\"; sleep 600", line.join(" "));
        let pane = ChatPane { socket };
        let output = pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "chat",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            &shell,
        ]);
        assert!(output.status.success(), "tmux new-session: {output:?}");
        pane
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

    /// Types `text` and Enter.
    pub(crate) fn type_line(&self, text: &str) {
        assert!(
            self.tmux(&["send-keys", "-t", "chat", "-l", text])
                .status
                .success()
        );
        assert!(
            self.tmux(&["send-keys", "-t", "chat", "Enter"])
                .status
                .success()
        );
    }

    pub(crate) fn send_key(&self, key: &str) {
        assert!(
            self.tmux(&["send-keys", "-t", "chat", key])
                .status
                .success()
        );
    }

    /// The whole pane, scrollback included, wrapped lines joined, trailing
    /// blank lines dropped.
    pub(crate) fn screen(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "chat"]);
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.trim_end().to_owned()
    }

    /// The pane's rows as the terminal shows them (scrollback included, wrapped rows apart).
    fn rows(&self) -> Vec<String> {
        let output = self.tmux(&["capture-pane", "-p", "-S", "-", "-t", "chat"]);
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.lines().map(|l| l.trim_end().to_owned()).collect()
    }

    /// Polls the screen until `done` holds; panics with the screen after
    /// `PATIENCE`.
    pub(crate) fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
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

    /// Waits until the `n`th turn is over and the input prompt is back.
    pub(crate) fn wait_for_turns(&self, n: usize) -> String {
        self.wait_until(&format!("{n} finished turns"), |s| {
            s.matches("\n[end_turn").count() + s.matches("\n[cancelled").count() >= n
                && s.lines().last().is_some_and(|l| l.trim_end() == ">")
        })
    }
}

impl Drop for ChatPane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
        let _ = std::fs::remove_file(&self.socket);
    }
}

fn lines_containing<'a>(screen: &'a str, needle: &str) -> Vec<&'a str> {
    screen.lines().filter(|l| l.contains(needle)).collect()
}

/// `text` with every run of whitespace one space: the chat breaks long lines
/// between words, so a reply is found whatever the width.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How often `needle` is on the screen, read as words.
fn count_words(screen: &str, needle: &str) -> usize {
    words(screen).matches(&words(needle)).count()
}

fn check_refine_leaves_only_the_final_text(pane: &ChatPane) {
    pane.type_line("/scenario refine");
    let screen = pane.wait_for_turns(1);
    // The final reply is shown exactly once, on a line of its own.
    assert_eq!(
        lines_containing(&screen, scenarios::REFINE_REPLY),
        vec![scenarios::REFINE_REPLY],
        "{screen}"
    );
    assert_eq!(
        screen.matches("It has been the capital since 1913").count(),
        1,
        "{screen}"
    );
    // Nothing of the draft or of the rolled-back thought remains.
    assert!(!screen.contains("Draft:"), "{screen}");
    assert!(!screen.contains("Sydney"), "{screen}");
    // The corrected thought is there once, labelled.
    assert_eq!(
        lines_containing(&screen, "No: the capital is Canberra"),
        vec!["thought | No: the capital is Canberra, chosen as a compromise."],
        "{screen}"
    );
}

#[test]
fn refine_leaves_only_the_final_text_v1() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("refine-v1", &[]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    check_refine_leaves_only_the_final_text(&pane);
}

#[test]
fn refine_leaves_only_the_final_text_v2_after_the_greeting() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("refine-v2", &["--protocol", "2"]);
    // v2: the agent speaks first; the chat shows it before any prompt.
    pane.wait_until("the greeting", |s| {
        s.contains("Hello! I am the Spindle reference agent") && s.ends_with('>')
    });
    check_refine_leaves_only_the_final_text(&pane);
    assert_eq!(pane.screen().matches("Hello! I am the Spindle").count(), 1);
}

#[test]
fn thoughts_are_labelled_apart_from_the_reply_and_can_be_hidden() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("thoughts", &[]);
    pane.type_line("/scenario thoughts");
    let screen = pane.wait_for_turns(1);
    assert_eq!(
        lines_containing(&screen, scenarios::THOUGHTS_REPLY),
        vec![scenarios::THOUGHTS_REPLY],
        "{screen}"
    );
    let thought = lines_containing(&screen, "The user wants to see thoughts");
    assert_eq!(thought.len(), 1, "{screen}");
    assert!(thought[0].starts_with("thought | "), "{screen}");

    let hidden = ChatPane::start("thoughts-hidden", &["--hide-thoughts"]);
    hidden.type_line("/scenario thoughts");
    let screen = hidden.wait_for_turns(1);
    assert_eq!(
        lines_containing(&screen, scenarios::THOUGHTS_REPLY),
        vec![scenarios::THOUGHTS_REPLY],
        "{screen}"
    );
    assert!(!screen.contains("thought | "), "{screen}");
    assert!(
        !screen.contains("The user wants to see thoughts"),
        "{screen}"
    );
}

#[test]
fn clear_draws_a_divider_between_the_turns() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("clear", &[]);
    pane.type_line("/scenario snapshot");
    pane.wait_for_turns(1);
    pane.type_line("/clear");
    let screen = pane.wait_for_turns(2);
    let position = |needle: &str| {
        screen
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing:\n{screen}"))
    };
    let divider = position("context cleared");
    assert!(position(scenarios::SNAPSHOT_REPLY) < divider, "{screen}");
    assert!(divider < position(scenarios::CLEAR_REPLY), "{screen}");
    assert_eq!(screen.matches("context cleared").count(), 1, "{screen}");
    // Usage is shown, and reset by the clear.
    assert!(screen.contains("context 0/"), "{screen}");
}

#[test]
fn ctrl_c_cancels_the_turn_and_the_chat_goes_on() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("cancel", &[]);
    pane.type_line("/scenario stall");
    pane.wait_until("the stalled turn", |s| s.contains(scenarios::STALL_TEXT));
    pane.send_key("C-c");
    let screen = pane.wait_for_turns(1);
    assert!(screen.contains("[cancelled"), "{screen}");
    assert_eq!(screen.matches(scenarios::STALL_TEXT).count(), 1, "{screen}");
    pane.type_line("are you still there");
    let screen = pane.wait_for_turns(2);
    assert!(
        screen.contains("You said: \"are you still there\""),
        "{screen}"
    );
    // Ctrl-C at the prompt leaves the chat with 130, saying how to come back.
    pane.send_key("C-c");
    let screen = pane.wait_until("the chat to exit", |s| s.contains("[chat exited 130]"));
    assert!(
        screen.contains("Resume this session with: spindle chat --resume sess_1 -- "),
        "{screen}"
    );
}

#[test]
fn a_turn_taller_than_the_pane_leaves_no_copies_in_the_scrollback() {
    if !tmux_available() {
        return;
    }
    // 8 rows: the tools turn (plan, two tool calls, their output) does not
    // fit, so the live region shows its tail until the turn is over.
    let pane = ChatPane::start_sized("small", &["--yes"], (60, 8));
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    pane.type_line("/scenario tools");
    let screen = pane.wait_for_turns(1);
    assert_eq!(
        screen
            .matches("[tool] Edit src/main.rs (edit) - completed")
            .count(),
        1,
        "{screen}"
    );
    assert_eq!(
        screen
            .matches("[tool] Read src/main.rs (read) - completed")
            .count(),
        1,
        "{screen}"
    );
    assert_eq!(screen.matches("[plan]").count(), 1, "{screen}");
    assert!(
        !screen.contains("- pending") && !screen.contains("- in_progress"),
        "{screen}"
    );
    assert!(!screen.contains("lines above"), "{screen}");
    assert!(!screen.contains("[running"), "{screen}");
    assert_eq!(
        count_words(&screen, scenarios::TOOLS_REPLY_ALLOWED),
        1,
        "{screen}"
    );
}

#[test]
fn permission_is_asked_on_the_terminal_and_the_typed_choice_is_sent() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("permission", &[]);
    pane.type_line("/scenario tools");
    let asked = pane.wait_until("the permission question", |s| s.ends_with("choose 1-4:"));
    // The edit's diff, sent with the request, is on screen before the answer (it is rejected
    // below, so nothing else ever carries it).
    assert!(
        asked.contains("-    println!(\"hello\");")
            && asked.contains("+    println!(\"hello, spindle\");"),
        "{asked}"
    );
    // Not a number from the list: asked again, nothing sent.
    pane.type_line("yes");
    pane.wait_until("the question again", |s| {
        s.ends_with("type a number from 1 to 4:")
    });
    pane.type_line("2");
    let screen = pane.wait_for_turns(1);
    assert!(
        screen.contains("The agent asks permission: Edit src/main.rs"),
        "{screen}"
    );
    assert!(screen.contains("1) Allow [allow_once]"), "{screen}");
    // The reply goes on below the question: its first sentence is not printed again.
    let (first, rest) = scenarios::TOOLS_REPLY_REJECTED.split_once(". ").unwrap();
    assert_eq!(count_words(&screen, first), 1, "{screen}");
    assert_eq!(lines_containing(&screen, rest), vec![rest], "{screen}");
    let (_, allowed) = scenarios::TOOLS_REPLY_ALLOWED.split_once(". ").unwrap();
    assert!(!screen.contains(allowed), "{screen}");
    assert!(
        screen.contains("[tool] Edit src/main.rs (edit) - failed"),
        "{screen}"
    );
}

#[test]
fn prompt_mode_asks_permission_when_stdin_is_a_terminal() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("prompt-permission", &["--prompt", "/scenario tools"]);
    let asked = pane.wait_until("the permission question", |s| s.ends_with("choose 1-4:"));
    // Nothing else is drawn in this mode: the question shows the diff sent with the request.
    assert!(
        asked.contains("    edit /workspace/src/main.rs\n    @@ -1,3 +1,3 @@")
            && asked.contains("    +    println!(\"hello, spindle\");\n")
            && asked.contains("The agent asks permission: Edit src/main.rs"),
        "{asked}"
    );
    pane.type_line("5");
    pane.wait_until("the question again", |s| {
        s.ends_with("type a number from 1 to 4:")
    });
    pane.type_line("1");
    let screen = pane.wait_until("the chat to exit", |s| s.contains("[chat exited"));
    assert!(screen.contains("[chat exited 0]"), "{screen}");
    assert_eq!(
        lines_containing(&screen, scenarios::TOOLS_REPLY_ALLOWED).len(),
        1,
        "{screen}"
    );
}

#[test]
fn ctrl_c_while_asked_for_permission_cancels_the_request_and_the_turn() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("permission-cancel", &["--protocol", "2"]);
    pane.type_line("/scenario tools");
    pane.wait_until("the permission question", |s| s.ends_with("choose 1-4:"));
    pane.send_key("C-c");
    let screen = pane.wait_for_turns(1);
    assert!(screen.contains("[cancelled"), "{screen}");
    assert!(screen.contains("permission: cancelled"), "{screen}");
    assert!(
        screen.contains("[tool] Edit src/main.rs (edit) - cancelled"),
        "{screen}"
    );
}

/// Resizes the pane's window to `cols` columns.
fn resize(pane: &ChatPane, cols: u16) {
    let output = pane.tmux(&["resize-window", "-t", "chat", "-x", &cols.to_string()]);
    assert!(output.status.success(), "tmux resize-window: {output:?}");
}

/// Runs `/scenario slow` and changes the width to `cols` while the reply streams; returns the
/// screen once the turn is over.
fn slow_turn_resized_to(pane: &ChatPane, turn: usize, cols: u16) -> String {
    pane.type_line("/scenario slow");
    // The reply is being drawn in the live region, one word at a time.
    pane.wait_until("the slow reply to be half written", |s| {
        count_words(s, "Slow streaming: every word arrives after a pause, so") >= turn
    });
    resize(pane, cols);
    pane.wait_for_turns(turn)
}

#[test]
fn a_resize_in_the_middle_of_a_turn_leaves_no_stale_rows_and_erases_nothing_above() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start("resize", &[]);
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    // Narrower: tmux rewraps the region's rows, so the next redraw must erase more of them
    // (counting at the old width left the top of the draft on the screen).
    let screen = slow_turn_resized_to(&pane, 1, 36);
    // Counted as occurrences, not lines: a stale row left above the region can be joined to
    // the row below it (`capture-pane -J`) when the terminal had marked it as wrapped.
    assert_eq!(
        screen.matches("Slow streaming").count(),
        1,
        "a stale copy of the draft is left on the screen:\n{screen}"
    );
    assert_eq!(screen.matches("> /scenario slow").count(), 1, "{screen}");
    // Wider: the rows join again, so the next redraw must erase fewer of them (counting at the
    // old width erased the prompt line above the region).
    let screen = slow_turn_resized_to(&pane, 2, 90);
    assert_eq!(count_words(&screen, scenarios::SLOW_REPLY), 2, "{screen}");
    assert_eq!(screen.matches("Slow streaming").count(), 2, "{screen}");
    assert_eq!(
        screen.matches("> /scenario slow").count(),
        2,
        "the line above the region was erased:\n{screen}"
    );
    assert!(!screen.contains("[running"), "{screen}");
}

#[test]
fn the_permission_question_shows_the_diff_first_and_nothing_is_printed_twice() {
    if !tmux_available() {
        return;
    }
    for protocol in ["1", "2"] {
        let pane = ChatPane::start(
            &format!("no-repeats-v{protocol}"),
            &["--protocol", protocol],
        );
        pane.wait_until("the input prompt", |s| {
            s.trim_end().ends_with("\n>") || s.trim_end() == ">"
        });
        pane.type_line("/scenario tools");
        let asked = pane.wait_until("the permission question", |s| s.ends_with("choose 1-4:"));
        // The reference agent sends the edit's diff with its request: shown before the answer.
        for line in [
            "-    println!(\"hello\");",
            "+    println!(\"hello, spindle\");",
        ] {
            assert_eq!(asked.matches(line).count(), 1, "v{protocol}: {asked}");
        }
        pane.type_line("1");
        let screen = pane.wait_for_turns(1);
        // The answer updates the plan, the tool call and the message printed above the
        // question: only what changed follows it, nothing is printed twice.
        for once in [
            "+    println!(\"hello, spindle\");",
            "@@ -1,3 +1,3 @@",
            "[x] Read src/main.rs",
            "I will read the file and then edit it.",
            "I changed the greeting in src/main.rs.",
            "[tool] Edit src/main.rs (edit) - completed",
            "[plan updated]",
        ] {
            assert_eq!(
                screen.matches(once).count(),
                1,
                "v{protocol}: {once}\n{screen}"
            );
        }
        assert_eq!(
            screen.matches("[x] Edit the greeting").count(),
            1,
            "v{protocol}: {screen}"
        );
        assert!(
            screen.contains("permission: answered Allow"),
            "v{protocol}: {screen}"
        );
    }
}

#[test]
fn replies_break_between_words_at_the_terminal_width() {
    if !tmux_available() {
        return;
    }
    let pane = ChatPane::start_sized("wrap", &[], (38, 30));
    pane.wait_until("the input prompt", |s| s.trim_end() == ">");
    let prompt = "wrap this reply between its words please";
    pane.type_line(prompt);
    pane.wait_for_turns(1);
    let reply = spindle_agent::scenarios::plain_reply(prompt);
    let rows = pane.rows();
    let start = rows
        .iter()
        .position(|r| r.starts_with("You said:"))
        .expect("the reply");
    let end = rows
        .iter()
        .position(|r| r.starts_with("[end_turn"))
        .expect("the end");
    let reply_rows = &rows[start..end];
    assert!(reply_rows.len() > 2, "{reply_rows:#?}");
    // Every row fits the width, and the rows hold the reply's words whole, in order.
    for row in reply_rows {
        assert!(row.chars().count() <= 38, "{row:?}");
    }
    let shown: Vec<&str> = reply_rows
        .iter()
        .flat_map(|r| r.split_whitespace())
        .collect();
    let expected: Vec<&str> = reply.split_whitespace().collect();
    assert_eq!(shown, expected, "{reply_rows:#?}");
}
