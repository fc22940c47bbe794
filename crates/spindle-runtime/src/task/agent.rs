//! What the agent says and what follows from it: its lines are recorded first, then decoded by
//! the session's `ClientCore`; client events (permission questions, withdrawn requests, agent
//! requests for the host), completed requests (waiting page requests, `/acp` prompts, prompt
//! results, the startup handshake: opened, failed, needs authentication) and the agent's exit.

use serde::Deserialize;
use serde_json::{Value, json};
use spindle_protocol::{ClientEvent, Completion};
use spindle_wire::client_methods::{ELICITATION_COMPLETE, ELICITATION_CREATE};
use tokio::sync::oneshot;

use super::state::{SessionTask, request_key};
use crate::agent_link::LinkEvent;
use crate::core::Banner;
use crate::error::SessionError;
use crate::feed::agent_exited_note;
use crate::handshake::{Pending, Phase, StartupStep, error_message};
use crate::store::Direction;
use crate::sync::lock;

impl SessionTask {
    pub(super) async fn agent_events(&mut self, events: Vec<LinkEvent>) {
        let mut lines = Vec::new();
        let mut closed = None;
        // Held until the batch is processed, so the link's byte budget covers it.
        let mut shares = Vec::new();
        // The replay of a session the transcript already holds is logged apart; the replay of
        // an earlier agent session opened from the history is the transcript.
        let replaying = self.is_loading() && !self.startup.replay_is_transcript();
        for event in events {
            match event {
                LinkEvent::Lines(read, share) => {
                    shares.push(share);
                    lines.extend(read.into_iter().map(|line| {
                        let direction = if replaying && is_update_notification(&line) {
                            Direction::AgentReplay
                        } else {
                            Direction::Agent
                        };
                        (direction, line)
                    }));
                }
                LinkEvent::Dropped(why) => {
                    tracing::warn!(session = self.id, "{why}");
                    self.banner("warning", format!("Agent output dropped: {why}"));
                }
                LinkEvent::Closed(why) => closed = Some(why),
            }
        }
        // Durability first: the batch goes to the log writer before anything decodes or reacts
        // to it, and nothing derived from it is shown before the writer committed it (the core
        // holds it; a client line answering it waits for the commit, `flush_client`). The save
        // of the transcript a turn's end makes waits for the task's loop (`save_after_yield`),
        // after the observers had the turn's end.
        // The batch is applied in place (CPU only: the writer's thread commits it); only a wait
        // for the writer, when too much is unanswered, leaves the worker to the other tasks.
        let core = &self.core;
        let (lines, over) = {
            let mut core = lock(core);
            let lines = core.record_agent_lines(lines);
            (lines, core.over_in_flight())
        };
        if over {
            self.store.off_worker(|| lock(core).wait_for_room());
        }
        self.follow_agent_title();
        for (_, line) in lines.iter() {
            let Some(agent) = self.agent.as_mut() else {
                break;
            };
            agent.client.receive_line(line);
            self.flush_client();
        }
        drop(shares);
        if let Some(why) = closed {
            self.agent_gone(&why).await;
        }
    }

    /// Whether a `session/load` (or a resume with replay) is under way: the updates meanwhile
    /// replay history.
    fn is_loading(&self) -> bool {
        self.agent.as_ref().is_some_and(|agent| {
            agent
                .client
                .pending_requests()
                .any(|(_, _, kind)| *kind == Pending::Load)
        })
    }

    /// The task's own bookkeeping for one client event (the engine already applied the line).
    pub(super) fn client_event(&mut self, event: ClientEvent) {
        match event {
            ClientEvent::PermissionRequest {
                request_id, params, ..
            } => self.permission_requested(request_id, params.get()),
            ClientEvent::AgentRequest {
                request_id,
                method,
                params,
            } if method == ELICITATION_CREATE => self.elicitation_requested(request_id, params),
            ClientEvent::AgentNotification { method, params } if method == ELICITATION_COMPLETE => {
                self.elicitation_completed(params);
            }
            ClientEvent::RequestCancelled { request_id } => {
                let key = request_key(&request_id);
                self.elicitation_withdrawn(&key);
                if self.agent_requests.remove(&key).is_some() {
                    lock(&self.core).close_permission(&key, "cancelled");
                }
                if self.reviews.remove(&key).is_some() {
                    lock(&self.core).close_review(
                        &key,
                        "cancelled",
                        Some("the agent withdrew the write"),
                    );
                }
            }
            ClientEvent::AgentRequest {
                request_id,
                method,
                params,
            } => self.agent_request(request_id, method, params),
            ClientEvent::Diagnostic { message } => {
                tracing::debug!(session = self.id, "agent: {message}");
            }
            // Kept in the wire log like every line; named here as not acted on.
            ClientEvent::AgentNotification { method, .. } => {
                tracing::warn!(
                    session = self.id,
                    method,
                    "the agent sent a notification serve does not act on; kept in the wire log"
                );
            }
            // The engine renders updates and turn ends from the logged lines themselves.
            _ => {}
        }
    }

