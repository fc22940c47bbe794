//! `spindle serve --users FILE` (issue 28): every role against every route of the route table,
//! `/acp` with an observer's token, a user removed by SIGHUP, failed tokens limited per address,
//! a trusted proxy naming the user, and no token kept anywhere.

use crate::harness::TempDir;
use crate::remote_support::AcpHttp;
use crate::serve_support::{
    self, PATIENCE, Response, Served, SseReader, http, reference_agent, start_serve,
};

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use spindle_web::roles::RULES;
use spindle_web::users::Role;

const ADMIN: &str = "admin-token-aaaaaaaaaaaa";
const CONTROLLER: &str = "controller-token-bbbbbbbb";
const OBSERVER: &str = "observer-token-cccccccccc";

fn users_file(dir: &TempDir, users: &[(&str, &str, &str)]) -> std::path::PathBuf {
    let path = dir.join("users.json");
    let list: Vec<Value> = users
        .iter()
        .map(|(name, role, token)| json!({ "name": name, "role": role, "token": token }))
        .collect();
    std::fs::write(&path, json!({ "users": list }).to_string()).unwrap();
    path
}

fn team(dir: &TempDir) -> std::path::PathBuf {
    users_file(
        dir,
        &[
            ("ada", "admin", ADMIN),
            ("cy", "controller", CONTROLLER),
            ("ob", "observer", OBSERVER),
        ],
    )
}

fn serve_with_users(dir: &TempDir, users: &Path, extra: &[&str]) -> Served {
    let mut args = vec!["--protocol", "1", "--users", users.to_str().unwrap()];
    args.extend_from_slice(extra);
    start_serve(
        &dir.join("db.sqlite"),
        &args,
        &reference_agent(0),
        Some(&dir.join("stderr.log")),
        &[],
    )
}

fn call(
    served: &Served,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> Response {
    let host = served.host();
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Host", host.as_str())];
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth.as_str()));
    }
    if body.is_some() {
        headers.push(("Content-Type", "application/json"));
    }
    http(served.addr, method, path, &headers, body)
}

/// A body each route's handler refuses (or ignores) without changing anything, so a request
/// that gets past the access check shows by its handler's own answer.
fn harmless_body(method: &str) -> Option<&'static str> {
    match method {
        "POST" | "PATCH" | "PUT" => Some("{\"unexpected\": "),
        _ => None,
    }
}

/// The decision of roles.rs, written out: a change of a route's role is a conscious change of
/// this list too.
const ADMIN_ONLY: &[&str] = &[
    "DELETE /api/sessions/{id}",
    "POST /api/sessions/{id}/logout",
    "POST /api/sessions/{id}/authenticate",
];
const CONTROLLER_AND_UP: &[&str] = &[
    "POST /api/sessions",
    "GET /api/agent-sessions",
    "PATCH /api/sessions/{id}",
    "POST /api/sessions/{id}/fork",
    "POST /api/sessions/{id}/prompt",
    "PATCH /api/sessions/{id}/queue/{item}",
    "DELETE /api/sessions/{id}/queue/{item}",
    "POST /api/sessions/{id}/queue/{item}/send-now",
    "POST /api/sessions/{id}/cancel",
    "POST /api/sessions/{id}/permission",
    "POST /api/sessions/{id}/elicitation",
    "POST /api/sessions/{id}/permission/forget",
    "POST /api/sessions/{id}/mode",
    "POST /api/sessions/{id}/config",
    "POST /api/sessions/{id}/review",
    "POST /api/sessions/{id}/checkpoints/{checkpoint}/restore",
];

#[test]
fn serve_users_the_rule_table_is_the_written_decision() {
    for (method, route, role) in RULES {
        let key = format!("{method} {route}");
        let expected = if ADMIN_ONLY.contains(&key.as_str()) {
            Role::Admin
        } else if CONTROLLER_AND_UP.contains(&key.as_str()) {
            Role::Controller
        } else {
            Role::Observer
        };
        assert_eq!(*role, expected, "{key}");
    }
    for key in ADMIN_ONLY.iter().chain(CONTROLLER_AND_UP) {
        assert!(
            RULES.iter().any(|(m, r, _)| format!("{m} {r}") == *key),
            "{key} is no longer a route"
        );
    }
}

