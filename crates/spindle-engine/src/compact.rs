//! A JSON object kept as its compact text: [`CompactObject`].
//!
//! Tool calls are the bulk of a long session's non-text state. As a
//! `serde_json::Map` (an ordered map, one per nested object) a 220-byte tool
//! call took about 3.3 KB; as its text plus the offsets of its top-level
//! members it takes about its own size. Readers that want the fields parse
//! them on demand; the engine patches members without parsing the others.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

/// Where one top-level member is in the text: the key between its quotes
/// (JSON-escaped, as serde_json writes it) and the value.
#[derive(Debug, Clone, Copy)]
struct Member {
    key_start: u32,
    key_end: u32,
    value_start: u32,
    value_end: u32,
}

/// A JSON object as compact text (serde_json's own output, so every key and
/// string has one spelling) with the offsets of its members, in wire order.
#[derive(Clone)]
pub(crate) struct CompactObject {
    text: Box<str>,
    members: Box<[Member]>,
}

/// One change to a member: `Some` sets it (replacing in place or appending),
/// `None` removes it.
pub(crate) type MemberChange<'a> = (&'a str, Option<&'a Value>);

impl CompactObject {
    /// The object's members, in order, as written in `map`.
    pub(crate) fn from_map(map: &Map<String, Value>) -> CompactObject {
        let mut builder = Builder::default();
        for (key, value) in map {
            builder.push_value(key, value);
        }
        builder.finish()
    }

    /// The whole object as compact JSON text.
    pub(crate) fn as_json(&self) -> &str {
        &self.text
    }

    /// The object parsed into a map (wire order kept).
    pub(crate) fn to_map(&self) -> Map<String, Value> {
        serde_json::from_str(&self.text).unwrap_or_default()
    }

    /// The raw JSON text of the member `key`.
    pub(crate) fn get_raw(&self, key: &str) -> Option<&str> {
        self.members
            .iter()
            .find(|m| key_eq(self.slice(m.key_start, m.key_end), key))
            .map(|m| self.slice(m.value_start, m.value_end))
    }

    /// The member `key`, parsed.
    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        self.get_raw(key)
            .and_then(|raw| serde_json::from_str(raw).ok())
    }

    /// The member `key` when it is a string (borrowed unless it has escapes).
    pub(crate) fn get_str(&self, key: &str) -> Option<Cow<'_, str>> {
        let raw = self.get_raw(key)?;
        let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
        if inner.contains('\\') {
            serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }

    /// The object with `changes` applied in order: a member that exists keeps
    /// its position, a new one goes at the end, a removed one disappears.
    /// Members not named are copied as text, never parsed.
    pub(crate) fn patched(&self, changes: &[MemberChange<'_>]) -> CompactObject {
        let mut builder = Builder::default();
        for m in self.members.iter() {
            let key_raw = self.slice(m.key_start, m.key_end);
            // The last change to a key wins, as if they were applied one by one.
            match changes.iter().rev().find(|(key, _)| key_eq(key_raw, key)) {
                Some((_, Some(value))) => builder.push_raw_key_value(key_raw, value),
                Some((_, None)) => {}
                None => builder.push_raw(key_raw, self.slice(m.value_start, m.value_end)),
            }
        }
        // New keys go at the end, in the order of their last change.
        for (i, (key, value)) in changes.iter().enumerate() {
            let superseded = changes[i + 1..].iter().any(|(later, _)| later == key);
            if let Some(value) = value
                && !superseded
                && self.get_raw(key).is_none()
            {
                builder.push_value(key, value);
            }
        }
        builder.finish()
    }

    /// The object with `items` (JSON texts joined by commas) appended to the
    /// array member `key`; a missing or non-array member becomes an array of
    /// just `items`. Other members are copied as text.
    pub(crate) fn with_array_items(&self, key: &str, items: &str) -> CompactObject {
        let joined = match self.get_raw(key) {
            Some("[]") | None => format!("[{items}]"),
            Some(raw) if raw.starts_with('[') => format!("{},{items}]", &raw[..raw.len() - 1]),
            Some(_) => format!("[{items}]"),
        };
        let mut builder = Builder::default();
        let mut found = false;
        for m in self.members.iter() {
            let key_raw = self.slice(m.key_start, m.key_end);
            if !found && key_eq(key_raw, key) {
                found = true;
                builder.push_raw(key_raw, &joined);
            } else {
                builder.push_raw(key_raw, self.slice(m.value_start, m.value_end));
            }
        }
        if !found {
            let key = builder.push_key(key);
            let start = builder.text.len();
            builder.text.push_str(&joined);
            builder.record(key, start);
        }
        builder.finish()
    }

    fn slice(&self, start: u32, end: u32) -> &str {
        &self.text[start as usize..end as usize]
    }
}

impl Default for CompactObject {
    fn default() -> Self {
        CompactObject {
            text: "{}".into(),
            members: Box::new([]),
        }
    }
}

impl PartialEq for CompactObject {
    /// Equal as JSON objects: the same members with equal values, in any
    /// order (like `serde_json::Map`).
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text || self.to_map() == other.to_map()
    }
}

impl fmt::Debug for CompactObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Compares a stored key (JSON-escaped, canonical) with a plain key.
fn key_eq(raw: &str, key: &str) -> bool {
    if raw.contains('\\') {
        serde_json::from_str::<String>(&format!("\"{raw}\"")).is_ok_and(|k| k == key)
    } else {
        raw == key
    }
}

/// Writes members one after the other and records where each one is.
#[derive(Default)]
struct Builder {
    text: String,
    members: Vec<Member>,
}

