//! Kimi CLI (Moonshot): `~/.kimi/sessions/<md5 of work dir>/<session id>/`.
//!
//! Learned from the agent's own source, github:MoonshotAI/kimi-cli at
//! 4a550effdfcb29a25a5d325bf935296cc50cd417: `src/kimi_cli/soul/context.py` (the context
//! file), `src/kimi_cli/wire/types.py` and `src/kimi_cli/wire/file.py` (the wire log),
//! `src/kimi_cli/metadata.py` (work-dir hash, `kimi.json`), `src/kimi_cli/session.py`
//! (legacy `<hash>/<id>.jsonl` files), `src/kimi_cli/subagents/store.py` (subagent
//! directories), `src/kimi_cli/utils/path.py` (`context_N.jsonl` rotation) and the
//! `context_sub_N.jsonl` files the older `Task` tool wrote (da488190).
//!
//! A session directory holds two logs of one conversation:
//!
//! - `context.jsonl`, what the model saw: one kosong `Message` per line (`user`,
//!   `assistant` with `think`/`text` parts and `tool_calls`, `tool`), plus bookkeeping
//!   records `_system_prompt`, `_checkpoint` and `_usage`. It is what the agent resumes
//!   from, holds every tool output in full and is **the transcript** here. `/clear`,
//!   compaction and revert rotate it to `context_N.jsonl`; those earlier contexts are
//!   shown as branches, never dropped.
//! - `wire.jsonl`, what the UI saw: timestamped events (`TurnBegin`, `StepBegin`,
//!   `ContentPart`, `ToolCall`, `ToolResult`, `StatusUpdate`, `SubagentEvent`, …). Its
//!   content repeats the context, so it is not rendered a second time; it gives what the
//!   context lacks: the time of each prompt and reply, and token usage, which only its
//!   `StatusUpdate.token_usage` records (one per API call, keyed by `message_id`).
//!
//! `_usage` records hold the context's length after a step, not what a call spent: they
//! are not usage and are never summed. Usage is counted once per `message_id` across the
//! session and its subagents. A step's usage lands on the context reply holding its tool
//! calls (matched by call id), else on the next reply without calls; usage of steps whose
//! replies the context no longer holds (cleared, compacted) is kept on one closing event,
//! so totals stay whole. `SubagentEvent` records feed the subagent whose first prompt
//! they carry, never the parent.
//!
//! Subagents: `context_sub_N.jsonl` (older) and `subagents/<agent id>/` (with its own
//! `wire.jsonl` and `meta.json`). The cwd comes from `kimi.json` `work_dirs`, whose path's
//! MD5 names the directory. `kimi.json` is a source of every session under `sessions/`
//! (Kimi rewrites it when a session starts, to note the work directory's last session);
//! [`Store::versions`] takes from it only the session's own work directory, so that rewrite
//! renders no session again unless it changed where one ran. Credentials (`config.toml`,
//! `credentials/`, `mcp*.json`) are never opened.

use super::jsonl::{self, Pos};
use super::kit::{self, EntryType, Places, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    self, Agent, Branch, Message, MessageKind, Role, Session, Subagent, TokenUsage, ToolCall,
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const AGENT: Agent = Agent::Kimi;
const CONTEXT: &str = "context.jsonl";
const WIRE: &str = "wire.jsonl";
const STATE: &str = "state.json";
/// Kimi's metadata file in the share directory: the work directories, by path.
const METADATA: &str = "kimi.json";
/// The raw text of wire lines that could not be read.
const WIRE_UNPARSED: &str = "unparsed-wire.txt";

/// `KIMI_SHARE_DIR`, else `~/.kimi`.
pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        AGENT,
        &Places {
            env: &[("KIMI_SHARE_DIR", "")],
            defaults: &[".kimi"],
            spec: &[],
        },
    )
}

pub struct KimiStore {
    base: Base,
    work_dirs: WorkDirs,
}

impl KimiStore {
    pub fn new(roots: Vec<Root>) -> KimiStore {
        KimiStore {
            base: Base::new(AGENT, roots),
            work_dirs: WorkDirs::default(),
        }
    }

    /// The work directory of the session at `path` (in `sessions/<hash>/`), from the
    /// `kimi.json` of `root`.
    fn cwd(&self, root: &Path, path: &Path) -> Option<String> {
        let hash = path.parent()?.file_name()?.to_string_lossy();
        self.work_dirs
            .get(&root.join(METADATA))
            .get(hash.as_ref())
            .cloned()
    }
}

impl Store for KimiStore {
    fn base(&self) -> &Base {
        &self.base
    }

