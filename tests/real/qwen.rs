//! Qwen Code in the real-corpus suite: where a set's chats go in the scratch home, and
//! the suite's own reading of them (`serde_json` only, never sessfs' parser).
//!
//! A chat is `~/.qwen/projects/<sanitized cwd>/chats/<session id>.jsonl` (older builds:
//! `~/.qwen/tmp/<hash>/chats/`): one JSON record a line, `type` `user`, `assistant`,
//! `tool_result` or `system`, the API `Content` in `message.parts`.

use crate::layout::{files_under, place, plain_name};
use crate::read::{values, Ctx, Kind, Match, Raw, Tokens};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every file of the set under its `projects/` or `tmp/` folder keeps its path below it.
pub fn layout(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let q = home.join(".qwen");
    let mut placed = Vec::new();
    for f in files_under(dir) {
        let rel = f.strip_prefix(dir).unwrap_or(&f);
        let comps: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        let Some(i) = comps.iter().position(|c| c == "projects" || c == "tmp") else {
            continue;
        };
        let mut sub: PathBuf = comps[i..comps.len() - 1].iter().collect();
        sub.push(plain_name(&f));
        placed.push(place(&f, &q.join(sub)));
    }
    placed
}

/// Texts of a `parts` list: `(reply or prompt text, thought text)`, text parts joined as
/// the API joins them.
fn parts(v: &Value) -> (String, String) {
    let (mut text, mut thought) = (String::new(), String::new());
    for p in v.as_array().into_iter().flatten() {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            if p.get("thought").and_then(Value::as_bool) == Some(true) {
                thought.push_str(t);
                thought.push('\n');
            } else {
                text.push_str(t);
            }
        }
    }
    (text, thought)
}

fn count(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// `(prompt-side, generated)` tokens of one reply: the prompt count includes cached
/// tokens; reasoning is inside the reply count unless the total counts it apart.
fn reply_tokens(prompt: u64, reply: u64, thoughts: u64, total: u64) -> (u64, u64) {
    if total == prompt + reply + thoughts && thoughts > 0 {
        (prompt, reply + thoughts)
    } else {
        (prompt, reply)
    }
}

pub fn read(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for f in files {
        let name = plain_name(f);
        let Some(id) = name.strip_suffix(".jsonl") else {
            continue;
        };
        let mut r = Raw::new("qwen", id.to_string(), f.clone(), Match::Path);
        let mut tokens = Tokens {
            input: Some(0),
            output: 0,
        };
        // A subagent's calls (`prompt_id` `<id>#<agent>#<n>`, not the main conversation's
        // `<id>########<n>`): Qwen keeps no chat for it, sessfs nests it as a subagent.
        let mut side = Tokens {
            input: Some(0),
            output: 0,
        };
        let main_prompt = format!("{id}########");
        let mut add = |t: (u64, u64), sub: bool| {
            for k in if sub {
                vec![&mut tokens, &mut side]
            } else {
                vec![&mut tokens]
            } {
                k.input = Some(k.input.unwrap_or(0) + t.0);
                k.output += t.1;
            }
        };
        // The counts of the `api_response` telemetry record just before, if the record
        // just before was one: the assistant record of that reply repeats them.
        let mut last_response: Option<(u64, u64)> = None;
        for v in values(&cx.bytes(f)) {
            let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
            let sub = v.get("subtype").and_then(Value::as_str).unwrap_or("");
            let p = v
                .get("message")
                .and_then(|m| m.get("parts"))
                .cloned()
                .unwrap_or(Value::Null);
            let mut response = None;
            match (ty, sub) {
                ("user", "") => {
                    let (t, th) = parts(&p);
                    r.text(Kind::Prompt, &t);
                    r.text(Kind::Thinking, &th);
                }
                ("assistant", _) => {
                    let (t, th) = parts(&p);
                    r.text(Kind::Reply, &t);
                    r.text(Kind::Thinking, &th);
                    if let Some(u) = v.get("usageMetadata") {
                        let pair = (
                            count(u, "promptTokenCount"),
                            count(u, "candidatesTokenCount"),
                        );
                        if last_response != Some(pair) {
                            add(
                                reply_tokens(
                                    pair.0,
                                    pair.1,
                                    count(u, "thoughtsTokenCount"),
                                    count(u, "totalTokenCount"),
                                ),
                                false,
                            );
                        }
                    }
                }
                ("tool_result", _) => {
                    for part in p.as_array().into_iter().flatten() {
                        let Some(resp) =
                            part.get("functionResponse").and_then(|f| f.get("response"))
                        else {
                            continue;
                        };
                        for k in ["output", "error"] {
                            if let Some(s) = resp.get(k).and_then(Value::as_str) {
                                r.text(Kind::ToolOutput, s);
                            }
                        }
                    }
                }
                ("system", "ui_telemetry") => {
                    let e = v
                        .get("systemPayload")
                        .and_then(|p| p.get("uiEvent"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    let name = e.get("event.name").and_then(Value::as_str).unwrap_or("");
                    if name.ends_with("api_response") {
                        let pair = (
                            count(&e, "input_token_count"),
                            count(&e, "output_token_count"),
                        );
                        let prompt = e.get("prompt_id").and_then(Value::as_str).unwrap_or("");
                        let sub = !prompt.is_empty() && !prompt.starts_with(&main_prompt);
                        add(
                            reply_tokens(
                                pair.0,
                                pair.1,
                                count(&e, "thoughts_token_count"),
                                count(&e, "total_token_count"),
                            ),
                            sub,
                        );
                        response = Some(pair);
                    }
                }
                _ => {}
            }
            last_response = response;
        }
        r.tokens = Some(tokens);
        r.side_tokens = side;
        out.push(r);
    }
    out
}
