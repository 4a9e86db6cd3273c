//! ChatGPT.nvim (a Neovim chat plugin for OpenAI-compatible APIs): the chat sessions it keeps
//! under Neovim's state directory, one JSON document per session in `chatgpt/`, rewritten
//! whole each time a message is added, renamed or deleted.
//!
//! Read from ChatGPT.nvim's own source, jackMort/ChatGPT.nvim
//! `5c54a7e9de67e2f8f8c3ed60f872f4a34a3e65ff` (2026-01-13), and the older shapes from
//! `e37527f` (2022-12, the first saved sessions), `a4f32a5` (2023-01, `updated_at` and file
//! names by the clock), `a625e69` (2023-05, system messages), `4ac97f7` (2023-06, streamed
//! replies) and `94e04b7` (2025-12, `@` references):
//!
//! - `lua/chatgpt/flows/chat/session.lua` (`Session.get_dir`, `init`, `save`, `load`,
//!   `add_item`, `list_sessions`): the directory is `stdpath("state") .. "/chatgpt"`, Neovim's
//!   state directory being `$XDG_STATE_HOME/<app>` else `~/.local/state/<app>` (macOS too),
//!   `<app>` being `$NVIM_APPNAME` else `nvim`; a new session is `<os.time()>.json` (Unix
//!   seconds at its creation; `<YYYY-MM-DD_HH:MM:SS>.json` in local time before `a4f32a5`),
//!   written with `vim.json.encode` of `{name, updated_at, settings, conversation}`
//!   (`updated_at` missing before `a4f32a5`); `updated_at` is the local time of the last added
//!   or deleted message (`%Y-%m-%d_%H:%M:%S`, no zone); `name` starts equal to it and becomes
//!   the first prompt's text, or the act's name for an "awesome prompt" session, or what the
//!   user renames it to; `settings` is created empty and nothing fills it;
//! - `lua/chatgpt/flows/chat/base.lua` (`QUESTION, ANSWER, SYSTEM = 1, 2, 3`, `add`,
//!   `addQuestionWithContext`, `addAnswerPartial`, `set_system_message`, `toMessages`): an
//!   item of `conversation` is `{type, text, usage}`, `type` 1 a prompt (or a message the
//!   user drafted in the user role), 2 a reply (or a message the user drafted in the
//!   assistant role), 3 the system message (kept first, replaced in place); a prompt naming
//!   `@` references (since `94e04b7`) also holds `api_text`, the text sent: the referenced
//!   code (`lua/chatgpt/context/init.lua`, `expand_refs`), `\n\n---\n\n`, then `text`;
//! - `usage` is the API's `{prompt_tokens, completion_tokens, total_tokens}` for replies of
//!   the non-streamed API (before `4ac97f7`), and an empty table for every streamed reply,
//!   prompt and system message since; the model is the configuration's `openai_params`, never
//!   saved in a session; an API error is saved as a reply whose text is the error (`api.lua`),
//!   with no flag; there are no tool calls, reasoning, cwd or per-message times;
//! - `lua/chatgpt/api.lua`, `config.lua`: the API key comes from `$OPENAI_API_KEY` or the
//!   configuration's `api_key_cmd`; the plugin's log is plenary's, outside this directory.
//!
//! Design decisions and why:
//! - **Roots** follow `stdpath("state")` (see [`super::codecompanion::nvim_state_dir`]); the
//!   Neovim configuration (where an `api_key_cmd` lives) and the environment's API key are
//!   never read. Only `*.json` files of the directory itself are listed, hidden ones left out
//!   (ChatGPT.nvim writes nothing else there).
//! - **One file is one session**: the id is the file name without `.json`; the title is
//!   `name`, but a `name` that is still a date (no prompt yet) gives way to the first prompt.
//! - **Each file is read in one read**, field by field when it is cut (the reader the Amp and
//!   Nanocoder stores use): every item before the cut is kept, the rest is shown raw and a
//!   warning names the file; a file that is no JSON object is shown raw with a warning.
//! - **What each item becomes**: type 1 a prompt, its referenced code (`api_text` before
//!   `text`) as context just before it; type 2 a reply with its usage when it has one; type 3
//!   the system message as context; a non-empty `settings` is shown as context (its `model`,
//!   if any, as the session's model). Another type, an item that is no object, and a field
//!   sessfs does not know cost a warning.
//! - **Times**: the creation time is the file name (Unix seconds, or the old name's local
//!   time); the update time is `updated_at`, read as this machine's local time, else the
//!   file's modification time.

