//! The byte pipe to one agent: newline-delimited lines in both directions, nothing more. ACP
//! meaning is given to the lines by the session task and the engine. The agent is a child
//! process ([`AgentLink::spawn`]) or a remote agent behind the RFD's `/acp` endpoint
//! ([`AgentLink::connect`], `spindle serve --agent-url`): both give the same events, so the
//! wire log, the engine and the page cannot tell them apart.
//!
//! Why not `spindle_protocol::spawn_child`: the wire log must hold what the agent wrote, byte
//! for byte and in the order the session task processed it, including lines that are not
//! JSON-RPC at all, so that replaying the log reproduces the same transcript *and* the same
//! diagnostics. The protocol crate's connection decodes lines into messages and reports
//! undecodable ones without their text; this link hands over raw lines and never interprets
//! them (only lines over [`MAX_LINE_BYTES`] or not UTF-8 are dropped, with a report).

use std::ffi::OsString;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

/// A line longer than this is dropped (and reported) instead of buffered without bound: the
/// limit every Spindle transport shares.
pub const MAX_LINE_BYTES: usize = spindle_wire::DEFAULT_MAX_LINE_BYTES;

/// Bytes of agent lines that may wait for the session task. When they are used up the reader
/// stops reading, the pipe fills and the agent blocks: memory stays bounded even for an agent
/// that writes huge lines faster than they can be committed.
/// At least one line's worth, so that a line of the maximum length can always be queued.
const QUEUED_BYTES: usize = 64 << 20;
const _: () = assert!(QUEUED_BYTES >= MAX_LINE_BYTES);

/// What the link reports.
#[derive(Debug)]
pub enum LinkEvent {
    /// The lines one read of the agent's output finished (at least one), in order, without
    /// their newlines, with their share of the queue budget (released when the event is
    /// dropped). One event per read rather than per line: a fast agent's lines cost one channel
    /// message and one budget claim per 64 KiB.
    Lines(Vec<String>, QueueShare),
    /// A line over [`MAX_LINE_BYTES`] or not UTF-8 was dropped.
    Dropped(String),
    /// The agent's stdout closed (it exited or closed the pipe); with the exit status if known.
    Closed(String),
}

impl LinkEvent {
    /// How many lines the event carries.
    pub fn line_count(&self) -> usize {
        match self {
            LinkEvent::Lines(lines, _) => lines.len(),
            LinkEvent::Dropped(_) | LinkEvent::Closed(_) => 0,
        }
    }
}

/// Lines' share of the link's byte budget.
#[derive(Debug)]
pub struct QueueShare(#[allow(dead_code)] Option<tokio::sync::OwnedSemaphorePermit>);

/// The byte streams of a connected remote agent: the same newline-delimited lines a child's
/// stdio gives.
pub struct RemoteStreams {
    /// Lines from the agent.
    pub reader: Pin<Box<dyn AsyncRead + Send>>,
    /// Lines to the agent; dropping it ends the connection.
    pub writer: Pin<Box<dyn AsyncWrite + Send>>,
    /// What happens to the connection (reconnecting, resumed, closed), as the transport says it.
    pub notices: mpsc::UnboundedReceiver<RemoteNotice>,
}

impl std::fmt::Debug for RemoteStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStreams").finish_non_exhaustive()
    }
}

/// One notice of a remote agent's transport.
#[derive(Debug, Clone)]
pub struct RemoteNotice {
    /// What happened, for the log.
    pub text: String,
    /// Set when the transport gave up: why the connection is closed.
    pub closed: Option<String>,
}

/// What connecting to a remote agent gives: its streams, or why it could not be reached.
pub type Connecting = Pin<Box<dyn Future<Output = Result<RemoteStreams, String>> + Send>>;

/// Reaches a remote agent. The runtime knows no network transport and links no HTTP code: the
/// front end brings one (`spindle-web` connects over ACP's remote transport).
pub trait AgentConnector: Send + Sync + std::fmt::Debug {
    /// Opens a new connection to the agent.
    fn connect(&self) -> Connecting;
}

/// A remote agent (`spindle serve --agent-url`): where it is and how to reach it.
#[derive(Debug, Clone)]
pub struct RemoteAgent {
    /// The agent's address, for messages.
    pub url: String,
    /// Opens connections to it.
    pub connector: Arc<dyn AgentConnector>,
}

/// A running agent: a child process or a remote connection.
#[derive(Debug)]
pub struct AgentLink {
    writer: mpsc::UnboundedSender<String>,
    /// Lines and lifecycle events from the agent.
    pub events: mpsc::Receiver<LinkEvent>,
    end: AgentEnd,
}

