//! `fs/read_text_file` and `fs/write_text_file`: answers, errors, policies.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};
use spindle_host::{FsPolicy, Host, HostEvent, HostReply};

use crate::support::{Fixture, assert_error};

const READ: &str = "fs/read_text_file";
const WRITE: &str = "fs/write_text_file";

#[tokio::test]
async fn reads_honour_line_and_limit() {
    let f = Fixture::new(FsPolicy::Ask);
    f.outer.write("ws/a.txt", "one\ntwo\nthree\n");
    f.outer.write("ws/b.txt", "one\ntwo\nthree");
    let cases: &[(&str, Option<u64>, Option<u64>, &str)] = &[
        ("a.txt", None, None, "one\ntwo\nthree\n"),
        ("a.txt", Some(2), None, "two\nthree\n"),
        ("a.txt", Some(2), Some(1), "two\n"),
        ("a.txt", Some(0), Some(1), "one\n"),
        ("a.txt", None, Some(2), "one\ntwo\n"),
        ("a.txt", Some(3), Some(10), "three\n"),
        ("a.txt", Some(4), None, ""),
        ("a.txt", Some(1), Some(0), ""),
        ("b.txt", Some(3), Some(1), "three"),
        ("b.txt", Some(2), None, "two\nthree"),
    ];
    for (file, line, limit, want) in cases {
        let got = f
            .ok(
                READ,
                json!({"sessionId": "s", "path": f.ws(file), "line": line, "limit": limit}),
            )
            .await;
        assert_eq!(
            got,
            json!({"content": want}),
            "{file} line {line:?} limit {limit:?}"
        );
    }
    // A relative path is taken relative to the root.
    assert_eq!(
        f.read("a.txt").await.unwrap()["content"],
        "one\ntwo\nthree\n"
    );
}

#[tokio::test]
async fn read_errors_are_clear() {
    let f = Fixture::with(|c| c.limits.max_read_bytes = 16);
    f.outer
        .write("ws/big.txt", "0123456789\n0123456789\n0123456789\n");
    std::fs::write(f.ws_path("bin.dat"), b"ok\n\xff\xfe\n").unwrap();
    std::fs::create_dir_all(f.ws_path("dir")).unwrap();
    let e = f.read(&f.ws("missing.txt")).await.unwrap_err();
    assert_error(&e, -32002, "no such file");
    // ACP's own words first: adapters (Gemini CLI's) recognise a missing file by them.
    assert!(e.message.starts_with("Resource not found: "), "{e}");
    // And the missing path in `data.uri`, as ACP's SDKs put it, with the reason.
    let data: serde_json::Value =
        serde_json::from_str(e.data.as_ref().expect("data").get()).unwrap();
    assert_eq!(
        data["uri"],
        serde_json::json!(f.ws("missing.txt")),
        "{data}"
    );
    assert!(
        data["details"]
            .as_str()
            .unwrap()
            .ends_with("no such file or directory"),
        "{data}"
    );
    let e = f.read(&f.ws("dir")).await.unwrap_err();
    assert_error(&e, -32603, "is a directory");
    let e = f.read(&f.ws("bin.dat")).await.unwrap_err();
    assert_error(&e, -32603, "not UTF-8 text");
    let e = f.read(&f.ws("big.txt")).await.unwrap_err();
    assert_error(&e, -32602, "read it in parts with line and limit");
    // A part within the limit reads; a part over it does not.
    let part = f
        .ok(
            READ,
            json!({"sessionId": "s", "path": f.ws("big.txt"), "line": 2, "limit": 1}),
        )
        .await;
    assert_eq!(part["content"], "0123456789\n");
    let e = f
        .err(
            READ,
            json!({"sessionId": "s", "path": f.ws("big.txt"), "line": 1, "limit": 2}),
        )
        .await;
    assert_error(&e, -32602, "ask for fewer lines");
    // The first line of the binary file is text: a part may be read.
    let part = f
        .ok(
            READ,
            json!({"sessionId": "s", "path": f.ws("bin.dat"), "limit": 1}),
        )
        .await;
    assert_eq!(part["content"], "ok\n");
}

#[tokio::test]
async fn malformed_params_are_invalid_params() {
    let f = Fixture::new(FsPolicy::Allow);
    let cases = [
        (READ, json!({"path": "/x"}), "sessionId is required"),
        (
            READ,
            json!({"sessionId": 1, "path": "/x"}),
            "sessionId must be a string",
        ),
        (READ, json!({"sessionId": "s"}), "path is required"),
        (
            READ,
            json!({"sessionId": "s", "path": 3}),
            "path must be a string",
        ),
        (
            READ,
            json!({"sessionId": "s", "path": "a", "line": "2"}),
            "line must be",
        ),
        (
            READ,
            json!({"sessionId": "s", "path": "a", "limit": -1}),
            "limit must be",
        ),
        (
            READ,
            json!({"sessionId": "s", "path": ""}),
            "the path is empty",
        ),
        (
            WRITE,
            json!({"sessionId": "s", "path": "a"}),
            "content is required",
        ),
        (
            WRITE,
            json!({"sessionId": "s", "content": "x"}),
            "path is required",
        ),
        (READ, json!([1, 2]), "params must be an object"),
    ];
    for (method, params, needle) in cases {
        let e = f.err(method, params.clone()).await;
        assert_error(&e, -32602, needle);
    }
    match f.host.handle(READ, None).await {
        HostReply::Done(Err(e)) => assert_error(&e, -32602, "params are required"),
        other => panic!("{other:?}"),
    }
    let e = f.err("fs/delete_file", json!({"sessionId": "s"})).await;
    assert_error(&e, -32601, "Method not found: fs/delete_file");
}

