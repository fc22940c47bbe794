//! Measures the framing path: N `session/update` lines (default 1,000,000)
//! decoded by the connection reader and drained from its channel.
//!
//! `cargo run --release -p spindle-protocol --example framing_throughput [N]`

use std::time::Instant;

use spindle_protocol::Incoming;
use spindle_protocol::transport::decode_stream;

mod support;

fn main() {
    let n = support::count_arg(1_000_000);
    let input = support::chunk_lines(n, "sess_0123456789", 8);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let bytes = input.len();
    // Decoding alone, without I/O or channels, for comparison.
    let start = Instant::now();
    let mut decoded = 0usize;
    for line in input.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let text = std::str::from_utf8(line).expect("utf-8");
        if spindle_protocol::decode_line(text).is_ok() {
            decoded += 1;
        }
    }
    assert_eq!(decoded, n);
    println!("decode_line only: {:.3} s", start.elapsed().as_secs_f64());
    let start = Instant::now();
    let count = rt.block_on(async move {
        let mut messages = 0usize;
        decode_stream(
            std::io::Cursor::new(input),
            64 * 1024 * 1024,
            |item| match item {
                Incoming::Message(_) | Incoming::ScannedUpdate(_) => messages += 1,
                Incoming::Malformed { error, .. } => panic!("{error}"),
                Incoming::Closed { .. } => {}
            },
        )
        .await;
        messages
    });
    let elapsed = start.elapsed();
    assert_eq!(count, n);
    println!(
        "{n} messages, {:.1} MB in {:.3} s ({:.0} MB/s, {:.0} ns/message)",
        bytes as f64 / 1e6,
        elapsed.as_secs_f64(),
        bytes as f64 / 1e6 / elapsed.as_secs_f64(),
        elapsed.as_nanos() as f64 / n as f64
    );
}
