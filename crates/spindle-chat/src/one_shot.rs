//! `spindle chat --prompt`: one turn, no rendering, the final reply once.
//!
//! This is the benchmark's consumer, so the loop does the least it can per
//! update: the engine runs with render ops off, nothing is written per
//! update, and the reply is printed once when the turn is over.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;
use spindle_host::{HostReply, PendingWrite};
use spindle_protocol::{ClientEvent, RequestId, ResponseError};
use spindle_wire::client_methods::{
    ELICITATION_COMPLETE, ELICITATION_CREATE, SESSION_REQUEST_PERMISSION,
};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::args::{ChatArgs, exit};
use super::outcome::{AgentErrorText, exit_code_for_turn, report_agent_exit};
use super::permission::{self, PermissionAsk, Standing};
use super::prompt_content;
use super::services::{self, ServiceDone, ServiceEvent};
use super::session_open::Connected;

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
    /// The answer to a question; `None` at EOF.
    Typed(Option<String>),
    /// A client service finished a request or reported terminal output.
    Service(ServiceEvent),
}

/// A question waiting for a typed answer.
#[derive(Debug)]
struct PendingAnswer {
    request_id: RequestId,
    question: Question,
    answer: oneshot::Receiver<Option<String>>,
}

/// What is asked.
#[derive(Debug)]
enum Question {
    /// A permission request.
    Permission(PermissionAsk),
    /// A write to review (`--fs ask`).
    Write(PendingWrite),
}

struct Turn<'a> {
    args: &'a ChatArgs,
    conn: Connected,
    engine: spindle_engine::TranscriptEngine,
    blocks: String,
    accepted: bool,
    diagnostics: usize,
    pending: Option<PendingAnswer>,
    /// Writes waiting behind the question on screen.
    waiting_writes: Vec<(RequestId, PendingWrite)>,
    standing: Standing,
}

