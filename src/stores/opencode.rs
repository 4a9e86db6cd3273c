//! OpenCode: `opencode.db` (SQLite, since 1.2 in early 2026) and the JSON tree it replaced.
//!
//! **Where.** `$XDG_DATA_HOME/opencode` (default `~/.local/share/opencode`, on every OS) holds
//! `opencode.db` (release channels) or `opencode-<channel>.db` (dev/preview builds), each
//! its own database; `OPENCODE_DB` names the file directly (absolute, or relative to the
//! data dir). Installs that never ran a SQLite build still have the JSON tree
//! `storage/session/<project>/<ses>.json`, `storage/message/<ses>/<msg>.json`,
//! `storage/part/<msg>/<prt>.json`; the first SQLite start copies it into the database and
//! leaves it behind, so a session found in both is read from the database.
//!
//! **Reading.** Through [`super::sqlite`]: one short read transaction copies the session
//! row, its `message` and `part` rows and those of its child sessions, and parsing happens
//! after it. Only `session`, `message` and `part` are read: the `account`, `control_account`,
//! `credential` and `session_share` tables in the same file hold tokens and secrets and are
//! never selected from. A session's version is its own rows (the session row, count and
//! newest `time_updated` of its messages and parts, and the same for its subagents), so a
//! write to one session re-renders only that one.
//!
//! **Messages.** `message.data` is the message JSON without ids, `part.data` the part JSON
//! without ids; parts are ordered by id (ids sort by time). `text` parts are the message
//! text (`synthetic` text parts, which the harness adds for the model, are injected context;
//! `ignored` ones too), `reasoning` parts the thinking, a `tool` part is one [`ToolCall`]
//! holding input and result (`output` set in place, as OpenCode stores them), `file` parts
//! placeholders. Usage: OpenCode overwrites a message's `tokens` with each step's and adds
//! each step's cost to its `cost`, so a message's tokens are the sum of its `step-finish`
//! parts (the message's own `tokens` when it has none) and its cost is the message `cost`
//! (the `step-finish` sum when absent): each step counted once. A user message with a
//! `compaction` part is a compaction marker, an assistant message with `summary: true` the
//! compaction summary.
//!
//! **Forks.** The Kilo CLI keeps this storage under its own name and directory; a
//! [`Flavor`] names what differs, and [`super::kilo`] reads it through this module.
//!
//! **Links.** Subagents (`task` tool) are child sessions (`parent_id`); they are not listed
//! at the top level but nested under the parent (`subagents/<child>/`), named at the `task`
//! call that spawned them (`state.metadata.sessionId`). A fork records its origin in
//! `fork_session_id` (newer schemas) and gets `forked_from`; older schemas record no fork.
//! `session.revert` (`/undo`) marks the messages from `revert.messageID` on as reverted:
//! they stay in the database until cleanup, and sessfs shows them as the branch `reverted`
//! (whole path, fork point = the last kept message), not in the transcript.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Cell, Reader, Rows, Table};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    self, Agent, Branch, Message, MessageKind, Role, Session, Source, Subagent, TokenUsage,
    ToolCall,
};
use crate::names;
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Largest JSON file of the legacy tree that is parsed.
const MAX_JSON: u64 = 64 << 20;
/// Subagents nested deeper than this are not read (a cycle guard).
const MAX_DEPTH: usize = 8;

/// What sets OpenCode and a fork that keeps its storage (Kilo CLI, [`super::kilo`]) apart
/// on disk: the agent, the data directory's name, the variable naming the database and the
/// database file names. Everything else (tables, message and part JSON) is one format.
#[derive(Clone, Copy, Debug)]
pub struct Flavor {
    pub agent: Agent,
    /// The directory under `$XDG_DATA_HOME`, and the prefix of `source.format`.
    pub name: &'static str,
    /// The variable naming the database file (absolute, or relative to the data dir).
    pub db_var: &'static str,
    /// Whether a file name in the data dir is one of the agent's databases.
    pub is_db_name: fn(&str) -> bool,
    /// How the data dir's root is labelled for `doctor` (after `default`/`XDG_DATA_HOME`).
    pub label: &'static str,
}

/// OpenCode itself.
pub const OPENCODE: Flavor = Flavor {
    agent: Agent::Opencode,
    name: "opencode",
    db_var: "OPENCODE_DB",
    is_db_name,
    label: "",
};

/// Where OpenCode keeps its data, existing or not, in priority order: `OPENCODE_DB`, then
/// the data dir (which holds the databases and the legacy `storage/` tree).
pub fn candidates(env: &Env) -> Vec<Root> {
    flavor_candidates(env, &OPENCODE)
}

