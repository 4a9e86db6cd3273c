//! Cursor's agent transcripts under `projects/<cwd>/agent-transcripts/`: `.txt` files
//! (`user:` / `assistant:` blocks with `[Thinking]`, `[Tool call]` and `[Tool result]`
//! markers) and `.jsonl` files (one `{role, message}` per line, with `subagents/`).
//!
//! The poorest sources, read only when no database holds the chat (see the store's
//! "one id, several sources"). Plain files: no database, no read transaction.

use super::{odd, output_text, parts_text, split_user_query, subagent_files, MAX_TRANSCRIPT};
use crate::model::{Agent, Message, Role, Session, Source, Subagent, ToolCall};
use crate::names;
use crate::stores::jsonl;
use crate::stores::kit::{self, SessionBuilder};
use crate::stores::Listed;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

fn transcript_text(path: &Path, b: &mut SessionBuilder) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_TRANSCRIPT => {
            b.warn(format!(
                "{}: {} bytes, too large, skipped",
                path.display(),
                m.len()
            ));
            return None;
        }
        _ => {}
    }
    match kit::read_file(path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => {
            b.warn(format!("cannot read {}: {e}", path.display()));
            None
        }
    }
}

/// Where the `.txt` parser is inside the current message.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    /// After `[Thinking]`, up to an empty line or the next marker.
    Thinking,
    /// After `[Tool call] Name`: indented `key=value` argument lines.
    Args,
    /// After `[Tool result]`: output of the call at this index, up to the next marker.
    Result(usize),
}

pub(super) fn load_txt(listed: &Listed) -> Session {
    let mut b = SessionBuilder::new(Agent::Cursor, listed.id.clone());
    b.s.source = Source {
        paths: vec![listed.path.clone()],
        format: "cursor-transcript-txt".into(),
        format_version: None,
    };
    let Some(text) = transcript_text(&listed.path, &mut b) else {
        return b.finish();
    };
    parse_txt(&mut b, &text);
    b.s.updated_at = mtime(&listed.path);
    b.finish()
}

fn mtime(p: &Path) -> Option<DateTime<Utc>> {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from)
}

/// One tool call of a `.txt` transcript: the call, its output lines, whether a
/// `[Tool result]` was seen for it.
type TxtCall = (ToolCall, Vec<String>, bool);

/// One message of a `.txt` transcript, being built.
struct TxtMsg {
    role: Role,
    text: Vec<String>,
    thinking: Vec<String>,
    calls: Vec<TxtCall>,
}

impl TxtMsg {
    fn new(role: Role) -> TxtMsg {
        TxtMsg {
            role,
            text: Vec::new(),
            thinking: Vec::new(),
            calls: Vec::new(),
        }
    }

    fn flush(self, b: &mut SessionBuilder) {
        let content = self.text.join("\n").trim().to_string();
        let thinking = self.thinking.join("\n").trim().to_string();
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|(mut c, out, seen)| {
                if seen {
                    c.output = Some(out.join("\n").trim_end().to_string());
                }
                c
            })
            .collect();
        if content.is_empty() && thinking.is_empty() && tool_calls.is_empty() {
            return;
        }
        let (content, context) = if self.role == Role::User {
            split_user_query(&content)
        } else {
            (content, String::new())
        };
        if !context.is_empty() {
            b.context("user context", context, None);
        }
        b.push(Message {
            role: self.role,
            content,
            thinking: (!thinking.is_empty()).then_some(thinking),
            tool_calls,
            ..Message::default()
        });
    }
}

/// A `.txt` transcript: `user:` / `assistant:` lines start messages; inside one,
/// `[Thinking]`, `[Tool call] Name` (then `  key=value` lines) and `[Tool result]` (then
/// the output) start blocks. Tool calls get ids `call-<n>` in file order.
pub(super) fn parse_txt(b: &mut SessionBuilder, text: &str) {
    let mut cur: Option<TxtMsg> = None;
    let mut mode = Mode::Text;
    let mut n_calls = 0usize;
    for line in text.lines() {
        let role = if let Some(r) = line.strip_prefix("user:") {
            Some((Role::User, r))
        } else {
            line.strip_prefix("assistant:")
                .map(|r| (Role::Assistant, r))
        };
        if let Some((role, rest)) = role {
            if let Some(m) = cur.take() {
                m.flush(b);
            }
            let mut m = TxtMsg::new(role);
            m.text.push(rest.trim().to_string());
            cur = Some(m);
            mode = Mode::Text;
            continue;
        }
        let m = cur.get_or_insert_with(|| TxtMsg::new(Role::Assistant));
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("[Thinking]") {
            mode = Mode::Thinking;
            m.thinking.push(rest.trim().to_string());
        } else if let Some(rest) = trimmed.strip_prefix("[Tool call]") {
            n_calls += 1;
            m.calls.push((
                ToolCall {
                    tool_call_id: format!("call-{n_calls}"),
                    tool_name: rest.trim().to_string(),
                    input: Value::Object(serde_json::Map::new()),
                    ..ToolCall::default()
                },
                Vec::new(),
                false,
            ));
            mode = Mode::Args;
        } else if let Some(rest) = trimmed.strip_prefix("[Tool result]") {
            // The first call still without a result; a result with no call is text.
            match m.calls.iter().position(|c| !c.2) {
                Some(i) => {
                    let call = &mut m.calls[i];
                    call.2 = true;
                    let rest = rest.trim();
                    // `[Tool result] Name` names the tool; anything else is output.
                    if !rest.is_empty() && rest != call.0.tool_name {
                        call.1.push(rest.to_string());
                    }
                    mode = Mode::Result(i);
                }
                None => {
                    m.text.push(line.to_string());
                    mode = Mode::Text;
                }
            }
        } else {
            match mode {
                Mode::Args if line.starts_with("  ") => {
                    if let Some((call, _, _)) = m.calls.last_mut() {
                        let (k, v) = trimmed.split_once('=').unwrap_or((trimmed, ""));
                        if let Value::Object(o) = &mut call.input {
                            o.insert(k.trim().to_string(), Value::String(v.to_string()));
                        }
                    }
                }
                Mode::Result(i) => m.calls[i].1.push(line.to_string()),
                Mode::Thinking if !line.trim().is_empty() => m.thinking.push(line.to_string()),
                Mode::Thinking | Mode::Args | Mode::Text => {
                    mode = Mode::Text;
                    m.text.push(line.to_string());
                }
            }
        }
    }
    if let Some(m) = cur.take() {
        m.flush(b);
    }
}

