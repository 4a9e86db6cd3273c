//! Google Gemini CLI chats: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/` (home `~`).
//!
//! Two generations live side by side (see `docs/formats.md`, section 3):
//!
//! ```text
//! tmp/<slug or sha256>/chats/session-<ts>-<id8>.jsonl   line 1 metadata, then records (≥ 2026-04)
//! tmp/<slug or sha256>/chats/session-<ts>-<id8>.json    one whole ConversationRecord (before)
//! tmp/<slug>/chats/<parentSessionId>/<id>.jsonl         a subagent's chat, nested under its parent
//! ```
//!
//! Design decisions and why:
//! - **The JSONL file is a log of edits, replayed in order.** A message record whose `id` was
//!   seen before replaces that message where it stands (Gemini re-appends a message whenever
//!   its tool statuses or tokens change, last one wins); `{"$set":{..}}` patches metadata and
//!   `$set.messages` replaces the whole list; `{"$rewindTo": id}` drops that message and all
//!   after it. Replaying this way gives exactly one version of each message, so usage is
//!   counted once per id with no extra bookkeeping.
//! - **A rewind keeps what it dropped** as a [`Branch`] holding the whole conversation as it
//!   stood before the rewind (root to leaf), so nothing the user saw disappears from the mount.
//! - **Call and result share a record**, so a tool call carries its output
//!   ([`ToolCall::output`]): the `functionResponse` output/error the model saw, else the
//!   `resultDisplay` string the user saw.
//! - **Input tokens exclude cached ones.** Gemini's `tokens.input` is the prompt count
//!   *including* `tokens.cached`; sessfs counts cache reads apart, as pricing expects.
//! - **cwd is never guessed**: the slug's entry in `~/.gemini/projects.json`, else the
//!   `.project_root` marker in the project directory; old sha256 directories have neither.
//! - **Subagents are not top-level sessions**: `chats/<parentId>/*.jsonl` become
//!   [`Subagent`]s of the parent, loaded with the same parser.
//! - Records are parsed into typed, borrowed structs; only tool arguments, results and
//!   content parts (free-form by nature) are `Value`s.

use super::{jsonl, kit, Base, Env, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Branch, Message, MessageKind, Role, Session, Subagent, TokenUsage, ToolCall,
};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// Legacy `.json` documents larger than this are not parsed.
const MAX_JSON_BYTES: u64 = 256 << 20;
/// The chat format version sessfs was written against (files carry none yet; a `version`
/// above this costs a warning).
const KNOWN_VERSION: u64 = 1;
/// Subagent chats nested deeper than this are not loaded.
const MAX_NESTING: usize = 8;

pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        Agent::Gemini,
        &kit::Places {
            env: &[("GEMINI_CLI_HOME", ".gemini/tmp")],
            defaults: &[".gemini/tmp"],
            spec: &[".gemini/sessions"],
        },
    )
}

pub struct GeminiStore {
    base: Base,
}

impl GeminiStore {
    pub fn new(roots: Vec<Root>) -> GeminiStore {
        GeminiStore {
            base: Base::new(Agent::Gemini, roots),
        }
    }
}

impl Store for GeminiStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for chats in chats_dirs(&root.path) {
                list_chats(&chats, i, &mut out);
            }
        }
        out
    }

    /// A chat's id comes from its own first line (or the top of a legacy document), else
    /// its name: a write keeps the listing while that still gives the id listed. An agent
    /// writing one chat then costs no listing (which reads the top of every chat).
    fn keeps_listing(&self, listed: &Listed) -> bool {
        listed_id(&listed.path) == listed.id
    }

    fn load(&self, listed: &Listed) -> Session {
        let mut s = load_file(&listed.path, None, 0);
        set_cwd(&mut s, project_cwd(&listed.path));
        s
    }
}

// ---------------------------------------------------------------------------------------
// Listing

