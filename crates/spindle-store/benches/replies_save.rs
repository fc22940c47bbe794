//! The cost of one turn's save of replies (`Store::save_materialized`) next to sessions that
//! hold 2.4 MB replies, before and after migration 5 (replies as a rowid table) and the save of
//! changed turns only.
//!
//! `cargo bench -p spindle-store --bench replies_save`. Six sessions get one 2,435,323-byte
//! reply each (a `/stream 100000 mixed` turn); a seventh then saves 30 turns, each save holding
//! all its replies so far, as the web server's session does after every turn. Three ways:
//! version 4's `WITHOUT ROWID` table with the old delete-all + insert (by hand, the statements
//! the store ran then), version 5's table with the same delete-all, and the store as it is.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use spindle_store::migrations::SQLITE;
use spindle_store::{ReplaySave, SqliteStore, Store, StoredReply};

const BIG: usize = 2_435_323;
const TURNS: i64 = 30;

fn temp_db(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "spindle-bench-replies-{}-{label}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("store.db")
}

fn replies(upto: i64) -> Vec<StoredReply> {
    (1..=upto)
        .map(|turn| StoredReply {
            turn,
            text: format!("short reply {turn}"),
            finished: true,
            stop_reason: Some("end_turn".into()),
        })
        .collect()
}

/// The six big sessions, then the small session's saves by `save`; the sorted save times.
fn measure(store: &SqliteStore, mut save: impl FnMut(i64, &[StoredReply])) -> Vec<Duration> {
    let big = StoredReply {
        turn: 1,
        text: "x".repeat(BIG),
        finished: true,
        stop_reason: Some("end_turn".into()),
    };
    for _ in 0..6 {
        let id = store.create_session("throughput", None).unwrap();
        save(id, std::slice::from_ref(&big));
    }
    let id = store.create_session("later", None).unwrap();
    let mut samples: Vec<Duration> = (1..=TURNS)
        .map(|turn| {
            let all = replies(turn);
            let started = Instant::now();
            save(id, &all);
            started.elapsed()
        })
        .collect();
    samples.sort();
    samples
}

/// The save as the store ran it up to migration 4: delete every reply, insert them all.
fn delete_all_and_insert(c: &mut Connection, session: i64, all: &[StoredReply]) {
    let tx = c.transaction().unwrap();
    tx.execute(
        "DELETE FROM replies WHERE session_id = ?1",
        params![session],
    )
    .unwrap();
    for r in all {
        tx.execute(
            "INSERT INTO replies(session_id, turn, text, finished, stop_reason)
             VALUES(?1, ?2, ?3, ?4, ?5)",
            params![session, r.turn, r.text, r.finished, r.stop_reason],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

fn connection(path: &PathBuf) -> Connection {
    let c = Connection::open(path).unwrap();
    c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
        .unwrap();
    c
}

fn report(label: &str, samples: &[Duration]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "| {label} | {:.2} ms | {:.2} ms |",
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1])
    );
}

fn main() {
    println!("| replies table, save | p50 save | max save |\n|---|---:|---:|");
    // Version 4: the schema as it was, written by a connection of its own (opening the store
    // would migrate it).
    let path = temp_db("v4");
    let mut c = connection(&path);
    for m in &SQLITE[..4] {
        c.execute_batch(m.sql).unwrap();
    }
    let big = vec![StoredReply {
        turn: 1,
        text: "x".repeat(BIG),
        finished: true,
        stop_reason: Some("end_turn".into()),
    }];
    for id in 1..=7 {
        c.execute(
            "INSERT INTO sessions(id, title, created_at, updated_at) VALUES(?1, '', 0, 0)",
            params![id],
        )
        .unwrap();
    }
    for id in 1..=6 {
        delete_all_and_insert(&mut c, id, &big);
    }
    let mut samples: Vec<Duration> = (1..=TURNS)
        .map(|turn| {
            let all = replies(turn);
            let started = Instant::now();
            delete_all_and_insert(&mut c, 7, &all);
            started.elapsed()
        })
        .collect();
    samples.sort();
    report("v4 `WITHOUT ROWID`, delete all + insert all", &samples);

    let path = temp_db("v5-delete-all");
    let store = SqliteStore::open(&path).unwrap();
    let mut c = connection(&path);
    let samples = measure(&store, |id, all| delete_all_and_insert(&mut c, id, all));
    report("v5 rowid + UNIQUE, delete all + insert all", &samples);

    let path = temp_db("v5");
    let store = SqliteStore::open(&path).unwrap();
    let samples = measure(&store, |id, all| {
        store
            .save_materialized(id, 0, &ReplaySave::whole("{}"), all, all.len() as i64)
            .unwrap()
    });
    report(
        "v5 rowid + UNIQUE, `save_materialized` (changed turns only)",
        &samples,
    );
}