/// [`candidates`] of a flavor: its database variable, then its data dir.
pub fn flavor_candidates(env: &Env, f: &Flavor) -> Vec<Root> {
    let data = env.xdg_data_home().join(f.name);
    let mut out = Vec::new();
    if let Some(db) = env.var(f.db_var).filter(|v| *v != ":memory:") {
        let p = env.expand(db);
        let p = if p.is_absolute() { p } else { data.join(p) };
        out.push(Root::new(f.agent, p, f.db_var));
    }
    let how = if env.var("XDG_DATA_HOME").is_some() {
        "XDG_DATA_HOME"
    } else {
        "default"
    };
    out.push(Root::new(f.agent, data, format!("{how}{}", f.label)));
    out
}

pub struct OpencodeStore {
    base: Base,
    reader: Reader,
    flavor: Flavor,
}

/// `(root index, path)` of a database or a legacy `storage/` tree.
type Place = (usize, PathBuf);

/// A database file name OpenCode writes: `opencode.db`, `opencode-<channel>.db`.
fn is_db_name(name: &str) -> bool {
    name == "opencode.db" || (name.starts_with("opencode-") && name.ends_with(".db"))
}

impl OpencodeStore {
    pub fn new(roots: Vec<Root>) -> OpencodeStore {
        OpencodeStore::with_flavor(OPENCODE, roots)
    }

    pub fn with_flavor(flavor: Flavor, roots: Vec<Root>) -> OpencodeStore {
        OpencodeStore {
            base: Base::new(flavor.agent, roots),
            reader: Reader::new(),
            flavor,
        }
    }

    /// `(root index, database)` for every database, and `(root index, storage dir)` for
    /// every legacy tree, each once.
    fn places(&self) -> (Vec<Place>, Vec<Place>) {
        let mut dbs = Vec::new();
        let mut trees = Vec::new();
        let mut seen = HashSet::new();
        let mut once = |p: &Path| seen.insert(p.canonicalize().unwrap_or_else(|_| p.into()));
        for (i, root) in self.base.roots.iter().enumerate() {
            if root.path.is_file() {
                if once(&root.path) {
                    dbs.push((i, root.path.clone()));
                }
                continue;
            }
            for p in kit::entries(&root.path) {
                if (self.flavor.is_db_name)(kit::file_name(&p)) && p.is_file() && once(&p) {
                    dbs.push((i, p));
                }
            }
            let storage = root.path.join("storage");
            if storage.join("session").is_dir() && once(&storage) {
                trees.push((i, storage));
            }
        }
        (dbs, trees)
    }
}

impl Store for OpencodeStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let (dbs, _) = self.places();
        self.reader
            .problems(dbs.iter().map(|(_, db)| db.as_path()), list_db)
    }

    /// The listing reads each root directory (where a database or `storage/` appears),
    /// every database, and the older JSON tree's `storage/session/` project directories
    /// and session files. A write to a database lands in its `-wal` (or, in rollback mode,
    /// in the database itself), so a database with its journals stands for all its
    /// sessions: any write to it lists the store again at the next search.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let (dbs, trees) = self.places();
        let mut g = Glance::default();
        for root in &self.base.roots {
            if root.path.is_dir() {
                g.dirs.push(root.path.clone());
            }
        }
        for (_, db) in &dbs {
            g.files.extend(sqlite::with_journals(db));
        }
        for (_, storage) in &trees {
            let sessions = storage.join("session");
            g.dirs.push(storage.clone());
            g.dirs.push(sessions.clone());
            for project in kit::subdirs(&sessions) {
                g.files.extend(
                    kit::entries(&project)
                        .into_iter()
                        .filter(|f| kit::file_name(f).ends_with(".json")),
                );
                g.dirs.push(project);
            }
        }
        Some(g)
    }

    fn list(&self) -> Vec<Listed> {
        let (dbs, trees) = self.places();
        let mut out = Vec::new();
        let mut in_db: HashSet<String> = HashSet::new();
        for (root, db) in dbs {
            let Some(rows) = self.reader.list(self.flavor.name, &db, list_db) else {
                continue;
            };
            let ids: HashSet<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
            for (id, parent) in &rows {
                in_db.insert(id.clone());
                // A subagent is shown inside its parent, unless the parent is gone.
                if parent.as_deref().is_some_and(|p| ids.contains(p)) {
                    continue;
                }
                out.push(sqlite::row_session(id, &db, root));
            }
        }
        for (root, storage) in trees {
            let sessions = legacy_sessions(&storage);
            let ids: HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
            for s in &sessions {
                if in_db.contains(&s.id) || s.parent.as_deref().is_some_and(|p| ids.contains(p)) {
                    continue;
                }
                let mut sources = Vec::new();
                legacy_sources(&storage, &sessions, s, 0, &mut HashSet::new(), &mut sources);
                out.push(Listed {
                    id: s.id.clone(),
                    path: s.file.clone(),
                    sources,
                    key: None,
                    root,
                });
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        match &listed.key {
            Some(id) => self.load_db(&listed.path, id),
            None => load_legacy(&self.flavor, &listed.path, &listed.id),
        }
    }

    /// One read of each database for all its sessions, its tables probed once.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            Tables::probe,
            session_version,
        )
    }
}

