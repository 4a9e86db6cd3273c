//! The FUSE adapter: the only module that knows FUSE. Every request becomes one call into
//! [`Fs`], and every error becomes an errno in one place ([`errno`]). Requests come
//! through fuser's `/dev/fuse` workers, or where the kernel offers it through one io_uring
//! queue per CPU ([`ring`]); both are answered by the same [`SessFs`] handlers.
//!
//! Choices (measured; see `docs/SEMANTICS.md` and `docs/BENCHMARKS.md`):
//! - exact sizes, cached mode, never `direct_io`: every tool, `mmap` included, sees a normal
//!   file;
//! - no-open mode: `open` and `opendir` answer `ENOSYS`, so the kernel stops sending
//!   OPEN/RELEASE/OPENDIR/RELEASEDIR, keeps file pages (`KEEP_CACHE`) and directory
//!   listings (`CACHE_DIR`) across opens, and a warm `grep -r` costs no request at all.
//!   That is sound because rendering is deterministic and prefix-stable: a read returns bytes
//!   of the file's current version, and every version change moves the file's mtime or size;
//! - `FUSE_AUTO_INVAL_DATA`, so a changed mtime or size in a refreshed attribute (at most
//!   [`TTL`] old) drops the stale pages and cached listings;
//! - `FUSE_DO_READDIRPLUS`, so a directory walk learns every child's attributes in one reply;
//! - pushed pages: on a listing's last (empty) READDIRPLUS the kernel already has the
//!   entries' inodes and the reader waits for the reply, so the directory's small files are
//!   pushed into the page cache (`notify_store`) right then, and a walk reads them without a
//!   request each (a cold `grep -r` of 10,000 sessions: 0 READs, 97,940 before); at most
//!   half the workers push at once, so some are always left to answer the READs a push
//!   may wait for ([`PushSlots`]). When the kernel later drops such pages (memory pressure,
//!   proactive reclaim), the READ of a small file pushes the files beside it before its
//!   reply (`SessFs::push_beside`): one request per directory instead of one per file, and
//!   at most one such push per directory a second, so files read one by one by name do not
//!   each push all those read before them;
//! - pushed invalidation: a watcher thread sleeps on inotify ([`crate::watch`]), asks the tree
//!   what a batch of store changes means ([`Fs::changes_for`]) and
//!   tells the kernel to forget those inodes and names, so attributes and names can be
//!   trusted for [`KERNEL_TTL`] and a warm walk of a large tree makes no requests; while an
//!   agent keeps writing, batches are spaced so they take at most a tenth of the mount's
//!   time ([`serve::change_gap`]);
//! - negative lookups are cached for [`TTL`] (ripgrep probes `.gitignore` & co. everywhere);
//! - no `default_permissions`: every node has the same modes for everyone, so the kernel's
//!   check on each path step and open buys nothing, and `access` answers from those modes;
//! - a panic inside a request becomes EIO and a log line; the mount lives on.
//!
//! This module answers requests ([`SessFs`]); [`serve`] mounts, runs the watcher thread
//! that pushes invalidations, and unmounts on a stop signal.

#[cfg(target_os = "linux")]
mod ring;
#[cfg(not(target_os = "linux"))]
#[path = "no_ring.rs"]
mod ring;
mod serve;

pub use serve::{block_stop_signals, serve, transport};

use crate::tree::{Attr, Fs, FsError, Kind, KERNEL_TTL, TTL};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyDirectoryPlus,
    ReplyEmpty, ReplyEntry, ReplyOpen, Request,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The largest READ and WRITE payload, and with it `max_pages`: larger READs. Less with
/// io_uring queues on many CPUs ([`ring::payload_size`]).
const MAX_WRITE: usize = 1 << 20;

/// Files up to this size are pushed into the page cache when their directory is listed;
/// larger ones are read on demand (a walk that stops early should not cost their copy).
const PUSH_MAX: u64 = 1 << 20;

/// The session's notifier, for request handlers that push pages; set once the session
/// exists.
type Pusher = Arc<std::sync::OnceLock<fuser::Notifier>>;

