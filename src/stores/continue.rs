//! Continue (the open-source coding assistant for VS Code, JetBrains and its `cn` CLI): one
//! JSON document per session in `~/.continue/sessions/`, rewritten whole on every change,
//! plus the index `sessions.json` beside them.
//!
//! Read from Continue's own source, continuedev/continue
//! `d0a3c0b626b5bebc3bef4742eec05a0242be0bab` (2026-06-18):
//!
//! - `core/util/paths.ts`: `CONTINUE_GLOBAL_DIR` (else `~/.continue`), `sessions/<id>.json`,
//!   `sessions/sessions.json`;
//! - `core/util/history.ts`: `HistoryManager.save` writes `{sessionId, title,
//!   workspaceDirectory, history, mode?, chatModelTitle?, usage?}` with a plain
//!   `writeFileSync` and updates the index entry `{sessionId, title, dateCreated (epoch ms as
//!   a string), workspaceDirectory, messageCount}`; `load` takes the id from the file name;
//!   index entries with `session_id` are the pre-2024 format and skipped;
//! - `core/index.d.ts`: `Session`, `SessionUsage`, `ChatHistoryItem {message, contextItems,
//!   promptLogs, toolCallStates, reasoning {text, startAt, endAt}, appliedRules,
//!   conversationSummary}`, `ChatMessage` roles `user | assistant | thinking | system |
//!   tool` (`content` a string or `text`/`imageUrl` parts, `toolCalls`, `usage`,
//!   `redactedThinking`, `toolCallId`), `ToolCallState {toolCallId, toolCall, status,
//!   parsedArgs, output: ContextItem[]}`, `PromptLog {modelTitle, modelProvider, prompt,
//!   completion}` (`completionOptions.model` from commit `4160ca6b50` until `00985d3a5c`;
//!   `[prompt, completion]` pairs before that); `toolCallState` (one) before `toolCallStates`
//!   (commit `e34d71e600`);
//! - `gui/src/redux/slices/sessionSlice.ts`: the editor adds a `tool` history item per call
//!   whose content is the call's output (`renderContextItems`, `core/util/messageContent.ts`)
//!   and also keeps it in the call's `toolCallStates[].output`; reasoning in `<think>` tags
//!   goes to the item's `reasoning`, redacted thinking to a `thinking` item;
//! - `extensions/cli/src/session.ts`, `services/ChatHistoryService.ts`,
//!   `stream/handleToolCalls.ts`, `stream/streamChatResponse.helpers.ts`: the CLI writes no
//!   `tool` item (a result lives only in `toolCallStates[].output`), puts each API request's
//!   `usage` on the reply it made, and sums every request into the session's `usage`
//!   (`totalCost`, `promptTokens`, `completionTokens`, `promptTokensDetails`), requests that
//!   left no reply included;
//! - `core/util/conversationCompaction.ts`: a compaction's summary is the
//!   `conversationSummary` of the item it was made at.
//!
//! Design decisions and why:
//! - **Roots** are `$CONTINUE_GLOBAL_DIR/sessions`, else `~/.continue/sessions` (the same
//!   path on every platform). A `--store` path may be the `.continue` directory, its
//!   `sessions/`, or one session file. Beside `sessions/` Continue keeps `config.yaml`,
//!   `config.json` and `.env` (API keys), `index/` and `dev_data/`: none is opened.
//! - **Listing reads names only**: every `<id>.json` but `sessions.json`; the id is the file
//!   name, as Continue's own `load` takes it.
//! - **Each file is read in one read.** Continue replaces a session file whole on every
//!   change; a read may meet one cut mid-write. The document is then read field by field
//!   (the reader Amp's store uses): every top-level field and every complete history item
//!   before the cut is kept, the cut tail is shown as raw text, and a warning names the file.
//! - **Each output once**: a call's output is its `tool` item where there is one (the
//!   editor), else its `toolCallStates[].output` (the CLI), never both.
//! - **Usage once per request**: the session's `usage` is the sum of every request
//!   (Continue's own count, cost included); when it is there and not zero it is the count,
//!   and the per-reply `usage` it already holds is not counted again. Without it, each
//!   reply's `usage` is its request.
//! - **Forks read here**: a fork that keeps Continue's session files under another directory
//!   is this store with another [`Dialect`] (PearAI, [`super::pearai`]). What a fork adds to
//!   the document is read whichever program wrote the file, as a fork may have written into
//!   Continue's directory: the extra conversation lists of [`EXTRA_LISTS`] after `history`,
//!   and the `citations` of a web-search reply.

