//! What `list`, `show` and `update` say: the registry's entries beside the install records.

use std::fmt::Write as _;

use serde::Serialize;

use crate::install::{InstallOptions, InstallOutcome, find_entry, install, plan_install};
use crate::install_error::InstallError;
use crate::registry::{Registry, RegistryEntry};
use crate::{AgentsDirs, AgentsError, DistributionKind, InstallRecord, valid_id};

/// Every install record under the data directory, by id; damaged ones as errors.
pub fn installed_records(
    dirs: &AgentsDirs,
) -> Result<Vec<Result<InstallRecord, AgentsError>>, AgentsError> {
    let root = dirs.agents_root();
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(AgentsError::io("cannot list", &root)(e)),
    };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| valid_id(name))
        .collect();
    ids.sort();
    Ok(ids
        .into_iter()
        .filter_map(|id| InstallRecord::read(dirs, &id).transpose())
        .collect())
}

/// One line of `spindle agents list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRow {
    /// The id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The registry's version (`None`: installed, no longer in the registry).
    pub registry_version: Option<String>,
    /// The installed version.
    pub installed_version: Option<String>,
    /// Installed, and the registry has a newer version.
    pub update_available: bool,
    /// The installed distribution, or the kinds offered.
    pub distribution: String,
}

/// The registry's agents, then installed agents the registry no longer lists.
pub fn list_rows(
    dirs: &AgentsDirs,
    registry: &Registry,
) -> Result<(Vec<ListRow>, Vec<AgentsError>), AgentsError> {
    let mut records = Vec::new();
    let mut damaged = Vec::new();
    for record in installed_records(dirs)? {
        match record {
            Ok(record) => records.push(record),
            Err(e) => damaged.push(e),
        }
    }
    let mut rows: Vec<ListRow> = registry
        .agents
        .iter()
        .map(|entry| {
            let record = records.iter().find(|r| r.id == entry.id);
            ListRow {
                id: entry.id.clone(),
                name: entry.name.clone(),
                registry_version: Some(entry.version.clone()),
                installed_version: record.map(|r| r.version.clone()),
                update_available: record.is_some_and(|r| {
                    version_order(&entry.version, &r.version) == std::cmp::Ordering::Greater
                }),
                distribution: record
                    .map(|r| r.distribution.as_str().to_owned())
                    .unwrap_or_else(|| entry.distribution.kinds().join(",")),
            }
        })
        .collect();
    rows.extend(
        records
            .iter()
            .filter(|r| registry.agent(&r.id).is_none())
            .map(|r| ListRow {
                id: r.id.clone(),
                name: r.name.clone(),
                registry_version: None,
                installed_version: Some(r.version.clone()),
                update_available: false,
                distribution: r.distribution.as_str().to_owned(),
            }),
    );
    Ok((rows, damaged))
}

/// The rows as a table.
pub fn format_list(rows: &[ListRow]) -> String {
    let width = |f: &dyn Fn(&ListRow) -> usize, title: &str| {
        rows.iter().map(f).max().unwrap_or(0).max(title.len())
    };
    let (w_id, w_name) = (
        width(&|r| r.id.len(), "ID"),
        width(&|r| r.name.chars().count(), "NAME"),
    );
    let w_reg = width(
        &|r| r.registry_version.as_deref().unwrap_or("-").len(),
        "REGISTRY",
    );
    let w_inst = width(
        &|r| r.installed_version.as_deref().unwrap_or("-").len(),
        "INSTALLED",
    );
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:w_id$}  {:w_name$}  {:w_reg$}  {:w_inst$}  DIST",
        "ID", "NAME", "REGISTRY", "INSTALLED"
    );
    for r in rows {
        let mut note = r.distribution.clone();
        if r.update_available {
            note.push_str("  update available");
        }
        if r.registry_version.is_none() {
            note.push_str("  not in the registry");
        }
        let _ = writeln!(
            out,
            "{:w_id$}  {:w_name$}  {:w_reg$}  {:w_inst$}  {note}",
            r.id,
            r.name,
            r.registry_version.as_deref().unwrap_or("-"),
            r.installed_version.as_deref().unwrap_or("-"),
        );
    }
    out
}

