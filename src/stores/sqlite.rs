//! The one way sessfs reads an agent's SQLite database (agsh/meka, OpenCode, Hermes).
//!
//! The agent may be writing while sessfs reads, and sessfs must never be the reason a write
//! waits or fails. So:
//!
//! - **Read-only, always.** Every connection is opened `SQLITE_OPEN_READ_ONLY` through a
//!   `file:…?mode=ro` URI, with `query_only` on and no checkpoint on close. It lives for one
//!   [`Reader::read`] only: connections are not `Sync`, the filesystem calls from several
//!   threads, and an idle reader left open would keep the agent from deleting its WAL when
//!   it exits. `immutable=1` is never used: it makes SQLite ignore the WAL and the agent's
//!   locks and can show torn pages of a live database.
//! - **Short transactions.** A store reads one session inside [`snapshot`]: one read
//!   transaction, so the rows are one committed state, and the transaction holds only the
//!   `SELECT`s. Rows are copied out into plain Rust values ([`Cell`], [`Rows`]) and parsed
//!   after the transaction ends, so the agent waits at most for the `SELECT`s (in WAL mode a
//!   reader never blocks a writer at all; in rollback-journal mode the writer's commit waits
//!   for the reader's shared lock to go).
//! - **Busy.** A database locked by a writer (rollback-journal commit, WAL recovery) is
//!   retried for [`BUSY_TIMEOUT`] by SQLite's busy handler; after that the read fails with
//!   [`Error::Busy`] and the store shows a warning, while [`Reader::version`] keeps the last
//!   version so the tree keeps serving the last good render.
//! - **WAL without an index.** A WAL database whose `-wal` is absent would get a fresh
//!   `-wal`/`-shm` created beside it by any reader; where the WAL index cannot be used (a
//!   read-only directory without `-shm`) SQLite refuses to read at all. In both cases the
//!   database and its `-wal` are copied (at most [`COPY_LIMIT`] bytes, retried while they
//!   change under the copy) into a private directory and the copy is read; the session says
//!   so in its warnings. A reader in a writable directory may create `-shm` beside an
//!   existing `-wal`, as every SQLite reader does; the database and its WAL are never
//!   written.
//! - **Columns are probed.** Agents add columns every few weeks ([`Table::probe`] reads
//!   `PRAGMA table_info`); [`Rows::fetch`] selects the wanted columns that exist and `NULL`
//!   for the others, so one code path reads every schema version. Only tables and columns a
//!   store asks for by name are read: credential tables in the same file are never touched.
//! - **Versions from rows.** Many sessions share one file, so the file's size and mtime
//!   cannot say which session changed. [`Reader::version`] runs a store's small per-session
//!   query (counts, largest row ids, update times of that session's rows) and caches the
//!   answer until the database or its WAL changes on disk; one write re-renders only the
//!   session it touched (see `Store::versions`).

use super::stat_version;
use crate::model;
use chrono::{DateTime, NaiveDateTime, Utc};
use rusqlite::config::DbConfig;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags, Params};
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// How long a read waits for a lock the agent holds before it gives up with [`Error::Busy`].
pub const BUSY_TIMEOUT: Duration = Duration::from_millis(300);
/// Largest database + WAL sessfs copies when it cannot read the database in place.
pub const COPY_LIMIT: u64 = 512 * 1024 * 1024;
/// Copies retried while the database changes under them.
const COPY_ATTEMPTS: usize = 3;

/// Why a database could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not a SQLite database")]
    NotADatabase,
    #[error(
        "database is locked by a writer (retried for {} ms)",
        BUSY_TIMEOUT.as_millis()
    )]
    Busy,
    #[error(
        "cannot be read in place (read-only directory) and is too large to copy ({size} > {limit})"
    )]
    TooLargeToCopy { size: String, limit: String },
    #[error("cannot make a private copy: {0}")]
    Copy(String),
    #[error("{0}")]
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                ErrorCode::NotADatabase => Error::NotADatabase,
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => Error::Busy,
                _ => Error::Sqlite(e),
            },
            _ => Error::Sqlite(e),
        }
    }
}

/// How a [`Reader`] reaches a database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// In place, falling back to a private copy when the WAL index cannot be used.
    InPlace,
    /// Always through a private copy (what the fallback does; tests force it).
    PrivateCopy,
}

/// Reads databases for one store: keeps the private copies it had to make and the
/// per-session versions it computed, each valid while its database is unchanged on disk.
#[derive(Default)]
pub struct Reader {
    copies: Mutex<HashMap<PathBuf, Arc<PrivateCopy>>>,
    versions: Mutex<HashMap<(PathBuf, String), VersionSlot>>,
}

struct VersionSlot {
    /// The database's on-disk state when `version` was computed.
    at: DbVersion,
    version: u64,
    /// Bumped by [`Reader::invalidate`]: the next version differs, so the tree renders again.
    nonce: u64,
    stale: bool,
}

