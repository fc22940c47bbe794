//! A small agent for the client tests: [`AgentConnection`] answers
//! `initialize` with version selection, tracks its requests to the client
//! and hands everything else to the test's loop. (It was a library type once;
//! only these tests used it, and Spindle's agent is `spindle-agent`.)

use serde_json::value::RawValue;
use serde_json::{Value, json};

use spindle_protocol::extensions::{Extension, Extensions, listed_extension_names};
use spindle_protocol::jsonrpc::{
    INVALID_PARAMS, METHOD_NOT_FOUND, Message, RequestId, ResponseError, to_raw,
};
use spindle_protocol::req_queue::ReqQueue;
use spindle_protocol::transport::{Connection, Disconnected, Incoming};

/// What the agent learned from the client's `initialize`.
#[derive(Debug, Clone, PartialEq)]
pub struct InitializeRequestInfo {
    /// The version the agent answers with: the client's if it is 1 or 2
    /// (2 only when the agent supports it), otherwise 1.
    pub protocol_version: u16,
    /// The version the client asked for, as sent.
    pub requested_version: Value,
    /// `clientCapabilities` (v1) or `capabilities` (v2), `{}` if absent.
    pub client_capabilities: Value,
    /// `clientInfo` (v1) or `info` (v2).
    pub client_info: Option<Value>,
    /// Spindle extensions the client opted into (from `_meta`).
    pub spindle_extensions: Vec<String>,
}

impl InitializeRequestInfo {
    /// Whether the client opted into the named Spindle extension.
    pub fn accepts_extension(&self, name: &str) -> bool {
        self.spindle_extensions.iter().any(|e| e == name)
    }
}

/// Reads an `initialize` request's params and picks the version.
/// `supports_v2` is whether this agent speaks the v2 draft.
pub fn read_initialize(
    params: Option<&RawValue>,
    supports_v2: bool,
) -> Result<InitializeRequestInfo, ResponseError> {
    let params: Value = params
        .map(|p| serde_json::from_str(p.get()))
        .transpose()
        .map_err(|e| ResponseError::new(INVALID_PARAMS, format!("initialize params: {e}")))?
        .unwrap_or(Value::Null);
    let Some(obj) = params.as_object() else {
        return Err(ResponseError::new(
            INVALID_PARAMS,
            "initialize params must be an object",
        ));
    };
    let Some(requested) = obj.get("protocolVersion").cloned() else {
        return Err(ResponseError::new(
            INVALID_PARAMS,
            "initialize params need protocolVersion",
        ));
    };
    let protocol_version = match requested.as_u64() {
        Some(2) if supports_v2 => 2,
        _ => 1,
    };
    let (caps, info) = if protocol_version == 2 {
        (obj.get("capabilities"), obj.get("info"))
    } else {
        (obj.get("clientCapabilities"), obj.get("clientInfo"))
    };
    Ok(InitializeRequestInfo {
        protocol_version,
        requested_version: requested,
        client_capabilities: caps.cloned().unwrap_or_else(|| json!({})),
        client_info: info.cloned(),
        spindle_extensions: obj
            .get("_meta")
            .map(listed_extension_names)
            .unwrap_or_default(),
    })
}

/// What the agent reports about itself in its `initialize` result.
#[derive(Debug, Clone)]
pub struct AgentIdentity {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// v1 `agentCapabilities`.
    pub capabilities_v1: Value,
    /// v2 `capabilities`.
    pub capabilities_v2: Value,
    /// Spindle extensions this agent can emit (listed in the result `_meta`).
    pub spindle_extensions: Vec<String>,
}

/// Answers an `initialize` request: returns what the client asked for and
/// the response to send (an error response for malformed params).
pub fn answer_initialize(
    id: RequestId,
    params: Option<&RawValue>,
    identity: &AgentIdentity,
    supports_v2: bool,
) -> (Result<InitializeRequestInfo, ResponseError>, Message) {
    match read_initialize(params, supports_v2) {
        Err(e) => (Err(e.clone()), Message::response_err(id, e)),
        Ok(info) => {
            let who = json!({ "name": identity.name, "version": identity.version });
            let mut result = if info.protocol_version == 2 {
                json!({
                    "protocolVersion": 2,
                    "info": who,
                    "capabilities": identity.capabilities_v2,
                    "authMethods": [],
                })
            } else {
                json!({
                    "protocolVersion": 1,
                    "agentInfo": who,
                    "agentCapabilities": identity.capabilities_v1,
                    "authMethods": [],
                })
            };
            if !identity.spindle_extensions.is_empty() {
                let emitted: Extensions = identity
                    .spindle_extensions
                    .iter()
                    .filter_map(|name| Extension::from_name(name))
                    .collect();
                result["_meta"] = emitted.to_meta();
            }
            let msg = match to_raw(&result) {
                Ok(raw) => Message::response_ok(id, raw),
                Err(e) => Message::response_err(
                    id,
                    ResponseError::new(spindle_protocol::jsonrpc::INTERNAL_ERROR, e.to_string()),
                ),
            };
            (Ok(info), msg)
        }
    }
}

