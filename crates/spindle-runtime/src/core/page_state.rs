//! The page's open questions (permissions, elicitations, file-write reviews) and server facts of
//! a [`SessionCore`]: each change is kept for snapshots and published as one op.

use serde_json::Value;

use super::{PageFact, SessionCore};
use crate::page_ops::PageOp;

impl SessionCore {
    pub(crate) fn open_permission(&mut self, key: String, op: Value) {
        self.acp.permission_opened(&key);
        self.permissions.insert(key, op.clone());
        self.publish_web_op(op);
    }

    pub(crate) fn close_permission(&mut self, key: &str, outcome: &str) {
        self.close_permission_by(key, outcome, None);
    }

    /// [`Self::close_permission`], answered by `by` (`spindle serve --users`).
    pub(crate) fn close_permission_by(&mut self, key: &str, outcome: &str, by: Option<&str>) {
        self.acp.permission_closed(key, outcome);
        if self.permissions.remove(key).is_some() {
            self.publish_web_op(PageOp::WebPermissionResolved {
                key: key.to_string(),
                outcome: outcome.to_string(),
                by: by.map(str::to_owned),
            });
        }
    }

    /// Shows an elicitation (a `web_elicitation` op).
    pub(crate) fn open_elicitation(&mut self, key: String, op: Value, params: &Value) {
        self.acp.elicitation_opened(&key, params);
        self.elicitations.insert(key, op.clone());
        self.publish_web_op(op);
    }

    /// Closes an elicitation with how it ended.
    pub(crate) fn close_elicitation(&mut self, key: &str, action: &str) {
        self.close_elicitation_by(key, action, None);
    }

    /// [`Self::close_elicitation`], answered by `by` (`spindle serve --users`).
    pub(crate) fn close_elicitation_by(&mut self, key: &str, action: &str, by: Option<&str>) {
        self.acp.elicitation_closed(key);
        if self.elicitations.remove(key).is_some() {
            self.publish_web_op(PageOp::WebElicitationResolved {
                key: key.to_string(),
                action: action.to_string(),
                by: by.map(str::to_owned),
            });
        }
    }

    /// Shows a pending file-write review.
    pub(crate) fn open_review(&mut self, key: String, op: PageOp) {
        let op = op.to_value();
        self.reviews.insert(key, op.clone());
        self.publish_web_op(op);
    }

    /// Closes a review with its decision (`accept`, `reject`, `cancelled`, `error`); false when it
    /// was not open.
    pub(crate) fn close_review(
        &mut self,
        key: &str,
        decision: &str,
        message: Option<&str>,
    ) -> bool {
        let open = self.reviews.remove(key).is_some();
        if open {
            self.publish_web_op(PageOp::WebReviewResolved {
                request_id: key.to_string(),
                decision: decision.to_string(),
                message: message.map(str::to_string),
            });
        }
        open
    }

    /// Sets a server fact shown by one op (see `facts`) and publishes it when it changed.
    pub(crate) fn set_fact(&mut self, op: PageOp) {
        let fact = match op {
            PageOp::WebStandingPermissions { .. } => PageFact::StandingPermissions,
            PageOp::WebStatus { .. } => PageFact::Status,
            PageOp::WebCheckpoints { .. } => PageFact::Checkpoints,
            PageOp::WebQueue { .. } => PageFact::Queue,
            _ => return,
        };
        let op = op.to_value();
        if self.facts.get(&fact) != Some(&op) {
            self.facts.insert(fact, op.clone());
            self.publish_web_op(op);
        }
    }

    /// A server fact's op, if set.
    pub(crate) fn fact(&self, fact: PageFact) -> Option<&Value> {
        self.facts.get(&fact)
    }

    /// Publishes a one-off op (not part of snapshots).
    pub(crate) fn publish_note(&mut self, op: PageOp) {
        self.publish_web_op(op);
    }

    /// What the log said besides the transcript (modes, cwd).
    pub(crate) fn session_facts(&self) -> &crate::facts::SessionFacts {
        &self.feed.facts
    }

    pub(crate) fn permission(&self, key: &str) -> Option<&Value> {
        self.permissions.get(key)
    }

    pub(crate) fn open_permission_keys(&self) -> Vec<String> {
        self.permissions.keys().cloned().collect()
    }
}
