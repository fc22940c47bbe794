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
