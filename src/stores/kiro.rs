//! Kiro CLI and its open-source predecessor Amazon Q Developer CLI: one conversation per
//! working directory, a JSON row of the `conversations` table of `data.sqlite3`.
//!
//! Learnt from the predecessor's source, github.com/aws/amazon-q-developer-cli at commit
//! `15cc8f3cd18c4272925ce1c7053268eedff1ea0a`: `crates/chat-cli/src/util/paths.rs`
//! (`database_path_static`: the local data directory's `amazon-q/data.sqlite3`),
//! `crates/chat-cli/src/database/mod.rs` and `database/sqlite_migrations/*.sql` (the
//! tables, written out in `fixtures/schema/kiro-q-007.sql`; `set_conversation_by_path`:
//! key = the directory, value = the conversation as JSON),
//! `crates/chat-cli/src/cli/chat/conversation.rs` (`ConversationState`, `HistoryEntry`),
//! `crates/chat-cli/src/cli/chat/message.rs` (`UserMessage`, `UserMessageContent`,
//! `AssistantMessage`, `AssistantToolUse`, `ToolUseResult`) and
//! `crates/chat-cli/src/cli/chat/parser.rs` (`RequestMetadata`).
//!
//! Kiro CLI itself is closed source. It keeps the same database as `kiro-cli/data.sqlite3`
//! (the path from cakel/kiro-cli-history `docs/how-it-works.md` @ `95901dec`), and its
//! newer formats, the `conversations_v2` table and `~/.kiro/sessions/cli/*.jsonl`, have no
//! source to learn them from: they are not read, and `doctor` says so.
//!
//! **Where.** `$XDG_DATA_HOME` (else `~/.local/share`) `/kiro-cli/data.sqlite3` and
//! `/amazon-q/data.sqlite3`, and the same under `~/Library/Application Support` (macOS).
//! Only `conversations` is selected from: `auth_kv` holds SSO tokens, `state` credentials
//! and settings, `history` shell commands; none is read.
//!
//! **A conversation** is the value's `history`: entries `{user, assistant,
//! request_metadata}` (an older build's `[user, assistant]` pairs too). A user message's
//! `content` is `{"Prompt": {prompt}}`, `{"ToolUseResults": {tool_use_results}}` or
//! `{"CancelledToolUses": {prompt, tool_use_results}}`; `additional_context` (context files)
//! is shown as context. A reply is `{"Response": {content}}` or `{"ToolUse": {content,
//! tool_uses}}`; results (`content` blocks `{"Text"}`/`{"Json"}`, `status` `Error` fails)
//! pair with their calls. `latest_summary` (from `/compact`) opens the conversation as its
//! compaction summary. The request metadata gives a reply its time and model. The agent
//! records no token usage on disk.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Reader, Rows, Table};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, MessageKind, Role, Session, Source, ToolCall};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The databases Kiro CLI and Amazon Q Developer CLI keep, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    let how = if env.var("XDG_DATA_HOME").is_some() {
        "XDG_DATA_HOME"
    } else {
        "default"
    };
    let mac = env.home.join("Library/Application Support");
    let mut out = Vec::new();
    for app in ["kiro-cli", "amazon-q"] {
        out.push(Root::new(
            Agent::Kiro,
            env.xdg_data_home().join(app).join("data.sqlite3"),
            how,
        ));
        out.push(Root::new(
            Agent::Kiro,
            mac.join(app).join("data.sqlite3"),
            "macOS",
        ));
    }
    out
}

pub struct KiroStore {
    base: Base,
    reader: Reader,
}

impl KiroStore {
    pub fn new(roots: Vec<Root>) -> KiroStore {
        KiroStore {
            base: Base::new(Agent::Kiro, roots),
            reader: Reader::new(),
        }
    }

    fn places(&self) -> Vec<(usize, PathBuf)> {
        sqlite::databases(&self.base.roots, "data.sqlite3")
    }
}

