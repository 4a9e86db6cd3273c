//! LLM (simonw/llm, the `llm` command-line tool): every prompt and reply logged to one
//! SQLite database, `logs.db` in LLM's user directory.
//!
//! Learnt from LLM's own source, github.com/simonw/llm at commit
//! `f3f4f29c6e5e623c3776cbf6455dda2345638214` (0.32, August 2026): `llm/__init__.py`
//! (`user_dir`), `llm/cli.py` (`logs_db_path`, `logs-off`, `keys.json`, how `llm -c` reads a
//! conversation back), `llm/migrations.py` (the schema, written out in
//! `fixtures/schema/llm-0.32.sql`), `llm/models.py` (`log_to_db`; in 0.31.1, commit
//! `e4dce4c6`, the last to write the legacy tables), `llm/logs.py` (`LogStore`: the
//! content-addressed message store 0.32 writes instead) and `llm/parts.py` (the parts).
//!
//! **Where.** `$LLM_USER_PATH/logs.db`, else click's app directory `io.datasette.llm`:
//! `$XDG_CONFIG_HOME/io.datasette.llm`, else `~/.config/io.datasette.llm` (Linux) and
//! `~/Library/Application Support/io.datasette.llm` (macOS). A `--store` path may be the
//! database or its directory. Beside it `keys.json` holds the API keys and is never read;
//! a `logs-off` file there only stops LLM logging (nothing to read); templates, aliases and
//! `embeddings.db` are not sessions.
//!
//! **Sessions.** LLM has written two layouts into the same file, and a database upgraded
//! to 0.32 keeps both:
//!
//! - *Legacy (up to 0.31).* A `conversations` row (`id`, `name`, `model`) is a session; its
//!   `responses` rows in `datetime_utc`/rowid order are its turns. Each gives the system
//!   prompt as context when it differs from the one before (its `system_fragments` with
//!   it), the `tool_results` sent with the prompt (paired by `tool_call_id`; a row with an
//!   `exception` is failed), the `prompt_fragments` as context labelled by their source,
//!   the prompt with its `prompt_attachments` as placeholders, and the reply: `response`,
//!   `reasoning`, the `tool_calls` it made, the model (`resolved_model`, else `model`) and
//!   `input_tokens`/`output_tokens`. A response with no conversation (possible in
//!   databases from before conversations were always written) is a session of its own,
//!   named by the response id.
//! - *Message store (0.32).* A `threads` row is a session: its messages are the chain from
//!   `tip_message_hash` back through `messages.parent_hash`, each message's `parts`
//!   (`text`, `reasoning`, `tool_call`, `tool_result` with its `exception`, `attachment`) in
//!   `position` order, text borrowed from `fragments` through `text_ref` resolved. A
//!   `system` message is context, a `user` one a prompt, an `assistant` one a reply, a
//!   `tool` one results. The thread's `turns` (one per model call) give the reply at their
//!   `tip_message_hash` its model and usage and the messages since the previous turn their
//!   time. `forked_from` links a fork to its thread. A thread keeps the id of the legacy
//!   conversation it continues and its chain holds that conversation's history: it is
//!   then the one session of that id, and the legacy responses give their usage, model
//!   and time to the chain's replies no turn covers, in order.
//!
//! **Not read.** `responses_fts` and `turn_search` (search indexes of the same text), `tools`,
//! `tool_responses`, `turn_tools`, `tool_instances` and `tool_instantiations` (the tools
//! offered and how they were configured), `schemas`, `options_json`, `prompt_json`,
//! `response_json` and `token_details` (the request and the provider's raw reply, whose
//! text and counts are shown), `duration_ms`, and the pre-2023 `logs` table LLM kept only
//! when it had rows.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Cell, Reader, Row, Rows, Table};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    self, Agent, Message, Role, Session, Source, TokenUsage, ToolCall, SEALED_THINKING,
};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const AGENT: Agent = Agent::Llm;
const DB_NAME: &str = "logs.db";
/// Key prefixes of a listed session: a conversation and/or thread id, or a lone response.
const CONVERSATION: &str = "c:";
const RESPONSE: &str = "r:";

/// `$LLM_USER_PATH/logs.db`, else the click app directory's `logs.db`.
pub fn candidates(env: &Env) -> Vec<Root> {
    let root = |p: PathBuf, how: &str| Root::new(AGENT, p.join(DB_NAME), how);
    if let Some(p) = env.path_var("LLM_USER_PATH") {
        return vec![root(p, "LLM_USER_PATH")];
    }
    if let Some(p) = env.path_var("XDG_CONFIG_HOME") {
        return vec![root(p.join("io.datasette.llm"), "XDG_CONFIG_HOME")];
    }
    vec![
        root(env.home.join(".config/io.datasette.llm"), "default"),
        root(
            env.home
                .join("Library/Application Support/io.datasette.llm"),
            "default (macOS)",
        ),
    ]
}

