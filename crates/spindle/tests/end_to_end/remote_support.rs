//! Clients of `spindle serve`'s `/acp` endpoint for the `remote_*` tests: the RFD's Streamable
//! HTTP profile over plain TCP (POST, GET SSE streams with headers and `Last-Event-ID`, DELETE)
//! and the WebSocket profile (tungstenite).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::serve_support::{PATIENCE, Response, Served, http};

/// `initialize` params of a v1 client; `opt_in` lists Spindle's remote extensions.
pub fn initialize_params(opt_in: &[&str]) -> Value {
    json!({
        "protocolVersion": 1,
        "clientCapabilities": {},
        "_meta": { "spindle": { "remote": opt_in } },
    })
}

/// One connection of the HTTP profile.
pub struct AcpHttp {
    pub addr: SocketAddr,
    pub host: String,
    pub connection: String,
    pub initialize: Value,
    next_id: u64,
    /// `Authorization: Bearer` value of every request (a `--users` server).
    auth: Option<String>,
}

impl AcpHttp {
    /// POSTs `initialize` and keeps the connection id.
    pub fn connect(served: &Served, opt_in: &[&str]) -> AcpHttp {
        AcpHttp::connect_as(served, opt_in, None)
    }

    /// [`AcpHttp::connect`] with a user's token on every request.
    pub fn connect_as(served: &Served, opt_in: &[&str], token: Option<&str>) -> AcpHttp {
        let body = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": initialize_params(opt_in) });
        let auth = token.map(|t| format!("Bearer {t}"));
        let extra: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        let response = post_raw(served.addr, &served.host(), &extra, &body.to_string());
        assert_eq!(response.status, 200, "initialize: {}", response.body);
        let connection = response
            .header("acp-connection-id")
            .expect("Acp-Connection-Id on the initialize answer")
            .to_string();
        AcpHttp {
            addr: served.addr,
            host: served.host(),
            connection,
            initialize: serde_json::from_str(&response.body).expect("JSON initialize answer"),
            next_id: 1,
            auth,
        }
    }

    /// POSTs a request with the connection (and session) header; returns its id and the status.
    pub fn request(&mut self, method: &str, params: Value, session: Option<&str>) -> (u64, u16) {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        (id, self.post(&body, session).status)
    }

    /// POSTs any message with this connection's header.
    pub fn post(&self, message: &Value, session: Option<&str>) -> Response {
        let mut headers = vec![("Acp-Connection-Id", self.connection.as_str())];
        if let Some(session) = session {
            headers.push(("Acp-Session-Id", session));
        }
        if let Some(auth) = &self.auth {
            headers.push(("Authorization", auth));
        }
        post_raw(self.addr, &self.host, &headers, &message.to_string())
    }

    /// Opens the connection stream.
    pub fn connection_stream(&self, last_event_id: Option<&str>) -> AcpSse {
        AcpSse::open_as(
            self.addr,
            &self.host,
            &self.connection,
            None,
            last_event_id,
            self.auth.as_deref(),
        )
    }

    /// Opens a session stream.
    pub fn session_stream(&self, session: &str, last_event_id: Option<&str>) -> AcpSse {
        AcpSse::open_as(
            self.addr,
            &self.host,
            &self.connection,
            Some(session),
            last_event_id,
            self.auth.as_deref(),
        )
    }

    /// `session/new` answered on the connection stream: the new session's id.
    pub fn new_session(&mut self, connection_stream: &mut AcpSse) -> String {
        let (id, status) =
            self.request("session/new", json!({ "cwd": "/", "mcpServers": [] }), None);
        assert_eq!(status, 202);
        let answer = connection_stream.response(id);
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("session/new answer: {answer}"))
            .to_string()
    }

    /// `DELETE /acp`.
    pub fn delete(&self) -> Response {
        http(
            self.addr,
            "DELETE",
            "/acp",
            &[
                ("Host", &self.host),
                ("Acp-Connection-Id", &self.connection),
            ],
            None,
        )
    }
}

/// POSTs a JSON body to `/acp` with extra headers.
pub fn post_raw(addr: SocketAddr, host: &str, extra: &[(&str, &str)], body: &str) -> Response {
    let mut headers = vec![("Host", host), ("Content-Type", "application/json")];
    headers.extend_from_slice(extra);
    http(addr, "POST", "/acp", &headers, Some(body))
}

