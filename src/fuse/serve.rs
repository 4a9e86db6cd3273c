//! A mount's life: mounting with sessfs' options, the watcher thread that turns store
//! changes into kernel invalidations (sent again after [`RETRY_AFTER`], paced by
//! [`change_gap`] and the [`safety_interval`] safety net), and unmounting on SIGINT, SIGTERM,
//! SIGHUP or an unmount from outside.
//!
//! Kept apart from the request handlers ([`SessFs`]) because it runs beside them, on its own
//! threads: it only starts them, and tells the kernel what to forget; it answers no request.

use super::{ring, workers, Pusher, SessFs};
use crate::tree::{panic_message, Fs, POLL};
use fuser::INodeNo;
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

/// How often the watcher also looks at every session, as a safety net for changes inotify
/// cannot report (network filesystems, a store replaced by a symlink): every 30 s, or less
/// often where one look takes longer than [`SAFETY_SHARE`] of that ([`safety_interval`]).
const SAFETY_POLL: Duration = Duration::from_secs(30);

/// The safety net's look may take at most one part in this many of an idle mount's time.
/// A look re-lists every store and checks every session the kernel has seen: on 10,000
/// sessions that took 130–190 ms, which every 30 s was about 0.5 % of a core doing nothing
/// (50–80 ms since it versions in batches and skips merging a listing that came back the
/// same).
const SAFETY_SHARE: u32 = 1000;

/// The longest wait between two safety-net looks, however long one takes.
const SAFETY_POLL_MAX: Duration = Duration::from_secs(300);

/// When the next safety-net look is due, after one that took `took`.
fn safety_interval(took: Duration) -> Duration {
    (took * SAFETY_SHARE).clamp(SAFETY_POLL, SAFETY_POLL_MAX)
}

/// Handling store changes may take at most one part in this many of a busy mount's time:
/// while an agent writes, the next batch waits [`CHANGE_SHARE`] - 1 times as long as the
/// last one took ([`change_gap`]). Re-checking one written file takes about a millisecond,
/// so a session's appends still show within tens of milliseconds; a write to a database
/// re-versions every session of it the kernel has seen (1,000 OpenCode sessions: about
/// 100 ms), and without the gap an agent writing ten times a second kept more than a core
/// busy.
const CHANGE_SHARE: u32 = 10;

/// The longest wait between two batches of changes, within the one-second freshness bound
/// with the batch's own [`crate::watch::SETTLE`] and handling.
const CHANGE_GAP_MAX: Duration = Duration::from_millis(700);

/// How long the next batch of changes waits after one that took `took`.
fn change_gap(took: Duration) -> Duration {
    (took * (CHANGE_SHARE - 1)).min(CHANGE_GAP_MAX)
}

/// When each invalidation is sent again, see [`Retries`].
const RETRY_AFTER: [Duration; 3] = [
    Duration::from_millis(2),
    Duration::from_millis(20),
    Duration::from_millis(200),
];

/// What the kernel is told to forget.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Forget {
    /// An inode's attributes and cached pages (or listing).
    Inode(u64),
    /// A session file's attributes only. Its pages go when the kernel next learns its
    /// attributes: every version change moves the file's mtime, and `FUSE_AUTO_INVAL_DATA`
    /// drops the pages of a file whose size or mtime moved, in the same step that installs
    /// the new size. Dropping them here instead left a window in which a reader that had
    /// just found the old attributes valid read the new version's bytes through a READ
    /// and kept the old size: a longer new `parent.diff` came back cut at the old length,
    /// a shorter one padded with zeros to it (the kernel shrinks a file on a short READ
    /// only when no invalidation crossed the READ, and a resend often does).
    Attrs(u64),
    /// A name in a directory: a removed session.
    Entry(u64, String),
}

/// Invalidations to send again. A listing or lookup that handed an inode out with the
/// previous version's attributes (or the name of a session just removed) may still be on
/// its way when the change is found: the kernel makes a new inode or name only when the
/// reader it answers wakes up and reads the reply, and it drops an invalidation for one it
/// does not have (fuser reports that as success). Once made, nothing else would correct it
/// for [`KERNEL_TTL`](crate::tree::KERNEL_TTL), so every invalidation is sent again after
/// each of [`RETRY_AFTER`], and a last time at the next safety look (however slow the
/// reader was). Only changed sessions are invalidated, so the cost is a few calls per change
/// and, for a file read in between, one more read.
#[derive(Default)]
struct Retries {
    /// Due again at that time, with how many times sent so far.
    soon: HashMap<Forget, (std::time::Instant, usize)>,
    /// Sent after every delay: to be sent once more at the next safety look.
    late: HashSet<Forget>,
}

