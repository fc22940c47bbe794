//! Commands for the replica that runs the session (see [`crate::replica`]): a replica that does
//! not run a session sends what it receives for it (prompts with their images, `/acp` prompts,
//! cancels, permission answers) through the database's `commands` table, each under a unique id
//! and taken once by the owner ([`spindle_store::Store::take_commands`]).
//!
//! An `/acp` prompt's answer belongs to the client on the sending replica: the owner logs a
//! note naming the command and the agent request it became (`forwarded_prompt`), and the sender,
//! which follows the log, answers its client when it reads the agent's answer to that request
//! (or an error when a logged note ends the turn first: the agent exited, or its replica died).
//!
//! A permission question is shown on every replica: a follower opens the questions the log
//! asked and has not answered yet, and closes them once the log answers them.
//!
//! Exactly once, with respect to the log: the owner logs a note naming each command it took,
//! `{"spindle":"command","command":ID,...}`, in the same batch as the lines the command led to
//! (the prompt request, with `"request":KEY`; the permission answer; `session/cancel`), or alone
//! with `"error"` when it was refused. A command is taken under the owner's lease epoch, and
//! marked finished in the database once its note is committed and the turn is over. A replica
//! that takes a session over first logs a note of its own (`commands_recovered`): once that is
//! committed no earlier owner can log anything more (its next line would take a `seq` already
//! used). Then it looks in the log for the notes of the commands earlier owners took and did not
//! finish: those with a note are finished, the others taken again and run, once. A permission
//! answer taken again finds its question closed (the agent that asked is gone) and is refused;
//! a cancel taken again cancels only the prompts taken again before it.
//!
//! Left open: an earlier owner that is slow rather than dead (paused past its lease time) may
//! still write a prompt it took to its agent's stdin; that line's commit fails (its `seq` is
//! taken), so it is never logged, and the agent stops when the renewal finds the lease gone.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use spindle_store::TakenCommand;
use tokio::sync::oneshot::error::TryRecvError;

use super::features::permission_op;
use super::state::{PromptOutcome, PromptReply, QueuedPrompt, SessionTask};
use crate::core::SessionCore;
use crate::error::SessionError;
use crate::replica::Refused;
use crate::store::Direction;
use crate::sync::lock;

/// The kind of the note naming a forwarded command the owner took (skipped by the engine feed).
const COMMAND_NOTE: &str = "command";

/// The note an earlier build logged for a forwarded `/acp` prompt:
/// `{"spindle":"forwarded_prompt","command":ID,"request":KEY}`.
const FORWARDED_PROMPT: &str = "forwarded_prompt";

/// The note a new owner logs before it looks for commands earlier owners took.
const COMMANDS_RECOVERED: &str = "commands_recovered";

/// The command a server note names as taken and dealt with, if it is such a note.
fn command_of_note(line: &str) -> Option<String> {
    let note: Value = serde_json::from_str(line).ok()?;
    match note["spindle"].as_str()? {
        COMMAND_NOTE | FORWARDED_PROMPT => note["command"].as_str().map(str::to_owned),
        _ => None,
    }
}

impl SessionTask {
    /// Sends the queued prompts to the replica that runs the session, through the database
    /// (each under a unique id, taken once by that replica). The answer to an `/acp` prompt
    /// comes back through the log ([`Self::read_forwarded_answers`]).
    pub(super) fn forward_queued(&mut self, refused: &Refused) {
        if !matches!(refused, Refused::Owned(_)) {
            return;
        }
        for queued in std::mem::take(&mut self.queued) {
            if queued.command.is_some() || queued.queue_item.is_some() {
                // Taken here under a lease that ended: left unfinished in the database, for
                // the replica that runs the session now. A queue item stays in the log's queue,
                // which that replica sends from.
                continue;
            }
            let command = self.replica.command_id();
            let (body, answer_to) = match &queued.remote {
                Some((blocks, target)) => (
                    json!({ "acpPrompt": blocks, "command": command }),
                    Some(target.clone()),
                ),
                None => (
                    json!({ "prompt": queued.text, "images": queued.images,
                            "author": queued.author }),
                    None,
                ),
            };
            if answer_to.is_some()
                && self.forwarded_acp.is_empty()
                && self.forwarded_turns.is_empty()
            {
                // The owner's note comes after the command, so after this line of the log.
                match self.store.last_seq(self.id) {
                    Ok(seq) => self.forward_cursor = seq,
                    Err(error) => {
                        let _ = queued.reply.send(Err(SessionError::storage(error)));
                        continue;
                    }
                }
            }
            let sent = self
                .store
                .submit_command(&command, self.id, &body.to_string())
                .map_err(SessionError::storage);
            if let (Ok(()), Some(target)) = (&sent, answer_to) {
                self.forwarded_acp.insert(command, target);
                self.awaits_log.store(true, Ordering::Relaxed);
            }
            let _ = queued.reply.send(sent.map(|()| PromptOutcome::Forwarded));
        }
    }