use super::amp::doc_or_raw;
use super::kit::{self, title_from_text, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, TokenUsage};
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Larger session files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// The sessions directory under Neovim's state directory.
const SESSIONS_DIR: &str = "chatgpt";
/// ChatGPT.nvim's local times: `updated_at`, a new session's name, the oldest file names.
const LOCAL_TIME: &str = "%Y-%m-%d_%H:%M:%S";
/// Fields of the document the store knows.
const KNOWN_FIELDS: &[&str] = &["name", "updated_at", "settings", "conversation"];
/// Fields of a conversation item the store knows.
const KNOWN_ITEM_FIELDS: &[&str] = &["type", "text", "usage", "api_text"];
/// Fields of a reply's `usage` the store knows (`total_tokens` is their sum).
const KNOWN_USAGE_FIELDS: &[&str] = &["prompt_tokens", "completion_tokens", "total_tokens"];
/// What separates the referenced code from the prompt in `api_text`.
const REFS_SEPARATOR: &str = "\n\n---\n\n";

/// The sessions directory ChatGPT.nvim uses, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    let (state, how) = super::codecompanion::nvim_state_dir(env);
    vec![Root::new(Agent::Chatgptnvim, state.join(SESSIONS_DIR), how)]
}

pub struct ChatgptnvimStore {
    base: Base,
}

impl ChatgptnvimStore {
    pub fn new(roots: Vec<Root>) -> ChatgptnvimStore {
        ChatgptnvimStore {
            base: Base::new(Agent::Chatgptnvim, roots),
        }
    }
}

/// The session files of a root: `<root>/*.json`, hidden files left out, or the root itself
/// when it is one file.
pub fn session_files(root: &Path) -> Vec<PathBuf> {
    if root.is_file() {
        return vec![root.to_path_buf()];
    }
    kit::typed_entries(root)
        .into_iter()
        .filter(|(p, t)| {
            let name = p.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
            *t == EntryType::File && !name.starts_with(b".") && name.ends_with(b".json")
        })
        .map(|(p, _)| p)
        .collect()
}

impl Store for ChatgptnvimStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        kit::listed_by_stem(&self.base.roots, session_files)
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads file names only; rewriting a session never adds one.
        true
    }

    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        kit::root_and_sessions_glance(&self.base.roots)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_session(&listed.path, &listed.id)
    }
}

/// A ChatGPT.nvim local time (`2026-03-01_10:30:00`), read as this machine's local time.
pub fn local_time(s: &str) -> Option<DateTime<Utc>> {
    let t = NaiveDateTime::parse_from_str(s.trim(), LOCAL_TIME).ok()?;
    Local
        .from_local_datetime(&t)
        .earliest()
        .map(|d| d.with_timezone(&Utc))
}

/// The creation time a file name gives: Unix seconds (`os.time()`), or the local time the
/// oldest versions named files by.
pub fn name_time(id: &str) -> Option<DateTime<Utc>> {
    if !id.is_empty() && id.bytes().all(|c| c.is_ascii_digit()) {
        return id
            .parse::<i64>()
            .ok()
            .and_then(|s| DateTime::from_timestamp(s, 0));
    }
    local_time(id)
}

