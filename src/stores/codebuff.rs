//! Codebuff (formerly Manicode): one directory per chat under
//! `~/.config/manicode/projects/<project>/chats/<chat id>/`.
//!
//! Learnt from Codebuff's own source, github.com/CodebuffAI/codebuff. The files are read at
//! the commits the source index holds them at: `cli/src/utils/run-state-storage.ts` @
//! `e9d48bcf7b7bf314ada8d5d6afc829bd5405780e` (`saveChatState`: `run-state.json` and
//! `chat-messages.json` rewritten whole at each checkpoint, the previous `run-state.json`
//! rotated to `run-state.json.bak`, `chat-meta.json` written after them; the recovery order
//! primary, `.bak`, unfinished temps), `cli/src/utils/chat-meta.ts` (the sidecar:
//! `messageCount`, `firstPrompt`, `name`), `cli/src/utils/config-dir.ts` @
//! `ce10b6eeda97cdbad42e38b77a44dfa95cc3b4b4` (`~/.config/manicode`, with `-<environment>`
//! for a development stack), `cli/src/project-files.ts` @
//! `0794d3f34118296b0af0920f3cc3b0c9413a6c30` (`projects/<basename of the project root>/
//! chats/<chat id>`, the id `new Date().toISOString()` with `:` made `-`),
//! `cli/src/types/chat.ts` @ `03cb53dc0a314c2a7a01a30d08472d45015481cd` (`ChatMessage` and its
//! content blocks), `cli/src/hooks/helpers/send-message.ts` @
//! `0b40fb03a07ada18f04c5ef41366be62b2029b16` (a reply's `credits`, `completionTime`,
//! `userError` and `metadata.runState`; the UI keeps the last 100 messages),
//! `sdk/src/run-state.ts` @ `004bd65e00d6e9c63a1a6a12fcf4ad488a2f7e23` (`RunState`:
//! `sessionState {fileContext, mainAgentState}` and `output`),
//! `common/src/types/messages/codebuff-message.ts` @ `86b708cd04286b095d9debc32b6f7a6fc67e9d2d`
//! (the model's messages: `system`, `user`, `assistant` with `text`, `reasoning` and
//! `tool-call` parts, `tool` with `toolCallId` and `json`/`media` outputs; `tags`) and
//! `npm-app/src/chat-storage.ts` @ `da0d57111a3501e2056b7aab2ce8a1fe233649e9` (the older
//! npm CLI's `messages.json`: `{id, messages, updatedAt}`).
//!
//! **Where.** `~/.config/manicode`, `~/.config/manicode-dev` and `~/.config/manicode-staging`
//! (the production, development and staging channels; Codebuff picks one from
//! `NEXT_PUBLIC_CB_ENVIRONMENT` and has no variable that moves its directory). The same
//! path on macOS. A `--store` path may be a channel directory or its `projects/`. Beside
//! the projects the channel directory holds `credentials.json` (the auth token): never
//! opened.
//!
//! **Which file holds what.** `chat-messages.json` is the conversation as the user saw it:
//! prompts, replies with their text, reasoning, tool calls with outputs and sub-agent
//! blocks, errors, times and the credits each reply cost. It is the transcript.
//! `run-state.json` is the main agent's state: its system prompt and the message history
//! the model was sent (prompts wrapped with instructions, injected context, tool results
//! as the model read them). A history message the transcript already shows (a prompt
//! whose text it holds, a call or result whose id it holds, a reply whose text it holds)
//! is not shown again; every other one is shown where it stands, after the last message it
//! follows. `chat-meta.json` gives the chat's name.

use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    placeholder, unified_id, Agent, Message, Role, Session, Source, Subagent, ToolCall,
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The channel directories under `~/.config`: production, development, staging.
const CHANNELS: &[&str] = &["manicode", "manicode-dev", "manicode-staging"];
const CHAT_MESSAGES: &str = "chat-messages.json";
const RUN_STATE: &str = "run-state.json";
const RUN_STATE_BAK: &str = "run-state.json.bak";
const CHAT_META: &str = "chat-meta.json";
/// The older npm CLI's transcript.
const LEGACY_MESSAGES: &str = "messages.json";
/// Largest JSON file parsed (run states grow to many MB: they hold the project's file tree).
const MAX_JSON: u64 = 256 << 20;

pub fn candidates(env: &Env) -> Vec<Root> {
    CHANNELS
        .iter()
        .map(|c| Root::new(Agent::Codebuff, env.home.join(".config").join(c), "default"))
        .collect()
}

pub struct CodebuffStore {
    base: Base,
}

impl CodebuffStore {
    pub fn new(roots: Vec<Root>) -> CodebuffStore {
        CodebuffStore {
            base: Base::new(Agent::Codebuff, roots),
        }
    }
}

