//! The driver's side of `--state-dir`: reading the stored sessions when the
//! agent starts and appending the core's history records as they come.
//! (The core never touches files; see [`crate::history`].)

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::core::AgentConfig;
use crate::history::{PersistedLine, StoredSession, safe_session_id};

/// Reads every `<sessionId>.jsonl` in `dir` (created when missing). A file
/// that cannot be read is skipped with a warning (returned, for stderr).
pub fn load_sessions(dir: &Path) -> std::io::Result<(Vec<StoredSession>, Vec<String>)> {
    std::fs::create_dir_all(dir)?;
    let mut sessions = Vec::new();
    let mut warnings = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    for path in paths {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let parsed = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| StoredSession::from_jsonl(&text));
        match parsed {
            Ok(stored) if stored.session_id == stem => sessions.push(stored),
            Ok(stored) => warnings.push(format!(
                "{}: names session {:?}, not {stem:?}; skipped",
                path.display(),
                stored.session_id
            )),
            Err(e) => warnings.push(format!("{}: {e}; skipped", path.display())),
        }
    }
    Ok((sessions, warnings))
}

/// Appends history records to their sessions' files in `dir`.
pub fn append(dir: &Path, lines: &[PersistedLine]) -> std::io::Result<()> {
    for line in lines {
        if !safe_session_id(&line.session_id) {
            continue;
        }
        let path = dir.join(format!("{}.jsonl", line.session_id));
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        file.write_all(format!("{}\n", line.line).as_bytes())?;
    }
    Ok(())
}

/// Removes the files of deleted sessions (`session/delete`) from `dir`; a
/// file already gone is no error.
pub fn remove(dir: &Path, session_ids: &[String]) -> std::io::Result<()> {
    for session_id in session_ids {
        if !safe_session_id(session_id) {
            continue;
        }
        match std::fs::remove_file(dir.join(format!("{session_id}.jsonl"))) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Fills in what `--state-dir` needs before the core starts: the stored
/// sessions, a wall-clock origin for `updatedAt`, a session id prefix
/// unique to this process (agents sharing the directory never reuse an id),
/// and a tag for agent-owned ids unique to this start (a session opened
/// again after a restart never reuses a message id).
pub(crate) fn prepare(config: &mut AgentConfig) -> std::io::Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    if config.clock_origin_unix_ms.is_none() {
        config.clock_origin_unix_ms = Some(now);
    }
    let Some(dir) = config.state_dir.clone() else {
        return Ok(());
    };
    let (sessions, warnings) = load_sessions(&dir)?;
    for warning in warnings {
        eprintln!("spindle agent: state directory: {warning}");
    }
    config.stored_sessions.extend(sessions);
    if config.owned_id_tag.is_none() {
        // Several agents may start in one process within a millisecond
        // (tests run them in-process): a counter tells them apart.
        static STARTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let start = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        config.owned_id_tag = Some(format!(
            "{}-{}-{}_",
            base36(now),
            base36(u64::from(std::process::id())),
            base36(start)
        ));
    }
    if config.session_id_prefix.is_none() {
        config.session_id_prefix = Some(format!(
            "sess_{}-{}_",
            base36(now),
            base36(u64::from(std::process::id()))
        ));
    }
    Ok(())
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}
