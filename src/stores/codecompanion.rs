//! CodeCompanion (olimorris/codecompanion.nvim, a Neovim AI coding plugin): the chats saved by
//! its history extension, one JSON document per chat in `codecompanion-history/chats/`,
//! rewritten whole at every save, with the index `index.json` and the chats' summaries beside
//! them.
//!
//! CodeCompanion itself keeps chats in Neovim's memory only: olimorris/codecompanion.nvim
//! `f1afd02537c68b3dd6e0d41d4adda5ef538e0473` (2026-08-08) writes no chat to disk (its data
//! directory holds a URL cache and code-review comments, no conversation). Chats persist
//! through the history extension, read from its own source, ravitemer/codecompanion-history.nvim
//! `eb99d256352144cf3b6a1c45608ec25544a0813d` (2025-09-07):
//!
//! - `lua/codecompanion/_extensions/history/init.lua`: `dir_to_save` defaults to
//!   `stdpath("data") .. "/codecompanion-history"`, Neovim's data directory being
//!   `$XDG_DATA_HOME/<app>` else `~/.local/share/<app>` (macOS too), `<app>` being
//!   `$NVIM_APPNAME` else `nvim`; a chat's `save_id` is `tostring(os.time())` when it starts;
//! - `storage.lua`: `save_chat` writes `chats/<save_id>.json` (`vim.json.encode`, one line)
//!   holding `{save_id, title, messages, settings, adapter, updated_at (Unix seconds),
//!   context_items (refs before it), schemas, in_use, cycle, title_refresh_count, cwd,
//!   project_root}` and then the same fields but the messages, plus `model`, `message_count`
//!   and `token_estimate` (characters / 4), in `index.json`; `duplicate_chat` saves a copy
//!   under `os.time() * 1000 + random`; `save_summary` writes `summaries/<save_id>.md` and
//!   `summaries_index.json`; `delete_chat` removes the chat but not its summary;
//! - `types.lua`, `ui.lua`, `summary_generator.lua`: the messages are CodeCompanion's own
//!   `chat.messages`, saved as they are.
//!
//! The messages, from codecompanion.nvim `019be206a96cf6de12ea71f02a9e1b847a2debbb`
//! (2025-09-04, v17, the release the extension was written against; `strategies/chat/init.lua`,
//! `types.lua`, `adapters/http/{openai,anthropic}.lua`) and `f1afd025` (v18 and later;
//! `interactions/chat/init.lua`, `interactions/shared/tags.lua`,
//! `interactions/chat/context_management/compaction.lua`): `{role: user | llm | system | tool,
//! content, reasoning?: {content}, opts: {visible, tag?, context_id?}, cycle, id}` in v17,
//! `tool_calls` (`[{id, type, function: {name, arguments}}]`) on a hidden `llm` message, and
//! a result as a `tool` message with `tool_call_id` (OpenAI-shaped adapters) or `content:
//! {type: tool_result, tool_use_id, content, is_error}` (Anthropic); v18 moves `id`, `cycle`
//! and `tag` into `_meta`, the calls into `tools.calls` and a result's id and name into
//! `tools.call_id`/`tools.name` (`tools.is_error` a failure), adds `created_at` (Unix seconds)
//! and `context.{path, mimetype}`, and marks a compaction's summary with the tag
//! `compact_summary`. System prompts carry the tags `from_config` /
//! `system_prompt_from_config`, tool instructions `tool` / `tool_system_prompt`.
//!
//! Design decisions and why:
//! - **Roots** follow `stdpath("data")`: `$XDG_DATA_HOME/<app>/codecompanion-history`, else
//!   `~/.local/share/<app>/codecompanion-history`. A `dir_to_save` set in the Neovim
//!   configuration is given with `--store` (the history directory, its `chats/`, or one
//!   chat file); the configuration (with any API keys in adapter settings) is never read.
//! - **Listing reads names only**: every `chats/*.json`, the id its file name (the `save_id`),
//!   and every `summaries/<id>.md` whose chat is gone, as a session of its own.
//! - **The index is not read**: each chat file holds every field of its entry (the title
//!   `rename_chat` changes is written to both), so a corrupt or lagging `index.json` costs
//!   nothing, and a chat the index misses is shown the same. `message_count` and
//!   `token_estimate` are derived from the messages; `summaries_index.json` repeats what the
//!   summary's chat holds.
//! - **Each file is read in one read**, field by field when it is cut (the reader the Amp,
//!   Continue and Nanocoder stores use): every message before the cut is kept, the rest is
//!   shown raw and a warning names the file.
//! - **What each message becomes**: `user` messages are prompts, unless hidden or tied to a
//!   context item (then context labelled by their tag or context id), images (tag `image`)
//!   are placeholders, and a `compact_summary` is the compaction summary; `llm` messages are
//!   replies with `reasoning.content` as thinking and their tool calls; `tool` messages are
//!   results, failed when Anthropic's `is_error` or v18's `tools.is_error` says so
//!   (CodeCompanion stores no other error flag); `system` messages are context (`system
//!   prompt`, `tool instructions`, else `system message`). Hidden messages are shown like the
//!   others: the flag only keeps them out of Neovim's chat buffer. The chat's
//!   `context_items` (`refs`) are one context message first. A chat's summary is the file
//!   `summary.md` of its session.
//! - **Model and usage**: `settings.model` is the model the chat was set to, `adapter` an
//!   `adapter:` tag; messages name no model. CodeCompanion keeps no per-call usage in a chat
//!   (`_meta.cumulative_tokens`/`estimated_tokens` of v18 are context sizes, not calls'
//!   usage), so sessions have none.
//! - **Times**: `updated_at` is the update time; the creation time is the `save_id` (Unix
//!   seconds, or milliseconds for a duplicate), else the first message's `created_at`.
//! - **Not shown**: `settings` other than the model (adapter parameters), `schemas` and
//!   `in_use` (the tools offered), `cycle` and `title_refresh_count` (counters); unknown
//!   top-level fields are named in a warning.

