//! The user's MCP servers: the `mcp.json` file (`--mcp-config FILE`, else
//! `<config dir>/mcp.json`), read in the shape other clients already use,
//! and turned into the ACP `mcpServers` list of `session/new`, `session/load`,
//! `session/resume` and `session/fork` for one agent.
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"command": "/usr/bin/mcp-files", "args": ["--root", "."], "env": {"TOKEN": "…"}},
//!   "search": {"type": "http", "url": "https://mcp.example/", "headers": {"Authorization": "…"}}
//! }}
//! ```
//!
//! Parsing never fails on one bad entry: the entry is skipped with a warning
//! that names the file, the server and the field, and the others are kept.
//! Only a file that cannot be read, is not JSON, or has no `mcpServers`
//! object is an error.
//!
//! Invariant (secrets): environment and header values leave this module only
//! inside the `mcpServers` list sent to the agent ([`select_mcp_servers`]).
//! `Debug`, [`McpServerConfig::describe`] and
//! [`McpServerConfig::public_summary`] name variables and headers but never
//! show their values; [`redact_mcp_secrets`] blanks them in a logged wire
//! line.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use spindle_protocol::InitializeOutcome;

/// The default file's name in the configuration directory.
pub const MCP_CONFIG_FILE_NAME: &str = "mcp.json";

/// What replaces an environment or header value in a logged line.
pub const REDACTED_VALUE: &str = "<redacted>";

/// How the agent reaches one MCP server.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A process the agent starts.
    Stdio {
        /// The executable.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables (name, secret value), in file order.
        env: Vec<(String, String)>,
    },
    /// Streamable HTTP.
    Http {
        /// The server's URL.
        url: String,
        /// HTTP headers (name, secret value), in file order.
        headers: Vec<(String, String)>,
    },
    /// Server-sent events (ACP v1 only).
    Sse {
        /// The server's URL.
        url: String,
        /// HTTP headers (name, secret value), in file order.
        headers: Vec<(String, String)>,
    },
}

impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The values of `env` and `headers` are secrets: only the kind is shown.
        f.write_str(self.kind())
    }
}

impl McpTransport {
    /// `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
            McpTransport::Sse { .. } => "sse",
        }
    }
}

/// One configured MCP server.
#[derive(Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// Its name (the key in `mcpServers`).
    pub name: String,
    /// How the agent reaches it.
    pub transport: McpTransport,
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A URL as shown to people: without user info, query or fragment, where
/// tokens are sometimes kept.
fn public_url(url: &str) -> String {
    let cut = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..cut];
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(host_end);
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

impl McpServerConfig {
    /// The command (stdio) or the URL without user info or query (http, sse).
    pub fn target(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, .. } => command.clone(),
            McpTransport::Http { url, .. } | McpTransport::Sse { url, .. } => public_url(url),
        }
    }

    /// The names of its environment variables or headers (never the values).
    pub fn secret_names(&self) -> Vec<&str> {
        let pairs = match &self.transport {
            McpTransport::Stdio { env, .. } => env,
            McpTransport::Http { headers, .. } | McpTransport::Sse { headers, .. } => headers,
        };
        pairs.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// One line for people: `name (stdio: /usr/bin/x; env: TOKEN)`.
    pub fn describe(&self) -> String {
        let names = self.secret_names();
        let label = match self.transport {
            McpTransport::Stdio { .. } => "env",
            _ => "headers",
        };
        let mut line = format!(
            "{} ({}: {}",
            self.name,
            self.transport.kind(),
            self.target()
        );
        if !names.is_empty() {
            line.push_str(&format!("; {label}: {}", names.join(", ")));
        }
        line.push(')');
        line
    }

    /// What the page may show: `{name, type, target}` (no secret values).
    pub fn public_summary(&self) -> Value {
        json!({"name": self.name, "type": self.transport.kind(), "target": self.target()})
    }

    /// The ACP `McpServer` entry for a protocol version (v1: stdio untagged;
    /// v2: `type: "stdio"`).
    fn to_acp(&self, protocol_version: u16) -> Value {
        let pairs = |list: &[(String, String)]| -> Value {
            list.iter()
                .map(|(name, value)| json!({"name": name, "value": value}))
                .collect()
        };
        match &self.transport {
            McpTransport::Stdio { command, args, env } => {
                let mut entry = json!({
                    "name": self.name, "command": command, "args": args, "env": pairs(env),
                });
                if protocol_version >= 2 {
                    entry["type"] = "stdio".into();
                }
                entry
            }
            McpTransport::Http { url, headers } | McpTransport::Sse { url, headers } => json!({
                "type": self.transport.kind(), "name": self.name, "url": url,
                "headers": pairs(headers),
            }),
        }
    }
}

