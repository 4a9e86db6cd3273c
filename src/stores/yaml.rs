//! One YAML document as a `serde_json::Value`, for stores whose sessions are YAML files
//! (AIChat's `sessions/*.yaml`).
//!
//! Why this exists: sessfs already reads YAML through the `saphyr-parser` event parser (the
//! Copilot store's flat `workspace.yaml` pairs), and a whole nested document needs only a
//! small builder over the same events, so no YAML data-model crate is added. Every store
//! already reads JSON-like values with the helpers of [`super::kit`], so the document
//! becomes one.
//!
//! What it does:
//! - mappings become objects (a key that is no scalar is written as its JSON text), sequences
//!   arrays; a key seen twice keeps its last value;
//! - a plain scalar is resolved by the YAML 1.2 core schema (`null`/`~`/empty, `true`/
//!   `false`, integers, floats); a quoted or block scalar is always a string; tags are
//!   ignored (the value is kept as if untagged); `.inf`/`.nan` stay strings (JSON has no
//!   such numbers);
//! - aliases resolve to the value their anchor named (the parser rejects an unknown one);
//! - only the first document of the stream is read;
//! - a stream that stops parsing (a file cut mid-write, a damaged byte) keeps every value
//!   completed before the fault: open sequences and mappings are closed where they stand,
//!   and the error is returned beside the value.

use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;

/// A parsed document: its value (`None` when the stream held no node before a fault or its
/// end) and the parse error that stopped it, if any (`line:column: message`).
pub struct Doc {
    pub value: Option<Value>,
    pub error: Option<String>,
}

enum Frame {
    Seq(Vec<Value>, usize),
    Map(Map<String, Value>, Option<String>, usize),
}

