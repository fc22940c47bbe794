//! Connections: a pair of channels, fed by an in-memory peer, by any
//! `AsyncRead`/`AsyncWrite` pair, by this process's stdio or by a child
//! process.
//!
//! Framing is one JSON-RPC message (or batch) per `\n`-terminated line.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc, watch};

use crate::jsonrpc::{
    DEFAULT_MAX_LINE_BYTES, DecodeError, Frame, Message, PARSE_ERROR, decode_line,
};

/// What a connection's receiver yields.
#[derive(Debug)]
pub enum Incoming {
    /// A well-formed message (batches arrive as their elements, in order).
    Message(Message),
    /// A line (or batch element) that could not be decoded. The connection
    /// keeps working.
    Malformed {
        /// 1-based number of the offending line.
        line_number: u64,
        /// What is wrong.
        error: DecodeError,
    },
    /// The peer's output ended. Nothing follows.
    Closed {
        /// Why.
        reason: CloseReason,
    },
}

/// Why an incoming stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// End of input.
    Eof,
    /// A read error.
    Io(String),
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::Eof => f.write_str("end of input"),
            CloseReason::Io(e) => write!(f, "read error: {e}"),
        }
    }
}

/// The peer is gone: the message could not be queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disconnected;

impl std::fmt::Display for Disconnected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection closed")
    }
}

impl std::error::Error for Disconnected {}

/// What travels through a connection's channels. Readers hand over many
/// decoded lines at once: one channel operation (and at most one cross-thread
/// wake-up) per read buffer instead of per message.
#[derive(Debug)]
enum Chunk {
    One(Incoming),
    Many(Vec<Incoming>),
}

/// Most items a reader puts in one chunk.
const MAX_CHUNK: usize = 256;

/// The sending half of a connection. Cheap to clone.
#[derive(Debug, Clone)]
pub struct MessageSender {
    // The channel carries `Incoming` so that an in-memory pair needs no
    // forwarding task; I/O writers only ever see `Incoming::Message`.
    tx: mpsc::Sender<Chunk>,
}

impl MessageSender {
    /// Queues a message, waiting while the channel is full.
    pub async fn send(&self, message: Message) -> Result<(), Disconnected> {
        self.tx
            .send(Chunk::One(Incoming::Message(message)))
            .await
            .map_err(|_| Disconnected)
    }

    /// Queues a message without waiting; fails when full or closed.
    pub fn try_send(&self, message: Message) -> Result<(), Disconnected> {
        self.tx
            .try_send(Chunk::One(Incoming::Message(message)))
            .map_err(|_| Disconnected)
    }

    /// Whether the other side has gone away.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// A handle that does not keep the connection open: once every
    /// `MessageSender` is dropped, the writer closes the stream (for a child,
    /// its stdin) even if weak handles remain.
    pub fn downgrade(&self) -> WeakMessageSender {
        WeakMessageSender {
            tx: self.tx.downgrade(),
        }
    }
}

/// A [`MessageSender`] that does not keep the connection open.
#[derive(Debug, Clone)]
pub struct WeakMessageSender {
    tx: mpsc::WeakSender<Chunk>,
}

impl WeakMessageSender {
    /// The sender, if any strong handle still exists.
    pub fn upgrade(&self) -> Option<MessageSender> {
        self.tx.upgrade().map(|tx| MessageSender { tx })
    }
}

/// The receiving half of a connection.
#[derive(Debug)]
pub struct MessageReceiver {
    rx: mpsc::Receiver<Chunk>,
    buffered: VecDeque<Incoming>,
}

impl MessageReceiver {
    fn new(rx: mpsc::Receiver<Chunk>) -> Self {
        MessageReceiver {
            rx,
            buffered: VecDeque::new(),
        }
    }

    /// The next item; `None` once the peer is gone and everything was read.
    pub async fn recv(&mut self) -> Option<Incoming> {
        if let Some(item) = self.buffered.pop_front() {
            return Some(item);
        }
        let chunk = self.rx.recv().await?;
        Some(self.unpack(chunk))
    }

    /// The next item if one is ready now.
    pub fn try_recv(&mut self) -> Option<Incoming> {
        if let Some(item) = self.buffered.pop_front() {
            return Some(item);
        }
        let chunk = self.rx.try_recv().ok()?;
        Some(self.unpack(chunk))
    }

    /// Whether an item is ready without waiting.
    pub fn has_ready(&self) -> bool {
        !self.buffered.is_empty() || !self.rx.is_empty()
    }

    fn unpack(&mut self, chunk: Chunk) -> Incoming {
        match chunk {
            Chunk::One(item) => item,
            Chunk::Many(items) => {
                let mut items = items.into_iter();
                let first = items.next();
                self.buffered.extend(items);
                // Readers never send empty chunks; stay total anyway.
                first.unwrap_or(Incoming::Closed {
                    reason: CloseReason::Io("empty chunk".into()),
                })
            }
        }
    }
}

