//! The virtual tree: names, inodes, attributes and reads, with no FUSE types.
//!
//! [`Fs`] is the whole filesystem as plain method calls (`lookup`, `getattr`, `readdir`,
//! `readlink`, `read_ino`), so tests drive it without mounting and `fuse/` stays a thin
//! adapter.
//!
//! Layout: `/<agent>/<session>/…` where everything under a session directory comes from one
//! rendered [`Bundle`], plus the virtual `diff/` directory that lists nothing and renders
//! `diff/<agent>/<session>.diff` on lookup, and, when a [`Searcher`] is set (the mount sets
//! one), the root's `search/` directory: it lists nothing either, and looking up
//! `search/<query>/` gives one symlink per matching session (see `SearchNodes`).
//!
//! Freshness: a session's *version* is a fingerprint of `(path, size, mtime)` of its native
//! sources, or, for stores that keep many sessions in one file (SQLite), the store's own
//! version of the session ([`Store::versions`]: a hash of that session's rows), so a write to
//! one session does not re-render the others. A request re-checks it (a few `stat` calls,
//! or one small query) when the last check is older than [`TTL`], and an agent directory
//! re-lists its store when the listing is; but where the change watcher's watches reach
//! every root of a store, its listing and checks stand until an event (or the slow safety
//! poll) says they may have moved ([`Fs::session_fresh`], [`Fs::changes_for`]).
//! [`Fs::poll_changes`] re-checks every session the kernel has seen and says which inodes
//! and names the kernel must forget, so the kernel can trust what it caches for
//! [`KERNEL_TTL`]; the mount runs it every [`POLL`] where it cannot watch, and as the
//! safety net where it can.
//!
//! Inodes are allocated from `(parent inode, name)` and never reused while mounted, so an
//! inode number names the same path for the life of the mount.

use crate::cache::{Bytes, Cache, EntryKind, SessionKey, Shape};
use crate::model::{Agent, Cost, Session};
use crate::names;
use crate::render::{self, Bundle, Node};
use crate::spill::SpillTo;
use crate::stores::{Listed, Store};
use crate::watch::watched_dir;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant, SystemTime};

/// How long a checked version or a listing is trusted without looking again.
pub const TTL: Duration = Duration::from_secs(1);

/// How long the kernel may trust attributes and names: a day. Every change is pushed to it
/// (inotify, or [`Fs::poll_changes`] every [`POLL`] where the stores cannot be watched, and
/// the slow safety net), and every push is sent again later, the last time at the next
/// safety look, so nothing waits for this to run out. A short one cost every walk after
/// it one request per file and directory: a `grep -r` of 10,000 sessions a minute after the
/// last took 4.8 s against 1.0 s.
pub const KERNEL_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How often one directory's files may be pushed beside a READ ([`Fs::beside_due`]).
pub const BESIDE_GAP: Duration = Duration::from_secs(1);

/// How often the change watcher looks at the sessions the kernel knows.
pub const POLL: Duration = Duration::from_millis(500);

/// What the kernel must forget after a change.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Invalidations {
    /// Attributes and cached pages (or listings) of these inodes.
    pub inodes: Vec<u64>,
    /// These names in these directories: new sessions.
    pub entries: Vec<(u64, String)>,
    /// These names in these directories: removed sessions. A listing under way may still
    /// hand the kernel such a name after it was told to forget it, so the mount sends these
    /// again later, as it does inodes.
    pub gone: Vec<(u64, String)>,
}

pub const ROOT_INO: u64 = 1;

/// Name of the per-session directory that renders cross-session diffs on lookup.
pub const DIFF_DIR: &str = "diff";

/// Name of the root directory whose lookups run a search.
pub const SEARCH_DIR: &str = "search";

/// First inode of the `search/<query>/` nodes, far above any inode [`Fs::ino_for`] hands out.
const SEARCH_INO_BASE: u64 = 1 << 48;

/// First inode of the `diff/<agent>/<other>.diff` files, below the search nodes.
const DIFF_INO_BASE: u64 = 1 << 47;

/// Diff files whose inodes are kept; the least recently looked up is forgotten. Any pair of
/// sessions has one, so keeping them all would grow with every lookup.
pub const DIFF_FILES: usize = 256;

/// Queries whose directories (and links) are kept; the least recently used is forgotten.
pub const SEARCH_QUERIES: usize = 64;

/// How long a query's results (and, in the kernel, a `search/` node) are trusted: short, so
/// a new message shows in `search/<query>/` within a second (a re-search is a listing, a
/// `stat` per session and one indexed query).
pub const SEARCH_TTL: Duration = Duration::from_millis(250);

/// Sessions listed in one `search/<query>/` directory at most, best first.
pub const SEARCH_RESULTS: usize = 1000;

/// Finds the sessions that match a query, for `search/<query>/` (see `crate::search`).
pub trait Searcher: Send + Sync {
    /// Matching sessions, best first, at most `limit`.
    fn sessions(
        &self,
        fs: &Fs,
        query: &str,
        limit: usize,
    ) -> std::result::Result<Vec<SessionKey>, String>;
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FsError {
    #[error("no such file or directory")]
    NotFound,
    #[error("not a directory")]
    NotDir,
    #[error("is a directory")]
    IsDir,
    #[error("not a symlink")]
    NotSymlink,
    #[error("read-only filesystem")]
    ReadOnly,
    #[error("internal error: {0}")]
    Internal(String),
    /// A rendered file kept on disk could not be read back.
    #[error("cannot read a spilled file: {0}")]
    Spill(String),
}

pub type Result<T> = std::result::Result<T, FsError>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
}

impl From<EntryKind> for Kind {
    fn from(k: EntryKind) -> Kind {
        match k {
            EntryKind::Dir => Kind::Dir,
            EntryKind::File => Kind::File,
            EntryKind::Symlink => Kind::Symlink,
        }
    }
}

/// The attributes of one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    pub size: u64,
    pub mtime: SystemTime,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum NodeKind {
    Root,
    Agent(Agent),
    Session(SessionKey),
    /// A path inside a session's bundle.
    Inner(SessionKey, String),
    /// `<session>/diff/`.
    DiffRoot(SessionKey),
    /// `<session>/diff/<agent>/`.
    DiffAgent(SessionKey, Agent),
    /// `<session>/diff/<agent>/<other>.diff`.
    DiffFile(SessionKey, SessionKey),
    /// `search/`.
    SearchRoot,
    /// `search/<query>/` (kept in [`SearchNodes`], not in the permanent node table).
    SearchQuery(String),
    /// `search/<query>/<agent>:<session>`, a symlink to `../../<agent>/<session>`.
    SearchLink(SessionKey),
}

impl State {
    /// The inode of `parent/name`, made if new.
    fn ino(&mut self, parent: u64, name: &str, kind: NodeKind) -> u64 {
        let names = self.by_name.entry(parent).or_default();
        if let Some(&ino) = names.get(name) {
            return ino;
        }
        let ino = self.nodes.len() as u64 + 1;
        names.insert(name.into(), ino);
        for key in kind.sessions() {
            self.session_inos.entry(key.clone()).or_default().push(ino);
        }
        if let NodeKind::Agent(agent) = kind {
            self.agent_inos.insert(agent, ino);
        }
        self.nodes.push(kind);
        ino
    }

    /// The inodes of `names` in `parent`, a session's directory `dir` ("" for the session
    /// directory itself, where `diff/` is one of them), made where new. As [`State::ino`]
    /// for each, but each name is hashed once and the session's inode list is looked up
    /// once for the whole directory: a walk makes a `tools/` of dozens of files per session.
    fn session_dir_inos<'n>(
        &mut self,
        parent: u64,
        key: &SessionKey,
        dir: &str,
        names: impl Iterator<Item = &'n str>,
    ) -> Vec<u64> {
        let mut made = Vec::new();
        let known = self.by_name.entry(parent).or_default();
        let inos = names
            .map(|name| match known.get(name) {
                Some(&ino) => ino,
                None => {
                    let ino = self.nodes.len() as u64 + 1;
                    self.nodes.push(if dir.is_empty() && name == DIFF_DIR {
                        NodeKind::DiffRoot(key.clone())
                    } else {
                        NodeKind::Inner(key.clone(), join(dir, name))
                    });
                    known.insert(name.into(), ino);
                    made.push(ino);
                    ino
                }
            })
            .collect();
        if !made.is_empty() {
            self.session_inos
                .entry(key.clone())
                .or_default()
                .extend(made);
        }
        inos
    }

    /// The inode of a diff file, made if new; also the diff files forgotten to make room
    /// (the least recently looked up), whose rendered bytes the caller drops.
    fn diff_ino(&mut self, parent: u64, name: &str, kind: NodeKind) -> (u64, Vec<NodeKind>) {
        let key = (parent, name.to_string());
        if let Some(&ino) = self.diffs.by_name.get(&key) {
            self.diffs.order.retain(|&i| i != ino);
            self.diffs.order.push_back(ino);
            return (ino, Vec::new());
        }
        let mut forgotten = Vec::new();
        while self.diffs.order.len() >= DIFF_FILES {
            let Some(old) = self.diffs.order.pop_front() else {
                break;
            };
            self.diffs.by_name.retain(|_, &mut i| i != old);
            let Some(node) = self.diffs.nodes.remove(&old) else {
                continue;
            };
            for k in node.sessions() {
                if let Some(inos) = self.session_inos.get_mut(k) {
                    inos.retain(|&i| i != old);
                }
            }
            forgotten.push(node);
        }
        let ino = DIFF_INO_BASE + self.diffs.next;
        self.diffs.next += 1;
        for k in kind.sessions() {
            self.session_inos.entry(k.clone()).or_default().push(ino);
        }
        self.diffs.nodes.insert(ino, kind);
        self.diffs.by_name.insert(key, ino);
        self.diffs.order.push_back(ino);
        (ino, forgotten)
    }
}

impl NodeKind {
    /// The sessions whose content this node shows.
    fn sessions(&self) -> Vec<&SessionKey> {
        match self {
            NodeKind::Root
            | NodeKind::Agent(_)
            | NodeKind::SearchRoot
            | NodeKind::SearchQuery(_)
            | NodeKind::SearchLink(_) => Vec::new(),
            NodeKind::Session(k)
            | NodeKind::Inner(k, _)
            | NodeKind::DiffRoot(k)
            | NodeKind::DiffAgent(k, _) => vec![k],
            NodeKind::DiffFile(a, b) => vec![a, b],
        }
    }
}

struct SessionSlot {
    listed: Listed,
    /// Every one of `listed.sources` lies under a root of the store (or is a database
    /// root's journal), so the watches on the roots see its changes: worked out when the
    /// listing is taken, not at every check (10,000 of them in an agent directory's `ls`).
    under_roots: bool,
    /// Unified id of this session (with a disambiguating suffix when ids collide).
    native_id: String,
    version: u64,
    mtime: SystemTime,
    checked: Instant,
    /// Sources of other sessions this one's files depend on (a fork's parent, for
    /// `parent.diff`), learned at the first render.
    extra: Vec<PathBuf>,
    /// Serialises renders of one session so concurrent readers wait for one render.
    render_lock: Arc<Mutex<()>>,
    /// The version the kernel was last told about (see [`Fs::poll_changes`]).
    announced: u64,
    /// Not checked by a request yet. Every inode of a session is handed out after a check,
    /// so the first check's version is what the kernel first learns (a store's own version
    /// replaces the listing's file fingerprint there without an invalidation).
    unchecked: bool,
    /// Since when the version may have moved (a new slot, a new listing of it, a reported
    /// change): the next use checks it however recent the last check, until a check that
    /// started after this ([`Fs::session_fresh`]).
    stale_at: Option<Instant>,
}

impl SessionSlot {
    /// Record a version whose `stat`s started at `started`, unless a check that started
    /// later already stored its own: a slow round of checks (a listing's) must not put back
    /// a version older than one a reader or the change watcher has seen since, and keep it
    /// for [`TTL`].
    /// Returns whether the mtime moved (the agent's cached listing then goes).
    fn set_version(&mut self, version: u64, mtime: SystemTime, started: Instant) -> bool {
        if self.checked >= started {
            return false;
        }
        if self.stale_at.is_some_and(|t| started >= t) {
            self.stale_at = None;
        }
        if std::mem::take(&mut self.unchecked) {
            self.announced = version;
        }
        self.version = version;
        let moved = self.mtime != mtime;
        self.mtime = mtime;
        self.checked = started;
        moved
    }
}

/// A session to version: its name, store, listing and extra sources, copied out of the
/// state so the `stat`s run without its lock.
type ToVersion = (String, usize, Listed, Vec<PathBuf>);

struct AgentState {
    store: usize,
    sessions: BTreeMap<String, SessionSlot>,
    listed: Option<Instant>,
    /// A hash of the store's last listing: a listing that comes back the same changes
    /// nothing, and is not merged again (the safety net lists every store).
    listing: Option<u64>,
    /// When the set of session names last changed: the agent directory's mtime, which
    /// tells the kernel to drop its cached listing.
    changed: SystemTime,
    /// Names added since the change watcher last looked.
    pending: Vec<String>,
    /// Names removed since the change watcher last looked.
    gone: Vec<String>,
    /// The name of each session by its own file ([`Listed::path`]), so a write to that file
    /// finds its session without a look at the others ([`Fs::changes_for`]).
    by_path: HashMap<PathBuf, String>,
    /// The sessions that also read a file besides their own, by that file (a Codex fork
    /// lists the thread it was forked from): a write to another session's file re-checks
    /// them too.
    readers: HashMap<PathBuf, Vec<String>>,
    /// Held while the store is listed or its sessions versioned ([`Fs::refresh_agent`],
    /// [`Fs::check_all`]): a second caller waits and finds the work done instead of doing it
    /// again (the warm-up and a first `ls` race for it).
    scan: Arc<Mutex<()>>,
    /// The agent directory's entries as last listed ([`Fs::session_entries`]), until a
    /// listing changes the sessions or a check moves one's mtime: an idle mount's first
    /// `ls` of 10,000 sessions then costs no pass over them (the warm-up made it).
    entries: Option<(u64, Listing)>,
}

/// A directory's entries, shared by the kernel's readers of the listing.
pub type Listing = Arc<Vec<(String, Attr)>>;

/// The nodes under `search/`: a query can be any string, so unlike the rest of the tree
/// these inodes are not kept for the life of the mount. They come from their own range
/// (from [`SEARCH_INO_BASE`]), at most [`SEARCH_QUERIES`] queries are kept, each with its
/// links, and the least recently used query is forgotten with its links. A kernel that still
/// holds a forgotten inode gets `ENOENT` and looks the name up again; the FUSE adapter gives
/// these nodes a short TTL ([`SEARCH_TTL`], [`Fs::is_volatile`]) so that is rare and
/// results stay fresh.
/// The links of one `search/<query>/` directory as `(name, inode, session)`.
type SearchLinks = Vec<(String, u64, SessionKey)>;

struct QueryResults {
    checked: Instant,
    changed: SystemTime,
    links: SearchLinks,
}

/// The `diff/<agent>/<other>.diff` files: like the search nodes, a bounded set in their own
/// inode range, the least recently looked up forgotten first.
#[derive(Default)]
struct DiffNodes {
    next: u64,
    nodes: HashMap<u64, NodeKind>,
    /// Inode by `(parent inode, name)`.
    by_name: HashMap<(u64, String), u64>,
    /// Inodes, least recently looked up first.
    order: std::collections::VecDeque<u64>,
}