/// The worker threads that serve requests: two per core, and at least eight. A walk asks
/// one thing at a time, but which sleeping worker the kernel wakes, and on which CPU, moves
/// its cost: on two cores a cold `grep -r` of 2,000 sessions took 1.36-1.45 s with eight
/// workers against 1.39-1.63 s with four (medians 1.38 and 1.45 s, 15 runs alternating).
fn workers() -> usize {
    (crate::tree::cores() * 2).max(8)
}

/// Pushes in progress, at most half the workers. A push waits for each page's lock, and a
/// page a reader is reading through a request stays locked until some worker answers that
/// READ. A multi-threaded walker (`rg`) reads a directory's files while another of its
/// threads is still listing it, so with every worker pushing, each could wait for a READ
/// that no worker is left to answer, and the mount would hang. A directory listed while
/// the others push is read through requests instead.
struct PushSlots {
    busy: AtomicUsize,
    max: usize,
}

impl PushSlots {
    fn new(max: usize) -> PushSlots {
        PushSlots {
            busy: AtomicUsize::new(0),
            max,
        }
    }

    /// A slot, given back when the returned guard drops; `None` when all are taken.
    fn take(&self) -> Option<PushSlot<'_>> {
        let taken = self
            .busy
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            });
        taken.ok().map(|_| PushSlot(self))
    }
}

struct PushSlot<'a>(&'a PushSlots);

impl Drop for PushSlot<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The single mapping from internal errors to errno values.
pub fn errno(e: &FsError) -> Errno {
    match e {
        FsError::NotFound => Errno::ENOENT,
        FsError::NotDir => Errno::ENOTDIR,
        FsError::IsDir => Errno::EISDIR,
        FsError::NotSymlink => Errno::EINVAL,
        FsError::ReadOnly => Errno::EROFS,
        FsError::Internal(_) | FsError::Spill(_) => Errno::EIO,
    }
}

/// Run `f`, turning a panic into [`FsError::Internal`] and a log line.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, FsError>) -> Result<T, FsError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = crate::tree::panic_message(&p);
            log::error!("panic in {what}: {msg}");
            Err(FsError::Internal(msg))
        }
    }
}

type DirSnapshot = crate::tree::Listing;

/// Listings kept for readers that have not reached the end of a directory yet.
const MAX_SNAPSHOTS: usize = 4096;

/// The request handlers, shared by the `/dev/fuse` workers and the io_uring queues
/// ([`ring`]): a clone shares every listing, slot and flag.
#[derive(Clone)]
pub struct SessFs {
    fs: Arc<Fs>,
    uid: u32,
    gid: u32,
    /// Directory listings taken when a listing starts (offset 0), so later offsets of the
    /// same pass index the same entries.
    dirs: Arc<Mutex<HashMap<u64, DirSnapshot>>>,
    /// Pushes a listed directory's files into the page cache.
    pusher: Pusher,
    /// The `/dev/fuse` workers' push slots; each io_uring queue has its own.
    push_slots: Arc<PushSlots>,
    /// Files whose READ is pushing the files beside them before its reply
    /// ([`SessFs::push_beside`]); at most one per push slot.
    reading: Arc<Mutex<Vec<u64>>>,
    /// Ask the kernel for io_uring queues at INIT, where it offers them.
    want_ring: bool,
    /// The queues, made at INIT where the kernel agreed to them ([`ring::Prepared`]).
    ring_prepared: Arc<Mutex<Option<ring::Prepared>>>,
}

impl SessFs {
    pub fn new(fs: Arc<Fs>, pusher: Pusher, want_ring: bool) -> SessFs {
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        SessFs {
            fs,
            uid,
            gid,
            dirs: Arc::new(Mutex::new(HashMap::new())),
            pusher,
            push_slots: Arc::new(PushSlots::new(workers() / 2)),
            reading: Arc::new(Mutex::new(Vec::new())),
            want_ring,
            ring_prepared: Arc::default(),
        }
    }

