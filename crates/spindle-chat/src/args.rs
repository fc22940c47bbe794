//! The flags of `spindle chat` ([`ChatArgs`]) and its exit statuses ([`exit`]).

use std::ffi::OsString;
use std::path::PathBuf;

use spindle_protocol::ProtocolChoice;

use crate::remote::{History, Role};

/// Exit statuses of `spindle chat` (also in `--help` and docs/src/exit-codes.md).
pub mod exit {
    /// The turn ended with `end_turn`.
    pub const END_TURN: u8 = 0;
    /// The turn failed: stop reason `error`, an error response, an unknown
    /// stop reason, or the agent refused to initialize / open the session.
    pub const AGENT_ERROR: u8 = 1;
    /// Usage error: bad flags, the agent command could not be started, the
    /// recording could not be written, a prompt refused before sending
    /// (mention outside the directory, image not accepted), `--list` /
    /// `--resume` / `--auth` asking for what the agent does not offer.
    pub const USAGE: u8 = 2;
    /// Stop reason `max_tokens` or `max_turn_requests`.
    pub const LIMIT: u8 = 3;
    /// Stop reason `refusal`.
    pub const REFUSAL: u8 = 4;
    /// The agent exited or closed the connection before the turn ended.
    pub const AGENT_EXITED: u8 = 5;
    /// `--timeout` expired (the turn was cancelled).
    pub const TIMEOUT: u8 = 124;
    /// Cancelled: Ctrl-C, or the agent ended the turn `cancelled`.
    pub const CANCELLED: u8 = 130;
}

const EXIT_CODES_HELP: &str = "\
Exit status of --prompt (interactively: EOF exits with the status of the last
turn, Ctrl-C at the prompt with 130, an agent that exits with 5):
  0    the turn ended with end_turn
  1    the turn failed (stop reason error, error response, unknown stop reason,
       or the agent refused initialize / session/new)
  2    usage error (bad flags, agent command not startable, --record not writable,
       a prompt refused before sending: @path outside the directory, an image the
       agent does not take; --list/--resume the agent does not offer; an --auth
       method the agent does not have)
  3    stop reason max_tokens or max_turn_requests
  4    stop reason refusal
  5    the agent exited or closed the connection before the turn ended
  124  --timeout expired (the turn was cancelled)
  130  cancelled (Ctrl-C, or the agent ended the turn cancelled)

With --prompt, stdout gets the final reply of the turn (agent message text, no
thoughts) followed by one newline, once the turn is over; nothing when there is
no reply. A turn that failed or was cut short prints what the reply was by then.";

