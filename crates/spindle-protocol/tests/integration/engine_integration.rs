//! What an application does with the client: feed the wire tap's recording
//! lines into the transcript engine. A refined reply (draft, clear, final)
//! leaves only the final text, in v1 (extension opted in) and v2 (whole-message
//! replacement).

use crate::common::tapped_client;
use crate::test_agent::{AgentConnection, AgentEvent, AgentIdentity};
use serde_json::{Value, json};
use spindle_engine::{EngineConfig, TranscriptEngine};
use spindle_protocol::jsonrpc::{Message, to_raw};
use spindle_protocol::{ClientEvent, ProtocolChoice};

async fn refining_agent(mut agent: AgentConnection) {
    while let Some(event) = agent.recv().await {
        let AgentEvent::Incoming(Message::Request { id, method, .. }) = event else {
            continue;
        };
        let ok = |v: Value| Ok(to_raw(&v).unwrap());
        match method.as_str() {
            "session/new" => agent
                .respond(id, ok(json!({"sessionId": "s"})))
                .await
                .unwrap(),
            "session/prompt" if agent.protocol_version() == Some(2) => {
                agent
                    .respond(id, ok(json!({"messageId": "u1"})))
                    .await
                    .unwrap();
                for update in [
                    json!({"sessionUpdate": "user_message", "messageId": "u1", "content": [{"type": "text", "text": "hi"}]}),
                    json!({"sessionUpdate": "state_update", "state": "running"}),
                    json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "rough draft"}}),
                    json!({"sessionUpdate": "agent_message", "messageId": "a1", "content": [{"type": "text", "text": "Final "}]}),
                    json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "answer."}}),
                    json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
                ] {
                    agent.send_update("s", &update).await.unwrap();
                }
            }
            "session/prompt" => {
                assert!(agent.client_accepts_extension("agent_message_clear"));
                for update in [
                    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "rough draft"}}),
                    json!({"sessionUpdate": "agent_message_clear"}),
                    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Final "}}),
                    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "answer."}}),
                ] {
                    agent.send_update("s", &update).await.unwrap();
                }
                agent
                    .respond(id, ok(json!({"stopReason": "end_turn"})))
                    .await
                    .unwrap();
            }
            other => panic!("unexpected {other}"),
        }
    }
}

async fn final_reply(protocol: ProtocolChoice) -> Option<String> {
    let (client, mut events, mut wire, agent_end) = tapped_client(protocol);
    let identity = AgentIdentity {
        name: "refiner".into(),
        version: "1".into(),
        capabilities_v1: json!({}),
        capabilities_v2: json!({"session": {}}),
        spindle_extensions: vec![],
    };
    tokio::spawn(refining_agent(AgentConnection::new(
        agent_end, identity, true,
    )));
    client.initialize().await.unwrap();
    let (session, _) = client.new_session("/tmp", &json!([])).await.unwrap();
    client
        .send_prompt(&session, &json!([{"type": "text", "text": "hi"}]))
        .await
        .unwrap();
    loop {
        if let ClientEvent::TurnFinished { stop_reason, .. } = events.recv().await.unwrap() {
            assert_eq!(stop_reason.as_deref(), Some("end_turn"));
            break;
        }
    }
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    while let Ok(record) = wire.try_recv() {
        let applied = engine.apply_recorded_line(&record.recording_line());
        assert!(applied.diagnostics.is_empty(), "{:?}", applied.diagnostics);
    }
    engine.final_reply()
}

#[tokio::test]
async fn v1_clear_extension_leaves_only_the_final_text() {
    assert_eq!(
        final_reply(ProtocolChoice::V1).await.as_deref(),
        Some("Final answer.")
    );
}

#[tokio::test]
async fn v2_replacement_leaves_only_the_final_text() {
    assert_eq!(
        final_reply(ProtocolChoice::V2Preferred).await.as_deref(),
        Some("Final answer.")
    );
}
