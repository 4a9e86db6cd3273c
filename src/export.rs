//! `sessfs export --format parquet <dir>`: every session as four Parquet tables (`sessions`,
//! `messages`, `tool_calls`, `usage`) that DuckDB, ClickHouse, Trino or Spark read, so a team
//! can pool the exports of many machines in shared storage without a server of ours.
//!
//! Layout and guarantees (docs/EXPORT.md has the schema):
//!
//! - Hive-style partitions by agent and by the month a session started:
//!   `<dir>/<table>/agent=<agent>/month=<YYYY-MM>/part-<machine>.parquet`. A partition holds
//!   whole sessions, so a session's rows of all four tables are in the partitions of one
//!   (agent, month), and a changed session rewrites only those. The file is named after the
//!   machine, so exports of many machines copied into one tree never overwrite each other.
//! - Usage rows are [`crate::cost::Collector`]'s records, so they add up to exactly what
//!   `sessfs cost` prints; a subagent's replies are in its top-level parent's rows.
//! - Incremental: the manifest `<dir>/_sessfs-manifest-<machine>.json` records each
//!   partition's sessions with their source versions and a digest of its usage rows. A re-run
//!   rewrites the partitions whose sessions changed, appeared or vanished (or whose usage
//!   moved, e.g. a reply now counted in an older session), and leaves every other file alone.
//! - Atomic as a whole: every file is first written under a temporary name (`.<name>.tmp`,
//!   which readers skip) beside its final name; only when all are written are they renamed
//!   into place, the manifest last. A failed or interrupted export leaves the previous files
//!   and manifest as they were.
//!
//! The Parquet files are written with the `parquet` crate's low-level column writers (no
//! Arrow): four flat tables of strings, integers, doubles, booleans, timestamps and string
//! lists need nothing more, and the crate without Arrow builds in a fraction of the time.

use crate::cache::SessionKey;
use crate::cost::{Collector, Record};
use crate::model::{Agent, Message, Session};
use crate::tree::Fs;
use chrono::{DateTime, Utc};
use md5::{Digest, Md5};
use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bumped when a column changes: an export made by another layout is rewritten whole.
const LAYOUT: u32 = 1;
/// Rows of one table buffered before they are written as a row group, by text size: bounds
/// the memory an export needs to about this much per table, however large a partition is.
const ROW_GROUP_BYTES: usize = 32 << 20;
/// Text of changed sessions' rows kept from pass 1 for pass 2, at most: past it, a session
/// is read again when its partition is written.
const ROWS_KEPT_BYTES: usize = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write Parquet file {path}: {source}")]
    Parquet {
        path: PathBuf,
        source: parquet::errors::ParquetError,
    },
    #[error("{path} is not a sessfs export manifest ({source}); export into a new directory or remove it")]
    Manifest {
        path: PathBuf,
        source: serde_json::Error,
    },
}

type Result<T> = std::result::Result<T, Error>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What to export.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only these agents' sessions (all when empty).
    pub agents: Vec<Agent>,
    /// Sessions last active from then on, as `sessfs list --since` selects them.
    pub since: Option<DateTime<Utc>>,
    /// Sessions last active up to then.
    pub until: Option<DateTime<Utc>>,
}

/// What an export did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub sessions: usize,
    pub partitions: usize,
    /// Partitions whose files were written (all four, or only `usage`).
    pub rewritten: usize,
    /// Partitions whose sessions are all gone, whose files were removed.
    pub removed: usize,
}

/// The machine an export comes from: what lets exports of many machines be pooled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// 16 hex digits, stable across runs: a digest of `/etc/machine-id` (never the id
    /// itself), else a random id kept in sessfs' cache directory.
    pub id: String,
    pub hostname: String,
    /// The login name of whoever ran the export: the "developer" of a team's queries.
    pub user: String,
}

impl Machine {
    pub fn here() -> Machine {
        Machine {
            id: machine_id(),
            hostname: hostname(),
            user: std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(login_name),
        }
    }
}

fn machine_id() -> String {
    for p in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
        if let Ok(s) = std::fs::read_to_string(p) {
            let s = s.trim();
            if !s.is_empty() {
                // Hashed with sessfs' own key, as machine-id(5) asks of applications.
                return hex(&Md5::digest(format!("sessfs export\n{s}").as_bytes())[..8]);
            }
        }
    }
    let kept = crate::search::default_path()
        .ok()
        .and_then(|p| Some(p.parent()?.join("machine-id")));
    if let Some(path) = &kept {
        if let Ok(s) = std::fs::read_to_string(path) {
            let s = s.trim();
            if s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
                return s.to_string();
            }
        }
    }
    let mut bytes = [0u8; 8];
    let random = File::open("/dev/urandom").and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut bytes)
    });
    let id = match random {
        Ok(()) => hex(&bytes),
        Err(_) => hex(&Md5::digest(hostname().as_bytes())[..8]),
    };
    if let Some(path) = &kept {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(path, format!("{id}\n"));
    }
    id
}