/// A configuration file that could not be used at all.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpConfigError {
    /// The file could not be read.
    Read {
        /// The file.
        path: String,
        /// Why.
        error: String,
    },
    /// The file is not JSON, or not an object with an `mcpServers` object.
    Shape {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl fmt::Display for McpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpConfigError::Read { path, error } => {
                write!(f, "MCP configuration {path}: cannot read it: {error}")
            }
            McpConfigError::Shape { path, message } => {
                write!(f, "MCP configuration {path}: {message}")
            }
        }
    }
}

impl std::error::Error for McpConfigError {}

/// A parsed configuration: the usable servers, in file order, and one
/// warning per entry skipped or field ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpConfig {
    /// The servers.
    pub servers: Vec<McpServerConfig>,
    /// `FILE: server "NAME": …` lines, for the user.
    pub warnings: Vec<String>,
}

/// Reads and parses `path` ([`parse_mcp_config`]), then makes each stdio
/// command absolute ([`McpConfig::make_commands_absolute`]) against the
/// file's directory and this process's `PATH`.
pub fn load_mcp_config(path: &Path) -> Result<McpConfig, McpConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| McpConfigError::Read {
        path: shown.clone(),
        error: error.to_string(),
    })?;
    let mut config = parse_mcp_config(&text, &shown)?;
    let base = std::path::absolute(path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let search = std::env::var_os("PATH").unwrap_or_default();
    config.make_commands_absolute(&shown, &base, |name| find_on_path(name, &search));
    Ok(config)
}

impl McpConfig {
    /// ACP wants `command` to be an absolute path: the agent starts the
    /// server itself, from its own working directory and possibly with
    /// another `PATH`. A bare name (`npx`) is looked up with `find` (the
    /// `PATH` search); a relative path (`./bin/server`) is taken from
    /// `base`, the configuration file's directory. A name `find` does not
    /// know is passed as written, with a warning saying so.
    pub fn make_commands_absolute(
        &mut self,
        origin: &str,
        base: &Path,
        find: impl Fn(&str) -> Option<PathBuf>,
    ) {
        for server in &mut self.servers {
            let McpTransport::Stdio { command, .. } = &mut server.transport else {
                continue;
            };
            if Path::new(command.as_str()).is_absolute() {
                continue;
            }
            let found = if command.contains('/') {
                let relative: PathBuf = Path::new(command.as_str())
                    .components()
                    .filter(|c| *c != std::path::Component::CurDir)
                    .collect();
                Some(base.join(relative))
            } else {
                find(command)
            };
            match found {
                Some(path) => *command = path.display().to_string(),
                None => self.warnings.push(format!(
                    "MCP configuration {origin}: server \"{}\": command `{command}` is not on \
                     PATH; passed as written (ACP asks for an absolute path, so the agent may \
                     not find it)",
                    server.name
                )),
            }
        }
    }
}

/// The first executable file called `name` in the directories of `search`
/// (a `PATH` value).
pub fn find_on_path(name: &str, search: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(search)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable_file(candidate))
}

#[cfg(unix)]
fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable_file(path: &Path) -> bool {
    path.is_file()
}

/// Parses a configuration's text; `origin` (the file) names it in messages.
pub fn parse_mcp_config(text: &str, origin: &str) -> Result<McpConfig, McpConfigError> {
    let shape = |message: String| McpConfigError::Shape {
        path: origin.to_owned(),
        message,
    };
    let root: Value = serde_json::from_str(text).map_err(|e| shape(format!("not JSON: {e}")))?;
    let Some(root) = root.as_object() else {
        return Err(shape("expected an object with \"mcpServers\"".into()));
    };
    let Some(entries) = root.get("mcpServers") else {
        return Err(shape("no \"mcpServers\" object".into()));
    };
    let Some(entries) = entries.as_object() else {
        return Err(shape(
            "\"mcpServers\" must be an object of servers by name".into(),
        ));
    };
    let mut config = McpConfig::default();
    for (name, entry) in entries {
        let mut notes = Vec::new();
        match parse_server(name, entry, &mut notes) {
            Ok(Some(server)) => config.servers.push(server),
            Ok(None) => notes.push("disabled; skipped".into()),
            Err(why) => notes.push(format!("{why}; skipped")),
        }
        for note in notes {
            config.warnings.push(format!(
                "MCP configuration {origin}: server \"{name}\": {note}"
            ));
        }
    }
    Ok(config)
}

