//! Zed's agent threads: one row per thread in `threads.db` (SQLite), the thread itself a
//! JSON document in the row's `data`, zstd-compressed by current builds.
//!
//! Read from Zed's own source, zed-industries/zed:
//!
//! - `crates/agent/src/db.rs` @ `0642ec7e49e2d2c06f55db8c5bb2d4eca0f5223b`: the database is
//!   `paths::data_dir()/threads/threads.db`; `CREATE TABLE threads (id TEXT PRIMARY KEY,
//!   summary TEXT NOT NULL, updated_at TEXT NOT NULL, data_type TEXT NOT NULL, data BLOB NOT
//!   NULL)`, later `parent_id`, `folder_paths`, `folder_paths_order` and `created_at`;
//!   `data_type` `json` or `zstd`; `DbThread` (version `0.3.0`: `title`, `messages`,
//!   `updated_at`, `detailed_summary`, `initial_project_snapshot`, `cumulative_token_usage`,
//!   `request_token_usage` by user message id, `model {provider, model}`,
//!   `subagent_context`, …); older documents are upgraded from the first agent's format;
//! - `crates/agent/src/legacy_thread.rs` @ `4410b97021c7c3c6bb81d744c55ddd8866cffa7f`: that
//!   format, `SerializedThread` versions `0.1.0` (tool results in the next user message) and
//!   `0.2.0`, and the unversioned one before (`text` per message): messages with `role`,
//!   `segments` (`text`, `thinking`, `RedactedThinking`), `tool_uses`, `tool_results`,
//!   `context`, `is_hidden`; `cumulative_token_usage`, `request_token_usage` (one entry per
//!   message, the latest request's usage as of that message);
//! - `crates/agent/src/thread.rs` @ `4ab8c1086dc5d75501caa7256b42331441284514`: `Message` is
//!   `User {id, content}`, `Agent {content, tool_results}` or `Resume`, serialized by serde's
//!   default (externally tagged: `{"User": {…}}`); user content `Text`, `Mention {uri,
//!   content}`, `Image`; agent content `Text`, `Thinking {text, signature}`,
//!   `RedactedThinking`, `ToolUse {id, name, raw_input, input}`; `update_token_usage` keeps
//!   the latest request's usage per user message and (newer builds) adds each request into
//!   `cumulative_token_usage`; `language_model`'s `LanguageModelToolResult {tool_use_id,
//!   tool_name, is_error, content, output}` and `TokenUsage {input_tokens, output_tokens,
//!   cache_creation_input_tokens, cache_read_input_tokens}`.
//!
//! Design decisions and why:
//! - **Roots** are `threads.db` under Zed's data directory: `$FLATPAK_XDG_DATA_HOME/zed`,
//!   `$XDG_DATA_HOME/zed` or `~/.local/share/zed` (Linux), the Flatpak's
//!   `~/.var/app/dev.zed.Zed/data/zed`, and `~/Library/Application Support/Zed` (macOS). A
//!   `--store zed=` path may be the database, its `threads/` or the data directory.
//! - **Read-only, WAL-aware** through `stores::sqlite`; only the `threads` table is read.
//!   Zed keeps credentials in the system keychain and API keys in `settings.json`, neither of
//!   which is in this database or opened.
//! - **Listing reads ids only** (`id`, `parent_id`); a thread's version is a hash of its own
//!   row's `updated_at`, size and type and its children's ids, so a write to one thread
//!   renders only that thread again.
//! - **Usage once per request**: `cumulative_token_usage` is Zed's own sum of every request
//!   and, when it is not zero, is the count. Builds that kept no sum record only the latest
//!   request of each prompt (`request_token_usage` by user message id): that is shown on the
//!   prompt's last reply and counted. The legacy per-message list repeats one request's
//!   usage on every later message and is never summed.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Cell, Rows, Table};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Message, Role, Session, Source, Subagent, TokenUsage, ToolCall,
    SEALED_THINKING,
};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest thread document decompressed (a whole document is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
const DB_NAME: &str = "threads.db";

/// Every `threads.db` Zed may use, existing or not, in priority order.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out = Vec::new();
    let data = match (
        env.path_var("FLATPAK_XDG_DATA_HOME"),
        env.path_var("XDG_DATA_HOME"),
    ) {
        (Some(p), _) => (p.join("zed"), "FLATPAK_XDG_DATA_HOME"),
        (None, Some(p)) => (p.join("zed"), "XDG_DATA_HOME"),
        (None, None) => (env.home.join(".local/share/zed"), "default"),
    };
    out.push(Root::new(
        Agent::Zed,
        data.0.join("threads").join(DB_NAME),
        data.1,
    ));
    out.push(Root::new(
        Agent::Zed,
        env.home
            .join(".var/app/dev.zed.Zed/data/zed/threads")
            .join(DB_NAME),
        "flatpak",
    ));
    out.push(Root::new(
        Agent::Zed,
        env.home
            .join("Library/Application Support/Zed/threads")
            .join(DB_NAME),
        "macOS",
    ));
    out
}