use super::amp::doc_or_raw;
use super::kit::{self, title_from_text, EntryType, SessionBuilder};
use super::{Base, Env, Listed, Root, Store};
use crate::model::{Agent, Message, MessageKind, Role, Session, ToolCall};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Larger chat files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// The history directory under Neovim's data directory.
const HISTORY_DIR: &str = "codecompanion-history";
/// The session file a chat's summary becomes.
pub const SUMMARY_FILE: &str = "summary.md";
/// Top-level fields of a chat file the store knows (read or deliberately not shown).
const KNOWN_FIELDS: &[&str] = &[
    "save_id",
    "title",
    "messages",
    "settings",
    "adapter",
    "updated_at",
    "refs",
    "context_items",
    "schemas",
    "in_use",
    "name",
    "cycle",
    "title_refresh_count",
    "cwd",
    "project_root",
];

/// Neovim's data directory (`stdpath("data")`): `$XDG_DATA_HOME/<app>`, else
/// `~/.local/share/<app>` (macOS too), `<app>` being `$NVIM_APPNAME` else `nvim`; with the
/// variables that placed it (`default` when none did). Shared by the Neovim plugins' stores.
pub fn nvim_data_dir(env: &Env) -> (PathBuf, String) {
    nvim_dir(env, "XDG_DATA_HOME", ".local/share")
}

/// Neovim's state directory (`stdpath("state")`): `$XDG_STATE_HOME/<app>`, else
/// `~/.local/state/<app>`, as [`nvim_data_dir`].
pub fn nvim_state_dir(env: &Env) -> (PathBuf, String) {
    nvim_dir(env, "XDG_STATE_HOME", ".local/state")
}

