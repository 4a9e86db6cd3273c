//! Hermes Agent (NousResearch): `state.db` per profile, plus the gateway's legacy JSONL.
//!
//! **Where.** `$HERMES_HOME` (default `~/.hermes`) holds `state.db` and every profile its own
//! `profiles/<name>/state.db`; each is an independent database. The gateway also writes
//! `sessions/<session id>.jsonl` (one JSON object per message, a `session_meta` line first)
//! beside it; such a file is read when no database has that session, and also, as
//! `<id>@gateway` forked from the database's session, when it holds more messages than the
//! database does for that id (an older copy of the database, rows lost): what the database
//! lacks is never hidden.
//!
//! **Reading.** Through [`super::sqlite`] (read-only, one short read transaction per session
//! whose rows are copied out and parsed after it, busy handling, versions from the
//! session's own rows). The schema went from version 2 to 30 within months, adding columns
//! with every release, so every column is probed and missing ones read as `NULL`; tables
//! other than `sessions`, `messages`, `schema_version` and `system_prompts` are never read.
//!
//! **System prompt and model.** A session's system prompt is its row's `system_prompt`
//! (older schemas), else the `system_prompts` row its `system_prompt_hash` names (v30
//! moves every prompt there, content-addressed): the first context of the session, and
//! again where a stitched continuation's prompt differs. The row's `model` is the
//! session's model also when no reply row names one (a session reset before its first
//! reply).
//!
//! **Lineage.** `parent_session_id` links four kinds of child (Hermes' own predicates):
//! - a **compression continuation** (the parent ended with `end_reason = 'compression'`) is
//!   the same conversation under a new id: sessfs *stitches* it into the session it
//!   continues, so the conversation is one directory under the first id, with an event
//!   marking where each continuation starts; continuations are not listed on their own;
//! - a **`/branch`** child (`model_config._branched_from`, or parent `end_reason =
//!   'branched'`) is a fork: listed on its own, `forked_from` = the parent conversation;
//! - a **reset** child (`_reset_from`, parent ended by a reset or switch) is a new
//!   conversation, listed on its own without a link;
//! - any other child (`delegate_task`: `source = 'subagent'`, `_delegate_from`) is a
//!   **subagent**, nested under its parent (`subagents/<id>/`), not listed on its own.
//!
//! **Messages.** Rows in id order (the order Hermes replays). Rows with `active = 0` (rewound
//! or replaced; Hermes no longer shows them) are not in the transcript: each run of them is
//! a branch `rewound-<first row id>` (the active rows before it plus the run). Rows with
//! `compacted = 1` are shown: Hermes' own history view shows them too. `tool` rows are tool
//! results paired with the assistant's `tool_calls` by id; compaction carriers
//! (`_compressed_summary`, or text starting `[CONTEXT COMPACTION`) are compaction
//! summaries. A tool row holding exactly the object the terminal tool returns,
//! `{"output", "exit_code", "error"}` (later also `exit_code_meaning`, `approval`;
//! `tools/terminal_tool.py` in NousResearch/hermes-agent at 544ac55e, `json.dumps` of the
//! command's output), shows as that output's text, its newlines real, with a non-zero exit
//! code or an error as a line after it (the result then failed); another tool's result
//! object with a text field (`read_file` `content`, `execute_code` `output`, `patch`
//! `diff`) shows that text, its other fields as one JSON line after it ([`text_result`]);
//! any other tool row is shown as stored ([`tool_text`]). Usage and cost exist per session only: the counters
//! become [`Session::reported_usage`], the cost [`Session::reported_cost`] from
//! `actual_cost_usd`, else `estimated_cost_usd` marked estimated; a stitched conversation
//! sums its segments.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Cell, Reader, Rows, Table};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    self, Agent, Branch, Message, MessageKind, Role, Session, Source, Subagent, TokenUsage,
    ToolCall,
};
use crate::names;
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Nesting deeper than this (continuations, subagents) is not read: a cycle guard.
const MAX_DEPTH: usize = 32;
/// What a gateway transcript is named when the database has its session with fewer messages.
const GATEWAY_COPY: &str = "@gateway";
/// Largest gateway JSONL file read.
const MAX_JSONL: u64 = 256 << 20;
/// How a compaction carrier message starts.
const SUMMARY_PREFIX: &str = "[CONTEXT COMPACTION";

/// What a tool row shows, and whether the call failed: the terminal tool's
/// `{"output": …, "exit_code": …, "error": …}` (newer builds add `exit_code_meaning` and
/// `approval`) as the output's text, `[exit code N: meaning]`, `[approval: …]` and
/// `[error: …]` after it where they say something, then any text Hermes appended after the
/// object, so nothing of the row is lost; any other content through [`text_result`], else
/// as stored.
fn tool_text(content: &str) -> (String, bool) {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Terminal {
        output: String,
        #[serde(default)]
        exit_code: Option<i64>,
        #[serde(default)]
        error: Option<String>,
        #[serde(default)]
        exit_code_meaning: Option<String>,
        #[serde(default)]
        approval: Option<String>,
    }
    if !content.trim_start().starts_with('{') {
        return (content.to_string(), false);
    }
    // Hermes may append notes after the object (`[Subdirectory context discovered: …]`).
    let mut values = serde_json::Deserializer::from_str(content).into_iter::<Terminal>();
    let Some(Ok(t)) = values.next() else {
        return text_result(content).unwrap_or_else(|| (content.to_string(), false));
    };
    let rest = content[values.byte_offset()..].trim();
    let code = t.exit_code.filter(|&c| c != 0);
    let error = t.error.filter(|e| !e.is_empty());
    let mut text = t.output;
    let mut after = |line: String| {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&line);
    };
    match (code, &t.exit_code_meaning) {
        (Some(c), Some(m)) => after(format!("[exit code {c}: {m}]")),
        (Some(c), None) => after(format!("[exit code {c}]")),
        (None, Some(m)) => after(format!("[exit code 0: {m}]")),
        (None, None) => {}
    }
    if let Some(a) = &t.approval {
        after(format!("[approval: {a}]"));
    }
    if let Some(e) = &error {
        after(format!("[error: {e}]"));
    }
    if !rest.is_empty() {
        after(rest.to_string());
    }
    (text, code.is_some() || error.is_some())
}

