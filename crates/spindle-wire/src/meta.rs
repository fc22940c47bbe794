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