/// The fields each kind of entry may have; others are ignored with a note.
const STDIO_FIELDS: [&str; 4] = ["type", "command", "args", "env"];
const REMOTE_FIELDS: [&str; 3] = ["type", "url", "headers"];
/// Fields other clients keep that say nothing to the agent, accepted silently.
const QUIET_FIELDS: [&str; 5] = [
    "disabled",
    "description",
    "autoApprove",
    "alwaysAllow",
    "timeout",
];

/// One entry; `Ok(None)` when it says `"disabled": true`. Ignored fields
/// add notes; the error says which field is wrong.
fn parse_server(
    name: &str,
    entry: &Value,
    notes: &mut Vec<String>,
) -> Result<Option<McpServerConfig>, String> {
    if name.trim().is_empty() {
        return Err("the name is empty".into());
    }
    let Some(entry) = entry.as_object() else {
        return Err("must be an object".into());
    };
    if entry.get("disabled") == Some(&Value::Bool(true)) {
        return Ok(None);
    }
    let kind = match entry.get("type") {
        None if entry.contains_key("url") && !entry.contains_key("command") => "http",
        None => "stdio",
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => return Err("field `type` must be a string".into()),
    };
    let known: &[&str] = match kind {
        "stdio" => &STDIO_FIELDS,
        "http" | "sse" => &REMOTE_FIELDS,
        other => {
            return Err(format!(
                "field `type`: unknown transport \"{other}\" (expected stdio, http or sse)"
            ));
        }
    };
    for field in entry.keys() {
        if !known.contains(&field.as_str()) && !QUIET_FIELDS.contains(&field.as_str()) {
            notes.push(format!(
                "field `{field}` is not used by {kind} servers; ignored"
            ));
        }
    }
    let transport = if kind == "stdio" {
        let command = match entry.get("command") {
            Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
            Some(_) => return Err("field `command` must be a non-empty string".into()),
            None => return Err("field `command` is missing".into()),
        };
        let args = match entry.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    a.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("field `args[{i}]` must be a string"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("field `args` must be an array of strings".into()),
        };
        let env = string_map(entry, "env")?;
        McpTransport::Stdio { command, args, env }
    } else {
        let url = match entry.get("url") {
            Some(Value::String(u)) if u.starts_with("http://") || u.starts_with("https://") => {
                u.clone()
            }
            Some(Value::String(_)) => {
                return Err("field `url` must start with http:// or https://".into());
            }
            Some(_) => return Err("field `url` must be a string".into()),
            None => return Err("field `url` is missing".into()),
        };
        let headers = string_map(entry, "headers")?;
        if kind == "http" {
            McpTransport::Http { url, headers }
        } else {
            McpTransport::Sse { url, headers }
        }
    };
    Ok(Some(McpServerConfig {
        name: name.to_owned(),
        transport,
    }))
}

/// `env` or `headers`: an object of strings, as (name, value) pairs.
fn string_map(entry: &Map<String, Value>, field: &str) -> Result<Vec<(String, String)>, String> {
    match entry.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                // Never echo the value: it may be a secret typed in the wrong shape.
                _ => Err(format!("field `{field}.{k}` must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("field `{field}` must be an object of strings")),
    }
}

/// Which transports an agent accepts, from its `initialize` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpTransportSupport {
    /// The protocol version of the connection.
    pub protocol_version: u16,
    /// stdio: always in v1; v2 `capabilities.session.mcp.stdio`.
    pub stdio: bool,
    /// v1 `mcpCapabilities.http`, v2 `capabilities.session.mcp.http`.
    pub http: bool,
    /// v1 `mcpCapabilities.sse` (v2 has no SSE transport).
    pub sse: bool,
}