pub struct LlmStore {
    base: Base,
    reader: Reader,
}

impl LlmStore {
    pub fn new(roots: Vec<Root>) -> LlmStore {
        LlmStore {
            base: Base::new(AGENT, roots),
            reader: Reader::new(),
        }
    }

    fn places(&self) -> Vec<(usize, PathBuf)> {
        sqlite::databases(&self.base.roots, DB_NAME)
    }
}

impl Store for LlmStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let dbs = self.places();
        self.reader
            .problems(dbs.iter().map(|(_, db)| db.as_path()), list_db)
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (root, db) in self.places() {
            for key in self.reader.list("llm", &db, list_db).unwrap_or_default() {
                let id = key[2..].to_string();
                let mut l = sqlite::row_session(&id, &db, root);
                l.key = Some(key);
                out.push(l);
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let key = listed.key.as_deref().unwrap_or(&listed.id);
        let id = listed.id.as_str();
        sqlite::load_session(
            &self.reader,
            db,
            key,
            sqlite::Access::InPlace,
            |c| fetch(c, &Tables::probe(c)?, key),
            |raw| build(&raw, db, id),
            || {
                let mut s = Session::new(AGENT, id);
                s.source = source(db);
                s
            },
        )
    }

    /// The listing reads every database's `conversations`, `threads` and `responses`, and in
    /// a root that is a directory looks up `logs.db`: those directories and every database
    /// with its journals. A root gone since it was opened leaves the store without a glance.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        sqlite::glance(&self.base.roots, &self.places())
    }

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

fn source(db: &Path) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "llm-sqlite".into(),
        format_version: None,
    }
}

/// Every session key: conversations, then threads of no conversation, then responses of
/// no conversation, each oldest first.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Tables::probe(conn)?;
    if !t.conversations.has("id") && !t.threads.has("id") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `conversations` or `threads` table: not an LLM logs database".into(),
        ));
    }
    let mut out = Vec::new();
    let conv = Rows::fetch(conn, &t.conversations, &["id"], "ORDER BY rowid", [])?;
    out.extend(
        conv.iter()
            .filter_map(|r| r.get("id").text())
            .map(|id| format!("{CONVERSATION}{id}")),
    );
    if t.threads.has("id") {
        let tail = if t.conversations.has("id") {
            "WHERE id NOT IN (SELECT id FROM conversations) ORDER BY rowid"
        } else {
            "ORDER BY rowid"
        };
        let rows = Rows::fetch(conn, &t.threads, &["id"], tail, [])?;
        out.extend(
            rows.iter()
                .filter_map(|r| r.get("id").text())
                .map(|id| format!("{CONVERSATION}{id}")),
        );
    }
    if t.responses.has("id") && t.responses.has("conversation_id") {
        let tail = if t.conversations.has("id") {
            "WHERE conversation_id IS NULL OR conversation_id NOT IN (SELECT id FROM conversations) ORDER BY rowid"
        } else {
            "ORDER BY rowid"
        };
        let rows = Rows::fetch(conn, &t.responses, &["id"], tail, [])?;
        out.extend(
            rows.iter()
                .filter_map(|r| r.get("id").text())
                .map(|id| format!("{RESPONSE}{id}")),
        );
    }
    Ok(out)
}

struct Tables {
    conversations: Table,
    responses: Table,
    threads: Table,
    turns: Table,
    messages: Table,
    tool_calls: Table,
    tool_results: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            conversations: Table::probe(c, "conversations")?,
            responses: Table::probe(c, "responses")?,
            threads: Table::probe(c, "threads")?,
            turns: Table::probe(c, "turns")?,
            messages: Table::probe(c, "messages")?,
            tool_calls: Table::probe(c, "tool_calls")?,
            tool_results: Table::probe(c, "tool_results")?,
        })
    }
}

const RESPONSE_COLS: [&str; 12] = [
    "id",
    "model",
    "resolved_model",
    "prompt",
    "system",
    "response",
    "reasoning",
    "conversation_id",
    "datetime_utc",
    "input_tokens",
    "output_tokens",
    "rowid",
];

