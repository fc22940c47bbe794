//! `/acp` safety: the page's token guards it, and its limits hold (connections, sessions per
//! connection, idle connections reaped while a connection with an open stream stays).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::remote_support::{AcpHttp, initialize_params, post_raw};
use crate::serve_support::{PATIENCE, Served, reference_agent, start_serve, temp_dir};

fn serve_with(
    name: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (crate::harness::TempDir, Served) {
    let dir = temp_dir(name);
    let mut all = vec!["--protocol", "1"];
    all.extend_from_slice(args);
    let served = start_serve(&dir.join("db.sqlite"), &all, &reference_agent(0), None, env);
    (dir, served)
}

fn initialize_body() -> String {
    json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params(&[]) })
        .to_string()
}

#[test]
fn remote_limits_the_token_guards_acp() {
    let (_dir, served) = serve_with("remote-token", &["--token", "s3cret"], &[]);
    let host = served.host();
    assert_eq!(
        post_raw(served.addr, &host, &[], &initialize_body()).status,
        401
    );
    let wrong = [("Authorization", "Bearer nope")];
    assert_eq!(
        post_raw(served.addr, &host, &wrong, &initialize_body()).status,
        401
    );
    let bearer = [("Authorization", "Bearer s3cret")];
    let answer = post_raw(served.addr, &host, &bearer, &initialize_body());
    assert_eq!(answer.status, 200, "{}", answer.body);
    let connection = answer.header("acp-connection-id").unwrap().to_string();
    // Knowing a connection id is not enough: every request needs the token.
    let new = json!({ "jsonrpc": "2.0", "id": 1, "method": "session/new",
                      "params": { "cwd": "/", "mcpServers": [] } })
    .to_string();
    let only_id = [("Acp-Connection-Id", connection.as_str())];
    assert_eq!(post_raw(served.addr, &host, &only_id, &new).status, 401);
    let both = [
        ("Acp-Connection-Id", connection.as_str()),
        ("Authorization", "Bearer s3cret"),
    ];
    assert_eq!(post_raw(served.addr, &host, &both, &new).status, 202);
}

#[test]
fn remote_limits_connections_and_sessions_are_bounded() {
    let env = [
        ("SPINDLE_ACP_MAX_CONNECTIONS", "2"),
        ("SPINDLE_ACP_MAX_SESSIONS", "1"),
    ];
    let (_dir, served) = serve_with("remote-bounds", &[], &env);
    let mut first = AcpHttp::connect(&served, &[]);
    let _second = AcpHttp::connect(&served, &[]);
    let third = post_raw(served.addr, &served.host(), &[], &initialize_body());
    assert_eq!(third.status, 503, "{}", third.body);
    // A WebSocket is a connection too.
    let stream = std::net::TcpStream::connect(served.addr).unwrap();
    let refused = tungstenite::client(format!("ws://{}/acp", served.host()), stream);
    match refused {
        Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(response))) => {
            assert_eq!(response.status(), 503)
        }
        other => panic!("expected 503, got {:?}", other.map(|(_, r)| r.status())),
    }
    // One session per connection here: the second session/new is refused, the first works.
    let mut connection = first.connection_stream(None);
    first.new_session(&mut connection);
    let (id, status) = first.request("session/new", json!({ "cwd": "/", "mcpServers": [] }), None);
    assert_eq!(status, 202);
    let answer = connection.response(id);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // A closed connection frees its place.
    assert_eq!(first.delete().status, 202);
    assert_eq!(
        post_raw(served.addr, &served.host(), &[], &initialize_body()).status,
        200
    );
}

#[test]
fn remote_limits_idle_connections_are_reaped_and_streaming_ones_kept() {
    let (_dir, served) = serve_with("remote-idle", &[], &[("SPINDLE_ACP_IDLE_MS", "200")]);
    let idle = AcpHttp::connect(&served, &[]);
    let busy = AcpHttp::connect(&served, &[]);
    let _stream = busy.connection_stream(None);
    let list = json!({ "jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {} });
    let started = Instant::now();
    loop {
        let status = idle.post(&list, None).status;
        if status == 404 {
            break;
        }
        assert_eq!(status, 202);
        assert!(
            started.elapsed() < PATIENCE,
            "the idle connection was never reaped"
        );
        // Each request counts as activity: wait longer than the idle limit between them.
        std::thread::sleep(Duration::from_millis(600));
    }
    // The connection with an open stream outlived several idle periods.
    assert_eq!(busy.post(&list, None).status, 202);
}

#[test]
fn remote_session_new_takes_additional_directories_checked_as_the_pages_are() {
    let (dir, served) = serve_with("remote-dirs", &[], &[]);
    let extra = dir.join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    let extra = std::fs::canonicalize(&extra).unwrap();
    let extra = extra.to_str().unwrap();
    let mut acp = AcpHttp::connect(&served, &[]);
    let mut stream = acp.connection_stream(None);
    // A relative directory is refused with the reason, as the page's form refuses it.
    let (id, status) = acp.request(
        "session/new",
        json!({ "cwd": "/", "mcpServers": [], "additionalDirectories": ["relative/dir"] }),
        None,
    );
    assert_eq!(status, 202);
    let refused = stream.response(id);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let (id, _) = acp.request(
        "session/new",
        json!({ "cwd": "/", "mcpServers": [], "additionalDirectories": [extra] }),
        None,
    );
    let answer = stream.response(id);
    let session = answer["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    // The session keeps them, and its agent (which accepts them) got them.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let agent = served.get_json(&format!("/api/sessions/{session}/agent"));
        if agent["acceptsAdditionalDirectories"] == true {
            assert_eq!(agent["additionalDirectories"], json!([extra]), "{agent}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the agent never started: {agent}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
