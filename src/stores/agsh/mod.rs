//! agsh and its successor meka: every session of an install in one SQLite database.
//!
//! agsh keeps `sessions.db` (`$AGSH_DATA_DIR`, else the platform data dir); after its rename
//! to meka the same tables live in `meka.db` (`$MEKA_DATA_DIR`, else the data dir), in WAL
//! mode, with extra session columns (`parent_session_id`, `cwd`, `stat_*` counters,
//! `provider`, `model_override`). Both are one store under the `agsh` directory because
//! they share the message encoding; [`candidates`] names both databases and `meta.json`
//! `source.format` says which one a session came from.
//!
//! **Reading a live database** goes through [`super::sqlite`]: read-only connections, one
//! short read transaction per session whose rows are copied out and parsed after it ends,
//! the private-copy fallback, busy handling and per-session versions (a session's version is
//! its own rows: message count and largest id, the session row, its scratchpad and its
//! children, so a write to one session re-renders only that one). Only `sessions`,
//! `messages` and `tool_outputs` are read: the credential tables in the same file
//! (`oauth_tokens`, `mcp_oauth_credentials`, `mcp_auth_cache`, `provider_credentials`) are
//! never selected from. Columns are probed, so both schemas and later migrations read with
//! one code path.
//!
//! **Messages.** `user` rows are plain text (often starting with a `<context>…</context>`
//! block the agent injects each turn: split out as a context message just before the
//! prompt, so it is never the prompt, a turn or the title);
//! `assistant` and `tool_results` rows are JSON arrays of content blocks tagged by `type`
//! (older rows may be plain text and read as text). Each `tool_result` block becomes its own
//! `Role::Tool` message named after the matching `tool_use`. Event rows are JSON:
//! `CompactBoundary` becomes a compaction-summary message, meka's `Repair` a "rewound N
//! messages" marker followed by the repair messages, `Redact` a marker. The log is
//! append-only, so sessfs shows it whole: rows a compaction or a rewind replaced stay in the
//! transcript before the marker, rather than being dropped as the agent does when it
//! rebuilds its context. Rows with an unknown role are shown as stored, with a warning that counts them; the agent
//! itself skips them.
//!
//! **Extras.** The agent's scratchpad (`tool_outputs`) appears as
//! `tools/scratchpad-<name>.md` through [`Session::extra_files`]; meka's sub-agent children
//! are top-level sessions linked through `parent` / `subagents`; meka's session counters
//! become [`Session::reported_usage`].
//!
//! This module owns where the databases are, listing, versions and the one read
//! transaction per session (rows copied out); [`parse`] owns turning those rows into
//! messages, which needs no database.

mod parse;
#[cfg(test)]
mod tests;

pub use super::sqlite::Access;
use super::sqlite::{self, Cell, PrivateCopy, Reader, Rows, Table};
use super::{kit, Base, Env, Glance, Listed, Root, Store};
use crate::model::{self, Agent, Session, Source, Subagent};
use crate::names;
use parse::Builder;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// agsh's database file name.
pub const AGSH_DB: &str = "sessions.db";
/// meka's database file name.
pub const MEKA_DB: &str = "meka.db";

const TITLE_CHARS: usize = 100;
/// Per-row warnings beyond this many are summarised in one line.
const MAX_ROW_WARNINGS: usize = 20;

/// Every place agsh or meka keeps its database, existing or not, in priority order.
///
/// `Root::path` is the database file. The XDG and `$HOME` defaults are listed even when the
/// override variable is set, so sessions written before the override was set still show.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    let mut push = |path: PathBuf, how: &str| {
        if !out.iter().any(|r| r.path == path) {
            out.push(Root::new(Agent::Agsh, path, how));
        }
    };
    for (var, app, file) in [
        ("AGSH_DATA_DIR", "agsh", AGSH_DB),
        ("MEKA_DATA_DIR", "meka", MEKA_DB),
    ] {
        if let Some(dir) = env.path_var(var) {
            push(dir.join(file), var);
        }
        if env.var("XDG_DATA_HOME").is_some() {
            push(env.xdg_data_home().join(app).join(file), "XDG_DATA_HOME");
        }
        push(
            env.home.join(".local/share").join(app).join(file),
            "default",
        );
        push(
            env.home
                .join("Library/Application Support")
                .join(app)
                .join(file),
            "default",
        );
    }
    out
}

pub struct AgshStore {
    base: Base,
    reader: Reader,
}

impl AgshStore {
    pub fn new(roots: Vec<Root>) -> AgshStore {
        AgshStore {
            base: Base::new(Agent::Agsh, roots),
            reader: Reader::new(),
        }
    }

