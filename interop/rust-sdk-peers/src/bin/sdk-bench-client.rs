//! A benchmark consumer built on the official Rust SDK.
//!
//! `sdk-bench-client [--protocol 1|2] PROMPT -- AGENT_CMD...` spawns the agent,
//! initializes, opens a session, sends PROMPT, rebuilds the reply text of the
//! agent's message from the typed notifications the SDK delivers, and prints
//! one JSON line: `replyBytes`, `replyFnv1a64`, `notifications`, `stopReason`.
//! `sdk-bench-client --connect URL PROMPT` does the same (v1) with an agent behind an
//! RFD `/acp` endpoint, through the official crate `agent-client-protocol-http`'s
//! client (`http://...`: HTTP+SSE, `ws://...`: WebSocket). `--multi-thread` first runs it on
//! tokio's multi-thread runtime (what `#[tokio::main]` gives an application) instead of the
//! current-thread one every peer uses.
//!
//! How the reply is rebuilt (the SDK gives typed updates only):
//! - v1: `agent_message_chunk` text appends; a chunk whose `_meta.spindle.snapshot`
//!   is true replaces the text (Spindle's snapshot extension). The v1 SDK's update
//!   enum is closed, so Spindle's `agent_message_clear` never reaches this code:
//!   the SDK rejects that notification before any handler runs, and the refine
//!   mix cannot be rebuilt on v1 (the benchmark records this as a hash mismatch).
//! - v2: chunks append; `agent_message` replaces (`content: []` clears); the turn
//!   ends with `state_update` idle.

use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::{AcpAgent, Client, ConnectTo};
use agent_client_protocol_http::HttpClient;
use spindle_interop_rust_sdk::fnv1a64;

/// Agent messages of the turn, in order of first sighting; the reply is the last one.
#[derive(Debug, Default)]
struct Projection {
    messages: Vec<(String, String)>,
    notifications: u64,
    /// v2: a running / requires_action state was seen, so the next idle ends the turn.
    active: bool,
}

impl Projection {
    fn message(&mut self, id: Option<&str>) -> &mut String {
        let id = id.unwrap_or("");
        // Streams stay on one message for long runs: check the latest first.
        let index = match self.messages.iter().rposition(|(key, _)| key == id) {
            Some(index) => index,
            None => {
                self.messages.push((id.to_string(), String::new()));
                self.messages.len() - 1
            }
        };
        &mut self.messages[index].1
    }

    fn report(&self, stop_reason: &str) -> String {
        let reply = self
            .messages
            .last()
            .map(|(_, text)| text.as_str())
            .unwrap_or("");
        format!(
            "{{\"replyBytes\":{},\"replyFnv1a64\":\"{:016x}\",\"notifications\":{},\"stopReason\":\"{}\"}}",
            reply.len(),
            fnv1a64(reply.as_bytes()),
            self.notifications,
            stop_reason
        )
    }
}

fn is_snapshot(meta: Option<&serde_json::Map<String, serde_json::Value>>) -> bool {
    meta.and_then(|m| m.get("spindle"))
        .and_then(|s| s.get("snapshot"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

fn main() -> std::process::ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let multi_thread = args.first().map(String::as_str) == Some("--multi-thread");
    if multi_thread {
        args.remove(0);
    }
    if args.first().map(String::as_str) == Some("--connect") && args.len() > 2 {
        let prompt = args[2..].join(" ");
        let transport = match HttpClient::with_endpoint(&args[1]) {
            Ok(transport) => transport,
            Err(error) => {
                eprintln!("sdk-bench-client: {error}");
                return std::process::ExitCode::from(2);
            }
        };
        let result = if multi_thread {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime")
                .block_on(v1_client(transport, prompt))
        } else {
            spindle_interop_rust_sdk::block_on(v1_client(transport, prompt))
        };
        return report(result);
    }
    let mut protocol = 1;
    if args.first().map(String::as_str) == Some("--protocol") && args.len() > 1 {
        protocol = if args[1] == "2" { 2 } else { 1 };
        args.drain(..2);
    }
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!(
            "usage: sdk-bench-client [--protocol 1|2] PROMPT -- AGENT_CMD...\n       sdk-bench-client [--multi-thread] --connect URL PROMPT"
        );
        return std::process::ExitCode::from(2);
    };
    let (prompt, command) = (args[..split].join(" "), args[split + 1..].to_vec());
    let agent = match AcpAgent::from_args(command) {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("sdk-bench-client: {error:?}");
            return std::process::ExitCode::from(2);
        }
    };
    let result = spindle_interop_rust_sdk::block_on(async {
        if protocol == 1 {
            v1_client(agent, prompt).await
        } else {
            v2_client(agent, prompt).await
        }
    });
    report(result)
}

