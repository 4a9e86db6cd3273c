//! Loading one pi-format file: lines -> entries -> tree -> active path and branches.
//!
//! Each line is turned into a compact [`Entry`] as it streams past (its message already
//! converted, images already placeholders), so memory follows the text of the session, not
//! the size of the file. The tree is resolved once every line is read, because the active
//! leaf is only known at the end.
//!
//! The parser is lenient on purpose: every dialect's extras are accepted in every dialect
//! (an omp `model_change` shape in a pi file still names the model), because forks copy each
//! other's features and a reader that guesses wrong should still show the conversation.

use super::{id_from_name, peek_id, Dialect};
use crate::model::{
    self, Branch, Message, MessageKind, Role, Session, Source, TokenUsage, ToolCall, ToolResult,
};
use crate::names;
use crate::stores::jsonl::{self, Pos, Unparsed};
use crate::stores::kit::{self, str_field, Loose, Obj};
use crate::stores::{parse_time, Listed};
use chrono::{DateTime, Utc};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The newest format version sessfs knows (pi, omp, indusagi and OpenClaw all write 3).
const CURRENT_VERSION: u64 = 3;

/// Title fallback: this many characters of the first prompt.
const TITLE_CHARS: usize = 100;

/// Entry types that render no message. They are still tree nodes, so a path through them
/// stays connected.
const SILENT_TYPES: &[&str] = &[
    "thinking_level_change",
    "custom",
    "label",
    "session_info",
    "title_change",
    "model_usage",
    "service_tier_change",
    "reset_boundary",
    "archive",
    "ttsr_injection",
    "credential_pin",
    "session_init",
    "mode_change",
    "mcp_tool_selection",
    "model.fallback_step",
];

/// One tree node: a line of the file other than the header.
struct Entry {
    id: String,
    parent: Option<String>,
    /// False for OpenClaw `appendMode: "side"` entries, which never become the active leaf
    /// and so are not branch leaves either.
    anchor: bool,
    msg: Option<Message>,
    /// The model this entry switches to (`model_change`, OpenClaw `model-snapshot`).
    model: Option<String>,
}

/// Where the active leaf is, as the lines so far say.
enum Anchor {
    None,
    Entry(usize),
    /// A `leaf` navigation entry; `None` navigates to before the first entry.
    Target(Option<String>),
}

/// A compaction's first kept entry, before ids are resolved.
enum FirstKept {
    Id(String),
    /// v1: an index into the file's parsed lines, header included.
    Index(usize),
}

/// Header fields sessfs uses.
#[derive(Default)]
struct Header {
    id: Option<String>,
    version: Option<u64>,
    timestamp: Option<DateTime<Utc>>,
    cwd: Option<String>,
    title: Option<String>,
    parent_session: Option<String>,
    /// v1 headers carry the starting model.
    model: Option<String>,
}

/// Everything [`load_file`] learns; `kept` is exposed for tests of the v1 migration.
pub(super) struct Loaded {
    pub session: Session,
    /// `(compaction entry id, first kept entry id)` after migration.
    #[cfg_attr(not(test), allow(dead_code))]
    pub kept: Vec<(String, String)>,
}

/// One line, read in one pass with no `Value` tree (the header line alone is read as a
/// `Value`, once per file). Every field accepts any JSON type and reads as absent when it
/// has an unexpected one, as the former `Value` accessors did, so an odd field never costs
/// its entry.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    ty: Loose<'a>,
    #[serde(borrow)]
    timestamp: Loose<'a>,
    #[serde(borrow)]
    id: Loose<'a>,
    #[serde(borrow)]
    parent_id: Loose<'a>,
    #[serde(borrow)]
    target_id: Loose<'a>,
    #[serde(borrow)]
    append_mode: Loose<'a>,
    /// Present, whatever it holds: a non-object message still becomes one.
    #[serde(borrow, deserialize_with = "kit::present")]
    message: Option<Obj<Msg<'a>>>,
    /// Present, whatever it holds: a type-less line with a role is a bare message.
    #[serde(deserialize_with = "kit::present")]
    role: Option<IgnoredAny>,
    #[serde(borrow)]
    model_id: Loose<'a>,
    #[serde(borrow)]
    provider: Loose<'a>,
    #[serde(borrow)]
    model: Loose<'a>,
    #[serde(borrow)]
    summary: Loose<'a>,
    #[serde(borrow)]
    first_kept_entry_id: Loose<'a>,
    first_kept_entry_index: Loose<'a>,
    #[serde(borrow)]
    display: Loose<'a>,
    #[serde(borrow)]
    custom_type: Loose<'a>,
    #[serde(borrow)]
    content: Content<'a>,
    #[serde(borrow)]
    data: Obj<ModelRef<'a>>,
    #[serde(borrow)]
    label: Loose<'a>,
    /// `session_info` name; present but not a string clears the title.
    #[serde(borrow, deserialize_with = "kit::present")]
    name: Option<Loose<'a>>,
    /// `title` line and `title_change`; present but not a string clears the title.
    #[serde(borrow, deserialize_with = "kit::present")]
    title: Option<Loose<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ModelRef<'a> {
    #[serde(borrow)]
    model_id: Loose<'a>,
}

