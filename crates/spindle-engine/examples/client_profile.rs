//! Where a client's time and memory go on a recorded `session/update` stream,
//! stage by stage, in one process (no pipe, no async runtime).
//!
//! ```text
//! spindle agent --emit-stream 1000000 --mix mixed > /tmp/mixed.jsonl
//! cargo run --release -p spindle-engine --example client_profile -- /tmp/mixed.jsonl [KIND]
//! ```
//! Stages, each timed on its own over the whole stream: framing (split into
//! lines), envelope decode (the JSON-RPC envelope with `params` left raw, as
//! the client runtime does), the engine applying each `params`
//! (`apply_session_update`, render ops off, what `spindle chat --prompt`
//! does), and building the final reply. Memory: the growth of the peak
//! resident set (VmHWM) while the engine applies the stream, on top of the
//! stream and its decoded lines already in memory. `KIND` (`message`,
//! `thought`, `tool`, `other`; default all) applies only those updates, to
//! split the engine's cost by update kind.

#[path = "../benches/support/proc_status.rs"]
mod proc_status;

use std::hint::black_box;
use std::time::Instant;

use proc_status::status_kb;
use serde::Deserialize;
use serde_json::value::RawValue;
use spindle_engine::{EngineConfig, TranscriptEngine};

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    #[allow(dead_code)]
    method: &'a str,
    #[serde(borrow)]
    params: &'a RawValue,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: client_profile STREAM.jsonl [message|thought|tool|other]");
    let kind = args.next().unwrap_or_else(|| "all".into());
    let keep = |p: &str| match kind.as_str() {
        "message" => p.contains("\"agent_message_chunk\""),
        "thought" => p.contains("\"agent_thought_chunk\""),
        "tool" => p.contains("\"tool_call"),
        "other" => !p.contains("_chunk\"") && !p.contains("\"tool_call"),
        _ => true,
    };
    let data = std::fs::read_to_string(&path).expect("read the stream");

    let t = Instant::now();
    let lines: Vec<&str> = data.lines().filter(|l| !l.is_empty()).collect();
    let framing = t.elapsed();

    let t = Instant::now();
    let params: Vec<&str> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<Envelope<'_>>(l)
                .expect("a notification")
                .params
                .get()
        })
        .collect();
    let decode = t.elapsed();
    let params: Vec<&str> = params.into_iter().filter(|p| keep(p)).collect();
    let n = params.len();

    // Reset the peak to the current resident set (Linux 4.0+), so the growth
    // below is the engine's alone.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = status_kb("VmRSS:");
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    engine.set_render_ops(false);
    engine.apply_user_prompt(r#"[{"type":"text","text":"/stream"}]"#);
    let t = Instant::now();
    for p in &params {
        black_box(engine.apply_session_update(p));
    }
    let apply = t.elapsed();
    let hwm_apply = status_kb("VmHWM:");
    let t = Instant::now();
    let reply = engine.final_reply().unwrap_or_default();
    let build = t.elapsed();
    println!(
        "stream {:.1} MB, {} lines; framing {:.3} s; envelope decode (params raw) {:.3} s",
        data.len() as f64 / 1e6,
        lines.len(),
        framing.as_secs_f64(),
        decode.as_secs_f64()
    );
    println!(
        "{kind}: {n} updates; engine apply {:.3} s ({:.0} ns/update); final reply {:.3} s ({} bytes); {} entries, {} diagnostics",
        apply.as_secs_f64(),
        apply.as_nanos() as f64 / n.max(1) as f64,
        build.as_secs_f64(),
        reply.len(),
        engine.transcript().entries.len(),
        engine.transcript().diagnostics.len(),
    );
    println!(
        "peak RSS growth while applying: {:.1} MB (VmRSS before {} kB, VmHWM after apply {} kB)",
        (hwm_apply.saturating_sub(rss_before)) as f64 / 1024.0,
        rss_before,
        hwm_apply
    );
}