#[test]
fn serve_users_every_role_against_every_route_of_the_table() {
    let dir = TempDir::new("serve-users-routes");
    let served = serve_with_users(&dir, &team(&dir), &[]);
    // A session id no one has: handlers answer 404 for it, so nothing is changed.
    let absent = "/api/sessions/987654";
    for (method, route, needed) in RULES {
        let path = route
            .replace("/api/sessions/{id}", absent)
            .replace("{entry}", "e1")
            .replace("{checkpoint}", "1")
            .replace("{item}", "q1")
            .replace("{seq}", "1");
        for (token, role) in [
            (None, None),
            (Some(OBSERVER), Some(Role::Observer)),
            (Some(CONTROLLER), Some(Role::Controller)),
            (Some(ADMIN), Some(Role::Admin)),
        ] {
            let response = call(&served, method, &path, token, harmless_body(method));
            let what = format!(
                "{method} {path} as {role:?}: {} {}",
                response.status, response.body
            );
            match role {
                None => assert_eq!(response.status, 401, "{what}"),
                Some(role) if !role.allows(*needed) => {
                    assert_eq!(response.status, 403, "{what}");
                    assert!(response.body.contains(needed.as_str()), "{what}");
                }
                Some(_) => assert!(![401, 403, 405, 500].contains(&response.status), "{what}"),
            }
        }
    }
    // A wrong token is no token (a few only: wrong tokens are limited per address).
    for path in ["/", "/api/sessions", "/acp"] {
        let response = call(&served, "GET", path, Some("no-such-token-000000"), None);
        assert_eq!(response.status, 401, "{path}: {}", response.body);
        assert_eq!(response.body, "unknown token");
    }
    // Every route with every method, as admin: a method without a rule is 405, never let
    // through, and no route lacks a rule (500 "no access rule").
    let mut routes: Vec<&str> = RULES.iter().map(|(_, route, _)| *route).collect();
    routes.dedup();
    for route in routes {
        let path = route
            .replace("/api/sessions/{id}", absent)
            .replace("{entry}", "e1")
            .replace("{checkpoint}", "1")
            .replace("{item}", "q1")
            .replace("{seq}", "1");
        for method in ["GET", "POST", "PATCH", "DELETE", "PUT"] {
            let response = call(&served, method, &path, Some(ADMIN), harmless_body(method));
            let ruled = RULES.iter().any(|(m, r, _)| *m == method && *r == route);
            let what = format!("{method} {path}: {} {}", response.status, response.body);
            assert!(!response.body.contains("no access rule"), "{what}");
            if !ruled {
                assert_eq!(response.status, 405, "{what}");
            }
        }
    }
    // `/api/me` says who the page is signed in as.
    let me: Value =
        serde_json::from_str(&call(&served, "GET", "/api/me", Some(CONTROLLER), None).body)
            .unwrap();
    assert_eq!(me, json!({ "name": "cy", "role": "controller" }));
}

