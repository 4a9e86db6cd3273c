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
//!
//! Speed: an export reads every session once, like a walk of the mount, and should take no
//! longer (scripts/bench, section h). So the threads that parse sessions also push their
//! rows straight into column buffers (no row structs, no copy of a text but the one into
//! its column) and encode and compress them into row groups; the writing thread only
//! splices those encoded groups into the files, in listing order. Long texts are written
//! without dictionary and statistics, and zstd runs at level 1.

use crate::cache::SessionKey;
use crate::cost::{Collector, Record};
use crate::model::{Agent, Message, MessageKind, Session};
use crate::tree::Fs;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use md5::{Digest, Md5};
use parquet::basic::{Compression, ZstdLevel};
use parquet::column::writer::{get_column_writer, ColumnCloseResult, ColumnWriter};
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::{ColumnPath, SchemaDescPtr, SchemaDescriptor, TypePtr};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bumped when a column changes: an export made by another layout is rewritten whole.
const LAYOUT: u32 = 1;
/// Rows of one table gathered before they are encoded as a row group, by text size: bounds
/// the rows a thread holds to about this much, however large a partition or a session is.
const ROW_GROUP_BYTES: usize = 32 << 20;
/// Encoded (compressed) row groups of changed sessions kept from pass 1 for pass 2, at most:
/// past it, a session is read again when its partition is written.
const GROUPS_KEPT_BYTES: usize = 256 << 20;

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

/// A column's Parquet type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Float,
    Bool,
    /// Microseconds since the epoch, UTC.
    Time,
    /// A list of strings, never NULL (empty instead).
    List,
}

/// One column of a table.
struct Col {
    name: &'static str,
    kind: Kind,
    /// Never NULL.
    required: bool,
    /// Long text that hardly repeats (message texts, tool inputs and outputs): written plain,
    /// without a dictionary (which it would outgrow) or min/max statistics (which no query
    /// prunes by).
    long: bool,
}

const fn req(name: &'static str, kind: Kind) -> Col {
    Col {
        name,
        kind,
        required: true,
        long: false,
    }
}

const fn opt(name: &'static str, kind: Kind) -> Col {
    Col {
        name,
        kind,
        required: false,
        long: false,
    }
}

const fn long(name: &'static str, required: bool) -> Col {
    Col {
        name,
        kind: Kind::Str,
        required,
        long: true,
    }
}

use Kind::{Bool as B, Float as F, Int as I, List as L, Str as S, Time as T};

const SESSION_COLS: &[Col] = &[
    req("machine_id", S),
    req("hostname", S),
    req("user", S),
    req("session", S),
    req("native_id", S),
    req("name", S),
    opt("title", S),
    opt("started_at", T),
    opt("ended_at", T),
    opt("cwd", S),
    opt("model", S),
    req("models", L),
    req("tags", L),
    opt("parent", S),
    opt("forked_from", S),
    req("subagents", L),
    req("subagent_sessions", L),
    req("orphaned", B),
    req("message_count", I),
    req("turn_count", I),
    req("branch_count", I),
    req("warning_count", I),
    req("source_format", S),
    req("source_paths", L),
];

/// Where a message or a tool call is: the first columns of both tables.
const PLACE_COLS: &[Col] = &[
    req("machine_id", S),
    req("session", S),
    opt("subagent", S),
    opt("branch", S),
    req("ordinal", I),
];

const MESSAGE_COLS: &[Col] = &[
    req("role", S),
    req("kind", S),
    opt("label", S),
    opt("time", T),
    opt("model", S),
    long("text", true),
    long("thinking", false),
    opt("native_id", S),
    opt("tool_call_id", S),
];

const TOOL_COLS: &[Col] = &[
    req("call_index", I),
    req("call_id", S),
    req("name", S),
    long("input", true),
    long("output", false),
    opt("is_error", B),
    opt("duration_ms", I),
];

