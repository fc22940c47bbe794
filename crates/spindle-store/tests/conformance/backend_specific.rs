//! What only one of the stores can show.

use std::sync::Arc;
use std::time::Duration;

use spindle_store::migrations::LATEST;
use spindle_store::{Direction, Location, ReplaySave, Store, StoreError};

use crate::{Backend, pg_server};

#[test]
fn sqlite_a_directory_that_does_not_exist_is_a_clear_open_error() {
    let location = Location::parse("/nonexistent-spindle-dir/x/y.db");
    let error = spindle_store::open(&location).unwrap_err();
    assert!(matches!(error, StoreError::Open(_)), "{error:?}");
    assert!(
        error.to_string().contains("/nonexistent-spindle-dir"),
        "{error}"
    );
}

#[test]
fn sqlite_describes_itself_by_its_path() {
    let backend = Backend::sqlite("describe");
    let text = backend.open().describe();
    assert!(text.starts_with("SQLite file /"), "{text}");
}

fn postgres(label: &str) -> Option<Backend> {
    Backend::postgres(label)
}

#[test]
fn postgres_a_lost_connection_fails_at_most_one_call_and_nothing_is_doubled() {
    let Some(backend) = postgres("lost") else {
        return;
    };
    let (server, database) = backend.postgres_target().unwrap();
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    store
        .append_lines(id, 1, &[(Direction::Agent, "before")])
        .unwrap();
    // Every connection of the pool dies (a database restart, a network cut).
    let killed = server
        .psql(
            "postgres",
            &format!(
                "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE datname = '{database}' AND pid <> pg_backend_pid()"
            ),
        )
        .unwrap();
    assert_ne!(killed, "0", "the store keeps a pooled connection");
    let batch = [(Direction::Agent, "during"), (Direction::Agent, "after")];
    retry_until_committed(store.as_ref(), id, 2, &batch);
    // Retrying the same batch (as the web server's backlog does) never doubles it.
    store.append_lines(id, 2, &batch).unwrap();
    let (lines, _) = store.lines(id).unwrap();
    let got: Vec<&str> = lines.iter().map(|l| l.line.as_str()).collect();
    assert_eq!(got, vec!["before", "during", "after"]);
}