/// `(id, parent_id)` of every session.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<(String, Option<String>)>> {
    let t = Table::probe(conn, "session")?;
    if !t.has("id") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `session` table: not an OpenCode database".into(),
        ));
    }
    let rows = Rows::fetch(conn, &t, &["id", "parent_id"], "", [])?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.get("id").text()?, r.get("parent_id").non_empty())))
        .collect())
}

/// Session columns read, when present.
const SESSION_COLUMNS: [&str; 12] = [
    "id",
    "parent_id",
    "title",
    "directory",
    "version",
    "revert",
    "time_created",
    "time_updated",
    "time_compacting",
    "fork_session_id",
    "fork_message_id",
    "time_archived",
];

/// A session's version: its row and its message and part rows (count, newest
/// `time_updated`, largest id), then the same for its subagents. `tables` are probed once
/// per read of the database.
fn session_version(conn: &Connection, tables: &Tables, id: &str) -> rusqlite::Result<u64> {
    let Tables {
        session,
        message,
        part,
    } = tables;
    let mut seen = HashSet::new();
    let mut todo = vec![id.to_string()];
    let mut all: Vec<Vec<Vec<Cell>>> = Vec::new();
    while let Some(sid) = todo.pop() {
        if !seen.insert(sid.clone()) || seen.len() > 256 {
            continue;
        }
        all.push(Rows::fetch(conn, session, &SESSION_COLUMNS, "WHERE id = ?1", [&sid])?.rows);
        for t in [message, part] {
            if t.has("session_id") {
                let updated = if t.has("time_updated") {
                    "max(time_updated)"
                } else {
                    "NULL"
                };
                all.push(
                    Rows::query(
                        conn,
                        &format!(
                            "SELECT count(*), {updated}, max(id) FROM {} WHERE session_id = ?1",
                            sqlite::quote(&t.name)
                        ),
                        vec![],
                        [&sid],
                    )?
                    .rows,
                );
            }
        }
        if session.has("parent_id") {
            let kids = Rows::query(
                conn,
                "SELECT id FROM session WHERE parent_id = ?1",
                vec!["id".into()],
                [&sid],
            )?;
            todo.extend(kids.iter().filter_map(|r| r.get("id").text()));
        }
    }
    Ok(sqlite::hash_version(all))
}

// ---------------------------------------------------------------------------------------
// Raw rows, copied out of the database or read from the JSON tree

/// A session as stored, before parsing.
#[derive(Default)]
struct Raw {
    id: String,
    /// The session info as JSON (legacy file, or built from the `session` row).
    info: Value,
    /// `(message id, message JSON)` in id order.
    messages: Vec<(String, String)>,
    /// message id → `(part id, part JSON)` in id order.
    parts: HashMap<String, Vec<(String, String)>>,
    children: Vec<Raw>,
    warnings: Vec<String>,
}

impl OpencodeStore {
    fn load_db(&self, db: &Path, id: &str) -> Session {
        let agent = self.flavor.agent;
        let source = |version: Option<String>| Source {
            paths: vec![db.to_path_buf()],
            format: format!("{}-sqlite", self.flavor.name),
            format_version: version,
        };
        sqlite::load_session(
            &self.reader,
            db,
            id,
            sqlite::Access::InPlace,
            |c| {
                let t = Tables::probe(c)?;
                fetch(c, &t, id, 0, &mut HashSet::new())
            },
            |raw| build(agent, &raw, &source),
            || {
                let mut s = Session::new(agent, id);
                s.source = source(None);
                s
            },
        )
    }
}

struct Tables {
    session: Table,
    message: Table,
    part: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            session: Table::probe(c, "session")?,
            message: Table::probe(c, "message")?,
            part: Table::probe(c, "part")?,
        })
    }
}

