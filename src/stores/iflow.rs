//! iFlow CLI: the conversation log under `~/.iflow/projects/<project>/session-<uuid>.jsonl`,
//! and the sessions of its ACP server (IDE clients) under `~/.iflow/acp/sessions/<id>.json`.
//!
//! iFlow CLI publishes no source, only its npm package (`@iflow-ai/iflow-cli`). It was read
//! in The-Sunder-islands/iflow-cli-ce at commit `0d24a6e741ee48962ba533df8d83f4a8d0f74848`,
//! the 0.5.19 package as published, formatted and split into one file per bundled module
//! (identifiers stay minified; strings and logic are the package's):
//!
//! - `modules/app/auth/pOe_iflow-auth.js`, `Tn()`: iFlow's home is `$IFLOW_HOME`, else
//!   `os.homedir()` joined with `.iflow` (macOS too);
//! - `modules/app/auth/vUi_iflow-auth.js`: the history manager (`hf`) and its storage
//!   (`VN`, `Rc`): `projects/<project name>/<session id>.jsonl`, one JSON record appended per
//!   message (`appendFile`), the session id `session-<randomUUID>`, the project name the
//!   resolved cwd with every `/`, `\`, `:`, space and other non-word character as `-`
//!   (`ProjectNameGenerator.fromPath`); the records (`createUserMessage`,
//!   `createAssistantMessage`, `createToolResultMessage`, `createCompressionMessage`,
//!   `createMetaMessage`) are Claude Code's: `{uuid, parentUuid, sessionId, timestamp, type:
//!   user|assistant, isSidechain, userType, message, cwd, gitBranch, version}` with the
//!   Anthropic `message` (text, `image`, `tool_use`, `tool_result` blocks, `model`, `usage`),
//!   `toolUseResult` on results, `isCompactSummary` and `compressionInfo` on a compression's
//!   summary and `isMeta` on the note after it;
//! - `entry_code.js`: who writes them: the interactive UI (`useGeminiStream`, the
//!   `recordUserInput` / `recordAssistantResponse` / `recordToolResult` hook), `iflow -p`
//!   (the non-interactive runner), and iFlow's own reader (`Zv`, `WAt`,
//!   `modules/app/session/Fno_iflow-session.js`), which turns a file back into the screen on
//!   `/resume`; `cIe`: the ACP server's `acp/sessions/<id>.json`.
//!
//! **The JSONL is read by the Claude Code parser** ([`claude::load_translated`]): iFlow
//! writes Claude Code's record shape, so what the two share (prompts, replies, tool calls and
//! results, images as placeholders, the compaction summary and the caveat after it, cwd,
//! version, model, usage, times) is read by that one parser. What iFlow does its own way is
//! translated, line by line, into the record Claude Code would have written ([`Translator`]):
//!
//! - **File order is the conversation.** iFlow hangs every reply of a turn off the turn's
//!   prompt and every tool result off the last reply, so the parent links read as a fork per
//!   tool call; iFlow itself reads a file back sorted by time, which is the order it appends
//!   in. The links are dropped and the records read in file order.
//! - **A tool call is written again with the next one.** The interactive UI records the reply
//!   so far at each tool call and carries that call into the next record; a `tool_use` whose
//!   id came before is left out (and a record left empty by that is no message).
//! - **Each record is a whole message**: `message.id` (iFlow's `response-<ms>` or a fresh
//!   UUID) is dropped, so no two records merge.
//! - **Text blocks are stream chunks** (`iflow -p` writes one block per chunk): adjacent text
//!   blocks are joined with nothing between them, as they were streamed. `<think>…</think>`
//!   in the text (the reasoning models iFlow serves stream it inline) is the reply's thinking.
//! - **Zero usage is no usage.** The interactive UI writes `{input_tokens: 0, output_tokens:
//!   0}` on every reply; only `iflow -p` records the counts (Gemini's `promptTokenCount` and
//!   `candidatesTokenCount`). A model of `unknown` (none configured) is no model.
//! - **Tool results are iFlow's own objects**: the interactive UI stores the tool's whole
//!   response (`{callId, responseParts, resultDisplay, error?}`), `iflow -p` its
//!   `functionResponse` parts (one as an object, several as lines of JSON text). The output
//!   is what the model was sent (`functionResponse.response.output` / `.error`, text parts,
//!   images as placeholders), else the `resultDisplay` the user saw; a response with an
//!   `error` is a failed call.
//! - **Slash commands**: a prompt starting with `/` is a command (iFlow records `/`-prompts
//!   only from its command processor), shown as a command event; the command's output,
//!   recorded as a reply of model `slash-command` whose text is `{"slashCommandOutput":
//!   item}`, is shown as the command's output: the item's `text`, else its fields.
//! - **Compression**: the summary record's `compressionInfo` token counts become an event
//!   before the summary.
//!
//! **ACP sessions** (`acp/sessions/<session id>.json`, written whole by `saveSessionState`
//! after each prompt, removed by iFlow 7 days after their last activity): `{sessionId, cwd,
//! createdAt, lastActivity, chatHistory}`, the history Gemini API `Content`s (`user` /
//! `model`, parts `text`, `thought`, `functionCall`, `functionResponse`, `inlineData`), read
//! with the Gemini store's part helpers ([`gemini::parts_text`],
//! [`gemini::collect_responses`]). No message carries a time, a model or usage; `createdAt`
//! is rewritten at every save, so only `lastActivity` is a time (the update time). A file
//! cut mid-write is shown raw with a warning. An ACP id that a JSONL session also has is
//! listed as `<id>@acp`.
//!
//! **Never read**: `settings.json` (API key, base URL), `oauth_creds.json`,
//! `iflow_accounts.json`, `google_accounts.json`, `mcp-oauth-tokens.json`, `aone_token.json`
//! and `.env` (credentials); `config/projects.json` (project names and session ids, no
//! conversation), `tmp/<sha256>/logs.json` (the prompt history) and
//! `tmp/<sha256>/checkpoint-<tag>.json` (`/chat save` copies of a conversation, as Gemini
//! CLI's), `history/` (git snapshots for checkpointing), `log/`, `cache/`, `commands/`,
//! `agents/`, `skills/` and `ide/`.

