//! Qwen Code chats: `$QWEN_RUNTIME_DIR/projects/<sanitized cwd>/chats/<session id>.jsonl`
//! (runtime dir `~/.qwen` by default).
//!
//! ```text
//! ~/.qwen/projects/<sanitizeCwd(project root)>/chats/<session id>.jsonl   (0.1x and later)
//! ~/.qwen/tmp/<sha256 of project root>/chats/<session id>.jsonl           (first releases)
//! ```
//!
//! Read from Qwen Code's own source (QwenLM/qwen-code): `Storage.getProjectDir` and
//! `getRuntimeBaseDir` in `packages/core/src/config/storage.ts` at commit
//! 013e660f5799186a369c737aea6b4bcb9ca0ef47 (`QWEN_RUNTIME_DIR`, else `~/.qwen`, then
//! `projects/<sanitizeCwd>`); `ChatRecord` and `ChatRecordingService` in
//! `packages/core/src/services/chatRecordingService.ts` at commits
//! 1ef5167055c937d5a87e8fe0bde5a53503f1c833 (the first JSONL writer, under `tmp/<hash>`) and
//! 015346f1d5d7312fddaf84a7ef1f83c7d217d389 (the `system` records and their subtypes).
//!
//! Qwen Code is a fork of Gemini CLI, but its chat file is its own: one append-only JSONL
//! record per event, `{uuid, parentUuid, sessionId, timestamp, type, cwd, version, ...}`
//! with `type` one of `user`, `assistant`, `tool_result` and `system` (`subtype` says
//! which). What the two agents do share is the Gemini API `Content` a record carries
//! (`message: {role, parts}`: `text`, `thought` text, `functionCall`, `functionResponse`,
//! `inlineData`), and the `<project>/chats/` layout; those are read by the Gemini store's
//! own helpers ([`gemini::parts_text`], [`gemini::collect_responses`],
//! [`gemini::chats_dirs`]).
//!
//! Design decisions and why:
//! - **A chat file is a session**, its id the file name (Qwen names the file after the
//!   session id); listing reads no file.
//! - **Records are shown in file order.** Qwen appends, and a resumed chat continues the
//!   same file from its last completed record, so the file order is the conversation.
//! - **A rewind keeps what it dropped**: `/rewind` appends a `rewind` record whose
//!   `parentUuid` is the last record kept, and the records after that one stay in the file.
//!   The conversation as it stood before the rewind becomes a [`Branch`] (root to leaf);
//!   the session goes on from the record rewound to, so usage is the active branch's.
//! - **Call and result are two records**: an assistant `functionCall` part is a tool call,
//!   the `functionResponse` part of a later `tool_result` record its result (matched by
//!   id), the error status and `resultDisplay` of `toolCallResult` filling in what the
//!   model was not sent.
//! - **Usage is counted once per API reply.** Every reply the model gives is recorded by
//!   an `api_response` telemetry record (`system`/`ui_telemetry`, keyed by `response_id`);
//!   a reply that became an assistant record carries the same counts again as
//!   `usageMetadata`. The assistant record's counts are used, and the telemetry record just
//!   before it with equal counts is the same reply. Any other `api_response` of the main
//!   conversation (the model call a tool such as `web_fetch` makes) is an API call nothing
//!   else records, shown as an event with its usage. Prompt counts include cached tokens
//!   (sessfs counts cache reads apart); where the total says reasoning is inside the reply
//!   count (OpenAI-compatible providers), it is taken out of it, so reasoning is counted
//!   once.
//! - **A subagent is nested under its session, built from telemetry.** Qwen keeps no chat
//!   for a subagent run by the `agent` tool; its `api_response`, `tool_call` and
//!   `api_error` telemetry records (a `prompt_id` `<session>#<agent>#<n>`) are the only
//!   trace of it, and become the events of a [`Subagent`](crate::model::Subagent) named
//!   after the agent, linked in order to the `agent` calls; its report is that call's
//!   result. Its usage is its own and counts in the parent's total with subagents.
//! - **Telemetry that repeats the chat is folded in, the rest is shown**: a `tool_call`
//!   telemetry record of the main conversation gives its call's duration; `api_error`,
//!   slash commands and their output, `@` file reads, compression and every `system`
//!   subtype sessfs does not know are events with their payload, so nothing the file holds
//!   is out of sight.
//! - **A record sessfs cannot read is kept**: JSON of another shape is counted (one warning
//!   per kind, [`kit::Unparsed`]) and shown as `unparsed record` context where it stood; a
//!   line that is no JSON goes to `unparsed.txt` through the shared line reader.

