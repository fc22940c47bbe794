//! `elicitation/create` through `spindle serve` against the reference agent's `elicit-form`: the
//! question reaches the page's snapshot as a `web_elicitation` op, a wrong answer is refused with
//! the field that is wrong, the right one reaches the agent (its reply repeats it), a second
//! answer finds the question closed, and every line of the wire log is valid under the ACP
//! schema of the negotiated version (v1 and v2).

use std::time::Duration;

use serde_json::{Value, json};
use spindle_agent::scenarios;
use spindle_protocol::schema_check::{Direction, SchemaConversation};

use crate::harness::wait_for;
use crate::remote_support::{AcpHttp, AcpWs, agent_text};
use crate::serve_support::{Served, db_arg, temp_dir};

const PATIENCE: Duration = Duration::from_secs(60);

fn open_elicitation(served: &Served, session: i64) -> Value {
    wait_for(PATIENCE, "a web_elicitation op in the snapshot", || {
        let snapshot = served.get_json(&format!("/api/sessions/{session}/snapshot"));
        snapshot["ops"]
            .as_array()?
            .iter()
            .find(|op| op["op"] == "web_elicitation")
            .cloned()
    })
}

/// Validates the session's wire log, read through the store the server was started on (SQLite,
/// or PostgreSQL under `SPINDLE_TEST_DB=postgres`); returns how many elicitation lines it held.
fn check_wire_log(db: &std::path::Path, session: i64) -> usize {
    let location = db_arg(db).to_string_lossy().into_owned();
    let store = spindle_store::open(&spindle_store::Location::parse(&location)).expect("the store");
    let (lines, _) = store.lines(session).expect("the wire log");
    let mut conversation = SchemaConversation::new();
    let mut checked = 0;
    for logged in lines {
        let line = logged.line;
        let direction = match logged.direction {
            spindle_store::Direction::Agent => Direction::AgentToClient,
            spindle_store::Direction::Client => Direction::ClientToAgent,
            _ => continue,
        };
        conversation
            .check(direction, &line)
            .unwrap_or_else(|e| panic!("{line}: {e:?}"));
        if line.contains("elicitation/create") || line.contains("\"action\"") {
            checked += 1;
        }
    }
    checked
}

#[test]
fn serve_asks_the_page_checks_the_answer_and_the_first_one_wins() {
    for protocol in ["1", "2"] {
        let dir = temp_dir(&format!("serve-elicit-v{protocol}"));
        let db = dir.join("db.sqlite");
        let served = Served::start(&db, &["--protocol", protocol], 0);
        let session = served.create_session();
        served.prompt(session, "/scenario elicit-form");
        let op = open_elicitation(&served, session);
        let view = &op["elicitation"];
        assert_eq!(view["message"], scenarios::ELICIT_FORM_MESSAGE, "{op}");
        assert_eq!(
            view["form"]["fields"].as_array().map(Vec::len),
            Some(7),
            "{op}"
        );
        let key = op["key"].as_str().expect("a key").to_owned();
        let path = format!("/api/sessions/{session}/elicitation");
        // Checked by the server too: a wrong value is refused with its field, nothing is sent.
        let wrong =
            json!({"key": key, "action": "accept", "content": {"name": "demo", "workers": 99}});
        let refused = served.post_json(&path, &wrong.to_string());
        assert_eq!(refused.status, 400, "{}", refused.body);
        assert!(
            refused.body.contains("workers: at most 8"),
            "{}",
            refused.body
        );
        let right = json!({"key": key, "action": "accept",
            "content": {"name": "demo", "workers": 4, "targets": ["macos"]}});
        let taken = served.post_json(&path, &right.to_string());
        assert_eq!(taken.status, 200, "{}", taken.body);
        served.wait_reply_containing(
            session,
            r#"You accepted: name="demo", targets=["macos"], workers=4."#,
        );
        let late = served.post_json(&path, &json!({"key": key, "action": "decline"}).to_string());
        assert_eq!(late.status, 409, "{}", late.body);
        served.stop();
        assert!(
            check_wire_log(&db, session) >= 2,
            "the request and its answer are logged"
        );
    }
}

/// Over `/acp`: both controllers are asked with one id, the first answer wins, the other is told
/// to drop the question (`$/cancel_request`), and the agent gets the winner's content.
#[test]
fn acp_controllers_are_asked_and_the_first_answer_wins() {
    let dir = temp_dir("remote-elicit");
    let served = Served::start(&dir.join("db.sqlite"), &["--protocol", "1"], 0);
    let mut a = AcpHttp::connect(&served, &["attach"]);
    let mut a_connection = a.connection_stream(None);
    let session = a.new_session(&mut a_connection);
    let mut a_stream = a.session_stream(&session, None);
    let (mut b, _) = AcpWs::connect(&served, &["attach"]);
    let attach = json!({ "sessionId": session, "role": "controller", "historyPolicy": "none" });
    let b_attach = b.send_request("session/attach", attach);
    assert_eq!(b.response(b_attach)["result"]["role"], "controller");
    let prompt = json!({ "sessionId": session,
        "prompt": [{ "type": "text", "text": "/scenario elicit-form" }] });
    let (turn, _) = a.request("session/prompt", prompt, Some(&session));
    let is_create = |m: &Value| m["method"] == "elicitation/create";
    let asked_a = a_stream
        .collect_until(is_create)
        .pop()
        .expect("A is asked")
        .message;
    let asked_b = b.until(is_create).expect("B is asked");
    assert_eq!(asked_a["id"], asked_b["id"]);
    assert_eq!(asked_b["params"]["message"], scenarios::ELICIT_FORM_MESSAGE);
    b.send(&json!({ "jsonrpc": "2.0", "id": asked_b["id"],
        "result": { "action": "accept", "content": { "name": "remote", "workers": 1 } } }));
    let told = a_stream
        .collect_until(|m| m["method"] == "$/cancel_request")
        .pop()
        .expect("A is told")
        .message;
    assert_eq!(told["params"]["requestId"], asked_a["id"]);
    for sent in [&asked_b, &told] {
        spindle_protocol::schema_check::validate_outgoing(
            1,
            Direction::AgentToClient,
            &sent.to_string(),
        )
        .unwrap_or_else(|e| panic!("{sent}: {e:?}"));
    }
    let late = json!({ "jsonrpc": "2.0", "id": asked_a["id"], "result": { "action": "decline" } });
    assert_eq!(a.post(&late, None).status, 202);
    let rest: Vec<Value> = a_stream
        .collect_until(|m| m["id"] == json!(turn) && m.get("method").is_none())
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert_eq!(rest.last().unwrap()["result"]["stopReason"], "end_turn");
    assert_eq!(
        agent_text(&rest),
        r#"You accepted: name="remote", workers=1."#
    );
}
