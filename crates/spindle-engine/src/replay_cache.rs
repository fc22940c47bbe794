//! What a session's saves derive from its engine, kept from one save to the next
//! ([`ReplayCache`]): each entry's replay JSON at its [`Revision`] and each turn's, so a save
//! serializes only the entries and turns that changed since the last one, hands over only those
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
/// entries have other revisions: nothing of them is taken for this one's).
#[derive(Debug, Default)]
pub struct ReplayCache {
    /// Entry `i`'s replay JSON, at the revision it was made from, and whether a call handed it
    /// over since it was made.
    entries: Vec<(Revision, Box<str>, bool)>,
    /// Turn `i + 1`'s key and its object of the replay JSON's `turns`, and whether a call
    /// handed it over since it was made.
    turns: Vec<(TurnKey, Box<str>, bool)>,
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
        let changed_replies = self.refresh_turns(engine);
        self.refresh_entries(engine);
        let mut shell = Vec::with_capacity(1024);
        let (entries_at, turns_at) = self
            .write_shell(engine, &mut shell)
            .expect("writing JSON into memory cannot fail");
        Materialized {
            shell: String::from_utf8(shell).expect("serde_json writes UTF-8"),
            entries: ListPart {
                at: entries_at,
                count: self.entries.len(),
                changed: hand_over(self.entries.iter_mut().map(|(_, j, h)| (&**j, h))),
            },
            turn_list: ListPart {
                at: turns_at,
                count: self.turns.len(),
                changed: hand_over(self.turns.iter_mut().map(|(_, j, h)| (&**j, h))),
            },
            changed_replies,
            turns: self.turns.len(),
        }
    }

    /// The last call's save failed: the store kept what it had before, so the next call hands
    /// over every item and reports every turn's reply.
    pub fn forget_saved(&mut self) {
        self.turns.clear();
        for (_, _, handed) in &mut self.entries {
            *handed = false;
        }
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
            .map(|(i, key)| self.turns.get(i).is_none_or(|(cached, _, _)| cached != key))
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
                self.turns[index] = (key, json, false);
            } else {
                self.turns.push((key, json, false));
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
            if self
                .entries
                .get(index)
                .is_some_and(|(r, _, _)| r == revision)
            {
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
                self.entries[index] = (*revision, json, false);
            } else {
                self.entries.push((*revision, json, false));
            }
        }
    }

    /// Writes the shell: the engine's object with `entries` and `turns` empty and `finalReply`;
    /// returns the offsets inside the two lists' brackets.
    fn write_shell(
        &self,
        engine: &TranscriptEngine,
        out: &mut Vec<u8>,
    ) -> std::io::Result<(usize, usize)> {
        let Value::Object(shell) = engine.replay_json_object(false, false) else {
            unreachable!("the replay JSON is an object");
        };
        let (mut entries_at, mut turns_at) = (None, None);
        write_object(out, &shell, |key, out| {
            match key {
                "entries" => {
                    out.write_all(b"[")?;
                    entries_at = Some(out.len());
                    out.write_all(b"]")?;
                }
                "turns" => {
                    out.write_all(b"[")?;
                    turns_at = Some(out.len());
                    out.write_all(b"]")?;
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
}

/// The items not handed over yet, by position; they are handed over now.
fn hand_over<'a>(items: impl Iterator<Item = (&'a str, &'a mut bool)>) -> Vec<(usize, String)> {
    items
        .enumerate()
        .filter_map(|(position, (json, handed))| {
            (!std::mem::replace(handed, true)).then(|| (position, json.to_owned()))
        })
        .collect()
}
