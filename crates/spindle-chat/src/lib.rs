//! `spindle-chat`: the terminal ACP client behind `spindle chat`.
//!
//! Glue between the client runtime (`spindle_protocol::AcpClient`), the
//! transcript engine and the terminal. `one_shot` is `--prompt` (no
//! rendering: the final reply once, at the end); `interactive` is the chat
//! proper: one driver of the session for two front ends (`front`): the
//! full-screen terminal UI (`tui`) on a terminal, and the line chat
//! (`view` and `screen`) for pipes and `--plain`.
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

mod args;
mod ask;
mod checkpoint_commands;
mod completion;
mod controls;
mod elicitation_ask;
mod front;
mod full_screen;
mod interactive;
mod interactive_asks;
mod interactive_elicitation;
mod interactive_prompts;
mod line_editor;
mod one_shot;
mod outcome;
mod permission;
mod printed;
mod prompt_content;
mod prompts_in_flight;
mod queue_commands;
mod recorder;
mod remote;
mod render;
mod screen;
mod services;
mod session_commands;
mod session_open;
mod tui;
mod view;
mod wrap;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

pub use args::{ChatArgs, FsFlag, OnOff, exit};
pub use remote::{History, Role};

/// Runs `spindle chat`; returns the process exit code. Meant to end the process: with
/// `--prompt`, the turn's transcript is not freed (the exit frees it at once).
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
        if args.connect.is_some() || !args.agent.is_empty() || args.agent_id.is_some() {
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
