//! The chat's two front ends behind one driver: the line chat (`View`,
//! scrollback and a redrawn live region; pipes, `--plain`) and the
//! full-screen chat (`tui`). `interactive` drives the session (turns,
//! questions, services, own commands) once for both and tells the front end
//! what happened through [`Front`]; the full-screen one's keys come back as
//! [`Action`]s carried out in `full_screen`.

use std::ffi::OsString;

use serde_json::Value;
use spindle_engine::RenderOp;
use spindle_wire::stop_reasons::TurnOutcome;

use super::args::ChatArgs;
use super::ask::Ask;
use super::controls::{Choice as ControlChoice, Controls};
use super::outcome::AgentErrorText;
use super::render::RenderOptions;
use super::session_open::{Connected, Opened};
use super::tui::{Action, Choice, Menu, Tui, TuiState, TurnEnd};
use super::view::{EditLine, Footer, View};

/// Where the chat is shown.
#[derive(Debug)]
pub(super) enum Front {
    /// Lines: scrollback plus a live region (or plain output when piped).
    Line(Box<View>),
    /// The full-screen terminal UI.
    Full(Box<Tui>),
}

/// How a turn ended, as the driver knows it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ending<'a> {
    /// The stop reason, when the agent gave one.
    pub stop_reason: Option<&'a str>,
    /// The error the turn failed with (raw JSON).
    pub error: Option<&'a str>,
    /// The prompt was refused before the turn began.
    pub refused: bool,
}

impl Front {
    /// A dimmed note in the transcript (diagnostics, notices, answers).
    pub(super) fn note(&mut self, text: &str) {
        match self {
            Front::Line(view) => view.note(text),
            Front::Full(tui) => tui.state.note(text),
        }
    }

    /// An agent's error: its sentence, and the code on a detail line.
    pub(super) fn error(&mut self, error: &AgentErrorText) {
        match self {
            Front::Line(view) => view.error(error),
            Front::Full(tui) => {
                tui.state.note(&error.sentence);
                if let Some(detail) = &error.detail {
                    tui.state.note(&format!("  {detail}"));
                }
            }
        }
    }

    /// The engine's render ops.
    pub(super) fn apply(&mut self, ops: Vec<RenderOp>) {
        match self {
            Front::Line(view) => view.apply(ops),
            Front::Full(tui) => tui.state.apply(ops),
        }
    }

    /// A warning: a line on stderr in line mode (under the live region), a
    /// note on the full screen (stderr would tear it).
    pub(super) fn warn(&mut self, text: &str) -> std::io::Result<()> {
        match self {
            Front::Line(view) => {
                view.clear_live()?;
                eprintln!("spindle chat: {text}");
            }
            Front::Full(tui) => tui.state.note(text),
        }
        Ok(())
    }

    /// The lines queued while a turn runs: the full screen shows them above the composer (the
    /// line chat says each as it is queued, and `/queue` lists them).
    pub(super) fn set_queue(&mut self, lines: Vec<String>) {
        if let Front::Full(tui) = self
            && tui.state.queued != lines
        {
            tui.state.queued = lines;
            tui.state.dirty = true;
        }
    }

    /// Line mode: what the bottom of the live region shows.
    pub(super) fn set_footer(&mut self, footer: Footer) {
        if let Front::Line(view) = self {
            view.set_footer(footer);
        }
    }

    /// Line mode: the live entries become scrollback, `note` after them.
    /// The full screen keeps everything; the note joins the transcript.
    pub(super) fn commit(&mut self, note: Option<&str>) -> std::io::Result<()> {
        match self {
            Front::Line(view) => view.commit(note),
            Front::Full(tui) => {
                if let Some(note) = note {
                    tui.state
                        .note(note.trim_start_matches('[').trim_end_matches(']'));
                }
                Ok(())
            }
        }
    }

    pub(super) fn set_edit(&mut self, edit: Option<EditLine>) {
        if let Front::Line(view) = self {
            view.set_edit(edit);
        }
    }

