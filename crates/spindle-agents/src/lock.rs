//! The per-agent lock: one install, update or remove of an id at a time.
//!
//! `agents/<id>/.lock`, held with `flock` for the whole operation. The kernel drops the lock when
//! its holder dies, so a killed install never leaves a stale lock behind; the file holds the
//! holder's pid only to name it in the error.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use rustix::fs::{FlockOperation, flock};

use crate::{AgentsDirs, AgentsError};

/// A held lock; released on drop.
#[derive(Debug)]
pub struct AgentLock {
    _file: File,
    path: PathBuf,
}

impl AgentLock {
    /// The lock file.
    pub fn file(dirs: &AgentsDirs, id: &str) -> PathBuf {
        dirs.agent_dir(id).join(".lock")
    }

    /// Takes the lock of `id`, or fails at once naming the process that holds it.
    pub fn acquire(dirs: &AgentsDirs, id: &str) -> Result<AgentLock, AgentsError> {
        let dir = dirs.agent_dir(id);
        std::fs::create_dir_all(&dir).map_err(AgentsError::io("cannot create", &dir))?;
        let path = Self::file(dirs, id);
        loop {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(AgentsError::io("cannot open", &path))?;
            if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(AgentsError::Busy {
                    id: id.to_owned(),
                    holder: holder.trim().parse().ok(),
                });
            }
            // `remove` deletes the directory with the lock file in it: a lock taken on a file
            // that is no longer at `path` locks nothing anyone else will open, so try again.
            let same = std::fs::metadata(&path)
                .ok()
                .zip(file.metadata().ok())
                .is_some_and(|(on_disk, held)| {
                    on_disk.ino() == held.ino() && on_disk.dev() == held.dev()
                });
            if !same {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(AgentsError::io("cannot create", parent))?;
                }
                continue;
            }
            let _ = file.set_len(0);
            let _ = file.rewind();
            let _ = write!(file, "{}", std::process::id());
            let _ = file.flush();
            return Ok(AgentLock { _file: file, path });
        }
    }

    /// Where the lock lives.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}
