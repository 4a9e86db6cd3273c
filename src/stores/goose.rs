//! Goose (Block): `sessions.db` (SQLite) and the older one-file-per-session JSONL.
//!
//! Learnt from Goose's own source, github.com/block/goose: the schema from
//! `crates/goose/src/session/storage.rs` (`create_schema`, `get_conversation`) and
//! `crates/goose/src/session/migrations.rs` (versions 1–13) at commit `865e4a03`
//! (`fixtures/schema/goose-v13.sql`), the session row `crates/goose/src/session/model.rs`
//! at `865e4a03`, the JSONL files `crates/goose/src/session/storage.rs` at `01a262b2`
//! (`SessionMetadata`, the first line) and `crates/goose/src/session/legacy.rs` at
//! `0fc5e540` (how Goose imports them), the message JSON
//! `crates/goose/src/conversation/message.rs` at `05132966`, compaction
//! `crates/goose/src/context_mgmt/mod.rs` at `0036b819`, and the data directory
//! `crates/goose/src/config/paths.rs` at `0780e228`.
//!
//! **Where.** Goose's data directory is `$GOOSE_PATH_ROOT/data` when that is set, else
//! `$XDG_DATA_HOME/goose` (`~/.local/share/goose`; macOS `~/Library/Application
//! Support/Block/goose`); sessions live in its `sessions/`: `sessions.db`, and
//! `<id>.jsonl` files from the releases before the database. Goose imports those files
//! into the database once, under the same id; a file whose id the database has is the
//! database's session (the file is named in its warnings, and is among its sources so
//! that its removal shows; the version takes only whether it is there, never its
//! contents), any other file is a session of its own. A root may also be the database or a JSONL file itself. Nothing else in
//! the directory is read; `config.yaml` and the keyring-backed secrets live elsewhere.
//!
//! **Reading.** Through [`super::sqlite`] (read-only, WAL-aware): one read transaction
//! copies a session's row and its `messages` rows, in Goose's own order (`created_timestamp`,
//! then row id); parsing happens after. Columns are probed, so every schema version reads.
//! Only `sessions`, `messages` and `schema_version` are selected from; `extension_data`
//! and `user_recipe_values_json` (values a user typed into a recipe) are never selected.
//!
//! **Messages.** `content_json` (a JSONL line's `content`) is a list of items tagged by
//! `type`: `text`, `image` (a placeholder), `thinking`, `redactedThinking` (sealed),
//! `reasoning`, `toolRequest`/`frontendToolRequest` (`toolCall` is `{status, value: {name,
//! arguments}}` or `{status: "error", error}`), `toolResponse` (in a user message; its
//! `toolResult` value is a `CallToolResult` or, older, a list of content items), and
//! notices (`systemNotification`, `toolConfirmationRequest`, `actionRequired`, the
//! older `conversationCompacted`, `summarizationRequested`, `contextLengthExceeded`),
//! shown as events. `metadata` says who saw a message: after a compaction Goose keeps the
//! old messages (shown) and adds the summary as an agent-only user message (a compaction
//! summary) and an agent-only continuation prompt (context); a message neither side sees
//! is context too.
//!
//! **Usage.** Goose keeps no usage per message (`messages.tokens` is never written). The
//! session row keeps the last call's `input_tokens`/`output_tokens`/`total_tokens`
//! (overwritten each call: the current context) and `accumulated_*` (each call added
//! once), and `accumulated_cost` since schema 13. The session's usage is the accumulated
//! counters, or the last call's where a session predates them.
//!
//! **Links.** Goose's schema records no parent for a subagent (`session_type =
//! 'sub_agent'`): such sessions are listed on their own, tagged `sub_agent`. Where a
//! database has a `parent_session_id` column (builds derived from Goose add one), a child
//! is nested as a subagent of its parent.

use super::jsonl;
use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Cell, Reader, Rows, Table};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    self, Agent, Message, MessageKind, Role, Session, Source, Subagent, TokenUsage, ToolCall,
};
use crate::names;
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The database's file name in a sessions directory.
const DB_NAME: &str = "sessions.db";
/// Children nested deeper than this are not read (a cycle guard).
const MAX_DEPTH: usize = 8;