    pub(super) fn set_options(&mut self, options: RenderOptions) {
        if let Front::Line(view) = self {
            view.set_options(options);
        }
    }

    pub(super) fn accept_input(&mut self) -> std::io::Result<()> {
        match self {
            Front::Line(view) => view.accept_input(),
            Front::Full(_) => Ok(()),
        }
    }

    pub(super) fn stray_input(&mut self, typed: &str) {
        if let Front::Line(view) = self {
            view.stray_input(typed);
        }
    }

    /// Whether output goes to a terminal.
    pub(super) fn is_terminal(&self) -> bool {
        match self {
            Front::Line(view) => view.is_terminal(),
            Front::Full(_) => true,
        }
    }

    pub(super) fn is_dirty(&self) -> bool {
        match self {
            Front::Line(view) => view.is_dirty(),
            Front::Full(tui) => tui.state.dirty,
        }
    }

    /// A spinner moves: the screen is redrawn on a timer.
    pub(super) fn animating(&self) -> bool {
        matches!(self, Front::Full(tui) if tui.state.running_since.is_some())
    }

    pub(super) fn touch(&mut self) {
        if let Front::Full(tui) = self {
            tui.state.dirty = true;
        }
    }

    pub(super) fn redraw(&mut self) -> std::io::Result<()> {
        match self {
            Front::Line(view) => view.redraw(),
            Front::Full(tui) => tui.redraw(),
        }
    }

    pub(super) fn resize(&mut self) {
        match self {
            Front::Line(view) => view.resize(),
            Front::Full(tui) => tui.state.dirty = true,
        }
    }

    /// Gives the terminal back (full screen); later output goes to the
    /// normal screen.
    pub(super) fn leave(&mut self) {
        if let Front::Full(tui) = self {
            tui.leave();
        }
    }

    /// The end of a turn.
    pub(super) fn turn_over(&mut self, ending: Ending<'_>) -> std::io::Result<()> {
        match self {
            Front::Line(view) => {
                if let Some(error) = ending.error {
                    view.error(&AgentErrorText::from_json(error_context(&ending), error));
                }
                let mut note = match (ending.stop_reason, ending.error.is_some()) {
                    (_, true) => "turn failed".to_owned(),
                    (Some(reason), false) => reason.to_owned(),
                    (None, false) => "turn over".to_owned(),
                };
                if let Some(usage) = view.usage_text() {
                    note = format!("{note} | {usage}");
                }
                view.set_footer(Footer::None);
                view.commit(Some(&format!("[{note}]")))
            }
            Front::Full(tui) => {
                let mut end = turn_end(ending, tui.state.usage_text());
                // How long it took, once that is worth saying.
                let secs = tui.state.running_since.map(|s| s.elapsed().as_secs());
                if let Some(secs) = secs.filter(|&s| s > 0) {
                    end.sentence.push_str(&format!(" · {secs}s"));
                }
                tui.state.turn_end(end);
                Ok(())
            }
        }
    }
}