/// The database of a root: the file itself, or `threads.db` in it or in its `threads/`.
fn database(root: &Path) -> Option<PathBuf> {
    if root.is_file() {
        return Some(root.to_path_buf());
    }
    [root.join(DB_NAME), root.join("threads").join(DB_NAME)]
        .into_iter()
        .find(|p| p.is_file())
}

pub struct ZedStore {
    base: Base,
    reader: sqlite::Reader,
}

impl ZedStore {
    pub fn new(roots: Vec<Root>) -> ZedStore {
        ZedStore {
            base: Base::new(Agent::Zed, roots),
            reader: sqlite::Reader::new(),
        }
    }

    fn dbs(&self) -> Vec<(usize, PathBuf)> {
        self.base
            .roots
            .iter()
            .enumerate()
            .filter_map(|(i, r)| database(&r.path).map(|db| (i, db)))
            .collect()
    }
}

impl Store for ZedStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let dbs = self.dbs();
        self.reader
            .problems(dbs.iter().map(|(_, db)| db.as_path()), list_db)
    }

    fn list(&self) -> Vec<Listed> {
        sqlite::row_sessions(&self.reader, "zed", &self.dbs(), list_db)
    }

    /// The listing reads every thread id of each database: a database with its journals
    /// (a write lands in the `-wal`, or the file itself in rollback mode) stands for all
    /// its threads. A root directory, and its `threads/` while it holds no `threads.db`
    /// itself, are stamped for a database appearing in them.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if root.path.is_dir() {
                g.dirs.push(root.path.clone());
                let threads = root.path.join("threads");
                if !root.path.join(DB_NAME).is_file() && threads.is_dir() {
                    g.dirs.push(threads);
                }
            }
        }
        for (_, db) in self.dbs() {
            g.files.extend(sqlite::with_journals(&db));
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let id = listed.key.as_deref().unwrap_or(&listed.id);
        sqlite::load_session(
            &self.reader,
            db,
            id,
            sqlite::Access::InPlace,
            |c| fetch(c, id),
            |raw| build(raw, db, id),
            || {
                let mut s = Session::new(Agent::Zed, id);
                s.source = source(db, None);
                s
            },
        )
    }

    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            |c| Table::probe(c, "threads"),
            thread_version,
        )
    }
}

fn source(db: &Path, version: Option<String>) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "zed-threads-sqlite".into(),
        format_version: version,
    }
}

/// Every thread id.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Table::probe(conn, "threads")?;
    if !t.has("id") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `threads` table: not a Zed threads database".into(),
        ));
    }
    let rows = Rows::fetch(conn, &t, &["id"], "ORDER BY rowid", [])?;
    Ok(rows.iter().filter_map(|r| r.get("id").text()).collect())
}

