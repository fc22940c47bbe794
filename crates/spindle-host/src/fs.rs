//! `fs/read_text_file` and `fs/write_text_file`, scoped by [`Scope`], and
//! the atomic write an approved or allowed write performs.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

use crate::config::HostLimits;
use crate::errors::{FsError, FsErrorKind};
use crate::scope::{Resolved, Scope, io_error};

/// A write waiting for the user's decision (policy [`crate::FsPolicy::Ask`]):
/// show `old_text` -> `new_text`, then call [`crate::Host::approve`] or
/// [`crate::Host::reject`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingWrite {
    /// The agent session that asked.
    pub session_id: String,
    /// The file to write (canonical; checked again when approved).
    pub path: PathBuf,
    /// The path relative to the workspace root, for people.
    pub display_path: String,
    /// The file's text now (`None`: the file does not exist yet).
    pub old_text: Option<String>,
    /// The text the agent wants written.
    pub new_text: String,
}

/// `fs/read_text_file` params after checking.
pub(crate) struct ReadRequest {
    pub path: String,
    /// 1-based first line (0 is read as 1).
    pub line: Option<u64>,
    pub limit: Option<u64>,
}

/// Reads the lines asked for, as text. Without `line` and `limit` the whole
/// file, which must then fit `max_read_bytes`.
pub(crate) fn read_text(
    scope: &Scope,
    limits: &HostLimits,
    req: &ReadRequest,
) -> Result<String, FsError> {
    let resolved = scope.resolve_existing(&req.path)?;
    let file = open_regular_file(&req.path, &resolved)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let whole = req.line.is_none() && req.limit.is_none();
    if whole && size > limits.max_read_bytes {
        return Err(FsError::new(
            FsErrorKind::TooLarge,
            format!(
                "{}: {size} bytes, more than the read limit of {} bytes; read it in parts with line and limit",
                req.path, limits.max_read_bytes
            ),
        ));
    }
    let first = req.line.unwrap_or(1).max(1);
    let count = req.limit.unwrap_or(u64::MAX);
    let mut reader = BufReader::new(file);
    let mut out: Vec<u8> = Vec::new();
    let mut line_no = 1u64;
    let mut taken = 0u64;
    let max = usize::try_from(limits.max_read_bytes).unwrap_or(usize::MAX);
    while taken < count {
        let buf = reader
            .fill_buf()
            .map_err(|e| io_error(&req.path, &resolved.path, e))?;
        if buf.is_empty() {
            break;
        }
        let newline = buf.iter().position(|&b| b == b'\n');
        let used = newline.map_or(buf.len(), |i| i + 1);
        if line_no >= first {
            if out.len() + used > max {
                return Err(FsError::new(
                    FsErrorKind::TooLarge,
                    format!(
                        "{}: the lines asked for are more than the read limit of {} bytes; ask for fewer lines",
                        req.path, limits.max_read_bytes
                    ),
                ));
            }
            out.extend_from_slice(&buf[..used]);
        }
        reader.consume(used);
        if newline.is_some() {
            if line_no >= first {
                taken += 1;
            }
            line_no += 1;
        }
    }
    String::from_utf8(out).map_err(|e| not_text(&req.path, e.utf8_error().valid_up_to()))
}

fn not_text(path: &str, offset: usize) -> FsError {
    FsError::new(
        FsErrorKind::NotText,
        format!("{path}: not UTF-8 text (invalid byte at offset {offset} of the part read)"),
    )
}

fn open_regular_file(asked: &str, resolved: &Resolved) -> Result<std::fs::File, FsError> {
    let meta = std::fs::metadata(&resolved.path).map_err(|e| io_error(asked, &resolved.path, e))?;
    if meta.is_dir() {
        return Err(FsError::new(
            FsErrorKind::NotAFile,
            format!("{asked}: is a directory"),
        ));
    }
    if !meta.is_file() {
        return Err(FsError::new(
            FsErrorKind::NotAFile,
            format!("{asked}: not a regular file"),
        ));
    }
    std::fs::File::open(&resolved.path).map_err(|e| io_error(asked, &resolved.path, e))
}