const USAGE_COLS: &[Col] = &[
    req("machine_id", S),
    req("session", S),
    opt("time", T),
    req("model", S),
    req("input_tokens", I),
    req("output_tokens", I),
    req("cache_read_tokens", I),
    req("cache_write_tokens", I),
    req("reasoning_tokens", I),
    opt("usd", F),
    req("estimated", B),
    opt("reply_id", S),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Table {
    Sessions,
    Messages,
    ToolCalls,
    Usage,
}

impl Table {
    const ALL: [Table; 4] = [
        Table::Sessions,
        Table::Messages,
        Table::ToolCalls,
        Table::Usage,
    ];

    fn name(self) -> &'static str {
        match self {
            Table::Sessions => "sessions",
            Table::Messages => "messages",
            Table::ToolCalls => "tool_calls",
            Table::Usage => "usage",
        }
    }

    fn columns(self) -> impl Iterator<Item = &'static Col> {
        let (place, own): (&[Col], &[Col]) = match self {
            Table::Sessions => (&[], SESSION_COLS),
            Table::Messages => (PLACE_COLS, MESSAGE_COLS),
            Table::ToolCalls => (PLACE_COLS, TOOL_COLS),
            Table::Usage => (&[], USAGE_COLS),
        };
        place.iter().chain(own)
    }

    fn schema(self) -> String {
        let mut s = format!("message {} {{\n", self.name());
        for c in self.columns() {
            let rep = if c.required { "required" } else { "optional" };
            let line = match c.kind {
                Kind::Str => format!("{rep} binary {} (STRING);", c.name),
                Kind::Int => format!("{rep} int64 {};", c.name),
                Kind::Float => format!("{rep} double {};", c.name),
                Kind::Bool => format!("{rep} boolean {};", c.name),
                Kind::Time => format!("{rep} int64 {} (TIMESTAMP(MICROS,true));", c.name),
                Kind::List => format!(
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
}

/// The values of one column of a batch of rows.
enum Vals {
    Bytes(Vec<ByteArray>),
    Int(Vec<i64>),
    Float(Vec<f64>),
    Bool(Vec<bool>),
}

struct ColumnRows {
    col: &'static Col,
    vals: Vals,
    /// Definition levels: of an optional column 1 = present, 0 = NULL; of a list 1 = an
    /// element, 0 = an empty list. A required column has none.
    defs: Vec<i16>,
    /// Of a list: 0 = a row's first element (or its empty list), 1 = the next.
    reps: Vec<i16>,
}

/// A batch of one table's rows, column by column: a row is pushed a value per column, in the
/// table's column order, and ended with [`Rows::end`].
struct Rows {
    table: Table,
    cols: Vec<ColumnRows>,
    at: usize,
    len: usize,
    /// About how many bytes the batch holds, for [`ROW_GROUP_BYTES`].
    weight: usize,
}

impl Rows {
    fn new(table: Table) -> Rows {
        let cols = table
            .columns()
            .map(|col| ColumnRows {
                col,
                vals: match col.kind {
                    Kind::Str | Kind::List => Vals::Bytes(Vec::new()),
                    Kind::Int | Kind::Time => Vals::Int(Vec::new()),
                    Kind::Float => Vals::Float(Vec::new()),
                    Kind::Bool => Vals::Bool(Vec::new()),
                },
                defs: Vec::new(),
                reps: Vec::new(),
            })
            .collect();
        Rows {
            table,
            cols,
            at: 0,
            len: 0,
            weight: 0,
        }
    }

    /// The next column, of type `kind`, with its definition level noted.
    fn next(&mut self, kind: Kind, present: bool) -> &mut Vals {
        let c = &mut self.cols[self.at];
        debug_assert_eq!(
            c.col.kind, kind,
            "column {} of {:?}",
            c.col.name, self.table
        );
        self.at += 1;
        if !c.col.required {
            c.defs.push(present as i16);
        }
        &mut c.vals
    }

    fn bytes(&mut self, v: Option<ByteArray>) -> &mut Self {
        self.weight += 8 + v.as_ref().map_or(0, ByteArray::len);
        let vals = self.next(Kind::Str, v.is_some());
        if let (Vals::Bytes(vals), Some(v)) = (vals, v) {
            vals.push(v);
        }
        self
    }

    fn str(&mut self, v: Option<&str>) -> &mut Self {
        self.bytes(v.map(ByteArray::from))
    }

    fn int(&mut self, v: Option<i64>) -> &mut Self {
        self.i64(Kind::Int, v)
    }

    fn time(&mut self, t: Option<DateTime<Utc>>) -> &mut Self {
        self.i64(Kind::Time, t.map(|t| t.timestamp_micros()))
    }

    fn i64(&mut self, kind: Kind, v: Option<i64>) -> &mut Self {
        self.weight += 8;
        if let (Vals::Int(vals), Some(v)) = (self.next(kind, v.is_some()), v) {
            vals.push(v);
        }
        self
    }

    fn float(&mut self, v: Option<f64>) -> &mut Self {
        self.weight += 8;
        if let (Vals::Float(vals), Some(v)) = (self.next(Kind::Float, v.is_some()), v) {
            vals.push(v);
        }
        self
    }

    fn bool(&mut self, v: Option<bool>) -> &mut Self {
        self.weight += 1;
        if let (Vals::Bool(vals), Some(v)) = (self.next(Kind::Bool, v.is_some()), v) {
            vals.push(v);
        }
        self
    }

    fn list(&mut self, v: &[String]) -> &mut Self {
        let c = &mut self.cols[self.at];
        debug_assert_eq!(
            c.col.kind,
            Kind::List,
            "column {} of {:?}",
            c.col.name,
            self.table
        );
        self.at += 1;
        if v.is_empty() {
            c.defs.push(0);
            c.reps.push(0);
        }
        for (i, e) in v.iter().enumerate() {
            self.weight += 8 + e.len();
            c.defs.push(1);
            c.reps.push((i > 0) as i16);
            if let Vals::Bytes(vals) = &mut c.vals {
                vals.push(ByteArray::from(e.as_str()));
            }
        }
        self
    }

    fn end(&mut self) {
        debug_assert_eq!(self.at, self.cols.len(), "a {:?} row", self.table);
        self.at = 0;
        self.len += 1;
    }

    /// Encode and compress the batch as one row group's column chunks.
    fn encode(self, schemas: &Schemas) -> parquet::errors::Result<Group> {
        let schema = schemas.of(self.table);
        let mut chunks = Vec::with_capacity(self.cols.len());
        let mut size = 0;
        for (c, descr) in self.cols.into_iter().zip(schema.descr.columns()) {
            let mut sink = TrackedWrite::new(Vec::new());
            let page = Box::new(SerializedPageWriter::new(&mut sink));
            let mut w = get_column_writer(descr.clone(), schema.props.clone(), page);
            let defs = (!c.col.required || c.col.kind == Kind::List).then_some(&c.defs[..]);
            let reps = (c.col.kind == Kind::List).then_some(&c.reps[..]);
            match (&mut w, &c.vals) {
                (ColumnWriter::ByteArrayColumnWriter(w), Vals::Bytes(v)) => {
                    w.write_batch(v, defs, reps)?;
                }
                (ColumnWriter::Int64ColumnWriter(w), Vals::Int(v)) => {
                    w.write_batch(v, defs, reps)?;
                }
                (ColumnWriter::DoubleColumnWriter(w), Vals::Float(v)) => {
                    w.write_batch(v, defs, reps)?;
                }
                (ColumnWriter::BoolColumnWriter(w), Vals::Bool(v)) => {
                    w.write_batch(v, defs, reps)?;
                }
                _ => {
                    return Err(ParquetError::General(format!(
                        "column {} of {} is not of its schema's type",
                        c.col.name,
                        self.table.name()
                    )))
                }
            }
            let close = w.close()?;
            let bytes = Bytes::from(sink.into_inner()?);
            size += bytes.len();
            chunks.push((bytes, close));
        }
        Ok(Group {
            rows: self.len,
            size,
            chunks,
        })
    }
}

/// One row group of a table, encoded and compressed, to be spliced into its file as it is.
struct Group {
    rows: usize,
    /// Bytes of the encoded chunks.
    size: usize,
    chunks: Vec<(Bytes, ColumnCloseResult)>,
}

/// A table's Parquet schema and writer settings.
struct Schema {
    root: TypePtr,
    descr: SchemaDescPtr,
    props: WriterPropertiesPtr,
}

/// The four tables' schemas, made once per export and shared by every thread encoding rows.
struct Schemas([Schema; 4]);

impl Schemas {
    fn new() -> parquet::errors::Result<Schemas> {
        // zstd level 1: about as small as level 3 on session text (the corpus repeats itself
        // far more than any level's window misses) at a fraction of the time.
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(1).expect("1 is a valid zstd level"),
            ))
            .set_created_by(format!("sessfs {}", env!("CARGO_PKG_VERSION")));
        for c in Table::ALL
            .iter()
            .flat_map(|t| t.columns())
            .filter(|c| c.long)
        {
            let path = ColumnPath::from(c.name);
            props = props
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_statistics_enabled(path, EnabledStatistics::None);
        }
        let props = Arc::new(props.build());
        let schema = |t: Table| -> parquet::errors::Result<Schema> {
            let root = Arc::new(parquet::schema::parser::parse_message_type(&t.schema())?);
            Ok(Schema {
                descr: Arc::new(SchemaDescriptor::new(root.clone())),
                root,
                props: props.clone(),
            })
        };
        Ok(Schemas([
            schema(Table::Sessions)?,
            schema(Table::Messages)?,
            schema(Table::ToolCalls)?,
            schema(Table::Usage)?,
        ]))
    }

    fn of(&self, t: Table) -> &Schema {
        &self.0[t as usize]
    }
}

/// What a session's `sessions` row holds, kept from pass 1 until its partition is written.
struct SessionRow {
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
    message_count: usize,
    turn_count: usize,
    branch_count: usize,
    warning_count: usize,
    source_format: String,
    source_paths: Vec<String>,
}

impl SessionRow {
    fn new(key: &SessionKey, s: &Session) -> SessionRow {
        SessionRow {
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
            message_count: s.messages.len(),
            turn_count: s.turn_count(),
            branch_count: s.branches.len(),
            warning_count: s.warnings.len(),
            source_format: s.source.format.clone(),
            source_paths: s
                .source
                .paths
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
        }
    }

    fn push(&self, m: &Machine, out: &mut Rows) {
        let n = |v: usize| Some(v as i64);
        out.str(Some(&m.id))
            .str(Some(&m.hostname))
            .str(Some(&m.user))
            .str(Some(&self.session))
            .str(Some(&self.native_id))
            .str(Some(&self.name))
            .str(self.title.as_deref())
            .time(self.started_at)
            .time(self.ended_at)
            .str(self.cwd.as_deref())
            .str(self.model.as_deref())
            .list(&self.models)
            .list(&self.tags)
            .str(self.parent.as_deref())
            .str(self.forked_from.as_deref())
            .list(&self.subagents)
            .list(&self.subagent_sessions)
            .bool(Some(self.orphaned))
            .int(n(self.message_count))
            .int(n(self.turn_count))
            .int(n(self.branch_count))
            .int(n(self.warning_count))
            .str(Some(&self.source_format))
            .list(&self.source_paths)
            .end();
    }
}

/// A usage row: one record of [`Collector`], as `sessfs cost` counts it.
#[derive(Debug)]
struct UsageRow {
    machine: Arc<str>,
    record: Record,
}

impl UsageRow {
    fn push(&self, out: &mut Rows) {
        let r = &self.record;
        let n = |v: u64| Some(v as i64);
        out.str(Some(&self.machine))
            .str(Some(&r.owner))
            .time(r.when)
            .str(Some(&r.model))
            .int(n(r.usage.input_tokens))
            .int(n(r.usage.output_tokens))
            .int(n(r.usage.cached_tokens))
            .int(n(r.usage.cache_write_tokens))
            .int(n(r.usage.thinking_tokens))
            .float(r.usd)
            .bool(Some(r.estimated))
            .str(r.reply.as_deref())
            .end();
    }
}

/// Message and tool-call rows being gathered by one thread, by partition, encoded as a row
/// group of each table whenever they reach [`ROW_GROUP_BYTES`] together (so a thread holds
/// at most about that much of them, however large a session), and at the end.
struct Gather<'a> {
    schemas: &'a Schemas,
    /// Where the export goes, for the names of files in errors.
    dir: &'a Path,
    machine_id: &'a str,
    /// The machine id as every row holds it (one buffer, shared).
    machine: ByteArray,
    open: BTreeMap<String, (Rows, Rows)>,
    weight: usize,
    done: Vec<Encoded>,
    /// Bytes of the row groups in `done`.
    encoded: usize,
}

