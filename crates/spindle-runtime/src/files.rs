//! `@`-completion for the page: the names in one directory under the session's working
//! directory that start with what was typed. Read-only, one directory at a time, never outside
//! the working directory (`..`, absolute paths and symlinks out of it are refused), no dotfiles
//! unless the typed name starts with a dot, at most [`MAX_FILES`] names.

use std::path::{Component, Path};

use crate::error::SessionError;

/// The most names one completion returns.
pub const MAX_FILES: usize = 50;

/// The most directory entries one completion looks at (a huge directory is cut, not slow).
const MAX_SCANNED: usize = 20_000;

/// The completions of `prefix` (a path relative to `root`, e.g. `src/ma`): paths relative to
/// `root`, directories ending in `/`, sorted.
pub fn complete(root: &Path, prefix: &str) -> Result<Vec<String>, SessionError> {
    if prefix.contains('\0') || prefix.len() > 4096 {
        return Err(SessionError::invalid_params("that is not a usable path"));
    }
    let (dir_part, partial) = match prefix.rfind('/') {
        Some(at) => (&prefix[..=at], &prefix[at + 1..]),
        None => ("", prefix),
    };
    let relative = Path::new(dir_part);
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(SessionError::invalid_params(
            "only paths inside the session's directory complete (no `..`, no absolute paths)",
        ));
    }
    let base = root.canonicalize().map_err(|e| {
        SessionError::unavailable(format!("the session's directory is unusable: {e}"))
    })?;
    let Ok(dir) = base.join(relative).canonicalize() else {
        return Ok(Vec::new());
    };
    if !dir.starts_with(&base) {
        return Err(SessionError::invalid_params(
            "that directory leads outside the session's directory",
        ));
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut names = Vec::new();
    for entry in entries.take(MAX_SCANNED).flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !name.starts_with(partial) || (name.starts_with('.') && !partial.starts_with('.')) {
            continue;
        }
        // Followed like a mention would be: a symlink to a directory completes as one.
        let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
        names.push(format!("{dir_part}{name}{}", if is_dir { "/" } else { "" }));
    }
    names.sort();
    names.truncate(MAX_FILES);
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_inside_the_root_only() {
        let root = std::env::temp_dir().join(format!("spindle-web-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::write(root.join("src/map.rs"), "").unwrap();
        std::fs::write(root.join(".env"), "").unwrap();
        std::fs::write(root.join("README"), "").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        assert_eq!(
            complete(&root, "src/ma").unwrap(),
            ["src/main.rs", "src/map.rs"]
        );
        assert_eq!(complete(&root, "src/d").unwrap(), ["src/deep/"]);
        let top = complete(&root, "").unwrap();
        assert!(top.contains(&"README".to_string()) && !top.contains(&".env".to_string()));
        assert_eq!(complete(&root, ".e").unwrap(), [".env"]);
        assert!(complete(&root, "../").is_err());
        assert!(complete(&root, "/etc/").is_err());
        #[cfg(unix)]
        assert!(complete(&root, "etc/pa").is_err());
        assert!(complete(&root, "nope/x").unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }
}
