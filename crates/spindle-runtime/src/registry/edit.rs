//! Renaming and deleting sessions (issue #25). A title is one row of the store, read by every
//! replica for its list; a delete stops the session's task here, then deletes the session's rows
//! in one transaction. The store announces both to the other replicas, which follow
//! ([`SessionManager::follow`]): they tell their pages to list the sessions again, and stop the
//! task (and the agent, on the replica that runs it) of a deleted session. A deleted id is never
//! served again by this process.

use tokio::sync::oneshot;

use super::{LiveSession, MAX_TITLE_CHARS, SessionManager};
use crate::error::SessionError;
use crate::page_ops::PageOp;
use crate::sync::lock;
use crate::task::Command;

impl SessionManager {
    /// Renames a session. The title is the store's (one row every replica reads for its list);
    /// the store announces it to the other replicas, whose pages refresh their lists too.
    pub async fn rename(&self, id: i64, title: &str) -> Result<(), SessionError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(SessionError::invalid_params("the title is empty"));
        }
        if title.chars().count() > MAX_TITLE_CHARS {
            return Err(SessionError::invalid_params(format!(
                "the title is longer than {MAX_TITLE_CHARS} characters"
            )));
        }
        let not_found = || SessionError::NotFound(format!("no session {id}"));
        if self.is_deleted(id) {
            return Err(not_found());
        }
        let found = self
            .store
            .off_worker(|| self.store.set_title(id, title))
            .map_err(SessionError::storage)?;
        if !found {
            return Err(not_found());
        }
        if let Some(live) = self.get_now(id) {
            let _ = live.commands.send(Command::Renamed).await;
        }
        self.sessions_changed();
        Ok(())
    }

    /// Deletes a session: its task stops here (its agent with it, the lease released), then
    /// the store deletes everything it holds for it in one transaction. Other replicas hear of
    /// the delete from the store and stop theirs ([`SessionManager::follow`]). What the agent
    /// keeps of the session on its side (its own history) is the agent's and stays.
    pub async fn delete(&self, id: i64) -> Result<(), SessionError> {
        let not_found = || SessionError::NotFound(format!("no session {id}"));
        if self.is_deleted(id) {
            return Err(not_found());
        }
        let stored = self
            .store
            .off_worker(|| self.store.session(id))
            .map_err(SessionError::storage)?;
        if stored.is_none() && self.get_now(id).is_none() {
            return Err(not_found());
        }
        let live = {
            let _starting = lock(&self.starting);
            lock(&self.deleted).insert(id);
            lock(&self.sessions).remove(&id)
        };
        if let Some(live) = live {
            live.close();
            let (reply, done) = oneshot::channel();
            if live.commands.send(Command::Stop(reply)).await.is_ok() {
                let _ = done.await;
            }
        }
        self.store
            .off_worker(|| self.store.delete_session(id))
            .map_err(SessionError::storage)?;
        if let (Some(base), Some(stored)) = (&self.settings.checkpoints, &stored) {
            // The checkpoints this replica kept of it go too (another replica's stay on its disk).
            let dir = crate::checkpoints::session_dir(base, id, stored.created_at);
            let removed =
                tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                });
            if let Ok(Err(error)) = removed.await {
                tracing::warn!(session = id, "its checkpoints were not deleted: {error}");
            }
        }
        self.sessions_changed();
        Ok(())
    }

    /// Whether the session was deleted while this replica ran.
    pub(super) fn is_deleted(&self, id: i64) -> bool {
        lock(&self.deleted).contains(&id)
    }

    /// Another replica deleted the session: its task here stops (its agent too, when this
    /// replica ran it). Blocking: called by the follower, off the async threads.
    pub(super) fn forget_deleted(&self, id: i64) {
        let live = {
            let _starting = lock(&self.starting);
            lock(&self.deleted).insert(id);
            lock(&self.sessions).remove(&id)
        };
        if let Some(live) = live {
            live.close();
            let (reply, _done) = oneshot::channel();
            let _ = live.commands.blocking_send(Command::Stop(reply));
        }
    }

    /// Tells every page watching a session here that the list of sessions changed (a rename, a
    /// delete): each asks for the list again.
    pub(super) fn sessions_changed(&self) {
        for (_, live) in self.live_sessions() {
            lock(&live.core).publish_note(PageOp::WebSession);
        }
    }
}

impl LiveSession {
    /// The session is deleted: its pages hear that the list changed (the session left it),
    /// then its streams end.
    fn close(&self) {
        let mut core = lock(&self.core);
        core.publish_note(PageOp::WebSession);
        core.close_observers();
    }
}
