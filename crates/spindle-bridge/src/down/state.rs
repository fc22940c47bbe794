//! The state of the v1-client / v2-agent direction: per session, what the v1
//! client already shows (messages, tool calls, plans), the held v1 prompt,
//! and the mode option.

use std::collections::HashMap;

use serde_json::Value;
use spindle_wire::tags::MessageKind;

use crate::types::{IdMap, IdSet};

#[derive(Debug)]
pub(crate) struct DownPrompt {
    pub(crate) client_id: String,
    /// messageId of the agent's acceptance.
    pub(crate) accepted: Option<String>,
    pub(crate) running_seen: bool,
    /// The user message id taken as the echo of this prompt.
    pub(crate) echo: Option<String>,
    /// Strict policy: what this turn could not show.
    pub(crate) rejected: Vec<String>,
}

#[derive(Debug, Default)]
pub(crate) struct DownSession {
    /// Messages the v1 client holds content for, by kind.
    pub(crate) shown: [IdSet; 3],
    /// Tool calls announced to the client, with their accumulated v1 content.
    pub(crate) tools: HashMap<String, Vec<Value>>,
    /// v2 plans by planId, in first-seen order (v1 has one plan).
    pub(crate) plans: Vec<(String, Vec<Value>)>,
    pub(crate) prompt: Option<DownPrompt>,
    /// (configId, currentValue) of the `mode` config option.
    pub(crate) mode: Option<(String, String)>,
}

#[derive(Debug, Default)]
pub(crate) struct DownState {
    pub(crate) sessions: IdMap<DownSession>,
    /// Prompt request ids -> session.
    pub(crate) prompt_sessions: HashMap<String, String>,
    /// (session, kind index, messageId) of the last chunk relayed: known to
    /// be in that session's `shown` set, so the next chunk of the same
    /// message skips the lookups. Cleared wherever an id leaves `shown`.
    pub(crate) last_shown: Option<(String, usize, String)>,
    pub(crate) next_id: u64,
}

/// The index of `kind` in [`DownSession::shown`].
pub(crate) fn kind_index(kind: MessageKind) -> usize {
    match kind {
        MessageKind::User => 0,
        MessageKind::Agent => 1,
        MessageKind::Thought => 2,
    }
}

impl DownState {
    pub(crate) fn session(&mut self, id: &str) -> &mut DownSession {
        if !self.sessions.contains_key(id) {
            self.sessions.insert(id.to_owned(), DownSession::default());
        }
        self.sessions.get_mut(id).expect("inserted above")
    }

    pub(crate) fn pending_prompt_ids(&self) -> Vec<String> {
        self.sessions
            .values()
            .filter_map(|s| s.prompt.as_ref().map(|p| p.client_id.clone()))
            .collect()
    }

    pub(crate) fn clear_prompts(&mut self) {
        for s in self.sessions.values_mut() {
            s.prompt = None;
        }
        self.prompt_sessions.clear();
    }
}