use super::claude::{self, ClaudeStore};
use super::gemini;
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, ToolCall};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::path::Path;

/// Larger ACP session files are not parsed (a whole file is held while parsing).
const MAX_ACP_BYTES: u64 = 256 << 20;
/// Where the ACP server keeps its sessions, under iFlow's home.
const ACP_SESSIONS: &str = "acp/sessions";
/// The suffix of an ACP session whose id a JSONL session has too.
const ACP_SUFFIX: &str = "@acp";

/// iFlow's home: `$IFLOW_HOME`, else `~/.iflow`.
pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        Agent::Iflow,
        &kit::Places {
            env: &[("IFLOW_HOME", "")],
            defaults: &[".iflow"],
            spec: &[],
        },
    )
}

pub struct IflowStore {
    base: Base,
    /// The JSONL sessions: each root's `projects/`, in root order (the listing's root
    /// indices are the same in both).
    jsonl: ClaudeStore,
}

impl IflowStore {
    pub fn new(roots: Vec<Root>) -> IflowStore {
        let projects = roots
            .iter()
            .map(|r| Root::new(Agent::Iflow, r.path.join("projects"), r.how.clone()))
            .collect();
        IflowStore {
            jsonl: ClaudeStore::with_agent(Agent::Iflow, projects),
            base: Base::new(Agent::Iflow, roots),
        }
    }
}

