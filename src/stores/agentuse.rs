//! agentuse sessions: one directory of small JSON files per agent run.
//!
//! agentuse writes every record as its own pretty-printed JSON file, atomically (temp file then
//! rename), under `${XDG_DATA_HOME:-~/.local/share}/agentuse/project/<hash>/session/`
//! (older installs also have `project/global/session/`):
//!
//! ```text
//! <ULID>-<agent>/session.json                       run metadata (status, model, project, error)
//! <ULID>-<agent>/<msgULID>/message.json             one exchange: user prompt + assistant totals
//! <ULID>-<agent>/<msgULID>/part/<partULID>.json     text, reasoning, tool (call and result in one)…
//! <ULID>-<agent>/<msgULID>/artifact/tool-output-*   full tool outputs spilled out of parts
//! <ULID>-<agent>/subagent/<ULID>-<agent>/…          child runs, nested recursively
//! ```
//!
//! Design decisions and why:
//! - **Ids come from directory names.** A session directory is `<session.json id>-<agent>`, and
//!   ULIDs hold no `-`, so the prefix before the first `-` is the id without opening any file;
//!   listing costs one `readdir` per session plus `stat`s. `load` warns when `session.json`
//!   disagrees.
//! - **Versioning by directory mtimes.** Parts are created and replaced by rename, which
//!   changes the mtime of their `part/` directory, so the sources of a session are its
//!   directory, `session.json`, and each exchange's `message.json` and `part/` directory.
//!   A nested child's later changes reach the parent when the parent itself changes (the
//!   parent's `subagent__*` tool part completes after its child).
//! - **Subagents are not top-level.** Children live inside their parent's directory, so they
//!   become [`Subagent`]s carrying the child session, linked to the spawning tool call by the
//!   `subagent_wait` payload or by the `subagent__<name>` tool name.
//! - **Parts in ULID order.** Part file names are ULIDs (time-sortable). Assistant text and
//!   reasoning that follow a tool call start a new assistant message, so the order of words and
//!   calls survives in the transcript.
//! - **Tokens are not double counted**: `message.json` totals win; `step-finish` parts are
//!   summed only when the exchange has no totals.
//! - **Corrupt files cost a warning**, as agentuse's own scans skip them: a bad part is
//!   skipped, a missing `message.json` loses the prompt but keeps the parts.

use super::{kit, parse_time, Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    placeholder, unified_id, Agent, Message, MessageKind, Role, Session, Subagent, TokenUsage,
    ToolCall,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Larger JSON files are not parsed (agentuse clamps tool outputs far below this).
const MAX_JSON_BYTES: u64 = 64 << 20;
/// Spilled tool outputs larger than this are not inlined.
const MAX_ARTIFACT_BYTES: u64 = 16 << 20;
/// Subagents nested deeper than this are not loaded.
const MAX_NESTING: usize = 8;

pub fn candidates(env: &Env) -> Vec<Root> {
    let how = if env.var("XDG_DATA_HOME").is_some() {
        "XDG_DATA_HOME"
    } else {
        "default"
    };
    vec![Root::new(
        Agent::Agentuse,
        env.xdg_data_home().join("agentuse").join("project"),
        how,
    )]
}

pub struct AgentuseStore {
    base: Base,
}

impl AgentuseStore {
    pub fn new(roots: Vec<Root>) -> AgentuseStore {
        AgentuseStore {
            base: Base::new(Agent::Agentuse, roots),
        }
    }
}

impl Store for AgentuseStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for dir in session_dirs(&root.path) {
                let name = file_name(&dir);
                out.push(Listed {
                    id: id_from_dir_name(&name),
                    sources: session_sources(&dir),
                    path: dir,
                    key: None,
                    root: i,
                });
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        load_session(&listed.path, &listed.id, None, 0).session
    }

    /// What [`session_dirs`] reads: each root (a `session.json`, a `session/` container or
    /// session and project directories appearing in it), every project directory it looks
    /// into and its `session/` container, and each directory a container or root holds
    /// that was looked into for a `session.json` and is not a session (its entries, and
    /// that file, which may be a link). A listed session's directory, `session.json`,
    /// exchanges and nested runs are its sources. A root that is not a directory is
    /// stamped as a file; one gone since it was opened leaves the store without a glance.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            let root = &root.path;
            if !root.is_dir() {
                if !root.exists() {
                    return None;
                }
                g.files.push(root.clone());
                continue;
            }
            g.dirs.push(root.clone());
            if root.join("session.json").is_file() {
                continue;
            }
            let container = root.join("session");
            if container.is_dir() {
                not_sessions(&container, &mut g);
                g.dirs.push(container);
                continue;
            }
            if not_sessions(root, &mut g) {
                continue;
            }
            for project in subdirs(root) {
                let container = project.join("session");
                if container.is_dir() {
                    not_sessions(&container, &mut g);
                    g.dirs.push(container);
                }
            }
        }
        Some(g)
    }
}

