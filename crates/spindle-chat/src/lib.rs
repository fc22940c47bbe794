//! `spindle-chat`: the terminal ACP client behind `spindle chat`.
//!
//! Glue between the client runtime (`spindle_protocol::AcpClient`), the
//! transcript engine and the terminal. `one_shot` is `--prompt` (no
//! rendering: the final reply once, at the end); `interactive` is the chat
//! proper, drawing the engine's render ops through `view` and `screen`.
//! Permission questions are parsed and remembered by `spindle_host`, the same
//! code the web page uses.
//!
//! The flags are a [`clap::Args`], so a command line embeds them as they are:
//!
//! ```
//! use clap::Parser;
//!
//! #[derive(clap::Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     chat: spindle_chat::ChatArgs,
//! }
//!
//! let cli = Cli::parse_from(["chat", "--prompt", "hello", "--", "my-agent", "--stdio"]);
//! assert_eq!(cli.chat.prompt.as_deref(), Some("hello"));
//! assert_eq!(cli.chat.agent, ["my-agent", "--stdio"]);
//!
//! /// Starts `my-agent --stdio`, sends the prompt, prints the reply and returns the exit
//! /// status ([`spindle_chat::exit`]). The vector is the agent command used when the command
//! /// line gives none.
//! fn chat(cli: Cli) -> anyhow::Result<u8> {
//!     spindle_chat::run(cli.chat, Vec::new())
//! }
//! ```

#![deny(missing_docs)]

mod ask;
mod completion;
mod controls;
mod interactive;
mod interactive_asks;
mod line_editor;
mod one_shot;
mod permission;
mod prompt_content;
mod remote;
mod render;
mod screen;
mod services;
mod session_open;
mod view;

use std::ffi::OsString;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use spindle_engine::{EngineConfig, ProtocolHint, TranscriptEngine};
use spindle_protocol::transport::ChildHandle;
use spindle_protocol::{AcpClient, ClientEvents, InitializeOutcome, ProtocolChoice, WireRecord};
use tokio::sync::mpsc;

use controls::Controls;
pub use remote::{History, Role};
use services::Services;
use session_open::Opened;

/// Exit statuses of `spindle chat` (also in `--help` and docs/src/exit-codes.md).
pub mod exit {
    /// The turn ended with `end_turn`.
    pub const END_TURN: u8 = 0;
    /// The turn failed: stop reason `error`, an error response, an unknown
    /// stop reason, or the agent refused to initialize / open the session.
    pub const AGENT_ERROR: u8 = 1;
    /// Usage error: bad flags, the agent command could not be started, the
    /// recording could not be written, a prompt refused before sending
    /// (mention outside the directory, image not accepted), `--list` /
    /// `--resume` / `--auth` asking for what the agent does not offer.
    pub const USAGE: u8 = 2;
    /// Stop reason `max_tokens` or `max_turn_requests`.
    pub const LIMIT: u8 = 3;
    /// Stop reason `refusal`.
    pub const REFUSAL: u8 = 4;
    /// The agent exited or closed the connection before the turn ended.
    pub const AGENT_EXITED: u8 = 5;
    /// `--timeout` expired (the turn was cancelled).
    pub const TIMEOUT: u8 = 124;
    /// Cancelled: Ctrl-C, or the agent ended the turn `cancelled`.
    pub const CANCELLED: u8 = 130;
}

const EXIT_CODES_HELP: &str = "\
Exit status of --prompt (interactively: EOF exits with the status of the last
turn, Ctrl-C at the prompt with 130, an agent that exits with 5):
  0    the turn ended with end_turn
  1    the turn failed (stop reason error, error response, unknown stop reason,
       or the agent refused initialize / session/new)
  2    usage error (bad flags, agent command not startable, --record not writable,
       a prompt refused before sending: @path outside the directory, an image the
       agent does not take; --list/--resume the agent does not offer; an --auth
       method the agent does not have)
  3    stop reason max_tokens or max_turn_requests
  4    stop reason refusal
  5    the agent exited or closed the connection before the turn ended
  124  --timeout expired (the turn was cancelled)
  130  cancelled (Ctrl-C, or the agent ended the turn cancelled)