/// The login name of the user running sessfs, from the password database; `uid-<n>` where
/// it has none.
fn login_name() -> String {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut buf = vec![0u8; 4096];
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill in.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, and the buffer's length is passed with it.
    let rc =
        unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found) };
    if rc == 0 && !found.is_null() && !pw.pw_name.is_null() {
        // SAFETY: getpwuid_r succeeded, so pw_name points at a NUL-terminated string in buf.
        let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) };
        return name.to_string_lossy().into_owned();
    }
    format!("uid-{uid}")
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length, which is passed with it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ----- tables -----------------------------------------------------------------------------

/// One column's values; `None` is SQL NULL.
enum Values {
    Str(Vec<Option<String>>),
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    /// Microseconds since the epoch, UTC.
    Time(Vec<Option<i64>>),
    /// A list of strings, never NULL (empty instead).
    List(Vec<Vec<String>>),
}

struct Column {
    name: &'static str,
    required: bool,
    values: Values,
}

fn col(name: &'static str, values: Values) -> Column {
    Column {
        name,
        required: false,
        values,
    }
}

fn req(name: &'static str, values: Values) -> Column {
    Column {
        name,
        required: true,
        values,
    }
}

fn micros(t: Option<DateTime<Utc>>) -> Option<i64> {
    t.map(|t| t.timestamp_micros())
}

fn some<T: Clone>(v: &T) -> Option<T> {
    Some(v.clone())
}

/// A table's row: its columns, in schema order, from a batch of rows.
trait Row: Sized {
    const TABLE: &'static str;
    fn columns(rows: &[Self]) -> Vec<Column>;
    /// About how many bytes the row holds, for [`ROW_GROUP_BYTES`].
    fn weight(&self) -> usize;
}

fn schema_of<R: Row>() -> String {
    let mut s = format!("message {} {{\n", R::TABLE);
    for c in R::columns(&[]) {
        let rep = if c.required { "required" } else { "optional" };
        let line = match c.values {
            Values::Str(_) => format!("{rep} binary {} (STRING);", c.name),
            Values::Int(_) => format!("{rep} int64 {};", c.name),
            Values::Float(_) => format!("{rep} double {};", c.name),
            Values::Bool(_) => format!("{rep} boolean {};", c.name),
            Values::Time(_) => format!("{rep} int64 {} (TIMESTAMP(MICROS,true));", c.name),
            Values::List(_) => format!(
                "required group {} (LIST) {{ repeated group list {{ required binary element (STRING); }} }}",
                c.name
            ),
        };
        s.push_str("  ");
        s.push_str(&line);
        s.push('\n');
    }
    s.push('}');
    s
}

struct SessionRow {
    machine: Arc<Machine>,
    session: String,
    native_id: String,
    name: String,
    title: Option<String>,
    started_at: Option<DateTime<Utc>>,
    ended_at: Option<DateTime<Utc>>,
    cwd: Option<String>,
    model: Option<String>,
    models: Vec<String>,
    tags: Vec<String>,
    parent: Option<String>,
    forked_from: Option<String>,
    subagents: Vec<String>,
    subagent_sessions: Vec<String>,
    orphaned: bool,
    message_count: i64,
    turn_count: i64,
    branch_count: i64,
    warning_count: i64,
    source_format: String,
    source_paths: Vec<String>,
}

impl SessionRow {
    fn new(machine: &Arc<Machine>, key: &SessionKey, s: &Session) -> SessionRow {
        SessionRow {
            machine: machine.clone(),
            session: s.unified_id(),
            native_id: s.id.clone(),
            name: key.name.to_string(),
            title: s.title.clone(),
            started_at: s.created_at,
            ended_at: s.updated_at,
            cwd: s.cwd.clone(),
            model: s.primary_model(),
            models: s.models(),
            tags: s.tags.clone(),
            parent: s.parent.clone(),
            forked_from: s.forked_from.clone(),
            subagents: s
                .subagents
                .iter()
                .filter(|a| a.session.is_some())
                .map(|a| a.name.clone())
                .collect(),
            subagent_sessions: s
                .subagents
                .iter()
                .filter_map(|a| a.unified_id.clone())
                .collect(),
            orphaned: s.orphaned,
            message_count: s.messages.len() as i64,
            turn_count: s.turn_count() as i64,
            branch_count: s.branches.len() as i64,
            warning_count: s.warnings.len() as i64,
            source_format: s.source.format.clone(),
            source_paths: s
                .source
                .paths
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
        }
    }
}

