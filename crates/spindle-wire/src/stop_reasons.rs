//! The `stopReason` values of a prompt turn (v1 `session/prompt` result, v2
//! `state_update` idle), and what each says about how the turn ended.

/// The agent finished its reply.
pub const END_TURN: &str = "end_turn";
/// The client cancelled the turn.
pub const CANCELLED: &str = "cancelled";
/// The agent refused to go on.
pub const REFUSAL: &str = "refusal";
/// The model's token limit was reached.
pub const MAX_TOKENS: &str = "max_tokens";
/// The limit on model requests in one turn was reached.
pub const MAX_TURN_REQUESTS: &str = "max_turn_requests";
/// v2 draft: the turn failed (its `idle` carries the `error`).
pub const ERROR: &str = "error";

/// How a turn ended, read from its stop reason and error: what a front end
/// shows at the end of the turn. Its `as_str` names are Spindle's (the page
/// styles each one), not wire values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnOutcome {
    /// `end_turn`.
    Done,
    /// `cancelled`.
    Cancelled,
    /// `refusal`.
    Refused,
    /// `max_tokens`.
    MaxTokens,
    /// `max_turn_requests`.
    MaxTurnRequests,
    /// The turn failed: an error response, an idle state with an error or
    /// the v2 stop reason `error`.
    Error,
    /// A stop reason this vocabulary does not know (kept verbatim beside it).
    Other,
    /// The turn ended without saying why (a v2 idle without a stop reason).
    Unreported,
}

impl TurnOutcome {
    /// The outcome of a turn that ended with `stop_reason` and, when it
    /// failed, an error (an error wins over any stop reason).
    pub fn of(stop_reason: Option<&str>, failed: bool) -> TurnOutcome {
        if failed || stop_reason == Some(ERROR) {
            return TurnOutcome::Error;
        }
        match stop_reason {
            Some(END_TURN) => TurnOutcome::Done,
            Some(CANCELLED) => TurnOutcome::Cancelled,
            Some(REFUSAL) => TurnOutcome::Refused,
            Some(MAX_TOKENS) => TurnOutcome::MaxTokens,
            Some(MAX_TURN_REQUESTS) => TurnOutcome::MaxTurnRequests,
            Some(_) => TurnOutcome::Other,
            None => TurnOutcome::Unreported,
        }
    }

    /// The outcome's name in an entry view (`done`, `cancelled`, `refused`,
    /// `max_tokens`, `max_turn_requests`, `error`, `other`, `unreported`).
    pub fn as_str(self) -> &'static str {
        match self {
            TurnOutcome::Done => "done",
            TurnOutcome::Cancelled => "cancelled",
            TurnOutcome::Refused => "refused",
            TurnOutcome::MaxTokens => "max_tokens",
            TurnOutcome::MaxTurnRequests => "max_turn_requests",
            TurnOutcome::Error => "error",
            TurnOutcome::Other => "other",
            TurnOutcome::Unreported => "unreported",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_wins_over_the_stop_reason_and_unknown_reasons_are_other() {
        let cases = [
            (Some(END_TURN), false, "done"),
            (Some(CANCELLED), false, "cancelled"),
            (Some(REFUSAL), false, "refused"),
            (Some(MAX_TOKENS), false, "max_tokens"),
            (Some(MAX_TURN_REQUESTS), false, "max_turn_requests"),
            (Some("paused_by_moon"), false, "other"),
            (None, false, "unreported"),
            (Some(END_TURN), true, "error"),
            (None, true, "error"),
            (Some(ERROR), false, "error"),
        ];
        for (stop, failed, want) in cases {
            assert_eq!(
                TurnOutcome::of(stop, failed).as_str(),
                want,
                "{stop:?} {failed}"
            );
        }
    }
}
