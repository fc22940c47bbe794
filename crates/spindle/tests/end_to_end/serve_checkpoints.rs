//! `spindle serve`'s checkpoints (issue 27), real processes: an agent that writes, appends and
//! deletes files itself (`serve_checkpoints_agent.py`, never through the client's fs), the
//! list, the diff from now to before turn 1, the restore, the undo of that restore, the note
//! in the log surviving a restart, the size limit named, a restore refused while a turn runs,
//! the cross-site checks of the restore, `--no-checkpoints`; and the reference agent writing
//! through Spindle's file system.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use spindle_agent::scenarios::client_fs_changed;

use crate::harness::{TempDir, require_python};
use crate::serve_support::{
    Served, reference_agent_v1_with, start_serve, temp_dir, wait_transcript,
};

const AGENT: &str = include_str!("serve_checkpoints_agent.py");

/// `spindle serve --protocol 1 --cwd WORK ARGS` running the test agent, its data directory
/// (where checkpoints go) in `dir/data`.
fn serve(dir: &TempDir, work: &Path, args: &[&str]) -> Served {
    let script = dir.join("agent.py");
    std::fs::write(&script, AGENT).unwrap();
    let agent = vec!["python3".into(), script.into_os_string()];
    serve_with(dir, work, args, &agent)
}

fn serve_with(dir: &TempDir, work: &Path, args: &[&str], agent: &[std::ffi::OsString]) -> Served {
    let mut all = vec!["--protocol", "1", "--cwd", work.to_str().unwrap()];
    all.extend_from_slice(args);
    let data = dir.join("data");
    start_serve(
        &dir.join("db.sqlite"),
        &all,
        agent,
        None,
        &[("XDG_DATA_HOME", data.to_str().unwrap())],
    )
}

