//! Properties of line decoding: arbitrary input never panics, and encoding
//! then decoding a message gives back the same line.

use proptest::prelude::*;
use serde_json::{Value, json};
use spindle_protocol::jsonrpc::{Frame, decode_line, to_raw};
use spindle_protocol::{Message, RequestId, ResponseError};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::Number),
        ".{0,10}".prop_map(RequestId::String),
    ]
}

fn params() -> impl Strategy<Value = Box<serde_json::value::RawValue>> {
    prop::collection::btree_map(".{0,6}", json_value(), 0..4)
        .prop_map(|m| to_raw(&Value::Object(m.into_iter().collect())).unwrap())
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (request_id(), ".{1,20}", prop::option::of(params()))
            .prop_map(|(id, method, params)| Message::Request { id, method, params }),
        (".{1,20}", prop::option::of(params()))
            .prop_map(|(method, params)| { Message::Notification { method, params } }),
        (request_id(), json_value())
            .prop_map(|(id, v)| Message::response_ok(id, to_raw(&v).unwrap())),
        (request_id(), any::<i64>(), ".{0,20}")
            .prop_map(|(id, code, m)| Message::response_err(id, ResponseError::new(code, m))),
    ]
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(line in ".{0,200}") {
        let _ = decode_line(&line);
    }

    #[test]
    fn arbitrary_json_never_panics(v in json_value()) {
        let _ = decode_line(&v.to_string());
    }

    #[test]
    fn encode_decode_roundtrip(m in message()) {
        let line = m.to_json();
        prop_assert!(!line.contains('\n'));
        match decode_line(&line) {
            Ok(Frame::Single(back)) => prop_assert_eq!(back.to_json(), line),
            other => prop_assert!(false, "{line} decoded as {other:?}"),
        }
    }
}
