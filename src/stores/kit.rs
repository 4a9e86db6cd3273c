//! What every store repeats, written once: directory listing, root discovery, the few JSON
//! accessors the `Value`-based parsers share, loose field types for the typed ones,
//! placeholders for binary data, one rule for unique names, and [`SessionBuilder`], which
//! owns the session-level bookkeeping every format needs (tool calls paired with their
//! results, usage counted once per API reply, the title from the first real prompt, times
//! from the messages).
//!
//! A store module then only says what is particular to its format: where its files are and
//! how a record maps to a [`Message`]. Stores parse records into typed, borrowed
//! `serde::Deserialize` structs (unknown fields and variants skipped), so a record costs one
//! pass and no `Value` tree: rendering is bound by parsing, and a tree per line (an
//! `IndexMap` per object) cost more than the rest of loading. Where a format's fields change
//! type between versions or under corruption, [`Loose`], [`Obj`] and [`Content`] read them
//! as the `Value` accessors did: a field of an unexpected type is absent, never an error
//! that costs the record.

use super::{Env, Root};
use crate::model::{self, Agent, Message, MessageKind, Role, Session, ToolResult};
use chrono::{DateTime, Utc};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde::de::value::MapAccessDeserializer;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// Longest title taken from a prompt, in characters.
pub const TITLE_CHARS: usize = 100;

// ---------------------------------------------------------------------------------------
// Files

/// Every entry of `dir`, sorted by path; nothing when it cannot be read (logged when it
/// exists, so a missing optional directory stays quiet).
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let Some(rd) = read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    // One parent: by name, bytewise (as `Path`'s order, without its per-component walk).
    v.sort_unstable_by(|a, b| a.file_name().cmp(&b.file_name()));
    v
}

/// `dir`'s entries, or `None` when it cannot be read (logged when it exists, so a missing
/// optional directory stays quiet).
fn read_dir(dir: &Path) -> Option<std::fs::ReadDir> {
    match std::fs::read_dir(dir) {
        Ok(rd) => Some(rd),
        Err(e) => {
            if dir.exists() {
                log::warn!("cannot read {}: {e}", dir.display());
            }
            None
        }
    }
}

/// What a directory entry is, from the directory itself where the file system says (no
/// `stat`), following a symlink only when there is one: listing a project of 10,000
/// sessions should cost one `getdents` pass, not a `stat` per file per question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryType {
    File,
    Dir,
    Other,
}

/// Sorted entries of `dir` with their types (see [`EntryType`]).
pub fn typed_entries(dir: &Path) -> Vec<(PathBuf, EntryType)> {
    let Some(rd) = read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(PathBuf, EntryType)> = rd
        .flatten()
        .map(|e| {
            let path = e.path();
            let t = match e.file_type() {
                Ok(t) if t.is_symlink() => std::fs::metadata(&path).map(|m| m.file_type()).ok(),
                t => t.ok(),
            };
            let t = match t {
                Some(t) if t.is_file() => EntryType::File,
                Some(t) if t.is_dir() => EntryType::Dir,
                _ => EntryType::Other,
            };
            (path, t)
        })
        .collect();
    v.sort_unstable_by(|a, b| a.0.file_name().cmp(&b.0.file_name()));
    v
}

/// Sorted real subdirectories of `dir`; hidden ones and symlinks skipped (a symlinked
/// directory could loop, and what it points at is listed where it lives).
pub fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// `dir` if it is a directory, else its nearest ancestor that is: where something that
/// may appear under `dir` would move a directory's mtime, for [`super::Store::glance`].
pub fn nearest_dir(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.is_dir()).map(Path::to_path_buf)
}

/// `dir` and every directory below it to `depth` levels, symlinks not followed; nothing
/// when `dir` is not a directory. For [`super::Store::glance`].
pub fn dirs_under(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        dirs_below(dir, depth, &mut out);
    }
    out
}

fn dirs_below(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    if depth == 0 {
        return;
    }
    for sub in subdirs_all(dir) {
        dirs_below(&sub, depth - 1, out);
    }
}

