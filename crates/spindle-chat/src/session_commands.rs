//! Spindle's own session commands: `/fork` (the chat moves to a new session
//! branching from the current one), `/delete` (the agent's copy, after a
//! y/N confirmation; the chat then ends) and `/logout`. Each is checked
//! against what the agent advertised first: a missing capability is named,
//! never skipped silently.
//!
//! There is no `/close`, and the chat never sends `session/close`: a local
//! agent process ends with the chat, which frees everything the session
//! held, and a session reached through `--connect` or `--attach` lives on
//! its server, which other clients may share and which closes it itself.

use serde_json::{Value, json};
use spindle_protocol::ClientError;
use spindle_wire::client_methods::SESSION_FORK;

use super::args::exit;
use super::front;
use super::interactive::Chat;
use super::outcome::AgentErrorText;

/// The session commands (a subset of [`super::completion::OWN_COMMANDS`]).
pub(super) const SESSION_COMMANDS: [&str; 3] = ["fork", "delete", "logout"];

impl Chat<'_> {
    /// Handles `/fork`, `/delete` or `/logout`; `false` for any other line.
    pub(super) async fn session_command(&mut self, line: &str) -> bool {
        let Some((name, _)) = super::completion::split_command(line.trim()) else {
            return false;
        };
        if !SESSION_COMMANDS.contains(&name) {
            return false;
        }
        if !self.stdin_tty {
            self.front.note(&format!("you> {}", line.trim()));
        }
        let Some(features) = self.conn.init.as_ref().map(|i| i.session_features()) else {
            return true;
        };
        match name {
            "fork" if features.can_fork => self.fork().await,
            "delete" if features.can_delete => {
                self.confirm_delete = true;
                self.front.note(&format!(
                    "delete session {} from the agent (session/delete)? this cannot be undone [y/N]",
                    self.conn.session_id
                ));
            }
            "logout" if features.can_logout => self.logout().await,
            _ => {
                let missing = self.missing_capability(name);
                self.front.note(&format!(
                    "cannot {name}: the agent does not offer {missing}"
                ));
            }
        }
        true
    }

    /// The capability a refused session command needs, as the agent's
    /// version spells it.
    fn missing_capability(&self, name: &str) -> String {
        let v2 = self.conn.protocol_version >= 2;
        match (name, v2) {
            ("fork", false) => "session/fork (agentCapabilities.sessionCapabilities.fork)".into(),
            ("fork", true) => "session/fork (capabilities.session.fork)".into(),
            ("delete", false) => {
                "session/delete (agentCapabilities.sessionCapabilities.delete)".into()
            }
            ("delete", true) => "session/delete (capabilities.session.delete)".into(),
            ("logout", false) => "logout (agentCapabilities.auth.logout)".into(),
            _ => "auth/logout (it advertises no authMethods, so there is no login to end)".into(),
        }
    }

    /// The answer to `/delete`'s question: `Some(status)` ends the chat
    /// (the session is gone).
    pub(super) async fn delete_answered(&mut self, answer: &str) -> Option<u8> {
        self.confirm_delete = false;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            self.front.note("not deleted");
            return None;
        }
        let session = self.conn.session_id.clone();
        match self.conn.client.delete_session(&session).await {
            Ok(_) => {
                self.conn.deleted = true;
                let mut note = format!("deleted session {session} (the agent's copy)");
                if let Some(path) = &self.args.record {
                    // The recording is a file the user asked for by name: kept.
                    note.push_str(&format!("; the recording {} is kept", path.display()));
                }
                self.front.note(&note);
                Some(exit::END_TURN)
            }
            Err(error) => {
                self.command_failed("deleting the session", &error);
                None
            }
        }
    }

    /// The input ended: an open `/delete` question is answered no (`true`
    /// when there was one).
    pub(super) fn delete_unanswered(&mut self) -> bool {
        if !self.confirm_delete {
            return false;
        }
        self.confirm_delete = false;
        self.front
            .note("not deleted: the input ended before a y/N answer");
        true
    }

    /// `session/fork` of the current session; the chat goes on in the fork.
    async fn fork(&mut self) {
        let old = self.conn.session_id.clone();
        let cwd = self.conn.cwd.to_string_lossy().into_owned();
        let mcp = self.conn.mcp_servers.clone();
        let dirs = self.conn.additional_directories.clone();
        let result = self.conn.client.fork_session(&old, &cwd, &mcp, &dirs).await;
        let (new, raw) = match result {
            Ok(forked) => forked,
            Err(error) => {
                self.command_failed("forking the session", &error);
                return;
            }
        };
        // The transcript follows the fork (the engine adopts the answered
        // session, as it does a new one).
        let id = format!("spindle-fork-{new}");
        let request = json!({"jsonrpc": "2.0", "id": id, "method": SESSION_FORK,
                             "params": {"sessionId": old, "cwd": cwd}});
        let result: Value = serde_json::from_str(raw.get()).unwrap_or_default();
        let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        let applied = self.engine.apply_client_line(&request.to_string());
        self.apply_ops(applied.ops);
        let applied = self.engine.apply_agent_line(&response.to_string());
        self.apply_ops(applied.ops);
        self.conn.adopt_session_result(&result);
        self.conn.session_id = new.clone();
        self.front.note(&format!(
            "forked session {old} into {new}; this chat goes on in {new}"
        ));
        let can_reopen = self
            .conn
            .init
            .as_ref()
            .is_some_and(|i| i.can_load_session() || i.can_resume_session());
        let version = self.conn.protocol_version;
        for (what, session) in [("the original", &old), ("the fork", &new)] {
            if let Some(command) = front::resume_command(self.args, session, version, can_reopen) {
                self.front.note(&format!("resume {what} with: {command}"));
            }
        }
    }

    /// v1 `logout` / v2 `auth/logout`.
    async fn logout(&mut self) {
        match self.conn.client.logout().await {
            Ok(_) => self
                .front
                .note("logged out; the agent may ask to sign in again (/auth lists its methods)"),
            Err(error) => self.command_failed("logging out", &error),
        }
    }

    fn command_failed(&mut self, what: &str, error: &ClientError) {
        let text = AgentErrorText::from_client_error(&format!("{what} failed"), error);
        self.front.error(&text);
    }
}
