//! `spindle agent` (being built; see the issue tracker).

/// Arguments of `spindle agent`.
#[derive(Debug, clap::Args)]
pub struct AgentArgs {}

/// Runs `spindle agent`; returns the process exit code.
pub fn run(args: AgentArgs) -> anyhow::Result<u8> {
    let _ = args;
    anyhow::bail!("spindle agent is not built yet")
}
