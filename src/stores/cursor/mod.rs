//! Cursor: the cursor-agent CLI's per-chat `store.db`, the agent transcripts, and the IDE's
//! global `state.vscdb`. Cursor is closed source; every shape here is reverse engineered by
//! peers (`docs/formats.md` §5), so every field is optional and every decode is defensive.
//!
//! **Where.** `$CURSOR_CONFIG_DIR` (default `~/.cursor`) holds the CLI's
//! `chats/<md5(cwd)>/<agentId>/store.db` and the agent transcripts
//! `projects/<cwd-dashed>/agent-transcripts/<uuid>.{txt,jsonl}` (or `<uuid>/<uuid>.jsonl`
//! with `subagents/`). The IDE's user dir (`$XDG_CONFIG_HOME/Cursor/User`, default
//! `~/.config/Cursor/User`; macOS `~/Library/Application Support/Cursor/User`) holds
//! `globalStorage/state.vscdb`. A root given by hand may also be one `store.db` or one
//! `.vscdb` file.
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
//! **Transcripts.** `.txt` (`user:` / `assistant:` blocks with `[Thinking]`, `[Tool call]`
//! and `[Tool result]` markers) and `.jsonl` (`{role, message: {content: [...]}}`, no ids,
//! no times, no tool results).
//!
//! **One id, several sources.** The CLI and the IDE may write a transcript for a chat they
//! also keep in their database. The richest source wins: `store.db`, then `state.vscdb`,
//! then `.txt`, then `.jsonl`.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Cell, Reader, Rows, Table};
use super::{Base, Env, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, Source, Subagent, TokenUsage, ToolCall};
use crate::names;
use chrono::{DateTime, Utc};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

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
    Txt,
    Jsonl,
}

