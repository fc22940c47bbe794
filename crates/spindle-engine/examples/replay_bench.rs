//! Prints the numbers recorded in BENCHMARKS.md (engine section).
//!
//! ```text
//! cargo run --release -p spindle-engine --example replay_bench            # throughput, 1,000,000 updates
//! cargo run --release -p spindle-engine --example replay_bench -- memory  # peak memory, 1 MB in 1,000 snapshots
//! ```
//! Throughput compares the engine replaying every line with plain `serde_json`
//! decoding of the same lines into the official schema type
//! (`agent_client_protocol_schema::v1::SessionNotification`), in the same run.
//! Peak memory is the growth of VmHWM (peak resident set, /proc/self/status)
//! while the engine consumes the snapshots; the generator's own buffers are
//! allocated and touched before the baseline is taken.

#[path = "../benches/support/proc_status.rs"]
mod proc_status;
#[path = "../benches/support/stream_gen.rs"]
mod stream_gen;

use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_client_protocol_schema::v1::SessionNotification;
use proc_status::status_kb;
use spindle_engine::{EngineConfig, TranscriptEngine};

#[derive(serde::Deserialize)]
struct WireNotification {
    #[allow(dead_code)]
    method: String,
    params: SessionNotification,
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if mode == "profile" {
        // Profiling aid: the batch replay alone, for `perf record`.
        let mut lines = stream_gen::mixed_stream(300_000, 42);
        if std::env::var("SPINDLE_BENCH_ONLY").as_deref() == Ok("others") {
            lines.retain(|l| !l.contains(r#""sessionUpdate":"agent_"#));
        }
        let mut engine = TranscriptEngine::new(EngineConfig::default());
        engine.set_render_ops(false);
        for line in &lines {
            black_box(engine.apply_agent_line(line));
        }
        std::mem::forget(engine);
    } else if mode == "memory" {
        memory();
    } else {
        let n = mode.parse().unwrap_or(1_000_000);
        throughput(n);
    }
}

/// CPU time of this thread in nanoseconds (/proc/thread-self/schedstat), so
/// the comparison holds on a machine shared with other work.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|f| f.parse().ok()))
        .unwrap_or(0)
}

struct Timing {
    wall: Duration,
    cpu: Duration,
}

fn timed(f: impl FnOnce()) -> Timing {
    let (wall, cpu) = (Instant::now(), cpu_ns());
    f();
    Timing {
        wall: wall.elapsed(),
        cpu: Duration::from_nanos(cpu_ns().saturating_sub(cpu)),
    }
}

fn throughput(n: usize) {
    let mut lines = stream_gen::mixed_stream(n, 42);
    // Profiling aid: SPINDLE_BENCH_ONLY=chunks|others keeps one kind of line.
    match std::env::var("SPINDLE_BENCH_ONLY").as_deref() {
        Ok("chunks") => lines.retain(|l| l.contains(r#""sessionUpdate":"agent_"#)),
        Ok("others") => lines.retain(|l| !l.contains(r#""sessionUpdate":"agent_"#)),
        _ => {}
    }
    let n = lines.len();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    println!(
        "stream: {n} updates, {:.1} MB, {:.1}% message/thought chunks",
        bytes as f64 / 1e6,
        100.0 * stream_gen::chunk_share(&lines)
    );
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    let mut ratios = Vec::new();
    let mut live_ratios = Vec::new();
    let (mut best_serde, mut best_engine) = (Duration::MAX, Duration::MAX);
    for round in 1..=5 {
        let serde = timed(|| {
            for line in &lines {
                let decoded: WireNotification = serde_json::from_str(line).expect("valid v1 line");
                black_box(&decoded.params);
            }
        });
        let mut engine = TranscriptEngine::new(EngineConfig::default());
        engine.set_render_ops(false);
        let replay = timed(|| {
            for line in &lines {
                black_box(engine.apply_agent_line(line));
            }
        });
        assert!(engine.transcript().diagnostics.is_empty());
        black_box(engine.transcript().entries.len());
        drop(engine);
        let mut engine = TranscriptEngine::new(EngineConfig::default());
        let live = timed(|| {
            for line in &lines {
                black_box(engine.apply_agent_line(line));
            }
        });
        drop(engine);
        let ratio = serde.cpu.as_secs_f64() / replay.cpu.as_secs_f64();
        let live_ratio = serde.cpu.as_secs_f64() / live.cpu.as_secs_f64();
        println!(
            "round {round}: serde_json->SessionNotification cpu {:.3} s (wall {:.3}) = {:.0} updates/s; engine replay cpu {:.3} s (wall {:.3}) = {:.0} updates/s, ratio {ratio:.2}; engine with render ops {:.0} updates/s, ratio {live_ratio:.2}",
            serde.cpu.as_secs_f64(),
            serde.wall.as_secs_f64(),
            rate(serde.cpu),
            replay.cpu.as_secs_f64(),
            replay.wall.as_secs_f64(),
            rate(replay.cpu),
            rate(live.cpu),
        );
        live_ratios.push(live_ratio);
        ratios.push(ratio);
        best_serde = best_serde.min(serde.cpu);
        best_engine = best_engine.min(replay.cpu);
    }
    ratios.sort_by(f64::total_cmp);
    live_ratios.sort_by(f64::total_cmp);
    println!(
        "best cpu: serde {:.0} updates/s, engine replay {:.0} updates/s; replay throughput ratio engine/serde: best-vs-best {:.2}, median of rounds {:.2} (target >= 0.8); with render ops: median {:.2}",
        rate(best_serde),
        rate(best_engine),
        best_serde.as_secs_f64() / best_engine.as_secs_f64(),
        ratios[ratios.len() / 2],
        live_ratios[live_ratios.len() / 2],
    );
}

fn memory() {
    const SIZE: usize = 1 << 20;
    const STEPS: usize = 1000;
    let final_text = stream_gen::plain_text(SIZE, 7);
    let mut line = String::new();
    // Touch the largest line once so the generator's buffer is in the baseline.
    stream_gen::snapshot_line(&mut line, &final_text, STEPS, STEPS);
    let baseline_kb = status_kb("VmHWM:");
    let start = Instant::now();
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    // Render ops on: the live path (each op carries only the changed suffix).
    for k in 1..=STEPS {
        stream_gen::snapshot_line(&mut line, &final_text, k, STEPS);
        black_box(engine.apply_agent_line(&line));
    }
    let elapsed = start.elapsed();
    let peak_kb = status_kb("VmHWM:");
    let text = engine.transcript().entries[0].text();
    assert_eq!(
        text, final_text,
        "snapshots must converge on the final text"
    );
    let grown = (peak_kb - baseline_kb) as f64 * 1024.0;
    println!(
        "snapshot stream: 1 message of {SIZE} bytes in {STEPS} snapshots ({:.0} MB parsed) in {:.3} s",
        (SIZE as f64 * (STEPS as f64 + 1.0) / 2.0) / 1e6,
        elapsed.as_secs_f64()
    );
    println!(
        "peak RSS growth while replaying: {:.2} MB = {:.2}x the final message (target < 3x); process VmHWM {} kB (baseline {} kB incl. generator buffers)",
        grown / 1e6,
        grown / SIZE as f64,
        peak_kb,
        baseline_kb
    );
}