    /// A cancel while no agent runs here: for the replica that runs the session, if any.
    pub(super) fn forward_cancel(&mut self) -> Result<(), SessionError> {
        if self.owner_elsewhere()? {
            let body = self.authored(json!({ "cancel": true })).to_string();
            self.store
                .submit_command(&self.replica.command_id(), self.id, &body)
                .map_err(SessionError::storage)?;
        }
        Ok(())
    }

    /// A permission answer for a question shown here while the agent runs on another replica
    /// (the first answer the owner takes wins, as on one replica).
    pub(super) fn forward_permission(
        &mut self,
        key: &str,
        option_id: Option<String>,
    ) -> Result<(), SessionError> {
        let offered = lock(&self.core).permission(key).cloned();
        let Some(op) = offered else {
            return Err(SessionError::Conflict(
                ("this permission question is no longer open").into(),
            ));
        };
        if let Some(option) = &option_id {
            let options = op["options"].as_array().cloned().unwrap_or_default();
            if !options.iter().any(|o| o["optionId"] == option.as_str()) {
                return Err(SessionError::invalid_params("that option was not offered"));
            }
        }
        if !self.owner_elsewhere()? {
            return Err(SessionError::unavailable("no replica runs this session"));
        }
        let body = self
            .authored(json!({ "permission": key, "optionId": option_id }))
            .to_string();
        self.store
            .submit_command(&self.replica.command_id(), self.id, &body)
            .map_err(SessionError::storage)
    }

    /// Whether another replica holds the session's lease.
    pub(super) fn owner_elsewhere(&self) -> Result<bool, SessionError> {
        let leases = self.store.leases().map_err(SessionError::storage)?;
        Ok(leases
            .iter()
            .any(|l| l.session == self.id && l.owner != self.replica.id()))
    }

