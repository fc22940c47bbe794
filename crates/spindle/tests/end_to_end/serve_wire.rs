//! The wire inspector's API (issue 27, item 3): `GET /api/sessions/{id}/wire` pages a session's
//! raw lines newest page first, oldest line first within a page, with a capped limit and 400s
//! for bad parameters; secrets are masked before they leave the server, whatever wrote them; and
//! `GET /api/sessions/{id}/wire/events` carries the lines of a running turn as they are logged;
//! `GET /api/sessions/{id}/wire/{seq}` gives a line a page cut whole.
//! Runs on PostgreSQL too (`SPINDLE_TEST_DB=postgres`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use serde_json::Value;
use spindle_store::{Direction, Location};

use crate::serve_support::{PATIENCE, Served, db_arg, temp_dir};

const MCP_SECRET: &str = "ghp-sekrit-mcp-env";
const AUTH_SECRET: &str = "sk-sekrit-auth-param";
const HEADER_SECRET: &str = "Bearer sekrit-header";

/// A session whose log holds lines with secrets as an older Spindle or another writer could have
/// logged them (the server's own log leaves MCP secrets out already), then `filler` more lines.
fn seed_session(db: &std::path::Path, filler: usize) -> (i64, Vec<String>) {
    let location = db_arg(db).to_string_lossy().into_owned();
    let store = spindle_store::open(&Location::parse(&location)).expect("the store");
    let session = store.create_session("seeded", None).unwrap();
    let mut lines = vec![
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        .to_string(),
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
            "authMethods": [{"id": "api-key", "name": "API key"}]}})
        .to_string(),
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "authenticate",
            "params": {"methodId": "api-key", "apiKey": AUTH_SECRET}})
        .to_string(),
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}).to_string(),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {
            "cwd": "/w", "mcpServers": [
                {"name": "gh", "command": "gh-mcp", "args": [],
                 "env": [{"name": "GH_HOST", "value": MCP_SECRET}]},
                {"type": "http", "name": "web", "url": "https://mcp.example/",
                 "headers": [{"name": "Authorization", "value": HEADER_SECRET}]}]}})
        .to_string(),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1"}}).to_string(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":".to_string(),
    ];
    for i in 0..filler {
        lines.push(
            serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": format!("chunk {i}")}}}})
            .to_string(),
        );
    }
    let directions = [Direction::Client, Direction::Agent];
    let batch: Vec<(Direction, &str)> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let direction = if i < 6 {
                directions[i % 2]
            } else {
                Direction::Agent
            };
            (direction, line.as_str())
        })
        .collect();
    store.append_lines(session, 1, &batch).unwrap();
    (session, lines)
}