impl Retries {
    /// `what` was sent for the `sent`th time; schedule the next unless none is left.
    fn add(&mut self, what: Forget, sent: usize) {
        match RETRY_AFTER.get(sent.saturating_sub(1)) {
            Some(after) => {
                let due = std::time::Instant::now() + *after;
                self.soon.insert(what, (due, sent));
            }
            None => {
                self.soon.remove(&what);
                if sent == RETRY_AFTER.len() + 1 {
                    self.late.insert(what);
                }
            }
        }
    }

    /// How long to wait for changes before the next retry is due, at most `max`.
    fn wait(&self, max: Duration) -> Duration {
        let now = std::time::Instant::now();
        self.soon
            .values()
            .map(|&(due, _)| due.saturating_duration_since(now))
            .min()
            .map_or(max, |d| d.min(max))
    }

    /// The invalidations due again now, with how many times each was sent.
    fn due(&mut self) -> Vec<(Forget, usize)> {
        let now = std::time::Instant::now();
        let due: Vec<(Forget, usize)> = self
            .soon
            .iter()
            .filter(|(_, &(at, _))| at <= now)
            .map(|(what, &(_, sent))| (what.clone(), sent))
            .collect();
        for (what, _) in &due {
            self.soon.remove(what);
        }
        due
    }

    /// The invalidations for the safety look, each with a count that ends its retries.
    fn late(&mut self) -> Vec<(Forget, usize)> {
        let last = RETRY_AFTER.len() + 1;
        self.late.drain().map(|what| (what, last)).collect()
    }
}

/// How a mount made now would take its requests, for `sessfs doctor`.
pub fn transport() -> String {
    let switch = std::path::Path::new(ring::ENABLE_URING);
    match std::fs::read_to_string(switch).map(|s| s.trim() == "Y") {
        Ok(true) => "io_uring, one queue per CPU".into(),
        Ok(false) => format!(
            "/dev/fuse (io_uring queues make cold walks faster: echo Y > {}, as root)",
            switch.display()
        ),
        Err(_) => "/dev/fuse (this kernel has no FUSE io_uring; Linux 6.14 or later has)".into(),
    }
}