    pub(super) fn completed(&mut self, completion: Completion<Pending>) {
        if let Some(waiter) = self.waiting.remove(&completion.id) {
            let answer = match &completion.result {
                Ok(raw) => Ok(serde_json::from_str(raw.get()).unwrap_or(Value::Null)),
                Err(error) => Err(SessionError::Agent {
                    code: None,
                    message: format!("the agent refused: {}", error_message(error)),
                }),
            };
            let _ = waiter.send(answer);
        }
        if let Some(target) = self.remote_prompts.remove(&completion.id) {
            let answer = match &completion.result {
                Ok(raw) => Ok(serde_json::from_str(raw.get()).unwrap_or(Value::Null)),
                Err(error) => Err(remote_error(error)),
            };
            lock(&self.core)
                .acp
                .respond(&target.connection, &target.id, answer);
        }
        match completion.data {
            Pending::Prompt { banners_before } => {
                let v1 = self.protocol() < 2;
                if v1 {
                    self.v1_turn_running = false;
                }
                let cancelled = match &completion.result {
                    Err(error) => {
                        self.banner(
                            "error",
                            format!("The agent rejected the prompt: {}", error_message(error)),
                        );
                        true
                    }
                    // A turn that ended well; a cancelled or refused one is no success.
                    Ok(raw) if turn_succeeded(raw.get()) => {
                        lock(&self.core).clear_banner(banners_before);
                        false
                    }
                    Ok(raw) => turn_cancelled(raw.get()),
                };
                if v1 {
                    self.queue_turn_ended(cancelled);
                }
                return;
            }
            Pending::Setting | Pending::Lifecycle => return,
            Pending::Delete => {
                if completion.result.is_ok() {
                    self.startup.agent_session = None;
                    self.startup.previous_agent_session = None;
                }
                return;
            }
            Pending::Logout => {
                if completion.result.is_ok() {
                    self.signed_out();
                }
                return;
            }
            // A failed sign-in leaves the session waiting for another one.
            Pending::Authenticate
                if completion.result.is_err() && self.startup.phase == Phase::NeedsAuth =>
            {
                return;
            }
            _ => {}
        }
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        if completion.data == Pending::Authenticate && self.startup.phase == Phase::NeedsAuth {
            // Signed in: opening the session is bounded in time again.
            self.startup_deadline =
                Some(tokio::time::Instant::now() + self.settings.startup_timeout);
        }
        let steps = self
            .startup
            .answered(&mut agent.client, completion.data, completion.result);
        self.flush_client();
        if self.startup.phase == Phase::Opening {
            self.status("starting", None);
        }
        for step in steps {
            match step {
                // What the start changed (a new agent session instead of the old one) stays
                // said after the next turn.
                StartupStep::Warning(text) => self.lasting_banner("warning", text),
                StartupStep::Opened(session) => self.session_opened(&session),
                StartupStep::Failed(why) => self.startup_failed(&why),
                StartupStep::NeedsAuth(message) => self.needs_auth(message),
            }
        }
    }

    /// Answers `reply` now when the agent session is open or none is opening, else when the
    /// opening ends (`Command::WhenAgentSessionOpen`).
    pub(super) fn when_agent_session_open(&mut self, reply: oneshot::Sender<bool>) {
        match self.startup.phase {
            Phase::Ready => {
                let _ = reply.send(true);
            }
            Phase::Initializing | Phase::Opening => self.opening_waiters.push(reply),
            Phase::NoAgent | Phase::NeedsAuth => {
                let _ = reply.send(false);
            }
        }
    }

    /// The agent session opened (true) or cannot open now (false): tells who waits.
    pub(super) fn opening_ended(&mut self, opened: bool) {
        for waiter in self.opening_waiters.drain(..) {
            let _ = waiter.send(opened);
        }
        self.settings_after_opening(opened);
    }