impl Row for SessionRow {
    const TABLE: &'static str = "sessions";
    fn columns(r: &[Self]) -> Vec<Column> {
        use Values::*;
        vec![
            req(
                "machine_id",
                Str(r.iter().map(|r| some(&r.machine.id)).collect()),
            ),
            req(
                "hostname",
                Str(r.iter().map(|r| some(&r.machine.hostname)).collect()),
            ),
            req(
                "user",
                Str(r.iter().map(|r| some(&r.machine.user)).collect()),
            ),
            req("session", Str(r.iter().map(|r| some(&r.session)).collect())),
            req(
                "native_id",
                Str(r.iter().map(|r| some(&r.native_id)).collect()),
            ),
            req("name", Str(r.iter().map(|r| some(&r.name)).collect())),
            col("title", Str(r.iter().map(|r| r.title.clone()).collect())),
            col(
                "started_at",
                Time(r.iter().map(|r| micros(r.started_at)).collect()),
            ),
            col(
                "ended_at",
                Time(r.iter().map(|r| micros(r.ended_at)).collect()),
            ),
            col("cwd", Str(r.iter().map(|r| r.cwd.clone()).collect())),
            col("model", Str(r.iter().map(|r| r.model.clone()).collect())),
            req("models", List(r.iter().map(|r| r.models.clone()).collect())),
            req("tags", List(r.iter().map(|r| r.tags.clone()).collect())),
            col("parent", Str(r.iter().map(|r| r.parent.clone()).collect())),
            col(
                "forked_from",
                Str(r.iter().map(|r| r.forked_from.clone()).collect()),
            ),
            req(
                "subagents",
                List(r.iter().map(|r| r.subagents.clone()).collect()),
            ),
            req(
                "subagent_sessions",
                List(r.iter().map(|r| r.subagent_sessions.clone()).collect()),
            ),
            req(
                "orphaned",
                Bool(r.iter().map(|r| Some(r.orphaned)).collect()),
            ),
            req(
                "message_count",
                Int(r.iter().map(|r| Some(r.message_count)).collect()),
            ),
            req(
                "turn_count",
                Int(r.iter().map(|r| Some(r.turn_count)).collect()),
            ),
            req(
                "branch_count",
                Int(r.iter().map(|r| Some(r.branch_count)).collect()),
            ),
            req(
                "warning_count",
                Int(r.iter().map(|r| Some(r.warning_count)).collect()),
            ),
            req(
                "source_format",
                Str(r.iter().map(|r| some(&r.source_format)).collect()),
            ),
            req(
                "source_paths",
                List(r.iter().map(|r| r.source_paths.clone()).collect()),
            ),
        ]
    }
    fn weight(&self) -> usize {
        256 + self.title.as_ref().map_or(0, |t| t.len())
    }
}

struct MessageRow {
    machine: Arc<str>,
    session: Arc<str>,
    subagent: Option<String>,
    branch: Option<String>,
    ordinal: i64,
    role: &'static str,
    kind: String,
    label: Option<String>,
    time: Option<DateTime<Utc>>,
    model: Option<String>,
    text: String,
    thinking: Option<String>,
    native_id: Option<String>,
    tool_call_id: Option<String>,
}

impl Row for MessageRow {
    const TABLE: &'static str = "messages";
    fn columns(r: &[Self]) -> Vec<Column> {
        use Values::*;
        vec![
            req(
                "machine_id",
                Str(r.iter().map(|r| Some(r.machine.to_string())).collect()),
            ),
            req(
                "session",
                Str(r.iter().map(|r| Some(r.session.to_string())).collect()),
            ),
            col(
                "subagent",
                Str(r.iter().map(|r| r.subagent.clone()).collect()),
            ),
            col("branch", Str(r.iter().map(|r| r.branch.clone()).collect())),
            req("ordinal", Int(r.iter().map(|r| Some(r.ordinal)).collect())),
            req(
                "role",
                Str(r.iter().map(|r| Some(r.role.to_string())).collect()),
            ),
            req("kind", Str(r.iter().map(|r| some(&r.kind)).collect())),
            col("label", Str(r.iter().map(|r| r.label.clone()).collect())),
            col("time", Time(r.iter().map(|r| micros(r.time)).collect())),
            col("model", Str(r.iter().map(|r| r.model.clone()).collect())),
            req("text", Str(r.iter().map(|r| some(&r.text)).collect())),
            col(
                "thinking",
                Str(r.iter().map(|r| r.thinking.clone()).collect()),
            ),
            col(
                "native_id",
                Str(r.iter().map(|r| r.native_id.clone()).collect()),
            ),
            col(
                "tool_call_id",
                Str(r.iter().map(|r| r.tool_call_id.clone()).collect()),
            ),
        ]
    }
    fn weight(&self) -> usize {
        64 + self.text.len() + self.thinking.as_ref().map_or(0, |t| t.len())
    }
}

