//! Streaming JSONL reading shared by every line-oriented store.
//!
//! Agents append one record per `write` and readers race them, so a file read while the agent
//! writes ends in a partial line; pi and omp skip malformed lines themselves. This reader
//! streams (it never holds the file, only one line), ignores an unfinished last line without
//! its newline (it is most likely still being written), and reports each problem once as a
//! warning with its line number.
//!
//! A line is not always one record: real pi files hold lines where two records were written
//! back to back with no newline between them (two writers racing on one file). Every
//! complete JSON value on a line is kept, in order, with a warning naming the line; only
//! bytes that are no JSON at all are skipped (up to the next `{` or `[`).
//!
//! Every record therefore has a position, not just a line: [`Pos`] is the line and the
//! record's place among the values of that line. A store that makes ids from positions (pi's
//! id-less v1 files) gets one id per record, so two records glued onto one line never share
//! an id, and the same bytes always give the same ids.
//!
//! Nothing read is dropped silently: [`read_records`] also hands back the raw text of every
//! line it could not turn into records ([`Unparsed`]), which a store shows in the session as
//! [`UNPARSED_FILE`] ([`unparsed_file`]) beside the warning that counts it.

use serde::de::IgnoredAny;
use serde_json::Value;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// Warnings beyond this many per file are summarised in one line.
const MAX_WARNINGS: usize = 20;

/// Where a record sits in its file: its 1-based line and its place among the JSON values of
/// that line (0 for the first; more only on a line holding several records).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pos {
    pub line: usize,
    pub part: usize,
}

impl Pos {
    /// An id for a record that has none of its own: `line-N` for the first record of line N,
    /// `line-N.2`, `line-N.3`, … for the records glued after it. The same bytes always give
    /// the same ids, and no two records of one file share one.
    pub fn id(self) -> String {
        match self.part {
            0 => format!("line-{}", self.line),
            p => format!("line-{}.{}", self.line, p + 1),
        }
    }
}

/// A line (or the part of one) that gave no record: kept so its text stays visible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unparsed {
    /// 1-based line number (a database row's `seq` where the lines come from rows).
    pub line: usize,
    /// Why it was not read, as the warning says.
    pub reason: String,
    /// The line's text (invalid UTF-8 replaced), whole even when some values were recovered.
    pub text: String,
}

/// What one read of a JSONL source found beyond its records.
#[derive(Debug, Default)]
pub struct Scanned {
    /// Problems, each line named once (at most 20 bad lines by number, then a count).
    pub warnings: Vec<String>,
    /// Every line that gave no record, or gave records and bytes that were none, in order.
    pub unparsed: Vec<Unparsed>,
}

/// The session file that holds the raw text of lines a store could not read.
pub const UNPARSED_FILE: &str = "unparsed.txt";

/// `(UNPARSED_FILE, content)` for a session's [`Session::extra_files`](crate::model::Session),
/// `None` when nothing was left unread. Each entry is a `line N: reason` heading, then the
/// line's text as it is in the file, then an empty line.
pub fn unparsed_file(unparsed: &[Unparsed]) -> Option<(String, String)> {
    if unparsed.is_empty() {
        return None;
    }
    let mut out = String::new();
    for u in unparsed {
        out.push_str(&format!("line {}: {}\n{}\n\n", u.line, u.reason, u.text));
    }
    Some((UNPARSED_FILE.to_owned(), out))
}

impl Scanned {
    /// Hand what a read found to the session it was read for: its warnings, and the raw
    /// text of every unread line as [`UNPARSED_FILE`], with the warning that points there.
    pub fn into_session(self, s: &mut crate::model::Session) {
        s.warnings.extend(self.warnings);
        if let Some(file) = unparsed_file(&self.unparsed) {
            s.warnings.push(unparsed_warning(self.unparsed.len()));
            s.extra_files.push(file);
        }
    }
}

