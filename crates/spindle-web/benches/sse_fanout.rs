//! End-to-end SSE benchmark of the web server: an agent process writes chunks, the server logs
//! them to SQLite, runs them through the engine and fans the ops out; HTTP clients read the SSE
//! streams the way a browser's EventSource does.
//!
//! Run: `cargo bench -p spindle-web --bench sse_fanout` (numbers go to stdout as markdown).
//! Options: `--chunks N` (throughput run, default 20000), `--observers N` (memory run, default
//! 1000), `--sessions N` (concurrent sessions run, default 100).
//!
//! The binary plays three roles so that the server is measured as its own process: the
//! orchestrator (default), the server (`--role server`), and a minimal ACP v1 agent
//! (`--role agent`) whose chunks carry their write time (wall clock, nanoseconds) as text.

use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn main() {
    match arg("--role").as_deref() {
        Some("agent") => agent(),
        Some("server") => server(),
        _ => orchestrate(),
    }
}

// ---- the agent: ACP v1 on stdio, prompts are "N PACE_MICROS" -----------------------------------

fn agent() {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    let mut turn = 0u64;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let result = match message.get("method").and_then(Value::as_str) {
            Some("initialize") => json!({ "protocolVersion": 1, "agentCapabilities": {} }),
            Some("session/new") => json!({ "sessionId": "bench" }),
            Some("session/prompt") => {
                turn += 1;
                let text = message
                    .pointer("/params/prompt/0/text")
                    .and_then(Value::as_str)
                    .unwrap_or("1 0");
                let mut parts = text.split_whitespace();
                let count: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(1);
                let pace: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
                let started = Instant::now();
                for n in 0..count {
                    if pace > 0 {
                        let due = started + Duration::from_micros(pace * n);
                        let now = Instant::now();
                        if due > now {
                            let _ = out.flush();
                            std::thread::sleep(due - now);
                        }
                    }
                    let chunk = format!(
                        "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"bench\",\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"m{turn}\",\"content\":{{\"type\":\"text\",\"text\":\"{};\"}}}}}}}}\n",
                        now_nanos()
                    );
                    if out.write_all(chunk.as_bytes()).is_err() {
                        return;
                    }
                    if pace > 0 {
                        let _ = out.flush();
                    }
                }
                json!({ "stopReason": "end_turn" })
            }
            _ => continue,
        };
        let response = json!({ "jsonrpc": "2.0", "id": id, "result": result });
        if writeln!(out, "{response}").is_err() || out.flush().is_err() {
            return;
        }
    }
}

// ---- the server -------------------------------------------------------------------------------

fn server() {
    let db = arg("--db").expect("--db");
    let exe = std::env::current_exe().expect("current exe");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let config = spindle_web::ServeConfig {
            bind: "127.0.0.1:0".parse().unwrap(),
            db: db.into(),
            token: None,
            allow_hosts: Vec::new(),
            agent: spindle_web::AgentSettings {
                agents: vec![spindle_web::AgentChoice {
                    id: "peer".into(),
                    name: "peer".into(),
                    version: String::new(),
                    command: vec![
                        OsString::from(exe),
                        OsString::from("--role"),
                        OsString::from("agent"),
                    ],
                    env: Vec::new(),
                }],
                default_agent: "peer".into(),
                protocol_version: 1,
                cwd: std::env::temp_dir(),
                startup_timeout: Duration::from_secs(30),
                idle_stop: None,
                fs: spindle_web::FsPolicy::Off,
                terminals: false,
                remote: None,
                mcp_servers: Vec::new(),
                checkpoints: None,
            },
            limits: spindle_web::HubLimits::default(),
            replica: spindle_web::ReplicaConfig::default(),
            users: Default::default(),
        };
        let server = spindle_web::Server::start(config).await.expect("start");
        println!("{}", server.address());
        // Runs until the orchestrator closes our stdin.
        let stop = async {
            let mut buf = [0u8; 1];
            let _ = tokio::io::stdin().read(&mut buf).await;
        };
        server.run_until(stop).await.expect("serve");
    });
}

