//! Mux (coder/mux, first cmux, now renamed Xum): one directory per workspace under
//! `~/.mux/sessions/`, each chat an append-mostly JSONL of AI SDK UI messages.
//!
//! Learnt from Mux's own source, github.com/coder/mux at commit
//! `f2160b194cc458a220103e288ea89f5d137b5367`: `src/common/constants/paths.ts` (the home:
//! `$XUM_ROOT`, else `$MUX_ROOT`, else `~/.xum`, falling back to a leftover `~/.mux` or
//! `~/.cmux`; sessions in `<home>/sessions/<workspace id>/`; `chat.jsonl`,
//! `chat-archive.jsonl`), `src/common/compat/legacyMux.ts` and `xumEnv.ts` (the old names),
//! `src/node/services/historyService.ts` (one `JSON.stringify({...message, workspaceId})`
//! per line, appended; a streamed reply rewrites its placeholder row in place; at a
//! compaction boundary the rows before it move to `chat-archive.jsonl`, full history being
//! the archive then `chat.jsonl`; `partial.json` is the reply still streaming, committed
//! over the row of the same `historySequence` when it has more parts, dropped when stale),
//! `src/node/utils/messages/legacy.ts` (`cmuxMetadata`, `idleCompacted`),
//! `src/common/types/message.ts` and `src/common/orpc/schemas/message.ts` (`MuxMessage`:
//! `{id, role, parts, metadata}`; parts `text`, `reasoning`, `file`, `dynamic-tool
//! {toolCallId, toolName, input, state, output, nestedCalls}`; `MuxMetadata`: `model`,
//! `timestamp`, `usage`, `providerMetadata`, `toolModelUsages`, `compacted`,
//! `compactionBoundary`, `contextBoundaryKind`, `synthetic`, `partial`, `error`,
//! `muxMetadata {type}`), `src/common/utils/tokens/displayUsage.ts` (AI SDK usage counts
//! cache reads and writes in `inputTokens` and reasoning in `outputTokens`; cache writes are
//! `providerMetadata.anthropic.cacheCreationInputTokens`), `src/common/schemas/project.ts`
//! and `src/node/config.ts` (`config.json`'s `projects`: `[project path, {workspaces: [{id,
//! path, name, title, createdAt, parentWorkspaceId}]}]` pairs; the legacy per-session
//! `metadata.json`), `src/node/services/workspaceService.ts` (a finished sub-agent's chat
//! kept under its parent's `subagent-transcripts/<child id>/`) and
//! `src/browser/utils/messages/displayedMessageBuilder.ts` (a tool failed when its output
//! says `success: false` or holds an `error`).
//!
//! **Where.** `$XUM_ROOT/sessions` or `$MUX_ROOT/sessions` when set, else every one of
//! `~/.xum/sessions`, `~/.mux/sessions` and `~/.cmux/sessions` (a workspace found in two is
//! read from the first); a `--store` path may be the home or its `sessions`. Development
//! homes (`~/.xum-dev`, `~/.mux-dev`) are given with `--store`. Beside `sessions/` the home
//! keeps `providers.jsonc` and `secrets.json` (API keys): never opened. `config.json` is
//! read for its `projects` list only, its other fields (a `muxGovernorToken` among them)
//! skipped unparsed.
//!
//! **Not read**: `session-usage.json` (Mux's running totals, derived from the rows read
//! here), `headless-usage.jsonl` (title and status generation, no conversation),
//! `timeline.jsonl`, `devtools.jsonl` and the worktrees under `<home>/src`.

use super::jsonl::{self, Scanned};
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Message, MessageKind, Role, Session, Source, Subagent, TokenUsage, ToolCall,
};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const CHAT: &str = "chat.jsonl";
const ARCHIVE: &str = "chat-archive.jsonl";
/// The archive as Mux keeps it while it rewrites it (`truncateHistory`).
const ARCHIVE_TOMBSTONE: &str = "chat-archive.jsonl.truncate";
const PARTIAL: &str = "partial.json";
const METADATA: &str = "metadata.json";
const CONFIG: &str = "config.json";
const SUBAGENTS: &str = "subagent-transcripts";
/// Largest `partial.json`, `metadata.json` or `config.json` parsed.
const MAX_JSON: u64 = 64 << 20;