/// `$GOOSE_PATH_ROOT/data/sessions`, else the XDG data directory's `goose/sessions`.
pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        Agent::Goose,
        &kit::Places {
            env: &[
                ("GOOSE_PATH_ROOT", "data/sessions"),
                ("XDG_DATA_HOME", "goose/sessions"),
            ],
            defaults: &[
                ".local/share/goose/sessions",
                "Library/Application Support/Block/goose/sessions",
            ],
            spec: &[],
        },
    )
}

pub struct GooseStore {
    base: Base,
    reader: Reader,
}

impl GooseStore {
    pub fn new(roots: Vec<Root>) -> GooseStore {
        GooseStore {
            base: Base::new(Agent::Goose, roots),
            reader: Reader::new(),
        }
    }

    /// `(root index, database, JSONL files)` of every root.
    fn places(&self) -> Vec<(usize, Option<PathBuf>, Vec<PathBuf>)> {
        self.base
            .roots
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let p = &r.path;
                if p.is_file() {
                    if kit::file_name(p).ends_with(".jsonl") {
                        (i, None, vec![p.clone()])
                    } else {
                        (i, Some(p.clone()), Vec::new())
                    }
                } else {
                    let db = Some(p.join(DB_NAME)).filter(|d| d.is_file());
                    let files = kit::typed_entries(p)
                        .into_iter()
                        .filter(|(f, t)| {
                            *t == kit::EntryType::File && kit::file_name(f).ends_with(".jsonl")
                        })
                        .map(|(f, _)| f)
                        .collect();
                    (i, db, files)
                }
            })
            .collect()
    }
}

impl Store for GooseStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let dbs: Vec<PathBuf> = self.places().into_iter().filter_map(|p| p.1).collect();
        self.reader
            .problems(dbs.iter().map(PathBuf::as_path), list_db)
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut in_db: HashSet<String> = HashSet::new();
        let places = self.places();
        for (root, db, _) in &places {
            let Some(db) = db else { continue };
            let Some(rows) = self.reader.list("goose", db, list_db) else {
                continue;
            };
            let ids: HashSet<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
            for (id, parent) in &rows {
                in_db.insert(id.clone());
                // A child is shown inside its parent, unless the parent is gone.
                if parent
                    .as_deref()
                    .is_some_and(|p| ids.contains(p) && p != id)
                {
                    continue;
                }
                let mut l = sqlite::row_session(id, db, *root);
                // The file Goose imported the session from, if it is still there: the
                // load warns of it, so its coming and going is the session's to show.
                l.sources.push(legacy_file(db, id));
                out.push(l);
            }
        }
        for (root, _, files) in places {
            for f in files {
                let id = kit::file_name(&f).trim_end_matches(".jsonl").to_string();
                if !id.is_empty() && !in_db.contains(&id) {
                    out.push(Listed::file(id, f, root));
                }
            }
        }
        out
    }

    /// Each sessions directory (its entries are the JSONL files and the database) with
    /// its `sessions.db` and journals; a root that is a database, that database and its
    /// journals. A write to the database lands in it or its journal; a JSONL root, or a
    /// JSONL file the database hides, is only a name (its content is read when listed,
    /// and then a source).
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            let p = &root.path;
            if p.is_dir() {
                g.dirs.push(p.clone());
                g.files.extend(sqlite::with_journals(&p.join(DB_NAME)));
            } else if kit::file_name(p).ends_with(".jsonl") {
                g.files.push(p.clone());
            } else {
                g.files.extend(sqlite::with_journals(p));
            }
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        match &listed.key {
            Some(id) => self.load_db(&listed.path, id),
            None => load_jsonl(&listed.path, &listed.id),
        }
    }

    /// A database session's version: its own rows, and whether the legacy file it was
    /// imported from is still beside the database (the load warns of it). The file's
    /// contents are never read, so only its coming and going moves the version.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        let rows = sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            Tables::probe,
            session_version,
        );
        rows.into_iter()
            .zip(listed)
            .map(|(v, l)| {
                let legacy = legacy_file(&l.path, l.key.as_deref()?).is_file();
                v.map(|v| sqlite::hash_version((v, legacy)))
            })
            .collect()
    }

    fn keeps_listing(&self, listed: &Listed) -> bool {
        // A JSONL session is listed by its name alone; a database can gain sessions.
        listed.key.is_none()
    }
}

