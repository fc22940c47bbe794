//! Checkpoints: the session's directories as they were before each turn, kept in shadow Git
//! repositories of Spindle's own, so a user can see what a turn changed and put the files back,
//! whether the agent wrote them through Spindle or by itself.
//!
//! One bare repository per root (the working directory, then each additional directory) under
//! the store directory the caller gives (in Spindle's data directory, never inside a root). The
//! `git` binary does the work, with `GIT_DIR` the shadow repository and `GIT_WORK_TREE` the root,
//! the user's and the system's Git configuration shut out, and literal path specs. The user's
//! own `.git` is never read or written: Git never takes a `.git` directory into a tree, and a
//! nested repository is skipped (said so).
//!
//! What a snapshot holds: every file Git would show as tracked or untracked, so `.gitignore`
//! (and `.git/info/exclude` of the shadow repository, not the user's) is respected; files over
//! [`CheckpointLimits::max_file_bytes`], and files past [`CheckpointLimits::max_files`] or
//! [`CheckpointLimits::max_total_bytes`], are left out and each is named in
//! [`Checkpoint::skipped`]. A restore never touches what a snapshot left out.
//!
//! A restore first takes a checkpoint of the present ([`CheckpointId::Restore`]), so it can be
//! undone by restoring that one; then it writes each file the checkpoint holds and deletes each
//! file the present has and the checkpoint does not.
//!
//! Invariant: nothing here writes outside the store directory and the roots, and inside the
//! roots only files a snapshot took (never ignored, skipped or `.git` files).

use std::collections::BTreeSet;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// Where the snapshot of one root stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointLimits {
    /// A file larger than this is left out.
    pub max_file_bytes: u64,
    /// At most this many files per root.
    pub max_files: usize,
    /// At most this many bytes per root.
    pub max_total_bytes: u64,
}

impl Default for CheckpointLimits {
    fn default() -> Self {
        CheckpointLimits {
            max_file_bytes: 10 * 1024 * 1024,
            max_files: 50_000,
            max_total_bytes: 500 * 1024 * 1024,
        }
    }
}

/// Which checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CheckpointId {
    /// Taken before turn N (1 for the first turn).
    Turn(u64),
    /// Taken before the Nth restore: restoring it undoes that restore.
    Restore(u64),
}

impl CheckpointId {
    fn ref_name(self) -> String {
        match self {
            CheckpointId::Turn(n) => format!("refs/spindle/turn/{n}"),
            CheckpointId::Restore(n) => format!("refs/spindle/restore/{n}"),
        }
    }

    fn to_json(self) -> Value {
        match self {
            CheckpointId::Turn(n) => json!({"turn": n}),
            CheckpointId::Restore(n) => json!({"restore": n}),
        }
    }

    fn of_json(value: &Value) -> Option<CheckpointId> {
        if let Some(n) = value.get("turn").and_then(Value::as_u64) {
            return Some(CheckpointId::Turn(n));
        }
        value
            .get("restore")
            .and_then(Value::as_u64)
            .map(CheckpointId::Restore)
    }
}

impl fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointId::Turn(n) => write!(f, "before turn {n}"),
            CheckpointId::Restore(n) => write!(f, "before restore {n}"),
        }
    }
}

/// A file a snapshot left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The path, relative to its root (prefixed by the root when there are several).
    pub path: String,
    /// Why, in words.
    pub why: String,
    /// Which root (0: the working directory).
    pub root: usize,
    /// The path relative to that root.
    pub relative: String,
}

/// One checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Which.
    pub id: CheckpointId,
    /// When it was taken (milliseconds since the Unix epoch, the caller's clock).
    pub at_ms: u64,
    /// Files held, all roots together.
    pub files: usize,
    /// Files left out.
    pub skipped: Vec<Skipped>,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The checkpoint of the present taken first: restoring it undoes this restore.
    pub undo: Checkpoint,
    /// Files written back.
    pub written: usize,
    /// Files deleted (the present had them, the checkpoint did not).
    pub deleted: usize,
}

