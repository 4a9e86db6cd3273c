//! AIChat (the all-in-one LLM CLI with sessions, roles, agents and function calling): one
//! YAML document per saved session, `<name>.yaml` in its sessions directory, rewritten whole
//! at each save.
//!
//! Read from AIChat's own source, sigoden/aichat `82976d349ad97ac9aae0655ad631dace5e2a6385`
//! (2026-02-23):
//!
//! - `src/config/mod.rs`: the config directory is `$AICHAT_CONFIG_DIR`, else
//!   `$XDG_CONFIG_HOME/aichat`, else the platform's config directory + `aichat`
//!   (`~/.config/aichat`, macOS `~/Library/Application Support/aichat`); `sessions_dir()` is
//!   `$AICHAT_SESSIONS_DIR`, else `<config>/sessions`, and for an agent
//!   `agent_data_dir(<agent>)/sessions`, `agent_data_dir` being `$<AGENT>_DATA_DIR`, else
//!   `<config>/agents/<agent>`; `session_file(name)` is `<sessions>/<name>.yaml`, a name
//!   `dir/name` one directory down; a temporary session saved with `save_session: true`
//!   goes to `<sessions>/_/<YYYYMMDDTHHMMSS>[-<autoname>].yaml` (local time);
//! - `src/config/session.rs`: `Session` is serialized with serde_yaml: `model` (the
//!   `client:model` id), `temperature?`, `top_p?`, `use_tools?`, `save_session?`,
//!   `compress_threshold?`, `role_name?`, `agent_variables?` (a mapping),
//!   `agent_instructions?`, `compressed_messages?`, `messages`, `data_urls?` (sha256 of an
//!   attached file's data URL -> the file's path or URL); `compress()` moves every message
//!   to `compressed_messages` and puts the summary, as a `system` message (the role's system
//!   prompt before it), first in `messages`; `add_message()` pushes the prompt (a role's
//!   system prompt and example turns first, on the first turn), then a `tool` message holding
//!   the calls and their results, then the reply;
//! - `src/client/message.rs`: `Message {role: system | assistant | user | tool, content}`,
//!   `content` untagged: a string, a list of parts (`{type: text, text}`,
//!   `{type: image_url, image_url: {url}}`, the URL a `data:` URL), or
//!   `{tool_results: [{call: {name, arguments, id?}, output}], text, sequence}`, `text` being
//!   what the model said before calling;
//! - `src/function.rs`: a call's `output` is the tool's JSON, `{output: <text>}` when it
//!   printed no JSON, `DONE` when it printed nothing; a tool that fails aborts the turn, so
//!   no failed result is ever saved (there is no error flag).
//!
//! Design decisions and why:
//! - **Roots**: `$AICHAT_SESSIONS_DIR` when set, and the config directory
//!   (`$AICHAT_CONFIG_DIR`, else `$XDG_CONFIG_HOME/aichat`, else both platform defaults).
//!   A config directory's `sessions/` and each `agents/<agent>/sessions/` are listed; an
//!   agent moved with `$<AGENT>_DATA_DIR` (one variable per agent name) is given with
//!   `--store aichat=DIR`. A root without `sessions/`, `agents/` or `config.yaml` is a
//!   sessions directory itself.
//! - **Never read**: `config.yaml` (provider API keys), `.env`, each agent's
//!   `config.yaml` and RAG files, `roles/`, `macros/`, `rags/`, `functions/`,
//!   `models-override.yaml`, and `messages.md` (the log of chats saved outside any session,
//!   no session's history).
//! - **Ids** are AIChat's own session names: `<name>`, `<dir>/<name>`, `_/<time>[-<name>]`,
//!   and `agents/<agent>/<name>` for an agent's sessions (tagged `agent:<agent>`).
//! - **What each message becomes**: `compressed_messages` first (nothing `/compress` dropped
//!   is lost), then `messages`; prompts (images as placeholders), replies, `system` messages
//!   as context labelled `system prompt` (the summary `compress()` put first as the
//!   compaction summary), a `tool` message as a reply carrying its `text` and calls, then
//!   one result per call (never failed, see above). A call without an id gets
//!   `<message>-<call>` so its result pairs with it.
//! - **Session settings**: `model` is the session's set model; `role_name` a `role:` tag;
//!   `agent_instructions`, `agent_variables`, the sampling and saving settings and the
//!   attached files (`data_urls`' paths: their hashes are left out) are context at the start.
//!   Unknown top-level fields and messages cost a warning and are shown raw.
//! - **Times**: sessions hold none. The update time is the file's mtime; a `_/` session's
//!   name gives its creation time (local time). Sessions hold no usage and no cwd.
//! - **Each file is read in one read**; a file cut mid-write keeps what parsed before the
//!   fault (see [`super::yaml`]) and a warning names it.

