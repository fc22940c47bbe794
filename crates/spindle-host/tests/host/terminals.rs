//! Terminals: real processes, output limits, exit status, kills.

use std::time::Duration;

use serde_json::{Value, json};
use spindle_host::{FsPolicy, HostEvent};

use crate::support::{Fixture, assert_error, process_alive};

/// Creates a terminal in session `s`: its id.
async fn create(f: &Fixture, params: Value) -> String {
    let mut params = params;
    params["sessionId"] = params.get("sessionId").cloned().unwrap_or(json!("s"));
    let result = f.ok("terminal/create", params).await;
    result["terminalId"].as_str().unwrap().to_owned()
}

async fn call(f: &Fixture, method: &str, session: &str, id: &str) -> Value {
    f.ok(method, json!({"sessionId": session, "terminalId": id}))
        .await
}

/// Polls `terminal/output` until it satisfies `done` (bounded: a test that
/// never gets there fails instead of hanging).
async fn output_until(f: &Fixture, id: &str, done: impl Fn(&str) -> bool) -> String {
    for _ in 0..2000 {
        let out = call(f, "terminal/output", "s", id).await;
        let text = out["output"].as_str().unwrap().to_owned();
        if done(&text) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("terminal {id}: output never got there")
}

/// Waits until the process is gone (bounded).
async fn assert_gone(pid: u32) {
    for _ in 0..2000 {
        if !process_alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} still runs");
}

/// The pids a `echo $$ $!`-style first line printed.
fn pids(line: &str) -> Vec<u32> {
    line.split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

#[tokio::test]
async fn commands_run_with_args_env_cwd_and_report_their_exit() {
    let f = Fixture::new(FsPolicy::Ask);
    std::fs::create_dir_all(f.ws_path("sub dir")).unwrap();
    let cases = [
        (
            json!({"command": "printf", "args": ["%s|%s", "a b", "c"]}),
            "a b|c",
            json!({"exitCode": 0, "signal": null}),
        ),
        (
            json!({"command": "sh", "args": ["-c", "printf %s \"$FOO\"; exit 3"], "env": [{"name": "FOO", "value": "bar baz"}]}),
            "bar baz",
            json!({"exitCode": 3, "signal": null}),
        ),
        (
            json!({"command": "sh", "args": ["-c", "kill -TERM $$"]}),
            "",
            json!({"exitCode": null, "signal": "SIGTERM"}),
        ),
        (
            json!({"command": "sh", "args": ["-c", "echo out; echo err >&2; echo out2"]}),
            "out\nerr\nout2\n",
            json!({"exitCode": 0, "signal": null}),
        ),
        // A whole command line without args runs through /bin/sh -c.
        (
            json!({"command": "echo hi | tr a-z A-Z"}),
            "HI\n",
            json!({"exitCode": 0, "signal": null}),
        ),
        (
            json!({"command": "pwd", "cwd": f.ws("sub dir")}),
            &format!("{}\n", f.ws("sub dir")),
            json!({"exitCode": 0, "signal": null}),
        ),
        (
            json!({"command": "pwd", "cwd": "sub dir"}),
            &format!("{}\n", f.ws("sub dir")),
            json!({"exitCode": 0, "signal": null}),
        ),
        (
            json!({"command": "pwd"}),
            &format!("{}\n", f.ws("").trim_end_matches('/')),
            json!({"exitCode": 0, "signal": null}),
        ),
    ];
    for (params, want_output, want_exit) in cases {
        let id = create(&f, params.clone()).await;
        let exit = call(&f, "terminal/wait_for_exit", "s", &id).await;
        assert_eq!(exit, want_exit, "{params}");
        let out = call(&f, "terminal/output", "s", &id).await;
        assert_eq!(
            out,
            json!({"output": want_output, "truncated": false, "exitStatus": want_exit}),
            "{params}"
        );
        // Waiting again answers at once.
        assert_eq!(
            call(&f, "terminal/wait_for_exit", "s", &id).await,
            want_exit
        );
        assert_eq!(call(&f, "terminal/release", "s", &id).await, json!({}));
    }
}

#[tokio::test]
async fn live_output_comes_as_events_then_the_exit() {
    let mut f = Fixture::new(FsPolicy::Ask);
    let id = create(
        &f,
        json!({"command": "sh", "args": ["-c", "printf 'a€'; printf 'b\\n'; exit 1"]}),
    )
    .await;
    call(&f, "terminal/wait_for_exit", "s", &id).await;
    let mut text = String::new();
    loop {
        match f.events.recv().await.unwrap() {
            HostEvent::TerminalOutput {
                session_id,
                terminal_id,
                text: t,
            } => {
                assert_eq!(
                    (session_id.as_str(), terminal_id.as_str()),
                    ("s", id.as_str())
                );
                text.push_str(&t);
            }
            HostEvent::TerminalExited {
                session_id,
                terminal_id,
                exit_code,
                signal,
            } => {
                assert_eq!(
                    (session_id.as_str(), terminal_id.as_str()),
                    ("s", id.as_str())
                );
                assert_eq!((exit_code, signal), (Some(1), None));
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(text, "a€b\n");
    let exit_line = HostEvent::TerminalExited {
        session_id: "s".into(),
        terminal_id: id.clone(),
        exit_code: None,
        signal: Some("SIGKILL".into()),
    }
    .to_local_line();
    assert_eq!(
        exit_line,
        format!(
            r#"{{"local":{{"terminalExit":{{"sessionId":"s","terminalId":"{id}","exitCode":null,"signal":"SIGKILL"}}}}}}"#
        )
    );
}

#[tokio::test]
async fn the_output_limit_keeps_the_tail_at_a_character_boundary() {
    let f = Fixture::new(FsPolicy::Ask);
    // a (1 byte) é (2) € (3) 😀 (4): the last 5 bytes start inside "€".
    let cases = [
        (5, "😀", true),
        (7, "€😀", true),
        (8, "€😀", true),
        (9, "é€😀", true),
        (10, "aé€😀", false),
        (0, "", true),
    ];
    for (limit, want, truncated) in cases {
        let id = create(
            &f,
            json!({"command": "printf", "args": ["aé€😀"], "outputByteLimit": limit}),
        )
        .await;
        call(&f, "terminal/wait_for_exit", "s", &id).await;
        let out = call(&f, "terminal/output", "s", &id).await;
        assert_eq!(out["output"], want, "limit {limit}");
        assert_eq!(out["truncated"], truncated, "limit {limit}");
    }
    // A long stream keeps only its tail.
    let id = create(&f, json!({"command": "sh", "args": ["-c", "i=0; while [ $i -lt 2000 ]; do echo \"line $i é\"; i=$((i+1)); done"], "outputByteLimit": 100})).await;
    call(&f, "terminal/wait_for_exit", "s", &id).await;
    let out = call(&f, "terminal/output", "s", &id).await;
    let text = out["output"].as_str().unwrap();
    assert!(
        text.len() <= 100 && text.ends_with("line 1999 é\n"),
        "{text:?}"
    );
    assert_eq!(out["truncated"], true);
}

#[tokio::test]
async fn kill_ends_the_whole_group_and_the_terminal_stays_until_released() {
    let f = Fixture::new(FsPolicy::Ask);
    let id = create(
        &f,
        json!({"command": "sh", "args": ["-c", "sleep 1000 & echo $$ $!; wait"]}),
    )
    .await;
    let first = output_until(&f, &id, |t| t.ends_with('\n')).await;
    let pids = pids(&first);
    assert!(pids.iter().all(|&p| process_alive(p)));
    let out = call(&f, "terminal/output", "s", &id).await;
    assert!(out.get("exitStatus").is_none(), "{out}");
    assert_eq!(call(&f, "terminal/kill", "s", &id).await, json!({}));
    let exit = call(&f, "terminal/wait_for_exit", "s", &id).await;
    assert_eq!(exit, json!({"exitCode": null, "signal": "SIGKILL"}));
    for pid in pids {
        assert_gone(pid).await;
    }
    let out = call(&f, "terminal/output", "s", &id).await;
    assert_eq!(out["output"], first);
    assert_eq!(out["exitStatus"]["signal"], "SIGKILL");
    call(&f, "terminal/release", "s", &id).await;
    let e = f
        .err(
            "terminal/output",
            json!({"sessionId": "s", "terminalId": id}),
        )
        .await;
    assert_error(&e, -32002, "never created, or released");
    // The released terminal is named in `data`, beside the reason.
    let data: serde_json::Value =
        serde_json::from_str(e.data.as_ref().expect("data").get()).unwrap();
    assert_eq!(data["terminalId"], json!(id), "{data}");
}

#[tokio::test]
async fn release_kills_a_running_command() {
    let f = Fixture::new(FsPolicy::Ask);
    let id = create(
        &f,
        json!({"command": "sh", "args": ["-c", "echo $$; exec sleep 1000"]}),
    )
    .await;
    let pid = pids(&output_until(&f, &id, |t| t.ends_with('\n')).await)[0];
    call(&f, "terminal/release", "s", &id).await;
    assert_gone(pid).await;
}

#[tokio::test]
async fn a_command_that_never_exits_is_killed_by_kill_session_terminals() {
    let f = Fixture::new(FsPolicy::Ask);
    let id = create(&f, json!({"command": "sh", "args": ["-c", "trap '' TERM INT HUP; sleep 1000 & echo $$ $!; while :; do sleep 1; done"]})).await;
    let other = create(
        &f,
        json!({"sessionId": "other", "command": "sh", "args": ["-c", "echo $$; exec sleep 1000"]}),
    )
    .await;
    let pids = pids(&output_until(&f, &id, |t| t.ends_with('\n')).await);
    let other_pid = loop {
        let out = call(&f, "terminal/output", "other", &other).await;
        if let Some(line) = out["output"].as_str().filter(|t| t.ends_with('\n')) {
            break line.trim().parse::<u32>().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    f.host.kill_session_terminals("s").await;
    // The leader was reaped before kill_session_terminals returned.
    assert!(!process_alive(pids[0]));
    for pid in &pids {
        assert_gone(*pid).await;
    }
    let out = call(&f, "terminal/output", "s", &id).await;
    assert_eq!(out["exitStatus"]["signal"], "SIGKILL");
    // Another session's terminal runs on, until shutdown.
    assert!(process_alive(other_pid));
    f.host.shutdown().await;
    assert!(!process_alive(other_pid));
    let e = f
        .err(
            "terminal/output",
            json!({"sessionId": "other", "terminalId": other}),
        )
        .await;
    assert_error(&e, -32002, "never created, or released");
}

#[tokio::test]
async fn dropping_the_last_host_kills_what_still_runs() {
    let f = Fixture::new(FsPolicy::Ask);
    let id = create(
        &f,
        json!({"command": "sh", "args": ["-c", "sleep 1000 & echo $$ $!; wait"]}),
    )
    .await;
    let pids = pids(&output_until(&f, &id, |t| t.ends_with('\n')).await);
    let Fixture {
        outer,
        host,
        events,
    } = f;
    let clone = host.clone();
    drop(host);
    assert!(
        pids.iter().all(|&p| process_alive(p)),
        "a clone still holds the host"
    );
    drop(clone);
    drop(events);
    for pid in pids {
        assert_gone(pid).await;
    }
    drop(outer);
}

#[tokio::test]
async fn terminal_errors_are_clear() {
    let f = Fixture::new(FsPolicy::Ask);
    let id = create(&f, json!({"command": "true"})).await;
    let cases = [
        (
            "terminal/create",
            json!({"sessionId": "s"}),
            -32602,
            "command is required",
        ),
        (
            "terminal/create",
            json!({"sessionId": "s", "command": " "}),
            -32602,
            "command is empty",
        ),
        (
            "terminal/create",
            json!({"sessionId": "s", "command": "ls", "args": [1]}),
            -32602,
            "args must be an array of strings",
        ),
        (
            "terminal/create",
            json!({"sessionId": "s", "command": "ls", "env": [{"name": "A"}]}),
            -32602,
            "env must be an array of {name, value}",
        ),
        (
            "terminal/create",
            json!({"sessionId": "s", "command": "ls", "env": [{"name": "A=B", "value": "x"}]}),
            -32602,
            "env must be",
        ),
        (
            "terminal/create",
            json!({"sessionId": "s", "command": "ls", "outputByteLimit": -1}),
            -32602,
            "outputByteLimit must be",
        ),
        (
            "terminal/create",
            json!({"sessionId": "s", "command": "ls", "cwd": 5}),
            -32602,
            "cwd must be a string",
        ),
        (
            "terminal/create",
            json!({"sessionId": "s", "command": "ls", "cwd": "missing"}),
            -32002,
            "no such file",
        ),
        (
            "terminal/create",
            json!({"sessionId": "s", "command": "no-such-command-spindle"}),
            -32603,
            "could not start \"no-such-command-spindle\"",
        ),
        (
            "terminal/output",
            json!({"sessionId": "s"}),
            -32602,
            "terminalId is required",
        ),
        (
            "terminal/output",
            json!({"sessionId": "s", "terminalId": "term-999"}),
            -32002,
            "no terminal \"term-999\" in session \"s\"",
        ),
        (
            "terminal/wait_for_exit",
            json!({"sessionId": "s", "terminalId": "nope"}),
            -32002,
            "never created",
        ),
        (
            "terminal/kill",
            json!({"sessionId": "s", "terminalId": "nope"}),
            -32002,
            "never created",
        ),
        (
            "terminal/release",
            json!({"sessionId": "s", "terminalId": "nope"}),
            -32002,
            "never created",
        ),
        // Another session's terminal is not reachable.
        (
            "terminal/output",
            json!({"sessionId": "t", "terminalId": id.clone()}),
            -32002,
            "in session \"t\"",
        ),
    ];
    for (method, params, code, needle) in cases {
        let e = f.err(method, params.clone()).await;
        assert_error(&e, code, needle);
    }
    let off = Fixture::with(|c| c.terminals = false);
    let e = off
        .err(
            "terminal/create",
            json!({"sessionId": "s", "command": "true"}),
        )
        .await;
    assert_error(&e, -32601, "terminals are off");
    let e = off
        .err(
            "terminal/output",
            json!({"sessionId": "s", "terminalId": "term-1"}),
        )
        .await;
    assert_error(&e, -32601, "terminals are off");
    let limited = Fixture::with(|c| c.limits.max_terminals = 1);
    create(&limited, json!({"command": "true"})).await;
    let e = limited
        .err(
            "terminal/create",
            json!({"sessionId": "s", "command": "true"}),
        )
        .await;
    assert_error(&e, -32603, "1 terminals are open");
}

#[tokio::test]
async fn live_output_past_the_display_limit_ends_with_one_notice() {
    let mut f = Fixture::with(|c| c.limits.max_display_output_bytes = 1000);
    let id = create(
        &f,
        json!({"command": "sh", "args": ["-c", "i=0; while [ $i -lt 500 ]; do echo \"line $i\"; i=$((i+1)); done"]}),
    )
    .await;
    call(&f, "terminal/wait_for_exit", "s", &id).await;
    let mut shown = String::new();
    loop {
        match f.events.recv().await.unwrap() {
            HostEvent::TerminalOutput { text, .. } => shown.push_str(&text),
            HostEvent::TerminalExited { .. } => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(shown.starts_with("line 0\nline 1\n"));
    assert_eq!(shown.matches("the rest is not shown").count(), 1, "{shown}");
    let (before, _) = shown.split_once("\n[spindle: more output").unwrap();
    assert_eq!(before.len(), 1000);
    assert!(!shown.contains("line 499"));
    // The agent's output is not limited by the display.
    let out = call(&f, "terminal/output", "s", &id).await;
    assert!(out["output"].as_str().unwrap().ends_with("line 499\n"));
}

#[tokio::test]
async fn a_background_process_left_by_the_command_is_killed_on_release() {
    let f = Fixture::new(FsPolicy::Ask);
    // The shell exits at once; its background child keeps the output pipe open.
    let id = create(
        &f,
        json!({"command": "sh", "args": ["-c", "sleep 1000 & echo $!"]}),
    )
    .await;
    let exit = call(&f, "terminal/wait_for_exit", "s", &id).await;
    assert_eq!(exit, json!({"exitCode": 0, "signal": null}));
    let out = call(&f, "terminal/output", "s", &id).await;
    let pid: u32 = out["output"].as_str().unwrap().trim().parse().unwrap();
    assert!(
        process_alive(pid),
        "the background process runs on after the exit"
    );
    call(&f, "terminal/release", "s", &id).await;
    assert_gone(pid).await;
}
