//! Factory Droid: `~/.factory/sessions/<cwd slug>/<session id>.jsonl`, each with a
//! `<session id>.settings.json` beside it.
//!
//! Droid's CLI is closed source: Factory publishes no description of these files, and its
//! public repositories (github:Factory-AI/factory, the documentation site's source, and
//! github:Factory-AI/droid-sdk-typescript, the client of `droid exec`'s JSON-RPC stream)
//! hold no reader or writer of them. The format here is what independent readers of real
//! files agree on, checked against the real session header in the corpus:
//!
//! - a store inventory with field lists taken from 72 real files (Droid 0.2x): the
//!   `session_start` header (`id`, `title`, `sessionTitle`, `owner`, `version`, `cwd`,
//!   `isSessionTitleManuallySet`, `sessionTitleAutoStage`, and `callingSessionId` /
//!   `callingToolUseId` on a subagent's own session), `message` records
//!   (`{id, parentId, timestamp, message: {role, content: [...]}}` with Anthropic content
//!   blocks `text`, `thinking`, `tool_use`, `tool_result`, `image`), `agent_turn_outcome`,
//!   `todo_state` and `compaction_state` records, and the settings file (`model`,
//!   `tokenUsage`, `inclusiveTokenUsage`);
//! - session readers in other tools (TypeScript, Kotlin, Python, Rust) that agree on the
//!   header, the message envelope, the block shapes, `todo_state` (`todos` as text or
//!   `{todos}`), `compaction_state` (`summaryText`, `removedCount`), the injected context
//!   message (`id` `context-…`, `visibility: "llm_only"`), hook messages (`hookEventName`)
//!   and that usage lives only in the settings file, cumulative per session.
//!
//! What this store does with them:
//!
//! - **Listing reads names and heads**: the file stem is the session id (Droid names the
//!   file by its own UUID); each file's first line is read once per version of the file
//!   for the session that called it (`callingSessionId`), so that a session's sources are
//!   its file, its settings and the files of the subagents that name it.
//! - **Messages in file order.** Records carry `parentId`, but no reader documents a
//!   rewind that leaves abandoned records in the file, so the file is the conversation.
//! - **Usage once per session**: Droid keeps no per-call usage; the settings file's
//!   `tokenUsage` is the session's own total (a subagent's calls are in its own file's
//!   settings), so it is [`Session::reported_usage`]. `inclusiveTokenUsage` (the session
//!   with its subagents) is never read, so nothing is counted twice.
//! - **Settings are read for two keys**, `model` and `tokenUsage`, through a struct that
//!   has no other field; everything else there (autonomy, provider locks, tags) is skipped
//!   unread by the parser.
//! - **Subagents** are sessions of their own (sibling files whose header names the
//!   calling session); the parent links each by unified id, found from the first line of
//!   the files beside it. Those files are the parent's sources, and its version takes from
//!   each only its head's link (`callingSessionId`, `callingToolUseId`), so a subagent
//!   appearing renders the parent again, and a subagent's messages render only the
//!   subagent.
//!
//! Nothing else under `~/.factory` (`settings.json`, `auth*`, `mcp.json`, droids,
//! commands) is opened.

use super::jsonl;
use super::kit::{self, EntryType, Places, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    self, Agent, Message, MessageKind, Role, Session, Subagent, TokenUsage, ToolCall,
    SEALED_THINKING,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const AGENT: Agent = Agent::Droid;
/// The tool that starts a subagent.
const SUBAGENT_TOOL: &str = "Task";
/// Droid's placeholder title before it names a session.
const PLACEHOLDER_TITLE: &str = "New Session";
/// A settings file larger than this is not parsed.
const MAX_SETTINGS_BYTES: u64 = 1 << 20;
/// How much of a sibling's first line is read to find the session that called it.
const MAX_HEADER_BYTES: u64 = 64 << 10;

/// `~/.factory/sessions`.
pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        AGENT,
        &Places {
            env: &[],
            defaults: &[".factory/sessions"],
            spec: &[],
        },
    )
}

pub struct DroidStore {
    base: Base,
    heads: Heads,
}