#[derive(Default)]
struct SearchNodes {
    next: u64,
    nodes: HashMap<u64, NodeKind>,
    /// Query inode by query text.
    queries: HashMap<String, u64>,
    /// Query inodes, least recently used first.
    order: std::collections::VecDeque<u64>,
    /// Per query inode: when it was run, when its result set last changed (the directory's
    /// mtime: the kernel keeps a directory's listing until its mtime moves), and its links
    /// as `(name, inode, session)`.
    results: HashMap<u64, QueryResults>,
}

struct State {
    search: SearchNodes,
    diffs: DiffNodes,
    nodes: Vec<NodeKind>,
    /// Inode by parent inode and name: a map per directory, so a name is looked up as the
    /// `&str` it arrives as, with nothing allocated for the question.
    by_name: HashMap<u64, HashMap<Box<str>, u64>>,
    /// Inodes of the agent directories (the one kind of node looked up by what it is).
    agent_inos: HashMap<Agent, u64>,
    agents: BTreeMap<Agent, AgentState>,
    /// Inodes that show each session's content, to invalidate when it changes.
    session_inos: HashMap<SessionKey, Vec<u64>>,
}

/// Options that shape the tree.
#[derive(Clone, Debug)]
pub struct Options {
    pub cache_bytes: usize,
    /// Where files too big for memory are kept while cached (see [`crate::spill`]); `None`
    /// holds every file in memory.
    pub spill_dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cache_bytes: 256 << 20,
            spill_dir: None,
        }
    }
}

pub struct Fs {
    stores: Vec<Box<dyn Store>>,
    cache: Cache,
    /// Where big rendered files go, and from what size (a sixteenth of the cache budget).
    spill: Option<SpillTo>,
    /// Read far more often than written: every request reads it, listings and new inodes
    /// write it, so readers never wait for each other.
    state: RwLock<State>,
    started: SystemTime,
    renders: AtomicU64,
    /// Queue of sessions to render ahead of a directory walk (see [`Fs::start_prefetch`]).
    prefetch: Mutex<Option<Prefetch>>,
    /// Render ahead at idle policy ([`Fs::render_ahead_at_idle`]).
    prefetch_idle: std::sync::atomic::AtomicBool,
    /// What answers `search/<query>/`; without one there is no `search/`.
    searcher: std::sync::OnceLock<Box<dyn Searcher>>,
    /// When the change watcher's watches were all in place ([`Fs::watch`]). A listing or
    /// version check that started earlier may predate a change no event will report, so it
    /// is never trusted as fresh (see [`Fs::fresh`]).
    watched_from: std::sync::OnceLock<Instant>,
    /// By store: whether the watches reach every one of its roots. Such a store's listing
    /// stays trusted after [`TTL`]: an event asks for the next one ([`Fs::changes_for`]),
    /// as does the slow poll. Empty when the mount cannot watch (it then polls).
    watched_stores: std::sync::OnceLock<Vec<bool>>,
    /// Watches made by [`Fs::watch_early`], until the mount's change watcher takes them.
    early_watch: Mutex<Option<Watching>>,
    /// When each directory's files were last pushed beside a READ ([`Fs::beside_due`]).
    beside: Mutex<HashMap<(SessionKey, String), Instant>>,
}

/// The change watches of a mount and the receiving end of their events.
pub struct Watching {
    pub watcher: notify::Result<crate::watch::Watcher>,
    pub events: std::sync::mpsc::Receiver<crate::watch::Wake>,
}

/// Sessions rendered ahead of the one a reader just asked for.
pub const PREFETCH_AHEAD: usize = 8;

/// The render-ahead queue and the last session put on it, so a walk that keeps finding
/// its sessions rendered keeps the queue that far ahead without queueing any twice.
struct Prefetch {
    tx: std::sync::mpsc::SyncSender<SessionKey>,
    horizon: Option<SessionKey>,
}

impl Fs {
    pub fn new(stores: Vec<Box<dyn Store>>, opts: Options) -> Fs {
        let mut agents = BTreeMap::new();
        for (i, s) in stores.iter().enumerate() {
            agents.entry(s.agent()).or_insert(AgentState {
                store: i,
                sessions: BTreeMap::new(),
                listed: None,
                listing: None,
                changed: SystemTime::now(),
                pending: Vec::new(),
                gone: Vec::new(),
                by_path: HashMap::new(),
                readers: HashMap::new(),
                scan: Arc::default(),
                entries: None,
            });
        }
        let mut state = State {
            search: SearchNodes::default(),
            diffs: DiffNodes::default(),
            nodes: Vec::new(),
            by_name: HashMap::new(),
            agent_inos: HashMap::new(),
            agents,
            session_inos: HashMap::new(),
        };
        state.nodes.push(NodeKind::Root);
        Fs {
            stores,
            cache: Cache::new(opts.cache_bytes),
            spill: opts
                .spill_dir
                .map(|dir| SpillTo::new(dir, (opts.cache_bytes / 16).max(1 << 20))),
            state: RwLock::new(state),
            started: SystemTime::now(),
            renders: AtomicU64::new(0),
            prefetch: Mutex::new(None),
            prefetch_idle: Default::default(),
            searcher: std::sync::OnceLock::new(),
            watched_from: std::sync::OnceLock::new(),
            watched_stores: std::sync::OnceLock::new(),
            early_watch: Mutex::new(None),
            beside: Mutex::new(HashMap::new()),
        }
    }

    /// Answer `search/<query>/` with `searcher` (once; later calls are ignored).
    pub fn set_searcher(&self, searcher: Box<dyn Searcher>) {
        let _ = self.searcher.set(searcher);
    }

    /// Whether the kernel should hold this node only briefly: `search/` results change with
    /// every session, and their inodes are forgotten (see `SearchNodes`).
    pub fn is_volatile(&self, ino: u64) -> bool {
        ino >= DIFF_INO_BASE
    }

    /// The rendered-file cache's counters.
    pub fn cache_stats(&self) -> crate::cache::Stats {
        self.cache.stats()
    }

    /// Sessions rendered since start (for tests and `doctor`).
    pub fn render_count(&self) -> u64 {
        self.renders.load(Ordering::Relaxed)
    }

    fn state(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn state_mut(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    // ----- requests ---------------------------------------------------------------------

    pub fn lookup(&self, parent: u64, name: &str) -> Result<Attr> {
        let parent_kind = self.kind_of(parent)?;
        let child = match &parent_kind {
            NodeKind::Root if name == SEARCH_DIR && self.searcher.get().is_some() => {
                NodeKind::SearchRoot
            }
            NodeKind::Root => {
                let agent = Agent::from_name(name).ok_or(FsError::NotFound)?;
                if !self.state().agents.contains_key(&agent) {
                    return Err(FsError::NotFound);
                }
                NodeKind::Agent(agent)
            }
            // Tools probe every directory they enter for hidden names (rg: `.gitignore`,
            // `.ignore`, `.rgignore`; editors, git, macOS): those are never queries, or
            // `rg -r` over the mount would build the whole index.
            NodeKind::SearchRoot if name.starts_with('.') => return Err(FsError::NotFound),
            NodeKind::SearchRoot => {
                let ino = self.search_query_ino(name);
                return self.getattr(ino);
            }
            NodeKind::SearchQuery(_) => {
                let links = self.search_results(parent)?;
                let ino = links
                    .iter()
                    .find(|(n, _, _)| n == name)
                    .map(|(_, ino, _)| *ino)
                    .ok_or(FsError::NotFound)?;
                return self.getattr(ino);
            }
            NodeKind::SearchLink(_) => return Err(FsError::NotDir),
            NodeKind::Agent(agent) => {
                self.refresh_agent(*agent, false);
                let key = SessionKey {
                    agent: *agent,
                    name: name.into(),
                };
                if !self.session_exists(&key) {
                    return Err(FsError::NotFound);
                }
                NodeKind::Session(key)
            }
            NodeKind::Session(key) => {
                if name == DIFF_DIR {
                    NodeKind::DiffRoot(key.clone())
                } else {
                    self.inner_child(key, "", name)?
                }
            }
            NodeKind::Inner(key, dir) => self.inner_child(key, dir, name)?,
            NodeKind::DiffRoot(key) => {
                let agent = Agent::from_name(name).ok_or(FsError::NotFound)?;
                if !self.state().agents.contains_key(&agent) {
                    return Err(FsError::NotFound);
                }
                NodeKind::DiffAgent(key.clone(), agent)
            }
            NodeKind::DiffAgent(key, agent) => {
                let other = name.strip_suffix(".diff").ok_or(FsError::NotFound)?;
                self.refresh_agent(*agent, false);
                let other = SessionKey {
                    agent: *agent,
                    name: other.into(),
                };
                if !self.session_exists(&other) {
                    return Err(FsError::NotFound);
                }
                NodeKind::DiffFile(key.clone(), other)
            }
            NodeKind::DiffFile(..) => return Err(FsError::NotDir),
        };
        let ino = self.ino_for(parent, name, child);
        self.getattr(ino)
    }

    pub fn getattr(&self, ino: u64) -> Result<Attr> {
        let kind = self.kind_of(ino)?;
        self.attr_of(ino, &kind)
    }

    /// Children of a directory, without `.` and `..`.
    pub fn readdir(&self, ino: u64) -> Result<Vec<(String, Attr)>> {
        self.listing(ino).map(Arc::unwrap_or_clone)
    }

    /// [`Fs::readdir`], shared: an agent directory's listing is kept and handed out again
    /// while nothing in it changed.
    pub fn listing(&self, ino: u64) -> Result<Listing> {
        let kind = self.kind_of(ino)?;
        let names: Vec<(String, NodeKind)> = match &kind {
            NodeKind::Root => {
                let agents: Vec<Agent> = self.state().agents.keys().copied().collect();
                let mut v: Vec<(String, NodeKind)> = agents
                    .into_iter()
                    .map(|a| (a.name().to_string(), NodeKind::Agent(a)))
                    .collect();
                if self.searcher.get().is_some() {
                    v.push((SEARCH_DIR.to_string(), NodeKind::SearchRoot));
                }
                v
            }
            // `search/` lists nothing, so `grep -r` and `find` never enter it.
            NodeKind::SearchRoot => Vec::new(),
            NodeKind::SearchQuery(_) => {
                let links = self.search_results(ino)?;
                let mut out = Vec::with_capacity(links.len());
                for (name, lino, _) in links {
                    out.push((name, self.getattr(lino)?));
                }
                return Ok(Arc::new(out));
            }
            NodeKind::SearchLink(_) => return Err(FsError::NotDir),
            NodeKind::Agent(agent) => {
                self.refresh_agent(*agent, false);
                self.check_all(*agent);
                return Ok(self.session_entries(ino, *agent));
            }
            NodeKind::Session(key) => return self.session_dir_entries(ino, key, "").map(Arc::new),
            NodeKind::Inner(key, dir) => {
                return self.session_dir_entries(ino, key, dir).map(Arc::new)
            }
            // `diff/` lists nothing, so `grep -r` and `find` never enter it.
            NodeKind::DiffRoot(_) | NodeKind::DiffAgent(..) => Vec::new(),
            NodeKind::DiffFile(..) => return Err(FsError::NotDir),
        };
        let mut out = Vec::with_capacity(names.len());
        for (name, child) in names {
            let cino = self.ino_for(ino, &name, child.clone());
            match self.attr_of(cino, &child) {
                Ok(a) => out.push((name, a)),
                Err(FsError::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Arc::new(out))
    }

    /// The entries of a session directory (`dir` "") or of a directory inside one, from
    /// one look at the session's shape and its mtime, their inodes made under one write of
    /// the state: a walk lists every session directory, and asking for each entry's shape
    /// and mtime apart took the state's lock four times per entry (the cache's and the
    /// render-ahead queue's once each), against render-ahead threads that take them for
    /// every session they render.
    fn session_dir_entries(
        &self,
        ino: u64,
        key: &SessionKey,
        dir: &str,
    ) -> Result<Vec<(String, Attr)>> {
        let shape = self.shape(key)?;
        if !dir.is_empty() {
            match shape.entries.get(dir) {
                Some((EntryKind::Dir, _)) => {}
                Some(_) => return Err(FsError::NotDir),
                None => return Err(FsError::NotFound),
            }
        }
        let mut v: Vec<(&str, Kind, u64)> = shape
            .children(dir)
            .map(|(n, k, size)| (n, k.into(), size))
            .collect();
        if dir.is_empty() {
            v.push((DIFF_DIR, Kind::Dir, 0));
            v.sort_by(|a, b| a.0.cmp(b.0));
        }
        let inos = self
            .state_mut()
            .session_dir_inos(ino, key, dir, v.iter().map(|e| e.0));
        // Sizes from a look taken after the inodes are registered, as for any attribute: a
        // change the watcher found before that is in it, and one it finds after invalidates
        // these inodes. Sizes from before could be older than an invalidation that missed
        // the new inodes (the watcher holds the state's lock while it collects them, so a
        // listing that waited for the lock met exactly that).
        let now = self.shape(key)?;
        let mtime = self.session_mtime(key)?;
        let attr = |(name, kind, size): (&str, Kind, u64), ino| {
            let (kind, size) = if Arc::ptr_eq(&shape, &now) || (dir.is_empty() && name == DIFF_DIR)
            {
                (kind, size)
            } else {
                let &(k, s) = now.entries.get(&join(dir, name))?;
                (k.into(), s)
            };
            let attr = Attr {
                ino,
                kind,
                size,
                mtime,
            };
            Some((name.to_string(), attr))
        };
        Ok(v.into_iter()
            .zip(inos)
            .filter_map(|(entry, ino)| attr(entry, ino))
            .collect())
    }

    pub fn readlink(&self, ino: u64) -> Result<String> {
        let (key, path) = match self.kind_of(ino)? {
            NodeKind::Inner(key, path) => (key, path),
            NodeKind::SearchLink(key) => return Ok(format!("../../{}/{}", key.agent, key.name)),
            _ => return Err(FsError::NotSymlink),
        };
        let shape = self.shape(&key)?;
        match (shape.links.get(&path), shape.entries.get(&path)) {
            (Some(t), _) => Ok(t.clone()),
            (None, Some(_)) => Err(FsError::NotSymlink),
            (None, None) => Err(FsError::NotFound),
        }
    }

    /// The whole content of a file at its current version (shared, not copied).
    pub fn contents(&self, ino: u64) -> Result<Bytes> {
        let (bytes, _) = match self.kind_of(ino)? {
            NodeKind::Inner(key, path) => self.file(&key, &path)?,
            NodeKind::DiffFile(a, b) => self.diff_file(&a, &b)?,
            NodeKind::SearchLink(_) => return Err(FsError::NotFound),
            _ => return Err(FsError::IsDir),
        };
        Ok(bytes)
    }

    /// Read part of a file at its current version. There are no open handles (the FUSE
    /// adapter runs in no-open mode); each call returns bytes of one rendered version.
    pub fn read_ino(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let bytes = self.contents(ino)?;
        let part = bytes
            .read(offset, size)
            .map_err(|e| FsError::Spill(e.to_string()))?;
        Ok(part.into_owned())
    }

    /// The cached files of a session directory (or a directory inside one) that a listing
    /// just sent (`listed`), at the session's current version, with their inode numbers:
    /// what the mount pushes into the kernel's page cache right after the directory was
    /// listed, so a walk's reads of them need no request. Never renders and never
    /// allocates an inode; files larger than `max_file` are left to ordinary reads.
    pub fn pushable(
        &self,
        dir: u64,
        listed: &[(String, Attr)],
        max_file: u64,
    ) -> Vec<(u64, Arc<Vec<u8>>)> {
        let Ok(kind) = self.kind_of(dir) else {
            return Vec::new();
        };
        let (key, prefix) = match kind {
            NodeKind::Session(k) => (k, String::new()),
            NodeKind::Inner(k, d) => (k, d + "/"),
            _ => return Vec::new(),
        };
        let Ok((version, _)) = self.check_session(&key) else {
            return Vec::new();
        };
        let files: Vec<(u64, String)> = listed
            .iter()
            .filter(|(_, a)| a.kind == Kind::File && a.size > 0 && a.size <= max_file)
            .map(|(name, a)| (a.ino, format!("{prefix}{name}")))
            .collect();
        self.cached_in_memory(&key, version, files)
    }

    /// The cached files beside file `ino` (same directory, same session, current version)
    /// that the kernel already has inodes for, up to `max_file` bytes each: what the mount
    /// pushes when a READ shows that the page cache lost a small file. Files pushed
    /// together tend to be dropped together, so one READ stands for its directory. Never
    /// renders.
    pub fn pushable_beside(&self, ino: u64, max_file: u64) -> Vec<(u64, Arc<Vec<u8>>)> {
        let Ok(NodeKind::Inner(key, path)) = self.kind_of(ino) else {
            return Vec::new();
        };
        let dir = parent(&path);
        let Ok((version, _)) = self.check_session(&key) else {
            return Vec::new();
        };
        let Some(shape) = self.cache.shape(&key, version) else {
            return Vec::new();
        };
        let files: Vec<(u64, String)> = {
            let st = self.state();
            // Only at the version the kernel was last told about: a neighbour's size the
            // kernel holds is then this version's (a change not yet announced could leave
            // it an older, larger size around newer bytes).
            let announced = st
                .agents
                .get(&key.agent)
                .and_then(|a| a.sessions.get(&*key.name))
                .is_some_and(|s| s.version == version && s.announced == version);
            if !announced {
                return Vec::new();
            }
            st.session_inos
                .get(&key)
                .into_iter()
                .flatten()
                .filter(|&&i| i != ino && i < DIFF_INO_BASE)
                .filter_map(|&i| match st.nodes.get(i as usize - 1) {
                    Some(NodeKind::Inner(_, p))
                        if parent(p) == dir
                            && matches!(
                                shape.entries.get(p),
                                Some((EntryKind::File, size)) if *size > 0 && *size <= max_file
                            ) =>
                    {
                        Some((i, p.clone()))
                    }
                    _ => None,
                })
                .collect()
        };
        self.cached_in_memory(&key, version, files)
    }

    /// Whether the files beside file `ino` may be pushed now ([`Fs::pushable_beside`]), and
    /// if so the time of it noted: once per directory per [`BESIDE_GAP`]. A reader that
    /// opens a directory's files one by one by name, never listing it, sends a READ for
    /// each, and each READ would push every file read before it again: 640 tool files by
    /// name made 204,480 pushes.
    pub fn beside_due(&self, ino: u64) -> bool {
        let Ok(NodeKind::Inner(key, path)) = self.kind_of(ino) else {
            return false;
        };
        let dir = parent(&path);
        let now = Instant::now();
        let mut beside = self.beside.lock().unwrap_or_else(|e| e.into_inner());
        // Only directories pushed within the gap need remembering.
        if beside.len() >= 4096 {
            beside.retain(|_, at| now.duration_since(*at) < BESIDE_GAP);
        }
        let dir = (key, dir.to_string());
        if beside
            .get(&dir)
            .is_some_and(|at| now.duration_since(*at) < BESIDE_GAP)
        {
            return false;
        }
        beside.insert(dir, now);
        true
    }

    /// The bytes of `files` (inode, path in the session) cached in memory at `version`;
    /// files not cached, or kept on disk, are left out.
    fn cached_in_memory(
        &self,
        key: &SessionKey,
        version: u64,
        files: Vec<(u64, String)>,
    ) -> Vec<(u64, Arc<Vec<u8>>)> {
        let bytes = self
            .cache
            .files(key, version, files.iter().map(|(_, p)| p.as_str()));
        files
            .into_iter()
            .zip(bytes)
            .filter_map(|((ino, _), b)| match b {
                Some(Bytes::Mem(b)) => Some((ino, b)),
                _ => None,
            })
            .collect()
    }

    /// A whole file by path relative to the root (for the command line and tests).
    pub fn read_path(&self, path: &str) -> Result<Vec<u8>> {
        let bytes = self.contents(self.resolve(path)?.ino)?;
        bytes.to_vec().map_err(|e| FsError::Spill(e.to_string()))
    }

    /// Walk a `/`-separated path from the root.
    pub fn resolve(&self, path: &str) -> Result<Attr> {
        let mut attr = self.getattr(ROOT_INO)?;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            attr = self.lookup(attr.ino, part)?;
        }
        Ok(attr)
    }

    // ----- sessions ---------------------------------------------------------------------

    /// Every session of every agent as `(agent, directory name)`, listing stores as needed.
    pub fn sessions(&self) -> Vec<SessionKey> {
        let agents: Vec<Agent> = self.state().agents.keys().copied().collect();
        let mut out = Vec::new();
        for a in agents {
            self.refresh_agent(a, false);
            let st = self.state();
            out.extend(st.agents[&a].sessions.keys().map(|n| SessionKey {
                agent: a,
                name: n.as_str().into(),
            }));
        }
        out
    }

    /// Find a session by `<agent>:<name>`, where name is the session's directory name in the
    /// mount (unique by construction) or its native id, in that order. Every session can be
    /// reached by its directory name, even when two roots hold the same native id.
    pub fn find(&self, unified: &str) -> Option<SessionKey> {
        let (agent, id) = unified.split_once(':')?;
        let agent = Agent::from_name(agent)?;
        self.refresh_agent(agent, false);
        let st = self.state();
        let a = st.agents.get(&agent)?;
        let name = if a.sessions.contains_key(id) {
            id.to_string()
        } else {
            a.sessions
                .iter()
                .find(|(_, s)| s.native_id == id)
                .map(|(n, _)| n.clone())?
        };
        Some(SessionKey {
            agent,
            name: name.into(),
        })
    }

    /// Parse a session (uncached). Never panics; a panic in a store becomes a warning.
    pub fn load(&self, key: &SessionKey) -> Result<Session> {
        let (listed, native_id, store) = {
            let st = self.state();
            let a = st.agents.get(&key.agent).ok_or(FsError::NotFound)?;
            let s = a.sessions.get(&*key.name).ok_or(FsError::NotFound)?;
            (s.listed.clone(), s.native_id.clone(), a.store)
        };
        let store = &self.stores[store];
        let mut session = match catch_unwind(AssertUnwindSafe(|| store.load(&listed))) {
            Ok(s) => s,
            Err(p) => {
                let msg = panic_message(&p);
                log::error!("panic while loading {}/{}: {msg}", key.agent, key.name);
                let mut s = Session::new(key.agent, listed.id.clone());
                s.source.paths = listed.sources.clone();
                s.warnings
                    .push(format!("internal error while reading this session: {msg}"));
                s
            }
        };
        if session.id != native_id {
            session.id = native_id;
        }
        session.drop_duplicate_text();
        Ok(session)
    }

    /// Parse a session as [`Fs::load`] does, with the messages a fork copied from its parent
    /// marked `inherited`, as they are when the tree renders it: what `meta.json`, `sessfs
    /// list` and `sessfs cost` count.
    pub fn load_marked(&self, key: &SessionKey) -> Result<Session> {
        let mut session = self.load(key)?;
        let _ = self.fork_parent(key, &mut session);
        let _ = self.linked_children(key, &mut session);
        Ok(session)
    }

    /// Render ahead: `grep -r`, `find` and `cp -r` walk sessions in directory order, so when
    /// a reader makes sessfs render one session, the next [`PREFETCH_AHEAD`] sessions of that
    /// agent are rendered on `threads` background threads while the reader works through
    /// this one. Like kernel readahead it only moves work earlier: a walk still renders each
    /// session once, and the byte budget still holds.
    pub fn start_prefetch(self: &Arc<Self>, threads: usize) {
        let (tx, rx) = std::sync::mpsc::sync_channel::<SessionKey>(4 * PREFETCH_AHEAD);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let fs = Arc::downgrade(self);
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("sessfs-prefetch-{i}"))
                .spawn(move || {
                    let mut idle = false;
                    loop {
                        let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let (Ok(key), Some(fs)) = (next, fs.upgrade()) else {
                            return;
                        };
                        if !idle && fs.prefetch_idle.load(Ordering::Relaxed) {
                            idle = true;
                            set_idle_policy();
                        }
                        if let Err(p) = catch_unwind(AssertUnwindSafe(|| fs.prefetch_one(&key))) {
                            log::error!("panic while prefetching: {}", panic_message(&p));
                        }
                    }
                });
            if let Err(e) = spawned {
                log::warn!("no prefetch thread: {e}");
            }
        }
        *self.prefetch.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Prefetch { tx, horizon: None });
    }