    /// A session's sources are what [`load_dir`] reads (see [`dir_sources`]) and, for a
    /// session under `sessions/`, `kimi.json`, which gives its work directory.
    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            let sessions = root.path.join("sessions");
            for (path, id) in session_paths(&root.path) {
                let mut sources = vec![path.clone()];
                if path.is_dir() {
                    dir_sources(&path, 0, &mut sources);
                }
                if path.parent().and_then(Path::parent) == Some(&sessions) {
                    sources.push(root.path.join(METADATA));
                }
                out.push(Listed {
                    id,
                    path,
                    sources,
                    key: None,
                    root: i,
                });
            }
        }
        out
    }

    /// What [`session_paths`] reads: each root, its `sessions/` and `imported_sessions/`
    /// when there, every work-dir directory in `sessions/`, and every directory in those
    /// (a session directory counts once it holds a context or wire log, so its entries are
    /// read). A missing `sessions/` or `imported_sessions/` appearing moves the root. A
    /// session's own logs, state and subagents are its sources, and `kimi.json` is one of
    /// every session under `sessions/`, so the search adds them.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            g.dirs.push(root.path.clone());
            let sessions = root.path.join("sessions");
            let mut dirs = kit::subdirs(&sessions);
            if sessions.is_dir() {
                g.dirs.push(sessions);
            }
            let imported = root.path.join("imported_sessions");
            if imported.is_dir() {
                dirs.push(imported);
            }
            for d in dirs {
                for (p, t) in kit::typed_entries(&d) {
                    if t == EntryType::Dir && !kit::file_name(&p).starts_with('.') {
                        g.dirs.push(p);
                    }
                }
                g.dirs.push(d);
            }
        }
        Some(g)
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads directory and file names only.
        true
    }

    /// A session's version where `kimi.json` is one of its sources: the size and mtime of
    /// the others, and its own work directory in `kimi.json`. Kimi rewrites that file when
    /// any session starts; only a session whose work directory it changed renders again.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        listed
            .iter()
            .map(|l| {
                let root = &self.base.roots.get(l.root)?.path;
                let metadata = root.join(METADATA);
                if !l.sources.contains(&metadata) {
                    return None;
                }
                let own = super::stat_fingerprint(l.sources.iter().filter(|p| **p != metadata));
                let cwd = self.cwd(root, &l.path);
                Some(crate::names::fnv1a(format!("{own}-{cwd:?}").as_bytes()))
            })
            .collect()
    }

    fn load(&self, listed: &Listed) -> Session {
        let mut s = load_session(&listed.path, &listed.id);
        if let Some(root) = self.base.roots.get(listed.root) {
            s.cwd = self.cwd(&root.path, &listed.path);
        }
        s
    }
}

/// `kimi.json` files read once per version (size and mtime): every session of a share
/// directory looks its work directory up in the same file.
#[derive(Default)]
struct WorkDirs(kit::PerVersion<WorkDirMap>);

/// Work directories by the name Kimi gives their session directory.
type WorkDirMap = Arc<HashMap<String, String>>;

impl WorkDirs {
    fn get(&self, path: &Path) -> WorkDirMap {
        self.0.get(path, |path| Arc::new(work_dirs(path)))
    }
}

/// What [`load_dir`] reads of a session directory besides the directory itself: its logs,
/// its `state.json`, its `subagents/`, and each subagent's directory (whose `meta.json`,
/// `state.json` and rotated contexts are counted as its entries) with the same again, for
/// nested subagents [`MAX_SUBAGENT_DEPTH`] deep. A subagent's `meta.json` rewritten alone
/// (its description) then renders the parent again, as a write to its logs does.
fn dir_sources(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    out.extend(
        kit::entries(dir)
            .into_iter()
            .filter(|p| kit::file_name(p).ends_with(".jsonl")),
    );
    out.push(dir.join(STATE));
    out.push(dir.join("subagents"));
    if depth >= MAX_SUBAGENT_DEPTH {
        return;
    }
    for sd in kit::subdirs(&dir.join("subagents")) {
        out.push(sd.clone());
        dir_sources(&sd, depth + 1, out);
    }
}

/// How deep nested `subagents/` are followed (a link cycle ends here).
const MAX_SUBAGENT_DEPTH: usize = 8;

/// Every session under a share directory: `sessions/<hash>/<id>/` directories holding a
/// context or wire log, legacy `sessions/<hash>/<id>.jsonl` files not yet migrated, and
/// `imported_sessions/<id>/`. Each with its id (the directory or file stem).
pub fn session_paths(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = kit::subdirs(&root.join("sessions"));
    dirs.push(root.join("imported_sessions"));
    for (n, d) in dirs.iter().enumerate() {
        let imported = n + 1 == dirs.len();
        let mut ids = HashSet::new();
        for (p, t) in kit::typed_entries(d) {
            let name = kit::file_name(&p);
            if name.starts_with('.') {
                continue;
            }
            if t == EntryType::Dir && (p.join(CONTEXT).exists() || p.join(WIRE).exists()) {
                let id = p.file_name().map(crate::names::os_id).unwrap_or_default();
                ids.insert(id.clone());
                out.push((p, id));
            }
        }
        if imported {
            continue;
        }
        for (p, t) in kit::typed_entries(d) {
            let name = kit::file_name(&p);
            if let Some(stem) = name.strip_suffix(".jsonl") {
                if t == EntryType::File && !stem.is_empty() && !ids.contains(stem) {
                    out.push((p.clone(), stem.to_string()));
                }
            }
        }
    }
    out
}