/// An AgentMessage (the `message` of an entry, or a bare old line).
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Msg<'a> {
    #[serde(borrow)]
    role: Loose<'a>,
    #[serde(borrow)]
    timestamp: Loose<'a>,
    #[serde(borrow)]
    content: Content<'a>,
    #[serde(borrow)]
    tool_call_id: Loose<'a>,
    #[serde(borrow)]
    tool_name: Loose<'a>,
    is_error: Loose<'a>,
    #[serde(borrow)]
    command: Loose<'a>,
    #[serde(borrow)]
    code: Loose<'a>,
    #[serde(borrow)]
    output: Loose<'a>,
    cancelled: Loose<'a>,
    exit_code: Loose<'a>,
    truncated: Loose<'a>,
    #[serde(borrow)]
    custom_type: Loose<'a>,
    #[serde(borrow)]
    display: Loose<'a>,
    #[serde(borrow)]
    summary: Loose<'a>,
    #[serde(borrow)]
    files: kit::Content<'a, FileRef<'a>>,
    #[serde(borrow)]
    stop_reason: Loose<'a>,
    #[serde(borrow)]
    error_message: Loose<'a>,
    #[serde(borrow)]
    model: Loose<'a>,
    #[serde(borrow)]
    usage: Obj<Usage<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Usage<'a> {
    #[serde(deserialize_with = "kit::count")]
    input: u64,
    #[serde(deserialize_with = "kit::count")]
    output: u64,
    #[serde(deserialize_with = "kit::count")]
    cache_read: u64,
    #[serde(deserialize_with = "kit::count")]
    cache_write: u64,
    #[serde(borrow)]
    cost: Obj<Cost<'a>>,
    #[serde(rename = "costUSD", borrow)]
    cost_usd: Loose<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Cost<'a> {
    #[serde(borrow)]
    total: Loose<'a>,
}

/// A content block; also an image reference of a file mention.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    ty: Loose<'a>,
    #[serde(borrow)]
    text: Loose<'a>,
    #[serde(borrow)]
    mime_type: Loose<'a>,
    #[serde(borrow)]
    media_type: Loose<'a>,
    #[serde(borrow)]
    data: Loose<'a>,
    #[serde(borrow)]
    thinking: Loose<'a>,
    #[serde(borrow)]
    thinking_signature: Loose<'a>,
    redacted: Loose<'a>,
    #[serde(borrow)]
    id: Loose<'a>,
    #[serde(borrow)]
    name: Loose<'a>,
    /// The call's arguments, kept as JSON for [`ToolCall::input`]; `arguments` wins.
    #[serde(deserialize_with = "kit::present")]
    arguments: Option<Value>,
    #[serde(deserialize_with = "kit::present")]
    input: Option<Value>,
}

/// One file of an omp `fileMention`.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct FileRef<'a> {
    #[serde(borrow)]
    path: Loose<'a>,
    #[serde(borrow)]
    skipped_reason: Loose<'a>,
    #[serde(borrow)]
    image: Obj<Block<'a>>,
    #[serde(borrow)]
    content: Loose<'a>,
}

type Content<'a> = kit::Content<'a, Block<'a>>;
type Item<'a> = kit::Item<'a, Block<'a>>;

pub(super) fn load(dialect: Dialect, listed: &Listed) -> Session {
    load_file(dialect, &listed.path, &listed.id).session
}

pub(super) fn load_file(dialect: Dialect, path: &Path, fallback_id: &str) -> Loaded {
    let mut l = Loader::new(dialect);
    let scanned = if kit::file_name(path).ends_with(".zst") {
        // OpenClaw may keep archived generations zstd-compressed.
        let name = path.display().to_string();
        match kit::open_file(path).and_then(zstd::stream::read::Decoder::new) {
            Ok(r) => jsonl::read_records_from(r, &name, &mut |pos, bytes| l.line(pos, bytes)),
            Err(e) => jsonl::Scanned {
                warnings: vec![format!("cannot open {name}: {e}")],
                unparsed: Vec::new(),
            },
        }
    } else {
        jsonl::read_records(path, |pos, bytes| l.line(pos, bytes))
    };
    l.finish(path, fallback_id, scanned)
}

/// A session whose lines are held elsewhere than in a file: OpenClaw's `transcript_events`
/// rows, each `(seq, one pi JSONL line)` in `seq` order. `path` is the database (the
/// session's source); `id` is the session's id there, which wins over a header's. Each
/// line goes through the same lenient reader as a file's lines (several values on a line,
/// bad bytes), so a row is worth exactly what the same line in a file would be.
pub(super) fn load_lines(
    dialect: Dialect,
    lines: &[(i64, String)],
    path: &Path,
    id: &str,
) -> Session {
    let mut l = Loader::new(dialect);
    l.header_optional = true;
    let mut all = jsonl::Scanned::default();
    for (seq, text) in lines {
        let n = usize::try_from(*seq).unwrap_or(0);
        let name = format!("event {seq}");
        // A row is one line; should it hold several records, each gets its own position.
        let mut part = 0;
        let mut scanned = jsonl::read_records_from(text.as_bytes(), &name, &mut |_, bytes| {
            let read = l.line(Pos { line: n, part }, bytes);
            if read.is_ok() {
                part += 1;
            }
            read
        });
        for u in &mut scanned.unparsed {
            u.line = n;
        }
        all.warnings.append(&mut scanned.warnings);
        all.unparsed.append(&mut scanned.unparsed);
    }
    let mut s = l.finish(path, id, all).session;
    if s.id != id {
        s.warnings.push(format!(
            "header id {} differs from the row's session id",
            s.id
        ));
        s.id = id.to_owned();
    }
    s
}

