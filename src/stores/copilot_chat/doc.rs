//! Reading one session file: a flat JSON document (whole, or cut mid-write and salvaged up
//! to the cut) or the mutation log replayed from its last whole state.

use super::*;

/// A session document as far as it could be read.
#[derive(Debug, Default)]
pub struct Doc {
    /// The (version 1, 2 or 3) session object.
    pub state: Map<String, Value>,
    /// Entries or lines that could not be parsed or applied: (problem, raw text).
    pub unparsed: Vec<(String, String)>,
    /// Set when the file ended mid-record: what was cut off.
    pub cut: Option<String>,
}

/// Read a session file, once more after a pause when it is cut and was just written.
pub(super) fn read_doc(path: &Path) -> Result<Doc, ReadError> {
    let file = kit::file_name(path).to_string();
    let log = is_log(path);
    let meta = std::fs::metadata(path).map_err(|source| ReadError::Io {
        file: file.clone(),
        source,
    })?;
    if meta.len() > MAX_JSON_BYTES {
        return Err(ReadError::TooLarge {
            file,
            bytes: meta.len(),
        });
    }
    let read = || {
        kit::read_file(path).map_err(|source| ReadError::Io {
            file: file.clone(),
            source,
        })
    };
    let mut bytes = read()?;
    let mut doc = parse_doc(&bytes, log);
    let fresh = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age < FRESH);
    if fresh && doc.as_ref().is_none_or(|d| d.cut.is_some()) {
        std::thread::sleep(REREAD_PAUSE);
        let again = read()?;
        if again != bytes {
            bytes = again;
            doc = parse_doc(&bytes, log);
        }
    }
    doc.ok_or(ReadError::NotSession { file })
}

/// Parse a flat session file or a session log. `None` when it is neither.
pub fn parse_doc(bytes: &[u8], log: bool) -> Option<Doc> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start_matches('\u{feff}');
    if log {
        return replay(text);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(state)) => Some(Doc {
            state,
            ..Doc::default()
        }),
        Ok(_) => None,
        Err(_) => salvage(text),
    }
}

// ---------------------------------------------------------------------------------------
// Cut files and the mutation log

pub(super) fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && b[p].is_ascii_whitespace() {
        p += 1;
    }
    p
}

pub(super) fn raw(text: &str) -> String {
    text.chars().take(MAX_RAW_CHARS).collect()
}

/// One JSON value at the start of `text`, and where it ends.
pub(super) fn one<T: serde::de::DeserializeOwned>(text: &str) -> Option<(T, usize)> {
    let mut s = serde_json::Deserializer::from_str(text).into_iter::<T>();
    match s.next() {
        Some(Ok(v)) => Some((v, s.byte_offset())),
        _ => None,
    }
}

/// A flat file cut while VS Code rewrote it: its top-level fields and every complete request
/// before the cut. `None` when the text is not an object at all.
pub(super) fn salvage(text: &str) -> Option<Doc> {
    let b = text.as_bytes();
    let mut pos = skip_ws(b, 0);
    if b.get(pos) != Some(&b'{') {
        return None;
    }
    pos += 1;
    let mut doc = Doc::default();
    loop {
        pos = skip_ws(b, pos);
        match b.get(pos) {
            Some(b'}') => return Some(doc),
            Some(b',') => pos = skip_ws(b, pos + 1),
            _ => {}
        }
        let Some((key, n)) = one::<String>(&text[pos..]) else {
            break;
        };
        pos = skip_ws(b, pos + n);
        if b.get(pos) != Some(&b':') {
            break;
        }
        pos = skip_ws(b, pos + 1);
        if key == "requests" && b.get(pos) == Some(&b'[') {
            let mut items = Vec::new();
            pos = skip_ws(b, pos + 1);
            let mut closed = b.get(pos) == Some(&b']');
            while !closed {
                let Some((v, n)) = one::<Value>(&text[pos..]) else {
                    break;
                };
                items.push(v);
                pos = skip_ws(b, pos + n);
                match b.get(pos) {
                    Some(b',') => pos = skip_ws(b, pos + 1),
                    Some(b']') => closed = true,
                    _ => break,
                }
            }
            doc.state.insert(key, Value::Array(items));
            if !closed {
                break;
            }
            pos += 1;
        } else {
            let Some((v, n)) = one::<Value>(&text[pos..]) else {
                break;
            };
            doc.state.insert(key, v);
            pos += n;
        }
    }
    let tail = text[pos.min(text.len())..].trim();
    doc.cut = Some(if tail.is_empty() {
        "(the file ends before the session object is closed)".to_string()
    } else {
        raw(tail)
    });
    Some(doc)
}

