//! The `spindle` binary's end-to-end tests, as one test binary (one link
//! instead of one per file): each module drives the real binary
//! (`CARGO_BIN_EXE_spindle`) as a user or a peer would.
//!
//! Run one area with a filter, e.g. `cargo test -p spindle --test end_to_end
//! chat_`; the `#[ignore]`d load sizes with
//! `cargo test -p spindle --release --test end_to_end load_ -- --ignored --nocapture --test-threads 1`.
//! `tests/fault_client.rs` stays a binary of its own (it measures its own
//! process's memory).

// Shared support.
mod harness;
mod remote_support;
mod serve_support;

// `spindle agent`, `spindle replay`, `spindle bridge`.
mod agent_cli;
mod bridge_e2e;
mod replay_cli;

// `spindle chat`.
mod chat_checkpoints;
mod chat_elicitation;
mod chat_faults;
mod chat_features;
mod chat_features_tmux;
mod chat_history;
mod chat_mcp;
mod chat_piped;
mod chat_prompt;
mod chat_prompts_tmux;
mod chat_sessions;
mod chat_tmux;
mod chat_tui_tmux;

// `spindle serve`.
mod security_web;
mod serve_agents;
mod serve_checkpoints;
mod serve_defaults;
mod serve_durability;
mod serve_elicitation;
mod serve_faults;
mod serve_features;
mod serve_host_security;
mod serve_http;
mod serve_idle;
mod serve_markdown;
mod serve_mcp;
mod serve_queue;
mod serve_sessions;
mod serve_sessions_edit;
mod serve_sessions_lifecycle;
mod serve_users;
mod serve_wire;

// `/acp`: remote clients of `spindle serve` and `spindle bridge --listen`.
mod remote_attach;
mod remote_bridge;
mod remote_client_connect;
mod remote_client_faults;
mod remote_errors;
mod remote_http;
mod remote_limits;
mod remote_resume;
mod remote_setup;

// Several replicas on one PostgreSQL database (issue 17).
mod replicas;

// Faults and load (RELIABILITY.md).
mod fault_agent;
mod fault_bridge;
mod fault_replay;
mod fault_web;
mod load_replay;
mod load_web;
mod load_web_large_session;
