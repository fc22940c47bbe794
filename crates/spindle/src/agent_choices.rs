//! Which agents `spindle serve` offers and which one `spindle chat` starts: the built-in
//! reference agent, every agent installed with `spindle agents install` (read through
//! `spindle_agents`), and a command given after `--`.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Context;
use spindle_agents::{AgentLaunch, AgentsDirs, UserSettings};
use spindle_web::AgentChoice;

/// The id of the built-in reference agent (`spindle agent`).
pub(crate) const BUILTIN_ID: &str = "spindle";

/// The built-in reference agent's display name.
const BUILTIN_NAME: &str = "Spindle reference agent";

/// Where installed agents and `agents.toml` are; `None` (with a warning) when there is no data
/// directory: only the built-in agent and a `--` command are offered then.
pub(crate) fn agents_dirs() -> Option<AgentsDirs> {
    let data = match crate::data_dir::data_dir() {
        Ok(data) => data,
        Err(error) => {
            tracing::warn!("installed agents are not offered: {error:#}");
            return None;
        }
    };
    let config = match crate::data_dir::config_dir() {
        Ok(config) => config,
        Err(error) => {
            tracing::warn!("agents.toml is not read: {error:#}");
            return None;
        }
    };
    Some(AgentsDirs { data, config })
}

/// The built-in reference agent as a choice: `command` is `crate::default_agent_command()`.
pub(crate) fn builtin(command: Vec<OsString>) -> AgentChoice {
    AgentChoice {
        id: BUILTIN_ID.to_owned(),
        name: BUILTIN_NAME.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        command,
        env: Vec::new(),
    }
}

/// An installed agent as a choice.
pub(crate) fn installed_choice(launch: AgentLaunch) -> AgentChoice {
    let command = launch.command();
    AgentChoice {
        id: launch.id,
        name: launch.name,
        version: launch.version,
        command,
        env: launch.env.into_iter().collect(),
    }
}

/// Every installed agent; a damaged install is logged and left out, so one bad install hides
/// nothing else.
pub(crate) fn installed(dirs: &AgentsDirs) -> Vec<AgentChoice> {
    let all = match spindle_agents::installed(dirs) {
        Ok(all) => all,
        Err(error) => {
            tracing::warn!("installed agents are not offered: {error}");
            return Vec::new();
        }
    };
    all.into_iter()
        .filter_map(|one| match one {
            Ok(launch) => Some(installed_choice(launch)),
            Err(error) => {
                tracing::warn!("an installed agent is left out: {error}");
                None
            }
        })
        .collect()
}

/// The agent `agents.toml` marks `default = true`, if any (a malformed file is an error: the
/// user meant something by it).
pub(crate) fn configured_default(dirs: Option<&AgentsDirs>) -> anyhow::Result<Option<String>> {
    let Some(dirs) = dirs else {
        return Ok(None);
    };
    let settings = UserSettings::read(dirs)?;
    Ok(settings.default_agent().map(str::to_owned))
}

/// A `-- AGENT_CMD` as a choice: its id is the program's file name made an id (lowercase
/// letters, digits and '-'), with `-2`, `-3`, ... added when `taken` has it already.
pub(crate) fn command_choice(command: Vec<OsString>, taken: &[AgentChoice]) -> AgentChoice {
    let name = command
        .first()
        .and_then(|program| Path::new(program).file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "agent".to_owned());
    let base = command_id(&name);
    let mut id = base.clone();
    let mut n = 2;
    while taken.iter().any(|a| a.id == id) {
        id = format!("{base}-{n}");
        n += 1;
    }
    AgentChoice {
        id,
        name,
        version: String::new(),
        command,
        env: Vec::new(),
    }
}

/// `name` as an agent id: lowercase, every run of other characters one '-', starting with a
/// letter (`cmd-` in front otherwise), at most 64 characters.
fn command_id(name: &str) -> String {
    let mut id = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            id.push(c);
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    let id = id.trim_matches('-');
    let id = if id.starts_with(|c: char| c.is_ascii_lowercase()) {
        id.to_owned()
    } else {
        format!("cmd-{id}").trim_end_matches('-').to_owned()
    };
    let mut id: String = id.chars().take(64).collect();
    while id.ends_with('-') {
        id.pop();
    }
    id
}

/// An agent's command line and the environment variables set for it.
pub(crate) type CommandAndEnv = (Vec<OsString>, Vec<(OsString, OsString)>);

/// How `spindle chat --agent ID` starts the agent: the command and its env.
pub(crate) fn chat_agent(
    id: &str,
    builtin_command: impl FnOnce() -> Vec<OsString>,
) -> anyhow::Result<CommandAndEnv> {
    if id == BUILTIN_ID {
        return Ok((builtin_command(), Vec::new()));
    }
    let dirs = agents_dirs().context("no data directory to find installed agents in")?;
    let launch = spindle_agents::launch(&dirs, id)?;
    let env = launch
        .env
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
    Ok((launch.command(), env))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(id: &str) -> AgentChoice {
        AgentChoice {
            id: id.to_owned(),
            ..builtin(Vec::new())
        }
    }

    #[test]
    fn a_command_gets_an_id_from_its_program_that_no_other_agent_has() {
        for (program, id) in [
            ("/usr/bin/python3", "python3"),
            ("My Agent.EXE", "my-agent-exe"),
            ("./gemini", "gemini"),
            ("42", "cmd-42"),
            ("___", "cmd"),
            ("spindle", "spindle-3"),
        ] {
            let taken = [choice("spindle"), choice("spindle-2")];
            let got = command_choice(vec![program.into(), "--acp".into()], &taken);
            assert_eq!(got.id, id, "{program}");
            assert!(spindle_agents::valid_id(&got.id), "{}", got.id);
            assert_eq!(got.command.len(), 2);
        }
        let long = "a".repeat(100);
        assert_eq!(command_choice(vec![long.into()], &[]).id.len(), 64);
    }
}
