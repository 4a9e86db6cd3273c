//! agsh and meka rows to messages: one [`Builder`] per session, fed the rows of `messages`
//! in `id` order after the read transaction has ended.
//!
//! Kept apart from the database side (`mod.rs`) because it is plain data in, [`Session`]
//! out: no connection, no SQL, so the many shapes of a row's content (plain text, content
//! block arrays tagged internally or externally, event rows) can be read and tested without
//! a database.

use super::{MAX_ROW_WARNINGS, TITLE_CHARS};
use crate::model::{
    self, Agent, Message, MessageKind, Role, Session, TokenUsage, ToolCall, ToolResult,
};
use crate::stores::kit::str_any as str_field;
use crate::stores::sqlite::Cell;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Builds a [`Session`] from rows in `messages.id` order.
pub(super) struct Builder {
    pub(super) s: Session,
    /// Model for assistant messages: meka's `model_override`. Its `provider` ("anthropic")
    /// names no model and is not used as one.
    model: Option<String>,
    /// `tool_use.id` → tool name, to name the results.
    tool_names: HashMap<String, String>,
    unknown_roles: BTreeMap<String, usize>,
    unknown_blocks: BTreeMap<String, usize>,
    row_warnings: usize,
}

/// What a list of content blocks holds, in block order within each kind.
#[derive(Default)]
struct Parts {
    text: Vec<String>,
    thinking: Vec<String>,
    calls: Vec<ToolCall>,
    /// `(tool_use_id, output, is_error)`
    results: Vec<(String, String, bool)>,
}

/// Content of an `assistant` / `tool_results` row.
pub(super) enum Content {
    Blocks(Vec<Value>),
    /// Plain text; `Some(error)` when it looked like JSON but did not parse.
    Text(String, Option<String>),
}

pub(super) fn parse_content(content: &str) -> Content {
    let t = content.trim_start();
    let looks_json = t.starts_with("{\"")
        || (t.starts_with('[') && {
            let rest = t[1..].trim_start();
            rest.starts_with('{') || rest.starts_with(']')
        });
    if !looks_json {
        return Content::Text(content.to_string(), None);
    }
    match serde_json::from_str::<Value>(content) {
        Ok(Value::Array(a)) => Content::Blocks(a),
        Ok(v @ Value::Object(_)) => Content::Blocks(vec![v]),
        Ok(_) => Content::Text(content.to_string(), None),
        Err(e) => Content::Text(content.to_string(), Some(e.to_string())),
    }
}

/// `ToolUse` / `tool_use` / `tool-use` → `tooluse`.
pub(super) fn norm(tag: &str) -> String {
    tag.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// A block's kind and the object holding its fields: internally tagged (`{"type": …}`)
/// or externally tagged (`{"Text": {…}}`); a bare string is text.
fn tagged(b: &Value) -> Option<(String, &Value)> {
    if let Some(t) = b.get("type").and_then(Value::as_str) {
        return Some((norm(t), b));
    }
    match b.as_object() {
        Some(o) if o.len() == 1 => o.iter().next().map(|(k, v)| (norm(k), v)),
        _ => None,
    }
}

/// Placeholder for an image or other binary block; the data itself is only measured.
fn binary_placeholder(kind: &str, b: &Value) -> String {
    let src = b.get("source").unwrap_or(&Value::Null);
    let mime = str_field(src, &["media_type", "mediaType", "mime_type"])
        .or_else(|| str_field(b, &["media_type", "mediaType", "mime_type", "mimeType"]));
    let data = src
        .get("data")
        .or_else(|| b.get("data"))
        .and_then(Value::as_str);
    super::kit::base64_placeholder(kind, mime, data)
}

/// Text of a tool result's `content`: a string or a list of text parts.
pub(super) fn result_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items.iter().map(part_text).collect::<Vec<_>>().join("\n"),
        Some(other) => part_text(other),
    }
}

fn part_text(v: &Value) -> String {
    if let Value::String(s) = v {
        return s.clone();
    }
    match tagged(v) {
        Some((k, inner)) if k == "image" || k == "document" => binary_placeholder(&k, inner),
        Some((_, inner)) if inner.get("text").is_some_and(Value::is_string) => {
            str_field(inner, &["text"]).unwrap_or_default().to_string()
        }
        _ => match v.get("text").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None => v.to_string(),
        },
    }
}

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The prompt without the leading `<context>…</context>` blocks the agent injects.
pub(super) fn strip_context(text: &str) -> &str {
    let mut t = text.trim_start();
    while let Some(rest) = t.strip_prefix("<context>") {
        match rest.find("</context>") {
            Some(end) => t = rest[end + "</context>".len()..].trim_start(),
            None => return t,
        }
    }
    t
}