/// The `projects/` directory a root stands for (itself, or `<root>/projects`).
fn projects_dir(root: &Path) -> PathBuf {
    let under = root.join("projects");
    if under.is_dir() {
        under
    } else {
        root.to_path_buf()
    }
}

/// The chat directories of a projects directory: `(project, chat dir)`.
fn chat_dirs(projects: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (p, t) in kit::typed_entries(projects) {
        let project = kit::file_name(&p).to_string();
        if t != EntryType::Dir || project.starts_with('.') {
            continue;
        }
        for (c, ct) in kit::typed_entries(&p.join("chats")) {
            if ct == EntryType::Dir && !kit::file_name(&c).starts_with('.') {
                out.push((project.clone(), c));
            }
        }
    }
    out
}

fn sources(dir: &Path) -> Vec<PathBuf> {
    [CHAT_MESSAGES, RUN_STATE, CHAT_META, LEGACY_MESSAGES]
        .iter()
        .map(|f| dir.join(f))
        .collect()
}

impl Store for CodebuffStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for (project, dir) in chat_dirs(&projects_dir(&root.path)) {
                if ![CHAT_MESSAGES, RUN_STATE, RUN_STATE_BAK, LEGACY_MESSAGES]
                    .iter()
                    .any(|f| dir.join(f).is_file())
                {
                    continue;
                }
                let id = format!("{project}-{}", kit::file_name(&dir));
                if seen.insert(id.clone()) {
                    out.push(Listed {
                        id,
                        sources: sources(&dir),
                        path: dir,
                        key: None,
                        root: i,
                    });
                }
            }
        }
        out
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        true
    }

    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            g.dirs.push(root.path.clone());
            let projects = projects_dir(&root.path);
            if projects != root.path {
                g.dirs.push(projects.clone());
            }
            for (p, t) in kit::typed_entries(&projects) {
                if t == EntryType::Dir && !kit::file_name(&p).starts_with('.') {
                    g.dirs.push(p.join("chats"));
                    for (c, ct) in kit::typed_entries(&p.join("chats")) {
                        if ct == EntryType::Dir {
                            g.dirs.push(c);
                        }
                    }
                }
            }
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        load(&listed.path, &listed.id)
    }
}

/// The time a chat id names: `2026-03-05T14-02-11.000Z` is `new Date().toISOString()` with
/// its colons made dashes.
fn id_time(chat: &str) -> Option<DateTime<Utc>> {
    let b = chat.as_bytes();
    if b.len() < 19 || b.get(10) != Some(&b'T') {
        return None;
    }
    let mut s = chat.to_string();
    s.replace_range(13..14, ":");
    s.replace_range(16..17, ":");
    kit::parse_rfc3339(&s)
}

/// A JSON file of the chat directory, `None` when absent; a problem costs a warning.
fn read(b: &mut SessionBuilder, path: &Path, label: &str) -> Option<Value> {
    if !path.is_file() {
        return None;
    }
    match kit::read_json(path, label, MAX_JSON) {
        Ok(v) => Some(v),
        Err(e) => {
            b.warn(e);
            None
        }
    }
}

