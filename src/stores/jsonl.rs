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

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Warnings beyond this many per file are summarised in one line.
const MAX_WARNINGS: usize = 20;

/// Call `f(line_number, value)` for every line that parses as a JSON object or array.
/// Returns the warnings (unreadable file, bad lines, a partial last line).
pub fn read(path: &Path, mut f: impl FnMut(usize, Value)) -> Vec<String> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return vec![format!("cannot open {}: {e}", path.display())],
    };
    read_from(file, &path.display().to_string(), &mut f)
}

/// As [`read`], from any reader; `name` is used in warnings.
pub fn read_from(r: impl Read, name: &str, f: &mut dyn FnMut(usize, Value)) -> Vec<String> {
    let mut reader = BufReader::with_capacity(64 * 1024, r);
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
        let recovered;
        match parse_line(text) {
            Ok(v) => {
                f(line_no, v);
                continue;
            }
            // Several values on one line (records written back to back with no newline, or
            // junk between them): keep every complete one.
            Err(e) => {
                let lossy;
                let bytes = match std::str::from_utf8(text) {
                    Ok(_) => text,
                    Err(_) => {
                        lossy = String::from_utf8_lossy(text).into_owned();
                        lossy.as_bytes()
                    }
                };
                let (values, broken) = split_values(bytes);
                recovered = values.len();
                for v in values {
                    f(line_no, v);
                }
                match broken {
                    Broken::None if recovered > 1 => {
                        warnings.push(format!(
                            "{name}: line {line_no}: {recovered} JSON values on one line, all kept"
                        ));
                        continue;
                    }
                    Broken::None if recovered == 1 => continue,
                    // An unfinished value at the end of a line still being written.
                    Broken::Eof if !complete => {}
                    _ if recovered > 0 => {
                        bad += 1;
                        if bad <= MAX_WARNINGS {
                            warnings.push(format!(
                                "{name}: line {line_no}: {recovered} JSON values kept, unparsable bytes skipped: {e}"
                            ));
                        }
                        continue;
                    }
                    _ if !complete => {}
                    _ => {
                        bad += 1;
                        if bad <= MAX_WARNINGS {
                            warnings.push(format!("{name}: line {line_no}: skipped: {e}"));
                        }
                        continue;
                    }
                }
            }
        }
        {
            // Most likely the agent is still writing this line.
            let what = if recovered > 0 {
                format!("{recovered} complete JSON values kept, the partial rest ignored")
            } else {
                "partial last line ignored".to_string()
            };
            warnings.push(format!(
                "{name}: line {line_no}: {what} ({} bytes)",
                text.len()
            ));
            break;
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

fn parse_line(text: &[u8]) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(text) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Ok(v),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) if e.is_syntax() || e.is_eof() => {
            // serde_json rejects invalid UTF-8 inside strings; retry lossily so one bad
            // byte costs one replacement character, not the whole record.
            match std::str::from_utf8(text) {
                Ok(_) => Err(format!("invalid JSON: {e}")),
                Err(_) => {
                    let lossy = String::from_utf8_lossy(text);
                    serde_json::from_str::<Value>(&lossy)
                        .map_err(|e| format!("invalid JSON: {e}"))
                        .and_then(|v| match v {
                            v @ (Value::Object(_) | Value::Array(_)) => Ok(v),
                            _ => Err("not a JSON object".into()),
                        })
                }
            }
        }
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

/// Every complete JSON object or array in `text`, in order. Bytes that do not parse are
/// skipped up to the next `{` or `[`.
fn split_values(text: &[u8]) -> (Vec<Value>, Broken) {
    let mut out = Vec::new();
    let mut broken = Broken::None;
    let mut at = 0usize;
    // Each round consumes at least one byte, so this ends.
    while at < text.len() {
        let rest = &text[at..];
        let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<Value>();
        let mut failed = None;
        for v in stream.by_ref() {
            match v {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => out.push(v),
                Ok(_) => {}
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
        let done = stream.byte_offset();
        let from = at + done.max(1);
        match text[from..].iter().position(|b| *b == b'{' || *b == b'[') {
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
