//! Session facts read from the wire log besides the transcript: the working directory the agent
//! session was opened in, and the agent's modes and config options as answered to `session/new`,
//! `session/load`, `session/resume`, `session/set_mode` and `session/set_config_option`.
//!
//! The engine keeps the current mode and the config options only from session updates
//! (`current_mode_update`, `config_option_update`); agents also (or only) give them in those
//! results. [`SessionFacts`] reads the results and hands the feed equivalent updates for the
//! engine, so the pickers are the same live and after a rebuild from the log. The list of
//! available modes has no place in the engine's session info: it is kept here and shown with the
//! `web_modes` op.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};
use spindle_wire::client_methods::{
    SESSION_LOAD, SESSION_NEW, SESSION_RESUME, SESSION_SET_CONFIG_OPTION, SESSION_SET_MODE, fields,
};
use spindle_wire::tags::{CONFIG_OPTION_UPDATE, CURRENT_MODE_UPDATE};
use spindle_wire::web::{CURRENT_MODE_ID, MODES, SESSION_UPDATE_TAG};

/// A client request whose answer carries facts.
#[derive(Debug, Clone, PartialEq)]
enum Asked {
    /// `session/new`, `session/load` or `session/resume`.
    Open,
    /// `session/set_mode` for this mode.
    SetMode(String),
    /// `session/set_config_option`.
    SetConfig,
}

/// What the log said about the session besides its transcript (see the module docs).
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionFacts {
    /// Requests waiting for their answer, by the JSON text of their id.
    asked: HashMap<String, Asked>,
    /// `cwd` of the last `session/new`, `session/load` or `session/resume` sent.
    pub(crate) cwd: Option<String>,
    /// The v1 `modes` object (`{currentModeId, availableModes}`), kept current.
    pub(crate) modes: Option<Value>,
    /// The modes changed since [`Self::take_changed`] was last called.
    changed: bool,
    /// Permission rules answered "always", by rule key: `{key, label, kind, optionId}`.
    pub(crate) standing: BTreeMap<String, Value>,
}

impl SessionFacts {
    /// A line the client sent: notes the requests whose answers carry facts.
    pub(crate) fn client_line(&mut self, line: &str) {
        let methods = [
            SESSION_NEW,
            SESSION_LOAD,
            SESSION_RESUME,
            SESSION_SET_MODE,
            SESSION_SET_CONFIG_OPTION,
        ];
        if !methods.iter().any(|m| line.contains(m)) {
            return;
        }
        let Ok(Value::Object(message)) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let (Some(Value::String(method)), Some(id)) = (message.get("method"), message.get("id"))
        else {
            return;
        };
        let params = message.get("params");
        let asked = match method.as_str() {
            m if m == SESSION_NEW || m == SESSION_LOAD || m == SESSION_RESUME => {
                if let Some(cwd) = params.and_then(|p| p.get(fields::CWD)?.as_str()) {
                    self.cwd = Some(cwd.to_string());
                }
                Asked::Open
            }
            m if m == SESSION_SET_MODE => {
                match params.and_then(|p| p.get(fields::MODE_ID)?.as_str()) {
                    Some(mode) => Asked::SetMode(mode.to_string()),
                    None => return,
                }
            }
            m if m == SESSION_SET_CONFIG_OPTION => Asked::SetConfig,
            _ => return,
        };
        self.asked.insert(id.to_string(), asked);
    }

    /// A line the agent wrote: reads the answers to the noted requests and mode updates.
    /// Returns `session/update` params (JSON text) the engine should apply after the line.
    pub(crate) fn agent_line(&mut self, line: &str) -> Vec<String> {
        let mode_update = line.contains(CURRENT_MODE_UPDATE);
        let answer = !self.asked.is_empty() && !line.contains("\"method\"");
        if !mode_update && !answer {
            return Vec::new();
        }
        let Ok(Value::Object(message)) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        if mode_update {
            let update = message.get("params").and_then(|p| p.get("update"));
            if let Some(update) = update
                && update.get(SESSION_UPDATE_TAG).and_then(Value::as_str)
                    == Some(CURRENT_MODE_UPDATE)
                && let Some(mode) = update.get(CURRENT_MODE_ID).and_then(Value::as_str)
            {
                self.set_current_mode(mode);
            }
            return Vec::new();
        }
        let Some(asked) = message
            .get("id")
            .and_then(|id| self.asked.remove(&id.to_string()))
        else {
            return Vec::new();
        };
        let Some(result) = message.get("result") else {
            return Vec::new();
        };
        let mut updates = Vec::new();
        match asked {
            Asked::Open => {
                if let Some(modes) = result.get(MODES).filter(|m| m.is_object()) {
                    if self.modes.as_ref() != Some(modes) {
                        self.modes = Some(modes.clone());
                        self.changed = true;
                    }
                    if let Some(mode) = modes.get(CURRENT_MODE_ID).and_then(Value::as_str) {
                        updates.push(mode_update_params(mode));
                    }
                }
            }
            Asked::SetMode(mode) => {
                self.set_current_mode(&mode);
                updates.push(mode_update_params(&mode));
            }
            Asked::SetConfig => {}
        }
        if let Some(options) = result.get(fields::CONFIG_OPTIONS).filter(|o| o.is_array()) {
            let update = json!({ "update": {
                SESSION_UPDATE_TAG: CONFIG_OPTION_UPDATE, fields::CONFIG_OPTIONS: options,
            } });
            updates.push(update.to_string());
        }
        updates
    }