/// What one read transaction copies out for a session.
#[derive(Default)]
struct Raw {
    conversation: Option<Rows>,
    responses: Rows,
    /// `response_id, name, arguments, tool_call_id`, by response then id.
    tool_calls: Rows,
    /// `response_id, name, output, tool_call_id, exception`.
    tool_results: Rows,
    /// `response_id, kind ('system' | 'prompt'), source, content`.
    fragments: Rows,
    /// `response_id, type, path, url, size`.
    attachments: Rows,
    thread: Option<Rows>,
    /// The chain, oldest first: `hash, role, depth`.
    chain: Rows,
    /// `message_hash, position, type, text, payload, part_id`.
    parts: Rows,
    /// `part_id, type, path, url, size` of part attachments.
    part_attachments: Rows,
    /// `id, content` of the fragments the parts borrow.
    part_fragments: Rows,
    turns: Rows,
}

/// Longest chain read: a loop in `parent_hash` (a corrupt database) stops here.
const CHAIN_LIMIT: usize = 100_000;

/// The chain of a thread, walked from its tip; `depth` bounds a corrupt loop.
const CHAIN_CTE: &str = "WITH RECURSIVE chain(hash, parent_hash, role, depth) AS (
    SELECT hash, parent_hash, role, 0 FROM messages
     WHERE hash = (SELECT tip_message_hash FROM threads WHERE id = ?1)
    UNION ALL
    SELECT m.hash, m.parent_hash, m.role, c.depth + 1 FROM messages m
      JOIN chain c ON m.hash = c.parent_hash WHERE c.depth < 100000)";

fn has_all(c: &Connection, table: &str, cols: &[&str]) -> rusqlite::Result<bool> {
    let t = Table::probe(c, table)?;
    Ok(cols.iter().all(|col| t.has(col)))
}