With --prompt, stdout gets the final reply of the turn (agent message text, no
thoughts) followed by one newline, once the turn is over; nothing when there is
no reply. A turn that failed or was cut short prints what the reply was by then.";

/// Arguments of `spindle chat`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES_HELP)]
pub struct ChatArgs {
    /// Send one prompt, print the final reply to stdout and exit with a
    /// status from the stop reason.
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// Approve permission requests (the narrowest allow option) and, under
    /// `--fs ask`, file writes; without it they are asked on the terminal, or
    /// rejected when nobody can answer.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Write every message exchanged with the agent to FILE in the
    /// `spindle replay` input format.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// ACP version to ask for: 1, or 2 (falls back to 1 when the agent
    /// does not speak it).
    #[arg(long, default_value = "1", value_parser = parse_protocol)]
    pub protocol: ProtocolChoice,
    /// Do not show the agent's thoughts.
    #[arg(long)]
    pub hide_thoughts: bool,
    /// With --prompt: give up after SECS seconds, starting the agent
    /// included; a running turn is cancelled (exit 124).
    #[arg(long, value_name = "SECS", requires = "prompt")]
    pub timeout: Option<f64>,
    /// What the agent may do with files under the current directory: off,
    /// read-only, ask (each write is shown as a diff and asked; --yes
    /// approves; refused when nobody can be asked) or allow.
    #[arg(long, value_enum, default_value = "ask", value_name = "POLICY")]
    pub fs: FsFlag,
    /// Whether the agent may run commands in terminals of this client
    /// (shown live in the tool call; killed on Ctrl-C and at exit).
    #[arg(long, value_enum, default_value = "on", value_name = "ON_OFF")]
    pub terminals: OnOff,
    /// Attach an image (PNG, JPEG, GIF, WebP or SVG) to the prompt (repeatable;
    /// interactively: to the first prompt). Refused when the agent does not
    /// accept images. `--attach URL SESSION` (an http(s) or ws(s) URL
    /// first) instead joins the running session SESSION of the ACP endpoint
    /// URL (`session/attach`, see --role and --history).
    #[arg(long = "attach", value_name = "FILE | URL SESSION", num_args = 1..=2, action = clap::ArgAction::Append)]
    pub attach_args: Vec<String>,
    /// The images of `--attach` (set from it by `run`).
    #[arg(skip)]
    pub attach: Vec<PathBuf>,
    /// The session of `--attach URL SESSION` (set from it by `run`).
    #[arg(skip)]
    pub attach_session: Option<(String, String)>,
    /// Use the agent behind this ACP endpoint (RFD "Streamable HTTP &
    /// WebSocket transport": `http(s)://HOST:PORT/acp` or `ws(s)://...`;
    /// `/acp` is added to a URL without a path) instead of starting one. A
    /// token is read from SPINDLE_TOKEN (sent as `Authorization: Bearer`).
    #[arg(long, value_name = "URL", conflicts_with = "agent")]
    pub connect: Option<String>,
    /// The remote transport: ws (WebSocket) or http (HTTP+SSE).
    #[arg(long, default_value = "ws", value_name = "ws|http")]
    pub transport: spindle_protocol::transport::remote::RemoteProfile,
    /// With `--attach URL SESSION`: join as controller (prompt, answer
    /// permissions) or observer (read only).
    #[arg(long, value_enum, default_value = "controller")]
    pub role: Role,
    /// With `--attach URL SESSION`: what to show first: the full session,
    /// only the open permission questions (pending-only), or none.
    #[arg(long, value_enum, default_value = "full")]
    pub history: History,
    /// List the agent's sessions (session/list) and exit.
    #[arg(long, conflicts_with_all = ["prompt", "resume"])]
    pub list: bool,
    /// Open the agent's session ID (session/resume when offered, else
    /// session/load, whose history is shown) instead of a new one.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Sign in with the agent's method METHOD_ID before opening the session.
    #[arg(long, value_name = "METHOD_ID")]
    pub auth: Option<String>,
    /// The agent command (default: `spindle agent`), after `--`.
    #[arg(last = true, value_name = "AGENT_CMD")]
    pub agent: Vec<OsString>,
}

