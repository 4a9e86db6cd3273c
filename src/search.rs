//! Full-text search over every session: `sessfs search` and the mount's `search/` directory.
//!
//! The index is a cache sessfs owns, outside every native store: one SQLite file
//! (`$XDG_CACHE_HOME/sessfs/index.sqlite3`, else `~/.cache/sessfs/`, directory mode 0700)
//! holding, per session, the lines of every `transcript.md` and `tools/*.md` the mount shows
//! (branches and nested subagents included), so a hit prints as
//! `claude/<id>/transcript.md:12:` and opens in an editor at the right line. Indexing
//! rendered text rather than native records means the index finds exactly what `grep -r`
//! over the mount finds, for every store, with no per-store code.
//!
//! A query is answered in two steps, so that the index stays smaller than the text it
//! indexes (FTS5 rows of lines with positions, the first design, took 4.3 times the text):
//!
//! 1. *Candidates*: an FTS5 table with the trigram tokenizer holds one row per session, its
//!    distinct lowercased words, contentless and with `detail=none`: a trigram costs a few
//!    bytes per session that has it, not per occurrence. A query's words give trigrams
//!    (`cache` gives `cac`, `ach`, `che`); the sessions holding all of them are a superset
//!    of the sessions that match. (`detail=none` cannot answer a phrase of several
//!    trigrams, so the trigrams are ANDed one by one; step 2 puts them back in order.)
//! 2. *Verification*: a plain table keeps each session's lines zstd-compressed; the
//!    candidates' lines are decompressed and every line is checked for every term as a
//!    case-insensitive substring. That is the exact answer, for phrases, punctuation and
//!    words shorter than a trigram alike, and it ranks lines with bm25's formula.
//!
//! Freshness: each session's row keeps the version it was indexed at (the same fingerprint
//! the mount uses to re-render: size and mtime of its native files, or the store's own row
//! hash for SQLite stores). [`Index::sync`] lists the stores, compares versions against one
//! read of the sessions table, and re-parses only sessions that changed, appeared or went;
//! when nothing did it writes nothing. Every search runs it first, so a message appended a
//! moment ago is found. Listing every store and versioning every session was most of what
//! a search cost when nothing changed, so `sessfs search` first checks each store's
//! *glance* ([`Index::unchanged`]): the `stat`s of the directories its listing read and of
//! its sessions' files, kept from the last listing; only stores whose glance moved (or that
//! have none) are listed. `docs/SEMANTICS.md` ("A search when nothing changed") says what
//! a glance can and cannot see. The file is only a cache: deleting it loses nothing, and a file
//! that is not a sessfs index (corrupt, foreign, older schema) is replaced, with one
//! warning line. That is also why it is written with `synchronous=NORMAL` (WAL: no fsync
//! per commit) and in big transactions.
//!
//! Indexing renders sessions on every core and writes from one thread. Several processes
//! may share the index (a mount and `sessfs search` in a shell): writes are transactions of
//! at most a quarter of a second, and readers use WAL.

use crate::cache::SessionKey;
use crate::model::Agent;
use crate::render::{self, Node};
use crate::tree::{cores, Fs};
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Written into the index; a file with anything else is rebuilt.
const SCHEMA: &str = "sessfs-search-2";

/// The stores' glances ([`Index::unchanged`]), added to an index of [`SCHEMA`] when it
/// has none. Any write to `sessions`, by whatever process or build of sessfs, deletes every
/// glance (a trigger: a build that knows nothing of glances keeps them honest too) and
/// counts in `writes`, so a process recording a glance sees whether another wrote meanwhile.
const GLANCES: &str = "BEGIN IMMEDIATE;
     CREATE TABLE IF NOT EXISTS glances(
         agent TEXT PRIMARY KEY, roots BLOB NOT NULL, sessions INTEGER NOT NULL,
         stamp INTEGER NOT NULL, paths BLOB NOT NULL);
     INSERT OR IGNORE INTO info VALUES ('writes', 0);
     CREATE TRIGGER IF NOT EXISTS glances_insert AFTER INSERT ON sessions BEGIN
         DELETE FROM glances; UPDATE info SET value = value + 1 WHERE key = 'writes'; END;
     CREATE TRIGGER IF NOT EXISTS glances_update AFTER UPDATE ON sessions BEGIN
         DELETE FROM glances; UPDATE info SET value = value + 1 WHERE key = 'writes'; END;
     CREATE TRIGGER IF NOT EXISTS glances_delete AFTER DELETE ON sessions BEGIN
         DELETE FROM glances; UPDATE info SET value = value + 1 WHERE key = 'writes'; END;
     COMMIT;";

/// Lines longer than this are indexed cut (a minified file in a tool output is one line).
const MAX_LINE: usize = 4096;

/// At most this many trigrams select candidates: any subset gives a superset of the
/// matches, and a long phrase would otherwise make a query of hundreds of terms.
const MAX_GRAMS: usize = 64;

/// Between two words of a session's word list. Trigrams crossing it (`ab\n`, `\nxy`, …)
/// depend on two characters of one word only, so few distinct ones are added.
const WORD_GAP: &str = "\n\n\n";