/// A bidirectional JSON-RPC connection: a pair of channels.
///
/// `receiver.recv()` returning `None` also means the connection is closed
/// (an in-memory peer that drops its sender sends no `Closed`).
#[derive(Debug)]
pub struct Connection {
    /// Messages to the peer.
    pub sender: MessageSender,
    /// Messages and diagnostics from the peer.
    pub receiver: MessageReceiver,
}

/// Tuning for I/O-backed connections.
#[derive(Debug, Clone)]
pub struct ConnectionOptions {
    /// Longest accepted line in bytes; longer lines are skipped (without
    /// being buffered) and reported as [`Incoming::Malformed`].
    pub max_line_bytes: usize,
    /// Capacity of each channel. Incoming lines travel in chunks of up to
    /// 256 messages, so this bounds buffered input to capacity x 256
    /// messages.
    pub channel_capacity: usize,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            channel_capacity: 64,
        }
    }
}

const READ_BUFFER_BYTES: usize = 256 * 1024;
const WRITE_FLUSH_BYTES: usize = 64 * 1024;
const MEMORY_CHANNEL_CAPACITY: usize = 4096;

impl Connection {
    /// Two connected ends, without I/O or serialization. Needs no runtime.
    pub fn memory() -> (Connection, Connection) {
        let (a_tx, a_rx) = mpsc::channel(MEMORY_CHANNEL_CAPACITY);
        let (b_tx, b_rx) = mpsc::channel(MEMORY_CHANNEL_CAPACITY);
        (
            Connection {
                sender: MessageSender { tx: b_tx },
                receiver: MessageReceiver::new(a_rx),
            },
            Connection {
                sender: MessageSender { tx: a_tx },
                receiver: MessageReceiver::new(b_rx),
            },
        )
    }

    /// A connection over a byte stream pair (e.g. `tokio::io::duplex`).
    /// Spawns a reader task and a writer task on the current tokio runtime.
    pub fn from_io<R, W>(reader: R, writer: W) -> Connection
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::from_io_with(reader, writer, ConnectionOptions::default())
    }

    /// [`Connection::from_io`] with explicit options.
    pub fn from_io_with<R, W>(reader: R, writer: W, options: ConnectionOptions) -> Connection
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let capacity = options.channel_capacity.max(1);
        let (in_tx, in_rx) = mpsc::channel(capacity);
        let (out_tx, out_rx) = mpsc::channel(MEMORY_CHANNEL_CAPACITY);
        let reader = BufReader::with_capacity(READ_BUFFER_BYTES, reader);
        tokio::spawn(read_loop(reader, in_tx, options.max_line_bytes));
        tokio::spawn(write_loop(writer, out_rx));
        Connection {
            sender: MessageSender { tx: out_tx },
            receiver: MessageReceiver::new(in_rx),
        }
    }

    /// A connection over this process's stdin and stdout.
    pub fn stdio() -> Connection {
        Self::from_io(tokio::io::stdin(), tokio::io::stdout())
    }
}

/// Collects decoded items and hands them over in chunks.
struct Batcher {
    tx: mpsc::Sender<Chunk>,
    items: Vec<Incoming>,
}

impl Batcher {
    fn push(&mut self, item: Incoming) {
        self.items.push(item);
    }

    fn is_full(&self) -> bool {
        self.items.len() >= MAX_CHUNK
    }

    /// Sends what is collected; `false` when the receiver is gone.
    async fn flush(&mut self) -> bool {
        let chunk = match self.items.len() {
            0 => return true,
            1 => Chunk::One(self.items.pop().expect("one item")),
            _ => Chunk::Many(std::mem::replace(
                &mut self.items,
                Vec::with_capacity(MAX_CHUNK),
            )),
        };
        self.tx.send(chunk).await.is_ok()
    }
}

