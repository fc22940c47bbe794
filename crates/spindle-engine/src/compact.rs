//! A JSON object kept as its compact text: [`CompactObject`].
//!
//! Tool calls are the bulk of a long session's non-text state. As a
//! `serde_json::Map` (an ordered map, one per nested object) a 220-byte tool
//! call took about 3.3 KB; as its compact text it takes its own size. Readers
//! that want the fields parse them on demand; the engine patches members by
//! walking the top level once (nested values are skipped as raw text, never
//! parsed into values). No offsets are stored: an object of any size works.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

use crate::canonical;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A JSON object as compact text (serde_json's own output, so every key and
/// string has one spelling), members in wire order.
#[derive(Clone)]
pub(crate) struct CompactObject {
    text: Box<str>,
}

/// One change to a member: `Some` sets it (replacing in place or appending),
/// `None` removes it.
pub(crate) type MemberChange<'a> = (&'a str, Option<&'a Value>);

/// A member's new value for [`CompactObject::patched`]: a parsed `Value`, or
/// [`Canonical`] text.
pub(crate) trait MemberValue {
    /// Writes the member `key` with this value.
    fn push_to(&self, builder: &mut Builder, key: &str);
}

impl MemberValue for &Value {
    fn push_to(&self, builder: &mut Builder, key: &str) {
        builder.push_value(key, self);
    }
}

/// A value's canonical text (`crate::canonical`): written as it is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Canonical<'a>(pub &'a str);

impl MemberValue for Canonical<'_> {
    fn push_to(&self, builder: &mut Builder, key: &str) {
        builder.push_raw(key, self.0);
    }
}

impl CompactObject {
    /// The object's members, in order, as written in `map`.
    pub(crate) fn from_map(map: &Map<String, Value>) -> CompactObject {
        let mut builder = Builder::with_capacity(64 * map.len());
        for (key, value) in map {
            builder.push_value(key, value);
        }
        builder.finish()
    }