    pub(super) fn needs_auth(&mut self, message: String) {
        self.opening_ended(false);
        // The user takes their time: no startup deadline while the agent waits for them.
        self.startup_deadline = None;
        self.status("needs_auth", Some(message));
        let refusal = self.auth_required();
        for queued in self.queued.drain(..) {
            let _ = queued.reply.send(Err(refusal.clone()));
        }
    }

    fn session_opened(&mut self, session: &str) {
        if let Err(error) = self.store.set_agent_session_id(self.id, session) {
            self.banner("error", error.to_string());
        }
        self.startup_deadline = None;
        self.status("ready", None);
        self.opening_ended(true);
        self.flush_queued();
    }

    pub(super) fn startup_failed(&mut self, why: &str) {
        self.opening_ended(false);
        self.startup_deadline = None;
        self.banner("error", why.to_string());
        self.status("no_agent", Some(why.to_string()));
        self.fail_queued(why);
        self.fail_waiting(why);
        // Dropping the link kills the child; the next prompt tries again.
        if let Some(agent) = self.agent.take() {
            tokio::spawn(async move { agent.host.shutdown().await });
        }
        self.startup.reset();
    }

    pub(super) fn fail_waiting(&mut self, why: &str) {
        for (_, waiter) in self.waiting.drain() {
            let _ = waiter.send(Err(SessionError::unavailable(why.to_string())));
        }
    }

    async fn agent_gone(&mut self, why: &str) {
        let status = match self.agent.as_mut() {
            Some(agent) => Some(agent.link.exit_report().await),
            None => None,
        };
        if let Some(agent) = self.agent.take() {
            // The agent's terminals end with it.
            agent.host.shutdown().await;
        }
        self.startup.reset();
        self.opening_ended(false);
        self.startup_deadline = None;
        self.v1_turn_running = false;
        let keys: Vec<String> = self.agent_requests.drain().map(|(k, _)| k).collect();
        let reviews: Vec<String> = self.reviews.drain().map(|(k, _)| k).collect();
        let exit = format!(
            "{why}{}",
            status.map(|s| format!(", {s}")).unwrap_or_default()
        );
        self.fail_waiting("the agent exited");
        let mut core = lock(&self.core);
        for (_, target) in self.remote_prompts.drain() {
            let error = json!({ "code": -32603, "message": format!("the agent exited ({exit})") });
            core.acp.respond(&target.connection, &target.id, Err(error));
        }
        for key in keys {
            core.close_permission(&key, "agent exited");
        }
        for key in reviews {
            core.close_review(&key, "cancelled", Some("the agent exited"));
        }
        // Logged, so that a rebuild ends the interrupted turn at the same place (F1).
        let note = agent_exited_note(&format!(
            "The agent exited ({exit}) before this turn finished."
        ));
        core.record(vec![(Direction::Server, note)]);
        core.save_now();
        core.set_banner(Some(Banner {
            lasting: false,
            level: "warning",
            text: format!("The agent exited ({exit}). The next prompt starts it again."),
        }));
        drop(core);
        self.status("no_agent", Some(format!("The agent exited ({exit}).")));
        self.fail_queued("the agent exited");
    }
}

/// Whether a prompt's answer ends the turn well (not cancelled, not refused).
fn turn_succeeded(result: &str) -> bool {
    !matches!(
        stop_reason(result).as_deref(),
        Some("cancelled" | "refusal")
    )
}

/// Whether a prompt's answer says the turn was cancelled (the queue then waits, `queue.rs`).
fn turn_cancelled(result: &str) -> bool {
    stop_reason(result).as_deref() == Some(spindle_wire::stop_reasons::CANCELLED)
}

fn stop_reason(result: &str) -> Option<String> {
    serde_json::from_str::<Value>(result).ok().and_then(|v| {
        v.get("stopReason")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

/// The JSON-RPC error an `/acp` client gets for a failed agent request.
fn remote_error(error: &spindle_protocol::ClientError) -> Value {
    match error {
        spindle_protocol::ClientError::Rpc(rpc) => serde_json::to_value(rpc)
            .unwrap_or_else(|_| json!({ "code": -32603, "message": error.to_string() })),
        other => json!({ "code": -32603, "message": other.to_string() }),
    }
}

/// Whether a line is a `session/update` notification (read before it is logged, to log
/// `session/load` replays apart).
fn is_update_notification(line: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<Probe<'_>>(line)
        .is_ok_and(|p| p.method.as_deref() == Some(spindle_wire::client_methods::SESSION_UPDATE))
}
