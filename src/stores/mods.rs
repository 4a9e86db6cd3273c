//! mods (Charm's CLI for LLMs in pipelines): the conversations `mods` saves after each run
//! (`mods -t <title>`, `mods --continue`), one Go `encoding/gob` file per conversation with a
//! SQLite index beside it.
//!
//! Learnt from mods' own source, github.com/charmbracelet/mods at commit
//! `0425d0d7861e4bbc396200b3bd2eee1825715300` (2026-03-09, after v1.8.1):
//!
//! - `config.go`: the cache path is `$MODS_CACHE_PATH` (mods reads its settings' variables
//!   with the `MODS_` prefix), else `cache-path` in `mods.yml`, else
//!   `filepath.Join(xdg.DataHome, "mods")`: adrg/xdg's data home is `$XDG_DATA_HOME`, else
//!   `~/.local/share` on Linux and `~/Library/Application Support` on macOS (where it honours
//!   `XDG_DATA_HOME` too);
//! - `internal/cache/cache.go`, `convo.go`: each conversation is `<cache
//!   path>/conversations/<id>.gob`, rewritten whole by `os.Create` then `gob.Encoder.Encode`
//!   of the conversation's `*[]proto.Message` (no temporary file: a reader may see it empty
//!   or cut); `<cache path>/temp/` holds an expiring cache (GitHub Copilot's access tokens in
//!   the releases that had Copilot);
//! - `main.go` (`saveConversation`), `db.go`: `<cache path>/conversations/mods.db` is the
//!   index, a `conversations` table of `id` (a SHA-1, `sha.go`), `title`, `updated_at`, and
//!   `model` and `api` (added by `ALTER TABLE` when missing); a save writes the gob file,
//!   then `UPDATE`s or `INSERT`s the row (`updated_at = CURRENT_TIMESTAMP`); the title is
//!   `--title`, else the first line of the last prompt;
//! - `internal/proto/proto.go`: `Message{Role, Content string; ToolCalls []ToolCall}`,
//!   `ToolCall{ID string; Function Function; IsError bool}`, `Function{Name string;
//!   Arguments []byte}`; `stream.go` and `internal/stream/stream.go` (`CallTool`): a run
//!   saves the format and role instructions as `system` messages, the prompt (`user`), each
//!   reply (`assistant`, with its tool calls) and each MCP tool's result as a `tool` message
//!   whose content is the output and whose one `ToolCalls` entry repeats the call with
//!   `IsError`; `internal/ollama/format.go` numbers Ollama's calls `0`, `1`, … afresh in
//!   every reply.
//!
//! Before MCP support (commit `c48ad6b`, mods 1.8.0; read at `8c79d1d6`, v1.7.0) the gob held
//! `[]openai.ChatCompletionMessage` of sashabaranov/go-openai (v1.40.0 `chat.go`: `Role,
//! Content, Refusal, MultiContent, Name, ReasoningContent, FunctionCall, ToolCalls,
//! ToolCallID`), and before v1.7.0 (`1eafd32`) the cache path itself was the conversations
//! directory (`xdg.DataHome/mods/conversations`, so the default place never moved).
//!
//! Design decisions and why:
//! - **Roots** are cache paths: `$MODS_CACHE_PATH` alone when set (as mods does), else the
//!   XDG (or `~/.local/share`) one and the macOS one. A root's conversations are in its
//!   `conversations/` when that exists, else in the root itself (a `--store` naming the
//!   conversations directory, or a `MODS_CACHE_PATH` used before v1.7.0). `cache-path` set
//!   in `mods.yml` is not followed: that file can hold API keys and is never opened;
//!   `--store mods=DIR` adds such a place.
//! - **Sessions**: one per conversation, named by its id: every `*.gob` file of the
//!   directory and every row of `mods.db`. A file without a row (mods writes the file
//!   first, and deletes it again only when the row cannot be saved) and a row without its
//!   file (deleted, or not written yet) still show, each with a warning. `temp/` is never
//!   listed.
//! - **Index**: `mods.db` is read only through [`super::sqlite`] (read-only, never locking
//!   mods out) and only its `conversations` table: the title, `updated_at` (the update time;
//!   mods keeps no creation time), `model` (the session's set model: the row holds the last
//!   run's, and no reply records its own) and `api` (a tag `api:<name>`). A conversation's
//!   version is its row and its file's size and mtime, so one run re-renders only the
//!   conversation it saved.
//! - **Messages** are read by field name, as gob itself matches them, so both message types
//!   read with one code path: `system` messages are context labelled `system prompt`;
//!   `user` messages prompts (an empty one shows nothing, as `mods --show` skips it);
//!   `assistant` messages replies with their tool calls (arguments are JSON text);
//!   `tool` messages the results of the calls they name (failed when `IsError`). From the
//!   OpenAI type also `MultiContent` parts (images as placeholders), `ReasoningContent` as
//!   thinking, `Refusal`, `FunctionCall` and `function` results, `ToolCallID`; mods never
//!   filled them, but what is there is shown. Another role, and a field of another name,
//!   cost a warning.
//! - **Cut or broken files**: the decoder ([`super::gob`]) keeps every message before the
//!   point where a file stops making sense; the warning says where and why.

