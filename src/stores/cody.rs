//! Sourcegraph Cody for VS Code (sourcegraph/cody): every chat kept in the extension's VS Code
//! global state, one JSON value in the editor's `User/globalStorage/state.vscdb`.
//!
//! Learnt from Cody's own source, github.com/sourcegraph/cody at commit
//! `dced3c1d49bc2088e489205dc26f22757f52961a` (v1.114, July 2025):
//! `vscode/src/services/LocalStorageProvider.ts` (the global-state key
//! `cody-local-chatHistory-v2`, keyed per account as `<endpoint>-<username>`, each account's
//! `{chat: {<chat id>: transcript}}`; the same extension state holds `cody-config`, whose
//! `auth` carries the access token), `vscode/src/services/SecretStorageProvider.ts`
//! (`cody.access-token` in secret storage), `vscode/src/chat/chat-view/ChatBuilder.ts`
//! (`toSerializedChatTranscript`: the chat id is the creation time as
//! `Date.toUTCString()`, interactions are (human, assistant) pairs),
//! `vscode/src/chat/chat-view/ChatHistoryManager.ts`,
//! `vscode/src/chat/chat-view/handlers/AgenticHandler.ts` (agent mode: the reply holds
//! `tool_call` parts, the next "human" message the `tool_result` parts and each tool's
//! `tool-state` item, `status: error` when it failed), `lib/shared/src/chat/transcript/index.ts`
//! and `messages.ts` (`SerializedChatTranscript`, `SerializedChatInteraction`,
//! `SerializedChatMessage`, `ChatError`, `ProcessingStep`),
//! `lib/shared/src/sourcegraph-api/completions/types.ts` (`MessagePart`) and
//! `lib/shared/src/codebase-context/messages.ts` (`ContextItem`). The older shapes are from the
//! same repository's history: commit `a7cf2726c^` (`InteractionJSON` with `displayText`,
//! `fullContext`, `usedContextFiles`, per-interaction `timestamp`; unkeyed `{chat, input}`
//! history before the per-account migration of #2261) and `e45f23f2d^` (the transcript's
//! `chatModel`).
//!
//! **Where.** VS Code keeps an extension's `globalState` as one row of the `ItemTable` of the
//! profile's `globalStorage/state.vscdb`, keyed by the extension id `sourcegraph.cody-ai`,
//! whose value is the JSON of every key the extension set. The editors' user-data
//! directories are looked up as VS Code does: `$VSCODE_PORTABLE/user-data`,
//! `$VSCODE_APPDATA/<editor>`, `$XDG_CONFIG_HOME/<editor>` (default `~/.config/<editor>`) and
//! macOS `~/Library/Application Support/<editor>`, for Code, Code - Insiders, VSCodium,
//! Cursor and Windsurf; each `User/globalStorage/state.vscdb` and each profile's
//! `User/profiles/<id>/globalStorage/state.vscdb` present when sessfs starts. The remote
//! servers' data directories hold no global state (the editor window keeps it). A `--store`
//! path may be a `state.vscdb`, a `globalStorage` directory or a `User` directory.
//!
//! **What is read.** Only the row keyed `sourcegraph.cody-ai`, and of its value only
//! `cody-local-chatHistory-v2`: SQLite's JSON functions take it out inside the read, so the
//! rest of the value (`cody-config` with the access token, endpoint history, model
//! preferences, the anonymous user id) never leaves the database. The `secret://…` rows (the
//! `cody.access-token` secret) and every other extension's row are never selected. Each chat
//! is one session; a chat's id is the session id, its account a `account:` tag. The
//! account's `input` list (the prompt box's recall history) is not read: it repeats prompts.
//!
//! **Messages.** Each interaction is a prompt and its reply: text (`displayText` in old
//! builds, the text sent kept as context when it differs), the prompt's context items and old
//! builds' `fullContext` and `usedContextFiles` as context, the intent when it is not plain
//! chat, search queries, processing steps and the sub-messages of tool-using replies as
//! events, a reply's `error` as an event, agent mode's tool calls paired with their results.
//! `editorState` (the rich editor's copy of the prompt) and `contextAlternatives` (other
//! rankings of the same context) are not shown. Cody keeps no token usage in its history,
//! and no per-message times since early 2024 (the chat's creation time is its id).

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Reader, Rows, Table};
use super::vscode::{state_dbs, state_glance, vscode_roots};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, Source, TokenUsage, ToolCall};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The extension id: the `ItemTable` key of Cody's global state.
pub const EXTENSION_ID: &str = "sourcegraph.cody-ai";
/// The global-state key of the chat history.
pub const HISTORY_KEY: &str = "cody-local-chatHistory-v2";
/// VS Code builds that can host the extension, by their user-data directory name.
const EDITORS: &[&str] = &["Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"];