impl DroidStore {
    pub fn new(roots: Vec<Root>) -> DroidStore {
        DroidStore {
            base: Base::new(AGENT, roots),
            heads: Heads::default(),
        }
    }
}

/// The session a subagent's file names as its caller, and the call that started it: all
/// a parent takes from a subagent's file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Caller {
    session: String,
    call: Option<String>,
}

/// What the session files' first lines say of their callers.
#[derive(Default)]
struct Heads {
    /// Each file's caller, read once per version (size and mtime) of the file.
    read: kit::PerVersion<Option<Caller>>,
    /// Each file's caller as the last listing took it.
    listed: Mutex<HashMap<PathBuf, Option<Caller>>>,
}

impl Heads {
    /// The caller `path`'s first line names now (`None`: none, or no whole line yet).
    fn caller(&self, path: &Path) -> Option<Caller> {
        self.read.get(path, |path| {
            let h = first_line(path)?;
            Some(Caller {
                session: s_owned(&h, "callingSessionId")?,
                call: s_owned(&h, "callingToolUseId"),
            })
        })
    }
}

impl Store for DroidStore {
    fn base(&self) -> &Base {
        &self.base
    }

    /// Each session's sources: its file, its settings, and the files beside it whose head
    /// names it as their caller (its subagents, linked under `subagents/`).
    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut callers = HashMap::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            // Sessions sit one level down, in per-cwd directories; a root given by hand
            // may be one such directory.
            let mut dirs = vec![root.path.clone()];
            dirs.extend(kit::subdirs(&root.path));
            for dir in dirs {
                let mut here: Vec<Listed> = Vec::new();
                let mut children: HashMap<String, Vec<PathBuf>> = HashMap::new();
                for (p, t) in kit::typed_entries(&dir) {
                    let name = kit::file_name(&p);
                    let Some(id) = name.strip_suffix(".jsonl").filter(|s| !s.is_empty()) else {
                        continue;
                    };
                    if t != EntryType::File || name.starts_with('.') {
                        continue;
                    }
                    let caller = self.heads.caller(&p);
                    if let Some(c) = caller.as_ref().filter(|c| c.session != id) {
                        children
                            .entry(c.session.clone())
                            .or_default()
                            .push(p.clone());
                    }
                    callers.insert(p.clone(), caller);
                    let mut l = Listed::file(id.to_string(), p.clone(), i);
                    l.sources.push(settings_path(&p));
                    here.push(l);
                }
                for l in &mut here {
                    let mut mine = children.remove(&l.id).unwrap_or_default();
                    mine.sort();
                    l.sources.extend(mine);
                }
                out.extend(here);
            }
        }
        if let Ok(mut listed) = self.heads.listed.lock() {
            *listed = callers;
        }
        out
    }

    /// The id is the file name, which a write never changes; the listing also took the
    /// caller its head names, which stays once the head is written.
    fn keeps_listing(&self, listed: &Listed) -> bool {
        let took = match self.heads.listed.lock() {
            Ok(l) => l.get(&listed.path).cloned(),
            Err(_) => None,
        };
        took.is_some_and(|c| c == self.heads.caller(&listed.path))
    }

    /// A session with subagents: the size and mtime of its file and settings, and the
    /// link each subagent's head makes (its file's name and the call that started it).
    /// A subagent writing its own messages then renders only itself. Other sessions
    /// version by their file and settings.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        listed
            .iter()
            .map(|l| {
                let (own, children) = (l.sources.get(..2)?, l.sources.get(2..)?);
                if children.is_empty() {
                    return None;
                }
                let links: Vec<(&str, Option<String>)> = children
                    .iter()
                    .filter_map(|c| {
                        let caller = self.heads.caller(c).filter(|k| k.session == l.id)?;
                        Some((kit::file_name(c), caller.call))
                    })
                    .collect();
                let own = super::stat_fingerprint(own);
                Some(crate::names::fnv1a(format!("{own}-{links:?}").as_bytes()))
            })
            .collect()
    }

    fn load(&self, listed: &Listed) -> Session {
        load_session(&listed.path, &listed.id)
    }

    /// The listing reads names, and each session file's head: each root and its per-cwd
    /// directories, where session files appear; every session file is its session's own
    /// source, and a session is versioned by its sources (its file, its settings, its
    /// subagents' heads).
    /// A root that is not a directory is stamped as a file; one gone since it was opened
    /// leaves the store without a glance.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                if !root.path.exists() {
                    return None;
                }
                g.files.push(root.path.clone());
                continue;
            }
            g.dirs.extend(kit::subdirs(&root.path));
            g.dirs.push(root.path.clone());
        }
        Some(g)
    }
}

