//! The session's additional directories (`additionalDirectories`) widen the
//! scope: reads and writes under the workspace root or under any additional
//! directory are served, with the same checks (no `..`, no symbolic link out
//! of every root, no system trees); everything else stays outside.

use std::os::unix::fs::symlink;

use serde_json::json;
use spindle_host::FsPolicy;

use crate::support::{Fixture, assert_error};

const WRITE: &str = "fs/write_text_file";

/// `ws/` is the root, `extra/` beside it an additional directory, and
/// `secret.txt` beside both outside the scope.
fn with_extra(extra: bool) -> Fixture {
    let f = Fixture::with(|c| {
        c.fs = FsPolicy::Allow;
        let dir = c.root.parent().unwrap().join("extra");
        std::fs::create_dir_all(&dir).unwrap();
        if extra {
            c.additional_roots = vec![dir];
        }
    });
    f.outer.write("extra/notes.txt", "in the extra directory\n");
    f.outer.write("secret.txt", "secret\n");
    f.outer.write("ws/here.txt", "in the workspace\n");
    f
}

#[tokio::test]
async fn files_in_an_additional_directory_are_read_and_written() {
    let f = with_extra(true);
    let read = f.read(&f.outer.abs("extra/notes.txt")).await.unwrap();
    assert_eq!(read["content"], "in the extra directory\n");
    let target = f.outer.abs("extra/deeper/new.txt");
    f.ok(
        WRITE,
        json!({"sessionId": "s", "path": target, "content": "written\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(f.outer.join("extra/deeper/new.txt")).unwrap(),
        "written\n"
    );
    // The workspace root is still served, and relative paths are taken from it.
    assert_eq!(
        f.read("here.txt").await.unwrap()["content"],
        "in the workspace\n"
    );
    let e = f.read("notes.txt").await.unwrap_err();
    assert_error(&e, -32002, "no such file");
    // A link in the workspace that leads into the additional directory stays in scope.
    symlink(f.outer.join("extra/notes.txt"), f.ws_path("to-extra")).unwrap();
    assert_eq!(
        f.read("to-extra").await.unwrap()["content"],
        "in the extra directory\n"
    );
}

#[tokio::test]
async fn outside_every_root_is_still_refused() {
    let f = with_extra(true);
    symlink(f.outer.join("secret.txt"), f.outer.join("extra/link-out")).unwrap();
    let cases = [
        (f.outer.abs("secret.txt"), "and its additional directories"),
        (f.outer.abs("extra/../secret.txt"), "`..` are not accepted"),
        (f.outer.abs("extra/link-out"), "through a symbolic link"),
        ("/proc/self/environ".to_owned(), "outside the workspace"),
    ];
    for (path, needle) in cases {
        let e = f.read(&path).await.unwrap_err();
        assert_error(&e, -32602, needle);
    }
    let e = f
        .err(
            WRITE,
            json!({"sessionId": "s", "path": f.outer.abs("new.txt"), "content": "x"}),
        )
        .await;
    assert_error(&e, -32602, "outside the workspace");
    assert!(!f.outer.join("new.txt").exists());
}

#[tokio::test]
async fn without_additional_directories_the_same_file_is_outside() {
    let f = with_extra(false);
    let e = f.read(&f.outer.abs("extra/notes.txt")).await.unwrap_err();
    assert_error(&e, -32602, "outside the workspace");
    assert!(!e.message.contains("additional"), "{}", e.message);
}
