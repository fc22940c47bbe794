//! Escapes from the workspace root are refused: absolute paths outside it,
//! `..`, symbolic links pointing out (file, directory, dangling), `/proc`,
//! huge writes; for reads, writes, terminal `cwd`s and mentions alike.

use std::os::unix::fs::symlink;

use serde_json::json;
use spindle_host::{FsErrorKind, FsPolicy, HostConfig};

use crate::support::{Fixture, assert_error};

const WRITE: &str = "fs/write_text_file";

/// A workspace with a secret beside it and links inside it that lead out.
fn escapes() -> Fixture {
    let f = Fixture::new(FsPolicy::Allow);
    f.outer.write("secret.txt", "secret\n");
    f.outer.write("outside/inner.txt", "inner\n");
    symlink(f.outer.join("secret.txt"), f.ws_path("link-file")).unwrap();
    symlink(f.outer.join("outside"), f.ws_path("link-dir")).unwrap();
    symlink(f.outer.join("nothing-yet.txt"), f.ws_path("dangling")).unwrap();
    symlink(f.outer.join("no-dir"), f.ws_path("dangling-dir")).unwrap();
    f.outer.write("ws/inside.txt", "inside\n");
    symlink(f.ws_path("inside.txt"), f.ws_path("link-inside")).unwrap();
    f
}

#[tokio::test]
async fn reads_that_escape_are_refused() {
    let f = escapes();
    let cases = [
        (f.outer.abs("secret.txt"), "outside the workspace"),
        ("/etc/passwd".to_owned(), "outside the workspace"),
        (f.ws("../secret.txt"), "`..` are not accepted"),
        ("../secret.txt".to_owned(), "`..` are not accepted"),
        ("sub/../../secret.txt".to_owned(), "`..` are not accepted"),
        (f.ws("link-file"), "through a symbolic link"),
        (f.ws("link-dir/inner.txt"), "through a symbolic link"),
        ("link-dir/inner.txt".to_owned(), "through a symbolic link"),
        ("/proc/self/environ".to_owned(), "outside the workspace"),
    ];
    for (path, needle) in cases {
        let e = f.read(&path).await.unwrap_err();
        assert_error(&e, -32602, needle);
    }
    // A link that stays inside is followed.
    assert_eq!(f.read("link-inside").await.unwrap()["content"], "inside\n");
}

