//! The Spindle streaming extensions and how peers opt into them.
//!
//! Spindle accepts these session-update extensions from any agent. An agent
//! emits them only to a client that listed them in its `initialize` request
//! under `_meta`, and may list what it emits the same way in its result:
//!
//! ```json
//! {"_meta": {"spindle": {"extensions": ["agent_message_clear", "agent_thought_clear",
//!                                      "session_cleared", "clear_boundary"]}}}
//! ```

use serde_json::{Map, Value};

use crate::meta::SPINDLE_META_KEY;

/// The member of `_meta.spindle` that lists extensions.
pub const EXTENSIONS_KEY: &str = "extensions";

/// One Spindle extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Extension {
    /// `sessionUpdate: "agent_message_clear"`: clear the streamed content of
    /// the current (or named) agent message.
    AgentMessageClear,
    /// `sessionUpdate: "agent_thought_clear"`: the same for thoughts.
    AgentThoughtClear,
    /// `sessionUpdate: "session_cleared"`: the agent cleared its context.
    SessionCleared,
    /// `_meta.claudeCode.clearBoundary: true` on the first chunk after a clear.
    ClearBoundary,
}

impl Extension {
    /// Every extension, in the order Spindle lists them.
    pub const ALL: [Extension; 4] = [
        Extension::AgentMessageClear,
        Extension::AgentThoughtClear,
        Extension::SessionCleared,
        Extension::ClearBoundary,
    ];

    /// The name listed in the opt-in.
    pub const fn name(self) -> &'static str {
        match self {
            Extension::AgentMessageClear => crate::tags::AGENT_MESSAGE_CLEAR,
            Extension::AgentThoughtClear => crate::tags::AGENT_THOUGHT_CLEAR,
            Extension::SessionCleared => crate::tags::SESSION_CLEARED,
            Extension::ClearBoundary => "clear_boundary",
        }
    }

    /// The extension an opt-in name stands for. `clearBoundary` (the flag's
    /// own spelling, which some peers list) is read as `clear_boundary`.
    pub fn from_name(name: &str) -> Option<Extension> {
        if name == crate::meta::CLEAR_BOUNDARY_FLAG {
            return Some(Extension::ClearBoundary);
        }
        Extension::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// A set of extensions: what a peer opted into or emits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extensions {
    bits: u8,
}

impl Extensions {
    /// No extension.
    pub const NONE: Extensions = Extensions { bits: 0 };

    /// Every extension.
    pub const fn all() -> Extensions {
        Extensions { bits: 0b1111 }
    }

    const fn bit(e: Extension) -> u8 {
        1 << (e as u8)
    }

    /// True when `e` is in the set.
    pub const fn contains(self, e: Extension) -> bool {
        self.bits & Self::bit(e) != 0
    }

    /// Adds `e`.
    pub fn insert(&mut self, e: Extension) {
        self.bits |= Self::bit(e);
    }

    /// True when the set is empty.
    pub const fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The extensions in the set, in [`Extension::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Extension> {
        Extension::ALL
            .into_iter()
            .filter(move |e| self.contains(*e))
    }

    /// The names in the set, in [`Extension::ALL`] order.
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Extension::name).collect()
    }

    /// The set listed in a `_meta` object (`{"spindle": {"extensions": [..]}}`).
    /// Unknown names and non-string entries are ignored; any other shape is
    /// the empty set.
    pub fn from_meta(meta: &Value) -> Extensions {
        let mut set = Extensions::NONE;
        for name in listed_names(meta) {
            if let Some(e) = Extension::from_name(name) {
                set.insert(e);
            }
        }
        set
    }

    /// The set listed in the `_meta` of `initialize` params or result.
    pub fn from_initialize(params_or_result: &Value) -> Extensions {
        params_or_result
            .get("_meta")
            .map_or(Extensions::NONE, Extensions::from_meta)
    }

    /// The `_meta` object that lists this set: `{"spindle": {"extensions": [..]}}`.
    pub fn to_meta(self) -> Value {
        let names = self.names().into_iter().map(Value::from).collect();
        let mut spindle = Map::new();
        spindle.insert(EXTENSIONS_KEY.to_owned(), Value::Array(names));
        let mut meta = Map::new();
        meta.insert(SPINDLE_META_KEY.to_owned(), Value::Object(spindle));
        Value::Object(meta)
    }
}

impl FromIterator<Extension> for Extensions {
    fn from_iter<I: IntoIterator<Item = Extension>>(iter: I) -> Self {
        let mut set = Extensions::NONE;
        for e in iter {
            set.insert(e);
        }
        set
    }
}

/// Every string listed under `_meta.spindle.extensions`, known or not.
pub fn listed_names(meta: &Value) -> impl Iterator<Item = &str> {
    meta.get(SPINDLE_META_KEY)
        .and_then(|s| s.get(EXTENSIONS_KEY))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn opt_in_round_trips_and_garbage_is_empty() {
        let meta = Extensions::all().to_meta();
        assert_eq!(
            meta,
            json!({"spindle": {"extensions": [
                "agent_message_clear", "agent_thought_clear", "session_cleared", "clear_boundary"
            ]}})
        );
        assert_eq!(Extensions::from_meta(&meta), Extensions::all());
        assert!(Extensions::from_meta(&json!({"spindle": {"extensions": "x"}})).is_empty());
        assert!(Extensions::from_meta(&json!(null)).is_empty());
        let some = Extensions::from_meta(
            &json!({"spindle": {"extensions": [1, "future", "session_cleared"]}}),
        );
        assert_eq!(some.names(), vec!["session_cleared"]);
        assert_eq!(
            listed_names(&json!({"spindle": {"extensions": [1, "future"]}})).collect::<Vec<_>>(),
            vec!["future"]
        );
    }

    #[test]
    fn the_flag_spelling_counts_as_clear_boundary() {
        let set = Extensions::from_initialize(
            &json!({"_meta": {"spindle": {"extensions": ["clearBoundary"]}}}),
        );
        assert!(set.contains(Extension::ClearBoundary));
        assert_eq!(set.names(), vec!["clear_boundary"]);
    }
}
