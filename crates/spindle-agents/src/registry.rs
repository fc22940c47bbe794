//! The ACP registry index (`registry.json`): its entries, read leniently and checked strictly.
//!
//! The format is the registry repository's `FORMAT.md` and `agent.schema.json`: a `version`, a list of
//! `agents` and (optionally) a list of `extensions`, each entry with an `id`, `name`, `version`,
//! `description` and `distribution` (`binary` per platform, `npx`, `uvx`). Unknown fields are
//! tolerated (the registry grows). One Spindle extension: a binary target may carry `sha256`, the hex
//! digest of its archive, checked after the download.
//!
//! Parsing never stops at a bad entry: a whole index that is not JSON, or has no `agents`, is an
//! error; an entry that breaks the format is dropped and reported in [`Registry::problems`], naming
//! its position, its id when it has one, and the field.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::valid_id;

/// The official registry index.
pub const DEFAULT_REGISTRY_URL: &str =
    "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

/// The platform keys of binary distributions, as the registry spells them.
pub const PLATFORMS: [&str; 6] = [
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
];

/// The registry key of the platform Spindle runs on (`linux-x86_64`, ...), from the compile target.
pub fn current_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("{os}-{}", std::env::consts::ARCH)
}

/// A parsed registry index.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Registry {
    /// The index's format version.
    pub version: String,
    /// The agents that passed the checks, in index order.
    pub agents: Vec<RegistryEntry>,
    /// The entries that did not, each with the reason.
    pub problems: Vec<RegistryProblem>,
}

impl Registry {
    /// The agent entry `id`.
    pub fn agent(&self, id: &str) -> Option<&RegistryEntry> {
        self.agents.iter().find(|a| a.id == id)
    }

    /// The problem that dropped the entry `id`, if one did.
    pub fn problem_of(&self, id: &str) -> Option<&RegistryProblem> {
        self.problems.iter().find(|p| p.id.as_deref() == Some(id))
    }
}

/// One agent of the registry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegistryEntry {
    /// The id (`^[a-z][a-z0-9-]*$`).
    pub id: String,
    /// The display name.
    pub name: String,
    /// The version the registry offers.
    pub version: String,
    /// One line about the agent.
    pub description: String,
    /// Source repository.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Home page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    /// Authors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// SPDX license or `proprietary`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Icon (path or URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// How to get it.
    pub distribution: Distributions,
}

/// The distributions an entry offers (at least one).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Distributions {
    /// Archives by platform key.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub binary: BTreeMap<String, BinaryTarget>,
    /// An npm package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub npx: Option<PackageDistribution>,
    /// A PyPI package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uvx: Option<PackageDistribution>,
}

impl Distributions {
    /// The kinds offered, in the registry's order (`binary`, `npx`, `uvx`).
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut kinds = Vec::new();
        if !self.binary.is_empty() {
            kinds.push("binary");
        }
        if self.npx.is_some() {
            kinds.push("npx");
        }
        if self.uvx.is_some() {
            kinds.push("uvx");
        }
        kinds
    }
}

