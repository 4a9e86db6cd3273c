//! One Claude Code JSONL line in, one compact [`Rec`] out.
//!
//! Lines are turned into `Rec`s while the file streams, so the parsed `serde_json::Value` of
//! a line (with its base64 images, `toolUseResult` copies of whole files and progress
//! payloads) is dropped at once; only the text the transcript needs stays in memory.
//! Session-level facts that are not conversation (titles, tags, links to subagents) are
//! folded into one [`FileMeta`] on the way.

use crate::model::{TokenUsage, ToolCall};
use crate::stores::kit::{self, u64_field};
use crate::stores::parse_time;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// What a record is, as far as the conversation graph cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    User,
    Assistant,
    System,
    Attachment,
    /// Has a uuid but never renders (`progress`): kept so children can hang off it.
    Other,
}

impl Kind {
    /// Chain records ("TranscriptMessage"): user, assistant, system, attachment.
    pub fn is_chain(self) -> bool {
        !matches!(self, Kind::Other)
    }

    /// Conversation participants: the records that define where the conversation is.
    pub fn is_participant(self) -> bool {
        matches!(self, Kind::User | Kind::Assistant)
    }
}

/// One `tool_result` block.
#[derive(Clone, Debug, Default)]
pub(super) struct ResultBlock {
    pub id: String,
    pub output: String,
    pub is_error: bool,
}

/// One graph node: a line that carries a `uuid` (or a chain record without one).
#[derive(Clone, Debug)]
pub(super) struct Rec {
    pub kind: Kind,
    pub uuid: Option<String>,
    pub parent: Option<String>,
    pub logical_parent: Option<String>,
    pub sidechain: bool,
    pub agent_id: Option<String>,
    pub meta: bool,
    pub compact_summary: bool,
    pub timestamp: Option<DateTime<Utc>>,
    /// `message.id` of assistant records: lines of one API reply share it.
    pub msg_id: Option<String>,
    /// `requestId`: with `msg_id`, the identity of one API reply across files (a resumed
    /// session copies earlier replies into its own file).
    pub request_id: Option<String>,
    pub model: Option<String>,
    pub text: String,
    pub thinking: Option<String>,
    pub sealed: bool,
    pub tool_uses: Vec<ToolCall>,
    pub results: Vec<ResultBlock>,
    pub usage: Option<TokenUsage>,
    pub subtype: Option<String>,
    pub api_error: bool,
    /// `toolUseResult.persistedOutputPath`: the spilled output of a big tool result.
    pub persisted: Option<String>,
    /// System records: a short rendering of their payload.
    pub system_text: Option<String>,
    /// A system record that is a slash command the user typed (2.1 `local_command`).
    pub user_command: bool,
}

impl Rec {
    fn new(kind: Kind) -> Rec {
        Rec {
            kind,
            uuid: None,
            parent: None,
            logical_parent: None,
            sidechain: false,
            agent_id: None,
            meta: false,
            compact_summary: false,
            timestamp: None,
            msg_id: None,
            request_id: None,
            model: None,
            text: String::new(),
            thinking: None,
            sealed: false,
            tool_uses: Vec::new(),
            results: Vec::new(),
            usage: None,
            subtype: None,
            api_error: false,
            persisted: None,
            system_text: None,
            user_command: false,
        }
    }
}

