//! `spindle chat --mcp-config` against the reference agent (real processes): the configured
//! servers reach the agent in `session/new` and in `--resume`, http ones are left out with a
//! note when the agent does not advertise them, a bad entry is skipped and a bad file refused,
//! `<config dir>/mcp.json` is the default, and no secret value is printed or recorded.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::harness::TempDir;

const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

const CONFIG: &str = r#"{"mcpServers": {
  "files": {"command": "/usr/bin/mcp-files", "args": ["--root", "."], "env": {"FILES_TOKEN": "sekrit-env-value"}},
  "web": {"type": "http", "url": "https://mcp.example/x", "headers": {"Authorization": "Bearer sekrit-header"}},
  "broken": {"type": "websocket", "url": "ws://mcp.example/"}
}}"#;

const REPLY: &str = "This session was given 1 MCP server(s):\n\
    - files: stdio /usr/bin/mcp-files, 2 args, env FILES_TOKEN (16 chars)\n";

/// `spindle chat FLAGS --prompt PROMPT -- spindle agent --delay-ms 0 AGENT_FLAGS`, with
/// `XDG_CONFIG_HOME` set to `config_home` and every log on (stderr must still hold no secret).
fn chat(config_home: &Path, flags: &[&str], prompt: &str, agent_flags: &[&str]) -> Output {
    Command::new(SPINDLE)
        .env("XDG_CONFIG_HOME", config_home)
        .env("SPINDLE_LOG", "trace")
        .arg("chat")
        .args(flags)
        .args([
            "--prompt",
            prompt,
            "--",
            SPINDLE,
            "agent",
            "--delay-ms",
            "0",
        ])
        .args(agent_flags)
        .stdin(Stdio::null())
        .output()
        .expect("run spindle chat")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn chat_passes_the_configured_servers_and_notes_what_it_leaves_out() {
    let dir = TempDir::new("chat-mcp");
    let config = dir.join("mcp.json");
    std::fs::write(&config, CONFIG).unwrap();
    let config = config.to_string_lossy().into_owned();
    for protocol in ["1", "2"] {
        let record = dir.join(&format!("v{protocol}.jsonl"));
        let record = record.to_string_lossy().into_owned();
        let flags = [
            "--protocol",
            protocol,
            "--mcp-config",
            &config,
            "--record",
            &record,
        ];
        let output = chat(&dir.join("none"), &flags, "/scenario mcp-servers", &[]);
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(0), "v{protocol}: {stderr}");
        assert_eq!(stdout, REPLY, "v{protocol}");
        let capability = if protocol == "1" {
            "agentCapabilities.mcpCapabilities.http"
        } else {
            "capabilities.session.mcp.http"
        };
        assert!(
            stderr.contains(&format!(
                "MCP server \"web\" (http) not passed to the agent: the agent does not advertise {capability}"
            )),
            "v{protocol}: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "MCP configuration {config}: server \"broken\": field `type`: unknown transport \"websocket\""
            )),
            "{stderr}"
        );
        let recorded = std::fs::read_to_string(&record).unwrap();
        assert!(recorded.contains("\"FILES_TOKEN\""), "{recorded}");
        for shown in [&stdout, &stderr, &recorded] {
            assert!(!shown.contains("sekrit"), "a secret was shown: {shown}");
        }
    }
}

#[test]
fn chat_resume_passes_the_servers_again() {
    let dir = TempDir::new("chat-mcp-resume");
    let config = dir.join("mcp.json");
    std::fs::write(&config, CONFIG).unwrap();
    let state = dir.join("agent-sessions");
    let state = state.to_string_lossy().into_owned();
    let agent = ["--state-dir", state.as_str()];
    let none = dir.join("none");
    let first = chat(&none, &[], "/scenario plain", &agent);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_suffix(".jsonl")
                .map(str::to_owned)
        })
        .next()
        .expect("the agent kept the session");
    let config = config.to_string_lossy().into_owned();
    let flags = ["--mcp-config", config.as_str(), "--resume", id.as_str()];
    let resumed = chat(&none, &flags, "/scenario mcp-servers", &agent);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert!(
        text(&resumed.stdout).ends_with(REPLY),
        "{}",
        text(&resumed.stdout)
    );
}

#[test]
fn chat_reads_the_default_file_and_refuses_a_bad_one() {
    let dir = TempDir::new("chat-mcp-default");
    let home = dir.join("config");
    std::fs::create_dir_all(home.join("spindle")).unwrap();
    let default = home.join("spindle").join("mcp.json");
    std::fs::write(&default, CONFIG).unwrap();
    let output = chat(&home, &[], "/scenario mcp-servers", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), REPLY);

    std::fs::write(&default, r#"{"servers": {}}"#).unwrap();
    let output = chat(&home, &[], "/scenario mcp-servers", &[]);
    assert_eq!(output.status.code(), Some(2));
    let expected = format!(
        "spindle chat: MCP configuration {}: no \"mcpServers\" object\n",
        default.display()
    );
    assert!(
        text(&output.stderr).ends_with(&expected),
        "{}",
        text(&output.stderr)
    );
    assert!(output.stdout.is_empty());
}
