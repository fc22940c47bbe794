//! A deterministic ACP agent built on the official Rust SDK, for testing
//! Spindle's client against a peer nobody here wrote.
//!
//! `sdk-test-agent [--protocol 1|2]` serves one connection on stdio. Every
//! prompt gets a thought, a plan and a reply in four message chunks; a prompt
//! containing the word `tool` instead runs a tool call guarded by a permission
//! request and replies according to the answer. v1 ends the turn with the
//! `session/prompt` response; v2 answers the prompt on acceptance, echoes the
//! prompt as `user_message`, and ends the turn with `state_update` idle.

use agent_client_protocol::{ConnectTo, Stdio};
use spindle_interop_rust_sdk::block_on;
use spindle_interop_rust_sdk::test_agent::{v1_agent, v2_agent};

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let protocol = match args.as_slice() {
        [] => 1,
        [flag, version] if flag == "--protocol" && (version == "1" || version == "2") => {
            if version == "1" { 1 } else { 2 }
        }
        _ => {
            eprintln!("usage: sdk-test-agent [--protocol 1|2]");
            return std::process::ExitCode::from(2);
        }
    };
    let result = block_on(async {
        if protocol == 1 {
            v1_agent::agent().connect_to(Stdio::new()).await
        } else {
            v2_agent::agent().connect_to(Stdio::new()).await
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sdk-test-agent: {error:?}");
            std::process::ExitCode::FAILURE
        }
    }
}
