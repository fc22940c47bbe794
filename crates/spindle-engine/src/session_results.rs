//! Modes and config options the agent gives in its answers to the client's requests, not in
//! session updates: the `session/new`, `session/load` and `session/resume` results (`modes:
//! {currentModeId, availableModes}`, `configOptions`), a successful `session/set_mode` (often
//! answered `{}`: the mode asked for is now current) and the `session/set_config_option` result
//! (`configOptions`, the whole list). Applied to the session info when the engine pairs the
//! answer with the client's request line, so live views and a replay of the same lines agree.
//! An error answer changes nothing; a malformed part is left out with a `malformed_field`
//! diagnostic and the well-formed rest applies.

use serde_json::Value;
use spindle_wire::client_methods::fields::{CONFIG_OPTIONS, MODE_ID};
use spindle_wire::client_methods::{SESSION_SET_CONFIG_OPTION, SESSION_SET_MODE};
use spindle_wire::web::{AVAILABLE_MODES, CURRENT_MODE_ID, MODES};

use crate::core::TranscriptEngine;

/// The JSON type of a value, for diagnostics.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The mode a `session/set_mode` request asks for (`params.modeId`), if it names one.
pub(crate) fn requested_mode(params: Option<&Value>) -> Option<String> {
    params
        .and_then(|p| p.get(MODE_ID))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

impl TranscriptEngine {
    /// The result of `method` (`session/new`, `session/load` or `session/resume`): its `modes`
    /// and `configOptions`, each applied when well-formed. `null` or absent members say nothing.
    pub(crate) fn session_result(&mut self, method: &str, result: &Value) {
        let Value::Object(result) = result else {
            if !result.is_null() {
                let message = format!(
                    "{method} result: ignored, it is {} (an object was expected)",
                    json_type(result)
                );
                self.diag("malformed_field", message);
            }
            return;
        };
        let mut ignored = Vec::new();
        let mut changed = false;
        match result.get(MODES) {
            None | Some(Value::Null) => {}
            Some(Value::Object(modes)) => {
                match modes.get(CURRENT_MODE_ID) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(mode)) => {
                        changed |= self.set_current_mode(mode);
                    }
                    Some(other) => ignored.push(format!(
                        "{MODES}.{CURRENT_MODE_ID} ({}; a string was expected)",
                        json_type(other)
                    )),
                }
                match modes.get(AVAILABLE_MODES) {
                    None | Some(Value::Null) => {}
                    Some(list @ Value::Array(_)) => {
                        let info = &mut self.t.session_info;
                        if info.available_modes.as_ref() != Some(list) {
                            info.available_modes = Some(list.clone());
                            changed = true;
                        }
                    }
                    Some(other) => ignored.push(format!(
                        "{MODES}.{AVAILABLE_MODES} ({}; an array was expected)",
                        json_type(other)
                    )),
                }
            }
            Some(other) => ignored.push(format!(
                "{MODES} ({}; an object was expected)",
                json_type(other)
            )),
        }
        match result.get(CONFIG_OPTIONS) {
            None | Some(Value::Null) => {}
            Some(options) => {
                if let Some(why) = self.set_config_options(options) {
                    ignored.push(why);
                } else {
                    changed = true;
                }
            }
        }
        if !ignored.is_empty() {
            let message = format!(
                "{method} result: ignored {}; the other fields apply",
                ignored.join(", ")
            );
            self.diag("malformed_field", message);
        }
        if changed {
            self.emit_session_info();
        }
    }

    /// A `session/set_mode` for `mode` was answered with a result: that mode is now current. A
    /// request that named no mode (its `modeId` missing or not a string) changes nothing.
    pub(crate) fn set_mode_result(&mut self, mode: Option<String>) {
        match mode {
            Some(mode) => {
                if self.set_current_mode(&mode) {
                    self.emit_session_info();
                }
            }
            None => self.diag(
                "malformed_field",
                format!(
                    "{SESSION_SET_MODE} answered, but the request named no {MODE_ID} string: the current mode is unchanged"
                ),
            ),
        }
    }

    /// The result of a `session/set_config_option`: its `configOptions`, the whole list.
    pub(crate) fn set_config_option_result(&mut self, result: &Value) {
        match result.get(CONFIG_OPTIONS) {
            Some(options) if !options.is_null() => match self.set_config_options(options) {
                Some(why) => {
                    let message = format!("{SESSION_SET_CONFIG_OPTION} result: ignored {why}");
                    self.diag("malformed_field", message);
                }
                None => self.emit_session_info(),
            },
            _ => self.diag(
                "malformed_field",
                format!(
                    "{SESSION_SET_CONFIG_OPTION} result without {CONFIG_OPTIONS}: the config options are unchanged"
                ),
            ),
        }
    }

    /// Makes `mode` current; whether it changed.
    fn set_current_mode(&mut self, mode: &str) -> bool {
        let info = &mut self.t.session_info;
        if info.current_mode_id.as_deref() == Some(mode) {
            return false;
        }
        info.current_mode_id = Some(mode.to_owned());
        true
    }

    /// Replaces the config options with `options` when it is an array; otherwise what was
    /// ignored, for the diagnostic.
    fn set_config_options(&mut self, options: &Value) -> Option<String> {
        if !options.is_array() {
            return Some(format!(
                "{CONFIG_OPTIONS} ({}; an array was expected)",
                json_type(options)
            ));
        }
        self.t.session_info.config_options = Some(options.clone());
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::{EngineConfig, RenderOp, TranscriptEngine};

    fn exchange(e: &mut TranscriptEngine, request: Value, answer: Value) -> crate::Applied {
        e.apply_client_line(&request.to_string());
        e.apply_agent_line(&answer.to_string())
    }

    fn info_ops(applied: &crate::Applied) -> usize {
        let is_info = |op: &&RenderOp| matches!(op, RenderOp::SetSessionInfo { .. });
        applied.ops.iter().filter(is_info).count()
    }

    #[test]
    fn session_results_and_set_answers_change_the_session_info() {
        let mut e = TranscriptEngine::new(EngineConfig::default());
        let modes = json!([{"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan"}]);
        let applied = exchange(
            &mut e,
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w"}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s",
                "modes": {"currentModeId": "default", "availableModes": modes},
                "configOptions": [{"id": "model", "currentValue": "fast"}]}}),
        );
        assert_eq!(info_ops(&applied), 1);
        let info = &e.transcript().session_info;
        assert_eq!(info.current_mode_id.as_deref(), Some("default"));
        assert_eq!(info.available_modes.as_ref(), Some(&modes));
        assert_eq!(
            info.config_options.as_ref().unwrap()[0]["currentValue"],
            "fast"
        );

        let applied = exchange(
            &mut e,
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/set_mode",
                "params": {"sessionId": "s", "modeId": "plan"}}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {}}),
        );
        assert_eq!(info_ops(&applied), 1);
        assert_eq!(
            e.transcript().session_info.current_mode_id.as_deref(),
            Some("plan")
        );

        // An error answer changes nothing.
        let applied = exchange(
            &mut e,
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/set_mode",
                "params": {"sessionId": "s", "modeId": "nope"}}),
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "no"}}),
        );
        assert!(applied.ops.is_empty() && applied.diagnostics.is_empty());
        assert_eq!(
            e.transcript().session_info.current_mode_id.as_deref(),
            Some("plan")
        );

        let applied = exchange(
            &mut e,
            json!({"jsonrpc": "2.0", "id": 4, "method": "session/set_config_option",
                "params": {"sessionId": "s", "configId": "model", "value": "deep"}}),
            json!({"jsonrpc": "2.0", "id": 4, "result":
                {"configOptions": [{"id": "model", "currentValue": "deep"}]}}),
        );
        assert_eq!(info_ops(&applied), 1);
        let options = e.transcript().session_info.config_options.clone().unwrap();
        assert_eq!(options[0]["currentValue"], "deep");
    }

    #[test]
    fn malformed_parts_are_left_out_and_the_rest_applies() {
        let mut e = TranscriptEngine::new(EngineConfig::default());
        let applied = exchange(
            &mut e,
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/load",
                "params": {"sessionId": "s", "cwd": "/w"}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "modes": {"currentModeId": 7, "availableModes": [{"id": "ask"}]},
                "configOptions": {"id": "model"}}}),
        );
        assert_eq!(applied.diagnostics.len(), 1, "{:?}", applied.diagnostics);
        assert_eq!(applied.diagnostics[0].code, "malformed_field");
        let message = &applied.diagnostics[0].message;
        assert!(
            message.contains("modes.currentModeId (a number"),
            "{message}"
        );
        assert!(message.contains("configOptions (an object"), "{message}");
        let info = &e.transcript().session_info;
        assert_eq!(info.available_modes, Some(json!([{"id": "ask"}])));
        assert_eq!(
            (info.current_mode_id.as_ref(), info.config_options.as_ref()),
            (None, None)
        );

        let applied = exchange(
            &mut e,
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/set_config_option",
                "params": {"sessionId": "s", "configId": "model", "value": "deep"}}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {}}),
        );
        assert_eq!(applied.diagnostics[0].code, "malformed_field");
        assert!(applied.ops.is_empty());

        let applied = exchange(
            &mut e,
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/set_mode",
                "params": {"sessionId": "s"}}),
            json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
        );
        assert_eq!(applied.diagnostics[0].code, "malformed_field");
        assert_eq!(e.transcript().session_info.current_mode_id, None);
    }
}
