//! Replies and wire lines across migration 5 (rowid tables), and saves that write only the
//! turns that changed.

use spindle_store::migrations::{self, LATEST, Migration};
use spindle_store::{Direction, ReplaySave};

use crate::Backend;
use crate::cases::reply;

fn list(backend: &Backend) -> &'static [Migration] {
    if backend.is_postgres() {
        migrations::POSTGRES
    } else {
        migrations::SQLITE
    }
}

/// Applies the first `upto` migrations by hand, as an older build left the database.
pub fn create_at_version(backend: &Backend, upto: usize) {
    backend
        .sql("CREATE TABLE schema_version(version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)");
    for migration in &list(backend)[..upto] {
        backend.sql(migration.sql);
        backend.sql(&format!(
            "INSERT INTO schema_version(version, applied_at) VALUES({}, 0)",
            migration.version
        ));
    }
}

pub fn a_version_4_database_keeps_its_replies_and_wire_lines(backend: &Backend) {
    create_at_version(backend, 4);
    let line = if backend.is_postgres() {
        "'\\x7b7d'::bytea"
    } else {
        "'{}'"
    };
    // Session 7 holds a large line and reply (past a page: overflow) between small ones.
    let big = "x".repeat(100_000);
    let (big_text, big_line) = if backend.is_postgres() {
        (
            "repeat('x', 100000)",
            "convert_to(repeat('x', 100000), 'UTF8')",
        )
    } else {
        let x = "replace(hex(zeroblob(50000)), '0', 'x')";
        (x, x)
    };
    backend.sql(&format!(
        "INSERT INTO sessions(id, title, created_at, updated_at) VALUES(7, 'kept', 1, 1);
         INSERT INTO sessions(id, title, created_at, updated_at) VALUES(8, 'other', 1, 1);
         INSERT INTO wire_log(session_id, seq, direction, line, at) VALUES(7, 2, 'agent', {big_line}, 1);
         INSERT INTO wire_log(session_id, seq, direction, line, at) VALUES(7, 1, 'client', {line}, 1);
         INSERT INTO wire_log(session_id, seq, direction, line, at) VALUES(8, 1, 'agent', {line}, 1);
         INSERT INTO wire_log(session_id, seq, direction, line, at) VALUES(7, 3, 'server', {line}, 1);
         INSERT INTO replies(session_id, turn, text, finished, stop_reason)
             VALUES(7, 2, 'second', {f}, NULL);
         INSERT INTO replies(session_id, turn, text, finished, stop_reason)
             VALUES(7, 1, {big_text}, {t}, 'end_turn');
         INSERT INTO replies(session_id, turn, text, finished, stop_reason)
             VALUES(8, 1, 'o', {t}, 'cancelled');",
        t = if backend.is_postgres() { "TRUE" } else { "1" },
        f = if backend.is_postgres() { "FALSE" } else { "0" },
    ));
    let store = backend.open();
    assert_eq!(store.schema_version().unwrap(), LATEST);
    let (lines, skipped) = store.lines(7).unwrap();
    assert_eq!(skipped, 0);
    let got: Vec<(i64, Direction, usize)> = lines
        .iter()
        .map(|l| (l.seq, l.direction, l.line.len()))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, Direction::Client, 2),
            (2, Direction::Agent, big.len()),
            (3, Direction::Server, 2)
        ]
    );
    assert_eq!(lines[1].line, big);
    assert_eq!(store.last_seq(7).unwrap(), 3);
    assert_eq!(store.lines_after(7, 2).unwrap().0[0].seq, 3);
    assert_eq!(store.server_notes_after(7, 0).unwrap().len(), 1);
    assert_eq!(store.lines(8).unwrap().0.len(), 1);
    assert_eq!(
        store.replies(7).unwrap(),
        vec![
            reply(1, &big, true, Some("end_turn")),
            reply(2, "second", false, None)
        ]
    );
    assert_eq!(
        store.replies(8).unwrap(),
        vec![reply(1, "o", true, Some("cancelled"))]
    );
    // The uniqueness guarantees hold after the rebuild: a different line at a kept seq fails the
    // batch, the same one is committed once.
    assert!(
        store
            .append_lines(7, 3, &[(Direction::Agent, "different")])
            .is_err()
    );
    store
        .append_lines(
            7,
            3,
            &[(Direction::Server, "{}"), (Direction::Agent, "new")],
        )
        .unwrap();
    assert_eq!(store.last_seq(7).unwrap(), 4);
    store
        .save_materialized(
            7,
            4,
            &ReplaySave::whole("{}"),
            &[reply(2, "second, finished", true, None)],
            2,
        )
        .unwrap();
    assert_eq!(
        store.replies(7).unwrap(),
        vec![
            reply(1, &big, true, Some("end_turn")),
            reply(2, "second, finished", true, None)
        ]
    );
}

