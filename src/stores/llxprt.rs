//! LLxprt Code sessions: `<log dir>/tmp/<sha256 of project root>/chats/`.
//!
//! ```text
//! <log dir>/tmp/<hash>/chats/session-<time>-<id8>.jsonl        event log (0.9.0 and later)
//! <log dir>/tmp/<hash>/chats/archive/session-<…>.jsonl.gz      the same, compressed by the janitor
//! <log dir>/tmp/<hash>/chats/persisted-session-<time>.json     one whole document (0.8.x)
//! ```
//!
//! The log dir is `$LLXPRT_LOG_HOME`, else `$LLXPRT_CONFIG_HOME`, else the platform's state
//! directory (`$XDG_STATE_HOME/llxprt-code`, `~/.local/state/llxprt-code`, macOS
//! `~/Library/Logs/llxprt-code`); releases before that split (0.10 and earlier) kept it at
//! `~/.llxprt`, which is always read too, since a later release copies `tmp/` over and
//! leaves the old one.
//!
//! Read from LLxprt Code's own source (vybestack/llxprt-code at commit
//! f80a695f31260babf750d4ee8fa0e421fc135d23): `resolveGlobalLogDir` in
//! `packages/storage/src/config/path-resolver.ts` and `getProjectTempDir` in
//! `packages/storage/src/config/storage.ts` (the paths; `~/.llxprt/tmp` at v0.9.3's
//! `packages/core/src/config/storage.ts`, and `tmp` among the entries
//! `packages/cli/src/config/pathMigration.ts` copies); `SessionRecordLine` and the payloads in
//! `packages/core/src/recording/types.ts`, the writer in `SessionRecordingService.ts`, the
//! way a file is replayed in `ReplayEngine.ts`, a fork's child in
//! `SessionTransitionService.ts` and the archive in `janitor/archiveCompressor.ts` (same
//! directory); `IContent` in `packages/core/src/services/history/IContent.ts`; and the 0.8.x
//! document, `PersistedSession` in `packages/core/src/storage/SessionPersistenceService.ts`
//! (written by `AppContainer.tsx` at tag v0.8.1).
//!
//! LLxprt Code is a fork of Gemini CLI, but it has replaced Gemini's chat file and its
//! `Content` with its own: one JSONL line per event, `{v, seq, ts, type, payload}`, and a
//! provider-neutral `IContent` (`{speaker: human|ai|tool, blocks, metadata}`). What it
//! shares with Gemini CLI is the `tmp/<project>/chats/` tree and the `session-<time>-<id8>`
//! file name, read with the Gemini store's helpers ([`gemini::chats_dirs`],
//! [`gemini::glance_dirs`]), as the Qwen Code store does.
//!
//! Design decisions and why:
//! - **A chat file is a session**, its id the `sessionId` of its first line (a 0.8.x
//!   document's top-level `sessionId`), else the file name. A resumed session appends to its
//!   file. The same id in two roots (the copy a newer release makes of `~/.llxprt/tmp`) is
//!   shown once, from the larger file.
//! - **Events are shown in file order.** `content` is a prompt, reply or tool result;
//!   `compressed` is the compaction summary where it cut (the history it replaced stays);
//!   `rewind` drops the last `itemsRemoved` history items, and the conversation as it stood
//!   before becomes a [`Branch`]; `provider_switch`, `session_event`, `directories_changed`,
//!   and the checkpoint and naming events are events. `session_metadata`'s title and
//!   `session_named`'s name (which wins) are the title.
//! - **A fork is its own session** whose history was copied from its parent: the
//!   `session_forked` event names the parent ([`Session::forked_from`]), and the content
//!   events after it whose own time is before the fork are the copy (`inherited`), counted
//!   once, in the parent.
//! - **Call and result are two records**: a `tool_call` block of an `ai` content is a tool
//!   call, the `tool_response` block of a later `tool` content its result (matched by call
//!   id), failed when it carries an `error`.
//! - **Usage is the reply's own `metadata.usage`**: `promptTokens` includes cache reads and
//!   writes (Anthropic's are added to it, OpenAI's `prompt_tokens` include them), so they are
//!   taken out; reasoning is taken out of `completionTokens` only when the total says it is
//!   inside.
//! - **Nothing is dropped silently**: an event of an unknown type, a content that is not one,
//!   or a block of an unknown type is counted (one warning per kind, [`kit::Unparsed`]) and
//!   shown as `unparsed` context where it stood; a line that is no JSON goes to
//!   `unparsed.txt`; a `v` above 1 costs a warning.
//! - **An archive is read like the file it was made from**: the janitor gzips an old
//!   session file, byte for byte, into `chats/archive/` and then removes the original, or
//!   keeps it when the archive could not be made durable. So the same id in a plain file
//!   and in an archive is shown once, from the plain file; a damaged archive shows what
//!   decompressed before the damage, and a warning.
//! - **Never read**: the 0.8.x `uiHistory` (what the terminal showed, the same turns again),
//!   `logs.json` (prompt history) and `checkpoint-*.json` (`/chat save`, as for Gemini CLI),
//!   the `<id>.lock` files, the conversation logs, and every credential LLxprt keeps beside
//!   its data: `oauth_creds.json`, `mcp-oauth-tokens.json`, `provider_accounts.json`,
//!   `google_accounts.json`, `machine_secret`, `secure-store/`, `keys/` and `.env`.

