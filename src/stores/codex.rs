//! OpenAI Codex CLI: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local ts>-<thread id>.jsonl`.
//!
//! A rollout is one JSONL file per thread: `{timestamp, type, payload}` lines whose `type`
//! is `session_meta` (first line), `turn_context` (the model of the following replies),
//! `response_item` (what the model saw and said), `event_msg` (UI events, among them the
//! cumulative `token_count`) or `compacted`. Older files use other shapes, read here too:
//! mid-2025 builds wrote no envelope (line 1 `{id, timestamp, instructions}`, then
//! `{"record_type":"state"}` markers and bare response items), and Codex ≥ 0.137 compresses
//! idle rollouts to `.jsonl.zst` (a plain `.jsonl` of the same name, written on resume, wins).
//! `archived_sessions/` holds archived rollouts flat; the agent-mux spec path
//! `~/.codex/sessions/<id>.jsonl` is a flat directory and is listed as such.
//!
//! Design decisions, and why:
//!
//! - **One user stream.** Codex writes each prompt twice: as a `response_item` message with
//!   role `user` (the model-visible stream, in order with the tool calls, and the only one in
//!   old files) and as an `event_msg` `user_message` (the UI's copy). The `response_item`
//!   stream is used; `event_msg` prompts (and `agent_message` replies) are used only when a
//!   file has no `response_item` prompt (or reply) at all. Injected user-role messages
//!   (`<environment_context>`, AGENTS.md, `<user_instructions>`, …) and `developer` messages
//!   become [`MessageKind::Context`] messages: never a prompt, a turn or the title.
//! - **Tokens.** `token_count.info.total_token_usage` is cumulative: the last one is the
//!   session's total, stored in [`Session::reported_usage`] (never a sum of lines).
//! - **Forks** copy the parent's rollout items, `token_count` events included, into the new
//!   file, and Codex seeds the fork's counter from the last copied one, so the fork's totals
//!   continue the parent's. The fork's own usage is its last total minus the parent's total
//!   at the fork point: the last entry of the longest common prefix of the two files'
//!   `token_count` sequences. The copied messages are marked `inherited`.
//! - **Subagents** (`source: {"subagent": {"thread_spawn": {"parent_thread_id": …}}}`) are
//!   separate rollouts. They are nested under their parent and not listed themselves; the
//!   parent's [`Listed::sources`] name their files so a growing child re-renders its parent.
//!   A child whose parent rollout is gone is listed on its own, with a warning.
//! - **Memory.** A rollout can reach gigabytes of inline images. Lines are streamed, parsed
//!   into borrowed typed records and dropped; images become placeholders while parsing.
//!   `compacted.replacement_history` repeats the whole history and is never read.
//!
//! - **Every Code**, a fork of Codex, writes these rollouts into a home of its own: the same
//!   store reads them under another agent ([`Dialect`], [`super::everycode`]). Its
//!   additions are read here whichever store finds them, since a `CODEX_HOME` may hold both
//!   agents' rollouts: `event` lines (an `event_msg` wrapped with its sequence numbers),
//!   status items it adds as user messages, models named by the token counts, a counter
//!   that restarts ([`spent`]), `archived_sessions/` kept in date directories, and its
//!   session catalog (`sessions/index/catalog.jsonl`: titles, never a rollout).
//!
//! Listing reads file names, `stat` and the first line of each file only (the id, and whether
//! the rollout is a fork or a subagent), and Every Code's catalog.

mod records;
#[cfg(test)]
mod tests;
use records::*;

use super::{everycode, jsonl, kit, Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    self, Agent, Message, MessageKind, Role, Session, Subagent, TokenUsage, ToolCall,
};
use crate::names;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where Codex keeps its threads: `$CODEX_HOME` (default `~/.codex`), then the agent-mux
/// spec's flat `~/.codex/sessions`.
pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        Agent::Codex,
        &kit::Places {
            env: &[("CODEX_HOME", "")],
            defaults: &[".codex"],
            spec: &[".codex/sessions"],
        },
    )
}

const INDEX: &str = "session_index.jsonl";

/// What differs between Codex and a fork that writes Codex's rollouts into a home of its own
/// (Every Code, [`super::everycode`]): the agent its sessions belong to, the format it
/// names, and whether its token counter restarts. Everything else, the fork's own records
/// included, is read the same way, because one directory may hold rollouts of both (a
/// `CODEX_HOME` both use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    pub agent: Agent,
    /// `source.format` of a plain rollout, and of one compressed to `.jsonl.zst`.
    pub format: &'static str,
    pub format_zst: &'static str,
    /// The agent starts its token counter again within a thread (see [`spent`]).
    pub counter_restarts: bool,
}

/// OpenAI Codex CLI itself.
pub const CODEX: Dialect = Dialect {
    agent: Agent::Codex,
    format: "codex-jsonl",
    format_zst: "codex-jsonl-zst",
    counter_restarts: false,
};

/// Subagents of subagents are nested this deep at most (a guard against parent cycles).
const MAX_DEPTH: usize = 8;
/// Listing reads at most this much of a first line (base instructions make it tens of KB).
const HEAD_BYTES: u64 = 4 * 1024 * 1024;

pub struct CodexStore {
    dialect: Dialect,
    base: Base,
    /// The head each rollout had at the last listing, which decided its place in it
    /// ([`Store::keeps_listing`]).
    heads: Mutex<HashMap<PathBuf, Head>>,
}

impl CodexStore {
    pub fn new(roots: Vec<Root>) -> CodexStore {
        CodexStore::with_dialect(CODEX, roots)
    }

    /// The store of a fork writing Codex's rollouts (its sessions under its own agent).
    pub fn with_dialect(dialect: Dialect, roots: Vec<Root>) -> CodexStore {
        CodexStore {
            dialect,
            base: Base::new(dialect.agent, roots),
            heads: Mutex::default(),
        }
    }
}