/// Every `state.vscdb` of every editor's `User` directory, with the profiles present now.
pub fn candidates(env: &Env) -> Vec<Root> {
    vscode_roots(env, Agent::Cody, EDITORS)
}

pub struct CodyStore {
    base: Base,
    reader: Reader,
    snaps: sqlite::Snapshots<Fetched>,
}

/// One database's chats as last read: each chat's JSON text, by listing key.
struct Fetched {
    chats: Vec<Chat>,
    by_key: HashMap<String, usize>,
    /// Why no chat could be read (the extension's value is not JSON).
    problem: Option<String>,
}

struct Chat {
    /// `<endpoint>-<username>`; empty for the unkeyed history of builds before #2261.
    account: String,
    id: String,
    /// SQLite's `json_each` type of the value (`object` for a transcript).
    kind: String,
    json: String,
}

fn key_of(account: &str, id: &str) -> String {
    format!("{account}\n{id}")
}

impl CodyStore {
    pub fn new(roots: Vec<Root>) -> CodyStore {
        CodyStore {
            base: Base::new(Agent::Cody, roots),
            reader: Reader::new(),
            snaps: sqlite::Snapshots::default(),
        }
    }

    fn dbs(&self) -> Vec<(usize, PathBuf)> {
        state_dbs(&self.base.roots)
    }

    /// The chats of `db`, read again only when the database or its WAL changed. While the
    /// database is busy the last read is kept (and the next call tries again).
    fn snap(&self, db: &Path) -> Result<Arc<sqlite::Snapshot<Fetched>>, sqlite::Error> {
        self.snaps.get(&self.reader, db, |c| {
            let (chats, problem) = fetch(c)?;
            let by_key = chats
                .iter()
                .enumerate()
                .map(|(i, c)| (key_of(&c.account, &c.id), i))
                .collect();
            Ok(Fetched {
                chats,
                by_key,
                problem,
            })
        })
    }
}

impl Store for CodyStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (_, db) in self.dbs() {
            match self.snap(&db) {
                Ok(s) => out.extend(s.problem.iter().map(|p| format!("{}: {p}", db.display()))),
                Err(e) => out.push(format!("{}: {e}", db.display())),
            }
        }
        out
    }

    /// Every VS Code, Cursor and Windsurf user has the databases; only those where Cody saved
    /// a chat (or left a value that says why none can be read, or a database that cannot be
    /// opened) make the store found. The read is the one listing takes next, kept.
    fn found(&self) -> bool {
        self.dbs().iter().any(|(_, db)| match self.snap(db) {
            Ok(s) => !s.chats.is_empty() || s.problem.is_some(),
            Err(_) => true,
        })
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (root, db) in self.dbs() {
            let snap = match self.snap(&db) {
                Ok(s) => s,
                Err(e) => {
                    log::warn!("cody: {}: {e}", db.display());
                    continue;
                }
            };
            if let Some(p) = &snap.problem {
                log::warn!("cody: {}: {p}", db.display());
            }
            for c in &snap.chats {
                let mut l = sqlite::row_session(&c.id, &db, root);
                l.key = Some(key_of(&c.account, &c.id));
                out.push(l);
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let key = listed.key.clone().unwrap_or_default();
        let empty = |w: String| {
            let mut s = Session::new(Agent::Cody, &listed.id);
            s.source = source(db);
            s.warnings.push(w);
            s
        };
        match self.snap(db) {
            Ok(snap) => match snap.by_key.get(&key).and_then(|&i| snap.chats.get(i)) {
                Some(chat) => {
                    let mut s = build(chat, db);
                    if let Some(n) = &snap.note {
                        s.warnings.insert(0, n.clone());
                    }
                    s
                }
                None => empty(format!(
                    "chat {} is no longer in {} (deleted while reading?)",
                    listed.id,
                    db.display()
                )),
            },
            Err(e) => empty(format!("cannot read {}: {e}", db.display())),
        }
    }

    /// A chat's version is its own JSON text: VS Code rewrites the whole extension value on
    /// every change (and the row on any key of Cody's), so only the chat that changed
    /// renders again.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        listed
            .iter()
            .map(|l| {
                let snap = self.snap(&l.path).ok()?;
                let chat = snap.chats.get(*snap.by_key.get(l.key.as_deref()?)?)?;
                Some(sqlite::hash_version((&chat.kind, &chat.json)))
            })
            .collect()
    }

    /// The listing reads each database (a write lands in it or its journals) and, for a
    /// root that is a directory, looks up the databases in it.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        Some(state_glance(&self.base.roots))
    }
}