/// The warning that points at [`UNPARSED_FILE`] for `n` unread lines.
pub fn unparsed_warning(n: usize) -> String {
    let lines = if n == 1 { "line" } else { "lines" };
    format!("{n} {lines} not shown as messages; their raw text is in {UNPARSED_FILE}")
}

/// Call `f(line_number, value)` for every line that parses as a JSON object or array.
/// Returns the warnings (unreadable file, bad lines, a partial last line) and the lines
/// that gave no value.
pub fn read(path: &Path, mut f: impl FnMut(usize, Value)) -> Scanned {
    match super::kit::open_file(path) {
        Ok(file) => read_from(file, &path.display().to_string(), &mut f),
        Err(e) => cannot_open(path, e),
    }
}

/// As [`read`], from any reader; `name` is used in warnings.
pub fn read_from(r: impl Read, name: &str, f: &mut dyn FnMut(usize, Value)) -> Scanned {
    scan(r, name, &mut |p, text| {
        parse_line(text).map(|v| f(p.line, v))
    })
}

fn cannot_open(path: &Path, e: std::io::Error) -> Scanned {
    Scanned {
        warnings: vec![format!("cannot open {}: {e}", path.display())],
        unparsed: Vec::new(),
    }
}

/// As [`read`], but `f` gets each line's bytes and parses them itself, so a store can
/// deserialize into typed structs that borrow from the line. `f` returns `Err(reason)` for
/// a line it cannot use; that line is skipped and reported like a line that is not JSON.
/// A line with invalid UTF-8 is offered again with the bad bytes replaced.
pub fn read_lines(path: &Path, mut f: impl FnMut(usize, &[u8]) -> Result<(), String>) -> Scanned {
    match super::kit::open_file(path) {
        Ok(file) => scan(file, &path.display().to_string(), &mut |p, b| f(p.line, b)),
        Err(e) => cannot_open(path, e),
    }
}

/// As [`read_lines`], from any reader (a decompressing one, say); `name` is used in warnings.
pub fn read_lines_from(r: impl Read, name: &str, f: &mut LineFn<'_>) -> Scanned {
    scan(r, name, &mut |p, b| f(p.line, b))
}

/// As [`read_lines`], but `f` gets each record's [`Pos`] (so records glued onto one line
/// are told apart), and the raw text of every line that gave no record comes back too.
pub fn read_records(path: &Path, mut f: impl FnMut(Pos, &[u8]) -> Result<(), String>) -> Scanned {
    match super::kit::open_file(path) {
        Ok(file) => scan(file, &path.display().to_string(), &mut f),
        Err(e) => cannot_open(path, e),
    }
}

/// As [`read_records`], from any reader (a decompressing one, say); `name` is used in
/// warnings.
pub fn read_records_from(r: impl Read, name: &str, f: &mut RecordFn<'_>) -> Scanned {
    scan(r, name, f)
}

/// What [`read_lines`] hands each line to: `Err(reason)` skips the line with a warning.
pub type LineFn<'f> = dyn FnMut(usize, &[u8]) -> Result<(), String> + 'f;

/// What [`scan`] hands each record to: `Err(reason)` skips it with a warning.
pub type RecordFn<'f> = dyn FnMut(Pos, &[u8]) -> Result<(), String> + 'f;

/// Each scan's read buffer: half the size from which a buffer gets a mapping of its own
/// ([`crate::alloc`]), so reading a session takes heap memory already faulted in rather than
/// mapping, faulting and unmapping 64 KiB per file (1,500 unmaps in a cold walk of 2,000
/// sessions).
const READ_BUF: usize = crate::alloc::MAP_FROM / 2;

/// `BufRead::read_until(b'\n')`, with the newline found by the `memchr` crate (32 bytes at
/// a time, where the standard library's search looks at 16): every byte of every JSONL
/// session passes through here.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<usize> {
    let mut read = 0;
    loop {
        let (done, used) = {
            let available = match r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            match memchr::memchr(b'\n', available) {
                Some(i) => {
                    buf.extend_from_slice(&available[..=i]);
                    (true, i + 1)
                }
                None => {
                    buf.extend_from_slice(available);
                    (available.is_empty(), available.len())
                }
            }
        };
        r.consume(used);
        read += used;
        if done {
            return Ok(read);
        }
    }
}

