//! The stdio driver of a [`Bridge`] (feature `proxy`): the client is this process's stdin and
//! stdout, the agent a child process, and every line of either side goes through the bridge.
//! The bridge itself stays sans-I/O; this module is the only place in the crate that knows
//! about processes, pipes and tokio.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use crate::{Bridge, BridgeConfig, BridgeDiagnostic, DEFAULT_MAX_LINE_BYTES, Severity, Translated};

/// What [`run_stdio`] runs.
#[derive(Debug, Clone)]
pub struct StdioProxy {
    /// The bridge's versions and policy.
    pub bridge: BridgeConfig,
    /// The agent command line (program first).
    pub agent: Vec<String>,
    /// Maximum size of one line from either side, in bytes; a longer line is dropped (in
    /// pieces, never held whole) with a warning on stderr.
    pub max_line_bytes: usize,
    /// Also log info-level diagnostics (documented lossy steps) on stderr.
    pub verbose: bool,
}

impl StdioProxy {
    /// A proxy to `agent` with the default line limit, logging warnings and errors only.
    pub fn new(bridge: BridgeConfig, agent: Vec<String>) -> StdioProxy {
        StdioProxy {
            bridge,
            agent,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            verbose: false,
        }
    }
}

/// How long an agent that closed its output gets to exit.
const AGENT_EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How long the agent may go on after the client closed its side (the agent
/// got EOF): it may be finishing a turn whose output the client still reads.
const CLIENT_GONE_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Everything the proxy loop reacts to.
#[derive(Debug, PartialEq, Eq)]
enum Event {
    ClientLine(String),
    ClientClosed,
    AgentLine(String),
    AgentClosed,
    /// A line over `--max-line-bytes` was dropped: its side and its length.
    Oversized(Side, usize),
}

/// Runs the proxy until either side is done; returns the process exit code: 0, or 2 when the
/// agent failed (it exited with an error, or was killed for not exiting). Diagnostics go to
/// stderr, prefixed `spindle bridge:`.
pub fn run_stdio(config: StdioProxy) -> std::io::Result<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let code = runtime.block_on(proxy(config));
    // F8: the client-stdin reader sits in a blocking read on tokio's blocking
    // pool, which dropping the runtime would wait for; when the agent died
    // the client may keep stdin open, so do not wait for it.
    runtime.shutdown_background();
    code
}

/// Which side a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Agent,
}

impl Side {
    fn line(self, text: String) -> Event {
        match self {
            Side::Client => Event::ClientLine(text),
            Side::Agent => Event::AgentLine(text),
        }
    }

    fn closed(self) -> Event {
        match self {
            Side::Client => Event::ClientClosed,
            Side::Agent => Event::AgentClosed,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Agent => "agent",
        }
    }
}

fn line_event(side: Side, mut bytes: &[u8]) -> Event {
    while let [rest @ .., b'\r'] = bytes {
        bytes = rest;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    };
    side.line(text)
}

/// Reads lines from one side until end of input. A line longer than
/// `max_line_bytes` is never buffered whole (F10): it is discarded in pieces
/// as it arrives and reported as [`Event::Oversized`].
async fn read_lines<R>(reader: R, tx: mpsc::Sender<Event>, side: Side, max_line_bytes: usize)
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    // The start of a line that spans reads.
    let mut partial: Vec<u8> = Vec::new();
    // Bytes of an over-long line dropped so far.
    let mut discarding: Option<usize> = None;
    while let Ok(available) = reader.fill_buf().await {
        if available.is_empty() {
            // A last line without a newline still counts.
            let event = match discarding {
                Some(bytes) => Some(Event::Oversized(side, bytes)),
                None => (!partial.is_empty()).then(|| line_event(side, &partial)),
            };
            if let Some(event) = event
                && tx.send(event).await.is_err()
            {
                return;
            }
            break;
        }
        let (event, used) = match memchr::memchr(b'\n', available) {
            Some(i) => {
                let event = if let Some(bytes) = discarding.take() {
                    Event::Oversized(side, bytes + i)
                } else if partial.len() + i > max_line_bytes {
                    let bytes = partial.len() + i;
                    partial = Vec::new();
                    Event::Oversized(side, bytes)
                } else if partial.is_empty() {
                    line_event(side, &available[..i])
                } else {
                    partial.extend_from_slice(&available[..i]);
                    let event = line_event(side, &partial);
                    partial.clear();
                    event
                };
                (Some(event), i + 1)
            }
            None => {
                let n = available.len();
                if let Some(bytes) = discarding.as_mut() {
                    *bytes += n;
                } else if partial.len() + n > max_line_bytes {
                    discarding = Some(partial.len() + n);
                    partial = Vec::new();
                } else {
                    partial.extend_from_slice(available);
                }
                (None, n)
            }
        };
        reader.consume(used);
        if let Some(event) = event
            && tx.send(event).await.is_err()
        {
            return;
        }
    }
    let _ = tx.send(side.closed()).await;
}

