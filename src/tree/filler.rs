//! Writing owed sessions to the render cache on disk while the mount is idle.
//!
//! The disk cache's writer takes a walk's renders only as fast as its queue allows: a first
//! walk of a big store renders far faster than the writer compresses, and a session that
//! finds the queue full is owed ([`crate::diskcache::DiskCache::next_owed`]). Without this
//! thread those would wait for a later render of the same session, so a store walked once
//! and then remounted (after a reboot, at the next login) would be rendered again almost
//! whole. Here one thread at the idle policy takes the owed sessions one at a time, only
//! while nothing was rendered or read back for the writer's quiet spell and nothing waits
//! to be written, and hands each to the writer: from the memory cache when it still holds
//! every file of the session's current version, else rendered again (not filed in the
//! memory cache: a walk's working set stays as it was). It renders nothing a reader asked
//! for, makes no inode and tells the kernel nothing.

use super::threads::set_idle_policy;
use super::Fs;
use crate::cache::{EntryKind, SessionKey};
use crate::diskcache::DiskCache;
use crate::render::Node;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How often the thread looks whether the mount is idle.
const LOOK_EVERY: Duration = Duration::from_millis(250);
/// How often it looks while sessions are owed and the queue was too full to take more.
const PAYING_LOOK: Duration = Duration::from_millis(5);

impl Fs {
    /// Start the thread that writes owed sessions to the disk cache when the mount is idle
    /// (a mount with a disk cache calls this once). It ends with the last other owner of
    /// the tree.
    pub fn fill_disk_cache_when_idle(self: &Arc<Self>) {
        let Some(disk) = self.disk.get().cloned() else {
            return;
        };
        let weak = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("sessfs-diskfill".into())
            .spawn(move || {
                set_idle_policy();
                let mut paying = false;
                loop {
                    // While paying, look again soon: the writer empties the queue in
                    // milliseconds per session.
                    std::thread::sleep(if paying { PAYING_LOOK } else { LOOK_EVERY });
                    let Some(fs) = weak.upgrade() else { break };
                    while disk.idle() {
                        let Some(key) = disk.next_owed() else { break };
                        fs.pay(&disk, &key);
                    }
                    paying = disk.owes() && disk.quiet();
                }
            });
        if let Err(e) = spawned {
            log::warn!("render cache: no idle writer ({e}); owed sessions wait for a render");
        }
    }

    /// Hand one owed session to the disk cache's writer at its current version. The
    /// session's render lock is not taken: this thread runs only on time no other thread
    /// wants, so a reader waiting for a lock it held could wait for seconds while a walk
    /// keeps both cores busy. A reader rendering the same session meanwhile only repeats
    /// the work.
    fn pay(&self, disk: &DiskCache, key: &SessionKey) {
        let Ok((version, _)) = self.check_session(key) else {
            return; // gone from its store
        };
        let Ok((sources, extra)) = self.sources_and_extra(key) else {
            return;
        };
        if extra {
            return;
        }
        let entries = match self.cached_entries(key, version) {
            Some(entries) => entries,
            None => match self.render(key) {
                Ok((bundle, v)) if v == version => bundle.entries,
                _ => return,
            },
        };
        disk.put(key, version, &sources, &entries, false);
    }

    /// Every entry of `key` at `version` from the memory cache, if it still holds all its
    /// files.
    fn cached_entries(&self, key: &SessionKey, version: u64) -> Option<BTreeMap<String, Node>> {
        let shape = self.cache.shape(key, version)?;
        let mut bodies = self.cache.files(key, version, shape.files()).into_iter();
        let mut entries = BTreeMap::new();
        for (path, (kind, _)) in &shape.entries {
            let node = match kind {
                EntryKind::Dir => Node::Dir,
                EntryKind::File => Node::File(bodies.next()??),
                EntryKind::Symlink => Node::Symlink(shape.links.get(path)?.clone()),
            };
            entries.insert(path.clone(), node);
        }
        Some(entries)
    }
}
