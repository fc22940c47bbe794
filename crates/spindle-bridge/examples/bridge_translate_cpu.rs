//! The bridge's translation of agent lines in process, without pipes: the
//! time `Bridge::from_agent` takes per chunk line, best of several rounds
//! (steadier than `bridge_throughput` on a loaded machine, since it leaves
//! out the pipe hops and thread wake-ups both paths share).
//!
//! Run: `cargo run --release -p spindle-bridge --example bridge_translate_cpu [N] [ROUNDS]`

use std::hint::black_box;
use std::time::{Duration, Instant};

use spindle_bridge::{Bridge, BridgeConfig, Policy};

fn chunk_line(version: u16, i: u64, escaped: bool) -> String {
    let id = if version == 2 {
        format!(r#""messageId":"msg_{}","#, i / 50)
    } else {
        String::new()
    };
    let text = if escaped {
        format!(r#"line {i}:\n\t\"quoted\" and a \\ backslash, then some plain text to read"#)
    } else {
        format!("token {i} of a streamed reply, about eighty bytes of text per chunk.")
    };
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"sess_1","update":{{"sessionUpdate":"agent_message_chunk",{id}"content":{{"type":"text","text":"{text}"}}}}}}}}"#
    )
}

fn bridge(client: u16, agent: u16) -> Bridge {
    let mut b = Bridge::new(BridgeConfig {
        client_protocol: Some(client),
        agent_protocol: Some(agent),
        policy: Policy::Strict,
    });
    let init = if client == 2 {
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"b","version":"1"}}}"#
    } else {
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#
    };
    b.from_client(init);
    b.from_agent(&format!(
        r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":{agent},"info":{{"name":"a","version":"1"}}}}}}"#
    ));
    b
}

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
            let mut b = bridge(client, agent);
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
