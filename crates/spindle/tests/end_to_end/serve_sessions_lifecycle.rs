//! The session lifecycle of schema 1.20.0 through the page's API (issue #26, item 3), against a
//! small agent of this test's own (`serve_sessions_agent.py`, sessions in a state file, every
//! received line logged): fork (a new session on the agent's fork, listed with its parent),
//! delete with the agent's copy (and its failure keeping Spindle's), `session/close` when
//! Spindle stops a session's agent, sign-out and sign-in again, additional directories (checked,
//! sent, stored, and the client file system's scope). Everything Spindle stored is read through its
//! API, so the PostgreSQL pass (`SPINDLE_TEST_DB=postgres`) checks the same.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};

use crate::harness::TempDir;
use crate::serve_support::{PATIENCE, Served, entry_texts, start_serve, temp_dir, wait_transcript};

const AGENT: &str = include_str!("serve_sessions_agent.py");

/// `spindle serve` (protocol 1, `--fs allow`) in `work`, running the test agent in `mode`.
fn serve(dir: &TempDir, work: &Path, mode: &str) -> Served {
    let script = dir.join("agent.py");
    std::fs::write(&script, AGENT).unwrap();
    let log = dir.join("agent.log");
    let state = dir.join("agent-state.json");
    let agent = vec!["python3".into(), script.into_os_string(), mode.into()];
    start_serve(
        &dir.join("db.sqlite"),
        &[
            "--protocol",
            "1",
            "--fs",
            "allow",
            "--cwd",
            work.to_str().unwrap(),
        ],
        &agent,
        None,
        &[
            ("SESSIONS_AGENT_LOG", log.to_str().unwrap()),
            ("SESSIONS_AGENT_STATE", state.to_str().unwrap()),
        ],
    )
}

/// The requests the agent received with `method`, in order (their params).
fn received(dir: &TempDir, method: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == method)
        .map(|m| m["params"].clone())
        .collect()
}

/// Waits until the agent received `n` requests `method`.
fn wait_received(dir: &TempDir, method: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let got = received(dir, method);
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "the agent never got {n} {method}"
        );
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
}

/// Every line Spindle wrote to the agent (requests, notifications and answers) is valid under
/// the v1 schema (1.20.0, unstable methods included); `methods` must be among them.
fn assert_schema_valid(dir: &TempDir, methods: &[&str]) {
    let text = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    for line in text.lines() {
        spindle_protocol::schema_check::validate_outgoing(
            1,
            spindle_protocol::schema_check::Direction::ClientToAgent,
            line,
        )
        .unwrap_or_else(|e| panic!("{line}: {e:?}"));
    }
    for method in methods {
        assert!(!received(dir, method).is_empty(), "no {method} sent");
    }
    // The schema knows these methods: a fork without its `cwd` is refused.
    let bad = r#"{"jsonrpc":"2.0","id":1,"method":"session/fork","params":{"sessionId":"s"}}"#;
    assert!(
        spindle_protocol::schema_check::validate_outgoing(
            1,
            spindle_protocol::schema_check::Direction::ClientToAgent,
            bad,
        )
        .is_err()
    );
}

fn row(served: &Served, session: i64) -> Value {
    served.get_json("/api/sessions")["sessions"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["id"] == session).cloned())
        .unwrap_or(Value::Null)
}

fn work_dir(dir: &TempDir) -> PathBuf {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    work
}

fn ready(served: &Served, session: i64) -> Value {
    served.wait_agent_info(session, "ready", |i| i["status"] == "ready")
}

