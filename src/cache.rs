//! The byte-bounded LRU of rendered sessions and the small size index beside it.
//!
//! A session directory is rendered as a whole ([`Bundle`]): a `grep -r` reads every file of
//! one session before it moves to the next, so one render serves the whole directory, and
//! every file of it comes from the same source version.
//!
//! Bytes are bounded by `--cache-mb`. Sizes are not: `ls -l`, `stat` and readdirplus need the
//! exact size of every file, and re-rendering an evicted session just to answer `stat` would
//! make a cold `ls -lR` render everything twice. So each render also leaves a [`Shape`] (names,
//! kinds and sizes only, a few hundred bytes) in the size index, which survives eviction and
//! is replaced only when the source version changes.

use crate::render::{Bundle, Node};
use lru::LruCache;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// A session as the tree names it: agent directory and session directory name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    pub agent: crate::model::Agent,
    pub name: String,
}

/// What kind of entry a path in a bundle is, with its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    Symlink,
}

/// Names, kinds and sizes of one rendered bundle: everything `stat` and `readdir` need.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub entries: BTreeMap<String, (EntryKind, u64)>,
}

impl Shape {
    pub fn of(bundle: &Bundle) -> Shape {
        let entries = bundle
            .entries
            .iter()
            .map(|(path, node)| {
                let v = match node {
                    Node::Dir => (EntryKind::Dir, 0),
                    Node::File(b) => (EntryKind::File, b.len() as u64),
                    Node::Symlink(t) => (EntryKind::Symlink, t.len() as u64),
                };
                (path.clone(), v)
            })
            .collect();
        Shape { entries }
    }

    /// Direct children of `dir` ("" for the session directory itself), in name order.
    pub fn children<'a>(
        &'a self,
        dir: &'a str,
    ) -> impl Iterator<Item = (&'a str, EntryKind, u64)> + 'a {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let plen = prefix.len();
        self.entries
            .range(prefix.clone()..)
            .take_while(move |(p, _)| p.starts_with(&prefix))
            .filter_map(move |(p, (k, s))| {
                let rest = &p[plen..];
                (!rest.is_empty() && !rest.contains('/')).then_some((rest, *k, *s))
            })
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub bytes: usize,
    pub entries: usize,
}

struct Inner {
    lru: LruCache<(SessionKey, u64), Arc<Bundle>>,
    bytes: usize,
    sizes: HashMap<SessionKey, (u64, Arc<Shape>)>,
    stats: Stats,
}

/// Rendered bundles keyed by session and source version (a fingerprint).
pub struct Cache {
    budget: usize,
    inner: Mutex<Inner>,
}

impl Cache {
    pub fn new(budget_bytes: usize) -> Cache {
        Cache {
            budget: budget_bytes,
            inner: Mutex::new(Inner {
                lru: LruCache::unbounded(),
                bytes: 0,
                sizes: HashMap::new(),
                stats: Stats::default(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves only counters half-updated; keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, key: &SessionKey, version: u64) -> Option<Arc<Bundle>> {
        let mut g = self.lock();
        let k = (key.clone(), version);
        match g.lru.get(&k).cloned() {
            Some(b) => {
                g.stats.hits += 1;
                Some(b)
            }
            None => {
                g.stats.misses += 1;
                None
            }
        }
    }

    /// Insert a freshly rendered bundle and record its shape. Older versions of the same
    /// session are dropped; then least recently used bundles go until the budget holds. A
    /// bundle larger than the whole budget is not kept (its readers hold it while open).
    pub fn insert(&self, key: &SessionKey, version: u64, bundle: Arc<Bundle>) -> Arc<Shape> {
        let shape = Arc::new(Shape::of(&bundle));
        let size = bundle.byte_size();
        let mut g = self.lock();
        if let Some((old_version, _)) = g.sizes.get(key).cloned() {
            if old_version != version {
                if let Some(old) = g.lru.pop(&(key.clone(), old_version)) {
                    g.bytes -= old.byte_size();
                }
            }
        }
        g.sizes.insert(key.clone(), (version, shape.clone()));
        if size <= self.budget {
            if let Some(prev) = g.lru.put((key.clone(), version), bundle) {
                g.bytes -= prev.byte_size();
            }
            g.bytes += size;
            while g.bytes > self.budget {
                match g.lru.pop_lru() {
                    Some((_, b)) => {
                        g.bytes -= b.byte_size();
                        g.stats.evictions += 1;
                    }
                    None => break,
                }
            }
        }
        shape
    }

    /// The shape recorded for this exact version, if any (it survives eviction of the bytes).
    pub fn shape(&self, key: &SessionKey, version: u64) -> Option<Arc<Shape>> {
        let g = self.lock();
        g.sizes
            .get(key)
            .filter(|(v, _)| *v == version)
            .map(|(_, s)| s.clone())
    }

    /// Forget a session that disappeared from its store.
    pub fn forget(&self, key: &SessionKey) {
        let mut g = self.lock();
        if let Some((v, _)) = g.sizes.remove(key) {
            if let Some(old) = g.lru.pop(&(key.clone(), v)) {
                g.bytes -= old.byte_size();
            }
        }
    }

    pub fn stats(&self) -> Stats {
        let g = self.lock();
        Stats {
            bytes: g.bytes,
            entries: g.lru.len(),
            ..g.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Agent;

    fn bundle(n: usize) -> Arc<Bundle> {
        let mut b = Bundle::default();
        b.file("meta.json", vec![b'x'; n]);
        b.dir("tools");
        Arc::new(b)
    }

    fn key(name: &str) -> SessionKey {
        SessionKey {
            agent: Agent::Pi,
            name: name.into(),
        }
    }

    #[test]
    fn stays_within_budget_and_keeps_sizes_after_eviction() {
        let c = Cache::new(250);
        for i in 0..10 {
            c.insert(&key(&i.to_string()), 1, bundle(100));
            assert!(c.stats().bytes <= 250);
        }
        assert!(c.get(&key("0"), 1).is_none());
        let shape = c.shape(&key("0"), 1).expect("size survives eviction");
        assert_eq!(shape.entries["meta.json"], (EntryKind::File, 100));
        assert!(c.get(&key("9"), 1).is_some());
    }

    #[test]
    fn new_version_replaces_old() {
        let c = Cache::new(10_000);
        c.insert(&key("a"), 1, bundle(100));
        c.insert(&key("a"), 2, bundle(200));
        assert!(c.get(&key("a"), 1).is_none());
        assert!(c.shape(&key("a"), 1).is_none());
        assert_eq!(c.stats().entries, 1);
    }

    #[test]
    fn children_lists_one_level() {
        let mut b = Bundle::default();
        b.file("meta.json", "{}");
        b.file("tools/0001-bash.md", "x");
        b.file("branches/b1/transcript.md", "y");
        let s = Shape::of(&b);
        let top: Vec<_> = s.children("").map(|(n, _, _)| n).collect();
        assert_eq!(top, ["branches", "meta.json", "tools"]);
        let tools: Vec<_> = s.children("tools").map(|(n, _, _)| n).collect();
        assert_eq!(tools, ["0001-bash.md"]);
    }
}