use super::amp::{parse_doc_of, percent_decode, Doc};
use super::kit::{self, title_from_text, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    Agent, Message, MessageKind, Role, Session, TokenUsage, ToolCall, SEALED_THINKING,
};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Larger session files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// The index Continue keeps beside the session files; not a session.
const INDEX_FILE: &str = "sessions.json";
/// JSON files of Continue's global directory that are no sessions (the config holds API
/// keys): never listed, even when a `--store` path names that directory and it has no
/// `sessions/`.
const NOT_SESSIONS: &[&str] = &[INDEX_FILE, "config.json", "sharedConfig.json"];
/// The roles of Continue's `ChatMessage` (`core/index.d.ts`).
const KNOWN_ROLES: &[&str] = &["user", "assistant", "thinking", "tool", "system"];
/// Titles Continue gives a session before it has one (`NEW_SESSION_TITLE`, the CLI's
/// `DEFAULT_SESSION_TITLE`): the first prompt says more.
const PLACEHOLDER_TITLES: &[&str] = &["New Session", "Untitled Session", ""];

/// What a fork of Continue changes: the agent its sessions show under and the format named
/// in `meta.json`. Everything else is read the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    pub agent: Agent,
    pub format: &'static str,
}

/// Continue itself.
pub const CONTINUE: Dialect = Dialect {
    agent: Agent::Continue,
    format: "continue-session-json",
};

/// Conversation lists a session document may hold besides `history`, in the order they are
/// read, each with the tag it gives a session where it is not empty. PearAI (`core/index.d.ts`
/// `PersistedSessionInfo`, `IntegrationHistoryMap`) keeps its web search's conversation
/// (Perplexity) in `perplexityHistory`, and until February 2025 its Creator's (aider) in
/// `aiderHistory`; the items are `history`'s.
pub const EXTRA_LISTS: &[(&str, &str)] = &[
    ("perplexityHistory", "integration:perplexity"),
    ("aiderHistory", "integration:aider"),
];

/// Every sessions directory Continue may use, existing or not, in priority order.
pub fn candidates(env: &Env) -> Vec<Root> {
    match env.path_var("CONTINUE_GLOBAL_DIR") {
        Some(p) => vec![Root::new(
            Agent::Continue,
            p.join("sessions"),
            "CONTINUE_GLOBAL_DIR",
        )],
        None => vec![Root::new(
            Agent::Continue,
            env.home.join(".continue/sessions"),
            "default",
        )],
    }
}

pub struct ContinueStore {
    dialect: Dialect,
    base: Base,
    index: Index,
}

impl ContinueStore {
    pub fn new(roots: Vec<Root>) -> ContinueStore {
        ContinueStore::with_dialect(CONTINUE, roots)
    }

    /// The store of a fork that keeps Continue's files (see [`Dialect`]).
    pub fn with_dialect(dialect: Dialect, roots: Vec<Root>) -> ContinueStore {
        ContinueStore {
            dialect,
            base: Base::new(dialect.agent, roots),
            index: Index::default(),
        }
    }
}

impl Store for ContinueStore {
    fn base(&self) -> &Base {
        &self.base
    }

    /// Each session's sources are its file and the index beside it: the index gives its
    /// title, time and directory, so a change there must reach the mount even when the
    /// session's file stays as it was; [`Store::versions`] keeps that to the session whose
    /// entry changed.
    fn list(&self) -> Vec<Listed> {
        let mut listed = kit::listed_by_stem(&self.base.roots, session_files);
        for l in &mut listed {
            if let Some(dir) = l.path.parent() {
                l.sources.push(dir.join(INDEX_FILE));
            }
        }
        listed
    }

    /// A session's version: its file's size and mtime and its own index entry, so a save
    /// of one session (which rewrites the whole index) renders no other session again.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        listed
            .iter()
            .map(|l| {
                let (len, mtime) = super::stat_version(&l.path)?;
                let entry = self.entry(l);
                let v = format!("{len}-{mtime:?}-{entry:?}");
                Some(crate::names::fnv1a(v.as_bytes()))
            })
            .collect()
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads file names only; rewriting a session never adds one.
        true
    }

    /// The listing reads the names in each root directory and in its `sessions/`; the
    /// session files are the sessions' sources, and a root that is one session file is its
    /// own. The index `sessions.json` is every session's source, so the search adds it.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        kit::root_and_sessions_glance(&self.base.roots)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_session(self.dialect, &listed.path, &listed.id, self.entry(listed))
    }
}

impl ContinueStore {
    /// The session's line in the index beside its file, if any.
    fn entry(&self, listed: &Listed) -> Option<IndexEntry> {
        listed.path.parent().and_then(|dir| {
            self.index
                .get(&dir.join(INDEX_FILE))
                .get(&listed.id)
                .cloned()
        })
    }
}

