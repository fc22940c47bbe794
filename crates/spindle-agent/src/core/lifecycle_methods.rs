//! `session/fork` and `session/delete`.
//!
//! A fork is a new session whose history, config values and id counter are
//! copies of the source's at the time of the fork (a session of this process
//! or a stored one from `--state-dir`); later turns of either never show in
//! the other. Its title is the source's with " (fork)" after it, announced
//! with a `session_info_update` after the answer. With `--state-dir` the
//! fork gets its own file, the source's history copied into it.
//!
//! A title the agent announces in a `session_info_update` (the `tools`
//! scenario does) replaces the one taken from the first prompt.
//!
//! A delete forgets the session: it is listed no more and loading, resuming
//! or forking it is answered -32002 Resource not found; a running turn is
//! cancelled first. With `--state-dir` the driver removes its file
//! ([`AgentCore::take_deleted`]).

use serde_json::{Value, json};
use spindle_wire::client_methods::{RESOURCE_NOT_FOUND_CODE, RESOURCE_NOT_FOUND_MESSAGE, fields};
use spindle_wire::tags;

use super::handshake::additional_directories_of;
use super::{AgentCore, Session};
use crate::history::{self, HistoryEntry};
use crate::scenarios;
use crate::turn_context::SessionState;
use crate::updates;
use crate::wire::{Version, codes};

/// What a fork copies from its source.
struct ForkSource {
    state: SessionState,
    history: Vec<HistoryEntry>,
    title: Option<String>,
}

impl AgentCore {
    /// The session id of `params`, or `None` after an error was sent.
    fn session_id_param(&mut self, id: &Value, params: &Value) -> Option<String> {
        let sid = params.get(fields::SESSION_ID).and_then(Value::as_str);
        if sid.is_none() {
            self.send_error(id, codes::INVALID_PARAMS, "sessionId must be a string");
        }
        sid.map(str::to_owned)
    }

    /// -32002 for a session this agent does not know (any more).
    pub(super) fn send_not_found(&mut self, id: &Value, sid: &str) {
        let message = format!(
            "{RESOURCE_NOT_FOUND_MESSAGE}: no session {sid:?} (this agent knows it neither in memory nor in its state directory)"
        );
        self.send_error(id, RESOURCE_NOT_FOUND_CODE, &message);
    }

    fn fork_source(&self, sid: &str) -> Option<ForkSource> {
        if let Some(s) = self.sessions.iter().find(|s| s.id == sid && !s.deleted) {
            return Some(ForkSource {
                state: s.state.clone(),
                history: s.history.clone(),
                title: s.title.clone(),
            });
        }
        let stored = self.stored.iter().find(|s| s.session_id == sid)?;
        let mut state = SessionState::new();
        if let Some(tag) = self.config.owned_id_tag.as_deref() {
            state.set_id_tag(tag);
        }
        for (config_id, value) in &stored.config {
            state.set_config_value(config_id, value);
        }
        Some(ForkSource {
            state,
            history: stored.entries.clone(),
            title: stored.title.clone(),
        })
    }

    /// `session/fork {sessionId, cwd, mcpServers?, additionalDirectories?}`.
    pub(super) fn fork_session(&mut self, id: &Value, params: &Value) {
        if !self.check_authenticated(id) {
            return;
        }
        let Some(source_id) = self.session_id_param(id, params) else {
            return;
        };
        let Some(cwd) = params
            .get(fields::CWD)
            .and_then(Value::as_str)
            .filter(|c| c.starts_with('/'))
            .map(str::to_owned)
        else {
            self.send_error(id, codes::INVALID_PARAMS, "cwd must be an absolute path");
            return;
        };
        let Some(source) = self.fork_source(&source_id) else {
            self.send_not_found(id, &source_id);
            return;
        };
        self.created += 1;
        let prefix = self.config.session_id_prefix.as_deref().unwrap_or("sess_");
        let session_id = format!("{prefix}{}", self.created);
        let mut session = Session::new(session_id, cwd, None);
        // The id counter goes on from the source's: a client showing both
        // histories in one transcript never sees a message id twice.
        session.state = source.state;
        session.state.mcp_servers = crate::mcp_report::describe_received(params);
        session.state.additional_directories = additional_directories_of(params);
        session.history = source.history;
        session.title = source.title.map(|t| format!("{t} (fork)"));
        session.updated_at = self.now_iso();
        let version = self.conn().version;
        let state = &session.state;
        let mut result = json!({
            fields::SESSION_ID: session.id,
            fields::CONFIG_OPTIONS: scenarios::config_options(version, &|c| state.config_value(c)),
        });
        if version == Version::V1 {
            result["modes"] = scenarios::modes_state(&session.state.mode);
        }
        self.send_response(id, result);
        self.persist_fork(&session);
        let sid = session.id.clone();
        let title = session.title.clone();
        self.sessions.push(session);
        self.send_update(
            &sid,
            updates::available_commands(version, &scenarios::COMMANDS),
        );
        if let Some(title) = title {
            self.send_update(
                &sid,
                json!({"sessionUpdate": tags::SESSION_INFO_UPDATE, "title": title}),
            );
        }
        if version == Version::V2 {
            self.send_update(&sid, updates::state("idle", None));
        }
    }

    /// A fork's file: its session record, its config values, the copied
    /// history, then its title.
    fn persist_fork(&mut self, session: &Session) {
        let at = session.updated_at.as_deref();
        let mut records = vec![history::session_record(
            &session.id,
            &session.cwd,
            &session.state.additional_directories,
            at,
        )];
        for config_id in ["mode", "model", "effort"] {
            let value = session.state.config_value(config_id);
            records.push(history::config_record(config_id, &value, at));
        }
        records.extend(
            session
                .history
                .iter()
                .map(|entry| history::entry_record(entry, at)),
        );
        if let Some(title) = &session.title {
            records.push(history::title_record(title, at));
        }
        for record in records {
            self.persist(&session.id, &record);
        }
    }

    /// A `session_info_update` title the agent announces for session `s`
    /// becomes its title in `session/list` (and in its state file).
    pub(super) fn track_title(&mut self, s: usize, update: &Value) {
        if update["sessionUpdate"] != tags::SESSION_INFO_UPDATE {
            return;
        }
        let Some(title) = update.get(fields::TITLE).and_then(Value::as_str) else {
            return;
        };
        self.sessions[s].title = Some(title.to_owned());
        let sid = self.sessions[s].id.clone();
        let at = self.now_iso();
        self.persist(&sid, &history::title_record(title, at.as_deref()));
    }

    /// `session/delete {sessionId}`.
    pub(super) fn delete_session(&mut self, id: &Value, params: &Value) {
        if !self.check_authenticated(id) {
            return;
        }
        let Some(sid) = self.session_id_param(id, params) else {
            return;
        };
        if let Some(s) = self.session_index(params) {
            self.cancel_turn(s);
            let session = &mut self.sessions[s];
            session.background.steps.clear();
            session.history.clear();
            session.deleted = true;
        } else if let Some(at) = self.stored.iter().position(|s| s.session_id == sid) {
            self.stored.remove(at);
        } else {
            self.send_not_found(id, &sid);
            return;
        }
        if self.config.state_dir.is_some() && history::safe_session_id(&sid) {
            self.deleted.push(sid);
        }
        self.send_response(id, json!({}));
    }
}