fn fetch(c: &Connection, t: &Tables, key: &str) -> rusqlite::Result<Raw> {
    let mut raw = Raw::default();
    let (id, lone) = match key.strip_prefix(RESPONSE) {
        Some(id) => (id, true),
        None => (key.strip_prefix(CONVERSATION).unwrap_or(key), false),
    };
    // Legacy: the conversation's responses, and what hangs off them.
    let which = if lone {
        "WHERE id = ?1"
    } else {
        "WHERE conversation_id = ?1"
    };
    if t.responses.has("id") && (lone || t.responses.has("conversation_id")) {
        let order = if t.responses.has("datetime_utc") {
            "ORDER BY datetime_utc, rowid"
        } else {
            "ORDER BY rowid"
        };
        let cols: Vec<&str> = RESPONSE_COLS[..11].to_vec();
        let mut sel = t.responses.select_list(&cols);
        sel.push_str(", rowid");
        let q = format!("SELECT {sel} FROM responses {which} {order}");
        raw.responses = Rows::query(
            c,
            &q,
            RESPONSE_COLS.iter().map(|s| s.to_string()).collect(),
            [id],
        )?;
        let ids = format!("(SELECT id FROM responses {which})");
        if has_all(
            c,
            "tool_calls",
            &["response_id", "name", "arguments", "tool_call_id"],
        )? {
            let q = format!(
                "SELECT response_id, name, arguments, tool_call_id FROM tool_calls \
                 WHERE response_id IN {ids} ORDER BY rowid"
            );
            let names = ["response_id", "name", "arguments", "tool_call_id"];
            raw.tool_calls = Rows::query(c, &q, names.map(String::from).to_vec(), [id])?;
        }
        let tr = Table::probe(c, "tool_results")?;
        if tr.has("response_id") && tr.has("output") {
            let q = format!(
                "SELECT {} FROM tool_results WHERE response_id IN {ids} ORDER BY rowid",
                tr.select_list(&["response_id", "name", "output", "tool_call_id", "exception"])
            );
            let names = ["response_id", "name", "output", "tool_call_id", "exception"];
            raw.tool_results = Rows::query(c, &q, names.map(String::from).to_vec(), [id])?;
        }
        let names = ["response_id", "kind", "source", "content"];
        raw.fragments.names = names.map(String::from).to_vec();
        let f = Table::probe(c, "fragments")?;
        for kind in ["system", "prompt"] {
            let j = Table::probe(c, &format!("{kind}_fragments"))?;
            if !(j.has("response_id") && j.has("fragment_id") && f.has("id") && f.has("content")) {
                continue;
            }
            let src = if f.has("source") { "f.source" } else { "NULL" };
            let order = if j.has("order") {
                "j.\"order\", j.rowid"
            } else {
                "j.rowid"
            };
            let q = format!(
                "SELECT j.response_id, '{kind}', {src}, f.content FROM {kind}_fragments j \
                 JOIN fragments f ON f.id = j.fragment_id WHERE j.response_id IN {ids} \
                 ORDER BY {order}"
            );
            let rows = Rows::query(c, &q, raw.fragments.names.clone(), [id])?;
            raw.fragments.rows.extend(rows.rows);
        }
        if has_all(c, "prompt_attachments", &["response_id", "attachment_id"])?
            && has_all(c, "attachments", &["id", "type", "path", "url", "content"])?
        {
            let q = format!(
                "SELECT j.response_id, a.type, a.path, a.url, length(a.content) FROM prompt_attachments j \
                 JOIN attachments a ON a.id = j.attachment_id WHERE j.response_id IN {ids} \
                 ORDER BY j.rowid"
            );
            let names = ["response_id", "type", "path", "url", "size"];
            raw.attachments = Rows::query(c, &q, names.map(String::from).to_vec(), [id])?;
        }
    }
    if lone {
        return Ok(raw);
    }
    raw.conversation = Some(Rows::fetch(
        c,
        &t.conversations,
        &["name", "model"],
        "WHERE id = ?1",
        [id],
    )?)
    .filter(|r| !r.is_empty());
    // Message store: the thread, its chain, the parts and the turns.
    raw.thread = Some(Rows::fetch(
        c,
        &t.threads,
        &["name", "tip_message_hash", "forked_from", "datetime_utc"],
        "WHERE id = ?1",
        [id],
    )?)
    .filter(|r| !r.is_empty());
    if raw.thread.is_none() || !t.messages.has("parent_hash") {
        return Ok(raw);
    }
    raw.chain = Rows::query(
        c,
        &format!("{CHAIN_CTE} SELECT hash, role, depth FROM chain ORDER BY depth DESC"),
        ["hash", "role", "depth"].map(String::from).to_vec(),
        [id],
    )?;
    let parts = Table::probe(c, "parts")?;
    if parts.has("message_hash") {
        let q = format!(
            "{CHAIN_CTE} SELECT p.message_hash, p.position, {}, p.id FROM parts p \
             WHERE p.message_hash IN (SELECT hash FROM chain) ORDER BY p.message_hash, p.position",
            ["type", "text", "payload"]
                .map(|col| if parts.has(col) {
                    format!("p.{}", sqlite::quote(col))
                } else {
                    "NULL".into()
                })
                .join(", ")
        );
        let names = [
            "message_hash",
            "position",
            "type",
            "text",
            "payload",
            "part_id",
        ];
        raw.parts = Rows::query(c, &q, names.map(String::from).to_vec(), [id])?;
        let in_parts =
            "(SELECT p.id FROM parts p WHERE p.message_hash IN (SELECT hash FROM chain))";
        if has_all(c, "part_fragments", &["part_id", "fragment_id"])?
            && has_all(c, "fragments", &["id", "content"])?
        {
            let q = format!(
                "{CHAIN_CTE} SELECT DISTINCT f.id, f.content FROM part_fragments j \
                 JOIN fragments f ON f.id = j.fragment_id WHERE j.part_id IN {in_parts}"
            );
            raw.part_fragments =
                Rows::query(c, &q, ["id", "content"].map(String::from).to_vec(), [id])?;
        }
        if has_all(c, "part_attachments", &["part_id", "attachment_id"])?
            && has_all(c, "attachments", &["id", "type", "path", "url", "content"])?
        {
            let q = format!(
                "{CHAIN_CTE} SELECT j.part_id, a.type, a.path, a.url, length(a.content) \
                 FROM part_attachments j JOIN attachments a ON a.id = j.attachment_id \
                 WHERE j.part_id IN {in_parts} ORDER BY j.part_id, j.\"order\""
            );
            let names = ["part_id", "type", "path", "url", "size"];
            raw.part_attachments = Rows::query(c, &q, names.map(String::from).to_vec(), [id])?;
        }
    }
    if t.turns.has("thread_id") {
        raw.turns = Rows::fetch(
            c,
            &t.turns,
            &[
                "id",
                "tip_message_hash",
                "model",
                "resolved_model",
                "input_tokens",
                "output_tokens",
                "datetime_utc",
            ],
            if t.turns.has("datetime_utc") {
                "WHERE thread_id = ?1 ORDER BY datetime_utc, rowid"
            } else {
                "WHERE thread_id = ?1 ORDER BY rowid"
            },
            [id],
        )?;
    }
    Ok(raw)
}

