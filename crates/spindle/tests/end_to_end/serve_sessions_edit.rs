//! Renaming and deleting sessions through the page's API (issue #25): `PATCH /api/sessions/{id}`
//! and `DELETE /api/sessions/{id}`, their refusals, a delete stopping the session's agent, both
//! kept across a restart; and on replicas sharing PostgreSQL, a rename or delete made on one is
//! known to the other (its list, its observers, the agent it runs).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::serve_support::{
    PATIENCE, Served, cmdline, descendants, process_gone, reference_agent, start_serve, temp_dir,
};

/// The reference agents running under `served`.
fn agents(served: &Served) -> Vec<u32> {
    descendants(served.child.id())
        .into_iter()
        .filter(|p| cmdline(*p).is_some_and(|c| c.contains(" agent ")))
        .collect()
}

/// Waits until `served` runs an agent not in `known`; its pid.
fn new_agent(served: &Served, known: &[u32]) -> u32 {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(pid) = agents(served).into_iter().find(|p| !known.contains(p)) {
            return pid;
        }
        assert!(Instant::now() < deadline, "no new agent process");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The (id, title) pairs `GET /api/sessions` lists.
fn listed(served: &Served) -> Vec<(i64, String)> {
    served.get_json("/api/sessions")["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_i64().unwrap(),
                s["title"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn rename(served: &Served, session: i64, body: &str) -> (u16, String) {
    let response = served.request("PATCH", &format!("/api/sessions/{session}"), Some(body));
    (response.status, response.body)
}

fn delete(served: &Served, session: i64) -> (u16, String) {
    let response = served.request("DELETE", &format!("/api/sessions/{session}"), None);
    (response.status, response.body)
}

#[test]
fn a_session_is_renamed_and_deleted_with_its_agent_and_both_outlast_a_restart() {
    let dir = temp_dir("edit-sessions");
    let db = dir.join("db.sqlite");
    let served = Served::start(&db, &["--protocol", "1"], 0);
    let doomed = served.create_session();
    let doomed_agent = new_agent(&served, &[]);
    let kept = served.create_session();
    let kept_agent = new_agent(&served, &[doomed_agent]);
    served.prompt(doomed, "hello there");
    served.wait_finished_turns(doomed, 1);

    // Renamed, trimmed; the first prompt after it does not title the session again.
    assert_eq!(
        rename(&served, kept, r#"{"title": "  The parser refactor  "}"#).0,
        200
    );
    served.prompt(kept, "first words of the session");
    served.wait_finished_turns(kept, 1);
    assert!(listed(&served).contains(&(kept, "The parser refactor".to_string())));

    // Refusals: a clear status and message, nothing changed.
    for (body, status) in [
        (r#"{"title": "   "}"#, 400),
        (r#"{"name": "x"}"#, 422),
        ("not json", 400),
    ] {
        let (got, text) = rename(&served, kept, body);
        assert_eq!(got, status, "{body}: {text}");
        assert!(serde_json::from_str::<Value>(&text).unwrap()["error"].is_string());
    }
    let long = format!(r#"{{"title": "{}"}}"#, "x".repeat(201));
    assert_eq!(rename(&served, kept, &long).0, 400);
    assert_eq!(rename(&served, 9999, r#"{"title": "x"}"#).0, 404);
    assert_eq!(delete(&served, 9999).0, 404);
    assert_eq!(
        served.request("DELETE", "/api/sessions/abc", None).status,
        400
    );

    // A page watching the deleted session hears that the list changed, then its stream ends.
    let mut watcher = served.sse(doomed, None);
    let (status, body) = delete(&served, doomed);
    assert_eq!(status, 200, "{body}");
    assert!(watcher.wait_op(|op| op["op"] == "web_session").is_some());
    while watcher.next_event().is_some() {}
    wait_until("the deleted session's agent to stop", || {
        process_gone(doomed_agent)
    });
    assert!(
        !process_gone(kept_agent),
        "the other session's agent runs on"
    );
    assert_eq!(
        listed(&served),
        vec![(kept, "The parser refactor".to_string())]
    );
    for tail in ["transcript", "snapshot", "agent", "entries"] {
        let path = format!("/api/sessions/{doomed}/{tail}");
        assert_eq!(served.request("GET", &path, None).status, 404, "{path}");
    }
    assert_eq!(delete(&served, doomed).0, 404, "deleted once");
    assert_eq!(rename(&served, doomed, r#"{"title": "x"}"#).0, 404);
    served.stop();

    let served = Served::start(&db, &["--protocol", "1"], 0);
    assert_eq!(
        listed(&served),
        vec![(kept, "The parser refactor".to_string())]
    );
    let next = served.create_session();
    assert!(next > doomed, "ids are not given out twice: {next}");
    served.stop();
}

/// A fresh database on the test PostgreSQL server; `None` when PostgreSQL is missing outside CI.
fn database(name: &str) -> Option<String> {
    let server = if std::env::var_os("CI").is_some() {
        spindle_store::test_server::required_server()
    } else {
        spindle_store::test_server::server()?
    };
    Some(server.url(&server.create_database(name)))
}

fn replica(url: &str, id: &str) -> Served {
    start_serve(
        Path::new(url),
        &["--replica-id", id, "--lease-ttl", "4", "--protocol", "1"],
        &reference_agent(0),
        None,
        &[],
    )
}

#[test]
fn a_rename_or_delete_on_one_replica_is_known_to_the_other() {
    let Some(url) = database("edit_replicas") else {
        return;
    };
    let a = replica(&url, "a");
    let b = replica(&url, "b");
    let session = a.create_session();
    let agent = new_agent(&a, &[]);
    a.prompt(session, "hello");
    a.wait_finished_turns(session, 1);
    wait_until("b to list the session", || {
        listed(&b).iter().any(|(id, _)| *id == session)
    });

    // A page on A watching the session hears of B's rename.
    let mut watcher = a.sse(session, None);
    assert_eq!(rename(&b, session, r#"{"title": "Named on b"}"#).0, 200);
    assert!(listed(&a).contains(&(session, "Named on b".to_string())));
    assert!(watcher.wait_op(|op| op["op"] == "web_session").is_some());

    // Deleted on B while A runs its agent: A stops it and serves the session no more.
    assert_eq!(delete(&b, session).0, 200);
    wait_until("a to stop the agent of the deleted session", || {
        process_gone(agent)
    });
    while watcher.next_event().is_some() {}
    wait_until("a to refuse the deleted session", || {
        a.request("GET", &format!("/api/sessions/{session}/transcript"), None)
            .status
            == 404
    });
    assert!(listed(&a).is_empty());
    assert!(listed(&b).is_empty());
    assert_eq!(delete(&a, session).0, 404);
}