#[derive(Debug)]
enum AgentEnd {
    Child(Child),
    Remote {
        url: String,
        /// Ends the connection (`DELETE` / WebSocket close) when sent or dropped.
        close: Option<oneshot::Sender<()>>,
        /// Why the connection ended, once it did.
        closed: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    },
}

impl AgentLink {
    /// Starts `command` with piped stdin/stdout (stderr is inherited so agent logs stay visible).
    pub fn spawn(
        command: &[OsString],
        env: &[(OsString, OsString)],
        queue: usize,
    ) -> std::io::Result<AgentLink> {
        let (program, args) = command.split_first().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty agent command")
        })?;
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        let (event_tx, events) = mpsc::channel(queue.max(1));
        let (writer, write_rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(write_lines(stdin, write_rx, None));
        tokio::spawn(read_lines(stdout, event_tx));
        Ok(AgentLink {
            writer,
            events,
            end: AgentEnd::Child(child),
        })
    }

    /// Connects to a remote agent (in the background: a server that cannot be reached is a
    /// [`LinkEvent::Closed`] saying why). The transport's notices (reconnections, a new
    /// connection after the server restarted) are logged; the lines are what the agent sent.
    pub fn connect(remote: &RemoteAgent, queue: usize) -> AgentLink {
        let (event_tx, events) = mpsc::channel(queue.max(1));
        let (writer, write_rx) = mpsc::unbounded_channel::<String>();
        let (close, close_rx) = oneshot::channel();
        let closed = std::sync::Arc::new(std::sync::Mutex::new(None));
        let connecting = remote.connector.connect();
        let url = remote.url.clone();
        let closed_reason = closed.clone();
        tokio::spawn(async move {
            let RemoteStreams {
                reader,
                writer,
                mut notices,
            } = match connecting.await {
                Ok(link) => link,
                Err(error) => {
                    let reason = format!("cannot reach the agent at {url}: {error}");
                    *lock(&closed_reason) = Some(reason.clone());
                    let _ = event_tx.send(LinkEvent::Closed(reason)).await;
                    return;
                }
            };
            tokio::spawn(write_lines(writer, write_rx, Some(close_rx)));
            tokio::spawn(async move {
                while let Some(notice) = notices.recv().await {
                    tracing::warn!(agent = %url, "{}", notice.text);
                    if let Some(reason) = notice.closed {
                        *lock(&closed_reason) = Some(reason);
                    }
                }
            });
            read_lines(reader, event_tx).await;
        });
        AgentLink {
            writer,
            events,
            end: AgentEnd::Remote {
                url: remote.url.clone(),
                close: Some(close),
                closed,
            },
        }
    }

    /// Queues one line for the agent's stdin. Returns false when the agent is gone.
    pub fn send(&self, line: String) -> bool {
        self.writer.send(line).is_ok()
    }

    /// Whether the agent's stdin is gone (lines sent now are lost).
    pub fn is_closed(&self) -> bool {
        self.writer.is_closed()
    }

    /// Kills the child, or ends the remote connection (also done on drop).
    pub async fn kill(&mut self) {
        match &mut self.end {
            AgentEnd::Child(child) => {
                let _ = child.kill().await;
            }
            AgentEnd::Remote { close, .. } => {
                if let Some(close) = close.take() {
                    let _ = close.send(());
                }
            }
        }
    }

    /// How the child ended (waiting up to two seconds for it to be reaped), or why the
    /// remote connection closed.
    pub async fn exit_report(&mut self) -> String {
        match &mut self.end {
            AgentEnd::Child(child) => {
                match tokio::time::timeout(std::time::Duration::from_secs(2), child.wait()).await {
                    Ok(Ok(status)) => status.to_string(),
                    Ok(Err(error)) => format!("wait failed: {error}"),
                    Err(_) => "still running".to_string(),
                }
            }
            AgentEnd::Remote { url, closed, .. } => match lock(closed).clone() {
                Some(reason) => reason,
                None => format!("the remote agent at {url} closed the connection"),
            },
        }
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes queued lines to the agent until the queue closes (or `close` fires); then the
/// writer is dropped, which closes the child's stdin or the remote connection.
async fn write_lines<W>(
    mut writer: W,
    mut lines: mpsc::UnboundedReceiver<String>,
    close: Option<oneshot::Receiver<()>>,
) where
    W: AsyncWrite + Unpin,
{
    let closed = async move {
        match close {
            // A dropped sender (the link was dropped) also closes.
            Some(close) => {
                let _ = close.await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::pin!(closed);
    loop {
        let mut line = tokio::select! {
            line = lines.recv() => match line {
                Some(line) => line,
                None => break,
            },
            () = &mut closed => break,
        };
        line.push('\n');
        if writer.write_all(line.as_bytes()).await.is_err() || writer.flush().await.is_err() {
            break;
        }
    }
    let _ = writer.shutdown().await;
}

/// The agent's output is read in chunks of this size.
const READ_CAPACITY: usize = 64 * 1024;
const _: () = assert!(READ_CAPACITY <= MAX_LINE_BYTES);

async fn read_lines<R>(stdout: R, events: mpsc::Sender<LinkEvent>)
where
    R: AsyncRead + Unpin,
{
    let budget = std::sync::Arc::new(tokio::sync::Semaphore::new(QUEUED_BYTES));
    let mut reader = BufReader::with_capacity(READ_CAPACITY, stdout);
    let mut partial = PartialLine::default();
    // What one read finished, in order; reported once the read is consumed.
    let mut finished: Vec<Finished> = Vec::new();
    loop {
        let available = match reader.fill_buf().await {
            Ok([]) => break,
            Ok(bytes) => bytes,
            Err(error) => {
                let _ = events
                    .send(LinkEvent::Closed(format!("read error: {error}")))
                    .await;
                return;
            }
        };
        let mut rest = available;
        while let Some(n) = memchr::memchr(b'\n', rest) {
            let (chunk, after) = (&rest[..n], &rest[n + 1..]);
            rest = after;
            let (bytes, oversized) = if partial.is_empty() {
                // The whole line is in the read buffer (most lines): its text is an exact-size
                // copy of it.
                (chunk.to_vec(), false)
            } else {
                partial.gather(chunk);
                partial.take()
            };
            finished.extend(finish_line(bytes, oversized));
        }
        // The start of a line the next read goes on with.
        partial.gather(rest);
        let consumed = available.len();
        reader.consume(consumed);
        // A full queue waits here: the agent's pipe fills and the agent blocks, which bounds
        // memory; browsers are never on this path (they have their own queues).
        if !report(&events, &budget, &mut finished).await {
            return;
        }
    }
    // A last line without its newline is still a line (F7): the agent may write its final
    // message and exit without one.
    let (bytes, oversized) = partial.take();
    finished.extend(finish_line(bytes, oversized));
    if !report(&events, &budget, &mut finished).await {
        return;
    }
    let _ = events
        .send(LinkEvent::Closed("the agent closed its output".into()))
        .await;
}

/// A line read in pieces (over several reads), dropped once it passes [`MAX_LINE_BYTES`].
#[derive(Default)]
struct PartialLine {
    bytes: Vec<u8>,
    oversized: bool,
}

impl PartialLine {
    fn is_empty(&self) -> bool {
        self.bytes.is_empty() && !self.oversized
    }

    fn gather(&mut self, chunk: &[u8]) {
        if self.oversized || chunk.is_empty() {
            return;
        }
        if self.bytes.len() + chunk.len() > MAX_LINE_BYTES {
            self.oversized = true;
            self.bytes = Vec::new();
        } else {
            self.bytes.extend_from_slice(chunk);
        }
    }

    /// The line's bytes and whether it was over the limit; empty again.
    fn take(&mut self) -> (Vec<u8>, bool) {
        (
            std::mem::take(&mut self.bytes),
            std::mem::take(&mut self.oversized),
        )
    }
}

/// A line as read: its text, or why it was dropped.
enum Finished {
    Line(String),
    Dropped(String),
}

/// Reports what a read finished: consecutive lines as one [`LinkEvent::Lines`] (with one claim
/// on the budget for their bytes), a dropped line's notice in its place between them. `false`
/// when the link's receiver is gone.
async fn report(
    events: &mpsc::Sender<LinkEvent>,
    budget: &std::sync::Arc<tokio::sync::Semaphore>,
    finished: &mut Vec<Finished>,
) -> bool {
    let mut lines = Vec::new();
    let mut bytes = 0usize;
    for item in finished.drain(..) {
        match item {
            Finished::Line(text) => {
                bytes += text.len().max(1);
                lines.push(text);
            }
            Finished::Dropped(why) => {
                if !lines.is_empty()
                    && !send_lines(events, budget, std::mem::take(&mut lines), bytes).await
                {
                    return false;
                }
                bytes = 0;
                if events.send(LinkEvent::Dropped(why)).await.is_err() {
                    return false;
                }
            }
        }
    }
    lines.is_empty() || send_lines(events, budget, lines, bytes).await
}

async fn send_lines(
    events: &mpsc::Sender<LinkEvent>,
    budget: &std::sync::Arc<tokio::sync::Semaphore>,
    lines: Vec<String>,
    bytes: usize,
) -> bool {
    // One read's lines are at most a maximal line and a read buffer: the claim is capped at
    // the whole budget, so it can always be granted. This cannot fail while the semaphore lives
    // (it is never closed).
    let permits = u32::try_from(bytes.min(QUEUED_BYTES)).unwrap_or(u32::MAX);
    let share = budget.clone().acquire_many_owned(permits).await.ok();
    events
        .send(LinkEvent::Lines(lines, QueueShare(share)))
        .await
        .is_ok()
}

/// The line from the bytes of one line (its newline removed), or why it was dropped; `None` for
/// a blank line.
fn finish_line(mut bytes: Vec<u8>, oversized: bool) -> Option<Finished> {
    if oversized {
        return Some(Finished::Dropped(format!(
            "agent line over {MAX_LINE_BYTES} bytes dropped"
        )));
    }
    if bytes.last() == Some(&b'\r') {
        bytes.pop();
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    // The line's own buffer becomes its text (no copy).
    Some(match String::from_utf8(bytes) {
        Ok(text) => Finished::Line(text),
        Err(_) => Finished::Dropped("agent line is not UTF-8; dropped".into()),
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    async fn events_of(script: &str) -> Vec<String> {
        let command: Vec<OsString> = vec!["sh".into(), "-c".into(), script.into()];
        let mut link = AgentLink::spawn(&command, &[], 16).unwrap();
        let mut seen = Vec::new();
        while let Some(event) = link.events.recv().await {
            match event {
                LinkEvent::Lines(lines, _) => {
                    seen.extend(lines.iter().map(|line| format!("line {}", line.len())));
                }
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
        let script = format!(
            "printf 'abc\\n\\n\\r\\n'; head -c {over} /dev/zero | tr '\\0' x; printf '\\n'; \
             printf '\\377\\376 not utf8\\n'; printf 'after\\r\\n'; printf 'unterminated'"
        );
        let seen = events_of(&script).await;
        assert_eq!(seen.len(), 6, "{seen:?}");
        assert_eq!(seen[0], "line 3");
        assert!(seen[1].starts_with("dropped agent line over"), "{seen:?}");
        assert!(seen[2].contains("not UTF-8"), "{seen:?}");
        assert_eq!(seen[3], "line 5");
        // The last line has no newline and is kept all the same (F7).
        assert_eq!(seen[4], "line 12");
        assert_eq!(seen[5], "closed");
    }

    /// The lines read from `input` when reads end at `cut` (`None`: one read).
    async fn lines_read(input: &'static [u8], cut: Option<usize>) -> Vec<String> {
        use tokio::io::AsyncReadExt as _;
        let (tx, mut rx) = mpsc::channel(64);
        match cut {
            Some(at) => read_lines(input[..at].chain(&input[at..]), tx).await,
            None => read_lines(input, tx).await,
        }
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            match event {
                LinkEvent::Lines(lines, _) => seen.extend(lines),
                LinkEvent::Dropped(why) => seen.push(format!("dropped {why}")),
                LinkEvent::Closed(why) => seen.push(format!("closed {why}")),
            }
        }
        seen
    }

    #[tokio::test]
    async fn a_line_is_the_same_whether_a_read_ends_inside_it_or_not() {
        const INPUT: &[u8] = b"{\"a\":1}\n\n{\"b\":\"\xc3\xa9\"}\r\nlong line of text\nlast";
        let whole = lines_read(INPUT, None).await;
        assert_eq!(
            whole,
            [
                "{\"a\":1}",
                "{\"b\":\"\u{e9}\"}",
                "long line of text",
                "last",
                "closed the agent closed its output"
            ]
        );
        for cut in 1..INPUT.len() {
            assert_eq!(
                lines_read(INPUT, Some(cut)).await,
                whole,
                "a read ends at {cut}"
            );
        }
    }

    #[tokio::test]
    async fn an_agent_that_cannot_start_is_an_error_not_a_panic() {
        let missing = vec![OsString::from("/nonexistent/spindle-agent-binary")];
        assert!(AgentLink::spawn(&missing, &[], 4).is_err());
        assert!(AgentLink::spawn(&[], &[], 4).is_err());
    }
}
