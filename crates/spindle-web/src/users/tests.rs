use super::*;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";

fn sha(token: &str) -> String {
    hex::encode(digest(token))
}

#[test]
fn a_users_file_maps_each_token_to_its_user() {
    let text = format!(
        r#"{{"users": [
            {{"name": "alice", "role": "admin", "token": "{ALICE}"}},
            {{"name": "bob", "role": "observer", "tokenSha256": "{}"}},
            {{"name": "carol", "role": "controller"}}
        ]}}"#,
        sha(BOB)
    );
    let users = Users::parse(&text).unwrap();
    let alice = users.authenticate(ALICE).unwrap();
    assert_eq!((alice.name.as_str(), alice.role), ("alice", Role::Admin));
    let bob = users.authenticate(BOB).unwrap();
    assert_eq!((bob.name.as_str(), bob.role), ("bob", Role::Observer));
    assert_eq!(users.authenticate("carol"), None);
    assert_eq!(users.authenticate(""), None);
    assert_eq!(users.authenticate(&ALICE[1..]), None);
    assert_eq!(users.tokenless(), vec!["carol"]);
    assert_eq!(users.by_name("carol").unwrap().role, Role::Controller);
    assert_eq!(users.by_name("dave"), None);
}

#[test]
fn refused_files_say_why_without_printing_a_token() {
    let long = "x".repeat(MIN_TOKEN_CHARS);
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "not a users file"),
        (r#"{"users": []}"#.into(), "names no user"),
        (r#"{"people": []}"#.into(), "not a users file"),
        (
            format!(r#"{{"users": [{{"name": "a", "role": "root", "token": "{long}"}}]}}"#),
            "not a users file",
        ),
        (
            format!(r#"{{"users": [{{"name": "a", "role": "admin", "tokn": "{long}"}}]}}"#),
            "not a users file",
        ),
        (
            format!(r#"{{"users": [{{"name": " ", "role": "admin", "token": "{long}"}}]}}"#),
            "1 to 64 printable",
        ),
        (
            format!(
                r#"{{"users": [{{"name": "a", "role": "admin", "token": "{long}"}}, {{"name": "a", "role": "observer", "token": "{long}y"}}]}}"#
            ),
            "given twice",
        ),
        (
            format!(
                r#"{{"users": [{{"name": "a", "role": "admin", "token": "{long}"}}, {{"name": "b", "role": "observer", "token": "{long}"}}]}}"#
            ),
            "same token as another user",
        ),
        (
            format!(
                r#"{{"users": [{{"name": "a", "role": "admin", "token": "{long}"}}, {{"name": "b", "role": "observer", "tokenSha256": "{}"}}]}}"#,
                sha(&long)
            ),
            "same token as another user",
        ),
        (
            r#"{"users": [{"name": "a", "role": "admin", "token": "short-secret"}]}"#.into(),
            "at least 16 characters",
        ),
        (
            r#"{"users": [{"name": "a", "role": "admin", "token": "has a space in it ok"}]}"#
                .into(),
            "without spaces",
        ),
        (
            r#"{"users": [{"name": "a", "role": "admin", "tokenSha256": "abc"}]}"#.into(),
            "64 hex digits",
        ),
        (
            format!(
                r#"{{"users": [{{"name": "a", "role": "admin", "token": "{long}", "tokenSha256": "{}"}}]}}"#,
                sha(&long)
            ),
            "not both",
        ),
    ];
    for (text, expected) in cases {
        let error = Users::parse(&text).unwrap_err().0;
        assert!(error.contains(expected), "{text}\n  gave: {error}");
        assert!(!error.contains(&long), "{error} prints the token");
        assert!(!error.contains("short-secret"), "{error} prints the token");
    }
}

#[test]
fn roles_are_ordered_and_each_allows_the_ones_below() {
    let table = [
        (Role::Observer, Role::Observer, true),
        (Role::Observer, Role::Controller, false),
        (Role::Observer, Role::Admin, false),
        (Role::Controller, Role::Observer, true),
        (Role::Controller, Role::Controller, true),
        (Role::Controller, Role::Admin, false),
        (Role::Admin, Role::Observer, true),
        (Role::Admin, Role::Controller, true),
        (Role::Admin, Role::Admin, true),
    ];
    for (role, needed, allowed) in table {
        assert_eq!(role.allows(needed), allowed, "{role} for {needed}");
    }
}

#[test]
fn the_single_token_of_token_is_one_admin_and_debug_prints_no_secret() {
    let users = Users::single_admin(ALICE);
    assert_eq!(users.authenticate(ALICE).unwrap().role, Role::Admin);
    assert_eq!(users.authenticate(BOB), None);
    let printed = format!("{users:?}");
    assert!(
        !printed.contains(ALICE) && !printed.contains(&sha(ALICE)),
        "{printed}"
    );
    assert!(printed.contains("admin"));
}

#[test]
fn a_file_on_disk_is_read_and_its_path_named_in_errors() {
    let dir = std::env::temp_dir().join(format!("spindle-users-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("users.json");
    std::fs::write(
        &path,
        format!(r#"{{"users": [{{"name": "alice", "role": "controller", "token": "{ALICE}"}}]}}"#),
    )
    .unwrap();
    assert_eq!(
        Users::load(&path)
            .unwrap()
            .authenticate(ALICE)
            .unwrap()
            .role,
        Role::Controller
    );
    let missing = dir.join("missing.json");
    assert!(
        Users::load(&missing)
            .unwrap_err()
            .0
            .contains("missing.json")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
