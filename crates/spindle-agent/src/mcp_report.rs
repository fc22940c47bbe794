//! What the reference agent says about the MCP servers a session was given
//! (`/scenario mcp-servers`): how a test sees that the client's `mcpServers`
//! reached the agent. The agent connects to none of them.
//!
//! Environment and header values are secrets: the report gives each one's
//! length, never its text, since the reply lands in transcripts.

use serde_json::Value;

/// One line per entry of `params.mcpServers` (of `session/new`, `load` or
/// `resume`): `NAME: TYPE TARGET[, N args][, env|headers K (N chars), ...]`.
pub(crate) fn describe_received(params: &Value) -> Vec<String> {
    let servers = params.get("mcpServers").and_then(Value::as_array);
    servers
        .into_iter()
        .flatten()
        .map(|server| {
            let text = |key: &str| server.get(key).and_then(Value::as_str).unwrap_or("?");
            // v1 stdio entries carry no `type`.
            let kind = server
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("stdio");
            let target = if kind == "stdio" {
                text("command").to_owned()
            } else {
                let url = text("url");
                url.split(['?', '#']).next().unwrap_or(url).to_owned()
            };
            let mut line = format!("{}: {kind} {target}", text("name"));
            if let Some(args) = server.get("args").and_then(Value::as_array)
                && !args.is_empty()
            {
                let plural = if args.len() == 1 { "" } else { "s" };
                line.push_str(&format!(", {} arg{plural}", args.len()));
            }
            for field in ["env", "headers"] {
                let pairs = server.get(field).and_then(Value::as_array);
                let shown: Vec<String> = pairs
                    .into_iter()
                    .flatten()
                    .map(|pair| {
                        let name = pair.get("name").and_then(Value::as_str).unwrap_or("?");
                        let length = pair
                            .get("value")
                            .and_then(Value::as_str)
                            .map_or(0, |v| v.chars().count());
                        format!("{name} ({length} chars)")
                    })
                    .collect();
                if !shown.is_empty() {
                    line.push_str(&format!(", {field} {}", shown.join(", ")));
                }
            }
            line
        })
        .collect()
}

/// The reply to `/scenario mcp-servers`.
pub(crate) fn reply(servers: &[String]) -> String {
    if servers.is_empty() {
        return "This session was given no MCP servers.".to_owned();
    }
    let mut text = format!("This session was given {} MCP server(s):", servers.len());
    for server in servers {
        text.push_str("\n- ");
        text.push_str(server);
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reports_names_and_lengths_never_values() {
        let params = json!({"mcpServers": [
            {"name": "files", "command": "/bin/mcp", "args": ["-v"],
             "env": [{"name": "TOKEN", "value": "s3cret"}]},
            {"type": "http", "name": "web", "url": "https://mcp.example/x?key=k",
             "headers": [{"name": "Authorization", "value": "Bearer t"}]},
        ]});
        let text = reply(&describe_received(&params));
        assert_eq!(
            text,
            "This session was given 2 MCP server(s):\n\
             - files: stdio /bin/mcp, 1 arg, env TOKEN (6 chars)\n\
             - web: http https://mcp.example/x, headers Authorization (8 chars)"
        );
        assert_eq!(
            reply(&describe_received(&json!({"mcpServers": []}))),
            "This session was given no MCP servers."
        );
    }
}
