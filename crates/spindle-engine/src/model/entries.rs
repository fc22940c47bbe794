//! The transcript's entries, each with a revision ([`Entries`]). Every way to change an entry
//! (`entries[i]` taken mutably, `push`) goes through this type, which gives the entry a new
//! revision; so a writer that keeps what it derived from each entry (the replay JSON of a save,
//! see `replay_cache.rs`) builds again only what changed since, and cannot miss a change.

use std::fmt;
use std::ops::{Deref, Index, IndexMut};
use std::slice::SliceIndex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Entry;

/// One state of one entry. Two different states never share a revision, whichever engine they
/// are in: each [`Entries`] (and each clone of one) numbers its changes in an origin of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Revision {
    origin: u64,
    n: u64,
}

/// Origins handed out so far in this process.
static ORIGINS: AtomicU64 = AtomicU64::new(1);

/// The entries in timeline order, each with its [`Revision`]. Read like a slice
/// (`Deref<Target = [Entry]>`); shown (`Debug`) and compared as the entries alone.
pub struct Entries {
    items: Vec<Entry>,
    revisions: Vec<Revision>,
    origin: u64,
    next: u64,
}

impl Entries {
    fn fresh(&mut self) -> Revision {
        self.next += 1;
        Revision {
            origin: self.origin,
            n: self.next,
        }
    }

    /// Appends an entry.
    pub fn push(&mut self, entry: Entry) {
        let revision = self.fresh();
        self.items.push(entry);
        self.revisions.push(revision);
    }

    /// The revision of every entry, by index.
    pub fn revisions(&self) -> &[Revision] {
        &self.revisions
    }
}

impl Default for Entries {
    fn default() -> Self {
        Entries {
            items: Vec::new(),
            revisions: Vec::new(),
            origin: ORIGINS.fetch_add(1, Ordering::Relaxed),
            next: 0,
        }
    }
}

impl Clone for Entries {
    /// The same entries at the same revisions; the clone's own changes are numbered in a new
    /// origin, so they never take a revision the original gives out.
    fn clone(&self) -> Self {
        Entries {
            items: self.items.clone(),
            revisions: self.revisions.clone(),
            ..Entries::default()
        }
    }
}

impl PartialEq for Entries {
    /// The entries alone (revisions say how they came about, not what they are).
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl fmt::Debug for Entries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.items.fmt(f)
    }
}

impl Deref for Entries {
    type Target = [Entry];

    fn deref(&self) -> &[Entry] {
        &self.items
    }
}

impl<I: SliceIndex<[Entry]>> Index<I> for Entries {
    type Output = I::Output;

    fn index(&self, index: I) -> &I::Output {
        &self.items[index]
    }
}

impl IndexMut<usize> for Entries {
    /// The entry, to change: it gets a new revision (also when the caller changes nothing).
    fn index_mut(&mut self, index: usize) -> &mut Entry {
        let revision = self.fresh();
        self.revisions[index] = revision;
        &mut self.items[index]
    }
}

impl<'a> IntoIterator for &'a Entries {
    type Item = &'a Entry;
    type IntoIter = std::slice::Iter<'a, Entry>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EntryBody, EntryKind};

    fn entry(id: &str) -> Entry {
        Entry {
            id: id.to_string(),
            kind: EntryKind::Unknown,
            turn: None,
            body: EntryBody::Raw(Box::default()),
        }
    }

    #[test]
    fn a_change_gives_a_new_revision_that_no_clone_or_other_list_gives_out() {
        let mut entries = Entries::default();
        entries.push(entry("a"));
        entries.push(entry("b"));
        let before = entries.revisions().to_vec();
        assert_ne!(before[0], before[1]);
        let _ = &entries[1];
        assert_eq!(entries.revisions(), before, "a read changes nothing");
        entries[1].id.push('2');
        assert_eq!(entries.revisions()[0], before[0]);
        assert_ne!(entries.revisions()[1], before[1]);

        let mut clone = entries.clone();
        assert_eq!(clone.revisions(), entries.revisions());
        assert!(clone == entries);
        clone[0].id.push('3');
        entries[0].id.push('4');
        assert_ne!(clone.revisions()[0], entries.revisions()[0]);
        let mut other = Entries::default();
        other.push(entry("a"));
        assert!(!entries.revisions().contains(&other.revisions()[0]));
    }
}
