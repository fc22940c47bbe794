//! Criterion: the framing path (line reader + decode + hand-over) against
//! plain `serde_json` decoding of the same lines into a borrowed envelope.
//! Full-size numbers (1,000,000 updates): `examples/framing_throughput.rs`
//! and `examples/client_throughput.rs`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::value::RawValue;
use spindle_protocol::Incoming;
use spindle_protocol::transport::decode_stream;

#[path = "../examples/support/mod.rs"]
mod support;

const LINES: usize = 20_000;

fn input() -> Vec<u8> {
    support::chunk_lines(LINES, "sess_1", 6)
}

#[derive(serde::Deserialize)]
struct Plain<'a> {
    #[allow(dead_code)]
    method: &'a str,
    #[serde(borrow)]
    params: &'a RawValue,
}

fn framing(c: &mut Criterion) {
    let bytes = input();
    let text = std::str::from_utf8(&bytes).expect("utf-8");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("updates_20k");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("serde_json_borrowed_envelope", |b| {
        b.iter(|| {
            for line in text.lines() {
                let decoded: Plain<'_> = serde_json::from_str(line).expect("json");
                black_box(decoded.params);
            }
        })
    });
    group.bench_function("spindle_decode_stream", |b| {
        b.iter(|| {
            let input = bytes.clone();
            runtime.block_on(async move {
                let mut n = 0usize;
                decode_stream(std::io::Cursor::new(input), 1 << 20, |item| {
                    if matches!(item, Incoming::Message(_)) {
                        n += 1;
                    }
                })
                .await;
                assert_eq!(n, LINES);
            })
        })
    });
    group.finish();
}

criterion_group!(benches, framing);
criterion_main!(benches);
