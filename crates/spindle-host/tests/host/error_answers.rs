//! Every error a client method is answered with, as one table: method x failure -> code,
//! message, data. The codes and the start of each message are ACP's (its schema's
//! `ErrorCode`: -32002 "Resource not found", -32602 "Invalid params", -32601 "Method not
//! found", -32603 "Internal error", -32800 "Request cancelled"); what happened follows the
//! canonical message and is `data.details`; `data` names what the error is about (`uri` of a
//! missing file, `path`, `terminalId`, `method`). The workspace root is written `WS`.

use serde_json::{Value, json};
use spindle_host::{FsPolicy, HostReply};
use spindle_protocol::{ClientCore, ClientOptions, ProtocolChoice, ResponseError};

use crate::support::Fixture;

/// One row: the method, the failure, then the answer expected.
struct Row {
    method: &'static str,
    failure: &'static str,
    code: i64,
    message: &'static str,
    data: Value,
}

fn row(method: &'static str, failure: &'static str, code: i64, message: &'static str) -> Row {
    Row {
        method,
        failure,
        code,
        message,
        data: Value::Null,
    }
}

impl Row {
    fn data(mut self, data: Value) -> Row {
        self.data = data;
        self
    }
}

/// What the answer was, the root written `WS`.
fn normalized(error: &ResponseError, root: &str) -> (i64, String, Value) {
    let data = error
        .data
        .as_ref()
        .map(|d| serde_json::from_str::<Value>(&d.get().replace(root, "WS")).unwrap())
        .unwrap_or(Value::Null);
    (error.code, error.message.replace(root, "WS"), data)
}

