//! Mistral Vibe: one directory per session under `~/.vibe/logs/session/`.
//!
//! Learnt from Vibe's own source, github.com/mistralai/mistral-vibe at commit
//! `ac8f1a09fdfbadb6d4508a555ba6607fd05eb0dc`: `vibe/core/paths/_vibe_home.py`
//! (`$VIBE_HOME`, else `~/.vibe`; `SESSION_LOG_DIR` is `<home>/logs/session`),
//! `vibe/core/session/session_logger.py` (the folder
//! `<prefix>_<YYYYmmdd_HHMMSS>_<first 8 of the id>`, `messages.jsonl` appended one message
//! per line, `meta.json` replaced whole after each turn), `vibe/core/session/session_loader.py`
//! (the file names), `vibe/core/session/session_migration.py` (the pre-2.0 single file
//! `<prefix>_*.json` holding `{metadata, messages}`), `vibe/core/types.py` (`LLMMessage`,
//! `ToolCall`, `AgentStats`, `SessionMetadata`), `vibe/core/agent_loop.py` (`compact`,
//! `fork`, `_reset_session`) and `vibe/core/compaction.py` (the compaction context).
//!
//! **Where.** `$VIBE_HOME/logs/session`, else `~/.vibe/logs/session`; a `--store` path may
//! also be the Vibe home. Vibe's `config.toml` may move the log directory
//! (`session_logging.save_dir`): that file is not read, the directory is given with
//! `--store vibe=<dir>`. Beside the logs Vibe keeps `.env` (API keys), `config.toml`,
//! `trusted_folders.toml` and `vibehistory` (prompts typed, no session): none is opened.
//!
//! **Listing** reads the id from the first 4 KiB of `meta.json` (`session_id` is its first
//! field), else the folder's name when there is no `meta.json` yet.
//!
//! **Messages** are OpenAI chat messages: `role`, `content`, `reasoning_content`
//! (thinking), `tool_calls[] {id, function {name, arguments}}`, tool replies with
//! `tool_call_id` and `name`, `images[]` (placeholders), `injected` (text Vibe adds for the
//! model: shown as context). The system prompt is never in `messages.jsonl`; `meta.json`
//! keeps it and it is shown as context. A line that is not a message is kept verbatim in
//! `unparsed.txt`.
//!
//! **Links and usage.** Compaction and fork both start a new session naming the old one in
//! `parent_session_id`: the new one is `forked_from` it. A compacted session begins with the
//! compaction context (an injected user message: shown as the compaction summary) and its
//! `stats` go on counting from the old session's, so its own usage is its `stats` less the
//! parent's (read from the parent's `meta.json` in the same directory); a fork starts from
//! zero. `stats.session_prompt_tokens`/`session_completion_tokens` are the usage (Vibe keeps
//! no per-message usage); `stats.session_cost` is Vibe's own estimate at list price.

use super::jsonl;
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Message, MessageKind, Role, Session, Source, TokenUsage, ToolCall,
};
use serde_json::Value;
use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

const MESSAGES: &str = "messages.jsonl";
const META: &str = "meta.json";
/// Largest `meta.json` or pre-2.0 session file parsed.
const MAX_JSON: u64 = 64 << 20;
/// How Vibe's compaction context begins (`render_compaction_context`).
const COMPACTION: &str = "You are continuing a trajectory after a context compaction.";

/// `$VIBE_HOME/logs/session`, else `~/.vibe/logs/session`.
pub fn candidates(env: &Env) -> Vec<Root> {
    match env.path_var("VIBE_HOME") {
        Some(h) => vec![Root::new(Agent::Vibe, h.join("logs/session"), "VIBE_HOME")],
        None => vec![Root::new(
            Agent::Vibe,
            env.home.join(".vibe/logs/session"),
            "default",
        )],
    }
}

pub struct VibeStore {
    base: Base,
}

impl VibeStore {
    pub fn new(roots: Vec<Root>) -> VibeStore {
        VibeStore {
            base: Base::new(Agent::Vibe, roots),
        }
    }
}

