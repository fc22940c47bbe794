//! `spindle bridge` (being built; see the issue tracker).

/// Arguments of `spindle bridge`.
#[derive(Debug, clap::Args)]
pub struct BridgeArgs {}

/// Runs `spindle bridge`; returns the process exit code.
pub fn run(args: BridgeArgs) -> anyhow::Result<u8> {
    let _ = args;
    anyhow::bail!("spindle bridge is not built yet")
}