/// Checks a write and reads what it replaces: the pending write (not done yet).
pub(crate) fn prepare_write(
    scope: &Scope,
    limits: &HostLimits,
    session_id: &str,
    path: &str,
    content: String,
) -> Result<PendingWrite, FsError> {
    if content.len() > limits.max_write_bytes {
        return Err(FsError::new(
            FsErrorKind::TooLarge,
            format!(
                "{path}: {} bytes, more than the write limit of {} bytes",
                content.len(),
                limits.max_write_bytes
            ),
        ));
    }
    let resolved = scope.resolve_for_write(path)?;
    let old_text = if resolved.exists {
        Some(read_existing_text(path, &resolved, limits)?)
    } else {
        None
    };
    Ok(PendingWrite {
        session_id: session_id.to_owned(),
        path: resolved.path,
        display_path: resolved.display,
        old_text,
        new_text: content,
    })
}

/// The text of a file about to be replaced: it must be a UTF-8 text file
/// within the read limit (a binary file is never overwritten with text).
fn read_existing_text(
    asked: &str,
    resolved: &Resolved,
    limits: &HostLimits,
) -> Result<String, FsError> {
    let file = open_regular_file(asked, resolved)?;
    let mut bytes = Vec::new();
    file.take(limits.max_read_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(asked, &resolved.path, e))?;
    if bytes.len() as u64 > limits.max_read_bytes {
        return Err(FsError::new(
            FsErrorKind::TooLarge,
            format!(
                "{asked}: the file is more than {} bytes; not replaced",
                limits.max_read_bytes
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        FsError::new(
            FsErrorKind::NotText,
            format!("{asked}: the file is not UTF-8 text; not replaced with text"),
        )
    })
}

/// Performs an approved write, unless the file changed since the user saw
/// it: the text now must still be `old_text` (or the file still absent),
/// else nothing is written and the error says so. A file that already holds
/// the accepted text is left as it is, and that is a success.
pub(crate) fn perform_reviewed_write(
    scope: &Scope,
    limits: &HostLimits,
    write: &PendingWrite,
) -> Result<(), FsError> {
    let asked = write.path.to_string_lossy();
    let resolved = scope.resolve_for_write(&asked)?;
    let now = if resolved.exists {
        read_existing_text(&write.display_path, &resolved, limits).ok()
    } else {
        None
    };
    if now.as_deref() == Some(write.new_text.as_str()) {
        // The file already holds the text that was accepted (an agent that writes the file
        // itself and asks the client as well, opencode): nothing to write, and nothing lost.
        return Ok(());
    }
    if now != write.old_text {
        return Err(FsError::new(
            FsErrorKind::Io,
            format!(
                "{}: the file changed since the write was shown for review; not written",
                write.display_path
            ),
        ));
    }
    perform_write(scope, write)
}

/// Performs a checked write: the path is checked again (the tree may have
/// changed since), missing parent directories under the root are created,
/// and the file is replaced atomically (a temporary file in the same
/// directory, renamed over it), keeping an existing file's permissions.
pub(crate) fn perform_write(scope: &Scope, write: &PendingWrite) -> Result<(), FsError> {
    let asked = write.path.to_string_lossy();
    let resolved = scope.resolve_for_write(&asked)?;
    let target = resolved.path.clone();
    let Some(dir) = target.parent() else {
        return Err(FsError::new(
            FsErrorKind::InvalidPath,
            format!("{}: not a file path", write.display_path),
        ));
    };
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|e| io_error(&write.display_path, dir, e))?;
        // Check again what was created (a link planted meanwhile is caught).
        let created =
            std::fs::canonicalize(dir).map_err(|e| io_error(&write.display_path, dir, e))?;
        if !scope.contains(&created) {
            return Err(FsError::new(
                FsErrorKind::OutsideRoot,
                format!("{}: the directory left the workspace", write.display_path),
            ));
        }
    }
    write_atomically(&target, dir, write.new_text.as_bytes())
        .map_err(|e| io_error(&write.display_path, &target, e))
}

fn write_atomically(target: &Path, dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let permissions = std::fs::metadata(target).ok().map(|m| m.permissions());
    let temp = dir.join(format!(
        ".{name}.spindle-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        if let Some(permissions) = permissions {
            std::fs::set_permissions(&temp, permissions)?;
        }
        std::fs::rename(&temp, target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// A required string member of `params`.
pub(crate) fn string_param(params: &Map<String, Value>, key: &str) -> Result<String, String> {
    match params.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("{key} must be a string")),
        None => Err(format!("{key} is required")),
    }
}

/// An optional unsigned integer member (`null` = absent).
pub(crate) fn optional_u64(params: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{key} must be a non-negative integer")),
    }
}