use super::gemini;
use super::{jsonl, kit, Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Branch, Message, MessageKind, Role, Session, TokenUsage, ToolCall,
};
use chrono::{DateTime, Utc};
use flate2::read::MultiGzDecoder;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

/// The event format version sessfs was written against.
const KNOWN_VERSION: u64 = 1;
/// 0.8.x documents larger than this are not parsed.
const MAX_JSON_BYTES: u64 = 256 << 20;
/// How much of a file the listing reads for its id.
const HEAD_BYTES: u64 = 64 << 10;

pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out = kit::roots(
        env,
        Agent::Llxprt,
        &kit::Places {
            env: &[
                ("LLXPRT_LOG_HOME", "tmp"),
                ("LLXPRT_CONFIG_HOME", "tmp"),
                ("XDG_STATE_HOME", "llxprt-code/tmp"),
            ],
            defaults: &[
                ".local/state/llxprt-code/tmp",
                "Library/Logs/llxprt-code/tmp",
            ],
            spec: &[],
        },
    );
    let legacy = env.home.join(".llxprt/tmp");
    if !out.iter().any(|r| r.path == legacy) {
        out.push(Root::new(Agent::Llxprt, legacy, "legacy"));
    }
    out
}

pub struct LlxprtStore {
    base: Base,
}

impl LlxprtStore {
    pub fn new(roots: Vec<Root>) -> LlxprtStore {
        LlxprtStore {
            base: Base::new(Agent::Llxprt, roots),
        }
    }
}

/// Which of the three files a chat is.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Events,
    Archive,
    Document,
}

fn kind_of(name: &str) -> Option<(Kind, &str)> {
    if let Some(stem) = name.strip_suffix(".jsonl.gz") {
        return stem
            .starts_with("session-")
            .then_some((Kind::Archive, stem));
    }
    if let Some(stem) = name.strip_suffix(".jsonl") {
        return stem.starts_with("session-").then_some((Kind::Events, stem));
    }
    let stem = name.strip_suffix(".json")?;
    stem.starts_with("persisted-session-")
        .then_some((Kind::Document, stem))
}

