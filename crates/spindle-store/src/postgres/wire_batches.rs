//! PostgreSQL's wire log as batches (migration 9; the layout and what both stores share are in
//! `crate::batch`): each appended batch is one row of `wire_batches`, its `lengths` an
//! `INTEGER[]`. A row per line cost PostgreSQL a heap tuple,
//! a primary-key entry and their WAL for every line of a fast stream, most of its work; a row per
//! batch costs that once per group commit, and its `lines` are compressed with lz4 where the
//! server has it.
//!
//! Lines written before migration 9 stay in `wire_log`, one row each, and are read with the
//! batches (`wire_pages.rs`); nothing is copied at the upgrade. The `seq`s of one session never
//! overlap between the two tables or between batches: every append first updates the session's
//! row (the lock that orders appends to one session, see `delete_session` too), then inserts its
//! batch only if no row holds one of its `seq`s: one call of the function `spindle_append_batch`
//! (one round trip, committed on its own). A batch that meets taken `seq`s (a retry of a commit
//! whose answer was lost) is checked line by line against them in a transaction of its own:
//! equal lines are a retry and the lines not yet there are added; a different line fails the
//! whole batch (`Store::append_lines`' contract).

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::convert::pg;
use crate::batch::{BatchLine, EncodedBatch, RetryCheck, letter, stored_lines};
use crate::listen;
use crate::types::{Direction, StoreError};

/// The session's last logged `seq` (`$1` the session), as SQL: the newest batch's last line, or
/// the newest line from before migration 9.
pub(super) const LAST_SEQ: &str = "(SELECT GREATEST(
    (SELECT COALESCE(MAX(seq), 0) FROM wire_log WHERE session_id = $1),
    (SELECT COALESCE(MAX(last_seq), 0) FROM (
        SELECT last_seq FROM wire_batches WHERE session_id = $1
        ORDER BY first_seq DESC LIMIT 1) AS newest))::BIGINT)";

/// The columns a batch is read by (see [`row_lines`]).
pub(super) const COLUMNS: &str =
    "SELECT first_seq, at, directions, lengths, lines FROM wire_batches";

/// The batches of session `$1` holding a line with `seq > $2`, as a condition: the batch that
/// holds `$2 + 1` is found on the key, and the scan goes on from it.
pub(super) const HOLDING_AFTER: &str =
    "session_id = $1 AND last_seq > $2 AND first_seq >= COALESCE((
    SELECT first_seq FROM wire_batches
    WHERE session_id = $1 AND first_seq <= $2 ORDER BY first_seq DESC LIMIT 1), 0)";

/// An append: `spindle_append_batch` (migration 9) updates the session's row (the lock that
/// orders appends to one session and a delete), then, in statements that each see what committed
/// before it got that lock, inserts the batch if no row holds one of its `seq`s and queues the
/// listeners' notice. It answers `appended`, `no session` or `taken` (nothing inserted).
const APPEND: &str = "SELECT spindle_append_batch($1::BIGINT, $2::BIGINT, $3::BIGINT, $4::BIGINT,
    $5::TEXT, $6::INTEGER[], $7::BYTEA, $8::TEXT, $9::TEXT)";

/// The session's touch (`updated_at`) and the listeners' notice. It runs first in a retry's
/// transaction: the update locks the session's row, so appends to one session (and a delete)
/// take turns, and a missing session is seen before anything is written.
const TOUCH: &str = "
WITH touched AS (
    UPDATE sessions SET updated_at = $2 WHERE id = $1 RETURNING id
), notified AS (
    SELECT pg_notify($3, $4)
)
SELECT (SELECT COUNT(*) FROM touched), (SELECT COUNT(*) FROM notified)";

/// The rows holding a `seq` in `$2..=$3`, in both tables (a retry's check).
const LEGACY_BETWEEN: &str = "
SELECT seq, direction, line FROM wire_log
WHERE session_id = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq";
/// The batches holding a `seq` in `$2..=$3` (a retry's check), as a condition.
const HOLDING_BETWEEN: &str = "session_id = $1 AND first_seq <= $3 AND last_seq >= $2
    AND first_seq >= COALESCE((
        SELECT first_seq FROM wire_batches
        WHERE session_id = $1 AND first_seq <= $2 ORDER BY first_seq DESC LIMIT 1), 0)";

/// One append: the session, the `seq` of the batch's first line, the batch, its time and the
/// listeners' notice (payload).
#[derive(Debug, Clone, Copy)]
pub(super) struct Append<'a> {
    pub(super) session: i64,
    pub(super) first_seq: i64,
    pub(super) batch: &'a EncodedBatch,
    pub(super) at: i64,
    pub(super) notice: &'a str,
}

/// The lines of a row of `wire_batches` (columns `first_seq, at, directions, lengths, lines`).
pub(super) fn row_lines(row: &tokio_postgres::Row) -> impl Iterator<Item = BatchLine<'_>> {
    let directions: &str = row.get(2);
    let lengths: Vec<i32> = row.get(3);
    stored_lines(
        row.get(0),
        row.get(1),
        directions.as_bytes(),
        lengths,
        row.get(4),
    )
}

