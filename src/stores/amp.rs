//! Amp (Sourcegraph's coding agent): one JSON document per thread, rewritten whole by the
//! CLI or the editor extension while the thread runs.
//!
//! Amp is closed source, so the format here is learned from three places, each cited:
//!
//! - real thread files (Amp CLI `0.0.1761595317-gdb0f30`, thread versions `v` 27 to 194,
//!   Linux, read only): the top-level fields `v`, `id`, `created`, `title`, `messages`,
//!   `nextMessageId`, `agentMode`, `env.initial` (`trees[].uri`, `tags`, `platform`),
//!   `usageLedger.events[]` and `~debug`; user messages with `meta.sentAt`, `userState`;
//!   assistant messages with `state {type, stopReason}` and `usage {model, inputTokens,
//!   outputTokens, cacheCreationInputTokens, cacheReadInputTokens, credits,
//!   creditsSinceLastUserMessage}`; content blocks `text`, `thinking {thinking,
//!   signature}`, `tool_use {id, name, input}` and `tool_result {toolUseID, run {status,
//!   result, progress}}`, `run.status` `done` and `in-progress`. That `credits` are US
//!   cents was checked on those files: every reply's credits equal its tokens at the
//!   model's list price, in cents.
//! - open-source readers of the same files: ryoppippi/ccusage
//!   `37d6cd9580174f460714e0c819b670542ca65ec2` `apps/amp/src/data-loader.ts` and
//!   `8abda4e027d491d57da5ca615fdd1803ad4ca62f` `apps/amp/src/_consts.ts` (the ledger's
//!   `operationType`, `fromMessageId`/`toMessageId`; `~/.local/share/amp/threads/`);
//!   Dicklesworthstone/cross_agent_sessions_resumer
//!   `83284262feda2bb0abba51a84c2108413e0b6049` `src/providers/amp.rs` (the `info` role
//!   and its `summary` blocks, `env.initial.cwd`, `XDG_DATA_HOME`, the VS Code extension's
//!   older `globalStorage/sourcegraph.amp/threads3/` directory, `run.error`);
//!   AprilNEA/BYOKEY `46dad83060296f02acde957d219e6839fe590420`
//!   `crates/ampcode/src/types/thread.rs` (`relationships[] {threadID, type: handoff |
//!   fork | mention, role: parent | child}`, `redacted_thinking`, the run statuses
//!   `cancelled`, `rejected-by-user`, `blocked-on-user`).
//! - nothing of Amp's own code: none is public.
//!
//! Design decisions and why:
//! - **Roots**: `$XDG_DATA_HOME/amp/threads`, else `~/.local/share/amp/threads` (the CLI
//!   uses this path on macOS too), and the editor extension's older
//!   `User/globalStorage/sourcegraph.amp/threads3` in every VS Code build. A `--store`
//!   path may be the threads directory or the `amp` directory holding it. Beside
//!   `threads/` Amp keeps `secrets.json` (the API key), `settings.json` and
//!   `history.jsonl` (the prompt box's history, prompts only, no thread id): none is
//!   opened.
//! - **Listing reads names only**: `<id>.json` in a threads directory, the id being the
//!   file name (`T-<uuid>`). Nothing is parsed until a thread is opened.
//! - **Each file is read in one read.** A thread file is replaced whole on every change; a
//!   read may meet one cut mid-write. The document is then read field by field: every
//!   top-level field and every complete message before the cut is kept, the cut tail is
//!   shown as raw text, and a warning names the file.
//! - **Usage once per API call**: each assistant message's `usage` is that reply's call
//!   (cache reads and writes included, `credits / 100` as USD). The usage ledger repeats
//!   those calls as `inference` events (without the cache counts) and adds calls no
//!   message holds (`title-generation`); only the ledger events no assistant message
//!   carries are counted, each as an event after the message its `toMessageId` names.
//!   `~debug.lastInferenceUsage` repeats the last reply and is never counted. A reply's
//!   time is its `usage.timestamp`, else its ledger event's `timestamp`.
//! - **Nothing dropped silently**: a content block or message role this reader does not
//!   know is counted in a warning and shown as its JSON, where it stood.

