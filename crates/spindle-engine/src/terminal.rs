//! v2 agent-owned terminals: `terminal_update` (fields, output replaced)
//! and `terminal_output_chunk` (output appended), decoded as UTF-8.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value};

use crate::core::TranscriptEngine;
use crate::ids::Domain;
use crate::model::{EntryBody, EntryKind, Terminal};
use crate::ops::RenderOp;
use crate::text::{common_prefix_len, utf16_len};

impl TranscriptEngine {
    fn terminal_entry(&mut self, id: &str) -> (usize, bool) {
        if let Some(idx) = self.keys.get(Domain::Terminal, id) {
            return (idx, false);
        }
        let mut fields = Map::new();
        fields.insert("terminalId".into(), Value::from(id));
        let turn = self.output_turn();
        let body = EntryBody::Terminal(Box::new(Terminal {
            fields,
            ..Terminal::default()
        }));
        let idx = self.push_entry(id, EntryKind::Terminal, body, turn);
        self.keys.insert(Domain::Terminal, id, idx);
        (idx, true)
    }

    pub(crate) fn terminal_update(&mut self, mut u: Map<String, Value>) {
        let Some(Value::String(id)) = u.shift_remove("terminalId") else {
            return self.diag(
                "malformed_update",
                "terminal_update: terminalId must be a string",
            );
        };
        let output = match u.shift_remove("output") {
            None => None,
            Some(Value::Null) => Some(Vec::new()),
            Some(o) => match o.get("data").and_then(Value::as_str).map(decode_output) {
                Some(Some(bytes)) => Some(bytes),
                _ => {
                    return self.diag(
                        "malformed_update",
                        "terminal_update: output.data must be base64",
                    );
                }
            },
        };
        u.shift_remove("sessionUpdate");
        self.set_open(None);
        let (idx, is_new) = self.terminal_entry(&id);
        if let EntryBody::Terminal(term) = &mut self.t.entries[idx].body {
            for (k, v) in u {
                if v.is_null() {
                    term.fields.shift_remove(&k);
                } else {
                    term.fields.insert(k, v);
                }
            }
        }
        if let Some(bytes) = output {
            self.terminal_replace(idx, bytes, !is_new);
        }
        if is_new {
            self.emit_insert(idx);
        } else {
            self.emit_update(idx);
        }
    }

    pub(crate) fn terminal_output_chunk(&mut self, u: Map<String, Value>) {
        let (Some(Value::String(id)), Some(data)) =
            (u.get("terminalId"), u.get("data").and_then(Value::as_str))
        else {
            return self.diag(
                "malformed_update",
                "terminal_output_chunk: terminalId and data strings required",
            );
        };
        let Some(bytes) = decode_output(data) else {
            return self.diag(
                "malformed_update",
                "terminal_output_chunk: data must be base64",
            );
        };
        let id = id.clone();
        self.set_open(None);
        let (idx, is_new) = self.terminal_entry(&id);
        let entry = &mut self.t.entries[idx];
        if let EntryBody::Terminal(term) = &mut entry.body {
            term.output.extend_from_slice(&bytes);
            let before = term.text.len();
            decode_utf8_into(&term.output, &mut term.decoded, &mut term.text);
            if !is_new && self.ops_on && term.text.len() > before {
                let text = term.text[before..].to_owned();
                self.out.ops.push(RenderOp::AppendText {
                    id: entry.id.clone(),
                    text,
                });
            }
        }
        if is_new {
            self.emit_insert(idx);
        }
    }

    fn terminal_replace(&mut self, idx: usize, bytes: Vec<u8>, emit: bool) {
        let emit = emit && self.ops_on;
        let entry = &mut self.t.entries[idx];
        let EntryBody::Terminal(term) = &mut entry.body else {
            return;
        };
        let mut decoded = 0;
        let mut text = String::new();
        decode_utf8_into(&bytes, &mut decoded, &mut text);
        let keep = common_prefix_len(&term.text, &text);
        if emit && keep < term.text.len() {
            self.out.ops.push(RenderOp::TruncateText {
                id: entry.id.clone(),
                len: utf16_len(&term.text[..keep]),
            });
        }
        if emit && keep < text.len() {
            self.out.ops.push(RenderOp::AppendText {
                id: entry.id.clone(),
                text: text[keep..].to_owned(),
            });
        }
        term.text = text;
        term.decoded = decoded;
        term.output = bytes;
    }
}

/// Terminal output's base64: the standard alphabet; padding may be left
/// out, and non-zero bits after the last byte are ignored.
const OUTPUT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Decodes terminal output data; `None` unless base64. Padding, when
/// present, must complete the last group of four.
fn decode_output(data: &str) -> Option<Vec<u8>> {
    if data.ends_with('=') && !data.len().is_multiple_of(4) {
        return None;
    }
    OUTPUT_BASE64.decode(data).ok()
}

/// Decodes `bytes[*decoded..]` into `text`, replacing invalid sequences with
/// U+FFFD and leaving an incomplete trailing sequence for the next chunk.
pub(crate) fn decode_utf8_into(bytes: &[u8], decoded: &mut usize, text: &mut String) {
    let mut rest = &bytes[*decoded..];
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                text.push_str(s);
                *decoded = bytes.len();
                return;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                // The prefix is valid UTF-8 by construction.
                text.push_str(&String::from_utf8_lossy(&rest[..valid]));
                match e.error_len() {
                    None => {
                        *decoded = bytes.len() - (rest.len() - valid);
                        return;
                    }
                    Some(n) => {
                        text.push('\u{FFFD}');
                        rest = &rest[valid + n..];
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::decode_output;

    #[test]
    fn output_data_is_base64_with_or_without_padding() {
        assert_eq!(decode_output("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(decode_output("aGVsbG8").as_deref(), Some(&b"hello"[..]));
        assert_eq!(decode_output("aGk=").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode_output("").as_deref(), Some(&b""[..]));
        // Bits past the last byte are not checked.
        assert_eq!(decode_output("aGl=").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode_output("a"), None);
        assert_eq!(decode_output("a!b="), None);
        assert_eq!(decode_output("aGk==="), None);
        assert_eq!(decode_output("aGk=="), None);
        assert_eq!(decode_output("Zg="), None);
        assert_eq!(decode_output("aG=k"), None);
        assert_eq!(decode_output("aGk =").as_deref(), None);
    }
}
