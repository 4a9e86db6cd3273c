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

pub use super::sqlite::Access;
use super::sqlite::{self, Cell, PrivateCopy, Reader, Rows, Table};
use super::{kit, Base, Env, Listed, Root, Store};
use crate::model::{
    self, Agent, Message, MessageKind, Role, Session, Source, Subagent, TokenUsage, ToolCall,
    ToolResult,
};
use crate::names;
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
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
        let mut out = Vec::new();
        for (root, db) in dbs {
            for id in self.reader.list("agsh", &db, list_ids).unwrap_or_default() {
                out.push(sqlite::row_session(&id, &db, root));
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        self.load_with(listed, Access::InPlace)
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

// ---------------------------------------------------------------------------------------
// Rows to messages

/// Builds a [`Session`] from rows in `messages.id` order.
struct Builder {
    s: Session,
    /// Model for assistant messages: meka's `model_override`. Its `provider` ("anthropic")
    /// names no model and is not used as one.
    model: Option<String>,
    /// `tool_use.id` → tool name, to name the results.
    tool_names: HashMap<String, String>,
    unknown_roles: BTreeMap<String, usize>,
    unknown_blocks: BTreeMap<String, usize>,
    row_warnings: usize,
}

/// What a list of content blocks holds, in block order within each kind.
#[derive(Default)]
struct Parts {
    text: Vec<String>,
    thinking: Vec<String>,
    calls: Vec<ToolCall>,
    /// `(tool_use_id, output, is_error)`
    results: Vec<(String, String, bool)>,
}

/// Content of an `assistant` / `tool_results` row.
enum Content {
    Blocks(Vec<Value>),
    /// Plain text; `Some(error)` when it looked like JSON but did not parse.
    Text(String, Option<String>),
}

fn parse_content(content: &str) -> Content {
    let t = content.trim_start();
    let looks_json = t.starts_with("{\"")
        || (t.starts_with('[') && {
            let rest = t[1..].trim_start();
            rest.starts_with('{') || rest.starts_with(']')
        });
    if !looks_json {
        return Content::Text(content.to_string(), None);
    }
    match serde_json::from_str::<Value>(content) {
        Ok(Value::Array(a)) => Content::Blocks(a),
        Ok(v @ Value::Object(_)) => Content::Blocks(vec![v]),
        Ok(_) => Content::Text(content.to_string(), None),
        Err(e) => Content::Text(content.to_string(), Some(e.to_string())),
    }
}

/// `ToolUse` / `tool_use` / `tool-use` → `tooluse`.
fn norm(tag: &str) -> String {
    tag.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// A block's kind and the object holding its fields: internally tagged (`{"type": …}`)
/// or externally tagged (`{"Text": {…}}`); a bare string is text.
fn tagged(b: &Value) -> Option<(String, &Value)> {
    if let Some(t) = b.get("type").and_then(Value::as_str) {
        return Some((norm(t), b));
    }
    match b.as_object() {
        Some(o) if o.len() == 1 => o.iter().next().map(|(k, v)| (norm(k), v)),
        _ => None,
    }
}

use super::kit::str_any as str_field;

/// Placeholder for an image or other binary block; the data itself is only measured.
fn binary_placeholder(kind: &str, b: &Value) -> String {
    let src = b.get("source").unwrap_or(&Value::Null);
    let mime = str_field(src, &["media_type", "mediaType", "mime_type"])
        .or_else(|| str_field(b, &["media_type", "mediaType", "mime_type", "mimeType"]));
    let data = src
        .get("data")
        .or_else(|| b.get("data"))
        .and_then(Value::as_str);
    super::kit::base64_placeholder(kind, mime, data)
}

/// Text of a tool result's `content`: a string or a list of text parts.
fn result_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items.iter().map(part_text).collect::<Vec<_>>().join("\n"),
        Some(other) => part_text(other),
    }
}

fn part_text(v: &Value) -> String {
    if let Value::String(s) = v {
        return s.clone();
    }
    match tagged(v) {
        Some((k, inner)) if k == "image" || k == "document" => binary_placeholder(&k, inner),
        Some((_, inner)) if inner.get("text").is_some_and(Value::is_string) => {
            str_field(inner, &["text"]).unwrap_or_default().to_string()
        }
        _ => match v.get("text").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None => v.to_string(),
        },
    }
}

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The prompt without the leading `<context>…</context>` blocks the agent injects.
fn strip_context(text: &str) -> &str {
    let mut t = text.trim_start();
    while let Some(rest) = t.strip_prefix("<context>") {
        match rest.find("</context>") {
            Some(end) => t = rest[end + "</context>".len()..].trim_start(),
            None => return t,
        }
    }
    t
}

impl Builder {
    fn new(id: &str) -> Builder {
        Builder {
            s: Session::new(Agent::Agsh, id),
            model: None,
            tool_names: HashMap::new(),
            unknown_roles: BTreeMap::new(),
            unknown_blocks: BTreeMap::new(),
            row_warnings: 0,
        }
    }

    fn apply_session_row(&mut self, row: &BTreeMap<&str, Cell>) {
        let get = |k: &str| row.get(k).unwrap_or(&Cell::Null);
        self.s.created_at = get("created_at").time();
        self.s.updated_at = get("updated_at").time();
        self.s.cwd = get("cwd").non_empty();
        self.s.parent = get("parent_session_id")
            .non_empty()
            .map(|p| model::unified_id(Agent::Agsh, &p));
        self.model = get("model_override").non_empty();
        let stat = |k: &str| get(k).int().unwrap_or(0).max(0) as u64;
        if row.keys().any(|k| k.starts_with("stat_")) {
            let u = TokenUsage {
                input_tokens: stat("stat_input_tokens"),
                output_tokens: stat("stat_output_tokens"),
                thinking_tokens: 0,
                cached_tokens: stat("stat_cache_read_input_tokens"),
                cache_write_tokens: stat("stat_cache_creation_input_tokens"),
            };
            if !u.is_zero() {
                self.s.reported_usage = Some(u);
            }
        }
    }

