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

/// Text streamed by `/scenario wait-next` before it waits.
pub const WAIT_NEXT_TEXT: &str = "Waiting for your next message before I go on.";

/// `/scenario wait-next`: a turn that ends only once another prompt was
/// inserted (v2; one inserted while its text still streams counts too), so
/// a client's prompt sent during a turn is seen to arrive before the turn's
/// end without any timing.
pub(super) fn wait_next(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, WAIT_NEXT_TEXT, None);
    p.steps.push(Step::WaitForNextPrompt);
    p.end("end_turn");
    p
}

pub(super) fn stall(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, STALL_TEXT, None);
    p.steps.push(Step::Stall);
    // Reached only if the stall is lifted without a cancel (never today).
    p.end("end_turn");
    p
}