struct Loader {
    dialect: Dialect,
    header: Option<Header>,
    slot_title: Option<String>,
    /// Parsed lines so far, header included, title slot excluded (v1 compaction indexes).
    values: usize,
    /// For each parsed line, the entry it became.
    value_entry: Vec<Option<usize>>,
    entries: Vec<Entry>,
    by_id: HashMap<String, usize>,
    prev_id: Option<String>,
    anchor: Anchor,
    labels: HashMap<String, String>,
    session_name: Option<String>,
    first_kept: Vec<(usize, FirstKept)>,
    first_ts: Option<DateTime<Utc>>,
    last_ts: Option<DateTime<Utc>>,
    unknown_types: BTreeMap<String, usize>,
    unknown_roles: BTreeMap<String, usize>,
    missing_ids: usize,
    duplicate_ids: usize,
    extra_headers: usize,
    /// `message` entries with no `message` field.
    empty_messages: usize,
    /// Records read but not shown (unknown entry types, extra headers, message entries
    /// without a message): their text goes where unparsable lines' text goes.
    unshown: Vec<Unparsed>,
    /// The position of the record being read.
    pos: Pos,
    /// Lines from a database, where the header line is not always stored: its absence is
    /// no problem.
    header_optional: bool,
    warnings: Vec<String>,
}

impl Loader {
    fn new(dialect: Dialect) -> Loader {
        Loader {
            dialect,
            header: None,
            slot_title: None,
            values: 0,
            value_entry: Vec::new(),
            entries: Vec::new(),
            by_id: HashMap::new(),
            prev_id: None,
            anchor: Anchor::None,
            labels: HashMap::new(),
            session_name: None,
            first_kept: Vec::new(),
            first_ts: None,
            last_ts: None,
            unknown_types: BTreeMap::new(),
            unknown_roles: BTreeMap::new(),
            missing_ids: 0,
            duplicate_ids: 0,
            extra_headers: 0,
            empty_messages: 0,
            unshown: Vec::new(),
            pos: Pos::default(),
            header_optional: false,
            warnings: Vec::new(),
        }
    }

    fn version(&self) -> u64 {
        match &self.header {
            Some(h) => h.version.unwrap_or(1).min(CURRENT_VERSION),
            // No header: trust the entries' own ids where they have them.
            None => CURRENT_VERSION,
        }
    }

    /// Read one line; `Err` for a line that is not JSON. An array line is an entry with
    /// nothing in it, as a line of an unknown shape.
    fn line(&mut self, pos: Pos, bytes: &[u8]) -> Result<(), String> {
        let mut spare = String::new();
        let v: Line = jsonl::typed(bytes, &mut spare)?.unwrap_or_default();
        let ty = v.ty.str();
        let fresh = self.header.is_none() && self.entries.is_empty();
        match ty {
            Some("title") if fresh && self.slot_title.is_none() => {
                self.slot_title = v.title.as_ref().and_then(Loose::str).map(one_line);
                return Ok(());
            }
            Some("session") => {
                if fresh {
                    // Once per file: the header is read as a `Value`.
                    let h = serde_json::from_slice::<Value>(bytes)
                        .map_err(|e| format!("invalid JSON: {e}"))?;
                    self.header = Some(self.read_header(&h));
                } else {
                    self.extra_headers += 1;
                    self.unshown(pos, "extra session header, not read".to_owned(), bytes);
                }
                self.value_entry.push(None);
                self.values += 1;
                return Ok(());
            }
            _ => {}
        }
        let ts = v.timestamp.time();
        if let Some(t) = ts {
            self.first_ts.get_or_insert(t);
            self.last_ts = Some(t);
        }
        if ty == Some("leaf") {
            // Navigation, not content: moves the active leaf, is not a node itself.
            self.anchor = Anchor::Target(v.target_id.str().map(str::to_owned));
            self.value_entry.push(None);
            self.values += 1;
            return Ok(());
        }

        let own_id = v.id.str().filter(|s| !s.is_empty());
        let (id, parent) = match own_id {
            Some(id) if self.version() >= 2 || self.header.is_none() => {
                (id.to_owned(), v.parent_id.str().map(str::to_owned))
            }
            _ => {
                // v1 (or an entry that lost its id): a linear chain with ids from
                // positions, so the same bytes always give the same ids, and two records
                // glued onto one line get two ids and stay in file order.
                if self.version() >= 2 {
                    self.missing_ids += 1;
                }
                (pos.id(), self.prev_id.clone())
            }
        };
        let anchor = v.append_mode.str() != Some("side");
        let mut entry = Entry {
            id: id.clone(),
            parent,
            anchor,
            msg: None,
            model: None,
        };
        let index = self.entries.len();
        let ty = ty.map(str::to_owned);
        self.pos = pos;
        self.body(v, bytes, ty.as_deref(), ts, &mut entry, index);

        if self.by_id.insert(id.clone(), index).is_some() {
            self.duplicate_ids += 1;
        }
        self.value_entry.push(Some(index));
        self.values += 1;
        self.prev_id = Some(id);
        if anchor {
            self.anchor = Anchor::Entry(index);
        }
        self.entries.push(entry);
        Ok(())
    }

