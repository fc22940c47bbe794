//! The session lifecycle calls of schema 1.20.0 as the session task makes them: `session/close`
//! when Spindle stops the agent of a session it is done with (a delete, the server's shutdown, a
//! hand-over to another replica: every path goes through `stop_agent`), so the agent frees the
//! session before its process is stopped; `session/fork` and `session/delete` asked for from the
//! page (`registry/lifecycle.rs`), and `logout`, after which the session waits for a sign-in.

use crate::agent_link::LinkEvent;
use crate::error::SessionError;
use crate::handshake::{Pending, Phase};
use crate::store::Direction;

use super::state::{SessionTask, ValueReply};

/// How long a stopping session waits for the agent to answer `session/close` before its
/// process is stopped anyway (an agent that does not answer must not hold a shutdown up).
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl SessionTask {
    /// Sends `session/close` for the open agent session when the agent offers it, and waits
    /// for the answer (or the agent's exit, or [`CLOSE_WAIT`]); what the agent says meanwhile
    /// is logged like any line. Nothing else reacts to it: the session is being stopped.
    pub(super) async fn close_agent_session(&mut self) {
        let (Some(session), Phase::Ready) =
            (self.startup.agent_session.clone(), self.startup.phase)
        else {
            return;
        };
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        let offered = agent
            .client
            .initialize_outcome()
            .is_some_and(spindle_protocol::InitializeOutcome::can_close_session);
        if !offered || agent.link.is_closed() {
            return;
        }
        let Ok(request) = agent.client.close_session(&session, Pending::Lifecycle) else {
            return;
        };
        let lines: Vec<String> = agent
            .client
            .take_outgoing()
            .iter()
            .map(|m| m.to_json())
            .collect();
        self.record(
            lines
                .iter()
                .map(|line| (Direction::Client, line.clone()))
                .collect(),
        );
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        for line in lines {
            agent.link.send(line);
        }
        let deadline = tokio::time::Instant::now() + CLOSE_WAIT;
        loop {
            let Some(agent) = self.agent.as_mut() else {
                return;
            };
            let answered = !agent
                .client
                .pending_requests()
                .any(|(id, _, _)| *id == request);
            if answered {
                return;
            }
            match tokio::time::timeout_at(deadline, agent.link.events.recv()).await {
                Ok(Some(LinkEvent::Lines(lines, _share))) => {
                    for line in &lines {
                        agent.client.receive_line(line);
                    }
                    self.record(lines.into_iter().map(|l| (Direction::Agent, l)).collect());
                }
                Ok(Some(LinkEvent::Dropped(_))) => {}
                Ok(Some(LinkEvent::Closed(_)) | None) | Err(_) => return,
            }
        }
    }
}

impl SessionTask {
    /// The agent's facts of the session lifecycle, or the refusal of a call that needs `what`
    /// when the agent has not answered `initialize` yet.
    fn features(&self, what: &str) -> Result<spindle_protocol::SessionFeatures, SessionError> {
        self.agent
            .as_ref()
            .and_then(|a| a.client.initialize_outcome())
            .map(spindle_protocol::InitializeOutcome::session_features)
            .ok_or_else(|| {
                SessionError::Conflict(format!(
                    "the agent is not running, so it cannot {what}: send a prompt to start it"
                ))
            })
    }

    /// `session/fork` of the open agent session, in the session's directory with its MCP
    /// servers and additional directories; refused with a conflict when the agent does not
    /// offer forking.
    pub(super) fn fork_agent_session(&mut self, reply: ValueReply) {
        let checked = self.features("fork the session").and_then(|f| {
            if f.can_fork {
                self.ready_session()
            } else {
                Err(SessionError::Conflict(
                    "this agent does not offer forking sessions (session/fork)".into(),
                ))
            }
        });
        let session = match checked {
            Ok(session) => session,
            Err(error) => {
                let _ = reply.send(Err(error));
                return;
            }
        };
        let cwd = self.root.display().to_string();
        let mcp = self.startup.mcp_request.clone();
        let directories = self.startup.additional_directories.clone();
        self.ask(reply, |agent| {
            agent
                .client
                .fork_session(&session, &cwd, &mcp, &directories, Pending::Lifecycle)
        });
    }

    /// `session/delete` of the session's agent session (the open one, else the one it had).
    pub(super) fn delete_agent_session(&mut self, reply: ValueReply) {
        let session = self
            .startup
            .agent_session
            .clone()
            .or_else(|| self.startup.previous_agent_session.clone());
        let checked = self
            .features("delete its copy of the session")
            .and_then(|f| {
                if f.can_delete {
                    session.ok_or_else(|| {
                        SessionError::Conflict("the session has no agent session yet".into())
                    })
                } else {
                    Err(SessionError::Conflict(
                        "this agent does not offer deleting sessions (session/delete)".into(),
                    ))
                }
            });
        let session = match checked {
            Ok(session) => session,
            Err(error) => {
                let _ = reply.send(Err(error));
                return;
            }
        };
        self.ask(reply, |agent| {
            agent.client.delete_session(&session, Pending::Delete)
        });
    }

    /// `logout` (v2 `auth/logout`); once the agent answers, the session needs a sign-in.
    pub(super) fn logout(&mut self, reply: ValueReply) {
        match self.features("sign out") {
            Ok(f) if f.can_logout => {}
            Ok(_) => {
                let _ = reply.send(Err(SessionError::Conflict(
                    "this agent does not offer signing out (logout)".into(),
                )));
                return;
            }
            Err(error) => {
                let _ = reply.send(Err(error));
                return;
            }
        }
        self.ask(reply, |agent| agent.client.logout(Pending::Logout));
    }

    /// The agent signed the user out: prompts wait for a sign-in, and the page shows the
    /// agent's sign-in methods again.
    pub(super) fn signed_out(&mut self) {
        self.startup.phase = Phase::NeedsAuth;
        self.v1_turn_running = false;
        self.needs_auth("Signed out of the agent: sign in again to continue.".into());
    }
}