/// Load one session file.
pub fn load_session(path: &Path, id: &str) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(Agent::Chatgptnvim, id);
    b.s.source.format = "chatgptnvim-session-json".into();
    b.s.source.paths.push(path.to_path_buf());
    b.s.created_at = name_time(id);
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    let Some(bytes) = kit::read_capped(&mut b, path, &file, MAX_JSON_BYTES) else {
        b.s.updated_at = mtime;
        return b.finish();
    };
    let Some(doc) = doc_or_raw(&mut b, &bytes, &file, "conversation", "items") else {
        b.s.updated_at = mtime;
        return b.finish();
    };
    let f = &doc.fields;
    let updated = f.get("updated_at").and_then(Value::as_str);
    b.s.updated_at = updated.and_then(local_time).or(mtime);
    let name = f.get("name").and_then(Value::as_str);
    b.title_or_placeholder(name.and_then(title_from_text), |t| {
        local_time(t).is_some() || Some(t) == updated.map(str::trim)
    });
    let unknown: Vec<&str> = f
        .keys()
        .map(String::as_str)
        .filter(|k| !KNOWN_FIELDS.contains(k))
        .collect();
    if !unknown.is_empty() {
        b.warn(format!(
            "{file}: fields this version of sessfs does not read: {}",
            unknown.join(", ")
        ));
    }
    if f.contains_key("conversation") {
        // `parse_doc_of` keeps a `conversation` that is no list among the fields.
        b.warn(format!(
            "{file}: `conversation` is not a list; the file is shown raw"
        ));
        b.context("unparsed file", kit::raw_text(&bytes), None);
    }
    settings(&mut b, f);
    let mut unknown = BTreeSet::new();
    for (i, item) in doc.messages.iter().enumerate() {
        if let Some(o) = item.as_object() {
            unknown.extend(
                o.keys()
                    .filter(|k| !KNOWN_ITEM_FIELDS.contains(&k.as_str()))
                    .cloned(),
            );
        }
        conversation_item(&mut b, &file, i, item);
    }
    if !unknown.is_empty() {
        b.warn(format!(
            "{file}: item fields this version of sessfs does not read: {}",
            unknown.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(cut) = doc.cut {
        b.context(&format!("unparsed tail of {file}"), cut, None);
    }
    b.finish()
}

/// `settings`: empty in every file ChatGPT.nvim writes; anything else is shown as context,
/// its `model` taken as the session's model.
fn settings(b: &mut SessionBuilder, f: &Map<String, Value>) {
    let Some(s) = f.get("settings") else {
        return;
    };
    let empty = match s {
        Value::Null => true,
        Value::Object(o) => o.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    if empty {
        return;
    }
    if let Some(m) = kit::str_field(s, "model").filter(|m| !m.trim().is_empty()) {
        b.s.set_model = Some(m.to_string());
    }
    b.context("session settings", s.to_string(), None);
}

/// An item's `text`: a string (anything else is shown as its JSON).
fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A reply's `usage`, `None` when it is empty (every streamed reply); fields sessfs does not
/// know are named by a warning.
fn usage(b: &mut SessionBuilder, file: &str, i: usize, u: Option<&Value>) -> Option<TokenUsage> {
    let u = u?;
    let o = u.as_object()?;
    let odd: Vec<&str> = o
        .keys()
        .map(String::as_str)
        .filter(|k| !KNOWN_USAGE_FIELDS.contains(k))
        .collect();
    if !odd.is_empty() {
        b.warn(format!(
            "{file}: item {i}: usage fields this version of sessfs does not read: {}",
            odd.join(", ")
        ));
    }
    let usage = TokenUsage {
        input_tokens: kit::u64_field(u, "prompt_tokens"),
        output_tokens: kit::u64_field(u, "completion_tokens"),
        ..TokenUsage::default()
    };
    (!usage.is_zero()).then_some(usage)
}

/// The number in an item's `type` (1 prompt, 2 reply, 3 system message).
fn item_type(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0)
            .map(|f| f as u64)
    })
}

