//! The session lifecycle of schema 1.20.0 as the manager offers it (issue #26): a session's
//! additional directories checked at creation, a fork (a new Spindle session on the agent
//! session `session/fork` made, recorded with its parent), the agent's copy deleted
//! (`session/delete`) before Spindle's, and signing out of the agent (`logout`). The calls to
//! the agent are the session task's (`task/lifecycle.rs`).

use std::path::Path;

use serde_json::Value;

use super::{LiveSession, SessionManager, SessionSummary};
use crate::error::SessionError;
use crate::handshake::OpenMode;
use crate::task::Command;

/// The most additional directories a session takes.
pub const MAX_ADDITIONAL_DIRECTORIES: usize = 32;

/// The additional directories a new session asks for, checked: each one absolute and an
/// existing directory (nothing is resolved against anything), given as its canonical path,
/// each once in the order asked. A bad one is refused, named.
pub(crate) fn check_directories(asked: &[String]) -> Result<Vec<String>, SessionError> {
    if asked.len() > MAX_ADDITIONAL_DIRECTORIES {
        return Err(SessionError::invalid_params(format!(
            "{} additional directories: at most {MAX_ADDITIONAL_DIRECTORIES}",
            asked.len()
        )));
    }
    let mut checked: Vec<String> = Vec::new();
    for dir in asked {
        let refuse = |why: &str| {
            SessionError::invalid_params(format!("additional directory {dir:?}: {why}"))
        };
        if dir.trim().is_empty() {
            return Err(refuse("empty"));
        }
        if !Path::new(dir).is_absolute() {
            return Err(refuse("not an absolute path"));
        }
        let canonical = Path::new(dir)
            .canonicalize()
            .map_err(|_| refuse("no such directory"))?;
        if !canonical.is_dir() {
            return Err(refuse("not a directory"));
        }
        let canonical = canonical
            .to_str()
            .ok_or_else(|| refuse("not a UTF-8 path"))?
            .to_string();
        if !checked.contains(&canonical) {
            checked.push(canonical);
        }
    }
    Ok(checked)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additional_directories_are_absolute_existing_and_given_once() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let dir = dir.to_str().unwrap().to_string();
        let with_slash = format!("{dir}/");
        assert_eq!(
            check_directories(&[dir.clone(), with_slash]).unwrap(),
            vec![dir.clone()]
        );
        for (bad, why) in [
            ("relative/dir", "not an absolute path"),
            ("", "empty"),
            ("/no/such/spindle/dir", "no such directory"),
            ("/bin/sh", "not a directory"),
        ] {
            let message = check_directories(&[bad.to_string()]).unwrap_err().message();
            assert!(message.contains(why), "{bad}: {message}");
            assert!(message.contains(&format!("{bad:?}")), "{message}");
        }
        let many = vec![dir; MAX_ADDITIONAL_DIRECTORIES + 1];
        assert!(
            check_directories(&many)
                .unwrap_err()
                .message()
                .contains("at most")
        );
    }
}