/// Why a checkpoint operation failed.
#[derive(Debug)]
pub enum CheckpointError {
    /// No such checkpoint.
    NotFound(CheckpointId),
    /// `git` could not be run, or failed.
    Git(String),
    /// Reading or writing the store or a root failed.
    Io(String),
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointError::NotFound(id) => write!(f, "there is no checkpoint {id}"),
            CheckpointError::Git(e) => write!(f, "checkpoint: {e}"),
            CheckpointError::Io(e) => write!(f, "checkpoint: {e}"),
        }
    }
}

impl std::error::Error for CheckpointError {}

fn io(what: &str, e: std::io::Error) -> CheckpointError {
    CheckpointError::Io(format!("{what}: {e}"))
}

/// One root and its shadow repository.
#[derive(Debug, Clone)]
struct Shadow {
    root: PathBuf,
    git_dir: PathBuf,
}

/// The checkpoints of one session.
#[derive(Debug)]
pub struct Checkpoints {
    store: PathBuf,
    shadows: Vec<Shadow>,
    limits: CheckpointLimits,
}

const INDEX_FILE: &str = "checkpoints.jsonl";

impl Checkpoints {
    /// The checkpoints kept in `store` (created if missing) for `roots` (the working directory
    /// first). A root may be added later by opening again with more roots; a root's shadow
    /// repository is found by its position and checked against the path it was made for.
    pub fn open(
        store: &Path,
        roots: &[PathBuf],
        limits: CheckpointLimits,
    ) -> Result<Checkpoints, CheckpointError> {
        std::fs::create_dir_all(store).map_err(|e| io(&store.display().to_string(), e))?;
        let mut shadows = Vec::new();
        for (index, root) in roots.iter().enumerate() {
            let root = std::fs::canonicalize(root)
                .map_err(|e| io(&format!("root {}", root.display()), e))?;
            if store.starts_with(&root) {
                return Err(CheckpointError::Io(format!(
                    "the checkpoint store {} lies inside {}; it must not",
                    store.display(),
                    root.display()
                )));
            }
            let git_dir = store.join(format!("root-{index}.git"));
            let shadow = Shadow { root, git_dir };
            shadow.init()?;
            shadows.push(shadow);
        }
        Ok(Checkpoints {
            store: store.to_path_buf(),
            shadows,
            limits,
        })
    }

    /// Takes checkpoint `id` of every root now (`at_ms` is the caller's clock). Taking an id
    /// again replaces it.
    pub fn take(&self, id: CheckpointId, at_ms: u64) -> Result<Checkpoint, CheckpointError> {
        let mut files = 0;
        let mut skipped = Vec::new();
        let several = self.shadows.len() > 1;
        for (root, shadow) in self.shadows.iter().enumerate() {
            let snap = shadow.snapshot(&self.limits)?;
            shadow.git(&["update-ref", &id.ref_name(), &snap.commit], None)?;
            files += snap.files;
            skipped.extend(snap.skipped.into_iter().map(|(relative, why)| Skipped {
                path: if several {
                    shadow.root.join(&relative).display().to_string()
                } else {
                    relative.clone()
                },
                why,
                root,
                relative,
            }));
        }
        let checkpoint = Checkpoint {
            id,
            at_ms,
            files,
            skipped,
        };
        self.record(&checkpoint)?;
        Ok(checkpoint)
    }

    /// Names checkpoint `from` also `to`: the same files, without a new snapshot (a front end
    /// that learns only after the snapshot which turn it was taken before).
    pub fn copy(
        &self,
        from: CheckpointId,
        to: CheckpointId,
    ) -> Result<Checkpoint, CheckpointError> {
        let mut checkpoint = self.require(from)?;
        for shadow in &self.shadows {
            shadow.git(&["update-ref", &to.ref_name(), &from.ref_name()], None)?;
        }
        checkpoint.id = to;
        self.record(&checkpoint)?;
        Ok(checkpoint)
    }

