//! Turns: a prompt starts one (v1: or waits behind the running one; v2: or is
//! inserted at once and its work follows the running prompt's), and a turn
//! ends by its program, by failure, by `session/cancel`, or branches on the
//! client's answer to a permission request.

use serde_json::{Value, json};
use spindle_wire::tags::MessageKind;

use super::{AgentCore, Runner, Turn, Waiting};
use crate::program::{CallOutcome, ClientFlow};
use crate::scenarios;
use crate::turn_context::TurnCtx;
use crate::updates;
use crate::wire::{Version, codes};
use spindle_wire::client_methods::{TERMINAL_CREATE, TERMINAL_KILL, TERMINAL_RELEASE, fields};

impl AgentCore {
    pub(super) fn prompt(&mut self, id: Value, params: &Value) {
        let Some(s) = self.lookup_session(&id, params) else {
            return;
        };
        if self.sessions[s].closed {
            let message = format!(
                "session {} was closed (session/close): load or resume it first",
                self.sessions[s].id
            );
            self.send_error(&id, codes::INVALID_PARAMS, &message);
            return;
        }
        let Some(blocks) = params.get("prompt").and_then(Value::as_array) else {
            self.send_error(&id, codes::INVALID_PARAMS, "prompt must be an array");
            return;
        };
        let blocks = blocks.clone();
        if let Some(refused) = blocks.iter().find_map(unsupported_block) {
            self.send_error(&id, codes::INVALID_PARAMS, &refused);
            return;
        }
        if self.sessions[s].turn.is_some() {
            match self.conn().version {
                // v1 has no insertion: the prompt waits, unanswered, and runs
                // as its own turn after the running one.
                Version::V1 => self.sessions[s].queued.push_back((id, blocks)),
                // v2: the agent answers once the prompt is inserted, and
                // inserts it at once (ACP v2 prompt lifecycle); its work runs
                // after the running prompt's, and one `idle` ends them all.
                Version::V2 => {
                    self.insert_v2_prompt(s, &id, &blocks);
                    self.sessions[s].inserted.push_back(blocks);
                    if let Some(turn) = self.sessions[s].turn.as_mut()
                        && matches!(turn.waiting, Waiting::NextPrompt)
                    {
                        turn.waiting = Waiting::Nothing;
                    }
                }
            }
            return;
        }
        self.start_turn(s, id, blocks);
    }

    /// v2: answers prompt `id` with its message id and reports where it
    /// landed (`user_message`).
    fn insert_v2_prompt(&mut self, s: usize, id: &Value, blocks: &[Value]) {
        let session = &mut self.sessions[s];
        let user_id = session.state.next_id("msg_u");
        let sid = session.id.clone();
        self.send_response(id, json!({"messageId": user_id}));
        self.send_update(
            &sid,
            updates::whole_message(MessageKind::User, &user_id, blocks),
        );
    }

    pub(super) fn start_turn(&mut self, s: usize, id: Value, blocks: Vec<Value>) {
        let prompt_id = match self.conn().version {
            Version::V1 => Some(id),
            Version::V2 => {
                self.insert_v2_prompt(s, &id, &blocks);
                let sid = self.sessions[s].id.clone();
                self.send_update(&sid, updates::state("running", None));
                None
            }
        };
        self.run_prompt(s, prompt_id, blocks);
    }

    /// Starts the work of a prompt already answered (v2) or still open (v1:
    /// `prompt_id`) as the session's turn.
    fn run_prompt(&mut self, s: usize, prompt_id: Option<Value>, blocks: Vec<Value>) {
        let conn = self.conn();
        let text = scenarios::prompt_text(&blocks);
        self.record_prompt(s, &blocks);
        let session = &mut self.sessions[s];
        let program = match self.config.script.as_ref().and_then(|script| {
            script.turn(&mut session.state.script_pos, self.config.script_sleeps)
        }) {
            Some(program) => program,
            None => {
                let mut ctx = TurnCtx {
                    conn,
                    state: &mut session.state,
                    session_id: &session.id,
                    cwd: &session.cwd,
                    blocks: &blocks,
                    delay_ms: self.config.delay_ms,
                    context_size: self.config.context_size,
                };
                scenarios::build_turn(&mut ctx, &session.id, &text)
            }
        };
        session.turn = Some(Turn {
            prompt_id,
            runner: Runner {
                steps: program.into_queue(),
                wake_at: None,
            },
            waiting: Waiting::Nothing,
            open_tools: Vec::new(),
            items: Vec::new(),
        });
    }