#[test]
fn handles_names_the_client_methods() {
    for m in [
        READ,
        WRITE,
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    ] {
        assert!(Host::handles(m), "{m}");
    }
    for m in ["session/prompt", "fs/other", "session/request_permission"] {
        assert!(!Host::handles(m), "{m}");
    }
}

#[tokio::test]
async fn policies_gate_reads_and_writes() {
    let cases = [
        (FsPolicy::Off, false, "file access is off"),
        (FsPolicy::ReadOnly, true, "policy read-only"),
    ];
    for (policy, can_read, write_error) in cases {
        let f = Fixture::new(policy);
        f.outer.write("ws/a.txt", "a\n");
        let read = f.read("a.txt").await;
        assert_eq!(read.is_ok(), can_read, "{policy}");
        if let Err(e) = read {
            assert_error(&e, -32601, "file access is off");
        }
        let e = f
            .err(
                WRITE,
                json!({"sessionId": "s", "path": "a.txt", "content": "b"}),
            )
            .await;
        assert_error(&e, -32601, write_error);
        assert_eq!(std::fs::read_to_string(f.ws_path("a.txt")).unwrap(), "a\n");
    }
    for (text, policy) in [
        ("off", FsPolicy::Off),
        ("read-only", FsPolicy::ReadOnly),
        ("ask", FsPolicy::Ask),
        ("allow", FsPolicy::Allow),
    ] {
        assert_eq!(text.parse::<FsPolicy>(), Ok(policy));
        assert_eq!(policy.to_string(), text);
    }
    assert!(
        "yes"
            .parse::<FsPolicy>()
            .unwrap_err()
            .contains("off, read-only, ask or allow")
    );
}

#[test]
fn advertise_sets_the_capabilities_of_the_policy() {
    for (policy, terminals, read, write) in [
        (FsPolicy::Off, false, false, false),
        (FsPolicy::ReadOnly, true, true, false),
        (FsPolicy::Ask, true, true, true),
        (FsPolicy::Allow, false, true, true),
    ] {
        let mut config = spindle_host::HostConfig::new("/w");
        config.fs = policy;
        config.terminals = terminals;
        let mut options = spindle_protocol::ClientOptions::default();
        config.advertise(&mut options);
        assert_eq!(
            (
                options.fs_read_text_file,
                options.fs_write_text_file,
                options.terminal
            ),
            (read, write, terminals),
            "{policy}"
        );
    }
}