impl Store for IflowStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = self.jsonl.list();
        let taken: HashSet<String> = out.iter().map(|l| l.id.clone()).collect();
        for (i, root) in self.base.roots.iter().enumerate() {
            for (p, t) in kit::typed_entries(&root.path.join(ACP_SESSIONS)) {
                let Some(stem) = kit::file_name(&p).strip_suffix(".json") else {
                    continue;
                };
                if t != EntryType::File || stem.is_empty() {
                    continue;
                }
                let id = if taken.contains(stem) {
                    format!("{stem}{ACP_SUFFIX}")
                } else {
                    stem.to_string()
                };
                out.push(Listed::file(id, p, i));
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        if is_acp(&listed.path) {
            load_acp(&listed.path, &listed.id)
        } else if listed.path.is_dir() {
            // A Claude Code orphaned-subagents directory: iFlow writes none, but one there
            // is shown as the Claude Code store shows it.
            self.jsonl.load(listed)
        } else {
            load_jsonl(&listed.path, &listed.id)
        }
    }

    /// Ids are file names.
    fn keeps_listing(&self, _listed: &Listed) -> bool {
        true
    }

    /// The listing reads what the Claude Code store's does under `projects/`, and each
    /// `acp/sessions/` (or, while it is missing, the nearest directory above it that is there).
    fn glance(&self, listed: &[Listed]) -> Option<Glance> {
        let mut g = self.jsonl.glance(listed)?;
        for root in &self.base.roots {
            for d in [root.path.join("projects"), root.path.join(ACP_SESSIONS)] {
                if let Some(n) = kit::nearest_dir(&d) {
                    if !g.dirs.contains(&n) {
                        g.dirs.push(n);
                    }
                }
            }
        }
        Some(g)
    }
}

fn is_acp(p: &Path) -> bool {
    kit::file_name(p).ends_with(".json")
}

/// One JSONL session file, through the Claude Code parser.
pub fn load_jsonl(path: &Path, id: &str) -> Session {
    let mut t = Translator::default();
    claude::load_translated(Agent::Iflow, path, id, &mut |v| t.translate(v))
}

// ---------------------------------------------------------------------------------------
// JSONL: iFlow's records as Claude Code's

/// Turns each iFlow record into the records Claude Code would have written for it (see the
/// module docs). It sees the lines in file order and remembers the tool calls already given.
#[derive(Default)]
pub struct Translator {
    calls: HashSet<String>,
}

impl Translator {
    pub fn translate(&mut self, mut v: Value) -> Vec<Value> {
        let Some(o) = v.as_object_mut() else {
            return vec![v];
        };
        // File order is the conversation.
        o.remove("parentUuid");
        o.remove("logicalParentUuid");
        match o.get("type").and_then(Value::as_str) {
            Some("assistant") => self.assistant(v),
            Some("user") => user(v),
            _ => vec![v],
        }
    }

    fn assistant(&mut self, mut v: Value) -> Vec<Value> {
        let Some(msg) = v.get_mut("message").and_then(Value::as_object_mut) else {
            return vec![v];
        };
        msg.remove("id");
        if matches!(
            msg.get("model").and_then(Value::as_str),
            Some("unknown" | "slash-command")
        ) {
            msg.remove("model");
        }
        if msg.get("usage").is_some_and(zero_usage) {
            msg.remove("usage");
        }
        let Some(Value::Array(blocks)) = msg.get_mut("content") else {
            return vec![v];
        };
        let blocks = std::mem::take(blocks);
        if let Some(item) = slash_output(&blocks) {
            return vec![system_record(&v, "", command_output(&item))];
        }
        let blocks = self.blocks(blocks);
        if let Some(msg) = v.get_mut("message").and_then(Value::as_object_mut) {
            msg.insert("content".into(), Value::Array(blocks));
        }
        vec![v]
    }

