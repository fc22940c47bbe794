//! Starting an installed agent by id: its record plus the user's settings.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use crate::{AgentsDirs, AgentsError, InstallRecord, UserSettings, check_id};

/// Everything needed to start an installed agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentLaunch {
    /// The registry id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The installed version.
    pub version: String,
    /// The executable, absolute.
    pub program: PathBuf,
    /// The registry's args, then the user's.
    pub args: Vec<String>,
    /// The registry's env, overridden by the user's.
    pub env: BTreeMap<String, String>,
}

impl AgentLaunch {
    /// The command line: program, then args.
    pub fn command(&self) -> Vec<OsString> {
        std::iter::once(self.program.clone().into_os_string())
            .chain(self.args.iter().map(OsString::from))
            .collect()
    }
}

/// How to start the installed agent `id`.
pub fn launch(dirs: &AgentsDirs, id: &str) -> Result<AgentLaunch, AgentsError> {
    check_id(id)?;
    let record =
        InstallRecord::read(dirs, id)?.ok_or_else(|| AgentsError::NotInstalled(id.to_owned()))?;
    let settings = UserSettings::read(dirs)?;
    Ok(with_settings(record, &settings))
}

/// Every installed agent, by id, with the user's settings applied. Damaged records are
/// returned as errors beside the good ones, so one bad install hides nothing else.
pub fn installed(dirs: &AgentsDirs) -> Result<Vec<Result<AgentLaunch, AgentsError>>, AgentsError> {
    let root = dirs.agents_root();
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(AgentsError::io("cannot list", &root)(e)),
    };
    let settings = UserSettings::read(dirs)?;
    let mut ids: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| crate::valid_id(name))
        .collect();
    ids.sort();
    Ok(ids
        .into_iter()
        .filter_map(|id| match InstallRecord::read(dirs, &id) {
            Ok(Some(record)) => Some(Ok(with_settings(record, &settings))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        })
        .collect())
}

fn with_settings(record: InstallRecord, settings: &UserSettings) -> AgentLaunch {
    let mut args = record.args;
    let mut env = record.env;
    if let Some(user) = settings.agents.get(&record.id) {
        args.extend(user.args.iter().cloned());
        env.extend(user.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    AgentLaunch {
        id: record.id,
        name: record.name,
        version: record.version,
        program: record.program,
        args,
        env,
    }
}
