//! A stdio agent command served by the official crate `agent-client-protocol-http`
//! (feature `server`): the RFD's `/acp` endpoint, HTTP+SSE and WebSocket, one agent
//! process per connection (the SDK's `AcpAgent` spawns it). It is the official
//! counterpart of `spindle bridge --listen -- AGENT_CMD...` in `bench/remote.sh`.
//!
//! `sdk-http-stdio-server [--listen ADDR] -- AGENT_CMD...` (default `127.0.0.1:0`)
//! prints `listening on http://ADDR/acp` on stdout once it accepts connections.

use agent_client_protocol::AcpAgent;
use agent_client_protocol_http::AcpHttpServer;

const USAGE: &str = "usage: sdk-http-stdio-server [--listen ADDR] -- AGENT_CMD...";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("{USAGE}");
        return std::process::ExitCode::from(2);
    };
    let listen = match &args[..split] {
        [] => "127.0.0.1:0".to_owned(),
        [flag, addr] if flag == "--listen" => addr.clone(),
        _ => {
            eprintln!("{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    let config = match AcpAgent::from_args(&args[split + 1..]) {
        Ok(agent) => agent.into_config(),
        Err(error) => {
            eprintln!("sdk-http-stdio-server: {error:?}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("sdk-http-stdio-server: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result: std::io::Result<()> = runtime.block_on(async move {
        let router = AcpHttpServer::new(move || AcpAgent::new(config.clone())).into_router();
        let listener = tokio::net::TcpListener::bind(&listen).await?;
        println!("listening on http://{}/acp", listener.local_addr()?);
        axum::serve(listener, router).await
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sdk-http-stdio-server: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
