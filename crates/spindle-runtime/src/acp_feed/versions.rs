//! Each `/acp` connection speaks the protocol version it asked for at `initialize`, whatever
//! version the session's agent speaks. What the agent logged is passed on as is to clients of
//! its version; for clients of the other version, one [`Translation`] per session (the
//! `spindle-bridge` translator, as `spindle bridge --policy degrade` uses it) turns the same
//! lines into the other version's messages, once, for all of them. Degrade, not strict: what
//! has no form in the client's version (a v2 diff, a v2 terminal, a replacement after chunks)
//! reaches it as BRIDGE.md's documented fallback, where strict would answer the client's prompt
//! with an error for a turn that went on for everyone else.
//!
//! What differs by version is one hub item with a part per version ([`crate::acp_feed::item`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use spindle_bridge::{Bridge, BridgeConfig, Policy};

/// What the translation of one line produced, sorted.
#[derive(Debug, Default)]
pub(crate) struct Translated {
    /// `session/update` notifications (and other notifications) for clients of the other version.
    pub(crate) updates: Vec<String>,
    /// Permission requests in the other version's form: (key, params).
    pub(crate) permissions: Vec<(String, Value)>,
    /// Answers to prompts: (agent request id as JSON text, the answer message).
    pub(crate) answers: Vec<(String, Value)>,
}

/// The translation of one session's lines into the version its agent does not speak.
#[derive(Debug)]
pub(crate) struct Translation {
    /// The version translated into.
    pub(crate) version: u16,
    bridge: Bridge,
    /// The hub counter when it started: a client of this version resuming from before gets a
    /// snapshot (what was published before holds no translation).
    pub(crate) since: u64,
    /// Prompt ids the translator forwards under an id of its own (v2 client, v1 agent): the
    /// agent's answer to the logged id is fed under the translator's.
    forwarded: HashMap<String, String>,
}

impl Translation {
    pub(crate) fn new(agent_version: u16, since: u64) -> Translation {
        let version = if agent_version >= 2 { 1 } else { 2 };
        Translation {
            version,
            bridge: Bridge::new(BridgeConfig {
                client_protocol: Some(version),
                agent_protocol: Some(agent_version.clamp(1, 2)),
                policy: Policy::Degrade,
            }),
            since,
            forwarded: HashMap::new(),
        }
    }

    /// A `session/prompt` the session's agent was sent (with the client-facing session id).
    pub(crate) fn prompt(&mut self, line: &str, request_key: &str) -> Translated {
        let out = self.bridge.from_client(line);
        // The translator may forward the prompt under an id of its own: remember it.
        for sent in &out.to_agent {
            if let Some(id) = serde_json::from_str::<Value>(sent)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .map(|id| id.to_string())
                .filter(|id| id != request_key)
            {
                self.forwarded.insert(request_key.to_string(), id);
            }
        }
        sort(out.to_client)
    }

    /// A line of the agent's (an update with the client-facing session id, a permission
    /// request, or the answer to a prompt).
    pub(crate) fn agent_line(&mut self, line: &str, answer_key: Option<&str>) -> Translated {
        if let Some(own) = answer_key.and_then(|key| self.forwarded.remove(key)) {
            let Ok(mut value) = serde_json::from_str::<Value>(line) else {
                return Translated::default();
            };
            value["id"] = serde_json::from_str(&own).unwrap_or(Value::Null);
            let out = self.bridge.from_agent(&value.to_string());
            return sort(out.to_client);
        }
        sort(self.bridge.from_agent(line).to_client)
    }

    /// The session's setup (`modes`, `configOptions`) in the agent's version, as this
    /// version has it; the translator keeps it (see `Bridge::adopt_session_result`).
    pub(crate) fn adopt_setup(
        &mut self,
        session: &str,
        setup: Map<String, Value>,
    ) -> Map<String, Value> {
        let (setup, diagnostics) = self.bridge.adopt_session_result(session, setup);
        for d in diagnostics {
            tracing::warn!(session, code = d.code, "/acp session setup: {}", d.message);
        }
        setup
    }

