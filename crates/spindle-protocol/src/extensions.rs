//! The Spindle streaming extensions and how peers opt into them.
//!
//! Spindle accepts these session-update extensions from any agent. An agent
//! should emit them only to a client that listed them in the `initialize`
//! request under `_meta`:
//!
//! ```json
//! {"_meta": {"spindle": {"extensions": ["agent_message_clear", "agent_thought_clear",
//!                                      "session_cleared", "clear_boundary"]}}}
//! ```
//!
//! An agent may list what it emits the same way in its `initialize` result.

use serde_json::{Value, json};

/// The `_meta` key under which Spindle lists extensions.
pub const SPINDLE_META_KEY: &str = "spindle";

/// `sessionUpdate: "agent_message_clear"`: clear the streamed content of the
/// current (or given) agent message.
pub const AGENT_MESSAGE_CLEAR: &str = "agent_message_clear";
/// `sessionUpdate: "agent_thought_clear"`: the same for thoughts.
pub const AGENT_THOUGHT_CLEAR: &str = "agent_thought_clear";
/// `sessionUpdate: "session_cleared"`: the context was cleared (`/clear`).
pub const SESSION_CLEARED: &str = "session_cleared";
/// A structured `clearBoundary` marker on updates.
pub const CLEAR_BOUNDARY: &str = "clear_boundary";

/// Every extension Spindle understands.
pub const SPINDLE_EXTENSIONS: &[&str] = &[
    AGENT_MESSAGE_CLEAR,
    AGENT_THOUGHT_CLEAR,
    SESSION_CLEARED,
    CLEAR_BOUNDARY,
];

/// The `_meta` object advertising `extensions`.
pub fn spindle_meta(extensions: &[&str]) -> Value {
    json!({ SPINDLE_META_KEY: { "extensions": extensions } })
}

/// Extension names listed in a `_meta` object (unknown names kept, non-strings
/// ignored).
pub fn spindle_extensions_in(meta: &Value) -> Vec<String> {
    meta.get(SPINDLE_META_KEY)
        .and_then(|s| s.get("extensions"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_roundtrip_and_garbage() {
        let meta = spindle_meta(SPINDLE_EXTENSIONS);
        assert_eq!(spindle_extensions_in(&meta), SPINDLE_EXTENSIONS);
        assert!(spindle_extensions_in(&json!({"spindle": {"extensions": "x"}})).is_empty());
        assert!(spindle_extensions_in(&json!(null)).is_empty());
        assert_eq!(
            spindle_extensions_in(&json!({"spindle": {"extensions": [1, "future"]}})),
            vec!["future".to_owned()]
        );
    }
}