/// Load one session: a session directory, or a legacy context file. Its work directory is
/// the store's to add (from `kimi.json`, read once per version of the file).
pub fn load_session(path: &Path, id: &str) -> Session {
    let mut seen = HashSet::new();
    if path.is_dir() {
        return load_dir(path, id, &mut seen);
    }
    let mut b = SessionBuilder::new(AGENT, id);
    b.s.source.format = "kimi-context".into();
    let ctx = read_context(path, &mut b.s);
    attach(&mut b, ctx, &[], Vec::new(), &mut seen);
    b.finish()
}

fn load_dir(dir: &Path, id: &str, seen: &mut HashSet<String>) -> Session {
    let mut b = SessionBuilder::new(AGENT, id);
    b.s.source.format = "kimi-context".into();
    let wire = read_wire(&dir.join(WIRE), &mut b.s);
    let ctx_path = dir.join(CONTEXT);
    let ctx = if ctx_path.exists() {
        read_context(&ctx_path, &mut b.s)
    } else {
        Vec::new()
    };
    if let Ok(bytes) = kit::read_file(&dir.join(STATE)) {
        b.s.source.paths.push(dir.join(STATE));
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            b.s.title = kit::str_any(&v, &["custom_title", "title"])
                .filter(|t| !t.is_empty())
                .map(str::to_string);
        }
    }
    let (own, by_task) = split_wire(wire);

    // Earlier contexts (`context_N.jsonl`) as branches; subagents (`context_sub_N.jsonl`).
    let mut rotated: Vec<(u64, PathBuf)> = Vec::new();
    let mut subs: Vec<(u64, PathBuf)> = Vec::new();
    for p in kit::entries(dir) {
        let name = kit::file_name(&p);
        let Some(mid) = name
            .strip_prefix("context_")
            .and_then(|r| r.strip_suffix(".jsonl"))
        else {
            continue;
        };
        if let Some(n) = mid.strip_prefix("sub_").and_then(|n| n.parse().ok()) {
            subs.push((n, p));
        } else if let Ok(n) = mid.parse() {
            rotated.push((n, p));
        }
    }
    rotated.sort();
    subs.sort();
    let mut branches = Vec::new();
    for (n, p) in rotated {
        let mut tmp = Session::new(AGENT, id);
        let msgs: Vec<Message> = read_context(&p, &mut tmp)
            .into_iter()
            .map(|c| c.message)
            .collect();
        b.s.source.paths.extend(tmp.source.paths);
        b.s.warnings.extend(tmp.warnings);
        branches.push(Branch {
            name: format!("context_{n}"),
            fork_point: None,
            leaf: None,
            messages: msgs,
        });
    }
    let earlier: Vec<Message> = branches.iter().flat_map(|br| br.messages.clone()).collect();
    attach(&mut b, ctx, &earlier, own, seen);
    b.s.branches.extend(branches);
    let mut groups = by_task;
    for (n, p) in subs {
        let mut sb = SessionBuilder::new(AGENT, format!("{id}/sub_{n}"));
        sb.s.source.format = "kimi-context".into();
        sb.s.parent = Some(model::unified_id(AGENT, id));
        let ctx = read_context(&p, &mut sb.s);
        let first = ctx
            .iter()
            .find(|c| c.message.role == Role::User)
            .map(|c| c.message.content.clone());
        let gi = groups
            .iter()
            .position(|g| first.is_some() && g.prompt == first)
            .or_else(|| {
                groups
                    .iter()
                    .position(|g| g.prompt.is_none() && g.agent_id.is_none())
            });
        let (task, steps) = match gi {
            Some(i) => {
                let g = groups.remove(i);
                (Some(g.task), g.steps)
            }
            None => (None, Vec::new()),
        };
        attach(&mut sb, ctx, &[], steps, seen);
        b.s.subagents.push(Subagent {
            name: format!("sub_{n}"),
            unified_id: None,
            description: None,
            tool_call_id: task,
            session: Some(Box::new(sb.finish())),
        });
    }
    // `subagents/<agent id>/`: each with its own context and wire.
    for sd in kit::subdirs(&dir.join("subagents")) {
        let name = sd.file_name().map(crate::names::os_id).unwrap_or_default();
        let mut child = load_dir(&sd, &format!("{id}/{name}"), seen);
        child.parent = Some(model::unified_id(AGENT, id));
        let meta = kit::read_json(&sd.join("meta.json"), "meta.json", 1 << 20).ok();
        let description = meta
            .as_ref()
            .and_then(|m| kit::str_any(m, &["description", "subagent_type"]).map(str::to_string));
        let task = groups
            .iter()
            .position(|g| g.agent_id.as_deref() == Some(name.as_str()))
            .map(|i| groups.remove(i).task);
        b.s.subagents.push(Subagent {
            name: crate::names::escape(&name),
            unified_id: None,
            description,
            tool_call_id: task,
            session: Some(Box::new(child)),
        });
    }
    // A subagent is described by the call that started it (`Task`/`Agent` `description`).
    for sa in
        b.s.subagents
            .iter_mut()
            .filter(|sa| sa.description.is_none())
    {
        let call =
            b.s.messages
                .iter()
                .flat_map(|m| &m.tool_calls)
                .find(|c| sa.tool_call_id.as_deref() == Some(c.tool_call_id.as_str()));
        sa.description = call
            .and_then(|c| kit::str_field(&c.input, "description"))
            .map(str::to_string);
    }
    // Subagent events with no context file of their own still count their usage.
    let rest: Vec<Step> = groups.into_iter().flat_map(|g| g.steps).collect();
    let spent = unplaced_usage(&rest, seen);
    if let Some(u) = spent {
        b.push(Message {
            role: Role::System,
            kind: MessageKind::Event,
            content: "usage of subagent API calls whose context file is absent".into(),
            token_usage: Some(u),
            ..Message::default()
        });
    }
    b.finish()
}