    /// Problems `doctor` should show: roots without a database, files that are not
    /// readable agsh/meka databases. Each probe opens the database once.
    pub fn problems(&self) -> Vec<String> {
        let (dbs, mut problems) = self.databases();
        problems.extend(
            self.reader
                .problems(dbs.iter().map(|(_, db)| db.as_path()), list_ids),
        );
        problems
    }

    /// The database files under every root, `(root index, path)`, each file once.
    fn databases(&self) -> (Vec<(usize, PathBuf)>, Vec<String>) {
        let mut out: Vec<(usize, PathBuf)> = Vec::new();
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let mut problems = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            let files: Vec<PathBuf> = if root.path.is_dir() {
                // A `--store` directory: the data dir itself or its parent.
                [
                    AGSH_DB.to_string(),
                    MEKA_DB.to_string(),
                    format!("agsh/{AGSH_DB}"),
                    format!("meka/{MEKA_DB}"),
                ]
                .iter()
                .map(|f| root.path.join(f))
                .filter(|p| p.is_file())
                .collect()
            } else if root.path.exists() {
                vec![root.path.clone()]
            } else {
                problems.push(format!("{}: does not exist", root.path.display()));
                continue;
            };
            if files.is_empty() {
                problems.push(format!(
                    "{}: no {AGSH_DB} or {MEKA_DB} found",
                    root.path.display()
                ));
            }
            for f in files {
                let key = f.canonicalize().unwrap_or_else(|_| f.clone());
                if seen.insert(key) {
                    out.push((i, f));
                }
            }
        }
        (out, problems)
    }

    /// Run `f` on a read-only connection to `db` ([`Reader::read`]).
    pub fn read<T>(
        &self,
        db: &Path,
        access: Access,
        f: impl FnMut(&Connection) -> rusqlite::Result<T>,
    ) -> Result<(T, Option<String>), sqlite::Error> {
        self.reader.read(db, access, f)
    }

    pub fn private_copy(&self, db: &Path) -> Result<Arc<PrivateCopy>, sqlite::Error> {
        self.reader.private_copy(db)
    }
}

impl Store for AgshStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        AgshStore::problems(self)
    }

    fn list(&self) -> Vec<Listed> {
        let (dbs, problems) = self.databases();
        for p in problems {
            log::warn!("agsh: {p}");
        }
        sqlite::row_sessions(&self.reader, "agsh", &dbs, list_ids)
    }

    fn load(&self, listed: &Listed) -> Session {
        self.load_with(listed, Access::InPlace)
    }

    /// The listing reads each database's `sessions` rows, and in a root that is a
    /// directory (a `--store` data dir or its parent) looks up the two database names in
    /// it and in its `agsh/` and `meka/`: those directories (their entries move when a
    /// database appears or goes) and every database with its journals (a write lands in
    /// one of them). A root gone since it was opened leaves the store without a glance.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if root.path.is_dir() {
                g.dirs.extend(
                    ["agsh", "meka"]
                        .map(|d| root.path.join(d))
                        .into_iter()
                        .filter(|d| d.is_dir()),
                );
                g.dirs.push(root.path.clone());
            } else if !root.path.exists() {
                return None;
            }
        }
        for (_, db) in self.databases().0 {
            g.files.extend(sqlite::with_journals(&db));
        }
        Some(g)
    }

    /// One read of each database for all its sessions.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| Some(l.key.as_deref().unwrap_or(&l.id)),
            |_| Ok(()),
            |c, (), id| session_version(c, id),
        )
    }
}

impl AgshStore {
    /// [`Store::load`] with a chosen [`Access`].
    pub fn load_with(&self, listed: &Listed, access: Access) -> Session {
        let db = &listed.path;
        let id = listed.key.as_deref().unwrap_or(&listed.id);
        sqlite::load_session(
            &self.reader,
            db,
            id,
            access,
            |c| fetch_session(c, id),
            |raw| build_session(raw, db, id),
            || {
                let mut s = Session::new(Agent::Agsh, id);
                s.source = Source {
                    paths: vec![db.clone()],
                    format: format_name(db, false).to_string(),
                    format_version: None,
                };
                s
            },
        )
    }
}

/// `SELECT id FROM sessions`: the whole cost of a listing.
fn list_ids(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT id FROM sessions")?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        if let Some(id) = Cell::of(row.get_ref(0)?).text() {
            out.push(id);
        }
    }
    Ok(out)
}

