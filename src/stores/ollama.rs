//! The Ollama app (ollama/ollama's desktop app for macOS and Windows, a chat window over the
//! local Ollama server): every chat a row of one SQLite database, `db.sqlite` in the app's
//! data directory.
//!
//! Learnt from the app's own source, github.com/ollama/ollama at commit
//! `fb30760996871fa9460115c753afd2c60d4ab0f7` (v0.33.0-rc2):
//!
//! - `app/store/store.go` (`defaultDBPath`; the `Chat`, `Message`, `ToolCall` and `File`
//!   types) and `app/cmd/app/app.go` (`OLLAMA_APP_DB_PATH`, read only when the app runs with
//!   `-dev`);
//! - `app/store/database.go`: the DDL of `init` (written out in
//!   `fixtures/schema/ollama-app-18.sql`), the migrations from schema 1 to 18 (the first
//!   released schema, 2, is `app/store/schema.sql`, written out in
//!   `fixtures/schema/ollama-app-2.sql`), and every query: `saveChat` (the chat row upserted,
//!   its messages deleted and inserted again in order), `appendMessage`, `updateLastMessage`
//!   (a streaming reply rewritten in place), `getMessages` (`ORDER BY id`), `getToolCalls`,
//!   `getAttachments`;
//! - `app/ui/ui.go` (what a turn saves: the prompt with its attached files, an empty reply
//!   row the model's text and thinking then fill, tool calls set on the reply, one `tool`
//!   row per result, `Error: ...` rows for failed tools; `getChat`, which names a result by
//!   the last call before it; `buildChatRequest`, which skips empty rows).
//!
//! **Where.** `~/Library/Application Support/Ollama/db.sqlite` on macOS,
//! `%LOCALAPPDATA%\Ollama\db.sqlite` on Windows (not looked at: sessfs runs on Linux and
//! macOS), and `~/.ollama/db.sqlite` on any other system (the source's default for them).
//! The app started with `-dev` reads `$OLLAMA_APP_DB_PATH` instead: that path is looked at
//! first when the variable is set, beside the defaults (the installed app ignores it). A
//! `--store ollama=PATH` (the database or its directory) adds another.
//!
//! **What.** A `chats` row is one session: its `id` (a UUIDv7) the id, `title` the title (the
//! app leaves it empty until the user renames the chat, and shows the first prompt: so does
//! sessfs), `created_at` the start. Every `messages` row of the chat is one message in `id`
//! order: `role` `user` (its `attachments` rows as placeholders naming the file and its
//! size), `assistant` (`content`, `thinking`, `model_name`, its `tool_calls` rows with
//! `function_arguments` as the input) or `tool` (a result: `content`, what the model read).
//! Times are the rows' `created_at`; the session's update time is the newest `updated_at`,
//! as the app's chat list has it. The app keeps no token counts, cost, working directory or
//! system prompt, so none is shown (the cost is unknown, not $0).
//!
//! Design decisions and why:
//! - **Only the `chats`, `messages`, `tool_calls` and `attachments` tables are read**, by
//!   column name. `settings` (device id, server and integration settings) and `users` (the
//!   cloud account's name, email and plan) are never selected; attachment bytes never leave
//!   the database (`length(data)` is all that is read). Beside the database, `~/.ollama`
//!   holds the server's `id_ed25519` key pair, the CLI's prompt `history`, `server.json`
//!   and `models/`: none of them is a chat and none is opened; the app's copies of images
//!   under `cache/images/` are not read either (the database holds every attachment).
//! - **Tool results are paired by order.** A tool call row has no id, and a result row does
//!   not name its tool (`ToolName` has no column). The app runs a reply's calls in order and
//!   saves one `tool` row for each, so the n-th result after a reply answers its n-th call
//!   (ids are made up as `<message id>.<n>`). A result with no call left to answer (the app
//!   saves no call when the model calls a tool without writing text first) is named after
//!   the last call before it, as the app's chat view names it.
//! - **A failed tool** is a `tool` row the app writes as `Error: <error>` with no
//!   `tool_result`: sessfs marks exactly those as errors.
//! - **Empty replies are left out**: the app saves an empty reply row with the model's name
//!   before it pulls a model, and leaves it empty when the pull fails; it skips such rows
//!   itself when it sends the chat to the model. Its model still counts as the chat's model
//!   when no reply names one.

use super::kit::{self, SessionBuilder};
use super::rows::{RowFormat, RowStore};
use super::sqlite::{self, Row, Rows, Table};
use super::{Env, Root};
use crate::model::{self, Agent, Message, Role, Session, Source, ToolCall};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::path::Path;

const DB_FILE: &str = "db.sqlite";

