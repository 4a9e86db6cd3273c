//! gptme: one directory per conversation under `~/.local/share/gptme/logs/`.
//!
//! Learnt from gptme's own source, github.com/gptme/gptme (formerly ErikBjare/gptme) at
//! commit `d27f98d3a55451491d00bbd20035d328e34219b1`: the log directory `gptme/dirs.py`
//! (`get_logs_dir`, `get_data_dir`), the files of a conversation
//! `gptme/logmanager/manager.py` (`LogManager.__init__`, `write`, `_gen_read_jsonl`), a
//! message `gptme/message.py` (`Message.to_dict`, `MessageMetadata`, `_migrate_metadata`),
//! the per-conversation settings `gptme/config/chat.py` (`ChatConfig`), tool calls
//! `gptme/tools/base.py` (`ToolUse.iter_from_content`, `toolcall_re`, `_from_codeblock`)
//! and the tools' `block_types`, subagents `gptme/tools/subagent/execution.py`.
//!
//! **Where.** `$GPTME_LOGS_HOME`, else `$XDG_DATA_HOME/gptme/logs`, else
//! `~/.local/share/gptme/logs` (macOS `~/Library/Application Support/gptme/logs`). Each
//! conversation is a directory named by its id: `conversation.jsonl` (the main branch),
//! `branches/<name>.jsonl` (every other branch, whole), `views/<name>.jsonl` (compacted
//! views of the main branch) and `config.toml`. Of `config.toml` only the `[chat]` table's
//! `name`, `model` and `workspace` are read: its `[env]` table holds the conversation's
//! environment variables (API keys among them) and is never read. `events.jsonl` and its
//! checkpoints repeat the messages as an edit history and are not read; `workspace/`,
//! `attachments/` and `.lock` are not sessions.
//!
//! **Messages.** One JSON object a line: `role` (`system`, `user`, `assistant`),
//! `content` (markdown), `timestamp` (ISO 8601, local time when it has no offset),
//! `files`, `hide`, `pinned`, `call_id`, `metadata`. gptme has no structured tool calls in
//! markdown mode: the assistant writes fenced code blocks whose language is a tool's block
//! type (`shell`, `ipython`, `save <path>`, `patch <path>`, …), gptme runs them and logs
//! each result as a `system` message. Such blocks are the reply's tool calls, and the
//! `system` messages after the reply are their results in order; in tool mode a call is
//! an `@<tool>(<call id>): {json}` line and its result carries the `call_id`. A `system`
//! message no call is waiting for (the system prompt, notices) is context, as is a
//! message gptme hides (`hide`).
//!
//! **Usage.** Each assistant message's `metadata` holds its API call's `usage`
//! (`input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_creation_tokens`; older
//! logs keep them flat beside `model`) and `cost`: counted once per message of the main
//! branch; branch and view copies of it are not counted again.
//!
//! **Links.** A subagent is a conversation of its own (`subagent-<id>-<4 chars>`), with no
//! parent recorded on disk: it is listed on its own, tagged `subagent`.

use super::jsonl;
use super::kit::{self, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    Agent, Branch, Message, MessageKind, Role, Session, Source, TokenUsage, ToolCall,
};
use crate::names;
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The main branch of a conversation directory.
const MAIN: &str = "conversation.jsonl";
/// Largest `config.toml` read.
const MAX_CONFIG: u64 = 1 << 20;

/// Code block languages gptme runs as tools (the tools' `block_types`; `save`, `append`
/// and `patch` take a path after the name).
const TOOL_LANGS: &[&str] = &[
    "shell",
    "ipython",
    "py",
    "save",
    "append",
    "patch",
    "patch_many",
    "patch_anchored",
    "hashline_edit",
    "view_anchored",
    "read",
    "tmux",
    "gh",
    "morph",
    "mcp",
    "todo",
    "progress",
    "complete",
    "choice",
    "clarify",
    "elicit",
    "form",
    "restart",
    "vent",
];

/// `$GPTME_LOGS_HOME`, else the data directory's `logs`.
pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        Agent::Gptme,
        &kit::Places {
            env: &[("GPTME_LOGS_HOME", ""), ("XDG_DATA_HOME", "gptme/logs")],
            defaults: &[
                ".local/share/gptme/logs",
                "Library/Application Support/gptme/logs",
            ],
            spec: &[],
        },
    )
}