fn source(db: &Path) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "cody-vscode-global-state".into(),
        format_version: Some(HISTORY_KEY.into()),
    }
}

/// Every chat of the database, in the order Cody stored them, and the problem that kept
/// them from being read. Only the `sourcegraph.cody-ai` row is selected, and only its
/// `cody-local-chatHistory-v2` leaves SQLite.
fn fetch(c: &Connection) -> rusqlite::Result<(Vec<Chat>, Option<String>)> {
    let t = Table::probe(c, "ItemTable")?;
    if !t.has("key") || !t.has("value") {
        return Ok((Vec::new(), None));
    }
    let valid = Rows::query(
        c,
        "SELECT json_valid(CAST(value AS TEXT)) FROM ItemTable WHERE key = ?1",
        vec!["valid".into()],
        [EXTENSION_ID],
    )?;
    match valid.first().and_then(|r| r.get("valid").int()) {
        None => return Ok((Vec::new(), None)),
        Some(0) => {
            return Ok((
                Vec::new(),
                Some(format!(
                    "the {EXTENSION_ID} row of ItemTable is not JSON: no Cody chat can be read"
                )),
            ))
        }
        Some(_) => {}
    }
    // Accounts are the keys of the history; the unkeyed history of old builds keeps its
    // chats right under `chat`. A value that is not an object holds no chat.
    let sql = format!(
        "SELECT a.key, c.key, c.type, c.value FROM ItemTable t,
           json_each(CASE WHEN json_type(CAST(t.value AS TEXT), '$.\"{HISTORY_KEY}\"') = 'object'
                          THEN json_extract(CAST(t.value AS TEXT), '$.\"{HISTORY_KEY}\"')
                          ELSE '{{}}' END) a,
           json_each(CASE WHEN a.type = 'object' THEN a.value ELSE '{{}}' END,
                     CASE WHEN a.key = 'chat' THEN '$' ELSE '$.chat' END) c
         WHERE t.key = ?1
         ORDER BY a.id, c.id"
    );
    let rows = Rows::query(
        c,
        &sql,
        vec!["account".into(), "id".into(), "type".into(), "value".into()],
        [EXTENSION_ID],
    )?;
    let chats = rows
        .iter()
        .map(|r| {
            let account = r.get("account").text().unwrap_or_default();
            Chat {
                account: if account == "chat" {
                    String::new()
                } else {
                    account
                },
                id: r.get("id").text().unwrap_or_default(),
                kind: r.get("type").text().unwrap_or_default(),
                json: r.get("value").text().unwrap_or_default(),
            }
        })
        .collect();
    Ok((chats, None))
}

// ---------------------------------------------------------------------------------------
// One chat

/// A time as Cody writes them: `Date.toUTCString()` (chat ids), ISO 8601, epoch ms.
fn time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    match v? {
        Value::String(s) => DateTime::parse_from_rfc2822(s.trim())
            .ok()
            .map(|d| d.with_timezone(&Utc))
            .or_else(|| kit::parse_rfc3339(s)),
        other => super::parse_time(other),
    }
}

const TRANSCRIPT_FIELDS: &[&str] = &[
    "id",
    "chatTitle",
    "chatModel",
    "interactions",
    "lastInteractionTimestamp",
    "enhancedContext",
    "scope",
];
const INTERACTION_FIELDS: &[&str] = &[
    "humanMessage",
    "assistantMessage",
    "fullContext",
    "context",
    "usedContextFiles",
    "usedPreciseContext",
    "timestamp",
];
/// Fields of a message: shown, or named in the module docs as not shown.
const MESSAGE_FIELDS: &[&str] = &[
    "speaker",
    "text",
    "displayText",
    "prefix",
    "model",
    "contextFiles",
    "editorState",
    "error",
    "intent",
    "manuallySelectedIntent",
    "search",
    "didYouMeanQuery",
    "agent",
    "processes",
    "subMessages",
    "content",
    "contextAlternatives",
    "preciseContext",
    "buttons",
    "data",
    "metadata",
    "cacheEnabled",
    "tokenUsage",
];

