//! `spindle replay`: rebuild a transcript from a recorded JSONL stream.
//!
//! Input: JSONL in wire order. A bare JSON-RPC message is one the client
//! received from the agent; `{"sent": <message>}` is one the client sent.
//! Exit codes: 0 = replayed cleanly, 1 = replayed with diagnostics (see the
//! `diagnostics` array), 2 = could not read the input.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
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
    let engine = replay_reader(BufReader::new(input), config)
        .with_context(|| format!("cannot read {}", args.file.display()))?;

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        ReplayFormat::Json => {
            write_replay_json(&mut out, &engine)?;
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

/// Writes `serde_json::to_writer_pretty(engine.replay_json())` byte for byte, one entry at a time:
/// a session of 100,000 entries never has all of their JSON in memory at once.
fn write_replay_json(out: &mut impl Write, engine: &TranscriptEngine) -> std::io::Result<()> {
    // Pretty JSON has no raw newline inside strings, so this line is the top-level key only.
    const SLOT: &str = "\n  \"entries\": []";
    let shell = serde_json::to_string_pretty(&engine.replay_json_without_entries())?;
    let entries = &engine.transcript().entries;
    let Some(at) = shell.find(SLOT).filter(|_| !entries.is_empty()) else {
        return out.write_all(shell.as_bytes());
    };
    let (head, tail) = shell.split_at(at + SLOT.len() - 1);
    out.write_all(head.as_bytes())?;
    for (index, entry) in entries.iter().enumerate() {
        out.write_all(if index == 0 { b"\n" } else { b",\n" })?;
        let pretty = serde_json::to_string_pretty(&entry.replay_json())?;
        for (line_index, line) in pretty.lines().enumerate() {
            if line_index > 0 {
                out.write_all(b"\n")?;
            }
            out.write_all(b"    ")?;
            out.write_all(line.as_bytes())?;
        }
    }
    out.write_all(b"\n  ")?;
    out.write_all(tail.as_bytes())
}

/// Streams a recording line by line (one reused buffer, so memory stays at
/// the size of the longest line plus the transcript).
fn replay_reader(
    mut reader: impl BufRead,
    config: EngineConfig,
) -> std::io::Result<TranscriptEngine> {
    let mut engine = TranscriptEngine::new(config);
    // Batch replay: nothing renders, so skip building render ops.
    engine.set_render_ops(false);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        line_no += 1;
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        engine.set_next_line_number(line_no);
        engine.apply_recorded_line(line);
    }
    Ok(engine)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every golden fixture: the streamed writer prints exactly what pretty-printing the whole
    /// object does.
    #[test]
    fn streamed_json_equals_the_whole_object_pretty_printed() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut checked = 0;
        for path in std::fs::read_dir(&dir)
            .expect("fixtures")
            .flatten()
            .map(|e| e.path())
        {
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let file = File::open(&path).expect("fixture");
            let engine =
                replay_reader(BufReader::new(file), EngineConfig::default()).expect("read");
            let mut streamed = Vec::new();
            write_replay_json(&mut streamed, &engine).expect("write");
            let whole = serde_json::to_string_pretty(&engine.replay_json()).expect("pretty");
            assert_eq!(
                String::from_utf8(streamed).unwrap(),
                whole,
                "{}",
                path.display()
            );
            checked += 1;
        }
        assert!(checked > 10, "only {checked} fixtures found");
        // No entries at all: the object as it is.
        let empty = TranscriptEngine::new(EngineConfig::default());
        let mut streamed = Vec::new();
        write_replay_json(&mut streamed, &empty).expect("write");
        let whole = serde_json::to_string_pretty(&empty.replay_json()).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), whole);
    }
}
