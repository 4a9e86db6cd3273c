//! avante.nvim (the Neovim AI coding plugin): one JSON document per chat, rewritten whole at
//! every save, under Neovim's state directory.
//!
//! Read from avante.nvim's own source, yetone/avante.nvim
//! `a9334315e05ac750985c7d0b391e360e36e0278e` (2026-08-22), and the history of
//! `lua/avante/path.lua` before it:
//!
//! - `lua/avante/config.lua`: `history.storage_path` defaults to
//!   `stdpath("state")/avante`, i.e. `$XDG_STATE_HOME/<app>/avante`, else
//!   `~/.local/state/<app>/avante` (on macOS too), where `<app>` is `$NVIM_APPNAME` or `nvim`;
//! - `lua/avante/path.lua`: a project's chats are `projects/<dir>/history/<n>.json`, `<dir>`
//!   the project root with `/` replaced by `__` and then every character outside
//!   `[A-Za-z0-9._]` by `_`, `<n>` counting from 0; `metadata.json` beside them holds
//!   `{project_root, latest_filename}` (`project_root` since 2025-08). `History.save` writes
//!   `vim.json.encode(history)` in place. `from_file` resets the top-level `timestamp` to the
//!   load time at every load (it compares the field with the string `"string"`), so that
//!   field says when the chat was last opened and saved, not when it began. Before
//!   2025-03 (`8620ea3e`) a project had one `<dir>.json` directly in the storage path, a JSON
//!   list of request/response entries;
//! - `lua/avante/types.lua`: `avante.ChatHistory {title ("untitled" until the first prompt
//!   names it), timestamp, messages, entries, todos, memory {content,
//!   last_summarized_timestamp, last_message_uuid}, filename, system_prompt, tokens_usage
//!   {prompt_tokens, completion_tokens}, acp_session_id}`; `avante.ChatHistoryEntry {timestamp,
//!   provider, model, request, response, original_response, selected_file {filepath},
//!   selected_code {path, file_type, content}, selected_filepaths, visible, reset_memory}`;
//!   `avante.HistoryMessage {message {role, content}, timestamp, state, uuid, turn_id,
//!   visible, is_user_submission, is_dummy, just_for_display, is_deleted, is_compacted,
//!   provider, model, mode, selected_code, selected_filepaths, acp_tool_call, ...}`, a content
//!   being a string or a list of blocks (`text`, `image`, `tool_use`, `tool_result` with
//!   `is_error` and `is_user_declined`, `thinking`, `redacted_thinking`);
//! - `lua/avante/history/init.lua`, `message.lua`, `lua/avante/sidebar.lua`,
//!   `lua/avante/llm.lua`: entries become a prompt and a reply each; a prompt the user sent has
//!   `is_user_submission` and the provider and model it went to; `visible = false` prompts are
//!   reminders avante adds for the model; `just_for_display` messages are notices for the
//!   sidebar (cancellation, errors, rate limits), never sent; `is_dummy` messages are
//!   synthetic; `tokens_usage` is overwritten by each request; ACP agents' tool results carry
//!   no content, their output lives in the call's `acp_tool_call`.
//!
//! Design decisions and why:
//! - **Ids** are `<dir>-<n>` for a history file and `<dir>` for a pre-2025-03 project file:
//!   the project directory makes them unique across projects, and `<dir>` never holds `-`.
//! - **cwd** is `metadata.json`'s `project_root`, which is a source of every chat of the
//!   project. The directory name cannot be turned back into the path (`_` stands for any
//!   replaced character), so a project without `project_root` has no cwd.
//! - **Each file is read in one read**, field by field when it is cut (the reader the Amp,
//!   Continue and Nanocoder stores use): every message before the cut is kept, the rest is
//!   shown raw and a warning names the file.
//! - **Nothing shown twice**: avante copies the entries of an older chat into `messages` when
//!   it opens it and saves both; entries are shown only when `messages` does not begin with
//!   them.
//! - Nothing in the storage path holds credentials: provider keys come from the environment,
//!   and the logins avante keeps (`claude-auth.json`, `github-copilot.json`) are in
//!   `stdpath("data")/avante`, which is never read; nor are `pasted_images/` or
//!   `~/.config/avante.nvim/config.json` (the last model chosen).

