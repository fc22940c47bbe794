//! The Spindle streaming extensions and how peers opt into them: the names
//! and the opt-in live in [`spindle_wire::extensions`] (spelled once for
//! every crate) and are re-exported here for users of this crate.
//!
//! Spindle accepts these session-update extensions from any agent. An agent
//! should emit them only to a client that listed them in the `initialize`
//! request under `_meta` ([`Extensions::to_meta`]):
//!
//! ```json
//! {"_meta": {"spindle": {"extensions": ["agent_message_clear", "agent_thought_clear",
//!                                      "session_cleared", "clear_boundary"]}}}
//! ```
//!
//! An agent may list what it emits the same way in its `initialize` result.

pub use spindle_wire::extensions::{EXTENSIONS_KEY, Extension, Extensions, listed_names};
pub use spindle_wire::meta::SPINDLE_META_KEY;
pub use spindle_wire::tags::{AGENT_MESSAGE_CLEAR, AGENT_THOUGHT_CLEAR, SESSION_CLEARED};

/// Every extension name listed under `_meta.spindle.extensions` (known or
/// not, non-strings skipped), as owned strings.
pub fn listed_extension_names(meta: &serde_json::Value) -> Vec<String> {
    listed_names(meta).map(str::to_owned).collect()
}