fn seqs(page: &Value) -> Vec<i64> {
    page["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["seq"].as_i64().unwrap())
        .collect()
}

#[test]
fn the_wire_api_pages_back_caps_its_limit_refuses_bad_parameters_and_masks_secrets() {
    let dir = temp_dir("wire-api");
    let db = dir.join("db.sqlite");
    let (session, logged) = seed_session(&db, 1500);
    let total = logged.len() as i64;
    let served = Served::start(&db, &[], 0);
    let path = format!("/api/sessions/{session}/wire");

    // The newest page first, its lines oldest first; `first` pages further back.
    let newest = served.get_json(&format!("{path}?limit=10"));
    assert_eq!(seqs(&newest), ((total - 9)..=total).collect::<Vec<_>>());
    assert_eq!(newest["more"], true);
    assert_eq!(newest["first"], total - 9);
    assert_eq!(newest["last"], total);
    let before = newest["first"].as_i64().unwrap();
    let older = served.get_json(&format!("{path}?limit=10&before={before}"));
    assert_eq!(
        seqs(&older),
        ((total - 19)..=(total - 10)).collect::<Vec<_>>()
    );
    // Paging back to the start ends with `more: false`.
    let mut before = total + 1;
    let mut read = Vec::new();
    loop {
        let page = served.get_json(&format!("{path}?limit=1000&before={before}"));
        let mut page_seqs = seqs(&page);
        assert!(page_seqs.len() <= 1000);
        page_seqs.extend(read);
        read = page_seqs;
        if page["more"] == false {
            break;
        }
        before = page["first"].as_i64().unwrap();
    }
    assert_eq!(read, (1..=total).collect::<Vec<_>>());
    // From the start, oldest first.
    let head = served.get_json(&format!("{path}?after=0&limit=3"));
    assert_eq!(seqs(&head), vec![1, 2, 3]);
    assert_eq!(head["more"], true);

    // The limit is capped, and said to be.
    let capped = served.get_json(&format!("{path}?limit=5000"));
    assert_eq!(capped["lines"].as_array().unwrap().len(), 1000);
    assert_eq!(capped["limit"], 1000);
    // The default page.
    assert_eq!(
        served.get_json(&path)["lines"].as_array().unwrap().len(),
        200
    );

    // Bad parameters: 400 with what is wrong.
    for (query, says) in [
        ("limit=0", "limit must be"),
        ("limit=ten", "limit must be"),
        ("limit=-3", "limit must be"),
        ("before=0", "before must be"),
        ("before=x", "before must be"),
        ("after=-1", "after must be"),
        ("before=5&after=1", "not both"),
        ("page=2", "unknown parameter"),
    ] {
        let response = served.request("GET", &format!("{path}?{query}"), None);
        assert_eq!(response.status, 400, "{query}: {}", response.body);
        let error: Value = serde_json::from_str(&response.body).unwrap();
        assert!(
            error["error"].as_str().unwrap().contains(says),
            "{query}: {}",
            response.body
        );
    }
    let missing = served.request("GET", "/api/sessions/999999/wire", None);
    assert_eq!(missing.status, 404, "{}", missing.body);
    let events = served.request("GET", &format!("{path}/events?after=-4"), None);
    assert_eq!(events.status, 400, "{}", events.body);

    // Secrets are masked, whatever wrote them; everything else is as logged.
    let start = served.get_json(&format!("{path}?after=0&limit=7"));
    let rows = start["lines"].as_array().unwrap();
    let text = serde_json::to_string(rows).unwrap();
    for secret in [MCP_SECRET, AUTH_SECRET, HEADER_SECRET] {
        assert!(!text.contains(secret), "{secret} left the server: {text}");
    }
    let auth: Value = serde_json::from_str(rows[2]["line"].as_str().unwrap()).unwrap();
    assert_eq!(auth["params"]["methodId"], "api-key");
    assert_eq!(auth["params"]["apiKey"], "<redacted>");
    assert_eq!(rows[2]["masked"], true);
    let new: Value = serde_json::from_str(rows[4]["line"].as_str().unwrap()).unwrap();
    assert_eq!(
        new["params"]["mcpServers"][0]["env"][0],
        serde_json::json!({"name": "GH_HOST", "value": "<redacted>"})
    );
    assert_eq!(
        new["params"]["mcpServers"][1]["headers"][0]["value"],
        "<redacted>"
    );
    assert_eq!(new["params"]["cwd"], "/w");
    // What a row says of each line.
    let summary: Vec<(String, String, String, Value)> = rows
        .iter()
        .map(|r| {
            (
                r["dir"].as_str().unwrap().to_string(),
                r["kind"].as_str().unwrap().to_string(),
                r["method"].as_str().unwrap_or("").to_string(),
                r["id"].clone(),
            )
        })
        .collect();
    let row = |d: &str, k: &str, m: &str, id: Value| (d.into(), k.into(), m.into(), id);
    assert_eq!(
        summary,
        vec![
            row("out", "request", "initialize", 0.into()),
            row("in", "response", "", 0.into()),
            row("out", "request", "authenticate", 1.into()),
            row("in", "response", "", 1.into()),
            row("out", "request", "session/new", 2.into()),
            row("in", "response", "", 2.into()),
            row("in", "invalid", "", Value::Null),
        ]
    );
    // A line that is not JSON is shown as logged, and its size is the logged one.
    assert_eq!(rows[6]["line"], logged[6].as_str());
    assert_eq!(rows[6]["size"], logged[6].len());
    assert!(
        rows.iter()
            .all(|r| r["at"].as_i64().unwrap() > 1_600_000_000_000)
    );
    served.stop();
}

/// Reads `lines` events from `/api/sessions/{id}/wire/events`.
struct WireEvents {
    reader: BufReader<TcpStream>,
}

impl WireEvents {
    fn open(served: &Served, session: i64, after: i64) -> WireEvents {
        let mut stream = TcpStream::connect(served.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let request = format!(
            "GET /api/sessions/{session}/wire/events?after={after} HTTP/1.0\r\nHost: {}\r\n\
             Accept: text/event-stream\r\n\r\n",
            served.host()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.contains(" 200 "), "status: {status}");
        WireEvents { reader }
    }

    /// The next `lines` event: its id and its page.
    fn next(&mut self) -> (String, Value) {
        let (mut event, mut id, mut data) = (String::new(), String::new(), String::new());
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).expect("an event in time");
            assert!(n > 0, "the stream ended");
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if event == "lines" && !data.is_empty() {
                    return (id, serde_json::from_str(&data).unwrap());
                }
                (event, data) = (String::new(), String::new());
            } else if let Some(v) = line.strip_prefix("event:") {
                event = v.trim().into();
            } else if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().into();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
    }
}

