//! Outputs: persisted replies, the replay JSON, text rendering, snapshots.
//!
//! The replay JSON (`spindle replay --format json`, [`TranscriptEngine::replay_json`]):
//! `protocol` (1 | 2), `sessionId`, `entries` (timeline order; each has `id`,
//! `kind`, `turn` when inside a turn; messages add `messageId`, `content` (the
//! blocks, verbatim), `text` (text blocks joined), `_meta`, `pending`,
//! `rejected`; tool calls `toolCall` (wire fields, `_meta.terminal_*` lifted
//! out), `permission`, `toolName`, `terminal`, `diffs` and `text` (the
//! display-only terminal's output) when they have them; plans
//! `plan`, `removed`; terminals `terminal`, `outputBytes`, `text`; boundaries
//! `reason` (`clear` | `compaction`), `source`, and for compaction
//! `compactionId`, `status`, `error`, `summary`, `text`; `unknown` and
//! `permission` entries `raw`; turn ends `outcome`, `stopReason`, `error`), `state` (`status`, `stopReason`, `error`,
//! `turns`, `turnOpen`, `cancelRequested`, `background`), `usage`, `commands`,
//! `sessionInfo`, `turns` (`turn`, `finished`, `stopReason`, `reply`),
//! `finalReply`, `diagnostics` (`code`, `message`, `line`).

use serde_json::{Map, Value, json};

use crate::config::EngineConfig;
use crate::core::TranscriptEngine;
use crate::model::{EntryBody, EntryKind, Message};
use crate::ops::Applied;
use crate::ops::RenderOp;

/// The persisted reply of one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnReply {
    /// 1-based turn number.
    pub turn: u32,
    /// Agent message text of the turn (messages separated by a blank line),
    /// without thought, plan, segment or intent content.
    pub reply: String,
    /// The turn has ended (stop reason, error, or a newer turn started).
    pub finished: bool,
    /// The stop reason, when reported.
    pub stop_reason: Option<String>,
}

/// Writes `object` as compact JSON; the value of a key is written by `fill` when it says so
/// (`Ok(true)`), else as it is in `object` (a placeholder kept for its place).
pub(crate) fn write_object<W: std::io::Write>(
    out: &mut W,
    object: &Map<String, Value>,
    mut fill: impl FnMut(&str, &mut W) -> std::io::Result<bool>,
) -> std::io::Result<()> {
    out.write_all(b"{")?;
    for (index, (key, value)) in object.iter().enumerate() {
        if index > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, key)?;
        out.write_all(b":")?;
        if !fill(key, out)? {
            serde_json::to_writer(&mut *out, value)?;
        }
    }
    out.write_all(b"}")
}

/// The index in the turn log of an entry's turn (turns are numbered from 1), if it is one of the
/// `turns` turns.
pub(crate) fn turn_index(turn: Option<u32>, turns: usize) -> Option<usize> {
    turn.and_then(|t| usize::try_from(t).ok())
        .and_then(|t| t.checked_sub(1))
        .filter(|&index| index < turns)
}

/// Adds a message's reply text to its turn's pieces, a blank line after the one before.
pub(crate) fn push_reply<'a>(pieces: &mut Vec<&'a str>, message: &'a Message) {
    if !pieces.is_empty() {
        pieces.push("\n\n");
    }
    pieces.extend(message.reply_pieces());
}

/// The pieces as one string, built once at its final size (a reply can be most of the
/// transcript: no per-message copies, no growth by doubling).
pub(crate) fn joined(pieces: &[&str]) -> String {
    let mut text = String::with_capacity(pieces.iter().map(|p| p.len()).sum());
    text.extend(pieces.iter().copied());
    text
}

/// One turn of the replay JSON's `turns`.
pub(crate) fn turn_json(reply: &TurnReply) -> Value {
    json!({
        "turn": reply.turn,
        "finished": reply.finished,
        "stopReason": reply.stop_reason,
        "reply": reply.reply,
    })
}

impl TranscriptEngine {
    fn reply_of_turn(&self, turn: u32) -> Option<String> {
        let pieces = self.reply_pieces_of_turn(turn);
        (!pieces.is_empty()).then(|| joined(&pieces))
    }