use super::gob::{self, Value};
use super::kit::{self, EntryType, SessionBuilder};
use super::sqlite::{self, Reader, Rows, Table};
use super::{stat_version, Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, ToolCall};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The index's file name in a conversations directory.
const DB_NAME: &str = "mods.db";
const CONVERSATIONS: &str = "conversations";
const GOB: &str = ".gob";
/// Larger conversation files are not decoded (a whole file is held while decoding).
const MAX_GOB_BYTES: u64 = 64 << 20;
/// The fields of a message the store reads: mods' `proto.Message` and go-openai's
/// `ChatCompletionMessage`.
const KNOWN_FIELDS: &[&str] = &[
    "Role",
    "Content",
    "ToolCalls",
    "MultiContent",
    "Name",
    "ReasoningContent",
    "Refusal",
    "FunctionCall",
    "ToolCallID",
];
/// The columns of `conversations` the store reads (`model` and `api` came by `ALTER TABLE`).
const COLUMNS: [&str; 5] = ["id", "title", "updated_at", "model", "api"];

/// `$MODS_CACHE_PATH` alone when set; else the XDG (or `~/.local/share`) data directory's
/// `mods` and the macOS one.
pub fn candidates(env: &Env) -> Vec<Root> {
    if let Some(p) = env.path_var("MODS_CACHE_PATH") {
        return vec![Root::new(Agent::Mods, p, "MODS_CACHE_PATH")];
    }
    let data = match env.path_var("XDG_DATA_HOME") {
        Some(p) => (p.join("mods"), "XDG_DATA_HOME"),
        None => (env.home.join(".local/share/mods"), "default"),
    };
    vec![
        Root::new(Agent::Mods, data.0, data.1),
        Root::new(
            Agent::Mods,
            env.home.join("Library/Application Support/mods"),
            "macOS",
        ),
    ]
}

/// The directory holding a root's conversations: its `conversations/` when that exists,
/// else the root itself.
pub fn conversations_dir(root: &Path) -> PathBuf {
    let sub = root.join(CONVERSATIONS);
    if sub.is_dir() {
        sub
    } else {
        root.to_path_buf()
    }
}

/// The file of conversation `id` in `dir`; `None` for an id that is no plain file name (mods
/// only writes SHA-1s; a row naming another path must not lead outside the directory).
fn gob_path(dir: &Path, id: &str) -> Option<PathBuf> {
    let plain = !id.is_empty() && id != "." && id != ".." && !id.contains(['/', '\0']);
    plain.then(|| dir.join(format!("{id}{GOB}")))
}

pub struct ModsStore {
    base: Base,
    reader: Reader,
}

/// One conversations directory and its index, if there is one.
struct Place {
    root: usize,
    dir: PathBuf,
    db: Option<PathBuf>,
}

impl ModsStore {
    pub fn new(roots: Vec<Root>) -> ModsStore {
        ModsStore {
            base: Base::new(Agent::Mods, roots),
            reader: Reader::new(),
        }
    }

    /// Every conversations directory the roots lead to, each once.
    fn places(&self) -> Vec<Place> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for (i, r) in self.base.roots.iter().enumerate() {
            let dir = conversations_dir(&r.path);
            if !dir.is_dir() || !seen.insert(dir.canonicalize().unwrap_or_else(|_| dir.clone())) {
                continue;
            }
            let db = Some(dir.join(DB_NAME)).filter(|d| d.is_file());
            out.push(Place { root: i, dir, db });
        }
        out
    }
}