impl GooseStore {
    fn load_db(&self, db: &Path, id: &str) -> Session {
        let mut s = sqlite::load_session(
            &self.reader,
            db,
            id,
            sqlite::Access::InPlace,
            |c| {
                let t = Tables::probe(c)?;
                let version = if t.schema_version.has("version") {
                    c.query_row("SELECT max(version) FROM schema_version", [], |r| {
                        Ok(Cell::of(r.get_ref(0)?).text())
                    })?
                } else {
                    None
                };
                Ok((fetch(c, &t, id, 0, &mut HashSet::new())?, version))
            },
            |(raw, version)| build(&raw, db, &version),
            || {
                let mut s = Session::new(Agent::Goose, id);
                s.source = source(db, "goose-sqlite", None);
                s
            },
        );
        let legacy = legacy_file(db, id);
        if legacy.is_file() {
            s.warnings.push(format!(
                "{} holds this session as Goose kept it before {DB_NAME} (imported into \
                 the database under the same id); the database's copy is shown",
                legacy.display()
            ));
        }
        s
    }
}

/// Where Goose kept session `id` before `db`: `<id>.jsonl` beside the database.
fn legacy_file(db: &Path, id: &str) -> PathBuf {
    db.with_file_name(format!("{id}.jsonl"))
}

fn source(path: &Path, format: &str, version: Option<String>) -> Source {
    Source {
        paths: vec![path.to_path_buf()],
        format: format.into(),
        format_version: version,
    }
}

/// `(id, parent_session_id)` of every session.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<(String, Option<String>)>> {
    let t = Table::probe(conn, "sessions")?;
    if !t.has("id") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `sessions` table: not a Goose database".into(),
        ));
    }
    let rows = Rows::fetch(conn, &t, &["id", "parent_session_id"], "", [])?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.get("id").text()?, r.get("parent_session_id").non_empty())))
        .collect())
}

struct Tables {
    sessions: Table,
    messages: Table,
    schema_version: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            sessions: Table::probe(c, "sessions")?,
            messages: Table::probe(c, "messages")?,
            schema_version: Table::probe(c, "schema_version")?,
        })
    }

    fn message_order(&self) -> &'static str {
        if self.messages.has("created_timestamp") && self.messages.has("id") {
            "ORDER BY created_timestamp, id"
        } else {
            "ORDER BY rowid"
        }
    }
}

const SESSION_COLUMNS: [&str; 16] = [
    "id",
    "name",
    "description",
    "session_type",
    "working_dir",
    "created_at",
    "updated_at",
    "input_tokens",
    "output_tokens",
    "accumulated_input_tokens",
    "accumulated_output_tokens",
    "accumulated_cost",
    "provider_name",
    "model_config_json",
    "schedule_id",
    "parent_session_id",
];

const MESSAGE_COLUMNS: [&str; 6] = [
    "id",
    "message_id",
    "role",
    "content_json",
    "created_timestamp",
    "metadata_json",
];

/// A session's version: its row, its messages (count, largest id, total length of the
/// content), then the same for its children.
fn session_version(conn: &Connection, t: &Tables, id: &str) -> rusqlite::Result<u64> {
    let messages = (t.messages.has("session_id") && t.messages.has("content_json")).then(|| {
        let metadata = if t.messages.has("metadata_json") {
            "total(length(metadata_json))"
        } else {
            "0"
        };
        format!(
            "SELECT count(*), max(rowid), total(length(content_json)), {metadata} \
             FROM messages WHERE session_id = ?1"
        )
    });
    sqlite::session_tree_version(conn, &t.sessions, &SESSION_COLUMNS, messages.as_deref(), id)
}

// ---------------------------------------------------------------------------------------
// Raw rows

type Raw = sqlite::SessionRows;
use sqlite::cell;