impl Store for KiroStore {
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
            for (key, id) in self.reader.list("kiro", &db, list_db).unwrap_or_default() {
                let mut l = sqlite::row_session(id.as_deref().unwrap_or(&key), &db, root);
                l.key = Some(key);
                out.push(l);
            }
        }
        out
    }

    /// The listing reads every row of each database: a database with its journals (a
    /// write lands in the `-wal` or the file itself) stands for all its conversations, and
    /// a root directory is stamped for its `data.sqlite3` appearing; a database gone since
    /// the store was opened leaves it without a glance ([`sqlite::glance`]).
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        sqlite::glance(&self.base.roots, &self.places())
    }

    fn load(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let key = listed.key.as_deref().unwrap_or(&listed.id);
        sqlite::load_session(
            &self.reader,
            db,
            key,
            sqlite::Access::InPlace,
            |c| fetch(c, key),
            |value| build(value, db, &listed.id, key),
            || {
                let mut s = Session::new(Agent::Kiro, &listed.id);
                s.source = source(db);
                s
            },
        )
    }

    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            |c| Table::probe(c, "conversations"),
            |c, _, key| Ok(sqlite::hash_version(fetch(c, key)?)),
        )
    }
}

fn source(db: &Path) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "kiro-q-conversations".into(),
        format_version: None,
    }
}

/// `(key, conversation_id)` of every row of `conversations`.
fn list_db(c: &Connection) -> rusqlite::Result<Vec<(String, Option<String>)>> {
    let t = Table::probe(c, "conversations")?;
    if !t.has("key") || !t.has("value") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `conversations` table: not a Kiro CLI or Amazon Q database".into(),
        ));
    }
    let rows = Rows::query(
        c,
        "SELECT key, CASE WHEN json_valid(value) THEN json_extract(value, '$.conversation_id') END \
         FROM conversations ORDER BY rowid",
        vec!["key".into(), "id".into()],
        [],
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.get("key").text()?, r.get("id").non_empty())))
        .collect())
}

/// The value of one row (`None` when the row is gone).
fn fetch(c: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    let t = Table::probe(c, "conversations")?;
    let rows = Rows::fetch(c, &t, &["value"], "WHERE key = ?1", [key])?;
    Ok(rows.first().and_then(|r| r.get("value").text()))
}

fn ms_time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    v.and_then(Value::as_i64)
        .filter(|ms| *ms > 0)
        .and_then(DateTime::from_timestamp_millis)
}

fn build(value: Option<String>, db: &Path, id: &str, key: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Kiro, id);
    b.s.source = source(db);
    b.s.cwd = Some(key.to_string());
    let Some(text) = value else {
        b.warn("conversation row not found (deleted while reading?)");
        return b.finish();
    };
    let v: Value = match serde_json::from_str(&text) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) | Err(_) => {
            let first = || format!("conversation {key}");
            b.unparsed(
                "conversations rows",
                "value is no JSON object",
                first,
                "conversation",
                &text,
                None,
            );
            return b.finish();
        }
    };
    if let Some(Value::Array(pair)) = v.get("latest_summary") {
        if let Some(summary) = pair.first().and_then(Value::as_str) {
            b.push(Message {
                role: Role::System,
                kind: MessageKind::CompactionSummary,
                content: summary.to_string(),
                timestamp: ms_time(
                    pair.get(1)
                        .and_then(|m| m.get("request_start_timestamp_ms")),
                ),
                ..Message::default()
            });
        }
    }
    let model = kit::str_at(&v, &["model_info", "model_id"]).or(kit::str_field(&v, "model"));
    let history = v.get("history").and_then(Value::as_array);
    for (i, entry) in history.into_iter().flatten().enumerate() {
        let (user, assistant, meta) = match entry {
            Value::Object(_) => (
                entry.get("user"),
                entry.get("assistant"),
                entry.get("request_metadata"),
            ),
            Value::Array(p) => (p.first(), p.get(1), None),
            _ => (None, None, None),
        };
        if user.is_none() && assistant.is_none() {
            let first = || format!("conversation {key}, entry {}", i + 1);
            b.unparsed(
                "history entries",
                "no user or assistant message",
                first,
                "entry",
                &entry.to_string(),
                None,
            );
            continue;
        }
        if let Some(u) = user {
            user_message(&mut b, u, key, i);
        }
        if let Some(a) = assistant {
            let m = meta.filter(|m| m.is_object());
            let at = ms_time(m.and_then(|m| m.get("stream_end_timestamp_ms")));
            let model = m.and_then(|m| kit::str_field(m, "model_id")).or(model);
            assistant_message(&mut b, a, at, model, key, i);
        }
    }
    b.finish()
}

