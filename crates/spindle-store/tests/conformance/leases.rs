//! The lease cases (issue #17): who runs a session, claimed with one conditional write.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use spindle_store::{Direction, LogChange};

use crate::Backend;

const LONG: Duration = Duration::from_secs(600);

pub fn a_lease_is_held_by_one_owner_until_released(backend: &Backend) {
    let store = backend.open();
    let session = store.create_session("leased", None).unwrap();
    assert!(store.leases().unwrap().is_empty());

    let a = store.claim_lease(session, "replica-a", LONG).unwrap();
    assert_eq!((a.session, a.owner.as_str()), (session, "replica-a"));

    // Another replica is told who holds it and changes nothing.
    let b = store.claim_lease(session, "replica-b", LONG).unwrap();
    assert_eq!(b, a);

    // The holder renews it under the same epoch; a renewal under another epoch changes nothing.
    let renewed = store
        .renew_lease(session, "replica-a", a.epoch, LONG)
        .unwrap()
        .unwrap();
    assert_eq!(
        (renewed.owner.as_str(), renewed.epoch),
        ("replica-a", a.epoch)
    );
    assert!(renewed.expires_at >= a.expires_at);
    let stale = store
        .renew_lease(session, "replica-a", a.epoch - 1, Duration::ZERO)
        .unwrap();
    assert_eq!(stale, Some(renewed.clone()));
    // A new claim by the holder is a new epoch (a new hold of the session).
    let again = store.claim_lease(session, "replica-a", LONG).unwrap();
    assert_eq!(again.owner, "replica-a");
    assert!(again.epoch > a.epoch);

    // Only the holder can give it up; then another replica takes it at once.
    assert!(!store.release_lease(session, "replica-b").unwrap());
    assert!(store.release_lease(session, "replica-a").unwrap());
    assert!(store.leases().unwrap().is_empty());
    let b = store.claim_lease(session, "replica-b", LONG).unwrap();
    assert_eq!(b.owner, "replica-b");
    assert_eq!(store.leases().unwrap(), vec![b]);
}

pub fn an_expired_lease_is_taken_and_its_old_owner_cannot_renew_it(backend: &Backend) {
    let store = backend.open();
    let session = store.create_session("expired", None).unwrap();
    // A lease of no time has expired as soon as it is written.
    let a = store
        .claim_lease(session, "replica-a", Duration::ZERO)
        .unwrap();
    assert_eq!(a.owner, "replica-a");
    let b = store.claim_lease(session, "replica-b", LONG).unwrap();
    assert_eq!(b.owner, "replica-b");
    assert!(b.epoch > a.epoch);
    // The old owner's renewal and claim now fail: it learns that it lost the session.
    let renewal = store
        .renew_lease(session, "replica-a", a.epoch, LONG)
        .unwrap();
    assert_eq!(renewal, Some(b.clone()));
    let again = store.claim_lease(session, "replica-a", LONG).unwrap();
    assert_eq!(again.owner, "replica-b");
    // Released, nobody holds it and a renewal says so.
    assert!(store.release_lease(session, "replica-b").unwrap());
    assert_eq!(
        store
            .renew_lease(session, "replica-b", b.epoch, LONG)
            .unwrap(),
        None
    );
    let b = store.claim_lease(session, "replica-b", LONG).unwrap();
    assert_eq!(b.owner, "replica-b");
    // Leases survive a restart (a reopen).
    drop(store);
    let store = backend.open();
    assert_eq!(store.leases().unwrap()[0].owner, "replica-b");
}

pub fn concurrent_claims_of_an_expired_lease_have_one_winner(backend: &Backend) {
    let store = backend.open();
    let sessions: Vec<i64> = (0..8)
        .map(|i| store.create_session(&format!("s{i}"), None).unwrap())
        .collect();
    for session in &sessions {
        store.claim_lease(*session, "dead", Duration::ZERO).unwrap();
    }
    let replicas = 4;
    let barrier = Arc::new(Barrier::new(replicas));
    let threads: Vec<_> = (0..replicas)
        .map(|r| {
            let store = backend.open();
            let barrier = barrier.clone();
            let sessions = sessions.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let me = format!("replica-{r}");
                sessions
                    .iter()
                    .filter(|s| store.claim_lease(**s, &me, LONG).unwrap().owner == me)
                    .count()
            })
        })
        .collect();
    let won: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    // Every session has exactly one new owner, which every replica sees.
    assert_eq!(won, sessions.len());
    let leases = store.leases().unwrap();
    assert_eq!(leases.len(), sessions.len());
    assert!(leases.iter().all(|l| l.owner.starts_with("replica-")));
}

pub fn other_servers_hear_of_new_sessions_and_committed_lines(backend: &Backend) {
    let writer = backend.open();
    let listener = backend.open();
    let Some(mut changes) = listener.changes() else {
        // A store one server uses has nobody else to tell.
        assert!(!backend.is_postgres());
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut next = || {
        runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(30), changes.recv()).await })
            .expect("a change within 30 s")
            .expect("the listener runs")
    };
    assert_eq!(next(), LogChange::RESYNC);
    let session = writer.create_session("heard", None).unwrap();
    assert_eq!(next(), LogChange { session, seq: 0 });
    // A batch that fails is not announced: the next notice is the committed one.
    writer
        .append_lines(session, 1, &[(Direction::Client, "{\"a\":1}")])
        .unwrap();
    assert!(
        writer
            .append_lines(session, 1, &[(Direction::Client, "{\"other\":1}")])
            .is_err()
    );
    writer
        .append_lines(
            session,
            2,
            &[
                (Direction::Agent, "{\"b\":2}"),
                (Direction::Agent, "{\"c\":3}"),
            ],
        )
        .unwrap();
    assert_eq!(next(), LogChange { session, seq: 1 });
    assert_eq!(next(), LogChange { session, seq: 3 });
}
