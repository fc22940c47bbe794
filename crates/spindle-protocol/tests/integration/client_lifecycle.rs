//! Turn boundaries, session capabilities, and agent-initiated traffic.

use crate::common::*;
use serde_json::{Value, json};
use spindle_protocol::{
    ClientError, ClientEvent, ClientEvents, ClientOptions, Message, ProtocolChoice, RequestId,
};

/// Drains events until (and including) a `SessionUpdate` whose update kind
/// is `marker`; returns everything but diagnostics, as short strings.
async fn events_until_marker(events: &mut ClientEvents, marker: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let e = next_event(events).await;
        let text = match &e {
            ClientEvent::SessionUpdate { session_id, params } => {
                let v: Value = serde_json::from_str(params.get()).unwrap();
                let kind = v["update"]["sessionUpdate"]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned();
                let state = v["update"]["state"]
                    .as_str()
                    .map(|s| format!(" {s}"))
                    .unwrap_or_default();
                format!("update {session_id} {kind}{state}")
            }
            ClientEvent::TurnFinished {
                session_id,
                stop_reason,
                error,
            } => format!(
                "finished {session_id} {} error={}",
                stop_reason.as_deref().unwrap_or("-"),
                error.as_ref().map(|e| e.get()).unwrap_or("-")
            ),
            ClientEvent::PromptResponse {
                session_id, result, ..
            } => match result {
                Ok(r) => format!("prompt-response {session_id} ok {}", r.get()),
                Err(e) => format!("prompt-response {session_id} err {}", e.get()),
            },
            ClientEvent::Diagnostic { message } => format!("diagnostic {message}"),
            other => format!("{other:?}"),
        };
        let done = text.starts_with("update") && text.contains(marker);
        seen.push(text);
        if done {
            return seen;
        }
    }
}

fn state(state: &str) -> Value {
    json!({"sessionUpdate": "state_update", "state": state})
}

fn idle(stop: &str) -> Value {
    json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": stop})
}

fn marker() -> Value {
    json!({"sessionUpdate": "_marker"})
}