/// Every top-level session directory under a root. A root may be the `project/` directory
/// (the default), one `<hash>/` project, a `session/` container or one session directory.
pub fn session_dirs(root: &Path) -> Vec<PathBuf> {
    if root.join("session.json").is_file() {
        return vec![root.to_path_buf()];
    }
    let mut out = Vec::new();
    if root.join("session").is_dir() {
        out.extend(sessions_in(&root.join("session")));
        return out;
    }
    let own = sessions_in(root);
    if !own.is_empty() {
        return own;
    }
    for project in subdirs(root) {
        let container = project.join("session");
        if container.is_dir() {
            out.extend(sessions_in(&container));
        }
    }
    out
}

/// Session directories directly inside a `session/` container.
fn sessions_in(container: &Path) -> Vec<PathBuf> {
    subdirs(container)
        .into_iter()
        .filter(|d| is_session_dir(d))
        .collect()
}

/// Whether a directory of a container is a session: named by a ULID, or holding a
/// `session.json`.
fn is_session_dir(d: &Path) -> bool {
    looks_like_session_name(&file_name(d)) || d.join("session.json").is_file()
}

/// For a glance: the directories of `container` that [`sessions_in`] looked into and
/// found no session in, with the `session.json` it looked for (a session directory is
/// stamped as its own source). Whether `container` held a session.
fn not_sessions(container: &Path, g: &mut Glance) -> bool {
    let mut any = false;
    for d in subdirs(container) {
        if is_session_dir(&d) {
            any = true;
        } else {
            g.files.push(d.join("session.json"));
            g.dirs.push(d);
        }
    }
    any
}

use super::kit::subdirs;

/// A directory's name as an id: non-UTF-8 bytes kept as `\xNN` (see `names::os_id`).
fn file_name(p: &Path) -> String {
    p.file_name().map(crate::names::os_id).unwrap_or_default()
}

fn is_ulid(s: &str) -> bool {
    s.len() == 26
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b)))
}

fn looks_like_session_name(name: &str) -> bool {
    name.split('-').next().is_some_and(is_ulid)
}

/// The session id a directory name stands for: its ULID prefix, else the whole name.
pub fn id_from_dir_name(name: &str) -> String {
    match name.split_once('-') {
        Some((ulid, _)) if is_ulid(ulid) => ulid.to_string(),
        _ => name.to_string(),
    }
}

/// Exchange directories of a session, in ULID order.
fn message_dirs(session_dir: &Path) -> Vec<PathBuf> {
    subdirs(session_dir)
        .into_iter()
        .filter(|d| file_name(d) != "subagent")
        .collect()
}

fn session_sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf(), dir.join("session.json")];
    for m in message_dirs(dir) {
        out.push(m.join("message.json"));
        out.push(m.join("part"));
    }
    // Nested runs render inside this session, so their files version it too (each
    // level's own directories, since a directory's fingerprint sees only its entries).
    let sub = dir.join("subagent");
    if sub.is_dir() {
        out.push(sub.clone());
        for child in subdirs(&sub) {
            out.extend(session_sources(&child));
        }
    }
    out
}

