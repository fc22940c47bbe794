//! Who acts: the user a front end serves (`spindle serve --users`), set around the calls it makes
//! on a session ([`acting_as`]). The session's task then notes the author of each prompt,
//! permission answer and action in the log (`feed.rs` `author_note`), so every replica, and the
//! session rebuilt after a restart, knows who did what.
//!
//! A task-local value rather than a parameter of every call: the calls stay as they are for the
//! front ends that have no users (chat, `/acp`, the page without `--users`).

use std::future::Future;
use std::sync::Arc;

tokio::task_local! {
    static ACTING: Arc<str>;
}

/// Runs `work` with `user` as the author of what it asks of sessions (nobody when `None`).
pub async fn acting_as<F: Future>(user: Option<&str>, work: F) -> F::Output {
    match user {
        Some(user) => ACTING.scope(Arc::from(user), work).await,
        None => work.await,
    }
}

/// [`acting_as`] with an owned name (for a spawned task: see [`current_author`]).
pub async fn acting_as_owned<F: Future>(user: Option<String>, work: F) -> F::Output {
    acting_as(user.as_deref(), work).await
}

/// The user acting in the current task, for work it spawns ([`acting_as_owned`]).
pub fn current_author() -> Option<String> {
    current()
}

/// The user acting in the current task, if any.
pub(crate) fn current() -> Option<String> {
    ACTING.try_with(|user| user.to_string()).ok()
}

/// `command` for the session's task, on behalf of the acting user if there is one.
pub(crate) fn authored(command: crate::task::Command) -> crate::task::Command {
    match current() {
        Some(author) => crate::task::Command::As {
            author,
            command: Box::new(command),
        },
        None => command,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_user_is_known_inside_the_scope_only() {
        assert_eq!(current(), None);
        let inside = acting_as(Some("alice"), async { current() }).await;
        assert_eq!(inside.as_deref(), Some("alice"));
        assert_eq!(acting_as(None, async { current() }).await, None);
        assert_eq!(current(), None);
    }
}