    /// The checkpoints taken, oldest first (a retaken id appears once, as last taken).
    pub fn list(&self) -> Result<Vec<Checkpoint>, CheckpointError> {
        let path = self.store.join(INDEX_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io(&path.display().to_string(), e)),
        };
        let mut list: Vec<Checkpoint> = Vec::new();
        for line in text.lines() {
            let Ok(value) = serde_json::from_str::<Value>(line) else {
                continue; // a line cut short by a crash: the others stand
            };
            let Some(id) = CheckpointId::of_json(&value) else {
                continue;
            };
            let skipped = value["skipped"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|s| Skipped {
                            path: s["path"].as_str().unwrap_or_default().to_owned(),
                            why: s["why"].as_str().unwrap_or_default().to_owned(),
                            root: s["root"].as_u64().unwrap_or(0) as usize,
                            relative: s["relative"].as_str().unwrap_or_default().to_owned(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            list.retain(|c| c.id != id);
            list.push(Checkpoint {
                id,
                at_ms: value["at"].as_u64().unwrap_or(0),
                files: value["files"].as_u64().unwrap_or(0) as usize,
                skipped,
            });
        }
        Ok(list)
    }

    /// The next free [`CheckpointId::Restore`] number.
    fn next_restore(&self) -> Result<u64, CheckpointError> {
        let last = self
            .list()?
            .iter()
            .filter_map(|c| match c.id {
                CheckpointId::Restore(n) => Some(n),
                CheckpointId::Turn(_) => None,
            })
            .max();
        Ok(last.map_or(1, |n| n + 1))
    }

    fn record(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        let mut line = checkpoint.id.to_json();
        line["at"] = json!(checkpoint.at_ms);
        line["files"] = json!(checkpoint.files);
        line["skipped"] = checkpoint
            .skipped
            .iter()
            .map(|s| json!({"path": s.path, "why": s.why, "root": s.root, "relative": s.relative}))
            .collect();
        let path = self.store.join(INDEX_FILE);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io(&path.display().to_string(), e))?;
        writeln!(file, "{line}").map_err(|e| io(&path.display().to_string(), e))
    }

    fn require(&self, id: CheckpointId) -> Result<Checkpoint, CheckpointError> {
        self.list()?
            .into_iter()
            .find(|c| c.id == id)
            .ok_or(CheckpointError::NotFound(id))
    }

    /// What restoring `id` would change, as a unified diff from the present to the checkpoint
    /// (paths prefixed by their root when there are several). Empty when nothing would change.
    pub fn diff(&self, id: CheckpointId) -> Result<String, CheckpointError> {
        self.require(id)?;
        let mut out = String::new();
        let several = self.shadows.len() > 1;
        for shadow in &self.shadows {
            let now = shadow.snapshot(&self.limits)?;
            let mut args = vec![
                "diff".to_owned(),
                "--no-color".into(),
                "--no-ext-diff".into(),
                "--no-renames".into(),
            ];
            if several {
                let prefix = format!(
                    "{}/",
                    shadow.root.display().to_string().trim_start_matches('/')
                );
                args.push(format!("--src-prefix=a/{prefix}"));
                args.push(format!("--dst-prefix=b/{prefix}"));
            }
            args.push(now.commit.clone());
            args.push(id.ref_name());
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            out.push_str(&shadow.git(&refs, None)?);
        }
        Ok(out)
    }

    /// Puts every root back as checkpoint `id` holds it, after taking a checkpoint of the present
    /// (returned in [`Restored::undo`]; restoring it undoes this restore).
    pub fn restore(&self, id: CheckpointId, at_ms: u64) -> Result<Restored, CheckpointError> {
        let target = self.require(id)?;
        let undo = self.take(CheckpointId::Restore(self.next_restore()?), at_ms)?;
        let mut written = 0;
        let mut deleted = 0;
        for (root, shadow) in self.shadows.iter().enumerate() {
            let present = shadow.tree_files(&undo.id.ref_name())?;
            let mut then = shadow.tree_files(&id.ref_name())?;
            // What the checkpoint left out was not seen: it is not deleted either.
            let unseen: BTreeSet<String> = target
                .skipped
                .iter()
                .filter(|s| s.root == root)
                .map(|s| s.relative.clone())
                .collect();
            let written_here = then.len();
            // Write the checkpoint's files through a scratch index, so the shadow index (the
            // stat cache of the next snapshot) is left alone.
            let scratch = shadow.git_dir.join("restore.index");
            let _ = std::fs::remove_file(&scratch);
            shadow.git(&["read-tree", &id.ref_name()], Some(&scratch))?;
            shadow.git(&["checkout-index", "--all", "--force"], Some(&scratch))?;
            let _ = std::fs::remove_file(&scratch);
            written += written_here;
            let doomed: Vec<String> = present
                .difference(&then)
                .filter(|p| {
                    !unseen.contains(*p) && !unseen.iter().any(|u| p.starts_with(&format!("{u}/")))
                })
                .cloned()
                .collect();
            then.extend(unseen);
            for path in &doomed {
                let full = shadow.root.join(path);
                match std::fs::remove_file(&full) {
                    Ok(()) => deleted += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io(&full.display().to_string(), e)),
                }
                remove_empty_parents(&shadow.root, &full, &then);
            }
        }
        Ok(Restored {
            undo,
            written,
            deleted,
        })
    }
}