/// agentuse's `sanitizeAgentName`: lowercase, `[a-z0-9-_]`, single hyphens, `default` if empty.
fn sanitize_agent_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.to_lowercase().chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_' {
            c
        } else {
            '-'
        };
        if c == '-' && out.ends_with('-') {
            continue;
        }
        out.push(c);
    }
    let t = out.trim_matches('-');
    if t.is_empty() {
        "default".into()
    } else {
        t.into()
    }
}

/// Read and parse one JSON file; the error names it by `label`.
fn read_json(path: &Path, label: &str) -> Result<Value, String> {
    super::kit::read_json(path, label, MAX_JSON_BYTES)
}

fn rel(base: &Path, p: &Path) -> String {
    p.strip_prefix(base).unwrap_or(p).display().to_string()
}

use super::kit::{str_at, u64_at, value_at as at};

fn non_empty(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

/// `{input, output, reasoning, cache{read, write}}` as agentuse stores token counts.
fn usage_of(tokens: &Value) -> TokenUsage {
    TokenUsage {
        input_tokens: u64_at(tokens, &["input"]),
        output_tokens: u64_at(tokens, &["output"]),
        thinking_tokens: u64_at(tokens, &["reasoning"]),
        cached_tokens: u64_at(tokens, &["cache", "read"]),
        cache_write_tokens: u64_at(tokens, &["cache", "write"]),
    }
}

/// A session plus what its parent needs to link it.
struct Loaded {
    session: Session,
    /// `(sanitized subagent name, tool call id)` of every `subagent__*` call, in order.
    subagent_calls: Vec<(String, String)>,
    /// `(child session id, tool call id)` from `subagent_wait` payloads.
    child_links: Vec<(String, String)>,
    description: Option<String>,
    /// Files and parts that could not be parsed, one warning per kind at the end.
    unparsed: kit::Unparsed,
}

/// The text of a file that is not JSON, to show it as stored (`None` when it cannot be read
/// or is too large to hold).
fn raw_text(path: &Path) -> Option<String> {
    let len = std::fs::metadata(path).ok()?.len();
    if len > MAX_JSON_BYTES {
        return None;
    }
    kit::read_file(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// A file of `what` (`message.json files`, `part files`) that [`read_json`] refused: counted
/// when it is not JSON, with its text as the returned context message; any other failure
/// (unreadable, too large) stays the warning it was.
fn refused(
    out: &mut Loaded,
    what: &str,
    path: &Path,
    error: String,
    time: Option<chrono::DateTime<chrono::Utc>>,
) -> Option<Message> {
    let raw = error
        .contains(": invalid JSON: ")
        .then(|| raw_text(path))
        .flatten();
    let Some(raw) = raw else {
        out.session.warnings.push(error);
        return None;
    };
    out.unparsed.note(what, "invalid JSON", || error);
    Some(unparsed_message(file_name(path), raw, time))
}

/// Text sessfs could not parse, shown as stored, collapsed (see [`kit::Unparsed`]).
fn unparsed_message(
    what: String,
    raw: String,
    time: Option<chrono::DateTime<chrono::Utc>>,
) -> Message {
    Message {
        role: Role::System,
        kind: MessageKind::Context,
        label: Some(format!("unparsed {what}")),
        content: raw,
        timestamp: time,
        ..Message::default()
    }
}

fn load_session(dir: &Path, id: &str, parent: Option<String>, depth: usize) -> Loaded {
    let mut s = Session::new(Agent::Agentuse, id);
    s.parent = parent;
    s.source.format = "agentuse-json".into();
    s.source.paths = vec![dir.join("session.json")];
    let mut out = Loaded {
        session: s,
        subagent_calls: Vec::new(),
        child_links: Vec::new(),
        description: None,
        unparsed: kit::Unparsed::default(),
    };

    let info = match read_json(&dir.join("session.json"), "session.json") {
        Ok(v) if v.is_object() => Some(v),
        Ok(_) => {
            out.session
                .warnings
                .push("session.json: not a JSON object".into());
            None
        }
        Err(e) => {
            out.session.warnings.push(e);
            None
        }
    };
    let default_model = info
        .as_ref()
        .and_then(|i| non_empty(str_at(i, &["model"])))
        .map(str::to_string);
    if let Some(info) = &info {
        apply_info(&mut out, info);
    }

    for md in message_dirs(dir) {
        load_exchange(dir, &md, default_model.as_deref(), &mut out);
    }

    if let Some(err) = info.as_ref().and_then(|i| i.get("error")) {
        out.session.messages.push(session_error_message(err));
    }

    let sub = dir.join("subagent");
    if sub.is_dir() {
        if depth >= MAX_NESTING {
            out.session.warnings.push(format!(
                "subagents nested deeper than {MAX_NESTING} levels not loaded"
            ));
        } else {
            load_children(&sub, depth, &mut out);
        }
    }
    let w = out.unparsed.warnings();
    out.session.warnings.extend(w);
    out
}

fn apply_info(out: &mut Loaded, info: &Value) {
    let s = &mut out.session;
    if let Some(real) = str_at(info, &["id"]) {
        if real != s.id {
            s.warnings.push(format!(
                "session.json id {real} differs from the directory name; the directory id is used"
            ));
        }
    }
    if s.parent.is_none() {
        if let Some(p) = non_empty(str_at(info, &["parentSessionID"])) {
            s.parent = Some(unified_id(Agent::Agentuse, p));
        }
    }
    s.title = non_empty(str_at(info, &["agent", "name"]))
        .or_else(|| non_empty(str_at(info, &["agent", "id"])))
        .map(str::to_string);
    out.description = non_empty(str_at(info, &["agent", "description"])).map(str::to_string);
    s.created_at = at(info, &["time", "created"]).and_then(parse_time);
    s.updated_at = at(info, &["time", "updated"]).and_then(parse_time);
    s.cwd = non_empty(str_at(info, &["project", "cwd"]))
        .or_else(|| non_empty(str_at(info, &["project", "root"])))
        .map(str::to_string);
    s.source.format_version = non_empty(str_at(info, &["version"])).map(str::to_string);
    if let Some(st) = non_empty(str_at(info, &["status"])) {
        s.tags.push(format!("status:{st}"));
    }
    if let Some(t) = non_empty(str_at(info, &["trigger"])) {
        s.tags.push(format!("trigger:{t}"));
    }
    if let Some(a) = non_empty(str_at(info, &["agent", "id"])) {
        s.tags.push(format!("agent:{a}"));
    }
    if info.get("mock").and_then(Value::as_bool) == Some(true) {
        s.tags.push("mock".into());
    }
}

/// A failed run: the error is part of the story, so it is a message, not a warning.
fn session_error_message(err: &Value) -> Message {
    let mut text = String::from("Session failed");
    if let Some(code) = non_empty(str_at(err, &["code"])) {
        text.push_str(&format!(" ({code})"));
    }
    text.push_str(": ");
    text.push_str(non_empty(str_at(err, &["message"])).unwrap_or("unknown error"));
    if let Some(code) = at(err, &["statusCode"]).and_then(Value::as_u64) {
        text.push_str(&format!("\nHTTP status: {code}"));
    }
    if let Some(url) = non_empty(str_at(err, &["url"])) {
        text.push_str(&format!("\nURL: {url}"));
    }
    if let Some(d) = non_empty(str_at(err, &["detail"])) {
        text.push_str("\n\n");
        text.push_str(d);
    }
    Message {
        role: Role::System,
        content: text,
        timestamp: err.get("time").and_then(parse_time),
        ..Message::default()
    }
}

/// The messages one exchange directory yields, built part by part.
struct Exchange {
    msg_id: String,
    model: Option<String>,
    done: Vec<Message>,
    cur: Option<Message>,
    step_usage: TokenUsage,
    step_cost: f64,
    fallback_time: Option<chrono::DateTime<chrono::Utc>>,
}

impl Exchange {
    fn flush(&mut self) {
        if let Some(m) = self.cur.take() {
            self.done.push(m);
        }
    }

    /// The open assistant message; `after_tools` false starts a new one when the open one
    /// already holds tool calls (text after a call is a new turn of the loop).
    fn assistant(
        &mut self,
        after_tools: bool,
        time: Option<chrono::DateTime<chrono::Utc>>,
    ) -> &mut Message {
        if !after_tools && self.cur.as_ref().is_some_and(|m| !m.tool_calls.is_empty()) {
            self.flush();
        }
        let model = self.model.clone();
        let native = self.msg_id.clone();
        let fallback = self.fallback_time;
        self.cur.get_or_insert_with(|| Message {
            role: Role::Assistant,
            timestamp: time.or(fallback),
            model,
            native_id: Some(native),
            ..Message::default()
        })
    }

    fn side(
        &mut self,
        role: Role,
        kind: MessageKind,
        content: String,
        time: Option<chrono::DateTime<chrono::Utc>>,
    ) {
        self.flush();
        self.done.push(Message {
            role,
            kind,
            content,
            timestamp: time.or(self.fallback_time),
            native_id: Some(self.msg_id.clone()),
            ..Message::default()
        });
    }
}

fn append_text(buf: &mut String, text: &str) {
    if !buf.is_empty() {
        buf.push_str("\n\n");
    }
    buf.push_str(text);
}

fn load_exchange(session_dir: &Path, md: &Path, default_model: Option<&str>, out: &mut Loaded) {
    let msg_id = file_name(md);
    let label = rel(session_dir, &md.join("message.json"));
    let msg = if md.join("message.json").exists() {
        match read_json(&md.join("message.json"), &label) {
            Ok(v) => Some(v),
            Err(e) => {
                let path = md.join("message.json");
                if let Some(m) = refused(out, "message.json files", &path, e, None) {
                    out.session.messages.push(m);
                }
                None
            }
        }
    } else {
        out.session.warnings.push(format!(
            "{label}: missing; the prompt of this exchange is lost"
        ));
        None
    };
    let created = msg
        .as_ref()
        .and_then(|m| at(m, &["time", "created"]))
        .and_then(parse_time);
    let model = msg
        .as_ref()
        .and_then(|m| non_empty(str_at(m, &["assistant", "modelID"])))
        .or(default_model)
        .map(str::to_string);

    if let Some(m) = &msg {
        let mut prompt = String::new();
        if let Some(t) = non_empty(str_at(m, &["user", "prompt", "task"])) {
            append_text(&mut prompt, t);
        }
        if let Some(u) = non_empty(str_at(m, &["user", "prompt", "user"])) {
            append_text(&mut prompt, u);
        }
        if !prompt.is_empty() {
            out.session.messages.push(Message {
                role: Role::User,
                content: prompt,
                timestamp: created,
                native_id: Some(msg_id.clone()),
                ..Message::default()
            });
        }
    }

    let mut ex = Exchange {
        msg_id: msg_id.clone(),
        model,
        done: Vec::new(),
        cur: None,
        step_usage: TokenUsage::default(),
        step_cost: 0.0,
        fallback_time: created,
    };
    for part_path in part_files(&md.join("part")) {
        let label = rel(session_dir, &part_path);
        match read_json(&part_path, &label) {
            Ok(part) => apply_part(&part, md, &label, &mut ex, out),
            Err(e) => {
                if let Some(m) = refused(out, "part files", &part_path, e, ex.fallback_time) {
                    ex.flush();
                    ex.done.push(m);
                }
            }
        }
    }
    ex.flush();

    // Totals: message.json when it has any, else the sum of step-finish parts.
    let (usage, cost) = match &msg {
        Some(m) => {
            let u = at(m, &["assistant", "tokens"])
                .map(usage_of)
                .unwrap_or_default();
            let c = at(m, &["assistant", "cost"])
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            if u.is_zero() && c == 0.0 {
                (ex.step_usage, ex.step_cost)
            } else {
                (u, c)
            }
        }
        None => (ex.step_usage, ex.step_cost),
    };
    if !usage.is_zero() || cost > 0.0 {
        let idx = ex.done.iter().rposition(|m| m.role == Role::Assistant);
        let target = match idx {
            Some(i) => &mut ex.done[i],
            None => {
                let t = msg
                    .as_ref()
                    .and_then(|m| at(m, &["time", "completed"]))
                    .and_then(parse_time)
                    .or(created);
                ex.done.push(Message {
                    role: Role::Assistant,
                    timestamp: t,
                    model: ex.model.clone(),
                    native_id: Some(msg_id.clone()),
                    ..Message::default()
                });
                let last = ex.done.len() - 1;
                &mut ex.done[last]
            }
        };
        if !usage.is_zero() {
            target.token_usage = Some(usage);
        }
        if cost > 0.0 {
            target.cost = Some(cost);
        }
    }

    if let Some(err) = msg.as_ref().and_then(|m| at(m, &["assistant", "error"])) {
        let mut text = String::from("Assistant error");
        if let Some(t) = non_empty(str_at(err, &["type"])) {
            text.push_str(&format!(" ({t})"));
        }
        text.push_str(": ");
        text.push_str(non_empty(str_at(err, &["message"])).unwrap_or("unknown error"));
        ex.side(Role::System, MessageKind::Normal, text, None);
    }
    out.session.messages.append(&mut ex.done);
}

/// `*.json` files of a `part/` directory, sorted by name (part ULIDs sort by time).
fn part_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    out
}

fn part_time(part: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    at(part, &["time", "start"])
        .and_then(parse_time)
        .or_else(|| at(part, &["state", "time", "start"]).and_then(parse_time))
}

fn apply_part(part: &Value, md: &Path, label: &str, ex: &mut Exchange, out: &mut Loaded) {
    let time = part_time(part);
    let ty = str_at(part, &["type"]).unwrap_or("");
    match ty {
        "text" => {
            let text = str_at(part, &["text"]).unwrap_or("");
            if str_at(part, &["role"]) == Some("user") {
                ex.side(Role::User, MessageKind::Normal, text.to_string(), time);
            } else if !text.trim().is_empty() {
                append_text(&mut ex.assistant(false, time).content, text);
            }
        }
        "reasoning" => {
            let text = str_at(part, &["text"]).unwrap_or("");
            if !text.trim().is_empty() {
                let m = ex.assistant(false, time);
                let mut t = m.thinking.take().unwrap_or_default();
                append_text(&mut t, text);
                m.thinking = Some(t);
            }
        }
        "tool" => {
            let call = tool_call(part, md, label, out);
            ex.assistant(true, time).tool_calls.push(call);
        }
        "file" => {
            let mime = non_empty(str_at(part, &["mime"]));
            let size = str_at(part, &["url"])
                .and_then(|u| u.strip_prefix("data:"))
                .and_then(|u| u.split_once(";base64,"))
                .map(|(_, b64)| crate::model::base64_decoded_len(b64));
            let kind = if mime.is_some_and(|m| m.starts_with("image/")) {
                "image"
            } else {
                "file"
            };
            let mut text = placeholder(kind, mime, size);
            if let Some(name) = non_empty(str_at(part, &["filename"]))
                .or_else(|| non_empty(str_at(part, &["source", "path"])))
            {
                text.push(' ');
                text.push_str(name);
            }
            append_text(&mut ex.assistant(false, time).content, &text);
        }
        "agent" => {
            let name = str_at(part, &["name"]).unwrap_or("?");
            append_text(
                &mut ex.assistant(false, time).content,
                &format!("[agent: {name}]"),
            );
        }
        "step-start" => ex.flush(),
        "step-finish" => {
            if let Some(t) = part.get("tokens") {
                ex.step_usage.add(&usage_of(t));
            }
            ex.step_cost += part.get("cost").and_then(Value::as_f64).unwrap_or(0.0);
            ex.flush();
        }
        "snapshot" => {}
        "patch" => {
            let files: Vec<&str> = part
                .get("files")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let hash = str_at(part, &["hash"]).unwrap_or("?");
            ex.side(
                Role::System,
                MessageKind::Event,
                format!("[patch {hash}: {}]", files.join(", ")),
                time,
            );
        }
        "compaction" => {
            let before = u64_at(part, &["tokensBefore"]);
            let after = u64_at(part, &["tokensAfter"]);
            let reason = str_at(part, &["reason"]).unwrap_or("limit");
            let text = format!(
                "[context compacted ({reason}): {before} -> {after} tokens, {} -> {} messages]",
                u64_at(part, &["messagesBefore"]),
                u64_at(part, &["messagesAfter"])
            );
            ex.side(Role::System, MessageKind::CompactionSummary, text, time);
        }
        "learning" => {
            let status = str_at(part, &["status"]).unwrap_or("?");
            let mut text = format!("[learning {status}: {} captured]", u64_at(part, &["count"]));
            if let Some(titles) = part.get("titles").and_then(Value::as_array) {
                for t in titles.iter().filter_map(Value::as_str) {
                    text.push_str("\n- ");
                    text.push_str(t);
                }
            }
            if let Some(d) = non_empty(str_at(part, &["detail"])) {
                text.push('\n');
                text.push_str(d);
            }
            ex.side(Role::System, MessageKind::Event, text, time);
        }
        "error" => {
            let mut text = String::from("Error");
            if let Some(src) = non_empty(str_at(part, &["source"])) {
                text.push_str(&format!(" in {src}"));
            }
            if let Some(code) = non_empty(str_at(part, &["code"])) {
                text.push_str(&format!(" ({code})"));
            }
            if let Some(sc) = part.get("statusCode").and_then(Value::as_u64) {
                text.push_str(&format!(" HTTP {sc}"));
            }
            text.push_str(": ");
            text.push_str(str_at(part, &["message"]).unwrap_or("unknown error"));
            if let Some(d) = non_empty(str_at(part, &["detail"])) {
                text.push_str("\n\n");
                text.push_str(d);
            }
            ex.side(Role::System, MessageKind::Normal, text, time);
        }
        "log" => {
            // Debug and info lines are the CLI's chatter; warnings and errors are kept.
            let level = str_at(part, &["level"]).unwrap_or("info");
            if matches!(level, "warn" | "error" | "system") {
                let msg = str_at(part, &["message"]).unwrap_or("");
                ex.side(
                    Role::System,
                    MessageKind::Event,
                    format!("[log {level}] {msg}"),
                    time,
                );
            }
        }
        other => {
            out.unparsed.note(
                "part files",
                &format!("unknown part type {other:?}"),
                || label.to_string(),
            );
            // Shown as stored when it holds anything besides its type and ids.
            let bare = part.as_object().is_some_and(|o| {
                o.keys()
                    .all(|k| matches!(k.as_str(), "type" | "id" | "messageID" | "sessionID"))
            });
            if !bare {
                ex.flush();
                let m =
                    unparsed_message("part".into(), part.to_string(), time.or(ex.fallback_time));
                ex.done.push(m);
            }
        }
    }
}

/// A `tool` part: call and result in one record, so [`ToolCall::output`] is set.
fn tool_call(part: &Value, md: &Path, label: &str, out: &mut Loaded) -> ToolCall {
    let id = str_at(part, &["callID"])
        .or_else(|| str_at(part, &["id"]))
        .unwrap_or("")
        .to_string();
    let name = str_at(part, &["tool"]).unwrap_or("tool").to_string();
    let state = part.get("state").cloned().unwrap_or(Value::Null);
    let status = str_at(&state, &["status"]).unwrap_or("");
    let mut call = ToolCall {
        tool_call_id: id.clone(),
        tool_name: name.clone(),
        input: state.get("input").cloned().unwrap_or(Value::Null),
        ..ToolCall::default()
    };
    match status {
        "completed" => {
            call.output = Some(value_text(state.get("output").unwrap_or(&Value::Null)));
            call.is_error = Some(false);
        }
        "error" => {
            call.output = Some(value_text(state.get("error").unwrap_or(&Value::Null)));
            call.is_error = Some(true);
        }
        _ => {}
    }
    let start = u64_at(&state, &["time", "start"]);
    let end = u64_at(&state, &["time", "end"]);
    if start > 0 && end >= start {
        call.duration_ms = Some(end - start);
    }
    if call.output.is_some() {
        if let Some(file) = artifact_ref(&state) {
            match read_artifact(md, &file) {
                Ok(full) => call.output = Some(full),
                Err(e) => out.session.warnings.push(format!(
                    "{label}: spilled output {file} not read ({e}); the truncated output is shown"
                )),
            }
        }
    }
    if let Some(child) = str_at(&state, &["resumePayload", "childSessionID"]) {
        out.child_links.push((child.to_string(), id.clone()));
    }
    if let Some(sub) = name.strip_prefix("subagent__") {
        out.subagent_calls.push((sanitize_agent_name(sub), id));
    }
    call
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// The file name of a spilled full output, from the three places agentuse records it:
/// `state.metadata.fullOutputArtifact`, `state.output.metadata.fullOutputArtifact`, or the
/// `[Full tool output saved to session artifact: <path> (<n> bytes).]` note in text output.
fn artifact_ref(state: &Value) -> Option<String> {
    let from_obj = |v: Option<&Value>| -> Option<String> {
        let a = v?;
        if str_at(a, &["kind"]) != Some("tool-output") {
            return None;
        }
        str_at(a, &["path"]).map(str::to_string)
    };
    let path = from_obj(at(state, &["metadata", "fullOutputArtifact"]))
        .or_else(|| from_obj(at(state, &["output", "metadata", "fullOutputArtifact"])))
        .or_else(|| {
            let text = state.get("output").and_then(|o| {
                o.as_str()
                    .or_else(|| o.get("output").and_then(Value::as_str))
            })?;
            let lower = text.to_ascii_lowercase();
            let key = "output saved to session artifact:";
            let i = lower.find(key)? + key.len();
            let rest = text.get(i..)?.trim_start();
            let end = rest
                .find(|c: char| c.is_whitespace() || c == ')')
                .unwrap_or(rest.len());
            Some(rest[..end].trim_end_matches('.').to_string())
        })?;
    // Only the file name is trusted: the file lives in this exchange's `artifact/`.
    Path::new(&path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tool-output-"))
}

fn read_artifact(md: &Path, file: &str) -> Result<String, String> {
    let path = md.join("artifact").join(file);
    let meta = std::fs::metadata(&path).map_err(|e| e.to_string())?;
    if meta.len() > MAX_ARTIFACT_BYTES {
        return Err(format!("{} bytes, too large", meta.len()));
    }
    let bytes = super::kit::read_file(&path).map_err(|e| e.to_string())?;
    if file.ends_with(".json") {
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("invalid JSON: {e}"))?;
        Ok(value_text(v.get("output").unwrap_or(&v)))
    } else {
        let text = String::from_utf8_lossy(&bytes);
        // Streamed artifacts open with a `# AgentUse Tool Output Artifact` header block.
        let body = if text.starts_with("# AgentUse Tool Output Artifact") {
            text.split_once("\n\n").map_or("", |(_, b)| b)
        } else {
            &text
        };
        Ok(body.to_string())
    }
}

fn load_children(sub: &Path, depth: usize, out: &mut Loaded) {
    let parent_uid = out.session.unified_id();
    let mut used: Vec<bool> = vec![false; out.subagent_calls.len()];
    for child_dir in subdirs(sub) {
        let name = file_name(&child_dir);
        let child_id = id_from_dir_name(&name);
        let child = load_session(&child_dir, &child_id, Some(parent_uid.clone()), depth + 1);
        let suffix = name.split_once('-').map_or("", |(_, s)| s).to_string();
        let mut call = out
            .child_links
            .iter()
            .find(|(c, _)| *c == child_id)
            .map(|(_, t)| t.clone());
        if call.is_none() {
            let hit = out
                .subagent_calls
                .iter()
                .enumerate()
                .position(|(i, (n, _))| {
                    !used[i] && (suffix == *n || suffix.ends_with(&format!("-{n}")))
                });
            if let Some(i) = hit {
                used[i] = true;
                call = Some(out.subagent_calls[i].1.clone());
            }
        }
        out.session.subagents.push(Subagent {
            name,
            unified_id: None,
            description: child.description.clone(),
            tool_call_id: call,
            session: Some(Box::new(child.session)),
        });
    }
}

#[cfg(test)]
mod tests;
