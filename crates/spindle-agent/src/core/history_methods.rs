//! Authentication and session history: `authenticate` / `auth/login`, the
//! `auth_required` gate, `session/list` (sessions of this process and of
//! earlier ones from `--state-dir`), `session/load` (v1, replays the
//! history) and `session/resume` (v1 without replay; v2 with replay when
//! `replayFrom` asks for it), and the recording of each session's history.

use serde_json::{Value, json};
use spindle_wire::client_methods::{AUTH_REQUIRED_CODE, fields};
use spindle_wire::tags::UpdateTag;

use super::handshake::AUTH_METHOD_ID;
use super::{AgentCore, Session};
use crate::history::{self, HistoryEntry, PersistedLine, TurnItem};
use crate::scenarios;
use crate::updates;
use crate::wire::{Version, codes};

/// Sessions per `session/list` page.
const LIST_PAGE: usize = 50;

impl AgentCore {
    /// The wall-clock time now, when the driver gave one.
    pub(super) fn now_iso(&self) -> Option<String> {
        self.config
            .clock_origin_unix_ms
            .map(|origin| history::iso8601(origin + self.now_ms))
    }

    /// Queues a history record of session `session_id` for the driver.
    pub(super) fn persist(&mut self, session_id: &str, record: &Value) {
        if self.config.state_dir.is_some() && history::safe_session_id(session_id) {
            self.persisted.push(PersistedLine {
                session_id: session_id.to_owned(),
                line: record.to_string(),
            });
        }
    }

    /// `false` (and the `auth_required` error sent) while authentication
    /// is required and has not happened.
    pub(super) fn check_authenticated(&mut self, id: &Value) -> bool {
        if !self.authenticated {
            let message = format!(
                "Authentication required: call {} with methodId \"{AUTH_METHOD_ID}\" first",
                match self.conn().version {
                    Version::V1 => spindle_wire::client_methods::AUTHENTICATE,
                    Version::V2 => spindle_wire::client_methods::AUTH_LOGIN,
                }
            );
            self.send_error(id, AUTH_REQUIRED_CODE, &message);
        }
        self.authenticated
    }

    pub(super) fn authenticate(&mut self, id: &Value, params: &Value) {
        match params.get(fields::METHOD_ID).and_then(Value::as_str) {
            Some(AUTH_METHOD_ID) => {
                self.authenticated = true;
                self.send_response(id, json!({}));
            }
            Some(other) => {
                let message = format!(
                    "unknown authentication method {other:?}; this agent offers \"{AUTH_METHOD_ID}\""
                );
                self.send_error(id, codes::INVALID_PARAMS, &message);
            }
            None => self.send_error(id, codes::INVALID_PARAMS, "methodId must be a string"),
        }
    }

    /// v1 `logout`, v2 `auth/logout`: authentication is required again
    /// (when it is at all, `--require-auth`).
    pub(super) fn logout(&mut self, id: &Value) {
        self.authenticated = !self.config.require_auth;
        self.send_response(id, json!({}));
    }

    /// `session/list`: this process's sessions and the stored ones, newest
    /// first, optionally only those in `cwd`, [`LIST_PAGE`] per page.
    pub(super) fn list_sessions(&mut self, id: &Value, params: &Value) {
        let cwd = params.get(fields::CWD).and_then(Value::as_str);
        let offset = match params.get(fields::CURSOR) {
            None | Some(Value::Null) => 0,
            Some(cursor) => match cursor.as_str().and_then(|c| c.parse::<usize>().ok()) {
                Some(offset) => offset,
                None => {
                    self.send_error(id, codes::INVALID_PARAMS, "unknown cursor");
                    return;
                }
            },
        };
        let info = |sid: &str,
                    dir: &str,
                    extra: &[String],
                    title: &Option<String>,
                    at: &Option<String>| {
            let mut entry = json!({fields::SESSION_ID: sid, fields::CWD: dir});
            if !extra.is_empty() {
                entry[fields::ADDITIONAL_DIRECTORIES] = json!(extra);
            }
            if let Some(title) = title {
                entry[fields::TITLE] = json!(title);
            }
            if let Some(at) = at {
                entry[fields::UPDATED_AT] = json!(at);
            }
            entry
        };
        let mut all: Vec<Value> = self
            .sessions
            .iter()
            .rev()
            .filter(|s| !s.deleted)
            .map(|s| {
                let extra = &s.state.additional_directories;
                info(&s.id, &s.cwd, extra, &s.title, &s.updated_at)
            })
            .chain(self.stored.iter().map(|s| {
                let extra = &s.additional_directories;
                info(&s.session_id, &s.cwd, extra, &s.title, &s.updated_at)
            }))
            .filter(|e| cwd.is_none_or(|c| e[fields::CWD] == c))
            .collect();
        // Newest first (ISO times sort as text); sessions without a time keep their order, last.
        all.sort_by(|a, b| {
            let at = |e: &Value| e[fields::UPDATED_AT].as_str().map(str::to_owned);
            match (at(a), at(b)) {
                (Some(x), Some(y)) => y.cmp(&x),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            }
        });
        let page: Vec<Value> = all.iter().skip(offset).take(LIST_PAGE).cloned().collect();
        let mut result = json!({fields::SESSIONS: page});
        if offset + LIST_PAGE < all.len() {
            result[fields::NEXT_CURSOR] = json!((offset + LIST_PAGE).to_string());
        }
        self.send_response(id, result);
    }