/// `$<xdg>/<app>`, else `~/<default>/<app>`, and the variables that chose it: `XDG_…`, else
/// `default`, then `NVIM_APPNAME` when it is set.
fn nvim_dir(env: &Env, xdg: &str, default: &str) -> (PathBuf, String) {
    let app = env.var("NVIM_APPNAME").unwrap_or("nvim");
    let (base, how) = match env.path_var(xdg) {
        Some(p) => (p, xdg),
        None => (env.home.join(default), "default"),
    };
    let how = if env.var("NVIM_APPNAME").is_some() {
        format!("{how}, NVIM_APPNAME")
    } else {
        how.to_string()
    };
    (base.join(app), how)
}

/// Every history directory the extension may use by default, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    let (data, how) = nvim_data_dir(env);
    vec![Root::new(Agent::Codecompanion, data.join(HISTORY_DIR), how)]
}

pub struct CodecompanionStore {
    base: Base,
}

impl CodecompanionStore {
    pub fn new(roots: Vec<Root>) -> CodecompanionStore {
        CodecompanionStore {
            base: Base::new(Agent::Codecompanion, roots),
        }
    }
}

/// The chats directory and the summaries directory of a root (the history directory, or a
/// directory of chat files itself).
fn layout(root: &Path) -> (PathBuf, Option<PathBuf>) {
    let chats = root.join("chats");
    if chats.is_dir() {
        (chats, Some(root.join("summaries")))
    } else {
        (root.to_path_buf(), None)
    }
}

/// The `*.json` files of a directory, hidden ones left out.
fn json_files(dir: &Path, suffix: &[u8]) -> Vec<PathBuf> {
    kit::typed_entries(dir)
        .into_iter()
        .filter(|(p, t)| {
            let name = p.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
            *t == EntryType::File && !name.starts_with(b".") && name.ends_with(suffix)
        })
        .map(|(p, _)| p)
        .collect()
}

fn stem(p: &Path) -> String {
    p.file_stem().map(crate::names::os_id).unwrap_or_default()
}

impl Store for CodecompanionStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            if root.path.is_file() {
                out.push(Listed::file(stem(&root.path), root.path.clone(), i));
                continue;
            }
            let (chats, summaries) = layout(&root.path);
            let mut ids = std::collections::HashSet::new();
            for path in json_files(&chats, b".json") {
                let id = stem(&path);
                let mut l = Listed::file(id.clone(), path, i);
                if let Some(s) = &summaries {
                    l.sources.push(s.join(format!("{id}.md")));
                }
                ids.insert(id);
                out.push(l);
            }
            // A summary whose chat was deleted (`delete_chat` keeps summaries).
            if let Some(s) = &summaries {
                for path in json_files(s, b".md") {
                    let id = stem(&path);
                    if !ids.contains(&id) {
                        out.push(Listed::file(id, path, i));
                    }
                }
            }
        }
        out
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads file names only; rewriting a chat never adds one.
        true
    }

    fn glance(&self, _listed: &[Listed]) -> Option<super::Glance> {
        let mut g = super::Glance::default();
        for root in &self.base.roots {
            if root.path.is_file() {
                continue;
            }
            if !root.path.is_dir() {
                return None;
            }
            let (chats, summaries) = layout(&root.path);
            g.dirs.push(chats);
            if let Some(s) = summaries.filter(|s| s.is_dir()) {
                g.dirs.push(s);
            }
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        if listed.path.extension().is_some_and(|e| e == "md") {
            return load_orphan_summary(&listed.path, &listed.id);
        }
        let summary = listed.sources.get(1).map(PathBuf::as_path);
        load_chat(&listed.path, summary, &listed.id)
    }
}

/// A time in Unix seconds (a number or a numeric string); milliseconds when it is too large
/// to be seconds (a duplicated chat's `save_id`).
fn unix_time(v: &Value) -> Option<DateTime<Utc>> {
    let n = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    if !(n.is_finite() && n > 0.0) {
        return None;
    }
    if n >= 1e11 {
        DateTime::<Utc>::from_timestamp_millis(n as i64)
    } else {
        DateTime::<Utc>::from_timestamp(n as i64, 0)
    }
}

