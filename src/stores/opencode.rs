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
//! **Links.** Subagents (`task` tool) are child sessions (`parent_id`); they are not listed
//! at the top level but nested under the parent (`subagents/<child>/`), named at the `task`
//! call that spawned them (`state.metadata.sessionId`). A fork records its origin in
//! `fork_session_id` (newer schemas) and gets `forked_from`; older schemas record no fork.
//! `session.revert` (`/undo`) marks the messages from `revert.messageID` on as reverted:
//! they stay in the database until cleanup, and sessfs shows them as the branch `reverted`
//! (whole path, fork point = the last kept message), not in the transcript.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Cell, Reader, Rows, Table};
use super::{Base, Env, Listed, Root, Store};
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

/// Where OpenCode keeps its data, existing or not, in priority order: `OPENCODE_DB`, then
/// the data dir (which holds the databases and the legacy `storage/` tree).
pub fn candidates(env: &Env) -> Vec<Root> {
    let data = env.xdg_data_home().join("opencode");
    let mut out = Vec::new();
    if let Some(db) = env.var("OPENCODE_DB").filter(|v| *v != ":memory:") {
        let p = env.expand(db);
        let p = if p.is_absolute() { p } else { data.join(p) };
        out.push(Root::new(Agent::Opencode, p, "OPENCODE_DB"));
    }
    let how = if env.var("XDG_DATA_HOME").is_some() {
        "XDG_DATA_HOME"
    } else {
        "default"
    };
    out.push(Root::new(Agent::Opencode, data, how));
    out
}

pub struct OpencodeStore {
    base: Base,
    reader: Reader,
}

/// `(root index, path)` of a database or a legacy `storage/` tree.
type Place = (usize, PathBuf);

/// A database file name OpenCode writes: `opencode.db`, `opencode-<channel>.db`.
fn is_db_name(name: &str) -> bool {
    name == "opencode.db" || (name.starts_with("opencode-") && name.ends_with(".db"))
}

