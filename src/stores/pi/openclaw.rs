//! OpenClaw, both eras under one `openclaw/` directory: the JSONL files
//! (`agents/<agent>/sessions/<id>.jsonl`, read by [`PiStore`]) and, since 2026.7.2, the
//! per-agent database `agents/<agent>/agent/openclaw-agent.sqlite`.
//!
//! **The database.** `transcript_events(session_id, seq, event_json)` holds one pi JSONL line
//! per row; a session is its rows `ORDER BY seq` (rowid order is not seq order), fed to the pi
//! parser exactly as the lines of a file would be ([`parse::load_lines`]). Sessions are listed
//! from `sessions` (first and intermediate schemas) or `session_windows` (latest), each only
//! when it has transcript events: 2026.6.5–2026.7.1 databases exist without any, and then the
//! files are the transcript. Every column is probed ([`Table::probe`]); only `sessions`,
//! `session_windows`, `session_entries`, `session_nodes` and `transcript_events` are read.
//! A session's version is its event count and largest `seq` plus its index rows, so a write to
//! one session re-renders only that one.
//!
//! **One id in both eras.** A session migrated into the database keeps its file behind; when
//! both hold the same id, the database (the agent's source of truth since then) wins and the
//! file is not listed.
//!
//! **Titles.** OpenClaw's own session index names sessions: `sessions.json` beside the files
//! (`sessionKey → {sessionId, displayName, label, subject, …}`) in the file era;
//! `display_name` columns, `session_entries.entry_json` and `session_nodes` (`display_name`,
//! `label`, `entry_json`) in the database. The first of display name, label, subject found
//! there is the title; without one the transcript's own title (`session_info`, first prompt)
//! stays.
//!
//! **Archived copies.** A `/reset` renames the transcript to `<id>.jsonl.reset.<ts>`; backups
//! (`.jsonl.bak…`) and old checkpoints (`.checkpoint.<n>.jsonl`) sit beside the live file.
//! They hold conversations found nowhere else (or earlier states of the live one), so each
//! is a session of its own, under its file name without `.jsonl` ([`super::Archive`]): the
//! header id inside is the id of the session it was copied from and cannot name it. A copy
//! whose live file still holds its header id is `forkedFrom` that live session, so their
//! shared replies count once. `.deleted.<ts>` copies are what the user deleted and are
//! listed only when a store root names the file itself.
//!
//! **Tool payloads.** A `web_fetch` result shows the page it fetched rather than the
//! tool's JSON payload, and a tool that threw shows its error and is failed ([`payload`]).

use super::{parse, peek_id, Archive, Dialect, PiStore};
use crate::model::{self, Agent, Session};
use crate::stores::kit;
use crate::stores::sqlite::{self, Reader, Rows, Table};
use crate::stores::{Base, Glance, Listed, Root, Store};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The per-agent database, relative to `agents/<agent>/`.
const DB: &str = "agent/openclaw-agent.sqlite";
/// Largest `sessions.json` parsed for titles.
const MAX_INDEX: u64 = 64 << 20;

pub struct OpenclawStore {
    files: PiStore,
    reader: Reader,
}

impl OpenclawStore {
    pub fn new(roots: Vec<Root>) -> OpenclawStore {
        OpenclawStore {
            files: PiStore::new(Dialect::Openclaw, roots),
            reader: Reader::new(),
        }
    }

    /// `(root index, database)` for every per-agent database (or a database given as a root).
    fn dbs(&self) -> Vec<(usize, PathBuf)> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (i, r) in self.files.base().roots.iter().enumerate() {
            let mut found = Vec::new();
            if r.path.is_file() && kit::file_name(&r.path).ends_with(".sqlite") {
                found.push(r.path.clone());
            }
            for agent in kit::subdirs(&r.path.join("agents")) {
                let db = agent.join(DB);
                if db.is_file() {
                    found.push(db);
                }
            }
            for db in found {
                if seen.insert(db.canonicalize().unwrap_or_else(|_| db.clone())) {
                    out.push((i, db));
                }
            }
        }
        out
    }

    fn load_db(&self, db: &Path, id: &str) -> Session {
        sqlite::load_session(
            &self.reader,
            db,
            id,
            sqlite::Access::InPlace,
            |c| read_session(c, id),
            |raw| {
                let mut s = parse::load_lines(Dialect::Openclaw, &raw.events, db, id);
                s.source.format = "openclaw-sqlite".into();
                if raw.events.is_empty() {
                    s.warnings
                        .push("no transcript events (deleted while reading?)".into());
                }
                if let Some(t) = raw.title {
                    s.title = Some(t);
                }
                if let Some(prev) = raw.forked_from.filter(|p| p != id) {
                    s.forked_from = Some(model::unified_id(Agent::Openclaw, &prev));
                }
                s
            },
            || {
                let mut s = Session::new(Agent::Openclaw, id);
                s.source.paths = vec![db.to_path_buf()];
                s.source.format = "openclaw-sqlite".into();
                s
            },
        )
    }
}