/// Copy one session's rows and its subagents' (recursively) out of the database.
fn fetch(
    c: &Connection,
    t: &Tables,
    id: &str,
    depth: usize,
    seen: &mut HashSet<String>,
) -> rusqlite::Result<Raw> {
    let mut raw = Raw {
        id: id.to_string(),
        ..Raw::default()
    };
    seen.insert(id.to_string());
    if !t.session.exists() {
        raw.warnings
            .push("the database has no `session` table".into());
        return Ok(raw);
    }
    let row = Rows::fetch(c, &t.session, &SESSION_COLUMNS, "WHERE id = ?1", [id])?;
    match row.first() {
        Some(r) => raw.info = info_from_row(r),
        None => raw
            .warnings
            .push("session row not found (deleted while reading?)".into()),
    }
    if t.message.has("session_id") && t.message.has("data") {
        let rows = Rows::fetch(
            c,
            &t.message,
            &["id", "data"],
            "WHERE session_id = ?1 ORDER BY id",
            [id],
        )?;
        raw.messages = rows
            .iter()
            .map(|r| {
                (
                    r.get("id").text().unwrap_or_default(),
                    r.get("data").text().unwrap_or_default(),
                )
            })
            .collect();
    } else {
        raw.warnings
            .push("the database has no readable `message` table".into());
    }
    if t.part.has("message_id") && t.part.has("data") {
        let tail = if t.part.has("session_id") {
            "WHERE session_id = ?1 ORDER BY id"
        } else {
            "WHERE message_id IN (SELECT id FROM message WHERE session_id = ?1) ORDER BY id"
        };
        let rows = Rows::fetch(c, &t.part, &["id", "message_id", "data"], tail, [id])?;
        for r in rows.iter() {
            raw.parts
                .entry(r.get("message_id").text().unwrap_or_default())
                .or_default()
                .push((
                    r.get("id").text().unwrap_or_default(),
                    r.get("data").text().unwrap_or_default(),
                ));
        }
    }
    if t.session.has("parent_id") {
        let kids = Rows::fetch(
            c,
            &t.session,
            &["id"],
            "WHERE parent_id = ?1 ORDER BY id",
            [id],
        )?;
        for k in kids.iter().filter_map(|r| r.get("id").text()) {
            if depth >= MAX_DEPTH || seen.contains(&k) {
                raw.warnings
                    .push(format!("subagent {k} not read: nested too deep or a cycle"));
                continue;
            }
            raw.children.push(fetch(c, t, &k, depth + 1, seen)?);
        }
    }
    Ok(raw)
}

/// The `session` row as the session-info JSON of the legacy files.
fn info_from_row(r: sqlite::Row<'_>) -> Value {
    let mut o = serde_json::Map::new();
    let mut put = |k: &str, c: &Cell| {
        let v = match c {
            Cell::Null => return,
            Cell::Int(i) => Value::from(*i),
            Cell::Real(f) => Value::from(*f),
            Cell::Text(s) => Value::from(s.as_str()),
        };
        o.insert(k.to_string(), v);
    };
    put("id", r.get("id"));
    put("parentID", r.get("parent_id"));
    put("title", r.get("title"));
    put("directory", r.get("directory"));
    put("version", r.get("version"));
    put("forkSessionID", r.get("fork_session_id"));
    put("forkMessageID", r.get("fork_message_id"));
    let mut v = Value::Object(o);
    v["time"] = serde_json::json!({
        "created": r.get("time_created").int(),
        "updated": r.get("time_updated").int(),
    });
    if let Some(rev) = r.get("revert").str() {
        match kit::json_text(rev) {
            Ok(parsed) => v["revert"] = parsed.unwrap_or(Value::Null),
            // Kept for `build`, which counts and shows it.
            Err(e) => v[UNPARSED_REVERT] = serde_json::json!([rev, e]),
        }
    }
    v
}

/// Where [`info_from_row`] keeps a `revert` column that is not JSON, with its error.
const UNPARSED_REVERT: &str = "\u{0}unparsedRevert";

// ---------------------------------------------------------------------------------------
// The legacy JSON tree

struct LegacySession {
    id: String,
    parent: Option<String>,
    file: PathBuf,
}

/// Every `storage/session/<project>/<ses>.json`, with its parent (one small file each).
fn legacy_sessions(storage: &Path) -> Vec<LegacySession> {
    let mut out = Vec::new();
    for project in kit::subdirs(&storage.join("session")) {
        for f in kit::entries(&project) {
            let Some(id) = kit::file_name(&f).strip_suffix(".json") else {
                continue;
            };
            let parent = kit::read_json(&f, id, 1 << 20)
                .ok()
                .and_then(|v| kit::str_field(&v, "parentID").map(str::to_string));
            out.push(LegacySession {
                id: id.to_string(),
                parent,
                file: f.clone(),
            });
        }
    }
    out
}

