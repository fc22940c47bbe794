//! Which tool a permission request is about, so an "always" answer can stand
//! for later requests of the same tool: one rule for `spindle chat` and
//! `spindle serve`.

use serde_json::Value;

/// What a permission request is about, for remembering "always" answers: the agent's tool name
/// when it gives one (`_meta.*.toolName`), else the tool call's kind and the first word of its
/// title (`execute: git`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionRule {
    /// What identifies the tool (`tool:NAME`, or `KIND:WORD`).
    pub key: String,
    /// How it is shown (`NAME`, or `KIND: WORD`).
    pub label: String,
}

impl PermissionRule {
    /// The rule a `session/request_permission`'s params fall under (v1 `toolCall`, v2
    /// `subject.toolCall`).
    pub fn of_params(params: &Value) -> Option<PermissionRule> {
        let tool = params
            .get("toolCall")
            .or_else(|| params.pointer("/subject/toolCall"))?;
        let tool_name = tool
            .get("_meta")
            .and_then(Value::as_object)
            .and_then(|meta| {
                meta.values()
                    .find_map(|v| v.get("toolName").and_then(Value::as_str))
            });
        if let Some(name) = tool_name.filter(|n| !n.trim().is_empty()) {
            return Some(PermissionRule {
                key: format!("tool:{name}"),
                label: name.to_string(),
            });
        }
        let kind = tool.get("kind").and_then(Value::as_str).unwrap_or("other");
        let title = tool
            .get("title")
            .or_else(|| params.get("title"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let word: String = title
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| "`'\"()[]{}:,".contains(c)))
            .find(|w| !w.is_empty())
            .unwrap_or("")
            .chars()
            .take(40)
            .collect();
        Some(if word.is_empty() {
            PermissionRule {
                key: format!("{kind}:"),
                label: kind.to_string(),
            }
        } else {
            PermissionRule {
                key: format!("{kind}:{word}"),
                label: format!("{kind}: {word}"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_come_from_the_tool_name_or_the_kind_and_first_word() {
        let v1 = json!({"sessionId": "s", "toolCall": {"toolCallId": "t", "title": "`git status`", "kind": "execute"}});
        assert_eq!(PermissionRule::of_params(&v1).unwrap().key, "execute:git");
        let v2 = json!({"sessionId": "s", "title": "Edit a.rs", "subject": {"type": "tool_call",
            "toolCall": {"toolCallId": "t", "kind": "edit"}}});
        assert_eq!(PermissionRule::of_params(&v2).unwrap().key, "edit:Edit");
        let named =
            json!({"toolCall": {"title": "x", "_meta": {"claudeCode": {"toolName": "Bash"}}}});
        assert_eq!(PermissionRule::of_params(&named).unwrap().key, "tool:Bash");
        assert_eq!(PermissionRule::of_params(&json!({"title": "x"})), None);
    }
}