    fn read_header(&mut self, v: &Value) -> Header {
        let version = match v.get("version") {
            None | Some(Value::Null) => None,
            Some(x) => match x
                .as_u64()
                .or_else(|| x.as_str().and_then(|s| s.parse().ok()))
            {
                Some(n) => Some(n),
                None => {
                    self.warnings
                        .push(format!("unrecognised version {x}; parsed as version 3"));
                    Some(CURRENT_VERSION)
                }
            },
        };
        if let Some(n) = version.filter(|&n| n > CURRENT_VERSION) {
            self.warnings.push(format!(
                "unknown future version {n}; parsed as version {CURRENT_VERSION}"
            ));
        }
        Header {
            id: str_field(v, "id")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            version,
            timestamp: v.get("timestamp").and_then(parse_time),
            cwd: str_field(v, "cwd").map(str::to_owned),
            title: str_field(v, "title")
                .map(one_line)
                .filter(|s| !s.is_empty()),
            parent_session: str_field(v, "parentSession")
                .or_else(|| str_field(v, "branchedFrom"))
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            model: str_field(v, "modelId").map(str::to_owned),
        }
    }

    /// Fill in what an entry of type `ty` contributes.
    fn body(
        &mut self,
        v: Line<'_>,
        bytes: &[u8],
        ty: Option<&str>,
        ts: Option<DateTime<Utc>>,
        e: &mut Entry,
        index: usize,
    ) {
        match ty {
            Some("message") => match v.message {
                Some(m) => e.msg = self.message(m.0.unwrap_or_default(), ts, &e.id),
                None => {
                    self.empty_messages += 1;
                    self.unshown(self.pos, "message entry without a message".into(), bytes);
                }
            },
            // Very old Clawdbot transcripts: bare `{role, content, timestamp}` lines.
            None if v.role.is_some() => {
                let mut spare = String::new();
                let m = jsonl::typed::<Msg>(bytes, &mut spare)
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                e.msg = self.message(m, ts, &e.id);
            }
            Some("model_change") => {
                let (shown, model) = model_change(&v);
                if let Some(shown) = shown {
                    e.msg = Some(Message {
                        role: Role::System,
                        kind: MessageKind::Event,
                        content: format!("Model changed to {shown}"),
                        timestamp: ts,
                        native_id: Some(e.id.clone()),
                        ..Message::default()
                    });
                }
                e.model = model;
            }
            Some("compaction") => {
                e.msg = Some(summary_message(
                    &v.summary,
                    MessageKind::CompactionSummary,
                    ts,
                    &e.id,
                ));
                if let Some(k) = v.first_kept_entry_id.str() {
                    self.first_kept.push((index, FirstKept::Id(k.to_owned())));
                } else if let Loose::U64(i) = v.first_kept_entry_index {
                    self.first_kept.push((
                        index,
                        FirstKept::Index(usize::try_from(i).unwrap_or(usize::MAX)),
                    ));
                }
            }
            Some("branch_summary") => {
                e.msg = Some(summary_message(
                    &v.summary,
                    MessageKind::BranchSummary,
                    ts,
                    &e.id,
                ));
            }
            Some("custom_message") => {
                if displayed(&v.display) {
                    // An extension's message for the model: injected, never typed.
                    e.msg = Some(Message {
                        role: Role::System,
                        kind: MessageKind::Context,
                        label: Some(custom_label(&v.custom_type, "extension message")),
                        content: content_text(v.content, "\n\n"),
                        timestamp: ts,
                        native_id: Some(e.id.clone()),
                        ..Message::default()
                    });
                }
            }
            Some("custom") => {
                if v.custom_type.str() == Some("model-snapshot") {
                    e.model = v
                        .data
                        .0
                        .as_ref()
                        .and_then(|d| d.model_id.str())
                        .map(str::to_owned);
                }
            }
            Some("label") => {
                if let Some(target) = v.target_id.str() {
                    match v.label.str().map(str::trim).filter(|s| !s.is_empty()) {
                        Some(label) => {
                            self.labels.insert(target.to_owned(), label.to_owned());
                        }
                        None => {
                            self.labels.remove(target);
                        }
                    }
                }
            }
            Some("session_info") | Some("title_change") => {
                let name = if ty == Some("session_info") {
                    v.name
                } else {
                    v.title
                };
                if let Some(name) = name {
                    // An empty or null name clears the title.
                    self.session_name = name.str().map(one_line).filter(|s| !s.is_empty());
                }
            }
            Some(t) if SILENT_TYPES.contains(&t) => {}
            other => {
                let t = other.unwrap_or("(none)");
                *self.unknown_types.entry(t.to_owned()).or_default() += 1;
                self.unshown(self.pos, format!("unknown entry type \"{t}\""), bytes);
            }
        }
    }

    /// Keep the text of a record that renders nothing although it may hold something.
    fn unshown(&mut self, pos: Pos, reason: String, bytes: &[u8]) {
        self.unshown.push(Unparsed {
            line: pos.line,
            reason,
            text: String::from_utf8_lossy(bytes).into_owned(),
        });
    }

