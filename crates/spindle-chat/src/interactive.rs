//! The interactive chat: one loop over one closed [`ChatEvent`] (client
//! events, keys or typed lines, terminal events, Ctrl-C, terminal resizes,
//! the redraw timer, the client services' results, answers to Spindle's own
//! commands). This is the driver of the session for both front ends
//! ([`Front`]: the line chat and the full-screen one): it decides when turns
//! start and end, and asks the user what only the user can answer
//! (`interactive_asks`); every change to the transcript comes from the
//! engine's render ops, drawn by the front end.

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal};
use std::time::Duration;

use serde_json::value::RawValue;
use spindle_engine::{RenderOp, TranscriptEngine};
use spindle_protocol::{ClientError, ClientEvent};
use spindle_wire::client_methods::{ELICITATION_COMPLETE, ELICITATION_CREATE};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::args::{ChatArgs, exit};
use super::ask::Ask;
use super::completion::{self, CommandInfo};
use super::front::{self, Ending, Front};
use super::line_editor::{Edit, Key, LineEditor, RawInput, spawn_key_reader};
use super::outcome::report_agent_exit;
use super::permission::Standing;
use super::prompt_content::{self, Attachment};
use super::prompts_in_flight::PromptsInFlight;
use super::render::RenderOptions;
use super::screen::Screen;
use super::services::ServiceEvent;
use super::session_open::Connected;
use super::session_open::Opened;
use super::tui::{self, Tui};
use super::view::{EditLine, Footer, View};

/// At most one redraw per this interval, however fast updates arrive.
const REDRAW_INTERVAL: Duration = Duration::from_millis(16);
/// Events handled per wake-up before the screen gets a chance to redraw.
const BATCH: usize = 1024;
/// Diagnostics shown before the rest are only counted.
const DIAGNOSTIC_LIMIT: usize = 20;
/// The input prompt.
const PROMPT: &str = "> ";
/// Paths an `@` completion lists at most.
pub(super) const PATH_CANDIDATES: usize = 50;
/// How often a running turn's spinner moves on the full screen.
const SPINNER_INTERVAL: Duration = Duration::from_millis(100);

/// The answer to one of Spindle's own commands, from a task.
#[derive(Debug)]
pub(super) struct TaskDone {
    /// What was asked, for the note (`mode plan`, `sign-in with x`).
    pub what: String,
    /// The mode a `session/set_mode` switched to (current once accepted).
    pub mode: Option<String>,
    /// The agent's answer.
    pub result: Result<Box<RawValue>, ClientError>,
}

/// Everything the chat's loop reacts to.
#[derive(Debug)]
enum ChatEvent {
    /// From the client runtime; `None` once the connection is gone.
    Client(Option<ClientEvent>),
    /// A line typed on stdin (piped or echoing terminal); `None` at EOF.
    Typed(Option<String>),
    /// A key, when this program edits the line itself; `None` at EOF.
    Key(Option<Key>),
    /// A terminal event of the full screen; `None` when reading failed.
    Terminal(Option<ratatui::crossterm::event::Event>),
    /// The full screen's spinner moves.
    Tick,
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGWINCH: the terminal was resized.
    Resize,
    /// The redraw interval passed with changes waiting.
    RedrawDue,
    /// A client service finished a request or reported terminal output.
    Service(ServiceEvent),
    /// One of Spindle's own commands was answered.
    Task(TaskDone),
}

/// What a handler returns: `Some(status)` ends the chat with that status.
pub(super) type Step = anyhow::Result<Option<u8>>;

