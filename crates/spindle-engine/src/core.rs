//! [`TranscriptEngine`]'s state and the bookkeeping every handler shares:
//! appending entries under unique ids, emitting render ops, reporting
//! diagnostics. The handlers (`turns`, `content`, `messages`, `tools`, ...)
//! add `impl TranscriptEngine` blocks on top of this one.

use crate::config::{EngineConfig, ProtocolHint};
use crate::ids::{MsgKind, id_fingerprint};
use crate::keys::EntryKeys;
use crate::local_state::LocalState;
use crate::model::{Diagnostic, Entry, EntryBody, EntryKind, SessionState, Transcript};
use crate::ops::{Applied, RenderOp};
use spindle_wire::hash::{FxHashMap, FxHashSet};

/// The sans-I/O transcript engine. See the crate docs.
///
/// `Clone` gives an independent copy (for example to fork a view for a new
/// observer); `Default` is `new(EngineConfig::default())`.
#[derive(Debug, Clone)]
pub struct TranscriptEngine {
    pub(crate) config: EngineConfig,
    pub(crate) t: Transcript,
    pub(crate) keys: EntryKeys,
    /// Fingerprints of every entry id given out (see `alloc_id`).
    pub(crate) ids: FxHashSet<u64>,
    /// Last (messageId, index) hit per message kind: chunks repeat the same id.
    pub(crate) last_hit: [Option<(String, usize)>; 4],
    /// The message id-less chunks of its kind append to (v1 boundaries).
    pub(crate) open: Option<(MsgKind, usize)>,
    /// A message an empty chunk named by a new id before it had any text (so
    /// it has no entry yet): the id-less chunks of its kind that follow belong
    /// to it, as they would to an opened message. Cleared with `open`.
    pub(crate) opening: Option<(MsgKind, String)>,
    /// Prompts the client sent that no user-message update has acknowledged
    /// yet, oldest first (acknowledgements arrive in send order).
    pub(crate) awaiting_ack: std::collections::VecDeque<usize>,
    /// The most recent prompt the client sent (for `apply_prompt_response`).
    pub(crate) last_prompt: Option<usize>,
    pub(crate) client_requests: FxHashMap<String, ClientRequest>,
    /// The client's own lines are part of the input (not an agent-only recording): a response
    /// is then matched to its request by id only.
    pub(crate) client_lines_seen: bool,
    /// Agent request id -> entry index of the permission it asked about.
    pub(crate) permission_requests: FxHashMap<String, usize>,
    /// The prompt entry of each client `session/prompt` request (by request key), kept after
    /// its answer: an author note may name the request later.
    pub(crate) prompt_entries: FxHashMap<String, usize>,
    pub(crate) minted: u64,
    /// The v2 agent is idle (its last `state_update` said so, or the session just opened, see
    /// `v2_session_starts_idle`): output now is background work.
    pub(crate) explicit_idle: bool,
    /// Line number for diagnostics of the current input.
    pub(crate) line: Option<u64>,
    pub(crate) lines_seen: u64,
    pub(crate) next_line: Option<u64>,
    pub(crate) out: Applied,
    /// Build render ops (off in batch replay, where nobody renders).
    pub(crate) ops_on: bool,
    /// One record per turn started, in order.
    pub(crate) turn_log: Vec<TurnRecord>,
    /// Client terminals and file writes (see `local`).
    pub(crate) local: LocalState,
}

/// What a request the client sent was, so its response can be recognised.
#[derive(Debug, Clone)]
pub(crate) enum ClientRequest {
    Prompt(Option<usize>),
    Initialize,
    /// `session/load` / `session/resume` (the method): its response ends the history replay;
    /// its result may carry modes and config options.
    Load(&'static str),
    /// `session/new`: its result names the session updates must belong to, and may carry
    /// modes and config options.
    NewSession,
    /// `session/set_mode` for this mode (`None`: the request named no mode).
    SetMode(Option<String>),
    /// `session/set_config_option`: its result carries the config options.
    SetConfigOption,
    Other,
}

/// How a turn ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnRecord {
    pub finished: bool,
    pub stop_reason: Option<String>,
}

impl Default for TranscriptEngine {
    fn default() -> Self {
        TranscriptEngine::new(EngineConfig::default())
    }
}

