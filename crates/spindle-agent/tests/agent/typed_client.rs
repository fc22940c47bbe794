//! `spindle-protocol`'s typed calls and prompt builder against the reference
//! agent, v1 and v2: authentication when required, config options, modes,
//! mentions and images through `echo-content`, session/list and loading a
//! session with its history. Every message the client sends validates
//! against the schema of the negotiated version.

use serde_json::{Value, json};
use spindle_agent::{AgentConfig, DEFAULT_MAX_LINE_BYTES, run_agent};
use spindle_protocol::prompt::{PromptBuilder, encode_base64, parse_mentions};
use spindle_protocol::schema_check::{Direction, SchemaConversation};
use spindle_protocol::{
    AcpClient, ClientError, ClientEvent, ClientEvents, ClientOptions, Connection, ProtocolChoice,
    WireDirection, WireRecord,
};
use tokio::sync::mpsc::UnboundedReceiver;

fn start(protocol: ProtocolChoice) -> (AcpClient, ClientEvents, UnboundedReceiver<WireRecord>) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let config = AgentConfig {
        require_auth: true,
        ..AgentConfig::default()
    };
    tokio::spawn(run_agent(
        config,
        DEFAULT_MAX_LINE_BYTES,
        tokio::io::BufReader::new(agent_read),
        agent_write,
    ));
    let (client_read, client_write) = tokio::io::split(client_io);
    let (tap, wire) = tokio::sync::mpsc::unbounded_channel();
    let options = ClientOptions {
        protocol,
        wire_tap: Some(tap),
        ..Default::default()
    };
    let (client, events) = AcpClient::new(Connection::from_io(client_read, client_write), options);
    (client, events, wire)
}

/// Prompts and collects the agent's message text until the turn ends; also
/// returns every update seen meanwhile (and before: events still queued).
async fn reply(
    client: &AcpClient,
    events: &mut ClientEvents,
    sid: &str,
    blocks: &Value,
) -> (String, Vec<Value>) {
    client.send_prompt(sid, blocks).await.unwrap();
    let mut text = String::new();
    let mut seen = Vec::new();
    loop {
        match events.recv().await.expect("events") {
            ClientEvent::SessionUpdate { params, .. } => {
                let v: Value = serde_json::from_str(params.get()).unwrap();
                seen.push(v["update"].clone());
                let u = &v["update"];
                if u["sessionUpdate"] == "agent_message_chunk" {
                    text.push_str(u["content"]["text"].as_str().unwrap_or(""));
                } else if u["sessionUpdate"] == "agent_message" {
                    text.push_str(u["content"][0]["text"].as_str().unwrap_or(""));
                }
            }
            ClientEvent::TurnFinished { stop_reason, .. } => {
                assert_eq!(stop_reason.as_deref(), Some("end_turn"));
                return (text, seen);
            }
            _ => {}
        }
    }
}

fn assert_sent_messages_valid(wire: &mut UnboundedReceiver<WireRecord>) {
    let mut conversation = SchemaConversation::new();
    let mut checked = 0;
    while let Ok(record) = wire.try_recv() {
        let direction = match record.direction {
            WireDirection::Sent => Direction::ClientToAgent,
            WireDirection::Received => Direction::AgentToClient,
        };
        let result = conversation.check(direction, &record.json);
        if direction == Direction::ClientToAgent {
            checked += 1;
            if let Err(errors) = result {
                panic!(
                    "client message violates the schema: {}\n{errors:#?}",
                    record.json
                );
            }
        }
    }
    assert!(checked > 5, "only {checked} messages checked");
}

#[tokio::test]
async fn typed_calls_and_prompt_content_against_the_reference_agent() {
    for protocol in [ProtocolChoice::V1, ProtocolChoice::V2Preferred] {
        let (client, mut events, mut wire) = start(protocol);
        let init = client.initialize().await.unwrap();
        let v2 = init.protocol_version == 2;
        let methods = init.auth_methods();
        assert_eq!(methods[0].id, "spindle-token");
        assert!(methods[0].via_authenticate());
        let caps = init.prompt_capabilities();
        assert!(caps.image && caps.embedded_context && !caps.audio);
        assert!(init.can_list_sessions() && init.can_load_session() && init.can_resume_session());

        let refused = client.new_session("/tmp", &json!([])).await.unwrap_err();
        assert!(refused.is_auth_required(), "{refused}");
        client.authenticate("spindle-token").await.unwrap();
        let (sid, _) = client.new_session("/tmp", &json!([])).await.unwrap();

        let result = client
            .set_config_option(&sid, "effort", json!("high"))
            .await
            .unwrap();
        let result: Value = serde_json::from_str(result.get()).unwrap();
        assert_eq!(result["configOptions"][2]["currentValue"], "high");
        match client.set_mode(&sid, "plan").await {
            Ok(_) => assert!(!v2),
            Err(ClientError::Unsupported(_)) => assert!(v2),
            Err(other) => panic!("{other}"),
        }

        // A mention and an image, built and sent as the agent accepts them.
        let text = "/scenario echo-content @notes.txt";
        assert_eq!(parse_mentions(text)[0].path, "notes.txt");
        let blocks = PromptBuilder::new(caps)
            .text(text)
            .mention(
                "file:///tmp/notes.txt",
                "notes.txt",
                "text/plain",
                Some("hello\n"),
            )
            .mention("file:///tmp/big.bin", "big.bin", "", None)
            .image("image/png", &encode_base64(b"\x89PNG\r\n\x1a\n"))
            .build()
            .unwrap();
        let (echoed, _) = reply(&client, &mut events, &sid, &blocks).await;
        assert!(echoed.contains("I received 4 content blocks"), "{echoed}");
        assert!(
            echoed.contains(
                "2. resource: uri=file:///tmp/notes.txt, mimeType=text/plain, text 6 bytes"
            ),
            "{echoed}"
        );
        assert!(
            echoed.contains("3. resource_link: uri=file:///tmp/big.bin, name=big.bin"),
            "{echoed}"
        );
        assert!(
            echoed.contains("4. image: mimeType=image/png, data 12 base64 chars (8 bytes)"),
            "{echoed}"
        );

        let list = client.list_sessions(Some("/tmp"), None).await.unwrap();
        assert_eq!(list.sessions.len(), 1);
        assert_eq!(list.sessions[0].session_id, sid);
        assert_eq!(list.sessions[0].title.as_deref(), Some(text));
        assert_eq!(list.next_cursor, None);

        // Loading replays the conversation (v2: resume from the start).
        client.load_session(&sid, "/tmp", &json!([])).await.unwrap();
        // The replayed updates arrive before the next turn's.
        let (_, seen) = reply(
            &client,
            &mut events,
            &sid,
            &json!([{"type": "text", "text": "hi"}]),
        )
        .await;
        let replayed_prompt = seen.iter().any(|u| {
            let tag = u["sessionUpdate"].as_str().unwrap_or("");
            tag.starts_with("user_message") && u.to_string().contains("echo-content")
        });
        assert!(replayed_prompt, "the history was replayed: {seen:?}");
        assert_sent_messages_valid(&mut wire);
    }
}