/// Copy one session's rows and its children's (recursively) out of the database.
fn fetch(
    c: &Connection,
    t: &Tables,
    id: &str,
    depth: usize,
    seen: &mut HashSet<String>,
) -> rusqlite::Result<Raw> {
    let q = sqlite::TreeQuery {
        sessions: &t.sessions,
        session_columns: &SESSION_COLUMNS,
        messages: &t.messages,
        message_columns: &MESSAGE_COLUMNS,
        content_column: "content_json",
        message_order: t.message_order(),
        max_depth: MAX_DEPTH,
    };
    sqlite::fetch_session_tree(c, &q, id, depth, seen)
}

// ---------------------------------------------------------------------------------------
// Building sessions

/// A count column: a non-negative integer, `None` when null.
fn count(c: &Cell) -> Option<u64> {
    c.int().map(|n| n.max(0) as u64)
}

/// The session's usage: the accumulated counters, or the last call's where a session
/// predates them. `None` when nothing is recorded.
fn usage(acc: (Option<u64>, Option<u64>), last: (Option<u64>, Option<u64>)) -> Option<TokenUsage> {
    let (i, o) = if acc.0.is_some() || acc.1.is_some() {
        acc
    } else {
        last
    };
    let u = TokenUsage {
        input_tokens: i.unwrap_or(0),
        output_tokens: o.unwrap_or(0),
        ..TokenUsage::default()
    };
    (!u.is_zero()).then_some(u)
}

fn build(raw: &Raw, db: &Path, version: &Option<String>) -> Session {
    let mut b = SessionBuilder::new(Agent::Goose, raw.id.clone());
    b.s.source = source(db, "goose-sqlite", version.clone());
    b.s.warnings.extend(raw.warnings.iter().cloned());
    let mut model = None;
    if let Some(row) = raw.session.as_deref() {
        let get = |n: &str| cell(row, &SESSION_COLUMNS, n);
        b.s.title = get("name")
            .non_empty()
            .or_else(|| get("description").non_empty());
        b.s.cwd = get("working_dir").non_empty();
        b.s.created_at = get("created_at").time();
        b.s.updated_at = get("updated_at").time();
        if let Some(t) = get("session_type").non_empty().filter(|t| t != "user") {
            b.s.tags.push(t);
        }
        if get("schedule_id").non_empty().is_some() {
            b.s.tags.push("scheduled".into());
        }
        model = get("model_config_json")
            .text()
            .and_then(|j| serde_json::from_str::<Value>(&j).ok())
            .and_then(|v| kit::str_field(&v, "model_name").map(str::to_string))
            .filter(|m| !m.is_empty());
        b.s.reported_usage = usage(
            (
                count(get("accumulated_input_tokens")),
                count(get("accumulated_output_tokens")),
            ),
            (count(get("input_tokens")), count(get("output_tokens"))),
        );
        if let Some(c) = get("accumulated_cost")
            .real()
            .filter(|c| c.is_finite() && *c > 0.0)
        {
            b.s.reported_cost = Some((c, false));
        }
    }
    let mut conv = Conv::new(model);
    for row in &raw.messages {
        let get = |n: &str| cell(row, &MESSAGE_COLUMNS, n);
        let native = get("message_id")
            .non_empty()
            .or_else(|| get("id").text().map(|r| format!("row-{r}")))
            .unwrap_or_default();
        let ts = get("created_timestamp").int().and_then(epoch);
        let role = get("role").text().unwrap_or_default();
        let text = get("content_json").text().unwrap_or_default();
        let place = || format!("message {native}");
        let content = match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Array(_)) => v,
            Ok(_) => {
                b.unparsed(
                    "messages",
                    "content_json is not a JSON array",
                    place,
                    "message",
                    &text,
                    ts,
                );
                continue;
            }
            Err(e) => {
                let first = || format!("message {native}: {e}");
                b.unparsed(
                    "messages",
                    "content_json is not JSON",
                    first,
                    "message",
                    &text,
                    ts,
                );
                continue;
            }
        };
        let vis = get("metadata_json")
            .text()
            .and_then(|j| serde_json::from_str::<Value>(&j).ok())
            .map(|m| visibility(&m))
            .unwrap_or_default();
        conv.message(&mut b, &role, &content, ts, vis, native);
    }
    let parent_uid = model::unified_id(Agent::Goose, &raw.id);
    let mut taken = HashSet::new();
    for child in &raw.children {
        let mut c = build(child, db, version);
        c.parent = Some(parent_uid.clone());
        b.s.subagents.push(Subagent {
            name: kit::unique_name(&mut taken, &names::escape(&child.id)),
            unified_id: None,
            description: c.title.clone(),
            tool_call_id: None,
            session: Some(Box::new(c)),
        });
    }
    b.finish()
}