// ---- the orchestrator and its browser-equivalent SSE readers ---------------------------------

async fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

async fn open_sse(addr: SocketAddr, session: i64) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /api/sessions/{session}/events HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        if line == "\r\n" || line.is_empty() {
            return reader;
        }
    }
}

/// Reads SSE lines until `target` append ops of message `m{turn}` arrived; calls `on_chunk` with
/// each chunk's text.
async fn read_chunks(
    reader: &mut BufReader<TcpStream>,
    turn: u64,
    target: usize,
    mut on_chunk: impl FnMut(&str),
) {
    let needle = format!("{{\"op\":\"append_text\",\"id\":\"m{turn}\",\"text\":\"");
    let insert = format!("\"id\":\"m{turn}\",\"kind\":\"agent_message\"");
    let mut seen = 0;
    let mut line = String::new();
    while seen < target {
        line.clear();
        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
            panic!("SSE stream ended after {seen} of {target} chunks");
        }
        if !line.starts_with("data:") {
            continue;
        }
        // The first chunk of a message arrives inside its insert_entry op.
        if let Some(at) = line.find(&insert) {
            let rest = &line[at..];
            if let Some(t) = rest.find("\"text\":\"") {
                let text = &rest[t + 8..];
                on_chunk(&text[..text.find('"').unwrap_or(0)]);
                seen += 1;
            }
        }
        let mut rest = line.as_str();
        while let Some(at) = rest.find(&needle) {
            let text = &rest[at + needle.len()..];
            let end = text.find('"').unwrap_or(0);
            on_chunk(&text[..end]);
            seen += 1;
            rest = &text[end..];
        }
    }
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[u128], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index] as f64 / 1000.0
}

