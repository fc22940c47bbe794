//! The one integration-test binary of `spindle-host`: every method's answers
//! and errors (`error_answers`: the table of every error answer), the scoping rules against escapes (and the additional
//! directories that widen the scope), and the processes.

mod additional_dirs;
mod engine_display;
mod error_answers;
mod fs;
mod mention;
mod permission;
mod security;
mod support;
mod terminals;
