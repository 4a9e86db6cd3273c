//! gp.nvim (Robitx/gp.nvim, the "GPT prompt" Neovim plugin): one Markdown file per chat in
//! its `chat_dir`, `~/.local/share/nvim/gp/chats/<time>.md`.
//!
//! Learnt from gp.nvim's own source, github.com/Robitx/gp.nvim at commit
//! `c37f154b97690c4925fef4e35ffdbf2c844b5f4e` (2025-08-11): `lua/gp/config.lua` (`chat_dir`
//! `stdpath("data") .. "/gp/chats"`, `state_dir` `stdpath("data") .. "/gp/persisted"`,
//! `chat_user_prefix` `💬:`, `chat_assistant_prefix` `{ "🤖:", "[{{agent}}]" }`),
//! `lua/gp/defaults.lua` (`chat_template`, `short_chat_template`), `lua/gp/init.lua`
//! (`new_chat` writes the file, `chat_respond` reads it back into the request, `not_chat`,
//! `refresh_state`), `lua/gp/logger.lua` (`now`, the file name), `lua/gp/dispatcher.lua`
//! (Anthropic thinking streamed as `<think>…</think>`) and `lua/gp/vault.lua`; older layouts
//! from the same repository's history (`c89e986` the first chats, `b54ba6c`, `65d470d` the
//! file names, `870ee9d` the `[agent]` suffix, `08bcfb6` the `🗨:` → `💬:` change,
//! `df9adc2` the end of the `last.md` symlink).
//!
//! **Where.** `stdpath("data")` is `$XDG_DATA_HOME/<app>`, else `~/.local/share/<app>` (macOS
//! too), `<app>` being `$NVIM_APPNAME`, else `nvim` ([`super::codecompanion::nvim_data_dir`]).
//! A `chat_dir` set in the Neovim configuration is given with `--store gp=DIR` (or one chat
//! file); the configuration, which holds the providers' API keys (`openai_api_key`,
//! `providers.*.secret`), is never read.
//!
//! **Files.** `new_chat` names a chat `<YYYY-MM-DD.HH-MM-SS.mmm>.md` (`YYYY-MM-DD_HH-MM-SS.m`
//! before September 2023), the local time it started; the last part is `hrtime()` modulo
//! 1000, a uniqueness stamp, not the clock's milliseconds. The file is the chat buffer,
//! written whole on every change (`TextChanged,InsertLeave silent! write`), replies streamed
//! into it as they come. It starts with a header: `# topic: ?` (replaced by a generated
//! topic after the first reply), `- file: <name>`, optional `- model:` (a name, or the
//! agent's model table as JSON), `- provider:` and `- role:` (a custom system prompt, newlines
//! as `\n`) lines, the template's instructions, and a line starting with `---`; `_` is
//! written `\_` throughout the template. `chat_respond` reads every `[-#] <word>: <value>` line
//! before the `---` as a header field, then each line after it: one starting with `💬:` (or
//! `🗨:`, the default before July 2024) starts a user message with the rest of the line,
//! one starting with `🤖:` an assistant message (the rest of that line, `[<agent>]`, is not
//! sent), any other line continues the current message, and lines before the first prefix
//! are dropped; each message is trimmed.
//!
//! **What each record becomes.** Prompts are user messages, replies assistant messages whose
//! model is the name in their `🤖:[…]` line: gp's agent name (`ChatGPT4o`), or the header's
//! model name when the chat has one, ` & custom role` left out. A reply's leading
//! `<think>…</think>` block is its reasoning. The `- role:` header is the system prompt
//! (context); the rest of the header but the topic (file, model, provider and the template's
//! lines) is one `chat header` context message, and text before the first prompt, which gp
//! never sends, is context too. The topic is the title (`?`, not yet generated, is none:
//! the first prompt then names the chat), the header's model the model the chat was set to,
//! its provider a `provider:` tag. The creation time is the file name's, the update time the
//! file's mtime. gp.nvim keeps no tool calls, no usage, no per-message times and no working
//! directory in a chat, so sessions have none. The empty `💬:` line gp leaves for the next
//! prompt is no message.
//!
//! **Shared.** parrot.nvim, forked from gp.nvim, keeps the same chat file: its store
//! ([`super::parrot`]) is this parser with its own [`Dialect`] (prefixes, header fields and
//! reply line).
//!
//! **Not read.** `last.md` (a symlink to the last chat, older versions), `state_dir`'s
//! `state.json` (the last chat's path and the selected agents), `vault_state.json` (a
//! Copilot bearer token) and `imager_state.json`; the Neovim configuration.