use super::gemini;
use super::{jsonl, kit, Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Branch, Message, MessageKind, Role, Session, TokenUsage, ToolCall};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        Agent::Qwen,
        &kit::Places {
            env: &[("QWEN_RUNTIME_DIR", "projects")],
            defaults: &[".qwen/projects", ".qwen/tmp"],
            spec: &[],
        },
    )
}

pub struct QwenStore {
    base: Base,
}

impl QwenStore {
    pub fn new(roots: Vec<Root>) -> QwenStore {
        QwenStore {
            base: Base::new(Agent::Qwen, roots),
        }
    }
}

impl Store for QwenStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for chats in gemini::chats_dirs(&root.path) {
                for (p, t) in kit::typed_entries(&chats) {
                    let name = kit::file_name(&p);
                    if t != kit::EntryType::File || name.starts_with('.') {
                        continue;
                    }
                    if let Some(id) = name.strip_suffix(".jsonl").filter(|s| !s.is_empty()) {
                        out.push(Listed::file(id.to_string(), p.clone(), i));
                    }
                }
            }
        }
        out
    }

    /// The id is the file name, which a write never changes.
    fn keeps_listing(&self, _listed: &Listed) -> bool {
        true
    }

    /// The listing reads what Gemini CLI's does ([`gemini::glance_dirs`]); each session is
    /// versioned by its chat file.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            gemini::glance_dirs(&root.path, &mut g.dirs);
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_chat(&listed.path, &listed.id)
    }
}

// ---------------------------------------------------------------------------------------
// Records

/// One line of a chat file.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    uuid: Cow<'a, str>,
    /// `null` for the first record and a rewind to the very start.
    #[serde(default, borrow)]
    parent_uuid: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    timestamp: Cow<'a, str>,
    #[serde(rename = "type", borrow, deserialize_with = "kit::cow_str")]
    ty: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    subtype: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    cwd: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    model: Cow<'a, str>,
    /// A Gemini API `Content`: `{role, parts}`.
    #[serde(default)]
    message: Option<Content>,
    #[serde(default)]
    usage_metadata: Option<Usage>,
    #[serde(default)]
    tool_call_result: Option<Value>,
    #[serde(default)]
    system_payload: Option<Value>,
}

#[derive(Deserialize, Default)]
struct Content {
    #[serde(default)]
    parts: Value,
}

/// `GenerateContentResponseUsageMetadata`, or the same counts as a telemetry event names
/// them.
#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq, Debug)]
struct Usage {
    #[serde(default, alias = "input_token_count", deserialize_with = "kit::count")]
    #[serde(rename = "promptTokenCount")]
    prompt: u64,
    #[serde(default, alias = "output_token_count", deserialize_with = "kit::count")]
    #[serde(rename = "candidatesTokenCount")]
    candidates: u64,
    #[serde(
        default,
        alias = "cached_content_token_count",
        deserialize_with = "kit::count"
    )]
    #[serde(rename = "cachedContentTokenCount")]
    cached: u64,
    #[serde(
        default,
        alias = "thoughts_token_count",
        deserialize_with = "kit::count"
    )]
    #[serde(rename = "thoughtsTokenCount")]
    thoughts: u64,
    #[serde(default, alias = "total_token_count", deserialize_with = "kit::count")]
    #[serde(rename = "totalTokenCount")]
    total: u64,
}

impl Usage {
    fn usage(self) -> TokenUsage {
        // Gemini counts reasoning apart from the reply (total = prompt + reply + thoughts);
        // OpenAI-compatible providers count it inside the reply (total = prompt + reply).
        let apart = self.total == self.prompt + self.candidates + self.thoughts;
        let output = if apart {
            self.candidates
        } else {
            self.candidates.saturating_sub(self.thoughts)
        };
        TokenUsage {
            input_tokens: self.prompt.saturating_sub(self.cached),
            output_tokens: output,
            thinking_tokens: self.thoughts,
            cached_tokens: self.cached,
            cache_write_tokens: 0,
        }
    }
}