    /// The agent messages that carry reply text, in timeline order, with their turn's index in
    /// the turn log: what every persisted reply is made of.
    pub(crate) fn reply_messages(&self) -> impl Iterator<Item = (usize, &Message)> {
        let turns = self.turn_log.len();
        self.t
            .entries
            .iter()
            .filter_map(move |entry| match &entry.body {
                EntryBody::Message(m)
                    if entry.kind == EntryKind::AgentMessage && m.reply_len() > 0 =>
                {
                    turn_index(entry.turn, turns).map(|index| (index, &**m))
                }
                _ => None,
            })
    }

    /// The reply of `turn` as borrowed pieces: the agent messages' reply text,
    /// messages separated by a blank line. Empty when the turn has no reply.
    fn reply_pieces_of_turn(&self, turn: u32) -> Vec<&str> {
        let wanted = turn_index(Some(turn), self.turn_log.len());
        let mut pieces = Vec::new();
        for (_, m) in self
            .reply_messages()
            .filter(|(index, _)| Some(*index) == wanted)
        {
            push_reply(&mut pieces, m);
        }
        pieces
    }

    /// [`Self::final_reply`] as borrowed pieces that concatenate to it (empty
    /// when it is `None`): for writing a large reply out without copying it.
    pub fn final_reply_pieces(&self) -> Vec<&str> {
        match u32::try_from(self.turn_log.len()) {
            Ok(last) if last > 0 => self.reply_pieces_of_turn(last),
            _ => Vec::new(),
        }
    }

    /// The last turn's persisted reply: agent message text only (no thought,
    /// plan, segment or intent content). `None` when the last turn has none.
    pub fn final_reply(&self) -> Option<String> {
        let last = u32::try_from(self.turn_log.len()).ok()?;
        if last == 0 {
            return None;
        }
        self.reply_of_turn(last)
    }

    /// How many turns there are and how many of them finished: what changes when a reply is
    /// due to be persisted, at the cost of counting turns (no reply text is built).
    pub fn turn_progress(&self) -> (usize, usize) {
        let finished = self.turn_log.iter().filter(|t| t.finished).count();
        (self.turn_log.len(), finished)
    }

    /// The persisted reply of every turn so far, in order: [`Self::reply_of_turn`] of each, in
    /// one pass over the entries (a save at every turn's start and end must not cost turns x
    /// entries in a long session).
    pub fn turn_replies(&self) -> Vec<TurnReply> {
        let mut pieces: Vec<Vec<&str>> = vec![Vec::new(); self.turn_log.len()];
        for (index, m) in self.reply_messages() {
            push_reply(&mut pieces[index], m);
        }
        self.turn_log
            .iter()
            .zip(pieces)
            .enumerate()
            .map(|(i, (rec, turn_pieces))| TurnReply {
                turn: u32::try_from(i + 1).unwrap_or(u32::MAX),
                reply: joined(&turn_pieces),
                finished: rec.finished,
                stop_reason: rec.stop_reason.clone(),
            })
            .collect()
    }

    /// Exactly the `spindle replay --format json` object.
    pub fn replay_json(&self) -> Value {
        self.replay_json_object(true, true)
    }

    /// [`Self::replay_json`] with `entries` left empty (`[]`, in its place): for writers that
    /// stream the entries ([`crate::Entry::replay_json`], one at a time) into it instead of
    /// holding every entry's JSON at once.
    pub fn replay_json_without_entries(&self) -> Value {
        self.replay_json_object(false, true)
    }

    /// [`Self::replay_json_object`]: `entries` empty unless `with_entries`; `turns` empty and
    /// `finalReply` null unless `with_turns` (their places kept, for a writer that fills them).
    pub(crate) fn replay_json_object(&self, with_entries: bool, with_turns: bool) -> Value {
        let t = &self.t;
        let turns: Vec<Value> = if with_turns {
            self.turn_replies().iter().map(turn_json).collect()
        } else {
            Vec::new()
        };
        let mut out = Map::new();
        out.insert("protocol".into(), Value::from(t.protocol));
        out.insert(
            "sessionId".into(),
            t.session_info
                .session_id
                .clone()
                .map_or(Value::Null, Value::from),
        );
        let entries = if with_entries {
            t.entries.iter().map(|e| e.replay_json()).collect()
        } else {
            Vec::new()
        };
        out.insert("entries".into(), Value::Array(entries));
        out.insert(
            "state".into(),
            serde_json::to_value(&t.state).unwrap_or(Value::Null),
        );
        out.insert("usage".into(), t.usage.clone().unwrap_or(Value::Null));
        out.insert("commands".into(), t.commands.clone().unwrap_or(Value::Null));
        let mut info = serde_json::to_value(&t.session_info).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut info {
            m.remove("sessionId");
        }
        out.insert("sessionInfo".into(), info);
        out.insert("turns".into(), Value::Array(turns));
        let final_reply = if with_turns { self.final_reply() } else { None };
        out.insert(
            "finalReply".into(),
            final_reply.map_or(Value::Null, Value::from),
        );
        out.insert(
            "diagnostics".into(),
            serde_json::to_value(&t.diagnostics).unwrap_or(Value::Null),
        );
        Value::Object(out)
    }