/// The one loop behind every reader: lines, the partial last line, bad-line warnings, and
/// the raw text of every line that gave no record.
fn scan(r: impl Read, name: &str, f: &mut RecordFn<'_>) -> Scanned {
    let mut reader = BufReader::with_capacity(READ_BUF, r);
    let mut out = Scanned::default();
    let mut bad = 0usize;
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    // Keeps the raw text of a line that was not (wholly) read; `reason` is its warning.
    let keep = |out: &mut Scanned, line: usize, reason: &str, text: &[u8]| {
        out.unparsed.push(Unparsed {
            line,
            reason: reason.to_owned(),
            text: String::from_utf8_lossy(text).into_owned(),
        });
    };
    loop {
        buf.clear();
        match read_line(&mut reader, &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                out.warnings
                    .push(format!("{name}: read error after line {line_no}: {e}"));
                break;
            }
        }
        line_no += 1;
        let first = Pos {
            line: line_no,
            part: 0,
        };
        let complete = buf.last() == Some(&b'\n');
        let text = trim_ascii(&buf);
        if text.is_empty() {
            continue;
        }
        // serde_json checks the UTF-8 of every string it keeps, so the line is not checked
        // twice. A line it rejects that has invalid UTF-8 is read again lossily, so one bad
        // byte costs one replacement character, not the whole record.
        let lossy;
        let mut bytes = text;
        let mut read = f(first, bytes);
        if read.is_err() && std::str::from_utf8(text).is_err() {
            lossy = String::from_utf8_lossy(text).into_owned();
            bytes = lossy.as_bytes();
            read = f(first, bytes);
        }
        let Err(e) = read else {
            continue;
        };
        // Not one usable record: the line may hold several values written back to back,
        // junk between values, or end in a value still being written. Keep every complete
        // value the store accepts, each at its own position.
        let (spans, broken) = value_spans(bytes);
        if spans == [(0, bytes.len())] {
            // One whole value the store could not use.
            bad += 1;
            let reason = format!("skipped: {e}");
            if bad <= MAX_WARNINGS {
                out.warnings
                    .push(format!("{name}: line {line_no}: {reason}"));
            }
            keep(&mut out, line_no, &reason, bytes);
            continue;
        }
        let kept = spans
            .iter()
            .enumerate()
            .filter(|&(part, &(a, b))| {
                let pos = Pos {
                    line: line_no,
                    part,
                };
                f(pos, &bytes[a..b]).is_ok()
            })
            .count();
        match broken {
            Broken::None => {
                let n = spans.len();
                let all = kept == n;
                let kept = if all {
                    "all".to_string()
                } else {
                    kept.to_string()
                };
                let what = format!("{n} JSON values on one line, {kept} kept");
                out.warnings.push(format!("{name}: line {line_no}: {what}"));
                if !all {
                    keep(&mut out, line_no, &what, bytes);
                }
            }
            Broken::Eof if !complete => {
                // Most likely the agent is still writing this line; its text stays
                // visible in case it never finishes.
                let what = if kept > 0 {
                    format!("{kept} complete JSON values kept, the partial rest ignored")
                } else {
                    "partial last line ignored".to_string()
                };
                let what = format!("{what} ({} bytes)", text.len());
                out.warnings.push(format!("{name}: line {line_no}: {what}"));
                keep(&mut out, line_no, &what, bytes);
                break;
            }
            _ => {
                bad += 1;
                let what = if kept > 0 {
                    format!("{kept} JSON values kept, unparsable bytes skipped: {e}")
                } else {
                    format!("skipped: {e}")
                };
                if bad <= MAX_WARNINGS {
                    out.warnings.push(format!("{name}: line {line_no}: {what}"));
                }
                keep(&mut out, line_no, &what, bytes);
            }
        }
    }
    if bad > MAX_WARNINGS {
        out.warnings.push(format!(
            "{name}: {} more unparsable lines skipped",
            bad - MAX_WARNINGS
        ));
    }
    out
}