/// The session of conversation `id` in `p`: its file (or, for an id that names none, the
/// index) first, then the index and its journal.
fn listed(p: &Place, id: String) -> Listed {
    let gob = gob_path(&p.dir, &id);
    let path = gob
        .clone()
        .or_else(|| p.db.clone())
        .unwrap_or_else(|| p.dir.join(DB_NAME));
    let mut sources: Vec<PathBuf> = gob.into_iter().collect();
    if let Some(db) = &p.db {
        sources.extend([db.clone(), sqlite::companion(db, "-wal")]);
    }
    Listed {
        key: p.db.as_ref().map(|_| id.clone()),
        id,
        path,
        sources,
        root: p.root,
    }
}

impl Store for ModsStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let dbs: Vec<PathBuf> = self.places().into_iter().filter_map(|p| p.db).collect();
        self.reader
            .problems(dbs.iter().map(PathBuf::as_path), list_db)
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for p in self.places() {
            let mut ids: Vec<String> = Vec::new();
            let mut seen = BTreeSet::new();
            for (f, t) in kit::typed_entries(&p.dir) {
                let name = f.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
                if t != EntryType::File
                    || name.len() <= GOB.len()
                    || !name.ends_with(GOB.as_bytes())
                {
                    continue;
                }
                let id = f.file_stem().map(crate::names::os_id).unwrap_or_default();
                if seen.insert(id.clone()) {
                    ids.push(id);
                }
            }
            if let Some(db) = &p.db {
                for id in self.reader.list("mods", db, list_db).unwrap_or_default() {
                    if seen.insert(id.clone()) {
                        ids.push(id);
                    }
                }
            }
            out.extend(ids.into_iter().map(|id| listed(&p, id)));
        }
        out
    }

    /// A write to a conversation's own file leaves the listing as it was; the index is not
    /// a session's own file, so a write to it lists the store again.
    fn keeps_listing(&self, listed: &Listed) -> bool {
        kit::file_name(&listed.path).ends_with(GOB)
    }

    /// Each root and its conversations directory (their names are listed; `conversations/`
    /// appearing in a root moves where the store looks) and every index with its journals.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            g.dirs.push(root.path.clone());
            let dir = conversations_dir(&root.path);
            g.files.extend(sqlite::with_journals(&dir.join(DB_NAME)));
            if dir != root.path {
                g.dirs.push(dir);
            }
        }
        Some(g)
    }

    /// A conversation's row in the index with its file's size and mtime: a run writes one
    /// file and one row, so the others keep their versions.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        let mut out = vec![None; listed.len()];
        let mut by_db: HashMap<PathBuf, Vec<(usize, &str)>> = HashMap::new();
        for (i, l) in listed.iter().enumerate() {
            let (Some(key), Some(db)) = (l.key.as_deref(), index_of(l)) else {
                continue;
            };
            by_db.entry(db).or_default().push((i, key));
        }
        for (db, keyed) in by_db {
            let keys: Vec<&str> = keyed.iter().map(|&(_, k)| k).collect();
            let rows = self.reader.versions(
                &db,
                &keys,
                |c| Table::probe(c, "conversations"),
                |c, t, id| Ok(sqlite::hash_version(fetch_row(c, t, id)?.rows)),
            );
            for ((i, _), row) in keyed.into_iter().zip(rows) {
                let file = gob_path(&db_dir(&db), &listed[i].id).and_then(|g| stat_version(&g));
                out[i] = row.map(|r| sqlite::hash_version((r, file)));
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        let dir = listed
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let id = &listed.id;
        let mut b = SessionBuilder::new(Agent::Mods, id);
        b.s.source.format = "mods-gob".into();
        let gob = gob_path(&dir, id);
        b.s.source.paths.extend(gob.clone());
        let db = Some(dir.join(DB_NAME)).filter(|d| d.is_file());
        let row = match &db {
            Some(db) => {
                b.s.source.paths.push(db.clone());
                self.row(&mut b, db, id)
            }
            None => {
                b.warn(format!(
                    "no {DB_NAME} beside the conversation: no title, time or model"
                ));
                None
            }
        };
        let updated = row.as_ref().and_then(|r| r.updated_at);
        match &gob {
            Some(path) if path.exists() => read_conversation(&mut b, path),
            Some(path) => b.warn(format!(
                "{} is missing: {DB_NAME} lists the conversation but its messages are gone \
                 (deleted, or not written yet)",
                kit::file_name(path)
            )),
            None => b.warn(format!(
                "the id {id:?} in {DB_NAME} names no conversation file"
            )),
        }
        if let Some(r) = row {
            b.s.title = r.title;
            b.s.set_model = r.model;
            if let Some(api) = r.api {
                b.s.tags.push(format!("api:{api}"));
            }
        }
        if updated.is_some() {
            b.s.updated_at = updated;
        } else if let Some(path) = gob.as_deref() {
            b.s.updated_at = std::fs::metadata(path)
                .and_then(|m| m.modified())
                .ok()
                .map(DateTime::<Utc>::from);
        }
        if b.s.title.is_none() {
            // mods' own rule for a conversation saved without a title.
            b.s.title =
                b.s.messages
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::User && !m.content.is_empty())
                    .and_then(|m| kit::title_from_text(&m.content));
        }
        b.finish()
    }
}