const META_COLUMNS: [&str; 6] = [
    "summary",
    "updated_at",
    "created_at",
    "data_type",
    "parent_id",
    "folder_paths",
];

fn thread_version(conn: &Connection, t: &Table, id: &str) -> rusqlite::Result<u64> {
    let meta = Rows::fetch(
        conn,
        t,
        &["updated_at", "data_type", "summary", "parent_id"],
        "WHERE id = ?1",
        [id],
    )?;
    let size = conn
        .query_row(
            "SELECT length(data) FROM threads WHERE id = ?1",
            [id],
            |r| r.get::<_, Option<i64>>(0),
        )
        .unwrap_or(None);
    let kids = children(conn, t, id)?;
    Ok(sqlite::hash_version((meta.rows, size, kids)))
}

fn children(conn: &Connection, t: &Table, id: &str) -> rusqlite::Result<Vec<String>> {
    if !t.has("parent_id") {
        return Ok(Vec::new());
    }
    let rows = Rows::fetch(
        conn,
        t,
        &["id"],
        "WHERE parent_id = ?1 ORDER BY rowid",
        [id],
    )?;
    Ok(rows.iter().filter_map(|r| r.get("id").text()).collect())
}

/// What one thread's rows hold, copied out of the read transaction.
struct Raw {
    meta: Vec<Cell>,
    data: Option<Vec<u8>>,
    children: Vec<String>,
}

fn fetch(conn: &Connection, id: &str) -> rusqlite::Result<Raw> {
    let t = Table::probe(conn, "threads")?;
    let meta = Rows::fetch(conn, &t, &META_COLUMNS, "WHERE id = ?1", [id])?;
    let data = conn
        .query_row("SELECT data FROM threads WHERE id = ?1", [id], |r| {
            Ok(match r.get_ref(0)? {
                ValueRef::Blob(b) | ValueRef::Text(b) => Some(b.to_vec()),
                _ => None,
            })
        })
        .unwrap_or(None);
    Ok(Raw {
        meta: meta.rows.into_iter().next().unwrap_or_default(),
        data,
        children: children(conn, &t, id)?,
    })
}

/// Why a thread's document could not be read; shown as a warning.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("thread row has no data")]
    Missing,
    #[error("data is not zstd: {0}")]
    Zstd(std::io::Error),
    #[error(
        "data is larger than {} bytes decompressed, not parsed",
        MAX_JSON_BYTES
    )]
    TooLarge,
    #[error("data_type {0} is not one sessfs knows; read as JSON")]
    UnknownType(String),
    #[error("data is not JSON: {0}")]
    Json(serde_json::Error),
}

/// The document of a row: zstd decompressed (bounded) where `data_type` says so.
pub fn decode(data_type: &str, data: &[u8]) -> Result<Value, DataError> {
    let json = if data_type == "zstd" {
        let mut out = Vec::new();
        zstd::stream::read::Decoder::new(data)
            .and_then(|d| d.take(MAX_JSON_BYTES + 1).read_to_end(&mut out))
            .map_err(DataError::Zstd)?;
        if out.len() as u64 > MAX_JSON_BYTES {
            return Err(DataError::TooLarge);
        }
        out
    } else {
        data.to_vec()
    };
    serde_json::from_slice(&json).map_err(DataError::Json)
}

fn meta_cell<'a>(meta: &'a [Cell], name: &str) -> &'a Cell {
    static NULL: Cell = Cell::Null;
    META_COLUMNS
        .iter()
        .position(|c| *c == name)
        .and_then(|i| meta.get(i))
        .unwrap_or(&NULL)
}

