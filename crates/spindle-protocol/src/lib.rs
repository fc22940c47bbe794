//! spindle-protocol: JSON-RPC 2.0 framing, connections, and the ACP client
//! runtime of Spindle.
//!
//! - [`jsonrpc`]: messages with verbatim (raw JSON) payloads, line decoding.
//! - [`transport`]: line framing, [`Connection`] (a pair of channels) in
//!   memory, over any byte streams or stdio, and [`spawn_child`].
//! - [`req_queue`]: pending-request bookkeeping without I/O.
//! - [`client`]: [`ClientCore`], the client without I/O (request ids, the
//!   `initialize` handshake with version negotiation, capability checks,
//!   response dispatch, one [`ClientEvent`] stream), and [`AcpClient`], which
//!   drives it with tokio over a [`Connection`]. `spindle serve` drives the same
//!   core over its own line link. Typed calls spelled per negotiated version:
//!   `authenticate` (v2 `auth/login`), `set_mode`, `set_config_option`,
//!   `list_sessions`, `load_session` (v2: resume with replay), `resume_session`,
//!   `close_session`; what the agent offers is read alike for v1 and v2 on
//!   [`InitializeOutcome`] (`auth_methods`, `prompt_capabilities`, `can_*`).
//! - [`prompt`]: prompt content without I/O: `@path` mentions and the content
//!   blocks (text, resource links, embedded resources, images) the agent accepts.
//! - [`extensions`]: the Spindle streaming extensions and their opt-in
//!   (re-exported from `spindle_wire`).
//! - `schema_check` (feature `schema-check`, for tests): validation of
//!   emitted messages against the official ACP JSON Schemas.
//!
//! Versions: [`ProtocolChoice::V1`] is the default; v2 (a draft) is opt-in
//! with [`ProtocolChoice::V2Preferred`], which falls back to v1 when the agent
//! answers `1` or rejects the v2 `initialize`. The negotiated version is
//! [`AcpClient::protocol_version`]. In both versions the end of a turn is one
//! [`ClientEvent::TurnFinished`] (v1: from the prompt response; v2: from the
//! `state_update` idle that ends the work, never repeated for a repeated
//! snapshot).
//!
//! Extensions: with [`ClientOptions::spindle_extensions`] the `initialize`
//! request carries `"_meta": {"spindle": {"extensions": [...]}}`; agents
//! should emit `agent_message_clear`, `agent_thought_clear`,
//! `session_cleared` and `clear_boundary` only to clients that list them.
//! The client accepts them either way.
//!
//! ```
//! use spindle_protocol::{AcpClient, ClientEvent, ClientOptions, Connection, Message, Incoming};
//! use spindle_protocol::jsonrpc::to_raw;
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let (client_end, mut agent_end) = Connection::memory();
//! // A scripted agent: answers initialize with v1, then sends one update.
//! tokio::spawn(async move {
//!     while let Some(Incoming::Message(Message::Request { id, method, .. })) =
//!         agent_end.receiver.recv().await
//!     {
//!         assert_eq!(method, "initialize");
//!         let result = to_raw(&json!({"protocolVersion": 1, "agentCapabilities": {}})).unwrap();
//!         agent_end.sender.send(Message::response_ok(id, result)).await.unwrap();
//!         let update = json!({"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
//!             "content": {"type": "text", "text": "hi"}}});
//!         agent_end.sender.send(Message::notification("session/update", &update).unwrap()).await.unwrap();
//!     }
//! });
//! let (client, mut events) = AcpClient::new(client_end, ClientOptions::default());
//! let init = client.initialize().await.unwrap();
//! assert_eq!(init.protocol_version, 1);
//! loop {
//!     match events.recv().await.unwrap() {
//!         ClientEvent::SessionUpdate { session_id, params } => {
//!             assert_eq!(&*session_id, "s1");
//!             assert!(params.get().contains("agent_message_chunk"));
//!             break;
//!         }
//!         _ => {} // a diagnostic: session s1 was never created
//!     }
//! }
//! # });
//! ```
//!
//! With an agent process and the transcript engine (`spindle-engine`), the
//! way `spindle chat` uses them: the user guide's "Using the crates" example
//! (`docs/src/library.md`), compiled here as a doctest (`LibraryChapterDoctests`).
#![deny(missing_docs)]

/// The code blocks of the user guide's "Using the crates", compiled as doctests so its example
/// stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/library.md")]
struct LibraryChapterDoctests;

pub mod client;
pub mod error_answers;
pub mod extensions;
pub mod jsonrpc;
pub mod prompt;
pub mod req_queue;
#[cfg(feature = "schema-check")]
pub mod schema_check;
pub mod transport;
pub mod update_params;

pub use client::{
    AGENT_AUTH_KIND, AcpClient, AgentSessionInfo, AuthMethod, ClientCore, ClientError, ClientEvent,
    ClientEvents, ClientInfo, ClientOptions, Completion, HandshakePhase, InitializeOutcome,
    PromptCapabilities, PromptOutcome, ProtocolChoice, SessionFeatures, SessionList, WireDirection,
    WireRecord,
};
pub use jsonrpc::{DecodeError, Frame, Message, RequestId, ResponseError, decode_line};
pub use req_queue::ReqQueue;
pub use transport::{
    ChildExit, ChildHandle, Connection, ConnectionOptions, Incoming, MessageReceiver,
    MessageSender, SpawnOptions, WeakMessageSender, spawn_child,
};
pub use update_params::UpdateParams;
