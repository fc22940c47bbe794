//! Checkpoints of a served session (`spindle_host::checkpoints`; the notes are
//! `crate::checkpoints`): before each prompt is sent, the session's working directory and its
//! additional directories are kept in `<checkpoint dir>/serve-<id>-<created>`, on the disk of
//! the replica that runs the turn; the API lists them, shows the diff from now to one and
//! restores one.
//!
//! The snapshot runs on a blocking thread (the `git` binary may take long on a large tree), and
//! the prompt waits for it: `flush_queued` asks [`SessionTask::checkpoint_taken_for_next_prompt`]
//! before each prompt, which starts the snapshot and holds the queue until it is done. So the
//! agent never writes before the checkpoint of its turn is taken, and prompts keep their order.
//! A snapshot that fails is a banner; the prompt still goes.
//!
//! Turn numbers are the transcript's: the snapshot is taken for the turn after the last one,
//! and once the prompt is sent the note names the turn it opened (when other output opened a
//! turn in between, the checkpoint is copied under the right number). The notes are in the log,
//! so the numbers and the list are the same after a restart and on every replica.
//!
//! A restore is refused while a turn runs (409): a cancelled agent may still write until it
//! answers the cancel, and files written during a restore would mix with the restored ones;
//! the user cancels (or waits) first. Prompts wait while a restore runs. A restore first takes
//! a checkpoint of the present, `restore-K`, named in the answer: restoring it undoes the
//! restore. Each restore is noted in the log (the page shows "Restored to before turn N").
//!
//! Replicas: diffs and restores need the files, so the replica that runs them claims the
//! session's lease first; while another replica holds it, the answer is 409 naming that
//! replica. A checkpoint taken on another replica's machine is answered the same way.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use spindle_host::checkpoints::{
    CheckpointError, CheckpointId, CheckpointLimits, Checkpoints, Restored,
};

use super::state::{CheckpointDone, CheckpointJobs, CheckpointRequest, SessionTask, ValueReply};
use crate::checkpoints::{
    checkpoint_json, checkpoint_segment, parse_checkpoint_segment, restored_note, session_dir,
    taken_note,
};
use crate::error::SessionError;
use crate::handshake::Phase;
use crate::replica::Refused;
use crate::store::Direction;
use crate::sync::lock;

/// The most diff text a diff answer carries; the files past it are counted, not shown.
const MAX_DIFF_BYTES: usize = 2 * 1024 * 1024;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl CheckpointJobs {
    pub(crate) fn new() -> CheckpointJobs {
        CheckpointJobs {
            dir: None,
            running: false,
            taken: None,
            done: tokio::sync::mpsc::unbounded_channel(),
        }
    }
}

/// A checkpoint error as the runtime reports it; `elsewhere` names the replica the log says
/// took the checkpoint, when that is not this one.
fn checkpoint_refusal(error: CheckpointError, elsewhere: Option<&str>) -> SessionError {
    match (error, elsewhere) {
        (CheckpointError::NotFound(id), Some(replica)) => SessionError::Conflict(format!(
            "the checkpoint {id} was taken on replica {replica}: its files are on that machine, \
             ask that replica"
        )),
        (CheckpointError::NotFound(id), None) => {
            SessionError::NotFound(format!("this session has no checkpoint {id}"))
        }
        (error, _) => SessionError::Unavailable(error.to_string()),
    }
}

impl SessionTask {
    /// Whether `flush_queued` may send the next prompt now: yes when checkpoints are off, when
    /// the prompt will be refused anyway, or once its snapshot is taken. No while a snapshot or
    /// a restore runs; then the snapshot is started here, and its end flushes the queue again.
    pub(super) fn checkpoint_taken_for_next_prompt(&mut self) -> bool {
        if self.queued.is_empty()
            || self.settings.checkpoints.is_none()
            || self.checkpoints.taken.is_some()
        {
            return true;
        }
        if self.checkpoints.running {
            return false;
        }
        let turn = {
            let core = lock(&self.core);
            if core.backlog_full() {
                return true; // refused by `flush_queued`
            }
            u64::from(core.engine.transcript().state.turns) + 1
        };
        let refused = (self.protocol() < 2 && self.v1_turn_running)
            || self.startup.agent_session.is_none()
            || self.agent.is_none();
        if refused {
            return true;
        }
        let (dir, roots) = match self.checkpoint_place() {
            Ok(place) => place,
            Err(error) => {
                self.checkpoints.taken = Some((turn, Err(error.message())));
                return true;
            }
        };
        self.checkpoints.running = true;
        let done = self.checkpoints.done.0.clone();
        tokio::task::spawn_blocking(move || {
            let result = Checkpoints::open(&dir, &roots, CheckpointLimits::default())
                .and_then(|store| store.take(CheckpointId::Turn(turn), now_ms()))
                .map_err(|e| e.to_string());
            let _ = done.send(CheckpointDone::Snapshot { turn, result });
        });
        false
    }

