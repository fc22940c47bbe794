//! Checkpoints on real directories with the `git` binary: an agent that writes, deletes and
//! appends, a restore, the undo of that restore, the size limits, `.gitignore`, a second root,
//! and the user's own repository left exactly as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let path =
            std::env::temp_dir().join(format!("spindle-checkpoints-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Dir(std::fs::canonicalize(&path).unwrap())
    }

    fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

/// Every file under `root` but `.git`, with its text.
fn files(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().unwrap() == ".git" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn user_git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=u", "-c", "user.email=u@x"])
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        // `git status` must not refresh the index: the test compares the index's bytes.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_turn_is_undone_and_the_undo_is_undone() {
    let work = Dir::new("work");
    let store = Dir::new("store");
    write(&work.0, "keep.txt", "keep\n");
    write(&work.0, "edit.txt", "one\n");
    write(&work.0, "gone.txt", "gone\n");
    write(&work.0, "src/lib.rs", "fn a() {}\n");
    let before = files(&work.0);
    let cps = Checkpoints::open(
        &store.0,
        std::slice::from_ref(&work.0),
        CheckpointLimits::default(),
    )
    .unwrap();
    let first = cps.take(CheckpointId::Turn(1), 1000).unwrap();
    assert_eq!(first.files, 4);
    assert!(first.skipped.is_empty());

    // The agent, by itself: appends, deletes, creates in a new directory.
    write(&work.0, "edit.txt", "one\ntwo\n");
    std::fs::remove_file(work.join("gone.txt")).unwrap();
    write(&work.0, "new/dir/made.txt", "made\n");
    let after = files(&work.0);

    let diff = cps.diff(CheckpointId::Turn(1)).unwrap();
    assert!(diff.contains("-two"), "{diff}");
    assert!(diff.contains("+gone"), "{diff}");
    assert!(diff.contains("-made"), "{diff}");
    assert!(!diff.contains("keep.txt"), "{diff}");

    let restored = cps.restore(CheckpointId::Turn(1), 2000).unwrap();
    assert_eq!(files(&work.0), before);
    assert!(
        !work.join("new").exists(),
        "the directory the turn made is gone too"
    );
    assert_eq!(restored.undo.id, CheckpointId::Restore(1));
    assert_eq!((restored.written, restored.deleted), (4, 1));
    assert_eq!(cps.diff(CheckpointId::Turn(1)).unwrap(), "");

    // The restore is itself undone.
    cps.restore(CheckpointId::Restore(1), 3000).unwrap();
    assert_eq!(files(&work.0), after);

    let listed: Vec<(CheckpointId, u64, usize)> = cps
        .list()
        .unwrap()
        .iter()
        .map(|c| (c.id, c.at_ms, c.files))
        .collect();
    assert_eq!(
        listed,
        [
            (CheckpointId::Turn(1), 1000, 4),
            (CheckpointId::Restore(1), 2000, 4),
            (CheckpointId::Restore(2), 3000, 4),
        ]
    );
    // Opened again (another process), the checkpoints are all there.
    let again = Checkpoints::open(
        &store.0,
        std::slice::from_ref(&work.0),
        CheckpointLimits::default(),
    )
    .unwrap();
    assert_eq!(again.list().unwrap().len(), 3);
    assert!(matches!(
        again.diff(CheckpointId::Turn(9)),
        Err(CheckpointError::NotFound(CheckpointId::Turn(9)))
    ));
}

#[test]
fn the_users_repository_and_ignored_files_are_left_alone() {
    let work = Dir::new("repo");
    let store = Dir::new("repo-store");
    user_git(&work.0, &["init", "-q"]);
    write(&work.0, ".gitignore", "target/\n*.log\n");
    write(&work.0, "a.txt", "a\n");
    user_git(&work.0, &["add", "."]);
    user_git(&work.0, &["commit", "-q", "-m", "first"]);
    write(&work.0, "a.txt", "a changed by the user, not committed\n");
    write(&work.0, "target/big.bin", "build output\n");
    write(&work.0, "run.log", "log\n");
    let head = user_git(&work.0, &["rev-parse", "HEAD"]);
    let status = user_git(&work.0, &["status", "--porcelain"]);
    let index = std::fs::read(work.join(".git/index")).unwrap();

    let cps = Checkpoints::open(
        &store.0,
        std::slice::from_ref(&work.0),
        CheckpointLimits::default(),
    )
    .unwrap();
    let taken = cps.take(CheckpointId::Turn(1), 1).unwrap();
    assert_eq!(
        taken.files, 2,
        ".gitignore and a.txt; ignored files are not taken"
    );
    write(&work.0, "a.txt", "the agent's\n");
    write(&work.0, "target/big.bin", "rebuilt\n");
    write(&work.0, "run.log", "more log\n");
    cps.restore(CheckpointId::Turn(1), 2).unwrap();

    assert_eq!(
        std::fs::read_to_string(work.join("a.txt")).unwrap(),
        "a changed by the user, not committed\n"
    );
    // Ignored files are neither taken nor put back nor deleted.
    assert_eq!(
        std::fs::read_to_string(work.join("target/big.bin")).unwrap(),
        "rebuilt\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("run.log")).unwrap(),
        "more log\n"
    );
    assert_eq!(std::fs::read(work.join(".git/index")).unwrap(), index);
    assert_eq!(user_git(&work.0, &["rev-parse", "HEAD"]), head);
    assert_eq!(user_git(&work.0, &["status", "--porcelain"]), status);
    assert!(
        !work.join(".git/refs/spindle").exists(),
        "nothing of Spindle's in the user's repository"
    );
}

#[test]
fn limits_name_what_they_leave_out_and_a_restore_never_touches_it() {
    let work = Dir::new("limits");
    let store = Dir::new("limits-store");
    write(&work.0, "small.txt", "s\n");
    write(&work.0, "large.bin", &"x".repeat(2000));
    write(&work.0, "z1.txt", "1\n");
    write(&work.0, "z2.txt", "2\n");
    let limits = CheckpointLimits {
        max_file_bytes: 1000,
        max_files: 2,
        max_total_bytes: 1_000_000,
    };
    let cps = Checkpoints::open(&store.0, std::slice::from_ref(&work.0), limits).unwrap();
    let taken = cps.take(CheckpointId::Turn(1), 1).unwrap();
    assert_eq!(taken.files, 2);
    let skipped: Vec<(&str, &str)> = taken
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.why.as_str()))
        .collect();
    assert_eq!(
        skipped,
        [
            (
                "large.bin",
                "2000 bytes, over the 1000 bytes a file may have"
            ),
            ("z2.txt", "past the first 2 files"),
        ]
    );
    assert_eq!(
        cps.list().unwrap()[0].skipped,
        taken.skipped,
        "kept in the index"
    );
    write(&work.0, "large.bin", "changed");
    write(&work.0, "z2.txt", "changed");
    write(&work.0, "small.txt", "changed");
    cps.restore(CheckpointId::Turn(1), 2).unwrap();
    assert_eq!(
        std::fs::read_to_string(work.join("small.txt")).unwrap(),
        "s\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("large.bin")).unwrap(),
        "changed"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("z2.txt")).unwrap(),
        "changed"
    );

    let bytes = CheckpointLimits {
        max_file_bytes: 1000,
        max_files: 100,
        max_total_bytes: 3,
    };
    let other = Dir::new("limits-bytes-store");
    let cps = Checkpoints::open(&other.0, std::slice::from_ref(&work.0), bytes).unwrap();
    let taken = cps.take(CheckpointId::Turn(1), 1).unwrap();
    assert!(
        taken
            .skipped
            .iter()
            .any(|s| s.why == "past the first 3 bytes"),
        "{taken:?}"
    );
}

