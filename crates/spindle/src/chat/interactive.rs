//! The interactive chat (placeholder while the one-shot path is tested).

use super::{ChatArgs, Connected};

/// Runs the interactive chat; returns the exit status.
pub async fn run(args: &ChatArgs, conn: Connected) -> anyhow::Result<u8> {
    let _ = (args, conn);
    anyhow::bail!("interactive chat is not built yet")
}