/// Sends `batch` until it is committed, as the web server's backlog does (bounded).
fn retry_until_committed(store: &dyn Store, id: i64, first: i64, batch: &[(Direction, &str)]) {
    for _ in 0..100 {
        match store.append_lines(id, first, batch) {
            Ok(()) => return,
            Err(error) => assert!(matches!(error, StoreError::Write(_)), "{error:?}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the store never reconnected");
}

#[test]
fn postgres_a_partition_fails_calls_at_once_and_the_batch_lands_once_when_it_heals() {
    let Some(server) = pg_server::server() else {
        return;
    };
    let database = server.create_database("partition");
    let relay = pg_server::Relay::start(server.port());
    let url = format!("postgres://postgres@127.0.0.1:{}/{database}", relay.port);
    let store = spindle_store::open(&Location::parse(&url)).unwrap();
    let id = store.create_session("s", None).unwrap();
    store
        .append_lines(id, 1, &[(Direction::Agent, "before")])
        .unwrap();
    relay.cut();
    let batch = [(Direction::Agent, "during")];
    let first = store.append_lines(id, 2, &batch).unwrap_err();
    assert!(matches!(first, StoreError::Write(_)), "{first:?}");
    // The next calls do not wait for the network again: they say it is unreachable.
    let second = store.append_lines(id, 2, &batch).unwrap_err();
    assert!(
        second.to_string().contains("PostgreSQL unreachable"),
        "{second}"
    );
    assert!(matches!(store.last_seq(id), Err(StoreError::Read(_))));
    relay.heal();
    retry_until_committed(store.as_ref(), id, 2, &batch);
    store
        .append_lines(id, 3, &[(Direction::Agent, "after")])
        .unwrap();
    let (lines, _) = store.lines(id).unwrap();
    let got: Vec<&str> = lines.iter().map(|l| l.line.as_str()).collect();
    assert_eq!(got, vec!["before", "during", "after"]);
}

#[test]
fn postgres_an_unreachable_server_is_a_clear_open_error_without_the_password() {
    if pg_server::server().is_none() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://alice:s3cret@127.0.0.1:{port}/spindle?connect_timeout=2");
    let error = spindle_store::open(&Location::parse(&url)).unwrap_err();
    assert!(matches!(error, StoreError::Open(_)), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{port}/spindle")),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
    let text = spindle_store::open(&Location::parse("postgres://h:notaport/db"))
        .unwrap_err()
        .to_string();
    assert!(text.contains("not a usable PostgreSQL URL"), "{text}");
}

#[test]
fn postgres_a_missing_database_is_a_clear_open_error() {
    let Some(server) = pg_server::server() else {
        return;
    };
    let error =
        spindle_store::open(&Location::Postgres(server.url("no_such_database"))).unwrap_err();
    assert!(matches!(error, StoreError::Open(_)), "{error:?}");
    assert!(error.to_string().contains("no_such_database"), "{error}");
    assert!(error.to_string().contains("does not exist"), "{error}");
}

#[test]
fn postgres_a_unix_socket_url_works_and_describe_names_the_socket() {
    let Some(server) = pg_server::server() else {
        return;
    };
    let database = server.create_database("socket");
    let url = format!(
        "postgresql:///{database}?host={}&port={}&user=postgres",
        server.socket_dir().display(),
        server.port()
    );
    let store = spindle_store::open(&Location::parse(&url)).unwrap();
    let id = store.create_session("over a socket", None).unwrap();
    store
        .append_lines(id, 1, &[(Direction::Agent, "x")])
        .unwrap();
    assert_eq!(store.last_seq(id).unwrap(), 1);
    let text = store.describe();
    assert!(
        text.starts_with("PostgreSQL at postgres://postgres@/"),
        "{text}"
    );
    assert!(text.contains(&format!("/{database}")), "{text}");
}

#[test]
fn postgres_servers_starting_together_migrate_once() {
    let Some(backend) = postgres("together") else {
        return;
    };
    let backend = Arc::new(backend);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let backend = Arc::clone(&backend);
            std::thread::spawn(move || backend.open().schema_version().unwrap())
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().unwrap(), LATEST);
    }
    assert_eq!(
        backend.number("SELECT COUNT(*) FROM schema_version"),
        LATEST
    );
}

#[test]
fn sqlite_no_table_is_without_rowid_after_migrating_from_version_4_or_fresh() {
    let migrated = Backend::sqlite("rowid-migrated");
    crate::replies::create_at_version(&migrated, 4);
    let fresh = Backend::sqlite("rowid-fresh");
    for backend in [migrated, fresh] {
        drop(backend.open());
        let Location::Sqlite(path) = backend.location() else {
            unreachable!()
        };
        let connection = rusqlite::Connection::open(path).unwrap();
        let mut statement = connection
            .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
            .unwrap();
        let tables: Vec<(String, String)> = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(tables.iter().any(|(name, _)| name == "replies"));
        for (name, sql) in &tables {
            assert!(
                !sql.to_uppercase().contains("WITHOUT ROWID"),
                "{name}: {sql}"
            );
        }
        // The uniqueness the upserts and reads rely on is an index of the two integers.
        for (table, columns) in [
            ("replies", "session_id,turn"),
            ("wire_log", "session_id,seq"),
            ("wire_batches", "session_id,first_seq"),
        ] {
            let unique: i64 = connection
                .query_row(
                    &format!(
                        "SELECT COUNT(*) FROM pragma_index_list('{table}') AS l
                         WHERE l.\"unique\" = 1 AND (SELECT group_concat(name, ',')
                             FROM pragma_index_info(l.name)) = '{columns}'"
                    ),
                    [],
                    |row| row.get(0),
                )
                .unwrap();
            assert_eq!(unique, 1, "{table}");
        }
    }
}