/// A session's version: its responses (count, largest rowid, total length of prompts and
/// replies), its tool rows, its thread's tip and its turns.
fn session_version(c: &Connection, t: &Tables, key: &str) -> rusqlite::Result<u64> {
    let mut all = Vec::new();
    let (id, lone) = match key.strip_prefix(RESPONSE) {
        Some(id) => (id, true),
        None => (key.strip_prefix(CONVERSATION).unwrap_or(key), false),
    };
    let which = if lone {
        "id = ?1"
    } else {
        "conversation_id = ?1"
    };
    if t.responses.has("id")
        && t.responses.has("response")
        && (lone || t.responses.has("conversation_id"))
    {
        let q = format!(
            "SELECT count(*), max(rowid), total(length(response)), total(length(prompt)) \
             FROM responses WHERE {which}"
        );
        all.push(Rows::query(c, &q, vec![], [id])?.rows);
        // The tables probed once per database, not once per session and check.
        for (table, probed) in [
            ("tool_calls", &t.tool_calls),
            ("tool_results", &t.tool_results),
        ] {
            if probed.has("response_id") {
                let q = format!(
                    "SELECT count(*), max(rowid) FROM {table} \
                     WHERE response_id IN (SELECT id FROM responses WHERE {which})"
                );
                all.push(Rows::query(c, &q, vec![], [id])?.rows);
            }
        }
    }
    if !lone {
        all.push(
            Rows::fetch(
                c,
                &t.conversations,
                &["name", "model"],
                "WHERE id = ?1",
                [id],
            )?
            .rows,
        );
        all.push(
            Rows::fetch(
                c,
                &t.threads,
                &["name", "tip_message_hash", "forked_from"],
                "WHERE id = ?1",
                [id],
            )?
            .rows,
        );
        if t.turns.has("thread_id") {
            let q = "SELECT count(*), max(rowid) FROM turns WHERE thread_id = ?1";
            all.push(Rows::query(c, q, vec![], [id])?.rows);
        }
    }
    Ok(sqlite::hash_version(all))
}

fn usage(r: &Row<'_>) -> Option<TokenUsage> {
    let u = TokenUsage {
        input_tokens: r.get("input_tokens").int().unwrap_or(0).max(0) as u64,
        output_tokens: r.get("output_tokens").int().unwrap_or(0).max(0) as u64,
        ..TokenUsage::default()
    };
    (!u.is_zero()).then_some(u)
}

fn reply_model(r: &Row<'_>) -> Option<String> {
    r.get("resolved_model")
        .non_empty()
        .or(r.get("model").non_empty())
}

/// `[attachment: image/png, 3.0 KB] /path` for an attachment row.
fn attachment(r: &Row<'_>) -> String {
    let mime = r.get("type").non_empty();
    let kind = match mime.as_deref() {
        Some(m) if m.starts_with("image/") => "image",
        _ => "attachment",
    };
    let size = r.get("size").int().map(|n| n.max(0) as usize);
    let ph = model::placeholder(kind, mime.as_deref(), size);
    match r.get("path").non_empty().or(r.get("url").non_empty()) {
        Some(p) => format!("{ph} {p}"),
        None => ph,
    }
}

fn build(raw: &Raw, db: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(AGENT, id);
    b.s.source = source(db);
    if let Some(r) = raw.conversation.as_ref().and_then(Rows::first) {
        b.s.title = r.get("name").non_empty();
        b.s.set_model = r.get("model").non_empty();
    }
    if let Some(t) = raw.thread.as_ref().and_then(Rows::first) {
        if b.s.title.is_none() {
            b.s.title = t.get("name").non_empty();
        }
        b.s.created_at = t.get("datetime_utc").time();
        if let Some(f) = t.get("forked_from").non_empty() {
            b.s.forked_from = Some(model::unified_id(AGENT, &f));
        }
        thread(&mut b, raw);
    } else {
        legacy(&mut b, raw);
    }
    if b.s.set_model.is_none() {
        b.s.set_model = raw
            .turns
            .iter()
            .chain(raw.responses.iter())
            .find_map(|r| r.get("model").non_empty());
    }
    b.finish()
}

/// Rows grouped by their `response_id` (or `part_id`), in their order.
fn grouped<'a>(rows: &'a Rows, key: &str) -> HashMap<String, Vec<Row<'a>>> {
    let mut m: HashMap<String, Vec<Row<'a>>> = HashMap::new();
    for r in rows.iter() {
        if let Some(k) = r.get(key).text() {
            m.entry(k).or_default().push(r);
        }
    }
    m
}