fn the_table() -> Vec<Row> {
    vec![
        // fs/read_text_file
        row("fs/read_text_file", "no params", -32602, "Invalid params: params are required")
            .data(json!({"details": "params are required"})),
        row("fs/read_text_file", "no sessionId", -32602, "Invalid params: sessionId is required")
            .data(json!({"details": "sessionId is required"})),
        row("fs/read_text_file", "path not a string", -32602, "Invalid params: path must be a string")
            .data(json!({"details": "path must be a string"})),
        row("fs/read_text_file", "missing file", -32002, "Resource not found: WS/missing.txt: no such file or directory")
            .data(json!({"details": "WS/missing.txt: no such file or directory", "uri": "WS/missing.txt"})),
        row("fs/read_text_file", "a `..` path", -32602, "Invalid params: WS/../x.txt: paths with `..` are not accepted")
            .data(json!({"details": "WS/../x.txt: paths with `..` are not accepted", "path": "WS/../x.txt"})),
        row("fs/read_text_file", "outside the root", -32602, "Invalid params: /etc/hostname: outside the workspace WS")
            .data(json!({"details": "/etc/hostname: outside the workspace WS", "path": "/etc/hostname"})),
        row("fs/read_text_file", "a directory", -32603, "Internal error: WS/dir: is a directory")
            .data(json!({"details": "WS/dir: is a directory", "path": "WS/dir"})),
        row("fs/read_text_file", "file access off", -32601, "Method not found: file access is off in this client")
            .data(json!({"details": "file access is off in this client", "method": "fs/read_text_file"})),
        // fs/write_text_file
        row("fs/write_text_file", "no content", -32602, "Invalid params: content is required")
            .data(json!({"details": "content is required"})),
        row("fs/write_text_file", "outside the root", -32602, "Invalid params: /tmp/x.txt: outside the workspace WS")
            .data(json!({"details": "/tmp/x.txt: outside the workspace WS", "path": "/tmp/x.txt"})),
        row("fs/write_text_file", "read-only policy", -32601, "Method not found: file writes are off in this client (policy read-only)")
            .data(json!({"details": "file writes are off in this client (policy read-only)", "method": "fs/write_text_file"})),
        row("fs/write_text_file", "the user rejected it", -32603, "Internal error: the user rejected the write to new.txt")
            .data(json!({"details": "the user rejected the write to new.txt", "path": "WS/new.txt", "reason": "rejected"})),
        // terminal/*
        row("terminal/create", "no command", -32602, "Invalid params: command is required")
            .data(json!({"details": "command is required"})),
        row("terminal/create", "cwd not a directory", -32602, "Invalid params: cwd WS/a.txt: not a directory")
            .data(json!({"details": "cwd WS/a.txt: not a directory"})),
        row("terminal/create", "terminals off", -32601, "Method not found: terminals are off in this client")
            .data(json!({"details": "terminals are off in this client", "method": "terminal/create"})),
        row("terminal/output", "terminals off", -32601, "Method not found: terminals are off in this client")
            .data(json!({"details": "terminals are off in this client", "method": "terminal/output"})),
        row("terminal/output", "no terminalId", -32602, "Invalid params: terminalId is required")
            .data(json!({"details": "terminalId is required"})),
        row("terminal/output", "unknown terminal", -32002, "Resource not found: no terminal \"term-9\" in session \"s\" (never created, or released)")
            .data(json!({"details": "no terminal \"term-9\" in session \"s\" (never created, or released)", "terminalId": "term-9"})),
        row("terminal/wait_for_exit", "unknown terminal", -32002, "Resource not found: no terminal \"term-9\" in session \"s\" (never created, or released)")
            .data(json!({"details": "no terminal \"term-9\" in session \"s\" (never created, or released)", "terminalId": "term-9"})),
        row("terminal/kill", "unknown terminal", -32002, "Resource not found: no terminal \"term-9\" in session \"s\" (never created, or released)")
            .data(json!({"details": "no terminal \"term-9\" in session \"s\" (never created, or released)", "terminalId": "term-9"})),
        row("terminal/release", "unknown terminal", -32002, "Resource not found: no terminal \"term-9\" in session \"s\" (never created, or released)")
            .data(json!({"details": "no terminal \"term-9\" in session \"s\" (never created, or released)", "terminalId": "term-9"})),
        // Answered by the client core before any service sees them.
        row("fs/read_text_file", "not advertised", -32601, "Method not found: fs/read_text_file: this client did not advertise this file access")
            .data(json!({"details": "fs/read_text_file: this client did not advertise this file access", "method": "fs/read_text_file"})),
        row("terminal/create", "not advertised", -32601, "Method not found: terminal/create: this client did not advertise terminals")
            .data(json!({"details": "terminal/create: this client did not advertise terminals", "method": "terminal/create"})),
        row("fs/write_text_file", "protocol v2", -32601, "Method not found: fs/write_text_file: protocol v2 has no client files or terminals")
            .data(json!({"details": "fs/write_text_file: protocol v2 has no client files or terminals", "method": "fs/write_text_file"})),
        row("elicitation/create", "not advertised", -32601, "Method not found: elicitation/create: this client did not advertise elicitation")
            .data(json!({"details": "elicitation/create: this client did not advertise elicitation", "method": "elicitation/create"})),
        row("session/request_permission", "no sessionId", -32602, "Invalid params: session/request_permission needs sessionId")
            .data(json!({"details": "session/request_permission needs sessionId"})),
        row("session/request_permission", "withdrawn ($/cancel_request)", -32800, "Request cancelled: the agent withdrew the request ($/cancel_request)")
            .data(json!({"details": "the agent withdrew the request ($/cancel_request)"})),
        row("x/unknown", "an unknown method", -32601, "Method not found: x/unknown: not a method this client answers")
            .data(json!({"details": "x/unknown: not a method this client answers", "method": "x/unknown"})),
        row("-", "a request whose method is not a string", -32600, "Invalid request: \"method\" must be a string")
            .data(json!({"details": "\"method\" must be a string"})),
    ]
}