/// `$XUM_ROOT/sessions` or `$MUX_ROOT/sessions`, else `~/.xum`, `~/.mux`, `~/.cmux`.
pub fn candidates(env: &Env) -> Vec<Root> {
    for var in ["XUM_ROOT", "MUX_ROOT"] {
        if let Some(h) = env.path_var(var) {
            return vec![Root::new(Agent::Mux, h.join("sessions"), var)];
        }
    }
    [".xum", ".mux", ".cmux"]
        .iter()
        .map(|d| Root::new(Agent::Mux, env.home.join(d).join("sessions"), "default"))
        .collect()
}

pub struct MuxStore {
    base: Base,
}

impl MuxStore {
    pub fn new(roots: Vec<Root>) -> MuxStore {
        MuxStore {
            base: Base::new(Agent::Mux, roots),
        }
    }
}

/// The sessions directory a root stands for (itself, or `<root>/sessions`).
fn sessions_dir(root: &Path) -> PathBuf {
    let under = root.join("sessions");
    if under.is_dir() {
        under
    } else {
        root.to_path_buf()
    }
}

/// A directory holding a chat: `chat.jsonl`, its archive or a reply being streamed.
fn holds_chat(dir: &Path) -> bool {
    [CHAT, ARCHIVE, ARCHIVE_TOMBSTONE, PARTIAL]
        .iter()
        .any(|f| dir.join(f).is_file())
}

/// The files a session's rendering depends on: its chat files and record, the home's
/// `config.json`, and the finished sub-agents kept under it (`subagent-transcripts/` and
/// each sub-agent's directory, whose chat files and `metadata.json` count as its entries),
/// so a sub-agent's chat written there alone renders the parent again.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [CHAT, ARCHIVE, PARTIAL, METADATA]
        .iter()
        .map(|f| dir.join(f))
        .collect();
    let subagents = dir.join(SUBAGENTS);
    v.extend(kit::subdirs(&subagents));
    v.push(subagents);
    if let Some(home) = dir.parent().and_then(Path::parent) {
        v.push(home.join(CONFIG));
    }
    v
}

impl Store for MuxStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for (p, t) in kit::typed_entries(&sessions_dir(&root.path)) {
                let name = kit::file_name(&p).to_string();
                if t != EntryType::Dir || name.is_empty() || name.starts_with('.') {
                    continue;
                }
                if holds_chat(&p) && seen.insert(name.clone()) {
                    out.push(Listed {
                        id: name,
                        sources: sources(&p),
                        path: p,
                        key: None,
                        root: i,
                    });
                }
            }
        }
        out
    }

    /// What the listing reads: each root (whose `sessions/` appearing moves the directory
    /// read), the sessions directory's names and each workspace directory's names.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            g.dirs.push(root.path.clone());
            let dir = sessions_dir(&root.path);
            for (p, t) in kit::typed_entries(&dir) {
                if t == EntryType::Dir && !kit::file_name(&p).starts_with('.') {
                    g.dirs.push(p);
                }
            }
            if dir != root.path {
                g.dirs.push(dir);
            }
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        load(&listed.path, &listed.id)
    }
}

// ---------------------------------------------------------------------------------------
// Workspace metadata

/// What Mux records of a workspace beside its chat.
#[derive(Default)]
struct Workspace {
    project: Option<String>,
    path: Option<String>,
    name: Option<String>,
    title: Option<String>,
    created: Option<String>,
    parent: Option<String>,
}

impl Workspace {
    fn from(v: &Value, project: Option<&str>) -> Workspace {
        let s = |k: &str| {
            kit::str_field(v, k)
                .filter(|x| !x.is_empty())
                .map(str::to_string)
        };
        Workspace {
            project: project.map(str::to_string).or_else(|| s("projectPath")),
            path: s("path"),
            name: s("name"),
            title: s("title"),
            created: s("createdAt"),
            parent: s("parentWorkspaceId"),
        }
    }
}

/// `config.json`'s `projects` only: serde skips every other field without keeping it.
#[derive(serde::Deserialize)]
struct ConfigFile {
    #[serde(default)]
    projects: Value,
}

