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

use serde::de::IgnoredAny;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Warnings beyond this many per file are summarised in one line.
const MAX_WARNINGS: usize = 20;

/// Call `f(line_number, value)` for every line that parses as a JSON object or array.
/// Returns the warnings (unreadable file, bad lines, a partial last line).
pub fn read(path: &Path, mut f: impl FnMut(usize, Value)) -> Vec<String> {
    let file = match super::kit::open_file(path) {
        Ok(f) => f,
        Err(e) => return vec![format!("cannot open {}: {e}", path.display())],
    };
    read_from(file, &path.display().to_string(), &mut f)
}

/// As [`read`], from any reader; `name` is used in warnings.
pub fn read_from(r: impl Read, name: &str, f: &mut dyn FnMut(usize, Value)) -> Vec<String> {
    scan(r, name, &mut |n, text| parse_line(text).map(|v| f(n, v)))
}

/// As [`read`], but `f` gets each line's bytes and parses them itself, so a store can
/// deserialize into typed structs that borrow from the line. `f` returns `Err(reason)` for
/// a line it cannot use; that line is skipped and reported like a line that is not JSON.
/// A line with invalid UTF-8 is offered again with the bad bytes replaced.
pub fn read_lines(
    path: &Path,
    mut f: impl FnMut(usize, &[u8]) -> Result<(), String>,
) -> Vec<String> {
    let file = match super::kit::open_file(path) {
        Ok(f) => f,
        Err(e) => return vec![format!("cannot open {}: {e}", path.display())],
    };
    scan(file, &path.display().to_string(), &mut f)
}

/// As [`read_lines`], from any reader (a decompressing one, say); `name` is used in warnings.
pub fn read_lines_from(r: impl Read, name: &str, f: &mut LineFn<'_>) -> Vec<String> {
    scan(r, name, f)
}

/// What [`scan`] hands each line to: `Err(reason)` skips the line with a warning.
pub type LineFn<'f> = dyn FnMut(usize, &[u8]) -> Result<(), String> + 'f;

/// Each scan's read buffer: half the size from which a buffer gets a mapping of its own
/// ([`crate::alloc`]), so reading a session takes heap memory already faulted in rather than
/// mapping, faulting and unmapping 64 KiB per file (1,500 unmaps in a cold walk of 2,000
/// sessions).
const READ_BUF: usize = crate::render::EXACT_COPY_BELOW / 2;

/// The one loop behind every reader: lines, the partial last line, bad-line warnings.
fn scan(r: impl Read, name: &str, f: &mut LineFn<'_>) -> Vec<String> {
    let mut reader = BufReader::with_capacity(READ_BUF, r);
    let mut warnings = Vec::new();
    let mut bad = 0usize;
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                warnings.push(format!("{name}: read error after line {line_no}: {e}"));
                break;
            }
        }
        line_no += 1;
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
        let mut read = f(line_no, bytes);
        if read.is_err() && std::str::from_utf8(text).is_err() {
            lossy = String::from_utf8_lossy(text).into_owned();
            bytes = lossy.as_bytes();
            read = f(line_no, bytes);
        }
        let Err(e) = read else {
            continue;
        };
        // Not one usable record: the line may hold several values written back to back,
        // junk between values, or end in a value still being written. Keep every complete
        // value the store accepts.
        let (spans, broken) = value_spans(bytes);
        if spans == [(0, bytes.len())] {
            // One whole value the store could not use.
            bad += 1;
            if bad <= MAX_WARNINGS {
                warnings.push(format!("{name}: line {line_no}: skipped: {e}"));
            }
            continue;
        }
        let kept = spans
            .iter()
            .filter(|&&(a, b)| f(line_no, &bytes[a..b]).is_ok())
            .count();
        match broken {
            Broken::None => {
                let n = spans.len();
                let kept = if kept == n {
                    "all".to_string()
                } else {
                    kept.to_string()
                };
                warnings.push(format!(
                    "{name}: line {line_no}: {n} JSON values on one line, {kept} kept"
                ));
            }
            Broken::Eof if !complete => {
                // Most likely the agent is still writing this line.
                let what = if kept > 0 {
                    format!("{kept} complete JSON values kept, the partial rest ignored")
                } else {
                    "partial last line ignored".to_string()
                };
                warnings.push(format!(
                    "{name}: line {line_no}: {what} ({} bytes)",
                    text.len()
                ));
                break;
            }
            _ => {
                bad += 1;
                if bad <= MAX_WARNINGS {
                    let what = if kept > 0 {
                        format!("{kept} JSON values kept, unparsable bytes skipped: {e}")
                    } else {
                        format!("skipped: {e}")
                    };
                    warnings.push(format!("{name}: line {line_no}: {what}"));
                }
            }
        }
    }
    if bad > MAX_WARNINGS {
        warnings.push(format!(
            "{name}: {} more unparsable lines skipped",
            bad - MAX_WARNINGS
        ));
    }
    warnings
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
        if let Ok(t) = serde_json::from_slice(line) {
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
        let w = read_from(input, "t", &mut |_, v| out.push(v));
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
        let w = scan(
            &b"{\"a\":\"x\"}\n{\"b\":1}\n{\"a\":\"y\xffz\"}\n{\"a\":"[..],
            "t",
            &mut |n, line| {
                let r: Rec<'_> = serde_json::from_slice(line).map_err(|e| e.to_string())?;
                got.push((n, r.a.into_owned()));
                Ok(())
            },
        );
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