impl Store for LlxprtStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out: Vec<(Listed, (bool, u64))> = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for chats in gemini::chats_dirs(&root.path) {
                let mut files = kit::typed_entries(&chats);
                files.extend(kit::typed_entries(&chats.join("archive")));
                for (p, t) in files {
                    if t != kit::EntryType::File {
                        continue;
                    }
                    if kind_of(kit::file_name(&p)).is_none() {
                        continue;
                    }
                    let id = listed_id(&p);
                    let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
                    // A plain file ranks above any archive (the archive is a copy of it
                    // the janitor keeps until the copy is durable), then the larger file.
                    let rank = (!is_archive(&p), size);
                    match out.iter_mut().find(|(l, _)| l.id == id) {
                        // A copy in another root (or the archive of a live file).
                        Some((l, r)) => {
                            if rank > *r {
                                *l = Listed::file(id, p.clone(), i);
                                *r = rank;
                            }
                        }
                        None => out.push((Listed::file(id, p.clone(), i), rank)),
                    }
                }
            }
        }
        out.into_iter().map(|(l, _)| l).collect()
    }

    fn keeps_listing(&self, listed: &Listed) -> bool {
        listed_id(&listed.path) == listed.id
    }

    /// The listing reads what Gemini CLI's does ([`gemini::glance_dirs`], which takes in
    /// `chats/archive/`) and the top of every chat.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            gemini::glance_dirs(&root.path, &mut g.dirs);
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_file(&listed.path, &listed.id)
    }
}

// ---------------------------------------------------------------------------------------
// Listing

/// The session id a chat file holds near its top, else its name without extension.
fn listed_id(p: &Path) -> String {
    let name = kit::file_name(p);
    let Some((kind, stem)) = kind_of(name) else {
        return name.to_string();
    };
    let head = head(p, kind == Kind::Archive);
    let id = head.and_then(|h| match kind {
        Kind::Events => {
            let line = h.split(|b| *b == b'\n').next()?;
            let v: Value = serde_json::from_slice(line).ok()?;
            kit::str_at(&v, &["payload", "sessionId"]).map(str::to_string)
        }
        _ => document_id(&h),
    });
    id.filter(|s| !s.is_empty())
        .unwrap_or_else(|| stem.to_string())
}

/// The first bytes of a chat file (of what it decompresses to, for an archive). A head cut
/// short by damage is still a head: the id is on its first line.
fn head(p: &Path, archive: bool) -> Option<Vec<u8>> {
    let f = kit::open_file(p).ok()?;
    let mut buf = Vec::new();
    let read = if archive {
        MultiGzDecoder::new(f)
            .take(HEAD_BYTES)
            .read_to_end(&mut buf)
    } else {
        f.take(HEAD_BYTES).read_to_end(&mut buf)
    };
    (read.is_ok() || !buf.is_empty()).then_some(buf)
}

fn is_archive(p: &Path) -> bool {
    kind_of(kit::file_name(p)).is_some_and(|(k, _)| k == Kind::Archive)
}

/// The top-level `sessionId` of a pretty-printed 0.8.x document, from its first bytes
/// (`version` then `sessionId` are its first two keys).
fn document_id(head: &[u8]) -> Option<String> {
    let key = b"\"sessionId\"";
    let at = head.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &head[at..];
    let colon = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    if rest[colon] != b':' {
        return None;
    }
    let value = &rest[colon + 1..];
    let mut it = serde_json::Deserializer::from_slice(value).into_iter::<String>();
    it.next()?.ok()
}

// ---------------------------------------------------------------------------------------
// Loading

fn load_file(path: &Path, id: &str) -> Session {
    let name = kit::file_name(path);
    match kind_of(name).map(|k| k.0) {
        Some(Kind::Document) => load_document(path, id),
        Some(Kind::Archive) => load_events(path, id, true),
        _ => load_events(path, id, false),
    }
}

/// One line of a session file.
#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    v: Option<Value>,
    #[serde(default)]
    seq: Option<Value>,
    #[serde(default)]
    ts: Option<String>,
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    payload: Value,
}