impl VersionSlot {
    fn value(&self) -> u64 {
        self.version ^ self.nonce.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

impl Reader {
    pub fn new() -> Reader {
        Reader::default()
    }

    /// Run `f` on a read-only connection to `db`. Returns its value and, when a private copy
    /// was read, the note to add to the session's warnings.
    ///
    /// `f` may run twice (in place, then on a copy), so it must build its result afresh.
    /// `f` should copy rows out ([`Rows::fetch`]) and leave parsing to the caller.
    /// `doctor`'s view of some databases: one line for each that cannot be read with
    /// `probe` (not a database, truncated, a schema the store cannot use).
    pub fn problems<'a, T>(
        &self,
        dbs: impl IntoIterator<Item = &'a Path>,
        mut probe: impl FnMut(&Connection) -> rusqlite::Result<T>,
    ) -> Vec<String> {
        dbs.into_iter()
            .filter_map(|db| {
                self.read(db, Access::InPlace, &mut probe)
                    .err()
                    .map(|e| format!("{}: {e}", db.display()))
            })
            .collect()
    }

    /// What listing reads from one database: `f`'s result, or `None` after one log line
    /// (a broken database costs its own sessions, never the store's others).
    pub fn list<T>(
        &self,
        agent: &str,
        db: &Path,
        f: impl FnMut(&Connection) -> rusqlite::Result<T>,
    ) -> Option<T> {
        match self.read(db, Access::InPlace, f) {
            Ok((v, _)) => Some(v),
            Err(e) => {
                log::warn!("{agent}: {}: {e}", db.display());
                None
            }
        }
    }

    pub fn read<T>(
        &self,
        db: &Path,
        access: Access,
        mut f: impl FnMut(&Connection) -> rusqlite::Result<T>,
    ) -> Result<(T, Option<String>), Error> {
        if access == Access::InPlace && wal_file_missing(db) {
            // Opening a WAL database whose `-wal` file is absent would create that file
            // (and `-shm`) in the agent's directory. With no WAL there is nothing
            // uncommitted, so a private copy is exact and leaves the directory untouched.
            let copy = self.private_copy(db)?;
            let conn = open_read_only(&copy.db)?;
            return Ok((f(&conn)?, None));
        }
        if access == Access::InPlace {
            match open_read_only(db).and_then(|c| f(&c)) {
                Ok(v) => return Ok((v, None)),
                Err(e) if needs_private_copy(&e) && is_sqlite_file(db) => {
                    log::debug!("{}: reading a private copy: {e}", db.display());
                }
                Err(e) => return Err(e.into()),
            }
        }
        // Declared before the connection so it outlives it.
        let copy = self.private_copy(db)?;
        let conn = open_read_only(&copy.db)?;
        let v = f(&conn)?;
        let note = format!(
            "{} was read from a private copy: its WAL index cannot be shared from a \
             read-only directory (rows committed after the copy show on the next read)",
            db.display()
        );
        Ok((v, Some(note)))
    }

    /// The version of one session (`key`) of `db`: `f` computes it from that session's own
    /// rows inside one read transaction; the answer is reused until the database or its WAL
    /// changes size or mtime. While the database is busy the last answer is kept, so the
    /// tree keeps serving the last good render; `None` when it cannot be read at all (the
    /// tree then versions by file stat).
    pub fn version(
        &self,
        db: &Path,
        key: &str,
        mut f: impl FnMut(&Connection) -> rusqlite::Result<u64>,
    ) -> Option<u64> {
        self.versions(db, &[key], |_| Ok(()), |c, (), _| f(c))[0]
    }

    /// [`Reader::version`] of many sessions of `db` at once, in `keys` order: those whose
    /// answer still holds come from memory, the rest from one read transaction on one
    /// connection, `prepare` run once (what every key's `f` needs, say probed tables) and `f`
    /// once per key. After a write to the database the change watcher re-versions every
    /// session the kernel has seen; a connection and a transaction each cost 140 µs a
    /// session, most of it opening and probing.
    pub fn versions<P>(
        &self,
        db: &Path,
        keys: &[&str],
        mut prepare: impl FnMut(&Connection) -> rusqlite::Result<P>,
        mut f: impl FnMut(&Connection, &P, &str) -> rusqlite::Result<u64>,
    ) -> Vec<Option<u64>> {
        let now = db_version(db);
        let slot_key = |k: &str| (db.to_path_buf(), k.to_string());
        let mut out = vec![None; keys.len()];
        let mut todo = Vec::new();
        {
            let versions = self.versions.lock().unwrap_or_else(PoisonError::into_inner);
            for (i, k) in keys.iter().enumerate() {
                match versions.get(&slot_key(k)) {
                    Some(s) if s.at == now && !s.stale => out[i] = Some(s.value()),
                    _ => todo.push(i),
                }
            }
        }
        if todo.is_empty() {
            return out;
        }
        let computed = self.read(db, Access::InPlace, |c| {
            snapshot(c, |c| {
                let p = prepare(c)?;
                let mut results = Vec::with_capacity(todo.len());
                for &i in &todo {
                    match f(c, &p, keys[i]) {
                        // The whole read is busy, or has to be made on a private copy: as
                        // for one session alone.
                        Err(e) if needs_private_copy(&e) || is_busy(&e) => return Err(e),
                        r => results.push(r),
                    }
                }
                Ok(results)
            })
        });
        let mut versions = self.versions.lock().unwrap_or_else(PoisonError::into_inner);
        match computed {
            Ok((results, _)) => {
                for (&i, r) in todo.iter().zip(results) {
                    match r {
                        Ok(version) => {
                            let slot = versions.entry(slot_key(keys[i])).or_insert(VersionSlot {
                                at: now,
                                version,
                                nonce: 0,
                                stale: false,
                            });
                            slot.at = now;
                            slot.version = version;
                            slot.stale = false;
                            out[i] = Some(slot.value());
                        }
                        Err(e) => {
                            log::debug!("{}: no row version for {}: {e}", db.display(), keys[i]);
                        }
                    }
                }
            }
            Err(Error::Busy) => {
                for &i in &todo {
                    out[i] = versions.get(&slot_key(keys[i])).map(VersionSlot::value);
                }
            }
            Err(e) => log::debug!("{}: no row versions: {e}", db.display()),
        }
        out
    }

    /// Forget the version of `key` and make the next one differ from every earlier one: a
    /// load that failed (busy) is then retried at the next check instead of being served
    /// until the next write.
    pub fn invalidate(&self, db: &Path, key: &str) {
        let mut versions = self.versions.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = versions
            .entry((db.to_path_buf(), key.to_string()))
            .or_insert(VersionSlot {
                at: (None, None),
                version: 0,
                nonce: 0,
                stale: true,
            });
        slot.nonce += 1;
        slot.stale = true;
    }

    /// The private copy of `db`, made afresh when `db` or its WAL changed since the last one.
    pub fn private_copy(&self, db: &Path) -> Result<Arc<PrivateCopy>, Error> {
        let mut copies = self.copies.lock().unwrap_or_else(PoisonError::into_inner);
        let version = db_version(db);
        if let Some(c) = copies.get(db) {
            if c.version == Some(version) {
                return Ok(Arc::clone(c));
            }
        }
        let copy = Arc::new(PrivateCopy::make(db)?);
        copies.insert(db.to_path_buf(), Arc::clone(&copy));
        Ok(copy)
    }
}

/// [`super::Store::versions`] for a store whose sessions are rows of databases: `listed`
/// grouped by database ([`super::Listed::path`]), each database read once for all its
/// sessions ([`Reader::versions`]). `key` names a session's rows (`None`: no version).
pub fn versions_by_db<P>(
    reader: &Reader,
    listed: &[&super::Listed],
    key: impl Fn(&super::Listed) -> Option<&str>,
    mut prepare: impl FnMut(&Connection) -> rusqlite::Result<P>,
    mut f: impl FnMut(&Connection, &P, &str) -> rusqlite::Result<u64>,
) -> Vec<Option<u64>> {
    let mut out = vec![None; listed.len()];
    let mut by_db: HashMap<&Path, Vec<(usize, &str)>> = HashMap::new();
    for (i, l) in listed.iter().enumerate() {
        if let Some(k) = key(l) {
            by_db.entry(l.path.as_path()).or_default().push((i, k));
        }
    }
    for (db, keyed) in by_db {
        let keys: Vec<&str> = keyed.iter().map(|&(_, k)| k).collect();
        let got = reader.versions(db, &keys, &mut prepare, &mut f);
        for ((i, _), v) in keyed.into_iter().zip(got) {
            out[i] = v;
        }
    }
    out
}

/// [`super::Store::load`] of one session of `db`: `build` of what `read` copied out in one
/// snapshot, with the reader's note (a private copy was read, say) first among its
/// warnings. A database that cannot be read gives `empty` with one warning that says why;
/// when it was busy, the session's version is dropped so the next check reads it again
/// instead of serving the empty session until the next write.
pub fn load_session<T>(
    reader: &Reader,
    db: &Path,
    key: &str,
    access: Access,
    mut read: impl FnMut(&Connection) -> rusqlite::Result<T>,
    build: impl FnOnce(T) -> model::Session,
    empty: impl FnOnce() -> model::Session,
) -> model::Session {
    match reader.read(db, access, |c| snapshot(c, &mut read)) {
        Ok((raw, note)) => {
            let mut s = build(raw);
            if let Some(n) = note {
                s.warnings.insert(0, n);
            }
            s
        }
        Err(e) => {
            // The version the tree files this render under was computed before the read.
            // A database that was busy, or unreadable for a moment (rewritten, replaced)
            // and then back with the same rows, would give that version again and serve
            // this empty session until the agent's next write: move it.
            reader.invalidate(db, key);
            let mut s = empty();
            s.warnings
                .push(format!("cannot read {}: {e}", db.display()));
            s
        }
    }
}

/// Run `f` inside one read transaction: every `SELECT` in it sees one committed state. `f`
/// should only copy rows out; the transaction (and in rollback-journal mode the shared lock
/// a writer's commit waits for) ends when `f` returns.
pub fn snapshot<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.execute_batch("BEGIN")?;
    let r = f(conn);
    // Nothing was written, so COMMIT and ROLLBACK are the same: both end the read.
    let _ = conn.execute_batch("COMMIT");
    r
}