#[test]
fn the_wire_events_carry_a_running_turns_lines_as_they_are_logged() {
    let dir = temp_dir("wire-live");
    let db = dir.join("db.sqlite");
    let served = Served::start(&db, &["--protocol", "1"], 5);
    let session = served.create_session();
    let path = format!("/api/sessions/{session}/wire");
    let start = served.get_json(&format!("{path}?limit=1000"));
    let after = start["last"].as_i64().unwrap_or(0);
    let mut events = WireEvents::open(&served, session, after);
    served.prompt(session, "hello wire");

    // Lines come in order, each once, until the prompt's answer.
    let mut next = after + 1;
    let mut prompt_id = None;
    let mut answered = false;
    let mut chunks = 0;
    while !answered {
        let (id, page) = events.next();
        for row in page["lines"].as_array().unwrap() {
            assert_eq!(row["seq"], next, "{page}");
            next += 1;
            match (row["dir"].as_str(), row["kind"].as_str()) {
                (Some("out"), Some("request")) if row["method"] == "session/prompt" => {
                    assert!(row["line"].as_str().unwrap().contains("hello wire"));
                    prompt_id = Some(row["id"].clone());
                }
                (Some("in"), Some("notification")) if row["update"] == "agent_message_chunk" => {
                    chunks += 1
                }
                (Some("in"), Some("response")) if Some(&row["id"]) == prompt_id.as_ref() => {
                    answered = true
                }
                _ => {}
            }
        }
        assert_eq!(id, (next - 1).to_string(), "the event's id is its last seq");
    }
    assert!(chunks > 0, "the reply streamed through the inspector");
    // The page reads the same lines.
    let page = served.get_json(&format!("{path}?after={after}&limit=1000"));
    assert_eq!(seqs(&page), ((after + 1)..next).collect::<Vec<_>>());
    served.stop();
}

#[test]
fn a_line_a_page_cuts_is_read_whole_by_its_seq_masked() {
    let dir = temp_dir("wire-whole");
    let db = dir.join("db.sqlite");
    let location = db_arg(&db).to_string_lossy().into_owned();
    let store = spindle_store::open(&Location::parse(&location)).expect("the store");
    let session = store.create_session("big line", None).unwrap();
    // A 200 KiB chunk with a secret at its end, past where a page cuts it.
    let text = "x".repeat(200 << 10);
    let big = serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text}, "_meta": {"deploy": {"apiKey": AUTH_SECRET}}}}})
    .to_string();
    let small = serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": {}}).to_string();
    store
        .append_lines(
            session,
            1,
            &[
                (Direction::Agent, big.as_str()),
                (Direction::Agent, small.as_str()),
            ],
        )
        .unwrap();
    drop(store);
    let served = Served::start(&db, &[], 0);
    let path = format!("/api/sessions/{session}/wire");

    let page = served.get_json(&format!("{path}?after=0"));
    let row = &page["lines"][0];
    assert_eq!(row["cut"], true, "{}", row["size"]);
    assert_eq!(row["size"], big.len());
    assert_eq!(row["line"].as_str().unwrap().len(), 64 << 10);

    let whole = served.get_json(&format!("{path}/1"));
    assert_eq!(whole["seq"], 1);
    assert_eq!(whole["size"], big.len());
    assert!(whole.get("cut").is_none(), "{}", whole["size"]);
    assert_eq!(whole["masked"], true);
    let line = whole["line"].as_str().unwrap();
    assert!(!line.contains(AUTH_SECRET), "the secret left the server");
    let parsed: Value = serde_json::from_str(line).expect("the whole line is JSON");
    let update = &parsed["params"]["update"];
    assert_eq!(update["content"]["text"].as_str().unwrap(), text);
    assert_eq!(update["_meta"]["deploy"]["apiKey"], "<redacted>");
    // A short line reads the same whole as on its page.
    let second = served.get_json(&format!("{path}/2"));
    assert_eq!(second, page["lines"][1]);

    for (seq, status, says) in [
        ("3", 404, "no line 3"),
        ("0", 400, "seq must be"),
        ("x", 400, "seq must be"),
        ("-2", 400, "seq must be"),
    ] {
        let response = served.request("GET", &format!("{path}/{seq}"), None);
        assert_eq!(response.status, status, "{seq}: {}", response.body);
        assert!(response.body.contains(says), "{seq}: {}", response.body);
    }
    // `events` is still the live tail, not a line number.
    let events = served.request("GET", &format!("{path}/events?after=-4"), None);
    assert_eq!(events.status, 400, "{}", events.body);
}