    /// v2: the running prompt's work is done and a prompt inserted meanwhile
    /// follows, without an `idle` between them. `false` when none waits.
    pub(super) fn run_next_inserted(&mut self, s: usize) -> bool {
        let Some(blocks) = self.sessions[s].inserted.pop_front() else {
            return false;
        };
        self.take_turn(s);
        self.run_prompt(s, None, blocks);
        true
    }

    /// The foreground work ended (cancelled or failed): the prompts inserted
    /// meanwhile end with it, unrun (the `idle` just sent ends them); the
    /// history keeps them as asked.
    fn drop_inserted(&mut self, s: usize) {
        for blocks in std::mem::take(&mut self.sessions[s].inserted) {
            self.record_prompt(s, &blocks);
        }
    }

    /// Takes the session's current turn away, moving its remaining steps to
    /// background work; returns the session id and the turn's `prompt_id`.
    /// `None` when no turn is open.
    fn take_turn(&mut self, s: usize) -> Option<(String, Option<Value>)> {
        let mut turn = self.sessions[s].turn.take()?;
        let session = &mut self.sessions[s];
        session.background.steps.extend(turn.runner.steps.drain(..));
        let sid = session.id.clone();
        self.record_turn(s, std::mem::take(&mut turn.items));
        Some((sid, turn.prompt_id))
    }

    /// Ends the current turn, moving its remaining steps to background work.
    pub(super) fn finish_turn(&mut self, s: usize, stop_reason: &str) {
        let conn = self.conn();
        let Some((sid, prompt_id)) = self.take_turn(s) else {
            return;
        };
        match (conn.version, prompt_id) {
            (Version::V1, Some(id)) => {
                self.send_response(&id, json!({"stopReason": stop_reason}));
            }
            _ => self.send_update(&sid, updates::state("idle", Some(stop_reason))),
        }
        self.drop_inserted(s);
    }

    /// Ends the current turn as failed (see [`Step::Fail`]).
    pub(super) fn fail_turn(&mut self, s: usize, message: &str) {
        let conn = self.conn();
        let Some((sid, prompt_id)) = self.take_turn(s) else {
            return;
        };
        let error = json!({"code": codes::INTERNAL_ERROR, "message": message});
        match (conn.version, prompt_id) {
            (Version::V1, Some(id)) => self.send_error(&id, codes::INTERNAL_ERROR, message),
            _ => {
                let mut idle = updates::state("idle", Some("error"));
                idle["error"] = error;
                self.send_update(&sid, idle);
            }
        }
        self.drop_inserted(s);
    }

    pub(super) fn cancel_turn(&mut self, s: usize) {
        let conn = self.conn();
        let sid = self.sessions[s].id.clone();
        let Some(turn) = self.sessions[s].turn.as_mut() else {
            return;
        };
        let mut cleanup = Vec::new();
        match std::mem::replace(&mut turn.waiting, Waiting::Nothing) {
            // A late answer to these requests is ignored.
            Waiting::Permission { request_id, .. } => {
                self.pending.remove(&request_id);
            }
            Waiting::Client {
                request_id,
                method,
                flow,
            } => {
                self.pending.remove(&request_id);
                if method == TERMINAL_CREATE {
                    self.orphan_terminals.insert(request_id, sid.clone());
                }
                cleanup = flow.on_cancel();
            }
            Waiting::Nothing | Waiting::Stall | Waiting::NextPrompt => {}
        }
        turn.runner.steps.clear();
        turn.runner.wake_at = None;
        let open = std::mem::take(&mut turn.open_tools);
        // Fire and forget (their answers are ignored), e.g. kill and release
        // the terminal the turn was waiting for.
        for (method, params) in cleanup {
            self.send_request(method, params);
        }
        let status = updates::cancelled_tool_status(conn.version);
        for tool in open {
            self.send_update(&sid, updates::tool_call_status(&tool, status, None));
        }
        self.finish_turn(s, "cancelled");
        // Held prompts are dropped with the turn: they were never inserted.
        let queued = std::mem::take(&mut self.sessions[s].queued);
        for (id, _) in queued {
            match conn.version {
                Version::V1 => self.send_response(&id, json!({"stopReason": "cancelled"})),
                Version::V2 => self.send_error(
                    &id,
                    codes::REQUEST_CANCELLED,
                    "prompt dropped: the session was cancelled before it was inserted",
                ),
            }
        }
    }