/// Appends `batch` at `first_seq`: one statement, one round trip, committed on its own
/// (`spindle_append_batch`, migration 9: the touch, the check, the insert and the notice). A
/// batch that met taken `seq`s is checked and completed by a transaction of its own
/// ([`complete_retry`]). `notice` is the listeners' payload.
pub(super) async fn append<C: GenericClient>(
    client: &C,
    call: &Append<'_>,
) -> Result<(), StoreError> {
    if call.batch.len() == 0 {
        return Ok(());
    }
    match call_append(client, call).await?.as_str() {
        "appended" => Ok(()),
        "no session" => Err(StoreError::Write(format!("no session {}", call.session))),
        _ => retry(client, call).await,
    }
}

/// One call of `spindle_append_batch`: `appended`, `no session` or `taken`.
async fn call_append<C: GenericClient>(
    client: &C,
    call: &Append<'_>,
) -> Result<String, StoreError> {
    let write = pg(StoreError::Write);
    let last_seq = call.batch.last_seq(call.first_seq);
    let statement = client.prepare_cached(APPEND).await.map_err(&write)?;
    let params: [&(dyn ToSql + Sync); 9] = [
        &call.session,
        &call.first_seq,
        &last_seq,
        &call.at,
        &call.batch.directions,
        &call.batch.lengths,
        &call.batch.lines,
        &listen::CHANNEL,
        &call.notice,
    ];
    Ok(client
        .query_one(&statement, &params)
        .await
        .map_err(&write)?
        .get(0))
}

/// The transaction for a batch that met taken `seq`s: BEGIN and the touch (the session's row
/// locked, the notice queued) in one round trip, the check and the lines not there yet, COMMIT.
async fn retry<C: GenericClient>(client: &C, call: &Append<'_>) -> Result<(), StoreError> {
    let &Append {
        session,
        at,
        notice,
        ..
    } = call;
    let write = pg(StoreError::Write);
    let touch = client.prepare_cached(TOUCH).await.map_err(&write)?;
    let touch_params: [&(dyn ToSql + Sync); 4] = [&session, &at, &listen::CHANNEL, &notice];
    let (begun, touched) = tokio::join!(
        biased;
        client.batch_execute("BEGIN"),
        client.query_one(&touch, &touch_params),
    );
    let outcome = async {
        begun.map_err(&write)?;
        let touched: i64 = touched.map_err(&write)?.get(0);
        if touched == 0 {
            return Err(StoreError::Write(format!("no session {session}")));
        }
        complete_retry(client, call).await
    }
    .await;
    match outcome {
        // Delivered to listeners only if, and once, the lines are committed.
        Ok(()) => client.batch_execute("COMMIT").await.map_err(&write),
        Err(error) => {
            // Outside a transaction (BEGIN failed) this is only a warning.
            let _ = client.batch_execute("ROLLBACK").await;
            Err(error)
        }
    }
}

/// A batch met taken `seq`s: every line already there must be the batch's own (a retry); the
/// lines not there yet are inserted, each run of them as a batch. In the append's transaction,
/// with the session's row locked.
async fn complete_retry<C: GenericClient>(client: &C, call: &Append<'_>) -> Result<(), StoreError> {
    let &Append {
        session,
        first_seq,
        batch,
        ..
    } = call;
    let write = pg(StoreError::Write);
    let last_seq = batch.last_seq(first_seq);
    let range: [&(dyn ToSql + Sync); 3] = [&session, &first_seq, &last_seq];
    let batches_sql = format!("{COLUMNS} WHERE {HOLDING_BETWEEN} ORDER BY first_seq");
    let (legacy, batches) = tokio::join!(
        client.query(LEGACY_BETWEEN, &range),
        client.query(&batches_sql, &range),
    );
    let (legacy, batches) = (legacy.map_err(&write)?, batches.map_err(&write)?);
    let mut check = RetryCheck::new(batch, first_seq);
    for row in &legacy {
        let letter = Direction::parse(row.get(1)).map(letter);
        check.stored(row.get(0), letter, row.get(2));
    }
    for row in &batches {
        for line in row_lines(row) {
            check.stored(line.seq, Some(line.letter), line.line);
        }
    }
    for run in check.missing_runs(session)? {
        let run_first = first_seq.saturating_add(run.start as i64);
        let run = batch.slice(run);
        // The same call as a first append: in this transaction the session's row is ours
        // already, and a notice repeated in one transaction is delivered once.
        let outcome = call_append(
            client,
            &Append {
                first_seq: run_first,
                batch: &run,
                ..*call
            },
        )
        .await?;
        if outcome != "appended" {
            return Err(StoreError::Write(format!(
                "session {session}: the lines from {run_first} could not be added ({outcome})"
            )));
        }
    }
    Ok(())
}