fn kind(l: &Listed) -> Kind {
    if l.key.is_some() {
        return Kind::Ide;
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

    /// Every IDE database under the roots, with its root index.
    fn ide_dbs(&self) -> Vec<(usize, PathBuf)> {
        let mut out = Vec::new();
        for (i, r) in self.base.roots.iter().enumerate() {
            let p = &r.path;
            if p.is_file() && kit::file_name(p).ends_with(".vscdb") {
                out.push((i, p.clone()));
            } else if p.join("globalStorage/state.vscdb").is_file() {
                out.push((i, p.join("globalStorage/state.vscdb")));
            }
        }
        out
    }

    fn list_ide(&self, root: usize, db: &Path, out: &mut Vec<Listed>) {
        let ids = self.reader.list("cursor", db, list_composers);
        out.extend(
            ids.into_iter()
                .flatten()
                .map(|id| sqlite::row_session(&id, db, root)),
        );
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

    fn load(&self, listed: &Listed) -> Session {
        match kind(listed) {
            Kind::Cli => self.load_cli(listed),
            Kind::Ide => self.load_ide(listed),
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
            |c, (), id| composer_version(c, id),
        )
    }

    fn problems(&self) -> Vec<String> {
        let dbs = self.ide_dbs();
        self.reader
            .problems(dbs.iter().map(|(_, db)| db.as_path()), list_composers)
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
// A tiny protobuf reader: just enough wire format to walk the root blob

pub mod pb {
    //! Protobuf wire format, read by hand: varints and length-delimited fields. Every read
    //! is bounds-checked; a malformed buffer is an `Err`, never a panic, and nothing is
    //! allocated beyond the fields actually present.

    /// One field's value.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Val<'a> {
        Varint(u64),
        Bytes(&'a [u8]),
        Fixed64(u64),
        Fixed32(u32),
    }

    /// A varint at `*at`, advancing it.
    pub fn varint(buf: &[u8], at: &mut usize) -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in 0..10 {
            let b = *buf.get(*at).ok_or("varint runs past the end")?;
            *at += 1;
            v |= u64::from(b & 0x7f) << (7 * shift);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    /// Every `(field number, value)` of a message, in order.
    pub fn fields(buf: &[u8]) -> Result<Vec<(u64, Val<'_>)>, String> {
        let mut out = Vec::new();
        let mut at = 0usize;
        while at < buf.len() {
            let key = varint(buf, &mut at)?;
            let field = key >> 3;
            if field == 0 {
                return Err(format!("field number 0 at byte {at}"));
            }
            let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
                let end = at
                    .checked_add(n)
                    .filter(|e| *e <= buf.len())
                    .ok_or_else(|| format!("field {field} runs past the end"))?;
                let s = &buf[*at..end];
                *at = end;
                Ok(s)
            };
            let val = match key & 7 {
                0 => Val::Varint(varint(buf, &mut at)?),
                1 => {
                    let b = take(&mut at, 8)?;
                    Val::Fixed64(u64::from_le_bytes(b.try_into().map_err(|_| "fixed64")?))
                }
                2 => {
                    let n = varint(buf, &mut at)?;
                    let n = usize::try_from(n).map_err(|_| "length too large")?;
                    Val::Bytes(take(&mut at, n)?)
                }
                5 => {
                    let b = take(&mut at, 4)?;
                    Val::Fixed32(u32::from_le_bytes(b.try_into().map_err(|_| "fixed32")?))
                }
                w => return Err(format!("unsupported wire type {w} (field {field})")),
            };
            out.push((field, val));
        }
        Ok(out)
    }
}

/// What the root blob says: message blob ids in order, and the workspace.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Root0 {
    pub messages: Vec<String>,
    pub workspace: Option<String>,
}

/// Decode a root blob (field 1: message ids, 32 raw bytes or 64 hex chars; field 9:
/// workspace path or `file://` URI).
pub fn decode_root(buf: &[u8]) -> Result<Root0, String> {
    let mut r = Root0::default();
    for (field, val) in pb::fields(buf)? {
        match (field, val) {
            (1, pb::Val::Bytes(b)) => {
                if b.len() == 32 {
                    r.messages.push(hex(b));
                } else if b.len() == 64 && b.iter().all(u8::is_ascii_hexdigit) {
                    r.messages
                        .push(String::from_utf8_lossy(b).to_ascii_lowercase());
                } else {
                    return Err(format!(
                        "field 1 holds {} bytes, not a 32-byte blob id",
                        b.len()
                    ));
                }
            }
            (1, _) => return Err("field 1 is not length-delimited".into()),
            (9, pb::Val::Bytes(b)) => {
                let s = String::from_utf8_lossy(b);
                r.workspace = Some(uri_to_path(&s));
            }
            _ => {}
        }
    }
    Ok(r)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `"7b22…"` → bytes; `None` for odd lengths or non-hex characters.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim().as_bytes();
    if s.len() % 2 != 0 {
        return None;
    }
    let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.chunks(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

/// `file:///a%20b` → `/a b`; `vscode-remote://host/path` → `/path`; a plain path unchanged.
pub fn uri_to_path(s: &str) -> String {
    let rest = if let Some(r) = s.strip_prefix("file://") {
        r
    } else if let Some((_, r)) = s.split_once("://") {
        r.find('/').map_or("", |i| &r[i..])
    } else {
        return s.to_string();
    };
    let b = rest.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ---------------------------------------------------------------------------------------
// cursor-agent store.db

/// Rows of one `store.db`, copied out.
#[derive(Default)]
struct CliRaw {
    meta: Value,
    /// `(blob id, data)` in conversation order.
    messages: Vec<(String, Vec<u8>)>,
    workspace: Option<String>,
    warnings: Vec<String>,
}

fn blob_bytes(v: ValueRef<'_>) -> Option<Vec<u8>> {
    match v {
        ValueRef::Blob(b) | ValueRef::Text(b) => Some(b.to_vec()),
        _ => None,
    }
}

/// The meta object: key `"0"` hex-encoded JSON (what cursor-agent writes), or plain JSON, or
/// else the rows themselves as a key/value map (older builds).
fn meta_object(rows: &Rows) -> Value {
    let mut map = serde_json::Map::new();
    for r in rows.iter() {
        let (Some(k), Some(v)) = (r.get("key").text(), r.get("value").text()) else {
            continue;
        };
        let decoded = unhex(&v)
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .or_else(|| serde_json::from_str::<Value>(&v).ok())
            .filter(Value::is_object);
        match decoded {
            Some(Value::Object(o)) if k == "0" => map.extend(o),
            _ => {
                map.entry(k).or_insert(Value::String(v));
            }
        }
    }
    Value::Object(map)
}

fn read_cli(c: &Connection) -> rusqlite::Result<CliRaw> {
    let mut raw = CliRaw::default();
    let meta_t = Table::probe(c, "meta")?;
    let meta = Rows::fetch(c, &meta_t, &["key", "value"], "", [])?;
    raw.meta = meta_object(&meta);
    if !Table::probe(c, "blobs")?.has("data") {
        raw.warnings
            .push("no `blobs` table: not a cursor-agent store".into());
        return Ok(raw);
    }
    let mut get = c.prepare("SELECT data FROM blobs WHERE id = ?1")?;
    let mut blob = |id: &str| -> rusqlite::Result<Option<Vec<u8>>> {
        let mut rows = get.query([id])?;
        Ok(match rows.next()? {
            Some(r) => blob_bytes(r.get_ref(0)?),
            None => None,
        })
    };
    let root_id = kit::str_field(&raw.meta, "latestRootBlobId").map(str::to_string);
    let root = match &root_id {
        Some(id) => match blob(id)? {
            Some(b) => decode_root(&b).map_err(|e| format!("root blob {id}: {e}")),
            None => Err(format!("root blob {id} is missing")),
        },
        None => Err("the meta row names no root blob".into()),
    };
    match root {
        Ok(root) => {
            raw.workspace = root.workspace;
            let mut missing = 0usize;
            for id in root.messages.into_iter().take(MAX_MESSAGES) {
                match blob(&id)? {
                    Some(b) => raw.messages.push((id, b)),
                    None => missing += 1,
                }
            }
            if missing > 0 {
                raw.warnings.push(format!(
                    "{missing} message blobs named by the root are missing"
                ));
            }
        }
        Err(e) => {
            raw.warnings.push(format!(
                "{e}; the JSON blobs are shown in storage order instead"
            ));
            let mut stmt = c.prepare("SELECT id, data FROM blobs ORDER BY rowid LIMIT ?1")?;
            let mut rows = stmt.query([MAX_MESSAGES as i64])?;
            while let Some(r) = rows.next()? {
                let id = Cell::of(r.get_ref(0)?).text().unwrap_or_default();
                if let Some(b) = blob_bytes(r.get_ref(1)?) {
                    // Only JSON messages: the protobuf roots start with a field tag.
                    if b.first() == Some(&b'{') {
                        raw.messages.push((id, b));
                    }
                }
            }
        }
    }
    Ok(raw)
}

impl CursorStore {
    fn load_cli(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let mut b = SessionBuilder::new(Agent::Cursor, listed.id.clone());
        b.s.source = Source {
            paths: vec![db.clone()],
            format: "cursor-agent-store".into(),
            format_version: None,
        };
        let raw = match self.reader.read(db, sqlite::Access::InPlace, |c| {
            sqlite::snapshot(c, read_cli)
        }) {
            Ok((raw, note)) => {
                if let Some(n) = note {
                    b.warn(n);
                }
                raw
            }
            Err(e) => {
                b.warn(format!("cannot read {}: {e}", db.display()));
                return b.finish();
            }
        };
        for w in &raw.warnings {
            b.warn(w.clone());
        }
        let meta = &raw.meta;
        b.s.title = kit::str_field(meta, "name")
            .map(str::trim)
            .filter(|n| !n.is_empty() && !DEFAULT_NAMES.contains(n))
            .map(str::to_string);
        b.s.created_at = meta.get("createdAt").and_then(time_value);
        b.s.cwd = raw.workspace.clone();
        if let Some(mode) = kit::str_field(meta, "mode").filter(|m| !m.is_empty()) {
            b.s.tags.push(format!("mode:{mode}"));
        }
        let model = kit::str_field(meta, "lastUsedModel").map(str::to_string);
        for (id, data) in &raw.messages {
            match serde_json::from_slice::<Value>(data) {
                Ok(v) => ai_sdk_message(&mut b, &v, id, model.as_deref()),
                Err(e) => b.unparsed(
                    "message blobs",
                    "invalid JSON",
                    || format!("blob {id}: {e}"),
                    "message blob",
                    &String::from_utf8_lossy(data),
                    None,
                ),
            }
        }
        // No per-message times: the session was last updated when its files were.
        let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        b.s.updated_at = [mtime(db), mtime(&sqlite::companion(db, "-wal"))]
            .into_iter()
            .flatten()
            .max()
            .map(DateTime::<Utc>::from);
        b.finish()
    }
}

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

/// The parts of AI-SDK `content` that none of `known` types name (text parts may have no
/// type): what [`parts_text`] and its callers would otherwise pass over.
fn other_parts<'v>(content: Option<&'v Value>, known: &[&str]) -> Vec<&'v Value> {
    match content {
        Some(Value::Array(a)) => a
            .iter()
            .filter(|p| match kit::str_field(p, "type") {
                Some(t) => !known.contains(&t),
                None => p.get("text").and_then(Value::as_str).is_none(),
            })
            .collect(),
        None | Some(Value::Null | Value::String(_)) => Vec::new(),
        Some(other) => vec![other],
    }
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

/// One cursor-agent message blob.
fn ai_sdk_message(b: &mut SessionBuilder, v: &Value, blob_id: &str, model: Option<&str>) {
    let content = v.get("content");
    let native = Some(
        v.get("id")
            .and_then(Value::as_str)
            .unwrap_or(blob_id)
            .to_string(),
    );
    match kit::str_field(v, "role") {
        Some("system") => b.context("system prompt", parts_text(content), None),
        Some("user") => {
            let (query, rest) = split_user_query(&parts_text(content));
            if !rest.is_empty() {
                b.context("user context", rest, None);
            }
            if !query.is_empty() {
                b.push(Message {
                    role: Role::User,
                    content: query,
                    native_id: native,
                    ..Message::default()
                });
            }
            images(b, content);
            for p in other_parts(content, &["text", "image", "file"]) {
                odd(
                    b,
                    "message parts",
                    "unknown type",
                    &format!("blob {blob_id}"),
                    p,
                );
            }
        }
        Some("assistant") => {
            let mut m = Message {
                role: Role::Assistant,
                native_id: native,
                model: model.map(str::to_string),
                ..Message::default()
            };
            let mut text = Vec::new();
            let mut thinking = Vec::new();
            let mut odd_parts: Vec<&Value> = Vec::new();
            match content {
                Some(Value::String(s)) => text.push(s.clone()),
                Some(Value::Array(parts)) => {
                    for p in parts {
                        match kit::str_field(p, "type") {
                            Some("text") => {
                                text.extend(kit::str_field(p, "text").map(String::from))
                            }
                            Some("reasoning") | Some("thinking") => thinking
                                .extend(kit::str_any(p, &["text", "thinking"]).map(String::from)),
                            Some("redacted-reasoning") => {
                                thinking.push(crate::model::SEALED_THINKING.to_string())
                            }
                            Some("tool-call") | Some("tool_use") | Some("tool-use") => {
                                m.tool_calls.push(ToolCall {
                                    tool_call_id: kit::str_any(p, &["toolCallId", "id"])
                                        .unwrap_or_default()
                                        .to_string(),
                                    tool_name: kit::str_any(p, &["toolName", "name"])
                                        .unwrap_or_default()
                                        .to_string(),
                                    input: p
                                        .get("args")
                                        .or_else(|| p.get("input"))
                                        .cloned()
                                        .unwrap_or(Value::Null),
                                    ..ToolCall::default()
                                })
                            }
                            _ => odd_parts.push(p),
                        }
                    }
                }
                None | Some(Value::Null) => {}
                Some(other) => odd_parts.push(other),
            }
            m.content = text.join("\n\n");
            if !thinking.is_empty() {
                m.thinking = Some(thinking.join("\n\n"));
            }
            b.push(m);
            for p in odd_parts {
                odd(
                    b,
                    "message parts",
                    "unknown type",
                    &format!("blob {blob_id}"),
                    p,
                );
            }
        }
        Some("tool") => {
            let parts: Vec<&Value> = match content {
                Some(Value::Array(a)) => a.iter().collect(),
                Some(o @ Value::Object(_)) => vec![o],
                None | Some(Value::Null) => Vec::new(),
                Some(other) => {
                    odd(
                        b,
                        "message parts",
                        "tool content is no list",
                        &format!("blob {blob_id}"),
                        other,
                    );
                    Vec::new()
                }
            };
            for p in parts {
                let (out, err) = output_text(p.get("result").or_else(|| p.get("output")));
                let err = err || p.get("isError").and_then(Value::as_bool) == Some(true);
                b.tool_result(
                    kit::str_field(p, "toolCallId").unwrap_or_default(),
                    kit::str_field(p, "toolName"),
                    out,
                    err,
                    None,
                );
            }
        }
        other => {
            let problem = format!("unknown role `{}`", other.unwrap_or(""));
            odd(b, "message blobs", &problem, &format!("blob {blob_id}"), v);
        }
    }
}

/// Placeholders for image parts of a user message, as one context note.
fn images(b: &mut SessionBuilder, content: Option<&Value>) {
    let Some(Value::Array(parts)) = content else {
        return;
    };
    for p in parts {
        if matches!(kit::str_field(p, "type"), Some("image") | Some("file")) {
            let mime = kit::str_any(p, &["mimeType", "mediaType"]);
            let data = kit::str_any(p, &["image", "data"]);
            let ph = match data {
                Some(d) if d.starts_with("data:") => kit::data_url_placeholder(d),
                d => kit::base64_placeholder("image", mime, d),
            };
            if let Some(last) = b.last_mut().filter(|m| m.role == Role::User) {
                last.content.push_str(&format!("\n\n{ph}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// IDE state.vscdb

/// Composer ids with something in them, from the `composerData:` key range only.
fn list_composers(c: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Table::probe(c, "cursorDiskKV")?;
    if !t.has("key") {
        return Ok(Vec::new());
    }
    let rows = Rows::query(
        c,
        "SELECT key, value FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;'",
        vec!["key".into(), "value".into()],
        [],
    )?;
    let mut any_bubble =
        c.prepare("SELECT 1 FROM cursorDiskKV WHERE key >= ?1 AND key < ?2 LIMIT 1")?;
    let mut out = Vec::new();
    for r in rows.iter() {
        let Some(id) = r
            .get("key")
            .str()
            .and_then(|k| k.strip_prefix("composerData:"))
            .filter(|id| !id.is_empty())
        else {
            continue;
        };
        #[derive(serde::Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Head {
            full_conversation_headers_only: Option<Vec<serde::de::IgnoredAny>>,
            conversation: Option<Vec<serde::de::IgnoredAny>>,
        }
        // A row that is not JSON may hold anything: listed, so its text is shown.
        let head: Head = match r.get("value").str().map(serde_json::from_str::<Head>) {
            Some(Ok(h)) => h,
            Some(Err(_)) => {
                out.push(id.to_string());
                continue;
            }
            None => Head::default(),
        };
        let inline = head
            .full_conversation_headers_only
            .is_some_and(|h| !h.is_empty())
            || head.conversation.is_some_and(|h| !h.is_empty());
        let (lo, hi) = bubble_range(id);
        if inline || any_bubble.exists([&lo, &hi])? {
            out.push(id.to_string());
        }
    }
    Ok(out)
}

/// `['bubbleId:<id>:', 'bubbleId:<id>;')`: every bubble key of one composer.
fn bubble_range(id: &str) -> (String, String) {
    (format!("bubbleId:{id}:"), format!("bubbleId:{id};"))
}

/// The `composerData:<id>` row (its header and bubble order).
fn composer_row(c: &Connection, id: &str) -> rusqlite::Result<Rows> {
    Rows::query(
        c,
        "SELECT value FROM cursorDiskKV WHERE key = ?1",
        vec!["value".into()],
        [format!("composerData:{id}")],
    )
}

fn composer_version(c: &Connection, id: &str) -> rusqlite::Result<u64> {
    let head = composer_row(c, id)?;
    let (lo, hi) = bubble_range(id);
    let bubbles = Rows::query(
        c,
        "SELECT count(*), max(key) FROM cursorDiskKV WHERE key >= ?1 AND key < ?2",
        vec![],
        [&lo, &hi],
    )?;
    Ok(sqlite::hash_version((head.rows, bubbles.rows)))
}

struct IdeRaw {
    composer: Option<String>,
    /// `(bubble id, JSON)`.
    bubbles: Vec<(String, String)>,
}

fn read_ide(c: &Connection, id: &str) -> rusqlite::Result<IdeRaw> {
    let head = composer_row(c, id)?;
    let (lo, hi) = bubble_range(id);
    let rows = Rows::query(
        c,
        "SELECT key, value FROM cursorDiskKV WHERE key >= ?1 AND key < ?2",
        vec!["key".into(), "value".into()],
        [&lo, &hi],
    )?;
    Ok(IdeRaw {
        composer: head.first().and_then(|r| r.get("value").text()),
        bubbles: rows
            .iter()
            .filter_map(|r| {
                let k = r.get("key").str()?.strip_prefix(lo.as_str())?.to_string();
                Some((k, r.get("value").text().unwrap_or_default()))
            })
            .collect(),
    })
}

impl CursorStore {
    fn load_ide(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let id = listed.key.as_deref().unwrap_or(&listed.id);
        let source = || Source {
            paths: vec![db.clone()],
            format: "cursor-state-vscdb".into(),
            format_version: None,
        };
        sqlite::load_session(
            &self.reader,
            db,
            id,
            sqlite::Access::InPlace,
            |c| read_ide(c, id),
            |raw| {
                let mut b = SessionBuilder::new(Agent::Cursor, listed.id.clone());
                b.s.source = source();
                build_ide(b, &raw)
            },
            || {
                let mut s = Session::new(Agent::Cursor, &listed.id);
                s.source = source();
                s
            },
        )
    }
}

fn build_ide(mut b: SessionBuilder, raw: &IdeRaw) -> Session {
    let composer: Value = match raw.composer.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            b.unparsed(
                "composerData rows",
                "invalid JSON",
                || e.to_string(),
                "composerData",
                raw.composer.as_deref().unwrap_or_default(),
                None,
            );
            Value::Null
        }
        None => {
            b.warn("composerData row not found (deleted while reading?)");
            Value::Null
        }
    };
    if let Some(v) = composer.get("_v") {
        b.s.source.format_version = Some(v.to_string());
    }
    b.s.title = kit::str_field(&composer, "name")
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    b.s.created_at = composer.get("createdAt").and_then(time_value);
    b.s.updated_at = composer.get("lastUpdatedAt").and_then(time_value);
    let composer_model = kit::str_at(&composer, &["modelConfig", "modelName"])
        .filter(|m| !m.is_empty() && *m != "default")
        .map(str::to_string);
    let mut bubbles: HashMap<&str, Value> = HashMap::new();
    // Bubbles that are not JSON: shown as stored where the headers place them (or, when
    // nothing places them, where their key sorts), counted once.
    let mut bad: HashMap<&str, (&str, String)> = HashMap::new();
    for (bid, json) in &raw.bubbles {
        match serde_json::from_str::<Value>(json) {
            Ok(v) => {
                bubbles.insert(bid.as_str(), v);
            }
            Err(e) => {
                bad.insert(bid.as_str(), (json.as_str(), e.to_string()));
            }
        }
    }
    let bad_shown = |b: &mut SessionBuilder, bad: &mut HashMap<&str, (&str, String)>, bid: &str| {
        if let Some((json, e)) = bad.remove(bid) {
            b.unparsed(
                "bubbles",
                "invalid JSON",
                || format!("bubble {bid}: {e}"),
                "bubble",
                json,
                None,
            );
        }
    };
    let headers: Vec<&str> = composer
        .get("fullConversationHeadersOnly")
        .and_then(Value::as_array)
        .map(|h| {
            h.iter()
                .filter_map(|x| kit::str_field(x, "bubbleId"))
                .collect()
        })
        .unwrap_or_default();
    let mut order: Vec<(String, Value)> = Vec::new();
    if !headers.is_empty() {
        let mut missing = 0;
        for h in &headers {
            match bubbles.remove(h) {
                Some(v) => order.push((h.to_string(), v)),
                // Shown in place: an `Err` slot.
                None if bad.contains_key(h) => order.push((h.to_string(), Value::Null)),
                None => missing += 1,
            }
        }
        if missing > 0 {
            b.warn(format!(
                "{missing} bubbles named by the conversation headers are missing"
            ));
        }
        if !bubbles.is_empty() {
            b.warn(format!(
                "{} bubbles not in the conversation headers (reverted or edited turns) not shown",
                bubbles.len()
            ));
        }
    } else if let Some(conv) = composer.get("conversation").and_then(Value::as_array) {
        for (i, v) in conv.iter().enumerate() {
            let id =
                kit::str_field(v, "bubbleId").map_or_else(|| format!("inline-{i}"), String::from);
            order.push((id, v.clone()));
        }
    } else {
        // No headers at all: key order (bubble ids carry no time, but it is stable).
        let mut rest: Vec<(&str, Value)> = bubbles.drain().collect();
        rest.extend(bad.keys().map(|k| (*k, Value::Null)));
        rest.sort_by(|a, b| a.0.cmp(b.0));
        order.extend(rest.into_iter().map(|(k, v)| (k.to_string(), v)));
    }
    for (bid, v) in &order {
        if v.is_null() && bad.contains_key(bid.as_str()) {
            bad_shown(&mut b, &mut bad, bid);
        } else {
            bubble(&mut b, bid, v, composer_model.as_deref());
        }
    }
    // Not JSON and placed by nothing: still shown, after the conversation.
    let mut left: Vec<String> = bad.keys().map(|k| k.to_string()).collect();
    left.sort();
    for bid in left {
        bad_shown(&mut b, &mut bad, &bid);
    }
    b.finish()
}

fn bubble(b: &mut SessionBuilder, bid: &str, v: &Value, composer_model: Option<&str>) {
    let ts = v
        .get("createdAt")
        .or_else(|| v.get("timestamp"))
        .and_then(time_value);
    if b.s.cwd.is_none() {
        b.s.cwd = kit::str_field(v, "workspaceProjectDir")
            .map(String::from)
            .or_else(|| {
                v.get("workspaceUris")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str)
                    .map(uri_to_path)
            });
    }
    let text = kit::str_any(v, &["text", "rawText", "content", "message"])
        .unwrap_or("")
        .to_string();
    let role = match v.get("type").and_then(Value::as_u64) {
        Some(1) => Role::User,
        Some(2) => Role::Assistant,
        _ => match kit::str_field(v, "type") {
            Some("user") => Role::User,
            _ => Role::Assistant,
        },
    };
    let mut m = Message {
        role,
        content: text,
        timestamp: ts,
        native_id: Some(bid.to_string()),
        ..Message::default()
    };
    if role == Role::Assistant {
        m.model = kit::str_at(v, &["modelInfo", "modelName"])
            .map(String::from)
            .or_else(|| composer_model.map(String::from));
        m.thinking = match v.get("thinking") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(t) => kit::str_field(t, "text")
                .filter(|s| !s.is_empty())
                .map(String::from),
            None => None,
        };
        let tokens = v.get("tokenCount");
        if let Some(t) = tokens.filter(|t| t.is_object()) {
            let u = TokenUsage {
                input_tokens: kit::u64_field(t, "inputTokens"),
                output_tokens: kit::u64_field(t, "outputTokens"),
                ..TokenUsage::default()
            };
            if !u.is_zero() {
                m.token_usage = Some(u);
            }
        }
        if let Some(tf) = v.get("toolFormerData").filter(|t| t.is_object()) {
            let input = match tf.get("rawArgs") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                Some(x) => x.clone(),
                None => tf.get("params").cloned().unwrap_or(Value::Null),
            };
            let (output, _) = output_text(tf.get("result"));
            let status = kit::str_field(tf, "status");
            m.tool_calls.push(ToolCall {
                tool_call_id: kit::str_field(tf, "toolCallId").unwrap_or(bid).to_string(),
                tool_name: kit::str_field(tf, "name").unwrap_or("tool").to_string(),
                input,
                is_error: status.map(|s| s == "error" || s == "failed"),
                output: (!output.is_empty()).then_some(output),
                duration_ms: None,
            });
        }
    }
    b.push(m);
}

// ---------------------------------------------------------------------------------------
// Agent transcripts

fn transcript_text(path: &Path, b: &mut SessionBuilder) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_TRANSCRIPT => {
            b.warn(format!(
                "{}: {} bytes, too large, skipped",
                path.display(),
                m.len()
            ));
            return None;
        }
        _ => {}
    }
    match kit::read_file(path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => {
            b.warn(format!("cannot read {}: {e}", path.display()));
            None
        }
    }
}

/// Where the `.txt` parser is inside the current message.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    /// After `[Thinking]`, up to an empty line or the next marker.
    Thinking,
    /// After `[Tool call] Name`: indented `key=value` argument lines.
    Args,
    /// After `[Tool result]`: output of the call at this index, up to the next marker.
    Result(usize),
}

fn load_txt(listed: &Listed) -> Session {
    let mut b = SessionBuilder::new(Agent::Cursor, listed.id.clone());
    b.s.source = Source {
        paths: vec![listed.path.clone()],
        format: "cursor-transcript-txt".into(),
        format_version: None,
    };
    let Some(text) = transcript_text(&listed.path, &mut b) else {
        return b.finish();
    };
    parse_txt(&mut b, &text);
    b.s.updated_at = mtime(&listed.path);
    b.finish()
}

fn mtime(p: &Path) -> Option<DateTime<Utc>> {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from)
}

/// One tool call of a `.txt` transcript: the call, its output lines, whether a
/// `[Tool result]` was seen for it.
type TxtCall = (ToolCall, Vec<String>, bool);

/// One message of a `.txt` transcript, being built.
struct TxtMsg {
    role: Role,
    text: Vec<String>,
    thinking: Vec<String>,
    calls: Vec<TxtCall>,
}

impl TxtMsg {
    fn new(role: Role) -> TxtMsg {
        TxtMsg {
            role,
            text: Vec::new(),
            thinking: Vec::new(),
            calls: Vec::new(),
        }
    }

    fn flush(self, b: &mut SessionBuilder) {
        let content = self.text.join("\n").trim().to_string();
        let thinking = self.thinking.join("\n").trim().to_string();
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|(mut c, out, seen)| {
                if seen {
                    c.output = Some(out.join("\n").trim_end().to_string());
                }
                c
            })
            .collect();
        if content.is_empty() && thinking.is_empty() && tool_calls.is_empty() {
            return;
        }
        let (content, context) = if self.role == Role::User {
            split_user_query(&content)
        } else {
            (content, String::new())
        };
        if !context.is_empty() {
            b.context("user context", context, None);
        }
        b.push(Message {
            role: self.role,
            content,
            thinking: (!thinking.is_empty()).then_some(thinking),
            tool_calls,
            ..Message::default()
        });
    }
}

