//! Who did what (`spindle serve --users`, issue 28): the user a front end acts for
//! ([`crate::acting::acting_as`]) reaches the task as [`Command::As`](super::Command::As) and is
//! noted in the session's log: after a prompt's request (its entry gets `author`), before a
//! permission answer (its record gets `answeredBy`), and with each action that has no line of
//! its own (cancel, an elicitation answer, a review, a restore, a queue change). Forwarded
//! commands carry it to the replica that runs the session.

use serde_json::Value;
use spindle_protocol::RequestId;

use super::state::{SessionTask, request_key};
use crate::feed::{Authored, author_note};
use crate::store::Direction;

impl SessionTask {
    /// Notes the acting user, if any, as the author of `action`.
    pub(super) fn note_action(&mut self, action: &str, detail: Value) {
        if let Some(user) = self.acting.clone() {
            let note = author_note(&user, Authored::Action(action, detail));
            self.record(vec![(Direction::Server, note)]);
        }
    }

    /// Notes `author` as the author of the prompt sent as `request` (logged after it).
    pub(super) fn note_prompt_author(&mut self, author: Option<&str>, request: &RequestId) {
        if let Some(author) = author {
            let id = request_key(request);
            let note = author_note(author, Authored::Prompt(&id));
            self.record(vec![(Direction::Server, note)]);
        }
    }

    /// Notes the acting user as who answers the agent's permission request `request` (logged
    /// before the answer).
    pub(super) fn note_permission_author(&mut self, request: &RequestId) {
        if let Some(user) = self.acting.clone() {
            let id = request_key(request);
            let note = author_note(&user, Authored::Permission(&id));
            self.record(vec![(Direction::Server, note)]);
        }
    }

    /// A forwarded command's body with the acting user (`"author"`), for the owner to note.
    pub(super) fn authored(&self, mut body: Value) -> Value {
        if let (Some(user), Value::Object(map)) = (&self.acting, &mut body) {
            map.insert("author".into(), Value::from(user.as_str()));
        }
        body
    }
}
