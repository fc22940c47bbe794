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
//!   A v2 chunk without messageId (v2 requires one) is applied the same way,
//!   with a `missing_message_id` diagnostic: no text is lost.
//! - Extensions (always accepted): `agent_message_clear` / `agent_thought_clear`
//!   (`messageId` optional: without it, the message currently streaming),
//!   `session_cleared` and `_meta.claudeCode.clearBoundary: true` on a chunk
//!   (a `clear` boundary entry), and `_meta.spindle.snapshot: true|false` on a
//!   chunk (this chunk replaces / appends to its message's content, overriding
//!   [`StreamingPolicy`]).
//! - Agent text is routed by metadata only (in docs/src/routing.md's order):
//!   think/thought/thinking/segment/intent become `agent_thought`, `plan`
//!   becomes `plan_text`; the persisted reply holds `agent_message` text only.
//! - Turns: a client prompt (or an agent user message, or v2 `running`) starts
//!   one; the v1 prompt response, v2 `idle` with a stopReason, or an error
//!   response ends it. The v2 prompt response is acceptance; the agent's
//!   `user_message` acknowledgement adopts the client's prompt entry (oldest
//!   waiting prompt first) instead of duplicating it. Output after a v2 `idle`
//!   is background work (no turn). A cancelled turn marks its unfinished tool
//!   calls `cancelled`. A turn that ends (not one a new turn or a finished
//!   history replay closes) gets a `turn_end` entry after its output: its
//!   outcome, stop reason and error.
//! - Plans: a plan updated in a later turn than its entry's starts a new entry
//!   in that turn (each turn shows its latest plan; the newest is the current one).
//! - Unknown and `_`-prefixed updates become `unknown` entries with the raw
//!   JSON; unknown content blocks and enum values are kept verbatim. A malformed
//!   known update yields a diagnostic and changes nothing, except that
//!   `usage_update` and `session_info_update` keep their well-formed fields
//!   (a `malformed_field` diagnostic names the ones left out).
//! - An empty text chunk opens no agent or thought message (no entry, no op);
//!   the message starts with its first non-empty chunk.
//! - Tool calls: the display-only terminal agents attach in `_meta`
//!   (`terminal_info`, `terminal_output` appended, `terminal_exit`) is lifted
//!   out of `_meta` into [`ToolCall::terminal`]; its output is the entry's
//!   text (streamed by `append_text` ops), so a later update that replaces
//!   `_meta` loses none of it. The tool's name (v2 `name`,
//!   `_meta.claudeCode.toolName`, `_meta.toolName`) sticks once seen
//!   ([`ToolCall::tool_name`]). Every `diff` item (v1 `oldText`/`newText`, v2
//!   `changes` + `git_patch`) is a [`FileDiff`] with hunks
//!   ([`ToolCall::diffs`], computed on first read after `content` changed).
//! - The client's own services: a client terminal's output and exit arrive
//!   as local lines ([`TranscriptEngine::apply_local_line`], or `{"local":..}`
//!   in a recording) and show in the display terminal of the tool call that
//!   embeds the terminal (held until one does); an agent's
//!   `fs/write_text_file` is a diff on the tool call in progress (or on a
//!   `write:<n>` tool call of its own) with a [`WriteStatus`] taken from the
//!   client's response, its old side from the local `fileBeforeWrite` line;
//!   a write that repeats a `diff` item the call already shows (same path and
//!   new text, the text before as shown) is that item's diff, not a second
//!   one ([`ToolCall::diff_write`]), and so is a write of the whole file
//!   around a shown snippet (drawn as the write's diff once the text before
//!   is known); a write of a file the call shows a different change for
//!   keeps its own diff, marked `differs_from_shown`.
//!   An `fs/read_text_file` notes its path on the tool call in progress.
//!
//! # Layers
//! A module uses only modules listed before it (no module cycles; the
//! `impl TranscriptEngine` blocks of a layer call only methods of earlier
//! layers):
//! 1. utilities: [`text`], `compact` (compact JSON objects), `config`;
//! 2. data: `model` (entries, messages, tool calls, session state,
//!    diagnostics), `ops` (render ops), `ids` (id spaces), `keys` (wire id ->
//!    entry), `local_state` (client terminals and writes between lines);
//! 3. wire reading: `wire` (borrowed probes of one line), `classify`
//!    (metadata routing, fields from `spindle_wire::routing`);
//! 4. `core`: the [`TranscriptEngine`] struct and the bookkeeping every
//!    handler shares (entries, ids, ops, diagnostics);
//! 5. handlers, each by entry kind: `turns`, `content` (blocks into a
//!    message or summary), `session_state`, `boundaries` (clear and
//!    compaction), `messages`, `local` (local lines, client file writes and
//!    reads), `tools`, `plan`, `terminal`, `requests` (prompts, responses,
//!    permissions);
//! 6. `engine`: the `apply_*` entry points, line decoding and the dispatch by
//!    `spindle_wire::tags::UpdateTag`;
//! 7. `replay`: outputs (replies, replay JSON, text, snapshots) and
//!    [`replay_recording`].
#![deny(missing_docs)]

mod boundaries;
mod canonical;
mod classify;
mod compact;
mod config;
mod content;
mod core;
mod engine;
mod ids;
mod keys;
mod local;
mod local_state;
mod message_sources;
mod messages;
mod model;
mod ops;
mod plan;
mod replay;
mod replay_cache;
mod replay_stream;
mod requests;
mod session_results;
mod session_state;
mod terminal;
pub mod text;
mod tools;
mod turns;
mod wire;

pub use crate::core::TranscriptEngine;
pub use config::{EngineConfig, ProtocolHint, StreamingPolicy};
pub use message_sources::MessageSource;
pub use model::{
    Boundary, ClientActivity, ClientWrite, DiffChangeKind, DiffHunk, DiffLine, DiffLineKind,
    DiffWrite, Entries, Entry, EntryBody, EntryKind, FileDiff, Message, Revision, SessionInfo,
    SessionState, Terminal, TerminalExit, ToolCall, ToolTerminal, Transcript, TurnEnd, WriteStatus,
    unified_hunks,
};
pub use model::{Diagnostic, EntryView};
pub use ops::{Applied, RenderOp, coalesce_render_ops};
pub use replay::{TurnReply, recording_line_received, recording_line_sent, replay_recording};
pub use replay_cache::{ListPart, Materialized, ReplayCache};
