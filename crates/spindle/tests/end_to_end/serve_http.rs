//! `spindle serve` end to end over real HTTP: access checks, SSE resume, multiple observers,
//! restart with the same database.

use crate::serve_support;

use serve_support::{Served, TextView, http, serve_from, temp_dir};

const SLOW_REPLY: &str = "Slow streaming: every word arrives after a pause, so you can watch the reply grow and cancel it halfway through if you like.";

#[test]
fn host_origin_content_type_and_paths_are_checked_on_every_route() {
    let dir = temp_dir("access");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let host = served.host();
    let ok = http(served.addr, "GET", "/", &[("Host", &host)], None);
    assert_eq!(ok.status, 200);
    let csp = ok.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"));
    assert_eq!(ok.header("x-content-type-options"), Some("nosniff"));
    assert!(ok.body.contains("<script src=\"/app.js\""));

    // DNS rebinding: a foreign Host name, on pages and API alike.
    for path in ["/", "/app.js", "/api/sessions", "/nope"] {
        let rebound = http(
            served.addr,
            "GET",
            path,
            &[("Host", "attacker.example:80")],
            None,
        );
        assert_eq!(rebound.status, 421, "{path}");
    }
    // A cross-origin page.
    let cross = http(
        served.addr,
        "POST",
        "/api/sessions",
        &[
            ("Host", &host),
            ("Origin", "http://attacker.example"),
            ("Content-Type", "application/json"),
        ],
        Some("{}"),
    );
    assert_eq!(cross.status, 403);
    // A form post (no preflight) cannot be JSON.
    let form = http(
        served.addr,
        "POST",
        "/api/sessions",
        &[
            ("Host", &host),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some("a=b"),
    );
    assert_eq!(form.status, 415);
    // Fixed route table: no file system behind any path.
    for path in [
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/assets/app.js",
        "/app.js/../../Cargo.toml",
    ] {
        let response = http(served.addr, "GET", path, &[("Host", &host)], None);
        assert_eq!(response.status, 404, "{path}");
        assert!(!response.body.contains("root:"), "{path}");
    }
    // Bad input is a clear 4xx, never a crash.
    let session = served.create_session();
    let bad = served.post_json(&format!("/api/sessions/{session}/prompt"), "{not json");
    assert_eq!(bad.status, 400);
    let empty = served.post_json(
        &format!("/api/sessions/{session}/prompt"),
        "{\"text\":\"  \"}",
    );
    assert_eq!(empty.status, 400);
    let missing = served.post_json("/api/sessions/999/prompt", "{\"text\":\"x\"}");
    assert_eq!(missing.status, 404);
    let permission = served.post_json(
        &format!("/api/sessions/{session}/permission"),
        "{\"key\":\"42\",\"optionId\":\"allow\"}",
    );
    assert_eq!(permission.status, 409, "{}", permission.body);
    served.stop();
}

#[test]
fn a_token_is_required_when_configured_and_trades_for_a_cookie() {
    let dir = temp_dir("token");
    let served = Served::start(&dir.join("db.sqlite"), &["--token", "s3cret-token"], 0);
    assert!(
        served.url.ends_with("/?token=s3cret-token"),
        "{}",
        served.url
    );
    let host = served.host();
    let denied = http(
        served.addr,
        "GET",
        "/api/sessions",
        &[("Host", &host)],
        None,
    );
    assert_eq!(denied.status, 401);
    let wrong = http(
        served.addr,
        "GET",
        "/api/sessions",
        &[("Host", &host), ("Authorization", "Bearer s3cret-tokeN")],
        None,
    );
    assert_eq!(wrong.status, 401);
    let bearer = http(
        served.addr,
        "GET",
        "/api/sessions",
        &[("Host", &host), ("Authorization", "Bearer s3cret-token")],
        None,
    );
    assert_eq!(bearer.status, 200);
    let bootstrap = http(
        served.addr,
        "GET",
        "/?token=s3cret-token",
        &[("Host", &host)],
        None,
    );
    assert_eq!(bootstrap.status, 303);
    let cookie = bootstrap.header("set-cookie").unwrap();
    assert!(cookie.contains("spindle_token=s3cret-token") && cookie.contains("HttpOnly"));
    assert!(cookie.contains("SameSite=Strict"));
    let with_cookie = http(
        served.addr,
        "GET",
        "/api/sessions",
        &[("Host", &host), ("Cookie", "spindle_token=s3cret-token")],
        None,
    );
    assert_eq!(with_cookie.status, 200);
    served.stop();
}

#[test]
fn a_non_loopback_bind_without_a_token_refuses_to_start() {
    let dir = temp_dir("open-bind");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_spindle"))
        .args(["serve", "--bind", "0.0.0.0:0", "--db"])
        .arg(dir.join("db.sqlite"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--token"), "{stderr}");
    // Refused before anything was created.
    assert!(!dir.join("db.sqlite").exists());
    // The token may come from the environment instead of the command line.
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_spindle"));
    command
        .args(["serve", "--bind", "0.0.0.0:0", "--db"])
        .arg(dir.join("db.sqlite"))
        .env("SPINDLE_TOKEN", "from-the-environment");
    let served = serve_from(command);
    assert!(
        served.url.contains("?token=from-the-environment"),
        "{}",
        served.url
    );
    served.sigkill();
}

#[test]
fn an_unusable_database_is_a_clear_error_at_start() {
    let dir = temp_dir("bad-db");
    std::fs::write(dir.join("garbage.db"), vec![0x42u8; 8192]).unwrap();
    for db in [dir.join("garbage.db"), dir.join("missing-dir/x.db")] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_spindle"))
            .args(["serve", "--bind", "127.0.0.1:0", "--db"])
            .arg(&db)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", db.display());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("cannot open the database") && stderr.contains(&*db.to_string_lossy()),
            "{stderr}"
        );
    }
    // The garbage file was not modified.
    assert_eq!(
        std::fs::read(dir.join("garbage.db")).unwrap(),
        vec![0x42u8; 8192]
    );
}

#[test]
fn an_unreachable_postgres_is_a_clear_error_at_start_without_the_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("postgres://alice:s3cret@127.0.0.1:{port}/spindle?connect_timeout=2");
    // From --db, and from SPINDLE_DB (which keeps the password out of the process list).
    for from_env in [false, true] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_spindle"));
        command.args(["serve", "--bind", "127.0.0.1:0"]);
        if from_env {
            command.env("SPINDLE_DB", &url);
        } else {
            command.args(["--db", &url]);
        }
        let output = command.args(["--", "true"]).output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("cannot open the database")
                && stderr.contains(&format!("postgres://alice@127.0.0.1:{port}/spindle")),
            "{stderr}"
        );
        assert!(!stderr.contains("s3cret"), "{stderr}");
    }
}