/// The chat's state; the asks, services and own commands are in
/// `interactive_asks`.
pub(super) struct Chat<'a> {
    pub(super) args: &'a ChatArgs,
    pub(super) conn: Connected,
    pub(super) engine: TranscriptEngine,
    pub(super) front: Front,
    /// The session speaks protocol 2: prompts are sent at once, turn or not.
    pub(super) v2: bool,
    pub(super) stdin_tty: bool,
    /// The prompts sent whose work has not ended (`prompts_in_flight`).
    pub(super) prompts: PromptsInFlight,
    /// Lines typed while a turn ran (v1), and Spindle's own commands (both
    /// versions): sent, in order, when it ends (`/queue` edits them).
    pub(super) queued: VecDeque<String>,
    /// Questions for the user (permission requests, writes to review), the
    /// first one shown.
    pub(super) asks: VecDeque<Ask>,
    pub(super) input_closed: bool,
    /// Exit status of the last finished turn (what EOF exits with).
    pub(super) last_code: u8,
    /// Diagnostics seen so far.
    diagnostics: usize,
    /// The line editor, when keys are read raw from a terminal.
    pub(super) editor: Option<LineEditor>,
    /// "Always" permission answers of this session.
    pub(super) standing: Standing,
    /// `--attach` images, sent with the first prompt.
    pub(super) attachments: Vec<Attachment>,
    /// Where the own commands' tasks report.
    pub(super) tasks: mpsc::UnboundedSender<TaskDone>,
    /// Own commands sent and not answered yet: lines typed meanwhile wait,
    /// so they see the change.
    pub(super) controls_pending: usize,
    /// `/delete` asked its y/N question: the next line answers it.
    pub(super) confirm_delete: bool,
    /// `/undo` showed its diff and asked y/N: the next line answers it.
    pub(super) confirm_restore: Option<spindle_host::checkpoints::CheckpointId>,
}

/// Where keys or lines come from.
enum Input {
    Lines(mpsc::UnboundedReceiver<String>),
    Keys(mpsc::UnboundedReceiver<Key>),
    Terminal(mpsc::UnboundedReceiver<ratatui::crossterm::event::Event>),
}

impl Input {
    async fn next(&mut self) -> ChatEvent {
        match self {
            Input::Lines(rx) => ChatEvent::Typed(rx.recv().await),
            Input::Keys(rx) => ChatEvent::Key(rx.recv().await),
            Input::Terminal(rx) => ChatEvent::Terminal(rx.recv().await),
        }
    }
}