// ---------------------------------------------------------------------------------------
// Opening

/// A database in WAL mode (file format bytes 18–19 are 2) whose `-wal` file does not exist.
fn wal_file_missing(db: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 20];
    let is_wal = super::kit::open_file(db)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_ok()
        && header.starts_with(b"SQLite format 3\0")
        && header[18] == 2
        && header[19] == 2;
    is_wal && !companion(db, "-wal").exists()
}

/// A read-only connection: `mode=ro` URI, `query_only`, [`BUSY_TIMEOUT`], no checkpoint on
/// close.
pub fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    // SQLite's own open blocks on a FIFO and reads devices; only a regular file is opened.
    if let Err(e) = super::kit::open_file(path) {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("{}: {e}", path.display())),
        ));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(sqlite_uri(path), flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "query_only", true)?;
    // A read-only connection cannot checkpoint anyway; this makes sure closing the last
    // connection never even tries.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    Ok(conn)
}

/// `file:` URI for `path` with `mode=ro`; every byte outside the unreserved set is
/// percent-encoded so `?`, `#` and `%` in paths stay part of the path.
pub fn sqlite_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut s = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s.push_str("?mode=ro");
    s
}

/// Errors a read-only reader meets when it cannot create or write the WAL index.
/// Another connection holds the lock this read needs ([`Error::Busy`]).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

fn needs_private_copy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, ErrorCode::CannotOpen | ErrorCode::ReadOnly))
}

/// The file starts with the SQLite header.
pub fn is_sqlite_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    super::kit::open_file(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == b"SQLite format 3\0"
}

/// A session kept as rows of `db`, keyed by `id`: its files are the database and its WAL
/// (the store's [`super::Store::versions`] then tells its own rows apart).
pub fn row_session(id: &str, db: &Path, root: usize) -> super::Listed {
    super::Listed {
        id: id.to_string(),
        path: db.to_path_buf(),
        sources: vec![db.to_path_buf(), companion(db, "-wal")],
        key: Some(id.to_string()),
        root,
    }
}