/// The session files under a root: `<root>/sessions/*.json` when the root is Continue's
/// global directory, else `<root>/*.json`; or the root itself when it is one session file.
/// The index `sessions.json` is never a session.
pub fn session_files(root: &Path) -> Vec<PathBuf> {
    if root.is_file() {
        return vec![root.to_path_buf()];
    }
    let sessions = root.join("sessions");
    let dir = if sessions.is_dir() {
        sessions
    } else {
        root.to_path_buf()
    };
    kit::typed_entries(&dir)
        .into_iter()
        .filter(|(p, t)| {
            let name = p.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
            *t == EntryType::File
                && !name.starts_with(b".")
                && name.ends_with(b".json")
                && !NOT_SESSIONS.iter().any(|n| name == n.as_bytes())
        })
        .map(|(p, _)| p)
        .collect()
}

/// What sessfs takes from an index entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexEntry {
    pub title: Option<String>,
    pub created: Option<DateTime<Utc>>,
    pub cwd: Option<String>,
}

type IndexMap = Arc<HashMap<String, IndexEntry>>;

/// `sessions.json` files parsed once per version: every session of a directory looks its
/// entry up in the same index.
#[derive(Default)]
struct Index(kit::PerVersion<IndexMap>);

impl Index {
    fn get(&self, path: &Path) -> IndexMap {
        self.0.get(path, |path| {
            Arc::new(
                kit::read_json(path, INDEX_FILE, MAX_JSON_BYTES)
                    .map(|v| parse_index(&v))
                    .unwrap_or_default(),
            )
        })
    }
}

/// The index's entries by session id. Entries of the pre-2024 format (`session_id`) name
/// files Continue itself no longer reads; they are skipped as Continue skips them.
pub fn parse_index(v: &Value) -> HashMap<String, IndexEntry> {
    let mut map = HashMap::new();
    for e in v.as_array().into_iter().flatten() {
        let Some(id) = kit::str_field(e, "sessionId") else {
            continue;
        };
        let created = match e.get("dateCreated") {
            Some(Value::String(s)) => s
                .parse::<i64>()
                .ok()
                .and_then(DateTime::<Utc>::from_timestamp_millis)
                .or_else(|| kit::parse_rfc3339(s)),
            Some(v) => super::parse_time(v),
            None => None,
        };
        map.insert(
            id.to_string(),
            IndexEntry {
                title: kit::str_field(e, "title")
                    .filter(|t| !PLACEHOLDER_TITLES.contains(&t.trim()))
                    .and_then(title_from_text),
                created,
                cwd: kit::str_field(e, "workspaceDirectory").and_then(workspace_path),
            },
        );
    }
    map
}

/// A workspace directory as a path: the editor stores a `file://` URI, the CLI a path.
fn workspace_path(w: &str) -> Option<String> {
    let w = w.trim();
    let path = match w.strip_prefix("file://") {
        Some(rest) => percent_decode(rest.strip_prefix("localhost").unwrap_or(rest)),
        None => w.to_string(),
    };
    Some(path).filter(|p| !p.is_empty())
}

/// Why a session file could not be read; shown as a warning naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {bytes} bytes, too large to parse, skipped")]
    TooLarge { file: String, bytes: u64 },
    #[error("{file}: not a JSON object; its text is shown raw")]
    NotObject { file: String },
    #[error("{file}: `history` is not a list (an older format); the file is shown raw")]
    NoHistory { file: String },
}

fn read_bytes(path: &Path, file: &str) -> Result<Vec<u8>, ReadError> {
    let meta = std::fs::metadata(path).map_err(|source| ReadError::Io {
        file: file.to_string(),
        source,
    })?;
    if meta.len() > MAX_JSON_BYTES {
        return Err(ReadError::TooLarge {
            file: file.to_string(),
            bytes: meta.len(),
        });
    }
    kit::read_file(path).map_err(|source| ReadError::Io {
        file: file.to_string(),
        source,
    })
}