#[test]
fn every_root_is_taken_and_a_nested_repository_is_named() {
    let work = Dir::new("multi");
    let extra = Dir::new("multi-extra");
    let store = Dir::new("multi-store");
    write(&work.0, "w.txt", "w\n");
    write(&extra.0, "e.txt", "e\n");
    std::fs::create_dir_all(work.join("vendor/lib")).unwrap();
    user_git(&work.join("vendor/lib"), &["init", "-q"]);
    write(&work.0, "vendor/lib/x.txt", "x\n");
    let cps = Checkpoints::open(
        &store.0,
        &[work.0.clone(), extra.0.clone()],
        CheckpointLimits::default(),
    )
    .unwrap();
    let taken = cps.take(CheckpointId::Turn(1), 1).unwrap();
    assert_eq!(taken.files, 2);
    assert_eq!(taken.skipped.len(), 1, "{taken:?}");
    assert_eq!(
        taken.skipped[0].path,
        work.join("vendor/lib").display().to_string()
    );
    write(&extra.0, "e.txt", "changed\n");
    write(&extra.0, "added.txt", "added\n");
    let diff = cps.diff(CheckpointId::Turn(1)).unwrap();
    let shown = extra.0.display().to_string();
    assert!(
        diff.contains(&format!("b/{}/e.txt", shown.trim_start_matches('/'))),
        "{diff}"
    );
    cps.restore(CheckpointId::Turn(1), 2).unwrap();
    assert_eq!(files(&extra.0), map(&[("e.txt", "e\n")]));
    assert_eq!(
        std::fs::read_to_string(work.join("vendor/lib/x.txt")).unwrap(),
        "x\n"
    );
}

#[test]
fn a_store_inside_a_root_is_refused() {
    let work = Dir::new("inside");
    let err = Checkpoints::open(
        &work.join(".spindle"),
        std::slice::from_ref(&work.0),
        CheckpointLimits::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("must not"), "{err}");
}

#[test]
fn a_copy_names_the_same_files_under_another_turn() {
    let work = Dir::new("copy-work");
    let store = Dir::new("copy-store");
    write(&work.0, "a.txt", "a\n");
    let cps = Checkpoints::open(
        &store.0,
        std::slice::from_ref(&work.0),
        CheckpointLimits::default(),
    )
    .unwrap();
    cps.take(CheckpointId::Turn(2), 10).unwrap();
    write(&work.0, "a.txt", "changed\n");
    let copied = cps
        .copy(CheckpointId::Turn(2), CheckpointId::Turn(3))
        .unwrap();
    assert_eq!(
        (copied.id, copied.at_ms, copied.files),
        (CheckpointId::Turn(3), 10, 1)
    );
    cps.restore(CheckpointId::Turn(3), 20).unwrap();
    assert_eq!(files(&work.0), map(&[("a.txt", "a\n")]));
    assert!(matches!(
        cps.copy(CheckpointId::Turn(7), CheckpointId::Turn(8)),
        Err(CheckpointError::NotFound(CheckpointId::Turn(7)))
    ));
}
