//! The client runtime against a scripted agent over `Connection::memory()`.

use crate::common::*;
use serde_json::{Value, json};
use spindle_protocol::{
    AcpClient, ClientError, ClientEvent, ClientOptions, Connection, Message, ProtocolChoice,
    RequestId,
};

#[tokio::test]
async fn v1_prompt_response_ends_the_turn() {
    let (client, mut events, mut agent) = start(ClientOptions::default());
    init_v1(&client, &mut agent, json!({})).await;
    assert_eq!(client.protocol_version(), Some(1));
    new_session(&client, &mut agent, "s1").await;

    let c = client.clone();
    let prompt = tokio::spawn(async move {
        c.prompt("s1", &json!([{"type": "text", "text": "hi"}]))
            .await
    });
    let (id, params) = agent.expect_request("session/prompt").await;
    assert_eq!(params["sessionId"], "s1");
    assert_eq!(params["prompt"][0]["text"], "hi");
    agent
        .update(
            "s1",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "yo"}}),
        )
        .await;
    agent.reply(id, json!({"stopReason": "end_turn"})).await;
    let outcome = prompt.await.unwrap().unwrap();
    assert_eq!(outcome.stop_reason.as_deref(), Some("end_turn"));

    match next_event(&mut events).await {
        ClientEvent::SessionUpdate { session_id, params } => {
            assert_eq!(&*session_id, "s1");
            assert!(params.get().contains("\"yo\""));
        }
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        next_event(&mut events).await,
        ClientEvent::PromptResponse { result: Ok(_), .. }
    ));
    match next_event(&mut events).await {
        ClientEvent::TurnFinished {
            session_id,
            stop_reason,
            error,
        } => {
            assert_eq!(session_id, "s1");
            assert_eq!(stop_reason.as_deref(), Some("end_turn"));
            assert!(error.is_none());
        }
        e => panic!("{e:?}"),
    }
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn v2_preferred_turn_ends_on_idle_once() {
    let (client, mut events, mut agent) = start(ClientOptions {
        protocol: ProtocolChoice::V2Preferred,
        spindle_extensions: true,
        ..ClientOptions::default()
    });
    init_v2(&client, &mut agent).await;
    assert_eq!(
        agent.seen[0]["params"]["_meta"]["spindle"]["extensions"][0],
        "agent_message_clear"
    );
    new_session(&client, &mut agent, "s2").await;
    // Before the first prompt: an agent-initiated idle snapshot ends nothing.
    agent
        .update(
            "s2",
            json!({"sessionUpdate": "state_update", "state": "idle"}),
        )
        .await;

    client
        .send_prompt("s2", &json!([{"type": "text", "text": "go"}]))
        .await
        .unwrap();
    let (id, _) = agent.expect_request("session/prompt").await;
    agent.reply(id, json!({"messageId": "u1"})).await;
    agent
        .update(
            "s2",
            json!({"sessionUpdate": "state_update", "state": "running"}),
        )
        .await;
    agent
        .update(
            "s2",
            json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
        )
        .await;
    // A repeated idle snapshot, then a background update after idle.
    agent
        .update(
            "s2",
            json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
        )
        .await;
    agent
        .update("s2", json!({"sessionUpdate": "_spindle_unknown", "x": 1}))
        .await;

    let mut kinds = Vec::new();
    let mut finished = 0;
    loop {
        match next_non_diag(&mut events).await {
            ClientEvent::SessionUpdate { params, .. } => {
                let v: Value = serde_json::from_str(params.get()).unwrap();
                let kind = v["update"]["sessionUpdate"].as_str().unwrap().to_owned();
                let done = kind == "_spindle_unknown";
                kinds.push(kind);
                if done {
                    break;
                }
            }
            ClientEvent::PromptResponse { result, .. } => {
                assert_eq!(result.unwrap().get(), r#"{"messageId":"u1"}"#);
            }
            ClientEvent::TurnFinished { stop_reason, .. } => {
                finished += 1;
                assert_eq!(stop_reason.as_deref(), Some("end_turn"));
            }
            e => panic!("{e:?}"),
        }
    }
    assert_eq!(finished, 1);
    assert_eq!(kinds.len(), 5);
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn v2_preferred_falls_back_when_agent_answers_1() {
    let (client, _events, mut agent) = start(ClientOptions {
        protocol: ProtocolChoice::V2Preferred,
        ..ClientOptions::default()
    });
    let result = json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}});
    let out = initialize_with(&client, &mut agent, 2, result).await;
    assert_eq!(out.protocol_version, 1);
    assert_eq!(out.agent_capabilities.get(), r#"{"loadSession":true}"#);
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn v2_preferred_retries_v1_when_agent_rejects_2() {
    let (client, _events, mut agent) = start(ClientOptions {
        protocol: ProtocolChoice::V2Preferred,
        ..ClientOptions::default()
    });
    let c = client.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (id, _) = agent.expect_request("initialize").await;
    agent.reply_err(id, -32602, "unsupported version").await;
    let (id, params) = agent.expect_request("initialize").await;
    assert_eq!(params["protocolVersion"], 1);
    assert!(params.get("info").is_none());
    agent.reply(id, json!({"protocolVersion": 1})).await;
    assert_eq!(init.await.unwrap().unwrap().protocol_version, 1);
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn permission_requests_reach_the_app_and_cancel_answers_them() {
    let (client, mut events, mut agent) = start(ClientOptions::default());
    init_v1(&client, &mut agent, json!({})).await;
    new_session(&client, &mut agent, "s1").await;
    let perm = json!({"sessionId": "s1", "toolCall": {"toolCallId": "t1"},
                      "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]});
    agent
        .request(100, "session/request_permission", perm.clone())
        .await;
    agent.request(101, "session/request_permission", perm).await;
    agent
        .request(
            102,
            "fs/read_text_file",
            json!({"sessionId": "s1", "path": "/x"}),
        )
        .await;

    let mut ids = Vec::new();
    while ids.len() < 2 {
        match next_non_diag(&mut events).await {
            ClientEvent::PermissionRequest {
                request_id,
                session_id,
                ..
            } => {
                assert_eq!(session_id, "s1");
                ids.push(request_id);
            }
            e => panic!("{e:?}"),
        }
    }
    // fs is not enabled: answered with method-not-found, not shown to the app.
    match agent.next().await {
        Message::Response { id, result: Err(e) } => {
            assert_eq!(id, RequestId::Number(102));
            assert_eq!(e.code, -32601);
        }
        m => panic!("{m:?}"),
    }
    client
        .respond_permission(&ids[0], &json!({"outcome": "selected", "optionId": "ok"}))
        .await
        .unwrap();
    match agent.next().await {
        Message::Response { id, result: Ok(r) } => {
            assert_eq!(id, RequestId::Number(100));
            let v: Value = serde_json::from_str(r.get()).unwrap();
            assert_eq!(
                v,
                json!({"outcome": {"outcome": "selected", "optionId": "ok"}})
            );
        }
        m => panic!("{m:?}"),
    }
    // Answering twice is an error, not a second response.
    assert_eq!(
        client
            .respond_permission(&ids[0], &json!({"outcome": "cancelled"}))
            .await,
        Err(ClientError::UnknownRequest(RequestId::Number(100)))
    );
    client.cancel("s1").await.unwrap();
    assert_eq!(
        agent.expect_notification("session/cancel").await,
        json!({"sessionId": "s1"})
    );
    match agent.next().await {
        Message::Response { id, result: Ok(r) } => {
            assert_eq!(id, RequestId::Number(101));
            assert_eq!(r.get(), r#"{"outcome":{"outcome":"cancelled"}}"#);
        }
        m => panic!("{m:?}"),
    }
    assert!(matches!(
        next_non_diag(&mut events).await,
        ClientEvent::RequestCancelled {
            request_id: RequestId::Number(101)
        }
    ));
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn unknown_and_duplicate_response_ids_are_diagnostics_over_real_framing() {
    let (client_io, agent_io) = tokio::io::duplex(4096);
    let (client_r, client_w) = tokio::io::split(client_io);
    let (agent_r, agent_w) = tokio::io::split(agent_io);
    let client_conn = Connection::from_io(client_r, client_w);
    let mut agent = ScriptedAgent::new(Connection::from_io(agent_r, agent_w));
    let (client, mut events) = AcpClient::new(client_conn, ClientOptions::default());
    let c = client.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (id, _) = agent.expect_request("initialize").await;
    // Garbage and an unknown response id before the real answer.
    agent.reply(RequestId::Number(999), json!({})).await;
    agent.reply(id.clone(), json!({"protocolVersion": 1})).await;
    agent.reply(id, json!({"protocolVersion": 1})).await;
    assert_eq!(init.await.unwrap().unwrap().protocol_version, 1);
    let mut diags = Vec::new();
    while diags.len() < 2 {
        if let ClientEvent::Diagnostic { message } = next_event(&mut events).await {
            diags.push(message);
        }
    }
    assert!(diags[0].contains("unknown request id 999"), "{diags:?}");
    assert!(diags[1].contains("duplicate response"), "{diags:?}");
    agent.assert_client_messages_valid();
    drop(agent);
    match next_non_diag(&mut events).await {
        ClientEvent::AgentExited { status, .. } => assert!(status.is_none()),
        e => panic!("{e:?}"),
    }
    assert_eq!(
        client.new_session("/", &json!([])).await.unwrap_err(),
        ClientError::Disconnected
    );
}

#[tokio::test]
async fn agent_crash_reports_exit_status_and_stderr_tail() {
    let command: Vec<std::ffi::OsString> = ["sh", "-c", "echo starting >&2; echo boom >&2; exit 3"]
        .iter()
        .map(Into::into)
        .collect();
    let (client, mut events, child) =
        AcpClient::spawn(&command, Default::default(), ClientOptions::default()).unwrap();
    let init = client.initialize().await;
    assert_eq!(init.unwrap_err(), ClientError::Disconnected);
    match next_non_diag(&mut events).await {
        ClientEvent::AgentExited {
            status,
            stderr_tail,
        } => {
            match status {
                Some(spindle_protocol::ChildExit::Exited(s)) => assert_eq!(s.code(), Some(3)),
                other => panic!("{other:?}"),
            }
            assert_eq!(stderr_tail, "starting\nboom\n");
        }
        e => panic!("{e:?}"),
    }
    assert!(child.try_exit().is_some());
}

#[tokio::test]
async fn client_keeps_working_after_garbage_lines() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (client_io, agent_io) = tokio::io::duplex(64 * 1024);
    let (client_r, client_w) = tokio::io::split(client_io);
    let (agent_r, mut agent_w) = tokio::io::split(agent_io);
    let (client, mut events) = AcpClient::new(
        Connection::from_io(client_r, client_w),
        ClientOptions::default(),
    );
    let c = client.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let mut lines = BufReader::new(agent_r).lines();
    let request: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(request["method"], "initialize");
    let id = request["id"].clone();
    let mut garbage: Vec<u8> =
        b"{not json\n\xff\xfe\x00binary\n[]\n{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"x\"}\n\n"
            .to_vec();
    garbage.extend_from_slice(
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1}})
        )
        .as_bytes(),
    );
    agent_w.write_all(&garbage).await.unwrap();
    assert_eq!(init.await.unwrap().unwrap().protocol_version, 1);
    // The invalid request (line 4) is answered with an error carrying its id.
    let reply: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["error"]["code"], -32600);
    let mut diagnostics = Vec::new();
    while diagnostics.len() < 4 {
        match next_event(&mut events).await {
            ClientEvent::Diagnostic { message } => diagnostics.push(message),
            e => panic!("{e:?}"),
        }
    }
    assert!(
        diagnostics[0].contains("line 1") && diagnostics[0].contains("-32700"),
        "{diagnostics:?}"
    );
    assert!(
        diagnostics[1].contains("line 2") && diagnostics[1].contains("UTF-8"),
        "{diagnostics:?}"
    );
    assert!(
        diagnostics[2].contains("line 3") && diagnostics[2].contains("empty batch"),
        "{diagnostics:?}"
    );
    assert!(
        diagnostics[3].contains("line 4") && diagnostics[3].contains("-32600"),
        "{diagnostics:?}"
    );
}