    /// After `flush_queued` sent a prompt: the checkpoint taken for it is noted in the log
    /// under the turn the prompt opened (a prompt not sent leaves it for the next one).
    pub(super) fn checkpoint_prompt_sent(&mut self, sent: bool) {
        if !sent {
            // A checkpoint stays for the next prompt of this flush; a failure is said again.
            if matches!(self.checkpoints.taken, Some((_, Err(_)))) {
                self.checkpoints.taken = None;
            }
            return;
        }
        let Some((taken_for, result)) = self.checkpoints.taken.take() else {
            return;
        };
        let checkpoint = match result {
            Ok(checkpoint) => checkpoint,
            Err(why) => {
                tracing::warn!(session = self.id, "no checkpoint before the turn: {why}");
                self.banner(
                    "warning",
                    format!(
                        "No checkpoint was taken before this turn ({why}); the prompt was sent."
                    ),
                );
                return;
            }
        };
        let turn = u64::from(lock(&self.core).engine.transcript().state.turns);
        if turn != taken_for
            && let Ok((dir, roots)) = self.checkpoint_place()
        {
            // Other output opened a turn meanwhile: the checkpoint is the one before this turn.
            let session = self.id;
            tokio::task::spawn_blocking(move || {
                let copied = Checkpoints::open(&dir, &roots, CheckpointLimits::default())
                    .and_then(|s| s.copy(CheckpointId::Turn(taken_for), CheckpointId::Turn(turn)));
                if let Err(error) = copied {
                    tracing::warn!(session, "checkpoint not renamed to turn {turn}: {error}");
                }
            });
        }
        let note = taken_note(&checkpoint, turn, self.replica.id());
        self.record(vec![(Direction::Server, note)]);
    }

    /// A checkpoint job ended.
    pub(super) fn checkpoint_done(&mut self, done: CheckpointDone) {
        self.checkpoints.running = false;
        match done {
            CheckpointDone::Snapshot { turn, result } => {
                self.checkpoints.taken = Some((turn, result));
                if self.startup.phase == Phase::Ready {
                    self.flush_queued();
                }
                // Taken for the prompts waiting now; a later one takes its own.
                self.checkpoints.taken = None;
            }
            CheckpointDone::Diffed { result, reply } => {
                let _ = reply.send(result);
                if self.startup.phase == Phase::Ready {
                    self.flush_queued();
                }
            }
            CheckpointDone::Restored {
                target,
                result,
                reply,
            } => {
                let _ = reply.send(result.map(|restored| self.restored(target, &restored)));
                if self.startup.phase == Phase::Ready {
                    self.flush_queued();
                }
            }
        }
    }

    /// A restore is done: noted in the log, and answered.
    fn restored(&mut self, target: CheckpointId, restored: &Restored) -> Value {
        let mut answer = json!({
            "checkpoint": checkpoint_segment(target),
            "written": restored.written,
            "deleted": restored.deleted,
            "undo": checkpoint_segment(restored.undo.id),
            "undoCheckpoint": checkpoint_json(&restored.undo),
            "at": restored.undo.at_ms,
            "afterTurn": lock(&self.core).engine.transcript().state.turns,
            "replica": self.replica.id(),
        });
        match target {
            CheckpointId::Turn(n) => answer["turn"] = json!(n),
            CheckpointId::Restore(n) => answer["restore"] = json!(n),
        }
        // Logged by the lease holder only (another replica may have taken the session since).
        match self.take_lease() {
            Ok(()) => self.record(vec![(Direction::Server, restored_note(&answer))]),
            Err(refused) => {
                tracing::warn!(session = self.id, "restore not noted in the log: {refused}");
                answer["noted"] = json!(false);
            }
        }
        answer
    }

