//! An agent left idle is stopped (`AgentSettings::idle_stop`): a server that runs for days
//! would otherwise keep one agent process per session ever used. Idle means no line either
//! way and no terminal output for that long, with nothing open: no turn, no queued prompt, no
//! permission question, elicitation or file review, no request waiting for the agent. The
//! session stays as it was; the next prompt starts the agent again, which continues its agent
//! session (`session/load` or `session/resume`, as after a restart).

use super::state::SessionTask;
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
        self.close_agent_session().await;
        if let Some(mut agent) = self.agent.take() {
            agent.host.shutdown().await;
            agent.link.kill().await;
        }
        self.startup.reset();
        self.opening_ended(false);
        let minutes = after.as_secs().div_ceil(60);
        let idle = if after.as_secs() >= 60 {
            format!("{minutes} min")
        } else {
            format!("{} s", after.as_secs())
        };
        tracing::info!(session = self.id, "agent stopped after {idle} idle");
        self.status(
            "no_agent",
            Some(format!(
                "The agent was stopped after {idle} without activity; the next prompt starts it \
                 again and continues this session."
            )),
        );
        lock(&self.core).save_now();
    }
}