/// The state one chat is read into.
struct Reader {
    b: kit::SessionBuilder,
    /// The model replies are from: `session_start`'s, then each `provider_switch`'s.
    model: Option<String>,
    /// Where each history item starts in the messages (what a rewind counts back over).
    items: Vec<usize>,
    branches: Vec<Branch>,
    taken: HashSet<String>,
    /// The time of the `session_forked` event while the copied history follows it.
    fork_time: Option<DateTime<Utc>>,
    future: bool,
    title: Option<String>,
    name: Option<String>,
}

impl Reader {
    fn new(path: &Path, id: &str, format: &str) -> Reader {
        let mut b = kit::SessionBuilder::new(Agent::Llxprt, id);
        b.s.source.paths = vec![path.to_path_buf()];
        b.s.source.format = format.into();
        Reader {
            b,
            model: None,
            items: Vec::new(),
            branches: Vec::new(),
            taken: HashSet::new(),
            fork_time: None,
            future: false,
            title: None,
            name: None,
        }
    }

    fn finish(mut self) -> Session {
        self.b.s.branches = std::mem::take(&mut self.branches);
        if let Some(t) = self.name.take().or(self.title.take()) {
            self.b.s.title = Some(t);
        }
        if self.b.s.set_model.is_none() {
            self.b.s.set_model = self.model.take();
        }
        self.b.finish()
    }

    fn unread(&mut self, problem: &str, at: &str, raw: &str, ts: Option<DateTime<Utc>>) {
        self.b
            .unparsed("records", problem, || at.to_string(), "record", raw, ts);
    }