impl Store for CodexStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut seen = HashSet::new();
        let mut files: Vec<(PathBuf, Head, usize)> = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for p in rollout_files(&root.path) {
                let key = p.canonicalize().unwrap_or_else(|_| p.clone());
                if seen.insert(key) {
                    let head = peek_head(&p);
                    files.push((p, head, i));
                }
            }
        }
        let listed = list_files(&files, &mut Catalogs::default());
        let heads = files.into_iter().map(|(p, h, _)| (p, h)).collect();
        *self.heads.lock().unwrap_or_else(|e| e.into_inner()) = heads;
        listed
    }

    /// A rollout's place in the listing (its id, the thread it nests under, the one it was
    /// forked from) comes from its first line alone, written once when the thread starts:
    /// a write keeps the listing while that line reads as it did when listed. An agent
    /// appending to one thread of a thousand then costs no listing (which reads every
    /// rollout's first line).
    fn keeps_listing(&self, listed: &Listed) -> bool {
        let now = peek_head(&listed.path);
        let heads = self.heads.lock().unwrap_or_else(|e| e.into_inner());
        heads.get(&listed.path) == Some(&now)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_listed(self.dialect, listed)
    }

    /// The listing reads the directories of the rollout tree, as deep as it walks them, the
    /// first line of every rollout and Every Code's session catalog; each session is
    /// versioned by its rollouts and the title index or catalog (its [`Listed::sources`]). A
    /// new rollout or day directory moves a directory's mtime, a new title index the Codex
    /// home's; the catalog is rewritten in place, so it is looked at itself.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            let (sessions, archived) = (
                root.path.join("sessions"),
                root.path.join("archived_sessions"),
            );
            if sessions.is_dir() || archived.is_dir() {
                g.dirs.push(root.path.clone());
                walked_dirs(&sessions, 3, &mut g.dirs);
                walked_dirs(&archived, 3, &mut g.dirs);
            } else {
                walked_dirs(&root.path, 3, &mut g.dirs);
            }
            g.files.extend(everycode::catalog_in(&root.path));
        }
        Some(g)
    }
}

/// `dir` and the directories [`walk`] lists under it at `depth`: every directory whose
/// entries the listing reads. A missing one is left out (a glance is taken over what is
/// there); its appearing moves its parent, which is in.
fn walked_dirs(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    out.push(dir.to_path_buf());
    if depth == 0 {
        return;
    }
    for p in kit::entries(dir) {
        if !kit::file_name(&p).starts_with('.') && p.is_dir() && !p.is_symlink() {
            walked_dirs(&p, depth - 1, out);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Listing

/// The rollouts under a root, plain files winning over `.zst` files of the same name.
/// A Codex home (it has `sessions/` or `archived_sessions/`) is read there; any other root
/// is a sessions directory itself (the spec path, or a `--store` given by hand).
/// `archived_sessions/` is flat in Codex's homes; Every Code archives a rollout with its
/// `YYYY/MM/DD` directories, so it is walked as deep as `sessions/`.
pub fn rollout_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let (sessions, archived) = (root.join("sessions"), root.join("archived_sessions"));
    if sessions.is_dir() || archived.is_dir() {
        walk(&sessions, 3, &mut out);
        walk(&archived, 3, &mut out);
    } else {
        walk(root, 3, &mut out);
    }
    out.sort();
    let plain: HashSet<PathBuf> = out.iter().filter(|p| !is_zst(p)).cloned().collect();
    out.retain(|p| !is_zst(p) || !plain.contains(&p.with_extension("")));
    out
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    for p in kit::entries(dir) {
        let name = kit::file_name(&p);
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            if depth > 0 && !p.is_symlink() {
                walk(&p, depth - 1, out);
            }
        } else if (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))
            && name != INDEX
            && name != "history.jsonl"
            && name != everycode::CATALOG_NAME
            && p.is_file()
        {
            out.push(p);
        }
    }
}

fn is_zst(p: &Path) -> bool {
    kit::file_name(p).ends_with(".zst")
}

/// What the first line of a rollout says about the thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    pub id: Option<String>,
    pub forked_from: Option<String>,
    /// The spawning thread, for subagents.
    pub parent: Option<String>,
    pub nickname: Option<String>,
    pub role: Option<String>,
}

impl Head {
    fn from_meta(m: &Meta<'_>) -> Head {
        let spawn = m.source.as_ref().and_then(|s| spawn_of(s.get()));
        let own = |c: &Option<Cow<'_, str>>| {
            c.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Head {
            id: own(&m.id),
            forked_from: own(&m.forked_from_id),
            parent: spawn
                .as_ref()
                .and_then(|s| own(&s.parent_thread_id))
                .or_else(|| own(&m.parent_thread_id)),
            nickname: own(&m.agent_nickname)
                .or_else(|| spawn.as_ref().and_then(|s| own(&s.agent_nickname))),
            role: own(&m.agent_role).or_else(|| spawn.as_ref().and_then(|s| own(&s.agent_role))),
        }
    }
}

/// A reader over a rollout, decompressing `.zst` as it streams.
fn open(path: &Path) -> std::io::Result<Box<dyn Read>> {
    let f = kit::open_file(path)?;
    if is_zst(path) {
        Ok(Box::new(zstd::stream::read::Decoder::new(f)?))
    } else {
        Ok(Box::new(f))
    }
}

