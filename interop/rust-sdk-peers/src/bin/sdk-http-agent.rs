//! The test agent (`spindle_interop_rust_sdk::test_agent`) served by the
//! official crate `agent-client-protocol-http` (feature `server`): the
//! RFD's `/acp` endpoint, HTTP+SSE and WebSocket, one agent per connection.
//! Spindle's remote client drives it in `interop/run.sh` and in its tests.
//!
//! `sdk-http-agent [--protocol 1|2] [--listen ADDR]` (default
//! `127.0.0.1:0`) prints `listening on http://ADDR/acp` on stdout once it
//! accepts connections.

use agent_client_protocol_http::AcpHttpServer;
use spindle_interop_rust_sdk::test_agent::{v1_agent, v2_agent};

fn main() -> std::process::ExitCode {
    let mut protocol = 1;
    let mut listen = "127.0.0.1:0".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--protocol", Some(v)) if v == "1" || v == "2" => {
                protocol = if v == "1" { 1 } else { 2 }
            }
            ("--listen", Some(addr)) => listen = addr,
            _ => {
                eprintln!("usage: sdk-http-agent [--protocol 1|2] [--listen ADDR]");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("sdk-http-agent: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result: std::io::Result<()> = runtime.block_on(async move {
        let router = if protocol == 1 {
            AcpHttpServer::new(v1_agent::agent).into_router()
        } else {
            AcpHttpServer::new(v2_agent::agent).into_router()
        };
        let listener = tokio::net::TcpListener::bind(&listen).await?;
        println!("listening on http://{}/acp", listener.local_addr()?);
        axum::serve(listener, router).await
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sdk-http-agent: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
