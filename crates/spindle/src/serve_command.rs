//! `spindle serve` (being built; see the issue tracker).

/// Arguments of `spindle serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

/// Runs `spindle serve`; returns the process exit code.
pub fn run(args: ServeArgs, default_agent: Vec<std::ffi::OsString>) -> anyhow::Result<u8> {
    let _ = args;
    let _ = default_agent;
    anyhow::bail!("spindle serve is not built yet")
}
