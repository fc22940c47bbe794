//! The user's per-agent settings: `agents.toml` in Spindle's config directory.
//!
//! ```toml
//! [agents.claude-acp]
//! args = ["--verbose"]          # appended to the registry's args
//! env = { ANTHROPIC_API_KEY = "..." }   # over the registry's env
//! default = true                # the agent `serve` and `chat` use without --agent
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::{AgentsDirs, AgentsError};

/// Everything in `agents.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserSettings {
    /// Settings by agent id.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentUserSettings>,
}

/// One agent's settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentUserSettings {
    /// Arguments appended after the registry entry's.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set over the registry entry's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Whether this is the default agent of `serve` and `chat`.
    #[serde(default)]
    pub default: bool,
}

impl UserSettings {
    /// Reads `agents.toml`; a missing file is no settings, a malformed one an error naming
    /// the line.
    pub fn read(dirs: &AgentsDirs) -> Result<UserSettings, AgentsError> {
        let path = dirs.settings_file();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(UserSettings::default());
            }
            Err(e) => return Err(AgentsError::io("cannot read", &path)(e)),
        };
        toml::from_str(&text).map_err(|e| AgentsError::Settings {
            path,
            reason: e.to_string(),
        })
    }

    /// The id marked `default = true`, if any.
    pub fn default_agent(&self) -> Option<&str> {
        self.agents
            .iter()
            .find(|(_, s)| s.default)
            .map(|(id, _)| id.as_str())
    }
}
