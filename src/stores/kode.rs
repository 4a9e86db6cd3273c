//! Kode: Claude Code's JSONL sessions under `~/.kode/projects/`, and the JSON-array message
//! logs every release has written under `~/.kode/<project>/messages/` and the cache.
//!
//! Learnt from Kode's own source, github.com/shareAI-lab/Kode-CLI (formerly
//! shareAI-lab/Kode and shareAI-lab/Kode-cli) at commit
//! `66a8600d2140e888061345b25ec343e2a0778e4e` (main, after release 2.0.2):
//! `src/utils/protocol/kodeAgentSessionLog.ts` (the JSONL store), `kodeAgentSessionLoad.ts`
//! (what Kode reads back), `src/utils/log/index.ts` (the JSON-array logs and their names),
//! `src/utils/config/env.ts` (`getKodeBaseDir`), `src/constants/product.ts` (`.kode`,
//! `kode`), `src/app/query.ts` (which messages are persisted), `src/app/ask.ts`,
//! `src/ui/hooks/useLogMessages.ts` and `src/tools/agent/TaskTool/TaskTool.tsx` (who writes
//! the JSON-array logs) and `src/utils/messages/core.ts` (the message shapes). Releases
//! before 2.0.2 (`src/utils/log.ts` at `53cf26c9` and `f4e358c6`, release 1.0) wrote the
//! JSON-array logs only, to the cache directory.
//!
//! **Where.** The base is `$KODE_CONFIG_DIR`, else `~/.kode` (Kode also falls back to
//! `$CLAUDE_CONFIG_DIR`; sessions it writes there are Claude Code's directory and show under
//! `claude/`). Under it: `projects/<cwd with every non-alphanumeric character as '-'>/`
//! holds `<session uuid>.jsonl` and a subagent's `agent-<agent id>.jsonl`, as Claude Code
//! lays them out; and `<same project name>/messages/<date>[-<fork>][-sidechain-<n>].json`
//! (moved by `$KODE_LOG_ROOT`). Releases before 2.0.2 wrote those logs to env-paths' cache
//! directory, `$XDG_CACHE_HOME/kode-nodejs` (else `~/.cache/kode-nodejs`; macOS
//! `~/Library/Caches/kode-nodejs`; moved by `$KODE_LEGACY_CACHE_ROOT`), read too; a log in
//! both places (Kode copies up to 50 old logs once) is read from the base. Never read:
//! `~/.kode.json` and `<base>/config.json` (model profiles with API keys), the projects'
//! `errors/` and `mcp-logs-*/` (error logs, no conversation), `memory/`, `agents/`,
//! `skills/` and the rest of the base.
//!
//! **JSONL.** Line for line Claude Code's format: `user`/`assistant` records with
//! `uuid`/`parentUuid`, `sessionId`, `cwd`, `version`, `gitBranch`, `isSidechain`, `agentId`
//! and the Anthropic `message`, `toolUseResult`, `isApiErrorMessage`; `summary`,
//! `custom-title`, `tag` and `file-history-snapshot` lines. They are read by the Claude Code
//! store's own parser ([`ClaudeStore::with_agent`]): prompts, replies, reasoning, tool calls
//! and results with their error flag, `!` commands, slash commands, injected context, the
//! active path and branches, titles and tags, per-reply usage and model. A subagent's
//! `agent-<id>.jsonl` names the parent's `sessionId` and becomes its subagent.
//!
//! **JSON-array logs.** One file per conversation, rewritten whole after every change: an
//! array of Kode's in-memory messages (`user`, `assistant` with `costUSD` and `durationMs`,
//! `progress` in `-p` runs), each with `cwd`, `sessionId`, `version` and a `timestamp` that
//! is the time of the last rewrite, not of the message. The elements are the same user and
//! assistant records as the JSONL's, in order and without `parentUuid`, so they go through
//! the same parser, each the child of the one before; their `timestamp` is dropped (the
//! session's start is the file name's date, its update the rewrite time). `costUSD` is the
//! reply's cost. `progress` elements (a running tool's intermediate state, which its result
//! repeats) are counted in a warning. `-<n>` files are forks of the conversation named by
//! the date, linked to it when it is there; `-sidechain-<n>` files are the conversations of
//! Task subagents and become subagents of the log they belong to (alone when it is gone).
//! Kode 2.0.2 and later write a REPL conversation both ways; both are shown, since the
//! array log also keeps what never reaches the JSONL (local command output), and the log is
//! `forkedFrom` the JSONL session its records name, so what they share counts once.
//!
//! A file cut mid-rewrite keeps every element before the cut; the rest is `unparsed.txt`.