    /// The session `params` names, from memory or from the stored ones
    /// (then opened in this process); `None` after an error was sent.
    fn open_session(&mut self, id: &Value, params: &Value) -> Option<usize> {
        if !self.check_authenticated(id) {
            return None;
        }
        let Some(sid) = params.get(fields::SESSION_ID).and_then(Value::as_str) else {
            self.send_error(id, codes::INVALID_PARAMS, "sessionId must be a string");
            return None;
        };
        let cwd = params
            .get(fields::CWD)
            .and_then(Value::as_str)
            .filter(|c| c.starts_with('/'));
        if let Some(s) = self.session_index(params) {
            if let Some(cwd) = cwd {
                self.sessions[s].cwd = cwd.to_owned();
            }
            self.sessions[s].closed = false;
            return Some(s);
        }
        let Some(at) = self.stored.iter().position(|s| s.session_id == sid) else {
            let sid = sid.to_owned();
            self.send_not_found(id, &sid);
            return None;
        };
        let stored = self.stored.remove(at);
        let mut session = Session::new(
            stored.session_id,
            cwd.map_or(stored.cwd, str::to_owned),
            self.config.owned_id_tag.as_deref(),
        );
        session.title = stored.title;
        session.updated_at = stored.updated_at;
        session.state.additional_directories = stored.additional_directories;
        session.history = stored.entries;
        for (config_id, value) in &stored.config {
            session.state.set_config_value(config_id, value);
        }
        self.sessions.push(session);
        Some(self.sessions.len() - 1)
    }

    /// Replays session `s`'s history, then its commands list.
    fn replay(&mut self, s: usize) {
        let version = self.conn().version;
        let session = &mut self.sessions[s];
        let state = &mut session.state;
        let lines = history::replay_updates(version, &session.history, &mut |p| state.next_id(p));
        let sid = session.id.clone();
        for update in lines {
            self.send_update(&sid, update);
        }
    }

    fn mode_result(&self, s: usize) -> Value {
        let mut result = json!({fields::CONFIG_OPTIONS: self.config_options_of(s)});
        if self.conn().version == Version::V1 {
            result["modes"] = scenarios::modes_state(&self.sessions[s].state.mode);
        }
        result
    }

    /// v1 `session/load`: the history as updates, the commands, then the answer.
    pub(super) fn load_session(&mut self, id: &Value, params: &Value) {
        let Some(s) = self.open_session(id, params) else {
            return;
        };
        self.sessions[s].state.mcp_servers = crate::mcp_report::describe_received(params);
        if params.get(fields::ADDITIONAL_DIRECTORIES).is_some() {
            // Present: the complete list for the session from now on.
            self.sessions[s].state.additional_directories =
                super::handshake::additional_directories_of(params);
        }
        self.replay(s);
        let sid = self.sessions[s].id.clone();
        let version = self.conn().version;
        self.send_update(
            &sid,
            updates::available_commands(version, &scenarios::COMMANDS),
        );
        let result = self.mode_result(s);
        self.send_response(id, result);
    }

