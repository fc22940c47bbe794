//! Renaming and deleting sessions (issue #25): a delete takes every row of the session with it and
//! leaves the other sessions whole; other servers hear of both.

use std::time::Duration;

use spindle_store::{Direction, LogChange, ReplaySave, SessionSetup, StoredReply, TitleSource};

use crate::Backend;

pub fn a_renamed_session_keeps_its_title_and_an_unknown_one_is_reported(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("first words", None).unwrap();
    assert!(store.set_title(id, "Refactor the parser").unwrap());
    assert_eq!(
        store.session(id).unwrap().unwrap().title,
        "Refactor the parser"
    );
    assert!(!store.set_title(id + 100, "nobody").unwrap());
    let reopened = backend.open();
    assert_eq!(
        reopened.session(id).unwrap().unwrap().title,
        "Refactor the parser"
    );
}

pub fn a_deleted_session_leaves_no_row_and_the_others_stay_whole(backend: &Backend) {
    let store = backend.open();
    let doomed = store.create_session("doomed", None).unwrap();
    let kept = store.create_session("kept", None).unwrap();
    for session in [doomed, kept] {
        store
            .append_lines(
                session,
                1,
                &[
                    (Direction::Client, "{\"a\":1}"),
                    (Direction::Agent, "{\"b\":2}"),
                ],
            )
            .unwrap();
        let reply = StoredReply {
            turn: 1,
            text: "hello".into(),
            finished: true,
            stop_reason: Some("end_turn".into()),
        };
        store
            .save_materialized(session, 2, &ReplaySave::whole("{}"), &[reply], 1)
            .unwrap();
        store
            .claim_lease(session, "replica-a", Duration::from_secs(60))
            .unwrap();
        store
            .submit_command(&format!("command-{session}"), session, "{}")
            .unwrap();
    }
    assert!(store.delete_session(doomed).unwrap());
    assert!(!store.delete_session(doomed).unwrap(), "deleted once");
    let ids: Vec<i64> = store.sessions().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(ids, vec![kept]);
    assert!(store.session(doomed).unwrap().is_none());
    for table in [
        "wire_batches",
        "transcripts",
        "replies",
        "session_leases",
        "commands",
    ] {
        let count = |session: i64| {
            backend.number(&format!(
                "SELECT COUNT(*) FROM {table} WHERE session_id = {session}"
            ))
        };
        assert_eq!(count(doomed), 0, "{table} rows of the deleted session");
        assert!(count(kept) > 0, "{table} rows of the kept session");
    }
    // The log of a deleted session takes no more lines.
    assert!(
        store
            .append_lines(doomed, 3, &[(Direction::Agent, "{\"late\":1}")])
            .is_err()
    );
    assert_eq!(store.lines(kept).unwrap().0.len(), 2);
    // Ids only grow: a new session never takes a deleted one's id, the newest one's included.
    assert!(store.delete_session(kept).unwrap());
    let next = store.create_session("next", None).unwrap();
    assert!(next > kept, "{next} after {kept}");
    assert!(backend.open().create_session("after reopen", None).unwrap() > next);
}

