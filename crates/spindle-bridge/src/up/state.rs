//! The state of the v2-client / v1-agent direction: per session, the
//! message id-less v1 chunks continue and the mode option; the prompts
//! forwarded to the agent.

use std::collections::HashMap;

use serde_json::Value;
use spindle_wire::tags::MessageKind;

use crate::shapes;
use crate::types::IdMap;

#[derive(Debug, Default)]
pub(crate) struct UpSession {
    /// The message id-less v1 chunks of this kind continue (the transcript
    /// engine's rule: a type change, tool call, compaction, clear boundary,
    /// prompt or prompt end starts a new message).
    pub(crate) open: Option<(MessageKind, String)>,
    /// Config options as reported by the agent, v2-shaped.
    pub(crate) options: Vec<Value>,
    /// v1 modes, shown to the client as a `mode` config option.
    pub(crate) modes: Option<Value>,
    pub(crate) mode_config_id: Option<String>,
}

#[derive(Debug)]
pub(crate) struct UpPrompt {
    pub(crate) session: String,
}

#[derive(Debug, Default)]
pub(crate) struct UpState {
    pub(crate) sessions: IdMap<UpSession>,
    /// Prompts forwarded to the agent, by the bridge's agent-side id.
    pub(crate) prompts: HashMap<String, UpPrompt>,
    pub(crate) next_id: u64,
    /// (session, kind, messageId) of the last chunk with a messageId: that
    /// session's `open` message. Every other way to a session goes through
    /// [`UpState::session`], which forgets it.
    pub(crate) last_chunk: Option<(String, MessageKind, String)>,
}

impl UpState {
    pub(crate) fn mint(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("spindle-{prefix}-{}", self.next_id)
    }

    pub(crate) fn session(&mut self, id: &str) -> &mut UpSession {
        self.last_chunk = None;
        if !self.sessions.contains_key(id) {
            self.sessions.insert(id.to_owned(), UpSession::default());
        }
        self.sessions.get_mut(id).expect("inserted above")
    }

    pub(crate) fn pending_prompt_client_ids(&self) -> Vec<String> {
        // v2 prompts are answered on forwarding: nothing of the client waits.
        Vec::new()
    }

    pub(crate) fn clear_prompts(&mut self) {
        self.prompts.clear();
    }

    /// The ids of prompts still running, with their sessions (for idle on
    /// agent exit).
    pub(crate) fn running_sessions(&self) -> Vec<String> {
        self.prompts.values().map(|p| p.session.clone()).collect()
    }

    /// The full v2 option set of a session: the agent's options plus the
    /// synthesized mode option.
    pub(crate) fn all_options(&self, session: &str) -> Vec<Value> {
        let Some(s) = self.sessions.get(session) else {
            return Vec::new();
        };
        let mut all = s.options.clone();
        if let (Some(modes), Some(id)) = (&s.modes, &s.mode_config_id)
            && let Some(o) = shapes::mode_option(modes, id)
        {
            all.push(o);
        }
        all
    }
}