    /// Render ahead at `SCHED_IDLE` from now on. The io_uring transport asks for it: its
    /// request threads hand replies over at idle policy (`src/fuse/ring.rs`), and a render
    /// a reader waits for must not yield to one guessing what it reads next (a cold walk of
    /// 2,000 sessions of 97 KB: 1.62-1.91 s with render-ahead at normal policy, 1.44-1.52 s
    /// at idle). Through `/dev/fuse` it stays at normal policy: there idle render-ahead made
    /// a cold walk of 10,000 sessions slower (4.9-5.1 s against 3.5-4.2 s).
    pub fn render_ahead_at_idle(&self) {
        self.prefetch_idle.store(true, Ordering::Relaxed);
    }

    /// Queue the [`PREFETCH_AHEAD`] sessions after `key` that are not queued yet. Called
    /// whenever a reader lists a session, rendered ahead or not, so the render-ahead
    /// threads stay ahead of a walk instead of waiting for it to miss again.
    fn prefetch_after(&self, key: &SessionKey) {
        let mut guard = self.prefetch.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = guard.as_mut() else { return };
        let from = match &p.horizon {
            Some(h) if h.agent == key.agent && h.name > key.name => h.name.clone(),
            _ => key.name.clone(),
        };
        let next: Vec<String> = {
            let st = self.state();
            let Some(a) = st.agents.get(&key.agent) else {
                return;
            };
            let ahead = a
                .sessions
                .range::<str, _>((
                    std::ops::Bound::Excluded(&*key.name),
                    std::ops::Bound::Unbounded,
                ))
                .take(PREFETCH_AHEAD)
                .map(|(name, _)| name);
            ahead.filter(|n| n.as_str() > &*from).cloned().collect()
        };
        for name in next {
            let k = SessionKey {
                agent: key.agent,
                name: name.into(),
            };
            // A full queue means the prefetcher is behind; the reader will render itself.
            if p.tx.try_send(k.clone()).is_err() {
                break;
            }
            p.horizon = Some(k);
        }
    }

    /// One file of a session at the session's current version.
    pub fn file(&self, key: &SessionKey, path: &str) -> Result<(Bytes, u64)> {
        let (version, lock) = self.check_session(key)?;
        if let Some(b) = self.cache.file(key, version, path) {
            return Ok((b, version));
        }
        let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        // Another render may have finished meanwhile, and a fork's first render moves its
        // version (it starts to depend on the parent): look again under the lock.
        let (version, _) = self.check_session(key)?;
        if let Some(b) = self.cache.file(key, version, path) {
            return Ok((b, version));
        }
        let (bundle, version) = self.render(key)?;
        let bytes = match bundle.entries.get(path) {
            Some(Node::File(b)) => Ok(b.clone()),
            Some(Node::Dir) => Err(FsError::IsDir),
            _ => Err(FsError::NotFound),
        };
        self.cache.insert(key, version, bundle, Some(path));
        self.prefetch_after(key);
        Ok((bytes?, version))
    }

    /// Names, kinds and sizes of a session's files at its current version.
    fn shape(&self, key: &SessionKey) -> Result<Arc<Shape>> {
        let (version, lock) = self.check_session(key)?;
        if let Some(s) = self.cache.shape(key, version) {
            self.prefetch_after(key);
            return Ok(s);
        }
        let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (version, _) = self.check_session(key)?;
        if let Some(s) = self.cache.shape(key, version) {
            self.prefetch_after(key);
            return Ok(s);
        }
        let (bundle, version) = self.render(key)?;
        let shape = self.cache.insert(key, version, bundle, None);
        self.prefetch_after(key);
        Ok(shape)
    }

    /// Render a session unless its files are already cached at the current version.
    fn prefetch_one(&self, key: &SessionKey) {
        let Ok((_, lock)) = self.check_session(key) else {
            return;
        };
        let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let Ok((version, _)) = self.check_session(key) else {
            return;
        };
        if self.cache.contains(key, version, "meta.json") {
            return;
        }
        if let Ok((bundle, version)) = self.render(key) {
            self.cache.insert(key, version, bundle, None);
        }
    }

    /// Parse and render a session. The caller holds the session's render lock.
    /// Returns the bundle and the version to file it under (a fork's first render adds its
    /// parent's sources to the version).
    fn render(&self, key: &SessionKey) -> Result<(Bundle, u64)> {
        let mut version = self.check_session(key)?.0;
        let mut session = self.load(key)?;
        let parent = self.fork_parent(key, &mut session);
        let mut depends: Vec<PathBuf> = parent.iter().flat_map(|(_, s)| s.clone()).collect();
        depends.extend(self.linked_children(key, &mut session));
        if !depends.is_empty() {
            version = self.depend_on(key, &depends).unwrap_or(version);
        }
        let parent = parent.map(|(p, _)| p);
        let render = || {
            let mut b = render::render_session_to(&session, self.spill.clone());
            if let Some(p) = &parent {
                b.file("parent.diff", render::parent_diff(p, &session));
            }
            b
        };
        let bundle = match catch_unwind(AssertUnwindSafe(render)) {
            Ok(b) => b,
            Err(p) => {
                let msg = panic_message(&p);
                log::error!("panic while rendering {}/{}: {msg}", key.agent, key.name);
                let mut s = Session::new(session.agent, session.id.clone());
                s.warnings
                    .push(format!("internal error while rendering: {msg}"));
                render::render_session(&s)
            }
        };
        drop(session);
        self.renders.fetch_add(1, Ordering::Relaxed);
        log::debug!("rendered {}/{} version {version:016x}", key.agent, key.name);
        Ok((bundle, version))
    }

    /// Make `key`'s version depend on `sources` too; returns the new version if it changed.
    fn depend_on(&self, key: &SessionKey, sources: &[PathBuf]) -> Option<u64> {
        let (store, listed) = {
            let st = self.state();
            let a = st.agents.get(&key.agent)?;
            let s = a.sessions.get(&*key.name)?;
            if s.extra == sources {
                return None;
            }
            (a.store, s.listed.clone())
        };
        // Outside the lock: a store's own version may query its database.
        let (version, mtime) = self.version_of(store, &listed, sources, &mut Stater::default());
        let mut st = self.state_mut();
        let a = st.agents.get_mut(&key.agent)?;
        let s = a.sessions.get_mut(&*key.name)?;
        // On the first render nothing of the old version was shown: every size and byte the
        // kernel gets comes from this render, so there is nothing to tell it to forget (it
        // would re-read the whole fork after the next change check).
        if s.extra.is_empty() && s.announced == s.version {
            s.announced = version;
        }
        s.extra = sources.to_vec();
        s.version = version;
        let moved = s.mtime != mtime;
        s.mtime = mtime;
        s.checked = Instant::now();
        if moved {
            a.entries = None;
        }
        Some(version)
    }