impl Builder {
    pub(super) fn new(id: &str) -> Builder {
        Builder {
            s: Session::new(Agent::Agsh, id),
            model: None,
            tool_names: HashMap::new(),
            unknown_roles: BTreeMap::new(),
            unknown_blocks: BTreeMap::new(),
            row_warnings: 0,
        }
    }

    pub(super) fn apply_session_row(&mut self, row: &BTreeMap<&str, Cell>) {
        let get = |k: &str| row.get(k).unwrap_or(&Cell::Null);
        self.s.created_at = get("created_at").time();
        self.s.updated_at = get("updated_at").time();
        self.s.cwd = get("cwd").non_empty();
        self.s.parent = get("parent_session_id")
            .non_empty()
            .map(|p| model::unified_id(Agent::Agsh, &p));
        self.model = get("model_override").non_empty();
        let stat = |k: &str| get(k).int().unwrap_or(0).max(0) as u64;
        if row.keys().any(|k| k.starts_with("stat_")) {
            let u = TokenUsage {
                input_tokens: stat("stat_input_tokens"),
                output_tokens: stat("stat_output_tokens"),
                thinking_tokens: 0,
                cached_tokens: stat("stat_cache_read_input_tokens"),
                cache_write_tokens: stat("stat_cache_creation_input_tokens"),
            };
            if !u.is_zero() {
                self.s.reported_usage = Some(u);
            }
        }
    }

    pub(super) fn row_warning(&mut self, native: &Option<String>, what: &str) {
        self.row_warnings += 1;
        if self.row_warnings <= MAX_ROW_WARNINGS {
            let at = native.as_deref().unwrap_or("?");
            self.s.warnings.push(format!("message row {at}: {what}"));
        }
    }

    fn msg(
        &self,
        role: Role,
        content: String,
        ts: Option<DateTime<Utc>>,
        native: &Option<String>,
    ) -> Message {
        Message {
            role,
            content,
            timestamp: ts,
            native_id: native.clone(),
            ..Message::default()
        }
    }

    pub(super) fn row(
        &mut self,
        native: Option<String>,
        role: &str,
        content: &str,
        ts: Option<DateTime<Utc>>,
    ) {
        match role {
            "user" => self.user_text(content, ts, &native),
            "assistant" => match parse_content(content) {
                Content::Blocks(blocks) => self.assistant(&blocks, ts, &native),
                Content::Text(text, bad) => {
                    if let Some(e) = bad {
                        self.row_warning(&native, &format!("invalid JSON, shown as text: {e}"));
                    }
                    let mut m = self.msg(Role::Assistant, text, ts, &native);
                    m.model = self.model.clone();
                    self.s.messages.push(m);
                }
            },
            "tool_results" => match parse_content(content) {
                Content::Blocks(blocks) => self.user_blocks(&blocks, ts, &native),
                Content::Text(text, bad) => {
                    let why = match bad {
                        Some(e) => format!("invalid JSON in tool results, shown as text: {e}"),
                        None => "tool results are plain text".to_string(),
                    };
                    self.row_warning(&native, &why);
                    let m = self.msg(Role::Tool, text, ts, &native);
                    self.s.messages.push(m);
                }
            },
            _ => self.event(role, content, ts, &native),
        }
    }

    fn user_text(&mut self, text: &str, ts: Option<DateTime<Utc>>, native: &Option<String>) {
        if self.s.title.is_none() {
            let t = collapse_ws(strip_context(text));
            if !t.is_empty() {
                self.s.title = Some(t.chars().take(TITLE_CHARS).collect());
            }
        }
        // The `<context>` blocks agsh puts before the prompt are injected, not typed: one
        // context message just before what the user wrote.
        let typed = strip_context(text);
        let injected = text.trim_start()[..text.trim_start().len() - typed.len()].trim_end();
        if !injected.is_empty() {
            let mut c = self.msg(Role::System, injected.to_string(), ts, native);
            c.kind = MessageKind::Context;
            c.label = Some("context".to_string());
            self.s.messages.push(c);
        }
        if !injected.is_empty() && typed.trim().is_empty() {
            return;
        }
        let prompt = if injected.is_empty() { text } else { typed };
        let m = self.msg(Role::User, prompt.to_string(), ts, native);
        self.s.messages.push(m);
    }

