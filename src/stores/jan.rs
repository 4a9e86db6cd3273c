//! Jan (the desktop assistant for local and remote models): the threads it keeps in its data
//! folder, one directory per thread holding `thread.json` and `messages.jsonl`.
//!
//! Read from Jan's own source, janhq/jan. The thread store is pinned at
//! `dfcc2ad6c450c60d4119c43070ed7bafd64389c6`; files the thread store uses that did not
//! change there are cited at the commit they were read at:
//!
//! - `src-tauri/src/core/threads/commands.rs` (`dfcc2ad6`), `utils.rs` (`86e0c9cc`),
//!   `constants.rs` (`cad3fbc0`), `helpers.rs` (`08d52736`): on the desktop a thread is the
//!   directory `<data folder>/threads/<id>/`, its metadata `thread.json` (written whole with
//!   `serde_json::to_string_pretty` at each change; `list_threads` lists every directory
//!   holding one), its messages `messages.jsonl`, one JSON object per line, appended with a
//!   newline by `create_message` and rewritten whole by `modify_message` and
//!   `delete_message`. The mobile builds keep threads in SQLite instead (`db.rs`), not on a
//!   desktop;
//! - `src-tauri/src/core/app/commands.rs` (`00e7925a`), `constants.rs` (`0a20dc61`),
//!   `models.rs` (`32070d7d`): the data folder is `settings.json`'s `data_folder`, by default
//!   `dirs::data_dir()/Jan/data` (`~/.local/share/Jan/data`, `$XDG_DATA_HOME` honoured;
//!   macOS `~/Library/Application Support/Jan/data`); `settings.json` also holds
//!   `modelscope_token` and, since the zustand stores moved there, the providers' settings,
//!   so it is never read. `JAN_DATA_FOLDER` replaces the data folder for Jan's CLI;
//!   the data folder also holds `assistants/`, `extensions/`, `models/`, `llamacpp/`,
//!   `mcp_config.json` and `logs/`;
//! - `core/src/node/helper/config.ts` (`01964d3d`, the Electron releases up to 0.5): the
//!   data folder defaulted to Electron's `userData/data` (`~/.config/Jan/data`,
//!   `$XDG_CONFIG_HOME` honoured), and before that to `~/jan`;
//! - `core/src/types/thread/threadEntity.ts` (`150cc3c6`), `web-app/src/services/threads/
//!   default.ts` (`1274cf90`): `thread.json` is `{id, object, title, assistants: [{id |
//!   assistant_id, name | assistant_name, instructions, model: {id, engine}}], created,
//!   updated, metadata: {is_favorite, order, …}}`; the model chosen for the thread is
//!   `assistants[0].model` (`*` when none); `updated` and `created` are seconds (floats) in
//!   current builds, milliseconds in older ones, and `created` is rewritten with the time of
//!   every update;
//! - `core/src/types/message/messageEntity.ts`, `web-app/src/lib/messages.ts`
//!   (`78cc8fcb` and the later `extractContentPartsFromUIMessage`), `web-app/src/lib/
//!   completion.ts`, `extensions/conversational-extension/src/index.ts` (`09252971`, the
//!   Electron releases): a message is `{id, object, thread_id, assistant_id?, role, content:
//!   [part], status, created_at, completed_at, metadata?, type?, error_code?, tool_call_id?,
//!   attachments?}`, times in milliseconds (seconds in the oldest files, 0 when unset); a
//!   part is `{type: text, text: {value, annotations}}`, `{type: reasoning, text: {value}}`,
//!   `{type: image_url, image_url: {url}}` (a `data:` URL for an attached image), `{type:
//!   tool_call, tool_call_id, tool_name, input, output}` (an MCP call and its result in one
//!   part), or in the Electron releases `{type: image | pdf, text: {value, annotations:
//!   [path of the copy in threads/<id>/files/]}}`. Reasoning of older replies is inline,
//!   `<think>…</think>` or `<|channel|>analysis<|message|>…<|start|>assistant<|channel|>
//!   final<|message|>` before the answer. `metadata.tool_calls` (the 0.6 releases) holds
//!   `{tool: {id, function: {name, arguments}}, response, state}` per call, the response an
//!   MCP result `{content: [{type: text, text} | {type: image, data, mimeType}], isError?}`;
//!   `metadata.usage` `{inputTokens, outputTokens, totalTokens}` the reply's usage;
//!   `metadata.inline_file_contents` `[{name, content}]` documents sent inline with a prompt.
//!
//! Design decisions and why:
//! - **Roots**: `$JAN_DATA_FOLDER/threads` when it is set (as Jan's CLI reads it), else
//!   every place a release kept the data folder: `$XDG_DATA_HOME/Jan/data` (current),
//!   `$XDG_CONFIG_HOME/Jan/data` (0.5), `~/Library/Application Support/Jan/data` (macOS)
//!   and `~/jan` (0.4), each with `threads/`. A data folder the user moved is named only in
//!   `settings.json`, which holds a token, so it is given with `--store jan=DIR` (the data
//!   folder, its `threads/`, or one thread directory).
//! - **Never read**: `settings.json` (the ModelScope token, provider settings and keys),
//!   `mcp_config.json` (MCP servers' environment, often keys), `extensions/`, `engines/`,
//!   `assistants/`, `models/`, `logs/`, and the attachment copies in `threads/<id>/files/`
//!   (shown as placeholders naming their path).
//! - **One thread directory is one session**, its name the id, listed when it holds
//!   `thread.json` or `messages.jsonl` (Jan lists only the first; messages whose
//!   `thread.json` is lost are still shown, with a warning).
//! - **What each message becomes**: `user` messages are prompts (images and files as
//!   placeholders, documents sent inline as context labelled `attached file <name>`);
//!   `assistant` messages are replies (cut where text follows a tool call, so that text,
//!   calls and text keep Jan's order) with their reasoning as thinking, their tool calls
//!   (each with its output when the call and result share a part, or the result of a 0.6
//!   `metadata.tool_calls` entry; an MCP result with `isError` is failed) and their usage;
//!   a reply saved with status `error` is an error event; `system` messages are context
//!   labelled `system prompt`; `tool` messages are results paired by `tool_call_id`. The
//!   thread's assistant instructions open the transcript as context labelled `assistant
//!   instructions`. An unknown role, part type or message field costs a warning and is
//!   shown as its JSON.
//! - **Model, times, usage**: the thread's model (`assistants[0].model.id`) is the session's
//!   set model and its engine a `provider:` tag; replies name none, so usage is counted but
//!   not priced (Jan runs local models that have no price). `metadata.tokenSpeed` is a
//!   speed display, not usage, and is not read. Times are the messages' `created_at`; the
//!   thread's `created` (rewritten at every update) is used only when no message has one,
//!   its `updated` is the update time when no message is newer.

