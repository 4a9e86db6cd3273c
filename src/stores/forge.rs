//! ForgeCode (antinomyhq/forge, the `forge` terminal agent): every conversation a row of one
//! SQLite database, `~/forge/.forge.db` or `~/.forge/.forge.db`.
//!
//! Learnt from ForgeCode's own source, github.com/antinomyhq/forge at commit
//! `54cecac14984728f9a019974aa23c7617b103268`: `crates/forge_repo/src/database/migrations/*/up.sql`
//! and `schema.rs` (the `conversations` table, written out in
//! `fixtures/schema/forge-2026-02-16.sql`), `crates/forge_repo/src/database/pool.rs` (WAL),
//! `crates/forge_repo/src/conversation/conversation_record.rs` (the JSON of the `context`
//! and `metrics` columns) and `conversation_repo.rs` (an upsert rewrites the whole row;
//! rows whose `context` is NULL are not listed), `crates/forge_domain/src/context.rs`,
//! `event.rs`, `tools/result.rs` (messages, prompts, tool outputs), `crates/forge_app/src/`
//! `user_prompt.rs`, `compact.rs`, `agent_executor.rs`, `hooks/` (what each kind of message
//! is), `crates/forge_domain/src/env.rs` and `crates/forge_config/src/reader.rs` (where).
//!
//! **Where.** `<base>/.forge.db`, the base being `$FORGE_CONFIG` when set, else `~/forge`
//! (older builds, and still preferred when it exists), else `~/.forge`; the same on macOS.
//! A `--store` path may be the database or its directory. Only `conversations` is
//! selected from: the `indexing_auth` table some builds kept beside it (the indexing
//! service's token) and `workspace` are never read, nor are `.credentials.json` (provider
//! API keys), `.config.json`, `.forge.toml`, `.mcp.json` or `.forge_history` in the base.
//!
//! **Messages.** `context` is `{conversation_id, initiator, messages, tools, ...}`; each
//! message `{message: {text | tool | image}, usage}` (older rows: the message alone).
//! `text` is `{role, content, raw_content, tool_calls, model, reasoning_details, droppable}`:
//! a `System` text is the system prompt (context; its `<current_working_directory>` is the
//! session's cwd), an `Assistant` text a reply (reasoning from `reasoning_details`, tool
//! calls `{name, call_id, arguments}`), a `User` text with `raw_content` a prompt (what was
//! typed, `{"Text": …}`, or a command, `{"Command": {name, parameters}}`; the text as the
//! agent's template rendered it follows as context), a `User` text starting with the
//! summary frame the compaction summary, and other `User` texts (attachments, reminders,
//! piped input, marked `droppable` or wrapped in `<system_reminder>`) context. `tool` is
//! `{name, call_id, output: {is_error, values}}`, values `text`, `aI` (a sub-agent's answer
//! and its conversation id: the child is linked as a subagent), `image`, `empty` and the
//! legacy `markdown`, `fileDiff`, `pair`. A compaction replaces messages in the stored
//! context, so the transcript changes from the first compacted message on, as the agent's
//! own view does. `tools`, `tool_choice` and the sampling settings are request settings,
//! not shown.
//!
//! **Usage** is each message's `usage` (`prompt_tokens` including cached ones, as counts
//! `{actual | approx: n}`), with the provider's `cost` where it reported one; a compaction
//! summary carries the usage of the messages it replaced, so nothing is lost or counted
//! twice. `metrics` (files changed and read) is shown as `metrics.json`.

use super::kit::{self, SessionBuilder};
use super::rows::{RowFormat, RowStore};
use super::sqlite::{self, Rows, Table};
use super::{Env, Root};
use crate::model::{
    self, Agent, Message, MessageKind, Role, Session, Source, Subagent, TokenUsage, ToolCall,
    SEALED_THINKING,
};
use rusqlite::Connection;
use serde_json::Value;
use std::path::Path;

const AGENT: Agent = Agent::Forge;
/// The database's file name in the base directory.
const DB_NAME: &str = ".forge.db";
/// How every compaction summary ForgeCode has written starts
/// (`templates/forge-partial-summary-frame.md`, all its versions).
const SUMMARY_FRAME: &str = "Use the following summary";
/// The extra session file holding the `metrics` column.
pub const METRICS_FILE: &str = "metrics.json";

