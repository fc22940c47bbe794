//! v1 client in front of a v2 agent, one module per concern of BRIDGE.md:
//! the client's v1 requests are lifted to v2 and the agent's answers brought
//! back ([`requests`]), the v1 prompt is held open until idle with a
//! stopReason ([`prompt_lifecycle`]), message upserts fan out into chunks
//! only where docs/src/semantics.md allows it ([`messages`]), tool-call upserts become
//! `tool_call` + `tool_call_update` ([`tools`]), plans collapse into the v1
//! plan ([`plans`]); [`updates`] routes each
//! agent update to its concern, [`modes`] shows config options as v1
//! modes, [`output`] sends and reports, [`state`] holds what the client
//! already shows.

pub(crate) mod diffs;
pub(crate) mod messages;
pub(crate) mod modes;
pub(crate) mod output;
pub(crate) mod plans;
pub(crate) mod prompt_lifecycle;
pub(crate) mod requests;
pub(crate) mod state;
pub(crate) mod tools;
pub(crate) mod updates;
