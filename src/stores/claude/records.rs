//! One Claude Code JSONL line in, one compact [`Rec`] out.
//!
//! Lines are turned into `Rec`s while the file streams. A line is read in one pass into a
//! borrowed [`Line`] that names only the fields sessfs uses: what it skips (base64 images,
//! `toolUseResult` copies of whole files, progress payloads) is never built, and what it
//! keeps borrows from the line until the `Rec` takes the text the transcript needs.
//! Session-level facts that are not conversation (titles, tags, links to subagents) are
//! folded into one [`FileMeta`] on the way.

use crate::model::{TokenUsage, ToolCall};
use crate::stores::jsonl;
use crate::stores::kit::{self, Loose, Obj};

type Content<'a> = kit::Content<'a, Block<'a>>;
type Item<'a> = kit::Item<'a, Block<'a>>;
use chrono::{DateTime, Utc};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

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
    /// Parts of `message.content` sessfs does not read (see [`unread_parts`]), as JSON
    /// text: shown as stored after the record's message, counted in [`FileMeta::unparsed`].
    pub unread: Vec<String>,
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
            unread: Vec::new(),
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
    /// Content sessfs could not read, counted by kind (the warnings of the file).
    pub unparsed: kit::Unparsed,
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

/// One JSONL line, read in one pass. Only the fields sessfs uses are kept; every field
/// accepts any JSON type and reads as absent when it has an unexpected one (as the former
/// `Value` accessors did), so an odd field never costs its record.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Line<'a> {
    #[serde(rename = "type", borrow)]
    ty: Loose<'a>,
    #[serde(borrow)]
    timestamp: Loose<'a>,
    #[serde(borrow)]
    version: Loose<'a>,
    #[serde(borrow)]
    session_id: Loose<'a>,
    #[serde(borrow)]
    custom_title: Loose<'a>,
    #[serde(borrow)]
    ai_title: Loose<'a>,
    #[serde(borrow)]
    title: Loose<'a>,
    #[serde(borrow)]
    summary: Loose<'a>,
    #[serde(borrow)]
    leaf_uuid: Loose<'a>,
    #[serde(borrow)]
    tag: Loose<'a>,
    #[serde(borrow)]
    uuid: Loose<'a>,
    #[serde(borrow)]
    parent_uuid: Loose<'a>,
    #[serde(borrow)]
    logical_parent_uuid: Loose<'a>,
    is_sidechain: Loose<'a>,
    #[serde(borrow)]
    agent_id: Loose<'a>,
    is_meta: Loose<'a>,
    is_compact_summary: Loose<'a>,
    is_api_error_message: Loose<'a>,
    #[serde(borrow)]
    cwd: Loose<'a>,
    #[serde(borrow)]
    forked_from: Obj<SessionRef<'a>>,
    #[serde(borrow)]
    data: Obj<Progress<'a>>,
    #[serde(rename = "parentToolUseID", borrow)]
    parent_tool_use_id: Loose<'a>,
    #[serde(borrow)]
    message: Obj<Msg<'a>>,
    #[serde(borrow)]
    request_id: Loose<'a>,
    #[serde(deserialize_with = "kit::present")]
    error: Option<Value>,
    #[serde(borrow)]
    tool_use_result: Obj<ToolUseResult<'a>>,
    #[serde(borrow)]
    subtype: Loose<'a>,
    #[serde(borrow)]
    content: Loose<'a>,
    #[serde(borrow)]
    compact_metadata: Obj<CompactMeta<'a>>,
    #[serde(deserialize_with = "kit::present")]
    cause: Option<Value>,
    #[serde(deserialize_with = "kit::count")]
    retry_attempt: u64,
    #[serde(deserialize_with = "kit::count")]
    max_retries: u64,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct SessionRef<'a> {
    #[serde(borrow)]
    session_id: Loose<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Progress<'a> {
    #[serde(rename = "type", borrow)]
    ty: Loose<'a>,
    #[serde(borrow)]
    agent_id: Loose<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ToolUseResult<'a> {
    #[serde(borrow)]
    persisted_output_path: Loose<'a>,
    #[serde(borrow)]
    agent_id: Loose<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct CompactMeta<'a> {
    #[serde(borrow)]
    trigger: Loose<'a>,
    #[serde(deserialize_with = "kit::count")]
    pre_tokens: u64,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Msg<'a> {
    #[serde(borrow)]
    id: Loose<'a>,
    #[serde(borrow)]
    model: Loose<'a>,
    usage: Obj<Usage>,
    #[serde(borrow)]
    content: Content<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Usage {
    #[serde(deserialize_with = "kit::count")]
    input_tokens: u64,
    #[serde(deserialize_with = "kit::count")]
    output_tokens: u64,
    #[serde(deserialize_with = "kit::count")]
    cache_read_input_tokens: u64,
    #[serde(deserialize_with = "kit::count")]
    cache_creation_input_tokens: u64,
}

