//! Checkpoints in the chat (see `spindle_host::checkpoints`): before each prompt the session's
//! folder (and its `--add-dir` directories) is kept in shadow repositories under Spindle's data
//! directory; `/checkpoints` lists them and `/undo` puts the files back, the diff shown and a
//! y/N answered first. A restore takes a checkpoint of the present, so `/undo` right after a
//! restore undoes that restore.
//!
//! Only a local agent's files are kept: a `--connect` or `--attach` session works in the
//! server's directories. `--no-checkpoints` turns them off; a checkpoint that cannot be taken
//! (no `git`, a full disk) is said once per turn and the prompt goes on.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};

use spindle_host::checkpoints::{
    Checkpoint, CheckpointError, CheckpointId, CheckpointLimits, Checkpoints,
};

use super::interactive::Chat;

/// The chat's checkpoint commands (a subset of [`super::completion::OWN_COMMANDS`]).
pub(super) const CHECKPOINT_COMMANDS: [&str; 2] = ["checkpoints", "undo"];

/// The most diff lines shown before a restore.
const DIFF_LINES_SHOWN: usize = 200;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A file-name-safe form of a session id.
fn store_name(session_id: &str) -> String {
    session_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect()
}

/// The store of a session's checkpoints under `base`: its id made file-name-safe and a digest
/// of the agent, the id and the folder, so that two sessions with the same id (an agent that
/// numbers its sessions per process, each in another folder or of another agent) never share
/// one (a store is the shadow repository of its folder; another folder would start it again).
/// A store made before the digest (named by the id alone) is still used for its own folder.
fn store_dir(base: &Path, agent: &str, session_id: &str, cwd: &Path) -> PathBuf {
    let legacy = base.join(store_name(session_id));
    let legacy_root = legacy.join("root-0.git").join("spindle-root");
    let folder = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    if std::fs::read_to_string(legacy_root)
        .is_ok_and(|root| root.trim_end() == folder.display().to_string())
    {
        return legacy;
    }
    let mut digest = Sha256::new();
    for part in [agent, session_id, &folder.display().to_string()] {
        digest.update(part.as_bytes());
        digest.update([0]);
    }
    let hex: String = digest.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    base.join(format!("{}-{hex}", store_name(session_id)))
}

/// One line of `/checkpoints`.
fn describe(checkpoint: &Checkpoint) -> String {
    let secs = checkpoint.at_ms / 1000;
    let clock = format!(
        "{:02}:{:02}:{:02} UTC",
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60
    );
    let mut line = format!("{} · {clock} · {} files", checkpoint.id, checkpoint.files);
    if !checkpoint.skipped.is_empty() {
        line.push_str(&format!(" · {} left out", checkpoint.skipped.len()));
    }
    line
}