#[test]
fn serve_sessions_fork_opens_the_agents_fork_as_a_session_listed_with_its_parent() {
    let dir = temp_dir("lifecycle-fork");
    let work = work_dir(&dir);
    let served = serve(&dir, &work, "full");
    let parent = served.create_session();
    served.prompt(parent, "hello fork");
    served.reply_with(parent, "echo: hello fork");
    let facts = ready(&served, parent);
    assert_eq!(
        (
            &facts["canFork"],
            &facts["canDelete"],
            &facts["canClose"],
            &facts["canLogout"]
        ),
        (&json!(true), &json!(true), &json!(true), &json!(true)),
        "{facts}"
    );
    // Cross-site calls are refused like every other write: nothing reaches the agent.
    for (method, tail) in [
        ("POST", "/fork"),
        ("POST", "/logout"),
        ("DELETE", "?agent=true"),
    ] {
        let foreign = crate::serve_support::http(
            served.addr,
            method,
            &format!("/api/sessions/{parent}{tail}"),
            &[
                ("Host", &served.host()),
                ("Origin", "http://attacker.example"),
                ("Content-Type", "application/json"),
            ],
            (method == "POST").then_some("{}"),
        );
        assert_eq!(foreign.status, 403, "{method} {tail}");
    }
    for method in ["session/fork", "logout", "session/delete"] {
        assert!(received(&dir, method).is_empty(), "{method}");
    }
    assert_eq!(row(&served, parent)["id"], json!(parent));

    let (status, forked) = served.post_value(&format!("/api/sessions/{parent}/fork"), &json!({}));
    assert_eq!(status, 201, "{forked}");
    let child = forked["id"].as_i64().unwrap();
    assert_eq!(
        forked["parent"],
        json!({"id": parent, "title": "hello fork"})
    );
    assert_eq!(forked["title"], "hello fork");
    let asked = wait_received(&dir, "session/fork", 1);
    assert_eq!(asked[0]["sessionId"], "s1", "{asked:?}");
    assert_eq!(asked[0]["cwd"], work.to_str().unwrap());
    // The fork's history (loaded by its own agent process) is its transcript.
    wait_transcript(&served, child, "the fork's history", |t| {
        entry_texts(t, "agent_message").contains(&"echo: hello fork".to_string())
    });
    served.prompt(child, "only in the fork");
    served.reply_with(child, "echo: only in the fork");
    assert_eq!(row(&served, child)["agentSessionId"], "f2");
    served.stop();

    // After a restart the fork is still listed with its parent; a fork needs a running agent.
    let served = serve(&dir, &work, "full");
    assert_eq!(row(&served, child)["parent"]["id"], json!(parent));
    let (status, refused) = served.post_value(&format!("/api/sessions/{parent}/fork"), &json!({}));
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("not running"),
        "{refused}"
    );
    // Deleting the parent keeps the fork, which names a parent that is gone.
    assert_eq!(
        served
            .request("DELETE", &format!("/api/sessions/{parent}"), None)
            .status,
        200
    );
    assert_eq!(
        row(&served, child)["parent"],
        json!({"id": parent, "title": null})
    );
    served.stop();
    assert_schema_valid(&dir, &["session/fork", "session/load", "session/close"]);

    // An agent that does not fork: a clear conflict, and no new session.
    let bare = temp_dir("lifecycle-fork-bare");
    let served = serve(&bare, &work_dir(&bare), "bare");
    let session = served.create_session();
    let facts = ready(&served, session);
    assert_eq!(facts["canFork"], false, "{facts}");
    let (status, refused) = served.post_value(&format!("/api/sessions/{session}/fork"), &json!({}));
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("does not offer forking"),
        "{refused}"
    );
    assert_eq!(
        served.get_json("/api/sessions")["sessions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    served.stop();
}

#[test]
fn serve_sessions_delete_the_agents_copy_first_and_close_what_spindle_stops() {
    let dir = temp_dir("lifecycle-delete");
    let work = work_dir(&dir);
    let served = serve(&dir, &work, "full");
    let doomed = served.create_session();
    let kept = served.create_session();
    let closed_on_delete = served.create_session();
    for session in [doomed, kept, closed_on_delete] {
        served.prompt(session, "hi");
        served.reply_with(session, "echo: hi");
    }
    let agent_session = |s: i64| {
        row(&served, s)["agentSessionId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let doomed_agent = agent_session(doomed);
    let response = served.request(
        "DELETE",
        &format!("/api/sessions/{doomed}?agent=maybe"),
        None,
    );
    assert_eq!(response.status, 400, "{}", response.body);
    let response = served.request(
        "DELETE",
        &format!("/api/sessions/{doomed}?agent=true"),
        None,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(
        received(&dir, "session/delete"),
        vec![json!({"sessionId": doomed_agent})]
    );
    assert_eq!(row(&served, doomed), Value::Null);
    // Deleted on the agent's side: not closed afterwards.
    assert!(
        !received(&dir, "session/close")
            .iter()
            .any(|c| c["sessionId"] == doomed_agent.as_str())
    );
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("agent-state.json")).unwrap())
            .unwrap();
    assert!(state["sessions"].get(&doomed_agent).is_none(), "{state}");
    // A delete of Spindle's copy only: the agent is asked to close the session, not delete it.
    let closed_agent = agent_session(closed_on_delete);
    let response = served.request("DELETE", &format!("/api/sessions/{closed_on_delete}"), None);
    assert_eq!(response.status, 200, "{}", response.body);
    let closes = wait_received(&dir, "session/close", 1);
    assert_eq!(closes, vec![json!({"sessionId": closed_agent})]);
    assert_eq!(received(&dir, "session/delete").len(), 1);
    // The server's shutdown closes the sessions still running.
    let kept_agent = agent_session(kept);
    served.stop();
    let closes = received(&dir, "session/close");
    assert!(
        closes.contains(&json!({"sessionId": kept_agent})),
        "{closes:?}"
    );
    assert_schema_valid(&dir, &["session/delete", "session/close"]);

    // An agent that cannot delete: its refusal is the answer and Spindle's copy stays.
    let stuck = temp_dir("lifecycle-delete-stuck");
    let served = serve(&stuck, &work_dir(&stuck), "stuck-delete");
    let session = served.create_session();
    ready(&served, session);
    let response = served.request(
        "DELETE",
        &format!("/api/sessions/{session}?agent=true"),
        None,
    );
    assert_eq!(response.status, 502, "{}", response.body);
    assert!(response.body.contains("read-only"), "{}", response.body);
    assert!(response.body.contains("kept"), "{}", response.body);
    assert_eq!(row(&served, session)["id"], json!(session));
    served.stop();
}

#[test]
fn serve_sessions_sign_out_then_sign_in_again() {
    let dir = temp_dir("lifecycle-logout");
    let work = work_dir(&dir);
    let served = serve(&dir, &work, "full");
    let session = served.create_session();
    served.prompt(session, "before");
    served.reply_with(session, "echo: before");
    let response = served.request(
        "POST",
        &format!("/api/sessions/{session}/logout"),
        Some("{}"),
    );
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(received(&dir, "logout"), vec![json!({})]);
    let facts = served.wait_agent_info(session, "needs sign-in", |i| i["needsAuth"] == true);
    assert_eq!(facts["status"], "needs_auth", "{facts}");
    let refused = served.post_json(
        &format!("/api/sessions/{session}/prompt"),
        r#"{"text":"x"}"#,
    );
    assert_eq!(refused.status, 409, "{}", refused.body);
    let (status, signed_in) = served.post_value(
        &format!("/api/sessions/{session}/authenticate"),
        &json!({"methodId": "token"}),
    );
    assert_eq!(status, 200, "{signed_in}");
    ready(&served, session);
    served.prompt(session, "after");
    served.reply_with(session, "echo: after");
    served.stop();
    assert_schema_valid(&dir, &["logout", "authenticate", "session/resume"]);

    let bare = temp_dir("lifecycle-logout-bare");
    let served = serve(&bare, &work_dir(&bare), "bare");
    let session = served.create_session();
    assert_eq!(ready(&served, session)["canLogout"], false);
    let response = served.request(
        "POST",
        &format!("/api/sessions/{session}/logout"),
        Some("{}"),
    );
    assert_eq!(response.status, 409, "{}", response.body);
    assert!(
        response.body.contains("does not offer signing out"),
        "{}",
        response.body
    );
    served.stop();
}

#[test]
fn serve_sessions_additional_directories_reach_the_agent_and_the_file_scope() {
    let dir = temp_dir("lifecycle-dirs");
    let work = work_dir(&dir);
    let extra = dir.join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    let extra = extra.canonicalize().unwrap();
    std::fs::write(extra.join("notes.txt"), "from the extra directory").unwrap();
    let served = serve(&dir, &work, "full");
    for bad in [
        json!(["extra"]),
        json!(["/no/such/spindle-dir"]),
        json!("/tmp"),
    ] {
        let (status, refused) =
            served.post_value("/api/sessions", &json!({"additionalDirectories": bad}));
        assert_eq!(status, 400, "{bad}: {refused}");
    }
    assert_eq!(served.get_json("/api/sessions")["sessions"], json!([]));
    let extra_text = extra.to_str().unwrap();
    let with = served.create_session_with(&json!({"additionalDirectories": [extra_text]}));
    let without = served.create_session();
    // The two agents start side by side: their requests come in either order.
    let news = wait_received(&dir, "session/new", 2);
    let sent: Vec<Option<&Value>> = news
        .iter()
        .map(|n| n.get("additionalDirectories"))
        .collect();
    assert!(sent.contains(&Some(&json!([extra_text]))), "{news:?}");
    assert!(sent.contains(&None), "{news:?}");
    assert_eq!(
        row(&served, with)["additionalDirectories"],
        json!([extra_text])
    );
    assert_eq!(
        ready(&served, with)["additionalDirectories"],
        json!([extra_text])
    );
    // The client file system's scope follows them: a file there is read for the session that
    // has the directory, refused for the one that does not.
    let file = extra.join("notes.txt");
    let read = format!("read {}", file.display());
    served.prompt(with, &read);
    served.reply_with(with, "read: from the extra directory");
    served.prompt(without, &read);
    let refused = served.reply_with(without, "read failed");
    assert!(!refused.contains("from the extra directory"), "{refused}");
    served.stop();

    // After a restart the session continues with the same directories and scope.
    let served = serve(&dir, &work, "full");
    served.prompt(with, &read);
    let replies = served.wait_finished_turns(with, 2);
    assert!(
        replies[1]["text"]
            .as_str()
            .is_some_and(|t| t.contains("read: from the extra directory")),
        "{replies:?}"
    );
    let resumed = received(&dir, "session/resume");
    assert_eq!(
        resumed[0]["additionalDirectories"],
        json!([extra_text]),
        "{resumed:?}"
    );
    served.stop();
    assert_schema_valid(&dir, &["session/new", "session/resume"]);
}
