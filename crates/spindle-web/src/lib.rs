//! spindle-web: the server behind `spindle serve`.
#![deny(missing_docs)]

pub mod hub;
pub mod security;
pub mod store;
