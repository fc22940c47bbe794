//! The typed session calls of [`ClientCore`] besides new/prompt/cancel:
//! authentication, modes, config options and session history (list, load,
//! resume), each checked against what the agent advertised and spelled per
//! negotiated version:
//!
//! | call | v1 | v2 |
//! |---|---|---|
//! | [`ClientCore::authenticate`] | `authenticate {methodId}` | `auth/login {methodId}` |
//! | [`ClientCore::set_mode`] | `session/set_mode {sessionId, modeId}` | none: modes are config options (category `mode`) |
//! | [`ClientCore::set_config_option`] | `{configId, value}` (id) / `{type:"boolean", value}` | `{configId, type:"id", value}` / `{type:"boolean", value}` |
//! | [`ClientCore::list_sessions`] | `session/list` behind `sessionCapabilities.list` | `session/list` (baseline with `capabilities.session`) |
//! | [`ClientCore::load_session`] | `session/load` behind `loadSession` | `session/resume` with `replayFrom: {type: "start"}` |
//! | [`ClientCore::close_session`] | `session/close` behind `sessionCapabilities.close` | `session/close` (baseline) |
//! | [`ClientCore::resume_session`] | `session/resume` behind `sessionCapabilities.resume` (no replay) | `session/resume`, optional `replayFrom` |
//! | fork, delete, logout, additional directories | see [`super::lifecycle`] | |
//! | [`ClientCore::attach_session`] | `session/attach {sessionId, role, historyPolicy}` (Spindle's multi-client extension of the remote transport) | same |

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use spindle_wire::client_methods::{
    AUTH_LOGIN, AUTHENTICATE, SESSION_CLOSE, SESSION_LIST, SESSION_LOAD, SESSION_RESUME,
    SESSION_SET_CONFIG_OPTION, SESSION_SET_MODE, fields,
};

use super::core::{ClientCore, Purpose};
use super::lifecycle::directories_param;
use super::types::ClientError;
use crate::jsonrpc::{RequestId, to_raw};

/// The role a client joins a running session with
/// ([`ClientCore::attach_session`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttachRole {
    /// Prompts, cancels, answers permission questions, changes settings.
    #[default]
    Controller,
    /// Sees everything, changes nothing (changing requests are refused).
    Observer,
}

impl AttachRole {
    /// The wire value.
    pub fn wire(self) -> &'static str {
        match self {
            AttachRole::Controller => spindle_wire::remote::ROLE_CONTROLLER,
            AttachRole::Observer => spindle_wire::remote::ROLE_OBSERVER,
        }
    }
}

/// What an attached session sends first ([`ClientCore::attach_session`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HistoryPolicy {
    /// The whole session so far as updates, then the open permission
    /// questions.
    #[default]
    Full,
    /// Only the open permission questions.
    PendingOnly,
    /// Nothing: live messages only.
    None,
}

impl HistoryPolicy {
    /// The wire value.
    pub fn wire(self) -> &'static str {
        use spindle_wire::remote::{HISTORY_FULL, HISTORY_NONE, HISTORY_PENDING_ONLY};
        match self {
            HistoryPolicy::Full => HISTORY_FULL,
            HistoryPolicy::PendingOnly => HISTORY_PENDING_ONLY,
            HistoryPolicy::None => HISTORY_NONE,
        }
    }
}

/// One session the agent listed in `session/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSessionInfo {
    /// The agent's session id (to load or resume).
    pub session_id: String,
    /// The session's working directory (absolute).
    pub cwd: String,
    /// A title, when the agent has one.
    pub title: Option<String>,
    /// When the session last changed (ISO 8601), when the agent says.
    pub updated_at: Option<String>,
    /// The session's additional workspace roots (`additionalDirectories`,
    /// complete and in order; empty when the agent reports none).
    pub additional_directories: Vec<String>,
    /// The whole `SessionInfo` object, as sent.
    pub raw: Value,
}