impl Store for OpenclawStore {
    fn base(&self) -> &Base {
        self.files.base()
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut in_db = HashSet::new();
        for (root, db) in self.dbs() {
            for id in self
                .reader
                .list("openclaw", &db, list_db)
                .unwrap_or_default()
            {
                if in_db.insert(id.clone()) {
                    out.push(sqlite::row_session(&id, &db, root));
                }
            }
        }
        for mut l in self.files.list() {
            if in_db.contains(&l.id) {
                continue;
            }
            if let Some(index) = index_file(&l.path).filter(|p| p.is_file()) {
                l.sources.push(index);
            }
            // An archived copy's cost depends on what the live file still holds.
            if let Some(a) = Archive::of(&l.path) {
                let live = l.path.with_file_name(format!("{}.jsonl", a.stem));
                if live.is_file() {
                    l.sources.push(live);
                }
            }
            out.push(l);
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        if let Some(id) = &listed.key {
            return self.load_db(&listed.path, id);
        }
        let mut s = self.files.load(listed);
        if let Some(t) = index_file(&listed.path).and_then(|p| file_title(&p, &s.id)) {
            s.title = Some(t);
        }
        if let Some(a) = Archive::of(&listed.path) {
            archived(&mut s, &a, &listed.path);
        }
        s
    }

    /// One read of each database for all its sessions.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            |_| Ok(()),
            |c, (), id| session_version(c, id),
        )
    }

    /// The listing reads each root (a root that is a file is one transcript or one
    /// database), its `agents/`, every agent directory, each agent's `sessions/` (where
    /// transcripts, archived copies and `sessions.json` appear) and `agent/` (where the
    /// database appears), and every database, whose rows list sessions and hide the files
    /// of the ids they hold. A transcript's header (its id) is its own file, an archived
    /// copy's live file and `sessions.json` are among its sources: the search stamps them.
    /// A write to a database lands in it or its journals. A root gone since it was opened
    /// leaves the store without a glance.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.files.base().roots {
            let root = &root.path;
            if root.is_file() {
                g.files.push(root.clone());
                continue;
            }
            if !root.is_dir() {
                return None;
            }
            g.dirs.push(root.clone());
            let agents = root.join("agents");
            if !agents.is_dir() {
                continue;
            }
            for agent in kit::subdirs(&agents) {
                g.dirs.extend(
                    [agent.join("sessions"), agent.join("agent")]
                        .into_iter()
                        .filter(|d| d.is_dir()),
                );
                g.dirs.push(agent);
            }
            g.dirs.push(agents);
        }
        for (_, db) in self.dbs() {
            g.files.extend(sqlite::with_journals(&db));
        }
        Some(g)
    }

    fn problems(&self) -> Vec<String> {
        let dbs = self.dbs();
        self.reader
            .problems(dbs.iter().map(|(_, db)| db.as_path()), list_db)
    }
}

// ---------------------------------------------------------------------------------------
// The database

/// Session ids with transcript events, from the session tables of any schema variant (or,
/// when a database has neither, from the events themselves).
fn list_db(c: &Connection) -> rusqlite::Result<Vec<String>> {
    let events = Table::probe(c, "transcript_events")?;
    if !(events.has("session_id") && events.has("event_json")) {
        // 2026.6.5–2026.7.1: the database exists, the transcripts are still files.
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut any_table = false;
    for table in ["sessions", "session_windows"] {
        let t = Table::probe(c, table)?;
        if !t.has("session_id") {
            continue;
        }
        any_table = true;
        let order = if t.has("created_at") {
            "ORDER BY created_at, session_id"
        } else {
            "ORDER BY session_id"
        };
        let rows = Rows::query(
            c,
            &format!(
                "SELECT session_id FROM {} s WHERE EXISTS \
                 (SELECT 1 FROM transcript_events e WHERE e.session_id = s.session_id) {order}",
                sqlite::quote(table)
            ),
            vec!["session_id".into()],
            [],
        )?;
        for id in rows.iter().filter_map(|r| r.get("session_id").non_empty()) {
            if seen.insert(id.clone()) {
                out.push(id);
            }
        }
    }
    if !any_table {
        let rows = Rows::query(
            c,
            "SELECT DISTINCT session_id FROM transcript_events",
            vec!["session_id".into()],
            [],
        )?;
        out.extend(rows.iter().filter_map(|r| r.get("session_id").non_empty()));
    }
    Ok(out)
}

/// One session's rows, copied out.
#[derive(Default)]
struct Raw {
    events: Vec<(i64, String)>,
    title: Option<String>,
    forked_from: Option<String>,
}

fn read_session(c: &Connection, id: &str) -> rusqlite::Result<Raw> {
    let events = Table::probe(c, "transcript_events")?;
    let order = if events.has("seq") {
        "ORDER BY seq"
    } else {
        "ORDER BY rowid"
    };
    let rows = Rows::fetch(
        c,
        &events,
        &["seq", "event_json"],
        &format!("WHERE session_id = ?1 {order}"),
        [id],
    )?;
    let mut raw = Raw {
        events: rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (
                    r.get("seq").int().unwrap_or(i as i64 + 1),
                    r.get("event_json").text().unwrap_or_default(),
                )
            })
            .collect(),
        ..Raw::default()
    };
    let index = index_rows(c, id)?;
    raw.title = index.title();
    raw.forked_from = index.forked_from;
    Ok(raw)
}

