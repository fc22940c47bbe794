//! The driver's prompts: a typed line sent (or queued), the agent's answers
//! to the prompts and the ends of their work, the queue sent on, and Ctrl-C.
//!
//! A v1 agent runs one prompt at a time: a line typed while it works waits
//! in the chat's queue (`/queue`) and is sent when the turn ends. A v2 agent
//! is sent each prompt at once, while earlier ones still run; which prompt
//! an answer or an end belongs to is `prompts_in_flight`'s to say. Spindle's
//! own commands wait for the turn's end in both.

use serde_json::json;
use serde_json::value::RawValue;
use spindle_protocol::RequestId;
use spindle_wire::client_methods::SESSION_CANCEL;

use super::args::exit;
use super::front::Ending;
use super::interactive::{Chat, Step};
use super::outcome::{AgentErrorText, exit_code_for_turn};
use super::prompt_content;
use super::prompts_in_flight::{PromptAnswer, sends_at_once};
use super::session_open::Opened;

impl Chat<'_> {
    /// The agent answered one of our prompts.
    pub(super) async fn prompt_answered(
        &mut self,
        request_id: &RequestId,
        result: Result<Box<RawValue>, Box<RawValue>>,
    ) -> Step {
        let response = result.as_ref().map(|r| r.get()).map_err(|e| e.get());
        match self.prompts.answered(request_id, result.is_ok()) {
            PromptAnswer::Unknown => {}
            // v1: the answer ends the turn (`TurnFinished` follows).
            PromptAnswer::Answered => {
                let applied = self.engine.apply_prompt_response(response);
                self.apply_ops(applied.ops);
            }
            // v2: the prompt is in the session's history from here on: shown
            // now, where the agent put it.
            PromptAnswer::Accepted { blocks } => {
                let applied = self.engine.apply_user_prompt(&blocks);
                self.apply_ops(applied.ops);
                let applied = self.engine.apply_prompt_response(response);
                self.apply_ops(applied.ops);
            }
            PromptAnswer::Refused => {
                let error = response.err().unwrap_or("{}");
                if self.prompts.running() {
                    // The other prompts run on: the refusal is said, no turn ends.
                    let text = AgentErrorText::from_json("The agent refused the prompt", error);
                    self.front.error(&text);
                    self.show_input_prompt();
                    return Ok(None);
                }
                let ending = Ending {
                    stop_reason: None,
                    error: Some(error),
                    refused: true,
                };
                return self.work_ended(ending).await;
            }
        }
        Ok(None)
    }

    /// The session's work ended (v1: the prompt's answer; v2: `idle` with a
    /// stop reason): the prompts it ran end with it.
    pub(super) async fn turn_finished(&mut self, ending: Ending<'_>) -> Step {
        if self.prompts.turn_finished() == 0 {
            // Work none of our prompts asked for (or already ended).
            return Ok(None);
        }
        self.work_ended(ending).await
    }

    /// Says how the work ended; with nothing left in flight, goes on with
    /// the queue (or ends at EOF).
    async fn work_ended(&mut self, ending: Ending<'_>) -> Step {
        self.last_code = exit_code_for_turn(ending.stop_reason, ending.error.is_some());
        self.front.turn_over(ending)?;
        if !self.asks.is_empty() {
            // A question outlived the turn (a write the agent did not wait for).
            self.show_input_prompt();
            return Ok(None);
        }
        self.next_queued().await
    }

    /// Whether the line at the head of the queue may go now: nothing runs,
    /// or (v2) it is a prompt.
    fn may_send_now(&self, line: &str) -> bool {
        !self.prompts.running() || sends_at_once(line, self.v2, true)
    }

    /// Starts what the queue holds as far as it may go now, or waits for
    /// input (or ends at EOF).
    pub(super) async fn next_queued(&mut self) -> Step {
        while self.controls_pending == 0 && self.asks.is_empty() {
            let Some(next) = self.queued.front() else {
                break;
            };
            if !self.may_send_now(next) {
                break;
            }
            let Some(next) = self.queued.pop_front() else {
                break;
            };
            self.show_queue();
            if self.confirm_delete {
                if let Some(code) = self.delete_answered(&next).await {
                    self.front.redraw()?;
                    return Ok(Some(code));
                }
                continue;
            }
            if self.confirm_restore.is_some() {
                self.restore_answered(&next).await;
                continue;
            }
            self.submit(next).await?;
        }
        // A `/delete` asked after the last line came in gets no answer.
        if self.input_closed
            && self.queued.is_empty()
            && (self.delete_unanswered() | self.restore_unanswered())
        {
            self.front.redraw()?;
        }
        if !self.prompts.running()
            && self.input_closed
            && self.asks.is_empty()
            && self.controls_pending == 0
            && self.queued.is_empty()
        {
            return Ok(Some(self.last_code));
        }
        self.show_input_prompt();
        Ok(None)
    }

    /// A line meant for the agent or for Spindle (`/mode`, ...): with no
    /// turn running, or (v2) a prompt while others run.
    async fn submit(&mut self, line: String) -> anyhow::Result<()> {
        if self.session_command(&line).await
            || self.checkpoint_command(&line).await
            || self.own_command(&line)
        {
            return Ok(());
        }
        if self.conn.opened == (Opened::Attached { observer: true }) {
            // The server would refuse it as a failed turn; it is not the agent's.
            self.front.note(
                "not sent: an observer does not prompt (the session's controllers do); \
                 attach with --role controller to prompt",
            );
            self.last_code = exit::AGENT_ERROR;
            return Ok(());
        }
        self.checkpoint_before_turn().await;
        self.start_prompt(line).await;
        Ok(())
    }

    async fn start_prompt(&mut self, text: String) {
        let caps = self
            .conn
            .init
            .as_ref()
            .map(|i| i.prompt_capabilities())
            .unwrap_or_default();
        let attachments = std::mem::take(&mut self.attachments);
        let blocks =
            match prompt_content::build(&text, &attachments, self.conn.services.host(), caps) {
                Ok(blocks) => blocks,
                Err(message) => {
                    self.front.note(&format!("not sent: {message}"));
                    self.attachments = attachments;
                    return;
                }
            };
        let blocks_json = blocks.to_string();
        if !self.v2 {
            let applied = self.engine.apply_user_prompt(&blocks_json);
            self.apply_ops(applied.ops);
        }
        // v1 has no acceptance step: the prompt is the turn's from the start.
        let key = self.prompts.sent(blocks_json, !self.v2);
        self.show_input_prompt();
        // A failed send means the connection is gone: `AgentExited` follows.
        if let Ok(request_id) = self
            .conn
            .client
            .send_prompt(&self.conn.session_id, &blocks)
            .await
        {
            self.prompts.identified(key, request_id);
        }
    }

    pub(super) async fn typed(&mut self, line: Option<String>) -> Step {
        let Some(line) = line else {
            tracing::debug!("chat input closed");
            self.input_closed = true;
            if self.delete_unanswered() | self.restore_unanswered() {
                self.front.redraw()?;
            }
            self.input_ended().await;
            if !self.prompts.running() && self.queued.is_empty() && self.controls_pending == 0 {
                return Ok(Some(self.last_code));
            }
            return Ok(None);
        };
        if !self.asks.is_empty() {
            self.front.accept_input()?;
            self.answer_typed(&line).await;
            self.show_input_prompt();
            if self.asks.is_empty() {
                return self.next_queued().await;
            }
            return Ok(None);
        }
        if self.confirm_delete {
            if self.front.is_terminal() {
                self.front.accept_input()?;
            } else {
                self.front.commit(None)?;
            }
            if let Some(code) = self.delete_answered(&line).await {
                // The chat ends here: what the deletion said is shown first.
                self.front.redraw()?;
                return Ok(Some(code));
            }
            self.show_input_prompt();
            return Ok(None);
        }
        if self.confirm_restore.is_some() {
            if self.front.is_terminal() {
                self.front.accept_input()?;
            } else {
                self.front.commit(None)?;
            }
            self.restore_answered(&line).await;
            self.show_input_prompt();
            return Ok(None);
        }
        if matches!(line.trim(), "/quit" | "/exit") {
            self.front.accept_input()?;
            return Ok(Some(if self.prompts.running() {
                exit::CANCELLED
            } else {
                self.last_code
            }));
        }
        if let Some(step) = self.queue_line_if_any(&line) {
            return step;
        }
        if self.prompts.running() || self.controls_pending > 0 {
            if self.editor.is_none() {
                self.front.stray_input(&line);
            }
            if line.trim().is_empty() {
                return Ok(None);
            }
            let nothing_waits = self.controls_pending == 0 && self.queued.is_empty();
            if sends_at_once(&line, self.v2, nothing_waits) {
                if self.stdin_tty {
                    self.front
                        .note(&format!("sent while the agent works: {line}"));
                }
                self.submit(line).await?;
                self.show_input_prompt();
                return Ok(None);
            }
            if self.stdin_tty {
                self.front
                    .note(&format!("queued until the turn ends: {line}"));
            }
            self.queued.push_back(line);
            self.show_queue();
            return Ok(None);
        }
        if self.front.is_terminal() {
            self.front.accept_input()?;
        } else {
            self.front.commit(None)?;
        }
        if !line.trim().is_empty() {
            self.submit(line).await?;
        }
        if !self.prompts.running() {
            self.show_input_prompt();
        }
        Ok(None)
    }

    /// Ctrl-C: cancels the session's running work (every prompt in flight;
    /// ACP cancels a session, not a prompt); a second Ctrl-C quits.
    pub(super) async fn interrupt(&mut self) -> Step {
        if !self.prompts.running() {
            if let Some(editor) = self.editor.as_mut()
                && !editor.text().is_empty()
            {
                // Ctrl-C on a typed line drops the line, as shells do.
                editor.set_text(String::new());
                self.refresh_edit(Vec::new());
                return Ok(None);
            }
            return Ok(Some(exit::CANCELLED));
        }
        if self.prompts.cancelling() {
            return Ok(Some(exit::CANCELLED));
        }
        self.prompts.cancel_sent();
        let notification = json!({
            "jsonrpc": "2.0",
            "method": SESSION_CANCEL,
            "params": {"sessionId": self.conn.session_id},
        });
        let applied = self.engine.apply_client_line(&notification.to_string());
        self.apply_ops(applied.ops);
        self.front.note("cancelling the turn (Ctrl-C again quits)");
        let _ = self.conn.client.cancel(&self.conn.session_id).await;
        // Writes waiting for review are refused; the session's terminals die.
        self.reject_reviews("the turn was cancelled").await;
        let session = self.conn.session_id.clone();
        self.conn.services.kill_terminals(&session).await;
        self.show_input_prompt();
        Ok(None)
    }
}