/// One platform's archive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinaryTarget {
    /// Where to download it.
    pub archive: String,
    /// The program, relative to the extracted archive (`./codex-acp`).
    pub cmd: String,
    /// Arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Spindle extension: the archive's SHA-256, lowercase hex, checked when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// An npm or PyPI package.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PackageDistribution {
    /// The package, possibly with a version (`@scope/name@1.2.3`, `name==1.2.3`).
    pub package: String,
    /// The program the package installs, when not named after the package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cmd: Option<String>,
    /// Arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// Why an index cannot be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Not JSON.
    #[error("the registry index is not JSON: {0}")]
    NotJson(String),
    /// The top level breaks the format.
    #[error("the registry index: {field}: {problem}")]
    Malformed {
        /// The top-level field.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// An entry dropped from the index, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("registry entry agents[{index}]{}: {field}: {problem}", id.as_deref().map(|id| format!(" ({id:?})")).unwrap_or_default())]
pub struct RegistryProblem {
    /// The position in `agents`.
    pub index: usize,
    /// The entry's id, when it has a string one.
    pub id: Option<String>,
    /// The field, as a path (`distribution.binary.linux-x86_64.archive`).
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

/// Reads a registry index.
pub fn parse_registry(text: &str) -> Result<Registry, RegistryError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| RegistryError::NotJson(e.to_string()))?;
    let Value::Object(top) = value else {
        return Err(RegistryError::Malformed {
            field: "(top level)".into(),
            problem: format!("expected an object, found {}", kind_of(&value)),
        });
    };
    let malformed = |field: &str, problem: String| RegistryError::Malformed {
        field: field.into(),
        problem,
    };
    let version = match top.get("version") {
        Some(Value::String(v)) => v.clone(),
        Some(other) => {
            return Err(malformed(
                "version",
                format!("expected a string, found {}", kind_of(other)),
            ));
        }
        None => return Err(malformed("version", "missing".into())),
    };
    let entries = match top.get("agents") {
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            return Err(malformed(
                "agents",
                format!("expected an array, found {}", kind_of(other)),
            ));
        }
        None => return Err(malformed("agents", "missing".into())),
    };
    let mut registry = Registry {
        version,
        ..Registry::default()
    };
    for (index, entry) in entries.iter().enumerate() {
        let id = entry.get("id").and_then(Value::as_str).map(str::to_owned);
        let problem = |(field, problem): (String, String)| RegistryProblem {
            index,
            id: id.clone(),
            field,
            problem,
        };
        match parse_entry(entry) {
            Ok(parsed) if registry.agent(&parsed.id).is_some() => {
                registry.problems.push(problem((
                    "id".into(),
                    "the same id as an earlier entry (the earlier one is used)".into(),
                )));
            }
            Ok(parsed) => registry.agents.push(parsed),
            Err(e) => registry.problems.push(problem(e)),
        }
    }
    Ok(registry)
}

/// A field path and what is wrong there.
type FieldError = (String, String);

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads the fields of one object, each error carrying the path below `prefix`.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    prefix: String,
}

impl<'a> Fields<'a> {
    fn of(value: &'a Value, path: &str) -> Result<Fields<'a>, FieldError> {
        match value {
            Value::Object(object) => Ok(Fields {
                object,
                prefix: if path.is_empty() {
                    String::new()
                } else {
                    format!("{path}.")
                },
            }),
            other => Err((
                if path.is_empty() {
                    "(entry)".into()
                } else {
                    path.into()
                },
                format!("expected an object, found {}", kind_of(other)),
            )),
        }
    }

    fn path(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn wrong(&self, key: &str, expected: &str, found: &Value) -> FieldError {
        (
            self.path(key),
            format!("expected {expected}, found {}", kind_of(found)),
        )
    }

    fn optional_string(&self, key: &str) -> Result<Option<String>, FieldError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    fn string(&self, key: &str) -> Result<String, FieldError> {
        match self.optional_string(key)? {
            Some(s) if s.trim().is_empty() => Err((self.path(key), "empty".into())),
            Some(s) => Ok(s),
            None => Err((self.path(key), "missing".into())),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, FieldError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err((
                        format!("{}[{i}]", self.path(key)),
                        format!("expected a string, found {}", kind_of(other)),
                    )),
                })
                .collect(),
            Some(other) => Err(self.wrong(key, "an array of strings", other)),
        }
    }

    fn env(&self, key: &str) -> Result<BTreeMap<String, String>, FieldError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(vars)) => vars
                .iter()
                .map(|(name, value)| match value {
                    Value::String(s) => Ok((name.clone(), s.clone())),
                    other => Err((
                        format!("{}.{name}", self.path(key)),
                        format!("expected a string, found {}", kind_of(other)),
                    )),
                })
                .collect(),
            Some(other) => Err(self.wrong(key, "an object of strings", other)),
        }
    }
}