    /// [`Self::replay_json`] written as compact JSON (the same bytes as
    /// `replay_json().to_string()`), one entry at a time: a long session never
    /// has all of its entries' JSON in memory at once.
    pub fn write_replay_json<W: std::io::Write>(&self, out: &mut W) -> std::io::Result<()> {
        let Value::Object(shell) = self.replay_json_without_entries() else {
            unreachable!("the replay JSON is an object");
        };
        write_object(out, &shell, |key, out| {
            if key != "entries" {
                return Ok(false);
            }
            out.write_all(b"[")?;
            for (n, entry) in self.t.entries.iter().enumerate() {
                if n > 0 {
                    out.write_all(b",")?;
                }
                entry.write_replay_json(&mut *out)?;
            }
            out.write_all(b"]")?;
            Ok(true)
        })
    }

    /// [`Self::write_replay_json`] into a string: `replay_json().to_string()`
    /// without the whole value in memory.
    pub fn replay_json_text(&self) -> String {
        let mut out = Vec::new();
        self.write_replay_json(&mut out)
            .expect("writing JSON values into memory cannot fail");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// Ops that rebuild the whole view from empty (for a newly connected
    /// observer). Notices are live events and are not included.
    pub fn render_snapshot(&self) -> Vec<RenderOp> {
        self.render_snapshot_ops().collect()
    }

    /// [`Self::render_snapshot`] one op at a time, each built when it is
    /// reached (a writer can serialize them without holding them all).
    pub fn render_snapshot_ops(&self) -> impl Iterator<Item = RenderOp> + '_ {
        let t = &self.t;
        let info = std::iter::once_with(|| RenderOp::SetSessionInfo {
            info: t.session_info.clone(),
        });
        let commands = t.commands.iter().map(|commands| RenderOp::SetCommands {
            commands: commands.clone(),
        });
        let usage = t.usage.iter().map(|usage| RenderOp::SetUsage {
            usage: usage.clone(),
        });
        let entries = t
            .entries
            .iter()
            .enumerate()
            .map(|(index, entry)| RenderOp::InsertEntry {
                index,
                entry: entry.view(),
            });
        let state = std::iter::once_with(|| RenderOp::SetState {
            state: t.state.clone(),
        });
        info.chain(commands)
            .chain(usage)
            .chain(entries)
            .chain(state)
    }

