//! CopilotChat.nvim (GitHub Copilot chat for Neovim): the chats saved by `:CopilotChatSave
//! <name>`, one JSON file per chat in `copilotchat_history/`, rewritten whole at each save.
//!
//! Read from CopilotChat.nvim's own source, CopilotC-Nvim/CopilotChat.nvim
//! `f0c2a23ab79dc295f5e0eef0d8b587a39020c852` (2026-06-17, v4.7.4), and the older shapes from
//! `5e78bb0` (2024-03, the first save), `42e5797` and `8df61c5` (2025-02/03, v3) and `057b8e4`
//! (2025-07, v4.0, tool calls):
//!
//! - `lua/CopilotChat/config.lua`: `history_path` defaults to `stdpath("data") ..
//!   "/copilotchat_history"`, Neovim's data directory being `$XDG_DATA_HOME/<app>` else
//!   `~/.local/share/<app>` (macOS too), `<app>` being `$NVIM_APPNAME` else `nvim`;
//! - `lua/CopilotChat/init.lua` (`M.save`, `M.load`) and `plugin/CopilotChat.lua`: `:CopilotChatSave
//!   [name]` writes `<history_path>/<name>.json` (`default` when no name is given) with
//!   `vim.json.encode` of the chat's messages, a bare JSON array on one line; nothing saves
//!   automatically, and `:CopilotChatLoad` reads the same array back. Every version has saved
//!   a bare array: `{role, content}` up to v3 (the client's history), and from v4.0 the chat
//!   buffer's messages with their buffer `section` removed;
//! - `lua/CopilotChat/client.lua`, `ui/chat.lua`, `constants.lua`: a message is `{id, role:
//!   user | assistant | system | tool, content, reasoning?, tool_calls?: [{id, index, name,
//!   arguments (JSON text)}], tool_call_id?, model?}`; the reply's `model` is the one the
//!   provider answered with (v4.7), `reasoning` arrived in v4.4;
//! - `init.lua` (`M.ask`, `finish`, `handle_error`), `prompts.lua` (`execute_tool_call`,
//!   `format_tool_output`): a tool result is a `tool` message whose `id` and `tool_call_id`
//!   are the call's id; no error flag is stored, the text of a call CopilotChat could not run
//!   is `Tool not found: <name>` and of a call the user declined `User skipped this function
//!   call.`; an error is shown in the chat as a reply holding an `error` code block; the chat
//!   ends with an empty prompt waiting for the user (sticky lines `> …` and `#tool:id` lines
//!   when there are any);
//! - `config/providers.lua`: GitHub tokens are read from `~/.config/github-copilot/
//!   {hosts,apps}.json` and cached in `stdpath("data")/copilot_chat/tokens.json`.
//!
//! Design decisions and why:
//! - **Roots** follow `stdpath("data")` (see [`super::codecompanion::nvim_data_dir`]): a
//!   `history_path` set in the Neovim configuration is given with `--store copilotchat=DIR`
//!   (the directory or one chat file); the configuration is never read.
//! - **Never read**: `copilot_chat/tokens.json` and `github-copilot/{hosts,apps}.json` (GitHub
//!   and Copilot tokens), the log `stdpath("state")/CopilotChat.log`. Only `*.json` files of
//!   the history directory itself are listed (CopilotChat saves no subdirectory).
//! - **One file is one session**: the id is the file name without `.json` (the name given to
//!   `:CopilotChatSave`), which is also the title, but `default` (no name given), where the
//!   first prompt names the session.
//! - **Each file is read in one read**, element by element when it is cut (the reader the
//!   Cline and Kode stores use): every message before the cut is kept, the rest is shown raw
//!   and a warning names the file; a file that is no JSON array is shown raw with a warning.
//! - **What each message becomes**: `user` messages are prompts (an empty one, the prompt
//!   left waiting at the end of the chat, holds nothing and shows nothing); `assistant`
//!   messages are replies with `reasoning` as thinking, their tool calls (arguments parsed,
//!   kept verbatim when not JSON) and their `model`; `tool` messages are the calls' results,
//!   failed when their text is CopilotChat's `Tool not found: ` or `User skipped this
//!   function call.` (it stores no other error flag); `system` messages are context. Another
//!   role, an element that is no object, and a field sessfs does not know cost a warning.
//! - **Model and usage**: the reply's `model` when the file has one; files before v4.7 name
//!   none (the model is the configuration's, never read). Token counts are kept in memory
//!   only: sessions have no usage.
//! - **Times**: messages have none; the file's modification time (the last save) is the
//!   update time, and there is no creation time. Neither a cwd nor a link to another chat
//!   is saved.

