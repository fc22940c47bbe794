//! Several `spindle serve` replicas on one PostgreSQL database (issue #17), on loopback with the
//! store's throwaway PostgreSQL server (required under CI): sessions are owned by lease, an
//! observer on one replica follows a session another replica runs, and when the owner is killed
//! another replica takes the session over with every logged line; a command the dead owner took
//! runs exactly once (again if it never reached the log, not again if it did).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::serve_support::{
    PATIENCE, Served, TextView, entry_texts, reference_agent, start_serve, temp_dir, transcript,
    wait_transcript,
};

/// A fresh database on the test PostgreSQL server; `None` when PostgreSQL is missing outside CI.
pub(crate) fn database(name: &str) -> Option<String> {
    let server = if std::env::var_os("CI").is_some() {
        spindle_store::test_server::required_server()
    } else {
        spindle_store::test_server::server()?
    };
    Some(server.url(&server.create_database(name)))
}

/// The lease time is short for the failover test, long enough that a loaded machine never
/// misses a renewal (a missed one moves the session, which these tests would read as a fault).
/// Protocol 2 is asked for: prompts forwarded from several replicas at once queue in a v2 turn
/// (v1 refuses a prompt while one runs).
fn replica(url: &str, id: &str, delay_ms: u32) -> Served {
    start_serve(
        Path::new(url),
        &["--replica-id", id, "--lease-ttl", "4", "--protocol", "2"],
        &reference_agent(delay_ms),
        None,
        &[],
    )
}

/// [`replica`] whose agent keeps its sessions in `state` (shared by the replicas' agents, as
/// agents reaching the same storage would), so that another replica's agent can continue them.
fn replica_with_state(url: &str, id: &str, delay_ms: u32, state: &Path) -> Served {
    let mut agent = reference_agent(delay_ms);
    agent.push("--state-dir".into());
    agent.push(state.into());
    start_serve(
        Path::new(url),
        &["--replica-id", id, "--lease-ttl", "4", "--protocol", "2"],
        &agent,
        None,
        &[],
    )
}

/// The session's wire log as the database holds it: (direction, line).
fn logged(url: &str, session: i64) -> Vec<(String, Value)> {
    let store = spindle_store::open(&spindle_store::Location::parse(url)).unwrap();
    let (lines, _) = store.lines(session).unwrap();
    lines
        .into_iter()
        .map(|l| {
            let line = serde_json::from_str(&l.line).unwrap_or(Value::Null);
            (format!("{:?}", l.direction), line)
        })
        .collect()
}