pub(super) fn load_jsonl_session(path: &Path, id: &str) -> Session {
    let mut s = load_jsonl(path, id);
    if let Some(dir) = path.parent().filter(|d| kit::file_name(d) == id) {
        let mut taken = HashSet::new();
        for f in subagent_files(dir) {
            let stem = kit::file_name(&f).trim_end_matches(".jsonl").to_string();
            let mut child = load_jsonl(&f, &stem);
            child.parent = Some(s.unified_id());
            s.subagents.push(Subagent {
                name: kit::unique_name(&mut taken, &names::escape(&stem)),
                unified_id: None,
                description: child.title.clone(),
                tool_call_id: None,
                session: Some(Box::new(child)),
            });
        }
    }
    s
}

fn load_jsonl(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Cursor, id);
    b.s.source = Source {
        paths: vec![path.to_path_buf()],
        format: "cursor-transcript-jsonl".into(),
        format_version: None,
    };
    let mut n_calls = 0usize;
    let mut lines: Vec<(usize, Value)> = Vec::new();
    jsonl::read(path, |n, v| lines.push((n, v))).into_session(&mut b.s);
    for (n, v) in lines {
        let msg = v.get("message").unwrap_or(&v);
        let content = msg.get("content").or_else(|| v.get("content"));
        let role = kit::str_field(&v, "role").or_else(|| kit::str_field(msg, "role"));
        match role {
            Some("user") => {
                let (query, rest) = split_user_query(&parts_text(content));
                let ts = rest
                    .split_once("<timestamp>")
                    .and_then(|(_, r)| r.split_once("</timestamp>"))
                    .and_then(|(t, _)| kit::parse_rfc3339(t.trim()));
                let rest = strip_tag(&rest, "timestamp");
                if !rest.is_empty() {
                    b.context("user context", rest, ts);
                }
                if !query.is_empty() {
                    b.push(Message {
                        role: Role::User,
                        content: query,
                        timestamp: ts,
                        native_id: Some(format!("line-{n}")),
                        ..Message::default()
                    });
                }
            }
            Some("assistant") => {
                let mut m = Message {
                    role: Role::Assistant,
                    native_id: Some(format!("line-{n}")),
                    ..Message::default()
                };
                let mut odd_parts: Vec<&Value> = Vec::new();
                let mut text = Vec::new();
                match content {
                    Some(Value::String(s)) => text.push(s.clone()),
                    Some(Value::Array(parts)) => {
                        for p in parts {
                            match kit::str_field(p, "type") {
                                Some("text") => {
                                    text.extend(kit::str_field(p, "text").map(String::from))
                                }
                                Some("thinking") => {
                                    m.thinking = kit::str_field(p, "thinking").map(String::from)
                                }
                                Some("tool_use") | Some("tool-call") => {
                                    n_calls += 1;
                                    m.tool_calls.push(ToolCall {
                                        tool_call_id: kit::str_any(p, &["id", "toolCallId"])
                                            .map_or_else(
                                                || format!("call-{n_calls}"),
                                                String::from,
                                            ),
                                        tool_name: kit::str_any(p, &["name", "toolName"])
                                            .unwrap_or_default()
                                            .to_string(),
                                        input: p.get("input").cloned().unwrap_or(Value::Null),
                                        ..ToolCall::default()
                                    });
                                }
                                _ => odd_parts.push(p),
                            }
                        }
                    }
                    None | Some(Value::Null) => {}
                    Some(other) => odd_parts.push(other),
                }
                m.content = text.join("\n\n");
                b.push(m);
                for p in odd_parts {
                    odd(
                        &mut b,
                        "message parts",
                        "unknown type",
                        &format!("line {n}"),
                        p,
                    );
                }
            }
            Some("tool") => match content {
                Some(Value::Array(parts)) => {
                    for p in parts {
                        let (out, err) = output_text(p.get("content").or_else(|| p.get("output")));
                        let call =
                            kit::str_any(p, &["tool_use_id", "toolCallId"]).unwrap_or_default();
                        b.tool_result(call, None, out, err, None);
                    }
                }
                None | Some(Value::Null) => {}
                Some(other) => odd(
                    &mut b,
                    "message parts",
                    "tool content is no list",
                    &format!("line {n}"),
                    other,
                ),
            },
            other => {
                let problem = format!("unknown role `{}`", other.unwrap_or(""));
                odd(&mut b, "lines", &problem, &format!("line {n}"), &v);
            }
        }
    }
    b.s.updated_at = mtime(path);
    b.finish()
}

/// `text` without `<tag>…</tag>`, trimmed.
fn strip_tag(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    match text.split_once(&open) {
        Some((a, rest)) => match rest.split_once(&close) {
            Some((_, b)) => format!("{a}{b}").trim().to_string(),
            None => a.trim().to_string(),
        },
        None => text.trim().to_string(),
    }
}
