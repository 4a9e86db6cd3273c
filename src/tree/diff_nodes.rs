//! The `<session>/diff/<agent>/<other>.diff` files.
//!
//! Owns [`DiffNodes`]: any pair of sessions has a diff, so these inodes come from a range
//! of their own ([`DIFF_INO_BASE`]), at most [`DIFF_FILES`] are kept and the least recently
//! looked up is forgotten with its cached bytes. A diff is rendered from both sessions at
//! their current versions and cached under a key no session can have ([`diff_key`]). The
//! permanent inode table and the sessions' renders are not touched.

use super::nodes::{NodeKind, DIFF_INO_BASE};
use super::threads::panic_message;
use super::{Fs, FsError, Result, State};
use crate::cache::{Bytes, SessionKey};
use crate::render::{self, Bundle, Node};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Diff files whose inodes are kept; the least recently looked up is forgotten. Any pair of
/// sessions has one, so keeping them all would grow with every lookup.
pub const DIFF_FILES: usize = 256;

/// The `diff/<agent>/<other>.diff` files: like the search nodes, a bounded set in their own
/// inode range, the least recently looked up forgotten first.
#[derive(Default)]
pub(super) struct DiffNodes {
    next: u64,
    pub(super) nodes: HashMap<u64, NodeKind>,
    /// Inode by `(parent inode, name)`.
    by_name: HashMap<(u64, String), u64>,
    /// Inodes, least recently looked up first.
    order: std::collections::VecDeque<u64>,
}

impl State {
    /// The inode of a diff file, made if new; also the diff files forgotten to make room
    /// (the least recently looked up), whose rendered bytes the caller drops.
    pub(super) fn diff_ino(
        &mut self,
        parent: u64,
        name: &str,
        kind: NodeKind,
    ) -> (u64, Vec<NodeKind>) {
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

impl Fs {
    pub(super) fn diff_file(&self, a: &SessionKey, b: &SessionKey) -> Result<(Bytes, u64)> {
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
}

/// Where the cache keeps the diff of `a` against `b`: a name no session can have.
pub(super) fn diff_key(a: &SessionKey, b: &SessionKey) -> SessionKey {
    SessionKey {
        agent: a.agent,
        name: format!("{}\u{0}diff\u{0}{}\u{0}{}", a.name, b.agent, b.name).into(),
    }
}
