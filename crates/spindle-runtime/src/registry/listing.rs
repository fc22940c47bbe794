//! The sessions as `GET /api/sessions` lists them ([`SessionSummary`]), and what the new-session
//! form offers: the agents and the configured MCP servers.

use std::collections::BTreeMap;

use serde_json::Value;

use super::SessionManager;
use super::summary::SessionSummary;
use crate::error::SessionError;
use crate::sync::lock;

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
