//! What a scenario reads and advances while it builds a turn: the facts
//! `initialize` fixed for the connection, the session's counters, and the
//! turn's pacing. Core fills a [`TurnCtx`] and hands it to the scenarios;
//! neither the scenarios nor this module know about the core.

use spindle_wire::extensions::{Extension, Extensions};
use spindle_wire::tags::MessageKind;

use crate::updates;
use crate::wire::Version;

/// Facts fixed by `initialize`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Connection {
    pub version: Version,
    pub ext: Extensions,
    /// v1 clients must advertise `session.compaction` to get compaction updates.
    pub compaction: bool,
    /// v1 clients must advertise `session.notices` to get `notice` updates.
    pub notices: bool,
    /// The client offers v1 `fs/read_text_file` (`fs.readTextFile`).
    pub fs_read: bool,
    /// The client offers v1 `fs/write_text_file` (`fs.writeTextFile`).
    pub fs_write: bool,
    /// The client offers v1 `terminal/*` (`terminal`).
    pub terminal: bool,
    /// The client advertises `elicitation.form` (v1 `clientCapabilities`, v2 `capabilities`).
    pub elicitation_form: bool,
    /// The client advertises `elicitation.url`.
    pub elicitation_url: bool,
}

/// The model a session starts with.
pub(crate) const DEFAULT_MODEL: &str = "spindle-fast";
/// The reasoning effort a session starts with.
pub(crate) const DEFAULT_EFFORT: &str = "medium";

/// Per-session counters that scenarios read and advance.
#[derive(Debug, Clone)]
pub(crate) struct SessionState {
    next_id: u64,
    /// Put between an id's kind and its number (see
    /// [`AgentConfig::owned_id_tag`](crate::AgentConfig::owned_id_tag)).
    id_tag: String,
    /// Context tokens in use, as reported by `usage_update`.
    pub used: u64,
    /// Turns since the session started or was last cleared.
    pub turns: u64,
    /// Current mode id.
    pub mode: String,
    /// Current model (config option `model`).
    pub model: String,
    /// Current reasoning effort (config option `effort`).
    pub effort: String,
    /// Position in the `--script` file.
    pub script_pos: usize,
    /// The MCP servers the client gave the session (see `mcp_report`).
    pub mcp_servers: Vec<String>,
    /// The session's additional workspace roots (`additionalDirectories` of
    /// session/new, load, resume or fork), absolute, in order.
    pub additional_directories: Vec<String>,
}

impl SessionState {
    /// A new session's counters.
    pub fn new() -> Self {
        SessionState {
            next_id: 1,
            id_tag: String::new(),
            used: 0,
            turns: 0,
            mode: "default".to_owned(),
            model: DEFAULT_MODEL.to_owned(),
            effort: DEFAULT_EFFORT.to_owned(),
            script_pos: 0,
            mcp_servers: Vec::new(),
            additional_directories: Vec::new(),
        }
    }

    /// The current value of config option `id` (`mode`, `model`, `effort`).
    pub fn config_value(&self, id: &str) -> String {
        match id {
            "mode" => self.mode.clone(),
            "model" => self.model.clone(),
            "effort" => self.effort.clone(),
            _ => String::new(),
        }
    }

    /// Sets config option `id`; `false` for an unknown option.
    pub fn set_config_value(&mut self, id: &str, value: &str) -> bool {
        let slot = match id {
            "mode" => &mut self.mode,
            "model" => &mut self.model,
            "effort" => &mut self.effort,
            _ => return false,
        };
        *slot = value.to_owned();
        true
    }

    /// Ids from now on are `{prefix}{tag}{n}`.
    pub fn set_id_tag(&mut self, tag: &str) {
        tag.clone_into(&mut self.id_tag);
    }

    /// A fresh agent-owned id such as `msg_a3` (with a tag `msg_a{tag}3`).
    pub fn next_id(&mut self, prefix: &str) -> String {
        let id = format!("{prefix}{}{}", self.id_tag, self.next_id);
        self.next_id += 1;
        id
    }
}

impl Default for SessionState {
    fn default() -> Self {
        Self::new()
    }
}

/// What a scenario may read and advance while building a turn.
#[derive(Debug)]
pub(crate) struct TurnCtx<'a> {
    pub(crate) conn: Connection,
    pub(crate) state: &'a mut SessionState,
    /// The session's id.
    pub(crate) session_id: &'a str,
    /// The session's working directory (absolute).
    pub(crate) cwd: &'a str,
    /// The prompt's content blocks (empty outside a turn).
    pub(crate) blocks: &'a [serde_json::Value],
    pub(crate) delay_ms: u64,
    pub(crate) context_size: u64,
}

impl TurnCtx<'_> {
    pub(crate) fn version(&self) -> Version {
        self.conn.version
    }

    /// Adds the turn's tokens; returns the usage update that reports them.
    pub(crate) fn usage(&mut self, tokens: u64) -> serde_json::Value {
        self.state.used = (self.state.used + tokens).min(self.context_size);
        updates::usage(self.state.used, self.context_size)
    }

    /// Whether a v1 client gets the clear extension: opted in, or forced by
    /// the scenario variant (`ext`), and not refused by it (`plain`).
    pub(crate) fn v1_clear(&self, kind: MessageKind, variant: Option<&str>) -> bool {
        match variant {
            Some("ext") => true,
            Some("plain") => false,
            _ => match kind {
                MessageKind::Thought => self.conn.ext.contains(Extension::AgentThoughtClear),
                _ => self.conn.ext.contains(Extension::AgentMessageClear),
            },
        }
    }
}