/// The `chats/` directories under a root: the root may be `tmp/` (the default), one
/// project directory, or a `chats/` directory itself.
fn chats_dirs(root: &Path) -> Vec<PathBuf> {
    if kit::file_name(root) == "chats" {
        return vec![root.to_path_buf()];
    }
    if root.join("chats").is_dir() {
        return vec![root.join("chats")];
    }
    let mut out: Vec<PathBuf> = kit::subdirs(root)
        .into_iter()
        .map(|d| d.join("chats"))
        .filter(|d| d.is_dir())
        .collect();
    // The spec layout keeps session files directly in the root.
    if out.is_empty() && root.is_dir() {
        out.push(root.to_path_buf());
    }
    out
}

fn is_session_file(p: &Path) -> bool {
    let n = kit::file_name(p);
    n.starts_with("session-") && (n.ends_with(".jsonl") || n.ends_with(".json"))
}

/// Sessions of one `chats/` directory. A `.json` whose id also has a `.jsonl` (Gemini
/// migrates a legacy chat to JSONL when it is resumed) is left out.
fn list_chats(chats: &Path, root: usize, out: &mut Vec<Listed>) {
    let files: Vec<PathBuf> = kit::entries(chats)
        .into_iter()
        .filter(|p| p.is_file() && is_session_file(p))
        .collect();
    let mut seen: HashSet<String> = HashSet::new();
    let (jsonl, json): (Vec<PathBuf>, Vec<PathBuf>) = files
        .into_iter()
        .partition(|p| kit::file_name(p).ends_with(".jsonl"));
    for path in jsonl.into_iter().chain(json) {
        let id = listed_id(&path);
        if !seen.insert(id.clone()) {
            continue;
        }
        let mut l = Listed::file(id.clone(), path, root);
        let children = chats.join(&id);
        if children.is_dir() {
            l.sources.push(children.clone());
            l.sources.extend(child_files(&children));
        }
        out.push(l);
    }
}

fn child_files(dir: &Path) -> Vec<PathBuf> {
    kit::entries(dir)
        .into_iter()
        .filter(|p| p.is_file() && kit::file_name(p).ends_with(".jsonl"))
        .collect()
}

/// The session id without a full parse: the first line's `sessionId` for JSONL, the
/// `sessionId` key near the top of a legacy document (it is written first), else the name.
fn listed_id(path: &Path) -> String {
    let name = kit::file_name(path);
    let jsonl = name.ends_with(".jsonl");
    let mut head = Vec::new();
    if let Ok(f) = kit::open_file(path) {
        // The JSONL header line, however long (it may list `directories`); a legacy
        // document starts with its `sessionId`.
        let mut r = std::io::BufReader::new(f.take(if jsonl { 1 << 20 } else { 4096 }));
        let _ = if jsonl {
            r.read_until(b'\n', &mut head)
        } else {
            r.read_to_end(&mut head)
        };
    }
    let jsonl_header = || {
        let h: Header<'_> = serde_json::from_slice(&head).ok()?;
        Some(h.session_id.into_owned()).filter(|s| !s.is_empty())
    };
    let json_key = || {
        let text = String::from_utf8_lossy(&head);
        let at = text.find("\"sessionId\"")? + "\"sessionId\"".len();
        let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
        let rest = rest.strip_prefix('"')?;
        let end = rest.find(['"', '\\'])?;
        Some(rest[..end].to_string()).filter(|s| !s.is_empty())
    };
    let found = if jsonl { jsonl_header() } else { json_key() };
    found.unwrap_or_else(|| {
        name.trim_end_matches(".jsonl")
            .trim_end_matches(".json")
            .to_string()
    })
}

#[derive(Deserialize)]
struct Header<'a> {
    #[serde(
        rename = "sessionId",
        default,
        borrow,
        deserialize_with = "kit::cow_str"
    )]
    session_id: Cow<'a, str>,
}

// ---------------------------------------------------------------------------------------
// cwd

/// A chat and its subagents' chats share their project.
fn set_cwd(s: &mut Session, cwd: Option<String>) {
    for sub in &mut s.subagents {
        if let Some(child) = &mut sub.session {
            set_cwd(child, cwd.clone());
        }
    }
    s.cwd = cwd;
}

#[derive(Deserialize, Default)]
struct Projects {
    #[serde(default)]
    projects: BTreeMap<String, String>,
}