/// Reads lines from `reader` and forwards decoded messages to `tx` until end
/// of input or until the receiver is dropped. Over-long lines are skipped in
/// pieces, never buffered whole.
async fn read_loop<R>(mut reader: BufReader<R>, tx: mpsc::Sender<Chunk>, max_line_bytes: usize)
where
    R: AsyncRead + Unpin,
{
    let mut out = Batcher {
        tx,
        items: Vec::with_capacity(MAX_CHUNK),
    };
    let mut line: Vec<u8> = Vec::new();
    let mut line_number: u64 = 0;
    // Bytes of the current line seen so far while skipping an over-long line.
    let mut discarding: Option<usize> = None;
    loop {
        // Hand over what we have before a read that may wait for the peer,
        // so batching never delays a message.
        if (reader.buffer().is_empty() || out.is_full()) && !out.flush().await {
            return;
        }
        let available = match reader.fill_buf().await {
            Ok(buf) => buf,
            Err(e) => {
                out.push(Incoming::Closed {
                    reason: CloseReason::Io(e.to_string()),
                });
                out.flush().await;
                return;
            }
        };
        if available.is_empty() {
            // A final line without a newline still counts.
            if let Some(skipped) = discarding {
                line_number += 1;
                out.push(too_long(line_number, skipped, max_line_bytes));
            } else if !line.is_empty() {
                line_number += 1;
                decode_into(&line, line_number, &mut out);
            }
            out.push(Incoming::Closed {
                reason: CloseReason::Eof,
            });
            out.flush().await;
            return;
        }
        match memchr::memchr(b'\n', available) {
            Some(i) => {
                line_number += 1;
                if let Some(skipped) = discarding.take() {
                    out.push(too_long(line_number, skipped + i, max_line_bytes));
                } else if line.len() + i > max_line_bytes {
                    out.push(too_long(line_number, line.len() + i, max_line_bytes));
                    line = Vec::new();
                } else if line.is_empty() {
                    // Fast path: the whole line is in the read buffer.
                    decode_into(&available[..i], line_number, &mut out);
                } else {
                    line.extend_from_slice(&available[..i]);
                    decode_into(&line, line_number, &mut out);
                    line.clear();
                }
                reader.consume(i + 1);
            }
            None => {
                let n = available.len();
                if let Some(skipped) = discarding.as_mut() {
                    *skipped += n;
                } else if line.len() + n > max_line_bytes {
                    discarding = Some(line.len() + n);
                    line = Vec::new();
                } else {
                    line.extend_from_slice(available);
                }
                reader.consume(n);
            }
        }
    }
}

fn too_long(line_number: u64, len: usize, max: usize) -> Incoming {
    Incoming::Malformed {
        line_number,
        error: DecodeError {
            code: PARSE_ERROR,
            message: format!(
                "line of at least {len} bytes exceeds the maximum of {max} bytes; discarded"
            ),
            id: None,
            request: false,
        },
    }
}

fn decode_into(bytes: &[u8], line_number: u64, out: &mut Batcher) {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            out.push(Incoming::Malformed {
                line_number,
                error: DecodeError {
                    code: PARSE_ERROR,
                    message: format!("line is not valid UTF-8: {e}"),
                    id: None,
                    request: false,
                },
            });
            return;
        }
    };
    match decode_line(text) {
        Ok(Frame::Single(m)) => out.push(Incoming::Message(m)),
        Ok(Frame::Batch(items)) => {
            for r in items {
                out.push(match r {
                    Ok(m) => Incoming::Message(m),
                    Err(error) => Incoming::Malformed { line_number, error },
                });
            }
        }
        Err(error) => out.push(Incoming::Malformed { line_number, error }),
    }
}

/// Decodes every line of `input` as a connection would, without tasks:
/// for tools, benchmarks and tests of the framing path.
pub async fn decode_stream<R>(reader: R, max_line_bytes: usize, mut each: impl FnMut(Incoming))
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(64);
    let reader = BufReader::with_capacity(READ_BUFFER_BYTES, reader);
    let task = tokio::spawn(read_loop(reader, tx, max_line_bytes));
    let mut rx = MessageReceiver::new(rx);
    while let Some(item) = rx.recv().await {
        each(item);
    }
    let _ = task.await;
}