    fn row_warning(&mut self, native: &Option<String>, what: &str) {
        self.row_warnings += 1;
        if self.row_warnings <= MAX_ROW_WARNINGS {
            let at = native.as_deref().unwrap_or("?");
            self.s.warnings.push(format!("message row {at}: {what}"));
        }
    }

    fn msg(
        &self,
        role: Role,
        content: String,
        ts: Option<DateTime<Utc>>,
        native: &Option<String>,
    ) -> Message {
        Message {
            role,
            content,
            timestamp: ts,
            native_id: native.clone(),
            ..Message::default()
        }
    }

    fn row(
        &mut self,
        native: Option<String>,
        role: &str,
        content: &str,
        ts: Option<DateTime<Utc>>,
    ) {
        match role {
            "user" => self.user_text(content, ts, &native),
            "assistant" => match parse_content(content) {
                Content::Blocks(blocks) => self.assistant(&blocks, ts, &native),
                Content::Text(text, bad) => {
                    if let Some(e) = bad {
                        self.row_warning(&native, &format!("invalid JSON, shown as text: {e}"));
                    }
                    let mut m = self.msg(Role::Assistant, text, ts, &native);
                    m.model = self.model.clone();
                    self.s.messages.push(m);
                }
            },
            "tool_results" => match parse_content(content) {
                Content::Blocks(blocks) => self.user_blocks(&blocks, ts, &native),
                Content::Text(text, bad) => {
                    let why = match bad {
                        Some(e) => format!("invalid JSON in tool results, shown as text: {e}"),
                        None => "tool results are plain text".to_string(),
                    };
                    self.row_warning(&native, &why);
                    let m = self.msg(Role::Tool, text, ts, &native);
                    self.s.messages.push(m);
                }
            },
            _ => self.event(role, content, ts, &native),
        }
    }

    fn user_text(&mut self, text: &str, ts: Option<DateTime<Utc>>, native: &Option<String>) {
        if self.s.title.is_none() {
            let t = collapse_ws(strip_context(text));
            if !t.is_empty() {
                self.s.title = Some(t.chars().take(TITLE_CHARS).collect());
            }
        }
        // The `<context>` blocks agsh puts before the prompt are injected, not typed: one
        // context message just before what the user wrote.
        let typed = strip_context(text);
        let injected = text.trim_start()[..text.trim_start().len() - typed.len()].trim_end();
        if !injected.is_empty() {
            let mut c = self.msg(Role::System, injected.to_string(), ts, native);
            c.kind = MessageKind::Context;
            c.label = Some("context".to_string());
            self.s.messages.push(c);
        }
        if !injected.is_empty() && typed.trim().is_empty() {
            return;
        }
        let prompt = if injected.is_empty() { text } else { typed };
        let m = self.msg(Role::User, prompt.to_string(), ts, native);
        self.s.messages.push(m);
    }

    fn parts(&mut self, blocks: &[Value]) -> Parts {
        let mut p = Parts::default();
        for b in blocks {
            if let Value::String(s) = b {
                p.text.push(s.clone());
                continue;
            }
            let Some((kind, f)) = tagged(b) else {
                *self.unknown_blocks.entry("(untagged)".into()).or_default() += 1;
                // The block as stored follows its placeholder: nothing of it is lost.
                p.text.push(format!(
                    "{}\n{b}",
                    model::placeholder("unsupported content block", None, None)
                ));
                continue;
            };
            match kind.as_str() {
                "text" => p
                    .text
                    .push(str_field(f, &["text"]).unwrap_or_default().to_string()),
                "tooluse" => {
                    let call = ToolCall {
                        tool_call_id: str_field(f, &["id", "tool_use_id", "toolUseId"])
                            .unwrap_or_default()
                            .to_string(),
                        tool_name: str_field(f, &["name"]).unwrap_or_default().to_string(),
                        input: f
                            .get("input")
                            .or_else(|| f.get("arguments"))
                            .cloned()
                            .unwrap_or(Value::Null),
                        ..ToolCall::default()
                    };
                    self.tool_names
                        .insert(call.tool_call_id.clone(), call.tool_name.clone());
                    p.calls.push(call);
                }
                "toolresult" => p.results.push((
                    str_field(f, &["tool_use_id", "toolUseId", "id"])
                        .unwrap_or_default()
                        .to_string(),
                    result_text(f.get("content").or_else(|| f.get("output"))),
                    ["is_error", "isError"]
                        .iter()
                        .any(|k| f.get(*k).and_then(Value::as_bool) == Some(true)),
                )),
                "thinking" => {
                    let t = str_field(f, &["thinking", "text"]).unwrap_or_default();
                    if t.is_empty() && (f.get("signature").is_some() || f.get("data").is_some()) {
                        p.thinking.push(model::SEALED_THINKING.to_string());
                    } else {
                        p.thinking.push(t.to_string());
                    }
                }
                "redactedthinking" => p.thinking.push(model::SEALED_THINKING.to_string()),
                "image" | "document" | "file" | "audio" => {
                    p.text.push(binary_placeholder(&kind, f))
                }
                _ => {
                    let name = b
                        .get("type")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or(kind);
                    p.text.push(format!(
                        "{}\n{b}",
                        model::placeholder(
                            &format!("unsupported content block: {name}"),
                            None,
                            None,
                        )
                    ));
                    *self.unknown_blocks.entry(name).or_default() += 1;
                }
            }
        }
        p
    }