/// The first line's thread facts; empty when it cannot be read (the file name then gives
/// the id).
pub fn peek_head(path: &Path) -> Head {
    let Ok(r) = open(path) else {
        return Head::default();
    };
    let mut r = std::io::BufReader::new(r.take(HEAD_BYTES));
    let mut line = Vec::new();
    if r.read_until(b'\n', &mut line).is_err() {
        return Head::default();
    }
    let Ok(raw) = serde_json::from_slice::<RawLine>(&line) else {
        return Head::default();
    };
    let meta = match (raw.kind.as_deref(), raw.payload) {
        (Some("session_meta"), Some(p)) => serde_json::from_str::<Meta>(p.get()).ok(),
        (None, None) => serde_json::from_slice::<Meta>(&line).ok(),
        _ => None,
    };
    meta.map(|m| Head::from_meta(&m)).unwrap_or_default()
}

/// The thread id a file name ends with: `rollout-2025-01-01T10-00-00-<uuid>.jsonl` gives the
/// uuid; a name without one gives its stem.
pub fn id_from_file_name(path: &Path) -> String {
    let name = path.file_name().map(names::os_id).unwrap_or_default();
    let stem = name
        .strip_suffix(".zst")
        .unwrap_or(&name)
        .strip_suffix(".jsonl")
        .unwrap_or(&name)
        .to_string();
    let b = stem.as_bytes();
    if b.len() >= 36 {
        let tail = &stem[stem.len() - 36..];
        let uuid = tail.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
        if uuid {
            return tail.to_string();
        }
    }
    stem.strip_prefix("rollout-").unwrap_or(&stem).to_string()
}

fn id_of(path: &Path, head: &Head) -> String {
    head.id.clone().unwrap_or_else(|| id_from_file_name(path))
}

/// Every Code session catalogs read by one listing, by path: the sessions each names.
#[derive(Default)]
struct Catalogs(HashMap<PathBuf, HashMap<String, String>>);

impl Catalogs {
    /// The catalog beside `rollout`, when it gives the session `id` a name.
    fn naming(&mut self, rollout: &Path, id: &str) -> Option<PathBuf> {
        let path = everycode::catalog_for(rollout)?;
        let names = self
            .0
            .entry(path.clone())
            .or_insert_with(|| everycode::catalog_titles(&path));
        names.contains_key(id).then_some(path)
    }
}

/// Top-level sessions from every rollout found: subagents whose parent exists are folded
/// into their parent's sources; a fork's parent file and the title index are sources too,
/// and Every Code's session catalog for a session it names (the catalog is rewritten at
/// every write the agent makes, so it versions only the sessions whose title it holds).
fn list_files(files: &[(PathBuf, Head, usize)], catalogs: &mut Catalogs) -> Vec<Listed> {
    let ids: Vec<String> = files.iter().map(|(p, h, _)| id_of(p, h)).collect();
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        by_id.entry(id.as_str()).or_insert(i);
    }
    // A file is nested when its parent chain ends at a top-level thread (no cycle).
    let parent_of = |i: usize| -> Option<usize> {
        let p = files[i].1.parent.as_deref()?;
        by_id.get(p).copied().filter(|&j| j != i)
    };
    let nested = |i: usize| -> bool {
        let mut seen = HashSet::from([i]);
        let mut cur = i;
        while let Some(p) = parent_of(cur) {
            if !seen.insert(p) {
                return false;
            }
            cur = p;
        }
        cur != i
    };
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut top = Vec::new();
    for i in 0..files.len() {
        if nested(i) {
            if let Some(p) = parent_of(i) {
                children.entry(p).or_default().push(i);
            }
        } else {
            top.push(i);
        }
    }
    let mut out = Vec::new();
    for i in top {
        let (path, head, root) = &files[i];
        let mut listed = Listed::file(ids[i].clone(), path.clone(), *root);
        let mut stack = vec![i];
        let mut seen = HashSet::from([i]);
        while let Some(n) = stack.pop() {
            for &c in children.get(&n).into_iter().flatten() {
                if seen.insert(c) {
                    listed.sources.push(files[c].0.clone());
                    stack.push(c);
                }
            }
        }
        let forked = head.forked_from.as_deref().and_then(|f| by_id.get(f));
        if let Some(&f) = forked.filter(|&&f| f != i) {
            listed.sources.push(files[f].0.clone());
        }
        if let Some(index) = index_for(path) {
            listed.sources.push(index);
        }
        if let Some(catalog) = catalogs.naming(path, &ids[i]) {
            listed.sources.push(catalog);
        }
        out.push(listed);
    }
    out
}

/// `session_index.jsonl` of the Codex home a rollout lives in, if there is one.
fn index_for(rollout: &Path) -> Option<PathBuf> {
    rollout
        .ancestors()
        .skip(1)
        .take(5)
        .map(|d| d.join(INDEX))
        .find(|p| p.is_file())
}

// ---------------------------------------------------------------------------------------
// Loading

/// A rollout parsed on its own, before forks and subagents are resolved.
pub struct Parsed {
    pub session: Session,
    pub head: Head,
    /// Every cumulative `token_count` total, in file order.
    pub totals: Vec<Count>,
}

fn load_listed(dialect: Dialect, listed: &Listed) -> Session {
    let is_titles = |p: &PathBuf| {
        let name = kit::file_name(p);
        name == INDEX || name == everycode::CATALOG_NAME
    };
    // Sources list Codex's index before Every Code's catalog: a name from the catalog wins.
    let mut titles = HashMap::new();
    for p in listed.sources.iter().skip(1).filter(|p| is_titles(p)) {
        if kit::file_name(p) == INDEX {
            titles.extend(read_index(p));
        } else {
            titles.extend(everycode::catalog_titles(p));
        }
    }
    let others: Vec<(PathBuf, Head)> = listed
        .sources
        .iter()
        .skip(1)
        .filter(|p| !is_titles(p))
        .map(|p| (p.clone(), peek_head(p)))
        .collect();
    let main = parse_as(dialect, &listed.path, &listed.id);
    // Listed on its own, a subagent's parent is missing (else it would be nested).
    let spawner = main.head.parent.clone();
    let mut s = resolve(dialect, main, &others, &titles, None, 0);
    if let Some(p) = spawner {
        s.parent = Some(model::unified_id(dialect.agent, &p));
        s.warnings.push(format!(
            "subagent of {p}, whose rollout was not found: listed on its own"
        ));
    }
    s
}