/// The project root of a chat file at `<tmp>/<slug>/chats/<file>`: the path registered for
/// `<slug>` in `<tmp>/../projects.json`, else the absolute path in `<tmp>/<slug>/.project_root`.
fn project_cwd(chat_file: &Path) -> Option<String> {
    let project = chat_file.parent()?.parent()?;
    let slug = kit::file_name(project);
    let registry = project.parent()?.parent()?.join("projects.json");
    if let Ok(bytes) = kit::read_file(&registry) {
        if let Ok(p) = serde_json::from_slice::<Projects>(&bytes) {
            if let Some((path, _)) = p.projects.iter().find(|(_, s)| s.as_str() == slug) {
                return Some(path.clone());
            }
        }
    }
    let marker = std::fs::read_to_string(project.join(".project_root")).ok()?;
    let marker = marker.trim();
    Path::new(marker).is_absolute().then(|| marker.to_string())
}

// ---------------------------------------------------------------------------------------
// Records

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum MsgType {
    User,
    Gemini,
    Info,
    Warning,
    Error,
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum ToolStatus {
    Success,
    Error,
    Cancelled,
    #[serde(other)]
    Other,
}

/// One JSONL line, or one element of a legacy document's `messages`: metadata, a patch, a
/// rewind or a message; which one is told by the fields present.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    session_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    start_time: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    last_updated: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    summary: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    kind: Cow<'a, str>,
    /// Gemini writes no format version today; one that appears is reported, not trusted.
    #[serde(default, deserialize_with = "kit::count")]
    version: u64,
    #[serde(rename = "$set", default, borrow)]
    set: Option<Box<Patch<'a>>>,
    #[serde(rename = "$rewindTo", default, borrow)]
    rewind_to: Option<Cow<'a, str>>,

    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    timestamp: Cow<'a, str>,
    #[serde(rename = "type", default)]
    ty: Option<MsgType>,
    /// `PartListUnion`: a string, one part or a list of parts.
    #[serde(default)]
    content: Value,
    #[serde(default, borrow)]
    thoughts: Option<Vec<Thought<'a>>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallRecord<'a>>>,
    #[serde(default)]
    tokens: Option<Tokens>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    model: Cow<'a, str>,
}

/// The body of a `{"$set": {...}}` line.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Patch<'a> {
    #[serde(default, borrow)]
    messages: Option<Vec<Record<'a>>>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    summary: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    last_updated: Cow<'a, str>,
}

/// A legacy `.json` chat: the whole `ConversationRecord`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Conversation<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    session_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    start_time: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    last_updated: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    summary: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    messages: Vec<Record<'a>>,
}

#[derive(Deserialize)]
struct Thought<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    subject: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    description: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallRecord<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    name: Cow<'a, str>,
    #[serde(default)]
    args: Value,
    /// Parts: `[{functionResponse: {id, name, response: {output | error}}}]`.
    #[serde(default)]
    result: Value,
    #[serde(default)]
    status: Option<ToolStatus>,
    /// A string, or a `{fileDiff, fileName, ...}` object for edits.
    #[serde(default)]
    result_display: Value,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    agent_id: Cow<'a, str>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct Tokens {
    #[serde(default, deserialize_with = "kit::count")]
    input: u64,
    #[serde(default, deserialize_with = "kit::count")]
    output: u64,
    #[serde(default, deserialize_with = "kit::count")]
    cached: u64,
    #[serde(default, deserialize_with = "kit::count")]
    thoughts: u64,
}