/// Every workspace of `config.json`'s `projects` (`[path, {workspaces}]` pairs), with its
/// project path and the id it is known by (a legacy one without `id` by its directory name).
fn config_workspaces(home: &Path, warn: &mut Vec<String>) -> Vec<(String, Value, String)> {
    let p = home.join(CONFIG);
    if !p.is_file() {
        return Vec::new();
    }
    let bytes = match std::fs::metadata(&p) {
        Ok(m) if m.len() > MAX_JSON => {
            warn.push(format!(
                "mux config.json: {} bytes, too large, skipped",
                m.len()
            ));
            return Vec::new();
        }
        _ => match kit::read_file(&p) {
            Ok(b) => b,
            Err(e) => {
                warn.push(format!("mux config.json: cannot read: {e}"));
                return Vec::new();
            }
        },
    };
    let cfg: ConfigFile = match serde_json::from_slice(&bytes) {
        Ok(c) => c,
        Err(e) => {
            warn.push(format!(
                "mux config.json: invalid JSON ({e}): titles and projects unknown"
            ));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for pair in cfg.projects.as_array().into_iter().flatten() {
        let Some([project, conf]) = pair.as_array().map(Vec::as_slice) else {
            continue;
        };
        let project = project.as_str().unwrap_or_default().to_string();
        for ws in conf
            .get("workspaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let id = kit::str_field(ws, "id")
                .or_else(|| {
                    kit::str_field(ws, "path")
                        .and_then(|p| p.trim_end_matches('/').rsplit('/').next())
                })
                .unwrap_or_default()
                .to_string();
            if !id.is_empty() {
                out.push((project.clone(), ws.clone(), id));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Loading

/// A workspace's session: its chat, its workspace record and its sub-agents.
pub fn load(dir: &Path, id: &str) -> Session {
    let mut warnings = Vec::new();
    let home = dir.parent().and_then(Path::parent);
    let configured = home
        .map(|h| config_workspaces(h, &mut warnings))
        .unwrap_or_default();
    let mut s = load_chat(dir, id);
    s.warnings.splice(0..0, warnings);
    let ws = match configured.iter().find(|(_, _, wid)| wid == id) {
        Some((project, v, _)) => Workspace::from(v, Some(project)),
        None => legacy_metadata(dir, &mut s),
    };
    apply(&mut s, &ws);
    for (_, v, child) in &configured {
        if kit::str_field(v, "parentWorkspaceId") == Some(id) {
            s.subagents.push(Subagent {
                name: child.clone(),
                unified_id: Some(unified_id(Agent::Mux, child)),
                description: kit::str_field(v, "title").map(str::to_string),
                ..Subagent::default()
            });
        }
    }
    // Finished sub-agents whose workspace is gone: their chat kept under the parent.
    for (p, t) in kit::typed_entries(&dir.join(SUBAGENTS)) {
        let name = kit::file_name(&p).to_string();
        if t != EntryType::Dir || name.starts_with('.') || !holds_chat(&p) {
            continue;
        }
        if s.subagents.iter().any(|x| x.name == name) {
            continue;
        }
        let mut child = load_chat(&p, &name);
        let ws = legacy_metadata(&p, &mut child);
        apply(&mut child, &ws);
        child.parent = Some(unified_id(Agent::Mux, id));
        s.subagents.push(Subagent {
            name,
            description: child.title.clone(),
            session: Some(Box::new(child)),
            ..Subagent::default()
        });
    }
    s
}

/// The legacy `metadata.json` of a session directory (also kept with a sub-agent's chat).
fn legacy_metadata(dir: &Path, s: &mut Session) -> Workspace {
    let p = dir.join(METADATA);
    if !p.is_file() {
        return Workspace::default();
    }
    match kit::read_json(&p, "mux metadata.json", MAX_JSON) {
        Ok(v) => Workspace::from(&v, None),
        Err(e) => {
            s.warnings.push(e);
            Workspace::default()
        }
    }
}

fn apply(s: &mut Session, ws: &Workspace) {
    if ws.title.is_some() {
        s.title.clone_from(&ws.title);
    }
    if let Some(c) = ws.created.as_deref().and_then(kit::parse_rfc3339) {
        s.created_at = Some(c);
    }
    s.cwd = ws.path.clone().or_else(|| ws.project.clone());
    if let Some(p) = &ws.project {
        s.tags.push(format!("project:{p}"));
    }
    if let Some(n) = &ws.name {
        s.tags.push(format!("branch:{n}"));
    }
    if let Some(p) = &ws.parent {
        s.parent = Some(unified_id(Agent::Mux, p));
    }
}

/// One row with where it came from, for warnings.
struct Row {
    v: Value,
    place: String,
}

/// `historySequence` of a row.
fn seq(v: &Value) -> Option<u64> {
    kit::value_at(v, &["metadata", "historySequence"]).and_then(Value::as_u64)
}

/// Every row of one JSONL file, the file's name in its warnings and unread lines.
fn read_rows(path: &Path, label: &str, rows: &mut Vec<Row>, scanned: &mut Scanned) {
    let got = jsonl::read_records(path, |pos, line| {
        let v: Value = serde_json::from_slice(line).map_err(|e| format!("invalid JSON: {e}"))?;
        if !v.is_object() {
            return Err("not a JSON object".into());
        }
        rows.push(Row {
            v,
            place: format!("{label} {}", pos.id()),
        });
        Ok(())
    });
    scanned.warnings.extend(got.warnings);
    for mut u in got.unparsed {
        u.reason = format!("{label}: {}", u.reason);
        scanned.unparsed.push(u);
    }
}

/// The chat of one session directory: archive, `chat.jsonl`, then a reply still streaming.
fn load_chat(dir: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Mux, id);
    let mut rows = Vec::new();
    let mut scanned = Scanned::default();
    let archive = dir.join(ARCHIVE);
    let tombstone = dir.join(ARCHIVE_TOMBSTONE);
    if archive.is_file() {
        read_rows(&archive, ARCHIVE, &mut rows, &mut scanned);
        if tombstone.is_file() {
            b.warn("Mux was rewriting chat-archive.jsonl (chat-archive.jsonl.truncate is there): the history shown may change when it finishes");
        }
    } else if tombstone.is_file() {
        // Mux moves the archive aside while it rewrites it, and puts it back if it stops.
        read_rows(&tombstone, ARCHIVE_TOMBSTONE, &mut rows, &mut scanned);
        b.warn("chat-archive.jsonl is being rewritten by Mux: the older history is read from chat-archive.jsonl.truncate");
    }
    let archived: HashSet<u64> = rows.iter().filter_map(|r| seq(&r.v)).collect();
    let mut chat = Vec::new();
    if dir.join(CHAT).is_file() {
        read_rows(&dir.join(CHAT), CHAT, &mut chat, &mut scanned);
    }
    // A rotation cut short leaves rows in both files; Mux keeps the archive's.
    rows.extend(
        chat.into_iter()
            .filter(|r| seq(&r.v).is_none_or(|n| !archived.contains(&n))),
    );
    partial(dir, &mut rows, &mut b);
    for r in &rows {
        row(&mut b, &r.v, &r.place);
    }
    scanned.into_session(&mut b.s);
    b.s.source = Source {
        paths: [ARCHIVE, CHAT, PARTIAL]
            .iter()
            .map(|f| dir.join(f))
            .filter(|p| p.is_file())
            .collect(),
        format: "mux-chat-jsonl".into(),
        format_version: None,
    };
    b.finish()
}

/// `partial.json`, placed as Mux would commit it: over the row of its `historySequence`
/// when it holds more parts, after the last row when it is newer than all, never when stale.
fn partial(dir: &Path, rows: &mut Vec<Row>, b: &mut SessionBuilder) {
    let p = dir.join(PARTIAL);
    if !p.is_file() {
        return;
    }
    let v = match kit::read_json(&p, "mux partial.json", MAX_JSON) {
        Ok(v) if v.is_object() => v,
        Ok(_) => return b.warn("mux partial.json: not a JSON object"),
        Err(e) => return b.warn(e),
    };
    let parts = |v: &Value| v.get("parts").and_then(Value::as_array).map_or(0, Vec::len);
    let place = PARTIAL.to_string();
    let max = rows.iter().filter_map(|r| seq(&r.v)).max();
    match seq(&v) {
        Some(n) => {
            match rows.iter().position(|r| seq(&r.v) == Some(n)) {
                Some(i) if parts(&v) > parts(&rows[i].v) => {
                    b.warn("the last reply is still being written (partial.json): shown as far as it goes");
                    rows[i] = Row { v, place };
                }
                Some(_) => {}
                None if max.is_some_and(|m| n <= m) => b.warn(format!(
                "partial.json is a stale reply (historySequence {n}) Mux will discard: not shown"
            )),
                None => {
                    b.warn("the last reply is still being written (partial.json): shown as far as it goes");
                    rows.push(Row { v, place });
                }
            }
        }
        None => {
            b.warn("the last reply is still being written (partial.json, no historySequence)");
            rows.push(Row { v, place });
        }
    }
}

/// `metadata.muxMetadata` (`cmuxMetadata` in older rows).
fn mux_meta(md: &Value) -> &Value {
    md.get("muxMetadata")
        .filter(|v| v.is_object())
        .or_else(|| md.get("cmuxMetadata"))
        .unwrap_or(&Value::Null)
}

/// A compaction summary: `compacted` set (`user`, `idle`, `heartbeat`, `true`), the legacy
/// `idleCompacted`, or a `compaction-summary` command.
fn is_summary(md: &Value) -> bool {
    let compacted = match md.get("compacted") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        _ => false,
    };
    compacted
        || md.get("idleCompacted") == Some(&Value::Bool(true))
        || kit::str_field(mux_meta(md), "type") == Some("compaction-summary")
}

/// What a synthetic (Mux-written) user row injects, for its context label.
fn synthetic_label(md: &Value) -> String {
    if let Some(name) = kit::str_at(md, &["agentSkillSnapshot", "skillName"]) {
        return format!("skill {name}");
    }
    if md.get("fileAtMentionSnapshot").is_some() {
        return "file snapshot".into();
    }
    if let Some(p) = kit::str_at(md, &["mcpPromptSnapshot", "promptName"]) {
        return format!("mcp prompt {p}");
    }
    if let Some(k) = kit::str_field(md, "kind") {
        return k.replace('_', " ");
    }
    match kit::str_field(mux_meta(md), "type") {
        Some(t) => t.replace('-', " "),
        None => "synthetic".into(),
    }
}

/// AI SDK usage as sessfs counts it: input without cache reads and writes, output without
/// reasoning (`createDisplayUsage`).
fn usage(u: &Value, provider: &Value) -> TokenUsage {
    let cached = match kit::u64_field(u, "cachedInputTokens") {
        0 => kit::u64_at(u, &["inputTokenDetails", "cacheReadTokens"]),
        n => n,
    };
    let written = match kit::u64_at(provider, &["anthropic", "cacheCreationInputTokens"]) {
        0 => kit::u64_at(u, &["inputTokenDetails", "cacheWriteTokens"]),
        n => n,
    };
    let reasoning = match kit::u64_field(u, "reasoningTokens") {
        0 => kit::u64_at(u, &["outputTokenDetails", "reasoningTokens"]),
        n => n,
    };
    let out = kit::u64_field(u, "outputTokens");
    TokenUsage {
        input_tokens: kit::u64_field(u, "inputTokens").saturating_sub(cached + written),
        output_tokens: if out >= reasoning {
            out - reasoning
        } else {
            out
        },
        thinking_tokens: reasoning,
        cached_tokens: cached,
        cache_write_tokens: written,
    }
}

/// A tool output as text: a string as it is; an object's `output` (and `error`), then
/// its other fields as one JSON line; anything else its JSON.
fn output_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) if o.get("output").is_some_and(Value::is_string) => {
            let mut text = kit::str_field(v, "output").unwrap_or_default().to_string();
            let mut rest = Map::new();
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("output", _) => {}
                    ("error", Value::String(e)) if !e.is_empty() => {
                        kit::push_paragraph(&mut text, &format!("error: {e}"));
                    }
                    _ => {
                        rest.insert(k.clone(), x.clone());
                    }
                }
            }
            if !rest.is_empty() {
                kit::push_paragraph(&mut text, &Value::Object(rest).to_string());
            }
            text
        }
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// A failed output (`hasFailureResult`): `success: false`, or an `error` that is set.
fn failed(v: &Value) -> bool {
    v.get("success") == Some(&Value::Bool(false))
        || v.get("error")
            .is_some_and(|e| !e.is_null() && e != &Value::Bool(false) && e != "")
}

/// One assistant (or user) message being built from a row's parts; a text after tool
/// calls starts the next one, so text and calls stay in the order Mux stored them.
struct Segments<'a> {
    b: &'a mut SessionBuilder,
    cur: Message,
    results: Vec<(String, String, String, bool)>,
    template: Message,
}

