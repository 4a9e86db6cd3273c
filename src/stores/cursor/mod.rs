//! Cursor: the cursor-agent CLI's per-chat `store.db`, the agent transcripts, and the IDE's
//! global `state.vscdb`. Cursor is closed source; every shape here is reverse engineered by
//! peers (`docs/formats.md` §5), so every field is optional and every decode is defensive.
//!
//! **Where.** `$CURSOR_CONFIG_DIR` (default `~/.cursor`) holds the CLI's
//! `chats/<md5(cwd)>/<agentId>/store.db` and the agent transcripts
//! `projects/<cwd-dashed>/agent-transcripts/<uuid>.{txt,jsonl}` (or `<uuid>/<uuid>.jsonl`
//! with `subagents/`). The IDE's user dir (`$XDG_CONFIG_HOME/Cursor/User`, default
//! `~/.config/Cursor/User`; macOS `~/Library/Application Support/Cursor/User`) holds
//! `globalStorage/state.vscdb` and one `workspaceStorage/<hash>/state.vscdb` per workspace;
//! `~/.cursor-server/data/User` is the same layout, kept by the remote server of a window
//! opened over SSH. A root given by hand may also be one `store.db` or one `.vscdb` file.
//!
//! **cursor-agent `store.db`.** `meta` has one row, key `"0"`, whose value is *hex-encoded*
//! JSON `{agentId, latestRootBlobId, name, mode, createdAt, lastUsedModel}`; `blobs` is
//! content-addressed (`id` = hex sha256 of `data`). The root blob is protobuf: field 1
//! (repeated, 32 raw bytes each) lists the message blob ids in order, field 9 is the
//! workspace path. Only those two fields are decoded, by the small reader in [`pb`], which
//! never panics and never allocates more than the input holds. Message blobs are AI-SDK-like
//! JSON `{role, content}`. When the root cannot be read the JSON blobs are shown in storage
//! (rowid) order, with a warning. Nothing in the store carries per-message times or usage.
//!
//! **IDE `state.vscdb`.** Only the table `cursorDiskKV` is read, and only by key range:
//! listing reads the `composerData:` keys, a session reads its `composerData:<id>` row and its
//! bubbles `bubbleId:<id>:` … `bubbleId:<id>;` (`;` is the byte after `:`), never a full scan.
//! `ItemTable`, which holds `cursorAuth/*` tokens, is never selected from. Bubbles are shown in
//! the order of `fullConversationHeadersOnly` (older composers keep them inline in
//! `conversation`); bubbles the headers do not name (reverted or edited turns) are counted in
//! a warning. The version of a composer is its `composerData` row plus the count and last key
//! of its bubbles, so one chat's write re-renders only that chat.
//!
//! **Workspace `state.vscdb`.** Two `ItemTable` values read by exact key: the chat panel's
//! tabs and composers kept inline in the workspace's composer list ([`workspace`]).
//!
//! **Transcripts.** `.txt` (`user:` / `assistant:` blocks with `[Thinking]`, `[Tool call]`
//! and `[Tool result]` markers) and `.jsonl` (`{role, message: {content: [...]}}`, no ids,
//! no times, no tool results).
//!
//! **One id, several sources.** The CLI and the IDE may write a transcript for a chat they
//! also keep in their database, and a workspace's composer list names composers whose body
//! is in the global database. The richest source wins: `store.db`, then the global
//! `state.vscdb`, then a workspace `state.vscdb`, then `.txt`, then `.jsonl`.
//!
//! **Layout.** This module finds the roots, lists every source, picks the one a session is
//! read from, and holds the content shapes more than one source writes (AI-SDK parts, the
//! `<user_query>` wrapper, tool outputs, times). Each source is read in its own module,
//! because the three share no storage and change on their own: [`cli`] the cursor-agent
//! `store.db`, [`ide`] the IDE's global `state.vscdb`, [`workspace`] its workspace
//! databases, [`transcript`] the `.txt` and `.jsonl`
//! transcripts; [`decode`] reads the bytes inside a `store.db` (protobuf root blob, hex,
//! URIs) without touching a database.

