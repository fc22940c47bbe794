//! Rendered trees kept by the text they were made from: a finished message is rendered once
//! however often the page asks, and a message whose text changed (cleared, replaced, still
//! growing) simply has another text, so nothing needs invalidating.
//!
//! The key is the text's length and a hash keyed randomly per process, so an agent cannot craft
//! a text whose key collides with another message's. The cache is bounded in bytes; the entries
//! used longest ago go first.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex};

use super::render_json;

/// Bytes of rendered JSON kept by default (all sessions of one server together).
pub(crate) const DEFAULT_LIMIT: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    len: usize,
    hash: u64,
}

#[derive(Debug)]
struct Cached {
    json: Arc<str>,
    used: u64,
}

#[derive(Debug, Default)]
struct Inner {
    trees: HashMap<Key, Cached>,
    bytes: usize,
    clock: u64,
    renders: u64,
}

/// Rendered markdown trees by text (see the module doc).
#[derive(Debug)]
pub(crate) struct RenderCache {
    hasher: RandomState,
    limit: usize,
    inner: Mutex<Inner>,
}

impl Default for RenderCache {
    fn default() -> Self {
        RenderCache::new(DEFAULT_LIMIT)
    }
}

impl RenderCache {
    /// A cache keeping at most `limit` bytes of JSON.
    pub(crate) fn new(limit: usize) -> RenderCache {
        RenderCache {
            hasher: RandomState::new(),
            limit,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The tree of `text` as JSON, rendered now or earlier.
    pub(crate) fn tree_json(&self, text: &str) -> Arc<str> {
        let key = Key {
            len: text.len(),
            hash: self.hasher.hash_one(text),
        };
        {
            let mut inner = crate::core::lock(&self.inner);
            inner.clock += 1;
            let now = inner.clock;
            if let Some(cached) = inner.trees.get_mut(&key) {
                cached.used = now;
                return cached.json.clone();
            }
        }
        // Rendered without the lock: other texts are served meanwhile.
        let json: Arc<str> = render_json(text).into();
        let mut inner = crate::core::lock(&self.inner);
        inner.renders += 1;
        if json.len() > self.limit {
            return json;
        }
        inner.clock += 1;
        let used = inner.clock;
        if let Some(old) = inner.trees.insert(
            key,
            Cached {
                json: json.clone(),
                used,
            },
        ) {
            inner.bytes -= old.json.len();
        }
        inner.bytes += json.len();
        if inner.bytes > self.limit {
            evict(&mut inner, self.limit - self.limit / 4);
        }
        json
    }

    /// How many texts were rendered (not served from the cache) so far.
    #[cfg(test)]
    pub(crate) fn renders(&self) -> u64 {
        crate::core::lock(&self.inner).renders
    }

    /// Bytes of JSON held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        crate::core::lock(&self.inner).bytes
    }
}

/// Drops the trees used longest ago until at most `target` bytes are left.
fn evict(inner: &mut Inner, target: usize) {
    let mut by_age: Vec<(u64, Key)> = inner
        .trees
        .iter()
        .map(|(key, cached)| (cached.used, *key))
        .collect();
    by_age.sort_unstable_by_key(|(used, _)| *used);
    for (_, key) in by_age {
        if inner.bytes <= target {
            break;
        }
        if let Some(gone) = inner.trees.remove(&key) {
            inner.bytes -= gone.json.len();
        }
    }
}
