//! Grok CLI (superagent-ai/grok-cli): every session in one SQLite database,
//! `~/.grok/grok.db`.
//!
//! Learnt from Grok CLI's own source, github.com/superagent-ai/grok-cli at commit
//! `fb97af83f06dca873281d60168430f06c8de6324`: `src/storage/db.ts` (the path, WAL),
//! `src/storage/migrations.ts` (the schema, written out in `fixtures/schema/grok-v3.sql`),
//! `src/storage/transcript.ts` (`appendMessages`: one `messages` row per AI SDK
//! `ModelMessage`, `message_json` its JSON; `appendCompaction`), `src/storage/transcript-view.ts`
//! (a compaction keeps every row and puts its summary before `first_kept_seq`),
//! `src/storage/tool-results.ts` (tool outputs), `src/storage/usage.ts` and
//! `src/agent/agent.ts` (`recordUsage`: one `usage_events` row per model call). Builds before
//! commit `15cb446` ("add SQLite-backed session persistence", March 2026) kept the chat in
//! memory only: there is nothing of theirs to read, and `doctor` says so.
//!
//! **Where.** `~/.grok/grok.db` (Grok CLI reads no variable for it); a `--store` path may be
//! the database or the `.grok` directory. Beside it `user-settings.json` holds the API key
//! and is never read; `delegations/` (background job records) and `generated-media/` are
//! not sessions. Only `sessions`, `messages`, `compactions` and `usage_events` are selected
//! from: `tool_calls` and `tool_results` repeat what the messages hold, `workspaces` the
//! sessions' directories.
//!
//! **Messages.** `message_json` is `{role, content}`: `content` a string or a list of parts,
//! `text`, `reasoning`, `tool-call {toolCallId, toolName, input}`, `tool-result {toolCallId,
//! toolName, output {type, value}}` (in `tool` messages), `image` and `file`
//! (placeholders). A `json` output holding Grok's `{success, output, error}` shows its
//! output or error; any other output its JSON. A row that is not a message is shown raw.
//!
//! **Usage** is the sum of the session's `usage_events` (each a model call: replies,
//! titles, recaps, sub-agent tasks), `cost_micros` being Grok's own estimate from its price
//! table (marked estimated).

use super::kit::{self, SessionBuilder};
use super::rows::{RowFormat, RowStore};
use super::sqlite::{self, Cell, Rows, Table};
use super::{Env, Root};
use crate::model::{Agent, Message, MessageKind, Role, Session, Source, TokenUsage, ToolCall};
use rusqlite::Connection;
use serde_json::Value;
use std::path::Path;

/// `~/.grok/grok.db`.
pub fn candidates(env: &Env) -> Vec<Root> {
    vec![Root::new(
        Agent::Grok,
        env.home.join(".grok/grok.db"),
        "default",
    )]
}

/// Grok CLI's sessions: one `sessions` row each, in `grok.db`.
pub type GrokStore = RowStore<Grok>;

/// The format [`GrokStore`] reads.
pub struct Grok;

impl RowFormat for Grok {
    const AGENT: Agent = Agent::Grok;
    const DB_FILE: &'static str = "grok.db";
    type Probe = Tables;
    type Raw = Raw;

    fn list(conn: &Connection) -> rusqlite::Result<Vec<String>> {
        list_db(conn)
    }

    fn probe(conn: &Connection) -> rusqlite::Result<Tables> {
        Tables::probe(conn)
    }

    fn version(conn: &Connection, probe: &Tables, key: &str) -> rusqlite::Result<u64> {
        session_version(conn, probe, key)
    }

    fn fetch(conn: &Connection, key: &str) -> rusqlite::Result<Raw> {
        fetch(conn, &Tables::probe(conn)?, key)
    }

    fn build(raw: Raw, db: &Path, key: &str) -> Session {
        build(&raw, db, key)
    }

    fn unread(db: &Path, key: &str) -> Session {
        let mut s = Session::new(Agent::Grok, key);
        s.source = source(db, None);
        s
    }
}

fn source(db: &Path, version: Option<i64>) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "grok-sqlite".into(),
        format_version: version.map(|v| v.to_string()),
    }
}

/// Every session id, oldest first.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Table::probe(conn, "sessions")?;
    if !t.has("id") || !Table::probe(conn, "messages")?.has("message_json") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `sessions` and `messages` tables: not a Grok CLI database".into(),
        ));
    }
    let order = if t.has("created_at") {
        "ORDER BY created_at, rowid"
    } else {
        "ORDER BY rowid"
    };
    let rows = Rows::fetch(conn, &t, &["id"], order, [])?;
    Ok(rows.iter().filter_map(|r| r.get("id").text()).collect())
}

pub struct Tables {
    sessions: Table,
    messages: Table,
    compactions: Table,
    usage: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            sessions: Table::probe(c, "sessions")?,
            messages: Table::probe(c, "messages")?,
            compactions: Table::probe(c, "compactions")?,
            usage: Table::probe(c, "usage_events")?,
        })
    }
}