struct ToolRow {
    machine: Arc<str>,
    session: Arc<str>,
    subagent: Option<String>,
    branch: Option<String>,
    ordinal: i64,
    call_index: i64,
    call_id: String,
    name: String,
    input: String,
    output: Option<String>,
    is_error: Option<bool>,
    duration_ms: Option<i64>,
}

impl Row for ToolRow {
    const TABLE: &'static str = "tool_calls";
    fn columns(r: &[Self]) -> Vec<Column> {
        use Values::*;
        vec![
            req(
                "machine_id",
                Str(r.iter().map(|r| Some(r.machine.to_string())).collect()),
            ),
            req(
                "session",
                Str(r.iter().map(|r| Some(r.session.to_string())).collect()),
            ),
            col(
                "subagent",
                Str(r.iter().map(|r| r.subagent.clone()).collect()),
            ),
            col("branch", Str(r.iter().map(|r| r.branch.clone()).collect())),
            req("ordinal", Int(r.iter().map(|r| Some(r.ordinal)).collect())),
            req(
                "call_index",
                Int(r.iter().map(|r| Some(r.call_index)).collect()),
            ),
            req("call_id", Str(r.iter().map(|r| some(&r.call_id)).collect())),
            req("name", Str(r.iter().map(|r| some(&r.name)).collect())),
            req("input", Str(r.iter().map(|r| some(&r.input)).collect())),
            col("output", Str(r.iter().map(|r| r.output.clone()).collect())),
            col("is_error", Bool(r.iter().map(|r| r.is_error).collect())),
            col(
                "duration_ms",
                Int(r.iter().map(|r| r.duration_ms).collect()),
            ),
        ]
    }
    fn weight(&self) -> usize {
        64 + self.input.len() + self.output.as_ref().map_or(0, |t| t.len())
    }
}

#[derive(Debug)]
struct UsageRow {
    machine: Arc<str>,
    record: Record,
}

impl Row for UsageRow {
    const TABLE: &'static str = "usage";
    fn columns(r: &[Self]) -> Vec<Column> {
        use Values::*;
        let tokens = |f: fn(&Record) -> u64| -> Values {
            Int(r.iter().map(|r| Some(f(&r.record) as i64)).collect())
        };
        vec![
            req(
                "machine_id",
                Str(r.iter().map(|r| Some(r.machine.to_string())).collect()),
            ),
            req(
                "session",
                Str(r.iter().map(|r| some(&r.record.owner)).collect()),
            ),
            col(
                "time",
                Time(r.iter().map(|r| micros(r.record.when)).collect()),
            ),
            req(
                "model",
                Str(r.iter().map(|r| some(&r.record.model)).collect()),
            ),
            req("input_tokens", tokens(|r| r.usage.input_tokens)),
            req("output_tokens", tokens(|r| r.usage.output_tokens)),
            req("cache_read_tokens", tokens(|r| r.usage.cached_tokens)),
            req("cache_write_tokens", tokens(|r| r.usage.cache_write_tokens)),
            req("reasoning_tokens", tokens(|r| r.usage.thinking_tokens)),
            col("usd", Float(r.iter().map(|r| r.record.usd).collect())),
            req(
                "estimated",
                Bool(r.iter().map(|r| Some(r.record.estimated)).collect()),
            ),
            col(
                "reply_id",
                Str(r.iter().map(|r| r.record.reply.clone()).collect()),
            ),
        ]
    }
    fn weight(&self) -> usize {
        128
    }
}