/// A content block (of a message or of a `tool_result`'s content).
#[derive(Default, Deserialize)]
#[serde(default)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    ty: Loose<'a>,
    #[serde(borrow)]
    text: Loose<'a>,
    #[serde(borrow)]
    thinking: Loose<'a>,
    /// Present and not `null`.
    signature: Option<IgnoredAny>,
    #[serde(borrow)]
    id: Loose<'a>,
    #[serde(borrow)]
    name: Loose<'a>,
    /// The tool call's arguments, kept as JSON for [`ToolCall::input`].
    input: Value,
    #[serde(borrow)]
    tool_use_id: Loose<'a>,
    #[serde(borrow)]
    content: Content<'a>,
    is_error: Loose<'a>,
    #[serde(borrow)]
    source: Obj<MediaSource<'a>>,
    #[serde(borrow)]
    tool_name: Loose<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct MediaSource<'a> {
    #[serde(borrow)]
    media_type: Loose<'a>,
    #[serde(borrow)]
    data: Loose<'a>,
}

/// Turn one JSONL line into a graph node (if it is one), updating `meta` either way.
/// `Err` for a line that is not JSON; arrays and other shapes are no node.
pub(super) fn parse_line(line: &[u8], meta: &mut FileMeta) -> Result<Option<Rec>, String> {
    let mut spare = String::new();
    let mut odd = false;
    let mut r = jsonl::typed::<Line>(line, &mut spare)?.and_then(|l| record(l, meta, &mut odd));
    if let (true, Some(r)) = (odd, r.as_mut()) {
        // Rare: read the line again as a tree to show what the typed read passed over.
        let place = r
            .uuid
            .as_deref()
            .unwrap_or("a record without uuid")
            .to_string();
        for (problem, raw) in unread_parts(line) {
            meta.unparsed.note("message content parts", &problem, || {
                format!("record {place}")
            });
            r.unread.push(raw);
        }
    }
    Ok(r)
}

/// Block types [`block`] reads, in `message.content` and in `tool_result` content.
const KNOWN_BLOCKS: [&str; 9] = [
    "text",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "server_tool_use",
    "tool_result",
    "image",
    "document",
    "tool_reference",
];
const KNOWN_RESULT_BLOCKS: [&str; 4] = ["text", "image", "document", "tool_reference"];

/// What of a line's `message.content` the typed read shows nothing of, as `(problem, JSON
/// text)`: content that is neither text nor a list, list elements that are no block or
/// string, blocks of a type sessfs does not read, text blocks whose text is no string,
/// and the same inside `tool_result` content.
fn unread_parts(line: &[u8]) -> Vec<(String, String)> {
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let content = v.get("message").and_then(|m| m.get("content"));
    let items = match content {
        None | Some(Value::Null | Value::String(_)) => return out,
        Some(Value::Array(a)) => a,
        Some(other) => {
            out.push((
                "content is neither text nor blocks".into(),
                other.to_string(),
            ));
            return out;
        }
    };
    fn check(item: &Value, known: &[&str], out: &mut Vec<(String, String)>) {
        let problem = match item {
            Value::String(_) => return,
            Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                Some("text") if !o.get("text").is_some_and(Value::is_string) => {
                    "a text block without text".to_string()
                }
                Some(t) if known.contains(&t) => return,
                Some(t) => format!("unknown block type `{t}`"),
                None => "a block without type".to_string(),
            },
            _ => "an element that is no block".to_string(),
        };
        out.push((problem, item.to_string()));
    }
    for item in items {
        check(item, &KNOWN_BLOCKS, &mut out);
        if item.get("type").and_then(Value::as_str) == Some("tool_result") {
            if let Some(Value::Array(inner)) = item.get("content") {
                for x in inner {
                    check(x, &KNOWN_RESULT_BLOCKS, &mut out);
                }
            }
        }
    }
    out
}

