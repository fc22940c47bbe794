//! Validation of agent output against the official ACP JSON Schemas, through
//! the workspace's one validator (`spindle_protocol::schema_check`, which
//! embeds `tests/schema/` at the workspace root).
//!
//! Each request or notification is checked against the params definition of
//! its method, each response against the result definition of the method it
//! answers, each error against `Error`. The validator itself exempts the
//! Spindle extension updates (`agent_message_clear`, `agent_thought_clear`,
//! `session_cleared`: only their envelope is checked); the agent's own
//! exceptions are listed in [`documented_exception`].

use serde_json::Value;
use spindle_agent::Version;
use spindle_protocol::schema_check::{Direction, validate_with_method};

/// Lines the schema does not cover, by design: `/scenario hostile`'s unknown
/// update kind and unknown content block in v1 (v1 unions are closed; v2's
/// open unions accept both). The v1 extension updates are exempt in the
/// validator itself.
pub fn documented_exception(version: Version, line: &Value) -> bool {
    let update = &line["params"]["update"];
    version == Version::V1
        && (update["sessionUpdate"] == spindle_agent::UNKNOWN_UPDATE_KIND
            || update["content"]["type"] == spindle_agent::UNKNOWN_BLOCK_TYPE)
}

/// v1 lines carrying a Spindle extension update, which the official v1 types
/// and schema lack (sent only to opted-in clients or on explicit request).
pub fn v1_extension_update(version: Version, line: &Value) -> bool {
    use spindle_wire::tags::UpdateTag;
    let tag = line["params"]["update"]["sessionUpdate"]
        .as_str()
        .and_then(UpdateTag::parse);
    version == Version::V1
        && matches!(
            tag,
            Some(
                UpdateTag::AgentMessageClear
                    | UpdateTag::AgentThoughtClear
                    | UpdateTag::SessionCleared
            )
        )
}

fn truncate(line: &Value) -> String {
    let s = line.to_string();
    if s.len() > 600 {
        let mut cut = 600;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &s[..cut])
    } else {
        s
    }
}

/// Asserts that one agent line is valid ACP for `version`. `request_method`
/// is the method of the client request a response answers.
/// A batch's responses (a JSON array) are checked one by one, as responses
/// of no known method.
pub fn check_agent_line(version: Version, line: &Value, request_method: Option<&str>) {
    if let Some(batch) = line.as_array() {
        assert!(!batch.is_empty(), "the agent sent an empty batch");
        for item in batch {
            check_agent_line(version, item, None);
        }
        return;
    }
    if documented_exception(version, line) {
        return;
    }
    if let Some(method) = line["method"].as_str() {
        let client_method = version == Version::V1
            && (method.starts_with("fs/") || method.starts_with("terminal/"));
        assert!(
            matches!(method, "session/update" | "session/request_permission") || client_method,
            "agent sent an unexpected method {method}"
        );
    }
    let number = match version {
        Version::V1 => 1,
        Version::V2 => 2,
    };
    let text = line.to_string();
    if let Err(errors) =
        validate_with_method(number, Direction::AgentToClient, &text, request_method)
    {
        panic!(
            "failed schema validation: {:?}\nline: {}",
            &errors[..errors.len().min(3)],
            truncate(line)
        );
    }
}