#[test]
fn serve_users_an_observer_on_acp_may_watch_but_not_create_or_control() {
    let dir = TempDir::new("serve-users-acp");
    let served = serve_with_users(&dir, &team(&dir), &[]);
    // The controller creates a session and runs a turn.
    let mut cy = AcpHttp::connect_as(&served, &["attach"], Some(CONTROLLER));
    let mut cy_connection = cy.connection_stream(None);
    let session = cy.new_session(&mut cy_connection);

    let mut ob = AcpHttp::connect_as(&served, &["attach"], Some(OBSERVER));
    let mut ob_connection = ob.connection_stream(None);
    let (new, status) = ob.request("session/new", json!({ "cwd": "/", "mcpServers": [] }), None);
    assert_eq!(status, 202);
    let refused = ob_connection.response(new);
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("ob is an observer"), "{message}");
    // Asking for the controller's role is refused; asking for nothing attaches as observer.
    let (attach, _) = ob.request(
        "session/attach",
        json!({ "sessionId": session, "role": "controller" }),
        Some(&session),
    );
    let refused = ob_connection.response(attach);
    assert_eq!(refused["error"]["data"]["role"], "observer", "{refused}");
    let (load, _) = ob.request(
        "session/load",
        json!({ "sessionId": session, "cwd": "/", "mcpServers": [] }),
        Some(&session),
    );
    assert_eq!(ob_connection.response(load)["error"]["code"], -32600);
    let (attach, _) = ob.request(
        "session/attach",
        json!({ "sessionId": session }),
        Some(&session),
    );
    let mut ob_stream = ob.session_stream(&session, None);
    let attached = ob_stream.response(attach);
    assert_eq!(attached["result"]["role"], "observer", "{attached}");
    let (prompt, _) = ob.request(
        "session/prompt",
        json!({ "sessionId": session, "prompt": [{ "type": "text", "text": "hi" }] }),
        Some(&session),
    );
    let refused = ob_stream.response(prompt);
    assert!(
        refused.get("error").is_some(),
        "an observer's prompt: {refused}"
    );

    // The observer's connection id is no use to anyone else.
    let stolen = crate::remote_support::post_raw(
        served.addr,
        &served.host(),
        &[
            ("Acp-Connection-Id", ob.connection.as_str()),
            ("Authorization", &format!("Bearer {CONTROLLER}")),
        ],
        &json!({ "jsonrpc": "2.0", "id": 9, "method": "session/list", "params": {} }).to_string(),
    );
    assert_eq!(stolen.status, 404, "{}", stolen.body);
    let _ = &mut cy;
}

/// Reads an SSE response until the server ends it; `true` when it ended before `patience`.
fn ends_within(stream: TcpStream, patience: Duration) -> bool {
    stream.set_read_timeout(Some(patience)).unwrap();
    let mut reader = BufReader::new(stream);
    let deadline = Instant::now() + patience;
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => return true,
            Ok(_) if Instant::now() < deadline => continue,
            _ => return false,
        }
    }
}

