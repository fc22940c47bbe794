//! The engine's integration tests, in one test binary (one link instead of
//! four): `cargo test -p spindle-engine --test engine [filter]`.

mod api;
mod canonical_updates;
mod fixtures;
mod local;
mod properties;
mod reliability;