/// Real subdirectories of `dir`, hidden ones included.
fn subdirs_all(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// Open a store file for reading, refusing anything that is not a regular file.
///
/// Every store reads through this. A session file can become a FIFO, a device (a symlink to
/// `/dev/zero`), a socket or a directory between listing and loading; a plain `open` of a
/// FIFO blocks until a writer comes (forever, on a FUSE worker thread) and `/dev/zero`
/// never ends. The open is non-blocking, so it returns at once, and `fstat` on the opened
/// descriptor (not the path, which can change again) decides.
pub fn open_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if f.metadata()?.is_file() {
        Ok(f)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
    }
}

/// The whole of a regular file (see [`open_file`]).
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = open_file(path)?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

/// The file name as UTF-8, or `""` when it has none or is not UTF-8 (callers that keep
/// non-UTF-8 names use [`crate::names::os_id`]).
pub fn file_name(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

// ---------------------------------------------------------------------------------------
// Roots

/// Where an agent keeps its sessions, as data: `(variable, subpath)` overrides in priority
/// order, then `$HOME`-relative defaults, then the agent-mux spec paths.
pub struct Places<'a> {
    pub env: &'a [(&'a str, &'a str)],
    pub defaults: &'a [&'a str],
    pub spec: &'a [&'a str],
}

/// The candidate roots of [`Places`], each tagged with what put it on the list. A set
/// override replaces the defaults (as the agents themselves do); spec paths are always
/// looked at too, since peers and older builds write there.
pub fn roots(env: &Env, agent: Agent, places: &Places<'_>) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    let mut push = |r: Root| {
        if !out.iter().any(|x| x.path == r.path) {
            out.push(r);
        }
    };
    let mut overridden = false;
    for (var, sub) in places.env {
        if let Some(base) = env.path_var(var) {
            overridden = true;
            push(Root::new(agent, join(&base, sub), *var));
        }
    }
    if !overridden {
        for d in places.defaults {
            push(Root::new(agent, env.home.join(d), "default"));
        }
    }
    for d in places.spec {
        push(Root::new(agent, env.home.join(d), "spec"));
    }
    out
}

fn join(base: &Path, sub: &str) -> PathBuf {
    if sub.is_empty() {
        base.to_path_buf()
    } else {
        base.join(sub)
    }
}

// ---------------------------------------------------------------------------------------
// JSON accessors for the `Value`-based parsers

/// Appends `para` to `out` as a paragraph of its own: after a blank line when `out` holds
/// text (a tool result's text, then what else its JSON object held).
pub fn push_paragraph(out: &mut String, para: &str) {
    if !out.is_empty() {
        out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
    }
    out.push_str(para);
}

/// A string field.
pub fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The first of `keys` that holds a string (formats that renamed a field over time).
pub fn str_any<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| str_field(v, k))
}

/// A count: a non-negative integer or float; 0 when absent or of another type.
pub fn u64_field(v: &Value, key: &str) -> u64 {
    match v.get(key) {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .unwrap_or(0),
        _ => 0,
    }
}

/// The value at a path of object keys.
pub fn value_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, k| cur.get(k))
}

/// The string at a path of object keys.
pub fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    value_at(v, path)?.as_str()
}

/// The count at a path of object keys; 0 when absent or not a number.
pub fn u64_at(v: &Value, path: &[&str]) -> u64 {
    value_at(v, path)
        .and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f.max(0.0) as u64)))
        .unwrap_or(0)
}

/// Read and parse one whole JSON file of at most `max_bytes` (JSON-tree stores). Invalid
/// UTF-8 is read lossily rather than refused. The error is a warning naming the file by
/// `label`.
pub fn read_json(path: &Path, label: &str, max_bytes: u64) -> Result<Value, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{label}: cannot read: {e}"))?;
    if meta.len() > max_bytes {
        return Err(format!(
            "{label}: {} bytes, too large to parse, skipped",
            meta.len()
        ));
    }
    let bytes = read_file(path).map_err(|e| format!("{label}: cannot read: {e}"))?;
    let parsed = match std::str::from_utf8(&bytes) {
        Ok(text) => serde_json::from_str::<Value>(text),
        Err(_) => serde_json::from_str::<Value>(&String::from_utf8_lossy(&bytes)),
    };
    parsed.map_err(|e| format!("{label}: invalid JSON: {e}"))
}

