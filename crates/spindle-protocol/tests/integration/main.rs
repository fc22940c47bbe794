//! spindle-protocol's integration tests, in one binary: the client against a
//! scripted agent (`client`, `client_lifecycle`), its sans-I/O core driven by
//! hand (`client_core`), against the test agent
//! (`agent_connection`) and feeding the engine (`engine_integration`),
//! properties of line decoding (`decode_properties`), and the typed calls
//! (`typed_calls`: authentication, modes, config options, session/list;
//! `session_lifecycle`: fork, delete, logout, additional directories).

mod agent_connection;
mod client;
mod client_core;
mod client_lifecycle;
mod common;
mod decode_properties;
mod engine_integration;
mod session_lifecycle;
mod test_agent;
mod typed_calls;
