//! `@path` mentions: a file under the workspace root, resolved like a read,
//! with what a prompt block needs (a `file://` URI, a MIME type, the text
//! when it is small UTF-8), and path completion for typing them.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::config::HostLimits;
use crate::errors::{FsError, FsErrorKind};
use crate::scope::{Scope, io_error};

/// A mentioned file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedFile {
    /// The canonical path.
    pub path: PathBuf,
    /// `file://` URI of `path` (percent-encoded).
    pub uri: String,
    /// The path relative to the workspace root.
    pub display_path: String,
    /// The MIME type guessed from the extension (`text/plain` for unknown
    /// text, `application/octet-stream` for unknown binary).
    pub mime: String,
    /// The content, when it is UTF-8 text within the mention limit.
    pub text: Option<String>,
    /// The size in bytes.
    pub size: u64,
}

pub(crate) fn resolve(
    scope: &Scope,
    limits: &HostLimits,
    path: &str,
) -> Result<ResolvedFile, FsError> {
    let resolved = scope.resolve_existing(path)?;
    let meta = std::fs::metadata(&resolved.path).map_err(|e| io_error(path, &resolved.path, e))?;
    if !meta.is_file() {
        return Err(FsError::new(
            FsErrorKind::NotAFile,
            format!("{path}: not a file"),
        ));
    }
    let size = meta.len();
    let text = if size <= limits.max_mention_text_bytes {
        let mut bytes = Vec::new();
        std::fs::File::open(&resolved.path)
            .and_then(|f| {
                f.take(limits.max_mention_text_bytes + 1)
                    .read_to_end(&mut bytes)
            })
            .map_err(|e| io_error(path, &resolved.path, e))?;
        String::from_utf8(bytes).ok()
    } else {
        None
    };
    let mime = match mime_for_path(&resolved.path) {
        Some(mime) => mime,
        None if text.is_some() => "text/plain",
        None => "application/octet-stream",
    };
    Ok(ResolvedFile {
        uri: file_uri(&resolved.path),
        path: resolved.path,
        display_path: resolved.display,
        mime: mime.to_owned(),
        text,
        size,
    })
}

/// The MIME type of a file by its extension (case-insensitive), when known.
pub fn mime_for_path(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "txt" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "js" | "mjs" | "cjs" => "text/javascript",
        "ts" | "tsx" => "text/x-typescript",
        "go" => "text/x-go",
        "java" => "text/x-java",
        "c" | "h" => "text/x-c",
        "cc" | "cpp" | "hpp" | "cxx" => "text/x-c++",
        "rb" => "text/x-ruby",
        "sh" | "bash" => "application/x-sh",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "json" => "application/json",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "xml" => "application/xml",
        "sql" => "application/sql",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        _ => return None,
    })
}

/// `file://` + the path, each byte outside the unreserved set and `/`
/// percent-encoded.
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for &b in path.to_string_lossy().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// Paths under the root that start with `prefix` (relative, `/`-separated),
/// sorted, at most `max`; directories end with `/`. Dotfiles only when the
/// typed name starts with a dot.
pub(crate) fn complete(scope: &Scope, prefix: &str, max: usize) -> Result<Vec<String>, FsError> {
    let (dir_part, name_part) = match prefix.rfind('/') {
        Some(i) => (&prefix[..=i], &prefix[i + 1..]),
        None => ("", prefix),
    };
    let dir = if dir_part.is_empty() {
        scope.resolve_existing(".")?
    } else {
        scope.resolve_existing(dir_part)?
    };
    let entries = std::fs::read_dir(&dir.path).map_err(|e| io_error(dir_part, &dir.path, e))?;
    let mut names: Vec<String> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(name_part) || (name.starts_with('.') && !name_part.starts_with('.')) {
            continue;
        }
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        names.push(format!("{dir_part}{name}{}", if is_dir { "/" } else { "" }));
    }
    names.sort();
    names.truncate(max);
    Ok(names)
}