/// What [`read_legacy`] reads of `s`: its file, its `message/<id>/`, the `part/<msg>/` of
/// each message there (OpenCode rewrites a part while it streams, the message file only when
/// the reply ends), and the same for its child sessions. A part written alone then renders
/// the session again, as a new message does.
fn legacy_sources(
    storage: &Path,
    all: &[LegacySession],
    s: &LegacySession,
    depth: usize,
    seen: &mut HashSet<String>,
    out: &mut Vec<PathBuf>,
) {
    seen.insert(s.id.clone());
    let messages = storage.join("message").join(&s.id);
    let parts = kit::entries(&messages).into_iter().filter_map(|m| {
        let mid = kit::file_name(&m).strip_suffix(".json")?;
        Some(storage.join("part").join(mid))
    });
    out.push(s.file.clone());
    out.extend(parts);
    out.push(messages);
    for child in all
        .iter()
        .filter(|c| c.parent.as_deref() == Some(s.id.as_str()))
    {
        if depth >= MAX_DEPTH || seen.contains(&child.id) {
            continue;
        }
        legacy_sources(storage, all, child, depth + 1, seen, out);
    }
}

fn load_legacy(flavor: &Flavor, file: &Path, id: &str) -> Session {
    let storage = file
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    let all = legacy_sessions(storage);
    let raw = read_legacy(storage, &all, file, id, 0, &mut HashSet::new());
    build(flavor.agent, &raw, &|_| Source {
        paths: vec![file.to_path_buf(), storage.join("message").join(id)],
        format: format!("{}-json", flavor.name),
        format_version: None,
    })
}

fn read_legacy(
    storage: &Path,
    all: &[LegacySession],
    file: &Path,
    id: &str,
    depth: usize,
    seen: &mut HashSet<String>,
) -> Raw {
    seen.insert(id.to_string());
    let mut raw = Raw {
        id: id.to_string(),
        ..Raw::default()
    };
    match kit::read_json(file, &format!("session {id}"), MAX_JSON) {
        Ok(v) => raw.info = v,
        Err(e) => raw.warnings.push(e),
    }
    let read_text = |p: &Path, warnings: &mut Vec<String>| match std::fs::metadata(p) {
        Ok(m) if m.len() > MAX_JSON => {
            warnings.push(format!("{}: too large, skipped", p.display()));
            None
        }
        _ => match super::kit::read_file(p) {
            Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
            Err(e) => {
                warnings.push(format!("{}: cannot read: {e}", p.display()));
                None
            }
        },
    };
    for m in kit::entries(&storage.join("message").join(id)) {
        let Some(mid) = kit::file_name(&m).strip_suffix(".json") else {
            continue;
        };
        let mid = mid.to_string();
        if let Some(text) = read_text(&m, &mut raw.warnings) {
            raw.messages.push((mid.clone(), text));
        }
        let mut parts = Vec::new();
        for p in kit::entries(&storage.join("part").join(&mid)) {
            let Some(pid) = kit::file_name(&p).strip_suffix(".json") else {
                continue;
            };
            let pid = pid.to_string();
            if let Some(text) = read_text(&p, &mut raw.warnings) {
                parts.push((pid, text));
            }
        }
        raw.parts.insert(mid, parts);
    }
    for child in all.iter().filter(|s| s.parent.as_deref() == Some(id)) {
        if depth >= MAX_DEPTH || seen.contains(&child.id) {
            continue;
        }
        let c = read_legacy(storage, all, &child.file, &child.id, depth + 1, seen);
        raw.children.push(c);
    }
    raw
}

// ---------------------------------------------------------------------------------------
// Parsing

fn ms(v: Option<&Value>) -> Option<DateTime<Utc>> {
    v.and_then(super::parse_time)
}

fn tokens(v: Option<&Value>) -> Option<TokenUsage> {
    let t = v.filter(|t| t.is_object())?;
    Some(TokenUsage {
        input_tokens: kit::u64_field(t, "input"),
        output_tokens: kit::u64_field(t, "output"),
        thinking_tokens: kit::u64_field(t, "reasoning"),
        cached_tokens: kit::u64_at(t, &["cache", "read"]),
        cache_write_tokens: kit::u64_at(t, &["cache", "write"]),
    })
}

/// A message's parts as JSON, in id order, and the parts that are not JSON:
/// `(part id, raw text, error)`, shown after the message.
#[allow(clippy::type_complexity)]
fn parts<'r>(raw: &'r Raw, mid: &str) -> (Vec<(String, Value)>, Vec<(&'r str, &'r str, String)>) {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for (pid, data) in raw.parts.get(mid).into_iter().flatten() {
        match serde_json::from_str::<Value>(data) {
            Ok(v) => out.push((pid.clone(), v)),
            Err(e) => bad.push((pid.as_str(), data.as_str(), e.to_string())),
        }
    }
    (out, bad)
}