fn report(result: agent_client_protocol::Result<String>) -> std::process::ExitCode {
    match result {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("sdk-bench-client: {error:?}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn v1_client(
    agent: impl ConnectTo<Client>,
    prompt: String,
) -> agent_client_protocol::Result<String> {
    use agent_client_protocol::v1::schema::{
        ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification,
        SessionUpdate,
    };
    let projection = Arc::new(Mutex::new(Projection::default()));
    let sink = projection.clone();
    Client
        .v1()
        .name("sdk-bench-client")
        .on_receive_notification(
            async move |notification: SessionNotification, _connection| {
                let mut p = sink.lock().expect("projection lock");
                p.notifications += 1;
                if let SessionUpdate::AgentMessageChunk(chunk) = notification.update
                    && let ContentBlock::Text(text) = chunk.content
                {
                    let id = chunk.message_id.as_ref().map(ToString::to_string);
                    let reply = p.message(id.as_deref());
                    if is_snapshot(chunk.meta.as_ref()) {
                        reply.clear();
                    }
                    reply.push_str(&text.text);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(agent, async move |connection| {
            connection
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = connection
                .send_request(NewSessionRequest::new(std::env::temp_dir()))
                .block_task()
                .await?
                .session_id;
            let response = connection
                .send_request(PromptRequest::new(
                    session,
                    vec![ContentBlock::from(prompt)],
                ))
                .block_task()
                .await?;
            let stop = serde_json::to_value(response.stop_reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            Ok(projection.lock().expect("projection lock").report(&stop))
        })
        .await
}

async fn v2_client(agent: AcpAgent, prompt: String) -> agent_client_protocol::Result<String> {
    use agent_client_protocol::schema::MaybeUndefined;
    use agent_client_protocol::v2::schema;
    let projection = Arc::new(Mutex::new(Projection::default()));
    let (idle_tx, mut idle_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let sink = projection.clone();
    Client
        .v2()
        .name("sdk-bench-client")
        .on_receive_notification(
            async move |notification: schema::UpdateSessionNotification, _connection| {
                let mut p = sink.lock().expect("projection lock");
                p.notifications += 1;
                match notification.update {
                    schema::SessionUpdate::AgentMessageChunk(chunk) => {
                        if let schema::ContentBlock::Text(text) = chunk.content {
                            let reply = p.message(Some(&chunk.message_id.to_string()));
                            if is_snapshot(chunk.meta.as_ref()) {
                                reply.clear();
                            }
                            reply.push_str(&text.text);
                        }
                    }
                    schema::SessionUpdate::AgentMessage(message) => {
                        let reply = p.message(Some(&message.message_id.to_string()));
                        match message.content {
                            MaybeUndefined::Undefined => {}
                            MaybeUndefined::Null => reply.clear(),
                            MaybeUndefined::Value(blocks) => {
                                reply.clear();
                                for block in blocks {
                                    if let schema::ContentBlock::Text(text) = block {
                                        reply.push_str(&text.text);
                                    }
                                }
                            }
                        }
                    }
                    // An idle before any running state (e.g. at session start)
                    // does not end a turn.
                    schema::SessionUpdate::StateUpdate(schema::StateUpdate::Idle(idle))
                        if std::mem::take(&mut p.active) =>
                    {
                        let stop = idle
                            .stop_reason
                            .and_then(|s| serde_json::to_value(s).ok())
                            // v2 StopReason is internally tagged: {"stopReason": "..."}.
                            .and_then(|v| v["stopReason"].as_str().map(str::to_string))
                            .unwrap_or_default();
                        let _ = idle_tx.send(stop);
                    }
                    schema::SessionUpdate::StateUpdate(schema::StateUpdate::Idle(_)) => {}
                    schema::SessionUpdate::StateUpdate(_) => p.active = true,
                    _ => {}
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(agent, async move |connection| {
            connection
                .send_request(schema::InitializeRequest::new(
                    ProtocolVersion::V2,
                    schema::Implementation::new("sdk-bench-client", env!("CARGO_PKG_VERSION")),
                ))
                .block_task()
                .await?;
            let opened = connection
                .build_session_cwd()?
                .start_session()
                .block_task()
                .await?;
            opened.session.send_prompt(&prompt).block_task().await?;
            let stop = idle_rx.recv().await.unwrap_or_default();
            Ok(projection.lock().expect("projection lock").report(&stop))
        })
        .await
}