pub struct GptmeStore {
    base: Base,
}

impl GptmeStore {
    pub fn new(roots: Vec<Root>) -> GptmeStore {
        GptmeStore {
            base: Base::new(Agent::Gptme, roots),
        }
    }
}

/// The `*.jsonl` files of `dir`, sorted.
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    kit::typed_entries(dir)
        .into_iter()
        .filter(|(p, t)| *t == kit::EntryType::File && kit::file_name(p).ends_with(".jsonl"))
        .map(|(p, _)| p)
        .collect()
}

impl Store for GptmeStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            // A root may be one conversation directory itself.
            let dirs = if root.path.join(MAIN).is_file() {
                vec![root.path.clone()]
            } else {
                kit::subdirs(&root.path)
            };
            for dir in dirs {
                let main = dir.join(MAIN);
                let branches = jsonl_files(&dir.join("branches"));
                if !main.is_file() && branches.is_empty() {
                    continue;
                }
                let id = names::os_id(dir.file_name().unwrap_or_default());
                let mut sources = vec![main.clone(), dir.join("config.toml")];
                sources.extend(branches);
                sources.extend(jsonl_files(&dir.join("views")));
                out.push(Listed {
                    id,
                    path: main,
                    sources,
                    key: None,
                    root: i,
                });
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        let dir = listed.path.parent().unwrap_or(Path::new("."));
        load(dir, &listed.id)
    }

    /// The listing reads each root (where conversations, or a root's own
    /// `conversation.jsonl`, appear), every conversation directory (its
    /// `conversation.jsonl`, `branches/` and `views/` appearing) and its `branches/` and
    /// `views/` (their `*.jsonl`); the files it found are the sessions' sources. A root
    /// that is not a directory is stamped as a file; one gone since it was opened leaves
    /// the store without a glance.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                if !root.path.exists() {
                    return None;
                }
                g.files.push(root.path.clone());
                continue;
            }
            let dirs = if root.path.join(MAIN).is_file() {
                vec![root.path.clone()]
            } else {
                g.dirs.push(root.path.clone());
                kit::subdirs(&root.path)
            };
            for dir in dirs {
                g.dirs.extend(
                    [dir.join("branches"), dir.join("views")]
                        .into_iter()
                        .filter(|d| d.is_dir()),
                );
                g.dirs.push(dir);
            }
        }
        Some(g)
    }
}

// ---------------------------------------------------------------------------------------
// config.toml

/// What is read of `config.toml`: the `[chat]` table's `name`, `model`, `workspace`.
#[derive(Default, Debug, PartialEq)]
struct Chat {
    name: Option<String>,
    model: Option<String>,
    workspace: Option<String>,
}

/// The three `[chat]` keys, each a one-line TOML string; every other table (`[env]`
/// above all) is skipped line by line without being looked at.
fn chat_config(text: &str) -> Chat {
    let mut chat = Chat::default();
    let mut in_chat = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_chat = l.trim_end_matches(|c: char| c.is_whitespace()) == "[chat]"
                || l.starts_with("[chat]");
            continue;
        }
        if !in_chat {
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            continue;
        };
        let Some(v) = toml_string(v.trim()) else {
            continue;
        };
        match k.trim().trim_matches('"') {
            "name" => chat.name = Some(v),
            "model" => chat.model = Some(v),
            "workspace" => chat.workspace = Some(v),
            _ => {}
        }
    }
    chat
}

