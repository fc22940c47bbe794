//! Borrowed first-pass decoding of one JSON-RPC line.
//!
//! The probe structs borrow from the input line and skip everything the fast
//! path does not need; text chunks (the bulk of any stream) are applied without
//! building a `serde_json::Value`. Anything the probe cannot represent exactly
//! falls back to a full `Value` parse, so both paths see the same input.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

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
#[derive(Debug, Deserialize)]
pub(crate) struct UpdateProbe<'a> {
    #[serde(borrow, default, rename = "sessionUpdate")]
    pub tag: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "messageId")]
    pub message_id: Option<&'a RawValue>,
    /// Only a plain text block fits; anything else fails the probe and the
    /// line takes the general path.
    #[serde(borrow, default)]
    pub content: Option<TextBlockProbe<'a>>,
    #[serde(borrow, default, rename = "_meta")]
    pub meta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub segment: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub channel: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub role: Option<&'a RawValue>,
}

/// A plain text content block with no other fields than these.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TextBlockProbe<'a> {
    #[serde(borrow, rename = "type")]
    pub ty: Cow<'a, str>,
    #[serde(borrow)]
    pub text: Cow<'a, str>,
}

/// The two `_meta` flags the engine acts on.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MetaProbe {
    #[serde(default)]
    pub spindle: Option<SpindleMeta>,
    #[serde(default, rename = "claudeCode")]
    pub claude_code: Option<ClaudeCodeMeta>,
}

/// `_meta.spindle`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SpindleMeta {
    #[serde(default)]
    pub snapshot: Option<bool>,
}

/// `_meta.claudeCode`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ClaudeCodeMeta {
    #[serde(default, rename = "clearBoundary")]
    pub clear_boundary: Option<bool>,
}

/// Reads the chunk flags out of an update's `_meta` value (any shape).
pub(crate) fn meta_flags(meta: &serde_json::Value) -> (Option<bool>, bool) {
    let snapshot = meta
        .get("spindle")
        .and_then(|s| s.get("snapshot"))
        .and_then(serde_json::Value::as_bool);
    let clear = meta
        .get("claudeCode")
        .and_then(|c| c.get("clearBoundary"))
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    (snapshot, clear)
}
