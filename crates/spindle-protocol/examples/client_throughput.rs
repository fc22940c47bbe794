//! Measures the whole client path: a fake agent writes N `session/update`
//! lines (default 1,000,000) into a pipe; `AcpClient` frames, routes and
//! hands them to the application as `ClientEvent::SessionUpdate`.
//!
//! `cargo run --release -p spindle-protocol --example client_throughput [N]`

use std::time::Instant;

use serde_json::{Value, json};
use spindle_protocol::{AcpClient, ClientEvent, ClientOptions, Connection};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

mod support;

fn main() {
    let n = support::count_arg(1_000_000);
    let updates = support::chunk_lines(n, "sess_1", 8);
    let bytes = updates.len();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let (client_io, agent_io) = tokio::io::duplex(1 << 20);
        let (client_r, client_w) = tokio::io::split(client_io);
        let (agent_r, mut agent_w) = tokio::io::split(agent_io);
        // The agent answers initialize and session/new, then streams.
        let agent = tokio::spawn(async move {
            let mut lines = BufReader::new(agent_r).lines();
            for result in [
                json!({"protocolVersion": 1}),
                json!({"sessionId": "sess_1"}),
            ] {
                let line = lines.next_line().await.expect("read").expect("request");
                let request: Value = serde_json::from_str(&line).expect("json");
                let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
                agent_w
                    .write_all(format!("{reply}\n").as_bytes())
                    .await
                    .expect("write");
            }
            agent_w.write_all(&updates).await.expect("write");
            agent_w.shutdown().await.expect("shutdown");
            lines
        });
        let (client, mut events) = AcpClient::new(
            Connection::from_io(client_r, client_w),
            ClientOptions::default(),
        );
        client.initialize().await.expect("initialize");
        client.new_session("/", &json!([])).await.expect("session");
        let start = Instant::now();
        let mut count = 0usize;
        while let Some(event) = events.recv().await {
            match event {
                ClientEvent::SessionUpdate { .. } => count += 1,
                ClientEvent::AgentExited { .. } => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        let elapsed = start.elapsed();
        assert_eq!(count, n);
        drop(agent.await);
        println!(
            "{n} updates, {:.1} MB through AcpClient in {:.3} s ({:.0} ns/update)",
            bytes as f64 / 1e6,
            elapsed.as_secs_f64(),
            elapsed.as_nanos() as f64 / n as f64
        );
    });
}