fn settings_path(jsonl: &Path) -> PathBuf {
    let stem = jsonl
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".jsonl").to_string())
        .unwrap_or_default();
    jsonl.with_file_name(format!("{stem}.settings.json"))
}

/// The two keys of a settings file sessfs reads; serde skips every other key unread.
#[derive(Deserialize, Default)]
struct Settings {
    #[serde(default)]
    model: Option<String>,
    #[serde(default, rename = "tokenUsage")]
    token_usage: Option<Usage>,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default, rename = "inputTokens", deserialize_with = "kit::count")]
    input: u64,
    #[serde(default, rename = "outputTokens", deserialize_with = "kit::count")]
    output: u64,
    #[serde(default, rename = "cacheReadTokens", deserialize_with = "kit::count")]
    cache_read: u64,
    #[serde(
        default,
        rename = "cacheCreationTokens",
        deserialize_with = "kit::count"
    )]
    cache_write: u64,
    #[serde(default, rename = "thinkingTokens", deserialize_with = "kit::count")]
    thinking: u64,
}

fn read_settings(path: &Path, s: &mut Session) -> Settings {
    if !path.exists() {
        return Settings::default();
    }
    let name = kit::file_name(path).to_string();
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if len > MAX_SETTINGS_BYTES {
        s.warnings
            .push(format!("{name}: {len} bytes, too large to parse, skipped"));
        return Settings::default();
    }
    match kit::read_file(path) {
        Ok(bytes) => {
            s.source.paths.push(path.to_path_buf());
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                s.warnings
                    .push(format!("{name}: not read: {e} (model and usage unknown)"));
                Settings::default()
            })
        }
        Err(e) => {
            s.warnings.push(format!("{name}: cannot read: {e}"));
            Settings::default()
        }
    }
}

/// Load one session file and its settings.
pub fn load_session(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(AGENT, id);
    b.s.source.format = "droid-jsonl".into();
    b.s.source.paths.push(path.to_path_buf());
    let mut r = Reader { b };
    let scanned = jsonl::read_records(path, |pos, bytes| {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))?;
        if !v.is_object() {
            return Err("not a JSON object".into());
        }
        r.record(&v, pos, bytes);
        Ok(())
    });
    let Reader { mut b } = r;
    scanned.into_session(&mut b.s);
    let settings = read_settings(&settings_path(path), &mut b.s);
    if let Some(model) = settings.model.filter(|m| !m.is_empty()) {
        for m in b.s.messages.iter_mut() {
            if m.role == Role::Assistant && m.model.is_none() {
                m.model = Some(model.clone());
            }
        }
        b.s.set_model = Some(model);
    }
    if let Some(u) = settings.token_usage {
        b.s.reported_usage = Some(TokenUsage {
            input_tokens: u.input,
            output_tokens: u.output,
            thinking_tokens: u.thinking,
            cached_tokens: u.cache_read,
            cache_write_tokens: u.cache_write,
        });
    }
    link_children(path, id, &mut b.s);
    b.finish()
}

