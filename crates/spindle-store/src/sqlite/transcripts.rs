//! SQLite's transcripts in pieces (`crate::replay_save`): the shell in `transcripts`, the
//! changed items of its lists in `transcript_items`, both in the save's transaction. The texts
//! are JSON that `serde_json` wrote: no U+0000 (it escapes control characters), so they are
//! stored as they are and the offsets hold.

use rusqlite::{OptionalExtension, Transaction, params};

use super::convert::{read_error, write_error};
use crate::replay_save::{ReplaySave, assemble, lists_column, parse_lists};
use crate::types::StoreError;

/// Writes `save` for `session` in `tx`.
pub(super) fn save(
    tx: &Transaction<'_>,
    session: i64,
    upto_seq: i64,
    save: &ReplaySave,
    now: i64,
) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT INTO transcripts(session_id, upto_seq, replay_json, lists, updated_at)
         VALUES(?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(session_id) DO UPDATE SET upto_seq = excluded.upto_seq,
             replay_json = excluded.replay_json, lists = excluded.lists,
             updated_at = excluded.updated_at",
    )
    .and_then(|mut upsert| {
        upsert.execute(params![
            session,
            upto_seq,
            save.shell,
            lists_column(save),
            now
        ])
    })
    .map_err(write_error)?;
    if save.lists.is_empty() {
        tx.prepare_cached("DELETE FROM transcript_items WHERE session_id = ?1")
            .and_then(|mut delete| delete.execute(params![session]))
            .map_err(write_error)?;
        return Ok(());
    }
    let mut drop_after = tx
        .prepare_cached(
            "DELETE FROM transcript_items WHERE session_id = ?1 AND list = ?2 AND position >= ?3",
        )
        .map_err(write_error)?;
    let mut upsert = tx
        .prepare_cached(
            "INSERT INTO transcript_items(session_id, list, position, json) VALUES(?1, ?2, ?3, ?4)
             ON CONFLICT(session_id, list, position) DO UPDATE SET json = excluded.json",
        )
        .map_err(write_error)?;
    for (list, items) in save.lists.iter().enumerate() {
        drop_after
            .execute(params![session, list, items.count])
            .map_err(write_error)?;
        for (position, json) in items.changed.iter().filter(|(p, _)| *p < items.count) {
            upsert
                .execute(params![session, list, position, json])
                .map_err(write_error)?;
        }
    }
    Ok(())
}

/// The saved text of `session`, if any.
pub(super) fn read(
    reader: &rusqlite::Connection,
    session: i64,
) -> Result<Option<String>, StoreError> {
    let row: Option<(String, Option<String>)> = reader
        .query_row(
            "SELECT replay_json, lists FROM transcripts WHERE session_id = ?1",
            params![session],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(read_error)?;
    let Some((shell, lists)) = row else {
        return Ok(None);
    };
    let Some(lists) = lists else {
        return Ok(Some(shell));
    };
    let lists = parse_lists(&lists)?;
    let mut statement = reader
        .prepare_cached(
            "SELECT list, position, json FROM transcript_items WHERE session_id = ?1
             ORDER BY list, position",
        )
        .map_err(read_error)?;
    let rows = statement
        .query_map(params![session], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .map_err(read_error)?
        .collect::<Result<Vec<(i64, i64, String)>, _>>()
        .map_err(read_error)?;
    assemble(&shell, &lists, rows).map(Some)
}
