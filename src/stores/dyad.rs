//! Dyad (dyad-sh/dyad, a local AI app builder: an Electron app whose chats edit the user's
//! app with an LLM): every chat a row of one SQLite database, `sqlite.db` in Electron's
//! userData directory.
//!
//! Learnt from Dyad's own source, github.com/dyad-sh/dyad at commit
//! `b1e9d26ba5a0f1fcb615c1fdee327ebd437c709e` (Dyad 1.12.0-beta.1):
//!
//! - `src/db/index.ts` (`getDatabasePath`: `sqlite.db` in `getUserDataPath()`),
//!   `src/paths/paths.ts` (`getUserDataPath`: Electron's `app.getPath("userData")`;
//!   `getDyadAppsBaseDirectory`: `~/dyad-apps` unless the settings name another folder),
//!   `package.json` (`productName` `dyad`, which names the userData directory);
//! - `src/db/schema.ts` and `drizzle/0000` .. `0049` (written out in
//!   `fixtures/schema/dyad-0049.sql`): `apps` (`name`, `path`), `chats` (`app_id`, `title`,
//!   `created_at` in seconds, `initial_commit_hash`, `chat_mode`, `model_selection`,
//!   `is_favorite`), `messages` (`role` `user` or `assistant`, `content`, `approval_state`,
//!   `source_commit_hash`, `commit_hash`, `model`, `is_compaction_summary`, `created_at`);
//! - `src/ipc/handlers/chat_handlers.ts` (a chat's messages in `created_at`, then `id`
//!   order), `chat_stream_handlers.ts` and `chat_turn_acceptance.ts` (what a turn saves: the
//!   prompt with `<dyad-attachment>` tags, the reply with `<think>` reasoning, MCP calls and
//!   results as tags), `src/ipc/processors/response_processor.ts` (what approving a reply
//!   does: the action tags applied, `commit_hash` and `approval_state` set, problems appended
//!   as `<dyad-output>`), `src/ipc/utils/dyad_tag_parser.ts` and
//!   `src/lib/streamingMessageParser.ts` (how tags are read), and the agent tools'
//!   `buildXml` under `src/pro/main/ipc/handlers/local_agent/tools/` (what a tool call leaves
//!   in the reply).
//!
//! **Where.** Electron's userData for the product `dyad`: `$XDG_CONFIG_HOME/dyad`, else
//! `~/.config/dyad` on Linux, `~/Library/Application Support/dyad` on macOS. Dyad started
//! with `--user-data-dir=DIR` (what its end-to-end tests do) keeps its database there:
//! `--store dyad=DIR` (the directory or the database) adds it. `DYAD_DEV_USER_DATA_DIR`
//! only applies to development builds and is not looked at. Beside the database
//! `user-settings.json` holds the provider API keys and tokens: it is never opened.
//!
//! **What.** A `chats` row is one session, its integer `id` the session id. Its `title` is
//! the title (Dyad fills it from the first reply's `<dyad-chat-summary>`; a chat without one
//! is named by its first prompt); its app (`apps.name`, `apps.path`) a tag and the working
//! directory; `chat_mode`, `model_selection` and `initial_commit_hash` one settings event.
//! Every `messages` row is one message, or several: a reply is Markdown with Dyad's tags in
//! it, read the way Dyad's chat view reads them (the tag names it renders as cards; any
//! other `<name` is text). Tags split the reply where they stand: `<think>` is the
//! reasoning of the text after it; every tag that does something (writes, renames, deletes
//! or copies a file, adds a dependency, runs SQL, reads, searches, calls an MCP tool, runs a
//! script, ...) is a tool call named after the tag (`dyad-write` -> `write`, an MCP call
//! `<server>__<tool>`), its attributes the input, its body the input where the model wrote
//! it (a file, a change, a query, arguments) and the output where Dyad wrote it (search
//! hits, logs, an MCP result). The tags whose body Dyad's own chat search keeps as
//! conversation (summaries, plans, status lines, `<dyad-output>` warnings and errors) and
//! the suggested `<dyad-command>` buttons are text, labelled. The calls a build-mode reply
//! proposes are applied only when the user approves: their result is the row's
//! `approval_state` (`approved`, or `rejected`, failed); the commit Dyad made of them
//! (`commit_hash`) is an event after the reply.
//!
//! Design decisions and why:
//! - **Only `chats`, `messages` and the name and path of `apps` are read**, by column name.
//!   `apps` also holds deployment tokens (`neon_*_auth_cookie_secret`), `mcp_servers` MCP
//!   environments and OAuth secrets, `language_model_providers` custom providers: none of
//!   them is ever selected.
//! - **`ai_messages_json` is not read**: it is the model-facing replay of an agent-mode turn
//!   (AI SDK messages), and every call it holds is also a tag in `content`, which is what
//!   Dyad shows; reading both would show each call twice.
//! - **`max_tokens_used` is not usage**: it is the largest total (prompt and reply) of one
//!   request of the turn, a context-window gauge; counted as tokens it would inflate the
//!   cost by every request's re-sent context, so no usage or cost is shown.
//! - **Sub-agent threads** (`agent_threads`, `agent_messages`, `agent_activities`) are not
//!   read: the parent reply's `<dyad-subagent>` card is its tool call.