/// [`super::Store::list`] of a store where every id `list_ids` reads is one session: the
/// [`row_session`] of each id of each of `dbs` (`(root index, database)`), in that order. A
/// database that cannot be read costs only its own sessions ([`Reader::list`]).
pub fn row_sessions(
    reader: &Reader,
    agent: &str,
    dbs: &[(usize, PathBuf)],
    mut list_ids: impl FnMut(&Connection) -> rusqlite::Result<Vec<String>>,
) -> Vec<super::Listed> {
    let mut out = Vec::new();
    for (root, db) in dbs {
        for id in reader.list(agent, db, &mut list_ids).unwrap_or_default() {
            out.push(row_session(&id, db, *root));
        }
    }
    out
}

/// `(root index, database)` of every database `roots` lead to, each once: a root is the
/// database itself, or the directory holding it as `file_name`. For the stores that keep
/// every session in one database (Grok CLI, Kiro CLI, ForgeCode).
pub fn databases(roots: &[super::Root], file_name: &str) -> Vec<(usize, PathBuf)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let db = if root.path.is_dir() {
            root.path.join(file_name)
        } else {
            root.path.clone()
        };
        if db.is_file() && seen.insert(db.canonicalize().unwrap_or_else(|_| db.clone())) {
            out.push((i, db));
        }
    }
    out
}

/// The glance of a store whose listing reads only the databases [`databases`] found
/// (`dbs`, from `roots`): each root that is a directory (a database appearing in it adds
/// an entry) and every database with its journals (a write lands in one of them). A root
/// gone since the store was opened gives `None`: [`databases`] no longer looks there, so
/// nothing stamped would show it coming back, and the store is listed at every search.
pub fn glance(roots: &[super::Root], dbs: &[(usize, PathBuf)]) -> Option<super::Glance> {
    let mut g = super::Glance::default();
    for root in roots {
        if root.path.is_dir() {
            g.dirs.push(root.path.clone());
        } else if !root.path.exists() {
            return None;
        }
    }
    for (_, db) in dbs {
        g.files.extend(with_journals(db));
    }
    Some(g)
}

