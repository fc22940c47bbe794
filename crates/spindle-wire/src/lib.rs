//! The ACP wire vocabulary every Spindle crate shares.
//!
//! This is the lowest Spindle crate: the engine, the runtime, the bridge, the
//! reference agent and the web server all read these names from here, so each
//! string of the vocabulary is spelled once in non-test code:
//!
//! - [`tags`]: the `sessionUpdate` tags (v1, v2 draft, Spindle extensions) and
//!   the message kinds they carry;
//! - [`client_methods`]: method names, fields and capability keys of the
//!   typed client calls and the agent's client methods (fs, terminals);
//! - [`extensions`]: the Spindle extensions and how peers opt into them;
//! - [`routing`]: the metadata fields that route agent text to the reply,
//!   thoughts or the plan, in the order they are weighed;
//! - [`meta`]: the `_meta` keys Spindle reads on updates;
//! - [`stop_reasons`]: a turn's stop reasons and the outcome each names;
//! - [`DEFAULT_MAX_LINE_BYTES`]: the one default limit on a JSON-RPC line;
//! - [`scan`]: the single-pass scanner for the hot chunk path;
//! - [`hash`]: the fast hasher of hot-path id maps.

pub mod client_methods;
pub mod extensions;
pub mod hash;
pub mod host;
pub mod json_text;
pub mod meta;
pub mod remote;
pub mod routing;
pub mod scan;
pub mod stop_reasons;
pub mod tags;
pub mod web;

/// The default limit on one JSON-RPC line (one message), in bytes, for every
/// Spindle transport that reads lines: the runtime, the bridge, the reference
/// agent's driver and the web server's agent link. A longer line is a
/// diagnostic, never a crash, and the connection goes on.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;
