//! Wire-log commit throughput and latency, SQLite against PostgreSQL on loopback, in one run.
//!
//! `cargo bench -p spindle-store --bench wire_log [-- --quick]`. Starts a throwaway PostgreSQL
//! (the crate's `test_server`, with `fsync=on` as a real server has it) and writes the same
//! batches of agent lines to each store through [`Store::append_lines`], timing every call (each
//! returns once its batch is committed). Prints a Markdown table for BENCHMARKS.md.

#[allow(dead_code)]
#[path = "../src/test_server.rs"]
mod test_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_store::{Direction, Location, Store};

/// A typical streamed line: an `agent_message_chunk` of about 250 bytes.
fn chunk_line(i: usize) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"sess-1\",\
         \"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"m1\",\"content\":\
         {{\"type\":\"text\",\"text\":\"word {i:08} of a reply streamed to the client, a few words at a time \"}}}}}}}}"
    )
}

struct Workload {
    name: &'static str,
    sessions: usize,
    commits: usize,
    lines_per_commit: usize,
}

struct Outcome {
    commits_per_s: f64,
    lines_per_s: f64,
    p50: Duration,
    p99: Duration,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn run(store: &Arc<dyn Store>, workload: &Workload) -> Outcome {
    let started = Instant::now();
    let threads: Vec<_> = (0..workload.sessions)
        .map(|_| {
            let store = Arc::clone(store);
            let (commits, per) = (workload.commits, workload.lines_per_commit);
            std::thread::spawn(move || {
                let session = store.create_session("bench", None).unwrap();
                let lines: Vec<String> = (0..per).map(chunk_line).collect();
                let batch: Vec<(Direction, &str)> = lines
                    .iter()
                    .map(|l| (Direction::Agent, l.as_str()))
                    .collect();
                let mut latencies = Vec::with_capacity(commits);
                for c in 0..commits {
                    let first = 1 + (c * per) as i64;
                    let t = Instant::now();
                    store.append_lines(session, first, &batch).unwrap();
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let commits = (workload.sessions * workload.commits) as f64;
    Outcome {
        commits_per_s: commits / elapsed,
        lines_per_s: commits * workload.lines_per_commit as f64 / elapsed,
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    let server = test_server::required_server();
    // As a production server runs: every commit flushed to the server's WAL.
    // (ALTER SYSTEM refuses a transaction block: one statement per call.)
    for setting in ["fsync = on", "synchronous_commit = on"] {
        server
            .psql("postgres", &format!("ALTER SYSTEM SET {setting}"))
            .unwrap();
    }
    server.psql("postgres", "SELECT pg_reload_conf()").unwrap();
    let dir = std::env::temp_dir().join(format!("spindle-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let workloads = [
        Workload {
            name: "1 session, 1 line per commit",
            sessions: 1,
            commits: 5_000 / scale,
            lines_per_commit: 1,
        },
        Workload {
            name: "1 session, 64 lines per commit",
            sessions: 1,
            commits: 500 / scale,
            lines_per_commit: 64,
        },
        Workload {
            name: "8 sessions on 8 threads, 1 line per commit",
            sessions: 8,
            commits: 1_000 / scale,
            lines_per_commit: 1,
        },
    ];
    println!("| workload | store | commits/s | lines/s | p50 commit | p99 commit |");
    println!("|---|---|---:|---:|---:|---:|");
    for (w, workload) in workloads.iter().enumerate() {
        let stores: Vec<(&str, Location)> = vec![
            (
                "SQLite (WAL, synchronous=NORMAL)",
                Location::Sqlite(dir.join(format!("w{w}.db"))),
            ),
            (
                "PostgreSQL (synchronous_commit=on)",
                Location::Postgres(server.url(&server.create_database(&format!("w{w}_sync")))),
            ),
            (
                "PostgreSQL (synchronous_commit=off)",
                Location::Postgres(format!(
                    "{}?options=-c%20synchronous_commit%3Doff",
                    server.url(&server.create_database(&format!("w{w}_async")))
                )),
            ),
        ];
        for (label, location) in stores {
            let store = spindle_store::open(&location).unwrap();
            let outcome = run(&store, workload);
            println!(
                "| {} | {label} | {:.0} | {:.0} | {:.2} ms | {:.2} ms |",
                workload.name,
                outcome.commits_per_s,
                outcome.lines_per_s,
                outcome.p50.as_secs_f64() * 1e3,
                outcome.p99.as_secs_f64() * 1e3,
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
