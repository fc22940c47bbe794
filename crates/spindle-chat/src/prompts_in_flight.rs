//! The prompts the chat sent whose work has not ended, without I/O: the
//! driver (`interactive.rs`) tells it what was sent and what the agent
//! answered, and it says which prompt an answer or a turn's end belongs to.
//!
//! A v1 agent runs one prompt at a time (lines typed meanwhile wait in the
//! chat's queue), so at most one is in flight. A v2 agent is sent each prompt
//! at once: several may be in flight. Each is answered on its own request id
//! (accepted: inserted into the session; or refused), and the session's work
//! ends with an `idle` that carries a stop reason, which ends every prompt
//! accepted so far. A prompt still unanswered then (an agent that holds it
//! until its next break point) stays in flight: its own work is still to
//! come. The chat is "working" while any prompt is in flight.

use spindle_protocol::RequestId;

use super::completion::{OWN_COMMANDS, split_command};

/// One prompt sent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct InFlight {
    /// The chat's own number for it, known before the request id is.
    key: u64,
    /// The `session/prompt` request's id, once the send returned it.
    request_id: Option<RequestId>,
    /// The prompt's content blocks, as JSON.
    blocks: String,
    /// v1: always. v2: the agent accepted (inserted) it.
    accepted: bool,
}

/// What an answer to a prompt request means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PromptAnswer {
    /// v2: inserted; the transcript shows the prompt now (`blocks`).
    Accepted { blocks: String },
    /// v1: the answer that ends the turn (a `TurnFinished` follows).
    Answered,
    /// Refused: never inserted; nothing of it runs.
    Refused,
    /// Not one of ours (already ended, or never sent by this chat).
    Unknown,
}

/// The prompts in flight and whether their work is being cancelled.
#[derive(Debug, Default)]
pub(super) struct PromptsInFlight {
    prompts: Vec<InFlight>,
    next_key: u64,
    /// `session/cancel` was sent for the work in flight (a second Ctrl-C quits).
    cancel_sent: bool,
}

impl PromptsInFlight {
    /// A prompt is being sent; `accepted` is true for v1 (no acceptance
    /// step). Returns its key for [`Self::identified`].
    pub(super) fn sent(&mut self, blocks: String, accepted: bool) -> u64 {
        let key = self.next_key;
        self.next_key += 1;
        self.prompts.push(InFlight {
            key,
            request_id: None,
            blocks,
            accepted,
        });
        // A new prompt is new work: Ctrl-C cancels before it quits again.
        self.cancel_sent = false;
        key
    }

    /// The send of prompt `key` returned its request id.
    pub(super) fn identified(&mut self, key: u64, request_id: RequestId) {
        if let Some(p) = self.prompts.iter_mut().find(|p| p.key == key) {
            p.request_id = Some(request_id);
        }
    }

    /// The agent answered prompt `request_id` (`ok`: a result, not an error).
    pub(super) fn answered(&mut self, request_id: &RequestId, ok: bool) -> PromptAnswer {
        let Some(at) = self
            .prompts
            .iter()
            .position(|p| p.request_id.as_ref() == Some(request_id))
        else {
            return PromptAnswer::Unknown;
        };
        let prompt = &mut self.prompts[at];
        if prompt.accepted {
            // v1: the answer ends the turn; `turn_finished` removes it.
            return PromptAnswer::Answered;
        }
        if ok {
            prompt.accepted = true;
            return PromptAnswer::Accepted {
                blocks: prompt.blocks.clone(),
            };
        }
        self.prompts.remove(at);
        self.settle();
        PromptAnswer::Refused
    }

    /// The session's work ended (v1: the prompt's answer; v2: `idle` with a
    /// stop reason): every accepted prompt's work with it. Returns how many
    /// prompts it ended (0: it ended none of ours, e.g. work the agent began
    /// on its own).
    pub(super) fn turn_finished(&mut self) -> usize {
        let before = self.prompts.len();
        self.prompts.retain(|p| !p.accepted);
        self.settle();
        before - self.prompts.len()
    }

    /// Whether any prompt is in flight: the chat shows it is working.
    pub(super) fn running(&self) -> bool {
        !self.prompts.is_empty()
    }

    /// Whether `session/cancel` was sent for the work in flight.
    pub(super) fn cancelling(&self) -> bool {
        self.cancel_sent && self.running()
    }

