//! The client runtime against a scripted agent over `Connection::memory()`.

use serde_json::{Value, json};
use spindle_protocol::jsonrpc::to_raw;
use spindle_protocol::schema_check::{Direction, SchemaConversation};
use spindle_protocol::{
    AcpClient, ClientError, ClientEvent, ClientEvents, ClientOptions, Connection, Incoming,
    Message, ProtocolChoice, RequestId, ResponseError,
};

/// The agent end of a memory connection, driven step by step by the test.
/// Records every message in both directions, in order, so that the client's
/// messages can be checked against the ACP schema at the end.
struct ScriptedAgent {
    conn: Connection,
    seen: Vec<Value>,
    log: Vec<(Direction, String)>,
}

impl ScriptedAgent {
    fn new(conn: Connection) -> Self {
        ScriptedAgent {
            conn,
            seen: Vec::new(),
            log: Vec::new(),
        }
    }

    async fn send(&mut self, m: Message) {
        self.log.push((Direction::AgentToClient, m.to_json()));
        self.conn.sender.send(m).await.unwrap();
    }

    /// Every message the client sent validates against the schema of the
    /// negotiated version.
    fn assert_client_messages_valid(&self) {
        let mut conversation = SchemaConversation::new();
        let mut checked = 0;
        for (direction, json) in &self.log {
            let result = conversation.check(*direction, json);
            if *direction == Direction::ClientToAgent {
                checked += 1;
                if let Err(errors) = result {
                    panic!("client message violates the schema: {json}\n{errors:#?}");
                }
            }
        }
        assert!(checked > 0);
    }

    async fn next(&mut self) -> Message {
        match self.conn.receiver.recv().await {
            Some(Incoming::Message(m)) => {
                let json = m.to_json();
                self.seen.push(serde_json::from_str(&json).unwrap());
                self.log.push((Direction::ClientToAgent, json));
                m
            }
            other => panic!("agent expected a message, got {other:?}"),
        }
    }

    /// Receives the next request, checks its method, returns (id, params).
    async fn expect_request(&mut self, method: &str) -> (RequestId, Value) {
        match self.next().await {
            Message::Request {
                id,
                method: m,
                params,
            } => {
                assert_eq!(m, method);
                let params = params
                    .map(|p| serde_json::from_str(p.get()).unwrap())
                    .unwrap_or(Value::Null);
                (id, params)
            }
            other => panic!("expected request {method}, got {other:?}"),
        }
    }

    async fn expect_notification(&mut self, method: &str) -> Value {
        match self.next().await {
            Message::Notification { method: m, params } => {
                assert_eq!(m, method);
                serde_json::from_str(params.unwrap().get()).unwrap()
            }
            other => panic!("expected notification {method}, got {other:?}"),
        }
    }

    async fn reply(&mut self, id: RequestId, result: Value) {
        self.send(Message::response_ok(id, to_raw(&result).unwrap()))
            .await;
    }

    async fn reply_err(&mut self, id: RequestId, code: i64, message: &str) {
        self.send(Message::response_err(id, ResponseError::new(code, message)))
            .await;
    }

    async fn update(&mut self, session_id: &str, update: Value) {
        let params = json!({ "sessionId": session_id, "update": update });
        self.send(Message::notification("session/update", &params).unwrap())
            .await;
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(Message::request(RequestId::Number(id), method, &params).unwrap())
            .await;
    }
}

fn start(options: ClientOptions) -> (AcpClient, ClientEvents, ScriptedAgent) {
    let (client_end, agent_end) = Connection::memory();
    let (client, events) = AcpClient::new(client_end, options);
    (client, events, ScriptedAgent::new(agent_end))
}

async fn next_event(events: &mut ClientEvents) -> ClientEvent {
    events.recv().await.expect("event stream ended")
}

/// Skips diagnostics.
async fn next_non_diag(events: &mut ClientEvents) -> ClientEvent {
    loop {
        match next_event(events).await {
            ClientEvent::Diagnostic { .. } => continue,
            e => return e,
        }
    }
}

async fn init_v1(client: &AcpClient, agent: &mut ScriptedAgent, caps: Value) {
    let c = client.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (id, params) = agent.expect_request("initialize").await;
    assert_eq!(params["protocolVersion"], 1);
    agent
        .reply(
            id,
            json!({"protocolVersion": 1, "agentCapabilities": caps, "authMethods": []}),
        )
        .await;
    assert_eq!(init.await.unwrap().unwrap().protocol_version, 1);
}

async fn init_v2(client: &AcpClient, agent: &mut ScriptedAgent) {
    let c = client.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (id, params) = agent.expect_request("initialize").await;
    assert_eq!(params["protocolVersion"], 2);
    agent
        .reply(
            id,
            json!({"protocolVersion": 2, "info": {"name": "fake", "version": "0"},
                   "capabilities": {"session": {}}}),
        )
        .await;
    assert_eq!(init.await.unwrap().unwrap().protocol_version, 2);
}

async fn new_session(client: &AcpClient, agent: &mut ScriptedAgent, sid: &str) {
    let c = client.clone();
    let t = tokio::spawn(async move { c.new_session("/tmp", &json!([])).await });
    let (id, params) = agent.expect_request("session/new").await;
    assert_eq!(params["cwd"], "/tmp");
    agent.reply(id, json!({"sessionId": sid})).await;
    assert_eq!(t.await.unwrap().unwrap().0, sid);
}

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
            assert_eq!(session_id, "s1");
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
    let c = client.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (id, params) = agent.expect_request("initialize").await;
    assert_eq!(params["protocolVersion"], 2);
    agent
        .reply(
            id,
            json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}),
        )
        .await;
    let out = init.await.unwrap().unwrap();
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
