//! The client's own services on display: local lines (a client terminal's
//! output and exit, the text a file write replaces; spelled in
//! `spindle_wire::host`), and the agent's `fs/write_text_file` and
//! `fs/read_text_file` requests with the client's answers.
//!
//! - A client terminal shows in the tool call whose content embeds it
//!   (`{"type":"terminal","terminalId":..}`), in the same display terminal
//!   `_meta.terminal_output` fills: output appended (an `append_text` op),
//!   the exit as `exitStatus`. Output and exit that come before any tool
//!   call names the terminal are held and shown when one does.
//! - A write is shown as a diff on the tool call of the same turn that is
//!   in progress (the latest `pending` or `in_progress` one), or on an entry
//!   of its own (a tool call `write:<n>`, kind `edit`, whose status follows
//!   the write) when there is none; its status is `pending` until the
//!   client's response line: `written`, `rejected` (error `data.reason`
//!   `rejected`) or `failed`.
//! - A read adds its path to the in-progress tool call's `reads`.

use std::collections::VecDeque;

use serde_json::{Map, Value, json};
use spindle_wire::host::{
    ERROR_DETAILS_KEY, LocalLine, REFUSAL_REASON_KEY, REFUSAL_REJECTED, TERMINAL_CONTENT_TYPE,
};

use crate::core::TranscriptEngine;
use crate::local_state::WriteRef;
use crate::model::{ClientWrite, EntryBody, EntryKind, ToolCall, ToolTerminal, WriteStatus};
use crate::ops::RenderOp;

/// How far back a write or read looks for the tool call in progress.
const IN_PROGRESS_LOOKBACK: usize = 256;
/// Paths kept per tool call in `reads`.
const MAX_READS_SHOWN: usize = 100;

impl TranscriptEngine {
    /// One local line's text.
    pub(crate) fn local_line(&mut self, line: &str) {
        match serde_json::from_str::<Value>(line) {
            Ok(v) => self.local_value(&v),
            Err(e) => self.diag("invalid_json", format!("local line is not JSON: {e}")),
        }
    }

    /// One local line, parsed.
    pub(crate) fn local_value(&mut self, value: &Value) {
        let line = match LocalLine::from_value(value) {
            Ok(line) => line,
            Err(e) => return self.diag("malformed_local", e.0),
        };
        if !self.note_session(Some(line.session_id())) {
            return;
        }
        match line {
            LocalLine::TerminalOutput {
                terminal_id, text, ..
            } => self.client_terminal_output(terminal_id, text),
            LocalLine::TerminalExit {
                terminal_id,
                exit_code,
                signal,
                ..
            } => {
                let status = json!({"exitCode": exit_code, "signal": signal});
                self.client_terminal_exit(terminal_id, status);
            }
            LocalLine::FileBeforeWrite { path, old_text, .. } => {
                self.file_before_write(path, old_text)
            }
        }
    }

    fn client_terminal_output(&mut self, terminal_id: String, text: String) {
        let term = self.local.terminals.entry(terminal_id.clone()).or_default();
        let Some(idx) = term.entry else {
            term.held_output.push_str(&text);
            return;
        };
        let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body else {
            return;
        };
        let fresh = tc.terminal.is_none();
        let terminal = tc
            .terminal
            .get_or_insert_with(|| Box::new(client_terminal(&terminal_id)));
        terminal.output.push_str(&text);
        if fresh {
            self.emit_update(idx);
        } else if !text.is_empty() && self.ops_on {
            let id = self.t.entries[idx].id.clone();
            self.emit(RenderOp::AppendText { id, text });
        }
    }

    fn client_terminal_exit(&mut self, terminal_id: String, status: Value) {
        let term = self.local.terminals.entry(terminal_id.clone()).or_default();
        let Some(idx) = term.entry else {
            term.held_exit = Some(status);
            return;
        };
        let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body else {
            return;
        };
        tc.terminal
            .get_or_insert_with(|| Box::new(client_terminal(&terminal_id)))
            .fields
            .insert("exitStatus".into(), status);
        self.emit_update(idx);
    }