impl TranscriptEngine {
    /// A new engine with an empty transcript.
    pub fn new(config: EngineConfig) -> Self {
        let protocol = match config.protocol {
            ProtocolHint::V2 => 2,
            ProtocolHint::Auto | ProtocolHint::V1 => 1,
        };
        TranscriptEngine {
            config,
            t: Transcript {
                protocol,
                ..Transcript::default()
            },
            keys: EntryKeys::default(),
            ids: FxHashSet::default(),
            last_hit: [None, None, None, None],
            open: None,
            opening: None,
            awaiting_ack: std::collections::VecDeque::new(),
            last_prompt: None,
            client_requests: FxHashMap::default(),
            client_lines_seen: false,
            permission_requests: FxHashMap::default(),
            prompt_entries: FxHashMap::default(),
            minted: 0,
            explicit_idle: false,
            line: None,
            lines_seen: 0,
            next_line: None,
            out: Applied::default(),
            ops_on: true,
            turn_log: Vec::new(),
            local: LocalState::default(),
        }
    }

    /// Sets the 1-based line number that diagnostics of the next `apply_*_line`
    /// call report (replay uses the file's line numbers, blank lines included).
    /// Without it, lines are numbered by counting `apply_*_line` calls.
    pub fn set_next_line_number(&mut self, line: u64) {
        self.next_line = Some(line);
    }

    /// Turns render ops on (the default) or off. With ops off, every `apply_*`
    /// returns an empty `ops` list (diagnostics still come back) and the engine
    /// skips building entry views: batch replay (`spindle replay`) uses this.
    /// [`Self::render_snapshot`] works either way.
    pub fn set_render_ops(&mut self, enabled: bool) {
        self.ops_on = enabled;
    }

    /// The transcript as it stands.
    pub fn transcript(&self) -> &Transcript {
        &self.t
    }

    /// The configuration the engine was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub(crate) fn note_v2(&mut self) {
        if self.config.protocol == ProtocolHint::Auto {
            self.t.protocol = 2;
        }
    }

    /// The current turn, when one is open (entries that do not start one).
    pub(crate) fn turn_if_open(&self) -> Option<u32> {
        Some(self.t.state.turns).filter(|_| self.t.state.turn_open)
    }

    /// Adds an entry at the end of the timeline without emitting an op.
    pub(crate) fn push_entry(
        &mut self,
        preferred_id: &str,
        kind: EntryKind,
        body: EntryBody,
        turn: Option<u32>,
    ) -> usize {
        let id = self.alloc_id(preferred_id, kind);
        self.t.entries.push(Entry {
            id,
            kind,
            turn,
            body,
        });
        self.t.entries.len() - 1
    }

    /// A unique entry id: `preferred`, or `kind:preferred`, `kind:preferred#2`, ...
    /// when taken. Ids are remembered by fingerprint (8 bytes, not a copy of
    /// the id): two ids with one fingerprint only make the second one take the
    /// renamed form, so ids stay unique.
    fn alloc_id(&mut self, preferred: &str, kind: EntryKind) -> String {
        if self.ids.insert(id_fingerprint(preferred)) {
            return preferred.to_owned();
        }
        let base = format!("{}:{}", kind.as_str(), preferred);
        let mut candidate = base.clone();
        let mut n = 2u64;
        while !self.ids.insert(id_fingerprint(&candidate)) {
            candidate = format!("{base}#{n}");
            n += 1;
        }
        candidate
    }

    pub(crate) fn mint_id(&mut self, prefix: &str) -> String {
        self.minted += 1;
        format!("{prefix}:{}", self.minted)
    }

    pub(crate) fn emit(&mut self, op: RenderOp) {
        if self.ops_on {
            self.out.ops.push(op);
        }
    }

    pub(crate) fn emit_insert(&mut self, idx: usize) {
        if !self.ops_on {
            return;
        }
        let entry = self.t.entries[idx].view();
        self.emit(RenderOp::InsertEntry { index: idx, entry });
    }

    pub(crate) fn emit_update(&mut self, idx: usize) {
        if !self.ops_on {
            return;
        }
        let entry = self.t.entries[idx].view();
        self.emit(RenderOp::UpdateEntry {
            id: entry.id.clone(),
            entry,
        });
    }

    pub(crate) fn emit_state(&mut self) {
        if !self.ops_on {
            return;
        }
        let state: SessionState = self.t.state.clone();
        self.emit(RenderOp::SetState { state });
    }

    pub(crate) fn emit_session_info(&mut self) {
        if !self.ops_on {
            return;
        }
        let info = self.t.session_info.clone();
        self.emit(RenderOp::SetSessionInfo { info });
    }

    /// Sets the message id-less chunks continue (or none), which also ends
    /// a message an empty chunk had only named (`opening`).
    pub(crate) fn set_open(&mut self, open: Option<(MsgKind, usize)>) {
        self.open = open;
        self.opening = None;
    }

    pub(crate) fn diag(&mut self, code: &'static str, message: impl Into<String>) {
        let d = Diagnostic {
            code,
            message: message.into(),
            line: self.line,
        };
        self.t.diagnostics.push(d.clone());
        self.out.diagnostics.push(d);
    }
}