#[tokio::test]
async fn dropping_the_client_closes_the_agent_input_so_it_exits() {
    // An agent that never answers: the call in flight keeps a client handle
    // alive inside its task, so kill the agent; the call then fails.
    let silent: Vec<std::ffi::OsString> = ["sh", "-c", "exec sleep 1000"]
        .iter()
        .map(Into::into)
        .collect();
    let (client, mut events, child) =
        AcpClient::spawn(&silent, Default::default(), ClientOptions::default()).unwrap();
    let c = client.clone();
    let pending = tokio::spawn(async move { c.initialize().await });
    drop(client);
    child.kill();
    assert_eq!(
        pending.await.unwrap().unwrap_err(),
        ClientError::Disconnected
    );
    loop {
        if let ClientEvent::AgentExited { status, .. } = next_event(&mut events).await {
            assert!(matches!(status, Some(spindle_protocol::ChildExit::Exited(s)) if !s.success()));
            break;
        }
    }
    // `cat` exits at end of input: dropping every client handle closes it.
    let command: Vec<std::ffi::OsString> = ["cat"].iter().map(Into::into).collect();
    let (client, mut events, _child) =
        AcpClient::spawn(&command, Default::default(), ClientOptions::default()).unwrap();
    drop(client);
    loop {
        if let ClientEvent::AgentExited { status, .. } = next_event(&mut events).await {
            assert!(matches!(status, Some(spindle_protocol::ChildExit::Exited(s)) if s.success()));
            break;
        }
    }
}

