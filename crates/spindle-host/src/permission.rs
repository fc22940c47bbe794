//! An agent's `session/request_permission` as a question to the user, and the option a standing
//! "always" answer picks: the one implementation `spindle chat` and the web page share, so the
//! same request reads the same and the same remembered answer does the same in both.

use serde_json::Value;
use spindle_wire::client_methods::permission_kinds::{
    ALLOW_ALWAYS, ALLOW_ONCE, REJECT_ALWAYS, REJECT_ONCE,
};

use crate::PermissionRule;

/// The title of a request that names neither itself nor its tool call.
pub const UNNAMED_ACTION: &str = "an unnamed action";

/// One option of a `session/request_permission`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionOption {
    /// `optionId`.
    pub id: String,
    /// Human-readable name (the id when the agent gave none).
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always`, or what the agent sent
    /// (empty when it sent none).
    pub kind: String,
}

impl PermissionOption {
    /// The options of a request's `options` array, in the agent's order. An option without an
    /// `optionId` cannot be answered, so it is left out; anything else malformed is empty.
    pub fn list(options: &Value) -> Vec<PermissionOption> {
        options
            .as_array()
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
            .collect()
    }
}

/// A permission request as a question to the user. Parsing never fails: missing or malformed
/// parts become the fallbacks documented on each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionQuestion {
    /// What the agent wants to do. The one fallback rule: the request's own `title` (v2), else
    /// its tool call's `title` (v1 `toolCall`, v2 `subject.toolCall`), else the tool call's id,
    /// else [`UNNAMED_ACTION`]. The request's title comes first because the agent wrote it for
    /// this question; a tool call's title describes the call.
    pub title: String,
    /// The tool call asked about (`toolCallId`), when there is one.
    pub tool_call_id: Option<String>,
    /// The options, in the agent's order (see [`PermissionOption::list`]).
    pub options: Vec<PermissionOption>,
    /// Which tool it is about, for standing answers; `None` when the request has no tool call.
    pub rule: Option<PermissionRule>,
}

impl PermissionQuestion {
    /// Reads the request's params as text, as they arrive (malformed JSON reads as no params).
    pub fn parse(params: &str) -> PermissionQuestion {
        PermissionQuestion::of_params(&serde_json::from_str(params).unwrap_or(Value::Null))
    }

    /// Reads the request's params.
    pub fn of_params(params: &Value) -> PermissionQuestion {
        let tool = params
            .get("toolCall")
            .or_else(|| params.pointer("/subject/toolCall"));
        let text = |value: Option<&Value>| {
            value
                .and_then(Value::as_str)
                .filter(|t| !t.trim().is_empty())
                .map(str::to_owned)
        };
        let tool_call_id = text(tool.and_then(|t| t.get("toolCallId")));
        let title = text(params.get("title"))
            .or_else(|| text(tool.and_then(|t| t.get("title"))))
            .or_else(|| tool_call_id.clone())
            .unwrap_or_else(|| UNNAMED_ACTION.to_owned());
        PermissionQuestion {
            title,
            tool_call_id,
            options: PermissionOption::list(params.get("options").unwrap_or(&Value::Null)),
            rule: PermissionRule::of_params(params),
        }
    }

    /// The option a standing answer of `kind` picks here (see [`standing_option`]).
    pub fn standing_option(&self, kind: &str) -> Option<&PermissionOption> {
        standing_option(kind, &self.options)
    }
}

/// Whether choosing an option of `kind` makes a standing answer (`allow_always`,
/// `reject_always`).
pub fn is_standing_kind(kind: &str) -> bool {
    kind == ALLOW_ALWAYS || kind == REJECT_ALWAYS
}

/// The option that a standing answer of `kind` (an "always" kind the user chose earlier for the
/// same tool) picks among `options`: the first option of that same kind, else the first of the
/// matching "once" kind (`allow_once` for `allow_always`), else none, and the user is asked.
///
/// Why fall back to "once": the user decided "always" for this tool, and the client keeps that
/// decision, not the agent. An agent that offers only `allow_once` / `reject_once` this time
/// (many offer "always" for some tools only) still gets the user's decision for this one request,
/// which is all a "once" option grants; asking again would make the "always" answer hold only
/// while the agent happens to offer it. It never crosses over: a standing "allow" never picks a
/// reject option, nor the other way round. Before this one rule, `spindle chat` required the exact
/// kind and the page fell back; the page's behaviour was kept.
pub fn standing_option<'a>(
    kind: &str,
    options: &'a [PermissionOption],
) -> Option<&'a PermissionOption> {
    let once = match kind {
        ALLOW_ALWAYS => ALLOW_ONCE,
        REJECT_ALWAYS => REJECT_ONCE,
        _ => return None,
    };
    [kind, once]
        .iter()
        .find_map(|wanted| options.iter().find(|o| o.kind == *wanted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn titles_fall_back_from_the_request_to_the_tool_call_to_its_id() {
        let title = |params: Value| PermissionQuestion::of_params(&params).title;
        assert_eq!(
            title(json!({"title": "Run it?", "toolCall": {"toolCallId": "t", "title": "ls"}})),
            "Run it?"
        );
        assert_eq!(
            title(json!({"subject": {"toolCall": {"toolCallId": "t", "title": "ls"}}})),
            "ls"
        );
        assert_eq!(
            title(json!({"toolCall": {"toolCallId": "t", "title": " "}})),
            "t"
        );
        assert_eq!(title(json!({"options": []})), UNNAMED_ACTION);
        assert_eq!(PermissionQuestion::parse("not json").title, UNNAMED_ACTION);
    }

    #[test]
    fn a_standing_answer_picks_its_kind_then_the_matching_once_and_never_crosses_over() {
        let options = PermissionOption::list(&json!([
            {"optionId": "r", "kind": "reject_once"},
            {"optionId": "a", "kind": "allow_once"},
            {"name": "no id", "kind": "allow_always"},
        ]));
        assert_eq!(options.len(), 2);
        assert_eq!(options[0].name, "r");
        let picked = |kind| standing_option(kind, &options).map(|o| o.id.as_str());
        assert_eq!(picked(ALLOW_ALWAYS), Some("a"));
        assert_eq!(picked(REJECT_ALWAYS), Some("r"));
        assert_eq!(picked(ALLOW_ONCE), None);
        let allow_only = PermissionOption::list(&json!([{"optionId": "a", "kind": "allow_once"}]));
        assert!(standing_option(REJECT_ALWAYS, &allow_only).is_none());
    }
}