/// Fields of `obj` not in `known`, each shown raw where it stands and counted.
fn unknown_fields(
    b: &mut SessionBuilder,
    obj: &Map<String, Value>,
    known: &[&str],
    what: &str,
    place: &str,
) {
    for (k, v) in obj {
        if !known.contains(&k.as_str()) {
            let first = || format!("{place}: `{k}`");
            b.unparsed(what, "unknown field", first, k, &v.to_string(), None);
        }
    }
}

fn build(chat: &Chat, db: &Path) -> Session {
    let mut b = SessionBuilder::new(Agent::Cody, chat.id.clone());
    b.s.source = source(db);
    if !chat.account.is_empty() {
        b.s.tags.push(format!("account:{}", chat.account));
    }
    b.s.created_at = time(Some(&Value::String(chat.id.clone())));
    let v: Value = if chat.kind == "object" {
        serde_json::from_str(&chat.json).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let Value::Object(t) = v else {
        let first = || format!("chat {}: a JSON {}", chat.id, chat.kind);
        b.unparsed(
            "chats",
            "not a transcript object",
            first,
            "chat",
            &chat.json,
            None,
        );
        return b.finish();
    };
    unknown_fields(&mut b, &t, TRANSCRIPT_FIELDS, "transcript fields", "chat");
    b.s.title = kit::str_field(&Value::Object(t.clone()), "chatTitle")
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string);
    if b.s.created_at.is_none() {
        b.s.created_at = time(t.get("id"));
    }
    b.s.updated_at = time(t.get("lastInteractionTimestamp"));
    let chat_model = t
        .get("chatModel")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    b.s.set_model = chat_model.clone();
    if let Some(repos) = t
        .get("enhancedContext")
        .and_then(|e| e.get("selectedRepos"))
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty())
    {
        let names: Vec<String> = repos
            .iter()
            .map(|r| kit::str_field(r, "name").map_or_else(|| r.to_string(), str::to_string))
            .collect();
        b.context("selected repositories", names.join("\n"), None);
    }
    if let Some(scope) = t.get("scope").filter(|s| !s.is_null()) {
        b.context("scope", scope.to_string(), None);
    }
    match t.get("interactions") {
        Some(Value::Array(items)) => {
            for (i, it) in items.iter().enumerate() {
                interaction(&mut b, it, i, chat_model.as_deref());
            }
        }
        None | Some(Value::Null) => {}
        Some(other) => {
            let first = || "`interactions` is no list".to_string();
            b.unparsed(
                "transcript fields",
                "not a list",
                first,
                "interactions",
                &other.to_string(),
                None,
            );
        }
    }
    let last = b.s.updated_at;
    let mut s = b.finish();
    // Cody's times are the chat's, not its messages'; keep the later of the two.
    if last > s.updated_at {
        s.updated_at = last;
    }
    s
}

fn interaction(b: &mut SessionBuilder, it: &Value, i: usize, chat_model: Option<&str>) {
    let Value::Object(o) = it else {
        let first = || format!("interaction {i}");
        return b.unparsed(
            "interactions",
            "not an object",
            first,
            "interaction",
            &it.to_string(),
            None,
        );
    };
    let place = format!("interaction {i}");
    unknown_fields(b, o, INTERACTION_FIELDS, "interaction fields", &place);
    let ts = time(o.get("timestamp"));
    // Old builds: the context messages sent before the prompt.
    let full = o
        .get("fullContext")
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        .or(o.get("context"));
    if let Some(Value::Array(msgs)) = full {
        let texts: Vec<String> = msgs
            .iter()
            .filter(|m| kit::str_field(m, "speaker") != Some("assistant"))
            .map(|m| {
                let file = m.get("file").map(item_line);
                let text = kit::str_field(m, "text").unwrap_or_default();
                match file {
                    Some(f) => format!("{f}\n{text}"),
                    None => text.to_string(),
                }
            })
            .filter(|t| !t.trim().is_empty())
            .collect();
        if !texts.is_empty() {
            b.context("context", texts.join("\n\n"), ts);
        }
    }
    if let Some(Value::Array(p)) = o.get("usedPreciseContext") {
        if !p.is_empty() {
            let lines: Vec<String> = p.iter().map(|x| x.to_string()).collect();
            b.context("precise context", lines.join("\n"), ts);
        }
    }
    let used = o.get("usedContextFiles").and_then(Value::as_array);
    match o.get("humanMessage") {
        Some(h @ Value::Object(_)) => message(b, h, Role::User, ts, &place, chat_model, used),
        None | Some(Value::Null) => {}
        Some(other) => b.unparsed(
            "messages",
            "not an object",
            || format!("{place}: humanMessage"),
            "message",
            &other.to_string(),
            ts,
        ),
    }
    match o.get("assistantMessage") {
        Some(a @ Value::Object(_)) => message(b, a, Role::Assistant, ts, &place, chat_model, None),
        None | Some(Value::Null) => {}
        Some(other) => b.unparsed(
            "messages",
            "not an object",
            || format!("{place}: assistantMessage"),
            "message",
            &other.to_string(),
            ts,
        ),
    }
}

