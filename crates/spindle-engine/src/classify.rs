//! Metadata-only routing of agent text (seed 004). Text is never inspected.
//!
//! Priority: `update.segment`, `update.kind`, `update.channel`, `update.role`,
//! `content.segment`, `content.channel`, `content.role`; only when none of those
//! is a string, `content.annotations`. The first string found decides.

use serde_json::{Map, Value};

/// Where a piece of agent text belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The reply (default).
    Reply,
    /// Thoughts: think/thought/thinking/segment/intent.
    Thought,
    /// The plan channel: plan.
    Plan,
}

fn route_of_label(label: &str) -> Route {
    let l = label.trim();
    for t in ["think", "thought", "thinking", "segment", "intent"] {
        if l.eq_ignore_ascii_case(t) {
            return Route::Thought;
        }
    }
    if l.eq_ignore_ascii_case("plan") {
        return Route::Plan;
    }
    Route::Reply
}

/// The label an annotations value carries, if any: an object's `segment`,
/// `kind`, `channel`, `role` or `type` (also under its `_meta`), or, for an
/// array, the first element that yields one (a string element is a label).
fn annotation_label(annotations: &Value) -> Option<&str> {
    match annotations {
        Value::String(s) => Some(s),
        Value::Array(items) => items.iter().find_map(annotation_label),
        Value::Object(map) => {
            for key in ["segment", "kind", "channel", "role", "type"] {
                if let Some(Value::String(s)) = map.get(key) {
                    return Some(s);
                }
            }
            map.get("_meta")
                .filter(|m| m.is_object())
                .and_then(annotation_label)
        }
        _ => None,
    }
}

/// Decides the route from the update's and the content block's metadata.
pub(crate) fn route(update: [Option<&Value>; 4], content: Option<&Map<String, Value>>) -> Route {
    for v in update.into_iter().flatten() {
        if let Value::String(s) = v {
            return route_of_label(s);
        }
    }
    if let Some(content) = content {
        for key in ["segment", "channel", "role"] {
            if let Some(Value::String(s)) = content.get(key) {
                return route_of_label(s);
            }
        }
        if let Some(label) = content.get("annotations").and_then(annotation_label) {
            return route_of_label(label);
        }
    }
    Route::Reply
}

/// True when a stored content block's own metadata marks it as thought or
/// plan content, which the persisted reply leaves out.
pub(crate) fn block_is_non_reply(extra: &Map<String, Value>) -> bool {
    route([None; 4], Some(extra)) != Route::Reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_present_field_wins() {
        let seg = json!("thinking");
        let role = json!("assistant");
        assert_eq!(
            route([Some(&seg), None, None, Some(&role)], None),
            Route::Thought
        );
        assert_eq!(route([None, None, None, Some(&role)], None), Route::Reply);
        let content = json!({"channel": "final", "annotations": {"segment": "thought"}});
        assert_eq!(route([None; 4], content.as_object()), Route::Reply);
        let content = json!({"annotations": [{"audience": ["user"]}, {"kind": "plan"}]});
        assert_eq!(route([None; 4], content.as_object()), Route::Plan);
        let not_string = json!(3);
        let intent = json!("Intent");
        assert_eq!(
            route([Some(&not_string), Some(&intent), None, None], None),
            Route::Thought
        );
    }
}
