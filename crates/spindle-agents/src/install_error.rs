//! Why an install, update or remove failed: one message per cause, naming what to do.

use std::path::PathBuf;

use crate::AgentsError;
use crate::extract::ExtractError;
use crate::http::DownloadError;

/// Why an install, update or remove failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A record, lock or file operation.
    #[error(transparent)]
    Agents(#[from] AgentsError),
    /// No such id in the registry.
    #[error("no agent {id:?} in the registry {registry} (see `spindle agents list`)")]
    UnknownId {
        /// The id asked for.
        id: String,
        /// The registry's URL or file.
        registry: String,
    },
    /// The id's entry is in the index but breaks the format.
    #[error("the registry entry of {id:?} cannot be used: {problem}")]
    BrokenEntry {
        /// The id.
        id: String,
        /// The problem.
        problem: String,
    },
    /// `--dist` asked for a kind the entry does not offer.
    #[error("{id} is not distributed as {kind} (it offers: {offered})")]
    NotOffered {
        /// The id.
        id: String,
        /// The kind asked for.
        kind: &'static str,
        /// What it offers.
        offered: String,
    },
    /// No archive for this platform.
    #[error(
        "{id} has no binary for {platform} (it has: {platforms}){}",
        others_hint(others)
    )]
    NoBinaryForPlatform {
        /// The id.
        id: String,
        /// This platform's key.
        platform: String,
        /// The platforms it has.
        platforms: String,
        /// The other kinds it offers.
        others: Vec<&'static str>,
    },
    /// `--version` of a binary distribution other than the registry's.
    #[error(
        "{id}'s binary archives are those of version {offered} (the registry's); --version {asked} needs an npx or uvx distribution"
    )]
    VersionUnavailable {
        /// The id.
        id: String,
        /// The version asked for.
        asked: String,
        /// The registry's.
        offered: String,
    },
    /// The same version is installed from another distribution.
    #[error(
        "{id} {version} is installed already as {installed}; remove it first (`spindle agents remove {id}`) to install it as {asked}"
    )]
    InstalledAsOtherKind {
        /// The id.
        id: String,
        /// The version.
        version: String,
        /// The installed kind.
        installed: &'static str,
        /// The kind asked for.
        asked: &'static str,
    },
    /// A version that is not one.
    #[error("{0:?} is not a version (MAJOR.MINOR.PATCH, letters, digits, '.', '-', '+', '_')")]
    InvalidVersion(String),
    /// node/npm/python missing.
    #[error("the {kind} distribution of {id} needs {tool}, which is not on PATH: {hint}")]
    MissingTool {
        /// The id.
        id: String,
        /// The distribution kind.
        kind: &'static str,
        /// The missing program.
        tool: String,
        /// What to install.
        hint: String,
    },
    /// A download failed.
    #[error(transparent)]
    Download(#[from] DownloadError),
    /// The archive is not the one the registry describes.
    #[error("the SHA-256 of {url} is {actual}, but the registry says {expected}: refusing it")]
    ChecksumMismatch {
        /// The archive URL.
        url: String,
        /// The registry's digest.
        expected: String,
        /// The download's.
        actual: String,
    },
    /// Unpacking refused or failed.
    #[error(transparent)]
    Extract(#[from] ExtractError),
    /// npm, uv, pip or python failed.
    #[error("`{command}` failed ({status}){}", if output.is_empty() { String::new() } else { format!(":\n{output}") })]
    ToolFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// The end of its output.
        output: String,
    },
    /// The program to run is not where the entry says.
    #[error("{id}: the program {} {reason}", program.display())]
    NoProgram {
        /// The id.
        id: String,
        /// Where it was looked for.
        program: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

fn others_hint(others: &[&str]) -> String {
    if others.is_empty() {
        String::new()
    } else {
        format!("; it also offers {} (use --dist)", others.join(", "))
    }
}