const SESSION: [&str; 6] = [
    "title",
    "model",
    "cwd_at_start",
    "cwd_last",
    "created_at",
    "updated_at",
];
const MESSAGE: [&str; 3] = ["seq", "message_json", "created_at"];
const COMPACTION: [&str; 4] = ["first_kept_seq", "summary", "tokens_before", "created_at"];
const USAGE: [&str; 4] = ["model", "input_tokens", "output_tokens", "cost_micros"];

/// What one read transaction copies out for a session.
pub struct Raw {
    version: Option<i64>,
    session: Option<Rows>,
    messages: Rows,
    compactions: Rows,
    usage: Rows,
}

fn fetch(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Raw> {
    let version = c
        .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .ok();
    let by_session = |t: &Table, cols: &[&str], order: &str| {
        if t.has("session_id") {
            Rows::fetch(c, t, cols, &format!("WHERE session_id = ?1 {order}"), [id])
        } else {
            Rows::fetch(c, t, cols, "WHERE 0", [])
        }
    };
    let seq = if t.messages.has("seq") {
        "ORDER BY seq, rowid"
    } else {
        "ORDER BY rowid"
    };
    Ok(Raw {
        version,
        session: Some(Rows::fetch(
            c,
            &t.sessions,
            &SESSION,
            "WHERE id = ?1",
            [id],
        )?)
        .filter(|r| !r.is_empty()),
        messages: by_session(&t.messages, &MESSAGE, seq)?,
        compactions: by_session(&t.compactions, &COMPACTION, "ORDER BY rowid")?,
        usage: by_session(&t.usage, &USAGE, "ORDER BY rowid")?,
    })
}

/// A session's version: its row, then count, largest rowid and total length of its
/// messages, compactions and usage events (a reply streams in as new rows).
fn session_version(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<u64> {
    let mut all = vec![Rows::fetch(c, &t.sessions, &SESSION, "WHERE id = ?1", [id])?.rows];
    for (table, col) in [
        (&t.messages, "message_json"),
        (&t.compactions, "summary"),
        (&t.usage, "total_tokens"),
    ] {
        if table.has("session_id") && table.has(col) {
            let q = format!(
                "SELECT count(*), max(rowid), total(length({col})) FROM {} WHERE session_id = ?1",
                sqlite::quote(&table.name)
            );
            all.push(Rows::query(c, &q, vec![], [id])?.rows);
        }
    }
    Ok(sqlite::hash_version(all))
}

fn build(raw: &Raw, db: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Grok, id);
    b.s.source = source(db, raw.version);
    let mut model = None;
    match raw.session.as_ref().and_then(Rows::first) {
        Some(row) => {
            b.s.title = row
                .get("title")
                .non_empty()
                .filter(|t| !t.trim().is_empty());
            b.s.cwd = row
                .get("cwd_at_start")
                .non_empty()
                .or(row.get("cwd_last").non_empty());
            b.s.created_at = row.get("created_at").time();
            b.s.updated_at = row.get("updated_at").time();
            model = row.get("model").non_empty();
        }
        None => b.warn("session row not found (deleted while reading?)"),
    }
    // Compactions, oldest first, each shown before the first message it kept.
    let mut compactions: Vec<(i64, Message)> = raw
        .compactions
        .iter()
        .map(|r| {
            let text = r.get("summary").text().unwrap_or_default();
            let m = Message {
                role: Role::System,
                kind: MessageKind::CompactionSummary,
                content: text,
                timestamp: r.get("created_at").time(),
                ..Message::default()
            };
            (r.get("first_kept_seq").int().unwrap_or(i64::MAX), m)
        })
        .collect();
    compactions.reverse();
    for row in raw.messages.iter() {
        let seq = row.get("seq").int().unwrap_or(0);
        while compactions.last().is_some_and(|(k, _)| *k <= seq) {
            if let Some((_, m)) = compactions.pop() {
                b.push(m);
            }
        }
        message(
            &mut b,
            row.get("message_json").str().unwrap_or(""),
            seq,
            row.get("created_at"),
            model.as_deref(),
        );
    }
    while let Some((_, m)) = compactions.pop() {
        b.push(m);
    }
    let mut usage = TokenUsage::default();
    let mut micros = 0i64;
    for r in raw.usage.iter() {
        usage.input_tokens += r.get("input_tokens").int().unwrap_or(0).max(0) as u64;
        usage.output_tokens += r.get("output_tokens").int().unwrap_or(0).max(0) as u64;
        micros += r.get("cost_micros").int().unwrap_or(0).max(0);
    }
    if !usage.is_zero() {
        b.s.reported_usage = Some(usage);
    }
    if micros > 0 {
        b.s.reported_cost = Some((micros as f64 / 1e6, true));
    }
    b.finish()
}

/// The text of a `content` part list (or string), tool calls and results set aside.
fn part_text(p: &Value) -> Option<String> {
    let s = |k: &str| kit::str_field(p, k).unwrap_or_default().to_string();
    match kit::str_field(p, "type").unwrap_or_default() {
        "text" => Some(s("text")),
        "image" => Some(kit::base64_placeholder(
            "image",
            kit::str_field(p, "mediaType"),
            None,
        )),
        "file" => {
            let ph = kit::base64_placeholder("attachment", kit::str_field(p, "mediaType"), None);
            Some(match kit::str_field(p, "filename") {
                Some(f) => format!("{ph} {f}"),
                None => ph,
            })
        }
        _ => None,
    }
}

/// A tool result's `output` as text, and whether it is an error.
fn output(o: &Value) -> (String, bool) {
    let kind = kit::str_field(o, "type").unwrap_or_default();
    let err = kind.starts_with("error");
    let v = o.get("value").unwrap_or(&Value::Null);
    match v {
        Value::String(s) => (s.clone(), err),
        Value::Object(_) if v.get("success").is_some() => {
            let ok = v.get("success").and_then(Value::as_bool).unwrap_or(true);
            let text = kit::str_field(v, if ok { "output" } else { "error" })
                .or(kit::str_field(v, "output"))
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            (text, err || !ok)
        }
        Value::Array(parts) if kind == "content" => {
            let t: Vec<String> = parts
                .iter()
                .map(|p| part_text(p).unwrap_or_else(|| p.to_string()))
                .collect();
            (t.join("\n"), err)
        }
        Value::Null => (o.to_string(), err),
        other => (other.to_string(), err),
    }
}

/// One `messages` row.
fn message(b: &mut SessionBuilder, json: &str, seq: i64, at: &Cell, model: Option<&str>) {
    let ts = at.time();
    let v: Value = match serde_json::from_str(json) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            let first = || format!("seq {seq}");
            return b.unparsed(
                "messages rows",
                "message_json is no object",
                first,
                "message",
                json,
                ts,
            );
        }
        Err(e) => {
            let first = || format!("seq {seq}: {e}");
            return b.unparsed(
                "messages rows",
                "message_json is not JSON",
                first,
                "message",
                json,
                ts,
            );
        }
    };
    let role = kit::str_field(&v, "role").unwrap_or_default();
    let parts: Vec<Value> = match v.get("content") {
        Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    let mut m = Message {
        timestamp: ts,
        native_id: Some(seq.to_string()),
        ..Message::default()
    };
    let mut texts = Vec::new();
    let mut thinking = Vec::new();
    let mut results = Vec::new();
    for p in &parts {
        if let Some(t) = part_text(p) {
            texts.push(t);
            continue;
        }
        match kit::str_field(p, "type").unwrap_or_default() {
            "reasoning" => thinking.push(kit::str_field(p, "text").unwrap_or_default().to_string()),
            "tool-call" => m.tool_calls.push(ToolCall {
                tool_call_id: kit::str_field(p, "toolCallId")
                    .unwrap_or_default()
                    .to_string(),
                tool_name: kit::str_field(p, "toolName")
                    .unwrap_or_default()
                    .to_string(),
                input: p.get("input").cloned().unwrap_or(Value::Null),
                ..ToolCall::default()
            }),
            "tool-result" => results.push(p),
            other => {
                let first = || format!("seq {seq}: `{other}`");
                b.unparsed(
                    "parts",
                    "unsupported type",
                    first,
                    "part",
                    &p.to_string(),
                    ts,
                );
            }
        }
    }
    m.content = texts.join("\n");
    if !thinking.is_empty() {
        m.thinking = Some(thinking.join("\n"));
    }
    match role {
        "user" => m.role = Role::User,
        "assistant" => {
            m.role = Role::Assistant;
            m.model = model.map(str::to_string);
        }
        "system" => {
            let summary = m.content.strip_prefix("[Context checkpoint summary]");
            if let Some(rest) = summary {
                m.content = rest.trim().to_string();
                m.kind = MessageKind::CompactionSummary;
            } else {
                m.kind = MessageKind::Context;
                m.label = Some("system".into());
            }
            m.role = Role::System;
        }
        "tool" => m.role = Role::Assistant,
        other => {
            let first = || format!("seq {seq}: `{other}`");
            return b.unparsed("messages rows", "unknown role", first, "message", json, ts);
        }
    }
    if !(m.content.is_empty() && m.thinking.is_none() && m.tool_calls.is_empty()) {
        b.push(m);
    }
    for p in results {
        let call = kit::str_field(p, "toolCallId").unwrap_or_default();
        let (text, err) = output(p.get("output").unwrap_or(&Value::Null));
        b.tool_result(call, kit::str_field(p, "toolName"), text, err, ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_outputs_read_as_grok_extracts_them() {
        let j = |s: &str| serde_json::from_str::<Value>(s).expect("json");
        assert_eq!(
            output(&j(r#"{"type":"text","value":"hi"}"#)),
            ("hi".into(), false)
        );
        assert_eq!(
            output(&j(r#"{"type":"error-text","value":"no"}"#)),
            ("no".into(), true)
        );
        assert_eq!(
            output(&j(
                r#"{"type":"json","value":{"success":false,"error":"bad"}}"#
            )),
            ("bad".into(), true)
        );
        assert_eq!(
            output(&j(
                r#"{"type":"json","value":{"success":true,"output":"ok"}}"#
            )),
            ("ok".into(), false)
        );
    }
}
