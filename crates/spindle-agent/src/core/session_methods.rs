//! Session-level methods besides new/prompt/cancel: modes, config options,
//! close (history and authentication: `history_methods`; fork and delete:
//! `lifecycle_methods`).

use serde_json::{Value, json};

use super::AgentCore;
use crate::scenarios;
use crate::wire::{Version, codes};
use spindle_wire::tags;

impl AgentCore {
    /// `session/close`: the running turn is cancelled (as `session/cancel`
    /// would), background work dropped, and the session refuses prompts
    /// until it is loaded or resumed again.
    pub(super) fn close_session(&mut self, id: &Value, params: &Value) {
        let Some(s) = self.lookup_session(id, params) else {
            return;
        };
        self.cancel_turn(s);
        self.sessions[s].background.steps.clear();
        self.sessions[s].closed = true;
        self.send_response(id, json!({}));
    }

    /// The session's config options as `version` spells them.
    pub(super) fn config_options_of(&self, s: usize) -> Value {
        let state = &self.sessions[s].state;
        scenarios::config_options(self.conn().version, &|id| state.config_value(id))
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
            let known: Vec<&str> = scenarios::MODES.iter().map(|(m, _)| *m).collect();
            let message = format!("unknown modeId {mode:?} (modes: {})", known.join(", "));
            self.send_error(id, codes::INVALID_PARAMS, &message);
            return;
        }
        self.sessions[s].state.mode = mode.to_owned();
        self.record_config(s, "mode");
        let sid = self.sessions[s].id.clone();
        self.send_response(id, json!({}));
        self.send_update(
            &sid,
            json!({"sessionUpdate": tags::CURRENT_MODE_UPDATE, "currentModeId": mode}),
        );
        let options = self.config_options_of(s);
        self.send_update(
            &sid,
            json!({"sessionUpdate": tags::CONFIG_OPTION_UPDATE, "configOptions": options}),
        );
    }

    /// `session/set_config_option` for `mode`, `model` or `effort` with a
    /// value id (v1 `{value}`, v2 `{type:"id", value}`).
    pub(super) fn set_config_option(&mut self, id: &Value, params: &Value) {
        let Some(s) = self.lookup_session(id, params) else {
            return;
        };
        let config_id = params.get("configId").and_then(Value::as_str).unwrap_or("");
        let Some(spec) = scenarios::config_spec(config_id) else {
            let known: Vec<&str> = scenarios::CONFIG.iter().map(|c| c.id).collect();
            let message = format!(
                "unknown configId {config_id:?} (options: {})",
                known.join(", ")
            );
            self.send_error(id, codes::INVALID_PARAMS, &message);
            return;
        };
        let typed = params.get("type").and_then(Value::as_str);
        let value = match (typed, params.get("value")) {
            (None | Some("id"), Some(Value::String(v))) => v.as_str(),
            _ => {
                let message = format!("{config_id} takes a value id (a string)");
                self.send_error(id, codes::INVALID_PARAMS, &message);
                return;
            }
        };
        if !spec.values.iter().any(|(v, _)| *v == value) {
            let known: Vec<&str> = spec.values.iter().map(|(v, _)| *v).collect();
            let message = format!(
                "unknown value {value:?} for {config_id} (values: {})",
                known.join(", ")
            );
            self.send_error(id, codes::INVALID_PARAMS, &message);
            return;
        }
        let version = self.conn().version;
        self.sessions[s].state.set_config_value(config_id, value);
        self.record_config(s, config_id);
        let options = self.config_options_of(s);
        self.send_response(id, json!({"configOptions": options}));
        if version == Version::V1 && config_id == "mode" {
            let sid = self.sessions[s].id.clone();
            self.send_update(
                &sid,
                json!({"sessionUpdate": tags::CURRENT_MODE_UPDATE, "currentModeId": value}),
            );
        }
    }
}