use super::cline::parse_array;
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Message, MessageKind, Role, Session, Subagent, TokenUsage, ToolCall,
    SEALED_THINKING,
};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Larger thread files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// Longest raw text of an unreadable file kept in the transcript.
const MAX_RAW_CHARS: usize = 64 << 10;

/// VS Code builds that host the Amp extension, by their user-data directory name.
const EDITORS: &[&str] = &["Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"];

/// Every threads directory Amp may use, existing or not, in priority order.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out = Vec::new();
    match env.path_var("XDG_DATA_HOME") {
        Some(p) => out.push(Root::new(
            Agent::Amp,
            p.join("amp/threads"),
            "XDG_DATA_HOME",
        )),
        None => out.push(Root::new(
            Agent::Amp,
            env.home.join(".local/share/amp/threads"),
            "default",
        )),
    }
    let (config, how) = match env.path_var("XDG_CONFIG_HOME") {
        Some(p) => (p, "XDG_CONFIG_HOME"),
        None => (env.home.join(".config"), "default"),
    };
    let mac = env.home.join("Library/Application Support");
    for (base, how) in [(config, how), (mac, "macOS")] {
        for editor in EDITORS {
            out.push(Root::new(
                Agent::Amp,
                base.join(editor)
                    .join("User/globalStorage/sourcegraph.amp/threads3"),
                how,
            ));
        }
    }
    out
}

pub struct AmpStore {
    base: Base,
}

impl AmpStore {
    pub fn new(roots: Vec<Root>) -> AmpStore {
        AmpStore {
            base: Base::new(Agent::Amp, roots),
        }
    }
}

impl Store for AmpStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        kit::listed_by_stem(&self.base.roots, thread_files)
    }

    /// Each root directory and its `threads/` when there is one: the listing reads their
    /// names only (a thread's content is its source), and `threads/` appearing moves the
    /// root. A root that is one thread file is its source alone.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if root.path.is_dir() {
                g.dirs.push(root.path.clone());
                let threads = root.path.join("threads");
                if threads.is_dir() {
                    g.dirs.push(threads);
                }
            } else {
                g.files.push(root.path.clone());
            }
        }
        Some(g)
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads file names only; rewriting a thread never adds one.
        true
    }

    fn load(&self, listed: &Listed) -> Session {
        load_thread(&listed.path, &listed.id)
    }
}

/// The thread files under a root: `<root>/threads/*.json` when the root is Amp's data
/// directory, else `<root>/*.json`; or the root itself when it is one thread file.
pub fn thread_files(root: &Path) -> Vec<PathBuf> {
    if root.is_file() {
        return vec![root.to_path_buf()];
    }
    let threads = root.join("threads");
    let dir = if threads.is_dir() {
        threads
    } else {
        root.to_path_buf()
    };
    kit::typed_entries(&dir)
        .into_iter()
        .filter(|(p, t)| {
            let name = p.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
            *t == EntryType::File && !name.starts_with(b".") && name.ends_with(b".json")
        })
        .map(|(p, _)| p)
        .collect()
}

/// Why a thread file could not be read; shown as a warning naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {bytes} bytes, too large to parse, skipped")]
    TooLarge { file: String, bytes: u64 },
    #[error("{file}: not a JSON object; its text is shown raw")]
    NotObject { file: String },
}

/// A thread document: its top-level fields, its messages, and the raw text after a cut.
#[derive(Debug, Default)]
pub struct Doc {
    pub fields: Map<String, Value>,
    pub messages: Vec<Value>,
    /// Text after the point where a half-written file stops parsing.
    pub cut: Option<String>,
}

/// Parse a thread document. A whole document costs one parse; a cut one is read field by
/// field so everything before the cut is kept. `None` when the text is no JSON object.
pub fn parse_doc(bytes: &[u8]) -> Option<Doc> {
    parse_doc_of(bytes, "messages")
}