use super::amp::doc_or_raw;
use super::kit::{self, title_from_text, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    Agent, Message, MessageKind, Role, Session, TokenUsage, ToolCall, SEALED_THINKING,
};
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use foldhash::{HashMap, HashMapExt};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Larger chat files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// The project file beside the chats: the project root and the latest chat.
const METADATA: &str = "metadata.json";
/// The title avante gives a chat before its first prompt.
const PLACEHOLDER_TITLE: &str = "untitled";
/// Where a chat's todo list is shown, beside its transcript.
pub const TODOS_FILE: &str = "todos.md";

/// Every storage path avante may use, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    let (state, how) = super::codecompanion::nvim_state_dir(env);
    vec![Root::new(Agent::Avante, state.join("avante"), how)]
}

pub struct AvanteStore {
    base: Base,
}

impl AvanteStore {
    pub fn new(roots: Vec<Root>) -> AvanteStore {
        AvanteStore {
            base: Base::new(Agent::Avante, roots),
        }
    }
}

/// The `*.json` files of `dir` but `metadata.json`, hidden ones skipped.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    kit::typed_entries(dir)
        .into_iter()
        .filter(|(p, t)| {
            let name = kit::file_name(p);
            *t == EntryType::File
                && !name.starts_with('.')
                && name.ends_with(".json")
                && name != METADATA
        })
        .map(|(p, _)| p)
        .collect()
}

/// The project directories of a storage path.
fn project_dirs(root: &Path) -> Vec<PathBuf> {
    kit::subdirs(&root.join("projects"))
}

/// Every chat under a storage path: `(id, file, metadata.json when it is a history file)`.
pub fn chats(root: &Path) -> Vec<(String, PathBuf, Option<PathBuf>)> {
    let mut out = Vec::new();
    if root.is_file() {
        let id = root
            .file_stem()
            .map(crate::names::os_id)
            .unwrap_or_default();
        out.push((id, root.to_path_buf(), None));
        return out;
    }
    for project in project_dirs(root) {
        let dir = project.file_name().map(crate::names::os_id);
        let dir = dir.unwrap_or_default();
        let history = project.join("history");
        let meta = history.join(METADATA);
        for f in json_files(&history) {
            let stem = f.file_stem().map(crate::names::os_id).unwrap_or_default();
            out.push((format!("{dir}-{stem}"), f, Some(meta.clone())));
        }
    }
    for f in json_files(root) {
        let stem = f.file_stem().map(crate::names::os_id).unwrap_or_default();
        out.push((stem, f, None));
    }
    out
}

impl Store for AvanteStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for (id, path, meta) in chats(&root.path) {
                let mut l = Listed::file(id, path, i);
                l.sources.extend(meta);
                out.push(l);
            }
        }
        out
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads names only; saving a chat never adds one.
        true
    }

    /// The listing reads the storage path, `projects/` and each project's `history/`.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if root.path.is_file() {
                continue;
            }
            if !root.path.is_dir() {
                return None;
            }
            g.dirs.push(root.path.clone());
            let projects = root.path.join("projects");
            if projects.is_dir() {
                g.dirs.push(projects);
            }
            for p in project_dirs(&root.path) {
                let history = p.join("history");
                if history.is_dir() {
                    g.dirs.push(history);
                }
                g.dirs.push(p);
            }
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_chat(
            &listed.path,
            listed.sources.get(1).map(PathBuf::as_path),
            &listed.id,
        )
    }
}

/// avante's times: local time without a zone (`%Y-%m-%d %H:%M:%S`), read as this machine's
/// local time; RFC 3339 text or epoch milliseconds are taken too.
pub fn time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let v = v?;
    if let Some(s) = v.as_str() {
        if let Ok(t) = NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%d %H:%M:%S%.f") {
            return Local
                .from_local_datetime(&t)
                .earliest()
                .map(|d| d.with_timezone(&Utc));
        }
    }
    super::parse_time(v)
}

/// The project root `metadata.json` names, if any.
fn project_root(meta: &Path, b: &mut SessionBuilder) -> Option<String> {
    if !meta.is_file() {
        return None;
    }
    match kit::read_json(meta, METADATA, 1 << 20) {
        Ok(v) => kit::str_field(&v, "project_root")
            .filter(|r| !r.is_empty())
            .map(str::to_string),
        Err(e) => {
            b.warn(e);
            None
        }
    }
}

