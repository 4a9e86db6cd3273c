//! oterm (ggozad/oterm, a terminal client for Ollama and other providers, with MCP tools):
//! every chat a row of one SQLite database, `store.db` in oterm's data directory.
//!
//! Learnt from oterm's own source, github.com/ggozad/oterm at commit
//! `e090ffec6c275c53dfab311c8fb8bfd35e9e0ed1` (oterm 0.19.0): `src/oterm/utils.py`
//! (`get_default_data_dir`), `src/oterm/config.py` (`OTERM_DATA_DIR`), `src/oterm/store/store.py`
//! (the DDL, written out in `fixtures/schema/oterm-0.19.sql`, and every query),
//! `src/oterm/store/upgrades/` (the schema across versions), `src/oterm/types.py`
//! (`ChatModel`, `MessageModel`) and `src/oterm/app/widgets/chat.py` (what a turn saves).
//!
//! **Where.** `$OTERM_DATA_DIR/store.db` when the variable is set (it replaces the default);
//! else `$XDG_DATA_HOME/oterm/store.db`, else `~/.local/share/oterm/store.db` (oterm honours
//! `XDG_DATA_HOME` on macOS too, and otherwise uses `~/Library/Application
//! Support/oterm/store.db`, which is looked at as well). oterm also loads a `.env` file from
//! the directory it was started in, which may set `OTERM_DATA_DIR`: sessfs cannot know that
//! directory, and a `--store oterm=PATH` (the database or its directory) adds such a place.
//! Beside the database `config.json` holds oterm's settings and MCP server definitions (with
//! their environment, possibly keys): it is never opened.
//!
//! **What.** A `chat` row is one session: its `id` (an integer) is the id, `name` the title,
//! `model` the model of every reply (oterm cannot change a chat's model after creating it),
//! `system` the system prompt (shown as context), and `provider`, `parameters`, `tools` and
//! `thinking` the chat's settings, shown as one event before the conversation. Each
//! `message` row (`author` `user` or `assistant`; `me` and `ollama` before oterm 0.12) is one
//! message in row order, its `images` (base64 strings) as placeholders. oterm keeps nothing
//! else: no times, no thinking, no tool calls or results (shown live, never saved), no
//! usage, so none are shown. A database oterm has not opened since an older version keeps
//! that version's columns (`format`, `keep_alive`, tool objects instead of names); sessfs
//! reads them as they are and never migrates.

use super::kit::{self, SessionBuilder};
use super::rows::{RowFormat, RowStore};
use super::sqlite::{self, Rows, Table};
use super::{Env, Root};
use crate::model::{Agent, Message, Role, Session, Source};
use rusqlite::Connection;
use serde_json::Value;
use std::path::Path;

const DB_NAME: &str = "store.db";

/// `$OTERM_DATA_DIR/store.db` alone when set; else the XDG (or `~/.local/share`) data
/// directory and the macOS one.
pub fn candidates(env: &Env) -> Vec<Root> {
    if let Some(dir) = env.path_var("OTERM_DATA_DIR") {
        return vec![Root::new(Agent::Oterm, dir.join(DB_NAME), "OTERM_DATA_DIR")];
    }
    let data = match env.path_var("XDG_DATA_HOME") {
        Some(p) => (p.join("oterm"), "XDG_DATA_HOME"),
        None => (env.home.join(".local/share/oterm"), "default"),
    };
    vec![
        Root::new(Agent::Oterm, data.0.join(DB_NAME), data.1),
        Root::new(
            Agent::Oterm,
            env.home
                .join("Library/Application Support/oterm")
                .join(DB_NAME),
            "macOS",
        ),
    ]
}

/// oterm's chats: one `chat` row each, in `store.db`.
pub type OtermStore = RowStore<Oterm>;

/// The format [`OtermStore`] reads.
pub struct Oterm;

impl RowFormat for Oterm {
    const AGENT: Agent = Agent::Oterm;
    const DB_FILE: &'static str = DB_NAME;
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
        let mut s = Session::new(Agent::Oterm, key);
        s.source = source(db, None);
        s
    }
}

/// oterm's `PRAGMA user_version` is its own version as `major << 16 | minor << 8 | patch`.
fn source(db: &Path, user_version: Option<i64>) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "oterm-sqlite".into(),
        format_version: user_version
            .filter(|v| *v > 0)
            .map(|v| format!("{}.{}.{}", v >> 16, (v >> 8) & 255, v & 255)),
    }
}