/// Whether `version` is a semantic version that can name a directory: it starts with
/// `MAJOR.MINOR.PATCH` (the schema's pattern) and holds only letters, digits, `.`, `-`, `+`, `_`.
pub fn valid_version(version: &str) -> bool {
    let mut parts = version.splitn(3, '.');
    let numeric =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let (major, minor, rest) = (parts.next(), parts.next(), parts.next().unwrap_or(""));
    let patch: String = rest.chars().take_while(char::is_ascii_digit).collect();
    numeric(major)
        && numeric(minor)
        && !patch.is_empty()
        && version.len() <= 64
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'))
}

fn parse_entry(entry: &Value) -> Result<RegistryEntry, FieldError> {
    let fields = Fields::of(entry, "")?;
    let id = fields.string("id")?;
    if !valid_id(&id) {
        return Err((
            "id".into(),
            format!(
                "{id:?} is not an id (lowercase letters, digits and '-', starting with a letter)"
            ),
        ));
    }
    let version = fields.string("version")?;
    if !valid_version(&version) {
        return Err((
            "version".into(),
            format!("{version:?} is not a version (MAJOR.MINOR.PATCH...)"),
        ));
    }
    let distribution = match entry.get("distribution") {
        Some(value) => parse_distributions(value)?,
        None => return Err(("distribution".into(), "missing".into())),
    };
    Ok(RegistryEntry {
        name: fields.string("name")?,
        description: fields.string("description")?,
        repository: fields.optional_string("repository")?,
        website: fields.optional_string("website")?,
        authors: fields.strings("authors")?,
        license: fields.optional_string("license")?,
        icon: fields.optional_string("icon")?,
        id,
        version,
        distribution,
    })
}

fn parse_distributions(value: &Value) -> Result<Distributions, FieldError> {
    let fields = Fields::of(value, "distribution")?;
    let mut distributions = Distributions::default();
    if let Some(binary) = fields.object.get("binary") {
        let targets = Fields::of(binary, "distribution.binary")?;
        for (platform, target) in targets.object {
            let path = targets.path(platform);
            distributions
                .binary
                .insert(platform.clone(), parse_binary_target(target, &path)?);
        }
        if distributions.binary.is_empty() {
            return Err(("distribution.binary".into(), "no platform".into()));
        }
    }
    for (key, slot) in [
        ("npx", &mut distributions.npx),
        ("uvx", &mut distributions.uvx),
    ] {
        if let Some(package) = fields.object.get(key) {
            *slot = Some(parse_package(package, &fields.path(key))?);
        }
    }
    if distributions.kinds().is_empty() {
        return Err((
            "distribution".into(),
            "offers none of binary, npx, uvx".into(),
        ));
    }
    Ok(distributions)
}

fn parse_binary_target(value: &Value, path: &str) -> Result<BinaryTarget, FieldError> {
    let fields = Fields::of(value, path)?;
    let archive = fields.string("archive")?;
    if !(archive.starts_with("https://") || archive.starts_with("http://")) {
        return Err((
            fields.path("archive"),
            format!("{archive:?} is not an http(s) URL"),
        ));
    }
    let sha256 = match fields.optional_string("sha256")? {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(hex.to_ascii_lowercase())
        }
        Some(hex) => {
            return Err((
                fields.path("sha256"),
                format!("{hex:?} is not a SHA-256 digest (64 hex digits)"),
            ));
        }
        None => None,
    };
    Ok(BinaryTarget {
        archive,
        cmd: fields.string("cmd")?,
        args: fields.strings("args")?,
        env: fields.env("env")?,
        sha256,
    })
}

fn parse_package(value: &Value, path: &str) -> Result<PackageDistribution, FieldError> {
    let fields = Fields::of(value, path)?;
    let cmd = fields.optional_string("cmd")?;
    if let Some(cmd) = &cmd
        && (cmd.is_empty() || cmd.contains('/') || cmd.starts_with('.'))
    {
        return Err((
            fields.path("cmd"),
            format!("{cmd:?} is not a program name (no '/', not starting with '.')"),
        ));
    }
    Ok(PackageDistribution {
        package: fields.string("package")?,
        cmd,
        args: fields.strings("args")?,
        env: fields.env("env")?,
    })
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
