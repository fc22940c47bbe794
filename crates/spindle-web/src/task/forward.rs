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

use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::features::permission_op;
use super::{QueuedPrompt, SessionTask};
use crate::core::{SessionCore, lock};
use crate::errors::WebError;
use crate::replica::Refused;
use crate::store::Direction;

/// The kind of the note the owner logs when it sends a forwarded `/acp` prompt to the agent:
/// `{"spindle":"forwarded_prompt","command":ID,"request":KEY}` (skipped by the engine feed).
const FORWARDED_PROMPT: &str = "forwarded_prompt";

impl SessionTask {
    /// Sends the queued prompts to the replica that runs the session, through the database
    /// (each under a unique id, taken once by that replica). The answer to an `/acp` prompt
    /// comes back through the log ([`Self::read_forwarded_answers`]).
    pub(super) fn forward_queued(&mut self, refused: &Refused) {
        if !matches!(refused, Refused::Owned(_)) {
            return;
        }
        for queued in std::mem::take(&mut self.queued) {
            let command = self.replica.command_id();
            let (body, answer_to) = match (&queued.remote, &queued.acp_forwarded) {
                (Some((blocks, target)), _) => (
                    json!({ "acpPrompt": blocks, "command": command }),
                    Some(target.clone()),
                ),
                // Taken here as the owner, then the lease went elsewhere: sent on as it came.
                (None, Some((blocks, first))) => {
                    (json!({ "acpPrompt": blocks, "command": first }), None)
                }
                (None, None) => (
                    json!({ "prompt": queued.text, "images": queued.images }),
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
                        let _ = queued.reply.send(Err(WebError::storage(error)));
                        continue;
                    }
                }
            }
            let sent = self
                .store
                .submit_command(&command, self.id, &body.to_string())
                .map_err(WebError::storage);
            if let (Ok(()), Some(target)) = (&sent, answer_to) {
                self.forwarded_acp.insert(command, target);
                self.awaits_log.store(true, Ordering::Relaxed);
            }
            let _ = queued.reply.send(sent);
        }
    }

    /// A cancel while no agent runs here: for the replica that runs the session, if any.
    pub(super) fn forward_cancel(&mut self) -> Result<(), WebError> {
        if self.owner_elsewhere()? {
            let body = json!({ "cancel": true }).to_string();
            self.store
                .submit_command(&self.replica.command_id(), self.id, &body)
                .map_err(WebError::storage)?;
        }
        Ok(())
    }

    /// A permission answer for a question shown here while the agent runs on another replica
    /// (the first answer the owner takes wins, as on one replica).
    pub(super) fn forward_permission(
        &mut self,
        key: &str,
        option_id: Option<String>,
    ) -> Result<(), WebError> {
        let offered = lock(&self.core).permission(key).cloned();
        let Some(op) = offered else {
            return Err(WebError::new(
                axum::http::StatusCode::CONFLICT,
                "this permission question is no longer open",
            ));
        };
        if let Some(option) = &option_id {
            let options = op["options"].as_array().cloned().unwrap_or_default();
            if !options.iter().any(|o| o["optionId"] == option.as_str()) {
                return Err(WebError::bad_request("that option was not offered"));
            }
        }
        if !self.owner_elsewhere()? {
            return Err(WebError::unavailable("no replica runs this session"));
        }
        let body = json!({ "permission": key, "optionId": option_id }).to_string();
        self.store
            .submit_command(&self.replica.command_id(), self.id, &body)
            .map_err(WebError::storage)
    }

    /// Whether another replica holds the session's lease.
    fn owner_elsewhere(&self) -> Result<bool, WebError> {
        let leases = self.store.leases().map_err(WebError::storage)?;
        Ok(leases
            .iter()
            .any(|l| l.session == self.id && l.owner != self.replica.id()))
    }

    /// Takes the commands other replicas queued for this session, when it runs here.
    pub(super) fn take_forwarded(&mut self) {
        if self.lease.is_none() {
            return;
        }
        let bodies = match self.store.take_commands(self.id, self.replica.id()) {
            Ok(bodies) => bodies,
            Err(error) => {
                tracing::warn!(session = self.id, "forwarded commands not read: {error}");
                return;
            }
        };
        for body in bodies {
            let value: Value = serde_json::from_str(&body).unwrap_or_default();
            // The senders were answered when they queued the commands.
            let (reply, _) = tokio::sync::oneshot::channel();
            if let Some(text) = value["prompt"].as_str() {
                let images = serde_json::from_value(value["images"].clone()).unwrap_or_default();
                self.enqueue(QueuedPrompt {
                    text: text.to_owned(),
                    images,
                    remote: None,
                    acp_forwarded: None,
                    reply,
                });
            } else if let (Some(blocks), Some(command)) =
                (value.get("acpPrompt"), value["command"].as_str())
            {
                self.enqueue(QueuedPrompt {
                    text: String::new(),
                    images: Vec::new(),
                    remote: None,
                    acp_forwarded: Some((blocks.clone(), command.to_owned())),
                    reply,
                });
            } else if let Some(key) = value["permission"].as_str() {
                let option = value["optionId"].as_str().map(str::to_owned);
                if let Err(error) = self.answer_permission(key, option) {
                    tracing::info!(
                        session = self.id,
                        "forwarded permission answer: {}",
                        error.message
                    );
                }
            } else if value["cancel"] == true {
                self.cancel();
            } else {
                tracing::warn!(session = self.id, "unknown forwarded command {body}");
            }
        }
    }

    /// Logs which agent request a forwarded `/acp` prompt became, for the replica whose client
    /// waits for its answer.
    pub(super) fn note_forwarded_prompt(&mut self, command: &str, request: &str) {
        let note = json!({ "spindle": FORWARDED_PROMPT, "command": command, "request": request });
        lock(&self.core).record(vec![(Direction::Server, note.to_string())]);
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
            Some(FORWARDED_PROMPT) => {
                let command = note["command"].as_str().unwrap_or_default();
                if let (Some(target), Some(request)) =
                    (self.forwarded_acp.remove(command), note["request"].as_str())
                {
                    self.forwarded_turns.insert(request.to_owned(), target);
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
