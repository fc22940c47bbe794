//! The agent child process of `spindle chat`.
//!
//! Why not `spindle_protocol::transport::spawn_child`: the chat reads Ctrl-C
//! itself (it means "cancel the turn"), and the terminal delivers SIGINT to
//! the whole foreground process group. The agent therefore runs in a process
//! group of its own, so only the chat sees the keypress and the agent hears
//! about it as `session/cancel`.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spindle_protocol::transport::{Connection, ConnectionOptions};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::watch;

/// How many of the agent's last stderr lines a crash report shows.
const STDERR_TAIL_LINES: usize = 20;
/// Longest stderr line kept, in bytes (the rest is cut).
const STDERR_LINE_LIMIT: usize = 2048;

/// A running agent: its exit status once known, and the tail of its stderr.
#[derive(Debug, Clone)]
pub struct AgentProcess {
    exit: watch::Receiver<Option<Result<ExitStatus, String>>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl AgentProcess {
    /// Waits up to `patience` for the exit status; `None` if still running.
    pub async fn exit_status(&self, patience: Duration) -> Option<Result<ExitStatus, String>> {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout(patience, exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => status.clone(),
            _ => None,
        }
    }

    /// The last lines the agent wrote to stderr, oldest first.
    pub fn stderr_tail(&self) -> Vec<String> {
        let tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        tail.iter().cloned().collect()
    }
}

/// Starts `command` with piped stdio in its own process group. The child is
/// killed when the runtime shuts down.
pub fn spawn_agent(command: &[OsString]) -> std::io::Result<(Connection, AgentProcess)> {
    let Some((program, args)) = command.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "empty agent command",
        ));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn()?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("agent stdio was not piped"));
    };
    let connection = Connection::from_io_with(stdout, stdin, ConnectionOptions::default());
    let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
    let reader = tokio::spawn(read_stderr(stderr, stderr_tail.clone()));
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let status = child.wait().await.map_err(|e| e.to_string());
        // The crash report wants the agent's last words: let the reader
        // drain, without hanging on a grandchild that keeps stderr open.
        let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
        let _ = exit_tx.send(Some(status));
    });
    Ok((
        connection,
        AgentProcess {
            exit: exit_rx,
            stderr_tail,
        },
    ))
}

async fn read_stderr(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bounded: an endless line is read in pieces, each kept cut short.
        match (&mut reader)
            .take(64 * 1024)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut text = String::from_utf8_lossy(&line).trim_end().to_owned();
        if text.len() > STDERR_LINE_LIMIT {
            let mut cut = STDERR_LINE_LIMIT;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
        }
        tracing::debug!(target: "spindle::chat::agent_stderr", "{text}");
        let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(text);
    }
}
