//! The command cases (issue #17): commands for the replica that runs a session, taken only under
//! a live lease, and found again after the lease they were taken under ended.

use std::time::Duration;

use spindle_store::{Direction, TakenCommand};

use crate::Backend;

const LONG: Duration = Duration::from_secs(600);

fn ids(commands: &[TakenCommand]) -> Vec<&str> {
    commands.iter().map(|c| c.id.as_str()).collect()
}

pub fn a_command_is_taken_once_and_sending_it_again_queues_nothing(backend: &Backend) {
    let store = backend.open();
    let session = store.create_session("commands", None).unwrap();
    let lease = store.claim_lease(session, "a", LONG).unwrap();
    store
        .submit_command("c1", session, "{\"prompt\":\"one\"}")
        .unwrap();
    store
        .submit_command("c2", session, "{\"prompt\":\"two\"}")
        .unwrap();
    // A resend (a retried request) is the same command.
    store
        .submit_command("c1", session, "{\"prompt\":\"one\"}")
        .unwrap();
    let other = backend.open();
    // Without the lease (another replica, or the holder under an old epoch) nothing is taken.
    assert!(
        other
            .take_commands(session, "b", lease.epoch)
            .unwrap()
            .is_empty()
    );
    assert!(
        other
            .take_commands(session, "a", lease.epoch - 1)
            .unwrap()
            .is_empty()
    );
    let first = store.take_commands(session, "a", lease.epoch).unwrap();
    let second = other.take_commands(session, "a", lease.epoch).unwrap();
    let bodies: Vec<&str> = first.iter().map(|c| c.body.as_str()).collect();
    assert_eq!(bodies, ["{\"prompt\":\"one\"}", "{\"prompt\":\"two\"}"]);
    assert_eq!(ids(&first), ["c1", "c2"]);
    assert!(
        first
            .iter()
            .all(|c| c.taken_by == "a" && c.epoch == lease.epoch)
    );
    assert!(second.is_empty());
    store
        .submit_command("c1", session, "{\"prompt\":\"one\"}")
        .unwrap();
    assert!(
        store
            .take_commands(session, "a", lease.epoch)
            .unwrap()
            .is_empty()
    );
}

pub fn the_lease_survey_tells_live_from_expired_leases_and_finds_waiting_commands(
    backend: &Backend,
) {
    let store = backend.open();
    let live = store.create_session("live", None).unwrap();
    let expired = store.create_session("expired", None).unwrap();
    let released = store.create_session("released", None).unwrap();
    let idle = store.create_session("idle", None).unwrap();
    assert_eq!(store.lease_survey().unwrap(), Default::default());

    let held = store.claim_lease(live, "replica-a", LONG).unwrap();
    // A holder that stopped renewing: a lease of no time has expired once written.
    let lapsed = store
        .claim_lease(expired, "replica-b", Duration::ZERO)
        .unwrap();
    // A clean hand-over leaves no row.
    store.claim_lease(released, "replica-c", LONG).unwrap();
    assert!(store.release_lease(released, "replica-c").unwrap());
    store
        .submit_command("to-expired", expired, "{\"prompt\":\"p\"}")
        .unwrap();
    store
        .submit_command("to-idle", idle, "{\"cancel\":true}")
        .unwrap();
    store
        .submit_command("to-idle-2", idle, "{\"cancel\":true}")
        .unwrap();

    let survey = backend.open().lease_survey().unwrap();
    assert_eq!(survey.live, vec![held.clone()]);
    assert_eq!(survey.expired, vec![lapsed]);
    assert_eq!(survey.commands_waiting, vec![expired, idle]);

    // Commands taken under a live lease no longer wait; a taken-over lease is live.
    let idle_lease = store.claim_lease(idle, "replica-a", LONG).unwrap();
    let taken = store
        .take_commands(idle, "replica-a", idle_lease.epoch)
        .unwrap();
    assert_eq!(taken.len(), 2);
    let took_over = store.claim_lease(expired, "replica-a", LONG).unwrap();
    let survey = store.lease_survey().unwrap();
    assert_eq!(survey.live, vec![held, took_over, idle_lease.clone()]);
    assert!(survey.expired.is_empty());
    assert_eq!(survey.commands_waiting, vec![expired]);

    // The lease they were taken under ends before they were finished: they wait again.
    assert!(store.release_lease(idle, "replica-a").unwrap());
    assert_eq!(
        store.lease_survey().unwrap().commands_waiting,
        vec![expired, idle]
    );
    let names: Vec<String> = taken.iter().map(|c| c.id.clone()).collect();
    store.finish_commands(idle, &names).unwrap();
    assert_eq!(
        store.lease_survey().unwrap().commands_waiting,
        vec![expired]
    );
}

