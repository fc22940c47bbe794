//! `spindle-engine`: the sans-I/O ACP transcript engine.
//!
//! Feed it the JSON-RPC lines a client exchanges with an agent (protocol v1 or
//! v2, plus Spindle's extension updates); it maintains a [`Transcript`], returns
//! minimal [`RenderOp`]s for views and [`Diagnostic`]s for bad input. No I/O, no
//! clock, no async runtime; it never panics on input.
//!
//! ```
//! use spindle_engine::{EngineConfig, RenderOp, TranscriptEngine};
//!
//! let mut engine = TranscriptEngine::new(EngineConfig::default());
//! engine.apply_client_line(
//!     r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#,
//! );
//! let applied = engine.apply_agent_line(
//!     r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hel"}}}}"#,
//! );
//! assert!(matches!(applied.ops[0], RenderOp::InsertEntry { .. }));
//! let applied = engine.apply_agent_line(
//!     r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lo"}}}}"#,
//! );
//! assert_eq!(applied.ops, vec![RenderOp::AppendText { id: "m:2".into(), text: "lo".into() }]);
//! engine.apply_agent_line(r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#);
//! assert_eq!(engine.final_reply().as_deref(), Some("Hello"));
//! assert_eq!(engine.transcript().state.stop_reason.as_deref(), Some("end_turn"));
//! ```
//!
//! # Semantics in brief
//! - Messages are keyed by (kind, messageId); chunks append, upserts
//!   (`user_message`, `agent_message`, `agent_thought`) replace `content` and
//!   `_meta` three-state (omitted = unchanged, `null` = clear, value = replace,
//!   `content: []` clears). The first sighting of any id fixes its timeline position.
//! - v1 chunks without messageId get minted ids (`m:<n>`); a message ends on a
//!   type change, a tool call, a new prompt, the prompt response, or a boundary.
//! - Extensions (always accepted): `agent_message_clear` / `agent_thought_clear`
//!   (`messageId` optional: without it, the message currently streaming),
//!   `session_cleared` and `_meta.claudeCode.clearBoundary: true` on a chunk
//!   (a `clear` boundary entry), and `_meta.spindle.snapshot: true|false` on a
//!   chunk (this chunk replaces / appends to its message's content, overriding
//!   [`StreamingPolicy`]).
//! - Agent text is routed by metadata only (seed 004 priority order):
//!   think/thought/thinking/segment/intent become `agent_thought`, `plan`
//!   becomes `plan_text`; the persisted reply holds `agent_message` text only.
//! - Turns: a client prompt (or an agent user message, or v2 `running`) starts
//!   one; the v1 prompt response, v2 `idle` with a stopReason, or an error
//!   response ends it. The v2 prompt response is acceptance; the agent's
//!   `user_message` acknowledgement adopts the client's prompt entry (oldest
//!   waiting prompt first) instead of duplicating it. Output after a v2 `idle`
//!   is background work (no turn). A cancelled turn marks its unfinished tool
//!   calls `cancelled`.
//! - Unknown and `_`-prefixed updates become `unknown` entries with the raw
//!   JSON; unknown content blocks and enum values are kept verbatim. A malformed
//!   known update yields a diagnostic and changes nothing.
#![deny(missing_docs)]

mod base64;
mod classify;
mod compact;
mod engine;
mod keys;
mod messages;
mod model;
mod ops;
mod replay;
pub mod text;
mod updates;
mod wire;

pub use engine::TranscriptEngine;
pub use model::{
    Boundary, Entry, EntryBody, EntryKind, Message, SessionInfo, SessionState, Terminal, ToolCall,
    Transcript,
};
pub use ops::{Applied, Diagnostic, EntryView, RenderOp};
pub use replay::{TurnReply, recording_line_received, recording_line_sent, replay_recording};

/// Which ACP protocol version the input speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProtocolHint {
    /// Infer: v2 once a v2-only update (`agent_message`, `state_update`, ...),
    /// a v2-shaped prompt response or an `initialize` result with
    /// `protocolVersion: 2` is seen; v1 until then.
    #[default]
    Auto,
    /// Protocol v1: the prompt response ends the turn; `null` patch fields
    /// mean "unchanged"; permission requests imply `requires_action`.
    V1,
    /// Protocol v2: the prompt response is acceptance; `state_update` ends turns.
    V2,
}

/// How agent message and thought chunks combine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StreamingPolicy {
    /// Chunks append (the ACP rule).
    #[default]
    Delta,
    /// Every agent chunk is a snapshot that replaces its message's content
    /// (for agents known to stream cumulative text). A chunk's
    /// `_meta.spindle.snapshot` flag still overrides this.
    Snapshot,
}

/// Engine configuration.
#[derive(Debug, Clone, Default)]
pub struct EngineConfig {
    /// Protocol version of the input.
    pub protocol: ProtocolHint,
    /// Chunk combination policy for this session.
    pub streaming: StreamingPolicy,
}
