//! Versioned, forward-only migrations, one list per store.
//!
//! A database records the migrations applied to it in `schema_version(version, applied_at)`.
//! Opening a store applies, in one transaction, every migration whose version is above the
//! highest recorded one, then records them. Migrations are never edited once released and never
//! undone: a change of schema is a new migration with the next version. A database whose highest
//! version is above [`LATEST`] was written by a newer build and is refused (see [`check`]).
//!
//! Version 1 is the schema the SQLite store had before versioning (its statements are
//! `IF NOT EXISTS`, so such a database is adopted as it is). Version 2 adds `session_leases`, the
//! table through which replicas own sessions (issue #17, `Store::claim_lease`). Version 3 adds
//! `commands`: prompts and cancels sent to a replica that does not run the session, taken once
//! by the one that does. Version 4 gives each lease an epoch (a new one at every granted claim)
//! and records under which lease a command was taken, at which log position, and when what it
//! led to was logged (`finished_at`): commands a dead owner took but never logged are found and
//! taken again by the next owner. Version 5 rebuilds SQLite's `replies` and `wire_log` as rowid
//! tables with `UNIQUE(session_id, turn)` / `UNIQUE(session_id, seq)`, the long text last: as
//! `WITHOUT ROWID` tables their whole rows (a 2.4 MB reply) were b-tree keys, read at every seek
//! beside them. PostgreSQL keeps rows in a heap apart from its indexes already, so its version 5
//! changes nothing (it is there so that both lists keep the same versions). Version 6 records the
//! agent each session runs (`sessions.agent_id`, `agent_version`): `spindle serve` offers several
//! agents, and every replica starts a session's own; older rows stay `NULL` (the default agent).
//! Version 7 records a session's setup and its title's source (issue #26): the MCP servers chosen
//! for it (`mcp_servers`, a JSON array; `NULL`: every configured one), the extra directories of
//! its agent (`additional_directories`, a JSON array), the session it was forked from
//! (`parent_id`, no foreign key: a parent may be deleted before its forks), and `title_source`
//! (`''`, `prompt`, `agent`, `user`: a user's rename is never replaced by the agent's title).
//! Existing non-empty titles become `prompt` titles (before it, a rename and a prompt's title
//! were not told apart). Version 8 drops PostgreSQL's foreign key from `wire_log` to `sessions` (its per-row
//! trigger; appends and deletes order themselves on the session's row instead). Version 9 writes
//! PostgreSQL's log as one row per appended batch (`wire_batches`); SQLite's versions 8 and 9
//! change nothing. Version 10 does the same for SQLite's log (`lengths` a `BLOB` of 4-byte
//! little-endian lengths); on PostgreSQL it compresses the batches' `lengths` and `directions`,
//! the transcripts and the replies with lz4 too. Version 11 stores a transcript in pieces: its
//! entries and turns (`transcript_items`, one row per item of a list, by position) apart from
//! the rest (`transcripts.replay_json`, with `lists` saying where each list's items go), so a save
//! writes the items that changed instead of the whole session (14 MB at each turn's start and
//! end after a 10^5-update turn). A row without `lists` holds the whole text, as before.

use crate::StoreError;

/// One schema change.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Its version: 1, 2, ... without gaps.
    pub version: i64,
    /// What it does, in a few words.
    pub summary: &'static str,
    /// The statements, run in one transaction.
    pub sql: &'static str,
}

/// The highest version this build knows.
pub const LATEST: i64 = 11;

