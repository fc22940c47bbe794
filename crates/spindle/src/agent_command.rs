//! `spindle agent`: the deterministic reference agent on stdio, and the
//! benchmark stream generator (`--emit-stream`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use spindle_agent::{
    AgentConfig, DEFAULT_MAX_LINE_BYTES, ProtocolChoice, Script, StreamMix, Version,
};

/// Arguments of `spindle agent`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Prompts are commands: /help, /scenario NAME [ext|plain], /clear \
[session_cleared|meta], /compact, /stream N [mixed|refine|snapshot|chunks]; anything else gets a \
deterministic plain reply. Scenarios: plain, thoughts, refine, denoise, speculative, snapshot, \
tools, terminal, background, slow, notice, error, hostile, crash (exit 3), stall, and the \
client-method scenarios client-fs [FILE], client-terminal, client-terminal-forever, echo-content, \
client-all.\n\
Details: crates/spindle-agent/README.md"
)]
pub struct AgentArgs {
    /// Protocol versions to accept: 1, 2 or auto (v2 only when the client asks for it).
    #[arg(long, default_value = "auto", value_name = "1|2|auto")]
    protocol: ProtocolChoice,
    /// Pause between streamed pieces in milliseconds (0: stream as fast as possible).
    #[arg(long, default_value_t = 10, value_name = "MS")]
    delay_ms: u64,
    /// Play this JSONL script instead of the built-in scenarios.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Skip the script's sleep_ms pauses.
    #[arg(long, requires = "script")]
    no_script_sleep: bool,
    /// Context window size reported in usage updates.
    #[arg(long, default_value_t = 200_000, value_name = "TOKENS")]
    context_size: u64,
    /// Maximum size of one incoming line, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES, value_name = "BYTES")]
    max_line_bytes: usize,
    /// Write N generated session/update notifications to stdout without a
    /// handshake, then exit (the benchmark floor).
    #[arg(long, value_name = "N")]
    emit_stream: Option<u64>,
    /// Traffic mix of --emit-stream: mixed, refine, snapshot or chunks.
    #[arg(long, default_value = "mixed", value_name = "MIX")]
    mix: String,
    /// With --emit-stream: print the expected final reply (length and FNV-1a 64
    /// hash) as one JSON line instead of the stream.
    #[arg(long, requires = "emit_stream")]
    expect: bool,
    /// Append every message received and sent to FILE in the `spindle replay` recording
    /// format (as the client sees it), e.g. to validate the traffic against the schemas.
    #[arg(long, value_name = "FILE", conflicts_with = "emit_stream")]
    record: Option<PathBuf>,
    /// Answer session/new, session/load and session/resume with the auth_required error
    /// (-32000) until the client authenticates with the advertised method "spindle-token".
    #[arg(long)]
    require_auth: bool,
    /// Keep each session's history in DIR (one <sessionId>.jsonl per session), so a new agent
    /// process lists (session/list) and opens (session/load, session/resume) earlier sessions.
    /// Default: sessions live only as long as the process.
    #[arg(long, value_name = "DIR", conflicts_with = "emit_stream")]
    state_dir: Option<PathBuf>,
}

/// Runs `spindle agent`; returns the process exit code.
pub fn run(args: AgentArgs) -> anyhow::Result<u8> {
    if let Some(n) = args.emit_stream {
        return emit(&args, n);
    }
    let script = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading script {}", path.display()))?;
            let script = Script::parse(&text)
                .map_err(|e| anyhow::anyhow!("script {}: {e}", path.display()))?;
            Some(Arc::new(script))
        }
        None => None,
    };
    let config = AgentConfig {
        protocol: args.protocol,
        delay_ms: args.delay_ms,
        context_size: args.context_size,
        script,
        script_sleeps: !args.no_script_sleep,
        require_auth: args.require_auth,
        state_dir: args.state_dir.clone(),
        ..AgentConfig::default()
    };
    let recorder = match &args.record {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening the recording {}", path.display()))?;
            Some(spindle_agent::WireRecorder::new(Box::new(
                std::io::BufWriter::new(file),
            )))
        }
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let code = runtime
        .block_on(spindle_agent::run_stdio(
            config,
            args.max_line_bytes,
            recorder,
        ))
        .context("agent I/O")?;
    // tokio's stdin reader thread may still be blocked in read(2); do not
    // wait for it when a scenario asked to exit.
    runtime.shutdown_background();
    Ok(u8::try_from(code).unwrap_or(1))
}

fn emit(args: &AgentArgs, n: u64) -> anyhow::Result<u8> {
    let mix = StreamMix::parse(&args.mix).with_context(|| {
        format!(
            "unknown mix {:?}: expected mixed, refine, snapshot or chunks",
            args.mix
        )
    })?;
    let version = match args.protocol {
        ProtocolChoice::V2 => Version::V2,
        ProtocolChoice::V1 | ProtocolChoice::Auto => Version::V1,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = if args.expect {
        let expected = spindle_agent::expected_reply(version, mix, n);
        writeln!(out, "{}", expected.to_json(version, mix, n)).and_then(|()| out.flush())
    } else {
        spindle_agent::emit_stream(version, mix, n, &mut out)
    };
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        other => other.map(|()| 0).context("writing the stream"),
    }
}
