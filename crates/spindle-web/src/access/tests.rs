use std::time::Duration;

use axum::http::HeaderValue;

use super::*;

const ADMIN: &str = "admin-token-0123456789";
const VIEWER: &str = "viewer-token-0123456789";

fn users(text: &str) -> Users {
    Users::parse(text).unwrap()
}

fn team() -> Users {
    users(&format!(
        r#"{{"users": [
            {{"name": "ada", "role": "admin", "token": "{ADMIN}"}},
            {{"name": "vic", "role": "observer", "token": "{VIEWER}"}},
            {{"name": "sso", "role": "controller"}}
        ]}}"#
    ))
}

fn peer(text: &str) -> Option<IpAddr> {
    Some(text.parse().unwrap())
}

#[test]
fn open_access_is_the_local_admin_and_users_need_their_token() {
    let now = Instant::now();
    let open = Access::open();
    let local = open.identify(None, &HeaderMap::new(), None, now).unwrap();
    assert_eq!((local.name.as_str(), local.role), ("local", Role::Admin));
    assert!(!open.token_required());

    let access = Access::users(team(), None);
    assert!(access.token_required());
    let none = HeaderMap::new();
    let cases: &[(Option<&str>, Result<&str, StatusCode>)] = &[
        (Some(ADMIN), Ok("ada")),
        (Some(VIEWER), Ok("vic")),
        (None, Err(StatusCode::UNAUTHORIZED)),
        (Some("admin-token-012345678"), Err(StatusCode::UNAUTHORIZED)),
        (Some(""), Err(StatusCode::UNAUTHORIZED)),
    ];
    for (token, expected) in cases {
        let got = access
            .identify(peer("192.0.2.1"), &none, *token, now)
            .map(|user| user.name.clone())
            .map_err(|denied| denied.status);
        assert_eq!(got.as_deref().map_err(|s| *s), *expected, "{token:?}");
    }
}

#[test]
fn an_address_over_its_failures_is_refused_even_with_a_good_token() {
    let now = Instant::now();
    let access = Access::users(team(), None);
    let none = HeaderMap::new();
    // Visits without a token are no guesses: they do not count.
    for _ in 0..50 {
        let denied = access
            .identify(peer("198.51.100.9"), &none, None, now)
            .unwrap_err();
        assert_eq!(denied.status, StatusCode::UNAUTHORIZED);
    }
    for n in 0..10 {
        let denied = access
            .identify(
                peer("198.51.100.9"),
                &none,
                Some("guess-guess-guess-1"),
                now,
            )
            .unwrap_err();
        assert_eq!(denied.status, StatusCode::UNAUTHORIZED, "attempt {n}");
    }
    let denied = access
        .identify(peer("198.51.100.9"), &none, Some(ADMIN), now)
        .unwrap_err();
    assert_eq!(denied.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(denied.retry_after, Some(60));
    // Another address is not held up, and the window ends.
    assert!(
        access
            .identify(peer("198.51.100.10"), &none, Some(ADMIN), now)
            .is_ok()
    );
    let later = now + Duration::from_secs(61);
    assert!(
        access
            .identify(peer("198.51.100.9"), &none, Some(ADMIN), later)
            .is_ok()
    );
}

#[test]
fn a_trusted_proxy_names_listed_users_only_and_others_cannot_pretend_to_be_it() {
    let now = Instant::now();
    let proxy = TrustedProxy::new("X-Forwarded-User", &["10.9.0.1".into()]).unwrap();
    let access = Access::users(team(), Some(proxy));
    let mut named = HeaderMap::new();
    named.insert("x-forwarded-user", HeaderValue::from_static("sso"));
    let user = access
        .identify(peer("10.9.0.1"), &named, None, now)
        .unwrap();
    assert_eq!((user.name.as_str(), user.role), ("sso", Role::Controller));
    // Not from the proxy: the header counts for nothing, a token is needed.
    let denied = access
        .identify(peer("10.9.0.2"), &named, None, now)
        .unwrap_err();
    assert_eq!(denied.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        access
            .identify(peer("10.9.0.2"), &named, Some(VIEWER), now)
            .unwrap()
            .name,
        "vic"
    );
    // From the proxy: an unlisted name is 403, no name is 401.
    named.insert("x-forwarded-user", HeaderValue::from_static("mallory"));
    assert_eq!(
        access
            .identify(peer("10.9.0.1"), &named, None, now)
            .unwrap_err()
            .status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        access
            .identify(peer("10.9.0.1"), &HeaderMap::new(), Some(ADMIN), now)
            .unwrap_err()
            .status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn a_reload_refuses_removed_users_at_once_and_ends_their_streams() {
    let now = Instant::now();
    let access = Arc::new(Access::users(team(), None));
    let none = HeaderMap::new();
    let vic = access.identify(None, &none, Some(VIEWER), now).unwrap();
    let ada = access.identify(None, &none, Some(ADMIN), now).unwrap();
    let vic_stream = tokio::spawn(access.clone().revoked(vic.clone()));
    let ada_stream = tokio::spawn(access.clone().revoked(ada.clone()));
    tokio::task::yield_now().await;
    let changed = access
        .reload(users(&format!(
            r#"{{"users": [{{"name": "ada", "role": "admin", "token": "{ADMIN}"}}]}}"#
        )))
        .unwrap();
    assert_eq!(changed, vec!["vic".to_string(), "sso".to_string()]);
    assert!(access.identify(None, &none, Some(VIEWER), now).is_err());
    assert!(!access.still_valid(&vic));
    assert!(access.still_valid(&ada));
    tokio::time::timeout(Duration::from_secs(10), vic_stream)
        .await
        .expect("the removed user's stream ends")
        .unwrap();
    tokio::task::yield_now().await;
    assert!(!ada_stream.is_finished());
    // A role change counts as a removal of the old role.
    let changed = access
        .reload(users(&format!(
            r#"{{"users": [{{"name": "ada", "role": "observer", "token": "{ADMIN}"}}]}}"#
        )))
        .unwrap();
    assert_eq!(changed, vec!["ada".to_string()]);
    tokio::time::timeout(Duration::from_secs(10), ada_stream)
        .await
        .expect("the demoted user's stream ends")
        .unwrap();
    assert_eq!(
        Access::open().reload(team()),
        Err("this server runs without --users")
    );
}