/// Turn one read line into a graph node (if it is one), updating `meta` either way.
/// `odd` is set when its message content holds something the typed read passes over.
fn record(v: Line<'_>, meta: &mut FileMeta, odd: &mut bool) -> Option<Rec> {
    let ty = v.ty.str().unwrap_or("");
    let ts = v.timestamp.time();
    if let Some(t) = ts {
        meta.note_time(t);
    }
    if let Some(ver) = v.version.nonempty() {
        meta.version = Some(ver);
    }
    if meta.session_id.is_none() {
        meta.session_id = v.session_id.nonempty();
    }
    match ty {
        "custom-title" => {
            if let Some(t) = v.custom_title.nonempty().or_else(|| v.title.nonempty()) {
                meta.custom_title = Some(t);
            }
            return None;
        }
        "ai-title" => {
            if let Some(t) = v.ai_title.nonempty().or_else(|| v.title.nonempty()) {
                meta.ai_title = Some(t);
            }
            return None;
        }
        "summary" => {
            if let Some(s) = v.summary.nonempty() {
                meta.summaries.push((v.leaf_uuid.nonempty(), s));
            }
            return None;
        }
        "tag" => {
            meta.tag = Some(v.tag.str().unwrap_or("").trim().to_string());
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
                note_progress(&v, meta);
            }
            // Other records join the graph only when they carry a uuid: a chain record may
            // name one (a `progress` line) as its parent.
            let uuid = v.uuid.nonempty()?;
            let mut r = Rec::new(Kind::Other);
            r.uuid = Some(uuid);
            r.parent = v.parent_uuid.nonempty();
            r.sidechain = v.is_sidechain.is_true();
            r.timestamp = ts;
            return Some(r);
        }
    };
    let mut r = Rec::new(kind);
    r.uuid = v.uuid.nonempty();
    r.parent = v.parent_uuid.nonempty();
    r.logical_parent = v.logical_parent_uuid.nonempty();
    r.sidechain = v.is_sidechain.is_true();
    r.agent_id = v.agent_id.nonempty();
    r.meta = v.is_meta.is_true();
    r.compact_summary = v.is_compact_summary.is_true();
    r.timestamp = ts;
    r.api_error = v.is_api_error_message.is_true();
    if meta.cwd.is_none() {
        meta.cwd = v.cwd.nonempty();
    }
    if !r.sidechain && meta.forked_from.is_none() {
        meta.forked_from = v
            .forked_from
            .0
            .as_ref()
            .and_then(|f| f.session_id.nonempty());
    }
    match kind {
        Kind::User | Kind::Assistant => parse_message(v, &mut r, meta, odd),
        Kind::System => parse_system(v, &mut r),
        _ => {}
    }
    Some(r)
}

fn note_progress(v: &Line<'_>, meta: &mut FileMeta) {
    let Some(data) = &v.data.0 else { return };
    if data.ty.str() != Some("agent_progress") {
        return;
    }
    if let (Some(agent), Some(tool)) = (data.agent_id.nonempty(), v.parent_tool_use_id.nonempty()) {
        if !meta.agent_links.iter().any(|(a, _)| *a == agent) {
            meta.agent_links.push((agent, tool));
        }
    }
}

fn parse_message(v: Line<'_>, r: &mut Rec, meta: &mut FileMeta, odd: &mut bool) {
    let mut texts: Vec<Cow<'_, str>> = Vec::new();
    let mut thinking: Vec<Cow<'_, str>> = Vec::new();
    if let Some(m) = v.message.0 {
        r.msg_id = m.id.nonempty();
        r.request_id = v.request_id.nonempty();
        r.model = m.model.nonempty().filter(|m| m != "<synthetic>");
        if let Some(u) = m.usage.0 {
            r.usage = Some(TokenUsage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                thinking_tokens: 0,
                cached_tokens: u.cache_read_input_tokens,
                cache_write_tokens: u.cache_creation_input_tokens,
            });
        }
        // User records can only answer tool calls; assistant records only make them.
        match m.content {
            Content::Text(s) => texts.push(s),
            Content::Blocks(items) => {
                for item in items {
                    match item {
                        Item::Text(s) => texts.push(s),
                        Item::Block(b) => block(*b, r, &mut texts, &mut thinking, odd),
                        Item::Other => *odd = true,
                    }
                }
            }
            Content::Null => {}
            Content::Other(_) => *odd = true,
        }
    }
    r.text = join_texts(&texts);
    if !thinking.is_empty() {
        r.thinking = Some(thinking.join("\n\n"));
    }
    if r.api_error && r.text.trim().is_empty() {
        let err = v
            .error
            .map(|e| match e {
                Value::String(s) => s,
                other => other.to_string(),
            })
            .unwrap_or_else(|| "unknown".into());
        r.text = format!("API error: {err}");
    }
    if let Some(tur) = &v.tool_use_result.0 {
        r.persisted = tur.persisted_output_path.nonempty();
        if let (Some(agent), Some(res)) = (tur.agent_id.nonempty(), r.results.first()) {
            if !meta.agent_links.iter().any(|(a, _)| *a == agent) {
                meta.agent_links.push((agent, res.id.clone()));
            }
        }
    }
}

