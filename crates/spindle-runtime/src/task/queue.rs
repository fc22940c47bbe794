//! The task's side of the prompt queue (issue 27; the queue itself is the log's, see
//! `crate::prompt_queue`). The rules, enforced here only:
//!
//! - A prompt that comes while a v1 agent's turn runs is queued (its `add` note is logged and
//!   the sender told `PromptOutcome::Queued`); a v2 agent gets every prompt at once.
//! - A turn that ends with a stop reason other than `cancelled` sends the queue's first item,
//!   one per turn, in order. A cancelled or failed turn, the agent's exit and a restart keep the
//!   queue and send nothing: the user chose to stop, so the queue waits ("held") until the next
//!   turn ends, or "send now" sends an item.
//! - A prompt that comes while no turn runs is sent at once, even with items held: it starts the
//!   turn whose end sends them.
//! - "Send now" moves the item to the head (`front` note) and cancels the running turn; that
//!   turn's end sends it although it was cancelled. With no turn running it is sent at once.
//! - Edits and removals are notes too; an item's text is read from the queue when it is sent.
//!
//! A replica that does not run the session forwards these changes to the one that does, like
//! its prompts (`task/forward.rs`).

use serde_json::{Value, json};

use super::SessionTask;
use super::state::{PromptOutcome, QueueChange, QueuedPrompt, ValueReply};
use crate::error::SessionError;
use crate::handshake::Phase;
use crate::prompt_queue::{self, QueuedItem, Removal};
use crate::store::Direction;
use crate::sync::lock;

impl SessionTask {
    /// Whether a prompt that comes now waits in the queue: a v1 agent's turn runs.
    pub(super) fn queues_prompts(&self) -> bool {
        self.startup.phase == Phase::Ready && self.protocol() < 2 && self.v1_turn_running
    }

    /// Holds `prompt` in the log's queue until the turn ends, and tells its sender so.
    pub(super) fn hold_in_queue(&mut self, prompt: QueuedPrompt) {
        if prompt.queue_item.is_some() {
            // An item being sent met a turn again: it is still the queue's, nothing to add.
            let _ = prompt.reply.send(Ok(PromptOutcome::Sent));
            return;
        }
        let id = new_item_id();
        let (text, blocks, target) = match (prompt.remote, prompt.acp_forwarded) {
            (Some((blocks, target)), _) => (super::first_text(&blocks), Some(blocks), Some(target)),
            (None, Some(blocks)) => (super::first_text(&blocks), Some(blocks), None),
            (None, None) => (prompt.text, None, None),
        };
        let item = QueuedItem {
            id: id.clone(),
            text,
            images: serde_json::to_value(&prompt.images).unwrap_or_else(|_| json!([])),
            // A forwarded `/acp` prompt's sender waits for the note naming its request.
            command: prompt.command.clone().filter(|_| blocks.is_some()),
            blocks,
            author: prompt.author.clone(),
        };
        let mut batch = vec![(Direction::Server, prompt_queue::add_note(&item))];
        if let Some(command) = &prompt.command {
            // The forwarded command is dealt with once its item is in the log.
            self.note_command(command, json!({ "queued": id }));
            batch.extend(self.take_command_notes());
        }
        self.record(batch);
        if let Some(target) = target {
            self.queued_targets.insert(id.clone(), target);
        }
        let view = lock(&self.core).session_facts().queue.view_of(&id);
        let _ = prompt.reply.send(match view {
            Some(view) => Ok(PromptOutcome::Queued(view)),
            None => Err(SessionError::Internal(
                "the queued prompt is not in the queue it was added to".into(),
            )),
        });
    }

    /// A prompt turn ended (`cancelled`: stopped by the user, or refused): sends the queue's
    /// first item when the rules say so (see the module docs).
    pub(super) fn queue_turn_ended(&mut self, cancelled: bool) {
        let send_next = self.send_next.take();
        if cancelled && send_next.is_none() {
            return;
        }
        self.send_first_queued();
    }

    /// Sends the queue's first item (through the agent's startup when it does not run here).
    fn send_first_queued(&mut self) {
        let first = lock(&self.core)
            .session_facts()
            .queue
            .items()
            .first()
            .map(|item| item.id.clone());
        let Some(id) = first else {
            return;
        };
        let (reply, _) = tokio::sync::oneshot::channel();
        self.queued.push_front(QueuedPrompt {
            text: String::new(),
            images: Vec::new(),
            remote: None,
            acp_forwarded: None,
            command: None,
            queue_item: Some(id),
            // `take_queue_item` reads it from the item.
            author: None,
            reply,
        });
        match self.startup.phase {
            Phase::Ready => self.flush_queued(),
            Phase::NoAgent => self.start_agent(),
            Phase::Initializing | Phase::Opening | Phase::NeedsAuth => {}
        }
    }

    /// Fills a queue item's prompt from the queue as it is now, and adds its `sent` note to
    /// the batch of its request. `None` when the item left the queue meanwhile.
    pub(super) fn take_queue_item(&mut self, prompt: &mut QueuedPrompt) -> Option<()> {
        let Some(id) = prompt.queue_item.clone() else {
            return Some(());
        };
        let item = lock(&self.core).session_facts().queue.get(&id).cloned()?;
        prompt.text.clone_from(&item.text);
        prompt.images = serde_json::from_value(item.images.clone()).unwrap_or_default();
        prompt.command.clone_from(&item.command);
        prompt.author.clone_from(&item.author);
        match (item.blocks.clone(), self.queued_targets.remove(&id)) {
            (Some(blocks), Some(target)) => prompt.remote = Some((blocks, target)),
            (Some(blocks), None) => prompt.acp_forwarded = Some(blocks),
            (None, _) => {}
        }
        self.queue_notes
            .push(prompt_queue::remove_note(&item, Removal::Sent));
        Some(())
    }

