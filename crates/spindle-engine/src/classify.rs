//! Metadata-only routing of agent text (docs/src/routing.md). Text is never inspected.
//!
//! The fields and their order come from [`spindle_wire::routing`]: the
//! update's [`UPDATE_FIELDS`], then the content block's [`CONTENT_FIELDS`],
//! then (only when none of those is a string) the block's annotations. The
//! first string found decides.

use serde_json::{Map, Value};
use spindle_wire::meta::META_KEY;
use spindle_wire::routing::{
    ANNOTATION_FIELDS, ANNOTATIONS_FIELD, CONTENT_FIELDS, UPDATE_FIELDS, route_of_label,
};

pub(crate) use spindle_wire::routing::Route;

/// The label an annotations value carries, if any: an object's
/// [`ANNOTATION_FIELDS`] (also under its `_meta`), or, for an array, the first
/// element that yields one (a string element is a label).
fn annotation_label(annotations: &Value) -> Option<&str> {
    match annotations {
        Value::String(s) => Some(s),
        Value::Array(items) => items.iter().find_map(annotation_label),
        Value::Object(map) => {
            for key in ANNOTATION_FIELDS {
                if let Some(Value::String(s)) = map.get(key) {
                    return Some(s);
                }
            }
            map.get(META_KEY)
                .filter(|m| m.is_object())
                .and_then(annotation_label)
        }
        _ => None,
    }
}

/// Decides the route from the update's and the content block's metadata.
pub(crate) fn route(
    update: Option<&Map<String, Value>>,
    content: Option<&Map<String, Value>>,
) -> Route {
    if let Some(update) = update {
        for key in UPDATE_FIELDS {
            if let Some(Value::String(s)) = update.get(key) {
                return route_of_label(s);
            }
        }
    }
    if let Some(content) = content {
        for key in CONTENT_FIELDS {
            if let Some(Value::String(s)) = content.get(key) {
                return route_of_label(s);
            }
        }
        if let Some(label) = content.get(ANNOTATIONS_FIELD).and_then(annotation_label) {
            return route_of_label(label);
        }
    }
    Route::Reply
}

/// True when a stored content block's own metadata marks it as thought or
/// plan content, which the persisted reply leaves out.
pub(crate) fn block_is_non_reply(extra: &Map<String, Value>) -> bool {
    route(None, Some(extra)) != Route::Reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_present_field_wins() {
        let update = json!({"segment": "thinking", "role": "assistant"});
        assert_eq!(route(update.as_object(), None), Route::Thought);
        let update = json!({"role": "assistant"});
        assert_eq!(route(update.as_object(), None), Route::Reply);
        let content = json!({"channel": "final", "annotations": {"segment": "thought"}});
        assert_eq!(route(None, content.as_object()), Route::Reply);
        let content = json!({"annotations": [{"audience": ["user"]}, {"kind": "plan"}]});
        assert_eq!(route(None, content.as_object()), Route::Plan);
        let update = json!({"segment": 3, "kind": "Intent"});
        assert_eq!(route(update.as_object(), None), Route::Thought);
    }
}
