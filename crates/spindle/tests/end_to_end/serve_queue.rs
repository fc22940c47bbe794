//! `spindle serve`'s prompt queue (issue 27) with the reference agent: a prompt sent while a v1
//! agent's turn runs is queued (`202` with the item), edited, removed, sent when the turn ends
//! (one per turn, in order) or at once ("send now" cancels the turn); a cancel keeps the queue; a
//! restart keeps it; a v2 agent gets every prompt at once; an `/acp` client's prompt is queued
//! the same way and answered when its own turn ends. Turns are held open by a permission
//! question (`/scenario tools`) or by `/scenario stall` (until cancelled): no timing is assumed.

use serde_json::{Value, json};

use crate::remote_support::AcpHttp;
use crate::serve_support::{
    Served, entry_texts, reference_agent_with, serve_version, temp_dir, transcript, wait_transcript,
};

fn queue(served: &Served, session: i64) -> Vec<Value> {
    served.get_json(&format!("/api/sessions/{session}/queue"))["queue"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn texts(items: &[Value]) -> Vec<&str> {
    items.iter().filter_map(|i| i["text"].as_str()).collect()
}

/// `POST .../prompt`: the status and the answer.
fn prompt(served: &Served, session: i64, text: &str) -> (u16, Value) {
    served.post_value(
        &format!("/api/sessions/{session}/prompt"),
        &json!({ "text": text }),
    )
}

fn users(served: &Served, session: i64) -> Vec<String> {
    entry_texts(&transcript(served, session), "user_message")
}

/// Waits until the session's prompts, as the transcript shows them, are `expected`, and every
/// turn has finished.
fn wait_prompts(served: &Served, session: i64, expected: &[&str]) {
    wait_transcript(served, session, "the prompts in order", |t| {
        entry_texts(t, "user_message") == expected
    });
    served.wait_finished_turns(session, expected.len());
}

#[test]
fn serve_queue_v1_prompts_wait_for_the_turn_and_are_edited_removed_and_sent_in_order() {
    let dir = temp_dir("queue-v1");
    let served = serve_version(&dir, &dir.path, 1, &[], &reference_agent_with(1, &[]));
    let session = served.create_session();
    let mut sse = served.sse(session, None);
    let (status, first) = prompt(&served, session, "/scenario tools");
    assert_eq!(
        (status, &first),
        (202, &json!({"accepted": true, "queued": null}))
    );
    let question = sse.wait_op(|op| op["op"] == "web_permission").unwrap();

    // The turn waits for the permission answer: three prompts are queued, in order.
    let mut ids = Vec::new();
    for (n, text) in ["first queued", "second queued", "third queued"]
        .iter()
        .enumerate()
    {
        let (status, answer) = prompt(&served, session, text);
        assert_eq!(status, 202, "{answer}");
        let item = &answer["queued"];
        assert_eq!(item["text"], *text, "{answer}");
        assert_eq!(item["position"], n + 1, "{answer}");
        ids.push(item["id"].as_str().unwrap().to_owned());
    }
    let op = sse
        .wait_op(|op| op["op"] == "web_queue" && op["items"].as_array().unwrap().len() == 3)
        .unwrap();
    assert_eq!(
        texts(op["items"].as_array().unwrap()),
        ["first queued", "second queued", "third queued"]
    );

    // Edited and removed until sent; bad requests say why.
    let item = |id: &str| format!("/api/sessions/{session}/queue/{id}");
    let edited = served.request(
        "PATCH",
        &item(&ids[1]),
        Some(r#"{"text":"second, edited"}"#),
    );
    assert_eq!(edited.status, 200, "{}", edited.body);
    let edited: Value = serde_json::from_str(&edited.body).unwrap();
    assert_eq!(edited["item"]["text"], "second, edited");
    assert_eq!(edited["item"]["position"], 2);
    let removed = served.request("DELETE", &item(&ids[2]), None);
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!(
        texts(&queue(&served, session)),
        ["first queued", "second, edited"]
    );
    let empty = served.request("PATCH", &item(&ids[0]), Some(r#"{"text":"  "}"#));
    assert_eq!(empty.status, 400, "{}", empty.body);
    let gone = served.request("DELETE", &item(&ids[2]), None);
    assert_eq!(gone.status, 404, "{}", gone.body);
    assert!(gone.body.contains("sent or removed"), "{}", gone.body);
    let bad = served.request("DELETE", &item("a%2Fb"), None);
    assert_eq!(bad.status, 404, "{}", bad.body);

    // The permission answered, the turn ends; the queue is sent one per turn, in order.
    let (status, body) = served.post_value(
        &format!("/api/sessions/{session}/permission"),
        &json!({"key": question["key"], "optionId": "allow"}),
    );
    assert_eq!(status, 200, "{body}");
    wait_prompts(
        &served,
        session,
        &["/scenario tools", "first queued", "second, edited"],
    );
    assert!(queue(&served, session).is_empty());
    sse.wait_op(|op| op["op"] == "web_queue" && op["items"] == json!([]))
        .unwrap();
    served.stop();
}

#[test]
fn serve_queue_v1_send_now_cancels_the_turn_a_cancel_holds_the_queue_and_a_restart_keeps_it() {
    let dir = temp_dir("queue-send-now");
    let agent = reference_agent_with(1, &[]);
    let served = serve_version(&dir, &dir.path, 1, &[], &agent);
    let session = served.create_session();
    prompt(&served, session, "/scenario stall");
    for text in ["A", "B"] {
        let (status, answer) = prompt(&served, session, text);
        assert_eq!(status, 202, "{answer}");
        assert_eq!(answer["queued"]["text"], text, "{answer}");
    }

    // A cancel ends the turn and keeps the queue: nothing is sent.
    let cancel = served.post_json(&format!("/api/sessions/{session}/cancel"), "{}");
    assert_eq!(cancel.status, 200, "{}", cancel.body);
    served.wait_finished_turns(session, 1);
    assert_eq!(texts(&queue(&served, session)), ["A", "B"]);
    assert_eq!(users(&served, session), ["/scenario stall"]);

    // A restart keeps the queue (it is in the log).
    served.stop();
    let served = serve_version(&dir, &dir.path, 1, &[], &agent);
    let held = queue(&served, session);
    assert_eq!(texts(&held), ["A", "B"]);
    let b = held[1]["id"].as_str().unwrap().to_owned();

    // With no turn running a prompt goes at once; "send now" cancels its turn and sends B,
    // whose end sends A.
    let (status, answer) = prompt(&served, session, "/scenario stall");
    assert_eq!(
        (status, answer["queued"].clone()),
        (202, Value::Null),
        "{answer}"
    );
    wait_transcript(&served, session, "the second stall", |t| {
        entry_texts(t, "user_message").len() == 2
    });
    let now = served.post_json(&format!("/api/sessions/{session}/queue/{b}/send-now"), "{}");
    assert_eq!(now.status, 202, "{}", now.body);
    let now: Value = serde_json::from_str(&now.body).unwrap();
    assert_eq!(now, json!({"sending": b, "cancelledTurn": true}));
    wait_prompts(
        &served,
        session,
        &["/scenario stall", "/scenario stall", "B", "A"],
    );
    assert!(queue(&served, session).is_empty());
    served.stop();
}

/// A queued prompt the server refuses when it is sent (a mention outside the working
/// directory) leaves the queue with a banner saying why: nobody waits for its answer.
#[test]
fn serve_queue_a_queued_prompt_refused_when_sent_is_said_in_a_banner() {
    let dir = temp_dir("queue-refused");
    let served = serve_version(&dir, &dir.path, 1, &[], &reference_agent_with(1, &[]));
    let session = served.create_session();
    let mut sse = served.sse(session, None);
    prompt(&served, session, "/scenario stall");
    let (_, answer) = prompt(&served, session, "read @/etc/passwd");
    let id = answer["queued"]["id"].as_str().unwrap().to_owned();
    let now = served.post_json(
        &format!("/api/sessions/{session}/queue/{id}/send-now"),
        "{}",
    );
    assert_eq!(now.status, 202, "{}", now.body);
    let banner = sse
        .wait_op(|op| {
            op["op"] == "web_banner"
                && op["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("A queued prompt was not sent"))
        })
        .unwrap();
    assert!(
        banner["text"].as_str().unwrap().contains("/etc/passwd"),
        "{banner}"
    );
    assert!(queue(&served, session).is_empty());
    assert_eq!(users(&served, session), ["/scenario stall"]);
    served.stop();
}

#[test]
fn serve_queue_v2_agents_get_every_prompt_at_once() {
    let dir = temp_dir("queue-v2");
    // Protocol 2, the reference agent streaming `/scenario slow` with pauses.
    let served = Served::start(&dir.join("db.sqlite"), &[], 10);
    let session = served.create_session();
    prompt(&served, session, "/scenario slow");
    let (status, answer) = prompt(&served, session, "meanwhile");
    assert_eq!(
        (status, answer),
        (202, json!({"accepted": true, "queued": null}))
    );
    served.wait_reply_containing(session, "meanwhile");
    served.wait_reply_containing(session, "Slow streaming");
    assert!(queue(&served, session).is_empty());
    served.stop();
}

#[test]
fn serve_queue_an_acp_prompt_is_queued_and_answered_when_its_own_turn_ends() {
    let dir = temp_dir("queue-acp");
    let served = serve_version(&dir, &dir.path, 1, &[], &reference_agent_with(1, &[]));
    let mut client = AcpHttp::connect(&served, &[]);
    let mut connection_stream = client.connection_stream(None);
    let session = client.new_session(&mut connection_stream);
    let mut stream = client.session_stream(&session, None);
    let blocks =
        |text: &str| json!({ "sessionId": session, "prompt": [{"type": "text", "text": text}] });
    let (tools, status) =
        client.request("session/prompt", blocks("/scenario tools"), Some(&session));
    assert_eq!(status, 202);
    let asked = stream
        .until(|m| m["method"] == "session/request_permission")
        .expect("the permission question");
    let (queued, status) =
        client.request("session/prompt", blocks("queued over acp"), Some(&session));
    assert_eq!(status, 202);

    // The page's view of the same session shows the item.
    let page = served.get_json("/api/sessions")["sessions"][0]["id"]
        .as_i64()
        .unwrap();
    // Answered 202 before the session's task queued it: waited for.
    let items = crate::harness::wait_for(crate::serve_support::PATIENCE, "the queued item", || {
        let items = queue(&served, page);
        (texts(&items) == ["queued over acp"]).then_some(items)
    });
    assert_eq!(items[0]["acp"], true);

    let option = asked["params"]["options"][0]["optionId"].clone();
    let answer = json!({ "jsonrpc": "2.0", "id": asked["id"],
                         "result": { "outcome": { "outcome": "selected", "optionId": option } } });
    assert_eq!(client.post(&answer, Some(&session)).status, 202);
    let first = stream.response(tools);
    assert_eq!(first["result"]["stopReason"], "end_turn", "{first}");
    let second = stream.response(queued);
    assert_eq!(second["result"]["stopReason"], "end_turn", "{second}");
    assert!(queue(&served, page).is_empty());

    // Removed unsent, a queued `/acp` prompt is answered as a cancelled turn.
    let (stall, _) = client.request("session/prompt", blocks("/scenario stall"), Some(&session));
    stream.until(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
    let (dropped, _) = client.request("session/prompt", blocks("never sent"), Some(&session));
    let items = crate::harness::wait_for(crate::serve_support::PATIENCE, "the queued item", || {
        let items = queue(&served, page);
        (!items.is_empty()).then_some(items)
    });
    let id = items[0]["id"].as_str().unwrap();
    let removed = served.request("DELETE", &format!("/api/sessions/{page}/queue/{id}"), None);
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!(
        stream.response(dropped)["result"]["stopReason"],
        "cancelled"
    );
    let (cancel, _) = client.request(
        "session/cancel",
        json!({ "sessionId": session }),
        Some(&session),
    );
    let _ = cancel;
    assert_eq!(stream.response(stall)["result"]["stopReason"], "cancelled");
    served.stop();
}

#[test]
fn serve_queue_routes_are_refused_cross_site() {
    let dir = temp_dir("queue-cross-site");
    let served = serve_version(&dir, &dir.path, 1, &[], &reference_agent_with(1, &[]));
    let session = served.create_session();
    let host = served.host();
    for (method, path) in [
        ("PATCH", format!("/api/sessions/{session}/queue/q-1")),
        ("DELETE", format!("/api/sessions/{session}/queue/q-1")),
        (
            "POST",
            format!("/api/sessions/{session}/queue/q-1/send-now"),
        ),
    ] {
        let headers = [
            ("Host", host.as_str()),
            ("Origin", "http://evil.example"),
            ("Content-Type", "application/json"),
        ];
        let refused = crate::serve_support::http(served.addr, method, &path, &headers, Some("{}"));
        assert_eq!(refused.status, 403, "{method} {path}: {}", refused.body);
        // A form post (no JSON content type) is refused too.
        if method != "DELETE" {
            let form = [("Host", host.as_str()), ("Content-Type", "text/plain")];
            let refused = crate::serve_support::http(served.addr, method, &path, &form, Some("{}"));
            assert_eq!(refused.status, 415, "{method} {path}: {}", refused.body);
        }
    }
    served.stop();
}

/// Two v1 replicas on one PostgreSQL database: a prompt sent to B while A runs the session's
/// turn is queued on A (B answers `202` forwarded), both replicas' views show the queue, and an
/// edit sent to B reaches A's queue before the turn's end sends it.
#[test]
fn serve_queue_a_prompt_sent_to_a_replica_that_does_not_run_the_session_is_queued_on_the_owner() {
    let Some(url) = crate::replicas::database("queue_replicas") else {
        return;
    };
    let replica = |id: &str| {
        crate::serve_support::start_serve(
            std::path::Path::new(&url),
            &["--replica-id", id, "--lease-ttl", "4", "--protocol", "1"],
            &reference_agent_with(1, &[]),
            None,
            &[],
        )
    };
    let a = replica("a");
    let b = replica("b");
    let session = a.create_session();
    crate::replicas::wait_listed(&b, session);
    let mut sse = a.sse(session, None);
    prompt(&a, session, "/scenario tools");
    let question = sse.wait_op(|op| op["op"] == "web_permission").unwrap();
    let (status, answer) = prompt(&b, session, "sent to b");
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["forwarded"], true, "{answer}");
    let wait_queue = |served: &Served, expected: &[&str]| {
        crate::harness::wait_for(crate::serve_support::PATIENCE, "the queue", || {
            let items = queue(served, session);
            (texts(&items) == expected).then_some(items)
        })
    };
    let items = wait_queue(&a, &["sent to b"]);
    wait_queue(&b, &["sent to b"]);
    let id = items[0]["id"].as_str().unwrap();
    let edit = b.request(
        "PATCH",
        &format!("/api/sessions/{session}/queue/{id}"),
        Some(r#"{"text":"sent to b, edited on b"}"#),
    );
    assert_eq!(edit.status, 200, "{}", edit.body);
    assert!(edit.body.contains("forwarded"), "{}", edit.body);
    wait_queue(&a, &["sent to b, edited on b"]);
    let (status, body) = a.post_value(
        &format!("/api/sessions/{session}/permission"),
        &json!({"key": question["key"], "optionId": "allow"}),
    );
    assert_eq!(status, 200, "{body}");
    wait_prompts(&a, session, &["/scenario tools", "sent to b, edited on b"]);
    wait_queue(&b, &[]);
    a.stop();
    b.stop();
}

/// An `/acp` client of B prompts a session A runs while A's v1 turn waits for a permission
/// answer: the prompt goes to A, is queued there, and the client's answer comes from the log
/// when its own turn ends on A.
#[test]
fn serve_queue_an_acp_prompt_sent_to_a_replica_that_does_not_run_the_session_is_answered_after_its_turn()
 {
    let Some(url) = crate::replicas::database("queue_replicas_acp") else {
        return;
    };
    let replica = |id: &str| {
        crate::serve_support::start_serve(
            std::path::Path::new(&url),
            &["--replica-id", id, "--lease-ttl", "4", "--protocol", "1"],
            &reference_agent_with(1, &[]),
            None,
            &[],
        )
    };
    let a = replica("a");
    let b = replica("b");
    let session = a.create_session();
    crate::replicas::wait_listed(&b, session);
    let mut sse = a.sse(session, None);
    prompt(&a, session, "/scenario tools");
    let question = sse.wait_op(|op| op["op"] == "web_permission").unwrap();

    let mut client = AcpHttp::connect(&b, &[]);
    let sid = session.to_string();
    let mut stream = client.session_stream(&sid, None);
    let attach = json!({ "sessionId": sid, "role": "controller", "historyPolicy": "none" });
    let (attached, status) = client.request("session/attach", attach, Some(&sid));
    assert_eq!(status, 202);
    stream.response(attached);
    let blocks = json!({ "sessionId": sid,
                         "prompt": [{"type": "text", "text": "queued over acp on b"}] });
    let (queued, status) = client.request("session/prompt", blocks, Some(&sid));
    assert_eq!(status, 202);
    crate::harness::wait_for(crate::serve_support::PATIENCE, "the item on a", || {
        (texts(&queue(&a, session)) == ["queued over acp on b"]).then_some(())
    });
    let (status, body) = a.post_value(
        &format!("/api/sessions/{session}/permission"),
        &json!({"key": question["key"], "optionId": "allow"}),
    );
    assert_eq!(status, 200, "{body}");
    let answer = stream.response(queued);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    wait_prompts(&a, session, &["/scenario tools", "queued over acp on b"]);
    a.stop();
    b.stop();
}