    /// `session/resume`: v1 without replay; v2 replays when `replayFrom` is
    /// `{"type":"start"}` (other cursors are refused) and sends the state
    /// snapshot before its answer.
    pub(super) fn resume_session(&mut self, id: &Value, params: &Value) {
        let version = self.conn().version;
        let replay = match params.get(fields::REPLAY_FROM) {
            None | Some(Value::Null) => false,
            Some(from) if version == Version::V2 && from["type"] == "start" => true,
            Some(from) => {
                let message = format!(
                    "unsupported replayFrom {from} (this agent replays only from {{\"type\":\"start\"}})"
                );
                self.send_error(id, codes::INVALID_PARAMS, &message);
                return;
            }
        };
        let Some(s) = self.open_session(id, params) else {
            return;
        };
        self.sessions[s].state.mcp_servers = crate::mcp_report::describe_received(params);
        if params.get(fields::ADDITIONAL_DIRECTORIES).is_some() {
            // Present: the complete list for the session from now on.
            self.sessions[s].state.additional_directories =
                super::handshake::additional_directories_of(params);
        }
        if replay {
            self.replay(s);
        }
        let sid = self.sessions[s].id.clone();
        self.send_update(
            &sid,
            updates::available_commands(version, &scenarios::COMMANDS),
        );
        if version == Version::V2 {
            let state = if self.sessions[s].turn.is_some() {
                "running"
            } else {
                "idle"
            };
            self.send_update(&sid, updates::state(state, None));
        }
        let result = self.mode_result(s);
        self.send_response(id, result);
    }

    /// Records a prompt in session `s`'s history.
    pub(super) fn record_prompt(&mut self, s: usize, blocks: &[Value]) {
        let at = self.now_iso();
        let session = &mut self.sessions[s];
        if session.title.is_none() {
            session.title = history::title_from(blocks);
        }
        session.history.push(HistoryEntry::User(blocks.to_vec()));
        if at.is_some() {
            session.updated_at = at.clone();
        }
        let sid = session.id.clone();
        self.persist(&sid, &history::user_record(blocks, at.as_deref()));
    }

    /// Records a config change (`mode`, `model`, `effort`) of session `s`.
    pub(super) fn record_config(&mut self, s: usize, config_id: &str) {
        let at = self.now_iso();
        let sid = self.sessions[s].id.clone();
        let value = self.sessions[s].state.config_value(config_id);
        self.persist(
            &sid,
            &history::config_record(config_id, &value, at.as_deref()),
        );
    }

    /// Follows the agent's reply text, tool calls and plan in the running
    /// turn of session `s`.
    pub(super) fn track_reply(&mut self, s: usize, update: &Value) {
        let Some(turn) = self.sessions[s].turn.as_mut() else {
            return;
        };
        history::track_update(&mut turn.items, update);
        let tag = update["sessionUpdate"].as_str().and_then(UpdateTag::parse);
        let id = update["messageId"].as_str().unwrap_or("").to_owned();
        let text_of = |block: &Value| block["text"].as_str().unwrap_or("").to_owned();
        let slot = |items: &mut Vec<TurnItem>, id: String| -> usize {
            match items
                .iter()
                .position(|i| matches!(i, TurnItem::Reply(m, _) if *m == id))
            {
                Some(i) => i,
                None => {
                    items.push(TurnItem::Reply(id, String::new()));
                    items.len() - 1
                }
            }
        };
        match tag {
            Some(UpdateTag::AgentMessageChunk) => {
                let i = slot(&mut turn.items, id);
                if let TurnItem::Reply(_, text) = &mut turn.items[i] {
                    text.push_str(&text_of(&update["content"]));
                }
            }
            Some(UpdateTag::AgentMessage) => {
                let i = slot(&mut turn.items, id);
                let blocks = update["content"].as_array().cloned().unwrap_or_default();
                if let TurnItem::Reply(_, text) = &mut turn.items[i] {
                    *text = blocks.iter().map(text_of).collect();
                }
            }
            Some(UpdateTag::AgentMessageClear) => {
                let i = slot(&mut turn.items, id);
                if let TurnItem::Reply(_, text) = &mut turn.items[i] {
                    text.clear();
                }
            }
            _ => {}
        }
    }

    /// Moves the finished turn's replies, tool calls and plan into session
    /// `s`'s history.
    pub(super) fn record_turn(&mut self, s: usize, items: Vec<TurnItem>) {
        let at = self.now_iso();
        let sid = self.sessions[s].id.clone();
        for item in items {
            let (record, entry) = match item {
                TurnItem::Reply(_, text) if text.is_empty() => continue,
                TurnItem::Reply(_, text) => (
                    history::agent_record(&text, at.as_deref()),
                    HistoryEntry::Agent(text),
                ),
                TurnItem::Tool(_, tool) => (
                    history::tool_record(&tool, at.as_deref()),
                    HistoryEntry::Tool(tool),
                ),
                TurnItem::Plan(entries) => (
                    history::plan_record(&entries, at.as_deref()),
                    HistoryEntry::Plan(entries),
                ),
            };
            self.persist(&sid, &record);
            self.sessions[s].history.push(entry);
        }
        if at.is_some() {
            self.sessions[s].updated_at = at;
        }
    }
}