/// Epoch seconds (Goose's `created`), or milliseconds when that large.
fn epoch(n: i64) -> Option<DateTime<Utc>> {
    if n > 100_000_000_000 {
        DateTime::from_timestamp_millis(n)
    } else {
        DateTime::from_timestamp(n, 0)
    }
}

/// A message's `metadata`: `(userVisible, agentVisible)`, both true when absent.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Vis {
    user: bool,
    agent: bool,
}

impl Default for Vis {
    fn default() -> Vis {
        Vis {
            user: true,
            agent: true,
        }
    }
}

fn visibility(m: &Value) -> Vis {
    let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(true);
    Vis {
        user: flag("userVisible"),
        agent: flag("agentVisible"),
    }
}

/// The conversation so far: what a message's kind depends on.
struct Conv {
    model: Option<String>,
    /// The previous message was hidden from the agent (compacted away).
    after_compacted: bool,
}

impl Conv {
    fn new(model: Option<String>) -> Conv {
        Conv {
            model,
            after_compacted: false,
        }
    }

    /// One Goose message (a `messages` row or a JSONL line).
    fn message(
        &mut self,
        b: &mut SessionBuilder,
        role: &str,
        content: &Value,
        ts: Option<DateTime<Utc>>,
        vis: Vis,
        native: String,
    ) {
        let role = match role {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                let first = || format!("message {native}: `{other}`");
                b.unparsed(
                    "messages",
                    "unknown role",
                    first,
                    "message",
                    &content.to_string(),
                    ts,
                );
                return;
            }
        };
        let items = content.as_array().map(Vec::as_slice).unwrap_or_default();
        let mut m = Message {
            role,
            timestamp: ts,
            native_id: Some(native.clone()),
            model: (role == Role::Assistant)
                .then(|| self.model.clone())
                .flatten(),
            ..Message::default()
        };
        let mut texts: Vec<String> = Vec::new();
        let mut thinking: Vec<String> = Vec::new();
        let mut results: Vec<(String, String, bool)> = Vec::new();
        let mut events: Vec<String> = Vec::new();
        for item in items {
            let s = |k: &str| kit::str_field(item, k).unwrap_or_default().to_string();
            match kit::str_field(item, "type").unwrap_or_default() {
                "text" => texts.push(s("text")),
                "image" => texts.push(kit::base64_placeholder(
                    "image",
                    kit::str_field(item, "mimeType"),
                    kit::str_field(item, "data"),
                )),
                "thinking" => thinking.push(s("thinking")),
                "redactedThinking" => thinking.push(model::SEALED_THINKING.to_string()),
                "reasoning" => thinking.push(
                    kit::str_any(item, &["text", "reasoning", "thinking"])
                        .unwrap_or_default()
                        .to_string(),
                ),
                "toolRequest" | "frontendToolRequest" => {
                    m.tool_calls.push(tool_call(item));
                }
                "toolResponse" => {
                    let (out, err) = tool_output(item.get("toolResult").unwrap_or(&Value::Null));
                    results.push((s("id"), out, err));
                }
                "toolConfirmationRequest" => {
                    events.push(format!("tool confirmation requested: {}", s("toolName")));
                }
                "actionRequired" => {
                    let d = item.get("data").unwrap_or(&Value::Null);
                    let kind = kit::str_field(d, "actionType").unwrap_or("action");
                    let what = kit::str_any(d, &["toolName", "message", "id"]).unwrap_or("");
                    events.push(format!("action required ({kind}): {what}"));
                }
                "systemNotification"
                | "conversationCompacted"
                | "summarizationRequested"
                | "contextLengthExceeded" => events.push(s("msg")),
                other => {
                    let first = || format!("message {native}: `{other}`");
                    let raw = item.to_string();
                    b.unparsed("content items", "unsupported type", first, "item", &raw, ts);
                }
            }
        }
        m.content = texts.join("\n");
        if !thinking.is_empty() {
            m.thinking = Some(thinking.join("\n"));
        }
        // Who saw it: the summary a compaction leaves for the agent, the prompt that
        // continues after it, copies neither side sees.
        let has_tools = !m.tool_calls.is_empty() || !results.is_empty();
        if !vis.user && !has_tools {
            if vis.agent && role == Role::User && self.after_compacted {
                m.kind = MessageKind::CompactionSummary;
            } else {
                m.kind = MessageKind::Context;
                m.role = Role::System;
                m.label = Some(if vis.agent {
                    "agent-only message".into()
                } else {
                    "hidden message".into()
                });
            }
        }
        self.after_compacted = !vis.agent;
        let empty = m.content.is_empty() && m.thinking.is_none() && m.tool_calls.is_empty();
        if !empty {
            b.push(m);
        }
        for (id, out, err) in results {
            b.tool_result(&id, None, out, err, ts);
        }
        for e in events.into_iter().filter(|e| !e.is_empty()) {
            b.event(e, ts);
        }
    }
}

