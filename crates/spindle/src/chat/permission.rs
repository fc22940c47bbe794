//! Permission requests: what is asked, and which answer `--yes` or a
//! non-interactive run gives. Never approves unless told to.

use serde_json::{Value, json};

use super::render::{Line, Style};

/// One option of a `session/request_permission`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionOption {
    /// `optionId`.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always`, ...
    pub kind: String,
}

/// A permission request as the chat shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionAsk {
    /// What the agent wants to do (tool title, else its id).
    pub subject: String,
    /// The options, in the agent's order.
    pub options: Vec<PermissionOption>,
}

impl PermissionAsk {
    /// Reads the request params (malformed parts become empty).
    pub fn parse(params: &str) -> PermissionAsk {
        let params: Value = serde_json::from_str(params).unwrap_or(Value::Null);
        // v1: `toolCall`; v2: `subject.toolCall`.
        let tool = params
            .get("toolCall")
            .or_else(|| params.get("subject").and_then(|s| s.get("toolCall")));
        let subject = tool
            .and_then(|t| t.get("title"))
            .or_else(|| tool.and_then(|t| t.get("toolCallId")))
            .and_then(Value::as_str)
            .unwrap_or("an action")
            .to_owned();
        let options = params
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|o| {
                let text = |key: &str| o.get(key).and_then(Value::as_str).map(str::to_owned);
                let id = text("optionId")?;
                Some(PermissionOption {
                    name: text("name").unwrap_or_else(|| id.clone()),
                    kind: text("kind").unwrap_or_default(),
                    id,
                })
            })
            .collect();
        PermissionAsk { subject, options }
    }

    /// `--yes`: the first allowing option.
    pub fn first_allow(&self) -> Option<&PermissionOption> {
        self.options
            .iter()
            .find(|o| o.kind == "allow_once" || o.kind == "allow_always")
    }

    /// Nobody can be asked: the first rejecting option, else `None`
    /// (answer `cancelled`).
    pub fn first_reject(&self) -> Option<&PermissionOption> {
        self.options
            .iter()
            .find(|o| o.kind == "reject_once" || o.kind == "reject_always")
    }

    /// The question as shown above the input prompt.
    pub fn question(&self) -> Vec<Line> {
        let mut lines = vec![Line::new(
            &format!("The agent asks permission: {}", self.subject),
            Style::Bold,
        )];
        for (i, option) in self.options.iter().enumerate() {
            lines.push(Line::new(
                &format!("  {}) {} [{}]", i + 1, option.name, option.kind),
                Style::Plain,
            ));
        }
        lines
    }

    /// The outcome for a typed answer: a number from the list, or `None`
    /// when the answer is not one.
    pub fn outcome_for_answer(&self, answer: &str) -> Option<Value> {
        let n: usize = answer.trim().parse().ok()?;
        let option = self.options.get(n.checked_sub(1)?)?;
        Some(selected(option))
    }
}

/// `{"outcome":"selected","optionId":...}` for `option`.
pub fn selected(option: &PermissionOption) -> Value {
    json!({"outcome": "selected", "optionId": option.id})
}

/// `{"outcome":"cancelled"}`.
pub fn cancelled() -> Value {
    json!({"outcome": "cancelled"})
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: &str = r#"{"sessionId":"s","toolCall":{"toolCallId":"t1","title":"Edit main.rs"},
        "options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},
                   {"optionId":"reject","name":"Reject","kind":"reject_once"}]}"#;

    #[test]
    fn picks_allow_for_yes_and_reject_otherwise() {
        let ask = PermissionAsk::parse(PARAMS);
        assert_eq!(ask.subject, "Edit main.rs");
        assert_eq!(ask.first_allow().map(|o| o.id.as_str()), Some("allow"));
        assert_eq!(ask.first_reject().map(|o| o.id.as_str()), Some("reject"));
    }

    #[test]
    fn typed_answers_are_one_based_and_checked() {
        let ask = PermissionAsk::parse(PARAMS);
        assert_eq!(
            ask.outcome_for_answer(" 2 "),
            Some(json!({"outcome":"selected","optionId":"reject"}))
        );
        assert_eq!(ask.outcome_for_answer("0"), None);
        assert_eq!(ask.outcome_for_answer("3"), None);
        assert_eq!(ask.outcome_for_answer("yes"), None);
    }
}