/// Waits until `served` lists `session` (a replica learns of sessions created elsewhere).
pub(crate) fn wait_listed(served: &Served, session: i64) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let list = served.get_json("/api/sessions");
        if list["sessions"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["id"] == session))
        {
            return;
        }
        assert!(Instant::now() < deadline, "never listed: {list}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads `served`'s event stream of `session` into `view` until `done` accepts it.
fn watch_until(
    served: &Served,
    session: i64,
    view: &mut TextView,
    done: impl Fn(&TextView) -> bool,
) {
    let mut stream = served.sse(session, None);
    let mut last_id: Option<String> = None;
    let deadline = Instant::now() + PATIENCE;
    while !done(view) {
        assert!(
            Instant::now() < deadline,
            "the observer never saw it: {:?}",
            view.texts_of("agent_message")
        );
        match stream.next_event() {
            Some(event) => {
                last_id = Some(event.id.clone());
                view.apply_event(&event);
            }
            None => stream = served.sse(session, last_id.as_deref()),
        }
    }
}

fn agent_text(t: &Value) -> String {
    entry_texts(t, "agent_message").concat()
}

#[test]
fn an_observer_on_b_follows_a_session_run_by_a() {
    let Some(url) = database("replicas_follow") else {
        return;
    };
    let a = replica(&url, "a", 0);
    let b = replica(&url, "b", 0);
    let session = a.create_session();
    wait_listed(&b, session);
    let mut view = TextView::default();
    a.prompt(session, "hello from a");
    let on_a = wait_transcript(&a, session, "a finished turn", |t| {
        t["state"]["turnOpen"] == false && entry_texts(t, "user_message").len() == 1
    });
    let reply = agent_text(&on_a);
    assert!(reply.contains("hello from a"), "{reply}");
    // The observer on B gets the whole turn through B's stream.
    watch_until(&b, session, &mut view, |v| {
        v.texts_of("user_message") == ["hello from a"]
            && v.texts_of("agent_message").concat() == reply
    });
    // B's own engine, fed from the log, holds what A's holds.
    let on_b = wait_transcript(&b, session, "the same transcript on b", |t| {
        agent_text(t) == reply && t["state"]["turnOpen"] == false
    });
    assert_eq!(entry_texts(&on_b, "user_message"), ["hello from a"]);

    // Operations: A runs the session (its agent holds the lease), B follows it.
    for served in [&a, &b] {
        assert_eq!(served.request("GET", "/healthz", None).status, 200);
        assert_eq!(served.request("GET", "/readyz", None).status, 200);
    }
    let metrics_a = a.request("GET", "/metrics", None).body;
    assert!(
        metric(&metrics_a, "spindle_sessions_owned") == 1.0,
        "{metrics_a}"
    );
    assert!(
        metric(&metrics_a, "spindle_lease_taken_total") == 1.0,
        "{metrics_a}"
    );
    let metrics_b = b.request("GET", "/metrics", None).body;
    assert!(
        metric(&metrics_b, "spindle_sessions_owned") == 0.0,
        "{metrics_b}"
    );
    assert!(
        metric(&metrics_b, "spindle_change_notices_total") >= 1.0,
        "{metrics_b}"
    );
    assert!(metric(&metrics_b, "spindle_sessions") == 1.0, "{metrics_b}");

    // A drains at SIGTERM: it gives the lease up, and B runs the next prompt itself.
    a.stop();
    b.prompt(session, "hello from b");
    wait_transcript(&b, session, "b's turn", |t| {
        entry_texts(t, "user_message").len() == 2 && t["state"]["turnOpen"] == false
    });
    let metrics_b = b.request("GET", "/metrics", None).body;
    assert!(
        metric(&metrics_b, "spindle_sessions_owned") == 1.0,
        "{metrics_b}"
    );
    b.stop();
}

/// The value of an unlabelled metric in Prometheus text.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

#[test]
fn after_kill_9_of_the_owner_another_replica_takes_over_with_every_logged_line() {
    let Some(url) = database("replicas_failover") else {
        return;
    };
    let a = replica(&url, "a", 2);
    let b = replica(&url, "b", 0);
    let c = replica(&url, "c", 0);
    let session = a.create_session();
    wait_listed(&b, session);
    wait_listed(&c, session);
    a.prompt(session, "/stream 3000 chunks");
    // B's observer has seen part of the stream: those lines were committed by A.
    let mut seen = TextView::default();
    watch_until(&b, session, &mut seen, |v| {
        v.texts_of("agent_message").concat().len() > 200
    });
    a.sigkill();
    let acknowledged = seen.texts_of("agent_message").concat();

    // The next prompt, sent to C, waits for A's lease to expire and C runs the session.
    c.prompt(session, "after the failover");
    let after = wait_transcript(&c, session, "the prompt answered on c", |t| {
        entry_texts(t, "user_message").len() == 2 && t["state"]["turnOpen"] == false
    });
    assert_eq!(
        entry_texts(&after, "user_message"),
        ["/stream 3000 chunks", "after the failover"]
    );
    let final_text = agent_text(&after);
    assert!(
        final_text.starts_with(&acknowledged),
        "a line an observer saw is missing after the takeover"
    );
    // One takeover, counted by the replica that made it, whether the prompt waiting on C for
    // A's lease or a watcher's scan found the session first.
    let takeovers = |served: &Served| {
        metric(
            &served.request("GET", "/metrics", None).body,
            "spindle_takeovers_total",
        )
    };
    assert_eq!(
        takeovers(&b) + takeovers(&c),
        1.0,
        "exactly one takeover counted"
    );
    // B follows C as it followed A.
    wait_transcript(&b, session, "b follows c", |t| agent_text(t) == final_text);
    let _ = transcript(&b, session);
    b.stop();
    c.stop();
}

#[test]
fn prompts_sent_to_b_and_c_reach_the_owner_a_once() {
    let Some(url) = database("replicas_commands") else {
        return;
    };
    let a = replica(&url, "a", 0);
    let b = replica(&url, "b", 0);
    let c = replica(&url, "c", 0);
    let session = a.create_session();
    wait_listed(&b, session);
    wait_listed(&c, session);
    a.prompt(session, "first, on a");
    wait_transcript(&a, session, "a's turn", |t| {
        entry_texts(t, "user_message").len() == 1 && t["state"]["turnOpen"] == false
    });
    b.prompt(session, "from b");
    c.prompt(session, "from c");
    wait_transcript(&a, session, "the forwarded prompts on a", |t| {
        entry_texts(t, "user_message").len() >= 3 && t["state"]["turnOpen"] == false
    });
    a.prompt(session, "last, on a");
    let t = wait_transcript(&a, session, "the last turn", |t| {
        entry_texts(t, "user_message").last().map(String::as_str) == Some("last, on a")
            && t["state"]["turnOpen"] == false
    });
    let users = entry_texts(&t, "user_message");
    assert_eq!(users.len(), 4, "{users:?}");
    assert_eq!(users[0], "first, on a");
    let mut forwarded = users[1..3].to_vec();
    forwarded.sort();
    assert_eq!(forwarded, ["from b", "from c"]);
    // A ran every turn: B and C never held the lease.
    for served in [&b, &c] {
        let text = served.request("GET", "/metrics", None).body;
        assert_eq!(metric(&text, "spindle_lease_taken_total"), 0.0, "{text}");
    }
    // B's observers see the turns it forwarded.
    wait_transcript(&b, session, "b follows", |t| {
        entry_texts(t, "user_message") == users
    });
    a.stop();
    b.stop();
    c.stop();
}

#[test]
fn after_kill_9_of_the_owner_mid_stream_another_replica_takes_over_by_itself() {
    let Some(url) = database("replicas_takeover") else {
        return;
    };
    let state = temp_dir("replicas-takeover-agents");
    let a = replica_with_state(&url, "a", 2, &state.path);
    let b = replica_with_state(&url, "b", 0, &state.path);
    let c = replica_with_state(&url, "c", 0, &state.path);
    let session = a.create_session();
    wait_listed(&b, session);
    wait_listed(&c, session);
    a.prompt(session, "/stream 100000 chunks");

    // One observer on B, on one stream from before the kill to after the takeover.
    let mut view = TextView::default();
    let mut stream = b.sse(session, None);
    let mut last_id: Option<String> = None;
    let mut resets = 0;
    let mut follow = |view: &mut TextView, done: &dyn Fn(&TextView) -> bool| {
        let deadline = Instant::now() + PATIENCE;
        while !done(view) {
            assert!(
                Instant::now() < deadline,
                "the observer never saw it: {:?}",
                view.state
            );
            match stream.next_event() {
                Some(event) => {
                    if event.event == "reset" {
                        resets += 1;
                    }
                    last_id = Some(event.id.clone());
                    view.apply_event(&event);
                }
                // Resumed from its last event on the same replica: no new snapshot.
                None => stream = b.sse(session, last_id.as_deref()),
            }
        }
    };
    follow(&mut view, &|v| {
        v.texts_of("agent_message").concat().len() > 200
    });
    a.sigkill();
    let acknowledged = view.texts_of("agent_message").concat();

    // No prompt: B or C finds A's lease expired with the turn open and takes the session over;
    // the note that ends the interrupted turn reaches the observer on B's stream.
    follow(&mut view, &|v| v.state["turnOpen"] == false);
    assert_eq!(resets, 1, "the observer on B had to reload");
    let observed = view.texts_of("agent_message").concat();
    assert!(
        observed.starts_with(&acknowledged),
        "a line the observer saw is missing after the takeover"
    );
    let after = wait_transcript(&b, session, "the interrupted turn ended", |t| {
        t["state"]["turnOpen"] == false
    });
    assert!(agent_text(&after).starts_with(&acknowledged));
    assert_eq!(
        entry_texts(&after, "user_message"),
        ["/stream 100000 chunks"]
    );

    // Exactly one of B and C took it, and its new agent continued the agent session.
    let takeovers = |served: &Served| {
        metric(
            &served.request("GET", "/metrics", None).body,
            "spindle_takeovers_total",
        )
    };
    let deadline = Instant::now() + PATIENCE;
    let (new_owner, other) = loop {
        let log = logged(&url, session);
        let note = log
            .iter()
            .position(|(d, l)| d == "Server" && l["spindle"] == "agent_exited");
        let reopened = note.and_then(|note| {
            log[note..].iter().find_map(|(d, l)| {
                let method = l["method"].as_str()?;
                (d == "Client" && (method == "session/resume" || method == "session/load"))
                    .then(|| method.to_owned())
            })
        });
        if reopened.is_some() && takeovers(&b) + takeovers(&c) >= 1.0 {
            break if takeovers(&b) == 1.0 {
                (&b, &c)
            } else {
                (&c, &b)
            };
        }
        assert!(
            Instant::now() < deadline,
            "the agent was never continued: {log:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(takeovers(new_owner), 1.0);
    assert_eq!(takeovers(other), 0.0);
    let log = logged(&url, session);
    let notes = log
        .iter()
        .filter(|(d, l)| d == "Server" && l["spindle"] == "agent_exited")
        .count();
    assert_eq!(notes, 1, "the interrupted turn is ended once");

    // The session goes on: a prompt on the other replica runs on the new owner.
    other.prompt(session, "after the takeover");
    let t = wait_transcript(new_owner, session, "the next turn", |t| {
        entry_texts(t, "user_message").len() == 2 && t["state"]["turnOpen"] == false
    });
    assert!(agent_text(&t).contains("after the takeover"));
    b.stop();
    c.stop();
}

/// The number of logged lines of `session` that match `check`.
fn count_logged(url: &str, session: i64, check: impl Fn(&str, &Value) -> bool) -> usize {
    logged(url, session)
        .iter()
        .filter(|(d, l)| check(d, l))
        .count()
}

#[test]
fn a_permission_answer_an_image_prompt_and_an_acp_prompt_sent_to_b_run_on_a_once() {
    use crate::remote_support::AcpHttp;
    use serde_json::json;

    let Some(url) = database("replicas_forwarding") else {
        return;
    };
    let a = replica(&url, "a", 0);
    let b = replica(&url, "b", 0);
    let session = a.create_session();
    wait_listed(&b, session);
    a.prompt(session, "first, on a");
    wait_transcript(&a, session, "a's turn", |t| {
        entry_texts(t, "user_message").len() == 1 && t["state"]["turnOpen"] == false
    });

    // A permission question of A's agent is shown on B; B's answer reaches the agent once.
    let mut on_b = b.sse(session, None);
    a.prompt(session, "/scenario tools");
    let question = on_b
        .wait_op(|op| op["op"] == "web_permission")
        .expect("B shows the question");
    let option = question["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .map(|o| o["optionId"].clone())
        .expect("an allow_once option");
    let permission = format!("/api/sessions/{session}/permission");
    let body = json!({ "key": question["key"], "optionId": option }).to_string();
    let answered = b.post_json(&permission, &body);
    assert_eq!(answered.status, 200, "{}", answered.body);
    let resolved = on_b
        .wait_op(|op| op["op"] == "web_permission_resolved" && op["key"] == question["key"])
        .expect("B's question closes once A answered");
    assert_eq!(resolved["outcome"], option, "{resolved}");
    let t = wait_transcript(&a, session, "the tools turn", |t| {
        entry_texts(t, "user_message").len() == 2 && t["state"]["turnOpen"] == false
    });
    assert!(
        agent_text(&t).contains("I changed the greeting"),
        "{}",
        agent_text(&t)
    );
    // A late second answer finds the question closed.
    assert_ne!(b.post_json(&permission, &body).status, 200);
    let key: Value = serde_json::from_str(question["key"].as_str().unwrap()).unwrap();
    let answers = count_logged(&url, session, |d, l| {
        d == "Client" && l["id"] == key && l.get("method").is_none()
    });
    assert_eq!(answers, 1, "the agent got the answer once");

    // A prompt with an image, sent to B, runs on A once.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let body = json!({
        "text": "/scenario echo-content look at this",
        "images": [{"mimeType": "image/png", "data": png}],
    });
    let sent = b.post_json(
        &format!("/api/sessions/{session}/prompt"),
        &body.to_string(),
    );
    assert_eq!(sent.status, 202, "{}", sent.body);
    let t = wait_transcript(&a, session, "the image turn on a", |t| {
        entry_texts(t, "user_message").len() == 3 && t["state"]["turnOpen"] == false
    });
    assert!(
        agent_text(&t).contains("image: mimeType=image/png"),
        "{}",
        agent_text(&t)
    );

    // An /acp client of B prompts: the turn runs on A, and B's client gets its answer.
    let mut client = AcpHttp::connect(&b, &[]);
    let sid = session.to_string();
    let mut stream = client.session_stream(&sid, None);
    let (attach, status) = client.request(
        "session/attach",
        json!({ "sessionId": sid, "role": "controller", "historyPolicy": "none" }),
        Some(&sid),
    );
    assert_eq!(status, 202);
    stream.response(attach);
    let (prompt, status) = client.request(
        "session/prompt",
        json!({ "sessionId": sid, "prompt": [{ "type": "text", "text": "from an acp client of b" }] }),
        Some(&sid),
    );
    assert_eq!(status, 202);
    // The agent's own answer to the prompt (v2: at once, with the user message's id).
    let answer = stream.response(prompt);
    assert!(answer["result"].is_object(), "{answer}");
    let t = wait_transcript(&a, session, "the /acp turn on a", |t| {
        entry_texts(t, "user_message").len() == 4 && t["state"]["turnOpen"] == false
    });
    let users = entry_texts(&t, "user_message");
    assert_eq!(users[3], "from an acp client of b", "{users:?}");
    assert!(agent_text(&t).contains("from an acp client of b"));
    // Each ran once: four prompts in the log, and B never ran the session.
    let prompts = count_logged(&url, session, |d, l| {
        d == "Client" && l["method"] == "session/prompt"
    });
    assert_eq!(prompts, 4);
    let metrics = b.request("GET", "/metrics", None).body;
    assert_eq!(
        metric(&metrics, "spindle_lease_taken_total"),
        0.0,
        "{metrics}"
    );
    a.stop();
    b.stop();
}

/// The store of the replicas' database, as a test reads it.
fn open_store(url: &str) -> std::sync::Arc<dyn spindle_store::Store> {
    spindle_store::open(&spindle_store::Location::parse(url)).unwrap()
}

/// Waits until `check` accepts what `read` returns from the database.
fn wait_store<T: std::fmt::Debug>(
    url: &str,
    what: &str,
    read: impl Fn(&dyn spindle_store::Store) -> T,
    check: impl Fn(&T) -> bool,
) -> T {
    let store = open_store(url);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let value = read(store.as_ref());
        if check(&value) {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: {value:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server notes of `session` of one kind (`spindle`).
fn notes_of(url: &str, session: i64, kind: &str) -> Vec<Value> {
    logged(url, session)
        .into_iter()
        .filter(|(d, l)| d == "Server" && l["spindle"] == kind)
        .map(|(_, l)| l)
        .collect()
}

/// The leases `served` claimed (by itself, or for a prompt that waited for the lease).
fn leases_taken(served: &Served) -> f64 {
    metric(
        &served.request("GET", "/metrics", None).body,
        "spindle_lease_taken_total",
    )
}

#[test]
fn a_prompt_the_owner_took_and_never_logged_runs_once_on_the_next_owner() {
    let Some(url) = database("replicas_taken_unlogged") else {
        return;
    };
    // A's agent reads its input and never answers: a prompt A takes stays in A's queue, taken
    // in the database and in no log line, as if A died just after taking it. Its program is
    // named `spindle` like B's and C's, so that all three offer the session's agent under one
    // id (`spindle-2`: the built-in agent has `spindle`), as replicas of one deployment do.
    let dir = crate::harness::TempDir::new("replicas-silent");
    let silent_program = dir.join("spindle");
    std::fs::write(&silent_program, "#!/bin/sh\ncat >/dev/null\n").unwrap();
    std::fs::set_permissions(
        &silent_program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let silent: Vec<std::ffi::OsString> = vec![silent_program.into()];
    let a = start_serve(
        Path::new(&url),
        &[
            "--replica-id",
            "a",
            "--lease-ttl",
            "4",
            "--agent-startup-timeout",
            "600",
        ],
        &silent,
        None,
        &[],
    );
    let b = replica(&url, "b", 0);
    let c = replica(&url, "c", 0);
    let session = a.create_session();
    wait_store(
        &url,
        "a holds the lease",
        |s| s.leases().unwrap(),
        |l| l.iter().any(|l| l.session == session && l.owner == "a"),
    );
    wait_listed(&b, session);
    wait_listed(&c, session);

    b.prompt(session, "taken by a, never logged");
    let taken = wait_store(
        &url,
        "a took the command",
        |s| s.unfinished_commands(session).unwrap(),
        |c| c.len() == 1 && c[0].taken_by == "a",
    );
    let command = taken[0].id.clone();
    let prompts = |url: &str| {
        count_logged(url, session, |d, l| {
            d == "Client" && l["method"] == "session/prompt"
        })
    };
    assert_eq!(prompts(&url), 0);
    a.sigkill();

    // B or C takes the session over (commands wait that no live lease answers for), finds no
    // note of the command in the log, takes it again and runs it: once.
    let t = wait_transcript(&b, session, "the prompt ran after the takeover", |t| {
        entry_texts(t, "user_message").len() == 1 && t["state"]["turnOpen"] == false
    });
    assert_eq!(
        entry_texts(&t, "user_message"),
        ["taken by a, never logged"]
    );
    assert!(agent_text(&t).contains("taken by a, never logged"));
    wait_store(
        &url,
        "the command is finished",
        |s| s.unfinished_commands(session).unwrap(),
        Vec::is_empty,
    );
    assert_eq!(prompts(&url), 1, "the agent got the prompt once");
    let recovered = notes_of(&url, session, "commands_recovered");
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert_eq!(recovered[0]["commands"], serde_json::json!([command]));
    let noted: Vec<Value> = notes_of(&url, session, "command")
        .into_iter()
        .filter(|n| n["command"] == command.as_str())
        .collect();
    assert_eq!(noted.len(), 1, "{noted:?}");
    assert!(noted[0]["request"].is_string(), "{noted:?}");
    assert_eq!(leases_taken(&b) + leases_taken(&c), 1.0);
    assert!(
        open_store(&url)
            .lease_survey()
            .unwrap()
            .commands_waiting
            .is_empty()
    );
    b.stop();
    c.stop();
}

#[test]
fn a_prompt_the_owner_logged_is_not_run_again_after_its_death() {
    let Some(url) = database("replicas_taken_logged") else {
        return;
    };
    let state = temp_dir("replicas-logged-agents");
    let a = replica_with_state(&url, "a", 2, &state.path);
    let b = replica_with_state(&url, "b", 0, &state.path);
    let c = replica_with_state(&url, "c", 0, &state.path);
    let session = a.create_session();
    wait_store(
        &url,
        "a holds the lease",
        |s| s.leases().unwrap(),
        |l| l.iter().any(|l| l.session == session && l.owner == "a"),
    );
    wait_listed(&b, session);
    wait_listed(&c, session);

    // Sent to B, run by A: logged with its note, and still unfinished while its turn runs (a
    // turn long enough to outlast B's first view of it, however fast A commits).
    b.prompt(session, "/stream 100000 chunks");
    let mut view = TextView::default();
    watch_until(&b, session, &mut view, |v| {
        v.texts_of("agent_message").concat().len() > 200
    });
    let unfinished = open_store(&url).unfinished_commands(session).unwrap();
    assert_eq!(unfinished.len(), 1, "{unfinished:?}");
    let command = unfinished[0].id.clone();
    a.sigkill();

    // The new owner finds the command's note in the log: it is finished, not run again.
    wait_store(
        &url,
        "the command is finished",
        |s| s.unfinished_commands(session).unwrap(),
        Vec::is_empty,
    );
    let t = wait_transcript(&b, session, "the interrupted turn ended", |t| {
        t["state"]["turnOpen"] == false
    });
    assert_eq!(entry_texts(&t, "user_message"), ["/stream 100000 chunks"]);
    let recovered = notes_of(&url, session, "commands_recovered");
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert_eq!(recovered[0]["commands"], serde_json::json!([command]));
    assert_eq!(leases_taken(&b) + leases_taken(&c), 1.0);

    // The session goes on; the stream's prompt was sent to an agent once in all.
    c.prompt(session, "after the takeover");
    let t = wait_transcript(&c, session, "the next turn", |t| {
        entry_texts(t, "user_message").len() == 2 && t["state"]["turnOpen"] == false
    });
    assert_eq!(
        entry_texts(&t, "user_message"),
        ["/stream 100000 chunks", "after the takeover"]
    );
    let streams = count_logged(&url, session, |d, l| {
        d == "Client"
            && l["method"] == "session/prompt"
            && l.to_string().contains("/stream 100000 chunks")
    });
    assert_eq!(streams, 1);
    b.stop();
    c.stop();
}

/// A prompt line of the page's client, as the log holds it.
fn prompt_line(text: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": "p1", "method": "session/prompt",
        "params": { "sessionId": "s", "prompt": [{ "type": "text", "text": text }] },
    })
    .to_string()
}

/// B lists sessions from the database, so it may list one created elsewhere before its follower
/// rebuilt it; such a session is rebuilt on demand: whatever B lists, B serves (transcript and
/// event stream), with what the log holds.
#[test]
fn every_session_b_lists_b_serves_at_once() {
    let Some(url) = database("replicas_listed") else {
        return;
    };
    let a = replica(&url, "a", 0);
    let b = replica(&url, "b", 0);
    // Written straight to the database: a long session, which keeps B's follower busy
    // rebuilding it, then a burst of short ones it hears of after that, one by one.
    let store = open_store(&url);
    let long = store.create_session("long", None).unwrap();
    let prompt = prompt_line("long");
    let chunk = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"x"}}}}"#;
    let mut lines = vec![(spindle_store::Direction::Client, prompt.as_str())];
    lines.extend(std::iter::repeat_n(
        (spindle_store::Direction::Agent, chunk),
        20_000,
    ));
    // Every turn is answered: a log that ends inside a turn with nobody's lease is a session
    // to take over (replica/takeover.rs), which would start an agent and add its text.
    let answer = r#"{"jsonrpc":"2.0","id":"p1","result":{"stopReason":"end_turn"}}"#;
    lines.push((spindle_store::Direction::Agent, answer));
    store.append_lines(long, 1, &lines).unwrap();
    let mut created = Vec::new();
    for n in 0..20 {
        let id = store.create_session(&format!("burst {n}"), None).unwrap();
        let line = prompt_line(&format!("burst {n}"));
        store
            .append_lines(
                id,
                1,
                &[
                    (spindle_store::Direction::Client, &line),
                    (spindle_store::Direction::Agent, answer),
                ],
            )
            .unwrap();
        created.push((id, format!("burst {n}")));
    }
    // Newest first: the ones B's follower reaches last.
    for (id, text) in created.iter().rev() {
        let list = b.get_json("/api/sessions");
        assert!(
            list["sessions"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["id"] == *id)),
            "{id} not listed: {list}"
        );
        let on_b = transcript(&b, *id);
        assert_eq!(
            entry_texts(&on_b, "user_message"),
            [text.as_str()],
            "{on_b}"
        );
        let mut stream = b.sse(*id, None);
        let first = stream.next_event().expect("a first event");
        assert_eq!(first.event, "reset", "{first:?}");
        let mut view = TextView::default();
        view.apply_event(&first);
        assert_eq!(view.texts_of("user_message"), [text.as_str()]);
    }
    // And one created through A's page API.
    let from_a = a.create_session();
    wait_listed(&b, from_a);
    let on_b = transcript(&b, from_a);
    assert_eq!(entry_texts(&on_b, "user_message"), Vec::<String>::new());
    b.sse(from_a, None).next_event().expect("a first event");
    // The follower's notices, later, found them served: one live session each.
    let metrics = b.request("GET", "/metrics", None).body;
    assert_eq!(metric(&metrics, "spindle_sessions"), 22.0, "{metrics}");
    assert_eq!(agent_text(&transcript(&b, long)).len(), 20_000);
    a.stop();
    b.stop();
}