    /// Convert one AgentMessage. `None` for messages that are hidden by design.
    fn message(
        &mut self,
        m: Msg<'_>,
        entry_ts: Option<DateTime<Utc>>,
        id: &str,
    ) -> Option<Message> {
        let role = m.role.str().unwrap_or("");
        let mut msg = Message {
            timestamp: m.timestamp.time().or(entry_ts),
            native_id: Some(id.to_owned()),
            ..Message::default()
        };
        match role {
            "user" => {
                msg.role = Role::User;
                msg.content = content_text(m.content, "\n\n");
            }
            "assistant" => assistant(m, &mut msg),
            "toolResult" | "tool_result" | "tool" => {
                let mut output = content_text(m.content, "\n");
                let tool_name = m.tool_name.str().unwrap_or("").to_owned();
                let mut is_error = m.is_error.is_true();
                if self.dialect == Dialect::Openclaw {
                    if let Some((text, thrown)) = super::openclaw::payload(&tool_name, &output) {
                        output = text;
                        is_error |= thrown;
                    }
                }
                msg.role = Role::Tool;
                msg.tool_result = Some(ToolResult {
                    tool_call_id: m.tool_call_id.str().unwrap_or("").to_owned(),
                    tool_name,
                    // The text lives once, in the result (`Message::text` returns it).
                    output,
                    is_error,
                });
            }
            "bashExecution" => execution(&mut msg, "bash", "command", &m.command, &m),
            "pythonExecution" => execution(&mut msg, "python", "code", &m.code, &m),
            "custom" | "hookMessage" => {
                if !displayed(&m.display) {
                    return None;
                }
                msg.role = Role::System;
                msg.kind = MessageKind::Context;
                let fallback = if role == "custom" {
                    "extension message"
                } else {
                    "hook message"
                };
                msg.label = Some(custom_label(&m.custom_type, fallback));
                msg.content = content_text(m.content, "\n\n");
            }
            "branchSummary" => {
                msg.role = Role::System;
                msg.kind = MessageKind::BranchSummary;
                msg.content = m.summary.str().unwrap_or("").to_owned();
            }
            "compactionSummary" => {
                msg.role = Role::System;
                msg.kind = MessageKind::CompactionSummary;
                msg.content = m.summary.str().unwrap_or("").to_owned();
            }
            "developer" | "system" => {
                msg.role = Role::System;
                msg.kind = MessageKind::Context;
                msg.label = Some(format!("{role} message"));
                msg.content = content_text(m.content, "\n\n");
            }
            "fileMention" => {
                msg.role = Role::System;
                msg.kind = MessageKind::Context;
                msg.label = Some("file mention".to_owned());
                msg.content = file_mentions(m.files);
            }
            other => {
                *self.unknown_roles.entry(other.to_owned()).or_default() += 1;
                msg.role = Role::System;
                msg.content = content_text(m.content, "\n\n");
            }
        }
        Some(msg)
    }

    fn finish(mut self, path: &Path, fallback_id: &str, scanned: jsonl::Scanned) -> Loaded {
        let agent = self.dialect.agent();
        let header = self.header.take();
        let mut warnings = std::mem::take(&mut self.warnings);
        warnings.extend(scanned.warnings);
        // Every line not (wholly) shown, unparsable or unknown, in file order.
        let mut unparsed = scanned.unparsed;
        unparsed.append(&mut self.unshown);
        unparsed.sort_by_key(|u| u.line);
        if header.is_none() && (!self.header_optional || self.entries.is_empty()) {
            warnings.push(if self.entries.is_empty() {
                "no session header and no entries: empty or unreadable file".to_owned()
            } else {
                "no session header; id taken from the file name".to_owned()
            });
        }
        if self.extra_headers > 0 {
            warnings.push(format!(
                "{} extra session header line(s) ignored",
                self.extra_headers
            ));
        }
        if self.missing_ids > 0 {
            warnings.push(format!(
                "{} entries without an id were chained to the line before them",
                self.missing_ids
            ));
        }
        if self.duplicate_ids > 0 {
            warnings.push(format!(
                "{} duplicate entry ids; the later entry wins",
                self.duplicate_ids
            ));
        }
        if self.empty_messages > 0 {
            warnings.push(format!(
                "{} message entries without a message skipped",
                self.empty_messages
            ));
        }
        for (t, n) in &self.unknown_types {
            warnings.push(format!("unknown entry type \"{t}\" skipped ({n} entries)"));
        }
        for (r, n) in &self.unknown_roles {
            warnings.push(format!(
                "unknown message role \"{r}\" shown as system text ({n} messages)"
            ));
        }

        // Resolve the tree.
        let n = self.entries.len();
        let mut parent_idx: Vec<Option<usize>> = Vec::with_capacity(n);
        let mut orphans = 0usize;
        for e in &self.entries {
            let p = e.parent.as_ref().and_then(|p| self.by_id.get(p).copied());
            if e.parent.is_some() && p.is_none() {
                orphans += 1;
            }
            parent_idx.push(p);
        }
        if orphans > 0 {
            warnings.push(format!(
                "{orphans} entries point to a missing parent; treated as roots"
            ));
        }
        // Side entries hang off the tree without continuing it: they do not make their
        // parent an inner node.
        let mut has_child = vec![false; n];
        for (e, p) in self.entries.iter().zip(&parent_idx) {
            if let (true, Some(p)) = (e.anchor, p) {
                has_child[*p] = true;
            }
        }
        let mut cycle = false;

        let leaf = match &self.anchor {
            Anchor::None => None,
            Anchor::Entry(i) => Some(*i),
            Anchor::Target(None) => None,
            Anchor::Target(Some(t)) => match self.by_id.get(t) {
                Some(i) => Some(*i),
                None => {
                    warnings.push(format!(
                        "leaf entry points to missing entry {t}; using the last entry"
                    ));
                    self.entries.iter().rposition(|e| e.anchor)
                }
            },
        };
        let active_path = match leaf {
            Some(i) => path_to(i, &parent_idx, &mut cycle),
            None => Vec::new(),
        };
        let mut on_active = vec![false; n];
        for &i in &active_path {
            on_active[i] = true;
        }

        let initial_model = header.as_ref().and_then(|h| h.model.clone());

        // Branches: every other leaf, in file order.
        let mut branches = Vec::new();
        let mut used: HashSet<String> = HashSet::new();
        for i in 0..n {
            if has_child[i] || on_active[i] || !self.entries[i].anchor {
                continue;
            }
            let path = path_to(i, &parent_idx, &mut cycle);
            let fork = path.iter().rposition(|&j| on_active[j]);
            let own = &path[fork.map_or(0, |f| f + 1)..];
            let label = own
                .iter()
                .rev()
                .find_map(|&j| self.labels.get(&self.entries[j].id));
            let base = match label {
                Some(l) => names::escape(l),
                None => names::escape(&format!("branch-{}", self.entries[i].id)),
            };
            let name = kit::unique_name(&mut used, &base);
            branches.push(Branch {
                name,
                fork_point: fork.map(|f| self.entries[path[f]].id.clone()),
                leaf: Some(self.entries[i].id.clone()),
                messages: self.render(&path, initial_model.clone()),
            });
        }
        if cycle {
            warnings.push("the entry tree has a parent cycle; it was cut".to_owned());
        }
        // Last, so the active path's messages move out of the entries instead of being
        // copied: a long session is held once.
        let messages = self.take_path(&active_path, initial_model.clone());

        // Compactions: check (and, for v1, derive) the first kept entry.
        let mut kept = Vec::new();
        for (ci, fk) in &self.first_kept {
            let cid = self.entries[*ci].id.clone();
            let target = match fk {
                FirstKept::Id(id) => self.by_id.contains_key(id).then(|| id.clone()),
                FirstKept::Index(i) => self
                    .value_entry
                    .get(*i)
                    .copied()
                    .flatten()
                    .map(|j| self.entries[j].id.clone()),
            };
            match target {
                Some(t) => kept.push((cid, t)),
                None => warnings.push(format!(
                    "compaction {cid}: its first kept entry is not in the file"
                )),
            }
        }

        let format_version = header.as_ref().map(|h| h.version.unwrap_or(1).to_string());
        let h = header.unwrap_or_default();
        let id = h.id.clone().unwrap_or_else(|| fallback_id.to_owned());
        let mut s = Session::new(agent, id);
        s.title = self
            .slot_title
            .take()
            .filter(|t| !t.is_empty())
            .or(h.title.clone())
            .or(self.session_name.take())
            .or_else(|| first_prompt(&messages));
        s.created_at = h.timestamp.or(self.first_ts);
        s.updated_at = self.last_ts.or(s.created_at);
        s.cwd = h.cwd.clone();
        s.forked_from = h
            .parent_session
            .as_deref()
            .and_then(|p| resolve_parent(p, path))
            .map(|id| model::unified_id(agent, &id));
        s.messages = messages;
        s.branches = branches;
        s.source = Source {
            paths: vec![path.to_path_buf()],
            format: self.dialect.format().to_owned(),
            format_version,
        };
        if let Some(file) = jsonl::unparsed_file(&unparsed) {
            warnings.push(jsonl::unparsed_warning(unparsed.len()));
            s.extra_files.push(file);
        }
        s.warnings = warnings;
        Loaded { session: s, kept }
    }

