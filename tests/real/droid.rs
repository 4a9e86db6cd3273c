//! Factory Droid in the real-corpus suite: where a set's session files go in the scratch
//! home, and the suite's own reading of them (`serde_json` only, never sessfs' parser).
//!
//! A set's `factory/<source>/sessions/<cwd slug>/<id>.jsonl` and the `<id>.settings.json`
//! beside it go to `~/.factory/sessions/<cwd slug>/`, where Droid keeps them. Only the
//! `.jsonl` files are returned as native sessions; the settings file is read for tokens.
//!
//! Expected lines: every text block of a `message` record (prompts and replies), every
//! `thinking` block and every `tool_result` text; a `compaction_state` summary. Tokens:
//! the settings file's `tokenUsage` (Droid keeps no per-call usage), once per session.

use crate::layout::{files_under, place, plain_name};
use crate::read::{Ctx, Kind, Match, Raw, Tokens};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn lay_out(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let mut placed = Vec::new();
    for f in files_under(dir) {
        let n = plain_name(&f);
        let Some(slug) = f.parent().and_then(Path::file_name) else {
            continue;
        };
        if !(n.ends_with(".jsonl") || n.ends_with(".settings.json")) {
            continue;
        }
        let dst = home.join(".factory/sessions").join(slug).join(&n);
        let p = place(&f, &dst);
        if n.ends_with(".jsonl") {
            placed.push(p);
        }
    }
    placed
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn n(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

fn result_texts(c: Option<&Value>) -> Vec<String> {
    match c {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter(|b| s(b, "type") == Some("text"))
            .filter_map(|b| s(b, "text").map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

pub fn read(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for f in files {
        let id = plain_name(f).trim_end_matches(".jsonl").to_string();
        let mut r = Raw::new("droid", id, f.clone(), Match::Path);
        let bytes = cx.bytes(f);
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            match s(&v, "type") {
                Some("message") => {
                    let m = v.get("message").unwrap_or(&Value::Null);
                    let role = s(m, "role").unwrap_or("");
                    let kind = if role == "assistant" {
                        Kind::Reply
                    } else {
                        Kind::Prompt
                    };
                    let blocks = match m.get("content") {
                        Some(Value::Array(a)) => a.clone(),
                        Some(t @ Value::String(_)) => {
                            vec![serde_json::json!({"type": "text", "text": t})]
                        }
                        _ => Vec::new(),
                    };
                    for b in &blocks {
                        match s(b, "type").unwrap_or("") {
                            "text" => r.text(kind, s(b, "text").unwrap_or("")),
                            "thinking" => r.text(Kind::Thinking, s(b, "thinking").unwrap_or("")),
                            "tool_result" => {
                                for t in result_texts(b.get("content")) {
                                    r.text(Kind::ToolOutput, &t);
                                }
                            }
                            _ => {}
                        }
                    }
                }
                Some("compaction_state") => {
                    r.text(Kind::Reply, s(&v, "summaryText").unwrap_or(""));
                }
                _ => {}
            }
        }
        let settings = f.with_file_name(format!(
            "{}.settings.json",
            plain_name(f).trim_end_matches(".jsonl")
        ));
        let u = serde_json::from_slice::<Value>(&cx.bytes(&settings))
            .ok()
            .and_then(|v| v.get("tokenUsage").cloned())
            .unwrap_or(Value::Null);
        r.tokens = Some(Tokens {
            input: Some(
                n(&u, "inputTokens") + n(&u, "cacheReadTokens") + n(&u, "cacheCreationTokens"),
            ),
            output: n(&u, "outputTokens") + n(&u, "thinkingTokens"),
        });
        out.push(r);
    }
    out
}