/// The message and tool-call rows of one session: its active path, the part of each branch
/// it does not share with the active path, and its nested subagents (named in `subagent`).
/// Messages a fork copied from its parent are the parent's rows, not the fork's, as in
/// `sessfs cost`; ordinals still count them, so they are positions in the session's path.
fn session_rows(
    s: &Session,
    machine: &Arc<str>,
    session: &Arc<str>,
    subagent: Option<&str>,
    msgs: &mut Vec<MessageRow>,
    tools: &mut Vec<ToolRow>,
) {
    path_rows(
        &s.messages,
        0,
        None,
        machine,
        session,
        subagent,
        msgs,
        tools,
    );
    for b in &s.branches {
        let shared = b
            .messages
            .iter()
            .zip(&s.messages)
            .take_while(|(x, y)| x.role == y.role && x.text() == y.text())
            .count();
        path_rows(
            &b.messages,
            shared,
            Some(&b.name),
            machine,
            session,
            subagent,
            msgs,
            tools,
        );
    }
    for sub in &s.subagents {
        if let Some(child) = &sub.session {
            let name = match subagent {
                Some(p) => format!("{p}/{}", sub.name),
                None => sub.name.clone(),
            };
            session_rows(child, machine, session, Some(&name), msgs, tools);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn path_rows(
    path: &[Message],
    from: usize,
    branch: Option<&str>,
    machine: &Arc<str>,
    session: &Arc<str>,
    subagent: Option<&str>,
    msgs: &mut Vec<MessageRow>,
    tools: &mut Vec<ToolRow>,
) {
    // Results that are messages of their own, by the call they answer.
    let results: HashMap<&str, (&str, bool)> = path
        .iter()
        .filter_map(|m| m.tool_result.as_ref())
        .map(|r| (r.tool_call_id.as_str(), (r.output.as_str(), r.is_error)))
        .collect();
    for (i, m) in path.iter().enumerate().skip(from) {
        if m.inherited {
            continue;
        }
        let kind = serde_json::to_value(m.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        msgs.push(MessageRow {
            machine: machine.clone(),
            session: session.clone(),
            subagent: subagent.map(str::to_string),
            branch: branch.map(str::to_string),
            ordinal: i as i64,
            role: m.role.as_str(),
            kind,
            label: m.label.clone(),
            time: m.timestamp,
            model: m.model.clone(),
            text: m.text().to_string(),
            thinking: m.thinking.clone(),
            native_id: m.native_id.clone(),
            tool_call_id: m.tool_result.as_ref().map(|r| r.tool_call_id.clone()),
        });
        for (j, c) in m.tool_calls.iter().enumerate() {
            let result = results.get(c.tool_call_id.as_str());
            tools.push(ToolRow {
                machine: machine.clone(),
                session: session.clone(),
                subagent: subagent.map(str::to_string),
                branch: branch.map(str::to_string),
                ordinal: i as i64,
                call_index: j as i64,
                call_id: c.tool_call_id.clone(),
                name: c.tool_name.clone(),
                input: c.input.to_string(),
                output: c.output.clone().or_else(|| result.map(|r| r.0.to_string())),
                is_error: c.is_error.or(result.map(|r| r.1)),
                duration_ms: c.duration_ms.map(|d| d as i64),
            });
        }
    }
}

// ----- writing ----------------------------------------------------------------------------

/// A Parquet file being written under its temporary name, a row group per
/// [`ROW_GROUP_BYTES`] of rows.
struct TableFile<R: Row> {
    tmp: PathBuf,
    writer: SerializedFileWriter<File>,
    rows: Vec<R>,
    weight: usize,
}

impl<R: Row> TableFile<R> {
    fn create(tmp: PathBuf) -> Result<TableFile<R>> {
        let pq = |source| Error::Parquet {
            path: tmp.clone(),
            source,
        };
        let schema = parquet::schema::parser::parse_message_type(&schema_of::<R>()).map_err(pq)?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(3).expect("3 is a valid zstd level"),
            ))
            .set_created_by(format!("sessfs {}", env!("CARGO_PKG_VERSION")))
            .build();
        if let Some(dir) = tmp.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let file = File::create(&tmp).map_err(io(&tmp))?;
        let writer =
            SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).map_err(pq)?;
        Ok(TableFile {
            tmp,
            writer,
            rows: Vec::new(),
            weight: 0,
        })
    }

    fn push(&mut self, row: R) -> Result<()> {
        self.weight += row.weight();
        self.rows.push(row);
        if self.weight >= ROW_GROUP_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.rows);
        self.weight = 0;
        write_group(&mut self.writer, R::columns(&rows)).map_err(|source| Error::Parquet {
            path: self.tmp.clone(),
            source,
        })
    }

    fn finish(mut self) -> Result<()> {
        self.flush()?;
        let tmp = self.tmp.clone();
        let file = self.writer.into_inner().map_err(|source| Error::Parquet {
            path: tmp.clone(),
            source,
        })?;
        file.sync_all().map_err(io(&tmp))
    }
}

