//! The interactive chat: one loop over one closed [`ChatEvent`] (client
//! events, typed lines, Ctrl-C, terminal resizes, the redraw timer). Every change to the screen comes
//! from the engine's render ops (through [`View`]); this loop only decides
//! when turns start and end and answers permission requests.

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal};
use std::time::Duration;

use serde_json::{Value, json};
use spindle_engine::TranscriptEngine;
use spindle_protocol::{ClientEvent, RequestId};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::permission::{self, PermissionAsk};
use super::render::RenderOptions;
use super::screen::Screen;
use super::view::{Footer, View};
use super::{ChatArgs, Connected, exit, exit_code_for_turn, prompt_blocks, report_agent_exit};

/// At most one redraw per this interval, however fast updates arrive.
const REDRAW_INTERVAL: Duration = Duration::from_millis(16);
/// Events handled per wake-up before the screen gets a chance to redraw.
const BATCH: usize = 1024;
/// Diagnostics shown before the rest are only counted.
const DIAGNOSTIC_LIMIT: usize = 20;
/// The input prompt.
const PROMPT: &str = "> ";

/// The running turn.
#[derive(Debug)]
struct Turn {
    /// The prompt's content blocks, as JSON.
    blocks: String,
    /// v1: always. v2: the agent answered the prompt (the turn has begun).
    accepted: bool,
    cancel_sent: bool,
}

/// Everything the chat's loop reacts to.
#[derive(Debug)]
enum ChatEvent {
    /// From the client runtime; `None` once the connection is gone.
    Client(Option<ClientEvent>),
    /// A line typed on stdin; `None` at EOF.
    Typed(Option<String>),
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGWINCH: the terminal was resized.
    Resize,
    /// The redraw interval passed with changes waiting.
    RedrawDue,
}

/// What a handler returns: `Some(status)` ends the chat with that status.
type Step = anyhow::Result<Option<u8>>;

struct Chat<'a> {
    args: &'a ChatArgs,
    conn: Connected,
    engine: TranscriptEngine,
    view: View,
    v2: bool,
    stdin_tty: bool,
    turn: Option<Turn>,
    /// Lines typed while a turn ran: sent, in order, when it ends.
    queued: VecDeque<String>,
    permission: Option<(RequestId, PermissionAsk)>,
    input_closed: bool,
    /// Exit status of the last finished turn (what EOF exits with).
    last_code: u8,
    /// Diagnostics seen so far.
    diagnostics: usize,
}

