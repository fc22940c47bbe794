//! Messages: chunks (append; the fast paths for plain text chunks),
//! upserts (three-state replace), clears, metadata routing, and which entry
//! a messageId names.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::classify::{Route, route};
use crate::config::StreamingPolicy;
use crate::content::{BlockIn, block_in_from_value};
use crate::core::TranscriptEngine;
use crate::ids::{Domain, MsgKind};
use crate::model::{EntryBody, Message};
use crate::wire::{UpdateProbe, meta_flags};
use spindle_wire::meta::META_KEY;
use spindle_wire::scan::PlainChunk;
use spindle_wire::tags::{MessageKind, UpdateTag};

/// A message chunk, normalised from either decoding path.
#[derive(Debug)]
pub(crate) struct ChunkIn<'a> {
    pub kind: MsgKind,
    pub message_id: Option<Cow<'a, str>>,
    pub block: BlockIn<'a>,
    /// `_meta.spindle.snapshot`, when given.
    pub snapshot_flag: Option<bool>,
    pub clear_boundary: bool,
}

/// Three-state patch field: omitted, `null`, or a value.
#[derive(Debug)]
pub(crate) enum Patch<T> {
    Keep,
    Clear,
    Set(T),
}

/// The message kind a chunk tag carries; `None` for other tags.
fn chunk_tag_kind(tag: &str) -> Option<MsgKind> {
    UpdateTag::parse(tag)
        .and_then(MessageKind::of_chunk)
        .map(MsgKind::from)
}

fn routed(kind: MsgKind, r: Route) -> MsgKind {
    match (kind, r) {
        (MsgKind::Agent, Route::Thought) => MsgKind::Thought,
        (MsgKind::Agent, Route::Plan) => MsgKind::PlanText,
        (k, _) => k,
    }
}

/// True when a content patch carries no text to show: kept, cleared, or only
/// empty text blocks.
fn shows_no_text(content: &Patch<Vec<Value>>) -> bool {
    match content {
        Patch::Keep | Patch::Clear => true,
        Patch::Set(blocks) => blocks.iter().all(|b| {
            b.as_object().is_some_and(|m| {
                m.len() == 2
                    && m.get("type").and_then(Value::as_str) == Some("text")
                    && m.get("text").and_then(Value::as_str) == Some("")
            })
        }),
    }
}

impl TranscriptEngine {
    /// The fastest path: a chunk the scanner read whole (no `_meta`, no
    /// routing fields, a plain text block). Returns false (having changed
    /// nothing) for tags that are not message chunks.
    pub(crate) fn try_plain_chunk(&mut self, c: PlainChunk<'_>) -> bool {
        let Some(kind) = chunk_tag_kind(&c.tag) else {
            return false;
        };
        if !self.note_session(c.session_id.as_deref()) {
            // Another session's chunk: diagnosed there, consumed here, never applied (F3).
            return true;
        }
        self.apply_chunk(ChunkIn {
            kind,
            message_id: c.message_id,
            block: BlockIn::Text(c.text, None, false),
            snapshot_flag: None,
            clear_boundary: false,
        });
        true
    }

