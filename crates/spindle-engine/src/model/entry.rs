//! Timeline entries: their kinds, bodies, the view render ops carry, and
//! their replay JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use spindle_wire::meta::META_KEY;
use spindle_wire::stop_reasons::TurnOutcome;
use spindle_wire::tags;

use super::message::Message;
use super::terminal::Terminal;
use super::tool_call::ToolCall;

/// What a timeline entry is. Serialized snake_case (`agent_message`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A user message (the client's prompt, or one the agent reported).
    UserMessage,
    /// An agent reply message: the only kind that counts toward the persisted reply.
    AgentMessage,
    /// Agent reasoning: `agent_thought*`, or agent text routed here by metadata
    /// (think/thought/thinking/segment/intent).
    AgentThought,
    /// Agent text routed to the plan channel by metadata (`plan`).
    PlanText,
    /// A tool call (`tool_call`, `tool_call_update`, `tool_call_content_chunk`).
    ToolCall,
    /// A structured plan (v1 `plan` as planId `main`, v2 `plan_update`).
    Plan,
    /// A v2 agent-owned terminal (`terminal_update`, `terminal_output_chunk`).
    Terminal,
    /// A boundary: `reason` `clear` (session cleared) or `compaction`.
    Boundary,
    /// A permission request whose subject is not a tool call.
    Permission,
    /// An update the engine does not know; the raw JSON is kept verbatim.
    Unknown,
    /// The end of a turn the agent or the client ended (a prompt's answer, an
    /// error, a v2 idle): how it ended, after the turn's last output.
    TurnEnd,
}

impl EntryKind {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            // Entry kinds named after an update are spelled like its tag.
            EntryKind::UserMessage => tags::USER_MESSAGE,
            EntryKind::AgentMessage => tags::AGENT_MESSAGE,
            EntryKind::AgentThought => tags::AGENT_THOUGHT,
            EntryKind::PlanText => "plan_text",
            EntryKind::ToolCall => tags::TOOL_CALL,
            EntryKind::Plan => tags::PLAN,
            EntryKind::Terminal => "terminal",
            EntryKind::Boundary => "boundary",
            EntryKind::Permission => "permission",
            EntryKind::Unknown => "unknown",
            EntryKind::TurnEnd => "turn_end",
        }
    }

    /// True for the four message kinds (they carry content and text).
    pub fn is_message(self) -> bool {
        matches!(
            self,
            EntryKind::UserMessage
                | EntryKind::AgentMessage
                | EntryKind::AgentThought
                | EntryKind::PlanText
        )
    }
}

/// A boundary in the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Boundary {
    /// `clear` or `compaction`.
    pub reason: &'static str,
    /// What signalled it: `session_cleared`, `clear_boundary_meta` or `compaction_update`.
    pub source: &'static str,
    /// Compaction fields (`compactionId`, `status`, `error`, `_meta`), verbatim.
    pub fields: Map<String, Value>,
    /// The compaction summary as a message (summary blocks + chunks).
    pub summary: Message,
}

/// The kind-specific part of an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryBody {
    /// Message kinds (boxed like every variant, so an entry is 56 bytes: a
    /// session holds one per message and tool call).
    Message(Box<Message>),
    /// [`EntryKind::ToolCall`] (boxed: rarer than messages, keeps entries small).
    ToolCall(Box<ToolCall>),
    /// [`EntryKind::Plan`]: the plan object as sent (`entries`, and for v2 `type`, `planId`).
    Plan {
        /// The plan, verbatim.
        plan: Box<Value>,
        /// Removed by `plan_removed`.
        removed: bool,
    },
    /// [`EntryKind::Boundary`].
    Boundary(Box<Boundary>),
    /// [`EntryKind::Terminal`].
    Terminal(Box<Terminal>),
    /// [`EntryKind::Permission`] and [`EntryKind::Unknown`]: raw JSON verbatim.
    Raw(Box<Value>),
    /// [`EntryKind::TurnEnd`].
    TurnEnd(Box<TurnEnd>),
}

/// How a turn ended (an [`EntryKind::TurnEnd`] entry).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    /// The stop reason, verbatim, when reported.
    pub stop_reason: Option<String>,
    /// The error of a failed turn, verbatim (`code`, `message`, `data`).
    pub error: Option<Value>,
}

impl TurnEnd {
    /// What the stop reason and error say together.
    pub fn outcome(&self) -> TurnOutcome {
        TurnOutcome::of(self.stop_reason.as_deref(), self.error.is_some())
    }

    /// The view's fields: `outcome`, `stopReason` and `error` when known.
    fn fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("outcome".into(), Value::from(self.outcome().as_str()));
        if let Some(stop) = &self.stop_reason {
            fields.insert("stopReason".into(), Value::from(stop.as_str()));
        }
        if let Some(error) = &self.error {
            fields.insert("error".into(), error.clone());
        }
        fields
    }
}