impl OpencodeStore {
    pub fn new(roots: Vec<Root>) -> OpencodeStore {
        OpencodeStore {
            base: Base::new(Agent::Opencode, roots),
            reader: Reader::new(),
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
                if is_db_name(kit::file_name(&p)) && p.is_file() && once(&p) {
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

    fn list(&self) -> Vec<Listed> {
        let (dbs, trees) = self.places();
        let mut out = Vec::new();
        let mut in_db: HashSet<String> = HashSet::new();
        for (root, db) in dbs {
            let Some(rows) = self.reader.list("opencode", &db, list_db) else {
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
                out.push(Listed {
                    id: s.id.clone(),
                    path: s.file.clone(),
                    sources: vec![s.file.clone(), storage.join("message").join(&s.id)],
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
            None => load_legacy(&listed.path, &listed.id),
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
        let source = |version: Option<String>| Source {
            paths: vec![db.to_path_buf()],
            format: "opencode-sqlite".into(),
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
            |raw| build(&raw, &source),
            || {
                let mut s = Session::new(Agent::Opencode, id);
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

fn load_legacy(file: &Path, id: &str) -> Session {
    let storage = file
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    let all = legacy_sessions(storage);
    let raw = read_legacy(storage, &all, file, id, 0, &mut HashSet::new());
    build(&raw, &|_| Source {
        paths: vec![file.to_path_buf(), storage.join("message").join(id)],
        format: "opencode-json".into(),
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

fn build(raw: &Raw, source: &dyn Fn(Option<String>) -> Source) -> Session {
    let info = &raw.info;
    let mut p = Parser {
        b: SessionBuilder::new(Agent::Opencode, raw.id.clone()),
        task_calls: HashMap::new(),
        raw,
    };
    p.b.s.source = source(kit::str_field(info, "version").map(str::to_string));
    p.b.s.warnings.extend(raw.warnings.iter().cloned());
    p.b.s.title = kit::str_field(info, "title")
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string);
    p.b.s.cwd = kit::str_field(info, "directory").map(str::to_string);
    p.b.s.created_at = ms(kit::value_at(info, &["time", "created"]));
    p.b.s.updated_at = ms(kit::value_at(info, &["time", "updated"]));
    p.b.s.forked_from = kit::str_field(info, "forkSessionID")
        .filter(|f| !f.is_empty() && *f != raw.id)
        .map(|f| model::unified_id(Agent::Opencode, f));
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
    let parent_uid = model::unified_id(Agent::Opencode, &raw.id);
    let mut taken = HashSet::new();
    for child in &raw.children {
        let mut c = build(child, source);
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
mod tests {
    use super::*;

    fn store_at(data: &Path) -> OpencodeStore {
        OpencodeStore::new(vec![Root::new(Agent::Opencode, data, "test")])
    }

    #[test]
    fn discovery_honours_xdg_and_opencode_db() {
        let env = Env {
            home: PathBuf::from("/h"),
            vars: [("OPENCODE_DB".to_string(), "x/dev.db".to_string())].into(),
        };
        let got: Vec<PathBuf> = candidates(&env).into_iter().map(|r| r.path).collect();
        assert_eq!(
            got,
            [
                PathBuf::from("/h/.local/share/opencode/x/dev.db"),
                PathBuf::from("/h/.local/share/opencode")
            ]
        );
        assert!(is_db_name("opencode-dev.db") && !is_db_name("opencode.db-wal"));
    }

    // A store in the shapes OpenCode 1.1.x wrote: two sessions of two versions, one with a
    // `question`, a `task` subagent (a child `session` row with `parent_id`), many tools,
    // reasoning (one part with text, one holding only the provider's encrypted metadata), a
    // `patch` part and per-step usage; written both as `opencode.db` rows (`message.data` =
    // info without ids, `part.data` = part without ids, as OpenCode's JSON-to-SQLite
    // migration maps them) and as the legacy `storage/` tree. All ids and text are made up.
    const OC_A: &str = "ses_3f9d21c7affeQm4TzR8vLx2NpK";
    const OC_A_CHILD: &str = "ses_3f9d0b52effeHt7WcY1sJq6MbD";
    const OC_B: &str = "ses_44e6a1d09ffeZp3KxV5nR8uLcE";
    const OC_PROJECT: &str = "7c41d2e9a0b8f6e5d4c3b2a1908f7e6d5c4b3a21";
    const OC_DIR: &str = "/home/dev/shop-api";
    const OC_TASK_CALL: &str = "call_T4skExplore00000000000001";
    const OC_QUESTION_ANSWER: &str = "any order is fine, just undo everything at the end";

    type OcParts = Vec<(String, serde_json::Value)>;

    struct OcSession {
        id: &'static str,
        parent: Option<&'static str>,
        title: &'static str,
        version: &'static str,
        created: i64,
        /// `(message id, info, parts)`, message and part ids ascending.
        messages: Vec<(String, serde_json::Value, OcParts)>,
    }

    fn oc_tool(
        call: &str,
        tool: &str,
        input: serde_json::Value,
        output: &str,
    ) -> serde_json::Value {
        serde_json::json!({"type": "tool", "callID": call, "tool": tool,
            "state": {"status": "completed", "input": input, "output": output, "title": tool,
                      "metadata": {}, "time": {"start": 1_769_203_400_000_i64, "end": 1_769_203_400_900_i64}}})
    }

    fn oc_usage(input: u64, output: u64) -> serde_json::Value {
        serde_json::json!({"input": input, "output": output, "reasoning": 0, "cache": {"read": 0, "write": 0}})
    }

    fn oc_assistant(
        at: i64,
        parent: &str,
        input: u64,
        output: u64,
        finish: &str,
    ) -> serde_json::Value {
        serde_json::json!({"role": "assistant", "time": {"created": at, "completed": at + 900},
            "parentID": parent, "modelID": "gpt-5.2-codex", "providerID": "openai", "mode": "build",
            "agent": "build", "path": {"cwd": OC_DIR, "root": OC_DIR}, "cost": 0,
            "tokens": oc_usage(input, output), "finish": finish})
    }

    fn oc_step_finish(reason: &str, input: u64, output: u64) -> serde_json::Value {
        serde_json::json!({"type": "step-finish", "reason": reason, "snapshot": "5d1c0e9f",
                           "cost": 0, "tokens": oc_usage(input, output)})
    }

    fn oc_sessions() -> Vec<OcSession> {
        use serde_json::json;
        let user = |at: i64| {
            json!({"role": "user", "time": {"created": at}, "agent": "build",
                                    "model": {"providerID": "openai", "modelID": "gpt-5.2-codex"}})
        };
        let text = |t: &str| json!({"type": "text", "text": t});
        let step = || json!({"type": "step-start", "snapshot": "5d1c0e9f"});
        let t0 = 1_769_203_363_105_i64;
        let m = |n: u32| format!("msg_c0a1{n:06}AAAAAAAAAAAAAA");
        let p = |n: u32, i: u32| format!("prt_c0a1{n:06}{i:02}BBBBBBBBBBBB");
        let task_out = format!(
            "The manifest is package.json at the repository root.\n\n<task_metadata>\nsession_id: {OC_A_CHILD}\n</task_metadata>"
        );
        let mut task = oc_tool(
            OC_TASK_CALL,
            "task",
            json!({"description": "Locate the package manifest", "prompt": "Find the package manifest", "subagent_type": "explore"}),
            &task_out,
        );
        task["state"]["metadata"] = json!({"sessionId": OC_A_CHILD});
        let question = format!(
            "User has answered your questions: \"Any order you want the tools in?\"=\"{OC_QUESTION_ANSWER}\"."
        );
        let a = OcSession {
            id: OC_A,
            parent: None,
            title: "Tool tour: use every tool once, then undo the edits",
            version: "1.1.34",
            created: t0,
            messages: vec![
                (
                    m(1),
                    user(t0 + 10),
                    vec![(
                        p(1, 0),
                        text("Use each tool once, then undo every edit and write you made."),
                    )],
                ),
                (
                    m(2),
                    oc_assistant(t0 + 20, &m(1), 4821, 97, "tool-calls"),
                    vec![
                        (p(2, 0), step()),
                        (
                            p(2, 1),
                            json!({"type": "reasoning", "text": "",
                            "metadata": {"openai": {"itemId": "rs_made_up_0001", "reasoningEncryptedContent": "gAAAAAB-made-up-0001"}},
                            "time": {"start": t0 + 21, "end": t0 + 22}}),
                        ),
                        (
                            p(2, 2),
                            oc_tool(
                                "call_Qu3stion000000000000001",
                                "question",
                                json!({"questions": [{"question": "Any order you want the tools in?", "header": "Order",
                                                  "options": [{"label": "Any", "description": "Pick yourself"}]}]}),
                                &question,
                            ),
                        ),
                        (p(2, 3), oc_step_finish("tool-calls", 4821, 97)),
                    ],
                ),
                (
                    m(3),
                    oc_assistant(t0 + 30, &m(1), 5230, 412, "tool-calls"),
                    vec![
                        (p(3, 0), step()),
                        (
                            p(3, 1),
                            json!({"type": "reasoning",
                            "text": "**Planning the tour**\n\nGlob first, then read, then delegate the manifest search.",
                            "metadata": {}, "time": {"start": t0 + 31, "end": t0 + 32}}),
                        ),
                        (
                            p(3, 2),
                            oc_tool(
                                "call_Gl0b000000000000000001",
                                "glob",
                                json!({"pattern": "src/**/*.ts"}),
                                "src/server.ts\nsrc/routes/orders.ts",
                            ),
                        ),
                        (
                            p(3, 3),
                            oc_tool(
                                "call_R3ad000000000000000001",
                                "read",
                                json!({"filePath": "/home/dev/shop-api/src/server.ts"}),
                                "<file>\n00001| import { serve } from './http'\n</file>",
                            ),
                        ),
                        (p(3, 4), task),
                        (
                            p(3, 5),
                            oc_tool(
                                "call_Bash000000000000000001",
                                "bash",
                                json!({"command": "git status --short", "description": "Show changes"}),
                                " M src/server.ts",
                            ),
                        ),
                        (
                            p(3, 6),
                            oc_tool(
                                "call_Ed1t000000000000000001",
                                "edit",
                                json!({"filePath": "/home/dev/shop-api/src/server.ts", "oldString": "serve(", "newString": "serve(app, "}),
                                "Edit applied successfully.",
                            ),
                        ),
                        (
                            p(3, 7),
                            oc_tool(
                                "call_Wr1te00000000000000001",
                                "write",
                                json!({"filePath": "/home/dev/shop-api/NOTES.md", "content": "tour notes"}),
                                "Wrote file successfully.",
                            ),
                        ),
                        (
                            p(3, 8),
                            oc_tool(
                                "call_Todo000000000000000001",
                                "todowrite",
                                json!({"todos": [{"content": "undo edits", "status": "pending", "id": "1"}]}),
                                "[{\"content\":\"undo edits\",\"status\":\"pending\"}]",
                            ),
                        ),
                        (
                            p(3, 9),
                            json!({"type": "patch", "hash": "9e8d7c6b",
                                         "files": ["/home/dev/shop-api/src/server.ts", "/home/dev/shop-api/NOTES.md"]}),
                        ),
                        (p(3, 10), oc_step_finish("tool-calls", 5230, 412)),
                    ],
                ),
                (
                    m(4),
                    oc_assistant(t0 + 40, &m(1), 6012, 88, "stop"),
                    vec![
                        (p(4, 0), step()),
                        (
                            p(4, 1),
                            text("Done: every tool ran once and both edits are undone."),
                        ),
                        (p(4, 2), oc_step_finish("stop", 6012, 88)),
                    ],
                ),
            ],
        };
        // The subagent's session: a child row only (its messages play no part here).
        let child = OcSession {
            id: OC_A_CHILD,
            parent: Some(OC_A),
            title: "Locate the package manifest (@explore subagent)",
            version: "1.1.34",
            created: t0 + 35,
            messages: vec![],
        };
        let t1 = 1_768_172_351_896_i64;
        let m = |n: u32| format!("msg_baf4{n:06}CCCCCCCCCCCCCC");
        let p = |n: u32, i: u32| format!("prt_baf4{n:06}{i:02}DDDDDDDDDDDD");
        let b = OcSession {
            id: OC_B,
            parent: None,
            title: "New session - 2026-01-11T22:59:11.896Z",
            version: "1.1.13",
            created: t1,
            messages: vec![
                (
                    m(1),
                    user(t1 + 5),
                    vec![(p(1, 0), text("What does the orders route return?"))],
                ),
                (
                    m(2),
                    oc_assistant(t1 + 9, &m(1), 3120, 64, "stop"),
                    vec![
                        (p(2, 0), step()),
                        (p(2, 1), text("A JSON list of orders, newest first.")),
                        (p(2, 2), oc_step_finish("stop", 3120, 64)),
                    ],
                ),
            ],
        };
        vec![a, child, b]
    }

    /// `opencode.db` rows in the 2026-08 schema, mapped as OpenCode's JSON migration does.
    fn write_oc_db(path: &Path, sessions: &[OcSession]) {
        let c = Connection::open(path).unwrap();
        c.execute_batch(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/schema/opencode-2026-08.sql"
        )))
        .unwrap();
        c.execute(
            "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES (?1, ?2, 'git', 1, 1, '[]')",
            rusqlite::params![OC_PROJECT, OC_DIR],
        )
        .unwrap();
        for s in sessions {
            c.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, agent, model, time_created, time_updated)
                 VALUES (?1, ?2, ?3, 'tidy-harbor', ?4, ?5, ?6, 'build', '{\"id\":\"gpt-5.2-codex\",\"providerID\":\"openai\"}', ?7, ?7)",
                rusqlite::params![s.id, OC_PROJECT, s.parent, OC_DIR, s.title, s.version, s.created],
            )
            .unwrap();
            for (mid, info, parts) in &s.messages {
                let at = info["time"]["created"].as_i64().unwrap();
                c.execute(
                    "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
                    rusqlite::params![mid, s.id, at, info.to_string()],
                )
                .unwrap();
                for (pid, part) in parts {
                    c.execute(
                        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                        rusqlite::params![pid, mid, s.id, at, part.to_string()],
                    )
                    .unwrap();
                }
            }
        }
    }

    /// The pre-SQLite `storage/` tree of the same top-level sessions (ids inside each file).
    fn write_oc_legacy(storage: &Path, sessions: &[OcSession]) {
        let put = |rel: String, v: &serde_json::Value| {
            let p = storage.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
        };
        for s in sessions.iter().filter(|s| s.parent.is_none()) {
            put(
                format!("session/{OC_PROJECT}/{}.json", s.id),
                &serde_json::json!({"id": s.id, "slug": "tidy-harbor", "version": s.version, "projectID": OC_PROJECT,
                    "directory": OC_DIR, "title": s.title, "time": {"created": s.created, "updated": s.created},
                    "summary": {"additions": 0, "deletions": 0, "files": 0}}),
            );
            for (mid, info, parts) in &s.messages {
                let mut info = info.clone();
                info["id"] = mid.as_str().into();
                info["sessionID"] = s.id.into();
                put(format!("message/{}/{mid}.json", s.id), &info);
                for (pid, part) in parts {
                    let mut part = part.clone();
                    part["id"] = pid.as_str().into();
                    part["sessionID"] = s.id.into();
                    part["messageID"] = mid.as_str().into();
                    put(format!("part/{mid}/{pid}.json"), &part);
                }
            }
        }
    }

    #[test]
    fn database_of_a_1_1_store_loads_with_subagent_tools_and_usage() {
        let tmp = tempfile::tempdir().unwrap();
        let sessions = oc_sessions();
        write_oc_db(&tmp.path().join("opencode.db"), &sessions);
        let store = store_at(tmp.path());
        let listed = store.list();
        let mut ids: Vec<&str> = listed.iter().map(|l| l.id.as_str()).collect();
        ids.sort();
        // The subagent child is nested, not listed.
        assert_eq!(ids, [OC_A, OC_B]);
        let l = listed.iter().find(|l| l.id == OC_A).unwrap();
        let s = store.load(l);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(
            s.title.as_deref(),
            Some("Tool tour: use every tool once, then undo the edits")
        );
        assert_eq!(s.source.format_version.as_deref(), Some("1.1.34"));
        assert_eq!(s.subagents.len(), 1);
        let sub = &s.subagents[0];
        assert_eq!(sub.name, OC_A_CHILD);
        assert_eq!(sub.tool_call_id.as_deref(), Some(OC_TASK_CALL));
        assert_eq!(
            sub.description.as_deref(),
            Some("Locate the package manifest")
        );
        let child = sub.session.as_ref().unwrap();
        let parent = format!("opencode:{OC_A}");
        assert_eq!(child.parent.as_deref(), Some(parent.as_str()));
        // Every tool part written, each with its output.
        let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
        let mut names: Vec<&str> = calls.iter().map(|c| c.tool_name.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "bash",
                "edit",
                "glob",
                "question",
                "read",
                "task",
                "todowrite",
                "write"
            ]
        );
        assert!(calls.iter().all(|c| c.output.is_some()));
        let q = calls.iter().find(|c| c.tool_name == "question").unwrap();
        assert!(q.output.as_deref().unwrap().contains(OC_QUESTION_ANSWER));
        // Usage: one step per message here, so step sums equal message tokens.
        let first = s
            .messages
            .iter()
            .find(|m| m.native_id.as_deref() == Some("msg_c0a1000002AAAAAAAAAAAAAA"))
            .unwrap();
        assert_eq!(first.token_usage.unwrap().input_tokens, 4821);
        assert_eq!(first.cost, Some(0.0));
        let thinking: Vec<&str> = s
            .messages
            .iter()
            .filter_map(|m| m.thinking.as_deref())
            .collect();
        assert!(
            thinking
                .iter()
                .any(|t| t.starts_with("**Planning the tour**")),
            "{thinking:?}"
        );

        // The legacy tree holds the same sessions: the database wins, nothing twice.
        write_oc_legacy(&tmp.path().join("storage"), &sessions);
        assert_eq!(store.list().len(), 2);
        std::fs::remove_file(tmp.path().join("opencode.db")).unwrap();
        let legacy = store.list();
        assert_eq!(legacy.len(), 2);
        let l = legacy.iter().find(|l| l.id == OC_A).unwrap();
        let s2 = store.load(l);
        assert_eq!(s2.source.format, "opencode-json");
        assert!(s2.warnings.is_empty(), "{:?}", s2.warnings);
        let texts = |s: &Session| -> Vec<String> {
            s.messages.iter().map(|m| m.text().to_string()).collect()
        };
        assert_eq!(texts(&s2), texts(&s));
        assert!(texts(&s2)
            .iter()
            .any(|t| t == "Done: every tool ran once and both edits are undone."));
    }

    /// The bundled sample (written by scripts/make-samples; expected values from its rows).
    #[test]
    fn bundled_sample_database_shows_tools_reasoning_usage_and_subagent() {
        let data =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home/.local/share/opencode");
        let store = store_at(&data);
        let listed = store.list();
        assert_eq!(listed.len(), 1);
        let s = store.load(&listed[0]);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.id, "ses_3a8f2d1c4ffeK7mQ2xV9bN4rTz");
        assert_eq!(
            s.title.as_deref(),
            Some("Cursor pagination for the orders endpoint")
        );
        let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
        let names: Vec<&str> = calls.iter().map(|c| c.tool_name.as_str()).collect();
        assert_eq!(names, ["task", "edit", "bash"]);
        assert!(calls[2]
            .output
            .as_deref()
            .unwrap()
            .contains("Tests  6 passed (6)"));
        assert!(s.messages.iter().any(|m| m
            .thinking
            .as_deref()
            .is_some_and(|t| t.starts_with("The route file is the place to start"))));
        let u = s.messages[1].token_usage.unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cached_tokens),
            (11_840, 212, 9_216)
        );
        assert_eq!(s.messages[1].cost, Some(0.0118));
        assert_eq!(s.subagents.len(), 1);
        let child = s.subagents[0].session.as_ref().unwrap();
        let grep = child
            .messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .next()
            .unwrap();
        assert_eq!(grep.tool_name, "grep");
        assert!(grep
            .output
            .as_deref()
            .unwrap()
            .contains("export async function listOrders"));
    }

    #[test]
    fn multi_step_usage_counts_each_step_once_and_revert_is_a_branch() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("opencode.db");
        let c = Connection::open(&db).unwrap();
        c.execute_batch(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/schema/opencode-2026-01.sql"
        )))
        .unwrap();
        c.execute_batch(
            r#"INSERT INTO project VALUES ('p','/w',NULL,NULL,NULL,NULL,1,1,NULL,'[]');
            INSERT INTO session (id,project_id,slug,directory,title,version,revert,time_created,time_updated)
              VALUES ('ses_1','p','s','/w','t','1.2.0','{"messageID":"msg_3"}',1,2);
            INSERT INTO message VALUES ('msg_1','ses_1',1,1,'{"role":"user","time":{"created":1768172351896}}');
            INSERT INTO part VALUES ('prt_1','msg_1','ses_1',1,1,'{"type":"text","text":"hello"}');
            INSERT INTO part VALUES ('prt_2','msg_1','ses_1',1,1,'{"type":"text","text":"file body","synthetic":true}');
            INSERT INTO message VALUES ('msg_2','ses_1',1,1,'{"role":"assistant","time":{"created":1768172351999},"modelID":"m","cost":0.5,"tokens":{"input":7,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}');
            INSERT INTO part VALUES ('prt_3','msg_2','ses_1',1,1,'{"type":"step-finish","cost":0.2,"tokens":{"input":10,"output":2,"reasoning":0,"cache":{"read":5,"write":0}}}');
            INSERT INTO part VALUES ('prt_4','msg_2','ses_1',1,1,'{"type":"step-finish","cost":0.3,"tokens":{"input":7,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}');
            INSERT INTO part VALUES ('prt_5','msg_2','ses_1',1,1,'{"type":"hologram"}');
            INSERT INTO message VALUES ('msg_3','ses_1',1,1,'{"role":"user","time":{"created":1768172352999}}');
            INSERT INTO part VALUES ('prt_6','msg_3','ses_1',1,1,'{"type":"text","text":"undone prompt"}');"#,
        )
        .unwrap();
        drop(c);
        let store = store_at(tmp.path());
        let s = store.load(&store.list()[0]);
        let texts: Vec<&str> = s.messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, ["hello", "file body", ""]);
        assert_eq!(s.messages[1].kind, MessageKind::Context);
        let u = s.messages[2].token_usage.unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cached_tokens),
            (17, 3, 5)
        );
        assert_eq!(s.messages[2].cost, Some(0.5));
        assert_eq!(s.cost().total_usd, 0.5);
        assert_eq!(s.branches.len(), 1);
        let b = &s.branches[0];
        assert_eq!(b.name, "reverted");
        assert_eq!(b.fork_point.as_deref(), Some("msg_2"));
        assert_eq!(b.messages.last().unwrap().text(), "undone prompt");
        assert!(s.warnings[0].contains("`hologram`"), "{:?}", s.warnings);
    }
}