/// A URI as Cody stores it: a string, or VS Code's `{$mid, fsPath, path, scheme, external}`.
fn uri_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(
            s.strip_prefix("file://")
                .map_or_else(|| s.clone(), str::to_string),
        ),
        Value::Object(_) => {
            let scheme = kit::str_field(v, "scheme").unwrap_or("file");
            let path = kit::str_any(v, &["fsPath", "path"]);
            match (scheme, path) {
                ("file", Some(p)) => Some(p.to_string()),
                _ => kit::str_field(v, "external").or(path).map(str::to_string),
            }
        }
        _ => None,
    }
}

/// One context item as a line: `file /a/b.ts:3-9 (user)`, `repository github.com/x/y`.
fn item_line(v: &Value) -> String {
    let kind = kit::str_field(v, "type").unwrap_or("file");
    let mut what = kit::str_any(v, &["symbolName", "repoName", "title"])
        .map(str::to_string)
        .unwrap_or_default();
    if let Some(u) = v.get("uri").and_then(uri_text) {
        if what.is_empty() {
            what = u;
        } else if kind != "repository" {
            what = format!("{what} in {u}");
        }
    }
    if let Some((s, e)) = range_lines(v.get("range")) {
        what = if s == e {
            format!("{what}:{s}")
        } else {
            format!("{what}:{s}-{e}")
        };
    }
    let mut line = format!("{kind} {what}");
    if let Some(src) = kit::str_field(v, "source") {
        line.push_str(&format!(" ({src})"));
    }
    line
}

/// 1-based first and last line of a `RangeData` (`{start: {line}, end: {line}}`) or of the
/// `[start, end]` a `vscode.Range` serializes to.
fn range_lines(r: Option<&Value>) -> Option<(u64, u64)> {
    let r = r?;
    let (s, e) = match r {
        Value::Array(a) if a.len() == 2 => (&a[0], &a[1]),
        Value::Object(_) => (r.get("start")?, r.get("end")?),
        _ => return None,
    };
    let line = |p: &Value| p.get("line").and_then(Value::as_u64);
    Some((line(s)? + 1, line(e)? + 1))
}

/// A processing step (`ProcessingStep`) or a sub-message's step as an event line.
fn step_line(s: &Value) -> String {
    let title = kit::str_any(s, &["title", "id"]).unwrap_or("step");
    let mut line = match kit::str_field(s, "type") {
        Some(t) => format!("{t} step {title}"),
        None => format!("step {title}"),
    };
    if let Some(c) = kit::str_field(s, "content").filter(|c| !c.is_empty()) {
        line.push_str(&format!(": {c}"));
    }
    if let Some(st) = kit::str_field(s, "state") {
        line.push_str(&format!(" [{st}]"));
    }
    if let Some(err) = s.get("error").filter(|e| !e.is_null()) {
        line.push_str(&format!(" error: {}", error_text(err)));
    }
    if let Some(Value::Array(items)) = s.get("items") {
        for it in items {
            line.push_str(&format!("\n- {}", item_line(it)));
        }
    }
    line
}

fn error_text(e: &Value) -> String {
    let name = kit::str_field(e, "name").unwrap_or("Error");
    let msg = kit::str_field(e, "message").unwrap_or_default();
    let mut t = format!("{name}: {msg}");
    for k in ["userMessage", "retryMessage"] {
        if let Some(x) = kit::str_field(e, k).filter(|x| !x.is_empty() && *x != msg) {
            t.push_str(&format!("\n{x}"));
        }
    }
    t
}

