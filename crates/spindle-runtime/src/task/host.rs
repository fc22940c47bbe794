//! The agent's requests for files and terminals, served by the session's [`Host`]: each runs in
//! a task of its own (a `terminal/wait_for_exit` may wait as long as the command runs) and its
//! answer comes back to the session task as [`HostDone`], which sends it through the ACP client,
//! so it is logged like every line the client sends. Under the `ask` policy a write waits for
//! the user's decision (`POST .../review`). The host's terminal output and exits are logged as
//! local lines and shown through the engine. Commands only ever come from the agent: nothing here
//! takes one from the page.

use serde_json::value::RawValue;
use spindle_engine::EntryBody;
use spindle_host::{Host, HostConfig, HostEvent, HostReply};
use spindle_protocol::{RequestId, ResponseError};

use super::state::{HostDone, MAX_BATCH, SessionTask, request_key};
use crate::error::SessionError;
use crate::page_ops::PageOp;
use crate::store::Direction;
use crate::sync::lock;

impl SessionTask {
    /// The host configuration of the session: its working directory and additional
    /// directories (the file system's scope), the server's policy.
    pub(super) fn host_config(&self) -> HostConfig {
        let mut config = HostConfig::new(self.root.clone());
        config.additional_roots = self
            .startup
            .additional_directories
            .iter()
            .map(std::path::PathBuf::from)
            .collect();
        config.fs = self.settings.fs;
        config.terminals = self.settings.terminals;
        config
    }

    /// An `fs/*` or `terminal/*` request of the agent: handled in a task of its own.
    pub(super) fn agent_request(
        &mut self,
        request_id: RequestId,
        method: String,
        params: Option<Box<RawValue>>,
    ) {
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        if !Host::handles(&method) {
            let error = ResponseError::method_not_found(
                &method,
                &format!("{method}: not a method this client answers"),
            );
            let _ = agent.client.respond(&request_id, Err(error));
            self.flush_client();
            return;
        }
        let host = agent.host.clone();
        let process = agent.process;
        let done = self.host_done.0.clone();
        tokio::spawn(async move {
            let reply = host.handle(&method, params.as_deref()).await;
            let _ = done.send(HostDone {
                process,
                request_id,
                reply,
            });
        });
    }

    /// A host request finished: answer the agent, or ask the user first.
    pub(super) fn host_done(&mut self, done: HostDone) {
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        if agent.process != done.process {
            // An answer for an agent process that is gone.
            return;
        }
        // The host sent the request's events (the text a write replaces) before it answered:
        // they are logged first, so the engine sees them before the answer, live and at rebuild.
        let mut events = Vec::new();
        while let Ok(event) = agent.host_events.try_recv() {
            events.push((Direction::Local, event.to_local_line()));
        }
        if !events.is_empty() {
            self.record(events);
        }
        match done.reply {
            HostReply::Done(result) => self.respond(&done.request_id, result),
            HostReply::NeedsApproval(write) => {
                let key = request_key(&done.request_id);
                let op = PageOp::WebReview {
                    request_id: key.clone(),
                    session_id: write.session_id.clone(),
                    path: write.display_path.clone(),
                    old_text: write.old_text.clone(),
                    new_text: write.new_text.clone(),
                    tool_call_id: self.open_tool_call(),
                };
                self.reviews.insert(key.clone(), (done.request_id, write));
                lock(&self.core).open_review(key, op);
            }
        }
    }

    /// Answers an agent request through the ACP client (logged like every sent line).
    fn respond(&mut self, id: &RequestId, result: Result<serde_json::Value, ResponseError>) {
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        let result = result.and_then(|value| {
            serde_json::value::to_raw_value(&value)
                .map_err(|e| ResponseError::internal_error(&format!("result: {e}")))
        });
        // Refused only when the agent withdrew the request meanwhile.
        let _ = agent.client.respond(id, result);
        self.flush_client();
    }

    /// The user's decision on a pending write.
    pub(super) fn review(&mut self, key: &str, accept: bool) -> Result<(), SessionError> {
        let Some((id, write)) = self.reviews.remove(key) else {
            return Err(SessionError::Conflict(
                ("this file write is no longer waiting for a decision").into(),
            ));
        };
        let Some(agent) = self.agent.as_ref() else {
            lock(&self.core).close_review(key, "cancelled", Some("the agent exited"));
            return Err(SessionError::Conflict("the agent exited".into()));
        };
        let host = agent.host.clone();
        if accept {
            let result = host.approve(write);
            let failure = result.as_ref().err().map(|e| e.message.clone());
            self.respond(&id, result);
            let mut core = lock(&self.core);
            match &failure {
                None => core.close_review(key, "accept", None),
                Some(message) => core.close_review(key, "error", Some(message)),
            };
            drop(core);
            if let Some(message) = failure {
                return Err(SessionError::Refused(message));
            }
        } else {
            let error = host.reject(&write);
            self.respond(&id, Err(error));
            lock(&self.core).close_review(key, "reject", None);
        }
        Ok(())
    }

    /// Rejects every pending write (the turn was cancelled).
    pub(super) fn cancel_reviews(&mut self, why: &str) {
        let reviews: Vec<_> = self.reviews.drain().collect();
        for (key, (id, write)) in reviews {
            let error = match self.agent.as_ref() {
                Some(agent) => agent.host.reject(&write),
                None => continue,
            };
            self.respond(&id, Err(error));
            lock(&self.core).close_review(&key, "cancelled", Some(why));
        }
    }

    /// Terminal output or an exit: logged as a local line and shown through the engine, with
    /// the events already waiting (one transaction for a burst of output).
    pub(super) fn host_event(&mut self, event: HostEvent) {
        let mut lines = vec![(Direction::Local, event.to_local_line())];
        if let Some(agent) = self.agent.as_mut() {
            while lines.len() < MAX_BATCH {
                match agent.host_events.try_recv() {
                    Ok(event) => lines.push((Direction::Local, event.to_local_line())),
                    Err(_) => break,
                }
            }
        }
        self.record(lines);
    }

    /// The tool call in progress, for a review card to sit in.
    fn open_tool_call(&self) -> Option<String> {
        let core = lock(&self.core);
        let transcript = core.engine.transcript();
        if !transcript.state.turn_open {
            return None;
        }
        transcript
            .entries
            .iter()
            .rev()
            .find_map(|e| match &e.body {
                EntryBody::ToolCall(call) => Some((e, call)),
                _ => None,
            })
            .filter(|(_, call)| {
                !matches!(
                    call.field_str("status").as_deref(),
                    Some("completed" | "failed")
                )
            })
            .map(|(e, _)| e.id.clone())
    }
}
