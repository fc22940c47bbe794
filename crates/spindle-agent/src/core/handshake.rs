//! The handshake and session creation: `initialize` (version, extension
//! opt-in and client capabilities, fixed for the connection) and
//! `session/new` (the session's opening program).

use std::collections::VecDeque;

use serde_json::{Value, json};
use spindle_wire::extensions::Extensions;
use spindle_wire::meta::META_KEY;

use super::{AgentCore, Runner, Session};
use crate::scenarios;
use crate::turn_context::{Connection, SessionState, TurnCtx};
use crate::wire::{Version, codes};

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
        self.conn = Some(Connection {
            version,
            ext,
            compaction,
            notices,
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
                    "loadSession": false,
                    "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                    "sessionCapabilities": {"close": {}},
                },
                "authMethods": [],
                "agentInfo": info,
                META_KEY: meta,
            }),
            Version::V2 => json!({
                "protocolVersion": 2,
                "info": info,
                "capabilities": {
                    "session": {"prompt": {"embeddedContext": {}}},
                },
                "authMethods": [],
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
        let conn = self.conn();
        let session_id = format!("sess_{}", self.sessions.len() + 1);
        let cwd = params
            .get("cwd")
            .and_then(Value::as_str)
            .filter(|c| c.starts_with('/'))
            .unwrap_or("/")
            .to_owned();
        let mut result = json!({
            "sessionId": session_id,
            "configOptions": scenarios::config_options(conn.version, "default"),
        });
        if conn.version == Version::V1 {
            result["modes"] = scenarios::modes_state("default");
        }
        self.send_response(id, result);
        let mut session = Session {
            id: session_id,
            cwd,
            state: SessionState::new(),
            turn: None,
            background: Runner::default(),
            queued: VecDeque::new(),
        };
        let mut ctx = TurnCtx {
            conn,
            state: &mut session.state,
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
