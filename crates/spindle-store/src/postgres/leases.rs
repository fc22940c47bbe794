//! The PostgreSQL store's leases and commands (issue 17): which replica runs a session, and the
//! commands other replicas send it. Every statement reads the time on the database's clock
//! (`clock_timestamp()`), so replicas' clocks need not agree.

use deadpool_postgres::Pool;
use tokio_postgres::Row;

use super::convert::{notify, pg, pool};
use crate::types::{Lease, LeaseSurvey, StoreError, TakenCommand};
use crate::types::{display_text, now_ms};

/// Milliseconds since the Unix epoch on the database's clock, as SQL.
const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

fn lease_of(session: i64, row: &Row) -> Lease {
    Lease {
        session,
        owner: row.get("owner"),
        expires_at: row.get("expires_at"),
        epoch: row.get("epoch"),
    }
}

fn taken_of(row: &Row) -> TakenCommand {
    TakenCommand {
        id: row.get("id"),
        body: row.get("body"),
        taken_by: row.get("taken_by"),
        epoch: row.get::<_, Option<i64>>("taken_epoch").unwrap_or(0),
        after_seq: row.get::<_, Option<i64>>("taken_after_seq").unwrap_or(0),
    }
}

/// The rows of commands in the order they were sent.
fn oldest_first(rows: &[Row]) -> Vec<TakenCommand> {
    let mut taken: Vec<(i64, TakenCommand)> = rows
        .iter()
        .map(|row| (row.get("created_at"), taken_of(row)))
        .collect();
    taken.sort_by(|a, b| (a.0, &a.1.id).cmp(&(b.0, &b.1.id)));
    taken.into_iter().map(|(_, command)| command).collect()
}

pub(super) async fn claim(
    pool: Pool,
    session: i64,
    owner: String,
    ttl: i64,
) -> Result<Lease, StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
    // One statement: the row lock of `ON CONFLICT DO UPDATE` makes two concurrent claims of an
    // expired lease succeed at most once (and waits for a take of commands under way).
    let claimed = client
        .query_opt(
            &format!(
                "WITH now AS (SELECT {NOW_MS} AS ms)
                 INSERT INTO session_leases(session_id, owner, expires_at, epoch)
                 SELECT $1, $2, ms + $3, nextval('lease_epochs') FROM now
                 ON CONFLICT(session_id) DO UPDATE
                 SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at,
                     epoch = EXCLUDED.epoch
                 WHERE session_leases.owner = EXCLUDED.owner
                    OR session_leases.expires_at <= (SELECT ms FROM now)
                 RETURNING owner, expires_at, epoch"
            ),
            &[&session, &owner, &ttl],
        )
        .await
        .map_err(pg(StoreError::Write))?;
    let row = match claimed {
        Some(row) => row,
        None => client
            .query_one(
                "SELECT owner, expires_at, epoch FROM session_leases WHERE session_id = $1",
                &[&session],
            )
            .await
            .map_err(pg(StoreError::Write))?,
    };
    Ok(lease_of(session, &row))
}

pub(super) async fn renew(
    pool: Pool,
    session: i64,
    owner: String,
    epoch: i64,
    ttl: i64,
) -> Result<Option<Lease>, StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
    let renewed = client
        .query_opt(
            &format!(
                "UPDATE session_leases SET expires_at = {NOW_MS} + $4
                 WHERE session_id = $1 AND owner = $2 AND epoch = $3
                 RETURNING owner, expires_at, epoch"
            ),
            &[&session, &owner, &epoch, &ttl],
        )
        .await
        .map_err(pg(StoreError::Write))?;
    let row = match renewed {
        Some(row) => Some(row),
        None => client
            .query_opt(
                "SELECT owner, expires_at, epoch FROM session_leases WHERE session_id = $1",
                &[&session],
            )
            .await
            .map_err(pg(StoreError::Write))?,
    };
    Ok(row.map(|row| lease_of(session, &row)))
}

pub(super) async fn release(pool: Pool, session: i64, owner: String) -> Result<bool, StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
    let deleted = client
        .execute(
            "DELETE FROM session_leases WHERE session_id = $1 AND owner = $2",
            &[&session, &owner],
        )
        .await
        .map_err(pg(StoreError::Write))?;
    Ok(deleted > 0)
}

pub(super) async fn leases(pool: Pool) -> Result<Vec<Lease>, StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
    let rows = client
        .query(
            "SELECT session_id, owner, expires_at, epoch FROM session_leases
             ORDER BY session_id",
            &[],
        )
        .await
        .map_err(pg(StoreError::Read))?;
    Ok(rows
        .iter()
        .map(|row| lease_of(row.get("session_id"), row))
        .collect())
}

