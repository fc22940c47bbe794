//! Many clients on one session of `spindle serve`: a creator over HTTP, a controller attached
//! over WebSocket, an observer attached over HTTP with the full history; every prompt and
//! update reaches all of them, a permission question goes to both controllers, the first
//! answer wins and the others are told (`_spindle/permission_resolved`, for peers that opted
//! in); the observer may not prompt.

use serde_json::{Value, json};
use spindle_agent::scenarios::TOOLS_REPLY_ALLOWED;

use crate::remote_support::{AcpHttp, AcpWs, agent_text};
use crate::serve_support::{Served, temp_dir};

fn is_permission(m: &Value) -> bool {
    m["method"] == "session/request_permission"
}

fn is_resolved(m: &Value) -> bool {
    m["method"] == "_spindle/permission_resolved"
}

fn user_texts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "user_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .map(str::to_string)
        .collect()
}

#[test]
fn remote_attach_controllers_race_for_a_permission_and_an_observer_sees_everything() {
    let dir = temp_dir("remote-attach");
    let served = Served::start(&dir.join("db.sqlite"), &["--protocol", "1"], 0);

    // A creates the session and runs a first turn.
    let mut a = AcpHttp::connect(&served, &["attach"]);
    let mut a_connection = a.connection_stream(None);
    let session = a.new_session(&mut a_connection);
    let mut a_stream = a.session_stream(&session, None);
    let text = |t: &str| json!({ "sessionId": session, "prompt": [{ "type": "text", "text": t }] });
    let (first, _) = a.request("session/prompt", text("first turn"), Some(&session));
    a_stream.response(first);

    // C attaches as an observer with the full history (no opt-in: a plain RFD client).
    let mut c = AcpHttp::connect(&served, &[]);
    let attach = json!({ "sessionId": session, "role": "observer", "historyPolicy": "full" });
    let (c_attach, status) = c.request("session/attach", attach, Some(&session));
    assert_eq!(status, 202);
    let mut c_stream = c.session_stream(&session, None);
    let history: Vec<Value> = c_stream
        .collect_until(|m| m["id"] == json!(c_attach) && m.get("method").is_none())
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert_eq!(user_texts(&history), ["first turn"], "the history first");
    assert!(agent_text(&history).starts_with("You said: \"first turn\""));
    let answer = history.last().unwrap();
    assert_eq!(answer["result"]["role"], "observer", "{answer}");

    // B attaches as a controller over WebSocket, live only.
    let (mut b, _) = AcpWs::connect(&served, &["attach"]);
    let attach = json!({ "sessionId": session, "role": "controller", "historyPolicy": "none" });
    let b_attach = b.send_request("session/attach", attach);
    let answer = b.response(b_attach);
    assert_eq!(answer["result"]["role"], "controller", "{answer}");

    // A prompts a turn that asks for permission: both controllers are asked, with one id.
    let (turn, _) = a.request("session/prompt", text("/scenario tools"), Some(&session));
    let mut a_turn: Vec<Value> = Vec::new();
    let mut take = |stream: &mut crate::remote_support::AcpSse, check: &dyn Fn(&Value) -> bool| {
        let got: Vec<Value> = stream
            .collect_until(check)
            .into_iter()
            .map(|e| e.message)
            .collect();
        a_turn.extend(got.iter().cloned());
        got.last().cloned().expect("the awaited message")
    };
    let asked_a = take(&mut a_stream, &is_permission);
    let asked_b = b.until(is_permission).expect("B is asked");
    assert_eq!(asked_a["id"], asked_b["id"]);
    assert_eq!(asked_a["params"]["sessionId"], session.as_str());
    // B answers first and wins; A's later answer changes nothing.
    b.send(&json!({ "jsonrpc": "2.0", "id": asked_b["id"],
                    "result": { "outcome": { "outcome": "selected", "optionId": "allow" } } }));
    let resolved = take(&mut a_stream, &is_resolved);
    assert_eq!(resolved["params"]["requestId"], asked_a["id"]);
    assert_eq!(resolved["params"]["outcome"]["optionId"], "allow");
    let late = json!({ "jsonrpc": "2.0", "id": asked_a["id"],
                       "result": { "outcome": { "outcome": "selected", "optionId": "reject" } } });
    assert_eq!(a.post(&late, None).status, 202);

    take(&mut a_stream, &|m: &Value| {
        m["id"] == json!(turn) && m.get("method").is_none()
    });
    assert_eq!(a_turn.last().unwrap()["result"]["stopReason"], "end_turn");
    // B sees the same turn (and is told of its own win), never A's answer.
    let b_turn = b.collect_until(|m| {
        m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            && agent_text([m]).ends_with("src/main.rs.")
    });
    assert!(b_turn.iter().any(is_resolved));
    assert!(b_turn.iter().all(|m| m["result"]["stopReason"].is_null()));
    // C saw the prompt and the whole reply, no permission question, no extension.
    let c_turn: Vec<Value> = c_stream
        .collect_until(|m| agent_text([m]).ends_with("src/main.rs."))
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert_eq!(user_texts(&c_turn), ["/scenario tools"]);
    assert_eq!(agent_text(&a_turn), TOOLS_REPLY_ALLOWED);
    assert_eq!(
        agent_text(&c_turn),
        TOOLS_REPLY_ALLOWED,
        "the observer got the same reply"
    );
    assert!(!c_turn.iter().any(is_permission) && !c_turn.iter().any(is_resolved));

    // An observer may not prompt: a JSON-RPC error on its stream.
    let (refused, status) = c.request("session/prompt", text("let me"), Some(&session));
    assert_eq!(status, 202);
    let answer = c_stream.response(refused);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");

    // B detaches; the session goes on for A.
    let b_detach = b.send_request("session/detach", json!({ "sessionId": session }));
    assert!(b.response(b_detach)["result"].is_object());
    let (third, _) = a.request("session/prompt", text("after detach"), Some(&session));
    assert_eq!(a_stream.response(third)["result"]["stopReason"], "end_turn");
}