fn write_group(
    writer: &mut SerializedFileWriter<File>,
    columns: Vec<Column>,
) -> parquet::errors::Result<()> {
    let mut group = writer.next_row_group()?;
    for c in columns {
        let mut w = group
            .next_column()?
            .expect("the schema has a column for every value list");
        // Definition level 1 = present, 0 = NULL; required columns carry none.
        fn levels<T, U>(
            v: &[Option<T>],
            required: bool,
            f: impl Fn(&T) -> U,
        ) -> (Vec<U>, Option<Vec<i16>>) {
            let vals = v.iter().flatten().map(f).collect();
            let defs = (!required).then(|| v.iter().map(|x| x.is_some() as i16).collect());
            (vals, defs)
        }
        match &c.values {
            Values::Str(v) => {
                let (vals, defs) = levels(v, c.required, |s| ByteArray::from(s.as_str()));
                w.typed::<ByteArrayType>()
                    .write_batch(&vals, defs.as_deref(), None)?;
            }
            Values::Int(v) | Values::Time(v) => {
                let (vals, defs) = levels(v, c.required, |x| *x);
                w.typed::<Int64Type>()
                    .write_batch(&vals, defs.as_deref(), None)?;
            }
            Values::Float(v) => {
                let (vals, defs) = levels(v, c.required, |x| *x);
                w.typed::<DoubleType>()
                    .write_batch(&vals, defs.as_deref(), None)?;
            }
            Values::Bool(v) => {
                let (vals, defs) = levels(v, c.required, |x| *x);
                w.typed::<BoolType>()
                    .write_batch(&vals, defs.as_deref(), None)?;
            }
            Values::List(v) => {
                // An empty list is one level entry at definition 0; each element is at 1,
                // the first of a row at repetition 0, the rest at 1.
                let (mut vals, mut defs, mut reps) = (Vec::new(), Vec::new(), Vec::new());
                for row in v {
                    if row.is_empty() {
                        defs.push(0);
                        reps.push(0);
                    }
                    for (i, e) in row.iter().enumerate() {
                        vals.push(ByteArray::from(e.as_str()));
                        defs.push(1);
                        reps.push((i > 0) as i16);
                    }
                }
                w.typed::<ByteArrayType>()
                    .write_batch(&vals, Some(&defs), Some(&reps))?;
            }
        }
        w.close()?;
    }
    group.close()?;
    Ok(())
}

// ----- the manifest -----------------------------------------------------------------------

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    layout: u32,
    machine_id: String,
    hostname: String,
    user: String,
    exported_at: Option<String>,
    /// By partition (`agent=<a>/month=<m>`).
    partitions: BTreeMap<String, PartitionEntry>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartitionEntry {
    /// Session directory name -> version of its sources.
    sessions: BTreeMap<String, u64>,
    /// Digest of the partition's usage rows.
    usage: String,
}

const TABLES: [&str; 4] = ["sessions", "messages", "tool_calls", "usage"];

/// Where a partition's file of one table lives, and its temporary name beside it.
fn file_path(dir: &Path, table: &str, partition: &str, machine: &str) -> PathBuf {
    dir.join(table)
        .join(partition)
        .join(format!("part-{machine}.parquet"))
}

fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

pub fn manifest_path(dir: &Path, machine: &str) -> PathBuf {
    dir.join(format!("_sessfs-manifest-{machine}.json"))
}

/// What one partition holds this run.
#[derive(Default)]
struct Partition {
    sessions: BTreeMap<String, u64>,
    keys: Vec<SessionKey>,
    rows: Vec<SessionRow>,
    usage: Vec<UsageRow>,
    /// Message and tool-call rows read in pass 1, by session directory name.
    kept: HashMap<String, (Vec<MessageRow>, Vec<ToolRow>)>,
}

/// One session as pass 1 read it.
struct Loaded {
    key: SessionKey,
    version: u64,
    part: String,
    uid: String,
    row: SessionRow,
    rows: Option<(Vec<MessageRow>, Vec<ToolRow>)>,
}

/// A session's message and tool-call rows.
fn rows_of(session: &Session, machine: &Arc<str>) -> (Vec<MessageRow>, Vec<ToolRow>) {
    let uid: Arc<str> = session.unified_id().into();
    let (mut msgs, mut tools) = (Vec::new(), Vec::new());
    session_rows(session, machine, &uid, None, &mut msgs, &mut tools);
    (msgs, tools)
}

/// The partition of a session: its agent and the month it started (`unknown` without a
/// time).
fn partition_of(s: &Session) -> String {
    let month = s
        .created_at
        .or(s.updated_at)
        .map_or("unknown".to_string(), |t| t.format("%Y-%m").to_string());
    format!("agent={}/month={month}", s.agent.name())
}

