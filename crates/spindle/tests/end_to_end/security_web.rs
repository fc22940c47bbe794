//! A hostile network and a hostile agent against the real `spindle serve`:
//! DNS rebinding (Host), cross-origin reads and writes (Origin), paths that
//! try to reach files, the token on a non-loopback bind, agent content built
//! to break out of JSON, SSE or HTML, and permission requests nobody answered.
//! (The web tests in `serve_http.rs` cover the basic case of each; these add
//! the variants an attacker would try.)

use crate::harness;
use crate::serve_support;

use std::time::Duration;

use harness::{TempDir, require_python, wait_for};
use serde_json::{Value, json};
use serve_support::{
    Response, Served, entry_texts, http, reference_agent, serve_fake_agent, serve_from,
    start_serve, transcript, wait_transcript,
};

const PATIENCE: Duration = Duration::from_secs(60);

fn get(served: &Served, path: &str, headers: &[(&str, &str)]) -> Response {
    http(served.addr, "GET", path, headers, None)
}

fn assert_security_headers(response: &Response, what: &str) {
    let csp = response
        .header("content-security-policy")
        .unwrap_or_else(|| panic!("{what}: no CSP"));
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{what}: {csp}"
    );
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
    assert_eq!(
        response.header("x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
}

#[test]
fn security_web_dns_rebinding_hosts_are_refused_and_loopback_names_accepted() {
    let dir = TempDir::new("sec-host");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let port = served.addr.port();
    for good in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let response = get(&served, "/api/sessions", &[("Host", &good)]);
        assert_eq!(response.status, 200, "Host {good}");
    }
    for bad in [
        "attacker.example".to_string(),
        format!("attacker.example:{port}"),
        format!("localhost.attacker.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        format!("127.0.0.1:{port}.attacker.example"),
        format!("127.0.0.1:{port}@attacker.example"),
        format!("localhost.:{port}"),
        format!("2130706433:{port}"),
        format!("0x7f000001:{port}"),
        format!("0.0.0.0:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        "127.0.0.1".to_string(),
        "localhost".to_string(),
        String::new(),
    ] {
        for path in ["/", "/api/sessions", "/api/sessions/1/events", "/app.js"] {
            let response = get(&served, path, &[("Host", &bad)]);
            assert!(
                response.status == 421 || response.status == 400,
                "Host {bad:?} on {path}: {}",
                response.status
            );
            assert!(
                !response.body.contains("sessions"),
                "{bad:?}: {}",
                response.body
            );
            assert_security_headers(&response, &format!("refusal for Host {bad:?}"));
        }
    }
    // HTTP/1.0 without any Host header.
    let response = get(&served, "/api/sessions", &[]);
    assert_eq!(response.status, 400);
    served.stop();
}

#[test]
fn security_web_foreign_origins_are_refused_on_reads_streams_and_writes() {
    let dir = TempDir::new("sec-origin");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let host = served.host();
    let port = served.addr.port();
    let session = served.create_session();
    let own = format!("http://127.0.0.1:{port}");
    let ok = get(
        &served,
        "/api/sessions",
        &[("Host", &host), ("Origin", &own)],
    );
    assert_eq!(ok.status, 200);
    let events = format!("/api/sessions/{session}/events");
    let prompt = format!("/api/sessions/{session}/prompt");
    let cancel = format!("/api/sessions/{session}/cancel");
    let itself = format!("/api/sessions/{session}");
    for origin in [
        "null".to_string(),
        "http://attacker.example".to_string(),
        format!("https://127.0.0.1:{port}"),
        format!("http://127.0.0.1:{port}.attacker.example"),
        format!("http://localhost:{port}@attacker.example"),
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
        "file://".to_string(),
        String::new(),
    ] {
        for (method, path) in [
            ("GET", "/api/sessions"),
            ("GET", events.as_str()),
            ("GET", "/api/sessions/1/transcript"),
            ("POST", prompt.as_str()),
            ("POST", cancel.as_str()),
            ("POST", "/api/sessions"),
            ("PATCH", itself.as_str()),
            ("DELETE", itself.as_str()),
        ] {
            let body = (method == "POST" || method == "PATCH")
                .then_some("{\"text\":\"cross-site prompt\",\"title\":\"cross-site\"}");
            let response = http(
                served.addr,
                method,
                path,
                &[
                    ("Host", &host),
                    ("Origin", &origin),
                    ("Content-Type", "application/json"),
                ],
                body,
            );
            assert_eq!(response.status, 403, "Origin {origin:?} {method} {path}");
        }
    }
    // Fetch metadata: a cross-site request without Origin (e.g. a navigation).
    let response = get(
        &served,
        &events,
        &[("Host", &host), ("Sec-Fetch-Site", "cross-site")],
    );
    assert_eq!(response.status, 403);
    // A simple cross-site form post cannot be JSON.
    for content_type in [
        "text/plain",
        "multipart/form-data; boundary=x",
        "application/jsonx",
    ] {
        let response = http(
            served.addr,
            "POST",
            &prompt,
            &[("Host", &host), ("Content-Type", content_type)],
            Some("{\"text\":\"form prompt\"}"),
        );
        assert_eq!(response.status, 415, "{content_type}");
    }
    // None of the refused calls reached the session: not renamed, not deleted, no prompt.
    let listed = served.get_json("/api/sessions");
    assert_eq!(listed["sessions"][0]["title"], "", "{listed}");
    let users = entry_texts(&transcript(&served, session), "user_message");
    assert!(users.is_empty(), "{users:?}");
    served.stop();
}

#[test]
fn security_web_path_traversal_and_odd_paths_never_reach_files() {
    let dir = TempDir::new("sec-paths");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let host = served.host();
    for path in [
        "/..%2f..%2f..%2fetc%2fpasswd",
        "/%2e%2e%2f%2e%2e%2fetc/passwd",
        "/%252e%252e/%252e%252e/etc/passwd",
        "/..\\..\\etc\\passwd",
        "/..%5c..%5cetc%5cpasswd",
        "//etc/passwd",
        "/app.js%00.html",
        "/app.js/",
        "/app.js/../../../../etc/passwd",
        "/APP.JS",
        "/api/sessions/1/../../../../etc/passwd",
        "/api/../../etc/passwd",
        "/assets/index.html",
        "/src/lib.rs",
        "/Cargo.toml",
        "/.git/config",
        "/db.sqlite",
        "/%2fetc%2fpasswd",
        "/.%2e/.%2e/etc/passwd",
        "/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
    ] {
        let response = get(&served, path, &[("Host", &host)]);
        assert!(
            response.status == 404 || response.status == 400,
            "{path}: {}",
            response.status
        );
        for leak in ["root:", "[package]", "[core]", "SQLite format", "fn "] {
            assert!(!response.body.contains(leak), "{path} leaked {leak:?}");
        }
        assert_security_headers(&response, path);
    }
    // A refusal never echoes request content (F5), and stays inert: not HTML, nosniff.
    let response = get(
        &served,
        "/api/sessions/%3Cscript%3Ealert(1)%3C%2Fscript%3E/replies",
        &[("Host", &host)],
    );
    assert_eq!(response.status, 400);
    assert!(
        response
            .header("content-type")
            .is_some_and(|t| !t.contains("html")),
        "{:?}",
        response.headers
    );
    assert_security_headers(&response, "echoing 400");
    served.stop();
}

#[test]
fn security_web_non_loopback_bind_needs_a_token_and_every_route_checks_it() {
    let dir = TempDir::new("sec-token");
    // Refused without a token, also with an empty one.
    for token in [None, Some("")] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_spindle"));
        command.args(["serve", "--bind", "0.0.0.0:0", "--db"]);
        command.arg(dir.join("refused.sqlite"));
        if let Some(t) = token {
            command.args(["--token", t]);
        }
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "token {token:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--token"));
        assert!(!dir.join("refused.sqlite").exists());
    }
    let token = "k9-Zx_long-enough-token";
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_spindle"));
    command
        .args(["serve", "--bind", "0.0.0.0:0", "--token", token, "--db"])
        .arg(dir.join("db.sqlite"))
        .stderr(std::process::Stdio::null())
        .arg("--")
        .args(reference_agent(0));
    let mut served = serve_from(command);
    // Reach it over loopback, naming an allowed host.
    served.addr = format!("127.0.0.1:{}", served.addr.port()).parse().unwrap();
    let host = served.host();
    let bearer = format!("Bearer {token}");
    let cookie = format!("spindle_token={token}");
    let created = http(
        served.addr,
        "POST",
        "/api/sessions",
        &[
            ("Host", &host),
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        Some("{}"),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let session: Value = serde_json::from_str(&created.body).unwrap();
    let id = session["id"].as_i64().unwrap();
    let paths = [
        "/".to_string(),
        "/app.js".to_string(),
        "/api/sessions".to_string(),
        format!("/api/sessions/{id}/events"),
        format!("/api/sessions/{id}/transcript"),
        format!("/api/sessions/{id}/replies"),
        format!("/api/sessions/{id}/stats"),
    ];
    let wrong_cookie = format!("spindle_token={token}x; other={token}");
    let wrong_bearer = format!("Bearer {}", &token[..token.len() - 1]);
    let lower_bearer = format!("bearer{token}");
    // The good cookie first: after 10 wrong tokens this address waits a minute (429).
    for path in paths.iter().filter(|path| !path.ends_with("/events")) {
        let response = get(&served, path, &[("Host", &host), ("Cookie", &cookie)]);
        assert_ne!(response.status, 401, "{path} with the cookie");
    }
    // The agent commands are fixed at start (a request names an agent by id only): a command
    // in a session request changes nothing.
    let sneaky = http(
        served.addr,
        "POST",
        "/api/sessions",
        &[
            ("Host", &host),
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        Some(r#"{"agent":["sh","-c","touch /tmp/spindle-pwned"],"command":"sh","cwd":"/"}"#),
    );
    assert!(
        sneaky.status == 201 || sneaky.status == 400,
        "{}",
        sneaky.status
    );
    for path in &paths {
        for headers in [
            vec![("Host", host.as_str())],
            vec![
                ("Host", host.as_str()),
                ("Authorization", wrong_bearer.as_str()),
            ],
            vec![
                ("Host", host.as_str()),
                ("Authorization", lower_bearer.as_str()),
            ],
            vec![("Host", host.as_str()), ("Cookie", wrong_cookie.as_str())],
            vec![("Host", host.as_str()), ("Authorization", token)],
        ] {
            let response = get(&served, path, &headers);
            // Refused either way: 401, or 429 once this address has sent 10 wrong tokens.
            assert!(
                [401, 429].contains(&response.status),
                "{path} with {headers:?}: {}",
                response.status
            );
            assert!(!response.body.contains(token));
        }
        // The query-string token is only a bootstrap for the page, not an API key.
        if path != "/" {
            let with_query = format!("{path}?token={token}");
            let response = get(&served, &with_query, &[("Host", &host)]);
            assert_eq!(response.status, 401, "{with_query}");
        }
    }
    // Even with the token, a rebinding Host or foreign Origin is refused.
    let response = get(
        &served,
        "/api/sessions",
        &[("Host", "attacker.example"), ("Authorization", &bearer)],
    );
    assert_eq!(response.status, 421);
    let response = get(
        &served,
        "/api/sessions",
        &[
            ("Host", &host),
            ("Authorization", &bearer),
            ("Origin", "http://attacker.example"),
        ],
    );
    assert_eq!(response.status, 403);
    served.stop();
}

#[test]
fn security_web_hostile_agent_content_is_stored_verbatim_and_served_inert() {
    let dir = TempDir::new("sec-hostile");
    // A chunk built to end the SSE event early and forge one, and markup.
    let injection = "one\n\nevent: reset\ndata: {\"ops\":[]}\nid: 99999999\nretry: 1\r\n\r\ndata: forged\n\n</script><script>alert(document.cookie)</script>\u{2028}\u{2029}";
    let script = dir.join("inject.jsonl");
    std::fs::write(
        &script,
        format!(
            "{{\"wait_for_prompt\":true}}\n{}\n{{\"end_turn\":\"end_turn\"}}\n",
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "msg_inject",
                "content": {"type": "text", "text": injection}})
        ),
    )
    .unwrap();
    let mut agent = reference_agent(0);
    agent.extend([
        "--script".into(),
        script.clone().into(),
        "--no-script-sleep".into(),
    ]);
    let served = start_serve(&dir.join("db.sqlite"), &[], &agent, None, &[]);
    let session = served.create_session();
    let mut reader = served.sse(session, None);
    served.prompt(session, "inject");
    // Read the stream until the injected reply is complete; every frame must
    // be a well-formed ops/reset event with JSON data (the reader panics on
    // non-JSON data), and no forged id or event name may appear.
    let mut view = serve_support::TextView::default();
    let mut ids = Vec::new();
    loop {
        let event = reader.next_event().expect("stream ended early");
        assert!(
            event.event == "ops" || event.event == "reset",
            "forged event {:?}",
            event.event
        );
        assert_ne!(event.id, "99999999", "forged id");
        ids.push(event.id.clone());
        view.apply_event(&event);
        if view
            .texts_of("agent_message")
            .iter()
            .any(|t| t == injection)
        {
            break;
        }
    }
    let t = transcript(&served, session);
    assert!(
        entry_texts(&t, "agent_message").contains(&injection.to_string()),
        "stored verbatim: {t:#}"
    );
    // Served as JSON with the security headers, never as HTML.
    let response = get(
        &served,
        &format!("/api/sessions/{session}/transcript"),
        &[("Host", &served.host())],
    );
    assert!(
        response
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
    );
    assert_security_headers(&response, "transcript");
    // Then the reference agent's own hostile scenario (markup, javascript:
    // links, ANSI, bidi overrides, NUL, a 1 MiB chunk).
    served.prompt(session, "/scenario hostile");
    let t = wait_transcript(&served, session, "the hostile reply", |t| {
        entry_texts(t, "agent_message")
            .iter()
            .any(|m| m.ends_with("End of hostile input."))
    });
    let reply = entry_texts(&t, "agent_message")
        .into_iter()
        .find(|m| m.ends_with("End of hostile input."))
        .unwrap();
    assert!(reply.contains("<script>alert('xss')</script>"));
    assert!(reply.contains("[click me](javascript:alert(1))"));
    assert!(reply.len() > 1 << 20);
    // The page itself runs no inline script (everything goes through the CSP'd files).
    let page = get(&served, "/", &[("Host", &served.host())]);
    assert_security_headers(&page, "page");
    let inline_scripts = page
        .body
        .match_indices("<script")
        .filter(|(i, _)| !page.body[*i..].starts_with("<script src="))
        .count();
    assert_eq!(inline_scripts, 0, "inline script in the page");
    served.stop();
}

fn log_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn response_to(log: &[Value], id: u64) -> Option<Value> {
    log.iter()
        .find(|m| m["id"] == id && m.get("method").is_none())
        .cloned()
}

#[test]
fn security_web_permission_requests_wait_for_the_user_and_cancel_is_never_approval() {
    if !require_python() {
        return;
    }
    let dir = TempDir::new("sec-permission");
    let log = dir.join("agent.log");
    let log_text = log.to_string_lossy().into_owned();
    let served = serve_fake_agent(&dir, "permission", None, &[("FAKE_AGENT_LOG", &log_text)]);
    let session = served.create_session();
    let permission_path = format!("/api/sessions/{session}/permission");

    // Turn 1: nobody answers. Observers come and go; nothing approves.
    let mut reader = served.sse(session, None);
    served.prompt(session, "delete it");
    let key = loop {
        let event = reader.next_event().expect("stream ended early");
        if let Some(op) = event
            .ops()
            .into_iter()
            .find(|op| op["op"] == "web_permission")
            && let Some(key) = op["key"].as_str()
        {
            break key.to_string();
        }
    };
    drop(reader);
    for _ in 0..3 {
        let mut again = served.sse(session, None);
        let _ = again.next_event();
    }
    assert_eq!(
        response_to(&log_lines(&log), 501),
        None,
        "answered by itself"
    );
    // An option that was not offered is refused, not forwarded.
    for body in [
        json!({"key": key, "optionId": "allow_always"}),
        json!({"key": key, "optionId": ""}),
        json!({"key": "999", "optionId": "allow"}),
    ] {
        let response = served.post_json(&permission_path, &body.to_string());
        assert!(
            (400..500).contains(&response.status),
            "{body}: {}",
            response.status
        );
    }
    assert_eq!(response_to(&log_lines(&log), 501), None);
    // Cancelling the turn answers the request as cancelled, never selected.
    let response = served.post_json(&format!("/api/sessions/{session}/cancel"), "{}");
    assert_eq!(response.status, 200);
    let answer = wait_for(PATIENCE, "the cancelled answer", || {
        response_to(&log_lines(&log), 501)
    });
    assert_eq!(
        answer["result"]["outcome"]["outcome"], "cancelled",
        "{answer}"
    );
    // The fake agent logs every line it reads, in order, so an answer the
    // server had sent earlier (by itself while observers came and went, or a
    // refused option forwarded anyway) is in the log before this one: the
    // cancel's answer must be the only one.
    let answers: Vec<Value> = log_lines(&log)
        .into_iter()
        .filter(|m| m["id"] == 501 && m.get("method").is_none())
        .collect();
    assert_eq!(answers.len(), 1, "answered before the cancel: {answers:#?}");
    served.wait_finished_turns(session, 1);

    // Turn 2: the user's explicit choice is what the agent gets.
    served.prompt(session, "delete it again");
    let key = "502";
    // Post until the question is open (409 before it arrives), then wait for the agent's log
    // separately: once answered, later posts get 409 too, and the agent may log a moment later.
    wait_for(PATIENCE, "the permission question to open", || {
        let response = served.post_json(
            &permission_path,
            &json!({"key": key, "optionId": "reject"}).to_string(),
        );
        (response.status == 200).then_some(())
    });
    let answer = wait_for(PATIENCE, "the user's answer to reach the agent", || {
        response_to(&log_lines(&log), 502)
    });
    assert_eq!(
        answer["result"]["outcome"],
        json!({"outcome": "selected", "optionId": "reject"})
    );
    // The agent ends turn 2 after logging the answer; a v1 agent takes one prompt at a time.
    served.wait_finished_turns(session, 2);

    // Turn 3: the server stops while the request is open: no approval.
    let mut reader = served.sse(session, None);
    served.prompt(session, "and once more");
    wait_for(PATIENCE, "the third prompt to reach the agent", || {
        log_lines(&log)
            .iter()
            .any(|m| m["params"]["prompt"][0]["text"] == "and once more")
            .then_some(())
    });
    loop {
        let event = reader
            .next_event()
            .expect("stream ended before the third question");
        if event
            .ops()
            .iter()
            .any(|op| op["op"] == "web_permission" && op["key"] == "503")
        {
            break;
        }
    }
    drop(reader);
    served.stop();
    std::thread::sleep(Duration::from_millis(200));
    if let Some(answer) = response_to(&log_lines(&log), 503) {
        assert_ne!(
            answer["result"]["outcome"]["outcome"], "selected",
            "{answer}"
        );
    }
}

#[test]
fn security_web_f5_refusals_never_echo_request_content() {
    let dir = TempDir::new("sec-f5");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let host = served.host();
    let marker = "QXJ7marker";
    let hostile = format!("%3Cscript%3Ealert({marker})%3C%2Fscript%3E");
    for route in ["replies", "transcript", "stats", "events"] {
        let path = format!("/api/sessions/{hostile}/{route}");
        let response = get(&served, &path, &[("Host", &host)]);
        assert_eq!(response.status, 400, "{path}: {}", response.body);
        for echo in [marker, "script", "alert"] {
            assert!(!response.body.contains(echo), "{path}: {}", response.body);
        }
        assert_security_headers(&response, &path);
    }
    let session = served.create_session();
    let json_headers = [
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
    ];
    for (route, body) in [
        ("prompt", format!("{{\"text\": \"{marker}")),
        ("prompt", format!("{{\"text\": 5, \"{marker}\": 1}}")),
        ("prompt", format!("{{\"text\": {{\"{marker}\": true}}}}")),
        ("permission", format!("{{\"key\": [\"{marker}\"]}}")),
        ("prompt", marker.to_string()),
    ] {
        let path = format!("/api/sessions/{session}/{route}");
        let response = http(served.addr, "POST", &path, &json_headers, Some(&body));
        assert!(
            (400..500).contains(&response.status),
            "{body}: {}",
            response.status
        );
        assert!(!response.body.contains(marker), "{body}: {}", response.body);
        assert_security_headers(&response, &body);
    }
    let path = format!("/api/sessions/{hostile}/prompt");
    let response = http(served.addr, "POST", &path, &json_headers, Some("{}"));
    assert_eq!(response.status, 400);
    assert!(!response.body.contains(marker), "{}", response.body);
    served.stop();
}

#[test]
fn security_web_f4_a_second_host_or_origin_and_foreign_absolute_targets_are_refused() {
    let dir = TempDir::new("sec-f4");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let host = served.host();
    let own = format!("http://{host}");
    let attacker = "attacker.example";
    for headers in [
        vec![("Host", host.as_str()), ("Host", attacker)],
        vec![("Host", attacker), ("Host", host.as_str())],
        vec![("Host", host.as_str()), ("Host", host.as_str())],
        vec![
            ("Host", host.as_str()),
            ("Origin", own.as_str()),
            ("Origin", "http://attacker.example"),
        ],
    ] {
        let response = get(&served, "/api/sessions", &headers);
        assert_eq!(response.status, 400, "{headers:?}: {}", response.body);
        assert!(!response.body.contains("sessions"), "{}", response.body);
        assert_security_headers(&response, "duplicate header");
    }
    for target in [
        "http://attacker.example/api/sessions".to_string(),
        format!(
            "http://attacker.example:{}/api/sessions",
            served.addr.port()
        ),
        format!("http://{host}@attacker.example/api/sessions"),
        format!("https://{host}/api/sessions"),
    ] {
        let response = get(&served, &target, &[("Host", &host)]);
        assert_eq!(response.status, 421, "{target}: {}", response.body);
        assert!(!response.body.contains("sessions"), "{}", response.body);
        assert_security_headers(&response, &target);
    }
    // The same absolute-form target with the server's own authority is served.
    let response = get(&served, &format!("{own}/api/sessions"), &[("Host", &host)]);
    assert_eq!(response.status, 200, "{}", response.body);
    served.stop();
}