/// A session's version from its own rows: its session row, message count and largest
/// message id, its scratchpad and (meka) its children's ids.
fn session_version(conn: &Connection, id: &str) -> rusqlite::Result<u64> {
    let sessions = Table::probe(conn, "sessions")?;
    let messages = Table::probe(conn, "messages")?;
    let scratch = Table::probe(conn, "tool_outputs")?;
    let row = Rows::fetch(conn, &sessions, &SESSION_COLUMNS, "WHERE id = ?1", [id])?;
    let msgs = if messages.has("session_id") {
        let key = if messages.has("id") { "id" } else { "rowid" };
        Rows::query(
            conn,
            &format!("SELECT count(*), max({key}) FROM messages WHERE session_id = ?1"),
            vec![],
            [id],
        )?
    } else {
        Rows::default()
    };
    let pad = if scratch.has("session_id") && scratch.has("content") {
        Rows::query(
            conn,
            "SELECT count(*), sum(length(content)), max(rowid) FROM tool_outputs \
             WHERE session_id = ?1",
            vec![],
            [id],
        )?
    } else {
        Rows::default()
    };
    let children = if sessions.has("parent_session_id") {
        Rows::query(
            conn,
            "SELECT id FROM sessions WHERE parent_session_id = ?1 ORDER BY id",
            vec![],
            [id],
        )?
    } else {
        Rows::default()
    };
    Ok(sqlite::hash_version((
        &row.rows,
        &msgs.rows,
        &pad.rows,
        &children.rows,
    )))
}

// ---------------------------------------------------------------------------------------
// Loading one session: rows copied out inside the read transaction, parsed after it

fn format_name(db: &Path, meka_columns: bool) -> &'static str {
    if meka_columns || db.file_name().is_some_and(|n| n == MEKA_DB) {
        "meka-sqlite"
    } else {
        "agsh-sqlite"
    }
}

/// Session columns sessfs uses, when present. Nothing else is selected.
const SESSION_COLUMNS: [&str; 9] = [
    "created_at",
    "updated_at",
    "parent_session_id",
    "cwd",
    "model_override",
    "stat_input_tokens",
    "stat_output_tokens",
    "stat_cache_creation_input_tokens",
    "stat_cache_read_input_tokens",
];

/// One session's rows, as read inside one transaction. Errors after the first read cost
/// only warnings, so they are kept as text.
struct Raw {
    user_version: Option<i64>,
    sessions: Table,
    session: Rows,
    /// `(id, role, content, created_at)`; `Ok(None)` when the table is not readable.
    messages: Result<Option<Rows>, String>,
    /// `(name, content, created_at)`
    scratchpad: Result<Rows, String>,
    /// `(id, subagent_spec_json)`; `None` for agsh (no children column).
    children: Option<Result<Rows, String>>,
}

fn fetch_session(conn: &Connection, id: &str) -> rusqlite::Result<Raw> {
    // The first read: errors here (no WAL index, not a database) go to the caller, which
    // may retry on a private copy. Later errors only cost warnings.
    let sessions = Table::probe(conn, "sessions")?;
    let user_version = conn
        .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .ok()
        .filter(|v| *v != 0);
    if !sessions.exists() {
        return Ok(Raw {
            user_version,
            sessions,
            session: Rows::default(),
            messages: Ok(None),
            scratchpad: Ok(Rows::default()),
            children: None,
        });
    }
    let session = Rows::fetch(conn, &sessions, &SESSION_COLUMNS, "WHERE id = ?1", [id])?;
    let messages = fetch_messages(conn, id).map_err(|e| e.to_string());
    let scratchpad = fetch_scratchpad(conn, id).map_err(|e| e.to_string());
    let children = sessions
        .has("parent_session_id")
        .then(|| fetch_children(conn, id, &sessions).map_err(|e| e.to_string()));
    Ok(Raw {
        user_version,
        sessions,
        session,
        messages,
        scratchpad,
        children,
    })
}

fn fetch_messages(conn: &Connection, id: &str) -> rusqlite::Result<Option<Rows>> {
    let t = Table::probe(conn, "messages")?;
    if !(t.has("role") && t.has("content") && t.has("session_id")) {
        return Ok(None);
    }
    let key = if t.has("id") { "id" } else { "rowid" };
    let created = if t.has("created_at") {
        "created_at"
    } else {
        "NULL"
    };
    Rows::query(
        conn,
        &format!(
            "SELECT {key}, role, content, {created} FROM messages \
             WHERE session_id = ?1 ORDER BY {key}"
        ),
        ["id", "role", "content", "created_at"]
            .map(String::from)
            .to_vec(),
        [id],
    )
    .map(Some)
}

fn fetch_scratchpad(conn: &Connection, id: &str) -> rusqlite::Result<Rows> {
    let t = Table::probe(conn, "tool_outputs")?;
    if !(t.has("name") && t.has("content") && t.has("session_id")) {
        return Ok(Rows::default());
    }
    Rows::fetch(
        conn,
        &t,
        &["name", "content", "created_at"],
        "WHERE session_id = ?1 ORDER BY name",
        [id],
    )
}