/// A basic (`"…"`, escapes) or literal (`'…'`) TOML string; `None` for anything else.
fn toml_string(v: &str) -> Option<String> {
    if let Some(rest) = v.strip_prefix('\'') {
        return rest.split_once('\'').map(|(s, _)| s.to_string());
    }
    let rest = v.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                'U' => {
                    let hex: String = chars.by_ref().take(8).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// Loading

/// One line of a log file, as read.
struct Rec {
    /// Its native id (`line N` of the file it was first read from).
    id: String,
    value: Value,
    /// What decides two branches share it: role, content and time as stored.
    key: (String, String, String),
}

/// Read a log file's messages; unreadable lines go to `b` (shown and counted).
fn read_log(path: &Path, prefix: &str, b: &mut SessionBuilder) -> Vec<Rec> {
    let mut out = Vec::new();
    let scanned = jsonl::read_records(path, |pos, bytes| {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let s = |k: &str| kit::str_field(&value, k).unwrap_or_default().to_string();
        let key = (s("role"), s("content"), s("timestamp"));
        out.push(Rec {
            id: format!("{prefix}{}", pos.id()),
            value,
            key,
        });
        Ok(())
    });
    if prefix.is_empty() {
        scanned.into_session(&mut b.s);
    } else {
        // A branch's unread lines are named, not shown a second time in the main files.
        b.s.warnings.extend(scanned.warnings.iter().cloned());
        if !scanned.unparsed.is_empty() {
            b.s.warnings.push(format!(
                "{}: {} lines could not be read",
                path.display(),
                scanned.unparsed.len()
            ));
        }
    }
    out
}

fn load(dir: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Gptme, id);
    let main = dir.join(MAIN);
    b.s.source = Source {
        paths: vec![main.clone()],
        format: "gptme-jsonl".into(),
        format_version: None,
    };
    let chat = match std::fs::metadata(dir.join("config.toml")) {
        Ok(m) if m.len() <= MAX_CONFIG => kit::read_file(&dir.join("config.toml"))
            .map(|t| chat_config(&String::from_utf8_lossy(&t)))
            .unwrap_or_default(),
        _ => Chat::default(),
    };
    b.s.title = chat.name.clone().filter(|n| !n.trim().is_empty());
    b.s.cwd = chat.workspace.clone().filter(|w| !w.is_empty());
    if id.starts_with("subagent-") {
        b.s.tags.push("subagent".into());
    }
    let recs = if main.is_file() {
        read_log(&main, "", &mut b)
    } else {
        Vec::new()
    };
    let mut conv = Conv::new(chat.model.clone());
    for r in &recs {
        conv.message(&mut b, r);
    }
    let mut taken = HashSet::new();
    for (sub, kind) in [("branches", "branch"), ("views", "view")] {
        for f in jsonl_files(&dir.join(sub)) {
            let stem = kit::file_name(&f).trim_end_matches(".jsonl").to_string();
            b.s.source.paths.push(f.clone());
            let mut bb = SessionBuilder::new(Agent::Gptme, id);
            let prefix = format!("{sub}/{stem}:");
            let mut brecs = read_log(&f, &prefix, &mut bb);
            // The shared prefix keeps the main branch's ids.
            let shared = brecs
                .iter()
                .zip(&recs)
                .take_while(|(x, y)| x.key == y.key)
                .count();
            for (x, y) in brecs.iter_mut().zip(&recs).take(shared) {
                x.id = y.id.clone();
            }
            if shared == brecs.len() && shared == recs.len() && kind == "branch" {
                // The main branch written again under its own name: nothing of its own.
                continue;
            }
            let mut bc = Conv::new(chat.model.clone());
            for r in &brecs {
                bc.message(&mut bb, r);
            }
            let name = kit::unique_name(&mut taken, &format!("{kind}-{}", names::escape(&stem)));
            let fork_point = shared.checked_sub(1).map(|i| recs[i].id.clone());
            let leaf = brecs.last().map(|r| r.id.clone());
            let sub_s = bb.finish();
            b.s.warnings.extend(sub_s.warnings);
            b.s.branches.push(Branch {
                name,
                fork_point,
                leaf,
                messages: sub_s.messages,
            });
        }
    }
    b.finish()
}

/// A message's time: ISO 8601 with an offset, or gptme's naive local time.
fn time(s: &str) -> Option<DateTime<Utc>> {
    if let Some(t) = kit::parse_rfc3339(s) {
        return Some(t);
    }
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())?;
    Local
        .from_local_datetime(&naive)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
        .or_else(|| Some(naive.and_utc()))
}

/// A pending tool call of the last reply: its id and tool.
struct Pending {
    id: String,
    tool: String,
}

/// The conversation so far: the calls still waiting for a result.
struct Conv {
    model: Option<String>,
    pending: std::collections::VecDeque<Pending>,
    seen_prompt: bool,
}

