//! Remote transports (feature `remote`): an agent behind the ACP endpoint of
//! the RFD "Streamable HTTP & WebSocket transport" (`/acp`), reached over
//! HTTP+SSE or WebSocket.
//!
//! [`connect_remote`] gives a [`RemoteLink`]: a pair of byte streams
//! carrying newline-delimited JSON-RPC, exactly what a child's stdio gives.
//! [`RemoteLink::into_connection`] puts the same [`Connection`](super::Connection) on them as
//! [`spawn_child`](super::spawn_child) does, so the client core, the
//! engine, diagnostics and recordings see no difference; a front end that
//! stores raw lines (the web server's agent link) reads the streams itself.
//!
//! - HTTP+SSE: every message is a `POST`; `initialize` is answered `200`
//!   with `Acp-Connection-Id`, the rest `202` with the answer on a stream.
//!   The connection stream and one stream per session are `GET`s with
//!   `Accept: text/event-stream`; `DELETE` ends the connection.
//! - WebSocket: one text frame per message both ways.
//!
//! When a stream drops, the transport reconnects. A server with Spindle's
//! event ids (SSE `id:`) is asked to resume with `Last-Event-ID`, so nothing
//! is lost or doubled. A server that no longer knows the connection (it
//! restarted) gets the client's `initialize` again and each open session is
//! resumed (`session/resume`) or loaded (`session/load`, the replay kept
//! from the client); requests that were waiting fail with a clear error.
//! Each such event is a [`RemoteNotice`].

mod book;
mod connect;
mod link;
mod sse;
mod websocket;

pub use connect::connect_remote;
pub use link::{
    RemoteError, RemoteLink, RemoteNotice, RemoteNotices, RemoteOptions, RemoteProfile,
};
