//! Faults against spindle-protocol's `AcpClient` holding a real agent child
//! process (what `spindle chat` is built on): garbage, a 100 MiB line, a crash.
//!
//! Its own test binary, apart from `end_to_end`: the 100 MiB test bounds the
//! peak RSS of the test process itself, which other tests running in the same
//! process would inflate.

#[path = "end_to_end/harness.rs"]
mod harness;

use std::ffi::OsString;
use std::time::Duration;

use harness::{TempDir, fake_agent_command, require_python};
use serde_json::json;
use spindle_protocol::{
    AcpClient, ChildExit, ClientEvent, ClientEvents, ClientOptions, SpawnOptions,
};

const PATIENCE: Duration = Duration::from_secs(60);

async fn next_event(events: &mut ClientEvents) -> ClientEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("the client went silent")
        .expect("events ended")
}

/// Collects events until the turn of `session` finishes.
async fn until_turn_finished(events: &mut ClientEvents) -> Vec<ClientEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next_event(events).await;
        let done = matches!(event, ClientEvent::TurnFinished { .. });
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn reply_text(events: &[ClientEvent], session: &str) -> String {
    let mut text = String::new();
    for event in events {
        if let ClientEvent::SessionUpdate { session_id, params } = event
            && &**session_id == session
        {
            let params: serde_json::Value = serde_json::from_str(params.get()).unwrap();
            let update = &params["update"];
            if update["sessionUpdate"] == "agent_message_chunk"
                && let Some(t) = update["content"]["text"].as_str()
            {
                text.push_str(t);
            }
        }
    }
    text
}

async fn start(agent: Vec<OsString>, env: Vec<(OsString, OsString)>) -> (AcpClient, ClientEvents) {
    let spawn = SpawnOptions {
        env,
        ..SpawnOptions::default()
    };
    let (client, events, _child) =
        AcpClient::spawn(&agent, spawn, ClientOptions::default()).expect("spawn the agent");
    client.initialize().await.expect("initialize");
    (client, events)
}

fn prompt_blocks(text: &str) -> serde_json::Value {
    json!([{"type": "text", "text": text}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_client_garbage_is_diagnosed_and_each_turn_finishes_once() {
    if !require_python() {
        return;
    }
    let dir = TempDir::new("client-garbage");
    let (client, mut events) = start(fake_agent_command(&dir, "garbage"), Vec::new()).await;
    let (session, _) = client.new_session("/", &json!([])).await.unwrap();
    let outcome = client
        .prompt(&session, &prompt_blocks("first"))
        .await
        .unwrap();
    assert_eq!(outcome.stop_reason.as_deref(), Some("end_turn"));
    let first = until_turn_finished(&mut events).await;
    assert_eq!(
        reply_text(&first, &session),
        "Before garbage. After garbage."
    );
    let diagnostics: Vec<&String> = first
        .iter()
        .filter_map(|e| match e {
            ClientEvent::Diagnostic { message } => Some(message),
            _ => None,
        })
        .collect();
    assert!(diagnostics.len() >= 4, "{diagnostics:#?}");
    let finished: Vec<_> = first
        .iter()
        .filter_map(|e| match e {
            ClientEvent::TurnFinished { stop_reason, .. } => Some(stop_reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, vec![Some("end_turn".to_string())]);
    // The intruder's update is not delivered as this session's.
    assert!(!reply_text(&first, &session).contains("INTRUDER"));
    let outcome = client
        .prompt(&session, &prompt_blocks("second"))
        .await
        .unwrap();
    assert_eq!(outcome.stop_reason.as_deref(), Some("end_turn"));
    let second = until_turn_finished(&mut events).await;
    assert!(
        reply_text(&second, &session).contains("Turn 2 reply."),
        "{second:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_client_agent_crash_mid_turn_is_reported_with_exit_status() {
    let (client, mut events) = start(harness::reference_agent_v1(), Vec::new()).await;
    let (session, _) = client.new_session("/", &json!([])).await.unwrap();
    let result = client
        .prompt(&session, &prompt_blocks("/scenario crash"))
        .await;
    assert!(
        result.is_err(),
        "the prompt fails when the agent dies: {result:?}"
    );
    let mut seen = Vec::new();
    let exit = loop {
        let event = next_event(&mut events).await;
        if let ClientEvent::AgentExited {
            status,
            stderr_tail,
        } = &event
        {
            break (status.clone(), stderr_tail.clone());
        }
        seen.push(event);
    };
    assert_eq!(
        reply_text(&seen, &session),
        "This turn will stop abruptly in the middle of a"
    );
    match exit.0 {
        Some(ChildExit::Exited(status)) => assert_eq!(status.code(), Some(3), "{exit:?}"),
        other => panic!("exit status not reported: {other:?}"),
    }
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("VmHWM:")
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_client_a_100_mib_line_is_skipped_and_the_turn_goes_on() {
    if !require_python() {
        return;
    }
    let dir = TempDir::new("client-bigline");
    let before = vm_hwm_kib();
    let (client, mut events) = start(
        fake_agent_command(&dir, "bigline"),
        vec![("FAKE_AGENT_BIG_MB".into(), "100".into())],
    )
    .await;
    let (session, _) = client.new_session("/", &json!([])).await.unwrap();
    let outcome = client
        .prompt(&session, &prompt_blocks("big"))
        .await
        .unwrap();
    assert_eq!(outcome.stop_reason.as_deref(), Some("end_turn"));
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(
        reply_text(&seen, &session),
        "Before the big line. After the big line."
    );
    assert!(
        seen.iter().any(|e| matches!(e, ClientEvent::Diagnostic { message } if message.contains("exceeds the maximum"))),
        "{seen:#?}"
    );
    let after = vm_hwm_kib();
    eprintln!("AcpClient with a 100 MiB agent line: test process peak RSS {before} -> {after} KiB");
    // Bounded by the connection's maximum line (64 MiB by default), not by
    // the line: the excess is skipped in pieces.
    assert!(after < 100 * 1024, "peak RSS {after} KiB");
}
