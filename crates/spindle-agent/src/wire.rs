//! Protocol versions and the small amount of JSON-RPC framing the agent needs.
//!
//! The agent renders its own lines: every outgoing message is one JSON object
//! followed by `\n`, written into a byte buffer owned by the caller.

use serde_json::{Value, json};

/// The ACP wire version spoken on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// Protocol version 1 (stable): `session/prompt` answers at the end of the turn.
    V1,
    /// Protocol version 2 (draft): `session/prompt` answers on acceptance and
    /// `state_update` carries the turn lifecycle.
    V2,
}

impl Version {
    /// The integer sent as `protocolVersion`.
    pub fn number(self) -> u64 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
        }
    }
}

/// Which versions the agent is willing to speak (`--protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// Only v1, whatever the client asks for.
    V1,
    /// v2 when the client asks for 2 (or more); refuses nothing, answers 2.
    V2,
    /// v2 if the client asked for 2 or more, v1 otherwise.
    #[default]
    Auto,
}

impl ProtocolChoice {
    /// The version to answer to a client that asked for `requested`.
    ///
    /// ACP negotiation: the agent answers the requested version if it supports
    /// it, otherwise the latest version it supports. `--protocol 2` still has
    /// to answer 1 to a client that only asked for 1, because a v1 client
    /// cannot parse v2 messages.
    pub fn negotiate(self, requested: u64) -> Version {
        match self {
            ProtocolChoice::V1 => Version::V1,
            ProtocolChoice::V2 | ProtocolChoice::Auto => {
                if requested >= 2 {
                    Version::V2
                } else {
                    Version::V1
                }
            }
        }
    }
}

impl std::str::FromStr for ProtocolChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "1" | "v1" => Ok(ProtocolChoice::V1),
            "2" | "v2" => Ok(ProtocolChoice::V2),
            "auto" => Ok(ProtocolChoice::Auto),
            other => Err(format!("unknown protocol {other:?}: expected 1, 2 or auto")),
        }
    }
}

/// JSON-RPC error codes used by the agent.
pub mod codes {
    /// The line is not valid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Parameters missing or of the wrong shape.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The agent failed while handling the request.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A request that arrived before `initialize`.
    pub const NOT_INITIALIZED: i64 = -32002;
    /// The request was cancelled before it was acted on.
    pub const REQUEST_CANCELLED: i64 = -32800;
}

/// Appends `value` plus a newline to `out`.
pub fn push_line(out: &mut Vec<u8>, value: &Value) {
    // Serialising a `Value` into a Vec cannot fail: every key is a string.
    serde_json::to_writer(&mut *out, value).expect("serialising a JSON value");
    out.push(b'\n');
}

/// A JSON-RPC success response.
pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error response.
pub fn error_response(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A `session/update` notification carrying `update`.
pub fn session_update(session_id: &str, update: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": spindle_wire::client_methods::SESSION_UPDATE,
        "params": {"sessionId": session_id, "update": update},
    })
}

/// Appends `s` to `out` as the *inside* of a JSON string (no quotes), with
/// JSON escaping. Used by the stream generator, which builds lines by hand.
pub fn escape_json_into(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// FNV-1a 64-bit hash, the checksum the stream generator publishes for its
/// expected final reply.
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a64 {
    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }

    /// The hash of everything fed so far.
    pub fn finish(self) -> u64 {
        self.0
    }

    /// Hash of one string.
    pub fn hash(s: &str) -> u64 {
        let mut h = Fnv1a64::default();
        h.update(s.as_bytes());
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_serde_json() {
        let samples = [
            "plain",
            "quote \" backslash \\ newline \n tab \t",
            "control \u{0} \u{1f} \u{7f}",
            "unicode é → 😀",
            "",
        ];
        for s in samples {
            let mut out = vec![b'"'];
            escape_json_into(&mut out, s);
            out.push(b'"');
            let back: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn fnv_known_values() {
        assert_eq!(Fnv1a64::hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv1a64::hash("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn negotiation() {
        assert_eq!(ProtocolChoice::Auto.negotiate(1), Version::V1);
        assert_eq!(ProtocolChoice::Auto.negotiate(2), Version::V2);
        assert_eq!(ProtocolChoice::V1.negotiate(2), Version::V1);
        assert_eq!(ProtocolChoice::V2.negotiate(1), Version::V1);
        assert_eq!(ProtocolChoice::V2.negotiate(7), Version::V2);
    }
}
