//! Criterion: engine replay vs plain `serde_json` decoding into the official
//! schema type, on the same generated mixed stream (80% message chunks), plus
//! the snapshot-style stream. Full-size numbers: `examples/replay_bench.rs`.

#[path = "support/stream_gen.rs"]
mod stream_gen;

use std::hint::black_box;

use agent_client_protocol_schema::v1::SessionNotification;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use spindle_engine::{EngineConfig, TranscriptEngine};

#[derive(serde::Deserialize)]
struct WireNotification {
    #[allow(dead_code)]
    method: String,
    params: SessionNotification,
}

fn mixed(c: &mut Criterion) {
    let lines = stream_gen::mixed_stream(20_000, 42);
    let mut group = c.benchmark_group("mixed_20k");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function("serde_json_to_SessionNotification", |b| {
        b.iter(|| {
            for line in &lines {
                let decoded: WireNotification = serde_json::from_str(line).unwrap();
                black_box(&decoded.params);
            }
        })
    });
    group.bench_function("engine_replay", |b| {
        b.iter(|| {
            let mut engine = TranscriptEngine::new(EngineConfig::default());
            engine.set_render_ops(false);
            for line in &lines {
                black_box(engine.apply_agent_line(line));
            }
            engine
        })
    });
    group.bench_function("engine_with_render_ops", |b| {
        b.iter(|| {
            let mut engine = TranscriptEngine::new(EngineConfig::default());
            for line in &lines {
                black_box(engine.apply_agent_line(line));
            }
            engine
        })
    });
    group.finish();
}

fn snapshots(c: &mut Criterion) {
    let final_text = stream_gen::plain_text(64 * 1024, 7);
    let mut group = c.benchmark_group("snapshot_64k_in_100");
    group.bench_function("engine_replay", |b| {
        let mut line = String::new();
        b.iter(|| {
            let mut engine = TranscriptEngine::new(EngineConfig::default());
            for k in 1..=100 {
                stream_gen::snapshot_line(&mut line, &final_text, k, 100);
                black_box(engine.apply_agent_line(&line));
            }
            engine
        })
    });
    group.finish();
}

criterion_group!(benches, mixed, snapshots);
criterion_main!(benches);
