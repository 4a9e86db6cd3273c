//! A session's version and mtime, and when a check of them may stand.
//!
//! Owns [`SessionSlot`]'s version, mtime and the sources it depends on besides its own:
//! only this module writes them (`agents` makes a slot unversioned, and a new listing or a
//! change only marks one stale). A
//! version is the store's own ([`crate::stores::Store::versions`]) or a fingerprint of the
//! sources' sizes and mtimes, taken by a [`Stater`] that keeps the directory open, many
//! sessions at a time on every core ([`Fs::version_batch`]). Freshness: a check stands for
//! [`TTL`], or, where the change watcher covers every root of the store, until an event
//! says it may have moved ([`Fs::session_fresh`]). It never lists a store (`agents`), makes
//! an inode, renders, or decides what the kernel must forget (`changes`).

use super::threads::{cores, panic_message};
use super::{Fs, FsError, Result, TTL};
use crate::cache::SessionKey;
use crate::model::Agent;
use crate::stores::Listed;
use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

pub(super) struct SessionSlot {
    pub(super) listed: Listed,
    /// Every one of `listed.sources` lies under a root of the store (or is a database
    /// root's journal), so the watches on the roots see its changes: worked out when the
    /// listing is taken, not at every check (10,000 of them in an agent directory's `ls`).
    pub(super) under_roots: bool,
    /// Unified id of this session (with a disambiguating suffix when ids collide).
    pub(super) native_id: String,
    pub(super) version: u64,
    pub(super) mtime: SystemTime,
    pub(super) checked: Instant,
    /// Sources of other sessions this one's files depend on (a fork's parent, for
    /// `parent.diff`), learned at the first render.
    pub(super) extra: Vec<PathBuf>,
    /// The session names a parent (found or not), learned at the first render: whether
    /// `parent.diff` is there depends on whether the parent is listed, which no `stat` of
    /// `extra` tells (a parent listed after the fork's render, or gone while its files were
    /// already gone). Its version then also carries `fork_gen`.
    pub(super) forks: bool,
    /// Moved by every listing that adds or removes a session of the agent.
    pub(super) fork_gen: u64,
    /// Serialises renders of one session so concurrent readers wait for one render.
    pub(super) render_lock: Arc<Mutex<()>>,
    /// The version the kernel was last told about (see [`Fs::poll_changes`]).
    pub(super) announced: u64,
    /// Not checked by a request yet. Every inode of a session is handed out after a check,
    /// so the first check's version is what the kernel first learns (a store's own version
    /// replaces the listing's file fingerprint there without an invalidation).
    pub(super) unchecked: bool,
    /// Since when the version may have moved (a new slot, a new listing of it, a reported
    /// change): the next use checks it however recent the last check, until a check that
    /// started after this ([`Fs::session_fresh`]).
    pub(super) stale_at: Option<Instant>,
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
        let version = self.mixed(version);
        if self.stale_at.is_some_and(|t| started >= t) {
            self.stale_at = None;
        }
        if std::mem::take(&mut self.unchecked) {
            self.announced = version;
        }
        let moved = self.store(version, mtime);
        self.checked = started;
        moved
    }

    /// Store `version` and its sources' newest `mtime`, and say whether the session's mtime
    /// moved. That mtime never goes back, and moves with every change of version, by a
    /// nanosecond where the sources' did not (two writes within one tick of a coarse
    /// clock, a file put back with an older mtime): the change watcher tells the kernel to
    /// forget only a file's attributes, and the kernel drops the file's cached pages when
    /// the attributes it then gets differ in size or mtime (see `changes`), so a new
    /// version with the old sizes and mtime would leave the old bytes in place.
    /// `version` with the listing generation mixed in for a fork ([`SessionSlot::forks`]).
    pub(super) fn mixed(&self, version: u64) -> u64 {
        if self.forks {
            version ^ crate::names::fnv1a(&self.fork_gen.to_le_bytes()).rotate_left(29)
        } else {
            version
        }
    }

    fn store(&mut self, version: u64, mtime: SystemTime) -> bool {
        let mut mtime = mtime.max(self.mtime);
        if version != self.version && mtime == self.mtime {
            mtime += Duration::from_nanos(1);
        }
        self.version = version;
        let moved = self.mtime != mtime;
        self.mtime = mtime;
        moved
    }
}

/// A session to version: its name, store, listing and extra sources, copied out of the
/// state so the `stat`s run without its lock.
pub(super) type ToVersion = (String, usize, Listed, Vec<PathBuf>);

