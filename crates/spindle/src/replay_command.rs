//! `spindle replay` (being built; see the issue tracker).

/// Arguments of `spindle replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {}

/// Runs `spindle replay`; returns the process exit code.
pub fn run(args: ReplayArgs) -> anyhow::Result<u8> {
    let _ = args;
    anyhow::bail!("spindle replay is not built yet")
}
