//! [`EntryKeys`]: which entry a wire id (messageId, toolCallId, ...) names.
//!
//! A long session has one key per message and tool call. As a
//! `HashMap<(Domain, String), usize>` each key cost a 40-byte bucket plus its
//! own string allocation; here a key is a 16-byte bucket and its bytes in one
//! shared buffer, and looking one up allocates nothing.

use std::hash::Hasher;

use hashbrown::HashTable;

use crate::ids::{Domain, MsgKind, fmix64};
use spindle_wire::hash::{FxHashMap, FxHasher};

#[derive(Debug, Clone, Copy)]
struct Key {
    domain: Domain,
    /// The id's bytes: `ids[start..start + len]`.
    start: u32,
    len: u32,
    /// The entry's index in the timeline.
    entry: u32,
}

/// Maps (id space, id) to an entry index.
#[derive(Debug, Clone, Default)]
pub(crate) struct EntryKeys {
    table: HashTable<Key>,
    /// Every key's id, one after the other (keys are never removed).
    ids: String,
    /// Keys that do not fit the compact form (ids past 4 GiB in all, or an
    /// entry index past u32): kept as a plain map.
    overflow: FxHashMap<(Domain, String), usize>,
}

impl EntryKeys {
    /// The entry `id` names in `domain`.
    pub(crate) fn get(&self, domain: Domain, id: &str) -> Option<usize> {
        let hash = key_hash(domain, id);
        if let Some(key) = self.table.find(hash, |k| self.matches(k, domain, id)) {
            return Some(key.entry as usize);
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow.get(&(domain, id.to_owned())).copied()
    }

    /// Points (`domain`, `id`) at `entry`, replacing an earlier mapping. A
    /// key lives either in the table or in the overflow map, never both.
    pub(crate) fn insert(&mut self, domain: Domain, id: &str, entry: usize) {
        let hash = key_hash(domain, id);
        let ids = &self.ids;
        if let Ok(found) = self
            .table
            .find_entry(hash, |k| key_matches(ids, k, domain, id))
        {
            match u32::try_from(entry) {
                Ok(entry) => found.into_mut().entry = entry,
                Err(_) => {
                    found.remove();
                    self.overflow.insert((domain, id.to_owned()), entry);
                }
            }
            return;
        }
        if !self.overflow.is_empty()
            && let Some(slot) = self.overflow.get_mut(&(domain, id.to_owned()))
        {
            *slot = entry;
            return;
        }
        let compact = (
            u32::try_from(self.ids.len()),
            u32::try_from(id.len()),
            u32::try_from(entry),
            u32::try_from(self.ids.len() + id.len()),
        );
        let (Ok(start), Ok(len), Ok(entry), Ok(_)) = compact else {
            self.overflow.insert((domain, id.to_owned()), entry);
            return;
        };
        self.ids.push_str(id);
        let ids = &self.ids;
        self.table.insert_unique(
            hash,
            Key {
                domain,
                start,
                len,
                entry,
            },
            |k| key_hash(k.domain, key_str(ids, k)),
        );
    }

    /// There is an entry for (`domain`, `id`).
    pub(crate) fn contains(&self, domain: Domain, id: &str) -> bool {
        self.get(domain, id).is_some()
    }

    fn matches(&self, key: &Key, domain: Domain, id: &str) -> bool {
        key_matches(&self.ids, key, domain, id)
    }
}

fn key_str<'a>(ids: &'a str, key: &Key) -> &'a str {
    let start = key.start as usize;
    &ids[start..start + key.len as usize]
}

fn key_matches(ids: &str, key: &Key, domain: Domain, id: &str) -> bool {
    key.domain == domain && key_str(ids, key) == id
}

fn key_hash(domain: Domain, id: &str) -> u64 {
    let mut hasher = FxHasher::default();
    hasher.write_u8(match domain {
        Domain::Msg(MsgKind::User) => 0,
        Domain::Msg(MsgKind::Agent) => 1,
        Domain::Msg(MsgKind::Thought) => 2,
        Domain::Msg(MsgKind::PlanText) => 3,
        Domain::Tool => 4,
        Domain::Terminal => 5,
        Domain::Compaction => 6,
        Domain::Plan => 7,
    });
    hasher.write(id.as_bytes());
    fmix64(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_per_domain_and_replaceable() {
        let mut keys = EntryKeys::default();
        keys.insert(Domain::Tool, "a", 1);
        keys.insert(Domain::Msg(MsgKind::Agent), "a", 2);
        keys.insert(Domain::Msg(MsgKind::Thought), "", 3);
        assert_eq!(keys.get(Domain::Tool, "a"), Some(1));
        assert_eq!(keys.get(Domain::Msg(MsgKind::Agent), "a"), Some(2));
        assert_eq!(keys.get(Domain::Msg(MsgKind::User), "a"), None);
        assert_eq!(keys.get(Domain::Msg(MsgKind::Thought), ""), Some(3));
        assert!(!keys.contains(Domain::Tool, "ab"));
        keys.insert(Domain::Tool, "a", 7);
        assert_eq!(keys.get(Domain::Tool, "a"), Some(7));
    }

    #[test]
    fn many_keys_survive_table_growth() {
        let mut keys = EntryKeys::default();
        for i in 0..50_000 {
            keys.insert(Domain::Tool, &format!("call_{i}"), i);
            keys.insert(Domain::Msg(MsgKind::Thought), &format!("call_{i}"), i + 1);
        }
        for i in (0..50_000).step_by(997) {
            assert_eq!(keys.get(Domain::Tool, &format!("call_{i}")), Some(i));
            assert_eq!(
                keys.get(Domain::Msg(MsgKind::Thought), &format!("call_{i}")),
                Some(i + 1)
            );
        }
        assert_eq!(keys.get(Domain::Tool, "call_50000"), None);
    }

    #[test]
    fn an_entry_index_past_u32_goes_to_the_overflow_map() {
        let mut keys = EntryKeys::default();
        let big = u32::MAX as usize + 5;
        keys.insert(Domain::Plan, "p", 4);
        keys.insert(Domain::Plan, "p", big);
        assert_eq!(keys.get(Domain::Plan, "p"), Some(big));
        keys.insert(Domain::Plan, "p", 9);
        assert_eq!(keys.get(Domain::Plan, "p"), Some(9));
    }
}