/// The legacy `responses` of a conversation (or a lone response), in order.
fn legacy(b: &mut SessionBuilder, raw: &Raw) {
    let calls = grouped(&raw.tool_calls, "response_id");
    let results = grouped(&raw.tool_results, "response_id");
    let frags = grouped(&raw.fragments, "response_id");
    let atts = grouped(&raw.attachments, "response_id");
    let none = Vec::new();
    let mut last_system: Option<String> = None;
    for r in raw.responses.iter() {
        let rid = r.get("id").text().unwrap_or_default();
        let ts = r.get("datetime_utc").time();
        // The system prompt, with its fragments first, when it changed.
        let mut system = Vec::new();
        let mut prompt_frags = Vec::new();
        for f in frags.get(&rid).unwrap_or(&none) {
            let text = f.get("content").text().unwrap_or_default();
            if f.get("kind").str() == Some("system") {
                system.push(text);
            } else {
                prompt_frags.push((f.get("source").non_empty(), text));
            }
        }
        if let Some(s) = r.get("system").non_empty() {
            system.push(s);
        }
        let system = system.join("\n");
        if !system.is_empty() {
            if last_system.as_deref() != Some(system.as_str()) {
                b.context("system prompt", system.clone(), ts);
            }
            last_system = Some(system);
        }
        // The results of the previous reply's tool calls, sent with this prompt.
        for t in results.get(&rid).unwrap_or(&none) {
            let exception = t.get("exception").non_empty();
            let mut out = t.get("output").text().unwrap_or_default();
            if let Some(e) = &exception {
                kit::push_paragraph(&mut out, e);
            }
            let call = t.get("tool_call_id").text().unwrap_or_default();
            let name = t.get("name").text();
            b.tool_result(&call, name.as_deref(), out, exception.is_some(), ts);
        }
        for (src, text) in prompt_frags {
            let label = match src {
                Some(s) => format!("fragment {s}"),
                None => "fragment".into(),
            };
            b.context(&label, text, ts);
        }
        let mut prompt = r.get("prompt").text().unwrap_or_default();
        for a in atts.get(&rid).unwrap_or(&none) {
            kit::push_paragraph(&mut prompt, &attachment(a));
        }
        if !prompt.trim().is_empty() {
            b.push(Message {
                role: Role::User,
                content: prompt,
                timestamp: ts,
                native_id: Some(rid.clone()),
                ..Message::default()
            });
        }
        let mut m = Message {
            role: Role::Assistant,
            content: r.get("response").text().unwrap_or_default(),
            thinking: r.get("reasoning").non_empty(),
            timestamp: ts,
            model: reply_model(&r),
            token_usage: usage(&r),
            native_id: Some(rid.clone()),
            ..Message::default()
        };
        for c in calls.get(&rid).unwrap_or(&none) {
            let args = c.get("arguments").text().unwrap_or_default();
            let input = kit::call_arguments(&args, "tool_calls rows", &mut b.unparsed, || {
                format!("response {rid}")
            });
            m.tool_calls.push(ToolCall {
                tool_call_id: c.get("tool_call_id").text().unwrap_or_default(),
                tool_name: c.get("name").text().unwrap_or_default(),
                input,
                ..ToolCall::default()
            });
        }
        b.push(m);
    }
}

/// A part's JSON: the payload with `type` and `text` put back, `text_ref` resolved.
fn part_value(r: &Row<'_>, fragments: &HashMap<i64, String>) -> Result<Value, String> {
    let mut v = match r.get("payload").str() {
        None => Value::Object(Default::default()),
        Some(p) => match serde_json::from_str::<Value>(p) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return Err("payload is no object".into()),
            Err(e) => return Err(format!("payload is not JSON: {e}")),
        },
    };
    let Some(o) = v.as_object_mut() else {
        return Err("payload is no object".into());
    };
    if let Some(t) = r.get("type").text() {
        o.insert("type".into(), Value::String(t));
    }
    if let Cell::Text(t) = r.get("text") {
        o.insert("text".into(), Value::String(t.clone()));
    }
    if let Some(Value::Array(pieces)) = o.remove("text_ref") {
        let mut text = String::new();
        for p in &pieces {
            if let Some(l) = p.get("literal").and_then(Value::as_str) {
                text.push_str(l);
            } else if let Some(f) = p.get("fragment").and_then(Value::as_i64) {
                match fragments.get(&f) {
                    Some(c) => text.push_str(c),
                    None => return Err(format!("fragment {f} not found")),
                }
            }
        }
        o.insert("text".into(), Value::String(text));
    }
    Ok(v)
}

