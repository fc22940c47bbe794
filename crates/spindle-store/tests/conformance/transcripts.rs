//! Transcripts saved in pieces (migration 11): a save writes the shell and the changed items of
//! its lists, the store reads the whole text back; a whole text replaces every item; a row from
//! before version 11 is read as it was; a deleted session leaves no item.

use spindle_store::{ListSave, ReplaySave};

use crate::Backend;
use crate::replies::create_at_version;

fn list(at: usize, count: usize, changed: &[(usize, &str)]) -> ListSave {
    ListSave {
        at,
        count,
        changed: changed.iter().map(|(p, j)| (*p, j.to_string())).collect(),
    }
}

/// `{"entries":[...],"turns":[...]}` with empty lists, and its lists' offsets.
const SHELL: &str = r#"{"entries":[],"turns":[]}"#;
const ENTRIES_AT: usize = 12;
const TURNS_AT: usize = 23;

fn save(entries: ListSave, turns: ListSave) -> ReplaySave {
    ReplaySave {
        shell: SHELL.into(),
        lists: vec![entries, turns],
    }
}

pub fn a_transcript_saved_in_pieces_reads_whole_and_a_save_writes_only_its_changed_items(
    backend: &Backend,
) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    let other = store.create_session("other", None).unwrap();
    let items = |session: i64| {
        backend.number(&format!(
            "SELECT COUNT(*) FROM transcript_items WHERE session_id = {session}"
        ))
    };
    // The first save gives every item.
    let first = save(
        list(
            ENTRIES_AT,
            3,
            &[(0, "{\"a\":1}"), (1, "2"), (2, "\"three\"")],
        ),
        list(TURNS_AT, 1, &[(0, "{\"turn\":1}")]),
    );
    store.save_materialized(id, 3, &first, &[], 1).unwrap();
    store
        .save_materialized(other, 1, &ReplaySave::whole("{\"other\":1}"), &[], 0)
        .unwrap();
    assert_eq!(
        store.transcript(id).unwrap().as_deref(),
        Some(r#"{"entries":[{"a":1},2,"three"],"turns":[{"turn":1}]}"#)
    );
    assert_eq!(items(id), 4);
    // The next gives the changed and new ones only; the others stay as stored.
    let next = save(
        list(ENTRIES_AT, 4, &[(1, "22"), (3, "4")]),
        list(TURNS_AT, 2, &[(1, "{\"turn\":2}")]),
    );
    store.save_materialized(id, 5, &next, &[], 2).unwrap();
    assert_eq!(
        store.transcript(id).unwrap().as_deref(),
        Some(r#"{"entries":[{"a":1},22,"three",4],"turns":[{"turn":1},{"turn":2}]}"#)
    );
    // A shorter list drops the items past its end (a cleared session).
    let cleared = save(list(ENTRIES_AT, 1, &[(0, "0")]), list(TURNS_AT, 0, &[]));
    store.save_materialized(id, 6, &cleared, &[], 0).unwrap();
    assert_eq!(
        store.transcript(id).unwrap().as_deref(),
        Some(r#"{"entries":[0],"turns":[]}"#)
    );
    assert_eq!(items(id), 1);
    // A whole text replaces the pieces.
    store
        .save_materialized(id, 7, &ReplaySave::whole("{\"v\":2}"), &[], 0)
        .unwrap();
    assert_eq!(store.transcript(id).unwrap().as_deref(), Some("{\"v\":2}"));
    assert_eq!(items(id), 0);
    assert_eq!(
        store.transcript(other).unwrap().as_deref(),
        Some("{\"other\":1}")
    );
    // A deleted session leaves no item.
    store.save_materialized(id, 8, &first, &[], 1).unwrap();
    assert!(store.delete_session(id).unwrap());
    assert_eq!(items(id), 0);
    assert_eq!(store.transcript(id).unwrap(), None);
}

pub fn a_version_10_transcript_is_read_whole_and_its_next_save_is_in_pieces(backend: &Backend) {
    create_at_version(backend, 10);
    backend.sql(
        "INSERT INTO sessions(id, title, created_at, updated_at) VALUES(7, 'old', 1, 1);
         INSERT INTO transcripts(session_id, upto_seq, replay_json, updated_at)
             VALUES(7, 3, '{\"entries\":[1,2],\"turns\":[]}', 1);",
    );
    let store = backend.open();
    assert_eq!(
        store.transcript(7).unwrap().as_deref(),
        Some(r#"{"entries":[1,2],"turns":[]}"#)
    );
    let next = save(
        list(ENTRIES_AT, 3, &[(0, "1"), (1, "2"), (2, "3")]),
        list(TURNS_AT, 0, &[]),
    );
    store.save_materialized(7, 4, &next, &[], 0).unwrap();
    assert_eq!(
        store.transcript(7).unwrap().as_deref(),
        Some(r#"{"entries":[1,2,3],"turns":[]}"#)
    );
}
