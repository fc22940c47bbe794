//! JSON-RPC 2.0 messages and line framing.
//!
//! Parameters and results are kept as [`RawValue`]: whatever the peer sent is
//! carried verbatim, so relaying a message never re-serializes its payload and
//! unknown content is never lost.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// JSON-RPC 2.0 error code: invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0 error code: the JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0 error code: the method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC 2.0 error code: invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC 2.0 error code: internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// ACP / LSP error code: the request was cancelled (`$/cancel_request`).
pub const REQUEST_CANCELLED: i64 = -32800;

/// Default maximum length of one line (one frame), in bytes: the one limit
/// every Spindle transport shares.
pub use spindle_wire::DEFAULT_MAX_LINE_BYTES;

/// The id of a request. `Null` only appears in error responses to requests
/// whose id could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// A numeric id (integers only; fractional ids are rejected).
    Number(i64),
    /// A string id.
    String(String),
    /// `null`, for error responses only.
    Null,
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
            RequestId::Null => f.write_str("null"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => s.serialize_i64(*n),
            RequestId::String(v) => s.serialize_str(v),
            RequestId::Null => s.serialize_unit(),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer, a string or null")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("request id out of range"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
                Ok(RequestId::String(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<RequestId, E> {
                Ok(RequestId::Null)
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResponseError {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional extra data, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl PartialEq for ResponseError {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
    }
}

impl ResponseError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ResponseError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The error object as raw JSON (for consumers that take raw errors).
    pub fn to_raw(&self) -> Box<RawValue> {
        // Serializing a struct of a number, a string and raw JSON cannot fail.
        serde_json::value::to_raw_value(self).unwrap_or_else(|_| raw_null())
    }
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for ResponseError {}

/// One JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Message {
    /// A request, which expects a response with the same id.
    Request {
        /// The id.
        id: RequestId,
        /// The method name.
        method: String,
        /// The parameters, verbatim (`None` when absent).
        params: Option<Box<RawValue>>,
    },
    /// A notification (no id, no response).
    Notification {
        /// The method name.
        method: String,
        /// The parameters, verbatim (`None` when absent).
        params: Option<Box<RawValue>>,
    },
    /// A response to a request.
    Response {
        /// The id of the request this answers (`Null` for some errors).
        id: RequestId,
        /// The result or the error.
        result: Result<Box<RawValue>, ResponseError>,
    },
}

/// `null` as a raw value.
pub fn raw_null() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).expect("null is valid JSON")
}

/// Serializes a value into raw JSON.
pub fn to_raw(value: &impl Serialize) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

impl Message {
    /// A request whose params are serialized from `params`.
    pub fn request(
        id: RequestId,
        method: impl Into<String>,
        params: &impl Serialize,
    ) -> Result<Message, serde_json::Error> {
        Ok(Message::Request {
            id,
            method: method.into(),
            params: Some(to_raw(params)?),
        })
    }

    /// A notification whose params are serialized from `params`.
    pub fn notification(
        method: impl Into<String>,
        params: &impl Serialize,
    ) -> Result<Message, serde_json::Error> {
        Ok(Message::Notification {
            method: method.into(),
            params: Some(to_raw(params)?),
        })
    }

    /// A successful response.
    pub fn response_ok(id: RequestId, result: Box<RawValue>) -> Message {
        Message::Response {
            id,
            result: Ok(result),
        }
    }

    /// An error response.
    pub fn response_err(id: RequestId, error: ResponseError) -> Message {
        Message::Response {
            id,
            result: Err(error),
        }
    }

    /// The method name of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            Message::Response { .. } => None,
        }
    }

    /// Appends this message as one JSON line (with the trailing `\n`).
    pub fn encode_line_into(&self, out: &mut Vec<u8>) {
        // Writing to a Vec cannot fail, and every field serializes infallibly.
        if serde_json::to_writer(&mut *out, self).is_err() {
            out.extend_from_slice(b"null");
        }
        out.push(b'\n');
    }

    /// This message as one JSON text without a newline.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        self.encode_line_into(&mut out);
        out.pop();
        String::from_utf8(out).unwrap_or_default()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request { id, method, params } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("method", method)?;
                if let Some(p) = params {
                    m.serialize_entry("params", p)?;
                }
                m.end()
            }
            Message::Notification { method, params } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("method", method)?;
                if let Some(p) = params {
                    m.serialize_entry("params", p)?;
                }
                m.end()
            }
            Message::Response { id, result } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("id", id)?;
                match result {
                    Ok(r) => m.serialize_entry("result", r)?,
                    Err(e) => m.serialize_entry("error", e)?,
                }
                m.end()
            }
        }
    }
}

