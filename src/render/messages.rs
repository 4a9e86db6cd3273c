//! `messages.jsonl`: the session for programs, one compact JSON object per line.
//!
//! Each message line has the agent-mux `SessionMessage` shape (`role`, `content`,
//! `timestamp`, `toolCalls`, `toolResult`, `tokenUsage`, `cost`, `thinking`, `model`), so
//! tools written for that spec read it unchanged; sessfs adds `kind` for the special
//! messages (compaction summaries, branch summaries, executions, events).
//!
//! The file is prefix-stable: appending a message to the native store only appends a line.
//! That is why the header line (line 1) holds only what is fixed when the session starts
//! (agent, ids, creation time, cwd, source format). Everything that moves as the session
//! grows (title, `updatedAt`, cost, counts) lives in `meta.json` instead.

use super::text::{iso_opt, Iso};
use crate::model::{Message, MessageKind, Session, TokenUsage, ToolCall};
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Header<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    agent: &'static str,
    session_id: &'a str,
    unified_id: String,
    created_at: Option<String>,
    cwd: Option<&'a str>,
    source: HeaderSource<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HeaderSource<'a> {
    format: &'a str,
    format_version: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<MessageKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
    content: &'a str,
    timestamp: Option<Iso<'a>>,
    #[serde(skip_serializing_if = "Calls::is_empty")]
    tool_calls: Calls<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_result: Option<ResultLine<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_usage: Option<&'a TokenUsage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Call<'a> {
    tool_call_id: &'a str,
    tool_name: &'a str,
    input: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
}

impl<'a> Call<'a> {
    fn new(c: &'a ToolCall) -> Self {
        Call {
            tool_call_id: &c.tool_call_id,
            tool_name: &c.tool_name,
            input: &c.input,
            output: c.output.as_deref(),
            is_error: c.is_error,
            duration_ms: c.duration_ms,
        }
    }
}

/// A message's calls, serialised as they are read: no list of its own per message.
struct Calls<'a>(&'a [ToolCall]);

impl Calls<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Calls<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Call::new))
    }
}

/// [`ToolResult`](crate::model::ToolResult) as a line shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultLine<'a> {
    tool_call_id: &'a str,
    tool_name: &'a str,
    output: &'a str,
    is_error: bool,
}

impl<'a> Line<'a> {
    fn new(m: &'a Message) -> Self {
        let tool_result = m.tool_result.as_ref().map(|r| ResultLine {
            tool_call_id: &r.tool_call_id,
            tool_name: &r.tool_name,
            output: &r.output,
            is_error: r.is_error,
        });
        // As the `SessionMessage` shape has it, a tool-only message's `content` is empty and
        // its output is written once, in `toolResult.output`: often the biggest text of the
        // session.
        let content = if m.is_tool_only() { "" } else { m.text() };
        Line {
            role: m.role.as_str(),
            kind: (m.kind != MessageKind::Normal).then_some(m.kind),
            label: m.label.as_deref(),
            content,
            timestamp: m.timestamp.as_ref().map(Iso),
            tool_calls: Calls(&m.tool_calls),
            tool_result,
            token_usage: m.token_usage.as_ref(),
            cost: m.cost,
            thinking: m.thinking.as_deref(),
            model: m.model.as_deref(),
        }
    }
}

pub fn render(s: &Session) -> String {
    let mut out = Vec::new();
    write(s, &mut out).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// [`render`] written to `w` one line at a time, so a long session's file is never whole in
/// memory.
pub fn write(s: &Session, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let header = Header {
        kind: "session",
        agent: s.agent.name(),
        session_id: &s.id,
        unified_id: s.unified_id(),
        created_at: iso_opt(s.created_at.as_ref()),
        cwd: s.cwd.as_deref(),
        source: HeaderSource {
            format: &s.source.format,
            format_version: s.source.format_version.as_deref(),
        },
    };
    let mut line = Vec::new();
    json_line(&mut line, &header);
    w.write_all(&line)?;
    for m in &s.messages {
        json_line(&mut line, &Line::new(m));
        w.write_all(&line)?;
    }
    Ok(())
}

/// `v` as one line of compact JSON into `buf` (cleared first). Serializing sessfs' own
/// types cannot fail; should it ever, the line says so instead of panicking.
fn json_line<T: Serialize>(buf: &mut Vec<u8>, v: &T) {
    buf.clear();
    if let Err(e) = serde_json::to_writer(&mut *buf, v) {
        buf.clear();
        let error = serde_json::json!({ "error": e.to_string() });
        buf.extend_from_slice(error.to_string().as_bytes());
    }
    buf.push(b'\n');
}