/// The work directories of a `kimi.json`, by the name of their session directory: the
/// path's MD5, `<kaos>_`-prefixed where the work directory is not local. The first entry
/// of a name wins, as a search of the list finds it.
fn work_dirs(metadata: &Path) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Ok(v) = kit::read_json(metadata, METADATA, 16 << 20) else {
        return out;
    };
    let dirs = v.get("work_dirs").and_then(Value::as_array);
    for d in dirs.into_iter().flatten() {
        let Some(path) = kit::str_field(d, "path") else {
            continue;
        };
        let md5 = md5_hex(path.as_bytes());
        let kaos = kit::str_field(d, "kaos").unwrap_or("local");
        let name = if kaos == "local" {
            md5
        } else {
            format!("{kaos}_{md5}")
        };
        out.entry(name).or_insert_with(|| path.to_string());
    }
    out
}

// ---------------------------------------------------------------------------------------
// context.jsonl

/// One message of a context file, with what pairing with the wire needs.
struct Ctx {
    message: Message,
}

fn read_context(path: &Path, s: &mut Session) -> Vec<Ctx> {
    s.source.paths.push(path.to_path_buf());
    let mut out: Vec<Ctx> = Vec::new();
    let mut unparsed = kit::Unparsed::default();
    let name = kit::file_name(path).to_string();
    let scanned = jsonl::read_records(path, |pos, bytes| {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let message = match context_message(&v, pos) {
            Some(m) => m,
            None if kit::str_field(&v, "role").is_some() => return Ok(()),
            None => {
                // Shown where it stands, counted in one warning.
                unparsed.note(&format!("{name} records"), "no role", || {
                    format!("line {}", pos.line)
                });
                Message {
                    role: Role::System,
                    kind: MessageKind::Context,
                    label: Some("unparsed record".into()),
                    content: String::from_utf8_lossy(bytes).into_owned(),
                    native_id: Some(pos.id()),
                    ..Message::default()
                }
            }
        };
        out.push(Ctx { message });
        Ok(())
    });
    s.warnings.extend(unparsed.warnings());
    scanned.into_session(s);
    out
}

/// A context record as a message; `None` for bookkeeping (`_checkpoint`, `_usage`) and
/// records without a role.
fn context_message(v: &Value, pos: Pos) -> Option<Message> {
    let role = kit::str_field(v, "role")?;
    let native_id = Some(pos.id());
    let content = v.get("content").unwrap_or(&Value::Null);
    let (text, thinking) = parts(content);
    let m = match role {
        "_system_prompt" => Message {
            role: Role::System,
            kind: MessageKind::Context,
            label: Some("system prompt".into()),
            content: text,
            ..Message::default()
        },
        "_checkpoint" | "_usage" => return None,
        "user" => {
            let injected = text.trim_start().starts_with("<system>");
            Message {
                role: if injected { Role::System } else { Role::User },
                kind: if injected {
                    MessageKind::Context
                } else {
                    MessageKind::Normal
                },
                label: injected.then(|| "system".to_string()),
                content: text,
                thinking,
                ..Message::default()
            }
        }
        "assistant" => {
            let calls = v
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(tool_call).collect())
                .unwrap_or_default();
            Message {
                role: Role::Assistant,
                content: text,
                thinking,
                tool_calls: calls,
                ..Message::default()
            }
        }
        "tool" => {
            let call_id = kit::str_field(v, "tool_call_id").unwrap_or("").to_string();
            Message {
                role: Role::Tool,
                tool_result: Some(model::ToolResult {
                    tool_call_id: call_id,
                    tool_name: String::new(),
                    output: text,
                    is_error: false,
                }),
                ..Message::default()
            }
        }
        other => Message {
            role: Role::System,
            kind: MessageKind::Context,
            label: Some(other.to_string()),
            content: text,
            ..Message::default()
        },
    };
    Some(Message { native_id, ..m })
}