/// The session log directory a root stands for (itself, or `<root>/logs/session`).
fn log_dir(root: &Path) -> PathBuf {
    let under = root.join("logs/session");
    if under.is_dir() {
        under
    } else {
        root.to_path_buf()
    }
}

impl Store for VibeStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for (p, t) in kit::typed_entries(&log_dir(&root.path)) {
                let name = kit::file_name(&p).to_string();
                if name.starts_with('.') {
                    continue;
                }
                let listed = match t {
                    EntryType::Dir if p.join(MESSAGES).is_file() || p.join(META).is_file() => {
                        let id = head_id(&p.join(META)).unwrap_or_else(|| name.clone());
                        Listed {
                            id,
                            sources: vec![p.join(MESSAGES), p.join(META)],
                            path: p,
                            key: None,
                            root: i,
                        }
                    }
                    EntryType::File if name.ends_with(".json") => {
                        let stem = name.trim_end_matches(".json").to_string();
                        Listed::file(head_id(&p).unwrap_or(stem), p, i)
                    }
                    _ => continue,
                };
                if seen.insert((i, listed.id.clone())) {
                    out.push(listed);
                }
            }
        }
        out
    }

    /// What the listing reads: the root (with its `logs/` and `logs/session/` when there,
    /// whose appearing moves the directory above), the log directory's names, in each
    /// session folder whether `messages.jsonl` or `meta.json` is there, and the head of
    /// every `meta.json` and pre-2.0 file for its id (also of a folder whose id repeats
    /// another's, so no session's source).
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            g.dirs.push(root.path.clone());
            let logs = root.path.join("logs");
            if logs.is_dir() {
                g.dirs.push(logs);
            }
            let dir = log_dir(&root.path);
            for (p, t) in kit::typed_entries(&dir) {
                let name = kit::file_name(&p);
                if name.starts_with('.') {
                    continue;
                }
                match t {
                    EntryType::Dir => {
                        g.files.push(p.join(META));
                        g.dirs.push(p);
                    }
                    EntryType::File if name.ends_with(".json") => g.files.push(p),
                    _ => {}
                }
            }
            g.dirs.push(dir);
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        load(&listed.path, &listed.id)
    }
}

/// The `session_id` near the start of a `meta.json` (or a pre-2.0 session file).
fn head_id(path: &Path) -> Option<String> {
    let mut buf = Vec::new();
    kit::open_file(path)
        .ok()?
        .take(4096)
        .read_to_end(&mut buf)
        .ok()?;
    let text = String::from_utf8_lossy(&buf);
    let at = text.find("\"session_id\"")? + "\"session_id\"".len();
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let mut s = serde_json::Deserializer::from_str(rest).into_iter::<String>();
    s.next()?.ok().filter(|id| !id.is_empty())
}