#[tokio::test]
async fn updates_before_the_first_prompt_and_during_session_new_are_accepted() {
    let (client, mut events, mut agent) = start(ClientOptions::default());
    init_v1(&client, &mut agent, json!({})).await;
    // An update for a session nobody created is passed on with a diagnostic.
    agent.update("ghost", json!({"sessionUpdate": "_x"})).await;
    let c = client.clone();
    let t = tokio::spawn(async move { c.new_session("/w", &json!([])).await });
    let (id, _) = agent.expect_request("session/new").await;
    // Streamed before the session/new answer: no diagnostic.
    agent
        .update(
            "s1",
            json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
        )
        .await;
    agent.reply(id, json!({"sessionId": "s1"})).await;
    t.await.unwrap().unwrap();
    agent.update("s1", marker()).await;
    assert_eq!(
        events_until_marker(&mut events, "_marker").await,
        vec![
            "diagnostic session/update for unknown session ghost",
            "update ghost _x",
            "update s1 available_commands_update",
            "update s1 _marker",
        ]
    );
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn v1_error_response_finishes_the_turn_with_the_error() {
    let (client, mut events, mut agent) = start(ClientOptions::default());
    init_v1(&client, &mut agent, json!({})).await;
    new_session(&client, &mut agent, "s1").await;
    client
        .send_prompt("s1", &json!([{"type": "text", "text": "x"}]))
        .await
        .unwrap();
    let (id, _) = agent.expect_request("session/prompt").await;
    agent.reply_err(id, -32603, "model exploded").await;
    agent.update("s1", marker()).await;
    assert_eq!(
        events_until_marker(&mut events, "_marker").await,
        vec![
            r#"prompt-response s1 err {"code":-32603,"message":"model exploded"}"#,
            r#"finished s1 - error={"code":-32603,"message":"model exploded"}"#,
            "update s1 _marker",
        ]
    );
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn v2_turn_boundaries() {
    let (client, mut events, mut agent) = start(ClientOptions {
        protocol: ProtocolChoice::V2Preferred,
        ..ClientOptions::default()
    });
    init_v2(&client, &mut agent).await;
    new_session(&client, &mut agent, "s").await;

    // A rejected prompt starts no turn.
    let c = client.clone();
    let p =
        tokio::spawn(async move { c.prompt("s", &json!([{"type": "text", "text": "a"}])).await });
    let (id, _) = agent.expect_request("session/prompt").await;
    agent.reply_err(id, -32602, "session busy").await;
    assert!(matches!(p.await.unwrap(), Err(ClientError::Rpc(e)) if e.message == "session busy"));
    agent.update("s", idle("end_turn")).await; // stale snapshot: nothing ends
    // Agent-initiated work ends with a turn report; the repeat does not.
    agent.update("s", state("running")).await;
    agent.update("s", idle("end_turn")).await;
    agent.update("s", idle("end_turn")).await;
    agent.update("s", marker()).await;
    assert_eq!(
        events_until_marker(&mut events, "_marker").await,
        vec![
            r#"prompt-response s err {"code":-32602,"message":"session busy"}"#,
            "update s state_update idle",
            "update s state_update running",
            "update s state_update idle",
            "finished s end_turn error=-",
            "update s state_update idle",
            "update s _marker",
        ]
    );

    // The previous idle snapshot repeated after a prompt is sent (the agent
    // had not seen the prompt yet) ends nothing; an idle without stopReason
    // before any sign of work neither.
    client
        .send_prompt("s", &json!([{"type": "text", "text": "b"}]))
        .await
        .unwrap();
    agent.update("s", idle("end_turn")).await;
    agent.update("s", state("idle")).await;
    let (id, _) = agent.expect_request("session/prompt").await;
    agent.reply(id, json!({"messageId": "u2"})).await;
    agent.update("s", state("requires_action")).await;
    agent.update("s", state("_thinking_hard")).await; // unknown: busy, not idle
    agent
        .update(
            "s",
            json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "error",
                   "error": {"code": -32603, "message": "tool crashed"}}),
        )
        .await;
    // Ending without a stop reason after running still ends the turn.
    agent.update("s", state("running")).await;
    agent.update("s", state("idle")).await;
    // Updates after idle (background work) are still delivered.
    agent
        .update(
            "s",
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 10}),
        )
        .await;
    agent.update("s", marker()).await;

    assert_eq!(
        events_until_marker(&mut events, "_marker").await,
        vec![
            "update s state_update idle",
            "update s state_update idle",
            r#"prompt-response s ok {"messageId":"u2"}"#,
            "update s state_update requires_action",
            "update s state_update _thinking_hard",
            "update s state_update idle",
            r#"finished s error error={"code":-32603,"message":"tool crashed"}"#,
            "update s state_update running",
            "update s state_update idle",
            "finished s - error=-",
            "update s usage_update",
            "update s _marker",
        ]
    );

    // An agent that accepts and finishes without ever saying "running".
    client
        .send_prompt("s", &json!([{"type": "text", "text": "c"}]))
        .await
        .unwrap();
    let (id, _) = agent.expect_request("session/prompt").await;
    agent.reply(id, json!({"messageId": "u3"})).await;
    agent.update("s", state("idle")).await;
    agent.update("s", marker()).await;
    assert_eq!(
        events_until_marker(&mut events, "_marker").await,
        vec![
            r#"prompt-response s ok {"messageId":"u3"}"#,
            "update s state_update idle",
            "finished s - error=-",
            "update s _marker",
        ]
    );
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn load_and_resume_follow_agent_capabilities() {
    // v1 agent without loadSession / resume.
    let (client, _events, mut agent) = start(ClientOptions::default());
    init_v1(&client, &mut agent, json!({})).await;
    assert!(matches!(
        client.load_session("old", "/w", &json!([])).await,
        Err(ClientError::Unsupported(_))
    ));
    assert!(matches!(
        client.resume_session("old", "/w", &json!([]), None).await,
        Err(ClientError::Unsupported(_))
    ));

    // v1 agent with loadSession: history replays as updates before the answer.
    let (client, mut events, mut agent) = start(ClientOptions::default());
    init_v1(
        &client,
        &mut agent,
        json!({"loadSession": true, "sessionCapabilities": {"resume": {}}}),
    )
    .await;
    let c = client.clone();
    let t = tokio::spawn(async move { c.load_session("old", "/w", &json!([])).await });
    let (id, params) = agent.expect_request("session/load").await;
    assert_eq!(params["sessionId"], "old");
    agent
        .update("old", json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "earlier"}}))
        .await;
    agent.reply(id, json!({})).await;
    t.await.unwrap().unwrap();
    agent.update("old", marker()).await;
    assert_eq!(
        events_until_marker(&mut events, "_marker").await,
        vec!["update old user_message_chunk", "update old _marker"]
    );
    let c = client.clone();
    let t = tokio::spawn(async move { c.resume_session("old", "/w", &json!([]), None).await });
    let (id, params) = agent.expect_request("session/resume").await;
    assert!(params.get("replayFrom").is_none());
    agent.reply(id, json!({})).await;
    t.await.unwrap().unwrap();
    agent.assert_client_messages_valid();

    // v2: resume with replay is baseline when `session` is advertised, and
    // loading is that resume with replay from the start.
    let (client, _events, mut agent) = start(ClientOptions {
        protocol: ProtocolChoice::V2Preferred,
        ..ClientOptions::default()
    });
    init_v2(&client, &mut agent).await;
    let c = client.clone();
    let t = tokio::spawn(async move { c.load_session("old", "/w", &json!([])).await });
    let (id, params) = agent.expect_request("session/resume").await;
    assert_eq!(params["sessionId"], "old");
    assert_eq!(params["replayFrom"], json!({"type": "start"}));
    agent.reply(id, json!({})).await;
    t.await.unwrap().unwrap();
    let c = client.clone();
    let t = tokio::spawn(async move {
        c.resume_session("old", "/w", &json!([]), Some(&json!({"type": "start"})))
            .await
    });
    let (id, params) = agent.expect_request("session/resume").await;
    assert_eq!(params["replayFrom"], json!({"type": "start"}));
    agent.reply(id, json!({})).await;
    t.await.unwrap().unwrap();
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn agent_cancel_request_withdraws_a_permission_request() {
    let (client, mut events, mut agent) = start(ClientOptions::default());
    init_v1(&client, &mut agent, json!({})).await;
    new_session(&client, &mut agent, "s1").await;
    agent
        .request(
            7,
            "session/request_permission",
            json!({"sessionId": "s1", "toolCall": {"toolCallId": "t"},
                   "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}),
        )
        .await;
    assert!(matches!(
        next_non_diag(&mut events).await,
        ClientEvent::PermissionRequest {
            request_id: RequestId::Number(7),
            ..
        }
    ));
    agent
        .send(Message::notification("$/cancel_request", &json!({"requestId": 7})).unwrap())
        .await;
    assert!(matches!(
        next_non_diag(&mut events).await,
        ClientEvent::RequestCancelled {
            request_id: RequestId::Number(7)
        }
    ));
    match agent.next().await {
        Message::Response { id, result: Err(e) } => {
            assert_eq!(id, RequestId::Number(7));
            assert_eq!(e.code, -32800);
        }
        m => panic!("{m:?}"),
    }
    // The application's late answer is refused locally, not sent twice.
    assert_eq!(
        client
            .respond_permission(&RequestId::Number(7), &json!({"outcome": "cancelled"}))
            .await,
        Err(ClientError::UnknownRequest(RequestId::Number(7)))
    );
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn enabled_fs_requests_and_other_notifications_reach_the_app() {
    let (client, mut events, mut agent) = start(ClientOptions {
        fs_read_text_file: true,
        ..ClientOptions::default()
    });
    init_v1(&client, &mut agent, json!({})).await;
    assert_eq!(
        agent.seen[0]["params"]["clientCapabilities"]["fs"]["readTextFile"],
        true
    );
    new_session(&client, &mut agent, "s1").await;
    agent
        .request(
            9,
            "fs/read_text_file",
            json!({"sessionId": "s1", "path": "/etc/hostname"}),
        )
        .await;
    agent
        .send(Message::notification("_vendor/ping", &json!({"n": 1})).unwrap())
        .await;
    match next_non_diag(&mut events).await {
        ClientEvent::AgentRequest {
            request_id,
            method,
            params,
        } => {
            assert_eq!(method, "fs/read_text_file");
            assert!(params.unwrap().get().contains("/etc/hostname"));
            client
                .respond(
                    &request_id,
                    Ok(spindle_protocol::jsonrpc::to_raw(&json!({"content": "box"})).unwrap()),
                )
                .await
                .unwrap();
        }
        e => panic!("{e:?}"),
    }
    match next_non_diag(&mut events).await {
        ClientEvent::AgentNotification { method, params } => {
            assert_eq!(method, "_vendor/ping");
            assert_eq!(params.unwrap().get(), r#"{"n":1}"#);
        }
        e => panic!("{e:?}"),
    }
    match agent.next().await {
        Message::Response { id, result: Ok(r) } => {
            assert_eq!(id, RequestId::Number(9));
            assert_eq!(r.get(), r#"{"content":"box"}"#);
        }
        m => panic!("{m:?}"),
    }
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn a_held_prompt_can_be_withdrawn_with_cancel_request() {
    let (client, mut events, mut agent) = start(ClientOptions::default());
    init_v1(&client, &mut agent, json!({})).await;
    new_session(&client, &mut agent, "s1").await;
    let id = client
        .send_prompt("s1", &json!([{"type": "text", "text": "x"}]))
        .await
        .unwrap();
    let (seen_id, _) = agent.expect_request("session/prompt").await;
    assert_eq!(seen_id, id);
    assert!(client.cancel_request(&id).await.unwrap());
    assert!(!client.cancel_request(&id).await.unwrap(), "only once");
    assert_eq!(
        agent.expect_notification("$/cancel_request").await,
        json!({"requestId": id})
    );
    agent.reply_err(seen_id, -32800, "request cancelled").await;
    agent.update("s1", marker()).await;
    assert_eq!(
        events_until_marker(&mut events, "_marker").await,
        vec![
            r#"prompt-response s1 err {"code":-32800,"message":"request cancelled"}"#,
            r#"finished s1 - error={"code":-32800,"message":"request cancelled"}"#,
            "update s1 _marker",
        ]
    );
    assert!(!client.cancel_request(&id).await.unwrap(), "answered");
    agent.assert_client_messages_valid();
}