/// Titles from `session_index.jsonl`: the newest (last) line per id wins.
fn read_index(path: &Path) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Ok(f) = kit::open_file(path) else {
        return out;
    };
    // Titles only: an index line that cannot be read costs its title, nothing else.
    let _ = jsonl::read_lines_from(f, INDEX, &mut |_, text| {
        let l: IndexLine = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        if let Some(name) = l
            .thread_name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            out.insert(l.id.into_owned(), name.to_owned());
        }
        Ok(())
    });
    out
}

/// Apply what needs other files: the fork parent's share, subagents, the indexed title.
/// `spawner` is the parsed parent when `p` is one of its subagents.
fn resolve(
    dialect: Dialect,
    p: Parsed,
    others: &[(PathBuf, Head)],
    titles: &HashMap<String, String>,
    spawner: Option<(&Session, &[Count])>,
    depth: usize,
) -> Session {
    let Parsed {
        mut session,
        head,
        totals,
    } = p;
    if let Some(t) = titles.get(&session.id) {
        session.title = Some(t.clone());
    }
    // The fork parent: the spawner itself, or a listed rollout with that id.
    let mut copied = 0;
    if let Some(f) = head.forked_from.as_deref().filter(|f| *f != session.id) {
        session.forked_from = Some(model::unified_id(dialect.agent, f));
        let loaded;
        let parent = match spawner {
            Some((s, t)) if s.id == f => Some((s, t)),
            _ => match others.iter().find(|(_, h)| h.id.as_deref() == Some(f)) {
                Some((path, _)) => {
                    loaded = parse_as(dialect, path, f);
                    Some((&loaded.session, loaded.totals.as_slice()))
                }
                None => None,
            },
        };
        match parent {
            Some((ps, pt)) => {
                mark_inherited(&mut session.messages, &ps.messages);
                copied = totals.iter().zip(pt).take_while(|(a, b)| a == b).count();
            }
            None => session.warnings.push(format!(
                "forked from {f}, whose rollout was not found: tokens include the copied history"
            )),
        }
    }
    session.reported_usage =
        (!totals.is_empty()).then(|| spent(&totals).minus(spent(&totals[..copied])).tokens());
    // Subagents spawned by this thread.
    if depth < MAX_DEPTH {
        let mut taken = HashSet::new();
        let own_totals = totals;
        for (path, h) in others
            .iter()
            .filter(|(_, h)| h.parent.as_deref() == Some(session.id.as_str()))
        {
            let id = id_of(path, h);
            if id == session.id {
                continue;
            }
            let parsed = parse_as(dialect, path, &id);
            let mut child = resolve(
                dialect,
                parsed,
                others,
                titles,
                Some((&session, &own_totals)),
                depth + 1,
            );
            child.parent = Some(session.unified_id());
            let base_name = h.nickname.clone().unwrap_or_else(|| format!("agent-{id}"));
            session.subagents.push(Subagent {
                name: kit::unique_name(&mut taken, &names::escape(&base_name)),
                unified_id: None,
                description: h.role.clone().or_else(|| child.title.clone()),
                tool_call_id: None,
                session: Some(Box::new(child)),
            });
        }
    }
    session
}

/// Mark the messages a fork copied from its parent: the common prefix by role and text.
fn mark_inherited(messages: &mut [Message], parent: &[Message]) {
    let shared = messages
        .iter()
        .zip(parent)
        .take_while(|(a, b)| a.role == b.role && a.kind == b.kind && a.text() == b.text())
        .count();
    for m in &mut messages[..shared] {
        m.inherited = true;
    }
}

/// What a thread spent: the sum of its counter's runs. The counter is cumulative, but
/// Every Code starts it again at each compaction and each resume (its first count then
/// equals the reply's own usage, [`Count::fresh`], set for its rollouts only: Codex's
/// first counts may equal their reply's usage too), and a count below the one before can
/// only be such a restart; a count repeated unchanged (a rate-limit update) adds nothing.
/// For a Codex thread, whose counter runs on, this is its last count.
pub fn spent(counts: &[Count]) -> Usage {
    let mut closed = Usage::default();
    let mut prev: Option<Usage> = None;
    for c in counts {
        if let Some(p) = prev {
            if c.total == p {
                continue;
            }
            if c.fresh || c.total.below(p) {
                closed = closed.plus(p);
            }
        }
        prev = Some(c.total);
    }
    closed.plus(prev.unwrap_or_default())
}

/// Parse one Codex rollout file on its own. Never fails: problems become warnings.
pub fn parse_file(path: &Path, id: &str) -> Parsed {
    parse_as(CODEX, path, id)
}

/// Parse one rollout file of `dialect` on its own. Never fails: problems become warnings.
pub fn parse_as(dialect: Dialect, path: &Path, id: &str) -> Parsed {
    let mut p = Parser::new(dialect, id);
    let name = path.display().to_string();
    let scanned = match open(path) {
        Ok(r) => jsonl::read_lines_from(r, &name, &mut |n, text| p.line(n, text)),
        Err(e) => jsonl::Scanned {
            warnings: vec![format!("cannot open {name}: {e}")],
            unparsed: Vec::new(),
        },
    };
    let format = if is_zst(path) {
        dialect.format_zst
    } else {
        dialect.format
    };
    let mut parsed = p.finish(format);
    parsed.session.source.paths = vec![path.to_path_buf()];
    scanned.into_session(&mut parsed.session);
    if parsed.session.messages.is_empty() && parsed.session.warnings.is_empty() {
        parsed.session.warnings.push(format!("{name}: no messages"));
    }
    parsed
}