    fn line(&mut self, rec: Line, raw: &[u8], at: &str) {
        let ts = rec.ts.as_deref().and_then(kit::parse_rfc3339);
        let version = rec.v.as_ref().and_then(Value::as_u64).unwrap_or(0);
        if version > KNOWN_VERSION && !self.future {
            self.future = true;
            self.b.warn(format!(
                "event format version {version} is newer than the {KNOWN_VERSION} sessfs knows; \
                 what it reads may be incomplete"
            ));
        }
        let native = rec
            .seq
            .as_ref()
            .and_then(Value::as_u64)
            .map(|n| format!("seq-{n}"));
        let p = &rec.payload;
        let raw = || String::from_utf8_lossy(raw).trim().to_string();
        if rec.ty != "content" {
            self.fork_time = None;
        }
        match rec.ty.as_str() {
            "session_start" => {
                if let Some(cwd) = kit::str_field(p, "cwd").filter(|s| !s.is_empty()) {
                    self.b.s.cwd = Some(cwd.to_string());
                } else if let Some(first) = p
                    .get("workspaceDirs")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str)
                {
                    self.b.s.cwd = Some(first.to_string());
                }
                self.model = kit::str_field(p, "model").map(str::to_string);
                self.b.s.set_model = self.model.clone();
                if let Some(t) = kit::str_field(p, "startTime").and_then(kit::parse_rfc3339) {
                    self.b.s.created_at = Some(t);
                }
            }
            "content" => match p.get("content").filter(|c| is_content(c)) {
                Some(c) => {
                    let inherited = match (self.fork_time, content_time(c)) {
                        (Some(fork), Some(t)) => t < fork,
                        _ => false,
                    };
                    if !inherited {
                        self.fork_time = None;
                    }
                    let start = self.b.s.messages.len();
                    self.items.push(start);
                    self.content(c, ts, native, false);
                    if inherited {
                        for m in &mut self.b.s.messages[start..] {
                            m.inherited = true;
                        }
                    }
                }
                None => self.unread("content event holding no IContent", at, &raw(), ts),
            },
            "compressed" => match p.get("summary").filter(|c| is_content(c)) {
                Some(c) => {
                    let start = self.b.s.messages.len();
                    self.content(c, ts, native, true);
                    self.items = vec![start];
                    if let Some(n) = p.get("itemsCompressed").and_then(Value::as_u64) {
                        self.b
                            .event(format!("compressed: {n} history items summarised"), ts);
                    }
                }
                None => self.unread("compressed event holding no summary", at, &raw(), ts),
            },
            "rewind" => match p.get("itemsRemoved").and_then(Value::as_u64) {
                Some(n) => self.rewind(n, ts),
                None => self.unread("rewind event without itemsRemoved", at, &raw(), ts),
            },
            "provider_switch" => {
                let provider = kit::str_field(p, "provider").unwrap_or("?");
                let model = kit::str_field(p, "model").unwrap_or("?");
                self.b
                    .event(format!("provider switch: {provider}, model {model}"), ts);
                self.model = Some(model.to_string()).filter(|m| m != "?");
            }
            "session_event" => {
                let severity = kit::str_field(p, "severity").unwrap_or("info");
                let message = kit::str_field(p, "message").unwrap_or_default();
                self.b.event(format!("{severity}: {message}"), ts);
            }
            "session_metadata" => match p.get("title") {
                Some(Value::String(t)) => self.title = Some(t.clone()).filter(|t| !t.is_empty()),
                Some(Value::Null) => self.title = None,
                _ => {}
            },
            "session_named" => match p.get("name") {
                Some(Value::String(n)) => {
                    self.b.event(format!("session named: {n}"), ts);
                    self.name = Some(n.clone()).filter(|n| !n.is_empty());
                }
                _ => {
                    self.b.event("session name cleared".into(), ts);
                    self.name = None;
                }
            },
            "directories_changed" => {
                let dirs = p
                    .get("directories")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                self.b.event(format!("workspace directories: {dirs}"), ts);
            }
            "checkpoint_created" | "checkpoint_renamed" | "checkpoint_deleted" => {
                let what = rec.ty.trim_start_matches("checkpoint_");
                let id = kit::str_field(p, "checkpointId").unwrap_or("?");
                let text = match kit::str_field(p, "name") {
                    Some(n) => format!("checkpoint {what}: {n} ({id})"),
                    None => format!("checkpoint {what}: {id}"),
                };
                self.b.event(text, ts);
            }
            "session_forked" => {
                let parent = kit::str_field(p, "parentSessionId").unwrap_or_default();
                let checkpoint = kit::str_field(p, "checkpointName").unwrap_or("?");
                if !parent.is_empty() {
                    self.b.s.forked_from = Some(unified_id(Agent::Llxprt, parent));
                }
                self.b.event(
                    format!("forked from {parent} at checkpoint {checkpoint}"),
                    ts,
                );
                self.fork_time = ts;
            }
            other => {
                let problem = format!("event of unknown type {other:?}");
                self.unread(&problem, at, &raw(), ts);
            }
        }
    }

    /// `rewind`: the last `n` history items are gone. The conversation as it stood becomes
    /// a [`Branch`]; the session goes on from where the first removed item began.
    fn rewind(&mut self, n: u64, ts: Option<DateTime<Utc>>) {
        let keep = self
            .items
            .len()
            .saturating_sub(usize::try_from(n).unwrap_or(usize::MAX));
        let cut = match self.items.get(keep) {
            Some(&c) => c,
            None => self.b.s.messages.len(),
        };
        self.items.truncate(keep);
        if cut < self.b.s.messages.len() {
            let before = std::mem::take(&mut self.b.s.messages);
            let id_of = |ms: &[Message]| ms.iter().rev().find_map(|m| m.native_id.clone());
            let leaf = id_of(&before);
            let fork_point = id_of(&before[..cut]);
            let base = format!("branch-{}", leaf.as_deref().unwrap_or("rewound"));
            let name = kit::unique_name(&mut self.taken, &base);
            // A fresh builder, so the calls it knows are those of the kept messages only.
            let mut fresh = kit::SessionBuilder::new(Agent::Llxprt, "");
            std::mem::swap(&mut fresh.s, &mut self.b.s);
            fresh.unparsed = std::mem::take(&mut self.b.unparsed);
            for m in before[..cut].iter().cloned() {
                fresh.push(m);
            }
            self.b = fresh;
            self.branches.push(Branch {
                name,
                fork_point,
                leaf,
                messages: before,
            });
        }
        self.b
            .event(format!("rewind: {n} history items removed"), ts);
    }

    /// One `IContent`: a prompt, a reply, tool results, or the compaction summary.
    fn content(
        &mut self,
        c: &Value,
        rec_ts: Option<DateTime<Utc>>,
        native: Option<String>,
        summary: bool,
    ) {
        let speaker = kit::str_field(c, "speaker").unwrap_or_default();
        let meta = c.get("metadata").unwrap_or(&Value::Null);
        let ts = content_time(c).or(rec_ts);
        let mut text = String::new();
        let mut thinking: Vec<String> = Vec::new();
        let mut calls = Vec::new();
        let mut results = Vec::new();
        let mut unknown = Vec::new();
        for block in c
            .get("blocks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match kit::str_field(block, "type").unwrap_or_default() {
                "text" => push_text(&mut text, kit::str_field(block, "text").unwrap_or("")),
                "code" => {
                    let lang = kit::str_field(block, "language").unwrap_or("");
                    let code = kit::str_field(block, "code").unwrap_or("");
                    push_text(&mut text, &format!("```{lang}\n{code}\n```"));
                }
                "media" => push_text(&mut text, &media(block)),
                "thinking" => match kit::str_field(block, "thought").filter(|t| !t.is_empty()) {
                    Some(t) => thinking.push(t.to_string()),
                    None if block.get("encryptedContent").is_some() => {
                        thinking.push("[encrypted reasoning]".into());
                    }
                    None => {}
                },
                "tool_call" => calls.push(ToolCall {
                    tool_call_id: kit::str_field(block, "id").unwrap_or_default().to_string(),
                    tool_name: kit::str_field(block, "name")
                        .unwrap_or_default()
                        .to_string(),
                    input: block.get("parameters").cloned().unwrap_or(Value::Null),
                    ..ToolCall::default()
                }),
                "tool_response" => results.push(block),
                other => unknown.push((other.to_string(), block)),
            }
        }
        let synthetic = meta.get("synthetic").and_then(Value::as_bool) == Some(true);
        let is_summary = summary || meta.get("isSummary").and_then(Value::as_bool) == Some(true);
        let model = kit::str_field(meta, "model")
            .map(str::to_string)
            .or_else(|| self.model.clone());
        let usage = meta.get("usage").and_then(usage);
        let has_body = !text.is_empty() || !thinking.is_empty() || !calls.is_empty();
        let thinking = Some(thinking.join("\n\n")).filter(|t| !t.is_empty());
        match speaker {
            _ if is_summary => self.b.push(Message {
                role: Role::User,
                kind: MessageKind::CompactionSummary,
                content: text,
                thinking,
                timestamp: ts,
                token_usage: usage,
                model: usage.and(model),
                native_id: native,
                ..Message::default()
            }),
            _ if synthetic && calls.is_empty() && results.is_empty() => {
                let label = match kit::str_field(meta, "reason") {
                    Some(r) => format!("synthetic {speaker} ({r})"),
                    None => format!("synthetic {speaker}"),
                };
                self.b.context(&label, text, ts);
            }
            "human" if has_body => self.b.push(Message {
                role: Role::User,
                content: text,
                thinking,
                timestamp: ts,
                native_id: native,
                ..Message::default()
            }),
            "ai" if has_body || usage.is_some() => self.b.push(Message {
                role: Role::Assistant,
                content: text,
                thinking,
                tool_calls: calls,
                timestamp: ts,
                token_usage: usage,
                model,
                native_id: native,
                ..Message::default()
            }),
            "tool" if has_body => {
                self.b.context("tool message", text, ts);
            }
            "human" | "ai" | "tool" => {}
            other => {
                let raw = c.to_string();
                let problem = format!("content of unknown speaker {other:?}");
                self.b
                    .unparsed("records", &problem, || raw.clone(), "record", &raw, ts);
            }
        }
        for r in results {
            let call = kit::str_field(r, "callId").unwrap_or_default();
            let name = kit::str_field(r, "toolName");
            let mut output = result_text(r.get("result").unwrap_or(&Value::Null));
            let error = kit::str_field(r, "error").filter(|e| !e.is_empty());
            if let Some(e) = error {
                if !output.contains(e) {
                    kit::push_paragraph(&mut output, e);
                }
            }
            self.b.tool_result(call, name, output, error.is_some(), ts);
        }
        for (ty, block) in unknown {
            let raw = block.to_string();
            let problem = format!("content block of unknown type {ty:?}");
            self.b
                .unparsed("blocks", &problem, || raw.clone(), "block", &raw, ts);
        }
    }
}

