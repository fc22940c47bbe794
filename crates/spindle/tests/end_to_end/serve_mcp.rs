//! `spindle serve --mcp-config`: every session's agent gets the configured servers it can take
//! (in `session/new`, and again when the session is resumed after a restart), the agent pane's
//! facts name them and the ones left out, and no secret value reaches the page's API or the
//! database.

use serde_json::{Value, json};

use crate::harness::TempDir;
use crate::serve_support::{reference_agent_v1_with, serve_in, start_serve, temp_dir};

const CONFIG: &str = r#"{"mcpServers": {
  "files": {"command": "/usr/bin/mcp-files", "args": ["--root", "."], "env": {"FILES_TOKEN": "sekrit-env-value"}},
  "web": {"type": "http", "url": "https://mcp.example/x", "headers": {"Authorization": "Bearer sekrit-header"}}
}}"#;

const REPORT: &str = "files: stdio /usr/bin/mcp-files, 2 args, env FILES_TOKEN (16 chars)";

/// Every file under `dir` but the configuration: none may hold a secret value.
fn assert_no_secret_in_files(dir: &std::path::Path, config: &std::path::Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            assert_no_secret_in_files(&path, config);
        } else if path != config {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(6).any(|w| w == b"sekrit"),
                "a secret value is stored in {}",
                path.display()
            );
        }
    }
}

#[test]
fn serve_mcp_servers_reach_the_agent_and_the_pane_without_their_secrets() {
    let dir: TempDir = temp_dir("mcp");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let config = dir.join("mcp.json");
    std::fs::write(&config, CONFIG).unwrap();
    let config_arg = config.to_str().unwrap().to_owned();
    let state = dir.join("agent-sessions");
    let agent = reference_agent_v1_with(&["--state-dir", state.to_str().unwrap()]);
    let args = ["--mcp-config", config_arg.as_str()];

    // The first run logs everything, to a file that must not hold a secret either.
    let log = dir.join("serve.log");
    let first_args = [
        "--protocol",
        "1",
        "--cwd",
        work.to_str().unwrap(),
        "--mcp-config",
        config_arg.as_str(),
    ];
    let served = start_serve(
        &dir.join("db.sqlite"),
        &first_args,
        &agent,
        Some(&log),
        &[("SPINDLE_LOG", "trace")],
    );
    let session = served.create_session();
    let info = served.wait_agent_info(session, "ready", |i| i["status"] == "ready");
    assert_eq!(
        info["mcpServers"],
        json!({
            "passed": [{"name": "files", "type": "stdio", "target": "/usr/bin/mcp-files"}],
            "skipped": [{"name": "web", "type": "http",
                "reason": "the agent does not advertise agentCapabilities.mcpCapabilities.http"}],
        })
    );
    served.prompt(session, "/scenario mcp-servers");
    let reply = served.reply_with(session, "MCP server");
    assert!(reply.contains(REPORT), "{reply}");
    let views: Vec<Value> = ["transcript", "agent", "snapshot", "replies"]
        .iter()
        .map(|view| served.get_json(&format!("/api/sessions/{session}/{view}")))
        .collect();
    for view in &views {
        assert!(!view.to_string().contains("sekrit"), "{view}");
    }
    served.stop();

    // After a restart the session's agent session is resumed with the servers again.
    let served = serve_in(&dir, &work, &args, &agent);
    served.prompt(session, "/scenario mcp-servers");
    let replies = served.wait_finished_turns(session, 2);
    let last = replies
        .last()
        .and_then(|r| r["text"].as_str())
        .unwrap_or("");
    assert!(last.contains(REPORT), "{replies:?}");
    served.stop();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("TRACE"), "the log was on: {logged}");
    assert_no_secret_in_files(&dir.path, &config);
}

const TWO_STDIO: &str = r#"{"mcpServers": {
  "files": {"command": "/usr/bin/mcp-files", "args": ["--root", "."], "env": {"FILES_TOKEN": "sekrit-env-value"}},
  "notes": {"command": "/usr/bin/mcp-notes", "env": {"NOTES_KEY": "sekrit-notes"}},
  "web": {"type": "http", "url": "https://user:pw@mcp.example/x?key=sekrit-query", "headers": {"Authorization": "Bearer sekrit-header"}}
}}"#;

