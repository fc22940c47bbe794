//! The cases every store must pass, written once against [`Store`].

use std::sync::Arc;

use spindle_store::migrations::{self, LATEST};
use spindle_store::{
    Direction, LoggedLine, ReplaySave, SessionAgent, Store, StoreError, StoredReply,
};

use crate::Backend;
pub use crate::commands::*;
pub use crate::leases::*;
pub use crate::rename_delete::*;
pub use crate::replies::*;
pub use crate::transcripts::*;
pub use crate::wire_pages::*;

fn logged(store: &dyn Store, session: i64) -> Vec<(i64, Direction, String)> {
    let (lines, skipped) = store.lines(session).unwrap();
    assert_eq!(skipped, 0);
    lines
        .into_iter()
        .map(
            |LoggedLine {
                 seq,
                 direction,
                 line,
                 ..
             }| (seq, direction, line),
        )
        .collect()
}

/// A reply as the server saves it (also used by `replies.rs`).
pub fn reply(turn: i64, text: &str, finished: bool, stop: Option<&str>) -> StoredReply {
    StoredReply {
        turn,
        text: text.into(),
        finished,
        stop_reason: stop.map(str::to_string),
    }
}

pub fn log_round_trips_in_order_across_reopen(backend: &Backend) {
    let id = {
        let store = backend.open();
        let id = store.create_session("first", None).unwrap();
        store
            .append_lines(id, 1, &[(Direction::Client, "{\"a\":1}")])
            .unwrap();
        store
            .append_lines(
                id,
                2,
                &[
                    (Direction::Agent, "{\"b\":2}"),
                    (Direction::AgentReplay, "{\"c\":3}"),
                    (Direction::Server, "{\"spindle\":\"note\"}"),
                    (Direction::Local, "{\"local\":{}}"),
                ],
            )
            .unwrap();
        store.set_agent_session_id(id, "sess-1").unwrap();
        id
    };
    let store = backend.open();
    let sessions = store.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].id, id);
    assert_eq!(sessions[0].agent_session_id.as_deref(), Some("sess-1"));
    assert_eq!(
        logged(store.as_ref(), id),
        vec![
            (1, Direction::Client, "{\"a\":1}".into()),
            (2, Direction::Agent, "{\"b\":2}".into()),
            (3, Direction::AgentReplay, "{\"c\":3}".into()),
            (4, Direction::Server, "{\"spindle\":\"note\"}".into()),
            (5, Direction::Local, "{\"local\":{}}".into()),
        ]
    );
    assert_eq!(store.last_seq(id).unwrap(), 5);
    assert_eq!(store.last_seq(id + 1000).unwrap(), 0);
}

pub fn a_conflicting_batch_commits_nothing(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    store
        .append_lines(id, 1, &[(Direction::Agent, "one")])
        .unwrap();
    // The batch's second row (seq 1) holds a different line: its first row (seq 0) and its
    // third (seq 2) must be rolled back with it.
    let error = store
        .append_lines(
            id,
            0,
            &[
                (Direction::Agent, "zero"),
                (Direction::Agent, "not one"),
                (Direction::Agent, "two"),
            ],
        )
        .unwrap_err();
    assert!(matches!(error, StoreError::Write(_)), "{error:?}");
    // The same text from the other side is a different line too.
    let error = store
        .append_lines(id, 1, &[(Direction::Client, "one")])
        .unwrap_err();
    assert!(matches!(error, StoreError::Write(_)), "{error:?}");
    assert_eq!(
        logged(store.as_ref(), id),
        vec![(1, Direction::Agent, "one".into())]
    );
    // The session goes on.
    store
        .append_lines(id, 2, &[(Direction::Agent, "two")])
        .unwrap();
    assert_eq!(store.last_seq(id).unwrap(), 2);
}

pub fn a_retried_batch_is_committed_once(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    let batch = [(Direction::Client, "p"), (Direction::Agent, "a")];
    store.append_lines(id, 1, &batch).unwrap();
    // The commit's answer was lost: the caller sends the same batch again.
    store.append_lines(id, 1, &batch).unwrap();
    // A retry that overlaps the committed lines and adds new ones.
    store
        .append_lines(id, 2, &[(Direction::Agent, "a"), (Direction::Agent, "b")])
        .unwrap();
    assert_eq!(
        logged(store.as_ref(), id),
        vec![
            (1, Direction::Client, "p".into()),
            (2, Direction::Agent, "a".into()),
            (3, Direction::Agent, "b".into()),
        ]
    );
}

