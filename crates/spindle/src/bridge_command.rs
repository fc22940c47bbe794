//! `spindle bridge`: a stdio proxy that lets a client of one ACP version use
//! an agent of the other. The client is this process's stdin/stdout, the
//! agent a child process; lines flow through [`spindle_bridge::Bridge`].

use std::process::Stdio;

use anyhow::Context;
use spindle_bridge::{Bridge, BridgeConfig, DEFAULT_MAX_LINE_BYTES, Policy, Severity, Translated};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// Arguments of `spindle bridge`.
#[derive(Debug, clap::Args)]
pub struct BridgeArgs {
    /// Protocol version of the client (default: learnt from its initialize).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=2))]
    pub client_protocol: Option<u16>,
    /// Protocol version of the agent (default: the client's, corrected by
    /// the agent's initialize response).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=2))]
    pub agent_protocol: Option<u16>,
    /// What to do with things the other version cannot represent.
    #[arg(long, value_enum, default_value_t = PolicyArg::Strict)]
    pub policy: PolicyArg,
    /// Also log info-level diagnostics (documented lossy steps).
    #[arg(long)]
    pub verbose: bool,
    /// Maximum size of one line from either side, in bytes; a longer line is
    /// dropped (in pieces, never held whole) with a warning on stderr.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES, value_name = "BYTES")]
    pub max_line_bytes: usize,
    /// Serve the agent over ACP's remote transport at `http://ADDR/acp` (RFD "Streamable HTTP
    /// & WebSocket") instead of stdio: a headless gateway, no web page. Each remote
    /// `session/new` starts its own agent process; the agent speaks `--agent-protocol` (default
    /// 2), and each connection speaks the version it asks for at `initialize` (translated).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// With --listen: the database of sessions (default: a fresh file in the temporary
    /// directory, removed at exit). Keep one to load sessions after a restart.
    #[arg(long, value_name = "PATH", requires = "listen")]
    pub db: Option<std::path::PathBuf>,
    /// With --listen: the access token clients send as `Authorization: Bearer` (required for a
    /// non-loopback address; also read from SPINDLE_TOKEN).
    #[arg(long, requires = "listen")]
    pub token: Option<String>,
    /// The agent command line.
    #[arg(last = true, required = true, value_name = "AGENT_CMD")]
    pub agent: Vec<String>,
}

/// `--policy` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyArg {
    /// Reject unrepresentable input visibly.
    Strict,
    /// Use the documented fallback.
    Degrade,
}

/// How long an agent that closed its output gets to exit.
const AGENT_EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How long the agent may go on after the client closed its side (the agent
/// got EOF): it may be finishing a turn whose output the client still reads.
const CLIENT_GONE_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Everything the proxy loop reacts to.
#[derive(Debug)]
enum Event {
    ClientLine(String),
    ClientClosed,
    AgentLine(String),
    AgentClosed,
    /// A line over `--max-line-bytes` was dropped: its side and its length.
    Oversized(Side, usize),
}

/// Runs `spindle bridge`; returns the process exit code.
pub fn run(args: BridgeArgs) -> anyhow::Result<u8> {
    if let Some(address) = args.listen {
        return listen(address, args);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let code = runtime.block_on(proxy(args));
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

fn log(diagnostics: &[spindle_bridge::BridgeDiagnostic], verbose: bool) {
    for d in diagnostics {
        if d.severity > Severity::Info || verbose {
            eprintln!("spindle bridge: {d}");
        }
    }
}

async fn proxy(args: BridgeArgs) -> anyhow::Result<u8> {
    let policy = match args.policy {
        PolicyArg::Strict => Policy::Strict,
        PolicyArg::Degrade => Policy::Degrade,
    };
    let mut bridge = Bridge::new(BridgeConfig {
        client_protocol: args.client_protocol,
        agent_protocol: args.agent_protocol,
        policy,
    });
    let (program, rest) = args.agent.split_first().context("no agent command given")?;
    let mut child: Child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting the agent {program:?}"))?;
    let mut agent_in: Option<BufWriter<ChildStdin>> = child
        .stdin
        .take()
        .map(|s| BufWriter::with_capacity(64 * 1024, s));
    let agent_out = child.stdout.take().context("agent stdout")?;

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

/// `spindle bridge --listen ADDR -- AGENT_CMD`: `spindle serve`'s `/acp` without the page, the
/// agent's files and terminals off (no page to review a write or show a terminal; the remote
/// client is the user).
fn listen(address: std::net::SocketAddr, args: BridgeArgs) -> anyhow::Result<u8> {
    let (db, temporary) = match args.db {
        Some(db) => (db, false),
        None => {
            let name = format!("spindle-bridge-{}.db", std::process::id());
            (std::env::temp_dir().join(name), true)
        }
    };
    let config = spindle_web::ServeConfig {
        bind: address,
        db: db.clone(),
        token: args
            .token
            .or_else(|| std::env::var("SPINDLE_TOKEN").ok())
            .filter(|t| !t.is_empty()),
        allow_hosts: Vec::new(),
        agent: spindle_web::AgentSettings {
            command: args.agent.iter().map(std::ffi::OsString::from).collect(),
            protocol_version: u64::from(args.agent_protocol.unwrap_or(2)),
            cwd: std::env::current_dir().context("no current directory")?,
            startup_timeout: std::time::Duration::from_secs(30),
            fs: spindle_web::FsPolicy::Off,
            terminals: false,
            remote: None,
        },
        limits: spindle_web::HubLimits::default(),
        replica: spindle_web::ReplicaConfig::default(),
    };
    let options = spindle_web::ServeOptions {
        page: false,
        ..spindle_web::ServeOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let served = runtime.block_on(async move {
        let server = spindle_web::Server::start_with(config, options).await?;
        let url = server.url();
        let (base, query) = url.split_once('?').unwrap_or((&url, ""));
        let acp = format!("{}acp", base);
        match query {
            "" => println!("spindle bridge: listening on {acp}"),
            _ => println!(
                "spindle bridge: listening on {acp} (send the token as Authorization: Bearer)"
            ),
        }
        server.run_until(shutdown_signal()).await?;
        anyhow::Ok(())
    });
    if temporary {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = db.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
    served.map(|()| 0)
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        match terminate {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