/// Fields that hold the text of another tool's result object: `read_file`'s and
/// `skill_view`'s `content`, `execute_code`'s `output`, `patch`'s `diff`.
const TEXT_FIELDS: [&str; 3] = ["content", "output", "diff"];

/// A tool row holding another tool's result object with a text field ([`TEXT_FIELDS`]),
/// as the file tools return it (`json.dumps(result.to_dict())`, `tools/file_tools.py` in
/// NousResearch/hermes-agent at 544ac55e; `execute_code`'s `{"status", "output",
/// "tool_calls_made", "duration_seconds"}` in `tools/code_execution_tool.py` there): that
/// text with its newlines real, then `[error: …]`, then the object's other fields as one
/// JSON line, then any text appended after the object. Failed when `error` says something,
/// `success` is false or `status` is `error`, `timeout` or `interrupted`. A bare
/// `{"error": "…"}` (what the file tools return when they raise) is kept as stored and
/// failed. `None` for anything else.
fn text_result(content: &str) -> Option<(String, bool)> {
    let mut values = serde_json::Deserializer::from_str(content).into_iter::<Value>();
    let Some(Ok(Value::Object(mut o))) = values.next() else {
        return None;
    };
    let appended = content[values.byte_offset()..].trim();
    if let Some(out) = delegated(&mut o) {
        let (mut text, failed) = out;
        if !o.is_empty() {
            kit::push_paragraph(&mut text, &Value::Object(o).to_string());
        }
        if !appended.is_empty() {
            kit::push_paragraph(&mut text, appended);
        }
        return Some((text, failed));
    }
    let Some(key) = TEXT_FIELDS
        .iter()
        .find(|k| o.get(**k).is_some_and(Value::is_string))
    else {
        // What every file tool returns when it raised: `{"error": "…"}`, kept as stored.
        let only_error = o.len() == 1
            && o.get("error")
                .and_then(Value::as_str)
                .is_some_and(|e| !e.is_empty());
        return only_error.then(|| (content.to_string(), true));
    };
    let Some(Value::String(mut text)) = o.shift_remove(*key) else {
        return None;
    };
    let error = match o.get("error") {
        Some(Value::String(e)) if !e.is_empty() => Some(e.clone()),
        _ => None,
    };
    if error.is_some() {
        o.shift_remove("error");
    }
    let failed = error.is_some()
        || o.get("success") == Some(&Value::Bool(false))
        || matches!(
            o.get("status").and_then(Value::as_str),
            Some("error" | "timeout" | "interrupted")
        );
    if let Some(e) = &error {
        kit::push_paragraph(&mut text, &format!("[error: {e}]"));
    }
    if !o.is_empty() {
        kit::push_paragraph(&mut text, &Value::Object(o).to_string());
    }
    if !appended.is_empty() {
        kit::push_paragraph(&mut text, appended);
    }
    Some((text, failed))
}

/// A `delegate_task` result, `{"results": [{task_index, status, summary, …}], …}` (one entry
/// per delegated task, `tools/delegate_tool.py` in NousResearch/hermes-agent at 00aad972):
/// each task's summary with its newlines real, then that task's other fields as one JSON
/// line. The `results` list is taken out of `o`, whose other fields the caller adds. Failed
/// when a task `failed`, hit an `error`, a `timeout` or was `interrupted`. `None` (and `o`
/// untouched) unless `results` is a list of objects that all hold a `summary` string.
fn delegated(o: &mut serde_json::Map<String, Value>) -> Option<(String, bool)> {
    let Some(Value::Array(results)) = o.get("results") else {
        return None;
    };
    let all_summaries = !results.is_empty()
        && results
            .iter()
            .all(|r| r.get("summary").is_some_and(Value::is_string));
    if !all_summaries {
        return None;
    }
    let Some(Value::Array(results)) = o.shift_remove("results") else {
        return None;
    };
    let mut text = String::new();
    let mut failed = false;
    for r in results {
        let Value::Object(mut r) = r else { continue };
        failed |= matches!(
            r.get("status").and_then(Value::as_str),
            Some("failed" | "error" | "timeout" | "interrupted")
        );
        match r.shift_remove("summary") {
            Some(Value::String(summary)) if !summary.is_empty() => {
                kit::push_paragraph(&mut text, &summary)
            }
            _ => {}
        }
        if !r.is_empty() {
            kit::push_paragraph(&mut text, &Value::Object(r).to_string());
        }
    }
    Some((text, failed))
}

/// `$HERMES_HOME`, else `~/.hermes`.
pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        Agent::Hermes,
        &kit::Places {
            env: &[("HERMES_HOME", "")],
            defaults: &[".hermes"],
            spec: &[],
        },
    )
}

pub struct HermesStore {
    base: Base,
    reader: Reader,
    /// Messages counted in each gateway transcript, by its size and mtime: a database is
    /// listed again at every write to it, and an unchanged transcript is not read again.
    gateway_counts: std::sync::Mutex<HashMap<PathBuf, Counted>>,
}

/// A transcript's `(size, mtime)` when counted, and its messages.
type Counted = (Option<(u64, std::time::SystemTime)>, usize);

type Place = (usize, PathBuf);

impl HermesStore {
    pub fn new(roots: Vec<Root>) -> HermesStore {
        HermesStore {
            base: Base::new(Agent::Hermes, roots),
            reader: Reader::new(),
            gateway_counts: Default::default(),
        }
    }

