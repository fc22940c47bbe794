//! `spindle chat` (being built; see the issue tracker).

/// Arguments of `spindle chat`.
#[derive(Debug, clap::Args)]
pub struct ChatArgs {}

/// Runs `spindle chat`; returns the process exit code.
pub fn run(args: ChatArgs, default_agent: Vec<std::ffi::OsString>) -> anyhow::Result<u8> {
    let _ = args;
    let _ = default_agent;
    anyhow::bail!("spindle chat is not built yet")
}