/// bm25's parameters, and the line length it weighs a line's length against.
const K1: f64 = 1.2;
const B: f64 = 0.75;
const AVG_LINE: f64 = 80.0;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("search index {path}: {source}")]
    Sqlite {
        path: String,
        source: rusqlite::Error,
    },
    #[error("cannot create {path}: {source}")]
    Dir {
        path: String,
        source: std::io::Error,
    },
    #[error("zstd: {0}")]
    Zstd(String),
    #[error("no cache directory: set XDG_CACHE_HOME or HOME")]
    NoCacheDir,
}

pub type Result<T> = std::result::Result<T, Error>;

/// Where the index lives: `$XDG_CACHE_HOME/sessfs/index.sqlite3`, else
/// `$HOME/.cache/sessfs/index.sqlite3`.
pub fn default_path() -> Result<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or(Error::NoCacheDir)?;
    Ok(base.join("sessfs").join("index.sqlite3"))
}

/// One matching line.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// Path inside the mount: `claude/<id>/transcript.md`.
    pub path: String,
    /// 1-based line number in that file.
    pub line: u64,
    pub agent: String,
    /// The session's directory name under its agent.
    #[serde(skip)]
    pub name: String,
    /// `<agent>:<native id>`, as `sessfs show` takes it.
    pub session: String,
    pub title: Option<String>,
    /// The session's last activity (ISO 8601 UTC).
    pub updated_at: Option<String>,
    pub text: String,
    /// The line's bm25 score, negated as SQLite's `bm25()` is: lower is better.
    pub score: Option<f64>,
}

/// Which hits to return.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub agents: Vec<Agent>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Sessions whose working directory starts with this.
    pub cwd: Option<String>,
    pub limit: Option<usize>,
}

/// A query read the way the README describes: words must all occur in one line, each as a
/// case-insensitive substring; `"…"` is a phrase (spaces included, `""` for a quote inside);
/// a trailing `*` is allowed (a word already matches inside longer words).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// Terms, each a substring the line must contain.
    pub terms: Vec<String>,
}

impl Query {
    pub fn parse(q: &str) -> Query {
        let mut terms = Vec::new();
        let mut chars = q.chars().peekable();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                chars.next();
                continue;
            }
            let mut term = String::new();
            if c == '"' {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '"' {
                        if chars.peek() == Some(&'"') {
                            chars.next();
                            term.push('"');
                        } else {
                            break;
                        }
                    } else {
                        term.push(c);
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() {
                        break;
                    }
                    term.push(c);
                    chars.next();
                }
                if term.len() > 1 && term.ends_with('*') {
                    term.pop();
                }
            }
            if !term.is_empty() && !terms.contains(&term) {
                terms.push(term);
            }
        }
        Query { terms }
    }

    /// The FTS5 expression that selects candidate sessions: the trigrams of every word of
    /// every term (lowercased, split at whitespace as the word lists are), ANDed; `None`
    /// when no word has three characters (then every session is a candidate).
    fn grams(&self) -> Option<String> {
        let mut grams: Vec<String> = Vec::new();
        for t in &self.terms {
            for w in t.to_lowercase().split_whitespace() {
                let chars: Vec<char> = w.chars().collect();
                for g in chars.windows(3) {
                    let g = format!("\"{}\"", String::from_iter(g).replace('"', "\"\""));
                    if !grams.contains(&g) {
                        grams.push(g);
                    }
                }
            }
        }
        grams.truncate(MAX_GRAMS);
        (!grams.is_empty()).then(|| grams.join(" AND "))
    }

    /// Byte ranges of `text` where a term occurs (case-insensitive), merged and in order.
    pub fn highlights(&self, text: &str) -> Vec<(usize, usize)> {
        let lower = text.to_lowercase();
        // Lowercasing can change byte lengths outside ASCII; then there is no safe mapping
        // back, and the line is shown without highlights.
        if lower.len() != text.len() {
            return Vec::new();
        }
        let mut spans = Vec::new();
        for t in &self.terms {
            let t = t.to_lowercase();
            if t.is_empty() {
                continue;
            }
            let mut from = 0;
            while let Some(i) = lower[from..].find(&t) {
                let start = from + i;
                spans.push((start, start + t.len()));
                from = start + t.len();
            }
        }
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (s, e) in spans {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged
    }
}

/// What a [`Index::sync`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncStats {
    pub sessions: usize,
    pub indexed: usize,
    pub removed: usize,
    pub lines: usize,
}

pub struct Index {
    conn: Connection,
    path: PathBuf,
}