/// A `toolRequest`: `toolCall` is `{status: "success", value: {name, arguments}}` or
/// `{status: "error", error}` (a call the model sent that could not be parsed).
fn tool_call(item: &Value) -> ToolCall {
    let id = kit::str_field(item, "id").unwrap_or_default().to_string();
    let call = item.get("toolCall").unwrap_or(&Value::Null);
    match call.get("value") {
        Some(v) if kit::str_field(call, "status") != Some("error") => ToolCall {
            tool_call_id: id,
            tool_name: kit::str_field(v, "name").unwrap_or_default().to_string(),
            input: v.get("arguments").cloned().unwrap_or(Value::Null),
            ..ToolCall::default()
        },
        _ => {
            let error = match call.get("error") {
                Some(Value::String(e)) => e.clone(),
                Some(e) => e.to_string(),
                None => call.to_string(),
            };
            ToolCall {
                tool_call_id: id,
                tool_name: "(invalid tool call)".into(),
                input: Value::String(error.clone()),
                output: Some(error),
                is_error: Some(true),
                ..ToolCall::default()
            }
        }
    }
}

/// A `toolResult`: `{status: "success", value}` where `value` is a `CallToolResult`
/// (`{content, isError}`) or a list of content items, or `{status: "error", error}`.
fn tool_output(r: &Value) -> (String, bool) {
    if kit::str_field(r, "status") == Some("error") {
        return match r.get("error") {
            Some(Value::String(e)) => (e.clone(), true),
            Some(e) => (e.to_string(), true),
            None => (r.to_string(), true),
        };
    }
    let v = r.get("value").unwrap_or(&Value::Null);
    let (items, err) = match v {
        Value::Array(a) => (a.as_slice(), false),
        Value::Object(_) => (
            v.get("content")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default(),
            v.get("isError").and_then(Value::as_bool) == Some(true),
        ),
        Value::Null => (&[][..], false),
        other => return (other.to_string(), false),
    };
    let out: Vec<String> = items.iter().map(content_item).collect();
    (out.join("\n"), err)
}