/// What an [`AgentConnection`] reports to the agent's loop.
#[derive(Debug)]
#[non_exhaustive]
#[allow(dead_code)] // a complete event; the tests read only some fields
pub enum AgentEvent {
    /// `initialize` was answered; the negotiated version and the client's
    /// opt-ins are in here.
    Initialized(InitializeRequestInfo),
    /// A request to handle (answer with [`AgentConnection::respond`]) or a
    /// notification (`session/cancel`, `$/cancel_request`, ...), as decoded:
    /// always a [`Message::Request`] or a [`Message::Notification`].
    Incoming(Message),
    /// The client answered a request sent with [`AgentConnection::request`].
    Response {
        /// The id [`AgentConnection::request`] returned.
        id: RequestId,
        /// The method of the request.
        method: String,
        /// Its result or error.
        result: Result<Box<RawValue>, ResponseError>,
    },
    /// A malformed frame, unknown response id, or request before
    /// `initialize`. Already answered where JSON-RPC requires it.
    Diagnostic(String),
}

/// An agent's end of a connection: answers `initialize`, tracks requests
/// to the client, and hands everything else to the agent's loop.
#[derive(Debug)]
pub struct AgentConnection {
    connection: Connection,
    identity: AgentIdentity,
    supports_v2: bool,
    initialized: Option<InitializeRequestInfo>,
    queue: ReqQueue<(), ()>,
}

impl AgentConnection {
    /// Wraps `connection`. `supports_v2`: whether this agent speaks v2.
    pub fn new(connection: Connection, identity: AgentIdentity, supports_v2: bool) -> Self {
        AgentConnection {
            connection,
            identity,
            supports_v2,
            initialized: None,
            queue: ReqQueue::default(),
        }
    }

    /// The negotiated protocol version, once initialized.
    pub fn protocol_version(&self) -> Option<u16> {
        self.initialized.as_ref().map(|i| i.protocol_version)
    }

    /// Whether the client opted into the named Spindle extension; emit it
    /// only then.
    pub fn client_accepts_extension(&self, name: &str) -> bool {
        self.initialized
            .as_ref()
            .is_some_and(|i| i.accepts_extension(name))
    }

    /// The next event; `None` when the client is gone.
    pub async fn recv(&mut self) -> Option<AgentEvent> {
        {
            let incoming = self.connection.receiver.recv().await?;
            let event = match incoming {
                Incoming::Closed { .. } => return None,
                Incoming::Malformed { line_number, error } => {
                    if error.request {
                        let _ = self.connection.sender.send(error.to_response()).await;
                    }
                    AgentEvent::Diagnostic(format!("malformed line {line_number}: {error}"))
                }
                Incoming::Message(Message::Request { id, method, params }) => {
                    if method == "initialize" {
                        let (info, reply) = answer_initialize(
                            id,
                            params.as_deref(),
                            &self.identity,
                            self.supports_v2,
                        );
                        let _ = self.connection.sender.send(reply).await;
                        match info {
                            Ok(info) => {
                                self.initialized = Some(info.clone());
                                AgentEvent::Initialized(info)
                            }
                            Err(e) => AgentEvent::Diagnostic(format!("bad initialize: {e}")),
                        }
                    } else if self.initialized.is_none() {
                        let _ = self
                            .connection
                            .sender
                            .send(Message::response_err(
                                id,
                                ResponseError::new(
                                    METHOD_NOT_FOUND,
                                    format!("{method} before initialize"),
                                ),
                            ))
                            .await;
                        AgentEvent::Diagnostic(format!("{method} before initialize; refused"))
                    } else {
                        AgentEvent::Incoming(Message::Request { id, method, params })
                    }
                }
                Incoming::Message(notification @ Message::Notification { .. }) => {
                    AgentEvent::Incoming(notification)
                }
                // Only a connection that opts in scans chunks; this one does not.
                Incoming::ScannedUpdate(params) => {
                    AgentEvent::Diagnostic(format!("unexpected scanned chunk {params}"))
                }
                Incoming::Message(Message::Response { id, result }) => {
                    match self.queue.complete_outgoing(&id) {
                        Ok(p) => AgentEvent::Response {
                            id,
                            method: p.method,
                            result,
                        },
                        Err(e) => AgentEvent::Diagnostic(e.to_string()),
                    }
                }
            };
            Some(event)
        }
    }