fn orchestrate() {
    let chunks: usize = arg("--chunks")
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let observers: usize = arg("--observers")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let dir = std::env::temp_dir().join(format!("spindle-sse-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(&exe)
        .args(["--role", "server", "--db"])
        .arg(dir.join("bench.db"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("server");
    let server_pid = child.id();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr: SocketAddr = first.trim().parse().expect("server address");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let (_, body) = http(addr, "POST", "/api/sessions", "{}").await;
        let session = serde_json::from_str::<Value>(&body).unwrap()["id"]
            .as_i64()
            .unwrap();
        let prompt = |text: String| async move {
            let body = json!({ "text": text }).to_string();
            let (status, body) = http(addr, "POST", &format!("/api/sessions/{session}/prompt"), &body).await;
            assert_eq!(status, 202, "{body}");
        };
        let wait_idle = || async move {
            // Prompts are v1 here: wait until the turn's replies are saved as finished.
            loop {
                let (_, body) = http(addr, "GET", &format!("/api/sessions/{session}/replies"), "").await;
                let replies: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let list = replies["replies"].as_array().cloned().unwrap_or_default();
                if list.last().is_some_and(|r| r["finished"] == true) {
                    return list.len();
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        println!("| run | result |");
        println!("|---|---|");

        // 1. Throughput: one reader, the agent writes as fast as it can.
        let mut reader = open_sse(addr, session).await;
        let started = Instant::now();
        prompt(format!("{chunks} 0")).await;
        read_chunks(&mut reader, 1, chunks, |_| {}).await;
        let elapsed = started.elapsed();
        println!(
            "| throughput, 1 observer, {chunks} chunks | {:.0} chunks/s ({:.2} s) |",
            chunks as f64 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64()
        );
        wait_idle().await;

        // 2. Latency: 2,000 chunks paced at one per millisecond.
        let paced = 2000;
        let mut latencies = Vec::with_capacity(paced);
        prompt(format!("{paced} 1000")).await;
        read_chunks(&mut reader, 2, paced, |text| {
            if let Ok(sent) = text.trim_end_matches(';').parse::<u128>() {
                latencies.push(now_nanos().saturating_sub(sent));
            }
        })
        .await;
        latencies.sort_unstable();
        println!(
            "| latency agent write -> SSE frame, {paced} chunks at 1/ms | p50 {:.0} us, p99 {:.0} us, max {:.0} us |",
            percentile(&latencies, 0.50),
            percentile(&latencies, 0.99),
            percentile(&latencies, 1.0)
        );
        wait_idle().await;
        drop(reader);

        // 3. Memory: many observers of one session.
        let before = rss_kib(server_pid, "VmRSS:");
        let done = Arc::new(AtomicUsize::new(0));
        let mut readers = Vec::with_capacity(observers);
        for _ in 0..observers {
            readers.push(open_sse(addr, session).await);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let connected = rss_kib(server_pid, "VmRSS:");
        let fan = 2000;
        let mut tasks = Vec::new();
        for mut reader in readers {
            let done = done.clone();
            tasks.push(tokio::spawn(async move {
                read_chunks(&mut reader, 3, fan, |_| {}).await;
                done.fetch_add(1, Ordering::Relaxed);
                reader
            }));
        }
        let started = Instant::now();
        prompt(format!("{fan} 0")).await;
        let mut kept = Vec::new();
        for task in tasks {
            kept.push(task.await.unwrap());
        }
        let elapsed = started.elapsed();
        let after = rss_kib(server_pid, "VmRSS:");
        let peak = rss_kib(server_pid, "VmHWM:");
        let (_, stats) = http(addr, "GET", &format!("/api/sessions/{session}/stats"), "").await;
        println!(
            "| {observers} observers connected | server RSS {} MiB before, {} MiB connected ({:.1} KiB per observer) |",
            before / 1024,
            connected / 1024,
            (connected.saturating_sub(before)) as f64 / observers as f64
        );
        println!(
            "| {fan} chunks to each of {observers} observers | all delivered to {} observers in {:.2} s ({:.0} chunk-deliveries/s); RSS {} MiB after, peak {} MiB |",
            done.load(Ordering::Relaxed),
            elapsed.as_secs_f64(),
            (fan * observers) as f64 / elapsed.as_secs_f64(),
            after / 1024,
            peak / 1024
        );
        println!("\nserver stats: {stats}");
        drop(kept);

        // 4. Many sessions streaming at once, one observer each (one agent process each).
        let sessions_n: usize = arg("--sessions").and_then(|v| v.parse().ok()).unwrap_or(100);
        let per_session = 2000;
        let mut ids = Vec::with_capacity(sessions_n);
        for _ in 0..sessions_n {
            let (_, body) = http(addr, "POST", "/api/sessions", "{}").await;
            ids.push(serde_json::from_str::<Value>(&body).unwrap()["id"].as_i64().unwrap());
        }
        let mut readers = Vec::with_capacity(sessions_n);
        for id in &ids {
            readers.push(open_sse(addr, *id).await);
        }
        let started = Instant::now();
        let mut tasks = Vec::new();
        for (id, mut reader) in ids.iter().copied().zip(readers) {
            tasks.push(tokio::spawn(async move {
                let body = json!({ "text": format!("{per_session} 0") }).to_string();
                let path = format!("/api/sessions/{id}/prompt");
                // The agent may still be starting: the prompt waits for it server-side.
                let (status, body) = http(addr, "POST", &path, &body).await;
                assert_eq!(status, 202, "{body}");
                read_chunks(&mut reader, 1, per_session, |_| {}).await;
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let elapsed = started.elapsed();
        println!(
            "| {sessions_n} sessions streaming {per_session} chunks each at once (one agent each) | all delivered in {:.2} s ({:.0} chunks/s in total); server RSS {} MiB, peak {} MiB |",
            elapsed.as_secs_f64(),
            (sessions_n * per_session) as f64 / elapsed.as_secs_f64(),
            rss_kib(server_pid, "VmRSS:") / 1024,
            rss_kib(server_pid, "VmHWM:") / 1024
        );
    });
    drop(child.stdin.take());
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