pub fn other_servers_hear_of_renamed_and_deleted_sessions(backend: &Backend) {
    let writer = backend.open();
    let listener = backend.open();
    let Some(mut changes) = listener.changes() else {
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
    // The agent's title is announced like a rename.
    assert!(
        writer
            .set_derived_title(session, "agent's", spindle_store::TitleSource::Agent)
            .unwrap()
    );
    assert_eq!(next(), LogChange::renamed(session));
    assert!(writer.set_title(session, "new name").unwrap());
    let renamed = next();
    assert_eq!(renamed, LogChange::renamed(session));
    assert!(renamed.is_rename() && !renamed.is_command() && !renamed.is_delete());
    // Renaming a session nobody has announces nothing: the next notice is the delete.
    assert!(!writer.set_title(session + 100, "x").unwrap());
    assert!(writer.delete_session(session).unwrap());
    let deleted = next();
    assert_eq!(deleted, LogChange::deleted(session));
    assert!(deleted.is_delete() && !deleted.is_rename());
}

pub fn a_session_keeps_its_setup_and_a_version_6_one_has_the_defaults(backend: &Backend) {
    let store = backend.open();
    let old = store.create_session("", None).unwrap();
    assert_eq!(
        store.session(old).unwrap().unwrap().setup,
        SessionSetup::default()
    );
    let setup = SessionSetup {
        mcp_servers: Some(vec!["files".into(), "wiki \"docs\"".into()]),
        additional_directories: vec!["/srv/shared".into(), "/home/u/notes".into()],
        parent: Some(old),
    };
    let forked = store.create_session_with("", None, &setup).unwrap();
    let none = SessionSetup {
        mcp_servers: Some(Vec::new()),
        ..SessionSetup::default()
    };
    let bare = store.create_session_with("", None, &none).unwrap();
    let reopened = backend.open();
    assert_eq!(reopened.session(forked).unwrap().unwrap().setup, setup);
    // `[]` (no server) is not `None` (every configured server).
    assert_eq!(reopened.session(bare).unwrap().unwrap().setup, none);
    // A parent may go before its forks.
    assert!(reopened.delete_session(old).unwrap());
    assert_eq!(
        reopened.session(forked).unwrap().unwrap().setup.parent,
        Some(old)
    );
}

pub fn a_users_rename_wins_over_the_agents_title_and_a_prompt_names_only_an_untitled_one(
    backend: &Backend,
) {
    let store = backend.open();
    let title = |id: i64| {
        let s = store.session(id).unwrap().unwrap();
        (s.title, s.title_source)
    };
    let id = store.create_session("", None).unwrap();
    assert_eq!(title(id), (String::new(), TitleSource::Unset));
    assert!(
        store
            .set_derived_title(id, "first words", TitleSource::Prompt)
            .unwrap()
    );
    // A second prompt's title (after a restart) does not replace the first.
    assert!(
        !store
            .set_derived_title(id, "later", TitleSource::Prompt)
            .unwrap()
    );
    assert_eq!(title(id), ("first words".into(), TitleSource::Prompt));
    assert!(
        store
            .set_derived_title(id, "Agent says", TitleSource::Agent)
            .unwrap()
    );
    assert!(
        store
            .set_derived_title(id, "Agent's latest", TitleSource::Agent)
            .unwrap()
    );
    assert!(
        !store
            .set_derived_title(id, "again", TitleSource::Prompt)
            .unwrap()
    );
    assert_eq!(title(id), ("Agent's latest".into(), TitleSource::Agent));
    assert!(store.set_title(id, "Mine").unwrap());
    assert!(
        !store
            .set_derived_title(id, "Agent again", TitleSource::Agent)
            .unwrap()
    );
    assert_eq!(title(id), ("Mine".into(), TitleSource::User));
    assert!(
        !store
            .set_derived_title(id + 100, "nobody", TitleSource::Agent)
            .unwrap()
    );
    assert_eq!(backend.open().session(id).unwrap().unwrap().title, "Mine");
}

/// A delete that meets appends in flight (another server still streaming the session) leaves
/// none of their lines behind: each append either committed first, and the delete takes its
/// lines, or finds the session gone and commits nothing. Small batches take the insert, large
/// ones PostgreSQL's COPY.
pub fn appends_racing_a_delete_leave_no_line_of_the_session(backend: &Backend) {
    let deleter = backend.open();
    for round in 0..8usize {
        let session = deleter.create_session("raced", None).unwrap();
        let appender = backend.open();
        let writing = std::thread::spawn(move || {
            let mut seq = 1i64;
            let mut committed = 0usize;
            for i in 0.. {
                let size = if i % 2 == 0 { 3 } else { 300 };
                let text = format!("{{\"round\":{round},\"i\":{i}}}");
                let batch: Vec<(Direction, &str)> = (0..size)
                    .map(|_| (Direction::Agent, text.as_str()))
                    .collect();
                match appender.append_lines(session, seq, &batch) {
                    Ok(()) => {
                        seq += size as i64;
                        committed += 1;
                    }
                    Err(_) => return committed,
                }
            }
            unreachable!()
        });
        std::thread::sleep(Duration::from_millis(5 + 7 * round as u64));
        assert!(deleter.delete_session(session).unwrap());
        let committed = writing.join().unwrap();
        assert_eq!(
            backend.number(&format!(
                "SELECT COUNT(*) FROM wire_batches WHERE session_id = {session}"
            )),
            0,
            "round {round}: lines left after the delete ({committed} batches committed before it)"
        );
    }
}