/// `db` with `suffix` appended to its file name (`-wal`, `-shm`, `-journal`).
pub fn companion(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// `db` and the journals a write to it changes (`-wal`, or `-journal` in rollback mode):
/// what a store's glance stamps for a database (see [`super::Glance`]).
pub fn with_journals(db: &Path) -> [PathBuf; 3] {
    [
        db.to_path_buf(),
        companion(db, "-wal"),
        companion(db, "-journal"),
    ]
}

/// Whether `p` is the `-wal` or `-journal` of the database `db` ([`companion`]), compared
/// as bytes: listing a directory asks this of every session's sources.
pub fn is_journal_of(p: &Path, db: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let rest = p
        .as_os_str()
        .as_bytes()
        .strip_prefix(db.as_os_str().as_bytes());
    matches!(rest, Some(b"-wal" | b"-journal"))
}

/// The database's on-disk state: `(size, mtime)` of the file and of its `-wal`.
pub type DbVersion = (Option<(u64, SystemTime)>, Option<(u64, SystemTime)>);

pub fn db_version(db: &Path) -> DbVersion {
    (stat_version(db), stat_version(&companion(db, "-wal")))
}

/// What one read of a database gave, kept until the database or its WAL changes: for the
/// stores that read one row holding every session (Cody's and Void's `ItemTable` rows), so
/// listing, versioning and loading share one read per change.
pub struct Snapshot<T> {
    at: DbVersion,
    pub value: T,
    /// The private-copy note of [`Reader::read`].
    pub note: Option<String>,
}

impl<T> std::ops::Deref for Snapshot<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// The last [`Snapshot`] of each database.
pub struct Snapshots<T> {
    by_db: Mutex<HashMap<PathBuf, Arc<Snapshot<T>>>>,
}

impl<T> Default for Snapshots<T> {
    fn default() -> Self {
        Snapshots {
            by_db: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Snapshots<T> {
    /// The snapshot of `db`: the kept one while the database is unchanged, else `fetch` in
    /// one read transaction. While the database is busy the last one is kept.
    pub fn get(
        &self,
        reader: &Reader,
        db: &Path,
        mut fetch: impl FnMut(&Connection) -> rusqlite::Result<T>,
    ) -> Result<Arc<Snapshot<T>>, Error> {
        let now = db_version(db);
        let old = self
            .by_db
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(db)
            .cloned();
        if let Some(s) = old.as_ref().filter(|s| s.at == now) {
            return Ok(Arc::clone(s));
        }
        match reader.read(db, Access::InPlace, |c| snapshot(c, &mut fetch)) {
            Ok((value, note)) => {
                let s = Arc::new(Snapshot {
                    at: now,
                    value,
                    note,
                });
                self.by_db
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(db.to_path_buf(), Arc::clone(&s));
                Ok(s)
            }
            Err(Error::Busy) if old.is_some() => old.ok_or(Error::Busy),
            Err(e) => Err(e),
        }
    }
}

/// A copy of a database and its WAL in a private temporary directory, removed on drop.
pub struct PrivateCopy {
    pub dir: PathBuf,
    pub db: PathBuf,
    /// The source's version when copied; `None` when it kept changing during the copy,
    /// so the copy is never reused.
    version: Option<DbVersion>,
}

impl PrivateCopy {
    fn make(db: &Path) -> Result<PrivateCopy, Error> {
        let wal = companion(db, "-wal");
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let total = size(db) + size(&wal);
        if total > COPY_LIMIT {
            return Err(Error::TooLargeToCopy {
                size: model::human_bytes(total),
                limit: model::human_bytes(COPY_LIMIT),
            });
        }
        let dir = private_dir().map_err(|e| Error::Copy(e.to_string()))?;
        let mut copy = PrivateCopy {
            db: dir.join("copy.db"),
            dir,
            version: None,
        };
        let copy_wal = companion(&copy.db, "-wal");
        for _ in 0..COPY_ATTEMPTS {
            let before = db_version(db);
            for stale in [&copy_wal, &companion(&copy.db, "-shm")] {
                let _ = std::fs::remove_file(stale);
            }
            // Database first, WAL second: pages a concurrent checkpoint writes into the
            // database are also in the WAL copied after it, so the pair is consistent unless
            // the WAL restarted meanwhile, which the version check catches.
            copy_file(db, &copy.db).map_err(|e| Error::Copy(e.to_string()))?;
            match copy_file(&wal, &copy_wal) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::Copy(format!("{}: {e}", wal.display()))),
            }
            if db_version(db) == before {
                copy.version = Some(before);
                return Ok(copy);
            }
        }
        log::warn!(
            "{}: changed during every copy attempt; reading the last copy",
            db.display()
        );
        Ok(copy)
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::copy(from, to)?;
    // The copy must be writable by us for SQLite to rebuild its WAL index next to it.
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o600))
}

/// How a private copy's directory is named: `sessfs-sqlite-<pid>-<nanos>-<n>`.
const PRIVATE_PREFIX: &str = "sessfs-sqlite-";

fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let tmp = std::env::temp_dir();
    SWEPT.call_once(|| sweep_dead_copies(&tmp));
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = tmp.join(format!(
        "{PRIVATE_PREFIX}{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

/// Removes the private copies a sessfs process that no longer runs left in `tmp` (one that
/// was killed never dropped them): copies of a user's session databases are not left lying
/// around. Only directories of this user whose process is gone are touched.
fn sweep_dead_copies(tmp: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PRIVATE_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let ours = std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && !process_alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

// ---------------------------------------------------------------------------------------
// Values and rows, owned

/// One SQLite value, owned. Text and blobs are kept as text (invalid UTF-8 lossily).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Cell {
    #[default]
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Cell {
    pub fn of(v: ValueRef<'_>) -> Cell {
        match v {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(i) => Cell::Int(i),
            ValueRef::Real(f) => Cell::Real(f),
            ValueRef::Text(b) | ValueRef::Blob(b) => {
                Cell::Text(String::from_utf8_lossy(b).into_owned())
            }
        }
    }

    pub fn text(&self) -> Option<String> {
        match self {
            Cell::Null => None,
            Cell::Int(i) => Some(i.to_string()),
            Cell::Real(f) => Some(f.to_string()),
            Cell::Text(s) => Some(s.clone()),
        }
    }

    /// The text without copying, for text cells.
    pub fn str(&self) -> Option<&str> {
        match self {
            Cell::Text(s) => Some(s),
            _ => None,
        }
    }

    /// Non-empty text.
    pub fn non_empty(&self) -> Option<String> {
        self.text().filter(|s| !s.trim().is_empty())
    }

    pub fn int(&self) -> Option<i64> {
        match self {
            Cell::Int(i) => Some(*i),
            Cell::Real(f) => Some(*f as i64),
            Cell::Text(s) => s.trim().parse().ok(),
            Cell::Null => None,
        }
    }

    pub fn real(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Real(f) => Some(*f),
            Cell::Text(s) => s.trim().parse().ok(),
            Cell::Null => None,
        }
    }

    /// A time: RFC 3339 or SQLite text, epoch milliseconds (integers past 1973 in ms), epoch
    /// seconds (smaller integers), or fractional epoch seconds (reals).
    pub fn time(&self) -> Option<DateTime<Utc>> {
        match self {
            Cell::Text(s) => parse_time_text(s),
            Cell::Int(n) if *n > 100_000_000_000 => DateTime::from_timestamp_millis(*n),
            Cell::Int(n) => DateTime::from_timestamp(*n, 0),
            Cell::Real(f) if *f > 100_000_000_000.0 => DateTime::from_timestamp_millis(*f as i64),
            Cell::Real(f) => DateTime::from_timestamp_millis((f * 1000.0) as i64),
            Cell::Null => None,
        }
    }
}

impl Hash for Cell {
    fn hash<H: Hasher>(&self, h: &mut H) {
        match self {
            Cell::Null => 0u8.hash(h),
            Cell::Int(i) => (1u8, i).hash(h),
            Cell::Real(f) => (2u8, f.to_bits()).hash(h),
            Cell::Text(s) => (3u8, s).hash(h),
        }
    }
}

pub fn parse_time_text(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Some(d.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(n) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(n.and_utc());
        }
    }
    None
}

/// Column names of `table`; empty when the table does not exist.
pub fn columns(conn: &Connection, table: &str) -> rusqlite::Result<BTreeSet<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", quote(table)))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
    names.collect()
}

/// `"name"` with embedded quotes doubled.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A table as this database has it: its name and the columns it really has.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub name: String,
    pub cols: BTreeSet<String>,
}

impl Table {
    /// `PRAGMA table_info`; a missing table has no columns.
    pub fn probe(conn: &Connection, name: &str) -> rusqlite::Result<Table> {
        Ok(Table {
            name: name.to_string(),
            cols: columns(conn, name)?,
        })
    }

    pub fn exists(&self) -> bool {
        !self.cols.is_empty()
    }

    pub fn has(&self, col: &str) -> bool {
        self.cols.contains(col)
    }

