//! A scripted agent for client tests; every message is logged so the
//! client's messages can be validated against the ACP schema.

use serde_json::{Value, json};
use spindle_protocol::jsonrpc::to_raw;
use spindle_protocol::schema_check::{Direction, SchemaConversation};
use spindle_protocol::{
    AcpClient, ClientEvent, ClientEvents, ClientOptions, Connection, Incoming, InitializeOutcome,
    Message, ProtocolChoice, RequestId, ResponseError, WireRecord,
};
use tokio::sync::mpsc::UnboundedReceiver;

/// The agent end of a memory connection, driven step by step by the test.
/// Records every message in both directions, in order, so that the client's
/// messages can be checked against the ACP schema at the end.
pub struct ScriptedAgent {
    pub conn: Connection,
    pub seen: Vec<Value>,
    pub log: Vec<(Direction, String)>,
}

impl ScriptedAgent {
    pub fn new(conn: Connection) -> Self {
        ScriptedAgent {
            conn,
            seen: Vec::new(),
            log: Vec::new(),
        }
    }

    pub async fn send(&mut self, m: Message) {
        self.log.push((Direction::AgentToClient, m.to_json()));
        self.conn.sender.send(m).await.unwrap();
    }

    /// Every message the client sent validates against the schema of the
    /// negotiated version.
    pub fn assert_client_messages_valid(&self) {
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

    pub async fn next(&mut self) -> Message {
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
    pub async fn expect_request(&mut self, method: &str) -> (RequestId, Value) {
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

    pub async fn expect_notification(&mut self, method: &str) -> Value {
        match self.next().await {
            Message::Notification { method: m, params } => {
                assert_eq!(m, method);
                serde_json::from_str(params.unwrap().get()).unwrap()
            }
            other => panic!("expected notification {method}, got {other:?}"),
        }
    }

    pub async fn reply(&mut self, id: RequestId, result: Value) {
        self.send(Message::response_ok(id, to_raw(&result).unwrap()))
            .await;
    }

    pub async fn reply_err(&mut self, id: RequestId, code: i64, message: &str) {
        self.send(Message::response_err(id, ResponseError::new(code, message)))
            .await;
    }

    pub async fn update(&mut self, session_id: &str, update: Value) {
        let params = json!({ "sessionId": session_id, "update": update });
        self.send(Message::notification("session/update", &params).unwrap())
            .await;
    }

    pub async fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(Message::request(RequestId::Number(id), method, &params).unwrap())
            .await;
    }
}

pub fn start(options: ClientOptions) -> (AcpClient, ClientEvents, ScriptedAgent) {
    let (client_end, agent_end) = Connection::memory();
    let (client, events) = AcpClient::new(client_end, options);
    (client, events, ScriptedAgent::new(agent_end))
}

/// A client with the Spindle extensions on and a wire tap, over a memory
/// connection; returns the agent's end with it.
pub fn tapped_client(
    protocol: ProtocolChoice,
) -> (
    AcpClient,
    ClientEvents,
    UnboundedReceiver<WireRecord>,
    Connection,
) {
    let (client_end, agent_end) = Connection::memory();
    let (tap, wire) = tokio::sync::mpsc::unbounded_channel();
    let (client, events) = AcpClient::new(
        client_end,
        ClientOptions {
            protocol,
            spindle_extensions: true,
            wire_tap: Some(tap),
            ..ClientOptions::default()
        },
    );
    (client, events, wire, agent_end)
}

pub async fn next_event(events: &mut ClientEvents) -> ClientEvent {
    events.recv().await.expect("event stream ended")
}

/// Skips diagnostics.
pub async fn next_non_diag(events: &mut ClientEvents) -> ClientEvent {
    loop {
        match next_event(events).await {
            ClientEvent::Diagnostic { .. } => continue,
            e => return e,
        }
    }
}

/// Starts `client.initialize()`, expects its request to ask for
/// `requested_version`, answers it with `result` and returns the outcome.
pub async fn initialize_with(
    client: &AcpClient,
    agent: &mut ScriptedAgent,
    requested_version: u16,
    result: Value,
) -> InitializeOutcome {
    let c = client.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (id, params) = agent.expect_request("initialize").await;
    assert_eq!(params["protocolVersion"], requested_version);
    agent.reply(id, result).await;
    init.await.unwrap().unwrap()
}

pub async fn init_v1(client: &AcpClient, agent: &mut ScriptedAgent, caps: Value) {
    let result = json!({"protocolVersion": 1, "agentCapabilities": caps, "authMethods": []});
    let outcome = initialize_with(client, agent, 1, result).await;
    assert_eq!(outcome.protocol_version, 1);
}

pub async fn init_v2(client: &AcpClient, agent: &mut ScriptedAgent) {
    let result = json!({"protocolVersion": 2, "info": {"name": "fake", "version": "0"},
                        "capabilities": {"session": {}}});
    let outcome = initialize_with(client, agent, 2, result).await;
    assert_eq!(outcome.protocol_version, 2);
}

pub async fn new_session(client: &AcpClient, agent: &mut ScriptedAgent, sid: &str) {
    let c = client.clone();
    let t = tokio::spawn(async move { c.new_session("/tmp", &json!([])).await });
    let (id, params) = agent.expect_request("session/new").await;
    assert_eq!(params["cwd"], "/tmp");
    agent.reply(id, json!({"sessionId": sid})).await;
    assert_eq!(t.await.unwrap().unwrap().0, sid);
}