    /// A LOOKUP: how long the kernel may keep the entry, and its attributes. A name that
    /// does not exist gets a negative entry (inode 0) the kernel caches for [`TTL`].
    fn lookup_entry(&self, parent: u64, name: &OsStr) -> Result<(Duration, FileAttr), FsError> {
        match guarded("lookup", || self.fs.lookup(parent, name_str(name)?)) {
            Ok(a) => Ok((self.ttl(a.ino), self.file_attr(&a))),
            Err(FsError::NotFound) => {
                let mut neg = self.file_attr(&Attr {
                    ino: 0,
                    kind: Kind::File,
                    size: 0,
                    mtime: SystemTime::UNIX_EPOCH,
                });
                neg.ino = INodeNo(0);
                Ok((TTL, neg))
            }
            Err(e) => Err(e),
        }
    }

    /// A READ: `size` bytes of file `ino` from `offset`, handed to `reply` as a slice of the
    /// cached file (no copy) or for a file kept on disk the piece read from it.
    fn read_part(
        &self,
        ino: u64,
        offset: u64,
        size: u32,
        slots: &PushSlots,
        reply: impl FnOnce(Result<&[u8], FsError>),
    ) {
        let bytes = match guarded("read", || self.fs.contents(ino)) {
            Ok(b) => b,
            Err(e) => return reply(Err(e)),
        };
        let part = match bytes.read(offset, size) {
            Ok(p) => p,
            Err(e) => {
                log::warn!("read of inode {ino}: {e}");
                return reply(Err(FsError::Spill(e.to_string())));
            }
        };
        if offset == 0 && bytes.len() <= PUSH_MAX as usize {
            // A walk that listed this directory pushed this file, so a READ of it mostly
            // means the kernel dropped those pages, and its neighbours' with them. Before
            // the reply, or the reader asks for them first.
            self.push_beside(ino, slots);
        }
        reply(Ok(&part));
    }

    /// A READDIRPLUS: entries from `offset` on to `add(ino, next offset, name, ttl,
    /// attributes)` until it says the reply is full; the listing's last (empty) call pushes
    /// the directory's files ([`SessFs::push_files`]).
    fn readdirplus_fill(
        &self,
        ino: u64,
        offset: u64,
        slots: &PushSlots,
        mut add: impl FnMut(u64, &str, &Duration, &FileAttr) -> bool,
    ) -> Result<(), FsError> {
        guarded("readdirplus", || {
            let done = self.fill_dir(ino, offset, |next, name, a| {
                add(next, name, &self.ttl(a.ino), &self.file_attr(a))
            })?;
            // The last (empty) reply of a listing that sent entries.
            if let Some(listed) = done.filter(|_| offset > 0) {
                self.push_files(ino, &listed, slots);
            }
            Ok(())
        })
    }

    /// ACCESS (`access(2)`, `chdir`): the modes the kernel was given are the answer.
    /// Everyone may read and search; nothing is writable (the kernel says so itself on a
    /// read-only mount) and no file is executable (nor on a `noexec` one).
    fn access_check(&self, ino: u64, mask: i32) -> Result<(), Errno> {
        let a = guarded("access", || self.fs.getattr(ino)).map_err(|e| errno(&e))?;
        if mask & libc::X_OK != 0 && a.kind != Kind::Dir {
            return Err(Errno::EACCES);
        }
        if mask & libc::W_OK != 0 {
            return Err(Errno::EROFS);
        }
        Ok(())
    }

    /// How long the kernel may keep a node: [`KERNEL_TTL`], but only
    /// [`crate::tree::SEARCH_TTL`] for the `search/` nodes, whose results change and whose
    /// inodes are forgotten.
    fn ttl(&self, ino: u64) -> std::time::Duration {
        if self.fs.is_volatile(ino) {
            crate::tree::SEARCH_TTL
        } else {
            KERNEL_TTL
        }
    }

    fn file_attr(&self, a: &Attr) -> FileAttr {
        let (kind, perm, nlink) = match a.kind {
            Kind::Dir => (FileType::Directory, 0o555, 2),
            Kind::File => (FileType::RegularFile, 0o444, 1),
            Kind::Symlink => (FileType::Symlink, 0o444, 1),
        };
        FileAttr {
            ino: INodeNo(a.ino),
            size: a.size,
            blocks: a.size.div_ceil(512),
            atime: a.mtime,
            mtime: a.mtime,
            ctime: a.mtime,
            crtime: a.mtime,
            kind,
            perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        }
    }

