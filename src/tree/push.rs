//! Which cached files the mount may push into the kernel's page cache, so a walk's reads
//! of small files need no request.
//!
//! After a listing ([`Fs::pushable`]) and beside a READ of a file the kernel lost
//! ([`Fs::pushable_beside`], at most once per directory per [`BESIDE_GAP`]). Owns the
//! times of those pushes. Only bytes already cached in memory at the version the kernel
//! knows are offered: it never renders, never makes an inode and sends nothing itself
//! (`fuse/` does).

use super::nodes::DIFF_INO_BASE;
use super::nodes::{parent, NodeKind};
use super::{Attr, Fs, Kind};
use crate::cache::{Bytes, EntryKind, SessionKey};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often one directory's files may be pushed beside a READ ([`Fs::beside_due`]).
pub const BESIDE_GAP: Duration = Duration::from_secs(1);

impl Fs {
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
        // Only bytes as long as the size the listing gave: a version that moved since the
        // listing would put bytes in the page cache beside a size they do not have.
        let sizes: std::collections::HashMap<u64, u64> =
            listed.iter().map(|(_, a)| (a.ino, a.size)).collect();
        let mut pushed = self.cached_in_memory(&key, version, files);
        pushed.retain(|(ino, b)| sizes.get(ino) == Some(&(b.len() as u64)));
        pushed
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
}
