//! The SQLite store's leases and commands (issue 17). One server uses a SQLite file, so these
//! matter little here, but they mean the same as on PostgreSQL (the conformance suite runs the
//! same cases); the time is this machine's clock.

use rusqlite::{OptionalExtension, Row, Transaction, TransactionBehavior, params};

use super::convert::{read_error, write_error};
use super::wire_batches::LAST_SEQ;
use super::{SqliteStore, lock};
use crate::types::{Lease, LeaseSurvey, StoreError, TakenCommand};
use crate::types::{display_text, now_ms};

fn lease_of(row: &Row<'_>) -> rusqlite::Result<Lease> {
    Ok(Lease {
        session: row.get("session_id")?,
        owner: row.get("owner")?,
        expires_at: row.get("expires_at")?,
        epoch: row.get("epoch")?,
    })
}

const COMMAND_COLUMNS: &str = "created_at, id, body, taken_by, COALESCE(taken_epoch, 0) AS epoch,
    COALESCE(taken_after_seq, 0) AS after_seq";

fn taken_of(row: &Row<'_>) -> rusqlite::Result<(i64, TakenCommand)> {
    Ok((
        row.get("created_at")?,
        TakenCommand {
            id: row.get("id")?,
            body: row.get("body")?,
            taken_by: row.get("taken_by")?,
            epoch: row.get("epoch")?,
            after_seq: row.get("after_seq")?,
        },
    ))
}

fn oldest_first(mut taken: Vec<(i64, TakenCommand)>) -> Vec<TakenCommand> {
    taken.sort_by(|a, b| (a.0, &a.1.id).cmp(&(b.0, &b.1.id)));
    taken.into_iter().map(|(_, command)| command).collect()
}