/// [`parse_doc_of`] with the warnings every store of one-JSON-document sessions gives: a
/// file that is no JSON object costs a warning and is shown raw (`None`); a cut one says how
/// many `items` came before the cut, the rest being raw text the reader shows.
pub fn doc_or_raw(
    b: &mut kit::SessionBuilder,
    bytes: &[u8],
    file: &str,
    list: &str,
    items: &str,
) -> Option<Doc> {
    let Some(doc) = parse_doc_of(bytes, list) else {
        b.warn(format!("{file}: not a JSON object; its text is shown raw"));
        let raw = kit::raw_text(bytes);
        if !raw.trim().is_empty() {
            b.context("unparsed file", raw, None);
        }
        return None;
    };
    if doc.cut.is_some() {
        b.warn(format!(
            "{file}: cut after {} {items} (half-written?); the rest is shown as raw text",
            doc.messages.len()
        ));
    }
    Some(doc)
}

/// [`parse_doc`] for a document whose list of messages is the field `list` (Continue's
/// sessions call it `history`). A `list` that is no array stays among the fields.
pub fn parse_doc_of(bytes: &[u8], list: &str) -> Option<Doc> {
    if let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(bytes) {
        let messages = match fields.remove(list) {
            Some(Value::Array(a)) => a,
            Some(other) => {
                // Kept where the reader sees it: an odd `messages` is not dropped.
                fields.insert(list.into(), other);
                Vec::new()
            }
            None => Vec::new(),
        };
        return Some(Doc {
            fields,
            messages,
            cut: None,
        });
    }
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start_matches('\u{feff}');
    let b = text.as_bytes();
    let skip_ws = |mut p: usize| {
        while p < b.len() && b[p].is_ascii_whitespace() {
            p += 1;
        }
        p
    };
    let mut pos = skip_ws(0);
    if b.get(pos) != Some(&b'{') {
        return None;
    }
    pos = skip_ws(pos + 1);
    let mut doc = Doc::default();
    let next_value = |at: usize| -> Option<(Value, usize)> {
        let mut s = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        match s.next() {
            Some(Ok(v)) => Some((v, at + s.byte_offset())),
            _ => None,
        }
    };
    loop {
        let start = pos;
        let Some((Value::String(key), after)) = next_value(pos) else {
            doc.cut = Some(tail(&text[start..]));
            break;
        };
        pos = skip_ws(after);
        if b.get(pos) != Some(&b':') {
            doc.cut = Some(tail(&text[start..]));
            break;
        }
        pos = skip_ws(pos + 1);
        match next_value(pos) {
            Some((v, after)) => {
                if key == list {
                    match v {
                        Value::Array(a) => doc.messages = a,
                        other => {
                            doc.fields.insert(key, other);
                        }
                    }
                } else {
                    doc.fields.insert(key, v);
                }
                pos = skip_ws(after);
                match b.get(pos) {
                    Some(b',') => pos = skip_ws(pos + 1),
                    // A closed document that still did not parse whole: trailing bytes.
                    Some(b'}') => {
                        let rest = text[pos + 1..].trim();
                        if !rest.is_empty() {
                            doc.cut = Some(tail(rest));
                        }
                        break;
                    }
                    _ => {
                        doc.cut = Some(tail(&text[pos..]));
                        break;
                    }
                }
            }
            None if key == list => {
                match parse_array(&b[pos..]) {
                    Some(r) => {
                        doc.messages = r.items;
                        doc.cut = Some(
                            r.unparsed
                                .unwrap_or_else(|| tail(&text[pos..]))
                                .chars()
                                .take(MAX_RAW_CHARS)
                                .collect(),
                        );
                    }
                    None => doc.cut = Some(tail(&text[start..])),
                }
                break;
            }
            None => {
                doc.cut = Some(tail(&text[start..]));
                break;
            }
        }
    }
    if doc.cut.as_deref().is_some_and(|c| c.trim().is_empty()) {
        doc.cut = Some("(file ends before the document is closed)".into());
    }
    Some(doc)
}

fn tail(s: &str) -> String {
    let t: String = s.trim().chars().take(MAX_RAW_CHARS).collect();
    if t.is_empty() {
        "(file ends before the document is closed)".into()
    } else {
        t
    }
}

fn read_doc(path: &Path, file: &str) -> Result<(Vec<u8>, Option<Doc>), ReadError> {
    let meta = std::fs::metadata(path).map_err(|source| ReadError::Io {
        file: file.to_string(),
        source,
    })?;
    if meta.len() > MAX_JSON_BYTES {
        return Err(ReadError::TooLarge {
            file: file.to_string(),
            bytes: meta.len(),
        });
    }
    let bytes = kit::read_file(path).map_err(|source| ReadError::Io {
        file: file.to_string(),
        source,
    })?;
    let doc = parse_doc(&bytes);
    Ok((bytes, doc))
}

