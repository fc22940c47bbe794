//! SQLite's wire log as batches (migration 10; the layout and what both stores share are in
//! `crate::batch`): each appended batch is one row of `wire_batches`, its `lengths` a `BLOB` of
//! 4-byte little-endian lengths. A row per line cost a statement step, a b-tree insert and a key
//! entry for every line of a fast stream; a row per batch costs them once per commit.
//!
//! Lines written before migration 10 stay in `wire_log`, a row each, and are read with the
//! batches, merged by `seq`; nothing is copied at the upgrade. Appends take turns on the writing
//! connection (and on SQLite's write lock, for another process on the same file). In one
//! transaction an append touches the session's row (failing when there is none), looks whether
//! a row of either table holds one of its `seq`s and, when none does, inserts its batch. A batch
//! that meets taken `seq`s (a retry of a commit whose answer was lost) is checked line by line
//! in that transaction: equal lines are a retry and the lines not there yet are added; a
//! different line fails the whole batch (`Store::append_lines`' contract).

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row, Transaction, params};

use super::convert::write_error;
use crate::batch::{
    BatchLine, EncodedBatch, RetryCheck, lengths_from_le, letter, lines_after_into,
    server_notes_after, stored_lines, window_rows_into,
};
use crate::types::{Direction, LoggedLine, PageRow, StoreError, WirePage, WireWindow};

/// The session's last logged `seq` (`?1` the session), as SQL: the newest batch's last line, or
/// the newest line from before migration 10.
pub(super) const LAST_SEQ: &str = "(SELECT MAX(
    (SELECT COALESCE(MAX(seq), 0) FROM wire_log WHERE session_id = ?1),
    COALESCE((SELECT last_seq FROM wire_batches WHERE session_id = ?1
              ORDER BY first_seq DESC LIMIT 1), 0)))";

/// The columns a batch is read by (see [`row_lines`]).
const COLUMNS: &str = "SELECT first_seq, at, directions, lengths, lines FROM wire_batches";

/// The batches of session `?1` holding a line with `seq > ?2`, as a condition: the batch that
/// holds `?2 + 1` is found on the key, and the scan goes on from it.
const HOLDING_AFTER: &str = "session_id = ?1 AND last_seq > ?2 AND first_seq >= COALESCE((
    SELECT first_seq FROM wire_batches
    WHERE session_id = ?1 AND first_seq <= ?2 ORDER BY first_seq DESC LIMIT 1), 0)";

/// Whether a row of either table holds a `seq` in `?2..=?3` of session `?1`. Batches never
/// overlap: only the last one starting at or before `?3` can reach into the range.
const TAKEN: &str = "SELECT EXISTS(SELECT 1 FROM wire_log
        WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3)
    OR COALESCE((SELECT last_seq FROM wire_batches WHERE session_id = ?1 AND first_seq <= ?3
                 ORDER BY first_seq DESC LIMIT 1) >= ?2, 0)";

const INSERT: &str = "INSERT INTO wire_batches(
    session_id, first_seq, last_seq, at, directions, lengths, lines)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// The rows of `wire_log` holding a `seq` in `?2..=?3` (a retry's check).
const LEGACY_BETWEEN: &str = "SELECT seq, direction, line FROM wire_log
    WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq";

/// The batches holding a `seq` in `?2..=?3` (a retry's check), as a condition.
const HOLDING_BETWEEN: &str = "session_id = ?1 AND first_seq <= ?3 AND last_seq >= ?2
    AND first_seq >= COALESCE((
        SELECT first_seq FROM wire_batches
        WHERE session_id = ?1 AND first_seq <= ?2 ORDER BY first_seq DESC LIMIT 1), 0)";

/// Column `index` of `row` as bytes (text or blob; `NULL` as none).
fn bytes<'r>(row: &'r Row<'_>, index: usize) -> rusqlite::Result<&'r [u8]> {
    match row.get_ref(index)? {
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => Ok(bytes),
        ValueRef::Null => Ok(&[]),
        other => Err(rusqlite::Error::InvalidColumnType(
            index,
            "a batch column".to_owned(),
            other.data_type(),
        )),
    }
}

/// The lines of a row read by [`COLUMNS`].
fn row_lines<'r>(row: &'r Row<'_>) -> rusqlite::Result<impl Iterator<Item = BatchLine<'r>> + 'r> {
    let first_seq: i64 = row.get(0)?;
    let at: i64 = row.get(1)?;
    Ok(stored_lines(
        first_seq,
        at,
        bytes(row, 2)?,
        lengths_from_le(bytes(row, 3)?),
        bytes(row, 4)?,
    ))
}

