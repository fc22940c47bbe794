//! `spindle agents`: agents from the ACP registry (list, show, install, update, remove, doctor).
//! Glue only: everything it does lives in `spindle-agents`.

use std::ffi::OsString;
use std::time::Duration;

use anyhow::Context;
use spindle_agents::{
    AgentsDirs, AgentsError, DistributionKind, InstallOptions, InstallRecord, LoadedRegistry,
    RegistrySource, UpdateOutcome, find_entry, format_doctor, format_list, format_show, install,
    list_rows, load_registry, plan_install, remove, update_one,
};

use crate::data_dir::{config_dir, data_dir};

/// Arguments of `spindle agents`.
#[derive(Debug, clap::Args)]
pub struct AgentsArgs {
    /// The registry index: a URL or a file (default: $SPINDLE_REGISTRY, else the official registry).
    #[arg(long, global = true, value_name = "URL|FILE")]
    registry: Option<String>,
    #[command(subcommand)]
    command: AgentsCommand,
}

/// A distribution kind chosen with `--dist`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DistArg {
    Binary,
    Npx,
    Uvx,
}

impl From<DistArg> for DistributionKind {
    fn from(d: DistArg) -> Self {
        match d {
            DistArg::Binary => DistributionKind::Binary,
            DistArg::Npx => DistributionKind::Npx,
            DistArg::Uvx => DistributionKind::Uvx,
        }
    }
}