/// Removes the directories above `file` that are now empty and hold nothing of `kept`, up to
/// (not including) `root`.
fn remove_empty_parents(root: &Path, file: &Path, kept: &BTreeSet<String>) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) {
            break;
        }
        let relative = d.strip_prefix(root).unwrap_or(d).display().to_string() + "/";
        if kept.iter().any(|k| k.starts_with(&relative)) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// A snapshot commit and what it holds.
struct Snapshot {
    commit: String,
    files: usize,
    /// (path relative to the root, why).
    skipped: Vec<(String, String)>,
}

impl Shadow {
    fn init(&self) -> Result<(), CheckpointError> {
        let marker = self.git_dir.join("spindle-root");
        if self.git_dir.join("HEAD").is_file() {
            let made_for = std::fs::read_to_string(&marker).unwrap_or_default();
            if made_for.trim_end() == self.root.display().to_string() {
                return Ok(());
            }
            // Another root took this position (the directories changed): start again.
            std::fs::remove_dir_all(&self.git_dir)
                .map_err(|e| io(&self.git_dir.display().to_string(), e))?;
        }
        let git_dir = self.git_dir.display().to_string();
        let output = base_command()
            .args(["init", "--quiet", "--bare", &git_dir])
            .output()
            .map_err(|e| CheckpointError::Git(format!("cannot run git: {e}")))?;
        if !output.status.success() {
            return Err(CheckpointError::Git(format!(
                "git init {git_dir}: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        std::fs::write(&marker, format!("{}\n", self.root.display()))
            .map_err(|e| io(&marker.display().to_string(), e))
    }

    /// `git ARGS` on this root; `index` replaces the shadow index. Returns stdout.
    fn git(&self, args: &[&str], index: Option<&Path>) -> Result<String, CheckpointError> {
        self.git_with_input(args, index, None)
    }

    fn git_with_input(
        &self,
        args: &[&str],
        index: Option<&Path>,
        input: Option<&[u8]>,
    ) -> Result<String, CheckpointError> {
        let mut command = base_command();
        command
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.root)
            .current_dir(&self.root)
            .args(["-c", "core.bare=false", "-c", "core.autocrlf=false"])
            .args(["-c", "core.quotePath=false", "-c", "core.fsmonitor=false"])
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(index) = index {
            command.env("GIT_INDEX_FILE", index);
        }
        let mut child = command
            .spawn()
            .map_err(|e| CheckpointError::Git(format!("cannot run git: {e}")))?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin
                .write_all(input)
                .map_err(|e| CheckpointError::Git(format!("git {}: {e}", args[0])))?;
        }
        let output = child
            .wait_with_output()
            .map_err(|e| CheckpointError::Git(format!("git {}: {e}", args[0])))?;
        if !output.status.success() {
            return Err(CheckpointError::Git(format!(
                "git {} in {}: {}",
                args[0],
                self.root.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The root now, as a commit (no ref points at it yet).
    fn snapshot(&self, limits: &CheckpointLimits) -> Result<Snapshot, CheckpointError> {
        let listed = self.git(
            &[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            None,
        )?;
        let mut candidates: BTreeSet<&str> = listed.split('\0').filter(|p| !p.is_empty()).collect();
        let mut allowed = Vec::new();
        let mut skipped = Vec::new();
        let mut total = 0u64;
        while let Some(path) = candidates.pop_first() {
            if let Some(dir) = path.strip_suffix('/') {
                skipped.push((
                    dir.to_owned(),
                    "a Git repository of its own; not snapshotted".to_owned(),
                ));
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(self.root.join(path)) else {
                continue; // gone: the stale index entry is dropped below
            };
            if meta.is_dir() {
                continue;
            }
            let size = meta.len();
            let why = if size > limits.max_file_bytes {
                Some(format!(
                    "{size} bytes, over the {} bytes a file may have",
                    limits.max_file_bytes
                ))
            } else if allowed.len() >= limits.max_files {
                Some(format!("past the first {} files", limits.max_files))
            } else if total + size > limits.max_total_bytes {
                Some(format!("past the first {} bytes", limits.max_total_bytes))
            } else {
                None
            };
            match why {
                Some(why) => skipped.push((path.to_owned(), why)),
                None => {
                    total += size;
                    allowed.push(path);
                }
            }
        }
        // The shadow index becomes exactly `allowed`: stale entries (deleted, now too large)
        // leave it, then every allowed file is added (unchanged ones cost a stat).
        let cached = self.git(&["ls-files", "-z", "--cached"], None)?;
        let keep: BTreeSet<&str> = allowed.iter().copied().collect();
        let stale: Vec<&str> = cached
            .split('\0')
            .filter(|p| !p.is_empty() && !keep.contains(p))
            .collect();
        if !stale.is_empty() {
            self.git_with_input(
                &[
                    "rm",
                    "--cached",
                    "--quiet",
                    "--ignore-unmatch",
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                ],
                None,
                Some(nul_joined(&stale).as_bytes()),
            )?;
        }
        if !allowed.is_empty() {
            self.git_with_input(
                &[
                    "add",
                    "--force",
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                ],
                None,
                Some(nul_joined(&allowed).as_bytes()),
            )?;
        }
        let tree = self.git(&["write-tree"], None)?.trim().to_owned();
        let commit = self
            .git(&["commit-tree", &tree, "-m", "spindle checkpoint"], None)?
            .trim()
            .to_owned();
        Ok(Snapshot {
            commit,
            files: allowed.len(),
            skipped,
        })
    }

    /// The file paths of a tree.
    fn tree_files(&self, commit: &str) -> Result<BTreeSet<String>, CheckpointError> {
        let listed = self.git(&["ls-tree", "-r", "-z", "--name-only", commit], None)?;
        Ok(listed
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect())
    }
}

fn nul_joined(paths: &[&str]) -> String {
    let mut out = String::new();
    for p in paths {
        out.push_str(p);
        out.push('\0');
    }
    out
}

/// `git` with the user's and the system's configuration shut out, literal path specs and a fixed
/// identity for the snapshot commits.
fn base_command() -> Command {
    let mut command = Command::new("git");
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_LITERAL_PATHSPECS", "1")
        .env("GIT_AUTHOR_NAME", "Spindle")
        .env("GIT_AUTHOR_EMAIL", "spindle@localhost")
        .env("GIT_COMMITTER_NAME", "Spindle")
        .env("GIT_COMMITTER_EMAIL", "spindle@localhost")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES");
    command
}

#[cfg(test)]
#[path = "checkpoints_tests.rs"]
mod tests;