/// Builds one session (and its subagents) from its raw rows.
struct Parser<'a> {
    b: SessionBuilder,
    /// child session id → `(tool call id, description)` from the parent's `task` calls.
    task_calls: HashMap<String, (String, Option<String>)>,
    raw: &'a Raw,
}

/// OpenCode's name for a session it has not titled: `New session - ` (`Child session - `
/// for a subagent) and the creation time as `toISOString` writes it (`isDefaultTitle` in
/// `packages/opencode/src/session/index.ts`). Kilo CLI keeps the same.
fn is_default_title(t: &str) -> bool {
    let Some(time) = t
        .strip_prefix("New session - ")
        .or_else(|| t.strip_prefix("Child session - "))
    else {
        return false;
    };
    // 2026-07-30T14:04:55.689Z
    let pattern = "dddd-dd-ddTdd:dd:dd.dddZ";
    time.len() == pattern.len()
        && time.bytes().zip(pattern.bytes()).all(|(c, p)| match p {
            b'd' => c.is_ascii_digit(),
            _ => c == p,
        })
}

fn build(agent: Agent, raw: &Raw, source: &dyn Fn(Option<String>) -> Source) -> Session {
    let info = &raw.info;
    let mut p = Parser {
        b: SessionBuilder::new(agent, raw.id.clone()),
        task_calls: HashMap::new(),
        raw,
    };
    p.b.s.source = source(kit::str_field(info, "version").map(str::to_string));
    p.b.s.warnings.extend(raw.warnings.iter().cloned());
    p.b.title_or_placeholder(
        kit::str_field(info, "title").map(str::to_string),
        is_default_title,
    );
    p.b.s.cwd = kit::str_field(info, "directory").map(str::to_string);
    p.b.s.created_at = ms(kit::value_at(info, &["time", "created"]));
    p.b.s.updated_at = ms(kit::value_at(info, &["time", "updated"]));
    p.b.s.forked_from = kit::str_field(info, "forkSessionID")
        .filter(|f| !f.is_empty() && *f != raw.id)
        .map(|f| model::unified_id(agent, f));
    if let Some([Value::String(raw), Value::String(e)]) = info
        .get(UNPARSED_REVERT)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        // Which messages were undone is unknown: all of them stay in the transcript.
        p.b.unparsed(
            "sessions rows",
            "revert is not JSON",
            || e.clone(),
            "revert",
            raw,
            None,
        );
    }
    let revert = info.get("revert").filter(|r| r.is_object());
    let revert_msg = revert.and_then(|r| kit::str_field(r, "messageID"));
    let mut revert_at: Option<usize> = None;
    for (mid, data) in &raw.messages {
        if revert_at.is_none() && revert_msg.is_some_and(|r| mid.as_str() >= r) {
            revert_at = Some(p.b.s.messages.len());
        }
        let (v, problem) = match serde_json::from_str::<Value>(data) {
            Ok(v) => match kit::str_field(&v, "role") {
                Some("user" | "assistant") => (v, None),
                other => (
                    Value::Null,
                    Some((
                        format!("unknown role `{}`", other.unwrap_or("")),
                        format!("message {mid}"),
                    )),
                ),
            },
            Err(e) => (
                Value::Null,
                Some(("invalid JSON".to_string(), format!("message {mid}: {e}"))),
            ),
        };
        let (parts, bad) = parts(raw, mid);
        match (kit::str_field(&v, "role"), problem) {
            (Some("user"), None) => p.user(mid, &v, &parts),
            (Some("assistant"), None) => p.assistant(mid, &v, &parts),
            (_, problem) => {
                // A message sessfs cannot read: it and every part of it, as stored.
                let (problem, first) = problem.unwrap_or_default();
                p.b.unparsed("messages", &problem, || first, "message", data, None);
                for (pid, part) in p.raw.parts.get(mid).into_iter().flatten() {
                    p.b.context(&format!("unparsed part {pid}"), part.clone(), None);
                }
                continue;
            }
        }
        for (pid, data, e) in bad {
            p.b.unparsed(
                "parts",
                "invalid JSON",
                || format!("part {pid}: {e}"),
                "part",
                data,
                None,
            );
        }
    }
    let parent_uid = model::unified_id(agent, &raw.id);
    let mut taken = HashSet::new();
    for child in &raw.children {
        let mut c = build(agent, child, source);
        c.parent = Some(parent_uid.clone());
        let (call, desc) = match p.task_calls.get(&child.id) {
            Some((call, desc)) => (Some(call.clone()), desc.clone()),
            None => (None, None),
        };
        p.b.s.subagents.push(Subagent {
            name: kit::unique_name(&mut taken, &names::escape(&child.id)),
            unified_id: None,
            description: desc.or_else(|| c.title.clone()),
            tool_call_id: call,
            session: Some(Box::new(c)),
        });
    }
    let mut s = p.b.finish();
    if let Some(at) = revert_at.filter(|at| *at < s.messages.len()) {
        let all = s.messages.clone();
        s.branches.push(Branch {
            name: "reverted".into(),
            fork_point: at.checked_sub(1).and_then(|i| all[i].native_id.clone()),
            leaf: all.last().and_then(|m| m.native_id.clone()),
            messages: all,
        });
        s.messages.truncate(at);
    }
    s
}

