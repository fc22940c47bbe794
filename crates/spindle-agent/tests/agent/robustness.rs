//! Malformed input gets a JSON-RPC error and the connection lives on.

use crate::common;

use common::Peer;
use serde_json::{Value, json};
use spindle_agent::AgentConfig;
use spindle_agent::scenarios::plain_reply;

async fn expect_error(peer: &mut Peer, code: i64) -> Value {
    let msg = peer.recv().await;
    assert_eq!(msg["error"]["code"], code, "{msg}");
    msg
}

#[tokio::test]
async fn garbage_before_and_after_the_handshake() {
    let mut peer = Peer::fast();
    peer.send_raw("this is not json").await;
    let err = expect_error(&mut peer, -32700).await;
    assert_eq!(err["id"], Value::Null);
    peer.send_raw("42").await;
    expect_error(&mut peer, -32600).await;
    peer.send_raw("[]").await;
    expect_error(&mut peer, -32600).await;
    peer.send_raw(r#"{"id":7,"method":"initialize"}"#).await;
    let err = expect_error(&mut peer, -32600).await;
    assert_eq!(err["id"], 7);
    peer.send_raw(r#"{"jsonrpc":"2.0","id":8}"#).await;
    expect_error(&mut peer, -32600).await;
    // Requests before initialize.
    peer.request("session/new", json!({"cwd": "/", "mcpServers": []}))
        .await;
    expect_error(&mut peer, -32002).await;
    // initialize without a version.
    peer.request("initialize", json!({})).await;
    expect_error(&mut peer, -32602).await;
    // Blank lines are ignored; then a proper handshake works.
    peer.send_raw("").await;
    peer.initialize(1, &[]).await;
    peer.request("initialize", json!({"protocolVersion": 1}))
        .await;
    expect_error(&mut peer, -32600).await;
    let (sid, _) = peer.new_session().await;

    peer.request("no/such_method", json!({})).await;
    expect_error(&mut peer, -32601).await;
    peer.request(
        "session/prompt",
        json!({"sessionId": "sess_404", "prompt": []}),
    )
    .await;
    expect_error(&mut peer, -32602).await;
    peer.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "text"}),
    )
    .await;
    expect_error(&mut peer, -32602).await;
    peer.request("session/prompt", json!(null)).await;
    expect_error(&mut peer, -32602).await;
    peer.request("session/new", json!(5)).await;
    expect_error(&mut peer, -32602).await;
    // Unknown notifications and responses to nothing are ignored silently.
    peer.notify("_vendor/ping", json!({})).await;
    peer.send_raw(r#"{"jsonrpc":"2.0","id":999,"result":{}}"#)
        .await;
    peer.send_raw(r#"{"jsonrpc":"2.0","id":"abc","error":{"code":1,"message":"x"}}"#)
        .await;

    let turn = peer.prompt(&sid, "still alive").await;
    assert_eq!(turn.reply(), plain_reply("still alive"));
    assert!(!turn.lines.iter().any(|l| l.get("error").is_some()));
}

#[tokio::test]
async fn batch_responses_travel_together() {
    let mut peer = Peer::fast();
    peer.initialize(2, &[]).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}},
        {"jsonrpc": "2.0", "id": 2, "method": "no/such"},
        {"jsonrpc": "2.0", "method": "_vendor/notice"},
    ]);
    peer.send(&batch).await;
    let first = peer.recv().await;
    let responses = first.as_array().expect("one batch response line");
    assert_eq!(responses.len(), 2);
    assert_eq!(responses[0]["result"]["sessionId"], "sess_1");
    assert_eq!(responses[1]["error"]["code"], -32601);
    // The session's opening updates follow the batch response.
    let next = peer.recv().await;
    assert_eq!(
        next["params"]["update"]["sessionUpdate"],
        "available_commands_update"
    );
}

#[tokio::test]
async fn oversized_and_non_utf8_lines() {
    let mut peer = Peer::start_with(AgentConfig::default(), 1024);
    peer.initialize(1, &[]).await;
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"x","params":"{}"}}"#,
        "a".repeat(5000)
    );
    peer.send_raw(&huge).await;
    let err = expect_error(&mut peer, -32600).await;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maximum line size")
    );
    // Raw bytes that are not UTF-8.
    let (sid, _) = peer.new_session().await;
    peer.send_bytes(b"{\"jsonrpc\":\"2.0\",\xff\xfe}\n").await;
    expect_error(&mut peer, -32700).await;
    let turn = peer.prompt(&sid, "ok").await;
    assert_eq!(turn.stop_reason, "end_turn");
}

#[tokio::test]
async fn a_permission_error_response_counts_as_rejection() {
    let (mut peer, sid) = Peer::ready(1, &[]).await;
    peer.permission = common::PermissionAnswer::Hold;
    let id = peer.send_prompt(&sid, "/scenario tools").await;
    let request = loop {
        let msg = peer.recv().await;
        if msg["method"] == "session/request_permission" {
            break msg;
        }
    };
    let error = json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "ui crashed"}});
    peer.send(&error).await;
    let turn = peer.finish_turn(id).await;
    assert_eq!(turn.stop_reason, "end_turn");
    assert!(spindle_agent::scenarios::TOOLS_REPLY_REJECTED.ends_with(&turn.reply()));
    assert!(turn.reply().starts_with("Understood"));
}