fn build(raw: Raw, db: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Zed, id);
    let m = &raw.meta;
    b.s.title = meta_cell(m, "summary")
        .non_empty()
        .and_then(|t| kit::title_from_text(&t));
    b.s.updated_at = meta_cell(m, "updated_at").time();
    b.s.created_at = meta_cell(m, "created_at").time();
    b.s.cwd = meta_cell(m, "folder_paths").non_empty().and_then(|p| {
        p.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    });
    b.s.parent = meta_cell(m, "parent_id")
        .non_empty()
        .map(|p| unified_id(Agent::Zed, &p));
    for child in &raw.children {
        b.s.subagents.push(Subagent {
            name: crate::names::escape(child),
            unified_id: Some(unified_id(Agent::Zed, child)),
            ..Subagent::default()
        });
    }
    let data_type = meta_cell(m, "data_type").text().unwrap_or_default();
    let doc = match raw.data.as_deref() {
        None => Err(DataError::Missing),
        Some(data) => {
            if !matches!(data_type.as_str(), "zstd" | "json") {
                b.warn(DataError::UnknownType(data_type.clone()).to_string());
            }
            decode(&data_type, data)
        }
    };
    let version = doc
        .as_ref()
        .ok()
        .and_then(|d| kit::str_field(d, "version"))
        .map(str::to_string);
    b.s.source = source(db, version);
    match doc {
        Ok(doc) => thread(&mut b, &doc),
        Err(e) => {
            b.warn(format!("thread {id}: {e}"));
            if let (Some(data), "json") = (raw.data.as_deref(), data_type.as_str()) {
                let text: String = String::from_utf8_lossy(data)
                    .chars()
                    .take(64 << 10)
                    .collect();
                b.context("unparsed data", text, None);
            }
        }
    }
    b.finish()
}

fn usage_of(u: &Value) -> TokenUsage {
    TokenUsage {
        input_tokens: kit::u64_field(u, "input_tokens"),
        output_tokens: kit::u64_field(u, "output_tokens"),
        cached_tokens: kit::u64_field(u, "cache_read_input_tokens"),
        cache_write_tokens: kit::u64_field(u, "cache_creation_input_tokens"),
        ..TokenUsage::default()
    }
}

/// Read one thread document (any version) into the builder.
fn thread(b: &mut SessionBuilder, doc: &Value) {
    if b.s.title.is_none() {
        b.s.title = kit::str_any(doc, &["title", "summary"]).and_then(kit::title_from_text);
    }
    if b.s.updated_at.is_none() {
        b.s.updated_at = doc.get("updated_at").and_then(super::parse_time);
    }
    if b.s.cwd.is_none() {
        b.s.cwd = kit::value_at(doc, &["initial_project_snapshot", "worktree_snapshots"])
            .and_then(Value::as_array)
            .and_then(|w| w.iter().find_map(|s| kit::str_field(s, "worktree_path")))
            .map(str::to_string);
    }
    if b.s.parent.is_none() {
        b.s.parent = kit::str_at(doc, &["subagent_context", "parent_thread_id"])
            .map(|p| unified_id(Agent::Zed, p));
    }
    let model = kit::str_at(doc, &["model", "model"]).map(str::to_string);
    if let Some(p) = kit::str_field(doc, "profile") {
        b.s.tags.push(format!("profile:{p}"));
    }
    let cumulative = doc
        .get("cumulative_token_usage")
        .map(usage_of)
        .unwrap_or_default();
    let total = !cumulative.is_zero();
    if total {
        b.s.reported_usage = Some(cumulative);
    }
    // Newer builds: the latest request of each prompt, by user message id.
    let per_prompt: HashMap<String, TokenUsage> = match doc.get("request_token_usage") {
        Some(Value::Object(o)) if !total => o
            .iter()
            .map(|(k, v)| (k.clone(), usage_of(v)))
            .filter(|(_, u)| !u.is_zero())
            .collect(),
        _ => HashMap::new(),
    };
    let messages = doc.get("messages").and_then(Value::as_array);
    let messages = messages.map_or(&[][..], |m| &m[..]);
    let mut p = Parser {
        b,
        model,
        per_prompt,
        prompt: None,
        last_reply: None,
        seen_calls: HashSet::new(),
    };
    for (i, m) in messages.iter().enumerate() {
        p.message(i, m);
    }
    p.close_prompt();
    let summary = kit::str_field(doc, "detailed_summary")
        .or_else(|| kit::str_at(doc, &["detailed_summary_state", "Generated", "text"]))
        .filter(|s| !s.is_empty());
    if let Some(s) = summary {
        p.b.context("detailed summary", s.to_string(), None);
    }
}