/// What OpenClaw's index tables say about one session.
#[derive(Default, Hash)]
struct Index {
    /// Display names, labels and subjects, best first.
    names: Vec<String>,
    forked_from: Option<String>,
}

impl Index {
    fn title(&self) -> Option<String> {
        self.names.first().cloned()
    }
}

/// `displayName`, `label`, `subject` of a `SessionEntry` JSON.
fn entry_names(json: Option<&str>, out: &mut Vec<String>) {
    if let Some(v) = json.and_then(|j| serde_json::from_str::<Value>(j).ok()) {
        entry_value_names(&v, out);
    }
}

fn entry_value_names(v: &Value, out: &mut Vec<String>) {
    for k in ["displayName", "label", "subject"] {
        if let Some(s) = kit::str_field(v, k)
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            out.push(s.to_string());
        }
    }
}

fn index_rows(c: &Connection, id: &str) -> rusqlite::Result<Index> {
    let mut ix = Index::default();
    let mut keys: Vec<String> = Vec::new();
    let sessions = Table::probe(c, "sessions")?;
    if sessions.has("session_id") {
        let r = Rows::fetch(
            c,
            &sessions,
            &["display_name", "session_key"],
            "WHERE session_id = ?1",
            [id],
        )?;
        for r in r.iter() {
            ix.names.extend(r.get("display_name").non_empty());
            keys.extend(r.get("session_key").non_empty());
        }
    }
    let windows = Table::probe(c, "session_windows")?;
    if windows.has("session_id") {
        let r = Rows::fetch(
            c,
            &windows,
            &[
                "display_name",
                "session_key",
                "reason",
                "previous_session_id",
            ],
            "WHERE session_id = ?1",
            [id],
        )?;
        for r in r.iter() {
            ix.names.extend(r.get("display_name").non_empty());
            keys.extend(r.get("session_key").non_empty());
            if r.get("reason").str() == Some("fork") {
                ix.forked_from = r.get("previous_session_id").non_empty();
            }
        }
    }
    let entries = Table::probe(c, "session_entries")?;
    if entries.has("entry_json") {
        let by_id = if entries.has("session_id") {
            Rows::fetch(c, &entries, &["entry_json"], "WHERE session_id = ?1", [id])?
        } else {
            Rows::default()
        };
        for r in by_id.iter() {
            entry_names(r.get("entry_json").str(), &mut ix.names);
        }
        if entries.has("session_key") {
            for k in &keys {
                let r = Rows::fetch(c, &entries, &["entry_json"], "WHERE session_key = ?1", [k])?;
                for r in r.iter() {
                    entry_names(r.get("entry_json").str(), &mut ix.names);
                }
            }
        }
    }
    let nodes = Table::probe(c, "session_nodes")?;
    if nodes.has("session_key") {
        let wanted = ["display_name", "label", "entry_json"];
        let mut rows = Vec::new();
        if nodes.has("current_session_id") {
            rows.push(Rows::fetch(
                c,
                &nodes,
                &wanted,
                "WHERE current_session_id = ?1",
                [id],
            )?);
        }
        for k in &keys {
            rows.push(Rows::fetch(
                c,
                &nodes,
                &wanted,
                "WHERE session_key = ?1",
                [k],
            )?);
        }
        for r in rows.iter().flat_map(Rows::iter) {
            ix.names.extend(r.get("display_name").non_empty());
            ix.names.extend(r.get("label").non_empty());
            entry_names(r.get("entry_json").str(), &mut ix.names);
        }
    }
    ix.names = ix
        .names
        .into_iter()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    Ok(ix)
}

