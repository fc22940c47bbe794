//! Data-driven cases of the MCP configuration: each input's servers and
//! warnings rendered as lines, and the ACP entries checked against the schemas.

use serde_json::{Value, json};
use spindle_protocol::schema_check::{Direction, validate_outgoing};

use super::*;

/// The parse of `text` as lines: `ok NAME (…)` per server, `warn …` per
/// warning, or `error …`.
fn render(text: &str) -> String {
    match parse_mcp_config(text, "mcp.json") {
        Ok(config) => {
            let mut lines: Vec<String> = config
                .servers
                .iter()
                .map(|s| format!("ok {}", s.describe()))
                .collect();
            lines.extend(config.warnings.iter().map(|w| format!("warn {w}")));
            lines.join("\n")
        }
        Err(error) => format!("error {error}"),
    }
}

#[test]
fn parse_cases() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "good stdio",
            r#"{"mcpServers":{"files":{"command":"/bin/mcp","args":["-v"],"env":{"TOKEN":"s3cret"}}}}"#,
            "ok files (stdio: /bin/mcp; env: TOKEN)",
        ),
        (
            "good http (user info and query are not shown)",
            r#"{"mcpServers":{"web":{"type":"http","url":"https://u:pw@mcp.example/x?key=k","headers":{"Authorization":"Bearer s3cret"}}}}"#,
            "ok web (http: https://mcp.example/x; headers: Authorization)",
        ),
        (
            "good sse",
            r#"{"mcpServers":{"ev":{"type":"sse","url":"http://127.0.0.1:9/sse"}}}"#,
            "ok ev (sse: http://127.0.0.1:9/sse)",
        ),
        (
            "url without type is http",
            r#"{"mcpServers":{"web":{"url":"https://mcp.example/"}}}"#,
            "ok web (http: https://mcp.example/)",
        ),
        (
            "explicit stdio type",
            r#"{"mcpServers":{"s":{"type":"stdio","command":"mcp"}}}"#,
            "ok s (stdio: mcp)",
        ),
        (
            "bad type skips only that server",
            r#"{"mcpServers":{"a":{"type":"websocket","url":"ws://x"},"b":{"command":"/bin/b"}}}"#,
            "ok b (stdio: /bin/b)\nwarn MCP configuration mcp.json: server \"a\": field `type`: unknown transport \"websocket\" (expected stdio, http or sse); skipped",
        ),
        (
            "missing command",
            r#"{"mcpServers":{"a":{"args":["x"]}}}"#,
            "warn MCP configuration mcp.json: server \"a\": field `command` is missing; skipped",
        ),
        (
            "non-string env value (the value is not echoed)",
            r#"{"mcpServers":{"a":{"command":"/bin/a","env":{"PORT":4711}}}}"#,
            "warn MCP configuration mcp.json: server \"a\": field `env.PORT` must be a string; skipped",
        ),
        (
            "non-string arg",
            r#"{"mcpServers":{"a":{"command":"/bin/a","args":["x",2]}}}"#,
            "warn MCP configuration mcp.json: server \"a\": field `args[1]` must be a string; skipped",
        ),
        (
            "unknown fields are ignored with a note, other clients' fields silently",
            r#"{"mcpServers":{"a":{"command":"/bin/a","cwd":"/w","autoApprove":[]}}}"#,
            "ok a (stdio: /bin/a)\nwarn MCP configuration mcp.json: server \"a\": field `cwd` is not used by stdio servers; ignored",
        ),
        (
            "disabled",
            r#"{"mcpServers":{"a":{"command":"/bin/a","disabled":true}}}"#,
            "warn MCP configuration mcp.json: server \"a\": disabled; skipped",
        ),
        (
            "url that is not http",
            r#"{"mcpServers":{"a":{"type":"http","url":"ftp://x"}}}"#,
            "warn MCP configuration mcp.json: server \"a\": field `url` must start with http:// or https://; skipped",
        ),
        (
            "headers not an object",
            r#"{"mcpServers":{"a":{"type":"sse","url":"http://x","headers":["A: b"]}}}"#,
            "warn MCP configuration mcp.json: server \"a\": field `headers` must be an object of strings; skipped",
        ),
        (
            "entry not an object",
            r#"{"mcpServers":{"a":"/bin/a"}}"#,
            "warn MCP configuration mcp.json: server \"a\": must be an object; skipped",
        ),
        ("empty", r#"{"mcpServers":{}}"#, ""),
        (
            "not JSON",
            "{",
            "error MCP configuration mcp.json: not JSON: EOF while parsing an object at line 1 column 1",
        ),
        (
            "no mcpServers",
            r#"{"servers":{}}"#,
            "error MCP configuration mcp.json: no \"mcpServers\" object",
        ),
        (
            "mcpServers not an object",
            r#"{"mcpServers":[]}"#,
            "error MCP configuration mcp.json: \"mcpServers\" must be an object of servers by name",
        ),
    ];
    for (what, input, expected) in cases {
        assert_eq!(render(input), *expected, "case: {what}");
    }
}