    /// Feed `.`, `..` and the directory's entries from `offset` on to `add(next offset,
    /// name, attributes)` until it says the reply buffer is full. Returns the whole listing
    /// when nothing was left from `offset` on: the kernel asks once more after the last
    /// entry to learn the listing ended, and that call drops the snapshot.
    fn fill_dir(
        &self,
        ino: u64,
        offset: u64,
        mut add: impl FnMut(u64, &str, &Attr) -> bool,
    ) -> Result<Option<DirSnapshot>, FsError> {
        let entries = self.dir_snapshot(ino, offset)?;
        let me = self.fs.getattr(ino)?;
        // An empty directory (`diff/`) lists nothing at all, not even `.` and `..` (POSIX
        // leaves them optional): its listing then ends in one request instead of two.
        let dots = if entries.is_empty() {
            &[][..]
        } else {
            &[(".", me), ("..", me)][..]
        };
        // Offsets index `.`, `..` and the entries in turn; the slices are entered at
        // `offset` directly, not walked to it (a 10,000-session listing takes 58 calls).
        let skip = offset as usize;
        let all = dots.iter().copied().enumerate().skip(skip).chain(
            entries
                .iter()
                .enumerate()
                .skip(skip.saturating_sub(dots.len()))
                .map(|(j, (n, a))| (dots.len() + j, (n.as_str(), *a))),
        );
        let mut left = false;
        for (i, (name, a)) in all {
            left = true;
            if add((i + 1) as u64, name, &a) {
                break;
            }
        }
        if left {
            return Ok(None);
        }
        self.forget_snapshot(ino);
        Ok(Some(entries))
    }

    /// Drop the listing of a directory whose last entries have been sent.
    fn forget_snapshot(&self, ino: u64) {
        self.dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ino);
    }

    /// Push the small cached files of a directory the kernel has just listed into its page
    /// cache. Called on the listing's last (empty) READDIRPLUS: the kernel made the inodes
    /// of the entries sent before, and the reader waits for this reply before it opens
    /// them, so a walk then reads them without a request each.
    ///
    /// A push can race the watcher's invalidation of a newer version, like any READ reply
    /// can, and no lock orders them: one held here would have to be held by the watcher
    /// across kernel calls that wait for readers who wait for this reply. The race is
    /// harmless: an invalidation also marks the attributes stale, every read then refreshes
    /// them (`FUSE_AUTO_INVAL_DATA`), and a new version's mtime or size drops the pages.
    fn push_files(&self, dir: u64, listed: &[(String, Attr)], slots: &PushSlots) {
        let Some(notifier) = self.pusher.get() else {
            return;
        };
        let Some(_slot) = slots.take() else {
            log::debug!("push of {dir} skipped: every push slot is busy");
            return;
        };
        store_all(notifier, self.fs.pushable(dir, listed, PUSH_MAX));
    }

    /// Push the cached files beside file `ino` (see [`Fs::pushable_beside`]) while its
    /// READ waits for the reply.
    ///
    /// The kernel keeps `ino`'s pages locked until that reply, and a push waits for every
    /// locked page it writes; two READs each pushing the other's file would wait forever.
    /// So each pusher first registers its own file in `reading`, then skips every file
    /// registered there: of two such READs the later one sees the earlier, and no chain of
    /// pushes waiting on each other can close.
    fn push_beside(&self, ino: u64, slots: &PushSlots) {
        let Some(notifier) = self.pusher.get() else {
            return;
        };
        let Some(_slot) = slots.take() else {
            return;
        };
        if !self.fs.beside_due(ino) {
            return;
        }
        let busy = {
            let mut reading = self.reading.lock().unwrap_or_else(|e| e.into_inner());
            reading.push(ino);
            reading.clone()
        };
        let files = self.fs.pushable_beside(ino, PUSH_MAX);
        let pushed = store_all(
            notifier,
            files.into_iter().filter(|(other, _)| !busy.contains(other)),
        );
        log::debug!("pushed {pushed} files beside {ino}");
        let mut reading = self.reading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = reading.iter().position(|&i| i == ino) {
            reading.swap_remove(i);
        }
    }

    /// The listing of `ino` for a readdir at `offset`: taken afresh at offset 0, reused after.
    fn dir_snapshot(&self, ino: u64, offset: u64) -> Result<DirSnapshot, FsError> {
        let mut dirs = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
        if offset > 0 {
            if let Some(v) = dirs.get(&ino) {
                return Ok(v.clone());
            }
        }
        drop(dirs);
        let snap = self.fs.listing(ino)?;
        dirs = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
        if dirs.len() >= MAX_SNAPSHOTS {
            // Readers that stopped before the end; a later call of theirs lists afresh.
            dirs.clear();
        }
        dirs.insert(ino, snap.clone());
        Ok(snap)
    }
}