/// An assistant or user message from the `event_msg` stream, kept aside with the position it
/// would take, and used only when the file has no `response_item` copy of that stream.
struct Aside {
    at: usize,
    msg: Message,
}

struct Parser {
    b: kit::SessionBuilder,
    head: Option<Head>,
    legacy: bool,
    cli_version: Option<String>,
    meta_time: Option<DateTime<Utc>>,
    model: Option<String>,
    /// A `turn_context` named the model: `token_count` models are then not used.
    turn_model: bool,
    /// The writer restarts its token counter: a count equal to its reply's usage starts a
    /// new run ([`Count::fresh`]). The dialect's, or the file's own word (Every Code's
    /// `originator`) where a directory holds both agents' rollouts.
    restarts: bool,
    /// Reasoning waiting for the reply it belongs to.
    thinking: Vec<String>,
    sealed: bool,
    /// Index of the assistant message later tool calls of the same reply join.
    open_reply: Option<usize>,
    item_prompts: bool,
    item_replies: bool,
    /// A `reasoning` response item was seen: `agent_reasoning` events are copies of it.
    item_reasoning: bool,
    event_prompts: Vec<Aside>,
    event_replies: Vec<Aside>,
    /// `agent_reasoning` events, used only when the file has no `reasoning` item.
    event_reasoning: Vec<Aside>,
    totals: Vec<Count>,
    /// Every Code `event` records of kinds not shown, by kind, in the order first seen.
    unshown: Vec<(String, usize)>,
    lines: usize,
}

impl Parser {
    fn new(dialect: Dialect, id: &str) -> Parser {
        Parser {
            b: kit::SessionBuilder::new(dialect.agent, id),
            head: None,
            legacy: false,
            cli_version: None,
            meta_time: None,
            model: None,
            turn_model: false,
            restarts: dialect.counter_restarts,
            thinking: Vec::new(),
            sealed: false,
            open_reply: None,
            item_prompts: false,
            item_replies: false,
            item_reasoning: false,
            event_prompts: Vec::new(),
            event_replies: Vec::new(),
            event_reasoning: Vec::new(),
            totals: Vec::new(),
            unshown: Vec::new(),
            lines: 0,
        }
    }

    /// One line; `Err` when it is not a record (the caller warns, or treats it as partial).
    fn line(&mut self, n: usize, text: &[u8]) -> Result<(), String> {
        match self.record(text) {
            Err(e) if std::str::from_utf8(text).is_err() => {
                // One bad byte costs one replacement character, not the record.
                let lossy = String::from_utf8_lossy(text).into_owned();
                self.record(lossy.as_bytes()).map_err(|_| e)
            }
            r => r,
        }
        .map(|()| self.lines = n)
    }

    fn record(&mut self, text: &[u8]) -> Result<(), String> {
        // Most lines are the compact envelope Codex writes: its payload is read once, in
        // place, instead of being scanned first as a raw value and then read again.
        if let Some((ts, kind, payload)) = records::envelope(text) {
            if self.payload(kind, payload, kit::parse_rfc3339(ts)).is_ok() {
                return Ok(());
            }
            // Not one JSON value after all (a key after the payload, say): read in full.
        }
        let raw: RawLine = jsonl::from_line(text).map_err(|e| format!("invalid JSON: {e}"))?;
        let ts = raw.timestamp.as_deref().and_then(kit::parse_rfc3339);
        let de = |e: serde_json::Error| format!("unreadable record: {e}");
        match (raw.kind.as_deref(), raw.payload) {
            (Some(kind), Some(payload)) => self.payload(kind, payload.get(), ts).map_err(de)?,
            (None, Some(_)) => return Err("a payload without a type".into()),
            // Mid-2025: `{"record_type":"state"}` markers between bare items.
            (_, None) if raw.record_type.is_some() => {}
            // Mid-2025: a bare response item.
            (Some(_), None) => {
                self.legacy = true;
                let text = std::str::from_utf8(text).map_err(|e| format!("invalid JSON: {e}"))?;
                self.item(response_item(text).map_err(de)?, ts);
            }
            // Mid-2025 first line: `{id, timestamp, instructions, git?}`.
            (None, None) => {
                let m: Meta = serde_json::from_slice(text).map_err(de)?;
                if m.id.is_none() {
                    return Err("a line without a type".into());
                }
                self.legacy = true;
                self.meta(m, ts);
            }
        }
        Ok(())
    }

    /// A record's `payload` of type `kind`. Nothing is changed when it cannot be read (each
    /// arm reads before it changes anything), so [`Parser::record`] can read the line again
    /// in full. An unknown kind's payload is still read through, so it must be JSON.
    fn payload(
        &mut self,
        kind: &str,
        payload: &str,
        ts: Option<DateTime<Utc>>,
    ) -> serde_json::Result<()> {
        match kind {
            "session_meta" => self.meta(serde_json::from_str(payload)?, ts),
            "turn_context" => {
                let t: TurnContext = serde_json::from_str(payload)?;
                if let Some(m) = t.model.filter(|m| !m.is_empty()) {
                    self.model = Some(m.into_owned());
                    self.turn_model = true;
                }
                if self.b.s.cwd.is_none() {
                    self.b.s.cwd = t.cwd.map(Cow::into_owned);
                }
            }
            "response_item" => self.item(response_item(payload)?, ts),
            "event_msg" => self.event(event_msg(payload)?, ts),
            // Every Code's events: `{id, event_seq, order?, msg}`, `msg` an `event_msg`.
            "event" => {
                let r: everycode::Recorded = serde_json::from_str(payload)?;
                self.recorded(r.msg.get(), ts)?;
            }
            "compacted" => {
                let c: Compacted = serde_json::from_str(payload)?;
                self.flush_thinking(ts);
                self.push(Message {
                    role: Role::System,
                    kind: MessageKind::CompactionSummary,
                    content: c.message.into_owned(),
                    timestamp: ts,
                    ..Message::default()
                });
            }
            // world_state, inter_agent_communication, newer kinds: not conversation.
            _ => {
                serde_json::from_str::<serde::de::IgnoredAny>(payload)?;
            }
        }
        Ok(())
    }

