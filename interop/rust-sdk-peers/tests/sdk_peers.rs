//! The two official-SDK peers talk to each other over real pipes, v1 and v2:
//! a check of the peers themselves before Spindle is tested against them.

use std::process::Command;

use spindle_interop_rust_sdk::{TOOL_REJECTED_REPLY, fnv1a64, plain_reply};

fn bench_client(protocol: &str, prompt: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_sdk-bench-client"))
        .args(["--protocol", protocol, prompt, "--"])
        .arg(env!("CARGO_BIN_EXE_sdk-test-agent"))
        .args(["--protocol", protocol])
        .output()
        .expect("run sdk-bench-client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}

#[test]
fn sdk_client_rebuilds_the_sdk_agent_reply_v1_and_v2() {
    let reply = plain_reply();
    for protocol in ["1", "2"] {
        let got = bench_client(protocol, "hello");
        assert_eq!(got["replyBytes"], reply.len(), "v{protocol}");
        assert_eq!(
            got["replyFnv1a64"],
            format!("{:016x}", fnv1a64(reply.as_bytes())),
            "v{protocol}"
        );
        assert_eq!(got["stopReason"], "end_turn", "v{protocol}");
    }
}

#[test]
fn permission_without_a_client_handler_is_a_rejection() {
    // The bench client registers no permission handler: its SDK answers the
    // request with an error, which the test agent treats as a rejection.
    for protocol in ["1", "2"] {
        let got = bench_client(protocol, "use the tool");
        assert_eq!(got["replyBytes"], TOOL_REJECTED_REPLY.len(), "v{protocol}");
    }
}
