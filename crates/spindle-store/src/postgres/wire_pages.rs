//! Reading the wire log back: the whole tail after a `seq` (rebuilds, followers), bounded pages
//! at either end of a window (the wire inspector) and the server's notes. Lines come from
//! `wire_batches` and, for lines written before migration 9, from `wire_log`, merged by `seq`
//! (see `wire_batches.rs`).

use deadpool_postgres::{Object, Pool};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::convert::{pg, pool, text_of};
use super::wire_batches::{COLUMNS, HOLDING_AFTER, row_lines};
use crate::batch::{letter, lines_after_into, server_notes_after, window_rows_into};
use crate::types::{Direction, LoggedLine, PageRow, StoreError, WirePage, WireWindow};

/// The lines with `seq > after`, in order, and the count of rows with an unknown direction.
pub(super) async fn lines_after(
    pool: Pool,
    session: i64,
    after: i64,
) -> Result<(Vec<LoggedLine>, usize), StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
    let read = pg(StoreError::Read);
    let (legacy, batches) = both_tables(
        &client,
        "SELECT seq, direction, at, line FROM wire_log
         WHERE session_id = $1 AND seq > $2 ORDER BY seq",
        &format!("{COLUMNS} WHERE {HOLDING_AFTER} ORDER BY first_seq"),
        session,
        after,
    )
    .await
    .map_err(&read)?;
    let mut lines = Vec::new();
    let mut skipped = 0;
    for row in &batches {
        lines_after_into(row_lines(row), after, &mut lines, &mut skipped);
    }
    if !legacy.is_empty() {
        for row in legacy {
            match Direction::parse(row.get(1)) {
                Some(direction) => lines.push(LoggedLine {
                    seq: row.get(0),
                    direction,
                    at: row.get(2),
                    line: text_of(row.get(3)),
                }),
                None => skipped += 1,
            }
        }
        lines.sort_by_key(|l| l.seq);
    }
    Ok((lines, skipped))
}

/// One bounded page (see [`crate::Store::wire_page`]).
pub(super) async fn page(
    pool: Pool,
    session: i64,
    window: WireWindow,
    limit: usize,
) -> Result<WirePage, StoreError> {
    let (sql, seq) = match window {
        WireWindow::Before(seq) => (
            "SELECT seq, direction, at, line FROM wire_log
             WHERE session_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
            seq,
        ),
        WireWindow::After(seq) => (
            "SELECT seq, direction, at, line FROM wire_log
             WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            seq,
        ),
    };
    let need = WirePage::rows_to_read(limit);
    let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
    let read = pg(StoreError::Read);
    let params: [&(dyn ToSql + Sync); 3] = [&session, &seq, &need];
    let (legacy, batched) = tokio::join!(
        client.query(sql, &params),
        batch_window(
            &client,
            session,
            window,
            usize::try_from(need).unwrap_or(usize::MAX)
        ),
    );
    let (legacy, rows) = (legacy.map_err(&read)?, batched.map_err(&read)?);
    let legacy = legacy
        .into_iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), text_of(row.get(3))))
        .collect();
    Ok(WirePage::merged(window, limit, rows, legacy))
}

/// The first `need` lines of the batches in the window, in the window's order (newest first for
/// `Before`). Batches are read a few at a time, more each round, so a page of a long log reads
/// about the batches it shows.
async fn batch_window(
    client: &Object,
    session: i64,
    window: WireWindow,
    need: usize,
) -> Result<Vec<PageRow>, tokio_postgres::Error> {
    let mut rows: Vec<PageRow> = Vec::new();
    let mut batches: i64 = 4;
    // The `first_seq` of the last batch read: the next round reads on from there.
    let mut cursor: Option<i64> = None;
    loop {
        let read: Vec<Row> = match (window, cursor) {
            (WireWindow::After(seq), None) => {
                let sql = format!("{COLUMNS} WHERE {HOLDING_AFTER} ORDER BY first_seq LIMIT $3");
                client.query(&sql, &[&session, &seq, &batches]).await?
            }
            (WireWindow::After(_), Some(first)) => {
                let sql = format!(
                    "{COLUMNS} WHERE session_id = $1 AND first_seq > $2 ORDER BY first_seq LIMIT $3"
                );
                client.query(&sql, &[&session, &first, &batches]).await?
            }
            (WireWindow::Before(seq), None) | (WireWindow::Before(_), Some(seq)) => {
                let sql = format!(
                    "{COLUMNS} WHERE session_id = $1 AND first_seq < $2
                     ORDER BY first_seq DESC LIMIT $3"
                );
                let below = cursor.unwrap_or(seq);
                client.query(&sql, &[&session, &below, &batches]).await?
            }
        };
        for row in &read {
            cursor = Some(row.get(0));
            window_rows_into(row_lines(row), window, &mut rows);
        }
        if rows.len() >= need || (read.len() as i64) < batches {
            rows.truncate(need);
            return Ok(rows);
        }
        batches = (batches * 4).min(256);
    }
}

/// The server's notes with `seq > after`, in order.
pub(super) async fn server_notes(
    pool: Pool,
    session: i64,
    after: i64,
) -> Result<Vec<LoggedLine>, StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
    let (legacy, batches) = both_tables(
        &client,
        "SELECT seq, at, line FROM wire_log
         WHERE session_id = $1 AND seq > $2 AND direction = 'server' ORDER BY seq",
        &format!(
            "{COLUMNS} WHERE {HOLDING_AFTER} AND strpos(directions, '{}') > 0 ORDER BY first_seq",
            char::from(letter(Direction::Server))
        ),
        session,
        after,
    )
    .await
    .map_err(pg(StoreError::Read))?;
    let mut notes: Vec<LoggedLine> = legacy
        .iter()
        .map(|row| LoggedLine {
            seq: row.get(0),
            direction: Direction::Server,
            at: row.get(1),
            line: text_of(row.get(2)),
        })
        .collect();
    let legacy_notes = notes.len();
    for row in &batches {
        notes.extend(server_notes_after(row_lines(row), after));
    }
    if legacy_notes > 0 {
        notes.sort_by_key(|l| l.seq);
    }
    Ok(notes)
}

/// The rows of `legacy` (on `wire_log`) and `batches` (on `wire_batches`), both taking the
/// session (`$1`) and a `seq` (`$2`), run side by side on one connection. Prepared once per
/// connection: a follower reads the tail at every notice.
async fn both_tables(
    client: &Object,
    legacy: &str,
    batches: &str,
    session: i64,
    after: i64,
) -> Result<(Vec<Row>, Vec<Row>), tokio_postgres::Error> {
    let params: [&(dyn ToSql + Sync); 2] = [&session, &after];
    let (legacy, batches) = tokio::join!(
        client.prepare_cached(legacy),
        client.prepare_cached(batches)
    );
    let (legacy, batches) = (legacy?, batches?);
    let (legacy, batches) = tokio::join!(
        client.query(&legacy, &params),
        client.query(&batches, &params),
    );
    Ok((legacy?, batches?))
}
