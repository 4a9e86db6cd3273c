//! The render cache on disk: each session's rendered files, compressed, kept between mounts.
//!
//! A mount started at login would otherwise parse and render every session again on its
//! first walk, although almost all of them are old and unchanged. So each rendered session
//! is also kept here as one entry (`<dir>/<xx>/<hash of agent and name>.zst`) holding the
//! version it was rendered at, the sources that version was taken from, the build that
//! rendered it, its shape (names, kinds, sizes, link targets) and one zstd frame of all its
//! files. A new mount that finds a session at that same version serves it from here: no
//! parse, no render. A session's files compress together in one frame, so what
//! `messages.jsonl` and `tools/` repeat of the transcript costs little.
//!
//! - **Never stale.** An entry is used only for the exact version the mount has just
//!   computed from the session's sources, the same source paths and the same build (the
//!   version of sessfs and the size and mtime of its executable: a new build may render
//!   differently). A changed session misses, renders, and its entry is replaced.
//! - **Bounded.** The entries' bytes stay within the budget (`--disk-cache-mb`); the least
//!   recently used go first. A hit sets the entry's mtime, so the order outlives the mount.
//! - **Safe.** An entry is written to a temporary file and renamed into place. A read checks
//!   the magic, the build, a checksum of the header, the zstd frame's own checksum and every
//!   file's length; an entry failing any of them is deleted, named in one warning per mount,
//!   and the session rendered again. A directory without this format's marker is emptied of
//!   entries and marked anew, with one warning. Nothing here is ever served unchecked.
//!
//! Writes go through one background thread, so a render never waits for compression. The
//! queue holds at most [`QUEUE_BYTES`] of files (shared with the memory cache, not copied).
//! A session that finds it full is owed: the tree renders it again once the mount is idle
//! and the queue empty, and writes it then ([`DiskCache::next_owed`]), so one walk of a big
//! store leaves all of it on disk, not just what the queue held.

use crate::cache::SessionKey;
use crate::names::Fnv1a;
use crate::render::{Bundle, Node};
use crate::spill::{Body, Sink, SpillTo};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::hash::Hasher;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// First bytes of every entry.
const MAGIC: &[u8; 8] = b"SFRCACH1";
/// The marker file and what it must hold: a directory without it is not this format's.
const MARKER: &str = "FORMAT";
const MARKER_TEXT: &str = "sessfs render cache, format 1\n";
/// Files queued for writing, at most (bytes).
pub const QUEUE_BYTES: usize = 16 << 20;
/// How stale an entry's mtime (its last use) may get before a hit sets it again.
const TOUCH_AFTER: Duration = Duration::from_secs(3600);
/// A header longer than this is damage, not a session.
const MAX_HEADER: u32 = 64 << 20;
/// zstd level 3 with long-distance matching over an 8 MiB window: the files of one session
/// see each other's text (what `messages.jsonl` and `tools/` repeat of the transcript). On
/// rendered sessions of the bench corpus that is 0.13x the rendered bytes, against 0.17x
/// at level 1 without it, and it decompresses faster.
const LEVEL: i32 = 3;
const WINDOW_LOG: u32 = 23;

#[derive(Debug, thiserror::Error)]
pub enum DiskCacheError {
    #[error("cannot use the render cache directory {0}: {1}")]
    Dir(PathBuf, io::Error),
}

/// Counters, for tests, `doctor` and the bench.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Sessions served from disk.
    pub hits: u64,
    /// Sessions looked for and not found at their version.
    pub misses: u64,
    /// Entries written.
    pub writes: u64,
    /// Sessions not written at once because the queue was full (owed, then written when idle).
    pub skipped: u64,
    /// Owed sessions not written yet.
    pub owed: u64,
    /// Entries found damaged (deleted, rendered again).
    pub damaged: u64,
    /// Entries deleted to keep the budget.
    pub evicted: u64,
    /// Entries and their bytes on disk, as this process knows them.
    pub entries: u64,
    pub bytes: u64,
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Header {
    agent: String,
    name: String,
    version: u64,
    sources: Vec<PathBuf>,
    items: Vec<Item>,
}