    fn meta(&mut self, m: Meta<'_>, ts: Option<DateTime<Utc>>) {
        // Forks copy their parent's `session_meta`: only the first one is this thread's.
        if self.head.is_some() {
            return;
        }
        self.head = Some(Head::from_meta(&m));
        self.restarts |= m.originator.as_deref() == Some(everycode::ORIGINATOR);
        self.meta_time = m.timestamp.as_deref().and_then(kit::parse_rfc3339).or(ts);
        self.cli_version = m.cli_version.map(Cow::into_owned);
        if let Some(cwd) = m.cwd.filter(|c| !c.is_empty()) {
            self.b.s.cwd = Some(cwd.into_owned());
        }
        if let Some(i) = m.instructions.filter(|i| !i.trim().is_empty()) {
            self.context("instructions", i.into_owned(), ts);
        }
    }

    fn push(&mut self, m: Message) {
        self.open_reply = None;
        self.b.push(m);
    }

    fn context(&mut self, label: &str, text: String, ts: Option<DateTime<Utc>>) {
        self.open_reply = None;
        self.b.context(label, text, ts);
    }

    fn take_thinking(&mut self) -> Option<String> {
        let sealed = std::mem::take(&mut self.sealed);
        if self.thinking.is_empty() {
            return sealed.then(|| model::SEALED_THINKING.to_string());
        }
        Some(std::mem::take(&mut self.thinking).join("\n\n"))
    }

    /// Reasoning with no reply after it stands as a reply of its own.
    fn flush_thinking(&mut self, ts: Option<DateTime<Utc>>) {
        if let Some(t) = self.take_thinking() {
            let m = self.reply(String::new(), Some(t), ts);
            self.push(m);
        }
    }

    fn reply(
        &self,
        content: String,
        thinking: Option<String>,
        ts: Option<DateTime<Utc>>,
    ) -> Message {
        Message {
            role: Role::Assistant,
            content,
            thinking,
            model: self.model.clone(),
            timestamp: ts,
            ..Message::default()
        }
    }

    fn item(&mut self, it: ResponseItem<'_>, ts: Option<DateTime<Utc>>) {
        match it {
            ResponseItem::Message { role, content, id } => {
                let text = contents_text(content.as_ref());
                match role.as_ref() {
                    "user" => match injected(&text).or_else(|| {
                        // Every Code's status items, untagged: never a prompt.
                        everycode::injected(id.as_deref(), &text)
                            .map(|label| Injected::Context(label.into()))
                    }) {
                        Some(Injected::Context(label)) => {
                            if self.b.s.cwd.is_none() && label == "environment context" {
                                self.b.s.cwd = environment_cwd(&text);
                            }
                            self.context(&label, text, ts)
                        }
                        Some(Injected::Execution) => self.push(Message {
                            role: Role::User,
                            kind: MessageKind::Execution,
                            content: text,
                            timestamp: ts,
                            ..Message::default()
                        }),
                        Some(Injected::Event) => {
                            self.open_reply = None;
                            self.b.event(text, ts);
                        }
                        None => {
                            self.flush_thinking(ts);
                            self.item_prompts = true;
                            if self.b.s.title.is_none() {
                                self.b.s.title = prompt_title(&text);
                            }
                            self.push(Message {
                                role: Role::User,
                                content: text,
                                timestamp: ts,
                                ..Message::default()
                            });
                        }
                    },
                    "assistant" => {
                        self.item_replies = true;
                        let thinking = self.take_thinking();
                        let m = self.reply(text, thinking, ts);
                        self.push(m);
                        self.open_reply = Some(self.b.s.messages.len() - 1);
                    }
                    other => {
                        let label = match tag_name(&text) {
                            Some(t) => t,
                            None if other == "developer" => "developer instructions".into(),
                            None => format!("{other} message"),
                        };
                        self.context(&label, text, ts);
                    }
                }
            }
            ResponseItem::Reasoning {
                summary,
                content,
                encrypted_content,
            } => {
                self.item_reasoning = true;
                let mut texts: Vec<String> = summary
                    .into_iter()
                    .map(|p| p.text.into_owned())
                    .filter(|t| !t.trim().is_empty())
                    .collect();
                if texts.is_empty() {
                    texts = content
                        .into_iter()
                        .flatten()
                        .map(|p| p.text.into_owned())
                        .filter(|t| !t.trim().is_empty())
                        .collect();
                }
                if texts.is_empty() {
                    self.sealed |= encrypted_content.is_some_and(|e| !e.is_empty());
                }
                self.thinking.extend(texts);
            }
            ResponseItem::FunctionCall {
                name,
                arguments,
                call_id,
            } => {
                // Arguments that are not JSON (cut off) stay the call's input as text, counted.
                let input = kit::call_arguments(
                    &arguments,
                    "function_call items",
                    &mut self.b.unparsed,
                    || format!("call {call_id}"),
                );
                self.call(call_id.into_owned(), name.into_owned(), input, ts);
            }
            ResponseItem::CustomToolCall {
                name,
                input,
                call_id,
            } => self.call(
                call_id.into_owned(),
                name.into_owned(),
                serde_json::Value::String(input.into_owned()),
                ts,
            ),
            ResponseItem::LocalShellCall {
                call_id,
                id,
                action,
            } => {
                let id = call_id.or(id).map(Cow::into_owned).unwrap_or_default();
                self.call(id, "local_shell".into(), action, ts);
            }
            ResponseItem::WebSearchCall { id, action } => {
                let id = id.map(Cow::into_owned).unwrap_or_default();
                self.call(id, "web_search".into(), action, ts);
            }
            ResponseItem::FunctionCallOutput { call_id, output }
            | ResponseItem::CustomToolCallOutput { call_id, output } => {
                let (text, is_error) = output_text(output);
                self.open_reply = None;
                self.b.tool_result(&call_id, None, text, is_error, ts);
            }
            ResponseItem::Other => {}
        }
    }