/// One line as the typed record `T` (a store's borrowed `Deserialize` struct), read in one
/// pass with no `Value` tree. `T`'s fields must accept any JSON type (see
/// [`super::kit::Loose`]), so only the line's syntax can fail it. When the direct read
/// fails, the `Value` reading decides, so errors, arrays (`Ok(None)`) and duplicate keys
/// (the last wins) come out as they always have; an object is then read as `T` from its
/// re-serialised text, kept in `spare`.
pub fn typed<'a, T: serde::Deserialize<'a>>(
    line: &'a [u8],
    spare: &'a mut String,
) -> Result<Option<T>, String> {
    if line.first() == Some(&b'{') {
        if let Ok(t) = from_line(line) {
            return Ok(Some(t));
        }
    }
    match parse_line(line)? {
        v @ Value::Object(_) => {
            *spare = v.to_string();
            let spare: &'a String = spare;
            serde_json::from_str(spare)
                .map(Some)
                .map_err(|e| format!("invalid JSON: {e}"))
        }
        _ => Ok(None),
    }
}

/// `serde_json::from_slice`, with the line's UTF-8 checked once, 32 bytes at a time
/// (`simdutf8`), and then read as text: reading bytes, serde_json checks each string it
/// keeps on its own, which took a twentieth of a cold walk's parsing. A line that is not
/// UTF-8 is read as bytes, as before (an unread field may hold the bad byte).
pub fn from_line<'a, T: serde::Deserialize<'a>>(line: &'a [u8]) -> serde_json::Result<T> {
    match simdutf8::basic::from_utf8(line) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(line),
    }
}

fn parse_line(text: &[u8]) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(text) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Ok(v),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("invalid JSON: {e}")),
    }
}

/// How a line of several values ended.
#[derive(Debug, PartialEq, Eq)]
enum Broken {
    /// Every byte belonged to a value.
    None,
    /// The last value was cut off by the end of the line.
    Eof,
    /// Some bytes were not JSON and were skipped.
    Junk,
}