use super::claude::{self, ClaudeStore};
use super::cline;
use super::kit::{self, EntryType};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{unified_id, Agent, Role, Session, Subagent};
use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The largest JSON-array log read.
const MAX_LOG_BYTES: u64 = 256 << 20;

/// Kode's base directories, then the old releases' cache directories; every root may hold
/// `projects/` and `<project>/messages/`.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    let mut push = |path: PathBuf, how: &str| {
        if !out.iter().any(|r| r.path == path) {
            out.push(Root::new(Agent::Kode, path, how));
        }
    };
    match env.path_var("KODE_CONFIG_DIR") {
        Some(p) => push(p, "KODE_CONFIG_DIR"),
        None => push(env.home.join(".kode"), "default"),
    }
    if let Some(p) = env.path_var("KODE_LOG_ROOT") {
        push(p, "KODE_LOG_ROOT");
    }
    match env.path_var("KODE_LEGACY_CACHE_ROOT") {
        Some(p) => push(p, "KODE_LEGACY_CACHE_ROOT"),
        None => {
            let cache = env
                .path_var("XDG_CACHE_HOME")
                .unwrap_or_else(|| env.home.join(".cache"));
            push(cache.join("kode-nodejs"), "default");
            push(env.home.join("Library/Caches/kode-nodejs"), "default");
        }
    }
    out
}

pub struct KodeStore {
    base: Base,
    /// The JSONL sessions: each root's `projects/`, in root order.
    jsonl: ClaudeStore,
}

impl KodeStore {
    pub fn new(roots: Vec<Root>) -> KodeStore {
        let projects = roots
            .iter()
            .map(|r| Root::new(Agent::Kode, r.path.join("projects"), r.how.clone()))
            .collect();
        KodeStore {
            jsonl: ClaudeStore::with_agent(Agent::Kode, projects),
            base: Base::new(Agent::Kode, roots),
        }
    }
}

impl Store for KodeStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = self.jsonl.list();
        let mut seen: HashSet<(String, String)> = HashSet::new();
        for (idx, root) in self.base.roots.iter().enumerate() {
            for project in log_projects(&root.path) {
                list_logs(&project, idx, &mut seen, &mut out);
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        if is_log(&listed.path) {
            load_log(listed)
        } else {
            self.jsonl.load(listed)
        }
    }

    /// Ids are file names; a log's sidechains are named after it.
    fn keeps_listing(&self, listed: &Listed) -> bool {
        is_log(&listed.path) || self.jsonl.keeps_listing(listed)
    }

    fn glance(&self, listed: &[Listed]) -> Option<Glance> {
        let mut g = self.jsonl.glance(listed)?;
        for root in &self.base.roots {
            g.dirs.push(root.path.clone());
            for project in log_projects(&root.path) {
                g.dirs.push(project.join("messages"));
            }
        }
        Some(g)
    }
}

fn is_log(p: &Path) -> bool {
    kit::file_name(p).ends_with(".json")
}

/// The project directories of a root that hold a `messages/` directory (`projects/` is the
/// JSONL store, never one of them).
fn log_projects(root: &Path) -> Vec<PathBuf> {
    kit::typed_entries(root)
        .into_iter()
        .filter(|(p, t)| *t == EntryType::Dir && kit::file_name(p) != "projects")
        .map(|(p, _)| p)
        .filter(|p| p.join("messages").is_dir())
        .collect()
}

/// `<date>-sidechain-<n>` -> (`<date>`, `<n>`); `<date>-<fork>-sidechain-<n>` -> (`<date>-<fork>`, `<n>`).
fn split_sidechain(stem: &str) -> Option<(&str, &str)> {
    let i = stem.find("-sidechain-")?;
    Some((&stem[..i], &stem[i + "-sidechain-".len()..]))
}