/// The SQLite migrations.
pub const SQLITE: &[Migration] = &[
    Migration {
        version: 1,
        summary: "sessions, wire log, transcripts, replies",
        sql: "
CREATE TABLE IF NOT EXISTS meta(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions(
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    agent_session_id TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS wire_log(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    direction TEXT NOT NULL,
    line TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY(session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transcripts(
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id),
    upto_seq INTEGER NOT NULL,
    replay_json TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS replies(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    turn INTEGER NOT NULL,
    text TEXT NOT NULL,
    finished INTEGER NOT NULL,
    stop_reason TEXT,
    PRIMARY KEY(session_id, turn)
) WITHOUT ROWID;
",
    },
    Migration {
        version: 2,
        summary: "session leases (the replica that runs a session)",
        sql: "
CREATE TABLE session_leases(
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id),
    owner TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
",
    },
    Migration {
        version: 3,
        summary: "commands for the replica that runs a session",
        sql: "
CREATE TABLE commands(
    id TEXT PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    taken_by TEXT,
    taken_at INTEGER
);
CREATE INDEX commands_waiting ON commands(session_id) WHERE taken_by IS NULL;
",
    },
    Migration {
        version: 4,
        summary: "lease epochs; commands taken under a lease, finished once logged",
        sql: "
ALTER TABLE session_leases ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE commands ADD COLUMN taken_epoch INTEGER;
ALTER TABLE commands ADD COLUMN taken_after_seq INTEGER;
ALTER TABLE commands ADD COLUMN finished_at INTEGER;
UPDATE commands SET finished_at = taken_at WHERE taken_by IS NOT NULL;
DROP INDEX commands_waiting;
CREATE INDEX commands_unfinished ON commands(session_id) WHERE finished_at IS NULL;
",
    },
    Migration {
        version: 5,
        summary: "replies and wire log as rowid tables (long text out of the keys)",
        sql: "
CREATE TABLE replies_rowid(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    turn INTEGER NOT NULL,
    finished INTEGER NOT NULL,
    stop_reason TEXT,
    text TEXT NOT NULL,
    UNIQUE(session_id, turn)
);
INSERT INTO replies_rowid(session_id, turn, finished, stop_reason, text)
    SELECT session_id, turn, finished, stop_reason, text FROM replies ORDER BY session_id, turn;
DROP TABLE replies;
ALTER TABLE replies_rowid RENAME TO replies;
CREATE TABLE wire_log_rowid(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    direction TEXT NOT NULL,
    at INTEGER NOT NULL,
    line TEXT NOT NULL,
    UNIQUE(session_id, seq)
);
INSERT INTO wire_log_rowid(session_id, seq, direction, at, line)
    SELECT session_id, seq, direction, at, line FROM wire_log ORDER BY session_id, seq;
DROP TABLE wire_log;
ALTER TABLE wire_log_rowid RENAME TO wire_log;
",
    },
    Migration {
        version: 6,
        summary: "the agent each session runs",
        sql: "
ALTER TABLE sessions ADD COLUMN agent_id TEXT;
ALTER TABLE sessions ADD COLUMN agent_version TEXT;
",
    },
    Migration {
        version: 7,
        summary: "a session's setup (MCP servers, directories, parent) and title source",
        sql: "
ALTER TABLE sessions ADD COLUMN mcp_servers TEXT;
ALTER TABLE sessions ADD COLUMN additional_directories TEXT;
ALTER TABLE sessions ADD COLUMN parent_id INTEGER;
ALTER TABLE sessions ADD COLUMN title_source TEXT NOT NULL DEFAULT '';
UPDATE sessions SET title_source = 'prompt' WHERE title <> '';
",
    },
    Migration {
        version: 8,
        summary: "wire log rows checked against their session by the append, not a foreign key",
        // SQLite checks a foreign key with one lookup of the session's rowid; dropping it would
        // copy the whole log into a new table: kept (see the PostgreSQL migration).
        sql: "",
    },
    Migration {
        version: 9,
        summary: "the wire log written one row per appended batch",
        // SQLite writes a line's row into pages it fills anyway, with no per-row log record of
        // its own: its rows per line stay (see the PostgreSQL migration).
        sql: "",
    },
    Migration {
        version: 10,
        summary: "the SQLite wire log one row per appended batch; PostgreSQL's long columns in lz4",
        // Measured, the rows per line were SQLite's work after all: a 10^6-update turn of
        // `spindle serve` spent 0.7-1.0 s of CPU in its log writer, a statement step, a b-tree
        // insert and a key entry per line. New lines go to `wire_batches` (`crate::batch`,
        // `sqlite/wire_batches.rs`), a rowid table (its rows are large) keyed by the session and
        // the first line's `seq`; `wire_log` keeps the lines written before and is read with it.
        sql: "
CREATE TABLE wire_batches(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    directions TEXT NOT NULL,
    lengths BLOB NOT NULL,
    lines BLOB NOT NULL,
    UNIQUE(session_id, first_seq),
    CHECK (last_seq >= first_seq
        AND length(directions) = last_seq - first_seq + 1
        AND length(lengths) = 4 * (last_seq - first_seq + 1))
);
",
    },
    Migration {
        version: 11,
        summary: "transcripts saved in pieces: the changed entries and turns, not the whole text",
        sql: "
ALTER TABLE transcripts ADD COLUMN lists TEXT;
CREATE TABLE transcript_items(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    list INTEGER NOT NULL,
    position INTEGER NOT NULL,
    json TEXT NOT NULL,
    UNIQUE(session_id, list, position)
);
",
    },
];

/// The PostgreSQL migrations. Lines are `bytea` (a wire line may hold U+0000, which `text`
/// refuses); times are milliseconds since the Unix epoch, as in SQLite.
pub const POSTGRES: &[Migration] = &[
    Migration {
        version: 1,
        summary: "sessions, wire log, transcripts, replies",
        sql: "
CREATE TABLE meta(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE sessions(
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    agent_session_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE wire_log(
    session_id BIGINT NOT NULL REFERENCES sessions(id),
    seq BIGINT NOT NULL,
    direction TEXT NOT NULL,
    line BYTEA NOT NULL,
    at BIGINT NOT NULL,
    PRIMARY KEY(session_id, seq)
);
CREATE TABLE transcripts(
    session_id BIGINT PRIMARY KEY REFERENCES sessions(id),
    upto_seq BIGINT NOT NULL,
    replay_json TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE replies(
    session_id BIGINT NOT NULL REFERENCES sessions(id),
    turn BIGINT NOT NULL,
    text TEXT NOT NULL,
    finished BOOLEAN NOT NULL,
    stop_reason TEXT,
    PRIMARY KEY(session_id, turn)
);
",
    },
    Migration {
        version: 2,
        summary: "session leases (the replica that runs a session)",
        sql: "
CREATE TABLE session_leases(
    session_id BIGINT PRIMARY KEY REFERENCES sessions(id),
    owner TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
",
    },
    Migration {
        version: 3,
        summary: "commands for the replica that runs a session",
        sql: "
CREATE TABLE commands(
    id TEXT PRIMARY KEY,
    session_id BIGINT NOT NULL REFERENCES sessions(id),
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    taken_by TEXT,
    taken_at BIGINT
);
CREATE INDEX commands_waiting ON commands(session_id) WHERE taken_by IS NULL;
",
    },
    Migration {
        version: 4,
        summary: "lease epochs; commands taken under a lease, finished once logged",
        sql: "
ALTER TABLE session_leases ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
CREATE SEQUENCE lease_epochs;
ALTER TABLE commands ADD COLUMN taken_epoch BIGINT, ADD COLUMN taken_after_seq BIGINT,
    ADD COLUMN finished_at BIGINT;
UPDATE commands SET finished_at = taken_at WHERE taken_by IS NOT NULL;
DROP INDEX commands_waiting;
CREATE INDEX commands_unfinished ON commands(session_id) WHERE finished_at IS NULL;
",
    },
    Migration {
        version: 5,
        summary: "replies and wire log as rowid tables (long text out of the keys)",
        // PostgreSQL's tables are heaps beside their indexes (long values TOASTed): nothing to
        // change.
        sql: "",
    },
    Migration {
        version: 6,
        summary: "the agent each session runs",
        sql: "
ALTER TABLE sessions ADD COLUMN agent_id TEXT;
ALTER TABLE sessions ADD COLUMN agent_version TEXT;
",
    },
    Migration {
        version: 7,
        summary: "a session's setup (MCP servers, directories, parent) and title source",
        sql: "
ALTER TABLE sessions ADD COLUMN mcp_servers TEXT;
ALTER TABLE sessions ADD COLUMN additional_directories TEXT;
ALTER TABLE sessions ADD COLUMN parent_id BIGINT;
ALTER TABLE sessions ADD COLUMN title_source TEXT NOT NULL DEFAULT '';
UPDATE sessions SET title_source = 'prompt' WHERE title <> '';
",
    },
    Migration {
        version: 8,
        summary: "wire log rows checked against their session by the append, not a foreign key",
        // The foreign key ran a trigger per inserted row (a lookup and a lock of the session's
        // row): most of PostgreSQL's work for a fast stream. Every append updates the session's
        // row in its transaction and rolls back when there is none, and a delete locks that row
        // first (`delete_session`), so no line outlives its session.
        sql: "
ALTER TABLE wire_log DROP CONSTRAINT IF EXISTS wire_log_session_id_fkey;
",
    },
    Migration {
        version: 9,
        summary: "the wire log written one row per appended batch",
        // A row per line cost a heap tuple, a key entry and their WAL for each line of a fast
        // stream, most of PostgreSQL's work. New lines go to `wire_batches`, a row per appended
        // batch (`postgres/wire_batches.rs`); `wire_log` keeps the lines written before and is
        // read with it, so nothing is copied. `lines` is compressed with lz4 where the server
        // was built with it (pglz, the default, costs several times the CPU). An append is one
        // call of `spindle_append_batch`: one round trip, committed on its own.
        sql: "
CREATE TABLE wire_batches(
    session_id BIGINT NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    at BIGINT NOT NULL,
    directions TEXT NOT NULL,
    lengths INTEGER[] NOT NULL,
    lines BYTEA NOT NULL,
    PRIMARY KEY(session_id, first_seq),
    CHECK (last_seq >= first_seq
        AND length(directions) = last_seq - first_seq + 1
        AND cardinality(lengths) = last_seq - first_seq + 1)
);
CREATE FUNCTION spindle_append_batch(
    p_session BIGINT, p_first BIGINT, p_last BIGINT, p_at BIGINT, p_directions TEXT,
    p_lengths INTEGER[], p_lines BYTEA, p_channel TEXT, p_notice TEXT
) RETURNS TEXT LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- The session's row first: appends to one session and its delete take turns on it. Each
    -- statement below sees what committed before this one got the lock.
    UPDATE sessions SET updated_at = p_at WHERE id = p_session;
    IF NOT FOUND THEN
        RETURN 'no session';
    END IF;
    IF EXISTS (SELECT 1 FROM wire_log
               WHERE session_id = p_session AND seq BETWEEN p_first AND p_last)
       OR COALESCE((SELECT last_seq FROM wire_batches
                    WHERE session_id = p_session AND first_seq <= p_last
                    ORDER BY first_seq DESC LIMIT 1) >= p_first, FALSE) THEN
        RETURN 'taken';
    END IF;
    INSERT INTO wire_batches(session_id, first_seq, last_seq, at, directions, lengths, lines)
        VALUES (p_session, p_first, p_last, p_at, p_directions, p_lengths, p_lines);
    PERFORM pg_notify(p_channel, p_notice);
    RETURN 'appended';
END
$$;
DO $$
BEGIN
    EXECUTE 'ALTER TABLE wire_batches ALTER COLUMN lines SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    NULL;
END
$$;
",
    },
    Migration {
        version: 10,
        summary: "the SQLite wire log one row per appended batch; PostgreSQL's long columns in lz4",
        // PostgreSQL's log went to batches at version 9, where only `lines` took lz4. The other
        // long values went on with pglz, the default: a fast stream's batch has `lengths` and
        // `directions` of kilobytes, and a turn's end saves its reply and the transcript (tens
        // of megabytes after a 10^6-update turn), where pglz was 45% of PostgreSQL's CPU.
        sql: "
DO $$
BEGIN
    EXECUTE 'ALTER TABLE wire_batches ALTER COLUMN lengths SET COMPRESSION lz4,
        ALTER COLUMN directions SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE transcripts ALTER COLUMN replay_json SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE replies ALTER COLUMN text SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    NULL;
END
$$;
",
    },
    Migration {
        version: 11,
        summary: "transcripts saved in pieces: the changed entries and turns, not the whole text",
        sql: "
ALTER TABLE transcripts ADD COLUMN lists TEXT;
CREATE TABLE transcript_items(
    session_id BIGINT NOT NULL,
    list INTEGER NOT NULL,
    position BIGINT NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY(session_id, list, position)
);
DO $$
BEGIN
    EXECUTE 'ALTER TABLE transcript_items ALTER COLUMN json SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    NULL;
END
$$;
",
    },
];

/// The migrations to apply to a database at version `current` (0: none applied), or the error
/// for a database newer than this build.
pub fn pending(
    all: &'static [Migration],
    current: i64,
) -> Result<&'static [Migration], StoreError> {
    check(current)?;
    let first = all.partition_point(|m| m.version <= current);
    Ok(&all[first..])
}

/// Refuses a database whose schema is newer than this build.
pub fn check(current: i64) -> Result<(), StoreError> {
    if current > LATEST {
        return Err(StoreError::Open(format!(
            "the database is at schema version {current}, newer than this spindle knows \
             ({LATEST}); run a newer spindle (migrations are forward-only)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_lists_are_numbered_without_gaps_up_to_latest() {
        for list in [SQLITE, POSTGRES] {
            let versions: Vec<i64> = list.iter().map(|m| m.version).collect();
            assert_eq!(versions, (1..=LATEST).collect::<Vec<_>>());
        }
        for (a, b) in SQLITE.iter().zip(POSTGRES) {
            assert_eq!(a.summary, b.summary);
        }
    }

    #[test]
    fn pending_is_what_lies_above_the_current_version() {
        assert_eq!(pending(SQLITE, 0).unwrap().len(), 11);
        assert_eq!(pending(SQLITE, 1).unwrap()[0].version, 2);
        assert!(pending(POSTGRES, LATEST).unwrap().is_empty());
        let error = pending(POSTGRES, LATEST + 1).unwrap_err();
        assert!(
            error.to_string().contains("newer than this spindle"),
            "{error}"
        );
    }
}
