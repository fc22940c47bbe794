//! Session facts read from the wire log besides the transcript: the working directory the agent
//! session was opened in (from `session/new`, `session/load` and `session/resume`) and the
//! permission rules answered "always", the checkpoints taken and restored (`checkpoints.rs`), the
//! prompts queued while a turn runs.
//!
//! The agent's modes and config options, also those it gives only in its answers to
//! `session/new`, `session/load`, `session/resume`, `session/set_mode` and
//! `session/set_config_option`, are the engine's: it pairs those answers with the logged requests
//! and keeps them in its session info (`currentModeId`, `availableModes`, `configOptions`), the
//! same live and after a rebuild from the log.

use std::collections::BTreeMap;

use serde_json::Value;
use spindle_wire::client_methods::{SESSION_LOAD, SESSION_NEW, SESSION_RESUME, fields};

/// What the log said about the session besides its transcript (see the module docs).
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionFacts {
    /// `cwd` of the last `session/new`, `session/load` or `session/resume` sent.
    pub(crate) cwd: Option<String>,
    /// Permission rules answered "always", by rule key: `{key, label, kind, optionId}`.
    pub(crate) standing: BTreeMap<String, Value>,
    /// The checkpoints and restores the log noted.
    pub(crate) checkpoints: crate::checkpoints::CheckpointFacts,
    /// The prompts queued while a v1 agent's turn runs (`crate::prompt_queue`).
    pub(crate) queue: crate::prompt_queue::PromptQueue,
}

impl SessionFacts {
    /// A line the client sent: notes the `cwd` of the session requests.
    pub(crate) fn client_line(&mut self, line: &str) {
        let methods = [SESSION_NEW, SESSION_LOAD, SESSION_RESUME];
        if !methods.iter().any(|m| line.contains(m)) {
            return;
        }
        let Ok(Value::Object(message)) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let Some(Value::String(method)) = message.get("method") else {
            return;
        };
        if !methods.contains(&method.as_str()) {
            return;
        }
        let params = message.get("params");
        if let Some(cwd) = params.and_then(|p| p.get(fields::CWD)?.as_str()) {
            self.cwd = Some(cwd.to_string());
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_requests_name_the_cwd_and_other_lines_do_not() {
        let mut facts = SessionFacts::default();
        facts.client_line(
            r#"{"jsonrpc":"2.0","id":"w1-1-1","method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#,
        );
        assert_eq!(facts.cwd.as_deref(), Some("/w"));
        facts.client_line(
            r#"{"jsonrpc":"2.0","id":"w1-1-2","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"session/new cwd"}],"cwd":"/x"}}"#,
        );
        facts.client_line("not json session/load");
        assert_eq!(facts.cwd.as_deref(), Some("/w"));
        facts.client_line(
            r#"{"jsonrpc":"2.0","id":"w2-1-1","method":"session/load","params":{"sessionId":"s","cwd":"/w/sub","mcpServers":[]}}"#,
        );
        assert_eq!(facts.cwd.as_deref(), Some("/w/sub"));
    }
}