/// Records every row write of `replies` (insert, update, delete) in `reply_writes(turn)`.
fn count_reply_writes(backend: &Backend) {
    if backend.is_postgres() {
        backend.sql(
            "CREATE TABLE reply_writes(turn BIGINT NOT NULL);
             CREATE FUNCTION note_reply_write() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 INSERT INTO reply_writes(turn) VALUES(COALESCE(NEW.turn, OLD.turn));
                 RETURN NULL;
             END $$;
             CREATE TRIGGER reply_written AFTER INSERT OR UPDATE OR DELETE ON replies
                 FOR EACH ROW EXECUTE FUNCTION note_reply_write();",
        );
    } else {
        backend.sql(
            "CREATE TABLE reply_writes(turn INTEGER NOT NULL);
             CREATE TRIGGER reply_inserted AFTER INSERT ON replies
                 BEGIN INSERT INTO reply_writes(turn) VALUES(NEW.turn); END;
             CREATE TRIGGER reply_updated AFTER UPDATE ON replies
                 BEGIN INSERT INTO reply_writes(turn) VALUES(NEW.turn); END;
             CREATE TRIGGER reply_deleted AFTER DELETE ON replies
                 BEGIN INSERT INTO reply_writes(turn) VALUES(OLD.turn); END;",
        );
    }
}

fn writes(backend: &Backend, turn: i64) -> i64 {
    backend.number(&format!(
        "SELECT COUNT(*) FROM reply_writes WHERE turn = {turn}"
    ))
}

pub fn saving_a_turn_writes_only_the_replies_that_changed(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    count_reply_writes(backend);
    let long = "y".repeat(50_000);
    let mut replies = vec![
        reply(1, &long, true, Some("end_turn")),
        reply(2, "two", true, Some("end_turn")),
    ];
    store
        .save_materialized(id, 2, &ReplaySave::whole("{}"), &replies, 2)
        .unwrap();
    assert_eq!((writes(backend, 1), writes(backend, 2)), (1, 1));
    // A new turn streams in, saved at every change with its reply alone (what the runtime
    // gives): the earlier turns are not written again.
    replies.push(reply(3, "thr", false, None));
    store
        .save_materialized(id, 3, &ReplaySave::whole("{}"), &replies[2..], 3)
        .unwrap();
    replies[2] = reply(3, "three", false, None);
    store
        .save_materialized(id, 4, &ReplaySave::whole("{}"), &replies[2..], 3)
        .unwrap();
    replies[2] = reply(3, "three", true, Some("end_turn"));
    store
        .save_materialized(id, 5, &ReplaySave::whole("{}"), &replies[2..], 3)
        .unwrap();
    // Saving the same replies again, all of them or none, writes nothing.
    store
        .save_materialized(id, 6, &ReplaySave::whole("{}"), &replies, 3)
        .unwrap();
    store
        .save_materialized(id, 6, &ReplaySave::whole("{}"), &[], 3)
        .unwrap();
    assert_eq!(
        (writes(backend, 1), writes(backend, 2), writes(backend, 3)),
        (1, 1, 3)
    );
    assert_eq!(store.replies(id).unwrap(), replies);
    // A changed stop reason alone is written; the turns after the count are deleted, the
    // others stay.
    replies[0].stop_reason = Some("cancelled".into());
    store
        .save_materialized(id, 7, &ReplaySave::whole("{}"), &replies[..1], 2)
        .unwrap();
    replies.truncate(2);
    assert_eq!(
        (writes(backend, 1), writes(backend, 2), writes(backend, 3)),
        (2, 1, 4)
    );
    assert_eq!(store.replies(id).unwrap(), replies);
    assert_eq!(
        backend.number(&format!(
            "SELECT COUNT(*) FROM replies WHERE session_id = {id}"
        )),
        2
    );
}