#[test]
fn a_replica_without_the_sessions_agent_refuses_its_prompts_and_still_shows_it() {
    let Some(url) = database("replicas_agent_missing") else {
        return;
    };
    // A offers an agent B does not: the reference agent under another program name.
    let dir = crate::harness::TempDir::new("replicas-agent-missing");
    let program = dir.join("solo-agent");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\nexec '{}' agent \"$@\"\n",
            env!("CARGO_BIN_EXE_spindle")
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let a = start_serve(
        Path::new(&url),
        &["--replica-id", "a", "--lease-ttl", "4"],
        &[program.into()],
        None,
        &[],
    );
    let b = replica(&url, "b", 0);
    let session = a.create_session();
    a.prompt(session, "run by a");
    a.wait_reply_containing(session, "run by a");
    wait_listed(&b, session);
    // A hands its leases over as it stops: B may run the session, but has not its agent.
    a.stop();
    let listed = b.get_json("/api/sessions");
    let entry = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == session)
        .cloned()
        .unwrap();
    assert_eq!(entry["agent"]["id"], "solo-agent", "{entry}");
    assert_eq!(entry["agent"]["available"], false, "{entry}");
    let refused = b.post_json(
        &format!("/api/sessions/{session}/prompt"),
        r#"{"text": "run by b?"}"#,
    );
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(
        refused.body.contains("solo-agent") && refused.body.contains("does not offer"),
        "{}",
        refused.body
    );
    // Readable still, and B's own sessions run.
    assert!(agent_text(&transcript(&b, session)).contains("run by a"));
    let own = b.create_session();
    b.prompt(own, "b's own");
    b.wait_reply_containing(own, "b's own");
    b.stop();
}

