//! The project's own ACP client runtime (`spindle-protocol`'s `AcpClient`)
//! against the reference agent over an in-memory byte stream, v1 and v2,
//! with the transcript built by `spindle-engine`.

use serde_json::{Value, json};
use spindle_agent::scenarios;
use spindle_agent::{AgentConfig, DEFAULT_MAX_LINE_BYTES, run_agent};
use spindle_engine::{EngineConfig, TranscriptEngine};
use spindle_protocol::{
    AcpClient, ClientEvent, ClientEvents, ClientOptions, Connection, ProtocolChoice,
};

fn start(protocol: ProtocolChoice) -> (AcpClient, ClientEvents) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    tokio::spawn(run_agent(
        AgentConfig::default(),
        DEFAULT_MAX_LINE_BYTES,
        tokio::io::BufReader::new(agent_read),
        agent_write,
    ));
    let (client_read, client_write) = tokio::io::split(client_io);
    let options = ClientOptions {
        protocol,
        spindle_extensions: true,
        ..Default::default()
    };
    AcpClient::new(Connection::from_io(client_read, client_write), options)
}

/// Sends a prompt and runs the client's event loop until the turn ends,
/// answering permission requests with `answer`; returns (stop reason, reply).
async fn turn(
    client: &AcpClient,
    events: &mut ClientEvents,
    engine: &mut TranscriptEngine,
    sid: &str,
    text: &str,
    answer: &str,
) -> (Option<String>, String) {
    let blocks = json!([{"type": "text", "text": text}]);
    engine.apply_user_prompt(&blocks.to_string());
    client.send_prompt(sid, &blocks).await.unwrap();
    loop {
        match events.recv().await.expect("client event stream ended") {
            ClientEvent::SessionUpdate { params, .. } => {
                let applied = engine.apply_session_update(params.get());
                assert!(applied.diagnostics.is_empty(), "{:?}", applied.diagnostics);
            }
            ClientEvent::PromptResponse { result, .. } => {
                let r = result.as_ref().map(|r| r.get()).map_err(|e| e.get());
                engine.apply_prompt_response(r);
            }
            ClientEvent::PermissionRequest { request_id, .. } => {
                let outcome = match answer {
                    "cancelled" => json!({"outcome": "cancelled"}),
                    option => json!({"outcome": "selected", "optionId": option}),
                };
                client
                    .respond_permission(&request_id, &outcome)
                    .await
                    .unwrap();
            }
            ClientEvent::TurnFinished { stop_reason, .. } => {
                return (stop_reason, engine.final_reply().unwrap_or_default());
            }
            ClientEvent::Diagnostic { message } => panic!("client diagnostic: {message}"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn acp_client_drives_the_reference_agent() {
    for (protocol, version) in [(ProtocolChoice::V1, 1), (ProtocolChoice::V2Preferred, 2)] {
        let (client, mut events) = start(protocol);
        let init = client.initialize().await.unwrap();
        assert_eq!(init.protocol_version, version);
        assert_eq!(
            init.agent_spindle_extensions,
            [
                "agent_message_clear",
                "agent_thought_clear",
                "session_cleared",
                "clear_boundary"
            ]
        );
        let (sid, _) = client.new_session("/tmp", &json!([])).await.unwrap();
        let mut engine = TranscriptEngine::new(EngineConfig::default());
        // The session-start updates (v2: ending with the greeting) come first.
        let last_opening = if version == 2 {
            "\"agent_message\""
        } else {
            "available_commands_update"
        };
        loop {
            if let Some(ClientEvent::SessionUpdate { params, .. }) = events.recv().await {
                engine.apply_session_update(params.get());
                if params.get().contains(last_opening) {
                    break;
                }
            }
        }
        let cases: [(&str, &str, &str, String); 6] = [
            (
                "hello",
                "allow",
                "end_turn",
                scenarios::plain_reply("hello"),
            ),
            (
                "/scenario refine",
                "allow",
                "end_turn",
                scenarios::REFINE_REPLY.into(),
            ),
            (
                "/scenario tools",
                "allow",
                "end_turn",
                scenarios::TOOLS_REPLY_ALLOWED.into(),
            ),
            (
                "/scenario tools",
                "reject",
                "end_turn",
                scenarios::TOOLS_REPLY_REJECTED.into(),
            ),
            (
                "/scenario snapshot",
                "allow",
                "end_turn",
                scenarios::SNAPSHOT_REPLY.into(),
            ),
            ("/clear", "allow", "end_turn", scenarios::CLEAR_REPLY.into()),
        ];
        for (prompt, answer, stop, reply) in cases {
            let (got_stop, got_reply) =
                turn(&client, &mut events, &mut engine, &sid, prompt, answer).await;
            assert_eq!(got_stop.as_deref(), Some(stop), "v{version} {prompt}");
            assert_eq!(got_reply, reply, "v{version} {prompt}");
        }
        // Cancelling a stalled turn through the client.
        let blocks = json!([{"type": "text", "text": "/scenario stall"}]);
        engine.apply_user_prompt(&blocks.to_string());
        client.send_prompt(&sid, &blocks).await.unwrap();
        let mut text = String::new();
        let stop = loop {
            match events.recv().await.unwrap() {
                ClientEvent::SessionUpdate { params, .. } => {
                    engine.apply_session_update(params.get());
                    let v: Value = serde_json::from_str(params.get()).unwrap();
                    if let Some(t) = v.pointer("/update/content/text").and_then(Value::as_str) {
                        text.push_str(t);
                        if text == scenarios::STALL_TEXT {
                            client.cancel(&sid).await.unwrap();
                        }
                    }
                }
                ClientEvent::TurnFinished { stop_reason, .. } => break stop_reason,
                _ => {}
            }
        };
        assert_eq!(stop.as_deref(), Some("cancelled"), "v{version}");
    }
}
