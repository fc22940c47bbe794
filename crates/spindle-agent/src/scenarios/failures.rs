//! Turns that go wrong on purpose: `/scenario error` (the turn fails),
//! `crash` (the process exits) and `stall` (nothing more until a cancel).

use spindle_wire::tags::MessageKind;

use super::catalogue::CRASH_EXIT_CODE;
use crate::program::{Program, Step};
use crate::turn_context::TurnCtx;

/// Text streamed by `/scenario error` before the turn fails.
pub const ERROR_TEXT: &str = "Looking that up in the model backend... ";
/// The error message the failed turn carries.
pub const ERROR_MESSAGE: &str = "simulated failure: the model backend is unavailable";

pub(super) fn error(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, ERROR_TEXT, None);
    p.steps.push(Step::Fail(ERROR_MESSAGE.to_owned()));
    p
}

pub(super) fn crash(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    p.say(
        MessageKind::Agent,
        &id,
        "This turn will stop abruptly in the middle of a",
        None,
    );
    p.steps.push(Step::Exit(CRASH_EXIT_CODE));
    p
}

/// Text streamed by `/scenario stall` before it stops.
pub const STALL_TEXT: &str = "Working on it; this turn stalls until you cancel it.";

pub(super) fn stall(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, STALL_TEXT, None);
    p.steps.push(Step::Stall);
    // Reached only if the stall is lifted without a cancel (never today).
    p.end("end_turn");
    p
}