/// An `api_response` telemetry record not yet matched to an assistant record.
struct Pending {
    usage: Usage,
    text: String,
    timestamp: Option<chrono::DateTime<chrono::Utc>>,
}

/// The state one chat file is read into.
struct Reader {
    b: kit::SessionBuilder,
    /// The prompt ids of the main conversation start with `<session id>#`, then `#######`.
    main_prompt: String,
    pending: Option<Pending>,
    /// Subagents seen in telemetry, in order of their first record: (agent, its session).
    subs: Vec<(String, kit::SessionBuilder)>,
    /// How many messages the session held once each record was read, by record uuid: a
    /// rewind to a record keeps that many.
    pos: HashMap<String, usize>,
    branches: Vec<Branch>,
    taken: HashSet<String>,
}

fn load_chat(path: &Path, id: &str) -> Session {
    let mut b = kit::SessionBuilder::new(Agent::Qwen, id);
    b.s.source.paths = vec![path.to_path_buf()];
    b.s.source.format = "qwen-jsonl".into();
    let mut r = Reader {
        b,
        main_prompt: format!("{id}########"),
        pending: None,
        subs: Vec::new(),
        pos: HashMap::new(),
        branches: Vec::new(),
        taken: HashSet::new(),
    };
    let scanned = jsonl::read_lines(path, |n, line| {
        let at = format!("line {n}");
        match serde_json::from_slice::<Record<'_>>(line) {
            Ok(rec) => r.record(rec, line, &at),
            Err(e) if serde_json::from_slice::<IgnoredAny>(line).is_ok() => {
                r.unread(line, "not a chat record", &at, &e.to_string());
            }
            Err(e) => return Err(format!("not a chat record: {e}")),
        }
        Ok(())
    });
    r.flush();
    let subs = std::mem::take(&mut r.subs);
    let mut b = r.b;
    b.s.branches = r.branches;
    link_subagents(&mut b, subs, id);
    for w in scanned.warnings.iter() {
        b.warn(w.clone());
    }
    if let Some(file) = jsonl::unparsed_file(&scanned.unparsed) {
        b.warn(jsonl::unparsed_warning(scanned.unparsed.len()));
        b.s.extra_files.push(file);
    }
    b.finish()
}

impl Reader {
    fn unread(&mut self, raw: &[u8], problem: &str, at: &str, error: &str) {
        let raw = String::from_utf8_lossy(raw);
        self.b.unparsed(
            "records",
            problem,
            || match error {
                "" => at.to_string(),
                e => format!("{at}: {e}"),
            },
            "record",
            raw.trim(),
            None,
        );
    }

    fn record(&mut self, rec: Record<'_>, raw: &[u8], at: &str) {
        let ts = kit::parse_rfc3339(&rec.timestamp);
        if self.b.s.cwd.is_none() && !rec.cwd.is_empty() {
            self.b.s.cwd = Some(rec.cwd.to_string());
        }
        // An API reply no assistant record followed is a call of its own, shown where it
        // stood.
        if rec.ty != "assistant" {
            self.flush();
        }
        let parts = rec.message.as_ref().map_or(&Value::Null, |c| &c.parts);
        match (rec.ty.as_ref(), rec.subtype.as_ref()) {
            ("user", "") => {
                let (content, thinking) = gemini::parts_text(parts);
                self.b.push(Message {
                    role: Role::User,
                    content,
                    thinking,
                    timestamp: ts,
                    native_id: native(&rec.uuid),
                    ..Message::default()
                });
            }
            // A user-side record Qwen adds itself (notification, cron, mid-turn message).
            ("user", sub) => {
                let (content, _) = gemini::parts_text(parts);
                let text = match (&rec.system_payload, content.is_empty()) {
                    (Some(p), true) => compact(p),
                    _ => content,
                };
                self.b.context(sub, text, ts);
            }
            ("assistant", _) => self.assistant(&rec, parts, ts),
            ("tool_result", _) => self.tool_result(&rec, parts, ts),
            ("system", "rewind") => {
                let payload = rec.system_payload.as_ref();
                self.rewind(rec.parent_uuid.as_deref(), payload, ts, at);
            }
            ("system", sub) => self.system(sub, rec.system_payload.as_ref(), ts),
            (other, _) => {
                let problem = format!("record of unknown type {other:?}");
                self.unread(raw, &problem, at, "");
            }
        }
        if !rec.uuid.is_empty() {
            self.pos
                .insert(rec.uuid.to_string(), self.b.s.messages.len());
        }
    }

