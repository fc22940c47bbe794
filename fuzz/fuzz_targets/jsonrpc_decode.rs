//! Fuzz target: spindle-protocol's line decoder, as the transport calls it
//! (one line, no newline inside). Invariants besides "no panic":
//! - a decoded message re-encodes to one line that decodes to the same
//!   encoding (the decoder and the encoder agree, framing is kept);
//! - a batch is never empty and each element is decoded on its own;
//! - every decode error carries a JSON-RPC code (parse error or invalid
//!   request) and its error response encodes to one decodable line with the
//!   offending id when one could be read, and a request-looking frame with an
//!   id is flagged so the sender gets an answer.

#![no_main]

use libfuzzer_sys::fuzz_target;
use spindle_protocol::jsonrpc::{INVALID_REQUEST, PARSE_ERROR};
use spindle_protocol::{DecodeError, Frame, Message, RequestId, decode_line};

fn encode_roundtrip(message: &Message) {
    let text = message.to_json();
    assert!(
        !text.contains('\n'),
        "an encoded message is one line: {text:?}"
    );
    let mut framed = Vec::new();
    message.encode_line_into(&mut framed);
    assert_eq!(framed.last(), Some(&b'\n'));
    assert_eq!(&framed[..framed.len() - 1], text.as_bytes());
    match decode_line(&text) {
        Ok(Frame::Single(again)) => assert_eq!(again.to_json(), text, "stable re-encoding"),
        other => panic!("re-decoding {text:?} gave {other:?}"),
    }
}

fn check_error(error: &DecodeError) {
    assert!(
        error.code == PARSE_ERROR || error.code == INVALID_REQUEST,
        "unexpected code {}",
        error.code
    );
    assert!(!error.message.is_empty());
    if error.request {
        assert!(matches!(
            error.id,
            Some(RequestId::Number(_) | RequestId::String(_))
        ));
    }
    let response = error.to_response();
    let text = response.to_json();
    match decode_line(&text) {
        Ok(Frame::Single(Message::Response { id, result: Err(e) })) => {
            assert_eq!(e.code, error.code);
            assert_eq!(Some(&id), error.id.as_ref().or(Some(&RequestId::Null)));
        }
        other => panic!("error response {text:?} decodes as {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    if line.contains('\n') {
        // The transport splits on newlines; the decoder never sees one.
        return;
    }
    match decode_line(line) {
        Ok(Frame::Single(message)) => encode_roundtrip(&message),
        Ok(Frame::Batch(items)) => {
            assert!(!items.is_empty(), "an empty batch is an error");
            for item in &items {
                match item {
                    Ok(message) => encode_roundtrip(message),
                    Err(error) => check_error(error),
                }
            }
        }
        Err(error) => check_error(&error),
    }
});
