//! A small reference reducer for the tests: applies `update` objects the way
//! docs/src/semantics.md describes, independently of the agent code.

use std::collections::BTreeMap;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub kind: String,
    pub id: String,
    pub text: String,
}

#[derive(Debug, Default)]
pub struct Model {
    pub messages: Vec<Message>,
    /// Chunks routed aside by routing metadata: (segment, text).
    pub segments: Vec<(String, String)>,
    pub clear_boundaries: usize,
    pub usage: Vec<u64>,
    /// Tool call id -> status history.
    pub tools: BTreeMap<String, Vec<String>>,
    pub tool_chunks: usize,
    /// Latest plan: (content, status).
    pub plan: Vec<(String, String)>,
    pub commands_updates: usize,
    pub states: Vec<String>,
    pub compaction: Vec<String>,
    pub summary: String,
    /// Updates of kinds the model does not know, and unknown content blocks.
    pub unknown: Vec<Value>,
}

fn text_of(block: &Value) -> Option<&str> {
    (block["type"] == "text")
        .then(|| block["text"].as_str())
        .flatten()
}

impl Model {
    fn message(&mut self, kind: &str, id: &str) -> &mut Message {
        let pos = self
            .messages
            .iter()
            .position(|m| m.kind == kind && m.id == id);
        let pos = pos.unwrap_or_else(|| {
            self.messages.push(Message {
                kind: kind.to_owned(),
                id: id.to_owned(),
                text: String::new(),
            });
            self.messages.len() - 1
        });
        &mut self.messages[pos]
    }

    pub fn apply(&mut self, u: &Value) {
        let tag = u["sessionUpdate"].as_str().unwrap_or("");
        let id = u["messageId"].as_str().unwrap_or("").to_owned();
        match tag {
            "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk" => {
                let kind = &tag[..tag.len() - "_chunk".len()];
                let Some(text) = text_of(&u["content"]) else {
                    self.unknown.push(u.clone());
                    return;
                };
                let segment = u
                    .pointer("/_meta/spindle/segment")
                    .or_else(|| u.get("segment"))
                    .and_then(Value::as_str);
                if let Some(segment) = segment {
                    self.segments.push((segment.to_owned(), text.to_owned()));
                    return;
                }
                if u.pointer("/_meta/claudeCode/clearBoundary") == Some(&Value::Bool(true)) {
                    self.clear_boundaries += 1;
                }
                let snapshot = u.pointer("/_meta/spindle/snapshot") == Some(&Value::Bool(true));
                let msg = self.message(kind, &id);
                if snapshot {
                    msg.text.clear();
                }
                msg.text.push_str(text);
            }
            "agent_message" | "agent_thought" | "user_message" => {
                let content = u.get("content").cloned();
                let msg = self.message(tag, &id);
                match content {
                    None => {}
                    Some(Value::Array(blocks)) => {
                        msg.text = blocks.iter().filter_map(text_of).collect();
                    }
                    Some(_) => msg.text.clear(),
                }
            }
            "agent_message_clear" | "agent_thought_clear" => {
                let kind = &tag[..tag.len() - "_clear".len()];
                let target = if id.is_empty() {
                    self.messages.iter_mut().rev().find(|m| m.kind == kind)
                } else {
                    self.messages
                        .iter_mut()
                        .find(|m| m.kind == kind && m.id == id)
                };
                if let Some(m) = target {
                    m.text.clear();
                }
            }
            "session_cleared" => self.clear_boundaries += 1,
            "usage_update" => self.usage.push(u["used"].as_u64().unwrap()),
            "tool_call" | "tool_call_update" => {
                let tid = u["toolCallId"].as_str().unwrap().to_owned();
                let entry = self.tools.entry(tid).or_default();
                if let Some(status) = u["status"].as_str() {
                    entry.push(status.to_owned());
                }
            }
            "tool_call_content_chunk" => self.tool_chunks += 1,
            "plan" | "plan_update" => {
                let entries = u
                    .get("entries")
                    .or_else(|| u.pointer("/plan/entries"))
                    .and_then(Value::as_array)
                    .unwrap();
                self.plan = entries
                    .iter()
                    .map(|e| {
                        (
                            e["content"].as_str().unwrap().to_owned(),
                            e["status"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect();
            }
            "available_commands_update" => self.commands_updates += 1,
            "state_update" => self.states.push(u["state"].as_str().unwrap().to_owned()),
            "compaction_update" => self
                .compaction
                .push(u["status"].as_str().unwrap().to_owned()),
            "compaction_summary_chunk" => {
                self.summary
                    .push_str(u["content"]["text"].as_str().unwrap());
            }
            "current_mode_update" | "session_info_update" => {}
            _ => self.unknown.push(u.clone()),
        }
    }

    /// The text of the last agent message that has any.
    pub fn final_reply(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|m| (m.kind == "agent_message") && !m.text.is_empty())
            .map(|m| m.text.clone())
            .unwrap_or_default()
    }

    pub fn agent_messages(&self) -> Vec<&Message> {
        self.messages
            .iter()
            .filter(|m| m.kind == "agent_message")
            .collect()
    }

    /// All thought text, in message order.
    pub fn thoughts(&self) -> String {
        self.messages
            .iter()
            .filter(|m| m.kind == "agent_thought")
            .map(|m| m.text.as_str())
            .collect::<Vec<_>>()
            .join("|")
    }
}
