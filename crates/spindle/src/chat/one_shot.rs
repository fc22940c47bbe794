//! `spindle chat --prompt`: one turn, no rendering, the final reply once.
//!
//! This is the benchmark's consumer, so the loop does the least it can per
//! update: the engine runs with render ops off, nothing is written per
//! update, and the reply is printed once when the turn is over.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use spindle_protocol::{ClientEvent, RequestId};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::permission::{self, PermissionAsk};
use super::{ChatArgs, Connected, exit, exit_code_for_turn, prompt_blocks, report_agent_exit};

/// Events handled per wake-up before the signal and timer arms are polled.
const BATCH: usize = 4096;
/// How long a cancelled turn (Ctrl-C, timeout) may take to wind down.
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// Diagnostics printed before the rest are only counted.
const DIAGNOSTIC_LIMIT: usize = 20;

/// How the turn ended.
#[derive(Debug)]
enum Outcome {
    Finished {
        stop_reason: Option<String>,
        failed: bool,
    },
    AgentExited,
    Interrupted,
    TimedOut,
}

/// Everything the turn's loop reacts to.
#[derive(Debug)]
enum TurnEvent {
    /// From the client runtime; `None` once the connection is gone.
    Client(Option<ClientEvent>),
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// `--timeout`, or the grace period of a cancelled turn, ran out.
    Deadline,
    /// The answer to a permission question; `None` at EOF.
    Typed(Option<String>),
}

/// A permission question waiting for a typed answer.
#[derive(Debug)]
struct PendingAnswer {
    request_id: RequestId,
    ask: PermissionAsk,
    answer: oneshot::Receiver<Option<String>>,
}

struct Turn<'a> {
    args: &'a ChatArgs,
    conn: Connected,
    engine: spindle_engine::TranscriptEngine,
    blocks: String,
    accepted: bool,
    diagnostics: usize,
    pending: Option<PendingAnswer>,
}