/// A session: a 2.0 folder or a pre-2.0 single file.
pub fn load(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Vibe, id);
    let mut meta = Value::Null;
    let mut format = "vibe-session-dir";
    if path.is_dir() {
        let mp = path.join(META);
        if mp.is_file() {
            match kit::read_json(&mp, "vibe meta.json", MAX_JSON) {
                Ok(v) => meta = v,
                Err(e) => b.warn(e),
            }
        } else {
            b.warn("no meta.json yet: title, times and usage unknown");
        }
        system_prompt(&mut b, &meta);
        let model = model_name(&meta);
        let scanned = jsonl::read_records(&path.join(MESSAGES), |pos, line| {
            let v: Value = serde_json::from_slice(line).map_err(|e| e.to_string())?;
            if !v.is_object() {
                return Err("not a JSON object".into());
            }
            message(&mut b, &v, model.as_deref(), pos.id());
            Ok(())
        });
        scanned.into_session(&mut b.s);
    } else {
        format = "vibe-session-json";
        match kit::read_json(path, "vibe session", MAX_JSON) {
            Ok(mut doc) => {
                meta = doc.get_mut("metadata").map(Value::take).unwrap_or_default();
                system_prompt(&mut b, &meta);
                let model = model_name(&meta);
                let msgs = match doc.get_mut("messages").map(Value::take) {
                    Some(Value::Array(a)) => a,
                    _ => {
                        b.warn("the session file has no `messages` list");
                        Vec::new()
                    }
                };
                for (i, m) in msgs.iter().enumerate() {
                    if m.is_object() {
                        message(&mut b, m, model.as_deref(), format!("message-{}", i + 1));
                    } else {
                        let first = || format!("message {}", i + 1);
                        b.unparsed(
                            "messages",
                            "not a JSON object",
                            first,
                            "message",
                            &m.to_string(),
                            None,
                        );
                    }
                }
            }
            Err(e) => b.warn(e),
        }
    }
    b.s.source = Source {
        paths: if path.is_dir() {
            vec![path.join(MESSAGES), path.join(META)]
        } else {
            vec![path.to_path_buf()]
        },
        format: format.into(),
        format_version: None,
    };
    let s = |k: &str| kit::str_field(&meta, k).filter(|v| !v.is_empty());
    b.s.title = s("title").map(str::to_string);
    b.s.created_at = s("start_time").and_then(kit::parse_rfc3339);
    b.s.updated_at = s("end_time").and_then(kit::parse_rfc3339);
    b.s.cwd = kit::str_at(&meta, &["environment", "working_directory"]).map(str::to_string);
    if let Some(branch) = s("git_branch") {
        b.s.tags.push(format!("branch:{branch}"));
    }
    let parent = s("parent_session_id").map(str::to_string);
    if let Some(p) = &parent {
        b.s.forked_from = Some(unified_id(Agent::Vibe, p));
    }
    let compacted =
        b.s.messages
            .iter()
            .any(|m| m.kind == MessageKind::CompactionSummary);
    let (mut usage, mut cost) = stats(&meta);
    if let (true, Some(p)) = (compacted, &parent) {
        // The stats of a compacted session go on from its parent's.
        match parent_meta(path, p) {
            Some(pm) => {
                let (pu, pc) = stats(&pm);
                usage.input_tokens = usage.input_tokens.saturating_sub(pu.input_tokens);
                usage.output_tokens = usage.output_tokens.saturating_sub(pu.output_tokens);
                cost = (cost - pc).max(0.0);
            }
            None => b.warn(format!(
                "usage includes that of the session it was compacted from ({p}), which is not in the store"
            )),
        }
    }
    if !usage.is_zero() {
        b.s.reported_usage = Some(usage);
    }
    if cost > 1e-12 {
        b.s.reported_cost = Some((cost, true));
    }
    b.finish()
}

/// `(tokens, estimated USD)` of a `meta.json`'s `stats`.
fn stats(meta: &Value) -> (TokenUsage, f64) {
    let st = meta.get("stats").unwrap_or(&Value::Null);
    let usage = TokenUsage {
        input_tokens: kit::u64_field(st, "session_prompt_tokens"),
        output_tokens: kit::u64_field(st, "session_completion_tokens"),
        ..TokenUsage::default()
    };
    let cost = st
        .get("session_cost")
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite() && *c > 0.0)
        .unwrap_or(0.0);
    (usage, cost)
}

/// The `meta.json` of session `id` beside `path` (its folder ends in the id's first 8).
fn parent_meta(path: &Path, id: &str) -> Option<Value> {
    let dir = path.parent()?;
    let short: String = id.chars().take(8).collect();
    kit::entries(dir).into_iter().find_map(|p| {
        let name = kit::file_name(&p);
        let meta = if p.is_dir() { p.join(META) } else { p.clone() };
        if !name
            .trim_end_matches(".json")
            .ends_with(&format!("_{short}"))
        {
            return None;
        }
        let v = kit::read_json(&meta, "vibe meta.json", MAX_JSON).ok()?;
        let v = if p.is_dir() {
            v
        } else {
            v.get("metadata")?.clone()
        };
        (kit::str_field(&v, "session_id") == Some(id)).then_some(v)
    })
}

