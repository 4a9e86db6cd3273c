//! Loading a session and rendering it into the cache.
//!
//! A file or a shape at the session's current version comes from the cache, or from one
//! render under the session's render lock (concurrent readers wait for it): parse
//! ([`Fs::load`], a panicking store costing a warning), mark what a fork copied from its
//! parent and what linked children cost, render, file the bundle in the cache. Owns the
//! render count and the cache's fill; the version to file under comes from `versions`
//! ([`Fs::check_session`], [`Fs::depend_on`]). It makes no inode and tells the kernel
//! nothing.

use super::threads::panic_message;
use super::{Fs, FsError, Result};
use crate::cache::{Bytes, SessionKey, Shape};
use crate::model::{Cost, Session};
use crate::render::{self, Bundle, Node};
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Fs {
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
        let (bundle, version) = self.produce(key)?;
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
    pub(super) fn shape(&self, key: &SessionKey) -> Result<Arc<Shape>> {
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
        let (bundle, version) = self.produce(key)?;
        let shape = self.cache.insert(key, version, bundle, None);
        self.prefetch_after(key);
        Ok(shape)
    }

    /// A session's files at its current version: from the disk cache when it holds that
    /// version (no parse, no render), else rendered, and then queued for the disk cache. A
    /// session whose files read other sessions' sources (a fork's `parent.diff`, linked
    /// children's cost) is not kept there: its version on a new mount is known only after
    /// a render. The caller holds the session's render lock.
    pub(super) fn produce(&self, key: &SessionKey) -> Result<(Bundle, u64)> {
        let Some(disk) = self.disk.get() else {
            return self.render(key);
        };
        let (version, _) = self.check_session(key)?;
        let (sources, extra) = self.sources_and_extra(key)?;
        if !extra {
            if let Some(bundle) = disk.get(key, version, &sources, self.spill.clone()) {
                log::debug!(
                    "{}/{} version {version:016x} from disk",
                    key.agent,
                    key.name
                );
                return Ok((bundle, version));
            }
        }
        let (bundle, version) = self.render(key)?;
        if !self.sources_and_extra(key)?.1 {
            disk.put(key, version, &sources, &bundle.entries, true);
        }
        Ok((bundle, version))
    }

    /// The session's own sources, and whether its version also depends on other sessions'.
    pub(super) fn sources_and_extra(&self, key: &SessionKey) -> Result<(Vec<PathBuf>, bool)> {
        let st = self.state();
        let s = st
            .agents
            .get(&key.agent)
            .and_then(|a| a.sessions.get(&*key.name))
            .ok_or(FsError::NotFound)?;
        Ok((s.listed.sources.clone(), !s.extra.is_empty() || s.forks))
    }

    /// Parse and render a session. A reader's caller holds the session's render lock, so
    /// concurrent readers wait for one render; the idle disk writer does not (`filler`).
    /// Returns the bundle and the version to file it under (a fork's first render adds its
    /// parent's sources to the version).
    pub(super) fn render(&self, key: &SessionKey) -> Result<(Bundle, u64)> {
        let mut version = self.check_session(key)?.0;
        let mut session = self.load(key)?;
        let forks = session.forked_from.is_some();
        let parent = self.fork_parent(key, &mut session);
        let mut depends: Vec<PathBuf> = parent.iter().flat_map(|(_, s)| s.clone()).collect();
        depends.extend(self.linked_children(key, &mut session));
        if forks || !depends.is_empty() {
            version = self.depend_on(key, &depends, forks).unwrap_or(version);
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
        let shared = crate::model::shared_prefix(&session.messages, &parent.messages);
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
}