/// Every file under `root` with its text (`<N bytes>` for a large one).
fn files(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let len = std::fs::metadata(&path).unwrap().len();
            let text = if len > 4096 {
                format!("<{len} bytes>")
            } else {
                std::fs::read_to_string(&path).unwrap()
            };
            out.insert(rel, text);
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

/// Sends a prompt and waits for its turn (`turn`, counted from 1) to end.
fn turn(served: &Served, session: i64, text: &str, turn: usize) {
    served.prompt(session, text);
    served.wait_finished_turns(session, turn);
}

fn checkpoints(served: &Served, session: i64) -> Value {
    served.get_json(&format!("/api/sessions/{session}/checkpoints"))
}

fn restore(served: &Served, session: i64, checkpoint: &str) -> (u16, Value) {
    let response = served.post_json(
        &format!("/api/sessions/{session}/checkpoints/{checkpoint}/restore"),
        "{}",
    );
    let value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
    (response.status, value)
}

fn turns_listed(list: &Value) -> Vec<u64> {
    list["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["turn"].as_u64().unwrap())
        .collect()
}

#[test]
fn serve_restores_files_an_agent_wrote_itself_and_undoes_the_restore() {
    if !require_python() {
        return;
    }
    let dir = temp_dir("checkpoints");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("keep.txt"), "keep\n").unwrap();
    std::fs::write(work.join("edit.txt"), "one\n").unwrap();
    std::fs::write(work.join("gone.txt"), "gone\n").unwrap();
    let before = files(&work);

    let served = serve(&dir, &work, &[]);
    let session = served.create_session();
    turn(
        &served,
        session,
        "append edit.txt two; delete gone.txt; write new/made.txt made",
        1,
    );
    turn(&served, session, "write second.txt 2", 2);
    let after = files(&work);
    assert_eq!(
        after,
        map(&[
            ("keep.txt", "keep\n"),
            ("edit.txt", "one\ntwo\n"),
            ("new/made.txt", "made\n"),
            ("second.txt", "2\n"),
        ])
    );

    // Listed from the log: a checkpoint before each turn, in the data directory only.
    let list = checkpoints(&served, session);
    assert_eq!(list["enabled"], true, "{list}");
    assert_eq!(turns_listed(&list), [1, 2], "{list}");
    assert_eq!(list["checkpoints"][0]["files"], 3, "{list}");
    assert_eq!(list["checkpoints"][0]["id"], "1", "{list}");
    assert!(list["checkpoints"][0]["at"].as_u64().unwrap() > 0, "{list}");
    let stores: Vec<String> = std::fs::read_dir(dir.join("data/spindle/checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(stores.len(), 1, "{stores:?}");
    assert!(
        stores[0].starts_with(&format!("serve-{session}-")),
        "{stores:?}"
    );
    assert!(
        files(&work).keys().all(|p| !p.contains(".git")),
        "nothing of the checkpoints in the working directory"
    );

    // The diff from now to before turn 1, per file with its line counts.
    let diff = served.get_json(&format!("/api/sessions/{session}/checkpoints/1/diff"));
    let by_path: BTreeMap<String, Value> = diff["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_owned(), f.clone()))
        .collect();
    let paths: Vec<&str> = by_path.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        ["edit.txt", "gone.txt", "new/made.txt", "second.txt"],
        "{diff:#}"
    );
    assert_eq!(by_path["edit.txt"]["change"], "modify");
    assert_eq!(by_path["edit.txt"]["removed"], 1);
    assert_eq!(by_path["gone.txt"]["change"], "add", "it comes back");
    assert_eq!(by_path["new/made.txt"]["change"], "delete", "it goes");
    assert_eq!(
        (diff["added"].as_u64(), diff["removed"].as_u64()),
        (Some(1), Some(3))
    );

    // The restore: the files as before turn 1; its undo named.
    let (status, restored) = restore(&served, session, "1");
    assert_eq!(status, 200, "{restored}");
    assert_eq!(files(&work), before);
    assert_eq!(restored["checkpoint"], "1");
    assert_eq!(restored["turn"], 1);
    assert_eq!(restored["undo"], "restore-1", "{restored}");
    assert_eq!(
        (restored["written"].as_u64(), restored["deleted"].as_u64()),
        (Some(3), Some(2))
    );
    let empty = served.get_json(&format!("/api/sessions/{session}/checkpoints/1/diff"));
    assert_eq!(empty["files"], serde_json::json!([]), "{empty}");

    // The undo of the restore: the files as after turn 2.
    let (status, undone) = restore(&served, session, "restore-1");
    assert_eq!(status, 200, "{undone}");
    assert_eq!(files(&work), after);
    assert_eq!(undone["undo"], "restore-2", "{undone}");

    // Both restores are in the log: after a restart the list is the same.
    let list = checkpoints(&served, session);
    assert_eq!(list["restores"].as_array().unwrap().len(), 2, "{list}");
    assert_eq!(list["restores"][0]["turn"], 1, "{list}");
    assert_eq!(list["restores"][0]["afterTurn"], 2, "{list}");
    assert_eq!(list["restores"][1]["restore"], 1, "{list}");
    served.stop();
    let served = serve(&dir, &work, &[]);
    let again = checkpoints(&served, session);
    assert_eq!(again["checkpoints"], list["checkpoints"]);
    assert_eq!(again["restores"], list["restores"]);

    // The next prompt is turn 3, and its checkpoint is numbered so; a file over the size limit
    // (10 MiB) is left out and named.
    turn(&served, session, "big huge.bin 11000000", 3);
    turn(&served, session, "write after.txt x", 4);
    let list = checkpoints(&served, session);
    assert_eq!(turns_listed(&list), [1, 2, 3, 4], "{list}");
    let fourth = &list["checkpoints"][3];
    assert_eq!(fourth["skippedCount"], 1, "{fourth}");
    assert_eq!(fourth["skipped"][0]["path"], "huge.bin", "{fourth}");
    assert!(
        fourth["skipped"][0]["why"]
            .as_str()
            .unwrap()
            .contains("over the"),
        "{fourth}"
    );
    // A restore never touches what the checkpoint left out.
    let (status, _) = restore(&served, session, "4");
    assert_eq!(status, 200);
    assert_eq!(files(&work)["huge.bin"], "<11000000 bytes>");
    assert!(!work.join("after.txt").exists());

    // Refused while a turn runs (409), and fine once it was cancelled.
    served.prompt(session, "hold");
    wait_transcript(&served, session, "the held turn", |t| {
        t["state"]["turnOpen"] == true
    });
    let (status, refused) = restore(&served, session, "1");
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("a turn is running"),
        "{refused}"
    );
    let response = served.post_json(&format!("/api/sessions/{session}/cancel"), "{}");
    assert_eq!(response.status, 200, "{}", response.body);
    served.wait_finished_turns(session, 5);
    let (status, _) = restore(&served, session, "1");
    assert_eq!(status, 200);
    assert_eq!(files(&work)["edit.txt"], "one\n");

    // Bad names and unknown checkpoints say what is wrong.
    let (status, bad) = restore(&served, session, "first");
    assert_eq!(status, 400, "{bad}");
    let (status, missing) = restore(&served, session, "99");
    assert_eq!(status, 404, "{missing}");
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("before turn 99")
    );

    // The restore changes state: a cross-site request or a form post is refused.
    let host = served.host();
    let path = format!("/api/sessions/{session}/checkpoints/1/restore");
    let cross = crate::serve_support::http(
        served.addr,
        "POST",
        &path,
        &[
            ("Host", host.as_str()),
            ("Origin", "http://evil.example"),
            ("Content-Type", "application/json"),
        ],
        Some("{}"),
    );
    assert_eq!(cross.status, 403, "{}", cross.body);
    let form = crate::serve_support::http(
        served.addr,
        "POST",
        &path,
        &[
            ("Host", host.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some("a=b"),
    );
    assert_eq!(form.status, 415, "{}", form.body);
    served.stop();
}

#[test]
fn serve_without_checkpoints_keeps_none_and_says_so() {
    if !require_python() {
        return;
    }
    let dir = temp_dir("checkpoints-off");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let served = serve(&dir, &work, &["--no-checkpoints"]);
    let session = served.create_session();
    turn(&served, session, "write a.txt a", 1);
    let list = checkpoints(&served, session);
    assert_eq!(list["enabled"], false, "{list}");
    assert_eq!(list["checkpoints"], serde_json::json!([]), "{list}");
    let (status, refused) = restore(&served, session, "1");
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("--no-checkpoints"),
        "{refused}"
    );
    assert!(!dir.join("data/spindle/checkpoints").exists());
    served.stop();
}

#[test]
fn serve_restores_a_file_the_reference_agent_wrote_through_spindle() {
    let dir = temp_dir("checkpoints-client-fs");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let original = "hello\n";
    std::fs::write(work.join("notes.txt"), original).unwrap();
    let served = serve_with(
        &dir,
        &work,
        &["--fs", "allow"],
        &reference_agent_v1_with(&[]),
    );
    let session = served.create_session();
    turn(&served, session, "/scenario client-fs notes.txt", 1);
    let edited = std::fs::read_to_string(work.join("notes.txt")).unwrap();
    assert_eq!(edited, client_fs_changed(original));
    let diff = served.get_json(&format!("/api/sessions/{session}/checkpoints/1/diff"));
    assert_eq!(diff["files"][0]["path"], "notes.txt", "{diff}");
    let (status, restored) = restore(&served, session, "1");
    assert_eq!(status, 200, "{restored}");
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        original
    );
    let (status, _) = restore(&served, session, "restore-1");
    assert_eq!(status, 200);
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        edited
    );
    // Deleting the session deletes its checkpoints; the files stay as they are.
    let stores = dir.join("data/spindle/checkpoints");
    assert_eq!(std::fs::read_dir(&stores).unwrap().count(), 1);
    let deleted = served.request("DELETE", &format!("/api/sessions/{session}"), None);
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(std::fs::read_dir(&stores).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        edited
    );
    served.stop();
}

