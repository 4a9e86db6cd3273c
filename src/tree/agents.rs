//! Agent directories: listing each store, and the warm-up.
//!
//! Owns [`AgentState`]: the store's last listing, merged into its sessions' slots (their
//! names from [`disambiguate`]), the names that came and went since the change watcher
//! last looked, and the agent directory's entries as last listed, whose inodes it makes in
//! one write of the state ([`Fs::session_entries`]: the one batch of inodes made outside
//! `nodes`, 10,000 at a time), and the scan lock under which an agent's sessions are
//! versioned in one batch ([`Fs::check_all`], [`Fs::check_named`]; the versioning itself is
//! `versions`'). The warm-up lists every store, versions every session and numbers the
//! session directories once as the mount starts. A slot's version and mtime are written
//! by `versions` alone; nothing here renders or talks to the kernel.

use super::nodes::{disambiguate, identity, Identity, NodeKind};
use super::threads::panic_message;
use super::versions::{SessionSlot, ToVersion};
use super::{Attr, Fs, Kind, Listing, State, ROOT_INO, TTL};
use crate::cache::SessionKey;
use crate::model::Agent;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

pub(super) struct AgentState {
    pub(super) store: usize,
    pub(super) sessions: BTreeMap<String, SessionSlot>,
    pub(super) listed: Option<Instant>,
    /// A hash of the store's last listing: a listing that comes back the same changes
    /// nothing, and is not merged again (the safety net lists every store).
    pub(super) listing: Option<u64>,
    /// When the set of session names last changed: the agent directory's mtime, which
    /// tells the kernel to drop its cached listing.
    pub(super) changed: SystemTime,
    /// Names added since the change watcher last looked.
    pub(super) pending: Vec<String>,
    /// Names removed since the change watcher last looked.
    pub(super) gone: Vec<String>,
    /// The name of each session by its own file ([`Listed::path`]), so a write to that file
    /// finds its session without a look at the others ([`Fs::changes_for`]).
    pub(super) by_path: HashMap<PathBuf, String>,
    /// The sessions that also read a file besides their own, by that file (a Codex fork
    /// lists the thread it was forked from): a write to another session's file re-checks
    /// them too.
    pub(super) readers: HashMap<PathBuf, Vec<String>>,
    /// Held while the store is listed or its sessions versioned ([`Fs::refresh_agent`],
    /// [`Fs::check_all`]): a second caller waits and finds the work done instead of doing it
    /// again (the warm-up and a first `ls` race for it).
    pub(super) scan: Arc<Mutex<()>>,
    /// The agent directory's entries as last listed ([`Fs::session_entries`]), until a
    /// listing changes the sessions or a check moves one's mtime: an idle mount's first
    /// `ls` of 10,000 sessions then costs no pass over them (the warm-up made it).
    pub(super) entries: Option<(u64, Listing)>,
}

impl AgentState {
    /// The state of an agent whose store is `stores[store]`, not listed yet.
    pub(super) fn new(store: usize) -> AgentState {
        AgentState {
            store,
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
        }
    }
}

impl Fs {
    /// Every session of every agent as `(agent, directory name)`, listing stores as needed.
    pub fn sessions(&self) -> Vec<SessionKey> {
        let agents: Vec<Agent> = self.state().agents.keys().copied().collect();
        self.sessions_of(&agents)
    }

    /// Every session of `agents`, listing their stores as needed.
    pub fn sessions_of(&self, agents: &[Agent]) -> Vec<SessionKey> {
        let mut out = Vec::new();
        for &a in agents {
            self.refresh_agent(a, false);
            let st = self.state();
            out.extend(st.agents[&a].sessions.keys().map(|n| SessionKey {
                agent: a,
                name: n.as_str().into(),
            }));
        }
        out
    }

    /// What `agent`'s store listed last, as the tree keeps it (no new listing).
    pub fn listed(&self, agent: Agent) -> Vec<crate::stores::Listed> {
        let st = self.state();
        st.agents
            .get(&agent)
            .map(|a| a.sessions.values().map(|s| s.listed.clone()).collect())
            .unwrap_or_default()
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

    pub(super) fn session_exists(&self, key: &SessionKey) -> bool {
        let st = self.state();
        st.agents
            .get(&key.agent)
            .is_some_and(|a| a.sessions.contains_key(&*key.name))
    }

    pub(super) fn scan_lock(&self, agent: Agent) -> Option<Arc<Mutex<()>>> {
        self.state().agents.get(&agent).map(|a| a.scan.clone())
    }

    /// Version every session of `agent` whose check is out of date (see
    /// [`Fs::version_batch`]).
    pub(super) fn check_all(&self, agent: Agent) {
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
    pub(super) fn check_named(&self, agent: Agent, names: &[&str]) {
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
    pub(super) fn session_entries(&self, dir: u64, agent: Agent) -> Listing {
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
                        forks: false,
                        fork_gen: 0,
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
            // A fork's `parent.diff` comes or goes with its parent's listing: its version
            // moves, and the next check (the change watcher's, a reader's) says so.
            let now = Instant::now();
            for s in a.sessions.values_mut().filter(|s| s.forks) {
                s.fork_gen += 1;
                s.checked = now.checked_sub(TTL * 2).unwrap_or(s.checked);
                s.stale_at = Some(now);
            }
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
}