    /// A tool call joins the reply it follows; after new reasoning it starts a new one.
    fn call(
        &mut self,
        call_id: String,
        name: String,
        input: serde_json::Value,
        ts: Option<DateTime<Utc>>,
    ) {
        let call = ToolCall {
            tool_call_id: call_id,
            tool_name: name,
            input,
            ..ToolCall::default()
        };
        let open = self.open_reply.filter(|&i| {
            i + 1 == self.b.s.messages.len() && self.thinking.is_empty() && !self.sealed
        });
        if open.is_some() {
            // Re-push the reply so the builder learns the new call's id.
            if let Some(mut m) = self.b.s.messages.pop() {
                m.tool_calls.push(call);
                self.b.push(m);
                return;
            }
        }
        let thinking = self.take_thinking();
        let mut m = self.reply(String::new(), thinking, ts);
        m.tool_calls.push(call);
        self.push(m);
        self.open_reply = Some(self.b.s.messages.len() - 1);
    }

    fn event(&mut self, ev: EventMsg<'_>, ts: Option<DateTime<Utc>>) {
        let at = self.b.s.messages.len();
        match ev {
            EventMsg::UserMessage { message, images } => {
                let mut text = message.into_owned();
                for url in images.into_iter().flatten() {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&kit::data_url_placeholder(&url));
                }
                let msg = Message {
                    role: Role::User,
                    content: text,
                    timestamp: ts,
                    ..Message::default()
                };
                self.event_prompts.push(Aside { at, msg });
            }
            EventMsg::AgentMessage { message } => {
                let msg = self.reply(message.into_owned(), None, ts);
                self.event_replies.push(Aside { at, msg });
            }
            EventMsg::AgentReasoning { text } if !text.trim().is_empty() => {
                let msg = self.reply(String::new(), Some(text.into_owned()), ts);
                self.event_reasoning.push(Aside { at, msg });
            }
            EventMsg::TokenCount { info } => {
                let Some(info) = info else { return };
                if let Some(total) = info.total_token_usage {
                    self.totals.push(Count {
                        total,
                        fresh: self.restarts && info.last_token_usage == Some(total),
                    });
                }
                // Every Code writes no `turn_context`: its counts name the model that
                // answered (else the one asked). They come before the reply they count.
                let named = info.latest_response_model.or(info.requested_model);
                if let Some(m) = named.filter(|m| !m.is_empty() && !self.turn_model) {
                    self.model = Some(m);
                }
            }
            EventMsg::AgentReasoning { .. } | EventMsg::Other => {}
        }
    }

    /// The `msg` of an Every Code `event` record: what Codex's `event_msg` holds is read as
    /// one ([`Parser::event`]), notices become events of the session, the kinds that repeat
    /// what the response items hold are passed over, and any other kind is counted for a
    /// warning. Reads before it changes anything, like [`Parser::payload`].
    fn recorded(&mut self, msg: &str, ts: Option<DateTime<Utc>>) -> serde_json::Result<()> {
        let kind = tag_of(msg)?;
        match everycode::event_use(&kind) {
            everycode::EventUse::Codex => self.event(event_msg(msg)?, ts),
            everycode::EventUse::Notice(label) => {
                let n: everycode::Notice = serde_json::from_str(msg)?;
                let text = n.text();
                self.open_reply = None;
                self.b.event(
                    if text.is_empty() {
                        label.to_string()
                    } else {
                        format!("{label}: {text}")
                    },
                    ts,
                );
            }
            everycode::EventUse::Copy => {}
            everycode::EventUse::Unknown => {
                match self.unshown.iter_mut().find(|(k, _)| *k == kind) {
                    Some((_, n)) => *n += 1,
                    None => self.unshown.push((kind.into_owned(), 1)),
                }
            }
        }
        Ok(())
    }

    fn finish(mut self, format: &str) -> Parsed {
        self.flush_thinking(None);
        let mut aside: Vec<Aside> = Vec::new();
        if !self.item_prompts {
            aside.append(&mut self.event_prompts);
        }
        if !self.item_reasoning {
            // The only copy of this reasoning: shown where it came, before its reply (the
            // sort below keeps this order among asides at one place).
            aside.append(&mut self.event_reasoning);
        }
        if !self.item_replies {
            aside.append(&mut self.event_replies);
        }
        if !aside.is_empty() {
            aside.sort_by_key(|a| a.at);
            let old = std::mem::take(&mut self.b.s.messages);
            let mut merged = Vec::with_capacity(old.len() + aside.len());
            let mut aside = aside.into_iter().peekable();
            for (i, m) in old.into_iter().enumerate() {
                while let Some(a) = aside.next_if(|a| a.at <= i) {
                    merged.push(a.msg);
                }
                merged.push(m);
            }
            merged.extend(aside.map(|a| a.msg));
            self.b.s.messages = merged;
        }
        let head = self.head.unwrap_or_default();
        let s = &mut self.b.s;
        s.created_at = self.meta_time;
        // The model of the last turn: the session's model when no reply came back.
        s.set_model = self.model.clone();
        s.source.format = if self.legacy {
            "codex-legacy-jsonl".into()
        } else {
            format.into()
        };
        s.source.format_version = self.cli_version;
        if self.lines > 0 && head.id.is_none() && !self.legacy {
            self.b
                .warn("no session_meta line: the id comes from the file name".to_string());
        }
        if !self.unshown.is_empty() {
            self.b.warn(everycode::unshown_warning(&self.unshown));
        }
        Parsed {
            session: self.b.finish(),
            head,
            totals: self.totals,
        }
    }
}

