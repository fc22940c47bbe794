//! PostgreSQL's transcripts in pieces (`crate::replay_save`): the shell in `transcripts`, the
//! changed items of its lists in `transcript_items` (one statement per list, the items as
//! arrays), in the save's transaction. The texts are JSON that `serde_json` wrote, without
//! U+0000, which `text` refuses (it escapes control characters): the offsets hold.

use deadpool_postgres::{Client, Transaction};

use super::convert::pg;
use crate::replay_save::{ReplaySave, assemble, lists_column, parse_lists};
use crate::types::StoreError;

/// Writes `save` for `session` in `tx`.
pub(super) async fn save(
    tx: &Transaction<'_>,
    session: i64,
    upto_seq: i64,
    save: &ReplaySave,
    now: i64,
) -> Result<(), StoreError> {
    let write = pg(StoreError::Write);
    tx.execute(
        "INSERT INTO transcripts(session_id, upto_seq, replay_json, lists, updated_at)
         VALUES($1, $2, $3, $4, $5)
         ON CONFLICT(session_id) DO UPDATE SET upto_seq = excluded.upto_seq,
             replay_json = excluded.replay_json, lists = excluded.lists,
             updated_at = excluded.updated_at",
        &[&session, &upto_seq, &save.shell, &lists_column(save), &now],
    )
    .await
    .map_err(&write)?;
    if save.lists.is_empty() {
        tx.execute(
            "DELETE FROM transcript_items WHERE session_id = $1",
            &[&session],
        )
        .await
        .map_err(&write)?;
        return Ok(());
    }
    for (list, items) in save.lists.iter().enumerate() {
        let list = i32::try_from(list).unwrap_or(i32::MAX);
        let count = i64::try_from(items.count).unwrap_or(i64::MAX);
        tx.execute(
            "DELETE FROM transcript_items WHERE session_id = $1 AND list = $2 AND position >= $3",
            &[&session, &list, &count],
        )
        .await
        .map_err(&write)?;
        let changed = items.changed.iter().filter(|(p, _)| *p < items.count);
        let (positions, jsons): (Vec<i64>, Vec<&str>) = changed
            .map(|(p, json)| (i64::try_from(*p).unwrap_or(i64::MAX), json.as_str()))
            .unzip();
        if positions.is_empty() {
            continue;
        }
        tx.execute(
            "INSERT INTO transcript_items(session_id, list, position, json)
             SELECT $1, $2, position, json FROM UNNEST($3::BIGINT[], $4::TEXT[]) AS t(position, json)
             ON CONFLICT(session_id, list, position) DO UPDATE SET json = excluded.json",
            &[&session, &list, &positions, &jsons],
        )
        .await
        .map_err(&write)?;
    }
    Ok(())
}

/// The saved text of `session`, if any.
pub(super) async fn read(client: &Client, session: i64) -> Result<Option<String>, StoreError> {
    let read = pg(StoreError::Read);
    let row = client
        .query_opt(
            "SELECT replay_json, lists FROM transcripts WHERE session_id = $1",
            &[&session],
        )
        .await
        .map_err(&read)?;
    let Some(row) = row else {
        return Ok(None);
    };
    let shell: String = row.get(0);
    let Some(lists) = row.get::<_, Option<String>>(1) else {
        return Ok(Some(shell));
    };
    let lists = parse_lists(&lists)?;
    let rows = client
        .query(
            "SELECT list, position, json FROM transcript_items WHERE session_id = $1
             ORDER BY list, position",
            &[&session],
        )
        .await
        .map_err(&read)?;
    let rows = rows
        .iter()
        .map(|row| (i64::from(row.get::<_, i32>(0)), row.get(1), row.get(2)));
    assemble(&shell, &lists, rows).map(Some)
}