use super::kit::{self, SessionBuilder};
use super::rows::{RowFormat, RowStore};
use super::sqlite::{self, Row, Rows, Table};
use super::{Env, Root};
use crate::model::{Agent, Message, MessageKind, Role, Session, Source, ToolCall};
use rusqlite::Connection;
use serde_json::{Map, Value};
use std::path::Path;

const DB_FILE: &str = "sqlite.db";

/// `$XDG_CONFIG_HOME/dyad` (else `~/.config/dyad`), then the macOS userData directory.
pub fn candidates(env: &Env) -> Vec<Root> {
    let (config, how) = match env.path_var("XDG_CONFIG_HOME") {
        Some(p) => (p, "XDG_CONFIG_HOME"),
        None => (env.home.join(".config"), "default"),
    };
    vec![
        Root::new(Agent::Dyad, config.join("dyad").join(DB_FILE), how),
        Root::new(
            Agent::Dyad,
            env.home
                .join("Library/Application Support/dyad")
                .join(DB_FILE),
            "macOS",
        ),
    ]
}

/// Dyad's chats: one `chats` row each, in `sqlite.db`.
pub type DyadStore = RowStore<Dyad>;

/// The format [`DyadStore`] reads.
pub struct Dyad;

impl RowFormat for Dyad {
    const AGENT: Agent = Agent::Dyad;
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
        let mut s = Session::new(Agent::Dyad, key);
        s.source = source(db);
        s
    }
}

fn source(db: &Path) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "dyad-sqlite".into(),
        format_version: None,
    }
}

/// Every chat id, oldest first.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Tables::probe(conn)?;
    if !t.chats.has("id") || !t.messages.has("chat_id") || !t.messages.has("content") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `chats` and `messages` tables: not a Dyad database".into(),
        ));
    }
    let rows = Rows::fetch(conn, &t.chats, &["id"], "ORDER BY id", [])?;
    Ok(rows.iter().filter_map(|r| r.get("id").text()).collect())
}

pub struct Tables {
    chats: Table,
    messages: Table,
    apps: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            chats: Table::probe(c, "chats")?,
            messages: Table::probe(c, "messages")?,
            apps: Table::probe(c, "apps")?,
        })
    }

    /// Dyad's order (`created_at`, then `id`), or `id` where a database lacks the time.
    fn message_order(&self) -> &'static str {
        if self.messages.has("created_at") {
            "WHERE chat_id = ?1 ORDER BY created_at, id"
        } else {
            "WHERE chat_id = ?1 ORDER BY id"
        }
    }
}

/// The columns of `chats` shown; `referenced_app_ids`, the compaction bookkeeping and the
/// queue tables are not.
const CHAT: [&str; 7] = [
    "app_id",
    "title",
    "created_at",
    "initial_commit_hash",
    "chat_mode",
    "model_selection",
    "is_favorite",
];
/// `apps` is read for these two columns only: the rest holds deployment secrets.
const APP: [&str; 2] = ["name", "path"];
const MESSAGE: [&str; 9] = [
    "id",
    "role",
    "content",
    "approval_state",
    "source_commit_hash",
    "commit_hash",
    "model",
    "is_compaction_summary",
    "created_at",
];
/// What a message's version is made of besides its content's length.
const MESSAGE_VERSION: [&str; 7] = [
    "id",
    "role",
    "approval_state",
    "commit_hash",
    "model",
    "is_compaction_summary",
    "created_at",
];

pub struct Raw {
    chat: Rows,
    app: Rows,
    messages: Rows,
}

/// The chat id as the integer Dyad keys by (`"7"` -> 7); a name that is none matches nothing.
fn key(id: &str) -> i64 {
    id.parse().unwrap_or(i64::MIN)
}