/// A chat's summary file, when there is one: `None` when absent, a warning when unreadable.
fn read_summary(b: &mut SessionBuilder, path: &Path) -> Option<String> {
    match kit::read_file(path) {
        Ok(bytes) => Some(kit::raw_text(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            b.warn(format!("{}: cannot read: {e}", kit::file_name(path)));
            None
        }
    }
}

/// A summary whose chat is gone: the summary alone, said in a warning.
pub fn load_orphan_summary(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Codecompanion, id);
    b.s.source.format = "codecompanion-history-summary".into();
    b.s.source.paths.push(path.to_path_buf());
    b.warn(format!(
        "chats/{id}.json is gone; only the chat's summary remains"
    ));
    if let Some(text) = read_summary(&mut b, path) {
        b.push(Message {
            role: Role::System,
            kind: MessageKind::CompactionSummary,
            content: text.clone(),
            ..Message::default()
        });
        b.s.extra_files.push((SUMMARY_FILE.into(), text));
    }
    b.s.updated_at = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    b.finish()
}

/// Load one chat file, and its summary beside it.
pub fn load_chat(path: &Path, summary: Option<&Path>, id: &str) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(Agent::Codecompanion, id);
    b.s.source.format = "codecompanion-history-json".into();
    b.s.source.paths.push(path.to_path_buf());
    if let Some(text) = summary.and_then(|s| read_summary(&mut b, s)) {
        if let Some(s) = summary {
            b.s.source.paths.push(s.to_path_buf());
        }
        b.s.extra_files.push((SUMMARY_FILE.into(), text));
    }
    b.s.created_at = unix_time(&Value::String(id.to_string()));
    let Some(bytes) = kit::read_capped(&mut b, path, &file, MAX_JSON_BYTES) else {
        return b.finish();
    };
    let Some(doc) = doc_or_raw(&mut b, &bytes, &file, "messages", "messages") else {
        return b.finish();
    };
    let f = &doc.fields;
    header(&mut b, f, &file);
    if f.contains_key("messages") {
        // `parse_doc_of` keeps a `messages` that is no list among the fields.
        b.warn(format!(
            "{file}: `messages` is not a list; the file is shown raw"
        ));
        b.context("unparsed file", kit::raw_text(&bytes), None);
    }
    context_items(&mut b, f);
    for (i, m) in doc.messages.iter().enumerate() {
        message(&mut b, i, m);
    }
    if let Some(cut) = doc.cut {
        b.context(&format!("unparsed tail of {file}"), cut, None);
    }
    b.finish()
}

fn field<'a>(f: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    f.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// Title, cwd, times, model, adapter and project from the chat's top level.
fn header(b: &mut SessionBuilder, f: &Map<String, Value>, file: &str) {
    b.s.title = field(f, "title").and_then(title_from_text);
    b.s.cwd = field(f, "cwd").map(str::to_string);
    b.s.updated_at = f.get("updated_at").and_then(unix_time);
    b.s.set_model = f
        .get("settings")
        .and_then(|s| kit::str_field(s, "model"))
        .filter(|m| !m.trim().is_empty())
        .map(str::to_string);
    if let Some(a) = field(f, "adapter").filter(|a| *a != "unknown") {
        b.s.tags.push(format!("adapter:{a}"));
    }
    if let Some(p) = field(f, "project_root").filter(|p| Some(*p) != field(f, "cwd")) {
        b.s.tags.push(format!("project:{p}"));
    }
    let unknown: Vec<&str> = f
        .keys()
        .map(String::as_str)
        .filter(|k| !KNOWN_FIELDS.contains(k))
        .collect();
    if !unknown.is_empty() {
        b.warn(format!(
            "{file}: fields this version of sessfs does not read: {}",
            unknown.join(", ")
        ));
    }
}