/// Appends `batch` at `first_seq` in the caller's transaction (see the module's comment).
pub(super) fn append(
    tx: &Transaction<'_>,
    session: i64,
    first_seq: i64,
    batch: &EncodedBatch,
    at: i64,
) -> Result<(), StoreError> {
    let touched = tx
        .prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![session, at]))
        .map_err(write_error)?;
    if touched == 0 {
        return Err(StoreError::Write(format!("no session {session}")));
    }
    let last_seq = batch.last_seq(first_seq);
    let taken: bool = tx
        .prepare_cached(TAKEN)
        .and_then(|mut s| s.query_row(params![session, first_seq, last_seq], |r| r.get(0)))
        .map_err(write_error)?;
    if !taken {
        return insert(tx, session, first_seq, batch, at);
    }
    let mut check = RetryCheck::new(batch, first_seq);
    let range = params![session, first_seq, last_seq];
    let mut legacy = tx.prepare_cached(LEGACY_BETWEEN).map_err(write_error)?;
    let mut rows = legacy.query(range).map_err(write_error)?;
    while let Some(row) = rows.next().map_err(write_error)? {
        let direction: String = row.get(1).map_err(write_error)?;
        let line = bytes(row, 2).map_err(write_error)?;
        check.stored(
            row.get(0).map_err(write_error)?,
            Direction::parse(&direction).map(letter),
            line,
        );
    }
    let mut batches = tx
        .prepare_cached(&format!(
            "{COLUMNS} WHERE {HOLDING_BETWEEN} ORDER BY first_seq"
        ))
        .map_err(write_error)?;
    let mut rows = batches.query(range).map_err(write_error)?;
    while let Some(row) = rows.next().map_err(write_error)? {
        for line in row_lines(row).map_err(write_error)? {
            check.stored(line.seq, Some(line.letter), line.line);
        }
    }
    for run in check.missing_runs(session)? {
        let run_first = first_seq.saturating_add(run.start as i64);
        insert(tx, session, run_first, &batch.slice(run), at)?;
    }
    Ok(())
}

fn insert(
    tx: &Transaction<'_>,
    session: i64,
    first_seq: i64,
    batch: &EncodedBatch,
    at: i64,
) -> Result<(), StoreError> {
    tx.prepare_cached(INSERT)
        .and_then(|mut s| {
            s.execute(params![
                session,
                first_seq,
                batch.last_seq(first_seq),
                at,
                batch.directions,
                batch.lengths_le(),
                batch.lines,
            ])
        })
        .map(drop)
        .map_err(write_error)
}

/// The lines with `seq > after`, in order, and the count of rows with an unknown direction.
pub(super) fn lines_after(
    reader: &Connection,
    session: i64,
    after: i64,
) -> rusqlite::Result<(Vec<LoggedLine>, usize)> {
    let mut lines = Vec::new();
    let mut skipped = 0;
    let mut batches = reader.prepare_cached(&format!(
        "{COLUMNS} WHERE {HOLDING_AFTER} ORDER BY first_seq"
    ))?;
    let mut rows = batches.query(params![session, after])?;
    while let Some(row) = rows.next()? {
        lines_after_into(row_lines(row)?, after, &mut lines, &mut skipped);
    }
    let mut legacy = reader.prepare_cached(
        "SELECT seq, direction, at, line FROM wire_log
         WHERE session_id = ?1 AND seq > ?2 ORDER BY seq",
    )?;
    let mut rows = legacy.query(params![session, after])?;
    let mut any_legacy = false;
    while let Some(row) = rows.next()? {
        any_legacy = true;
        let direction: String = row.get(1)?;
        match Direction::parse(&direction) {
            Some(direction) => lines.push(LoggedLine {
                seq: row.get(0)?,
                direction,
                at: row.get(2)?,
                line: row.get(3)?,
            }),
            None => skipped += 1,
        }
    }
    if any_legacy {
        lines.sort_by_key(|l| l.seq);
    }
    Ok((lines, skipped))
}