/// Load one session file of `dialect`; `entry` is its line in `sessions.json`, if any.
pub fn load_session(dialect: Dialect, path: &Path, id: &str, entry: Option<IndexEntry>) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(dialect.agent, id);
    b.s.source.format = dialect.format.into();
    b.s.source.paths.push(path.to_path_buf());
    let entry = entry.unwrap_or_default();
    b.s.created_at = entry.created;
    let bytes = match read_bytes(path, &file) {
        Ok(bytes) => bytes,
        Err(e) => {
            b.warn(e.to_string());
            b.s.title = entry.title;
            b.s.cwd = entry.cwd;
            return b.finish();
        }
    };
    let Some((mut doc, cut_list)) = parse_session_doc(&bytes) else {
        b.warn(ReadError::NotObject { file }.to_string());
        let raw = kit::raw_text(&bytes);
        if !raw.trim().is_empty() {
            b.context("unparsed file", raw, None);
        }
        b.s.title = entry.title;
        b.s.cwd = entry.cwd;
        return b.finish();
    };
    if doc.cut.is_some() {
        b.warn(format!(
            "{file}: cut after {} {cut_list} items (half-written?); the rest is shown as raw text",
            doc.messages.len()
        ));
    }
    // Every conversation list, `history` first; a list that is no list costs a warning.
    let mut lists: Vec<(&str, Option<&str>, Vec<Value>)> = Vec::new();
    match take_list(&mut doc, cut_list, "history") {
        Ok(items) => lists.push(("history", None, items)),
        Err(_) => {
            b.warn(ReadError::NoHistory { file: file.clone() }.to_string());
            b.context("unparsed file", kit::raw_text(&bytes), None);
        }
    }
    for &(key, tag) in EXTRA_LISTS {
        match take_list(&mut doc, cut_list, key) {
            Ok(items) => lists.push((key, Some(tag), items)),
            Err(v) => {
                b.warn(format!("{file}: `{key}` is not a list; it is shown raw"));
                b.context(&format!("unparsed {key}"), v.to_string(), None);
            }
        }
    }
    let f = &doc.fields;
    b.s.title = field(f, "title")
        .filter(|t| !PLACEHOLDER_TITLES.contains(&t.trim()))
        .and_then(title_from_text)
        .or(entry.title);
    b.s.cwd = field(f, "workspaceDirectory")
        .and_then(workspace_path)
        .or(entry.cwd);
    if let Some(mode) = field(f, "mode").filter(|m| !m.is_empty()) {
        b.s.tags.push(format!("mode:{mode}"));
    }
    let chat_model = field(f, "chatModelTitle")
        .filter(|m| !m.is_empty())
        .map(str::to_string);

    // The session's own total, when Continue keeps one (the CLI): the count.
    let session_usage = f.get("usage").map(|u| (usage_of(u), u.get("totalCost")));
    let per_reply = match session_usage {
        Some((u, cost)) => {
            let usd = cost.and_then(Value::as_f64).filter(|c| *c > 0.0);
            if u.is_zero() && usd.is_none() {
                true
            } else {
                b.s.reported_usage = Some(u);
                if let Some(usd) = usd {
                    b.s.reported_cost = Some((usd, false));
                }
                false
            }
        }
        None => true,
    };

    let mut p = Parser {
        b,
        models: Vec::new(),
        per_reply,
        answered: HashSet::new(),
        status: HashMap::new(),
    };
    for (key, tag, items) in &lists {
        if items.is_empty() {
            continue;
        }
        if let Some(tag) = tag {
            p.b.s.tags.push(tag.to_string());
            if !p.b.s.messages.is_empty() {
                // Two conversations under one id: say where the second starts.
                p.b.event(format!("the session's `{key}` conversation"), None);
            }
        }
        p.models = turn_models(items, chat_model.clone());
        p.answered.extend(
            items
                .iter()
                .filter(|it| kit::str_at(it, &["message", "role"]) == Some("tool"))
                .filter_map(|it| kit::str_at(it, &["message", "toolCallId"]))
                .map(str::to_string),
        );
        for (i, item) in items.iter().enumerate() {
            p.item(i, item);
        }
    }
    let mut b = p.b;
    if let Some(cut) = doc.cut {
        b.context(&format!("unparsed tail of {file}"), cut, None);
    }
    b.finish()
}

/// The document and the list it was read item by item through: `history`, unless the file
/// is cut inside a later list of [`EXTRA_LISTS`] (a PearAI search, whose `history` is
/// empty); that list is then the one read item by item, so what came before the cut is kept
/// there too. `None` when the text is no JSON object.
fn parse_session_doc(bytes: &[u8]) -> Option<(Doc, &'static str)> {
    let doc = parse_doc_of(bytes, "history")?;
    if doc.cut.is_some() {
        for &(key, _) in EXTRA_LISTS {
            if doc.fields.contains_key(key) {
                continue;
            }
            if let Some(d) = parse_doc_of(bytes, key) {
                let history_whole = matches!(d.fields.get("history"), Some(Value::Array(_)));
                if history_whole && !d.messages.is_empty() {
                    return Some((d, key));
                }
            }
        }
    }
    Some((doc, "history"))
}