    /// `"a", NULL, "c"`: the wanted columns in order, `NULL` for those this table lacks.
    pub fn select_list(&self, wanted: &[&str]) -> String {
        wanted
            .iter()
            .map(|c| if self.has(c) { quote(c) } else { "NULL".into() })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Rows copied out of a query, each cell addressable by the column name it was asked for.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub names: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Rows {
    /// `SELECT <wanted> FROM <table> <tail>` with `NULL` for columns `table` lacks; nothing
    /// when the table does not exist. `tail` is the `WHERE … ORDER BY …` part and may only
    /// name columns [`Table::has`] confirmed.
    pub fn fetch(
        conn: &Connection,
        table: &Table,
        wanted: &[&str],
        tail: &str,
        params: impl Params,
    ) -> rusqlite::Result<Rows> {
        let names: Vec<String> = wanted.iter().map(|s| s.to_string()).collect();
        if !table.exists() {
            return Ok(Rows {
                names,
                rows: Vec::new(),
            });
        }
        let sql = format!(
            "SELECT {} FROM {} {tail}",
            table.select_list(wanted),
            quote(&table.name)
        );
        Rows::query(conn, &sql, names, params)
    }

    /// Any query; `names` name its result columns in order.
    pub fn query(
        conn: &Connection,
        sql: &str,
        names: Vec<String>,
        params: impl Params,
    ) -> rusqlite::Result<Rows> {
        let mut stmt = conn.prepare_cached(sql)?;
        let n = stmt.column_count();
        let mut rows = stmt.query(params)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let mut cells = Vec::with_capacity(n);
            for i in 0..n {
                cells.push(Cell::of(row.get_ref(i)?));
            }
            out.push(cells);
        }
        Ok(Rows { names, rows: out })
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(move |cells| Row {
            names: &self.names,
            cells,
        })
    }

    pub fn first(&self) -> Option<Row<'_>> {
        self.iter().next()
    }
}

/// One row of [`Rows`].
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    names: &'a [String],
    cells: &'a [Cell],
}

static NULL: Cell = Cell::Null;

impl<'a> Row<'a> {
    /// The cell of column `name`; `NULL` when it was not asked for or the table lacks it.
    pub fn get(&self, name: &str) -> &'a Cell {
        self.names
            .iter()
            .position(|n| n == name)
            .and_then(|i| self.cells.get(i))
            .unwrap_or(&NULL)
    }

    pub fn cells(&self) -> &'a [Cell] {
        self.cells
    }
}

/// The version of a session whose child sessions name it in `parent_session_id` (Crush's
/// and Goose's `sessions` tables): its row (`columns` of `sessions`), what `messages`
/// (a query taking the session id as `?1`, `None` where the table cannot tell) says of its
/// messages, then the same for each child, at most 256 sessions deep.
pub fn session_tree_version(
    conn: &Connection,
    sessions: &Table,
    columns: &[&str],
    messages: Option<&str>,
    id: &str,
) -> rusqlite::Result<u64> {
    let mut seen = std::collections::HashSet::new();
    let mut todo = vec![id.to_string()];
    let mut all: Vec<Vec<Vec<Cell>>> = Vec::new();
    while let Some(sid) = todo.pop() {
        if !seen.insert(sid.clone()) || seen.len() > 256 {
            continue;
        }
        all.push(Rows::fetch(conn, sessions, columns, "WHERE id = ?1", [&sid])?.rows);
        if let Some(q) = messages {
            all.push(Rows::query(conn, q, vec![], [&sid])?.rows);
        }
        if sessions.has("parent_session_id") {
            let kids = Rows::query(
                conn,
                "SELECT id FROM sessions WHERE parent_session_id = ?1",
                vec!["id".into()],
                [&sid],
            )?;
            todo.extend(kids.iter().filter_map(|r| r.get("id").text()));
        }
    }
    Ok(hash_version(all))
}

/// One session's rows copied out of a database whose sessions nest by `parent_session_id`
/// (Crush's and Goose's `sessions` tables), with its children's, for a store to build from
/// after the read transaction ends.
#[derive(Debug, Default)]
pub struct SessionRows {
    pub id: String,
    /// The session's row, in the columns asked for; `None` when it is gone.
    pub session: Option<Vec<Cell>>,
    pub messages: Vec<Vec<Cell>>,
    pub children: Vec<SessionRows>,
    pub warnings: Vec<String>,
}

/// What [`fetch_session_tree`] reads: the tables, the columns taken from each, the message
/// column without which the messages cannot be read, their order (`ORDER BY …`), and how
/// deep children are followed.
pub struct TreeQuery<'a> {
    pub sessions: &'a Table,
    pub session_columns: &'a [&'a str],
    pub messages: &'a Table,
    pub message_columns: &'a [&'a str],
    pub content_column: &'a str,
    pub message_order: &'a str,
    pub max_depth: usize,
}

/// Copy session `id`'s rows and its children's (recursively, each once, up to
/// `q.max_depth`) out of the database; what cannot be read is a warning of that session.
pub fn fetch_session_tree(
    c: &Connection,
    q: &TreeQuery,
    id: &str,
    depth: usize,
    seen: &mut std::collections::HashSet<String>,
) -> rusqlite::Result<SessionRows> {
    let mut raw = SessionRows {
        id: id.to_string(),
        ..SessionRows::default()
    };
    seen.insert(id.to_string());
    if !q.sessions.exists() {
        raw.warnings
            .push("the database has no `sessions` table".into());
        return Ok(raw);
    }
    let row = Rows::fetch(c, q.sessions, q.session_columns, "WHERE id = ?1", [id])?;
    raw.session = row.first().map(|r| r.cells().to_vec());
    if raw.session.is_none() {
        raw.warnings
            .push("session row not found (deleted while reading?)".into());
    }
    if q.messages.has("session_id") && q.messages.has(q.content_column) {
        let tail = format!("WHERE session_id = ?1 {}", q.message_order);
        let rows = Rows::fetch(c, q.messages, q.message_columns, &tail, [id])?;
        raw.messages = rows.iter().map(|r| r.cells().to_vec()).collect();
    } else {
        raw.warnings
            .push("the database has no readable `messages` table".into());
    }
    if q.sessions.has("parent_session_id") {
        let kids = Rows::fetch(
            c,
            q.sessions,
            &["id"],
            "WHERE parent_session_id = ?1 ORDER BY created_at, rowid",
            [id],
        )?;
        for k in kids.iter().filter_map(|r| r.get("id").text()) {
            if depth >= q.max_depth || seen.contains(&k) {
                raw.warnings.push(format!(
                    "child session {k} not read: nested too deep or a cycle"
                ));
                continue;
            }
            raw.children
                .push(fetch_session_tree(c, q, &k, depth + 1, seen)?);
        }
    }
    Ok(raw)
}