/// Parse the first YAML document of `text`.
pub fn parse(text: &str) -> Doc {
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut root: Option<Value> = None;
    let mut error = None;
    for ev in Parser::new_from_str(text) {
        let (ev, _) = match ev {
            Ok(e) => e,
            Err(e) => {
                let m = e.marker();
                error = Some(format!("{}:{}: {}", m.line(), m.col() + 1, e.info()));
                break;
            }
        };
        let done = match ev {
            Event::SequenceStart(anchor, _) => {
                stack.push(Frame::Seq(Vec::new(), anchor));
                None
            }
            Event::MappingStart(anchor, _) => {
                stack.push(Frame::Map(Map::new(), None, anchor));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => stack.pop().map(close),
            Event::Scalar(v, style, anchor, _) => Some((scalar(&v, style), anchor)),
            Event::Alias(id) => Some((anchors.get(&id).cloned().unwrap_or(Value::Null), 0)),
            Event::DocumentEnd => break,
            _ => None,
        };
        if let Some((value, anchor)) = done {
            if anchor != 0 {
                anchors.insert(anchor, value.clone());
            }
            if let Some(v) = add(&mut stack, value) {
                root = Some(v);
                break;
            }
        }
    }
    // A fault (or a stream without its end events) leaves containers open: close them.
    while let Some(frame) = stack.pop() {
        let (value, _) = close(frame);
        if let Some(v) = add(&mut stack, value) {
            root = Some(v);
        }
    }
    Doc { value: root, error }
}

fn close(frame: Frame) -> (Value, usize) {
    match frame {
        Frame::Seq(items, anchor) => (Value::Array(items), anchor),
        Frame::Map(map, _, anchor) => (Value::Object(map), anchor),
    }
}

/// Put a completed value into the open container; the value itself when none is open
/// (the document's root).
fn add(stack: &mut [Frame], value: Value) -> Option<Value> {
    match stack.last_mut() {
        None => Some(value),
        Some(Frame::Seq(items, _)) => {
            items.push(value);
            None
        }
        Some(Frame::Map(map, key, _)) => {
            match key.take() {
                None => {
                    *key = Some(match value {
                        Value::String(s) => s,
                        Value::Null => String::new(),
                        other => other.to_string(),
                    });
                }
                Some(k) => {
                    map.insert(k, value);
                }
            }
            None
        }
    }
}

/// A scalar by the core schema when plain, a string otherwise.
fn scalar(v: &str, style: ScalarStyle) -> Value {
    if style != ScalarStyle::Plain {
        return Value::String(v.to_string());
    }
    match v {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Some(n) = integer(v) {
        return Value::Number(n);
    }
    let looks_numeric = v
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && v.bytes().any(|b| b.is_ascii_digit());
    if looks_numeric {
        if let Some(n) = v.parse::<f64>().ok().and_then(Number::from_f64) {
            return Value::Number(n);
        }
    }
    Value::String(v.to_string())
}

fn integer(v: &str) -> Option<Number> {
    let (neg, digits) = match v.as_bytes().first()? {
        b'-' => (true, &v[1..]),
        b'+' => (false, &v[1..]),
        _ => (false, v),
    };
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x") {
        (16, h)
    } else if let Some(o) = digits.strip_prefix("0o") {
        (8, o)
    } else {
        (10, digits)
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let n = u64::from_str_radix(body, radix).ok()?;
    if neg {
        let i = i64::try_from(n).ok()?;
        Some(Number::from(-i))
    } else {
        Some(Number::from(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(text: &str) -> Value {
        let d = parse(text);
        assert!(d.error.is_none(), "{:?}", d.error);
        d.value.expect("a document")
    }

    #[test]
    fn nested_mappings_sequences_and_scalar_types() {
        let v = value(
            "model: openai:gpt-4o\ntemperature: 0.2\nn: -3\nhex: 0x1F\nflag: true\nnone: ~\nq: 'true'\n\
             messages:\n- role: user\n  content: |\n    line one\n    line two\n- role: tool\n  content:\n    tool_results: []\n    text: ''\n    sequence: false\n",
        );
        assert_eq!(
            v,
            json!({"model": "openai:gpt-4o", "temperature": 0.2, "n": -3, "hex": 31,
            "flag": true, "none": null, "q": "true",
            "messages": [
                {"role": "user", "content": "line one\nline two\n"},
                {"role": "tool", "content": {"tool_results": [], "text": "", "sequence": false}}
            ]})
        );
    }

    #[test]
    fn quoted_and_odd_plain_scalars_stay_strings() {
        let v = value("a: \"42\"\nb: 1.2.3\nc: .inf\nd: 12abc\ne: \"x\\ty\"\n");
        assert_eq!(
            v,
            json!({"a": "42", "b": "1.2.3", "c": ".inf", "d": "12abc", "e": "x\ty"})
        );
    }

    #[test]
    fn anchors_aliases_and_tags() {
        let v = value("a: &x {k: 1}\nb: *x\nc: !Tagged v\n");
        assert_eq!(v, json!({"a": {"k": 1}, "b": {"k": 1}, "c": "v"}));
        // An alias to no anchor is a parse error: what came before it is kept.
        let d = parse("a: 1\nb: *nope\n");
        assert!(d.error.is_some());
        assert_eq!(d.value, Some(json!({"a": 1})));
    }

    #[test]
    fn a_cut_document_keeps_what_came_before_and_names_the_fault() {
        let d = parse("messages:\n- role: user\n  content: before\n- role: assistant\n  content: \"never closed\n");
        assert!(d.error.is_some());
        let v = d.value.expect("partial");
        assert_eq!(
            v["messages"][0],
            json!({"role": "user", "content": "before"})
        );
        assert_eq!(v["messages"][1]["role"], "assistant");
    }

    #[test]
    fn only_the_first_document_and_empty_streams() {
        assert_eq!(value("a: 1\n---\nb: 2\n"), json!({"a": 1}));
        assert!(parse("").value.is_none());
        assert_eq!(value("just text"), json!("just text"));
    }
}