impl Chat<'_> {
    /// Where this session's checkpoints live, or why there are none.
    fn checkpoint_store(&self) -> Result<Checkpoints, String> {
        if self.args.no_checkpoints {
            return Err("checkpoints are off (--no-checkpoints)".into());
        }
        if self.args.connect.is_some() || self.args.attach_session.is_some() {
            return Err("the session's files are on its server; checkpoints are kept only for a local agent".into());
        }
        let Some(base) = &self.args.checkpoint_dir else {
            return Err("no data directory to keep checkpoints in".into());
        };
        let mut roots: Vec<PathBuf> = vec![self.conn.cwd.clone()];
        roots.extend(self.conn.additional_directories.iter().map(PathBuf::from));
        let store = store_dir(
            base,
            &self.agent_key(),
            &self.conn.session_id,
            &self.conn.cwd,
        );
        Checkpoints::open(&store, &roots, CheckpointLimits::default()).map_err(|e| e.to_string())
    }

    /// Who the session's agent is, for its checkpoint store: its name from `initialize`, else
    /// `--agent ID`, else its command.
    fn agent_key(&self) -> String {
        let name = self
            .conn
            .init
            .as_ref()
            .and_then(|init| init.agent_info.as_ref())
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            .and_then(|info| info.get("name").and_then(Value::as_str).map(str::to_owned));
        name.or_else(|| self.args.agent_id.clone())
            .unwrap_or_else(|| {
                let words: Vec<String> = self
                    .args
                    .agent
                    .iter()
                    .map(|w| w.to_string_lossy().into_owned())
                    .collect();
                words.join(" ")
            })
    }

    /// Before a prompt is sent: the checkpoint "before turn N" (N follows the session's last).
    pub(super) async fn checkpoint_before_turn(&mut self) {
        let store = match self.checkpoint_store() {
            Ok(store) => store,
            Err(_) => return, // said by /checkpoints; a prompt is not held up by it
        };
        let taken = tokio::task::spawn_blocking(move || {
            let next = store
                .list()?
                .iter()
                .filter_map(|c| match c.id {
                    CheckpointId::Turn(n) => Some(n),
                    CheckpointId::Restore(_) => None,
                })
                .max()
                .map_or(1, |n| n + 1);
            store.take(CheckpointId::Turn(next), now_ms())
        })
        .await;
        match taken {
            Ok(Ok(checkpoint)) if !checkpoint.skipped.is_empty() => {
                self.front.note(&format!(
                    "checkpoint {}: {} files left out (/checkpoints lists them)",
                    checkpoint.id,
                    checkpoint.skipped.len()
                ));
            }
            Ok(Ok(_)) => {}
            Ok(Err(error)) => self.front.note(&format!("no checkpoint taken: {error}")),
            Err(error) => self.front.note(&format!("no checkpoint taken: {error}")),
        }
    }

    /// Handles `/checkpoints` and `/undo [N]`; `false` for any other line.
    pub(super) async fn checkpoint_command(&mut self, line: &str) -> bool {
        let Some((name, rest)) = super::completion::split_command(line.trim()) else {
            return false;
        };
        if !CHECKPOINT_COMMANDS.contains(&name) {
            return false;
        }
        if !self.stdin_tty {
            self.front.note(&format!("you> {}", line.trim()));
        }
        let store = match self.checkpoint_store() {
            Ok(store) => store,
            Err(why) => {
                self.front.note(&format!("no checkpoints: {why}"));
                return true;
            }
        };
        let list = match store.list() {
            Ok(list) => list,
            Err(error) => {
                self.front.note(&format!("checkpoints: {error}"));
                return true;
            }
        };
        if name == "checkpoints" {
            if list.is_empty() {
                self.front
                    .note("no checkpoints yet: one is taken before each prompt");
            }
            for checkpoint in &list {
                self.front.note(&describe(checkpoint));
                for skipped in checkpoint.skipped.iter().take(5) {
                    self.front
                        .note(&format!("  left out: {} ({})", skipped.path, skipped.why));
                }
            }
            return true;
        }
        // `/undo N`: before turn N; `/undo`: the last thing done, a turn or a restore.
        let target = match rest.trim() {
            "" => list.last().map(|c| c.id),
            n => match n.parse::<u64>() {
                Ok(n) => Some(CheckpointId::Turn(n)),
                Err(_) => {
                    self.front.note(&format!(
                        "/undo takes a turn number (see /checkpoints), not {n:?}"
                    ));
                    return true;
                }
            },
        };
        let Some(target) = target else {
            self.front
                .note("nothing to undo: no checkpoint yet (one is taken before each prompt)");
            return true;
        };
        let diff = match tokio::task::spawn_blocking(move || store.diff(target)).await {
            Ok(Ok(diff)) => diff,
            Ok(Err(CheckpointError::NotFound(id))) => {
                self.front
                    .note(&format!("there is no checkpoint {id} (see /checkpoints)"));
                return true;
            }
            Ok(Err(error)) => {
                self.front.note(&format!("cannot undo: {error}"));
                return true;
            }
            Err(error) => {
                self.front.note(&format!("cannot undo: {error}"));
                return true;
            }
        };
        if diff.is_empty() {
            self.front.note(&format!(
                "the files are as they were {target}: nothing to undo"
            ));
            return true;
        }
        let lines: Vec<&str> = diff.lines().collect();
        for line in lines.iter().take(DIFF_LINES_SHOWN) {
            self.front.note(line);
        }
        if lines.len() > DIFF_LINES_SHOWN {
            self.front.note(&format!(
                "... {} more lines",
                lines.len() - DIFF_LINES_SHOWN
            ));
        }
        self.confirm_restore = Some(target);
        self.front.note(&format!(
            "put the files back as they were {target}? (this itself can be undone with /undo) [y/N]"
        ));
        true
    }

    /// The answer to `/undo`'s question.
    pub(super) async fn restore_answered(&mut self, answer: &str) {
        let Some(target) = self.confirm_restore.take() else {
            return;
        };
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            self.front.note("nothing restored");
            return;
        }
        let store = match self.checkpoint_store() {
            Ok(store) => store,
            Err(why) => {
                self.front.note(&format!("nothing restored: {why}"));
                return;
            }
        };
        match tokio::task::spawn_blocking(move || store.restore(target, now_ms())).await {
            Ok(Ok(restored)) => self.front.note(&format!(
                "restored the files as they were {target}: {} written, {} deleted; /undo undoes this ({})",
                restored.written, restored.deleted, restored.undo.id
            )),
            Ok(Err(error)) => self.front.note(&format!("nothing restored: {error}")),
            Err(error) => self.front.note(&format!("nothing restored: {error}")),
        }
    }

    /// The input ended: an open `/undo` question is answered no (`true` when there was one).
    pub(super) fn restore_unanswered(&mut self) -> bool {
        if self.confirm_restore.take().is_none() {
            return false;
        }
        self.front
            .note("nothing restored: the input ended before a y/N answer");
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_names_are_file_names() {
        assert_eq!(store_name("sess_1"), "sess_1");
        assert_eq!(store_name("../x/y"), "___x_y");
        assert_eq!(store_name(&"a".repeat(300)).len(), 120);
    }

    #[test]
    fn sessions_with_one_id_in_other_folders_or_of_other_agents_get_stores_of_their_own() {
        let base = std::env::temp_dir().join(format!("spindle-chat-stores-{}", std::process::id()));
        let (one, two) = (base.join("one"), base.join("two"));
        for dir in [&one, &two] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let store = base.join("checkpoints");
        let here = store_dir(&store, "ref", "sess_1", &one);
        assert!(here.starts_with(&store));
        assert!(
            here.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("sess_1-")
        );
        assert_eq!(
            here,
            store_dir(&store, "ref", "sess_1", &one),
            "found again"
        );
        assert_ne!(here, store_dir(&store, "ref", "sess_1", &two));
        assert_ne!(here, store_dir(&store, "other", "sess_1", &one));
        assert_ne!(here, store_dir(&store, "ref", "sess_2", &one));
        // A store named by the id alone (before the digest) keeps serving its own folder only.
        let legacy = store.join("sess_1");
        std::fs::create_dir_all(legacy.join("root-0.git")).unwrap();
        let root = std::fs::canonicalize(&one).unwrap();
        std::fs::write(
            legacy.join("root-0.git").join("spindle-root"),
            format!("{}\n", root.display()),
        )
        .unwrap();
        assert_eq!(store_dir(&store, "ref", "sess_1", &one), legacy);
        assert_ne!(store_dir(&store, "ref", "sess_1", &two), legacy);
        let _ = std::fs::remove_dir_all(&base);
    }
}