mod cli;
mod decode;
mod ide;
#[cfg(test)]
mod tests;
mod transcript;
mod workspace;

pub use decode::{decode_root, pb, unhex, uri_to_path, Root0};

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Reader};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Session};
use crate::names;
use chrono::{DateTime, Utc};
use ide::{composer_version, list_composers};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use transcript::{load_jsonl_session, load_txt};

/// Message blobs read from one `store.db` at most (a corrupt root cannot make this loop
/// forever or allocate without bound).
const MAX_MESSAGES: usize = 200_000;
/// Largest transcript file read.
const MAX_TRANSCRIPT: u64 = 256 << 20;
/// Names cursor-agent gives a chat before it has one.
const DEFAULT_NAMES: &[&str] = &["New Agent", "New Chat", "Untitled", "New chat"];

/// Where Cursor keeps its chats, existing or not: the CLI dir, then the IDE user dirs.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out = kit::roots(
        env,
        Agent::Cursor,
        &kit::Places {
            env: &[("CURSOR_CONFIG_DIR", "")],
            defaults: &[".cursor"],
            spec: &[],
        },
    );
    match env.path_var("XDG_CONFIG_HOME") {
        Some(x) => out.push(Root::new(
            Agent::Cursor,
            x.join("Cursor/User"),
            "XDG_CONFIG_HOME",
        )),
        None => out.push(Root::new(
            Agent::Cursor,
            env.home.join(".config/Cursor/User"),
            "default",
        )),
    }
    out.push(Root::new(
        Agent::Cursor,
        env.home.join("Library/Application Support/Cursor/User"),
        "default (macOS)",
    ));
    out.push(Root::new(
        Agent::Cursor,
        env.home.join(".cursor-server/data/User"),
        "default (remote server)",
    ));
    out
}

pub struct CursorStore {
    base: Base,
    reader: Reader,
}

/// What a listed session is read from; decided from the listing, see [`kind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Cli,
    Ide,
    Workspace,
    Txt,
    Jsonl,
}

fn kind(l: &Listed) -> Kind {
    if let Some(k) = &l.key {
        return match workspace::slot(k) {
            Some(_) => Kind::Workspace,
            None => Kind::Ide,
        };
    }
    match l.path.extension().and_then(|e| e.to_str()) {
        Some("txt") => Kind::Txt,
        Some("jsonl") => Kind::Jsonl,
        _ => Kind::Cli,
    }
}

impl CursorStore {
    pub fn new(roots: Vec<Root>) -> CursorStore {
        CursorStore {
            base: Base::new(Agent::Cursor, roots),
            reader: Reader::new(),
        }
    }

    /// Every IDE database under the roots (global, then each workspace's), with its root
    /// index.
    fn ide_dbs(&self) -> Vec<(usize, PathBuf)> {
        let mut out = Vec::new();
        for (i, r) in self.base.roots.iter().enumerate() {
            let p = &r.path;
            if p.is_file() && kit::file_name(p).ends_with(".vscdb") {
                out.push((i, p.clone()));
                continue;
            }
            if p.join("globalStorage/state.vscdb").is_file() {
                out.push((i, p.join("globalStorage/state.vscdb")));
            }
            for ws in kit::subdirs(&p.join("workspaceStorage")) {
                let db = ws.join("state.vscdb");
                if db.is_file() {
                    out.push((i, db));
                }
            }
        }
        out
    }