/// Reads events until the view shows the slow reply complete and the turn idle.
fn read_until_reply_complete(reader: &mut serve_support::SseReader, view: &mut TextView) -> String {
    loop {
        let event = reader.next_event().expect("stream ended early");
        view.apply_event(&event);
        let done = view
            .texts_of("agent_message")
            .iter()
            .any(|t| t == SLOW_REPLY)
            && view.state["status"] == "idle";
        if done {
            return event.id;
        }
    }
}

#[test]
fn sse_resume_with_last_event_id_loses_nothing_and_repeats_nothing() {
    let dir = temp_dir("resume");
    let served = Served::start(&dir.join("db.sqlite"), &[], 5);
    let session = served.create_session();
    // An observer that stays connected the whole time: the reference.
    let mut steady = served.sse(session, None);
    let mut steady_view = TextView::default();
    served.prompt(session, "/scenario slow");

    // A second observer reads a few batches, then drops its connection.
    let mut first = served.sse(session, None);
    let mut resumed_view = TextView::default();
    let mut last_id = String::new();
    let mut appends_seen = 0;
    while appends_seen < 3 {
        let event = first.next_event().unwrap();
        resumed_view.apply_event(&event);
        appends_seen += event
            .ops()
            .iter()
            .filter(|op| op["op"] == "append_text")
            .count();
        last_id = event.id.clone();
    }
    drop(first);
    // It reconnects with the last id it saw: the batches it missed come first, from the ring,
    // without a reset and without any batch it already had.
    let mut second = served.sse(session, Some(&last_id));
    let (generation, counter) = last_id.split_once('-').unwrap();
    let mut expected = counter.parse::<u64>().unwrap() + 1;
    loop {
        let event = second.next_event().unwrap();
        assert_eq!(event.event, "ops", "resume must not reset");
        // A fast stream's batches may share one frame (`batches` lists their counters, the
        // frame's id is the last one's): every counter still comes exactly once, in order.
        let counters: Vec<u64> = match event.data["batches"].as_array() {
            Some(marks) => marks.iter().map(|m| m[0].as_u64().unwrap()).collect(),
            None => vec![expected],
        };
        for counter in &counters {
            assert_eq!(*counter, expected, "contiguous batch counters");
            expected += 1;
        }
        assert_eq!(
            event.id,
            format!("{generation}-{}", expected - 1),
            "a frame's id is its last batch's"
        );
        resumed_view.apply_event(&event);
        if resumed_view
            .texts_of("agent_message")
            .iter()
            .any(|t| t == SLOW_REPLY)
            && resumed_view.state["status"] == "idle"
        {
            break;
        }
    }
    read_until_reply_complete(&mut steady, &mut steady_view);
    assert_eq!(
        resumed_view.texts_of("agent_message"),
        steady_view.texts_of("agent_message")
    );
    assert_eq!(
        resumed_view.texts_of("user_message"),
        vec!["/scenario slow".to_string()]
    );

    // An id from another server run, or from the future, gets a reset snapshot instead.
    for stale in ["0-3", "999999-1", "garbage"] {
        let mut reader = served.sse(session, Some(stale));
        let event = reader.next_event().unwrap();
        assert_eq!(event.event, "reset", "{stale}");
        let mut view = TextView::default();
        view.apply_event(&event);
        assert_eq!(
            view.texts_of("agent_message"),
            steady_view.texts_of("agent_message")
        );
    }
    let stats = served.get_json(&format!("/api/sessions/{session}/stats"));
    assert!(stats["resumed"].as_u64().unwrap() >= 1, "{stats}");
    served.stop();
}