/// Runs the interactive chat; returns the exit status.
pub async fn run(args: &ChatArgs, conn: Connected) -> anyhow::Result<u8> {
    let stdin_tty = std::io::stdin().is_terminal();
    let screen = Screen::new(std::io::stdout().is_terminal());
    let options = RenderOptions {
        thoughts: !args.hide_thoughts,
        // A terminal echoes what the user types; piped input is shown.
        user_messages: !stdin_tty,
    };
    let mut chat = Chat {
        args,
        v2: conn.protocol_version == 2,
        engine: conn.engine(),
        conn,
        view: View::new(screen, options),
        stdin_tty,
        turn: None,
        queued: VecDeque::new(),
        permission: None,
        input_closed: false,
        last_code: exit::END_TURN,
        diagnostics: 0,
    };
    let mut input = spawn_line_reader();
    let mut interrupts = signal(SignalKind::interrupt())?;
    let mut resizes = signal(SignalKind::window_change())?;
    chat.show_input_prompt();
    let mut next_redraw = Instant::now();
    let code = loop {
        let event = tokio::select! {
            event = chat.conn.events.recv() => ChatEvent::Client(event),
            line = input.recv() => ChatEvent::Typed(line),
            _ = interrupts.recv() => ChatEvent::Interrupt,
            _ = resizes.recv() => ChatEvent::Resize,
            () = tokio::time::sleep_until(next_redraw), if chat.view.is_dirty() => ChatEvent::RedrawDue,
        };
        if let Some(code) = chat.handle(event).await? {
            break code;
        }
        chat.conn.drain_recording()?;
        let now = Instant::now();
        if chat.view.is_dirty() && now >= next_redraw {
            chat.view.redraw()?;
            next_redraw = now + REDRAW_INTERVAL;
        }
    };
    chat.view.set_footer(Footer::None);
    chat.view.commit(None)?;
    chat.conn.finish_recording()?;
    Ok(code)
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

impl Chat<'_> {
    async fn handle(&mut self, event: ChatEvent) -> Step {
        match event {
            ChatEvent::Client(Some(event)) => self.client_batch(event).await,
            ChatEvent::Client(None) => self.agent_gone().await,
            ChatEvent::Typed(line) => self.typed(line).await,
            ChatEvent::Interrupt => self.interrupt().await,
            ChatEvent::Resize => {
                self.view.resize();
                Ok(None)
            }
            // The loop redraws after every event.
            ChatEvent::RedrawDue => Ok(None),
        }
    }

    fn show_input_prompt(&mut self) {
        if self.stdin_tty && !self.input_closed {
            self.view.set_footer(Footer::Input {
                question: Vec::new(),
                prompt: PROMPT.to_owned(),
            });
        } else {
            self.view.set_footer(Footer::None);
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
                self.view.apply(applied.ops);
                for d in applied.diagnostics {
                    self.diagnostic(&d.message);
                }
            }
            ClientEvent::PromptResponse { result, .. } => {
                let Some(turn) = &mut self.turn else {
                    return Ok(None);
                };
                if !turn.accepted && result.is_ok() {
                    turn.accepted = true;
                    let applied = self.engine.apply_user_prompt(&turn.blocks);
                    self.view.apply(applied.ops);
                }
                let refused = !turn.accepted;
                let response = result.as_ref().map(|r| r.get()).map_err(|e| e.get());
                let applied = self.engine.apply_prompt_response(response);
                self.view.apply(applied.ops);
                if refused && let Err(error) = &result {
                    self.view
                        .note(&format!("the agent refused the prompt: {}", error.get()));
                    return self.turn_ended(None, true).await;
                }
            }
            ClientEvent::TurnFinished {
                stop_reason, error, ..
            } if self.turn.as_ref().is_some_and(|t| t.accepted) => {
                if let Some(error) = &error {
                    self.view.note(&format!("agent error: {}", error.get()));
                }
                return self.turn_ended(stop_reason, error.is_some()).await;
            }
            ClientEvent::PermissionRequest {
                request_id, params, ..
            } => self.permission_asked(request_id, params.get()).await?,
            ClientEvent::RequestCancelled { request_id } => {
                // Answered `cancelled` by the runtime (session/cancel) or
                // withdrawn by the agent.
                self.engine_permission_answer(&request_id, &permission::cancelled());
                if self.permission.as_ref().map(|(id, _)| id) == Some(&request_id) {
                    self.permission = None;
                    self.view.note("the permission request was withdrawn");
                    self.view.set_footer(Footer::Status);
                }
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
    fn diagnostic(&mut self, message: &str) {
        self.diagnostics += 1;
        if self.diagnostics <= DIAGNOSTIC_LIMIT {
            self.view.note(&format!("diagnostic: {message}"));
        } else if self.diagnostics == DIAGNOSTIC_LIMIT + 1 {
            self.view.note("more diagnostics follow; not shown");
        }
    }

    async fn turn_ended(&mut self, stop_reason: Option<String>, failed: bool) -> Step {
        self.turn = None;
        self.permission = None;
        self.last_code = exit_code_for_turn(stop_reason.as_deref(), failed);
        let mut note = match (&stop_reason, failed) {
            (_, true) => "turn failed".to_owned(),
            (Some(reason), false) => reason.clone(),
            (None, false) => "turn over".to_owned(),
        };
        if let Some(usage) = self.view.usage_text() {
            note = format!("{note} | {usage}");
        }
        self.view.set_footer(Footer::None);
        self.view.commit(Some(&format!("[{note}]")))?;
        if let Some(next) = self.queued.pop_front() {
            self.start_prompt(next).await;
        } else if self.input_closed {
            return Ok(Some(self.last_code));
        } else {
            self.show_input_prompt();
        }
        Ok(None)
    }

    async fn agent_gone(&mut self) -> Step {
        let during_turn = self.turn.is_some();
        self.view.set_footer(Footer::None);
        self.view.commit(None)?;
        if during_turn {
            eprintln!("spindle chat: the agent stopped before the turn ended");
        }
        report_agent_exit(&self.conn.agent).await;
        Ok(Some(exit::AGENT_EXITED))
    }

    async fn start_prompt(&mut self, text: String) {
        let blocks = prompt_blocks(&text);
        let blocks_json = blocks.to_string();
        if !self.v2 {
            let applied = self.engine.apply_user_prompt(&blocks_json);
            self.view.apply(applied.ops);
        }
        self.turn = Some(Turn {
            blocks: blocks_json,
            accepted: !self.v2,
            cancel_sent: false,
        });
        self.view.set_footer(Footer::Status);
        // A failed send means the connection is gone: `AgentExited` follows.
        let _ = self
            .conn
            .client
            .send_prompt(&self.conn.session_id, &blocks)
            .await;
    }

    async fn typed(&mut self, line: Option<String>) -> Step {
        let Some(line) = line else {
            self.input_closed = true;
            if let Some((request_id, _)) = self.permission.take() {
                self.answer_permission(&request_id, &permission::cancelled())
                    .await;
            }
            if self.turn.is_none() && self.queued.is_empty() {
                return Ok(Some(self.last_code));
            }
            return Ok(None);
        };
        if let Some((request_id, ask)) = self.permission.take() {
            self.view.accept_input();
            match ask.outcome_for_answer(&line) {
                Some(outcome) => {
                    self.answer_permission(&request_id, &outcome).await;
                    self.view.set_footer(Footer::Status);
                }
                None => {
                    let prompt = format!("type a number from 1 to {}: ", ask.options.len());
                    self.view.set_footer(Footer::Input {
                        question: ask.question(),
                        prompt,
                    });
                    self.permission = Some((request_id, ask));
                }
            }
            return Ok(None);
        }
        if self.turn.is_some() {
            self.view.stray_input(&line);
            if !line.trim().is_empty() {
                if self.stdin_tty {
                    self.view
                        .note(&format!("queued until the turn ends: {line}"));
                }
                self.queued.push_back(line);
            }
            return Ok(None);
        }
        if self.view.is_terminal() {
            self.view.accept_input();
        } else {
            self.view.commit(None)?;
        }
        if line.trim().is_empty() {
            self.show_input_prompt();
            return Ok(None);
        }
        self.start_prompt(line).await;
        Ok(None)
    }

    async fn interrupt(&mut self) -> Step {
        let Some(turn) = &mut self.turn else {
            return Ok(Some(exit::CANCELLED));
        };
        if turn.cancel_sent {
            return Ok(Some(exit::CANCELLED));
        }
        turn.cancel_sent = true;
        self.permission = None;
        let notification = json!({
            "jsonrpc": "2.0",
            "method": "session/cancel",
            "params": {"sessionId": self.conn.session_id},
        });
        let applied = self.engine.apply_client_line(&notification.to_string());
        self.view.apply(applied.ops);
        self.view.note("cancelling the turn (Ctrl-C again quits)");
        self.view.set_footer(Footer::Status);
        let _ = self.conn.client.cancel(&self.conn.session_id).await;
        Ok(None)
    }

    /// Sends the answer and tells the engine, which records it on the
    /// tool call (as a replay of the recording would).
    async fn answer_permission(&mut self, request_id: &RequestId, outcome: &Value) {
        let _ = self
            .conn
            .client
            .respond_permission(request_id, outcome)
            .await;
        self.engine_permission_answer(request_id, outcome);
    }

    fn engine_permission_answer(&mut self, request_id: &RequestId, outcome: &Value) {
        let line = json!({"jsonrpc": "2.0", "id": request_id, "result": {"outcome": outcome}});
        let applied = self.engine.apply_client_line(&line.to_string());
        self.view.apply(applied.ops);
    }

    async fn permission_asked(
        &mut self,
        request_id: RequestId,
        params: &str,
    ) -> anyhow::Result<()> {
        // The engine sees the request as the agent sent it: the tool call
        // shows that it waits for an answer.
        let request = json!({
            "jsonrpc": "2.0",
            "id": &request_id,
            "method": "session/request_permission",
            "params": serde_json::from_str::<Value>(params).unwrap_or(Value::Null),
        });
        let applied = self.engine.apply_agent_line(&request.to_string());
        self.view.apply(applied.ops);
        let ask = PermissionAsk::parse(params);
        let answer = if self.args.yes
            && let Some(option) = ask.allow_for_yes()
        {
            self.view.clear_live()?;
            eprintln!(
                "spindle chat: --yes: approving {:?} with {:?}",
                ask.subject, option.name
            );
            Some(permission::selected(option))
        } else if !self.stdin_tty || self.input_closed {
            let (outcome, what) = match ask.reject_unasked() {
                Some(option) => (permission::selected(option), "rejected"),
                None => (permission::cancelled(), "cancelled"),
            };
            self.view.clear_live()?;
            eprintln!(
                "spindle chat: permission for {:?} {what}: no terminal to ask and no --yes",
                ask.subject
            );
            Some(outcome)
        } else {
            None
        };
        match answer {
            Some(outcome) => {
                self.answer_permission(&request_id, &outcome).await;
            }
            None => {
                // The entries so far become scrollback; the question waits
                // at the bottom for a number.
                self.view.set_footer(Footer::None);
                self.view.commit(None)?;
                self.view.set_footer(Footer::Input {
                    question: ask.question(),
                    prompt: format!("choose 1-{}: ", ask.options.len()),
                });
                self.permission = Some((request_id, ask));
            }
        }
        Ok(())
    }
}