/// Text blocks joined by blank lines; whitespace-only blocks (streaming leftovers) dropped.
fn join_texts(texts: &[impl AsRef<str>]) -> String {
    let mut out = String::new();
    for t in texts {
        let t = t.as_ref();
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

fn block<'a>(
    b: Block<'a>,
    r: &mut Rec,
    texts: &mut Vec<Cow<'a, str>>,
    thinking: &mut Vec<Cow<'a, str>>,
    odd: &mut bool,
) {
    match b.ty.str().unwrap_or("") {
        "text" => match b.text {
            Loose::Str(t) => texts.push(t),
            _ => *odd = true,
        },
        "thinking" => {
            let t = match b.thinking {
                Loose::Str(t) => t,
                _ => Cow::Borrowed(""),
            };
            if t.trim().is_empty() {
                if b.signature.is_some() {
                    r.sealed = true;
                }
            } else {
                thinking.push(t);
            }
        }
        "redacted_thinking" => r.sealed = true,
        "tool_use" | "server_tool_use" => r.tool_uses.push(ToolCall {
            tool_call_id: b.id.nonempty().unwrap_or_default(),
            tool_name: b.name.nonempty().unwrap_or_else(|| "unknown".into()),
            input: b.input,
            ..ToolCall::default()
        }),
        "tool_result" => r.results.push(ResultBlock {
            id: b.tool_use_id.nonempty().unwrap_or_default(),
            output: result_output(b.content, odd),
            is_error: b.is_error.is_true(),
        }),
        "image" | "document" => texts.push(Cow::Owned(media_placeholder(&b))),
        "tool_reference" => {
            let name = b.tool_name.nonempty().or_else(|| b.name.nonempty());
            texts.push(Cow::Owned(format!(
                "[tool reference: {}]",
                name.unwrap_or_default()
            )));
        }
        _ => *odd = true,
    }
}

/// `[image: image/png, 12.3 KB]` for a base64 block; the data itself is never kept.
fn media_placeholder(b: &Block<'_>) -> String {
    let kind = b.ty.str().unwrap_or("image");
    let src = b.source.0.as_ref();
    let mime = src.and_then(|s| s.media_type.str());
    let data = src.and_then(|s| s.data.str());
    kit::base64_placeholder(kind, mime, data)
}

/// The text of a `tool_result` content: a string or text/image blocks.
fn result_output(c: Content<'_>, odd: &mut bool) -> String {
    match c {
        Content::Text(s) => s.into_owned(),
        Content::Blocks(items) => {
            let mut parts: Vec<Cow<'_, str>> = Vec::new();
            for item in items {
                match item {
                    Item::Text(s) => parts.push(s),
                    Item::Block(b) => match b.ty.str() {
                        Some("text") => match b.text {
                            Loose::Str(t) => parts.push(t),
                            _ => *odd = true,
                        },
                        Some("image") | Some("document") => {
                            parts.push(Cow::Owned(media_placeholder(&b)))
                        }
                        Some("tool_reference") => {
                            let n = b.tool_name.nonempty().unwrap_or_default();
                            parts.push(Cow::Owned(format!("[tool reference: {n}]")));
                        }
                        _ => *odd = true,
                    },
                    Item::Other => *odd = true,
                }
            }
            parts.join("\n")
        }
        Content::Null => String::new(),
        Content::Other(other) => other.to_string(),
    }
}

fn parse_system(v: Line<'_>, r: &mut Rec) {
    let sub = v.subtype.nonempty();
    let content = v.content.str().unwrap_or("").to_string();
    let text = match sub.as_deref() {
        Some("compact_boundary") => {
            let m = v.compact_metadata.0.as_ref();
            let trigger = m
                .and_then(|m| m.trigger.nonempty())
                .unwrap_or_else(|| "unknown".into());
            let pre = m.map(|m| m.pre_tokens).unwrap_or(0);
            Some(if pre > 0 {
                format!(
                    "Conversation compacted ({trigger}, {} tokens before)",
                    kit::grouped(pre)
                )
            } else {
                format!("Conversation compacted ({trigger})")
            })
        }
        Some("microcompact_boundary") => Some("Context micro-compacted".to_string()),
        Some("turn_duration") | Some("stop_hook_summary") | Some("bridge_status") => None,
        Some("api_error") => {
            let cause = v
                .cause
                .or(v.error)
                .map(|c| match c {
                    Value::String(s) => s,
                    Value::Object(ref o) => o
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| c.to_string()),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            let attempt = v.retry_attempt;
            let max = v.max_retries;
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
            // A command's note (its `<command-message>`) is kept on the line after it.
            let cleaned = special
                .map(|c| match c.note {
                    Some(note) => format!("{}\n{note}", c.text),
                    None => c.text,
                })
                .unwrap_or(content);
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
            json!({"type":"assistant","uuid":"a","message":{"id":"m","model":"claude-x",
                "content":[{"type":"text","text":"hi"}],
                "usage":{"input_tokens":3,"output_tokens":5,"cache_read_input_tokens":7,
                         "cache_creation_input_tokens":11}}})
            .to_string()
            .as_bytes(),
            &mut m,
        )
        .expect("JSON")
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
            json!({"type":"assistant","uuid":"a","message":{"model":"<synthetic>",
                "content":[{"type":"thinking","thinking":"","signature":"abc"},
                           {"type":"redacted_thinking","data":"zzz"}]}})
            .to_string()
            .as_bytes(),
            &mut m,
        )
        .expect("JSON")
        .expect("a record");
        assert!(r.model.is_none());
        assert!(r.sealed);
        assert!(r.thinking.is_none());
    }

    #[test]
    fn images_become_placeholders() {
        let mut m = FileMeta::default();
        let r = parse_line(
            json!({"type":"user","uuid":"u","message":{"content":[
                {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},
                {"type":"tool_result","tool_use_id":"t","content":[
                    {"type":"text","text":"out"},
                    {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AAAAAAAA"}}]}]}}).to_string().as_bytes(),
            &mut m,
        )
        .expect("JSON")
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
            assert!(parse_line(v.to_string().as_bytes(), &mut m)
                .expect("JSON")
                .is_none());
        }
        assert_eq!(m.custom_title.as_deref(), Some("Named"));
        assert_eq!(m.ai_title.as_deref(), Some("Auto"));
        assert_eq!(m.summaries.len(), 1);
        assert_eq!(m.tag.as_deref(), Some("work"));
    }
    /// Fields of an unexpected type read as absent, duplicate keys keep the last value, an
    /// array line is no record and odd `tool_result` content shows as its JSON: all as the
    /// `Value` reading did, so a typed read costs no record.
    #[test]
    fn odd_shapes_read_as_before() {
        let mut m = FileMeta::default();
        let line = br#"{"type":"user","uuid":1,"uuid":"u2","isMeta":"yes","parentUuid":null,
            "timestamp":1767225600000,"cwd":["x"],"message":{"usage":7,"content":[
            3,["x"],"bare",{"type":"text","text":5},
            {"type":"tool_result","tool_use_id":"t","is_error":true,"content":{"b":1, "a":[2]}},
            {"type":"tool_result","tool_use_id":"t2","content":false}]}}"#;
        let line: Vec<u8> = line.iter().copied().filter(|&c| c != b'\n').collect();
        let r = parse_line(&line, &mut m).expect("JSON").expect("a record");
        assert_eq!(r.uuid.as_deref(), Some("u2"));
        assert!(r.parent.is_none() && !r.meta && r.usage.is_none());
        assert_eq!(m.cwd, None);
        assert_eq!(r.timestamp, kit::parse_rfc3339("2026-01-01T00:00:00Z"));
        assert_eq!(r.text, "bare");
        // What the typed read passes over is kept as stored and counted, never dropped.
        assert_eq!(r.unread, ["3", r#"["x"]"#, r#"{"type":"text","text":5}"#]);
        assert_eq!(
            m.unparsed.warnings(),
            [
                "2 message content parts could not be parsed: an element that is no block (first: record u2)",
                "1 message content parts could not be parsed: a text block without text (first: record u2)"
            ]
        );
        let outs: Vec<(&str, &str, bool)> = r
            .results
            .iter()
            .map(|b| (b.id.as_str(), b.output.as_str(), b.is_error))
            .collect();
        assert_eq!(
            outs,
            [("t", r#"{"b":1,"a":[2]}"#, true), ("t2", "false", false)]
        );
        assert!(parse_line(b"[1,2]", &mut m).expect("JSON").is_none());
        assert!(parse_line(b"{\"type\":", &mut m).is_err());
    }
}