/// One project's `messages/`: a log with its sidechain files as its sources; sidechains
/// whose log is gone listed alone.
fn list_logs(
    project: &Path,
    root: usize,
    seen: &mut HashSet<(String, String)>,
    out: &mut Vec<Listed>,
) {
    let pname = kit::file_name(project).to_string();
    let files: Vec<PathBuf> = kit::typed_entries(&project.join("messages"))
        .into_iter()
        .filter(|(p, t)| *t == EntryType::File && is_log(p))
        .map(|(p, _)| p)
        .filter(|p| seen.insert((pname.clone(), kit::file_name(p).to_string())))
        .collect();
    let stem = |p: &Path| kit::file_name(p).trim_end_matches(".json").to_string();
    let mains: HashMap<String, usize> = files
        .iter()
        .enumerate()
        .filter(|(_, p)| split_sidechain(&stem(p)).is_none() && !stem(p).is_empty())
        .map(|(i, p)| (stem(p), i))
        .collect();
    let start = out.len();
    let mut by_main: HashMap<usize, usize> = HashMap::new();
    for (i, p) in files.iter().enumerate() {
        if mains.values().any(|&m| m == i) {
            by_main.insert(i, out.len());
            out.push(Listed::file(stem(p), p.clone(), root));
        }
    }
    for p in &files {
        let s = stem(p);
        let Some((main, _)) = split_sidechain(&s) else {
            continue;
        };
        match mains.get(main).and_then(|m| by_main.get(m)) {
            Some(&k) => out[k].sources.push(p.clone()),
            None => out.push(Listed::file(s.clone(), p.clone(), root)),
        }
    }
    out[start..].sort_by(|a, b| a.path.cmp(&b.path));
}

/// The start time in a log's name: `2026-03-04T09-15-00-123Z` (an ISO time with `:` and `.`
/// as `-`), before any fork or sidechain number.
fn name_time(stem: &str) -> Option<DateTime<Utc>> {
    let date: Vec<&str> = stem.split('-').take(6).collect();
    if date.len() < 6 {
        return None;
    }
    let s = format!(
        "{}-{}-{}:{}:{}.{}",
        date[0],
        date[1],
        date[2],
        date[3],
        date[4],
        date[5].trim_end_matches('Z')
    );
    NaiveDateTime::parse_from_str(&s, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc())
}

/// The fork number of a log name (`<date>-<n>`), `None` for the first file.
fn fork_of(stem: &str) -> Option<&str> {
    let segs: Vec<&str> = stem.split('-').collect();
    (segs.len() == 7).then(|| segs[6]).filter(|n| *n != "0")
}

/// One JSON-array log (with its sidechains when it has them).
fn load_log(listed: &Listed) -> Session {
    let mut s = load_array(&listed.path, &listed.id, None);
    let stem = listed.id.as_str();
    if let Some(n) = fork_of(stem) {
        let first = stem.trim_end_matches(n).trim_end_matches('-');
        if listed
            .path
            .with_file_name(format!("{first}.json"))
            .is_file()
        {
            s.forked_from = Some(unified_id(Agent::Kode, first));
        }
    }
    let parent = s.unified_id();
    for side in listed.sources.iter().skip(1) {
        let side_stem = kit::file_name(side).trim_end_matches(".json").to_string();
        let n = split_sidechain(&side_stem).map_or("", |(_, n)| n);
        let name = format!("sidechain-{n}");
        let mut child = load_array(side, &format!("{stem}/{name}"), Some(parent.clone()));
        // The Task call whose prompt is the sidechain's first prompt spawned it.
        let prompt = child
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.trim().to_string());
        let call = s
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter())
            .find(|t| {
                prompt.as_deref().is_some_and(|p| {
                    !p.is_empty()
                        && t.input.get("prompt").and_then(Value::as_str).map(str::trim) == Some(p)
                })
            });
        let description = call
            .and_then(|t| t.input.get("description"))
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(d) = &description {
            child.title = Some(d.clone());
        }
        s.subagents.push(Subagent {
            name,
            unified_id: None,
            description,
            tool_call_id: call.map(|t| t.tool_call_id.clone()),
            session: Some(Box::new(child)),
        });
    }
    s
}

/// The JSONL file Kode 2.0.2 and later write for the same conversation as the log at
/// `log` (`<base>/<project>/messages/<name>.json`): `<base>/projects/<project>/<session
/// id>.jsonl`, the id being the one the log's records carry.
fn jsonl_twin(log: &Path, session_id: &str) -> Option<PathBuf> {
    if session_id.is_empty() || session_id.contains(['/', '\\']) {
        return None;
    }
    let project = log.parent()?.parent()?;
    let base = project.parent()?;
    Some(
        base.join("projects")
            .join(project.file_name()?)
            .join(format!("{session_id}.jsonl")),
    )
}