/// The same with batches as large as a fast stream's group commits (PostgreSQL appends them with
/// COPY, which falls back to the checked insert when a `seq` is taken).
pub fn a_retried_large_batch_is_committed_once_and_a_different_line_refused(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    let texts: Vec<String> = (0..700).map(|n| format!("{{\"n\":{n}}}")).collect();
    let batch = |range: std::ops::Range<usize>| -> Vec<(Direction, &str)> {
        texts[range]
            .iter()
            .map(|t| (Direction::Agent, t.as_str()))
            .collect()
    };
    store.append_lines(id, 1, &batch(0..300)).unwrap();
    // Sent again whole, then overlapping the committed lines and adding new ones.
    store.append_lines(id, 1, &batch(0..300)).unwrap();
    store.append_lines(id, 201, &batch(200..600)).unwrap();
    // A batch whose taken `seq`s hold other lines fails whole.
    let error = store.append_lines(id, 500, &batch(0..400)).unwrap_err();
    assert!(matches!(error, StoreError::Write(_)), "{error:?}");
    store.append_lines(id, 601, &batch(600..700)).unwrap();
    let expected: Vec<(i64, Direction, String)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (i as i64 + 1, Direction::Agent, t.clone()))
        .collect();
    assert_eq!(logged(store.as_ref(), id), expected);
    // A large batch for a session that is not there fails too.
    let error = store.append_lines(4242, 1, &batch(0..300)).unwrap_err();
    assert!(matches!(error, StoreError::Write(_)), "{error:?}");
}

pub fn a_batch_for_a_missing_session_fails(backend: &Backend) {
    let store = backend.open();
    let error = store
        .append_lines(4242, 1, &[(Direction::Agent, "x")])
        .unwrap_err();
    assert!(matches!(error, StoreError::Write(_)), "{error:?}");
    assert_eq!(store.last_seq(4242).unwrap(), 0);
}

pub fn every_byte_of_a_line_is_kept(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    let big = format!("{{\"text\":\"{}\"}}", "y".repeat(1 << 20));
    let odd = [
        String::new(),
        "not json at all".into(),
        "caf\u{e9} \u{1F600} \u{202E}rtl".into(),
        "raw \0 nul and \u{7f} and \\u0000 escaped".into(),
        "'; DROP TABLE wire_log; --".into(),
        "  leading and trailing spaces  ".into(),
        big,
    ];
    let batch: Vec<(Direction, &str)> =
        odd.iter().map(|l| (Direction::Agent, l.as_str())).collect();
    store.append_lines(id, 1, &batch).unwrap();
    let store = backend.open();
    let got: Vec<String> = logged(store.as_ref(), id)
        .into_iter()
        .map(|(_, _, line)| line)
        .collect();
    assert_eq!(got, odd);
}

pub fn lines_after_reads_only_the_tail(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    let other = store.create_session("other", None).unwrap();
    let lines: Vec<String> = (1..=10).map(|i| format!("line {i}")).collect();
    let batch: Vec<(Direction, &str)> = lines
        .iter()
        .map(|l| (Direction::Agent, l.as_str()))
        .collect();
    store.append_lines(id, 1, &batch).unwrap();
    store
        .append_lines(other, 1, &[(Direction::Agent, "elsewhere")])
        .unwrap();
    let (tail, skipped) = store.lines_after(id, 7).unwrap();
    assert_eq!(skipped, 0);
    let got: Vec<(i64, &str)> = tail.iter().map(|l| (l.seq, l.line.as_str())).collect();
    assert_eq!(got, vec![(8, "line 8"), (9, "line 9"), (10, "line 10")]);
    assert!(store.lines_after(id, 10).unwrap().0.is_empty());
    assert_eq!(store.lines(other).unwrap().0.len(), 1);
}

