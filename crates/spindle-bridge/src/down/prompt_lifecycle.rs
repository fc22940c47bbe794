//! Prompt lifecycle, v1 client in front of a v2 agent (BRIDGE.md "Prompt
//! lifecycle"): the v1 prompt is held open until the agent's idle with a
//! stopReason, then answered in v1's form; the agent's echo of the prompt is
//! recognised.

use serde_json::{Map, Value, json};
use spindle_wire::meta::{META_KEY, SPINDLE_META_KEY};

use super::state::DownPrompt;
use crate::state::Bridge;
use crate::types::{ClientRequest, Policy, Severity, Translated};
use crate::wire;

const V1_STOP: [&str; 5] = [
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];
impl Bridge {
    /// A v1 prompt: forwarded as is and held open (an older prompt still
    /// open on the session is answered with an error first).
    pub(crate) fn down_prompt_request(
        &mut self,
        line: &str,
        id: String,
        session: String,
        out: &mut Translated,
    ) {
        let s = self.down.session(&session);
        if let Some(old) = s.prompt.take() {
            out.diag(
                Severity::Warning,
                "overlapping_prompt",
                format!("prompt {} still open when a new one arrived", old.client_id),
            );
            out.to_client.push(wire::error_response(
                &old.client_id,
                -32603,
                "superseded by a newer prompt",
                None,
            ));
        }
        self.down.session(&session).prompt = Some(DownPrompt {
            client_id: id.clone(),
            accepted: None,
            running_seen: false,
            echo: None,
            rejected: Vec::new(),
        });
        self.down.prompt_sessions.insert(id.clone(), session);
        self.requests.insert(id, ClientRequest::Prompt);
        out.to_agent.push(line.to_owned());
    }

    pub(crate) fn down_state(
        &mut self,
        session: &str,
        u: &Map<String, Value>,
        out: &mut Translated,
    ) {
        let state = u.get("state").and_then(Value::as_str).unwrap_or("");
        let s = self.down.session(session);
        match state {
            "running" => {
                if let Some(p) = s.prompt.as_mut() {
                    p.running_seen = true;
                }
            }
            "idle" => {
                let Some(stop) = u.get("stopReason").and_then(Value::as_str) else {
                    return;
                };
                let ready = s
                    .prompt
                    .as_ref()
                    .is_some_and(|p| p.accepted.is_some() || p.running_seen);
                if !ready {
                    // A repeated snapshot, background work ending, or an
                    // agent-initiated turn: v1 has no frame for any of them.
                    return;
                }
                let p = s.prompt.take().expect("ready implies a prompt");
                self.down.prompt_sessions.remove(&p.client_id);
                let usage = u.get("usage").filter(|v| !v.is_null()).cloned();
                self.answer_prompt(p, stop, u.get("error"), usage, out);
            }
            // requires_action, unknown states: no v1 frame; the prompt stays open.
            other => out.diag(
                Severity::Info,
                "state_not_representable",
                format!("state_update {other:?} has no ACP v1 form: not sent"),
            ),
        }
    }

    pub(crate) fn answer_prompt(
        &mut self,
        p: DownPrompt,
        stop: &str,
        error: Option<&Value>,
        usage: Option<Value>,
        out: &mut Translated,
    ) {
        if !p.rejected.is_empty() {
            out.to_client.push(wire::error_response(
                &p.client_id,
                -32603,
                &format!(
                    "spindle bridge (strict): {} update(s) of this turn have no ACP v1 form",
                    p.rejected.len()
                ),
                Some(json!({"stopReason": stop, "rejected": p.rejected})),
            ));
            return;
        }
        if V1_STOP.contains(&stop) {
            let mut r = Map::new();
            r.insert("stopReason".into(), stop.into());
            if let Some(usage) = usage {
                r.insert("usage".into(), usage);
            }
            out.to_client
                .push(wire::response(&p.client_id, &Value::Object(r)));
            return;
        }
        if stop == "error" {
            // v1's form of a failed turn is a JSON-RPC error.
            let sev = match self.config.policy {
                Policy::Strict => Severity::Error,
                Policy::Degrade => Severity::Warning,
            };
            out.diag(
                sev,
                "stop_reason_error",
                "stop reason error sent as a JSON-RPC error response".into(),
            );
            let code = error
                .and_then(|e| e.get("code"))
                .and_then(Value::as_i64)
                .unwrap_or(-32603);
            let message = error
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("the agent's turn failed");
            let data = error.and_then(|e| e.get("data")).cloned();
            out.to_client
                .push(wire::error_response(&p.client_id, code, message, data));
            return;
        }
        match self.config.policy {
            Policy::Strict => {
                out.diag(
                    Severity::Error,
                    "unknown_stop_reason",
                    format!("rejected: stop reason {stop:?} has no v1 form"),
                );
                out.to_client.push(wire::error_response(
                    &p.client_id,
                    -32603,
                    &format!("spindle bridge (strict): stop reason {stop:?} has no ACP v1 form"),
                    Some(json!({"stopReason": stop})),
                ));
            }
            Policy::Degrade => {
                out.diag(
                    Severity::Warning,
                    "unknown_stop_reason",
                    format!("degraded: stop reason {stop:?} sent as end_turn"),
                );
                out.to_client.push(wire::response(
                    &p.client_id,
                    &json!({"stopReason": "end_turn", META_KEY: {SPINDLE_META_KEY: {"stopReason": stop}}}),
                ));
            }
        }
    }

    pub(crate) fn is_echo(&mut self, session: &str, id: &str) -> bool {
        let Some(p) = self.down.session(session).prompt.as_mut() else {
            return false;
        };
        if p.echo.as_deref() == Some(id) {
            return true;
        }
        if p.echo.is_none() {
            let matches = match &p.accepted {
                Some(acc) => acc == id || acc.is_empty(),
                None => true,
            };
            if matches {
                p.echo = Some(id.to_owned());
                return true;
            }
        }
        false
    }
}