    fn assistant(&mut self, blocks: &[Value], ts: Option<DateTime<Utc>>, native: &Option<String>) {
        let p = self.parts(blocks);
        let mut m = self.msg(Role::Assistant, p.text.join("\n\n"), ts, native);
        m.thinking = (!p.thinking.is_empty()).then(|| p.thinking.join("\n\n"));
        m.tool_calls = p.calls;
        m.model = self.model.clone();
        self.s.messages.push(m);
        self.push_results(p.results, ts, native);
    }

    /// A user-role block list (`tool_results` rows, repair messages): each result its own
    /// tool message, then any text the agent put beside them as a user message.
    fn user_blocks(
        &mut self,
        blocks: &[Value],
        ts: Option<DateTime<Utc>>,
        native: &Option<String>,
    ) {
        let p = self.parts(blocks);
        self.push_results(p.results, ts, native);
        if !p.text.is_empty() {
            let m = self.msg(Role::User, p.text.join("\n\n"), ts, native);
            self.s.messages.push(m);
        }
    }

    fn push_results(
        &mut self,
        results: Vec<(String, String, bool)>,
        ts: Option<DateTime<Utc>>,
        native: &Option<String>,
    ) {
        for (id, output, is_error) in results {
            let tool_name = match self.tool_names.get(&id) {
                Some(n) => n.clone(),
                None => {
                    self.row_warning(native, &format!("tool result {id} has no matching call"));
                    "unknown".to_string()
                }
            };
            // The text lives once, in the result (`Message::text` returns it).
            let mut m = self.msg(Role::Tool, String::new(), ts, native);
            m.tool_result = Some(ToolResult {
                tool_call_id: id,
                tool_name,
                output,
                is_error,
            });
            self.s.messages.push(m);
        }
    }

