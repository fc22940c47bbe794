//! The bridge's translation of agent lines in process, without pipes: the
//! time `Bridge::from_agent` takes per chunk line, best of several rounds
//! (steadier than `bridge_throughput` on a loaded machine, since it leaves
//! out the pipe hops and thread wake-ups both paths share).
//!
//! Run: `cargo run --release -p spindle-bridge --example bridge_translate_cpu [N] [ROUNDS]`

use std::hint::black_box;
use std::time::{Duration, Instant};

mod support;

use support::{chunk_line, initialized_bridge};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(300_000);
    let rounds: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    for (name, client, agent, escaped) in [
        ("v1 agent -> v2 client (spliced id)", 2, 1, false),
        ("v2 agent -> v1 client (verbatim)", 1, 2, false),
        ("v2 agent -> v1 client, escaped text", 1, 2, true),
    ] {
        let lines: Vec<String> = (0..n).map(|i| chunk_line(agent, i, escaped)).collect();
        let mut best = Duration::MAX;
        for _ in 0..rounds {
            let mut b = initialized_bridge(client, agent);
            let start = Instant::now();
            for l in &lines {
                black_box(b.from_agent(black_box(l)));
            }
            best = best.min(start.elapsed());
        }
        let ns = best.as_nanos() as f64 / n as f64;
        println!("{name:40} {ns:7.1} ns/line (best of {rounds}, {n} lines)");
    }
}