    /// As [`Loader::render`], moving the messages out of the entries.
    fn take_path(&mut self, path: &[usize], mut model: Option<String>) -> Vec<Message> {
        let mut out = Vec::with_capacity(path.len());
        for &i in path {
            let e = &mut self.entries[i];
            if let Some(m) = &e.model {
                model = Some(m.clone());
            }
            if let Some(mut msg) = e.msg.take() {
                if msg.role == Role::Assistant && msg.model.is_none() {
                    msg.model = model.clone();
                }
                out.push(msg);
            }
        }
        out
    }

    /// Messages of the entries on `path`, root first. Assistant messages without their own
    /// model take the model in force at that point of the path.
    fn render(&self, path: &[usize], mut model: Option<String>) -> Vec<Message> {
        let mut out = Vec::new();
        for &i in path {
            let e = &self.entries[i];
            if let Some(m) = &e.model {
                model = Some(m.clone());
            }
            if let Some(msg) = &e.msg {
                let mut msg = msg.clone();
                if msg.role == Role::Assistant && msg.model.is_none() {
                    msg.model = model.clone();
                }
                out.push(msg);
            }
        }
        out
    }
}

/// Indexes from the root to `leaf`. A parent cycle (possible only in a corrupt file) is cut
/// where it closes and reported through `cycle`.
fn path_to(leaf: usize, parent: &[Option<usize>], cycle: &mut bool) -> Vec<usize> {
    let mut out = vec![leaf];
    let mut seen: HashSet<usize> = [leaf].into_iter().collect();
    let mut cur = leaf;
    while let Some(p) = parent.get(cur).copied().flatten() {
        if !seen.insert(p) {
            *cycle = true;
            break;
        }
        out.push(p);
        cur = p;
    }
    out.reverse();
    out
}

/// Whitespace collapsed to single spaces.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The title fallback: the first user prompt, on one line.
fn first_prompt(messages: &[Message]) -> Option<String> {
    let mut prompts = messages
        .iter()
        .filter(|m| m.role == Role::User && m.kind == MessageKind::Normal)
        .map(|m| one_line(prompt_text(&m.content)))
        .filter(|t| !t.is_empty());
    // A bare `/mode` typed as a prompt names nothing; the first real prompt does. Prompts
    // after that one are never looked at.
    let bare_command = |t: &String| t.starts_with('/') && !t.contains(char::is_whitespace);
    let first = prompts.next()?;
    let title = if bare_command(&first) {
        prompts.find(|t| !bare_command(t)).unwrap_or(first)
    } else {
        first
    };
    Some(title.chars().take(TITLE_CHARS).collect())
}