/// One JSON-array file as a session: its elements through the Claude Code record parser.
/// A top-level log whose conversation Kode also wrote as JSONL is `forkedFrom` that
/// session, so the messages they share count once (in the JSONL session) and
/// `parent.diff` shows what only the log holds.
fn load_array(path: &Path, id: &str, parent: Option<String>) -> Session {
    let name = kit::file_name(path).to_string();
    let fail = |why: String| {
        let mut s = Session::new(Agent::Kode, id);
        s.parent = parent.clone();
        s.source.paths.push(path.to_path_buf());
        s.source.format = "kode-json".into();
        s.warnings.push(why);
        s
    };
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_LOG_BYTES => {
            return fail(format!(
                "{name}: {} bytes, too large to parse, skipped",
                m.len()
            ))
        }
        Ok(_) => match kit::read_file(path) {
            Ok(b) => b,
            Err(e) => return fail(format!("{name}: cannot read: {e}")),
        },
        Err(e) => return fail(format!("{name}: cannot read: {e}")),
    };
    let Some(records) = cline::parse_array(&bytes) else {
        let mut s = fail(format!(
            "{name}: not a JSON array; its raw text is in {}",
            super::jsonl::UNPARSED_FILE
        ));
        let text: String = String::from_utf8_lossy(&bytes)
            .chars()
            .take(64 * 1024)
            .collect();
        s.extra_files.push((
            super::jsonl::UNPARSED_FILE.into(),
            format!("{name}: not a JSON array\n{text}\n"),
        ));
        return s;
    };
    let mut progress = 0usize;
    let mut session_id: Option<String> = None;
    let mut written: Option<DateTime<Utc>> = None;
    let mut costs: HashMap<String, f64> = HashMap::new();
    let mut prev: Option<String> = None;
    let mut objects: Vec<Result<Vec<u8>, String>> = Vec::new();
    let count = records.items.len();
    for mut v in records.items {
        let Some(o) = v.as_object_mut() else {
            objects.push(serde_json::to_vec(&v).map_err(|e| e.to_string()));
            continue;
        };
        if let Some(t) = o
            .remove("timestamp")
            .as_ref()
            .and_then(Value::as_str)
            .and_then(kit::parse_rfc3339)
        {
            written = written.max(Some(t));
        }
        if o.get("type").and_then(Value::as_str) == Some("progress") {
            progress += 1;
            continue;
        }
        if session_id.is_none() {
            session_id = o
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        let uuid = o.get("uuid").and_then(Value::as_str).map(str::to_string);
        if let (Some(u), Some(c)) = (&uuid, o.get("costUSD").and_then(Value::as_f64)) {
            if c > 0.0 {
                costs.insert(u.clone(), c);
            }
        }
        if let Some(p) = &prev {
            o.insert("parentUuid".into(), Value::String(p.clone()));
        }
        if uuid.is_some() {
            prev = uuid;
        }
        objects.push(serde_json::to_vec(&v).map_err(|e| e.to_string()));
    }
    let top_level = parent.is_none();
    let mut s = claude::load_objects(Agent::Kode, id, path, objects, parent);
    s.source.format = "kode-json".into();
    if top_level {
        s.forked_from = session_id
            .filter(|sid| jsonl_twin(path, sid).is_some_and(|p| p.is_file()))
            .map(|sid| unified_id(Agent::Kode, &sid));
    }
    for m in &mut s.messages {
        if m.role == Role::Assistant {
            if let Some(c) = m.native_id.as_deref().and_then(|u| costs.get(u)) {
                m.cost = Some(*c);
            }
        }
    }
    let stem = name.trim_end_matches(".json");
    s.created_at = name_time(stem).or(written);
    s.updated_at = written.or(s.created_at);
    if progress > 0 {
        s.warnings.push(format!(
            "{progress} progress records (a running tool's intermediate state) not shown"
        ));
    }
    if let Some(raw) = records.unparsed {
        s.warnings.push(format!(
            "{name}: cut after {count} records (half-written?); the rest is in {}",
            super::jsonl::UNPARSED_FILE
        ));
        s.extra_files.push((
            super::jsonl::UNPARSED_FILE.into(),
            format!("{name}: after the last complete record\n{raw}\n"),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_names() {
        let t = name_time("2026-03-04T09-15-00-123Z").map(|t| t.to_rfc3339());
        assert_eq!(t.as_deref(), Some("2026-03-04T09:15:00.123+00:00"));
        assert_eq!(fork_of("2026-03-04T09-15-00-123Z-2"), Some("2"));
        assert_eq!(fork_of("2026-03-04T09-15-00-123Z"), None);
        assert_eq!(
            split_sidechain("2026-03-04T09-15-00-123Z-1-sidechain-3"),
            Some(("2026-03-04T09-15-00-123Z-1", "3"))
        );
    }
}