struct Parser<'b> {
    b: &'b mut SessionBuilder,
    model: Option<String>,
    /// Usage of each prompt's latest request (newer builds without a total).
    per_prompt: HashMap<String, TokenUsage>,
    /// The current prompt's user message id.
    prompt: Option<String>,
    /// Index of the current prompt's last reply.
    last_reply: Option<usize>,
    seen_calls: HashSet<String>,
}

impl Parser<'_> {
    fn message(&mut self, i: usize, m: &Value) {
        if let Some(user) = m.get("User") {
            self.close_prompt();
            self.user(user);
        } else if let Some(agent) = m.get("Agent") {
            self.agent(i, agent);
        } else if m.as_str() == Some("Resume") {
            self.b
                .event("resumed (\"Continue where you left off\")".into(), None);
        } else if m.get("role").is_some() {
            self.legacy(i, m);
        } else {
            self.b.unparsed(
                "messages",
                "unknown message kind",
                || format!("message {i}"),
                "message",
                &m.to_string(),
                None,
            );
        }
    }

    /// The usage of the prompt that ended goes on its last reply (or an event).
    fn close_prompt(&mut self) {
        let Some(id) = self.prompt.take() else {
            return;
        };
        let Some(u) = self.per_prompt.remove(&id) else {
            return;
        };
        match self.last_reply.take() {
            Some(ix) => self.b.s.messages[ix].token_usage = Some(u),
            None => {
                self.b.push(Message {
                    role: Role::System,
                    kind: crate::model::MessageKind::Event,
                    content: "request usage (no reply kept)".into(),
                    token_usage: Some(u),
                    model: self.model.clone(),
                    ..Message::default()
                });
            }
        }
    }

    fn user(&mut self, user: &Value) {
        let id = kit::str_field(user, "id").map(str::to_string);
        self.prompt = id.clone();
        self.last_reply = None;
        let mut text = Vec::new();
        let mut mentions = Vec::new();
        for c in user
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(t) = c.get("Text").and_then(Value::as_str) {
                text.push(t.to_string());
            } else if let Some(mention) = c.get("Mention") {
                let what = mention_label(mention.get("uri"));
                text.push(format!("@{what}"));
                let body = kit::str_field(mention, "content").unwrap_or("");
                mentions.push(format!("{what}\n\n{body}"));
            } else if let Some(img) = c.get("Image") {
                text.push(image_placeholder(img));
            } else {
                self.b
                    .unparsed
                    .note("user content", "unknown content kind", || c.to_string());
                text.push(c.to_string());
            }
        }
        self.b.push(Message {
            role: Role::User,
            content: text.join("\n"),
            native_id: id,
            ..Message::default()
        });
        for m in mentions {
            self.b.context("mention", m, None);
        }
    }

    fn agent(&mut self, i: usize, agent: &Value) {
        let mut text = Vec::new();
        let mut thinking = Vec::new();
        let mut calls = Vec::new();
        for c in agent
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(t) = c.get("Text").and_then(Value::as_str) {
                text.push(t.to_string());
            } else if let Some(t) = c.get("Thinking") {
                thinking.push(kit::str_field(t, "text").unwrap_or("").to_string());
            } else if c.get("RedactedThinking").is_some() {
                thinking.push(SEALED_THINKING.to_string());
            } else if let Some(u) = c.get("ToolUse") {
                calls.push(tool_call(u));
            } else {
                self.b
                    .unparsed
                    .note("agent content", "unknown content kind", || {
                        format!("message {i}: {c}")
                    });
                text.push(c.to_string());
            }
        }
        let results: Vec<&Value> = match agent.get("tool_results") {
            Some(Value::Object(o)) => o.values().collect(),
            Some(Value::Array(a)) => a.iter().collect(),
            _ => Vec::new(),
        };
        self.reply(text, thinking, calls, results);
    }

    fn reply(
        &mut self,
        text: Vec<String>,
        thinking: Vec<String>,
        calls: Vec<ToolCall>,
        results: Vec<&Value>,
    ) {
        for c in &calls {
            self.seen_calls.insert(c.tool_call_id.clone());
        }
        self.last_reply = Some(self.b.s.messages.len());
        self.b.push(Message {
            role: Role::Assistant,
            content: text.join("\n\n"),
            thinking: Some(thinking.join("\n\n")).filter(|t| !t.is_empty()),
            tool_calls: calls,
            model: self.model.clone(),
            ..Message::default()
        });
        for r in results {
            let id = kit::str_field(r, "tool_use_id").unwrap_or_default();
            let out = result_text(r.get("content"), r.get("output"));
            let failed = r.get("is_error").is_some_and(|e| e == true);
            let name = kit::str_field(r, "tool_name");
            self.b.tool_result(id, name, out, failed, None);
        }
    }

    /// A message of the first agent's format (`SerializedThread`, any version).
    fn legacy(&mut self, i: usize, m: &Value) {
        let role = kit::str_field(m, "role").unwrap_or("");
        let mut text = Vec::new();
        let mut thinking = Vec::new();
        if let Some(t) = kit::str_field(m, "text") {
            text.push(t.to_string());
        }
        for s in m
            .get("segments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match kit::str_field(s, "type") {
                Some("text") => text.push(kit::str_field(s, "text").unwrap_or("").to_string()),
                Some("thinking") => {
                    thinking.push(kit::str_field(s, "text").unwrap_or("").to_string())
                }
                Some("RedactedThinking") => thinking.push(SEALED_THINKING.to_string()),
                _ => {
                    self.b
                        .unparsed
                        .note("segments", "unknown segment type", || {
                            format!("message {i}: {s}")
                        });
                    text.push(s.to_string());
                }
            }
        }
        let calls: Vec<ToolCall> = m
            .get("tool_uses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(tool_call)
            .collect();
        let results: Vec<&Value> = m
            .get("tool_results")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let context = kit::str_field(m, "context").filter(|c| !c.trim().is_empty());
        let hidden = m.get("is_hidden").is_some_and(|h| h == true);
        match role {
            "assistant" => self.reply(text, thinking, calls, results),
            "user" | "system" => {
                let body = text.join("\n\n");
                if hidden || role == "system" {
                    if !body.is_empty() {
                        let label = if hidden {
                            "hidden message"
                        } else {
                            "system message"
                        };
                        self.b.context(label, body, None);
                    }
                } else if !body.is_empty() || results.is_empty() {
                    self.b.push(Message {
                        role: Role::User,
                        content: body,
                        ..Message::default()
                    });
                }
                if let Some(c) = context {
                    self.b.context("attached context", c.to_string(), None);
                }
                // Version 0.1.0 kept the results of a reply's calls in the next user message.
                for r in results {
                    let id = kit::str_field(r, "tool_use_id").unwrap_or_default();
                    let out = result_text(r.get("content"), r.get("output"));
                    let failed = r.get("is_error").is_some_and(|e| e == true);
                    self.b.tool_result(id, None, out, failed, None);
                }
            }
            other => {
                let other = other.to_string();
                self.b.unparsed(
                    "messages",
                    &format!("unknown role {other}"),
                    || format!("message {i}"),
                    "message",
                    &m.to_string(),
                    None,
                );
            }
        }
    }
}

