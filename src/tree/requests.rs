//! The kernel's questions: `lookup`, `getattr`, `readdir`, `readlink` and reads, by inode
//! or by path.
//!
//! Each is answered by the kind of node asked about ([`NodeKind`]): the root and agent
//! directories from `agents`, a session's directories and files from its rendered shape
//! (`rendering`), `diff/` and `search/` nodes from their own modules. This module owns no
//! state: it makes inodes only through `nodes` ([`Fs::ino_for`],
//! [`State::session_dir_inos`]), never lists a store, versions a session or renders one
//! itself, and never pushes anything to the kernel.

use super::nodes::{join, NodeKind, DIFF_DIR};
use super::search_nodes::SEARCH_DIR;
use super::{Attr, Fs, FsError, Kind, Listing, Result, ROOT_INO};
use crate::cache::{Bytes, EntryKind, SessionKey};
use crate::model::Agent;
use std::sync::Arc;

impl Fs {
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
}