/// How much of a session file that does not parse is shown raw (`unparsed file` context).
pub const MAX_RAW_CHARS: usize = 64 << 10;

/// The first [`MAX_RAW_CHARS`] characters of a file that does not parse, invalid UTF-8
/// replaced.
pub fn raw_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .take(MAX_RAW_CHARS)
        .collect()
}

/// The bytes of one whole session file of at most `max_bytes`, or `None` after a warning
/// on `b` naming it `file` (too large, unreadable): what every store of one-document
/// sessions reads before it parses.
pub fn read_capped(
    b: &mut SessionBuilder,
    path: &Path,
    file: &str,
    max_bytes: u64,
) -> Option<Vec<u8>> {
    let read = std::fs::metadata(path).and_then(|m| {
        if m.len() > max_bytes {
            Ok(Err(m.len()))
        } else {
            read_file(path).map(Ok)
        }
    });
    match read {
        Ok(Ok(bytes)) => Some(bytes),
        Ok(Err(len)) => {
            b.warn(format!("{file}: {len} bytes, too large to parse, skipped"));
            None
        }
        Err(e) => {
            b.warn(format!("{file}: cannot read: {e}"));
            None
        }
    }
}

/// Parse an ISO 8601 / RFC 3339 timestamp.
pub fn parse_rfc3339(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

// ---------------------------------------------------------------------------------------
// Typed parsing helpers, for `#[serde(deserialize_with = "...")]`

/// A string field that borrows from the input when it holds no escapes; `null` reads as
/// empty. With `#[serde(default, borrow, deserialize_with = "kit::cow_str")]` a field of
/// type `Cow<'a, str>` is empty when absent or null instead of failing the whole record.
pub fn cow_str<'de: 'a, 'a, D: serde::Deserializer<'de>>(d: D) -> Result<Cow<'a, str>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Cow<'de, str>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string or null")
        }
        fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Cow::Borrowed(v))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Cow::Owned(v.to_string()))
        }
        fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Cow::Owned(v))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Cow::Borrowed(""))
        }
    }
    d.deserialize_any(V)
}

/// A count: a non-negative integer or float; `null`, negatives and other types read as 0,
/// so an odd counter never costs the record that holds it.
pub fn count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(<Loose<'_> as serde::Deserialize>::deserialize(d)?.count())
}