use super::codecompanion::nvim_data_dir;
use super::kit::{self, title_from_text, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session};
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use std::path::Path;

const AGENT: Agent = Agent::Gp;
/// `chat_user_prefix`'s default.
pub const USER_PREFIX: &str = "💬:";
/// The user prefix before gp.nvim 08bcfb6 (July 2024), which `chat_respond` still reads.
pub const OLD_USER_PREFIX: &str = "🗨:";
/// The static part of `chat_assistant_prefix`'s default.
pub const ASSISTANT_PREFIX: &str = "🤖:";
/// The symlink older gp.nvim (and parrot.nvim before July 2024) kept to the last chat opened.
const LAST_LINK: &str = "last.md";
/// Larger chat files are not read.
const MAX_CHAT_BYTES: u64 = 64 << 20;

/// A Markdown chat format of gp.nvim's lineage: a `[-#] <word>: <value>` header ended by a
/// `---` line, then prompts and replies each starting at a line with its prefix. gp.nvim and
/// the plugins forked from it (parrot.nvim) differ only in what is below, so they share this
/// parser: each store gives its dialect.
pub struct Dialect {
    pub agent: Agent,
    /// The plugin's name, for warnings.
    pub name: &'static str,
    /// [`crate::model::Source::format`].
    pub format: &'static str,
    /// Line prefixes that start a user message, the current default first.
    pub user_prefixes: &'static [&'static str],
    /// Line prefixes that start a reply; the rest of that line names the model.
    pub assistant_prefixes: &'static [&'static str],
    /// Header fields the plugin writes (others are named in a warning).
    pub header_fields: &'static [&'static str],
    /// Header fields holding a custom system prompt, newlines escaped as `\n`.
    pub system_fields: &'static [&'static str],
    /// What the plugin appends to the model's name in a reply's prefix line when the chat has
    /// a custom system prompt.
    pub custom_markers: &'static [&'static str],
    /// Whether a reply's prefix line is `[<model> - <provider>]`.
    pub reply_provider: bool,
}

/// gp.nvim's chats.
pub const GP: Dialect = Dialect {
    agent: AGENT,
    name: "gp.nvim",
    format: "gp-nvim-chat-md",
    user_prefixes: &[USER_PREFIX, OLD_USER_PREFIX],
    assistant_prefixes: &[ASSISTANT_PREFIX],
    header_fields: &["topic", "file", "model", "provider", "role"],
    system_fields: &["role"],
    custom_markers: &[" & custom role"],
    reply_provider: false,
};

/// The chat directory gp.nvim uses by default, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    let (data, how) = nvim_data_dir(env);
    vec![Root::new(AGENT, data.join("gp").join("chats"), how)]
}

/// The store of one dialect's chat directories.
pub struct ChatStore {
    base: Base,
    dialect: &'static Dialect,
}

impl ChatStore {
    pub fn new(dialect: &'static Dialect, roots: Vec<Root>) -> ChatStore {
        ChatStore {
            base: Base::new(dialect.agent, roots),
            dialect,
        }
    }
}

/// gp.nvim's store.
pub fn open(roots: Vec<Root>) -> ChatStore {
    ChatStore::new(&GP, roots)
}

fn stem(p: &Path) -> String {
    p.file_stem().map(crate::names::os_id).unwrap_or_default()
}

/// The chats of a directory: its `*.md` files, hidden ones and the `last.md` link left out.
fn chats(dir: &Path) -> Vec<std::path::PathBuf> {
    kit::typed_entries(dir)
        .into_iter()
        .filter(|(p, t)| {
            let name = p.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
            *t == EntryType::File
                && !name.starts_with(b".")
                && name.ends_with(b".md")
                && !(name == LAST_LINK.as_bytes() && p.is_symlink())
        })
        .map(|(p, _)| p)
        .collect()
}