fn chat_row(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Rows> {
    Rows::fetch(c, &t.chats, &CHAT, "WHERE id = ?1", [key(id)])
}

fn app_row(c: &Connection, t: &Tables, chat: &Rows) -> rusqlite::Result<Rows> {
    let app = chat.first().and_then(|r| r.get("app_id").int());
    match app {
        Some(app) if t.apps.has("id") => Rows::fetch(c, &t.apps, &APP, "WHERE id = ?1", [app]),
        _ => Ok(Rows::default()),
    }
}

fn fetch(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Raw> {
    let chat = chat_row(c, t, id)?;
    let app = app_row(c, t, &chat)?;
    let messages = Rows::fetch(c, &t.messages, &MESSAGE, t.message_order(), [key(id)])?;
    Ok(Raw {
        chat,
        app,
        messages,
    })
}

/// A chat's version: its row, its app's name and path, and of every message its length and
/// the columns an approval, a commit or a finished reply change (a streaming reply is
/// rewritten in place, growing).
fn session_version(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<u64> {
    let chat = chat_row(c, t, id)?;
    let app = app_row(c, t, &chat)?;
    let mut all = vec![chat.rows, app.rows];
    if t.messages.has("chat_id") && t.messages.has("content") {
        let q = format!(
            "SELECT length(content), {} FROM {} {}",
            t.messages.select_list(&MESSAGE_VERSION),
            sqlite::quote(&t.messages.name),
            t.message_order()
        );
        all.push(Rows::query(c, &q, vec![], [key(id)])?.rows);
    }
    Ok(sqlite::hash_version(all))
}

fn build(raw: &Raw, db: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Dyad, id);
    b.s.source = source(db);
    match raw.chat.first() {
        Some(chat) => {
            b.s.title = chat.get("title").non_empty();
            b.s.created_at = chat.get("created_at").time();
            let app = raw.app.first();
            let name = app.and_then(|a| a.get("name").non_empty());
            let path = app.and_then(|a| a.get("path").non_empty());
            if let Some(name) = &name {
                b.s.tags.push(format!("app:{name}"));
            }
            if let Some(mode) = chat.get("chat_mode").non_empty() {
                b.s.tags.push(format!("mode:{mode}"));
            }
            if chat.get("is_favorite").int().unwrap_or(0) != 0 {
                b.s.tags.push("favorite".into());
            }
            b.s.cwd = path.as_deref().and_then(|p| app_dir(db, p));
            if let Some(text) = settings(&mut b, &chat, name.as_deref(), path.as_deref()) {
                b.event(text, None);
            }
        }
        None => b.warn("chat row not found (deleted while reading?)"),
    }
    for row in raw.messages.iter() {
        message(&mut b, &row);
    }
    b.finish()
}

/// Where Dyad keeps the app: its `path` when absolute, else under the apps folder,
/// `~/dyad-apps` by default. The home is known from where the database sits (the default
/// Linux or macOS userData directory); a database elsewhere, or an apps folder moved in
/// Dyad's settings (which are never read), leaves a relative path without a directory.
fn app_dir(db: &Path, path: &str) -> Option<String> {
    if Path::new(path).is_absolute() {
        return Some(path.to_string());
    }
    let user_data = db.parent()?;
    let home = if user_data.ends_with(".config/dyad") {
        user_data.parent()?.parent()?
    } else if user_data.ends_with("Library/Application Support/dyad") {
        user_data.parent()?.parent()?.parent()?
    } else {
        return None;
    };
    Some(home.join("dyad-apps").join(path).display().to_string())
}

/// The chat's settings as one line: app, mode, model and the commit it started from.
fn settings(
    b: &mut SessionBuilder,
    chat: &Row<'_>,
    app: Option<&str>,
    path: Option<&str>,
) -> Option<String> {
    let mut parts = Vec::new();
    match (app, path) {
        (Some(a), Some(p)) => parts.push(format!("app {a} ({p})")),
        (Some(a), None) => parts.push(format!("app {a}")),
        (None, Some(p)) => parts.push(format!("app at {p}")),
        (None, None) => {}
    }
    if let Some(mode) = chat.get("chat_mode").non_empty() {
        parts.push(format!("mode {mode}"));
    }
    if let Some(sel) = chat.get("model_selection").str() {
        match kit::json_text(sel) {
            Ok(None) => {}
            Ok(Some(v)) => {
                let name = kit::str_field(&v, "name").filter(|s| !s.is_empty());
                b.s.set_model = name.map(str::to_string);
                let mut detail = Vec::new();
                if let Some(p) = kit::str_field(&v, "provider").filter(|s| !s.is_empty()) {
                    detail.push(p.to_string());
                }
                if let Some(e) = kit::str_field(&v, "effortLevel").filter(|s| !s.is_empty()) {
                    detail.push(format!("effort {e}"));
                }
                let mut text = format!("model {}", name.unwrap_or("?"));
                if !detail.is_empty() {
                    text.push_str(&format!(" ({})", detail.join(", ")));
                }
                parts.push(text);
            }
            Err(e) => b
                .unparsed
                .note("chat fields", "model_selection is not JSON", || e.clone()),
        }
    }
    if let Some(commit) = chat.get("initial_commit_hash").non_empty() {
        parts.push(format!("started at commit {commit}"));
    }
    (!parts.is_empty()).then(|| format!("Dyad chat: {}", parts.join("; ")))
}

/// One `messages` row: a prompt, or a reply split where its tool calls stand.
fn message(b: &mut SessionBuilder, row: &Row<'_>) {
    let native = row.get("id").text();
    let timestamp = row.get("created_at").time();
    let content = row.get("content").text().unwrap_or_default();
    let role = match row.get("role").str().unwrap_or_default() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => {
            let first = || {
                format!(
                    "message {}: role {other:?}",
                    native.as_deref().unwrap_or("?")
                )
            };
            b.unparsed(
                "message rows",
                "unknown role",
                first,
                "message",
                &content,
                timestamp,
            );
            return;
        }
    };
    let kind = if row.get("is_compaction_summary").int().unwrap_or(0) != 0 {
        MessageKind::CompactionSummary
    } else {
        MessageKind::Normal
    };
    let proto = Message {
        role,
        kind,
        timestamp,
        model: (role == Role::Assistant)
            .then(|| row.get("model").non_empty())
            .flatten(),
        native_id: native.clone(),
        ..Message::default()
    };
    let parts = match role {
        Role::User => vec![Message {
            content: prompt_text(&content),
            ..proto.clone()
        }],
        _ => {
            let approved = approval(b, row, native.as_deref().unwrap_or("?"));
            reply(
                b,
                &content,
                &proto,
                native.as_deref().unwrap_or("?"),
                approved,
            )
        }
    };
    for m in parts {
        b.push(m);
    }
    if let Some(commit) = row.get("commit_hash").non_empty() {
        let text = match row.get("source_commit_hash").non_empty() {
            Some(from) if from != commit => {
                format!("Dyad committed the changes as {commit} (the app was at {from})")
            }
            _ => format!("Dyad committed the changes as {commit}"),
        };
        b.event(text, timestamp);
    }
}

/// A prompt as Dyad shows it: its attachments (`<dyad-attachment>` tags, the files kept in
/// the app's `.dyad/media`) as placeholders, any other tag as written.
fn prompt_text(content: &str) -> String {
    let mut out = String::new();
    for block in blocks(content) {
        match block {
            Block::Text(t) => out.push_str(t),
            Block::Tag(tag) if tag.name == ATTACHMENT => out.push_str(&attachment(&tag)),
            Block::Tag(tag) => match kind(tag.name) {
                Kind::Note => out.push_str(&note(&tag)),
                _ => out.push_str(tag.raw),
            },
        }
    }
    out.trim().to_string()
}

/// `[image: shot.png, image/png]`: the name and type, never the file.
fn attachment(tag: &Tag<'_>) -> String {
    let name = tag.attr("name").unwrap_or("?");
    let mime = tag.attr("type").filter(|t| !t.is_empty());
    let kind = match mime {
        Some(m) if m.starts_with("image/") => "image",
        _ => "attachment",
    };
    match mime {
        Some(m) => format!("[{kind}: {name}, {m}]"),
        None => format!("[{kind}: {name}]"),
    }
}

/// The messages of one reply: text, reasoning and tool calls in the order they stand, a new
/// message wherever text or reasoning follows a tool call.
fn reply(
    b: &mut SessionBuilder,
    content: &str,
    proto: &Message,
    native: &str,
    approved: Option<(&str, bool)>,
) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut cur = proto.clone();
    let mut n = 0;
    // Whether `cur` has anything a new piece of text or reasoning must not be put before.
    let started = |m: &Message| !m.tool_calls.is_empty();
    for block in blocks(content) {
        match block {
            Block::Text(t) => {
                if t.trim().is_empty() {
                    continue;
                }
                if started(&cur) {
                    out.push(std::mem::replace(&mut cur, proto.clone()));
                }
                kit::push_paragraph(&mut cur.content, t.trim());
            }
            Block::Tag(tag) => match kind(tag.name) {
                Kind::Think => {
                    if started(&cur) || !cur.content.is_empty() {
                        out.push(std::mem::replace(&mut cur, proto.clone()));
                    }
                    let th = tag.body.trim();
                    if !th.is_empty() {
                        let t = cur.thinking.get_or_insert_with(String::new);
                        kit::push_paragraph(t, th);
                    }
                }
                Kind::Note => {
                    if started(&cur) {
                        out.push(std::mem::replace(&mut cur, proto.clone()));
                    }
                    kit::push_paragraph(&mut cur.content, &note(&tag));
                }
                Kind::Attachment => {
                    if started(&cur) {
                        out.push(std::mem::replace(&mut cur, proto.clone()));
                    }
                    kit::push_paragraph(&mut cur.content, &attachment(&tag));
                }
                Kind::Result => {
                    n += 1;
                    if !answer(&mut out, &mut cur, &tag) {
                        cur.tool_calls.push(call(b, &tag, native, n, None));
                    }
                }
                Kind::Action(_) | Kind::Input(_) | Kind::Output => {
                    n += 1;
                    cur.tool_calls.push(call(b, &tag, native, n, approved));
                }
            },
        }
    }
    if out.is_empty()
        || !cur.content.is_empty()
        || !cur.tool_calls.is_empty()
        || cur.thinking.is_some()
    {
        out.push(cur);
    }
    out
}