/// Block SIGINT, SIGTERM and SIGHUP in the calling thread and every thread it starts later,
/// so only the `sigwait` in [`serve`] receives them. Call before starting any thread.
pub fn block_stop_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data initialised by sigemptyset; pthread_sigmask only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Mount `fs` on `dir` and serve until SIGINT, SIGTERM or SIGHUP, or until someone else
/// unmounts it; then unmount cleanly. `ready` runs once the mount is live.
pub fn serve(
    fs: Arc<Fs>,
    dir: &std::path::Path,
    allow_other: bool,
    ring: bool,
    ready: impl FnOnce(),
) -> std::io::Result<()> {
    use fuser::{Config, MountOption, SessionACL};

    let set = block_stop_signals();

    let mut cfg = Config::default();
    cfg.mount_options = vec![
        MountOption::RO,
        MountOption::FSName("sessfs".into()),
        MountOption::Subtype("sessfs".into()),
        MountOption::NoAtime,
        MountOption::NoDev,
        MountOption::NoSuid,
        MountOption::NoExec,
    ];
    if allow_other {
        cfg.acl = SessionACL::All;
    }
    cfg.n_threads = Some(workers());
    // Each worker gets its own /dev/fuse fd when the device can be opened directly.
    cfg.clone_fd = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_ok();

    // The watches go in before the mount is visible (the mount command makes them before
    // it first lists the stores, [`Fs::watch_early`]), and the warm-up starts only once
    // they are in place: a change made after the first listing the kernel gets is then
    // always reported, and what was listed or versioned before them is looked at again
    // ([`Fs::watch`]). Made on the watcher thread, the watches could come after the first
    // requests, and a session added or appended to in between stayed invisible for
    // KERNEL_TTL.
    let crate::tree::Watching {
        watcher: watch,
        events: wake_rx,
    } = fs.take_watch();
    match &watch {
        Ok(w) => log::info!("watching {} directories for changes", w.watched.len()),
        Err(e) => log::warn!("cannot watch the stores ({e}); polling every {POLL:?}"),
    }
    fs.start_warm_up();
    let pusher = Pusher::default();
    let sfs = SessFs::new(fs.clone(), pusher.clone(), ring);
    let mut session = fuser::Session::new(sfs.clone(), dir, &cfg)?;
    let _ = pusher.set(session.notifier());
    let prepared = sfs
        .ring_prepared
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(prepared) = prepared {
        // INIT has been answered: the queues can register now.
        use std::os::fd::AsFd;
        let queues = ring::start(sfs.clone(), session.as_fd(), prepared);
        match queues {
            Ok(threads) => {
                log::info!("requests come through io_uring ({threads} threads)");
                fs.render_ahead_at_idle();
            }
            Err(e) => log::warn!("no io_uring queues ({e}); requests come through /dev/fuse"),
        }
    }
    let mut unmounter = session.unmount_callable();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flushes = fs.clone();
    let watcher = {
        let notifier = session.notifier();
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("sessfs-watch".into())
            .spawn(move || {
                let guarded = |what: &str, f: &dyn Fn() -> crate::tree::Invalidations| {
                    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
                        log::error!(
                            "panic in the change watcher ({what}): {}",
                            panic_message(&p)
                        );
                        crate::tree::Invalidations::default()
                    })
                };
                // Sent from this thread only, holding no lock: invalidating a name waits for
                // its directory's lock, which a reader holds while it waits for a listing.
                let send = |what: Forget, sent: usize, again: &mut Retries| {
                    let sent_now = match &what {
                        Forget::Inode(ino) => notifier.inval_inode(INodeNo(*ino), 0, 0),
                        // A negative offset: the attributes, no page.
                        Forget::Attrs(ino) => notifier.inval_inode(INodeNo(*ino), -1, 0),
                        Forget::Entry(dir, name) => {
                            notifier.inval_entry(INodeNo(*dir), OsStr::new(name))
                        }
                    };
                    if let Err(e) = sent_now {
                        log::debug!("invalidating {what:?}: {e}");
                    }
                    again.add(what, sent + 1);
                };
                let push = |what: &str,
                            changes: &dyn Fn() -> crate::tree::Invalidations,
                            again: &mut Retries| {
                    let changes = guarded(what, changes);
                    for ino in changes.inodes {
                        send(Forget::Inode(ino), 0, again);
                    }
                    for ino in changes.files {
                        send(Forget::Attrs(ino), 0, again);
                    }
                    for (dir, name) in changes.gone {
                        send(Forget::Entry(dir, name), 0, again);
                    }
                    // A new name needs no second send: the kernel keeps its absence for
                    // only a second ([`TTL`]).
                    for (parent, name) in changes.entries {
                        if let Err(e) = notifier.inval_entry(INodeNo(parent), OsStr::new(&name)) {
                            log::debug!("inval_entry {parent}/{name}: {e}");
                        }
                    }
                };
                let mut last_full = std::time::Instant::now();
                let mut full_every = if watch.is_ok() { SAFETY_POLL } else { POLL };
                let mut again = Retries::default();
                // Changes waiting for the gap after the last batch to pass ([`change_gap`]).
                let mut pending = crate::watch::Batch::default();
                let mut next_changes = std::time::Instant::now();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // Wakes on a change, else every POLL to look at `stop` (sooner when an
                    // invalidation or waiting changes are due).
                    let mut wait = again.wait(POLL);
                    if !pending.paths.is_empty() {
                        wait = wait
                            .min(next_changes.saturating_duration_since(std::time::Instant::now()));
                    }
                    let batch = crate::watch::next_batch(&wake_rx, wait);
                    pending.paths.extend(batch.paths);
                    pending.relist |= batch.relist;
                    pending.rescan |= batch.rescan;
                    if pending.rescan || last_full.elapsed() >= full_every {
                        // Lost events, no watches, or the slow safety net: look at everything.
                        pending = crate::watch::Batch::default();
                        last_full = std::time::Instant::now();
                        for (what, sent) in again.late() {
                            send(what, sent, &mut again);
                        }
                        push("poll", &|| fs.poll_changes(), &mut again);
                        let took = last_full.elapsed();
                        log::debug!("looked at every session in {took:?}");
                        if watch.is_ok() {
                            full_every = safety_interval(took);
                        }
                    } else if !pending.paths.is_empty() && std::time::Instant::now() >= next_changes
                    {
                        let mut b = std::mem::take(&mut pending);
                        b.paths.sort();
                        b.paths.dedup();
                        let started = std::time::Instant::now();
                        push(
                            "changes",
                            &|| fs.changes_for(&b.paths, b.relist),
                            &mut again,
                        );
                        next_changes = std::time::Instant::now() + change_gap(started.elapsed());
                    }
                    for (what, sent) in again.due() {
                        send(what, sent, &mut again);
                    }
                }
            })?
    };
    let worker = std::thread::Builder::new()
        .name("sessfs-serve".into())
        .spawn(move || {
            let r = session.run();
            // Unmounted from outside (`sessfs umount`, `fusermount3 -u`): wake the waiter.
            // SAFETY: sending a signal to our own process has no memory effects.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGTERM);
            }
            r
        })?;
    ready();
    let mut sig: libc::c_int = 0;
    // SAFETY: `set` is a valid initialised sigset and `sig` a valid out pointer.
    unsafe {
        libc::sigwait(&set, &mut sig);
    }
    log::info!("signal {sig}: unmounting {}", dir.display());
    // Stop pushing before the channel goes away.
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = watcher.join();
    if let Err(e) = unmounter.unmount() {
        log::debug!("unmount: {e}");
    }
    let served = match worker.join() {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::other("serving thread panicked")),
    };
    // What was rendered is on disk for the next mount.
    flushes.flush_disk_cache();
    served
}