/// Load one thread file.
pub fn load_thread(path: &Path, id: &str) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(Agent::Amp, id);
    b.s.source.format = "amp-thread-json".into();
    b.s.source.paths.push(path.to_path_buf());
    let doc = match read_doc(path, &file) {
        Ok((_, Some(doc))) => doc,
        Ok((bytes, None)) => {
            b.warn(ReadError::NotObject { file }.to_string());
            let raw: String = String::from_utf8_lossy(&bytes)
                .chars()
                .take(MAX_RAW_CHARS)
                .collect();
            if !raw.trim().is_empty() {
                b.context("unparsed file", raw, None);
            }
            return b.finish();
        }
        Err(e) => {
            b.warn(e.to_string());
            return b.finish();
        }
    };
    if doc.cut.is_some() {
        b.warn(format!(
            "{file}: cut after {} messages (half-written?); the rest is shown as raw text",
            doc.messages.len()
        ));
    }
    let f = &doc.fields;
    if let Some(v) = f.get("v").and_then(Value::as_u64) {
        b.s.source.format_version = Some(v.to_string());
    }
    b.s.title = f
        .get("title")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    b.s.created_at = f.get("created").and_then(super::parse_time);
    let initial = f.get("env").and_then(|e| e.get("initial"));
    b.s.cwd = initial.and_then(cwd_of);
    let tag_model = initial
        .and_then(|i| i.get("tags"))
        .and_then(Value::as_array)
        .and_then(|tags| {
            tags.iter()
                .filter_map(Value::as_str)
                .find_map(|t| t.strip_prefix("model:"))
        })
        .map(str::to_string);
    relationships(&mut b, f.get("relationships"));

    // Ledger events no assistant message carries, by the message they follow.
    let carried: HashSet<i64> = doc
        .messages
        .iter()
        .filter(|m| kit::str_field(m, "role") == Some("assistant") && m.get("usage").is_some())
        .filter_map(|m| m.get("messageId").and_then(Value::as_i64))
        .collect();
    let ids: HashSet<i64> = doc
        .messages
        .iter()
        .filter_map(|m| m.get("messageId").and_then(Value::as_i64))
        .collect();
    let mut extra: HashMap<Option<i64>, Vec<&Value>> = HashMap::new();
    // When each reply was made: replies carry no time of their own before `usage.timestamp`.
    let mut reply_times: HashMap<i64, DateTime<Utc>> = HashMap::new();
    let ledger = kit::value_at(f.get("usageLedger").unwrap_or(&Value::Null), &["events"]);
    for e in ledger.and_then(Value::as_array).into_iter().flatten() {
        let to = e.get("toMessageId").and_then(Value::as_i64);
        let inference = kit::str_field(e, "operationType").is_none_or(|o| o == "inference");
        if inference {
            let at = kit::str_field(e, "timestamp").and_then(kit::parse_rfc3339);
            if let (Some(t), Some(at)) = (to, at) {
                reply_times.entry(t).or_insert(at);
            }
        }
        if inference && to.is_some_and(|t| carried.contains(&t)) {
            continue;
        }
        extra
            .entry(to.filter(|t| ids.contains(t)))
            .or_default()
            .push(e);
    }

    let mut p = Parser {
        b,
        model: tag_model,
        reply_times,
    };
    for (i, m) in doc.messages.iter().enumerate() {
        p.message(i, m);
        let mid = m.get("messageId").and_then(Value::as_i64);
        if let Some(events) = mid.and_then(|id| extra.remove(&Some(id))) {
            for e in events {
                p.ledger_event(e);
            }
        }
    }
    let mut rest: Vec<&Value> = extra.into_values().flatten().collect();
    rest.sort_by(|a, b| kit::str_field(a, "timestamp").cmp(&kit::str_field(b, "timestamp")));
    for e in rest {
        p.ledger_event(e);
    }
    let mut b = p.b;
    if let Some(cut) = doc.cut {
        b.context(&format!("unparsed tail of {file}"), cut, None);
    }
    b.finish()
}

