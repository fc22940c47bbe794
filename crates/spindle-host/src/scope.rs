//! Where the agent may reach: every path is resolved inside the workspace
//! root, symbolic links included.
//!
//! Rules (in order):
//! 1. a path is a non-empty string without NUL; a relative path is taken
//!    relative to the root (ACP says paths are absolute; a relative one is
//!    accepted because it cannot reach further than an absolute one);
//! 2. no `..` component, anywhere (lexical `..` disagrees with the kernel's
//!    once a symbolic link precedes it, so it is refused outright);
//! 3. an absolute path must start with the root, as configured or as its
//!    canonical form, or with one of the session's additional directories
//!    (`additionalDirectories`), each a root of its own for rules 2 to 5;
//! 4. the path is canonicalized (for a file that does not exist yet, its
//!    deepest existing ancestor is), and the result must still lie under the
//!    canonical root: a symbolic link inside the root that points out of it
//!    is refused, file or directory alike; a dangling link is refused too;
//! 5. `/proc`, `/sys` and `/dev` are refused whatever the root.

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::errors::{FsError, FsErrorKind};

/// System trees never served, even under a root that contains them.
const SYSTEM_TREES: [&str; 3] = ["/proc", "/sys", "/dev"];

/// One root: as configured (made absolute) and canonical (or why there is
/// no canonical form).
#[derive(Debug)]
struct Root {
    configured: PathBuf,
    canonical: Result<PathBuf, String>,
}

impl Root {
    fn new(root: &Path, what: &str) -> Root {
        let root = if root.is_absolute() {
            root.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|d| d.join(root))
                .unwrap_or_else(|_| root.to_path_buf())
        };
        let canonical = match std::fs::canonicalize(&root) {
            Ok(c) if c.is_dir() => Ok(c),
            Ok(_) => Err(format!("{what} {} is not a directory", root.display())),
            Err(e) => Err(format!("{what} {} cannot be used: {e}", root.display())),
        };
        Root {
            configured: root,
            canonical,
        }
    }

    fn canonical(&self) -> Result<&Path, FsError> {
        self.canonical
            .as_deref()
            .map_err(|e| FsError::new(FsErrorKind::Io, e.clone()))
    }
}

/// The workspace root and the session's additional directories: a path is
/// in scope when it lies under any of them (relative paths are taken from
/// the workspace root).
#[derive(Debug)]
pub(crate) struct Scope {
    /// The workspace root first, then the additional directories.
    roots: Vec<Root>,
}

/// A path that passed the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Canonical (for a file not yet there: canonical ancestor + the rest).
    pub path: PathBuf,
    /// Relative to the workspace root, for people (`.` for the root
    /// itself); absolute for a path in an additional directory.
    pub display: String,
    /// The path exists.
    pub exists: bool,
}

impl Scope {
    /// The workspace `root` and `additional` directories (each also a root
    /// of its own for rules 2 to 5).
    pub(crate) fn with_additional(root: &Path, additional: &[PathBuf]) -> Scope {
        let mut roots = vec![Root::new(root, "the workspace root")];
        roots.extend(
            additional
                .iter()
                .map(|dir| Root::new(dir, "the additional directory")),
        );
        Scope { roots }
    }

    /// The canonical workspace root.
    pub(crate) fn root(&self) -> Result<&Path, FsError> {
        self.roots[0].canonical()
    }

    /// Whether a canonical path lies under one of the canonical roots.
    pub(crate) fn contains(&self, canonical: &Path) -> bool {
        self.roots
            .iter()
            .filter_map(|r| r.canonical.as_deref().ok())
            .any(|root| canonical.starts_with(root))
    }

