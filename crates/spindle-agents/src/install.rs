//! `install`, `update` and `remove`: an agent's files built where nothing reads them, moved into
//! place in one rename, then the record written; the earlier version stays usable until then.
//!
//! Under the agent's lock ([`AgentLock`]):
//! 1. leftovers of a killed install (`.staging-*`) and version directories no record names are
//!    removed;
//! 2. the install is built in `agents/<id>/.staging-<pid>-<n>` (a download goes beside it, in
//!    `.staging-<pid>-<n>.download`);
//! 3. the staging directory is renamed to `agents/<id>/<version>`;
//! 4. the install record is written (atomically): from here on the new version runs;
//! 5. the earlier version's directory is removed.
//!
//! A process killed before 4 leaves the earlier record and its directory as they were.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::SystemTime;

use crate::clock::rfc3339;
use crate::extract::{ArchiveKind, ExtractLimits, extract, resolve_inside};
use crate::http::{ARCHIVE_LIMIT, download_file};
use crate::install_error::InstallError;
use crate::lock::AgentLock;
use crate::packages::{
    find_on_path, install_npm, install_python, relocate_venv_scripts, split_npm_spec,
    split_python_spec,
};
use crate::registry::{Registry, RegistryEntry, current_platform, valid_version};
use crate::{AgentsDirs, AgentsError, DistributionKind, InstallRecord, check_id};

/// What the user asked for beyond the id.
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// `--version`.
    pub version: Option<String>,
    /// `--dist`.
    pub dist: Option<DistributionKind>,
    /// Unpacking limits.
    pub limits: ExtractLimits,
    /// Extra environment for npm, uv and pip.
    pub tool_env: Vec<(String, String)>,
}

/// What will be installed.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallPlan {
    /// The registry entry.
    pub entry: RegistryEntry,
    /// The distribution chosen.
    pub kind: DistributionKind,
    /// The version.
    pub version: String,
    /// Archive URL, or package spec with the version.
    pub source: String,
}

/// Whether the tools a kind needs are on `PATH`.
pub fn tools_present(kind: DistributionKind) -> bool {
    match kind {
        DistributionKind::Binary => true,
        DistributionKind::Npx => find_on_path("npm").is_some() && find_on_path("node").is_some(),
        DistributionKind::Uvx => find_on_path("uv").is_some() || find_on_path("python3").is_some(),
    }
}

/// The distribution to install when the user did not choose: a binary for this platform (nothing
/// else to install, pinned to one archive), else npx when node and npm are here, else uvx when uv
/// or python3 is; when none fits, the first offered (its error then says what is missing).
pub fn choose_distribution(
    entry: &RegistryEntry,
    platform: &str,
    present: &dyn Fn(DistributionKind) -> bool,
) -> DistributionKind {
    let offered = |kind: DistributionKind| match kind {
        DistributionKind::Binary => entry.distribution.binary.contains_key(platform),
        DistributionKind::Npx => entry.distribution.npx.is_some(),
        DistributionKind::Uvx => entry.distribution.uvx.is_some(),
    };
    let order = [
        DistributionKind::Binary,
        DistributionKind::Npx,
        DistributionKind::Uvx,
    ];
    order
        .into_iter()
        .find(|&k| offered(k) && present(k))
        .or_else(|| order.into_iter().find(|&k| offered(k)))
        .unwrap_or(DistributionKind::Binary)
}

/// The entry of `id`, or why there is none.
pub fn find_entry<'a>(
    registry: &'a Registry,
    origin: &str,
    id: &str,
) -> Result<&'a RegistryEntry, InstallError> {
    check_id(id)?;
    registry
        .agent(id)
        .ok_or_else(|| match registry.problem_of(id) {
            Some(problem) => InstallError::BrokenEntry {
                id: id.to_owned(),
                problem: problem.to_string(),
            },
            None => InstallError::UnknownId {
                id: id.to_owned(),
                registry: origin.to_owned(),
            },
        })
}

/// Decides kind, version and source for installing `entry` here.
pub fn plan_install(
    entry: &RegistryEntry,
    options: &InstallOptions,
) -> Result<InstallPlan, InstallError> {
    plan_install_on(entry, options, &current_platform(), &tools_present)
}