/// `$FORGE_CONFIG/.forge.db`, else `~/forge/.forge.db` and `~/.forge/.forge.db`.
pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        AGENT,
        &kit::Places {
            env: &[("FORGE_CONFIG", DB_NAME)],
            defaults: &["forge/.forge.db", ".forge/.forge.db"],
            spec: &[],
        },
    )
}

/// ForgeCode's conversations: one `conversations` row each, in `.forge.db`.
pub type ForgeStore = RowStore<Forge>;

/// The format [`ForgeStore`] reads.
pub struct Forge;

impl RowFormat for Forge {
    const AGENT: Agent = Agent::Forge;
    const DB_FILE: &'static str = DB_NAME;
    type Probe = Table;
    type Raw = Raw;

    fn list(conn: &Connection) -> rusqlite::Result<Vec<String>> {
        list_db(conn)
    }

    fn probe(conn: &Connection) -> rusqlite::Result<Table> {
        Table::probe(conn, "conversations")
    }

    fn version(conn: &Connection, probe: &Table, key: &str) -> rusqlite::Result<u64> {
        session_version(conn, probe, key)
    }

    fn fetch(conn: &Connection, key: &str) -> rusqlite::Result<Raw> {
        fetch(conn, key)
    }

    fn build(raw: Raw, db: &Path, key: &str) -> Session {
        build(&raw, db, key)
    }

    fn unread(db: &Path, key: &str) -> Session {
        let mut s = Session::new(Agent::Forge, key);
        s.source = source(db);
        s
    }
}

fn source(db: &Path) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "forge-sqlite".into(),
        format_version: None,
    }
}

/// Every conversation with a context (ForgeCode lists no other), oldest first.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Table::probe(conn, "conversations")?;
    if !t.has("conversation_id") || !t.has("context") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `conversations` table with a `context` column: not a ForgeCode database".into(),
        ));
    }
    let order = if t.has("created_at") {
        "WHERE context IS NOT NULL ORDER BY created_at, rowid"
    } else {
        "WHERE context IS NOT NULL ORDER BY rowid"
    };
    let rows = Rows::fetch(conn, &t, &["conversation_id"], order, [])?;
    Ok(rows
        .iter()
        .filter_map(|r| r.get("conversation_id").text())
        .collect())
}

const ROW: [&str; 5] = ["title", "context", "created_at", "updated_at", "metrics"];

/// What one read transaction copies out for a conversation.
pub struct Raw {
    row: Option<Rows>,
    /// The conversation whose sub-agent tool result names this one, for a sub-agent's.
    parent: Option<String>,
}

fn fetch(c: &Connection, id: &str) -> rusqlite::Result<Raw> {
    let t = Table::probe(c, "conversations")?;
    let row = Rows::fetch(c, &t, &ROW, "WHERE conversation_id = ?1", [id])?;
    let spawned = row
        .first()
        .and_then(|r| r.get("context").str().map(is_spawned))
        .unwrap_or(false);
    let mut parent = None;
    if spawned && t.has("conversation_id") && t.has("context") {
        // A sub-agent's answer in its parent is `{"aI":{"value":…,"conversation_id":"<id>"}}`.
        let needle = format!("\"conversation_id\":{}", Value::from(id));
        let q = "SELECT conversation_id FROM conversations \
                 WHERE conversation_id != ?1 AND instr(context, ?2) > 0 ORDER BY rowid LIMIT 1";
        let rows = Rows::query(c, q, vec!["id".into()], [id, needle.as_str()])?;
        parent = rows.first().and_then(|r| r.get("id").text());
    }
    Ok(Raw {
        row: Some(row).filter(|r| !r.is_empty()),
        parent,
    })
}

/// A context a parent agent started (`initiator: "agent"`, `agent_executor.rs`).
fn is_spawned(context: &str) -> bool {
    context.contains("\"initiator\":\"agent\"")
}

/// A conversation's version: its row's title and times and the lengths of its JSON (an
/// upsert rewrites the row and moves `updated_at`).
fn session_version(c: &Connection, t: &Table, id: &str) -> rusqlite::Result<u64> {
    if !t.has("conversation_id") {
        return Ok(0);
    }
    let cols: Vec<String> = ["title", "created_at", "updated_at"]
        .iter()
        .map(|col| {
            if t.has(col) {
                sqlite::quote(col)
            } else {
                "NULL".into()
            }
        })
        .chain(["context", "metrics"].iter().map(|col| {
            if t.has(col) {
                format!("length({})", sqlite::quote(col))
            } else {
                "NULL".into()
            }
        }))
        .collect();
    let q = format!(
        "SELECT {} FROM conversations WHERE conversation_id = ?1",
        cols.join(", ")
    );
    Ok(sqlite::hash_version(Rows::query(c, &q, vec![], [id])?.rows))
}