    /// A queue item the server refused as it was to be sent (a mention outside the working
    /// directory): it leaves the queue unsent, and, as nobody waits for its answer, a banner
    /// says why.
    pub(super) fn queued_prompt_refused(&mut self, id: &str, error: &SessionError) {
        // Its `sent` note, added by `take_queue_item`, is the last one.
        self.queue_notes.pop();
        let item = lock(&self.core).session_facts().queue.get(id).cloned();
        if let Some(item) = item {
            let note = prompt_queue::remove_note(&item, Removal::Removed);
            self.record(vec![(Direction::Server, note)]);
        }
        let why = error.message();
        self.banner("error", format!("A queued prompt was not sent: {why}"));
    }

    /// The queue notes waiting for the next batch, as its lines.
    pub(super) fn take_queue_notes(&mut self) -> Vec<(Direction, String)> {
        self.queue_notes
            .drain(..)
            .map(|note| (Direction::Server, note))
            .collect()
    }

    /// Edits, removes or sends now a queued prompt; for the replica that runs the session when
    /// another one does.
    pub(super) fn queue_change(&mut self, change: QueueChange, reply: ValueReply) {
        let _ = reply.send(self.change_queue(change));
    }

    fn change_queue(&mut self, change: QueueChange) -> Result<Value, SessionError> {
        let id = match &change {
            QueueChange::Edit { id, .. }
            | QueueChange::Remove { id }
            | QueueChange::SendNow { id } => id.clone(),
        };
        let item = lock(&self.core).session_facts().queue.get(&id).cloned();
        let Some(item) = item else {
            return Err(SessionError::NotFound(format!(
                "no queued prompt {id} (it was sent or removed)"
            )));
        };
        if let QueueChange::Edit { text, .. } = &change
            && text.trim().is_empty()
        {
            return Err(SessionError::invalid_params(
                "an empty prompt: remove the item instead",
            ));
        }
        if self.agent.is_none() && self.owner_elsewhere()? {
            self.forward_queue_change(&change)?;
            return Ok(json!({ "forwarded": true }));
        }
        if lock(&self.core).backlog_full() {
            return Err(SessionError::StorageFull);
        }
        let what = match &change {
            QueueChange::Edit { .. } => "queue_edit",
            QueueChange::Remove { .. } => "queue_remove",
            QueueChange::SendNow { .. } => "queue_send_now",
        };
        self.note_action(what, json!({ "id": id }));
        match change {
            QueueChange::Edit { text, .. } => {
                self.record(vec![(
                    Direction::Server,
                    prompt_queue::edit_note(&id, &text),
                )]);
                let view = lock(&self.core).session_facts().queue.view_of(&id);
                Ok(json!({ "item": view }))
            }
            QueueChange::Remove { .. } => {
                let note = prompt_queue::remove_note(&item, Removal::Removed);
                self.record(vec![(Direction::Server, note)]);
                if let Some(target) = self.queued_targets.remove(&id) {
                    // The `/acp` client's prompt ends unsent, as a cancelled turn does.
                    let answer = Ok(json!({ "stopReason": spindle_wire::stop_reasons::CANCELLED }));
                    lock(&self.core)
                        .acp
                        .respond(&target.connection, &target.id, answer);
                }
                Ok(json!({ "removed": id }))
            }
            QueueChange::SendNow { .. } => {
                let first = lock(&self.core).session_facts().queue.items()[0].id == id;
                if !first {
                    self.record(vec![(Direction::Server, prompt_queue::front_note(&id))]);
                }
                let cancelling = self.v1_turn_running;
                if cancelling {
                    self.send_next = Some(id.clone());
                    self.cancel();
                } else {
                    self.send_first_queued();
                }
                Ok(json!({ "sending": id, "cancelledTurn": cancelling }))
            }
        }
    }

    /// A queue change for the replica that runs the session (through the database, taken once
    /// there like a forwarded prompt).
    fn forward_queue_change(&mut self, change: &QueueChange) -> Result<(), SessionError> {
        let body = match change {
            QueueChange::Edit { id, text } => json!({ "queueEdit": id, "text": text }),
            QueueChange::Remove { id } => json!({ "queueRemove": id }),
            QueueChange::SendNow { id } => json!({ "queueSendNow": id }),
        };
        let body = self.authored(body);
        self.store
            .submit_command(&self.replica.command_id(), self.id, &body.to_string())
            .map_err(SessionError::storage)
    }

    /// Runs a queue change another replica forwarded (`value`: the command's body); `false`
    /// when the body is no queue change.
    pub(super) fn run_forwarded_queue_change(&mut self, command: &str, value: &Value) -> bool {
        let text = value["text"].as_str().unwrap_or_default().to_owned();
        let change = if let Some(id) = value["queueEdit"].as_str() {
            QueueChange::Edit {
                id: id.to_owned(),
                text,
            }
        } else if let Some(id) = value["queueRemove"].as_str() {
            QueueChange::Remove { id: id.to_owned() }
        } else if let Some(id) = value["queueSendNow"].as_str() {
            QueueChange::SendNow { id: id.to_owned() }
        } else {
            return false;
        };
        self.note_command(command, json!({}));
        if let Err(error) = self.change_queue(change) {
            tracing::info!(
                session = self.id,
                "forwarded queue change: {}",
                error.message()
            );
        }
        true
    }
}

/// A new item id: unique across this process's sessions and, by its start time, across
/// replicas and restarts.
fn new_item_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    static STARTED: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    let started = STARTED.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    });
    format!("q-{started:x}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