    /// A client's `session/set_mode` or `session/set_config_option` (`method`, `params`) as
    /// the agent's version has it: `Ok((method, params))` to send, or `Err(error)` when the
    /// translator answers it itself (a v1 `set_mode` for an agent without a mode option).
    /// `key` names the exchange for [`Translation::setting_answer`].
    pub(crate) fn setting(
        &mut self,
        key: &str,
        method: &str,
        params: &Value,
    ) -> Result<(String, Value), Value> {
        let line = json!({"jsonrpc": "2.0", "id": key, "method": method, "params": params});
        let out = self.bridge.from_client(&line.to_string());
        if let Some(sent) = out.to_agent.first() {
            let sent: Value = serde_json::from_str(sent).unwrap_or(Value::Null);
            let method = sent.get("method").and_then(Value::as_str).unwrap_or(method);
            return Ok((
                method.to_string(),
                sent.get("params").cloned().unwrap_or(Value::Null),
            ));
        }
        Err(out
            .to_client
            .first()
            .and_then(|line| serde_json::from_str::<Value>(line).ok())
            .and_then(|answer| answer.get("error").cloned())
            .unwrap_or_else(
                || json!({"code": -32603, "message": "the setting could not be translated"}),
            ))
    }

    /// The agent's answer to the setting `key` (see [`Translation::setting`]) in this version.
    pub(crate) fn setting_answer(
        &mut self,
        key: &str,
        answer: Result<Value, Value>,
    ) -> Result<Value, Value> {
        let line = match &answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": key, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": key, "error": error}),
        };
        let out = self.bridge.from_agent(&line.to_string());
        let Some(answered) = out
            .to_client
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|v| v.get("id").and_then(Value::as_str) == Some(key))
        else {
            return answer;
        };
        match (answered.get("result"), answered.get("error")) {
            (Some(result), _) => Ok(result.clone()),
            (None, Some(error)) => Err(error.clone()),
            (None, None) => answer,
        }
    }

    /// The agent exited: every prompt still open ends (error answers, and for v2 clients idle
    /// with stopReason `error`).
    pub(crate) fn agent_gone(&mut self, why: &str) -> Translated {
        // Errors name the translator's ids for forwarded prompts: map them back.
        let back: HashMap<String, String> = self
            .forwarded
            .drain()
            .map(|(logged, own)| (own, logged))
            .collect();
        let mut out = sort(self.bridge.fail_pending(why));
        for (key, _) in &mut out.answers {
            if let Some(logged) = back.get(key.as_str()) {
                *key = logged.clone();
            }
        }
        out
    }
}

fn sort(lines: Vec<String>) -> Translated {
    let mut out = Translated::default();
    for line in lines {
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        match value.get("method").and_then(Value::as_str) {
            Some(spindle_wire::client_methods::SESSION_REQUEST_PERMISSION) => {
                if let (Some(id), Some(params)) = (value.get("id"), value.get("params")) {
                    out.permissions.push((id.to_string(), params.clone()));
                }
            }
            Some(method) if value.get("id").is_none() && !method.is_empty() => {
                out.updates.push(line)
            }
            Some(_) => {}
            None => {
                if let Some(id) = value.get("id") {
                    out.answers.push((id.to_string(), value.clone()));
                }
            }
        }
    }
    out
}

/// `/acp` prompts the session's agent was sent, by the agent request id (JSON text): which
/// connection and client request they answer. Bounded: the oldest go first.
#[derive(Debug, Default)]
pub(crate) struct PromptTargets {
    entries: VecDeque<(String, Arc<str>, Value)>,
}

const PROMPT_TARGETS: usize = 4096;

impl PromptTargets {
    pub(crate) fn insert(&mut self, key: String, connection: Arc<str>, id: Value) {
        self.entries.push_back((key, connection, id));
        while self.entries.len() > PROMPT_TARGETS {
            self.entries.pop_front();
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<(Arc<str>, Value)> {
        self.entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, c, id)| (c.clone(), id.clone()))
    }

    pub(crate) fn take(&mut self, key: &str) -> Option<(Arc<str>, Value)> {
        let at = self.entries.iter().position(|(k, _, _)| k == key)?;
        self.entries.remove(at).map(|(_, c, id)| (c, id))
    }

    /// Whether `connection`'s request `id` is among them; removes it.
    pub(crate) fn take_target(&mut self, connection: &str, id: &Value) -> bool {
        match self
            .entries
            .iter()
            .position(|(_, c, i)| &**c == connection && i == id)
        {
            Some(at) => {
                self.entries.remove(at);
                true
            }
            None => false,
        }
    }
}

