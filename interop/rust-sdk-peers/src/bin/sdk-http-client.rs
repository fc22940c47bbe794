//! A client on the official crate `agent-client-protocol-http` (feature `client`): it drives an
//! agent behind an RFD `/acp` endpoint (Spindle's `spindle serve` or `spindle bridge --listen`)
//! over HTTP+SSE (`http://...`) or WebSocket (`ws://...`), protocol v1.
//!
//! `sdk-http-client URL` initializes, opens a session, sends a plain prompt and then
//! `/scenario tools` (answering its permission question with `allow`), and prints one line per
//! check (`ok ...` / `FAIL ...`) and `N passed, M failed`; exit 1 when a check failed.

use std::sync::{Arc, Mutex};

use agent_client_protocol::Client;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
    SessionNotification, SessionUpdate,
};
use agent_client_protocol_http::HttpClient;

#[derive(Debug, Default)]
struct Seen {
    reply: String,
    user: Vec<String>,
    permissions: u32,
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url] = args.as_slice() else {
        eprintln!("usage: sdk-http-client URL (http://HOST:PORT/acp or ws://HOST:PORT/acp)");
        return std::process::ExitCode::from(2);
    };
    let transport = match HttpClient::with_endpoint(url) {
        Ok(transport) => transport,
        Err(error) => {
            eprintln!("sdk-http-client: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("sdk-http-client: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let label = if url.starts_with("ws") { "ws" } else { "http" };
    match runtime.block_on(conversation(transport)) {
        Ok(checks) => {
            let failed = checks.iter().filter(|(ok, _)| !ok).count();
            for (ok, what) in &checks {
                println!(
                    "{} rust-sdk {label} client: {what}",
                    if *ok { "ok  " } else { "FAIL" }
                );
            }
            println!("{} passed, {failed} failed", checks.len() - failed);
            if failed == 0 {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            }
        }
        Err(error) => {
            println!("FAIL rust-sdk {label} client: {error:?}");
            println!("0 passed, 1 failed");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn conversation(transport: HttpClient) -> agent_client_protocol::Result<Vec<(bool, String)>> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let sink = seen.clone();
    let asked = seen.clone();
    Client
        .v1()
        .name("sdk-http-client")
        .on_receive_notification(
            async move |notification: SessionNotification, _connection| {
                let mut seen = sink.lock().expect("seen lock");
                match notification.update {
                    SessionUpdate::AgentMessageChunk(chunk) => {
                        if let ContentBlock::Text(text) = chunk.content {
                            seen.reply.push_str(&text.text);
                        }
                    }
                    SessionUpdate::UserMessageChunk(chunk) => {
                        if let ContentBlock::Text(text) = chunk.content {
                            seen.user.push(text.text);
                        }
                    }
                    _ => {}
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _connection| {
                asked.lock().expect("seen lock").permissions += 1;
                let allow = request
                    .options
                    .iter()
                    .find(|o| &*o.option_id.0 == "allow")
                    .map(|o| o.option_id.clone());
                let outcome = match allow {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |connection| {
            let mut checks = Vec::new();
            let init = connection
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            checks.push((
                init.protocol_version == ProtocolVersion::V1,
                "initialize answered with protocol v1".to_string(),
            ));
            let session = connection
                .send_request(NewSessionRequest::new(std::env::temp_dir()))
                .block_task()
                .await?
                .session_id;
            let prompt = "hello from the official http client";
            let answer = connection
                .send_request(PromptRequest::new(
                    session.clone(),
                    vec![ContentBlock::from(prompt.to_string())],
                ))
                .block_task()
                .await?;
            let stop = serde_json::to_value(answer.stop_reason).unwrap_or_default();
            let (reply, user) = {
                let mut seen = seen.lock().expect("seen lock");
                (
                    std::mem::take(&mut seen.reply),
                    std::mem::take(&mut seen.user),
                )
            };
            checks.push((
                stop == "end_turn",
                format!("a plain prompt ends with {stop}"),
            ));
            checks.push((
                reply.contains(&format!("You said: \"{prompt}\"")),
                format!("the reply streamed over the transport: {reply:?}"),
            ));
            // A v1 client shows its own prompt: Spindle does not send it back (other clients
            // of the session get it as user_message_chunk updates).
            checks.push((
                user.is_empty(),
                format!("its own prompt is not echoed back: {user:?}"),
            ));
            let answer = connection
                .send_request(PromptRequest::new(
                    session,
                    vec![ContentBlock::from("/scenario tools".to_string())],
                ))
                .block_task()
                .await?;
            let stop = serde_json::to_value(answer.stop_reason).unwrap_or_default();
            let seen = seen.lock().expect("seen lock");
            checks.push((
                seen.permissions == 1,
                format!(
                    "one permission question reached the client ({})",
                    seen.permissions
                ),
            ));
            checks.push((
                stop == "end_turn"
                    && seen
                        .reply
                        .ends_with("I changed the greeting in src/main.rs."),
                format!(
                    "the allowed edit finished the turn: {stop} {:?}",
                    seen.reply
                ),
            ));
            Ok(checks)
        })
        .await
}