impl Segments<'_> {
    fn flush(&mut self) {
        let m = std::mem::replace(&mut self.cur, self.template.clone());
        let empty = m.content.is_empty()
            && m.thinking.is_none()
            && m.tool_calls.is_empty()
            && m.token_usage.is_none();
        if !empty || !self.results.is_empty() {
            self.b.push(m);
        }
        for (id, name, out, err) in self.results.drain(..) {
            self.b
                .tool_result(&id, Some(&name), out, err, self.template.timestamp);
        }
    }

    fn text_part(&mut self) {
        if !self.cur.tool_calls.is_empty() {
            self.flush();
        }
    }
}

/// One row of `chat.jsonl` (or the archive, or `partial.json`).
fn row(b: &mut SessionBuilder, v: &Value, place: &str) {
    let md = v.get("metadata").unwrap_or(&Value::Null);
    let ts = md
        .get("timestamp")
        .and_then(super::parse_time)
        .or_else(|| v.get("createdAt").and_then(super::parse_time));
    let role = kit::str_field(v, "role").unwrap_or_default();
    let native_id = kit::str_field(v, "id").map(str::to_string);
    if kit::str_field(md, "contextBoundaryKind") == Some("reset") {
        b.event(
            "context reset: the model no longer sees the messages before this".into(),
            ts,
        );
    }
    let synthetic = md.get("synthetic") == Some(&Value::Bool(true));
    let command = kit::str_field(mux_meta(md), "type");
    let template = match role {
        "assistant" => Message {
            role: Role::Assistant,
            kind: if is_summary(md) {
                MessageKind::CompactionSummary
            } else {
                MessageKind::Normal
            },
            model: kit::str_field(md, "model").map(str::to_string),
            timestamp: ts,
            ..Message::default()
        },
        "user" if command == Some("compaction-request") => Message {
            role: Role::System,
            kind: MessageKind::Context,
            label: Some("compaction request".into()),
            timestamp: ts,
            ..Message::default()
        },
        "user" if synthetic => Message {
            role: Role::System,
            kind: MessageKind::Context,
            label: Some(synthetic_label(md)),
            timestamp: ts,
            ..Message::default()
        },
        "user" => Message {
            role: Role::User,
            timestamp: ts,
            ..Message::default()
        },
        "system" => Message {
            role: Role::System,
            kind: MessageKind::Context,
            label: Some("system".into()),
            timestamp: ts,
            ..Message::default()
        },
        other => {
            let first = || format!("{place}: `{other}`");
            b.unparsed("rows", "unknown role", first, "row", &v.to_string(), ts);
            return;
        }
    };
    let mut first = template.clone();
    first.native_id = native_id;
    if role == "assistant" {
        let provider = md.get("providerMetadata").unwrap_or(&Value::Null);
        if let Some(u) = md.get("usage").filter(|u| u.is_object()) {
            first.token_usage = Some(usage(u, provider));
        }
        let included = md.get("costsIncluded") == Some(&Value::Bool(true))
            || kit::value_at(provider, &["mux", "costsIncluded"]) == Some(&Value::Bool(true));
        if included {
            first.cost = Some(0.0);
        }
    }
    let mut seg = Segments {
        b,
        cur: first,
        results: Vec::new(),
        template,
    };
    let parts = v.get("parts").and_then(Value::as_array);
    for (i, p) in parts.into_iter().flatten().enumerate() {
        let ty = kit::str_field(p, "type").unwrap_or_default();
        match ty {
            "text" => {
                seg.text_part();
                seg.cur
                    .content
                    .push_str(kit::str_field(p, "text").unwrap_or_default());
            }
            "reasoning" => {
                seg.text_part();
                let t = kit::str_field(p, "text").unwrap_or_default();
                seg.cur.thinking.get_or_insert_with(String::new).push_str(t);
            }
            "file" => {
                seg.text_part();
                let url = kit::str_field(p, "url").unwrap_or_default();
                let mut ph = if url.starts_with("data:") {
                    kit::data_url_placeholder(url)
                } else {
                    let mime = kit::str_field(p, "mediaType");
                    format!("{} {url}", kit::base64_placeholder("file", mime, None))
                };
                if let Some(f) = kit::str_field(p, "filename") {
                    ph = format!("{ph} {f}");
                }
                if !seg.cur.content.is_empty() && !seg.cur.content.ends_with('\n') {
                    seg.cur.content.push('\n');
                }
                seg.cur.content.push_str(&ph);
            }
            t if t == "dynamic-tool" || t.starts_with("tool-") => tool_part(&mut seg, p, t),
            other => {
                let first = || format!("{place}, part {}: `{other}`", i + 1);
                seg.flush();
                seg.b.unparsed(
                    "message parts",
                    "unknown part type",
                    first,
                    "part",
                    &p.to_string(),
                    ts,
                );
            }
        }
    }
    if parts.is_none() {
        let first = || place.to_string();
        seg.b.unparsed.note("rows", "no `parts` list", first);
    }
    seg.flush();
    for u in md
        .get("toolModelUsages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let model = kit::str_field(u, "model").unwrap_or_default();
        let tool = kit::str_field(u, "toolName").unwrap_or_default();
        let provider = u.get("providerMetadata").unwrap_or(&Value::Null);
        b.push(Message {
            role: Role::System,
            kind: MessageKind::Event,
            content: format!("model call by tool {tool}: {model}"),
            timestamp: u.get("timestamp").and_then(super::parse_time).or(ts),
            model: Some(model.to_string()).filter(|m| !m.is_empty()),
            token_usage: u.get("usage").map(|x| usage(x, provider)),
            ..Message::default()
        });
    }
    if md.get("partial") == Some(&Value::Bool(true)) && role == "assistant" && place != PARTIAL {
        b.event("the reply was interrupted".into(), ts);
    }
    if let Some(e) = kit::str_field(md, "error").filter(|e| !e.is_empty()) {
        let text = match kit::str_field(md, "errorType") {
            Some(t) => format!("error ({t}): {e}"),
            None => format!("error: {e}"),
        };
        b.event(text, ts);
    }
}

