//! The `_meta` keys Spindle reads and writes on the wire.

/// `_meta.spindle`: Spindle's own namespace (the extension opt-in, chunk flags).
pub const SPINDLE_META_KEY: &str = "spindle";

/// `_meta.spindle.snapshot: true` on a message or thought chunk: the chunk
/// carries the message's whole content so far and replaces it.
pub const SNAPSHOT_FLAG: &str = "snapshot";

/// `_meta.claudeCode`: the namespace of the agent that introduced the clear
/// boundary flag.
pub const CLAUDE_CODE_META_KEY: &str = "claudeCode";

/// `_meta.claudeCode.clearBoundary: true` on the first chunk after a clear.
pub const CLEAR_BOUNDARY_FLAG: &str = "clearBoundary";

/// The `_meta` member itself.
pub const META_KEY: &str = "_meta";

/// `_meta.terminal_info` on a `tool_call`: the display-only terminal of the
/// call (`terminal_id`, and `cwd` from Codex). Agents send these three only to
/// a client that set `clientCapabilities._meta.terminal_output: true`.
pub const TERMINAL_INFO_META_KEY: &str = "terminal_info";

/// `_meta.terminal_output` on a `tool_call_update`: `terminal_id` and `data`
/// (text, appended). The same word is the client capability flag:
/// `clientCapabilities._meta.terminal_output: true`.
pub const TERMINAL_OUTPUT_META_KEY: &str = "terminal_output";

/// `_meta.terminal_exit` on a `tool_call_update`: `terminal_id`, `exit_code`,
/// `signal`.
pub const TERMINAL_EXIT_META_KEY: &str = "terminal_exit";

/// `toolName`: the tool's programmatic name, in `_meta.claudeCode` (Claude
/// Code) or directly in `_meta` (Qwen Code) of a tool call.
pub const TOOL_NAME_META_KEY: &str = "toolName";
