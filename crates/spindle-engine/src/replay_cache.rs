//! What a session's saves derive from its engine, kept from one save to the next
//! ([`ReplayCache`]): each entry's replay JSON at its [`Revision`] and each turn's, so a save
//! serializes only the entries and turns that changed since the last one, and reports only the
//! replies that changed. A save at every turn's start and end then costs what the turn changed,
//! not the whole session (the text is still assembled whole: a copy of the cached pieces).

use std::io::Write;

use serde_json::Value;

use crate::core::TranscriptEngine;
use crate::model::{EntryKind, Revision};
use crate::replay::{TurnReply, joined, push_reply, turn_index, turn_json, write_object};

/// What one turn's reply is made of: its agent messages' revisions and its record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct TurnKey {
    messages: Vec<Revision>,
    finished: bool,
    stop_reason: Option<String>,
}

/// See the module's header. One per session, used with one engine at a time (another engine's
/// entries have other revisions: nothing of them is taken for this one's).
#[derive(Debug, Default)]
pub struct ReplayCache {
    /// Entry `i`'s replay JSON, at the revision it was made from.
    entries: Vec<(Revision, Box<str>)>,
    /// Turn `i + 1`'s key and its object of the replay JSON's `turns`.
    turns: Vec<(TurnKey, Box<str>)>,
}

/// One save's worth of the transcript ([`ReplayCache::materialize`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Materialized {
    /// The replay JSON, the same bytes as `replay_json().to_string()`.
    pub replay: String,
    /// The persisted reply of each turn that is new or changed since the last call (all of
    /// them after [`ReplayCache::forget_turns`]), in turn order.
    pub changed_replies: Vec<TurnReply>,
    /// How many turns there are (a reply of a later turn no longer exists).
    pub turns: usize,
}

impl ReplayCache {
    /// The replay JSON of `engine` and the replies that changed since the last call.
    pub fn materialize(&mut self, engine: &TranscriptEngine) -> Materialized {
        let changed_replies = self.refresh_turns(engine);
        self.refresh_entries(engine);
        let mut replay = Vec::with_capacity(
            self.entries.iter().map(|(_, j)| j.len() + 1).sum::<usize>()
                + self.turns.iter().map(|(_, j)| j.len() + 1).sum::<usize>()
                + 1024,
        );
        self.write(engine, &mut replay)
            .expect("writing JSON into memory cannot fail");
        Materialized {
            replay: String::from_utf8(replay).expect("serde_json writes UTF-8"),
            changed_replies,
            turns: self.turns.len(),
        }
    }

    /// The replies of the last call were not stored (the save failed): the next call reports
    /// every turn's.
    pub fn forget_turns(&mut self) {
        self.turns.clear();
    }

    /// Brings the turns up to date; returns the replies of the turns that changed.
    fn refresh_turns(&mut self, engine: &TranscriptEngine) -> Vec<TurnReply> {
        let t = engine.transcript();
        let log = &engine.turn_log;
        let mut keys: Vec<TurnKey> = log
            .iter()
            .map(|record| TurnKey {
                messages: Vec::new(),
                finished: record.finished,
                stop_reason: record.stop_reason.clone(),
            })
            .collect();
        let revisions = t.entries.revisions();
        for (entry, revision) in t.entries.iter().zip(revisions) {
            if entry.kind == EntryKind::AgentMessage
                && let Some(index) = turn_index(entry.turn, log.len())
            {
                keys[index].messages.push(*revision);
            }
        }
        self.turns.truncate(keys.len());
        let changed: Vec<bool> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| self.turns.get(i).is_none_or(|(cached, _)| cached != key))
            .collect();
        // The changed turns' replies, in one pass over the entries.
        let mut pieces: Vec<Vec<&str>> = vec![Vec::new(); keys.len()];
        for (index, m) in engine.reply_messages().filter(|(index, _)| changed[*index]) {
            push_reply(&mut pieces[index], m);
        }
        let mut replies = Vec::new();
        for (index, (key, turn_pieces)) in keys.into_iter().zip(pieces).enumerate() {
            if !changed[index] {
                continue;
            }
            let reply = TurnReply {
                turn: u32::try_from(index + 1).unwrap_or(u32::MAX),
                reply: joined(&turn_pieces),
                finished: key.finished,
                stop_reason: key.stop_reason.clone(),
            };
            let json = turn_json(&reply).to_string().into_boxed_str();
            if index < self.turns.len() {
                self.turns[index] = (key, json);
            } else {
                self.turns.push((key, json));
            }
            replies.push(reply);
        }
        replies
    }

    /// Brings the entries' JSON up to date.
    fn refresh_entries(&mut self, engine: &TranscriptEngine) {
        let entries = &engine.transcript().entries;
        self.entries.truncate(entries.len());
        for (index, (entry, revision)) in entries.iter().zip(entries.revisions()).enumerate() {
            if self.entries.get(index).is_some_and(|(r, _)| r == revision) {
                continue;
            }
            let mut json = Vec::new();
            entry
                .write_replay_json(&mut json)
                .expect("writing JSON into memory cannot fail");
            let json = String::from_utf8(json)
                .expect("serde_json writes UTF-8")
                .into_boxed_str();
            if index < self.entries.len() {
                self.entries[index] = (*revision, json);
            } else {
                self.entries.push((*revision, json));
            }
        }
    }

    /// Writes the replay JSON: the engine's object with `entries`, `turns` and `finalReply`
    /// taken from the cache.
    fn write(&self, engine: &TranscriptEngine, out: &mut Vec<u8>) -> std::io::Result<()> {
        let Value::Object(shell) = engine.replay_json_object(false, false) else {
            unreachable!("the replay JSON is an object");
        };
        write_object(out, &shell, |key, out| {
            match key {
                "entries" => write_array(out, self.entries.iter().map(|(_, j)| &**j))?,
                "turns" => write_array(out, self.turns.iter().map(|(_, j)| &**j))?,
                "finalReply" => serde_json::to_writer(&mut *out, &engine.final_reply())?,
                _ => return Ok(false),
            }
            Ok(true)
        })
    }
}

fn write_array<'a>(out: &mut Vec<u8>, items: impl Iterator<Item = &'a str>) -> std::io::Result<()> {
    out.write_all(b"[")?;
    for (n, item) in items.enumerate() {
        if n > 0 {
            out.write_all(b",")?;
        }
        out.write_all(item.as_bytes())?;
    }
    out.write_all(b"]")
}