/// Runs one prompt; returns the exit status.
pub async fn run(
    args: &ChatArgs,
    prompt: String,
    conn: Connected,
    deadline: Option<Instant>,
) -> anyhow::Result<u8> {
    let v2 = conn.protocol_version == 2;
    for notice in &conn.notices {
        eprintln!("spindle chat: {notice}");
    }
    let mut engine = conn.engine();
    engine.set_render_ops(false);
    let caps = conn
        .init
        .as_ref()
        .map(|i| i.prompt_capabilities())
        .unwrap_or_default();
    let built = prompt_content::load_attachments(&args.attach, caps).and_then(|attachments| {
        prompt_content::build(&prompt, &attachments, conn.services.host(), caps)
    });
    let blocks = match built {
        Ok(blocks) => blocks,
        Err(message) => {
            eprintln!("spindle chat: not sent: {message}");
            let mut conn = conn;
            conn.services.shutdown().await;
            conn.finish_recording()?;
            return Ok(exit::USAGE);
        }
    };
    let mut turn = Turn {
        args,
        engine,
        blocks: blocks.to_string(),
        accepted: !v2,
        diagnostics: 0,
        pending: None,
        waiting_writes: Vec::new(),
        standing: Standing::default(),
        conn,
    };
    // What arrived while the session opened (a loaded session's replay)
    // precedes the turn.
    while let Some(event) = turn.conn.events.try_recv() {
        if turn.handle(event).await?.is_some() {
            break;
        }
    }
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
            let error = turn.engine.transcript().state.error.as_ref();
            match error {
                // A refusal was reported when it came.
                _ if !turn.accepted => {}
                Some(error) => AgentErrorText::from_json(
                    "the agent ended the turn with an error",
                    &error.to_string(),
                )
                .eprint(),
                None if code != exit::END_TURN => {
                    let reason = stop_reason.as_deref().unwrap_or("error");
                    eprintln!("spindle chat: the turn ended: {reason}");
                }
                None => {}
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
    // The session's terminals die with the chat.
    turn.conn.services.shutdown().await;
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
    // The process ends next: taking a long turn's transcript apart entry by entry (tens of
    // thousands of them after a 10^6-update turn, 4-6% of that chat's CPU) would only delay the
    // exit.
    std::mem::forget(turn.engine);
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
                event = self.conn.services.next() => TurnEvent::Service(event),
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
                TurnEvent::Service(event) => self.service_event(event).await?,
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
        let _ = self.conn.client.cancel(&self.conn.session_id).await;
        // Writes waiting for review are refused; the session's terminals die.
        if let Some(pending) = self.pending.take()
            && let Question::Write(write) = pending.question
        {
            self.finish_review(pending.request_id, write, false).await;
        }
        for (request_id, write) in std::mem::take(&mut self.waiting_writes) {
            self.finish_review(request_id, write, false).await;
        }
        let session = self.conn.session_id.clone();
        self.conn.services.kill_terminals(&session).await;
    }

    /// `fs/*` and `terminal/*` from the agent: shown to the engine, run by
    /// the services on a task of their own.
    async fn agent_request(
        &mut self,
        request_id: RequestId,
        method: &str,
        params: Option<Box<RawValue>>,
    ) {
        if method == ELICITATION_CREATE {
            // Nobody answers questions in --prompt mode: the message is shown, the
            // question declined.
            let params = params
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .unwrap_or(Value::Null);
            let elicitation = spindle_host::Elicitation::of_params(&params);
            eprintln!(
                "spindle chat: the agent asks: {}",
                super::render::sanitize(&elicitation.message)
            );
            eprintln!("spindle chat: declined (--prompt does not answer the agent's questions)");
            let answer = spindle_host::ElicitationAnswer::Decline.to_result();
            self.send_response(&request_id, Ok(answer)).await;
            return;
        }
        let line = services::request_line(&request_id, method, params.as_deref());
        self.engine.apply_agent_line(&line);
        if !self
            .conn
            .services
            .dispatch(request_id.clone(), method, params)
        {
            let error = ResponseError::method_not_found(
                method,
                &format!("{method}: this client does not offer it"),
            );
            self.send_response(&request_id, Err(error)).await;
        }
    }

    async fn send_response(
        &mut self,
        request_id: &RequestId,
        result: Result<Value, ResponseError>,
    ) {
        let line = services::respond(&self.conn.client, request_id, result).await;
        self.engine.apply_client_line(&line);
    }

    async fn service_event(&mut self, event: ServiceEvent) -> anyhow::Result<()> {
        match event {
            ServiceEvent::Done(ServiceDone { request_id, reply }) => match reply {
                HostReply::Done(result) => self.send_response(&request_id, result).await,
                HostReply::NeedsApproval(write) => {
                    if !std::io::stdin().is_terminal() {
                        eprintln!(
                            "spindle chat: write to {} refused: --fs ask and no terminal to ask (use --yes or --fs allow)",
                            write.display_path
                        );
                        self.finish_review(request_id, write, false).await;
                    } else if self.pending.is_some() {
                        self.waiting_writes.push((request_id, write));
                    } else {
                        self.ask_review(request_id, write);
                    }
                }
            },
            ServiceEvent::Host(event) => {
                let line = event.to_local_line();
                self.engine.apply_local_line(&line);
                self.conn.record_local(&line)?;
            }
        }
        Ok(())
    }

    fn ask_review(&mut self, request_id: RequestId, write: PendingWrite) {
        let mut question = String::new();
        for (line, _) in services::review_lines(&write) {
            question.push_str(&super::render::sanitize(&line));
            question.push('\n');
        }
        eprint!("{question}apply? [y/N] ");
        self.pending = Some(PendingAnswer {
            request_id,
            question: Question::Write(write),
            answer: read_line_from_stdin(),
        });
    }

    async fn finish_review(&mut self, request_id: RequestId, write: PendingWrite, apply: bool) {
        let result = if apply {
            self.conn.services.host().approve(write)
        } else {
            Err(self.conn.services.host().reject(&write))
        };
        self.send_response(&request_id, result).await;
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
                    AgentErrorText::from_json("the agent refused the prompt", error.get()).eprint();
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
            ClientEvent::AgentRequest {
                request_id,
                method,
                params,
            } => self.agent_request(request_id, &method, params).await,
            ClientEvent::Diagnostic { message } => self.diagnostic(&message),
            // `elicitation/complete` closes a question this mode already declined.
            ClientEvent::AgentNotification { method, .. } if method != ELICITATION_COMPLETE => {
                self.diagnostic(&crate::outcome::unhandled_notification(&method));
            }
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
        // The engine sees the request as the agent sent it: the tool call
        // takes the diff the agent sent with it, shown with the question.
        let params_value = serde_json::from_str::<Value>(params).unwrap_or(Value::Null);
        let request = serde_json::json!({
            "jsonrpc": "2.0",
            "id": &request_id,
            "method": SESSION_REQUEST_PERMISSION,
            "params": &params_value,
        });
        self.engine.apply_agent_line(&request.to_string());
        let diff = params_value
            .pointer("/toolCall/toolCallId")
            .and_then(Value::as_str)
            .and_then(|id| self.engine.transcript().entry(id))
            .map(|entry| super::render::diff_lines(&entry.view()))
            .unwrap_or_default();
        let ask = PermissionAsk::parse(params);
        if let Some((option, line)) = self.standing.answer_for(&ask) {
            eprintln!("spindle chat: {line} (answered without asking)");
            let outcome = permission::selected(option);
            let _ = self
                .conn
                .client
                .respond_permission(&request_id, &outcome)
                .await;
            return;
        }
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
            for line in diff.iter().chain(&ask.question()) {
                question.push_str(&line.text);
                question.push('\n');
            }
            eprint!("{question}choose 1-{}: ", ask.options.len());
            self.pending = Some(PendingAnswer {
                request_id,
                question: Question::Permission(ask),
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
        let request_id = pending.request_id;
        match pending.question {
            Question::Write(write) => {
                let apply = typed
                    .as_deref()
                    .is_some_and(|t| matches!(t.trim().to_ascii_lowercase().as_str(), "y" | "yes"));
                self.finish_review(request_id, write, apply).await;
            }
            Question::Permission(ask) => {
                let outcome = match typed {
                    None => {
                        eprintln!(
                            "spindle chat: stdin closed before a choice; answering cancelled"
                        );
                        permission::cancelled()
                    }
                    Some(text) => match ask.option_for_answer(&text) {
                        Some(option) => {
                            if let Some(line) = self.standing.remember(&ask, &option.id) {
                                eprintln!("spindle chat: {line}");
                            }
                            permission::selected(option)
                        }
                        None => {
                            eprint!("type a number from 1 to {}: ", ask.options.len());
                            self.pending = Some(PendingAnswer {
                                request_id,
                                question: Question::Permission(ask),
                                answer: read_line_from_stdin(),
                            });
                            return;
                        }
                    },
                };
                let _ = self
                    .conn
                    .client
                    .respond_permission(&request_id, &outcome)
                    .await;
            }
        }
        if self.pending.is_none() && !self.waiting_writes.is_empty() {
            let (request_id, write) = self.waiting_writes.remove(0);
            self.ask_review(request_id, write);
        }
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