/// The cell of column `name` in a row read with `cols`; null when it was not read.
pub fn cell<'a>(row: &'a [Cell], cols: &[&str], name: &str) -> &'a Cell {
    cols.iter()
        .position(|c| *c == name)
        .and_then(|i| row.get(i))
        .unwrap_or(&Cell::Null)
}

/// A version number from any hashable values (row counts, largest ids, update times).
pub fn hash_version(parts: impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A killed process's private copies are removed by the next process that makes one;
    /// a live process's copies, and anything else in the directory, are left alone.
    #[test]
    fn copies_of_processes_that_are_gone_are_swept() {
        let tmp = tempfile::tempdir().unwrap();
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let names = [
            format!("sessfs-sqlite-{dead}-1-0"),
            format!("sessfs-sqlite-{}-1-0", std::process::id()),
            "sessfs-sqlite-x-1-0".to_string(),
            "other".to_string(),
        ];
        for n in &names {
            std::fs::create_dir(tmp.path().join(n)).unwrap();
            std::fs::write(tmp.path().join(n).join("copy.db"), "x").unwrap();
        }
        sweep_dead_copies(tmp.path());
        let left: Vec<bool> = names.iter().map(|n| tmp.path().join(n).exists()).collect();
        assert_eq!(left, [false, true, true, true]);
    }

    #[test]
    fn journals_are_the_wal_and_the_rollback_journal_only() {
        let db = Path::new("/h/.local/share/opencode/opencode.db");
        let is = |p: &str| is_journal_of(Path::new(p), db);
        assert!(is("/h/.local/share/opencode/opencode.db-wal"));
        assert!(is("/h/.local/share/opencode/opencode.db-journal"));
        assert!(!is("/h/.local/share/opencode/opencode.db"));
        assert!(!is("/h/.local/share/opencode/opencode.db-shm"));
        assert!(!is("/h/.local/share/opencode/opencode.db-wal2"));
        assert!(!is("/h/.local/share/opencode/other.db-wal"));
    }

    /// Many sessions' versions in one read are each what the session's own read gives; an
    /// unchanged database answers from memory; a write changes only its session's version;
    /// a key whose query fails has none and costs the others nothing.
    #[test]
    fn versions_in_one_read_match_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        let w = Connection::open(&db).unwrap();
        w.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE m (sid TEXT, body TEXT);
             INSERT INTO m VALUES ('a', 'one'), ('b', 'two'), ('b', 'three');",
        )
        .unwrap();
        let calls = std::cell::Cell::new(0);
        let f = |c: &Connection, (): &(), k: &str| {
            calls.set(calls.get() + 1);
            if k == "bad" {
                return c.query_row("SELECT nope FROM m", [], |_| Ok(0));
            }
            c.query_row(
                "SELECT count(*), group_concat(body) FROM m WHERE sid = ?1",
                [k],
                |r| {
                    Ok(hash_version((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Option<String>>(1)?,
                    )))
                },
            )
        };
        let reader = Reader::new();
        let many = reader.versions(&db, &["a", "b", "bad"], |_| Ok(()), f);
        assert_eq!(calls.get(), 3);
        let fresh = Reader::new();
        let one = |k: &str| fresh.versions(&db, &[k], |_| Ok(()), f)[0];
        assert_eq!(many, vec![one("a"), one("b"), None]);
        assert!(many[0].is_some() && many[0] != many[1]);
        calls.set(0);
        assert_eq!(reader.versions(&db, &["a", "b"], |_| Ok(()), f), many[..2]);
        assert_eq!(calls.get(), 0, "an unchanged database is not read again");
        w.execute("INSERT INTO m VALUES ('b', 'four')", []).unwrap();
        let after = reader.versions(&db, &["a", "b"], |_| Ok(()), f);
        assert_eq!(after[0], many[0]);
        assert_ne!(after[1], many[1]);
    }

    #[test]
    fn select_lists_name_present_columns_and_null_the_rest() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (a TEXT, \"we\"\"ird\" INTEGER);
             INSERT INTO t VALUES ('x', 2), ('y', 3);",
        )
        .unwrap();
        let t = Table::probe(&conn, "t").unwrap();
        assert_eq!(t.select_list(&["a", "b"]), "\"a\", NULL");
        let rows = Rows::fetch(&conn, &t, &["b", "a", "we\"ird"], "ORDER BY a", []).unwrap();
        let got: Vec<(Cell, Option<String>, Option<i64>)> = rows
            .iter()
            .map(|r| {
                (
                    r.get("b").clone(),
                    r.get("a").text(),
                    r.get("we\"ird").int(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Cell::Null, Some("x".into()), Some(2)),
                (Cell::Null, Some("y".into()), Some(3))
            ]
        );
        assert_eq!(rows.first().unwrap().get("not asked"), &Cell::Null);
        let missing = Table::probe(&conn, "nope").unwrap();
        assert!(!missing.exists());
        assert!(Rows::fetch(&conn, &missing, &["a"], "", [])
            .unwrap()
            .is_empty());
    }

    #[test]
    fn times_in_seconds_milliseconds_and_text() {
        let want = DateTime::parse_from_rfc3339("2026-01-11T22:59:11.896Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(Cell::Int(1768172351896).time(), Some(want));
        assert_eq!(Cell::Real(1768172351.896).time(), Some(want));
        assert_eq!(
            Cell::Text("2026-01-11T22:59:11.896Z".into()).time(),
            Some(want)
        );
        assert_eq!(
            sqlite_uri(Path::new("/a b/c?d#%.db")),
            "file:/a%20b/c%3Fd%23%25.db?mode=ro"
        );
    }

    /// A database in rollback-journal mode with one table `m` of one row, and a writable
    /// connection to it (the agent's).
    fn one_row_db() -> (tempfile::TempDir, PathBuf, Connection) {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("m.db");
        let w = Connection::open(&db).unwrap();
        w.execute_batch("CREATE TABLE m (s TEXT); INSERT INTO m VALUES ('a');")
            .unwrap();
        (tmp, db, w)
    }

    #[test]
    fn versions_are_cached_until_the_file_changes_and_invalidate_moves_them() {
        let (tmp, db, w) = one_row_db();
        let reader = Reader::new();
        let calls = std::cell::Cell::new(0);
        let q = |c: &Connection| {
            calls.set(calls.get() + 1);
            c.query_row("SELECT count(*) FROM m WHERE s = 'a'", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as u64)
        };
        let v1 = reader.version(&db, "a", q).unwrap();
        assert_eq!(reader.version(&db, "a", q), Some(v1));
        assert_eq!(calls.get(), 1, "unchanged file: cached");
        // A write to another session changes the file but not this session's version.
        std::thread::sleep(Duration::from_millis(10));
        w.execute("INSERT INTO m VALUES ('b')", []).unwrap();
        assert_eq!(reader.version(&db, "a", q), Some(v1));
        assert_eq!(calls.get(), 2);
        reader.invalidate(&db, "a");
        let v2 = reader.version(&db, "a", q).unwrap();
        assert_ne!(v1, v2);
        assert_eq!(reader.version(&db, "a", q), Some(v2));
        // Not a database: no version, and the tree falls back to file stat.
        let junk = tmp.path().join("junk.db");
        std::fs::write(&junk, b"not sqlite").unwrap();
        assert_eq!(reader.version(&junk, "a", q), None);
    }

    /// A session whose database is locked comes back empty with a warning that says why,
    /// and its version moves, so the next check loads it again instead of keeping the
    /// warning until the agent's next write.
    #[test]
    fn a_busy_load_warns_and_is_loaded_again_at_the_next_check() {
        let (_tmp, db, w) = one_row_db();
        let reader = Reader::new();
        // A version that the rows cannot move: only `invalidate` can.
        let version = || reader.version(&db, "a", |c| c.query_row("SELECT 7", [], |r| r.get(0)));
        let v = version().unwrap();
        let count = |c: &Connection| c.query_row("SELECT count(*) FROM m", [], |r| r.get(0));
        let titled = |n: i64| {
            let mut s = model::Session::new(model::Agent::Agsh, "a");
            s.title = Some(n.to_string());
            s
        };
        let empty = || model::Session::new(model::Agent::Agsh, "a");

        w.execute_batch("BEGIN EXCLUSIVE; INSERT INTO m VALUES ('b');")
            .unwrap();
        let s = load_session(&reader, &db, "a", Access::InPlace, count, titled, empty);
        assert_eq!(s.title, None);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(
            s.warnings[0].starts_with(&format!("cannot read {}: ", db.display())),
            "{:?}",
            s.warnings
        );
        w.execute_batch("ROLLBACK").unwrap();

        assert_ne!(version(), Some(v), "the busy session keeps its old version");
        let s = load_session(&reader, &db, "a", Access::InPlace, count, titled, empty);
        assert_eq!(s.title.as_deref(), Some("1"));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    /// A database unreadable for a moment (replaced by something else, then back with the
    /// same rows) gives the same row version again: the session read while it was
    /// unreadable must not stay filed under that version.
    #[test]
    fn a_load_that_failed_moves_the_version_even_when_the_rows_come_back_unchanged() {
        let (_tmp, db, w) = one_row_db();
        drop(w);
        let reader = Reader::new();
        let q = |c: &Connection| c.query_row("SELECT count(*) FROM m", [], |r| r.get::<_, u64>(0));
        let v = reader.version(&db, "a", q).unwrap();
        let original = std::fs::read(&db).unwrap();
        std::fs::write(&db, vec![0x5a; 8192]).unwrap();
        let titled = |n: u64| {
            let mut s = model::Session::new(model::Agent::Agsh, "a");
            s.title = Some(n.to_string());
            s
        };
        let empty = || model::Session::new(model::Agent::Agsh, "a");
        let s = load_session(&reader, &db, "a", Access::InPlace, q, titled, empty);
        assert_eq!(s.title, None);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        std::thread::sleep(Duration::from_millis(10));
        std::fs::write(&db, &original).unwrap();
        let again = reader.version(&db, "a", q);
        assert!(again.is_some());
        assert_ne!(
            again,
            Some(v),
            "the failed read's version would be served again"
        );
    }

    #[test]
    fn a_locked_database_is_busy_after_the_timeout_not_an_error_or_a_hang() {
        let (_tmp, db, w) = one_row_db();
        let reader = Reader::new();
        let v = reader
            .version(&db, "a", |c| {
                c.query_row("SELECT count(*) FROM m", [], |r| r.get::<_, i64>(0))
                    .map(|n| n as u64)
            })
            .unwrap();
        // Rollback-journal mode: an EXCLUSIVE lock keeps every reader out.
        w.execute_batch("BEGIN EXCLUSIVE; INSERT INTO m VALUES ('b');")
            .unwrap();
        std::thread::sleep(Duration::from_millis(10));
        let start = std::time::Instant::now();
        let r = reader.read(&db, Access::InPlace, |c| {
            c.query_row("SELECT count(*) FROM m", [], |r| r.get::<_, i64>(0))
        });
        assert!(matches!(r, Err(Error::Busy)), "{r:?}");
        assert!(start.elapsed() >= BUSY_TIMEOUT);
        // The version is kept while busy (the file changed: the journal exists).
        let kept = reader.version(&db, "a", |c| {
            c.query_row("SELECT count(*) + 100 FROM m", [], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
        });
        assert_eq!(kept, Some(v));
        w.execute_batch("COMMIT").unwrap();
    }
}