/// [`plan_install`] for a given platform and tool check (tests).
pub fn plan_install_on(
    entry: &RegistryEntry,
    options: &InstallOptions,
    platform: &str,
    present: &dyn Fn(DistributionKind) -> bool,
) -> Result<InstallPlan, InstallError> {
    if let Some(v) = &options.version
        && !valid_version(v)
    {
        return Err(InstallError::InvalidVersion(v.clone()));
    }
    let kind = options
        .dist
        .unwrap_or_else(|| choose_distribution(entry, platform, present));
    let dist = &entry.distribution;
    let offered = dist.kinds().join(", ");
    let not_offered = || InstallError::NotOffered {
        id: entry.id.clone(),
        kind: kind.as_str(),
        offered: offered.clone(),
    };
    let (version, source) = match kind {
        DistributionKind::Binary => {
            if dist.binary.is_empty() {
                return Err(not_offered());
            }
            let Some(target) = dist.binary.get(platform) else {
                return Err(InstallError::NoBinaryForPlatform {
                    id: entry.id.clone(),
                    platform: platform.to_owned(),
                    platforms: dist.binary.keys().cloned().collect::<Vec<_>>().join(", "),
                    others: dist
                        .kinds()
                        .into_iter()
                        .filter(|k| *k != "binary")
                        .collect(),
                });
            };
            if let Some(asked) = options.version.as_ref().filter(|v| **v != entry.version) {
                return Err(InstallError::VersionUnavailable {
                    id: entry.id.clone(),
                    asked: asked.clone(),
                    offered: entry.version.clone(),
                });
            }
            (entry.version.clone(), target.archive.clone())
        }
        DistributionKind::Npx | DistributionKind::Uvx => {
            let package = if kind == DistributionKind::Npx {
                &dist.npx
            } else {
                &dist.uvx
            };
            let package = package.as_ref().ok_or_else(not_offered)?;
            let (name, pinned) = if kind == DistributionKind::Npx {
                split_npm_spec(&package.package)
            } else {
                split_python_spec(&package.package)
            };
            let version = options
                .version
                .clone()
                .or_else(|| pinned.map(str::to_owned))
                .unwrap_or_else(|| entry.version.clone());
            if !valid_version(&version) {
                return Err(InstallError::InvalidVersion(version));
            }
            let source = if kind == DistributionKind::Npx {
                format!("{name}@{version}")
            } else {
                format!("{name}=={version}")
            };
            (version, source)
        }
    };
    Ok(InstallPlan {
        entry: entry.clone(),
        kind,
        version,
        source,
    })
}

/// How an install ended.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallOutcome {
    /// The record now in place.
    pub record: InstallRecord,
    /// The version it replaced, if another.
    pub replaced: Option<String>,
    /// Nothing was done: this version was installed already.
    pub already_installed: bool,
}

static STAGING_COUNTER: AtomicU32 = AtomicU32::new(0);

/// Installs `plan` for the registry `origin`.
pub fn install(
    dirs: &AgentsDirs,
    plan: &InstallPlan,
    origin: &str,
    options: &InstallOptions,
) -> Result<InstallOutcome, InstallError> {
    let id = plan.entry.id.as_str();
    check_id(id)?;
    let _lock = AgentLock::acquire(dirs, id)?;
    let previous = InstallRecord::read(dirs, id)?;
    clean_leftovers(dirs, id, previous.as_ref())?;
    if let Some(record) = &previous
        && record.version == plan.version
        && record.program.exists()
    {
        // Replacing a working directory in place cannot be one rename: refused rather than
        // risk the install that works.
        if record.distribution != plan.kind {
            return Err(InstallError::InstalledAsOtherKind {
                id: id.to_owned(),
                version: record.version.clone(),
                installed: record.distribution.as_str(),
                asked: plan.kind.as_str(),
            });
        }
        return Ok(InstallOutcome {
            record: record.clone(),
            replaced: None,
            already_installed: true,
        });
    }
    let agent_dir = dirs.agent_dir(id);
    let n = STAGING_COUNTER.fetch_add(1, Ordering::Relaxed);
    let staging = agent_dir.join(format!(".staging-{}-{n}", std::process::id()));
    let download = agent_dir.join(format!(".staging-{}-{n}.download", std::process::id()));
    let result = build_and_commit(
        dirs,
        plan,
        origin,
        options,
        &staging,
        &download,
        previous.as_ref(),
    );
    let _ = std::fs::remove_file(&download);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    let record = result?;
    Ok(InstallOutcome {
        replaced: previous.map(|p| p.version).filter(|v| *v != record.version),
        record,
        already_installed: false,
    })
}

