//! The change watcher's side of the tree: watches, polls, and what the kernel must forget.
//!
//! Owns the watch epoch (when the watches were in place, which stores they cover, the
//! watches made before the mount took them) and [`Invalidations`]: after events
//! ([`Fs::changes_for`]) or a poll ([`Fs::poll_changes`]) it marks the sessions a change may
//! have moved as stale, re-checks those the kernel has seen, and collects their inodes and
//! the names that came or went. It versions through `versions` and lists through
//! `agents`; it never renders, and is never called from a request handler.

use super::nodes::{NodeKind, DIFF_INO_BASE};
use super::versions::SessionSlot;
use super::Fs;
use crate::cache::{EntryKind, SessionKey};
use crate::model::Agent;
use crate::stores::Store;
use crate::watch::watched_dir;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the kernel must forget after a change.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Invalidations {
    /// Attributes and cached pages (or listings) of these inodes.
    pub inodes: Vec<u64>,
    /// Attributes only of these files of a session's bundle. The kernel drops their pages
    /// itself when it learns their new size or mtime (`FUSE_AUTO_INVAL_DATA`; every version
    /// change moves a session's mtime, see `versions`), so the size it then holds is the
    /// one of the bytes it reads next. Pages dropped apart from a new size let a reader
    /// pair the new version's bytes with the old size.
    pub files: Vec<u64>,
    /// These names in these directories: new sessions.
    pub entries: Vec<(u64, String)>,
    /// These names in these directories: removed sessions. A listing under way may still
    /// hand the kernel such a name after it was told to forget it, so the mount sends these
    /// again later, as it does inodes.
    pub gone: Vec<(u64, String)>,
}

/// The change watches of a mount and the receiving end of their events.
pub struct Watching {
    pub watcher: notify::Result<crate::watch::Watcher>,
    pub events: std::sync::mpsc::Receiver<crate::watch::Wake>,
}

impl Fs {
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
    /// agents whose roots hold a changed path, or that watch it
    /// ([`Store::watched_files`]), are re-listed, and only the sessions the
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
                    let store = &self.stores[a.store];
                    let under = |c: &PathBuf| {
                        let roots = store.roots().iter();
                        roots
                            .into_iter()
                            .any(|r| c.starts_with(watched_dir(&r.path)))
                    };
                    changed
                        .iter()
                        .any(|c| under(c) || is_watched_file(store.as_ref(), c))
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
            if is_watched_file(store.as_ref(), c) {
                // A file beside the roots is no session's own: the listing says who reads it.
                return None;
            }
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
                // Which inodes are files is read from the session's last shape: a path
                // keeps its kind from one version to the next.
                let shape = self.cache.recorded_shape(key);
                for &ino in st.session_inos.get(key).into_iter().flatten() {
                    let node = (ino < DIFF_INO_BASE)
                        .then(|| st.nodes.get(ino.checked_sub(1)? as usize))
                        .flatten();
                    let file = match (node, &shape) {
                        (Some(NodeKind::Inner(_, path)), Some(shape)) => {
                            matches!(shape.entries.get(path), Some((EntryKind::File, _)))
                        }
                        _ => false,
                    };
                    if file {
                        out.files.push(ino);
                    } else {
                        out.inodes.push(ino);
                    }
                }
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
        out.files.sort_unstable();
        out.files.dedup();
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
                !roots.is_empty()
                    && roots.iter().all(|r| w.covers(&r.path))
                    && s.watched_files().iter().all(|f| w.covers(f))
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

    /// Every store root, for the change watcher.
    pub fn watch_roots(&self) -> Vec<PathBuf> {
        self.stores
            .iter()
            .flat_map(|s| {
                let roots = s.roots().iter().map(|r| r.path.clone());
                roots.chain(s.watched_files().iter().cloned())
            })
            .collect()
    }
}

/// Whether `changed` is one of `store`'s [`Store::watched_files`] or its journal.
pub(super) fn is_watched_file(store: &dyn Store, changed: &Path) -> bool {
    store
        .watched_files()
        .iter()
        .any(|f| changed == f || crate::stores::sqlite::is_journal_of(changed, f))
}