/// One chat directory.
pub fn load(dir: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Codebuff, id);
    let chat = kit::file_name(dir).to_string();
    let project = dir
        .parent()
        .and_then(Path::parent)
        .map(kit::file_name)
        .unwrap_or_default()
        .to_string();
    let meta = read(&mut b, &dir.join(CHAT_META), "codebuff chat-meta.json");
    let mut run_state = read(&mut b, &dir.join(RUN_STATE), "codebuff run-state.json");
    let mut paths = vec![dir.join(CHAT_MESSAGES), dir.join(RUN_STATE)];
    if run_state.is_none() && dir.join(RUN_STATE_BAK).is_file() {
        // Codebuff itself falls back to the previous generation.
        run_state = read(
            &mut b,
            &dir.join(RUN_STATE_BAK),
            "codebuff run-state.json.bak",
        );
        if run_state.is_some() {
            b.warn("run-state.json is missing or unreadable: the agent's context is from run-state.json.bak, the save before it");
            paths.push(dir.join(RUN_STATE_BAK));
        }
    }
    let ui = match read(
        &mut b,
        &dir.join(CHAT_MESSAGES),
        "codebuff chat-messages.json",
    ) {
        Some(Value::Array(a)) => a,
        Some(_) => {
            b.warn("chat-messages.json is not a list of messages: not shown");
            Vec::new()
        }
        None => Vec::new(),
    };
    let mut format = "codebuff-chat";
    let mut main = run_state
        .as_mut()
        .and_then(|r| r.get_mut("sessionState"))
        .and_then(|s| s.get_mut("mainAgentState"))
        .map(Value::take)
        .unwrap_or(Value::Null);
    let mut history: Vec<Value> = match main.get_mut("messageHistory").map(Value::take) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    if ui.is_empty() && run_state.is_none() {
        // The older npm CLI: one `messages.json` of the model's messages.
        if let Some(legacy) = read(&mut b, &dir.join(LEGACY_MESSAGES), "codebuff messages.json") {
            format = "codebuff-messages-json";
            paths = vec![dir.join(LEGACY_MESSAGES)];
            match legacy.get("messages") {
                Some(Value::Array(a)) => history.clone_from(a),
                _ => b.warn("messages.json has no `messages` list"),
            }
            b.s.updated_at = kit::str_field(&legacy, "updatedAt").and_then(kit::parse_rfc3339);
        }
    }

    if let Some(sp) = kit::str_field(&main, "systemPrompt").filter(|s| !s.is_empty()) {
        b.context("system prompt", sp.to_string(), None);
    }

    // Where each history message the transcript does not show goes: after the last
    // transcript message it follows (`None`: before the first).
    let shown = Shown::of(&ui);
    let mut placed: Vec<Vec<&Value>> = vec![Vec::new(); ui.len() + 1];
    let mut at: Option<usize> = None;
    let mut used_prompts = HashSet::new();
    for m in &history {
        match shown.find(m, at, &mut used_prompts) {
            Some(i) => at = Some(at.map_or(i, |a| a.max(i))),
            None => placed[at.map_or(0, |a| a + 1)].push(m),
        }
    }
    for m in &placed[0] {
        history_message(&mut b, m, "run-state.json");
    }
    let mut raw = Raw::new();
    for m in &history {
        if kit::str_field(m, "role") == Some("tool") {
            let c = m.get("content");
            if let Some(id) = kit::str_field(m, "toolCallId")
                .or_else(|| c.and_then(|c| kit::str_field(c, "toolCallId")))
            {
                raw.insert(id.to_string(), tool_output(c));
            }
        }
    }
    let mut errors: Vec<String> = Vec::new();
    for (i, m) in ui.iter().enumerate() {
        ui_message(&mut b, &raw, m, i, &mut errors);
        for h in &placed[i + 1] {
            history_message(&mut b, h, "run-state.json");
        }
    }

    // Sub-agents older builds kept inside the main agent's state.
    for sub in main
        .get("subagents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let aid = kit::str_field(sub, "agentId").unwrap_or("subagent");
        if b.s
            .subagents
            .iter()
            .any(|s| s.name == format!("agent-{aid}"))
        {
            continue;
        }
        let mut cb = SessionBuilder::new(Agent::Codebuff, format!("{id}/{aid}"));
        for m in sub
            .get("messageHistory")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            history_message(&mut cb, m, "run-state.json subagent");
        }
        let mut child = cb.finish();
        child.parent = Some(unified_id(Agent::Codebuff, id));
        let name = sub_name(&b.s, aid);
        b.s.subagents.push(Subagent {
            name,
            description: kit::str_field(sub, "agentType").map(str::to_string),
            session: Some(Box::new(child)),
            ..Subagent::default()
        });
    }

    // The last run's outcome, when it failed and the transcript does not say so.
    if let Some(out) = run_state.as_ref().and_then(|r| r.get("output")) {
        if kit::str_field(out, "type") == Some("error") {
            let msg = kit::str_field(out, "message").unwrap_or_default();
            if !msg.is_empty() && msg != "No output yet" && !errors.iter().any(|e| e.contains(msg))
            {
                b.event(format!("error: {msg}"), None);
            }
        }
    }

    if let Some(name) = meta
        .as_ref()
        .and_then(|m| kit::str_field(m, "name"))
        .filter(|n| !n.trim().is_empty())
    {
        b.s.title = Some(name.trim().to_string());
    }
    let fc = run_state
        .as_ref()
        .and_then(|r| kit::value_at(r, &["sessionState", "fileContext"]));
    b.s.cwd = fc
        .and_then(|f| kit::str_any(f, &["cwd", "projectRoot"]))
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    if !project.is_empty() {
        b.s.tags.push(format!("project:{project}"));
    }
    if let Some(t) = kit::str_field(&main, "agentType").filter(|t| !t.is_empty()) {
        b.s.tags.push(format!("agent:{t}"));
    }
    b.s.created_at = id_time(&chat);
    b.s.source = Source {
        paths,
        format: format.into(),
        format_version: None,
    };
    b.finish()
}

// ---------------------------------------------------------------------------------------
// What the transcript already shows

/// The prompts, texts and tool call ids of `chat-messages.json`, by message index.
#[derive(Default)]
struct Shown {
    prompts: Vec<(usize, String)>,
    texts: Vec<(usize, String)>,
    ids: HashMap<String, usize>,
}