/// One timeline entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Stable id (see [`EntryView::id`]).
    pub id: String,
    /// What the entry is.
    pub kind: EntryKind,
    /// The turn it belongs to; `None` for background output outside any turn.
    pub turn: Option<u32>,
    /// Kind-specific data.
    pub body: EntryBody,
}

impl Entry {
    /// The message, for message kinds.
    pub fn message(&self) -> Option<&Message> {
        match &self.body {
            EntryBody::Message(m) => Some(m),
            _ => None,
        }
    }

    /// The text a view shows for this entry (see [`EntryView::text`]).
    pub fn text(&self) -> &str {
        match &self.body {
            EntryBody::Message(m) => &m.text,
            EntryBody::Boundary(b) => &b.summary.text,
            EntryBody::Terminal(t) => &t.text,
            EntryBody::ToolCall(tc) => tc.terminal_output().unwrap_or(""),
            _ => "",
        }
    }

    /// The view carried by render ops.
    pub fn view(&self) -> EntryView {
        let mut fields = Map::new();
        match &self.body {
            EntryBody::Message(m) => {
                let attachments = m.attachments();
                if !attachments.is_empty() {
                    fields.insert("attachments".into(), Value::Array(attachments));
                }
                if let Some(meta) = &m.meta {
                    fields.insert(META_KEY.into(), (**meta).clone());
                }
                if m.pending {
                    fields.insert("pending".into(), Value::Bool(true));
                }
                if m.rejected {
                    fields.insert("rejected".into(), Value::Bool(true));
                }
                if let Some(author) = &m.author {
                    fields.insert("author".into(), Value::from(author.as_str()));
                }
            }
            EntryBody::ToolCall(tc) => {
                // Nested: the wire field `kind` (tool kind) would collide with the entry kind.
                fields.insert("toolCall".into(), Value::Object(tc.fields()));
                if let Some(p) = &tc.permission {
                    fields.insert("permission".into(), (**p).clone());
                }
                if let Some(name) = tc.tool_name() {
                    fields.insert("toolName".into(), Value::from(name));
                }
                if let Some(terminal) = tc.terminal() {
                    fields.insert("terminal".into(), Value::Object(terminal.fields.clone()));
                }
                let diffs = tc.diffs();
                if !diffs.is_empty() {
                    // A diff that stands for a client write carries it as `write`.
                    let diffs = diffs
                        .iter()
                        .enumerate()
                        .map(|(i, diff)| {
                            let mut json = diff.to_json();
                            if let (Some(shown), Value::Object(map)) = (tc.diff_write(i), &mut json)
                            {
                                map.insert(
                                    "write".into(),
                                    shown.write.view_json(shown.differs_from_shown),
                                );
                            }
                            json
                        })
                        .collect();
                    fields.insert("diffs".into(), Value::Array(diffs));
                }
                let reads = tc.client_reads();
                if !reads.is_empty() {
                    fields.insert("reads".into(), Value::from(reads.to_vec()));
                }
            }
            EntryBody::Plan { plan, removed } => {
                fields.insert("plan".into(), (**plan).clone());
                if *removed {
                    fields.insert("removed".into(), Value::Bool(true));
                }
            }
            EntryBody::Boundary(b) => {
                fields = b.fields.clone();
                fields.insert("reason".into(), Value::from(b.reason));
                fields.insert("source".into(), Value::from(b.source));
                let attachments = b.summary.attachments();
                if !attachments.is_empty() {
                    fields.insert("attachments".into(), Value::Array(attachments));
                }
            }
            EntryBody::Terminal(t) => {
                fields.insert("terminal".into(), Value::Object(t.fields.clone()));
            }
            EntryBody::Raw(raw) => {
                fields.insert("raw".into(), (**raw).clone());
            }
            EntryBody::TurnEnd(end) => fields = end.fields(),
        }
        EntryView {
            id: self.id.clone(),
            kind: self.kind,
            message_id: self.message().and_then(|m| m.message_id.clone()),
            turn: self.turn,
            text: self.text().to_owned(),
            fields,
        }
    }

    /// [`Self::replay_json`] written as compact JSON, the same bytes as
    /// `replay_json().to_string()`. A message (the entries that grow with a stream: one
    /// content block per chunk) is serialized straight to `out` ([`MessageReplay`]).
    pub fn write_replay_json<W: std::io::Write>(&self, out: &mut W) -> std::io::Result<()> {
        match &self.body {
            EntryBody::Message(message) => serde_json::to_writer(
                out,
                &MessageReplay {
                    entry: self,
                    message,
                },
            ),
            _ => serde_json::to_writer(out, &self.replay_json()),
        }
        .map_err(std::io::Error::from)
    }

