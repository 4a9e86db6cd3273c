//! The virtual tree: names, inodes, attributes and reads, with no FUSE types.
//!
//! [`Fs`] is the whole filesystem as plain method calls (`lookup`, `getattr`, `readdir`,
//! `readlink`, `read_ino`), so tests drive it without mounting and `fuse/` stays a thin
//! adapter.
//!
//! Layout: `/<agent>/<session>/…` where everything under a session directory comes from one
//! rendered [`crate::render::Bundle`], plus the virtual `diff/` directory that lists nothing
//! and renders `diff/<agent>/<session>.diff` on lookup, and, when a [`Searcher`] is set (the
//! mount sets one), the root's `search/` directory: it lists nothing either, and looking up
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
//!
//! One module per concern; this one holds only [`Fs`] (its fields and constructor), the
//! state behind its lock (`State`, a part per module) with the two calls that reach every
//! inode range (`kind_of`, `ino_for`), the types its callers see and the constants of the
//! tree as a whole:
//! - `requests`: the kernel's questions (`lookup`, `getattr`, `readdir`, `readlink`, reads),
//!   each answered by the kind of node asked about;
//! - `nodes`: the inode table, the node kinds, the state lock, directory names for sessions;
//! - `agents`: listing each agent's store, the warm-up, an agent directory's entries;
//! - `versions`: a session's version and mtime (fingerprints, batched `stat`s) and when a
//!   check may stand (freshness);
//! - `changes`: the change watcher's side, what the kernel must forget after a change;
//! - `rendering`: loading and rendering a session into the cache, forks and linked children;
//! - `ahead`: render-ahead of a directory walk;
//! - `diff_nodes`, `search_nodes`: the `diff/` and `search/` nodes, each a bounded set of
//!   inodes in a range of its own;
//! - `push`: which cached files may be pushed into the kernel's page cache;
//! - `threads`: cores, idle policy and panic messages for the threads the tree starts.
//!
//! The modules share [`Fs`]'s fields and the state behind its lock; each module's doc says
//! which part it owns (writes) and what it leaves to the others. They import one another
//! in one direction only: `nodes` and `threads` at the bottom; `versions`, `diff_nodes`,
//! `search_nodes`, `push`, `rendering` and `ahead` on them; `agents` and `changes` on
//! `versions`; `requests` on the node modules.

mod agents;
mod ahead;
mod changes;
mod diff_nodes;
mod filler;
mod nodes;
mod push;
mod rendering;
mod requests;
mod search_nodes;
#[cfg(test)]
mod tests;
mod threads;
mod versions;

pub use ahead::PREFETCH_AHEAD;
pub use changes::{Invalidations, Watching};
pub use diff_nodes::DIFF_FILES;
pub use nodes::DIFF_DIR;
pub use push::BESIDE_GAP;
pub use search_nodes::{Searcher, SEARCH_DIR, SEARCH_QUERIES, SEARCH_RESULTS, SEARCH_TTL};
pub use threads::{cores, panic_message, set_idle_policy};

use crate::cache::{Cache, EntryKind, SessionKey};
use crate::model::Agent;
use crate::spill::SpillTo;
use crate::stores::Store;
use agents::AgentState;
use ahead::Prefetch;
use diff_nodes::{diff_key, DiffNodes};
use nodes::{NodeKind, DIFF_INO_BASE, SEARCH_INO_BASE};
use search_nodes::SearchNodes;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::sync::{RwLockReadGuard, RwLockWriteGuard};
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

/// How often the change watcher looks at the sessions the kernel knows.
pub const POLL: Duration = Duration::from_millis(500);

pub const ROOT_INO: u64 = 1;

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

/// A directory's entries, shared by the kernel's readers of the listing.
pub type Listing = Arc<Vec<(String, Attr)>>;

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
    /// Rendered sessions kept between mounts ([`crate::diskcache`]); a mount sets it.
    disk: std::sync::OnceLock<Arc<crate::diskcache::DiskCache>>,
}

/// Everything behind [`Fs`]'s lock, a part per module: the inode table (`nodes`), the
/// `diff/` and `search/` ranges (`diff_nodes`, `search_nodes`), and each agent's listing
/// and sessions (`agents`; their versions are written by `versions`).
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

impl State {
    /// The table with the root alone, over `agents`.
    fn new(agents: BTreeMap<Agent, AgentState>) -> State {
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
        state
    }
}

impl Fs {
    pub fn new(stores: Vec<Box<dyn Store>>, opts: Options) -> Fs {
        let mut agents = BTreeMap::new();
        for (i, s) in stores.iter().enumerate() {
            agents.entry(s.agent()).or_insert(AgentState::new(i));
        }
        Fs {
            stores,
            cache: Cache::new(opts.cache_bytes),
            spill: opts
                .spill_dir
                .map(|dir| SpillTo::new(dir, (opts.cache_bytes / 16).max(1 << 20))),
            state: RwLock::new(State::new(agents)),
            started: SystemTime::now(),
            renders: AtomicU64::new(0),
            prefetch: Mutex::new(None),
            prefetch_idle: Default::default(),
            searcher: std::sync::OnceLock::new(),
            watched_from: std::sync::OnceLock::new(),
            watched_stores: std::sync::OnceLock::new(),
            early_watch: Mutex::new(None),
            beside: Mutex::new(HashMap::new()),
            disk: std::sync::OnceLock::new(),
        }
    }

    /// Serve unchanged sessions from `disk` and keep every render there (see
    /// [`crate::diskcache`]). Set once, before the first request.
    pub fn use_disk_cache(&self, disk: Arc<crate::diskcache::DiskCache>) {
        let _ = self.disk.set(disk);
    }

    /// The disk cache's counters, when there is one.
    pub fn disk_stats(&self) -> Option<crate::diskcache::DiskStats> {
        self.disk.get().map(|d| d.stats())
    }

    /// Wait for the disk cache's queued writes (at unmount: the next mount finds them).
    pub fn flush_disk_cache(&self) {
        if let Some(d) = self.disk.get() {
            d.flush();
        }
    }

    /// The stores the tree shows, in [`Fs::new`]'s order.
    pub fn stores(&self) -> &[Box<dyn Store>] {
        &self.stores
    }

    /// The rendered-file cache's counters.
    pub fn cache_stats(&self) -> crate::cache::Stats {
        self.cache.stats()
    }

    /// Sessions rendered since start (for tests and `doctor`).
    pub fn render_count(&self) -> u64 {
        self.renders.load(Ordering::Relaxed)
    }

    /// Whether the kernel should hold this node only briefly: `search/` results change with
    /// every session, and their inodes are forgotten (see `SearchNodes`).
    pub fn is_volatile(&self, ino: u64) -> bool {
        ino >= DIFF_INO_BASE
    }

    fn state(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn state_mut(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The node inode `ino` names, whichever range it is in.
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

    /// The inode of `parent/name`, made if new, in the range of its kind. Making a diff
    /// file's may forget the least recently looked up one, and its cached bytes with it.
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
}
