//! Kimi CLI in the real-corpus suite: where a set's `.kimi` share directory goes in the
//! scratch home, and the suite's own reading of it (`serde_json` only, never sessfs'
//! parser).
//!
//! A set's `kimi/<source>/` is a `~/.kimi` as the agent lays it out (`kimi.json`,
//! `sessions/<hash>/<id>/`, `user-history/`); it is copied to `~/.kimi`. Only
//! `context.jsonl` and `context_sub_N.jsonl` are returned as native session files: the
//! wire log beside them is read for tokens.
//!
//! Expected lines come from the context files (what the model saw): every prompt, reply,
//! reasoning and tool output. Tokens come from the wire's `StatusUpdate.token_usage`, once
//! per `message_id`: the session's own records for it, the `SubagentEvent` records of a
//! subagent for the `context_sub_N.jsonl` whose first prompt they carry.

use crate::layout::{files_under, place, plain_name};
use crate::read::{Ctx, Kind, Match, Raw, Tokens};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub fn lay_out(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let mut placed = Vec::new();
    for src in crate::layout::subdirs(dir) {
        for f in files_under(&src) {
            let rel = f.parent().unwrap().strip_prefix(&src).unwrap();
            let dst = home.join(".kimi").join(rel).join(plain_name(&f));
            let p = place(&f, &dst);
            let n = plain_name(&f);
            if n == "context.jsonl" || (n.starts_with("context_sub_") && n.ends_with(".jsonl")) {
                placed.push(p);
            }
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

fn lines(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .collect()
}

/// `(text, think)` parts of a kosong content.
fn texts(content: Option<&Value>) -> (Vec<String>, Vec<String>) {
    let mut text = Vec::new();
    let mut think = Vec::new();
    match content {
        Some(Value::String(t)) => text.push(t.clone()),
        Some(Value::Array(a)) => {
            for p in a {
                match s(p, "type") {
                    Some("text") => text.extend(s(p, "text").map(String::from)),
                    Some("think") => think.extend(s(p, "think").map(String::from)),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    (text, think)
}

/// Usage of one step: every prompt-side count and the output.
fn step_tokens(payload: &Value, seen: &mut HashSet<String>, into: &mut Tokens) {
    let Some(u) = payload.get("token_usage").filter(|u| u.is_object()) else {
        return;
    };
    if let Some(id) = s(payload, "message_id") {
        if !seen.insert(id.to_string()) {
            return;
        }
    }
    let input = n(u, "input_other") + n(u, "input_cache_read") + n(u, "input_cache_creation");
    into.input = Some(into.input.unwrap_or(0) + input);
    into.output += n(u, "output");
}

pub fn read(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    let mut mains: Vec<&PathBuf> = files
        .iter()
        .filter(|f| plain_name(f) == "context.jsonl")
        .collect();
    mains.sort();
    for f in mains {
        let dir = f.parent().unwrap();
        let id = dir.file_name().unwrap().to_string_lossy().to_string();
        let mut seen = HashSet::new();
        // The wire: own steps, and subagent steps grouped by their first prompt.
        let mut own = Tokens {
            input: Some(0),
            output: 0,
        };
        let mut groups: Vec<(String, Option<String>, Tokens)> = Vec::new();
        // What the UI showed, by who showed it (`""` the session, else the task call).
        let mut shown: Vec<(String, Kind, String)> = Vec::new();
        for v in lines(&cx.bytes(&dir.join("wire.jsonl"))) {
            let Some(m) = v.get("message") else { continue };
            let p = m.get("payload").unwrap_or(&Value::Null);
            wire_lines(m, "", &mut shown);
            match s(m, "type") {
                Some("StatusUpdate") => step_tokens(p, &mut seen, &mut own),
                Some("SubagentEvent") => {
                    let task = s(p, "parent_tool_call_id")
                        .or_else(|| s(p, "task_tool_call_id"))
                        .unwrap_or("")
                        .to_string();
                    let gi = match groups.iter().position(|g| g.0 == task) {
                        Some(i) => i,
                        None => {
                            groups.push((
                                task,
                                None,
                                Tokens {
                                    input: Some(0),
                                    output: 0,
                                },
                            ));
                            groups.len() - 1
                        }
                    };
                    let e = p.get("event").unwrap_or(&Value::Null);
                    wire_lines(e, &groups[gi].0, &mut shown);
                    let ep = e.get("payload").unwrap_or(&Value::Null);
                    match s(e, "type") {
                        Some("TurnBegin") if groups[gi].1.is_none() => {
                            groups[gi].1 = Some(texts(ep.get("user_input")).0.join("\n"));
                        }
                        Some("StatusUpdate") => step_tokens(ep, &mut seen, &mut groups[gi].2),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        let mut subs: Vec<(u64, PathBuf)> = files
            .iter()
            .filter(|g| g.parent() == Some(dir))
            .filter_map(|g| {
                let k = plain_name(g)
                    .strip_prefix("context_sub_")?
                    .strip_suffix(".jsonl")?
                    .parse()
                    .ok()?;
                Some((k, g.clone()))
            })
            .collect();
        subs.sort();
        for (k, g) in subs {
            let mut r = Raw::new("kimi", format!("{id}/sub_{k}"), g.clone(), Match::Path);
            let first = context_lines(cx, &g, &mut r);
            let gi = groups.iter().position(|x| x.1.is_some() && x.1 == first);
            r.tokens = Some(match gi {
                Some(i) => {
                    for (_, kind, t) in shown.iter().filter(|x| x.0 == groups[i].0) {
                        r.text(*kind, t);
                    }
                    groups.remove(i).2
                }
                None => Tokens {
                    input: Some(0),
                    output: 0,
                },
            });
            out.push(r);
        }
        // Subagent steps with no context file of their own stay with the session.
        for g in groups {
            own.input = Some(own.input.unwrap_or(0) + g.2.input.unwrap_or(0));
            own.output += g.2.output;
        }
        let mut r = Raw::new("kimi", id, f.clone(), Match::Path);
        context_lines(cx, f, &mut r);
        for (_, kind, t) in shown.iter().filter(|x| x.0.is_empty()) {
            r.text(*kind, t);
        }
        r.tokens = Some(own);
        out.push(r);
    }
    out
}

/// The expected lines of one context file; returns its first prompt's text.
fn context_lines(cx: &Ctx, f: &Path, r: &mut Raw) -> Option<String> {
    let mut first = None;
    for v in lines(&cx.bytes(f)) {
        let (text, think) = texts(v.get("content"));
        let kind = match s(&v, "role") {
            Some("user") => {
                if first.is_none() {
                    first = Some(text.join("\n"));
                }
                Kind::Prompt
            }
            Some("assistant") => Kind::Reply,
            Some("tool") => Kind::ToolOutput,
            _ => continue,
        };
        for t in &text {
            r.text(kind, t);
        }
        for t in &think {
            r.text(Kind::Thinking, t);
        }
    }
    first
}

/// The prompt, reply, reasoning and tool output lines one wire event showed, tagged with
/// `who` showed them.
fn wire_lines(m: &Value, who: &str, into: &mut Vec<(String, Kind, String)>) {
    let p = m.get("payload").unwrap_or(&Value::Null);
    let mut add = |k: Kind, t: &str| into.push((who.to_string(), k, t.to_string()));
    match s(m, "type") {
        Some("TurnBegin") => {
            for t in texts(p.get("user_input")).0 {
                add(Kind::Prompt, &t);
            }
        }
        Some("ContentPart") => match s(p, "type") {
            Some("text") => add(Kind::Reply, s(p, "text").unwrap_or("")),
            Some("think") => add(Kind::Thinking, s(p, "think").unwrap_or("")),
            _ => {}
        },
        Some("ToolResult") => {
            if let Some(o) = p.pointer("/return_value/output").and_then(Value::as_str) {
                add(Kind::ToolOutput, o);
            }
        }
        _ => {}
    }
}