    /// A database's composers (`cursorDiskKV`) and workspace chats (`ItemTable`, two keys):
    /// both are read from every `.vscdb`, so a database given by hand is read whichever it is.
    fn list_ide(&self, root: usize, db: &Path, out: &mut Vec<Listed>) {
        let ws = kit::file_name(db.parent().unwrap_or(db)).to_string();
        let found = self.reader.list("cursor", db, |c| {
            Ok((list_composers(c)?, workspace::list(c, &ws)?))
        });
        let Some((composers, chats)) = found else {
            return;
        };
        out.extend(
            composers
                .into_iter()
                .map(|id| sqlite::row_session(&id, db, root)),
        );
        for (id, key) in chats {
            let mut l = sqlite::row_session(&id, db, root);
            l.key = Some(key);
            l.sources.extend(workspace::workspace_json(db));
            out.push(l);
        }
    }
}

impl Store for CursorStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut all = Vec::new();
        for (i, r) in self.base.roots.iter().enumerate() {
            let p = &r.path;
            if p.is_file() && kit::file_name(p) == "store.db" {
                all.push(cli_listed(p, i));
                continue;
            }
            for hash in kit::subdirs(&p.join("chats")) {
                for agent in kit::subdirs(&hash) {
                    let db = agent.join("store.db");
                    if db.is_file() {
                        all.push(cli_listed(&db, i));
                    }
                }
            }
            for project in kit::subdirs(&p.join("projects")) {
                list_transcripts(&project.join("agent-transcripts"), i, &mut all);
            }
        }
        for (i, db) in self.ide_dbs() {
            self.list_ide(i, &db, &mut all);
        }
        // One id, one session: the richest source wins (see the module docs).
        all.sort_by_key(kind);
        let mut seen = HashSet::new();
        all.retain(|l| seen.insert(l.id.clone()));
        all
    }

    /// The listing reads each root, the CLI's `chats/<hash>/<agent>/` directories and
    /// their `store.db`, the `projects/*/agent-transcripts/` directories with each
    /// session's folder and its `subagents/`, and every IDE database (`globalStorage/`,
    /// each `workspaceStorage/<ws>/`). A write to a database lands in its `-wal` or in
    /// itself, so any write to one lists the store again at the next search.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        fn dir(g: &mut Glance, p: PathBuf) {
            if p.is_dir() {
                g.dirs.push(p);
            }
        }
        fn db(g: &mut Glance, p: &Path) {
            g.files.extend(sqlite::with_journals(p));
        }
        let mut g = Glance::default();
        for r in &self.base.roots {
            let p = &r.path;
            if p.is_file() {
                db(&mut g, p);
                continue;
            }
            dir(&mut g, p.clone());
            dir(&mut g, p.join("chats"));
            for hash in kit::subdirs(&p.join("chats")) {
                for agent in kit::subdirs(&hash) {
                    db(&mut g, &agent.join("store.db"));
                    g.dirs.push(agent);
                }
                g.dirs.push(hash);
            }
            dir(&mut g, p.join("projects"));
            for project in kit::subdirs(&p.join("projects")) {
                let transcripts = project.join("agent-transcripts");
                for session in kit::subdirs(&transcripts) {
                    dir(&mut g, session.join("subagents"));
                    g.dirs.push(session);
                }
                dir(&mut g, transcripts);
                g.dirs.push(project);
            }
            dir(&mut g, p.join("globalStorage"));
            dir(&mut g, p.join("workspaceStorage"));
            for ws in kit::subdirs(&p.join("workspaceStorage")) {
                g.dirs.push(ws);
            }
        }
        for (_, ide) in self.ide_dbs() {
            db(&mut g, &ide);
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        match kind(listed) {
            Kind::Cli => self.load_cli(listed),
            Kind::Ide => self.load_ide(listed),
            Kind::Workspace => self.load_ws(listed),
            Kind::Txt => load_txt(listed),
            Kind::Jsonl => load_jsonl_session(&listed.path, &listed.id),
        }
    }

    /// One read of each database for all its sessions.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            |_| Ok(()),
            |c, (), key| match workspace::slot(key) {
                Some(s) => workspace::version(c, s),
                None => composer_version(c, key),
            },
        )
    }

    fn problems(&self) -> Vec<String> {
        let dbs = self.ide_dbs();
        self.reader
            .problems(dbs.iter().map(|(_, db)| db.as_path()), |c| {
                Ok((list_composers(c)?, workspace::list(c, "")?))
            })
    }
}

