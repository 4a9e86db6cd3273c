//! The byte-bounded LRU of rendered files and the small size index beside it.
//!
//! A session directory is rendered as a whole: a `grep -r` reads every file of one session
//! before it moves to the next, so one render serves the whole directory, and every file of
//! it comes from the same source version. The rendered files are then cached one by one, so
//! a session bigger than the whole budget still keeps the file being read (and the ones a
//! walk reads next) instead of being re-rendered for every `read`.
//!
//! Bytes are bounded by `--cache-mb`. Sizes are not: `ls -l`, `stat` and readdirplus need the
//! exact size of every file, and re-rendering an evicted session just to answer `stat` would
//! make a cold `ls -lR` render everything twice. So each render also leaves a [`Shape`] (names,
//! kinds, sizes and symlink targets, a few hundred bytes) in the size index, which survives
//! eviction and is replaced only when the source version changes.

use crate::render::{Bundle, Node};
use lru::LruCache;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// The bytes of one rendered file, shared by the cache and its readers.
pub type Bytes = crate::spill::Body;

/// A session as the tree names it: agent directory and session directory name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    pub agent: crate::model::Agent,
    /// Shared, not copied: every inode and cached file of a session holds its key.
    pub name: Arc<str>,
}

/// What kind of entry a path in a bundle is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    Symlink,
}

/// Names, kinds, sizes and link targets of one rendered bundle: all `stat`, `readdir` and
/// `readlink` need.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub entries: BTreeMap<String, (EntryKind, u64)>,
    pub links: BTreeMap<String, String>,
}

impl Shape {
    pub fn of(bundle: &Bundle) -> Shape {
        let mut shape = Shape::default();
        for (path, node) in &bundle.entries {
            let v = match node {
                Node::Dir => (EntryKind::Dir, 0),
                Node::File(b) => (EntryKind::File, b.len() as u64),
                Node::Symlink(t) => {
                    shape.links.insert(path.clone(), t.clone());
                    (EntryKind::Symlink, t.len() as u64)
                }
            };
            shape.entries.insert(path.clone(), v);
        }
        shape
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

    /// The paths that are files, in path order.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter(|(_, (k, _))| *k == EntryKind::File)
            .map(|(p, _)| p.as_str())
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub bytes: usize,
    /// Bytes of spilled files kept on disk.
    pub disk: usize,
    pub entries: usize,
}

type FileKey = (SessionKey, u64, String);

struct Inner {
    lru: LruCache<FileKey, Bytes>,
    bytes: usize,
    /// Bytes of spilled files the cache keeps alive on disk.
    disk: usize,
    /// One file larger than the whole budget: the one most recently rendered for a
    /// reader. Without FUSE open handles, every `read` of such a file would otherwise
    /// render the session again. Memory is then the budget plus this one file.
    oversize: Option<(FileKey, Bytes)>,
    sizes: HashMap<SessionKey, (u64, Arc<Shape>)>,
    stats: Stats,
}

impl Inner {
    /// A cached file, the oversize one included, counted as a hit or a miss.
    fn get(&mut self, k: &FileKey) -> Option<Bytes> {
        let big = self
            .oversize
            .as_ref()
            .filter(|(o, _)| o == k)
            .map(|(_, b)| b.clone());
        let got = big.or_else(|| self.lru.get(k).cloned());
        match got {
            Some(_) => self.stats.hits += 1,
            None => self.stats.misses += 1,
        }
        got
    }