    /// A reply's blocks: adjacent text chunks joined, `<think>` taken out of the text, tool
    /// calls given before left out.
    fn blocks(&mut self, blocks: Vec<Value>) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        let mut text: Option<String> = None;
        let flush = |text: &mut Option<String>, out: &mut Vec<Value>| {
            if let Some(t) = text.take() {
                let (thinking, rest) = split_think(&t);
                for th in thinking {
                    out.push(json!({"type": "thinking", "thinking": th}));
                }
                out.push(json!({"type": "text", "text": rest}));
            }
        };
        for b in blocks {
            let ty = b.get("type").and_then(Value::as_str);
            if ty == Some("text") {
                if let Some(t) = b.get("text").and_then(Value::as_str) {
                    text.get_or_insert_with(String::new).push_str(t);
                    continue;
                }
            }
            flush(&mut text, &mut out);
            if ty == Some("tool_use") {
                if let Some(id) = b.get("id").and_then(Value::as_str) {
                    if !self.calls.insert(id.to_string()) {
                        continue;
                    }
                }
            }
            out.push(b);
        }
        flush(&mut text, &mut out);
        out
    }
}

/// A usage object whose counts are all zero (or that has none).
fn zero_usage(u: &Value) -> bool {
    u.as_object()
        .is_some_and(|o| o.values().filter_map(Value::as_f64).all(|n| n == 0.0))
}

/// `<think>…</think>` segments of a reply's text, and the text without them (trimmed when
/// there were any). An unclosed `<think>` runs to the end.
fn split_think(text: &str) -> (Vec<String>, String) {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    if !text.contains(OPEN) {
        return (Vec::new(), text.to_string());
    }
    let mut thinking = Vec::new();
    let mut rest = String::new();
    let mut s = text;
    while let Some(a) = s.find(OPEN) {
        rest.push_str(&s[..a]);
        let inner = &s[a + OPEN.len()..];
        match inner.find(CLOSE) {
            Some(e) => {
                thinking.push(inner[..e].trim().to_string());
                s = &inner[e + CLOSE.len()..];
            }
            None => {
                thinking.push(inner.trim().to_string());
                s = "";
            }
        }
    }
    rest.push_str(s);
    thinking.retain(|t| !t.is_empty());
    (thinking, rest.trim().to_string())
}

/// The `slashCommandOutput` item of a reply that is a slash command's output: its text
/// blocks, joined, are `{"slashCommandOutput": {...}}` (what iFlow's reader checks).
fn slash_output(blocks: &[Value]) -> Option<Map<String, Value>> {
    let mut text = String::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(b.get("text").and_then(Value::as_str).unwrap_or("")),
            _ => return None,
        }
    }
    let t = text.trim();
    if !t.starts_with('{') || !t.contains("slashCommandOutput") {
        return None;
    }
    match serde_json::from_str::<Value>(t)
        .ok()?
        .get_mut("slashCommandOutput")?
        .take()
    {
        Value::Object(item) => Some(item),
        _ => None,
    }
}

/// A slash command's output item as Claude Code's local-command output: its `text` (an
/// `error` item's as stderr), else `<type>: <its other fields as JSON>`.
fn command_output(item: &Map<String, Value>) -> String {
    let ty = item.get("type").and_then(Value::as_str).unwrap_or("output");
    let tag = if ty == "error" {
        "local-command-stderr"
    } else {
        "local-command-stdout"
    };
    let text = match item.get("text").and_then(Value::as_str) {
        Some(t) if !t.trim().is_empty() => t.to_string(),
        _ => {
            let rest: Map<String, Value> = item
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "type" | "id" | "text"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if rest.is_empty() {
                ty.to_string()
            } else {
                format!("{ty}: {}", Value::Object(rest))
            }
        }
    };
    format!("<{tag}>{text}</{tag}>")
}