/// Replay a session log into its state. Lines that do not parse or do not apply are kept
/// raw; a last line without its newline is a cut append.
pub(super) fn replay(text: &str) -> Option<Doc> {
    let mut doc = Doc::default();
    let mut state: Option<Value> = None;
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.split('\n').collect();
    let last = lines.len().saturating_sub(1);
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let entry: Map<String, Value> = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                if i == last && !complete {
                    doc.cut = Some(raw(line));
                } else {
                    doc.unparsed
                        .push((format!("line {}: {e}", i + 1), raw(line)));
                }
                continue;
            }
        };
        if let Err(problem) = apply(&mut state, entry) {
            doc.unparsed
                .push((format!("line {}: {problem}", i + 1), raw(line)));
        }
    }
    match state {
        Some(Value::Object(m)) => doc.state = m,
        Some(_) => return None,
        None if doc.unparsed.is_empty() && doc.cut.is_none() => return None,
        None => {}
    }
    Some(doc)
}

/// Apply one log entry (`objectMutationLog.ts` `read`). The entry's value is moved into the
/// state, never copied: an initial entry can be most of a large file.
pub(super) fn apply(
    state: &mut Option<Value>,
    mut entry: Map<String, Value>,
) -> Result<(), String> {
    let kind = entry.get("kind").and_then(Value::as_u64);
    let v = entry.remove("v");
    if kind == Some(0) {
        *state = Some(v.unwrap_or(Value::Null));
        return Ok(());
    }
    let Some(root) = state.as_mut() else {
        return Err("an update before the log's initial entry".into());
    };
    let path: &[Value] = match entry.get("k") {
        Some(Value::Array(a)) => a,
        _ => return Err("an update without a path".into()),
    };
    let Some((last, parents)) = path.split_last() else {
        // VS Code ignores an update of the root.
        return Ok(());
    };
    let mut cur = root;
    for k in parents {
        cur = step(cur, k).ok_or_else(|| format!("no value at {}", show_path(path)))?;
    }
    match kind {
        // A set without a value is JavaScript's `undefined`: the key goes.
        Some(1) => put(cur, last, v),
        Some(3) => put(cur, last, None),
        Some(2) => {
            if step(cur, last).is_none() {
                put(cur, last, Some(Value::Array(Vec::new())))?;
            }
            let slot = step(cur, last).ok_or("array cannot be made")?;
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            let Value::Array(arr) = slot else {
                return Err("not an array".into());
            };
            if let Some(i) = entry.get("i").and_then(Value::as_u64) {
                arr.truncate(usize::try_from(i).unwrap_or(usize::MAX));
            }
            if let Some(Value::Array(vs)) = v {
                arr.extend(vs);
            }
            Ok(())
        }
        _ => Err(format!(
            "unknown entry kind {}",
            entry.get("kind").unwrap_or(&Value::Null)
        )),
    }
}

pub(super) fn show_path(path: &[Value]) -> String {
    path.iter()
        .map(|k| match k {
            Value::String(s) => format!(".{s}"),
            other => format!("[{other}]"),
        })
        .collect()
}

pub(super) fn step<'a>(cur: &'a mut Value, k: &Value) -> Option<&'a mut Value> {
    match (cur, k) {
        (Value::Object(o), Value::String(s)) => o.get_mut(s),
        (Value::Array(a), Value::Number(n)) => a.get_mut(n.as_u64()? as usize),
        (Value::Object(o), Value::Number(n)) => o.get_mut(&n.to_string()),
        _ => None,
    }
}

/// Set (or with `None` delete) `k` of `cur`, as a JavaScript assignment would.
pub(super) fn put(cur: &mut Value, k: &Value, v: Option<Value>) -> Result<(), String> {
    match (cur, k) {
        (Value::Object(o), key) => {
            let key = match key {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match v {
                Some(v) => {
                    o.insert(key, v);
                }
                None => {
                    o.remove(&key);
                }
            }
            Ok(())
        }
        (Value::Array(a), Value::Number(n)) => {
            let i = n.as_u64().ok_or("negative index")?;
            let v = v.unwrap_or(Value::Null);
            match usize::try_from(i) {
                Ok(i) if i < a.len() => a[i] = v,
                Ok(i) if i == a.len() => a.push(v),
                // VS Code only sets items that exist; a hole is not made up.
                _ => return Err("index past the array's end".into()),
            }
            Ok(())
        }
        _ => Err("path goes through a value that is not an object or array".into()),
    }
}