/// Facts about the whole file gathered from every line, including non-chain records.
#[derive(Clone, Debug, Default)]
pub(super) struct FileMeta {
    pub custom_title: Option<String>,
    pub ai_title: Option<String>,
    /// `(leafUuid, summary)` in file order.
    pub summaries: Vec<(Option<String>, String)>,
    /// The latest `tag` record; empty clears.
    pub tag: Option<String>,
    pub first_ts: Option<DateTime<Utc>>,
    pub last_ts: Option<DateTime<Utc>>,
    pub cwd: Option<String>,
    pub version: Option<String>,
    pub session_id: Option<String>,
    pub forked_from: Option<String>,
    /// `(agentId, tool_use id)` from `toolUseResult.agentId` and `agent_progress` lines.
    pub agent_links: Vec<(String, String)>,
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    kit::str_field(v, key)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn bool_field(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

impl FileMeta {
    fn note_time(&mut self, t: DateTime<Utc>) {
        if self.first_ts.is_none_or(|f| t < f) {
            self.first_ts = Some(t);
        }
        if self.last_ts.is_none_or(|l| t > l) {
            self.last_ts = Some(t);
        }
    }
}

/// Turn one parsed line into a graph node (if it is one), updating `meta` either way.
pub(super) fn parse_line(v: &Value, meta: &mut FileMeta) -> Option<Rec> {
    let obj = v.as_object()?;
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
    let ts = obj.get("timestamp").and_then(parse_time);
    if let Some(t) = ts {
        meta.note_time(t);
    }
    if let Some(ver) = str_field(v, "version") {
        meta.version = Some(ver);
    }
    if meta.session_id.is_none() {
        meta.session_id = str_field(v, "sessionId");
    }
    match ty {
        "custom-title" => {
            if let Some(t) = str_field(v, "customTitle").or_else(|| str_field(v, "title")) {
                meta.custom_title = Some(t);
            }
            return None;
        }
        "ai-title" => {
            if let Some(t) = str_field(v, "aiTitle").or_else(|| str_field(v, "title")) {
                meta.ai_title = Some(t);
            }
            return None;
        }
        "summary" => {
            if let Some(s) = str_field(v, "summary") {
                meta.summaries.push((str_field(v, "leafUuid"), s));
            }
            return None;
        }
        "tag" => {
            meta.tag = Some(
                v.get("tag")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim()
                    .to_string(),
            );
            return None;
        }
        _ => {}
    }
    let kind = match ty {
        "user" => Kind::User,
        "assistant" => Kind::Assistant,
        "system" => Kind::System,
        "attachment" => Kind::Attachment,
        _ => {
            if ty == "progress" {
                note_progress(v, meta);
            }
            // Other records join the graph only when they carry a uuid: a chain record may
            // name one (a `progress` line) as its parent.
            let uuid = str_field(v, "uuid")?;
            let mut r = Rec::new(Kind::Other);
            r.uuid = Some(uuid);
            r.parent = str_field(v, "parentUuid");
            r.sidechain = bool_field(v, "isSidechain");
            r.timestamp = ts;
            return Some(r);
        }
    };
    let mut r = Rec::new(kind);
    r.uuid = str_field(v, "uuid");
    r.parent = str_field(v, "parentUuid");
    r.logical_parent = str_field(v, "logicalParentUuid");
    r.sidechain = bool_field(v, "isSidechain");
    r.agent_id = str_field(v, "agentId");
    r.meta = bool_field(v, "isMeta");
    r.compact_summary = bool_field(v, "isCompactSummary");
    r.timestamp = ts;
    r.api_error = bool_field(v, "isApiErrorMessage");
    if meta.cwd.is_none() {
        meta.cwd = str_field(v, "cwd");
    }
    if !r.sidechain && meta.forked_from.is_none() {
        meta.forked_from = v.get("forkedFrom").and_then(|f| str_field(f, "sessionId"));
    }
    match kind {
        Kind::User | Kind::Assistant => parse_message(v, &mut r, meta),
        Kind::System => parse_system(v, &mut r),
        _ => {}
    }
    Some(r)
}

fn note_progress(v: &Value, meta: &mut FileMeta) {
    let Some(data) = v.get("data") else { return };
    if data.get("type").and_then(Value::as_str) != Some("agent_progress") {
        return;
    }
    if let (Some(agent), Some(tool)) = (str_field(data, "agentId"), str_field(v, "parentToolUseID"))
    {
        if !meta.agent_links.iter().any(|(a, _)| *a == agent) {
            meta.agent_links.push((agent, tool));
        }
    }
}

fn parse_message(v: &Value, r: &mut Rec, meta: &mut FileMeta) {
    let msg = v.get("message");
    if let Some(m) = msg {
        r.msg_id = str_field(m, "id");
        r.request_id = str_field(v, "requestId");
        r.model = str_field(m, "model").filter(|m| m != "<synthetic>");
        if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
            r.usage = Some(TokenUsage {
                input_tokens: u64_field(u, "input_tokens"),
                output_tokens: u64_field(u, "output_tokens"),
                thinking_tokens: 0,
                cached_tokens: u64_field(u, "cache_read_input_tokens"),
                cache_write_tokens: u64_field(u, "cache_creation_input_tokens"),
            });
        }
    }
    // User records can only answer tool calls; assistant records only make them.
    let content = msg.and_then(|m| m.get("content"));
    let mut texts: Vec<String> = Vec::new();
    let mut thinking: Vec<String> = Vec::new();
    match content {
        Some(Value::String(s)) => texts.push(s.clone()),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                block(b, r, &mut texts, &mut thinking);
            }
        }
        _ => {}
    }
    r.text = join_texts(&texts);
    if !thinking.is_empty() {
        r.thinking = Some(thinking.join("\n\n"));
    }
    if r.api_error && r.text.trim().is_empty() {
        let err = v
            .get("error")
            .map(|e| match e {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_else(|| "unknown".into());
        r.text = format!("API error: {err}");
    }
    if let Some(tur) = v.get("toolUseResult").filter(|t| t.is_object()) {
        r.persisted = str_field(tur, "persistedOutputPath");
        if let (Some(agent), Some(res)) = (str_field(tur, "agentId"), r.results.first()) {
            if !meta.agent_links.iter().any(|(a, _)| *a == agent) {
                meta.agent_links.push((agent, res.id.clone()));
            }
        }
    }
}

/// Text blocks joined by blank lines; whitespace-only blocks (streaming leftovers) dropped.
pub(super) fn join_texts(texts: &[String]) -> String {
    let mut out = String::new();
    for t in texts {
        if t.trim().is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(t);
    }
    out
}

fn block(b: &Value, r: &mut Rec, texts: &mut Vec<String>, thinking: &mut Vec<String>) {
    let b = match b {
        Value::String(s) => {
            texts.push(s.clone());
            return;
        }
        Value::Object(_) => b,
        _ => return,
    };
    match b.get("type").and_then(Value::as_str).unwrap_or("") {
        "text" => {
            if let Some(t) = b.get("text").and_then(Value::as_str) {
                texts.push(t.to_string());
            }
        }
        "thinking" => {
            let t = b.get("thinking").and_then(Value::as_str).unwrap_or("");
            if t.trim().is_empty() {
                if b.get("signature").is_some_and(|s| !s.is_null()) {
                    r.sealed = true;
                }
            } else {
                thinking.push(t.to_string());
            }
        }
        "redacted_thinking" => r.sealed = true,
        "tool_use" | "server_tool_use" => r.tool_uses.push(ToolCall {
            tool_call_id: str_field(b, "id").unwrap_or_default(),
            tool_name: str_field(b, "name").unwrap_or_else(|| "unknown".into()),
            input: b.get("input").cloned().unwrap_or(Value::Null),
            ..ToolCall::default()
        }),
        "tool_result" => r.results.push(ResultBlock {
            id: str_field(b, "tool_use_id").unwrap_or_default(),
            output: result_output(b.get("content")),
            is_error: bool_field(b, "is_error"),
        }),
        "image" | "document" => texts.push(media_placeholder(b)),
        "tool_reference" => {
            let name = str_field(b, "tool_name").or_else(|| str_field(b, "name"));
            texts.push(format!("[tool reference: {}]", name.unwrap_or_default()));
        }
        _ => {}
    }
}

/// `[image: image/png, 12.3 KB]` for a base64 block; the data itself is never kept.
fn media_placeholder(b: &Value) -> String {
    let kind = b.get("type").and_then(Value::as_str).unwrap_or("image");
    let src = b.get("source");
    let mime = src
        .and_then(|s| s.get("media_type"))
        .and_then(Value::as_str);
    let data = src.and_then(|s| s.get("data")).and_then(Value::as_str);
    kit::base64_placeholder(kind, mime, data)
}

/// The text of a `tool_result` content: a string or text/image blocks.
pub(super) fn result_output(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut parts: Vec<String> = Vec::new();
            for b in blocks {
                match b {
                    Value::String(s) => parts.push(s.clone()),
                    Value::Object(_) => match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = b.get("text").and_then(Value::as_str) {
                                parts.push(t.to_string());
                            }
                        }
                        Some("image") | Some("document") => parts.push(media_placeholder(b)),
                        Some("tool_reference") => {
                            let n = str_field(b, "tool_name").unwrap_or_default();
                            parts.push(format!("[tool reference: {n}]"));
                        }
                        _ => {}
                    },
                    _ => {}
                }
            }
            parts.join("\n")
        }
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// `167094` -> `167,094`, as token counts read elsewhere in the transcript.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn parse_system(v: &Value, r: &mut Rec) {
    let sub = str_field(v, "subtype");
    let content = v
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let text = match sub.as_deref() {
        Some("compact_boundary") => {
            let m = v.get("compactMetadata");
            let trigger = m
                .and_then(|m| str_field(m, "trigger"))
                .unwrap_or_else(|| "unknown".into());
            let pre = m.map(|m| u64_field(m, "preTokens")).unwrap_or(0);
            Some(if pre > 0 {
                format!(
                    "Conversation compacted ({trigger}, {} tokens before)",
                    grouped(pre)
                )
            } else {
                format!("Conversation compacted ({trigger})")
            })
        }
        Some("microcompact_boundary") => Some("Context micro-compacted".to_string()),
        Some("turn_duration") | Some("stop_hook_summary") | Some("bridge_status") => None,
        Some("api_error") => {
            let cause = v
                .get("cause")
                .or_else(|| v.get("error"))
                .map(|c| match c {
                    Value::String(s) => s.clone(),
                    Value::Object(o) => o
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| c.to_string()),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            let attempt = u64_field(v, "retryAttempt");
            let max = u64_field(v, "maxRetries");
            let mut s = String::from("API error");
            if !cause.is_empty() {
                s.push_str(": ");
                s.push_str(&cause);
            } else if !content.is_empty() {
                s.push_str(": ");
                s.push_str(&content);
            }
            if attempt > 0 {
                s.push_str(&format!(" (retry {attempt}/{max})"));
            }
            Some(s)
        }
        _ => {
            let special = super::text::clean_command_text(&content);
            let wrapped = special.is_some();
            r.user_command = special
                .as_ref()
                .is_some_and(|c| c.special == super::text::Special::SlashCommand);
            let cleaned = special.map(|c| c.text).unwrap_or(content);
            let cleaned = cleaned.trim().to_string();
            if cleaned.is_empty() && wrapped {
                // A command that printed nothing.
                None
            } else if cleaned.is_empty() {
                sub.clone().map(|s| format!("[{s}]"))
            } else {
                Some(cleaned)
            }
        }
    };
    r.subtype = sub;
    r.system_text = text;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_maps_cache_fields() {
        let mut m = FileMeta::default();
        let r = parse_line(
            &json!({"type":"assistant","uuid":"a","message":{"id":"m","model":"claude-x",
                "content":[{"type":"text","text":"hi"}],
                "usage":{"input_tokens":3,"output_tokens":5,"cache_read_input_tokens":7,
                         "cache_creation_input_tokens":11}}}),
            &mut m,
        )
        .expect("a record");
        let u = r.usage.expect("usage");
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cached_tokens,
                u.cache_write_tokens
            ),
            (3, 5, 7, 11)
        );
        assert_eq!(r.model.as_deref(), Some("claude-x"));
    }

    #[test]
    fn synthetic_model_and_sealed_thinking() {
        let mut m = FileMeta::default();
        let r = parse_line(
            &json!({"type":"assistant","uuid":"a","message":{"model":"<synthetic>",
                "content":[{"type":"thinking","thinking":"","signature":"abc"},
                           {"type":"redacted_thinking","data":"zzz"}]}}),
            &mut m,
        )
        .expect("a record");
        assert!(r.model.is_none());
        assert!(r.sealed);
        assert!(r.thinking.is_none());
    }

    #[test]
    fn images_become_placeholders() {
        let mut m = FileMeta::default();
        let r = parse_line(
            &json!({"type":"user","uuid":"u","message":{"content":[
                {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},
                {"type":"tool_result","tool_use_id":"t","content":[
                    {"type":"text","text":"out"},
                    {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AAAAAAAA"}}]}]}}),
            &mut m,
        )
        .expect("a record");
        assert_eq!(r.text, "[image: image/png, 3 B]");
        assert_eq!(r.results[0].output, "out\n[image: image/jpeg, 6 B]");
    }

    #[test]
    fn metadata_records_feed_file_meta() {
        let mut m = FileMeta::default();
        for v in [
            json!({"type":"custom-title","customTitle":"Named"}),
            json!({"type":"ai-title","aiTitle":"Auto"}),
            json!({"type":"summary","summary":"S","leafUuid":"x"}),
            json!({"type":"tag","tag":"work"}),
        ] {
            assert!(parse_line(&v, &mut m).is_none());
        }
        assert_eq!(m.custom_title.as_deref(), Some("Named"));
        assert_eq!(m.ai_title.as_deref(), Some("Auto"));
        assert_eq!(m.summaries.len(), 1);
        assert_eq!(m.tag.as_deref(), Some("work"));
    }
}