    /// For a fork, load the session it was forked from and mark the messages it copied
    /// (the common prefix by role and content) as inherited, so cost counts them once: in
    /// the parent. Also returns the parent's sources: `parent.diff` changes with them.
    fn fork_parent(
        &self,
        key: &SessionKey,
        session: &mut Session,
    ) -> Option<(Session, Vec<PathBuf>)> {
        let pkey = self.find(session.forked_from.as_deref()?)?;
        if pkey == *key {
            return None;
        }
        let parent = self.load(&pkey).ok()?;
        let sources = self.sources_of(&pkey)?;
        let shared = session
            .messages
            .iter()
            .zip(&parent.messages)
            .take_while(|(a, b)| a.role == b.role && a.text() == b.text())
            .count();
        for m in &mut session.messages[..shared] {
            m.inherited = true;
        }
        Some((parent, sources))
    }

    /// The files `key`'s version is made of, as it was listed.
    fn sources_of(&self, key: &SessionKey) -> Option<Vec<PathBuf>> {
        let st = self.state();
        let s = st.agents.get(&key.agent)?.sessions.get(&*key.name)?;
        Some(s.listed.sources.clone())
    }

    /// Load the top-level sessions `session` links as its subagents (agsh's children have
    /// ids of their own, so they are not nested), each with what it links in turn, and set
    /// [`Session::linked_cost`] to what they cost: `meta.json` and `sessfs list` show a
    /// session's cost with everything it spawned. Returns their sources, which the
    /// session's version then depends on.
    fn linked_children(&self, key: &SessionKey, session: &mut Session) -> Vec<PathBuf> {
        let mut sources = Vec::new();
        let mut seen = HashSet::from([key.clone()]);
        session.linked_cost = self.linked_cost(session, &mut seen, &mut sources);
        sources
    }

    fn linked_cost(
        &self,
        s: &Session,
        seen: &mut HashSet<SessionKey>,
        sources: &mut Vec<PathBuf>,
    ) -> Option<Cost> {
        let mut total: Option<Cost> = None;
        let linked = s
            .subagents
            .iter()
            .filter(|sub| sub.session.is_none())
            .filter_map(|sub| sub.unified_id.as_deref());
        for uid in linked {
            // `seen` stops a cycle of links, and a child linked twice is counted once.
            let Some(ckey) = self.find(uid).filter(|k| seen.insert(k.clone())) else {
                continue;
            };
            let Ok(mut child) = self.load(&ckey) else {
                continue;
            };
            sources.extend(self.sources_of(&ckey).unwrap_or_default());
            child.linked_cost = self.linked_cost(&child, seen, sources);
            let c = child.cost_with_subagents().unwrap_or_else(|| child.cost());
            total.get_or_insert_with(Cost::default).add(&c);
        }
        total
    }

    fn diff_file(&self, a: &SessionKey, b: &SessionKey) -> Result<(Bytes, u64)> {
        let (va, _) = self.check_session(a)?;
        let (vb, _) = self.check_session(b)?;
        let key = diff_key(a, b);
        let version = va.rotate_left(1) ^ vb;
        if let Some(bytes) = self.cache.file(&key, version, "diff") {
            return Ok((bytes, version));
        }
        let sa = self.load(a)?;
        let sb = self.load(b)?;
        let text = catch_unwind(AssertUnwindSafe(|| render::session_diff(&sa, &sb)))
            .map_err(|p| FsError::Internal(panic_message(&p)))?;
        let bytes = Bytes::Mem(Arc::new(text.into_bytes()));
        let mut bundle = Bundle::default();
        bundle
            .entries
            .insert("diff".into(), Node::File(bytes.clone()));
        self.cache.insert(&key, version, bundle, None);
        Ok((bytes, version))
    }

    fn session_exists(&self, key: &SessionKey) -> bool {
        let st = self.state();
        st.agents
            .get(&key.agent)
            .is_some_and(|a| a.sessions.contains_key(&*key.name))
    }

    /// The session's current version, re-stating its sources when the last check is stale.
    fn check_session(&self, key: &SessionKey) -> Result<(u64, Arc<Mutex<()>>)> {
        self.check_session_now(key, false)
    }

    fn check_session_now(&self, key: &SessionKey, force: bool) -> Result<(u64, Arc<Mutex<()>>)> {
        let (store, listed, extra) = {
            let st = self.state();
            let a = st.agents.get(&key.agent).ok_or(FsError::NotFound)?;
            let s = a.sessions.get(&*key.name).ok_or(FsError::NotFound)?;
            if !force && self.session_fresh(a.store, s, Instant::now()) {
                return Ok((s.version, s.render_lock.clone()));
            }
            (a.store, s.listed.clone(), s.extra.clone())
        };
        let started = Instant::now();
        let (version, mtime) = self.version_of(store, &listed, &extra, &mut Stater::default());
        let mut st = self.state_mut();
        let a = st.agents.get_mut(&key.agent).ok_or(FsError::NotFound)?;
        let s = a.sessions.get_mut(&*key.name).ok_or(FsError::NotFound)?;
        let moved = s.set_version(version, mtime, started);
        let out = (s.version, s.render_lock.clone());
        if moved {
            a.entries = None;
        }
        Ok(out)
    }

    /// Version every session of `agent` whose check is out of date (see
    /// [`Fs::version_batch`]).
    fn check_all(&self, agent: Agent) {
        let now = Instant::now();
        self.check_picked(agent, |a| {
            a.sessions
                .iter()
                .filter(|(_, s)| !self.session_fresh(a.store, s, now))
                .collect()
        });
    }

    /// Version the sessions of `agent` called `names` now, however recently they were
    /// checked (the change watcher's re-checks, [`Fs::announce`]).
    fn check_named(&self, agent: Agent, names: &[&str]) {
        self.check_picked(agent, |a| {
            names
                .iter()
                .filter_map(|&n| a.sessions.get_key_value(n))
                .collect()
        });
    }