/// One entry of a bundle: kind 0 a directory, 1 a file of `size` bytes, 2 a symlink.
#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Item {
    path: String,
    kind: u8,
    size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    link: Option<String>,
}

/// A session to write: its header and its files' bytes, in the header's order.
struct Job {
    header: Header,
    bodies: Vec<Body>,
    bytes: usize,
}

enum Msg {
    Write(Job),
    Flush(Sender<()>),
}

/// What the writer and readers share: the entries on disk by file name, with their size
/// and when each was last used.
#[derive(Default)]
struct Index {
    entries: HashMap<PathBuf, (u64, SystemTime)>,
    bytes: u64,
}

pub struct DiskCache {
    dir: PathBuf,
    build: u64,
    budget: u64,
    index: Mutex<Index>,
    tx: Mutex<Sender<Msg>>,
    queued: AtomicUsize,
    /// The most the queue holds ([`QUEUE_BYTES`] unless a test sets less).
    queue_max: AtomicUsize,
    /// Sessions a full queue turned away, oldest first, to be written when idle.
    owed: Mutex<Owed>,
    /// Writes wait until no session was rendered or read back for this many milliseconds
    /// (0: at once); see [`DiskCache::write_when_quiet`].
    quiet_ms: AtomicU64,
    /// When a session was last rendered or read back, in milliseconds since `opened`.
    active_ms: AtomicU64,
    opened: std::time::Instant,
    warned: AtomicBool,
    hits: AtomicU64,
    misses: AtomicU64,
    writes: AtomicU64,
    skipped: AtomicU64,
    damaged: AtomicU64,
    evicted: AtomicU64,
}

/// Sessions owed to the disk, in the order they were turned away.
#[derive(Default)]
struct Owed {
    order: VecDeque<SessionKey>,
    set: HashSet<SessionKey>,
}

/// Why an entry was not served.
enum Miss {
    /// Absent, or for another version, build or set of sources: no warning.
    Absent,
    /// Unreadable or inconsistent: deleted, one warning.
    Damaged(String),
}