/// How an error sentence starts: a refused prompt or a failed turn.
fn error_context(ending: &Ending<'_>) -> &'static str {
    if ending.refused {
        "The agent refused the prompt"
    } else {
        "The agent ended the turn with an error"
    }
}

/// The sentence that ends a turn in the full-screen transcript.
pub(super) fn turn_end(ending: Ending<'_>, usage: Option<String>) -> TurnEnd {
    if let Some(error) = ending.error {
        let text = AgentErrorText::from_json(error_context(&ending), error);
        return TurnEnd {
            sentence: text.sentence,
            detail: text.detail,
            ok: false,
        };
    }
    let (sentence, ok) = match TurnOutcome::of(ending.stop_reason, false) {
        TurnOutcome::Done | TurnOutcome::Unreported => ("done".to_owned(), true),
        TurnOutcome::Cancelled => ("cancelled".to_owned(), true),
        TurnOutcome::MaxTokens => (
            "stopped: the reply reached the token limit".to_owned(),
            false,
        ),
        TurnOutcome::MaxTurnRequests => (
            "stopped: the turn reached its limit of model requests".to_owned(),
            false,
        ),
        TurnOutcome::Refused => ("refused: the agent declined to go on".to_owned(), false),
        TurnOutcome::Error => ("the turn ended with an error".to_owned(), false),
        TurnOutcome::Other => (
            format!("stopped: {}", ending.stop_reason.unwrap_or_default()),
            false,
        ),
    };
    TurnEnd {
        sentence: match usage {
            Some(usage) => format!("{sentence} · {usage}"),
            None => sentence,
        },
        detail: None,
        ok,
    }
}

/// The agent's name and version from `initialize`, or `agent`.
pub(super) fn agent_name(conn: &Connected) -> String {
    let info: Option<Value> = conn
        .init
        .as_ref()
        .and_then(|i| i.agent_info.as_ref())
        .and_then(|raw| serde_json::from_str(raw.get()).ok());
    let field = |key: &str| {
        info.as_ref()
            .and_then(|i| i.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let name = field("title")
        .or_else(|| field("name"))
        .unwrap_or_else(|| "agent".to_owned());
    match field("version") {
        Some(version) => format!("{name} {version}"),
        None => name,
    }
}

/// The name of the choice `id` among `choices`, else `id`.
fn choice_name(choices: &[ControlChoice], id: &str) -> String {
    choices
        .iter()
        .find(|c| c.id == id)
        .map_or_else(|| id.to_owned(), |c| c.name.clone())
}

/// The current mode's and model's names.
pub(super) fn mode_and_model(controls: &Controls) -> (Option<String>, Option<String>) {
    let mode = match (&controls.current_mode, controls.option_of("mode")) {
        (Some(id), _) => Some(choice_name(&controls.modes, id)),
        (None, Some(option)) => Some(choice_name(&option.choices, &option.current_text())),
        (None, None) => None,
    };
    let model = controls
        .option_of("model")
        .map(|o| choice_name(&o.choices, &o.current_text()));
    (mode, model)
}

/// The folder, `~` for the home directory; where a remote session runs on the server when that
/// is another one.
pub(super) fn folder(conn: &Connected) -> String {
    if let Some(server) = &conn.server_cwd {
        return format!("{server} (on the server)");
    }
    let shown = conn.cwd.display().to_string();
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && shown.starts_with(&home) => {
            format!("~{}", &shown[home.len()..])
        }
        _ => shown,
    }
}

/// The full screen's state before anything happened: the first screen
/// says who, where, and how.
pub(super) fn first_state(conn: &Connected, args: &ChatArgs) -> TuiState {
    let (mode, model) = mode_and_model(&conn.controls);
    let opened = match conn.opened {
        Opened::New => "new session",
        Opened::Resumed => "resumed session (the agent replays no history)",
        Opened::Loaded => "resumed session",
        Opened::Attached { observer: false } => "attached to session",
        Opened::Attached { observer: true } => "observing session",
    };
    let header = vec![
        format!("spindle chat · {}", agent_name(conn)),
        format!("folder   {}", folder(conn)),
        format!(
            "mode     {}   model   {}",
            mode.as_deref().unwrap_or("(none offered)"),
            model.as_deref().unwrap_or("(none offered)")
        ),
        format!("{opened} {}", conn.session_id),
        "Enter sends · Alt+Enter new line · / commands · @ files · Tab completes".to_owned(),
        "Ctrl-O opens tool calls · PgUp/PgDn scroll · Esc or Ctrl-C cancels a turn · /quit"
            .to_owned(),
    ];
    TuiState {
        header,
        show_thoughts: !args.hide_thoughts,
        prompts_go_at_once: conn.protocol_version == 2,
        observer: conn.opened == Opened::Attached { observer: true },
        ..TuiState::default()
    }
}

/// The menu for the question waiting for the user.
pub(super) fn ask_menu(ask: &Ask) -> Menu {
    match ask {
        Ask::Permission(id, permission, _) => Menu {
            key: format!("{id:?}"),
            title: format!("Allow {}?", permission.subject),
            detail: Vec::new(),
            choices: permission
                .options
                .iter()
                .enumerate()
                .map(|(i, o)| Choice {
                    label: o.name.clone(),
                    action: Action::Answer((i + 1).to_string()),
                })
                .collect(),
            selected: 0,
            dismissable: false,
            typed: false,
        },
        Ask::Write(id, write) => Menu {
            key: format!("{id:?}"),
            title: format!("Write {}?", write.display_path),
            // The diff is in the transcript, on the tool call (or the
            // write's own entry) right above: the menu does not repeat it.
            detail: match ask.footer() {
                Footer::Input { question, .. } => question.into_iter().take(1).collect(),
                _ => Vec::new(),
            },
            choices: vec![
                Choice {
                    label: "Write it".to_owned(),
                    action: Action::Answer("y".to_owned()),
                },
                Choice {
                    label: "Do not write it".to_owned(),
                    action: Action::Answer("n".to_owned()),
                },
            ],
            selected: 0,
            dismissable: false,
            typed: false,
        },
        Ask::Elicitation(id, elicitation) => {
            let (question, choices) = elicitation.menu();
            Menu {
                key: format!("{id:?} {}", elicitation.step_name()),
                title: "The agent asks".to_owned(),
                detail: question,
                choices: choices
                    .into_iter()
                    .map(|(label, answer)| Choice {
                        label,
                        action: Action::Answer(answer),
                    })
                    .collect(),
                selected: 0,
                dismissable: false,
                typed: elicitation.typed(),
            }
        }
    }
}

/// The picker `/mode` or `/model` opens without an argument (`None`: the
/// agent offers no such choice; the command explains).
pub(super) fn picker(controls: &Controls, command: &str) -> Option<Menu> {
    let (choices, current) = match command {
        "mode" if !controls.modes.is_empty() => {
            (controls.modes.clone(), controls.current_mode.clone())
        }
        "mode" | "model" => {
            let option = controls.option_of(command)?;
            if option.choices.is_empty() {
                return None;
            }
            (option.choices.clone(), Some(option.current_text()))
        }
        _ => return None,
    };
    let selected = choices
        .iter()
        .position(|c| Some(&c.id) == current.as_ref())
        .unwrap_or(0);
    Some(Menu {
        key: command.to_owned(),
        title: format!("Choose the {command}"),
        detail: Vec::new(),
        choices: choices
            .iter()
            .map(|c| Choice {
                label: if Some(&c.id) == current.as_ref() {
                    format!("{} ({}) · current", c.name, c.id)
                } else {
                    format!("{} ({})", c.name, c.id)
                },
                action: Action::Submit(format!("/{command} {}", c.id)),
            })
            .collect(),
        selected,
        dismissable: true,
        typed: false,
    })
}

fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+".contains(c))
    {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The command that opens this session again, with what reaches the same
/// agent; `None` when the agent can reopen no session (`can_reopen`).
pub(super) fn resume_command(
    args: &ChatArgs,
    session_id: &str,
    protocol_version: u16,
    can_reopen: bool,
) -> Option<String> {
    let mut words: Vec<String> = vec!["spindle".into(), "chat".into()];
    if protocol_version == 2 {
        words.extend(["--protocol".into(), "2".into()]);
    }
    if let Some((url, session)) = &args.attach_session {
        words.extend(["--attach".into(), url.clone(), session.clone()]);
    } else {
        if !can_reopen {
            return None;
        }
        words.extend(["--resume".into(), session_id.to_owned()]);
        for dir in &args.add_dir {
            let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            words.extend(["--add-dir".into(), dir.to_string_lossy().into_owned()]);
        }
        if let Some(url) = &args.connect {
            words.extend(["--connect".into(), url.clone()]);
        } else if let Some(id) = &args.agent_id {
            words.extend(["--agent".into(), id.clone()]);
        } else if !args.agent.is_empty() {
            words.push("--".into());
            words.extend(
                args.agent
                    .iter()
                    .map(|a: &OsString| a.to_string_lossy().into_owned()),
            );
        }
    }
    let words: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
    Some(words.join(" "))
}

/// [`resume_command`] for the open session.
pub(super) fn resume_command_for(args: &ChatArgs, conn: &Connected) -> Option<String> {
    let can_reopen = conn
        .init
        .as_ref()
        .is_some_and(|i| i.can_load_session() || i.can_resume_session());
    resume_command(args, &conn.session_id, conn.protocol_version, can_reopen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        chat: ChatArgs,
    }

    fn args(words: &[&str]) -> ChatArgs {
        let mut args = Cli::parse_from(std::iter::once("chat").chain(words.iter().copied())).chat;
        // As `run` splits it.
        if let Some(at) = words.iter().position(|w| *w == "--attach") {
            args.attach_session = Some((words[at + 1].into(), words[at + 2].into()));
        }
        args
    }

    #[test]
    fn the_resume_command_reaches_the_same_agent() {
        // (chat's flags, protocol, can reopen, what is printed)
        let cases: &[(&[&str], u16, bool, Option<&str>)] = &[
            (&[], 1, true, Some("spindle chat --resume s1")),
            (&[], 1, false, None),
            (
                &["--agent", "gemini"],
                2,
                true,
                Some("spindle chat --protocol 2 --resume s1 --agent gemini"),
            ),
            (
                &["--connect", "ws://h:1/acp"],
                1,
                true,
                Some("spindle chat --resume s1 --connect ws://h:1/acp"),
            ),
            (
                &["--", "my agent", "--flag=it's"],
                1,
                true,
                Some("spindle chat --resume s1 -- 'my agent' '--flag=it'\\''s'"),
            ),
            (
                &["--attach", "http://h:1", "s9"],
                1,
                false,
                Some("spindle chat --attach http://h:1 s9"),
            ),
        ];
        for (flags, version, can_reopen, expected) in cases {
            let shown = resume_command(&args(flags), "s1", *version, *can_reopen);
            assert_eq!(shown.as_deref(), *expected, "{flags:?}");
        }
    }

    #[test]
    fn a_turn_ends_with_a_sentence() {
        let ending = |stop_reason, error, refused| Ending {
            stop_reason,
            error,
            refused,
        };
        // (how it ended, usage, sentence, detail, ok)
        let cases = [
            (
                ending(Some("end_turn"), None, false),
                Some("context 5/9"),
                "done · context 5/9",
                None,
                true,
            ),
            (
                ending(Some("cancelled"), None, false),
                None,
                "cancelled",
                None,
                true,
            ),
            (
                ending(Some("max_tokens"), None, false),
                None,
                "stopped: the reply reached the token limit",
                None,
                false,
            ),
            (
                ending(Some("refusal"), None, false),
                None,
                "refused: the agent declined to go on",
                None,
                false,
            ),
            (
                ending(
                    None,
                    Some(r#"{"code":-32603,"message":"backend down","data":{"retry":true}}"#),
                    false,
                ),
                None,
                "The agent ended the turn with an error: backend down.",
                Some("code -32603 (internal error) \u{b7} data: {\"retry\":true}"),
                false,
            ),
            (
                ending(
                    None,
                    Some(r#"{"code":-32602,"message":"bad prompt"}"#),
                    true,
                ),
                None,
                "The agent refused the prompt: bad prompt.",
                Some("code -32602 (invalid params)"),
                false,
            ),
            (
                ending(None, Some("not json"), false),
                None,
                "The agent ended the turn with an error (the agent gave no message).",
                Some("not a JSON-RPC error object: not json"),
                false,
            ),
        ];
        for (ending, usage, sentence, detail, ok) in cases {
            let end = turn_end(ending, usage.map(str::to_owned));
            assert_eq!(
                (end.sentence.as_str(), end.detail.as_deref(), end.ok),
                (sentence, detail, ok)
            );
        }
    }
}
