//! Child processes: [`spawn_child`] starts an agent and speaks JSON-RPC over
//! its stdin/stdout through a [`Connection`]; its stderr goes to `tracing`
//! and its tail is kept for crash reports.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{Notify, watch};

use super::connection::{Connection, ConnectionOptions};

/// Options for [`spawn_child`].
#[derive(Debug, Clone)]
pub struct SpawnOptions {
    /// Working directory of the child (inherited when `None`).
    pub cwd: Option<PathBuf>,
    /// Extra environment variables.
    pub env: Vec<(OsString, OsString)>,
    /// Connection tuning.
    pub connection: ConnectionOptions,
    /// How many of the child's last stderr lines to keep for crash reports.
    pub stderr_tail_lines: usize,
    /// Start the child in a process group of its own (Unix). A terminal sends Ctrl-C's SIGINT
    /// to the whole foreground group; a client that turns Ctrl-C into `session/cancel` (like
    /// `spindle chat`) sets this so the keypress reaches only the client, not the agent.
    pub own_process_group: bool,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        SpawnOptions {
            cwd: None,
            env: Vec::new(),
            connection: ConnectionOptions::default(),
            stderr_tail_lines: 40,
            own_process_group: false,
        }
    }
}

/// Longest stderr line kept in the tail, in bytes.
const STDERR_LINE_LIMIT: usize = 4096;

/// A handle on a spawned child. Cloning shares the same child. The child is
/// killed when the runtime shuts down.
#[derive(Debug, Clone)]
pub struct ChildHandle {
    pid: Option<u32>,
    kill: Arc<Notify>,
    status: watch::Receiver<Option<ChildExit>>,
    tail: Arc<Mutex<VecDeque<String>>>,
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildExit {
    /// The process exited (code or signal).
    Exited(ExitStatus),
    /// Waiting for the process failed.
    WaitFailed(String),
}

impl std::fmt::Display for ChildExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChildExit::Exited(s) => write!(f, "{s}"),
            ChildExit::WaitFailed(e) => write!(f, "wait failed: {e}"),
        }
    }
}

impl ChildHandle {
    /// The operating-system process id, if the child was still running when
    /// spawned.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Asks the child to be killed (SIGKILL). Returns at once; use
    /// [`ChildHandle::wait`] for the exit.
    pub fn kill(&self) {
        self.kill.notify_one();
    }

    /// Waits for the child to end and for its stderr to be read.
    pub async fn wait(&self) -> ChildExit {
        let mut rx = self.status.clone();
        loop {
            if let Some(s) = rx.borrow_and_update().clone() {
                return s;
            }
            if rx.changed().await.is_err() {
                return rx
                    .borrow()
                    .clone()
                    .unwrap_or_else(|| ChildExit::WaitFailed("monitor task ended".into()));
            }
        }
    }

    /// The exit, if the child has ended.
    pub fn try_exit(&self) -> Option<ChildExit> {
        self.status.borrow().clone()
    }

    /// The last lines the child wrote to stderr, joined by newlines.
    pub fn stderr_tail(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        for l in tail.iter() {
            out.push_str(l);
            out.push('\n');
        }
        out
    }
}

/// Starts `command[0]` with arguments `command[1..]`, speaking JSON-RPC over
/// its stdin/stdout. Stderr goes to `tracing` (target
/// `spindle_protocol::child_stderr`) and its tail is kept in the handle.
pub fn spawn_child(
    command: &[OsString],
    options: SpawnOptions,
) -> std::io::Result<(Connection, ChildHandle)> {
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
    if let Some(cwd) = &options.cwd {
        cmd.current_dir(cwd);
    }
    for (k, v) in &options.env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    if options.own_process_group {
        cmd.process_group(0);
    }
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("child stdio was not piped"));
    };
    let connection = Connection::from_io_with(stdout, stdin, options.connection.clone());

    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let stderr_task = tokio::spawn(read_stderr(
        stderr,
        tail.clone(),
        options.stderr_tail_lines,
        pid,
    ));
    let kill = Arc::new(Notify::new());
    let (status_tx, status_rx) = watch::channel(None);
    let kill_wait = kill.clone();
    tokio::spawn(async move {
        let waited = tokio::select! {
            s = child.wait() => s,
            () = kill_wait.notified() => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        // Let the stderr reader drain what the child wrote before it died,
        // but do not hang on a grandchild that keeps stderr open.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), stderr_task).await;
        let exit = match waited {
            Ok(s) => ChildExit::Exited(s),
            Err(e) => ChildExit::WaitFailed(e.to_string()),
        };
        let _ = status_tx.send(Some(exit));
    });
    Ok((
        connection,
        ChildHandle {
            pid,
            kill,
            status: status_rx,
            tail,
        },
    ))
}

async fn read_stderr(
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    keep: usize,
    pid: Option<u32>,
) {
    let mut reader = BufReader::new(stderr);
    // At most STDERR_LINE_LIMIT bytes of a line are kept; the rest of an
    // over-long line is skipped, so a child cannot make us buffer without
    // bound.
    let mut line: Vec<u8> = Vec::new();
    let mut truncated = false;
    loop {
        let available = match reader.fill_buf().await {
            Ok([]) | Err(_) => {
                if !line.is_empty() {
                    record_stderr_line(&line, truncated, &tail, keep, pid);
                }
                return;
            }
            Ok(buf) => buf,
        };
        let (piece, end_of_line) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        let room = STDERR_LINE_LIMIT.saturating_sub(line.len());
        if piece.len() > room {
            truncated = true;
        }
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        let used = end_of_line.unwrap_or(available.len());
        reader.consume(used);
        if end_of_line.is_some() {
            record_stderr_line(&line, truncated, &tail, keep, pid);
            line.clear();
            truncated = false;
        }
    }
}

fn record_stderr_line(
    bytes: &[u8],
    truncated: bool,
    tail: &Mutex<VecDeque<String>>,
    keep: usize,
    pid: Option<u32>,
) {
    let mut text = String::from_utf8_lossy(bytes).trim_end().to_owned();
    if truncated {
        text.push('…');
    }
    tracing::info!(target: "spindle_protocol::child_stderr", pid = pid.unwrap_or(0), "{text}");
    if keep > 0 {
        let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
        if t.len() == keep {
            t.pop_front();
        }
        t.push_back(text);
    }
}
