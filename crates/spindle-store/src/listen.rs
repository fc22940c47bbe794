//! Changes announced between servers sharing a PostgreSQL database (issue #17): every commit of
//! wire-log lines, and every new session, sends `NOTIFY spindle_log` in its own transaction (so
//! only committed lines are announced), carrying `SESSION:LAST_SEQ`. A replica listens on one
//! connection of its own and reads the lines themselves from the log: the log stays the only
//! source of truth, and a lost notification costs only latency, never a line, because each
//! (re)connection announces [`LogChange::RESYNC`] to make the listener read every session again.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, NoTls};

/// The notification channel.
pub(crate) const CHANNEL: &str = "spindle_log";

/// Something changed in the database another server wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogChange {
    /// The session (0 with [`LogChange::RESYNC`]).
    pub session: i64,
    /// The highest `seq` committed (0: the session was just created; -1: a command waits;
    /// -2: the session was renamed; -3: it was deleted).
    pub seq: i64,
}

impl LogChange {
    /// Anything may have changed (the listener (re)connected; notifications may have been
    /// missed): read every session's log again from where it was.
    pub const RESYNC: LogChange = LogChange { session: 0, seq: 0 };

    /// A command waits for the session's owner ([`crate::Store::submit_command`]).
    pub fn command(session: i64) -> LogChange {
        LogChange { session, seq: -1 }
    }

    /// Whether this announces a command rather than lines.
    pub fn is_command(&self) -> bool {
        self.seq == -1
    }

    /// The session got a new title ([`crate::Store::set_title`]).
    pub fn renamed(session: i64) -> LogChange {
        LogChange { session, seq: -2 }
    }

    /// Whether this announces a new title rather than lines.
    pub fn is_rename(&self) -> bool {
        self.seq == -2
    }

    /// The session was deleted ([`crate::Store::delete_session`]).
    pub fn deleted(session: i64) -> LogChange {
        LogChange { session, seq: -3 }
    }

    /// Whether this announces a deleted session rather than lines.
    pub fn is_delete(&self) -> bool {
        self.seq == -3
    }

    /// Reads a notification's payload, `SESSION:SEQ`.
    pub(crate) fn parse(payload: &str) -> Option<LogChange> {
        let (session, seq) = payload.split_once(':')?;
        Some(LogChange {
            session: session.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

/// The payload announcing `seq` of `session`.
pub(crate) fn payload(session: i64, seq: i64) -> String {
    format!("{session}:{seq}")
}

/// How long a lost listening connection waits before connecting again.
const RECONNECT: Duration = Duration::from_millis(500);

/// Listens on a connection of its own until `changes` is dropped, connecting again whenever the
/// connection is lost.
pub(crate) async fn listen(
    config: tokio_postgres::Config,
    changes: mpsc::UnboundedSender<LogChange>,
) {
    while !changes.is_closed() {
        if let Ok((client, mut connection)) = config.connect(NoTls).await {
            let forward = changes.clone();
            // The connection's messages (and the LISTEN's answer) are read by this task.
            let reader = tokio::spawn(async move {
                while let Some(Ok(message)) =
                    std::future::poll_fn(|cx| connection.poll_message(cx)).await
                {
                    if let AsyncMessage::Notification(note) = message
                        && let Some(change) = LogChange::parse(note.payload())
                        && forward.send(change).is_err()
                    {
                        return;
                    }
                }
            });
            if client
                .batch_execute(&format!("LISTEN {CHANNEL}"))
                .await
                .is_ok()
            {
                let _ = changes.send(LogChange::RESYNC);
                tokio::select! {
                    _ = reader => {}
                    () = changes.closed() => return,
                }
            } else {
                reader.abort();
            }
        }
        tokio::time::sleep(RECONNECT).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_bad_ones_are_ignored() {
        assert_eq!(
            LogChange::parse(&payload(7, 42)),
            Some(LogChange {
                session: 7,
                seq: 42
            })
        );
        assert_eq!(LogChange::parse("7"), None);
        assert_eq!(LogChange::parse("x:1"), None);
    }
}
