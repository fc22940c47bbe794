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
use crate::serve_support::{Served, temp_dir};

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

fn check_wire_log(db: &std::path::Path, session: i64) -> usize {
    let conn = rusqlite::Connection::open(db).expect("open the database");
    let mut statement = conn
        .prepare("select direction, line from wire_log where session_id = ?1 order by seq")
        .expect("query");
    let rows: Vec<(String, String)> = statement
        .query_map([session], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect();
    let mut conversation = SchemaConversation::new();
    let mut checked = 0;
    for (direction, line) in rows {
        let direction = match direction.as_str() {
            "agent" => Direction::AgentToClient,
            "client" => Direction::ClientToAgent,
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