/// Why a line could not be decoded into a message.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// The JSON-RPC error code ([`PARSE_ERROR`] or [`INVALID_REQUEST`]).
    pub code: i64,
    /// What is wrong, for humans.
    pub message: String,
    /// The id of the offending frame, when it could be read; an error
    /// response to the frame should carry it.
    pub id: Option<RequestId>,
    /// The frame has a `method` and a non-null id: it was meant as a
    /// request, so the sender waits for an error response.
    pub request: bool,
}

impl DecodeError {
    fn invalid(message: impl Into<String>, id: Option<RequestId>) -> Self {
        DecodeError {
            code: INVALID_REQUEST,
            message: message.into(),
            id,
            request: false,
        }
    }

    /// The error response a server should send back for this frame.
    pub fn to_response(&self) -> Message {
        Message::response_err(
            self.id.clone().unwrap_or(RequestId::Null),
            ResponseError::acp(self.code, &self.message, &[]),
        )
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.code {
            PARSE_ERROR => "parse error",
            INVALID_REQUEST => "invalid request",
            _ => "error",
        };
        write!(f, "{kind} ({}): {}", self.code, self.message)
    }
}

impl std::error::Error for DecodeError {}

/// One decoded line: a single message or a JSON-RPC batch.
#[derive(Debug)]
pub enum Frame {
    /// One message.
    Single(Message),
    /// A batch; each element decoded on its own.
    Batch(Vec<Result<Message, DecodeError>>),
}

/// Deserialization target with every member optional so that shape errors
/// become precise `INVALID_REQUEST` messages instead of serde noise.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// `null` is a present value here (`"id": null`, `"result": null`), unlike
/// serde's default `Option` handling.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue as Deserialize<'de>>::deserialize(d).map(Some)
}

/// The contents of a JSON string literal without escapes (the common case
/// for method names), without a second parse.
fn plain_string(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains(['"', '\\'])).then_some(inner)
}

fn classify(e: &serde_json::Error) -> i64 {
    match e.classify() {
        serde_json::error::Category::Data => INVALID_REQUEST,
        _ => PARSE_ERROR,
    }
}

fn boxed(raw: &RawValue) -> Box<RawValue> {
    raw.to_owned()
}

/// Decodes one line (without its newline) into a frame. Never panics.
pub fn decode_line(line: &str) -> Result<Frame, DecodeError> {
    let trimmed = line.trim_start_matches([' ', '\t', '\r', '\n']);
    if trimmed.starts_with('[') {
        let elements: Vec<&RawValue> = serde_json::from_str(line).map_err(|e| DecodeError {
            code: classify(&e),
            message: format!("batch: {e}"),
            id: None,
            request: false,
        })?;
        if elements.is_empty() {
            return Err(DecodeError::invalid("empty batch", None));
        }
        Ok(Frame::Batch(
            elements
                .into_iter()
                .map(|el| decode_value(el.get()))
                .collect(),
        ))
    } else {
        decode_value(line).map(Frame::Single)
    }
}