#[tokio::test]
async fn allow_writes_at_once_creating_directories_and_keeping_permissions() {
    let mut f = Fixture::new(FsPolicy::Allow);
    let result = f
        .ok(
            WRITE,
            json!({"sessionId": "s", "path": f.ws("new/dir/a.rs"), "content": "fn main() {}\n"}),
        )
        .await;
    assert_eq!(result, json!({}));
    assert_eq!(
        std::fs::read_to_string(f.ws_path("new/dir/a.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert_eq!(
        f.events.try_recv().unwrap(),
        HostEvent::FileBeforeWrite {
            session_id: "s".into(),
            path: f.ws("new/dir/a.rs"),
            old_text: None
        }
    );
    f.outer.write("ws/run.sh", "echo old\n");
    std::fs::set_permissions(f.ws_path("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    f.ok(
        WRITE,
        json!({"sessionId": "s", "path": "run.sh", "content": "echo new\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(f.ws_path("run.sh")).unwrap(),
        "echo new\n"
    );
    let mode = std::fs::metadata(f.ws_path("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
    assert_eq!(
        f.events.try_recv().unwrap(),
        HostEvent::FileBeforeWrite {
            session_id: "s".into(),
            path: "run.sh".into(),
            old_text: Some("echo old\n".into())
        }
    );
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(f.ws_path(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

#[tokio::test]
async fn ask_waits_for_approval_and_a_rejection_writes_nothing() {
    let f = Fixture::new(FsPolicy::Ask);
    f.outer.write("ws/src/lib.rs", "old\n");
    let reply = f
        .call(
            WRITE,
            json!({"sessionId": "s", "path": f.ws("src/lib.rs"), "content": "new\n"}),
        )
        .await;
    let HostReply::NeedsApproval(write) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(write.session_id, "s");
    assert_eq!(write.display_path, "src/lib.rs");
    assert_eq!(write.old_text.as_deref(), Some("old\n"));
    assert_eq!(write.new_text, "new\n");
    assert_eq!(write.path, f.ws_path("src/lib.rs"));
    assert_eq!(
        std::fs::read_to_string(f.ws_path("src/lib.rs")).unwrap(),
        "old\n"
    );
    let e = f.host.reject(&write);
    assert_error(&e, -32603, "the user rejected the write to src/lib.rs");
    let data: Value = serde_json::from_str(e.data.as_ref().unwrap().get()).unwrap();
    assert_eq!(data["reason"], "rejected", "{data}");
    assert_eq!(data["path"], f.ws("src/lib.rs"), "{data}");
    assert_eq!(
        std::fs::read_to_string(f.ws_path("src/lib.rs")).unwrap(),
        "old\n"
    );
    assert_eq!(f.host.approve(write).unwrap(), json!({}));
    assert_eq!(
        std::fs::read_to_string(f.ws_path("src/lib.rs")).unwrap(),
        "new\n"
    );
}

#[tokio::test]
async fn a_write_never_replaces_a_binary_file_or_a_directory() {
    let f = Fixture::new(FsPolicy::Allow);
    std::fs::write(f.ws_path("img.png"), b"\x89PNG\r\n\x1a\n\xff").unwrap();
    std::fs::create_dir_all(f.ws_path("dir")).unwrap();
    let e = f
        .err(
            WRITE,
            json!({"sessionId": "s", "path": "img.png", "content": "text"}),
        )
        .await;
    assert_error(&e, -32603, "not UTF-8 text; not replaced");
    assert_eq!(std::fs::read(f.ws_path("img.png")).unwrap()[0], 0x89);
    let e = f
        .err(
            WRITE,
            json!({"sessionId": "s", "path": "dir", "content": "text"}),
        )
        .await;
    assert_error(&e, -32603, "is a directory");
}

#[tokio::test]
async fn an_approval_of_a_file_changed_since_the_review_writes_nothing() {
    let f = Fixture::new(FsPolicy::Ask);
    f.outer.write("ws/a.txt", "v1\n");
    let HostReply::NeedsApproval(write) = f
        .call(
            WRITE,
            json!({"sessionId": "s", "path": "a.txt", "content": "agent\n"}),
        )
        .await
    else {
        panic!("no approval asked")
    };
    f.outer.write("ws/a.txt", "changed by the user\n");
    let e = f.host.approve(write).unwrap_err();
    assert_error(
        &e,
        -32603,
        "a.txt: the file changed since the write was shown for review",
    );
    assert_eq!(
        std::fs::read_to_string(f.ws_path("a.txt")).unwrap(),
        "changed by the user\n"
    );
    // A new file that appeared meanwhile is not overwritten either.
    let HostReply::NeedsApproval(write) = f
        .call(
            WRITE,
            json!({"sessionId": "s", "path": "b.txt", "content": "agent\n"}),
        )
        .await
    else {
        panic!("no approval asked")
    };
    f.outer.write("ws/b.txt", "mine\n");
    assert!(f.host.approve(write).is_err());
    assert_eq!(
        std::fs::read_to_string(f.ws_path("b.txt")).unwrap(),
        "mine\n"
    );
}

/// opencode writes the file itself and asks the client to write it too (issue 27): when the file
/// already holds the accepted text, the approval succeeds and writes nothing.
#[tokio::test]
async fn an_approval_of_a_file_that_already_holds_the_accepted_text_succeeds() {
    let f = Fixture::new(FsPolicy::Ask);
    for (name, before) in [("a.txt", Some("v1\n")), ("new.txt", None)] {
        if let Some(text) = before {
            f.outer.write(&format!("ws/{name}"), text);
        }
        let HostReply::NeedsApproval(write) = f
            .call(
                WRITE,
                json!({"sessionId": "s", "path": name, "content": "agent\n"}),
            )
            .await
        else {
            panic!("no approval asked")
        };
        f.outer.write(&format!("ws/{name}"), "agent\n");
        assert_eq!(f.host.approve(write).unwrap(), json!({}), "{name}");
        assert_eq!(std::fs::read_to_string(f.ws_path(name)).unwrap(), "agent\n");
    }
}

#[tokio::test]
async fn a_missing_root_makes_every_request_say_so() {
    let f = Fixture::with(|c| c.root = c.root.join("not-there"));
    let e = f.read("a.txt").await.unwrap_err();
    assert_error(&e, -32603, "cannot be used");
    let e = f
        .err(
            "terminal/create",
            json!({"sessionId": "s", "command": "true"}),
        )
        .await;
    assert_error(&e, -32603, "the workspace root");
    assert!(f.host.resolve_mention("a.txt").is_err());
}
