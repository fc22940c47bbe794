//! The `sessionUpdate` tags of ACP v1, the v2 draft and the Spindle
//! extensions, and the message kinds they carry.

macro_rules! tags {
    ($( $(#[$doc:meta])* $variant:ident = $konst:ident = $name:literal, )*) => {
        $( $(#[$doc])* pub const $konst: &str = $name; )*

        /// A `sessionUpdate` tag Spindle knows. Unknown tags stay strings:
        /// [`UpdateTag::parse`] returns `None` for them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum UpdateTag {
            $( $(#[$doc])* $variant, )*
        }

        impl UpdateTag {
            /// Every known tag.
            pub const ALL: &[UpdateTag] = &[$(UpdateTag::$variant,)*];

            /// The tag as spelled on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $(UpdateTag::$variant => $konst,)* }
            }

            /// The known tag spelled `tag`, or None.
            pub fn parse(tag: &str) -> Option<UpdateTag> {
                match tag { $($name => Some(UpdateTag::$variant),)* _ => None }
            }
        }
    };
}

tags! {
    /// v1 + v2: a chunk of the user's message.
    UserMessageChunk = USER_MESSAGE_CHUNK = "user_message_chunk",
    /// v1 + v2: a chunk of the agent's reply.
    AgentMessageChunk = AGENT_MESSAGE_CHUNK = "agent_message_chunk",
    /// v1 + v2: a chunk of the agent's thoughts.
    AgentThoughtChunk = AGENT_THOUGHT_CHUNK = "agent_thought_chunk",
    /// v2: a whole user message, upserted by `messageId`.
    UserMessage = USER_MESSAGE = "user_message",
    /// v2: a whole agent message, upserted by `messageId`.
    AgentMessage = AGENT_MESSAGE = "agent_message",
    /// v2: a whole agent thought, upserted by `messageId`.
    AgentThought = AGENT_THOUGHT = "agent_thought",
    /// v1: a new tool call.
    ToolCall = TOOL_CALL = "tool_call",
    /// v1 + v2: a tool call patch (v2: upsert).
    ToolCallUpdate = TOOL_CALL_UPDATE = "tool_call_update",
    /// v2: content appended to a tool call.
    ToolCallContentChunk = TOOL_CALL_CONTENT_CHUNK = "tool_call_content_chunk",
    /// v1: the whole plan.
    Plan = PLAN = "plan",
    /// v1 unstable + v2: a plan upsert by `planId`.
    PlanUpdate = PLAN_UPDATE = "plan_update",
    /// v1 unstable + v2: a plan removed.
    PlanRemoved = PLAN_REMOVED = "plan_removed",
    /// v2: a terminal's state.
    TerminalUpdate = TERMINAL_UPDATE = "terminal_update",
    /// v2: terminal output.
    TerminalOutputChunk = TERMINAL_OUTPUT_CHUNK = "terminal_output_chunk",
    /// v1 unstable + v2: a compaction boundary.
    CompactionUpdate = COMPACTION_UPDATE = "compaction_update",
    /// v1 unstable + v2: a chunk of the compaction summary.
    CompactionSummaryChunk = COMPACTION_SUMMARY_CHUNK = "compaction_summary_chunk",
    /// v2: the session's state (running / idle / requires_action).
    StateUpdate = STATE_UPDATE = "state_update",
    /// v2 (schema 1.20): the end of the history a `session/resume` with
    /// `replayFrom` replays; updates after it are live. A marker, not history.
    ReplayComplete = REPLAY_COMPLETE = "replay_complete",
    /// v1 + v2: context usage and cost.
    UsageUpdate = USAGE_UPDATE = "usage_update",
    /// v1 + v2: the slash commands on offer.
    AvailableCommandsUpdate = AVAILABLE_COMMANDS_UPDATE = "available_commands_update",
    /// v1: the current mode.
    CurrentModeUpdate = CURRENT_MODE_UPDATE = "current_mode_update",
    /// v1 + v2: the session's config options.
    ConfigOptionUpdate = CONFIG_OPTION_UPDATE = "config_option_update",
    /// v1 + v2: the session's title and other info.
    SessionInfoUpdate = SESSION_INFO_UPDATE = "session_info_update",
    /// v1 unstable + v2: a notice for the user.
    Notice = NOTICE = "notice",
    /// Spindle extension: clear the current (or named) agent message.
    AgentMessageClear = AGENT_MESSAGE_CLEAR = "agent_message_clear",
    /// Spindle extension: clear the current (or named) thought.
    AgentThoughtClear = AGENT_THOUGHT_CLEAR = "agent_thought_clear",
    /// Spindle extension: the agent cleared its context.
    SessionCleared = SESSION_CLEARED = "session_cleared",
}

/// Who a message belongs to and where its text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// The user's prompt.
    User,
    /// The agent's reply.
    Agent,
    /// The agent's thoughts.
    Thought,
}

impl MessageKind {
    /// The kind a chunk tag (`*_message_chunk`, `agent_thought_chunk`) carries.
    pub fn of_chunk(tag: UpdateTag) -> Option<MessageKind> {
        match tag {
            UpdateTag::UserMessageChunk => Some(MessageKind::User),
            UpdateTag::AgentMessageChunk => Some(MessageKind::Agent),
            UpdateTag::AgentThoughtChunk => Some(MessageKind::Thought),
            _ => None,
        }
    }

    /// The kind a v2 whole-message tag carries.
    pub fn of_upsert(tag: UpdateTag) -> Option<MessageKind> {
        match tag {
            UpdateTag::UserMessage => Some(MessageKind::User),
            UpdateTag::AgentMessage => Some(MessageKind::Agent),
            UpdateTag::AgentThought => Some(MessageKind::Thought),
            _ => None,
        }
    }

    /// The chunk tag of this kind.
    pub const fn chunk_tag(self) -> UpdateTag {
        match self {
            MessageKind::User => UpdateTag::UserMessageChunk,
            MessageKind::Agent => UpdateTag::AgentMessageChunk,
            MessageKind::Thought => UpdateTag::AgentThoughtChunk,
        }
    }

    /// The v2 whole-message tag of this kind.
    pub const fn upsert_tag(self) -> UpdateTag {
        match self {
            MessageKind::User => UpdateTag::UserMessage,
            MessageKind::Agent => UpdateTag::AgentMessage,
            MessageKind::Thought => UpdateTag::AgentThought,
        }
    }
}

impl std::fmt::Display for UpdateTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_parses_back() {
        for &tag in UpdateTag::ALL {
            assert_eq!(UpdateTag::parse(tag.as_str()), Some(tag));
        }
        assert_eq!(UpdateTag::parse("future_update"), None);
        for kind in [MessageKind::User, MessageKind::Agent, MessageKind::Thought] {
            assert_eq!(MessageKind::of_chunk(kind.chunk_tag()), Some(kind));
            assert_eq!(MessageKind::of_upsert(kind.upsert_tag()), Some(kind));
        }
    }
}
