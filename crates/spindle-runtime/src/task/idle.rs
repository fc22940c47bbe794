//! An agent left idle is stopped (`AgentSettings::idle_stop`): a server that runs for days
//! would otherwise keep one agent process per session ever used. Idle means no line either
//! way and no terminal output for that long, with nothing open: no turn, no queued prompt, no
//! permission question, elicitation or file review, no request waiting for the agent. The
//! session stays as it was; the next prompt starts the agent again, which continues its agent
//! session (`session/load` or `session/resume`, as after a restart). So does a mode or option
//! change (the page's pickers, an `/acp` client's `session/set_mode`): it waits for the session
//! to open and goes then, instead of being refused while no agent runs.

use super::state::{DeferredSetting, SessionTask};
use crate::error::SessionError;
use crate::handshake::Phase;
use crate::sync::lock;

impl SessionTask {
    /// Something passed between the session and its agent (a line, terminal output).
    pub(super) fn agent_active(&mut self) {
        self.last_agent_activity = tokio::time::Instant::now();
    }

    /// When the open agent is stopped unless something happens first.
    pub(super) fn idle_deadline(&self) -> Option<tokio::time::Instant> {
        let after = self.settings.idle_stop?;
        (self.agent.is_some() && self.startup.phase == Phase::Ready)
            .then(|| self.last_agent_activity + after)
    }

    /// Whether anything is open that the agent's stop would end.
    fn agent_busy(&self) -> bool {
        self.v1_turn_running
            || !self.queued.is_empty()
            || !self.agent_requests.is_empty()
            || !self.elicitations.is_empty()
            || !self.reviews.is_empty()
            || !self.waiting.is_empty()
            || !self.remote_prompts.is_empty()
            || lock(&self.core).engine.transcript().state.turn_open
    }

    /// The idle deadline passed: stops the agent when nothing is open, else looks again after
    /// another period.
    pub(super) async fn stop_idle_agent(&mut self) {
        if self.agent_busy() {
            self.agent_active();
            return;
        }
        let Some(after) = self.settings.idle_stop else {
            return;
        };
        self.stop_agent().await;
        self.startup.reset();
        let secs = after.as_secs();
        let idle = if secs >= 60 {
            format!("{} min", secs.div_ceil(60))
        } else {
            format!("{secs} s")
        };
        tracing::info!(session = self.id, "agent stopped after {idle} idle");
        self.status(
            "no_agent",
            Some(format!(
                "The agent was stopped after {idle} without activity; the next prompt starts it \
                 again and continues this session."
            )),
        );
    }

    /// Whether a mode or option change must wait for the agent session: it is opening, or no
    /// agent runs and one is started now for it. False when the session is open, wants a
    /// sign-in, or no agent can start here (the change is then answered as before).
    pub(super) fn setting_must_wait(&mut self) -> bool {
        match self.startup.phase {
            Phase::Initializing | Phase::Opening => true,
            Phase::NoAgent => {
                self.start_agent();
                self.agent.is_some()
            }
            Phase::Ready | Phase::NeedsAuth => false,
        }
    }

    /// The opening ended: the changes that waited go to the agent now, or are answered with why
    /// not.
    pub(super) fn settings_after_opening(&mut self, opened: bool) {
        for setting in std::mem::take(&mut self.deferred_settings) {
            let failed = || {
                Err(SessionError::unavailable(
                    "the agent did not open its session; the session's banner says why",
                ))
            };
            match (setting, opened) {
                (DeferredSetting::Mode(mode, reply), true) => self.set_mode(&mode, reply),
                (DeferredSetting::Config(id, value, reply), true) => {
                    self.set_config(&id, &value, reply)
                }
                (DeferredSetting::Mode(_, reply) | DeferredSetting::Config(_, _, reply), false) => {
                    let _ = reply.send(failed());
                }
            }
        }
    }
}