    /// Version the sessions `pick` chooses from `agent`'s, holding its scan lock, the
    /// `stat`s and queries made without the state lock ([`Fs::version_batch`]).
    fn check_picked(
        &self,
        agent: Agent,
        pick: impl for<'a> FnOnce(&'a AgentState) -> Vec<(&'a String, &'a SessionSlot)>,
    ) {
        let Some(scan) = self.scan_lock(agent) else {
            return;
        };
        let _scanning = scan.lock().unwrap_or_else(|e| e.into_inner());
        let todo: Vec<ToVersion> = {
            let st = self.state();
            let Some(a) = st.agents.get(&agent) else {
                return;
            };
            pick(a)
                .into_iter()
                .map(|(n, s)| (n.clone(), a.store, s.listed.clone(), s.extra.clone()))
                .collect()
        };
        self.version_batch(agent, todo);
    }

    /// Version `todo`, sessions of `agent`, on every core, and store the results under one
    /// write of the state. A listing gives each session its real mtime; 10,000 `stat`s of a
    /// cold project directory in a row cost 25 ms of disk reads, split over the cores
    /// about 15. Call it holding the agent's scan lock.
    fn version_batch(&self, agent: Agent, todo: Vec<ToVersion>) {
        let started = Instant::now();
        // One call into the store for the whole part: a database store reads all its
        // sessions' versions in one transaction.
        let version_all = |part: &[ToVersion]| {
            let mut stater = Stater::default();
            let listed: Vec<&Listed> = part.iter().map(|(_, _, l, _)| l).collect();
            let own = match part.first() {
                Some((_, store, ..)) => self.own_versions(*store, &listed),
                None => Vec::new(),
            };
            part.iter()
                .zip(own)
                .map(|((_, _, listed, extra), own)| combine(own, listed, extra, &mut stater))
                .collect::<Vec<_>>()
        };
        // A thread per core for 256 sessions or more; fewer are done right here.
        let threads = cores().min(todo.len() / 256).max(1);
        let versions: Vec<(u64, SystemTime)> = if threads == 1 {
            version_all(&todo)
        } else {
            std::thread::scope(|scope| {
                let parts: Vec<_> = todo
                    .chunks(todo.len().div_ceil(threads))
                    .map(|part| scope.spawn(move || version_all(part)))
                    .collect();
                parts
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_default())
                    .collect()
            })
        };
        if versions.len() != todo.len() {
            return; // a versioning thread panicked: each session is checked on its own
        }
        let mut st = self.state_mut();
        let Some(a) = st.agents.get_mut(&agent) else {
            return;
        };
        let mut moved = false;
        for ((name, ..), (version, mtime)) in todo.into_iter().zip(versions) {
            if let Some(s) = a.sessions.get_mut(&name) {
                moved |= s.set_version(version, mtime, started);
            }
        }
        if moved {
            a.entries = None;
        }
    }

    fn scan_lock(&self, agent: Agent) -> Option<Arc<Mutex<()>>> {
        self.state().agents.get(&agent).map(|a| a.scan.clone())
    }

    /// List every store, version every session and number the session directories once,
    /// on a thread of its own, as the mount starts: the first `ls` of a cold machine then
    /// finds the native files' inodes read, the versions made (10,000 cold `stat`s, ~15
    /// ms) and the inodes there (10,000: ~6 ms, much of it first touches of new memory),
    /// or waits for the rest of that work instead of doing it twice. Nothing is rendered.
    pub fn start_warm_up(self: &Arc<Self>) -> Option<std::thread::JoinHandle<()>> {
        let fs = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("sessfs-warm-up".into())
            .spawn(move || {
                let Some(fs) = fs.upgrade() else {
                    return;
                };
                let agents: Vec<Agent> = fs.state().agents.keys().copied().collect();
                for agent in agents {
                    let one = || {
                        let dir = fs.ino_for(ROOT_INO, agent.name(), NodeKind::Agent(agent));
                        fs.refresh_agent(agent, false);
                        fs.check_all(agent);
                        fs.session_entries(dir, agent);
                    };
                    if let Err(p) = catch_unwind(AssertUnwindSafe(one)) {
                        log::error!("panic while warming up {agent}: {}", panic_message(&p));
                    }
                }
            });
        spawned
            .map_err(|e| log::warn!("no warm-up thread: {e}"))
            .ok()
    }

    /// The sessions of an agent directory `dir`, just versioned by [`Fs::check_all`]: their
    /// inodes and attributes under one write of the state, kept until a session or an mtime
    /// changes ([`AgentState::entries`]).
    fn session_entries(&self, dir: u64, agent: Agent) -> Listing {
        let mut st = self.state_mut();
        let State {
            agents,
            by_name,
            nodes,
            session_inos,
            ..
        } = &mut *st;
        let Some(a) = agents.get_mut(&agent) else {
            return Listing::default();
        };
        if let Some((d, e)) = &a.entries {
            if *d == dir {
                return e.clone();
            }
        }
        // Room for every new session up front: growing the maps by rehashing as 10,000
        // new inodes go in was a third of this. Only for the new ones: `reserve` counts
        // from what is there, and asking again for all of them rehashed every name.
        let known = by_name.entry(dir).or_default();
        let new = a.sessions.len().saturating_sub(known.len());
        known.reserve(new);
        session_inos.reserve(new);
        nodes.reserve(new);
        let listing: Vec<(String, Attr)> = a
            .sessions
            .iter()
            .map(|(name, s)| {
                let ino = match known.get(name.as_str()) {
                    Some(&ino) => ino,
                    None => {
                        let key = SessionKey {
                            agent,
                            name: name.as_str().into(),
                        };
                        let ino = nodes.len() as u64 + 1;
                        known.insert(name.as_str().into(), ino);
                        session_inos.entry(key.clone()).or_default().push(ino);
                        nodes.push(NodeKind::Session(key));
                        ino
                    }
                };
                let attr = Attr {
                    ino,
                    kind: Kind::Dir,
                    size: 0,
                    mtime: s.mtime,
                };
                (name.clone(), attr)
            })
            .collect();
        let listing = Arc::new(listing);
        a.entries = Some((dir, listing.clone()));
        listing
    }

    /// What changed since the last call, for the kernel to forget: every inode of a
    /// session whose version moved (looked at afresh, `stat` only), and the names of
    /// sessions that appeared or went. Only sessions the kernel has seen are checked; the
    /// others are checked when it first asks for them. Call it from one watcher thread,
    /// never from a request handler, and send the result without holding any lock.
    ///
    /// This looks at everything; the mount uses it only as a fallback when it cannot watch
    /// the stores, and as a slow safety net (see [`Fs::changes_for`]).
    pub fn poll_changes(&self) -> Invalidations {
        let agents: Vec<Agent> = self.state().agents.keys().copied().collect();
        // With watches this is the slow safety net, and forced: a watched store's listing
        // is otherwise trusted, and this is what catches a change its events missed.
        // Without, it runs every POLL and a listing keeps its TTL.
        let watching = self.watched_stores.get().is_some();
        for &agent in &agents {
            self.refresh_agent(agent, watching);
        }
        if watching {
            // The same for versions: every session is checked again at its next use.
            let now = Instant::now();
            let mut st = self.state_mut();
            for s in st.agents.values_mut().flat_map(|a| a.sessions.values_mut()) {
                s.stale_at = Some(now);
            }
        }
        let known: Vec<SessionKey> = self.state().session_inos.keys().cloned().collect();
        self.announce(&agents, &known)
    }

    /// What the kernel must forget after the store files at `changed` changed: only the
    /// agents whose roots hold a changed path are re-listed, and only the sessions the
    /// kernel has seen whose sources a change touches ([`crate::watch::touches`]) are
    /// checked. An idle store costs nothing. Where `relist` is false (writes only) and
    /// every write is to a session's own file, nothing is re-listed
    /// ([`Fs::written_sessions`]).
    pub fn changes_for(&self, changed: &[PathBuf], relist: bool) -> Invalidations {
        let affected: Vec<Agent> = {
            let st = self.state();
            st.agents
                .iter()
                .filter(|(_, a)| {
                    self.stores[a.store]
                        .roots()
                        .iter()
                        .any(|r| changed.iter().any(|c| c.starts_with(watched_dir(&r.path))))
                })
                .map(|(agent, _)| *agent)
                .collect()
        };
        let mut known: Vec<SessionKey> = Vec::new();
        for &agent in &affected {
            // Writes to sessions' own files that the store still lists as they were: those
            // sessions, found by path, and no look at the others.
            let touched = match self.written_sessions(agent, changed, relist) {
                Some(written) => written,
                None => {
                    self.refresh_agent(agent, true);
                    let st = self.state();
                    let touches = |s: &SessionSlot| {
                        let mut srcs = s.listed.sources.iter().chain(s.extra.iter());
                        srcs.any(|src| changed.iter().any(|c| crate::watch::touches(src, c)))
                    };
                    st.agents.get(&agent).map_or_else(Vec::new, |a| {
                        let names = a.sessions.iter().filter(|(_, s)| touches(s));
                        names.map(|(n, _)| n.clone()).collect()
                    })
                }
            };
            // Every session the change may have moved is checked again at its next use,
            // also those the kernel has not seen; those it has are checked now. Names come
            // once each, and keys of different agents differ: `known` needs no look-up.
            let mut st = self.state_mut();
            let st = &mut *st;
            let now = Instant::now();
            for name in touched {
                let key = SessionKey {
                    agent,
                    name: name.as_str().into(),
                };
                if let Some(s) = st
                    .agents
                    .get_mut(&agent)
                    .and_then(|a| a.sessions.get_mut(&name))
                {
                    s.stale_at = Some(now);
                }
                if st.session_inos.contains_key(&key) {
                    known.push(key);
                }
            }
        }
        self.announce(&affected, &known)
    }

    /// The names of the sessions whose own files are the changed paths under `agent`'s
    /// roots, seen by the kernel or not, when that is all that changed there: a batch of writes only
    /// (`relist` false), every changed path of this agent a listed session's own file, and
    /// each such session one the store still lists as it was ([`Store::keeps_listing`]).
    /// With them come the sessions that read those files too (a fork, its parent's).
    /// `None` when the store must be listed again.
    fn written_sessions(
        &self,
        agent: Agent,
        changed: &[PathBuf],
        relist: bool,
    ) -> Option<Vec<String>> {
        let st = self.state();
        let a = st.agents.get(&agent)?;
        let store = &self.stores[a.store];
        if relist || a.listed.is_none() {
            return None;
        }
        let mut written: Vec<String> = Vec::new();
        let mut add = |name: &str| {
            if !written.iter().any(|w| w == name) {
                written.push(name.to_string());
            }
        };
        for c in changed {
            if !store
                .roots()
                .iter()
                .any(|r| c.starts_with(watched_dir(&r.path)))
            {
                continue;
            }
            let name = a.by_path.get(c)?;
            if !store.keeps_listing(&a.sessions.get(name)?.listed) {
                return None;
            }
            let readers = a.readers.get(c).into_iter().flatten();
            std::iter::once(name).chain(readers).for_each(|n| add(n));
        }
        // Sessions that read a written file besides their own: a fork's `parent.diff` reads
        // its parent. Few sessions have such sources, so this look is cheap.
        for (name, slot) in &a.sessions {
            let reads = |src: &PathBuf| changed.iter().any(|c| crate::watch::touches(src, c));
            if slot.extra.iter().any(reads) {
                add(name);
            }
        }
        Some(written)
    }

    /// Re-check `known` sessions now and collect what moved, plus the names that appeared
    /// or went in `agents` since the last call.
    fn announce(&self, agents: &[Agent], known: &[SessionKey]) -> Invalidations {
        // Versioned agent by agent in batches: one by one, a safety look over 10,000
        // sessions took the state lock 20,000 times.
        let mut by_agent: BTreeMap<Agent, Vec<&str>> = BTreeMap::new();
        for key in known {
            by_agent.entry(key.agent).or_default().push(&key.name);
        }
        for (agent, names) in by_agent {
            self.check_named(agent, &names);
        }
        let mut out = Invalidations::default();
        let mut st = self.state_mut();
        let st = &mut *st;
        for key in known {
            let Some(slot) = st
                .agents
                .get_mut(&key.agent)
                .and_then(|a| a.sessions.get_mut(&*key.name))
            else {
                continue;
            };
            if slot.version != slot.announced {
                slot.announced = slot.version;
                out.inodes
                    .extend(st.session_inos.get(key).into_iter().flatten().copied());
            }
        }
        for &agent in agents {
            let Some(a) = st.agents.get_mut(&agent) else {
                continue;
            };
            if a.pending.is_empty() && a.gone.is_empty() {
                continue;
            }
            let names = std::mem::take(&mut a.pending);
            let gone = std::mem::take(&mut a.gone);
            if let Some(&dir) = st.agent_inos.get(&agent) {
                out.inodes.push(dir);
                out.entries.extend(names.into_iter().map(|n| (dir, n)));
                out.gone.extend(gone.into_iter().map(|n| (dir, n)));
            }
        }
        out.inodes.sort_unstable();
        out.inodes.dedup();
        out
    }

    /// Watch every store root for changes (see [`crate::watch`]), and from then on trust no
    /// listing or version check that started before the watches were all in place: a
    /// session that appeared or grew before that is reported by no event. Whatever was
    /// looked at earlier is looked at again at its next use. Call it once, before the mount
    /// serves a request; the warm-up is started after it, or its work would be done twice.
    pub fn watch(&self) -> Watching {
        let (tx, events) = std::sync::mpsc::channel();
        let watcher = crate::watch::Watcher::new(&self.watch_roots(), tx);
        // Also when the watches failed: the mount then polls, which needs no epoch but
        // loses nothing by one.
        let _ = self.watched_from.set(Instant::now());
        if let Ok(w) = &watcher {
            let whole = |s: &dyn Store| {
                let roots = s.roots();
                !roots.is_empty() && roots.iter().all(|r| w.covers(&r.path))
            };
            let by_store = self.stores.iter().map(|s| whole(s.as_ref())).collect();
            let _ = self.watched_stores.set(by_store);
        }
        Watching { watcher, events }
    }

    /// [`Fs::watch`] before the stores are first listed, for the mount to take up with
    /// [`Fs::take_watch`]: the listing made as the mount opens is then trusted, and the
    /// warm-up goes straight to versioning instead of listing every store again (a listing
    /// of 10,000 sessions is ~40 ms, most of a cold `ls`).
    pub fn watch_early(&self) {
        let w = self.watch();
        *self.early_watch.lock().unwrap_or_else(|e| e.into_inner()) = Some(w);
    }

    /// The watches [`Fs::watch_early`] made, or new ones.
    pub fn take_watch(&self) -> Watching {
        let early = self
            .early_watch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        early.unwrap_or_else(|| self.watch())
    }

    /// Whether a listing or check that started at `at` can be trusted without looking
    /// again: younger than [`TTL`], and not older than the change watcher's watches.
    fn fresh(&self, at: Instant) -> bool {
        self.fresh_at(at, Instant::now())
    }

    /// [`Fs::fresh`] against a clock read once for a whole pass over the sessions.
    fn fresh_at(&self, at: Instant, now: Instant) -> bool {
        now.saturating_duration_since(at) < TTL && self.watched_from.get().is_none_or(|&w| at >= w)
    }

    /// Whether a listing of `store` that started at `at` stays trusted however old it is:
    /// the watches reach all of the store's roots and were in place when it started, so a
    /// change to what it lists is reported and asks for a new one. A cold `ls` of an agent
    /// directory on a mount that has been idle then skips listing the store again (10,000
    /// sessions: 25-40 ms).
    fn listing_watched(&self, store: usize, at: Instant) -> bool {
        let watched = self.watched_stores.get();
        watched.is_some_and(|w| w.get(store).copied().unwrap_or(false))
            && self.watched_from.get().is_some_and(|&w| at >= w)
    }

    /// Whether `s`'s last check can stand at `now`: younger than [`TTL`], or, where the
    /// watches reach every root of `store` and every source of the session lies under one
    /// (or is a database root's journal), not older than the watches, with no change
    /// reported since ([`SessionSlot::stale_at`]). An idle mount's cold `ls` then costs no
    /// `stat` per session (10,000 sessions: 40-60 ms with the store's directory cold).
    fn session_fresh(&self, store: usize, s: &SessionSlot, now: Instant) -> bool {
        if s.stale_at.is_some() {
            return false;
        }
        if self.fresh_at(s.checked, now) {
            return true;
        }
        s.under_roots && s.extra.is_empty() && self.listing_watched(store, s.checked)
    }

    /// Whether every source of `listed` lies under a root of `store` or is the journal of a
    /// database root ([`SessionSlot::under_roots`]).
    fn under_roots(&self, store: usize, listed: &Listed) -> bool {
        let roots = self.stores[store].roots();
        let watched = |p: &PathBuf| {
            roots
                .iter()
                .any(|r| lies_under(p, &r.path) || crate::stores::sqlite::is_journal_of(p, &r.path))
        };
        listed.sources.iter().all(watched)
    }

    /// Every store root, for the change watcher.
    pub fn watch_roots(&self) -> Vec<PathBuf> {
        self.stores
            .iter()
            .flat_map(|s| s.roots().iter().map(|r| r.path.clone()))
            .collect()
    }

    /// Re-list an agent's store if the listing is older than [`TTL`] (or `force`).
    pub fn refresh_agent(&self, agent: Agent, force: bool) {
        let Some(scan) = self.scan_lock(agent) else {
            return;
        };
        let _scanning = scan.lock().unwrap_or_else(|e| e.into_inner());
        let store = {
            let st = self.state();
            let Some(a) = st.agents.get(&agent) else {
                return;
            };
            let trusted = |t: Instant| self.fresh(t) || self.listing_watched(a.store, t);
            if !force && a.listed.is_some_and(trusted) {
                return;
            }
            a.store
        };
        // A listing is as old as the moment it started reading the store.
        let started = Instant::now();
        let listed = match catch_unwind(AssertUnwindSafe(|| self.stores[store].list())) {
            Ok(l) => l,
            Err(p) => {
                log::error!("panic while listing {agent}: {}", panic_message(&p));
                Vec::new()
            }
        };
        let listing = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            listed.hash(&mut h);
            h.finish()
        };
        let mut st = self.state_mut();
        let Some(a) = st.agents.get_mut(&agent) else {
            return;
        };
        if a.listed.is_some() && a.listing == Some(listing) {
            // The same sessions from the same files as last time: merging it again would
            // give the same names and slots (10,000 sessions: 25 ms under the state lock).
            a.listed = Some(started);
            return;
        }
        a.listing = Some(listing);
        a.entries = None;
        let previous: HashMap<Identity, String> = a
            .sessions
            .iter()
            .map(|(name, s)| (identity(&s.listed), name.clone()))
            .collect();
        let named = disambiguate(listed, &previous);
        let first_listing = a.listed.is_none();
        let mut old = std::mem::take(&mut a.sessions);
        let before = old.len();
        let old_names: std::collections::HashSet<String> = old.keys().cloned().collect();
        for (name, native_id, listed) in named {
            let slot = match old.remove(&name) {
                Some(mut s) => {
                    if s.listed != listed {
                        s.under_roots = self.under_roots(store, &listed);
                        s.listed = listed;
                        // Re-check at the next request.
                        s.checked = Instant::now().checked_sub(TTL * 2).unwrap_or(s.checked);
                        s.stale_at = Some(Instant::now());
                    }
                    s.native_id = native_id;
                    s
                }
                None => {
                    // Versioned at the first request for it (`checked` starts stale), not
                    // here under the state lock: listing costs no `stat` per session, and a
                    // store's own version may query a database.
                    let now = Instant::now();
                    SessionSlot {
                        under_roots: self.under_roots(store, &listed),
                        listed,
                        native_id,
                        version: 0,
                        mtime: SystemTime::UNIX_EPOCH,
                        checked: now.checked_sub(TTL * 2).unwrap_or(now),
                        extra: Vec::new(),
                        render_lock: Arc::new(Mutex::new(())),
                        announced: 0,
                        unchecked: true,
                        stale_at: Some(now),
                    }
                }
            };
            if !first_listing && !old_names.contains(&name) {
                a.pending.push(name.clone());
            }
            a.sessions.insert(name, slot);
        }
        a.listed = Some(started);
        a.by_path = a
            .sessions
            .iter()
            .map(|(name, s)| (s.listed.path.clone(), name.clone()))
            .collect();
        a.readers.clear();
        for (name, s) in &a.sessions {
            for src in s.listed.sources.iter().filter(|&p| *p != s.listed.path) {
                a.readers.entry(src.clone()).or_default().push(name.clone());
            }
        }
        if !old.is_empty() || a.sessions.len() != before {
            a.changed = SystemTime::now();
        }
        a.gone.extend(old.keys().cloned());
        drop(st);
        for name in old.into_keys() {
            self.cache.forget(&SessionKey {
                agent,
                name: name.into(),
            });
        }
    }

    // ----- nodes ------------------------------------------------------------------------

    fn kind_of(&self, ino: u64) -> Result<NodeKind> {
        let st = self.state();
        if ino >= SEARCH_INO_BASE {
            return st.search.nodes.get(&ino).cloned().ok_or(FsError::NotFound);
        }
        if ino >= DIFF_INO_BASE {
            return st.diffs.nodes.get(&ino).cloned().ok_or(FsError::NotFound);
        }
        let idx = ino.checked_sub(1).ok_or(FsError::NotFound)? as usize;
        st.nodes.get(idx).cloned().ok_or(FsError::NotFound)
    }

    fn ino_for(&self, parent: u64, name: &str, kind: NodeKind) -> u64 {
        let mut st = self.state_mut();
        if matches!(kind, NodeKind::DiffFile(..)) {
            let (ino, forgotten) = st.diff_ino(parent, name, kind);
            drop(st);
            for node in forgotten {
                if let NodeKind::DiffFile(a, b) = node {
                    self.cache.forget(&diff_key(&a, &b));
                }
            }
            return ino;
        }
        st.ino(parent, name, kind)
    }

    fn inner_child(&self, key: &SessionKey, dir: &str, name: &str) -> Result<NodeKind> {
        let path = join(dir, name);
        let shape = self.shape(key)?;
        match shape.entries.get(dir) {
            Some((EntryKind::Dir, _)) => {}
            None if dir.is_empty() => {}
            Some(_) => return Err(FsError::NotDir),
            None => return Err(FsError::NotFound),
        }
        if shape.entries.contains_key(&path) {
            Ok(NodeKind::Inner(key.clone(), path))
        } else {
            Err(FsError::NotFound)
        }
    }

    fn attr_of(&self, ino: u64, kind: &NodeKind) -> Result<Attr> {
        let dir = |mtime| Attr {
            ino,
            kind: Kind::Dir,
            size: 0,
            mtime,
        };
        match kind {
            NodeKind::Root | NodeKind::SearchRoot => Ok(dir(self.started)),
            // Searched again (at most once per SEARCH_TTL) so the mtime moves when the
            // results do.
            NodeKind::SearchQuery(_) => Ok(dir(self.search_run(ino)?.0)),
            NodeKind::SearchLink(key) => Ok(Attr {
                ino,
                kind: Kind::Symlink,
                size: format!("../../{}/{}", key.agent, key.name).len() as u64,
                mtime: self.session_mtime(key).unwrap_or(self.started),
            }),
            NodeKind::Agent(agent) => {
                let st = self.state();
                Ok(dir(st
                    .agents
                    .get(agent)
                    .map_or(self.started, |a| a.changed)))
            }
            NodeKind::Session(key) | NodeKind::DiffRoot(key) | NodeKind::DiffAgent(key, _) => {
                self.check_session(key)?;
                Ok(dir(self.session_mtime(key)?))
            }
            NodeKind::Inner(key, path) => {
                let shape = self.shape(key)?;
                let (k, size) = *shape.entries.get(path).ok_or(FsError::NotFound)?;
                Ok(Attr {
                    ino,
                    kind: k.into(),
                    size,
                    mtime: self.session_mtime(key)?,
                })
            }
            NodeKind::DiffFile(a, b) => {
                let size = self.diff_file(a, b)?.0.len() as u64;
                let mtime = self.session_mtime(a)?.max(self.session_mtime(b)?);
                Ok(Attr {
                    ino,
                    kind: Kind::File,
                    size,
                    mtime,
                })
            }
        }
    }

    /// The inode of `search/<query>/`, made (and the oldest query forgotten) if new.
    fn search_query_ino(&self, query: &str) -> u64 {
        let mut st = self.state_mut();
        let sn = &mut st.search;
        if let Some(&ino) = sn.queries.get(query) {
            sn.order.retain(|&i| i != ino);
            sn.order.push_back(ino);
            return ino;
        }
        while sn.order.len() >= SEARCH_QUERIES {
            let Some(old) = sn.order.pop_front() else {
                break;
            };
            if let Some(NodeKind::SearchQuery(q)) = sn.nodes.remove(&old) {
                sn.queries.remove(&q);
            }
            if let Some(r) = sn.results.remove(&old) {
                for (_, lino, _) in r.links {
                    sn.nodes.remove(&lino);
                }
            }
        }
        let ino = SEARCH_INO_BASE + sn.next;
        sn.next += 1;
        sn.nodes
            .insert(ino, NodeKind::SearchQuery(query.to_string()));
        sn.queries.insert(query.to_string(), ino);
        sn.order.push_back(ino);
        ino
    }

    /// The links of `search/<query>/` (inode `qino`), searched again when older than
    /// [`SEARCH_TTL`].
    /// A session keeps its link inode while it keeps matching.
    fn search_results(&self, qino: u64) -> Result<SearchLinks> {
        Ok(self.search_run(qino)?.1)
    }

    /// As [`Fs::search_results`], with the time the result set last changed.
    fn search_run(&self, qino: u64) -> Result<(SystemTime, SearchLinks)> {
        let query = {
            let st = self.state();
            if let Some(r) = st.search.results.get(&qino) {
                if r.checked.elapsed() < SEARCH_TTL {
                    return Ok((r.changed, r.links.clone()));
                }
            }
            match st.search.nodes.get(&qino) {
                Some(NodeKind::SearchQuery(q)) => q.clone(),
                _ => return Err(FsError::NotFound),
            }
        };
        let searcher = self.searcher.get().ok_or(FsError::NotFound)?;
        let found = catch_unwind(AssertUnwindSafe(|| {
            searcher.sessions(self, &query, SEARCH_RESULTS)
        }))
        .map_err(|p| FsError::Internal(panic_message(&p)))?
        .map_err(|e| {
            log::warn!("search '{query}': {e}");
            FsError::Internal(e)
        })?;
        let mut st = self.state_mut();
        let sn = &mut st.search;
        if !sn.nodes.contains_key(&qino) {
            // Forgotten meanwhile by other queries.
            return Err(FsError::NotFound);
        }
        let previous = sn.results.remove(&qino);
        let before: Vec<SessionKey> = previous
            .iter()
            .flat_map(|r| r.links.iter().map(|(_, _, k)| k.clone()))
            .collect();
        let changed = match &previous {
            Some(r) if before == found => r.changed,
            _ => SystemTime::now(),
        };
        let old: HashMap<SessionKey, u64> = previous
            .map(|r| r.links.into_iter().map(|(_, i, k)| (k, i)).collect())
            .unwrap_or_default();
        let mut keep: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let mut links = Vec::with_capacity(found.len());
        for key in found {
            let ino = match old.get(&key) {
                Some(&i) => i,
                None => {
                    let i = SEARCH_INO_BASE + sn.next;
                    sn.next += 1;
                    sn.nodes.insert(i, NodeKind::SearchLink(key.clone()));
                    i
                }
            };
            keep.insert(ino);
            links.push((format!("{}:{}", key.agent, key.name), ino, key));
        }
        for (_, i) in old {
            if !keep.contains(&i) {
                sn.nodes.remove(&i);
            }
        }
        sn.results.insert(
            qino,
            QueryResults {
                checked: Instant::now(),
                changed,
                links: links.clone(),
            },
        );
        Ok((changed, links))
    }

    fn session_mtime(&self, key: &SessionKey) -> Result<SystemTime> {
        let st = self.state();
        st.agents
            .get(&key.agent)
            .and_then(|a| a.sessions.get(&*key.name))
            .map(|s| s.mtime)
            .ok_or(FsError::NotFound)
    }
}