/// One element of `conversation`.
fn conversation_item(b: &mut SessionBuilder, file: &str, i: usize, item: &Value) {
    if !item.is_object() {
        b.unparsed(
            "conversation items",
            "not an object",
            || format!("item {i}"),
            "item",
            &item.to_string(),
            None,
        );
        return;
    }
    let text = text_of(item.get("text"));
    match item_type(item.get("type")) {
        Some(1) => {
            if let Some(sent) = kit::str_field(item, "api_text").filter(|s| *s != text) {
                let refs = sent
                    .strip_suffix(text.as_str())
                    .and_then(|s| s.strip_suffix(REFS_SEPARATOR))
                    .unwrap_or(sent);
                b.context("referenced code", refs.to_string(), None);
            }
            b.push(Message {
                role: Role::User,
                content: text,
                ..Message::default()
            });
        }
        Some(2) => {
            let token_usage = usage(b, file, i, item.get("usage"));
            b.push(Message {
                role: Role::Assistant,
                content: text,
                token_usage,
                ..Message::default()
            });
        }
        Some(3) => b.context("system message", text, None),
        other => {
            let what = match other {
                Some(n) => format!("unknown type {n}"),
                None => match item.get("type") {
                    Some(v) => format!("unknown type {v}"),
                    None => "no type".to_string(),
                },
            };
            b.unparsed(
                "conversation items",
                &what,
                || format!("item {i}"),
                "item",
                &item.to_string(),
                None,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roots_follow_xdg_state_home_and_the_app_name() {
        let mut env = Env::at_home(Path::new("/h"));
        let paths = |env: &Env| -> Vec<(PathBuf, String)> {
            candidates(env)
                .into_iter()
                .map(|r| (r.path, r.how))
                .collect()
        };
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/h/.local/state/nvim/chatgpt"),
                "default".to_string()
            )]
        );
        env.vars.insert("NVIM_APPNAME".into(), "astro".into());
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/h/.local/state/astro/chatgpt"),
                "default, NVIM_APPNAME".to_string()
            )]
        );
        env.vars.insert("XDG_STATE_HOME".into(), "/x".into());
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/x/astro/chatgpt"),
                "XDG_STATE_HOME, NVIM_APPNAME".to_string()
            )]
        );
    }

    #[test]
    fn only_visible_json_files_are_sessions() {
        let dir = tempfile::tempdir().expect("tmp");
        for f in ["1704186930.json", ".1704186930.json.swp", "notes.txt"] {
            std::fs::write(dir.path().join(f), "{}").expect("write");
        }
        std::fs::create_dir(dir.path().join("sub.json")).expect("mkdir");
        let names: Vec<String> = session_files(dir.path())
            .iter()
            .map(|p| kit::file_name(p).to_string())
            .collect();
        assert_eq!(names, ["1704186930.json"]);
    }

    #[test]
    fn file_names_give_the_creation_time() {
        // 2024-01-02T09:15:30Z
        assert_eq!(
            name_time("1704186930").map(|t| t.to_rfc3339()),
            Some("2024-01-02T09:15:30+00:00".to_string())
        );
        let want = Local
            .with_ymd_and_hms(2022, 12, 27, 18, 5, 0)
            .earliest()
            .expect("local")
            .with_timezone(&Utc);
        assert_eq!(name_time("2022-12-27_18:05:00"), Some(want));
        assert_eq!(name_time("notes"), None);
        assert_eq!(name_time(""), None);
    }

    #[test]
    fn referenced_code_comes_before_its_prompt() {
        let mut b = SessionBuilder::new(Agent::Chatgptnvim, "t");
        let item = json!({"type": 1, "text": "why @src/a.lua", "usage": {},
                          "api_text": "# File: src/a.lua\n```\nreturn 1\n```\n\n---\n\nwhy @src/a.lua"});
        conversation_item(&mut b, "t.json", 0, &item);
        let s = b.finish();
        let got: Vec<(&str, Option<&str>)> = s
            .messages
            .iter()
            .map(|m| (m.content.as_str(), m.label.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "# File: src/a.lua\n```\nreturn 1\n```",
                    Some("referenced code")
                ),
                ("why @src/a.lua", None),
            ]
        );
    }

    #[test]
    fn empty_usage_is_none_and_odd_fields_are_named() {
        let mut b = SessionBuilder::new(Agent::Chatgptnvim, "t");
        assert_eq!(usage(&mut b, "t.json", 0, Some(&json!([]))), None);
        assert_eq!(usage(&mut b, "t.json", 0, Some(&json!({}))), None);
        let u = usage(
            &mut b,
            "t.json",
            3,
            Some(&json!({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17, "x": 1})),
        )
        .expect("usage");
        assert_eq!((u.input_tokens, u.output_tokens), (12, 5));
        assert_eq!(
            b.s.warnings,
            ["t.json: item 3: usage fields this version of sessfs does not read: x"]
        );
    }
}