fn is_content(c: &Value) -> bool {
    c.get("speaker").and_then(Value::as_str).is_some()
        && c.get("blocks").map(Value::is_array) == Some(true)
}

/// `metadata.timestamp`, in milliseconds.
fn content_time(c: &Value) -> Option<DateTime<Utc>> {
    let ms = kit::value_at(c, &["metadata", "timestamp"])?.as_i64()?;
    DateTime::from_timestamp_millis(ms)
}

fn push_text(out: &mut String, t: &str) {
    if t.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(t);
}

/// A media block as a placeholder: its bytes are measured, never kept.
fn media(block: &Value) -> String {
    let mime = kit::str_field(block, "mimeType");
    let data = kit::str_field(block, "data").unwrap_or("");
    let mut out = match kit::str_field(block, "encoding") {
        Some("url") if data.starts_with("data:") => kit::data_url_placeholder(data),
        Some("url") => format!("[media: {data}]"),
        _ => {
            let kind = match mime {
                Some(m) if m.starts_with("image/") => "image",
                _ => "attachment",
            };
            kit::base64_placeholder(kind, mime, Some(data))
        }
    };
    for key in ["filename", "caption"] {
        if let Some(v) = kit::str_field(block, key).filter(|v| !v.is_empty()) {
            out.push_str(&format!(" {v}"));
        }
    }
    out
}