use super::cline::parse_array;
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, ToolCall};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Larger chat files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// The history directory under Neovim's data directory.
const HISTORY_DIR: &str = "copilotchat_history";
/// The name `:CopilotChatSave` uses when it is given none: no title.
const DEFAULT_NAME: &str = "default";
/// JSON files that hold tokens, never listed even when `--store` names their directory.
const NOT_SESSIONS: &[&str] = &["tokens.json", "hosts.json", "apps.json"];
/// Fields of a message the store knows (`section` only from a writer that kept it).
const KNOWN_FIELDS: &[&str] = &[
    "id",
    "role",
    "content",
    "reasoning",
    "tool_calls",
    "tool_call_id",
    "model",
    "section",
];
/// The texts CopilotChat gives a call it did not run (`prompts.execute_tool_call`, `M.ask`).
const NOT_RUN_PREFIX: &str = "Tool not found: ";
const SKIPPED: &str = "User skipped this function call.";

/// The history directory CopilotChat uses by default, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    let (data, how) = super::codecompanion::nvim_data_dir(env);
    vec![Root::new(Agent::Copilotchat, data.join(HISTORY_DIR), how)]
}

pub struct CopilotchatStore {
    base: Base,
}

impl CopilotchatStore {
    pub fn new(roots: Vec<Root>) -> CopilotchatStore {
        CopilotchatStore {
            base: Base::new(Agent::Copilotchat, roots),
        }
    }
}

/// The chat files of a root: `<root>/*.json` (hidden files and token files left out), or
/// the root itself when it is one file.
pub fn chat_files(root: &Path) -> Vec<PathBuf> {
    if root.is_file() {
        return vec![root.to_path_buf()];
    }
    kit::typed_entries(root)
        .into_iter()
        .filter(|(p, t)| {
            let name = p.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
            *t == EntryType::File
                && !name.starts_with(b".")
                && name.ends_with(b".json")
                && !NOT_SESSIONS.iter().any(|n| name == n.as_bytes())
        })
        .map(|(p, _)| p)
        .collect()
}

impl Store for CopilotchatStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        kit::listed_by_stem(&self.base.roots, chat_files)
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads file names only; rewriting a chat never adds one.
        true
    }

    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        kit::root_dirs_glance(&self.base.roots)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_chat(&listed.path, &listed.id)
    }
}