/// Attach a result tag to the call of this reply it answers: the MCP call with its
/// `call-id`, or the last search of its kind still without output. `false` when none is.
fn answer(out: &mut [Message], cur: &mut Message, tag: &Tag<'_>) -> bool {
    let is_error = tag.attr("is-error") == Some("true");
    let output = tag.body.trim().to_string();
    let calls = out
        .iter_mut()
        .chain(std::iter::once(cur))
        .rev()
        .flat_map(|m| m.tool_calls.iter_mut().rev());
    let found = match tag.name {
        "dyad-mcp-tool-result" => {
            let Some(id) = tag.attr("call-id").filter(|i| !i.is_empty()) else {
                return false;
            };
            calls.into_iter().find(|c| c.tool_call_id == id)
        }
        other => {
            let of = other
                .trim_start_matches(PREFIX)
                .trim_end_matches("-result")
                .to_string();
            calls
                .into_iter()
                .find(|c| c.tool_name == of && c.output.is_none())
        }
    };
    match found {
        Some(c) => {
            c.output = Some(output);
            c.is_error = Some(is_error);
            true
        }
        None => false,
    }
}

/// A tool call from a tag: its name, its attributes (and a body the model wrote) as input,
/// a body Dyad wrote as output. A proposed change's result is `approved`, the row's
/// approval state.
fn call(
    b: &mut SessionBuilder,
    tag: &Tag<'_>,
    native: &str,
    n: usize,
    approved: Option<(&str, bool)>,
) -> ToolCall {
    let mut c = ToolCall {
        tool_call_id: format!("{native}.{n}"),
        tool_name: tag.name.trim_start_matches(PREFIX).to_string(),
        ..ToolCall::default()
    };
    let mut input = Map::new();
    for (k, v) in &tag.attrs {
        input.insert(k.clone(), Value::String(v.clone()));
    }
    let body = tag.body.trim();
    if tag.name == MCP_CALL || tag.name == MCP_RESULT {
        let server = tag.attr("server").unwrap_or_default();
        match tag.attr("tool").unwrap_or_default() {
            "" => {}
            tool if server.is_empty() => c.tool_name = tool.to_string(),
            tool => c.tool_name = format!("{server}__{tool}"),
        }
        if let Some(id) = tag.attr("call-id").filter(|i| !i.is_empty()) {
            c.tool_call_id = id.to_string();
        }
    }
    if tag.name == SUBAGENT {
        if let Some(thread) = tag.attr("thread-id").filter(|i| !i.is_empty()) {
            c.tool_call_id = thread.to_string();
        }
    }
    let failed = tag.attr("is-error") == Some("true")
        || matches!(tag.attr("state"), Some("aborted" | "error"));
    match kind(tag.name) {
        // The arguments as the model sent them (JSON text); the call keeps its tag's
        // attributes out, as they name the server and tool.
        Kind::Input(_) if tag.name == MCP_CALL => {
            let name = c.tool_name.clone();
            c.input = kit::call_arguments(body, "MCP tool calls", &mut b.unparsed, || {
                format!("message {native}: {name}")
            });
        }
        Kind::Action(key) | Kind::Input(key) => {
            let body = strip_fences(body);
            if !body.is_empty() {
                input.insert(key.to_string(), Value::String(body.to_string()));
            }
            c.input = Value::Object(input);
            if let (Kind::Action(_), Some((out, err)), true) =
                (kind(tag.name), approved, tag.closed)
            {
                c.output = Some(out.to_string());
                c.is_error = Some(err);
            }
        }
        _ => {
            c.input = Value::Object(input);
            // An MCP result with no call before it is shown whole, even when empty.
            if !body.is_empty() || tag.name == MCP_RESULT {
                c.output = Some(body.to_string());
                c.is_error = Some(failed);
            }
        }
    }
    if !tag.closed && c.output.is_none() {
        c.output = Some("[unfinished: the reply ended inside this tag]".into());
        c.is_error = Some(true);
    }
    c
}

