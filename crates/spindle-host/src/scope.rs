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
//!    canonical form;
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

/// The workspace root.
#[derive(Debug)]
pub(crate) struct Scope {
    /// The root as configured (made absolute).
    root: PathBuf,
    /// The canonical root, or why there is none.
    canonical: Result<PathBuf, String>,
}

/// A path that passed the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Canonical (for a file not yet there: canonical ancestor + the rest).
    pub path: PathBuf,
    /// Relative to the root, for people (`.` for the root itself).
    pub display: String,
    /// The path exists.
    pub exists: bool,
}

impl Scope {
    pub(crate) fn new(root: &Path) -> Scope {
        let root = if root.is_absolute() {
            root.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|d| d.join(root))
                .unwrap_or_else(|_| root.to_path_buf())
        };
        let canonical = match std::fs::canonicalize(&root) {
            Ok(c) if c.is_dir() => Ok(c),
            Ok(_) => Err(format!(
                "the workspace root {} is not a directory",
                root.display()
            )),
            Err(e) => Err(format!(
                "the workspace root {} cannot be used: {e}",
                root.display()
            )),
        };
        Scope { root, canonical }
    }

    /// The canonical root.
    pub(crate) fn root(&self) -> Result<&Path, FsError> {
        self.canonical
            .as_deref()
            .map_err(|e| FsError::new(FsErrorKind::Io, e.clone()))
    }

    /// Rules 1 to 3: the path relative to the root.
    fn relative_part(&self, path: &str) -> Result<PathBuf, FsError> {
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
            return Ok(p.to_path_buf());
        }
        for root in [self.root.as_path(), canonical] {
            if let Ok(rest) = p.strip_prefix(root) {
                return Ok(rest.to_path_buf());
            }
        }
        Err(outside(path, canonical))
    }

    /// Rule 4's check and rule 5.
    fn check_inside(&self, asked: &str, canonical: &Path) -> Result<String, FsError> {
        let root = self.root()?;
        check_not_system(asked, canonical)?;
        // The lexical path was inside (rules 1 to 3): only a symbolic link
        // can have led out.
        let Ok(rest) = canonical.strip_prefix(root) else {
            return Err(FsError::new(
                FsErrorKind::OutsideRoot,
                format!(
                    "{asked}: reaches outside the workspace {} through a symbolic link",
                    root.display()
                ),
            ));
        };
        let display = rest.to_string_lossy().into_owned();
        Ok(if display.is_empty() {
            ".".into()
        } else {
            display
        })
    }

    /// An existing path (file or directory) inside the root.
    pub(crate) fn resolve_existing(&self, path: &str) -> Result<Resolved, FsError> {
        let rel = self.relative_part(path)?;
        let full = self.root()?.join(&rel);
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
        let rel = self.relative_part(path)?;
        let root = self.root()?;
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

fn outside(path: &str, root: &Path) -> FsError {
    FsError::new(
        FsErrorKind::OutsideRoot,
        format!("{path}: outside the workspace {}", root.display()),
    )
}

/// An I/O error about `path` (as the agent spelled it).
pub(crate) fn io_error(path: &str, full: &Path, e: io::Error) -> FsError {
    match e.kind() {
        io::ErrorKind::NotFound => FsError::new(
            FsErrorKind::NotFound,
            format!("{path}: no such file or directory"),
        ),
        io::ErrorKind::PermissionDenied => FsError::new(
            FsErrorKind::Io,
            format!("{path}: permission denied ({})", full.display()),
        ),
        _ => FsError::new(FsErrorKind::Io, format!("{path}: {e}")),
    }
}