impl DiskCache {
    /// Open (creating, mode 0700) the cache at `dir` with a budget of `budget` bytes, and
    /// start its writer thread, which first calls `setup` (a mount puts it at the idle
    /// policy: compression then never takes a core a walk wants, and a session the writer
    /// had no time for is written at its next render). A directory another format wrote is
    /// emptied of its entries.
    pub fn open(dir: &Path, budget: u64, setup: fn()) -> Result<Arc<DiskCache>, DiskCacheError> {
        let err = |e| DiskCacheError::Dir(dir.to_path_buf(), e);
        create_private_dir(dir).map_err(err)?;
        // Also when it was there before: rendered sessions are as private as the stores.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
        let marker = dir.join(MARKER);
        let ours = std::fs::read_to_string(&marker).is_ok_and(|t| t == MARKER_TEXT);
        if !ours {
            let removed = clear_entries(dir);
            if removed > 0 {
                log::warn!(
                    "the render cache at {} was written in another format; rebuilding it \
                     ({removed} entries removed)",
                    dir.display()
                );
            }
            std::fs::write(&marker, MARKER_TEXT).map_err(err)?;
        }
        let (tx, rx) = channel::<Msg>();
        let cache = Arc::new(DiskCache {
            dir: dir.to_path_buf(),
            build: build_id(),
            budget,
            index: Mutex::new(Index::default()),
            tx: Mutex::new(tx),
            queued: AtomicUsize::new(0),
            queue_max: AtomicUsize::new(QUEUE_BYTES),
            owed: Mutex::new(Owed::default()),
            quiet_ms: AtomicU64::new(0),
            active_ms: AtomicU64::new(0),
            opened: std::time::Instant::now(),
            warned: AtomicBool::new(false),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            damaged: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        });
        // The writer holds only a weak reference: the cache goes when its owner drops it.
        let weak = Arc::downgrade(&cache);
        std::thread::Builder::new()
            .name("sessfs-diskcache".into())
            .spawn(move || {
                setup();
                if let Some(c) = weak.upgrade() {
                    c.scan();
                }
                // One compression context for every entry: a new one per session would
                // allocate and clear its tables (the long-distance ones are large) each time.
                let mut cctx = match compressor() {
                    Ok(c) => c,
                    Err(e) => {
                        log::warn!("render cache: no compressor ({e}); nothing is written");
                        return;
                    }
                };
                for msg in rx {
                    let Some(c) = weak.upgrade() else { break };
                    match msg {
                        Msg::Write(job) => {
                            c.wait_for_quiet();
                            c.write(job, &mut cctx)
                        }
                        Msg::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .map_err(err)?;
        Ok(cache)
    }

    /// Compress and write only once the mount has rendered nothing for `quiet`: a walk
    /// that renders faster than the writer compresses (a first walk of a big store) is then
    /// never slowed by it. What the queue cannot hold meanwhile is written at a later render.
    pub fn write_when_quiet(&self, quiet: Duration) {
        self.quiet_ms
            .store(quiet.as_millis() as u64, Ordering::Relaxed);
    }

    /// Hold at most `bytes` of files in the write queue (tests: a small queue owes sessions).
    pub fn set_queue_bytes(&self, bytes: usize) {
        self.queue_max.store(bytes, Ordering::Relaxed);
    }

    /// Whether owed sessions may be rendered now: nothing rendered or read back for the
    /// quiet spell, and the queue at most half full (the writer always has the next one
    /// while the filler prepares another).
    pub fn idle(&self) -> bool {
        let queued = self.queued.load(Ordering::Relaxed);
        self.quiet() && (queued == 0 || queued < self.queue_max.load(Ordering::Relaxed) / 2)
    }

    /// Nothing rendered or read back for the quiet spell.
    pub fn quiet(&self) -> bool {
        let quiet = self.quiet_ms.load(Ordering::Relaxed);
        let idle = self
            .now_ms()
            .saturating_sub(self.active_ms.load(Ordering::Relaxed));
        idle >= quiet
    }

    /// Whether any session is owed.
    pub fn owes(&self) -> bool {
        !self
            .owed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .order
            .is_empty()
    }

    /// The session turned away longest ago, no longer owed once taken (a [`DiskCache::put`]
    /// that finds the queue full owes it again).
    pub fn next_owed(&self) -> Option<SessionKey> {
        let mut o = self.owed.lock().unwrap_or_else(|e| e.into_inner());
        let key = o.order.pop_front()?;
        o.set.remove(&key);
        Some(key)
    }

    fn owe(&self, key: &SessionKey) {
        let mut o = self.owed.lock().unwrap_or_else(|e| e.into_inner());
        if o.set.insert(key.clone()) {
            o.order.push_back(key.clone());
        }
    }

    fn paid(&self, key: &SessionKey) {
        let mut o = self.owed.lock().unwrap_or_else(|e| e.into_inner());
        if o.set.remove(key) {
            o.order.retain(|k| k != key);
        }
    }

    fn now_ms(&self) -> u64 {
        self.opened.elapsed().as_millis() as u64
    }

    /// Note a render or a read-back: writes wait for the next quiet spell.
    fn active(&self) {
        self.active_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    fn wait_for_quiet(&self) {
        loop {
            let quiet = self.quiet_ms.load(Ordering::Relaxed);
            let idle = self
                .now_ms()
                .saturating_sub(self.active_ms.load(Ordering::Relaxed));
            if idle >= quiet {
                return;
            }
            std::thread::sleep(Duration::from_millis((quiet - idle).min(200)));
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn stats(&self) -> DiskStats {
        let ix = self.lock();
        DiskStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            owed: self
                .owed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .order
                .len() as u64,
            damaged: self.damaged.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            entries: ix.entries.len() as u64,
            bytes: ix.bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where `key`'s entry lives.
    fn entry_path(&self, key: &SessionKey) -> PathBuf {
        let mut h = Fnv1a::default();
        h.write(key.agent.name().as_bytes());
        h.write(&[0]);
        h.write(key.name.as_bytes());
        let hash = h.finish();
        self.dir
            .join(format!("{:02x}", hash >> 56))
            .join(format!("{hash:016x}.zst"))
    }

    /// `key`'s files at `version`, rendered from `sources`, if an entry holds exactly that.
    /// Big files go to `spill` as they are read back, as a render's would.
    pub fn get(
        &self,
        key: &SessionKey,
        version: u64,
        sources: &[PathBuf],
        spill: Option<SpillTo>,
    ) -> Option<Bundle> {
        self.active();
        let path = self.entry_path(key);
        match self.read(&path, key, version, sources, spill) {
            Ok((bundle, used)) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                let now = SystemTime::now();
                // The order of use outlives the mount: the next one scans these mtimes. To
                // the hour is close enough, and spares a walk an inode write per session.
                let stale = now.duration_since(used).unwrap_or_default() > TOUCH_AFTER;
                if stale {
                    if let Ok(f) = File::options().append(true).open(&path) {
                        let _ = f.set_modified(now);
                    }
                }
                if let Some(e) = self.lock().entries.get_mut(&path) {
                    e.1 = now;
                }
                Some(bundle)
            }
            Err(Miss::Absent) => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(Miss::Damaged(why)) => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                self.damaged.fetch_add(1, Ordering::Relaxed);
                if !self.warned.swap(true, Ordering::Relaxed) {
                    log::warn!(
                        "render cache entry {} is damaged ({why}); deleted, the session is \
                         rendered again",
                        path.display()
                    );
                }
                self.remove(&path);
                None
            }
        }
    }

    fn read(
        &self,
        path: &Path,
        key: &SessionKey,
        version: u64,
        sources: &[PathBuf],
        spill: Option<SpillTo>,
    ) -> Result<(Bundle, SystemTime), Miss> {
        let mut f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Miss::Absent),
            Err(e) => return Err(Miss::Damaged(e.to_string())),
        };
        let meta = f.metadata().map_err(|e| Miss::Damaged(e.to_string()))?;
        let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if meta.len() > WHOLE_UP_TO {
            let r = BufReader::with_capacity(64 << 10, f);
            return self
                .parse(r, key, version, sources, spill)
                .map(|b| (b, used));
        }
        READ_BUF.with(|cell| {
            let mut buf = cell.borrow_mut();
            buf.clear();
            f.read_to_end(&mut buf)
                .map_err(|e| Miss::Damaged(e.to_string()))?;
            self.parse(&buf[..], key, version, sources, spill)
                .map(|b| (b, used))
        })
    }

    /// One entry's bytes from `r`: its header checked against what the caller looks for,
    /// then its files.
    fn parse(
        &self,
        mut r: impl io::BufRead,
        key: &SessionKey,
        version: u64,
        sources: &[PathBuf],
        spill: Option<SpillTo>,
    ) -> Result<Bundle, Miss> {
        let damaged = |what: &str| Miss::Damaged(what.to_string());
        let mut head = [0u8; 20];
        r.read_exact(&mut head)
            .map_err(|_| damaged("short header"))?;
        if &head[..8] != MAGIC {
            return Err(damaged("not an entry"));
        }
        if u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")) != self.build {
            return Err(Miss::Absent); // another build's: replaced at the next write
        }
        let hlen = u32::from_le_bytes(head[16..20].try_into().expect("4 bytes"));
        if hlen > MAX_HEADER {
            return Err(damaged("header length"));
        }
        let mut hbytes = vec![0u8; hlen as usize];
        r.read_exact(&mut hbytes)
            .map_err(|_| damaged("short header"))?;
        let mut sum = [0u8; 8];
        r.read_exact(&mut sum)
            .map_err(|_| damaged("short header"))?;
        if u64::from_le_bytes(sum) != checksum(self.build, &hbytes) {
            return Err(damaged("header checksum"));
        }
        let header: Header =
            serde_json::from_slice(&hbytes).map_err(|e| Miss::Damaged(e.to_string()))?;
        if header.agent != key.agent.name()
            || header.name != *key.name
            || header.version != version
            || header.sources != sources
        {
            return Err(Miss::Absent);
        }
        DECOMPRESSOR.with(|cell| {
            let mut cell = cell.borrow_mut();
            let dctx = match &mut *cell {
                Some(d) => d,
                empty => empty.insert(decompressor().map_err(|e| Miss::Damaged(e.to_string()))?),
            };
            let dec = zstd::stream::read::Decoder::with_context(r, dctx);
            Self::files(dec, header.items, spill)
        })
    }

    /// The files of one entry, in header order, from its zstd frame, then the frame's end
    /// (its checksum checked, nothing after it).
    fn files<R: io::BufRead>(
        mut dec: zstd::stream::read::Decoder<'_, R>,
        items: Vec<Item>,
        mut spill: Option<SpillTo>,
    ) -> Result<Bundle, Miss> {
        let damaged = |what: &str| Miss::Damaged(what.to_string());
        let mut bundle = Bundle::default();
        for item in items {
            let node = match item.kind {
                0 => Node::Dir,
                2 => Node::Symlink(item.link.ok_or_else(|| damaged("link target"))?),
                1 => {
                    let mut sink = Sink::with_capacity(spill.as_mut(), item.size as usize);
                    let n = sink
                        .fill_from(&mut dec, item.size)
                        .map_err(|e| Miss::Damaged(e.to_string()))?;
                    if n != item.size {
                        return Err(damaged("a file is short"));
                    }
                    Node::File(sink.finish().map_err(|e| Miss::Damaged(e.to_string()))?)
                }
                _ => return Err(damaged("entry kind")),
            };
            bundle.entries.insert(item.path, node);
        }
        // The end of the frame: this read checks its checksum, and nothing may follow.
        let mut rest = [0u8; 1];
        match dec.read(&mut rest) {
            Ok(0) => Ok(bundle),
            Ok(_) => Err(damaged("bytes after the last file")),
            Err(e) => Err(Miss::Damaged(e.to_string())),
        }
    }

    /// Queue `entries`, `key`'s files at `version` rendered from `sources`, for writing.
    /// Returns false when the queue is full: the session is then owed
    /// ([`DiskCache::next_owed`]). A render for a reader also marks the mount busy, so the
    /// writer waits; `for_reader` false is the idle filler's own render.
    pub fn put(
        &self,
        key: &SessionKey,
        version: u64,
        sources: &[PathBuf],
        entries: &std::collections::BTreeMap<String, Node>,
        for_reader: bool,
    ) -> bool {
        if for_reader {
            self.active();
        }
        let mut items = Vec::with_capacity(entries.len());
        let mut bodies = Vec::new();
        let mut bytes = 0;
        for (path, node) in entries {
            let (kind, size, link) = match node {
                Node::Dir => (0, 0, None),
                Node::File(b) => {
                    bytes += b.len();
                    bodies.push(b.clone());
                    (1, b.len() as u64, None)
                }
                Node::Symlink(t) => (2, t.len() as u64, Some(t.clone())),
            };
            items.push(Item {
                path: path.clone(),
                kind,
                size,
                link,
            });
        }
        let queued = self.queued.fetch_add(bytes, Ordering::Relaxed);
        if queued + bytes > self.queue_max.load(Ordering::Relaxed) && queued > 0 {
            self.queued.fetch_sub(bytes, Ordering::Relaxed);
            self.skipped.fetch_add(1, Ordering::Relaxed);
            self.owe(key);
            return false;
        }
        self.paid(key);
        let header = Header {
            agent: key.agent.name().to_string(),
            name: key.name.to_string(),
            version,
            sources: sources.to_vec(),
            items,
        };
        let job = Job {
            header,
            bodies,
            bytes,
        };
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        if tx.send(Msg::Write(job)).is_err() {
            self.queued.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Wait until every queued write is on disk (at unmount, and for tests).
    pub fn flush(&self) {
        let (done, wait) = channel();
        let sent = {
            let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
            tx.send(Msg::Flush(done)).is_ok()
        };
        if sent {
            let _ = wait.recv_timeout(Duration::from_secs(60));
        }
    }

    /// Learn the entries already on disk (their sizes and last uses), and clear temporary
    /// files an interrupted write left.
    fn scan(&self) {
        let mut found = Vec::new();
        for sub in read_dir(&self.dir) {
            if !is_shard(&sub) {
                continue;
            }
            for p in read_dir(&sub) {
                let Ok(md) = std::fs::symlink_metadata(&p) else {
                    continue;
                };
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name.starts_with(".tmp.") {
                    let old = md
                        .modified()
                        .ok()
                        .and_then(|m| m.elapsed().ok())
                        .is_some_and(|age| age > Duration::from_secs(3600));
                    if old {
                        let _ = std::fs::remove_file(&p);
                    }
                } else if name.ends_with(".zst") && md.is_file() {
                    found.push((p, md.len(), md.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
                }
            }
        }
        {
            let mut ix = self.lock();
            for (p, len, used) in found {
                // An entry written by this process meanwhile is already known.
                if !ix.entries.contains_key(&p) {
                    ix.bytes += len;
                    ix.entries.insert(p, (len, used));
                }
            }
        }
        self.evict(None);
    }

    /// Compress and write one session, then keep the budget.
    fn write(&self, job: Job, cctx: &mut zstd::zstd_safe::CCtx<'static>) {
        let path = self.entry_path(&SessionKey {
            agent: match crate::model::Agent::from_name(&job.header.agent) {
                Some(a) => a,
                None => {
                    self.queued.fetch_sub(job.bytes, Ordering::Relaxed);
                    return;
                }
            },
            name: job.header.name.as_str().into(),
        });
        let written = self.write_entry(&path, &job, cctx);
        self.queued.fetch_sub(job.bytes, Ordering::Relaxed);
        match written {
            Ok(len) => {
                self.writes.fetch_add(1, Ordering::Relaxed);
                {
                    let mut ix = self.lock();
                    if let Some((old, _)) =
                        ix.entries.insert(path.clone(), (len, SystemTime::now()))
                    {
                        ix.bytes -= old;
                    }
                    ix.bytes += len;
                }
                self.evict(Some(&path));
            }
            Err(e) => log::debug!("render cache: {} not written: {e}", path.display()),
        }
    }

    fn write_entry(
        &self,
        path: &Path,
        job: &Job,
        cctx: &mut zstd::zstd_safe::CCtx<'static>,
    ) -> io::Result<u64> {
        let dir = path.parent().expect("entries live in a shard");
        create_private_dir(dir)?;
        let hbytes = serde_json::to_vec(&job.header)?;
        let hlen = u32::try_from(hbytes.len())
            .ok()
            .filter(|&n| n <= MAX_HEADER)
            .ok_or_else(|| io::Error::other("header too long"))?;
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            ".tmp.{}.{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let f = File::create(&tmp)?;
            let mut w = io::BufWriter::with_capacity(256 << 10, f);
            w.write_all(MAGIC)?;
            w.write_all(&self.build.to_le_bytes())?;
            w.write_all(&hlen.to_le_bytes())?;
            w.write_all(&hbytes)?;
            w.write_all(&checksum(self.build, &hbytes).to_le_bytes())?;
            // A frame cut short by an error leaves the context mid-frame: start afresh.
            cctx.reset(zstd::zstd_safe::ResetDirective::SessionOnly)
                .map_err(zstd_error)?;
            let mut enc = zstd::stream::write::Encoder::with_context(w, cctx);
            let total: usize = job.bodies.iter().map(Body::len).sum();
            enc.set_pledged_src_size(Some(total as u64))?;
            for b in &job.bodies {
                b.write_to(&mut enc)?;
            }
            let w = enc.finish()?;
            let f = w.into_inner().map_err(|e| e.into_error())?;
            let len = f.metadata()?.len();
            std::fs::rename(&tmp, path)?;
            Ok(len)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Delete least recently used entries until the budget holds, never `keep`.
    fn evict(&self, keep: Option<&Path>) {
        let victims = {
            let mut ix = self.lock();
            if ix.bytes <= self.budget {
                return;
            }
            let mut by_age: Vec<(SystemTime, PathBuf, u64)> = ix
                .entries
                .iter()
                .filter(|(p, _)| Some(p.as_path()) != keep)
                .map(|(p, (len, used))| (*used, p.clone(), *len))
                .collect();
            by_age.sort();
            let mut victims = Vec::new();
            for (_, p, len) in by_age {
                if ix.bytes <= self.budget {
                    break;
                }
                ix.entries.remove(&p);
                ix.bytes -= len;
                victims.push(p);
            }
            victims
        };
        for p in victims {
            let _ = std::fs::remove_file(&p);
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn remove(&self, path: &Path) {
        let _ = std::fs::remove_file(path);
        let mut ix = self.lock();
        if let Some((len, _)) = ix.entries.remove(path) {
            ix.bytes -= len;
        }
    }
}

/// Entries up to this size are read whole, in one `read`, into their thread's
/// [`READ_BUF`]; larger ones (a session of many megabytes) are streamed through a buffer of
/// 64 KiB.
const WHOLE_UP_TO: u64 = 1 << 20;

thread_local! {
    /// Each reading thread's buffer for a whole entry, kept from one entry to the next: a
    /// buffer made per entry was a mapping of its own (see [`crate::alloc`]), with its page
    /// faults and its unmapping, for every session a warm-from-disk walk reads.
    static READ_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };

    /// Each reading thread's decompression context, made once: making one per entry was
    /// 2.4 % of a warm-from-disk walk's mount CPU. A context is reset before each frame.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// A reader's decompression context: frames of at most [`WINDOW_LOG`].
fn decompressor() -> io::Result<zstd::zstd_safe::DCtx<'static>> {
    let mut d = zstd::zstd_safe::DCtx::create();
    d.set_parameter(zstd::zstd_safe::DParameter::WindowLogMax(WINDOW_LOG))
        .map_err(zstd_error)?;
    Ok(d)
}

/// The writer's compression context: [`LEVEL`], long-distance matching over [`WINDOW_LOG`],
/// a checksum in every frame.
fn compressor() -> io::Result<zstd::zstd_safe::CCtx<'static>> {
    use zstd::zstd_safe::CParameter;
    let mut c = zstd::zstd_safe::CCtx::create();
    for p in [
        CParameter::CompressionLevel(LEVEL),
        CParameter::WindowLog(WINDOW_LOG),
        CParameter::EnableLongDistanceMatching(true),
        CParameter::ChecksumFlag(true),
    ] {
        c.set_parameter(p).map_err(zstd_error)?;
    }
    Ok(c)
}

fn zstd_error(code: usize) -> io::Error {
    io::Error::other(zstd::zstd_safe::get_error_name(code))
}

/// What identifies the build that renders: a different one may render differently.
fn build_id() -> u64 {
    let mut h = Fnv1a::default();
    h.write(env!("CARGO_PKG_VERSION").as_bytes());
    if let Some(md) = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
    {
        h.write(&md.len().to_le_bytes());
        let mtime = md
            .modified()
            .ok()
            .and_then(|m| m.duration_since(SystemTime::UNIX_EPOCH).ok())
            .unwrap_or_default();
        h.write(&mtime.as_nanos().to_le_bytes());
    }
    h.finish()
}

fn checksum(build: u64, header: &[u8]) -> u64 {
    let mut h = Fnv1a::default();
    h.write(&build.to_le_bytes());
    h.write(header);
    h.finish()
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn read_dir(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// A shard directory: two hex digits, as [`DiskCache::entry_path`] names them.
fn is_shard(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.len() == 2 && n.bytes().all(|b| b.is_ascii_hexdigit()))
        && p.is_dir()
}

/// Remove every entry and temporary file under `dir`'s shards (nothing else there is
/// touched); returns how many went.
fn clear_entries(dir: &Path) -> usize {
    let mut n = 0;
    for sub in read_dir(dir).into_iter().filter(|p| is_shard(p)) {
        for p in read_dir(&sub) {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if (name.ends_with(".zst") || name.starts_with(".tmp."))
                && std::fs::remove_file(&p).is_ok()
            {
                n += 1;
            }
        }
        let _ = std::fs::remove_dir(&sub);
    }
    n
}

#[cfg(test)]
mod tests;