    /// Rules 1 to 3: the canonical root the path belongs to and the path
    /// relative to it.
    fn relative_part(&self, path: &str) -> Result<(&Path, PathBuf), FsError> {
        if path.is_empty() {
            return Err(FsError::new(FsErrorKind::InvalidPath, "the path is empty"));
        }
        if path.contains('\0') {
            return Err(FsError::new(
                FsErrorKind::InvalidPath,
                "the path contains a NUL character",
            ));
        }
        let p = Path::new(path);
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(FsError::new(
                FsErrorKind::InvalidPath,
                format!("{path}: paths with `..` are not accepted"),
            ));
        }
        let canonical = self.root()?;
        if !p.is_absolute() {
            return Ok((canonical, p.to_path_buf()));
        }
        for root in &self.roots {
            let Ok(root_canonical) = root.canonical() else {
                continue;
            };
            for prefix in [root.configured.as_path(), root_canonical] {
                if let Ok(rest) = p.strip_prefix(prefix) {
                    return Ok((root_canonical, rest.to_path_buf()));
                }
            }
        }
        Err(self.outside(path))
    }

    fn outside(&self, path: &str) -> FsError {
        let root = self
            .root()
            .map(|r| r.display().to_string())
            .unwrap_or_default();
        let extra: Vec<String> = self.roots[1..]
            .iter()
            .filter_map(|r| r.canonical.as_ref().ok())
            .map(|r| r.display().to_string())
            .collect();
        let message = if extra.is_empty() {
            format!("{path}: outside the workspace {root}")
        } else {
            format!(
                "{path}: outside the workspace {root} and its additional directories {}",
                extra.join(", ")
            )
        };
        FsError::new(FsErrorKind::OutsideRoot, message)
    }

    /// Rule 4's check and rule 5: the canonical path must lie under one of
    /// the canonical roots (a symbolic link from the workspace into an
    /// additional directory stays in scope).
    fn check_inside(&self, asked: &str, canonical: &Path) -> Result<String, FsError> {
        let root = self.root()?;
        check_not_system(asked, canonical)?;
        if let Ok(rest) = canonical.strip_prefix(root) {
            let display = rest.to_string_lossy().into_owned();
            return Ok(if display.is_empty() {
                ".".into()
            } else {
                display
            });
        }
        if self.contains(canonical) {
            return Ok(canonical.to_string_lossy().into_owned());
        }
        // The lexical path was inside (rules 1 to 3): only a symbolic link
        // can have led out.
        Err(FsError::new(
            FsErrorKind::OutsideRoot,
            format!(
                "{asked}: reaches outside the workspace {} through a symbolic link",
                root.display()
            ),
        ))
    }

    /// An existing path (file or directory) inside the root.
    pub(crate) fn resolve_existing(&self, path: &str) -> Result<Resolved, FsError> {
        let (root, rel) = self.relative_part(path)?;
        let full = root.join(&rel);
        check_not_system(path, &full)?;
        let canonical = std::fs::canonicalize(&full).map_err(|e| io_error(path, &full, e))?;
        let display = self.check_inside(path, &canonical)?;
        Ok(Resolved {
            path: canonical,
            display,
            exists: true,
        })
    }

    /// A path to write: an existing file, or a new one whose deepest existing
    /// ancestor is inside the root (the missing directories below it are
    /// created by the write).
    pub(crate) fn resolve_for_write(&self, path: &str) -> Result<Resolved, FsError> {
        let (root, rel) = self.relative_part(path)?;
        let full = root.join(&rel);
        check_not_system(path, &full)?;
        match std::fs::canonicalize(&full) {
            Ok(canonical) => {
                let display = self.check_inside(path, &canonical)?;
                return Ok(Resolved {
                    path: canonical,
                    display,
                    exists: true,
                });
            }
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(io_error(path, &full, e));
            }
            Err(_) => {}
        }
        // Walk up to the deepest ancestor that exists.
        let mut missing: Vec<std::ffi::OsString> = Vec::new();
        let mut ancestor = full.clone();
        let canonical_ancestor = loop {
            let Some(name) = ancestor.file_name().map(|n| n.to_os_string()) else {
                return Err(FsError::new(
                    FsErrorKind::InvalidPath,
                    format!("{path}: not a file path"),
                ));
            };
            // A name that exists but does not canonicalize is a dangling
            // symbolic link (or a loop): never written through.
            if std::fs::symlink_metadata(&ancestor).is_ok() {
                return Err(FsError::new(
                    FsErrorKind::OutsideRoot,
                    format!(
                        "{path}: {} is a symbolic link to nothing; not written through",
                        ancestor.display()
                    ),
                ));
            }
            missing.push(name);
            if !ancestor.pop() {
                return Err(FsError::new(
                    FsErrorKind::InvalidPath,
                    format!("{path}: no existing directory above it"),
                ));
            }
            match std::fs::canonicalize(&ancestor) {
                Ok(c) => break c,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error(path, &ancestor, e)),
            }
        };
        self.check_inside(path, &canonical_ancestor)?;
        if !canonical_ancestor.is_dir() {
            return Err(FsError::new(
                FsErrorKind::NotAFile,
                format!(
                    "{path}: {} is not a directory",
                    canonical_ancestor.display()
                ),
            ));
        }
        let mut target = canonical_ancestor;
        target.extend(missing.iter().rev());
        let display = self.check_inside(path, &target)?;
        Ok(Resolved {
            path: target,
            display,
            exists: false,
        })
    }
}

/// Rule 5, on a lexical or canonical path.
fn check_not_system(asked: &str, path: &Path) -> Result<(), FsError> {
    if SYSTEM_TREES.iter().any(|tree| path.starts_with(tree)) {
        return Err(FsError::new(
            FsErrorKind::OutsideRoot,
            format!("{asked}: system files (/proc, /sys, /dev) are not served"),
        ));
    }
    Ok(())
}

/// An I/O error about `path` (as the agent spelled it).
pub(crate) fn io_error(path: &str, full: &Path, e: io::Error) -> FsError {
    match e.kind() {
        io::ErrorKind::NotFound => FsError::about(
            FsErrorKind::NotFound,
            path,
            format!("{path}: no such file or directory"),
        ),
        io::ErrorKind::PermissionDenied => FsError::new(
            FsErrorKind::Io,
            format!("{path}: permission denied ({})", full.display()),
        ),
        _ => FsError::new(FsErrorKind::Io, format!("{path}: {e}")),
    }
}