    /// The fast path for plain text chunks. Returns false (having changed
    /// nothing) when the update needs the general `Value` path.
    pub(crate) fn try_fast_chunk(&mut self, session_id: Option<&str>, u: UpdateProbe<'_>) -> bool {
        let Some(kind) = u.tag.as_deref().and_then(chunk_tag_kind) else {
            return false;
        };
        let message_id: Option<Cow<'_, str>> = match u.message_id {
            None => None,
            Some(raw) if raw.get() == "null" => None,
            Some(raw) => match serde_json::from_str::<&str>(raw.get()) {
                Ok(s) => Some(Cow::Borrowed(s)),
                Err(_) => return false,
            },
        };
        let Some(block) = u.content else {
            return false;
        };
        if block.ty != "text" {
            return false;
        }
        // A member that may change the route: the general path weighs it.
        if u.routing {
            return false;
        }
        let (snapshot_flag, clear_boundary) = match u.meta {
            None => (None, false),
            Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
                Ok(meta) => meta_flags(&meta),
                Err(_) => return false,
            },
        };
        if !self.note_session(session_id) {
            return true;
        }
        self.apply_chunk(ChunkIn {
            kind,
            message_id,
            block: BlockIn::Text(block.text, None, false),
            snapshot_flag,
            clear_boundary,
        });
        true
    }

    /// General path for `*_message_chunk` / `agent_thought_chunk`.
    pub(crate) fn chunk_from_value(&mut self, tag: &str, mut u: Map<String, Value>) {
        let Some(kind) = chunk_tag_kind(tag) else {
            return;
        };
        let message_id = match u.remove("messageId") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(Cow::Owned(s)),
            Some(_) => {
                return self.diag(
                    "malformed_update",
                    format!("{tag}: messageId must be a string"),
                );
            }
        };
        let content = match u.remove("content") {
            Some(Value::Object(m)) => m,
            _ => {
                return self.diag(
                    "malformed_update",
                    format!("{tag}: content must be one content block object"),
                );
            }
        };
        let (snapshot_flag, clear_boundary) = u.get(META_KEY).map_or((None, false), meta_flags);
        let kind = if kind == MsgKind::Agent {
            routed(kind, route(Some(&u), Some(&content)))
        } else {
            kind
        };
        // Routing already weighed the block's metadata: a chunk that stays in
        // an agent message is reply text.
        let block = match block_in_from_value(Value::Object(content)) {
            BlockIn::Text(t, extra, _) => BlockIn::Text(t, extra, false),
            other => other,
        };
        self.apply_chunk(ChunkIn {
            kind,
            message_id,
            block,
            snapshot_flag,
            clear_boundary,
        });
    }

    fn lookup_msg(&mut self, kind: MsgKind, id: &str) -> Option<usize> {
        if let Some((cached, idx)) = &self.last_hit[kind as usize]
            && cached == id
        {
            return Some(*idx);
        }
        let idx = self.keys.get(Domain::Msg(kind), id)?;
        self.last_hit[kind as usize] = Some((id.to_owned(), idx));
        Some(idx)
    }

    fn register_msg(&mut self, kind: MsgKind, id: &str, idx: usize) {
        self.keys.insert(Domain::Msg(kind), id, idx);
        self.last_hit[kind as usize] = Some((id.to_owned(), idx));
    }

    /// Creates a message entry (no op yet: the caller emits the insert once
    /// the first content is in, so a view gets one op).
    fn new_message(&mut self, kind: MsgKind, message_id: Option<&str>) -> usize {
        let turn = if kind == MsgKind::User {
            self.begin_turn();
            Some(self.t.state.turns)
        } else {
            self.output_turn()
        };
        let preferred = match message_id {
            Some(id) => id.to_owned(),
            None => self.mint_id("m"),
        };
        // Streamed messages grow chunk by chunk: start with room for a few.
        let message = Message {
            message_id: message_id.map(str::to_owned),
            text: String::new(),
            // Plain text chunks share one block run: one block is typical.
            blocks: Vec::with_capacity(1),
            ..Message::default()
        };
        let idx = self.push_entry(
            &preferred,
            kind.entry_kind(),
            EntryBody::Message(Box::new(message)),
            turn,
        );
        if let Some(id) = message_id {
            self.register_msg(kind, id, idx);
        }
        idx
    }

    /// The client's prompt entry becomes the agent-acknowledged user message.
    fn adopt(&mut self, idx: usize, message_id: Option<&str>) {
        if let Some(id) = message_id {
            let already = self.t.entries[idx]
                .message()
                .and_then(|m| m.message_id.clone());
            if already.is_none() {
                if let EntryBody::Message(m) = &mut self.t.entries[idx].body {
                    m.message_id = Some(id.to_owned());
                }
                self.register_msg(MsgKind::User, id, idx);
            }
        }
        if let EntryBody::Message(m) = &mut self.t.entries[idx].body {
            m.pending = false;
        }
        self.awaiting_ack.retain(|&p| p != idx);
    }

    /// True when an agent-side chunk (not a user chunk, whose target may be a
    /// prompt awaiting acknowledgement) would land in an existing message:
    /// the one its id names, or without an id the one of its kind streaming.
    fn message_exists(&mut self, kind: MsgKind, message_id: Option<&str>) -> bool {
        match message_id {
            Some(id) => self.lookup_msg(kind, id).is_some(),
            None => self.open.is_some_and(|(k, _)| k == kind),
        }
    }

    /// Finds or creates the message a chunk/upsert addresses.
    /// Returns (index, is_new, is_acknowledgement).
    fn target_message(&mut self, kind: MsgKind, message_id: Option<&str>) -> (usize, bool, bool) {
        if kind == MsgKind::User {
            let found = message_id.and_then(|id| self.lookup_msg(kind, id));
            if let Some(idx) = found {
                // Known id: an acknowledgement if that prompt still awaits one
                // (its id came with the v2 prompt response).
                let ack = self.awaiting_ack.contains(&idx);
                if ack {
                    self.adopt(idx, message_id);
                }
                return (idx, false, ack);
            }
            // An id-less chunk continues the acknowledged message it follows.
            if message_id.is_none()
                && let Some((MsgKind::User, idx)) = self.open
                && !self.awaiting_ack.contains(&idx)
            {
                return (idx, false, false);
            }
            // Otherwise the oldest prompt still waiting is the one acknowledged.
            if let Some(&pending) = self.awaiting_ack.front() {
                self.adopt(pending, message_id);
                return (pending, false, true);
            }
        } else if let Some(id) = message_id
            && let Some(idx) = self.lookup_msg(kind, id)
        {
            return (idx, false, false);
        }
        if message_id.is_none()
            && let Some((k, idx)) = self.open
            && k == kind
        {
            return (idx, false, false);
        }
        (self.new_message(kind, message_id), true, false)
    }

    fn apply_chunk(&mut self, mut c: ChunkIn<'_>) {
        if c.clear_boundary {
            self.clear_boundary("clear_boundary_meta");
        }
        // An id-less chunk continues the message an empty chunk named, as it
        // would have continued that message had it been opened.
        if c.message_id.is_none()
            && let Some((kind, id)) = &self.opening
            && *kind == c.kind
        {
            c.message_id = Some(Cow::Owned(id.clone()));
        }
        // v2 requires the id; without one the chunk is applied as a v1 chunk
        // would be (it continues the message of its kind that is streaming, or
        // starts one under a minted id), so no text is lost.
        if c.message_id.is_none() && self.t.protocol == 2 {
            self.diag(
                "missing_message_id",
                "v2 chunk without a messageId: it continues the message streaming, or starts one under a minted id",
            );
        }
        if c.kind != MsgKind::User
            && matches!(&c.block, BlockIn::Text(text, ..) if text.is_empty())
            && !self.message_exists(c.kind, c.message_id.as_deref())
        {
            // An empty chunk opening a message (Qwen Code sends these) would
            // show an empty entry: it creates nothing, and the message starts
            // with its first text. It still ends the message of another kind,
            // and one that names a new id ends the streaming message of its
            // own kind too: the id-less chunks after it belong to that id.
            if let Some(id) = c.message_id {
                self.set_open(None);
                self.opening = Some((c.kind, id.into_owned()));
            } else if self.open.is_some_and(|(k, _)| k != c.kind)
                || self.opening.as_ref().is_some_and(|(k, _)| *k != c.kind)
            {
                self.set_open(None);
            }
            return;
        }
        let (idx, is_new, ack) = self.target_message(c.kind, c.message_id.as_deref());
        self.set_open(Some((c.kind, idx)));
        let snapshot = match c.snapshot_flag {
            Some(flag) => flag,
            None => self.config.streaming == StreamingPolicy::Snapshot && c.kind != MsgKind::User,
        };
        if snapshot || ack {
            // Replace: the first acknowledging chunk replaces the client's own copy.
            self.set_content(idx, vec![c.block], !is_new);
            if ack && !is_new {
                self.emit_update(idx);
            }
        } else {
            self.append_block(idx, c.block, !is_new);
        }
        if is_new {
            self.emit_insert(idx);
        }
    }

    /// `user_message` / `agent_message` / `agent_thought`: an upsert keyed by
    /// (kind, messageId); `content` and `_meta` are three-state patch fields.
    pub(crate) fn message_upsert(&mut self, tag: &str, kind: MsgKind, mut u: Map<String, Value>) {
        let message_id = match u.remove("messageId") {
            Some(Value::String(s)) => s,
            _ => {
                return self.diag(
                    "malformed_update",
                    format!("{tag}: messageId (string) is required"),
                );
            }
        };
        let content = match u.remove("content") {
            None => Patch::Keep,
            Some(Value::Null) => Patch::Clear,
            Some(Value::Array(a)) if a.is_empty() => Patch::Clear,
            Some(Value::Array(a)) => Patch::Set(a),
            Some(_) => {
                return self.diag(
                    "malformed_update",
                    format!("{tag}: content must be an array or null"),
                );
            }
        };
        let meta = match u.remove(META_KEY) {
            None => Patch::Keep,
            Some(Value::Null) => Patch::Clear,
            Some(v) => Patch::Set(v),
        };
        if kind != MsgKind::User
            && !matches!(meta, Patch::Set(_))
            && shows_no_text(&content)
            && !self.message_exists(kind, Some(&message_id))
        {
            // A new message with nothing to show, as an empty chunk: no entry
            // yet; it is placed at its first content, and id-less chunks of
            // its kind join it (the same timeline a v1 client gets from the
            // empty chunks a bridge makes of it).
            self.set_open(None);
            self.opening = Some((kind, message_id));
            return;
        }
        let (idx, is_new, ack) = self.target_message(kind, Some(&message_id));
        self.set_open(Some((kind, idx)));
        let mut changed = ack;
        match content {
            Patch::Keep => {}
            Patch::Clear => self.set_content(idx, Vec::new(), !is_new),
            Patch::Set(blocks) => {
                let blocks = blocks.into_iter().map(block_in_from_value).collect();
                self.set_content(idx, blocks, !is_new);
            }
        }
        if let EntryBody::Message(m) = &mut self.t.entries[idx].body {
            match meta {
                Patch::Keep => {}
                Patch::Clear => changed |= m.meta.take().is_some(),
                Patch::Set(v) => {
                    changed |= m.meta.as_deref() != Some(&v);
                    m.meta = Some(Box::new(v));
                }
            }
        }
        if is_new {
            self.emit_insert(idx);
        } else if changed {
            self.emit_update(idx);
        }
    }

    /// `agent_message_clear` / `agent_thought_clear` (Spindle extension, seed
    /// 000): empties the named message, or the one currently streaming.
    pub(crate) fn message_clear(&mut self, tag: &str, kind: MsgKind, u: &Map<String, Value>) {
        let idx = match u.get("messageId") {
            None | Some(Value::Null) => match self.open {
                Some((k, idx)) if k == kind => Some(idx),
                _ => None,
            },
            Some(Value::String(id)) => self.lookup_msg(kind, id),
            Some(_) => {
                return self.diag(
                    "malformed_update",
                    format!("{tag}: messageId must be a string"),
                );
            }
        };
        if let Some(idx) = idx {
            self.set_content(idx, Vec::new(), true);
        }
    }

    /// Gives the client's prompt entry the agent-owned messageId.
    pub(crate) fn alias_user_message(&mut self, idx: usize, message_id: &str) {
        if self.keys.contains(Domain::Msg(MsgKind::User), message_id) {
            return;
        }
        if let EntryBody::Message(m) = &mut self.t.entries[idx].body {
            if m.message_id.is_some() {
                return;
            }
            m.message_id = Some(message_id.to_owned());
        }
        self.keys
            .insert(Domain::Msg(MsgKind::User), message_id, idx);
        self.emit_update(idx);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{EngineConfig, TranscriptEngine};

    fn chunk(id: Option<&str>, text: &str) -> String {
        let mut update = json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text}});
        if let Some(id) = id {
            update["messageId"] = json!(id);
        }
        json!({"sessionId": "s", "update": update}).to_string()
    }

    #[test]
    fn an_empty_chunk_opens_no_message_but_the_next_chunk_of_its_id_does() {
        let mut e = TranscriptEngine::new(EngineConfig::default());
        e.apply_user_prompt(r#"[{"type":"text","text":"hi"}]"#);
        for id in [None, Some("a1")] {
            let applied = e.apply_session_update(&chunk(id, ""));
            assert!(applied.is_empty(), "{id:?}: {applied:?}");
        }
        assert_eq!(e.transcript().entries.len(), 1, "only the prompt");
        e.apply_session_update(&chunk(Some("a1"), "Hello"));
        // An empty chunk of an existing message changes nothing visible either.
        let applied = e.apply_session_update(&chunk(Some("a1"), ""));
        assert!(applied.ops.is_empty());
        e.apply_session_update(&chunk(Some("a1"), "!"));
        let entries = &e.transcript().entries;
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].id, "a1");
        assert_eq!(entries[1].text(), "Hello!");
        assert_eq!(e.final_reply().as_deref(), Some("Hello!"));
    }

    #[test]
    fn an_empty_chunk_naming_a_new_id_ends_the_streaming_message_and_id_less_chunks_join_it() {
        // As the bridge relays it: "one", an empty chunk of a new message m2,
        // then id-less text, which belongs to m2 (v1 boundaries), not to "one"'s
        // message. Found by the bridge round-trip fuzz corpus.
        let mut e = TranscriptEngine::new(EngineConfig::default());
        e.apply_user_prompt(r#"[{"type":"text","text":"hi"}]"#);
        e.apply_session_update(&chunk(None, "one"));
        assert!(e.apply_session_update(&chunk(Some("m2"), "")).is_empty());
        e.apply_session_update(&chunk(None, "two"));
        e.apply_session_update(&chunk(None, " more"));
        let texts: Vec<String> = e
            .transcript()
            .entries
            .iter()
            .map(|x| x.text().to_string())
            .collect();
        assert_eq!(texts, ["hi", "one", "two more"]);
        assert_eq!(e.transcript().entries[2].id, "m2");
        // The same text sent with the id lands in the same place.
        let mut f = TranscriptEngine::new(EngineConfig::default());
        f.apply_user_prompt(r#"[{"type":"text","text":"hi"}]"#);
        f.apply_session_update(&chunk(None, "one"));
        f.apply_session_update(&chunk(Some("m2"), "two"));
        f.apply_session_update(&chunk(Some("m2"), " more"));
        assert_eq!(e.final_reply(), f.final_reply());
    }

    #[test]
    fn a_message_only_named_by_an_empty_chunk_ends_at_an_empty_chunk_of_another_kind() {
        // m2 is named by an empty chunk, then an empty thought chunk ends it
        // (v1 boundaries): the id-less text after it is a new message, and a
        // later chunk of m2 is m2 (found by the bridge round-trip fuzzer).
        let mut e = TranscriptEngine::new(EngineConfig::default());
        e.apply_user_prompt(r#"[{"type":"text","text":"hi"}]"#);
        e.apply_session_update(&chunk(Some("m2"), ""));
        let thought = json!({"sessionId": "s", "update": {"sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": ""}}});
        e.apply_session_update(&thought.to_string());
        e.apply_session_update(&chunk(None, "new"));
        e.apply_session_update(&chunk(Some("m2"), "late"));
        let entries = &e.transcript().entries;
        let texts: Vec<&str> = entries.iter().map(|x| x.text()).collect();
        assert_eq!(texts, ["hi", "new", "late"]);
        assert_ne!(entries[1].id, "m2");
        assert_eq!(entries[2].id, "m2");
    }

    #[test]
    fn a_new_upsert_with_nothing_to_show_is_placed_at_its_first_content() {
        // v2: an empty thought upsert, a message, then the thought's text: the
        // thought is placed after the message, as the empty chunks a bridge
        // makes of it would place it (found by the v2 round-trip fuzzer).
        let mut e = TranscriptEngine::new(EngineConfig::default());
        e.apply_user_prompt(r#"[{"type":"text","text":"hi"}]"#);
        let upsert = |id: &str, tag: &str, text: &str| {
            json!({"sessionId": "s", "update": {"sessionUpdate": tag, "messageId": id,
                "content": [{"type": "text", "text": text}]}})
            .to_string()
        };
        assert!(
            e.apply_session_update(&upsert("t1", "agent_thought", ""))
                .is_empty()
        );
        e.apply_session_update(&upsert("m1", "agent_message", "answer"));
        e.apply_session_update(&upsert("t1", "agent_thought", "thinking"));
        let texts: Vec<&str> = e.transcript().entries.iter().map(|x| x.text()).collect();
        assert_eq!(texts, ["hi", "answer", "thinking"]);
        assert_eq!(e.final_reply().as_deref(), Some("answer"));
    }
}