use super::jsonl;
use super::kit::{self, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, TokenUsage, ToolCall};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A thread's metadata file.
pub const THREAD_FILE: &str = "thread.json";
/// A thread's messages, one JSON object per line.
pub const MESSAGES_FILE: &str = "messages.jsonl";
/// Larger `thread.json` files are not parsed (it is a few hundred bytes).
const MAX_THREAD_BYTES: u64 = 16 << 20;
/// The title Jan gives a thread it has not named yet.
const PLACEHOLDER_TITLE: &str = "New Thread";
/// The model id Jan stores when a thread has none chosen.
const NO_MODEL: &str = "*";
/// Fields of a message the store knows.
const KNOWN_FIELDS: &[&str] = &[
    "id",
    "object",
    "thread_id",
    "assistant_id",
    "attachments",
    "role",
    "content",
    "status",
    "created_at",
    "completed_at",
    "metadata",
    "type",
    "error_code",
    "tool_call_id",
];

/// Where Jan kept its data folder, newest first, each with its `threads/` (existing or not).
pub fn candidates(env: &Env) -> Vec<Root> {
    let root = |data: PathBuf, how: &str| Root::new(Agent::Jan, data.join("threads"), how);
    if let Some(p) = env.path_var("JAN_DATA_FOLDER") {
        return vec![root(p, "JAN_DATA_FOLDER")];
    }
    let data_how = if env.var("XDG_DATA_HOME").is_some() {
        "XDG_DATA_HOME"
    } else {
        "default"
    };
    let (config, config_how) = match env.path_var("XDG_CONFIG_HOME") {
        Some(p) => (p, "XDG_CONFIG_HOME (Jan 0.5)"),
        None => (env.home.join(".config"), "default (Jan 0.5)"),
    };
    let mut out: Vec<Root> = Vec::new();
    for r in [
        root(env.xdg_data_home().join("Jan/data"), data_how),
        root(config.join("Jan/data"), config_how),
        root(
            env.home.join("Library/Application Support/Jan/data"),
            "default (macOS)",
        ),
        root(env.home.join("jan"), "default (Jan 0.4)"),
    ] {
        if !out.iter().any(|x| x.path == r.path) {
            out.push(r);
        }
    }
    out
}