fn log(diagnostics: &[BridgeDiagnostic], verbose: bool) {
    for d in diagnostics {
        if d.severity > Severity::Info || verbose {
            eprintln!("spindle bridge: {d}");
        }
    }
}

async fn proxy(args: StdioProxy) -> std::io::Result<u8> {
    let mut bridge = Bridge::new(args.bridge);
    let (program, rest) = args.agent.split_first().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "no agent command given")
    })?;
    let mut child: Child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("starting the agent {program:?}: {e}"))
        })?;
    let mut agent_in: Option<BufWriter<ChildStdin>> = child
        .stdin
        .take()
        .map(|s| BufWriter::with_capacity(64 * 1024, s));
    let agent_out = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("the agent's stdout is not piped"))?;

    let (tx, mut rx) = mpsc::channel::<Event>(1024);
    tokio::spawn(read_lines(
        tokio::io::stdin(),
        tx.clone(),
        Side::Client,
        args.max_line_bytes,
    ));
    tokio::spawn(read_lines(agent_out, tx, Side::Agent, args.max_line_bytes));
    let mut client_out = BufWriter::with_capacity(64 * 1024, tokio::io::stdout());

    let mut exit = 0u8;
    // Set once the client closed its side: the agent then gets EOF and
    // this long to finish; what it still writes is relayed meanwhile.
    let mut client_gone: Option<tokio::time::Instant> = None;
    // The client closed its side while the bridge still held lines of it (sent before the
    // agent answered initialize): the agent's stdin closes once they are written.
    let mut close_agent_in_when_released = false;
    'events: loop {
        let first = match client_gone {
            None => rx.recv().await,
            Some(deadline) => match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(event) => event,
                Err(_) => {
                    let _ = child.kill().await;
                    break 'events;
                }
            },
        };
        let Some(first) = first else { break };
        let mut next = Some(first);
        // Drain what is ready, then flush once: batching without delaying.
        while let Some(event) = next {
            match event {
                Event::ClientLine(line) => {
                    let t = bridge.from_client(&line);
                    if !write_out(&t, &mut client_out, &mut agent_in, args.verbose).await {
                        break 'events;
                    }
                }
                Event::AgentLine(line) => {
                    let t = bridge.from_agent(&line);
                    if !write_out(&t, &mut client_out, &mut agent_in, args.verbose).await {
                        break 'events;
                    }
                    if close_agent_in_when_released && !bridge.holds_client_lines() {
                        close_agent_in_when_released = false;
                        if let Some(mut w) = agent_in.take() {
                            let _ = w.flush().await;
                        }
                    }
                }
                Event::Oversized(side, bytes) => {
                    eprintln!(
                        "spindle bridge: warning[line_too_long]: dropped a {bytes}-byte line from the {} (over --max-line-bytes {})",
                        side.name(),
                        args.max_line_bytes
                    );
                }
                Event::ClientClosed => {
                    // Closing the agent's stdin asks it to finish; its last
                    // output still goes to the client (a half-closed pipe).
                    // Lines the bridge holds for the agent go first.
                    if bridge.holds_client_lines() {
                        close_agent_in_when_released = true;
                    } else if let Some(mut w) = agent_in.take() {
                        let _ = w.flush().await;
                    }
                    client_gone = Some(tokio::time::Instant::now() + CLIENT_GONE_GRACE);
                }
                Event::AgentClosed => {
                    // An agent that closed its stdout but lives on must not
                    // keep the bridge (and its client) waiting.
                    let status = match tokio::time::timeout(AGENT_EXIT_GRACE, child.wait()).await {
                        Ok(status) => status.ok(),
                        Err(_) => {
                            let _ = child.kill().await;
                            None
                        }
                    };
                    let failed = !status.is_some_and(|s| s.success());
                    let what = match status {
                        Some(s) => format!("the agent exited ({s})"),
                        None => "the agent's output closed".to_owned(),
                    };
                    if failed || client_gone.is_none() {
                        eprintln!("spindle bridge: {what}");
                    }
                    let lines = bridge.fail_pending(&what);
                    for l in lines {
                        if write_line(&mut client_out, &l).await.is_err() {
                            break;
                        }
                    }
                    let _ = client_out.flush().await;
                    if failed {
                        exit = 2;
                    }
                    break 'events;
                }
            }
            next = rx.try_recv().ok();
        }
        if client_out.flush().await.is_err() {
            break;
        }
        if let Some(w) = agent_in.as_mut()
            && w.flush().await.is_err()
        {
            agent_in = None;
        }
    }
    let _ = client_out.flush().await;
    drop(agent_in);
    // The agent got EOF on stdin (or its output ended); give it its exit,
    // killing it only if it keeps running.
    if exit == 0 {
        match tokio::time::timeout(AGENT_EXIT_GRACE, child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                let _ = child.kill().await;
            }
        }
    }
    Ok(exit)
}