    /// [`gateway_messages`] of `path`, counted again only when its size or mtime moved.
    fn gateway_messages(&self, path: &Path) -> usize {
        let stamp = super::stat_version(path);
        let mut counts = self
            .gateway_counts
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match counts.get(path) {
            Some(&(s, n)) if s == stamp && stamp.is_some() => n,
            _ => {
                let n = gateway_messages(path);
                counts.insert(path.to_path_buf(), (stamp, n));
                n
            }
        }
    }

    /// Every database and every gateway `sessions/` directory, each once.
    fn places(&self) -> (Vec<Place>, Vec<Place>) {
        let mut dbs = Vec::new();
        let mut dirs = Vec::new();
        let mut seen = HashSet::new();
        let mut once = |p: &Path| seen.insert(p.canonicalize().unwrap_or_else(|_| p.into()));
        for (i, root) in self.base.roots.iter().enumerate() {
            if root.path.is_file() {
                if once(&root.path) {
                    dbs.push((i, root.path.clone()));
                }
                continue;
            }
            let mut homes = vec![root.path.clone()];
            homes.extend(kit::subdirs(&root.path.join("profiles")));
            for h in homes {
                let db = h.join("state.db");
                if db.is_file() && once(&db) {
                    dbs.push((i, db));
                }
                let s = h.join("sessions");
                if s.is_dir() && once(&s) {
                    dirs.push((i, s));
                }
            }
        }
        (dbs, dirs)
    }
}

impl Store for HermesStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let (dbs, _) = self.places();
        self.reader
            .problems(dbs.iter().map(|(_, db)| db.as_path()), list_nodes)
    }

    fn list(&self) -> Vec<Listed> {
        let (dbs, dirs) = self.places();
        let mut out = Vec::new();
        // Session id -> its rows in the database that has it.
        let mut in_db: HashMap<String, usize> = HashMap::new();
        for (root, db) in dbs {
            let Some(nodes) = self.reader.list("hermes", &db, list_nodes) else {
                continue;
            };
            for n in nodes.values() {
                in_db.insert(n.id.clone(), n.rows);
                if matches!(kind(n, &nodes), Kind::Top | Kind::Fork(_)) {
                    out.push(sqlite::row_session(&n.id, &db, root));
                }
            }
        }
        for (root, dir) in dirs {
            for f in kit::entries(&dir) {
                let Some(id) = kit::file_name(&f).strip_suffix(".jsonl") else {
                    continue;
                };
                if !f.is_file() {
                    continue;
                }
                match in_db.get(id) {
                    None => out.push(Listed::file(id, f.clone(), root)),
                    // The database lacks messages the transcript has (an older copy of
                    // it, or rows lost): the transcript is shown too, under its own name.
                    Some(&rows) if self.gateway_messages(&f) > rows => {
                        out.push(Listed::file(format!("{id}{GATEWAY_COPY}"), f.clone(), root));
                    }
                    Some(_) => {}
                }
            }
        }
        out
    }

    /// The listing reads each root, its `profiles/` and every profile (where a `state.db`
    /// or `sessions/` appears), every database, and every gateway transcript in the
    /// `sessions/` directories (it counts their messages against the database's). A write
    /// to a database lands in its `-wal` (or, in rollback mode, in the database itself), so
    /// any write to one lists the store again at the next search.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let (dbs, dirs) = self.places();
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                continue;
            }
            g.dirs.push(root.path.clone());
            let profiles = root.path.join("profiles");
            if profiles.is_dir() {
                g.dirs.extend(kit::subdirs(&profiles));
                g.dirs.push(profiles);
            }
        }
        for (_, db) in &dbs {
            g.files.extend(sqlite::with_journals(db));
        }
        for (_, dir) in &dirs {
            g.files.extend(
                kit::entries(dir)
                    .into_iter()
                    .filter(|f| kit::file_name(f).ends_with(".jsonl")),
            );
            g.dirs.push(dir.clone());
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        match &listed.key {
            Some(id) => self.load_db(&listed.path, id),
            None => {
                let mut s = load_jsonl(&listed.path, &listed.id);
                if let Some(id) = listed.id.strip_suffix(GATEWAY_COPY) {
                    // The database's messages it repeats count once, there.
                    s.forked_from = Some(model::unified_id(Agent::Hermes, id));
                    s.warnings.push(format!(
                        "the gateway transcript holds messages the database lacks for {id}; \
                         shown here whole, beside the database's session"
                    ));
                }
                s
            }
        }
    }

    /// One read of each database for all its sessions, its tables probed once.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            Tables::probe,
            |c, t, id| {
                let fam = family(c, t, id, 0, &mut HashSet::new(), &mut |c, sid| {
                    message_stats(c, t, sid)
                })?;
                let mut parts = Vec::new();
                fam.each(&mut |f| parts.push((f.row.rows.clone(), f.data.rows.clone())));
                let ancestry = fork_origin(c, t, id)?;
                Ok(sqlite::hash_version((parts, ancestry)))
            },
        )
    }
}

// ---------------------------------------------------------------------------------------
// Lineage

/// What lineage needs of a session row.
#[derive(Clone, Debug, Default)]
struct Node {
    id: String,
    parent: Option<String>,
    end_reason: Option<String>,
    source: Option<String>,
    model_config: Value,
    /// Its rows in `messages` (filled by [`list_nodes`]).
    rows: usize,
}

impl Node {
    fn of(r: sqlite::Row<'_>) -> Node {
        Node {
            id: r.get("id").text().unwrap_or_default(),
            parent: r.get("parent_session_id").non_empty(),
            end_reason: r.get("end_reason").non_empty(),
            source: r.get("source").non_empty(),
            model_config: r
                .get("model_config")
                .str()
                .and_then(|j| serde_json::from_str(j).ok())
                .unwrap_or(Value::Null),
            rows: 0,
        }
    }