/// One bounded page (see [`crate::Store::wire_page`]).
pub(super) fn page(
    reader: &Connection,
    session: i64,
    window: WireWindow,
    limit: usize,
) -> rusqlite::Result<WirePage> {
    let need = WirePage::rows_to_read(limit);
    let (legacy_sql, batches_sql, seq) = match window {
        WireWindow::Before(seq) => (
            "SELECT seq, direction, at, line FROM wire_log
             WHERE session_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3",
            format!("{COLUMNS} WHERE session_id = ?1 AND first_seq < ?2 ORDER BY first_seq DESC"),
            seq,
        ),
        WireWindow::After(seq) => (
            "SELECT seq, direction, at, line FROM wire_log
             WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            format!("{COLUMNS} WHERE {HOLDING_AFTER} ORDER BY first_seq"),
            seq,
        ),
    };
    let legacy: Vec<PageRow> = reader
        .prepare_cached(legacy_sql)?
        .query_map(params![session, seq, need], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })?
        .collect::<Result<_, _>>()?;
    // The batches are stepped through only until the page is full.
    let need = usize::try_from(need).unwrap_or(usize::MAX);
    let mut batched: Vec<PageRow> = Vec::new();
    let mut batches = reader.prepare_cached(&batches_sql)?;
    let mut rows = batches.query(params![session, seq])?;
    while batched.len() < need {
        let Some(row) = rows.next()? else { break };
        window_rows_into(row_lines(row)?, window, &mut batched);
    }
    batched.truncate(need);
    Ok(WirePage::merged(window, limit, batched, legacy))
}

/// The server's notes with `seq > after`, in order.
pub(super) fn server_notes(
    reader: &Connection,
    session: i64,
    after: i64,
) -> rusqlite::Result<Vec<LoggedLine>> {
    let mut notes: Vec<LoggedLine> = reader
        .prepare_cached(
            "SELECT seq, at, line FROM wire_log
             WHERE session_id = ?1 AND seq > ?2 AND direction = 'server' ORDER BY seq",
        )?
        .query_map(params![session, after], |row| {
            Ok(LoggedLine {
                seq: row.get(0)?,
                direction: Direction::Server,
                at: row.get(1)?,
                line: row.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let legacy_notes = notes.len();
    let mut batches = reader.prepare_cached(&format!(
        "{COLUMNS} WHERE {HOLDING_AFTER} AND instr(directions, '{}') > 0 ORDER BY first_seq",
        char::from(letter(Direction::Server))
    ))?;
    let mut rows = batches.query(params![session, after])?;
    while let Some(row) = rows.next()? {
        notes.extend(server_notes_after(row_lines(row)?, after));
    }
    if legacy_notes > 0 {
        notes.sort_by_key(|l| l.seq);
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queries of a fast stream's reader and writer find their rows on the key.
    #[test]
    fn the_batch_queries_search_the_key() {
        let mut connection = Connection::open_in_memory().unwrap();
        super::super::migrate(&mut connection, crate::migrations::SQLITE).unwrap();
        for sql in [
            format!("{COLUMNS} WHERE {HOLDING_AFTER} ORDER BY first_seq"),
            format!("{COLUMNS} WHERE {HOLDING_BETWEEN} ORDER BY first_seq"),
            format!("{COLUMNS} WHERE session_id = ?1 AND first_seq < ?2 ORDER BY first_seq DESC"),
            TAKEN.to_owned(),
            format!("SELECT {LAST_SEQ}"),
            LEGACY_BETWEEN.to_owned(),
        ] {
            let mut plan = String::new();
            let mut statement = connection
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap();
            for index in 1..=statement.parameter_count() {
                statement.raw_bind_parameter(index, index as i64).unwrap();
            }
            let mut rows = statement.raw_query();
            while let Some(row) = rows.next().unwrap() {
                plan.push_str(&row.get::<_, String>(3).unwrap());
                plan.push('\n');
            }
            assert!(!plan.contains("SCAN wire_"), "{sql}\n{plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{sql}\n{plan}");
            assert!(plan.contains("SEARCH wire_"), "{sql}\n{plan}");
        }
    }

    #[test]
    fn a_text_or_null_column_reads_as_bytes_and_a_number_does_not() {
        let connection = Connection::open_in_memory().unwrap();
        let (text, null, number) = connection
            .query_row("SELECT 'ab', NULL, 3", [], |row| {
                Ok((
                    bytes(row, 0)?.to_vec(),
                    bytes(row, 1)?.to_vec(),
                    bytes(row, 2).is_err(),
                ))
            })
            .unwrap();
        assert_eq!(
            (text.as_slice(), null.as_slice(), number),
            (&b"ab"[..], &[][..], true)
        );
    }
}