fn tool_call(c: &Value) -> ToolCall {
    let f = c.get("function").unwrap_or(&Value::Null);
    let args = kit::str_field(f, "arguments").unwrap_or("");
    ToolCall {
        tool_call_id: kit::str_field(c, "id").unwrap_or("").to_string(),
        tool_name: kit::str_field(f, "name").unwrap_or("").to_string(),
        input: match kit::json_text(args) {
            Ok(Some(v)) => v,
            _ => Value::String(args.to_string()),
        },
        ..ToolCall::default()
    }
}

/// Text and reasoning of a kosong `content`: a string, or parts (`text`, `think`,
/// `image_url`, `audio_url`, `video_url`).
fn parts(content: &Value) -> (String, Option<String>) {
    let mut text: Vec<String> = Vec::new();
    let mut think: Vec<String> = Vec::new();
    match content {
        Value::String(s) => text.push(s.clone()),
        Value::Array(items) => {
            for p in items {
                match kit::str_field(p, "type").unwrap_or("") {
                    "text" => text.push(kit::str_field(p, "text").unwrap_or("").to_string()),
                    "think" => match kit::str_field(p, "think") {
                        Some(t) if !t.is_empty() => think.push(t.to_string()),
                        _ if p.get("encrypted").is_some_and(|e| !e.is_null()) => {
                            think.push(model::SEALED_THINKING.to_string())
                        }
                        _ => {}
                    },
                    "image_url" | "audio_url" | "video_url" => {
                        let kind = kit::str_field(p, "type")
                            .unwrap_or("")
                            .trim_end_matches("_url");
                        let url = kit::str_at(p, &[&format!("{kind}_url"), "url"]).unwrap_or("");
                        text.push(if url.starts_with("data:") {
                            kit::data_url_placeholder(url)
                        } else {
                            format!("[{kind}: {url}]")
                        });
                    }
                    _ => text.push(p.to_string()),
                }
            }
        }
        Value::Null => {}
        other => text.push(other.to_string()),
    }
    let thinking = (!think.is_empty()).then(|| think.join("\n\n"));
    (text.join("\n"), thinking)
}

// ---------------------------------------------------------------------------------------
// wire.jsonl

/// One API call as the wire records it: its time, the tool calls it made and its usage.
#[derive(Default, Debug)]
struct Step {
    time: Option<DateTime<Utc>>,
    calls: Vec<String>,
    usage: Option<(Option<String>, TokenUsage)>,
    /// What the UI showed of the step: reply text, reasoning, calls (arguments as
    /// streamed) and their results, for a step the context does not hold.
    text: Vec<String>,
    think: Vec<String>,
    args: Vec<(String, String, String)>,
    results: Vec<(String, String, bool)>,
}

impl Step {
    fn reply_text(&self) -> String {
        self.text.join("")
    }
    fn is_empty(&self) -> bool {
        self.text.iter().all(|t| t.trim().is_empty())
            && self.think.iter().all(|t| t.trim().is_empty())
            && self.args.is_empty()
            && self.results.is_empty()
    }
}

/// A turn's prompt and time.
#[derive(Debug)]
struct Turn {
    time: Option<DateTime<Utc>>,
    prompt: String,
}

#[derive(Default, Debug)]
struct Wire {
    turns: Vec<Turn>,
    steps: Vec<Step>,
    /// Subagent events, by the tool call that started them.
    subs: Vec<Group>,
}

/// The events of one subagent inside its parent's wire.
#[derive(Debug)]
struct Group {
    task: String,
    agent_id: Option<String>,
    prompt: Option<String>,
    steps: Vec<Step>,
}

fn read_wire(path: &Path, s: &mut Session) -> Wire {
    let mut w = Wire::default();
    if !path.exists() {
        return w;
    }
    s.source.paths.push(path.to_path_buf());
    let scanned = jsonl::read_records(path, |_, bytes| {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let time = v
            .get("timestamp")
            .and_then(Value::as_f64)
            .and_then(|t| DateTime::<Utc>::from_timestamp_millis((t * 1000.0) as i64));
        let Some(msg) = v.get("message") else {
            return Ok(());
        };
        let ty = kit::str_field(msg, "type").unwrap_or("");
        let payload = msg.get("payload").unwrap_or(&Value::Null);
        if ty == "SubagentEvent" {
            let task = kit::str_any(payload, &["parent_tool_call_id", "task_tool_call_id"])
                .unwrap_or("")
                .to_string();
            let gi = match w.subs.iter().position(|g| g.task == task) {
                Some(i) => i,
                None => {
                    w.subs.push(Group {
                        task,
                        agent_id: kit::str_field(payload, "agent_id").map(str::to_string),
                        prompt: None,
                        steps: Vec::new(),
                    });
                    w.subs.len() - 1
                }
            };
            let inner = payload.get("event").unwrap_or(&Value::Null);
            let g = &mut w.subs[gi];
            let mut turns = Vec::new();
            event(inner, time, &mut turns, &mut g.steps);
            if g.prompt.is_none() {
                g.prompt = turns.into_iter().next().map(|t| t.prompt);
            }
        } else {
            event(msg, time, &mut w.turns, &mut w.steps);
        }
        Ok(())
    });
    // The wire repeats the context; only its problems are reported.
    s.warnings.extend(scanned.warnings);
    // Kept beside the transcript (a wire line repeats the context, but may be all there is).
    if let Some((_, text)) = jsonl::unparsed_file(&scanned.unparsed) {
        s.warnings.push(format!(
            "{} wire.jsonl lines not read; their raw text is in {WIRE_UNPARSED}",
            scanned.unparsed.len()
        ));
        s.extra_files.push((WIRE_UNPARSED.to_string(), text));
    }
    w
}

