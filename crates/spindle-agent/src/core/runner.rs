//! Running programs: [`AgentCore::advance`] executes each session's turn and
//! background steps until the output budget is reached or all work waits
//! for time or input.

use serde_json::{Value, json};
use spindle_wire::tags;

use super::{AgentCore, Next, OUTPUT_BUDGET, Runner, Session, Waiting};
use crate::program::Step;
use crate::updates;
use crate::wire::{self, Version};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Which {
    Turn,
    Background,
}

pub(super) enum RunOutcome {
    /// The runner is blocked (waiting for input) or empty.
    Idle,
    WakeAt(u64),
    Yield,
    Exit(i32),
}

impl AgentCore {
    /// Runs every runnable step until output reaches the budget or all work
    /// is blocked; `now_ms` is the driver's clock.
    pub fn advance(&mut self, now_ms: u64) -> Next {
        self.now_ms = now_ms;
        if let Some(code) = self.exit {
            return Next::Exit(code);
        }
        let mut wake: Option<u64> = None;
        for s in 0..self.sessions.len() {
            for which in [Which::Turn, Which::Background] {
                match self.run(s, which, now_ms) {
                    RunOutcome::Idle => {}
                    RunOutcome::WakeAt(t) => wake = Some(wake.map_or(t, |w| w.min(t))),
                    RunOutcome::Yield => return Next::Ready,
                    RunOutcome::Exit(code) => {
                        self.exit = Some(code);
                        return Next::Exit(code);
                    }
                }
            }
        }
        if !self.out.is_empty() {
            return Next::Ready;
        }
        if let Some(t) = wake {
            return Next::WakeAt(t);
        }
        if self.eof {
            return Next::Exit(0);
        }
        Next::WaitForInput
    }

    pub(super) fn runner_mut(
        sessions: &mut [Session],
        s: usize,
        which: Which,
    ) -> Option<&mut Runner> {
        let session = &mut sessions[s];
        match which {
            Which::Background => Some(&mut session.background),
            Which::Turn => match &mut session.turn {
                Some(turn) if matches!(turn.waiting, Waiting::Nothing) => Some(&mut turn.runner),
                _ => None,
            },
        }
    }

    pub(super) fn run(&mut self, s: usize, which: Which, now_ms: u64) -> RunOutcome {
        loop {
            if self.out.len() >= OUTPUT_BUDGET {
                return RunOutcome::Yield;
            }
            let Some(runner) = Self::runner_mut(&mut self.sessions, s, which) else {
                return RunOutcome::Idle;
            };
            match runner.steps.front_mut() {
                None => return RunOutcome::Idle,
                Some(Step::Delay(ms)) => match runner.wake_at {
                    None if *ms > 0 => {
                        let t = now_ms + *ms;
                        runner.wake_at = Some(t);
                        return RunOutcome::WakeAt(t);
                    }
                    Some(t) if now_ms < t => return RunOutcome::WakeAt(t),
                    _ => {
                        runner.wake_at = None;
                        runner.steps.pop_front();
                        continue;
                    }
                },
                Some(Step::Stream(generator)) => {
                    let done = generator.write_until(&mut self.out, OUTPUT_BUDGET);
                    if done {
                        runner.steps.pop_front();
                    }
                    continue;
                }
                Some(_) => {}
            }
            let Some(step) = runner.steps.pop_front() else {
                return RunOutcome::Idle;
            };
            if let Some(code) = self.execute(s, which, step) {
                return RunOutcome::Exit(code);
            }
        }
    }