/// Export the sessions `opts` selects into `dir`.
pub fn export(fs: &Fs, dir: &Path, opts: &Options) -> Result<Summary> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let machine = Arc::new(Machine::here());
    let mid: Arc<str> = machine.id.as_str().into();
    let mpath = manifest_path(dir, &machine.id);
    let old = match std::fs::read(&mpath) {
        Ok(bytes) => {
            serde_json::from_slice::<Manifest>(&bytes).map_err(|source| Error::Manifest {
                path: mpath.clone(),
                source,
            })?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Manifest::default(),
        Err(e) => return Err(io(&mpath)(e)),
    };
    let old_parts = if old.layout == LAYOUT {
        old.partitions
    } else {
        BTreeMap::new()
    };

    // Pass 1: every session once, for its partition, its row and its usage records. Usage
    // needs every session of the agents (a reply is counted in the oldest session holding
    // it, a subagent in its parent), as `sessfs cost` collects them. Sessions are read on
    // every core; the rows of changed sessions are kept (up to [`ROWS_KEPT_BYTES`]) so that
    // pass 2 need not read them again.
    let keys: Vec<SessionKey> = fs
        .sessions()
        .into_iter()
        .filter(|k| opts.agents.is_empty() || opts.agents.contains(&k.agent))
        .collect();
    let next = AtomicUsize::new(0);
    let kept = AtomicUsize::new(0);
    let read = || {
        let mut c = Collector::default();
        let mut out = Vec::new();
        while let Some(key) = keys.get(next.fetch_add(1, Ordering::Relaxed)) {
            let Ok(version) = fs.source_version(key) else {
                continue;
            };
            let Ok(session) = fs.load_marked(key) else {
                continue;
            };
            c.add(&session);
            let when = session.updated_at.or(session.created_at);
            if opts.since.is_some_and(|s| when.is_none_or(|w| w < s))
                || opts.until.is_some_and(|u| when.is_none_or(|w| w > u))
            {
                continue;
            }
            let part = partition_of(&session);
            let changed = old_parts
                .get(&part)
                .and_then(|e| e.sessions.get(&*key.name))
                != Some(&version);
            let rows = changed
                .then(|| {
                    let rows = rows_of(&session, &mid);
                    let w = rows.0.iter().map(Row::weight).sum::<usize>()
                        + rows.1.iter().map(Row::weight).sum::<usize>();
                    if kept.fetch_add(w, Ordering::Relaxed) + w <= ROWS_KEPT_BYTES {
                        Some(rows)
                    } else {
                        kept.fetch_sub(w, Ordering::Relaxed);
                        None
                    }
                })
                .flatten();
            out.push(Loaded {
                uid: session.unified_id(),
                row: SessionRow::new(&machine, key, &session),
                key: key.clone(),
                version,
                part,
                rows,
            });
        }
        (c, out)
    };
    let workers = crate::tree::cores().clamp(1, 8);
    let mut collector = Collector::default();
    let mut loaded: Vec<Loaded> = Vec::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers).map(|_| scope.spawn(read)).collect();
        for h in handles {
            match h.join() {
                Ok((c, out)) => {
                    collector.merge(c);
                    loaded.extend(out);
                }
                Err(p) => std::panic::resume_unwind(p),
            }
        }
    });
    // The order of the listing, whichever thread read a session.
    loaded.sort_by_key(|l| (l.key.agent, l.key.name.clone()));
    let mut parts: BTreeMap<String, Partition> = BTreeMap::new();
    let mut owner_part: HashMap<String, String> = HashMap::new();
    for l in loaded {
        owner_part.insert(l.uid, l.part.clone());
        let p = parts.entry(l.part).or_default();
        p.sessions.insert(l.key.name.to_string(), l.version);
        p.rows.push(l.row);
        if let Some(rows) = l.rows {
            p.kept.insert(l.key.name.to_string(), rows);
        }
        p.keys.push(l.key);
    }
    let sessions = owner_part.len();
    for record in collector.finish() {
        if let Some(p) = owner_part.get(&record.owner) {
            if let Some(part) = parts.get_mut(p) {
                part.usage.push(UsageRow {
                    machine: mid.clone(),
                    record,
                });
            }
        }
    }

    // Pass 2: write what moved, each file under its temporary name.
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut entries: BTreeMap<String, PartitionEntry> = BTreeMap::new();
    let mut rewritten = 0;
    let result = (|| -> Result<()> {
        for (name, part) in &mut parts {
            let digest = hex(&Md5::digest(format!("{:?}", part.usage).as_bytes()));
            let entry = PartitionEntry {
                sessions: part.sessions.clone(),
                usage: digest,
            };
            let path = |t: &str| file_path(dir, t, name, &machine.id);
            let previous = old_parts.get(name);
            let whole = previous.is_none_or(|e| e.sessions != entry.sessions)
                || TABLES.iter().any(|t| !path(t).is_file());
            let usage = whole || previous.is_none_or(|e| e.usage != entry.usage);
            entries.insert(name.clone(), entry);
            if !usage {
                continue;
            }
            rewritten += 1;
            if whole {
                let rows = std::mem::take(&mut part.rows);
                write_table(&path("sessions"), rows, &mut staged)?;
                write_messages(fs, part, &mid, &path, &mut staged)?;
            }
            let rows = std::mem::take(&mut part.usage);
            write_table(&path("usage"), rows, &mut staged)?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (tmp, _) in &staged {
            let _ = std::fs::remove_file(tmp);
        }
        return Err(e);
    }

    // Commit: every file into place, then the manifest, then what vanished goes.
    for (tmp, path) in &staged {
        std::fs::rename(tmp, path).map_err(io(path))?;
    }
    let manifest = Manifest {
        layout: LAYOUT,
        machine_id: machine.id.clone(),
        hostname: machine.hostname.clone(),
        user: machine.user.clone(),
        exported_at: Some(Utc::now().to_rfc3339()),
        partitions: entries,
    };
    let tmp = tmp_path(&mpath);
    let mut text = serde_json::to_vec_pretty(&manifest).expect("a manifest always serializes");
    text.push(b'\n');
    {
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(&text).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, &mpath).map_err(io(&mpath))?;
    let mut removed = 0;
    for name in old_parts
        .keys()
        .filter(|n| !manifest.partitions.contains_key(*n))
    {
        removed += 1;
        for t in TABLES {
            let path = file_path(dir, t, name, &machine.id);
            let _ = std::fs::remove_file(&path);
            // Directories left empty go too; one still holding another machine's file stays.
            let mut d = path.parent();
            while let Some(p) = d.filter(|p| *p != dir) {
                if std::fs::remove_dir(p).is_err() {
                    break;
                }
                d = p.parent();
            }
        }
    }
    Ok(Summary {
        sessions,
        partitions: manifest.partitions.len(),
        rewritten,
        removed,
    })
}

/// Write rows as one table file under its temporary name, noted in `staged` (temporary,
/// final) before it is created, so a failure removes a half-written file too.
fn write_table<R: Row>(
    path: &Path,
    rows: Vec<R>,
    staged: &mut Vec<(PathBuf, PathBuf)>,
) -> Result<()> {
    let tmp = tmp_path(path);
    staged.push((tmp.clone(), path.to_path_buf()));
    let mut f = TableFile::<R>::create(tmp)?;
    for r in rows {
        f.push(r)?;
    }
    f.finish()
}

/// The messages and tool calls of a partition's sessions, loaded again one at a time so
/// only a row group's worth of text is held at once.
fn write_messages(
    fs: &Fs,
    part: &mut Partition,
    machine: &Arc<str>,
    path: &dyn Fn(&str) -> PathBuf,
    staged: &mut Vec<(PathBuf, PathBuf)>,
) -> Result<()> {
    let (mpath, tpath) = (path("messages"), path("tool_calls"));
    let (mtmp, ttmp) = (tmp_path(&mpath), tmp_path(&tpath));
    staged.push((mtmp.clone(), mpath));
    let mut mf = TableFile::<MessageRow>::create(mtmp)?;
    staged.push((ttmp.clone(), tpath));
    let mut tf = TableFile::<ToolRow>::create(ttmp)?;
    for key in &part.keys {
        let (msgs, tools) = match part.kept.remove(&*key.name) {
            Some(rows) => rows,
            None => match fs.load_marked(key) {
                Ok(session) => rows_of(&session, machine),
                Err(_) => continue,
            },
        };
        for m in msgs {
            mf.push(m)?;
        }
        for t in tools {
            tf.push(t)?;
        }
    }
    mf.finish()?;
    tf.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tables_schema_parses_and_names_each_column_once() {
        for (schema, n) in [
            (schema_of::<SessionRow>(), SessionRow::columns(&[]).len()),
            (schema_of::<MessageRow>(), MessageRow::columns(&[]).len()),
            (schema_of::<ToolRow>(), ToolRow::columns(&[]).len()),
            (schema_of::<UsageRow>(), UsageRow::columns(&[]).len()),
        ] {
            let t = parquet::schema::parser::parse_message_type(&schema).expect(&schema);
            let names: std::collections::BTreeSet<&str> =
                t.get_fields().iter().map(|f| f.name()).collect();
            assert_eq!(names.len(), n, "{schema}");
        }
    }

    #[test]
    fn a_session_is_in_the_month_it_started() {
        let mut s = Session::new(Agent::Pi, "p");
        assert_eq!(partition_of(&s), "agent=pi/month=unknown");
        s.updated_at = DateTime::parse_from_rfc3339("2026-06-01T00:10:00Z")
            .ok()
            .map(|t| t.with_timezone(&Utc));
        assert_eq!(partition_of(&s), "agent=pi/month=2026-06");
        s.created_at = DateTime::parse_from_rfc3339("2026-05-31T23:50:00Z")
            .ok()
            .map(|t| t.with_timezone(&Utc));
        assert_eq!(partition_of(&s), "agent=pi/month=2026-05");
    }
}
