//! Session-level updates: which session the transcript follows, the v2
//! state, usage, available commands, mode, config options, session info and
//! notices.

use serde_json::{Map, Value};

use crate::core::TranscriptEngine;
use crate::ops::RenderOp;
use spindle_wire::meta::META_KEY;

/// `usage_update.used`: context tokens in use.
const USAGE_USED: &str = "used";
/// `usage_update.size`: the context window's size.
const USAGE_SIZE: &str = "size";
/// `usage_update.cost`: kept verbatim.
const USAGE_COST: &str = "cost";
/// `session_info_update.title`.
const INFO_TITLE: &str = "title";
/// `session_info_update.updatedAt`.
const INFO_UPDATED_AT: &str = "updatedAt";

/// The JSON type of a member, for diagnostics (`missing` when absent).
fn json_type(value: Option<&Value>) -> &'static str {
    match value {
        None => "missing",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

impl TranscriptEngine {
    /// Whether an update naming `session_id` belongs to this transcript. The session is the one
    /// the client opened or prompts (see [`Self::adopt_session`]); before the client named one
    /// (recordings of the agent side only), the first session id seen defines it. An update
    /// for another session is a diagnostic and is not applied (F3): the wire log or recording
    /// keeps it verbatim at the reported line.
    pub(crate) fn note_session(&mut self, session_id: Option<&str>) -> bool {
        let Some(s) = session_id else {
            return true;
        };
        match self.t.session_info.session_id.as_deref() {
            None => {
                self.t.session_info.session_id = Some(s.to_owned());
                true
            }
            Some(known) if known == s => true,
            Some(known) => {
                let message =
                    format!("update for session {s:?}, not this session {known:?}: not applied");
                self.diag("foreign_session", message);
                false
            }
        }
    }

    /// The client opened, loaded, resumed or prompted `session_id`: updates for it apply from now
    /// on (a client that starts a new agent session moves the transcript to it).
    pub(crate) fn adopt_session(&mut self, session_id: Option<&Value>) {
        if let Some(Value::String(s)) = session_id
            && self.t.session_info.session_id.as_deref() != Some(s.as_str())
        {
            self.t.session_info.session_id = Some(s.clone());
        }
    }

    pub(crate) fn state_update(&mut self, u: Map<String, Value>) {
        let Some(Value::String(state)) = u.get("state") else {
            return self.diag("malformed_update", "state_update: state must be a string");
        };
        let state = state.clone();
        if let Some(bg) = u.get("background") {
            self.t.state.background = (!bg.is_null()).then(|| bg.clone());
        }
        match state.as_str() {
            "idle" => {
                // Omitted, null or malformed stopReason: "not reported".
                let stop = u
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let error = u.get("error").filter(|e| !e.is_null()).cloned();
                self.explicit_idle = true;
                if self.t.state.turn_open {
                    self.end_turn(stop, error);
                } else {
                    // A repeated idle snapshot is idempotent: no new completion.
                    let s = &mut self.t.state;
                    let changed = s.status != "idle" || (stop.is_some() && s.stop_reason != stop);
                    s.status = "idle".into();
                    if stop.is_some() {
                        s.stop_reason = stop;
                        s.error = error;
                    }
                    if changed {
                        self.emit_state();
                    }
                }
            }
            "running" => {
                if !self.t.state.turn_open {
                    self.begin_turn();
                } else if self.t.state.status != "running" {
                    self.t.state.status = "running".into();
                    self.emit_state();
                }
            }
            "unknown" => {
                // Schema 1.20: the agent lost sight of its foreground work.
                // The previous state is no longer shown as confirmed; no turn
                // starts or ends, tool calls stay as last reported.
                if self.t.state.status != "unknown" {
                    self.t.state.status = "unknown".into();
                    self.emit_state();
                }
            }
            other => {
                // requires_action, or a state this engine does not know: busy, never idle.
                if !self.t.state.turn_open {
                    self.begin_turn();
                }
                self.t.state.status = other.to_owned();
                self.emit_state();
            }
        }
    }

    /// `usage_update` (latest wins). `used` and `size` must be numbers; one
    /// that is not (Claude Code's adapter sends `used: null`) is left out with
    /// a `malformed_field` diagnostic and the rest applies. Only an update with
    /// none of `used`, `size`, `cost` well-formed changes nothing.
    pub(crate) fn usage_update(&mut self, mut u: Map<String, Value>) {
        let mut ignored = Vec::new();
        for key in [USAGE_USED, USAGE_SIZE] {
            let value = u.get(key);
            if !value.is_some_and(Value::is_number) {
                ignored.push(format!("{key} ({})", json_type(value)));
                u.shift_remove(key);
            }
        }
        if ignored.len() == 2 && !u.contains_key(USAGE_COST) {
            return self.diag(
                "malformed_update",
                "usage_update: used and size must be numbers",
            );
        }
        if !ignored.is_empty() {
            self.diag(
                "malformed_field",
                format!(
                    "usage_update: ignored {}; used and size must be numbers, the other fields apply",
                    ignored.join(", ")
                ),
            );
        }
        u.shift_remove("sessionUpdate");
        if self.t.protocol == 2 {
            // v2: `cost` and (since schema 1.20) `_meta` are three-state patch
            // fields: omitted keeps the last value, `null` clears it. (v1:
            // latest wins whole, an omitted cost is no cost.)
            let previous = self.t.usage.as_ref().and_then(Value::as_object);
            for key in [USAGE_COST, META_KEY] {
                match u.get(key) {
                    Some(Value::Null) => {
                        u.shift_remove(key);
                    }
                    Some(_) => {}
                    None => {
                        if let Some(kept) = previous.and_then(|p| p.get(key)) {
                            u.insert(key.to_owned(), kept.clone());
                        }
                    }
                }
            }
        }
        let usage = Value::Object(u);
        if self.ops_on {
            let usage = usage.clone();
            self.emit(RenderOp::SetUsage { usage });
        }
        self.t.usage = Some(usage);
    }

    /// `available_commands_update`: the whole list, replaced.
    pub(crate) fn commands_update(&mut self, u: Map<String, Value>) {
        match u.get("availableCommands") {
            Some(Value::Array(_)) => {
                let commands = u.get("availableCommands").cloned().unwrap_or(Value::Null);
                if self.ops_on {
                    let commands = commands.clone();
                    self.emit(RenderOp::SetCommands { commands });
                }
                self.t.commands = Some(commands);
            }
            _ => self.diag(
                "malformed_update",
                "available_commands_update: availableCommands must be an array",
            ),
        }
    }

    /// v1 `current_mode_update`.
    pub(crate) fn current_mode_update(&mut self, u: Map<String, Value>) {
        match u.get("currentModeId") {
            Some(Value::String(m)) => {
                self.t.session_info.current_mode_id = Some(m.clone());
                self.emit_session_info();
            }
            _ => self.diag(
                "malformed_update",
                "current_mode_update: currentModeId must be a string",
            ),
        }
    }

    /// `config_option_update`: the whole list, replaced.
    pub(crate) fn config_option_update(&mut self, u: Map<String, Value>) {
        match u.get("configOptions") {
            Some(v @ Value::Array(_)) => {
                self.t.session_info.config_options = Some(v.clone());
                self.emit_session_info();
            }
            _ => self.diag(
                "malformed_update",
                "config_option_update: configOptions must be an array",
            ),
        }
    }

    /// `session_info_update`: `title` and `updatedAt` (string, or `null` to
    /// clear) and `_meta`, each replaced when present. A field of the wrong
    /// type is ignored with a `malformed_field` diagnostic and the rest
    /// applies; an update with no well-formed field changes nothing.
    pub(crate) fn session_info_update(&mut self, mut u: Map<String, Value>) {
        let mut ignored = Vec::new();
        for key in [INFO_TITLE, INFO_UPDATED_AT] {
            if let Some(v) = u.get(key)
                && !(v.is_null() || v.is_string())
            {
                ignored.push(format!("{key} ({})", json_type(Some(v))));
                u.shift_remove(key);
            }
        }
        if let Some(first) = ignored.first() {
            let applies = [INFO_TITLE, INFO_UPDATED_AT, META_KEY]
                .iter()
                .any(|key| u.contains_key(*key));
            if !applies {
                let key = first.split(' ').next().unwrap_or_default();
                return self.diag(
                    "malformed_update",
                    format!("session_info_update: {key} must be a string or null"),
                );
            }
            self.diag(
                "malformed_field",
                format!(
                    "session_info_update: ignored {}; title and updatedAt must be strings or null, the other fields apply",
                    ignored.join(", ")
                ),
            );
        }
        let info = &mut self.t.session_info;
        let string = |v: &Value| v.as_str().map(str::to_owned);
        if let Some(v) = u.get(INFO_TITLE) {
            info.title = string(v);
        }
        if let Some(v) = u.get(INFO_UPDATED_AT) {
            info.updated_at = string(v);
        }
        if let Some(v) = u.get(META_KEY) {
            info.meta = (!v.is_null()).then(|| v.clone());
        }
        self.emit_session_info();
    }

    pub(crate) fn notice(&mut self, u: Map<String, Value>) {
        match (u.get("severity"), u.get("title")) {
            (Some(Value::String(severity)), Some(Value::String(title))) => {
                let description = match u.get("description") {
                    Some(Value::String(d)) => Some(d.clone()),
                    _ => None,
                };
                self.emit(RenderOp::Notice {
                    severity: severity.clone(),
                    title: title.clone(),
                    description,
                });
            }
            _ => self.diag(
                "malformed_update",
                "notice: severity and title must be strings",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{EngineConfig, RenderOp, TranscriptEngine};

    fn apply(e: &mut TranscriptEngine, update: serde_json::Value) -> crate::Applied {
        e.apply_session_update(&json!({"sessionId": "s", "update": update}).to_string())
    }

    #[test]
    fn usage_with_a_null_used_keeps_size_and_cost_and_says_what_was_ignored() {
        let mut e = TranscriptEngine::new(EngineConfig::default());
        let applied = apply(
            &mut e,
            json!({"sessionUpdate": "usage_update", "used": null, "size": 200000,
                "cost": {"amount": 0.5, "currency": "USD"}}),
        );
        let kept = json!({"size": 200000, "cost": {"amount": 0.5, "currency": "USD"}});
        assert_eq!(e.transcript().usage, Some(kept.clone()));
        assert_eq!(applied.ops, vec![RenderOp::SetUsage { usage: kept }]);
        assert_eq!(applied.diagnostics.len(), 1);
        assert_eq!(applied.diagnostics[0].code, "malformed_field");
        assert!(applied.diagnostics[0].message.contains("used (null)"));
        // Nothing well-formed: the update changes nothing.
        let applied = apply(
            &mut e,
            json!({"sessionUpdate": "usage_update", "used": "lots"}),
        );
        assert_eq!(applied.diagnostics[0].code, "malformed_update");
        assert!(applied.ops.is_empty());
        assert_eq!(e.transcript().usage.as_ref().unwrap()["size"], 200000);
    }

    #[test]
    fn session_info_keeps_its_well_formed_fields() {
        let mut e = TranscriptEngine::new(EngineConfig::default());
        let applied = apply(
            &mut e,
            json!({"sessionUpdate": "session_info_update", "title": ["x"], "updatedAt": "today"}),
        );
        assert_eq!(applied.diagnostics[0].code, "malformed_field");
        let info = &e.transcript().session_info;
        assert_eq!(
            (info.title.as_deref(), info.updated_at.as_deref()),
            (None, Some("today"))
        );
        let applied = apply(
            &mut e,
            json!({"sessionUpdate": "session_info_update", "title": 1}),
        );
        assert_eq!(applied.diagnostics[0].code, "malformed_update");
        assert!(applied.ops.is_empty());
    }
}
