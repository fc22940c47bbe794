//! Transports: how JSON-RPC messages travel between Spindle and a peer.
//!
//! - `framing`: one message (or batch) per `\n`-terminated line, decoded
//!   into [`Incoming`] items without I/O;
//! - `connection`: [`Connection`], a pair of channels in memory, over any
//!   byte streams or over stdio;
//! - `child`: [`spawn_child`], a connection to a child process's stdio;
//! - [`remote`] (feature `remote`): the RFD's HTTP+SSE and WebSocket
//!   profiles, giving the same [`Connection`].

mod child;
mod connection;
mod framing;
#[cfg(feature = "remote")]
pub mod remote;

pub use child::{ChildExit, ChildHandle, SpawnOptions, spawn_child};
pub use connection::{
    Connection, ConnectionOptions, Disconnected, MessageReceiver, MessageSender, WeakMessageSender,
    decode_stream,
};
pub use framing::{CloseReason, Incoming};
pub(crate) use framing::{decode_str_into, unreported_update_session};