    fn pop(&mut self, k: &FileKey) {
        if let Some(b) = self.lru.pop(k) {
            self.bytes -= cost(k, &b);
            self.disk -= on_disk(&b);
        }
    }
}

/// Memory a cached file costs: its bytes (none when spilled), its key's strings, and about
/// 200 bytes of bookkeeping (the LRU node, the shared buffer's header, allocator rounding),
/// which for a walk over many small tool files is a tenth of what is held.
fn cost(k: &FileKey, b: &Bytes) -> usize {
    b.memory() + k.0.name.len() + k.2.len() + 200
}

/// Bytes a cached file keeps in a spill file on disk.
fn on_disk(b: &Bytes) -> usize {
    b.on_disk()
}

/// Spilled files may take this many times the memory budget on disk.
const DISK_PER_MEMORY: usize = 4;

/// Rendered files keyed by session, source version (a fingerprint) and path.
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
                disk: 0,
                oversize: None,
                sizes: HashMap::new(),
                stats: Stats::default(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves only counters half-updated; keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn file(&self, key: &SessionKey, version: u64, path: &str) -> Option<Bytes> {
        self.lock().get(&(key.clone(), version, path.to_string()))
    }

    /// [`Cache::file`] for several files of one session, under one lock.
    pub fn files<'a>(
        &self,
        key: &SessionKey,
        version: u64,
        paths: impl Iterator<Item = &'a str>,
    ) -> Vec<Option<Bytes>> {
        let mut g = self.lock();
        let mut k = (key.clone(), version, String::new());
        paths
            .map(|path| {
                k.2.clear();
                k.2.push_str(path);
                g.get(&k)
            })
            .collect()
    }

    /// Is this file of this version cached? (Does not count as a use.)
    pub fn contains(&self, key: &SessionKey, version: u64, path: &str) -> bool {
        let g = self.lock();
        let k = (key.clone(), version, path.to_string());
        g.lru.contains(&k) || g.oversize.as_ref().is_some_and(|(o, _)| *o == k)
    }