const NOTES_REPORT: &str = "notes: stdio /usr/bin/mcp-notes, env NOTES_KEY (12 chars)";

#[test]
fn serve_mcp_servers_are_chosen_per_session_and_kept_across_a_restart() {
    let dir: TempDir = temp_dir("mcp-choice");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let config = dir.join("mcp.json");
    std::fs::write(&config, TWO_STDIO).unwrap();
    let config_arg = config.to_str().unwrap().to_owned();
    let state = dir.join("agent-sessions");
    let agent = reference_agent_v1_with(&["--state-dir", state.to_str().unwrap()]);
    let args = ["--mcp-config", config_arg.as_str()];
    let served = serve_in(&dir, &work, &args, &agent);

    // The form's list: names, kinds and public targets, never a secret (nor the URL's user info
    // or query).
    let listed = served.get_json("/api/mcp-servers");
    assert_eq!(
        listed,
        json!({"servers": [
            {"name": "files", "type": "stdio", "target": "/usr/bin/mcp-files"},
            {"name": "notes", "type": "stdio", "target": "/usr/bin/mcp-notes"},
            {"name": "web", "type": "http", "target": "https://mcp.example/x"},
        ]})
    );
    let raw = served.request("GET", "/api/mcp-servers", None).body;
    for secret in ["sekrit", "FILES_TOKEN", "Authorization", "user:pw"] {
        assert!(!raw.contains(secret), "{secret} in {raw}");
    }

    // An unknown name is refused, named; nothing is created.
    let (status, refused) = served.post_value(
        "/api/sessions",
        &json!({"mcpServers": ["notes", "nope<b>"]}),
    );
    assert_eq!(status, 400, "{refused}");
    let message = refused["error"].as_str().unwrap_or_default();
    assert!(message.contains("\"nope<b>\""), "{message}");
    assert!(message.contains("files, notes, web"), "{message}");
    let (status, refused) = served.post_value("/api/sessions", &json!({"mcpServers": "notes"}));
    assert_eq!(status, 400, "{refused}");
    assert_eq!(served.get_json("/api/sessions")["sessions"], json!([]));

    let only_notes = served.create_session_with(&json!({"mcpServers": ["notes"]}));
    let none = served.create_session_with(&json!({"mcpServers": []}));
    let all = served.create_session();
    let passed = |session: i64| {
        let info = served.wait_agent_info(session, "ready", |i| i["status"] == "ready");
        info["mcpServers"]["passed"].clone()
    };
    assert_eq!(
        passed(only_notes),
        json!([{"name": "notes", "type": "stdio", "target": "/usr/bin/mcp-notes"}])
    );
    assert_eq!(passed(none), json!([]));
    assert_eq!(
        passed(all).as_array().map(Vec::len),
        Some(2),
        "files and notes"
    );
    let list = served.get_json("/api/sessions");
    let chosen: Vec<&Value> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["mcpServers"])
        .collect();
    assert_eq!(chosen, [&json!(["notes"]), &json!([]), &Value::Null]);

    served.prompt(only_notes, "/scenario mcp-servers");
    let reply = served.reply_with(only_notes, "MCP server");
    assert!(reply.contains(NOTES_REPORT), "{reply}");
    assert!(!reply.contains("files:"), "{reply}");
    served.prompt(none, "/scenario mcp-servers");
    let reply = served.reply_with(none, "MCP server");
    assert!(
        !reply.contains("notes:") && !reply.contains("files:"),
        "{reply}"
    );
    served.stop();

    // After a restart the session's agent session is continued with the same choice.
    let served = serve_in(&dir, &work, &args, &agent);
    served.prompt(only_notes, "/scenario mcp-servers");
    let replies = served.wait_finished_turns(only_notes, 2);
    let last = replies
        .last()
        .and_then(|r| r["text"].as_str())
        .unwrap_or("");
    assert!(last.contains(NOTES_REPORT), "{replies:?}");
    assert!(!last.contains("files:"), "{replies:?}");
    let info = served.agent_info(only_notes);
    assert_eq!(
        info["mcpServers"]["passed"].as_array().map(Vec::len),
        Some(1),
        "{info}"
    );
    served.stop();
    assert_no_secret_in_files(&dir.path, &config);
}