/// A partition's message and tool-call row groups from one batch of sessions.
struct Encoded {
    part: String,
    messages: Group,
    tool_calls: Group,
}

impl<'a> Gather<'a> {
    fn new(schemas: &'a Schemas, dir: &'a Path, machine_id: &'a str) -> Gather<'a> {
        Gather {
            schemas,
            dir,
            machine_id,
            machine: ByteArray::from(machine_id.as_bytes().to_vec()),
            open: BTreeMap::new(),
            weight: 0,
            done: Vec::new(),
            encoded: 0,
        }
    }

    /// The rows of a session in partition `part`.
    fn session(&mut self, part: &str, s: &Session) -> Result<()> {
        let uid = ByteArray::from(s.unified_id().into_bytes());
        let mut at = Place {
            session: uid,
            subagent: None,
        };
        self.session_rows(part, s, &mut at)
    }

    /// The message and tool-call rows of one session: its active path, the part of each
    /// branch it does not share with the active path, and its nested subagents (named in
    /// `subagent`). Messages a fork copied from its parent are the parent's rows, not the
    /// fork's, as in `sessfs cost`; ordinals still count them, so they are positions in the
    /// session's path.
    fn session_rows(&mut self, part: &str, s: &Session, at: &mut Place) -> Result<()> {
        self.path_rows(part, &s.messages, 0, None, at)?;
        for b in &s.branches {
            let shared = crate::model::shared_prefix(&b.messages, &s.messages);
            self.path_rows(part, &b.messages, shared, Some(&b.name), at)?;
        }
        for sub in &s.subagents {
            if let Some(child) = &sub.session {
                let name = match &at.subagent {
                    Some(p) => format!("{p}/{}", sub.name),
                    None => sub.name.clone(),
                };
                let outer = at.subagent.replace(name);
                let r = self.session_rows(part, child, at);
                at.subagent = outer;
                r?;
            }
        }
        Ok(())
    }

    fn path_rows(
        &mut self,
        part: &str,
        path: &[Message],
        from: usize,
        branch: Option<&str>,
        at: &Place,
    ) -> Result<()> {
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
            if !self.open.contains_key(part) {
                let rows = (Rows::new(Table::Messages), Rows::new(Table::ToolCalls));
                self.open.insert(part.to_string(), rows);
            }
            let (msgs, tools) = self.open.get_mut(part).expect("just inserted");
            let before = msgs.weight + tools.weight;
            let place = |out: &mut Rows| {
                out.bytes(Some(self.machine.clone()))
                    .bytes(Some(at.session.clone()))
                    .str(at.subagent.as_deref())
                    .str(branch)
                    .int(Some(i as i64));
            };
            place(msgs);
            msgs.str(Some(m.role.as_str()))
                .str(Some(kind_name(m.kind)))
                .str(m.label.as_deref())
                .time(m.timestamp)
                .str(m.model.as_deref())
                .str(Some(m.text()))
                .str(m.thinking.as_deref())
                .str(m.native_id.as_deref())
                .str(m.tool_result.as_ref().map(|r| r.tool_call_id.as_str()))
                .end();
            for (j, c) in m.tool_calls.iter().enumerate() {
                let result = results.get(c.tool_call_id.as_str());
                place(tools);
                tools
                    .int(Some(j as i64))
                    .str(Some(&c.tool_call_id))
                    .str(Some(&c.tool_name))
                    .bytes(Some(ByteArray::from(c.input.to_string().into_bytes())))
                    .str(c.output.as_deref().or(result.map(|r| r.0)))
                    .bool(c.is_error.or(result.map(|r| r.1)))
                    .int(c.duration_ms.map(|d| d as i64))
                    .end();
            }
            self.weight += msgs.weight + tools.weight - before;
            if self.weight >= ROW_GROUP_BYTES {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Encode every partition's rows gathered so far.
    fn flush(&mut self) -> Result<()> {
        for (part, (msgs, tools)) in std::mem::take(&mut self.open) {
            let pq = |t: Table| {
                let path = file_path(self.dir, t.name(), &part, self.machine_id);
                move |source| Error::Parquet { path, source }
            };
            let messages = msgs.encode(self.schemas).map_err(pq(Table::Messages))?;
            let tool_calls = tools.encode(self.schemas).map_err(pq(Table::ToolCalls))?;
            self.encoded += messages.size + tool_calls.size;
            self.done.push(Encoded {
                part,
                messages,
                tool_calls,
            });
        }
        self.weight = 0;
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<Encoded>> {
        self.flush()?;
        Ok(self.done)
    }
}

/// Where the rows being pushed are: their session and subagent.
struct Place {
    session: ByteArray,
    subagent: Option<String>,
}

/// A message kind's name as `messages.jsonl` spells it.
fn kind_name(k: MessageKind) -> &'static str {
    match k {
        MessageKind::Normal => "normal",
        MessageKind::CompactionSummary => "compactionSummary",
        MessageKind::BranchSummary => "branchSummary",
        MessageKind::Execution => "execution",
        MessageKind::Event => "event",
        MessageKind::Context => "context",
    }
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

// ----- the export ---------------------------------------------------------------------------

/// What one partition holds this run.
#[derive(Default)]
struct Partition {
    sessions: BTreeMap<String, u64>,
    rows: Vec<SessionRow>,
    usage: Vec<UsageRow>,
    /// Its sessions whose rows pass 1 did not keep, to be read again if it is rewritten.
    unkept: Vec<SessionKey>,
    /// Message and tool-call row groups of its sessions pass 1 kept, in listing order.
    groups: Vec<(Group, Group)>,
}

/// One session as pass 1 read it.
struct Loaded {
    key: SessionKey,
    version: u64,
    part: String,
    uid: String,
    row: SessionRow,
    /// Whether its message and tool-call rows are in pass 1's row groups.
    kept: bool,
}

/// What pass 1 made of one batch of sessions.
struct Batch {
    collector: Collector,
    loaded: Vec<Loaded>,
    groups: Vec<Encoded>,
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

/// Run `f` over `items` in batches of consecutive items on [`readers`] threads; the results
/// come back in the items' order, whichever thread made them.
fn par_batches<T: Sync, R: Send>(items: &[T], f: impl Fn(&[T]) -> R + Sync) -> Vec<R> {
    let workers = readers();
    // Several batches a thread, so that one slow batch does not leave the others idle at
    // the end; at most 256 sessions each, so row groups stay a few MB.
    let size = items.len().div_ceil(workers * 8).clamp(1, 256);
    let batches: Vec<&[T]> = items.chunks(size).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(batch) = batches.get(i) else {
                return mine;
            };
            mine.push((i, f(batch)));
        }
    };
    let mut out: Vec<Option<R>> = (0..batches.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.min(batches.len()))
            .map(|_| scope.spawn(work))
            .collect();
        for h in handles {
            match h.join() {
                Ok(done) => {
                    for (i, r) in done {
                        out[i] = Some(r);
                    }
                }
                Err(p) => std::panic::resume_unwind(p),
            }
        }
    });
    out.into_iter().flatten().collect()
}

/// Threads reading sessions: two a core (at least 2, at most 8). A cold export waits on the
/// disk for every session file it opens; with one thread a core, a core idles through each
/// wait, with two the other thread parses meanwhile. Each holds at most [`ROW_GROUP_BYTES`]
/// of rows.
fn readers() -> usize {
    (2 * crate::tree::cores()).clamp(2, 8)
}

/// Export the sessions `opts` selects into `dir`.
pub fn export(fs: &Fs, dir: &Path, opts: &Options) -> Result<Summary> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let machine = Machine::here();
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
    let schemas = Schemas::new().map_err(|source| Error::Parquet {
        path: dir.to_path_buf(),
        source,
    })?;

