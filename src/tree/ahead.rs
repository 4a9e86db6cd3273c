//! Render-ahead: the sessions after the one a walk just reached, rendered on background
//! threads before the walk asks for them.
//!
//! Owns the render-ahead queue and its threads' policy. It renders through `rendering`
//! and versions through `versions`, only ever moves work earlier (a session already
//! cached is skipped), and never answers a request.

use super::threads::{panic_message, set_idle_policy};
use super::Fs;
use crate::cache::SessionKey;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Sessions rendered ahead of the one a reader just asked for.
pub const PREFETCH_AHEAD: usize = 8;

/// The render-ahead queue and the last session put on it, so a walk that keeps finding
/// its sessions rendered keeps the queue that far ahead without queueing any twice.
pub(super) struct Prefetch {
    tx: std::sync::mpsc::SyncSender<SessionKey>,
    horizon: Option<SessionKey>,
}

impl Fs {
    /// Render ahead: `grep -r`, `find` and `cp -r` walk sessions in directory order, so when
    /// a reader makes sessfs render one session, the next [`PREFETCH_AHEAD`] sessions of that
    /// agent are rendered on `threads` background threads while the reader works through
    /// this one. Like kernel readahead it only moves work earlier: a walk still renders each
    /// session once, and the byte budget still holds.
    pub fn start_prefetch(self: &Arc<Self>, threads: usize) {
        let (tx, rx) = std::sync::mpsc::sync_channel::<SessionKey>(4 * PREFETCH_AHEAD);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let fs = Arc::downgrade(self);
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("sessfs-prefetch-{i}"))
                .spawn(move || {
                    let mut idle = false;
                    loop {
                        let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let (Ok(key), Some(fs)) = (next, fs.upgrade()) else {
                            return;
                        };
                        if !idle && fs.prefetch_idle.load(Ordering::Relaxed) {
                            idle = true;
                            set_idle_policy();
                        }
                        if let Err(p) = catch_unwind(AssertUnwindSafe(|| fs.prefetch_one(&key))) {
                            log::error!("panic while prefetching: {}", panic_message(&p));
                        }
                    }
                });
            if let Err(e) = spawned {
                log::warn!("no prefetch thread: {e}");
            }
        }
        *self.prefetch.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Prefetch { tx, horizon: None });
    }

    /// Render ahead at `SCHED_IDLE` from now on. The io_uring transport asks for it: its
    /// request threads hand replies over at idle policy (`src/fuse/ring.rs`), and a render
    /// a reader waits for must not yield to one guessing what it reads next (a cold walk of
    /// 2,000 sessions of 97 KB: 1.62-1.91 s with render-ahead at normal policy, 1.44-1.52 s
    /// at idle). Through `/dev/fuse` it stays at normal policy: there idle render-ahead made
    /// a cold walk of 10,000 sessions slower (4.9-5.1 s against 3.5-4.2 s).
    pub fn render_ahead_at_idle(&self) {
        self.prefetch_idle.store(true, Ordering::Relaxed);
    }

    /// Queue the [`PREFETCH_AHEAD`] sessions after `key` that are not queued yet. Called
    /// whenever a reader lists a session, rendered ahead or not, so the render-ahead
    /// threads stay ahead of a walk instead of waiting for it to miss again.
    pub(super) fn prefetch_after(&self, key: &SessionKey) {
        let mut guard = self.prefetch.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = guard.as_mut() else { return };
        let from = match &p.horizon {
            Some(h) if h.agent == key.agent && h.name > key.name => h.name.clone(),
            _ => key.name.clone(),
        };
        let next: Vec<String> = {
            let st = self.state();
            let Some(a) = st.agents.get(&key.agent) else {
                return;
            };
            let ahead = a
                .sessions
                .range::<str, _>((
                    std::ops::Bound::Excluded(&*key.name),
                    std::ops::Bound::Unbounded,
                ))
                .take(PREFETCH_AHEAD)
                .map(|(name, _)| name);
            ahead.filter(|n| n.as_str() > &*from).cloned().collect()
        };
        for name in next {
            let k = SessionKey {
                agent: key.agent,
                name: name.into(),
            };
            // A full queue means the prefetcher is behind; the reader will render itself.
            if p.tx.try_send(k.clone()).is_err() {
                break;
            }
            p.horizon = Some(k);
        }
    }

    /// Render a session unless its files are already cached at the current version.
    fn prefetch_one(&self, key: &SessionKey) {
        let Ok((_, lock)) = self.check_session(key) else {
            return;
        };
        let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let Ok((version, _)) = self.check_session(key) else {
            return;
        };
        if self.cache.contains(key, version, "meta.json") {
            return;
        }
        if let Ok((bundle, version)) = self.produce(key) {
            self.cache.insert(key, version, bundle, None);
        }
    }
}