/// The result of the calls a reply proposes, from the row's `approval_state`: Dyad applies
/// them all when the user (or auto-approve) approves, none when the user rejects; `None`
/// while undecided.
fn approval(b: &mut SessionBuilder, row: &Row<'_>, native: &str) -> Option<(&'static str, bool)> {
    match row.get("approval_state").str() {
        None | Some("") => None,
        Some("approved") => Some(("approved", false)),
        Some("rejected") => Some(("rejected: not applied", true)),
        Some(other) => {
            let other = other.to_string();
            b.unparsed
                .note("message fields", "unknown approval_state", || {
                    format!("message {native}: {other:?}")
                });
            None
        }
    }
}

/// A tag shown as text: its name and attributes in bold, its body below.
fn note(tag: &Tag<'_>) -> String {
    let label = tag.name.trim_start_matches(PREFIX).replace('-', " ");
    let mut head = format!("**{label}**");
    for (k, v) in &tag.attrs {
        if !v.trim().is_empty() {
            head.push_str(&format!(" · {k}: {}", v.trim()));
        }
    }
    let body = tag.body.trim();
    if body.is_empty() {
        head
    } else {
        format!("{head}\n\n{body}")
    }
}

/// A body with the Markdown fence lines the model may wrap it in taken off, as Dyad does
/// before writing a file or running SQL.
fn strip_fences(body: &str) -> &str {
    let mut s = body;
    if s.starts_with("```") {
        s = s.split_once('\n').map_or("", |(_, rest)| rest);
    }
    if let Some(i) = s.rfind('\n') {
        if s[i + 1..].starts_with("```") {
            s = &s[..i];
        }
    } else if s.starts_with("```") {
        s = "";
    }
    s
}