    /// `/rewind`: Qwen appends a `rewind` record whose parent is the last record kept, and
    /// goes on from there; what came after that record stays in the file. The conversation
    /// as it stood before the rewind becomes a [`Branch`], and the session goes on from the
    /// record rewound to.
    fn rewind(
        &mut self,
        parent: Option<&str>,
        payload: Option<&Value>,
        ts: Option<chrono::DateTime<chrono::Utc>>,
        at: &str,
    ) {
        let text = format!("rewind: {}", payload.map(compact).unwrap_or_default());
        let cut = match parent {
            None => 0,
            Some(u) => match self.pos.get(u) {
                Some(&n) => n,
                None => {
                    self.b.warn(format!(
                        "{at}: rewind to unknown record {u}; nothing dropped"
                    ));
                    self.b.event(text, ts);
                    return;
                }
            },
        };
        if cut < self.b.s.messages.len() {
            let before = std::mem::take(&mut self.b.s.messages);
            let id_of = |ms: &[Message]| ms.iter().rev().find_map(|m| m.native_id.clone());
            let leaf = id_of(&before);
            let fork_point = id_of(&before[..cut]);
            let base = format!("branch-{}", leaf.as_deref().unwrap_or("rewound"));
            let name = kit::unique_name(&mut self.taken, &base);
            // A fresh builder, so the calls it knows are those of the kept messages only.
            let mut fresh = kit::SessionBuilder::new(Agent::Qwen, "");
            std::mem::swap(&mut fresh.s, &mut self.b.s);
            fresh.unparsed = std::mem::take(&mut self.b.unparsed);
            for m in before[..cut].iter().cloned() {
                fresh.push(m);
            }
            self.b = fresh;
            self.pos.retain(|_, n| *n <= cut);
            self.branches.push(Branch {
                name,
                fork_point,
                leaf,
                messages: before,
            });
        }
        self.b.event(text, ts);
    }

    fn assistant(
        &mut self,
        rec: &Record<'_>,
        parts: &Value,
        ts: Option<chrono::DateTime<chrono::Utc>>,
    ) {
        let (content, thinking) = gemini::parts_text(parts);
        let mut tool_calls = Vec::new();
        for p in parts.as_array().into_iter().flatten() {
            if let Some(f) = p.get("functionCall") {
                tool_calls.push(ToolCall {
                    tool_call_id: kit::str_field(f, "id").unwrap_or_default().to_string(),
                    tool_name: kit::str_field(f, "name").unwrap_or_default().to_string(),
                    input: f.get("args").cloned().unwrap_or(Value::Null),
                    ..ToolCall::default()
                });
            }
        }
        // The reply's own counts, else those of the telemetry record of this reply.
        let usage = match (rec.usage_metadata, self.pending.take()) {
            (Some(u), Some(p)) if p.usage == u => Some(u),
            (Some(u), p) => {
                self.pending = p;
                self.flush();
                Some(u)
            }
            (None, p) => p.map(|p| p.usage),
        };
        self.b.push(Message {
            role: Role::Assistant,
            content,
            thinking,
            tool_calls,
            timestamp: ts,
            token_usage: usage.map(Usage::usage).filter(|u| !u.is_zero()),
            model: native(&rec.model),
            native_id: native(&rec.uuid),
            ..Message::default()
        });
    }

