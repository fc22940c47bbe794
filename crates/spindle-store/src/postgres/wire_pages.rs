//! Reading the wire log back: the whole tail after a `seq` (rebuilds, followers) and bounded
//! pages at either end of a window (the wire inspector).

use deadpool_postgres::Pool;

use super::convert::{pg, pool, text_of};
use crate::types::{Direction, LoggedLine, StoreError, WirePage, WireWindow};

/// The lines with `seq > after`, in order, and the count of rows with an unknown direction.
pub(super) async fn lines_after(
    pool: Pool,
    session: i64,
    after: i64,
) -> Result<(Vec<LoggedLine>, usize), StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
    let rows = client
        .query(
            "SELECT seq, direction, at, line FROM wire_log
             WHERE session_id = $1 AND seq > $2 ORDER BY seq",
            &[&session, &after],
        )
        .await
        .map_err(pg(StoreError::Read))?;
    let mut lines = Vec::with_capacity(rows.len());
    let mut skipped = 0;
    for row in rows {
        let direction: &str = row.get(1);
        match Direction::parse(direction) {
            Some(direction) => lines.push(LoggedLine {
                seq: row.get(0),
                direction,
                at: row.get(2),
                line: text_of(row.get(3)),
            }),
            None => skipped += 1,
        }
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
    let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
    let rows = client
        .query(sql, &[&session, &seq, &WirePage::rows_to_read(limit)])
        .await
        .map_err(pg(StoreError::Read))?;
    let rows = rows
        .into_iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), text_of(row.get(3))));
    Ok(WirePage::from_rows(window, limit, rows))
}