/// Serializes queued messages to `writer`, one line each, coalescing writes
/// while more messages are queued. Shuts the writer down when every sender is
/// gone.
async fn write_loop<W>(mut writer: W, mut rx: mpsc::Receiver<Chunk>)
where
    W: AsyncWrite + Unpin,
{
    fn encode(chunk: Chunk, buf: &mut Vec<u8>) {
        let mut one = |item: Incoming| {
            if let Incoming::Message(m) = item {
                m.encode_line_into(buf);
            }
        };
        match chunk {
            Chunk::One(item) => one(item),
            Chunk::Many(items) => items.into_iter().for_each(one),
        }
    }
    let mut buf: Vec<u8> = Vec::with_capacity(WRITE_FLUSH_BYTES);
    while let Some(first) = rx.recv().await {
        encode(first, &mut buf);
        while buf.len() < WRITE_FLUSH_BYTES {
            match rx.try_recv() {
                Ok(chunk) => encode(chunk, &mut buf),
                Err(_) => break,
            }
        }
        if let Err(e) = writer.write_all(&buf).await {
            tracing::debug!("connection writer stopped: {e}");
            return;
        }
        buf.clear();
        if rx.is_empty()
            && let Err(e) = writer.flush().await
        {
            tracing::debug!("connection writer stopped: {e}");
            return;
        }
    }
    let _ = writer.shutdown().await;
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::RequestId;

    async fn decode_all(input: Vec<u8>, max: usize) -> Vec<Incoming> {
        let mut items = Vec::new();
        decode_stream(std::io::Cursor::new(input), max, |i| items.push(i)).await;
        items
    }

    fn describe(items: &[Incoming]) -> Vec<String> {
        items
            .iter()
            .map(|i| match i {
                Incoming::Message(m) => format!("msg {}", m.to_json()),
                Incoming::Malformed { line_number, error } => {
                    format!("bad line {line_number}: {}", error.code)
                }
                Incoming::Closed { reason } => format!("closed: {reason}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn lines_crlf_blank_and_unterminated_last_line() {
        let input = b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n\n   \n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}".to_vec();
        assert_eq!(
            describe(&decode_all(input, 1024).await),
            vec![
                r#"msg {"jsonrpc":"2.0","method":"a"}"#,
                r#"msg {"jsonrpc":"2.0","method":"b"}"#,
                "closed: end of input",
            ]
        );
    }

    #[tokio::test]
    async fn over_long_lines_are_skipped_and_reading_resumes() {
        let mut input = Vec::new();
        // Longer than the read buffer, so it is skipped in pieces.
        input.extend(std::iter::repeat_n(b'x', READ_BUFFER_BYTES * 3));
        input.push(b'\n');
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"after\"}\n");
        // Shorter than the buffer but over the limit.
        input.extend_from_slice(format!("\"{}\"\n", "y".repeat(2000)).as_bytes());
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"last\"}\n");
        // An over-long unterminated tail.
        input.extend(std::iter::repeat_n(b'z', 5000));
        let items = decode_all(input, 1024).await;
        assert_eq!(
            describe(&items),
            vec![
                "bad line 1: -32700",
                r#"msg {"jsonrpc":"2.0","method":"after"}"#,
                "bad line 3: -32700",
                r#"msg {"jsonrpc":"2.0","method":"last"}"#,
                "bad line 5: -32700",
                "closed: end of input",
            ]
        );
        match &items[0] {
            Incoming::Malformed { error, .. } => {
                assert!(error.message.contains("exceeds the maximum of 1024 bytes"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn batches_are_delivered_element_by_element() {
        let input = b"[{\"jsonrpc\":\"2.0\",\"method\":\"a\"},{\"bad\":1},{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]\n[]\n".to_vec();
        assert_eq!(
            describe(&decode_all(input, 1024).await),
            vec![
                r#"msg {"jsonrpc":"2.0","method":"a"}"#,
                "bad line 1: -32600",
                r#"msg {"jsonrpc":"2.0","id":1,"result":{}}"#,
                "bad line 2: -32600",
                "closed: end of input",
            ]
        );
    }

    #[tokio::test]
    async fn binary_noise_never_panics() {
        // A deterministic pseudo-random byte soup with some newlines.
        let mut state: u32 = 0x1234_5678;
        let input: Vec<u8> = (0..200_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state >> 24) as u8
            })
            .collect();
        let newlines = input.iter().filter(|b| **b == b'\n').count();
        let items = decode_all(input, 4096).await;
        assert!(matches!(items.last(), Some(Incoming::Closed { .. })));
        assert!(items.len() <= newlines + 2);
        assert!(items.iter().all(|i| !matches!(i, Incoming::Message(_))));
    }

    #[tokio::test]
    async fn memory_pair_and_io_pair_carry_messages_both_ways() {
        let (mut a, mut b) = Connection::memory();
        a.sender
            .send(Message::notification("x", &serde_json::json!({})).unwrap())
            .await
            .unwrap();
        assert!(matches!(
            b.receiver.recv().await,
            Some(Incoming::Message(_))
        ));
        b.sender
            .send(Message::notification("y", &serde_json::json!([])).unwrap())
            .await
            .unwrap();
        assert!(matches!(
            a.receiver.recv().await,
            Some(Incoming::Message(_))
        ));
        drop(b);
        assert!(a.receiver.recv().await.is_none());
        assert!(a.sender.is_closed());

        let (x, y) = tokio::io::duplex(1024);
        let (xr, xw) = tokio::io::split(x);
        let (yr, yw) = tokio::io::split(y);
        let cx = Connection::from_io(xr, xw);
        let mut cy = Connection::from_io(yr, yw);
        for i in 0..1000 {
            cx.sender
                .send(
                    Message::request(RequestId::Number(i), "m", &serde_json::json!({"i": i}))
                        .unwrap(),
                )
                .await
                .unwrap();
        }
        for i in 0..1000 {
            match cy.receiver.recv().await {
                Some(Incoming::Message(Message::Request { id, .. })) => {
                    assert_eq!(id, RequestId::Number(i));
                }
                other => panic!("{other:?}"),
            }
        }
        drop(cx);
        assert!(matches!(
            cy.receiver.recv().await,
            Some(Incoming::Closed {
                reason: CloseReason::Eof
            })
        ));
    }
}