/// The v1 form of a v2 session's history, or the v2 form of a v1 session's: the logged lines
/// through a fresh translation (prompts as the live part shows them, see `feed.rs`).
pub(crate) fn translate_history(
    agent_version: u16,
    lines: impl IntoIterator<Item = HistoryLine>,
) -> Vec<String> {
    let mut translation = Translation::new(agent_version, 0);
    let mut out = Vec::new();
    for line in lines {
        match line {
            HistoryLine::Prompt { line, key, chunks } => {
                out.extend(chunks);
                out.extend(translation.prompt(&line, &key).updates);
            }
            HistoryLine::Agent { line, answer_key } => {
                out.extend(translation.agent_line(&line, answer_key.as_deref()).updates);
            }
        }
    }
    out
}

/// One logged line of a session's history, ready for [`translate_history`].
pub(crate) enum HistoryLine {
    /// A prompt (client-facing session id), with the v1 user chunks shown for it (v2 agent).
    Prompt {
        line: String,
        key: String,
        chunks: Vec<String>,
    },
    /// An agent update, or an answer to a prompt (`answer_key`).
    Agent {
        line: String,
        answer_key: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v2_turn_reaches_v1_clients_as_v1_and_the_prompt_answer_waits_for_idle() {
        let mut t = Translation::new(2, 0);
        assert_eq!(t.version, 1);
        let prompt = r#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"go"}]}}"#;
        assert!(t.prompt(prompt, "7").updates.is_empty());
        let accepted = t.agent_line(
            r#"{"jsonrpc":"2.0","id":7,"result":{"messageId":"u1"}}"#,
            Some("7"),
        );
        assert!(accepted.answers.is_empty(), "held until the turn ends");
        let echo = t.agent_line(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"user_message","messageId":"u1","content":[{"type":"text","text":"go"}]}}}"#,
            None,
        );
        assert!(
            echo.updates.is_empty(),
            "the echo of the prompt is not shown again"
        );
        let chunk = t.agent_line(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"hi"}}}}"#,
            None,
        );
        assert_eq!(chunk.updates.len(), 1);
        let idle = t.agent_line(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}"#,
            None,
        );
        assert!(idle.updates.is_empty());
        assert_eq!(idle.answers.len(), 1);
        assert_eq!(idle.answers[0].0, "7");
        assert_eq!(idle.answers[0].1["result"]["stopReason"], "end_turn");
        use spindle_protocol::schema_check::{Direction, validate_outgoing};
        validate_outgoing(1, Direction::AgentToClient, &chunk.updates[0]).unwrap();
    }

    #[test]
    fn a_v2_diff_reaches_v1_clients_as_text_and_their_prompt_still_ends_the_turn() {
        let mut t = Translation::new(2, 0);
        let prompt = r#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"edit"}]}}"#;
        t.prompt(prompt, "7");
        t.agent_line(
            r#"{"jsonrpc":"2.0","id":7,"result":{"messageId":"u1"}}"#,
            Some("7"),
        );
        t.agent_line(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Edit","kind":"edit","status":"in_progress"}}}"#,
            None,
        );
        let tool = t.agent_line(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_content_chunk","toolCallId":"t1","content":{"type":"diff","changes":[{"operation":"modify","path":"/w/a.rs","fileType":"text"}],"patch":{"format":"git_patch","text":"-a\n+b\n"}}}}}"#,
            None,
        );
        assert_eq!(tool.updates.len(), 1, "{tool:?}");
        // The degrade fallback: the patch as text content (strict dropped it and failed the turn).
        assert!(
            tool.updates[0].contains(r#""text":"-a\n+b\n""#),
            "{}",
            tool.updates[0]
        );
        use spindle_protocol::schema_check::{Direction, validate_outgoing};
        validate_outgoing(1, Direction::AgentToClient, &tool.updates[0]).unwrap();
        let idle = t.agent_line(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}"#,
            None,
        );
        assert_eq!(idle.answers.len(), 1);
        assert_eq!(
            idle.answers[0].1["result"]["stopReason"], "end_turn",
            "not an error: {:?}",
            idle.answers[0].1
        );
    }

    #[test]
    fn a_v1_turn_reaches_v2_clients_with_the_v2_lifecycle() {
        let mut t = Translation::new(1, 0);
        assert_eq!(t.version, 2);
        let prompt = r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"go"}]}}"#;
        let out = t.prompt(prompt, "3");
        assert_eq!(out.answers.len(), 1, "accepted at once");
        assert!(out.answers[0].1["result"]["messageId"].is_string());
        assert_eq!(out.updates.len(), 2, "user_message + running");
        let end = t.agent_line(
            r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#,
            Some("3"),
        );
        assert_eq!(end.updates.len(), 1, "{end:?}");
        assert!(end.updates[0].contains("\"idle\""));
    }
}