/// Load one chat file; `meta` is its project's `metadata.json`.
pub fn load_chat(path: &Path, meta: Option<&Path>, id: &str) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(Agent::Avante, id);
    b.s.source.format = "avante-history-json".into();
    b.s.source.paths.push(path.to_path_buf());
    if let Some(m) = meta {
        b.s.cwd = project_root(m, &mut b);
    }
    let Some(bytes) = kit::read_capped(&mut b, path, &file, MAX_JSON_BYTES) else {
        return b.finish();
    };
    // Before 2025-03 a project's history was one list of entries.
    if let Ok(Value::Array(entries)) = serde_json::from_slice::<Value>(&bytes) {
        b.s.source.format = "avante-history-entries".into();
        for (i, e) in entries.iter().enumerate() {
            entry(&mut b, i, e);
        }
        return b.finish();
    }
    let Some(doc) = doc_or_raw(&mut b, &bytes, &file, "messages", "messages") else {
        return b.finish();
    };
    let f = &doc.fields;
    if f.contains_key("messages") {
        b.warn(format!(
            "{file}: `messages` is not a list; the file is shown raw"
        ));
        b.context("unparsed file", kit::raw_text(&bytes), None);
    }
    header(&mut b, f);
    let entries: &[Value] = match f.get("entries") {
        Some(Value::Array(a)) => a,
        Some(Value::Null) | None => &[],
        Some(_) => {
            b.warn(format!("{file}: `entries` is not a list, not shown"));
            &[]
        }
    };
    if !entries.is_empty() && !messages_repeat_entries(entries, &doc.messages) {
        for (i, e) in entries.iter().enumerate() {
            entry(&mut b, i, e);
        }
    }
    if let Some(p) = f.get("system_prompt").and_then(Value::as_str) {
        if !p.trim().is_empty() {
            b.context("system prompt", p.to_string(), None);
        }
    }
    let memory = f.get("memory").filter(|m| m.is_object());
    let summarized = memory.and_then(|m| kit::str_field(m, "last_message_uuid"));
    let mut acp = HashMap::new();
    let mut summary_shown = false;
    let mut turn = Turn::default();
    for (i, m) in doc.messages.iter().enumerate() {
        message(&mut b, i, m, &mut acp, &mut turn);
        if let (Some(mem), Some(u)) = (memory, summarized) {
            if !summary_shown && kit::str_field(m, "uuid") == Some(u) {
                summary(&mut b, mem);
                summary_shown = true;
            }
        }
    }
    if let Some(cut) = doc.cut {
        b.context(&format!("unparsed tail of {file}"), cut, None);
    }
    if let Some(mem) = memory.filter(|_| !summary_shown) {
        summary(&mut b, mem);
    }
    if let Some(m) = turn.model {
        b.s.set_model = Some(m);
    }
    if let Some(p) = turn.provider {
        b.s.tags.push(format!("provider:{p}"));
    }
    if let Some(m) = turn.mode {
        b.s.tags.push(format!("mode:{m}"));
    }
    usage(&mut b, f);
    todos(&mut b, f);
    // Reset at each load (see the module docs): the chat's time only when no message has one.
    if b.s.messages.iter().all(|m| m.timestamp.is_none()) {
        b.s.created_at = time(f.get("timestamp"));
        b.s.updated_at = b.s.created_at;
    }
    b.finish()
}

/// The chat's own fields: title, times, the ACP session.
fn header(b: &mut SessionBuilder, f: &Map<String, Value>) {
    b.title_or_placeholder(
        f.get("title")
            .and_then(Value::as_str)
            .and_then(title_from_text),
        |t| t == PLACEHOLDER_TITLE,
    );
    if let Some(s) = f
        .get("acp_session_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        b.s.tags.push(format!("acp-session:{s}"));
    }
}

/// `tokens_usage`: the usage of the chat's latest request only (avante overwrites it with
/// each), put on the last reply.
fn usage(b: &mut SessionBuilder, f: &Map<String, Value>) {
    let Some(u) = f.get("tokens_usage").filter(|u| u.is_object()) else {
        return;
    };
    let usage = TokenUsage {
        input_tokens: kit::u64_field(u, "prompt_tokens"),
        output_tokens: kit::u64_field(u, "completion_tokens"),
        ..TokenUsage::default()
    };
    if usage.is_zero() {
        return;
    }
    let last =
        b.s.messages
            .iter_mut()
            .rev()
            .find(|m| m.role == Role::Assistant && m.kind == MessageKind::Normal);
    match last {
        Some(m) => m.token_usage = Some(usage),
        None => b.s.reported_usage = Some(usage),
    }
}