    fn tool_result(
        &mut self,
        rec: &Record<'_>,
        parts: &Value,
        ts: Option<chrono::DateTime<chrono::Utc>>,
    ) {
        let meta = rec.tool_call_result.as_ref();
        let failed = meta.and_then(|m| kit::str_field(m, "status")) == Some("error");
        let mut any = false;
        for p in parts.as_array().into_iter().flatten() {
            let Some(f) = p.get("functionResponse") else {
                continue;
            };
            any = true;
            let mut out = Vec::new();
            gemini::collect_responses(p, &mut out);
            let mut output = out.join("\n");
            if output.is_empty() {
                output = display(meta);
            }
            let is_error = failed || f.get("response").and_then(|r| r.get("error")).is_some();
            let call_id = kit::str_field(f, "id")
                .or_else(|| meta.and_then(|m| kit::str_field(m, "callId")))
                .unwrap_or_default();
            let name = kit::str_field(f, "name");
            self.b.tool_result(call_id, name, output, is_error, ts);
        }
        if !any {
            // A result sent as plain parts (or nothing but the UI's record of it).
            let (mut text, _) = gemini::parts_text(parts);
            if text.is_empty() {
                text = display(meta);
            }
            let call_id = meta
                .and_then(|m| kit::str_field(m, "callId"))
                .unwrap_or_default();
            self.b.tool_result(call_id, None, text, failed, ts);
        }
    }

