//! Amp in the real-corpus suite: where its thread files go in the scratch home, and the
//! suite's own reading of them (`serde_json` only, never sessfs' parser).
//!
//! A set's `amp/<source>/threads/T-*.json` go to `~/.local/share/amp/threads/`, where the
//! Amp CLI keeps them. `history.jsonl` (the prompt box's history: prompts only, no thread
//! id) is not a session and is not placed.

use crate::layout::{files_under, place, plain_name};
use crate::read::{Ctx, Kind, Match, Raw, Tokens};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub fn lay_out(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let threads = home.join(".local/share/amp/threads");
    files_under(dir)
        .into_iter()
        .filter(|f| {
            let n = plain_name(f);
            n.starts_with("T-") && n.ends_with(".json")
        })
        .map(|f| place(&f, &threads.join(plain_name(&f))))
        .collect()
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn n(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// A tool run's text as the thread holds it: `result` (else `progress`) as a string, a
/// list of lines or an object's `output`.
fn run_texts(run: &Value) -> Vec<String> {
    let body = run
        .get("result")
        .filter(|v| !v.is_null())
        .or_else(|| run.get("progress"));
    match body {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        Some(o @ Value::Object(_)) => s(o, "output").map(String::from).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Every thread: prompts, replies, thinking and tool output; tokens once per API call
/// (each reply's `usage` with its cache counts, plus the ledger's calls no reply carries,
/// such as title generation).
pub fn read(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for f in files {
        let Ok(doc) = serde_json::from_slice::<Value>(&cx.bytes(f)) else {
            continue;
        };
        let stem = f
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let id = s(&doc, "id").map(String::from).unwrap_or(stem);
        let mut r = Raw::new("amp", id, f.clone(), Match::Path);
        let mut input = 0;
        let mut output = 0;
        let mut carried = HashSet::new();
        let msgs = doc.get("messages").and_then(Value::as_array);
        for m in msgs.into_iter().flatten() {
            let role = s(m, "role").unwrap_or("");
            for b in m
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match (role, s(b, "type").unwrap_or("")) {
                    ("user", "text") => r.text(Kind::Prompt, s(b, "text").unwrap_or("")),
                    ("assistant", "text") => r.text(Kind::Reply, s(b, "text").unwrap_or("")),
                    ("assistant", "thinking") => {
                        r.text(Kind::Thinking, s(b, "thinking").unwrap_or(""))
                    }
                    (_, "tool_result") => {
                        for t in run_texts(b.get("run").unwrap_or(&Value::Null)) {
                            r.text(Kind::ToolOutput, &t);
                        }
                    }
                    _ => {}
                }
            }
            if let (Some(u), "assistant") = (m.get("usage"), role) {
                input += n(u, "inputTokens")
                    + n(u, "cacheCreationInputTokens")
                    + n(u, "cacheReadInputTokens");
                output += n(u, "outputTokens");
                if let Some(id) = m.get("messageId").and_then(Value::as_i64) {
                    carried.insert(id);
                }
            }
        }
        let events = doc
            .get("usageLedger")
            .and_then(|l| l.get("events"))
            .and_then(Value::as_array);
        for e in events.into_iter().flatten() {
            let to = e.get("toMessageId").and_then(Value::as_i64);
            let inference = s(e, "operationType").is_none_or(|o| o == "inference");
            if inference && to.is_some_and(|t| carried.contains(&t)) {
                continue;
            }
            let t = e.get("tokens").unwrap_or(&Value::Null);
            input += n(t, "input");
            output += n(t, "output");
        }
        r.tokens = Some(Tokens {
            input: Some(input),
            output,
        });
        out.push(r);
    }
    out
}