    fn marker(&self, key: &str) -> bool {
        self.model_config.get(key).is_some_and(|v| !v.is_null())
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Top,
    Continuation(String),
    Fork(String),
    Subagent(String),
}

/// How `child` relates to its parent (see the module docs), given the parent's row.
fn kind_given(child: &Node, parent: Option<&Node>) -> Kind {
    let Some(p) = parent else {
        return Kind::Top;
    };
    let ended = p.end_reason.as_deref().unwrap_or("");
    if child.marker("_branched_from") || ended == "branched" {
        Kind::Fork(p.id.clone())
    } else if child.marker("_delegate_from") || child.source.as_deref() == Some("subagent") {
        Kind::Subagent(p.id.clone())
    } else if child.marker("_reset_from")
        || matches!(ended, "session_reset" | "session_switch" | "new_session")
    {
        Kind::Top
    } else if ended == "compression" {
        Kind::Continuation(p.id.clone())
    } else {
        Kind::Subagent(p.id.clone())
    }
}

fn kind(n: &Node, all: &HashMap<String, Node>) -> Kind {
    kind_given(n, n.parent.as_ref().and_then(|p| all.get(p)))
}

const NODE_COLUMNS: [&str; 5] = [
    "id",
    "parent_session_id",
    "end_reason",
    "source",
    "model_config",
];

fn list_nodes(conn: &Connection) -> rusqlite::Result<HashMap<String, Node>> {
    let t = Table::probe(conn, "sessions")?;
    if !t.has("id") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `sessions` table: not a Hermes database".into(),
        ));
    }
    let rows = Rows::fetch(conn, &t, &NODE_COLUMNS, "", [])?;
    let mut nodes: HashMap<String, Node> = rows
        .iter()
        .map(Node::of)
        .filter(|n| !n.id.is_empty())
        .map(|n| (n.id.clone(), n))
        .collect();
    // Row counts, to tell a gateway transcript that holds more than the database.
    if Table::probe(conn, "messages")?.has("session_id") {
        let mut q =
            conn.prepare("SELECT session_id, COUNT(*) FROM messages GROUP BY session_id")?;
        let counts = q.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for (id, n) in counts.flatten() {
            if let Some(node) = nodes.get_mut(&id) {
                node.rows = usize::try_from(n).unwrap_or(0);
            }
        }
    }
    Ok(nodes)
}

/// The conversation a fork was made from (its parent, walked up through compression
/// continuations to where the conversation is listed); `None` for a session that is not
/// a fork.
fn fork_origin(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Option<String>> {
    let node = |id: &str| -> rusqlite::Result<Option<Node>> {
        let r = Rows::fetch(c, &t.sessions, &NODE_COLUMNS, "WHERE id = ?1", [id])?;
        Ok(r.first().map(Node::of))
    };
    let Some(me) = node(id)? else {
        return Ok(None);
    };
    let parent = match &me.parent {
        Some(p) => node(p)?,
        None => None,
    };
    let Kind::Fork(mut origin) = kind_given(&me, parent.as_ref()) else {
        return Ok(None);
    };
    for _ in 0..MAX_DEPTH {
        let Some(o) = node(&origin)? else { break };
        let op = match &o.parent {
            Some(p) => node(p)?,
            None => None,
        };
        match kind_given(&o, op.as_ref()) {
            Kind::Continuation(p) => origin = p,
            _ => break,
        }
    }
    Ok(Some(origin))
}

// ---------------------------------------------------------------------------------------
// Rows

struct Tables {
    sessions: Table,
    messages: Table,
    schema_version: Table,
    system_prompts: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            sessions: Table::probe(c, "sessions")?,
            messages: Table::probe(c, "messages")?,
            schema_version: Table::probe(c, "schema_version")?,
            system_prompts: Table::probe(c, "system_prompts")?,
        })
    }
}

/// Session columns read, when present.
const SESSION_COLUMNS: [&str; 21] = [
    "id",
    "parent_session_id",
    "end_reason",
    "source",
    "model_config",
    "model",
    "title",
    "display_name",
    "started_at",
    "ended_at",
    "last_activity_at",
    "cwd",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "estimated_cost_usd",
    "actual_cost_usd",
    "message_count",
    "system_prompt_hash",
];

/// Message columns read, when present.
const MESSAGE_COLUMNS: [&str; 15] = [
    "id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
    "reasoning",
    "reasoning_content",
    "codex_reasoning_items",
    "active",
    "compacted",
    "_compressed_summary",
    "display_kind",
    "finish_reason",
];

/// A session and the sessions stitched into it or nested under it, with `T` read for each.
struct Family<T> {
    row: Rows,
    data: T,
    continuations: Vec<Family<T>>,
    subagents: Vec<Family<T>>,
}

impl<T> Family<T> {
    fn each(&self, f: &mut impl FnMut(&Family<T>)) {
        f(self);
        for c in self.continuations.iter().chain(&self.subagents) {
            c.each(f);
        }
    }
}