/// `$OLLAMA_APP_DB_PATH` when set, then `~/.ollama/db.sqlite` and the macOS data directory.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut roots = Vec::new();
    if let Some(p) = env.path_var("OLLAMA_APP_DB_PATH") {
        roots.push(Root::new(Agent::Ollama, p, "OLLAMA_APP_DB_PATH"));
    }
    roots.push(Root::new(
        Agent::Ollama,
        env.home.join(".ollama").join(DB_FILE),
        "default",
    ));
    roots.push(Root::new(
        Agent::Ollama,
        env.home
            .join("Library/Application Support/Ollama")
            .join(DB_FILE),
        "macOS",
    ));
    roots
}

/// The Ollama app's chats: one `chats` row each, in `db.sqlite`.
pub type OllamaStore = RowStore<Ollama>;

/// The format [`OllamaStore`] reads.
pub struct Ollama;

impl RowFormat for Ollama {
    const AGENT: Agent = Agent::Ollama;
    const DB_FILE: &'static str = DB_FILE;
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
        let mut s = Session::new(Agent::Ollama, key);
        s.source = source(db);
        s
    }
}

fn source(db: &Path) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "ollama-app-sqlite".into(),
        format_version: None,
    }
}

/// Every chat id, in the order the chats were made (`rowid`: the app's upsert keeps it).
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Tables::probe(conn)?;
    if !t.chats.has("id") || !t.messages.has("chat_id") || !t.messages.has("role") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `chats` and `messages` tables: not an Ollama app database".into(),
        ));
    }
    let rows = Rows::fetch(conn, &t.chats, &["id"], "ORDER BY rowid", [])?;
    Ok(rows.iter().filter_map(|r| r.get("id").text()).collect())
}

pub struct Tables {
    chats: Table,
    messages: Table,
    tool_calls: Table,
    attachments: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            chats: Table::probe(c, "chats")?,
            messages: Table::probe(c, "messages")?,
            tool_calls: Table::probe(c, "tool_calls")?,
            attachments: Table::probe(c, "attachments")?,
        })
    }

    /// The rows of a table keyed by `message_id` that belong to the chat's messages.
    fn of_chat(&self) -> String {
        format!(
            "WHERE message_id IN (SELECT id FROM {} WHERE chat_id = ?1) ORDER BY id",
            sqlite::quote(&self.messages.name)
        )
    }

    /// `attachments` of the chat: the file's name and its size, never its bytes.
    fn attachments_query(&self) -> Option<String> {
        let a = &self.attachments;
        (a.has("message_id") && a.has("id")).then(|| {
            let name = if a.has("filename") {
                "\"filename\""
            } else {
                "NULL"
            };
            let size = if a.has("data") {
                "length(\"data\")"
            } else {
                "NULL"
            };
            format!(
                "SELECT \"message_id\", {name}, {size} FROM {} {}",
                sqlite::quote(&a.name),
                self.of_chat()
            )
        })
    }
}

/// The columns of `chats` shown; `browser_state` (the browser tool's pages, kept to resume
/// them) is not.
const CHAT: [&str; 2] = ["title", "created_at"];
/// `stream` and the deprecated `model_cloud` / `model_ollama_host` are not read.
const MESSAGE: [&str; 8] = [
    "id",
    "role",
    "content",
    "thinking",
    "model_name",
    "created_at",
    "updated_at",
    "tool_result",
];
const CALL: [&str; 4] = [
    "message_id",
    "function_name",
    "function_arguments",
    "function_result",
];
const ATTACHMENT: [&str; 3] = ["message_id", "filename", "size"];

pub struct Raw {
    chat: Rows,
    messages: Rows,
    calls: Rows,
    attachments: Rows,
}

