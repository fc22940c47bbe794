//! Metadata-only routing of agent text (docs/src/routing.md): which fields decide whether
//! a chunk of agent text is reply, thought or plan, and in which order. Text
//! is never inspected.
//!
//! The first string found decides, in this order: the update's
//! [`UPDATE_FIELDS`], then the content block's [`CONTENT_FIELDS`], then (only
//! when none of those is a string) the block's `annotations`, read through
//! [`ANNOTATION_FIELDS`].

/// Fields of the update object that carry a routing label, in priority order.
pub const UPDATE_FIELDS: [&str; 4] = ["segment", "kind", "channel", "role"];

/// The first routing field (`"segment": "thought"`), named on its own for
/// the writers that set it (the reference agent also mirrors it under
/// `_meta.spindle`).
pub const SEGMENT_FIELD: &str = UPDATE_FIELDS[0];

/// Fields of the content block that carry a routing label, after the
/// update's, in priority order.
pub const CONTENT_FIELDS: [&str; 3] = ["segment", "channel", "role"];

/// The content block's member holding annotations, weighed last.
pub const ANNOTATIONS_FIELD: &str = "annotations";

/// Fields of an annotations object (also of its `_meta`) that carry a label.
pub const ANNOTATION_FIELDS: [&str; 5] = ["segment", "kind", "channel", "role", "type"];

/// Labels (compared without case, trimmed) that route text to thoughts.
pub const THOUGHT_LABELS: [&str; 5] = ["think", "thought", "thinking", "segment", "intent"];

/// Labels that route text to the plan channel.
pub const PLAN_LABELS: [&str; 1] = ["plan"];

/// True when `key` is a member whose presence on an update or content block
/// may change the route: a fast path that ignores unknown members must fall
/// back to the general path when it sees one of these.
pub fn is_routing_field(key: &str) -> bool {
    UPDATE_FIELDS.contains(&key) || CONTENT_FIELDS.contains(&key) || key == ANNOTATIONS_FIELD
}

/// Where a piece of agent text belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The reply (default).
    Reply,
    /// Thoughts.
    Thought,
    /// The plan channel.
    Plan,
}

/// The route a label stands for.
pub fn route_of_label(label: &str) -> Route {
    let l = label.trim();
    if THOUGHT_LABELS.iter().any(|t| l.eq_ignore_ascii_case(t)) {
        Route::Thought
    } else if PLAN_LABELS.iter().any(|t| l.eq_ignore_ascii_case(t)) {
        Route::Plan
    } else {
        Route::Reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(route_of_label(" Thinking "), Route::Thought);
        assert_eq!(route_of_label("PLAN"), Route::Plan);
        assert_eq!(route_of_label("final"), Route::Reply);
        assert!(is_routing_field("annotations"));
        assert!(is_routing_field("kind"));
        assert!(!is_routing_field("text"));
    }
}