fn build(raw: &Raw, db: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(AGENT, id);
    b.s.source = source(db);
    let Some(row) = raw.row.as_ref().and_then(Rows::first) else {
        b.warn("conversation row not found (deleted while reading?)");
        return b.finish();
    };
    b.s.title = row
        .get("title")
        .non_empty()
        .filter(|t| !t.trim().is_empty());
    b.s.created_at = row.get("created_at").time();
    b.s.updated_at = row.get("updated_at").time();
    if let Some(p) = &raw.parent {
        b.s.parent = Some(model::unified_id(AGENT, p));
    }
    let context = row.get("context").str().unwrap_or("");
    match serde_json::from_str::<Value>(context) {
        Ok(v @ Value::Object(_)) => {
            if kit::str_field(&v, "initiator") == Some("agent") {
                b.s.tags.push("subagent".into());
            }
            let empty = Vec::new();
            let msgs = v
                .get("messages")
                .and_then(Value::as_array)
                .unwrap_or(&empty);
            let mut r = Reading::default();
            for (i, e) in msgs.iter().enumerate() {
                entry(&mut b, &mut r, i, e);
            }
            if b.s.set_model.is_none() {
                b.s.set_model = r.prompt_model;
            }
        }
        Ok(_) => b.unparsed(
            "context columns",
            "context is no object",
            String::new,
            "context",
            context,
            None,
        ),
        Err(e) => b.unparsed(
            "context columns",
            "context is not JSON",
            || e.to_string(),
            "context",
            context,
            None,
        ),
    }
    if let Some(m) = row.get("metrics").non_empty() {
        let text = match serde_json::from_str::<Value>(&m) {
            Ok(v) => serde_json::to_string_pretty(&v).unwrap_or(m),
            Err(e) => {
                b.warn(format!("metrics is not JSON ({e}): kept as stored"));
                m
            }
        };
        b.s.extra_files.push((METRICS_FILE.into(), text));
    }
    b.finish()
}

/// What the messages of one context tell about later ones.
#[derive(Default)]
struct Reading {
    /// The model the first prompt was sent to: the session's model when no reply names one.
    prompt_model: Option<String>,
}

/// One element of `context.messages`.
fn entry(b: &mut SessionBuilder, r: &mut Reading, i: usize, e: &Value) {
    let first = || format!("message {i}");
    // `{message, usage}`, or (rows written before usage was kept) the message alone.
    let (msg, usage) = match e.get("message") {
        Some(m) => (m, e.get("usage")),
        None => (e, None),
    };
    let Some(obj) = msg.as_object().filter(|o| o.len() == 1) else {
        return b.unparsed(
            "context messages",
            "not a message",
            first,
            "message",
            &e.to_string(),
            None,
        );
    };
    let before = b.s.messages.len();
    for (kind, body) in obj {
        match kind.as_str() {
            "text" => text(b, r, i, body),
            "tool" => tool(b, body),
            "image" => {
                let url = kit::str_field(body, "url").unwrap_or_default();
                b.context("attachment", kit::data_url_placeholder(url), None);
            }
            other => {
                let first = || format!("message {i}: `{other}`");
                b.unparsed(
                    "context messages",
                    "unknown kind",
                    first,
                    "message",
                    &e.to_string(),
                    None,
                );
            }
        }
    }
    if let Some(u) = usage.filter(|u| u.is_object()) {
        let (tokens, cost) = usage_of(u);
        // On the message this entry became (its last, a reply's own).
        if b.s.messages.len() > before {
            if let Some(m) = b.last_mut() {
                m.token_usage = Some(tokens);
                m.cost = cost;
            }
        }
    }
}

/// A `TokenCount`: `{"actual": n}` or `{"approx": n}` (older rows capitalised), or a number.
fn count(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::Object(o)) => o
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("actual") || k.eq_ignore_ascii_case("approx"))
            .and_then(|(_, n)| n.as_u64())
            .unwrap_or(0),
        Some(n) => n.as_u64().unwrap_or(0),
        None => 0,
    }
}