impl Tokens {
    fn usage(self) -> TokenUsage {
        TokenUsage {
            input_tokens: self.input.saturating_sub(self.cached),
            output_tokens: self.output,
            thinking_tokens: self.thoughts,
            cached_tokens: self.cached,
            cache_write_tokens: 0,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Replay

/// One message of the replayed conversation.
#[derive(Clone)]
struct Rec {
    id: String,
    msg: Message,
    /// `agentId` of each tool call, to link subagent chats to the call that ran them.
    agents: Vec<(String, String)>,
}

/// The state a chat file replays into.
#[derive(Default)]
struct Replay {
    session_id: String,
    start_time: Option<String>,
    last_updated: Option<String>,
    summary: Option<String>,
    kind: Option<String>,
    recs: Vec<Rec>,
    index: HashMap<String, usize>,
    branches: Vec<Branch>,
    taken: HashSet<String>,
    warnings: Vec<String>,
    unknown_types: HashSet<String>,
}

impl Replay {
    fn meta(&mut self, session_id: &str, start: &str, updated: &str, summary: &str, kind: &str) {
        let set = |field: &mut Option<String>, v: &str| {
            if !v.is_empty() {
                *field = Some(v.to_string());
            }
        };
        if !session_id.is_empty() {
            self.session_id = session_id.to_string();
        }
        set(&mut self.start_time, start);
        set(&mut self.last_updated, updated);
        set(&mut self.summary, summary);
        set(&mut self.kind, kind);
    }

    fn apply(&mut self, r: Record<'_>, at: &str) {
        if let Some(p) = r.set {
            let p = *p;
            if let Some(messages) = p.messages {
                self.recs.clear();
                self.index.clear();
                for m in messages {
                    self.message(m, at);
                }
            }
            self.meta("", "", &p.last_updated, &p.summary, "");
        } else if let Some(target) = r.rewind_to {
            self.rewind(&target, at);
        } else if r.ty.is_some() || !r.id.is_empty() {
            self.message(r, at);
        } else if !r.session_id.is_empty() {
            if r.version > KNOWN_VERSION {
                self.warnings.push(format!(
                    "{at}: format version {} is newer than the {KNOWN_VERSION} sessfs reads; read as version {KNOWN_VERSION}",
                    r.version
                ));
            }
            self.meta(
                &r.session_id,
                &r.start_time,
                &r.last_updated,
                &r.summary,
                &r.kind,
            );
        } else {
            self.warnings
                .push(format!("{at}: record of unknown shape skipped"));
        }
    }

    /// Append a message, or replace the message with its id where it stands.
    fn message(&mut self, r: Record<'_>, at: &str) {
        let ty = r.ty.unwrap_or(MsgType::Other);
        let Some(rec) = to_rec(r, ty) else {
            let name = format!("{ty:?}").to_lowercase();
            if self.unknown_types.insert(name) {
                self.warnings
                    .push(format!("{at}: message of unknown type skipped"));
            }
            return;
        };
        match self.index.get(&rec.id) {
            Some(&i) if !rec.id.is_empty() => self.recs[i] = rec,
            _ => {
                if !rec.id.is_empty() {
                    self.index.insert(rec.id.clone(), self.recs.len());
                }
                self.recs.push(rec);
            }
        }
    }

    /// Drop `target` and everything after it, keeping the conversation as it stood as a
    /// branch.
    fn rewind(&mut self, target: &str, at: &str) {
        let Some(&i) = self.index.get(target) else {
            self.warnings
                .push(format!("{at}: rewind to unknown message {target} ignored"));
            return;
        };
        let tail = self.recs.split_off(i);
        for r in &tail {
            self.index.remove(&r.id);
        }
        let leaf = tail.last().map(|r| r.id.clone());
        let base = format!("branch-{}", leaf.as_deref().unwrap_or("rewound"));
        let name = kit::unique_name(&mut self.taken, &base);
        let messages = self
            .recs
            .iter()
            .chain(&tail)
            .map(|r| r.msg.clone())
            .collect();
        self.branches.push(Branch {
            name,
            fork_point: self.recs.last().map(|r| r.id.clone()),
            leaf,
            messages,
        });
    }
}

fn to_rec(r: Record<'_>, ty: MsgType) -> Option<Rec> {
    let timestamp = kit::parse_rfc3339(&r.timestamp);
    let (content, mut thinking) = parts_text(&r.content);
    let native_id = Some(r.id.to_string()).filter(|s| !s.is_empty());
    let mut agents = Vec::new();
    let msg = match ty {
        MsgType::User => Message {
            role: Role::User,
            content,
            timestamp,
            native_id,
            ..Message::default()
        },
        MsgType::Gemini => {
            for t in r.thoughts.iter().flatten() {
                let one = match (t.subject.trim(), t.description.trim()) {
                    ("", d) => d.to_string(),
                    (s, "") => s.to_string(),
                    (s, d) => format!("{s}\n{d}"),
                };
                if !one.is_empty() {
                    push_para(thinking.get_or_insert_with(String::new), &one);
                }
            }
            let mut tool_calls = Vec::new();
            for c in r.tool_calls.into_iter().flatten() {
                if !c.agent_id.is_empty() {
                    agents.push((c.agent_id.to_string(), c.id.to_string()));
                }
                tool_calls.push(tool_call(c));
            }
            Message {
                role: Role::Assistant,
                content,
                timestamp,
                tool_calls,
                token_usage: r.tokens.map(Tokens::usage).filter(|u| !u.is_zero()),
                thinking,
                model: Some(r.model.to_string()).filter(|m| !m.is_empty()),
                native_id,
                ..Message::default()
            }
        }
        MsgType::Info | MsgType::Warning | MsgType::Error => {
            let label = format!("{ty:?}").to_lowercase();
            Message {
                role: Role::System,
                kind: MessageKind::Event,
                content: format!("{label}: {content}"),
                timestamp,
                native_id,
                ..Message::default()
            }
        }
        MsgType::Other => return None,
    };
    Some(Rec {
        id: r.id.into_owned(),
        msg,
        agents,
    })
}

fn tool_call(c: ToolCallRecord<'_>) -> ToolCall {
    let mut outputs: Vec<String> = Vec::new();
    collect_responses(&c.result, &mut outputs);
    let mut output = outputs.join("\n");
    if output.is_empty() {
        output = match &c.result_display {
            Value::String(s) => s.clone(),
            Value::Object(o) => o
                .get("fileDiff")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            _ => String::new(),
        };
    }
    let status = c.status.unwrap_or(ToolStatus::Other);
    let finished = matches!(
        status,
        ToolStatus::Success | ToolStatus::Error | ToolStatus::Cancelled
    );
    let (output, is_error) = if finished || !output.is_empty() {
        if output.is_empty() && status == ToolStatus::Cancelled {
            output = "[cancelled]".into();
        }
        (
            Some(output),
            Some(matches!(status, ToolStatus::Error | ToolStatus::Cancelled)),
        )
    } else {
        (None, None)
    };
    ToolCall {
        tool_call_id: c.id.into_owned(),
        tool_name: c.name.into_owned(),
        input: c.args,
        output,
        is_error,
        duration_ms: None,
    }
}

/// `functionResponse.response.output` / `.error` of every part, and text parts.
fn collect_responses(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Array(parts) => parts.iter().for_each(|p| collect_responses(p, out)),
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        Value::Object(o) => {
            if let Some(resp) = o.get("functionResponse").and_then(|f| f.get("response")) {
                for key in ["output", "error"] {
                    match resp.get(key) {
                        Some(Value::String(s)) => out.push(s.clone()),
                        Some(Value::Null) | None => {}
                        Some(other) => out.push(other.to_string()),
                    }
                }
            } else if let Some(t) = o.get("text").and_then(Value::as_str) {
                out.push(t.to_string());
            }
        }
        _ => {}
    }
}

/// The text of a `PartListUnion` and the text of its `thought` parts. Text parts are
/// joined; inline data becomes a placeholder, file data a reference.
fn parts_text(v: &Value) -> (String, Option<String>) {
    let mut text = String::new();
    let mut thinking: Option<String> = None;
    let mut one = |p: &Value| {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            if p.get("thought").and_then(Value::as_bool) == Some(true) {
                push_para(thinking.get_or_insert_with(String::new), t);
            } else {
                text.push_str(t);
            }
        } else if let Some(d) = p.get("inlineData") {
            let mime = d.get("mimeType").and_then(Value::as_str);
            let kind = match mime {
                Some(m) if !m.starts_with("image/") => "attachment",
                _ => "image",
            };
            let data = d.get("data").and_then(Value::as_str);
            push_para(&mut text, &kit::base64_placeholder(kind, mime, data));
        } else if let Some(f) = p.get("fileData") {
            let uri = f.get("fileUri").and_then(Value::as_str).unwrap_or("?");
            push_para(&mut text, &format!("[file: {uri}]"));
        }
    };
    match v {
        Value::String(s) => return (s.clone(), None),
        Value::Array(parts) => parts.iter().for_each(&mut one),
        Value::Object(_) => one(v),
        _ => {}
    }
    (text, thinking)
}

fn push_para(buf: &mut String, s: &str) {
    if !buf.is_empty() {
        buf.push_str("\n\n");
    }
    buf.push_str(s);
}

// ---------------------------------------------------------------------------------------
// Loading

fn load_file(path: &Path, parent: Option<String>, depth: usize) -> Session {
    let mut replay = Replay::default();
    let name = kit::file_name(path).to_string();
    let legacy = name.ends_with(".json");
    if legacy {
        read_legacy(path, &mut replay);
    } else {
        let warnings = jsonl::read_lines(path, |n, line| {
            let r: Record<'_> =
                serde_json::from_slice(line).map_err(|e| format!("not a chat record: {e}"))?;
            replay.apply(r, &format!("line {n}"));
            Ok(())
        });
        replay.warnings.extend(warnings.warnings);
    }

    let id = if replay.session_id.is_empty() {
        name.trim_end_matches(".jsonl")
            .trim_end_matches(".json")
            .to_string()
    } else {
        replay.session_id.clone()
    };
    let mut b = kit::SessionBuilder::new(Agent::Gemini, id.clone());
    b.s.parent = parent;
    b.s.source.paths = vec![path.to_path_buf()];
    b.s.source.format = if legacy {
        "gemini-json"
    } else {
        "gemini-jsonl"
    }
    .into();
    b.s.title = replay.summary.clone().filter(|s| !s.trim().is_empty());
    b.s.created_at = replay.start_time.as_deref().and_then(kit::parse_rfc3339);
    b.s.updated_at = replay.last_updated.as_deref().and_then(kit::parse_rfc3339);
    if replay.kind.as_deref() == Some("subagent") {
        b.s.tags.push("subagent".into());
    }
    for w in replay.warnings.drain(..) {
        b.warn(w);
    }
    let mut agent_calls: Vec<(String, String)> = Vec::new();
    for r in replay.recs {
        let mut m = r.msg;
        if m.token_usage.is_some() && !r.id.is_empty() && !b.usage_once(&r.id) {
            m.token_usage = None;
        }
        agent_calls.extend(r.agents);
        b.push(m);
    }
    b.s.branches = replay.branches;

    // Subagent chats: `chats/<this id>/<child id>.jsonl`.
    let children = path.parent().map(|d| d.join(&id));
    if let Some(dir) = children.filter(|d| d.is_dir()) {
        if depth >= MAX_NESTING {
            b.warn(format!(
                "subagents nested deeper than {MAX_NESTING} levels not loaded"
            ));
        } else {
            let uid = unified_id(Agent::Gemini, &id);
            for f in child_files(&dir) {
                let child = load_file(&f, Some(uid.clone()), depth + 1);
                let call = agent_calls
                    .iter()
                    .find(|(agent, _)| *agent == child.id)
                    .map(|(_, call)| call.clone());
                b.s.subagents.push(Subagent {
                    name: child.id.clone(),
                    unified_id: None,
                    description: child.title.clone(),
                    tool_call_id: call,
                    session: Some(Box::new(child)),
                });
            }
        }
    }
    b.finish()
}

fn read_legacy(path: &Path, replay: &mut Replay) {
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_JSON_BYTES => {
            replay
                .warnings
                .push(format!("{} bytes, too large to parse, skipped", m.len()));
            return;
        }
        _ => match kit::read_file(path) {
            Ok(b) => b,
            Err(e) => {
                replay.warnings.push(format!("cannot read: {e}"));
                return;
            }
        },
    };
    let lossy;
    let text: &[u8] = match std::str::from_utf8(&bytes) {
        Ok(_) => &bytes,
        Err(_) => {
            lossy = String::from_utf8_lossy(&bytes).into_owned();
            lossy.as_bytes()
        }
    };
    match serde_json::from_slice::<Conversation<'_>>(text) {
        Ok(c) => {
            replay.meta(
                &c.session_id,
                &c.start_time,
                &c.last_updated,
                &c.summary,
                &c.kind,
            );
            for (i, m) in c.messages.into_iter().enumerate() {
                replay.message(m, &format!("messages[{i}]"));
            }
        }
        Err(e) => replay
            .warnings
            .push(format!("not a Gemini conversation: {e}")),
    }
}

#[cfg(test)]
mod tests;
