//! `spindle bridge`: a stdio proxy that lets a client of one ACP version use
//! an agent of the other. The client is this process's stdin/stdout, the
//! agent a child process; lines flow through [`spindle_bridge::Bridge`].

use std::process::Stdio;

use anyhow::Context;
use spindle_bridge::{Bridge, BridgeConfig, Policy, Severity, Translated};
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

/// How long the agent gets to exit once its output or its client is gone.
const AGENT_EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Everything the proxy loop reacts to.
#[derive(Debug)]
enum Event {
    ClientLine(String),
    ClientClosed,
    AgentLine(String),
    AgentClosed,
}

/// Runs `spindle bridge`; returns the process exit code.
pub fn run(args: BridgeArgs) -> anyhow::Result<u8> {
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

async fn read_lines<R>(reader: R, tx: mpsc::Sender<Event>, line: fn(String) -> Event, closed: Event)
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                while matches!(buf.last(), Some(b'\n' | b'\r')) {
                    buf.pop();
                }
                let text = match String::from_utf8(std::mem::take(&mut buf)) {
                    Ok(t) => t,
                    Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                };
                if tx.send(line(text)).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.send(closed).await;
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
        Event::ClientLine,
        Event::ClientClosed,
    ));
    tokio::spawn(read_lines(
        agent_out,
        tx,
        Event::AgentLine,
        Event::AgentClosed,
    ));
    let mut client_out = BufWriter::with_capacity(64 * 1024, tokio::io::stdout());

    let mut exit = 0u8;
    'events: while let Some(first) = rx.recv().await {
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
                }
                Event::ClientClosed => {
                    // Closing the agent's stdin asks it to finish.
                    if let Some(mut w) = agent_in.take() {
                        let _ = w.flush().await;
                    }
                    break 'events;
                }
                Event::AgentClosed => {
                    // An agent that closed its stdout but lives on must not
                    // keep the bridge (and its client) waiting.
                    let status = match tokio::time::timeout(AGENT_EXIT_GRACE, child.wait()).await
                    {
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
                    eprintln!("spindle bridge: {what}");
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
    // The agent got EOF on stdin; give it its exit, killing it only if it
    // keeps running after the client left.
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