/// Read `id`'s row, `data` for it, and its continuations and subagents, recursively.
fn family<T>(
    c: &Connection,
    t: &Tables,
    id: &str,
    depth: usize,
    seen: &mut HashSet<String>,
    data: &mut impl FnMut(&Connection, &str) -> rusqlite::Result<T>,
) -> rusqlite::Result<Family<T>> {
    seen.insert(id.to_string());
    let row = Rows::fetch(c, &t.sessions, &SESSION_COLUMNS, "WHERE id = ?1", [id])?;
    let me = row.first().map(Node::of);
    let mut fam = Family {
        data: data(c, id)?,
        row,
        continuations: Vec::new(),
        subagents: Vec::new(),
    };
    if !t.sessions.has("parent_session_id") || depth >= MAX_DEPTH {
        return Ok(fam);
    }
    let order = if t.sessions.has("started_at") {
        "started_at, id"
    } else {
        "id"
    };
    let kids = Rows::fetch(
        c,
        &t.sessions,
        &NODE_COLUMNS,
        &format!("WHERE parent_session_id = ?1 ORDER BY {order}"),
        [id],
    )?;
    for k in kids.iter().map(Node::of) {
        if seen.contains(&k.id) {
            continue;
        }
        match kind_given(&k, me.as_ref()) {
            Kind::Continuation(_) => {
                fam.continuations
                    .push(family(c, t, &k.id, depth + 1, seen, data)?)
            }
            Kind::Subagent(_) => fam
                .subagents
                .push(family(c, t, &k.id, depth + 1, seen, data)?),
            Kind::Top | Kind::Fork(_) => {}
        }
    }
    Ok(fam)
}

