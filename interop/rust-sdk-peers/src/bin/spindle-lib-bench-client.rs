//! Spindle's client runtime (`spindle-protocol`'s `AcpClient`) feeding
//! `spindle-engine`'s `TranscriptEngine`: the same work `spindle chat --prompt`
//! does minus the terminal, used by the benchmark when the binary's chat is
//! missing. Same interface and output as `sdk-bench-client`.
//!
//! `spindle-lib-bench-client [--runtime-only] [--multi-thread] [--protocol 1|2] PROMPT -- AGENT_CMD...`
//!
//! `--runtime-only` skips the engine (counts notifications, hashes nothing): the
//! runtime's share of the cost, for the benchmark's profile note.
//!
//! Settings (the ones `spindle chat --prompt` should use): render ops off (only
//! the final reply is read) and a current-thread tokio runtime.
//! `--multi-thread` pipelines instead: a multi-thread runtime with one worker,
//! where the client's reader and dispatch tasks frame and decode the next
//! lines while this thread applies updates to the engine. On the shared
//! 2-core benchmark machine that cost more CPU (cross-thread wake-ups) and
//! more memory (events queue up whenever this thread is descheduled) than it
//! saved, so it is measured as its own row, not the default.

use std::ffi::OsString;

use serde_json::json;
use spindle_engine::{EngineConfig, TranscriptEngine};
use spindle_interop_rust_sdk::fnv1a64;
use spindle_protocol::transport::{SpawnOptions, spawn_child};
use spindle_protocol::{AcpClient, ClientEvent, ClientOptions, ProtocolChoice};

fn main() -> std::process::ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut protocol = ProtocolChoice::V1;
    let mut runtime_only = false;
    let mut multi_thread = false;
    loop {
        match args.first().map(String::as_str) {
            Some("--runtime-only") => runtime_only = true,
            Some("--multi-thread") => multi_thread = true,
            _ => break,
        }
        args.remove(0);
    }
    if args.first().map(String::as_str) == Some("--protocol") && args.len() > 1 {
        if args[1] == "2" {
            protocol = ProtocolChoice::V2Preferred;
        }
        args.drain(..2);
    }
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: spindle-lib-bench-client [--protocol 1|2] PROMPT -- AGENT_CMD...");
        return std::process::ExitCode::from(2);
    };
    let prompt = args[..split].join(" ");
    let command: Vec<OsString> = args[split + 1..].iter().map(OsString::from).collect();
    let runtime = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    }
    .expect("tokio runtime");
    match runtime.block_on(run(protocol, prompt, command, runtime_only)) {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("spindle-lib-bench-client: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(
    protocol: ProtocolChoice,
    prompt: String,
    command: Vec<OsString>,
    runtime_only: bool,
) -> Result<String, Box<dyn std::error::Error>> {
    // Plain text chunks scanned once, from the pipe to the transcript (as `spindle chat`).
    let mut spawn = SpawnOptions::default();
    spawn.connection.scan_chunk_updates = true;
    let (connection, _child) = spawn_child(&command, spawn)?;
    let options = ClientOptions {
        protocol,
        spindle_extensions: true,
        ..Default::default()
    };
    let (client, mut events) = AcpClient::new(connection, options);
    client.initialize().await?;
    let cwd = std::env::temp_dir().to_string_lossy().into_owned();
    let (session, _) = client.new_session(&cwd, &json!([])).await?;
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    // Only the final reply is read: no render ops to build.
    engine.set_render_ops(false);
    let blocks = json!([{"type": "text", "text": prompt}]);
    let v2 = client.protocol_version() == Some(2);
    // v1: the turn starts with the prompt. v2: it starts when the agent accepts
    // the prompt (its response); updates queued before that, such as the
    // agent's session-start message, precede the turn.
    if !v2 {
        engine.apply_user_prompt(&blocks.to_string());
    }
    client.send_prompt(&session, &blocks).await?;
    let mut notifications = 0u64;
    loop {
        match events
            .recv()
            .await
            .ok_or("agent connection closed mid-turn")?
        {
            ClientEvent::SessionUpdate { params, .. } => {
                notifications += 1;
                if !runtime_only {
                    engine.apply_scanned_session_update(params.get(), params.plain_chunk());
                }
            }
            ClientEvent::PromptResponse { result, .. } => {
                if v2 {
                    engine.apply_user_prompt(&blocks.to_string());
                }
                let response = result.as_ref().map(|r| r.get()).map_err(|e| e.get());
                engine.apply_prompt_response(response);
            }
            ClientEvent::TurnFinished { stop_reason, .. } => {
                // Borrowed pieces: no copy of a reply that may be most of the transcript.
                let pieces = engine.final_reply_pieces();
                let (mut len, mut hash) = (0usize, FNV_OFFSET);
                for piece in &pieces {
                    len += piece.len();
                    hash = fnv1a64_continue(hash, piece.as_bytes());
                }
                debug_assert_eq!(hash, fnv1a64(pieces.concat().as_bytes()));
                return Ok(format!(
                    "{{\"replyBytes\":{},\"replyFnv1a64\":\"{:016x}\",\"notifications\":{},\"stopReason\":\"{}\"}}",
                    len,
                    hash,
                    notifications,
                    stop_reason.unwrap_or_default()
                ));
            }
            _ => {}
        }
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a 64 continued over more bytes (`fnv1a64` of a concatenation).
fn fnv1a64_continue(mut hash: u64, bytes: &[u8]) -> u64 {
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
