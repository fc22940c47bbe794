//! The sessions as `GET /api/sessions` lists them (with the agent each runs, where its title came
//! from, what it was created with and its parent), and what the new-session form offers: the
//! agents and the configured MCP servers.

use std::collections::BTreeMap;

use serde_json::Value;

use super::SessionManager;
use crate::error::SessionError;
use crate::sync::lock;

/// A session as listed by `GET /api/sessions`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    id: i64,
    title: String,
    agent_session_id: Option<String>,
    /// The working directory, when the session has one of its own.
    cwd: Option<String>,
    created_at: i64,
    updated_at: i64,
    /// The agent it runs: `{id, name, version, available}` (`available`: whether this server
    /// offers it).
    agent: Value,
    /// Where the title came from: `""` (none or the one it was created with), `prompt`,
    /// `agent` (its latest `session_info_update`), `user` (a rename, which the agent's title
    /// never replaces).
    title_source: spindle_store::TitleSource,
    /// The names of the configured MCP servers it gets; `null`: every configured one.
    mcp_servers: Option<Vec<String>>,
    /// The directories its agent may use beside the working directory.
    additional_directories: Vec<String>,
    /// The session it was forked from: `{id, title}` (`title` null when that session was
    /// deleted since), or null.
    parent: Option<Value>,
}

impl SessionSummary {
    /// The session's id.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// Its title.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// Its own working directory, if any.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// The agent it runs (`{id, name, version, available}`).
    pub fn agent(&self) -> &Value {
        &self.agent
    }
}

impl SessionManager {
    /// Every session, oldest first.
    pub fn list(&self) -> Result<Vec<SessionSummary>, SessionError> {
        let stored = self.store.sessions().map_err(SessionError::storage)?;
        let live = lock(&self.sessions).clone();
        let titles: BTreeMap<i64, String> =
            stored.iter().map(|s| (s.id, s.title.clone())).collect();
        Ok(stored
            .into_iter()
            .map(|s| SessionSummary {
                agent: self.settings.describe_session(s.agent.as_ref()),
                title_source: s.title_source,
                parent: s
                    .setup
                    .parent
                    .map(|p| serde_json::json!({"id": p, "title": titles.get(&p)})),
                mcp_servers: s.setup.mcp_servers,
                additional_directories: s.setup.additional_directories,
                id: s.id,
                title: s.title,
                agent_session_id: s.agent_session_id,
                cwd: live.get(&s.id).map(|l| l.cwd.display().to_string()),
                created_at: s.created_at,
                updated_at: s.updated_at,
            })
            .collect())
    }

    /// The agents sessions may run, in the server's order: `{id, name, version, default}`.
    pub fn agents(&self) -> Vec<Value> {
        self.settings
            .agents
            .iter()
            .map(|a| {
                let mut described = a.describe();
                described["default"] = Value::Bool(a.id == self.settings.default_agent);
                described
            })
            .collect()
    }

    /// The configured MCP servers, as the new-session form lists them: `{name, type, target}`
    /// each (never an environment or header value).
    pub fn mcp_servers(&self) -> Vec<Value> {
        self.settings
            .mcp_servers
            .iter()
            .map(spindle_host::mcp_servers::McpServerConfig::public_summary)
            .collect()
    }
}
