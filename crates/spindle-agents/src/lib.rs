//! Agents from the ACP agent registry: what is installed in Spindle's data directory and how
//! to start it by id.
//!
//! Layout under the data directory (`AgentsDirs::data`):
//!
//! ```text
//! agents/<id>/install.json     the install record (InstallRecord), replaced atomically
//! agents/<id>/<version>/       what the install put there (package prefix, venv, extracted archive)
//! agents/<id>/.lock            the per-agent lock (flock) of install, update and remove
//! agents/<id>/.staging-*       an install being built (or left by a killed one: removed, never used)
//! agents/registry.json         the last registry index fetched from a URL (offline fallback)
//! agents/registry-source.json  where and when it was fetched
//! ```
//!
//! With the features `install` and `doctor` (the `spindle` binary's), the whole of `spindle agents`:
//!
//! ```no_run
//! # #[cfg(feature = "install")] {
//! use spindle_agents::{AgentsDirs, InstallOptions, RegistrySource, install, load_registry, plan_install, find_entry};
//!
//! let dirs = AgentsDirs { data: "/tmp/data".into(), config: "/tmp/config".into() };
//! let loaded = load_registry(&dirs, &RegistrySource::choose(None)).unwrap();
//! let entry = find_entry(&loaded.registry, &loaded.origin, "codex-acp").unwrap();
//! let options = InstallOptions::default();
//! let plan = plan_install(entry, &options).unwrap();
//! install(&dirs, &plan, &loaded.origin, &options).unwrap();
//! let agent = spindle_agents::launch(&dirs, "codex-acp").unwrap();
//! println!("{:?}", agent.command());
//! # }
//! ```
//!
//! Per-agent user settings (extra args, env) live in `agents.toml` in the config directory
//! (`AgentsDirs::config`), see [`UserSettings`].

#![deny(missing_docs)]

#[cfg(feature = "install")]
mod catalog;
mod clock;
mod dirs;
#[cfg(feature = "doctor")]
mod doctor;
#[cfg(feature = "doctor")]
mod doctor_probes;
mod error;
#[cfg(feature = "install")]
mod extract;
#[cfg(feature = "install")]
mod http;
#[cfg(feature = "install")]
mod install;
#[cfg(feature = "install")]
mod install_error;
mod launch;
#[cfg(feature = "install")]
mod lock;
#[cfg(feature = "install")]
mod packages;
mod record;
mod registry;
mod settings;
#[cfg(feature = "install")]
mod source;

#[cfg(feature = "install")]
pub use catalog::{
    ListRow, UpdateOutcome, format_list, format_show, installed_records, list_rows, update_one,
};
pub use clock::{age_in_words, parse_rfc3339, rfc3339};
pub(crate) use dirs::check_id;
pub use dirs::{AgentsDirs, valid_id};
#[cfg(feature = "doctor")]
pub use doctor::{
    DEFAULT_DOCTOR_TIMEOUT, DoctorAuthMethod, DoctorReport, SessionNewReport, doctor, format_doctor,
};
#[cfg(feature = "doctor")]
pub use doctor_probes::{MethodProbe, ProbeOutcome};
pub use error::AgentsError;
#[cfg(feature = "install")]
pub use extract::{ArchiveKind, ExtractError, ExtractLimits, extract};
#[cfg(feature = "install")]
pub use http::{ARCHIVE_LIMIT, DownloadError, Downloaded, INDEX_LIMIT, download_file, fetch_bytes};
#[cfg(feature = "install")]
pub use install::{
    InstallOptions, InstallOutcome, InstallPlan, choose_distribution, find_entry, install,
    plan_install, plan_install_on, remove, tools_present,
};
#[cfg(feature = "install")]
pub use install_error::InstallError;
pub use launch::{AgentLaunch, installed, launch};
#[cfg(feature = "install")]
pub use lock::AgentLock;
#[cfg(feature = "install")]
pub use packages::{find_on_path, split_npm_spec, split_python_spec};
pub use record::{DistributionKind, InstallRecord};
pub use registry::{
    BinaryTarget, DEFAULT_REGISTRY_URL, Distributions, PLATFORMS, PackageDistribution, Registry,
    RegistryEntry, RegistryError, RegistryProblem, current_platform, parse_registry, valid_version,
};
pub use settings::{AgentUserSettings, UserSettings};
#[cfg(feature = "install")]
pub use source::{LoadError, LoadedRegistry, REGISTRY_ENV, RegistrySource, load_registry};
