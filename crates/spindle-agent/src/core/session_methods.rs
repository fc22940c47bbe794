//! Session-level methods besides new/prompt/cancel: modes, config options,
//! list, resume and close.

use serde_json::{Value, json};

use super::AgentCore;
use crate::scenarios;
use crate::updates;
use crate::wire::{Version, codes};
use spindle_wire::tags;

impl AgentCore {
    pub(super) fn close_session(&mut self, id: &Value, params: &Value) {
        let Some(s) = self.lookup_session(id, params) else {
            return;
        };
        self.cancel_turn(s);
        self.sessions[s].background.steps.clear();
        self.send_response(id, json!({}));
    }

    pub(super) fn set_mode(&mut self, id: &Value, params: &Value) {
        let Some(s) = self.lookup_session(id, params) else {
            return;
        };
        let Some(mode) = params.get("modeId").and_then(Value::as_str) else {
            self.send_error(id, codes::INVALID_PARAMS, "modeId must be a string");
            return;
        };
        if !scenarios::MODES.iter().any(|(m, _)| *m == mode) {
            self.send_error(id, codes::INVALID_PARAMS, "unknown modeId");
            return;
        }
        self.sessions[s].state.mode = mode.to_owned();
        let sid = self.sessions[s].id.clone();
        self.send_response(id, json!({}));
        self.send_update(
            &sid,
            json!({"sessionUpdate": tags::CURRENT_MODE_UPDATE, "currentModeId": mode}),
        );
        let options = scenarios::config_options(Version::V1, mode);
        self.send_update(
            &sid,
            json!({"sessionUpdate": tags::CONFIG_OPTION_UPDATE, "configOptions": options}),
        );
    }

    pub(super) fn set_config_option(&mut self, id: &Value, params: &Value) {
        let Some(s) = self.lookup_session(id, params) else {
            return;
        };
        if params.get("configId").and_then(Value::as_str) != Some("mode") {
            self.send_error(id, codes::INVALID_PARAMS, "unknown configId");
            return;
        }
        let Some(mode) = params.get("value").and_then(Value::as_str) else {
            self.send_error(id, codes::INVALID_PARAMS, "value must be a string");
            return;
        };
        if !scenarios::MODES.iter().any(|(m, _)| *m == mode) {
            self.send_error(id, codes::INVALID_PARAMS, "unknown value for mode");
            return;
        }
        let version = self.conn().version;
        self.sessions[s].state.mode = mode.to_owned();
        let options = scenarios::config_options(version, mode);
        self.send_response(id, json!({"configOptions": options}));
        if version == Version::V1 {
            let sid = self.sessions[s].id.clone();
            self.send_update(
                &sid,
                json!({"sessionUpdate": tags::CURRENT_MODE_UPDATE, "currentModeId": mode}),
            );
        }
    }

    pub(super) fn list_sessions(&mut self, id: &Value) {
        let sessions: Vec<Value> = self
            .sessions
            .iter()
            .map(|s| json!({"sessionId": s.id, "cwd": s.cwd}))
            .collect();
        self.send_response(id, json!({"sessions": sessions}));
    }

    /// v2 `session/resume`: the session is still in memory, so resuming
    /// replays nothing; it sends the current-state snapshot before the
    /// response, as the crate requires.
    pub(super) fn resume_session(&mut self, id: &Value, params: &Value) {
        let Some(s) = self.lookup_session(id, params) else {
            return;
        };
        let sid = self.sessions[s].id.clone();
        let state = if self.sessions[s].turn.is_some() {
            "running"
        } else {
            "idle"
        };
        self.send_update(&sid, updates::state(state, None));
        let options = scenarios::config_options(Version::V2, &self.sessions[s].state.mode);
        self.send_response(id, json!({"configOptions": options}));
    }
}