    /// A plain-text rendering of the transcript (`spindle replay --format text`).
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for entry in &self.t.entries {
            let label = match entry.kind {
                EntryKind::UserMessage => "user",
                EntryKind::AgentMessage => "agent",
                EntryKind::AgentThought => "thought",
                EntryKind::PlanText => "plan-text",
                EntryKind::ToolCall => "tool",
                EntryKind::Plan => "plan",
                EntryKind::Terminal => "terminal",
                EntryKind::Boundary => "boundary",
                EntryKind::Permission => "permission",
                EntryKind::Unknown => "unknown",
                EntryKind::TurnEnd => "turn-end",
            };
            match &entry.body {
                EntryBody::Message(m) => {
                    out.push_str(&format!("[{label}] {}\n", m.text()));
                    for a in m.attachments() {
                        out.push_str(&format!("  (attachment) {a}\n"));
                    }
                }
                EntryBody::ToolCall(tc) => {
                    let field = |k: &str| tc.field_str(k).unwrap_or_default();
                    out.push_str(&format!(
                        "[tool] {} ({}, {})",
                        field("title"),
                        field("kind"),
                        field("status")
                    ));
                    if let Some(name) = tc.tool_name() {
                        out.push_str(&format!(" [{name}]"));
                    }
                    out.push('\n');
                    for path in tc.client_reads() {
                        out.push_str(&format!("  (read {path})\n"));
                    }
                    for (i, diff) in tc.diffs().iter().enumerate() {
                        for line in diff.unified().lines() {
                            out.push_str(&format!("  {line}\n"));
                        }
                        if let Some(shown) = tc.diff_write(i) {
                            let write = shown.write;
                            let mut note = format!("write {}", write.status.as_str());
                            if let Some(error) = &write.error {
                                note.push_str(&format!(": {error}"));
                            }
                            if shown.differs_from_shown {
                                note.push_str("; not the change the agent showed");
                            }
                            out.push_str(&format!("  ({note})\n"));
                        }
                    }
                    if let Some(output) = tc.terminal_output() {
                        for line in output.lines() {
                            out.push_str(&format!("  | {line}\n"));
                        }
                        if let Some(exit) = tc.terminal_exit() {
                            match (exit.exit_code, exit.signal) {
                                (_, Some(signal)) => {
                                    out.push_str(&format!("  (killed by {signal})\n"))
                                }
                                (Some(code), None) => out.push_str(&format!("  (exit {code})\n")),
                                (None, None) => out.push_str("  (exited)\n"),
                            }
                        }
                    }
                }
                EntryBody::Plan { plan, removed } => {
                    let entries = plan.get("entries").and_then(Value::as_array);
                    out.push_str(&format!(
                        "[plan] {}{}\n",
                        entry.id,
                        if *removed { " (removed)" } else { "" }
                    ));
                    for e in entries.into_iter().flatten() {
                        let status = e.get("status").and_then(Value::as_str).unwrap_or("?");
                        let content = e.get("content").and_then(Value::as_str).unwrap_or("");
                        out.push_str(&format!("  - [{status}] {content}\n"));
                    }
                }
                EntryBody::Boundary(b) => {
                    let status = b.fields.get("status").and_then(Value::as_str);
                    match status {
                        Some(s) => out.push_str(&format!("--- {} ({s}) ---\n", b.reason)),
                        None => out.push_str(&format!("--- {} ---\n", b.reason)),
                    }
                    if !b.summary.text().is_empty() {
                        out.push_str(&format!("  {}\n", b.summary.text()));
                    }
                }
                EntryBody::Terminal(term) => {
                    out.push_str(&format!("[terminal {}]\n{}\n", entry.id, term.text));
                }
                EntryBody::Raw(raw) => out.push_str(&format!("[{label}] {raw}\n")),
                EntryBody::TurnEnd(end) => {
                    out.push_str(&format!("[{label}] {}", end.outcome().as_str()));
                    if let Some(stop) = &end.stop_reason {
                        out.push_str(&format!(" ({stop})"));
                    }
                    if let Some(message) = end.error.as_ref().and_then(|e| e.get("message")) {
                        out.push_str(&format!(": {}", message.as_str().unwrap_or_default()));
                    }
                    out.push('\n');
                }
            }
        }
        let s = &self.t.state;
        match &s.stop_reason {
            Some(stop) => out.push_str(&format!("state: {} ({stop})\n", s.status)),
            None => out.push_str(&format!("state: {}\n", s.status)),
        }
        for d in &self.t.diagnostics {
            match d.line {
                Some(line) => out.push_str(&format!(
                    "diagnostic line {line}: {}: {}\n",
                    d.code, d.message
                )),
                None => out.push_str(&format!("diagnostic: {}: {}\n", d.code, d.message)),
            }
        }
        out
    }
}

/// Replays a whole recording (the `spindle replay` input format: JSONL, a bare
/// message was received by the client, `{"sent": ...}` was sent by it). Blank
/// lines are skipped; diagnostics carry 1-based line numbers of `input`.
pub fn replay_recording(input: &str, config: EngineConfig) -> TranscriptEngine {
    let mut engine = TranscriptEngine::new(config);
    engine.set_render_ops(false);
    for (i, line) in input.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        engine.set_next_line_number(i as u64 + 1);
        let _: Applied = engine.apply_recorded_line(line);
    }
    engine
}

/// One line of a recording for a message the client received: the message,
/// compacted onto one line. `None` if `message_json` is not JSON.
/// (`--record` writers use this and [`recording_line_sent`].)
pub fn recording_line_received(message_json: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(message_json).ok()?;
    Some(value.to_string())
}

/// One line of a recording for a message the client sent: `{"sent": <message>}`
/// on one line. `None` if `message_json` is not JSON.
pub fn recording_line_sent(message_json: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(message_json).ok()?;
    Some(json!({ "sent": value }).to_string())
}
