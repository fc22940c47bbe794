//! The install record: what `spindle agents install` put where, written last and atomically,
//! so an agent with a record is a complete install.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{AgentsDirs, AgentsError, check_id};

/// How the agent was distributed in the registry entry it was installed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DistributionKind {
    /// A platform archive (or raw binary), extracted into the install directory.
    Binary,
    /// An npm package, installed with npm into a prefix of its own.
    Npx,
    /// A PyPI package, installed into a venv of its own.
    Uvx,
}

impl DistributionKind {
    /// The registry's key for this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            DistributionKind::Binary => "binary",
            DistributionKind::Npx => "npx",
            DistributionKind::Uvx => "uvx",
        }
    }
}

/// One installed agent, as recorded in `agents/<id>/install.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallRecord {
    /// The registry id.
    pub id: String,
    /// The registry's display name.
    pub name: String,
    /// The installed version (the registry entry's, or `--version`).
    pub version: String,
    /// Which distribution was installed.
    pub distribution: DistributionKind,
    /// The npm/PyPI package spec or the archive URL it came from.
    pub source: String,
    /// The install directory (`agents/<id>/<version>`).
    pub path: PathBuf,
    /// The executable to run: absolute, inside `path`.
    pub program: PathBuf,
    /// Arguments from the registry entry.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment from the registry entry.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// When the install finished (RFC 3339, UTC).
    pub installed_at: String,
    /// The registry the entry came from (URL or file).
    #[serde(default)]
    pub registry: String,
}

impl InstallRecord {
    /// `agents/<id>/install.json`.
    pub fn file(dirs: &AgentsDirs, id: &str) -> PathBuf {
        dirs.agent_dir(id).join("install.json")
    }

    /// Reads the record of `id`; `Ok(None)` when it is not installed.
    pub fn read(dirs: &AgentsDirs, id: &str) -> Result<Option<InstallRecord>, AgentsError> {
        check_id(id)?;
        let path = Self::file(dirs, id);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(AgentsError::io("cannot read", &path)(e)),
        };
        let record: InstallRecord =
            serde_json::from_str(&text).map_err(|e| AgentsError::DamagedRecord {
                id: id.to_owned(),
                path: path.clone(),
                reason: e.to_string(),
            })?;
        if record.id != id {
            return Err(AgentsError::DamagedRecord {
                id: id.to_owned(),
                path,
                reason: format!("it names agent {:?}", record.id),
            });
        }
        Ok(Some(record))
    }

    /// Writes the record atomically (a temporary file renamed over the old one), so a reader
    /// sees the old record or the new one, never part of either.
    pub fn write(&self, dirs: &AgentsDirs) -> Result<(), AgentsError> {
        check_id(&self.id)?;
        let path = Self::file(dirs, &self.id);
        let dir = dirs.agent_dir(&self.id);
        std::fs::create_dir_all(&dir).map_err(AgentsError::io("cannot create", &dir))?;
        let text = serde_json::to_string_pretty(self).expect("a record serializes");
        write_atomically(&path, text.as_bytes())
    }
}

/// Writes `bytes` to `path` through a temporary sibling, synced, then renamed.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), AgentsError> {
    use std::io::Write;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(AgentsError::io("cannot write", path))
}