    /// The entry as it appears in `spindle replay --format json`.
    pub fn replay_json(&self) -> Value {
        if let EntryBody::Message(message) = &self.body {
            let replay = MessageReplay {
                entry: self,
                message,
            };
            return serde_json::to_value(replay).expect("a message's replay JSON is a value");
        }
        let mut map = Map::new();
        map.insert("id".into(), Value::from(self.id.as_str()));
        map.insert("kind".into(), Value::from(self.kind.as_str()));
        if let Some(turn) = self.turn {
            map.insert("turn".into(), Value::from(turn));
        }
        match &self.body {
            EntryBody::Message(_) => unreachable!("serialized above"),
            EntryBody::Boundary(b) => {
                map.insert("reason".into(), Value::from(b.reason));
                map.insert("source".into(), Value::from(b.source));
                for (k, v) in &b.fields {
                    map.insert(k.clone(), v.clone());
                }
                if b.reason == "compaction" {
                    map.insert("summary".into(), Value::Array(b.summary.content_json()));
                    map.insert("text".into(), Value::from(b.summary.text.as_str()));
                }
            }
            EntryBody::Terminal(t) => {
                map.insert("terminal".into(), Value::Object(t.fields.clone()));
                map.insert("outputBytes".into(), Value::from(t.output.len()));
                map.insert(
                    "text".into(),
                    Value::from(String::from_utf8_lossy(&t.output).into_owned()),
                );
            }
            _ => {
                let view = self.view();
                for (k, v) in view.fields {
                    map.insert(k, v);
                }
                if let EntryBody::ToolCall(tc) = &self.body
                    && let Some(output) = tc.terminal_output()
                {
                    map.insert("text".into(), Value::from(output));
                }
            }
        }
        Value::Object(map)
    }
}

/// A serializable view of one timeline entry, as the render ops carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryView {
    /// Stable id: the messageId / toolCallId / terminalId / compactionId / planId
    /// when free, otherwise a deterministic variant (`agent_message:<id>`), or a
    /// minted id (`m:3`) for v1 messages without messageId.
    pub id: String,
    /// What the entry is.
    pub kind: EntryKind,
    /// The agent-owned messageId of a message entry, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The turn the entry belongs to (1-based); absent for background output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Messages: text blocks joined. Boundaries: the compaction summary text.
    /// Terminals: the output decoded as UTF-8 (lossy). Tool calls: the output
    /// of their display-only terminal (`_meta.terminal_output`). Others: empty.
    #[serde(default)]
    pub text: String,
    /// Kind-specific fields: messages `attachments` (non-text blocks), `_meta`,
    /// `pending`, `rejected`; tool calls `toolCall` (wire fields, verbatim, with
    /// `_meta.terminal_*` lifted out), `permission`, `toolName` (see
    /// [`crate::ToolCall::tool_name`]), `terminal` (the display-only terminal's
    /// `terminalId`, `cwd`, `exitStatus`, ...) and `diffs` (one per file:
    /// `path`, `oldPath`, `change` `add`|`delete`|`modify`|`move`|`copy`,
    /// `binary`, `hunks` with `header` and `lines`, each line its ` `/`+`/`-`
    /// marker then its text; a diff of an `fs/write_text_file` the agent sent
    /// the client also has `write`: `requestId`, `status`
    /// `pending`|`written`|`rejected`|`failed`, `error`, and `oldTextKnown:
    /// false` while the text before is unknown), `reads` (paths the agent
    /// read through the client); plans `plan`, `removed`; boundaries `reason` (`clear` |
    /// `compaction`), `source`, `compactionId`, `status`, `error`; terminals
    /// `terminal`; unknown updates and non-tool permissions `raw`; turn ends
    /// `outcome` (`done` | `cancelled` | `refused` | `max_tokens` |
    /// `max_turn_requests` | `error` | `other` | `unreported`), `stopReason`
    /// and `error` (verbatim) when known.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// A message entry's replay JSON, defined once: its value ([`Entry::replay_json`]) and its
/// compact text ([`Entry::write_replay_json`], written without building the value: a streamed
/// reply has one content block per chunk).
struct MessageReplay<'a> {
    entry: &'a Entry,
    message: &'a Message,
}

impl Serialize for MessageReplay<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (entry, m) = (self.entry, self.message);
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("id", entry.id.as_str())?;
        map.serialize_entry("kind", entry.kind.as_str())?;
        if let Some(turn) = entry.turn {
            map.serialize_entry("turn", &turn)?;
        }
        map.serialize_entry("messageId", &m.message_id)?;
        map.serialize_entry("content", &m.content())?;
        map.serialize_entry("text", m.text.as_str())?;
        if let Some(meta) = &m.meta {
            map.serialize_entry(META_KEY, &**meta)?;
        }
        if m.pending {
            map.serialize_entry("pending", &true)?;
        }
        if m.rejected {
            map.serialize_entry("rejected", &true)?;
        }
        if let Some(author) = &m.author {
            map.serialize_entry("author", author.as_str())?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_kind_names_match_their_serde_names() {
        for kind in [
            EntryKind::UserMessage,
            EntryKind::AgentMessage,
            EntryKind::AgentThought,
            EntryKind::PlanText,
            EntryKind::ToolCall,
            EntryKind::Plan,
            EntryKind::Terminal,
            EntryKind::Boundary,
            EntryKind::Permission,
            EntryKind::Unknown,
            EntryKind::TurnEnd,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