/// The working directory: `env.initial.cwd`, else the first workspace tree's `file://` URI.
fn cwd_of(initial: &Value) -> Option<String> {
    if let Some(c) = kit::str_field(initial, "cwd").filter(|c| !c.is_empty()) {
        return Some(c.to_string());
    }
    let trees = initial.get("trees")?.as_array()?;
    trees.iter().find_map(|t| {
        let uri = kit::str_field(t, "uri")?;
        let rest = uri.strip_prefix("file://")?;
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        Some(percent_decode(rest)).filter(|p| !p.is_empty())
    })
}

/// `%XX` escapes of a URI path decoded (invalid ones kept as they are).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(n) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(n);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `relationships[]`: the thread this one was handed off from or forked from, threads
/// handed off to, and mentions. Each is an event too, so none is lost.
fn relationships(b: &mut SessionBuilder, rels: Option<&Value>) {
    for r in rels.and_then(Value::as_array).into_iter().flatten() {
        let Some(other) = kit::str_field(r, "threadID").filter(|t| !t.is_empty()) else {
            b.unparsed
                .note("relationships", "no threadID", || r.to_string());
            continue;
        };
        let kind = kit::str_field(r, "type").unwrap_or("related");
        let role = kit::str_field(r, "role");
        let uid = unified_id(Agent::Amp, other);
        match (kind, role) {
            ("fork", Some("child")) => b.s.forked_from = Some(uid),
            ("handoff", Some("child")) => b.s.parent = Some(uid),
            ("handoff", Some("parent")) => b.s.subagents.push(Subagent {
                name: crate::names::escape(other),
                unified_id: Some(uid),
                description: Some("handoff".into()),
                ..Subagent::default()
            }),
            _ => {}
        }
        let how = match (kind, role) {
            ("fork", Some("child")) => "forked from",
            ("fork", Some("parent")) => "forked into",
            ("handoff", Some("child")) => "handed off from",
            ("handoff", Some("parent")) => "handed off to",
            ("mention", _) => "mentions",
            _ => kind,
        };
        b.event(format!("thread {how} {other}"), None);
    }
}

/// Time of a message: `meta.sentAt` (prompts) or `usage.timestamp` (replies of newer
/// versions), milliseconds or RFC 3339.
fn time_of(m: &Value) -> Option<DateTime<Utc>> {
    kit::value_at(m, &["meta", "sentAt"])
        .or_else(|| kit::value_at(m, &["usage", "timestamp"]))
        .and_then(super::parse_time)
}

struct Parser {
    b: SessionBuilder,
    /// The thread's model from its tags, for replies that carry no usage.
    model: Option<String>,
    /// Reply times from the usage ledger's `inference` events, by message id.
    reply_times: HashMap<i64, DateTime<Utc>>,
}

impl Parser {
    fn message(&mut self, i: usize, m: &Value) {
        let ts = time_of(m);
        // A plain-string `content` reads as one text block.
        let one;
        let blocks: &[Value] = match m.get("content") {
            Some(Value::Array(a)) => a,
            Some(Value::String(s)) => {
                one = [serde_json::json!({"type": "text", "text": s})];
                &one
            }
            _ => &[],
        };
        match kit::str_field(m, "role") {
            Some("user") => self.user(m, blocks, ts),
            Some("assistant") => self.assistant(m, blocks, ts),
            Some("info") => self.info(blocks, ts),
            role => {
                let role = role.unwrap_or("(none)").to_string();
                self.b.unparsed(
                    "messages",
                    &format!("unknown role {role}"),
                    || format!("message {i}"),
                    "message",
                    &m.to_string(),
                    ts,
                );
            }
        }
    }