impl Store for ChatStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            if root.path.is_file() {
                out.push(Listed::file(stem(&root.path), root.path.clone(), i));
                continue;
            }
            for path in chats(&root.path) {
                out.push(Listed::file(stem(&path), path, i));
            }
        }
        out
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads file names only.
        true
    }

    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        kit::root_dirs_glance(&self.base.roots)
    }

    fn load(&self, listed: &Listed) -> Session {
        load(self.dialect, &listed.path, &listed.id)
    }
}

/// The local time a chat's file name gives (`2026-03-01.10-00-00.123`, or the older
/// `2023-07-01_10-00-00.5`), in UTC.
pub fn name_time(id: &str) -> Option<DateTime<Utc>> {
    let head = id.get(..19)?;
    let (date, time) = (head.get(..10)?, head.get(11..)?);
    if !matches!(head.as_bytes()[10], b'.' | b'_') {
        return None;
    }
    let t = NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%Y-%m-%d %H-%M-%S").ok()?;
    Local
        .from_local_datetime(&t)
        .earliest()
        .map(|d| d.with_timezone(&Utc))
}

/// Load one gp.nvim chat file.
pub fn load_chat(path: &Path, id: &str) -> Session {
    load(&GP, path, id)
}

/// Load one chat file of `d`'s format.
pub fn load(d: &Dialect, path: &Path, id: &str) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(d.agent, id);
    b.s.source.format = d.format.into();
    b.s.source.paths.push(path.to_path_buf());
    b.s.created_at = name_time(id);
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_CHAT_BYTES => {
            b.warn(format!(
                "{file}: {} bytes, too large to read, skipped",
                m.len()
            ));
            return b.finish();
        }
        Ok(m) => {
            b.s.updated_at = m.modified().ok().map(DateTime::<Utc>::from);
            match kit::read_file(path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    b.warn(format!("{file}: cannot read: {e}"));
                    return b.finish();
                }
            }
        }
        Err(e) => {
            b.warn(format!("{file}: cannot read: {e}"));
            return b.finish();
        }
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            b.warn(format!(
                "{file}: not valid UTF-8 (byte {}); invalid bytes are shown as U+FFFD",
                e.utf8_error().valid_up_to()
            ));
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    parse(d, &mut b, &text, &file);
    b.finish()
}

/// A `[-#] <word>: <value>` header line, as `chat_respond` matches it.
fn header_field(line: &str) -> Option<(&str, &str)> {
    let rest = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("# "))?;
    let (key, value) = rest.split_once(": ")?;
    (!key.is_empty() && key.bytes().all(|c| c.is_ascii_alphanumeric())).then_some((key, value))
}

/// The header's model: its name, or the `model` of the JSON table gp writes for an agent
/// whose model has parameters (underscores unescaped first, as `chat_respond` does).
fn header_model(value: &str) -> Option<String> {
    let v = value.trim();
    if v.contains('{') && v.contains('}') {
        let json: serde_json::Value = serde_json::from_str(&v.replace("\\_", "_")).ok()?;
        return kit::str_field(&json, "model").map(str::to_string);
    }
    (!v.is_empty()).then(|| v.replace("\\_", "_"))
}

/// The model and provider named in a reply's prefix line after its prefix: gp's
/// `[ChatGPT4o]` gives `ChatGPT4o` (` & custom role`, which gp adds for a chat with a
/// `- role:` header, left out); parrot's `[gpt-4o & custom system prompt - openai]` gives
/// `gpt-4o` and `openai`.
fn reply_agent(d: &Dialect, rest: &str) -> (Option<String>, Option<String>) {
    let r = rest.trim();
    let name = r
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(r);
    let (name, provider) = match name.rsplit_once(" - ") {
        Some((n, p)) if d.reply_provider && !p.trim().is_empty() => (n, Some(p.trim())),
        _ => (name, None),
    };
    let name = d
        .custom_markers
        .iter()
        .find_map(|m| name.strip_suffix(m))
        .unwrap_or(name)
        .trim();
    (
        (!name.is_empty()).then(|| name.to_string()),
        provider.map(str::to_string),
    )
}