#[cfg(test)]
mod tests {
    use super::{change_gap, safety_interval, Forget, Retries, RETRY_AFTER};
    use std::time::Duration;

    /// Changes take at most a tenth of a busy mount's time, and never wait so long that a
    /// change shows later than a second.
    #[test]
    fn changes_keep_to_a_tenth_and_within_the_freshness_bound() {
        let ms = Duration::from_millis;
        assert_eq!(change_gap(ms(0)), ms(0));
        assert_eq!(change_gap(ms(1)), ms(9));
        assert_eq!(change_gap(ms(50)), ms(450));
        assert_eq!(change_gap(ms(100)), ms(700));
        assert!(change_gap(Duration::from_secs(5)) + crate::watch::SETTLE < ms(1000));
    }

    /// The safety net looks every 30 s while a look is quick, keeps a slow one to a
    /// thousandth of the time, and never waits more than five minutes.
    #[test]
    fn the_safety_net_keeps_to_a_thousandth_of_an_idle_mount() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs;
        assert_eq!(safety_interval(ms(0)), s(30));
        assert_eq!(safety_interval(ms(25)), s(30));
        assert_eq!(safety_interval(ms(130)), s(130));
        assert_eq!(safety_interval(ms(299)), s(299));
        assert_eq!(safety_interval(s(2)), s(300));
    }

    /// An invalidation comes back after each delay in turn, then once more at the safety
    /// look, then is dropped; sending one anew restarts its delays.
    #[test]
    fn invalidations_come_back_after_each_delay_and_at_the_safety_look_then_stop() {
        let mut again = Retries::default();
        let seven = Forget::Inode(7);
        assert_eq!(again.wait(Duration::from_secs(1)), Duration::from_secs(1));
        again.add(seven.clone(), 1);
        assert!(again.wait(Duration::from_secs(1)) <= RETRY_AFTER[0]);
        assert!(again.due().is_empty(), "not due before its delay");
        assert!(
            again.late().is_empty(),
            "not at the safety look while delays are left"
        );
        let mut sent = Vec::new();
        while !again.soon.is_empty() {
            std::thread::sleep(again.wait(Duration::from_secs(1)));
            for (what, n) in again.due() {
                assert_eq!(what, seven);
                sent.push(n);
                again.add(what, n + 1);
            }
            if sent.len() == 1 {
                again.add(seven.clone(), 1);
            }
        }
        assert_eq!(sent, [1, 1, 2, 3]);
        assert_eq!(again.late(), [(seven.clone(), 4)]);
        again.add(seven, 5);
        assert!(
            again.late().is_empty() && again.soon.is_empty(),
            "sent for the last time"
        );

        let gone = Forget::Entry(3, "a".into());
        again.add(gone.clone(), 1);
        assert_eq!(again.soon[&gone].1, 1, "a removed name is sent again too");
    }
}
