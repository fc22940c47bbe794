//! Borrowed first-pass decoding of one JSON-RPC line.
//!
//! The probe structs borrow from the input line and skip everything the fast
//! path does not need; text chunks (the bulk of any stream) are applied without
//! building a `serde_json::Value`. Anything the probe cannot represent exactly
//! falls back to a full `Value` parse, so both paths see the same input.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use spindle_wire::meta::{
    CLAUDE_CODE_META_KEY, CLEAR_BOUNDARY_FLAG, META_KEY, SNAPSHOT_FLAG, SPINDLE_META_KEY,
};
use spindle_wire::routing::is_routing_field;

// One pass over a chunk line: the probe structs nest, so the text is scanned
// once and borrowed when it has no escapes.

/// Top level of a line: a JSON-RPC message, or a recording envelope `{"sent": ..}`.
#[derive(Debug, Deserialize)]
pub(crate) struct LineProbe<'a> {
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub params: Option<ParamsProbe<'a>>,
    #[serde(borrow, default)]
    pub sent: Option<&'a RawValue>,
}

/// Top level of a line on the general path: the update stays raw so only it
/// is decoded into a `Value` (not the envelope around it).
#[derive(Debug, Deserialize)]
pub(crate) struct EnvelopeProbe<'a> {
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub params: Option<RawParamsProbe<'a>>,
    #[serde(borrow, default)]
    pub sent: Option<&'a RawValue>,
}

/// `params` with the update left raw.
#[derive(Debug, Deserialize)]
pub(crate) struct RawParamsProbe<'a> {
    #[serde(borrow, default, rename = "sessionId")]
    pub session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub update: Option<&'a RawValue>,
}

/// `params` with the update decoded into a `Value` in the same pass (the
/// general path of params handed over on their own: one parse instead of a
/// raw probe and a second parse of the update).
#[derive(Debug, Deserialize)]
pub(crate) struct ValueParamsProbe<'a> {
    #[serde(borrow, default, rename = "sessionId")]
    pub session_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub update: Option<serde_json::Value>,
}

/// Cheap pre-check that picks the probe most likely to fit. Either choice is
/// correct (every probe falls back); this only saves work.
pub(crate) fn looks_like_chunk(line: &str) -> bool {
    line.contains("_chunk\"")
}

/// `params` of a notification or request, read loosely.
#[derive(Debug, Deserialize)]
pub(crate) struct ParamsProbe<'a> {
    #[serde(borrow, default, rename = "sessionId")]
    pub session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub update: Option<UpdateProbe<'a>>,
}

/// The fields of a `session/update` the chunk fast path reads.
///
/// Other members are skipped, except that a member
/// [`spindle_wire::routing::is_routing_field`] names sets [`Self::routing`]:
/// the fast path then leaves the update to the general path, which weighs
/// the routing fields. So a routing field can never be skipped here.
#[derive(Debug, Default)]
pub(crate) struct UpdateProbe<'a> {
    pub tag: Option<Cow<'a, str>>,
    pub message_id: Option<&'a RawValue>,
    /// Only a plain text block fits; anything else fails the probe and the
    /// line takes the general path.
    pub content: Option<TextBlockProbe<'a>>,
    pub meta: Option<&'a RawValue>,
    /// A member that may change the route is present.
    pub routing: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for UpdateProbe<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(UpdateVisitor(std::marker::PhantomData))
    }
}

struct UpdateVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for UpdateVisitor<'a> {
    type Value = UpdateProbe<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a session update object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UpdateProbe<'a>, A::Error> {
        let mut probe = UpdateProbe::default();
        let (mut tag, mut id, mut content, mut meta) = (false, false, false, false);
        // Like a derived struct: a repeated member fails the probe (the
        // general path then decides what it means).
        let once = |seen: &mut bool, name: &'static str| {
            if std::mem::replace(seen, true) {
                Err(de::Error::duplicate_field(name))
            } else {
                Ok(())
            }
        };
        while let Some(Str(key)) = map.next_key::<Str<'a>>()? {
            match key.as_ref() {
                SESSION_UPDATE_FIELD => {
                    once(&mut tag, SESSION_UPDATE_FIELD)?;
                    probe.tag = map.next_value::<Option<Str<'a>>>()?.map(|s| s.0);
                }
                MESSAGE_ID_FIELD => {
                    once(&mut id, MESSAGE_ID_FIELD)?;
                    probe.message_id = Some(map.next_value()?);
                }
                CONTENT_FIELD => {
                    once(&mut content, CONTENT_FIELD)?;
                    probe.content = map.next_value()?;
                }
                META_KEY => {
                    once(&mut meta, META_KEY)?;
                    probe.meta = Some(map.next_value()?);
                }
                other => {
                    probe.routing |= is_routing_field(other);
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(probe)
    }
}

/// A string borrowed from the input when it has no escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(StrVisitor(std::marker::PhantomData))
    }
}

/// `update.sessionUpdate`.
const SESSION_UPDATE_FIELD: &str = "sessionUpdate";
/// `update.messageId`.
const MESSAGE_ID_FIELD: &str = "messageId";
/// `update.content`.
const CONTENT_FIELD: &str = "content";

/// A plain text content block with no other fields than these.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TextBlockProbe<'a> {
    #[serde(borrow, rename = "type")]
    pub ty: Cow<'a, str>,
    #[serde(borrow)]
    pub text: Cow<'a, str>,
}

/// Reads the chunk flags out of an update's `_meta` value (any shape):
/// `_meta.spindle.snapshot` and `_meta.claudeCode.clearBoundary`.
pub(crate) fn meta_flags(meta: &Value) -> (Option<bool>, bool) {
    let snapshot = meta
        .get(SPINDLE_META_KEY)
        .and_then(|s| s.get(SNAPSHOT_FLAG))
        .and_then(Value::as_bool);
    let clear = meta
        .get(CLAUDE_CODE_META_KEY)
        .and_then(|c| c.get(CLEAR_BOUNDARY_FLAG))
        .and_then(Value::as_bool)
        == Some(true);
    (snapshot, clear)
}