/// The items of list `key`. `parse_doc_of` holds the list it read item by item (`read`) as
/// its messages, unless it is no list: then it is a field, as every other list is. A missing
/// list is empty, and so is a `null` one but `history` (a document without a history is
/// none of Continue's); anything else that is no list is `Err`.
fn take_list(doc: &mut Doc, read: &str, key: &str) -> Result<Vec<Value>, Value> {
    match doc.fields.remove(key) {
        Some(Value::Array(a)) => Ok(a),
        Some(Value::Null) if key != "history" => Ok(Vec::new()),
        Some(other) => Err(other),
        None if key == read => Ok(std::mem::take(&mut doc.messages)),
        None => Ok(Vec::new()),
    }
}

/// A string field of the document's top level.
fn field<'a>(f: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    f.get(key).and_then(Value::as_str)
}

/// `Usage` as Continue records it. `promptTokens` is taken as the input, as Continue's own
/// cost count takes it; cache reads and writes are its `promptTokensDetails`.
fn usage_of(u: &Value) -> TokenUsage {
    TokenUsage {
        input_tokens: kit::u64_field(u, "promptTokens"),
        output_tokens: kit::u64_field(u, "completionTokens"),
        cached_tokens: kit::u64_at(u, &["promptTokensDetails", "cachedTokens"]),
        cache_write_tokens: kit::u64_at(u, &["promptTokensDetails", "cacheWriteTokens"]),
        ..TokenUsage::default()
    }
}

/// The model of a prompt log: `completionOptions.model` where the log has it, else the
/// model's title. A `[prompt, completion]` pair of old versions names none.
fn log_model(log: &Value) -> Option<String> {
    kit::str_at(log, &["completionOptions", "model"])
        .or_else(|| kit::str_field(log, "modelTitle"))
        .filter(|m| !m.is_empty())
        .map(str::to_string)
}

/// The model of every item: the last prompt log of its turn (a prompt and what follows it;
/// Continue logs a request on the turn's last item), else the previous turn's, else the
/// session's `chatModelTitle`.
fn turn_models(items: &[Value], chat_model: Option<String>) -> Vec<Option<String>> {
    let own: Vec<Option<String>> = items
        .iter()
        .map(|it| {
            it.get("promptLogs")
                .and_then(Value::as_array)
                .and_then(|logs| logs.iter().rev().find_map(log_model))
        })
        .collect();
    let mut out = vec![None; items.len()];
    let mut next: Option<String> = None;
    for i in (0..items.len()).rev() {
        if own[i].is_some() {
            next = own[i].clone();
        }
        out[i] = next.clone();
        if kit::str_at(&items[i], &["message", "role"]) == Some("user") {
            next = None;
        }
    }
    let mut last = chat_model;
    for m in out.iter_mut() {
        match m {
            Some(x) => last = Some(x.clone()),
            None => *m = last.clone(),
        }
    }
    out
}