#[derive(Debug, clap::Subcommand)]
enum AgentsCommand {
    /// Every agent of the registry, and which are installed.
    List {
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One agent: its registry entry and its install.
    Show { id: String },
    /// Install an agent into the data directory.
    Install {
        id: String,
        /// A version other than the registry's (npx and uvx only).
        #[arg(long)]
        version: Option<String>,
        /// The distribution to install (default: a binary for this platform, else npx, else uvx).
        #[arg(long, value_enum)]
        dist: Option<DistArg>,
    },
    /// Bring installed agents (or one) to the registry's version.
    Update { id: Option<String> },
    /// Remove an installed agent.
    Remove { id: String },
    /// Start an agent, initialize, open a session, and report what it offers.
    Doctor {
        /// An installed agent (default: every installed agent).
        id: Option<String>,
        /// Seconds for starting, initialize and session/new together.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
        /// One JSON object per agent.
        #[arg(long)]
        json: bool,
        /// Check this command instead of an installed agent.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
}

fn dirs() -> anyhow::Result<AgentsDirs> {
    Ok(AgentsDirs {
        data: data_dir()?,
        config: config_dir()?,
    })
}

fn registry(dirs: &AgentsDirs, flag: Option<&str>) -> anyhow::Result<LoadedRegistry> {
    let loaded = load_registry(dirs, &RegistrySource::choose(flag))?;
    if let Some(notice) = &loaded.notice {
        eprintln!("spindle agents: {notice}");
    }
    for problem in &loaded.registry.problems {
        eprintln!("spindle agents: warning: {problem} (entry skipped)");
    }
    Ok(loaded)
}

/// Runs `spindle agents`; the exit status.
pub(crate) fn run(args: AgentsArgs) -> anyhow::Result<u8> {
    let dirs = dirs()?;
    let flag = args.registry.as_deref();
    match args.command {
        AgentsCommand::List { json } => {
            let loaded = registry(&dirs, flag)?;
            let (rows, damaged) = list_rows(&dirs, &loaded.registry)?;
            for e in &damaged {
                eprintln!("spindle agents: warning: {e}");
            }
            if json {
                let out = serde_json::json!({"registry": loaded.origin, "agents": rows});
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                print!("{}", format_list(&rows));
            }
            Ok(0)
        }
        AgentsCommand::Show { id } => {
            let loaded = registry(&dirs, flag)?;
            let record = InstallRecord::read(&dirs, &id)?;
            let entry = match find_entry(&loaded.registry, &loaded.origin, &id) {
                Ok(entry) => Some(entry),
                Err(e) if record.is_none() => return Err(e.into()),
                Err(_) => None,
            };
            print!("{}", format_show(entry, record.as_ref()));
            Ok(0)
        }
        AgentsCommand::Install { id, version, dist } => {
            let loaded = registry(&dirs, flag)?;
            let entry = find_entry(&loaded.registry, &loaded.origin, &id)?;
            let options = InstallOptions {
                version,
                dist: dist.map(Into::into),
                ..InstallOptions::default()
            };
            let plan = plan_install(entry, &options)?;
            eprintln!(
                "installing {} {} ({}) from {}",
                plan.entry.id,
                plan.version,
                plan.kind.as_str(),
                plan.source
            );
            let outcome = install(&dirs, &plan, &loaded.origin, &options)?;
            let r = &outcome.record;
            if outcome.already_installed {
                println!(
                    "{} {} is already installed in {}",
                    r.id,
                    r.version,
                    r.path.display()
                );
            } else {
                let replaced = outcome
                    .replaced
                    .map(|v| format!(" (replacing {v})"))
                    .unwrap_or_default();
                println!(
                    "installed {} {}{replaced} in {}",
                    r.id,
                    r.version,
                    r.path.display()
                );
            }
            Ok(0)
        }
        AgentsCommand::Update { id } => {
            let loaded = registry(&dirs, flag)?;
            let records: Vec<InstallRecord> = match id {
                Some(id) => {
                    vec![InstallRecord::read(&dirs, &id)?.ok_or(AgentsError::NotInstalled(id))?]
                }
                None => spindle_agents::installed_records(&dirs)?
                    .into_iter()
                    .filter_map(|r| r.map_err(|e| eprintln!("spindle agents: {e}")).ok())
                    .collect(),
            };
            if records.is_empty() {
                println!("no agent is installed");
            }
            let mut failed = false;
            for record in records {
                let id = record.id.clone();
                match update_one(
                    &dirs,
                    &loaded.registry,
                    &loaded.origin,
                    record,
                    &InstallOptions::default(),
                ) {
                    Ok(UpdateOutcome::UpToDate(r)) => {
                        println!("{} {} is up to date", r.id, r.version)
                    }
                    Ok(UpdateOutcome::Newer(r, offered)) => println!(
                        "{} {} is newer than the registry's {offered}; left as it is",
                        r.id, r.version
                    ),
                    Ok(UpdateOutcome::NotInRegistry(r)) => {
                        println!(
                            "{} {} is not in the registry; left as it is",
                            r.id, r.version
                        )
                    }
                    Ok(UpdateOutcome::Updated(o)) => println!(
                        "updated {} {} -> {}",
                        o.record.id,
                        o.replaced.as_deref().unwrap_or("?"),
                        o.record.version
                    ),
                    Err(e) => {
                        eprintln!("spindle agents: cannot update {id}: {e}");
                        failed = true;
                    }
                }
            }
            Ok(if failed { 1 } else { 0 })
        }
        AgentsCommand::Remove { id } => {
            let version = remove(&dirs, &id)?;
            println!("removed {id} {version}");
            Ok(0)
        }
        AgentsCommand::Doctor {
            id,
            timeout,
            json,
            command,
        } => doctor(&dirs, id, timeout, json, command),
    }
}

fn doctor(
    dirs: &AgentsDirs,
    id: Option<String>,
    timeout: u64,
    json: bool,
    command: Vec<OsString>,
) -> anyhow::Result<u8> {
    let mut targets: Vec<(
        String,
        Vec<OsString>,
        std::collections::BTreeMap<String, String>,
    )> = Vec::new();
    if !command.is_empty() {
        anyhow::ensure!(id.is_none(), "give an agent id or `-- CMD`, not both");
        targets.push(("command".into(), command, Default::default()));
    } else {
        let launches = match id {
            Some(id) => vec![spindle_agents::launch(dirs, &id)?],
            None => spindle_agents::installed(dirs)?
                .into_iter()
                .filter_map(|l| l.map_err(|e| eprintln!("spindle agents: {e}")).ok())
                .collect(),
        };
        anyhow::ensure!(
            !launches.is_empty(),
            "no agent is installed (see `spindle agents install`)"
        );
        for l in launches {
            targets.push((
                format!("{} {}", l.id, l.version),
                l.command(),
                l.env.clone(),
            ));
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut healthy = true;
    for (label, command, env) in targets {
        let report = runtime.block_on(spindle_agents::doctor(
            &command,
            &env,
            Duration::from_secs(timeout),
        ));
        healthy &= report.healthy();
        if json {
            let mut value = serde_json::to_value(&report)?;
            value["agent"] = label.into();
            println!("{}", serde_json::to_string(&value)?);
        } else {
            println!("== {label}");
            print!("{}", format_doctor(&report));
        }
    }
    Ok(if healthy { 0 } else { 1 })
}
