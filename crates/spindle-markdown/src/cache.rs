//! Rendered trees kept by the text they were made from: a finished message is rendered once
//! however often the page asks, and a message whose text changed (cleared, replaced, still
//! growing) simply has another text, so nothing needs invalidating.
//!
//! The key is the text's length and a hash keyed randomly per process, so an agent cannot craft
//! a text whose key collides with another message's. The cache is bounded in bytes; the entries
//! used longest ago go first. A text asked for by several requests at once is rendered once.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::convert::render_json;

/// The guard of `mutex`, also after a panic elsewhere (the cache holds no invariant a panic breaks).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Bytes of rendered JSON kept by default (all sessions of one server together).
pub const DEFAULT_LIMIT: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    len: usize,
    hash: u64,
}

/// One text's tree: rendered once by whichever request comes first; requests for the same text
/// meanwhile wait for it instead of rendering it again (ten tabs reopening one session).
#[derive(Debug)]
struct Slot {
    tree: Arc<OnceLock<Arc<str>>>,
    used: u64,
    /// The JSON's length once counted in [`Inner::bytes`] (0 until then).
    bytes: usize,
}

#[derive(Debug, Default)]
struct Inner {
    trees: HashMap<Key, Slot>,
    bytes: usize,
    clock: u64,
}

/// Rendered markdown trees by text (see the module doc).
#[derive(Debug)]
pub struct RenderCache {
    hasher: RandomState,
    limit: usize,
    inner: Mutex<Inner>,
    renders: AtomicU64,
}

impl Default for RenderCache {
    fn default() -> Self {
        RenderCache::new(DEFAULT_LIMIT)
    }
}

impl RenderCache {
    /// A cache keeping at most `limit` bytes of JSON.
    pub fn new(limit: usize) -> RenderCache {
        RenderCache {
            hasher: RandomState::new(),
            limit,
            inner: Mutex::new(Inner::default()),
            renders: AtomicU64::new(0),
        }
    }

    /// The tree of `text` as JSON, rendered now or earlier.
    pub fn tree_json(&self, text: &str) -> Arc<str> {
        let key = Key {
            len: text.len(),
            hash: self.hasher.hash_one(text),
        };
        let tree = {
            let mut inner = lock(&self.inner);
            inner.clock += 1;
            let used = inner.clock;
            let slot = inner.trees.entry(key).or_insert_with(|| Slot {
                tree: Arc::new(OnceLock::new()),
                used,
                bytes: 0,
            });
            slot.used = used;
            slot.tree.clone()
        };
        // Rendered without the cache's lock: other texts are served meanwhile.
        let json = tree
            .get_or_init(|| {
                self.renders.fetch_add(1, Ordering::Relaxed);
                render_json(text).into()
            })
            .clone();
        let mut inner = lock(&self.inner);
        let inner = &mut *inner;
        if let Some(slot) = inner.trees.get_mut(&key)
            && Arc::ptr_eq(&slot.tree, &tree)
            && slot.bytes == 0
        {
            if json.len() > self.limit {
                inner.trees.remove(&key);
            } else {
                slot.bytes = json.len();
                inner.bytes += json.len();
                if inner.bytes > self.limit {
                    evict(inner, self.limit - self.limit / 4);
                }
            }
        }
        json
    }

    /// How many texts were rendered (not served from the cache) so far.
    #[cfg(test)]
    pub fn renders(&self) -> u64 {
        self.renders.load(Ordering::Relaxed)
    }

    /// Bytes of JSON held.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        lock(&self.inner).bytes
    }
}

/// Drops the trees used longest ago until at most `target` bytes are left.
fn evict(inner: &mut Inner, target: usize) {
    // Trees still being rendered (bytes 0) are not counted yet and stay.
    let mut by_age: Vec<(u64, Key)> = inner
        .trees
        .iter()
        .filter(|(_, slot)| slot.bytes > 0)
        .map(|(key, slot)| (slot.used, *key))
        .collect();
    by_age.sort_unstable_by_key(|(used, _)| *used);
    for (_, key) in by_age {
        if inner.bytes <= target {
            break;
        }
        if let Some(gone) = inner.trees.remove(&key) {
            inner.bytes -= gone.bytes;
        }
    }
}