/// The todo list (`write_todos`), as `todos.md` beside the transcript.
fn todos(b: &mut SessionBuilder, f: &Map<String, Value>) {
    let Some(list) = f.get("todos").and_then(Value::as_array) else {
        return;
    };
    if list.is_empty() {
        return;
    }
    let mut text = String::from("# Todos\n\n");
    for t in list {
        let status = kit::str_field(t, "status").unwrap_or("todo");
        let mark = match status {
            "done" => "x",
            "doing" => "~",
            "cancelled" => "-",
            _ => " ",
        };
        let content = kit::str_field(t, "content")
            .map(str::to_string)
            .unwrap_or_else(|| t.to_string());
        let mut line = format!("- [{mark}] {content} ({status}");
        if let Some(p) = kit::str_field(t, "priority") {
            line.push_str(&format!(", {p} priority"));
        }
        line.push_str(")\n");
        text.push_str(&line);
    }
    b.s.extra_files.push((TODOS_FILE.into(), text));
}

/// The chat's memory (`/compact`): the summary that stands for every message up to
/// `last_message_uuid` in the requests that follow.
fn summary(b: &mut SessionBuilder, mem: &Value) {
    let text = kit::str_field(mem, "content").unwrap_or_default();
    if text.trim().is_empty() {
        return;
    }
    b.push(Message {
        role: Role::System,
        kind: MessageKind::CompactionSummary,
        content: text.to_string(),
        timestamp: time(mem.get("last_summarized_timestamp")),
        ..Message::default()
    });
}

/// Whether `messages` begins with the messages avante makes of `entries` (a request and a
/// response each, empty ones skipped), so the entries are already shown.
fn messages_repeat_entries(entries: &[Value], messages: &[Value]) -> bool {
    let made: Vec<(&str, &str)> = entries
        .iter()
        .flat_map(|e| {
            [
                ("user", kit::str_field(e, "request").unwrap_or_default()),
                (
                    "assistant",
                    kit::str_field(e, "response").unwrap_or_default(),
                ),
            ]
        })
        .filter(|(_, t)| !t.is_empty())
        .collect();
    made.len() <= messages.len()
        && made.iter().zip(messages).all(|((role, text), m)| {
            kit::str_at(m, &["message", "role"]) == Some(role)
                && kit::value_at(m, &["message", "content"]).and_then(Value::as_str) == Some(text)
        })
}

/// What the user attached to a prompt: selected files and code.
fn attachments(m: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut files: Vec<&str> = m
        .get("selected_filepaths")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if let Some(f) = kit::str_at(m, &["selected_file", "filepath"]) {
        files.push(f);
    }
    if !files.is_empty() {
        out.push(format!("selected files: {}", files.join(", ")));
    }
    if let Some(code) = m.get("selected_code").filter(|c| c.is_object()) {
        let body = kit::str_field(code, "content").unwrap_or_default();
        let lang = kit::str_any(code, &["file_type", "filetype"]).unwrap_or_default();
        let head = match kit::str_field(code, "path") {
            Some(p) => format!("selected code ({p}):"),
            None => "selected code:".to_string(),
        };
        out.push(format!("{head}\n```{lang}\n{body}\n```"));
    }
    out
}

/// One element of the pre-2025-03 `entries`: a prompt and its reply.
fn entry(b: &mut SessionBuilder, i: usize, e: &Value) {
    if !e.is_object() {
        b.unparsed(
            "entries",
            "not an object",
            || format!("entry {i}"),
            "entry",
            &e.to_string(),
            None,
        );
        return;
    }
    let t = time(e.get("timestamp"));
    if e.get("reset_memory").and_then(Value::as_bool) == Some(true) {
        b.event("memory reset: earlier entries are no longer sent".into(), t);
        return;
    }
    let hidden = e.get("visible").and_then(Value::as_bool) == Some(false);
    let model = kit::str_field(e, "model").filter(|m| !m.is_empty());
    if let Some(p) = kit::str_field(e, "provider").filter(|p| !p.is_empty()) {
        let tag = format!("provider:{p}");
        if !b.s.tags.contains(&tag) {
            b.s.tags.push(tag);
        }
    }
    if let Some(m) = model {
        b.s.set_model = Some(m.to_string());
    }
    if let Some(req) = kit::str_field(e, "request").filter(|r| !r.is_empty()) {
        let mut content = req.to_string();
        for a in attachments(e) {
            kit::push_paragraph(&mut content, &a);
        }
        if hidden {
            b.context("hidden prompt", content, t);
        } else {
            b.push(Message {
                role: Role::User,
                content,
                timestamp: t,
                ..Message::default()
            });
        }
    }
    let resp = kit::str_field(e, "response")
        .filter(|r| !r.is_empty())
        .or_else(|| kit::str_field(e, "original_response").filter(|r| !r.is_empty()));
    if let Some(resp) = resp {
        b.push(Message {
            role: Role::Assistant,
            content: resp.to_string(),
            timestamp: t,
            model: model.map(str::to_string),
            ..Message::default()
        });
    }
}