impl Shown {
    fn of(ui: &[Value]) -> Shown {
        let mut s = Shown::default();
        for (i, m) in ui.iter().enumerate() {
            let content = kit::str_field(m, "content").unwrap_or_default().trim();
            if kit::str_field(m, "variant") == Some("user") {
                if !content.is_empty() {
                    s.prompts.push((i, content.to_string()));
                }
            } else if !content.is_empty() {
                s.texts.push((i, content.to_string()));
            }
            s.blocks(i, m.get("blocks"));
        }
        s
    }

    fn blocks(&mut self, i: usize, blocks: Option<&Value>) {
        for bl in blocks.and_then(Value::as_array).into_iter().flatten() {
            match kit::str_field(bl, "type").unwrap_or_default() {
                "text" | "plan" => {
                    let t = kit::str_field(bl, "content").unwrap_or_default().trim();
                    if !t.is_empty() {
                        self.texts.push((i, t.to_string()));
                    }
                }
                "tool" | "ask-user" => {
                    if let Some(id) = kit::str_field(bl, "toolCallId") {
                        self.ids.insert(id.to_string(), i);
                    }
                }
                "agent" => {
                    if let Some(id) = kit::str_field(bl, "spawnToolCallId") {
                        self.ids.insert(id.to_string(), i);
                    }
                    self.blocks(i, bl.get("blocks"));
                }
                _ => {}
            }
        }
    }

    /// The transcript message that already shows history message `m`, if any.
    fn find(&self, m: &Value, at: Option<usize>, used: &mut HashSet<usize>) -> Option<usize> {
        let from = at.unwrap_or(0);
        match kit::str_field(m, "role").unwrap_or_default() {
            "user" => {
                let text = parts_text(m.get("content"), &["text"]);
                let hit = self
                    .prompts
                    .iter()
                    .find(|(i, p)| *i >= from && !used.contains(i) && text.contains(p.as_str()))
                    .map(|(i, _)| *i)?;
                used.insert(hit);
                Some(hit)
            }
            "tool" => {
                let id = kit::str_field(m, "toolCallId")
                    .or_else(|| kit::str_at(m, &["content", "toolCallId"]))?;
                self.ids.get(id).copied()
            }
            "assistant" => {
                let parts = content_parts(m.get("content"));
                if let Some(i) = parts.iter().find_map(|p| {
                    (kit::str_field(p, "type") == Some("tool-call"))
                        .then(|| kit::str_field(p, "toolCallId"))
                        .flatten()
                        .and_then(|id| self.ids.get(id).copied())
                }) {
                    return Some(i);
                }
                let texts: Vec<String> = parts
                    .iter()
                    .filter(|p| matches!(kit::str_field(p, "type"), Some("text" | "reasoning")))
                    .filter_map(|p| kit::str_field(p, "text"))
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
                    .collect();
                if texts.is_empty() {
                    return None;
                }
                let mut last = None;
                for t in &texts {
                    let i = self
                        .texts
                        .iter()
                        .find(|(i, s)| *i >= from && s.contains(t.as_str()))
                        .map(|(i, _)| *i)?;
                    last = Some(last.map_or(i, |l: usize| l.max(i)));
                }
                last
            }
            _ => None,
        }
    }
}

/// A message's content as parts: a string is one text part.
fn content_parts(c: Option<&Value>) -> Vec<Value> {
    match c {
        Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
        Some(Value::Array(a)) => a.clone(),
        Some(v @ Value::Object(_)) => vec![v.clone()],
        _ => Vec::new(),
    }
}