/// A tool result as text: a string as is, an object's one `output` string, else its JSON.
fn result_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Object(o) if o.len() == 1 => match o.get("output").and_then(Value::as_str) {
            Some(s) => s.to_string(),
            None => serde_json::to_string_pretty(v).unwrap_or_default(),
        },
        _ => serde_json::to_string_pretty(v).unwrap_or_default(),
    }
}

/// `UsageStats` as sessfs counts it.
fn usage(u: &Value) -> Option<TokenUsage> {
    if !u.is_object() {
        return None;
    }
    let n = |k: &str| kit::u64_field(u, k);
    let prompt = n("promptTokens");
    let completion = n("completionTokens");
    let total = n("totalTokens");
    let reasoning = n("reasoningTokens");
    let read = n("cache_read_input_tokens").max(n("cachedTokens"));
    let write = n("cache_creation_input_tokens").max(n("cacheCreationTokens"));
    let apart = total == prompt + completion + reasoning;
    let output = if apart {
        completion
    } else {
        completion.saturating_sub(reasoning)
    };
    Some(TokenUsage {
        input_tokens: prompt.saturating_sub(read + write),
        output_tokens: output,
        thinking_tokens: reasoning,
        cached_tokens: read,
        cache_write_tokens: write,
    })
}

/// A session file, or its gzip archive read as it streams out of the decompressor.
fn load_events(path: &Path, id: &str, archive: bool) -> Session {
    let format = if archive {
        "llxprt-jsonl-gz"
    } else {
        "llxprt-jsonl"
    };
    let mut r = Reader::new(path, id, format);
    let mut each = |n: usize, line: &[u8]| {
        let at = format!("line {n}");
        match serde_json::from_slice::<Line>(line) {
            Ok(rec) => r.line(rec, line, &at),
            Err(e) if serde_json::from_slice::<Value>(line).is_ok() => {
                let raw = String::from_utf8_lossy(line).trim().to_string();
                r.b.unparsed(
                    "records",
                    "not a session event",
                    || format!("{at}: {e}"),
                    "record",
                    &raw,
                    None,
                );
            }
            Err(e) => return Err(format!("not a session event: {e}")),
        }
        Ok(())
    };
    let scanned = if archive {
        match kit::open_file(path) {
            Ok(f) => {
                let name = path.display().to_string();
                jsonl::read_lines_from(MultiGzDecoder::new(f), &name, &mut each)
            }
            // The warning a plain file that cannot be opened gives.
            Err(_) => jsonl::read_lines(path, each),
        }
    } else {
        jsonl::read_lines(path, each)
    };
    let mut s = r.finish();
    scanned.into_session(&mut s);
    s
}

