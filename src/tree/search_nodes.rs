//! The root's `search/` directory and its `search/<query>/` nodes.
//!
//! Owns [`SearchNodes`]: the query directories and their links, in an inode range of their
//! own ([`SEARCH_INO_BASE`]), at most [`SEARCH_QUERIES`] queries, each searched again after
//! [`SEARCH_TTL`]. What matches a query is the [`Searcher`]'s business (the mount sets the
//! full-text index, `crate::search`, which imports this module, never the reverse); this
//! module only keeps the links stable and bounded. The permanent inode table is not
//! touched.

use super::nodes::{NodeKind, SEARCH_INO_BASE};
use super::threads::panic_message;
use super::{Fs, FsError, Result};
use crate::cache::SessionKey;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant, SystemTime};

/// Name of the root directory whose lookups run a search.
pub const SEARCH_DIR: &str = "search";

/// Queries whose directories (and links) are kept; the least recently used is forgotten.
pub const SEARCH_QUERIES: usize = 64;

/// How long a query's results (and, in the kernel, a `search/` node) are trusted: short, so
/// a new message shows in `search/<query>/` within a second (a re-search is a listing, a
/// `stat` per session and one indexed query).
pub const SEARCH_TTL: Duration = Duration::from_millis(250);

/// Sessions listed in one `search/<query>/` directory at most, best first.
pub const SEARCH_RESULTS: usize = 1000;

/// Finds the sessions that match a query, for `search/<query>/` (see `crate::search`).
pub trait Searcher: Send + Sync {
    /// Matching sessions, best first, at most `limit`.
    fn sessions(
        &self,
        fs: &Fs,
        query: &str,
        limit: usize,
    ) -> std::result::Result<Vec<SessionKey>, String>;
}

/// The links of one `search/<query>/` directory as `(name, inode, session)`.
type SearchLinks = Vec<(String, u64, SessionKey)>;

struct QueryResults {
    checked: Instant,
    changed: SystemTime,
    links: SearchLinks,
}

/// The nodes under `search/`: a query can be any string, so unlike the rest of the tree
/// these inodes are not kept for the life of the mount. They come from their own range
/// (from [`SEARCH_INO_BASE`]), at most [`SEARCH_QUERIES`] queries are kept, each with its
/// links, and the least recently used query is forgotten with its links. A kernel that still
/// holds a forgotten inode gets `ENOENT` and looks the name up again; the FUSE adapter gives
/// these nodes a short TTL ([`SEARCH_TTL`], [`Fs::is_volatile`]) so that is rare and
/// results stay fresh.
#[derive(Default)]
pub(super) struct SearchNodes {
    next: u64,
    pub(super) nodes: HashMap<u64, NodeKind>,
    /// Query inode by query text.
    queries: HashMap<String, u64>,
    /// Query inodes, least recently used first.
    order: std::collections::VecDeque<u64>,
    /// Per query inode: when it was run, when its result set last changed (the directory's
    /// mtime: the kernel keeps a directory's listing until its mtime moves), and its links
    /// as `(name, inode, session)`.
    results: HashMap<u64, QueryResults>,
}

impl Fs {
    /// Answer `search/<query>/` with `searcher` (once; later calls are ignored).
    pub fn set_searcher(&self, searcher: Box<dyn Searcher>) {
        let _ = self.searcher.set(searcher);
    }

    /// The inode of `search/<query>/`, made (and the oldest query forgotten) if new.
    pub(super) fn search_query_ino(&self, query: &str) -> u64 {
        let mut st = self.state_mut();
        let sn = &mut st.search;
        if let Some(&ino) = sn.queries.get(query) {
            sn.order.retain(|&i| i != ino);
            sn.order.push_back(ino);
            return ino;
        }
        while sn.order.len() >= SEARCH_QUERIES {
            let Some(old) = sn.order.pop_front() else {
                break;
            };
            if let Some(NodeKind::SearchQuery(q)) = sn.nodes.remove(&old) {
                sn.queries.remove(&q);
            }
            if let Some(r) = sn.results.remove(&old) {
                for (_, lino, _) in r.links {
                    sn.nodes.remove(&lino);
                }
            }
        }
        let ino = SEARCH_INO_BASE + sn.next;
        sn.next += 1;
        sn.nodes
            .insert(ino, NodeKind::SearchQuery(query.to_string()));
        sn.queries.insert(query.to_string(), ino);
        sn.order.push_back(ino);
        ino
    }

    /// The links of `search/<query>/` (inode `qino`), searched again when older than
    /// [`SEARCH_TTL`].
    /// A session keeps its link inode while it keeps matching.
    pub(super) fn search_results(&self, qino: u64) -> Result<SearchLinks> {
        Ok(self.search_run(qino)?.1)
    }

    /// As [`Fs::search_results`], with the time the result set last changed.
    pub(super) fn search_run(&self, qino: u64) -> Result<(SystemTime, SearchLinks)> {
        let query = {
            let st = self.state();
            if let Some(r) = st.search.results.get(&qino) {
                if r.checked.elapsed() < SEARCH_TTL {
                    return Ok((r.changed, r.links.clone()));
                }
            }
            match st.search.nodes.get(&qino) {
                Some(NodeKind::SearchQuery(q)) => q.clone(),
                _ => return Err(FsError::NotFound),
            }
        };
        let searcher = self.searcher.get().ok_or(FsError::NotFound)?;
        let found = catch_unwind(AssertUnwindSafe(|| {
            searcher.sessions(self, &query, SEARCH_RESULTS)
        }))
        .map_err(|p| FsError::Internal(panic_message(&p)))?
        .map_err(|e| {
            log::warn!("search '{query}': {e}");
            FsError::Internal(e)
        })?;
        // A session the index holds and this mount has not listed yet (another process's
        // search indexed it before the change watcher's batch reached this mount): its
        // store is listed again now, so the link leads to it; one still missing after that
        // is left out.
        let mut relisted = std::collections::HashSet::new();
        for key in &found {
            if !self.session_exists(key) && relisted.insert(key.agent) {
                self.refresh_agent(key.agent, true);
            }
        }
        let mut found = found;
        if !relisted.is_empty() {
            found.retain(|k| self.session_exists(k));
        }
        let mut st = self.state_mut();
        let sn = &mut st.search;
        if !sn.nodes.contains_key(&qino) {
            // Forgotten meanwhile by other queries.
            return Err(FsError::NotFound);
        }
        let previous = sn.results.remove(&qino);
        let before: Vec<SessionKey> = previous
            .iter()
            .flat_map(|r| r.links.iter().map(|(_, _, k)| k.clone()))
            .collect();
        let changed = match &previous {
            Some(r) if before == found => r.changed,
            _ => SystemTime::now(),
        };
        let old: HashMap<SessionKey, u64> = previous
            .map(|r| r.links.into_iter().map(|(_, i, k)| (k, i)).collect())
            .unwrap_or_default();
        let mut keep: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let mut links = Vec::with_capacity(found.len());
        for key in found {
            let ino = match old.get(&key) {
                Some(&i) => i,
                None => {
                    let i = SEARCH_INO_BASE + sn.next;
                    sn.next += 1;
                    sn.nodes.insert(i, NodeKind::SearchLink(key.clone()));
                    i
                }
            };
            keep.insert(ino);
            links.push((format!("{}:{}", key.agent, key.name), ino, key));
        }
        for (_, i) in old {
            if !keep.contains(&i) {
                sn.nodes.remove(&i);
            }
        }
        sn.results.insert(
            qino,
            QueryResults {
                checked: Instant::now(),
                changed,
                links: links.clone(),
            },
        );
        Ok((changed, links))
    }
}
