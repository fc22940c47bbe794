//! v1-shaped agent capabilities read as v2's, for an agent that agreed to protocol 2 and still
//! advertised `agentCapabilities` (see `handshake.rs`). Only what has a v2 spelling is kept:
//! prompt content, MCP transports (stdio always, http when advertised; v2 has no SSE), and the
//! session markers fork, delete and additionalDirectories. v2's `session` object itself means
//! the baseline session methods (list, resume, close), which every such agent answers or refuses
//! with an error of its own.

use serde_json::{Map, Value, json};
use spindle_wire::client_methods::capabilities as caps;

/// `true` or an object: advertised.
fn on(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::Bool(true) | Value::Object(_)))
}

/// The v2 `capabilities` object for a v1 `agentCapabilities` object.
pub(super) fn v1_capabilities_as_v2(v1: &Value) -> Value {
    let mut session = Map::new();
    if let Some(prompt) = v1.get(caps::PROMPT_CAPABILITIES) {
        let mut markers = Map::new();
        for key in [caps::IMAGE, caps::AUDIO, caps::EMBEDDED_CONTEXT] {
            if on(prompt.get(key)) {
                markers.insert(key.to_owned(), json!({}));
            }
        }
        session.insert(caps::PROMPT.to_owned(), Value::Object(markers));
    }
    let mut mcp = Map::new();
    mcp.insert("stdio".to_owned(), json!({}));
    if on(v1.get("mcpCapabilities").and_then(|m| m.get("http"))) {
        mcp.insert("http".to_owned(), json!({}));
    }
    session.insert("mcp".to_owned(), Value::Object(mcp));
    if let Some(markers) = v1.get(caps::SESSION_CAPABILITIES) {
        for key in [caps::FORK, caps::DELETE, caps::ADDITIONAL_DIRECTORIES] {
            if on(markers.get(key)) {
                session.insert(key.to_owned(), json!({}));
            }
        }
    }
    json!({ caps::SESSION: session })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_shapes_read_as_v2() {
        let cases = [
            (json!({}), json!({"session": {"mcp": {"stdio": {}}}})),
            (
                // fast-agent's shape under protocol 2.
                json!({"loadSession": true,
                       "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                       "mcpCapabilities": {"http": true, "sse": true},
                       "sessionCapabilities": {"list": {}, "resume": {}, "fork": {}, "delete": null}}),
                json!({"session": {
                    "prompt": {"image": {}, "embeddedContext": {}},
                    "mcp": {"stdio": {}, "http": {}},
                    "fork": {}}}),
            ),
        ];
        for (v1, v2) in cases {
            assert_eq!(v1_capabilities_as_v2(&v1), v2, "{v1}");
        }
    }
}
