//! `--agent-idle-stop SECS`: an agent left idle is stopped (`session/close` first when it offers
//! it) and the next prompt starts it again, continuing its agent session (`session/resume` or `session/load`) as after a restart; a
//! turn still open, even a silent one, keeps its agent.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::serve_support::{PATIENCE, Served, start_serve, temp_dir, transcript};

const AGENT: &str = include_str!("serve_sessions_agent.py");

/// The requests the test agent received with `method` (their params), from its log.
fn received(log: &std::path::Path, method: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == method)
        .map(|m| m["params"].clone())
        .collect()
}

fn wait_status(served: &Served, session: i64, status: &str) -> Value {
    served.wait_agent_info(session, status, |i| i["status"] == status)
}

#[test]
fn serve_idle_an_idle_agent_is_stopped_and_the_next_prompt_continues_its_session() {
    let dir = temp_dir("serve-idle");
    let script = dir.join("agent.py");
    std::fs::write(&script, AGENT).unwrap();
    let log = dir.join("agent.log");
    let state = dir.join("agent-state.json");
    let agent = vec!["python3".into(), script.into_os_string(), "full".into()];
    let served = start_serve(
        &dir.join("db.sqlite"),
        &["--protocol", "1", "--agent-idle-stop", "1"],
        &agent,
        None,
        &[
            ("SESSIONS_AGENT_LOG", log.to_str().unwrap()),
            ("SESSIONS_AGENT_STATE", state.to_str().unwrap()),
        ],
    );
    let session = served.create_session();
    served.prompt(session, "first");
    served.reply_with(session, "echo: first");
    let opened = received(&log, "session/new");
    assert_eq!(opened.len(), 1);

    // A second of nothing: the agent is closed and stopped, and the page says why.
    let info = wait_status(&served, session, "no_agent");
    let said = info.to_string();
    assert!(said.contains("without activity"), "{said}");
    let closes = received(&log, "session/close");
    assert_eq!(closes.len(), 1, "{closes:?}");
    let agent_session = closes[0]["sessionId"].clone();

    // The next prompt starts it again and it continues the same agent session.
    served.prompt(session, "second");
    served.reply_with(session, "echo: second");
    // Resumed (the transcript holds the history already; `session/load` when the agent cannot).
    let mut reopened = received(&log, "session/resume");
    reopened.extend(received(&log, "session/load"));
    assert_eq!(reopened.len(), 1, "{reopened:?}");
    assert_eq!(reopened[0]["sessionId"], agent_session);
    assert_eq!(
        received(&log, "session/new").len(),
        1,
        "no new agent session"
    );
    let replies = served.replies(session);
    assert_eq!(replies.len(), 2, "{replies:?}");
    served.stop();
}

#[test]
fn serve_idle_a_silent_turn_keeps_its_agent() {
    let dir = temp_dir("serve-idle-turn");
    let served = Served::start(&dir.join("db.sqlite"), &["--agent-idle-stop", "1"], 0);
    let session = served.create_session();
    wait_status(&served, session, "ready");
    served.prompt(session, "/scenario stall");
    let deadline = Instant::now() + PATIENCE;
    while !transcript(&served, session)
        .to_string()
        .contains("stalls until you cancel")
    {
        assert!(Instant::now() < deadline, "the stall scenario never spoke");
        std::thread::sleep(Duration::from_millis(25));
    }
    // Three idle periods with the turn open and silent: the agent stays.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(served.agent_info(session)["status"], "ready");
    let response = served.post_json(&format!("/api/sessions/{session}/cancel"), "{}");
    assert!(response.status < 300, "{}", response.body);
    // With the turn over, the next idle period stops it.
    wait_status(&served, session, "no_agent");
    served.stop();
}

#[test]
fn serve_idle_a_mode_or_option_change_starts_a_stopped_agent_and_reaches_it() {
    let dir = temp_dir("serve-idle-setting");
    let served = Served::start(
        &dir.join("db.sqlite"),
        &["--protocol", "1", "--agent-idle-stop", "1"],
        0,
    );
    let session = served.create_session();
    served.prompt(session, "hello");
    served.reply_with(session, "hello");
    wait_status(&served, session, "no_agent");
    // The page's mode picker while no agent runs: the agent starts, continues its session and
    // takes the change (before, a conflict: "the agent session is not open yet").
    let response = served.post_json(
        &format!("/api/sessions/{session}/mode"),
        r#"{"modeId":"plan"}"#,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    let info = wait_status(&served, session, "ready");
    assert_eq!(info["currentModeId"], "plan", "{info}");
    // And an option, after the next stop.
    wait_status(&served, session, "no_agent");
    let response = served.post_json(
        &format!("/api/sessions/{session}/config"),
        r#"{"configId":"model","value":"spindle-deep"}"#,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    let info = served.agent_info(session);
    let model = info["configOptions"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["id"] == "model"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(model["currentValue"], "spindle-deep", "{info}");
    served.stop();
}