/// One MCP content item of a tool result, as text.
fn content_item(c: &Value) -> String {
    let s = |k: &str| kit::str_field(c, k);
    match s("type").unwrap_or_default() {
        "text" => s("text").unwrap_or_default().to_string(),
        "image" | "audio" => {
            kit::base64_placeholder(s("type").unwrap_or("image"), s("mimeType"), s("data"))
        }
        "resource" => {
            let r = c.get("resource").unwrap_or(&Value::Null);
            match kit::str_field(r, "text") {
                Some(t) => t.to_string(),
                None => {
                    let p = kit::base64_placeholder(
                        "attachment",
                        kit::str_field(r, "mimeType"),
                        kit::str_field(r, "blob"),
                    );
                    match kit::str_field(r, "uri") {
                        Some(u) => format!("{p} {u}"),
                        None => p,
                    }
                }
            }
        }
        "resource_link" => format!("[resource link: {}]", s("uri").unwrap_or_default()),
        _ => c.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// The JSONL files

/// A `<id>.jsonl` file: a `SessionMetadata` line first (`working_dir`, `description`, the
/// token counters), then one message per line.
fn load_jsonl(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Goose, id);
    b.s.source = source(path, "goose-jsonl", None);
    let mut conv = Conv::new(None);
    let mut first = true;
    let scanned = jsonl::read_records(path, |pos, bytes| {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let is_first = std::mem::take(&mut first);
        if v.get("role").is_none() && v.get("content").is_none() {
            if is_first && v.is_object() {
                metadata(&mut b, &v);
            } else {
                let first = || format!("line {}", pos.line);
                let raw = String::from_utf8_lossy(bytes);
                b.unparsed("lines", "not a message", first, "line", &raw, None);
            }
            return Ok(());
        }
        let ts = v.get("created").and_then(Value::as_i64).and_then(epoch);
        let native = kit::str_field(&v, "id")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| pos.id());
        let role = kit::str_field(&v, "role").unwrap_or_default().to_string();
        let vis = v.get("metadata").map(visibility).unwrap_or_default();
        let content = v.get("content").cloned().unwrap_or(Value::Null);
        conv.message(&mut b, &role, &content, ts, vis, native);
        Ok(())
    });
    scanned.into_session(&mut b.s);
    b.finish()
}