struct Reader {
    b: SessionBuilder,
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

impl Reader {
    fn record(&mut self, v: &Value, pos: jsonl::Pos, raw: &[u8]) {
        let time = v.get("timestamp").and_then(super::parse_time);
        match s(v, "type").unwrap_or("") {
            "session_start" => self.header(v),
            "message" => match v.get("message").filter(|m| m.is_object()) {
                Some(m) => self.message(v, m, time),
                None => self.unparsed("message record without a message", pos, raw, time),
            },
            "todo_state" => {
                let todos = match v.get("todos") {
                    Some(Value::String(t)) => t.clone(),
                    Some(o @ Value::Object(_)) => match s(o, "todos") {
                        Some(t) => t.to_string(),
                        None => o.to_string(),
                    },
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                self.b.event(format!("todo list\n{todos}"), time);
            }
            "compaction_state" => {
                let summary = s(v, "summaryText").unwrap_or("").to_string();
                let removed = v.get("removedCount").and_then(Value::as_u64);
                if summary.trim().is_empty() {
                    let n = removed.map(|n| format!(": {n} messages removed"));
                    self.b
                        .event(format!("compaction{}", n.unwrap_or_default()), time);
                } else {
                    self.b.push(Message {
                        role: Role::System,
                        kind: MessageKind::CompactionSummary,
                        content: summary,
                        timestamp: time,
                        native_id: s(v, "id").map(str::to_string),
                        ..Message::default()
                    });
                }
            }
            "agent_turn_outcome" => {
                // A turn that completed is bookkeeping; one that did not is an event.
                let reason = s(v, "reason").unwrap_or("");
                if !reason.is_empty() && reason != "completed" {
                    self.b.event(format!("turn ended: {reason}"), time);
                }
            }
            other => {
                let what = format!("record type {other}");
                self.unparsed(&what, pos, raw, time);
            }
        }
    }

    fn unparsed(&mut self, problem: &str, pos: jsonl::Pos, raw: &[u8], t: Option<DateTime<Utc>>) {
        let text = String::from_utf8_lossy(raw);
        self.b.unparsed(
            "records",
            problem,
            || format!("line {}", pos.line),
            "record",
            &text,
            t,
        );
    }

    fn header(&mut self, v: &Value) {
        let title = [s(v, "title"), s(v, "sessionTitle")]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|t| !t.is_empty());
        self.b.title_or_placeholder(title.map(str::to_string), |t| {
            t.eq_ignore_ascii_case(PLACEHOLDER_TITLE)
        });
        if let Some(cwd) = s(v, "cwd").filter(|c| !c.is_empty()) {
            self.b.s.cwd = Some(cwd.to_string());
        }
        if let Some(p) = s(v, "callingSessionId").filter(|p| !p.is_empty()) {
            self.b.s.parent = Some(model::unified_id(AGENT, p));
        }
        if let Some(n) = v.get("version").and_then(Value::as_u64) {
            self.b.s.source.format_version = Some(n.to_string());
        }
    }

    fn message(&mut self, rec: &Value, m: &Value, time: Option<DateTime<Utc>>) {
        let id = s(rec, "id").map(str::to_string);
        let role = s(m, "role").unwrap_or("");
        let model = [s(m, "modelId"), s(rec, "modelId"), s(m, "model")]
            .into_iter()
            .flatten()
            .find(|x| !x.is_empty())
            .map(str::to_string);
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(t)) => vec![serde_json::json!({"type": "text", "text": t})],
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let visibility = s(m, "visibility").unwrap_or("");
        let hook = s(m, "hookEventName").or_else(|| s(rec, "hookEventName"));
        let injected =
            visibility == "llm_only" || id.as_deref().is_some_and(|i| i.starts_with("context-"));