    fn user(&mut self, m: &Value, blocks: &[Value], ts: Option<DateTime<Utc>>) {
        let mut text = String::new();
        for bl in blocks {
            match kit::str_field(bl, "type") {
                Some("text") => push_para(&mut text, kit::str_field(bl, "text").unwrap_or("")),
                Some("image") => push_para(&mut text, &image(bl)),
                Some("tool_result") => {
                    let id = kit::str_any(bl, &["toolUseID", "tool_use_id"]).unwrap_or("");
                    let (out, is_error) = run_output(bl.get("run").unwrap_or(&Value::Null));
                    self.b.tool_result(id, None, out, is_error, ts);
                }
                _ => self.unknown(bl, ts),
            }
        }
        if !text.trim().is_empty() {
            self.b.push(Message {
                role: Role::User,
                content: text,
                timestamp: ts,
                native_id: native_id(m),
                ..Message::default()
            });
        }
        for f in kit::value_at(m, &["fileMentions", "files"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = kit::str_any(f, &["path", "uri"]).unwrap_or("(file)");
            let body = if f.get("isImage").and_then(Value::as_bool) == Some(true) {
                "[image]".to_string()
            } else {
                kit::str_field(f, "content").unwrap_or("").to_string()
            };
            self.b
                .context("mentioned file", format!("{name}\n\n{body}"), ts);
        }
    }

    fn assistant(&mut self, m: &Value, blocks: &[Value], ts: Option<DateTime<Utc>>) {
        let ts = ts.or_else(|| {
            let id = m.get("messageId").and_then(Value::as_i64)?;
            self.reply_times.get(&id).copied()
        });
        let mut msg = Message {
            role: Role::Assistant,
            timestamp: ts,
            native_id: native_id(m),
            model: self.model.clone(),
            ..Message::default()
        };
        let mut thinking = String::new();
        let mut unknown = Vec::new();
        for bl in blocks {
            match kit::str_field(bl, "type") {
                Some("text") => {
                    push_para(&mut msg.content, kit::str_field(bl, "text").unwrap_or(""))
                }
                Some("thinking") => {
                    let t = kit::str_field(bl, "thinking").unwrap_or("");
                    if t.trim().is_empty() {
                        push_para(&mut thinking, SEALED_THINKING);
                    } else {
                        push_para(&mut thinking, t);
                    }
                }
                Some("redacted_thinking") => push_para(&mut thinking, SEALED_THINKING),
                Some("image") => push_para(&mut msg.content, &image(bl)),
                Some("tool_use" | "server_tool_use") => msg.tool_calls.push(ToolCall {
                    tool_call_id: kit::str_field(bl, "id").unwrap_or("").to_string(),
                    tool_name: kit::str_field(bl, "name").unwrap_or("tool").to_string(),
                    input: bl.get("input").cloned().unwrap_or(Value::Null),
                    ..ToolCall::default()
                }),
                _ => unknown.push(bl),
            }
        }
        if !thinking.is_empty() {
            msg.thinking = Some(thinking);
        }
        if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
            if let Some(model) = kit::str_field(u, "model").filter(|s| !s.is_empty()) {
                msg.model = Some(model.to_string());
            }
            let usage = TokenUsage {
                input_tokens: kit::u64_field(u, "inputTokens"),
                output_tokens: kit::u64_field(u, "outputTokens"),
                cached_tokens: kit::u64_field(u, "cacheReadInputTokens"),
                cache_write_tokens: kit::u64_field(u, "cacheCreationInputTokens"),
                ..TokenUsage::default()
            };
            msg.token_usage = (!usage.is_zero()).then_some(usage);
            msg.cost = u.get("credits").and_then(Value::as_f64).map(|c| c / 100.0);
        }
        self.b.push(msg);
        for bl in unknown {
            self.unknown(bl, ts);
        }
        let state = m.get("state");
        match state.and_then(|s| kit::str_field(s, "type")) {
            None | Some("complete" | "streaming") => {}
            Some(other) => {
                let mut s = format!("reply {other}");
                let why = state
                    .and_then(|s| {
                        kit::str_at(s, &["error", "message"]).or(kit::str_field(s, "stopReason"))
                    })
                    .unwrap_or("");
                if !why.is_empty() {
                    s.push_str(": ");
                    s.push_str(why);
                }
                self.b.event(s, ts);
            }
        }
    }