/// Event count, largest `seq` and the index rows: changes when this session changes.
fn session_version(c: &Connection, id: &str) -> rusqlite::Result<u64> {
    let events = Table::probe(c, "transcript_events")?;
    let max_seq = if events.has("seq") {
        "max(seq)"
    } else {
        "max(rowid)"
    };
    let counts = Rows::query(
        c,
        &format!("SELECT count(*), {max_seq} FROM transcript_events WHERE session_id = ?1"),
        vec![],
        [id],
    )?;
    Ok(sqlite::hash_version((counts.rows, index_rows(c, id)?)))
}

// ---------------------------------------------------------------------------------------
// Archived copies

/// Make a session read from an archived copy its own: its listed id (the header holds the
/// id of the session it was copied from), a title that says which copy it is, an
/// `archived:<kind>` tag, and `forkedFrom` = the live session when the live `<id>.jsonl`
/// beside it still holds the copy's header id (a backup or checkpoint of a conversation that
/// went on, whose shared replies then count once, in the live session). A reset's live file
/// holds a new conversation under a new id, so a reset copy stands alone.
fn archived(s: &mut Session, a: &Archive, path: &Path) {
    let header_id = std::mem::replace(&mut s.id, a.id.clone());
    let kind = a.kind.name();
    let label = if a.suffix.is_empty() {
        format!("[{kind}]")
    } else {
        format!("[{kind} {}]", a.suffix)
    };
    s.title = Some(match s.title.take() {
        Some(t) => format!("{label} {t}"),
        None => label,
    });
    s.tags.push(format!("archived:{kind}"));
    let live = path.with_file_name(format!("{}.jsonl", a.stem));
    let continued = header_id != a.id && peek_id(&live).is_some_and(|id| id == header_id);
    if continued && s.forked_from.is_none() {
        s.forked_from = Some(model::unified_id(Agent::Openclaw, &header_id));
    }
    if continued {
        // Entries the live file still holds (same entry id: the same record, copied) are
        // the live session's: shown here, counted there, on every branch of either.
        let live_ids = entry_ids(&live, &header_id);
        let copied = s
            .messages
            .iter_mut()
            .chain(s.branches.iter_mut().flat_map(|b| b.messages.iter_mut()))
            .filter(|m| m.native_id.as_ref().is_some_and(|id| live_ids.contains(id)));
        for m in copied {
            m.inherited = true;
        }
    }
}

/// The entry id of every message of the transcript at `path`, every branch included.
fn entry_ids(path: &Path, id: &str) -> HashSet<String> {
    let s = parse::load_file(Dialect::Openclaw, path, id).session;
    s.messages
        .iter()
        .chain(s.branches.iter().flat_map(|b| &b.messages))
        .filter_map(|m| m.native_id.clone())
        .collect()
}

// ---------------------------------------------------------------------------------------
// The file era's index

/// `sessions.json` beside a transcript file.
fn index_file(transcript: &Path) -> Option<PathBuf> {
    Some(transcript.parent()?.join("sessions.json"))
}

/// The title `sessions.json` gives session `id`, if any.
fn file_title(index: &Path, id: &str) -> Option<String> {
    if !index.is_file() {
        return None;
    }
    let v = match kit::read_json(index, "sessions.json", MAX_INDEX) {
        Ok(v) => v,
        Err(e) => {
            log::debug!("openclaw: {e}");
            return None;
        }
    };
    let entries = v.as_object()?;
    let mut names = Vec::new();
    for entry in entries.values() {
        if kit::str_field(entry, "sessionId") == Some(id) {
            entry_value_names(entry, &mut names);
        }
    }
    names.into_iter().next()
}

/// A tool result's text and whether it failed, read from the JSON payload OpenClaw stores
/// as pretty JSON (`jsonResult`, `src/agents/tools/common.ts` in openclaw/openclaw):
///
/// - a `web_fetch` result (`{url, finalUrl, status, contentType, …, text}`,
///   `src/agents/tools/web-fetch.ts` at 5f11943a) is the page's text;
/// - a tool that threw is `{status: "error", tool, error}` in a result that is not marked as
///   an error (`buildToolExecutionErrorResult`, `src/agents/pi-tool-definition-adapter.ts`
///   at 00463892): the error's text, and the result failed.
///
/// The text comes with its newlines real, then the payload's other fields as one JSON line,
/// so nothing is lost. `None` for any other tool or shape: shown as stored.
pub(super) fn payload(tool: &str, output: &str) -> Option<(String, bool)> {
    if !output.trim_start().starts_with('{') {
        return None;
    }
    let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(output) else {
        return None;
    };
    let thrown = o.get("status").and_then(Value::as_str) == Some("error");
    let field = match (tool, thrown) {
        (_, true) => "error",
        ("web_fetch", false) => "text",
        _ => return None,
    };
    let Some(Value::String(mut text)) = o.shift_remove(field) else {
        return None;
    };
    if !o.is_empty() {
        kit::push_paragraph(&mut text, &Value::Object(o).to_string());
    }
    Some((text, thrown))
}
