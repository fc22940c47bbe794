//! `@path` mentions and their completion.

use spindle_host::{FsPolicy, mime_for_path};

use crate::support::Fixture;

#[test]
fn a_mention_resolves_to_uri_mime_and_text() {
    let f = Fixture::with(|c| c.limits.max_mention_text_bytes = 64);
    f.outer.write("ws/src/main.rs", "fn main() {}\n");
    f.outer.write("ws/notes with space.md", "# hi\n");
    f.outer.write("ws/big.txt", &"x".repeat(65));
    f.outer.write("ws/LICENSE", "text without extension\n");
    std::fs::write(f.ws_path("logo.png"), b"\x89PNG\r\n\x1a\n\x00").unwrap();
    std::fs::write(f.ws_path("blob"), b"\x00\xff\xfe").unwrap();
    let cases: &[(&str, &str, bool, u64)] = &[
        ("src/main.rs", "text/x-rust", true, 13),
        ("notes with space.md", "text/markdown", true, 5),
        ("big.txt", "text/plain", false, 65),
        ("LICENSE", "text/plain", true, 23),
        ("logo.png", "image/png", false, 9),
        ("blob", "application/octet-stream", false, 3),
    ];
    for (path, mime, has_text, size) in cases {
        let file = f.host.resolve_mention(path).unwrap();
        assert_eq!(file.display_path, *path);
        assert_eq!(file.mime, *mime, "{path}");
        assert_eq!(file.text.is_some(), *has_text, "{path}");
        assert_eq!(file.size, *size, "{path}");
        assert_eq!(file.path, f.ws_path(path));
    }
    let file = f.host.resolve_mention("notes with space.md").unwrap();
    assert!(file.uri.starts_with("file:///"));
    assert!(
        file.uri.ends_with("/ws/notes%20with%20space.md"),
        "{}",
        file.uri
    );
    assert_eq!(file.text.as_deref(), Some("# hi\n"));
    let absolute = f.host.resolve_mention(&f.ws("src/main.rs")).unwrap();
    assert_eq!(absolute.display_path, "src/main.rs");
    let e = f.host.resolve_mention("src").unwrap_err();
    assert!(e.message().contains("not a file"), "{e}");
    assert_eq!(mime_for_path("A.JPG".as_ref()), Some("image/jpeg"));
    assert_eq!(mime_for_path("Makefile".as_ref()), None);
}

#[test]
fn completion_lists_matching_entries_hiding_dotfiles() {
    let f = Fixture::new(FsPolicy::ReadOnly);
    for path in [
        "src/main.rs",
        "src/lib.rs",
        "src/.hidden",
        "README.md",
        ".env",
        "tests/a.rs",
    ] {
        f.outer.write(&format!("ws/{path}"), "x");
    }
    let cases: &[(&str, &[&str])] = &[
        ("", &["README.md", "src/", "tests/"]),
        ("s", &["src/"]),
        ("src/", &["src/lib.rs", "src/main.rs"]),
        ("src/m", &["src/main.rs"]),
        ("src/.", &["src/.hidden"]),
        (".", &[".env"]),
        ("zzz", &[]),
    ];
    for (prefix, want) in cases {
        assert_eq!(
            f.host.complete_path(prefix, 50).unwrap(),
            *want,
            "{prefix:?}"
        );
    }
    assert_eq!(f.host.complete_path("", 2).unwrap().len(), 2);
    assert!(f.host.complete_path("../", 50).is_err());
    assert!(f.host.complete_path("nope/", 50).is_err());
}