    /// Links the client terminals a tool call's content embeds to it (the
    /// first tool call to name a terminal shows it), moving held output and
    /// exit into its display terminal. True when the call's view changed.
    /// Emits nothing.
    pub(crate) fn link_client_terminals(&mut self, idx: usize) -> bool {
        let EntryBody::ToolCall(tc) = &self.t.entries[idx].body else {
            return false;
        };
        let marker = format!(r#""type":"{TERMINAL_CONTENT_TYPE}""#);
        if !tc.fields_json().contains(&marker) {
            return false;
        }
        let Some(Value::Array(items)) = tc.field("content") else {
            return false;
        };
        let ids: Vec<String> = items
            .iter()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some(TERMINAL_CONTENT_TYPE))
            .filter_map(|item| item.get("terminalId").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        let mut changed = false;
        for id in ids {
            let term = self.local.terminals.entry(id.clone()).or_default();
            if term.entry.is_some() {
                continue;
            }
            term.entry = Some(idx);
            // The display terminal appears with the first output or exit
            // (a tool call that names a terminal no local line speaks of,
            // such as a v2 agent-owned one, stays as it is).
            if term.held_output.is_empty() && term.held_exit.is_none() {
                continue;
            }
            let held = std::mem::take(&mut term.held_output);
            let exit = term.held_exit.take();
            let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body else {
                return changed;
            };
            let terminal = tc
                .terminal
                .get_or_insert_with(|| Box::new(client_terminal(&id)));
            terminal.output.push_str(&held);
            if let Some(exit) = exit {
                terminal.fields.insert("exitStatus".into(), exit);
            }
            changed = true;
        }
        changed
    }

    /// The latest tool call of the current turn (or of the background, when
    /// no turn is open) that is `pending` or `in_progress`.
    fn tool_in_progress(&self) -> Option<usize> {
        let turn = self.turn_if_open();
        self.t
            .entries
            .iter()
            .enumerate()
            .rev()
            .take(IN_PROGRESS_LOOKBACK)
            .find(|(_, e)| {
                e.turn == turn
                    && matches!(&e.body, EntryBody::ToolCall(tc)
                        if matches!(tc.field_str("status").as_deref(), Some("pending" | "in_progress")))
            })
            .map(|(idx, _)| idx)
    }

    /// The agent's `fs/write_text_file` request.
    pub(crate) fn fs_write_request(&mut self, request_id: String, params: Value) {
        let (Some(path), Some(content)) = (
            params.get("path").and_then(Value::as_str),
            params.get("content").and_then(Value::as_str),
        ) else {
            return self.diag(
                "malformed_request",
                "fs/write_text_file: path and content must be strings",
            );
        };
        let session = params.get("sessionId").and_then(Value::as_str);
        if !self.note_session(session) {
            return;
        }
        let early = self
            .local
            .early_old_text
            .get_mut(path)
            .and_then(VecDeque::pop_front);
        let write = ClientWrite {
            request_id: request_id.clone(),
            path: path.to_owned(),
            old_text: early,
            new_text: content.to_owned(),
            status: WriteStatus::Pending,
            error: None,
        };
        let (entry, standalone) = match self.tool_in_progress() {
            Some(idx) => (idx, false),
            None => (self.standalone_write_entry(path), true),
        };
        let EntryBody::ToolCall(tc) = &mut self.t.entries[entry].body else {
            return;
        };
        let known = write.old_text.is_some();
        let path = write.path.clone();
        let writes = &mut tc.client_mut().writes;
        writes.push(write);
        let at = WriteRef {
            entry,
            index: writes.len() - 1,
            standalone,
        };
        self.local.writes.insert(request_id, at);
        if !known {
            self.local
                .awaiting_old_text
                .entry(path)
                .or_default()
                .push_back(at);
        }
        if standalone {
            self.emit_insert(entry);
        } else {
            self.emit_update(entry);
        }
    }

    /// A tool call that shows one write made outside any tool call in progress.
    fn standalone_write_entry(&mut self, path: &str) -> usize {
        let id = self.mint_id("write");
        let mut fields = Map::new();
        fields.insert("toolCallId".into(), Value::from(id.as_str()));
        fields.insert("title".into(), Value::from(format!("Write {path}")));
        fields.insert("kind".into(), Value::from("edit"));
        fields.insert("status".into(), Value::from("pending"));
        self.set_open(None);
        let turn = self.turn_if_open();
        let body = EntryBody::ToolCall(Box::new(ToolCall::new(&fields)));
        self.push_entry(&id, EntryKind::ToolCall, body, turn)
    }

    /// `fileBeforeWrite`: the oldest write of that path still missing its
    /// text before gets it; without one, it waits for its request.
    fn file_before_write(&mut self, path: String, old_text: Option<String>) {
        let waiting = self
            .local
            .awaiting_old_text
            .get_mut(&path)
            .and_then(VecDeque::pop_front);
        let Some(at) = waiting else {
            self.local
                .early_old_text
                .entry(path)
                .or_default()
                .push_back(old_text);
            return;
        };
        if let EntryBody::ToolCall(tc) = &mut self.t.entries[at.entry].body
            && let Some(write) = tc.client_mut().writes.get_mut(at.index)
        {
            write.old_text = Some(old_text);
        }
        self.emit_update(at.entry);
    }

    /// The client's response to an `fs/write_text_file`: true when `request_id`
    /// was one.
    pub(crate) fn fs_write_response(&mut self, request_id: &str, msg: &Map<String, Value>) -> bool {
        let Some(at) = self.local.writes.remove(request_id) else {
            return false;
        };
        let (status, error) = match (msg.get("result"), msg.get("error")) {
            (_, Some(err)) => {
                let rejected = err
                    .get("data")
                    .and_then(|d| d.get(REFUSAL_REASON_KEY))
                    .and_then(Value::as_str)
                    == Some(REFUSAL_REJECTED);
                // The human detail without the code's canonical text, when the client gave it.
                let message = err
                    .get("data")
                    .and_then(|d| d.get(ERROR_DETAILS_KEY))
                    .or_else(|| err.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("the client answered with an error")
                    .to_owned();
                let status = if rejected {
                    WriteStatus::Rejected
                } else {
                    WriteStatus::Failed
                };
                (status, Some(message))
            }
            (Some(_), None) => (WriteStatus::Written, None),
            (None, None) => (
                WriteStatus::Failed,
                Some("the client's response has neither result nor error".to_owned()),
            ),
        };
        let EntryBody::ToolCall(tc) = &mut self.t.entries[at.entry].body else {
            return true;
        };
        if let Some(write) = tc.client_mut().writes.get_mut(at.index) {
            write.status = status;
            write.error = error;
            // A refused write gets no `fileBeforeWrite` line from now on (the
            // client sends it before answering, or only after a successful
            // write): it must not take the line of a later write of that path.
            if status != WriteStatus::Written
                && write.old_text.is_none()
                && let Some(waiting) = self.local.awaiting_old_text.get_mut(&write.path)
            {
                waiting.retain(|w| (w.entry, w.index) != (at.entry, at.index));
            }
        }
        if at.standalone {
            let done = if status == WriteStatus::Written {
                "completed"
            } else {
                "failed"
            };
            tc.patch(&[("status", Some(&Value::from(done)))]);
        }
        self.emit_update(at.entry);
        true
    }

    /// The agent's `fs/read_text_file` request: a note on the tool call in
    /// progress (nothing when there is none).
    pub(crate) fn fs_read_request(&mut self, params: Value) {
        let Some(path) = params.get("path").and_then(Value::as_str) else {
            return self.diag(
                "malformed_request",
                "fs/read_text_file: path must be a string",
            );
        };
        let session = params.get("sessionId").and_then(Value::as_str);
        if !self.note_session(session) {
            return;
        }
        let Some(idx) = self.tool_in_progress() else {
            return;
        };
        let EntryBody::ToolCall(tc) = &mut self.t.entries[idx].body else {
            return;
        };
        if tc.client_reads().len() >= MAX_READS_SHOWN || tc.client_reads().iter().any(|p| p == path)
        {
            return;
        }
        tc.client_mut().reads.push(path.to_owned());
        self.emit_update(idx);
    }
}

/// The display terminal of a client terminal.
fn client_terminal(terminal_id: &str) -> ToolTerminal {
    let mut terminal = ToolTerminal::default();
    terminal
        .fields
        .insert("terminalId".into(), Value::from(terminal_id));
    terminal
}
