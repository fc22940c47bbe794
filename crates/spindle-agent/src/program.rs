//! A turn is a program: a queue of steps the core executes one by one.
//!
//! Scenarios and scripts compile to the same [`Step`]s, so pacing,
//! cancellation and permission handling work identically for both.

use std::collections::VecDeque;

use serde_json::Value;

use crate::stream_gen::StreamGenerator;
use crate::turn_context::TurnCtx;
use crate::updates;
use spindle_wire::tags::MessageKind;

/// One step of a turn (or of background work after it).
#[derive(Debug)]
pub(crate) enum Step {
    /// Send a `session/update` carrying this `update` object.
    Update(Value),
    /// Pause for this many milliseconds (skipped when zero).
    Delay(u64),
    /// Ask the client for permission and branch on the answer.
    Permission(Box<PermissionStep>),
    /// End the foreground turn with this stop reason. Steps after it run as
    /// background work (v2: after `idle`; v1: after the prompt response).
    End(String),
    /// End the foreground turn as failed: v1 answers the prompt with this
    /// JSON-RPC error message (code -32603); v2 sends `idle` with
    /// `stopReason: "error"` and the error object.
    Fail(String),
    /// Exit the process with this code (fault-injection scenario).
    Exit(i32),
    /// Stop sending until the client cancels the turn.
    Stall,
    /// v2: stop sending until another prompt is inserted into the session
    /// (or the client cancels); one inserted before the step was reached,
    /// still to run, counts: no wait then. v1 holds that prompt, so only a
    /// cancel ends it.
    WaitForNextPrompt,
    /// Write this JSON-RPC message verbatim (scripts).
    Raw(Value),
    /// Write generated notifications as fast as the output takes them.
    Stream(Box<StreamGenerator>),
    /// Start a flow of client-method calls (its first steps run in place).
    Flow(Box<dyn ClientFlow>),
    /// Send a request to the client (`fs/*`, `terminal/*`) and wait for the
    /// answer, which the call's flow turns into the next steps.
    Call(Box<ClientCall>),
}

/// The client's answer to one of the agent's requests.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The result object.
    Ok(Value),
    /// The JSON-RPC error.
    Err {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
    },
}

impl CallOutcome {
    /// Reads a JSON-RPC response's `result` / `error`.
    pub fn from_response(result: Option<&Value>, error: Option<&Value>) -> CallOutcome {
        match (result, error) {
            (_, Some(error)) => CallOutcome::Err {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
                    .to_owned(),
            },
            (Some(result), None) => CallOutcome::Ok(result.clone()),
            (None, None) => CallOutcome::Err {
                code: 0,
                message: "a response without result or error".into(),
            },
        }
    }
}

/// A scenario that talks to the client's own methods (file system,
/// terminals): a state machine that turns each answer into the next steps,
/// ending those steps with a [`Step::Call`] that carries the flow on, or
/// without one when it is done. Pure: it reads only the answers and the
/// [`TurnCtx`] it is handed.
pub(crate) trait ClientFlow: std::fmt::Debug + Send {
    /// The next steps: at the start `outcome` is `None`, afterwards it is the
    /// answer to the flow's last call.
    fn advance(self: Box<Self>, ctx: &mut TurnCtx<'_>, outcome: Option<CallOutcome>) -> Vec<Step>;

    /// Requests to send, without waiting for their answers, when the turn is
    /// cancelled while the flow waits (e.g. kill and release a terminal).
    fn on_cancel(&self) -> Vec<(&'static str, Value)> {
        Vec::new()
    }
}

/// One request to the client and the flow that continues with its answer.
#[derive(Debug)]
pub(crate) struct ClientCall {
    /// The method (`fs/read_text_file`, `terminal/create`, ...).
    pub method: &'static str,
    /// Its params.
    pub params: Value,
    pub(crate) flow: Box<dyn ClientFlow>,
}

/// A `session/request_permission` round trip.
#[derive(Debug)]
pub struct PermissionStep {
    /// The tool call the permission is for (already reported to the client).
    pub tool_call_id: String,
    /// Title shown to the user.
    pub title: String,
    /// Tool kind (`edit`, `execute`, ...).
    pub kind: String,
    /// The tool call's content sent with the request (an edit's diff), shown before the answer.
    pub content: Vec<Value>,
    /// Steps to run when the client selects the allow option.
    pub on_allow: Vec<Step>,
    /// Steps to run when the client rejects or answers with an error.
    pub on_reject: Vec<Step>,
}

/// A program under construction, with helpers that expand text into paced
/// word-sized chunks.
#[derive(Debug, Default)]
pub(crate) struct Program {
    /// The steps in order.
    pub steps: Vec<Step>,
    /// Pause between streamed pieces, in milliseconds.
    pub delay_ms: u64,
}

impl Program {
    /// An empty program pacing its chunks by `delay_ms`.
    pub fn new(delay_ms: u64) -> Self {
        Program {
            steps: Vec::new(),
            delay_ms,
        }
    }

    /// Appends one update.
    pub fn update(&mut self, update: Value) {
        self.steps.push(Step::Update(update));
    }

    /// Appends a pause of `units` times the configured delay.
    pub fn pause(&mut self, units: u64) {
        if self.delay_ms > 0 && units > 0 {
            self.steps.push(Step::Delay(self.delay_ms * units));
        }
    }

    /// Streams `text` as word-sized chunks of one message, pausing between them.
    pub fn say(&mut self, kind: MessageKind, message_id: &str, text: &str, meta: Option<&Value>) {
        for piece in word_chunks(text) {
            self.update(updates::chunk(kind, message_id, piece, meta.cloned()));
            self.pause(1);
        }
    }

    /// Ends the foreground turn.
    pub fn end(&mut self, stop_reason: &str) {
        self.steps.push(Step::End(stop_reason.to_owned()));
    }

    /// The steps as a queue.
    pub fn into_queue(self) -> VecDeque<Step> {
        self.steps.into()
    }
}

/// Splits text into word-sized pieces whose concatenation is the input:
/// each piece is a word plus the whitespace after it (leading whitespace
/// stays with the first word).
pub fn word_chunks(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut prev_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if !space && prev_space && i > start {
            // A word begins after whitespace: close the previous piece,
            // unless that piece is whitespace only (keep it with this word).
            if text[start..i].chars().any(|c| !c.is_whitespace()) {
                pieces.push(&text[start..i]);
                start = i;
            }
        }
        prev_space = space;
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_chunks_rebuild_the_text() {
        for text in [
            "Hello world",
            "  lead and trail  ",
            "one",
            "",
            "a\n\nb c",
            "é → 😀 x",
        ] {
            let pieces = word_chunks(text);
            assert_eq!(pieces.concat(), text);
            assert!(pieces.iter().all(|p| !p.is_empty()));
        }
        assert_eq!(
            word_chunks("Hello big world"),
            vec!["Hello ", "big ", "world"]
        );
    }
}