/// Where each message of a thread's chain gets its time, model and usage: the legacy
/// responses (oldest first) are the replies of the chain's start no turn ended at, the
/// messages up to each such reply take its time; then each turn's messages since the one
/// before take the turn's time, and the message it ended at its model and usage.
struct Provenance<'a> {
    times: Vec<Option<chrono::DateTime<chrono::Utc>>>,
    /// chain index -> the row (turn or legacy response) whose model and usage it carries.
    usage: HashMap<usize, Row<'a>>,
    stray: usize,
}

fn provenance<'a>(raw: &'a Raw, hashes: &[String]) -> Provenance<'a> {
    let mut p = Provenance {
        times: vec![None; hashes.len()],
        usage: HashMap::new(),
        stray: 0,
    };
    let mut tip_at: HashMap<&str, usize> = HashMap::new();
    for (i, h) in hashes.iter().enumerate() {
        tip_at.entry(h.as_str()).or_insert(i);
    }
    let turns: Vec<(usize, Row<'a>)> = raw
        .turns
        .iter()
        .filter_map(
            |t| match tip_at.get(t.get("tip_message_hash").str().unwrap_or("")) {
                Some(&i) => Some((i, t)),
                None => {
                    p.stray += 1;
                    None
                }
            },
        )
        .collect();
    let is_tip = |i: usize| turns.iter().any(|(j, _)| *j == i);
    let mut next = 0usize;
    let mut legacy = raw.responses.iter();
    for (i, row) in raw.chain.iter().enumerate() {
        if row.get("role").str() != Some("assistant") || is_tip(i) {
            continue;
        }
        let Some(r) = legacy.next() else { break };
        let at = r.get("datetime_utc").time();
        for t in &mut p.times[next..=i] {
            *t = at;
        }
        p.usage.insert(i, r);
        next = i + 1;
    }
    for (i, t) in turns {
        if i >= next {
            let at = t.get("datetime_utc").time();
            for x in &mut p.times[next..=i] {
                *x = at;
            }
            next = i + 1;
        }
        p.usage.insert(i, t);
    }
    p
}

