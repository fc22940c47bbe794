//! The server's own ops for the page, beside the engine's render ops: permission questions and
//! file-write reviews, where the agent stands, standing permissions, banners, the transcript's
//! window. One enum, serialized in one place ([`PageOp::to_value`]); the page's handler table
//! for them is `assets/ops.js` in `spindle-web`.

use serde::Serialize;
use serde_json::Value;

/// One server op (`{"op": "web_...", ...}` on the wire).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum PageOp {
    /// The agent asks for permission; `options` as the agent sent them.
    #[serde(rename_all = "camelCase")]
    WebPermission {
        /// The question's key (the JSON text of the agent's request id).
        key: String,
        /// What is asked.
        title: String,
        /// The agent's options.
        options: Value,
        /// The tool call asked about.
        tool_call_id: Option<String>,
        /// The standing rule an "always" answer would remember.
        rule_key: Option<String>,
        /// The rule, for the user.
        rule_label: Option<String>,
    },
    /// A permission request answered by a standing rule, without asking.
    #[serde(rename_all = "camelCase")]
    WebPermissionAuto {
        /// What was asked.
        title: Value,
        /// The tool call asked about.
        tool_call_id: Value,
        /// The option chosen.
        option_id: String,
        /// The rule that answered.
        rule_key: String,
        /// The rule, for the user.
        rule_label: String,
    },
    /// A permission question closed (answered here, elsewhere, or withdrawn).
    WebPermissionResolved {
        /// The question's key.
        key: String,
        /// How it ended.
        outcome: String,
        /// Who answered (`spindle serve --users`), when someone did here.
        #[serde(skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// The agent asks for input (`elicitation/create`): a form or a URL, as
    /// [`spindle_host::Elicitation::view_json`] describes it.
    WebElicitation {
        /// The question's key (the JSON text of the agent's request id).
        key: String,
        /// What to show.
        elicitation: Value,
    },
    /// An elicitation closed (answered here or by another controller, withdrawn, completed).
    WebElicitationResolved {
        /// The question's key.
        key: String,
        /// `accept`, `decline`, `cancel`, `cancelled` (withdrawn) or `complete`.
        action: String,
        /// Who answered (`spindle serve --users`), when someone did here.
        #[serde(skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// The permissions remembered for the session.
    WebStandingPermissions {
        /// The rules.
        permissions: Value,
    },
    /// The session's checkpoints and restores, as its log noted them (`checkpoint_notes.rs`).
    WebCheckpoints {
        /// One per turn with a checkpoint: `{turn, at, files, skipped, replica}`.
        checkpoints: Value,
        /// One per restore: `{checkpoint, turn | restore, undo, written, deleted, at, afterTurn}`.
        restores: Value,
    },
    /// A file write waiting for the user's review.
    #[serde(rename_all = "camelCase")]
    WebReview {
        /// The review's key (the JSON text of the agent's request id).
        request_id: String,
        /// The agent session that writes.
        session_id: String,
        /// The file, as shown.
        path: String,
        /// Its text before (none: a new file).
        old_text: Option<String>,
        /// The text to write.
        new_text: String,
        /// The tool call the write belongs to.
        tool_call_id: Option<String>,
    },
    /// A review closed.
    #[serde(rename_all = "camelCase")]
    WebReviewResolved {
        /// The review's key.
        request_id: String,
        /// `accept`, `reject`, `cancelled` or `error`.
        decision: String,
        /// What went wrong, when it did.
        message: Option<String>,
    },
    /// Where the agent stands (`starting`, `ready`, `needs_auth`, ...).
    #[serde(rename_all = "camelCase")]
    WebStatus {
        /// The status.
        status: String,
        /// The agent's sign-in methods, as the page shows them.
        auth_methods: Value,
        /// A message for the user.
        message: Option<String>,
    },
    /// The session's title or list entry changed: the page reloads its session list.
    WebSession,
    /// The session's banner (`text: null` clears it).
    WebBanner {
        /// `info`, `warn` or `error`.
        level: String,
        /// The text, or none.
        text: Option<String>,
    },
    /// The prompts queued while a v1 agent's turn runs, first to be sent first:
    /// `[{id, text, position, images, acp}]` (see `crate::prompt_queue`).
    WebQueue {
        /// The items.
        items: Value,
    },
    /// A snapshot holds the transcript from entry `first` of `total`.
    WebWindow {
        /// The first entry the snapshot holds.
        first: usize,
        /// How many entries the transcript has.
        total: usize,
    },
}

impl From<PageOp> for Value {
    fn from(op: PageOp) -> Value {
        op.to_value()
    }
}

impl PageOp {
    /// The op as the page reads it: the one place a server op is serialized.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Each op's wire form, as the page's handlers (`assets/ops.js`) read it.
    #[test]
    fn each_op_has_the_wire_form_the_page_reads() {
        let cases = [
            (
                PageOp::WebPermission {
                    key: "1".into(),
                    title: "Edit a.rs".into(),
                    options: json!([]),
                    tool_call_id: Some("t".into()),
                    rule_key: None,
                    rule_label: None,
                },
                json!({"op": "web_permission", "key": "1", "title": "Edit a.rs", "options": [],
                       "toolCallId": "t", "ruleKey": null, "ruleLabel": null}),
            ),
            (
                PageOp::WebPermissionAuto {
                    title: json!("Run ls"),
                    tool_call_id: json!("t"),
                    option_id: "allow".into(),
                    rule_key: "execute:ls".into(),
                    rule_label: "ls".into(),
                },
                json!({"op": "web_permission_auto", "title": "Run ls", "toolCallId": "t",
                       "optionId": "allow", "ruleKey": "execute:ls", "ruleLabel": "ls"}),
            ),
            (
                PageOp::WebPermissionResolved {
                    key: "1".into(),
                    outcome: "selected".into(),
                    by: None,
                },
                json!({"op": "web_permission_resolved", "key": "1", "outcome": "selected"}),
            ),
            (
                PageOp::WebElicitation {
                    key: "\"e1\"".into(),
                    elicitation: json!({"message": "m", "mode": "url"}),
                },
                json!({"op": "web_elicitation", "key": "\"e1\"",
                       "elicitation": {"message": "m", "mode": "url"}}),
            ),
            (
                PageOp::WebElicitationResolved {
                    key: "1".into(),
                    action: "accept".into(),
                    by: None,
                },
                json!({"op": "web_elicitation_resolved", "key": "1", "action": "accept"}),
            ),
            (
                PageOp::WebStandingPermissions {
                    permissions: json!([]),
                },
                json!({"op": "web_standing_permissions", "permissions": []}),
            ),
            (
                PageOp::WebCheckpoints {
                    checkpoints: json!([{"turn": 1}]),
                    restores: json!([]),
                },
                json!({"op": "web_checkpoints", "checkpoints": [{"turn": 1}], "restores": []}),
            ),
            (
                PageOp::WebReview {
                    request_id: "2".into(),
                    session_id: "s".into(),
                    path: "a.rs".into(),
                    old_text: None,
                    new_text: "x".into(),
                    tool_call_id: None,
                },
                json!({"op": "web_review", "requestId": "2", "sessionId": "s", "path": "a.rs",
                       "oldText": null, "newText": "x", "toolCallId": null}),
            ),
            (
                PageOp::WebReviewResolved {
                    request_id: "2".into(),
                    decision: "accept".into(),
                    message: None,
                },
                json!({"op": "web_review_resolved", "requestId": "2", "decision": "accept",
                       "message": null}),
            ),
            (
                PageOp::WebStatus {
                    status: "ready".into(),
                    auth_methods: json!([]),
                    message: None,
                },
                json!({"op": "web_status", "status": "ready", "authMethods": [], "message": null}),
            ),
            (PageOp::WebSession, json!({"op": "web_session"})),
            (
                PageOp::WebBanner {
                    level: "info".into(),
                    text: None,
                },
                json!({"op": "web_banner", "level": "info", "text": null}),
            ),
            (
                PageOp::WebQueue {
                    items: json!([{"id": "q-1", "text": "next", "position": 1}]),
                },
                json!({"op": "web_queue",
                       "items": [{"id": "q-1", "text": "next", "position": 1}]}),
            ),
            (
                PageOp::WebWindow {
                    first: 40,
                    total: 100,
                },
                json!({"op": "web_window", "first": 40, "total": 100}),
            ),
        ];
        for (op, wire) in cases {
            assert_eq!(op.to_value(), wire);
        }
    }
}