        let mut text = String::new();
        let mut thinking = String::new();
        let mut calls = Vec::new();
        let mut reminders = Vec::new();
        let mut results = Vec::new();
        for b in &blocks {
            match s(b, "type").unwrap_or("") {
                "text" => {
                    let t = s(b, "text").unwrap_or("");
                    if role == "user" && t.trim_start().starts_with("<system-reminder>") {
                        reminders.push(t.to_string());
                    } else {
                        push_para(&mut text, t);
                    }
                }
                "thinking" => push_para(&mut thinking, s(b, "thinking").unwrap_or("")),
                "redacted_thinking" => push_para(&mut thinking, SEALED_THINKING),
                "tool_use" => calls.push(ToolCall {
                    tool_call_id: s(b, "id").unwrap_or("").to_string(),
                    tool_name: s(b, "name").unwrap_or("").to_string(),
                    input: b.get("input").cloned().unwrap_or(Value::Null),
                    ..ToolCall::default()
                }),
                "tool_result" => results.push(b.clone()),
                "image" | "document" => push_para(&mut text, &media(b)),
                other => {
                    self.b.unparsed.note(
                        "content blocks",
                        &format!("unknown block type {other}"),
                        || format!("message {}", id.as_deref().unwrap_or("?")),
                    );
                    push_para(&mut text, &b.to_string());
                }
            }
        }
        for r in &results {
            let call = s(r, "tool_use_id").unwrap_or("");
            let is_error = r.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            self.b
                .tool_result(call, None, result_text(r.get("content")), is_error, time);
        }
        for r in reminders {
            self.b.context("reminder", r, time);
        }
        if role == "assistant" {
            if text.is_empty() && thinking.is_empty() && calls.is_empty() {
                return;
            }
            self.b.push(Message {
                role: Role::Assistant,
                content: text,
                timestamp: time,
                tool_calls: calls,
                thinking: (!thinking.is_empty()).then_some(thinking),
                model,
                native_id: id,
                ..Message::default()
            });
            return;
        }
        if text.trim().is_empty() && calls.is_empty() {
            return;
        }
        if let Some(h) = hook {
            self.b.context(&format!("hook {h}"), text, time);
        } else if injected {
            self.b.context("context", text, time);
        } else if visibility == "user_only" {
            self.b.event(text, time);
        } else if role == "user" {
            self.b.push(Message {
                role: Role::User,
                content: text,
                timestamp: time,
                native_id: id,
                ..Message::default()
            });
        } else {
            // A role Droid is not known to write: shown as context under its name.
            let label = format!("{role} message");
            self.b
                .unparsed
                .note("messages", &format!("role {role}"), || {
                    format!("message {}", id.as_deref().unwrap_or("?"))
                });
            self.b.context(&label, text, time);
        }
    }
}

/// A tool result's text: a string, or the text of its blocks (media as placeholders).
fn result_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(a)) => {
            let mut out = String::new();
            for b in a {
                match (b, s(b, "type")) {
                    (Value::String(t), _) => push_para(&mut out, t),
                    (_, Some("text")) => push_para(&mut out, s(b, "text").unwrap_or("")),
                    (_, Some("image" | "document")) => push_para(&mut out, &media(b)),
                    _ => push_para(&mut out, &b.to_string()),
                }
            }
            out
        }
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// An image or document block as a placeholder: its type and size, never its bytes.
fn media(b: &Value) -> String {
    let kind = if s(b, "type") == Some("image") {
        "image"
    } else {
        "attachment"
    };
    let src = b.get("source").unwrap_or(&Value::Null);
    match s(src, "type") {
        Some("base64") => kit::base64_placeholder(kind, s(src, "media_type"), s(src, "data")),
        Some("url") => format!("[{kind}: {}]", s(src, "url").unwrap_or("")),
        _ => model::placeholder(kind, s(src, "media_type"), None),
    }
}

fn push_para(dst: &mut String, t: &str) {
    if t.is_empty() {
        return;
    }
    if !dst.is_empty() {
        dst.push_str("\n\n");
    }
    dst.push_str(t);
}

/// Link every session beside `path` whose header names `id` as its caller. Only a session
/// that called the subagent tool (`Task`) looks: the first lines of its neighbours are read
/// then, so loading a directory of sessions that spawned none costs no read beyond their own.
fn link_children(path: &Path, id: &str, s: &mut Session) {
    let Some(dir) = path.parent() else {
        return;
    };
    let calls: Vec<(String, Option<String>)> = s
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .filter(|c| c.tool_name.eq_ignore_ascii_case(SUBAGENT_TOOL))
        .map(|c| {
            let d = kit::str_field(&c.input, "description").map(str::to_string);
            (c.tool_call_id.clone(), d)
        })
        .collect();
    if calls.is_empty() {
        return;
    }
    for (p, t) in kit::typed_entries(dir) {
        let name = kit::file_name(&p);
        let Some(child) = name.strip_suffix(".jsonl") else {
            continue;
        };
        if t != EntryType::File || child == id || child.is_empty() {
            continue;
        }
        let Some(h) = first_line(&p) else { continue };
        if s_owned(&h, "callingSessionId").as_deref() != Some(id) {
            continue;
        }
        let call = s_owned(&h, "callingToolUseId");
        let description = call
            .as_deref()
            .and_then(|c| calls.iter().find(|(id, _)| id == c))
            .and_then(|(_, d)| d.clone());
        s.subagents.push(Subagent {
            name: crate::names::escape(child),
            unified_id: Some(model::unified_id(AGENT, child)),
            description,
            tool_call_id: call,
            session: None,
        });
    }
}