    /// A front end's request.
    pub(super) fn checkpoint_request(&mut self, request: CheckpointRequest, reply: ValueReply) {
        let segment = match request {
            CheckpointRequest::List => {
                let core = lock(&self.core);
                let facts = &core.session_facts().checkpoints;
                let _ = reply.send(Ok(json!({
                    "enabled": self.settings.checkpoints.is_some(),
                    "replica": self.replica.id(),
                    "checkpoints": facts.checkpoints_json(),
                    "restores": facts.restores_json(),
                })));
                return;
            }
            CheckpointRequest::Diff(ref segment) | CheckpointRequest::Restore(ref segment) => {
                segment.clone()
            }
        };
        let Some(id) = parse_checkpoint_segment(&segment) else {
            let _ = reply.send(Err(SessionError::invalid_params(format!(
                "{segment:?} names no checkpoint: a turn number (the checkpoint before it) or \
                 restore-K (the one taken before the Kth restore)"
            ))));
            return;
        };
        let restore = matches!(request, CheckpointRequest::Restore(_));
        if let Err(error) = self.checkpoint_may(restore) {
            let _ = reply.send(Err(error));
            return;
        }
        let (dir, roots) = match self.checkpoint_place() {
            Ok(place) => place,
            Err(error) => {
                let _ = reply.send(Err(error));
                return;
            }
        };
        let elsewhere = match id {
            CheckpointId::Turn(n) => lock(&self.core)
                .session_facts()
                .checkpoints
                .turn(n)
                .and_then(|note| note.get("replica")?.as_str().map(str::to_owned))
                .filter(|replica| replica != self.replica.id()),
            CheckpointId::Restore(_) => None,
        };
        let open = move || Checkpoints::open(&dir, &roots, CheckpointLimits::default());
        // One job at a time: each reads the shadow repositories' index.
        self.checkpoints.running = true;
        let done = self.checkpoints.done.0.clone();
        tokio::task::spawn_blocking(move || {
            let refusal = |e| checkpoint_refusal(e, elsewhere.as_deref());
            let done_now = if restore {
                CheckpointDone::Restored {
                    target: id,
                    result: open()
                        .and_then(|store| store.restore(id, now_ms()))
                        .map_err(refusal),
                    reply,
                }
            } else {
                CheckpointDone::Diffed {
                    result: open()
                        .and_then(|store| store.diff(id))
                        .map(|text| diff_json(id, &text))
                        .map_err(refusal),
                    reply,
                }
            };
            let _ = done.send(done_now);
        });
    }

    /// Whether a diff (or with `restore`, a restore) may run now; this replica claims the
    /// session's lease for it (released again once no agent runs here).
    fn checkpoint_may(&mut self, restore: bool) -> Result<(), SessionError> {
        if self.settings.checkpoints.is_none() {
            return Err(SessionError::Conflict(
                "this server takes no checkpoints (spindle serve --no-checkpoints)".into(),
            ));
        }
        if self.checkpoints.running {
            return Err(SessionError::Conflict(
                "a checkpoint, a diff or a restore is under way: try again once it is done".into(),
            ));
        }
        let turn_running =
            lock(&self.core).engine.transcript().state.turn_open || !self.queued.is_empty();
        if restore && turn_running {
            return Err(SessionError::Conflict(
                "a turn is running: cancel it or wait for it to end, then restore (files the \
                 agent writes meanwhile would mix with the restored ones)"
                    .into(),
            ));
        }
        match self.take_lease() {
            Ok(()) => Ok(()),
            Err(Refused::Owned(lease)) => Err(SessionError::Conflict(format!(
                "the session runs on replica {}: its checkpoints are on that machine, ask that \
                 replica",
                lease.owner
            ))),
            Err(refused) => Err(SessionError::unavailable(refused.to_string())),
        }
    }