fn message(
    b: &mut SessionBuilder,
    v: &Value,
    slot: Role,
    ts: Option<DateTime<Utc>>,
    place: &str,
    chat_model: Option<&str>,
    used_files: Option<&Vec<Value>>,
) {
    let Value::Object(o) = v else { return };
    unknown_fields(b, o, MESSAGE_FIELDS, "message fields", place);
    let role = match kit::str_field(v, "speaker") {
        Some("human") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("system") => Role::System,
        _ => slot,
    };
    let s = |k: &str| kit::str_field(v, k).filter(|t| !t.is_empty());

    // Context items: what was attached, and the tool states a failed result is told by.
    let mut failed = HashSet::new();
    let mut lines = Vec::new();
    let files = v
        .get("contextFiles")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .or(used_files);
    for it in files.into_iter().flatten() {
        if kit::str_field(it, "type") == Some("tool-state") {
            if kit::str_field(it, "status") == Some("error") {
                if let Some(id) = kit::str_field(it, "toolId") {
                    failed.insert(id.to_string());
                }
            }
            continue;
        }
        lines.push(item_line(it));
    }

    // Parts: text (the same as `text` when it is set), attachments, tool calls and results.
    let mut part_texts = Vec::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for p in v
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match kit::str_field(p, "type").unwrap_or_default() {
            "text" => part_texts.extend(s_of(p, "text")),
            "image_url" => {
                let url = kit::str_at(p, &["image_url", "url"]).unwrap_or_default();
                part_texts.push(kit::data_url_placeholder(url));
            }
            "context_file" => lines.push(format!(
                "file {}",
                p.get("uri").and_then(uri_text).unwrap_or_default()
            )),
            "context_repo" => lines.push(format!(
                "repository {}",
                kit::str_field(p, "repoId").unwrap_or_default()
            )),
            "tool_call" => {
                let c = p.get("tool_call").unwrap_or(&Value::Null);
                let id = kit::str_field(c, "id").unwrap_or_default().to_string();
                let raw = c.get("arguments").cloned().unwrap_or(Value::Null);
                let input = match &raw {
                    Value::String(a) => {
                        kit::call_arguments(a, "tool calls", &mut b.unparsed, || {
                            format!("{place}: call {id}")
                        })
                    }
                    other => other.clone(),
                };
                calls.push(ToolCall {
                    tool_call_id: id,
                    tool_name: kit::str_field(c, "name").unwrap_or_default().to_string(),
                    input,
                    ..ToolCall::default()
                });
            }
            "tool_result" => results.push(p.get("tool_result").cloned().unwrap_or(Value::Null)),
            other => {
                let first = || format!("{place}: `{other}`");
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
    if !lines.is_empty() {
        let label = if role == Role::User {
            "context files"
        } else {
            "reply context"
        };
        b.context(label, lines.join("\n"), ts);
    }

    // What the user or Cody chose before the prompt ran (not repeated on the messages that
    // only carry an agent's tool results).
    let intent = s("intent");
    let manual = s("manuallySelectedIntent");
    let results_only = !results.is_empty() && s("text").is_none();
    if !results_only
        && (intent.is_some_and(|i| i != "chat") || manual.is_some() || s("agent").is_some())
    {
        let mut e = match (intent, manual) {
            (Some(i), Some(m)) if i != m => format!("intent: {i} (selected: {m})"),
            (_, Some(m)) => format!("intent: {m} (selected by hand)"),
            (i, None) => format!("intent: {}", i.unwrap_or("chat")),
        };
        if let Some(a) = s("agent") {
            e.push_str(&format!(", agent: {a}"));
        }
        b.event(e, ts);
    }

    // The text: old builds show `displayText` and send `text`.
    let text = s("text").map(str::to_string);
    let shown = s("displayText").map(str::to_string);
    let mut content = shown.clone().or(text.clone()).unwrap_or_default();
    if content.is_empty() {
        content = part_texts.join("\n");
    } else {
        // Attachments are not in `text`; keep their placeholders.
        let extra: Vec<String> = part_texts
            .iter()
            .filter(|t| t.starts_with('[') && !content.contains(t.as_str()))
            .map(|t| format!("\n{t}"))
            .collect();
        content.extend(extra);
    }
    if let Some(prefix) = s("prefix") {
        b.context("reply prefix", prefix.to_string(), ts);
    }
    if let (Some(sent), Some(_)) = (&text, &shown) {
        if Some(sent) != shown.as_ref() {
            let label = if role == Role::User {
                "prompt as sent"
            } else {
                "reply as generated"
            };
            b.context(label, sent.clone(), ts);
        }
    }
    // Tool-using replies of early 2025: text pieces and steps.
    let mut steps = Vec::new();
    for sm in v
        .get("subMessages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = s_of(sm, "text").filter(|t| !content.contains(t.as_str())) {
            if !content.is_empty() {
                content.push_str("\n\n");
            }
            content.push_str(&t);
        }
        if let Some(st) = sm.get("step").filter(|x| !x.is_null()) {
            steps.push(step_line(st));
        }
    }
    let model = s("model")
        .or(kit::str_at(v, &["metadata", "chatModel"]))
        .or(chat_model.filter(|_| role == Role::Assistant))
        .map(str::to_string);
    let usage = v
        .get("tokenUsage")
        .filter(|u| u.is_object())
        .map(|u| TokenUsage {
            input_tokens: kit::u64_field(u, "promptTokens"),
            output_tokens: kit::u64_field(u, "completionTokens"),
            ..TokenUsage::default()
        });
    if let Some(search) = v.get("search").filter(|x| x.is_object()) {
        let q = kit::str_any(search, &["queryWithSelectedFilters", "query"]).unwrap_or_default();
        let mut e = format!("code search: {q}");
        if let Some(n) = kit::value_at(search, &["response", "results", "results"])
            .and_then(Value::as_array)
            .map(Vec::len)
        {
            e.push_str(&format!(" ({n} results)"));
        }
        b.event(e, ts);
    }
    if let Some(q) = s("didYouMeanQuery") {
        b.event(format!("did you mean: {q}"), ts);
    }
    if !(content.is_empty() && calls.is_empty()) || role == Role::Assistant && usage.is_some() {
        let (role, kind, label) = match role {
            Role::System => (
                Role::System,
                crate::model::MessageKind::Context,
                Some("system".to_string()),
            ),
            r => (r, crate::model::MessageKind::Normal, None),
        };
        b.push(Message {
            role,
            kind,
            label,
            content,
            timestamp: ts,
            tool_calls: calls,
            model: model.filter(|_| role == Role::Assistant),
            token_usage: usage,
            ..Message::default()
        });
    }
    for r in &results {
        let id = kit::str_field(r, "id").unwrap_or_default();
        let out = match r.get("content") {
            Some(Value::String(c)) => c.clone(),
            None | Some(Value::Null) => String::new(),
            Some(x) => x.to_string(),
        };
        b.tool_result(id, None, out, failed.contains(id), ts);
    }
    for p in v
        .get("processes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        b.event(step_line(p), ts);
    }
    for st in steps {
        b.event(st, ts);
    }
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        b.event(format!("error: {}", error_text(err)), ts);
    }
}