/// Every chat id, oldest first.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let chat = Table::probe(conn, "chat")?;
    let message = Table::probe(conn, "message")?;
    if !chat.has("id") || !chat.has("model") || !message.has("chat_id") || !message.has("text") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `chat` and `message` tables: not an oterm database".into(),
        ));
    }
    let rows = Rows::fetch(conn, &chat, &["id"], "ORDER BY id", [])?;
    Ok(rows.iter().filter_map(|r| r.get("id").text()).collect())
}

pub struct Tables {
    chat: Table,
    message: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            chat: Table::probe(c, "chat")?,
            message: Table::probe(c, "message")?,
        })
    }
}

/// Every column oterm's `chat` has had; those a database lacks read as NULL.
const CHAT: [&str; 9] = [
    "name",
    "model",
    "system",
    "provider",
    "parameters",
    "tools",
    "thinking",
    "format",
    "keep_alive",
];
/// `id` came in oterm 0.4 (before, messages had only their rowid).
const MESSAGE: [&str; 4] = ["id", "author", "text", "images"];

pub struct Raw {
    user_version: Option<i64>,
    chat: Rows,
    messages: Rows,
}

/// The chat id as the integer oterm keys by (`"7"` -> 7); a name that is none matches nothing.
fn key(id: &str) -> i64 {
    id.parse().unwrap_or(i64::MIN)
}

