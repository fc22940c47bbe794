//! The conformance suite: every case in `cases.rs` runs against both stores, SQLite in a fresh
//! temporary file and PostgreSQL in a fresh database of the server `pg_server.rs` starts for this
//! test binary. `backend_specific.rs` holds what only one store can show (a lost connection, a
//! missing directory).

mod backend_specific;
mod cases;
mod commands;
mod leases;
mod rename_delete;
mod replies;
mod transcripts;
mod wire_pages;
// The crate's `test-server` module, compiled in here (a package cannot turn on its own feature
// for its tests).
#[allow(dead_code)]
#[path = "../../src/test_server.rs"]
mod pg_server;

use std::path::PathBuf;
use std::sync::Arc;

use spindle_store::{Location, Store};

/// One store under test: where it lives and how to reach it beside the store (raw SQL).
#[derive(Debug)]
pub struct Backend {
    location: Location,
    target: Target,
}

#[derive(Debug)]
enum Target {
    Sqlite(PathBuf),
    Postgres {
        server: &'static pg_server::PgServer,
        database: String,
    },
}

impl Backend {
    /// A fresh SQLite file.
    pub fn sqlite(label: &str) -> Backend {
        let dir = std::env::temp_dir().join(format!(
            "spindle-store-conformance-{}-{label}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("store.db");
        Backend {
            location: Location::Sqlite(path.clone()),
            target: Target::Sqlite(path),
        }
    }

    /// A fresh PostgreSQL database (`None`: PostgreSQL is missing and this is not CI).
    pub fn postgres(label: &str) -> Option<Backend> {
        let server = pg_server::server()?;
        let database = server.create_database(label);
        Some(Backend {
            location: Location::Postgres(server.url(&database)),
            target: Target::Postgres { server, database },
        })
    }

    /// Opens the store (again: a reopen is a restart of the server).
    pub fn open(&self) -> Arc<dyn Store> {
        spindle_store::open(&self.location).unwrap_or_else(|e| panic!("open: {e}"))
    }

    /// The location.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Whether this is the PostgreSQL store.
    pub fn is_postgres(&self) -> bool {
        matches!(self.target, Target::Postgres { .. })
    }

    /// `text` as an SQL literal of a `wire_log.line` (PostgreSQL keeps lines as `bytea`).
    pub fn line_literal(&self, text: &str) -> String {
        if self.is_postgres() {
            format!("'{text}'::bytea")
        } else {
            format!("'{text}'")
        }
    }

    /// Runs statements beside the store (both dialects accept what the cases send).
    pub fn sql(&self, sql: &str) {
        match &self.target {
            Target::Sqlite(path) => rusqlite::Connection::open(path)
                .and_then(|c| c.execute_batch(sql))
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
            Target::Postgres { server, database } => {
                server
                    .psql(database, sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        }
    }

    /// One number a query returns.
    pub fn number(&self, sql: &str) -> i64 {
        match &self.target {
            Target::Sqlite(path) => rusqlite::Connection::open(path)
                .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
            Target::Postgres { server, database } => server
                .psql(database, sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
                .parse()
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
        }
    }

    /// The PostgreSQL server and database, for the PostgreSQL-only cases.
    pub fn postgres_target(&self) -> Option<(&'static pg_server::PgServer, &str)> {
        match &self.target {
            Target::Postgres { server, database } => Some((server, database)),
            Target::Sqlite(_) => None,
        }
    }
}

/// Each case, once per store.
macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                #[test]
                fn sqlite() {
                    crate::cases::$case(&crate::Backend::sqlite(stringify!($case)));
                }

                #[test]
                fn postgres() {
                    if let Some(backend) = crate::Backend::postgres(stringify!($case)) {
                        crate::cases::$case(&backend);
                    }
                }
            }
        )*
    };
}

conformance!(
    log_round_trips_in_order_across_reopen,
    a_conflicting_batch_commits_nothing,
    a_retried_batch_is_committed_once,
    a_retried_large_batch_is_committed_once_and_a_different_line_refused,
    a_batch_for_a_missing_session_fails,
    every_byte_of_a_line_is_kept,
    lines_after_reads_only_the_tail,
    unknown_directions_are_skipped_and_counted,
    the_transcript_is_replaced_whole_and_replies_after_the_turn_count_go,
    display_texts_hold_no_nul,
    sessions_are_listed_oldest_first_with_their_fields,
    generation_increases_at_every_start,
    a_fresh_database_is_at_the_latest_version_and_reopening_applies_nothing,
    a_version_1_database_is_migrated_forward_with_its_rows,
    a_database_newer_than_this_build_is_refused,
    many_sessions_written_from_many_threads_at_once,
    the_store_is_usable_and_droppable_inside_a_tokio_runtime,
    a_lease_is_held_by_one_owner_until_released,
    an_expired_lease_is_taken_and_its_old_owner_cannot_renew_it,
    concurrent_claims_of_an_expired_lease_have_one_winner,
    other_servers_hear_of_new_sessions_and_committed_lines,
    a_command_is_taken_once_and_sending_it_again_queues_nothing,
    the_lease_survey_tells_live_from_expired_leases_and_finds_waiting_commands,
    commands_a_dead_owner_took_are_found_and_taken_again_once,
    a_version_3_database_keeps_its_commands_and_counts_taken_ones_finished,
    a_version_4_database_keeps_its_replies_and_wire_lines,
    saving_a_turn_writes_only_the_replies_that_changed,
    a_session_keeps_the_agent_it_runs_and_a_version_5_one_has_none,
    a_renamed_session_keeps_its_title_and_an_unknown_one_is_reported,
    a_deleted_session_leaves_no_row_and_the_others_stay_whole,
    appends_racing_a_delete_leave_no_line_of_the_session,
    other_servers_hear_of_renamed_and_deleted_sessions,
    a_session_keeps_its_setup_and_a_version_6_one_has_the_defaults,
    a_users_rename_wins_over_the_agents_title_and_a_prompt_names_only_an_untitled_one,
    wire_pages_read_either_end_of_a_window_in_order,
    wire_pages_skip_unknown_directions_and_go_on_past_them,
    wire_pages_of_many_small_batches_are_slices_of_the_whole_log,
    lines_logged_before_the_batches_are_read_with_new_ones,
    racing_appends_of_one_batch_commit_it_once_and_a_different_one_fails,
    a_transcript_saved_in_pieces_reads_whole_and_a_save_writes_only_its_changed_items,
    a_version_10_transcript_is_read_whole_and_its_next_save_is_in_pieces,
);
