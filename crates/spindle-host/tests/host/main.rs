//! The one integration-test binary of `spindle-host`: every method's answers
//! and errors, the scoping rules against escapes, and the processes.

mod engine_display;
mod fs;
mod mention;
mod permission;
mod security;
mod support;
mod terminals;