/// `UsageRecord`: `prompt_tokens` counts the cached ones too.
fn usage_of(u: &Value) -> (TokenUsage, Option<f64>) {
    let prompt = count(u.get("prompt_tokens"));
    let cached = count(u.get("cached_tokens"));
    let tokens = TokenUsage {
        input_tokens: prompt.saturating_sub(cached),
        output_tokens: count(u.get("completion_tokens")),
        cached_tokens: cached,
        ..TokenUsage::default()
    };
    (tokens, u.get("cost").and_then(Value::as_f64))
}

/// A `text` message.
fn text(b: &mut SessionBuilder, r: &mut Reading, i: usize, t: &Value) {
    let content = kit::str_field(t, "content").unwrap_or_default().to_string();
    let model = kit::str_field(t, "model").map(str::to_string);
    match kit::str_field(t, "role").unwrap_or_default() {
        "System" => {
            if b.s.cwd.is_none() {
                b.s.cwd = tag(&content, "current_working_directory");
            }
            b.context("system prompt", content, None);
        }
        "Assistant" => {
            let mut m = Message {
                role: Role::Assistant,
                content,
                thinking: thinking(t.get("reasoning_details")),
                model,
                native_id: Some(i.to_string()),
                ..Message::default()
            };
            for c in t
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                m.tool_calls.push(ToolCall {
                    tool_call_id: kit::str_field(c, "call_id").unwrap_or_default().to_string(),
                    tool_name: kit::str_field(c, "name").unwrap_or_default().to_string(),
                    input: c.get("arguments").cloned().unwrap_or(Value::Null),
                    ..ToolCall::default()
                });
            }
            b.push(m);
        }
        "User" => user(b, r, i, t, content, model),
        other => {
            let first = || format!("message {i}: `{other}`");
            b.unparsed(
                "context messages",
                "unknown role",
                first,
                "message",
                &t.to_string(),
                None,
            );
        }
    }
}

/// A `User` text: a prompt, the compaction summary, or injected context.
fn user(
    b: &mut SessionBuilder,
    r: &mut Reading,
    i: usize,
    t: &Value,
    content: String,
    model: Option<String>,
) {
    let typed = match t.get("raw_content") {
        Some(Value::Object(o)) => o.iter().next().map(|(k, v)| match (k.as_str(), v) {
            ("Text", Value::String(s)) => s.clone(),
            ("Command", c) => {
                let mut s = format!("/{}", kit::str_field(c, "name").unwrap_or_default());
                for p in c
                    .get("parameters")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    s.push(' ');
                    s.push_str(p.as_str().unwrap_or_default());
                }
                s
            }
            _ => v.to_string(),
        }),
        _ => None,
    };
    if let Some(typed) = typed {
        if r.prompt_model.is_none() {
            r.prompt_model.clone_from(&model);
        }
        let sent = (content != typed).then_some(content);
        b.push(Message {
            role: Role::User,
            content: typed,
            native_id: Some(i.to_string()),
            ..Message::default()
        });
        if let Some(sent) = sent {
            b.context("prompt as sent", sent, None);
        }
        return;
    }
    if content.starts_with(SUMMARY_FRAME) {
        return b.push(Message {
            role: Role::System,
            kind: MessageKind::CompactionSummary,
            content,
            native_id: Some(i.to_string()),
            ..Message::default()
        });
    }
    let label = if content.starts_with("<system_reminder") {
        Some("reminder")
    } else if content.starts_with("<file_content") || content.starts_with("<directory_listing") {
        Some("attachment")
    } else if t.get("droppable").and_then(Value::as_bool) == Some(true) {
        Some("injected context")
    } else {
        None
    };
    match label {
        Some(l) => b.context(l, content, None),
        // A prompt stored before `raw_content` was kept (ForgeCode before October 2025).
        None => {
            if r.prompt_model.is_none() {
                r.prompt_model = model;
            }
            b.push(Message {
                role: Role::User,
                content,
                native_id: Some(i.to_string()),
                ..Message::default()
            });
        }
    }
}

/// The text of `<name>…</name>` in `s`, trimmed.
fn tag(s: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = s.find(&open)? + open.len();
    let end = s[start..].find(&format!("</{name}>"))? + start;
    Some(s[start..end].trim().to_string()).filter(|t| !t.is_empty())
}