// ---------------------------------------------------------------------------------------
// Tags

const PREFIX: &str = "dyad-";
const ATTACHMENT: &str = "dyad-attachment";
const MCP_CALL: &str = "dyad-mcp-tool-call";
const MCP_RESULT: &str = "dyad-mcp-tool-result";
const SUBAGENT: &str = "dyad-subagent";

/// Every tag Dyad's chat view renders as a card (`DYAD_CUSTOM_TAG_NAMES` in
/// `src/lib/streamingMessageParser.ts`), and the prompt's attachment tag: any other `<name`
/// is text.
const TAGS: [&str; 56] = [
    "dyad-write",
    "dyad-rename",
    "dyad-delete",
    "dyad-add-dependency",
    "dyad-execute-sql",
    "dyad-read-logs",
    "dyad-add-integration",
    "dyad-enable-nitro",
    "dyad-output",
    "dyad-problem-report",
    "dyad-chat-summary",
    "dyad-edit",
    "dyad-grep",
    "dyad-explore-code",
    "dyad-search-replace",
    "dyad-codebase-context",
    "dyad-web-search-result",
    "dyad-web-search",
    "dyad-web-crawl",
    "dyad-web-fetch",
    "dyad-code-search-result",
    "dyad-code-search",
    "dyad-read",
    "dyad-git",
    "think",
    "dyad-command",
    "dyad-mcp-tool-call",
    "dyad-mcp-tool-result",
    "dyad-mcp-tool-search",
    "dyad-mcp-tool-schema",
    "dyad-list-files",
    "dyad-database-schema",
    "dyad-db-table-schema",
    "dyad-supabase-table-schema",
    "dyad-supabase-project-info",
    "dyad-neon-project-info",
    "dyad-neon-table-schema",
    "dyad-read-guide",
    "dyad-status",
    "dyad-compaction",
    "dyad-copy",
    "dyad-image-generation",
    "dyad-write-plan",
    "dyad-exit-plan",
    "dyad-questionnaire",
    "dyad-step-limit",
    "dyad-script",
    "dyad-app-blueprint",
    "dyad-security-finding",
    "dyad-test-assertions",
    "dyad-generate-test",
    "dyad-search-chats",
    "dyad-read-chat",
    "dyad-explore-chat-history",
    "dyad-subagent",
    ATTACHMENT,
];