fn event(msg: &Value, time: Option<DateTime<Utc>>, turns: &mut Vec<Turn>, steps: &mut Vec<Step>) {
    let payload = msg.get("payload").unwrap_or(&Value::Null);
    match kit::str_field(msg, "type").unwrap_or("") {
        "TurnBegin" | "SteerInput" => {
            let input = payload.get("user_input").unwrap_or(&Value::Null);
            turns.push(Turn {
                time,
                prompt: parts(input).0,
            });
        }
        "StepBegin" => steps.push(Step {
            time,
            ..Step::default()
        }),
        "ContentPart" => {
            if let Some(step) = steps.last_mut() {
                match kit::str_field(payload, "type") {
                    Some("text") => step
                        .text
                        .extend(kit::str_field(payload, "text").map(String::from)),
                    Some("think") => step
                        .think
                        .extend(kit::str_field(payload, "think").map(String::from)),
                    _ => step
                        .text
                        .push(parts(&Value::Array(vec![payload.clone()])).0),
                }
            }
        }
        "ToolCall" => {
            if let (Some(step), Some(id)) = (steps.last_mut(), kit::str_field(payload, "id")) {
                step.calls.push(id.to_string());
                let f = payload.get("function").unwrap_or(&Value::Null);
                step.args.push((
                    id.to_string(),
                    kit::str_field(f, "name").unwrap_or("").to_string(),
                    kit::str_field(f, "arguments").unwrap_or("").to_string(),
                ));
            }
        }
        "ToolCallPart" => {
            if let Some(a) = steps.last_mut().and_then(|s| s.args.last_mut()) {
                a.2.push_str(kit::str_field(payload, "arguments_part").unwrap_or(""));
            }
        }
        "ToolResult" => {
            let id = kit::str_field(payload, "tool_call_id").unwrap_or("");
            let rv = payload.get("return_value").unwrap_or(&Value::Null);
            let mut out = match rv.get("output") {
                Some(Value::String(t)) => t.clone(),
                Some(o @ Value::Array(_)) => parts(o).0,
                _ => String::new(),
            };
            if let Some(m) = kit::str_field(rv, "message").filter(|m| !m.is_empty()) {
                out = if out.is_empty() {
                    m.to_string()
                } else {
                    format!("{m}\n{out}")
                };
            }
            let is_error = rv.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            let owner = steps
                .iter_mut()
                .rev()
                .find(|s| s.calls.iter().any(|c| c == id));
            if let Some(step) = owner {
                step.results.push((id.to_string(), out, is_error));
            }
        }
        "StatusUpdate" => {
            let Some(u) = payload.get("token_usage").filter(|u| u.is_object()) else {
                return;
            };
            let usage = TokenUsage {
                input_tokens: kit::u64_field(u, "input_other"),
                output_tokens: kit::u64_field(u, "output"),
                cached_tokens: kit::u64_field(u, "input_cache_read"),
                cache_write_tokens: kit::u64_field(u, "input_cache_creation"),
                thinking_tokens: 0,
            };
            let id = kit::str_field(payload, "message_id").map(str::to_string);
            if steps.last().is_none_or(|s| s.usage.is_some()) {
                steps.push(Step {
                    time,
                    ..Step::default()
                });
            }
            if let Some(step) = steps.last_mut() {
                step.usage = Some((id, usage));
                step.time = time.or(step.time);
            }
        }
        _ => {}
    }
}

/// The wire's own steps and turns, and its subagent groups.
fn split_wire(w: Wire) -> ((Vec<Turn>, Vec<Step>), Vec<Group>) {
    ((w.turns, w.steps), w.subs)
}

// ---------------------------------------------------------------------------------------
// Joining the two logs