impl ModsStore {
    /// The conversation's row, or `None` after a warning saying why there is none.
    fn row(&self, b: &mut SessionBuilder, db: &Path, id: &str) -> Option<IndexRow> {
        let read = self.reader.read(db, sqlite::Access::InPlace, |c| {
            sqlite::snapshot(c, |c| fetch_row(c, &Table::probe(c, "conversations")?, id))
        });
        match read {
            Ok((rows, note)) => {
                if let Some(n) = note {
                    b.warn(n);
                }
                let row = rows.first().map(|r| IndexRow {
                    title: r.get("title").non_empty(),
                    updated_at: r.get("updated_at").time(),
                    model: r.get("model").non_empty(),
                    api: r.get("api").non_empty(),
                });
                if row.is_none() {
                    b.warn(format!(
                        "no row in {DB_NAME} for this conversation (saved without its index \
                         entry, or being saved): no title, time or model"
                    ));
                }
                row
            }
            Err(e) => {
                // Read again at the next check rather than serve this until the next write.
                self.reader.invalidate(db, id);
                b.warn(format!("cannot read {}: {e}", db.display()));
                None
            }
        }
    }
}

/// What the index keeps of a conversation.
struct IndexRow {
    title: Option<String>,
    updated_at: Option<DateTime<Utc>>,
    model: Option<String>,
    api: Option<String>,
}

/// The index a session's versions come from: `mods.db` beside its file.
fn index_of(l: &Listed) -> Option<PathBuf> {
    let db = if kit::file_name(&l.path) == DB_NAME {
        l.path.clone()
    } else {
        l.path.parent()?.join(DB_NAME)
    };
    Some(db)
}

fn db_dir(db: &Path) -> PathBuf {
    db.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Every conversation id of an index, most recently updated first (as `mods --list`).
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Table::probe(conn, "conversations")?;
    if !t.has("id") || !t.has("title") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `conversations` table: not a mods database".into(),
        ));
    }
    let order = if t.has("updated_at") {
        "ORDER BY updated_at DESC"
    } else {
        ""
    };
    let rows = Rows::fetch(conn, &t, &["id"], order, [])?;
    Ok(rows.iter().filter_map(|r| r.get("id").text()).collect())
}

fn fetch_row(c: &Connection, t: &Table, id: &str) -> rusqlite::Result<Rows> {
    if !t.has("id") {
        return Ok(Rows::default());
    }
    Rows::fetch(c, t, &COLUMNS, "WHERE id = ?1", [id])
}

