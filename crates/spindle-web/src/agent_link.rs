//! The pipe to one agent child process: JSON-RPC messages in both directions as lines of text,
//! nothing more. ACP meaning is given to them by the session task and the engine.
//!
//! The process and its framing belong to `spindle-protocol` ([`spawn_child`]); this module turns
//! its messages into the text lines the wire log stores and the engine reads, in the order the
//! session task processes them, so that the log replays into the same transcript.

use std::ffi::OsString;
use std::sync::Arc;

use spindle_protocol::{
    ChildHandle, ConnectionOptions, Frame, Incoming, SpawnOptions, decode_line, spawn_child,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// A line longer than this is dropped (and reported) instead of buffered without bound.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Bytes of agent lines that may wait for the session task. When they are used up the reader
/// stops reading, the pipe fills and the agent blocks: memory stays bounded even for an agent
/// that writes huge lines faster than they can be committed.
const QUEUED_BYTES: usize = 64 << 20;

/// What the link reports.
#[derive(Debug)]
pub enum LinkEvent {
    /// One message the agent wrote, as one line of JSON, with its share of the queue budget
    /// (released when the event is dropped).
    Line(String, QueueShare),
    /// A line that is not a JSON-RPC message (too long, not JSON, not UTF-8) was dropped.
    Dropped(String),
    /// The agent's output ended (it exited or closed the pipe).
    Closed(String),
}

/// A line's share of the link's byte budget.
#[derive(Debug)]
pub struct QueueShare(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// A running agent child process.
#[derive(Debug)]
pub struct AgentLink {
    writer: mpsc::UnboundedSender<String>,
    /// Messages and lifecycle events from the agent.
    pub events: mpsc::Receiver<LinkEvent>,
    child: ChildHandle,
}

impl AgentLink {
    /// Starts `command`; the agent's stderr goes to the log and its tail is kept for reports.
    pub fn spawn(command: &[OsString], queue: usize) -> std::io::Result<AgentLink> {
        let options = SpawnOptions {
            connection: ConnectionOptions {
                max_line_bytes: MAX_LINE_BYTES,
                channel_capacity: 4,
            },
            ..SpawnOptions::default()
        };
        let (connection, child) = spawn_child(command, options)?;
        let sender = connection.sender;
        let mut receiver = connection.receiver;
        let (event_tx, events) = mpsc::channel(queue.max(1));
        let (writer, mut write_rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(line) = write_rx.recv().await {
                // The session task builds every line it sends; one that does not decode is a bug
                // there, reported rather than sent.
                match decode_line(&line) {
                    Ok(Frame::Single(message)) => {
                        if sender.send(message).await.is_err() {
                            break;
                        }
                    }
                    Ok(Frame::Batch(_)) | Err(_) => {
                        tracing::error!("spindle-web built an invalid JSON-RPC line: {line}");
                    }
                }
            }
        });
        tokio::spawn(async move {
            let budget = Arc::new(Semaphore::new(QUEUED_BYTES));
            loop {
                let event = match receiver.recv().await {
                    Some(Incoming::Message(message)) => {
                        let line = message.to_json();
                        // Lines are at most MAX_LINE_BYTES, below the budget, and the semaphore
                        // is never closed: the acquisition only waits.
                        let bytes = u32::try_from(line.len().max(1)).unwrap_or(u32::MAX);
                        let share = budget.clone().acquire_many_owned(bytes).await.ok();
                        LinkEvent::Line(line, QueueShare(share))
                    }
                    Some(Incoming::Malformed { line_number, error }) => LinkEvent::Dropped(
                        format!("agent line {line_number} dropped: {}", error.message),
                    ),
                    Some(Incoming::Closed { reason }) => {
                        let _ = event_tx.send(LinkEvent::Closed(reason.to_string())).await;
                        return;
                    }
                    None => {
                        let _ = event_tx
                            .send(LinkEvent::Closed("the agent closed its output".into()))
                            .await;
                        return;
                    }
                };
                // A full queue waits here: the agent's pipe fills and the agent blocks, which
                // bounds memory; browsers are never on this path (they have their own queues).
                if event_tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        Ok(AgentLink {
            writer,
            events,
            child,
        })
    }

    /// Queues one line for the agent's stdin. Returns false when the agent is gone.
    pub fn send(&self, line: String) -> bool {
        self.writer.send(line).is_ok()
    }

    /// Kills the child and waits for it.
    pub async fn kill(&mut self) {
        self.child.kill();
        let _ = self.child.wait().await;
    }

    /// How the child ended, if it has, with the last lines it wrote to stderr.
    pub async fn exit_report(&self) -> String {
        let exit = tokio::time::timeout(std::time::Duration::from_secs(2), self.child.wait()).await;
        let mut report = match exit {
            Ok(exit) => exit.to_string(),
            Err(_) => "still running".to_string(),
        };
        let tail = self.child.stderr_tail();
        if let Some(last) = tail.lines().rev().find(|l| !l.trim().is_empty()) {
            report.push_str("; last stderr line: ");
            report.push_str(last);
        }
        report
    }
}

impl Drop for AgentLink {
    fn drop(&mut self) {
        self.child.kill();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    async fn events_of(script: &str) -> Vec<String> {
        let command: Vec<OsString> = vec!["sh".into(), "-c".into(), script.into()];
        let mut link = AgentLink::spawn(&command, 16).unwrap();
        let mut seen = Vec::new();
        while let Some(event) = link.events.recv().await {
            match event {
                LinkEvent::Line(line, _) => seen.push(format!("line {}", line.len())),
                LinkEvent::Dropped(why) => seen.push(format!("dropped {why}")),
                LinkEvent::Closed(_) => {
                    seen.push("closed".into());
                    break;
                }
            }
        }
        seen
    }

    #[tokio::test]
    async fn oversized_and_non_utf8_lines_are_dropped_and_the_link_goes_on() {
        let over = MAX_LINE_BYTES + 10;
        let ok = r#"{"jsonrpc":"2.0","method":"x"}"#;
        let script = format!(
            "printf '%s\\n\\n' '{ok}'; head -c {over} /dev/zero | tr '\\0' x; printf '\\n'; \
             printf '\\377\\376 not utf8\\n'; printf 'not json\\n'; printf '%s\\r\\n' '{ok}'"
        );
        let seen = events_of(&script).await;
        let line = format!("line {}", ok.len());
        assert_eq!(seen.first(), Some(&line), "{seen:?}");
        assert_eq!(seen.last().map(String::as_str), Some("closed"), "{seen:?}");
        assert_eq!(seen[seen.len() - 2], line, "{seen:?}");
        let dropped = seen.iter().filter(|e| e.starts_with("dropped")).count();
        assert_eq!(dropped, 3, "{seen:?}");
    }

    #[tokio::test]
    async fn an_agent_that_cannot_start_is_an_error_not_a_panic() {
        let missing = vec![OsString::from("/nonexistent/spindle-agent-binary")];
        assert!(AgentLink::spawn(&missing, 4).is_err());
        assert!(AgentLink::spawn(&[], 4).is_err());
    }
}