/// POSTs a large body to `/acp`, tolerating the server answering (and closing) before the body
/// was written; returns the status line's code.
pub fn post_large(addr: SocketAddr, host: &str, extra: &[(&str, &str)], body: &[u8]) -> u16 {
    use std::io::Read;
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut head = format!(
        "POST /acp HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    String::from_utf8_lossy(&raw)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// One SSE event of an `/acp` stream.
#[derive(Debug, Clone)]
pub struct AcpEvent {
    /// The `id:` field (empty when the event had none).
    pub id: String,
    pub message: Value,
}

/// An `/acp` SSE stream.
pub struct AcpSse {
    reader: BufReader<TcpStream>,
    pub status: u16,
    /// The last `id:` seen (what a reconnect sends as `Last-Event-ID`).
    pub last_id: String,
    /// Comments seen (`: dropped ...`, keepalives).
    pub comments: Vec<String>,
    /// Every `id:` seen, including those of events without data, in order.
    pub ids: Vec<String>,
    deadline: Instant,
}

impl AcpSse {
    pub fn open(
        addr: SocketAddr,
        host: &str,
        connection: &str,
        session: Option<&str>,
        last_event_id: Option<&str>,
    ) -> AcpSse {
        AcpSse::open_as(addr, host, connection, session, last_event_id, None)
    }

    /// [`AcpSse::open`] with an `Authorization` header value.
    pub fn open_as(
        addr: SocketAddr,
        host: &str,
        connection: &str,
        session: Option<&str>,
        last_event_id: Option<&str>,
        auth: Option<&str>,
    ) -> AcpSse {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut request = format!(
            "GET /acp HTTP/1.0\r\nHost: {host}\r\nAccept: text/event-stream\r\nAcp-Connection-Id: {connection}\r\n"
        );
        if let Some(session) = session {
            request.push_str(&format!("Acp-Session-Id: {session}\r\n"));
        }
        if let Some(id) = last_event_id {
            request.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        if let Some(auth) = auth {
            request.push_str(&format!("Authorization: {auth}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status_line = String::new();
        reader.read_line(&mut status_line).unwrap();
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line == "\n" || line.is_empty() {
                break;
            }
        }
        AcpSse {
            reader,
            status,
            last_id: last_event_id.unwrap_or_default().to_string(),
            comments: Vec::new(),
            ids: Vec::new(),
            deadline: Instant::now() + Duration::from_secs(120),
        }
    }

    /// The next event with data; `None` at the end of the stream.
    pub fn next(&mut self) -> Option<AcpEvent> {
        let mut id = String::new();
        let mut data = String::new();
        loop {
            if Instant::now() >= self.deadline {
                return None;
            }
            let mut line = String::new();
            if self.reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !id.is_empty() {
                    self.ids.push(id.clone());
                    self.last_id = std::mem::take(&mut id);
                }
                if !data.is_empty() {
                    let message = serde_json::from_str(&data).expect("SSE data is JSON-RPC");
                    return Some(AcpEvent {
                        id: self.last_id.clone(),
                        message,
                    });
                }
                continue;
            }
            if let Some(comment) = line.strip_prefix(':') {
                self.comments.push(comment.trim().to_string());
            } else if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
    }

    /// Reads until the response to request `id`.
    pub fn response(&mut self, id: u64) -> Value {
        self.until(|m| m.get("method").is_none() && m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no response to request {id}"))
    }

    /// Reads until a message satisfies `check`; returns it.
    pub fn until(&mut self, mut check: impl FnMut(&Value) -> bool) -> Option<Value> {
        while let Some(event) = self.next() {
            if check(&event.message) {
                return Some(event.message);
            }
        }
        None
    }

    /// Reads messages until `check` holds for one, returning all read (including it).
    pub fn collect_until(&mut self, mut check: impl FnMut(&Value) -> bool) -> Vec<AcpEvent> {
        let mut seen = Vec::new();
        while let Some(event) = self.next() {
            let done = check(&event.message);
            seen.push(event);
            if done {
                break;
            }
        }
        seen
    }
}

/// The agent text of `agent_message_chunk` updates among `messages`, concatenated.
pub fn agent_text<'a>(messages: impl IntoIterator<Item = &'a Value>) -> String {
    messages
        .into_iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect()
}

/// One connection of the WebSocket profile.
pub struct AcpWs {
    pub socket: tungstenite::WebSocket<TcpStream>,
    pub connection: String,
    next_id: u64,
}

impl AcpWs {
    /// Upgrades `GET /acp` and sends a v1 `initialize`; returns the socket and the answer.
    pub fn connect(served: &Served, opt_in: &[&str]) -> (AcpWs, Value) {
        AcpWs::connect_with(served, initialize_params(opt_in))
    }

    /// [`AcpWs::connect`] with these `initialize` params (another protocol version).
    pub fn connect_with(served: &Served, params: Value) -> (AcpWs, Value) {
        let stream = TcpStream::connect(served.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let url = format!("ws://{}/acp", served.host());
        let (socket, response) = tungstenite::client(url, stream).expect("WebSocket upgrade");
        let connection = response
            .headers()
            .get("acp-connection-id")
            .and_then(|v| v.to_str().ok())
            .expect("Acp-Connection-Id on the 101 answer")
            .to_string();
        let mut ws = AcpWs {
            socket,
            connection,
            next_id: 1,
        };
        let id = ws.send_request("initialize", params);
        let answer = ws.response(id);
        (ws, answer)
    }

    pub fn send(&mut self, message: &Value) {
        self.socket
            .send(tungstenite::Message::text(message.to_string()))
            .expect("WebSocket send");
    }

    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// The next JSON-RPC message; `None` when the socket closed.
    pub fn next(&mut self) -> Option<Value> {
        loop {
            match self.socket.read() {
                Ok(tungstenite::Message::Text(text)) => {
                    return Some(serde_json::from_str(text.as_str()).expect("JSON frame"));
                }
                Ok(tungstenite::Message::Close(_)) | Err(_) => return None,
                Ok(_) => continue,
            }
        }
    }

    pub fn until(&mut self, mut check: impl FnMut(&Value) -> bool) -> Option<Value> {
        while let Some(message) = self.next() {
            if check(&message) {
                return Some(message);
            }
        }
        None
    }

    pub fn response(&mut self, id: u64) -> Value {
        self.until(|m| m.get("method").is_none() && m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no response to request {id}"))
    }

    pub fn collect_until(&mut self, mut check: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(message) = self.next() {
            let done = check(&message);
            seen.push(message);
            if done {
                break;
            }
        }
        seen
    }
}