/// The text of the parts of the given types, joined by blank lines.
fn parts_text(c: Option<&Value>, types: &[&str]) -> String {
    let mut out = String::new();
    for p in content_parts(c) {
        if kit::str_field(&p, "type").is_some_and(|t| types.contains(&t)) {
            if let Some(t) = kit::str_field(&p, "text") {
                kit::push_paragraph(&mut out, t);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// run-state.json (and the older messages.json): the model's messages

fn ms_time(v: &Value, key: &str) -> Option<DateTime<Utc>> {
    v.get(key)
        .and_then(Value::as_i64)
        .and_then(DateTime::from_timestamp_millis)
}

/// A tool result's outputs as text, and whether it reports an error.
fn tool_output(content: Option<&Value>) -> (String, bool) {
    let mut out = String::new();
    let mut error = false;
    let items: Vec<Value> = match content {
        // The older shape: one `tool-result` part holding `output`.
        Some(v @ Value::Object(_)) if v.get("output").is_some() => content_parts(v.get("output")),
        other => content_parts(other),
    };
    for item in &items {
        match kit::str_field(item, "type").unwrap_or_default() {
            "json" => {
                let v = item.get("value").unwrap_or(&Value::Null);
                error |= is_error_value(v);
                kit::push_paragraph(&mut out, &value_text(v));
            }
            "media" => {
                let mime = kit::str_field(item, "mediaType");
                let p = kit::base64_placeholder("image", mime, kit::str_field(item, "data"));
                kit::push_paragraph(&mut out, &p);
            }
            "text" => kit::push_paragraph(&mut out, kit::str_field(item, "text").unwrap_or("")),
            _ => kit::push_paragraph(&mut out, &item.to_string()),
        }
    }
    (out, error)
}

/// Codebuff's tools report failure as an `errorMessage` (or `error`) in their JSON output.
fn is_error_value(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            o.get("errorMessage").is_some_and(|e| !e.is_null())
                || o.get("error")
                    .is_some_and(|e| !e.is_null() && e != &Value::Bool(false))
        }
        Value::Array(a) => a.iter().any(is_error_value),
        _ => false,
    }
}

/// A JSON value as text: a string as itself, anything else as compact JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The label of an injected user message: its tags, else `injected`.
fn tags_label(m: &Value) -> String {
    let tags: Vec<String> = m
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|t| t.to_lowercase().replace('_', " "))
        .collect();
    if tags.is_empty() {
        "injected".to_string()
    } else {
        tags.join(", ")
    }
}

fn user_content(c: Option<&Value>) -> String {
    let mut out = String::new();
    for p in content_parts(c) {
        match kit::str_field(&p, "type").unwrap_or_default() {
            "text" => kit::push_paragraph(&mut out, kit::str_field(&p, "text").unwrap_or("")),
            "image" => {
                let mime = kit::str_field(&p, "mediaType");
                let ph = match p.get("image").and_then(Value::as_str) {
                    Some(s) if s.starts_with("data:") => kit::data_url_placeholder(s),
                    Some(s) if s.starts_with("http") => format!("[image: {s}]"),
                    s => kit::base64_placeholder("image", mime, s),
                };
                kit::push_paragraph(&mut out, &ph);
            }
            "file" => {
                let mime = kit::str_field(&p, "mediaType");
                let mut ph = kit::base64_placeholder(
                    "attachment",
                    mime,
                    p.get("data").and_then(Value::as_str),
                );
                if let Some(f) = kit::str_field(&p, "filename") {
                    ph = format!("{ph} {f}");
                }
                kit::push_paragraph(&mut out, &ph);
            }
            _ => kit::push_paragraph(&mut out, &p.to_string()),
        }
    }
    out
}

/// One message of the model's history, shown because the transcript does not show it.
fn history_message(b: &mut SessionBuilder, m: &Value, place: &str) {
    let ts = ms_time(m, "sentAt");
    match kit::str_field(m, "role").unwrap_or_default() {
        "system" => {
            let text = user_content(m.get("content"));
            b.context("system", text, ts);
        }
        "user" => {
            let text = user_content(m.get("content"));
            let prompt = m
                .get("tags")
                .and_then(Value::as_array)
                .is_some_and(|t| t.iter().any(|x| x == "USER_PROMPT"))
                || (m.get("tags").is_none() && !text.trim_start().starts_with('<'));
            if prompt {
                b.push(Message {
                    role: Role::User,
                    content: text,
                    timestamp: ts,
                    ..Message::default()
                });
            } else {
                b.context(&tags_label(m), text, ts);
            }
        }
        "assistant" => {
            let mut msg = Message {
                role: Role::Assistant,
                timestamp: ts,
                ..Message::default()
            };
            let mut thinking = String::new();
            for p in content_parts(m.get("content")) {
                match kit::str_field(&p, "type").unwrap_or_default() {
                    "text" => kit::push_paragraph(
                        &mut msg.content,
                        kit::str_field(&p, "text").unwrap_or(""),
                    ),
                    "reasoning" => {
                        kit::push_paragraph(&mut thinking, kit::str_field(&p, "text").unwrap_or(""))
                    }
                    "tool-call" => msg.tool_calls.push(ToolCall {
                        tool_call_id: kit::str_field(&p, "toolCallId")
                            .unwrap_or_default()
                            .to_string(),
                        tool_name: kit::str_field(&p, "toolName")
                            .unwrap_or_default()
                            .to_string(),
                        input: p
                            .get("input")
                            .or_else(|| p.get("args"))
                            .cloned()
                            .unwrap_or(Value::Null),
                        ..ToolCall::default()
                    }),
                    other => {
                        let first = || format!("{place}: part `{other}`");
                        b.unparsed.note("history parts", "unknown part type", first);
                        kit::push_paragraph(&mut msg.content, &p.to_string());
                    }
                }
            }
            if !thinking.is_empty() {
                msg.thinking = Some(thinking);
            }
            b.push(msg);
        }
        "tool" => {
            let c = m.get("content");
            let id = kit::str_field(m, "toolCallId")
                .or_else(|| c.and_then(|c| kit::str_field(c, "toolCallId")))
                .unwrap_or_default()
                .to_string();
            let name = kit::str_field(m, "toolName")
                .or_else(|| c.and_then(|c| kit::str_field(c, "toolName")))
                .map(str::to_string);
            let (out, error) = tool_output(c);
            b.tool_result(&id, name.as_deref(), out, error, ts);
        }
        other => {
            let first = || format!("{place}: role `{other}`");
            b.unparsed(
                "history messages",
                "unknown role",
                first,
                "message",
                &m.to_string(),
                ts,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// chat-messages.json: the transcript

/// Tool results of the model's history by call id: `(output, is error)`.
type Raw = HashMap<String, (String, bool)>;

/// Assistant text, calls and results of one run of blocks, in their stored order: text
/// after a tool call starts a new message, after the results of the calls before it.
struct Reply<'a> {
    b: &'a mut SessionBuilder,
    /// The results the model read (`run-state.json`), by call id.
    raw: &'a Raw,
    cur: Message,
    results: Vec<(String, String, String, bool)>,
    ts: Option<DateTime<Utc>>,
    cost: Option<f64>,
}

impl Reply<'_> {
    fn new<'a>(
        b: &'a mut SessionBuilder,
        raw: &'a Raw,
        ts: Option<DateTime<Utc>>,
        cost: Option<f64>,
    ) -> Reply<'a> {
        Reply {
            b,
            raw,
            cur: Message {
                role: Role::Assistant,
                timestamp: ts,
                ..Message::default()
            },
            results: Vec::new(),
            ts,
            cost,
        }
    }

    fn text(&mut self, t: &str, reasoning: bool) {
        if !self.cur.tool_calls.is_empty() {
            self.flush();
        }
        if reasoning {
            let th = self.cur.thinking.get_or_insert_with(String::new);
            kit::push_paragraph(th, t);
        } else {
            kit::push_paragraph(&mut self.cur.content, t);
        }
    }

    fn call(&mut self, id: &str, name: &str, input: Value, output: Option<(String, bool)>) {
        self.cur.tool_calls.push(ToolCall {
            tool_call_id: id.to_string(),
            tool_name: name.to_string(),
            input,
            ..ToolCall::default()
        });
        // What the model read wins over the terminal's rendering of it.
        let output = self.raw.get(id).cloned().or(output);
        if let Some((out, err)) = output {
            self.results
                .push((id.to_string(), name.to_string(), out, err));
        }
    }

    fn flush(&mut self) {
        let empty = self.cur.content.is_empty()
            && self.cur.thinking.is_none()
            && self.cur.tool_calls.is_empty();
        let next = Message {
            role: Role::Assistant,
            timestamp: self.ts,
            ..Message::default()
        };
        let mut m = std::mem::replace(&mut self.cur, next);
        if !empty {
            m.cost = self.cost.take();
            self.b.push(m);
        }
        for (id, name, out, err) in std::mem::take(&mut self.results) {
            self.b.tool_result(&id, Some(&name), out, err, self.ts);
        }
    }

    /// The cost not yet given to a message, for the caller to place.
    fn finish(mut self) -> Option<f64> {
        self.flush();
        self.cost
    }
}

/// A tool block's output: the text shown, and whether the raw output reports an error.
fn block_output(bl: &Value) -> Option<(String, bool)> {
    let text = kit::str_field(bl, "output").map(str::to_string);
    let raw = bl.get("outputRaw").filter(|v| !v.is_null());
    if text.is_none() && raw.is_none() {
        return None;
    }
    let error = raw.is_some_and(|r| {
        let (_, e) = tool_output(Some(r));
        e || is_error_value(r)
    });
    Some(match text {
        Some(t) => (t, error),
        None => {
            let (t, e) = tool_output(raw);
            (t, error || e)
        }
    })
}

/// The blocks of a message (or of a sub-agent) into `r`; sub-agents become subagents of
/// `r`'s session.
fn blocks(r: &mut Reply<'_>, blocks: &[Value], place: &str) {
    for bl in blocks {
        match kit::str_field(bl, "type").unwrap_or_default() {
            "text" => {
                let t = kit::str_field(bl, "content").unwrap_or_default();
                if !t.is_empty() {
                    r.text(t, kit::str_field(bl, "textType") == Some("reasoning"));
                }
            }
            "plan" => r.text(kit::str_field(bl, "content").unwrap_or_default(), false),
            "tool" => {
                let id = kit::str_field(bl, "toolCallId").unwrap_or_default();
                let name = kit::str_field(bl, "toolName").unwrap_or_default();
                let input = bl.get("input").cloned().unwrap_or(Value::Null);
                r.call(id, name, input, block_output(bl));
            }
            "ask-user" => {
                let id = kit::str_field(bl, "toolCallId").unwrap_or_default();
                let input = serde_json::json!({"questions": bl.get("questions").cloned().unwrap_or(Value::Null)});
                let out = if bl.get("skipped") == Some(&Value::Bool(true)) {
                    Some(("skipped".to_string(), false))
                } else {
                    bl.get("answers")
                        .filter(|a| !a.is_null())
                        .map(|a| (a.to_string(), false))
                };
                r.call(id, "ask_user", input, out);
            }
            "image" => {
                let ph = image_block(bl);
                r.text(&ph, false);
            }
            "agent" => {
                r.flush();
                subagent(r, bl, place);
            }
            "mode-divider" => {
                r.flush();
                let mode = kit::str_field(bl, "mode").unwrap_or_default();
                r.b.event(format!("mode: {mode}"), r.ts);
            }
            "gate-state" => {
                r.flush();
                let mut t = format!(
                    "gate {}: {}",
                    kit::str_field(bl, "gate").unwrap_or_default(),
                    kit::str_field(bl, "gateStatus").unwrap_or_default()
                );
                if let Some(d) = kit::str_field(bl, "details") {
                    t.push_str(&format!(" ({d})"));
                }
                r.b.event(t, r.ts);
            }
            "agent-list" => {
                r.flush();
                let names: Vec<&str> = bl
                    .get("agents")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|a| kit::str_any(a, &["displayName", "id"]))
                    .collect();
                r.b.event(format!("agents: {}", names.join(", ")), r.ts);
            }
            // Live terminal output only; never holds conversation.
            "html" => {}
            other => {
                r.flush();
                let first = || format!("{place}: block `{other}`");
                r.b.unparsed(
                    "blocks",
                    "unknown block type",
                    first,
                    "block",
                    &bl.to_string(),
                    r.ts,
                );
            }
        }
    }
}