/// Arguments of `spindle chat`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES_HELP)]
pub struct ChatArgs {
    /// Send one prompt, print the final reply to stdout and exit with a
    /// status from the stop reason.
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// Approve permission requests (the narrowest allow option) and, under
    /// `--fs ask`, file writes; without it they are asked on the terminal, or
    /// rejected when nobody can answer.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Write every message exchanged with the agent to FILE in the
    /// `spindle replay` input format.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// The MCP servers to give the agent, in the `{"mcpServers": {...}}`
    /// shape other clients use (default: `mcp.json` in the configuration
    /// directory, when it exists). http and sse servers go only to agents
    /// that advertise them; each one left out is named on stderr.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// Give the agent DIR as an additional workspace root besides the
    /// current directory (repeatable; `additionalDirectories` of ACP, sent
    /// only to agents that advertise it, else a note says so). The agent's
    /// file reads and writes (`--fs`) are allowed under DIR too. DIR must
    /// exist; a relative DIR is taken from the current directory.
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// Do not keep checkpoints. By default the folder (and each --add-dir)
    /// is kept before every prompt, outside it in Spindle's data directory
    /// (.gitignore respected, your .git untouched), so `/undo` can put the
    /// files back whether the agent wrote them itself or through Spindle.
    #[arg(long)]
    pub no_checkpoints: bool,
    /// Where checkpoints are kept (set by the binary: `<data dir>/checkpoints`).
    #[arg(skip)]
    pub checkpoint_dir: Option<PathBuf>,
    /// ACP version to ask for: 1, or 2 (falls back to 1 when the agent
    /// does not speak it).
    #[arg(long, default_value = "1", value_parser = parse_protocol)]
    pub protocol: ProtocolChoice,
    /// On a terminal, chat line by line (scrollback, a redrawn bottom
    /// region) instead of the full-screen interface (`--prompt` and piped
    /// input are always line by line).
    #[arg(long)]
    pub plain: bool,
    /// Do not show the agent's thoughts.
    #[arg(long)]
    pub hide_thoughts: bool,
    /// With --prompt: give up after SECS seconds, starting the agent
    /// included; a running turn is cancelled (exit 124).
    #[arg(long, value_name = "SECS", requires = "prompt")]
    pub timeout: Option<f64>,
    /// What the agent may do with files under the current directory: off,
    /// read-only, ask (each write is shown as a diff and asked; --yes
    /// approves; refused when nobody can be asked) or allow.
    #[arg(long, value_enum, default_value = "ask", value_name = "POLICY")]
    pub fs: FsFlag,
    /// Whether the agent may run commands in terminals of this client
    /// (shown live in the tool call; killed on Ctrl-C and at exit).
    #[arg(long, value_enum, default_value = "on", value_name = "ON_OFF")]
    pub terminals: OnOff,
    /// Attach an image (PNG, JPEG, GIF, WebP or SVG) to the prompt (repeatable;
    /// interactively: to the first prompt). Refused when the agent does not
    /// accept images. `--attach URL SESSION` (an http(s) or ws(s) URL
    /// first) instead joins the running session SESSION of the ACP endpoint
    /// URL (`session/attach`, see --role and --history).
    #[arg(long = "attach", value_name = "FILE | URL SESSION", num_args = 1..=2, action = clap::ArgAction::Append)]
    pub attach_args: Vec<String>,
    /// The images of `--attach` (set from it by `run`).
    #[arg(skip)]
    pub attach: Vec<PathBuf>,
    /// The session of `--attach URL SESSION` (set from it by `run`).
    #[arg(skip)]
    pub attach_session: Option<(String, String)>,
    /// Use the agent behind this ACP endpoint (RFD "Streamable HTTP &
    /// WebSocket transport": `http(s)://HOST:PORT/acp` or `ws(s)://...`;
    /// `/acp` is added to a URL without a path) instead of starting one. A
    /// token is read from SPINDLE_TOKEN (sent as `Authorization: Bearer`).
    #[arg(long, value_name = "URL", conflicts_with = "agent")]
    pub connect: Option<String>,
    /// The remote transport: ws (WebSocket) or http (HTTP+SSE).
    #[arg(long, default_value = "ws", value_name = "ws|http")]
    pub transport: spindle_protocol::transport::remote::RemoteProfile,
    /// With `--attach URL SESSION`: join as controller (prompt, answer
    /// permissions) or observer (read only).
    #[arg(long, value_enum, default_value = "controller")]
    pub role: Role,
    /// With `--attach URL SESSION`: what to show first: the full session,
    /// only the open permission questions (pending-only), or none.
    #[arg(long, value_enum, default_value = "full")]
    pub history: History,
    /// List the agent's sessions (session/list) and exit.
    #[arg(long, conflicts_with_all = ["prompt", "resume"])]
    pub list: bool,
    /// Open the agent's session ID (session/resume when offered, else
    /// session/load, whose history is shown) instead of a new one.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Sign in with the agent's method METHOD_ID before opening the session.
    #[arg(long, value_name = "METHOD_ID")]
    pub auth: Option<String>,
    /// Run the installed agent ID (`spindle agents list`; `spindle` is the
    /// built-in reference agent) with the registry's and agents.toml's args
    /// and env. Default: the agent agents.toml marks `default = true`, else
    /// the reference agent.
    #[arg(long = "agent", value_name = "ID", conflicts_with_all = ["agent", "connect"])]
    pub agent_id: Option<String>,
    /// Environment variables for the agent command (set by the binary from
    /// `--agent ID`'s install record and settings).
    #[arg(skip)]
    pub agent_env: Vec<(OsString, OsString)>,
    /// The agent command (default: `spindle agent`), after `--`.
    #[arg(last = true, value_name = "AGENT_CMD")]
    pub agent: Vec<OsString>,
}

/// `--fs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FsFlag {
    /// No file access.
    Off,
    /// Reads only.
    ReadOnly,
    /// Reads; each write asked.
    Ask,
    /// Reads and writes.
    Allow,
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

impl OnOff {
    /// Whether it is `on`.
    pub fn is_on(self) -> bool {
        self == OnOff::On
    }
}

fn parse_protocol(text: &str) -> Result<ProtocolChoice, String> {
    text.parse()
}