/// The text of message content: text parts joined by newlines, images as placeholders.
fn contents_text(c: Option<&Contents<'_>>) -> String {
    match c {
        None => String::new(),
        Some(Contents::Text(t)) => t.to_string(),
        Some(Contents::Parts(parts)) => {
            let mut out = String::new();
            for p in parts {
                let piece: Cow<'_, str> = match p {
                    Part::InputText { text } | Part::OutputText { text } | Part::Text { text } => {
                        Cow::Borrowed(text.as_ref())
                    }
                    Part::InputImage { image_url } => kit::data_url_placeholder(image_url).into(),
                    Part::Other => continue,
                };
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&piece);
            }
            out
        }
    }
}

/// The title a prompt gives: its first line of words, past the `<image name=…>` wrapper
/// lines and placeholders Codex puts before the text of a prompt with pictures, and past
/// the IDE context the VS Code extension puts before `## My request for Codex:`.
fn prompt_title(text: &str) -> Option<String> {
    let text = text
        .split_once("## My request for Codex:")
        .map_or(text, |(_, request)| request);
    let words: Vec<&str> = text
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            !(l.starts_with("<image") || l.starts_with("</image>") || l.starts_with("[image"))
        })
        .collect();
    kit::title_from_text(&words.join("\n"))
}

/// A tool output's text, and whether it reports a failure.
fn output_text(o: Output<'_>) -> (String, bool) {
    match o {
        Output::Text(s) => {
            if s.trim_start().starts_with('{') {
                if let Ok(j) = serde_json::from_str::<ExecJson>(&s) {
                    let code = j.metadata.and_then(|m| m.exit_code).unwrap_or(0);
                    return (j.output.into_owned(), code != 0);
                }
            }
            if let Some(text) = mcp_text(&s) {
                return (text, false);
            }
            let failed = exit_code_in_header(&s).is_some_and(|c| c != 0);
            (s.into_owned(), failed)
        }
        Output::Struct { content, success } => {
            (contents_text(content.as_ref()), success == Some(false))
        }
    }
}

/// The text of an MCP tool's output. Codex stores an MCP result without images as the JSON
/// of its content blocks, one string (`[{"type":"text","text":"…"}]`: `From<&CallToolResult>
/// for FunctionCallOutputPayload`, `codex-rs/protocol/src/models.rs` in openai/codex at
/// 152e7cae, and the same in mid-2025 builds). A list of text blocks and nothing else is
/// its texts, one per line; any other field or block keeps the output as stored.
fn mcp_text(s: &str) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct TextBlock<'a> {
        #[serde(rename = "type")]
        kind: Cow<'a, str>,
        #[serde(borrow)]
        text: Cow<'a, str>,
    }
    if !s.trim_start().starts_with('[') {
        return None;
    }
    let blocks: Vec<TextBlock<'_>> = serde_json::from_str(s).ok()?;
    if blocks.is_empty() || blocks.iter().any(|b| b.kind != "text") {
        return None;
    }
    let texts: Vec<&str> = blocks.iter().map(|b| b.text.as_ref()).collect();
    Some(texts.join("\n"))
}

/// `Process exited with code N` / `Exit code: N` in the first lines of a shell output.
fn exit_code_in_header(s: &str) -> Option<i64> {
    s.lines().take(6).find_map(|l| {
        l.strip_prefix("Process exited with code ")
            .or_else(|| l.strip_prefix("Exit code: "))
            .and_then(|c| c.trim().parse().ok())
    })
}

enum Injected {
    Context(String),
    Execution,
    Event,
}

/// Harness-injected user-role messages: AGENTS.md, `<environment_context>`, and any message
/// that is one `<tag>…</tag>` block (Codex wraps everything it injects that way).
fn injected(text: &str) -> Option<Injected> {
    let t = text.trim();
    if t.starts_with("# AGENTS.md instructions") || t.starts_with("<INSTRUCTIONS>") {
        return Some(Injected::Context("AGENTS.md instructions".into()));
    }
    let tag = tag_name(t)?;
    if !t.ends_with(&format!("</{tag}>")) && !t.ends_with(&format!("</{}>", tag.replace(' ', "_")))
    {
        return None;
    }
    Some(match tag.as_str() {
        "user shell command" => Injected::Execution,
        "turn aborted" => Injected::Event,
        _ => Injected::Context(tag),
    })
}

/// The `<cwd>` of an `<environment_context>` block: where the session ran, in files that
/// keep it nowhere else (the envelope-less mid-2025 files have no `session_meta` or
/// `turn_context`). Codex writes the path as it is, unescaped.
fn environment_cwd(text: &str) -> Option<String> {
    let start = text.find("<cwd>")? + "<cwd>".len();
    let len = text[start..].find("</cwd>")?;
    let cwd = text[start..start + len].trim();
    (!cwd.is_empty()).then(|| cwd.to_owned())
}

/// `environment context` for a text opening with `<environment_context>`: a bare tag of
/// lowercase letters, `_` and spaces (so `<image name=…>` or `<div>` prose is not one).
fn tag_name(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('<')?;
    let end = rest.find('>')?;
    let name = &rest[..end];
    let ok = name.len() >= 3
        && name.len() <= 60
        && name.contains(['_', ' '])
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c == '_' || c == ' ');
    ok.then(|| name.replace('_', " "))
}
