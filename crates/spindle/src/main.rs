//! `spindle`: the command-line entry point. Glue only: every subcommand lives in
//! its own module and the protocol logic lives in the library crates.

mod agent_choices;
mod agent_command;
mod agents_command;
mod bridge_command;
mod data_dir;
mod replay_command;
mod serve_command;

use anyhow::Context;
use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use data_dir::data_dir;

/// Spindle: ACP streaming done right.
#[derive(Debug, Parser)]
#[command(name = "spindle", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Rebuild a transcript from a recorded JSONL stream.
    Replay(replay_command::ReplayArgs),
    /// Run the built-in deterministic reference agent on stdio.
    Agent(agent_command::AgentArgs),
    /// Chat with an agent in the terminal (default: the reference agent).
    Chat(spindle_chat::ChatArgs),
    /// Translate between a v1/v2 client on stdio and a v1/v2 agent child process.
    Bridge(bridge_command::BridgeArgs),
    /// Serve the web client (default: the reference agent, SQLite in the data directory).
    Serve(serve_command::ServeArgs),
    /// Agents from the ACP registry: list, show, install, update, remove, doctor.
    Agents(agents_command::AgentsArgs),
}

/// The directory under the data directory where the default agent keeps its
/// sessions (`--state-dir`).
const AGENT_SESSIONS_DIR: &str = "agent-sessions";

/// The command line that starts the built-in reference agent: this same binary
/// with the `agent` subcommand. Clients use it when no agent command is given.
/// It keeps its sessions in `<data dir>/agent-sessions`, so `spindle chat
/// --list` / `--resume` and the page's history reach the sessions of earlier
/// processes; without a usable data directory they live as long as the agent.
fn default_agent_command() -> Vec<OsString> {
    let exe = std::env::current_exe()
        .map(OsString::from)
        .unwrap_or_else(|_| OsString::from("spindle"));
    let mut command = vec![exe, OsString::from("agent")];
    let sessions = data_dir().and_then(|dir| {
        let sessions = dir.join(AGENT_SESSIONS_DIR);
        std::fs::create_dir_all(&sessions)
            .with_context(|| format!("cannot create {}", sessions.display()))?;
        Ok(sessions)
    });
    match sessions {
        Ok(sessions) => command.extend([OsString::from("--state-dir"), sessions.into()]),
        Err(error) => {
            tracing::warn!("the reference agent keeps its sessions in memory only: {error:#}")
        }
    }
    command
}

/// `spindle chat`: the agent is `--agent ID`, else the command after `--`, else the one
/// agents.toml marks `default = true`, else the reference agent.
fn chat(mut args: spindle_chat::ChatArgs) -> anyhow::Result<u8> {
    if args.mcp_config.is_none() {
        args.mcp_config = data_dir::default_mcp_config();
    }
    if args.checkpoint_dir.is_none() {
        args.checkpoint_dir = data_dir()
            .ok()
            .map(|dir| dir.join(data_dir::CHECKPOINTS_DIR));
    }
    // `--connect URL` and `--attach URL SESSION` start no agent.
    let remote = args.connect.is_some() || args.attach_args.iter().any(|a| a.contains("://"));
    if !args.agent.is_empty() || (remote && args.agent_id.is_none()) {
        return spindle_chat::run(args, Vec::new());
    }
    let id = match args.agent_id.clone() {
        Some(id) => Some(id),
        None => agent_choices::configured_default(agent_choices::agents_dirs().as_ref())?,
    };
    let Some(id) = id else {
        // Only the default agent needs the data directory made.
        return spindle_chat::run(args, default_agent_command());
    };
    let (command, env) = agent_choices::chat_agent(&id, default_agent_command)?;
    args.agent_env = env;
    spindle_chat::run(args, command)
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SPINDLE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Logs go to stderr: stdout belongs to the protocol in `agent` and `bridge`.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay(args) => replay_command::run(args),
        Command::Agent(args) => agent_command::run(args),
        Command::Chat(args) => chat(args),
        Command::Bridge(args) => bridge_command::run(args),
        Command::Serve(args) => serve_command::run(args, default_agent_command),
        Command::Agents(args) => agents_command::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            if is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            eprintln!("spindle: error: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