use super::kit::{self, EntryType, SessionBuilder};
use super::yaml;
use super::{Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, MessageKind, Role, Session, ToolCall};
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Larger session files are not parsed (a whole file is held while parsing).
const MAX_YAML_BYTES: u64 = 64 << 20;
/// YAML files of a config directory that are no sessions (the first holds API keys): never
/// listed, even when a `--store` path names such a directory.
const NOT_SESSIONS: &[&str] = &["config.yaml", "models-override.yaml"];
/// Top-level fields of a session file, in the order AIChat writes them.
const KNOWN_FIELDS: &[&str] = &[
    "model",
    "temperature",
    "top_p",
    "use_tools",
    "save_session",
    "compress_threshold",
    "role_name",
    "agent_variables",
    "agent_instructions",
    "compressed_messages",
    "messages",
    "data_urls",
];
/// The settings shown as one context message, in AIChat's order.
const SETTINGS: &[&str] = &[
    "temperature",
    "top_p",
    "use_tools",
    "save_session",
    "compress_threshold",
];

/// Every root AIChat may use, existing or not, in priority order.
pub fn candidates(env: &Env) -> Vec<Root> {
    let root = |p: PathBuf, how: &str| Root::new(Agent::Aichat, p, how);
    let mut out = Vec::new();
    if let Some(p) = env.path_var("AICHAT_SESSIONS_DIR") {
        out.push(root(p, "AICHAT_SESSIONS_DIR"));
    }
    if let Some(p) = env.path_var("AICHAT_CONFIG_DIR") {
        out.push(root(p, "AICHAT_CONFIG_DIR"));
    } else if let Some(p) = env.path_var("XDG_CONFIG_HOME") {
        out.push(root(p.join("aichat"), "XDG_CONFIG_HOME"));
    } else {
        out.push(root(env.home.join(".config/aichat"), "default"));
        out.push(root(
            env.home.join("Library/Application Support/aichat"),
            "default (macOS)",
        ));
    }
    out
}

pub struct AichatStore {
    base: super::Base,
}

impl AichatStore {
    pub fn new(roots: Vec<Root>) -> AichatStore {
        AichatStore {
            base: super::Base::new(Agent::Aichat, roots),
        }
    }
}

impl Store for AichatStore {
    fn base(&self) -> &super::Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for (id, path) in session_files(&root.path) {
                out.push(Listed::file(id, path, i));
            }
        }
        out
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads names only; a save rewrites a file, never adds one.
        true
    }

    /// The directories [`session_files`] reads: each sessions directory and its
    /// subdirectories, and of a config directory also `agents/` and each agent's.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if root.path.is_file() {
                continue;
            }
            if !root.path.is_dir() {
                return None;
            }
            if !is_config_dir(&root.path) {
                sessions_dirs(&root.path, &mut g.dirs);
                continue;
            }
            g.dirs.push(root.path.clone());
            sessions_dirs(&root.path.join("sessions"), &mut g.dirs);
            let agents = root.path.join("agents");
            if agents.is_dir() {
                g.dirs.push(agents.clone());
                for (agent, t) in kit::typed_entries(&agents) {
                    if t == EntryType::Dir {
                        g.dirs.push(agent.clone());
                        sessions_dirs(&agent.join("sessions"), &mut g.dirs);
                    }
                }
            }
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_session(&listed.path, &listed.id)
    }
}

/// A config directory (`sessions/`, `agents/` or `config.yaml` in it), as opposed to a
/// sessions directory.
fn is_config_dir(root: &Path) -> bool {
    root.join("sessions").is_dir()
        || root.join("agents").is_dir()
        || root.join("config.yaml").exists()
}

/// The session files under a root with their ids (see the module docs); a root that is one
/// file is its own session.
pub fn session_files(root: &Path) -> Vec<(String, PathBuf)> {
    if root.is_file() {
        let id = root
            .file_stem()
            .map(crate::names::os_id)
            .unwrap_or_default();
        return vec![(id, root.to_path_buf())];
    }
    if !is_config_dir(root) {
        return in_sessions_dir(root, "");
    }
    let mut out = in_sessions_dir(&root.join("sessions"), "");
    for (agent, t) in kit::typed_entries(&root.join("agents")) {
        if t != EntryType::Dir {
            continue;
        }
        let name = agent
            .file_name()
            .map(crate::names::os_id)
            .unwrap_or_default();
        out.extend(in_sessions_dir(
            &agent.join("sessions"),
            &format!("agents/{name}/"),
        ));
    }
    out
}