/// A 0.8.x `persisted-session-*.json`: `{version, sessionId, projectHash, createdAt,
/// updatedAt, history: IContent[], uiHistory, metadata: {provider, model, tokenCount}}`,
/// rewritten whole after every turn.
fn load_document(path: &Path, id: &str) -> Session {
    let mut r = Reader::new(path, id, "llxprt-json");
    let doc = match kit::read_json(path, "session document", MAX_JSON_BYTES) {
        Ok(v) => v,
        Err(e) => {
            r.b.warn(e);
            return r.finish();
        }
    };
    if let Some(v) = doc.get("version").and_then(Value::as_u64) {
        if v > KNOWN_VERSION {
            r.b.warn(format!(
                "document version {v} is newer than the {KNOWN_VERSION} sessfs knows; \
                 what it reads may be incomplete"
            ));
        }
    }
    r.model = kit::str_at(&doc, &["metadata", "model"]).map(str::to_string);
    r.b.s.set_model = r.model.clone();
    let time = |k: &str| kit::str_field(&doc, k).and_then(kit::parse_rfc3339);
    r.b.s.created_at = time("createdAt");
    r.b.s.updated_at = time("updatedAt");
    let stamp = r.b.s.updated_at;
    match doc.get("history").and_then(Value::as_array) {
        Some(items) => {
            for (i, c) in items.iter().enumerate() {
                let native = Some(format!("item-{i}"));
                if is_content(c) {
                    r.content(c, None, native, false);
                } else {
                    let raw = c.to_string();
                    let at = format!("history[{i}]");
                    r.unread("history item holding no IContent", &at, &raw, stamp);
                }
            }
        }
        None => r.b.warn("the document holds no history array"),
    }
    r.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_and_reasoning_are_taken_out_once() {
        // Anthropic: prompt includes cache reads and writes; total = prompt + completion.
        let u = usage(
            &serde_json::json!({"promptTokens": 100, "completionTokens": 20,
            "totalTokens": 120, "cache_read_input_tokens": 60, "cache_creation_input_tokens": 10}),
        )
        .expect("usage");
        assert_eq!(
            (u.input_tokens, u.cached_tokens, u.cache_write_tokens),
            (30, 60, 10)
        );
        assert_eq!((u.output_tokens, u.thinking_tokens), (20, 0));
        // OpenAI: reasoning inside the completion count.
        let u = usage(
            &serde_json::json!({"promptTokens": 50, "completionTokens": 30,
            "totalTokens": 80, "cachedTokens": 20, "reasoningTokens": 12}),
        )
        .expect("usage");
        assert_eq!((u.input_tokens, u.cached_tokens), (30, 20));
        assert_eq!((u.output_tokens, u.thinking_tokens), (18, 12));
    }

    #[test]
    fn a_document_id_is_read_from_its_top() {
        let head = b"{\n  \"version\": 1,\n  \"sessionId\": \"abc-1\",\n  \"history\": [";
        assert_eq!(document_id(head).as_deref(), Some("abc-1"));
        assert_eq!(document_id(b"{\"version\": 1}"), None);
    }
}