#[test]
fn load_names_a_missing_file() {
    let error = load_mcp_config(Path::new("/nonexistent/mcp.json")).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("MCP configuration /nonexistent/mcp.json: cannot read it:"),
        "{error}"
    );
}

const ALL_KINDS: &str = r#"{"mcpServers":{
    "files":{"command":"/bin/mcp","args":["-v"],"env":{"TOKEN":"s3cret-env"}},
    "web":{"type":"http","url":"https://mcp.example/","headers":{"Authorization":"s3cret-header"}},
    "ev":{"type":"sse","url":"https://mcp.example/sse"}}}"#;

fn support(protocol_version: u16, stdio: bool, http: bool, sse: bool) -> McpTransportSupport {
    McpTransportSupport {
        protocol_version,
        stdio,
        http,
        sse,
    }
}

/// The selection's entries, each wrapped in a `session/new` the schema checks.
fn checked_entries(selection: &McpSelection, protocol_version: u16) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": "/w", "mcpServers": selection.mcp_servers}});
    validate_outgoing(
        protocol_version,
        Direction::ClientToAgent,
        &request.to_string(),
    )
    .unwrap_or_else(|e| panic!("v{protocol_version}: {e:?}"));
    selection.mcp_servers.clone()
}

#[test]
fn selection_follows_the_agent_capabilities() {
    let config = parse_mcp_config(ALL_KINDS, "mcp.json").unwrap();
    // File order (serde_json keeps it).
    let v1_all = select_mcp_servers(&config.servers, support(1, true, true, true));
    assert_eq!(
        checked_entries(&v1_all, 1),
        json!([
            {"name": "files", "command": "/bin/mcp", "args": ["-v"],
             "env": [{"name": "TOKEN", "value": "s3cret-env"}]},
            {"type": "http", "name": "web", "url": "https://mcp.example/",
             "headers": [{"name": "Authorization", "value": "s3cret-header"}]},
            {"type": "sse", "name": "ev", "url": "https://mcp.example/sse", "headers": []},
        ])
    );
    assert!(v1_all.skipped.is_empty());

    let v1_stdio = select_mcp_servers(&config.servers, support(1, true, false, false));
    checked_entries(&v1_stdio, 1);
    let notes: Vec<String> = v1_stdio.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [
            "MCP server \"web\" (http) not passed to the agent: the agent does not advertise agentCapabilities.mcpCapabilities.http",
            "MCP server \"ev\" (sse) not passed to the agent: the agent does not advertise agentCapabilities.mcpCapabilities.sse",
        ]
    );

    let v2 = select_mcp_servers(&config.servers, support(2, true, true, true));
    assert_eq!(
        checked_entries(&v2, 2),
        json!([
            {"type": "stdio", "name": "files", "command": "/bin/mcp", "args": ["-v"],
             "env": [{"name": "TOKEN", "value": "s3cret-env"}]},
            {"type": "http", "name": "web", "url": "https://mcp.example/",
             "headers": [{"name": "Authorization", "value": "s3cret-header"}]},
        ])
    );
    assert_eq!(v2.skipped[0].reason, "ACP v2 has no SSE transport");

    let v2_none = select_mcp_servers(&config.servers, support(2, false, false, false));
    assert_eq!(v2_none.mcp_servers, json!([]));
    assert_eq!(
        v2_none.skipped[0].reason,
        "the agent does not advertise capabilities.session.mcp.stdio"
    );
}