/// Runs one prompt; returns the exit status.
pub async fn run(
    args: &ChatArgs,
    prompt: String,
    conn: Connected,
    deadline: Option<Instant>,
) -> anyhow::Result<u8> {
    let v2 = conn.protocol_version == 2;
    let mut engine = conn.engine();
    engine.set_render_ops(false);
    let blocks = prompt_blocks(&prompt);
    let mut turn = Turn {
        args,
        engine,
        blocks: blocks.to_string(),
        accepted: !v2,
        diagnostics: 0,
        pending: None,
        conn,
    };
    // v1: the turn starts with the prompt. v2: when the agent accepts it;
    // what arrives before (the session-start greeting) precedes the turn.
    if !v2 {
        turn.engine.apply_user_prompt(&turn.blocks);
    }
    let sent = turn
        .conn
        .client
        .send_prompt(&turn.conn.session_id, &blocks)
        .await;
    let outcome = match sent {
        Ok(_) => turn.wait_for_end(deadline).await?,
        Err(_) => Outcome::AgentExited,
    };
    let code = match &outcome {
        Outcome::Finished {
            stop_reason,
            failed,
        } => {
            let code = exit_code_for_turn(stop_reason.as_deref(), *failed);
            if code != exit::END_TURN {
                let reason = stop_reason.as_deref().unwrap_or("error");
                eprintln!("spindle chat: the turn ended: {reason}");
                if let Some(error) = &turn.engine.transcript().state.error {
                    eprintln!("spindle chat: agent error: {error}");
                }
            }
            code
        }
        Outcome::AgentExited => {
            eprintln!("spindle chat: the agent stopped before the turn ended");
            report_agent_exit(&turn.conn.agent).await;
            exit::AGENT_EXITED
        }
        Outcome::Interrupted => exit::CANCELLED,
        Outcome::TimedOut => exit::TIMEOUT,
    };
    // The recording gets everything the client saw, the reply last: a
    // reader of stdout can rely on the file being complete.
    turn.conn.finish_recording()?;
    // The reply goes out as the engine's borrowed pieces: a reply of tens of MB is never
    // copied (no pieces is exactly `final_reply() == None`).
    let pieces = turn.engine.final_reply_pieces();
    if !pieces.is_empty() {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        for piece in pieces {
            out.write_all(piece.as_bytes())?;
        }
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(code)
}

impl Turn<'_> {
    async fn wait_for_end(&mut self, deadline: Option<Instant>) -> anyhow::Result<Outcome> {
        let mut interrupts = signal(SignalKind::interrupt())?;
        let mut deadline = deadline;
        // Set once the turn is being cancelled: how the run ends, whatever
        // stop reason the agent gives.
        let mut cancelling: Option<Outcome> = None;
        loop {
            let timer = deadline.unwrap_or_else(Instant::now);
            let answer = async {
                match &mut self.pending {
                    Some(p) => (&mut p.answer).await.ok().flatten(),
                    None => std::future::pending().await,
                }
            };
            let event = tokio::select! {
                event = self.conn.events.recv() => TurnEvent::Client(event),
                _ = interrupts.recv() => TurnEvent::Interrupt,
                () = tokio::time::sleep_until(timer), if deadline.is_some() => TurnEvent::Deadline,
                typed = answer => TurnEvent::Typed(typed),
            };
            match event {
                TurnEvent::Client(None) => return Ok(Outcome::AgentExited),
                TurnEvent::Client(Some(event)) => {
                    if let Some(outcome) = self.client_batch(event).await? {
                        return Ok(cancelling.unwrap_or(outcome));
                    }
                }
                TurnEvent::Interrupt => {
                    if cancelling.is_some() {
                        return Ok(Outcome::Interrupted);
                    }
                    eprintln!("spindle chat: cancelling the turn (Ctrl-C again to quit)");
                    self.cancel().await;
                    cancelling = Some(Outcome::Interrupted);
                    deadline = Some(Instant::now() + CANCEL_GRACE);
                }
                TurnEvent::Deadline => {
                    if let Some(outcome) = cancelling {
                        eprintln!("spindle chat: the agent did not end the cancelled turn");
                        return Ok(outcome);
                    }
                    eprintln!("spindle chat: --timeout expired, cancelling the turn");
                    self.cancel().await;
                    cancelling = Some(Outcome::TimedOut);
                    deadline = Some(Instant::now() + CANCEL_GRACE);
                }
                TurnEvent::Typed(typed) => self.answer_typed(typed).await,
            }
        }
    }

    /// `first` and whatever else is ready, up to a batch; `Some` when the
    /// turn is over.
    async fn client_batch(&mut self, first: ClientEvent) -> anyhow::Result<Option<Outcome>> {
        if let Some(outcome) = self.handle(first).await? {
            return Ok(Some(outcome));
        }
        for _ in 0..BATCH {
            let Some(event) = self.conn.events.try_recv() else {
                break;
            };
            if let Some(outcome) = self.handle(event).await? {
                return Ok(Some(outcome));
            }
        }
        self.conn.drain_recording()?;
        Ok(None)
    }

    async fn cancel(&mut self) {
        self.pending = None;
        let _ = self.conn.client.cancel(&self.conn.session_id).await;
    }

    /// One event; `Some` when the turn is over.
    async fn handle(&mut self, event: ClientEvent) -> anyhow::Result<Option<Outcome>> {
        match event {
            ClientEvent::SessionUpdate { params, .. } => {
                let applied = self
                    .engine
                    .apply_scanned_session_update(params.get(), params.plain_chunk());
                for d in applied.diagnostics {
                    self.diagnostic(&d.message);
                }
            }
            ClientEvent::PromptResponse { result, .. } => {
                let accepted_now = !self.accepted && result.is_ok();
                if accepted_now {
                    self.engine.apply_user_prompt(&self.blocks);
                    self.accepted = true;
                }
                let response = result.as_ref().map(|r| r.get()).map_err(|e| e.get());
                self.engine.apply_prompt_response(response);
                if let Err(error) = &result
                    && !self.accepted
                {
                    eprintln!(
                        "spindle chat: the agent refused the prompt: {}",
                        error.get()
                    );
                    return Ok(Some(Outcome::Finished {
                        stop_reason: None,
                        failed: true,
                    }));
                }
            }
            ClientEvent::TurnFinished {
                stop_reason, error, ..
            } if self.accepted => {
                return Ok(Some(Outcome::Finished {
                    failed: error.is_some(),
                    stop_reason,
                }));
            }
            ClientEvent::PermissionRequest {
                request_id, params, ..
            } => self.permission(request_id, params.get()).await,
            ClientEvent::RequestCancelled { request_id }
                if self.pending.as_ref().map(|p| &p.request_id) == Some(&request_id) =>
            {
                self.pending = None;
                eprintln!("spindle chat: the permission request was withdrawn");
            }
            ClientEvent::Diagnostic { message } => self.diagnostic(&message),
            ClientEvent::AgentExited { .. } => return Ok(Some(Outcome::AgentExited)),
            _ => {}
        }
        Ok(None)
    }

    fn diagnostic(&mut self, message: &str) {
        self.diagnostics += 1;
        if self.diagnostics <= DIAGNOSTIC_LIMIT {
            eprintln!("spindle chat: {}", super::render::sanitize(message));
        } else if self.diagnostics == DIAGNOSTIC_LIMIT + 1 {
            eprintln!("spindle chat: more diagnostics follow; not shown");
        }
    }

    async fn permission(&mut self, request_id: RequestId, params: &str) {
        let ask = PermissionAsk::parse(params);
        if self.args.yes
            && let Some(option) = ask.allow_for_yes()
        {
            eprintln!(
                "spindle chat: --yes: approving {:?} with {:?}",
                ask.subject, option.name
            );
            let outcome = permission::selected(option);
            let _ = self
                .conn
                .client
                .respond_permission(&request_id, &outcome)
                .await;
            return;
        }
        if std::io::stdin().is_terminal() && self.pending.is_none() {
            let mut question = String::new();
            for line in ask.question() {
                question.push_str(&line.text);
                question.push('\n');
            }
            eprint!("{question}choose 1-{}: ", ask.options.len());
            self.pending = Some(PendingAnswer {
                request_id,
                ask,
                answer: read_line_from_stdin(),
            });
            return;
        }
        // Nobody can be asked: never approve.
        let outcome = match ask.reject_unasked() {
            Some(option) => {
                eprintln!(
                    "spindle chat: permission for {:?} rejected: no terminal to ask and no --yes",
                    ask.subject
                );
                permission::selected(option)
            }
            None => {
                eprintln!(
                    "spindle chat: permission for {:?} cancelled: no terminal to ask and no --yes",
                    ask.subject
                );
                permission::cancelled()
            }
        };
        let _ = self
            .conn
            .client
            .respond_permission(&request_id, &outcome)
            .await;
    }

    async fn answer_typed(&mut self, typed: Option<String>) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let outcome = match typed {
            None => {
                eprintln!("spindle chat: stdin closed before a choice; answering cancelled");
                permission::cancelled()
            }
            Some(text) => match pending.ask.outcome_for_answer(&text) {
                Some(outcome) => outcome,
                None => {
                    eprint!("type a number from 1 to {}: ", pending.ask.options.len());
                    self.pending = Some(PendingAnswer {
                        answer: read_line_from_stdin(),
                        ..pending
                    });
                    return;
                }
            },
        };
        let _ = self
            .conn
            .client
            .respond_permission(&pending.request_id, &outcome)
            .await;
    }
}

/// One line from stdin, read on a thread of its own (`None` at EOF).
fn read_line_from_stdin() -> oneshot::Receiver<Option<String>> {
    let (tx, rx) = oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let typed = match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        };
        let _ = tx.send(typed);
    });
    rx
}