fn fetch(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Raw> {
    let user_version = c
        .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .ok();
    Ok(Raw {
        user_version,
        chat: Rows::fetch(c, &t.chat, &CHAT, "WHERE id = ?1", [key(id)])?,
        // Row order is the order oterm shows (`get_messages` has no ORDER BY and reads the
        // table in rowid order); a regenerated reply keeps its id and so its place.
        messages: Rows::fetch(
            c,
            &t.message,
            &MESSAGE,
            "WHERE chat_id = ?1 ORDER BY rowid",
            [key(id)],
        )?,
    })
}

/// A chat's version: its row, then count, largest rowid and total length of its messages'
/// text and images.
fn session_version(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<u64> {
    let mut all = vec![Rows::fetch(c, &t.chat, &CHAT, "WHERE id = ?1", [key(id)])?.rows];
    if t.message.has("chat_id") && t.message.has("text") {
        let images = if t.message.has("images") {
            "total(length(images))"
        } else {
            "0"
        };
        let q = format!(
            "SELECT count(*), max(rowid), total(length(text)), {images} FROM {} WHERE chat_id = ?1",
            sqlite::quote(&t.message.name)
        );
        all.push(Rows::query(c, &q, vec![], [key(id)])?.rows);
    }
    Ok(sqlite::hash_version(all))
}

fn build(raw: &Raw, db: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Oterm, id);
    b.s.source = source(db, raw.user_version);
    let mut model = None;
    match raw.chat.first() {
        Some(row) => {
            b.s.title = row.get("name").non_empty();
            model = row.get("model").non_empty();
            b.s.set_model = model.clone();
            if let Some(text) = settings(&mut b, &row, model.as_deref()) {
                b.event(text, None);
            }
            if let Some(system) = row.get("system").non_empty() {
                b.context("system prompt", system, None);
            }
        }
        None => b.warn("chat row not found (deleted while reading?)"),
    }
    for row in raw.messages.iter() {
        let native = row.get("id").text();
        let text = row.get("text").text().unwrap_or_default();
        let author = row.get("author").text().unwrap_or_default();
        let role = match author.as_str() {
            "user" | "me" => Role::User,
            "assistant" | "ollama" => Role::Assistant,
            other => {
                let first = || {
                    format!(
                        "message {}: author {other:?}",
                        native.as_deref().unwrap_or("?")
                    )
                };
                b.unparsed(
                    "message rows",
                    "unknown author",
                    first,
                    "message",
                    &text,
                    None,
                );
                continue;
            }
        };
        let mut content = text;
        for image in images(&mut b, row.get("images").str(), native.as_deref()) {
            kit::push_paragraph(&mut content, &image);
        }
        b.push(Message {
            role,
            content,
            model: (role == Role::Assistant).then(|| model.clone()).flatten(),
            native_id: native,
            ..Message::default()
        });
    }
    b.finish()
}

/// The placeholders of a message's `images`, a JSON list of base64 strings.
fn images(b: &mut SessionBuilder, json: Option<&str>, native: Option<&str>) -> Vec<String> {
    let Some(json) = json else {
        return Vec::new();
    };
    let where_ = || format!("message {}", native.unwrap_or("?"));
    match kit::json_text(json) {
        Ok(None) => Vec::new(),
        Ok(Some(Value::Array(items))) => items
            .iter()
            .map(|i| match i.as_str() {
                Some(data) => kit::base64_placeholder("image", None, Some(data)),
                None => "[image]".to_string(),
            })
            .collect(),
        Ok(Some(_)) => {
            b.unparsed.note("images fields", "not a list", where_);
            Vec::new()
        }
        Err(e) => {
            b.unparsed
                .note("images fields", "not JSON", || format!("{}: {e}", where_()));
            Vec::new()
        }
    }
}

/// The chat's settings as one line: model and provider, tools, thinking, parameters, and
/// the `format`/`keep_alive` of databases from before oterm 0.15.
fn settings(b: &mut SessionBuilder, row: &sqlite::Row<'_>, model: Option<&str>) -> Option<String> {
    let mut parts = Vec::new();
    let provider = row.get("provider").non_empty();
    match (model, provider.as_deref()) {
        (Some(m), Some(p)) => parts.push(format!("model {m} ({p})")),
        (Some(m), None) => parts.push(format!("model {m}")),
        (None, Some(p)) => parts.push(format!("provider {p}")),
        (None, None) => {}
    }
    if let Some(tools) = row.get("tools").str() {
        match kit::json_text(tools) {
            Ok(None) => {}
            Ok(Some(Value::Array(list))) => {
                // Names since 0.15; Ollama tool objects (`function.name`) before.
                let names: Vec<String> = list
                    .iter()
                    .map(|t| match t {
                        Value::String(s) => s.clone(),
                        other => kit::str_at(other, &["function", "name"])
                            .map(str::to_string)
                            .unwrap_or_else(|| other.to_string()),
                    })
                    .collect();
                if !names.is_empty() {
                    parts.push(format!("tools {}", names.join(", ")));
                }
            }
            Ok(Some(_)) => b.unparsed.note("chat fields", "tools is not a list", || {
                tools.chars().take(80).collect()
            }),
            Err(e) => b
                .unparsed
                .note("chat fields", "tools is not JSON", || e.clone()),
        }
    }
    if row.get("thinking").int().unwrap_or(0) != 0 {
        parts.push("thinking on".to_string());
    }
    if let Some(params) = row.get("parameters").str() {
        match kit::json_text(params) {
            Ok(None) => {}
            Ok(Some(Value::Object(map))) => {
                let kv: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
                if !kv.is_empty() {
                    parts.push(format!("parameters {}", kv.join(", ")));
                }
            }
            Ok(Some(other)) => parts.push(format!("parameters {other}")),
            Err(e) => b
                .unparsed
                .note("chat fields", "parameters is not JSON", || e.clone()),
        }
    }
    if let Some(format) = row.get("format").non_empty() {
        parts.push(format!("format {format}"));
    }
    if let Some(keep) = row.get("keep_alive").text() {
        parts.push(format!("keep_alive {keep}"));
    }
    (!parts.is_empty()).then(|| format!("oterm chat: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn data_dir_variable_replaces_the_defaults() {
        let mut env = Env::at_home(Path::new("/h"));
        let got =
            |env: &Env| -> Vec<PathBuf> { candidates(env).into_iter().map(|r| r.path).collect() };
        assert_eq!(
            got(&env),
            [
                PathBuf::from("/h/.local/share/oterm/store.db"),
                PathBuf::from("/h/Library/Application Support/oterm/store.db")
            ]
        );
        env.vars.insert("XDG_DATA_HOME".into(), "/x".into());
        assert_eq!(got(&env)[0], PathBuf::from("/x/oterm/store.db"));
        env.vars.insert("OTERM_DATA_DIR".into(), "/o".into());
        assert_eq!(got(&env), [PathBuf::from("/o/store.db")]);
    }

    #[test]
    fn user_version_reads_as_oterms_own_version() {
        let s = source(Path::new("/d"), Some((1 << 16) | (19 << 8) | 2));
        assert_eq!(s.format_version.as_deref(), Some("1.19.2"));
        assert_eq!(source(Path::new("/d"), Some(0)).format_version, None);
    }
}