/// Push the context's messages with times and usage from the wire's turns and steps, and
/// what only the wire holds (a step or prompt the context lost) where its time puts it.
/// `earlier` (rotated contexts, shown as branches) only absorbs the steps it holds, so
/// they are not shown twice.
fn attach(
    b: &mut SessionBuilder,
    ctx: Vec<Ctx>,
    earlier: &[Message],
    wire: impl Into<WireParts>,
    seen: &mut HashSet<String>,
) {
    let WireParts { turns, steps } = wire.into();
    let mut msgs: Vec<Message> = ctx.into_iter().map(|c| c.message).collect();
    // Prompts: each context prompt takes the first unused turn with its text.
    let mut used = vec![false; turns.len()];
    for m in msgs.iter_mut() {
        if m.role == Role::User {
            if let Some(i) = (0..turns.len()).find(|&i| !used[i] && turns[i].prompt == m.content) {
                used[i] = true;
                m.timestamp = turns[i].time;
            }
        }
    }
    for m in earlier.iter().filter(|m| m.role == Role::User) {
        if let Some(i) = (0..turns.len()).find(|&i| !used[i] && turns[i].prompt == m.content) {
            used[i] = true;
        }
    }
    // Steps: by tool call id, then by text, then steps with nothing shown in order.
    let mut by_call: HashMap<&str, usize> = HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        for c in &s.calls {
            by_call.insert(c.as_str(), i);
        }
    }
    let mut placed = vec![false; steps.len()];
    let mut plain: Vec<usize> = Vec::new();
    let n_main = msgs.len();
    let mut all: Vec<Message> = msgs;
    all.extend(earlier.iter().cloned());
    for (mi, m) in all.iter_mut().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        let hit = m
            .tool_calls
            .iter()
            .find_map(|c| by_call.get(c.tool_call_id.as_str()).copied())
            .filter(|&i| !placed[i])
            .or_else(|| {
                let text = m.content.trim();
                let think = m.thinking.as_deref().unwrap_or("").trim();
                (0..steps.len()).find(|&i| {
                    !placed[i]
                        && steps[i].calls.is_empty()
                        && !steps[i].is_empty()
                        && steps[i].reply_text().trim() == text
                        && steps[i].think.join("\n\n").trim() == think
                })
            });
        match hit {
            Some(i) => {
                placed[i] = true;
                if mi < n_main {
                    put_step(m, &steps[i], seen);
                }
            }
            None => plain.push(mi),
        }
    }
    let free: Vec<usize> = (0..steps.len())
        .filter(|&i| !placed[i] && steps[i].is_empty())
        .collect();
    let mut free = free.into_iter();
    for mi in plain {
        if let Some(i) = free.next() {
            placed[i] = true;
            if mi < n_main {
                put_step(&mut all[mi], &steps[i], seen);
            }
        }
    }
    all.truncate(n_main);
    let mut msgs = all;
    // Tool results take the time of the step that made the call.
    let mut last_time = None;
    for m in msgs.iter_mut() {
        if m.timestamp.is_some() {
            last_time = m.timestamp;
        } else if let Some(r) = &m.tool_result {
            m.timestamp = by_call
                .get(r.tool_call_id.as_str())
                .and_then(|&i| steps[i].time)
                .or(last_time);
        }
    }
    // What only the wire holds, in time order.
    let mut extra: Vec<(Option<DateTime<Utc>>, Vec<Message>)> = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        if !used[i] && !t.prompt.trim().is_empty() {
            let m = Message {
                role: Role::User,
                content: t.prompt.clone(),
                timestamp: t.time,
                native_id: Some(format!("wire-turn-{}", i + 1)),
                ..Message::default()
            };
            extra.push((t.time, vec![m]));
        }
    }
    let mut spent = TokenUsage::default();
    let mut any = false;
    for (i, st) in steps.iter().enumerate() {
        if placed[i] {
            continue;
        }
        if st.is_empty() {
            if let Some(u) = fresh(st, seen) {
                spent.add(&u);
                any = true;
            }
            continue;
        }
        let mut m = Message {
            role: Role::Assistant,
            content: st.reply_text(),
            thinking: (!st.think.is_empty()).then(|| st.think.join("\n\n")),
            tool_calls: st
                .args
                .iter()
                .map(|(id, name, args)| ToolCall {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    input: match kit::json_text(args) {
                        Ok(Some(v)) => v,
                        _ => Value::String(args.clone()),
                    },
                    ..ToolCall::default()
                })
                .collect(),
            native_id: Some(format!("wire-step-{}", i + 1)),
            ..Message::default()
        };
        put_step(&mut m, st, seen);
        let mut chunk = vec![m];
        for (id, out, err) in &st.results {
            chunk.push(Message {
                role: Role::Tool,
                timestamp: st.time,
                tool_result: Some(model::ToolResult {
                    tool_call_id: id.clone(),
                    tool_name: String::new(),
                    output: out.clone(),
                    is_error: *err,
                }),
                ..Message::default()
            });
        }
        extra.push((st.time, chunk));
    }
    extra.sort_by_key(|e| e.0);
    let mut extra = extra.into_iter().peekable();
    let mut out: Vec<Message> = Vec::new();
    for m in msgs {
        if let Some(t) = m.timestamp {
            while extra.peek().is_some_and(|e| e.0.is_some_and(|et| et < t)) {
                out.extend(extra.next().map(|e| e.1).unwrap_or_default());
            }
        }
        out.push(m);
    }
    out.extend(extra.flat_map(|e| e.1));
    for m in out {
        if m.role == Role::Tool {
            if let Some(r) = m.tool_result {
                b.tool_result(&r.tool_call_id, None, r.output, r.is_error, m.timestamp);
                continue;
            }
        }
        b.push(m);
    }
    if any {
        b.push(Message {
            role: Role::System,
            kind: MessageKind::Event,
            content: "usage of API calls whose replies the context no longer holds".into(),
            token_usage: Some(spent),
            ..Message::default()
        });
    }
}

