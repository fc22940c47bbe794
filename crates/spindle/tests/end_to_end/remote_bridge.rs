//! `spindle bridge --listen ADDR -- AGENT_CMD`: one stdio agent served over `/acp` without the
//! page (a headless gateway), over both profiles.

use std::process::Command;

use serde_json::json;

use crate::remote_support::{AcpHttp, AcpWs, agent_text};
use crate::serve_support::{Served, http, reference_agent, serve_from, temp_dir};

fn bridge(db: &std::path::Path) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spindle"));
    command
        .args([
            "bridge",
            "--listen",
            "127.0.0.1:0",
            "--agent-protocol",
            "1",
            "--db",
        ])
        .arg(db)
        .arg("--")
        .args(reference_agent(0));
    serve_from(command)
}

#[test]
fn remote_bridge_listen_serves_a_stdio_agent_over_both_profiles_and_no_page() {
    let dir = temp_dir("remote-bridge");
    let served = bridge(&dir.join("bridge.db"));
    assert!(served.url.ends_with("/acp"), "{}", served.url);
    let host = served.host();
    assert_eq!(
        http(served.addr, "GET", "/", &[("Host", &host)], None).status,
        404
    );
    assert_eq!(
        http(
            served.addr,
            "GET",
            "/api/sessions",
            &[("Host", &host)],
            None
        )
        .status,
        404
    );

    // WebSocket.
    let (mut ws, init) = AcpWs::connect(&served, &[]);
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let new = ws.send_request("session/new", json!({ "cwd": "/", "mcpServers": [] }));
    let session = ws.response(new)["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let prompt = ws.send_request(
        "session/prompt",
        json!({ "sessionId": session, "prompt": [{ "type": "text", "text": "via the gateway" }] }),
    );
    let turn = ws.collect_until(|m| m["id"] == json!(prompt) && m.get("method").is_none());
    assert_eq!(turn.last().unwrap()["result"]["stopReason"], "end_turn");
    assert!(agent_text(&turn).starts_with("You said: \"via the gateway\""));

    // HTTP+SSE: another client loads the same session, its history replayed first.
    let mut client = AcpHttp::connect(&served, &[]);
    let connection = client.connection_stream(None);
    let mut stream = client.session_stream(&session, None);
    assert_eq!(
        stream.status, 200,
        "a stream may be opened before session/load"
    );
    let (load, status) = client.request(
        "session/load",
        json!({ "sessionId": session, "cwd": "/", "mcpServers": [] }),
        Some(&session),
    );
    assert_eq!(status, 202);
    let history: Vec<serde_json::Value> = stream
        .collect_until(|m| m["id"] == json!(load) && m.get("method").is_none())
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert!(agent_text(&history).starts_with("You said: \"via the gateway\""));
    assert!(
        history.last().unwrap()["result"].is_object(),
        "LoadSessionResponse is an object"
    );
    drop(connection);
}

#[test]
fn remote_bridge_serve_agent_url_runs_its_sessions_on_the_gateways_agent_over_both_profiles() {
    let dir = temp_dir("remote-agent-url");
    let gateway = bridge(&dir.join("bridge.db"));
    for (n, transport) in ["ws", "http"].into_iter().enumerate() {
        let mut command = Command::new(env!("CARGO_BIN_EXE_spindle"));
        command
            .args(["serve", "--bind", "127.0.0.1:0", "--protocol", "1", "--db"])
            .arg(dir.join(&format!("front-{n}.db")))
            .args(["--agent-url", &gateway.url, "--agent-transport", transport]);
        let front = serve_from(command);
        let session = front.create_session();
        front.prompt(session, &format!("over {transport}"));
        let reply = front.wait_reply_containing(session, &format!("over {transport}"));
        assert!(!reply.is_empty(), "{transport}: {reply:?}");
        // The agent's list of sessions goes through the same connector.
        let listed = front.get_json("/api/agent-sessions");
        assert!(listed.get("sessions").is_some(), "{transport}: {listed}");
        front.stop();
    }
    gateway.stop();
}
