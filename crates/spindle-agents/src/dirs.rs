//! Where agents live: the data and config directories, and the id rule that keeps an id a plain
//! directory name.

use std::path::PathBuf;

/// Where Spindle keeps installed agents and reads the user's agent settings.
#[derive(Debug, Clone)]
pub struct AgentsDirs {
    /// Spindle's data directory (`$XDG_DATA_HOME/spindle`); installs live in `agents/` below it.
    pub data: PathBuf,
    /// Spindle's config directory (`$XDG_CONFIG_HOME/spindle`); holds `agents.toml`.
    pub config: PathBuf,
}

impl AgentsDirs {
    /// `<data>/agents`: one directory per installed agent id.
    pub fn agents_root(&self) -> PathBuf {
        self.data.join("agents")
    }

    /// `<data>/agents/<id>`.
    pub fn agent_dir(&self, id: &str) -> PathBuf {
        self.agents_root().join(id)
    }

    /// `<config>/agents.toml`.
    pub fn settings_file(&self) -> PathBuf {
        self.config.join("agents.toml")
    }
}

/// Whether `id` is a registry id (`^[a-z][a-z0-9-]*$`, the registry schema's pattern). Ids
/// name directories, so nothing else is ever joined onto a path.
pub fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-'))
        && id.len() <= 64
}

pub(crate) fn check_id(id: &str) -> Result<(), crate::AgentsError> {
    if valid_id(id) {
        Ok(())
    } else {
        Err(crate::AgentsError::InvalidId(id.to_owned()))
    }
}