    fn system(
        &mut self,
        sub: &str,
        payload: Option<&Value>,
        ts: Option<chrono::DateTime<chrono::Utc>>,
    ) {
        let null = Value::Null;
        let p = payload.unwrap_or(&null);
        match sub {
            "ui_telemetry" => self.telemetry(p.get("uiEvent").unwrap_or(p), ts),
            "slash_command" => {
                let cmd = kit::str_field(p, "rawCommand").unwrap_or("?");
                let mut text = cmd.to_string();
                if kit::str_field(p, "phase") == Some("result") {
                    text = format!("{cmd} (result)");
                    for item in p
                        .get("outputHistoryItems")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let kind = kit::str_field(item, "type").unwrap_or("output");
                        let body = kit::str_field(item, "text")
                            .map(str::to_string)
                            .unwrap_or_else(|| compact(item));
                        text.push_str(&format!("\n{kind}: {body}"));
                    }
                }
                self.b.event(text, ts);
            }
            "at_command" => {
                let files: Vec<&str> = p
                    .get("filesRead")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let status = kit::str_field(p, "status").unwrap_or("?");
                self.b
                    .event(format!("@ files read ({status}): {}", files.join(", ")), ts);
            }
            "chat_compression" => {
                let mut text = String::new();
                for c in p
                    .get("compressedHistory")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let (t, _) = gemini::parts_text(c.get("parts").unwrap_or(&null));
                    gemini::push_para(&mut text, &t);
                }
                if text.is_empty() {
                    text = compact(p);
                }
                self.b.push(Message {
                    role: Role::System,
                    kind: MessageKind::CompactionSummary,
                    content: text,
                    timestamp: ts,
                    ..Message::default()
                });
            }
            "custom_title" => {
                let t = kit::str_any(p, &["customTitle", "title"]);
                if let Some(t) = t.filter(|t| !t.trim().is_empty()) {
                    self.b.s.title = Some(t.to_string());
                }
                self.b.event(format!("custom_title: {}", compact(p)), ts);
            }
            other => {
                let label = if other.is_empty() { "system" } else { other };
                self.b.event(format!("{label}: {}", compact(p)), ts);
            }
        }
    }

    fn telemetry(&mut self, e: &Value, ts: Option<chrono::DateTime<chrono::Utc>>) {
        let name = kit::str_field(e, "event.name").unwrap_or_default();
        let name = name.strip_prefix("qwen-code.").unwrap_or(name);
        let prompt = kit::str_field(e, "prompt_id").unwrap_or_default();
        if let Some(agent) = agent_of(prompt, &self.main_prompt) {
            let agent = agent.to_string();
            self.subagent_telemetry(&agent, name, e, ts);
            return;
        }
        match name {
            "api_response" => {
                self.flush();
                let usage = Usage::deserialize(e).unwrap_or_default();
                self.pending = Some(Pending {
                    usage,
                    text: format!("API call ({})", call_name(e)),
                    timestamp: ts,
                });
            }
            "tool_call" => {
                let tool = kit::str_field(e, "function_name").unwrap_or_default();
                let ms = kit::u64_field(e, "duration_ms");
                // The latest call of that tool still without a duration.
                let call = self
                    .b
                    .s
                    .messages
                    .iter_mut()
                    .rev()
                    .find(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
                    .and_then(|m| {
                        m.tool_calls
                            .iter_mut()
                            .find(|c| c.tool_name == tool && c.duration_ms.is_none())
                    });
                match call {
                    Some(c) => c.duration_ms = Some(ms),
                    None => self.b.event(format!("tool call: {}", compact(e)), ts),
                }
            }
            "api_error" => {
                let msg = kit::str_any(e, &["error_message", "error"]).unwrap_or("?");
                self.b.event(format!("API error: {msg}"), ts);
            }
            _ => self
                .b
                .event(format!("telemetry {name}: {}", compact(e)), ts),
        }
    }

    /// A telemetry record of a subagent (Qwen keeps no chat of its own for it): its API
    /// calls carry their usage, its tool runs and errors are events, in a session nested
    /// under this one.
    fn subagent_telemetry(
        &mut self,
        agent: &str,
        name: &str,
        e: &Value,
        ts: Option<chrono::DateTime<chrono::Utc>>,
    ) {
        let i = match self.subs.iter().position(|(a, _)| a == agent) {
            Some(i) => i,
            None => {
                let mut b = kit::SessionBuilder::new(Agent::Qwen, agent);
                b.s.source = self.b.s.source.clone();
                b.s.cwd = self.b.s.cwd.clone();
                b.s.title = Some(format!("subagent {agent}"));
                b.s.tags.push("subagent".into());
                self.subs.push((agent.to_string(), b));
                self.subs.len() - 1
            }
        };
        let b = &mut self.subs[i].1;
        match name {
            "api_response" => {
                let usage = Usage::deserialize(e).unwrap_or_default().usage();
                b.push(Message {
                    role: Role::System,
                    kind: MessageKind::Event,
                    content: format!("API call ({})", call_name(e)),
                    timestamp: ts,
                    token_usage: Some(usage).filter(|u| !u.is_zero()),
                    model: kit::str_field(e, "model").map(str::to_string),
                    ..Message::default()
                });
            }
            "tool_call" => {
                let tool = kit::str_field(e, "function_name").unwrap_or("?");
                let status = kit::str_field(e, "status").unwrap_or("?");
                let args = e.get("function_args").map(compact).unwrap_or_default();
                let ms = kit::u64_field(e, "duration_ms");
                b.event(format!("ran {tool} {args}: {status} ({ms} ms)"), ts);
            }
            "api_error" => {
                let msg = kit::str_any(e, &["error_message", "error"]).unwrap_or("?");
                b.event(format!("API error: {msg}"), ts);
            }
            _ => b.event(format!("telemetry {name}: {}", compact(e)), ts),
        }
    }

    /// An `api_response` no assistant record repeats: an API call of its own.
    fn flush(&mut self) {
        if let Some(p) = self.pending.take() {
            self.b.push(Message {
                role: Role::System,
                kind: MessageKind::Event,
                content: p.text,
                timestamp: p.timestamp,
                token_usage: Some(p.usage.usage()).filter(|u| !u.is_zero()),
                ..Message::default()
            });
        }
    }
}

/// The tools that run a subagent.
const AGENT_TOOLS: &[&str] = &["agent", "task"];

/// Nest each subagent under the session, linked in order to the calls of an agent tool.
fn link_subagents(b: &mut kit::SessionBuilder, subs: Vec<(String, kit::SessionBuilder)>, id: &str) {
    let mut calls =
        b.s.messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .filter(|c| AGENT_TOOLS.contains(&c.tool_name.as_str()))
            .map(|c| (c.tool_call_id.clone(), c.input.clone()))
            .collect::<Vec<_>>()
            .into_iter();
    let parent = crate::model::unified_id(Agent::Qwen, id);
    for (name, mut sb) in subs {
        sb.s.parent = Some(parent.clone());
        let call = calls.next();
        let description = call
            .as_ref()
            .and_then(|(_, input)| kit::str_any(input, &["description", "subagent_type"]))
            .map(str::to_string);
        b.s.subagents.push(crate::model::Subagent {
            name,
            unified_id: None,
            description,
            tool_call_id: call.map(|(c, _)| c).filter(|c| !c.is_empty()),
            session: Some(Box::new(sb.finish())),
        });
    }
}