pub fn unknown_directions_are_skipped_and_counted(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    store
        .append_lines(id, 1, &[(Direction::Agent, "known")])
        .unwrap();
    // A row a newer version wrote.
    backend.sql(&format!(
        "INSERT INTO wire_log(session_id, seq, direction, line, at) VALUES({id}, 2, 'future', 'x', 0)"
    ));
    store
        .append_lines(id, 3, &[(Direction::Agent, "after")])
        .unwrap();
    let (lines, skipped) = store.lines(id).unwrap();
    assert_eq!(skipped, 1);
    let got: Vec<(i64, &str)> = lines.iter().map(|l| (l.seq, l.line.as_str())).collect();
    assert_eq!(got, vec![(1, "known"), (3, "after")]);
}

pub fn the_transcript_is_replaced_whole_and_replies_after_the_turn_count_go(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    let other = store.create_session("other", None).unwrap();
    assert_eq!(store.transcript(id).unwrap(), None);
    assert!(store.replies(id).unwrap().is_empty());
    store
        .save_materialized(
            id,
            5,
            &ReplaySave::whole("{\"v\":1}"),
            &[
                reply(1, "a", true, Some("end_turn")),
                reply(2, "b", false, None),
            ],
            2,
        )
        .unwrap();
    store
        .save_materialized(
            other,
            1,
            &ReplaySave::whole("{\"other\":true}"),
            &[reply(1, "o", true, None)],
            1,
        )
        .unwrap();
    assert_eq!(
        store.replies(id).unwrap(),
        vec![
            reply(1, "a", true, Some("end_turn")),
            reply(2, "b", false, None)
        ]
    );
    store
        .save_materialized(
            id,
            9,
            &ReplaySave::whole("{\"v\":2}"),
            &[reply(1, "a", true, Some("cancelled"))],
            1,
        )
        .unwrap();
    assert_eq!(
        store.replies(id).unwrap(),
        vec![reply(1, "a", true, Some("cancelled"))]
    );
    assert_eq!(store.transcript(id).unwrap().as_deref(), Some("{\"v\":2}"));
    assert_eq!(
        backend.number(&format!(
            "SELECT upto_seq FROM transcripts WHERE session_id = {id}"
        )),
        9
    );
    // No turns: none of their replies stay.
    store
        .save_materialized(id, 10, &ReplaySave::whole("{}"), &[], 0)
        .unwrap();
    assert!(store.replies(id).unwrap().is_empty());
    assert_eq!(store.replies(other).unwrap().len(), 1);
}

pub fn display_texts_hold_no_nul(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("a\0b \u{1F600}", None).unwrap();
    store.set_agent_session_id(id, "s\0").unwrap();
    store
        .save_materialized(
            id,
            0,
            &ReplaySave::whole("{}"),
            &[reply(1, "x\0y", true, Some("end\0"))],
            1,
        )
        .unwrap();
    let session = &store.sessions().unwrap()[0];
    assert_eq!(session.title, "a\u{FFFD}b \u{1F600}");
    assert_eq!(session.agent_session_id.as_deref(), Some("s\u{FFFD}"));
    assert_eq!(
        store.replies(id).unwrap(),
        vec![reply(1, "x\u{FFFD}y", true, Some("end\u{FFFD}"))]
    );
}

pub fn sessions_are_listed_oldest_first_with_their_fields(backend: &Backend) {
    let store = backend.open();
    let a = store.create_session("", None).unwrap();
    let b = store.create_session("Agent session x", None).unwrap();
    let c = store.create_session("third", None).unwrap();
    assert!(a < b && b < c);
    store.set_title(a, "renamed").unwrap();
    let before = store.sessions().unwrap()[1].updated_at;
    std::thread::sleep(std::time::Duration::from_millis(5));
    store
        .append_lines(b, 1, &[(Direction::Agent, "x")])
        .unwrap();
    let sessions = store.sessions().unwrap();
    let titles: Vec<(i64, &str)> = sessions.iter().map(|s| (s.id, s.title.as_str())).collect();
    assert_eq!(
        titles,
        vec![(a, "renamed"), (b, "Agent session x"), (c, "third")]
    );
    assert!(sessions.iter().all(|s| s.agent_session_id.is_none()));
    assert!(
        sessions
            .iter()
            .all(|s| s.updated_at >= s.created_at && s.created_at > 0)
    );
    assert!(
        sessions[1].updated_at > before,
        "an append touches updated_at"
    );
}

pub fn generation_increases_at_every_start(backend: &Backend) {
    let first = backend.open().next_generation().unwrap();
    let second = backend.open().next_generation().unwrap();
    assert_eq!(second, first + 1);
    let store = backend.open();
    assert_eq!(store.next_generation().unwrap(), first + 2);
}