/// A prompt without the envelope OpenClaw wraps around chat input (a "Sender (untrusted
/// metadata)" JSON block, then a `[Sun 2026-03-08 22:03 GMT+9]` stamp), so titles show what
/// the user typed. Message content keeps the envelope.
fn prompt_text(s: &str) -> &str {
    let mut t = s.trim_start();
    if let Some(rest) = t.strip_prefix("Sender (untrusted metadata):") {
        // Skip the fenced JSON block: the text after its closing fence.
        let mut fences = rest.match_indices("```");
        if let (Some(_), Some((close, _))) = (fences.next(), fences.next()) {
            t = rest[close + 3..].trim_start();
        }
    }
    if let Some(rest) = t.strip_prefix('[') {
        if let Some(end) = rest.find(']').filter(|&e| e <= 40) {
            let stamp = &rest[..end];
            if stamp.contains(':') && stamp.chars().any(|c| c.is_ascii_digit()) {
                t = rest[end + 1..].trim_start();
            }
        }
    }
    t
}

/// The context label of a custom message: its `customType`, else `fallback`.
fn custom_label(custom_type: &Loose<'_>, fallback: &str) -> String {
    custom_type
        .str()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .unwrap_or(fallback)
        .to_owned()
}

/// `display` of a custom message: missing means shown, `false` or an empty string hidden.
fn displayed(display: &Loose<'_>) -> bool {
    match display {
        Loose::Bool(b) => *b,
        Loose::Str(s) => !s.is_empty(),
        _ => true,
    }
}

/// `(shown name, model id)` of a `model_change`: pi `provider`+`modelId`, omp
/// `model: "provider/modelId"` (the model id may itself contain `/`).
fn model_change(v: &Line<'_>) -> (Option<String>, Option<String>) {
    if let Some(id) = v.model_id.str() {
        let shown = match v.provider.str() {
            Some(p) if !p.is_empty() => format!("{p}/{id}"),
            _ => id.to_owned(),
        };
        return (Some(shown), Some(id.to_owned()));
    }
    if let Some(m) = v.model.str() {
        let id = m.split_once('/').map_or(m, |(_, id)| id);
        return (Some(m.to_owned()), Some(id.to_owned()));
    }
    (None, None)
}

fn summary_message(
    summary: &Loose<'_>,
    kind: MessageKind,
    ts: Option<DateTime<Utc>>,
    id: &str,
) -> Message {
    Message {
        role: Role::System,
        kind,
        content: summary.str().unwrap_or("").to_owned(),
        timestamp: ts,
        native_id: Some(id.to_owned()),
        ..Message::default()
    }
}

/// Text of a `string | (text | image | …)[]` content, blocks joined by `sep`. Images become
/// placeholders; other non-text blocks are named.
fn content_text(content: Content<'_>, sep: &str) -> String {
    match content {
        kit::Content::Text(s) => s.into_owned(),
        kit::Content::Blocks(items) => {
            let parts: Vec<Cow<'_, str>> = items.into_iter().filter_map(item_text).collect();
            parts.join(sep)
        }
        _ => String::new(),
    }
}

