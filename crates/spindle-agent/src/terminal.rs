//! `/scenario terminal`: a command's output streamed as terminal bytes.
//!
//! v2 has agent-reported terminals (`terminal_update`, base64
//! `terminal_output_chunk`). The chunks deliberately split a UTF-8 character
//! and an ANSI escape sequence, so clients must decode each chunk's base64 on
//! its own and keep their text decoder state across chunks. v1 terminals are
//! client-side (`terminal/create`), so v1 gets the output as tool text.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use crate::program::Program;
use crate::turn_context::TurnCtx;
use crate::updates;
use crate::wire::Version;
use spindle_wire::tags::{self, MessageKind};

/// The command's complete output.
pub const TERMINAL_OUTPUT: &[u8] =
    b"running 3 tests\r\n\x1b[32m\xe2\x9c\x93\x1b[0m parse\r\n\x1b[32m\xe2\x9c\x93\x1b[0m render\r\n\x1b[32m\xe2\x9c\x93\x1b[0m replay\r\ntest result: ok. 3 passed; 0 failed\r\n";

/// Where the output is cut into chunks: inside the first check mark's
/// UTF-8 bytes and inside the second escape sequence.
const CUTS: [usize; 3] = [23, 39, 60];

/// Final reply of `/scenario terminal`.
pub const TERMINAL_REPLY: &str = "The tests passed: 3 passed, 0 failed.";

pub(crate) fn terminal(ctx: &mut TurnCtx<'_>) -> Program {
    let v = ctx.conn.version;
    let mut p = Program::new(ctx.delay_ms);
    let call = ctx.state.next_id("call_");
    let start = updates::tool_call_start(
        v,
        &call,
        "cargo test",
        "execute",
        json!({"command": "cargo test"}),
    );
    match v {
        Version::V2 => {
            let term = ctx.state.next_id("term_");
            let mut start = start;
            start["status"] = json!("in_progress");
            start["content"] = json!([{"type": "terminal", "terminalId": term}]);
            p.update(start);
            p.update(json!({
                "sessionUpdate": tags::TERMINAL_UPDATE,
                "terminalId": term,
                "command": "cargo test",
                "cwd": "/workspace",
            }));
            let mut from = 0;
            for to in CUTS.into_iter().chain([TERMINAL_OUTPUT.len()]) {
                p.update(json!({
                    "sessionUpdate": tags::TERMINAL_OUTPUT_CHUNK,
                    "terminalId": term,
                    "data": STANDARD.encode(&TERMINAL_OUTPUT[from..to]),
                }));
                p.pause(2);
                from = to;
            }
            p.update(json!({
                "sessionUpdate": tags::TERMINAL_UPDATE,
                "terminalId": term,
                "exitStatus": {"exitCode": 0},
            }));
            p.update(updates::tool_call_status(&call, "completed", None));
        }
        Version::V1 => {
            p.update(start);
            p.update(updates::tool_call_status(&call, "in_progress", None));
            p.pause(4);
            let text = String::from_utf8_lossy(TERMINAL_OUTPUT).into_owned();
            p.update(updates::tool_call_status(
                &call,
                "completed",
                Some(vec![updates::tool_text(&text)]),
            ));
        }
    }
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, TERMINAL_REPLY, None);
    p.end("end_turn");
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_split_a_character_and_an_escape() {
        // Inside the first check mark (3 UTF-8 bytes starting after ESC[32m).
        assert!(std::str::from_utf8(&TERMINAL_OUTPUT[..CUTS[0]]).is_err());
        // Inside an escape sequence: the piece ends after ESC but before `m`.
        let piece = &TERMINAL_OUTPUT[CUTS[0]..CUTS[1]];
        let last_esc = piece.iter().rposition(|b| *b == 0x1b).unwrap();
        assert!(!piece[last_esc..].contains(&b'm'));
    }
}
