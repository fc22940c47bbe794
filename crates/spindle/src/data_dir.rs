//! Where Spindle keeps its files.

use std::path::PathBuf;

use anyhow::Context;

/// Where `spindle chat` and `spindle serve` keep their checkpoints, in the data directory.
pub(crate) const CHECKPOINTS_DIR: &str = "checkpoints";

/// Spindle's data directory, created when missing: `$XDG_DATA_HOME/spindle`,
/// else `$HOME/.local/share/spindle`. `spindle serve` keeps its database
/// there, the default agent its sessions.
pub(crate) fn data_dir() -> anyhow::Result<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .context("no data directory: XDG_DATA_HOME and HOME are unset")?;
    let dir = base.join("spindle");
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    Ok(dir)
}

/// Spindle's config directory (not created: it is only read): `$XDG_CONFIG_HOME/spindle`,
/// else `$HOME/.config/spindle`. It holds `agents.toml`.
pub(crate) fn config_dir() -> anyhow::Result<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .context("no config directory: XDG_CONFIG_HOME and HOME are unset")?;
    Ok(base.join("spindle"))
}

/// `<config dir>/mcp.json` when it exists: the MCP servers `chat` and `serve` use without
/// `--mcp-config`.
pub(crate) fn default_mcp_config() -> Option<PathBuf> {
    let path = config_dir()
        .ok()?
        .join(spindle_host::mcp_servers::MCP_CONFIG_FILE_NAME);
    path.is_file().then_some(path)
}