/// A `.txt` transcript: `user:` / `assistant:` lines start messages; inside one,
/// `[Thinking]`, `[Tool call] Name` (then `  key=value` lines) and `[Tool result]` (then
/// the output) start blocks. Tool calls get ids `call-<n>` in file order.
fn parse_txt(b: &mut SessionBuilder, text: &str) {
    let mut cur: Option<TxtMsg> = None;
    let mut mode = Mode::Text;
    let mut n_calls = 0usize;
    for line in text.lines() {
        let role = if let Some(r) = line.strip_prefix("user:") {
            Some((Role::User, r))
        } else {
            line.strip_prefix("assistant:")
                .map(|r| (Role::Assistant, r))
        };
        if let Some((role, rest)) = role {
            if let Some(m) = cur.take() {
                m.flush(b);
            }
            let mut m = TxtMsg::new(role);
            m.text.push(rest.trim().to_string());
            cur = Some(m);
            mode = Mode::Text;
            continue;
        }
        let m = cur.get_or_insert_with(|| TxtMsg::new(Role::Assistant));
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("[Thinking]") {
            mode = Mode::Thinking;
            m.thinking.push(rest.trim().to_string());
        } else if let Some(rest) = trimmed.strip_prefix("[Tool call]") {
            n_calls += 1;
            m.calls.push((
                ToolCall {
                    tool_call_id: format!("call-{n_calls}"),
                    tool_name: rest.trim().to_string(),
                    input: Value::Object(serde_json::Map::new()),
                    ..ToolCall::default()
                },
                Vec::new(),
                false,
            ));
            mode = Mode::Args;
        } else if let Some(rest) = trimmed.strip_prefix("[Tool result]") {
            // The first call still without a result; a result with no call is text.
            match m.calls.iter().position(|c| !c.2) {
                Some(i) => {
                    let call = &mut m.calls[i];
                    call.2 = true;
                    let rest = rest.trim();
                    // `[Tool result] Name` names the tool; anything else is output.
                    if !rest.is_empty() && rest != call.0.tool_name {
                        call.1.push(rest.to_string());
                    }
                    mode = Mode::Result(i);
                }
                None => {
                    m.text.push(line.to_string());
                    mode = Mode::Text;
                }
            }
        } else {
            match mode {
                Mode::Args if line.starts_with("  ") => {
                    if let Some((call, _, _)) = m.calls.last_mut() {
                        let (k, v) = trimmed.split_once('=').unwrap_or((trimmed, ""));
                        if let Value::Object(o) = &mut call.input {
                            o.insert(k.trim().to_string(), Value::String(v.to_string()));
                        }
                    }
                }
                Mode::Result(i) => m.calls[i].1.push(line.to_string()),
                Mode::Thinking if !line.trim().is_empty() => m.thinking.push(line.to_string()),
                Mode::Thinking | Mode::Args | Mode::Text => {
                    mode = Mode::Text;
                    m.text.push(line.to_string());
                }
            }
        }
    }
    if let Some(m) = cur.take() {
        m.flush(b);
    }
}