pub fn a_fresh_database_is_at_the_latest_version_and_reopening_applies_nothing(backend: &Backend) {
    assert_eq!(backend.open().schema_version().unwrap(), LATEST);
    let store = backend.open();
    assert_eq!(store.schema_version().unwrap(), LATEST);
    assert_eq!(
        backend.number("SELECT COUNT(*) FROM schema_version"),
        LATEST
    );
    // Version 2's table exists.
    let id = store.create_session("s", None).unwrap();
    backend.sql(&format!(
        "INSERT INTO session_leases(session_id, owner, expires_at) VALUES({id}, 'a', 1)"
    ));
    assert_eq!(backend.number("SELECT COUNT(*) FROM session_leases"), 1);
}

pub fn a_version_1_database_is_migrated_forward_with_its_rows(backend: &Backend) {
    let first = if backend.is_postgres() {
        migrations::POSTGRES[0]
    } else {
        migrations::SQLITE[0]
    };
    backend.sql(first.sql);
    backend.sql(
        "CREATE TABLE schema_version(version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL);
         INSERT INTO schema_version(version, applied_at) VALUES(1, 0);
         INSERT INTO sessions(id, title, created_at, updated_at) VALUES(7, 'kept', 1, 1);
         INSERT INTO wire_log(session_id, seq, direction, line, at) VALUES(7, 1, 'agent', 'old', 1);",
    );
    let store = backend.open();
    assert_eq!(store.schema_version().unwrap(), LATEST);
    assert_eq!(store.sessions().unwrap()[0].title, "kept");
    // A title from before version 7 counts as a prompt's: the agent's title may replace it.
    assert_eq!(
        store.sessions().unwrap()[0].title_source,
        spindle_store::TitleSource::Prompt
    );
    assert_eq!(
        logged(store.as_ref(), 7),
        vec![(1, Direction::Agent, "old".into())]
    );
    backend.sql("INSERT INTO session_leases(session_id, owner, expires_at) VALUES(7, 'r', 1)");
}

pub fn a_database_newer_than_this_build_is_refused(backend: &Backend) {
    drop(backend.open());
    backend.sql(&format!(
        "INSERT INTO schema_version(version, applied_at) VALUES({}, 0)",
        LATEST + 1
    ));
    let error = spindle_store::open(backend.location()).unwrap_err();
    assert!(matches!(error, StoreError::Open(_)), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("newer than this spindle"), "{text}");
    assert!(text.contains(&format!("version {}", LATEST + 1)), "{text}");
}

pub fn many_sessions_written_from_many_threads_at_once(backend: &Backend) {
    let store = backend.open();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let id = store.create_session(&format!("thread {t}"), None).unwrap();
                for batch in 0..25 {
                    let lines: Vec<String> = (0..3)
                        .map(|i| format!("{{\"t\":{t},\"b\":{batch},\"i\":{i}}}"))
                        .collect();
                    let refs: Vec<(Direction, &str)> = lines
                        .iter()
                        .map(|l| (Direction::Agent, l.as_str()))
                        .collect();
                    store.append_lines(id, 1 + batch * 3, &refs).unwrap();
                }
                (t, id)
            })
        })
        .collect();
    for handle in threads {
        let (t, id) = handle.join().unwrap();
        let got = logged(store.as_ref(), id);
        assert_eq!(got.len(), 75);
        for (index, (seq, _, line)) in got.iter().enumerate() {
            let index = i64::try_from(index).unwrap();
            assert_eq!(*seq, index + 1);
            assert_eq!(
                *line,
                format!("{{\"t\":{t},\"b\":{},\"i\":{}}}", index / 3, index % 3)
            );
        }
    }
    assert_eq!(store.sessions().unwrap().len(), 8);
}

pub fn the_store_is_usable_and_droppable_inside_a_tokio_runtime(backend: &Backend) {
    // The web server calls the store from its session tasks and may drop it there.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = backend.open();
        let id = store.create_session("async", None).unwrap();
        store
            .append_lines(id, 1, &[(Direction::Agent, "x")])
            .unwrap();
        let task = tokio::spawn(async move {
            let n = store.last_seq(id).unwrap();
            drop(store);
            n
        });
        assert_eq!(task.await.unwrap(), 1);
    });
}