pub fn commands_a_dead_owner_took_are_found_and_taken_again_once(backend: &Backend) {
    let store = backend.open();
    let session = store.create_session("retake", None).unwrap();
    store
        .append_lines(session, 1, &[(Direction::Client, "{\"before\":1}")])
        .unwrap();
    let a = store.claim_lease(session, "a", LONG).unwrap();
    for id in ["c1", "c2"] {
        store
            .submit_command(id, session, &format!("{{\"prompt\":\"{id}\"}}"))
            .unwrap();
    }
    let taken = store.take_commands(session, "a", a.epoch).unwrap();
    assert_eq!(ids(&taken), ["c1", "c2"]);
    // Taken at the log's end: what A logs for them comes after seq 1.
    assert!(taken.iter().all(|c| c.after_seq == 1));
    // A logs what c1 became, then dies before c2's turn and before finishing c1.
    store
        .append_lines(
            session,
            2,
            &[
                (Direction::Client, "{\"method\":\"session/prompt\"}"),
                (
                    Direction::Server,
                    "{\"spindle\":\"command\",\"command\":\"c1\"}",
                ),
            ],
        )
        .unwrap();
    assert!(store.lease_survey().unwrap().commands_waiting.is_empty());
    backend.sql("UPDATE session_leases SET expires_at = 1");
    // Its lease expired: the commands wait again, and A (slow, not dead) takes nothing more.
    assert_eq!(
        store.lease_survey().unwrap().commands_waiting,
        vec![session]
    );
    store
        .submit_command("c3", session, "{\"cancel\":true}")
        .unwrap();
    assert!(
        store
            .take_commands(session, "a", a.epoch)
            .unwrap()
            .is_empty()
    );

    // B takes the lease over and finds what A took and never finished.
    let b = store.claim_lease(session, "b", LONG).unwrap();
    assert!(b.epoch > a.epoch);
    let unfinished = store.unfinished_commands(session).unwrap();
    assert_eq!(unfinished, taken);
    let notes = store.server_notes_after(session, 1).unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!((notes[0].seq, notes[0].direction), (3, Direction::Server));
    assert!(notes[0].line.contains("\"c1\""));
    // c1 is in the log: finished, never taken again. c2 is not: B takes it again, once.
    store.finish_commands(session, &["c1".into()]).unwrap();
    let wanted: Vec<String> = vec!["c1".into(), "c2".into()];
    // A cannot take them again (its lease is gone); B can, once.
    assert!(
        store
            .retake_commands(session, "a", a.epoch, &wanted)
            .unwrap()
            .is_empty()
    );
    let again = store
        .retake_commands(session, "b", b.epoch, &wanted)
        .unwrap();
    assert_eq!(ids(&again), ["c2"]);
    assert_eq!((again[0].taken_by.as_str(), again[0].epoch), ("b", b.epoch));
    assert_eq!(again[0].after_seq, 3);
    assert_eq!(again[0].body, "{\"prompt\":\"c2\"}");
    assert_eq!(store.unfinished_commands(session).unwrap(), again);
    // B's live lease answers for c2; c3 still waits to be taken.
    assert_eq!(
        store.lease_survey().unwrap().commands_waiting,
        vec![session]
    );
    assert_eq!(
        ids(&store.take_commands(session, "b", b.epoch).unwrap()),
        ["c3"]
    );
    assert!(store.lease_survey().unwrap().commands_waiting.is_empty());
    store
        .finish_commands(session, &["c2".into(), "c3".into(), "c2".into()])
        .unwrap();
    assert!(store.unfinished_commands(session).unwrap().is_empty());
    // The old owner's renewal finds B.
    let renewal = store.renew_lease(session, "a", a.epoch, LONG).unwrap();
    assert_eq!(renewal.map(|l| l.owner), Some("b".to_owned()));
}

pub fn a_version_3_database_keeps_its_commands_and_counts_taken_ones_finished(backend: &Backend) {
    let list = if backend.is_postgres() {
        spindle_store::migrations::POSTGRES
    } else {
        spindle_store::migrations::SQLITE
    };
    backend
        .sql("CREATE TABLE schema_version(version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)");
    for migration in &list[..3] {
        backend.sql(migration.sql);
        backend.sql(&format!(
            "INSERT INTO schema_version(version, applied_at) VALUES({}, 0)",
            migration.version
        ));
    }
    backend.sql(
        "INSERT INTO sessions(id, title, created_at, updated_at) VALUES(7, 'kept', 1, 1);
         INSERT INTO session_leases(session_id, owner, expires_at) VALUES(7, 'old', 1);
         INSERT INTO commands(id, session_id, body, created_at, taken_by, taken_at)
             VALUES('taken', 7, '{}', 1, 'old', 2);
         INSERT INTO commands(id, session_id, body, created_at) VALUES('waiting', 7, '{}', 3);",
    );
    let store = backend.open();
    assert_eq!(
        store.schema_version().unwrap(),
        spindle_store::migrations::LATEST
    );
    // Commands taken before epochs existed count as finished (there is no log note to look for);
    // the waiting one is still taken by the next holder.
    assert!(store.unfinished_commands(7).unwrap().is_empty());
    assert_eq!(store.lease_survey().unwrap().commands_waiting, vec![7]);
    let lease = store.claim_lease(7, "new", LONG).unwrap();
    assert_eq!(
        ids(&store.take_commands(7, "new", lease.epoch).unwrap()),
        ["waiting"]
    );
}