/// The model's name: `config.active_model` is an alias of one of `config.models`.
fn model_name(meta: &Value) -> Option<String> {
    let alias = kit::str_at(meta, &["config", "active_model"])?;
    let models = kit::value_at(meta, &["config", "models"]).and_then(Value::as_array);
    let name = models
        .into_iter()
        .flatten()
        .find(|m| kit::str_field(m, "alias") == Some(alias))
        .and_then(|m| kit::str_field(m, "name"));
    Some(name.unwrap_or(alias).to_string())
}

fn system_prompt(b: &mut SessionBuilder, meta: &Value) {
    if let Some(text) = meta.get("system_prompt").map(|m| content(m.get("content"))) {
        if !text.is_empty() {
            b.context("system prompt", text, None);
        }
    }
}

/// A `content` (or `reasoning_content`): a string, or a list of parts with `text`.
fn content(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match kit::str_field(p, "text") {
                Some(t) => t.to_string(),
                None => p.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// One message of `messages.jsonl` (or of a pre-2.0 file's `messages`).
fn message(b: &mut SessionBuilder, v: &Value, model: Option<&str>, place: String) {
    let text = content(v.get("content"));
    let native_id = kit::str_field(v, "message_id").map(str::to_string);
    let injected = v.get("injected").and_then(Value::as_bool) == Some(true);
    let mut images: Vec<String> = Vec::new();
    for im in v
        .get("images")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mime = kit::str_field(im, "mime_type");
        let path = kit::str_at(im, &["source", "path"]).or(kit::str_field(im, "path"));
        let p = kit::base64_placeholder("image", mime, None);
        images.push(match path {
            Some(path) => format!("{p} {path}"),
            None => p,
        });
    }
    let body = || {
        let mut t = text.clone();
        for im in &images {
            if !t.is_empty() {
                t.push('\n');
            }
            t.push_str(im);
        }
        t
    };
    match kit::str_field(v, "role").unwrap_or_default() {
        "user" if injected => {
            let kind = if text.starts_with(COMPACTION) {
                MessageKind::CompactionSummary
            } else {
                MessageKind::Context
            };
            b.push(Message {
                role: if kind == MessageKind::Context {
                    Role::System
                } else {
                    Role::User
                },
                kind,
                label: (kind == MessageKind::Context).then(|| "injected".to_string()),
                content: body(),
                native_id,
                ..Message::default()
            });
        }
        "user" => b.push(Message {
            role: Role::User,
            content: body(),
            native_id,
            ..Message::default()
        }),
        "assistant" => {
            let mut m = Message {
                role: Role::Assistant,
                content: body(),
                model: model.map(str::to_string),
                native_id,
                ..Message::default()
            };
            let thinking = content(v.get("reasoning_content"));
            if !thinking.is_empty() {
                m.thinking = Some(thinking);
            }
            for tc in v
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let id = kit::str_field(tc, "id").unwrap_or_default().to_string();
                let args = kit::str_at(tc, &["function", "arguments"]).unwrap_or_default();
                let input = kit::call_arguments(args, "tool calls", &mut b.unparsed, || {
                    format!("{place}, call {id}")
                });
                m.tool_calls.push(ToolCall {
                    tool_name: kit::str_at(tc, &["function", "name"])
                        .unwrap_or_default()
                        .to_string(),
                    tool_call_id: id,
                    input,
                    ..ToolCall::default()
                });
            }
            b.push(m);
        }
        "tool" => {
            let call = kit::str_field(v, "tool_call_id").unwrap_or_default();
            b.tool_result(call, kit::str_field(v, "name"), body(), false, None);
        }
        "system" => b.context("system prompt", body(), None),
        other => {
            let first = || format!("{place}: `{other}`");
            b.unparsed(
                "messages",
                "unknown role",
                first,
                "message",
                &v.to_string(),
                None,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_id_is_meta_jsons_session_id() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("meta.json");
        std::fs::write(&p, "{\n  \"session_id\": \"ab12cd34-0000\",\n  \"x\": 1}").expect("w");
        assert_eq!(head_id(&p).as_deref(), Some("ab12cd34-0000"));
        std::fs::write(&p, "{\"metadata\": {\"start\": 1}}").expect("w");
        assert_eq!(head_id(&p), None);
    }
}
