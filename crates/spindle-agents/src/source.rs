//! Where the registry index comes from (`--registry URL|FILE`, `SPINDLE_REGISTRY`, else the official
//! URL), and the copy of the last fetched index kept in the data directory for when the network is
//! not there.
//!
//! ```text
//! <data>/agents/registry.json          the last index fetched from a URL, as fetched
//! <data>/agents/registry-source.json   {"url": ..., "fetchedAt": RFC 3339}
//! ```

use std::path::PathBuf;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::clock::{age_in_words, parse_rfc3339, rfc3339};
use crate::http::{INDEX_LIMIT, fetch_bytes};
use crate::record::write_atomically;
use crate::registry::{DEFAULT_REGISTRY_URL, Registry, RegistryError, parse_registry};
use crate::{AgentsDirs, AgentsError};

/// The environment variable naming the registry (URL or file) when `--registry` is not given.
pub const REGISTRY_ENV: &str = "SPINDLE_REGISTRY";

/// A registry index location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistrySource {
    /// Fetched over HTTP(S); the last good copy is cached.
    Url(String),
    /// A local file, read every time (no cache).
    File(PathBuf),
}

impl RegistrySource {
    /// `http://` and `https://` are URLs, `file://` and anything else a path.
    pub fn parse(text: &str) -> RegistrySource {
        if text.starts_with("https://") || text.starts_with("http://") {
            RegistrySource::Url(text.to_owned())
        } else if let Some(path) = text.strip_prefix("file://") {
            RegistrySource::File(PathBuf::from(path))
        } else {
            RegistrySource::File(PathBuf::from(text))
        }
    }

    /// `--registry` when given, else `SPINDLE_REGISTRY` when set, else the official URL.
    pub fn choose(flag: Option<&str>) -> RegistrySource {
        let env = std::env::var(REGISTRY_ENV).ok().filter(|v| !v.is_empty());
        RegistrySource::parse(flag.or(env.as_deref()).unwrap_or(DEFAULT_REGISTRY_URL))
    }

    /// The URL, or the path as given.
    pub fn describe(&self) -> String {
        match self {
            RegistrySource::Url(url) => url.clone(),
            RegistrySource::File(path) => path.display().to_string(),
        }
    }
}

/// An index read, with where it came from.
#[derive(Debug, Clone)]
pub struct LoadedRegistry {
    /// The index.
    pub registry: Registry,
    /// The URL or file it was read from (recorded in install records).
    pub origin: String,
    /// Set when the fetch failed and the cached copy was used: what to tell the user.
    pub notice: Option<String>,
}

/// Why no index could be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Reading the file failed.
    #[error("cannot read the registry {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Fetching failed and there is no cached copy of that URL.
    #[error(
        "{reason} (and no copy of it is cached in {cache}; use --registry FILE to work offline)"
    )]
    Unreachable {
        /// The fetch error.
        reason: String,
        /// The cache file.
        cache: PathBuf,
    },
    /// The index is malformed.
    #[error("{origin}: {error}")]
    Malformed {
        /// The URL or file.
        origin: String,
        /// The problem.
        error: RegistryError,
    },
    /// Writing the cache failed.
    #[error(transparent)]
    Cache(#[from] AgentsError),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CacheSource {
    url: String,
    fetched_at: String,
}

fn cache_files(dirs: &AgentsDirs) -> (PathBuf, PathBuf) {
    let root = dirs.agents_root();
    (
        root.join("registry.json"),
        root.join("registry-source.json"),
    )
}

/// Reads the index from `source`. A URL whose fetch fails (or whose answer is not a registry)
/// falls back to the cached copy of that same URL, with a notice giving its age. Blocking (the
/// download uses reqwest's blocking client): call it off the async runtime's threads.
pub fn load_registry(
    dirs: &AgentsDirs,
    source: &RegistrySource,
) -> Result<LoadedRegistry, LoadError> {
    match source {
        RegistrySource::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| LoadError::File {
                path: path.clone(),
                source,
            })?;
            let origin = std::path::absolute(path)
                .unwrap_or_else(|_| path.clone())
                .display()
                .to_string();
            let registry = parse_registry(&text).map_err(|error| LoadError::Malformed {
                origin: origin.clone(),
                error,
            })?;
            Ok(LoadedRegistry {
                registry,
                origin,
                notice: None,
            })
        }
        RegistrySource::Url(url) => {
            let fetched = fetch_bytes(url, INDEX_LIMIT)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    let text = String::from_utf8(bytes)
                        .map_err(|_| format!("{url}: the registry index is not UTF-8"))?;
                    let registry = parse_registry(&text).map_err(|e| format!("{url}: {e}"))?;
                    Ok((text, registry))
                });
            match fetched {
                Ok((text, registry)) => {
                    write_cache(dirs, url, &text)?;
                    Ok(LoadedRegistry {
                        registry,
                        origin: url.clone(),
                        notice: None,
                    })
                }
                Err(reason) => from_cache(dirs, url, reason),
            }
        }
    }
}

fn write_cache(dirs: &AgentsDirs, url: &str, text: &str) -> Result<(), AgentsError> {
    let root = dirs.agents_root();
    std::fs::create_dir_all(&root).map_err(AgentsError::io("cannot create", &root))?;
    let (index, meta) = cache_files(dirs);
    write_atomically(&index, text.as_bytes())?;
    let source = CacheSource {
        url: url.to_owned(),
        fetched_at: rfc3339(SystemTime::now()),
    };
    let json = serde_json::to_string_pretty(&source).expect("serializes");
    write_atomically(&meta, json.as_bytes())
}

fn from_cache(dirs: &AgentsDirs, url: &str, reason: String) -> Result<LoadedRegistry, LoadError> {
    let (index, meta) = cache_files(dirs);
    let unreachable = |reason: String| LoadError::Unreachable {
        reason,
        cache: index.clone(),
    };
    let source: Option<CacheSource> = std::fs::read_to_string(&meta)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let Some(source) = source.filter(|s| s.url == url) else {
        return Err(unreachable(reason));
    };
    let Ok(text) = std::fs::read_to_string(&index) else {
        return Err(unreachable(reason));
    };
    let registry = parse_registry(&text).map_err(|error| LoadError::Malformed {
        origin: index.display().to_string(),
        error,
    })?;
    let age = parse_rfc3339(&source.fetched_at)
        .and_then(|at| SystemTime::now().duration_since(at).ok())
        .map(age_in_words)
        .unwrap_or_else(|| "an unknown time".to_owned());
    Ok(LoadedRegistry {
        registry,
        origin: url.to_owned(),
        notice: Some(format!(
            "{reason}; using the copy fetched {age} ago from {url}"
        )),
    })
}