#[test]
fn secrets_stay_out_of_descriptions_debug_and_redacted_lines() {
    let config = parse_mcp_config(ALL_KINDS, "mcp.json").unwrap();
    let selection = select_mcp_servers(&config.servers, support(1, true, true, true));
    let shown = format!(
        "{:?} {:?} {} {}",
        config,
        selection.passed,
        selection.public_summary(),
        config
            .servers
            .iter()
            .map(McpServerConfig::describe)
            .collect::<String>()
    );
    assert!(!shown.contains("s3cret"), "{shown}");
    assert_eq!(
        selection.public_summary()[0],
        json!({"name": "files", "type": "stdio", "target": "/bin/mcp"})
    );

    let line = json!({"jsonrpc": "2.0", "id": 3, "method": "session/load",
        "params": {"sessionId": "s", "cwd": "/w", "mcpServers": selection.mcp_servers}})
    .to_string();
    let redacted = redact_mcp_secrets(&line).expect("something to hide");
    assert!(!redacted.contains("s3cret"), "{redacted}");
    let value: Value = serde_json::from_str(&redacted).unwrap();
    assert_eq!(
        value["params"]["mcpServers"][0]["env"],
        json!([{"name": "TOKEN", "value": REDACTED_VALUE}])
    );
    assert_eq!(value["params"]["mcpServers"][0]["command"], "/bin/mcp");
    // Nothing to hide: the line is kept as is.
    assert_eq!(redact_mcp_secrets(&redacted), None);
    assert_eq!(
        redact_mcp_secrets(r#"{"method":"session/new","params":{"mcpServers":[]}}"#),
        None
    );
}

#[test]
fn commands_become_absolute() {
    let text = r#"{"mcpServers":{
        "abs":{"command":"/opt/mcp"},
        "bare":{"command":"npx","args":["-y","server"]},
        "rel":{"command":"./bin/server"},
        "lost":{"command":"not-installed"},
        "web":{"type":"http","url":"https://mcp.example/"}}}"#;
    let mut config = parse_mcp_config(text, "mcp.json").unwrap();
    config.make_commands_absolute("mcp.json", Path::new("/home/u/.config/spindle"), |name| {
        (name == "npx").then(|| PathBuf::from("/usr/local/bin/npx"))
    });
    let described: Vec<String> = config.servers.iter().map(|s| s.describe()).collect();
    assert_eq!(
        described,
        [
            "abs (stdio: /opt/mcp)",
            "bare (stdio: /usr/local/bin/npx)",
            "rel (stdio: /home/u/.config/spindle/bin/server)",
            "lost (stdio: not-installed)",
            "web (http: https://mcp.example/)",
        ]
    );
    assert_eq!(
        config.warnings,
        [
            "MCP configuration mcp.json: server \"lost\": command `not-installed` is not on PATH; \
          passed as written (ACP asks for an absolute path, so the agent may not find it)"
        ]
    );
}

#[test]
fn the_path_search_finds_executables_only() {
    let dir = std::env::temp_dir().join(format!("spindle-mcp-path-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tool = dir.join("mcp-tool");
    let plain = dir.join("mcp-data");
    std::fs::write(&tool, "#!/bin/sh\n").unwrap();
    std::fs::write(&plain, "data").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let search = std::env::join_paths(["relative/dir", dir.to_str().unwrap()]).unwrap();
    assert_eq!(find_on_path("mcp-tool", &search), Some(tool.clone()));
    assert_eq!(find_on_path("mcp-data", &search), None);
    assert_eq!(find_on_path("absent", &search), None);
    std::fs::remove_dir_all(&dir).unwrap();
}