/// Runs the interactive chat; returns the exit status.
pub async fn run(args: &ChatArgs, conn: Connected) -> anyhow::Result<u8> {
    let stdin_tty = std::io::stdin().is_terminal();
    let stdout_tty = std::io::stdout().is_terminal();
    let caps = conn
        .init
        .as_ref()
        .map(|i| i.prompt_capabilities())
        .unwrap_or_default();
    let attachments = match prompt_content::load_attachments(&args.attach, caps) {
        Ok(a) => a,
        Err(message) => {
            eprintln!("spindle chat: {message}");
            return Ok(exit::USAGE);
        }
    };
    // Both ends a terminal: the full screen, or with `--plain` keys read
    // raw (and the line drawn here, with Tab completion); otherwise whole
    // lines, as typed or piped.
    let tui = if stdin_tty && stdout_tty && !args.plain {
        match Tui::enter(front::first_state(&conn, args)) {
            Ok(tui) => Some(tui),
            Err(error) => {
                eprintln!("spindle chat: the full screen failed ({error}); chatting line by line");
                None
            }
        }
    } else {
        None
    };
    let full = tui.is_some();
    let raw = if stdin_tty && stdout_tty && !full {
        RawInput::enable().ok()
    } else {
        None
    };
    let screen = Screen::new(stdout_tty);
    let loaded = conn.opened.replays();
    let options = RenderOptions {
        thoughts: !args.hide_thoughts,
        // A terminal shows what the user typed; piped input is shown, and
        // so is a loaded session's history.
        user_messages: !stdin_tty || loaded,
    };
    let (tasks, mut task_results) = mpsc::unbounded_channel();
    let front = match tui {
        Some(tui) => Front::Full(Box::new(tui)),
        None => Front::Line(Box::new(View::new(screen, options))),
    };
    let mut chat = Chat {
        args,
        v2: conn.protocol_version == 2,
        engine: conn.engine(),
        conn,
        front,
        stdin_tty,
        prompts: PromptsInFlight::default(),
        queued: VecDeque::new(),
        asks: VecDeque::new(),
        input_closed: false,
        last_code: exit::END_TURN,
        diagnostics: 0,
        editor: raw.as_ref().map(|_| LineEditor::default()),
        standing: Standing::default(),
        attachments,
        tasks,
        controls_pending: 0,
        confirm_delete: false,
        confirm_restore: None,
    };
    let mut input = if full {
        Input::Terminal(tui::spawn_event_reader())
    } else if raw.is_some() {
        chat.front.set_edit(Some(EditLine::default()));
        Input::Keys(spawn_key_reader())
    } else {
        Input::Lines(spawn_line_reader())
    };
    let mut interrupts = signal(SignalKind::interrupt())?;
    let mut resizes = signal(SignalKind::window_change())?;
    let mut ticks = tokio::time::interval(SPINNER_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    for notice in std::mem::take(&mut chat.conn.notices) {
        chat.front.warn(&notice)?;
    }
    chat.opening_note(loaded).await?;
    chat.show_input_prompt();
    let mut next_redraw = Instant::now();
    let result = async {
        loop {
            let event = tokio::select! {
                event = chat.conn.events.recv() => ChatEvent::Client(event),
                // A closed input answers at once, forever: polled again
                // while a turn is still running, it spun the loop (a piped
                // chat whose server went away sat at 12% CPU).
                event = input.next(), if !chat.input_closed => event,
                event = chat.conn.services.next() => ChatEvent::Service(event),
                Some(done) = task_results.recv() => ChatEvent::Task(done),
                _ = interrupts.recv() => ChatEvent::Interrupt,
                _ = resizes.recv() => ChatEvent::Resize,
                _ = ticks.tick(), if chat.front.animating() => ChatEvent::Tick,
                () = tokio::time::sleep_until(next_redraw), if chat.front.is_dirty() => ChatEvent::RedrawDue,
            };
            if let Some(code) = chat.handle(event).await? {
                return Ok::<u8, anyhow::Error>(code);
            }
            chat.conn.drain_recording()?;
            let now = Instant::now();
            if chat.front.is_dirty() && now >= next_redraw {
                chat.refresh_status();
                chat.front.redraw()?;
                next_redraw = now + REDRAW_INTERVAL;
            }
        }
    }
    .await;
    // Terminals die with the chat, whatever ended it.
    chat.conn.services.shutdown().await;
    chat.front.set_edit(None);
    chat.front.set_footer(Footer::None);
    chat.front.commit(None)?;
    drop(raw);
    let full_screen = matches!(chat.front, Front::Full(_));
    if full_screen {
        chat.front.leave();
    }
    // Someone typing (the full screen, or `--plain` on a terminal) is told
    // how to come back; a pipe's output stays the conversation alone.
    if chat.conn.deleted {
        println!("Session {} was deleted.", chat.conn.session_id);
    } else if full_screen || chat.stdin_tty {
        match front::resume_command_for(args, &chat.conn) {
            Some(command) => println!("Resume this session with: {command}"),
            None => println!(
                "Session {} ended (the agent cannot reopen sessions).",
                chat.conn.session_id
            ),
        }
    }
    chat.conn.finish_recording()?;
    result
}

impl Chat<'_> {
    async fn handle(&mut self, event: ChatEvent) -> Step {
        match event {
            ChatEvent::Client(Some(event)) => self.client_batch(event).await,
            ChatEvent::Client(None) => self.agent_gone().await,
            ChatEvent::Typed(line) => self.typed(line).await,
            ChatEvent::Key(key) => self.key(key).await,
            ChatEvent::Terminal(event) => self.terminal_event(event).await,
            ChatEvent::Tick => {
                self.front.touch();
                Ok(None)
            }
            ChatEvent::Interrupt => self.interrupt().await,
            ChatEvent::Resize => {
                self.front.resize();
                Ok(None)
            }
            ChatEvent::Service(event) => self.service_event(event).await,
            ChatEvent::Task(done) => {
                self.own_command_done(done);
                self.controls_pending = self.controls_pending.saturating_sub(1);
                self.next_queued().await
            }
            // The loop redraws after every event.
            ChatEvent::RedrawDue => Ok(None),
        }
    }

    /// What the opening of the session says: a loaded session's history
    /// (the replay queued before the answer), or that a resumed one has none.
    async fn opening_note(&mut self, loaded: bool) -> anyhow::Result<()> {
        let id = self.conn.session_id.clone();
        match self.conn.opened {
            Opened::New => {}
            Opened::Resumed => self.front.note(&format!(
                "resumed session {id} (the agent replays no history)"
            )),
            Opened::Loaded | Opened::Attached { .. } => {
                while let Some(event) = self.conn.events.try_recv() {
                    if self.client_event(event).await?.is_some() {
                        break;
                    }
                }
                let note = match self.conn.opened {
                    Opened::Attached { observer: true } => {
                        format!("[attached to session {id} as an observer]")
                    }
                    Opened::Attached { observer: false } => format!("[attached to session {id}]"),
                    _ => format!("[session {id} loaded]"),
                };
                self.front.commit(Some(&note))?;
            }
        }
        if loaded {
            self.front.set_options(RenderOptions {
                thoughts: !self.args.hide_thoughts,
                user_messages: !self.stdin_tty,
            });
        }
        Ok(())
    }

    /// Applies engine ops: the view draws them; session info updates the
    /// modes and config options `/mode`, `/model` and `/config` offer.
    pub(super) fn apply_ops(&mut self, ops: Vec<RenderOp>) {
        for op in &ops {
            if let RenderOp::SetSessionInfo { info } = op {
                self.conn.controls.update_from(info);
            }
        }
        self.front.apply(ops);
    }

    /// The commands Tab completes and hints describe, as they stand now.
    pub(super) fn commands(&self) -> Vec<CommandInfo> {
        completion::catalogue(self.engine.transcript().commands.as_ref())
    }

    async fn key(&mut self, key: Option<Key>) -> Step {
        let Some(editor) = self.editor.as_mut() else {
            return Ok(None);
        };
        let Some(key) = key else {
            self.editor = None;
            self.front.set_edit(None);
            return self.typed(None).await;
        };
        match editor.key(key) {
            Edit::Changed => self.refresh_edit(Vec::new()),
            Edit::Complete => {
                let line = editor.text().to_owned();
                let host = self.conn.services.host();
                let paths = |typed: &str| {
                    host.complete_path(typed, PATH_CANDIDATES)
                        .map_err(|e| e.message().to_owned())
                };
                let done =
                    completion::complete(&line, &self.commands(), &self.conn.controls, &paths);
                if let (Some(new), Some(editor)) = (done.line, self.editor.as_mut()) {
                    editor.set_text(new);
                }
                self.refresh_edit(done.shown);
            }
            Edit::Submit(line) => {
                self.front.set_edit(Some(EditLine {
                    text: line.clone(),
                    hints: Vec::new(),
                }));
                let step = self.typed(Some(line)).await;
                self.refresh_edit(Vec::new());
                return step;
            }
            Edit::EndOfInput => {
                self.editor = None;
                self.front.set_edit(None);
                return self.typed(None).await;
            }
        }
        Ok(None)
    }

    /// Redraws the edited line with `shown` (completions) or, without them,
    /// the hint of the command being typed.
    pub(super) fn refresh_edit(&mut self, mut shown: Vec<String>) {
        let Some(editor) = &self.editor else {
            return;
        };
        let text = editor.text().to_owned();
        if shown.is_empty()
            && self.asks.is_empty()
            && let Some(hint) = completion::hint_for(&text, &self.commands())
        {
            shown.push(hint);
        }
        self.front.set_edit(Some(EditLine { text, hints: shown }));
    }

    /// Whether a turn runs (any prompt in flight).
    pub(super) fn turn_running(&self) -> bool {
        self.prompts.running()
    }

    /// The exit status of the last finished turn.
    pub(super) fn last_code(&self) -> u8 {
        self.last_code
    }

    pub(super) fn show_input_prompt(&mut self) {
        if matches!(self.front, Front::Full(_)) {
            self.show_phase(self.prompts.running(), self.prompts.cancelling());
            return;
        }
        if let Some(ask) = self.asks.front() {
            let footer = ask.footer();
            self.front.set_footer(footer);
        } else if self.prompts.running() {
            self.front.set_footer(Footer::Status);
        } else if self.stdin_tty && !self.input_closed {
            self.front.set_footer(Footer::Input {
                question: Vec::new(),
                prompt: PROMPT.to_owned(),
            });
        } else {
            self.front.set_footer(Footer::None);
        }
    }

    /// One event and whatever else is ready, up to a batch.
    async fn client_batch(&mut self, first: ClientEvent) -> Step {
        if let Some(code) = self.client_event(first).await? {
            return Ok(Some(code));
        }
        for _ in 0..BATCH {
            let Some(event) = self.conn.events.try_recv() else {
                break;
            };
            if let Some(code) = self.client_event(event).await? {
                return Ok(Some(code));
            }
        }
        Ok(None)
    }

    async fn client_event(&mut self, event: ClientEvent) -> Step {
        match event {
            ClientEvent::SessionUpdate { params, .. } => {
                let applied = self
                    .engine
                    .apply_scanned_session_update(params.get(), params.plain_chunk());
                self.apply_ops(applied.ops);
                for d in applied.diagnostics {
                    self.diagnostic(&d.message);
                }
            }
            ClientEvent::PromptResponse {
                request_id, result, ..
            } => return self.prompt_answered(&request_id, result).await,
            ClientEvent::TurnFinished {
                stop_reason, error, ..
            } => {
                let ending = Ending {
                    stop_reason: stop_reason.as_deref(),
                    error: error.as_ref().map(|e| e.get()),
                    refused: false,
                };
                return self.turn_finished(ending).await;
            }
            ClientEvent::PermissionRequest {
                request_id, params, ..
            } => self.permission_asked(request_id, params.get()).await?,
            ClientEvent::RequestCancelled { request_id } => self.request_withdrawn(&request_id),
            ClientEvent::AgentRequest {
                request_id,
                method,
                params,
            } if method == ELICITATION_CREATE => self.elicitation_asked(request_id, params).await?,
            ClientEvent::AgentRequest {
                request_id,
                method,
                params,
            } => self.agent_request(request_id, &method, params).await,
            ClientEvent::AgentNotification { method, params } if method == ELICITATION_COMPLETE => {
                self.elicitation_completed(params).await;
            }
            // Nothing received goes unsaid: a notification chat does not act on is named.
            ClientEvent::AgentNotification { method, .. } => {
                self.diagnostic(&crate::outcome::unhandled_notification(&method));
            }
            ClientEvent::Diagnostic { message } => {
                self.diagnostic(&message);
            }
            ClientEvent::AgentExited { .. } => return self.agent_gone().await,
            _ => {}
        }
        Ok(None)
    }

    /// A dimmed line per diagnostic, up to a limit: an agent that writes
    /// garbage without end must not bury the conversation.
    pub(super) fn diagnostic(&mut self, message: &str) {
        self.diagnostics += 1;
        if self.diagnostics <= DIAGNOSTIC_LIMIT {
            self.front.note(&format!("diagnostic: {message}"));
        } else if self.diagnostics == DIAGNOSTIC_LIMIT + 1 {
            self.front.note("more diagnostics follow; not shown");
        }
    }

    async fn agent_gone(&mut self) -> Step {
        let during_turn = self.prompts.running();
        self.front.set_footer(Footer::None);
        self.front.commit(None)?;
        // What follows goes to stderr: the full screen gives the terminal back first.
        self.front.leave();
        if during_turn {
            eprintln!("spindle chat: the agent stopped before the turn ended");
        }
        report_agent_exit(&self.conn.agent).await;
        Ok(Some(exit::AGENT_EXITED))
    }
}

/// Lines from stdin on a thread of their own; the channel closes at EOF.
fn spawn_line_reader() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match stdin.lock().read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    let line = line.trim_end_matches(['\n', '\r']).to_owned();
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}
