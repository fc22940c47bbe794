//! What a logged line of a session becomes for `/acp` clients: the agent's notifications and
//! requests with the session id clients know, and prompts as `user_message_chunk` updates.

use serde::Deserialize;
use serde_json::{Value, json};
use spindle_wire::client_methods::{SESSION_PROMPT, SESSION_UPDATE, fields};

/// The method and id of a logged line, read without parsing the rest.
#[derive(Deserialize)]
pub(crate) struct Probe<'a> {
    #[serde(borrow, default)]
    pub(crate) method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    pub(crate) id: Option<Value>,
}

/// The params of a logged line with the client-facing session id.
pub(crate) fn client_params(session_id: &str, line: &str) -> Option<Value> {
    let mut value: Value = serde_json::from_str(line).ok()?;
    let params = value.get_mut("params")?.as_object_mut()?;
    params.insert(
        fields::SESSION_ID.into(),
        Value::String(session_id.to_string()),
    );
    value.get_mut("params").map(Value::take)
}

/// A logged `session/prompt` with the client-facing session id, under its logged id.
pub(crate) fn client_prompt(session_id: &str, key: &str, line: &str) -> Option<String> {
    let params = client_params(session_id, line)?;
    let id = serde_json::from_str::<Value>(key).unwrap_or(Value::Null);
    Some(
        json!({ "jsonrpc": "2.0", "id": id, "method": SESSION_PROMPT, "params": params })
            .to_string(),
    )
}

/// An agent notification as clients receive it: the logged line, `sessionId` replaced.
pub(crate) fn client_line(session_id: &str, line: &str) -> Option<String> {
    let params = client_params(session_id, line)?;
    Some(json!({ "jsonrpc": "2.0", "method": SESSION_UPDATE, "params": params }).to_string())
}

/// The prompt of a logged `session/prompt` request as `user_message_chunk` updates.
pub(crate) fn user_chunks(
    session_id: &str,
    protocol: u16,
    prompts: &mut u64,
    line: &str,
) -> Vec<String> {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Vec::new();
    };
    let Some(blocks) = value.pointer("/params/prompt").and_then(Value::as_array) else {
        return Vec::new();
    };
    *prompts += 1;
    let message_id = format!("spindle-prompt-{prompts}");
    blocks
        .iter()
        .map(|block| {
            let mut update = json!({
                spindle_wire::web::SESSION_UPDATE_TAG: spindle_wire::tags::USER_MESSAGE_CHUNK,
                "content": block,
            });
            if protocol >= 2 {
                update["messageId"] = Value::String(message_id.clone());
            }
            json!({
                "jsonrpc": "2.0", "method": SESSION_UPDATE,
                "params": { "sessionId": session_id, "update": update },
            })
            .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPDATE: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"agent-7","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#;
    const PROMPT: &str = r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"agent-7","prompt":[{"type":"text","text":"go"}]}}"#;

    #[test]
    fn what_clients_get_validates_against_the_official_schemas() {
        use spindle_protocol::schema_check::{Direction as Side, validate_outgoing};
        for version in [1u16, 2] {
            let mut prompts = 0;
            let mut lines = user_chunks("12", version, &mut prompts, PROMPT);
            if version == 1 {
                lines.extend(client_line("12", UPDATE));
            }
            assert!(!lines.is_empty());
            for line in lines {
                validate_outgoing(version, Side::AgentToClient, &line)
                    .unwrap_or_else(|e| panic!("v{version}: {e:?}\n{line}"));
            }
        }
    }
}