/// `--fs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FsFlag {
    /// No file access.
    Off,
    /// Reads only.
    ReadOnly,
    /// Reads; each write asked.
    Ask,
    /// Reads and writes.
    Allow,
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

impl OnOff {
    /// Whether it is `on`.
    pub fn is_on(self) -> bool {
        self == OnOff::On
    }
}

fn parse_protocol(text: &str) -> Result<ProtocolChoice, String> {
    text.parse()
}

/// Runs `spindle chat`; returns the process exit code.
pub fn run(mut args: ChatArgs, default_agent: Vec<OsString>) -> anyhow::Result<u8> {
    if let Err(message) = split_attach(&mut args) {
        eprintln!("spindle chat: {message}");
        return Ok(exit::USAGE);
    }
    if let Some(secs) = args.timeout
        && !(secs.is_finite() && secs > 0.0)
    {
        eprintln!("spindle chat: --timeout must be a positive number of seconds");
        return Ok(exit::USAGE);
    }
    let command = if args.agent.is_empty() {
        default_agent
    } else {
        args.agent.clone()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let deadline = args
            .timeout
            .map(|secs| tokio::time::Instant::now() + Duration::from_secs_f64(secs));
        let connected = match session_open::connect(&args, &command, deadline).await? {
            Ok(connected) => connected,
            Err(code) => return Ok(code),
        };
        match args.prompt.clone() {
            Some(prompt) => one_shot::run(&args, prompt, connected, deadline).await,
            None => interactive::run(&args, connected).await,
        }
    })
}

/// Splits `--attach` into images and `URL SESSION`.
fn split_attach(args: &mut ChatArgs) -> Result<(), String> {
    let is_url = |s: &str| {
        ["http://", "https://", "ws://", "wss://"]
            .iter()
            .any(|scheme| s.starts_with(scheme))
    };
    // A URL starts `URL SESSION`; every other value is an image.
    let mut values = std::mem::take(&mut args.attach_args).into_iter();
    while let Some(value) = values.next() {
        if !is_url(&value) {
            args.attach.push(PathBuf::from(value));
            continue;
        }
        let Some(session) = values.next() else {
            return Err(format!(
                "--attach {value}: give the session too (--attach URL SESSION)"
            ));
        };
        if args.attach_session.is_some() {
            return Err("--attach URL SESSION may be given once".into());
        }
        if args.connect.is_some() || !args.agent.is_empty() {
            return Err(
                "--attach URL SESSION names its endpoint: no --connect or agent command".into(),
            );
        }
        if args.list || args.resume.is_some() {
            return Err("--attach URL SESSION opens that session: no --list or --resume".into());
        }
        args.attach_session = Some((value, session));
    }
    Ok(())
}

/// A started agent with an open session.
#[derive(Debug)]
pub(crate) struct Connected {
    pub client: AcpClient,
    pub events: ClientEvents,
    pub session_id: String,
    /// The negotiated version (1 or 2).
    pub protocol_version: u16,
    pub agent: remote::AgentEnd,
    pub recorder: Option<Recorder>,
    /// The session's modes and config options.
    pub controls: Controls,
    /// What `initialize` established.
    pub init: Option<InitializeOutcome>,
    /// The working directory (the session's `cwd` and the services' root).
    pub cwd: PathBuf,
    /// How the session was opened.
    pub opened: Opened,
    /// Files and terminals for the agent.
    pub services: Services,
}

impl Connected {
    /// A transcript engine for this session's protocol version.
    pub fn engine(&self) -> TranscriptEngine {
        TranscriptEngine::new(EngineConfig {
            protocol: if self.protocol_version == 2 {
                ProtocolHint::V2
            } else {
                ProtocolHint::V1
            },
            ..EngineConfig::default()
        })
    }