    pub(super) fn handle_response(
        &mut self,
        id: &Value,
        result: Option<&Value>,
        error: Option<&Value>,
    ) {
        let Some(request_id) = id.as_u64() else {
            return;
        };
        if let Some(sid) = self.orphan_terminals.remove(&request_id) {
            // A terminal created for a turn that was cancelled meanwhile.
            let created = result.and_then(|r| r.get(fields::TERMINAL_ID)).cloned();
            if let Some(terminal_id) = created {
                let params = json!({fields::SESSION_ID: sid, fields::TERMINAL_ID: terminal_id});
                self.send_request(TERMINAL_KILL, params.clone());
                self.send_request(TERMINAL_RELEASE, params);
            }
            return;
        }
        let Some(s) = self.pending.remove(&request_id) else {
            return;
        };
        let conn = self.conn();
        let sid = self.sessions[s].id.clone();
        let Some(turn) = self.sessions[s].turn.as_mut() else {
            return;
        };
        let step = match std::mem::replace(&mut turn.waiting, Waiting::Nothing) {
            Waiting::Permission {
                request_id: waited,
                step,
            } if waited == request_id => step,
            Waiting::Client {
                request_id: waited,
                flow,
                ..
            } if waited == request_id => {
                let outcome = CallOutcome::from_response(result, error);
                self.continue_flow(s, flow, Some(outcome));
                return;
            }
            other => {
                turn.waiting = other;
                return;
            }
        };
        let outcome = result
            .and_then(|r| r.pointer("/outcome/outcome"))
            .and_then(Value::as_str);
        let option = result
            .and_then(|r| r.pointer("/outcome/optionId"))
            .and_then(Value::as_str);
        if error.is_none() && outcome == Some("cancelled") {
            // The client answers `cancelled` when it cancels the turn.
            turn.open_tools.retain(|t| *t != step.tool_call_id);
            let status = updates::cancelled_tool_status(conn.version);
            self.send_update(
                &sid,
                updates::tool_call_status(&step.tool_call_id, status, None),
            );
            self.cancel_turn(s);
            return;
        }
        let allowed = error.is_none()
            && outcome == Some("selected")
            && option.is_some_and(|o| updates::PERMISSION_ALLOWING.contains(&o));
        let branch = if allowed {
            step.on_allow
        } else {
            step.on_reject
        };
        for next in branch.into_iter().rev() {
            turn.runner.steps.push_front(next);
        }
        if conn.version == Version::V2 {
            self.send_update(&sid, updates::state("running", None));
        }
    }
}

/// Why the agent refuses a prompt block, if it does: it accepts text,
/// resource links, embedded resources and images (as advertised), not audio.
fn unsupported_block(block: &Value) -> Option<String> {
    use spindle_wire::client_methods::blocks;
    match block.get("type").and_then(Value::as_str) {
        Some(blocks::AUDIO) => {
            Some("audio content is not supported (promptCapabilities.audio is false)".to_owned())
        }
        _ => None,
    }
}

impl AgentCore {
    /// Runs `flow` one step on with `outcome` (its last call's answer, or
    /// `None` to start it); its steps run next in session `s`'s turn.
    pub(super) fn continue_flow(
        &mut self,
        s: usize,
        flow: Box<dyn ClientFlow>,
        outcome: Option<CallOutcome>,
    ) {
        let conn = self.conn();
        let (delay_ms, context_size) = (self.config.delay_ms, self.config.context_size);
        let session = &mut self.sessions[s];
        let Some(turn) = session.turn.as_mut() else {
            return;
        };
        let mut ctx = TurnCtx {
            conn,
            state: &mut session.state,
            session_id: &session.id,
            cwd: &session.cwd,
            blocks: &[],
            delay_ms,
            context_size,
        };
        let steps = flow.advance(&mut ctx, outcome);
        for step in steps.into_iter().rev() {
            turn.runner.steps.push_front(step);
        }
    }

    /// Sends a request to the client whose answer nobody waits for.
    pub(super) fn send_request(&mut self, method: &str, params: Value) {
        let request_id = self.next_request_id;
        self.next_request_id += 1;
        let request =
            json!({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params});
        crate::wire::push_line(&mut self.out, &request);
    }
}