    fn parts(&mut self, blocks: &[Value]) -> Parts {
        let mut p = Parts::default();
        for b in blocks {
            if let Value::String(s) = b {
                p.text.push(s.clone());
                continue;
            }
            let Some((kind, f)) = tagged(b) else {
                *self.unknown_blocks.entry("(untagged)".into()).or_default() += 1;
                // The block as stored follows its placeholder: nothing of it is lost.
                p.text.push(format!(
                    "{}\n{b}",
                    model::placeholder("unsupported content block", None, None)
                ));
                continue;
            };
            match kind.as_str() {
                "text" => p
                    .text
                    .push(str_field(f, &["text"]).unwrap_or_default().to_string()),
                "tooluse" => {
                    let call = ToolCall {
                        tool_call_id: str_field(f, &["id", "tool_use_id", "toolUseId"])
                            .unwrap_or_default()
                            .to_string(),
                        tool_name: str_field(f, &["name"]).unwrap_or_default().to_string(),
                        input: f
                            .get("input")
                            .or_else(|| f.get("arguments"))
                            .cloned()
                            .unwrap_or(Value::Null),
                        ..ToolCall::default()
                    };
                    self.tool_names
                        .insert(call.tool_call_id.clone(), call.tool_name.clone());
                    p.calls.push(call);
                }
                "toolresult" => p.results.push((
                    str_field(f, &["tool_use_id", "toolUseId", "id"])
                        .unwrap_or_default()
                        .to_string(),
                    result_text(f.get("content").or_else(|| f.get("output"))),
                    ["is_error", "isError"]
                        .iter()
                        .any(|k| f.get(*k).and_then(Value::as_bool) == Some(true)),
                )),
                "thinking" => {
                    let t = str_field(f, &["thinking", "text"]).unwrap_or_default();
                    if t.is_empty() && (f.get("signature").is_some() || f.get("data").is_some()) {
                        p.thinking.push(model::SEALED_THINKING.to_string());
                    } else {
                        p.thinking.push(t.to_string());
                    }
                }
                "redactedthinking" => p.thinking.push(model::SEALED_THINKING.to_string()),
                "image" | "document" | "file" | "audio" => {
                    p.text.push(binary_placeholder(&kind, f))
                }
                _ => {
                    let name = b
                        .get("type")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or(kind);
                    p.text.push(format!(
                        "{}\n{b}",
                        model::placeholder(
                            &format!("unsupported content block: {name}"),
                            None,
                            None,
                        )
                    ));
                    *self.unknown_blocks.entry(name).or_default() += 1;
                }
            }
        }
        p
    }

    fn assistant(&mut self, blocks: &[Value], ts: Option<DateTime<Utc>>, native: &Option<String>) {
        let p = self.parts(blocks);
        let mut m = self.msg(Role::Assistant, p.text.join("\n\n"), ts, native);
        m.thinking = (!p.thinking.is_empty()).then(|| p.thinking.join("\n\n"));
        m.tool_calls = p.calls;
        m.model = self.model.clone();
        self.s.messages.push(m);
        self.push_results(p.results, ts, native);
    }

    /// A user-role block list (`tool_results` rows, repair messages): each result its own
    /// tool message, then any text the agent put beside them as a user message.
    fn user_blocks(
        &mut self,
        blocks: &[Value],
        ts: Option<DateTime<Utc>>,
        native: &Option<String>,
    ) {
        let p = self.parts(blocks);
        self.push_results(p.results, ts, native);
        if !p.text.is_empty() {
            let m = self.msg(Role::User, p.text.join("\n\n"), ts, native);
            self.s.messages.push(m);
        }
    }

    fn push_results(
        &mut self,
        results: Vec<(String, String, bool)>,
        ts: Option<DateTime<Utc>>,
        native: &Option<String>,
    ) {
        for (id, output, is_error) in results {
            let tool_name = match self.tool_names.get(&id) {
                Some(n) => n.clone(),
                None => {
                    self.row_warning(native, &format!("tool result {id} has no matching call"));
                    "unknown".to_string()
                }
            };
            // The text lives once, in the result (`Message::text` returns it).
            let mut m = self.msg(Role::Tool, String::new(), ts, native);
            m.tool_result = Some(ToolResult {
                tool_call_id: id,
                tool_name,
                output,
                is_error,
            });
            self.s.messages.push(m);
        }
    }