#[test]
fn serve_sends_the_prompt_when_no_checkpoint_can_be_taken_and_says_why() {
    if !require_python() {
        return;
    }
    let dir = temp_dir("checkpoints-no-git");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    // A `git` that fails, first on the PATH.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let git = bin.join("git");
    std::fs::write(
        &git,
        "#!/bin/sh\necho 'fatal: this git is broken' >&2\nexit 1\n",
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&git).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&git, permissions).unwrap();
    let mut path = vec![bin.clone()];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(path).unwrap();
    let script = dir.join("agent.py");
    std::fs::write(&script, AGENT).unwrap();
    let data = dir.join("data");
    let served = start_serve(
        &dir.join("db.sqlite"),
        &["--protocol", "1", "--cwd", work.to_str().unwrap()],
        &["python3".into(), script.into_os_string()],
        None,
        &[
            ("XDG_DATA_HOME", data.to_str().unwrap()),
            ("PATH", path.to_str().unwrap()),
        ],
    );
    let session = served.create_session();
    turn(&served, session, "write a.txt a", 1);
    assert_eq!(std::fs::read_to_string(work.join("a.txt")).unwrap(), "a\n");
    let list = checkpoints(&served, session);
    assert_eq!(list["checkpoints"], serde_json::json!([]), "{list}");
    let snapshot = served
        .request("GET", &format!("/api/sessions/{session}/snapshot"), None)
        .body;
    assert!(
        snapshot.contains("No checkpoint was taken before this turn")
            && snapshot.contains("this git is broken"),
        "{snapshot}"
    );
    served.stop();
}
