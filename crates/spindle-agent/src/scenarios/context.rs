//! The conversation-context commands: `/clear` (docs/src/extensions.md: usage reset and
//! the clear boundary) and `/compact` (compaction updates or, for a plain v1
//! client, the summary as reply text).

use spindle_wire::extensions::Extension;
use spindle_wire::tags::{self, MessageKind};

use super::catalogue::COMMANDS;
use crate::program::{Program, word_chunks};
use crate::turn_context::TurnCtx;
use crate::updates;
use crate::wire::Version;

/// Text of the chunk that carries the `/clear` boundary.
pub const CLEAR_REPLY: &str = "Context cleared. I remember nothing from before this point.";

pub(super) fn clear(ctx: &mut TurnCtx<'_>, variant: Option<&str>) -> Program {
    let v = ctx.version();
    let mut p = Program::new(ctx.delay_ms);
    // The clear boundary (docs/src/extensions.md): usage reset, the boundary
    // signal, then a command refresh.
    ctx.state.used = 0;
    ctx.state.turns = 0;
    p.update(updates::usage(0, ctx.context_size));
    let use_update = match variant {
        Some(tags::SESSION_CLEARED) => true,
        Some("meta") => false,
        _ => ctx.conn.ext.contains(Extension::SessionCleared),
    };
    let id = ctx.state.next_id("msg_a");
    if use_update {
        p.update(updates::session_cleared());
        p.say(MessageKind::Agent, &id, CLEAR_REPLY, None);
    } else {
        // `_meta` is open in every ACP version, so the flag form is safe to send
        // to any client; it rides on the first chunk after the clear.
        let mut first = true;
        for piece in word_chunks(CLEAR_REPLY) {
            let meta = first.then(updates::clear_boundary_meta);
            first = false;
            p.update(updates::chunk(MessageKind::Agent, &id, piece, meta));
            p.pause(1);
        }
    }
    p.update(updates::available_commands(v, &COMMANDS));
    p.end("end_turn");
    p
}

/// Reply of `/compact`.
pub const COMPACT_REPLY: &str = "Compacting completed.";

pub(super) fn compact(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let summary = format!(
        "Summary of {} earlier turn(s): the user explored the reference agent's scenarios.",
        ctx.state.turns.saturating_sub(1)
    );
    let native = ctx.version() == Version::V2 || ctx.conn.compaction;
    if native {
        let cid = ctx.state.next_id("compaction_");
        p.update(updates::compaction(&cid, "in_progress"));
        for piece in word_chunks(&summary) {
            p.update(updates::compaction_chunk(&cid, piece));
            p.pause(1);
        }
        p.update(updates::compaction(&cid, "completed"));
    }
    ctx.state.used /= 10;
    p.update(updates::usage(ctx.state.used, ctx.context_size));
    let id = ctx.state.next_id("msg_a");
    let reply = if native {
        COMPACT_REPLY.to_owned()
    } else {
        // v1 without `session.compaction`: the summary goes into the reply.
        format!("{COMPACT_REPLY} {summary}")
    };
    p.say(MessageKind::Agent, &id, &reply, None);
    p.end("end_turn");
    p
}