impl McpTransportSupport {
    /// Read from the agent's `initialize` result.
    pub fn of_agent(init: &InitializeOutcome) -> McpTransportSupport {
        let caps = init.capabilities_value();
        let on = |v: Option<&Value>| matches!(v, Some(Value::Bool(true) | Value::Object(_)));
        if init.protocol_version >= 2 {
            let mcp = caps.pointer("/session/mcp");
            McpTransportSupport {
                protocol_version: init.protocol_version,
                stdio: on(mcp.and_then(|m| m.get("stdio"))),
                http: on(mcp.and_then(|m| m.get("http"))),
                sse: false,
            }
        } else {
            let mcp = caps.get("mcpCapabilities");
            McpTransportSupport {
                protocol_version: init.protocol_version,
                stdio: true,
                http: on(mcp.and_then(|m| m.get("http"))),
                sse: on(mcp.and_then(|m| m.get("sse"))),
            }
        }
    }

    /// Why `transport` cannot go to this agent, or `None` when it can.
    fn refusal(&self, transport: &McpTransport) -> Option<String> {
        let v2 = self.protocol_version >= 2;
        let capability = |key: &str| {
            if v2 {
                format!("capabilities.session.mcp.{key}")
            } else {
                format!("agentCapabilities.mcpCapabilities.{key}")
            }
        };
        match transport {
            McpTransport::Stdio { .. } if !self.stdio => Some(format!(
                "the agent does not advertise {}",
                capability("stdio")
            )),
            McpTransport::Http { .. } if !self.http => Some(format!(
                "the agent does not advertise {}",
                capability("http")
            )),
            McpTransport::Sse { .. } if v2 => Some("ACP v2 has no SSE transport".into()),
            McpTransport::Sse { .. } if !self.sse => Some(format!(
                "the agent does not advertise {}",
                capability("sse")
            )),
            _ => None,
        }
    }
}

/// One server left out of a session, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerSkipped {
    /// The server's name.
    pub name: String,
    /// Its transport (`stdio`, `http`, `sse`).
    pub kind: &'static str,
    /// Why, for people.
    pub reason: String,
}

impl fmt::Display for McpServerSkipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MCP server \"{}\" ({}) not passed to the agent: {}",
            self.name, self.kind, self.reason
        )
    }
}

/// What one agent gets of the configured servers.
#[derive(Debug, Clone, PartialEq)]
pub struct McpSelection {
    /// The `mcpServers` array for the session requests (holds secrets).
    pub mcp_servers: Value,
    /// The servers passed, for people and the page.
    pub passed: Vec<McpServerConfig>,
    /// The servers left out.
    pub skipped: Vec<McpServerSkipped>,
}

impl McpSelection {
    /// The passed servers' [`McpServerConfig::public_summary`] entries.
    pub fn public_summary(&self) -> Value {
        self.passed
            .iter()
            .map(McpServerConfig::public_summary)
            .collect()
    }
}

/// The servers `support` accepts, as ACP entries, and the others with why.
pub fn select_mcp_servers(
    servers: &[McpServerConfig],
    support: McpTransportSupport,
) -> McpSelection {
    let mut entries = Vec::new();
    let mut passed = Vec::new();
    let mut skipped = Vec::new();
    for server in servers {
        match support.refusal(&server.transport) {
            None => {
                entries.push(server.to_acp(support.protocol_version));
                passed.push(server.clone());
            }
            Some(reason) => skipped.push(McpServerSkipped {
                name: server.name.clone(),
                kind: server.transport.kind(),
                reason,
            }),
        }
    }
    McpSelection {
        mcp_servers: Value::Array(entries),
        passed,
        skipped,
    }
}

/// A wire line with the `value` of every `env` and `headers` entry in its
/// `params.mcpServers` replaced by [`REDACTED_VALUE`], or `None` when it has
/// none to hide. For what is logged or recorded, never for what is sent.
pub fn redact_mcp_secrets(line: &str) -> Option<String> {
    if !line.contains("mcpServers") {
        return None;
    }
    let mut message: Value = serde_json::from_str(line).ok()?;
    let servers = message
        .get_mut("params")
        .and_then(|p| p.get_mut("mcpServers"))
        .and_then(Value::as_array_mut)?;
    let mut changed = false;
    for server in servers {
        for field in ["env", "headers"] {
            let pairs = server.get_mut(field).and_then(Value::as_array_mut);
            for pair in pairs.into_iter().flatten() {
                if let Some(value) = pair.get_mut("value")
                    && value != REDACTED_VALUE
                {
                    *value = REDACTED_VALUE.into();
                    changed = true;
                }
            }
        }
    }
    changed.then(|| message.to_string())
}

#[cfg(test)]
#[path = "mcp_servers_tests.rs"]
mod tests;