    /// The object of these members, in order: keys and canonical value texts
    /// (`crate::canonical`: what serde_json writes for the value), so the
    /// result equals [`Self::from_map`] of the parsed members.
    pub(crate) fn from_canonical_members<'a>(
        members: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> CompactObject {
        let members = members.into_iter();
        let mut builder = Builder::with_capacity(64 * members.size_hint().0);
        for (key, raw) in members {
            builder.push_raw(key, raw);
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

    /// The top-level members: unescaped keys (borrowed when they have no
    /// escapes) and raw values, in order.
    fn members(&self) -> Vec<(Cow<'_, str>, &str)> {
        // serde_json wrote the text, so the canonical walk reads it unless a
        // key has escapes or a value a float; serde reads those.
        if let Some(members) = canonical::members(&self.text) {
            return members
                .into_iter()
                .map(|(k, v)| (Cow::Borrowed(k), v))
                .collect();
        }
        // The text is always an object serde_json wrote, so this cannot fail.
        serde_json::from_str::<Members<'_>>(&self.text)
            .map(|m| m.0.into_iter().map(|(k, v)| (k, v.get())).collect())
            .unwrap_or_default()
    }

    /// The raw JSON text of the member `key`.
    pub(crate) fn get_raw(&self, key: &str) -> Option<&str> {
        self.members()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
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
    pub(crate) fn patched<V: MemberValue>(&self, changes: &[(&str, Option<V>)]) -> CompactObject {
        let members = self.members();
        let mut builder = Builder::with_capacity(self.text.len() + 64);
        for (key, raw) in &members {
            // The last change to a key wins, as if they were applied one by one.
            match changes.iter().rev().find(|(k, _)| *k == key.as_ref()) {
                Some((_, Some(value))) => value.push_to(&mut builder, key),
                Some((_, None)) => {}
                None => builder.push_raw(key, raw),
            }
        }
        // New keys go at the end, in the order of their last change.
        for (i, (key, value)) in changes.iter().enumerate() {
            let superseded = changes[i + 1..].iter().any(|(later, _)| later == key);
            if let Some(value) = value
                && !superseded
                && !members.iter().any(|(k, _)| k == key)
            {
                value.push_to(&mut builder, key);
            }
        }
        builder.finish()
    }

    /// The object with `items` (JSON texts joined by commas) appended to the
    /// array member `key`; a missing or non-array member becomes an array of
    /// just `items`. Other members are copied as text.
    pub(crate) fn with_array_items(&self, key: &str, items: &str) -> CompactObject {
        let members = self.members();
        let mut builder = Builder::with_capacity(self.text.len() + items.len() + 2);
        let mut found = false;
        for (k, raw) in &members {
            if !found && k == key {
                found = true;
                let joined = match raw.strip_suffix(']') {
                    Some("[") => format!("[{items}]"),
                    Some(open) if raw.starts_with('[') => format!("{open},{items}]"),
                    _ => format!("[{items}]"),
                };
                builder.push_raw(k, &joined);
            } else {
                builder.push_raw(k, raw);
            }
        }
        if !found {
            builder.push_raw(key, &format!("[{items}]"));
        }
        builder.finish()
    }
}

/// The top-level members of an object, borrowed from its text.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some((key, value)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    members.push((key.0, value));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

/// An object key: borrowed from the text unless it had escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl Default for CompactObject {
    fn default() -> Self {
        CompactObject { text: "{}".into() }
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

/// Writes members one after the other.
#[derive(Default)]
pub(crate) struct Builder {
    /// UTF-8 throughout (only `str`s and serde_json's output go in); checked
    /// once in [`Self::finish`].
    bytes: Vec<u8>,
    members: usize,
}

impl Builder {
    fn with_capacity(bytes: usize) -> Builder {
        Builder {
            bytes: Vec::with_capacity(bytes),
            members: 0,
        }
    }

    fn push_key(&mut self, key: &str) {
        self.bytes.push(if self.members == 0 { b'{' } else { b',' });
        self.members += 1;
        if key.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
            serde_json::to_writer(&mut self.bytes, key).expect("a string serializes");
        } else {
            // What serde_json writes for a key with nothing to escape.
            self.bytes.push(b'"');
            self.bytes.extend_from_slice(key.as_bytes());
            self.bytes.push(b'"');
        }
        self.bytes.push(b':');
    }

    fn push_value(&mut self, key: &str, value: &Value) {
        self.push_key(key);
        // Writing into memory cannot fail and a Value always serializes.
        serde_json::to_writer(&mut self.bytes, value).expect("a Value serializes");
    }

    fn push_raw(&mut self, key: &str, value_raw: &str) {
        self.push_key(key);
        self.bytes.extend_from_slice(value_raw.as_bytes());
    }

    fn finish(mut self) -> CompactObject {
        if self.members == 0 {
            return CompactObject::default();
        }
        self.bytes.push(b'}');
        let text = String::from_utf8(self.bytes).expect("only UTF-8 was written");
        CompactObject {
            text: text.into_boxed_str(),
        }
    }
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
        let emptied = object.patched::<&Value>(&[("a", None), ("b", None), ("c", None)]);
        assert_eq!(emptied.as_json(), "{}");
        assert_eq!(emptied.get("a"), None);
    }

    /// Floats and escaped keys take serde's walk, the rest the canonical one:
    /// the same members either way.
    #[test]
    fn members_with_floats_or_escaped_keys_patch_alike() {
        for source in [
            json!({"a": 1, "f": 1.5, "s": "x"}),
            json!({"a": 1, "k\"ey": 2, "s": "x"}),
            json!({"a": 1, "b": {"c": [true, null]}, "s": "x"}),
        ] {
            let object = CompactObject::from_map(&map(source.clone()));
            let patched = object.patched(&[("s", Some(&json!("y"))), ("n", Some(&json!(0)))]);
            let mut expected = map(source);
            expected.insert("s".into(), json!("y"));
            expected.insert("n".into(), json!(0));
            assert_eq!(patched.as_json(), serde_json::to_string(&expected).unwrap());
            assert_eq!(object.get_raw("a"), Some("1"));
        }
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