fn cli_listed(db: &Path, root: usize) -> Listed {
    let id = db
        .parent()
        .and_then(Path::file_name)
        .map(names::os_id)
        .unwrap_or_default();
    Listed {
        id,
        path: db.to_path_buf(),
        sources: vec![db.to_path_buf(), sqlite::companion(db, "-wal")],
        key: None,
        root,
    }
}

/// `<uuid>.txt`, `<uuid>.jsonl` and `<uuid>/<uuid>.jsonl` (whose `subagents/` are sources too).
fn list_transcripts(dir: &Path, root: usize, out: &mut Vec<Listed>) {
    for p in kit::entries(dir) {
        let name = kit::file_name(&p);
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            let f = p.join(format!("{name}.jsonl"));
            if f.is_file() {
                let mut l = Listed::file(name, f, root);
                l.sources.extend(subagent_files(&p));
                out.push(l);
            }
            continue;
        }
        if !p.is_file() {
            continue;
        }
        if let Some(id) = name
            .strip_suffix(".txt")
            .or_else(|| name.strip_suffix(".jsonl"))
            .filter(|s| !s.is_empty())
        {
            out.push(Listed::file(id, p.clone(), root));
        }
    }
}

fn subagent_files(session_dir: &Path) -> Vec<PathBuf> {
    kit::entries(&session_dir.join("subagents"))
        .into_iter()
        .filter(|p| kit::file_name(p).ends_with(".jsonl") && p.is_file())
        .collect()
}
// ---------------------------------------------------------------------------------------
// Shapes more than one source writes

fn time_value(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(DateTime::from_timestamp_millis)
            .or_else(|| kit::parse_rfc3339(s)),
        _ => super::parse_time(v),
    }
}

/// A part or record of a shape sessfs does not read: counted under `what` and shown as
/// stored, right where it stands (see [`kit::Unparsed`]).
fn odd(b: &mut SessionBuilder, what: &str, problem: &str, place: &str, v: &Value) {
    b.unparsed(
        what,
        problem,
        || place.to_string(),
        what.trim_end_matches('s'),
        &v.to_string(),
        None,
    );
}

/// Text of AI-SDK content: a string, or the `text` of its text parts.
fn parts_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .filter(|p| matches!(kit::str_field(p, "type"), Some("text") | None))
            .filter_map(|p| kit::str_field(p, "text"))
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// `(query, the rest)` of a user text that wraps the typed prompt in `<user_query>` next to
/// injected context (`<user_info>`, `<timestamp>`, attached files).
fn split_user_query(text: &str) -> (String, String) {
    let Some(start) = text.find("<user_query>") else {
        return (text.to_string(), String::new());
    };
    let inner_start = start + "<user_query>".len();
    let end = text[inner_start..]
        .find("</user_query>")
        .map_or(text.len(), |e| inner_start + e);
    let query = text[inner_start..end].trim().to_string();
    let after = (end + "</user_query>".len()).min(text.len());
    let rest = format!("{}{}", &text[..start], &text[after..]);
    (query, rest.trim().to_string())
}

/// A tool result's output as text: a string, AI SDK v5 `{type, value}`, or JSON.
fn output_text(v: Option<&Value>) -> (String, bool) {
    match v {
        None | Some(Value::Null) => (String::new(), false),
        Some(Value::String(s)) => (s.clone(), false),
        Some(o @ Value::Object(_)) if o.get("value").is_some() => {
            let err = kit::str_field(o, "type").is_some_and(|t| t.starts_with("error"));
            let val = o.get("value");
            let text = match val {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(_)) => parts_text(val),
                Some(x) => x.to_string(),
                None => String::new(),
            };
            (text, err)
        }
        Some(Value::Array(_)) => (parts_text(v), false),
        Some(x) => (x.to_string(), false),
    }
}