fn open_events(served: &Served, session: i64, token: &str) -> TcpStream {
    let mut stream = TcpStream::connect(served.addr).unwrap();
    write!(
        stream,
        "GET /api/sessions/{session}/events HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n",
        served.host()
    )
    .unwrap();
    let mut head = [0u8; 12];
    std::io::Read::read_exact(&mut stream, &mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.0 200", "events stream opened");
    stream
}

#[test]
fn serve_users_sighup_signs_a_removed_user_out_at_once() {
    let dir = TempDir::new("serve-users-sighup");
    let users = team(&dir);
    let served = serve_with_users(&dir, &users, &[]);
    let created = call(
        &served,
        "POST",
        "/api/sessions",
        Some(CONTROLLER),
        Some("{}"),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let session = serde_json::from_str::<Value>(&created.body).unwrap()["id"]
        .as_i64()
        .unwrap();
    let observer_events = open_events(&served, session, OBSERVER);
    let admin_events = open_events(&served, session, ADMIN);
    let mut ob = AcpHttp::connect_as(&served, &[], Some(OBSERVER));
    let ob_connection = ob.connection_stream(None);
    assert_eq!(ob_connection.status, 200);

    // The observer is removed and the controller becomes an observer.
    users_file(
        &dir,
        &[("ada", "admin", ADMIN), ("cy", "observer", CONTROLLER)],
    );
    assert!(
        std::process::Command::new("kill")
            .args(["-HUP", &served.child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    assert!(
        ends_within(observer_events, PATIENCE),
        "the removed user's stream ends"
    );
    let deadline = Instant::now() + PATIENCE;
    while call(&served, "GET", "/api/sessions", Some(OBSERVER), None).status != 401 {
        assert!(
            Instant::now() < deadline,
            "the removed token is still accepted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let demoted = call(
        &served,
        "POST",
        "/api/sessions",
        Some(CONTROLLER),
        Some("{}"),
    );
    assert_eq!(demoted.status, 403, "{}", demoted.body);
    let (_, status) = ob.request("session/list", json!({}), None);
    assert_eq!(status, 401, "the removed user's /acp connection");
    // The admin's stream lives on.
    admin_events
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut byte = [0u8; 1];
    let read = std::io::Read::read(&mut &admin_events, &mut byte);
    assert!(!matches!(read, Ok(0)), "the admin's stream ended: {read:?}");

    // A file that no longer reads keeps the users as they were, and says so.
    std::fs::write(&users, "{ not json").unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-HUP", &served.child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let log = dir.join("stderr.log");
    let deadline = Instant::now() + PATIENCE;
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("the users stay as they were")
    {
        assert!(
            Instant::now() < deadline,
            "no diagnostic for a broken users file"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        call(&served, "GET", "/api/sessions", Some(ADMIN), None).status,
        200
    );
}

#[test]
fn serve_users_wrong_tokens_are_limited_per_address_and_no_token_is_kept() {
    let dir = TempDir::new("serve-users-limit");
    let served = serve_with_users(&dir, &team(&dir), &[]);
    assert_eq!(
        call(&served, "GET", "/api/sessions", None, None).status,
        401
    );
    let mut statuses = Vec::new();
    for n in 0..11 {
        let guess = format!("guess-{n:020}");
        statuses.push(call(&served, "GET", "/api/sessions", Some(&guess), None).status);
    }
    assert_eq!(statuses[..10], [401; 10]);
    assert_eq!(statuses[10], 429);
    let limited = call(&served, "GET", "/api/sessions", Some(ADMIN), None);
    assert_eq!(
        limited.status, 429,
        "even a good token waits out the window"
    );
    assert!(
        limited
            .header("retry-after")
            .is_some_and(|s| s.parse::<u64>().is_ok_and(|s| s > 0))
    );

    // Nothing Spindle keeps holds a token: the database, the log.
    drop(served);
    for file in std::fs::read_dir(&dir.path).unwrap() {
        let path = file.unwrap().path();
        if path.file_name().is_some_and(|n| n == "users.json") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap_or_default();
        for token in [ADMIN, CONTROLLER, OBSERVER] {
            assert!(
                !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                "{} holds a token",
                path.display()
            );
        }
    }
}

#[test]
fn serve_users_a_trusted_proxy_names_the_user_and_the_page_gets_a_cookie() {
    let dir = TempDir::new("serve-users-proxy");
    let users = users_file(
        &dir,
        &[("ada", "admin", ADMIN), ("ob", "observer", OBSERVER)],
    );
    // A tokenless user only the proxy can name.
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&users).unwrap()).unwrap();
    file["users"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "name": "sso-cy", "role": "controller" }));
    std::fs::write(&users, file.to_string()).unwrap();
    let served = serve_with_users(
        &dir,
        &users,
        &[
            "--trust-proxy-user",
            "X-Forwarded-User",
            "--trusted-proxy",
            "127.0.0.1/32",
        ],
    );
    let host = served.host();
    let as_user = |name: &str, method: &str, path: &str, body: Option<&str>| {
        let mut headers = vec![("Host", host.as_str()), ("X-Forwarded-User", name)];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        http(served.addr, method, path, &headers, body)
    };
    let me: Value = serde_json::from_str(&as_user("sso-cy", "GET", "/api/me", None).body).unwrap();
    assert_eq!(me, json!({ "name": "sso-cy", "role": "controller" }));
    assert_eq!(
        as_user("sso-cy", "POST", "/api/sessions", Some("{}")).status,
        201
    );
    assert_eq!(
        as_user("ob", "POST", "/api/sessions", Some("{}")).status,
        403
    );
    assert_eq!(as_user("mallory", "GET", "/api/sessions", None).status, 403);
    // From the proxy without its header: refused, even with a token.
    assert_eq!(
        call(&served, "GET", "/api/sessions", Some(ADMIN), None).status,
        401
    );

    // Without a proxy, the page's first visit trades ?token= for a cookie.
    drop(served);
    let dir = TempDir::new("serve-users-cookie");
    let served = serve_with_users(&dir, &team(&dir), &[]);
    let host = served.host();
    let first = http(
        served.addr,
        "GET",
        &format!("/?token={OBSERVER}"),
        &[("Host", &host)],
        None,
    );
    assert_eq!(first.status, 303, "{}", first.body);
    let cookie = first
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(cookie.starts_with("spindle_token="));
    let with_cookie = http(
        served.addr,
        "GET",
        "/api/me",
        &[("Host", &host), ("Cookie", &cookie)],
        None,
    );
    assert_eq!(with_cookie.status, 200);
    assert!(
        with_cookie.body.contains("\"observer\""),
        "{}",
        with_cookie.body
    );
    let _ = serve_support::PATIENCE;
}

fn json_of(response: &Response) -> Value {
    serde_json::from_str(&response.body)
        .unwrap_or_else(|_| panic!("{} {}", response.status, response.body))
}

/// Polls the transcript (as `token`) until `check` accepts it.
fn wait_transcript_as(
    served: &Served,
    session: i64,
    token: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let response = call(
            served,
            "GET",
            &format!("/api/sessions/{session}/transcript"),
            Some(token),
            None,
        );
        let transcript = json_of(&response);
        if check(&transcript) {
            return transcript;
        }
        assert!(
            Instant::now() < deadline,
            "transcript never matched: {transcript}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn entries_of<'a>(transcript: &'a Value, kind: &str) -> Vec<&'a Value> {
    transcript["entries"]
        .as_array()
        .map(|entries| entries.iter().filter(|e| e["kind"] == kind).collect())
        .unwrap_or_default()
}

#[test]
fn serve_users_the_author_of_each_prompt_and_answer_is_in_the_transcript_and_survives_a_restart() {
    let dir = TempDir::new("serve-users-authors");
    let users = users_file(
        &dir,
        &[
            ("ada", "admin", ADMIN),
            ("cy", "controller", CONTROLLER),
            ("ob", "observer", OBSERVER),
        ],
    );
    let served = serve_with_users(&dir, &users, &[]);
    let created = json_of(&call(
        &served,
        "POST",
        "/api/sessions",
        Some(CONTROLLER),
        Some("{}"),
    ));
    let session = created["id"].as_i64().unwrap();
    let mut sse = SseReader::open_as(served.addr, &served.host(), session, None, Some(OBSERVER));

    // cy asks for a tool call that needs permission; ada answers it.
    let prompt = json!({ "text": "/scenario tools" }).to_string();
    let sent = call(
        &served,
        "POST",
        &format!("/api/sessions/{session}/prompt"),
        Some(CONTROLLER),
        Some(&prompt),
    );
    assert_eq!(sent.status, 202, "{}", sent.body);
    let question = sse.wait_op(|op| op["op"] == "web_permission").unwrap();
    let answer = json!({ "key": question["key"], "optionId": "allow" }).to_string();
    let refused = call(
        &served,
        "POST",
        &format!("/api/sessions/{session}/permission"),
        Some(OBSERVER),
        Some(&answer),
    );
    assert_eq!(refused.status, 403, "an observer may not answer");
    let answered = call(
        &served,
        "POST",
        &format!("/api/sessions/{session}/permission"),
        Some(ADMIN),
        Some(&answer),
    );
    assert_eq!(answered.status, 200, "{}", answered.body);
    // ada's own prompt next.
    let prompt = json!({ "text": "and you, ada" }).to_string();
    let sent = call(
        &served,
        "POST",
        &format!("/api/sessions/{session}/prompt"),
        Some(ADMIN),
        Some(&prompt),
    );
    assert_eq!(sent.status, 202, "{}", sent.body);

    let check = |transcript: &Value| {
        let users: Vec<(String, String)> = entries_of(transcript, "user_message")
            .iter()
            .map(|e| {
                (
                    e["text"].as_str().unwrap_or("").to_owned(),
                    e["author"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let answered_by = entries_of(transcript, "tool_call")
            .iter()
            .find_map(|e| e["permission"]["answeredBy"].as_str().map(str::to_owned));
        users
            == [
                ("/scenario tools".to_owned(), "cy".to_owned()),
                ("and you, ada".to_owned(), "ada".to_owned()),
            ]
            && answered_by.as_deref() == Some("ada")
    };
    wait_transcript_as(&served, session, OBSERVER, check);
    // The page is told too: the prompt entry's update carries its author.
    drop(sse);
    served.stop();

    // Rebuilt from the log after a restart: the same authors.
    let served = serve_with_users(&dir, &users, &[]);
    wait_transcript_as(&served, session, OBSERVER, check);
    // The log keeps who cancelled (an action with no line of its own).
    let prompt = json!({ "text": "/scenario slow" }).to_string();
    let sent = call(
        &served,
        "POST",
        &format!("/api/sessions/{session}/prompt"),
        Some(ADMIN),
        Some(&prompt),
    );
    assert_eq!(sent.status, 202, "{}", sent.body);
    wait_transcript_as(&served, session, OBSERVER, |t| {
        entries_of(t, "user_message").len() == 3
    });
    let cancelled = call(
        &served,
        "POST",
        &format!("/api/sessions/{session}/cancel"),
        Some(CONTROLLER),
        Some("{}"),
    );
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    let wire = json_of(&call(
        &served,
        "GET",
        &format!("/api/sessions/{session}/wire?limit=1000"),
        Some(OBSERVER),
        None,
    ));
    let notes: Vec<Value> = wire["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|line| {
            line["line"]
                .as_str()
                .and_then(|l| serde_json::from_str::<Value>(l).ok())
        })
        .filter(|note| note["spindle"] == "author")
        .collect();
    let summary: Vec<(String, String)> = notes
        .iter()
        .map(|n| {
            let what = ["prompt", "permission", "action"]
                .iter()
                .find(|k| n.get(**k).is_some())
                .map(|k| {
                    if *k == "action" {
                        n["action"].as_str().unwrap_or("").to_owned()
                    } else {
                        k.to_string()
                    }
                })
                .unwrap_or_default();
            (n["user"].as_str().unwrap_or("").to_owned(), what)
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("cy".to_owned(), "prompt".to_owned()),
            ("ada".to_owned(), "permission".to_owned()),
            ("ada".to_owned(), "prompt".to_owned()),
            ("ada".to_owned(), "prompt".to_owned()),
            ("cy".to_owned(), "cancel".to_owned()),
        ],
        "{notes:?}"
    );
}

#[test]
fn serve_users_every_replica_shows_the_author_of_a_prompt_sent_to_another() {
    let Some(url) = crate::replicas::database("users_replicas") else {
        return;
    };
    let dir = TempDir::new("serve-users-replicas");
    let users = team(&dir);
    let start = |id: &str| {
        start_serve(
            Path::new(&url),
            &[
                "--replica-id",
                id,
                "--lease-ttl",
                "4",
                "--protocol",
                "1",
                "--users",
                users.to_str().unwrap(),
            ],
            &reference_agent(0),
            None,
            &[],
        )
    };
    let a = start("a");
    let b = start("b");
    let created = json_of(&call(&a, "POST", "/api/sessions", Some(ADMIN), Some("{}")));
    let session = created["id"].as_i64().unwrap();
    // A runs the session (its agent starts with the first prompt there).
    let prompt = json!({ "text": "first, from ada on a" }).to_string();
    let sent = call(
        &a,
        "POST",
        &format!("/api/sessions/{session}/prompt"),
        Some(ADMIN),
        Some(&prompt),
    );
    assert_eq!(sent.status, 202, "{}", sent.body);
    wait_transcript_as(&a, session, OBSERVER, |t| {
        t["state"]["turnOpen"] == false && entries_of(t, "user_message").len() == 1
    });
    // cy sends the next one to B, which forwards it to A with its author.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let prompt = json!({ "text": "second, from cy on b" }).to_string();
        let sent = call(
            &b,
            "POST",
            &format!("/api/sessions/{session}/prompt"),
            Some(CONTROLLER),
            Some(&prompt),
        );
        if sent.status == 202 {
            break;
        }
        // B learns of the session from the log.
        assert!(
            Instant::now() < deadline,
            "B never took the prompt: {} {}",
            sent.status,
            sent.body
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let authors = |t: &Value| -> Vec<(String, String)> {
        entries_of(t, "user_message")
            .iter()
            .map(|e| {
                (
                    e["text"].as_str().unwrap_or("").to_owned(),
                    e["author"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    let expected = vec![
        ("first, from ada on a".to_owned(), "ada".to_owned()),
        ("second, from cy on b".to_owned(), "cy".to_owned()),
    ];
    for replica in [&a, &b] {
        wait_transcript_as(replica, session, OBSERVER, |t| authors(t) == expected);
    }
}
