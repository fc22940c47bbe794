//! The bridge's integration tests, one binary with a module per concern
//! (BRIDGE.md names them): `v2_client_v1_agent` (**A**), `v1_client_v2_agent`
//! (**B**), `passthrough` (**P**), `bridged_transcript_props` (**Prop**),
//! `session_methods` (**S**), and
//! `bridge_doc`, which checks that every test BRIDGE.md names exists.

#[path = "common/mod.rs"]
mod common;

#[path = "bridge/bridge_doc.rs"]
mod bridge_doc;
#[path = "bridge/bridged_transcript_props.rs"]
mod bridged_transcript_props;
#[path = "bridge/passthrough.rs"]
mod passthrough;
#[path = "bridge/session_methods.rs"]
mod session_methods;
#[path = "bridge/v1_client_v2_agent.rs"]
mod v1_client_v2_agent;
#[path = "bridge/v2_client_v1_agent.rs"]
mod v2_client_v1_agent;
#[path = "bridge/v2_inline_content.rs"]
mod v2_inline_content;
#[path = "bridge/v2_only_values.rs"]
mod v2_only_values;