#[test]
fn every_observer_sees_prompts_from_the_others_and_a_stalled_one_blocks_nobody() {
    let dir = temp_dir("observers");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let session = served.create_session();
    // A stalled observer: connected, never read.
    let _stalled = served.sse(session, None);
    let mut watcher = served.sse(session, None);
    let mut view = TextView::default();
    // A long burst: far more batches than one observer may queue.
    served.prompt(session, "/stream 4000 chunks");
    served.wait_finished_turns(session, 1);
    served.prompt(session, "hello from another tab");
    served.wait_finished_turns(session, 2);
    // The watcher was not read during the burst either, so it may have been dropped as a slow
    // observer like the stalled one: then it comes back as an EventSource does, with the last
    // id it saw, and catches up from the ring or a reset.
    let mut last_id: Option<String> = None;
    let mut reconnects = 0;
    loop {
        let Some(event) = watcher.next_event() else {
            reconnects += 1;
            assert!(reconnects < 100, "the watcher keeps losing its stream");
            watcher = served.sse(session, last_id.as_deref());
            continue;
        };
        last_id = Some(event.id.clone());
        view.apply_event(&event);
        let users = view.texts_of("user_message");
        if users.len() == 2 && view.state["status"] == "idle" {
            assert_eq!(users[1], "hello from another tab");
            break;
        }
    }
    served.stop();
}