/// The provider, model and mode of the latest prompt the user sent: its replies' model.
#[derive(Default)]
struct Turn {
    provider: Option<String>,
    model: Option<String>,
    mode: Option<String>,
}

/// The text of an ACP tool call's content (`acp_tool_call.content`, else `rawOutput`).
fn acp_output(call: &Value) -> Option<String> {
    let mut out = String::new();
    for c in call
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let part = match kit::str_field(c, "type") {
            Some("content") => match kit::str_at(c, &["content", "text"]) {
                Some(t) => t.to_string(),
                None => c.get("content").map(Value::to_string).unwrap_or_default(),
            },
            Some("diff") => format!(
                "diff {}\n--- old\n{}\n+++ new\n{}",
                kit::str_field(c, "path").unwrap_or_default(),
                kit::str_field(c, "oldText").unwrap_or_default(),
                kit::str_field(c, "newText").unwrap_or_default()
            ),
            _ => c.to_string(),
        };
        kit::push_paragraph(&mut out, &part);
    }
    if out.is_empty() {
        match call.get("rawOutput") {
            Some(Value::String(s)) => out = s.clone(),
            Some(Value::Null) | None => {}
            Some(v) => out = v.to_string(),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A tool result's `content`: text, or a list of text blocks.
fn result_text(c: Option<&Value>) -> Option<String> {
    match c? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        Value::Array(parts) => Some(
            parts
                .iter()
                .map(|p| match p {
                    Value::String(s) => s.clone(),
                    _ => kit::str_field(p, "text")
                        .map(str::to_string)
                        .unwrap_or_else(|| p.to_string()),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        other => Some(other.to_string()),
    }
}

/// One element of `messages`.
fn message(
    b: &mut SessionBuilder,
    i: usize,
    m: &Value,
    acp: &mut HashMap<String, Option<String>>,
    turn: &mut Turn,
) {
    let role = kit::str_at(m, &["message", "role"]);
    let Some(role @ ("user" | "assistant")) = role else {
        let problem = match role {
            Some(r) => format!("unknown role {r}"),
            None if m.is_object() => "no message role".to_string(),
            None => "not an object".to_string(),
        };
        b.unparsed(
            "messages",
            &problem,
            || format!("message {i}"),
            "message",
            &m.to_string(),
            None,
        );
        return;
    };
    let t = time(m.get("timestamp"));
    let flag = |k: &str| m.get(k).and_then(Value::as_bool) == Some(true);
    let uuid = kit::str_field(m, "uuid").map(str::to_string);
    if flag("is_user_submission") {
        let s = |k: &str| {
            kit::str_field(m, k)
                .filter(|x| !x.is_empty())
                .map(str::to_string)
        };
        turn.provider = s("provider").or(turn.provider.take());
        turn.model = s("model").or(turn.model.take());
        turn.mode = s("mode").or(turn.mode.take());
    }
    let items: Vec<Value> = match kit::value_at(m, &["message", "content"]) {
        Some(Value::Array(a)) => a.clone(),
        Some(Value::Null) | None => Vec::new(),
        Some(v) => vec![v.clone()],
    };
    let mut text = String::new();
    let mut thinking: Option<String> = None;
    let mut calls = Vec::new();
    for (k, item) in items.iter().enumerate() {
        match item {
            Value::String(s) => kit::push_paragraph(&mut text, s),
            _ => match kit::str_field(item, "type") {
                Some("text") => {
                    kit::push_paragraph(&mut text, kit::str_field(item, "text").unwrap_or(""))
                }
                Some("image") => {
                    let ph = kit::base64_placeholder(
                        "image",
                        kit::str_at(item, &["source", "media_type"]),
                        kit::str_at(item, &["source", "data"]),
                    );
                    kit::push_paragraph(&mut text, &ph);
                }
                Some("thinking") => {
                    let t = kit::str_field(item, "thinking").unwrap_or_default();
                    let th = thinking.get_or_insert_with(String::new);
                    kit::push_paragraph(th, t);
                }
                Some("redacted_thinking") => {
                    let th = thinking.get_or_insert_with(String::new);
                    kit::push_paragraph(th, SEALED_THINKING);
                }
                Some("tool_use") => {
                    let id = kit::str_field(item, "id").unwrap_or_default().to_string();
                    if let Some(call) = m.get("acp_tool_call").filter(|c| c.is_object()) {
                        acp.insert(id.clone(), acp_output(call));
                    }
                    calls.push(ToolCall {
                        tool_call_id: id,
                        tool_name: kit::str_field(item, "name").unwrap_or_default().to_string(),
                        input: item.get("input").cloned().unwrap_or(Value::Null),
                        ..ToolCall::default()
                    });
                }
                Some("tool_result") => {
                    let id = kit::str_field(item, "tool_use_id").unwrap_or_default();
                    let declined =
                        item.get("is_user_declined").and_then(Value::as_bool) == Some(true);
                    let failed =
                        item.get("is_error").and_then(Value::as_bool) == Some(true) || declined;
                    let mut out = result_text(item.get("content"))
                        .or_else(|| acp.get(id).cloned().flatten())
                        .unwrap_or_default();
                    if declined {
                        kit::push_paragraph(&mut out, "(declined by the user)");
                    }
                    b.tool_result(id, kit::str_field(item, "name"), out, failed, t);
                }
                other => {
                    let what = other.unwrap_or("(none)");
                    b.unparsed(
                        "content blocks",
                        &format!("unknown block type {what}"),
                        || format!("message {i}, block {k}"),
                        "content block",
                        &item.to_string(),
                        t,
                    );
                }
            },
        }
    }
    if text.is_empty() && thinking.is_none() && calls.is_empty() {
        return;
    }
    if role == "user" {
        let label = if flag("is_dummy") {
            Some("synthetic prompt")
        } else if m.get("visible").and_then(Value::as_bool) == Some(false) {
            Some("hidden prompt")
        } else {
            None
        };
        if let Some(label) = label {
            b.context(label, text, t);
            return;
        }
        if flag("is_user_submission") {
            for a in attachments(m) {
                kit::push_paragraph(&mut text, &a);
            }
        }
        b.push(Message {
            role: Role::User,
            content: text,
            timestamp: t,
            native_id: uuid,
            ..Message::default()
        });
        return;
    }
    if flag("just_for_display") {
        b.event(text.trim().to_string(), t);
        return;
    }
    if flag("is_dummy") {
        b.context("synthetic reply", text, t);
        return;
    }
    b.push(Message {
        role: Role::Assistant,
        content: text,
        thinking,
        tool_calls: calls,
        timestamp: t,
        model: turn.model.clone(),
        native_id: uuid,
        ..Message::default()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_root_follows_xdg_state_home_and_nvim_appname() {
        let mut env = Env::at_home(Path::new("/h"));
        let paths = |env: &Env| -> Vec<(PathBuf, String)> {
            candidates(env)
                .into_iter()
                .map(|r| (r.path, r.how))
                .collect()
        };
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/h/.local/state/nvim/avante"),
                "default".to_string()
            )]
        );
        env.vars.insert("XDG_STATE_HOME".into(), "/x".into());
        env.vars.insert("NVIM_APPNAME".into(), "lazyvim".into());
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/x/lazyvim/avante"),
                "XDG_STATE_HOME, NVIM_APPNAME".to_string()
            )]
        );
    }

    #[test]
    fn entries_copied_into_messages_are_recognised() {
        let entries = [json!({"request": "q", "response": "a"})];
        let copied = [
            json!({"message": {"role": "user", "content": "q"}}),
            json!({"message": {"role": "assistant", "content": "a"}}),
            json!({"message": {"role": "user", "content": "later"}}),
        ];
        assert!(messages_repeat_entries(&entries, &copied));
        assert!(!messages_repeat_entries(&entries, &copied[2..]));
    }

    #[test]
    fn local_times_read_as_local_time() {
        let t = time(Some(&json!("2026-03-01 10:00:00"))).expect("time");
        let want = Local
            .with_ymd_and_hms(2026, 3, 1, 10, 0, 0)
            .earliest()
            .expect("local")
            .with_timezone(&Utc);
        assert_eq!(t, want);
    }
}