impl Conv {
    fn new(model: Option<String>) -> Conv {
        Conv {
            model,
            pending: Default::default(),
            seen_prompt: false,
        }
    }

    fn message(&mut self, b: &mut SessionBuilder, r: &Rec) {
        let v = &r.value;
        let ts = kit::str_field(v, "timestamp").and_then(time);
        let Some(content) = kit::str_field(v, "content") else {
            let first = || r.id.clone();
            b.unparsed(
                "messages",
                "no content",
                first,
                "message",
                &v.to_string(),
                ts,
            );
            return;
        };
        let mut content = content.to_string();
        if let Some(files) = v.get("files").and_then(Value::as_array) {
            for f in files.iter().filter_map(Value::as_str) {
                content.push_str(&format!("\n[file: {f}]"));
            }
        }
        let hidden = v.get("hide").and_then(Value::as_bool) == Some(true);
        let meta = v.get("metadata").filter(|m| m.is_object());
        match kit::str_field(v, "role").unwrap_or_default() {
            "user" => {
                self.pending.clear();
                self.seen_prompt = true;
                let mut m = Message {
                    role: Role::User,
                    content,
                    timestamp: ts,
                    native_id: Some(r.id.clone()),
                    ..Message::default()
                };
                if hidden {
                    hide(&mut m, "hidden message");
                }
                b.push(m);
            }
            "assistant" => {
                let calls = tool_calls(&content, &r.id);
                self.pending = calls
                    .iter()
                    .map(|c| Pending {
                        id: c.tool_call_id.clone(),
                        tool: c.tool_name.clone(),
                    })
                    .collect();
                let model = meta
                    .and_then(|m| kit::str_field(m, "model"))
                    .map(str::to_string)
                    .or_else(|| self.model.clone());
                let mut m = Message {
                    role: Role::Assistant,
                    content,
                    timestamp: ts,
                    tool_calls: calls,
                    native_id: Some(r.id.clone()),
                    model,
                    ..Message::default()
                };
                if let Some(meta) = meta {
                    m.token_usage = usage(meta);
                    m.cost = meta
                        .get("cost")
                        .and_then(Value::as_f64)
                        .filter(|c| c.is_finite() && *c >= 0.0);
                }
                if hidden && m.tool_calls.is_empty() {
                    hide(&mut m, "hidden message");
                }
                b.push(m);
            }
            "system" => {
                let call_id = kit::str_field(v, "call_id").filter(|c| !c.is_empty());
                let tool = meta.and_then(|m| kit::str_field(m, "tool"));
                let pending = match call_id {
                    Some(id) => {
                        let at = self.pending.iter().position(|p| p.id == id);
                        Some(at.and_then(|i| self.pending.remove(i)).unwrap_or(Pending {
                            id: id.to_string(),
                            tool: tool.unwrap_or_default().to_string(),
                        }))
                    }
                    None => self.pending.pop_front(),
                };
                match pending {
                    Some(p) => {
                        let name = tool.unwrap_or(&p.tool).to_string();
                        b.tool_result(&p.id, Some(&name), content, false, ts);
                    }
                    None => {
                        let label = if !self.seen_prompt {
                            "system prompt"
                        } else if hidden {
                            "hidden message"
                        } else {
                            "system message"
                        };
                        b.context(label, content, ts);
                    }
                }
            }
            other => {
                let first = || format!("{}: `{other}`", r.id);
                b.unparsed(
                    "messages",
                    "unknown role",
                    first,
                    "message",
                    &v.to_string(),
                    ts,
                );
            }
        }
    }
}

/// A message gptme does not show: context, not conversation.
fn hide(m: &mut Message, label: &str) {
    m.kind = MessageKind::Context;
    m.role = Role::System;
    m.label = Some(label.into());
}

/// `metadata.usage`, or the older flat token fields beside `model`.
fn usage(meta: &Value) -> Option<TokenUsage> {
    let u = meta.get("usage").filter(|u| u.is_object()).unwrap_or(meta);
    let t = TokenUsage {
        input_tokens: kit::u64_field(u, "input_tokens"),
        output_tokens: kit::u64_field(u, "output_tokens"),
        cached_tokens: kit::u64_field(u, "cache_read_tokens"),
        cache_write_tokens: kit::u64_field(u, "cache_creation_tokens"),
        ..TokenUsage::default()
    };
    (!t.is_zero()).then_some(t)
}