impl Fs {
    /// Make `key`'s version depend on `sources` too; returns the new version if it changed.
    pub(super) fn depend_on(
        &self,
        key: &SessionKey,
        sources: &[PathBuf],
        forks: bool,
    ) -> Option<u64> {
        let (store, listed) = {
            let st = self.state();
            let a = st.agents.get(&key.agent)?;
            let s = a.sessions.get(&*key.name)?;
            if s.extra == sources && s.forks == forks {
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
        let first = s.extra.is_empty() && !s.forks && s.announced == s.version;
        s.extra = sources.to_vec();
        s.forks = forks;
        let version = s.mixed(version);
        if first {
            s.announced = version;
        }
        let moved = s.store(version, mtime);
        s.checked = Instant::now();
        if moved {
            a.entries = None;
        }
        Some(version)
    }

    /// The session's current version, re-stating its sources when the last check is stale.
    pub(super) fn check_session(&self, key: &SessionKey) -> Result<(u64, Arc<Mutex<()>>)> {
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

    /// Version `todo`, sessions of `agent`, on every core, and store the results under one
    /// write of the state. A listing gives each session its real mtime; 10,000 `stat`s of a
    /// cold project directory in a row cost 25 ms of disk reads, split over the cores
    /// about 15. Call it holding the agent's scan lock.
    pub(super) fn version_batch(&self, agent: Agent, todo: Vec<ToVersion>) {
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

    /// Whether a listing or check that started at `at` can be trusted without looking
    /// again: younger than [`TTL`], and not older than the change watcher's watches.
    pub(super) fn fresh(&self, at: Instant) -> bool {
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
    pub(super) fn listing_watched(&self, store: usize, at: Instant) -> bool {
        let watched = self.watched_stores.get();
        watched.is_some_and(|w| w.get(store).copied().unwrap_or(false))
            && self.watched_from.get().is_some_and(|&w| at >= w)
    }

    /// Whether `s`'s last check can stand at `now`: younger than [`TTL`], or, where the
    /// watches reach every root of `store` and every source of the session lies under one
    /// (or is a database root's journal), not older than the watches, with no change
    /// reported since ([`SessionSlot::stale_at`]). An idle mount's cold `ls` then costs no
    /// `stat` per session (10,000 sessions: 40-60 ms with the store's directory cold).
    pub(super) fn session_fresh(&self, store: usize, s: &SessionSlot, now: Instant) -> bool {
        if s.stale_at.is_some() {
            return false;
        }
        if self.fresh_at(s.checked, now) {
            return true;
        }
        s.under_roots && s.extra.is_empty() && self.listing_watched(store, s.checked)
    }

    /// Whether every source of `listed` lies under a root of `store`, is the journal of a
    /// database root, or is one of the store's watched files or its journal
    /// ([`SessionSlot::under_roots`]).
    pub(super) fn under_roots(&self, store: usize, listed: &Listed) -> bool {
        let store = self.stores[store].as_ref();
        let roots = store.roots();
        let watched = |p: &PathBuf| {
            roots
                .iter()
                .any(|r| lies_under(p, &r.path) || crate::stores::sqlite::is_journal_of(p, &r.path))
                || super::changes::is_watched_file(store, p)
        };
        listed.sources.iter().all(watched)
    }

    pub(super) fn session_mtime(&self, key: &SessionKey) -> Result<SystemTime> {
        let st = self.state();
        st.agents
            .get(&key.agent)
            .and_then(|a| a.sessions.get(&*key.name))
            .map(|s| s.mtime)
            .ok_or(FsError::NotFound)
    }

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

/// `Path::starts_with` for the plain absolute paths sessfs builds, compared as bytes: an
/// idle mount's listing of 10,000 sessions asks it of every source (component by
/// component it cost 2-3 ms of that listing).
pub(super) fn lies_under(p: &Path, dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = dir.as_os_str().as_bytes();
    let dir = dir.strip_suffix(b"/").unwrap_or(dir);
    match p.as_os_str().as_bytes().strip_prefix(dir) {
        Some(rest) => rest.is_empty() || rest[0] == b'/',
        None => false,
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
pub(super) fn fingerprint<'a>(
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
pub(super) struct Stater {
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
                .custom_flags(DIR_HANDLE | libc::O_DIRECTORY)
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

/// How a directory is opened only to `fstatat` inside it: `O_PATH` (no read access needed)
/// where Linux has it, a plain read-only open elsewhere.
#[cfg(target_os = "linux")]
const DIR_HANDLE: i32 = libc::O_PATH;
#[cfg(not(target_os = "linux"))]
const DIR_HANDLE: i32 = 0;
