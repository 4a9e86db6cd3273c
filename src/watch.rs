//! Change detection for the mount: inotify on the store roots, so an idle mount sleeps.
//!
//! Polling every session the kernel has seen costs a `stat` per session twice a second,
//! whatever happens: at 10,000 sessions that is a noticeable share of a core on a machine
//! doing nothing. Instead the mount watches every store root (recursively for directory
//! roots, the parent directory for database files, so `-wal` and `-journal` writes are
//! seen) and wakes only when the kernel reports a change. Events arrive in bursts while an
//! agent writes, so a batch is collected for [`SETTLE`] after the first event and handed
//! over as one list of paths.
//!
//! When watches cannot be set up (the user's inotify watch limit is reached, or a root is
//! on a filesystem without inotify), [`Watcher::new`] fails and the mount falls back to
//! polling; `sessfs doctor` says which one a machine gets. inotify can also drop events
//! when its queue overflows; such a batch is marked `rescan` and the caller looks at
//! everything.

use notify::event::ModifyKind;
use notify::{EventKind, RecursiveMode, Watcher as _};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// What wakes the change watcher: a store file changed (from inotify).
pub type Wake = notify::Result<notify::Event>;

/// How long a burst of events is collected before it is handed over. Well inside the
/// one-second freshness promise.
pub const SETTLE: Duration = Duration::from_millis(50);

/// Paths that changed, or `rescan` when events were lost.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Batch {
    pub paths: Vec<PathBuf>,
    pub rescan: bool,
    /// Something other than a write to an existing file happened (a file or directory made,
    /// removed or renamed): the stores must be listed again. A batch of writes alone may
    /// leave the listing as it was ([`crate::stores::Store::keeps_listing`]).
    pub relist: bool,
}

pub struct Watcher {
    // Held for its watches; dropping it stops them.
    inner: notify::RecommendedWatcher,
    /// Directories watched (for `doctor` and the log).
    pub watched: Vec<PathBuf>,
    /// Of `watched`, those watched with everything below them.
    recursive: Vec<PathBuf>,
}

impl Watcher {
    /// Watch `roots`: directories recursively, files through their parent directory.
    /// Roots that do not exist are skipped. Fails when a watch cannot be added. Events go
    /// to `tx`.
    pub fn new(roots: &[PathBuf], tx: Sender<Wake>) -> notify::Result<Watcher> {
        let inner = notify::recommended_watcher(move |ev: Wake| {
            // Reads and opens change nothing, and sessfs's own reads of the store cause
            // most of them: they are dropped here rather than waking the change thread.
            if let Ok(e) = &ev {
                if matches!(e.kind, EventKind::Access(_)) && !e.need_rescan() {
                    return;
                }
            }
            let _ = tx.send(ev);
        })?;
        let mut w = Watcher {
            inner,
            watched: Vec::new(),
            recursive: Vec::new(),
        };
        // Directory roots first: a database beside one of them is then already covered,
        // and its parent's flat watch never stands in for a tree that needs a deep one.
        let (dirs, files): (Vec<&PathBuf>, Vec<&PathBuf>) = roots
            .iter()
            .filter(|r| r.exists())
            .partition(|r| r.is_dir());
        for dir in dirs {
            if w.covers(dir) {
                continue;
            }
            w.inner.watch(dir, RecursiveMode::Recursive)?;
            w.watched.push(dir.clone());
            w.recursive.push(dir.clone());
        }
        for file in files {
            if w.covers(file) {
                continue;
            }
            let dir = watched_dir(file).to_path_buf();
            w.inner.watch(&dir, RecursiveMode::NonRecursive)?;
            w.watched.push(dir);
        }
        Ok(w)
    }

    /// Whether a change anywhere in `root` is reported: a directory inside a tree watched
    /// whole, or a file in a watched directory.
    pub fn covers(&self, root: &Path) -> bool {
        self.recursive.iter().any(|r| root.starts_with(r))
            || (!root.is_dir()
                && self
                    .watched
                    .iter()
                    .any(|d| Some(d.as_path()) == root.parent()))
    }
}

/// The next batch: waits up to `wait` for a first message (an empty batch when none
/// came), then collects the rest of the burst for [`SETTLE`].
pub fn next_batch(rx: &Receiver<Wake>, wait: Duration) -> Batch {
    let mut batch = Batch::default();
    match rx.recv_timeout(wait) {
        Ok(w) => add(&mut batch, w),
        Err(RecvTimeoutError::Timeout) => return batch,
        Err(RecvTimeoutError::Disconnected) => {
            std::thread::sleep(wait);
            return batch;
        }
    }
    let until = Instant::now() + SETTLE;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(w) => add(&mut batch, w),
            Err(_) => break,
        }
    }
    batch.paths.sort();
    batch.paths.dedup();
    batch
}

fn add(batch: &mut Batch, ev: Wake) {
    match ev {
        Ok(ev) => {
            if ev.need_rescan() {
                batch.rescan = true;
            }
            // Reads and opens change nothing; the rest (create, write, remove, rename,
            // metadata) may change what a session renders to.
            if !matches!(ev.kind, EventKind::Access(_)) {
                if !matches!(
                    ev.kind,
                    EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Metadata(_))
                ) {
                    batch.relist = true;
                }
                batch.paths.extend(ev.paths);
            }
        }
        Err(e) => {
            log::warn!("change watcher: {e}");
            batch.rescan = true;
        }
    }
}

/// The directory whose watch reports changes to `root`: a directory root itself, a file
/// root's (a database's) parent, so its `-wal` and `-journal` files are seen too.
pub fn watched_dir(root: &Path) -> &Path {
    if root.is_dir() {
        root
    } else {
        root.parent().unwrap_or(root)
    }
}