#[tokio::test]
async fn writes_that_escape_are_refused_and_touch_nothing() {
    let f = escapes();
    let cases = [
        (f.outer.abs("secret.txt"), "outside the workspace"),
        (f.outer.abs("new.txt"), "outside the workspace"),
        (f.ws("../new.txt"), "`..` are not accepted"),
        (f.ws("link-file"), "through a symbolic link"),
        (f.ws("link-dir/inner.txt"), "through a symbolic link"),
        (f.ws("link-dir/new.txt"), "through a symbolic link"),
        (f.ws("link-dir/deeper/new.txt"), "through a symbolic link"),
        (f.ws("dangling"), "symbolic link to nothing"),
        (f.ws("dangling-dir/new.txt"), "symbolic link to nothing"),
        ("/proc/self/environ".to_owned(), "outside the workspace"),
    ];
    for (path, needle) in cases {
        let e = f
            .err(
                WRITE,
                json!({"sessionId": "s", "path": path, "content": "pwned\n"}),
            )
            .await;
        assert_error(&e, -32602, needle);
    }
    assert_eq!(
        std::fs::read_to_string(f.outer.join("secret.txt")).unwrap(),
        "secret\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.outer.join("outside/inner.txt")).unwrap(),
        "inner\n"
    );
    for never in [
        "new.txt",
        "nothing-yet.txt",
        "no-dir",
        "outside/new.txt",
        "outside/deeper",
    ] {
        assert!(!f.outer.join(never).exists(), "{never} was created");
    }
    // Writing through a link that stays inside writes its target.
    f.ok(
        WRITE,
        json!({"sessionId": "s", "path": "link-inside", "content": "changed\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(f.ws_path("inside.txt")).unwrap(),
        "changed\n"
    );
}

#[tokio::test]
async fn proc_is_never_served_even_under_a_root_that_contains_it() {
    let f = Fixture::with(|c: &mut HostConfig| {
        c.root = "/".into();
        c.fs = FsPolicy::Allow;
    });
    for path in [
        "/proc/self/environ",
        "/proc/self/cmdline",
        "/sys/kernel/hostname",
        "/dev/null",
        "proc/self/environ",
    ] {
        let e = f.read(path).await.unwrap_err();
        assert_error(&e, -32602, "system files");
    }
    let e = f
        .err(
            WRITE,
            json!({"sessionId": "s", "path": "/proc/self/comm", "content": "x"}),
        )
        .await;
    assert_error(&e, -32602, "system files");
}

#[tokio::test]
async fn a_huge_write_is_refused_before_anything_is_touched() {
    let f = Fixture::new(FsPolicy::Allow);
    let huge = "x".repeat(16 * 1024 * 1024 + 1);
    let e = f
        .err(
            WRITE,
            json!({"sessionId": "s", "path": "huge.txt", "content": huge}),
        )
        .await;
    assert_error(&e, -32602, "more than the write limit of 16777216 bytes");
    assert!(!f.ws_path("huge.txt").exists());
    // At the limit it is written.
    let f = Fixture::with(|c| {
        c.fs = FsPolicy::Allow;
        c.limits.max_write_bytes = 8;
    });
    f.ok(
        WRITE,
        json!({"sessionId": "s", "path": "ok.txt", "content": "12345678"}),
    )
    .await;
    let e = f
        .err(
            WRITE,
            json!({"sessionId": "s", "path": "no.txt", "content": "123456789"}),
        )
        .await;
    assert_error(&e, -32602, "more than the write limit of 8 bytes");
}

#[tokio::test]
async fn terminal_cwds_and_mentions_are_scoped_too() {
    let f = escapes();
    for (cwd, needle) in [
        (f.outer.abs("outside"), "outside the workspace"),
        (f.ws("link-dir"), "through a symbolic link"),
        (f.ws("../outside"), "`..` are not accepted"),
        ("/proc/self".to_owned(), "outside the workspace"),
    ] {
        let e = f
            .err(
                "terminal/create",
                json!({"sessionId": "s", "command": "pwd", "cwd": cwd}),
            )
            .await;
        assert_error(&e, -32602, needle);
    }
    for (path, kind) in [
        ("link-file", FsErrorKind::OutsideRoot),
        ("link-dir/inner.txt", FsErrorKind::OutsideRoot),
        ("../secret.txt", FsErrorKind::InvalidPath),
        ("/etc/passwd", FsErrorKind::OutsideRoot),
        ("missing.txt", FsErrorKind::NotFound),
    ] {
        let e = f.host.resolve_mention(path).unwrap_err();
        assert_eq!(e.kind(), kind, "{path}: {e}");
    }
}

#[tokio::test]
async fn a_root_reached_through_a_link_accepts_both_spellings() {
    let outer = crate::support::TempDir::new();
    outer.write("real/a.txt", "a\n");
    symlink(outer.join("real"), outer.join("alias")).unwrap();
    let mut config = HostConfig::new(outer.join("alias"));
    config.fs = FsPolicy::Allow;
    let (host, _events) = spindle_host::Host::new(config);
    for path in [
        outer.abs("alias/a.txt"),
        outer.abs("real/a.txt"),
        "a.txt".to_owned(),
    ] {
        let raw =
            serde_json::value::to_raw_value(&json!({"sessionId": "s", "path": path})).unwrap();
        match host.handle("fs/read_text_file", Some(&raw)).await {
            spindle_host::HostReply::Done(Ok(v)) => assert_eq!(v["content"], "a\n", "{path}"),
            other => panic!("{path}: {other:?}"),
        }
    }
    let file = host.resolve_mention(&outer.abs("alias/a.txt")).unwrap();
    assert_eq!(file.display_path, "a.txt");
    assert_eq!(file.path, outer.join("real/a.txt"));
}

#[tokio::test]
async fn special_files_are_refused_without_blocking() {
    let f = Fixture::new(FsPolicy::Allow);
    let status = std::process::Command::new("mkfifo")
        .arg(f.ws_path("pipe"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let e = f.read("pipe").await.unwrap_err();
    assert_error(&e, -32603, "not a regular file");
    let e = f
        .err(
            WRITE,
            json!({"sessionId": "s", "path": "pipe", "content": "x"}),
        )
        .await;
    assert_error(&e, -32603, "not a regular file");
    let e = f.host.resolve_mention("pipe").unwrap_err();
    assert!(e.message().contains("not a file"), "{e}");
}

#[test]
fn completion_does_not_list_through_a_link_that_leads_out() {
    let f = escapes();
    let e = f.host.complete_path("link-dir/", 50).unwrap_err();
    assert_eq!(e.kind(), FsErrorKind::OutsideRoot);
    let e = f.host.complete_path("../", 50).unwrap_err();
    assert_eq!(e.kind(), FsErrorKind::InvalidPath);
}