impl Builder {
    fn open_member(&mut self) {
        self.text
            .push(if self.members.is_empty() { '{' } else { ',' });
    }

    fn push_key(&mut self, key: &str) -> (u32, u32) {
        self.open_member();
        let quoted = serde_json::to_string(key).expect("a string serializes");
        let start = self.text.len() + 1;
        self.text.push_str(&quoted);
        let end = self.text.len() - 1;
        self.text.push(':');
        (offset(start), offset(end))
    }

    fn push_raw_key(&mut self, key_raw: &str) -> (u32, u32) {
        self.open_member();
        self.text.push('"');
        let start = self.text.len();
        self.text.push_str(key_raw);
        let end = self.text.len();
        self.text.push_str("\":");
        (offset(start), offset(end))
    }

    fn record(&mut self, (key_start, key_end): (u32, u32), value_start: usize) {
        self.members.push(Member {
            key_start,
            key_end,
            value_start: offset(value_start),
            value_end: offset(self.text.len()),
        });
    }

    fn write_value(&mut self, value: &Value) {
        // Writing into a String cannot fail and a Value always serializes.
        let mut bytes = std::mem::take(&mut self.text).into_bytes();
        serde_json::to_writer(&mut bytes, value).expect("a Value serializes");
        self.text = String::from_utf8(bytes).expect("serde_json writes UTF-8");
    }

    fn push_value(&mut self, key: &str, value: &Value) {
        let key = self.push_key(key);
        let start = self.text.len();
        self.write_value(value);
        self.record(key, start);
    }

    fn push_raw_key_value(&mut self, key_raw: &str, value: &Value) {
        let key = self.push_raw_key(key_raw);
        let start = self.text.len();
        self.write_value(value);
        self.record(key, start);
    }

    fn push_raw(&mut self, key_raw: &str, value_raw: &str) {
        let key = self.push_raw_key(key_raw);
        let start = self.text.len();
        self.text.push_str(value_raw);
        self.record(key, start);
    }

    fn finish(mut self) -> CompactObject {
        if self.members.is_empty() {
            return CompactObject::default();
        }
        self.text.push('}');
        CompactObject {
            text: self.text.into_boxed_str(),
            members: self.members.into_boxed_slice(),
        }
    }
}

/// Offsets are u32: a single tool call over 4 GiB is not representable (the
/// runtime's line limit is far below that).
fn offset(n: usize) -> u32 {
    u32::try_from(n).expect("a JSON object under 4 GiB")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn round_trips_members_in_wire_order() {
        let source = map(json!({"z": 1, "a": {"nested": [1, "two", null]}, "m": "x\"y\u{1F600}"}));
        let object = CompactObject::from_map(&source);
        assert_eq!(
            object.as_json(),
            r#"{"z":1,"a":{"nested":[1,"two",null]},"m":"x\"y😀"}"#
        );
        let back = object.to_map();
        assert_eq!(back.keys().collect::<Vec<_>>(), vec!["z", "a", "m"]);
        assert_eq!(back, source);
        assert_eq!(object.get("a"), Some(json!({"nested": [1, "two", null]})));
        assert_eq!(object.get_str("m").as_deref(), Some("x\"y\u{1F600}"));
        assert_eq!(object.get_str("z"), None);
        assert_eq!(object.get("missing"), None);
    }

    #[test]
    fn escaped_keys_are_found_by_their_plain_spelling() {
        let object = CompactObject::from_map(&map(json!({"we\"ird\nkey": "v", "plain": 2})));
        assert_eq!(object.get_str("we\"ird\nkey").as_deref(), Some("v"));
        let patched = object.patched(&[("we\"ird\nkey", Some(&json!(3)))]);
        assert_eq!(
            patched.to_map(),
            map(json!({"we\"ird\nkey": 3, "plain": 2}))
        );
    }

    #[test]
    fn patches_replace_in_place_append_new_and_remove() {
        let object = CompactObject::from_map(&map(json!({"a": 1, "b": 2, "c": 3})));
        let patched = object.patched(&[
            ("b", Some(&json!({"x": true}))),
            ("d", Some(&json!("new"))),
            ("a", None),
            ("e", None),
        ]);
        assert_eq!(patched.as_json(), r#"{"b":{"x":true},"c":3,"d":"new"}"#);
        assert_eq!(patched.get("c"), Some(json!(3)));
        // The last change to a key wins.
        let twice = object.patched(&[("a", None), ("a", Some(&json!(9)))]);
        assert_eq!(twice.as_json(), r#"{"a":9,"b":2,"c":3}"#);
        let new_twice = object.patched(&[("n", Some(&json!(1))), ("n", None)]);
        assert_eq!(new_twice.as_json(), r#"{"a":1,"b":2,"c":3}"#);
        let appended = object.with_array_items("b", r#"{"i":1},"two""#);
        assert_eq!(appended.as_json(), r#"{"a":1,"b":[{"i":1},"two"],"c":3}"#);
        let fresh = object.with_array_items("new", "1");
        assert_eq!(fresh.as_json(), r#"{"a":1,"b":2,"c":3,"new":[1]}"#);
        let emptied = object.patched(&[("a", None), ("b", None), ("c", None)]);
        assert_eq!(emptied.as_json(), "{}");
        assert_eq!(emptied.get("a"), None);
    }

    #[test]
    fn equality_is_json_object_equality() {
        let ab = CompactObject::from_map(&map(json!({"a": 1, "b": [2]})));
        let ba = CompactObject::from_map(&map(json!({"b": [2], "a": 1})));
        let other = CompactObject::from_map(&map(json!({"a": 1, "b": [3]})));
        assert_eq!(ab, ba);
        assert_ne!(ab, other);
    }
}