/// Decode one conversation file into `b`: every message read before the file stops making
/// sense, with a warning saying where and why.
fn read_conversation(b: &mut SessionBuilder, path: &Path) {
    let file = kit::file_name(path).to_string();
    let Some(bytes) = kit::read_capped(b, path, &file, MAX_GOB_BYTES) else {
        return;
    };
    let decoded = gob::decode(&bytes);
    let Some(first) = decoded.values.first() else {
        match decoded.error {
            Some(e) => b.warn(format!("{file}: {e}; no message could be read")),
            None => b.warn(format!(
                "{file}: holds no conversation (empty: being written?)"
            )),
        }
        return;
    };
    match first {
        Value::Slice(_) | Value::Array(_) => {}
        other => {
            b.warn(format!("{file}: not a list of messages; nothing is shown"));
            log::debug!("mods: {file}: {other:?}");
            return;
        }
    }
    let messages = first.items();
    if let Some(name) = messages.iter().find_map(Value::type_name) {
        b.s.source.format_version = Some(match name {
            "Message" => "proto.Message".to_string(),
            "ChatCompletionMessage" => "openai.ChatCompletionMessage".to_string(),
            other => other.to_string(),
        });
    }
    let mut unknown = BTreeSet::new();
    let mut chat = Chat::default();
    for (i, m) in messages.iter().enumerate() {
        if let Value::Struct(s) = m {
            unknown.extend(
                s.fields
                    .iter()
                    .map(|(n, _)| n.to_string())
                    .filter(|n| !KNOWN_FIELDS.contains(&n.as_str())),
            );
        }
        chat.message(b, i, m);
    }
    match &decoded.error {
        Some(e) if decoded.partial => b.warn(format!(
            "{file}: {e}; the {} messages before it are shown",
            messages.len()
        )),
        Some(e) => b.warn(format!("{file}: after the conversation: {e}")),
        None if decoded.values.len() > 1 => b.warn(format!(
            "{file}: {} values after the conversation are not read",
            decoded.values.len() - 1
        )),
        None => {}
    }
    if !unknown.is_empty() {
        b.warn(format!(
            "{file}: message fields this version of sessfs does not read: {}",
            unknown.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
}

/// A message's `Content`, with the OpenAI type's `MultiContent` parts after it: text as
/// is, images as placeholders.
fn content(b: &mut SessionBuilder, i: usize, m: &Value) -> String {
    let mut out = m.text_field("Content").into_owned();
    for p in m
        .field("MultiContent")
        .map(Value::items)
        .unwrap_or_default()
    {
        let text = match &*p.text_field("Type") {
            "text" => p.text_field("Text").into_owned(),
            "image_url" => match p.field("ImageURL").map(|u| u.text_field("URL")) {
                Some(url) if !url.is_empty() => kit::data_url_placeholder(&url),
                _ => "[image]".to_string(),
            },
            other => {
                let ty = if other.is_empty() { "(none)" } else { other };
                b.unparsed
                    .note("content parts", &format!("unknown part type {ty}"), || {
                        format!("message {i}")
                    });
                p.text_field("Text").into_owned()
            }
        };
        if !text.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&text);
        }
    }
    out
}

/// The reading of one conversation: the id given to the last legacy `FunctionCall`, until
/// a `function` message answers it.
#[derive(Default)]
struct Chat {
    open_function_call: Option<String>,
}

impl Chat {
    fn message(&mut self, b: &mut SessionBuilder, i: usize, m: &Value) {
        if !matches!(m, Value::Struct(_)) {
            b.unparsed(
                "messages",
                "not a struct",
                || format!("message {i}"),
                "message",
                &format!("{m:?}"),
                None,
            );
            return;
        }
        let text = content(b, i, m);
        let role = m.text_field("Role");
        match &*role {
            "user" => {
                if !text.is_empty() {
                    b.push(Message {
                        role: Role::User,
                        content: text,
                        ..Message::default()
                    });
                }
                self.stray_calls(b, i, m, "user");
            }
            "system" => {
                if !text.is_empty() {
                    b.context("system prompt", text, None);
                }
                self.stray_calls(b, i, m, "system");
            }
            "assistant" => {
                let mut content = text;
                let refusal = m.text_field("Refusal");
                if !refusal.trim().is_empty() {
                    kit::push_paragraph(&mut content, &format!("Refusal: {refusal}"));
                }
                let thinking = m.text_field("ReasoningContent");
                let calls = self.tool_calls(b, i, m);
                b.push(Message {
                    role: Role::Assistant,
                    content,
                    thinking: (!thinking.trim().is_empty()).then(|| thinking.into_owned()),
                    tool_calls: calls,
                    ..Message::default()
                });
            }
            "tool" => {
                let calls = m.field("ToolCalls").map(Value::items).unwrap_or_default();
                if calls.is_empty() {
                    // The OpenAI shape names its call by `ToolCallID`.
                    let name = m.text_field("Name");
                    let name = (!name.is_empty()).then_some(&*name);
                    b.tool_result(&m.text_field("ToolCallID"), name, text, false, None);
                    return;
                }
                // mods repeats the call it answers, with its error flag; the output is the
                // message's content.
                for c in calls {
                    let f = c.field("Function");
                    let name = f.map(|f| f.text_field("Name")).unwrap_or_default();
                    let name = (!name.is_empty()).then_some(&*name);
                    let failed = c.field("IsError").is_some_and(Value::is_true);
                    b.tool_result(&c.text_field("ID"), name, text.clone(), failed, None);
                }
            }
            "function" => {
                // A legacy result answers the last `FunctionCall` (one at a time, no id).
                let call = self.open_function_call.take().unwrap_or_default();
                let name = m.text_field("Name");
                let name = (!name.is_empty()).then_some(&*name);
                b.tool_result(&call, name, text, false, None);
            }
            other => {
                let role = if other.is_empty() { "(none)" } else { other };
                b.unparsed(
                    "messages",
                    &format!("unknown role {role}"),
                    || format!("message {i}"),
                    "message",
                    &text,
                    None,
                );
            }
        }
    }

    /// A reply's calls: `ToolCalls` (`{ID, Function: {Name, Arguments}}`, the arguments
    /// JSON text as bytes or a string) and the OpenAI type's single `FunctionCall`, which has
    /// no id: it is given `function-call-<message index>`.
    fn tool_calls(&mut self, b: &mut SessionBuilder, i: usize, m: &Value) -> Vec<ToolCall> {
        let mut out: Vec<ToolCall> = m
            .field("ToolCalls")
            .map(Value::items)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let f = c.field("Function");
                call(b, c.text_field("ID").into_owned(), f, || {
                    format!("message {i}, call {ci}")
                })
            })
            .collect();
        if let Some(f) = m.field("FunctionCall") {
            let id = format!("function-call-{i}");
            out.push(call(b, id.clone(), Some(f), || format!("message {i}")));
            self.open_function_call = Some(id);
        }
        out
    }

    /// Tool calls on a message that is no reply (mods never writes them): shown raw, counted.
    fn stray_calls(&self, b: &mut SessionBuilder, i: usize, m: &Value, role: &str) {
        let calls = m.field("ToolCalls").map(Value::items).unwrap_or_default();
        if calls.is_empty() {
            return;
        }
        let raw: Vec<String> = calls
            .iter()
            .map(|c| {
                let f = c.field("Function");
                format!(
                    "{} {} {}",
                    c.text_field("ID"),
                    f.map(|f| f.text_field("Name")).unwrap_or_default(),
                    f.map(|f| f.text_field("Arguments")).unwrap_or_default()
                )
            })
            .collect();
        b.unparsed(
            "messages",
            &format!("tool calls on a {role} message"),
            || format!("message {i}"),
            "tool calls",
            &raw.join("\n"),
            None,
        );
    }
}

