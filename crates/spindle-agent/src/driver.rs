//! The tokio driver: moves lines between a byte stream and [`AgentCore`].
//!
//! Generic over `AsyncBufRead + AsyncWrite`, so tests run it over
//! `tokio::io::duplex` and the binary over stdio.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::core::{AgentConfig, AgentCore, Next};

/// One thing that happened on the input side.
#[derive(Debug)]
enum Event {
    Line(Vec<u8>),
    TooLong(usize),
    Eof,
}

/// Splits input into lines, refusing lines over a maximum size. Its state
/// lives outside the read future, so a read interrupted by `select!` loses
/// nothing.
#[derive(Debug)]
struct LineReader {
    buf: Vec<u8>,
    max: usize,
    /// Bytes of an oversized line dropped so far.
    discarding: Option<usize>,
}

impl LineReader {
    async fn next<R: AsyncBufRead + Unpin>(&mut self, reader: &mut R) -> io::Result<Event> {
        loop {
            let chunk = reader.fill_buf().await?;
            if chunk.is_empty() {
                if let Some(n) = self.discarding.take() {
                    return Ok(Event::TooLong(n));
                }
                if self.buf.is_empty() {
                    return Ok(Event::Eof);
                }
                return Ok(Event::Line(std::mem::take(&mut self.buf)));
            }
            let newline = chunk.iter().position(|b| *b == b'\n');
            let take = newline.unwrap_or(chunk.len());
            match &mut self.discarding {
                Some(n) => *n += take,
                None => self.buf.extend_from_slice(&chunk[..take]),
            }
            if self.discarding.is_none() && self.buf.len() > self.max {
                self.discarding = Some(self.buf.len());
                self.buf = Vec::new();
            }
            reader.consume(take + usize::from(newline.is_some()));
            if newline.is_some() {
                if let Some(n) = self.discarding.take() {
                    return Ok(Event::TooLong(n));
                }
                return Ok(Event::Line(std::mem::take(&mut self.buf)));
            }
        }
    }
}

/// Writes what the agent receives and sends in the `spindle replay` recording format, seen
/// from the client's side: a line the agent received is `{"sent": <message>}`, a line it wrote
/// is the bare message. Lines that are not JSON are left out (a recording holds messages).
/// For checking a peer's traffic (the interop tests validate it against the official schemas).
pub struct WireRecorder {
    out: Box<dyn std::io::Write + Send>,
}

impl std::fmt::Debug for WireRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WireRecorder")
    }
}

impl WireRecorder {
    /// Records into `out` (unbuffered writes are the caller's choice).
    pub fn new(out: Box<dyn std::io::Write + Send>) -> Self {
        WireRecorder { out }
    }

    fn is_json(line: &[u8]) -> bool {
        serde_json::from_slice::<&serde_json::value::RawValue>(line).is_ok()
    }

    fn received(&mut self, line: &[u8]) -> io::Result<()> {
        if !Self::is_json(line) {
            return Ok(());
        }
        self.out.write_all(b"{\"sent\":")?;
        self.out.write_all(line)?;
        self.out.write_all(b"}\n")
    }

    fn emitted(&mut self, output: &[u8]) -> io::Result<()> {
        for line in output.split(|b| *b == b'\n') {
            if !line.is_empty() && Self::is_json(line) {
                self.out.write_all(line)?;
                self.out.write_all(b"\n")?;
            }
        }
        self.out.flush()
    }
}

fn handle(
    core: &mut AgentCore,
    event: Event,
    input_closed: &mut bool,
    recorder: &mut Option<WireRecorder>,
) {
    if let (Event::Line(bytes), Some(recorder)) = (&event, recorder.as_mut()) {
        recorder.received(bytes).ok();
    }
    match event {
        Event::Line(bytes) => match std::str::from_utf8(&bytes) {
            Ok(line) => core.handle_line(line),
            Err(_) => core.handle_unreadable_line("line is not valid UTF-8"),
        },
        Event::TooLong(n) => core.handle_oversized_line(n),
        Event::Eof => {
            *input_closed = true;
            core.handle_eof();
        }
    }
}

/// Runs the agent until the client goes away or a scenario exits; returns
/// the exit code. A closed output (broken pipe) counts as a normal end.
pub async fn run_agent<R, W>(
    config: AgentConfig,
    max_line_bytes: usize,
    reader: R,
    writer: W,
) -> io::Result<i32>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    run_agent_recorded(config, max_line_bytes, reader, writer, None).await
}

/// [`run_agent`], also writing every message in and out to `recorder`.
pub async fn run_agent_recorded<R, W>(
    config: AgentConfig,
    max_line_bytes: usize,
    mut reader: R,
    mut writer: W,
    mut recorder: Option<WireRecorder>,
) -> io::Result<i32>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut config = config;
    crate::state_dir::prepare(&mut config)?;
    let state_dir = config.state_dir.clone();
    let mut core = AgentCore::new(config);
    let start = Instant::now();
    let mut lines = LineReader {
        buf: Vec::new(),
        max: max_line_bytes,
        discarding: None,
    };
    let mut input_closed = false;
    let result: io::Result<i32> = async {
        loop {
            let now = start.elapsed().as_millis() as u64;
            let next = core.advance(now);
            if let Some(dir) = &state_dir {
                let lines = core.take_persisted();
                if !lines.is_empty() {
                    crate::state_dir::append(dir, &lines)?;
                }
                crate::state_dir::remove(dir, &core.take_deleted())?;
            }
            if !core.output().is_empty() {
                if let Some(recorder) = recorder.as_mut() {
                    recorder.emitted(core.output())?;
                }
                writer.write_all(core.output()).await?;
                core.clear_output();
            }
            match next {
                Next::Ready => {
                    // Look at input between slices of work (a cancel during a
                    // long stream) without waiting for it.
                    if !input_closed {
                        tokio::select! {
                            biased;
                            event = lines.next(&mut reader) => handle(&mut core, event?, &mut input_closed, &mut recorder),
                            _ = std::future::ready(()) => {}
                        }
                    }
                }
                Next::Exit(code) => {
                    writer.flush().await?;
                    return Ok(code);
                }
                Next::WakeAt(t) => {
                    writer.flush().await?;
                    let deadline = start + Duration::from_millis(t);
                    if input_closed {
                        tokio::time::sleep_until(deadline).await;
                    } else {
                        tokio::select! {
                            event = lines.next(&mut reader) => handle(&mut core, event?, &mut input_closed, &mut recorder),
                            _ = tokio::time::sleep_until(deadline) => {}
                        }
                    }
                }
                Next::WaitForInput => {
                    writer.flush().await?;
                    let event = lines.next(&mut reader).await?;
                    handle(&mut core, event, &mut input_closed, &mut recorder);
                }
            }
        }
    }
    .await;
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        other => other,
    }
}

/// Runs the agent on this process's stdin and stdout.
pub async fn run_stdio(
    config: AgentConfig,
    max_line_bytes: usize,
    recorder: Option<WireRecorder>,
) -> io::Result<i32> {
    let reader = tokio::io::BufReader::with_capacity(64 * 1024, tokio::io::stdin());
    let writer = tokio::io::BufWriter::with_capacity(256 * 1024, tokio::io::stdout());
    run_agent_recorded(config, max_line_bytes, reader, writer, recorder).await
}