#[tokio::test]
async fn wire_tap_records_both_directions_in_replay_format() {
    let (tap, mut records) = tokio::sync::mpsc::unbounded_channel();
    let (client, mut events, mut agent) = start(ClientOptions {
        wire_tap: Some(tap),
        ..ClientOptions::default()
    });
    init_v1(&client, &mut agent, json!({})).await;
    agent.update("s9", json!({"sessionUpdate": "_x"})).await;
    while !matches!(
        next_event(&mut events).await,
        ClientEvent::SessionUpdate { .. }
    ) {}
    let mut lines = Vec::new();
    while let Ok(r) = records.try_recv() {
        lines.push(r.recording_line());
    }
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].starts_with(r#"{"sent":{"jsonrpc":"2.0","id":0,"method":"initialize""#));
    assert!(lines[1].starts_with(r#"{"jsonrpc":"2.0","id":0,"result":"#));
    let update: Value = serde_json::from_str(&lines[2]).unwrap();
    assert_eq!(update["params"]["sessionId"], "s9");
}

#[tokio::test]
async fn missing_agent_binary_is_an_error_and_long_stderr_lines_are_capped() {
    let missing: Vec<std::ffi::OsString> = vec!["/nonexistent/spindle-agent".into()];
    assert!(AcpClient::spawn(&missing, Default::default(), ClientOptions::default()).is_err());
    assert!(AcpClient::spawn(&[], Default::default(), ClientOptions::default()).is_err());

    // 100 KB of stderr without a newline, then a short line, then exit 1.
    let noisy: Vec<std::ffi::OsString> = [
        "sh",
        "-c",
        "head -c 100000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last words >&2; exit 1",
    ]
    .iter()
    .map(Into::into)
    .collect();
    let (_client, mut events, _child) =
        AcpClient::spawn(&noisy, Default::default(), ClientOptions::default()).unwrap();
    loop {
        if let ClientEvent::AgentExited {
            status,
            stderr_tail,
        } = next_event(&mut events).await
        {
            assert!(
                matches!(status, Some(spindle_protocol::ChildExit::Exited(s)) if s.code() == Some(1))
            );
            let lines: Vec<&str> = stderr_tail.lines().collect();
            assert_eq!(lines.len(), 2, "{}", stderr_tail.len());
            assert!(lines[0].len() < 5000 && lines[0].ends_with('…'));
            assert_eq!(lines[1], "last words");
            break;
        }
    }
}

#[test]
fn protocol_choice_parses_flags() {
    assert_eq!(
        "2".parse::<ProtocolChoice>(),
        Ok(ProtocolChoice::V2Preferred)
    );
    assert_eq!(" V1 ".parse::<ProtocolChoice>(), Ok(ProtocolChoice::V1));
    assert!("3".parse::<ProtocolChoice>().is_err());
}