/// The calls a build-mode reply proposes and approving it applies
/// (`response_processor.ts`), with the input key their body is shown under.
const ACTIONS: [(&str, &str); 7] = [
    ("dyad-write", "content"),
    ("dyad-search-replace", "content"),
    ("dyad-execute-sql", "query"),
    ("dyad-rename", "content"),
    ("dyad-delete", "content"),
    ("dyad-copy", "content"),
    ("dyad-add-dependency", "content"),
];

/// Other calls whose body is what the model wrote.
const INPUTS: [(&str, &str); 3] = [
    ("dyad-edit", "content"),
    ("dyad-generate-test", "content"),
    (MCP_CALL, "arguments"),
];

/// Tags shown as text: those whose body Dyad's chat search keeps as conversation
/// (`PRESERVE_BODY_TAGS` in `chat_search_text.ts`), the suggested-command buttons and the
/// context and problem notes Dyad writes into prompts.
const NOTES: [&str; 13] = [
    "dyad-chat-summary",
    "dyad-compaction",
    "dyad-write-plan",
    "dyad-exit-plan",
    "dyad-questionnaire",
    "dyad-app-blueprint",
    "dyad-security-finding",
    "dyad-status",
    "dyad-step-limit",
    "dyad-output",
    "dyad-command",
    "dyad-problem-report",
    "dyad-codebase-context",
];