/// Load one saved chat.
pub fn load_chat(path: &Path, id: &str) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(Agent::Copilotchat, id);
    b.s.source.format = "copilotchat-history-json".into();
    b.s.source.paths.push(path.to_path_buf());
    b.title_or_placeholder(Some(id.to_string()), |t| t == DEFAULT_NAME);
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            b.warn(format!("{file}: cannot read: {e}"));
            return b.finish();
        }
    };
    b.s.updated_at = meta.modified().ok().map(DateTime::<Utc>::from);
    if meta.len() > MAX_JSON_BYTES {
        b.warn(format!(
            "{file}: {} bytes, too large to parse, skipped",
            meta.len()
        ));
        return b.finish();
    }
    let bytes = match kit::read_file(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            b.warn(format!("{file}: cannot read: {e}"));
            return b.finish();
        }
    };
    let Some(records) = parse_array(&bytes) else {
        b.warn(format!("{file}: not a JSON array; its text is shown raw"));
        let raw = kit::raw_text(&bytes);
        if !raw.trim().is_empty() {
            b.context("unparsed file", raw, None);
        }
        return b.finish();
    };
    if records.unparsed.is_some() {
        b.warn(format!(
            "{file}: cut after {} messages (half-written?); the rest is shown as raw text",
            records.items.len()
        ));
    }
    let mut unknown = BTreeSet::new();
    for (i, m) in records.items.iter().enumerate() {
        if let Some(o) = m.as_object() {
            unknown.extend(
                o.keys()
                    .filter(|k| !KNOWN_FIELDS.contains(&k.as_str()))
                    .cloned(),
            );
        }
        message(&mut b, i, m);
    }
    if let Some(cut) = records.unparsed {
        b.context(&format!("unparsed tail of {file}"), cut, None);
    }
    if !unknown.is_empty() {
        b.warn(format!(
            "{file}: message fields this version of sessfs does not read: {}",
            unknown.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    b.finish()
}

/// A string or a number as text (CopilotChat's ids are strings, typed as numbers in places).
fn id_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn content_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// One element of the saved array.
fn message(b: &mut SessionBuilder, i: usize, m: &Value) {
    if !m.is_object() {
        b.unparsed(
            "messages",
            "not an object",
            || format!("message {i}"),
            "message",
            &m.to_string(),
            None,
        );
        return;
    }
    let text = content_text(m.get("content"));
    let native_id = id_text(m.get("id"));
    match kit::str_field(m, "role") {
        Some("user") => {
            if text.trim().is_empty() {
                return;
            }
            b.push(Message {
                role: Role::User,
                content: text,
                native_id,
                ..Message::default()
            });
        }
        Some("assistant") => {
            let calls = tool_calls(b, i, m);
            b.push(Message {
                role: Role::Assistant,
                content: text,
                thinking: kit::str_field(m, "reasoning")
                    .filter(|r| !r.trim().is_empty())
                    .map(str::to_string),
                tool_calls: calls,
                model: kit::str_field(m, "model")
                    .filter(|r| !r.trim().is_empty())
                    .map(str::to_string),
                native_id,
                ..Message::default()
            });
        }
        Some("tool") => {
            let call = id_text(m.get("tool_call_id"))
                .or(native_id)
                .unwrap_or_default();
            let t = text.trim();
            let failed = t.starts_with(NOT_RUN_PREFIX) || t == SKIPPED;
            b.tool_result(&call, None, text, failed, None);
        }
        Some("system") => b.context("system message", text, None),
        role => {
            let role = role.unwrap_or("(none)").to_string();
            b.unparsed(
                "messages",
                &format!("unknown role {role}"),
                || format!("message {i}"),
                "message",
                &m.to_string(),
                None,
            );
        }
    }
}

/// A reply's `tool_calls`: `{id, index, name, arguments}`, the arguments JSON text (parsed,
/// kept verbatim when they are not JSON) or, from an odd writer, already a table.
fn tool_calls(b: &mut SessionBuilder, i: usize, m: &Value) -> Vec<ToolCall> {
    let mut out = Vec::new();
    for (ci, c) in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let input = kit::call_input(
            c.get("arguments"),
            "tool call arguments",
            &mut b.unparsed,
            || format!("message {i}, call {ci}"),
        );
        out.push(ToolCall {
            tool_call_id: id_text(c.get("id")).unwrap_or_default(),
            tool_name: kit::str_field(c, "name").unwrap_or_default().to_string(),
            input,
            ..ToolCall::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roots_follow_xdg_data_home_and_the_app_name() {
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
                PathBuf::from("/h/.local/share/nvim/copilotchat_history"),
                "default".to_string()
            )]
        );
        env.vars.insert("NVIM_APPNAME".into(), "astro".into());
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/h/.local/share/astro/copilotchat_history"),
                "default, NVIM_APPNAME".to_string()
            )]
        );
        env.vars.insert("XDG_DATA_HOME".into(), "/x".into());
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/x/astro/copilotchat_history"),
                "XDG_DATA_HOME, NVIM_APPNAME".to_string()
            )]
        );
    }

    #[test]
    fn token_files_and_hidden_files_are_never_chats() {
        let dir = tempfile::tempdir().expect("tmp");
        for f in [
            "tokens.json",
            "hosts.json",
            ".swap.json",
            "work.json",
            "x.txt",
        ] {
            std::fs::write(dir.path().join(f), "[]").expect("write");
        }
        let names: Vec<String> = chat_files(dir.path())
            .iter()
            .map(|p| kit::file_name(p).to_string())
            .collect();
        assert_eq!(names, ["work.json"]);
    }

    #[test]
    fn results_copilotchat_did_not_run_are_failed() {
        let mut b = SessionBuilder::new(Agent::Copilotchat, "t");
        for (i, t) in [
            "\nTool not found: grep\n",
            "\nUser skipped this function call.\n",
            "\nok\n",
        ]
        .iter()
        .enumerate()
        {
            let m = json!({"id": format!("c{i}"), "role": "tool", "tool_call_id": format!("c{i}"), "content": t});
            message(&mut b, i, &m);
        }
        let s = b.finish();
        let flags: Vec<bool> = s
            .messages
            .iter()
            .filter_map(|m| m.tool_result.as_ref().map(|r| r.is_error))
            .collect();
        assert_eq!(flags, [true, true, false]);
    }

    #[test]
    fn numeric_call_ids_are_text() {
        assert_eq!(id_text(Some(&json!(7))).as_deref(), Some("7"));
        assert_eq!(id_text(Some(&json!("c1"))).as_deref(), Some("c1"));
        assert_eq!(id_text(Some(&Value::Null)), None);
    }
}