fn s_owned(v: &Value, k: &str) -> Option<String> {
    s(v, k).map(str::to_string)
}

/// The first line of a session file as JSON, read no further than [`MAX_HEADER_BYTES`].
fn first_line(p: &Path) -> Option<Value> {
    let f = kit::open_file(p).ok()?;
    let mut line = Vec::new();
    BufReader::new(f.take(MAX_HEADER_BYTES))
        .read_until(b'\n', &mut line)
        .ok()?;
    let v: Value = serde_json::from_slice(&line).ok()?;
    (s(&v, "type") == Some("session_start")).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subagent's file is its parent's source, and the parent's version takes only the
    /// link its head makes: the subagent's messages move no other session's version, a
    /// head naming another call moves the parent's alone, and a new subagent is the
    /// parent's source once listed.
    #[test]
    fn a_subagent_moves_its_parents_version_only_when_its_head_changes() {
        let dir = tempfile::tempdir().expect("tmp");
        let cwd = dir.path().join("-w");
        std::fs::create_dir(&cwd).expect("mkdir");
        let head = |id: &str, caller: Option<(&str, &str)>| {
            let mut h = serde_json::json!({"type": "session_start", "id": id, "title": id});
            if let Some((s, c)) = caller {
                h["callingSessionId"] = s.into();
                h["callingToolUseId"] = c.into();
            }
            format!("{h}\n")
        };
        let msg = "{\"type\":\"message\",\"id\":\"m\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";
        let write = |id: &str, text: String| {
            std::fs::write(cwd.join(format!("{id}.jsonl")), text).expect("write");
        };
        write("a", head("a", None));
        write("b", head("b", Some(("a", "call_1"))));
        write("c", head("c", None));
        let store = DroidStore::new(vec![Root::new(AGENT, dir.path(), "test")]);
        let sorted = |mut l: Vec<Listed>| {
            l.sort_by(|x, y| x.id.cmp(&y.id));
            l
        };
        let listed = sorted(store.list());
        assert_eq!(listed[0].sources.get(2..), Some(&[cwd.join("b.jsonl")][..]));
        assert!(listed[1..].iter().all(|l| l.sources.len() == 2));
        let refs: Vec<&Listed> = listed.iter().collect();
        let before = store.versions(&refs);
        assert!(before[0].is_some(), "{before:?}");
        // The subagent writes its messages: its head is as it was.
        write("b", head("b", Some(("a", "call_1"))) + msg);
        assert!(store.keeps_listing(&listed[1]));
        assert_eq!(store.versions(&refs), before);
        // Its head names another call: the parent's link moves, and nothing else.
        write("b", head("b", Some(("a", "call_second"))) + msg);
        let after = store.versions(&refs);
        assert_ne!(after[0], before[0], "a's subagent names another call");
        assert_eq!(after[1..], before[1..]);
        // A new subagent's head, written after the file was listed empty.
        write("d", String::new());
        let listed = sorted(store.list());
        write("d", head("d", Some(("a", "call_3"))));
        let d = listed.iter().find(|l| l.id == "d").expect("d");
        assert!(!store.keeps_listing(d), "the head now names a caller");
        let listed = sorted(store.list());
        assert_eq!(
            listed[0].sources.get(2..),
            Some(&[cwd.join("b.jsonl"), cwd.join("d.jsonl")][..])
        );
    }

    #[test]
    fn settings_sit_beside_the_session_file() {
        assert_eq!(
            settings_path(Path::new("/h/.factory/sessions/-x/abc.jsonl")),
            PathBuf::from("/h/.factory/sessions/-x/abc.settings.json")
        );
    }

    #[test]
    fn tool_results_read_text_and_blocks_and_measure_images() {
        let v = serde_json::json!([
            {"type": "text", "text": "one"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
        ]);
        assert_eq!(result_text(Some(&v)), "one\n\n[image: image/png, 3 B]");
        assert_eq!(result_text(Some(&Value::String("x".into()))), "x");
        assert_eq!(result_text(None), "");
    }
}