/// `<model>, <response id>` of an `api_response` record.
fn call_name(e: &Value) -> String {
    let model = kit::str_field(e, "model").unwrap_or("?");
    let response = kit::str_field(e, "response_id").unwrap_or("?");
    format!("{model}, {response}")
}

/// The agent a subagent's prompt id names: `<session id>#<agent>#<n>`.
fn agent_of<'a>(prompt: &'a str, main: &str) -> Option<&'a str> {
    if prompt.is_empty() || prompt.starts_with(main) {
        return None;
    }
    let mut it = prompt.split('#').filter(|s| !s.is_empty());
    it.next()?;
    it.next()
}

/// What the user saw of a result: `resultDisplay` as text, or an edit's diff.
fn display(meta: Option<&Value>) -> String {
    match meta.and_then(|m| m.get("resultDisplay")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o
            .get("fileDiff")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| Value::Object(o.clone()).to_string()),
        _ => String::new(),
    }
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        _ => v.to_string(),
    }
}

fn native(s: &str) -> Option<String> {
    Some(s.to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Session {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("s1.jsonl");
        std::fs::write(&p, text).expect("write");
        load_chat(&p, "s1")
    }

    #[test]
    fn reasoning_inside_the_reply_count_is_taken_out_once() {
        // total = prompt + candidates: thoughts are part of candidates.
        let u = Usage {
            prompt: 100,
            candidates: 30,
            cached: 40,
            thoughts: 10,
            total: 130,
        };
        let t = u.usage();
        assert_eq!((t.input_tokens, t.cached_tokens), (60, 40));
        assert_eq!((t.output_tokens, t.thinking_tokens), (20, 10));
        // total = prompt + candidates + thoughts: thoughts are apart.
        let g = Usage { total: 140, ..u }.usage();
        assert_eq!((g.output_tokens, g.thinking_tokens), (30, 10));
    }

    #[test]
    fn a_telemetry_reply_repeated_by_the_assistant_counts_once() {
        let s = load(concat!(
            r#"{"uuid":"u1","type":"user","message":{"role":"user","parts":[{"text":"hi"}]}}"#,
            "\n",
            r#"{"uuid":"t1","type":"system","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","prompt_id":"s1########0","input_token_count":10,"output_token_count":5,"total_token_count":15}}}"#,
            "\n",
            r#"{"uuid":"a1","type":"assistant","message":{"role":"model","parts":[{"text":"yo"}]},"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15}}"#,
            "\n",
            r#"{"uuid":"t2","type":"system","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","prompt_id":"s1#helper-x#0","input_token_count":7,"output_token_count":2,"total_token_count":9}}}"#,
            "\n",
        ));
        let used: Vec<(u64, u64)> = s
            .messages
            .iter()
            .filter_map(|m| m.token_usage)
            .map(|u| (u.input_tokens, u.output_tokens))
            .collect();
        assert_eq!(used, vec![(10, 5)]);
        // The subagent's call is its own, in the subagent nested under the session.
        assert_eq!(s.subagents.len(), 1);
        assert_eq!(s.subagents[0].name, "helper-x");
        let sub = s.subagents[0].session.as_ref().expect("nested session");
        let used: Vec<(u64, u64)> = sub
            .messages
            .iter()
            .filter_map(|m| m.token_usage)
            .map(|u| (u.input_tokens, u.output_tokens))
            .collect();
        assert_eq!(used, vec![(7, 2)]);
    }

    #[test]
    fn unknown_records_are_kept_and_counted() {
        let s = load(concat!(
            r#"{"uuid":"x","type":"mystery","payload":1}"#,
            "\n",
            r#"{"no":"type"}"#,
            "\n",
            "not json\n",
        ));
        let unparsed = s
            .messages
            .iter()
            .filter(|m| m.label.as_deref() == Some("unparsed record"))
            .count();
        assert_eq!(unparsed, 2);
        assert!(s.warnings.iter().any(|w| w.contains("mystery")));
        assert_eq!(s.extra_files.len(), 1);
    }
}