    // Pass 1: every session once, for its partition, its row and its usage records. Usage
    // needs every session of the agents (a reply is counted in the oldest session holding
    // it, a subagent in its parent), as `sessfs cost` collects them. Sessions are read,
    // and the message and tool-call rows of changed ones encoded and compressed, on every
    // core, in batches of consecutive sessions; the encoded row groups are kept (up to
    // [`GROUPS_KEPT_BYTES`]) so that pass 2 only splices them into their files.
    let mut keys: Vec<SessionKey> = fs
        .sessions()
        .into_iter()
        .filter(|k| opts.agents.is_empty() || opts.agents.contains(&k.agent))
        .collect();
    keys.sort_by(|a, b| (a.agent, &a.name).cmp(&(b.agent, &b.name)));
    let kept = AtomicUsize::new(0);
    let batches = par_batches(&keys, |keys| -> Result<Batch> {
        let mut collector = Collector::default();
        let mut loaded = Vec::new();
        let mut gather = Gather::new(&schemas, dir, &machine.id);
        for key in keys {
            let Ok(version) = fs.source_version(key) else {
                continue;
            };
            let Ok(session) = fs.load_marked(key) else {
                continue;
            };
            collector.add(&session);
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
            let keep = changed && kept.load(Ordering::Relaxed) < GROUPS_KEPT_BYTES;
            if keep {
                let before = gather.encoded;
                gather.session(&part, &session)?;
                kept.fetch_add(gather.encoded - before, Ordering::Relaxed);
            }
            loaded.push(Loaded {
                uid: session.unified_id(),
                row: SessionRow::new(key, &session),
                key: key.clone(),
                version,
                part,
                kept: keep,
            });
        }
        let before = gather.encoded;
        let groups = gather.finish()?;
        let after = groups.iter().map(|e| e.messages.size + e.tool_calls.size);
        kept.fetch_add(after.sum::<usize>() - before, Ordering::Relaxed);
        Ok(Batch {
            collector,
            loaded,
            groups,
        })
    });
    let mut collector = Collector::default();
    let mut parts: BTreeMap<String, Partition> = BTreeMap::new();
    let mut owner_part: HashMap<String, String> = HashMap::new();
    for batch in batches {
        let batch = batch?;
        collector.merge(batch.collector);
        for l in batch.loaded {
            owner_part.insert(l.uid, l.part.clone());
            let p = parts.entry(l.part).or_default();
            p.sessions.insert(l.key.name.to_string(), l.version);
            p.rows.push(l.row);
            if !l.kept {
                p.unkept.push(l.key);
            }
        }
        for e in batch.groups {
            if let Some(p) = parts.get_mut(&e.part) {
                p.groups.push((e.messages, e.tool_calls));
            }
        }
    }
    let sessions = owner_part.len();
    // A reply whose agent recorded no usage is no usage row: the table holds what was spent.
    for record in collector.finish().into_iter().filter(|r| r.recorded) {
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
            let path = |t: Table| file_path(dir, t.name(), name, &machine.id);
            let previous = old_parts.get(name);
            let whole = previous.is_none_or(|e| e.sessions != entry.sessions)
                || Table::ALL.iter().any(|t| !path(*t).is_file());
            let usage = whole || previous.is_none_or(|e| e.usage != entry.usage);
            entries.insert(name.clone(), entry);
            // Row groups kept for a partition that is not rewritten are dropped unused.
            let groups = std::mem::take(&mut part.groups);
            if !usage {
                continue;
            }
            rewritten += 1;
            let mut out = |t: Table| TableFile::create(t, path(t), &schemas, &mut staged);
            if whole {
                let mut f = out(Table::Sessions)?;
                for r in std::mem::take(&mut part.rows) {
                    r.push(&machine, f.rows());
                    f.full()?;
                }
                f.finish()?;
                let (mut mf, mut tf) = (out(Table::Messages)?, out(Table::ToolCalls)?);
                for (m, t) in groups {
                    mf.splice(m)?;
                    tf.splice(t)?;
                }
                // Sessions whose rows pass 1 did not keep (unchanged ones of a partition
                // that moved, or past the budget), read again on every core, a window of
                // them at a time so only that many row groups are held at once.
                let unkept = std::mem::take(&mut part.unkept);
                let window = readers() * 256;
                for keys in unkept.chunks(window) {
                    let batches = par_batches(keys, |keys| -> Result<Vec<Encoded>> {
                        let mut gather = Gather::new(&schemas, dir, &machine.id);
                        for key in keys {
                            if let Ok(session) = fs.load_marked(key) {
                                gather.session(name, &session)?;
                            }
                        }
                        gather.finish()
                    });
                    for groups in batches {
                        for e in groups? {
                            mf.splice(e.messages)?;
                            tf.splice(e.tool_calls)?;
                        }
                    }
                }
                mf.finish()?;
                tf.finish()?;
            }
            let mut f = out(Table::Usage)?;
            for r in std::mem::take(&mut part.usage) {
                r.push(f.rows());
                f.full()?;
            }
            f.finish()?;
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
        for t in Table::ALL {
            let path = file_path(dir, t.name(), name, &machine.id);
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

// ----- writing ----------------------------------------------------------------------------

/// A Parquet file being written under its temporary name: row groups encoded elsewhere
/// spliced in as they are, or rows pushed here and encoded a row group per
/// [`ROW_GROUP_BYTES`].
struct TableFile<'a> {
    table: Table,
    tmp: PathBuf,
    schemas: &'a Schemas,
    writer: SerializedFileWriter<File>,
    rows: Rows,
}

impl<'a> TableFile<'a> {
    /// Create the temporary file of `path`, noted in `staged` (temporary, final) before it
    /// is created, so a failure removes a half-written file too.
    fn create(
        table: Table,
        path: PathBuf,
        schemas: &'a Schemas,
        staged: &mut Vec<(PathBuf, PathBuf)>,
    ) -> Result<TableFile<'a>> {
        let tmp = tmp_path(&path);
        staged.push((tmp.clone(), path));
        if let Some(dir) = tmp.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let file = File::create(&tmp).map_err(io(&tmp))?;
        let schema = schemas.of(table);
        let writer = SerializedFileWriter::new(file, schema.root.clone(), schema.props.clone())
            .map_err(|source| Error::Parquet {
                path: tmp.clone(),
                source,
            })?;
        Ok(TableFile {
            table,
            tmp,
            schemas,
            writer,
            rows: Rows::new(table),
        })
    }

    /// Where to push this file's rows; [`TableFile::full`] after each.
    fn rows(&mut self) -> &mut Rows {
        &mut self.rows
    }

    /// Write the rows pushed as a row group once they reach [`ROW_GROUP_BYTES`].
    fn full(&mut self) -> Result<()> {
        if self.rows.weight >= ROW_GROUP_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows.len == 0 {
            return Ok(());
        }
        let rows = std::mem::replace(&mut self.rows, Rows::new(self.table));
        let group = rows.encode(self.schemas).map_err(|source| Error::Parquet {
            path: self.tmp.clone(),
            source,
        })?;
        self.splice(group)
    }

    /// Append a row group encoded elsewhere.
    fn splice(&mut self, group: Group) -> Result<()> {
        if group.rows == 0 {
            return Ok(());
        }
        let pq = |source| Error::Parquet {
            path: self.tmp.clone(),
            source,
        };
        let mut rg = self.writer.next_row_group().map_err(pq)?;
        for (bytes, close) in group.chunks {
            rg.append_column(&bytes, close).map_err(pq)?;
        }
        rg.close().map_err(pq)?;
        Ok(())
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

#[cfg(test)]
mod tests;