#[test]
fn remote_attach_a_page_session_is_loaded_over_acp_and_the_page_answers_a_permission() {
    let dir = temp_dir("remote-page-session");
    let served = Served::start(&dir.join("db.sqlite"), &["--protocol", "1"], 0);
    // A session of the page, with a turn the page prompted.
    let id = served.create_session();
    served.prompt(id, "from the page");
    served.wait_finished_turns(id, 1);
    let session = id.to_string();

    // A remote client loads it: the page's turn is its history.
    let mut client = AcpHttp::connect(&served, &["attach"]);
    let mut stream = client.session_stream(&session, None);
    let params = json!({ "sessionId": session, "cwd": "/", "mcpServers": [] });
    let (load, status) = client.request("session/load", params, Some(&session));
    assert_eq!(status, 202);
    let history: Vec<Value> = stream
        .collect_until(|m| m["id"] == json!(load) && m.get("method").is_none())
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert_eq!(user_texts(&history), ["from the page"]);
    assert!(agent_text(&history).starts_with("You said: \"from the page\""));

    // The page prompts a turn asking permission: the client (a controller) is asked too; the
    // page answers first and the client is told.
    served.prompt(id, "/scenario tools");
    let asked = stream.until(is_permission).expect("the client is asked");
    let page = served.get_json(&format!("/api/sessions/{id}/stats"));
    assert!(page["acpObservers"].as_u64().unwrap() >= 1, "{page}");
    let key = asked["id"]
        .as_str()
        .and_then(|id| id.strip_prefix(&format!("spindle-permission-{session}-")))
        .expect("the request id names the session and the agent's request")
        .to_string();
    let answer = json!({ "key": key, "optionId": "reject" }).to_string();
    let response = served.post_json(&format!("/api/sessions/{id}/permission"), &answer);
    assert_eq!(response.status, 200, "{}", response.body);
    let resolved = stream.until(is_resolved).expect("the client is told");
    assert_eq!(resolved["params"]["outcome"]["optionId"], "reject");
    // The client's late answer is not taken: the rejected edit stands.
    let late = json!({ "jsonrpc": "2.0", "id": asked["id"],
                       "result": { "outcome": { "outcome": "selected", "optionId": "allow" } } });
    assert_eq!(client.post(&late, None).status, 202);
    let replies = served.wait_finished_turns(id, 2);
    assert_eq!(
        replies.last().unwrap()["text"],
        spindle_agent::scenarios::TOOLS_REPLY_REJECTED
    );
}