    /// An agsh `Message` value (inside compaction and repair events).
    fn message_value(&mut self, v: &Value, ts: Option<DateTime<Utc>>, native: &Option<String>) {
        let role = v
            .get("role")
            .and_then(Value::as_str)
            .map(norm)
            .unwrap_or_default();
        let blocks: Vec<Value> = match v.get("content") {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) => vec![Value::String(s.clone())],
            Some(other) => vec![other.clone()],
            None => Vec::new(),
        };
        match role.as_str() {
            "assistant" => self.assistant(&blocks, ts, native),
            "user" => self.user_blocks(&blocks, ts, native),
            _ => {
                let p = self.parts(&blocks);
                let m = self.msg(Role::System, p.text.join("\n\n"), ts, native);
                self.s.messages.push(m);
            }
        }
    }

    fn event(
        &mut self,
        role: &str,
        content: &str,
        ts: Option<DateTime<Utc>>,
        native: &Option<String>,
    ) {
        const KNOWN: [&str; 5] = [
            "compactboundary",
            "compaction",
            "repair",
            "rewind",
            "redact",
        ];
        let parsed = serde_json::from_str::<Value>(content).ok();
        let from_content = parsed
            .as_ref()
            .and_then(tagged)
            .filter(|(k, _)| KNOWN.contains(&k.as_str()));
        let (kind, inner) = match (from_content, &parsed) {
            (Some((k, inner)), _) => (k, inner),
            (None, Some(v)) if KNOWN.contains(&norm(role).as_str()) => (norm(role), v),
            (None, None) if KNOWN.contains(&norm(role).as_str()) => {
                self.row_warning(
                    native,
                    &format!("`{role}` event is not valid JSON; shown as stored"),
                );
                let mut m = self.msg(Role::System, content.to_string(), ts, native);
                m.kind = MessageKind::Context;
                m.label = Some(format!("unparsed {role} event"));
                self.s.messages.push(m);
                return;
            }
            _ => {
                // Counted once per role, and the row stays visible as stored.
                *self.unknown_roles.entry(role.to_string()).or_default() += 1;
                let mut m = self.msg(Role::System, content.to_string(), ts, native);
                m.kind = MessageKind::Context;
                m.label = Some(format!("{role} message"));
                self.s.messages.push(m);
                return;
            }
        };
        let count = |v: Option<&Value>| match v {
            Some(Value::Array(a)) => Some(a.len() as u64),
            Some(v) => v.as_u64(),
            None => None,
        };
        match kind.as_str() {
            "compactboundary" | "compaction" => {
                let summary = inner.get("summary").unwrap_or(&Value::Null);
                let (role, text) = match summary {
                    Value::String(s) => (Role::System, s.clone()),
                    v => {
                        let role = match v.get("role").and_then(Value::as_str).map(norm).as_deref()
                        {
                            Some("user") => Role::User,
                            Some("assistant") => Role::Assistant,
                            _ => Role::System,
                        };
                        let blocks: Vec<Value> = match v.get("content") {
                            Some(Value::Array(a)) => a.clone(),
                            Some(Value::String(s)) => vec![Value::String(s.clone())],
                            _ => Vec::new(),
                        };
                        (role, self.parts(&blocks).text.join("\n\n"))
                    }
                };
                let text = if text.trim().is_empty() {
                    let n = count(inner.get("replaced_count")).unwrap_or(0);
                    format!("[conversation compacted: {n} messages replaced]")
                } else {
                    text
                };
                let mut m = self.msg(role, text, ts, native);
                m.kind = MessageKind::CompactionSummary;
                self.s.messages.push(m);
            }
            "repair" | "rewind" => {
                let n = count(inner.get("replaced_count")).unwrap_or(0);
                let mut m = self.msg(Role::System, format!("[rewound {n} messages]"), ts, native);
                m.kind = MessageKind::Event;
                self.s.messages.push(m);
                if let Some(Value::Array(msgs)) = inner.get("messages") {
                    for v in msgs {
                        self.message_value(v, ts, native);
                    }
                }
            }
            _ => {
                let n = count(inner.get("images")).unwrap_or(0);
                let mut m = self.msg(Role::System, format!("[redacted {n} images]"), ts, native);
                m.kind = MessageKind::Event;
                self.s.messages.push(m);
            }
        }
    }

    fn finish(mut self) -> Session {
        if self.row_warnings > MAX_ROW_WARNINGS {
            self.s.warnings.push(format!(
                "{} more message rows with problems",
                self.row_warnings - MAX_ROW_WARNINGS
            ));
        }
        for (role, n) in &self.unknown_roles {
            self.s.warnings.push(format!(
                "{n} message rows with unknown role `{role}` shown as stored"
            ));
        }
        for (kind, n) in &self.unknown_blocks {
            self.s.warnings.push(format!(
                "{n} content blocks of unsupported type `{kind}` shown as placeholders with their JSON"
            ));
        }
        let first = self.s.messages.iter().find_map(|m| m.timestamp);
        let last = self.s.messages.iter().rev().find_map(|m| m.timestamp);
        if self.s.created_at.is_none() {
            self.s.created_at = first;
        }
        if self.s.updated_at.is_none() {
            self.s.updated_at = last;
        }
        self.s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::sqlite::{companion, parse_time_text, sqlite_uri};
    use rusqlite::params;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    const AGSH_DDL: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/schema/agsh-sessions.sql"
    ));
    const MEKA_DDL: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/schema/meka-0.42.sql"
    ));

    const S1: &str = "0b7c2d0e-5f1a-4c61-9a53-6f1d2e3c4b5a";
    const S_EMPTY: &str = "9e8d7c6b-0000-4000-8000-000000000001";
    const PARENT: &str = "meka-parent-7f3e";
    const CHILD: &str = "meka-child-a1b2";
    const SECRET: &str = "SECRET-TOKEN-must-never-show";

    fn insert(conn: &Connection, sid: &str, role: &str, content: &str, at: &str) {
        conn.execute(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![sid, role, content, at],
        )
        .unwrap();
    }

    fn session(conn: &Connection, sid: &str, created: &str, updated: &str) {
        conn.execute(
            "INSERT INTO sessions (id, created_at, updated_at) VALUES (?1, ?2, ?3)",
            params![sid, created, updated],
        )
        .unwrap();
    }

    /// An agsh `sessions.db` from the DDL in fixtures/schema, rows encoded as agsh's encoder writes them.
    fn write_agsh_db(path: &Path) {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(AGSH_DDL).unwrap();
        session(&conn, S1, "2025-03-01T10:00:00Z", "2025-03-01T10:09:00Z");
        insert(
            &conn,
            S1,
            "user",
            "<context>\ncwd: /home/dev/proj\ndate: 2025-03-01\n</context>\n\nPlease fix   the failing build",
            "2025-03-01T10:00:00Z",
        );
        let assistant = serde_json::json!([
            {"type": "thinking", "thinking": "The build log will say what broke."},
            {"type": "text", "text": "Let me run the build."},
            {"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {"command": "cargo build"}}
        ]);
        insert(
            &conn,
            S1,
            "assistant",
            &assistant.to_string(),
            "2025-03-01T10:00:05Z",
        );
        let results = serde_json::json!([
            {"type": "tool_result", "tool_use_id": "toolu_01",
             "content": [{"type": "text", "text": "error[E0308]: mismatched types"}], "is_error": true}
        ]);
        insert(
            &conn,
            S1,
            "tool_results",
            &results.to_string(),
            "2025-03-01T10:00:09Z",
        );
        insert(
            &conn,
            S1,
            "assistant",
            "Fixed the type error in main.rs.",
            "2025-03-01T10:01:00Z",
        );
        let boundary = serde_json::json!({"CompactBoundary": {
            "summary": {"role": "user", "content": [{"type": "text",
                "text": "[Conversation summary from session compaction]\nThe user asked to fix the build."}]},
            "replaced_count": 4, "loaded_tools_snapshot": ["bash"]}});
        insert(
            &conn,
            S1,
            "compact_boundary",
            &boundary.to_string(),
            "2025-03-01T10:02:00Z",
        );
        insert(&conn, S1, "user", "Now add a test", "2025-03-01T10:03:00Z");
        let odd = serde_json::json!([
            {"type": "ToolUse", "id": "toolu_02", "name": "write_file", "input": {"path": "t.rs"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo".repeat(100)}},
            {"type": "hologram", "payload": 1}
        ]);
        insert(
            &conn,
            S1,
            "assistant",
            &odd.to_string(),
            "2025-03-01T10:04:00Z",
        );
        let res2 = serde_json::json!([
            {"type": "ToolResult", "tool_use_id": "toolu_02", "content": "wrote t.rs", "is_error": false}
        ]);
        insert(
            &conn,
            S1,
            "tool_results",
            &res2.to_string(),
            "2025-03-01T10:04:01Z",
        );
        insert(
            &conn,
            S1,
            "mystery_role",
            "{\"x\":1}",
            "2025-03-01T10:05:00Z",
        );
        insert(
            &conn,
            S1,
            "assistant",
            "[{\"type\":\"text\",\"text\":\"unterminated",
            "2025-03-01T10:06:00Z",
        );
        conn.execute(
            "INSERT INTO tool_outputs (session_id, name, content, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![S1, "plan/notes", "1. reproduce\n2. fix\n3. test", "2025-03-01T10:01:30Z"],
        )
        .unwrap();
        session(
            &conn,
            S_EMPTY,
            "2025-03-02T08:00:00Z",
            "2025-03-02T08:00:00Z",
        );
        conn.execute(
            "INSERT INTO oauth_tokens (provider, access_token, refresh_token, updated_at) VALUES ('anthropic', ?1, ?1, 'x')",
            [SECRET],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO mcp_oauth_credentials VALUES ('github', ?1, 'x')",
            [SECRET],
        )
        .unwrap();
        conn.execute("INSERT INTO mcp_auth_cache VALUES ('github', 1, 0)", [])
            .unwrap();
    }

    /// A meka database (WAL) with a parent session and a sub-agent child. Returns the open
    /// writer connection so the WAL stays as a live agent leaves it.
    fn write_meka_db(path: &Path) -> Connection {
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch(MEKA_DDL).unwrap();
        conn.execute_batch(
            "ALTER TABLE sessions ADD COLUMN provider TEXT NOT NULL DEFAULT '';
             ALTER TABLE sessions ADD COLUMN model_override TEXT;
             ALTER TABLE sessions ADD COLUMN base_url_override TEXT;
             PRAGMA user_version = 5;",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO sessions (id, created_at, updated_at, cwd, stat_turns, stat_input_tokens,
               stat_output_tokens, stat_cache_creation_input_tokens, stat_cache_read_input_tokens,
               provider, model_override, token_id)
             VALUES (?1, '2025-05-01T09:00:00Z', '2025-05-01T09:30:00Z', '/srv/app', 3, 1200, 340, 50, 900,
               'anthropic', 'claude-sonnet-4', ?2)",
            params![PARENT, SECRET],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO sessions (id, created_at, updated_at, parent_session_id, subagent_spec_json, provider)
             VALUES (?1, '2025-05-01T09:10:00Z', '2025-05-01T09:12:00Z', ?2, '{\"description\":\"search the docs\"}', 'anthropic')",
            params![CHILD, PARENT],
        )
        .unwrap();
        insert(
            &conn,
            PARENT,
            "user",
            "Deploy the app to staging",
            "2025-05-01T09:00:00Z",
        );
        insert(
            &conn,
            PARENT,
            "assistant",
            r#"[{"type":"text","text":"Spawning a helper."},{"type":"tool_use","id":"t1","name":"spawn_agent","input":{"task":"search the docs"}}]"#,
            "2025-05-01T09:00:10Z",
        );
        insert(
            &conn,
            PARENT,
            "repair",
            r#"{"Repair":{"replaced_count":2,"messages":[{"role":"assistant","content":[{"type":"text","text":"Retrying deployment plan."}]}]}}"#,
            "2025-05-01T09:20:00Z",
        );
        insert(
            &conn,
            PARENT,
            "redact",
            r#"{"Redact":{"images":3}}"#,
            "2025-05-01T09:21:00Z",
        );
        insert(
            &conn,
            CHILD,
            "user",
            "search the docs",
            "2025-05-01T09:10:00Z",
        );
        insert(
            &conn,
            CHILD,
            "assistant",
            r#"[{"type":"text","text":"Found deploy.md"}]"#,
            "2025-05-01T09:11:00Z",
        );
        conn.execute(
            "INSERT INTO provider_credentials VALUES ('default', ?1, 'x')",
            [SECRET],
        )
        .unwrap();
        conn
    }

    fn store_for(paths: &[&Path]) -> AgshStore {
        AgshStore::new(
            paths
                .iter()
                .map(|p| Root::new(Agent::Agsh, p.to_path_buf(), "test"))
                .collect(),
        )
    }

    fn listed(store: &AgshStore, id: &str) -> Listed {
        store
            .list()
            .into_iter()
            .find(|l| l.id == id)
            .unwrap_or_else(|| panic!("{id} not listed"))
    }

    #[test]
    fn candidates_follow_overrides_and_defaults() {
        let mut env = Env {
            home: PathBuf::from("/home/u"),
            ..Env::default()
        };
        let c = candidates(&env);
        assert_eq!(
            c[0].path,
            PathBuf::from("/home/u/.local/share/agsh/sessions.db")
        );
        assert_eq!(c[0].how, "default");
        assert!(c
            .iter()
            .any(|r| r.path == Path::new("/home/u/Library/Application Support/meka/meka.db")));
        env.vars.insert("AGSH_DATA_DIR".into(), "/data/agsh".into());
        env.vars.insert("XDG_DATA_HOME".into(), "/xdg".into());
        env.vars.insert("MEKA_DATA_DIR".into(), "~/m".into());
        let c = candidates(&env);
        let find = |p: &str| {
            c.iter()
                .find(|r| r.path == Path::new(p))
                .map(|r| r.how.clone())
        };
        assert_eq!(
            find("/data/agsh/sessions.db").as_deref(),
            Some("AGSH_DATA_DIR")
        );
        assert_eq!(
            find("/xdg/agsh/sessions.db").as_deref(),
            Some("XDG_DATA_HOME")
        );
        assert_eq!(find("/home/u/m/meka.db").as_deref(), Some("MEKA_DATA_DIR"));
        assert_eq!(find("/xdg/meka/meka.db").as_deref(), Some("XDG_DATA_HOME"));
        assert!(c.iter().all(|r| r.agent == Agent::Agsh));
    }

    #[test]
    fn open_all_finds_database_files_under_home() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".local/share/agsh");
        std::fs::create_dir_all(&dir).unwrap();
        write_agsh_db(&dir.join(AGSH_DB));
        let env = Env {
            home: tmp.path().to_path_buf(),
            ..Env::default()
        };
        let stores = super::super::open_all(&env, &[]);
        let s = stores.iter().find(|s| s.agent() == Agent::Agsh).unwrap();
        assert_eq!(s.roots().len(), 1);
        let mut ids: Vec<String> = s.list().into_iter().map(|l| l.id).collect();
        ids.sort();
        assert_eq!(ids, vec![S1.to_string(), S_EMPTY.to_string()]);
    }

    /// The bundled sample (written by scripts/make-samples; expected values from its rows).
    #[test]
    fn bundled_sample_database_loads() {
        let db = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/home/.local/share/agsh/sessions.db");
        let store = store_for(&[&db]);
        let l = listed(&store, "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d");
        let s = store.load(&l);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(
            s.title.as_deref(),
            Some("Why does backup.sh skip files with spaces in their names?")
        );
        let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].tool_name, "read_file");
        assert_eq!(calls[0].input["path"], "backup.sh");
        let r = s
            .messages
            .iter()
            .find_map(|m| m.tool_result.as_ref())
            .unwrap();
        assert!(r.output.contains("for f in $(ls $SRC); do"));
        assert!(s
            .messages
            .last()
            .unwrap()
            .text()
            .contains("quote the variable"));
        assert_eq!(s.extra_files.len(), 1);
        assert!(s.extra_files[0].1.contains("3. suggest a quoted glob"));
    }

    #[test]
    fn loads_an_agsh_session() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join(AGSH_DB);
        write_agsh_db(&db);
        let store = store_for(&[&db]);
        let l = listed(&store, S1);
        assert_eq!(l.path, db);
        assert_eq!(l.sources, vec![db.clone(), companion(&db, "-wal")]);
        let s = store.load(&l);
        assert_eq!(s.source.format, "agsh-sqlite");
        assert_eq!(s.title.as_deref(), Some("Please fix the failing build"));
        assert_eq!(s.created_at, parse_time_text("2025-03-01T10:00:00Z"));
        assert_eq!(s.updated_at, parse_time_text("2025-03-01T10:09:00Z"));
        // The injected `<context>` block is its own context message, just before the prompt.
        let ctx = &s.messages[0];
        assert_eq!(
            (ctx.role, ctx.kind, ctx.label.as_deref()),
            (Role::System, MessageKind::Context, Some("context"))
        );
        assert_eq!(
            ctx.content,
            "<context>\ncwd: /home/dev/proj\ndate: 2025-03-01\n</context>"
        );
        let m = &s.messages[1..];
        let roles: Vec<(Role, MessageKind)> = m.iter().map(|m| (m.role, m.kind)).collect();
        use MessageKind::*;
        use Role::*;
        assert_eq!(
            roles,
            vec![
                (User, Normal),
                (Assistant, Normal),
                (Tool, Normal),
                (Assistant, Normal),
                (User, CompactionSummary),
                (User, Normal),
                (Assistant, Normal),
                (Tool, Normal),
                // The `mystery_role` row, shown as stored.
                (System, Context),
                (Assistant, Normal),
            ]
        );
        assert_eq!(m[8].label.as_deref(), Some("mystery_role message"));
        assert_eq!(m[0].content, "Please fix   the failing build");
        assert_eq!(s.turn_count(), 2);
        assert_eq!(m[1].content, "Let me run the build.");
        assert_eq!(
            m[1].thinking.as_deref(),
            Some("The build log will say what broke.")
        );
        assert_eq!(m[1].tool_calls.len(), 1);
        assert_eq!(m[1].tool_calls[0].tool_name, "bash");
        assert_eq!(m[1].tool_calls[0].input["command"], "cargo build");
        assert!(m[1].tool_calls[0].output.is_none());
        let r = m[2].tool_result.as_ref().unwrap();
        assert_eq!(
            (
                r.tool_call_id.as_str(),
                r.tool_name.as_str(),
                r.output.as_str(),
                r.is_error
            ),
            ("toolu_01", "bash", "error[E0308]: mismatched types", true)
        );
        assert_eq!(m[3].content, "Fixed the type error in main.rs.");
        assert!(m[4]
            .content
            .starts_with("[Conversation summary from session compaction]"));
        assert_eq!(m[6].tool_calls[0].tool_name, "write_file");
        assert!(
            m[6].content.contains("[image: image/png, "),
            "{}",
            m[6].content
        );
        assert!(!m[6].content.contains("iVBOR"));
        assert!(m[6]
            .content
            .contains("[unsupported content block: hologram]"));
        assert_eq!(m[7].tool_result.as_ref().unwrap().tool_name, "write_file");
        assert_eq!(m[7].text(), "wrote t.rs");
        assert!(m[9].content.starts_with("[{\"type\":\"text\""));
        assert_eq!(m[1].native_id.as_deref(), Some("2"));
        let w = s.warnings.join("\n");
        assert!(w.contains("invalid JSON"), "{w}");
        assert!(w.contains("unknown role `mystery_role`"), "{w}");
        assert!(w.contains("`hologram`"), "{w}");
        assert_eq!(s.warnings.len(), 3, "{w}");
        assert_eq!(s.extra_files.len(), 1);
        let (name, body) = &s.extra_files[0];
        assert_eq!(name, "tools/scratchpad-plan%2Fnotes.md");
        assert!(body.starts_with(
            "# Scratchpad: plan/notes\n\nSaved: 2025-03-01T10:01:30+00:00\n\n1. reproduce"
        ));
        assert!(!format!("{s:?}").contains(SECRET));

        let empty = store.load(&listed(&store, S_EMPTY));
        assert!(empty.messages.is_empty());
        assert!(empty.warnings.is_empty(), "{:?}", empty.warnings);
        assert_eq!(empty.title, None);
    }

    #[test]
    fn loads_meka_sessions_with_children_and_counters() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join(MEKA_DB);
        let _writer = write_meka_db(&db);
        let store = store_for(&[tmp.path()]);
        let p = store.load(&listed(&store, PARENT));
        assert_eq!(p.source.format, "meka-sqlite");
        assert_eq!(p.source.format_version.as_deref(), Some("5"));
        assert_eq!(p.cwd.as_deref(), Some("/srv/app"));
        assert_eq!(p.parent, None);
        assert_eq!(
            p.reported_usage,
            Some(TokenUsage {
                input_tokens: 1200,
                output_tokens: 340,
                thinking_tokens: 0,
                cached_tokens: 900,
                cache_write_tokens: 50,
            })
        );
        assert_eq!(p.primary_model().as_deref(), Some("claude-sonnet-4"));
        assert_eq!(p.subagents.len(), 1);
        assert_eq!(p.subagents[0].name, CHILD);
        assert_eq!(
            p.subagents[0].unified_id.as_deref(),
            Some("agsh:meka-child-a1b2")
        );
        assert_eq!(
            p.subagents[0].description.as_deref(),
            Some("search the docs")
        );
        let contents: Vec<&str> = p.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            contents,
            vec![
                "Deploy the app to staging",
                "Spawning a helper.",
                "[rewound 2 messages]",
                "Retrying deployment plan.",
                "[redacted 3 images]",
            ]
        );
        assert_eq!(p.messages[2].kind, MessageKind::Event);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert!(!format!("{p:?}").contains(SECRET));

        let c = store.load(&listed(&store, CHILD));
        assert_eq!(c.parent.as_deref(), Some("agsh:meka-parent-7f3e"));
        assert_eq!(c.reported_usage, None);
        // Only a provider is known: "anthropic" used to be shown as the model.
        assert_eq!(c.messages[1].model, None);
        assert_eq!(c.title.as_deref(), Some("search the docs"));
    }

    /// Every file of `dir` but the WAL index (`-shm`, shared memory every reader writes its
    /// read marks into by design), as name → (length, hash), to compare byte for byte.
    fn snapshot(dir: &Path) -> BTreeMap<String, (usize, u64)> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().ends_with("-shm"))
            .map(|e| {
                let bytes = std::fs::read(e.path()).unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    (bytes.len(), names::fnv1a(&bytes)),
                )
            })
            .collect()
    }

    #[test]
    fn reading_never_changes_the_database() {
        let tmp = tempfile::tempdir().unwrap();
        let agsh = tmp.path().join("agsh");
        let meka = tmp.path().join("meka");
        std::fs::create_dir_all(&agsh).unwrap();
        std::fs::create_dir_all(&meka).unwrap();
        write_agsh_db(&agsh.join(AGSH_DB));
        let writer = write_meka_db(&meka.join(MEKA_DB));
        assert!(companion(&meka.join(MEKA_DB), "-wal").exists());
        let before_agsh = snapshot(&agsh);
        let before_meka = snapshot(&meka);
        let store = store_for(&[&agsh.join(AGSH_DB), &meka.join(MEKA_DB)]);
        for _ in 0..3 {
            for l in store.list() {
                let s = store.load(&l);
                assert!(!s.id.is_empty());
            }
            assert!(store.problems().is_empty());
        }
        drop(store);
        // A rollback-journal database: no companion files appear, bytes identical.
        assert_eq!(snapshot(&agsh), before_agsh);
        // WAL: the database and its WAL are exactly as the writer left them.
        assert_eq!(snapshot(&meka), before_meka);
        drop(writer);
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_problem_not_a_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join(AGSH_DB);
        std::fs::write(&db, b"this is not sqlite at all, just text\n".repeat(200)).unwrap();
        let store = store_for(&[&db, &tmp.path().join("missing.db")]);
        assert!(store.list().is_empty());
        let problems = store.problems();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("not a SQLite database")),
            "{problems:?}"
        );
        let s = store.load(&Listed {
            id: "x".into(),
            path: db.clone(),
            sources: vec![db.clone()],
            key: Some("x".into()),
            root: 0,
        });
        assert!(s.messages.is_empty());
        assert!(
            s.warnings[0].contains("not a SQLite database"),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn a_database_without_the_tables_loads_with_warnings() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join(AGSH_DB);
        Connection::open(&db)
            .unwrap()
            .execute_batch(
                "CREATE TABLE sessions (id TEXT PRIMARY KEY);
                            INSERT INTO sessions VALUES ('only-id');",
            )
            .unwrap();
        let store = store_for(&[&db]);
        let s = store.load(&listed(&store, "only-id"));
        assert_eq!(
            s.warnings,
            vec!["the database has no readable messages table".to_string()]
        );
    }

    #[test]
    fn helpers() {
        assert_eq!(
            strip_context("<context>a</context>\n<context>b</context> hi"),
            "hi"
        );
        assert_eq!(
            strip_context("<context>never closed"),
            "<context>never closed"
        );
        assert_eq!(norm("Tool_Use"), "tooluse");
        assert!(matches!(parse_content("[1] plain"), Content::Text(_, None)));
        assert!(matches!(
            parse_content("[{\"type\":"),
            Content::Text(_, Some(_))
        ));
        assert!(matches!(parse_content("[]"), Content::Blocks(b) if b.is_empty()));
        assert_eq!(
            sqlite_uri(Path::new("/a b/c?d#%.db")),
            "file:/a%20b/c%3Fd%23%25.db?mode=ro"
        );
        assert_eq!(
            result_text(Some(
                &serde_json::json!([{"Text": {"text": "a"}}, {"type": "text", "text": "b"}])
            )),
            "a\nb"
        );
        let (name, _) = scratchpad_file(&"n".repeat(400), "x", &Cell::Null);
        assert!(name.len() < 255 && name.starts_with("tools/scratchpad-"));
    }

    /// Appends the way agsh does: a message row and the session's `updated_at`, one commit.
    fn append(conn: &Connection, sid: &str, i: usize) -> rusqlite::Result<()> {
        let text = format!("message {i:04} {}", "lorem ipsum ".repeat(300));
        let body = serde_json::json!([{"type": "text", "text": text}]).to_string();
        conn.execute_batch("BEGIN IMMEDIATE")?;
        conn.execute(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, 'assistant', ?2, ?3)",
            params![sid, body, "2025-05-01T10:00:00Z"],
        )?;
        conn.execute(
            "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
            params![sid, format!("2025-05-01T10:{:02}:00Z", i % 60)],
        )?;
        conn.execute_batch("COMMIT")
    }

    #[test]
    fn concurrent_writer_never_blocks_and_readers_see_whole_rows() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join(MEKA_DB);
        drop(write_meka_db(&db));
        let done = Arc::new(AtomicBool::new(false));
        let writer = {
            let db = db.clone();
            let done = Arc::clone(&done);
            std::thread::spawn(move || -> Result<usize, String> {
                let conn = Connection::open(&db).map_err(|e| e.to_string())?;
                // Strict: any lock the readers took would surface here as SQLITE_BUSY.
                conn.busy_timeout(Duration::ZERO)
                    .map_err(|e| e.to_string())?;
                conn.pragma_update(None, "journal_mode", "WAL")
                    .map_err(|e| e.to_string())?;
                let start = std::time::Instant::now();
                let mut n = 0;
                while start.elapsed() < Duration::from_secs(2) {
                    append(&conn, CHILD, n).map_err(|e| format!("write {n}: {e}"))?;
                    n += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                done.store(true, Ordering::SeqCst);
                Ok(n)
            })
        };
        let store = store_for(&[&db]);
        let l = listed(&store, CHILD);
        let mut last = 0usize;
        let mut loads = 0;
        loop {
            let finished = done.load(Ordering::SeqCst);
            let s = store.load(&l);
            assert!(s.warnings.is_empty(), "{:?}", s.warnings);
            let appended: Vec<&Message> = s.messages.iter().skip(2).collect();
            assert!(
                appended.len() >= last,
                "count went back: {} < {last}",
                appended.len()
            );
            for (i, m) in appended.iter().enumerate() {
                assert_eq!(m.role, Role::Assistant);
                assert!(
                    m.content.starts_with(&format!("message {i:04} lorem")),
                    "{}",
                    &m.content[..40.min(m.content.len())]
                );
                assert_eq!(
                    m.content.len(),
                    "message 0000 ".len() + "lorem ipsum ".len() * 300
                );
            }
            last = appended.len();
            loads += 1;
            if finished {
                break;
            }
        }
        let written = writer.join().unwrap().unwrap();
        assert!(written > 20, "writer appended only {written}");
        assert_eq!(last, written, "the final load shows every committed row");
        assert!(loads > 5);
    }

    /// True when this process can create files in a 0555 directory (root ignores modes).
    fn modes_are_ignored(dir: &Path) -> bool {
        let probe = dir.join("probe");
        let ok = std::fs::write(&probe, b"x").is_ok();
        let _ = std::fs::remove_file(&probe);
        ok
    }

    #[test]
    fn read_only_directory_falls_back_to_a_private_copy() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let live = tmp.path().join("live");
        let ro = tmp.path().join("ro");
        std::fs::create_dir_all(&live).unwrap();
        std::fs::create_dir_all(&ro).unwrap();
        let writer = write_meka_db(&live.join(MEKA_DB));
        // The agent stopped without checkpointing: a database plus a WAL, and no index.
        std::fs::copy(live.join(MEKA_DB), ro.join(MEKA_DB)).unwrap();
        std::fs::copy(
            companion(&live.join(MEKA_DB), "-wal"),
            companion(&ro.join(MEKA_DB), "-wal"),
        )
        .unwrap();
        drop(writer);
        let before = snapshot(&ro);
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let store = store_for(&[&ro.join(MEKA_DB)]);
        let access = if modes_are_ignored(&ro) {
            // Running as root: the directory stays writable, so force the fallback path.
            Access::PrivateCopy
        } else {
            Access::InPlace
        };
        let (ids, note) = store.read(&ro.join(MEKA_DB), access, list_ids).unwrap();
        assert_eq!(ids.len(), 2);
        assert!(note.is_some());
        let l = Listed {
            id: PARENT.into(),
            path: ro.join(MEKA_DB),
            sources: vec![],
            key: Some(PARENT.into()),
            root: 0,
        };
        let s = store.load_with(&l, access);
        // Rows that only exist in the WAL are visible.
        assert_eq!(s.messages.len(), 5);
        assert!(s.warnings[0].contains("private copy"), "{:?}", s.warnings);
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(snapshot(&ro), before);
        // The copy is reused while the source is unchanged, and removed with the store.
        let dir = store.private_copy(&ro.join(MEKA_DB)).unwrap().dir.clone();
        assert_eq!(store.private_copy(&ro.join(MEKA_DB)).unwrap().dir, dir);
        drop(store);
        assert!(!dir.exists());
    }
}
