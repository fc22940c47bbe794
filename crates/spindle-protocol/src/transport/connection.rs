//! Connections: a pair of channels, fed by an in-memory peer, by any
//! `AsyncRead`/`AsyncWrite` pair or by this process's stdio. A reader task
//! frames what it reads ([`LineFramer`]) and a writer task writes one line
//! per message.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::framing::{CloseReason, Incoming, LineFramer};
use crate::jsonrpc::{DEFAULT_MAX_LINE_BYTES, Message};

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
    /// The rest of the chunk being handed out (items leave the chunk's own
    /// buffer, never copied into another queue first).
    buffered: std::vec::IntoIter<Incoming>,
}

impl MessageReceiver {
    fn new(rx: mpsc::Receiver<Chunk>) -> Self {
        MessageReceiver {
            rx,
            buffered: Vec::new().into_iter(),
        }
    }

    /// The next item; `None` once the peer is gone and everything was read.
    pub async fn recv(&mut self) -> Option<Incoming> {
        if let Some(item) = self.buffered.next() {
            return Some(item);
        }
        let chunk = self.rx.recv().await?;
        Some(self.unpack(chunk))
    }

    /// The next item if one is ready now.
    pub fn try_recv(&mut self) -> Option<Incoming> {
        if let Some(item) = self.buffered.next() {
            return Some(item);
        }
        let chunk = self.rx.try_recv().ok()?;
        Some(self.unpack(chunk))
    }

    /// Whether an item is ready without waiting.
    pub fn has_ready(&self) -> bool {
        !self.buffered.as_slice().is_empty() || !self.rx.is_empty()
    }

    fn unpack(&mut self, chunk: Chunk) -> Incoming {
        match chunk {
            Chunk::One(item) => item,
            Chunk::Many(items) => {
                self.buffered = items.into_iter();
                let first = self.buffered.next();
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
    /// Scan `session/update` notifications once and report them as
    /// [`Incoming::ScannedUpdate`] (plain text chunks with their fields,
    /// other updates but `state_update` in the compact envelope with their
    /// `sessionId`; for a client runtime; off by default, so a plain
    /// connection yields every line as a message). The scanned params of
    /// one read share one copy of its lines.
    pub scan_chunk_updates: bool,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            channel_capacity: 64,
            scan_chunk_updates: false,
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
        let framer =
            LineFramer::new(options.max_line_bytes).scanning_chunks(options.scan_chunk_updates);
        tokio::spawn(read_loop(reader, in_tx, framer));
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
async fn read_loop<R>(mut reader: BufReader<R>, tx: mpsc::Sender<Chunk>, mut framer: LineFramer)
where
    R: AsyncRead + Unpin,
{
    let mut out = Batcher {
        tx,
        items: Vec::with_capacity(MAX_CHUNK),
    };
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
            framer.finish(&mut |item| out.push(item));
            out.push(Incoming::Closed {
                reason: CloseReason::Eof,
            });
            out.flush().await;
            return;
        }
        // At most what fills the batch, so chunks stay within MAX_CHUNK.
        let room = MAX_CHUNK.saturating_sub(out.items.len());
        let used = framer.feed_lines(available, room, &mut |item| out.push(item));
        reader.consume(used);
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
    let task = tokio::spawn(read_loop(reader, tx, LineFramer::new(max_line_bytes)));
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
                Incoming::ScannedUpdate(p) => format!("chunk {}", p.notification_json()),
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