/// Push whole files into the kernel's page cache, and say how many were offered; a failure
/// only costs the reader a READ.
fn store_all(
    notifier: &fuser::Notifier,
    files: impl IntoIterator<Item = (u64, Arc<Vec<u8>>)>,
) -> usize {
    let mut n = 0;
    for (ino, bytes) in files {
        n += 1;
        if let Err(e) = notifier.store(INodeNo(ino), 0, &bytes) {
            log::debug!("store {ino}: {e}");
        }
    }
    n
}

fn kind_type(k: Kind) -> FileType {
    match k {
        Kind::Dir => FileType::Directory,
        Kind::File => FileType::RegularFile,
        Kind::Symlink => FileType::Symlink,
    }
}

fn name_str(name: &OsStr) -> Result<&str, FsError> {
    // Every name sessfs creates is UTF-8; anything else cannot exist.
    name.to_str().ok_or(FsError::NotFound)
}

impl Filesystem for SessFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Parallel lookups and listings in one directory (a walk of one agent directory
        // with thousands of sessions), and symlink targets kept in the page cache.
        let wanted = InitFlags::FUSE_DO_READDIRPLUS
            | InitFlags::FUSE_AUTO_INVAL_DATA
            | InitFlags::FUSE_PARALLEL_DIROPS
            | InitFlags::FUSE_CACHE_SYMLINKS;
        if let Err(missing) = config.add_capabilities(wanted) {
            log::warn!("kernel lacks FUSE capabilities {missing:?}; continuing without");
            let _ = config.add_capabilities(wanted & !missing);
        }
        // Requests through per-CPU io_uring queues ([`ring`]), where the kernel offers them.
        // Everything that can fail is made before asking: once granted, the kernel holds
        // every request until the queues are registered.
        let mut largest = MAX_WRITE;
        if self.want_ring
            && config
                .capabilities()
                .contains(InitFlags::FUSE_OVER_IO_URING)
        {
            largest = ring::payload_size(MAX_WRITE);
            match ring::prepare(largest) {
                Ok(prepared)
                    if config
                        .add_capabilities(InitFlags::FUSE_OVER_IO_URING)
                        .is_ok() =>
                {
                    *self.ring_prepared.lock().unwrap_or_else(|e| e.into_inner()) = Some(prepared);
                }
                Ok(_) => {}
                Err(e) => log::warn!("no io_uring queues ({e}); requests come through /dev/fuse"),
            }
        }
        // Larger READs: max_pages follows the larger of max_write and max_readahead, and
        // must fit a queue's buffer.
        let _ = config.set_max_write(largest as u32);
        if let Err(max) = config.set_max_readahead(largest as u32) {
            let _ = config.set_max_readahead(max);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.lookup_entry(parent.0, name) {
            Ok((ttl, attr)) => reply.entry(&ttl, &attr, Generation(0)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match guarded("getattr", || self.fs.getattr(ino.0)) {
            Ok(a) => reply.attr(&self.ttl(a.ino), &self.file_attr(&a)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match guarded("readlink", || self.fs.readlink(ino.0)) {
            Ok(t) => reply.data(t.as_bytes()),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        // No-open mode (see the module doc); writes never get here on an `ro` mount.
        reply.error(Errno::ENOSYS);
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.read_part(ino.0, offset, size, &self.push_slots, |r| match r {
            Ok(part) => reply.data(part),
            Err(e) => reply.error(errno(&e)),
        });
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.error(Errno::ENOSYS);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        match guarded("readdir", || {
            self.fill_dir(ino.0, offset, |next, name, a| {
                reply.add(INodeNo(a.ino), next, kind_type(a.kind), name)
            })
        }) {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let filled =
            self.readdirplus_fill(ino.0, offset, &self.push_slots, |next, name, ttl, attr| {
                reply.add(attr.ino, next, name, ttl, attr, Generation(0))
            });
        match filled {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    // Everything that would change the tree: the mount is `ro`, and sessfs says so too.

    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mkdir(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn unlink(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn rmdir(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn symlink(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _link_name: &OsStr,
        _target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn rename(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _newparent: INodeNo,
        _newname: &OsStr,
        _flags: fuser::RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _write_flags: fuser::WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: fuser::ReplyWrite,
    ) {
        reply.error(Errno::EROFS);
    }

    fn create(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: fuser::ReplyCreate,
    ) {
        reply.error(Errno::EROFS);
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    // What tools call on any file besides read: answered, and quietly. fuser's defaults log
    // a `[Not Implemented]` line for each, and an `ioctl` (Python's `isatty` on every
    // `open`) is asked again every time: one Python walk wrote thousands of log lines.

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Nothing is ever buffered for writing. ENOSYS, not OK: the kernel then stops
        // sending FLUSH at all, where an OK reply costs one request per close() (a warm
        // `grep -r` of 10,000 sessions went from the page cache alone to 6x slower).
        reply.error(Errno::ENOSYS);
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // As for FLUSH: ENOSYS once and the kernel treats fsync as done from then on.
        reply.error(Errno::ENOSYS);
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: i64,
        _whence: i32,
        reply: fuser::ReplyLseek,
    ) {
        // The kernel only asks for SEEK_DATA and SEEK_HOLE (`cp`, `grep` probing for sparse
        // files). ENOSYS once and it answers them itself from then on, as for a file with
        // no holes, which a sessfs file is; answering here cost a request per probe.
        reply.error(Errno::ENOSYS);
    }

    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: fuser::IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: fuser::ReplyIoctl,
    ) {
        // Not a terminal, no device controls: what a regular file on disk answers.
        reply.error(Errno::ENOTTY);
    }

    fn getlk(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        _start: u64,
        _end: u64,
        _typ: i32,
        _pid: u32,
        reply: fuser::ReplyLock,
    ) {
        // ENOSYS makes the kernel handle POSIX locks locally, which is all a read-only
        // tree needs.
        reply.error(Errno::ENOSYS);
    }

    fn setlk(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        _start: u64,
        _end: u64,
        _typ: i32,
        _pid: u32,
        _sleep: bool,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: fuser::ReplyXattr,
    ) {
        // No extended attributes. ENOSYS makes the kernel answer "not supported" itself
        // from then on, instead of asking once per file (`ls -l`, `cp -a`).
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: fuser::ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: fuser::AccessFlags, reply: ReplyEmpty) {
        match self.access_check(ino.0, mask.bits()) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn bmap(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _blocksize: u32,
        _idx: u64,
        reply: fuser::ReplyBmap,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }
}

#[cfg(test)]
mod tests {
    use super::{Ordering, PushSlots};

    #[test]
    fn pushes_take_at_most_their_slots_and_give_them_back() {
        let slots = PushSlots::new(2);
        let a = slots.take().expect("first slot");
        let b = slots.take().expect("second slot");
        assert!(slots.take().is_none(), "a third push while two run");
        drop(a);
        let c = slots.take().expect("a slot given back is taken again");
        assert!(slots.take().is_none());
        drop((b, c));
        // A push that panics gives its slot back as it unwinds.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _slot = slots.take();
            panic!("push failed");
        }));
        assert!(caught.is_err());
        assert_eq!(slots.busy.load(Ordering::Acquire), 0);
    }
}
