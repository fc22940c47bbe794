//! Interop peers built on the official ACP Rust SDK; filled in by the interop work.
#![deny(missing_docs)]
