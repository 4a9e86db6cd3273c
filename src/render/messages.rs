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

use super::json::Object;
use super::text::{iso_opt, Iso};
use crate::model::{Message, MessageKind, Session, ToolCall};
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

/// One message as a line: `buf` is cleared first. Written by hand ([`super::json`]) with
/// the field names and order of the `SessionMessage` shape; optional fields are left out
/// when absent, except `timestamp`, which is `null`.
fn message_line(buf: &mut Vec<u8>, m: &Message) {
    buf.clear();
    let mut o = Object::new(buf);
    o.str("role", m.role.as_str());
    if m.kind != MessageKind::Normal {
        o.serde("kind", &m.kind);
    }
    o.opt_str("label", m.label.as_deref());
    // As the `SessionMessage` shape has it, a tool-only message's `content` is empty and
    // its output is written once, in `toolResult.output`: often the biggest text of the
    // session.
    o.str("content", if m.is_tool_only() { "" } else { m.text() });
    match &m.timestamp {
        Some(t) => o.display("timestamp", Iso(t)),
        None => o.with("timestamp", |out| out.extend_from_slice(b"null")),
    }
    if !m.tool_calls.is_empty() {
        o.with("toolCalls", |out| {
            out.push(b'[');
            for (i, c) in m.tool_calls.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                call(out, c);
            }
            out.push(b']');
        });
    }
    if let Some(r) = &m.tool_result {
        o.with("toolResult", |out| {
            let mut o = Object::new(out);
            o.str("toolCallId", &r.tool_call_id);
            o.str("toolName", &r.tool_name);
            o.str("output", &r.output);
            o.bool("isError", r.is_error);
            o.end();
        });
    }
    if let Some(u) = &m.token_usage {
        o.serde("tokenUsage", u);
    }
    if let Some(c) = m.cost {
        o.serde("cost", &c);
    }
    o.opt_str("thinking", m.thinking.as_deref());
    o.opt_str("model", m.model.as_deref());
    o.end();
    buf.push(b'\n');
}

/// One entry of a message's `toolCalls`.
fn call(out: &mut Vec<u8>, c: &ToolCall) {
    let mut o = Object::new(out);
    o.str("toolCallId", &c.tool_call_id);
    o.str("toolName", &c.tool_name);
    o.serde("input", &c.input);
    o.opt_str("output", c.output.as_deref());
    if let Some(e) = c.is_error {
        o.bool("isError", e);
    }
    if let Some(d) = c.duration_ms {
        o.serde("durationMs", &d);
    }
    o.end();
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
        message_line(&mut line, m);
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