    /// Writes what the wire tap holds to the recording.
    pub fn drain_recording(&mut self) -> anyhow::Result<()> {
        match &mut self.recorder {
            Some(recorder) => recorder.drain(),
            None => Ok(()),
        }
    }

    /// Records a local line (see [`Recorder::write_local`]).
    pub fn record_local(&mut self, line: &str) -> anyhow::Result<()> {
        match &mut self.recorder {
            Some(recorder) => recorder.write_local(line),
            None => Ok(()),
        }
    }

    /// Flushes the recording; call last, after the agent is done.
    pub fn finish_recording(&mut self) -> anyhow::Result<()> {
        match &mut self.recorder {
            Some(recorder) => {
                recorder.drain()?;
                recorder
                    .out
                    .flush()
                    .with_context(|| format!("writing {}", recorder.path.display()))
            }
            None => Ok(()),
        }
    }
}

/// `--record`: the client's wire tap written as recording lines.
#[derive(Debug)]
pub(crate) struct Recorder {
    rx: mpsc::UnboundedReceiver<WireRecord>,
    out: BufWriter<std::fs::File>,
    path: PathBuf,
}

impl Recorder {
    fn new(
        rx: mpsc::UnboundedReceiver<WireRecord>,
        file: std::fs::File,
        path: PathBuf,
    ) -> Recorder {
        Recorder {
            rx,
            out: BufWriter::new(file),
            path,
        }
    }

    /// Writes a local line (what the client's own services did) after what
    /// the tap holds, so it lands in the order the chat saw it.
    fn write_local(&mut self, line: &str) -> anyhow::Result<()> {
        self.drain()?;
        writeln!(self.out, "{line}").with_context(|| format!("writing {}", self.path.display()))?;
        self.out
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Writes what the tap holds and flushes it, so the file is complete up
    /// to the last batch handled even if the chat itself is killed.
    fn drain(&mut self) -> anyhow::Result<()> {
        let mut wrote = false;
        while let Ok(record) = self.rx.try_recv() {
            writeln!(self.out, "{}", record.recording_line())
                .with_context(|| format!("writing {}", self.path.display()))?;
            wrote = true;
        }
        if wrote {
            self.out
                .flush()
                .with_context(|| format!("writing {}", self.path.display()))?;
        }
        Ok(())
    }
}

/// Prints the diagnostics already queued (what the agent got wrong before
/// the session opened).
fn report_diagnostics(events: &mut ClientEvents) {
    while let Some(event) = events.try_recv() {
        if let spindle_protocol::ClientEvent::Diagnostic { message } = event {
            eprintln!("spindle chat: {}", render::sanitize(&message));
        }
    }
}

/// Sleeps until `deadline`; forever without one.
async fn sleep_until_deadline(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// After the connection closed: the agent's exit status and last stderr
/// lines (or why the remote connection closed), on stderr.
pub(crate) async fn report_agent_exit(agent: &remote::AgentEnd) {
    remote::report_end(agent, print_stderr_tail).await;
}

fn print_stderr_tail(agent: &ChildHandle) {
    let tail = agent.stderr_tail();
    if !tail.is_empty() {
        eprintln!("spindle chat: last lines of the agent's stderr:");
        for line in tail.lines() {
            eprintln!("  | {}", render::sanitize(line));
        }
    }
}

/// How many of the agent's last stderr lines a crash report shows.
pub(crate) const AGENT_STDERR_TAIL_LINES: usize = 20;

/// The exit status for a finished turn.
pub(crate) fn exit_code_for_turn(stop_reason: Option<&str>, failed: bool) -> u8 {
    if failed {
        return exit::AGENT_ERROR;
    }
    match stop_reason {
        None | Some("end_turn") => exit::END_TURN,
        Some("max_tokens" | "max_turn_requests") => exit::LIMIT,
        Some("refusal") => exit::REFUSAL,
        Some("cancelled") => exit::CANCELLED,
        Some(_) => exit::AGENT_ERROR,
    }
}
