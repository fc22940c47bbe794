//! `spindle replay`: rebuild a transcript from a recorded JSONL stream.
//!
//! Input: JSONL in wire order. A bare JSON-RPC message is one the client
//! received from the agent; `{"sent": <message>}` is one the client sent.
//! Exit codes: 0 = replayed cleanly, 1 = replayed with diagnostics (see the
//! `diagnostics` array), 2 = could not read the input.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use spindle_engine::{EngineConfig, ProtocolHint, StreamingPolicy, TranscriptEngine};

/// Output format of `spindle replay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayFormat {
    /// One JSON object: protocol, entries, state, usage, finalReply, diagnostics, ...
    Json,
    /// A human-readable transcript.
    Text,
}

/// Protocol version of the recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayProtocol {
    /// Protocol v1.
    #[value(name = "1")]
    V1,
    /// Protocol v2.
    #[value(name = "2")]
    V2,
    /// Infer from the stream.
    Auto,
}

/// Arguments of `spindle replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Protocol version of the recording.
    #[arg(long, value_enum, default_value = "auto")]
    pub protocol: ReplayProtocol,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    pub format: ReplayFormat,
    /// Treat every agent chunk as a snapshot of its whole message (for agents
    /// that stream cumulative text); a chunk's `_meta.spindle.snapshot` wins.
    #[arg(long)]
    pub snapshot: bool,
    /// The recording (JSONL); `-` reads standard input.
    pub file: PathBuf,
}

/// Runs `spindle replay`; returns the process exit code.
pub fn run(args: ReplayArgs) -> anyhow::Result<u8> {
    let config = EngineConfig {
        protocol: match args.protocol {
            ReplayProtocol::V1 => ProtocolHint::V1,
            ReplayProtocol::V2 => ProtocolHint::V2,
            ReplayProtocol::Auto => ProtocolHint::Auto,
        },
        streaming: if args.snapshot {
            StreamingPolicy::Snapshot
        } else {
            StreamingPolicy::Delta
        },
    };
    let input: Box<dyn Read> = if args.file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = File::open(&args.file)
            .with_context(|| format!("cannot open {}", args.file.display()))?;
        Box::new(file)
    };
    let engine = TranscriptEngine::replay_recording(BufReader::new(input), config)
        .with_context(|| format!("cannot read {}", args.file.display()))?;

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        ReplayFormat::Json => {
            engine.write_replay_json_pretty(&mut out)?;
            out.write_all(b"\n")?;
        }
        ReplayFormat::Text => out.write_all(engine.render_text().as_bytes())?,
    }
    out.flush()?;
    Ok(if engine.transcript().diagnostics.is_empty() {
        0
    } else {
        1
    })
}
