//! The session lifecycle of schema 1.20.0 as the manager offers it (issue #26): a fork (a new Spindle session on the agent
//! session `session/fork` made, recorded with its parent), the agent's copy deleted
//! (`session/delete`) before Spindle's, and signing out of the agent (`logout`). The calls to
//! the agent are the session task's (`task/lifecycle.rs`).

use serde_json::Value;

use super::summary::SessionSummary;
use super::{LiveSession, SessionManager};
use crate::error::SessionError;
use crate::handshake::OpenMode;
use crate::task::Command;

impl SessionManager {
    /// Forks session `id`: its agent forks the open agent session (`session/fork`, refused
    /// with a conflict when the agent does not offer it), and a new Spindle session opens the
    /// forked agent session with the same agent, directory, MCP servers and additional
    /// directories, recorded with its parent. The new session loads the fork (its history
    /// becomes the transcript) when the agent can load, else resumes it.
    pub async fn fork(&self, id: i64) -> Result<SessionSummary, SessionError> {
        let live = self.get(id).await?;
        let stored = self
            .store
            .off_worker(|| self.store.session(id))
            .map_err(SessionError::storage)?
            .ok_or_else(|| SessionError::NotFound(format!("no session {id}")))?;
        let facts = live.agent_info().await?;
        let forked = live.fork_agent_session().await?;
        let agent_session = forked
            .get("sessionId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| SessionError::Agent {
                code: None,
                message: "the agent answered session/fork without a sessionId".into(),
            })?
            .to_string();
        let open = if facts["canLoad"] == true {
            OpenMode::Load
        } else {
            OpenMode::Resume
        };
        let agent = match &stored.agent {
            Some(agent) => agent.clone(),
            None => self.settings.choose(None)?.recorded(),
        };
        let setup = spindle_store::SessionSetup {
            parent: Some(id),
            ..stored.setup.clone()
        };
        let own_cwd = (live.cwd() != self.settings.cwd).then(|| live.cwd().to_path_buf());
        self.start_new(
            &stored.title,
            agent,
            setup,
            Some(agent_session),
            open,
            own_cwd,
        )
        .await
    }

    /// Deletes session `id` and, first, the agent's copy of it (`session/delete`): when the
    /// agent refuses or cannot, Spindle's copy is kept and the refusal is the answer.
    pub async fn delete_with_agent(&self, id: i64) -> Result<(), SessionError> {
        let live = self.get(id).await?;
        live.delete_agent_session()
            .await
            .map_err(|error| match error {
                SessionError::Agent { code, message } => SessionError::Agent {
                    code,
                    message: format!("{message}; Spindle's copy of the session is kept"),
                },
                other => other,
            })?;
        self.delete(id).await
    }
}

impl LiveSession {
    /// `session/fork` of the open agent session: the agent's answer (`{sessionId, ...}`).
    pub async fn fork_agent_session(&self) -> Result<Value, SessionError> {
        self.call_value(Command::ForkAgentSession).await
    }

    /// `session/delete` of the session's agent session.
    pub async fn delete_agent_session(&self) -> Result<Value, SessionError> {
        self.call_value(Command::DeleteAgentSession).await
    }

    /// Signs out of the agent (`logout`, v2 `auth/logout`); the session then waits for a
    /// sign-in again.
    pub async fn logout(&self) -> Result<Value, SessionError> {
        self.call_value(Command::Logout).await
    }
}
