//! Full-text search over every session: `sessfs search` and the mount's `search/` directory.
//!
//! The index is a cache sessfs owns, outside every native store: one SQLite file
//! (`$XDG_CACHE_HOME/sessfs/index.sqlite3`, else `~/.cache/sessfs/`, directory mode 0700)
//! with an FTS5 table of *lines*: every line of every `transcript.md` and `tools/*.md` the
//! mount shows (branches and nested subagents included), as `(session, path inside the
//! session directory, line number, text)`, so a hit prints as `claude/<id>/transcript.md:12:`
//! and opens in an editor at the right line. Indexing rendered text rather than native
//! records means the index finds exactly what `grep -r` over the mount finds, for every
//! store, with no per-store code.
//!
//! Why FTS5 with the trigram tokenizer: it answers substring queries (`efacto` finds
//! `refactor`, `fn main(` finds code) and phrases (`"cache bug"` is a run of trigrams), ranks
//! with bm25, is case-insensitive, and comes with the bundled SQLite sessfs already links.
//! Terms shorter than three characters cannot use trigrams; they become a `LIKE` condition
//! on the lines the other terms found (or a scan when no term is long enough).
//!
//! Freshness: each session's row keeps the version it was indexed at (the same fingerprint
//! the mount uses to re-render: size and mtime of its native files, or the store's own row
//! hash for SQLite stores). [`Index::sync`] lists the stores (cheap), compares versions, and
//! re-parses only sessions that changed, appeared or went; every search runs it first, so
//! a message appended a moment ago is found. The file is only a cache: deleting it loses
//! nothing, and a file that is not a sessfs index (corrupt, foreign, older schema) is
//! replaced, with one warning line.
//!
//! Several processes may share the index (a mount and `sessfs search` in a shell): writes
//! are short transactions, one per batch of sessions, and readers use WAL.

use crate::cache::SessionKey;
use crate::model::Agent;
use crate::render::{self, Node};
use crate::tree::Fs;
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Written into the index; a file with anything else is rebuilt.
const SCHEMA: &str = "sessfs-search-1";

/// Removes a session's lines by their rowids: a session's lines are inserted in one
/// transaction, so they are one contiguous rowid range, and FTS5 finds a rowid range without
/// scanning (its `session` column is not indexed).
const DELETE_LINES: &str = "DELETE FROM lines WHERE rowid BETWEEN \
     (SELECT first_row FROM sessions WHERE id = ?1) AND (SELECT last_row FROM sessions WHERE id = ?1)";