impl Index {
    /// Open (or create) the index at `path`. A file that is not a sessfs index of this
    /// schema is deleted and built afresh, with one warning line on stderr.
    pub fn open(path: &Path) -> Result<Index> {
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        match Index::try_open(path) {
            Ok(ix) => Ok(ix),
            Err(why) => {
                eprintln!(
                    "sessfs: warning: {} is not a usable search index ({why}); rebuilding it",
                    path.display()
                );
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    let mut p = path.as_os_str().to_owned();
                    p.push(suffix);
                    let _ = std::fs::remove_file(PathBuf::from(p));
                }
                Index::try_open(path).map_err(|e| match e {
                    OpenError::Sqlite(source) => Error::Sqlite {
                        path: path.display().to_string(),
                        source,
                    },
                    OpenError::Foreign(what) => Error::Sqlite {
                        path: path.display().to_string(),
                        source: rusqlite::Error::InvalidParameterName(what),
                    },
                })
            }
        }
    }

    /// The index at [`default_path`].
    pub fn open_default() -> Result<Index> {
        Index::open(&default_path()?)
    }

    fn try_open(path: &Path) -> std::result::Result<Index, OpenError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        // Reading the schema is what fails on a file that is not a database.
        let tables: Vec<String> = {
            let mut st = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
            let rows = st.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        if tables.is_empty() {
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.execute_batch(&format!(
                "BEGIN IMMEDIATE;
                 CREATE TABLE IF NOT EXISTS info(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT OR IGNORE INTO info VALUES ('schema', '{SCHEMA}');
                 CREATE TABLE IF NOT EXISTS sessions(
                     id INTEGER PRIMARY KEY,
                     agent TEXT NOT NULL,
                     name TEXT NOT NULL,
                     unified TEXT NOT NULL,
                     version INTEGER NOT NULL,
                     title TEXT,
                     updated TEXT,
                     cwd TEXT,
                     UNIQUE(agent, name));
                 CREATE TABLE IF NOT EXISTS texts(
                     id INTEGER PRIMARY KEY, size INTEGER NOT NULL, body BLOB NOT NULL);
                 CREATE VIRTUAL TABLE IF NOT EXISTS grams USING fts5(
                     words, content = '', contentless_delete = 1, detail = none,
                     tokenize = 'trigram');
                 COMMIT;"
            ))?;
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        if !tables.iter().any(|t| t == "glances") {
            conn.execute_batch(GLANCES)?;
        }
        let schema: Option<String> = conn
            .query_row("SELECT value FROM info WHERE key = 'schema'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|_| OpenError::Foreign("no sessfs schema".into()))?;
        if schema.as_deref() != Some(SCHEMA) {
            return Err(OpenError::Foreign(format!(
                "schema {}",
                schema.as_deref().unwrap_or("missing")
            )));
        }
        Ok(Index {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bring the index up to date with `fs`: re-index sessions whose version changed, add
    /// new ones, drop those that went. `progress(done, total)` is called as sessions are
    /// indexed (total = sessions to index, not all sessions).
    pub fn sync(&mut self, fs: &Fs, progress: &mut dyn FnMut(usize, usize)) -> Result<SyncStats> {
        self.sync_since(fs, None, Glanced::default(), progress)
    }

    /// [`Index::sync`], and when `since` is given (a time before `fs` first listed its
    /// stores), each store's glance recorded for [`Index::unchanged`]. A glance is recorded
    /// only when every session was versioned and indexed, no other process wrote the index
    /// meanwhile and no directory of the store moved within [`RACY`] of `since`.
    ///
    /// The stores whose glances hold (`glanced`, just checked by [`Index::unchanged`]) are
    /// neither listed nor versioned, and their glances are kept.
    pub fn sync_since(
        &mut self,
        fs: &Fs,
        since: Option<SystemTime>,
        glanced: Glanced,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<SyncStats> {
        let wrap = wrap(&self.path);
        let mut writes = if glanced.rows.is_empty() {
            self.writes()?
        } else {
            glanced.writes
        };
        let stores: Vec<&dyn crate::stores::Store> = fs
            .stores()
            .iter()
            .map(|s| s.as_ref())
            .filter(|s| !glanced.holds(s.agent()))
            .collect();
        let agents: Vec<Agent> = stores.iter().map(|s| s.agent()).collect();
        let keys = fs.sessions_of(&agents);
        // Stamped after the listing and before any version is taken: what the index holds
        // once this sync is done is never older than what the glances vouch for.
        let glances: Vec<Option<GlanceRow>> = match since {
            Some(since) => stores
                .iter()
                .map(|s| take_glance(*s, &fs.listed(s.agent()), since))
                .collect(),
            None => Vec::new(),
        };
        let mut complete = since.is_some();
        // agent -> name -> (id, version) of every indexed session of the agents synced and
        // of agents with no store; what is left in it once every listed session has taken
        // its own out is gone.
        let mut known: HashMap<String, HashMap<String, (i64, i64)>> = HashMap::new();
        {
            // The agents in the index first (from its (agent, name) index alone), then the
            // rows of those not held, by that index too.
            let indexed: Vec<String> = {
                let mut st = self
                    .conn
                    .prepare_cached("SELECT DISTINCT agent FROM sessions")
                    .map_err(wrap)?;
                let rows = st.query_map([], |r| r.get(0)).map_err(wrap)?;
                rows.collect::<rusqlite::Result<_>>().map_err(wrap)?
            };
            let read: Vec<&String> = indexed
                .iter()
                .filter(|a| !glanced.rows.iter().any(|r| &r.agent == *a))
                .collect();
            let marks = vec!["?"; read.len()].join(", ");
            let mut st = self
                .conn
                .prepare(&format!(
                    "SELECT agent, name, id, version FROM sessions WHERE agent IN ({marks})"
                ))
                .map_err(wrap)?;
            let mut rows = st.query(rusqlite::params_from_iter(read)).map_err(wrap)?;
            while let Some(r) = rows.next().map_err(wrap)? {
                let (agent, name) = (r.get(0).map_err(wrap)?, r.get(1).map_err(wrap)?);
                let row = (r.get(2).map_err(wrap)?, r.get(3).map_err(wrap)?);
                known.entry(agent).or_default().insert(name, row);
            }
        }
        // A stat (or a store's row hash) per session: on every core, it is most of the time
        // a search takes when nothing changed.
        let versions: Vec<Option<u64>> = {
            let chunk = keys.len().div_ceil(cores()).max(1);
            std::thread::scope(|scope| {
                let parts: Vec<_> = keys
                    .chunks(chunk)
                    .map(|part| {
                        let versions = move || part.iter().map(|k| fs.source_version(k).ok());
                        (
                            part.len(),
                            scope.spawn(move || versions().collect::<Vec<_>>()),
                        )
                    })
                    .collect();
                parts
                    .into_iter()
                    .flat_map(|(n, p)| p.join().unwrap_or_else(|_| vec![None; n]))
                    .collect()
            })
        };
        let mut stale: Vec<(SessionKey, u64)> = Vec::new();
        for (key, version) in keys.iter().zip(versions) {
            let Some(version) = version else {
                log::debug!("{}/{}: no version, no glance", key.agent, key.name);
                complete = false;
                continue;
            };
            let indexed = known
                .get_mut(key.agent.name())
                .and_then(|m| m.remove(&*key.name));
            if indexed.map(|(_, v)| v as u64) != Some(version) {
                stale.push((key.clone(), version));
            }
        }
        let gone: Vec<i64> = known
            .values()
            .flat_map(|m| m.values().map(|&(id, _)| id))
            .collect();
        // Nothing new to vouch for and nothing written: the glances that held are still in
        // place, and the index is left alone.
        let worth = glances.iter().any(Option::is_some) || !gone.is_empty() || !stale.is_empty();
        let glances: Vec<Option<GlanceRow>> = glances
            .into_iter()
            .chain(glanced.rows.into_iter().map(Some))
            .collect();
        let mut stats = SyncStats {
            sessions: keys.len() + glanced.sessions,
            removed: gone.len(),
            ..SyncStats::default()
        };
        if !gone.is_empty() {
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(wrap)?;
            for id in &gone {
                writes += tx
                    .execute("DELETE FROM grams WHERE rowid = ?1", [id])
                    .and_then(|_| tx.execute("DELETE FROM texts WHERE id = ?1", [id]))
                    .and_then(|_| tx.execute("DELETE FROM sessions WHERE id = ?1", [id]))
                    .map_err(wrap)? as i64;
            }
            tx.commit().map_err(wrap)?;
        }
        if stale.is_empty() {
            if complete && worth {
                self.record(glances, writes)?;
            }
            return Ok(stats);
        }
        // Parse, render and compress on every core; write on this thread, in transactions
        // of at most a quarter of a second so another process waits little for the lock.
        let total = stale.len();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let workers = cores().min(total);
        let (tx, rx) = std::sync::mpsc::sync_channel::<Option<Prepared>>(4 * workers);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                let (tx, next, stale) = (tx.clone(), &next, &stale);
                scope.spawn(move || {
                    let Ok(mut zstd) = zstd::bulk::Compressor::new(3) else {
                        return;
                    };
                    while let Some((key, version)) =
                        stale.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        if tx.send(prepare(fs, key, *version, &mut zstd)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            let mut batch: Vec<Prepared> = Vec::new();
            let mut last_write = Instant::now();
            for (i, p) in rx.iter().enumerate() {
                // A session that did not load is tried again at the next sync: no glance
                // may vouch for the index before it is in.
                complete &= p.is_some();
                batch.extend(p);
                if last_write.elapsed() > Duration::from_millis(250) {
                    writes += batch.len() as i64;
                    stats.lines += self.write(&mut batch)?;
                    last_write = Instant::now();
                }
                stats.indexed += 1;
                progress(i + 1, total);
            }
            writes += batch.len() as i64;
            stats.lines += self.write(&mut batch)?;
            if stats.indexed != total {
                log::debug!("indexed {} of {total}: no glance", stats.indexed);
            }
            complete &= stats.indexed == total;
            Ok(())
        })?;
        if complete {
            self.record(glances, writes)?;
        }
        Ok(stats)
    }

    /// The index's count of writes to its sessions (kept by the [`GLANCES`] triggers).
    fn writes(&self) -> Result<i64> {
        self.conn
            .query_row(
                "SELECT CAST(value AS INTEGER) FROM info WHERE key = 'writes'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map(Option::unwrap_or_default)
            .map_err(wrap(&self.path))
    }

    /// Keep `glances` (the stores' that have one) in place of the old ones, unless the
    /// index's count of writes is not `writes`, what this process's own writes brought it
    /// to: another process wrote meanwhile, maybe for other stores, and nothing is vouched
    /// for.
    fn record(&mut self, glances: Vec<Option<GlanceRow>>, writes: i64) -> Result<()> {
        let wrap = wrap(&self.path);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(wrap)?;
        let now: Option<i64> = tx
            .query_row(
                "SELECT CAST(value AS INTEGER) FROM info WHERE key = 'writes'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(wrap)?;
        if now.unwrap_or_default() != writes {
            log::debug!(
                "the index counts {} writes, this sync {writes}: no glance recorded",
                now.unwrap_or_default()
            );
            return Ok(());
        }
        tx.execute("DELETE FROM glances", []).map_err(wrap)?;
        for g in glances.into_iter().flatten() {
            tx.execute(
                "INSERT OR REPLACE INTO glances(agent, roots, sessions, stamp, paths)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![g.agent, g.roots, g.sessions as i64, g.stamp as i64, g.paths],
            )
            .map_err(wrap)?;
        }
        tx.commit().map_err(wrap)
    }

    /// Which of `stores` the index holds as listing them would give, found without listing
    /// them: those with a glance of their current roots ([`Index::sync_since`]) whose paths'
    /// stamps are what they were. [`Glanced::all`] when that is every store and the index
    /// holds no session of another agent: nothing changed.
    pub fn unchanged(&self, stores: &[Box<dyn crate::stores::Store>]) -> Result<Glanced> {
        let wrap = wrap(&self.path);
        let writes = self.writes()?;
        let mut rows: HashMap<String, GlanceRow> = HashMap::new();
        {
            let mut st = self
                .conn
                .prepare_cached("SELECT agent, roots, sessions, stamp, paths FROM glances")
                .map_err(wrap)?;
            let mut q = st.query([]).map_err(wrap)?;
            while let Some(r) = q.next().map_err(wrap)? {
                let row = GlanceRow {
                    agent: r.get(0).map_err(wrap)?,
                    roots: r.get(1).map_err(wrap)?,
                    sessions: usize::try_from(r.get::<_, i64>(2).map_err(wrap)?).unwrap_or(0),
                    stamp: r.get::<_, i64>(3).map_err(wrap)? as u64,
                    paths: r.get(4).map_err(wrap)?,
                };
                rows.insert(row.agent.clone(), row);
            }
        }
        // Every candidate's paths in one list, stamped on every core at once.
        let mut candidates: Vec<(GlanceRow, usize, usize)> = Vec::new();
        let mut all = Paths::default();
        for store in stores {
            let Some(row) = rows.remove(store.agent().name()) else {
                log::debug!("{}: no glance recorded", store.agent());
                continue;
            };
            if row.roots != roots_key(store.as_ref()) {
                log::debug!("{}: its roots changed", store.agent());
                continue;
            }
            let Some(paths) = zstd::stream::decode_all(row.paths.as_slice())
                .ok()
                .and_then(|b| decode_paths(&b))
            else {
                continue;
            };
            let (base, from) = (all.parents.len(), all.entries.len());
            all.parents.extend(paths.parents);
            all.entries
                .extend(paths.entries.into_iter().map(|(p, n)| (p + base, n)));
            candidates.push((row, from, all.entries.len()));
        }
        let stamps = stamp_all(&all.parents, &all.entries);
        let mut glanced = Glanced {
            writes,
            ..Glanced::default()
        };
        for (row, from, to) in candidates {
            if fold(stamps[from..to].iter().map(|s| s.0)) == row.stamp {
                glanced.sessions += row.sessions;
                glanced.rows.push(row);
            } else {
                log::debug!("{}: its glance moved", row.agent);
            }
        }
        glanced.all = glanced.rows.len() == stores.len() && !stores.is_empty() && {
            // Sessions of an agent with no store any more are gone from a listing.
            let marks = vec!["?"; stores.len()].join(", ");
            self.conn
                .query_row(
                    &format!("SELECT 1 FROM sessions WHERE agent NOT IN ({marks}) LIMIT 1"),
                    rusqlite::params_from_iter(stores.iter().map(|s| s.agent().name())),
                    |r| r.get::<_, i64>(0),
                )
                .optional()
                .map_err(wrap)?
                .is_none()
        };
        Ok(glanced)
    }

    fn write(&mut self, batch: &mut Vec<Prepared>) -> Result<usize> {
        if batch.is_empty() {
            return Ok(0);
        }
        let wrap = wrap(&self.path);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(wrap)?;
        let mut lines = 0;
        {
            let mut find = tx
                .prepare_cached("SELECT id FROM sessions WHERE agent = ?1 AND name = ?2")
                .map_err(wrap)?;
            let mut update = tx
                .prepare_cached(
                    "UPDATE sessions SET unified = ?2, version = ?3, title = ?4, updated = ?5,
                     cwd = ?6 WHERE id = ?1",
                )
                .map_err(wrap)?;
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO sessions(agent, name, unified, version, title, updated, cwd)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(wrap)?;
            let mut unindex = tx
                .prepare_cached("DELETE FROM grams WHERE rowid = ?1")
                .map_err(wrap)?;
            let mut text = tx
                .prepare_cached("INSERT OR REPLACE INTO texts(id, size, body) VALUES (?1, ?2, ?3)")
                .map_err(wrap)?;
            let mut index = tx
                .prepare_cached("INSERT INTO grams(rowid, words) VALUES (?1, ?2)")
                .map_err(wrap)?;
            for p in batch.drain(..) {
                let (agent, version) = (p.key.agent.name(), p.version as i64);
                let old: Option<i64> = find
                    .query_row(params![agent, p.key.name], |r| r.get(0))
                    .optional()
                    .map_err(wrap)?;
                let id = match old {
                    Some(id) => {
                        update
                            .execute(params![id, p.unified, version, p.title, p.updated, p.cwd])
                            .and_then(|_| unindex.execute([id]))
                            .map_err(wrap)?;
                        id
                    }
                    None => insert
                        .insert(params![
                            agent, p.key.name, p.unified, version, p.title, p.updated, p.cwd
                        ])
                        .map_err(wrap)?,
                };
                text.execute(params![id, p.size as i64, p.body])
                    .and_then(|_| index.execute(params![id, p.words]))
                    .map_err(wrap)?;
                lines += p.lines;
            }
        }
        tx.commit().map_err(wrap)?;
        Ok(lines)
    }

    /// Calls `found(session, path, line number, text, score)` for every line that holds
    /// every term, session by session: the candidates of [`Query::grams`] that pass `opts`,
    /// their lines decompressed and checked.
    fn scan(
        &self,
        q: &Query,
        opts: &Options,
        found: &mut dyn FnMut(&Meta, &str, u64, &str, f64),
    ) -> Result<()> {
        let wrap = wrap(&self.path);
        let terms: Vec<String> = q.terms.iter().map(|t| t.to_lowercase()).collect();
        let mut sql = String::from(
            "SELECT s.agent, s.name, s.unified, s.title, s.updated, t.size, t.body \
             FROM sessions s JOIN texts t ON t.id = s.id WHERE 1 ",
        );
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(g) = q.grams() {
            sql.push_str("AND s.id IN (SELECT rowid FROM grams WHERE grams MATCH ?) ");
            args.push(g.into());
        }
        if !opts.agents.is_empty() {
            let marks = vec!["?"; opts.agents.len()].join(", ");
            sql.push_str(&format!("AND s.agent IN ({marks}) "));
            for a in &opts.agents {
                args.push(a.name().to_string().into());
            }
        }
        if let Some(t) = opts.since {
            sql.push_str("AND s.updated >= ? ");
            args.push(iso(t).into());
        }
        if let Some(t) = opts.until {
            sql.push_str("AND s.updated <= ? ");
            args.push(iso(t).into());
        }
        if let Some(c) = &opts.cwd {
            sql.push_str("AND substr(s.cwd, 1, length(?)) = ? ");
            args.push(c.clone().into());
            args.push(c.clone().into());
        }
        let mut st = self.conn.prepare(&sql).map_err(wrap)?;
        let mut rows = st.query(rusqlite::params_from_iter(args)).map_err(wrap)?;
        // One decompression context and two buffers for every session.
        let mut zstd = zstd::bulk::Decompressor::new().map_err(|e| Error::Zstd(e.to_string()))?;
        let (mut raw, mut lower) = (Vec::new(), String::new());
        while let Some(r) = rows.next().map_err(wrap)? {
            let meta = Meta {
                agent: r.get(0).map_err(wrap)?,
                name: r.get(1).map_err(wrap)?,
                unified: r.get(2).map_err(wrap)?,
                title: r.get(3).map_err(wrap)?,
                updated: r.get(4).map_err(wrap)?,
            };
            let size: i64 = r.get(5).map_err(wrap)?;
            let rusqlite::types::ValueRef::Blob(blob) = r.get_ref(6).map_err(wrap)? else {
                continue;
            };
            // A row that does not decompress is skipped; the session's next change rewrites it.
            raw.clear();
            raw.reserve(size.max(0) as usize);
            if zstd.decompress_to_buffer(blob, &mut raw).is_err() {
                continue;
            }
            let body = match std::str::from_utf8(&raw) {
                Ok(body) => std::borrow::Cow::Borrowed(body),
                Err(_) => String::from_utf8_lossy(&raw),
            };
            scan_body(&body, &terms, &mut lower, &mut |path, n, text, score| {
                found(&meta, path, n, text, score)
            });
        }
        Ok(())
    }

    /// Matching lines, best first: bm25, then the newest session, then path and line.
    pub fn search(&self, q: &Query, opts: &Options) -> Result<Vec<Hit>> {
        if q.terms.is_empty() {
            return Ok(Vec::new());
        }
        let limit = opts.limit.unwrap_or(usize::MAX);
        let mut hits: Vec<Hit> = Vec::new();
        // Once `limit` hits are kept, the worst of them: a line that ranks after it is
        // dropped before it is copied (a common word matches most lines of every session).
        let mut worst: Option<Hit> = None;
        self.scan(q, opts, &mut |m, path, n, text, score| {
            let path = |m: &Meta| format!("{}/{}/{path}", m.agent, m.name);
            if let Some(w) = &worst {
                let head = rank(
                    (score, &m.updated, &m.unified, "", 0),
                    (w.score.unwrap_or(0.0), &w.updated_at, &w.session, "", 0),
                );
                let order =
                    head.then_with(|| (path(m).as_str(), n).cmp(&(w.path.as_str(), w.line)));
                if order != Ordering::Less {
                    return;
                }
            }
            let path = path(m);
            hits.push(Hit {
                path,
                line: n,
                agent: m.agent.clone(),
                name: m.name.clone(),
                session: m.unified.clone(),
                title: m.title.clone(),
                updated_at: m.updated.clone(),
                text: text.to_string(),
                score: Some(score),
            });
            if hits.len() >= limit.saturating_mul(2).max(1024) {
                sort_hits(&mut hits);
                hits.truncate(limit);
                worst = hits.last().cloned();
            }
        })?;
        sort_hits(&mut hits);
        hits.truncate(limit);
        Ok(hits)
    }

    /// The sessions with at least one matching line, best first (by their best line, as
    /// [`Index::search`] ranks lines), each once.
    pub fn sessions(&self, q: &Query, limit: usize) -> Result<Vec<SessionKey>> {
        if q.terms.is_empty() {
            return Ok(Vec::new());
        }
        let mut best: HashMap<(String, String), (f64, Option<String>, String)> = HashMap::new();
        self.scan(q, &Options::default(), &mut |m, _, _, _, score| {
            let e = best
                .entry((m.agent.clone(), m.name.clone()))
                .or_insert_with(|| (score, m.updated.clone(), m.unified.clone()));
            e.0 = e.0.min(score);
        })?;
        let mut found: Vec<_> = best.into_iter().collect();
        found.sort_by(|(ka, a), (kb, b)| {
            rank((a.0, &a.1, &a.2, &ka.1, 0), (b.0, &b.1, &b.2, &kb.1, 0))
        });
        Ok(found
            .into_iter()
            .filter_map(|((agent, name), _)| {
                Some(SessionKey {
                    agent: Agent::from_name(&agent)?,
                    name: name.into(),
                })
            })
            .take(limit)
            .collect())
    }
}

/// What a hit shows of its session.
struct Meta {
    agent: String,
    name: String,
    unified: String,
    title: Option<String>,
    updated: Option<String>,
}

/// The order of hits: score (lower first), then the newest session, then the session's id,
/// path and line. The arguments are `(score, updated, unified id, path, line)`.
fn rank(
    a: (f64, &Option<String>, &str, &str, u64),
    b: (f64, &Option<String>, &str, &str, u64),
) -> Ordering {
    a.0.total_cmp(&b.0)
        .then_with(|| b.1.cmp(a.1))
        .then_with(|| a.2.cmp(b.2))
        .then_with(|| a.3.cmp(b.3))
        .then_with(|| a.4.cmp(&b.4))
}

fn sort_hits(hits: &mut [Hit]) {
    hits.sort_by(|a, b| {
        rank(
            (
                a.score.unwrap_or(0.0),
                &a.updated_at,
                &a.session,
                &a.path,
                a.line,
            ),
            (
                b.score.unwrap_or(0.0),
                &b.updated_at,
                &b.session,
                &b.path,
                b.line,
            ),
        )
    });
}

/// Every line of a session's stored lines (the format [`prepare`] writes) that holds every
/// lowercased term, with its score: bm25 of the line, each term's occurrences weighed
/// against the line's length, every term weighing the same (every hit holds every term,
/// so their rarity would only reweigh them), negated so that lower is better.
fn scan_body(
    body: &str,
    terms: &[String],
    lower: &mut String,
    found: &mut dyn FnMut(&str, u64, &str, f64),
) {
    lower.clear();
    // ASCII terms are matched with ASCII case folding, which is much faster on long texts
    // and differs only where Unicode folds a non-ASCII letter to an ASCII one (the Kelvin
    // sign to `k`).
    if body.is_ascii() || terms.iter().all(|t| t.is_ascii()) {
        lower.push_str(body);
        lower.make_ascii_lowercase();
    } else {
        lower.push_str(&body.to_lowercase());
    }
    if !terms.iter().all(|t| lower.contains(t.as_str())) {
        return; // the trigrams were all there, the terms are not
    }
    // Lowercasing maps line breaks to themselves, so both split into the same lines.
    let (mut orig, mut low) = (body.split('\n'), lower.split('\n'));
    while let (Some(path), Some(_)) = (orig.next(), low.next()) {
        let Some(count) = orig.next().and_then(|c| c.parse::<u64>().ok()) else {
            return;
        };
        low.next();
        for n in 1..=count {
            let (Some(line), Some(l)) = (orig.next(), low.next()) else {
                return;
            };
            if !terms.iter().all(|t| l.contains(t.as_str())) {
                continue;
            }
            let norm = K1 * (1.0 - B + B * l.len() as f64 / AVG_LINE);
            let score: f64 = terms
                .iter()
                .map(|t| {
                    let tf = l.matches(t.as_str()).count() as f64;
                    tf * (K1 + 1.0) / (tf + norm)
                })
                .sum();
            found(path, n, line, -score);
        }
    }
}

fn wrap(path: &Path) -> impl Fn(rusqlite::Error) -> Error + Copy + '_ {
    move |source| Error::Sqlite {
        path: path.display().to_string(),
        source,
    }
}

enum OpenError {
    Sqlite(rusqlite::Error),
    Foreign(String),
}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> OpenError {
        OpenError::Sqlite(e)
    }
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Sqlite(e) => write!(f, "{e}"),
            OpenError::Foreign(w) => write!(f, "{w}"),
        }
    }
}

fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| Error::Dir {
            path: dir.display().to_string(),
            source,
        })
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One session, parsed, rendered and compressed, ready to write.
struct Prepared {
    key: SessionKey,
    version: u64,
    unified: String,
    title: Option<String>,
    updated: Option<String>,
    cwd: Option<String>,
    /// The bytes of `body` decompressed.
    size: usize,
    /// zstd of the indexed files' lines: per file, its path, its number of lines and the
    /// lines (trimmed at the end, cut at [`MAX_LINE`]), each on a line of its own.
    body: Vec<u8>,
    /// The distinct lowercased words of those lines, [`WORD_GAP`] between them.
    words: String,
    /// Non-blank lines.
    lines: usize,
}

/// Whether a rendered file is searched: transcripts and tool files, at any depth (branches,
/// nested subagents). `meta.json` and `messages.jsonl` repeat the same text as JSON.
fn indexed(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file == "transcript.md" || (path.contains("tools/") && file.ends_with(".md"))
}

fn prepare(
    fs: &Fs,
    key: &SessionKey,
    version: u64,
    zstd: &mut zstd::bulk::Compressor,
) -> Option<Prepared> {
    let session = fs.load(key).ok()?;
    let bundle = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        render::render_session(&session)
    }))
    .ok()?;
    let mut body = String::new();
    let mut lines = 0;
    for (path, node) in &bundle.entries {
        let Node::File(bytes) = node else { continue };
        if !indexed(path) || path.contains('\n') {
            continue;
        }
        let Ok(bytes) = bytes.bytes() else { continue };
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(&bytes),
        };
        body.push_str(path);
        body.push_str(&format!("\n{}\n", text.lines().count()));
        for line in text.lines() {
            let line = line.trim_end();
            let mut end = line.len().min(MAX_LINE);
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            body.push_str(&line[..end]);
            body.push('\n');
            lines += usize::from(!line.trim().is_empty());
        }
    }
    // Distinct words first, then lowercased: most words of a session are repeats.
    let mut distinct: HashSet<&str, Fnv> = HashSet::default();
    distinct.extend(body.split_whitespace().filter(|w| w.len() >= 3));
    let mut folded: HashSet<String, Fnv> = HashSet::default();
    let mut words = String::new();
    for w in distinct {
        let w = if w.is_ascii() {
            w.to_ascii_lowercase()
        } else {
            w.to_lowercase()
        };
        if !folded.contains(&w) {
            words.push_str(&w);
            words.push_str(WORD_GAP);
            folded.insert(w);
        }
    }
    Some(Prepared {
        key: key.clone(),
        version,
        unified: session.unified_id(),
        title: session.title.clone(),
        updated: session.updated_at.or(session.created_at).map(iso),
        cwd: session.cwd.clone(),
        size: body.len(),
        body: zstd.compress(body.as_bytes()).ok()?,
        words,
        lines,
    })
}