/// The tool calls of a reply, in order: fenced code blocks whose language is a tool's
/// block type, then `@tool(call id): {json}` lines outside code blocks.
fn tool_calls(content: &str, native: &str) -> Vec<ToolCall> {
    let mut out = Vec::new();
    let mut outside = String::new();
    let mut lines = content.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        let fence_len = t.chars().take_while(|c| *c == '`').count();
        if fence_len < 3 {
            outside.push_str(line);
            outside.push('\n');
            continue;
        }
        let fence = &t[..fence_len];
        let lang = t[fence_len..].trim();
        let mut body: Vec<&str> = Vec::new();
        let mut depth = 0usize;
        let mut closed = false;
        for l in lines.by_ref() {
            let lt = l.trim();
            if lt.starts_with(fence) && lt.trim_start_matches('`').is_empty() {
                if depth == 0 {
                    closed = true;
                    break;
                }
                depth -= 1;
            } else if lt.starts_with(fence) && lt.len() > fence.len() {
                // A nested block with a language opens inside this one.
                depth += 1;
            }
            body.push(l);
        }
        let word = lang.split_whitespace().next().unwrap_or("");
        if closed && TOOL_LANGS.contains(&word) {
            let args: Vec<&str> = lang.split_whitespace().skip(1).collect();
            out.push(ToolCall {
                tool_call_id: format!("{native}#{}", out.len() + 1),
                tool_name: if word == "py" { "ipython" } else { word }.to_string(),
                input: serde_json::json!({ "args": args, "code": body.join("\n") }),
                ..ToolCall::default()
            });
        }
    }
    for line in outside.lines() {
        let Some(rest) = line.strip_prefix('@') else {
            continue;
        };
        let Some((name, rest)) = rest.split_once('(') else {
            continue;
        };
        let Some((id, rest)) = rest.split_once("):") else {
            continue;
        };
        let json = rest.trim();
        let ok_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
        if !ok_name || id.is_empty() || !json.starts_with('{') {
            continue;
        }
        let input = serde_json::from_str::<Value>(json).unwrap_or(Value::String(json.into()));
        out.push(ToolCall {
            tool_call_id: id.to_string(),
            tool_name: name.to_string(),
            input,
            ..ToolCall::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_chat_table_of_config_toml_is_read() {
        let text = "[chat]\nname = \"My \\\"chat\\\"\"\nmodel = 'openai/gpt-4o'\n\
                    workspace = \"/w\"\n\n[env]\nname = \"not this\"\nOPENAI_API_KEY = \"sk-x\"\n";
        assert_eq!(
            chat_config(text),
            Chat {
                name: Some("My \"chat\"".into()),
                model: Some("openai/gpt-4o".into()),
                workspace: Some("/w".into()),
            }
        );
    }

    #[test]
    fn tool_blocks_and_tool_lines_become_calls_other_blocks_do_not() {
        let c = "Let me look.\n```shell\nls -la\n```\n```python\nprint(1)\n```\n\
                 ```save src/a.py\nx = 1\n```\n@read(call_9): {\"path\": \"b\"}\n";
        let calls = tool_calls(c, "line 3");
        let got: Vec<(&str, &str)> = calls
            .iter()
            .map(|c| (c.tool_call_id.as_str(), c.tool_name.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("line 3#1", "shell"),
                ("line 3#2", "save"),
                ("call_9", "read")
            ]
        );
        assert_eq!(calls[0].input["code"], "ls -la");
        assert_eq!(calls[1].input["args"][0], "src/a.py");
    }

    #[test]
    fn flat_and_nested_usage_read_alike() {
        let nested = serde_json::json!({"usage": {"input_tokens": 5, "output_tokens": 2,
            "cache_read_tokens": 7}});
        let flat = serde_json::json!({"model": "m", "input_tokens": 5, "output_tokens": 2,
            "cache_read_tokens": 7});
        assert_eq!(usage(&nested), usage(&flat));
        assert_eq!(usage(&nested).map(|u| u.cached_tokens), Some(7));
    }
}