/// For `Option<T>` fields that must tell `null` from absent: `Some` whenever the key is
/// there (use with `#[serde(default, deserialize_with = "kit::present")]`).
pub fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A field read the way the `Value` accessors read it: a string, boolean or number is kept,
/// a value of any other type (or an unexpected one) is skipped without a tree and reads as
/// absent, so an odd field never costs the record that holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Loose<'a> {
    #[default]
    Other,
    Str(Cow<'a, str>),
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl<'a> Loose<'a> {
    /// The string, if it is one ([`str_field`]).
    pub fn str(&self) -> Option<&str> {
        match self {
            Loose::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A non-empty string, owned.
    pub fn nonempty(&self) -> Option<String> {
        self.str().filter(|s| !s.is_empty()).map(str::to_string)
    }

    /// `true` only for a JSON `true`.
    pub fn is_true(&self) -> bool {
        matches!(self, Loose::Bool(true))
    }

    /// As [`u64_field`]: a non-negative integer or float, else 0.
    pub fn count(&self) -> u64 {
        match *self {
            Loose::U64(n) => n,
            Loose::F64(f) if f >= 0.0 => f as u64,
            _ => 0,
        }
    }

    /// Any number as `f64` (`Value::as_f64`).
    pub fn f64(&self) -> Option<f64> {
        match *self {
            Loose::U64(n) => Some(n as f64),
            Loose::I64(n) => Some(n as f64),
            Loose::F64(f) => Some(f),
            _ => None,
        }
    }

    /// An integer that fits `i64` (`Value::as_i64`); floats are none.
    pub fn i64(&self) -> Option<i64> {
        match *self {
            Loose::U64(n) => i64::try_from(n).ok(),
            Loose::I64(n) => Some(n),
            _ => None,
        }
    }

    /// As [`super::parse_time`]: RFC 3339 text or epoch milliseconds.
    pub fn time(&self) -> Option<DateTime<Utc>> {
        let ms = match *self {
            Loose::Str(ref s) => return parse_rfc3339(s),
            Loose::U64(n) => n as f64,
            Loose::I64(n) => n as f64,
            Loose::F64(f) => f,
            _ => return None,
        };
        DateTime::<Utc>::from_timestamp_millis(ms as i64)
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Loose<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v)))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Loose::Bool(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Loose::U64(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                // serde_json hands non-negative integers to `visit_u64`.
                Ok(if v >= 0 {
                    Loose::U64(v as u64)
                } else {
                    Loose::I64(v)
                })
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Loose::F64(v))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Loose::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(a).map(|_| Loose::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(a).map(|_| Loose::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// An object read as `T`; a value of any other type is skipped and reads as `None` (the
/// typed form of `v.get(key).filter(Value::is_object)`).
#[derive(Debug)]
pub struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Obj<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(a)).map(|t| Obj(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(a).map(|_| Obj(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A `content` field: a string, a list of blocks `B` (objects), or something else, kept as
/// JSON only then (a Claude `tool_result` shows an odd content as its JSON text).
#[derive(Debug, Default)]
pub enum Content<'a, B> {
    #[default]
    Null,
    Text(Cow<'a, str>),
    Blocks(Vec<Item<'a, B>>),
    Other(Value),
}

/// One element of a block list: a bare string, a block, or anything else (ignored).
#[derive(Debug)]
pub enum Item<'a, B> {
    Text(Cow<'a, str>),
    Block(Box<B>),
    Other,
}

impl<'de: 'a, 'a, B: serde::Deserialize<'de>> serde::Deserialize<'de> for Content<'a, B> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<B>(PhantomData<B>);
        impl<'de, B: serde::Deserialize<'de>> Visitor<'de> for V<B> {
            type Value = Content<'de, B>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = a.next_element()? {
                    items.push(item);
                }
                Ok(Content::Blocks(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                <Value as serde::Deserialize>::deserialize(MapAccessDeserializer::new(a))
                    .map(Content::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Content::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Content::Other(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Content::Other(v.into()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Content::Other(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Content::Other(v.into()))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de: 'a, 'a, B: serde::Deserialize<'de>> serde::Deserialize<'de> for Item<'a, B> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<B>(PhantomData<B>);
        impl<'de, B: serde::Deserialize<'de>> Visitor<'de> for V<B> {
            type Value = Item<'de, B>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Item::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Item::Text(Cow::Owned(v.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                B::deserialize(MapAccessDeserializer::new(a)).map(|b| Item::Block(Box::new(b)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(a).map(|_| Item::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Item::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Item::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Item::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Item::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Item::Other)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

// ---------------------------------------------------------------------------------------
// Placeholders: binary data is measured, never kept

/// `[image: image/png, 12.3 KB]` for base64 `data` of a `kind` of attachment.
pub fn base64_placeholder(kind: &str, mime: Option<&str>, data: Option<&str>) -> String {
    model::placeholder(kind, mime, data.map(model::base64_decoded_len))
}

/// The placeholder for a `data:<mime>;base64,<data>` URL; other URLs are shown as
/// `[image: <url>]` (they are references, not payloads).
pub fn data_url_placeholder(url: &str) -> String {
    match url.strip_prefix("data:").and_then(|r| r.split_once(',')) {
        Some((head, data)) => {
            let mime = head.split(';').next().filter(|m| !m.is_empty());
            let kind = match mime {
                Some(m) if !m.starts_with("image/") => "attachment",
                _ => "image",
            };
            base64_placeholder(kind, mime, Some(data))
        }
        None => format!("[image: {url}]"),
    }
}

// ---------------------------------------------------------------------------------------
// Names

/// The one rule for names a store makes up (branches, subagents); it lives in [`crate::names`]
/// because the renderer names branches and subagents by it too.
pub use crate::names::unique_name;

// ---------------------------------------------------------------------------------------
// Titles

/// One session per file, named by the file's stem: the listing of every store whose
/// session files `files` finds in each root (one JSON document or one Markdown chat per
/// session).
pub fn listed_by_stem(roots: &[Root], files: impl Fn(&Path) -> Vec<PathBuf>) -> Vec<super::Listed> {
    let mut out = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        for path in files(&root.path) {
            let stem = path.file_stem().map(crate::names::os_id);
            out.push(super::Listed::file(stem.unwrap_or_default(), path, i));
        }
    }
    out
}

/// The glance of stores whose roots are directories of session files (gp.nvim, parrot.nvim,
/// CopilotChat.nvim, ellama, ShellGPT): each root directory, whose names the listing reads;
/// a root that is one session file is its own source. `None` while a root is missing.
pub fn root_dirs_glance(roots: &[Root]) -> Option<super::Glance> {
    let mut g = super::Glance::default();
    for root in roots {
        if root.path.is_file() {
            continue;
        }
        if !root.path.is_dir() {
            return None;
        }
        g.dirs.push(root.path.clone());
    }
    Some(g)
}

/// The glance of stores whose roots are a directory of session files or a data directory
/// with them in `sessions/` (Continue, Nanocoder): each root directory and its `sessions/`;
/// a root that is one session file is its own source. `None` while a root is missing.
pub fn root_and_sessions_glance(roots: &[Root]) -> Option<super::Glance> {
    let mut g = super::Glance::default();
    for root in roots {
        if root.path.is_file() {
            continue;
        }
        if !root.path.is_dir() {
            return None;
        }
        g.dirs.push(root.path.clone());
        let sessions = root.path.join("sessions");
        if sessions.is_dir() {
            g.dirs.push(sessions);
        }
    }
    Some(g)
}

/// A title from a prompt: its first non-empty line, whitespace collapsed, at most
/// [`TITLE_CHARS`] characters. `None` for an empty prompt.
pub fn title_from_text(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let one: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(one.chars().take(TITLE_CHARS).collect())
}

// ---------------------------------------------------------------------------------------
// What could not be parsed

/// Records, or fields of records, a store could not parse, counted by kind of problem.
///
/// Nothing a store holds is dropped silently: each kind of problem costs one warning in
/// `meta.json` with its count and the first place it occurred (`3 messages rows could not
/// be parsed: tool_calls is not JSON (first: row 17: EOF while parsing …)`), never one
/// warning per record, so a store with a million bad rows still has a
/// short `meta.json`. The raw text itself is shown by the store, in the session, where the
/// record stands: [`SessionBuilder::unparsed`] shows it as a collapsed context message
/// labelled `unparsed <field>`; a tool call whose arguments are not JSON keeps its name and
/// id and holds the raw text as its input.
#[derive(Debug, Default, Clone)]
pub struct Unparsed {
    /// `(what, problem)` -> (count, first place), in the order first seen.
    kinds: Vec<((String, String), usize, String)>,
}

impl Unparsed {
    /// Count one `what` (`messages rows`, `lines`, `message blobs`) that could not be parsed
    /// because of `problem` (`tool_calls is not JSON`); `first` says where and why, and is
    /// kept for the first one only.
    pub fn note(&mut self, what: &str, problem: &str, first: impl FnOnce() -> String) {
        match self
            .kinds
            .iter_mut()
            .find(|(k, _, _)| k.0 == what && k.1 == problem)
        {
            Some((_, n, _)) => *n += 1,
            None => self
                .kinds
                .push(((what.to_string(), problem.to_string()), 1, first())),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Take the counts of `other` (a branch's builder) into these.
    pub fn absorb(&mut self, other: Unparsed) {
        for ((what, problem), n, first) in other.kinds {
            match self
                .kinds
                .iter_mut()
                .find(|(k, _, _)| k.0 == what && k.1 == problem)
            {
                Some((_, m, _)) => *m += n,
                None => self.kinds.push(((what, problem), n, first)),
            }
        }
    }

    /// One warning per kind of problem, in the order first seen.
    pub fn warnings(&self) -> Vec<String> {
        self.kinds
            .iter()
            .map(|((what, problem), n, first)| {
                format!("{n} {what} could not be parsed: {problem} (first: {first})")
            })
            .collect()
    }
}

/// A JSON text that should parse: `Ok(None)` when it is empty or `null`, `Err(error)` when
/// it is not JSON (the caller counts it in [`Unparsed`] and shows the text).
pub fn json_text(s: &str) -> Result<Option<Value>, String> {
    if s.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Null) => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(e) => Err(e.to_string()),
    }
}

/// A tool call's arguments as stored: JSON text becomes its value; text that is not JSON
/// (cut off, say) is kept verbatim as a JSON string, so the call still shows what the model
/// sent, and is counted in `unparsed` under `what`.
pub fn call_arguments(
    raw: &str,
    what: &str,
    unparsed: &mut Unparsed,
    place: impl FnOnce() -> String,
) -> Value {
    if raw.trim().is_empty() {
        return Value::String(raw.to_string());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => v,
        Err(e) => {
            unparsed.note(what, "tool call arguments are not JSON", || {
                format!("{}: {e}", place())
            });
            Value::String(raw.to_string())
        }
    }
}

/// A tool call's arguments field as the OpenAI-shaped formats store it: JSON text goes
/// through [`call_arguments`], an object or other value is taken as it is, and an absent
/// field is `null`.
pub fn call_input(
    field: Option<&Value>,
    what: &str,
    unparsed: &mut Unparsed,
    place: impl FnOnce() -> String,
) -> Value {
    match field {
        Some(Value::String(s)) => call_arguments(s, what, unparsed, place),
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

// ---------------------------------------------------------------------------------------
// The session builder

/// Builds a [`Session`] message by message and does the bookkeeping every store shares.
///
/// - [`push`](Self::push) registers the message's tool calls, so a later
///   [`tool_result`](Self::tool_result) names its tool even when the result record does not,
///   and [`attach_output`](Self::attach_output) can fill a call's output in place for
///   formats that keep call and result in one record.
/// - [`usage_once`](Self::usage_once) lets a store count usage once per API reply when the
///   format repeats a reply over several records.
/// - [`finish`](Self::finish) sets the title from the first real prompt when the store found
///   none (else from [`title_or_placeholder`](Self::title_or_placeholder)'s placeholder),
///   `created_at`/`updated_at` from message times when the store has none, and holds each
///   tool output once.
pub struct SessionBuilder {
    pub s: Session,
    /// An agent's name for a session it never named (`New Session`): the title only when
    /// no prompt gives one.
    placeholder_title: Option<String>,
    /// tool call id -> (message index, call index)
    calls: HashMap<String, (usize, usize)>,
    usage_keys: HashSet<String>,
    /// What could not be parsed; one warning per kind at [`finish`](Self::finish).
    pub unparsed: Unparsed,
}

impl SessionBuilder {
    pub fn new(agent: Agent, id: impl Into<String>) -> SessionBuilder {
        SessionBuilder {
            s: Session::new(agent, id),
            placeholder_title: None,
            calls: HashMap::new(),
            usage_keys: HashSet::new(),
            unparsed: Unparsed::default(),
        }
    }

    /// Take `title` as the session's title, unless `is_placeholder` says it is the name the
    /// agent gives a session it has not named yet: then the first prompt names the session,
    /// and the placeholder only when there is none. A blank title is no title.
    pub fn title_or_placeholder(
        &mut self,
        title: Option<String>,
        is_placeholder: impl Fn(&str) -> bool,
    ) {
        let Some(t) = title.filter(|t| !t.trim().is_empty()) else {
            return;
        };
        if is_placeholder(t.trim()) {
            self.placeholder_title = Some(t);
        } else {
            self.s.title = Some(t);
        }
    }

    pub fn warn(&mut self, w: impl Into<String>) {
        self.s.warnings.push(w.into());
    }

    /// Append a message; its tool calls become known by id.
    pub fn push(&mut self, m: Message) {
        let mi = self.s.messages.len();
        for (ci, c) in m.tool_calls.iter().enumerate() {
            if !c.tool_call_id.is_empty() {
                self.calls.insert(c.tool_call_id.clone(), (mi, ci));
            }
        }
        self.s.messages.push(m);
    }

    /// The last message, to extend a reply that spans several records.
    pub fn last_mut(&mut self) -> Option<&mut Message> {
        self.s.messages.last_mut()
    }

    /// The tool name of a known call.
    pub fn tool_name(&self, call_id: &str) -> Option<&str> {
        let (mi, ci) = *self.calls.get(call_id)?;
        Some(self.s.messages[mi].tool_calls[ci].tool_name.as_str())
    }

    /// Append the result of a call as its own `tool` message (prefix-stable: a result that
    /// arrives later only appends). `name` is used when the call is unknown.
    pub fn tool_result(
        &mut self,
        call_id: &str,
        name: Option<&str>,
        output: String,
        is_error: bool,
        timestamp: Option<DateTime<Utc>>,
    ) {
        let tool_name = self
            .tool_name(call_id)
            .or(name)
            .unwrap_or_default()
            .to_string();
        self.s.messages.push(Message {
            role: Role::Tool,
            timestamp,
            tool_result: Some(ToolResult {
                tool_call_id: call_id.to_string(),
                tool_name,
                output,
                is_error,
            }),
            ..Message::default()
        });
    }

    /// Set the output of a known call in place (formats that store call and result in one
    /// record). `false` when the call is unknown.
    pub fn attach_output(&mut self, call_id: &str, output: String, is_error: bool) -> bool {
        let Some(&(mi, ci)) = self.calls.get(call_id) else {
            return false;
        };
        let c = &mut self.s.messages[mi].tool_calls[ci];
        c.output = Some(output);
        c.is_error = Some(is_error);
        true
    }

    /// `true` the first time `key` is seen: usage of one API reply split over several
    /// records is counted on the first and never again.
    pub fn usage_once(&mut self, key: &str) -> bool {
        self.usage_keys.insert(key.to_string())
    }

    /// Injected context, shown collapsed and never a prompt (see [`MessageKind::Context`]).
    pub fn context(&mut self, label: &str, text: String, timestamp: Option<DateTime<Utc>>) {
        self.push(Message {
            role: Role::System,
            kind: MessageKind::Context,
            label: Some(label.to_string()),
            content: text,
            timestamp,
            ..Message::default()
        });
    }

    /// A record or field that could not be parsed: counted under `what`/`problem` (see
    /// [`Unparsed`]) and its `raw` text shown verbatim where it stands, as context labelled
    /// `unparsed <label>` (`unparsed tool_calls`, `unparsed line`).
    pub fn unparsed(
        &mut self,
        what: &str,
        problem: &str,
        first: impl FnOnce() -> String,
        label: &str,
        raw: &str,
        timestamp: Option<DateTime<Utc>>,
    ) {
        self.unparsed.note(what, problem, first);
        self.context(&format!("unparsed {label}"), raw.to_string(), timestamp);
    }

    /// A session event that is not conversation (model change, info notice, error).
    pub fn event(&mut self, text: String, timestamp: Option<DateTime<Utc>>) {
        self.push(Message {
            role: Role::System,
            kind: MessageKind::Event,
            content: text,
            timestamp,
            ..Message::default()
        });
    }

    /// The finished session: title, times and the one-copy rule applied.
    pub fn finish(mut self) -> Session {
        let s = &mut self.s;
        s.warnings.extend(self.unparsed.warnings());
        if s.title.is_none() {
            s.title = s
                .messages
                .iter()
                .filter(|m| m.role == Role::User && m.kind == MessageKind::Normal)
                .find_map(|m| title_from_text(&m.content))
                .or(self.placeholder_title.take());
        }
        let times = || s.messages.iter().filter_map(|m| m.timestamp);
        if s.created_at.is_none() {
            s.created_at = times().min();
        }
        let last = times().max();
        if s.updated_at.is_none() || last > s.updated_at {
            s.updated_at = last.or(s.updated_at);
        }
        s.drop_duplicate_text();
        self.s
    }
}

/// What was read of files shared by many sessions (an index beside them, a session file's
/// first line), kept per file until its size or mtime changes: every session that looks a
/// file up gets the same reading, and the file is read again only once it changed. A file
/// that is missing reads as `T::default()` and is not kept.
pub struct PerVersion<T> {
    read: std::sync::Mutex<HashMap<PathBuf, (FileVersion, T)>>,
}

/// A file's size and mtime when it was read.
type FileVersion = Option<(u64, std::time::SystemTime)>;

impl<T> Default for PerVersion<T> {
    fn default() -> PerVersion<T> {
        PerVersion {
            read: std::sync::Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Clone + Default> PerVersion<T> {
    /// `read(path)`, or what it gave for the file as it is now.
    pub fn get(&self, path: &Path, read: impl FnOnce(&Path) -> T) -> T {
        let version = super::stat_version(path);
        if version.is_none() {
            return T::default();
        }
        if let Ok(cache) = self.read.lock() {
            if let Some((_, got)) = cache.get(path).filter(|(v, _)| *v == version) {
                return got.clone();
            }
        }
        let got = read(path);
        if let Ok(mut cache) = self.read.lock() {
            cache.insert(path.to_path_buf(), (version, got.clone()));
        }
        got
    }
}

/// `167094` -> `167,094`: a token count in an event's text, grouped as the transcript
/// groups the counts it prints.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;

    #[test]
    fn data_urls_become_placeholders_without_their_bytes() {
        let url = format!("data:image/png;base64,{}", "A".repeat(4000));
        assert_eq!(data_url_placeholder(&url), "[image: image/png, 3.0 KB]");
        assert_eq!(
            data_url_placeholder("https://x/y.png"),
            "[image: https://x/y.png]"
        );
        assert_eq!(
            data_url_placeholder("data:application/pdf;base64,AAAA"),
            "[attachment: application/pdf, 3 B]"
        );
    }

    #[test]
    fn builder_pairs_results_titles_and_times() {
        let t0 = parse_rfc3339("2026-01-01T10:00:00Z");
        let t1 = parse_rfc3339("2026-01-01T10:05:00Z");
        let mut b = SessionBuilder::new(Agent::Codex, "x");
        b.context("environment context", "<env/>".into(), t0);
        b.push(Message {
            role: Role::User,
            content: "\n  fix   the build\nplease".into(),
            timestamp: t0,
            ..Message::default()
        });
        b.push(Message {
            role: Role::Assistant,
            tool_calls: vec![ToolCall {
                tool_call_id: "c1".into(),
                tool_name: "shell".into(),
                ..ToolCall::default()
            }],
            ..Message::default()
        });
        b.tool_result("c1", None, "ok".into(), false, t1);
        assert!(b.usage_once("r1") && !b.usage_once("r1"));
        let s = b.finish();
        assert_eq!(s.title.as_deref(), Some("fix the build"));
        assert_eq!((s.created_at, s.updated_at), (t0, t1));
        let r = s.messages[3].tool_result.as_ref().expect("result");
        assert_eq!((r.tool_name.as_str(), r.output.as_str()), ("shell", "ok"));
    }

    #[test]
    fn an_override_replaces_defaults_and_spec_paths_stay() {
        let env = Env {
            home: PathBuf::from("/h"),
            vars: [("X_HOME".to_string(), "/x".to_string())].into(),
        };
        let places = Places {
            env: &[("X_HOME", "sessions")],
            defaults: &[".x/sessions"],
            spec: &[".spec/x"],
        };
        let got: Vec<(PathBuf, String)> = roots(&env, Agent::Codex, &places)
            .into_iter()
            .map(|r| (r.path, r.how))
            .collect();
        assert_eq!(
            got,
            [
                (PathBuf::from("/x/sessions"), "X_HOME".to_string()),
                (PathBuf::from("/h/.spec/x"), "spec".to_string())
            ]
        );
    }
}