/// Messages of one session in id order (`rowid` when the table has no `id`).
fn messages(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Rows> {
    if !t.messages.has("session_id") {
        return Ok(Rows::default());
    }
    let key = if t.messages.has("id") { "id" } else { "rowid" };
    Rows::fetch(
        c,
        &t.messages,
        &MESSAGE_COLUMNS,
        &format!("WHERE session_id = ?1 ORDER BY {key}"),
        [id],
    )
}

/// What decides a session's messages: count, largest id, and how many rows are active and
/// compacted (Hermes flips those in place when it rewinds or compacts).
fn message_stats(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Rows> {
    if !t.messages.has("session_id") {
        return Ok(Rows::default());
    }
    let sum = |col: &str| {
        if t.messages.has(col) {
            format!("sum({})", sqlite::quote(col))
        } else {
            "NULL".into()
        }
    };
    Rows::query(
        c,
        &format!(
            "SELECT count(*), max(rowid), {}, {} FROM messages WHERE session_id = ?1",
            sum("active"),
            sum("compacted")
        ),
        vec![],
        [id],
    )
}

impl HermesStore {
    fn load_db(&self, db: &Path, id: &str) -> Session {
        let source = |version: Option<String>| Source {
            paths: vec![db.to_path_buf()],
            format: "hermes-sqlite".into(),
            format_version: version,
        };
        sqlite::load_session(
            &self.reader,
            db,
            id,
            sqlite::Access::InPlace,
            |c| {
                let t = Tables::probe(c)?;
                let fam = family(c, &t, id, 0, &mut HashSet::new(), &mut |c, sid| {
                    messages(c, &t, sid)
                })?;
                let origin = fork_origin(c, &t, id)?;
                let prompts = system_prompts(c, &t, &fam)?;
                let version = if t.schema_version.has("version") {
                    c.query_row("SELECT max(version) FROM schema_version", [], |r| {
                        Ok(Cell::of(r.get_ref(0)?).text())
                    })?
                } else {
                    None
                };
                Ok((fam, origin, version, t.sessions.exists(), prompts))
            },
            |(fam, origin, version, has_sessions, prompts)| {
                let mut s = build(&fam, id, &source(version), &prompts);
                s.forked_from = origin.map(|o| model::unified_id(Agent::Hermes, &o));
                if !has_sessions {
                    s.warnings
                        .push("the database has no `sessions` table".into());
                }
                s
            },
            || {
                let mut s = Session::new(Agent::Hermes, id);
                s.source = source(None);
                s
            },
        )
    }
}

// ---------------------------------------------------------------------------------------
// Building sessions

/// One message row from the database or the gateway JSONL, parsed.
#[derive(Default)]
struct Msg {
    id: Option<String>,
    /// Where the row is, for warnings: `row 17` (`messages.id`), `line 3` (gateway JSONL).
    place: String,
    role: String,
    content: String,
    tool_call_id: Option<String>,
    tool_calls: Json,
    tool_name: Option<String>,
    ts: Option<DateTime<Utc>>,
    reasoning: Option<String>,
    reasoning_items: Json,
    /// Shown in the transcript (`active = 1`, or compacted).
    visible: bool,
    carrier: bool,
}

/// A JSON field of a message row: absent, parsed, or text that is not JSON (kept, with the
/// parser's error, to be shown and counted).
#[derive(Default)]
enum Json {
    #[default]
    None,
    Ok(Value),
    Bad {
        raw: String,
        error: String,
    },
}

impl Json {
    /// JSON text (a database column, or a JSONL field holding JSON as a string).
    fn text(s: &str) -> Json {
        match kit::json_text(s) {
            Ok(Some(v)) => Json::Ok(v),
            Ok(None) => Json::None,
            Err(error) => Json::Bad {
                raw: s.to_string(),
                error,
            },
        }
    }

    /// A column: text is parsed; a number is no JSON list or object and is kept as text.
    fn cell(c: &Cell) -> Json {
        match c {
            Cell::Null => Json::None,
            Cell::Text(s) => Json::text(s),
            other => Json::Bad {
                raw: other.text().unwrap_or_default(),
                error: "a number, not JSON text".into(),
            },
        }
    }

    /// A JSONL field: a string holding JSON is parsed again (Hermes stores the column's
    /// text), any other value is taken as it is.
    fn value(v: Option<&Value>) -> Json {
        match v {
            None | Some(Value::Null) => Json::None,
            Some(Value::String(s)) => Json::text(s),
            Some(v) => Json::Ok(v.clone()),
        }
    }

    fn ok(&self) -> Option<&Value> {
        match self {
            Json::Ok(v) => Some(v),
            _ => None,
        }
    }
}

impl Msg {
    fn of_row(r: sqlite::Row<'_>) -> Msg {
        let flag = |k: &str, default: i64| r.get(k).int().unwrap_or(default) != 0;
        let id = r.get("id").text();
        Msg {
            place: format!("row {}", id.as_deref().unwrap_or("?")),
            id,
            role: r.get("role").text().unwrap_or_default(),
            content: r.get("content").text().unwrap_or_default(),
            tool_call_id: r.get("tool_call_id").non_empty(),
            tool_calls: Json::cell(r.get("tool_calls")),
            tool_name: r.get("tool_name").non_empty(),
            ts: r.get("timestamp").time(),
            reasoning: r
                .get("reasoning")
                .non_empty()
                .or_else(|| r.get("reasoning_content").non_empty()),
            reasoning_items: Json::cell(r.get("codex_reasoning_items")),
            visible: flag("active", 1) || flag("compacted", 0),
            carrier: flag("_compressed_summary", 0),
        }
    }
}

/// Per-row bookkeeping over a whole conversation.
struct Builder {
    b: SessionBuilder,
    model: Option<String>,
    /// What a row is called in warnings: `messages rows`, or `lines` of the gateway JSONL.
    what: &'static str,
}

impl Builder {
    /// Append one message row to `b` (the session, or a branch's own builder). A row or a
    /// field of it that cannot be parsed is counted in `b.unparsed` and shown as raw text.
    fn row(b: &mut SessionBuilder, m: &Msg, model: &Option<String>, what: &str) {
        let kind = if m.carrier || m.content.trim_start().starts_with(SUMMARY_PREFIX) {
            MessageKind::CompactionSummary
        } else {
            MessageKind::Normal
        };
        match m.role.as_str() {
            "user" => b.push(Message {
                role: Role::User,
                kind,
                content: m.content.clone(),
                timestamp: m.ts,
                native_id: m.id.clone(),
                ..Message::default()
            }),
            "assistant" => {
                let calls = tool_calls(&m.tool_calls, what, &m.place, &mut b.unparsed);
                b.push(Message {
                    role: Role::Assistant,
                    kind,
                    content: m.content.clone(),
                    timestamp: m.ts,
                    tool_calls: calls,
                    thinking: thinking(m),
                    model: model.clone(),
                    native_id: m.id.clone(),
                    ..Message::default()
                });
                for (field, json) in [
                    ("tool_calls", &m.tool_calls),
                    ("codex_reasoning_items", &m.reasoning_items),
                ] {
                    if let Json::Bad { raw, error } = json {
                        b.unparsed(
                            what,
                            &format!("{field} is not JSON"),
                            || format!("{}: {error}", m.place),
                            field,
                            raw,
                            m.ts,
                        );
                    }
                }
            }
            "tool" => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let (text, failed) = tool_text(&m.content);
                b.tool_result(&id, m.tool_name.as_deref(), text, failed, m.ts);
                if let Some(last) = b.last_mut() {
                    last.native_id = m.id.clone();
                }
            }
            "system" => b.context("system message", m.content.clone(), m.ts),
            // The tool list and settings the gateway starts a file with; no conversation.
            "session_meta" => {}
            other => {
                // A role this version does not know: its text is still the session's.
                b.unparsed
                    .note(what, &format!("unknown role `{other}`"), || m.place.clone());
                let label = if other.is_empty() {
                    "message without a role".to_string()
                } else {
                    format!("{other} message")
                };
                let mut text = m.content.clone();
                if let Some(raw) = match &m.tool_calls {
                    Json::Ok(v) => Some(v.to_string()),
                    Json::Bad { raw, .. } => Some(raw.clone()),
                    Json::None => None,
                } {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(&raw);
                }
                b.context(&label, text, m.ts);
            }
        }
    }
}

/// `[{id, function: {name, arguments}}]` (OpenAI style; `arguments` a JSON string).
/// Arguments that are not JSON stay the call's input as text and are counted; a list
/// element that is no object is a call without a name whose input is that element; a
/// value that is no list is one such call.
fn tool_calls(v: &Json, what: &str, place: &str, unparsed: &mut kit::Unparsed) -> Vec<ToolCall> {
    let Some(v) = v.ok() else {
        return Vec::new();
    };
    // A string holding the list (stored twice encoded).
    let decoded;
    let v = match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(d) => {
                decoded = d;
                &decoded
            }
            Err(_) => v,
        },
        v => v,
    };
    let items = match v {
        Value::Array(a) => a.as_slice(),
        other => std::slice::from_ref(other),
    };
    items
        .iter()
        .map(|c| {
            if !c.is_object() {
                unparsed.note(what, "a tool call is not a JSON object", || {
                    place.to_string()
                });
                return ToolCall {
                    input: c.clone(),
                    ..ToolCall::default()
                };
            }
            let f = c.get("function").unwrap_or(c);
            let input = match f.get("arguments") {
                Some(Value::String(s)) => {
                    kit::call_arguments(s, what, unparsed, || place.to_string())
                }
                Some(a) => a.clone(),
                None => Value::Null,
            };
            ToolCall {
                tool_call_id: kit::str_any(c, &["id", "call_id"])
                    .unwrap_or("")
                    .to_string(),
                tool_name: kit::str_field(f, "name").unwrap_or("").to_string(),
                input,
                ..ToolCall::default()
            }
        })
        .collect()
}

