//! `spindle serve`'s `/acp` over the RFD's Streamable HTTP profile, driven as a remote client
//! would: the happy path with the reference agent, and hostile requests answered with the
//! RFD's status codes.

use serde_json::{Value, json};

use crate::remote_support::{AcpHttp, agent_text, post_large, post_raw};
use crate::serve_support::{Served, http, temp_dir};

fn serve(name: &str) -> (crate::harness::TempDir, Served) {
    let dir = temp_dir(name);
    let served = Served::start(&dir.join("db.sqlite"), &["--protocol", "1"], 0);
    (dir, served)
}

#[test]
fn remote_http_a_client_creates_a_session_prompts_it_and_the_page_lists_it() {
    let (_dir, served) = serve("remote-http-happy");
    let mut client = AcpHttp::connect(&served, &[]);
    let result = &client.initialize["result"];
    assert_eq!(result["protocolVersion"], 1, "{}", client.initialize);
    assert_eq!(result["agentCapabilities"]["loadSession"], true);
    assert_eq!(client.connection.len(), 32, "128 random bits as hex");

    let mut connection_stream = client.connection_stream(None);
    assert_eq!(connection_stream.status, 200);
    let session = client.new_session(&mut connection_stream);
    let mut stream = client.session_stream(&session, None);
    assert_eq!(stream.status, 200);

    let prompt = json!({ "sessionId": session,
                         "prompt": [{ "type": "text", "text": "hello over http" }] });
    let (id, status) = client.request("session/prompt", prompt, Some(&session));
    assert_eq!(status, 202);
    let events = stream.collect_until(|m| m["id"] == json!(id) && m.get("method").is_none());
    let messages: Vec<&Value> = events.iter().map(|e| &e.message).collect();
    let answer = messages.last().expect("the prompt's answer");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let user: Vec<&Value> = messages
        .iter()
        .copied()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "user_message_chunk")
        .collect();
    assert!(
        user.is_empty(),
        "a v1 client's own prompt is not echoed back to it"
    );
    let text = agent_text(messages.iter().copied());
    assert!(text.starts_with("You said: \"hello over http\""), "{text}");
    for message in &messages {
        if message.get("method").is_some() {
            assert_eq!(
                message["params"]["sessionId"],
                session.as_str(),
                "{message}"
            );
        }
    }
    // Event ids are an extension this client did not opt into (`remote_resume` has them).
    assert!(
        stream.ids.is_empty() && connection_stream.ids.is_empty(),
        "{:?} {:?}",
        stream.ids,
        connection_stream.ids
    );

    // The session is one of the page's.
    let listed = served.get_json("/api/sessions");
    let listed: Vec<String> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].to_string())
        .collect();
    assert!(listed.contains(&session), "{listed:?}");

    assert_eq!(client.delete().status, 202);
    assert!(
        connection_stream.next().is_none(),
        "DELETE ends the streams"
    );
    assert_eq!(client.delete().status, 404, "the connection is gone");
}