pub fn a_session_keeps_the_agent_it_runs_and_a_version_5_one_has_none(backend: &Backend) {
    crate::replies::create_at_version(backend, 5);
    backend.sql("INSERT INTO sessions(id, title, created_at, updated_at) VALUES(7, 'old', 1, 1)");
    let store = backend.open();
    assert_eq!(store.schema_version().unwrap(), LATEST);
    let gemini = SessionAgent {
        id: "gemini".into(),
        version: "0.20.0".into(),
    };
    let id = store.create_session("new", Some(&gemini)).unwrap();
    let plain = store.create_session("plain", None).unwrap();
    let agents = |store: &dyn Store| -> Vec<(i64, Option<SessionAgent>)> {
        store
            .sessions()
            .unwrap()
            .into_iter()
            .map(|s| (s.id, s.agent))
            .collect()
    };
    // PostgreSQL's identity does not skip the id 7 inserted by hand: compare by id.
    let mut expected = vec![(7, None), (id, Some(gemini.clone())), (plain, None)];
    expected.sort_by_key(|(id, _)| *id);
    assert_eq!(agents(store.as_ref()), expected);
    let updated = SessionAgent {
        id: "gemini".into(),
        version: "0.21.0".into(),
    };
    store.set_session_agent(id, &updated).unwrap();
    drop(store);
    let store = backend.open();
    assert_eq!(store.session(id).unwrap().unwrap().agent, Some(updated));
    assert_eq!(store.session(7).unwrap().unwrap().title, "old");
}

/// Several writers (stores opened apart, as replicas would) append at the same `seq`s at once.
/// The same lines, whole or overlapping, are committed once and every writer succeeds; of
/// different lines at one `seq` one writer wins and the others fail whole. Every round ends with
/// the log gap-free, each line once.
pub fn racing_appends_of_one_batch_commit_it_once_and_a_different_one_fails(backend: &Backend) {
    let stores: Vec<Arc<dyn Store>> = (0..4).map(|_| backend.open()).collect();
    let texts: Vec<String> = (0..400).map(|n| format!("{{\"n\":{n}}}")).collect();
    for round in 0..9usize {
        let id = stores[0].create_session("raced", None).unwrap();
        let kind = round % 3;
        let results: Vec<Result<(), StoreError>> = std::thread::scope(|scope| {
            let writers: Vec<_> = stores
                .iter()
                .enumerate()
                .map(|(writer, store)| {
                    let texts = &texts;
                    scope.spawn(move || {
                        // 0: all the same batch; 1: even writers lines 1..=300, odd ones
                        // 101..=400, the same text at the same seq; 2: each writer its own text.
                        let range = match (kind, writer % 2) {
                            (1, 1) => 100..400,
                            _ => 0..300,
                        };
                        let owned: Vec<String> = texts[range.clone()]
                            .iter()
                            .map(|t| {
                                if kind == 2 {
                                    format!("{writer}{t}")
                                } else {
                                    t.clone()
                                }
                            })
                            .collect();
                        let batch: Vec<(Direction, &str)> = owned
                            .iter()
                            .map(|t| (Direction::Agent, t.as_str()))
                            .collect();
                        store.append_lines(id, range.start as i64 + 1, &batch)
                    })
                })
                .collect();
            writers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let (lines, skipped) = stores[0].lines(id).unwrap();
        assert_eq!(skipped, 0);
        let seqs: Vec<i64> = lines.iter().map(|l| l.seq).collect();
        let winners = results.iter().filter(|r| r.is_ok()).count();
        match kind {
            0 | 1 => {
                assert_eq!(winners, stores.len(), "round {round}: {results:?}");
                let expected = if kind == 0 { 300 } else { 400 };
                let got: Vec<&str> = lines.iter().map(|l| l.line.as_str()).collect();
                let want: Vec<&str> = texts[..expected].iter().map(String::as_str).collect();
                assert_eq!(got, want, "round {round}");
            }
            _ => {
                assert_eq!(winners, 1, "round {round}: {results:?}");
                assert_eq!(seqs, (1..=300).collect::<Vec<_>>(), "round {round}");
                let first = &lines[0].line;
                assert!(lines.iter().all(|l| l.line.starts_with(&first[..1])));
            }
        }
    }
}