const RESULTS: [&str; 3] = [
    MCP_RESULT,
    "dyad-web-search-result",
    "dyad-code-search-result",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Think,
    Attachment,
    Note,
    /// Proposed, applied on approval; the body is input under this key.
    Action(&'static str),
    /// The body is input under this key.
    Input(&'static str),
    /// Answers an earlier call.
    Result,
    /// The attributes are the input, the body the output.
    Output,
}

fn kind(name: &str) -> Kind {
    if name == "think" {
        Kind::Think
    } else if name == ATTACHMENT {
        Kind::Attachment
    } else if NOTES.contains(&name) {
        Kind::Note
    } else if RESULTS.contains(&name) {
        Kind::Result
    } else if let Some((_, k)) = ACTIONS.iter().find(|(t, _)| *t == name) {
        Kind::Action(k)
    } else if let Some((_, k)) = INPUTS.iter().find(|(t, _)| *t == name) {
        Kind::Input(k)
    } else {
        Kind::Output
    }
}

#[derive(Debug, PartialEq)]
enum Block<'a> {
    Text(&'a str),
    Tag(Tag<'a>),
}

#[derive(Debug, PartialEq)]
struct Tag<'a> {
    name: &'a str,
    attrs: Vec<(String, String)>,
    /// XML entities decoded.
    body: String,
    /// The closing tag was found; a reply cut off mid-tag leaves it open to the end.
    closed: bool,
    /// The tag as written, opening to closing.
    raw: &'a str,
}

impl Tag<'_> {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A message's text cut into text and tags the way Dyad's chat view cuts it: `<name` opens a
/// tag when `name` is one of [`TAGS`] and a space or `>` follows; its attributes are the
/// `key="value"` pairs up to the first `>`; its body runs to the first `</name>`, or to the
/// end when there is none. An opening tag without its `>` is text.
fn blocks(s: &str) -> Vec<Block<'_>> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let (mut text_from, mut at) = (0, 0);
    while let Some(off) = memchr::memchr(b'<', &bytes[at..]) {
        let lt = at + off;
        let name_end = lt
            + 1
            + bytes[lt + 1..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
                .count();
        let name = &s[lt + 1..name_end];
        let opens = TAGS.contains(&name)
            && matches!(
                bytes.get(name_end),
                Some(b' ' | b'\t' | b'\n' | b'\r' | b'>')
            );
        if !opens {
            at = lt + 1;
            continue;
        }
        let Some(gt) = memchr::memchr(b'>', &bytes[name_end..]).map(|o| name_end + o) else {
            break;
        };
        if lt > text_from {
            out.push(Block::Text(&s[text_from..lt]));
        }
        let close = format!("</{name}>");
        let body_from = gt + 1;
        let (body_to, end, closed) = match s[body_from..].find(&close) {
            Some(o) => (body_from + o, body_from + o + close.len(), true),
            None => (s.len(), s.len(), false),
        };
        out.push(Block::Tag(Tag {
            name,
            attrs: attributes(&s[name_end..gt]),
            body: unescape(&s[body_from..body_to], false),
            closed,
            raw: &s[lt..end],
        }));
        (text_from, at) = (end, end);
    }
    if text_from < s.len() {
        out.push(Block::Text(&s[text_from..]));
    }
    out
}

/// The `key="value"` pairs of an opening tag, values decoded (`&quot;` too).
fn attributes(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(eq) = rest.find("=\"") {
        let b = rest.as_bytes();
        let mut k = eq;
        while k > 0 && (b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_' || b[k - 1] == b'-') {
            k -= 1;
        }
        let key = &rest[k..eq];
        let value = &rest[eq + 2..];
        let Some(q) = value.find('"') else { break };
        if !key.is_empty() {
            out.push((key.to_string(), unescape(&value[..q], true)));
        }
        rest = &value[q + 1..];
    }
    out
}

/// `&lt;`, `&gt;`, `&amp;` (and in attributes `&quot;`) decoded in one pass, as Dyad's
/// `unescapeXmlContent` / `unescapeXmlAttr` leave them.
fn unescape(s: &str, attr: bool) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let hit = [
            ("&lt;", '<'),
            ("&gt;", '>'),
            ("&amp;", '&'),
            ("&quot;", '"'),
        ]
        .into_iter()
        .filter(|(e, _)| attr || *e != "&quot;")
        .find(|(e, _)| tail.starts_with(e));
        match hit {
            Some((e, c)) => {
                out.push(c);
                rest = &tail[e.len()..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn config_home_replaces_dot_config_and_macos_stays() {
        let mut env = Env::at_home(Path::new("/h"));
        let got =
            |env: &Env| -> Vec<PathBuf> { candidates(env).into_iter().map(|r| r.path).collect() };
        assert_eq!(
            got(&env),
            [
                PathBuf::from("/h/.config/dyad/sqlite.db"),
                PathBuf::from("/h/Library/Application Support/dyad/sqlite.db")
            ]
        );
        env.vars.insert("XDG_CONFIG_HOME".into(), "/x".into());
        assert_eq!(got(&env)[0], PathBuf::from("/x/dyad/sqlite.db"));
    }

    #[test]
    fn app_paths_resolve_under_the_default_apps_folder() {
        let linux = Path::new("/h/.config/dyad/sqlite.db");
        let mac = Path::new("/h/Library/Application Support/dyad/sqlite.db");
        assert_eq!(app_dir(linux, "todo").as_deref(), Some("/h/dyad-apps/todo"));
        assert_eq!(app_dir(mac, "todo").as_deref(), Some("/h/dyad-apps/todo"));
        assert_eq!(app_dir(linux, "/src/x").as_deref(), Some("/src/x"));
        assert_eq!(app_dir(Path::new("/else/sqlite.db"), "todo"), None);
    }

    fn tags(s: &str) -> Vec<(String, String, bool)> {
        blocks(s)
            .into_iter()
            .map(|b| match b {
                Block::Text(t) => ("text".into(), t.to_string(), true),
                Block::Tag(t) => (t.name.to_string(), t.body, t.closed),
            })
            .collect()
    }

    #[test]
    fn tags_cut_like_dyads_chat_view() {
        let s = "a <b> <dyad-write path=\"x&amp;y.tsx\">\n<div>&lt;ok&gt;</div>\n</dyad-write> \
                 <dyad-unknown x=\"1\"></dyad-unknown><dyad-read path=\"p\"";
        assert_eq!(
            tags(s),
            [
                ("text".into(), "a <b> ".into(), true),
                ("dyad-write".into(), "\n<div><ok></div>\n".into(), true),
                (
                    "text".into(),
                    " <dyad-unknown x=\"1\"></dyad-unknown><dyad-read path=\"p\"".into(),
                    true
                ),
            ]
        );
        let Block::Tag(w) = &blocks(s)[1] else {
            panic!("tag")
        };
        assert_eq!(w.attr("path"), Some("x&y.tsx"));
        // A reply cut off mid-tag: the tag runs to the end; a mismatched close is body.
        assert_eq!(
            tags("<think>x</dyad-write> y"),
            [("think".into(), "x</dyad-write> y".into(), false)]
        );
    }

    #[test]
    fn fences_around_a_body_come_off() {
        assert_eq!(strip_fences("```tsx\nconst a = 1;\n```"), "const a = 1;");
        assert_eq!(strip_fences("plain\ntext"), "plain\ntext");
        assert_eq!(strip_fences("```"), "");
    }
}