/// The result of `session/list`: one page of sessions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionList {
    /// The sessions on this page (entries without `sessionId` or `cwd` are
    /// skipped, as the schema allows).
    pub sessions: Vec<AgentSessionInfo>,
    /// The cursor of the next page, if there is one.
    pub next_cursor: Option<String>,
}

impl SessionList {
    /// Reads a `session/list` result.
    pub fn from_result(result: &RawValue) -> Result<SessionList, ClientError> {
        let value: Value = serde_json::from_str(result.get())
            .map_err(|e| ClientError::Protocol(format!("session/list result: {e}")))?;
        let Some(items) = value.get(fields::SESSIONS).and_then(Value::as_array) else {
            return Err(ClientError::Protocol(
                "session/list result without a sessions array".into(),
            ));
        };
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        let sessions = items
            .iter()
            .filter_map(|item| {
                Some(AgentSessionInfo {
                    session_id: text(item, fields::SESSION_ID)?,
                    cwd: text(item, fields::CWD)?,
                    title: text(item, fields::TITLE),
                    updated_at: text(item, fields::UPDATED_AT),
                    additional_directories: item
                        .get(fields::ADDITIONAL_DIRECTORIES)
                        .and_then(Value::as_array)
                        .map(|dirs| {
                            dirs.iter()
                                .filter_map(|d| d.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                    raw: item.clone(),
                })
            })
            .collect();
        Ok(SessionList {
            sessions,
            next_cursor: text(&value, fields::NEXT_CURSOR),
        })
    }
}

fn raw(value: &Value) -> Result<Box<RawValue>, ClientError> {
    to_raw(value).map_err(|e| ClientError::Protocol(e.to_string()))
}

/// The value part of `session/set_config_option` params for `value` (a
/// string id or a boolean) in `version`.
fn config_value(version: u16, value: &Value) -> Result<Map<String, Value>, ClientError> {
    let mut out = Map::new();
    match value {
        Value::Bool(_) => {
            out.insert("type".into(), json!("boolean"));
        }
        Value::String(_) if version >= 2 => {
            out.insert("type".into(), json!("id"));
        }
        Value::String(_) => {}
        other => {
            return Err(ClientError::Protocol(format!(
                "a config option value is a value id (string) or a boolean, not {other}"
            )));
        }
    }
    out.insert(fields::VALUE.into(), value.clone());
    Ok(out)
}

impl<T> ClientCore<T> {
    /// Authenticates with one of the agent's advertised methods: v1
    /// `authenticate`, v2 `auth/login`. A method the agent did not
    /// advertise, or one of type `terminal` (which the client runs itself,
    /// never through this call), is refused with
    /// [`ClientError::Unsupported`].
    pub fn authenticate(&mut self, method_id: &str, data: T) -> Result<RequestId, ClientError> {
        let init = self.require_init()?;
        let methods = init.auth_methods();
        match methods.iter().find(|m| m.id == method_id) {
            None => {
                let known: Vec<&str> = methods.iter().map(|m| m.id.as_str()).collect();
                return Err(ClientError::Unsupported(if known.is_empty() {
                    format!("authentication method {method_id:?} (the agent advertises none)")
                } else {
                    format!(
                        "authentication method {method_id:?} (advertised: {})",
                        known.join(", ")
                    )
                }));
            }
            Some(m) if !m.via_authenticate() => {
                return Err(ClientError::Unsupported(format!(
                    "authentication method {method_id:?} through authenticate: it is of type {:?}, which the client runs itself",
                    m.kind
                )));
            }
            Some(_) => {}
        }
        let method = if init.protocol_version >= 2 {
            AUTH_LOGIN
        } else {
            AUTHENTICATE
        };
        let params = raw(&json!({ fields::METHOD_ID: method_id }))?;
        self.register(method, params, Purpose::Other, data)
    }

    /// v1 `session/set_mode`. In v2 modes are config options (category
    /// `mode`): use [`ClientCore::set_config_option`] with that option's id.
    pub fn set_mode(
        &mut self,
        session_id: &str,
        mode_id: &str,
        data: T,
    ) -> Result<RequestId, ClientError> {
        if self.require_init()?.protocol_version >= 2 {
            return Err(ClientError::Unsupported(
                "session/set_mode in protocol v2 (modes are config options there: set the option of category \"mode\")"
                    .into(),
            ));
        }
        let params = raw(&json!({ fields::SESSION_ID: session_id, fields::MODE_ID: mode_id }))?;
        self.register(SESSION_SET_MODE, params, Purpose::Other, data)
    }

    /// `session/set_config_option`: `value` is a value id (string) of a
    /// select option or a boolean; the version's spelling is chosen here.
    /// The result carries the session's complete `configOptions`.
    pub fn set_config_option(
        &mut self,
        session_id: &str,
        config_id: &str,
        value: &Value,
        data: T,
    ) -> Result<RequestId, ClientError> {
        let version = self.require_init()?.protocol_version;
        let mut params = Map::new();
        params.insert(fields::SESSION_ID.into(), json!(session_id));
        params.insert(fields::CONFIG_ID.into(), json!(config_id));
        params.extend(config_value(version, value)?);
        let params = raw(&Value::Object(params))?;
        self.register(SESSION_SET_CONFIG_OPTION, params, Purpose::Other, data)
    }

    /// `session/list`, optionally filtered by `cwd` (absolute) and from a
    /// page `cursor`; read the result with [`SessionList::from_result`].
    pub fn list_sessions(
        &mut self,
        cwd: Option<&str>,
        cursor: Option<&str>,
        data: T,
    ) -> Result<RequestId, ClientError> {
        let init = self.require_init()?;
        if !init.can_list_sessions() {
            return Err(ClientError::Unsupported(if init.protocol_version >= 2 {
                "session/list (the agent did not advertise capabilities.session)".into()
            } else {
                "session/list (needs agentCapabilities.sessionCapabilities.list)".into()
            }));
        }
        let mut params = Map::new();
        if let Some(cwd) = cwd {
            params.insert(fields::CWD.into(), json!(cwd));
        }
        if let Some(cursor) = cursor {
            params.insert(fields::CURSOR.into(), json!(cursor));
        }
        let params = raw(&Value::Object(params))?;
        self.register(SESSION_LIST, params, Purpose::Other, data)
    }

    /// Opens an earlier session with its history replayed as updates before
    /// the answer: v1 `session/load` (needs `loadSession`), v2
    /// `session/resume` with `replayFrom: {"type": "start"}`. Without
    /// additional directories: see [`ClientCore::load_session_with_directories`].
    pub fn load_session(
        &mut self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
        data: T,
    ) -> Result<RequestId, ClientError> {
        self.load_session_with_directories(session_id, cwd, mcp_servers, &[], data)
    }

    /// [`ClientCore::load_session`] with `additional_directories`, sent only
    /// when the agent accepts them (see [`super::lifecycle`]).
    pub fn load_session_with_directories(
        &mut self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
        additional_directories: &[String],
        data: T,
    ) -> Result<RequestId, ClientError> {
        let init = self.require_init()?;
        if init.protocol_version >= 2 {
            return self.resume_session_with_directories(
                session_id,
                cwd,
                mcp_servers,
                additional_directories,
                Some(&json!({"type": "start"})),
                data,
            );
        }
        if !init.can_load_session() {
            return Err(ClientError::Unsupported(
                "session/load (needs agentCapabilities.loadSession)".into(),
            ));
        }
        let directories = directories_param(init, additional_directories)?;
        let mut params = json!({
            fields::SESSION_ID: session_id,
            fields::CWD: cwd,
            fields::MCP_SERVERS: mcp_servers,
        });
        if let Some(d) = directories {
            params[fields::ADDITIONAL_DIRECTORIES] = d;
        }
        self.register_session(session_id);
        self.register(SESSION_LOAD, raw(&params)?, Purpose::Other, data)
    }

    /// `session/close` (v1 behind `sessionCapabilities.close`, v2 baseline):
    /// the agent ends the session's work and frees it.
    pub fn close_session(&mut self, session_id: &str, data: T) -> Result<RequestId, ClientError> {
        if !self.require_init()?.can_close_session() {
            return Err(ClientError::Unsupported(
                "session/close (needs agentCapabilities.sessionCapabilities.close; v2: capabilities.session)"
                    .into(),
            ));
        }
        let params = raw(&json!({ fields::SESSION_ID: session_id }))?;
        self.register(SESSION_CLOSE, params, Purpose::Other, data)
    }

    /// Joins a running session of a remote endpoint with Spindle's
    /// multi-client extension (`session/attach`: `spindle serve`'s and
    /// `spindle bridge --listen`'s `/acp`). The session is known from now
    /// on, so the history the server sends before its answer (`history`)
    /// and every live update after it are routed to it like a loaded
    /// session's, without "unknown session" diagnostics. The result is
    /// `{sessionId, role, lastEventId}`. Needs `initialize` first; whether
    /// the endpoint offers the extension shows in its answer (an endpoint
    /// without it answers method not found).
    pub fn attach_session(
        &mut self,
        session_id: &str,
        role: AttachRole,
        history: HistoryPolicy,
        data: T,
    ) -> Result<RequestId, ClientError> {
        use spindle_wire::remote::{HISTORY_POLICY, ROLE, SESSION_ATTACH};
        self.require_init()?;
        self.register_session(session_id);
        let params = raw(&json!({
            fields::SESSION_ID: session_id,
            ROLE: role.wire(),
            HISTORY_POLICY: history.wire(),
        }))?;
        self.register(SESSION_ATTACH, params, Purpose::Other, data)
    }

    /// `session/resume` (see [`InitializeOutcome::can_resume_session`](super::InitializeOutcome::can_resume_session));
    /// `replay_from` is v2 only. Without additional directories: see
    /// [`ClientCore::resume_session_with_directories`].
    pub fn resume_session(
        &mut self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
        replay_from: Option<&Value>,
        data: T,
    ) -> Result<RequestId, ClientError> {
        self.resume_session_with_directories(session_id, cwd, mcp_servers, &[], replay_from, data)
    }

    /// [`ClientCore::resume_session`] with `additional_directories`, sent
    /// only when the agent accepts them (see [`super::lifecycle`]).
    pub fn resume_session_with_directories(
        &mut self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
        additional_directories: &[String],
        replay_from: Option<&Value>,
        data: T,
    ) -> Result<RequestId, ClientError> {
        let init = self.require_init()?;
        let mut params = json!({
            fields::SESSION_ID: session_id,
            fields::CWD: cwd,
            fields::MCP_SERVERS: mcp_servers,
        });
        if !init.can_resume_session() {
            return Err(ClientError::Unsupported(if init.protocol_version == 1 {
                "session/resume (needs agentCapabilities.sessionCapabilities.resume)".into()
            } else {
                "session/resume (the agent did not advertise capabilities.session)".into()
            }));
        }
        if let Some(d) = directories_param(init, additional_directories)? {
            params[fields::ADDITIONAL_DIRECTORIES] = d;
        }
        if let Some(r) = replay_from {
            if init.protocol_version == 1 {
                return Err(ClientError::Unsupported(
                    "replay on v1 session/resume (use load_session)".into(),
                ));
            }
            params[fields::REPLAY_FROM] = r.clone();
        }
        self.register_session(session_id);
        self.register(SESSION_RESUME, raw(&params)?, Purpose::Other, data)
    }
}