fn image_block(bl: &Value) -> String {
    let mime = kit::str_field(bl, "mediaType");
    let mut ph = if bl.get("imageRedacted") == Some(&Value::Bool(true)) {
        placeholder(
            "image",
            mime,
            bl.get("imageLength")
                .and_then(Value::as_u64)
                .map(|n| n as usize * 3 / 4),
        )
    } else {
        kit::base64_placeholder("image", mime, kit::str_field(bl, "image"))
    };
    if let Some(f) = kit::str_field(bl, "filename") {
        ph = format!("{ph} {f}");
    }
    ph
}

/// `agent-<id>`, made unique among the session's subagents.
fn sub_name(s: &Session, aid: &str) -> String {
    let mut taken: HashSet<String> = s.subagents.iter().map(|x| x.name.clone()).collect();
    kit::unique_name(&mut taken, &format!("agent-{aid}"))
}

/// An `agent` block: a sub-agent's work, nested under the session's `subagents/`.
fn subagent(r: &mut Reply<'_>, bl: &Value, place: &str) {
    let aid = kit::str_field(bl, "agentId").unwrap_or("subagent");
    let ty = kit::str_field(bl, "agentType").unwrap_or_default();
    let status = kit::str_field(bl, "status").unwrap_or_default();
    let parent_id = r.b.s.id.clone();
    let mut cb = SessionBuilder::new(Agent::Codebuff, format!("{parent_id}/{aid}"));
    if let Some(p) = kit::str_field(bl, "initialPrompt").filter(|p| !p.is_empty()) {
        cb.push(Message {
            role: Role::User,
            content: p.to_string(),
            timestamp: r.ts,
            ..Message::default()
        });
    }
    if let Some(params) = bl
        .get("params")
        .filter(|p| p.as_object().is_some_and(|o| !o.is_empty()))
    {
        cb.context("params", params.to_string(), r.ts);
    }
    {
        let mut cr = Reply::new(&mut cb, r.raw, r.ts, None);
        match bl.get("blocks").and_then(Value::as_array) {
            Some(bs) if !bs.is_empty() => blocks(&mut cr, bs, place),
            _ => {
                let c = kit::str_field(bl, "content").unwrap_or_default();
                if !c.is_empty() {
                    cr.text(c, false);
                }
            }
        }
        cr.finish();
    }
    if matches!(status, "failed" | "cancelled" | "running") {
        cb.event(format!("status: {status}"), r.ts);
    }
    let mut child = cb.finish();
    child.parent = Some(unified_id(Agent::Codebuff, &parent_id));
    child.title = kit::str_field(bl, "agentName")
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .or(child.title);
    let name = sub_name(&r.b.s, aid);
    r.b.event(format!("subagent {name} ({ty}): {status}"), r.ts);
    r.b.s.subagents.push(Subagent {
        name,
        description: Some(ty.to_string()).filter(|t| !t.is_empty()),
        tool_call_id: kit::str_field(bl, "spawnToolCallId").map(str::to_string),
        session: Some(Box::new(child)),
        ..Subagent::default()
    });
}