#[test]
fn remote_http_hostile_requests_get_the_rfd_status_codes() {
    let (_dir, served) = serve("remote-http-hostile");
    let host = served.host();
    let mut client = AcpHttp::connect(&served, &[]);
    let mut connection_stream = client.connection_stream(None);
    let session = client.new_session(&mut connection_stream);
    let prompt = |session: &str| {
        json!({ "jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                "params": { "sessionId": session, "prompt": [] } })
        .to_string()
    };

    // POST without Content-Type JSON: 415.
    let response = http(
        served.addr,
        "POST",
        "/acp",
        &[("Host", &host), ("Content-Type", "text/plain")],
        Some("{}"),
    );
    assert_eq!(response.status, 415);
    // Not initialize and no Acp-Connection-Id: 400.
    assert_eq!(
        post_raw(served.addr, &host, &[], &prompt(&session)).status,
        400
    );
    // A foreign (unknown) connection id: 404.
    let foreign = [("Acp-Connection-Id", "00000000000000000000000000000000")];
    assert_eq!(
        post_raw(served.addr, &host, &foreign, &prompt(&session)).status,
        404
    );
    // A session-scoped method with neither Acp-Session-Id nor sessionId: 400.
    let no_session = json!({ "jsonrpc": "2.0", "id": 5, "method": "session/prompt",
                             "params": { "prompt": [] } });
    assert_eq!(client.post(&no_session, None).status, 400);
    // Acp-Session-Id that contradicts params.sessionId: 400.
    assert_eq!(
        client
            .post(
                &serde_json::from_str(&prompt(&session)).unwrap(),
                Some("999999")
            )
            .status,
        400
    );
    // A wrong session id: 404 (POST and GET).
    assert_eq!(
        client
            .post(
                &serde_json::from_str(&prompt("999999")).unwrap(),
                Some("999999")
            )
            .status,
        404
    );
    assert_eq!(client.session_stream("999999", None).status, 404);
    // Another connection's session (not attached here) is not this connection's to prompt.
    let mut other = AcpHttp::connect(&served, &[]);
    let prompt_value: Value = serde_json::from_str(&prompt(&session)).unwrap();
    assert_eq!(other.post(&prompt_value, Some(&session)).status, 404);
    // Batches: 501 with a JSON-RPC error.
    let batch = post_raw(
        served.addr,
        &host,
        &[],
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}]",
    );
    assert_eq!(batch.status, 501);
    assert_eq!(
        serde_json::from_str::<Value>(&batch.body).unwrap()["error"]["code"],
        -32600
    );
    // Not JSON: 400 with a parse error.
    assert_eq!(post_raw(served.addr, &host, &[], "{nope").status, 400);
    // A body over 16 MiB: 413, refused from its declared length.
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{}\"}}",
        "a".repeat(16 << 20)
    );
    let conn_header = [("Acp-Connection-Id", client.connection.as_str())];
    assert_eq!(
        post_large(served.addr, &host, &conn_header, huge.as_bytes()),
        413
    );
    // GET without Accept: text/event-stream: 406; without the connection header: 400.
    let get = |headers: &[(&str, &str)]| http(served.addr, "GET", "/acp", headers, None).status;
    assert_eq!(
        get(&[("Host", &host), ("Acp-Connection-Id", &client.connection)]),
        406
    );
    assert_eq!(
        get(&[("Host", &host), ("Accept", "text/event-stream")]),
        400
    );
    assert_eq!(
        get(&[
            ("Host", &host),
            ("Accept", "text/event-stream"),
            ("Acp-Connection-Id", "nope")
        ]),
        404
    );
    // DELETE without the header: 400.
    assert_eq!(
        http(served.addr, "DELETE", "/acp", &[("Host", &host)], None).status,
        400
    );
    // A cross-origin browser request: 403 (the page's Origin check covers /acp).
    let origin = [("Origin", "http://evil.example")];
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}});
    assert_eq!(
        post_raw(served.addr, &host, &origin, &init.to_string()).status,
        403
    );

    // The session goes on for its own connection after all that.
    let mut stream = client.session_stream(&session, None);
    let params =
        json!({ "sessionId": session, "prompt": [{ "type": "text", "text": "still here" }] });
    let (id, status) = client.request("session/prompt", params, Some(&session));
    assert_eq!(status, 202);
    let answer = stream.response(id);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // An observer-only request on a session not attached: a JSON-RPC error, not a crash.
    let detach = json!({ "sessionId": session });
    let (id, status) = other.request("session/detach", detach, Some(&session));
    assert_eq!(status, 404, "request {id}: not this connection's session");
}

/// An official-style v1 client (as the SDKs' clients: protocolVersion 1, no extensions) on a
/// serve with the default protocol (2): it gets v1 throughout, only v1 update kinds, the turn's answer `{stopReason}` at its end, and no echo of its own prompt; an
/// observer of the same session (v1 too) sees the prompt.
#[test]
fn remote_http_a_v1_client_on_a_default_serve_gets_v1() {
    let dir = temp_dir("remote-http-v1-default");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let mut client = AcpHttp::connect(&served, &[]);
    assert_eq!(client.initialize["result"]["protocolVersion"], 1);
    let mut connection_stream = client.connection_stream(None);
    let session = client.new_session(&mut connection_stream);
    let mut stream = client.session_stream(&session, None);
    let mut observer = AcpHttp::connect(&served, &[]);
    let attach = json!({ "sessionId": session, "role": "observer", "historyPolicy": "none" });
    let (attached, _) = observer.request("session/attach", attach, Some(&session));
    let mut observed = observer.session_stream(&session, None);
    observed.response(attached);

    let prompt = json!({ "sessionId": session,
                         "prompt": [{ "type": "text", "text": "hello from v1" }] });
    let (id, _) = client.request("session/prompt", prompt, Some(&session));
    let events = stream.collect_until(|m| m["id"] == json!(id) && m.get("method").is_none());
    let messages: Vec<&Value> = events.iter().map(|e| &e.message).collect();
    let answer = messages.last().unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // v1 shapes only (interop/run.sh validates every message against the schemas).
    for message in &messages {
        assert!(
            message["params"]["update"].get("messageId").is_none()
                || message["params"]["update"]["sessionUpdate"] != "tool_call_update"
        );
        assert_ne!(message["params"]["update"]["sessionUpdate"], "state_update");
        assert_ne!(
            message["params"]["update"]["sessionUpdate"],
            "user_message_chunk"
        );
    }
    let text = agent_text(messages.iter().copied());
    assert!(text.contains("You said: \"hello from v1\""), "{text}");
    let seen: Vec<Value> = observed
        .collect_until(|m| agent_text([m]).ends_with("reply."))
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert!(
        seen.iter().any(
            |m| m["params"]["update"]["sessionUpdate"] == "user_message_chunk"
                && m["params"]["update"]["content"]["text"] == "hello from v1"
        ),
        "the other client sees the prompt"
    );
    assert!(
        seen.iter()
            .all(|m| m["params"]["update"]["sessionUpdate"] != "user_message")
    );
}
