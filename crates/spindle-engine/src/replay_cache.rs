//! What a session's saves derive from its engine, kept from one save to the next
//! ([`ReplayCache`]): the [`Revision`] of each entry and the key of each turn the store was last
//! handed, so a save serializes and hands over only the entries and turns that changed since
//! (the replay JSON comes in parts: a shell with its `entries` and `turns` empty, and the
//! changed items of each, which a store keeps by position), and reports only the replies that
//! changed. A save at every turn's start and end then costs what the turn changed, not the
//! whole session.

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
/// entries have other revisions: nothing of them is taken for this one's). It keeps what the
/// store was last handed, not the JSON itself: an item is serialized when it changed, straight
/// into the save.
#[derive(Debug, Default)]
pub struct ReplayCache {
    /// The revision each entry had when it was last handed over, by position.
    entries: Vec<Revision>,
    /// Turn `i + 1`'s key when it was last handed over.
    turns: Vec<TurnKey>,
}

/// One save's worth of the transcript ([`ReplayCache::materialize`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Materialized {
    /// The replay JSON with its `entries` and `turns` empty: with each list's items joined by
    /// commas at its offset, the same bytes as `replay_json().to_string()`.
    pub shell: String,
    /// The `entries` list.
    pub entries: ListPart,
    /// The `turns` list.
    pub turn_list: ListPart,
    /// The persisted reply of each turn that is new or changed since the last call (all of
    /// them after [`ReplayCache::forget_saved`]), in turn order.
    pub changed_replies: Vec<TurnReply>,
    /// How many turns there are (a reply of a later turn no longer exists).
    pub turns: usize,
}

/// One list of a [`Materialized`]: where its items go, how many it has, and those not handed
/// over before (by position).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListPart {
    /// The byte offset in the shell, inside the list's brackets.
    pub at: usize,
    /// How many items the list has.
    pub count: usize,
    /// The items new or changed since the last call (all after [`ReplayCache::forget_saved`]).
    pub changed: Vec<(usize, String)>,
}

impl ReplayCache {
    /// The replay JSON of `engine` in parts and the replies that changed since the last call.
    pub fn materialize(&mut self, engine: &TranscriptEngine) -> Materialized {
        let (changed_replies, changed_turns) = self.refresh_turns(engine);
        let changed_entries = self.refresh_entries(engine);
        let mut shell = Vec::with_capacity(1024);
        let (entries_at, turns_at) =
            write_shell(engine, &mut shell).expect("writing JSON into memory cannot fail");
        Materialized {
            shell: String::from_utf8(shell).expect("serde_json writes UTF-8"),
            entries: ListPart {
                at: entries_at,
                count: self.entries.len(),
                changed: changed_entries,
            },
            turn_list: ListPart {
                at: turns_at,
                count: self.turns.len(),
                changed: changed_turns,
            },
            changed_replies,
            turns: self.turns.len(),
        }
    }

    /// The last call's save failed: the store kept what it had before, so the next call hands
    /// over every item and reports every turn's reply.
    pub fn forget_saved(&mut self) {
        self.turns.clear();
        self.entries.clear();
    }

    /// Brings the turns up to date; returns the replies of the turns that changed and their
    /// JSON, by position.
    fn refresh_turns(
        &mut self,
        engine: &TranscriptEngine,
    ) -> (Vec<TurnReply>, Vec<(usize, String)>) {
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
            .map(|(i, key)| self.turns.get(i) != Some(key))
            .collect();
        // The changed turns' replies, in one pass over the entries.
        let mut pieces: Vec<Vec<&str>> = vec![Vec::new(); keys.len()];
        for (index, m) in engine.reply_messages().filter(|(index, _)| changed[*index]) {
            push_reply(&mut pieces[index], m);
        }
        let mut replies = Vec::new();
        let mut jsons = Vec::new();
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
            jsons.push((index, turn_json(&reply).to_string()));
            if index < self.turns.len() {
                self.turns[index] = key;
            } else {
                self.turns.push(key);
            }
            replies.push(reply);
        }
        (replies, jsons)
    }

    /// Brings the entries up to date; returns the JSON of those that changed, by position.
    fn refresh_entries(&mut self, engine: &TranscriptEngine) -> Vec<(usize, String)> {
        let entries = &engine.transcript().entries;
        self.entries.truncate(entries.len());
        let mut changed = Vec::new();
        for (index, (entry, revision)) in entries.iter().zip(entries.revisions()).enumerate() {
            if self.entries.get(index) == Some(revision) {
                continue;
            }
            let mut json = Vec::new();
            entry
                .write_replay_json(&mut json)
                .expect("writing JSON into memory cannot fail");
            changed.push((
                index,
                String::from_utf8(json).expect("serde_json writes UTF-8"),
            ));
            if index < self.entries.len() {
                self.entries[index] = *revision;
            } else {
                self.entries.push(*revision);
            }
        }
        changed
    }
}

/// Writes the shell: the engine's object with `entries` and `turns` empty and `finalReply`;
/// returns the offsets inside the two lists' brackets.
fn write_shell(engine: &TranscriptEngine, out: &mut Vec<u8>) -> std::io::Result<(usize, usize)> {
    let Value::Object(shell) = engine.replay_json_object(false, false) else {
        unreachable!("the replay JSON is an object");
    };
    let (mut entries_at, mut turns_at) = (None, None);
    write_object(out, &shell, |key, out| {
        match key {
            list @ ("entries" | "turns") => {
                out.write_all(b"[]")?;
                let inside = Some(out.len() - 1);
                if list == "entries" {
                    entries_at = inside;
                } else {
                    turns_at = inside;
                }
            }
            "finalReply" => serde_json::to_writer(&mut *out, &engine.final_reply())?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let missing = |list| std::io::Error::other(format!("the replay JSON has no {list}"));
    Ok((
        entries_at.ok_or_else(|| missing("entries"))?,
        turns_at.ok_or_else(|| missing("turns"))?,
    ))
}