/// The order of a delete against an append in flight, made deterministic: a transaction holds
/// an append's update of the session's row and its batch (what `append_lines` does before its
/// COMMIT) while the session is deleted. The wire log has no foreign key (migration 8): the
/// delete must wait for that transaction and then take its rows too.
#[test]
fn postgres_a_delete_waits_for_an_append_in_flight_and_takes_its_lines() {
    use std::io::{BufRead, Write};
    let Some(backend) = postgres("delete_in_flight") else {
        return;
    };
    let (server, database) = backend.postgres_target().unwrap();
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    let mut append = server
        .psql_command(database)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = append.stdin.take().unwrap();
    let mut output = std::io::BufReader::new(append.stdout.take().unwrap());
    writeln!(
        input,
        "BEGIN;\n\
         UPDATE sessions SET updated_at = 2 WHERE id = {id};\n\
         INSERT INTO wire_batches(session_id, first_seq, last_seq, at, directions, lengths, lines)\n\
             VALUES ({id}, 1, 1, 2, 'a', '{{1}}', 'x'::bytea);\n\
         SELECT 'in flight';"
    )
    .unwrap();
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "in flight");
    let deleting = std::thread::spawn({
        let store = Arc::clone(&store);
        move || store.delete_session(id)
    });
    // Long enough for the delete to reach the session's row and wait there.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !deleting.is_finished(),
        "the delete waits for the append's transaction"
    );
    writeln!(input, "COMMIT;").unwrap();
    drop(input);
    assert!(append.wait().unwrap().success());
    assert!(deleting.join().unwrap().unwrap());
    assert_eq!(
        backend.number(&format!(
            "SELECT COUNT(*) FROM wire_batches WHERE session_id = {id}"
        )),
        0,
        "the append's line outlived its session"
    );
}

/// PostgreSQL keeps an appended batch as one row of `wire_batches` (migration 9), none in
/// `wire_log`, with its lines, lengths and directions compressed by lz4 (this server has it; pglz
/// costs several times the CPU; migrations 9 and 10), and so are a saved transcript and reply.
#[test]
fn postgres_a_batch_is_one_row_with_its_lines_compressed_by_lz4() {
    let Some(backend) = postgres("one_row_per_batch") else {
        return;
    };
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    // A fast stream's batch: thousands of lines, so `lengths` (12 kB) and `directions` (3 kB)
    // are compressed too (with pglz, the default, they were half of PostgreSQL's CPU).
    let texts: Vec<String> = (0..3000)
        .map(|n| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"n\":{n}}}"))
        .collect();
    let batch: Vec<(Direction, &str)> = texts
        .iter()
        .map(|t| (Direction::Agent, t.as_str()))
        .collect();
    store.append_lines(id, 1, &batch).unwrap();
    store.append_lines(id, 3001, &batch[..1]).unwrap();
    let count = |sql: &str| backend.number(&sql.replace("{id}", &id.to_string()));
    assert_eq!(
        count("SELECT COUNT(*) FROM wire_batches WHERE session_id = {id}"),
        2
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM wire_log WHERE session_id = {id}"),
        0
    );
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM wire_batches
             WHERE session_id = {id} AND first_seq = 1 AND pg_column_compression(lines) = 'lz4'
               AND pg_column_compression(lengths) = 'lz4'
               AND pg_column_compression(directions) = 'lz4'"
        ),
        1
    );
    assert_eq!(store.lines(id).unwrap().0.len(), 3001);
    // A turn's end saves the transcript and the reply, tens of megabytes after a long turn.
    let long = "a reply of a long turn, ".repeat(400);
    store
        .save_materialized(
            id,
            3001,
            &ReplaySave::whole(format!("{{\"text\":\"{long}\"}}")),
            &[crate::cases::reply(1, &long, true, None)],
            1,
        )
        .unwrap();
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM transcripts t JOIN replies r USING (session_id)
             WHERE session_id = {id} AND pg_column_compression(t.replay_json) = 'lz4'
               AND pg_column_compression(r.text) = 'lz4'"
        ),
        1
    );
}