/// A Claude Code `system` record standing where `at` stood (its time, cwd and version),
/// holding `content`; `suffix` tells its uuid from `at`'s.
fn system_record(at: &Value, suffix: &str, content: String) -> Value {
    let mut r = json!({"type": "system", "content": content});
    for k in ["uuid", "timestamp", "sessionId", "cwd", "version"] {
        if let Some(x) = at.get(k) {
            r[k] = x.clone();
        }
    }
    if let (false, Some(u)) = (suffix.is_empty(), at.get("uuid").and_then(Value::as_str)) {
        r["uuid"] = json!(format!("{u}{suffix}"));
    }
    r
}

fn user(mut v: Value) -> Vec<Value> {
    let flags = |k: &str| v.get(k).and_then(Value::as_bool) == Some(true);
    let (meta, summary) = (flags("isMeta"), flags("isCompactSummary"));
    let mut out = Vec::new();
    if summary {
        if let Some(info) = v.get("compressionInfo") {
            let n = |k: &str| info.get(k).and_then(Value::as_u64);
            if let (Some(a), Some(b)) = (n("originalTokenCount"), n("newTokenCount")) {
                out.push(system_record(
                    &v,
                    ".compression",
                    format!(
                        "Conversation compressed ({} → {} tokens)",
                        kit::grouped(a),
                        kit::grouped(b)
                    ),
                ));
            }
        }
    }
    let Some(msg) = v.get_mut("message").and_then(Value::as_object_mut) else {
        out.push(v);
        return out;
    };
    match msg.get_mut("content") {
        Some(Value::String(s)) if !meta && !summary && s.trim_start().starts_with('/') => {
            let cmd = s.trim().to_string();
            let (name, args) = cmd.split_once(char::is_whitespace).unwrap_or((&cmd, ""));
            let wrapped = format!(
                "<command-name>{name}</command-name>\n<command-args>{}</command-args>",
                args.trim()
            );
            let rec = system_record(&v, "", wrapped);
            out.push(rec);
            return out;
        }
        Some(Value::Array(blocks)) => {
            for b in blocks.iter_mut() {
                if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                    continue;
                }
                let Some((text, error)) = b.get("content").and_then(result_text) else {
                    continue;
                };
                b["content"] = Value::String(text);
                if error {
                    b["is_error"] = Value::Bool(true);
                }
            }
        }
        _ => {}
    }
    out.push(v);
    out
}

/// The text and error flag of an iFlow tool result's `content`; `None` for content that is
/// none of iFlow's shapes (then shown as stored).
fn result_text(c: &Value) -> Option<(String, bool)> {
    match c {
        Value::Object(o) if o.contains_key("responseParts") || o.contains_key("resultDisplay") => {
            let (mut text, mut error) =
                parts_output(o.get("responseParts").unwrap_or(&Value::Null));
            error |= o.get("error").is_some_and(|e| !e.is_null());
            if text.is_empty() {
                text = match o.get("resultDisplay") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Object(d)) => match d.get("fileDiff").and_then(Value::as_str) {
                        Some(diff) => diff.to_string(),
                        None => Value::Object(d.clone()).to_string(),
                    },
                    _ => String::new(),
                };
            }
            Some((text, error))
        }
        Value::Object(o) if o.contains_key("functionResponse") => Some(parts_output(c)),
        Value::Array(_) => Some(parts_output(c)),
        Value::String(s) => {
            // `iflow -p` with several parts: each part's JSON on a line of its own.
            let parts: Vec<Value> = s
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    serde_json::from_str::<Value>(l)
                        .ok()
                        .filter(Value::is_object)
                })
                .collect::<Option<_>>()?;
            parts
                .iter()
                .any(|p| p.get("functionResponse").is_some())
                .then(|| parts_output(&Value::Array(parts)))
        }
        _ => None,
    }
}

