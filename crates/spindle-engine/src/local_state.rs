//! What the engine remembers about the client's own services between lines:
//! client terminals (which tool call shows each, output that came before any
//! did), file writes awaiting the client's answer, and the text before a
//! write when its local line came before the request.

use std::collections::VecDeque;

use spindle_wire::hash::FxHashMap;

/// One client terminal, as the display knows it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientTerminal {
    /// The tool call that embeds it (`{"type":"terminal","terminalId":..}`).
    pub entry: Option<usize>,
    /// Output that came before any tool call named the terminal.
    pub held_output: String,
    /// The exit (`exitCode`, `signal`), when it came before any tool call
    /// named the terminal.
    pub held_exit: Option<serde_json::Value>,
}

/// Where a pending write is shown.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteRef {
    /// The tool-call entry showing it.
    pub entry: usize,
    /// Its index in that call's writes.
    pub index: usize,
    /// The entry exists only to show this write (no tool call was in
    /// progress): its status follows the write's.
    pub standalone: bool,
}

/// The client-services state of an engine.
#[derive(Debug, Clone, Default)]
pub(crate) struct LocalState {
    /// Client terminals by terminal id.
    pub terminals: FxHashMap<String, ClientTerminal>,
    /// Writes the client has not answered, by request id (JSON text).
    pub writes: FxHashMap<String, WriteRef>,
    /// Writes whose text before is not known yet, by path as spelled,
    /// oldest first (`fileBeforeWrite` lines come in request order, before or
    /// after the client's answer).
    pub awaiting_old_text: FxHashMap<String, VecDeque<WriteRef>>,
    /// `fileBeforeWrite` texts that came before their request, by path as
    /// spelled, oldest first (`None` inside: the file did not exist).
    pub early_old_text: FxHashMap<String, VecDeque<Option<String>>>,
}