pub struct JanStore {
    base: Base,
}

impl JanStore {
    pub fn new(roots: Vec<Root>) -> JanStore {
        JanStore {
            base: Base::new(Agent::Jan, roots),
        }
    }
}

/// Whether `dir` is a thread directory: it holds `thread.json` or `messages.jsonl`.
fn is_thread(dir: &Path) -> bool {
    dir.join(THREAD_FILE).is_file() || dir.join(MESSAGES_FILE).is_file()
}

/// The directory whose subdirectories are threads: `root` itself, or its `threads/` when
/// `root` is a data folder given by hand.
fn threads_dir(root: &Path) -> PathBuf {
    let threads = root.join("threads");
    if threads.is_dir() {
        threads
    } else {
        root.to_path_buf()
    }
}

/// The thread directories under a root: the root itself when it is one thread, else every
/// subdirectory of its threads directory that is one (hidden names and symlinks skipped,
/// as [`kit::subdirs`] does). Nothing else of the data folder is ever listed.
pub fn thread_dirs(root: &Path) -> Vec<PathBuf> {
    if is_thread(root) {
        return vec![root.to_path_buf()];
    }
    kit::subdirs(&threads_dir(root))
        .into_iter()
        .filter(|d| is_thread(d))
        .collect()
}

impl Store for JanStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for dir in thread_dirs(&root.path) {
                let id = dir.file_name().map(crate::names::os_id).unwrap_or_default();
                out.push(Listed {
                    id,
                    sources: vec![dir.join(MESSAGES_FILE), dir.join(THREAD_FILE), dir.clone()],
                    path: dir,
                    key: None,
                    root: i,
                });
            }
        }
        out
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads directory names and whether two names exist; writing a thread's
        // files never adds or removes a thread.
        true
    }

    /// Each threads directory and every directory in it: the listing reads the names in
    /// the first, and in each of the others whether `thread.json` or `messages.jsonl` is
    /// there. A root that is one thread is read for those two names only.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            if is_thread(&root.path) {
                g.dirs.push(root.path.clone());
                continue;
            }
            let dir = threads_dir(&root.path);
            g.dirs.extend(kit::subdirs(&dir));
            g.dirs.push(dir);
            if root.path.join("threads").is_dir() {
                g.dirs.push(root.path.clone());
            }
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_thread(&listed.path, &listed.id)
    }
}

/// A time as Jan stores it: milliseconds since the epoch, or seconds (with a fraction) in
/// older files and in `thread.json`; 0 and negative numbers are no time.
fn time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let n = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => return kit::parse_rfc3339(s),
        _ => return None,
    };
    if n <= 0.0 || !n.is_finite() {
        return None;
    }
    // 1e11 seconds is the year 5138; 1e11 milliseconds is March 1973.
    let ms = if n >= 1e11 { n } else { n * 1000.0 };
    DateTime::<Utc>::from_timestamp_millis(ms as i64)
}