/// Whether `owner` holds a live lease of `epoch` on `session`.
fn holds(tx: &Transaction<'_>, session: i64, owner: &str, epoch: i64) -> rusqlite::Result<bool> {
    tx.query_row(
        "SELECT COUNT(*) FROM session_leases
         WHERE session_id = ?1 AND owner = ?2 AND epoch = ?3 AND expires_at > ?4",
        params![session, display_text(owner), epoch, now_ms()],
        |row| row.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

impl SqliteStore {
    pub(super) fn claim(&self, session: i64, owner: &str, ttl: i64) -> Result<Lease, StoreError> {
        let now = now_ms();
        let mut writer = lock(&self.writer);
        // Immediate: another process on the same file waits rather than racing the claim.
        let tx = writer
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(write_error)?;
        let epoch: i64 = tx
            .query_row(
                "INSERT INTO meta(key, value) VALUES('lease_epoch', '1')
                 ON CONFLICT(key) DO UPDATE SET value = CAST(meta.value AS INTEGER) + 1
                 RETURNING CAST(value AS INTEGER)",
                [],
                |row| row.get(0),
            )
            .map_err(write_error)?;
        tx.execute(
            "INSERT INTO session_leases(session_id, owner, expires_at, epoch) VALUES(?1, ?2, ?3, ?5)
             ON CONFLICT(session_id) DO UPDATE
             SET owner = excluded.owner, expires_at = excluded.expires_at, epoch = excluded.epoch
             WHERE session_leases.owner = excluded.owner OR session_leases.expires_at <= ?4",
            params![session, display_text(owner), now.saturating_add(ttl), now, epoch],
        )
        .map_err(write_error)?;
        let lease = tx
            .query_row(
                "SELECT session_id, owner, expires_at, epoch FROM session_leases
                 WHERE session_id = ?1",
                params![session],
                lease_of,
            )
            .map_err(write_error)?;
        tx.commit().map_err(write_error)?;
        Ok(lease)
    }

    pub(super) fn renew(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
        ttl: i64,
    ) -> Result<Option<Lease>, StoreError> {
        let mut writer = lock(&self.writer);
        let tx = writer
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(write_error)?;
        tx.execute(
            "UPDATE session_leases SET expires_at = ?4
             WHERE session_id = ?1 AND owner = ?2 AND epoch = ?3",
            params![
                session,
                display_text(owner),
                epoch,
                now_ms().saturating_add(ttl)
            ],
        )
        .map_err(write_error)?;
        let lease = tx
            .query_row(
                "SELECT session_id, owner, expires_at, epoch FROM session_leases
                 WHERE session_id = ?1",
                params![session],
                lease_of,
            )
            .optional()
            .map_err(write_error)?;
        tx.commit().map_err(write_error)?;
        Ok(lease)
    }

    pub(super) fn release(&self, session: i64, owner: &str) -> Result<bool, StoreError> {
        let deleted = lock(&self.writer)
            .execute(
                "DELETE FROM session_leases WHERE session_id = ?1 AND owner = ?2",
                params![session, display_text(owner)],
            )
            .map_err(write_error)?;
        Ok(deleted > 0)
    }

    pub(super) fn all_leases(&self) -> Result<Vec<Lease>, StoreError> {
        let reader = lock(&self.reader);
        let mut statement = reader
            .prepare_cached(
                "SELECT session_id, owner, expires_at, epoch FROM session_leases
                 ORDER BY session_id",
            )
            .map_err(read_error)?;
        let rows = statement.query_map([], lease_of).map_err(read_error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(read_error)
    }

    pub(super) fn survey(&self) -> Result<LeaseSurvey, StoreError> {
        let now = now_ms();
        let mut reader = lock(&self.reader);
        // One read transaction: both answers describe the same moment.
        let tx = reader.transaction().map_err(read_error)?;
        let mut survey = LeaseSurvey::default();
        {
            let mut statement = tx
                .prepare_cached(
                    "SELECT session_id, owner, expires_at, epoch FROM session_leases
                     ORDER BY session_id",
                )
                .map_err(read_error)?;
            let rows = statement.query_map([], lease_of).map_err(read_error)?;
            for lease in rows {
                let lease = lease.map_err(read_error)?;
                if lease.expires_at <= now {
                    survey.expired.push(lease);
                } else {
                    survey.live.push(lease);
                }
            }
            let mut statement = tx
                .prepare_cached(
                    "SELECT DISTINCT c.session_id FROM commands c
                     WHERE c.finished_at IS NULL AND NOT EXISTS (
                         SELECT 1 FROM session_leases l
                         WHERE l.session_id = c.session_id AND l.owner = c.taken_by
                           AND l.epoch = c.taken_epoch AND l.expires_at > ?1)
                     ORDER BY c.session_id",
                )
                .map_err(read_error)?;
            let rows = statement
                .query_map(params![now], |row| row.get::<_, i64>(0))
                .map_err(read_error)?;
            survey.commands_waiting = rows.collect::<Result<Vec<_>, _>>().map_err(read_error)?;
        }
        tx.commit().map_err(read_error)?;
        Ok(survey)
    }

    pub(super) fn submit(&self, id: &str, session: i64, body: &str) -> Result<(), StoreError> {
        lock(&self.writer)
            .execute(
                "INSERT INTO commands(id, session_id, body, created_at) VALUES(?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO NOTHING",
                params![id, session, body, now_ms()],
            )
            .map_err(write_error)?;
        Ok(())
    }

    /// Takes the commands of `session` that `which` selects (`?5`: ids as a JSON array, when
    /// given), while `owner` holds a live lease of `epoch`.
    fn take_where(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
        which: &str,
        ids: Option<String>,
    ) -> Result<Vec<TakenCommand>, StoreError> {
        let mut writer = lock(&self.writer);
        let tx = writer
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(write_error)?;
        if !holds(&tx, session, owner, epoch).map_err(write_error)? {
            return Ok(Vec::new());
        }
        let taken = {
            let mut statement = tx
                .prepare_cached(&format!(
                    "UPDATE commands SET taken_by = ?2, taken_epoch = ?3, taken_at = ?4,
                         taken_after_seq = {LAST_SEQ}
                     WHERE session_id = ?1 AND {which}
                     RETURNING {COMMAND_COLUMNS}"
                ))
                .map_err(write_error)?;
            let rows = statement
                .query_map(
                    params![session, display_text(owner), epoch, now_ms(), ids],
                    taken_of,
                )
                .map_err(write_error)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(write_error)?
        };
        tx.commit().map_err(write_error)?;
        Ok(oldest_first(taken))
    }

    pub(super) fn take(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
    ) -> Result<Vec<TakenCommand>, StoreError> {
        self.take_where(
            session,
            owner,
            epoch,
            "taken_by IS NULL AND ?5 IS NULL",
            None,
        )
    }

    pub(super) fn retake(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
        ids: &[String],
    ) -> Result<Vec<TakenCommand>, StoreError> {
        let ids = serde_json::to_string(ids).map_err(|e| StoreError::Write(e.to_string()))?;
        self.take_where(
            session,
            owner,
            epoch,
            "taken_by IS NOT NULL AND finished_at IS NULL
             AND id IN (SELECT value FROM json_each(?5))",
            Some(ids),
        )
    }

    pub(super) fn unfinished(&self, session: i64) -> Result<Vec<TakenCommand>, StoreError> {
        let reader = lock(&self.reader);
        let mut statement = reader
            .prepare_cached(&format!(
                "SELECT {COMMAND_COLUMNS} FROM commands
                 WHERE session_id = ?1 AND taken_by IS NOT NULL AND finished_at IS NULL"
            ))
            .map_err(read_error)?;
        let rows = statement
            .query_map(params![session], taken_of)
            .map_err(read_error)?;
        let taken = rows.collect::<Result<Vec<_>, _>>().map_err(read_error)?;
        Ok(oldest_first(taken))
    }

    pub(super) fn finish(&self, session: i64, ids: &[String]) -> Result<(), StoreError> {
        let ids = serde_json::to_string(ids).map_err(|e| StoreError::Write(e.to_string()))?;
        lock(&self.writer)
            .execute(
                "UPDATE commands SET finished_at = ?3
                 WHERE session_id = ?1 AND finished_at IS NULL
                   AND id IN (SELECT value FROM json_each(?2))",
                params![session, ids, now_ms()],
            )
            .map_err(write_error)?;
        Ok(())
    }
}
