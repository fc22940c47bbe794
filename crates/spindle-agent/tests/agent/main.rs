//! The reference agent's integration tests, as one test binary: the agent
//! driven over in-memory streams (`common::Peer`), its traffic validated
//! against the official schemas and decoded with the official wire types, its
//! golden recordings, and the project's own client and engine against it.
//!
//! Run one area with a filter, e.g. `cargo test -p spindle-agent --test agent
//! scenarios::`.

mod common;

mod acp_client;
mod client_methods;
mod core_props;
mod engine;
mod history;
mod insertion_races;
mod lifecycle;
mod recordings;
mod robustness;
mod scenarios;
mod script;
mod sessions;
mod typed_client;
mod typed_decode;
