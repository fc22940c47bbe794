//! Turns: when one starts, when it ends, and which turn new output joins.

use serde_json::Value;

use crate::core::{TranscriptEngine, TurnRecord};
use crate::model::{EntryBody, EntryKind, TurnEnd};
use spindle_wire::stop_reasons::CANCELLED;

impl TranscriptEngine {
    pub(crate) fn begin_turn(&mut self) {
        if self.t.state.turn_open {
            // A new turn implicitly finishes the previous one.
            if let Some(last) = self.turn_log.last_mut() {
                last.finished = true;
            }
        }
        self.turn_log.push(TurnRecord::default());
        let s = &mut self.t.state;
        s.turns += 1;
        s.turn_open = true;
        s.status = "running".into();
        s.stop_reason = None;
        s.error = None;
        s.cancel_requested = false;
        self.explicit_idle = false;
        self.set_open(None);
        self.emit_state();
    }

    /// Ends the open turn (if any) with a `turn_end` entry after its output,
    /// and sets the state.
    pub(crate) fn end_turn(&mut self, stop_reason: Option<String>, error: Option<Value>) {
        if self.t.state.turn_open {
            if stop_reason.as_deref() == Some(CANCELLED) {
                self.cancel_unfinished_tool_calls();
            }
            let turn = self.t.state.turns;
            let end = TurnEnd {
                stop_reason: stop_reason.clone(),
                error: error.clone(),
            };
            let idx = self.push_entry(
                &format!("turn:{turn}:end"),
                EntryKind::TurnEnd,
                EntryBody::TurnEnd(Box::new(end)),
                Some(turn),
            );
            self.emit_insert(idx);
        }
        self.close_turn(stop_reason, error);
    }

    /// Ends the open turn without a `turn_end` entry: the end of a replayed
    /// history, which says nothing about how its last turn ended.
    pub(crate) fn close_turn(&mut self, stop_reason: Option<String>, error: Option<Value>) {
        if self.t.state.turn_open
            && let Some(last) = self.turn_log.last_mut()
        {
            last.finished = true;
            last.stop_reason = stop_reason.clone();
        }
        let s = &mut self.t.state;
        s.turn_open = false;
        s.status = "idle".into();
        s.stop_reason = stop_reason;
        s.error = error;
        self.set_open(None);
        self.emit_state();
    }

    /// A cancelled turn leaves no tool call spinning: the client marks the
    /// turn's unfinished calls `cancelled` (ACP cancellation; a later update
    /// from the agent still applies on top).
    fn cancel_unfinished_tool_calls(&mut self) {
        let turn = Some(self.t.state.turns);
        for idx in 0..self.t.entries.len() {
            let entry = &mut self.t.entries[idx];
            if entry.turn != turn {
                continue;
            }
            if let EntryBody::ToolCall(tc) = &mut entry.body
                && matches!(
                    tc.field_str("status").as_deref(),
                    Some("pending" | "in_progress")
                )
            {
                tc.patch(&[("status", Some(&Value::from("cancelled")))]);
                self.emit_update(idx);
            }
        }
    }

    /// A v2 session the agent has just opened (or loaded) is idle: output before a prompt or a
    /// `running` (a greeting, commands, a usage report) is background work, not a turn (v2
    /// prompt lifecycle: "a new session defaults to idle"; updates while idle do not change the
    /// state). A v1 agent has no idle: its output outside a prompt still opens an implicit turn.
    pub(crate) fn v2_session_starts_idle(&mut self) {
        if self.t.protocol >= 2 && !self.t.state.turn_open {
            self.explicit_idle = true;
        }
    }

    /// The turn new agent output belongs to. Output outside a turn starts an
    /// implicit one, unless a v2 idle said the agent is idle (then it is
    /// background work and belongs to no turn).
    pub(crate) fn output_turn(&mut self) -> Option<u32> {
        if !self.t.state.turn_open {
            if self.explicit_idle {
                return None;
            }
            self.begin_turn();
        }
        Some(self.t.state.turns)
    }
}