fn s_of(v: &Value, k: &str) -> Option<String> {
    kit::str_field(v, k)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_ids_are_utc_strings_and_iso_times_read_too() {
        let t = time(Some(&json!("Thu, 24 Jul 2025 17:07:57 GMT"))).expect("rfc 2822");
        assert_eq!(t.to_rfc3339(), "2025-07-24T17:07:57+00:00");
        let t = time(Some(&json!("2023-10-01T12:00:00Z"))).expect("iso");
        assert_eq!(t.to_rfc3339(), "2023-10-01T12:00:00+00:00");
        assert_eq!(time(Some(&json!("46147b93-a7eb-4b24"))), None);
    }

    #[test]
    fn context_items_name_their_file_lines_and_source() {
        let file = json!({"type": "file", "source": "user",
            "uri": {"$mid": 1, "fsPath": "/w/src/a.ts", "path": "/w/src/a.ts", "scheme": "file"},
            "range": {"start": {"line": 2, "character": 0}, "end": {"line": 8, "character": 1}}});
        assert_eq!(item_line(&file), "file /w/src/a.ts:3-9 (user)");
        let repo = json!({"type": "repository", "repoName": "github.com/x/y", "uri": "https://x"});
        assert_eq!(item_line(&repo), "repository github.com/x/y");
        let sym = json!({"type": "symbol", "symbolName": "main", "uri": "file:///w/m.go",
            "range": [{"line": 4, "character": 0}, {"line": 4, "character": 9}]});
        assert_eq!(item_line(&sym), "symbol main in /w/m.go:5");
    }
}