/// The first line of a JSONL file.
fn metadata(b: &mut SessionBuilder, v: &Value) {
    b.s.title = kit::str_field(v, "description")
        .filter(|d| !d.trim().is_empty())
        .map(str::to_string);
    b.s.cwd = kit::str_field(v, "working_dir")
        .filter(|d| !d.is_empty())
        .map(str::to_string);
    if kit::str_field(v, "schedule_id").is_some_and(|s| !s.is_empty()) {
        b.s.tags.push("scheduled".into());
    }
    let n = |k: &str| v.get(k).and_then(Value::as_i64).map(|n| n.max(0) as u64);
    b.s.reported_usage = usage(
        (
            n("accumulated_input_tokens"),
            n("accumulated_output_tokens"),
        ),
        (n("input_tokens"), n("output_tokens")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The legacy file a database session was imported from is that session's source: its
    /// coming and going moves that session's version alone, and a write to it (never read)
    /// moves none.
    #[test]
    fn a_legacy_file_moves_only_the_version_of_the_session_it_holds() {
        let dir = tempfile::tempdir().expect("tmp");
        let db = dir.path().join(DB_NAME);
        let c = Connection::open(&db).expect("open");
        c.execute_batch(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/schema/goose-v13.sql"
        )))
        .expect("ddl");
        for id in ["a", "b"] {
            c.execute(
                "INSERT INTO sessions (id, working_dir) VALUES (?1, '/w')",
                [id],
            )
            .expect("session");
        }
        drop(c);
        let store = GooseStore::new(vec![Root::new(Agent::Goose, dir.path(), "test")]);
        let mut listed = store.list();
        listed.sort_by(|x, y| x.id.cmp(&y.id));
        let legacy = dir.path().join("b.jsonl");
        assert_eq!(listed[1].sources.last(), Some(&legacy));
        let refs: Vec<&Listed> = listed.iter().collect();
        let before = store.versions(&refs);
        assert!(before.iter().all(Option::is_some), "{before:?}");
        std::fs::write(&legacy, "{}\n").expect("legacy");
        let with = store.versions(&refs);
        assert_eq!(with[0], before[0], "a has no legacy file");
        assert_ne!(with[1], before[1], "b's legacy file appeared");
        std::fs::write(&legacy, "{}\n{}\n").expect("legacy");
        assert_eq!(
            store.versions(&refs),
            with,
            "the file's contents are never read"
        );
        std::fs::remove_file(&legacy).expect("rm");
        assert_eq!(store.versions(&refs), before);
    }

    #[test]
    fn tool_results_read_both_result_shapes_and_errors() {
        let new = json!({"status": "success", "value": {"content": [
            {"type": "text", "text": "a"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ], "isError": true}});
        assert_eq!(
            tool_output(&new),
            ("a\n[image: image/png, 3 B]".into(), true)
        );
        let old = json!({"status": "success", "value": [{"type": "text", "text": "b"}]});
        assert_eq!(tool_output(&old), ("b".into(), false));
        let err = json!({"status": "error", "error": "-32603: boom"});
        assert_eq!(tool_output(&err), ("-32603: boom".into(), true));
    }

    #[test]
    fn usage_prefers_the_accumulated_counters() {
        let u = usage((Some(30), Some(4)), (Some(10), Some(1))).expect("usage");
        assert_eq!((u.input_tokens, u.output_tokens), (30, 4));
        let u = usage((None, None), (Some(10), Some(1))).expect("usage");
        assert_eq!((u.input_tokens, u.output_tokens), (10, 1));
        assert_eq!(usage((None, None), (None, None)), None);
    }

    fn row(cols: &[&str], vals: &[(&str, Cell)]) -> Vec<Cell> {
        cols.iter()
            .map(|c| {
                vals.iter()
                    .find(|(k, _)| k == c)
                    .map_or(Cell::Null, |(_, v)| v.clone())
            })
            .collect()
    }

    #[test]
    fn a_child_with_a_recorded_parent_is_nested_with_its_own_usage() {
        let sess = |id: &str, kind: &str, acc_in: i64| {
            Some(row(
                &SESSION_COLUMNS,
                &[
                    ("id", Cell::Text(id.into())),
                    ("session_type", Cell::Text(kind.into())),
                    ("accumulated_input_tokens", Cell::Int(acc_in)),
                    ("accumulated_output_tokens", Cell::Int(1)),
                ],
            ))
        };
        let prompt = row(
            &MESSAGE_COLUMNS,
            &[
                ("id", Cell::Int(1)),
                ("role", Cell::Text("user".into())),
                (
                    "content_json",
                    Cell::Text(r#"[{"type":"text","text":"child prompt"}]"#.into()),
                ),
                ("created_timestamp", Cell::Int(1_768_035_600)),
            ],
        );
        let child = Raw {
            id: "20260110_2".into(),
            session: sess("20260110_2", "sub_agent", 7),
            messages: vec![prompt],
            ..Raw::default()
        };
        let raw = Raw {
            id: "20260110_1".into(),
            session: sess("20260110_1", "user", 40),
            children: vec![child],
            ..Raw::default()
        };
        let s = build(&raw, Path::new("/x/sessions.db"), &None);
        assert!(s.tags.is_empty(), "{:?}", s.tags);
        let c = s.subagents[0].session.as_deref().expect("child");
        assert_eq!(c.parent.as_deref(), Some("goose:20260110_1"));
        assert_eq!(c.tags, ["sub_agent"]);
        assert_eq!(c.messages[0].content, "child prompt");
        let own = |s: &Session| s.reported_usage.map(|u| u.input_tokens);
        assert_eq!((own(&s), own(c)), (Some(40), Some(7)));
    }

    #[test]
    fn unknown_roles_and_items_are_kept_as_stored_and_counted() {
        let mut b = SessionBuilder::new(Agent::Goose, "s");
        let mut conv = Conv::new(None);
        let vis = Vis::default();
        let items = json!([{"type": "text", "text": "kept prompt"}]);
        conv.message(&mut b, "user", &items, None, vis, "m1".into());
        let odd = json!([{"type": "text", "text": "odd role"}]);
        conv.message(&mut b, "critic", &odd, None, vis, "m2".into());
        let video =
            json!([{"type": "video", "url": "v.mp4"}, {"type": "text", "text": "kept reply"}]);
        conv.message(&mut b, "assistant", &video, None, vis, "m3".into());
        let s = b.finish();
        let texts: Vec<&str> = s.messages.iter().map(|m| m.content.as_str()).collect();
        assert!(
            texts.contains(&"kept prompt") && texts.contains(&"kept reply"),
            "{texts:?}"
        );
        for stored in ["odd role", "v.mp4"] {
            assert!(
                s.messages
                    .iter()
                    .any(|m| m.kind == MessageKind::Context && m.content.contains(stored)),
                "{stored}: {texts:?}"
            );
        }
        let w = s.warnings.join("\n");
        assert!(
            w.contains("1 messages could not be parsed: unknown role"),
            "{w}"
        );
        assert!(
            w.contains("1 content items could not be parsed: unsupported type"),
            "{w}"
        );
    }
}