/// The answer the host gives `row` (its failure set up in a fresh workspace).
async fn host_answer(row: &Row) -> Option<(ResponseError, String)> {
    let policy = match row.failure {
        "file access off" => FsPolicy::Off,
        "read-only policy" => FsPolicy::ReadOnly,
        "the user rejected it" => FsPolicy::Ask,
        _ => FsPolicy::Allow,
    };
    let terminals = row.failure != "terminals off";
    let f = Fixture::with(|c| {
        c.fs = policy;
        c.terminals = terminals;
    });
    f.outer.write("ws/a.txt", "a\n");
    std::fs::create_dir_all(f.ws_path("dir")).unwrap();
    let root = f.ws("");
    let root = root.trim_end_matches('/').to_owned();
    let params = match (row.method, row.failure) {
        (_, "no params") => None,
        (_, "no sessionId") => Some(json!({"path": f.ws("a.txt")})),
        (_, "path not a string") => Some(json!({"sessionId": "s", "path": 7})),
        (_, "missing file") => Some(json!({"sessionId": "s", "path": f.ws("missing.txt")})),
        (_, "a `..` path") => Some(json!({"sessionId": "s", "path": format!("{root}/../x.txt")})),
        ("fs/read_text_file", "outside the root") => {
            Some(json!({"sessionId": "s", "path": "/etc/hostname"}))
        }
        (_, "a directory") => Some(json!({"sessionId": "s", "path": f.ws("dir")})),
        (_, "no content") => Some(json!({"sessionId": "s", "path": f.ws("new.txt")})),
        ("fs/write_text_file", "outside the root") => {
            Some(json!({"sessionId": "s", "path": "/tmp/x.txt", "content": "x"}))
        }
        ("fs/write_text_file", _) => {
            Some(json!({"sessionId": "s", "path": f.ws("new.txt"), "content": "x"}))
        }
        (_, "no command") => Some(json!({"sessionId": "s"})),
        (_, "cwd not a directory") => {
            Some(json!({"sessionId": "s", "command": "true", "cwd": f.ws("a.txt")}))
        }
        ("terminal/create", _) => Some(json!({"sessionId": "s", "command": "true"})),
        (_, "no terminalId") => Some(json!({"sessionId": "s"})),
        (m, _) if m.starts_with("terminal/") => {
            Some(json!({"sessionId": "s", "terminalId": "term-9"}))
        }
        ("fs/read_text_file", _) => Some(json!({"sessionId": "s", "path": f.ws("a.txt")})),
        _ => return None,
    };
    let raw = params.map(|p| serde_json::value::to_raw_value(&p).unwrap());
    let error = match f.host.handle(row.method, raw.as_deref()).await {
        HostReply::Done(Err(e)) => e,
        HostReply::Done(Ok(v)) => panic!("{} / {}: answered {v}", row.method, row.failure),
        HostReply::NeedsApproval(write) => f.host.reject(&write),
    };
    Some((error, root))
}

/// The answer the client core gives `row`, or `None` when the host answers it.
fn core_answer(row: &Row) -> Option<ResponseError> {
    let v2 = row.failure == "protocol v2";
    let line = match row.failure {
        "not advertised" | "protocol v2" | "an unknown method" => json!({"jsonrpc": "2.0", "id": 5,
            "method": row.method, "params": {"sessionId": "s", "path": "/w/a.txt", "content": "x"}})
        .to_string(),
        "no sessionId" if row.method == "session/request_permission" => {
            json!({"jsonrpc": "2.0", "id": 5, "method": row.method, "params": {"options": []}})
                .to_string()
        }
        "withdrawn ($/cancel_request)" => json!({"jsonrpc": "2.0", "id": 5, "method": row.method,
            "params": {"sessionId": "s", "options": []}})
        .to_string(),
        "a request whose method is not a string" => {
            r#"{"jsonrpc":"2.0","id":5,"method":7}"#.to_owned()
        }
        _ => return None,
    };
    let mut core: ClientCore<()> = ClientCore::new(ClientOptions {
        protocol: if v2 {
            ProtocolChoice::V2Preferred
        } else {
            ProtocolChoice::V1
        },
        fs_read_text_file: v2,
        fs_write_text_file: v2,
        terminal: v2,
        ..ClientOptions::default()
    });
    core.initialize(()).unwrap();
    let _ = core.take_outgoing();
    let version = if v2 { 2 } else { 1 };
    core.receive_line(
        &json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version, "agentCapabilities": {}}})
            .to_string(),
    );
    core.receive_line(&line);
    if row.failure == "withdrawn ($/cancel_request)" {
        core.receive_line(
            r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}"#,
        );
    }
    let answers: Vec<Value> = core
        .take_outgoing()
        .iter()
        .map(|m| serde_json::from_str(&m.to_json()).unwrap())
        .collect();
    let [answer] = &answers[..] else {
        panic!("{} / {}: answers {answers:?}", row.method, row.failure);
    };
    Some(serde_json::from_value(answer["error"].clone()).unwrap())
}

#[tokio::test]
async fn every_client_method_failure_gets_acps_code_message_and_data() {
    let mut wrong = Vec::new();
    for row in the_table() {
        let (error, root) = match core_answer(&row) {
            Some(error) => (error, String::from("\0")),
            None => host_answer(&row)
                .await
                .unwrap_or_else(|| panic!("no set-up for {} / {}", row.method, row.failure)),
        };
        let got = normalized(&error, &root);
        let want = (row.code, row.message.to_owned(), row.data.clone());
        if got != want {
            wrong.push(format!(
                "{} / {}:\n  got  {got:?}\n  want {want:?}",
                row.method, row.failure
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
