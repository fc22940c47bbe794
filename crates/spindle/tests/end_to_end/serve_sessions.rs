//! Sessions in the page's lists (issue #26): the agent's latest title (`session_info_update`)
//! names a session in `GET /api/sessions` and in the agent's history, a prompt's text names only
//! an untitled session, and a user's rename wins over the agent's title, across restarts.

use std::time::Instant;

use serde_json::{Value, json};

use crate::harness::TempDir;
use crate::serve_support::{PATIENCE, Served, reference_agent_v1_with, serve_in, temp_dir};

/// The session's row of `GET /api/sessions` once `check` accepts it.
fn wait_row(served: &Served, session: i64, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let list = served.get_json("/api/sessions");
        let row = list["sessions"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["id"] == session).cloned())
            .unwrap_or(Value::Null);
        if check(&row) {
            return row;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {list:#}"
        );
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
}

#[test]
fn serve_sessions_take_the_agents_title_and_a_rename_wins_over_it() {
    let dir: TempDir = temp_dir("sessions-titles");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let state = dir.join("agent-sessions");
    let agent = reference_agent_v1_with(&["--state-dir", state.to_str().unwrap()]);
    let served = serve_in(&dir, &work, &[], &agent);
    let session = served.create_session();
    let other = served.create_session();
    served.prompt(session, "hello there");
    served.wait_finished_turns(session, 1);
    let row = wait_row(&served, session, "the prompt's title", |r| {
        r["title"] == "hello there"
    });
    assert_eq!(row["titleSource"], "prompt", "{row}");
    // `/scenario background` ends with `session_info_update {title: "Indexed repository"}`.
    served.prompt(session, "/scenario background");
    let row = wait_row(&served, session, "the agent's title", |r| {
        r["title"] == "Indexed repository"
    });
    assert_eq!(row["titleSource"], "agent", "{row}");
    // The agent's title comes before the first prompt too: the prompt then names nothing.
    served.prompt(other, "/scenario background");
    wait_row(&served, other, "the agent's title", |r| {
        r["title"] == "Indexed repository"
    });
    served.prompt(other, "a later prompt");
    served.wait_finished_turns(other, 2);
    let row = wait_row(&served, other, "the title kept", |_| true);
    assert_eq!(row["title"], "Indexed repository", "{row}");
    // The agent's history names the session as Spindle does.
    let agent_session = row["agentSessionId"].as_str().unwrap().to_string();
    served.stop();

    // After a restart, the first prompt does not rename a titled session.
    let served = serve_in(&dir, &work, &[], &agent);
    served.prompt(other, "after the restart");
    served.wait_finished_turns(other, 3);
    let row = wait_row(&served, other, "the title kept", |_| true);
    assert_eq!(row["title"], "Indexed repository", "{row}");
    // A rename wins: the agent's title, written again after the restart, does not replace it.
    let response = served.request(
        "PATCH",
        &format!("/api/sessions/{session}"),
        Some(r#"{"title":"Mine"}"#),
    );
    assert_eq!(response.status, 200, "{}", response.body);
    served.prompt(session, "/scenario background");
    served.wait_finished_turns(session, 3);
    let row = wait_row(&served, session, "the rename", |r| r["title"] == "Mine");
    assert_eq!(row["titleSource"], "user", "{row}");
    served.stop();

    let served = serve_in(&dir, &work, &[], &agent);
    served.prompt(session, "/scenario background");
    served.wait_finished_turns(session, 4);
    let row = wait_row(&served, session, "the rename", |_| true);
    assert_eq!(row["title"], "Mine", "{row}");
    let history = served.get_json("/api/agent-sessions");
    assert_eq!(history["supported"], true, "{history}");
    let listed = |id: &str| {
        history["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == id)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let renamed_id = row["agentSessionId"].as_str().unwrap();
    assert_eq!(listed(renamed_id)["title"], "Mine", "{history}");
    assert_eq!(listed(renamed_id)["spindleSessionId"], json!(session));
    assert_eq!(listed(&agent_session)["spindleSessionId"], json!(other));
    served.stop();
}
