//! A hostile client against the real `spindle agent`: a line well over the
//! default line limit (64 MiB, `spindle_wire::DEFAULT_MAX_LINE_BYTES`), noise
//! and invalid UTF-8 before a proper handshake.

use crate::harness;

use std::io::Write;

use harness::{TempDir, run_measured};
use serde_json::{Value, json};

/// The size of the oversized line, in MiB.
const LINE_MIB: usize = spindle_agent::DEFAULT_MAX_LINE_BYTES * 5 / 2 / (1 << 20);

#[test]
fn fault_agent_hostile_client_lines_are_refused_with_bounded_memory() {
    let dir = TempDir::new("agent-hostile-client");
    let input = dir.join("stdin");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        let piece = vec![b'x'; 1 << 20];
        file.write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"pad\":\"",
        )
        .unwrap();
        // 2.5 times the limit, so a memory bound below the line's size shows
        // the line was never held whole.
        for _ in 0..LINE_MIB {
            file.write_all(&piece).unwrap();
        }
        file.write_all(b"\"}}\n").unwrap();
        file.write_all(b"\xff\xfe\x00 noise \x80\n").unwrap();
        file.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\n")
            .unwrap();
        let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}});
        writeln!(file, "{init}").unwrap();
        file.flush().unwrap();
    }
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_spindle"));
    let (out, peak) = run_measured(
        &exe,
        &["agent".as_ref(), "--delay-ms".as_ref(), "0".as_ref()],
        Some(&input),
        &[],
    );
    let messages: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("the agent writes JSON lines"))
        .collect();
    let errors: Vec<&Value> = messages
        .iter()
        .filter(|m| m.get("error").is_some())
        .collect();
    assert!(errors.len() >= 3, "one error per bad line: {messages:#?}");
    assert!(errors.iter().all(|e| e["error"]["code"].as_i64().is_some()));
    let init = messages
        .iter()
        .find(|m| m["id"] == 2)
        .unwrap_or_else(|| panic!("the handshake after the garbage is answered: {messages:#?}"));
    assert_eq!(init["result"]["protocolVersion"], 1);
    if let Some(kib) = peak {
        eprintln!("spindle agent fed a {LINE_MIB} MiB line: peak RSS {kib} KiB");
        // Bounded by the limit (the reader holds at most that much before it
        // knows the line is too long) plus the process itself, not by the line.
        let bound_kib = spindle_agent::DEFAULT_MAX_LINE_BYTES / 1024 + 32 * 1024;
        assert!(bound_kib < LINE_MIB * 1024);
        assert!(kib < bound_kib as u64, "peak RSS {kib} KiB");
    }
}
