//! The one JSON scanner of the hot chunk path, shared by the engine and the
//! bridge: a single pass over a `session/update` line that finds what the
//! caller routes on without building a value, and returns `None` on
//! anything it does not expect, so the serde path (the reference) decides
//! every unusual line.
//!
//! - `lexer` (private): the shared cursor: whitespace, literals,
//!   strict strings with escape handling, skipped strings and values, the
//!   walk over an object's members;
//! - [`PlainChunk`] ([`plain_chunk_params`], [`plain_chunk_line`]): the
//!   engine's strict view of a plain text chunk, text unescaped;
//!   [`plain_chunk_notification`] also gives the params slice, for the
//!   runtime ([`message_chunk_notification`]: of a message chunk tag only); [`ScannedChunk`] keeps the fields as ranges of that slice;
//! - [`UpdateView`] ([`update_view()`], [`ChunkScanner`]): the bridge's
//!   routing view of any update line, borrowed slices of the line, with a
//!   memory of the last chunk line's shape;
//! - [`UpdateNotification`] ([`update_notification()`]): a client runtime's
//!   view of any `session/update` line in the compact envelope, checked as
//!   serde checks it: the params text and the leading `sessionId`.

mod lexer;
mod plain_chunk;
mod scanned_chunk;
mod update_notification;
mod update_view;

pub use lexer::{find_special, offset_in};
pub use plain_chunk::{
    ChunkNotification, PlainChunk, message_chunk_notification, plain_chunk_line,
    plain_chunk_notification, plain_chunk_params,
};
pub use scanned_chunk::ScannedChunk;
pub use update_notification::{UpdateNotification, update_notification};
pub use update_view::{ChunkScanner, UpdateView, update_view};