fn user_message(b: &mut SessionBuilder, u: &Value, key: &str, i: usize) {
    let ts = kit::str_field(u, "timestamp").and_then(kit::parse_rfc3339);
    if let Some(ctx) = kit::str_field(u, "additional_context").filter(|c| !c.trim().is_empty()) {
        b.context("context files", ctx.to_string(), ts);
    }
    let images = u
        .get("images")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let content = u.get("content").unwrap_or(&Value::Null);
    let (kind, body) = match content {
        Value::Object(o) if o.len() == 1 => o
            .iter()
            .next()
            .map_or(("", &Value::Null), |(k, v)| (k.as_str(), v)),
        _ => ("", content),
    };
    let prompt = kit::str_field(body, "prompt").map(str::to_string);
    match kind {
        "Prompt" | "CancelledToolUses" | "ToolUseResults" => {}
        _ => {
            let first = || format!("conversation {key}, entry {}", i + 1);
            b.unparsed(
                "user messages",
                "unknown content",
                first,
                "user message",
                &content.to_string(),
                ts,
            );
            return;
        }
    }
    for r in body
        .get("tool_use_results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let call = kit::str_field(r, "tool_use_id").unwrap_or_default();
        let text: Vec<String> = r
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|blk| match (blk.get("Text"), blk.get("Json")) {
                (Some(Value::String(s)), _) => s.clone(),
                (_, Some(j)) => j.to_string(),
                _ => blk.to_string(),
            })
            .collect();
        let err = kit::str_field(r, "status") == Some("Error") || kind == "CancelledToolUses";
        b.tool_result(call, None, text.join("\n"), err, ts);
    }
    if let Some(mut p) = prompt.filter(|p| !p.is_empty()) {
        for _ in 0..images {
            p.push_str("\n[image]");
        }
        b.push(Message {
            role: Role::User,
            content: p,
            timestamp: ts,
            ..Message::default()
        });
    }
}

fn assistant_message(
    b: &mut SessionBuilder,
    a: &Value,
    at: Option<DateTime<Utc>>,
    model: Option<&str>,
    key: &str,
    i: usize,
) {
    let (kind, body) = match a {
        Value::Object(o) if o.len() == 1 => o
            .iter()
            .next()
            .map_or(("", &Value::Null), |(k, v)| (k.as_str(), v)),
        _ => ("", a),
    };
    if !matches!(kind, "Response" | "ToolUse") {
        let first = || format!("conversation {key}, entry {}", i + 1);
        b.unparsed(
            "assistant messages",
            "unknown kind",
            first,
            "assistant message",
            &a.to_string(),
            at,
        );
        return;
    }
    let mut m = Message {
        role: Role::Assistant,
        content: kit::str_field(body, "content")
            .unwrap_or_default()
            .to_string(),
        timestamp: at,
        model: model.map(str::to_string),
        native_id: kit::str_field(body, "message_id").map(str::to_string),
        ..Message::default()
    };
    for t in body
        .get("tool_uses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.tool_calls.push(ToolCall {
            tool_call_id: kit::str_field(t, "id").unwrap_or_default().to_string(),
            tool_name: kit::str_any(t, &["orig_name", "name"])
                .unwrap_or_default()
                .to_string(),
            input: t
                .get("orig_args")
                .or(t.get("args"))
                .cloned()
                .unwrap_or(Value::Null),
            ..ToolCall::default()
        });
    }
    b.push(m);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database deleted since the store was opened would leave nothing stamped that could
    /// show it coming back: the store then has no glance, and is listed at every search.
    #[test]
    fn a_database_gone_since_opening_leaves_no_glance() {
        let dir = tempfile::tempdir().expect("tmp");
        let db = dir.path().join("data.sqlite3");
        Connection::open(&db)
            .and_then(|c| c.execute_batch("CREATE TABLE conversations (key TEXT, value TEXT);"))
            .expect("db");
        let store = KiroStore::new(vec![Root::new(Agent::Kiro, &db, "default")]);
        let g = store
            .glance(&[])
            .expect("a glance while the database is there");
        assert!(g.files.contains(&db), "{:?}", g.files);
        std::fs::remove_file(&db).expect("rm");
        assert!(store.glance(&[]).is_none());
    }
}
