//! Prompts and the prompt queue (issue 27): a prompt sent while a v1 agent's turn runs waits in
//! the session's queue (`crate::prompt_queue`, the task's rules in `task/queue.rs`); the queue is
//! listed from the log's view, which every replica has, and changed by the session's task (on the
//! replica that runs the session, forwarded there from the others).

use serde_json::Value;
use tokio::sync::oneshot;

use super::LiveSession;
use crate::error::SessionError;
use crate::sync::lock;
use crate::task::{Command, PromptImage, PromptOutcome, QueueChange, RemoteTarget};

impl LiveSession {
    async fn call_prompt(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<PromptOutcome, SessionError>>) -> Command,
    ) -> Result<PromptOutcome, SessionError> {
        self.ask(make).await
    }

    /// Sends a prompt (starting the agent first if needed), or queues it while a v1 agent's
    /// turn runs. Returns once it was written, queued or forwarded.
    pub async fn prompt(
        &self,
        text: String,
        images: Vec<PromptImage>,
    ) -> Result<PromptOutcome, SessionError> {
        self.call_prompt(|reply| Command::Prompt {
            text,
            images,
            remote: None,
            reply,
        })
        .await
    }

    /// Sends an `/acp` client's prompt (or queues it, as [`Self::prompt`]); the agent's answer
    /// goes to that client's stream when its own turn ends.
    pub async fn remote_prompt(
        &self,
        blocks: Value,
        target: RemoteTarget,
    ) -> Result<PromptOutcome, SessionError> {
        self.call_prompt(|reply| Command::RemotePrompt {
            blocks,
            target,
            reply,
        })
        .await
    }

    /// The queued prompts, first to be sent first: `[{id, text, position, images, acp}]`.
    pub fn queue(&self) -> Vec<Value> {
        lock(&self.core).session_facts().queue.views()
    }

    /// Changes a queued prompt's text; answers `{"item": ...}` (or `{"forwarded": true}` on a
    /// replica that does not run the session).
    pub async fn edit_queued(&self, id: &str, text: String) -> Result<Value, SessionError> {
        let id = checked_id(id)?;
        self.queue_change(QueueChange::Edit { id, text }).await
    }

    /// Removes a queued prompt unsent (an `/acp` client's prompt is answered `cancelled`).
    pub async fn remove_queued(&self, id: &str) -> Result<Value, SessionError> {
        let id = checked_id(id)?;
        self.queue_change(QueueChange::Remove { id }).await
    }

    /// Cancels the running turn and sends the queued prompt `id` next (at once when no turn
    /// runs).
    pub async fn send_queued_now(&self, id: &str) -> Result<Value, SessionError> {
        let id = checked_id(id)?;
        self.queue_change(QueueChange::SendNow { id }).await
    }

    async fn queue_change(&self, change: QueueChange) -> Result<Value, SessionError> {
        self.ask(|reply| Command::Queue { change, reply }).await
    }
}

fn checked_id(id: &str) -> Result<String, SessionError> {
    if crate::prompt_queue::valid_id(id) {
        Ok(id.to_owned())
    } else {
        Err(SessionError::NotFound(format!(
            "no queued prompt {:?}",
            id.chars().take(64).collect::<String>()
        )))
    }
}
