//! What a [`crate::Host`] may do: the file-system policy, whether terminals
//! are offered, the workspace root (and the session's additional
//! directories) and the size limits.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use spindle_protocol::ClientOptions;

/// What the agent may do with files under the workspace root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FsPolicy {
    /// No file access: neither capability is advertised; requests are refused.
    Off,
    /// Reads only (`fs.readTextFile`); a write is refused with a clear error.
    ReadOnly,
    /// Reads, and writes after the user approved each one
    /// ([`crate::HostReply::NeedsApproval`]).
    Ask,
    /// Reads and writes at once.
    Allow,
}

impl FsPolicy {
    /// The flag spelling: `off`, `read-only`, `ask`, `allow`.
    pub fn as_str(self) -> &'static str {
        match self {
            FsPolicy::Off => "off",
            FsPolicy::ReadOnly => "read-only",
            FsPolicy::Ask => "ask",
            FsPolicy::Allow => "allow",
        }
    }

    /// Reads are allowed.
    pub fn can_read(self) -> bool {
        self != FsPolicy::Off
    }

    /// Writes are allowed (possibly after approval).
    pub fn can_write(self) -> bool {
        matches!(self, FsPolicy::Ask | FsPolicy::Allow)
    }
}

impl fmt::Display for FsPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FsPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(FsPolicy::Off),
            "read-only" => Ok(FsPolicy::ReadOnly),
            "ask" => Ok(FsPolicy::Ask),
            "allow" => Ok(FsPolicy::Allow),
            other => Err(format!(
                "unknown file-system policy {other:?} (expected off, read-only, ask or allow)"
            )),
        }
    }
}

/// Size and count limits. Every one is enforced with a clear error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLimits {
    /// Most bytes one `fs/read_text_file` returns (and the largest file a
    /// read without `line`/`limit` accepts; bigger files are read in parts).
    pub max_read_bytes: u64,
    /// Largest `content` of one `fs/write_text_file`.
    pub max_write_bytes: usize,
    /// Output a terminal keeps when `terminal/create` gives no `outputByteLimit`.
    pub default_output_byte_limit: usize,
    /// The most output a terminal keeps, whatever `outputByteLimit` asks for.
    pub max_output_byte_limit: usize,
    /// The most output of one terminal sent as live [`crate::HostEvent`]s (the
    /// display); past it one notice says the rest is not shown.
    pub max_display_output_bytes: usize,
    /// Terminals open at once (released ones do not count).
    pub max_terminals: usize,
    /// A mentioned file up to this size is embedded as text.
    pub max_mention_text_bytes: u64,
}

impl Default for HostLimits {
    fn default() -> Self {
        const MIB: usize = 1024 * 1024;
        HostLimits {
            max_read_bytes: 16 * MIB as u64,
            max_write_bytes: 16 * MIB,
            default_output_byte_limit: MIB,
            max_output_byte_limit: 16 * MIB,
            max_display_output_bytes: 4 * MIB,
            max_terminals: 64,
            max_mention_text_bytes: MIB as u64,
        }
    }
}

/// The configuration of one [`crate::Host`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// The workspace root (the session's working directory): every path the
    /// agent names, and every terminal's `cwd`, must lie under it.
    pub root: PathBuf,
    /// The session's additional directories (ACP `additionalDirectories`,
    /// absolute): paths under them are in scope too, with the same checks
    /// (no `..`, no symbolic link out of every root, no system trees).
    /// Relative paths are still taken from [`HostConfig::root`].
    pub additional_roots: Vec<PathBuf>,
    /// File access.
    pub fs: FsPolicy,
    /// Offer terminals (`terminal: true`).
    pub terminals: bool,
    /// Size and count limits.
    pub limits: HostLimits,
}

impl HostConfig {
    /// `root` with policy [`FsPolicy::Ask`], terminals on, default limits,
    /// no additional directories.
    pub fn new(root: impl Into<PathBuf>) -> HostConfig {
        HostConfig {
            root: root.into(),
            additional_roots: Vec::new(),
            fs: FsPolicy::Ask,
            terminals: true,
            limits: HostLimits::default(),
        }
    }

    /// Sets the client capabilities this configuration offers:
    /// `fs.readTextFile` unless the policy is `off`, `fs.writeTextFile` for
    /// `ask` and `allow`, `terminal` when terminals are on.
    pub fn advertise(&self, options: &mut ClientOptions) {
        options.fs_read_text_file = self.fs.can_read();
        options.fs_write_text_file = self.fs.can_write();
        options.terminal = self.terminals;
    }
}