/// Decodes one JSON text holding a single message. Never panics.
pub fn decode_value(text: &str) -> Result<Message, DecodeError> {
    let env: Envelope<'_> = serde_json::from_str(text).map_err(|e| DecodeError {
        code: classify(&e),
        message: e.to_string(),
        id: None,
        request: false,
    })?;
    let looks_like_request = env.method.is_some();
    decode_envelope(env).map_err(|mut e| {
        e.request = looks_like_request && e.id.as_ref().is_some_and(|id| *id != RequestId::Null);
        e
    })
}

fn decode_envelope(env: Envelope<'_>) -> Result<Message, DecodeError> {
    // Read the id first so that later errors can point at the request.
    let id = match env.id {
        None => None,
        Some(raw_id) => match serde_json::from_str::<RequestId>(raw_id.get()) {
            Ok(id) => Some(id),
            Err(_) => {
                return Err(DecodeError::invalid(
                    format!(
                        "\"id\" must be an integer, a string or null, got {}",
                        raw_id.get()
                    ),
                    None,
                ));
            }
        },
    };
    match env.jsonrpc.map(RawValue::get) {
        Some("\"2.0\"") => {}
        Some(other) => {
            return Err(DecodeError::invalid(
                format!("\"jsonrpc\" must be \"2.0\", got {other}"),
                id,
            ));
        }
        None => return Err(DecodeError::invalid("missing \"jsonrpc\": \"2.0\"", id)),
    }
    if let Some(method) = env.method {
        let method = match plain_string(method.get()) {
            Some(m) => m.to_owned(),
            None => serde_json::from_str::<String>(method.get())
                .map_err(|_| DecodeError::invalid("\"method\" must be a string", id.clone()))?,
        };
        if env.result.is_some() || env.error.is_some() {
            return Err(DecodeError::invalid(
                "a message cannot carry both \"method\" and \"result\"/\"error\"",
                id,
            ));
        }
        if let Some(p) = env.params {
            let first = p.get().as_bytes().first().copied();
            if first != Some(b'{') && first != Some(b'[') {
                return Err(DecodeError::invalid(
                    "\"params\" must be an object or an array",
                    id,
                ));
            }
        }
        let params = env.params.map(boxed);
        return Ok(match id {
            Some(RequestId::Null) => {
                return Err(DecodeError::invalid("a request id must not be null", None));
            }
            Some(id) => Message::Request { id, method, params },
            None => Message::Notification { method, params },
        });
    }
    let Some(id) = id else {
        return Err(DecodeError::invalid(
            "neither \"method\" nor \"id\": not a request, notification or response",
            None,
        ));
    };
    match (env.result, env.error) {
        (Some(r), None) => Ok(Message::Response {
            id,
            result: Ok(boxed(r)),
        }),
        (None, Some(e)) => match serde_json::from_str::<ResponseError>(e.get()) {
            Ok(err) => Ok(Message::Response {
                id,
                result: Err(err),
            }),
            Err(err) => Err(DecodeError::invalid(
                format!("malformed \"error\" object: {err}"),
                Some(id),
            )),
        },
        (Some(_), Some(_)) => Err(DecodeError::invalid(
            "a response cannot carry both \"result\" and \"error\"",
            Some(id),
        )),
        (None, None) => Err(DecodeError::invalid(
            "a response needs \"result\" or \"error\"",
            Some(id),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(line: &str) -> Message {
        match decode_line(line) {
            Ok(Frame::Single(m)) => m,
            other => panic!("expected a single message, got {other:?}"),
        }
    }

    fn err(line: &str) -> DecodeError {
        match decode_line(line) {
            Err(e) => e,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn request_notification_response_roundtrip() {
        let req = single(
            r#"{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/x","weird":[1, 2 ]}}"#,
        );
        match &req {
            Message::Request { id, method, params } => {
                assert_eq!(id, &RequestId::Number(7));
                assert_eq!(method, "session/new");
                // Verbatim: whitespace inside params is kept.
                assert_eq!(
                    params.as_ref().unwrap().get(),
                    r#"{"cwd":"/x","weird":[1, 2 ]}"#
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            req.to_json(),
            r#"{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/x","weird":[1, 2 ]}}"#
        );
        let n = single(r#"{"jsonrpc":"2.0","method":"session/update"}"#);
        assert!(matches!(n, Message::Notification { params: None, .. }));
        let r = single(r#"{"jsonrpc":"2.0","id":"a","result":null}"#);
        match r {
            Message::Response { id, result: Ok(v) } => {
                assert_eq!(id, RequestId::String("a".into()));
                assert_eq!(v.get(), "null");
            }
            other => panic!("{other:?}"),
        }
        let e = single(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":{"x":1}}}"#,
        );
        match &e {
            Message::Response {
                id,
                result: Err(err),
            } => {
                assert_eq!(id, &RequestId::Null);
                assert_eq!(err.code, -32700);
                assert_eq!(err.data.as_ref().unwrap().get(), r#"{"x":1}"#);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            e.to_json(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":{"x":1}}}"#
        );
    }

    #[test]
    fn malformed_json_is_parse_error() {
        for line in [
            "{",
            "not json",
            "{\"jsonrpc\":\"2.0\",}",
            "",
            "\u{0}\u{1}\u{fffd}garbage",
        ] {
            assert_eq!(err(line).code, PARSE_ERROR, "{line:?}");
        }
        assert_eq!(err("[1,").code, PARSE_ERROR);
    }

    #[test]
    fn wrong_shapes_are_invalid_request() {
        let cases = [
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
            r#"{"jsonrpc":"2.0","method":7}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"42"#,
            r#""str""#,
        ];
        for line in cases {
            assert_eq!(err(line).code, INVALID_REQUEST, "{line}");
        }
        // The id survives into the error so the error response can carry it; ACP's message
        // for the code comes first, the detail after it and in `data`.
        let e = err(r#"{"jsonrpc":"1.0","id":"q","method":"x"}"#);
        assert_eq!(e.id, Some(RequestId::String("q".into())));
        assert_eq!(
            e.to_response().to_json(),
            r#"{"jsonrpc":"2.0","id":"q","error":{"code":-32600,"message":"Invalid request: \"jsonrpc\" must be \"2.0\", got \"1.0\"","data":{"details":"\"jsonrpc\" must be \"2.0\", got \"1.0\""}}}"#
        );
    }

    #[test]
    fn batches_follow_json_rpc_rules() {
        assert_eq!(err("[]").code, INVALID_REQUEST);
        assert_eq!(err("  [ ] ").code, INVALID_REQUEST);
        match decode_line(
            r#"[{"jsonrpc":"2.0","method":"a"}, 1, {"jsonrpc":"2.0","id":2,"result":{}}, {"x":1}]"#,
        ) {
            Ok(Frame::Batch(items)) => {
                assert_eq!(items.len(), 4);
                assert!(
                    matches!(&items[0], Ok(Message::Notification { method, .. }) if method == "a")
                );
                assert_eq!(items[1].as_ref().unwrap_err().code, INVALID_REQUEST);
                assert!(matches!(&items[2], Ok(Message::Response { .. })));
                assert_eq!(items[3].as_ref().unwrap_err().code, INVALID_REQUEST);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn escaped_method_names_are_unescaped() {
        let m = single(r#"{"jsonrpc":"2.0","method":"a\"b\u0041"}"#);
        assert_eq!(m.method(), Some("a\"bA"));
        assert_eq!(m.to_json(), r#"{"jsonrpc":"2.0","method":"a\"bA"}"#);
    }

    #[test]
    fn large_ids_and_string_ids() {
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":9223372036854775807,"result":{}}"#),
            Message::Response {
                id: RequestId::Number(i64::MAX),
                ..
            }
        ));
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#).code,
            INVALID_REQUEST
        );
    }
}