/// FNV-1a, for the word sets of [`prepare`]: they hash every word of every session, and
/// need no defence against chosen collisions.
type Fnv = std::hash::BuildHasherDefault<crate::names::Fnv1a>;

/// The mount's [`crate::tree::Searcher`]: one index handle, brought up to date before each
/// query (results are kept for a second per query by the tree), and a first indexing pass
/// in the background when the mount starts, so the first `ls search/<query>/` does not wait
/// for every session to be parsed.
pub struct MountSearcher {
    inner: std::sync::Arc<std::sync::Mutex<Slot>>,
}

struct Slot {
    path: PathBuf,
    index: Option<Index>,
    /// When the last sync finished: lookups of several query directories at once (a shell
    /// completing names, `ls search/a/ search/b/`) share one.
    synced: Option<Instant>,
}

impl Slot {
    fn index(&mut self) -> Result<&mut Index> {
        if self.index.is_none() {
            self.index = Some(Index::open(&self.path)?);
        }
        Ok(self.index.as_mut().expect("opened just above"))
    }
}

impl MountSearcher {
    pub fn new(path: PathBuf) -> MountSearcher {
        MountSearcher {
            inner: std::sync::Arc::new(std::sync::Mutex::new(Slot {
                path,
                index: None,
                synced: None,
            })),
        }
    }