fn fetch_children(conn: &Connection, id: &str, sessions: &Table) -> rusqlite::Result<Rows> {
    let order = if sessions.has("created_at") {
        "created_at, id"
    } else {
        "id"
    };
    Rows::fetch(
        conn,
        sessions,
        &["id", "subagent_spec_json"],
        &format!("WHERE parent_session_id = ?1 ORDER BY {order}"),
        [id],
    )
}

/// Parse the rows of one session; runs after the read transaction has ended.
fn build_session(raw: Raw, db: &Path, id: &str) -> Session {
    let meka = raw.sessions.has("parent_session_id");
    let mut b = Builder::new(id);
    b.s.source = Source {
        paths: vec![db.to_path_buf()],
        format: format_name(db, meka).to_string(),
        format_version: raw.user_version.map(|v| v.to_string()),
    };
    if !raw.sessions.exists() {
        b.s.warnings
            .push("the database has no sessions table".to_string());
        return b.s;
    }
    let row: BTreeMap<&str, Cell> = match raw.session.first() {
        Some(r) => SESSION_COLUMNS
            .iter()
            .filter(|c| raw.sessions.has(c))
            .map(|c| (*c, r.get(c).clone()))
            .collect(),
        None => {
            b.s.warnings
                .push("session row not found (deleted while reading?)".to_string());
            BTreeMap::new()
        }
    };
    b.apply_session_row(&row);

    match raw.messages {
        Ok(Some(rows)) => {
            for r in rows.iter() {
                let native = r.get("id").text();
                let role = r.get("role").text().unwrap_or_default();
                let content = match r.get("content") {
                    Cell::Null => {
                        b.row_warning(&native, "content is NULL");
                        String::new()
                    }
                    c => c.text().unwrap_or_default(),
                };
                let ts = r.get("created_at").time();
                b.row(native, &role, &content, ts);
            }
        }
        Ok(None) => {
            b.s.warnings
                .push("the database has no readable messages table".to_string())
        }
        Err(e) => b.s.warnings.push(format!("messages: {e}")),
    }
    match raw.scratchpad {
        Ok(rows) => {
            for r in rows.iter() {
                let name = r.get("name").text().unwrap_or_default();
                let content = r.get("content").text().unwrap_or_default();
                b.s.extra_files
                    .push(scratchpad_file(&name, &content, r.get("created_at")));
            }
        }
        Err(e) => b.s.warnings.push(format!("scratchpad: {e}")),
    }
    match raw.children {
        Some(Ok(rows)) => push_children(&rows, &mut b.s),
        Some(Err(e)) => b.s.warnings.push(format!("sub-agents: {e}")),
        None => {}
    }
    b.finish()
}

/// `tools/scratchpad-<escaped name>.md`: a heading, when it was saved, the content as stored.
fn scratchpad_file(name: &str, content: &str, created: &Cell) -> (String, String) {
    let mut escaped = names::escape(name);
    // Leave room for the prefix and suffix within a 255-byte name.
    if escaped.len() > 230 {
        let mut cut = 200;
        while !escaped.is_char_boundary(cut) {
            cut -= 1;
        }
        escaped = format!("{}~{:016x}", &escaped[..cut], names::fnv1a(name.as_bytes()));
    }
    let heading: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut body = format!("# Scratchpad: {heading}\n\n");
    if let Some(t) = created.time() {
        body.push_str(&format!("Saved: {}\n\n", t.to_rfc3339()));
    } else if let Some(t) = created.non_empty() {
        body.push_str(&format!("Saved: {t}\n\n"));
    }
    body.push_str(content);
    if !body.ends_with('\n') {
        body.push('\n');
    }
    (format!("tools/scratchpad-{escaped}.md"), body)
}

fn push_children(rows: &Rows, s: &mut Session) {
    for r in rows.iter() {
        let Some(child) = r.get("id").text() else {
            continue;
        };
        let spec = match r
            .get("subagent_spec_json")
            .text()
            .map(|j| kit::json_text(&j))
        {
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                // Read for the description only; the child's own session shows its work.
                s.warnings.push(format!(
                    "subagent {child}: subagent_spec_json is not JSON ({e}); no description"
                ));
                None
            }
            None => None,
        };
        let description = spec
            .and_then(|v| {
                ["description", "name", "task"]
                    .iter()
                    .find_map(|k| v.get(k).and_then(Value::as_str).map(str::to_string))
            })
            .map(|d| d.chars().take(200).collect());
        s.subagents.push(Subagent {
            name: names::escape(&child),
            unified_id: Some(model::unified_id(Agent::Agsh, &child)),
            description,
            tool_call_id: None,
            session: None,
        });
    }
}
