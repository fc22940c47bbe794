//! JSON text written by hand where a line is spliced rather than rebuilt (a `sessionId`
//! replaced, a notification framed around raw members): the one string-literal writer those
//! places share.

/// Appends `text` as a JSON string literal: copied between quotes when nothing in it needs an
/// escape (the common case for ids and method names), else escaped by `serde_json`.
pub fn push_json_string(out: &mut String, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(text.len() + 2);
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        out.push_str(&serde_json::Value::from(text).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::push_json_string;

    #[test]
    fn a_string_is_written_as_serde_json_writes_it() {
        for text in [
            "",
            "plain-id_7",
            "a\"b",
            "back\\slash",
            "line\nbreak",
            "\u{1}",
            "é ünï",
        ] {
            let mut out = String::from("[");
            push_json_string(&mut out, text);
            assert_eq!(out[1..], serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }
}