    /// Executes one step; returns an exit code when the step ends the process.
    pub(super) fn execute(&mut self, s: usize, which: Which, step: Step) -> Option<i32> {
        let conn = self.conn();
        let sid = self.sessions[s].id.clone();
        match step {
            Step::Update(update) => {
                if which == Which::Turn {
                    self.track_tool(s, &update);
                    self.track_reply(s, &update);
                }
                self.track_title(s, &update);
                self.send_update(&sid, update);
            }
            Step::Flow(flow) => {
                if which == Which::Turn {
                    self.continue_flow(s, flow, None);
                }
            }
            Step::Call(call) => {
                if which != Which::Turn {
                    return None;
                }
                let request_id = self.next_request_id;
                self.next_request_id += 1;
                let request = json!({
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": call.method,
                    "params": call.params,
                });
                wire::push_line(&mut self.out, &request);
                self.pending.insert(request_id, s);
                if let Some(turn) = self.sessions[s].turn.as_mut() {
                    turn.waiting = Waiting::Client {
                        request_id,
                        method: call.method,
                        flow: call.flow,
                    };
                }
            }
            Step::Raw(message) => wire::push_line(&mut self.out, &message),
            Step::End(reason) => match which {
                Which::Turn if self.run_next_inserted(s) => {}
                Which::Turn => {
                    self.finish_turn(s, &reason);
                    if let Some((id, blocks)) = self.sessions[s].queued.pop_front() {
                        self.start_turn(s, id, blocks);
                    }
                }
                // Agent-initiated work (scripts) ends with idle in v2; v1 has
                // no frame for it.
                Which::Background if conn.version == Version::V2 => {
                    self.send_update(&sid, updates::state("idle", Some(&reason)));
                }
                Which::Background => {}
            },
            Step::Fail(message) => {
                if which == Which::Turn {
                    self.fail_turn(s, &message);
                    if let Some((id, blocks)) = self.sessions[s].queued.pop_front() {
                        self.start_turn(s, id, blocks);
                    }
                }
            }
            Step::Exit(code) => return Some(code),
            Step::WaitForNextPrompt => {
                // A prompt inserted before the wait was reached (while the
                // turn still streamed) has already come: nothing to wait for.
                let session = &mut self.sessions[s];
                if let Some(turn) = session.turn.as_mut()
                    && which == Which::Turn
                    && session.inserted.is_empty()
                {
                    turn.waiting = Waiting::NextPrompt;
                }
            }
            Step::Stall => {
                if let Some(turn) = self.sessions[s].turn.as_mut()
                    && which == Which::Turn
                {
                    turn.waiting = Waiting::Stall;
                }
            }
            Step::Permission(step) => {
                if which != Which::Turn {
                    return None;
                }
                let request_id = self.next_request_id;
                self.next_request_id += 1;
                if conn.version == Version::V2 {
                    self.send_update(&sid, updates::state("requires_action", None));
                }
                let params = updates::permission_params(
                    conn.version,
                    &sid,
                    &step.tool_call_id,
                    &step.title,
                    &step.kind,
                    &step.content,
                );
                let request = json!({
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": spindle_wire::client_methods::SESSION_REQUEST_PERMISSION,
                    "params": params,
                });
                wire::push_line(&mut self.out, &request);
                self.pending.insert(request_id, s);
                if let Some(turn) = self.sessions[s].turn.as_mut() {
                    turn.waiting = Waiting::Permission { request_id, step };
                }
            }
            Step::Delay(_) | Step::Stream(_) => {}
        }
        None
    }

    pub(super) fn track_tool(&mut self, s: usize, update: &Value) {
        let Some(turn) = self.sessions[s].turn.as_mut() else {
            return;
        };
        let tag = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .and_then(tags::UpdateTag::parse);
        if !matches!(
            tag,
            Some(tags::UpdateTag::ToolCall | tags::UpdateTag::ToolCallUpdate)
        ) {
            return;
        }
        let (Some(id), Some(status)) = (
            update.get("toolCallId").and_then(Value::as_str),
            update.get("status").and_then(Value::as_str),
        ) else {
            return;
        };
        turn.open_tools.retain(|t| t != id);
        if matches!(status, "pending" | "in_progress") {
            turn.open_tools.push(id.to_owned());
        }
    }
}