/// Checkpoints (issue 27) are kept by the replica that runs the turn, on its disk (each replica
/// here has a data directory of its own): every replica lists them from the log, and one that
/// does not hold them answers a diff or a restore with 409 naming the replica that does.
#[test]
fn checkpoints_are_kept_by_the_owner_and_another_replica_names_it() {
    let Some(url) = database("replicas_checkpoints") else {
        return;
    };
    let dir = temp_dir("replicas-checkpoints");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "hello\n").unwrap();
    let start = |id: &str| {
        let data = dir.join(&format!("data-{id}"));
        start_serve(
            Path::new(&url),
            &[
                "--replica-id",
                id,
                "--lease-ttl",
                "4",
                "--protocol",
                "1",
                "--fs",
                "allow",
                "--cwd",
                work.to_str().unwrap(),
            ],
            &reference_agent(0),
            None,
            &[("XDG_DATA_HOME", data.to_str().unwrap())],
        )
    };
    let a = start("a");
    let b = start("b");
    let session = a.create_session();
    wait_listed(&b, session);
    a.prompt(session, "/scenario client-fs notes.txt");
    wait_transcript(&a, session, "a finished turn", |t| {
        t["state"]["turnOpen"] == false && entry_texts(t, "user_message").len() == 1
    });
    let edited = std::fs::read_to_string(work.join("notes.txt")).unwrap();
    assert_ne!(edited, "hello\n");

    // B lists A's checkpoint from the log, and sends diffs and restores to A's machine.
    let deadline = Instant::now() + PATIENCE;
    let list = loop {
        let list = b.get_json(&format!("/api/sessions/{session}/checkpoints"));
        if list["checkpoints"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
        {
            break list;
        }
        assert!(Instant::now() < deadline, "never listed on b: {list}");
        std::thread::sleep(Duration::from_millis(25));
    };
    assert_eq!(list["checkpoints"][0]["turn"], 1, "{list}");
    assert_eq!(list["checkpoints"][0]["replica"], "a", "{list}");
    assert_eq!(list["replica"], "b", "{list}");
    let restore_path = format!("/api/sessions/{session}/checkpoints/1/restore");
    for (method, path) in [
        ("POST", restore_path.as_str()),
        (
            "GET",
            &format!("/api/sessions/{session}/checkpoints/1/diff"),
        ),
    ] {
        let body = (method == "POST").then_some("{}");
        let refused = b.request(method, path, body);
        assert_eq!(refused.status, 409, "{method} {path}: {}", refused.body);
        assert!(
            refused.body.contains("runs on replica a"),
            "{}",
            refused.body
        );
    }
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        edited
    );

    // A restores; B's list shows the restore.
    let restored = a.post_json(&restore_path, "{}");
    assert_eq!(restored.status, 200, "{}", restored.body);
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        "hello\n"
    );
    let deadline = Instant::now() + PATIENCE;
    loop {
        let list = b.get_json(&format!("/api/sessions/{session}/checkpoints"));
        if list["restores"].as_array().is_some_and(|r| r.len() == 1) {
            assert_eq!(list["restores"][0]["replica"], "a", "{list}");
            break;
        }
        assert!(Instant::now() < deadline, "restore never seen on b: {list}");
        std::thread::sleep(Duration::from_millis(25));
    }

    // A stops (its lease given up): B may claim the session, but the checkpoint is on A's disk.
    a.stop();
    let refused = b.request("POST", &restore_path, Some("{}"));
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused.body.contains("taken on replica a"),
        "{}",
        refused.body
    );
    b.stop();
}