    /// `info` messages: summaries that replaced earlier context, and notices.
    fn info(&mut self, blocks: &[Value], ts: Option<DateTime<Utc>>) {
        for bl in blocks {
            match kit::str_field(bl, "type") {
                Some("summary") => {
                    let s = bl.get("summary").unwrap_or(&Value::Null);
                    match (kit::str_field(s, "type"), s) {
                        (Some("message"), _) if kit::str_field(s, "summary").is_some() => {
                            self.b.push(Message {
                                role: Role::System,
                                kind: MessageKind::CompactionSummary,
                                content: kit::str_field(s, "summary").unwrap_or("").to_string(),
                                timestamp: ts,
                                ..Message::default()
                            })
                        }
                        (Some("thread"), _) if kit::str_field(s, "thread").is_some() => {
                            let t = kit::str_field(s, "thread").unwrap_or("");
                            self.b.event(format!("summary in thread {t}"), ts);
                        }
                        _ => self.unknown(bl, ts),
                    }
                }
                Some("text") => {
                    let t = kit::str_field(bl, "text").unwrap_or("");
                    if !t.trim().is_empty() {
                        self.b.event(t.to_string(), ts);
                    }
                }
                _ => self.unknown(bl, ts),
            }
        }
    }

    /// A content block of a type this reader does not know: counted, shown as its JSON.
    fn unknown(&mut self, bl: &Value, ts: Option<DateTime<Utc>>) {
        let t = kit::str_field(bl, "type").unwrap_or("(none)").to_string();
        let raw = bl.to_string();
        self.b.unparsed(
            "content blocks",
            &format!("unknown block type {t}"),
            || raw.chars().take(200).collect(),
            "content block",
            &raw,
            ts,
        );
    }

    /// A usage-ledger event no message carries (title generation, say) as an event with
    /// its usage and cost (`credits` are cents).
    fn ledger_event(&mut self, e: &Value) {
        let op = kit::str_field(e, "operationType").unwrap_or("API call");
        let tokens = e.get("tokens").unwrap_or(&Value::Null);
        let usage = TokenUsage {
            input_tokens: kit::u64_field(tokens, "input"),
            output_tokens: kit::u64_field(tokens, "output"),
            ..TokenUsage::default()
        };
        let cost = e.get("credits").and_then(Value::as_f64).map(|c| c / 100.0);
        let model = kit::str_field(e, "model").map(str::to_string);
        let mut s = format!(
            "{op}: {} in, {} out",
            usage.input_tokens, usage.output_tokens
        );
        if let Some(m) = &model {
            s.push_str(&format!(" ({m})"));
        }
        if let Some(c) = cost {
            s.push_str(&format!(", ${c:.6}"));
        }
        self.b.push(Message {
            role: Role::System,
            kind: MessageKind::Event,
            content: s,
            timestamp: kit::str_field(e, "timestamp").and_then(kit::parse_rfc3339),
            // Named in the text only: a side call (a title) is not the thread's model.
            model: None,
            token_usage: (!usage.is_zero()).then_some(usage),
            cost,
            ..Message::default()
        });
    }
}