/// One `ChatMessage` of `chat-messages.json`.
fn ui_message(b: &mut SessionBuilder, raw: &Raw, m: &Value, i: usize, errors: &mut Vec<String>) {
    let place = format!("chat-messages.json message {}", i + 1);
    if !m.is_object() {
        let first = || place.clone();
        b.unparsed(
            "messages",
            "not a JSON object",
            first,
            "message",
            &m.to_string(),
            None,
        );
        return;
    }
    let ts = kit::str_field(m, "timestamp").and_then(kit::parse_rfc3339);
    let content = kit::str_field(m, "content").unwrap_or_default();
    let bl: &[Value] = m
        .get("blocks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    match kit::str_field(m, "variant").unwrap_or_default() {
        "user" => {
            let mut text = content.to_string();
            for a in m
                .get("textAttachments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let t = kit::str_field(a, "content").unwrap_or_default();
                kit::push_paragraph(&mut text, &format!("[Pasted Text]\n{t}"));
            }
            for a in m
                .get("fileAttachments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let kind = if a.get("isDirectory") == Some(&Value::Bool(true)) {
                    "Directory"
                } else {
                    "File"
                };
                let p = kit::str_field(a, "path").unwrap_or_default();
                kit::push_paragraph(&mut text, &format!("[{kind}: {p}]"));
            }
            for a in m
                .get("attachments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let size = a.get("size").and_then(Value::as_u64).map(|n| n as usize);
                let mut ph = placeholder("image", None, size);
                if let Some(p) = kit::str_any(a, &["path", "filename"]) {
                    ph = format!("{ph} {p}");
                }
                kit::push_paragraph(&mut text, &ph);
            }
            for im in bl
                .iter()
                .filter(|x| kit::str_field(x, "type") == Some("image"))
            {
                kit::push_paragraph(&mut text, &image_block(im));
            }
            b.push(Message {
                role: Role::User,
                content: text,
                timestamp: ts,
                native_id: kit::str_field(m, "id").map(str::to_string),
                ..Message::default()
            });
            let rest: Vec<Value> = bl
                .iter()
                .filter(|x| kit::str_field(x, "type") != Some("image"))
                .cloned()
                .collect();
            if !rest.is_empty() {
                let mut r = Reply::new(b, raw, ts, None);
                blocks(&mut r, &rest, &place);
                r.finish();
            }
        }
        "ai" | "agent" => {
            let credits = m
                .get("credits")
                .and_then(Value::as_f64)
                .filter(|c| c.is_finite());
            // Codebuff credits are cents.
            let cost = credits.map(|c| c / 100.0);
            let first_new = b.s.messages.len();
            let mut r = Reply::new(b, raw, ts, cost);
            blocks(&mut r, bl, &place);
            let has_text = bl.iter().any(|x| kit::str_field(x, "type") == Some("text"));
            if !content.trim().is_empty() && !has_text {
                r.text(content, false);
            }
            let left = r.finish();
            if left.is_some() {
                // No text or call to carry it: the reply's cost still counts.
                b.push(Message {
                    role: Role::Assistant,
                    timestamp: ts,
                    cost: left,
                    ..Message::default()
                });
            }
            if let Some(id) = kit::str_field(m, "id") {
                if let Some(first) = b.s.messages.get_mut(first_new) {
                    first.native_id = Some(id.to_string());
                }
            }
            if m.get("isComplete") == Some(&Value::Bool(false)) {
                b.warn("the last reply is still being written (isComplete: false): shown as far as it goes");
            }
        }
        "error" => {
            errors.push(content.to_string());
            b.event(format!("error: {content}"), ts);
        }
        other => {
            let first = || format!("{place}: `{other}`");
            b.unparsed(
                "messages",
                "unknown variant",
                first,
                "message",
                &m.to_string(),
                ts,
            );
        }
    }
    for e in m
        .get("validationErrors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let t = kit::str_field(e, "message").unwrap_or_default();
        b.event(format!("validation error: {t}"), ts);
    }
    if let Some(e) = kit::str_field(m, "userError").filter(|e| !e.is_empty()) {
        errors.push(e.to_string());
        b.event(format!("error: {e}"), ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_id_is_the_time_the_chat_began() {
        let t = id_time("2026-03-05T14-02-11.000Z").expect("time");
        assert_eq!(t.to_rfc3339(), "2026-03-05T14:02:11+00:00");
        assert_eq!(id_time("not-a-time"), None);
        assert_eq!(id_time("2026-03-05T14"), None);
    }

    #[test]
    fn tool_errors_are_the_error_message_of_a_json_output() {
        let (out, err) = tool_output(Some(&serde_json::json!([
            {"type": "json", "value": {"errorMessage": "No such file"}}
        ])));
        assert!(err);
        assert_eq!(out, "{\"errorMessage\":\"No such file\"}");
        let (out, err) = tool_output(Some(&serde_json::json!([
            {"type": "json", "value": "plain"}
        ])));
        assert!(!err);
        assert_eq!(out, "plain");
    }
}