    /// Takes the commands other replicas queued for this session, when it runs here: first,
    /// once per lease, the ones earlier owners took and may not have logged.
    pub(super) fn take_forwarded(&mut self) {
        let Some(hold) = &self.lease else {
            return;
        };
        let epoch = hold.epoch;
        let mut taken: Vec<(TakenCommand, bool)> = Vec::new();
        if !hold.commands_recovered {
            match self.recover_commands(epoch) {
                Ok(Some(again)) => {
                    if let Some(hold) = self.lease.as_mut() {
                        hold.commands_recovered = true;
                    }
                    taken.extend(again.into_iter().map(|c| (c, true)));
                }
                // Newer commands wait until the older ones were looked for.
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(session = self.id, "commands of earlier owners: {error}");
                    return;
                }
            }
        }
        match self.store.take_commands(self.id, self.replica.id(), epoch) {
            Ok(new) => taken.extend(new.into_iter().map(|c| (c, false))),
            Err(error) => {
                tracing::warn!(session = self.id, "forwarded commands not read: {error}");
            }
        }
        for (command, again) in taken {
            self.run_command(command, again);
        }
    }

    /// The commands earlier holders of the lease took and did not finish, whose notes are not
    /// in the log: taken again under `epoch`. `None` while this replica's own note before the
    /// search cannot be committed (the search waits: an earlier owner could still log).
    fn recover_commands(
        &mut self,
        epoch: i64,
    ) -> Result<Option<Vec<TakenCommand>>, crate::store::StoreError> {
        let me = self.replica.id().to_owned();
        let unfinished: Vec<TakenCommand> = self
            .store
            .unfinished_commands(self.id)?
            .into_iter()
            .filter(|c| !(c.taken_by == me && c.epoch == epoch))
            .collect();
        if unfinished.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let ids: Vec<&str> = unfinished.iter().map(|c| c.id.as_str()).collect();
        let note = json!({ "spindle": COMMANDS_RECOVERED, "commands": ids }).to_string();
        {
            let mut core = lock(&self.core);
            core.record(vec![(Direction::Server, note)]);
            if core.has_backlog() {
                return Ok(None);
            }
        }
        let after = unfinished.iter().map(|c| c.after_seq).min().unwrap_or(0);
        let logged: HashSet<String> = self
            .store
            .server_notes_after(self.id, after)?
            .iter()
            .filter_map(|line| command_of_note(&line.line))
            .collect();
        let (done, open): (Vec<String>, Vec<String>) = unfinished
            .into_iter()
            .map(|c| c.id)
            .partition(|id| logged.contains(id));
        if !done.is_empty() {
            self.store.finish_commands(self.id, &done)?;
        }
        if open.is_empty() {
            return Ok(Some(Vec::new()));
        }
        tracing::info!(
            session = self.id,
            commands = open.len(),
            "taking again commands an earlier owner took and never logged"
        );
        self.store
            .retake_commands(self.id, &me, epoch, &open)
            .map(Some)
    }

    /// Runs one forwarded command (`again`: taken again from an earlier owner).
    fn run_command(&mut self, command: TakenCommand, again: bool) {
        let value: Value = serde_json::from_str(&command.body).unwrap_or_default();
        let id = command.id;
        // Who sent it on the other replica: noted here as if they acted here.
        let author = value["author"].as_str().map(str::to_owned);
        let outer = std::mem::replace(&mut self.acting, author.clone());
        self.run_command_as(id, value, again);
        self.acting = outer;
    }

    fn run_command_as(&mut self, id: String, value: Value, again: bool) {
        let author = self.acting.clone();
        if let Some(text) = value["prompt"].as_str() {
            let images = serde_json::from_value(value["images"].clone()).unwrap_or_default();
            let reply = self.command_reply(&id);
            self.enqueue(QueuedPrompt {
                text: text.to_owned(),
                images,
                remote: None,
                acp_forwarded: None,
                command: Some(id),
                queue_item: None,
                author: author.clone(),
                reply,
            });
        } else if let Some(blocks) = value.get("acpPrompt") {
            let reply = self.command_reply(&id);
            self.enqueue(QueuedPrompt {
                text: String::new(),
                images: Vec::new(),
                remote: None,
                acp_forwarded: Some(blocks.clone()),
                command: Some(id),
                queue_item: None,
                author: author.clone(),
                reply,
            });
        } else if let Some(key) = value["permission"].as_str() {
            let option = value["optionId"].as_str().map(str::to_owned);
            // Logged with the answer (a question of an agent that is gone is closed here).
            self.note_command(&id, json!({}));
            if let Err(error) = self.answer_permission(key, option) {
                tracing::info!(
                    session = self.id,
                    "forwarded permission answer: {}",
                    error.message()
                );
                self.refuse_pending(&id, &error.message());
            }
        } else if self.run_forwarded_queue_change(&id, &value) {
        } else if value["cancel"] == true {
            self.note_command(&id, json!({}));
            if again {
                // The turn it was meant for was ended by the takeover: it cancels the
                // prompts taken again before it, which never reached an agent.
                let (cancelled, kept) = std::mem::take(&mut self.queued)
                    .into_iter()
                    .partition(|q| q.command.is_some());
                self.queued = kept;
                for queued in cancelled {
                    let error = SessionError::unavailable("cancelled before it reached the agent");
                    let _ = queued.reply.send(Err(error));
                }
            } else {
                self.cancel();
            }
        } else {
            tracing::warn!(session = self.id, "unknown forwarded command {}", value);
            self.note_command(&id, json!({ "error": "unknown command" }));
        }
    }

    /// The reply of a forwarded prompt: its sender was answered when it queued the command;
    /// the outcome is logged ([`Self::settle_commands`]).
    fn command_reply(&mut self, id: &str) -> PromptReply {
        let (reply, outcome) = tokio::sync::oneshot::channel();
        self.command_outcomes.push((id.to_owned(), outcome));
        reply
    }

    /// Adds the note of command `id` (with `fields`) to the next batch logged.
    pub(super) fn note_command(&mut self, id: &str, fields: Value) {
        let mut note = json!({ "spindle": COMMAND_NOTE, "command": id });
        if let (Some(note), Value::Object(fields)) = (note.as_object_mut(), fields) {
            note.extend(fields);
        }
        self.command_notes.push((id.to_owned(), note.to_string()));
    }

    /// The note of `id`, not logged yet, says the command was refused.
    fn refuse_pending(&mut self, id: &str, why: &str) {
        let error = json!({ "spindle": COMMAND_NOTE, "command": id, "error": why }).to_string();
        if let Some(pending) = self.command_notes.iter_mut().find(|(c, _)| c == id) {
            pending.1 = error;
        }
    }

    /// The notes waiting for the next batch, as its lines; their commands count as noted.
    pub(super) fn take_command_notes(&mut self) -> Vec<(Direction, String)> {
        let mut lines = Vec::with_capacity(self.command_notes.len());
        for (id, note) in self.command_notes.drain(..) {
            self.noted_commands.push(id);
            lines.push((Direction::Server, note));
        }
        lines
    }

    /// After each input of the task: logs the refusals of forwarded prompts and the notes no
    /// agent line took along, and marks the noted commands finished once their notes are
    /// committed and no turn is open (until then a takeover looks for them in the log).
    pub(super) fn settle_commands(&mut self) {
        if self.lease.is_none() {
            // Nothing is written without the lease: the next holder finds these commands.
            self.command_notes.clear();
            self.command_outcomes.clear();
            return;
        }
        let mut index = 0;
        while index < self.command_outcomes.len() {
            let outcome = match self.command_outcomes[index].1.try_recv() {
                Err(TryRecvError::Empty) => {
                    index += 1;
                    continue;
                }
                outcome => outcome,
            };
            let (id, _) = self.command_outcomes.remove(index);
            // Sent: noted with its request line. Dropped unanswered: left for the next holder.
            if let Ok(Err(error)) = outcome
                && !self.noted_commands.contains(&id)
                && !self.command_notes.iter().any(|(c, _)| *c == id)
            {
                self.note_command(&id, json!({ "error": error.message() }));
            }
        }
        if !self.command_notes.is_empty() {
            let notes = self.take_command_notes();
            lock(&self.core).record(notes);
        }
        if !self.noted_commands.is_empty() {
            let settled = {
                let core = lock(&self.core);
                !core.has_backlog() && !core.engine.transcript().state.turn_open
            };
            if settled {
                self.finish_noted();
            }
        }
    }

    /// Marks the noted commands finished (their notes are committed).
    pub(super) fn finish_noted(&mut self) {
        if self.noted_commands.is_empty() || lock(&self.core).has_backlog() {
            return;
        }
        let ids = std::mem::take(&mut self.noted_commands);
        if let Err(error) = self.store.finish_commands(self.id, &ids) {
            // The next holder of the lease finds their notes in the log.
            tracing::warn!(session = self.id, "commands not marked finished: {error}");
        }
    }

    /// Reads the log past the last line read for the answers to `/acp` prompts this replica
    /// forwarded, and answers their clients.
    pub(super) fn read_forwarded_answers(&mut self) {
        if self.forwarded_acp.is_empty() && self.forwarded_turns.is_empty() {
            self.awaits_log.store(false, Ordering::Relaxed);
            return;
        }
        let lines = match self.store.lines_after(self.id, self.forward_cursor) {
            Ok((lines, _)) => lines,
            Err(error) => {
                // The next notice reads again from the same line.
                tracing::warn!(session = self.id, "forwarded answers not read: {error}");
                return;
            }
        };
        for line in lines {
            self.forward_cursor = line.seq;
            match line.direction {
                Direction::Server => self.forwarded_note(&line.line),
                // Updates are most of the log and never an answer.
                Direction::Agent
                    if !self.forwarded_turns.is_empty()
                        && !line.line.contains("\"session/update\"") =>
                {
                    self.forwarded_answer(&line.line);
                }
                _ => {}
            }
        }
        if self.forwarded_acp.is_empty() && self.forwarded_turns.is_empty() {
            self.awaits_log.store(false, Ordering::Relaxed);
        }
    }

    fn forwarded_note(&mut self, line: &str) {
        let Ok(note) = serde_json::from_str::<Value>(line) else {
            return;
        };
        match note["spindle"].as_str() {
            Some(COMMAND_NOTE | FORWARDED_PROMPT) => {
                let command = note["command"].as_str().unwrap_or_default();
                let Some(target) = self.forwarded_acp.remove(command) else {
                    return;
                };
                if let Some(request) = note["request"].as_str() {
                    self.forwarded_turns.insert(request.to_owned(), target);
                } else if note.get("queued").is_some() {
                    // Queued behind a turn: a later note names the request it becomes.
                    self.forwarded_acp.insert(command.to_owned(), target);
                } else {
                    // Refused by the owner (the agent could not take it).
                    let message = note["error"].as_str().unwrap_or("the prompt was refused");
                    let error = json!({ "code": -32603, "message": message });
                    lock(&self.core)
                        .acp
                        .respond(&target.connection, &target.id, Err(error));
                }
            }
            // A queued `/acp` prompt removed unsent ends as a cancelled turn does.
            Some(crate::prompt_queue::QUEUE_NOTE) if note["why"] == "removed" => {
                let command = note["command"].as_str().unwrap_or_default();
                if let Some(target) = self.forwarded_acp.remove(command) {
                    let answer = Ok(json!({ "stopReason": spindle_wire::stop_reasons::CANCELLED }));
                    lock(&self.core)
                        .acp
                        .respond(&target.connection, &target.id, answer);
                }
            }
            // The turn ended without an answer (the agent exited, or its replica died).
            Some("agent_exited") => {
                let message = note["message"].as_str().unwrap_or("the agent exited");
                let error = json!({ "code": -32603, "message": message });
                let mut core = lock(&self.core);
                for (_, target) in self.forwarded_turns.drain() {
                    core.acp
                        .respond(&target.connection, &target.id, Err(error.clone()));
                }
            }
            _ => {}
        }
    }

    fn forwarded_answer(&mut self, line: &str) {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return;
        };
        if message.get("method").is_some() {
            return;
        }
        let Some(id) = message.get("id") else {
            return;
        };
        let Some(target) = self.forwarded_turns.remove(&id.to_string()) else {
            return;
        };
        let answer = match (message.get("result"), message.get("error")) {
            (Some(result), _) => Ok(result.clone()),
            (None, Some(error)) => Err(error.clone()),
            (None, None) => Ok(Value::Null),
        };
        lock(&self.core)
            .acp
            .respond(&target.connection, &target.id, answer);
    }

    /// The `/acp` prompts this replica forwarded whose answers it will not see (this replica
    /// stops): their clients are told.
    pub(super) fn fail_forwarded(&mut self, why: &str) {
        let error = json!({ "code": -32603, "message": why });
        let mut core = lock(&self.core);
        for (_, target) in self
            .forwarded_acp
            .drain()
            .chain(self.forwarded_turns.drain())
        {
            core.acp
                .respond(&target.connection, &target.id, Err(error.clone()));
        }
    }
}