fn load_jsonl_session(path: &Path, id: &str) -> Session {
    let mut s = load_jsonl(path, id);
    if let Some(dir) = path.parent().filter(|d| kit::file_name(d) == id) {
        let mut taken = HashSet::new();
        for f in subagent_files(dir) {
            let stem = kit::file_name(&f).trim_end_matches(".jsonl").to_string();
            let mut child = load_jsonl(&f, &stem);
            child.parent = Some(s.unified_id());
            s.subagents.push(Subagent {
                name: kit::unique_name(&mut taken, &names::escape(&stem)),
                unified_id: None,
                description: child.title.clone(),
                tool_call_id: None,
                session: Some(Box::new(child)),
            });
        }
    }
    s
}

fn load_jsonl(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Cursor, id);
    b.s.source = Source {
        paths: vec![path.to_path_buf()],
        format: "cursor-transcript-jsonl".into(),
        format_version: None,
    };
    let mut n_calls = 0usize;
    let mut lines: Vec<(usize, Value)> = Vec::new();
    super::jsonl::read(path, |n, v| lines.push((n, v))).into_session(&mut b.s);
    for (n, v) in lines {
        let msg = v.get("message").unwrap_or(&v);
        let content = msg.get("content").or_else(|| v.get("content"));
        let role = kit::str_field(&v, "role").or_else(|| kit::str_field(msg, "role"));
        match role {
            Some("user") => {
                let (query, rest) = split_user_query(&parts_text(content));
                let ts = rest
                    .split_once("<timestamp>")
                    .and_then(|(_, r)| r.split_once("</timestamp>"))
                    .and_then(|(t, _)| kit::parse_rfc3339(t.trim()));
                let rest = strip_tag(&rest, "timestamp");
                if !rest.is_empty() {
                    b.context("user context", rest, ts);
                }
                if !query.is_empty() {
                    b.push(Message {
                        role: Role::User,
                        content: query,
                        timestamp: ts,
                        native_id: Some(format!("line-{n}")),
                        ..Message::default()
                    });
                }
            }
            Some("assistant") => {
                let mut m = Message {
                    role: Role::Assistant,
                    native_id: Some(format!("line-{n}")),
                    ..Message::default()
                };
                let mut odd_parts: Vec<&Value> = Vec::new();
                let mut text = Vec::new();
                match content {
                    Some(Value::String(s)) => text.push(s.clone()),
                    Some(Value::Array(parts)) => {
                        for p in parts {
                            match kit::str_field(p, "type") {
                                Some("text") => {
                                    text.extend(kit::str_field(p, "text").map(String::from))
                                }
                                Some("thinking") => {
                                    m.thinking = kit::str_field(p, "thinking").map(String::from)
                                }
                                Some("tool_use") | Some("tool-call") => {
                                    n_calls += 1;
                                    m.tool_calls.push(ToolCall {
                                        tool_call_id: kit::str_any(p, &["id", "toolCallId"])
                                            .map_or_else(
                                                || format!("call-{n_calls}"),
                                                String::from,
                                            ),
                                        tool_name: kit::str_any(p, &["name", "toolName"])
                                            .unwrap_or_default()
                                            .to_string(),
                                        input: p.get("input").cloned().unwrap_or(Value::Null),
                                        ..ToolCall::default()
                                    });
                                }
                                _ => odd_parts.push(p),
                            }
                        }
                    }
                    None | Some(Value::Null) => {}
                    Some(other) => odd_parts.push(other),
                }
                m.content = text.join("\n\n");
                b.push(m);
                for p in odd_parts {
                    odd(
                        &mut b,
                        "message parts",
                        "unknown type",
                        &format!("line {n}"),
                        p,
                    );
                }
            }
            Some("tool") => match content {
                Some(Value::Array(parts)) => {
                    for p in parts {
                        let (out, err) = output_text(p.get("content").or_else(|| p.get("output")));
                        let call =
                            kit::str_any(p, &["tool_use_id", "toolCallId"]).unwrap_or_default();
                        b.tool_result(call, None, out, err, None);
                    }
                }
                None | Some(Value::Null) => {}
                Some(other) => odd(
                    &mut b,
                    "message parts",
                    "tool content is no list",
                    &format!("line {n}"),
                    other,
                ),
            },
            other => {
                let problem = format!("unknown role `{}`", other.unwrap_or(""));
                odd(&mut b, "lines", &problem, &format!("line {n}"), &v);
            }
        }
    }
    b.s.updated_at = mtime(path);
    b.finish()
}

