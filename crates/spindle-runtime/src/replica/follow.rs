//! Fan-out across replicas: this replica follows what the others commit.
//!
//! The store announces each commit ([`spindle_store::Store::changes`]: PostgreSQL
//! `LISTEN`/`NOTIFY`, carrying the session and its last `seq`); this task reads the new lines
//! from the log and feeds them through the session's own engine, exactly as a rebuild does, so
//! an observer here gets the same render ops as one on the owner, with this replica's event ids
//! (resume by `Last-Event-ID` works against the replica the observer stays on). Notices that
//! arrive together are read in one pass per session; a command notice is passed on as it is.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use spindle_store::LogChange;
use tokio::sync::mpsc;

use crate::registry::SessionManager;

/// Follows `changes` until the store stops sending them, and watches for sessions to take over
/// (a store with changes is one several replicas share).
pub(crate) fn spawn(manager: Arc<SessionManager>, mut changes: mpsc::UnboundedReceiver<LogChange>) {
    super::takeover::spawn(manager.clone());
    tokio::spawn(async move {
        while let Some(first) = changes.recv().await {
            let mut batch = vec![first];
            while let Ok(change) = changes.try_recv() {
                batch.push(change);
            }
            let batch = coalesce(batch);
            let manager = manager.clone();
            let done = tokio::task::spawn_blocking(move || {
                for change in batch {
                    manager
                        .replica
                        .counters
                        .notices
                        .fetch_add(1, Ordering::Relaxed);
                    // A failed read is made up by the session's next notice (it reads from
                    // its last line) or by the resync after the listener reconnects.
                    if let Err(error) = manager.follow(change) {
                        tracing::warn!(session = change.session, "cannot follow: {error}");
                    }
                }
            })
            .await;
            if let Err(error) = done {
                tracing::error!("follower stopped: {error}");
            }
        }
    });
}

/// One change per session (the highest seq), or a single resync when one is among them.
fn coalesce(batch: Vec<LogChange>) -> Vec<LogChange> {
    if batch.contains(&LogChange::RESYNC) {
        return vec![LogChange::RESYNC];
    }
    let mut latest: BTreeMap<i64, i64> = BTreeMap::new();
    let mut commands: Vec<i64> = Vec::new();
    let mut renames: Vec<i64> = Vec::new();
    let mut deletes: Vec<i64> = batch
        .iter()
        .filter(|c| c.is_delete())
        .map(|c| c.session)
        .collect();
    deletes.sort_unstable();
    deletes.dedup();
    for change in batch {
        if deletes.contains(&change.session) {
            // Nothing of a deleted session is read again.
            continue;
        }
        if change.is_rename() {
            if !renames.contains(&change.session) {
                renames.push(change.session);
            }
            continue;
        }
        if change.is_command() {
            // Never folded into a line notice: the owner must hear of it.
            if !commands.contains(&change.session) {
                commands.push(change.session);
            }
            continue;
        }
        let seq = latest.entry(change.session).or_insert(change.seq);
        *seq = (*seq).max(change.seq);
    }
    latest
        .into_iter()
        .map(|(session, seq)| LogChange { session, seq })
        .chain(commands.into_iter().map(LogChange::command))
        .chain(renames.into_iter().map(LogChange::renamed))
        .chain(deletes.into_iter().map(LogChange::deleted))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_coalesced_per_session_and_a_resync_covers_all() {
        let change = |session, seq| LogChange { session, seq };
        assert_eq!(
            coalesce(vec![change(2, 5), change(1, 3), change(2, 9), change(2, 7)]),
            vec![change(1, 3), change(2, 9)]
        );
        // A command notice survives among line notices of its session.
        assert_eq!(
            coalesce(vec![
                change(2, 5),
                LogChange::command(2),
                change(2, 9),
                LogChange::command(2)
            ]),
            vec![change(2, 9), LogChange::command(2)]
        );
        // A rename is passed on; a delete drops everything else of its session.
        assert_eq!(
            coalesce(vec![
                change(2, 5),
                LogChange::renamed(2),
                change(3, 4),
                LogChange::command(3),
                LogChange::renamed(3),
                LogChange::deleted(3),
            ]),
            vec![change(2, 5), LogChange::renamed(2), LogChange::deleted(3)]
        );
        assert_eq!(
            coalesce(vec![change(2, 5), LogChange::RESYNC]),
            vec![LogChange::RESYNC]
        );
    }
}