#[test]
fn a_restart_brings_back_every_session_and_transcript_and_the_session_continues() {
    let dir = temp_dir("restart");
    let db = dir.join("db.sqlite");
    let served = Served::start(&db, &[], 0);
    let first = served.create_session();
    // The agent's greeting comes before any prompt: on protocol 2 it is no turn.
    served.prompt(first, "/scenario thoughts");
    served.wait_finished_turns(first, 1);
    let second = served.create_session();
    served.prompt(second, "/scenario refine");
    let before_replies = served.wait_finished_turns(second, 1);
    let transcripts: Vec<serde_json::Value> = [first, second]
        .iter()
        .map(|id| served.get_json(&format!("/api/sessions/{id}/transcript")))
        .collect();
    served.stop();

    let served = Served::start(&db, &[], 0);
    let sessions = served.get_json("/api/sessions");
    let ids: Vec<i64> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![first, second]);
    for (id, before) in [first, second].iter().zip(&transcripts) {
        let after = served.get_json(&format!("/api/sessions/{id}/transcript"));
        assert_eq!(after["entries"], before["entries"], "session {id}");
        assert_eq!(after["turns"], before["turns"], "session {id}");
    }
    let replies = served.get_json(&format!("/api/sessions/{second}/replies"));
    assert_eq!(
        replies["replies"].as_array().unwrap().len(),
        before_replies.len()
    );
    // A new observer gets the rebuilt transcript as a reset snapshot.
    let mut reader = served.sse(first, None);
    let event = reader.next_event().unwrap();
    assert_eq!(event.event, "reset");
    let mut view = TextView::default();
    view.apply_event(&event);
    assert!(
        view.texts_of("agent_message")
            .iter()
            .any(|t| t.starts_with("Here is the answer."))
    );
    assert!(!view.texts_of("agent_thought").is_empty());
    // The session goes on with a fresh agent (the old process is gone).
    served.prompt(first, "still there?");
    served.wait_reply_containing(first, "still there?");
    // The reference agent offers session/resume, but its new process does not know the old
    // session: the page says a new agent session was started.
    let mut reader = served.sse(first, None);
    let reset = reader.next_event().unwrap();
    let banner = reset
        .ops()
        .into_iter()
        .find(|op| op["op"] == "web_banner")
        .expect("banner");
    assert!(
        banner["text"]
            .as_str()
            .unwrap()
            .contains("new agent session was started"),
        "{banner}"
    );
    served.stop();
}

#[test]
fn prompts_while_a_turn_runs_are_sent_in_v2_and_queued_in_v1() {
    let dir = temp_dir("overlap");
    let served = Served::start(&dir.join("v2.sqlite"), &[], 10);
    let session = served.create_session();
    served.prompt(session, "/scenario slow");
    // Accepted while the slow turn runs: v2 answers session/prompt on acceptance.
    served.prompt(session, "and meanwhile?");
    served.wait_reply_containing(session, "and meanwhile?");
    let transcript = served.get_json(&format!("/api/sessions/{session}/transcript"));
    let users: Vec<&str> = transcript["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "user_message")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(users, vec!["/scenario slow", "and meanwhile?"]);
    served.stop();

    let served = Served::start(&dir.join("v1.sqlite"), &["--protocol", "1"], 10);
    let session = served.create_session();
    served.prompt(session, "/scenario slow");
    // A v1 agent takes one prompt at a time: the second waits in the queue (serve_queue.rs).
    let queued = served.post_json(
        &format!("/api/sessions/{session}/prompt"),
        "{\"text\":\"now it is my turn\"}",
    );
    assert_eq!(queued.status, 202, "{}", queued.body);
    assert!(queued.body.contains("\"position\":1"), "{}", queued.body);
    served.wait_reply_containing(session, "Slow streaming");
    served.wait_reply_containing(session, "now it is my turn");
    served.stop();
}