/// The chat's context items (`context_items`, `refs` before it): one context message.
fn context_items(b: &mut SessionBuilder, f: &Map<String, Value>) {
    let items = f
        .get("context_items")
        .or_else(|| f.get("refs"))
        .and_then(Value::as_array);
    let lines: Vec<String> = items
        .into_iter()
        .flatten()
        .map(|item| {
            let id = kit::str_field(item, "id")
                .map(str::to_string)
                .unwrap_or_else(|| item.to_string());
            let mut marks = Vec::new();
            for flag in ["pinned", "watched"] {
                if kit::value_at(item, &["opts", flag]).and_then(Value::as_bool) == Some(true) {
                    marks.push(flag);
                }
            }
            match (kit::str_field(item, "source"), marks.is_empty()) {
                (Some(src), true) => format!("- {id} ({src})"),
                (Some(src), false) => format!("- {id} ({src}, {})", marks.join(", ")),
                (None, true) => format!("- {id}"),
                (None, false) => format!("- {id} ({})", marks.join(", ")),
            }
        })
        .collect();
    if !lines.is_empty() {
        b.context("context items", lines.join("\n"), None);
    }
}

/// A message's tag: v18's `_meta.tag`, else v17's `opts.tag`.
fn tag(m: &Value) -> Option<&str> {
    kit::str_at(m, &["_meta", "tag"]).or_else(|| kit::str_at(m, &["opts", "tag"]))
}

/// A message's text: a string, or an Anthropic-shaped table (`{content}` or text parts).
fn content_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => s.clone(),
                _ => kit::str_field(p, "text")
                    .map(str::to_string)
                    .unwrap_or_else(|| p.to_string()),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Object(o)) => match o.get("content") {
            Some(inner) => content_text(Some(inner)),
            None => Value::Object(o.clone()).to_string(),
        },
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// One element of `messages`.
fn message(b: &mut SessionBuilder, i: usize, m: &Value) {
    if !m.is_object() {
        b.unparsed(
            "messages",
            "not an object",
            || format!("message {i}"),
            "message",
            &m.to_string(),
            None,
        );
        return;
    }
    let ts = m.get("created_at").and_then(unix_time);
    let native_id = kit::value_at(m, &["_meta", "id"])
        .or_else(|| m.get("id"))
        .filter(|v| !v.is_null())
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
    let hidden = kit::value_at(m, &["opts", "visible"]).and_then(Value::as_bool) == Some(false);
    let tag = tag(m);
    let text = content_text(m.get("content"));
    match kit::str_field(m, "role") {
        Some("user") => {
            let context_id = kit::str_at(m, &["opts", "context_id"])
                .or_else(|| kit::str_at(m, &["opts", "reference"]))
                .or_else(|| kit::str_at(m, &["context", "id"]));
            let mime = kit::str_at(m, &["context", "mimetype"])
                .or_else(|| kit::str_at(m, &["opts", "mimetype"]));
            if tag == Some("compact_summary") {
                b.push(Message {
                    role: Role::System,
                    kind: MessageKind::CompactionSummary,
                    content: text,
                    timestamp: ts,
                    native_id,
                    ..Message::default()
                });
            } else if tag == Some("image") {
                let mut ph = kit::base64_placeholder("image", mime, Some(&text));
                if let Some(src) = context_id.or_else(|| kit::str_at(m, &["context", "path"])) {
                    ph = format!("{ph} {src}");
                }
                b.context("image", ph, ts);
            } else if hidden || context_id.is_some() {
                let label = match (context_id, tag) {
                    (Some(id), _) => format!("context {id}"),
                    (None, Some(t)) => t.to_string(),
                    (None, None) => "hidden message".to_string(),
                };
                b.context(&label, text, ts);
                if let Some(last) = b.last_mut() {
                    last.native_id = native_id;
                }
            } else {
                b.push(Message {
                    role: Role::User,
                    content: text,
                    timestamp: ts,
                    native_id,
                    ..Message::default()
                });
            }
        }
        Some("llm") | Some("assistant") => {
            let calls = tool_calls(b, i, m);
            let thinking = match m.get("reasoning") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(r) => kit::str_field(r, "content").map(str::to_string),
                None => None,
            }
            .filter(|r| !r.trim().is_empty());
            b.push(Message {
                role: Role::Assistant,
                content: text,
                thinking,
                tool_calls: calls,
                timestamp: ts,
                native_id,
                ..Message::default()
            });
        }
        Some("tool") => {
            let content = m.get("content");
            let call = kit::str_field(m, "tool_call_id")
                .or_else(|| kit::str_at(m, &["tools", "call_id"]))
                .or_else(|| content.and_then(|c| kit::str_field(c, "tool_use_id")))
                .unwrap_or_default()
                .to_string();
            let failed = [
                kit::value_at(m, &["tools", "is_error"]),
                content.and_then(|c| c.get("is_error")),
            ]
            .into_iter()
            .flatten()
            .any(|v| v.as_bool() == Some(true));
            let name = kit::str_at(m, &["tools", "name"]).or_else(|| kit::str_field(m, "name"));
            b.tool_result(&call, name, text, failed, ts);
        }
        Some("system") => {
            let label = match tag {
                Some("from_config") | Some("system_prompt_from_config") => "system prompt",
                Some("tool") | Some("tool_system_prompt") => "tool instructions",
                _ => "system message",
            };
            b.context(label, text, ts);
        }
        role => {
            let role = role.unwrap_or("(none)").to_string();
            b.unparsed(
                "messages",
                &format!("unknown role {role}"),
                || format!("message {i}"),
                "message",
                &m.to_string(),
                ts,
            );
        }
    }
}