/// A non-blank string field.
fn text_field(v: &Value, key: &str) -> Option<String> {
    kit::str_field(v, key)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
}

/// Load one thread directory.
pub fn load_thread(dir: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Jan, id);
    b.s.source.format = "jan-thread".into();
    let thread_path = dir.join(THREAD_FILE);
    let messages_path = dir.join(MESSAGES_FILE);
    let mut thread_created = None;
    if thread_path.exists() {
        b.s.source.paths.push(thread_path.clone());
        match kit::read_json(&thread_path, THREAD_FILE, MAX_THREAD_BYTES) {
            Ok(t) if t.is_object() => thread_created = thread(&mut b, &t),
            Ok(_) => b.warn(format!("{THREAD_FILE}: not a JSON object")),
            Err(e) => b.warn(e),
        }
    } else {
        b.warn(format!(
            "{THREAD_FILE} missing: no title, model or instructions (Jan does not list this thread)"
        ));
    }
    if messages_path.exists() {
        b.s.source.paths.push(messages_path.clone());
        let mut unknown = BTreeSet::new();
        let scanned = jsonl::read(&messages_path, |line, v| {
            if let Some(o) = v.as_object() {
                unknown.extend(
                    o.keys()
                        .filter(|k| !KNOWN_FIELDS.contains(&k.as_str()))
                        .cloned(),
                );
            }
            message(&mut b, line, &v);
        });
        scanned.into_session(&mut b.s);
        if !unknown.is_empty() {
            b.warn(format!(
                "{MESSAGES_FILE}: message fields this version of sessfs does not read: {}",
                unknown.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let mut s = b.finish();
    if s.created_at.is_none() {
        s.created_at = thread_created;
    }
    s
}

/// What `thread.json` gives: title, update time, model, provider, favourite, instructions.
/// Returns the thread's `created` time, used only when no message has a time.
fn thread(b: &mut SessionBuilder, t: &Value) -> Option<DateTime<Utc>> {
    b.title_or_placeholder(kit::str_field(t, "title").map(str::to_string), |x| {
        x == PLACEHOLDER_TITLE
    });
    b.s.updated_at = time(t.get("updated"));
    let first = t
        .get("assistants")
        .and_then(Value::as_array)
        .and_then(|a| a.first());
    if let Some(a) = first {
        let model = a.get("model").unwrap_or(&Value::Null);
        if let Some(m) = text_field(model, "id").filter(|m| m != NO_MODEL) {
            b.s.set_model = Some(m);
        }
        if let Some(p) = text_field(model, "engine").or_else(|| text_field(model, "provider")) {
            b.s.tags.push(format!("provider:{p}"));
        }
        if let Some(i) = text_field(a, "instructions") {
            b.context("assistant instructions", i, None);
        }
    }
    if kit::value_at(t, &["metadata", "is_favorite"]) == Some(&Value::Bool(true)) {
        b.s.tags.push("favorite".into());
    }
    time(t.get("created"))
}

/// What a run of a message's `content` parts holds: text, reasoning, and the tool calls
/// that follow them.
#[derive(Default)]
struct Parts {
    text: String,
    thinking: Vec<String>,
    calls: Vec<ToolCall>,
}

/// A message's parts, cut into runs so that a reply keeps its order: text and reasoning
/// that come after a tool call open a new run (Jan saves a reply as `text, tool_call, text,
/// tool_call, …`, one part per step), and each run becomes a message of its own.
#[derive(Default)]
struct Runs(Vec<Parts>);

impl Runs {
    /// The run text goes to: a new one when the last already holds a call.
    fn for_text(&mut self) -> &mut Parts {
        if self.0.last().is_none_or(|p| !p.calls.is_empty()) {
            self.0.push(Parts::default());
        }
        self.0.last_mut().expect("a run was just pushed")
    }

    /// The run a call goes to: the last.
    fn for_call(&mut self) -> &mut Parts {
        if self.0.is_empty() {
            self.0.push(Parts::default());
        }
        self.0.last_mut().expect("a run was just pushed")
    }

    /// Everything as one run (prompts, system and tool messages are not cut).
    fn joined(self) -> Parts {
        let mut out = Parts::default();
        for p in self.0 {
            out.push_text(&p.text);
            out.thinking.extend(p.thinking);
            out.calls.extend(p.calls);
        }
        out
    }
}

impl Parts {
    fn push_text(&mut self, t: &str) {
        if t.is_empty() {
            return;
        }
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(t);
    }
}

/// The parts of one message (`line` names it in warnings), in runs.
fn parts(b: &mut SessionBuilder, line: usize, content: Option<&Value>, reply: bool) -> Runs {
    let mut runs = Runs::default();
    let items = match content {
        Some(Value::Array(items)) => items.as_slice(),
        Some(Value::String(s)) => {
            // Not what Jan writes, but a plain string is plainly the text.
            runs.for_text().push_text(s);
            return runs;
        }
        Some(Value::Null) | None => return runs,
        Some(other) => {
            b.unparsed.note("messages", "content is not a list", || {
                format!("line {line}")
            });
            runs.for_text().push_text(&other.to_string());
            return runs;
        }
    };
    for p in items {
        let value = || kit::str_at(p, &["text", "value"]).unwrap_or_default();
        match kit::str_field(p, "type") {
            Some("text") => {
                if reply {
                    let (thinking, text) = split_reasoning(value());
                    let run = runs.for_text();
                    run.thinking.extend(thinking);
                    run.push_text(&text);
                } else {
                    runs.for_text().push_text(value());
                }
            }
            Some("reasoning") => {
                if !value().trim().is_empty() {
                    runs.for_text().thinking.push(value().to_string());
                }
            }
            Some("image_url") => match kit::str_at(p, &["image_url", "url"]) {
                Some(url) => runs.for_text().push_text(&kit::data_url_placeholder(url)),
                None => runs.for_text().push_text("[image]"),
            },
            Some(kind @ ("image" | "pdf")) => {
                // The Electron releases: the file's copy under `threads/<id>/files/` in
                // the first annotation (the data URL itself when the copy failed).
                runs.for_text().push_text(value());
                let label = if kind == "image" {
                    "image"
                } else {
                    "attachment"
                };
                let at = p
                    .get("text")
                    .and_then(|t| t.get("annotations"))
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str);
                runs.for_text().push_text(&match at {
                    Some(u) if u.starts_with("data:") => kit::data_url_placeholder(u),
                    Some(path) => format!("[{label}: {path}]"),
                    None => format!("[{label}]"),
                });
            }
            Some("tool_call") => {
                let output = p.get("output").filter(|o| !o.is_null()).map(output_text);
                runs.for_call().calls.push(ToolCall {
                    tool_call_id: kit::str_field(p, "tool_call_id")
                        .unwrap_or_default()
                        .to_string(),
                    tool_name: kit::str_field(p, "tool_name")
                        .unwrap_or_default()
                        .to_string(),
                    input: p.get("input").cloned().unwrap_or(Value::Null),
                    is_error: output.as_ref().map(|o| o.1),
                    output: output.map(|o| o.0),
                    ..ToolCall::default()
                });
            }
            other => {
                let ty = other.unwrap_or("(none)");
                b.unparsed
                    .note("content parts", &format!("unknown part type {ty}"), || {
                        format!("line {line}")
                    });
                runs.for_text().push_text(&p.to_string());
            }
        }
    }
    runs
}

/// Reasoning written inline before the answer, as Jan's `parseReasoning` finds it: a
/// `<think>` block (unclosed while it streamed), or gpt-oss's analysis channel up to the
/// final channel. Returns the reasoning, if any, and the text without it, trimmed.
fn split_reasoning(text: &str) -> (Option<String>, String) {
    const THINK: (&str, &str) = ("<think>", "</think>");
    const CHANNEL: (&str, &str) = (
        "<|channel|>analysis<|message|>",
        "<|start|>assistant<|channel|>final<|message|>",
    );
    for (open, close) in [THINK, CHANNEL] {
        let Some(start) = text.find(open) else {
            continue;
        };
        let inner = &text[start + open.len()..];
        let (thinking, rest) = match inner.find(close) {
            Some(end) => (&inner[..end], &inner[end + close.len()..]),
            None => (inner, ""),
        };
        let answer = format!("{}{}", &text[..start], rest);
        let thinking = Some(thinking.trim().to_string()).filter(|t| !t.is_empty());
        return (thinking, answer.trim().to_string());
    }
    (None, text.to_string())
}

/// A tool's output as text, and whether it failed: a string as it is; an MCP result's
/// `content` (or a bare list of its items) as the text of its parts, images as
/// placeholders, `isError` as the failure; `{error}` as a failure; anything else as JSON.
fn output_text(v: &Value) -> (String, bool) {
    let items_text = |items: &[Value]| -> String {
        let mut out = String::new();
        for i in items {
            let t = match (kit::str_field(i, "type"), i) {
                (_, Value::String(s)) => s.clone(),
                (Some("text"), _) => kit::str_field(i, "text").unwrap_or_default().to_string(),
                (Some("image"), _) => kit::base64_placeholder(
                    "image",
                    kit::str_any(i, &["mimeType", "mime_type"]),
                    kit::str_field(i, "data"),
                ),
                (Some("image_url"), _) => kit::str_at(i, &["image_url", "url"])
                    .map(kit::data_url_placeholder)
                    .unwrap_or_else(|| "[image]".into()),
                _ => i.to_string(),
            };
            kit::push_paragraph(&mut out, &t);
        }
        out
    };
    match v {
        Value::String(s) => (s.clone(), false),
        Value::Array(items) => (items_text(items), false),
        Value::Object(o) => {
            let failed = o.get("isError") == Some(&Value::Bool(true));
            if let Some(Value::Array(items)) = o.get("content") {
                let mut text = items_text(items);
                if let Some(e) = text_field(v, "error") {
                    kit::push_paragraph(&mut text, &format!("Error: {e}"));
                    return (text, true);
                }
                return (text, failed);
            }
            if let Some(e) = text_field(v, "error") {
                return (e, true);
            }
            (v.to_string(), failed)
        }
        Value::Null => (String::new(), false),
        other => (other.to_string(), false),
    }
}

/// The 0.6 releases' calls, `metadata.tool_calls`: `{tool: {id, function: {name,
/// arguments}}, response, state}`, the response the call's result when it came.
fn metadata_calls(b: &mut SessionBuilder, line: usize, meta: &Value) -> Vec<ToolCall> {
    let mut out = Vec::new();
    let Some(calls) = meta.get("tool_calls").and_then(Value::as_array) else {
        return out;
    };
    for (ci, c) in calls.iter().enumerate() {
        let tool = c.get("tool").unwrap_or(c);
        let f = tool.get("function").unwrap_or(&Value::Null);
        let input = kit::call_input(
            f.get("arguments"),
            "tool call arguments",
            &mut b.unparsed,
            || format!("line {line}, call {ci}"),
        );
        let output = c.get("response").filter(|r| !r.is_null()).map(output_text);
        out.push(ToolCall {
            tool_call_id: kit::str_any(tool, &["id"]).unwrap_or_default().to_string(),
            tool_name: kit::str_any(f, &["name"])
                .or_else(|| kit::str_field(c, "name"))
                .unwrap_or_default()
                .to_string(),
            input,
            is_error: output.as_ref().map(|o| o.1),
            output: output.map(|o| o.0),
            ..ToolCall::default()
        });
    }
    out
}

/// A reply's usage, `metadata.usage` (the AI SDK's totals for the reply); `None` when it
/// counts nothing.
fn usage(meta: &Value) -> Option<TokenUsage> {
    let u = meta.get("usage").filter(|u| u.is_object())?;
    let usage = TokenUsage {
        input_tokens: kit::u64_field(u, "inputTokens"),
        output_tokens: kit::u64_field(u, "outputTokens"),
        ..TokenUsage::default()
    };
    Some(usage).filter(|u| !u.is_zero())
}

/// A reply: one message per run of its parts, the 0.6 releases' `metadata.tool_calls` and
/// the reply's usage on the last.
fn reply(
    b: &mut SessionBuilder,
    line: usize,
    runs: Runs,
    meta: &Value,
    ts: Option<DateTime<Utc>>,
    native_id: Option<String>,
) {
    let mut runs = runs.0;
    if runs.is_empty() {
        runs.push(Parts::default());
    }
    let last = runs.len() - 1;
    for (i, mut p) in runs.into_iter().enumerate() {
        let mut token_usage = None;
        if i == last {
            p.calls.extend(metadata_calls(b, line, meta));
            token_usage = usage(meta);
        }
        b.push(Message {
            role: Role::Assistant,
            content: p.text,
            timestamp: ts,
            tool_calls: p.calls,
            token_usage,
            thinking: Some(p.thinking.join("\n\n")).filter(|t| !t.is_empty()),
            native_id: native_id.clone(),
            ..Message::default()
        });
    }
}

/// One line of `messages.jsonl`.
fn message(b: &mut SessionBuilder, line: usize, m: &Value) {
    if !m.is_object() {
        b.unparsed(
            "messages",
            "not an object",
            || format!("line {line}"),
            "message",
            &m.to_string(),
            None,
        );
        return;
    }
    let ts = time(m.get("created_at")).or_else(|| time(m.get("completed_at")));
    let meta = m.get("metadata").unwrap_or(&Value::Null);
    let native_id = kit::str_field(m, "id").map(str::to_string);
    let role = kit::str_field(m, "role");
    let runs = parts(b, line, m.get("content"), role == Some("assistant"));
    if role == Some("assistant") && kit::str_field(m, "status") != Some("error") {
        reply(b, line, runs, meta, ts, native_id);
        return;
    }
    let mut p = runs.joined();
    match role {
        Some("user") => {
            if let Some(files) = m.get("attachments").and_then(Value::as_array) {
                for f in files {
                    let name = kit::str_field(f, "file_id").unwrap_or("file");
                    p.push_text(&format!("[attachment: {name}]"));
                }
            }
            if !p.text.trim().is_empty() {
                b.push(Message {
                    role: Role::User,
                    content: p.text,
                    timestamp: ts,
                    native_id,
                    ..Message::default()
                });
            }
            let inline = meta.get("inline_file_contents").and_then(Value::as_array);
            for f in inline.into_iter().flatten() {
                let name = kit::str_field(f, "name").unwrap_or("attachment");
                let text = kit::str_field(f, "content").unwrap_or_default();
                b.context(&format!("attached file {name}"), text.to_string(), ts);
            }
        }
        Some("assistant") => {
            // Saved with status `error`: the text is the error.
            let code = kit::str_field(m, "error_code")
                .map(|c| format!(" ({c})"))
                .unwrap_or_default();
            b.event(format!("error{code}: {}", p.text.trim()), ts);
        }
        Some("system") => b.context("system prompt", p.text, ts),
        Some("tool") => {
            let call = kit::str_field(m, "tool_call_id").unwrap_or_default();
            b.tool_result(call, None, p.text, false, ts);
        }
        other => {
            let role = other.unwrap_or("(none)").to_string();
            b.unparsed(
                "messages",
                &format!("unknown role {role}"),
                || format!("line {line}"),
                "message",
                &m.to_string(),
                ts,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roots_follow_jan_data_folder_else_every_release() {
        let roots = |env: &Env| -> Vec<(PathBuf, String)> {
            candidates(env)
                .into_iter()
                .map(|r| (r.path, r.how))
                .collect()
        };
        let mut env = Env::at_home(Path::new("/h"));
        assert_eq!(
            roots(&env),
            [
                (
                    PathBuf::from("/h/.local/share/Jan/data/threads"),
                    "default".to_string()
                ),
                (
                    PathBuf::from("/h/.config/Jan/data/threads"),
                    "default (Jan 0.5)".to_string()
                ),
                (
                    PathBuf::from("/h/Library/Application Support/Jan/data/threads"),
                    "default (macOS)".to_string()
                ),
                (
                    PathBuf::from("/h/jan/threads"),
                    "default (Jan 0.4)".to_string()
                ),
            ]
        );
        env.vars.insert("XDG_DATA_HOME".into(), "/d".into());
        env.vars.insert("XDG_CONFIG_HOME".into(), "/c".into());
        let got = roots(&env);
        assert_eq!(got[0].0, PathBuf::from("/d/Jan/data/threads"));
        assert_eq!(got[1].0, PathBuf::from("/c/Jan/data/threads"));
        env.vars.insert("JAN_DATA_FOLDER".into(), "~/moved".into());
        assert_eq!(
            roots(&env),
            [(
                PathBuf::from("/h/moved/threads"),
                "JAN_DATA_FOLDER".to_string()
            )]
        );
    }

    #[test]
    fn only_thread_directories_are_listed() {
        let dir = tempfile::tempdir().expect("tmp");
        let data = dir.path();
        for f in [
            "settings.json",
            "mcp_config.json",
            "threads/a/thread.json",
            "threads/b/messages.jsonl",
            "threads/c/files/x.png",
            "threads/.hidden/thread.json",
            "assistants/jan/assistant.json",
            "extensions/extensions.json",
        ] {
            let p = data.join(f);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, "{}").expect("write");
        }
        let names = |root: &Path| -> Vec<String> {
            thread_dirs(root)
                .iter()
                .map(|p| kit::file_name(p).to_string())
                .collect()
        };
        assert_eq!(names(data), ["a", "b"]);
        assert_eq!(names(&data.join("threads")), ["a", "b"]);
        assert_eq!(names(&data.join("threads/a")), ["a"]);
    }

    #[test]
    fn times_are_milliseconds_or_seconds() {
        let t = |v: Value| time(Some(&v)).map(|d| d.to_rfc3339());
        let want = Some("2026-03-01T10:30:00+00:00".to_string());
        assert_eq!(t(json!(1_772_361_000_000u64)), want);
        assert_eq!(t(json!(1_772_361_000)), want);
        assert_eq!(t(json!(1_772_361_000.0)), want);
        assert_eq!(t(json!(0)), None);
        assert_eq!(t(json!("x")), None);
    }

    #[test]
    fn inline_reasoning_is_split_from_the_answer() {
        assert_eq!(
            split_reasoning("<think>\nweigh it\n</think>\n\nThe answer."),
            (Some("weigh it".into()), "The answer.".into())
        );
        assert_eq!(
            split_reasoning("<think>still thinking"),
            (Some("still thinking".into()), String::new())
        );
        assert_eq!(
            split_reasoning(
                "<|channel|>analysis<|message|>plan<|start|>assistant<|channel|>final<|message|>Done."
            ),
            (Some("plan".into()), "Done.".into())
        );
        assert_eq!(split_reasoning("plain"), (None, "plain".into()));
    }

    #[test]
    fn mcp_results_become_text_with_placeholders_and_errors() {
        let png = "A".repeat(4000);
        let (text, failed) = output_text(&json!({"content": [
            {"type": "text", "text": "two files"},
            {"type": "image", "data": png, "mimeType": "image/png"}
        ]}));
        assert_eq!(text, "two files\n\n[image: image/png, 3.0 KB]");
        assert!(!failed);
        let (text, failed) = output_text(
            &json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}),
        );
        assert_eq!((text.as_str(), failed), ("no such file", true));
        assert_eq!(output_text(&json!("plain")), ("plain".to_string(), false));
    }
}