    /// Insert a freshly rendered bundle and record its shape. Files of older versions of
    /// the same session are dropped. Files are inserted so that the ones a directory walk
    /// reads next stay longest: `prefer` (the file a reader asked for) and the paths after
    /// it are the most recently used. Least recently used files go until the budget holds;
    /// a file larger than the whole budget is not kept (its reader has its bytes).
    pub fn insert(
        &self,
        key: &SessionKey,
        version: u64,
        bundle: Bundle,
        prefer: Option<&str>,
    ) -> Arc<Shape> {
        let shape = Arc::new(Shape::of(&bundle));
        let mut files: Vec<(String, Bytes)> = bundle
            .entries
            .into_iter()
            .filter_map(|(p, n)| match n {
                Node::File(b) => Some((p, b)),
                _ => None,
            })
            .collect();
        // Walk order is path order; insert the already-walked part first, then the rest
        // from the far end back to `prefer`, so `prefer` ends up most recent.
        let split = prefer.map_or(0, |p| files.partition_point(|(q, _)| q.as_str() < p));
        let mut ordered = files.split_off(split);
        ordered.reverse();
        files.extend(ordered);

        let mut g = self.lock();
        if let Some((old_version, old_shape)) = g.sizes.get(key).cloned() {
            if old_version != version {
                for p in old_shape.files() {
                    g.pop(&(key.clone(), old_version, p.to_string()));
                }
                if g.oversize.as_ref().is_some_and(|((k, _, _), _)| k == key) {
                    g.oversize = None;
                }
            }
        }
        g.sizes.insert(key.clone(), (version, shape.clone()));
        for (path, bytes) in files {
            let k = (key.clone(), version, path);
            let c = cost(&k, &bytes);
            if c > self.budget {
                // The last one inserted is `prefer` when that is oversize.
                g.oversize = Some((k, bytes));
                continue;
            }
            g.pop(&k);
            g.bytes += c;
            g.disk += on_disk(&bytes);
            g.lru.put(k, bytes);
        }
        // Evicted files are freed after the lock is let go: giving a big one's memory back
        // to the system takes a while, and every reader of the cache would wait for it.
        let mut evicted = Vec::new();
        while g.bytes > self.budget || g.disk > self.budget * DISK_PER_MEMORY {
            match g.lru.pop_lru() {
                Some((k, b)) => {
                    g.bytes -= cost(&k, &b);
                    g.disk -= on_disk(&b);
                    g.stats.evictions += 1;
                    evicted.push(b);
                }
                None => break,
            }
        }
        drop(g);
        for b in evicted {
            // A file no reader holds any more lends its buffer to the next render.
            if let crate::spill::Body::Mem(v) = b {
                if let Ok(v) = Arc::try_unwrap(v) {
                    crate::buf::recycle::give(v);
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

    /// The shape recorded last for this session, whatever its version: which of its paths
    /// are files, directories and links.
    pub fn recorded_shape(&self, key: &SessionKey) -> Option<Arc<Shape>> {
        self.lock().sizes.get(key).map(|(_, s)| s.clone())
    }

    /// Forget a session that disappeared from its store.
    pub fn forget(&self, key: &SessionKey) {
        let mut g = self.lock();
        if let Some((v, shape)) = g.sizes.remove(key) {
            for p in shape.files() {
                g.pop(&(key.clone(), v, p.to_string()));
            }
        }
        if g.oversize.as_ref().is_some_and(|((k, _, _), _)| k == key) {
            g.oversize = None;
        }
    }

    pub fn stats(&self) -> Stats {
        let g = self.lock();
        Stats {
            bytes: g.bytes,
            disk: g.disk,
            entries: g.lru.len(),
            ..g.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Agent;

    fn bundle(n: usize) -> Bundle {
        let mut b = Bundle::default();
        b.file("meta.json", vec![b'x'; n]);
        b.dir("tools");
        b
    }

    fn key(name: &str) -> SessionKey {
        SessionKey {
            agent: Agent::Pi,
            name: name.into(),
        }
    }

    #[test]
    fn stays_within_budget_and_keeps_sizes_after_eviction() {
        let c = Cache::new(450);
        for i in 0..10 {
            c.insert(&key(&i.to_string()), 1, bundle(100), None);
            assert!(c.stats().bytes <= 450);
        }
        assert!(c.file(&key("0"), 1, "meta.json").is_none());
        let shape = c.shape(&key("0"), 1).expect("size survives eviction");
        assert_eq!(shape.entries["meta.json"], (EntryKind::File, 100));
        assert!(c.file(&key("9"), 1, "meta.json").is_some());
    }

    #[test]
    fn new_version_replaces_old() {
        let c = Cache::new(10_000);
        c.insert(&key("a"), 1, bundle(100), None);
        c.insert(&key("a"), 2, bundle(200), None);
        assert!(c.file(&key("a"), 1, "meta.json").is_none());
        assert!(c.shape(&key("a"), 1).is_none());
        assert_eq!(c.stats().entries, 1);
    }

    #[test]
    fn a_session_bigger_than_the_budget_keeps_the_file_being_read() {
        let mut b = Bundle::default();
        for i in 0..10 {
            b.file(format!("tools/{i:04}.md"), vec![b'x'; 1000]);
        }
        let c = Cache::new(3900);
        c.insert(&key("big"), 1, b, Some("tools/0004.md"));
        for i in 4..7 {
            assert!(
                c.contains(&key("big"), 1, &format!("tools/{i:04}.md")),
                "{i}"
            );
        }
        assert!(!c.contains(&key("big"), 1, "tools/0003.md"));
        assert!(c.stats().bytes <= 3900);
    }

    #[test]
    fn one_file_bigger_than_the_budget_stays_while_it_is_read() {
        let mut b = Bundle::default();
        b.file("messages.jsonl", vec![b'x'; 5000]);
        b.file("meta.json", vec![b'x'; 100]);
        let c = Cache::new(1000);
        c.insert(&key("big"), 1, b, Some("messages.jsonl"));
        assert!(c.file(&key("big"), 1, "messages.jsonl").is_some());
        assert!(c.file(&key("big"), 1, "meta.json").is_some());
        assert!(c.stats().bytes <= 1000);
        c.forget(&key("big"));
        assert!(c.file(&key("big"), 1, "messages.jsonl").is_none());
    }

    #[test]
    fn children_lists_one_level() {
        let mut b = Bundle::default();
        b.file("meta.json", "{}");
        b.file("tools/0001-bash.md", "x");
        b.file("branches/b1/transcript.md", "y");
        b.symlink("subagents/x", "../../../pi/x");
        let s = Shape::of(&b);
        let top: Vec<_> = s.children("").map(|(n, _, _)| n).collect();
        assert_eq!(top, ["branches", "meta.json", "subagents", "tools"]);
        let tools: Vec<_> = s.children("tools").map(|(n, _, _)| n).collect();
        assert_eq!(tools, ["0001-bash.md"]);
        assert_eq!(s.links["subagents/x"], "../../../pi/x");
    }
}