    /// An agsh `Message` value (inside compaction and repair events).
    fn message_value(&mut self, v: &Value, ts: Option<DateTime<Utc>>, native: &Option<String>) {
        let role = v
            .get("role")
            .and_then(Value::as_str)
            .map(norm)
            .unwrap_or_default();
        let blocks: Vec<Value> = match v.get("content") {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) => vec![Value::String(s.clone())],
            Some(other) => vec![other.clone()],
            None => Vec::new(),
        };
        match role.as_str() {
            "assistant" => self.assistant(&blocks, ts, native),
            "user" => self.user_blocks(&blocks, ts, native),
            _ => {
                let p = self.parts(&blocks);
                let m = self.msg(Role::System, p.text.join("\n\n"), ts, native);
                self.s.messages.push(m);
            }
        }
    }

    fn event(
        &mut self,
        role: &str,
        content: &str,
        ts: Option<DateTime<Utc>>,
        native: &Option<String>,
    ) {
        const KNOWN: [&str; 5] = [
            "compactboundary",
            "compaction",
            "repair",
            "rewind",
            "redact",
        ];
        let parsed = serde_json::from_str::<Value>(content).ok();
        let from_content = parsed
            .as_ref()
            .and_then(tagged)
            .filter(|(k, _)| KNOWN.contains(&k.as_str()));
        let (kind, inner) = match (from_content, &parsed) {
            (Some((k, inner)), _) => (k, inner),
            (None, Some(v)) if KNOWN.contains(&norm(role).as_str()) => (norm(role), v),
            (None, None) if KNOWN.contains(&norm(role).as_str()) => {
                self.row_warning(
                    native,
                    &format!("`{role}` event is not valid JSON; shown as stored"),
                );
                let mut m = self.msg(Role::System, content.to_string(), ts, native);
                m.kind = MessageKind::Context;
                m.label = Some(format!("unparsed {role} event"));
                self.s.messages.push(m);
                return;
            }
            _ => {
                // Counted once per role, and the row stays visible as stored.
                *self.unknown_roles.entry(role.to_string()).or_default() += 1;
                let mut m = self.msg(Role::System, content.to_string(), ts, native);
                m.kind = MessageKind::Context;
                m.label = Some(format!("{role} message"));
                self.s.messages.push(m);
                return;
            }
        };
        let count = |v: Option<&Value>| match v {
            Some(Value::Array(a)) => Some(a.len() as u64),
            Some(v) => v.as_u64(),
            None => None,
        };
        match kind.as_str() {
            "compactboundary" | "compaction" => {
                let summary = inner.get("summary").unwrap_or(&Value::Null);
                let (role, text) = match summary {
                    Value::String(s) => (Role::System, s.clone()),
                    v => {
                        let role = match v.get("role").and_then(Value::as_str).map(norm).as_deref()
                        {
                            Some("user") => Role::User,
                            Some("assistant") => Role::Assistant,
                            _ => Role::System,
                        };
                        let blocks: Vec<Value> = match v.get("content") {
                            Some(Value::Array(a)) => a.clone(),
                            Some(Value::String(s)) => vec![Value::String(s.clone())],
                            _ => Vec::new(),
                        };
                        (role, self.parts(&blocks).text.join("\n\n"))
                    }
                };
                let text = if text.trim().is_empty() {
                    let n = count(inner.get("replaced_count")).unwrap_or(0);
                    format!("[conversation compacted: {n} messages replaced]")
                } else {
                    text
                };
                let mut m = self.msg(role, text, ts, native);
                m.kind = MessageKind::CompactionSummary;
                self.s.messages.push(m);
            }
            "repair" | "rewind" => {
                let n = count(inner.get("replaced_count")).unwrap_or(0);
                let mut m = self.msg(Role::System, format!("[rewound {n} messages]"), ts, native);
                m.kind = MessageKind::Event;
                self.s.messages.push(m);
                if let Some(Value::Array(msgs)) = inner.get("messages") {
                    for v in msgs {
                        self.message_value(v, ts, native);
                    }
                }
            }
            _ => {
                let n = count(inner.get("images")).unwrap_or(0);
                let mut m = self.msg(Role::System, format!("[redacted {n} images]"), ts, native);
                m.kind = MessageKind::Event;
                self.s.messages.push(m);
            }
        }
    }

    pub(super) fn finish(mut self) -> Session {
        if self.row_warnings > MAX_ROW_WARNINGS {
            self.s.warnings.push(format!(
                "{} more message rows with problems",
                self.row_warnings - MAX_ROW_WARNINGS
            ));
        }
        for (role, n) in &self.unknown_roles {
            self.s.warnings.push(format!(
                "{n} message rows with unknown role `{role}` shown as stored"
            ));
        }
        for (kind, n) in &self.unknown_blocks {
            self.s.warnings.push(format!(
                "{n} content blocks of unsupported type `{kind}` shown as placeholders with their JSON"
            ));
        }
        let first = self.s.messages.iter().find_map(|m| m.timestamp);
        let last = self.s.messages.iter().rev().find_map(|m| m.timestamp);
        if self.s.created_at.is_none() {
            self.s.created_at = first;
        }
        if self.s.updated_at.is_none() {
            self.s.updated_at = last;
        }
        self.s
    }
}