    fn set_current_mode(&mut self, mode: &str) {
        if let Some(Value::Object(modes)) = &mut self.modes
            && modes.get(CURRENT_MODE_ID).and_then(Value::as_str) != Some(mode)
        {
            modes.insert(CURRENT_MODE_ID.into(), Value::String(mode.into()));
            self.changed = true;
        }
    }

    /// A standing permission rule was added (or replaced).
    pub(crate) fn remember(&mut self, rule: &Value) {
        if let Some(key) = rule.get("key").and_then(Value::as_str) {
            self.standing.insert(key.to_string(), rule.clone());
        }
    }

    /// A standing permission rule was forgotten.
    pub(crate) fn forget(&mut self, key: &str) {
        self.standing.remove(key);
    }

    /// The standing rules as the page lists them.
    pub(crate) fn standing_json(&self) -> Value {
        Value::Array(self.standing.values().cloned().collect())
    }

    /// Whether the modes changed since the last call.
    pub(crate) fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// The op that shows the modes.
    pub(crate) fn modes_op(&self) -> Value {
        json!({ "op": "web_modes", "modes": self.modes })
    }
}

/// `session/update` params of a `current_mode_update` (no `sessionId`: the transcript's session).
fn mode_update_params(mode: &str) -> String {
    json!({ "update": { SESSION_UPDATE_TAG: CURRENT_MODE_UPDATE, CURRENT_MODE_ID: mode } })
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_wire::web::AVAILABLE_MODES;

    #[test]
    fn results_and_updates_keep_the_modes_and_yield_engine_updates() {
        let mut facts = SessionFacts::default();
        facts.client_line(
            r#"{"jsonrpc":"2.0","id":"w1-1-1","method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#,
        );
        assert_eq!(facts.cwd.as_deref(), Some("/w"));
        let updates = facts.agent_line(
            r#"{"jsonrpc":"2.0","id":"w1-1-1","result":{"sessionId":"s","modes":{"currentModeId":"default","availableModes":[{"id":"default","name":"Default"},{"id":"plan","name":"Plan"}]},"configOptions":[{"id":"mode","currentValue":"default"}]}}"#,
        );
        assert_eq!(updates.len(), 2, "{updates:?}");
        assert!(updates[0].contains(CURRENT_MODE_UPDATE));
        assert!(updates[1].contains(CONFIG_OPTION_UPDATE));
        assert!(facts.take_changed());
        assert_eq!(
            facts.modes.as_ref().unwrap()[AVAILABLE_MODES]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        facts.client_line(
            r#"{"jsonrpc":"2.0","id":"w1-1-2","method":"session/set_mode","params":{"sessionId":"s","modeId":"plan"}}"#,
        );
        let updates = facts.agent_line(r#"{"jsonrpc":"2.0","id":"w1-1-2","result":{}}"#);
        assert_eq!(updates.len(), 1);
        assert!(facts.take_changed());
        assert_eq!(facts.modes.as_ref().unwrap()[CURRENT_MODE_ID], "plan");
        facts.agent_line(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","currentModeId":"default"}}}"#,
        );
        assert!(facts.take_changed());
        assert_eq!(facts.modes.as_ref().unwrap()[CURRENT_MODE_ID], "default");
        // An error answer and unrelated lines change nothing.
        facts.client_line(
            r#"{"jsonrpc":"2.0","id":"w1-1-3","method":"session/set_mode","params":{"sessionId":"s","modeId":"nope"}}"#,
        );
        let updates = facts.agent_line(
            r#"{"jsonrpc":"2.0","id":"w1-1-3","error":{"code":-32602,"message":"unknown"}}"#,
        );
        assert!(updates.is_empty() && !facts.take_changed());
        assert!(facts.agent_line("not json").is_empty());
    }
}
