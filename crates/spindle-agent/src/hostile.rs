//! `/scenario hostile`: input a client must survive and render as inert text.
//!
//! Two of its updates are deliberately outside the v1 schema (an unknown
//! `_`-prefixed update kind and an unknown content block type); v2's open
//! unions accept both. Everything else is schema-valid but nasty.

use serde_json::json;

use crate::program::Program;
use crate::turn_context::TurnCtx;
use crate::updates;
use spindle_wire::tags::{self, MessageKind};

/// Size of the huge chunk's text, in bytes.
pub const HUGE_CHUNK_BYTES: usize = 1 << 20;

/// The `sessionUpdate` tag of the unknown update kind.
pub const UNKNOWN_UPDATE_KIND: &str = "_spindle_unknown_update";
/// The `type` of the unknown content block.
pub const UNKNOWN_BLOCK_TYPE: &str = "_spindle_hologram";

/// The markup-like pieces, streamed as reply text in this order.
pub const HOSTILE_PIECES: [&str; 7] = [
    "<script>alert('xss')</script> ",
    "[click me](javascript:alert(1)) ",
    "<img src=x onerror=alert(2)> ",
    "\u{1b}[2J\u{1b}[31mANSI red\u{1b}[0m ",
    "\u{202e}gnp.exe\u{202c} ",
    "zero\u{200b}width\u{0}nul ",
    "&lt;already-escaped&gt; ",
];

/// The text after the huge chunk.
pub const HOSTILE_END: &str = "End of hostile input.";

/// The huge chunk's text.
pub fn huge_text() -> String {
    "spindle ".repeat(HUGE_CHUNK_BYTES / 8)
}

pub(crate) fn hostile(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    for piece in HOSTILE_PIECES {
        p.update(updates::chunk(MessageKind::Agent, &id, piece, None));
        p.pause(1);
    }
    p.update(json!({
        "sessionUpdate": UNKNOWN_UPDATE_KIND,
        "payload": {"note": "clients must ignore or preserve unknown update kinds"},
    }));
    p.update(json!({
        "sessionUpdate": tags::AGENT_MESSAGE_CHUNK,
        "messageId": id,
        "content": {"type": UNKNOWN_BLOCK_TYPE, "data": "<b>not text</b>"},
    }));
    p.update(updates::chunk(MessageKind::Agent, &id, &huge_text(), None));
    p.update(updates::chunk(MessageKind::Agent, &id, HOSTILE_END, None));
    p.update(updates::usage(ctx.state.used, ctx.context_size));
    p.end("end_turn");
    p
}
