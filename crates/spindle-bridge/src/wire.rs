//! Borrowed JSON-RPC framing: the hot path reads only the fields it routes
//! on and splices into the original line instead of rebuilding it.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use spindle_wire::client_methods::SESSION_UPDATE;
use spindle_wire::scan::offset_in;

/// One JSON-RPC message, fields borrowed from the line.
#[derive(Debug, Deserialize)]
pub(crate) struct Frame<'a> {
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

impl Frame<'_> {
    /// The id as its JSON text (`1`, `"a"`), the key of request tables.
    pub fn id_key(&self) -> Option<String> {
        self.id.map(|r| r.get().to_owned()).filter(|k| k != "null")
    }
}

/// `session/update` params, the update left raw.
#[derive(Debug, Deserialize)]
pub(crate) struct UpdateParams<'a> {
    #[serde(borrow, rename = "sessionId")]
    pub session_id: Cow<'a, str>,
    #[serde(borrow)]
    pub update: &'a RawValue,
}

/// A `session/update` notification read in one pass: the common case of
/// agent output, so it skips the generic [`Frame`] step.
#[derive(Debug, Deserialize)]
pub(crate) struct UpdateFrame<'a> {
    #[serde(borrow)]
    pub method: Cow<'a, str>,
    #[serde(borrow)]
    pub params: UpdateParams<'a>,
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
}

/// Reads `line` as a `session/update` notification, or None when it is
/// anything else (the caller then takes the generic path).
pub(crate) fn parse_update_frame(line: &str) -> Option<UpdateFrame<'_>> {
    let f: UpdateFrame<'_> = serde_json::from_str(line).ok()?;
    (f.method == SESSION_UPDATE && f.id.is_none()).then_some(f)
}

/// The routing head of an update: its tag, messageId and content type.
#[derive(Debug, Deserialize)]
pub(crate) struct UpdateHead<'a> {
    #[serde(borrow, rename = "sessionUpdate")]
    pub tag: Cow<'a, str>,
    #[serde(borrow, rename = "messageId", default)]
    pub message_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub content: Option<ContentHead<'a>>,
    #[serde(borrow, rename = "_meta", default)]
    pub meta: Option<&'a RawValue>,
}

/// The `type` of a content block.
#[derive(Debug, Deserialize)]
pub(crate) struct ContentHead<'a> {
    #[serde(borrow, rename = "type")]
    pub kind: Cow<'a, str>,
}

pub(crate) fn parse_frame(line: &str) -> Result<Frame<'_>, String> {
    serde_json::from_str(line).map_err(|e| format!("not a JSON-RPC message: {e}"))
}

/// Inserts `"key":"plain",` right after the `{` of the object `object` (a
/// sub-slice of `line`); `plain` needs no escaping (a minted id) and is
/// quoted while copying. Returns None when `object` is not a slice of `line`
/// or not an object.
pub(crate) fn splice_first_field(
    line: &str,
    object: &str,
    key: &str,
    plain: &str,
) -> Option<String> {
    debug_assert!(plain.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\'));
    let at = offset_in(line, object)?;
    if !object.starts_with('{') {
        return None;
    }
    let empty = object[1..].trim_start().starts_with('}');
    let mut out = String::with_capacity(line.len() + key.len() + plain.len() + 6);
    out.push_str(&line[..=at]);
    out.push('"');
    out.push_str(key);
    out.push_str("\":\"");
    out.push_str(plain);
    out.push('"');
    if !empty {
        out.push(',');
    }
    out.push_str(&line[at + 1..]);
    Some(out)
}

/// JSON string literal for `s`.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::new();
    spindle_wire::json_text::push_json_string(&mut out, s);
    out
}

pub(crate) fn notification(method: &str, params: Value) -> String {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), "2.0".into());
    m.insert("method".into(), method.into());
    m.insert("params".into(), params);
    Value::Object(m).to_string()
}

pub(crate) fn request(id_key: &str, method: &str, params: Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id_key},"method":{},"params":{}}}"#,
        json_string(method),
        params
    )
}

pub(crate) fn response(id_key: &str, result: &Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id_key},"result":{result}}}"#)
}

pub(crate) fn error_response(
    id_key: &str,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> String {
    let mut error = Map::new();
    error.insert("code".into(), code.into());
    error.insert("message".into(), message.into());
    if let Some(data) = data {
        error.insert("data".into(), data);
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":{id_key},"error":{}}}"#,
        Value::Object(error)
    )
}

/// A raw error object passed through as the error of a new response.
pub(crate) fn error_response_raw(id_key: &str, error: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id_key},"error":{error}}}"#)
}

pub(crate) fn update_line(session_id: &str, update: Value) -> String {
    let mut params = Map::new();
    params.insert("sessionId".into(), session_id.into());
    params.insert("update".into(), update);
    notification(SESSION_UPDATE, Value::Object(params))
}

/// Parses raw JSON into a Value (rare paths only).
pub(crate) fn value_of(raw: Option<&RawValue>) -> Value {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null)
}

/// Parses raw JSON into an object map, or None.
pub(crate) fn object_of(raw: Option<&RawValue>) -> Option<Map<String, Value>> {
    match value_of(raw) {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_inserts_message_id_first() {
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}"#;
        let frame = parse_frame(line).unwrap();
        let params: UpdateParams<'_> = serde_json::from_str(frame.params.unwrap().get()).unwrap();
        let out = splice_first_field(line, params.update.get(), "messageId", "m1").unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["params"]["update"]["messageId"], "m1");
        assert_eq!(v["params"]["update"]["content"]["text"], "a");
    }

    #[test]
    fn json_string_escapes_only_when_needed() {
        assert_eq!(json_string("m1"), r#""m1""#);
        assert_eq!(json_string("a\"b\n"), r#""a\"b\n""#);
        assert_eq!(json_string("é"), r#""é""#);
    }

    #[test]
    fn splice_refuses_foreign_slices() {
        let line = String::from("{}");
        assert!(splice_first_field(&line, "{}", "k", "1").is_none());
        assert_eq!(
            splice_first_field(&line, &line, "k", "1").as_deref(),
            Some(r#"{"k":"1"}"#)
        );
    }
}