/// The path of `name` in a session's directory `dir` ("" for the session directory).
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        let mut path = String::with_capacity(dir.len() + 1 + name.len());
        path.push_str(dir);
        path.push('/');
        path.push_str(name);
        path
    }
}

/// The directory part of a path inside a session ("" for its top level).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Where a listed session lives, which stays the same while the session does.
type Identity = (usize, PathBuf, Option<String>);

/// `Path::starts_with` for the plain absolute paths sessfs builds, compared as bytes: an
/// idle mount's listing of 10,000 sessions asks it of every source (component by
/// component it cost 2-3 ms of that listing).
fn lies_under(p: &Path, dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = dir.as_os_str().as_bytes();
    let dir = dir.strip_suffix(b"/").unwrap_or(dir);
    match p.as_os_str().as_bytes().strip_prefix(dir) {
        Some(rest) => rest.is_empty() || rest[0] == b'/',
        None => false,
    }
}

/// Where the cache keeps the diff of `a` against `b`: a name no session can have.
fn diff_key(a: &SessionKey, b: &SessionKey) -> SessionKey {
    SessionKey {
        agent: a.agent,
        name: format!("{}\u{0}diff\u{0}{}\u{0}{}", a.name, b.agent, b.name).into(),
    }
}

fn identity(l: &Listed) -> Identity {
    (l.root, l.path.clone(), l.key.clone())
}

/// Directory names for listed sessions, as `(name, id, listed)`.
///
/// A session keeps the name it had at the previous listing (`previous`), so names never move
/// while mounted. The others take [`names::escape`] of their id in `(root, path)` order, the
/// first root in discovery order first; a name already taken (the same id in two roots)
/// gets `~2`, `~3`, … ([`names::with_suffix`]) on both the name and the id. Native ids never
/// produce a `~` in a name, so a suffixed name cannot hide another session, and every name is
/// checked against the names taken so far, so no two sessions ever share one.
fn disambiguate(
    mut listed: Vec<Listed>,
    previous: &HashMap<Identity, String>,
) -> Vec<(String, String, Listed)> {
    listed.sort_by(|a, b| (a.root, &a.path, &a.key).cmp(&(b.root, &b.path, &b.key)));
    let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut names: Vec<Option<(String, String)>> = vec![None; listed.len()];
    // Names from the previous listing first, as long as they still fit the id.
    for (i, l) in listed.iter().enumerate() {
        let Some(name) = previous.get(&identity(l)) else {
            continue;
        };
        let base = names::escape(&l.id);
        let id = match name.strip_prefix(base.as_str()) {
            Some("") => l.id.clone(),
            Some(rest) if rest.starts_with('~') => format!("{}{rest}", l.id),
            _ => continue,
        };
        if taken.insert(name.clone()) {
            names[i] = Some((name.clone(), id));
        }
    }
    for (i, l) in listed.iter().enumerate() {
        if names[i].is_some() {
            continue;
        }
        let base = names::escape(&l.id);
        let (name, id) = if taken.contains(&base) {
            (2..)
                .map(|n| (names::with_suffix(&base, n), format!("{}~{n}", l.id)))
                .find(|(name, _)| !taken.contains(name))
                .expect("an unbounded range has a free suffix")
        } else {
            (base, l.id.clone())
        };
        taken.insert(name.clone());
        names[i] = Some((name, id));
    }
    listed
        .into_iter()
        .zip(names)
        .map(|(l, n)| {
            let (name, id) = n.expect("every session was named above");
            (name, id, l)
        })
        .collect()
}

impl Fs {
    /// The version of a session's own sources (not of a fork parent's), checked now: what
    /// the search index keeps to know when to re-index a session.
    pub fn source_version(&self, key: &SessionKey) -> Result<u64> {
        let (store, listed) = {
            let st = self.state();
            let a = st.agents.get(&key.agent).ok_or(FsError::NotFound)?;
            let s = a.sessions.get(&*key.name).ok_or(FsError::NotFound)?;
            (a.store, s.listed.clone())
        };
        Ok(self
            .version_of(store, &listed, &[], &mut Stater::default())
            .0)
    }

    /// A session's version and mtime: the store's own version of the session when it has one
    /// ([`Store::versions`]), else the fingerprint of its sources; sources of other sessions
    /// it depends on (`extra`, a fork's parent) are fingerprinted either way. The mtime is
    /// always the newest mtime of all those files.
    fn version_of(
        &self,
        store: usize,
        listed: &Listed,
        extra: &[PathBuf],
        stater: &mut Stater,
    ) -> (u64, SystemTime) {
        let own = self.own_versions(store, &[listed]).pop().flatten();
        combine(own, listed, extra, stater)
    }

    /// The store's own versions of `listed` ([`Store::versions`]), `None` for each where it
    /// has none or it panicked.
    fn own_versions(&self, store: usize, listed: &[&Listed]) -> Vec<Option<u64>> {
        match catch_unwind(AssertUnwindSafe(|| self.stores[store].versions(listed))) {
            Ok(v) if v.len() == listed.len() => v,
            Ok(_) => vec![None; listed.len()],
            Err(p) => {
                log::error!(
                    "panic while versioning {} sessions: {}",
                    listed.len(),
                    panic_message(&p)
                );
                vec![None; listed.len()]
            }
        }
    }
}

/// A session's version from the store's own (`own`) or, where it has none, from the
/// `stat` of its sources; the newest mtime of its sources either way.
fn combine(
    own: Option<u64>,
    listed: &Listed,
    extra: &[PathBuf],
    stater: &mut Stater,
) -> (u64, SystemTime) {
    let (by_stat, mtime) = fingerprint(listed.sources.iter().chain(extra), stater);
    match own {
        Some(v) => (v ^ fingerprint(extra, stater).0.rotate_left(17), mtime),
        None => (by_stat, mtime),
    }
}

/// `(version, newest mtime)` of a session's sources. A directory source also counts the
/// size and mtime of each entry directly in it: a file rewritten in place (agentuse part
/// files, written with `writeFile`) changes neither the directory's size nor its mtime.
fn fingerprint<'a>(
    sources: impl IntoIterator<Item = &'a PathBuf>,
    stater: &mut Stater,
) -> (u64, SystemTime) {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut stamp = |s: &Stamp, h: &mut std::collections::hash_map::DefaultHasher| {
        s.len.hash(h);
        s.mtime.hash(h);
        newest = newest.max(s.mtime);
    };
    for p in sources {
        p.hash(&mut h);
        match stater.stat(p) {
            Some(s) => {
                stamp(&s, &mut h);
                if s.is_dir {
                    let mut children: Vec<(std::ffi::OsString, Stamp)> = std::fs::read_dir(p)
                        .into_iter()
                        .flatten()
                        .flatten()
                        .filter_map(|e| Some((e.file_name(), Stamp::of(&e.metadata().ok()?))))
                        .collect();
                    children.sort_by(|a, b| a.0.cmp(&b.0));
                    for (name, s) in &children {
                        name.hash(&mut h);
                        stamp(s, &mut h);
                    }
                }
            }
            None => 0xdead_u64.hash(&mut h),
        }
    }
    (h.finish(), newest)
}

/// What a version is made of: a file's size and mtime.
struct Stamp {
    len: u64,
    mtime: SystemTime,
    is_dir: bool,
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: m.len(),
            mtime: m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            is_dir: m.is_dir(),
        }
    }
}

/// `stat` by name inside the source's directory, held open from one call to the next:
/// versioning the 10,000 sessions of one project directory then walks one path component
/// per file instead of every component of its path (the walk was a fifth of a cold `ls`).
/// Held only for one round of checks, so a directory renamed meanwhile is not followed.
#[derive(Default)]
struct Stater {
    dir: Option<(PathBuf, std::fs::File)>,
}

impl Stater {
    fn stat(&mut self, p: &std::path::Path) -> Option<Stamp> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        let by_path = || std::fs::metadata(p).ok().map(|m| Stamp::of(&m));
        let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
            return by_path();
        };
        if self.dir.as_ref().map(|(d, _)| d.as_path()) != Some(parent) {
            self.dir = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
                .open(parent)
                .ok()
                .map(|f| (parent.to_path_buf(), f));
        }
        let (Some((_, dir)), Ok(name)) = (&self.dir, std::ffi::CString::new(name.as_bytes()))
        else {
            return by_path();
        };
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `name` is NUL-terminated, `dir` an open descriptor, and `st` is written
        // by the call before it is read (only when it returns 0).
        if unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), 0) } != 0 {
            return None;
        }
        let st = unsafe { st.assume_init() };
        let mtime = Duration::new(st.st_mtime.max(0) as u64, st.st_mtime_nsec as u32);
        Some(Stamp {
            len: st.st_size as u64,
            mtime: SystemTime::UNIX_EPOCH + mtime,
            is_dir: st.st_mode & libc::S_IFMT == libc::S_IFDIR,
        })
    }
}

pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// The machine's cores (at least 1): render-ahead threads and FUSE workers scale with it.
/// Put the calling thread at `SCHED_IDLE`: it runs only on time no other thread wants.
pub fn set_idle_policy() {
    // SAFETY: sched_param is plain data; the call only reads it.
    let r = unsafe {
        let p = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &p)
    };
    if r != 0 {
        log::debug!("no idle policy: {}", std::io::Error::last_os_error());
    }
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte comparison agrees with `Path::starts_with` on the paths sessfs builds.
    #[test]
    fn lies_under_is_starts_with_by_components() {
        let cases = [
            ("/h/.claude/projects/p/a.jsonl", "/h/.claude/projects", true),
            (
                "/h/.claude/projects/p/a.jsonl",
                "/h/.claude/projects/",
                true,
            ),
            ("/h/.claude/projects", "/h/.claude/projects", true),
            ("/h/.claude/projects2/a.jsonl", "/h/.claude/projects", false),
            ("/h/.claude/project", "/h/.claude/projects", false),
            (
                "/h/.pi/agent/sessions/x.jsonl",
                "/h/.claude/projects",
                false,
            ),
            ("/anything", "/", true),
        ];
        for (p, dir, want) in cases {
            assert_eq!(
                lies_under(Path::new(p), Path::new(dir)),
                want,
                "{p} under {dir}"
            );
        }
    }

    /// An agentuse part file rewritten in place kept the old render for the life of the
    /// mount: the part directory (the version source) changes neither size nor mtime.
    #[test]
    fn a_file_rewritten_in_place_inside_a_directory_source_moves_the_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let part = dir.path().join("part");
        std::fs::create_dir(&part).expect("mkdir");
        let f = part.join("01.json");
        std::fs::write(&f, b"{\"text\":\"a\"}").expect("write");
        let sources = vec![part.clone()];
        let (before, _) = fingerprint(&sources, &mut Stater::default());
        // Same inode, new bytes: the directory itself does not change.
        std::fs::write(&f, b"{\"text\":\"a longer text\"}").expect("rewrite");
        let (after, _) = fingerprint(&sources, &mut Stater::default());
        assert_ne!(before, after);
    }
    use crate::model::{Message, Role};

    /// A store of sessions whose content is one file each: the file's text is the message.
    struct FakeStore {
        base: crate::stores::Base,
        dir: PathBuf,
    }

    impl Store for FakeStore {
        fn base(&self) -> &crate::stores::Base {
            &self.base
        }
        fn list(&self) -> Vec<Listed> {
            let mut v: Vec<Listed> = std::fs::read_dir(&self.dir)
                .unwrap()
                .flatten()
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    Listed::file(name, e.path(), 0)
                })
                .collect();
            v.sort_by(|a, b| a.id.cmp(&b.id));
            v
        }
        fn load(&self, l: &Listed) -> Session {
            let text = std::fs::read_to_string(&l.path).unwrap_or_default();
            if text == "panic" {
                panic!("store bug");
            }
            let mut s = Session::new(Agent::Pi, l.id.clone());
            // `link:<id>` lines link a top-level child, `usd:<n>` lines are replies costing n.
            for line in text.lines() {
                if let Some(child) = line.strip_prefix("link:") {
                    s.subagents.push(crate::model::Subagent {
                        name: child.to_string(),
                        unified_id: Some(format!("pi:{child}")),
                        ..Default::default()
                    });
                } else if let Some(usd) = line.strip_prefix("usd:") {
                    s.messages.push(Message {
                        role: Role::Assistant,
                        cost: usd.parse().ok(),
                        ..Default::default()
                    });
                }
            }
            s.messages.insert(
                0,
                Message {
                    role: Role::User,
                    content: text,
                    ..Default::default()
                },
            );
            s
        }
    }

    fn fs_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Fs) {
        let dir = tempfile::tempdir().unwrap();
        for (n, t) in files {
            std::fs::write(dir.path().join(n), t).unwrap();
        }
        let store = FakeStore {
            base: crate::stores::Base::new(Agent::Pi, vec![]),
            dir: dir.path().to_path_buf(),
        };
        (dir, Fs::new(vec![Box::new(store)], Options::default()))
    }

    /// Give the `i`th named file in `dir` the mtime `when(i)`.
    fn set_mtimes<'a>(
        dir: &std::path::Path,
        names: impl Iterator<Item = &'a str>,
        when: impl Fn(u64) -> SystemTime,
    ) {
        for (i, n) in names.enumerate() {
            let f = std::fs::File::options()
                .write(true)
                .open(dir.join(n))
                .unwrap();
            f.set_modified(when(i as u64)).unwrap();
        }
    }

    /// A listing versions its sessions on several threads and stores the results together;
    /// each session directory must still get its own file's mtime.
    #[test]
    fn a_listing_gives_each_session_its_own_mtime() {
        let names: Vec<String> = (0..600).map(|i| format!("s{i:04}")).collect();
        let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "text")).collect();
        let (dir, fs) = fs_with(&files);
        let when = |i: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + 61 * i);
        set_mtimes(dir.path(), names.iter().map(|n| n.as_ref()), when);
        let pi = fs.readdir(ROOT_INO).unwrap()[0].1.ino;
        let listed = fs.readdir(pi).unwrap();
        assert_eq!(listed.len(), 600);
        for (i, (name, attr)) in listed.iter().enumerate() {
            assert_eq!(name, &names[i]);
            assert_eq!(attr.mtime, when(i as u64), "{name}");
            assert_eq!(
                fs.getattr(attr.ino).unwrap().mtime,
                when(i as u64),
                "{name}"
            );
        }
    }

    /// The warm-up versions every session before any request: the first listing then has
    /// nothing left to `stat`.
    #[test]
    fn the_warm_up_gives_each_session_its_mtime_before_any_request() {
        let names = ["a", "b", "c"];
        let (dir, fs) = fs_with(&[("a", "x"), ("b", "y"), ("c", "z")]);
        let when = |i: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000 + 7 * i);
        set_mtimes(dir.path(), names.iter().map(|n| n.as_ref()), when);
        let fs = Arc::new(fs);
        fs.start_warm_up().unwrap().join().unwrap();
        let st = fs.state();
        let sessions = &st.agents[&Agent::Pi].sessions;
        assert_eq!(sessions.len(), 3);
        for (i, n) in names.iter().enumerate() {
            assert_eq!(sessions[*n].mtime, when(i as u64), "{n}");
            assert!(sessions[*n].checked.elapsed() < TTL, "{n}");
        }
    }

    /// The mount lists every store as it opens (and the warm-up may list and version them)
    /// before its change watcher is in place; a session that appears or grows in between is
    /// reported by no event. Watching must therefore not trust anything looked at before the
    /// watches were in place: the first request after it lists and versions again.
    #[test]
    fn nothing_looked_at_before_the_watches_are_in_place_is_trusted_after() {
        let (dir, fs) = fs_with(&[("a", "one")]);
        let fs = Arc::new(fs);
        // As the mount opens: every store listed, and (a warm-up started early) versioned.
        assert_eq!(fs.sessions().len(), 1);
        fs.start_warm_up().unwrap().join().unwrap();
        // Before the watches exist: a new session, and an append to the old one.
        std::fs::write(dir.path().join("b"), "two").unwrap();
        std::fs::write(dir.path().join("a"), "one, then more").unwrap();
        let _watching = fs.watch();
        // The mount's first requests, well inside TTL of the listing and the checks above.
        let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
        let names: Vec<String> = fs
            .readdir(pi)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["a", "b"]);
        let t = String::from_utf8(fs.read_path("pi/a/transcript.md").unwrap()).unwrap();
        assert!(t.contains("one, then more"), "{t}");
    }

    /// A session's `costWithSubagents` holds the top-level children it links, their own
    /// children in turn, each once (a cycle of links stops), and follows a child's change.
    #[test]
    fn linked_children_count_in_the_cost_with_subagents() {
        let (dir, fs) = fs_with(&[
            ("a", "link:b\nusd:1"),
            ("b", "link:c\nlink:c\nusd:10"),
            ("c", "link:a\nusd:100"),
            ("d", "usd:1000"),
        ]);
        let total = |name: &str| -> serde_json::Value {
            let meta = fs.read_path(&format!("pi/{name}/meta.json")).unwrap();
            let v: serde_json::Value = serde_json::from_slice(&meta).unwrap();
            v["costWithSubagents"]["totalUsd"].clone()
        };
        assert_eq!(total("a"), 111.0);
        assert_eq!(total("b"), 110.0 + 1.0, "b links c, which links a");
        assert_eq!(total("d"), serde_json::Value::Null, "d spawned nothing");
        let own = fs.read_path("pi/a/meta.json").unwrap();
        let own: serde_json::Value = serde_json::from_slice(&own).unwrap();
        assert_eq!(own["cost"]["totalUsd"], 1.0);

        put(
            &dir.path().join("c"),
            "link:a\nusd:200",
            SystemTime::now() + Duration::from_secs(5),
        );
        std::thread::sleep(TTL + Duration::from_millis(100));
        assert_eq!(total("a"), 211.0, "a's meta.json follows its child c");
    }

    /// Write `text` to `p` and give it the mtime `when`.
    fn put(p: &std::path::Path, text: &str, when: SystemTime) {
        std::fs::write(p, text).unwrap();
        let f = std::fs::File::options().write(true).open(p).unwrap();
        f.set_modified(when).unwrap();
    }

    /// [`fs_with`], the store's directory also its root (so the watches reach it), and a
    /// count of its listings.
    fn rooted_fs_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Arc<Fs>, Arc<AtomicU64>) {
        let dir = tempfile::tempdir().unwrap();
        for (n, t) in files {
            std::fs::write(dir.path().join(n), t).unwrap();
        }
        let lists = Arc::new(AtomicU64::new(0));
        let root = crate::stores::Root::new(Agent::Pi, dir.path(), "test");
        let store = RootedStore {
            inner: FakeStore {
                base: crate::stores::Base::new(Agent::Pi, vec![root]),
                dir: dir.path().to_path_buf(),
            },
            lists: lists.clone(),
        };
        let fs = Arc::new(Fs::new(vec![Box::new(store)], Options::default()));
        (dir, fs, lists)
    }

    /// [`FakeStore`] under a root the watches can reach, counting its listings.
    struct RootedStore {
        inner: FakeStore,
        lists: Arc<AtomicU64>,
    }

    impl Store for RootedStore {
        fn base(&self) -> &crate::stores::Base {
            &self.inner.base
        }
        fn list(&self) -> Vec<Listed> {
            self.lists.fetch_add(1, Ordering::SeqCst);
            self.inner.list()
        }
        fn load(&self, l: &Listed) -> Session {
            self.inner.load(l)
        }
    }

    /// With every root of a store watched, its listing is trusted past [`TTL`]: a cold
    /// `ls` on a mount that has sat idle does not list the store again. An event that may
    /// change the listing, and the slow poll, do.
    #[test]
    fn a_watched_store_is_listed_again_on_events_not_on_age() {
        let (dir, fs, lists) = rooted_fs_with(&[("a", "one")]);
        let _watching = fs.watch();
        let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
        let names = |fs: &Arc<Fs>| -> Vec<String> {
            fs.readdir(pi)
                .unwrap()
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        };
        assert_eq!(names(&fs), ["a"]);
        let listed = lists.load(Ordering::SeqCst);
        std::thread::sleep(TTL + Duration::from_millis(50));
        assert_eq!(names(&fs), ["a"]);
        assert_eq!(
            lists.load(Ordering::SeqCst),
            listed,
            "listed again for its age"
        );

        let b = dir.path().join("b");
        std::fs::write(&b, "two").unwrap();
        fs.changes_for(&[b], true);
        assert_eq!(lists.load(Ordering::SeqCst), listed + 1);
        assert_eq!(names(&fs), ["a", "b"]);
        fs.poll_changes();
        assert_eq!(lists.load(Ordering::SeqCst), listed + 2);
    }

    /// Without watches the mount polls every [`POLL`], and a listing keeps its [`TTL`]
    /// there: a poll inside it lists nothing again.
    #[test]
    fn an_unwatched_store_is_listed_again_by_age_not_by_every_poll() {
        let (_dir, fs, lists) = rooted_fs_with(&[("a", "one")]);
        let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
        fs.readdir(pi).unwrap();
        let listed = lists.load(Ordering::SeqCst);
        fs.poll_changes();
        assert_eq!(lists.load(Ordering::SeqCst), listed);
        std::thread::sleep(TTL + Duration::from_millis(50));
        fs.poll_changes();
        assert_eq!(lists.load(Ordering::SeqCst), listed + 1);
    }

    /// With its store watched, a session's check stands past [`TTL`] (an idle mount's cold
    /// `ls` costs no `stat` per session), until an event reports a change to its files:
    /// then it is checked again at its next use, also when the kernel had not seen it yet
    /// (versioned by the warm-up only), and after the slow poll.
    #[test]
    fn a_watched_session_is_checked_again_on_events_not_on_age() {
        let (dir, fs, _) = rooted_fs_with(&[]);
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let t1 = t0 + Duration::from_secs(60);
        put(&a, "one", t0);
        put(&b, "uno", t0);
        let _watching = fs.watch();
        fs.start_warm_up().unwrap().join().unwrap();
        let text = |s: &str| {
            let bytes = fs.read_path(&format!("pi/{s}/messages.jsonl")).unwrap();
            String::from_utf8(bytes).unwrap()
        };
        assert!(text("b").contains("uno"));
        std::thread::sleep(TTL + Duration::from_millis(50));
        put(&a, "one two", t1);
        put(&b, "uno dos", t1);
        // An event for `a`, which the kernel has not seen yet; none for `b`.
        fs.changes_for(std::slice::from_ref(&a), false);
        let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
        let mtimes = || -> Vec<(String, SystemTime)> {
            let listed = fs.readdir(pi).unwrap().into_iter();
            listed.map(|(n, attr)| (n, attr.mtime)).collect()
        };
        assert_eq!(mtimes(), [("a".to_string(), t1), ("b".to_string(), t0)]);
        assert!(!text("b").contains("dos"), "{}", text("b"));
        fs.poll_changes();
        assert_eq!(mtimes(), [("a".to_string(), t1), ("b".to_string(), t1)]);
        assert!(text("b").contains("uno dos"), "{}", text("b"));
    }

    /// The agent directory's kept listing goes with a new listing of the store: a session
    /// that appears or goes shows at the next `ls`, with the inodes the others had.
    #[test]
    fn a_kept_agent_listing_follows_sessions_that_come_and_go() {
        let (dir, fs, _) = rooted_fs_with(&[]);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        put(&dir.path().join("a"), "one", t0);
        put(&dir.path().join("b"), "uno", t0);
        let _watching = fs.watch();
        fs.start_warm_up().unwrap().join().unwrap();
        let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
        let names = || -> Vec<(String, u64)> {
            let listed = fs.readdir(pi).unwrap().into_iter();
            listed.map(|(n, attr)| (n, attr.ino)).collect()
        };
        let before = names();
        assert_eq!(
            before.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        std::fs::remove_file(dir.path().join("a")).unwrap();
        fs.changes_for(&[dir.path().join("a")], false);
        assert_eq!(names(), [before[1].clone()]);
        put(&dir.path().join("c"), "eins", t0);
        fs.changes_for(&[dir.path().join("c")], false);
        let after = names();
        assert_eq!(
            after.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["b", "c"]
        );
        assert_eq!(after[0].1, before[1].1, "b keeps its inode");
    }

    /// A database given as a root itself (agsh's, `OPENCODE_DB`): its sessions' sources are
    /// the database and its `-wal`, both watched through their directory.
    struct DbRootStore {
        base: crate::stores::Base,
        db: PathBuf,
    }

    impl Store for DbRootStore {
        fn base(&self) -> &crate::stores::Base {
            &self.base
        }
        fn list(&self) -> Vec<Listed> {
            let mut l = Listed::file("a", self.db.clone(), 0);
            l.sources
                .push(crate::stores::sqlite::companion(&self.db, "-wal"));
            vec![l]
        }
        fn load(&self, l: &Listed) -> Session {
            let mut s = Session::new(Agent::Agsh, l.id.clone());
            s.messages.push(Message {
                role: Role::User,
                content: std::fs::read_to_string(&self.db).unwrap_or_default(),
                ..Default::default()
            });
            s
        }
    }

    /// A session whose sources are a database root and its `-wal` is trusted like one under
    /// a watched directory: a write nobody reported leaves its check standing, and the
    /// event for the `-wal` moves it.
    #[test]
    fn a_database_root_and_its_wal_are_watched_sources() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sessions.db");
        let wal = crate::stores::sqlite::companion(&db, "-wal");
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        put(&db, "one", t0);
        put(&wal, "", t0);
        let root = crate::stores::Root::new(Agent::Agsh, &db, "test");
        let store = DbRootStore {
            base: crate::stores::Base::new(Agent::Agsh, vec![root]),
            db: db.clone(),
        };
        let fs = Arc::new(Fs::new(vec![Box::new(store)], Options::default()));
        let _watching = fs.watch();
        fs.start_warm_up().unwrap().join().unwrap();
        std::thread::sleep(TTL + Duration::from_millis(50));
        put(&wal, "frames", t0 + Duration::from_secs(60));
        let agsh = fs.lookup(ROOT_INO, "agsh").unwrap().ino;
        let mtime = || fs.readdir(agsh).unwrap()[0].1.mtime;
        assert_eq!(mtime(), t0);
        fs.changes_for(std::slice::from_ref(&wal), false);
        assert_eq!(mtime(), t0 + Duration::from_secs(60));
    }

    #[test]
    fn sizes_match_reads_and_inodes_are_stable() {
        let (_d, fs) = fs_with(&[("a", "hello"), ("b", "world")]);
        let root = fs.readdir(ROOT_INO).unwrap();
        assert_eq!(root.len(), 1);
        assert_eq!(root[0].0, "pi");
        let sessions = fs.readdir(root[0].1.ino).unwrap();
        assert_eq!(sessions.len(), 2);
        let files = fs.readdir(sessions[0].1.ino).unwrap();
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"transcript.md") && names.contains(&"diff"));
        for (_, a) in files.iter().filter(|(_, a)| a.kind == Kind::File) {
            let data = fs.read_ino(a.ino, 0, u32::MAX).unwrap();
            assert_eq!(data.len() as u64, a.size);
        }
        let again = fs.lookup(sessions[0].1.ino, "meta.json").unwrap();
        assert_eq!(
            Some(again.ino),
            files
                .iter()
                .find(|(n, _)| n == "meta.json")
                .map(|(_, a)| a.ino)
        );
    }

    /// What a listing pushes: the files it just sent, no directory, nothing over the size
    /// limit, each with the bytes a read of its inode gives.
    #[test]
    fn a_listing_pushes_its_small_files_with_their_inodes() {
        let (_d, fs) = fs_with(&[("a", "hello")]);
        let dir = fs.resolve("pi/a").unwrap().ino;
        let listed = fs.readdir(dir).unwrap();
        let name_of = |ino: u64| {
            listed
                .iter()
                .find(|(_, a)| a.ino == ino)
                .map(|(n, _)| n.as_str())
                .unwrap()
        };
        let pushed = fs.pushable(dir, &listed, u64::MAX);
        let mut names: Vec<&str> = pushed.iter().map(|(ino, _)| name_of(*ino)).collect();
        names.sort();
        assert_eq!(names, ["messages.jsonl", "meta.json", "transcript.md"]);
        for (ino, bytes) in &pushed {
            assert_eq!(**bytes, fs.read_ino(*ino, 0, u32::MAX).unwrap());
        }
        for name in names {
            let size = listed.iter().find(|(n, _)| n == name).unwrap().1.size;
            let under = fs.pushable(dir, &listed, size - 1);
            assert!(under
                .iter()
                .all(|(ino, b)| name_of(*ino) != name && b.len() < size as usize));
            let at = fs.pushable(dir, &listed, size);
            assert!(at.iter().any(|(ino, _)| name_of(*ino) == name));
        }
        // A directory listed by its own inode pushes nothing for another's listing.
        assert!(fs.pushable(ROOT_INO, &listed, u64::MAX).is_empty());
    }

    /// What a READ of a lost file pushes: the other files of its directory the kernel has
    /// inodes for, with the bytes a read of each gives; never the file itself.
    #[test]
    fn a_read_pushes_the_files_beside_it() {
        let (d, fs) = fs_with(&[("a", "hello")]);
        let dir = fs.resolve("pi/a").unwrap().ino;
        let listed = fs.readdir(dir).unwrap();
        let ino_of = |name: &str| listed.iter().find(|(n, _)| n == name).unwrap().1.ino;
        let transcript = ino_of("transcript.md");
        let pushed = fs.pushable_beside(transcript, u64::MAX);
        let mut inos: Vec<u64> = pushed.iter().map(|(ino, _)| *ino).collect();
        inos.sort();
        let mut want = vec![ino_of("messages.jsonl"), ino_of("meta.json")];
        want.sort();
        assert_eq!(inos, want);
        for (ino, bytes) in &pushed {
            assert_eq!(**bytes, fs.read_ino(*ino, 0, u32::MAX).unwrap());
        }
        let meta = listed.iter().find(|(n, _)| n == "meta.json").unwrap().1;
        assert!(fs
            .pushable_beside(transcript, meta.size - 1)
            .iter()
            .all(|(ino, _)| *ino != meta.ino));
        // Directories and the root push nothing.
        assert!(fs.pushable_beside(dir, u64::MAX).is_empty());
        assert!(fs.pushable_beside(ROOT_INO, u64::MAX).is_empty());
        // A version the kernel has not been told about yet pushes nothing: the sizes it
        // holds are the old version's.
        std::fs::write(d.path().join("a"), "hello and a longer reply").unwrap();
        std::thread::sleep(TTL + Duration::from_millis(50));
        fs.read_ino(transcript, 0, u32::MAX).unwrap();
        assert!(fs.pushable_beside(transcript, u64::MAX).is_empty());
        assert!(fs.poll_changes().inodes.contains(&transcript));
        assert_eq!(fs.pushable_beside(transcript, u64::MAX).len(), 2);
    }

    #[test]
    fn files_beside_a_read_are_due_once_per_directory_a_second() {
        let (_d, fs) = fs_with(&[("a", "hello"), ("b", "world")]);
        let file = |path: &str| fs.resolve(path).unwrap().ino;
        let (a_meta, a_transcript) = (file("pi/a/meta.json"), file("pi/a/transcript.md"));
        assert!(fs.beside_due(a_meta));
        // The same directory, through any of its files, waits; another session does not.
        assert!(!fs.beside_due(a_transcript));
        assert!(!fs.beside_due(a_meta));
        assert!(fs.beside_due(file("pi/b/meta.json")));
        // Directories and the root have no files beside them.
        assert!(!fs.beside_due(file("pi/a")));
        assert!(!fs.beside_due(ROOT_INO));
        std::thread::sleep(BESIDE_GAP + Duration::from_millis(20));
        assert!(fs.beside_due(a_transcript));
    }

    #[test]
    fn diff_dir_lists_nothing_and_renders_on_lookup() {
        let (_d, fs) = fs_with(&[("a", "hello"), ("b", "world")]);
        let diff = fs.resolve("pi/a/diff").unwrap();
        assert!(fs.readdir(diff.ino).unwrap().is_empty());
        let pi = fs.lookup(diff.ino, "pi").unwrap();
        assert!(fs.readdir(pi.ino).unwrap().is_empty());
        assert!(fs.lookup(pi.ino, "b.diff").is_ok());
        assert_eq!(fs.lookup(pi.ino, "zzz.diff"), Err(FsError::NotFound));
    }

    /// Every session whose id contains the query.
    struct IdSearcher;

    impl Searcher for IdSearcher {
        fn sessions(
            &self,
            fs: &Fs,
            query: &str,
            limit: usize,
        ) -> std::result::Result<Vec<SessionKey>, String> {
            let mut v: Vec<SessionKey> = fs
                .sessions()
                .into_iter()
                .filter(|k| k.name.contains(query))
                .collect();
            v.truncate(limit);
            Ok(v)
        }
    }

    #[test]
    fn search_dir_lists_nothing_links_matches_and_forgets_old_queries() {
        let (_d, fs) = fs_with(&[("alpha", "x"), ("beta", "y")]);
        assert!(
            fs.lookup(ROOT_INO, SEARCH_DIR).is_err(),
            "no searcher, no search/"
        );
        fs.set_searcher(Box::new(IdSearcher));
        let root: Vec<String> = fs
            .readdir(ROOT_INO)
            .unwrap()
            .into_iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(root, vec!["pi", "search"]);
        let search = fs.lookup(ROOT_INO, SEARCH_DIR).unwrap();
        assert!(fs.readdir(search.ino).unwrap().is_empty());
        let q = fs.lookup(search.ino, "alp").unwrap();
        assert_eq!(q.kind, Kind::Dir);
        let links = fs.readdir(q.ino).unwrap();
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].0, "pi:alpha");
        assert_eq!(fs.readlink(links[0].1.ino).unwrap(), "../../pi/alpha");
        assert_eq!(
            fs.resolve("search/alp/pi:alpha").unwrap().kind,
            Kind::Symlink
        );
        assert_eq!(fs.resolve("search/alp/pi:beta"), Err(FsError::NotFound));
        assert_eq!(fs.resolve("search/.gitignore"), Err(FsError::NotFound));
        // Many queries: the table stays bounded and the oldest query is forgotten.
        let permanent = fs.state().nodes.len();
        for i in 0..(3 * SEARCH_QUERIES) {
            let q = fs.lookup(search.ino, &format!("a{i}")).unwrap();
            fs.readdir(q.ino).unwrap();
        }
        assert!(fs.state().search.nodes.len() <= 2 * SEARCH_QUERIES);
        assert_eq!(
            fs.state().nodes.len(),
            permanent,
            "no permanent inode per query"
        );
        assert_eq!(fs.getattr(q.ino), Err(FsError::NotFound));
        // Looked up again, it works again.
        assert_eq!(
            fs.resolve("search/alp/pi:alpha").unwrap().kind,
            Kind::Symlink
        );
    }

    #[test]
    fn diff_files_are_bounded_and_work_again_when_looked_up_again() {
        let names: Vec<String> = (0..40).map(|i| format!("s{i:02}")).collect();
        let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "text")).collect();
        let (_d, fs) = fs_with(&files);
        let first = fs.resolve("pi/s00/diff/pi/s01.diff").unwrap();
        let text = fs.read_ino(first.ino, 0, 4096).unwrap();
        let permanent = fs.state().nodes.len();
        // 40 × 40 pairs, more than DIFF_FILES.
        for a in &names {
            for b in &names {
                let f = fs.resolve(&format!("pi/{a}/diff/pi/{b}.diff")).unwrap();
                assert!(fs.read_ino(f.ino, 0, 10).is_ok());
            }
        }
        const { assert!(40 * 40 > DIFF_FILES) };
        assert!(fs.state().diffs.nodes.len() <= DIFF_FILES);
        // Per session: its directory, `diff/` and `diff/pi/`.
        assert!(
            fs.state().nodes.len() <= permanent + 40 * 3,
            "no permanent inode per pair"
        );
        assert!(fs.cache.stats().entries <= DIFF_FILES + 40 * 4);
        assert_eq!(fs.getattr(first.ino), Err(FsError::NotFound));
        let again = fs.resolve("pi/s00/diff/pi/s01.diff").unwrap();
        assert_eq!(fs.read_ino(again.ino, 0, 4096).unwrap(), text);
    }

    #[test]
    fn a_panicking_store_costs_a_warning_not_the_tree() {
        let (_d, fs) = fs_with(&[("a", "panic"), ("b", "fine")]);
        let meta = fs.read_path("pi/a/meta.json").unwrap();
        assert!(String::from_utf8_lossy(&meta).contains("internal error"));
        assert!(fs.read_path("pi/b/transcript.md").is_ok());
    }

    /// [`FakeStore`] with its directory as its root, listing by name, counting listings.
    struct NamedStore {
        inner: FakeStore,
        lists: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Store for NamedStore {
        fn base(&self) -> &crate::stores::Base {
            &self.inner.base
        }
        /// As [`FakeStore`]'s, and a session named `fork` also reads `a`.
        fn list(&self) -> Vec<Listed> {
            self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut v = self.inner.list();
            for l in v.iter_mut().filter(|l| l.id == "fork") {
                l.sources.push(self.inner.dir.join("a"));
            }
            v
        }
        fn load(&self, l: &Listed) -> Session {
            self.inner.load(l)
        }
        fn keeps_listing(&self, l: &Listed) -> bool {
            std::fs::read_to_string(&l.path).is_ok_and(|t| t != "rename me")
        }
    }

    /// A write to a session's own file re-checks that session, and the sessions that read
    /// that file too, and lists nothing; a new file, a write the watcher cannot place, or
    /// one after which the store would list the session differently, lists the store
    /// again.
    #[test]
    fn a_write_to_one_session_lists_nothing_again() {
        let dir = tempfile::tempdir().unwrap();
        for (n, t) in [("a", "one"), ("b", "two"), ("fork", "four")] {
            std::fs::write(dir.path().join(n), t).unwrap();
        }
        let lists = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let root = crate::stores::Root::new(Agent::Pi, dir.path(), "test");
        let store = NamedStore {
            inner: FakeStore {
                base: crate::stores::Base::new(Agent::Pi, vec![root]),
                dir: dir.path().to_path_buf(),
            },
            lists: lists.clone(),
        };
        let fs = Fs::new(vec![Box::new(store)], Options::default());
        let listed = || lists.load(std::sync::atomic::Ordering::SeqCst);
        let a = fs.resolve("pi/a/transcript.md").unwrap();
        let b = fs.resolve("pi/b/transcript.md").unwrap();
        let fork = fs.resolve("pi/fork/transcript.md").unwrap();
        let before = listed();
        let lists_since = |n: usize, why: &str| assert_eq!(listed(), before + n, "{why}");

        let file_a = dir.path().join("a");
        std::fs::write(&file_a, "one and more").unwrap();
        let inv = fs.changes_for(std::slice::from_ref(&file_a), false);
        assert!(inv.inodes.contains(&a.ino), "{inv:?}");
        assert!(
            inv.inodes.contains(&fork.ino),
            "a session reading a: {inv:?}"
        );
        assert!(!inv.inodes.contains(&b.ino), "{inv:?}");
        lists_since(0, "a write to a session's own file lists the store");

        let file_c = dir.path().join("c");
        std::fs::write(&file_c, "three").unwrap();
        let inv = fs.changes_for(std::slice::from_ref(&file_c), false);
        lists_since(1, "a write to an unknown file lists the store");
        let pi = fs.resolve("pi").unwrap();
        assert_eq!(inv.entries, vec![(pi.ino, "c".to_string())]);

        std::fs::write(&file_a, "one, more and more").unwrap();
        fs.changes_for(std::slice::from_ref(&file_a), true);
        lists_since(2, "a batch with a create lists the store");

        std::fs::write(&file_a, "rename me").unwrap();
        fs.changes_for(std::slice::from_ref(&file_a), false);
        lists_since(3, "a write the store lists anew lists it");
    }

    #[test]
    fn poll_changes_names_what_the_kernel_must_forget() {
        let (d, fs) = fs_with(&[("a", "one"), ("b", "two")]);
        let t = fs.resolve("pi/a/transcript.md").unwrap();
        let pi = fs.resolve("pi").unwrap();
        assert_eq!(fs.poll_changes(), Invalidations::default());
        std::fs::write(d.path().join("a"), "one and more").unwrap();
        std::fs::write(d.path().join("c"), "three").unwrap();
        std::thread::sleep(TTL + Duration::from_millis(50));
        let inv = fs.poll_changes();
        assert!(inv.inodes.contains(&t.ino), "{inv:?}");
        assert!(inv.inodes.contains(&pi.ino));
        assert_eq!(inv.entries, vec![(pi.ino, "c".to_string())]);
        assert!(inv.gone.is_empty(), "{inv:?}");
        assert_eq!(fs.poll_changes(), Invalidations::default());
        std::fs::remove_file(d.path().join("b")).unwrap();
        std::thread::sleep(TTL + Duration::from_millis(50));
        let inv = fs.poll_changes();
        assert_eq!(inv.gone, vec![(pi.ino, "b".to_string())]);
        assert!(inv.entries.is_empty(), "{inv:?}");
    }

    #[test]
    fn a_change_is_seen_after_the_ttl() {
        let (d, fs) = fs_with(&[("a", "one")]);
        let before = fs.read_path("pi/a/messages.jsonl").unwrap();
        std::fs::write(d.path().join("a"), "one two three").unwrap();
        std::thread::sleep(TTL + Duration::from_millis(50));
        let after = fs.read_path("pi/a/messages.jsonl").unwrap();
        assert_ne!(before, after);
        assert_eq!(fs.render_count(), 2);
    }

    /// Sessions sharing one file (`id:text` lines), versioned by their own line, as a
    /// SQLite store versions a session by its own rows.
    struct SharedFileStore {
        base: crate::stores::Base,
        file: PathBuf,
    }

    impl SharedFileStore {
        fn line(&self, id: &str) -> Option<String> {
            std::fs::read_to_string(&self.file)
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{id}:")).map(str::to_string))
        }
    }

    impl Store for SharedFileStore {
        fn base(&self) -> &crate::stores::Base {
            &self.base
        }
        fn list(&self) -> Vec<Listed> {
            ["a", "b"]
                .iter()
                .map(|id| Listed::file(*id, self.file.clone(), 0))
                .collect()
        }
        fn load(&self, l: &Listed) -> Session {
            let mut s = Session::new(Agent::Pi, l.id.clone());
            s.messages.push(Message {
                role: Role::User,
                content: self.line(&l.id).unwrap_or_default(),
                ..Default::default()
            });
            s
        }
        fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
            listed
                .iter()
                .map(|l| self.line(&l.id).map(|t| t.len() as u64))
                .collect()
        }
    }

    #[test]
    fn a_store_version_rerenders_only_the_session_that_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shared");
        std::fs::write(&file, "a:one\nb:two\n").unwrap();
        let store = SharedFileStore {
            base: crate::stores::Base::new(Agent::Pi, vec![]),
            file: file.clone(),
        };
        let fs = Fs::new(vec![Box::new(store)], Options::default());
        fs.read_path("pi/a/transcript.md").unwrap();
        fs.read_path("pi/b/transcript.md").unwrap();
        assert_eq!(fs.render_count(), 2);
        assert_eq!(fs.poll_changes(), Invalidations::default());
        // The shared file changes (size and mtime) but only b's rows do.
        std::fs::write(&file, "a:one\nb:two and three\n").unwrap();
        std::thread::sleep(TTL + Duration::from_millis(50));
        let b = fs.resolve("pi/b/transcript.md").unwrap();
        let a = fs.resolve("pi/a/transcript.md").unwrap();
        // Sizes are known only by rendering: b renders again, a does not.
        assert_eq!(fs.render_count(), 3);
        let inv = fs.poll_changes();
        assert!(inv.inodes.contains(&b.ino), "{inv:?}");
        assert!(!inv.inodes.contains(&a.ino), "{inv:?}");
        fs.read_path("pi/a/transcript.md").unwrap();
        let t = fs.read_path("pi/b/transcript.md").unwrap();
        assert!(String::from_utf8_lossy(&t).contains("two and three"));
        assert_eq!(fs.render_count(), 3, "only b was rendered again");
    }
}