impl Parser<'_> {
    /// A part of a type this version does not know: counted, and shown as stored when it
    /// holds anything besides its type and ids.
    fn unsupported(&mut self, pid: &str, kind: &str, part: &Value, ts: Option<DateTime<Utc>>) {
        let first = || format!("part {pid}");
        let problem = format!("unsupported type `{kind}`");
        let bare = part.as_object().is_some_and(|o| {
            o.keys()
                .all(|k| matches!(k.as_str(), "type" | "id" | "messageID" | "sessionID"))
        });
        if bare {
            self.b.unparsed.note("parts", &problem, first);
        } else {
            let raw = part.to_string();
            self.b.unparsed("parts", &problem, first, "part", &raw, ts);
        }
    }

    fn user(&mut self, mid: &str, v: &Value, parts: &[(String, Value)]) {
        let ts = ms(kit::value_at(v, &["time", "created"]));
        let mut text: Vec<String> = Vec::new();
        let mut after: Vec<(&str, String)> = Vec::new();
        let mut compaction = None;
        let mut unknown: Vec<(&str, &str, &Value)> = Vec::new();
        for (pid, part) in parts {
            let kind = kit::str_field(part, "type").unwrap_or("");
            match kind {
                "text" => {
                    let t = kit::str_field(part, "text").unwrap_or("").to_string();
                    if part.get("synthetic").and_then(Value::as_bool) == Some(true) {
                        after.push(("synthetic text", t));
                    } else if part.get("ignored").and_then(Value::as_bool) == Some(true) {
                        after.push(("ignored text", t));
                    } else {
                        text.push(t);
                    }
                }
                "file" => text.push(file_placeholder(part)),
                "compaction" => {
                    let auto = part.get("auto").and_then(Value::as_bool) == Some(true);
                    compaction = Some(if auto {
                        "[compaction: started automatically]"
                    } else {
                        "[compaction: requested]"
                    });
                }
                "agent" => after.push((
                    "agent",
                    format!("@{}", kit::str_field(part, "name").unwrap_or("")),
                )),
                "subtask" => after.push((
                    "subtask",
                    kit::str_any(part, &["prompt", "description"])
                        .unwrap_or("")
                        .to_string(),
                )),
                "" | "step-start" | "snapshot" | "patch" => {}
                other => unknown.push((pid, other, part)),
            }
        }
        if !text.is_empty() {
            self.b.push(Message {
                role: Role::User,
                content: text.join("\n\n"),
                timestamp: ts,
                native_id: Some(mid.to_string()),
                ..Message::default()
            });
        }
        for (label, t) in after {
            self.b.context(label, t, ts);
        }
        if let Some(c) = compaction {
            self.b.event(c.to_string(), ts);
        }
        for (pid, kind, part) in unknown {
            self.unsupported(pid, kind, part, ts);
        }
    }

    fn assistant(&mut self, mid: &str, v: &Value, parts: &[(String, Value)]) {
        let ts = ms(kit::value_at(v, &["time", "created"]));
        let mut text: Vec<String> = Vec::new();
        let mut thinking: Vec<String> = Vec::new();
        let mut calls: Vec<ToolCall> = Vec::new();
        let mut contexts: Vec<String> = Vec::new();
        let mut steps = TokenUsage::default();
        let mut step_cost = 0.0;
        let mut n_steps = 0;
        let mut unknown: Vec<(&str, &str, &Value)> = Vec::new();
        for (pid, part) in parts {
            let kind = kit::str_field(part, "type").unwrap_or("");
            match kind {
                "text" => {
                    let t = kit::str_field(part, "text").unwrap_or("").to_string();
                    if part.get("synthetic").and_then(Value::as_bool) == Some(true) {
                        contexts.push(t);
                    } else {
                        text.push(t);
                    }
                }
                "reasoning" => {
                    let t = kit::str_field(part, "text").unwrap_or("");
                    if !t.is_empty() {
                        thinking.push(t.to_string());
                    } else if sealed(part) && !thinking.iter().any(|t| t == model::SEALED_THINKING)
                    {
                        thinking.push(model::SEALED_THINKING.to_string());
                    }
                }
                "tool" => calls.push(self.tool(part)),
                "file" => text.push(file_placeholder(part)),
                "step-finish" => {
                    n_steps += 1;
                    if let Some(u) = tokens(part.get("tokens")) {
                        steps.add(&u);
                    }
                    step_cost += part.get("cost").and_then(Value::as_f64).unwrap_or(0.0);
                }
                "" | "step-start" | "snapshot" | "patch" | "retry" | "compaction" => {}
                other => unknown.push((pid, other, part)),
            }
        }
        let usage = if n_steps > 0 {
            Some(steps)
        } else {
            tokens(v.get("tokens"))
        };
        let cost = v
            .get("cost")
            .and_then(Value::as_f64)
            .or((n_steps > 0).then_some(step_cost));
        let summary = v.get("summary").and_then(Value::as_bool) == Some(true);
        self.b.push(Message {
            role: Role::Assistant,
            kind: if summary {
                MessageKind::CompactionSummary
            } else {
                MessageKind::Normal
            },
            content: text.join("\n\n"),
            timestamp: ts,
            tool_calls: calls,
            token_usage: usage.filter(|u| !u.is_zero()),
            cost,
            thinking: (!thinking.is_empty()).then(|| thinking.join("\n\n")),
            model: kit::str_field(v, "modelID").map(str::to_string),
            native_id: Some(mid.to_string()),
            ..Message::default()
        });
        for t in contexts {
            self.b.context("synthetic text", t, ts);
        }
        for (pid, kind, part) in unknown {
            self.unsupported(pid, kind, part, ts);
        }
        if let Some(err) = v.get("error").filter(|e| e.is_object()) {
            let name = kit::str_field(err, "name").unwrap_or("error");
            let msg = kit::str_at(err, &["data", "message"]).unwrap_or("");
            let ts = ms(kit::value_at(v, &["time", "completed"])).or(ts);
            self.b.event(format!("[error: {name}: {msg}]"), ts);
        }
    }

    /// A `tool` part: the call and, once it finished, its result.
    fn tool(&mut self, part: &Value) -> ToolCall {
        let state = part.get("state").unwrap_or(&Value::Null);
        let status = kit::str_field(state, "status").unwrap_or("");
        let call_id = kit::str_field(part, "callID").unwrap_or("").to_string();
        let name = kit::str_field(part, "tool").unwrap_or("").to_string();
        let (output, is_error) = match status {
            "completed" => {
                let mut out = kit::str_field(state, "output").unwrap_or("").to_string();
                for a in state
                    .get("attachments")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.push('\n');
                    out.push_str(&file_placeholder(a));
                }
                (Some(out), Some(false))
            }
            "error" => (
                Some(kit::str_field(state, "error").unwrap_or("").to_string()),
                Some(true),
            ),
            _ => (None, None),
        };
        if name == "task" {
            if let Some(child) = kit::str_at(state, &["metadata", "sessionId"]) {
                let desc = kit::str_at(state, &["input", "description"])
                    .or_else(|| kit::str_field(state, "title"))
                    .map(str::to_string);
                self.task_calls
                    .insert(child.to_string(), (call_id.clone(), desc));
            }
        }
        let t = |k: &str| kit::value_at(state, &["time", k]).and_then(Value::as_u64);
        ToolCall {
            tool_call_id: call_id,
            tool_name: name,
            input: state.get("input").cloned().unwrap_or(Value::Null),
            output,
            is_error,
            duration_ms: t("end").zip(t("start")).map(|(e, s)| e.saturating_sub(s)),
        }
    }
}

/// Reasoning kept only encrypted (`metadata.<provider>.reasoningEncryptedContent`).
fn sealed(part: &Value) -> bool {
    part.get("metadata")
        .and_then(Value::as_object)
        .is_some_and(|m| {
            m.values().any(|p| {
                p.get("reasoningEncryptedContent")
                    .is_some_and(|e| !e.is_null())
            })
        })
}

/// `[image: image/png, 3.0 KB]` for pasted data, `[file: name (mime)]` for references.
fn file_placeholder(part: &Value) -> String {
    let url = kit::str_field(part, "url").unwrap_or("");
    if url.starts_with("data:") {
        return kit::data_url_placeholder(url);
    }
    let name = kit::str_any(part, &["filename", "url"]).unwrap_or("?");
    match kit::str_field(part, "mime") {
        Some(m) => format!("[file: {name} ({m})]"),
        None => format!("[file: {name}]"),
    }
}

#[cfg(test)]
mod tests;