    /// The session's checkpoint directory and its roots (the working directory first).
    fn checkpoint_place(&mut self) -> Result<(PathBuf, Vec<PathBuf>), SessionError> {
        let Some(base) = self.settings.checkpoints.clone() else {
            return Err(SessionError::Conflict("checkpoints are off".into()));
        };
        if self.checkpoints.dir.is_none() {
            let store = &self.store;
            let id = self.id;
            let created = store
                .off_worker(|| store.sessions())
                .map_err(SessionError::storage)?
                .into_iter()
                .find(|s| s.id == id)
                .map(|s| s.created_at)
                .ok_or_else(|| SessionError::NotFound(format!("no session {id}")))?;
            self.checkpoints.dir = Some(session_dir(&base, id, created));
        }
        let dir = self.checkpoints.dir.clone().unwrap_or(base);
        let mut roots = vec![self.root.clone()];
        roots.extend(
            self.startup
                .additional_directories
                .iter()
                .map(PathBuf::from),
        );
        Ok((dir, roots))
    }
}

/// The diff answer: each file (as the engine reads a `git diff`) with its added and removed
/// line counts, and the totals. The diff goes from now to the checkpoint: `-` lines are what a
/// restore takes away, `+` lines what it brings back.
fn diff_json(id: CheckpointId, text: &str) -> Value {
    let shown = if text.len() > MAX_DIFF_BYTES {
        let mut end = MAX_DIFF_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        // Up to the last whole file.
        text[..end]
            .rfind("\ndiff --git ")
            .map_or(&text[..end], |at| &text[..=at])
    } else {
        text
    };
    let all = spindle_engine::FileDiff::from_git_patch(text).len();
    let mut added = 0;
    let mut removed = 0;
    let files: Vec<Value> = spindle_engine::FileDiff::from_git_patch(shown)
        .iter()
        .map(|file| {
            let count = |kind| {
                file.hunks
                    .iter()
                    .flat_map(|h| &h.lines)
                    .filter(|l| l.kind == kind)
                    .count()
            };
            let (plus, minus) = (
                count(spindle_engine::DiffLineKind::Added),
                count(spindle_engine::DiffLineKind::Removed),
            );
            added += plus;
            removed += minus;
            let mut json = file.to_json();
            json["added"] = json!(plus);
            json["removed"] = json!(minus);
            json
        })
        .collect();
    let mut answer = json!({
        "checkpoint": checkpoint_segment(id),
        "files": files,
        "added": added,
        "removed": removed,
        "filesNotShown": all - files.len(),
    });
    match id {
        CheckpointId::Turn(n) => answer["turn"] = json!(n),
        CheckpointId::Restore(n) => answer["restore"] = json!(n),
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_answer_counts_lines_per_file_and_in_all() {
        let text = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1 @@\n one\n-two\n\
diff --git a/gone.txt b/gone.txt\nnew file mode 100644\n--- /dev/null\n+++ b/gone.txt\n@@ -0,0 +1,2 @@\n+back\n+again\n";
        let answer = diff_json(CheckpointId::Turn(2), text);
        assert_eq!(answer["checkpoint"], "2");
        assert_eq!(answer["turn"], 2);
        assert_eq!(
            (answer["added"].as_u64(), answer["removed"].as_u64()),
            (Some(2), Some(1))
        );
        assert_eq!(answer["files"][0]["path"], "a.txt");
        assert_eq!(answer["files"][0]["removed"], 1);
        assert_eq!(answer["files"][1]["change"], "add");
        assert_eq!(answer["files"][1]["added"], 2);
        assert_eq!(answer["filesNotShown"], 0);
        let empty = diff_json(CheckpointId::Restore(1), "");
        assert_eq!(empty["files"], json!([]));
        assert_eq!(empty["restore"], 1);
    }

    #[test]
    fn a_long_diff_is_cut_at_a_whole_file_and_says_how_many_are_left_out() {
        let file = |n: usize| {
            format!(
                "diff --git a/f{n} b/f{n}\n--- a/f{n}\n+++ b/f{n}\n@@ -1 +1 @@\n-{}\n+new\n",
                "x".repeat(600 * 1024)
            )
        };
        let text: String = (0..5).map(file).collect();
        let answer = diff_json(CheckpointId::Turn(1), &text);
        let shown = answer["files"].as_array().unwrap().len();
        assert_eq!(shown, 3);
        assert_eq!(answer["filesNotShown"], 2);
    }
}