async fn write_line<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    line: &str,
) -> std::io::Result<()> {
    w.write_all(line.as_bytes()).await?;
    w.write_all(b"\n").await
}

/// Writes a translation; false when the client's stdout is gone.
async fn write_out(
    t: &Translated,
    client: &mut BufWriter<tokio::io::Stdout>,
    agent: &mut Option<BufWriter<ChildStdin>>,
    verbose: bool,
) -> bool {
    log(&t.diagnostics, verbose);
    if let Some(w) = agent.as_mut() {
        for l in &t.to_agent {
            if write_line(w, l).await.is_err() {
                eprintln!("spindle bridge: the agent's stdin closed");
                *agent = None;
                break;
            }
        }
    }
    for l in &t.to_client {
        // Broken pipe: the client left; exit quietly.
        if write_line(client, l).await.is_err() {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events `read_lines` makes of `input` with lines of at most `max` bytes.
    fn events(input: &'static [u8], max: usize) -> Vec<Event> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let (tx, mut rx) = mpsc::channel(16);
            read_lines(input, tx, Side::Client, max).await;
            let mut events = Vec::new();
            while let Some(event) = rx.recv().await {
                events.push(event);
            }
            events
        })
    }

    #[test]
    fn lines_lose_their_line_ends_and_a_last_line_needs_no_newline() {
        assert_eq!(
            events(b"one\r\n\ntwo", 100),
            [
                Event::ClientLine("one".into()),
                Event::ClientLine(String::new()),
                Event::ClientLine("two".into()),
                Event::ClientClosed,
            ]
        );
    }

    /// F10: an over-long line is reported with its length and dropped, the next line is whole.
    #[test]
    fn an_over_long_line_is_dropped_and_reported_with_its_length() {
        assert_eq!(
            events(b"0123456789\nok\n0123456789", 4),
            [
                Event::Oversized(Side::Client, 10),
                Event::ClientLine("ok".into()),
                Event::Oversized(Side::Client, 10),
                Event::ClientClosed,
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_dropped() {
        assert_eq!(
            events(b"a\xffb\n", 100),
            [Event::ClientLine("a\u{fffd}b".into()), Event::ClientClosed]
        );
    }
}