struct WireParts {
    turns: Vec<Turn>,
    steps: Vec<Step>,
}

impl From<(Vec<Turn>, Vec<Step>)> for WireParts {
    fn from((turns, steps): (Vec<Turn>, Vec<Step>)) -> WireParts {
        WireParts { turns, steps }
    }
}

impl From<Vec<Step>> for WireParts {
    fn from(steps: Vec<Step>) -> WireParts {
        WireParts {
            turns: Vec::new(),
            steps,
        }
    }
}

/// A step's usage the first time its `message_id` is seen.
fn fresh(s: &Step, seen: &mut HashSet<String>) -> Option<TokenUsage> {
    let (id, u) = s.usage.as_ref()?;
    match id {
        Some(id) if !seen.insert(id.clone()) => None,
        _ => Some(*u),
    }
}

fn put_step(m: &mut Message, s: &Step, seen: &mut HashSet<String>) {
    m.timestamp = m.timestamp.or(s.time);
    if let Some(u) = fresh(s, seen) {
        m.token_usage = Some(u);
        m.reply_id = s.usage.as_ref().and_then(|(id, _)| id.clone());
    }
}

fn unplaced_usage(steps: &[Step], seen: &mut HashSet<String>) -> Option<TokenUsage> {
    let mut total = TokenUsage::default();
    let mut any = false;
    for s in steps {
        if let Some(u) = fresh(s, seen) {
            total.add(&u);
            any = true;
        }
    }
    any.then_some(total)
}

/// The work-directory hash Kimi names a directory by: MD5, as lowercase hex.
fn md5_hex(input: &[u8]) -> String {
    use md5::{Digest, Md5};
    Md5::digest(input)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kimi rewrites `kimi.json` whenever a session starts: only the session whose work
    /// directory the rewrite changed gets a new version; the file is every session's source.
    #[test]
    fn a_metadata_rewrite_moves_only_the_version_of_the_session_it_changed() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path();
        let (a, b) = (md5_hex(b"/w/alpha"), md5_hex(b"/w/bravo"));
        for (hash, id) in [(&a, "a"), (&b, "b")] {
            let s = root.join("sessions").join(hash).join(id);
            std::fs::create_dir_all(&s).expect("mkdir");
            std::fs::write(
                s.join(CONTEXT),
                "{\"role\": \"user\", \"content\": \"hi\"}\n",
            )
            .expect("write");
        }
        let metadata = |dirs: serde_json::Value| {
            let v = serde_json::json!({ "work_dirs": dirs });
            std::fs::write(root.join(METADATA), v.to_string()).expect("kimi.json");
        };
        metadata(serde_json::json!([{"path": "/w/alpha", "last_session_id": "a"}]));
        let store = KimiStore::new(vec![Root::new(AGENT, root, "test")]);
        let mut listed = store.list();
        listed.sort_by(|x, y| x.id.cmp(&y.id));
        assert_eq!(listed.len(), 2);
        assert!(listed
            .iter()
            .all(|l| l.sources.last() == Some(&root.join(METADATA))));
        let refs: Vec<&Listed> = listed.iter().collect();
        let before = store.versions(&refs);
        assert!(before.iter().all(Option::is_some), "{before:?}");
        // The last session noted: nobody's work directory moves.
        metadata(serde_json::json!([{"path": "/w/alpha", "last_session_id": "a2"}]));
        assert_eq!(store.versions(&refs), before);
        // Bravo's work directory noted: only b's version moves.
        metadata(
            serde_json::json!([{"path": "/w/alpha", "last_session_id": "a2"},
                                    {"path": "/w/bravo", "last_session_id": "b"}]),
        );
        let after = store.versions(&refs);
        assert_eq!(after[0], before[0], "a's work directory is as it was");
        assert_ne!(after[1], before[1], "b's work directory appeared");
        assert_eq!(store.load(&listed[1]).cwd.as_deref(), Some("/w/bravo"));
    }

    #[test]
    fn md5_names_work_dirs_as_kimi_does() {
        // RFC 1321 test suite values.
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            md5_hex(
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890"
            ),
            "57edf4a22be3c955ac49da2e2107b67a"
        );
    }
}
