//! The agent's `elicitation/create` in a served session: shown to the page (a `web_elicitation`
//! op, part of every snapshot while open) and sent to the session's `/acp` controllers (as
//! `elicitation/create` with an id of Spindle's, `$/cancel_request` once settled), answered by
//! the first controller that answers
//! (checked against the form before it is sent), closed when the agent withdraws it, when it
//! reports a URL step complete (`elicitation/complete`), or when the turn is cancelled.

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use spindle_host::{Elicitation, ElicitationAnswer, ElicitationKind};
use spindle_protocol::RequestId;
use spindle_wire::client_methods::elicitation::{ACCEPT, CANCEL, DECLINE, ELICITATION_ID};

use super::state::{SessionTask, request_key};
use crate::error::SessionError;
use crate::page_ops::PageOp;
use crate::sync::lock;

fn params_value(params: Option<Box<RawValue>>) -> Value {
    params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null)
}

impl SessionTask {
    pub(super) fn elicitation_requested(&mut self, id: RequestId, params: Option<Box<RawValue>>) {
        let params = params_value(params);
        let elicitation = Elicitation::of_params(&params);
        let key = request_key(&id);
        let op = PageOp::WebElicitation {
            key: key.clone(),
            elicitation: elicitation.view_json(),
        }
        .to_value();
        self.elicitations.insert(key.clone(), (id, elicitation));
        lock(&self.core).open_elicitation(key, op, &params);
    }

    /// A controller's answer; the first one wins (a later one finds the question closed).
    pub(super) fn answer_elicitation(
        &mut self,
        key: &str,
        action: &str,
        content: Option<Value>,
    ) -> Result<(), SessionError> {
        let Some((_, elicitation)) = self.elicitations.get(key) else {
            return Err(SessionError::Conflict(
                "this question is no longer open".into(),
            ));
        };
        if self.agent.is_none() {
            return Err(SessionError::Conflict(
                "the agent that asked runs on another replica".into(),
            ));
        }
        let answer = match action {
            ACCEPT => match &elicitation.kind {
                ElicitationKind::Form(form) => {
                    let content = match content {
                        None | Some(Value::Null) => Map::new(),
                        Some(Value::Object(content)) => content,
                        Some(_) => {
                            return Err(SessionError::invalid_params("content must be an object"));
                        }
                    };
                    let checked = form
                        .values_from_json(&content)
                        .and_then(|values| form.accept_content(&values));
                    match checked {
                        Ok(content) => ElicitationAnswer::Accept(content),
                        Err(errors) => {
                            let list: Vec<String> = errors
                                .iter()
                                .map(|e| format!("{}: {}", e.name, e.message))
                                .collect();
                            return Err(SessionError::invalid_params(list.join("; ")));
                        }
                    }
                }
                ElicitationKind::Url(_) => ElicitationAnswer::Accept(Map::new()),
                ElicitationKind::Unsupported { .. } => {
                    return Err(SessionError::invalid_params(
                        "this question can only be declined or cancelled",
                    ));
                }
            },
            DECLINE => ElicitationAnswer::Decline,
            CANCEL => ElicitationAnswer::Cancel,
            other => {
                return Err(SessionError::invalid_params(format!(
                    "unknown action {other:?}: accept, decline or cancel"
                )));
            }
        };
        self.send_elicitation_answer(key, &answer, action);
        Ok(())
    }

    fn send_elicitation_answer(&mut self, key: &str, answer: &ElicitationAnswer, shown: &str) {
        let Some((id, _)) = self.elicitations.remove(key) else {
            return;
        };
        if let Some(agent) = self.agent.as_mut()
            && let Ok(raw) = serde_json::value::to_raw_value(&answer.to_result())
        {
            // Refused only when the agent withdrew the question meanwhile.
            let _ = agent.client.respond(&id, Ok(raw));
            self.flush_client();
        }
        lock(&self.core).close_elicitation_by(key, shown, self.acting.as_deref());
    }

    /// The agent withdrew its request (`$/cancel_request`) or the runtime cancelled it.
    pub(super) fn elicitation_withdrawn(&mut self, key: &str) {
        if self.elicitations.remove(key).is_some() {
            lock(&self.core).close_elicitation(key, "cancelled");
        }
    }

    /// `elicitation/complete`: a URL question still open is closed (answered `cancel`: nobody
    /// chose).
    pub(super) fn elicitation_completed(&mut self, params: Option<Box<RawValue>>) {
        let params = params_value(params);
        let Some(id) = params.get(ELICITATION_ID).and_then(Value::as_str) else {
            tracing::debug!(
                session = self.id,
                "elicitation/complete without an elicitationId"
            );
            return;
        };
        let key = self
            .elicitations
            .iter()
            .find_map(|(key, (_, e))| match &e.kind {
                ElicitationKind::Url(url) if url.id == id => Some(key.clone()),
                _ => None,
            });
        if let Some(key) = key {
            self.send_elicitation_answer(&key, &ElicitationAnswer::Cancel, "complete");
        }
    }

    /// The turn was cancelled: every open elicitation is answered `cancel`.
    pub(super) fn cancel_elicitations(&mut self) {
        let keys: Vec<String> = self.elicitations.keys().cloned().collect();
        for key in keys {
            self.send_elicitation_answer(&key, &ElicitationAnswer::Cancel, CANCEL);
        }
    }
}