/// A `MessageContent`: a string, or parts (`text`, `imageUrl` as a placeholder).
fn content_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match kit::str_field(p, "type") {
                Some("text") => kit::str_field(p, "text").map(str::to_string),
                Some("imageUrl") => Some(
                    kit::str_at(p, &["imageUrl", "url"])
                        .map(kit::data_url_placeholder)
                        .unwrap_or_else(|| "[image]".into()),
                ),
                _ => kit::str_field(p, "text")
                    .map(str::to_string)
                    .or_else(|| Some(p.to_string())),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Context items (`ContextItem[]`) as one text, as Continue renders them for the model.
fn context_items_text(items: &[Value]) -> String {
    items
        .iter()
        .filter_map(|c| kit::str_field(c, "content"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

struct Parser {
    b: SessionBuilder,
    /// The model of each item (see [`turn_models`]).
    models: Vec<Option<String>>,
    /// Usage comes from the replies (the session keeps no total).
    per_reply: bool,
    /// Calls a `tool` item answers: their output is that item's, not the call state's.
    answered: HashSet<String>,
    /// The status of each call, from its state.
    status: HashMap<String, String>,
}

impl Parser {
    fn item(&mut self, i: usize, item: &Value) {
        let Some(msg) = item.get("message").filter(|m| m.is_object()) else {
            self.b.unparsed(
                "history items",
                "no message",
                || format!("item {i}"),
                "history item",
                &item.to_string(),
                None,
            );
            return;
        };
        let ts = kit::value_at(item, &["reasoning", "startAt"]).and_then(super::parse_time);
        let native_id = kit::str_field(msg, "id")
            .map(str::to_string)
            .unwrap_or_else(|| format!("item-{i}"));
        let text = content_text(msg.get("content"));
        match kit::str_field(msg, "role") {
            Some("user") => {
                self.b.push(Message {
                    role: Role::User,
                    content: text,
                    native_id: Some(native_id),
                    ..Message::default()
                });
                self.context_items(item);
                self.rules(item);
            }
            Some(role @ ("assistant" | "thinking")) => {
                self.reply(i, item, msg, role, text, native_id, ts)
            }
            Some("tool") => {
                let call = kit::str_field(msg, "toolCallId").unwrap_or_default();
                let mut out = text;
                if out.is_empty() {
                    if let Some(items) = item.get("contextItems").and_then(Value::as_array) {
                        out = context_items_text(items);
                    }
                }
                let failed = self.failed(call);
                self.b.tool_result(call, None, out, failed, ts);
            }
            Some("system") => self.b.context("system message", text, ts),
            role => {
                let role = role.unwrap_or("(none)").to_string();
                self.b.unparsed(
                    "history items",
                    &format!("unknown role {role}"),
                    || format!("item {i}"),
                    "history item",
                    &item.to_string(),
                    ts,
                );
            }
        }
        if KNOWN_ROLES.contains(&kit::str_field(msg, "role").unwrap_or_default()) {
            // An item of another role is shown whole, its citations with it.
            self.citations(i, item, msg);
        }
        if let Some(summary) = kit::str_field(item, "conversationSummary").filter(|s| !s.is_empty())
        {
            self.b.push(Message {
                role: Role::System,
                kind: MessageKind::CompactionSummary,
                content: summary.to_string(),
                ..Message::default()
            });
        }
    }

    /// The sources a web-search reply cites, as one context message after it: PearAI keeps
    /// them on the item as `{url, title}` (`Citation`, the titles fetched when the reply
    /// came), and its model's message names them as bare URLs (`ChatMessage.citations`).
    fn citations(&mut self, i: usize, item: &Value, msg: &Value) {
        let Some(list) = item
            .get("citations")
            .or_else(|| msg.get("citations"))
            .filter(|c| !c.is_null())
        else {
            return;
        };
        let Some(list) = list.as_array() else {
            self.b
                .unparsed
                .note("citations", "not a list", || format!("item {i}"));
            return;
        };
        let mut lines = Vec::new();
        for c in list {
            let url = c.as_str().or_else(|| kit::str_field(c, "url"));
            let title = kit::str_field(c, "title").filter(|t| !t.is_empty() && Some(*t) != url);
            match (title, url) {
                (Some(t), Some(u)) => lines.push(format!("- {t}: {u}")),
                (None, Some(u)) => lines.push(format!("- {u}")),
                (Some(t), None) => lines.push(format!("- {t}")),
                (None, None) => {
                    self.b
                        .unparsed
                        .note("citations", "no url", || format!("item {i}: {c}"));
                }
            }
        }
        if !lines.is_empty() {
            self.b.context("citations", lines.join("\n"), None);
        }
    }

    fn failed(&self, call: &str) -> bool {
        matches!(
            self.status.get(call).map(String::as_str),
            Some("errored" | "canceled")
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn reply(
        &mut self,
        i: usize,
        item: &Value,
        msg: &Value,
        role: &str,
        text: String,
        native_id: String,
        ts: Option<DateTime<Utc>>,
    ) {
        let states: Vec<&Value> = match (item.get("toolCallStates"), item.get("toolCallState")) {
            (Some(Value::Array(a)), _) => a.iter().collect(),
            (_, Some(s @ Value::Object(_))) => vec![s],
            _ => Vec::new(),
        };
        for s in &states {
            if let (Some(id), Some(st)) =
                (kit::str_field(s, "toolCallId"), kit::str_field(s, "status"))
            {
                self.status.insert(id.to_string(), st.to_string());
            }
        }
        // The calls the reply made; where the message names none (older items), its states'.
        let mut calls: Vec<ToolCall> = Vec::new();
        let listed = msg.get("toolCalls").and_then(Value::as_array);
        let raw_calls: Vec<&Value> = match listed {
            Some(a) if !a.is_empty() => a.iter().collect(),
            _ => states.iter().filter_map(|s| s.get("toolCall")).collect(),
        };
        for (ci, c) in raw_calls.iter().enumerate() {
            let id = kit::str_field(c, "id").unwrap_or_default().to_string();
            let name = kit::str_at(c, &["function", "name"])
                .unwrap_or_default()
                .to_string();
            let input = match kit::value_at(c, &["function", "arguments"]) {
                Some(Value::String(s)) => {
                    kit::call_arguments(s, "tool call arguments", &mut self.b.unparsed, || {
                        format!("item {i}, call {ci}")
                    })
                }
                Some(v) => v.clone(),
                None => states
                    .iter()
                    .find(|s| kit::str_field(s, "toolCallId") == Some(&id))
                    .and_then(|s| s.get("parsedArgs"))
                    .cloned()
                    .unwrap_or(Value::Null),
            };
            calls.push(ToolCall {
                tool_call_id: id,
                tool_name: name,
                input,
                ..ToolCall::default()
            });
        }
        let thinking = if role == "thinking" {
            if msg.get("redactedThinking").is_some_and(|r| !r.is_null()) {
                Some(SEALED_THINKING.to_string())
            } else {
                Some(text.clone()).filter(|t| !t.is_empty())
            }
        } else {
            kit::str_at(item, &["reasoning", "text"])
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        let content = if role == "thinking" {
            String::new()
        } else {
            text
        };
        let token_usage = msg
            .get("usage")
            .filter(|u| u.is_object() && self.per_reply)
            .map(usage_of);
        let ids: Vec<String> = calls.iter().map(|c| c.tool_call_id.clone()).collect();
        self.b.push(Message {
            role: Role::Assistant,
            content,
            thinking,
            timestamp: ts,
            tool_calls: calls,
            token_usage,
            model: self.models.get(i).cloned().flatten(),
            native_id: Some(native_id),
            ..Message::default()
        });
        // Outputs no `tool` item holds (the CLI keeps them only in the call's state).
        for id in ids {
            if self.answered.contains(&id) {
                continue;
            }
            let Some(state) = states
                .iter()
                .find(|s| kit::str_field(s, "toolCallId") == Some(id.as_str()))
            else {
                continue;
            };
            let status = kit::str_field(state, "status").unwrap_or("");
            let out = state.get("output").and_then(Value::as_array);
            let failed = matches!(status, "errored" | "canceled");
            match out {
                Some(items) if !items.is_empty() => {
                    let text = context_items_text(items);
                    self.b.tool_result(&id, None, text, failed, None);
                }
                _ if failed => {
                    self.b
                        .tool_result(&id, None, format!("[tool call {status}]"), true, None);
                }
                _ => {}
            }
        }
    }

    /// Files, snippets and other context attached to a prompt, each collapsed.
    fn context_items(&mut self, item: &Value) {
        for c in item
            .get("contextItems")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = kit::str_field(c, "name").unwrap_or("context");
            let body = kit::str_field(c, "content").unwrap_or("");
            let desc = kit::str_field(c, "description").filter(|d| !d.is_empty() && *d != name);
            let text = match desc {
                Some(d) => format!("{name} ({d})\n\n{body}"),
                None => format!("{name}\n\n{body}"),
            };
            self.b.context("context item", text, None);
        }
    }

    /// Rules Continue applied to the request: their names and files (the rule text, where an
    /// older version kept it, too).
    fn rules(&mut self, item: &Value) {
        let Some(rules) = item.get("appliedRules").and_then(Value::as_array) else {
            return;
        };
        let lines: Vec<String> = rules
            .iter()
            .map(|r| {
                let name = kit::str_any(r, &["name", "slug"]).unwrap_or("(unnamed rule)");
                let mut line = format!("- {name}");
                if let Some(f) = kit::str_field(r, "sourceFile") {
                    line.push_str(&format!(" ({f})"));
                }
                if let Some(body) = kit::str_field(r, "rule").filter(|t| !t.is_empty()) {
                    line.push_str(&format!(": {body}"));
                }
                line
            })
            .collect();
        if !lines.is_empty() {
            self.b.context("applied rules", lines.join("\n"), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_index_gives_titles_times_and_paths_and_skips_the_old_format() {
        let v = json!([
            {"session_id": "old", "title": "old format"},
            {"sessionId": "a", "title": "New Session", "dateCreated": "1772359200000",
             "workspaceDirectory": "file:///home/dev/my%20proj"},
            {"sessionId": "b", "title": "Fix the parser", "dateCreated": "1772359200000",
             "workspaceDirectory": "/home/dev/b"},
        ]);
        let m = parse_index(&v);
        assert_eq!(m.len(), 2);
        assert_eq!(m["a"].title, None);
        assert_eq!(m["a"].cwd.as_deref(), Some("/home/dev/my proj"));
        assert_eq!(
            m["a"].created.map(|t| t.to_rfc3339()),
            Some("2026-03-01T10:00:00+00:00".to_string())
        );
        assert_eq!(m["b"].title.as_deref(), Some("Fix the parser"));
    }

    /// Continue rewrites the whole index at each save: only the session whose entry changed
    /// gets a new version; the index is every session's source.
    #[test]
    fn an_index_rewrite_moves_only_the_version_of_the_session_it_changed() {
        let dir = tempfile::tempdir().expect("tmp");
        let sessions = dir.path().join("sessions");
        std::fs::create_dir(&sessions).expect("mkdir");
        for id in ["a", "b"] {
            std::fs::write(sessions.join(format!("{id}.json")), r#"{"history": []}"#)
                .expect("write");
        }
        let index = |b_title: &str| {
            let v = json!([{"sessionId": "a", "title": "Alpha"},
                           {"sessionId": "b", "title": b_title}]);
            std::fs::write(sessions.join(INDEX_FILE), v.to_string()).expect("index");
        };
        index("Bravo");
        let store = ContinueStore::new(vec![Root::new(Agent::Continue, &sessions, "test")]);
        let mut listed = store.list();
        listed.sort_by(|x, y| x.id.cmp(&y.id));
        assert!(listed
            .iter()
            .all(|l| l.sources == [l.path.clone(), sessions.join(INDEX_FILE)]));
        let refs: Vec<&Listed> = listed.iter().collect();
        let before = store.versions(&refs);
        assert!(before.iter().all(Option::is_some), "{before:?}");
        index("Bravo, renamed");
        let after = store.versions(&refs);
        assert_eq!(after[0], before[0], "a's entry is as it was");
        assert_ne!(after[1], before[1], "b's entry changed");
    }

    #[test]
    fn the_config_and_the_index_are_never_sessions() {
        let dir = tempfile::tempdir().expect("tmp");
        for f in [
            "config.json",
            "sharedConfig.json",
            "sessions.json",
            "abc.json",
        ] {
            std::fs::write(dir.path().join(f), "{}").expect("write");
        }
        let names: Vec<String> = session_files(dir.path())
            .iter()
            .map(|p| kit::file_name(p).to_string())
            .collect();
        assert_eq!(names, ["abc.json"]);
    }

    #[test]
    fn a_turn_takes_the_model_of_its_last_prompt_log() {
        let items = vec![
            json!({"message": {"role": "user", "content": "a"}}),
            json!({"message": {"role": "thinking", "content": "t"}}),
            json!({"message": {"role": "assistant", "content": "r"},
                   "promptLogs": [{"modelTitle": "Sonnet", "completionOptions": {"model": "claude-x"}}]}),
            json!({"message": {"role": "user", "content": "b"}}),
            json!({"message": {"role": "assistant", "content": "r2"}}),
        ];
        let m = turn_models(&items, Some("Title".into()));
        assert_eq!(
            m,
            [
                Some("claude-x".to_string()),
                Some("claude-x".into()),
                Some("claude-x".into()),
                Some("claude-x".into()),
                Some("claude-x".into())
            ]
        );
        let m = turn_models(&items[3..], Some("Title".into()));
        assert_eq!(m, [Some("Title".to_string()), Some("Title".into())]);
    }

    #[test]
    fn a_document_cut_inside_a_later_list_keeps_that_lists_items() {
        let doc = json!({"history": [], "perplexityHistory": [
            {"message": {"role": "user", "content": "q"}, "contextItems": []},
            {"message": {"role": "assistant", "content": "a"}, "contextItems": []},
            {"message": {"role": "user", "content": "LOST"}, "contextItems": []}],
            "title": "t"});
        let text = doc.to_string();
        let cut = &text.as_bytes()[..text.find("LOST").expect("marker")];
        let (mut d, list) = parse_session_doc(cut).expect("an object");
        assert_eq!(list, "perplexityHistory");
        assert_eq!(d.messages.len(), 2);
        assert!(d.cut.is_some());
        assert_eq!(take_list(&mut d, list, "history"), Ok(Vec::new()));
        assert_eq!(
            take_list(&mut d, list, "perplexityHistory").map(|l| l.len()),
            Ok(2)
        );
        // Cut inside `history`: read through `history`, as before.
        let doc = json!({"history": [{"message": {"role": "user", "content": "q"}},
                                     {"message": {"role": "user", "content": "LOST"}}],
                         "perplexityHistory": []});
        let text = doc.to_string();
        let cut = &text.as_bytes()[..text.find("LOST").expect("marker")];
        let (d, list) = parse_session_doc(cut).expect("an object");
        assert_eq!((list, d.messages.len()), ("history", 1));
        // A `null` extra list is empty; a `null` history is no history.
        let mut d = parse_doc_of(br#"{"history": null, "aiderHistory": null}"#, "history")
            .expect("an object");
        assert_eq!(take_list(&mut d, "history", "aiderHistory"), Ok(Vec::new()));
        assert_eq!(take_list(&mut d, "history", "history"), Err(Value::Null));
    }

    #[test]
    fn content_parts_keep_text_and_show_images_as_placeholders() {
        let c = json!([{"type": "text", "text": "look"},
                       {"type": "imageUrl", "imageUrl": {"url": "data:image/png;base64,AAAAAAAA"}}]);
        assert_eq!(content_text(Some(&c)), "look\n[image: image/png, 6 B]");
    }
}