/// `reasoning_details`: the texts, or the sealed marker when only signed or encrypted
/// parts were kept.
fn thinking(details: Option<&Value>) -> Option<String> {
    let parts = details?.as_array()?;
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| kit::str_field(p, "text"))
        .filter(|t| !t.is_empty())
        .collect();
    if !texts.is_empty() {
        Some(texts.join("\n"))
    } else if parts
        .iter()
        .any(|p| p.get("data").is_some() || p.get("signature").is_some())
    {
        Some(SEALED_THINKING.into())
    } else {
        None
    }
}

/// A `tool` message: a tool's result.
fn tool(b: &mut SessionBuilder, t: &Value) {
    let call = kit::str_field(t, "call_id").unwrap_or_default().to_string();
    let output = t.get("output").unwrap_or(&Value::Null);
    let is_error = output.get("is_error").and_then(Value::as_bool) == Some(true);
    let mut text = String::new();
    let mut children = Vec::new();
    for v in output
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let part = value_text(b, v, &mut children);
        if !part.is_empty() {
            kit::push_paragraph(&mut text, &part);
        }
    }
    b.tool_result(&call, kit::str_field(t, "name"), text, is_error, None);
    for child in children {
        let uid = model::unified_id(AGENT, &child);
        if b.s
            .subagents
            .iter()
            .any(|s| s.unified_id.as_ref() == Some(&uid))
        {
            continue;
        }
        b.s.subagents.push(Subagent {
            name: crate::names::escape(&child),
            unified_id: Some(uid),
            description: None,
            tool_call_id: Some(call.clone()).filter(|c| !c.is_empty()),
            session: None,
        });
    }
}

/// One `ToolValue` as text; a sub-agent's conversation id goes to `children`.
fn value_text(b: &mut SessionBuilder, v: &Value, children: &mut Vec<String>) -> String {
    if v.as_str() == Some("empty") {
        return String::new();
    }
    let Some((kind, body)) = v
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.iter().next())
    else {
        b.unparsed
            .note("tool values", "unknown kind", || v.to_string());
        return v.to_string();
    };
    match (kind.as_str(), body) {
        ("text" | "markdown", Value::String(s)) => s.clone(),
        ("aI", _) => {
            if let Some(c) = kit::str_field(body, "conversation_id") {
                children.push(c.to_string());
            }
            kit::str_field(body, "value")
                .unwrap_or_default()
                .to_string()
        }
        ("image", _) => kit::data_url_placeholder(kit::str_field(body, "url").unwrap_or_default()),
        ("fileDiff", _) => {
            let mut s = format!(
                "[file diff: {}]",
                kit::str_field(body, "path").unwrap_or_default()
            );
            kit::push_paragraph(&mut s, &body.to_string());
            s
        }
        ("pair", Value::Array(two)) => {
            let texts: Vec<String> = two.iter().map(|x| value_text(b, x, children)).collect();
            let mut s = String::new();
            for (n, t) in texts.iter().enumerate() {
                if !t.is_empty() && !texts[..n].contains(t) {
                    kit::push_paragraph(&mut s, t);
                }
            }
            s
        }
        _ => {
            b.unparsed
                .note("tool values", "unknown kind", || format!("`{kind}`"));
            v.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn token_counts_read_in_every_spelling() {
        assert_eq!(count(Some(&json!({"actual": 7}))), 7);
        assert_eq!(count(Some(&json!({"Approx": 9}))), 9);
        assert_eq!(count(Some(&json!(4))), 4);
        assert_eq!(count(None), 0);
        let (u, c) = usage_of(&json!({"prompt_tokens": {"actual": 100},
            "completion_tokens": {"actual": 20}, "total_tokens": {"actual": 120},
            "cached_tokens": {"actual": 60}, "cost": 0.5}));
        assert_eq!(
            (u.input_tokens, u.cached_tokens, u.output_tokens, c),
            (40, 60, 20, Some(0.5))
        );
    }

    #[test]
    fn the_cwd_is_the_system_prompts_working_directory() {
        let s = "<operating_system>linux</operating_system>\n<current_working_directory>/home/d/p</current_working_directory>";
        assert_eq!(
            tag(s, "current_working_directory").as_deref(),
            Some("/home/d/p")
        );
        assert_eq!(tag("no tag", "current_working_directory"), None);
    }

    #[test]
    fn sealed_reasoning_is_marked() {
        assert_eq!(
            thinking(Some(&json!([{"signature": "abc"}]))).as_deref(),
            Some(SEALED_THINKING)
        );
        assert_eq!(
            thinking(Some(&json!([{"text": "a"}, {"text": "b"}]))).as_deref(),
            Some("a\nb")
        );
    }
}