/// The text of one element of a content list: a string as it is, a block by its type.
fn item_text(item: Item<'_>) -> Option<Cow<'_, str>> {
    match item {
        kit::Item::Text(s) => Some(s),
        kit::Item::Block(b) => block_text(*b),
        kit::Item::Other => None,
    }
}

fn block_text(b: Block<'_>) -> Option<Cow<'_, str>> {
    match b.ty.str() {
        Some("text") => match b.text {
            Loose::Str(t) => Some(t),
            _ => None,
        },
        Some("image") => Some(Cow::Owned(image_placeholder(&b))),
        Some(t) => Some(Cow::Owned(format!("[{t}]"))),
        None => None,
    }
}

/// `[image: image/png, 12.3 KB]` for inline base64, `[image: blob sha256:<12 hex>]` for an omp
/// blob reference (blobs are not read).
fn image_placeholder(b: &Block<'_>) -> String {
    let mime = b.mime_type.str().or_else(|| b.media_type.str());
    match b.data.str() {
        Some(d) if d.starts_with("blob:sha256:") => {
            let hex: String = d["blob:sha256:".len()..].chars().take(12).collect();
            format!("[image: blob sha256:{hex}]")
        }
        d => kit::base64_placeholder("image", mime, d),
    }
}

fn assistant(m: Msg<'_>, msg: &mut Message) {
    msg.role = Role::Assistant;
    let mut texts: Vec<Cow<'_, str>> = Vec::new();
    let mut thinking: Vec<Cow<'_, str>> = Vec::new();
    match m.content {
        kit::Content::Blocks(items) => {
            for item in items {
                let b = match item {
                    kit::Item::Block(b) => *b,
                    other => {
                        texts.extend(item_text(other));
                        continue;
                    }
                };
                match b.ty.str() {
                    Some("text") => {
                        if let Loose::Str(t) = b.text {
                            if !t.is_empty() {
                                texts.push(t);
                            }
                        }
                    }
                    Some(ty @ ("thinking" | "redacted_thinking" | "redactedThinking")) => {
                        // Reasoning kept only as a signature (or marked redacted) is sealed;
                        // an empty block without either carries nothing and is dropped.
                        let sealed = b.thinking_signature.str().is_some_and(|s| !s.is_empty())
                            || b.redacted.is_true()
                            || ty != "thinking";
                        let last_sealed =
                            thinking.last().map(|t| t.as_ref()) == Some(model::SEALED_THINKING);
                        match b.thinking {
                            Loose::Str(t) if !t.trim().is_empty() => thinking.push(t),
                            _ if sealed && !last_sealed => {
                                thinking.push(Cow::Borrowed(model::SEALED_THINKING))
                            }
                            _ => {}
                        }
                    }
                    Some("toolCall") | Some("tool_use") => msg.tool_calls.push(ToolCall {
                        tool_call_id: b.id.str().unwrap_or("").to_owned(),
                        tool_name: b.name.str().unwrap_or("").to_owned(),
                        input: b
                            .arguments
                            .or(b.input)
                            .unwrap_or(Value::Object(Default::default())),
                        ..ToolCall::default()
                    }),
                    _ => texts.extend(block_text(b)),
                }
            }
        }
        kit::Content::Text(s) => texts.push(s),
        _ => {}
    }
    let stop = m.stop_reason.str();
    match (stop, m.error_message.str().filter(|e| !e.is_empty())) {
        (Some("aborted"), Some(e)) => texts.push(Cow::Owned(format!("[aborted: {e}]"))),
        (Some("aborted"), None) => texts.push(Cow::Borrowed("[aborted]")),
        (_, Some(e)) => texts.push(Cow::Owned(format!("[error: {e}]"))),
        (Some("error"), None) => texts.push(Cow::Borrowed("[error]")),
        _ => {}
    }
    msg.content = texts.join("\n\n");
    if !thinking.is_empty() {
        msg.thinking = Some(thinking.join("\n\n"));
    }
    msg.model = m.model.nonempty();
    // OpenClaw's gateway writes its own error notices as assistant messages of the pseudo
    // model `gateway-injected`: the system speaks there, not a model.
    if msg.model.as_deref() == Some("gateway-injected") {
        msg.role = Role::System;
        msg.kind = MessageKind::Event;
        msg.model = None;
    }
    if let Some(u) = m.usage.0 {
        let usage = TokenUsage {
            input_tokens: u.input,
            output_tokens: u.output,
            cached_tokens: u.cache_read,
            cache_write_tokens: u.cache_write,
            ..TokenUsage::default()
        };
        if !usage.is_zero() {
            msg.token_usage = Some(usage);
        }
        msg.cost = u
            .cost
            .0
            .and_then(|c| c.total.f64())
            .or_else(|| u.cost_usd.f64());
    }
}

/// A command the user ran directly (`bashExecution`, omp `pythonExecution`): the command is
/// the message text and one call holds the output, with how it ended when that is not a
/// plain success. The record holds command and output together, so the call's `output` is
/// set here (the renderers show it as Command / Output blocks with a tool file).
fn execution(msg: &mut Message, tool: &str, key: &str, code: &Loose<'_>, m: &Msg<'_>) {
    let code = code.str().unwrap_or("");
    let mut output = m
        .output
        .str()
        .unwrap_or("")
        .trim_end_matches('\n')
        .to_owned();
    let mut note = |s: &str| {
        if !output.is_empty() {
            output.push('\n');
        }
        output.push_str(s);
    };
    let cancelled = m.cancelled.is_true();
    let failed = m.exit_code.i64().filter(|c| *c != 0);
    if cancelled {
        note("[cancelled]");
    } else if let Some(code) = failed {
        note(&format!("[exit code {code}]"));
    }
    if m.truncated.is_true() {
        note("[output truncated]");
    }
    msg.role = Role::User;
    msg.kind = MessageKind::Execution;
    msg.content = code.to_owned();
    msg.tool_calls = vec![ToolCall {
        tool_call_id: String::new(),
        tool_name: tool.to_owned(),
        input: serde_json::json!({ key: code }),
        output: Some(output),
        is_error: Some(cancelled || failed.is_some()),
        duration_ms: None,
    }];
}

/// omp `fileMention`: the files auto-read into the prompt.
fn file_mentions(files: kit::Content<'_, FileRef<'_>>) -> String {
    let kit::Content::Blocks(files) = files else {
        return String::new();
    };
    let mut parts = Vec::new();
    for f in files {
        // A list element that is no object names no path.
        let f = match f {
            kit::Item::Block(f) => *f,
            _ => FileRef::default(),
        };
        let path = f.path.str().unwrap_or("?");
        let mut s = format!("[file: {path}]");
        if let Some(r) = f.skipped_reason.str() {
            s.push_str(&format!(" (skipped: {r})"));
        }
        if let Some(img) = &f.image.0 {
            s.push('\n');
            s.push_str(&image_placeholder(img));
        }
        if let Some(c) = f.content.str().filter(|c| !c.is_empty()) {
            s.push('\n');
            s.push_str(c);
        }
        parts.push(s);
    }
    parts.join("\n\n")
}

/// The native id of a parent session named by `parentSession`/`branchedFrom`: a path (read
/// that file's header id when it exists, else take the id from its file name) or an id.
fn resolve_parent(raw: &str, this_file: &Path) -> Option<String> {
    let raw = raw.trim();
    let looks_like_path = raw.contains('/') || raw.contains('\\') || raw.ends_with(".jsonl");
    if !looks_like_path {
        return (!raw.is_empty()).then(|| raw.to_owned());
    }
    let mut p = PathBuf::from(raw);
    if p.is_relative() {
        if let Some(dir) = this_file.parent() {
            p = dir.join(p);
        }
    }
    if p.is_file() && p != this_file {
        if let Some(id) = peek_id(&p) {
            return Some(id);
        }
    }
    let id = id_from_name(raw);
    (!id.is_empty()).then_some(id)
}