fn tool_call(u: &Value) -> ToolCall {
    let input = match u.get("input") {
        Some(v) if !v.is_null() => v.clone(),
        _ => kit::str_field(u, "raw_input")
            .map(|r| serde_json::from_str(r).unwrap_or_else(|_| Value::String(r.to_string())))
            .unwrap_or(Value::Null),
    };
    ToolCall {
        tool_call_id: kit::str_field(u, "id").unwrap_or_default().to_string(),
        tool_name: kit::str_field(u, "name").unwrap_or_default().to_string(),
        input,
        ..ToolCall::default()
    }
}

/// `LanguageModelImage {source (base64 PNG), size}` as a placeholder.
fn image_placeholder(img: &Value) -> String {
    kit::base64_placeholder("image", Some("image/png"), kit::str_field(img, "source"))
}

/// What a mention names: `File {abs_path}` → `file /a/b.rs`, `Fetch {url}` → `fetch <url>`.
fn mention_label(uri: Option<&Value>) -> String {
    let Some(Value::Object(o)) = uri else {
        return uri
            .and_then(Value::as_str)
            .unwrap_or("mention")
            .to_lowercase();
    };
    let Some((kind, inner)) = o.iter().next() else {
        return "mention".into();
    };
    let what = ["abs_path", "path", "url", "name", "id"]
        .iter()
        .find_map(|k| kit::str_field(inner, k));
    match what {
        Some(w) => format!("{} {w}", kind.to_lowercase()),
        None => kind.to_lowercase(),
    }
}