/// A reply's calls: v17's `tool_calls`, v18's `tools.calls`; arguments are JSON text
/// (parsed, kept verbatim when they are not JSON) or already a table.
fn tool_calls(b: &mut SessionBuilder, i: usize, m: &Value) -> Vec<ToolCall> {
    let list = m
        .get("tool_calls")
        .filter(|v| v.is_array())
        .or_else(|| kit::value_at(m, &["tools", "calls"]));
    let mut out = Vec::new();
    for (ci, c) in list
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let input = kit::call_input(
            kit::value_at(c, &["function", "arguments"]),
            "tool call arguments",
            &mut b.unparsed,
            || format!("message {i}, call {ci}"),
        );
        out.push(ToolCall {
            tool_call_id: kit::str_field(c, "id").unwrap_or_default().to_string(),
            tool_name: kit::str_at(c, &["function", "name"])
                .or_else(|| kit::str_field(c, "name"))
                .unwrap_or_default()
                .to_string(),
            input,
            ..ToolCall::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roots_follow_xdg_data_home_and_the_app_name() {
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
                PathBuf::from("/h/.local/share/nvim/codecompanion-history"),
                "default".to_string()
            )]
        );
        env.vars.insert("NVIM_APPNAME".into(), "lazyvim".into());
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/h/.local/share/lazyvim/codecompanion-history"),
                "default, NVIM_APPNAME".to_string()
            )]
        );
        env.vars.insert("XDG_DATA_HOME".into(), "/x".into());
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/x/lazyvim/codecompanion-history"),
                "XDG_DATA_HOME, NVIM_APPNAME".to_string()
            )]
        );
    }

    #[test]
    fn save_ids_are_seconds_and_duplicates_milliseconds() {
        let t = |v: Value| unix_time(&v).map(|d| d.to_rfc3339());
        assert_eq!(
            t(json!("1767225600")).as_deref(),
            Some("2026-01-01T00:00:00+00:00")
        );
        assert_eq!(
            t(json!("1767225600123")).as_deref(),
            Some("2026-01-01T00:00:00.123+00:00")
        );
        assert_eq!(t(json!("test_save_id")), None);
        assert_eq!(t(json!(-5)), None);
    }

    #[test]
    fn anthropic_tool_output_tables_give_their_text() {
        let c =
            json!({"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": false});
        assert_eq!(content_text(Some(&c)), "ok");
    }
}