/// A reply's leading `<think>…</think>` block as its reasoning, and the rest.
fn split_thinking(text: &str) -> (Option<String>, String) {
    let Some(inner) = text.strip_prefix("<think>") else {
        return (None, text.to_string());
    };
    match inner.split_once("</think>") {
        Some((t, rest)) => (Some(t.trim().to_string()), rest.trim().to_string()),
        // Still thinking, stopped or cut: all of it is reasoning.
        None => (Some(inner.trim().to_string()), String::new()),
    }
}

#[derive(PartialEq)]
enum Block {
    /// Text after the header before any prefix: gp never sends it.
    Before,
    User,
    Assistant(Option<String>),
}

/// Parse a gp.nvim chat's text into `b`, as `chat_respond` reads it.
pub fn parse_chat(b: &mut SessionBuilder, text: &str, file: &str) {
    parse(&GP, b, text, file)
}

/// Parse a chat's text of `d`'s format into `b`, as the plugin reads it back to answer.
pub fn parse(d: &Dialect, b: &mut SessionBuilder, text: &str, file: &str) {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let Some(end) = lines.iter().position(|l| l.starts_with("---")) else {
        b.warn(format!(
            "{file}: no `---` line ends the chat header ({} answers no such file); the text is shown as context",
            d.name
        ));
        if let Some(t) = lines.iter().find_map(|l| l.strip_prefix("# topic: ")) {
            topic(b, t);
        }
        if !text.trim().is_empty() {
            b.context("unparsed file", text.trim_end().to_string(), None);
        }
        return;
    };
    header(d, b, &lines[..end]);
    body(d, b, &lines[end + 1..], file);
}

fn topic(b: &mut SessionBuilder, t: &str) {
    let t = t.trim();
    if t != "?" {
        b.s.title = title_from_text(t);
    }
}

fn header(d: &Dialect, b: &mut SessionBuilder, lines: &[&str]) {
    let mut kept: Vec<&str> = Vec::new();
    let mut role = None;
    let mut unknown = Vec::new();
    for &line in lines {
        let Some((key, value)) = header_field(line) else {
            kept.push(line);
            continue;
        };
        match key {
            "topic" => topic(b, value),
            _ if d.system_fields.contains(&key) => role = Some(value),
            _ => {
                match key {
                    "model" => b.s.set_model = header_model(value),
                    "provider" if !value.trim().is_empty() => {
                        b.s.tags.retain(|t| !t.starts_with("provider:"));
                        b.s.tags.push(format!("provider:{}", value.trim()));
                    }
                    _ if !d.header_fields.contains(&key) => unknown.push(key.to_string()),
                    _ => {}
                }
                kept.push(line);
            }
        }
    }
    if !unknown.is_empty() {
        b.warn(format!(
            "chat header fields sessfs does not know (shown in the chat header): {}",
            unknown.join(", ")
        ));
    }
    if let Some(r) = role.filter(|r| !r.trim().is_empty()) {
        // `chat_respond` turns the escaped newlines back and sends the rest as it is.
        b.context(
            "system prompt",
            r.replace("\\n", "\n").trim().to_string(),
            None,
        );
    }
    let kept = kept.join("\n");
    let kept = kept.trim_matches('\n');
    if !kept.trim().is_empty() {
        b.context("chat header", kept.to_string(), None);
    }
}

