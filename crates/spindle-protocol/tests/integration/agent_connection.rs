//! `AcpClient` against an agent written with `AgentConnection`, both over
//! `Connection::memory()`; every message in both directions is checked
//! against the ACP schema of the negotiated version.

use crate::common::tapped_client;
use crate::test_agent::{AgentConnection, AgentEvent, AgentIdentity};
use serde_json::{Value, json};
use spindle_protocol::jsonrpc::{Message, to_raw};
use spindle_protocol::schema_check::{Direction, SchemaConversation};
use spindle_protocol::{ClientEvent, ProtocolChoice, WireDirection};

fn identity() -> AgentIdentity {
    AgentIdentity {
        name: "tiny".into(),
        version: "1".into(),
        capabilities_v1: json!({}),
        capabilities_v2: json!({"session": {}}),
        spindle_extensions: vec!["agent_message_clear".into()],
    }
}

/// A two-prompt agent: streams, asks permission, clears (if the client opted
/// in), and ends each turn the way its protocol version requires.
async fn tiny_agent(mut agent: AgentConnection) {
    let mut session_id = String::new();
    while let Some(event) = agent.recv().await {
        match event {
            AgentEvent::Initialized(info) => {
                assert!(info.accepts_extension("agent_message_clear"));
            }
            AgentEvent::Incoming(Message::Request { id, method, params }) => {
                match method.as_str() {
                    "session/new" => {
                        session_id = "s1".into();
                        agent
                            .respond(id, Ok(to_raw(&json!({"sessionId": "s1"})).unwrap()))
                            .await
                            .unwrap();
                    }
                    "session/prompt" => {
                        let params: Value = serde_json::from_str(params.unwrap().get()).unwrap();
                        let v2 = agent.protocol_version() == Some(2);
                        if v2 {
                            agent
                                .respond(
                                    id.clone(),
                                    Ok(to_raw(&json!({"messageId": "u1"})).unwrap()),
                                )
                                .await
                                .unwrap();
                            agent
                            .send_update(&session_id, &json!({"sessionUpdate": "user_message", "messageId": "u1", "content": params["prompt"]}))
                            .await
                            .unwrap();
                            agent
                                .send_update(
                                    &session_id,
                                    &json!({"sessionUpdate": "state_update", "state": "running"}),
                                )
                                .await
                                .unwrap();
                        }
                        let mut chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "draft"}});
                        if v2 {
                            chunk["messageId"] = json!("a1");
                        }
                        agent.send_update(&session_id, &chunk).await.unwrap();
                        if agent.client_accepts_extension("agent_message_clear") {
                            agent
                                .send_update(
                                    &session_id,
                                    &json!({"sessionUpdate": "agent_message_clear"}),
                                )
                                .await
                                .unwrap();
                        }
                        let mut permission = json!({"sessionId": session_id, "toolCall": {"toolCallId": "t1", "title": "ls"},
                        "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}]});
                        if v2 {
                            permission["title"] = json!("Run ls?");
                        }
                        agent
                            .request("session/request_permission", &permission)
                            .await
                            .unwrap();
                        let answer = loop {
                            if let Some(AgentEvent::Response { method, result, .. }) =
                                agent.recv().await
                            {
                                assert_eq!(method, "session/request_permission");
                                break result.unwrap();
                            }
                        };
                        assert!(answer.get().contains("\"yes\""));
                        if v2 {
                            agent
                            .send_update(&session_id, &json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))
                            .await
                            .unwrap();
                        } else {
                            agent
                                .respond(
                                    id,
                                    Ok(to_raw(&json!({"stopReason": "end_turn"})).unwrap()),
                                )
                                .await
                                .unwrap();
                        }
                    }
                    other => panic!("unexpected request {other}"),
                }
            }
            AgentEvent::Incoming(Message::Notification { method, .. }) => {
                panic!("unexpected notification {method}")
            }
            other => panic!("{other:?}"),
        }
    }
}

async fn run(protocol: ProtocolChoice, expected_version: u16) {
    let (client, mut events, mut wire, agent_end) = tapped_client(protocol);
    let agent = tokio::spawn(tiny_agent(AgentConnection::new(
        agent_end,
        identity(),
        true,
    )));
    let init = client.initialize().await.unwrap();
    assert_eq!(init.protocol_version, expected_version);
    assert_eq!(
        init.agent_spindle_extensions,
        vec!["agent_message_clear".to_owned()]
    );
    let (session, _) = client.new_session("/tmp", &json!([])).await.unwrap();
    client
        .send_prompt(&session, &json!([{"type": "text", "text": "hello"}]))
        .await
        .unwrap();
    let mut kinds = Vec::new();
    loop {
        match events.recv().await.unwrap() {
            ClientEvent::SessionUpdate { params, .. } => {
                let v: Value = serde_json::from_str(params.get()).unwrap();
                kinds.push(v["update"]["sessionUpdate"].as_str().unwrap().to_owned());
            }
            ClientEvent::PermissionRequest { request_id, .. } => {
                client
                    .respond_permission(
                        &request_id,
                        &json!({"outcome": "selected", "optionId": "yes"}),
                    )
                    .await
                    .unwrap();
            }
            ClientEvent::PromptResponse { result, .. } => assert!(result.is_ok()),
            ClientEvent::TurnFinished { stop_reason, .. } => {
                assert_eq!(stop_reason.as_deref(), Some("end_turn"));
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    if expected_version == 2 {
        assert_eq!(
            kinds,
            [
                "user_message",
                "state_update",
                "agent_message_chunk",
                "agent_message_clear",
                "state_update"
            ]
        );
    } else {
        assert_eq!(kinds, ["agent_message_chunk", "agent_message_clear"]);
    }
    drop(client);
    drop(events);
    agent.await.unwrap();
    let mut conversation = SchemaConversation::new();
    let mut count = 0;
    while let Ok(record) = wire.try_recv() {
        let direction = match record.direction {
            WireDirection::Sent => Direction::ClientToAgent,
            WireDirection::Received => Direction::AgentToClient,
        };
        if let Err(errors) = conversation.check(direction, &record.json) {
            panic!(
                "{:?} message violates the v{} schema: {}\n{errors:#?}",
                direction,
                conversation.protocol_version(),
                record.json
            );
        }
        count += 1;
    }
    assert!(count >= 8, "{count}");
}

#[tokio::test]
async fn v1_round_trip_validates_both_directions() {
    run(ProtocolChoice::V1, 1).await;
}

#[tokio::test]
async fn v2_round_trip_validates_both_directions() {
    run(ProtocolChoice::V2Preferred, 2).await;
}
