//! Interop peers and benchmark consumers built on the official ACP Rust SDK
//! (`agent-client-protocol`), kept small and written only against its public API.
//!
//! - `sdk-test-agent`: a deterministic ACP agent (v1, or v2 with `--protocol 2`)
//!   that Spindle's client is tested against.
//! - `sdk-bench-client`: a client that spawns an agent command, sends one prompt
//!   and rebuilds the reply text from the notifications, for the benchmark.
//!
//! ```
//! use spindle_interop_rust_sdk::fnv1a64;
//! assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
//! ```
#![deny(missing_docs)]

pub mod test_agent;

/// The chunks of the plain reply of `sdk-test-agent`, in order.
pub const PLAIN_REPLY_CHUNKS: [&str; 4] = [
    "Hello from the ",
    "official Rust SDK test agent. ",
    "This reply arrives ",
    "in four chunks.",
];

/// The thought the test agent streams before every reply.
pub const THOUGHT_TEXT: &str = "Considering the request.";

/// Reply after the permission request was allowed.
pub const TOOL_ALLOWED_REPLY: &str = "Permission granted: read notes.txt (3 lines).";

/// Reply after the permission request was rejected or cancelled.
pub const TOOL_REJECTED_REPLY: &str = "Permission denied: nothing was read.";

/// The prompt word that makes the test agent run a tool call with a permission request.
pub const TOOL_PROMPT_WORD: &str = "tool";

/// Whether `prompt` asks the test agent for its tool call: it holds the word
/// [`TOOL_PROMPT_WORD`].
pub fn asks_for_tool(prompt: &str) -> bool {
    prompt
        .split_whitespace()
        .any(|word| word == TOOL_PROMPT_WORD)
}

/// Runs `future` to its end on a current-thread tokio runtime (each peer's
/// `main` runs its work this way).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(future)
}

/// The plain reply as one string.
pub fn plain_reply() -> String {
    PLAIN_REPLY_CHUNKS.concat()
}

/// FNV-1a 64-bit hash, the digest every benchmark consumer prints.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_published_vectors() {
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
