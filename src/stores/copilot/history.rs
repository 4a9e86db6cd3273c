//! The Copilot CLI's history era (≤ 0.0.341): one `session_<id>_<ms>.json` document per
//! session, `{chatMessages, timeline}`, the timeline preferred when present.
//!
//! A separate format from the events (one JSON document, OpenAI-style chat messages, no
//! event chain), so it has its own reader; it shares only the session builder and the
//! `unparsed record` label.

use super::events::UNPARSED;
use crate::model::{Agent, Message, Role, Session, ToolCall};
use crate::stores::kit;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::path::Path;

/// History documents larger than this are not parsed.
const MAX_JSON_BYTES: u64 = 256 << 20;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct History<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    session_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    start_time: Cow<'a, str>,
    /// Entries are read one by one, so one that cannot be read costs only itself.
    #[serde(default, borrow)]
    chat_messages: Vec<&'a RawValue>,
    #[serde(default, borrow)]
    timeline: Vec<&'a RawValue>,
}

/// An OpenAI-style chat message.
#[derive(Deserialize)]
struct ChatMessage<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    role: Cow<'a, str>,
    /// A string or a list of `{type, text | image_url}` parts.
    #[serde(default)]
    content: Value,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ChatToolCall<'a>>>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    tool_call_id: Cow<'a, str>,
}

#[derive(Deserialize)]
struct ChatToolCall<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    id: Cow<'a, str>,
    #[serde(default, borrow)]
    function: Option<ChatFunction<'a>>,
}

#[derive(Deserialize)]
struct ChatFunction<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    name: Cow<'a, str>,
    /// A JSON string, as OpenAI sends it.
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    arguments: Cow<'a, str>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
enum TimelineType {
    User,
    Copilot,
    Info,
    Warning,
    Error,
    ToolCallCompleted,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TimelineEntry<'a> {
    #[serde(rename = "type", default)]
    ty: Option<TimelineType>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    timestamp: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    text: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    call_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Value,
    #[serde(default, borrow)]
    result: Option<TimelineResult<'a>>,
}

#[derive(Deserialize)]
struct TimelineResult<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "kit::cow_str")]
    ty: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    log: Cow<'a, str>,
}

pub(super) fn load_history(path: &Path, id: &str) -> Session {
    let mut b = kit::SessionBuilder::new(Agent::Copilot, id);
    b.s.source.paths = vec![path.to_path_buf()];
    b.s.source.format = "copilot-history-json".into();
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_JSON_BYTES => {
            b.warn(format!("{} bytes, too large to parse, skipped", m.len()));
            return b.finish();
        }
        _ => match kit::read_file(path) {
            Ok(x) => x,
            Err(e) => {
                b.warn(format!("cannot read: {e}"));
                return b.finish();
            }
        },
    };
    let text = String::from_utf8_lossy(&bytes);
    let h: History<'_> = match serde_json::from_str(&text) {
        Ok(h) => h,
        Err(e) => {
            // A document cut short or of another shape: its text is all there is.
            b.warn(format!(
                "not a Copilot history session: {e}; its raw text is shown"
            ));
            b.context(UNPARSED, text.trim().to_string(), None);
            return b.finish();
        }
    };
    if !h.session_id.is_empty() && h.session_id != id {
        b.warn(format!(
            "sessionId {} differs from the file name; the file name is used",
            h.session_id
        ));
    }
    b.s.created_at = kit::parse_rfc3339(&h.start_time);
    let mut unread = kit::Unparsed::default();
    if h.timeline.is_empty() {
        chat_messages(h.chat_messages, &mut b, &mut unread);
    } else {
        timeline(h.timeline, &mut b, &mut unread);
    }
    for w in unread.warnings() {
        b.warn(w);
    }
    b.finish()
}

/// An entry of a history document that cannot be read: counted, and its text shown where
/// it stood.
fn unread_entry(
    b: &mut kit::SessionBuilder,
    unread: &mut kit::Unparsed,
    raw: &RawValue,
    problem: &str,
    first: impl FnOnce() -> String,
) {
    unread.note("entries", problem, first);
    b.context(UNPARSED, raw.get().trim().to_string(), None);
}

