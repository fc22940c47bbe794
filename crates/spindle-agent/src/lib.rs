//! spindle-agent: the deterministic reference ACP agent and the benchmark
//! stream generator.
//!
//! The agent speaks ACP v1 and v2 over newline-delimited JSON-RPC. It needs
//! no network and no API key; every behaviour is chosen by the prompt text
//! (`/help`, `/scenario refine`, `/stream 1000 mixed`, ...), and the same
//! prompts always produce the same bytes.
//!
//! [`AgentCore`] is sans-I/O: lines in, lines out, time passed in by the
//! caller. [`run_agent`] drives it over any `AsyncBufRead + AsyncWrite`.
//!
//! ```
//! use spindle_agent::{AgentConfig, AgentCore, Next};
//!
//! let mut agent = AgentCore::new(AgentConfig::default());
//! agent.handle_line(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#);
//! agent.handle_line(r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#);
//! agent.handle_line(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"hi"}]}}"#);
//! let mut out = Vec::new();
//! loop {
//!     let next = agent.advance(0);
//!     out.extend(agent.take_output());
//!     if next != Next::Ready {
//!         break;
//!     }
//! }
//! let out = String::from_utf8(out).unwrap();
//! assert!(out.contains(r#""stopReason":"end_turn""#));
//! ```
#![deny(missing_docs)]

mod core;
mod driver;
pub mod history;
mod history_turn;
mod hostile;
mod mcp_report;
mod program;
pub mod scenarios;
mod script;
pub mod state_dir;
pub mod stream_gen;
pub mod terminal;
mod turn_context;
pub mod updates;
pub mod wire;

pub use crate::core::{AgentConfig, AgentCore, Next};
pub use crate::driver::{WireRecorder, run_agent, run_agent_recorded, run_stdio};
pub use crate::history::{PersistedLine, StoredSession};
pub use crate::hostile::{
    HOSTILE_END, HOSTILE_PIECES, HUGE_CHUNK_BYTES, UNKNOWN_BLOCK_TYPE, UNKNOWN_UPDATE_KIND,
    huge_text,
};
pub use crate::script::Script;
pub use crate::stream_gen::{ExpectedReply, StreamGenerator, StreamMix, expected_reply};
pub use crate::wire::{ProtocolChoice, Version};
/// The default limit on one incoming line (the workspace-wide default).
pub use spindle_wire::DEFAULT_MAX_LINE_BYTES;
/// The Spindle extensions a client opts into in `initialize`.
pub use spindle_wire::extensions::{Extension, Extensions};

/// Writes `n` generated notifications of `mix` to `w` with no handshake (the
/// benchmark floor). Session id `sess_1`, as in the first session of a live
/// agent, so the text equals that of `/stream N mix`.
pub fn emit_stream<W: std::io::Write>(
    version: Version,
    mix: StreamMix,
    n: u64,
    w: &mut W,
) -> std::io::Result<()> {
    const BUF: usize = 1 << 20;
    let mut generator = StreamGenerator::new(version, mix, "sess_1", n);
    let mut buf = Vec::with_capacity(BUF + 64 * 1024);
    loop {
        let done = generator.write_until(&mut buf, BUF);
        w.write_all(&buf)?;
        buf.clear();
        if done {
            return w.flush();
        }
    }
}
