//! Throughput and latency of the bridge's proxy loop against a plain line
//! relay, measured in the same run over real OS pipes:
//!
//! producer thread -> pipe -> pump (relay | bridge) -> pipe -> consumer thread
//!
//! The pump is the same loop for both (64 KiB buffers, flush when no more
//! input is buffered, as `spindle bridge` does); only the per-line work
//! differs: the relay copies the line, the bridge runs `Bridge::from_agent`.
//!
//! Run: `cargo run --release -p spindle-bridge --example bridge_throughput [N] [PINGS]`
//! Prints msgs/s for each, the ratio bridge/relay, and the p50/p99 latency
//! per message in a ping-pong run (one message in flight) with the added p99.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use spindle_bridge::Bridge;

mod support;

use support::{chunk_line, initialized_bridge};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Relay,
    /// v1 agent chunks without messageId -> v2 client (spliced id).
    BridgeV1AgentToV2Client,
    /// v2 agent chunks with messageId -> v1 client (verbatim after routing).
    BridgeV2AgentToV1Client,
}

fn bridge_for(mode: Mode) -> Option<Bridge> {
    let (client, agent) = match mode {
        Mode::Relay => return None,
        Mode::BridgeV1AgentToV2Client => (2, 1),
        Mode::BridgeV2AgentToV1Client => (1, 2),
    };
    Some(initialized_bridge(client, agent))
}

/// The proxy loop: lines in, lines out.
fn pump(input: impl Read, output: impl Write, mode: Mode) -> std::io::Result<()> {
    let mut bridge = bridge_for(mode);
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut writer = BufWriter::with_capacity(64 * 1024, output);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let l = line.trim_end_matches(['\n', '\r']);
        match bridge.as_mut() {
            None => {
                let owned = l.to_owned();
                writer.write_all(owned.as_bytes())?;
                writer.write_all(b"\n")?;
            }
            Some(b) => {
                let t = b.from_agent(l);
                for out in &t.to_client {
                    writer.write_all(out.as_bytes())?;
                    writer.write_all(b"\n")?;
                }
            }
        }
        if reader.buffer().is_empty() {
            writer.flush()?;
        }
    }
    writer.flush()
}

/// Streams `n` lines through the pump; returns messages per second.
fn throughput(mode: Mode, version: u16, n: u64) -> f64 {
    let lines: Vec<String> = (0..n).map(|i| chunk_line(version, i, false)).collect();
    let (in_r, mut in_w) = std::io::pipe().expect("pipe");
    let (out_r, out_w) = std::io::pipe().expect("pipe");
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        let mut w = BufWriter::with_capacity(64 * 1024, &mut in_w);
        for l in &lines {
            w.write_all(l.as_bytes()).unwrap();
            w.write_all(b"\n").unwrap();
        }
        w.flush().unwrap();
    });
    let pumper = std::thread::spawn(move || pump(in_r, out_w, mode).unwrap());
    let mut count = 0u64;
    for l in BufReader::with_capacity(64 * 1024, out_r).lines() {
        l.unwrap();
        count += 1;
    }
    producer.join().unwrap();
    pumper.join().unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(count, n, "{mode:?} lost lines");
    n as f64 / secs
}

/// Ping-pong: one message in flight; returns sorted per-message latencies.
fn latencies(mode: Mode, version: u16, pings: u64) -> Vec<Duration> {
    let (in_r, in_w) = std::io::pipe().expect("pipe");
    let (out_r, out_w) = std::io::pipe().expect("pipe");
    let pumper = std::thread::spawn(move || pump(in_r, out_w, mode).unwrap());
    let (tx, rx) = mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        for l in BufReader::new(out_r).lines() {
            l.unwrap();
            if tx.send(()).is_err() {
                break;
            }
        }
    });
    let mut w = in_w;
    let mut out = Vec::with_capacity(pings as usize);
    for i in 0..pings {
        let line = chunk_line(version, i, false);
        let t0 = Instant::now();
        w.write_all(line.as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
        rx.recv().unwrap();
        out.push(t0.elapsed());
    }
    drop(w);
    pumper.join().unwrap();
    reader.join().unwrap();
    out.sort();
    out
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(300_000);
    let pings: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5_000);
    println!("bridge_throughput: {n} chunk lines per run, {pings} ping-pong messages");
    for (mode, version) in [
        (Mode::BridgeV1AgentToV2Client, 1u16),
        (Mode::BridgeV2AgentToV1Client, 2u16),
    ] {
        // Interleave relay and bridge runs; keep the best of three of each.
        let mut relay = 0f64;
        let mut bridged = 0f64;
        for _ in 0..3 {
            relay = relay.max(throughput(Mode::Relay, version, n));
            bridged = bridged.max(throughput(mode, version, n));
        }
        let lr = latencies(Mode::Relay, version, pings);
        let lb = latencies(mode, version, pings);
        println!("{mode:?} (v{version} agent lines):");
        println!("  relay  {:>12.0} msgs/s", relay);
        println!("  bridge {:>12.0} msgs/s", bridged);
        println!("  ratio  {:>12.2}", bridged / relay);
        println!(
            "  latency p50 relay {:?} bridge {:?}; p99 relay {:?} bridge {:?}; added p99 {:?}",
            pct(&lr, 0.5),
            pct(&lb, 0.5),
            pct(&lr, 0.99),
            pct(&lb, 0.99),
            pct(&lb, 0.99).saturating_sub(pct(&lr, 0.99)),
        );
    }
}