/// A sessions directory and its subdirectories, the directories [`in_sessions_dir`] reads.
fn sessions_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    out.push(dir.to_path_buf());
    for (p, t) in kit::typed_entries(dir) {
        if t == EntryType::Dir {
            out.push(p);
        }
    }
}

/// `<dir>/*.yaml` and `<dir>/<sub>/*.yaml`, ids prefixed with `prefix`.
fn in_sessions_dir(dir: &Path, prefix: &str) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (p, t) in kit::typed_entries(dir) {
        let name = p.file_name().map(crate::names::os_id).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        match t {
            EntryType::File => {
                if let Some(stem) = yaml_stem(&name) {
                    out.push((format!("{prefix}{stem}"), p));
                }
            }
            EntryType::Dir => {
                for (f, ft) in kit::typed_entries(&p) {
                    let fname = f.file_name().map(crate::names::os_id).unwrap_or_default();
                    if ft != EntryType::File || fname.starts_with('.') {
                        continue;
                    }
                    if let Some(stem) = yaml_stem(&fname) {
                        out.push((format!("{prefix}{name}/{stem}"), f));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn yaml_stem(name: &str) -> Option<&str> {
    if NOT_SESSIONS.contains(&name) {
        return None;
    }
    name.strip_suffix(".yaml").filter(|s| !s.is_empty())
}

/// The creation time and autoname of a `_/<YYYYMMDDTHHMMSS>[-<name>]` session (local time).
fn autoname(id: &str) -> (Option<DateTime<Utc>>, Option<String>) {
    let Some(rest) = id.strip_prefix("_/") else {
        return (None, None);
    };
    let (stamp, name) = match rest.split_once('-') {
        Some((s, n)) => (s, Some(n)),
        None => (rest, None),
    };
    let t = NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%S")
        .ok()
        .and_then(|t| Local.from_local_datetime(&t).earliest())
        .map(|d| d.with_timezone(&Utc));
    let title = name
        .filter(|n| !n.is_empty())
        .map(|n| n.replace('-', " ").trim().to_string())
        .filter(|n| !n.is_empty());
    (t, title)
}

/// Load one session file.
pub fn load_session(path: &Path, id: &str) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(Agent::Aichat, id);
    b.s.source.format = "aichat-session-yaml".into();
    b.s.source.paths.push(path.to_path_buf());
    let (created, title) = autoname(id);
    b.s.created_at = created;
    b.s.title = title;
    if let Some(agent) = id
        .strip_prefix("agents/")
        .and_then(|r| r.split_once('/'))
        .map(|(a, _)| a)
    {
        b.s.tags.push(format!("agent:{agent}"));
    }
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_YAML_BYTES => {
            b.warn(format!(
                "{file}: {} bytes, too large to parse, skipped",
                m.len()
            ));
            return b.finish();
        }
        Ok(m) => {
            b.s.updated_at = m.modified().ok().map(DateTime::<Utc>::from);
            match kit::read_file(path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    b.warn(format!("{file}: cannot read: {e}"));
                    return b.finish();
                }
            }
        }
        Err(e) => {
            b.warn(format!("{file}: cannot read: {e}"));
            return b.finish();
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let doc = yaml::parse(&text);
    let Some(Value::Object(f)) = doc.value else {
        b.warn(format!(
            "{file}: not a YAML mapping{}; its text is shown raw",
            doc.error.map(|e| format!(" ({e})")).unwrap_or_default()
        ));
        let raw = kit::raw_text(&bytes);
        if !raw.trim().is_empty() {
            b.context("unparsed file", raw, None);
        }
        return b.finish();
    };
    if let Some(e) = &doc.error {
        b.warn(format!(
            "{file}: stops parsing at {e} (cut mid-write?); what came before is shown, the file raw after it"
        ));
    }
    session_fields(&mut b, &f);
    if doc.error.is_some() {
        b.context(&format!("unparsed {file}"), kit::raw_text(&bytes), None);
    }
    b.finish()
}

fn session_fields(b: &mut SessionBuilder, f: &Map<String, Value>) {
    b.s.set_model = f
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
        .map(str::to_string);
    if let Some(r) = f
        .get("role_name")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
    {
        b.s.tags.push(format!("role:{r}"));
    }
    for (k, v) in f {
        if !KNOWN_FIELDS.contains(&k.as_str()) {
            b.unparsed(
                "session fields",
                &format!("unknown field {k}"),
                || k.clone(),
                k,
                &v.to_string(),
                None,
            );
        }
    }
    let settings: Vec<String> = SETTINGS
        .iter()
        .filter_map(|k| {
            f.get(*k)
                .filter(|v| !v.is_null())
                .map(|v| format!("{k}: {}", scalar_text(v)))
        })
        .collect();
    if !settings.is_empty() {
        b.context("session settings", settings.join("\n"), None);
    }
    if let Some(t) = f
        .get("agent_instructions")
        .map(scalar_text)
        .filter(|t| !t.trim().is_empty())
    {
        b.context("agent instructions", t, None);
    }
    if let Some(Value::Object(vars)) = f.get("agent_variables") {
        let lines: Vec<String> = vars
            .iter()
            .map(|(k, v)| format!("{k}: {}", scalar_text(v)))
            .collect();
        if !lines.is_empty() {
            b.context("agent variables", lines.join("\n"), None);
        }
    }
    if let Some(Value::Object(urls)) = f.get("data_urls") {
        let mut files: Vec<String> = urls.values().map(scalar_text).collect();
        files.sort();
        files.dedup();
        if !files.is_empty() {
            b.context("attached files", files.join("\n"), None);
        }
    }
    let compressed = messages(b, f, "compressed_messages", 0);
    match f.get("messages") {
        Some(Value::Array(_)) => {
            messages(b, f, "messages", compressed);
        }
        None | Some(Value::Null) => {}
        Some(v) => b.unparsed(
            "session fields",
            "messages is not a list",
            || "messages".into(),
            "messages",
            &v.to_string(),
            None,
        ),
    }
}

/// A scalar's text (a string as is, anything else as JSON).
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The messages of list `key`; `offset` is the count of messages before it (for call ids and
/// places). A `system` message first in `messages` after a compression is its summary.
/// Returns the list's length.
fn messages(b: &mut SessionBuilder, f: &Map<String, Value>, key: &str, offset: usize) -> usize {
    let Some(list) = f.get(key).and_then(Value::as_array) else {
        return 0;
    };
    let compressed = key == "messages" && offset > 0;
    for (i, m) in list.iter().enumerate() {
        message(b, key, offset + i, m, compressed && i == 0);
    }
    list.len()
}

/// One message. `summary` marks the one `compress()` put first.
fn message(b: &mut SessionBuilder, key: &str, n: usize, m: &Value, summary: bool) {
    let place = || format!("{key}, message {n}");
    let Some(role) = m.get("role").and_then(Value::as_str) else {
        b.unparsed(key, "not a message", place, "message", &m.to_string(), None);
        return;
    };
    let content = m.get("content").unwrap_or(&Value::Null);
    if let Some(calls) = content
        .as_object()
        .filter(|c| c.contains_key("tool_results"))
    {
        tool_calls(b, key, n, calls);
        return;
    }
    let text = content_text(content);
    match role {
        "user" => b.push(Message {
            role: Role::User,
            content: text,
            ..Message::default()
        }),
        "assistant" => b.push(Message {
            role: Role::Assistant,
            content: text,
            ..Message::default()
        }),
        "system" if summary => b.push(Message {
            role: Role::System,
            kind: MessageKind::CompactionSummary,
            content: text,
            ..Message::default()
        }),
        "system" => b.context("system prompt", text, None),
        other => {
            let problem = format!("unknown role {other}");
            b.unparsed(key, &problem, place, "message", &m.to_string(), None);
        }
    }
}

/// A content string, or its parts: text parts as paragraphs, images as placeholders.
fn content_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(parts) => {
            let mut out = String::new();
            for p in parts {
                let para = match kit::str_field(p, "type") {
                    Some("text") => kit::str_field(p, "text").unwrap_or_default().to_string(),
                    Some("image_url") => match kit::str_at(p, &["image_url", "url"]) {
                        Some(url) => kit::data_url_placeholder(url),
                        None => p.to_string(),
                    },
                    _ => scalar_text(p),
                };
                kit::push_paragraph(&mut out, &para);
            }
            out
        }
        other => other.to_string(),
    }
}

/// A `tool` message: the reply that called (its `text` and the calls), then each result.
fn tool_calls(b: &mut SessionBuilder, key: &str, n: usize, c: &Map<String, Value>) {
    let results: &[Value] = c
        .get("tool_results")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let mut calls = Vec::new();
    let mut outputs = Vec::new();
    for (ci, r) in results.iter().enumerate() {
        let Some(call) = r.get("call").filter(|c| c.is_object()) else {
            b.unparsed(
                key,
                "tool result without its call",
                || format!("{key}, message {n}, result {ci}"),
                "tool result",
                &r.to_string(),
                None,
            );
            continue;
        };
        let id = kit::str_field(call, "id")
            .filter(|id| !id.is_empty())
            .map_or_else(|| format!("{n}-{ci}"), str::to_string);
        let input = kit::call_input(
            call.get("arguments"),
            "tool call arguments",
            &mut b.unparsed,
            || format!("{key}, message {n}, call {ci}"),
        );
        calls.push(ToolCall {
            tool_call_id: id.clone(),
            tool_name: kit::str_field(call, "name").unwrap_or_default().to_string(),
            input,
            ..ToolCall::default()
        });
        outputs.push((id, output_text(r.get("output"))));
    }
    b.push(Message {
        role: Role::Assistant,
        content: c.get("text").map(scalar_text).unwrap_or_default(),
        tool_calls: calls,
        ..Message::default()
    });
    for (id, out) in outputs {
        b.tool_result(&id, None, out, false, None);
    }
}

/// A call's output: `{output: <text>}` (a tool that printed no JSON) as its text, a string
/// as is, other JSON as its text.
fn output_text(o: Option<&Value>) -> String {
    match o {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(m)) if m.len() == 1 && m.get("output").is_some_and(Value::is_string) => {
            m.get("output").map(scalar_text).unwrap_or_default()
        }
        Some(v) => serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_follow_the_sessions_dir_then_the_config_dir() {
        let mut env = Env::at_home(Path::new("/h"));
        let paths = |env: &Env| -> Vec<(PathBuf, String)> {
            candidates(env)
                .into_iter()
                .map(|r| (r.path, r.how))
                .collect()
        };
        assert_eq!(
            paths(&env),
            [
                (PathBuf::from("/h/.config/aichat"), "default".to_string()),
                (
                    PathBuf::from("/h/Library/Application Support/aichat"),
                    "default (macOS)".to_string()
                ),
            ]
        );
        env.vars.insert("XDG_CONFIG_HOME".into(), "/x".into());
        assert_eq!(
            paths(&env),
            [(PathBuf::from("/x/aichat"), "XDG_CONFIG_HOME".to_string())]
        );
        env.vars.insert("AICHAT_CONFIG_DIR".into(), "/c".into());
        env.vars.insert("AICHAT_SESSIONS_DIR".into(), "~/s".into());
        assert_eq!(
            paths(&env),
            [
                (PathBuf::from("/h/s"), "AICHAT_SESSIONS_DIR".to_string()),
                (PathBuf::from("/c"), "AICHAT_CONFIG_DIR".to_string()),
            ]
        );
    }

    #[test]
    fn ids_are_aichat_names_and_config_files_are_never_sessions() {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path();
        for f in [
            "config.yaml",
            "sessions/plain.yaml",
            "sessions/work/nested.yaml",
            "sessions/_/20260301T100000-fix-ci.yaml",
            "sessions/notes.txt",
            "agents/coder/config.yaml",
            "agents/coder/sessions/task.yaml",
            "roles/r.md",
        ] {
            let p = d.join(f);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, "x").expect("write");
        }
        let mut ids: Vec<String> = session_files(d).into_iter().map(|(id, _)| id).collect();
        ids.sort();
        assert_eq!(
            ids,
            [
                "_/20260301T100000-fix-ci",
                "agents/coder/task",
                "plain",
                "work/nested"
            ]
        );
        // The sessions directory given by itself.
        let mut ids: Vec<String> = session_files(&d.join("sessions"))
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        ids.sort();
        assert_eq!(ids, ["_/20260301T100000-fix-ci", "plain", "work/nested"]);
    }

    #[test]
    fn an_autonamed_session_has_its_time_and_name() {
        let (t, name) = autoname("_/20260301T100000-fix-the-ci");
        assert_eq!(name.as_deref(), Some("fix the ci"));
        let want = Local
            .with_ymd_and_hms(2026, 3, 1, 10, 0, 0)
            .earliest()
            .map(|d| d.with_timezone(&Utc));
        assert_eq!(t, want);
        assert_eq!(autoname("plain"), (None, None));
    }

    #[test]
    fn outputs_unwrap_plain_text() {
        let v: Value = serde_json::json!({"output": "hello"});
        assert_eq!(output_text(Some(&v)), "hello");
        assert_eq!(output_text(Some(&Value::String("DONE".into()))), "DONE");
        let v: Value = serde_json::json!({"a": 1});
        assert_eq!(output_text(Some(&v)), "{\n  \"a\": 1\n}");
    }
}