/// `spindle agents show ID` as text: the entry (when the registry has it) and the record.
pub fn format_show(entry: Option<&RegistryEntry>, record: Option<&InstallRecord>) -> String {
    let mut out = String::new();
    if let Some(e) = entry {
        let _ = writeln!(out, "{} ({})", e.name, e.id);
        let _ = writeln!(out, "  {}", e.description);
        let _ = writeln!(out, "registry version: {}", e.version);
        for (label, value) in [
            ("repository", &e.repository),
            ("website", &e.website),
            ("license", &e.license),
            ("icon", &e.icon),
        ] {
            if let Some(v) = value {
                let _ = writeln!(out, "{label}: {v}");
            }
        }
        if !e.authors.is_empty() {
            let _ = writeln!(out, "authors: {}", e.authors.join(", "));
        }
        let _ = writeln!(out, "distributions:");
        for (platform, t) in &e.distribution.binary {
            let _ = writeln!(
                out,
                "  binary {platform}: {} (cmd {}{}{})",
                t.archive,
                t.cmd,
                join_args(&t.args),
                t.sha256
                    .as_deref()
                    .map(|s| format!(", sha256 {s}"))
                    .unwrap_or_default()
            );
        }
        for (kind, p) in [("npx", &e.distribution.npx), ("uvx", &e.distribution.uvx)] {
            if let Some(p) = p {
                let cmd = p
                    .cmd
                    .as_deref()
                    .map(|c| format!(" (cmd {c})"))
                    .unwrap_or_default();
                let _ = writeln!(out, "  {kind}: {}{cmd}{}", p.package, join_args(&p.args));
            }
        }
    }
    match record {
        Some(r) => {
            if entry.is_none() {
                let _ = writeln!(out, "{} ({}): not in the registry", r.name, r.id);
            }
            let _ = writeln!(
                out,
                "installed: {} ({}) at {}",
                r.version,
                r.distribution.as_str(),
                r.installed_at
            );
            let _ = writeln!(out, "  from: {}", r.source);
            let _ = writeln!(out, "  path: {}", r.path.display());
            let _ = writeln!(
                out,
                "  program: {}{}",
                r.program.display(),
                join_args(&r.args)
            );
            for (k, v) in &r.env {
                let _ = writeln!(out, "  env {k}={v}");
            }
            if !r.registry.is_empty() {
                let _ = writeln!(out, "  registry: {}", r.registry);
            }
        }
        None => {
            let _ = writeln!(out, "installed: no");
        }
    }
    out
}

fn join_args(args: &[String]) -> String {
    args.iter().map(|a| format!(" {a}")).collect()
}

/// What `update` did for one agent.
#[derive(Debug)]
pub enum UpdateOutcome {
    /// The installed version is the registry's.
    UpToDate(InstallRecord),
    /// Installed the registry's version.
    Updated(InstallOutcome),
    /// The registry no longer lists it.
    NotInRegistry(InstallRecord),
    /// The installed version is newer than the registry's (installed with `--version`): kept,
    /// an update never downgrades. The registry's version is the second field.
    Newer(InstallRecord, String),
}

/// Orders two version strings: semantic versions by SemVer precedence, anything else by its
/// dot-separated numbers, then as text. `update` and `list` use it so that a version newer than
/// the registry's (installed with `--version`) is neither "update available" nor downgraded.
pub fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    if let (Ok(a), Ok(b)) = (semver::Version::parse(a), semver::Version::parse(b)) {
        return a.cmp(&b);
    }
    let numbers = |v: &str| -> Vec<u64> {
        v.split(|c: char| !c.is_ascii_digit())
            .filter(|part| !part.is_empty())
            .map(|part| part.parse().unwrap_or(u64::MAX))
            .collect()
    };
    numbers(a).cmp(&numbers(b)).then_with(|| a.cmp(b))
}

/// Brings the installed agent `id` to the registry's version, keeping its distribution kind
/// when the entry still offers it.
pub fn update_one(
    dirs: &AgentsDirs,
    registry: &Registry,
    origin: &str,
    record: InstallRecord,
    options: &InstallOptions,
) -> Result<UpdateOutcome, InstallError> {
    let entry = match find_entry(registry, origin, &record.id) {
        Ok(entry) => entry,
        Err(InstallError::UnknownId { .. }) => return Ok(UpdateOutcome::NotInRegistry(record)),
        Err(e) => return Err(e),
    };
    match version_order(&entry.version, &record.version) {
        std::cmp::Ordering::Equal => return Ok(UpdateOutcome::UpToDate(record)),
        std::cmp::Ordering::Less => {
            return Ok(UpdateOutcome::Newer(record, entry.version.clone()));
        }
        std::cmp::Ordering::Greater => {}
    }
    let offered = match record.distribution {
        DistributionKind::Binary => !entry.distribution.binary.is_empty(),
        DistributionKind::Npx => entry.distribution.npx.is_some(),
        DistributionKind::Uvx => entry.distribution.uvx.is_some(),
    };
    let options = InstallOptions {
        version: None,
        dist: options.dist.or(offered.then_some(record.distribution)),
        ..options.clone()
    };
    let plan = plan_install(entry, &options)?;
    Ok(UpdateOutcome::Updated(install(
        dirs, &plan, origin, &options,
    )?))
}

#[cfg(test)]
mod version_order_tests {
    use super::version_order;
    use std::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn versions_order_by_precedence_not_text() {
        let cases = [
            ("0.61.0", "0.27.3", Greater),
            ("0.9.2", "0.10.0", Less),
            ("2.6.0", "2.6.0", Equal),
            ("1.0.0-beta.2", "1.0.0", Less),
            ("1.0.0-beta.10", "1.0.0-beta.2", Greater),
            ("0.10.48", "0.10.5", Greater),
            ("2024.1", "2023.12", Greater),
        ];
        for (a, b, want) in cases {
            assert_eq!(version_order(a, b), want, "{a} vs {b}");
            assert_eq!(version_order(b, a), want.reverse(), "{b} vs {a}");
        }
    }
}