/// A `dynamic-tool` part (or an AI SDK `tool-<name>` one): the call, its result after the
/// message, and the calls a `code_execution` made inside it with their outputs.
fn tool_part(seg: &mut Segments<'_>, p: &Value, ty: &str) {
    let id = kit::str_field(p, "toolCallId")
        .unwrap_or_default()
        .to_string();
    let name = match ty.strip_prefix("tool-") {
        Some(n) => n.to_string(),
        None => kit::str_field(p, "toolName")
            .unwrap_or_default()
            .to_string(),
    };
    seg.cur.tool_calls.push(ToolCall {
        tool_call_id: id.clone(),
        tool_name: name.clone(),
        input: p.get("input").cloned().unwrap_or(Value::Null),
        ..ToolCall::default()
    });
    let failed_flag = p.get("failed") == Some(&Value::Bool(true));
    match kit::str_field(p, "state").unwrap_or_default() {
        "output-available" => {
            let out = p.get("output").unwrap_or(&Value::Null);
            seg.results
                .push((id, name, output_text(out), failed(out) || failed_flag));
        }
        "output-error" => {
            let e = kit::str_field(p, "errorText").unwrap_or_default();
            seg.results.push((id, name, e.to_string(), true));
        }
        "output-redacted" => {
            let text = "[output redacted by Mux]".to_string();
            seg.results.push((id, name, text, failed_flag));
        }
        // `input-available`: the call was cut off before it ran; it has no result.
        _ => {}
    }
    for n in p
        .get("nestedCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let out = n.get("output");
        let done = kit::str_field(n, "state") == Some("output-available");
        seg.cur.tool_calls.push(ToolCall {
            tool_call_id: kit::str_field(n, "toolCallId")
                .unwrap_or_default()
                .to_string(),
            tool_name: kit::str_field(n, "toolName")
                .unwrap_or_default()
                .to_string(),
            input: n.get("input").cloned().unwrap_or(Value::Null),
            output: done.then(|| out.map(output_text).unwrap_or_default()),
            is_error: done
                .then(|| n.get("failed") == Some(&Value::Bool(true)) || out.is_some_and(failed)),
            ..ToolCall::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ai_sdk_usage_counts_cache_and_reasoning_apart() {
        let u = serde_json::json!({"inputTokens": 1000, "outputTokens": 300,
            "reasoningTokens": 100, "cachedInputTokens": 600});
        let pm = serde_json::json!({"anthropic": {"cacheCreationInputTokens": 150}});
        let got = usage(&u, &pm);
        assert_eq!(
            (
                got.input_tokens,
                got.output_tokens,
                got.thinking_tokens,
                got.cached_tokens,
                got.cache_write_tokens
            ),
            (250, 200, 100, 600, 150)
        );
    }

    #[test]
    fn a_bash_output_shows_its_text_then_its_other_fields() {
        let v = serde_json::json!({"success": false, "output": "boom", "exitCode": 2, "error": "exit 2"});
        assert_eq!(
            output_text(&v),
            "boom\n\nerror: exit 2\n\n{\"success\":false,\"exitCode\":2}"
        );
        assert!(failed(&v));
        assert!(!failed(
            &serde_json::json!({"success": true, "output": "ok"})
        ));
    }
}
