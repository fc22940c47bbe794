//! A session as `GET /api/sessions` lists it: the agent it runs, where its title came from, what
//! it was created with and its parent.

use serde_json::Value;

/// A session as listed by `GET /api/sessions`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub(super) id: i64,
    pub(super) title: String,
    pub(super) agent_session_id: Option<String>,
    /// The working directory, when the session has one of its own.
    pub(super) cwd: Option<String>,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    /// The agent it runs: `{id, name, version, available}` (`available`: whether this server
    /// offers it).
    pub(super) agent: Value,
    /// Where the title came from: `""` (none or the one it was created with), `prompt`,
    /// `agent` (its latest `session_info_update`), `user` (a rename, which the agent's title
    /// never replaces).
    pub(super) title_source: spindle_store::TitleSource,
    /// The names of the configured MCP servers it gets; `null`: every configured one.
    pub(super) mcp_servers: Option<Vec<String>>,
    /// The directories its agent may use beside the working directory.
    pub(super) additional_directories: Vec<String>,
    /// The session it was forked from: `{id, title}` (`title` null when that session was
    /// deleted since), or null.
    pub(super) parent: Option<Value>,
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