pub(super) async fn survey(pool: Pool) -> Result<LeaseSurvey, StoreError> {
    let read = pg(StoreError::Read);
    let mut client = pool.get().await.map_err(self::pool(StoreError::Read))?;
    // One snapshot for both reads; expiry on the database's clock, as at claim time.
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(&read)?;
    let rows = tx
        .query(
            &format!(
                "SELECT session_id, owner, expires_at, epoch, expires_at <= {NOW_MS} AS expired
                 FROM session_leases ORDER BY session_id"
            ),
            &[],
        )
        .await
        .map_err(&read)?;
    let mut survey = LeaseSurvey::default();
    for row in &rows {
        let lease = lease_of(row.get("session_id"), row);
        if row.get::<_, bool>("expired") {
            survey.expired.push(lease);
        } else {
            survey.live.push(lease);
        }
    }
    // Unfinished commands that no live lease answers for: never taken, or taken under a lease
    // that has ended (its holder may have died before logging them).
    let rows = tx
        .query(
            &format!(
                "SELECT DISTINCT c.session_id FROM commands c
                 WHERE c.finished_at IS NULL AND NOT EXISTS (
                     SELECT 1 FROM session_leases l
                     WHERE l.session_id = c.session_id AND l.owner = c.taken_by
                       AND l.epoch = c.taken_epoch AND l.expires_at > {NOW_MS})
                 ORDER BY c.session_id"
            ),
            &[],
        )
        .await
        .map_err(&read)?;
    survey.commands_waiting = rows.iter().map(|row| row.get(0)).collect();
    tx.commit().await.map_err(&read)?;
    Ok(survey)
}

pub(super) async fn submit(
    pool: Pool,
    id: String,
    session: i64,
    body: String,
) -> Result<(), StoreError> {
    let write = pg(StoreError::Write);
    let mut client = pool.get().await.map_err(self::pool(StoreError::Write))?;
    let tx = client.transaction().await.map_err(&write)?;
    tx.execute(
        "INSERT INTO commands(id, session_id, body, created_at) VALUES($1, $2, $3, $4)
         ON CONFLICT(id) DO NOTHING",
        &[&id, &session, &body, &now_ms()],
    )
    .await
    .map_err(&write)?;
    notify(&tx, session, -1).await.map_err(&write)?;
    tx.commit().await.map_err(&write)
}

/// The condition of a take: `owner` ($2) holds a live lease of `epoch` ($3) on the session
/// ($1). `FOR SHARE` holds the lease row until the take commits, so a claim by another replica
/// (which updates that row) waits for it and the new holder sees the commands taken.
fn live_lease() -> String {
    format!(
        "SELECT 1 FROM session_leases
         WHERE session_id = $1 AND owner = $2 AND epoch = $3 AND expires_at > {NOW_MS}
         FOR SHARE"
    )
}

use super::wire_batches::LAST_SEQ;

pub(super) async fn take(
    pool: Pool,
    session: i64,
    owner: String,
    epoch: i64,
) -> Result<Vec<TakenCommand>, StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
    // One statement: concurrent takers each get a disjoint set (rows are locked).
    let rows = client
        .query(
            &format!(
                "WITH lease AS ({})
                 UPDATE commands SET taken_by = $2, taken_epoch = $3, taken_at = $4,
                     taken_after_seq = {LAST_SEQ}
                 WHERE session_id = $1 AND taken_by IS NULL AND EXISTS (SELECT 1 FROM lease)
                 RETURNING created_at, id, body, taken_by, taken_epoch, taken_after_seq",
                live_lease()
            ),
            &[&session, &owner, &epoch, &now_ms()],
        )
        .await
        .map_err(pg(StoreError::Write))?;
    Ok(oldest_first(&rows))
}

pub(super) async fn unfinished(pool: Pool, session: i64) -> Result<Vec<TakenCommand>, StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
    let rows = client
        .query(
            "SELECT created_at, id, body, taken_by, taken_epoch, taken_after_seq FROM commands
             WHERE session_id = $1 AND taken_by IS NOT NULL AND finished_at IS NULL",
            &[&session],
        )
        .await
        .map_err(pg(StoreError::Read))?;
    Ok(oldest_first(&rows))
}

pub(super) async fn retake(
    pool: Pool,
    session: i64,
    owner: String,
    epoch: i64,
    ids: Vec<String>,
) -> Result<Vec<TakenCommand>, StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
    let rows = client
        .query(
            &format!(
                "WITH lease AS ({})
                 UPDATE commands SET taken_by = $2, taken_epoch = $3, taken_at = $4,
                     taken_after_seq = {LAST_SEQ}
                 WHERE session_id = $1 AND id = ANY($5) AND taken_by IS NOT NULL
                   AND finished_at IS NULL AND EXISTS (SELECT 1 FROM lease)
                 RETURNING created_at, id, body, taken_by, taken_epoch, taken_after_seq",
                live_lease()
            ),
            &[&session, &owner, &epoch, &now_ms(), &ids],
        )
        .await
        .map_err(pg(StoreError::Write))?;
    Ok(oldest_first(&rows))
}

pub(super) async fn finish(pool: Pool, session: i64, ids: Vec<String>) -> Result<(), StoreError> {
    let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
    client
        .execute(
            "UPDATE commands SET finished_at = $3
             WHERE session_id = $1 AND id = ANY($2) AND finished_at IS NULL",
            &[&session, &ids, &now_ms()],
        )
        .await
        .map_err(pg(StoreError::Write))?;
    Ok(())
}

/// A replica id as both stores keep it.
pub(super) fn owner_text(owner: &str) -> String {
    display_text(owner).into_owned()
}
