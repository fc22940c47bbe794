//! The handshake and session creation: `initialize` (version, extension
//! opt-in and client capabilities, fixed for the connection) and
//! `session/new` (the session's opening program).

use serde_json::{Value, json};
use spindle_wire::extensions::Extensions;
use spindle_wire::meta::META_KEY;

use super::{AgentCore, Session};
use crate::history;
use crate::scenarios;
use crate::turn_context::{Connection, TurnCtx};
use crate::wire::{Version, codes};

/// The id of the one authentication method the agent advertises.
pub const AUTH_METHOD_ID: &str = "spindle-token";
/// Its name.
pub const AUTH_METHOD_NAME: &str = "Token";
/// Its description.
pub const AUTH_METHOD_DESCRIPTION: &str = "A built-in token: authenticating with it always succeeds (the reference agent checks only that the client authenticates before session/new when started with --require-auth).";

impl AgentCore {
    pub(super) fn initialize(&mut self, id: &Value, params: &Value) {
        if self.conn.is_some() {
            self.send_error(id, codes::INVALID_REQUEST, "already initialized");
            return;
        }
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_u64) else {
            self.send_error(
                id,
                codes::INVALID_PARAMS,
                "initialize needs an integer protocolVersion",
            );
            return;
        };
        let version = self.config.protocol.negotiate(requested);
        let ext = Extensions::from_initialize(params);
        let compaction = params
            .pointer("/clientCapabilities/session/compaction")
            .is_some_and(Value::is_object);
        let notices = params
            .pointer("/clientCapabilities/session/notices")
            .is_some_and(Value::is_object);
        // v1 client methods; v2 has none (its initialize may carry the v1
        // fields along for a v1 fallback, which do not count there).
        let v1_flag = |pointer: &str| {
            version == Version::V1 && params.pointer(pointer) == Some(&Value::Bool(true))
        };
        self.conn = Some(Connection {
            version,
            ext,
            compaction,
            notices,
            fs_read: v1_flag("/clientCapabilities/fs/readTextFile"),
            fs_write: v1_flag("/clientCapabilities/fs/writeTextFile"),
            terminal: v1_flag("/clientCapabilities/terminal"),
            elicitation_form: crate::scenarios::advertised_elicitation(version, params, "form"),
            elicitation_url: crate::scenarios::advertised_elicitation(version, params, "url"),
        });
        let meta = ext.to_meta();
        let info = json!({
            "name": "spindle-agent",
            "title": "Spindle reference agent",
            "version": env!("CARGO_PKG_VERSION"),
        });
        let result = match version {
            Version::V1 => json!({
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": true,
                    "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                    "sessionCapabilities": {
                        "close": {}, "list": {}, "resume": {}, "fork": {}, "delete": {},
                        "additionalDirectories": {},
                    },
                    // `logout` makes authentication required again (with --require-auth).
                    "auth": {"logout": {}},
                },
                "authMethods": [{
                    "id": AUTH_METHOD_ID,
                    "name": AUTH_METHOD_NAME,
                    "description": AUTH_METHOD_DESCRIPTION,
                }],
                "agentInfo": info,
                META_KEY: meta,
            }),
            Version::V2 => json!({
                "protocolVersion": 2,
                "info": info,
                "capabilities": {
                    // stdio MCP servers are accepted (and reported by /scenario mcp-servers).
                    "session": {
                        "prompt": {"image": {}, "embeddedContext": {}},
                        "mcp": {"stdio": {}},
                        "fork": {}, "delete": {}, "additionalDirectories": {},
                    },
                },
                "authMethods": [{
                    "type": "agent",
                    "methodId": AUTH_METHOD_ID,
                    "name": AUTH_METHOD_NAME,
                    "description": AUTH_METHOD_DESCRIPTION,
                }],
                META_KEY: meta,
            }),
        };
        self.send_response(id, result);
    }

    pub(super) fn new_session(&mut self, id: &Value, params: &Value) {
        if !params.is_object() {
            self.send_error(id, codes::INVALID_PARAMS, "session/new needs params");
            return;
        }
        if !self.check_authenticated(id) {
            return;
        }
        let conn = self.conn();
        self.created += 1;
        let prefix = self.config.session_id_prefix.as_deref().unwrap_or("sess_");
        let session_id = format!("{prefix}{}", self.created);
        let cwd = params
            .get("cwd")
            .and_then(Value::as_str)
            .filter(|c| c.starts_with('/'))
            .unwrap_or("/")
            .to_owned();
        let defaults = crate::turn_context::SessionState::new();
        let mut result = json!({
            "sessionId": session_id,
            "configOptions": scenarios::config_options(conn.version, &|id| defaults.config_value(id)),
        });
        if conn.version == Version::V1 {
            result["modes"] = scenarios::modes_state("default");
        }
        self.send_response(id, result);
        let mut session = Session::new(session_id, cwd, self.config.owned_id_tag.as_deref());
        session.state.mcp_servers = crate::mcp_report::describe_received(params);
        session.state.additional_directories = additional_directories_of(params);
        session.updated_at = self.now_iso();
        let record = history::session_record(
            &session.id,
            &session.cwd,
            &session.state.additional_directories,
            session.updated_at.as_deref(),
        );
        self.persist(&session.id, &record);
        let mut ctx = TurnCtx {
            conn,
            state: &mut session.state,
            session_id: &session.id,
            cwd: &session.cwd,
            blocks: &[],
            delay_ms: self.config.delay_ms,
            context_size: self.config.context_size,
        };
        let program = match &self.config.script {
            Some(script) => {
                script.opening(&mut session.state.script_pos, self.config.script_sleeps)
            }
            None => scenarios::session_start(&mut ctx),
        };
        session.background.steps.extend(program.steps);
        self.sessions.push(session);
    }
}

/// The absolute `additionalDirectories` of session/new, load, resume or fork
/// params, in order and without repeats (relative entries are dropped, as
/// the schema lets a receiver skip invalid items).
pub(super) fn additional_directories_of(params: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let listed = params
        .get(spindle_wire::client_methods::fields::ADDITIONAL_DIRECTORIES)
        .and_then(Value::as_array);
    for dir in listed.into_iter().flatten().filter_map(Value::as_str) {
        if dir.starts_with('/') && !out.iter().any(|d| d == dir) {
            out.push(dir.to_owned());
        }
    }
    out
}