/// A tool result's content (one item or, in newer builds, a list; text as a string,
/// `{"Text": …}`, `{"type": "text", "text": …}` or `{"text": …}`; images as placeholders).
/// When the content holds nothing, the raw `output` is shown as JSON.
fn result_text(content: Option<&Value>, output: Option<&Value>) -> String {
    fn one(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| one(x, out)),
            Value::Object(o) => {
                let get = |k: &str| {
                    o.iter()
                        .find(|(key, _)| key.eq_ignore_ascii_case(k))
                        .map(|(_, v)| v)
                };
                if let Some(Value::String(t)) = get("text") {
                    out.push(t.clone());
                } else if let Some(img) = get("image") {
                    out.push(image_placeholder(img));
                } else if o.contains_key("source") {
                    out.push(image_placeholder(v));
                } else {
                    out.push(v.to_string());
                }
            }
            Value::Null => {}
            other => out.push(other.to_string()),
        }
    }
    let mut parts = Vec::new();
    if let Some(c) = content {
        one(c, &mut parts);
    }
    let text = parts.join("\n");
    if text.is_empty() {
        if let Some(o) = output.filter(|o| !o.is_null()) {
            return serde_json::to_string_pretty(o).unwrap_or_default();
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zstd_data_is_decoded_and_a_bad_frame_is_an_error() {
        let doc = json!({"title": "t", "messages": []});
        let packed = zstd::encode_all(doc.to_string().as_bytes(), 3).expect("zstd");
        assert_eq!(decode("zstd", &packed).expect("decoded"), doc);
        assert!(matches!(
            decode("zstd", b"not zstd"),
            Err(DataError::Zstd(_))
        ));
        assert_eq!(
            decode("json", doc.to_string().as_bytes()).expect("json"),
            doc
        );
    }

    #[test]
    fn tool_result_content_of_every_shape_is_text() {
        for (c, want) in [
            (json!("plain"), "plain"),
            (json!({"Text": "wrapped"}), "wrapped"),
            (json!({"type": "text", "text": "typed"}), "typed"),
            (json!([{"Text": "a"}, "b"]), "a\nb"),
        ] {
            assert_eq!(result_text(Some(&c), None), want);
        }
        assert_eq!(
            result_text(Some(&json!("")), Some(&json!({"k": 1}))),
            "{\n  \"k\": 1\n}"
        );
    }

    #[test]
    fn mentions_name_their_kind_and_target() {
        let uri = json!({"File": {"abs_path": "/src/a.rs"}});
        assert_eq!(mention_label(Some(&uri)), "file /src/a.rs");
        assert_eq!(mention_label(Some(&json!("PastedImage"))), "pastedimage");
    }
}