/// What a `PartListUnion` of a tool's response says (outputs, errors, text parts, inline
/// data as placeholders) and whether one of its `functionResponse`s is an error.
fn parts_output(parts: &Value) -> (String, bool) {
    let one: Vec<&Value> = match parts {
        Value::Array(a) => a.iter().collect(),
        Value::Null => Vec::new(),
        p => vec![p],
    };
    let mut out: Vec<String> = Vec::new();
    let mut error = false;
    for p in one {
        if let Some(d) = p.get("inlineData") {
            let mime = d.get("mimeType").and_then(Value::as_str);
            let data = d.get("data").and_then(Value::as_str);
            out.push(kit::base64_placeholder("attachment", mime, data));
            continue;
        }
        error |= kit::value_at(p, &["functionResponse", "response", "error"])
            .is_some_and(|e| !e.is_null());
        gemini::collect_responses(p, &mut out);
    }
    (out.join("\n"), error)
}

// ---------------------------------------------------------------------------------------
// ACP sessions

/// One `acp/sessions/<id>.json`.
pub fn load_acp(path: &Path, id: &str) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(Agent::Iflow, id);
    b.s.source.paths.push(path.to_path_buf());
    b.s.source.format = "iflow-acp-json".into();
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    let Some(bytes) = kit::read_capped(&mut b, path, &file, MAX_ACP_BYTES) else {
        b.s.updated_at = mtime;
        return b.finish();
    };
    let doc: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            b.warn(format!(
                "{file}: not JSON (cut mid-write?): {e}; its text is shown raw"
            ));
            let raw = kit::raw_text(&bytes);
            if !raw.trim().is_empty() {
                b.context("unparsed file", raw, None);
            }
            b.s.updated_at = mtime;
            return b.finish();
        }
    };
    b.s.cwd = kit::str_field(&doc, "cwd")
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    b.s.updated_at = kit::str_field(&doc, "lastActivity")
        .and_then(kit::parse_rfc3339)
        .or(mtime);
    match doc.get("chatHistory") {
        Some(Value::Array(history)) => {
            let mut chat = AcpChat::default();
            for (i, c) in history.iter().enumerate() {
                chat.content(&mut b, i, c);
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => b.unparsed(
            "chat histories",
            "not an array",
            || file.clone(),
            "chatHistory",
            &other.to_string(),
            None,
        ),
    }
    b.finish()
}

/// Tool calls of an ACP history waiting for their responses, to pair responses that carry
/// no id (the Gemini API gives none on some providers) by name, in order.
#[derive(Default)]
struct AcpChat {
    /// `(name, id)` of calls not yet answered.
    open: Vec<(String, String)>,
    calls: usize,
}

impl AcpChat {
    fn content(&mut self, b: &mut SessionBuilder, i: usize, c: &Value) {
        let role = kit::str_field(c, "role");
        let parts: Vec<&Value> = match c.get("parts") {
            Some(Value::Array(p)) => p.iter().collect(),
            Some(p @ Value::Object(_)) => vec![p],
            _ => Vec::new(),
        };
        match role {
            Some("model") => self.reply(b, &parts),
            Some("user") => self.prompt(b, &parts),
            _ => b.unparsed(
                "history entries",
                "neither a user nor a model content",
                || format!("entry {}", i + 1),
                "history entry",
                &c.to_string(),
                None,
            ),
        }
    }

    fn reply(&mut self, b: &mut SessionBuilder, parts: &[&Value]) {
        let (texts, calls): (Vec<&Value>, Vec<&Value>) = parts
            .iter()
            .copied()
            .partition(|p| p.get("functionCall").is_none());
        let (content, thinking) =
            gemini::parts_text(&Value::Array(texts.into_iter().cloned().collect()));
        let tool_calls: Vec<ToolCall> = calls
            .into_iter()
            .filter_map(|p| p.get("functionCall"))
            .map(|f| {
                self.calls += 1;
                let name = kit::str_field(f, "name").unwrap_or("unknown").to_string();
                let id = kit::str_field(f, "id")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("call-{}", self.calls));
                self.open.push((name.clone(), id.clone()));
                ToolCall {
                    tool_call_id: id,
                    tool_name: name,
                    input: f.get("args").cloned().unwrap_or(Value::Null),
                    ..ToolCall::default()
                }
            })
            .collect();
        if content.trim().is_empty() && thinking.is_none() && tool_calls.is_empty() {
            return;
        }
        b.push(Message {
            role: Role::Assistant,
            content,
            thinking,
            tool_calls,
            ..Message::default()
        });
    }

    fn prompt(&mut self, b: &mut SessionBuilder, parts: &[&Value]) {
        let mut texts: Vec<Value> = Vec::new();
        for p in parts {
            let Some(f) = p.get("functionResponse") else {
                texts.push((*p).clone());
                continue;
            };
            let name = kit::str_field(f, "name").unwrap_or("unknown");
            let given = kit::str_field(f, "id").filter(|s| !s.is_empty());
            let at = match given {
                Some(id) => self.open.iter().position(|(_, x)| x == id),
                None => self.open.iter().position(|(n, _)| n == name),
            };
            let id = match at {
                Some(k) => self.open.remove(k).1,
                None => given.map(str::to_string).unwrap_or_default(),
            };
            let (output, error) = parts_output(p);
            b.tool_result(&id, Some(name), output, error, None);
        }
        let (content, _) = gemini::parts_text(&Value::Array(texts));
        if !content.trim().is_empty() {
            b.push(Message {
                role: Role::User,
                content,
                ..Message::default()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_tags_become_thinking() {
        assert_eq!(
            split_think("<think> plan it </think>\n\nDone."),
            (vec!["plan it".to_string()], "Done.".to_string())
        );
        assert_eq!(
            split_think("a <think>x</think>b<think>y"),
            (vec!["x".to_string(), "y".to_string()], "a b".to_string())
        );
        assert_eq!(split_think("plain"), (Vec::new(), "plain".to_string()));
    }

    #[test]
    fn stream_chunks_join_and_repeated_calls_drop() {
        let mut t = Translator::default();
        let first = t.blocks(vec![
            json!({"type": "text", "text": "Hel"}),
            json!({"type": "text", "text": "lo"}),
            json!({"type": "tool_use", "id": "c1", "name": "ls", "input": {}}),
        ]);
        assert_eq!(first[0], json!({"type": "text", "text": "Hello"}));
        assert_eq!(first.len(), 2);
        let second = t.blocks(vec![
            json!({"type": "tool_use", "id": "c1", "name": "ls", "input": {}}),
            json!({"type": "tool_use", "id": "c2", "name": "cat", "input": {}}),
        ]);
        assert_eq!(second.len(), 1);
        assert_eq!(second[0]["id"], "c2");
    }

    #[test]
    fn tool_result_shapes() {
        let info = json!({"callId": "c1", "responseParts": {"functionResponse": {"id": "c1",
            "name": "ls", "response": {"output": "a\nb"}}}, "resultDisplay": "shown"});
        assert_eq!(result_text(&info), Some(("a\nb".to_string(), false)));
        let failed = json!({"callId": "c1", "error": {}, "responseParts": {"functionResponse":
            {"id": "c1", "name": "ls", "response": {"error": "no such dir"}}}});
        assert_eq!(
            result_text(&failed),
            Some(("no such dir".to_string(), true))
        );
        let lines = "{\"functionResponse\":{\"response\":{\"output\":\"x\"}}}\n{\"text\":\"y\"}";
        assert_eq!(
            result_text(&json!(lines)),
            Some(("x\ny".to_string(), false))
        );
        assert_eq!(result_text(&json!("plain output")), None);
        assert_eq!(result_text(&json!({"other": 1})), None);
    }

    #[test]
    fn zero_usage_is_none() {
        assert!(zero_usage(&json!({"input_tokens": 0, "output_tokens": 0})));
        assert!(!zero_usage(&json!({"input_tokens": 5, "output_tokens": 0})));
    }
}