fn body(d: &Dialect, b: &mut SessionBuilder, lines: &[&str], file: &str) {
    let mut block = Block::Before;
    let mut content = String::new();
    let mut prefixes = 0usize;
    for &line in lines {
        let user = d.user_prefixes.iter().find_map(|p| line.strip_prefix(p));
        let start = if let Some(rest) = user {
            Some((Block::User, rest))
        } else {
            d.assistant_prefixes
                .iter()
                .find_map(|p| line.strip_prefix(p))
                .map(|rest| {
                    let (model, provider) = reply_agent(d, rest);
                    if let Some(p) = provider {
                        let tag = format!("provider:{p}");
                        if !b.s.tags.contains(&tag) {
                            b.s.tags.push(tag);
                        }
                    }
                    (Block::Assistant(model), "")
                })
        };
        match start {
            Some((next, first)) => {
                prefixes += 1;
                flush(b, std::mem::replace(&mut block, next), &content);
                content = first.to_string();
            }
            None => {
                content.push('\n');
                content.push_str(line);
            }
        }
    }
    let ends_in_reply = matches!(block, Block::Assistant(_));
    flush(b, block, &content);
    if prefixes == 0 && !lines.iter().all(|l| l.trim().is_empty()) {
        let all: Vec<String> = d
            .user_prefixes
            .iter()
            .chain(d.assistant_prefixes)
            .map(|p| format!("`{p}`"))
            .collect();
        let all = match all.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        b.warn(format!(
            "{file}: no {all} line (prefixes set in the Neovim configuration are not known); the text is shown as context"
        ));
    } else if ends_in_reply {
        b.warn(format!(
            "{file}: ends inside a reply (still being written, stopped or cut short)"
        ));
    }
}

fn flush(b: &mut SessionBuilder, block: Block, content: &str) {
    let text = content.trim();
    match block {
        Block::Before => {
            if !text.is_empty() {
                b.context("text before the first prompt", text.to_string(), None);
            }
        }
        // The empty prompt line gp leaves for the next question is no message.
        Block::User if text.is_empty() => {}
        Block::User => b.push(Message {
            role: Role::User,
            content: text.to_string(),
            ..Message::default()
        }),
        Block::Assistant(agent) => {
            let (thinking, content) = split_thinking(text);
            b.push(Message {
                role: Role::Assistant,
                content,
                thinking,
                model: agent,
                ..Message::default()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Session {
        let mut b = SessionBuilder::new(AGENT, "2026-03-01.10-00-00.123");
        parse_chat(&mut b, text, "x.md");
        b.finish()
    }

    #[test]
    fn both_file_name_forms_give_the_local_start_time() {
        let want = Local
            .with_ymd_and_hms(2026, 3, 1, 10, 0, 0)
            .earliest()
            .map(|d| d.with_timezone(&Utc));
        assert_eq!(name_time("2026-03-01.10-00-00.123"), want);
        assert_eq!(name_time("2026-03-01_10-00-00.5"), want);
        assert_eq!(name_time("2026-03-01 10-00-00"), None);
        assert_eq!(name_time("notes"), None);
        assert_eq!(name_time("2026-13-01.10-00-00.123"), None);
    }

    #[test]
    fn header_fields_prefixes_and_thinking() {
        let s = parse(concat!(
            "# topic: ?\n\n- file: 2026-03-01.10-00-00.123.md\n",
            "- model: {\"model\":\"gpt-4o\",\"top\\_p\":1}\n- provider: openai\n",
            "- role: Be brief.\\nAlways.\n---\n\n🗨: old prompt\n\n🤖:[gpt-4o & custom role]\n",
            "<think>hmm</think>\n\nanswer\n\n💬:\n",
        ));
        assert_eq!(s.title.as_deref(), Some("old prompt"));
        assert_eq!(s.set_model.as_deref(), Some("gpt-4o"));
        assert_eq!(s.tags, ["provider:openai"]);
        let m = &s.messages;
        assert_eq!(m[0].content, "Be brief.\nAlways.");
        assert_eq!(m[0].label.as_deref(), Some("system prompt"));
        assert_eq!(m[2].content, "old prompt");
        assert_eq!(m[3].thinking.as_deref(), Some("hmm"));
        assert_eq!(m[3].content, "answer");
        assert_eq!(m[3].model.as_deref(), Some("gpt-4o"));
        assert_eq!(m.len(), 4);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn a_header_without_its_end_is_a_warning_and_context() {
        let s = parse("# topic: cut\n- file: x.md\n- mod");
        assert_eq!(s.title.as_deref(), Some("cut"));
        assert!(s.warnings[0].contains("no `---`"), "{:?}", s.warnings);
        assert_eq!(s.messages[0].content, "# topic: cut\n- file: x.md\n- mod");
    }
}