fn chat_row(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Rows> {
    Rows::fetch(c, &t.chats, &CHAT, "WHERE id = ?1", [id])
}

fn attachment_rows(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Rows> {
    match t.attachments_query() {
        Some(q) => Rows::query(c, &q, ATTACHMENT.map(String::from).to_vec(), [id]),
        None => Ok(Rows::default()),
    }
}

fn fetch(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Raw> {
    Ok(Raw {
        chat: chat_row(c, t, id)?,
        messages: Rows::fetch(
            c,
            &t.messages,
            &MESSAGE,
            "WHERE chat_id = ?1 ORDER BY id",
            [id],
        )?,
        calls: if t.tool_calls.has("message_id") && t.tool_calls.has("id") {
            Rows::fetch(c, &t.tool_calls, &CALL, &t.of_chat(), [id])?
        } else {
            Rows::default()
        },
        attachments: attachment_rows(c, t, id)?,
    })
}

/// `length("col")` for a column the table has, else `NULL`.
fn length_of(t: &Table, col: &str) -> String {
    if t.has(col) {
        format!("length({})", sqlite::quote(col))
    } else {
        "NULL".into()
    }
}

/// A chat's version: its row, then of every message the columns a streaming reply, a
/// finished one or a saved chat change (the lengths of its texts, its times and model), of
/// every call its name and the lengths of its arguments and result, and of every attachment
/// its name and size. A saved chat inserts its messages again under new ids, which changes
/// the version too.
fn session_version(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<u64> {
    let mut all = vec![chat_row(c, t, id)?.rows];
    let m = &t.messages;
    if m.has("chat_id") && m.has("id") {
        let q = format!(
            "SELECT {}, {}, {}, {} FROM {} WHERE chat_id = ?1 ORDER BY id",
            m.select_list(&["id", "role", "model_name", "created_at", "updated_at"]),
            length_of(m, "content"),
            length_of(m, "thinking"),
            length_of(m, "tool_result"),
            sqlite::quote(&m.name)
        );
        all.push(Rows::query(c, &q, vec![], [id])?.rows);
        let tc = &t.tool_calls;
        if tc.has("message_id") && tc.has("id") {
            let q = format!(
                "SELECT {}, {}, {} FROM {} {}",
                tc.select_list(&["id", "message_id", "function_name"]),
                length_of(tc, "function_arguments"),
                length_of(tc, "function_result"),
                sqlite::quote(&tc.name),
                t.of_chat()
            );
            all.push(Rows::query(c, &q, vec![], [id])?.rows);
        }
        all.push(attachment_rows(c, t, id)?.rows);
    }
    Ok(sqlite::hash_version(all))
}

fn build(raw: &Raw, db: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Ollama, id);
    b.s.source = source(db);
    let mut created = None;
    match raw.chat.first() {
        Some(chat) => {
            b.s.title = chat.get("title").non_empty();
            created = chat.get("created_at").time();
            b.s.created_at = created;
        }
        None => b.warn("chat row not found (deleted while reading?)"),
    }
    let mut calls: HashMap<i64, Vec<Row<'_>>> = HashMap::new();
    for r in raw.calls.iter() {
        if let Some(m) = r.get("message_id").int() {
            calls.entry(m).or_default().push(r);
        }
    }
    let mut files: HashMap<i64, Vec<Row<'_>>> = HashMap::new();
    for r in raw.attachments.iter() {
        if let Some(m) = r.get("message_id").int() {
            files.entry(m).or_default().push(r);
        }
    }
    let mut turn = Turn::default();
    let mut updated: Option<DateTime<Utc>> = None;
    for row in raw.messages.iter() {
        updated = updated.max(row.get("updated_at").time());
        let rid = row.get("id").int();
        let no_rows = Vec::new();
        let calls = rid.and_then(|i| calls.get(&i)).unwrap_or(&no_rows);
        let files = rid.and_then(|i| files.get(&i)).unwrap_or(&no_rows);
        message(&mut b, &mut turn, &row, calls, files);
    }
    if b.s.set_model.is_none() {
        b.s.set_model = turn.model;
    }
    b.s.updated_at = updated.or(created);
    b.finish()
}

/// What the rows read so far leave for the next ones: the calls of the last reply not yet
/// answered, the name of the last call, and the last model named.
#[derive(Default)]
struct Turn {
    pending: VecDeque<(String, String)>,
    last_call: Option<String>,
    model: Option<String>,
}

/// One `messages` row: a prompt, a reply with its calls, or a tool's result.
fn message(
    b: &mut SessionBuilder,
    turn: &mut Turn,
    row: &Row<'_>,
    calls: &[Row<'_>],
    files: &[Row<'_>],
) {
    let native = row.get("id").text();
    let place = native.as_deref().unwrap_or("?").to_string();
    let timestamp = row.get("created_at").time();
    let mut content = row.get("content").text().unwrap_or_default();
    let model = row.get("model_name").non_empty();
    if model.is_some() {
        turn.model = model.clone();
    }
    let role = row.get("role").text().unwrap_or_default();
    if role != "tool" {
        turn.pending.clear();
    }
    match role.as_str() {
        "user" | "system" => {
            for f in files {
                kit::push_paragraph(&mut content, &attachment(f));
            }
            b.push(Message {
                role: if role == "user" {
                    Role::User
                } else {
                    Role::System
                },
                content,
                timestamp,
                native_id: native,
                ..Message::default()
            });
        }
        "assistant" => {
            let thinking = row.get("thinking").non_empty();
            let tool_calls: Vec<ToolCall> = calls
                .iter()
                .enumerate()
                .map(|(n, c)| tool_call(b, c, &place, n))
                .collect();
            if content.is_empty() && thinking.is_none() && tool_calls.is_empty() {
                return;
            }
            for c in &tool_calls {
                turn.pending
                    .push_back((c.tool_call_id.clone(), c.tool_name.clone()));
                turn.last_call = Some(c.tool_name.clone());
            }
            for f in files {
                kit::push_paragraph(&mut content, &attachment(f));
            }
            b.push(Message {
                role: Role::Assistant,
                content,
                timestamp,
                thinking,
                tool_calls,
                model,
                native_id: native,
                ..Message::default()
            });
        }
        "tool" => {
            let result = row.get("tool_result").text();
            let is_error = result.is_none() && content.starts_with("Error: ");
            if content.is_empty() {
                content = result.filter(|r| r != "null").unwrap_or_default();
            }
            let (call_id, name) = match turn.pending.pop_front() {
                Some((id, name)) => (id, Some(name)),
                None => (String::new(), turn.last_call.clone()),
            };
            b.tool_result(&call_id, name.as_deref(), content, is_error, timestamp);
            if let Some(m) = b.last_mut() {
                m.native_id = native;
            }
        }
        other => {
            let first = || format!("message {place}: role {other:?}");
            b.unparsed(
                "message rows",
                "unknown role",
                first,
                "message",
                &content,
                timestamp,
            );
        }
    }
}

/// A `tool_calls` row: its function and arguments (JSON text), and the result the app's
/// older versions kept on the call.
fn tool_call(b: &mut SessionBuilder, row: &Row<'_>, message: &str, n: usize) -> ToolCall {
    let name = row.get("function_name").text().unwrap_or_default();
    let args = row.get("function_arguments").text().unwrap_or_default();
    let input = kit::call_arguments(&args, "tool calls", &mut b.unparsed, || {
        format!("message {message}, call {name}")
    });
    let output =
        row.get("function_result")
            .non_empty()
            .map(|r| match serde_json::from_str::<Value>(&r) {
                Ok(Value::String(s)) => s,
                _ => r,
            });
    ToolCall {
        tool_call_id: format!("{message}.{}", n + 1),
        tool_name: name,
        input,
        output,
        ..ToolCall::default()
    }
}

/// `[image: image/png, 12.3 KB] photo.png`: what the file is and its size, never its bytes.
/// The app sends `.png`, `.jpg`, `.jpeg` and `.webp` files to the model as images and the
/// text of any other file (a PDF's extracted text) inside the prompt.
fn attachment(row: &Row<'_>) -> String {
    let name = row.get("filename").text().unwrap_or_default();
    let ext = Path::new(&name)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let mime = match ext.as_deref() {
        Some("png") => Some("image/png"),
        Some("jpg" | "jpeg") => Some("image/jpeg"),
        Some("webp") => Some("image/webp"),
        Some("pdf") => Some("application/pdf"),
        _ => None,
    };
    let kind = if mime.is_some_and(|m| m.starts_with("image/")) {
        "image"
    } else {
        "attachment"
    };
    let size = row.get("size").int().map(|n| n.max(0) as usize);
    let ph = model::placeholder(kind, mime, size);
    if name.trim().is_empty() {
        ph
    } else {
        format!("{ph} {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn dev_path_comes_first_and_the_defaults_stay() {
        let mut env = Env::at_home(Path::new("/h"));
        let got =
            |env: &Env| -> Vec<PathBuf> { candidates(env).into_iter().map(|r| r.path).collect() };
        assert_eq!(
            got(&env),
            [
                PathBuf::from("/h/.ollama/db.sqlite"),
                PathBuf::from("/h/Library/Application Support/Ollama/db.sqlite")
            ]
        );
        env.vars
            .insert("OLLAMA_APP_DB_PATH".into(), "/dev/chats.sqlite".into());
        assert_eq!(got(&env)[0], PathBuf::from("/dev/chats.sqlite"));
        assert_eq!(got(&env).len(), 3);
    }

    #[test]
    fn go_sqlite_times_read_with_their_offset() {
        // mattn/go-sqlite3 binds a time.Time as "2006-01-02 15:04:05.999999999-07:00".
        let c = sqlite::Cell::Text("2026-03-02 09:15:04.123456789+01:00".into());
        assert_eq!(
            c.time().map(|t| t.to_rfc3339()),
            Some("2026-03-02T08:15:04.123456789+00:00".into())
        );
        let c = sqlite::Cell::Text("2026-03-02 09:15:04-05:00".into());
        assert_eq!(
            c.time().map(|t| t.to_rfc3339()),
            Some("2026-03-02T14:15:04+00:00".into())
        );
    }
}