fn build_and_commit(
    dirs: &AgentsDirs,
    plan: &InstallPlan,
    origin: &str,
    options: &InstallOptions,
    staging: &Path,
    download: &Path,
    previous: Option<&InstallRecord>,
) -> Result<InstallRecord, InstallError> {
    let id = plan.entry.id.as_str();
    std::fs::create_dir(staging).map_err(AgentsError::io("cannot create", staging))?;
    let dist = &plan.entry.distribution;
    let (program_rel, args, env) = match plan.kind {
        DistributionKind::Binary => {
            let target = dist
                .binary
                .get(&current_platform())
                .expect("planned for this platform");
            let downloaded = download_file(&target.archive, download, ARCHIVE_LIMIT)?;
            if let Some(expected) = &target.sha256
                && *expected != downloaded.sha256
            {
                return Err(InstallError::ChecksumMismatch {
                    url: target.archive.clone(),
                    expected: expected.clone(),
                    actual: downloaded.sha256,
                });
            }
            let raw_name = Path::new(&target.cmd)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(id)
                .to_owned();
            extract(
                download,
                ArchiveKind::of_url(&target.archive),
                staging,
                &raw_name,
                options.limits,
            )?;
            (
                PathBuf::from(&target.cmd),
                target.args.clone(),
                target.env.clone(),
            )
        }
        DistributionKind::Npx => {
            let package = dist.npx.as_ref().expect("planned for npx");
            let rel = install_npm(id, package, &plan.version, staging, &options.tool_env)?;
            (rel, package.args.clone(), package.env.clone())
        }
        DistributionKind::Uvx => {
            let package = dist.uvx.as_ref().expect("planned for uvx");
            let rel = install_python(id, package, &plan.version, staging, &options.tool_env)?;
            (rel, package.args.clone(), package.env.clone())
        }
    };
    let program_rel = check_program(id, staging, &program_rel)?;
    let final_dir = dirs.agent_dir(id).join(&plan.version);
    // A directory of this version that no record names is a leftover (removed by
    // clean_leftovers). One the record names is a damaged install (its program is gone, see
    // `install`): it is moved aside, replaced, and removed once the new record is written.
    let swap = previous.is_some_and(|p| p.path == final_dir);
    let parked = dirs.agent_dir(id).join(format!(
        "{}.old",
        staging
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(".staging")
    ));
    if swap {
        std::fs::rename(&final_dir, &parked).map_err(AgentsError::io("cannot move", &final_dir))?;
    }
    if let Err(e) = std::fs::rename(staging, &final_dir) {
        if swap {
            let _ = std::fs::rename(&parked, &final_dir);
        }
        return Err(AgentsError::io("cannot move the install into", &final_dir)(e).into());
    }
    if plan.kind == DistributionKind::Uvx {
        relocate_venv_scripts(&final_dir, staging)
            .map_err(AgentsError::io("cannot update the scripts of", &final_dir))?;
    }
    let record = InstallRecord {
        id: id.to_owned(),
        name: plan.entry.name.clone(),
        version: plan.version.clone(),
        distribution: plan.kind,
        source: plan.source.clone(),
        program: final_dir.join(&program_rel),
        path: final_dir.clone(),
        args,
        env,
        installed_at: rfc3339(SystemTime::now()),
        registry: origin.to_owned(),
    };
    record.write(dirs)?;
    if swap {
        let _ = std::fs::remove_dir_all(&parked);
    }
    if let Some(old) = previous
        && old.path != final_dir
        && old.path.starts_with(dirs.agent_dir(id))
    {
        let _ = std::fs::remove_dir_all(&old.path);
    }
    Ok(record)
}

/// `cmd` resolved inside the install (symlinks followed, never out of it): it must be an
/// executable file. Returns it relative to the install.
fn check_program(id: &str, root: &Path, cmd: &Path) -> Result<PathBuf, InstallError> {
    use std::os::unix::fs::PermissionsExt;
    let no_program = |reason: String| InstallError::NoProgram {
        id: id.to_owned(),
        program: cmd.to_owned(),
        reason,
    };
    let root = root
        .canonicalize()
        .map_err(AgentsError::io("cannot read", root))?;
    let resolved = resolve_inside(&root, cmd)
        .map_err(|reason| no_program(format!("is not inside the install: {reason}")))?;
    match std::fs::metadata(root.join(&resolved)) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => Ok(cmd
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect()),
        Ok(meta) if meta.is_file() => Err(no_program("is not executable".into())),
        Ok(_) => Err(no_program("is not a file".into())),
        Err(_) => Err(no_program("is not in what was installed".into())),
    }
}

/// Removes what killed installs left (`.staging-*`) and version directories no record names.
/// Called under the agent's lock, so no live install owns any of them.
fn clean_leftovers(
    dirs: &AgentsDirs,
    id: &str,
    record: Option<&InstallRecord>,
) -> Result<(), AgentsError> {
    let dir = dirs.agent_dir(id);
    let entries = std::fs::read_dir(&dir).map_err(AgentsError::io("cannot list", &dir))?;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        let leftover = name.starts_with(".staging-")
            || (valid_version(&name) && record.is_none_or(|r| r.path != path));
        if !leftover {
            continue;
        }
        let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(AgentsError::io("cannot remove the leftover", &path))?;
    }
    Ok(())
}

/// Removes the agent `id`: its record first (from then on it is not installed), then its files.
/// Returns the version removed.
pub fn remove(dirs: &AgentsDirs, id: &str) -> Result<String, InstallError> {
    check_id(id)?;
    let dir = dirs.agent_dir(id);
    if !dir.exists() {
        return Err(AgentsError::NotInstalled(id.to_owned()).into());
    }
    let lock = AgentLock::acquire(dirs, id)?;
    let record = match InstallRecord::read(dirs, id) {
        Ok(Some(record)) => Some(record),
        Ok(None) => None,
        Err(AgentsError::DamagedRecord { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let file = InstallRecord::file(dirs, id);
    match std::fs::remove_file(&file) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            clean_leftovers(dirs, id, None)?;
            return Err(AgentsError::NotInstalled(id.to_owned()).into());
        }
        Err(e) => return Err(AgentsError::io("cannot remove", &file)(e).into()),
    }
    std::fs::remove_dir_all(&dir).map_err(AgentsError::io("cannot remove", &dir))?;
    drop(lock);
    Ok(record.map(|r| r.version).unwrap_or_else(|| "?".into()))
}