/// Visible reasoning, else the summaries of Codex reasoning items, else the sealed marker
/// when only encrypted reasoning was kept.
fn thinking(m: &Msg) -> Option<String> {
    if let Some(r) = m.reasoning.as_deref().filter(|r| *r != "None") {
        return Some(r.to_string());
    }
    let items = m.reasoning_items.ok().and_then(Value::as_array)?;
    let summaries: Vec<&str> = items
        .iter()
        .flat_map(|i| {
            i.get("summary")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(|s| kit::str_field(s, "text"))
        .collect();
    if !summaries.is_empty() {
        Some(summaries.join("\n\n"))
    } else if items.iter().any(|i| i.get("encrypted_content").is_some()) {
        Some(model::SEALED_THINKING.to_string())
    } else {
        None
    }
}

/// Each session's system prompt by session id: the row's own `system_prompt` (schemas
/// before content addressing), else the `system_prompts` row its `system_prompt_hash`
/// names; `Err(hash)` when that row is missing.
type Prompts = HashMap<String, Result<String, String>>;

/// The system prompts of a family's sessions, read in the load's transaction. Hermes writes
/// a session's prompt once, when its first turn starts, before any message row, so the
/// version (the row with `system_prompt_hash`, and the messages) moves with it; the text
/// itself is read here only, never hashed for the version.
fn system_prompts(c: &Connection, t: &Tables, fam: &Family<Rows>) -> rusqlite::Result<Prompts> {
    let mut ids: Vec<(String, Option<String>)> = Vec::new();
    fam.each(&mut |f| {
        if let Some(r) = f.row.first() {
            if let Some(id) = r.get("id").text() {
                ids.push((id, r.get("system_prompt_hash").non_empty()));
            }
        }
    });
    let mut out = Prompts::new();
    for (id, hash) in ids {
        let inline = Rows::fetch(c, &t.sessions, &["system_prompt"], "WHERE id = ?1", [&id])?;
        if let Some(p) = inline
            .first()
            .and_then(|r| r.get("system_prompt").non_empty())
        {
            out.insert(id, Ok(p));
            continue;
        }
        let Some(hash) = hash else { continue };
        let stored = if t.system_prompts.has("hash") {
            Rows::fetch(
                c,
                &t.system_prompts,
                &["prompt"],
                "WHERE hash = ?1",
                [&hash],
            )?
        } else {
            Rows::default()
        };
        match stored.first().and_then(|r| r.get("prompt").non_empty()) {
            Some(p) => out.insert(id, Ok(p)),
            None => out.insert(id, Err(hash)),
        };
    }
    Ok(out)
}

/// A session's model as Hermes stored it, or none: some sessions (scheduled jobs run
/// without a model of their own) hold the text `null` where no model was known, and a
/// Python `None` written as text reads `None`. Neither names a model.
fn model_name(m: Option<String>) -> Option<String> {
    m.filter(|m| !matches!(m.trim(), "" | "null" | "None"))
}

/// The conversation rooted at `fam`: its own rows, then each continuation's (stitched),
/// then its subagents nested.
fn build(fam: &Family<Rows>, id: &str, source: &Source, prompts: &Prompts) -> Session {
    let head = fam.row.first();
    let mut out = Builder {
        b: SessionBuilder::new(Agent::Hermes, id),
        model: head.and_then(|r| model_name(r.get("model").non_empty())),
        what: "messages rows",
    };
    out.b.s.source = source.clone();
    // A session with no reply yet (or none kept) still ran on its row's model.
    out.b.s.set_model = out.model.clone();
    if let Some(r) = head {
        out.b.s.title = r
            .get("title")
            .non_empty()
            .or_else(|| r.get("display_name").non_empty());
        out.b.s.created_at = r.get("started_at").time();
        out.b.s.cwd = r.get("cwd").non_empty();
        if let Some(src) = r.get("source").non_empty() {
            out.b.s.tags.push(src);
        }
        // Read for lineage only (nothing of it is shown), so a broken one costs the warning.
        if let Json::Bad { error, .. } = Json::cell(r.get("model_config")) {
            out.b
                .unparsed
                .note("sessions rows", "model_config is not JSON", || {
                    format!("session {id}: {error}; its lineage markers are unknown")
                });
        }
    } else {
        out.b.warn("session row not found (deleted while reading?)");
    }
    let mut usage = TokenUsage::default();
    let (mut actual, mut estimated) = (None::<f64>, None::<f64>);
    let mut segments: Vec<&Family<Rows>> = Vec::new();
    let mut stack = vec![fam];
    while let Some(f) = stack.pop() {
        segments.push(f);
        stack.extend(f.continuations.iter().rev());
    }
    let mut branches: Vec<Branch> = Vec::new();
    let mut shown_prompt: Option<&str> = None;
    for (i, seg) in segments.iter().enumerate() {
        let r = seg.row.first();
        let sid = r.and_then(|r| r.get("id").text()).unwrap_or_default();
        let ts = r.and_then(|r| r.get("started_at").time());
        if i > 0 {
            out.b.event(
                format!("[continued after compression as session {sid}]"),
                ts,
            );
        }
        // Each segment's system prompt, where it differs from the one already shown (a
        // continuation rebuilds it after the compression).
        match prompts.get(&sid) {
            Some(Ok(p)) if shown_prompt != Some(p.as_str()) => {
                out.b.context("system prompt", p.clone(), ts);
                shown_prompt = Some(p);
            }
            Some(Err(hash)) => out.b.warn(format!(
                "session {sid}: its system prompt {hash} is not in `system_prompts`"
            )),
            _ => {}
        }
        if let Some(r) = r {
            let n = |k: &str| r.get(k).int().unwrap_or(0).max(0) as u64;
            usage.add(&TokenUsage {
                input_tokens: n("input_tokens"),
                output_tokens: n("output_tokens"),
                thinking_tokens: n("reasoning_tokens"),
                cached_tokens: n("cache_read_tokens"),
                cache_write_tokens: n("cache_write_tokens"),
            });
            if let Some(a) = r.get("actual_cost_usd").real() {
                *actual.get_or_insert(0.0) += a;
            }
            if let Some(e) = r.get("estimated_cost_usd").real() {
                *estimated.get_or_insert(0.0) += e;
            }
            if let Some(t) = r
                .get("last_activity_at")
                .time()
                .or(r.get("ended_at").time())
            {
                out.b.s.updated_at = out.b.s.updated_at.max(Some(t));
            }
        }
        let msgs: Vec<Msg> = seg.data.iter().map(Msg::of_row).collect();
        add_messages(&mut out, &msgs, &mut branches);
    }
    let parent = model::unified_id(Agent::Hermes, id);
    let mut taken = HashSet::new();
    for sub in segments.iter().flat_map(|seg| &seg.subagents) {
        let sid = sub
            .row
            .first()
            .and_then(|r| r.get("id").text())
            .unwrap_or_default();
        let mut child = build(sub, &sid, source, prompts);
        child.parent = Some(parent.clone());
        out.b.s.subagents.push(Subagent {
            name: kit::unique_name(&mut taken, &names::escape(&sid)),
            unified_id: None,
            description: child.title.clone(),
            tool_call_id: None,
            session: Some(Box::new(child)),
        });
    }
    if !usage.is_zero() {
        out.b.s.reported_usage = Some(usage);
    }
    out.b.s.reported_cost = match (actual, estimated) {
        (Some(a), _) => Some((a, false)),
        (None, Some(e)) => Some((e, true)),
        _ => None,
    };
    let mut s = out.b.finish();
    s.branches = branches;
    s
}

/// Visible rows go to the transcript; each run of inactive rows becomes a branch holding
/// the transcript so far plus the run.
fn add_messages(out: &mut Builder, msgs: &[Msg], branches: &mut Vec<Branch>) {
    let mut i = 0;
    while i < msgs.len() {
        if msgs[i].visible {
            Builder::row(&mut out.b, &msgs[i], &out.model, out.what);
            i += 1;
            continue;
        }
        let start = i;
        while i < msgs.len() && !msgs[i].visible {
            i += 1;
        }
        let mut side = SessionBuilder::new(Agent::Hermes, "");
        side.s.messages = out.b.s.messages.clone();
        for m in &msgs[start..i] {
            Builder::row(&mut side, m, &out.model, out.what);
        }
        out.b.unparsed.absorb(std::mem::take(&mut side.unparsed));
        let first = msgs[start].id.clone().unwrap_or_else(|| start.to_string());
        let mut taken: HashSet<String> = branches.iter().map(|b| b.name.clone()).collect();
        branches.push(Branch {
            name: kit::unique_name(&mut taken, &format!("rewound-{first}")),
            fork_point: out.b.s.messages.last().and_then(|m| m.native_id.clone()),
            leaf: msgs[i - 1].id.clone(),
            messages: side.s.messages,
        });
    }
}

// ---------------------------------------------------------------------------------------
// The gateway's legacy JSONL

/// Gateway timestamps are naive local times (`2026-04-22T00:54:48.399331`).
fn local_time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let s = v?.as_str()?;
    if let Some(t) = kit::parse_rfc3339(s) {
        return Some(t);
    }
    let n = NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").ok()?;
    Local
        .from_local_datetime(&n)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
}

/// The messages a gateway transcript holds: its lines but the `session_meta` one, counted
/// without parsing (listing stays cheap). 0 for a file too large to read.
fn gateway_messages(path: &Path) -> usize {
    match std::fs::metadata(path) {
        Ok(m) if m.len() <= MAX_JSONL => {}
        _ => return 0,
    }
    let Ok(bytes) = kit::read_file(path) else {
        return 0;
    };
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty() && !contains(l, b"\"session_meta\""))
        .count()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn load_jsonl(path: &Path, id: &str) -> Session {
    let mut out = Builder {
        b: SessionBuilder::new(Agent::Hermes, id),
        model: None,
        what: "lines",
    };
    out.b.s.source = Source {
        paths: vec![path.to_path_buf()],
        format: "hermes-gateway-jsonl".into(),
        format_version: None,
    };
    let text = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_JSONL => {
            out.b
                .warn(format!("{} bytes, too large to parse, skipped", m.len()));
            return out.b.finish();
        }
        _ => match super::kit::read_file(path) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => {
                out.b.warn(format!("cannot read: {e}"));
                return out.b.finish();
            }
        },
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut branches = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                if n + 1 == lines.len() && !text.ends_with('\n') {
                    // Most likely still being written: it shows once it is whole.
                    out.b.warn(format!(
                        "line {}: partial last line (still being written?)",
                        n + 1
                    ));
                } else {
                    out.b.unparsed(
                        "lines",
                        "invalid JSON",
                        || format!("line {}: {e}", n + 1),
                        "line",
                        line,
                        None,
                    );
                }
                continue;
            }
        };
        let role = kit::str_field(&v, "role").unwrap_or("");
        if role == "session_meta" {
            out.model = model_name(kit::str_field(&v, "model").map(str::to_string));
            if let Some(p) = kit::str_field(&v, "platform") {
                out.b.s.tags.push(p.to_string());
            }
            out.b.s.created_at = local_time(v.get("timestamp"));
            continue;
        }
        let m = Msg {
            id: Some((n + 1).to_string()),
            place: format!("line {}", n + 1),
            role: role.to_string(),
            content: kit::str_field(&v, "content").unwrap_or("").to_string(),
            tool_call_id: kit::str_field(&v, "tool_call_id").map(str::to_string),
            tool_calls: Json::value(v.get("tool_calls")),
            tool_name: kit::str_field(&v, "tool_name").map(str::to_string),
            ts: local_time(v.get("timestamp")),
            reasoning: kit::str_any(&v, &["reasoning", "reasoning_content"])
                .filter(|r| !r.is_empty())
                .map(str::to_string),
            reasoning_items: Json::value(v.get("codex_reasoning_items")),
            visible: true,
            carrier: false,
        };
        add_messages(&mut out, std::slice::from_ref(&m), &mut branches);
    }
    out.b.finish()
}

#[cfg(test)]
mod tests;
