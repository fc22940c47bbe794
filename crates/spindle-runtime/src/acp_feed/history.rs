//! A session's history for one `/acp` client: what `session/load`, `session/attach` with
//! `historyPolicy` and a resume the hub's ring no longer covers (a snapshot) send, in the
//! client's protocol version (a translation of the whole history when the agent speaks the
//! other one).

use std::sync::Arc;

use serde_json::Value;
use spindle_wire::client_methods::{SESSION_PROMPT, SESSION_UPDATE};

use crate::acp_feed::client_lines::{Probe, client_line, client_prompt, user_chunks};
use crate::acp_feed::versions::{HistoryLine, translate_history};
use crate::store::Direction;

/// What a newly attached client receives before the live messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryPolicy {
    /// The whole session (as `session/load` replays it), then the open permission questions.
    Full,
    /// Only the open permission questions.
    PendingOnly,
    /// Nothing.
    None,
}

impl HistoryPolicy {
    pub(crate) fn parse(text: &str) -> Option<HistoryPolicy> {
        use spindle_wire::remote::{HISTORY_FULL, HISTORY_NONE, HISTORY_PENDING_ONLY};
        match text {
            HISTORY_FULL => Some(HistoryPolicy::Full),
            HISTORY_PENDING_ONLY => Some(HistoryPolicy::PendingOnly),
            HISTORY_NONE => Some(HistoryPolicy::None),
            _ => None,
        }
    }
}

/// A session's history as a snapshot for one client: built only when a subscription needs it.
#[derive(Debug)]
pub(crate) struct History {
    pub(super) session_id: Arc<str>,
    /// The agent's version.
    pub(super) protocol: u16,
    /// The client's version.
    pub(super) version: u16,
    pub(super) policy: HistoryPolicy,
    pub(super) open: Vec<Arc<str>>,
    pub(super) answers: Vec<Arc<str>>,
}

impl History {
    /// The snapshot payload: the messages, newline-separated (none contains a raw newline).
    pub(crate) fn lines(&self, logged: &[(Direction, String)]) -> String {
        let mut out = Vec::new();
        if self.policy == HistoryPolicy::Full {
            if self.version == self.protocol {
                out = self.own_lines(logged);
            } else {
                out = translate_history(self.protocol, self.history_lines(logged));
            }
        }
        if self.policy != HistoryPolicy::None {
            out.extend(self.open.iter().map(|e| e.to_string()));
        }
        out.extend(self.answers.iter().map(|e| e.to_string()));
        out.join("\n")
    }

    /// The session as its agent's version has it (a v1 agent's prompts as user chunks).
    fn own_lines(&self, logged: &[(Direction, String)]) -> Vec<String> {
        let mut out = Vec::new();
        let mut prompts = 0;
        for (direction, line) in logged {
            let Ok(probe) = serde_json::from_str::<Probe<'_>>(line) else {
                continue;
            };
            match (direction, probe.method.as_deref()) {
                (Direction::Agent, Some(SESSION_UPDATE)) => {
                    out.extend(client_line(&self.session_id, line));
                }
                (Direction::Client, Some(SESSION_PROMPT)) if self.protocol < 2 => {
                    out.extend(user_chunks(&self.session_id, 1, &mut prompts, line));
                }
                _ => {}
            }
        }
        out
    }

    /// The logged lines the translation of the history needs.
    fn history_lines(&self, logged: &[(Direction, String)]) -> Vec<HistoryLine> {
        let mut out = Vec::new();
        let mut prompts = 0;
        let mut prompt_keys = std::collections::HashSet::new();
        for (direction, line) in logged {
            let Ok(probe) = serde_json::from_str::<Probe<'_>>(line) else {
                continue;
            };
            let key = probe.id.as_ref().map(Value::to_string);
            match (direction, probe.method.as_deref()) {
                (Direction::Agent, Some(SESSION_UPDATE)) => {
                    if let Some(line) = client_line(&self.session_id, line) {
                        out.push(HistoryLine::Agent {
                            line,
                            answer_key: None,
                        });
                    }
                }
                (Direction::Agent, None) => {
                    if let Some(key) = key.filter(|k| prompt_keys.remove(k)) {
                        out.push(HistoryLine::Agent {
                            line: line.clone(),
                            answer_key: Some(key),
                        });
                    }
                }
                (Direction::Client, Some(SESSION_PROMPT)) => {
                    let key = key.unwrap_or_default();
                    let Some(prompt) = client_prompt(&self.session_id, &key, line) else {
                        continue;
                    };
                    let chunks = if self.version < 2 {
                        user_chunks(&self.session_id, 1, &mut prompts, line)
                    } else {
                        Vec::new()
                    };
                    prompt_keys.insert(key.clone());
                    out.push(HistoryLine::Prompt {
                        line: prompt,
                        key,
                        chunks,
                    });
                }
                _ => {}
            }
        }
        out
    }

    /// Whether the snapshot needs the wire log.
    pub(crate) fn needs_log(&self) -> bool {
        self.policy == HistoryPolicy::Full
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::acp_feed::AcpFeed;
    use crate::hub::HubLimits;

    const UPDATE: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"agent-7","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#;
    const PROMPT: &str = r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"agent-7","prompt":[{"type":"text","text":"go"}]}}"#;
    const ASK: &str = r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"agent-7","toolCall":{"toolCallId":"t"},"options":[]}}"#;

    fn feed() -> AcpFeed {
        AcpFeed::new(12, 1, HubLimits::default(), 1)
    }
    #[test]
    fn history_follows_the_policy_and_a_late_resume_keeps_the_answers() {
        let mut feed = feed();
        let logged = vec![
            (Direction::Client, PROMPT.to_string()),
            (Direction::Agent, UPDATE.to_string()),
            (Direction::AgentReplay, UPDATE.to_string()),
        ];
        feed.on_lines(&[(Direction::Agent, ASK.into())]);
        feed.permission_opened("\"p1\"");
        let full = feed.history(HistoryPolicy::Full, None, 1).lines(&logged);
        let full: Vec<Value> = full
            .split('\n')
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            full.len(),
            3,
            "prompt, update (not the replay copy), open question"
        );
        assert_eq!(full[0]["params"]["update"]["content"]["text"], "go");
        assert!(full[2]["spindle"]["permission"].is_object());
        let pending = feed
            .history(HistoryPolicy::PendingOnly, None, 1)
            .lines(&logged);
        assert_eq!(pending.split('\n').count(), 1);
        assert!(
            feed.history(HistoryPolicy::None, None, 1)
                .lines(&logged)
                .is_empty()
        );
        let before = feed.hub.last_id();
        feed.respond("conn", &json!(5), Ok(json!({ "stopReason": "end_turn" })));
        let after = feed
            .history(HistoryPolicy::None, Some(before), 1)
            .lines(&[]);
        assert!(after.contains("\"stopReason\":\"end_turn\""), "{after}");
        let later = feed
            .history(HistoryPolicy::None, Some(feed.hub.last_id()), 1)
            .lines(&[]);
        assert!(later.is_empty());
    }
}