/// The timeline is what the user saw, with times and tool results: preferred when present.
fn timeline(entries: Vec<&RawValue>, b: &mut kit::SessionBuilder, unread: &mut kit::Unparsed) {
    for (i, raw) in entries.into_iter().enumerate() {
        let at = format!("timeline[{i}]");
        let e = match serde_json::from_str::<TimelineEntry<'_>>(raw.get()) {
            Ok(e) => e,
            Err(e) => {
                unread_entry(b, unread, raw, "not a timeline entry", || {
                    format!("{at}: {e}")
                });
                continue;
            }
        };
        let ts = kit::parse_rfc3339(&e.timestamp);
        let text = e.text.into_owned();
        match e.ty.unwrap_or(TimelineType::Other) {
            TimelineType::User => b.push(Message {
                role: Role::User,
                content: text,
                timestamp: ts,
                ..Message::default()
            }),
            TimelineType::Copilot => b.push(Message {
                role: Role::Assistant,
                content: text,
                timestamp: ts,
                ..Message::default()
            }),
            t @ (TimelineType::Info | TimelineType::Warning | TimelineType::Error) => {
                let label = format!("{t:?}").to_lowercase();
                b.event(format!("{label}: {text}"), ts);
            }
            TimelineType::ToolCallCompleted => {
                let (output, is_error) = match e.result {
                    Some(r) => (
                        super::events::search_answer(r.log.into_owned()),
                        !r.ty.is_empty() && r.ty != "success",
                    ),
                    None => (String::new(), false),
                };
                let call = ToolCall {
                    tool_call_id: e.call_id.into_owned(),
                    tool_name: e.name.into_owned(),
                    input: e.arguments,
                    output: Some(output),
                    is_error: Some(is_error),
                    duration_ms: None,
                };
                // Call and result share the entry; calls follow the reply that made them.
                match b.last_mut().filter(|m| m.role == Role::Assistant) {
                    Some(m) => m.tool_calls.push(call),
                    None => b.push(Message {
                        role: Role::Assistant,
                        timestamp: ts,
                        tool_calls: vec![call],
                        ..Message::default()
                    }),
                }
            }
            TimelineType::Other => unread_entry(
                b,
                unread,
                raw,
                "a timeline type sessfs does not read",
                || at,
            ),
        }
    }
}

fn chat_messages(msgs: Vec<&RawValue>, b: &mut kit::SessionBuilder, unread: &mut kit::Unparsed) {
    for (i, raw) in msgs.into_iter().enumerate() {
        let at = format!("chatMessages[{i}]");
        let m = match serde_json::from_str::<ChatMessage<'_>>(raw.get()) {
            Ok(m) => m,
            Err(e) => {
                unread_entry(b, unread, raw, "not a chat message", || {
                    format!("{at}: {e}")
                });
                continue;
            }
        };
        let content = chat_text(&m.content);
        match m.role.as_ref() {
            "system" | "developer" => b.context("system prompt", content, None),
            "user" => b.push(Message {
                role: Role::User,
                content,
                ..Message::default()
            }),
            "assistant" => {
                let tool_calls = m
                    .tool_calls
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let (name, args) = c
                            .function
                            .map(|f| (f.name.into_owned(), f.arguments.into_owned()))
                            .unwrap_or_default();
                        ToolCall {
                            tool_call_id: c.id.into_owned(),
                            tool_name: name,
                            input: serde_json::from_str(&args).unwrap_or(Value::String(args)),
                            ..ToolCall::default()
                        }
                    })
                    .collect();
                b.push(Message {
                    role: Role::Assistant,
                    content,
                    tool_calls,
                    ..Message::default()
                });
            }
            "tool" => b.tool_result(&m.tool_call_id, None, content, false, None),
            other => {
                let problem = format!("a chat message with role {other:?}");
                unread_entry(b, unread, raw, &problem, || at);
            }
        }
    }
}

fn chat_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            let mut out: Vec<String> = Vec::new();
            for p in parts {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    out.push(t.to_string());
                } else if let Some(url) = p
                    .get("image_url")
                    .and_then(|u| u.get("url").or(Some(u)))
                    .and_then(Value::as_str)
                {
                    out.push(kit::data_url_placeholder(url));
                }
            }
            out.join("\n")
        }
        _ => String::new(),
    }
}