fn native_id(m: &Value) -> Option<String> {
    match m.get("messageId") {
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// A tool run's output as text, and whether it failed. `result` is a string, a list of
/// lines, an object with `output` (and `exitCode`) or `content` blocks, or any JSON;
/// without one, `progress` (the output so far); a run that did not finish says its status.
pub fn run_output(run: &Value) -> (String, bool) {
    let status = kit::str_field(run, "status").unwrap_or("");
    let is_error = matches!(status, "error" | "cancelled" | "rejected-by-user");
    let mut out = String::new();
    if !matches!(status, "" | "done") {
        out.push_str(&format!("[tool run {status}]"));
    }
    let body = run
        .get("result")
        .filter(|v| !v.is_null())
        .or_else(|| run.get("progress").filter(|v| !v.is_null()))
        .map(value_text)
        .unwrap_or_default();
    push_para(&mut out, &body);
    if let Some(e) = run.get("error").filter(|v| !v.is_null()) {
        let msg = kit::str_field(e, "message")
            .map(str::to_string)
            .unwrap_or_else(|| value_text(e));
        push_para(&mut out, &format!("error: {msg}"));
    }
    (out, is_error)
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Array(a) => {
            let mut out = String::new();
            for x in a {
                match kit::str_field(x, "type") {
                    Some("text") => push_para(&mut out, kit::str_field(x, "text").unwrap_or("")),
                    Some("image") => push_para(&mut out, &image(x)),
                    _ => push_para(&mut out, &value_text(x)),
                }
            }
            out
        }
        Value::Object(o) => {
            if let Some(Value::String(s)) = o.get("output") {
                let mut out = s.clone();
                if let Some(code) = o.get("exitCode").filter(|c| !c.is_null()) {
                    push_para(&mut out, &format!("exit code {code}"));
                }
                return out;
            }
            if let Some(c @ Value::Array(_)) = o.get("content") {
                return value_text(c);
            }
            serde_json::to_string_pretty(v).unwrap_or_default()
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// An image block as a placeholder: `source {type: base64, mediaType, data}` or a URL.
fn image(bl: &Value) -> String {
    let src = bl.get("source").unwrap_or(&Value::Null);
    match kit::str_field(src, "type") {
        Some("base64") => kit::base64_placeholder(
            "image",
            kit::str_any(src, &["mediaType", "media_type"]),
            kit::str_field(src, "data"),
        ),
        Some("url") => format!("[image: {}]", kit::str_field(src, "url").unwrap_or("")),
        _ => "[image]".to_string(),
    }
}

fn push_para(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_document_keeps_its_fields_and_complete_messages() {
        let d = parse_doc(
            br#"{"v":3,"id":"T-1","title":"t","messages":[{"role":"user","messageId":0},{"role":"assi"#,
        )
        .expect("object");
        assert_eq!(d.fields.get("id"), Some(&Value::from("T-1")));
        assert_eq!(d.messages.len(), 1);
        assert_eq!(d.cut.as_deref(), Some(r#"{"role":"assi"#));
        let d = parse_doc(br#"{"v":3,"messages":[],"title":"cut"#).expect("object");
        assert!(d.messages.is_empty());
        assert_eq!(d.cut.as_deref(), Some(r#""title":"cut"#));
        let d = parse_doc(br#"{"v":1,"messages":[{"role":"user"}]}"#).expect("object");
        assert!(d.cut.is_none() && d.messages.len() == 1);
        assert!(parse_doc(b"[1,2]").is_none());
        assert!(parse_doc(b"").is_none());
    }

    #[test]
    fn run_outputs_read_every_result_shape() {
        let r = serde_json::json!({"status": "done", "result": {"output": "ok", "exitCode": 0}});
        assert_eq!(run_output(&r), ("ok\n\nexit code 0".to_string(), false));
        let r = serde_json::json!({"status": "in-progress", "progress": ["a", "b"]});
        assert_eq!(
            run_output(&r),
            ("[tool run in-progress]\n\na\nb".to_string(), false)
        );
        let r = serde_json::json!({"status": "error", "error": {"message": "boom"}});
        assert_eq!(
            run_output(&r),
            ("[tool run error]\n\nerror: boom".to_string(), true)
        );
    }

    /// The bundled sample: usage from its two replies plus the ledger's title call only
    /// (the expected sums are the sample's own numbers, added by hand).
    #[test]
    fn the_bundled_sample_counts_each_api_call_once() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "fixtures/home/.local/share/amp/threads/T-5a3f0c1e-7b2d-4e8a-9c61-0d4e2b7a9f10.json",
        );
        let s = load_thread(&p, "T-5a3f0c1e-7b2d-4e8a-9c61-0d4e2b7a9f10");
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let c = s.cost();
        assert_eq!(
            (
                c.input_tokens,
                c.output_tokens,
                c.cached_tokens,
                c.cache_write_tokens
            ),
            (618, 95, 18_800, 920)
        );
        assert!((c.total_usd - 0.0136).abs() < 1e-9, "{}", c.total_usd);
        assert_eq!(s.title.as_deref(), Some("Counting TODO markers"));
        assert_eq!(s.cwd.as_deref(), Some("/home/demo/projects/demo"));
        let out = s.messages.iter().find_map(|m| m.tool_result.as_ref());
        assert_eq!(
            out.map(|r| (r.tool_name.as_str(), r.output.as_str())),
            Some(("Bash", "src/main.rs:2\nsrc/lib.rs:1\n\nexit code 0"))
        );
    }

    #[test]
    fn file_uris_become_paths() {
        let v = serde_json::json!({"trees": [{"uri": "file:///home/u/my%20proj"}]});
        assert_eq!(cwd_of(&v).as_deref(), Some("/home/u/my proj"));
        assert_eq!(percent_decode("a%2"), "a%2");
    }
}