/// On a replica that does not run the session, after it applied lines logged elsewhere: shows
/// the permission questions the log asked and has not answered, and closes the ones it answered
/// (or all of them once no turn is open: the agent that asked is gone).
pub(crate) fn show_followed_permissions(core: &mut SessionCore) {
    let turn_open = core.engine.transcript().state.turn_open;
    let asked: Vec<(String, Value)> = if turn_open {
        core.acp
            .unanswered_permissions()
            .map(|(key, params)| (key.clone(), params.clone()))
            .collect()
    } else {
        Vec::new()
    };
    for key in core.open_permission_keys() {
        if !asked.iter().any(|(k, _)| *k == key) {
            let outcome = answered_option(core, &key).unwrap_or_else(|| "closed".to_owned());
            core.close_permission(&key, &outcome);
        }
    }
    for (key, params) in asked {
        if core.permission(&key).is_none() {
            let op = permission_op(&key, &params);
            core.open_permission(key, op);
        }
    }
}

/// The option the log's answer to the permission request `key` chose, from the engine's record
/// of it on the transcript (the newest entries first: the question is recent).
fn answered_option(core: &SessionCore, key: &str) -> Option<String> {
    let request: Value = serde_json::from_str(key).ok()?;
    core.engine
        .transcript()
        .entries
        .iter()
        .rev()
        .take(256)
        .find_map(|entry| {
            let record = match &entry.body {
                spindle_engine::EntryBody::ToolCall(tool) => tool.permission.as_deref()?,
                spindle_engine::EntryBody::Raw(raw) => raw.get("permission")?,
                _ => return None,
            };
            (record["requestId"] == request)
                .then(|| {
                    record
                        .pointer("/outcome/optionId")?
                        .as_str()
                        .map(str::to_owned)
                })
                .flatten()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notes_naming_a_dealt_with_command_are_told_apart_from_others() {
        let note = |v: Value| command_of_note(&v.to_string());
        assert_eq!(
            note(json!({ "spindle": COMMAND_NOTE, "command": "b/1/2", "request": "7" })),
            Some("b/1/2".to_owned())
        );
        assert_eq!(
            note(json!({ "spindle": COMMAND_NOTE, "command": "x", "error": "refused" })),
            Some("x".to_owned())
        );
        // An earlier build's note of a forwarded /acp prompt counts too.
        assert_eq!(
            note(json!({ "spindle": FORWARDED_PROMPT, "command": "y", "request": "1" })),
            Some("y".to_owned())
        );
        // The new owner's own search note names commands it has not dealt with yet.
        assert_eq!(
            note(json!({ "spindle": COMMANDS_RECOVERED, "commands": ["z"] })),
            None
        );
        assert_eq!(
            note(json!({ "spindle": "agent_exited", "command": "w" })),
            None
        );
        assert_eq!(command_of_note("not json"), None);
    }
}