/// `text` without `<tag>…</tag>`, trimmed.
fn strip_tag(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    match text.split_once(&open) {
        Some((a, rest)) => match rest.split_once(&close) {
            Some((_, b)) => format!("{a}{b}").trim().to_string(),
            None => a.trim().to_string(),
        },
        None => text.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while v >= 0x80 {
            out.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    }

    fn field(n: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = varint(n << 3 | 2);
        out.extend(varint(payload.len() as u64));
        out.extend(payload);
        out
    }

    #[test]
    fn the_root_blob_lists_message_ids_and_the_workspace() {
        let mut buf = field(1, &[0xab; 32]);
        buf.extend(varint(3 << 3));
        buf.extend(varint(300));
        buf.extend(field(1, &[0x01; 32]));
        buf.extend(field(9, b"file:///home/u/My%20Project"));
        let r = decode_root(&buf).unwrap();
        assert_eq!(r.messages, vec!["ab".repeat(32), "01".repeat(32)]);
        assert_eq!(r.workspace.as_deref(), Some("/home/u/My Project"));
    }

    #[test]
    fn malformed_protobuf_is_an_error_never_a_panic() {
        let good = field(1, &[7; 32]);
        for cut in 0..good.len() {
            let _ = decode_root(&good[..cut]);
        }
        assert!(decode_root(&good[..10]).is_err());
        // A length of 2^63 must not allocate or overflow.
        let mut huge = varint(1 << 3 | 2);
        huge.extend(varint(u64::MAX >> 1));
        assert!(decode_root(&huge).is_err());
        assert!(decode_root(&[0xff; 11]).is_err());
        assert!(decode_root(&[0x0b]).is_err(), "wire type 3 (groups)");
        assert!(decode_root(&field(1, b"short")).is_err());
        // Every byte string: no panic.
        let mut x: u32 = 1;
        for _ in 0..20_000 {
            let len = (x % 40) as usize;
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let _ = decode_root(&buf);
        }
    }

    #[test]
    fn hex_meta_and_uris_decode() {
        assert_eq!(unhex("7b7d").as_deref(), Some(&b"{}"[..]));
        assert_eq!(unhex("7b7"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(
            uri_to_path("vscode-remote://ssh-remote+%7B%22host%22%7D/home/ubuntu/x"),
            "/home/ubuntu/x"
        );
        assert_eq!(uri_to_path("/plain/path"), "/plain/path");
        assert_eq!(uri_to_path("file:///a%2"), "/a%2");
    }

    #[test]
    fn user_queries_are_split_from_injected_context() {
        let (q, rest) =
            split_user_query("<user_info>os</user_info>\n<user_query>\nfix it\n</user_query>");
        assert_eq!(
            (q.as_str(), rest.as_str()),
            ("fix it", "<user_info>os</user_info>")
        );
        assert_eq!(split_user_query("plain").0, "plain");
    }

    #[test]
    fn txt_transcripts_become_messages_tool_calls_and_outputs() {
        let mut b = SessionBuilder::new(Agent::Cursor, "t");
        parse_txt(
            &mut b,
            "user:\n<user_query>\nlist files\n</user_query>\n\nassistant:\n[Thinking] I should look\nat the tree.\n\nLet me look.\n[Tool call] Shell\n  command=ls -la\n  cwd=/w\n[Tool result] Shell\nREADME.md\nsrc\n\nassistant:\nThere are two.\n",
        );
        let s = b.finish();
        let roles: Vec<Role> = s.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Assistant]);
        assert_eq!(s.messages[0].content, "list files");
        let a = &s.messages[1];
        assert_eq!(a.thinking.as_deref(), Some("I should look\nat the tree."));
        assert_eq!(a.content, "Let me look.");
        let c = &a.tool_calls[0];
        assert_eq!(c.tool_name, "Shell");
        assert_eq!(c.input["command"], "ls -la");
        assert_eq!(c.output.as_deref(), Some("README.md\nsrc"));
        assert_eq!(s.messages[2].content, "There are two.");
    }
}