    /// Index what changed since the index was last used, on a background thread.
    pub fn warm(&self, fs: &std::sync::Arc<Fs>) {
        let inner = self.inner.clone();
        let fs = std::sync::Arc::downgrade(fs);
        let spawned = std::thread::Builder::new()
            .name("sessfs-index".into())
            .spawn(move || {
                let Some(fs) = fs.upgrade() else { return };
                let mut slot = inner.lock().unwrap_or_else(|e| e.into_inner());
                let started = Instant::now();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    slot.index().and_then(|ix| ix.sync(&fs, &mut |_, _| {}))
                }));
                match r {
                    Ok(Ok(s)) => log::info!(
                        "search index: {} of {} sessions indexed ({} lines) in {:?}",
                        s.indexed,
                        s.sessions,
                        s.lines,
                        started.elapsed()
                    ),
                    Ok(Err(e)) => log::warn!("search index: {e}"),
                    Err(p) => {
                        log::error!("panic while indexing: {}", crate::tree::panic_message(&p))
                    }
                }
            });
        if let Err(e) = spawned {
            log::warn!("no indexing thread: {e}");
        }
    }
}

impl crate::tree::Searcher for MountSearcher {
    fn sessions(
        &self,
        fs: &Fs,
        query: &str,
        limit: usize,
    ) -> std::result::Result<Vec<SessionKey>, String> {
        let mut slot = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = slot
            .synced
            .is_some_and(|t| t.elapsed() < crate::tree::SEARCH_TTL);
        let ix = slot.index().map_err(|e| e.to_string())?;
        if !fresh {
            ix.sync(fs, &mut |_, _| {}).map_err(|e| e.to_string())?;
        }
        let found = ix
            .sessions(&Query::parse(query), limit)
            .map_err(|e| e.to_string());
        if !fresh {
            slot.synced = Some(Instant::now());
        }
        found.map_err(|e| e.to_string())
    }
}

mod glance;
pub use glance::Glanced;
use glance::*;
#[cfg(test)]
mod tests;