fn call(
    b: &mut SessionBuilder,
    id: String,
    f: Option<&Value>,
    place: impl FnOnce() -> String,
) -> ToolCall {
    let name = f.map(|f| f.text_field("Name")).unwrap_or_default();
    let args = f.map(|f| f.text_field("Arguments")).unwrap_or_default();
    let input = if args.trim().is_empty() {
        serde_json::Value::Null
    } else {
        kit::call_arguments(&args, "tool call arguments", &mut b.unparsed, place)
    };
    ToolCall {
        tool_call_id: id,
        tool_name: name.into_owned(),
        input,
        ..ToolCall::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_path_variable_replaces_the_defaults() {
        let mut env = Env::at_home(Path::new("/h"));
        let got = |env: &Env| -> Vec<(PathBuf, String)> {
            candidates(env)
                .into_iter()
                .map(|r| (r.path, r.how))
                .collect()
        };
        assert_eq!(
            got(&env),
            [
                (PathBuf::from("/h/.local/share/mods"), "default".to_string()),
                (
                    PathBuf::from("/h/Library/Application Support/mods"),
                    "macOS".to_string()
                )
            ]
        );
        env.vars.insert("XDG_DATA_HOME".into(), "/x".into());
        assert_eq!(
            got(&env)[0],
            (PathBuf::from("/x/mods"), "XDG_DATA_HOME".into())
        );
        env.vars.insert("MODS_CACHE_PATH".into(), "~/cache".into());
        assert_eq!(
            got(&env),
            [(PathBuf::from("/h/cache"), "MODS_CACHE_PATH".to_string())]
        );
    }

    #[test]
    fn ids_that_are_no_file_name_name_no_file() {
        let d = Path::new("/d");
        assert_eq!(gob_path(d, "ab12"), Some(PathBuf::from("/d/ab12.gob")));
        for bad in ["", ".", "..", "../../etc/x", "a/b", "a\0b"] {
            assert_eq!(gob_path(d, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_root_is_a_cache_path_or_a_conversations_directory() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        assert_eq!(conversations_dir(root), root);
        std::fs::create_dir(root.join("conversations")).expect("mkdir");
        assert_eq!(conversations_dir(root), root.join("conversations"));
    }
}