    /// `session/cancel` is being sent for the work in flight.
    pub(super) fn cancel_sent(&mut self) {
        self.cancel_sent = true;
    }

    fn settle(&mut self) {
        if self.prompts.is_empty() {
            self.cancel_sent = false;
        }
    }
}

/// Whether a line typed while prompts run is sent at once: only to a v2
/// agent, only a prompt (Spindle's own commands, `/undo` or `/mode` say,
/// wait for the turn's end in both versions), and only when nothing typed
/// before it waits (lines keep their order).
pub(super) fn sends_at_once(line: &str, v2: bool, nothing_waits: bool) -> bool {
    v2 && nothing_waits && !is_own_command(line)
}

/// Whether `line` is one of Spindle's own commands (not a prompt).
pub(super) fn is_own_command(line: &str) -> bool {
    split_command(line.trim())
        .is_some_and(|(name, _)| OWN_COMMANDS.iter().any(|(own, _, _)| *own == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    /// Sends `text` as a prompt and identifies it with request id `n`.
    fn send(prompts: &mut PromptsInFlight, text: &str, n: i64, v1: bool) {
        let key = prompts.sent(format!("[{text:?}]"), v1);
        prompts.identified(key, id(n));
    }

    #[test]
    fn v1_one_prompt_is_answered_then_its_turn_ends() {
        let mut prompts = PromptsInFlight::default();
        send(&mut prompts, "a", 3, true);
        assert!(prompts.running());
        assert_eq!(prompts.answered(&id(3), true), PromptAnswer::Answered);
        assert!(prompts.running());
        assert_eq!(prompts.turn_finished(), 1);
        assert!(!prompts.running());
    }

    #[test]
    fn v2_each_answer_goes_to_its_own_prompt_whatever_the_order() {
        let mut prompts = PromptsInFlight::default();
        send(&mut prompts, "first", 3, false);
        send(&mut prompts, "second", 4, false);
        assert_eq!(prompts.prompts.len(), 2);
        assert_eq!(
            prompts.answered(&id(4), true),
            PromptAnswer::Accepted {
                blocks: "[\"second\"]".into()
            }
        );
        assert_eq!(
            prompts.answered(&id(3), true),
            PromptAnswer::Accepted {
                blocks: "[\"first\"]".into()
            }
        );
        // A second answer to the same request, or one never sent: not ours.
        assert_eq!(prompts.answered(&id(9), true), PromptAnswer::Unknown);
        // One idle ends both: the agent ran them in one piece of work.
        assert_eq!(prompts.turn_finished(), 2);
        assert!(!prompts.running());
        assert_eq!(prompts.answered(&id(3), true), PromptAnswer::Unknown);
    }

    #[test]
    fn v2_a_refused_prompt_leaves_the_running_one_running() {
        let mut prompts = PromptsInFlight::default();
        send(&mut prompts, "first", 3, false);
        assert!(matches!(
            prompts.answered(&id(3), true),
            PromptAnswer::Accepted { .. }
        ));
        send(&mut prompts, "audio", 4, false);
        assert_eq!(prompts.answered(&id(4), false), PromptAnswer::Refused);
        assert!(prompts.running());
        assert_eq!(prompts.turn_finished(), 1);
        assert!(!prompts.running());
    }

    #[test]
    fn v2_a_prompt_the_agent_holds_outlives_the_turn_that_ran_before_it() {
        let mut prompts = PromptsInFlight::default();
        send(&mut prompts, "first", 3, false);
        assert!(matches!(
            prompts.answered(&id(3), true),
            PromptAnswer::Accepted { .. }
        ));
        send(&mut prompts, "held", 4, false);
        // The first turn's idle ends the first prompt only.
        assert_eq!(prompts.turn_finished(), 1);
        assert!(prompts.running(), "the held prompt is still to run");
        assert!(matches!(
            prompts.answered(&id(4), true),
            PromptAnswer::Accepted { .. }
        ));
        assert_eq!(prompts.turn_finished(), 1);
        assert!(!prompts.running());
        // An idle that ends none of ours (work the agent began itself).
        assert_eq!(prompts.turn_finished(), 0);
    }

    /// What reaches the chat after prompt 1 (id 3) was sent and accepted.
    #[derive(Debug, Clone, Copy)]
    enum Event {
        /// The chat sends prompt 2 (id 4).
        SendSecond,
        /// The `idle` that ends the first work.
        FirstIdle,
        /// The agent accepts prompt 2.
        SecondAccepted,
        /// The `idle` of the work prompt 2 started after the first idle.
        SecondIdle,
    }

    /// Every order the wire allows: the agent answers prompt 2 after the
    /// chat sent it; if it took it before its first `idle` it inserted it
    /// (answer, then that one `idle` ends both), else it runs it as new work
    /// (`idle`, answer, its own `idle`). After each event: whether the chat
    /// still works, and how many prompts an `idle` ended.
    #[test]
    fn v2_a_second_prompt_ends_with_the_idle_after_its_acceptance_in_every_order() {
        use Event::*;
        let cases: [&[(Event, bool, usize)]; 3] = [
            // Inserted into the running work: one idle ends both.
            &[
                (SendSecond, true, 0),
                (SecondAccepted, true, 0),
                (FirstIdle, false, 2),
            ],
            // Sent before the first idle, taken by the agent after it.
            &[
                (SendSecond, true, 0),
                (FirstIdle, true, 1),
                (SecondAccepted, true, 0),
                (SecondIdle, false, 1),
            ],
            // Sent after the first idle reached the chat: new work.
            &[
                (FirstIdle, false, 1),
                (SendSecond, true, 0),
                (SecondAccepted, true, 0),
                (SecondIdle, false, 1),
            ],
        ];
        for events in cases {
            let mut prompts = PromptsInFlight::default();
            send(&mut prompts, "first", 3, false);
            assert!(matches!(
                prompts.answered(&id(3), true),
                PromptAnswer::Accepted { .. }
            ));
            for &(event, running, ended) in events {
                let ends = match event {
                    SendSecond => {
                        send(&mut prompts, "second", 4, false);
                        0
                    }
                    SecondAccepted => {
                        assert_eq!(
                            prompts.answered(&id(4), true),
                            PromptAnswer::Accepted {
                                blocks: "[\"second\"]".into()
                            },
                            "{events:?}"
                        );
                        0
                    }
                    FirstIdle | SecondIdle => prompts.turn_finished(),
                };
                assert_eq!(ends, ended, "{event:?} in {events:?}");
                assert_eq!(prompts.running(), running, "{event:?} in {events:?}");
            }
        }
    }

    #[test]
    fn an_answer_before_the_send_returned_its_id_is_not_taken_for_another() {
        let mut prompts = PromptsInFlight::default();
        send(&mut prompts, "first", 3, false);
        let key = prompts.sent("[\"second\"]".into(), false);
        assert_eq!(prompts.answered(&id(4), true), PromptAnswer::Unknown);
        prompts.identified(key, id(4));
        assert!(matches!(
            prompts.answered(&id(4), true),
            PromptAnswer::Accepted { .. }
        ));
    }

    #[test]
    fn cancelling_lasts_until_the_work_in_flight_ended_or_new_work_was_sent() {
        let mut prompts = PromptsInFlight::default();
        assert!(!prompts.cancelling());
        send(&mut prompts, "first", 3, false);
        prompts.cancel_sent();
        assert!(prompts.cancelling());
        send(&mut prompts, "second", 4, false);
        assert!(!prompts.cancelling(), "new work: Ctrl-C cancels first");
        prompts.cancel_sent();
        assert!(matches!(
            prompts.answered(&id(3), true),
            PromptAnswer::Accepted { .. }
        ));
        assert!(matches!(
            prompts.answered(&id(4), true),
            PromptAnswer::Accepted { .. }
        ));
        prompts.turn_finished();
        assert!(!prompts.cancelling());
        send(&mut prompts, "third", 5, false);
        assert!(!prompts.cancelling());
    }

    #[test]
    fn only_prompts_to_a_v2_agent_with_nothing_waiting_go_at_once() {
        let cases = [
            ("what now?", true, true, true),
            ("/scenario slow", true, true, true),
            ("what now?", false, true, false),
            ("what now?", true, false, false),
            ("/undo", true, true, false),
            ("  /mode plan", true, true, false),
            ("/queue", true, true, false),
        ];
        for (line, v2, nothing_waits, expected) in cases {
            assert_eq!(
                sends_at_once(line, v2, nothing_waits),
                expected,
                "{line:?} v2={v2} nothing_waits={nothing_waits}"
            );
        }
    }
}