/// A 0.32 thread: its chain of messages, with turns and legacy responses for usage.
fn thread(b: &mut SessionBuilder, raw: &Raw) {
    let fragments: HashMap<i64, String> = raw
        .part_fragments
        .iter()
        .filter_map(|r| Some((r.get("id").int()?, r.get("content").text()?)))
        .collect();
    let mut part_atts: HashMap<i64, Vec<String>> = HashMap::new();
    for r in raw.part_attachments.iter() {
        if let Some(p) = r.get("part_id").int() {
            part_atts.entry(p).or_default().push(attachment(&r));
        }
    }
    let parts = grouped(&raw.parts, "message_hash");
    let none = Vec::new();
    let hashes: Vec<String> = raw
        .chain
        .iter()
        .map(|r| r.get("hash").text().unwrap_or_default())
        .collect();
    let prov = provenance(raw, &hashes);
    if prov.stray > 0 {
        b.warn(format!(
            "{} turns of this thread end at a message not on its chain: their usage is not shown",
            prov.stray
        ));
    }
    if raw.chain.len() > CHAIN_LIMIT {
        b.warn(format!(
            "the message chain was cut at {CHAIN_LIMIT} messages (a loop in parent_hash?)"
        ));
    }
    for (i, row) in raw.chain.iter().enumerate() {
        let hash = hashes[i].as_str();
        let role = row.get("role").text().unwrap_or_default();
        let ts = prov.times[i];
        let mut m = Message {
            timestamp: ts,
            native_id: Some(hash.to_string()),
            ..Message::default()
        };
        if let Some(u) = prov.usage.get(&i) {
            m.model = reply_model(u);
            m.token_usage = usage(u);
        }
        let mut texts = Vec::new();
        let mut thinking = Vec::new();
        let mut results = Vec::new();
        for p in parts.get(hash).unwrap_or(&none) {
            let v = match part_value(p, &fragments) {
                Ok(v) => v,
                Err(e) => {
                    let text = p.get("payload").text().unwrap_or_default();
                    let first = || format!("message {hash}");
                    b.unparsed("parts rows", &e, first, "part", &text, ts);
                    continue;
                }
            };
            let s = |k: &str| kit::str_field(&v, k).unwrap_or_default().to_string();
            let atts = p.get("part_id").int().and_then(|id| part_atts.get(&id));
            match s("type").as_str() {
                "text" => texts.push(s("text")),
                "reasoning" if v.get("redacted") == Some(&Value::Bool(true)) => {
                    thinking.push(SEALED_THINKING.to_string())
                }
                "reasoning" => thinking.push(s("text")),
                "tool_call" => m.tool_calls.push(ToolCall {
                    tool_call_id: s("tool_call_id"),
                    tool_name: s("name"),
                    input: v.get("arguments").cloned().unwrap_or(Value::Null),
                    ..ToolCall::default()
                }),
                "tool_result" => {
                    let mut out = s("output");
                    for a in atts.into_iter().flatten() {
                        kit::push_paragraph(&mut out, a);
                    }
                    let exception = kit::str_field(&v, "exception");
                    if let Some(e) = exception {
                        kit::push_paragraph(&mut out, e);
                    }
                    results.push((s("tool_call_id"), s("name"), out, exception.is_some()));
                }
                "attachment" => match atts {
                    Some(a) => texts.extend(a.iter().cloned()),
                    None => texts.push(model::placeholder("attachment", None, None)),
                },
                other => {
                    let first = || format!("message {hash}: `{other}`");
                    let text = v.to_string();
                    b.unparsed("parts", "unsupported type", first, "part", &text, ts);
                }
            }
        }
        m.content = texts.join("\n");
        if !thinking.is_empty() {
            m.thinking = Some(thinking.join("\n"));
        }
        match role.as_str() {
            "system" if !m.content.is_empty() => b.context("system prompt", m.content, ts),
            "user" if !m.content.is_empty() || m.token_usage.is_some() => {
                m.role = Role::User;
                b.push(m);
            }
            "assistant" => {
                m.role = Role::Assistant;
                b.push(m);
            }
            "system" | "user" | "tool" => {}
            other => {
                let first = || format!("message {hash}: `{other}`");
                b.unparsed(
                    "messages rows",
                    "unknown role",
                    first,
                    "message",
                    &m.content,
                    ts,
                );
            }
        }
        for (call, name, out, err) in results {
            let name = Some(name.as_str()).filter(|n| !n.is_empty());
            b.tool_result(&call, name, out, err, ts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_dir_follows_llm_user_path_then_xdg_then_both_platforms() {
        let mut env = Env {
            home: PathBuf::from("/h"),
            vars: Default::default(),
        };
        let paths =
            |env: &Env| -> Vec<PathBuf> { candidates(env).into_iter().map(|r| r.path).collect() };
        assert_eq!(
            paths(&env),
            [
                PathBuf::from("/h/.config/io.datasette.llm/logs.db"),
                PathBuf::from("/h/Library/Application Support/io.datasette.llm/logs.db"),
            ]
        );
        env.vars.insert("XDG_CONFIG_HOME".into(), "/x".into());
        assert_eq!(paths(&env), [PathBuf::from("/x/io.datasette.llm/logs.db")]);
        env.vars.insert("LLM_USER_PATH".into(), "/u".into());
        assert_eq!(paths(&env), [PathBuf::from("/u/logs.db")]);
    }

    /// `threads.datetime_utc` is `str(datetime.now(timezone.utc))` (`llm/logs.py` `_now`),
    /// the responses' and turns' an `isoformat()`.
    #[test]
    fn both_time_forms_llm_writes_are_read() {
        for (text, want) in [
            (
                "2026-05-03 14:00:00.250000+00:00",
                "2026-05-03T14:00:00.250Z",
            ),
            (
                "2026-05-03T14:00:00.250000+00:00",
                "2026-05-03T14:00:00.250Z",
            ),
            ("2026-05-03T14:00:00.250000", "2026-05-03T14:00:00.250Z"),
        ] {
            let t = Cell::Text(text.into()).time().expect(text);
            assert_eq!(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true), want);
        }
    }

    #[test]
    fn text_refs_resolve_to_the_fragment_text() {
        let rows = Rows {
            names: ["type", "text", "payload"].map(String::from).to_vec(),
            rows: vec![vec![
                Cell::Text("text".into()),
                Cell::Null,
                Cell::Text(
                    r#"{"text_ref":[{"literal":"see "},{"fragment":3},{"literal":"!"}]}"#.into(),
                ),
            ]],
        };
        let frags = HashMap::from([(3, "the notes".to_string())]);
        let row = rows.first().expect("row");
        let v = part_value(&row, &frags).expect("value");
        assert_eq!(v["text"], "see the notes!");
        assert!(part_value(&row, &HashMap::new()).is_err());
    }
}