/// The byte ranges of every complete JSON object or array in `text`, in order. Bytes that do
/// not parse are skipped up to the next `{` or `[`.
fn value_spans(text: &[u8]) -> (Vec<(usize, usize)>, Broken) {
    let mut out = Vec::new();
    let mut broken = Broken::None;
    let mut at = 0usize;
    // Each round consumes at least one byte, so this ends.
    while at < text.len() {
        let rest = &text[at..];
        let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<IgnoredAny>();
        let mut failed = None;
        let mut start = 0;
        while let Some(v) = stream.next() {
            let end = stream.byte_offset();
            match v {
                Ok(_) => {
                    // Values may be separated by whitespace; the span starts at the value.
                    let lead = rest[start..end]
                        .iter()
                        .position(|c| !c.is_ascii_whitespace())
                        .unwrap_or(0);
                    if matches!(rest.get(start + lead), Some(b'{' | b'[')) {
                        out.push((at + start + lead, at + end));
                    }
                    start = end;
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let Some(e) = failed else {
            break;
        };
        if e.is_eof() {
            // A value that starts but never ends: nothing after it can be a value.
            broken = Broken::Eof;
            break;
        }
        broken = Broken::Junk;
        let from = at + stream.byte_offset().max(start).max(1);
        match text
            .get(from..)
            .and_then(|t| t.iter().position(|b| *b == b'{' || *b == b'['))
        {
            Some(p) => at = from + p,
            None => break,
        }
    }
    if broken == Broken::None && out.is_empty() {
        broken = Broken::Junk;
    }
    (out, broken)
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &b[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8]) -> (Vec<Value>, Vec<String>) {
        let mut out = Vec::new();
        let w = read_from(input, "t", &mut |_, v| out.push(v)).warnings;
        (out, w)
    }

    #[test]
    fn skips_garbage_and_partial_last_line() {
        let (v, w) = collect(b"{\"a\":1}\ngarbage\n\n{\"b\":2}\n{\"c\":");
        assert_eq!(v.len(), 2);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[1].contains("partial last line"));
    }

    #[test]
    fn complete_last_line_without_newline_is_kept() {
        let (v, w) = collect(b"{\"a\":1}\n{\"b\":2}");
        assert_eq!(v.len(), 2);
        assert!(w.is_empty());
    }

    #[test]
    fn typed_lines_borrow_and_rejected_lines_warn() {
        #[derive(serde::Deserialize)]
        struct Rec<'a> {
            #[serde(borrow)]
            a: std::borrow::Cow<'a, str>,
        }
        let mut got = Vec::new();
        let w = read_lines_from(
            &b"{\"a\":\"x\"}\n{\"b\":1}\n{\"a\":\"y\xffz\"}\n{\"a\":"[..],
            "t",
            &mut |n, line| {
                let r: Rec<'_> = serde_json::from_slice(line).map_err(|e| e.to_string())?;
                got.push((n, r.a.into_owned()));
                Ok(())
            },
        )
        .warnings;
        assert_eq!(got, [(1, "x".into()), (3, "y\u{fffd}z".into())]);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("line 2: skipped"));
        assert!(w[1].contains("partial last line"));
    }

    #[test]
    fn invalid_utf8_costs_a_replacement_character() {
        let (v, w) = collect(b"{\"a\":\"x\xffy\"}\n");
        assert_eq!(v.len(), 1, "{w:?}");
        assert_eq!(v[0]["a"], "x\u{fffd}y");
    }

    /// Records glued onto one line get positions of their own, so ids made from positions
    /// never collide; every line that gave no record comes back with its text.
    #[test]
    fn records_have_positions_and_unread_lines_keep_their_text() {
        let mut got = Vec::new();
        let scanned = read_records_from(
            &b"{\"a\":1}\n{\"b\":2}{\"c\":3}\nnot json\n{\"d\":4}junk{\"e\":5}\n{\"f\":"[..],
            "t",
            &mut |p, bytes| {
                parse_line(bytes)?;
                got.push(p.id());
                Ok(())
            },
        );
        assert_eq!(
            got,
            ["line-1", "line-2", "line-2.2", "line-4", "line-4.2"],
            "{scanned:?}"
        );
        let unread: Vec<(usize, &str)> = scanned
            .unparsed
            .iter()
            .map(|u| (u.line, u.text.as_str()))
            .collect();
        assert_eq!(
            unread,
            [
                (3, "not json"),
                (4, "{\"d\":4}junk{\"e\":5}"),
                (5, "{\"f\":")
            ]
        );
        let (name, body) = unparsed_file(&scanned.unparsed).expect("a file");
        assert_eq!(name, UNPARSED_FILE);
        assert!(body.starts_with("line 3: skipped: invalid JSON"), "{body}");
        assert!(body.contains("\nnot json\n\nline 4: "), "{body}");
        assert!(unparsed_file(&[]).is_none());
    }

    /// Real pi files hold lines where two records were written back to back with no
    /// newline; the whole line used to be skipped.
    #[test]
    fn values_written_back_to_back_are_all_recovered() {
        let (v, w) = collect(
            b"{\"a\":1}{\"b\":2}\n{\"c\":3} {\"d\":4}\n{\"e\":5}garbage{\"f\":6}\n\"x\"\n{\"g\":7}",
        );
        let mut got = format!("{}\n", serde_json::to_string(&v).expect("json"));
        for x in &w {
            got.push_str(x);
            got.push('\n');
        }
        insta::assert_snapshot!(got);
    }
}