/// Lines longer than this are indexed cut (a minified file in a tool output is one line).
const MAX_LINE: usize = 4096;

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
    /// bm25 rank (lower is better); `null` for a query of short terms only.
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

    /// The FTS5 expression for the terms trigrams can answer (three characters or more).
    fn fts(&self) -> Option<String> {
        let parts: Vec<String> = self
            .terms
            .iter()
            .filter(|t| t.chars().count() >= 3)
            .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
            .collect();
        (!parts.is_empty()).then(|| parts.join(" AND "))
    }

    /// `LIKE` patterns for the short terms.
    fn likes(&self) -> Vec<String> {
        self.terms
            .iter()
            .filter(|t| t.chars().count() < 3)
            .map(|t| {
                let mut p = String::from("%");
                for c in t.chars() {
                    if matches!(c, '%' | '_' | '\\') {
                        p.push('\\');
                    }
                    p.push(c);
                }
                p.push('%');
                p
            })
            .collect()
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
                     first_row INTEGER,
                     last_row INTEGER,
                     UNIQUE(agent, name));
                 CREATE VIRTUAL TABLE IF NOT EXISTS lines USING fts5(
                     text, session UNINDEXED, path UNINDEXED, line UNINDEXED,
                     tokenize = 'trigram');
                 COMMIT;"
            ))?;
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

    fn err(&self, source: rusqlite::Error) -> Error {
        Error::Sqlite {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Bring the index up to date with `fs`: re-index sessions whose version changed, add
    /// new ones, drop those that went. `progress(done, total)` is called as sessions are
    /// indexed (total = sessions to index, not all sessions).
    pub fn sync(&mut self, fs: &Fs, progress: &mut dyn FnMut(usize, usize)) -> Result<SyncStats> {
        let keys = fs.sessions();
        let known: HashMap<(String, String), (i64, i64)> = {
            let mut st = self
                .conn
                .prepare("SELECT agent, name, id, version FROM sessions")
                .map_err(|e| self.err(e))?;
            let rows = st
                .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?))))
                .map_err(|e| self.err(e))?;
            rows.collect::<rusqlite::Result<_>>()
                .map_err(|e| self.err(e))?
        };
        let mut stale: Vec<(SessionKey, u64)> = Vec::new();
        let mut present = std::collections::HashSet::new();
        for key in &keys {
            let Ok(version) = fs.source_version(key) else {
                continue;
            };
            let k = (key.agent.name().to_string(), key.name.clone());
            if known.get(&k).map(|&(_, v)| v as u64) != Some(version) {
                stale.push((key.clone(), version));
            }
            present.insert(k);
        }
        let gone: Vec<i64> = known
            .iter()
            .filter(|(k, _)| !present.contains(*k))
            .map(|(_, &(id, _))| id)
            .collect();
        let mut stats = SyncStats {
            sessions: keys.len(),
            removed: gone.len(),
            ..SyncStats::default()
        };
        if !gone.is_empty() {
            let path = self.path.display().to_string();
            let wrap = |source| Error::Sqlite {
                path: path.clone(),
                source,
            };
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(wrap)?;
            for id in &gone {
                tx.execute(DELETE_LINES, [id])
                    .and_then(|_| tx.execute("DELETE FROM sessions WHERE id = ?1", [id]))
                    .map_err(wrap)?;
            }
            tx.commit().map_err(wrap)?;
        }
        let total = stale.len();
        // Parse and render outside the transaction; write in batches so another process
        // waits at most one batch for the lock.
        let mut batch: Vec<Prepared> = Vec::new();
        let mut last_write = Instant::now();
        for (i, (key, version)) in stale.into_iter().enumerate() {
            if let Some(p) = prepare(fs, &key, version) {
                batch.push(p);
            }
            if batch.len() >= 200 || last_write.elapsed() > Duration::from_millis(250) {
                stats.lines += self.write(&mut batch)?;
                last_write = Instant::now();
            }
            stats.indexed += 1;
            progress(i + 1, total);
        }
        stats.lines += self.write(&mut batch)?;
        Ok(stats)
    }

    fn write(&mut self, batch: &mut Vec<Prepared>) -> Result<usize> {
        if batch.is_empty() {
            return Ok(0);
        }
        let path = self.path.display().to_string();
        let wrap = |source| Error::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(wrap)?;
        let mut lines = 0;
        for p in batch.drain(..) {
            let old: Option<i64> = tx
                .query_row(
                    "SELECT id FROM sessions WHERE agent = ?1 AND name = ?2",
                    params![p.key.agent.name(), p.key.name],
                    |r| r.get(0),
                )
                .optional()
                .map_err(wrap)?;
            if let Some(id) = old {
                tx.execute(DELETE_LINES, [id]).map_err(wrap)?;
                tx.execute("DELETE FROM sessions WHERE id = ?1", [id])
                    .map_err(wrap)?;
            }
            tx.execute(
                "INSERT INTO sessions(agent, name, unified, version, title, updated, cwd)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    p.key.agent.name(),
                    p.key.name,
                    p.unified,
                    p.version as i64,
                    p.title,
                    p.updated,
                    p.cwd
                ],
            )
            .map_err(wrap)?;
            let id = tx.last_insert_rowid();
            let mut rows: Option<(i64, i64)> = None;
            {
                let mut ins = tx
                    .prepare_cached(
                        "INSERT INTO lines(text, session, path, line) VALUES (?1, ?2, ?3, ?4)",
                    )
                    .map_err(wrap)?;
                for (path, n, text) in &p.lines {
                    ins.execute(params![text, id, path, *n as i64])
                        .map_err(wrap)?;
                    let row = tx.last_insert_rowid();
                    rows = Some(rows.map_or((row, row), |(a, _)| (a, row)));
                    lines += 1;
                }
            }
            if let Some((first, last)) = rows {
                tx.execute(
                    "UPDATE sessions SET first_row = ?1, last_row = ?2 WHERE id = ?3",
                    params![first, last, id],
                )
                .map_err(wrap)?;
            }
        }
        tx.commit().map_err(wrap)?;
        Ok(lines)
    }

    /// Matching lines, best first: bm25, then the newest session, then path and line.
    pub fn search(&self, q: &Query, opts: &Options) -> Result<Vec<Hit>> {
        if q.terms.is_empty() {
            return Ok(Vec::new());
        }
        let fts = q.fts();
        let mut sql = String::from(
            "SELECT s.agent, s.name, s.unified, s.title, s.updated, lines.path, lines.line, \
             lines.text, ",
        );
        sql.push_str(if fts.is_some() {
            "bm25(lines) AS score "
        } else {
            "NULL AS score "
        });
        sql.push_str("FROM lines JOIN sessions s ON s.id = lines.session WHERE 1 ");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(f) = fts {
            sql.push_str("AND lines MATCH ? ");
            args.push(f.into());
        }
        for like in q.likes() {
            sql.push_str("AND lines.text LIKE ? ESCAPE '\\' ");
            args.push(like.into());
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
        sql.push_str("ORDER BY score, s.updated DESC, s.unified, lines.path, lines.line LIMIT ?");
        args.push((opts.limit.map_or(-1, |l| l as i64)).into());
        let mut st = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args), |r| {
                let agent: String = r.get(0)?;
                let name: String = r.get(1)?;
                let path: String = r.get(5)?;
                Ok(Hit {
                    path: format!("{agent}/{name}/{path}"),
                    line: r.get::<_, i64>(6)? as u64,
                    agent,
                    name,
                    session: r.get(2)?,
                    title: r.get(3)?,
                    updated_at: r.get(4)?,
                    text: r.get(7)?,
                    score: r.get(8)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))
    }

    /// The sessions with at least one matching line, best first, each once.
    pub fn sessions(&self, q: &Query, limit: usize) -> Result<Vec<SessionKey>> {
        let hits = self.search(q, &Options::default())?;
        let mut out: Vec<SessionKey> = Vec::new();
        for h in hits {
            let Some(agent) = Agent::from_name(&h.agent) else {
                continue;
            };
            let key = SessionKey {
                agent,
                name: h.name,
            };
            if !out.contains(&key) {
                out.push(key);
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
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

/// One session, parsed and rendered, ready to write.
struct Prepared {
    key: SessionKey,
    version: u64,
    unified: String,
    title: Option<String>,
    updated: Option<String>,
    cwd: Option<String>,
    /// `(path inside the session directory, 1-based line number, text)`.
    lines: Vec<(String, usize, String)>,
}

/// Whether a rendered file is searched: transcripts and tool files, at any depth (branches,
/// nested subagents). `meta.json` and `messages.jsonl` repeat the same text as JSON.
fn indexed(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file == "transcript.md" || (path.contains("tools/") && file.ends_with(".md"))
}

fn prepare(fs: &Fs, key: &SessionKey, version: u64) -> Option<Prepared> {
    let session = fs.load(key).ok()?;
    let bundle = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        render::render_session(&session)
    }))
    .ok()?;
    let mut lines = Vec::new();
    for (path, node) in &bundle.entries {
        let Node::File(bytes) = node else { continue };
        if !indexed(path) {
            continue;
        }
        let Ok(bytes) = bytes.to_vec() else { continue };
        let text = String::from_utf8_lossy(&bytes);
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.trim().is_empty() {
                continue;
            }
            let mut end = line.len().min(MAX_LINE);
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            lines.push((path.clone(), i + 1, line[..end].to_string()));
        }
    }
    Some(Prepared {
        key: key.clone(),
        version,
        unified: session.unified_id(),
        title: session.title.clone(),
        updated: session.updated_at.or(session.created_at).map(iso),
        cwd: session.cwd.clone(),
        lines,
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_read_words_phrases_and_prefixes() {
        let q = Query::parse(r#"cache "bug in ""x""" refact* a"#);
        assert_eq!(q.terms, vec!["cache", r#"bug in "x""#, "refact", "a"]);
        assert_eq!(
            q.fts().as_deref(),
            Some(r#""cache" AND "bug in ""x""" AND "refact""#)
        );
        assert_eq!(q.likes(), vec!["%a%".to_string()]);
        assert_eq!(Query::parse("  ").terms, Vec::<String>::new());
    }

    #[test]
    fn highlights_are_case_insensitive_and_merged() {
        let q = Query::parse("cache ach");
        assert_eq!(q.highlights("A Cache, a cache"), vec![(2, 7), (11, 16)]);
    }

    #[test]
    fn a_garbage_file_is_rebuilt() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/index.sqlite3");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            &p,
            b"this is not a database, just some bytes of garbage....",
        )
        .unwrap();
        let ix = Index::open(&p).expect("rebuilt");
        assert!(ix
            .search(&Query::parse("garbage"), &Options::default())
            .unwrap()
            .is_empty());
        // A foreign SQLite database is replaced too.
        drop(ix);
        std::fs::remove_file(&p).unwrap();
        let c = Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE other(x);").unwrap();
        drop(c);
        assert!(Index::open(&p).is_ok());
    }
}