    /// Sends a `session/update` notification with `update` as its `update`.
    pub async fn send_update(&self, session_id: &str, update: &Value) -> Result<(), Disconnected> {
        let params = json!({ "sessionId": session_id, "update": update });
        let msg = Message::notification("session/update", &params).map_err(|_| Disconnected)?;
        self.connection.sender.send(msg).await
    }

    /// Sends a request to the client (e.g. `session/request_permission`);
    /// the answer arrives as [`AgentEvent::Response`] with the returned id.
    pub async fn request(
        &mut self,
        method: &str,
        params: &Value,
    ) -> Result<RequestId, Disconnected> {
        let id = self.queue.register_outgoing(method, ());
        let msg = Message::request(id.clone(), method, params).map_err(|_| Disconnected)?;
        self.connection.sender.send(msg).await?;
        Ok(id)
    }

    /// Answers a request from the client.
    pub async fn respond(
        &self,
        id: RequestId,
        result: Result<Box<RawValue>, ResponseError>,
    ) -> Result<(), Disconnected> {
        self.connection
            .sender
            .send(Message::Response { id, result })
            .await
    }
}

mod tests {
    use super::*;

    fn raw(v: Value) -> Box<RawValue> {
        to_raw(&v).unwrap()
    }

    #[test]
    fn version_selection() {
        let p1 = raw(json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}}));
        let p2 = raw(
            json!({"protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": {},
            "_meta": {"spindle": {"extensions": ["agent_message_clear"]}}}),
        );
        let p9 = raw(json!({"protocolVersion": 9}));
        let i1 = read_initialize(Some(&p1), true).unwrap();
        assert_eq!(i1.protocol_version, 1);
        assert_eq!(i1.client_capabilities, json!({"terminal": true}));
        assert!(i1.spindle_extensions.is_empty());
        let i2 = read_initialize(Some(&p2), true).unwrap();
        assert_eq!(i2.protocol_version, 2);
        assert!(i2.accepts_extension("agent_message_clear"));
        assert!(!i2.accepts_extension("session_cleared"));
        assert_eq!(
            read_initialize(Some(&p2), false).unwrap().protocol_version,
            1
        );
        assert_eq!(
            read_initialize(Some(&p9), true).unwrap().protocol_version,
            1
        );
        assert_eq!(
            read_initialize(Some(&raw(json!({}))), true)
                .unwrap_err()
                .code,
            INVALID_PARAMS
        );
        assert_eq!(
            read_initialize(None, true).unwrap_err().code,
            INVALID_PARAMS
        );
        assert_eq!(
            read_initialize(Some(&raw(json!([1]))), true)
                .unwrap_err()
                .code,
            INVALID_PARAMS
        );
    }

    #[test]
    fn answer_shapes() {
        let id = RequestId::Number(0);
        let identity = AgentIdentity {
            name: "a".into(),
            version: "0".into(),
            capabilities_v1: json!({"loadSession": true}),
            capabilities_v2: json!({"session": {}}),
            spindle_extensions: vec!["agent_message_clear".into()],
        };
        let p2 = raw(json!({"protocolVersion": 2, "info": {"name": "c", "version": "1"}}));
        let (info, msg) = answer_initialize(id.clone(), Some(&p2), &identity, true);
        assert_eq!(info.unwrap().protocol_version, 2);
        // Key order depends on serde_json features; compare values.
        let got: Value = serde_json::from_str(&msg.to_json()).unwrap();
        assert_eq!(
            got,
            json!({"jsonrpc": "2.0", "id": 0, "result": {
                "_meta": {"spindle": {"extensions": ["agent_message_clear"]}},
                "authMethods": [], "capabilities": {"session": {}},
                "info": {"name": "a", "version": "0"}, "protocolVersion": 2}})
        );
        let (info, msg) = answer_initialize(id, Some(&p2), &identity, false);
        assert_eq!(info.unwrap().protocol_version, 1);
        assert!(
            msg.to_json()
                .contains(r#""agentCapabilities":{"loadSession":true}"#)
        );
    }
}