/// Whether a change at `changed` can affect a session with this `source` file or
/// directory: the source itself, anything inside it, or anything inside the directory
/// named like it without its extension (a pi or Claude session's `<id>/` beside
/// `<id>.jsonl`, holding subagents and spilled outputs).
pub fn touches(source: &Path, changed: &Path) -> bool {
    changed.starts_with(source)
        || (source.extension().is_some() && changed.starts_with(source.with_extension("")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes alone leave the listing as it was; anything made, removed or renamed asks
    /// for a new one; reads are not changes at all.
    #[test]
    fn only_writes_leave_the_listing_alone() {
        use notify::event::{AccessKind, CreateKind, DataChange, RenameMode};
        let ev = |kind| Ok(notify::Event::new(kind).add_path(PathBuf::from("/s/a.jsonl")));
        let batch = |kinds: Vec<EventKind>| {
            let mut b = Batch::default();
            for k in kinds {
                add(&mut b, ev(k));
            }
            b
        };
        let write = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        let b = batch(vec![
            write,
            EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)),
        ]);
        assert!(!b.relist && b.paths.len() == 1, "{b:?}");
        assert!(batch(vec![write, EventKind::Create(CreateKind::File)]).relist);
        assert!(batch(vec![EventKind::Modify(ModifyKind::Name(RenameMode::To))]).relist);
        assert!(batch(vec![EventKind::Remove(notify::event::RemoveKind::Any)]).relist);
        assert!(batch(vec![EventKind::Any]).relist);
        assert!(batch(vec![EventKind::Access(AccessKind::Any)])
            .paths
            .is_empty());
    }

    #[test]
    fn a_change_touches_its_file_and_the_sessions_side_directory() {
        let s = Path::new("/p/abc.jsonl");
        assert!(touches(s, Path::new("/p/abc.jsonl")));
        assert!(touches(s, Path::new("/p/abc/subagents/agent-1.jsonl")));
        assert!(!touches(s, Path::new("/p/abd.jsonl")));
        assert!(!touches(s, Path::new("/p/abcd/x")));
        assert!(touches(
            Path::new("/t/thread"),
            Path::new("/t/thread/messages.jsonl")
        ));
    }

    #[test]
    fn writes_under_a_watched_root_arrive_as_one_batch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("proj");
        std::fs::create_dir(&sub).expect("mkdir");
        let db = dir.path().join("other/state.db");
        std::fs::create_dir(db.parent().expect("parent")).expect("mkdir");
        std::fs::write(&db, b"x").expect("db");
        let (tx, rx) = std::sync::mpsc::channel();
        let _w = Watcher::new(&[dir.path().join("proj"), db.clone()], tx.clone()).expect("watcher");
        assert!(next_batch(&rx, Duration::from_millis(50)).paths.is_empty());
        let f = sub.join("s.jsonl");
        std::fs::write(&f, b"{}\n").expect("write");
        std::fs::write(db.with_extension("db-wal"), b"w").expect("wal");
        let mut seen = Vec::new();
        // Events can take a moment; this waits for them, it does not time them.
        let start = Instant::now();
        while !(seen.contains(&f) && seen.contains(&db.with_extension("db-wal")))
            && start.elapsed() < Duration::from_secs(10)
        {
            seen.extend(next_batch(&rx, Duration::from_millis(200)).paths);
        }
        assert!(seen.contains(&f), "{seen:?}");
        assert!(seen.contains(&db.with_extension("db-wal")), "{seen:?}");
    }

    /// A database and a session tree side by side in one home (`home/state.db`,
    /// `home/sessions/`): the tree is watched whole whatever the order of the roots, so a
    /// session written two levels down is reported, and [`Watcher::covers`] says so.
    #[test]
    fn a_tree_beside_a_database_is_watched_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("state.db");
        std::fs::write(&db, b"x").expect("db");
        let tree = dir.path().join("sessions");
        std::fs::create_dir_all(tree.join("2026")).expect("mkdir");
        let (tx, rx) = std::sync::mpsc::channel();
        let w = Watcher::new(&[db.clone(), tree.clone()], tx).expect("watcher");
        assert!(w.covers(&db) && w.covers(&tree), "{:?}", w.watched);
        assert!(!w.covers(dir.path()), "{:?}", w.watched);
        let f = tree.join("2026/s.json");
        std::fs::write(&f, b"{}").expect("write");
        let mut seen = Vec::new();
        // Events can take a moment; this waits for them, it does not time them.
        let start = Instant::now();
        while !seen.contains(&f) && start.elapsed() < Duration::from_secs(10) {
            seen.extend(next_batch(&rx, Duration::from_millis(200)).paths);
        }
        assert!(seen.contains(&f), "{seen:?}");
    }

    /// sessfs reads every store file it renders; those reads must not wake the change
    /// thread (a cold walk of 2,000 sessions woke it 3,300 times).
    #[test]
    fn reading_a_watched_file_sends_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("s.jsonl");
        std::fs::write(&f, b"{}\n").expect("write");
        let (tx, rx) = std::sync::mpsc::channel();
        let _w = Watcher::new(&[dir.path().to_path_buf()], tx).expect("watcher");
        for _ in 0..3 {
            assert_eq!(std::fs::read(&f).expect("read"), b"{}\n");
        }
        // A modification is sent, so the watch works; the reads before it sent nothing.
        std::fs::write(&f, b"{}\n{}\n").expect("append");
        let first = rx.recv_timeout(Duration::from_secs(10)).expect("an event");
        let kind = first.expect("no error").kind;
        assert!(!matches!(kind, EventKind::Access(_)), "{kind:?}");
    }
}
